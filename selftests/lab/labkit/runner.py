# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Run one scenario under each CC and write its results folder.

For every sweep point and every CC: register the CC if it is one of the
project's struct_ops CCs (through bbrctl or bpftool, holding
/tmp/bbrbpf-kernel.lock for that run only), build the EmulatedPath, and
when the scenario has [cc_params.CC] or ets = true a cgroup for the run's
flow processes with those settings (ccctl.py); run the flows, record the
CC's state (`bbrctl trace` streaming, or `bbrctl stat --json` polling when
bbrctl has no trace), poll the bottleneck queue (kernel backend), tear
everything down, compute the metrics.

Results folder:
  summary.json      scenario, per run: metrics and validity
  timeseries.csv    point, cc, t_s, flow, goodput_mbit (100-ms bins)
  queue.csv         point, cc, t_s, queue_delay_ms
  state.csv         point, cc, t_s, flow, mode, phase, bw/pacing Mbit/s, cwnd, inflight, rtt
  *.png             plots (plots.py), report.md (report.py)
  runs/<point>/<cc>/  raw samples, emulator stats/log
"""

import contextlib
import csv
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

import bbrtest

from . import ccctl, fastpath, linkem_log
from . import metrics as M
from . import scenario as S
from .flows import read_flow_summaries, run_flows
from .path import REPO, EmulatedPath, LabError

KERNEL_LOCK = "/tmp/bbrbpf-kernel.lock"
# The project's struct_ops CCs and their objects (registered per run).
PROJECT_CCS = {"bbr3": REPO / "bpf" / "bbr3.bpf.o",
               "bbr_swift": REPO / "bpf" / "bbr_swift.bpf.o",
               "dctcp_bpf": REPO / "bpf" / "dctcp_bpf.bpf.o"}
# Those with a BBR model that bbrctl trace/stat export (bpf/lib/tcp_cc.h);
# dctcp_bpf keeps its state in icsk_ca_priv and exports none.
BBR_STATE_CCS = ("bbr3", "bbr_swift")
STATE_POLL_S = 0.2          # bbrctl stat period (a process per poll: keep it modest)
QUEUE_POLL_S = 0.1          # kernel backend: the marker's queue series period
LOCK_WAIT_S = 600.0         # others hold it <= ~5 min at a time (docs/lab.md); 2 holds
TRACE_STOP_S = 5.0          # SIGINT until bbrctl trace has flushed and exited
MODES = ("STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT")   # BBR_STARTUP.. (bbr3_state.h)
_lock_depth = [0]           # kernel_lock is re-entrant within this process
# A project CC whose name someone else has registered (an installed
# bbr-bpf, another run) is run as a copy under a name of this process:
# label -> the name the kernel knows it by, while its cc_session lasts.
# Results, reports and scenario keys keep the label.
_KNAMES = {}
OWN_NAME_TAGS = {"bbr3": "lb3", "bbr_swift": "lbs", "dctcp_bpf": "lbd"}
ECN_NAME_TAG = "e"          # + OWN_NAME_TAGS: a variant's ECN object (variant_ecn)


def kname(cc):
    """The name the kernel knows the CC labelled cc by in this run."""
    return _KNAMES.get(cc, cc)


@contextlib.contextmanager
def kernel_lock(wait_s=LOCK_WAIT_S):
    """flock /tmp/bbrbpf-kernel.lock (shared by everyone registering CCs).
    Re-entrant: an inner use while this process holds it is a no-op."""
    if _lock_depth[0]:
        _lock_depth[0] += 1
        try:
            yield
        finally:
            _lock_depth[0] -= 1
        return
    fd = os.open(KERNEL_LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        deadline = time.monotonic() + wait_s
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told:
                    sys.stderr.write(f"waiting for {KERNEL_LOCK} (another bbr-bpf run "
                                     "is registering CCs) ...\n")
                    told = True
                if time.monotonic() > deadline:
                    raise LabError(f"{KERNEL_LOCK} held by someone else for {wait_s:.0f} s")
                time.sleep(0.2)
        _lock_depth[0] = 1
        try:
            yield
        finally:
            _lock_depth[0] = 0
    finally:
        os.close(fd)


@contextlib.contextmanager
def cc_session(spec):
    """Make the CC of spec (a name, or NAME:PROFILE) usable for one run:
    built-in CCs as they are; project CCs registered (under the kernel lock)
    and unregistered afterwards; under a name of this process (kname())
    when another loader holds the CC's own name, or when the variant is an
    object of its own (ccctl.variant_object(): bbr3:l4s runs bbr3_l4s)."""
    cc, _ = ccctl.split_variant(spec)
    ecn = ccctl.variant_ecn(spec)
    if cc not in PROJECT_CCS:
        if cc not in bbrtest.available_ccs():
            raise LabError(f"congestion control {cc!r} is neither built in "
                           f"({' '.join(bbrtest.available_ccs())}) nor one of {sorted(PROJECT_CCS)}")
        yield None
        return
    obj = PROJECT_CCS[cc].with_name(ccctl.variant_object(spec) + ".bpf.o")
    if not obj.is_file():
        raise LabError(f"{obj}: not built; run `make`")
    with kernel_lock():
        if cc not in bbrtest.available_ccs() and not ecn:
            with bbrtest.register_cc(obj, cc):
                yield cc
            return
        # taken by someone else, or a variant's own object: this tree's
        # build, as a copy of our own (the object carries its ECN flags)
        tag = OWN_NAME_TAGS[cc] + (ECN_NAME_TAG if ecn else "")
        with bbrtest.register_cc(obj, as_name=bbrtest.own_cc_name(tag)) as reg:
            _KNAMES[cc] = reg.cc_name
            try:
                yield reg.cc_name
            finally:
                _KNAMES.pop(cc, None)


class StatePoller(threading.Thread):
    """Polls `bbrctl stat --json CC` while a run lasts."""

    def __init__(self, cc, t0):
        super().__init__(daemon=True)
        self.cc, self.t0, self.rows, self.stop = cc, t0, [], threading.Event()
        self.error = None

    def run(self):
        while not self.stop.is_set():
            t = time.monotonic() - self.t0
            try:
                cp = bbrtest.bbrctl("--json", "stat", self.cc, timeout=5)
                for r in json.loads(cp.stdout or "[]"):
                    self.rows.append({"t_s": t, "cookie": r.get("cookie"),
                                      "mode": r.get("mode"), "mode_name": r.get("mode_name"),
                                      "phase_name": r.get("phase_name") or "",
                                      "bw_bps": r.get("bw_bps"),
                                      "pacing_bps": 8 * (r.get("pacing_rate_Bps") or 0),
                                      "cwnd": r.get("snd_cwnd_pkts"),
                                      "inflight": r.get("inflight_pkts"),
                                      "srtt_us": r.get("srtt_us"),
                                      "min_rtt_us": r.get("min_rtt_us"),
                                      "inflight_hi": r.get("inflight_hi"),
                                      "inflight_lo": r.get("inflight_lo")})
            except (OSError, ValueError, subprocess.TimeoutExpired, LabError) as e:
                self.error = str(e)
            self.stop.wait(STATE_POLL_S)


class TraceRecorder:
    """`bbrctl trace CC --output FILE` while a run lasts (JSON lines), SIGINT
    at the end; rows in the StatePoller's form, t_s from the same t0."""

    def __init__(self, cc, t0, outdir):
        self.cc, self.t0 = cc, t0
        self.path = Path(outdir) / "trace.jsonl"
        self.errpath = Path(outdir) / "trace.err"
        self.rows, self.error, self.proc = [], None, None

    def start(self):
        self.proc = subprocess.Popen(bbrtest.ctl.argv("trace", self.cc, "--output", self.path),
                                     stdout=subprocess.DEVNULL,
                                     stderr=open(self.errpath, "w"), start_new_session=True)
        time.sleep(0.2)
        if self.proc.poll() is not None:
            self.error = f"bbrctl trace exited ({self.proc.returncode}): {self._err()}"
            return False
        return True

    def _err(self):
        try:
            return self.errpath.read_text().strip()[-500:]
        except OSError:
            return ""

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=TRACE_STOP_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.error = "bbrctl trace did not stop on SIGINT"
        if self.proc.returncode not in (0, -signal.SIGINT) and not self.error:
            self.error = f"bbrctl trace exited ({self.proc.returncode}): {self._err()}"
        self.rows = read_trace(self.path, self.t0)


