# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The cost of `bbrctl metrics` (and, beside it, `bbrctl stat --json`) at N
open sockets of one CC: `selftests/pyrun bench.metrics_cost [--count N] [--runs K]`.

A bbr3 copy of its own (`load --name`), N connections held open between two
namespaces of its own (bench/opener.py), then K runs of each command, timed
by wall clock and by the CPU time (user + system) the child used, which is
what a scraper pays; the kernel's time walking the iterator is system time
of the reader. Prints one JSON object; docs/bbrctl.md quotes a run.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import bbrtest
from bbrtest.netns import popen_in

OPENER = Path(__file__).resolve().with_name("opener.py")
OPENER_PORT = 5411
SOMAXCONN = 65535               # accept backlog for 10000 connections
NS_PREFIX = "bmx"
OPENER_TIMEOUT_S = 120


def timed(argv, runs):
    """Median wall and CPU seconds of runs of argv, and its output size."""
    wall, cpu, size = [], [], 0
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        cp = subprocess.run(argv, capture_output=True, text=True, check=True)
        wall.append(time.monotonic() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        size = len(cp.stdout)
    return {"wall_s": round(statistics.median(wall), 4),
            "cpu_s": round(statistics.median(cpu), 4), "output_bytes": size}


def expect(proc, key):
    msg = json.loads(proc.stdout.readline() or "{}")
    if key not in msg:
        raise RuntimeError(f"opener: {msg}")


def measure(count, runs, cc):
    out = {"sockets_of_cc": count, "runs": runs}
    out["empty"] = {"metrics": timed(bbrtest.ctl.argv("metrics"), runs)}
    with bbrtest.Topology(prefix=NS_PREFIX) as topo:
        bbrtest.netns_exec(topo.rcv_ns, ["sysctl", "-q", "-w", f"net.core.somaxconn={SOMAXCONN}",
                                        f"net.ipv4.tcp_max_syn_backlog={SOMAXCONN}"])
        bbrtest.netns_exec(topo.snd_ns, ["sysctl", "-q", "-w",
                                        "net.ipv4.ip_local_port_range=10000 65000"])
        procs = []
        try:
            for ns, mode, extra in ((topo.rcv_ns, "server", []),
                                    (topo.snd_ns, "client", ["--cc", cc])):
                p = popen_in(ns, [sys.executable, OPENER, mode, "--addr", topo.rcv_addr,
                                  "--port", OPENER_PORT, "--count", count, *extra],
                             stdin=subprocess.PIPE)
                procs.append(p)
                expect(p, "listening" if mode == "server" else "open")
            expect(procs[0], "open")
            text = bbrtest.bbrctl("metrics", check=0).stdout
            read = int(text.split("\nbbrbpf_metrics_sockets_read ")[1].split()[0])
            inside = float(text.split("\nbbrbpf_metrics_duration_seconds ")[1].split()[0])
            out["loaded"] = {"records_read": read, "duration_inside_s": inside,
                             "metrics": timed(bbrtest.ctl.argv("metrics"), runs),
                             "stat_json": timed(bbrtest.ctl.argv("stat", "--json", cc), runs)}
        finally:
            for p in procs:
                p.kill()
                p.wait(timeout=OPENER_TIMEOUT_S)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=10000, help="connections held open")
    ap.add_argument("--runs", type=int, default=10, help="runs of each command")
    args = ap.parse_args(argv)
    cc = f"bmx{os.getpid()}"[:15]
    bbrtest.bbrctl("load", "--name", cc, "bbr3", check=0)
    try:
        print(json.dumps(measure(args.count, args.runs, cc), indent=2))
    finally:
        bbrtest.bbrctl("unload", cc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
