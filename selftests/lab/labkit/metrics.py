# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Lab metrics, named and defined as in the lab study's section 4.1.

Everything here is a pure function of arrays or sample lists, so it is
unit-tested on synthetic data (selftests/lab/tests/test_lab_metrics.py).

  goodput          payload bytes acknowledged per time (tcpi_bytes_acked
                   deltas), per flow, in BIN_S bins, Mbit/s
  utilisation      sum of goodput / payload ceiling C x MSS/MTU, over the
                   interval after warm-up
  retransmit rate  tcpi_total_retrans / tcpi_data_segs_out
  loss rate        bottleneck drops / arrivals (emulator counters)
  mark rate        CE marks / forwarded packets (emulator counters)
  queueing delay   dequeue time - arrival time of each forwarded packet
                   (emulator log): median, p95, p99
  Jain's index     (sum x)^2 / (n sum x^2): over the run on each flow's mean
                   goodput while it was active, and per 1-s window after
                   warm-up, only in windows where all n flows are active
  convergence time from the last flow's arrival until Jain over 1-s windows
                   stays >= CONVERGED_JAIN for the rest of the run
  lock-on bw       the CC's bw estimate when STARTUP exits (needs state)
"""

import numpy as np

BIN_S = 0.1                 # goodput bins (lab study 5.3: 100 ms - 1 s)
WINDOW_S = 1.0              # Jain windows (transperf: 1-s buckets)
CONVERGED_JAIN = 0.9        # lab study 4.1: J over 1-s windows stays >= 0.9
MSS_BYTES = 1448            # payload per full-size segment with timestamps
MTU_BYTES = 1500            # IP packet; linkem serialises IP packets
BITS_PER_BYTE = 8


def jain(x):
    """Jain's fairness index of throughputs x, in [1/n, 1]; 1.0 for n <= 1."""
    x = np.asarray(x, dtype=float)
    if x.size <= 1:
        return 1.0
    s2 = float(np.sum(x * x))
    if s2 == 0.0:
        return 1.0
    return float(np.sum(x) ** 2 / (x.size * s2))


def goodput_bins(samples, duration_s, bin_s=BIN_S):
    """Per-flow goodput in bins from cumulative bytes_acked samples.

    samples: dicts with t_s, flow, bytes_acked. The cumulative count is
    interpolated linearly at the bin edges (0 before the first sample, flat
    after the last), then differenced. Returns (edges, {flow: Mbit/s array}).
    """
    nbins = int(round(duration_s / bin_s))
    edges = np.arange(nbins + 1) * bin_s
    per = {}
    for r in samples:
        per.setdefault(int(r["flow"]), []).append((float(r["t_s"]), float(r["bytes_acked"])))
    out = {}
    for fid, pts in sorted(per.items()):
        pts.sort()
        t = np.array([p[0] for p in pts])
        b = np.array([p[1] for p in pts])
        cum = np.interp(edges, t, b, left=0.0, right=b[-1])
        out[fid] = np.diff(cum) * BITS_PER_BYTE / bin_s / 1e6
    return edges, out


def window_rates(edges, bins, start_s, stop_s, window_s=WINDOW_S):
    """Mean of 100-ms bins per window: [(w_start, [rate per flow...]), ...]."""
    bin_s = edges[1] - edges[0]
    per_w = int(round(window_s / bin_s))
    out = []
    w = start_s
    while w + window_s <= stop_s + 1e-9:
        i0 = int(round(w / bin_s))
        out.append((w, [float(np.mean(v[i0:i0 + per_w])) for v in bins.values()]))
        w += window_s
    return out


def jain_windows(edges, bins, active, warmup_s, stop_s, window_s=WINDOW_S):
    """Jain's index per window after warmup_s, only where all flows are active.

    active: {flow: (start_s, stop_s)}. Returns [(w_start, J), ...].
    """
    out = []
    for w, rates in window_rates(edges, bins, warmup_s, stop_s, window_s):
        if all(a <= w and w + window_s <= b + 1e-9 for a, b in active.values()):
            out.append((w, jain(rates)))
    return out


def jain_run(bins, active, bin_s=BIN_S):
    """Jain's index over the run: each flow's mean goodput while active."""
    means = []
    for fid, v in bins.items():
        a, b = active[fid]
        i0, i1 = int(round(a / bin_s)), max(int(round(b / bin_s)), int(round(a / bin_s)) + 1)
        means.append(float(np.mean(v[i0:i1])))
    return jain(means)