def read_trace(path, t0_mono_s):
    """bbrctl trace JSON lines -> state rows (t_s relative to t0_mono_s)."""
    rows = []
    try:
        fh = open(path)
    except OSError:
        return rows
    with fh:
        for line in fh:
            try:
                e = json.loads(line)
            except ValueError:
                continue            # a line cut by the stop
            mode = e.get("mode") or ""
            rows.append({"t_s": e["t_ns"] / 1e9 - t0_mono_s, "cookie": e.get("cookie"),
                         "mode": MODES.index(mode) if mode in MODES else None,
                         "mode_name": mode, "phase_name": e.get("phase") or "",
                         "bw_bps": e.get("bw_bps"), "pacing_bps": e.get("pacing_bps") or 0,
                         "cwnd": e.get("cwnd_pkts"), "inflight": e.get("inflight_pkts"),
                         "srtt_us": e.get("srtt_us", e.get("rtt_us")), "min_rtt_us": e.get("min_rtt_us"),
                         "inflight_hi": e.get("inflight_hi_pkts"),
                         "inflight_lo": e.get("inflight_lo_pkts"),
                         "network_rtt_us": e.get("network_rtt_us"),
                         "decided_rtt_us": e.get("decided_rtt_us"), "ev": e.get("ev")})
    return rows


