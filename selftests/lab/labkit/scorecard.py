# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The bbr3 profile scorecard: the goals of docs/bbr3.md ("Beyond v3")
checked against the lab results of scenarios/bbr3_profiles/.

    python3 -m labkit.scorecard RESULTS_DIR [RESULTS_DIR...] [--json]

RESULTS_DIR holds one folder per scenario (as `make lab` writes them:
RESULTS_DIR/two_flows_2bdp/summary.json, ...). Each goal row shows every
CC of the run side by side, and whether each bbr3 profile meets the goal.
With several RESULTS_DIRs (runs of the same set), each cell is the mean
over the runs with the lowest and highest value, and "meets" counts the
runs in which the profile met the goal.
Goals relative to another CC (kernel bbr's retransmissions, the reference
profile's utilisation or Jain) use that CC's figure from the same run.
A scenario that is missing is reported as such, never as passed.
"""

import argparse
import json
import sys
from pathlib import Path

SET_DIR = "bbr3_profiles"
REF = "bbr3:v3"
OURS = "bbr3:v3plus"
PROFILES = (REF, OURS)
MEDIAN_QUEUE_MAX = 0.05          # of the minimum RTT (single flow)
SHALLOW_RETX_MAX = 0.30          # x kernel bbr's retransmit rate
AGGREGATION_UTIL_MIN = 0.95      # x the reference profile's utilisation
COEX_SHARE = (0.35, 0.65)        # CUBIC's share against one bbr3 flow


def _runs(results, scenario):
    f = Path(results) / scenario / "summary.json"
    if not f.exists():
        return None
    return json.loads(f.read_text())["runs"]


def _by_cc(runs, point=None):
    return {r["cc"]: r for r in runs if point is None or r.get("sweep_value") == point}


def _jain(r, key):
    return (r.get("jain_windows") or {}).get(key)


def _cubic_share(r):
    """Flow 1 is CUBIC: its share of the goodput after warm-up (per sender)."""
    ps = r.get("per_sender") or []
    tot = sum(s["goodput_mbit"] for s in ps)
    return ps[1]["goodput_mbit"] / tot if len(ps) == 2 and tot else None


def _median_queue(r):
    q = (r.get("queue_delay_ms") or {}).get("p50")
    minrtt = min((f["min_rtt_ms"] for f in r["flows"] if f.get("min_rtt_ms")), default=None)
    return q / minrtt if q is not None and minrtt else None


def _vs_reference_util(label, scen, point):
    """A goal row: utilisation at least AGGREGATION_UTIL_MIN x the reference's."""
    return (f"{label}: util >= {AGGREGATION_UTIL_MIN:g} x reference's", scen, point,
            lambda r: r.get("utilisation"),
            lambda v, c: REF in c and v >= AGGREGATION_UTIL_MIN * c[REF]["utilisation"], "{:.3f}")


# (label, scenario, sweep value, metric(run), goal(value, runs by cc) -> bool, format)
GOALS = [
    ("2 flows 2 BDP: Jain mean >= 0.95", "two_flows_2bdp", None,
     lambda r: _jain(r, "mean"), lambda v, c: v >= 0.95, "{:.3f}"),
    ("4 flows 1 BDP: Jain mean >= 0.95", "four_flows_1bdp", None,
     lambda r: _jain(r, "mean"), lambda v, c: v >= 0.95, "{:.3f}"),
    ("4 flows 1 BDP: Jain min >= 0.85", "four_flows_1bdp", None,
     lambda r: _jain(r, "min"), lambda v, c: v >= 0.85, "{:.3f}"),
    ("4 flows 100 BDP: Jain mean >= 0.95", "four_flows_100bdp", None,
     lambda r: _jain(r, "mean"), lambda v, c: v >= 0.95, "{:.3f}"),
    ("4 flows 100 BDP: Jain min >= 0.85", "four_flows_100bdp", None,
     lambda r: _jain(r, "min"), lambda v, c: v >= 0.85, "{:.3f}"),
    ("2 flows 1 % loss: Jain mean >= 0.95", "two_flows_loss", None,
     lambda r: _jain(r, "mean"), lambda v, c: v >= 0.95, "{:.3f}"),
    ("2 flows 1 % loss: Jain min >= 0.85", "two_flows_loss", None,
     lambda r: _jain(r, "min"), lambda v, c: v >= 0.85, "{:.3f}"),
    ("1 % loss: utilisation >= 0.90", "random_loss", 0.01,
     lambda r: r.get("utilisation"), lambda v, c: v >= 0.90, "{:.3f}"),
    ("3 % loss: utilisation >= 0.80", "random_loss", 0.03,
     lambda r: r.get("utilisation"), lambda v, c: v >= 0.80, "{:.3f}"),
    ("1 flow: utilisation >= 0.96", "single_1bdp", None,
     lambda r: r.get("utilisation"), lambda v, c: v >= 0.96, "{:.3f}"),
    ("1 flow: median queue <= 5 % of min RTT", "single_1bdp", None,
     _median_queue, lambda v, c: v <= MEDIAN_QUEUE_MAX, "{:.1%}"),
    ("0.5 BDP: retransmits <= 0.30 x bbr's", "shallow_buffer", None,
     lambda r: r.get("retransmit_rate"),
     lambda v, c: "bbr" in c and v <= SHALLOW_RETX_MAX * c["bbr"]["retransmit_rate"], "{:.2%}"),
    ("vs 1 CUBIC, 2 BDP: CUBIC's share 35-65 %", "coexistence", None,
     _cubic_share, lambda v, c: COEX_SHARE[0] <= v <= COEX_SHARE[1], "{:.1%}"),
    ("20 vs 80 ms: Jain mean >= reference's", "rtt_fairness", None,
     lambda r: _jain(r, "mean"),
     lambda v, c: REF in c and v >= _jain(c[REF], "mean") - 0.005, "{:.3f}"),
    *[_vs_reference_util(label, scen, point) for label, scen, point in (
        ("ACK bursts 4 ms", "ack_bursts", 4), ("ACK bursts 8 ms", "ack_bursts", 8),
        ("1 ACK per 4 segments", "stretch_acks", 2), ("1 ACK per 8 segments", "stretch_acks", 4))],
]
# Context rows: no goal, shown beside the goals.
CONTEXT = [
    ("ACK bursts 4 ms: Jain mean", "ack_bursts", 4, lambda r: _jain(r, "mean"), "{:.3f}"),
    ("1 ACK per 8 segments: Jain mean", "stretch_acks", 4, lambda r: _jain(r, "mean"), "{:.3f}"),
    ("2 flows 2 BDP: median queue ms", "two_flows_2bdp", None,
     lambda r: (r.get("queue_delay_ms") or {}).get("p50"), "{:.1f}"),
]


def evaluate(results):
    """Rows of {goal, values {cc: v}, met {profile: bool|None}}; ccs in order."""
    rows, ccs = [], []
    for label, scen, point, metric, goal, fmt in GOALS + [c[:4] + (None, c[4]) for c in CONTEXT]:
        runs = _runs(results, scen)
        row = {"goal": label, "scenario": scen, "values": {}, "met": {}, "fmt": fmt,
               "missing": runs is None}
        if runs is not None:
            by = _by_cc(runs, point)
            for cc, r in by.items():
                if cc not in ccs:
                    ccs.append(cc)
                row["values"][cc] = metric(r)
            if goal:
                for p in PROFILES:
                    v = row["values"].get(p)
                    row["met"][p] = None if v is None else bool(goal(v, by))
        rows.append(row)
    return rows, ccs


def _table(rows, ccs, cell, verdict, runs=None):
    """The markdown scorecard: a row per goal, a column per CC (cell(value,
    fmt)), a runs column where runs(row) is given, then each profile's
    verdict(row, profile)."""
    runs_head = " runs |" if runs else ""
    out = ["| goal | " + " | ".join(ccs) + f" |{runs_head} v3 meets | v3plus meets |",
           "|---|" + "---|" * (len(ccs) + 2 + bool(runs))]
    for row in rows:
        if row["missing"]:
            out.append(f"| {row['goal']} | " + " | ".join("–" for _ in ccs) +
                       (" | 0" if runs else "") +
                       f" | no results ({row['scenario']}) | no results |")
            continue
        met = [verdict(row, p) if row["met"] else "" for p in PROFILES]
        out.append(f"| {row['goal']} | " + " | ".join(cell(row["values"].get(c), row["fmt"])
                                                       for c in ccs) +
                   (f" | {runs(row)}" if runs else "") + f" | {met[0]} | {met[1]} |")
    return "\n".join(out)


def render(rows, ccs):
    def cell(v, fmt):
        return "–" if v is None else fmt.format(v)

    def verdict(row, p):
        return {True: "yes", False: "**no**", None: "–"}[row["met"].get(p)]
    return _table(rows, ccs, cell, verdict)


def merge(runs):
    """Rows of several evaluate() results: values become lists over runs,
    met the list of each run's verdict."""
    rows, ccs = [], []
    for rs, cs in runs:
        ccs += [c for c in cs if c not in ccs]
    for i, row in enumerate(runs[0][0]):
        m = dict(row, values={}, met={}, runs=0)
        for rs, _ in runs:
            r = rs[i]
            if r["missing"]:
                continue
            m["runs"] += 1
            for cc, v in r["values"].items():
                if v is not None:
                    m["values"].setdefault(cc, []).append(v)
            for p, ok in r["met"].items():
                if ok is not None:
                    m["met"].setdefault(p, []).append(ok)
        m["missing"] = m["runs"] == 0
        rows.append(m)
    return rows, ccs


def render_spread(rows, ccs):
    def cell(vs, fmt):
        if not vs:
            return "–"
        mean = fmt.format(sum(vs) / len(vs))
        return mean if len(vs) == 1 else \
            f"{mean} [{fmt.format(min(vs))}..{fmt.format(max(vs))}]"

    def verdict(row, p):
        oks = row["met"].get(p)
        return "–" if not oks else f"{sum(oks)}/{len(oks)}"
    return _table(rows, ccs, cell, verdict, runs=lambda row: row["runs"])


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m labkit.scorecard", description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+",
                    help=f"folder with one result folder per scenario of {SET_DIR}/ (several: one per run)")
    ap.add_argument("--json", action="store_true", help="rows as JSON")
    a = ap.parse_args(argv)
    for d in a.results:
        if not Path(d).is_dir():
            ap.error(f"{d}: no such folder")
    if len(a.results) == 1:
        rows, ccs = evaluate(a.results[0])
        text = render(rows, ccs)
    else:
        rows, ccs = merge([evaluate(d) for d in a.results])
        text = render_spread(rows, ccs)
    if a.json:
        print(json.dumps({"ccs": ccs, "rows": [{k: v for k, v in r.items() if k != "fmt"}
                                                for r in rows]}, indent=1))
    else:
        print(text)
    missing = sum(r["missing"] for r in rows)
    if missing:
        print(f"scorecard: {missing} rows without results", file=sys.stderr)
    return 1 if missing == len(rows) else 0


if __name__ == "__main__":
    sys.exit(main())
