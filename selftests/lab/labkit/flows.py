# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Run a set of flows over an EmulatedPath and collect tcp_info samples.

run_flows(path, flows, duration_s, outdir, tick=None, cgroup=None, names=None) starts
one flowgen server per receiver namespace and one flowgen client per sender
namespace (bbrtest.flowgen), calls tick(elapsed_s) about every 100 ms while
they run (progress line, queue polling), and returns the merged samples as
a list of dicts with numeric fields. With cgroup (ccctl.RunCgroup) every
server and client process runs inside that cgroup from its first
instruction on, so all their sockets belong to it. names maps a flow's CC
to the name the kernel knows it by (the runner's copies under names of
their own); the flows keep their labels. read_flow_summaries()
reads the clients' per-flow summaries (request/response latencies).

A flow is {"id", "sender" (index), "receiver" (index), "cc", "start_s",
"stop_s", "kind"} (+ "req_bytes", "resp_bytes", "requests" for kind
"rr"); ports are assigned here (BASE_PORT + id).
"""

import contextlib
import csv
import json
import subprocess
import time
from pathlib import Path

from bbrtest import flowgen

from .path import LabError

BASE_PORT = 5201
SAMPLE_MS = 100                 # tcp_info sampling period (the 100 ms bins)
TICK_S = 0.1
START_GRACE_S = 20.0            # on top of the duration before a run is declared hung
RR_REQ_BYTES = 100              # flowgen's defaults (flowgen/README.md)
RR_RESP_BYTES = 1000


def _flow_spec(f, dst, names=None):
    cc = names(f["cc"]) if names else f["cc"]
    spec = {"id": f["id"], "dst": dst, "port": BASE_PORT + f["id"], "cc": cc,
            "start_s": f["start_s"], "stop_s": f["stop_s"], "kind": f.get("kind", "bulk"),
            "bytes": None}
    if spec["kind"] == "rr":
        spec["req_bytes"] = f.get("req_bytes", RR_REQ_BYTES)
        spec["resp_bytes"] = f.get("resp_bytes", RR_RESP_BYTES)
        if f.get("requests"):
            spec["count"] = f["requests"]
    return spec


def run_flows(path, flows, duration_s, outdir, tick=None, cgroup=None, names=None,
              server_cc=None):
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    if not flowgen.available():
        raise LabError(f"{flowgen.FLOWGEN_BIN}: not built (run `make`)")
    cg = cgroup.path if cgroup is not None else None
    clients = []
    try:
        with contextlib.ExitStack() as servers:
            for j, (ns, addr) in enumerate(zip(path.rcv_nss, path.rcv_addrs)):
                ports = [BASE_PORT + f["id"] for f in flows if f.get("receiver", 0) == j]
                if ports:
                    servers.enter_context(flowgen.Server(
                        ns, addr, f"{min(ports)}-{max(ports)}", outdir / f"server{j}.err",
                        cgroup=cg, cc=server_cc))
            # Time zero of the samples (the clients count from their own start,
            # a few ms later); the queue series from the emulator log uses it.
            path.flows_t0_ns = time.monotonic_ns()
            for i, ns in enumerate(path.snd_ns):
                mine = [_flow_spec(f, path.rcv_addrs[f.get("receiver", 0)], names)
                        for f in flows if f.get("sender", 0) == i]
                if mine:
                    clients.append((i, flowgen.start_client(ns, mine, outdir, tag=i,
                                                            sample_ms=SAMPLE_MS, cgroup=cg)))
            t0 = time.monotonic()
            while any(p.poll() is None for _, p in clients):
                elapsed = time.monotonic() - t0
                if elapsed > duration_s + START_GRACE_S:
                    raise LabError(f"flow clients still running {elapsed:.0f} s after start")
                if tick:
                    tick(elapsed)
                time.sleep(TICK_S)
        for i, p in clients:
            if p.returncode != 0:
                raise LabError(f"flow client in {path.snd_ns[i]} failed ({p.returncode}): "
                               f"{(outdir / f'client{i}.err').read_text().strip()[-1000:]}")
    finally:
        for _, p in clients:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
    rows = []
    for i in range(len(path.snd_ns)):
        f = outdir / f"samples{i}.csv"
        if f.exists():
            rows += read_samples(f)
    rows.sort(key=lambda r: (r["flow"], r["t_s"]))
    return rows


def read_flow_summaries(outdir):
    """{flow id: flowgen's per-flow summary} from every client's SUM.json."""
    out = {}
    for f in sorted(Path(outdir).glob("flowsum*.json")):
        try:
            for fl in json.loads(f.read_text()).get("flows", []):
                out[int(fl["id"])] = fl
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def read_samples(csv_path):
    out = []
    with open(csv_path, newline="") as fh:
        for r in csv.DictReader(fh):
            row = {}
            for k, v in r.items():
                if k == "cc":
                    row[k] = v
                else:
                    try:
                        row[k] = float(v) if "." in v else int(v)
                    except (TypeError, ValueError):
                        row[k] = v
            row["flow"] = int(row.get("flow", row.get("id", 0)))
            out.append(row)
    return out