def running_jain(edges, bins, active, window_s=WINDOW_S):
    """Jain over the trailing window at every bin end, among active flows."""
    bin_s = edges[1] - edges[0]
    per_w = int(round(window_s / bin_s))
    ids = list(bins)
    out = np.full(len(edges) - 1, np.nan)
    for i in range(per_w - 1, len(edges) - 1):
        t = edges[i + 1]
        live = [f for f in ids if active[f][0] <= t - window_s and t <= active[f][1] + 1e-9]
        if len(live) >= 2:
            out[i] = jain([np.mean(bins[f][i + 1 - per_w:i + 1]) for f in live])
    return out


def convergence_time(jw, arrival_s, threshold=CONVERGED_JAIN):
    """Seconds from the last arrival until Jain per window stays >= threshold.

    jw: [(w_start, J)] in time order (windows where all flows are active).
    None when the last window is below threshold or there are no windows.
    """
    if not jw:
        return None
    since = None
    for w, j in jw:
        if j >= threshold:
            if since is None:
                since = w
        else:
            since = None
    if since is None:
        return None
    return max(0.0, since - arrival_s)


def utilisation(bins, edges, capacity_mbit, start_s, stop_s):
    """Sum of goodput over [start_s, stop_s) / (C x MSS/MTU)."""
    bin_s = edges[1] - edges[0]
    i0, i1 = int(round(start_s / bin_s)), int(round(stop_s / bin_s))
    if i1 <= i0:
        return None
    total = sum(float(np.mean(v[i0:i1])) for v in bins.values())
    return total / (capacity_mbit * MSS_BYTES / MTU_BYTES)


def percentiles(x, qs=(50, 95, 99)):
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return {f"p{q}": None for q in qs}
    return {f"p{q}": float(np.percentile(x, q)) for q in qs}


def retransmit_rate(final_rows):
    """Sum of total_retrans / sum of data_segs_out over the flows' last samples."""
    segs = sum(r["data_segs_out"] for r in final_rows)
    return (sum(r["total_retrans"] for r in final_rows) / segs) if segs else None


def retransmits_per_second(samples, duration_s):
    """Retransmits and data segments sent in each second of the run, over all
    flows: [{"t_s": k, "retransmits": n, "segments": m}] for k = 0, 1, ...
    (each flow's counters at the last sample of the second, less those at
    the last sample of the second before)."""
    nsec = max(1, int(np.ceil(duration_s)))
    at = {}                      # (flow, second) -> the latest row in it
    for r in samples:
        k = min(int(r["t_s"]), nsec - 1)
        key = (int(r["flow"]), k)
        if key not in at or r["t_s"] >= at[key]["t_s"]:
            at[key] = r
    out = []
    prev = {}
    for k in range(nsec):
        rtx = segs = 0
        for f in sorted({f for f, _ in at}):
            r = at.get((f, k))
            if r is None:
                continue
            p = prev.get(f, {"total_retrans": 0, "data_segs_out": 0})
            rtx += r["total_retrans"] - p["total_retrans"]
            segs += r["data_segs_out"] - p["data_segs_out"]
            prev[f] = r
        out.append({"t_s": k, "retransmits": int(rtx), "segments": int(segs)})
    return out


def first_rows_from(samples, t_s):
    """Each flow's first sample at or after t_s (its counters then)."""
    first = {}
    for r in samples:
        f = int(r["flow"])
        if r["t_s"] >= t_s and (f not in first or r["t_s"] < first[f]["t_s"]):
            first[f] = r
    return first


def retransmit_rate_between(first_rows, final_rows):
    """total_retrans / data_segs_out between two samples of the same flows."""
    pairs = [(first_rows[f], r) for f, r in final_rows.items() if f in first_rows]
    segs = sum(b["data_segs_out"] - a["data_segs_out"] for a, b in pairs)
    return (sum(b["total_retrans"] - a["total_retrans"] for a, b in pairs) / segs) \
        if segs > 0 else None


def last_rows(samples):
    last = {}
    for r in samples:
        f = int(r["flow"])
        if f not in last or r["t_s"] >= last[f]["t_s"]:
            last[f] = r
    return last


def lock_on_bw(state_rows, startup_mode=0):
    """bw (bit/s) in the first state record that is no longer STARTUP, else None.

    state_rows: dicts with t_s, mode, bw_bps, time ordered, of one flow.
    """
    seen_startup = False
    for r in state_rows:
        if r["mode"] == startup_mode:
            seen_startup = True
        elif seen_startup:
            return r["bw_bps"]
    return None
