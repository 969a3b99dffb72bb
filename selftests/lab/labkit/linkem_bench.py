# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Benchmark of the linkem emulator: forwarded throughput and release lateness.

For each rate, one bulk TCP flow (kernel cubic, flowgen) runs through an
EmulatedPath (linkem) with a 40 ms RTT and a 1 BDP buffer. Reported per
rate: goodput after a 2 s warm-up (bytes_acked samples), the bottleneck's
utilisation from the emulator's own counters, and the release lateness
percentiles from its STATS.json (and whether the run is valid under the
default 1 ms p99.9 bound). Not a test: it asserts nothing. `make bench`
runs it as its emulator section.

    selftests/pyrun labkit.linkem_bench --rates 50,500,1000 --seconds 10 --json OUT.json
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from .flows import run_flows
from .path import LINKEM_BIN, EmulatedPath

RTT_MS = 40
WARMUP_S = 2.0                  # slow start excluded from the goodput figure
PAYLOAD_RATIO = 1448 / 1500     # goodput per IP byte of a full-size packet


def run_one(rate, seconds, tmp, log):
    with EmulatedPath(rate_mbit=rate, rtt_ms=RTT_MS, buffer_bdp=1, backend="linkem",
                      log=log, workdir=Path(tmp, f"r{rate}")) as path:
        flows = [{"id": 0, "sender": 0, "receiver": 0, "cc": "cubic", "start_s": 0,
                  "stop_s": seconds, "kind": "bulk"}]
        rows = run_flows(path, flows, seconds, Path(tmp, f"r{rate}", "flows"))
    st = path.stats()
    end = rows[-1]
    start = next((r for r in rows if r["t_s"] >= WARMUP_S), rows[0])
    goodput = ((end["bytes_acked"] - start["bytes_acked"]) * 8
               / max(end["t_s"] - start["t_s"], 1e-9) / 1e6)
    fwd = st["fwd"]
    dur_s = (st["end_ns"] - st["start_ns"]) / 1e9
    lat = st["lateness_us"]
    return {"rate_mbit": rate, "goodput_mbit": round(goodput, 2),
            "goodput_ceiling_mbit": round(rate * PAYLOAD_RATIO, 2),
            "goodput_ratio": round(goodput / (rate * PAYLOAD_RATIO), 4),
            "forwarded_pkts": fwd["forwarded"], "queue_drops": fwd["dropped"]["queue"],
            "linkem_mbit_avg": round(fwd["forwarded_bytes"] * 8 / dur_s / 1e6, 2),
            "lateness_p50_us": lat["p50"], "lateness_p99_us": lat["p99"],
            "lateness_p999_us": lat["p999"], "lateness_max_us": lat["max"],
            "valid": st["valid"], "warnings": st["warnings"]}


def run(rates, seconds, log=True):
    """The benchmark as a dict (what --json writes)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="lembench") as tmp:
        for r in rates:
            rows.append(run_one(int(r) if float(r).is_integer() else r, seconds, tmp, log))
            print(f"  {r:g} Mbit/s done", file=sys.stderr)
    return {"tool": "linkem", "seconds": seconds, "rtt_ms": RTT_MS, "buffer_bdp": 1,
            "cc": "cubic", "results": rows}


def main():
    ap = argparse.ArgumentParser(prog="labkit.linkem_bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="50,500,1000", help="Mbit/s, comma-separated")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--no-log", action="store_true", help="run linkem without its packet log")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("linkem_bench: needs root (namespaces, TUN)")
    if not os.access(LINKEM_BIN, os.X_OK):
        sys.exit(f"linkem_bench: {LINKEM_BIN} not built (run make)")
    try:
        rates = [float(r) for r in a.rates.split(",")]
    except ValueError:
        sys.exit(f"linkem_bench: bad --rates {a.rates!r}")
    out = run(rates, a.seconds, not a.no_log)
    print(f"{'rate':>6} {'goodput':>8} {'ratio':>6} {'drops':>6} {'p50us':>6} {'p99us':>6} "
          f"{'p999us':>7} {'maxus':>8} valid")
    for x in out["results"]:
        print(f"{x['rate_mbit']:>6} {x['goodput_mbit']:>8.1f} {x['goodput_ratio']:>6.3f} "
              f"{x['queue_drops']:>6} {x['lateness_p50_us']:>6.0f} {x['lateness_p99_us']:>6.0f} "
              f"{x['lateness_p999_us']:>7.0f} {x['lateness_max_us']:>8.0f} {x['valid']}")
    print(json.dumps(out))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
