# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""labkit: the bbr-bpf lab orchestration.

    import labkit
    with labkit.EmulatedPath(rate_mbit=50, rtt_ms=40, buffer_bdp=2, senders=2) as p:
        ... run traffic from p.snd_ns[i] (p.snd_addr[i]) to p.rcv_addr ...
    print(p.stats())

Modules: path (topologies: the linkem emulator or the kernel tbf fast path),
flows (traffic: flowgen or the built-in Python generator), metrics (the
definitions of docs/lab.md and the lab study's section 4.1), scenario (TOML
files and sweeps), runner (one scenario under each CC, results folder),
plots and report. See docs/lab.md.
"""

from .path import EmulatedPath, LabError, linkem_available  # noqa: F401

__all__ = ["EmulatedPath", "LabError", "linkem_available"]
