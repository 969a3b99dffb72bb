#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""bbr-bpf demo (`make run`): one bulk transfer through the project's CC.

Registers the congestion control in a BPF object, builds a sender, a router
and a receiver namespace on 198.18.0.0/15 with a tbf bottleneck on the
router, sends for a while under that CC, prints what happened, and removes
everything it created again - also on error or Ctrl-C.

Needs root. Try it without the real algorithm:
    scripts/demo.py --obj selftests/progs/bbrbpf_test_cc.bpf.o --cc bbrbpf_test
"""

import argparse
import json
import os
import signal
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "selftests"))

import netlab  # noqa: E402

DEFAULT_OBJ = REPO / "bpf" / "bbr3.bpf.o"
DEFAULT_CC = "bbr3"
DEFAULT_RATE_MBIT = 100
DEFAULT_SECONDS = 10.0
TCP_PAYLOAD_BYTES = 1448        # per full-size frame, with timestamps
ETH_FRAME_BYTES = 1514          # what the shaper charges per frame
BITS_PER_BYTE = 8


def parse_args(argv):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[1].replace("\n", " "),
        epilog="Example: scripts/demo.py --obj selftests/progs/bbrbpf_test_cc.bpf.o "
               "--cc bbrbpf_test --seconds 3",
)
    p.add_argument("--obj", type=Path, default=DEFAULT_OBJ,
                   help="BPF object holding the congestion control (default: %(default)s)")
    p.add_argument("--cc", default=DEFAULT_CC,
                   help="its name, the .name of its struct tcp_congestion_ops (default: %(default)s)")
    p.add_argument("--rate-mbit", type=float, default=DEFAULT_RATE_MBIT,
                   help="bottleneck rate at the router, Mbit/s (default: %(default)s)")
    p.add_argument("--buffer-bytes", type=int, default=None,
                   help="bottleneck FIFO size, bytes (default: rate x "
                        f"{netlab.DEFAULT_BUFFER_RTT_MS} ms)")
    p.add_argument("--seconds", type=float, default=DEFAULT_SECONDS,
                   help="how long to send, seconds (default: %(default)s)")
    p.add_argument("--loader", choices=("auto", "bbrctl", "bpftool"), default="auto",
                   help="how to register: auto uses loader/bbrctl if it is built "
                        "and has `load --obj`, else bpftool (default: %(default)s)")
    p.add_argument("--json", action="store_true",
                   help="print the full result as JSON instead of the summary")
    return p.parse_args(argv)


def terminate_on_sigterm():
    """Turn SIGTERM into SystemExit so that every with-block cleans up."""
    def handler(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, handler)


def print_summary(topo, res, stats):
    ti = res["tcp_info"]
    ceiling_mbit = topo.rate_mbit * TCP_PAYLOAD_BYTES / ETH_FRAME_BYTES
    rows = [
        ("congestion control", f"{res['cc']} (getsockopt TCP_CONGESTION on the sender)"),
        ("bytes sent", f"{res['bytes_sent']:,}"),
        ("bytes received", f"{res['bytes_received']:,}"),
        ("duration", f"{res['seconds']:.2f} s"),
        ("goodput", f"{res['mbps']:.2f} Mbit/s ({res['mbps'] / topo.rate_mbit:.1%} of "
                    f"{topo.rate_mbit:g} Mbit/s; payload ceiling {ceiling_mbit:.2f})"),
        ("retransmits", f"{ti['retransmits']} segments ({ti['bytes_retrans']:,} bytes)"),
        ("bottleneck drops", f"{stats['drops']} of {stats['packets']} packets"),
        ("srtt / min rtt", f"{ti['rtt_us'] / 1000:.2f} ms / {ti['min_rtt_us'] / 1000:.3f} ms"),
        ("cwnd at end", f"{ti['snd_cwnd_pkts']} packets"),
        ("pacing rate at end", f"{ti['pacing_rate_bytes_per_s'] * BITS_PER_BYTE / 1e6:.2f} Mbit/s"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")


def run(args):
    if os.geteuid() != 0:
        raise netlab.NetlabError("must run as root (namespaces, qdiscs and BPF struct_ops)")
    if not args.obj.is_file():
        raise netlab.NetlabError(f"{args.obj}: no such BPF object; build it with `make`")
    reg = netlab.register_cc(args.obj, args.cc, loader=args.loader)
    with reg, netlab.Topology(rate_mbit=args.rate_mbit, buffer_bytes=args.buffer_bytes) as topo:
        if not args.json:
            print(f"registered {reg.cc_name} from {args.obj} ({type(reg).__name__}, "
                  f"pinned at {reg.pin_dir})")
            print(f"{topo.snd_addr} -> router, tbf {topo.rate_mbit:g} Mbit/s, "
                  f"{topo.buffer_bytes:,} B FIFO -> {topo.rcv_addr}; sending for "
                  f"{args.seconds:g} s ...", flush=True)
        res = netlab.run_transfer(topo, reg.cc_name, seconds=args.seconds)
        stats = topo.bottleneck_stats()
        if args.json:
            print(json.dumps({**res, "bottleneck": stats}, indent=2))
        else:
            print_summary(topo, res, stats)
    if not args.json:
        print(f"cleaned up: {reg.cc_name} unregistered, namespaces deleted")


def main(argv=None):
    args = parse_args(argv)
    terminate_on_sigterm()
    try:
        run(args)
    except (netlab.NetlabError, ValueError) as e:
        print(f"demo: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("demo: interrupted; cleaned up", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