def state_available(cc):
    return cc in BBR_STATE_CCS and bbrtest.ctl.available()


def trace_available():
    return bool(bbrtest.ctl.help_text("trace"))


@contextlib.contextmanager
def state_recorder(cc, t0, outdir, path=None):
    """Yields a dict {"source", "rows", "error"} filled when the block ends:
    bbrctl trace when bbrctl has it, else bbrctl stat polling, else nothing."""
    rec = {"source": "none (tcp_info only)", "rows": [], "error": None}
    if not state_available(cc):
        yield rec
        return
    tracer = poller = None
    if trace_available():
        tracer = TraceRecorder(kname(cc), t0, outdir)
        if not tracer.start():
            rec["error"] = tracer.error
            tracer = None
    if tracer is None:
        poller = StatePoller(kname(cc), t0)
        poller.start()
    try:
        yield rec
    finally:
        if tracer:
            # trace times are CLOCK_MONOTONIC: count them from the flows' start
            # (flowgen's t_s zero), like the samples they are joined with
            if getattr(path, "flows_t0_ns", None):
                tracer.t0 = path.flows_t0_ns / 1e9
            tracer.stop()
            rec.update(source="bbrctl trace", rows=tracer.rows, error=tracer.error)
        else:
            poller.stop.set()
            poller.join()
            rec.update(source="bbrctl stat (polled every %g s)" % STATE_POLL_S,
                       rows=poller.rows, error=rec["error"] or poller.error)


@contextlib.contextmanager
def run_config(sc, cc, flows, profile=None):
    """The run's cgroup with [cc_params], the variant's profile and ETS
    applied, or None when the run needs none of them. Yields (cgroup, info
    dict for the summary)."""
    params = {n: dict(kv) for n, kv in (sc.get("cc_params") or {}).items()
              if any(f["cc"] == n for f in flows)}
    if profile:
        params.setdefault(cc, {})[ccctl.PROFILE_KEY] = profile
    ets = bool(sc.get("ets"))
    if not params and not ets:
        yield None, {}
        return
    info = {"cgroup": None, "cc_params": {}, "ets": None}
    with kernel_lock(), contextlib.ExitStack() as stack:
        cg = stack.enter_context(ccctl.RunCgroup())
        info["cgroup"] = str(cg.path)
        for name, kv in params.items():
            cp = stack.enter_context(ccctl.CcParams(kname(name), kv, cg))
            info["cc_params"][name] = {"values": kv, "method": cp.method}
        if ets:
            ea = stack.enter_context(ccctl.EtsAttach(kname(cc), cg))
            info["ets"] = {"attached": bool(ea.ets), "bbrctl": ea.message}
        yield cg, info


def capacity_mbit(link, duration_s):
    """Mean capacity over the run (schedule integrated; steps and linear ramps)."""
    sch = link.get("schedule")
    if not sch:
        return float(link.get("rate_mbit") or 0)
    t = np.linspace(0, duration_s, 2001)
    return float(np.mean([rate_at(sch, x) for x in t]))


def rate_at(schedule, t_s):
    rate = schedule[0]["mbit"]
    prev_rate, for_t = rate, 0.0
    for step in schedule:
        st = step["t_ms"] / 1000
        if t_s < st:
            break
        ramp = step.get("ramp_ms", 0) / 1000
        if ramp and t_s < st + ramp:
            return rate + (step["mbit"] - rate) * (t_s - st) / ramp
        rate = step["mbit"]
    return rate


# ---- one run ----

def receiver_cc(sc, cc, spec):
    """The receivers' listener CC: the CC under test where ECN is in play
    (the link marks, or the variant negotiates ECN itself), since the kernel
    negotiates ECN on the SYN-ACK with the listener's CC and a CC's receiver
    side echoes the marks (dctcp_bpf's precise ECE, AccECN's counts); else
    the namespace's default (None)."""
    if ccctl.variant_ecn(spec) or (sc.get("link") or {}).get("ecn"):
        return kname(cc)
    return None



