# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""flowgen, the many-flow generator (selftests/lab/flowgen, C).

The job of this generator: many flows at once with their own start and stop
times and a CC per socket, TCP_INFO of every flow every sample_ms, and
request/response flows (the lab's runs, the fast path's tests). One checked
transfer is bbrtest.transfer's job. Spec, CSV and summary formats:
selftests/lab/flowgen/README.md.

    with Server(ns_r, addr_r, "5201-5204"):
        cp, summary, rows = run_client(ns_s, flows, outdir)
    with topology_server(topo, outdir):        # on a Topology, PORT_LO..PORT_HI
        ...
"""

import csv
import json
import os
import subprocess
from pathlib import Path

from . import netns
from .base import REPO, BbrtestError, read_line

FLOWGEN_BIN = REPO / "selftests" / "lab" / "flowgen" / "flowgen"
SAMPLE_MS = 100
# The server's ports for the tests' topologies: four listeners, so that
# flows spread over more than one accept queue.
PORT_LO, PORT_HI = 5201, 5204
PORTS = f"{PORT_LO}-{PORT_HI}"
READY_TIMEOUT_S = 5.0
STOP_TIMEOUT_S = 5.0


def available():
    return os.access(FLOWGEN_BIN, os.X_OK)


class Server:
    """`flowgen server` in namespace ns (and cgroup, a path), from READY
    until the end of the with-block (SIGTERM). ports: "P" or "P-Q"; its
    stderr goes to the file errpath; cc: the listeners' CC (it negotiates
    ECN on the SYN-ACK)."""

    def __init__(self, ns, addr, ports, errpath, cgroup=None, cc=None):
        self.argv = netns.in_netns(ns, [FLOWGEN_BIN, "server", "--addr", addr,
                                        "--ports", ports, *(["--cc", cc] if cc else [])],
                                   cgroup)
        self.errpath = Path(errpath)
        self.proc = None

    def __enter__(self):
        if not available():
            raise BbrtestError(f"{FLOWGEN_BIN}: not built (run `make`)")
        with open(self.errpath, "w") as err:
            self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=err)
        line = read_line(self.proc.stdout.fileno(), READY_TIMEOUT_S)
        if line.strip() != "READY":
            self.__exit__()
            raise BbrtestError(f"flowgen server did not start ({line!r}): "
                               f"{self.errpath.read_text().strip()}")
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.communicate(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
        return False


def topology_server(topo, errdir, ports=PORTS):
    """A Server on a Topology's receiver (ports PORT_LO..PORT_HI unless
    given), its stderr in errdir/server.err."""
    return Server(topo.rcv_ns, topo.rcv_addr, ports, Path(errdir) / "server.err")


def start_client(ns, flows, outdir, tag="", sample_ms=SAMPLE_MS, cgroup=None):
    """`flowgen client` for flows in namespace ns (and cgroup) in the
    background: writes outdir/flows{tag}.json, and the client writes
    samples{tag}.csv, flowsum{tag}.json and client{tag}.err there.
    Returns the Popen."""
    outdir = Path(outdir)
    spec = outdir / f"flows{tag}.json"
    spec.write_text(json.dumps({"sample_ms": sample_ms, "flows": flows}))
    argv = netns.in_netns(ns, [FLOWGEN_BIN, "client", "--spec", spec,
                               "--out", outdir / f"samples{tag}.csv",
                               "--summary", outdir / f"flowsum{tag}.json"], cgroup)
    with open(outdir / f"client{tag}.err", "w") as err:
        return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)


def run_client(ns, flows, outdir, sample_ms=SAMPLE_MS, timeout=60):
    """flowgen client in the foreground. Returns (CompletedProcess with
    returncode and stderr, the summary or None, the CSV rows as dicts of
    strings)."""
    outdir = Path(outdir)
    proc = start_client(ns, flows, outdir, sample_ms=sample_ms)
    try:
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    summ = outdir / "flowsum.json"
    summary = json.loads(summ.read_text()) if summ.exists() else None
    with open(outdir / "samples.csv") as f:
        rows = list(csv.DictReader(f))
    return (subprocess.CompletedProcess(proc.args, proc.returncode, "",
                                        (outdir / "client.err").read_text()),
            summary, rows)
