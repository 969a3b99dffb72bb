# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""PNG plots of a scenario's runs (lab study 5.3), matplotlib Agg.

  throughput[-N].png  per CC: per-flow goodput in 100-ms bins, aggregate,
                      capacity, running Jain's index (right axis)
  queue[-N].png       queueing delay over time, one line per CC
  cc_state[-N].png    per CC, flow 0: cwnd, pacing rate / bw, RTT, and the
                      BBR mode when the CC exports state
  network_rtt[-N].png ETS runs: Network_RTT over time (mean per 100 ms of the
                      CC's samples, and the value its decisions used) with
                      the bottleneck's queue on the same axis, per CC
  scatter.png         goodput vs p95 queueing delay per run (Pantheon style:
                      x log-scaled and inverted, better is up and right)
  sweep.png           goodput, p95 queue delay and retransmits vs the sweep value
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from . import metrics as M  # noqa: E402

DPI = 80
LEGEND_FLOWS_MAX = 12       # more flows: per-flow lines without legend entries
COLORS = {"bbr3": "tab:blue", "bbr": "tab:green", "cubic": "tab:red", "reno": "tab:gray",
          "bbr_swift": "tab:purple", "dctcp_bpf": "tab:orange",
          "bbr3:v3": "tab:cyan", "bbr3:v3plus": "tab:blue", "bbr3:l4s": "tab:brown"}
MODE_LEVEL = {"STARTUP": 3, "DRAIN": 2, "PROBE_BW": 1, "PROBE_RTT": 0}


def color(cc):
    return COLORS.get(cc, None)


def _save(fig, path, suptitle=None):
    """Lay out, write and close a figure; returns path."""
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def plot_all(sc, runs, out):
    pngs = []
    points = []
    for res, _, _ in runs:
        if res["point"] not in points:
            points.append(res["point"])
    for k, pt in enumerate(points):
        sub = [r for r in runs if r[0]["point"] == pt]
        suffix = "" if len(points) == 1 else f"-{k}"
        title = sc["name"] + (f" ({pt})" if pt else "")
        pngs.append(_throughput(sub, title, out / f"throughput{suffix}.png"))
        pngs.append(_queue(sub, title, out / f"queue{suffix}.png"))
        pngs.append(_state(sub, title, out / f"cc_state{suffix}.png"))
        pngs.append(_network_rtt(sub, title, out / f"network_rtt{suffix}.png"))
    pngs.append(_scatter(sc, runs, out / "scatter.png"))
    if sc.get("sweep"):
        pngs.append(_sweep(sc, runs, out / "sweep.png"))
    return [p for p in pngs if p]


def _throughput(sub, title, path):
    fig, axes = plt.subplots(len(sub), 1, figsize=(9, 2.6 * len(sub)), sharex=True, squeeze=False)
    for ax, (res, _, _) in zip(axes[:, 0], sub):
        edges, bins, active = res["_bins"]
        t = edges[1:]
        many = len(bins) > LEGEND_FLOWS_MAX
        for fid, v in bins.items():
            ax.plot(t, v, lw=0.4 if many else 0.9,
                    label=None if many else f"flow {fid} ({res['flows'][fid]['cc']})")
        ax.plot(t, sum(bins.values()), color="black", lw=1.2, alpha=0.5, label="aggregate")
        if res.get("capacity_mbit"):
            ax.axhline(res["rate_mbit"], color="gray", ls=":", lw=1, label="link rate")
        ax.set_ylabel("goodput (Mbit/s)")
        ax.set_title(f"{res['cc']}: per-flow goodput, 100 ms bins", fontsize=10)
        rj = M.running_jain(edges, bins, active)
        if np.any(~np.isnan(rj)):
            ax2 = ax.twinx()
            ax2.plot(t, rj, color="purple", ls="--", lw=1, label="Jain (1 s)")
            ax2.set_ylim(0, 1.05)
            ax2.set_ylabel("Jain's index", color="purple")
        ax.legend(fontsize=7, loc="lower right", ncol=3)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time (s)")
    return _save(fig, path, title)


QUEUE_US_BELOW_MS = 2.0     # queues that never reach this are plotted in µs


def _queue(sub, title, path):
    fig, ax = plt.subplots(figsize=(9, 3.2))
    any_line = False
    peak = max((q for res, _, _ in sub for _, q in res["_queue_series"] or []), default=0.0)
    scale, unit = (1e3, "µs") if peak < QUEUE_US_BELOW_MS else (1.0, "ms")
    for res, _, _ in sub:
        s = res["_queue_series"]
        if s:
            t, q = zip(*s)
            ax.plot(t, [x * scale for x in q], lw=0.9, color=color(res["cc"]), label=res["cc"])
            any_line = True
    res0 = sub[0][0]
    if res0.get("rate_mbit") and res0.get("buffer_bytes"):
        full_ms = res0["buffer_bytes"] * 8 / (res0["rate_mbit"] * 1e6) * 1e3
        if unit == "ms":
            ax.axhline(full_ms, color="gray", ls=":", label=f"full buffer ({full_ms:.0f} ms)")
        else:
            ax.plot([], [], " ", label=f"(full buffer: {full_ms:.0f} ms)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"queueing delay ({unit})")
    ax.set_title(f"{title}: bottleneck queueing delay ({res0.get('queue_source')})", fontsize=10)
    if any_line or res0.get("buffer_bytes"):
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def _binned(rows, key, agg, bin_s=M.BIN_S):
    """[(bin start, agg of key)] over state rows that carry key."""
    acc = {}
    for r in rows:
        if r.get(key):
            acc.setdefault(int(r["t_s"] / bin_s), []).append(r[key])
    return [(b * bin_s, float(agg(v))) for b, v in sorted(acc.items())]


def _network_rtt(sub, title, path):
    """Network_RTT (ETS) and the bottleneck queue, in µs, one panel per CC
    that has samples; None when no run has any."""
    have = [(res, state) for res, _, state in sub
            if any(r.get("network_rtt_us") for r in state or [])]
    if not have:
        return None
    fig, axes = plt.subplots(len(have), 1, figsize=(9, 2.8 * len(have)), squeeze=False)
    for ax, (res, state) in zip(axes[:, 0], have):
        for key, agg, lab, ls in (("network_rtt_us", np.mean, "Network_RTT (mean)", "-"),
                                  ("decided_rtt_us", np.median, "decided (median)", "--")):
            b = _binned(state, key, agg)
            if b:
                ax.plot(*zip(*b), ls=ls, lw=0.9, label=lab)
        if res.get("_queue_series"):
            t, q = zip(*res["_queue_series"])
            ax.plot(t, [x * 1e3 for x in q], color="gray", lw=0.8, label="queue (bottleneck)")
        target = (((res.get("run_config") or {}).get("cc_params") or {})
                  .get(res["cc"], {}).get("values", {}).get("target_rtt_us"))
        if target:
            ax.axhline(target, color="black", ls=":", lw=1, label=f"target {target} µs")
        ax.set_ylabel("µs")
        ax.set_title(f"{res['cc']}: Network_RTT and queue, 100 ms bins", fontsize=10)
        ax.legend(fontsize=7, loc="upper right")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time (s)")
    return _save(fig, path, title)


def _state(sub, title, path):
    fig, axes = plt.subplots(len(sub), 3, figsize=(12, 2.5 * len(sub)), squeeze=False)
    for row, (res, samples, state) in zip(axes, sub):
        s0 = [s for s in samples if s["flow"] == 0]
        t = [s["t_s"] for s in s0]
        row[0].plot(t, [s["snd_cwnd"] for s in s0], label="cwnd (tcp_info)")
        if state:
            c0 = s0[0]["cookie"] if s0 else None
            st = [s for s in state if s["cookie"] == c0]
            row[0].plot([s["t_s"] for s in st], [s["inflight"] for s in st], label="inflight")
        row[0].set_ylabel("packets")
        row[0].set_title(f"{res['cc']} flow 0: cwnd", fontsize=9)
        row[1].plot(t, [s["pacing_rate_Bps"] * 8 / 1e6 for s in s0], label="pacing rate")
        row[1].plot(t, [s["delivery_rate_Bps"] * 8 / 1e6 for s in s0], lw=0.7, label="delivery rate")
        if state:
            row[1].plot([s["t_s"] for s in st], [(s["bw_bps"] or 0) / 1e6 for s in st], label="bw (model)")
        row[1].set_ylabel("Mbit/s")
        row[1].set_title(f"{res['cc']} flow 0: rates", fontsize=9)
        row[2].plot(t, [s["rtt_us"] / 1e3 for s in s0], label="srtt")
        row[2].plot(t, [s["min_rtt_us"] / 1e3 for s in s0], label="min_rtt")
        row[2].set_ylabel("ms")
        row[2].set_title(f"{res['cc']} flow 0: RTT", fontsize=9)
        if state:
            ax3 = row[2].twinx()
            ax3.step([s["t_s"] for s in st], [MODE_LEVEL.get(s["mode_name"], -1) for s in st],
                     color="gray", lw=0.8, where="post")
            ax3.set_yticks(list(MODE_LEVEL.values()), list(MODE_LEVEL), fontsize=6)
        for ax in row:
            ax.set_xlabel("time (s)")
            ax.legend(fontsize=7)
            ax.grid(alpha=0.3)
    return _save(fig, path, f"{title}: CC state ({sub[0][0].get('state_source')})")


def _scatter(sc, runs, path):
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    seen = set()
    for res, _, _ in runs:
        p95 = (res.get("queue_delay_ms") or {}).get("p95")
        if p95 is None:
            continue
        x = max(p95, 0.01)
        ax.scatter([x], [res["goodput_mbit"]], color=color(res["cc"]),
                   label=None if res["cc"] in seen else res["cc"], s=40)
        seen.add(res["cc"])
        if res["point"]:
            ax.annotate(res["point"].split("=")[-1], (x, res["goodput_mbit"]), fontsize=6)
    ax.set_xscale("log")
    ax.invert_xaxis()
    ax.set_xlabel("p95 queueing delay (ms, log scale; better ->)")
    ax.set_ylabel("aggregate goodput after warm-up (Mbit/s)")
    ax.set_title(f"{sc['name']}: throughput vs delay", fontsize=10)
    if seen:
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    return _save(fig, path)


def _sweep(sc, runs, path):
    param = sc["sweep"]["param"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    ccs = []
    for res, _, _ in runs:
        if res["cc"] not in ccs:
            ccs.append(res["cc"])
    numeric = all(isinstance(v, (int, float)) for v in sc["sweep"]["values"])
    labels = [str(v) for v in sc["sweep"]["values"]]
    for cc in ccs:
        rs = [r for r, _, _ in runs if r["cc"] == cc]
        x = [r["sweep_value"] for r in rs] if numeric else [labels.index(str(r["sweep_value"])) for r in rs]
        axes[0].plot(x, [r["goodput_mbit"] for r in rs], "o-", color=color(cc), label=cc)
        axes[1].plot(x, [(r["queue_delay_ms"] or {}).get("p95") or 0 for r in rs], "o-", color=color(cc), label=cc)
        axes[2].plot(x, [100 * (r["retransmit_rate"] or 0) for r in rs], "o-", color=color(cc), label=cc)
    if param == "link.loss":
        xs = np.array(sorted(sc["sweep"]["values"]))
        rate = runs[0][0]["rate_mbit"]
        axes[0].plot(xs, rate * M.MSS_BYTES / M.MTU_BYTES * (1 - xs), "k:", label="C(1-p)")
    for ax, yl in zip(axes, ("goodput (Mbit/s)", "p95 queueing delay (ms)", "retransmits (%)")):
        if numeric and min(sc["sweep"]["values"]) > 0 and max(sc["sweep"]["values"]) / min(sc["sweep"]["values"]) > 50:
            ax.set_xscale("log")
        if not numeric:
            ax.set_xticks(range(len(labels)), labels, fontsize=7, rotation=20)
        ax.set_xlabel(param)
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, path, f"{sc['name']}: sweep over {param}")