def run_one(sc, spec, outdir, progress=None, registered=False):
    """Run scenario sc (no sweep) under spec, a CC or a variant NAME:PROFILE
    (the results carry spec as their cc): (metrics, samples, state rows).
    registered: the caller holds cc_session(spec) already."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    cc, profile = ccctl.split_variant(spec)
    flows = S.expand_flows(sc, cc)
    kw = S.path_kwargs(sc, flows)
    dur = sc["duration_s"]
    queue = None
    with contextlib.nullcontext() if registered else cc_session(spec):
        with EmulatedPath(workdir=outdir, **kw) as path, \
                run_config(sc, cc, flows, profile) as (cg, conf):
            t0 = time.monotonic()
            kq = KernelQueue(path, sc["warmup_s"]) if path.backend == "kernel" else None

            def tick(elapsed):
                if progress:
                    progress(elapsed)
                if kq:
                    kq.poll(elapsed)
            with state_recorder(cc, t0, outdir, path) as rec:
                samples = run_flows(path, flows, dur, outdir, tick, cgroup=cg, names=kname,
                                    server_cc=receiver_cc(sc, cc, spec))
            if kq:
                queue = kq.finish()
            stats = path.stats()
            log_q = None
            if path.backend == "linkem" and path.log_path and path.log_path.exists():
                log_q = queue_from_log(path)
            backend = path.backend
            rate = path.rate_mbit
            buffer_bytes, bdp = path.buffer_bytes, path.bdp_bytes
    (outdir / "stats.json").write_text(json.dumps(stats, indent=1))
    state = rec["rows"]
    res = compute(sc, spec, flows, samples, stats, queue, log_q, state, backend)
    res.update({"backend": backend, "buffer_bytes": buffer_bytes, "bdp_bytes": bdp,
                "rate_mbit": rate, "state_source": rec["source"] if state else
                "none (tcp_info only)" if not rec["error"] else f"none ({rec['error']})",
                "state_error": rec["error"]})
    if conf:
        res["run_config"] = conf
    if sc.get("ets"):
        res["ets"] = ets_summary(flows, samples, state, sc["warmup_s"], conf.get("ets"))
        if backend == "kernel":
            res["ets"]["vs_queue"] = network_rtt_vs_queue(state, res["_queue_series"],
                                                          sc["warmup_s"])
    rr = rr_summary(flows, read_flow_summaries(outdir))
    if rr:
        res["rr"] = rr
    return res, samples, state


class KernelQueue:
    """The kernel path's queue, from the marker's virtual queue: the mean
    sojourn of the packets of each QUEUE_POLL_S (the series) and the
    histogram of every packet's after warm-up (the percentiles)."""

    def __init__(self, path, warmup_s):
        self.path, self.warmup_s = path, warmup_s
        self.series, self.error = [], None
        self.last_t, self.last = 0.0, None
        self.hist_warm = None

    def poll(self, elapsed):
        if elapsed - self.last_t < QUEUE_POLL_S or self.error:
            return
        try:
            now = self.path.marker_sojourn()
            if self.hist_warm is None and elapsed >= self.warmup_s:
                self.hist_warm = self.path.marker_hist()
        except Exception as e:                  # noqa: BLE001 - reported in the results
            self.error = f"marker unreadable: {e}"
            return
        if self.last and now[1] > self.last[1]:
            self.series.append((elapsed, (now[0] - self.last[0]) / (now[1] - self.last[1]) / 1e6))
        elif self.last:
            self.series.append((elapsed, 0.0))
        self.last_t, self.last = elapsed, now

    def finish(self):
        """{"series": [(t_s, mean ms)], "hist": counts after warm-up} or {"error"}."""
        if self.error:
            return {"error": self.error, "series": self.series}
        try:
            hist = self.path.marker_hist()
        except Exception as e:                  # noqa: BLE001 - reported in the results
            return {"error": f"marker unreadable: {e}", "series": self.series}
        if self.hist_warm:
            hist = [a - b for a, b in zip(hist, self.hist_warm)]
        return {"series": self.series, "hist": hist}


