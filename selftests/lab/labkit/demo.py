# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""bbr-bpf demo (`make run`, scripts/demo): the project's bbr3 beside the kernel's bbr and CUBIC on an emulated path.

Runs the lab's default scenario (embedded below): two bulk flows over a
50 Mbit/s bottleneck with 40 ms base RTT and a 2 BDP buffer, the second
starting 1 s after the first, emulated by linkem; every flow under bbr3
with the v3plus profile, then bbr3 as the reference (profile v3; bbr3 is
registered from bpf/bbr3.bpf.o for those runs and unregistered after
them), then the kernel's bbr and cubic. About 2 minutes in all.
Prints the scorecard and where the plots and report are; removes every
namespace, process and registration it created, also on error or Ctrl-C.

Needs root and a built tree (`make setup && make`). Other scenarios:
selftests/lab/run SCENARIO (docs/lab.md).
"""

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from . import ccctl, report, runner, scenario
from .path import LAB_DIR, LINKEM_BIN, LabError, linkem_available

DEFAULT_SCENARIO = """
name = "demo"
description = "The make-run demo: two flows, 50 Mbit/s, 40 ms base RTT, 2 BDP buffer, the second 1 s late."
duration_s = 20
warmup_s = 10
ccs = ["bbr3:v3plus", "bbr3:v3", "bbr", "cubic"]

[link]
rate_mbit = 50
rtt_ms = 40
buffer_bdp = 2

[[flows]]
count = 1
sender = 0
start_s = 0

[[flows]]
count = 1
sender = 1
start_s = 1
"""
RESULTS = LAB_DIR / "results"
TABLE_COLUMNS = ("cc", "goodput Mbit/s", "util %", "retx %", "queue p50/p95/p99 ms",
                 "rtt p50 ms", "Jain 1s mean/min", "conv s", "valid")


def parse_args(argv):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        prog="scripts/demo",
        epilog="Example: scripts/demo --cc bbr3,bbr,cubic --seconds 20")
    p.add_argument("--cc", default=None,
                   help="comma-separated CCs to compare, NAME:PROFILE for a profile "
                        "(default: bbr3:v3plus,bbr3:v3,bbr,cubic)")
    p.add_argument("--seconds", type=float, default=None,
                   help="length of each CC's run, seconds (default: 20)")
    p.add_argument("--out", type=Path, default=None,
                   help="results folder (default: selftests/lab/results/demo-TIME)")
    return p.parse_args(argv)


def terminate_on_sigterm():
    """Turn SIGTERM into SystemExit so that every with-block cleans up."""
    def handler(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, handler)


def check_prerequisites(ccs):
    if os.geteuid() != 0:
        raise LabError("must run as root (namespaces, TUN devices, BPF struct_ops)")
    if not linkem_available():
        raise LabError(f"{LINKEM_BIN}: not built; run `make`")
    for cc in ccs:
        obj = runner.PROJECT_CCS.get(ccctl.split_variant(cc)[0])
        if obj is not None and not obj.is_file():
            raise LabError(f"{obj}: not built; run `make`")


def short_table(runs):
    rows = report.scorecard_rows(runs)
    idx = [rows[0].index(c) for c in TABLE_COLUMNS]
    return report.text_table([tuple(r[i] for i in idx) for r in rows])


def run(args):
    sc = scenario.loads(DEFAULT_SCENARIO, "demo scenario")
    if args.seconds:
        if args.seconds <= sc["warmup_s"]:
            raise ValueError(f"--seconds must exceed the {sc['warmup_s']:g} s warm-up")
        sc["duration_s"] = args.seconds
    ccs = [c.strip() for c in args.cc.split(",") if c.strip()] if args.cc else sc["ccs"]
    check_prerequisites(ccs)
    out = args.out or RESULTS / f"demo-{time.strftime('%Y%m%d-%H%M%S')}"
    link = sc["link"]
    print(f"demo: 2 flows (the second starts at 1 s), {link['rate_mbit']} Mbit/s, "
          f"{link['rtt_ms']} ms base RTT, {link['buffer_bdp']} BDP buffer, "
          f"{sc['duration_s']:g} s per CC: {', '.join(ccs)}", flush=True)
    runs = runner.run_scenario(sc, out, ccs)
    print()
    print(short_table(runs))
    invalid = [r["cc"] for r in runs if not r["valid"]["valid"]]
    if invalid:
        print(f"\nnote: the emulator flagged late packet releases in the {', '.join(invalid)} "
              "run(s) (a busy machine); their delay figures are less exact.")
    print(f"\nplot:   {out / 'throughput.png'}")
    print(f"queue:  {out / 'queue.png'}")
    print(f"report: {out / 'report.md'}")
    print("cleaned up: namespaces deleted, emulator stopped, project CCs unregistered")


def main(argv=None):
    args = parse_args(argv)
    terminate_on_sigterm()
    try:
        run(args)
    except (LabError, ValueError) as e:
        print(f"demo: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ndemo: interrupted; cleaned up", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
