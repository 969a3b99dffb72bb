# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Run a lab scenario under each congestion control and write a report.

    selftests/lab/run SCENARIO.toml [--cc bbr3,bbr,cubic] [--out DIR] [--quick]
    selftests/lab/run --estimate SCENARIO.toml... [--quick]

(selftests/lab/run is `python3 -m labkit` with the toolkit on the path.)

Every CC runs the same flows over the same emulated path, one after the
other. The results folder gets summary.json, timeseries.csv, queue.csv,
state.csv, PNG plots and report.md (see docs/lab.md). Needs root.
"""

import argparse
import signal
import sys
import time
from pathlib import Path

from . import report, runner, scenario
from .path import LAB_DIR, LabError

RESULTS = LAB_DIR / "results"


def main(argv=None):
    p = argparse.ArgumentParser(prog="selftests/lab/run", description=__doc__.split("\n\n")[0],
                                epilog="Example: selftests/lab/run selftests/lab/scenarios/"
                                       "single_1bdp.toml --cc bbr,cubic --quick")
    p.add_argument("scenario", type=Path, nargs="+",
                   help="scenario TOML file (several only with --estimate)")
    p.add_argument("--cc", help="comma-separated CCs to compare (default: the scenario's ccs)")
    p.add_argument("--out", type=Path, help="results folder (default: selftests/lab/results/NAME-TIME)")
    p.add_argument("--quick", action="store_true",
                   help=f"short runs (<= {scenario.QUICK_DURATION_S:g} s, 3 sweep points)")
    p.add_argument("--estimate", action="store_true",
                   help="only print how long the scenarios would take (wall clock)")
    a = p.parse_args(argv)
    if a.estimate:
        return estimate(a)
    if len(a.scenario) != 1:
        p.error("one scenario at a time (several only with --estimate)")
    a.scenario = a.scenario[0]
    signal.signal(signal.SIGTERM, lambda s, f: (_ for _ in ()).throw(SystemExit(128 + s)))
    try:
        sc = scenario.load(a.scenario)
        if a.quick:
            sc = scenario.quick(sc)
        ccs = [c.strip() for c in a.cc.split(",") if c.strip()] if a.cc else None
        out = a.out or RESULTS / f"{sc['name']}-{time.strftime('%Y%m%d-%H%M%S')}"
        runs = runner.run_scenario(sc, out, ccs)
    except (LabError, scenario.ScenarioError, ValueError) as e:
        print(f"run: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nrun: interrupted; cleaned up", file=sys.stderr)
        return 130
    print(report.text_table(report.scorecard_rows(runs)))
    print(f"\nreport: {out / 'report.md'}")
    return 0


def estimate(a):
    """Per scenario and total estimated wall-clock time."""
    total = 0.0
    ccs = [c.strip() for c in a.cc.split(",") if c.strip()] if a.cc else None
    for f in a.scenario:
        try:
            sc = scenario.load(f)
        except scenario.ScenarioError as e:
            print(f"run: {e}", file=sys.stderr)
            return 1
        if a.quick:
            sc = scenario.quick(sc)
        t = scenario.estimate_s(sc, ccs)
        total += t
        print(f"{sc['name']:<24} {len(scenario.points(sc)):>2} points x "
              f"{len(ccs or sc['ccs'])} CCs x {sc['duration_s']:g} s   ~{t / 60:5.1f} min")
    print(f"{'total':<24} ~{total / 60:.0f} min (estimate: durations + "
          f"{scenario.RUN_OVERHEAD_S:g} s per run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