def sender_summary(flows, bins, last, first, warmup_s):
    """Per sender namespace, as the BBR.Swift talk's table reports per sender machine:
    goodput (sum of its bulk flows' mean after warm-up), retransmit rate
    (total_retrans / data_segs_out of its flows, over the run and after
    warm-up: `first` holds each flow's first sample after it) and Jain's
    index over its bulk flows' mean goodput after warm-up."""
    i0 = int(round(warmup_s / M.BIN_S))
    out = []
    for snd in sorted({f["sender"] for f in flows}):
        mine = [f for f in flows if f["sender"] == snd]
        bulk = [f for f in mine if f.get("kind", "bulk") == "bulk"] or mine
        means = [float(np.mean(bins[f["id"]][i0:])) if len(bins[f["id"]]) > i0 else 0.0
                 for f in bulk]
        out.append({"sender": snd, "flows": len(mine),
                    "goodput_mbit": float(sum(means)),
                    "retransmit_rate": M.retransmit_rate(
                        [last[f["id"]] for f in mine if f["id"] in last]),
                    "retransmit_rate_after_warmup": M.retransmit_rate_between(
                        first, {f["id"]: last[f["id"]] for f in mine if f["id"] in last}),
                    "jain": M.jain(means)})
    return out


def ets_summary(flows, samples, state, warmup_s, attach):
    """Per sender: mean Total_RTT (tcp_info srtt of its flows after warm-up),
    mean and median Network_RTT (the CC's ETS samples in its state, > 0
    only) and the median of the Network_RTT its decisions used (the ETS
    path filter's value or the round's least sample)."""
    sender = {f["id"]: f["sender"] for f in flows}
    cookie_flow = {int(r["cookie"]): int(r["flow"]) for r in samples if r.get("cookie")}
    tot, net, dec = {}, {}, {}
    for r in samples:
        if r["t_s"] >= warmup_s and r.get("rtt_us"):
            tot.setdefault(sender[int(r["flow"])], []).append(r["rtt_us"])
    for s in state:
        fid = cookie_flow.get(int(s.get("cookie") or 0))
        if fid is not None and s["t_s"] >= warmup_s and s.get("network_rtt_us"):
            net.setdefault(sender[fid], []).append(s["network_rtt_us"])
            if s.get("decided_rtt_us"):
                dec.setdefault(sender[fid], []).append(s["decided_rtt_us"])
    out = []
    for i in sorted(set(sender.values())):
        out.append({"sender": i,
                    "total_rtt_us_mean": float(np.mean(tot[i])) if i in tot else None,
                    "network_rtt_us_mean": float(np.mean(net[i])) if i in net else None,
                    "network_rtt_us_p50": float(np.median(net[i])) if i in net else None,
                    "decided_rtt_us_p50": float(np.median(dec[i])) if i in dec else None,
                    "network_rtt_samples": len(net.get(i, []))})
    return {"attached": (attach or {}).get("attached"), "per_sender": out,
            "total_rtt_source": "tcp_info rtt (srtt) samples",
            "network_rtt_source": "network_rtt_us of the CC's state records (bbrctl trace)"}


VSQ_MIN_SAMPLES = 20         # ETS samples an interval needs to be compared


def network_rtt_vs_queue(state, series, warmup_s):
    """What the kernel path adds to Network_RTT beyond its queue: for each
    interval of the queue series after warm-up, the mean Network_RTT of the
    ETS samples in it minus the mean sojourn of the packets in it (the
    marker's). Its median is the path's base under this load, its spread
    (p10-p90) the error of reading the queue from Network_RTT, and the
    least-squares slope of Network_RTT on the sojourn should be 1."""
    rows = sorted((s["t_s"], s["network_rtt_us"]) for s in state
                  if s.get("network_rtt_us") and s["t_s"] >= warmup_s)
    pairs, prev_t, i = [], None, 0
    for t, q_ms in series:
        lo = prev_t if prev_t is not None else t - QUEUE_POLL_S
        prev_t = t
        vals = []
        while i < len(rows) and rows[i][0] <= t:
            if rows[i][0] > lo:
                vals.append(rows[i][1])
            i += 1
        if t >= warmup_s and len(vals) >= VSQ_MIN_SAMPLES:
            pairs.append((float(np.mean(vals)), q_ms * 1e3))
    if len(pairs) < 3:
        return {"intervals": len(pairs)}
    nrtt, soj = np.array(pairs).T
    excess = nrtt - soj
    slope = float(np.polyfit(soj, nrtt, 1)[0]) if np.ptp(soj) > 0 else None
    return {"intervals": len(pairs), "interval_s": QUEUE_POLL_S,
            "excess_us": {"p10": float(np.percentile(excess, 10)),
                          "p50": float(np.median(excess)),
                          "p90": float(np.percentile(excess, 90))},
            "sojourn_us_mean": float(np.mean(soj)), "network_rtt_us_mean": float(np.mean(nrtt)),
            "slope": slope}


