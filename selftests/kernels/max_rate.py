#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The highest bottleneck rate this machine carries with CPU to spare, in
Mbit/s, for BBRTEST_MAX_RATE_MBIT (selftests/bbrtest/rates.py).

One bulk transfer with the kernel's cubic for PROBE_S through the path the
shaped tests use - sender, forwarding router, receiver, the sender's
segmentation offloads off - with the router's tbf far above anything the
machine can carry: what arrives is the machine's capacity, not a
bottleneck's. The tests' bottleneck gets RATE_SHARE of it. On a kernel
without tbf the path is the unshaped pair (those kernels run no shaped
test). The guests of the kernel matrix (guest-init) run this before the
tests; prints the rate, and the measurement on stderr.

The lab's emulator (linkem) forwards every packet through two TUN devices
and a userspace process, several times the kernel's work per packet: a
second transfer, through an emulated path with a rate far above the
machine's, gives the tests on that path their own cap
(BBRTEST_MAX_EMU_RATE_MBIT), printed as a second figure ("-" where the
kernel has no tun).
"""

import os
import sys
from pathlib import Path

SELFTESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(SELFTESTS), str(SELFTESTS / "lab")]
import bbrtest  # noqa: E402

# A tbf rate no emulated machine's forwarding reaches (TCG: tens of Mbit/s):
# the router then forwards as fast as the CPU lets it.
PROBE_RATE_MBIT = 10_000
PROBE_S = 3
# The sender stops writing after PROBE_S and waits for what its socket
# buffer still holds (up to bbrtest's 32 MB ceiling): at TCG's rates that
# drains for many seconds more than the transfer's default grace.
PROBE_TIMEOUT_S = 120
# The bottleneck at 40 % of what the machine carries: the CC, the tools
# that sample it (bbrctl stat, the lab's emulator) and the receiver need the
# rest, and a bottleneck at the CPU's limit drops to it in every stall. At
# half, a bbr3 transfer on 6.17 reached 37.6 of a 45 Mbit/s bottleneck
# (84 %, 85 % asked) while another guest shared the host.
RATE_SHARE = 0.4
# The emulated path's probe: linkem at a rate no guest reaches, the L4S
# test's 10 ms, 4 BDP of buffer at that rate (so no drop limits cubic).
EMU_PROBE_RATE_MBIT = 1000
EMU_PROBE_RTT_MS = 10


def measure_mbit(rate_mbit):
    with bbrtest.Topology(rate_mbit=rate_mbit, prefix="maxr") as topo:
        return bbrtest.run_transfer(topo, "cubic", seconds=PROBE_S,
                                    timeout=PROBE_TIMEOUT_S)["mbps"]


def measure_emulated_mbit():
    from labkit.path import EmulatedPath
    with EmulatedPath(rate_mbit=EMU_PROBE_RATE_MBIT, rtt_ms=EMU_PROBE_RTT_MS, buffer_bdp=4,
                      backend="linkem", log=False, prefix="maxe") as path:
        return bbrtest.run_transfer(path, "cubic", seconds=PROBE_S,
                                    timeout=PROBE_TIMEOUT_S)["mbps"]


def main():
    try:
        path, mbps = "routed, tbf far above it", measure_mbit(PROBE_RATE_MBIT)
    except bbrtest.BbrtestError as e:
        print(f"max_rate: no routed path with tbf ({str(e)[:120]}): the unshaped pair",
              file=sys.stderr)
        path, mbps = "unshaped pair", measure_mbit(None)
    rate = RATE_SHARE * mbps
    print(f"max_rate: cubic carried {mbps:.1f} Mbit/s in {PROBE_S} s ({path}, "
          f"{os.cpu_count()} CPUs): bottlenecks at most {rate:.1f} Mbit/s", file=sys.stderr)
    try:
        emu = RATE_SHARE * measure_emulated_mbit()
        print(f"max_rate: through linkem cubic carried {emu / RATE_SHARE:.1f} Mbit/s: "
              f"emulated bottlenecks at most {emu:.1f} Mbit/s", file=sys.stderr)
        emu_text = f"{emu:.1f}"
    except bbrtest.KernelLacks as e:
        print(f"max_rate: no emulated path ({e})", file=sys.stderr)
        emu_text = "-"
    print(f"{rate:.1f} {emu_text}")


if __name__ == "__main__":
    main()
