# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""labkit: the bbr-bpf lab orchestration, built on the test toolkit (bbrtest).

    import labkit
    with labkit.EmulatedPath(rate_mbit=50, rtt_ms=40, buffer_bdp=2, senders=2) as p:
        ... run traffic from p.snd_ns[i] (p.snd_addr[i]) to p.rcv_addr ...
    print(p.stats())

Modules: path (topologies: the linkem emulator or the kernel tbf path),
fastpath (the kernel path's tbf + BPF marker for loss and ECN), linkem_log
(linkem's per-packet log), flows (traffic: flowgen through bbrtest.flowgen),
metrics (the definitions of docs/lab.md and the lab study's section 4.1),
scenario (TOML files and sweeps), ccctl (per-run cgroup, parameters, ETS),
runner (one scenario under each CC, results folder), plots and report;
the command line (`python3 -m labkit`, selftests/lab/run), the demo of
`make run` (demo) and the emulator's benchmark (linkem_bench). See docs/lab.md.
"""

from .path import EmulatedPath, LabError, linkem_available  # noqa: F401

__all__ = ["EmulatedPath", "LabError", "linkem_available"]