def rr_summary(flows, sums):
    """Request/response flows: requests done, completion time (flowgen's
    per-flow p50/p99): median of the flows' p50, max of their p99."""
    rr = [f for f in flows if f.get("kind") == "rr"]
    if not rr:
        return None
    p50 = [sums[f["id"]]["rr_latency_us"]["p50"] for f in rr
           if (sums.get(f["id"]) or {}).get("rr_latency_us")]
    p99 = [sums[f["id"]]["rr_latency_us"]["p99"] for f in rr
           if (sums.get(f["id"]) or {}).get("rr_latency_us")]
    return {"flows": len(rr), "flows_with_samples": len(p50),
            "requests_done": int(sum((sums.get(f["id"]) or {}).get("rr_done", 0) for f in rr)),
            "errors": sum(1 for f in rr if (sums.get(f["id"]) or {}).get("error")),
            "completion_ms_p50": float(np.median(p50)) / 1e3 if p50 else None,
            "completion_ms_p99": float(np.max(p99)) / 1e3 if p99 else None}


def queue_from_log(path):
    """(t_s, queue_delay_ms) of forwarded data packets from linkem's log."""
    try:
        t_ns, qd_us = linkem_log.queueing_delay_us(path.read_log(), linkem_log.DIR_FWD)
    except Exception as e:                      # noqa: BLE001 - reported in the report
        return {"error": f"log unreadable: {e}"}
    t0 = getattr(path, "flows_t0_ns", None) or path.started_mono_ns or (int(t_ns[0]) if t_ns.size else 0)
    return {"t_s": (t_ns.astype(np.int64) - t0) / 1e9, "delay_ms": qd_us / 1e3}


def compute(sc, cc, flows, samples, stats, kqueue, log_q, state, backend):
    dur, warm = sc["duration_s"], sc["warmup_s"]
    edges, bins = M.goodput_bins(samples, dur)
    for f in flows:
        bins.setdefault(f["id"], np.zeros(len(edges) - 1))
    active = {f["id"]: (f["start_s"], f["stop_s"]) for f in flows}
    # Fairness is about the bulk flows: request/response flows are left out.
    bulk = {f["id"] for f in flows if f.get("kind", "bulk") == "bulk"} or set(active)
    jbins = {k: v for k, v in bins.items() if k in bulk}
    jactive = {k: v for k, v in active.items() if k in bulk}
    jw = M.jain_windows(edges, jbins, jactive, warm, dur)
    last = M.last_rows(samples)
    cap = capacity_mbit(sc["link"], dur)
    res = {"cc": cc, "flows": []}
    for f in flows:
        a, b = active[f["id"]]
        i0, i1 = int(round(a / M.BIN_S)), int(round(b / M.BIN_S))
        r = last.get(f["id"], {})
        rtts = [s["rtt_us"] / 1e3 for s in samples if s["flow"] == f["id"] and s.get("rtt_us")]
        res["flows"].append({
            "id": f["id"], "cc": f["cc"], "sender": f["sender"],
            "goodput_mbit": float(np.mean(bins[f["id"]][i0:max(i1, i0 + 1)])),
            "retransmit_rate": M.retransmit_rate([r]) if r else None,
            "rtt_ms": M.percentiles(rtts),
            "min_rtt_ms": (r.get("min_rtt_us", 0) / 1e3) if r else None})
    res["per_sender"] = sender_summary(flows, bins, last, M.first_rows_from(samples, warm), warm) \
        if len({f["sender"] for f in flows}) > 1 else None
    util = M.utilisation(bins, edges, cap, warm, dur) if cap else None
    res["goodput_mbit"] = float(sum(float(np.mean(v[int(warm / M.BIN_S):])) for v in bins.values()))
    res["utilisation"] = util
    res["capacity_mbit"] = cap
    res["retransmit_rate"] = M.retransmit_rate(list(last.values()))
    res["retransmits_per_s"] = M.retransmits_per_second(samples, dur)
    res["jain_run"] = M.jain_run(jbins, jactive)
    jvals = [j for _, j in jw]
    res["jain_windows"] = {"mean": float(np.mean(jvals)) if jvals else None,
                           "min": float(np.min(jvals)) if jvals else None, "n": len(jvals)}
    # Convergence counts from the last arrival, in windows from there on.
    last_arrival = max(a for a, _ in jactive.values())
    jw_conv = M.jain_windows(edges, jbins, jactive, last_arrival, dur)
    res["convergence_s"] = M.convergence_time(jw_conv, last_arrival)
    rtts = [s["rtt_us"] / 1e3 for s in samples if s.get("rtt_us")]
    res["rtt_ms"] = M.percentiles(rtts)
    res.update(bottleneck_rates(stats, backend))
    # queueing delay: emulator log or the marker's virtual queue (kernel): per packet
    if isinstance(log_q, dict) and "delay_ms" in log_q:
        sel = log_q["t_s"] >= warm
        res["queue_delay_ms"] = M.percentiles(log_q["delay_ms"][sel])
        res["queue_delay_ms"]["mean"] = float(np.mean(log_q["delay_ms"][sel])) if np.any(sel) else None
        res["queue_source"] = "emulator log"
        res["_queue_series"] = _series_bin(log_q["t_s"], log_q["delay_ms"], dur)
    elif isinstance(kqueue, dict) and "hist" in kqueue:
        p = fastpath.soj_percentiles_us(kqueue["hist"], (0.5, 0.95, 0.99))
        res["queue_delay_ms"] = {f"p{q}": (v / 1e3 if v is not None else None)
                                 for q, v in zip((50, 95, 99), p)}
        m = fastpath.soj_mean_us(kqueue["hist"])
        res["queue_delay_ms"]["mean"] = m / 1e3 if m is not None else None
        res["queue_source"] = "marker: virtual sojourn of every packet (tbf's queue)"
        res["_queue_series"] = kqueue["series"]
    else:
        res["queue_delay_ms"] = M.percentiles([])
        res["queue_source"] = (kqueue or {}).get("error") if backend == "kernel" \
            else (log_q or {}).get("error", "none")
        res["_queue_series"] = (kqueue or {}).get("series", []) if backend == "kernel" else []
    # STARTUP lock-on bandwidth from the exported state
    lock = []
    cookie_to_flow = {int(r["cookie"]): int(r["flow"]) for r in samples if r.get("cookie")}
    for fid in sorted(set(cookie_to_flow.values())):
        rows = [s for s in state if cookie_to_flow.get(int(s["cookie"] or 0)) == fid]
        bw = M.lock_on_bw(rows)
        if bw is not None:
            lock.append(bw / 1e6)
    res["lock_on_mbit"] = lock or None
    res["valid"] = validity(stats, backend)
    res["_bins"] = (edges, bins, active)
    return res


