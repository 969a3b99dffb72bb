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
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
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


def measure_mbit(rate_mbit):
    with bbrtest.Topology(rate_mbit=rate_mbit, prefix="maxr") as topo:
        return bbrtest.run_transfer(topo, "cubic", seconds=PROBE_S,
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
    print(f"{rate:.1f}")


if __name__ == "__main__":
    main()