def _series_bin(t, v, dur, bin_s=M.BIN_S):
    """Mean per bin of a per-packet series: [(t, value)]."""
    out = []
    n = int(dur / bin_s)
    idx = np.floor(np.asarray(t) / bin_s).astype(int)
    for i in range(n):
        sel = idx == i
        if np.any(sel):
            out.append((i * bin_s, float(np.mean(np.asarray(v)[sel]))))
    return out


def bottleneck_rates(stats, backend):
    """loss_rate = drops / arrivals, mark_rate = CE / forwarded, data direction."""
    if backend == "kernel":
        q = stats.get("qdisc", {})
        marker = stats.get("marker") or {}
        drops = q.get("drops", 0) + marker.get("drop_loss", 0)
        arrived = marker.get("pkts") or (q.get("packets", 0) + q.get("drops", 0))
        return {"loss_rate": (drops / arrived) if arrived else None,
                "mark_rate": (marker.get("marked", 0) / q["packets"])
                if marker and q.get("packets") else None}
    fwd = stats.get("fwd", stats)
    arrived = fwd.get("arrived") or fwd.get("arrived_pkts")
    forwarded = fwd.get("forwarded") or fwd.get("forwarded_pkts")
    dropped = fwd.get("dropped", 0)
    if isinstance(dropped, dict):
        dropped = sum(v for v in dropped.values() if isinstance(v, (int, float)))
    ce = fwd.get("ce_marked", fwd.get("marked", 0)) or 0
    return {"loss_rate": (dropped / arrived) if arrived else None,
            "mark_rate": (ce / forwarded) if forwarded else None}


# Kernel path: tbf drops the marker's virtual queue (the same limit, drained
# at the nominal rate) would not have made, beyond this share of the
# packets, mean the shaper fell behind its rate (its hrtimer and dequeue
# run late when the CPUs are busy): its real queue then exceeds the
# virtual one the lab reports.
SHAPER_LAG_DROPS_MAX = 0.001


def validity(stats, backend):
    if backend == "kernel":
        q, m = stats.get("qdisc") or {}, stats.get("marker") or {}
        extra = q.get("drops", 0) - m.get("vq_full", 0)
        if m.get("pkts") and extra > SHAPER_LAG_DROPS_MAX * m["pkts"]:
            return {"valid": False, "shaper_drops": q.get("drops", 0),
                    "virtual_drops": m.get("vq_full", 0),
                    "why": f"the tbf dropped {q.get('drops', 0)} packets where its virtual "
                           f"twin dropped {m.get('vq_full', 0)}: the shaper fell behind its "
                           "rate, so the real queue exceeded the reported one"}
        return {"valid": True, "why": "kernel shaper; its drops match the marker's virtual queue"}
    lat = stats.get("lateness_us") or {}
    # linkem's warnings say why when it could not get SCHED_FIFO or mlockall
    return {"valid": bool(stats.get("valid")), "lateness_bound_us": stats.get("lateness_bound_us"),
            "lateness_us": {k: lat.get(k) for k in ("p50", "p99", "p999", "max")},
            "warnings": list(stats.get("warnings") or [])}


# ---- a whole scenario ----

def run_scenario(sc, out, ccs=None, progress=True):
    """Run every sweep point under every CC; write the results folder."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ccs = ccs or sc["ccs"]
    pts = S.points(sc)
    runs = []
    total = len(pts) * len(ccs) * pts[0][1]["duration_s"]
    done = [0.0]
    started = time.monotonic()
    # CC outer: a project CC is registered (and the kernel lock held) once
    # for all its sweep points, not once per point.
    for ci, cc in enumerate(ccs):
        with cc_session(cc):
            for pi, (label, psc) in enumerate(pts):
                rundir = out / "runs" / (_dirname(label) or "run") / _dirname(cc)
                name = f"{label + ' ' if label else ''}{cc}"
                if progress and not sys.stderr.isatty():
                    sys.stderr.write(f"{sc['name']}: {name} ({psc['duration_s']:g} s)\n")

                def prog(elapsed, name=name, dur=psc["duration_s"]):
                    if not progress or not sys.stderr.isatty():
                        return
                    frac = min(1.0, (done[0] + min(elapsed, dur)) / total)
                    sys.stderr.write(f"\r[{frac:4.0%}] {sc['name']}: {name:<28.28} "
                                     f"{min(elapsed, dur):5.1f}/{dur:g} s  "
                                     f"(elapsed {time.monotonic() - started:4.0f} s)  ")
                    sys.stderr.flush()
                res, samples, state = run_one(psc, cc, rundir, prog, registered=True)
                done[0] += psc["duration_s"]
                res["point"] = label
                res["sweep_value"] = _sweep_value(sc, psc)
                runs.append(((pi, ci), (res, samples, state)))
    runs = [r for _, r in sorted(runs, key=lambda x: x[0])]
    if progress and sys.stderr.isatty():
        sys.stderr.write("\n")
    write_results(sc, ccs, runs, out)
    return [r for r, _, _ in runs]


def _dirname(label):
    return "".join(c if c.isalnum() or c in "._=-" else "_" for c in label).strip("_")


def _sweep_value(sc, psc):
    """The swept parameter's value in psc, a point of sc (None: no sweep)."""
    sw = sc.get("sweep")
    if not sw:
        return None
    node = psc
    for k in sw["param"].split("."):
        node = node[k]
    return node


def write_results(sc, ccs, runs, out):
    from . import plots, report
    with open(out / "timeseries.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["point", "cc", "t_s", "flow", "goodput_mbit", "running_jain"])
        for res, _, _ in runs:
            edges, bins, active = res["_bins"]
            rj = M.running_jain(edges, bins, active)
            for fid, v in bins.items():
                for i, x in enumerate(v):
                    w.writerow([res["point"], res["cc"], f"{edges[i + 1]:.1f}", fid, f"{x:.3f}",
                                "" if np.isnan(rj[i]) else f"{rj[i]:.4f}"])
    with open(out / "queue.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["point", "cc", "t_s", "queue_delay_ms"])
        for res, _, _ in runs:
            for t, q in res["_queue_series"]:
                w.writerow([res["point"], res["cc"], f"{t:.3f}", f"{q:.3f}"])
    with open(out / "state.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["point", "cc", "t_s", "cookie", "mode", "phase", "bw_mbit",
                    "pacing_mbit", "cwnd_pkts", "inflight_pkts", "srtt_ms", "min_rtt_ms"])
        for res, _, state in runs:
            for s in state:
                w.writerow([res["point"], res["cc"], f"{s['t_s']:.3f}", s["cookie"],
                            s["mode_name"], s["phase_name"], (s["bw_bps"] or 0) / 1e6,
                            s["pacing_bps"] / 1e6, s["cwnd"], s["inflight"],
                            (s["srtt_us"] or 0) / 1e3, (s["min_rtt_us"] or 0) / 1e3])
    summary = {"scenario": {k: v for k, v in sc.items()}, "ccs": ccs,
               "runs": [{k: v for k, v in r.items() if not k.startswith("_")}
                        for r, _, _ in runs]}
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    pngs = plots.plot_all(sc, runs, out)
    report.write(sc, ccs, [r for r, _, _ in runs], pngs, out)
