# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""report.md: the scenario, one scorecard row per run, the plots."""


def _f(x, fmt="{:.1f}", none="-"):
    return none if x is None else fmt.format(x)


LOCK_ON_LISTED_MAX = 4      # more flows than this: median (min-max)


def _lock_on(values):
    if not values:
        return "-"
    if len(values) <= LOCK_ON_LISTED_MAX:
        return ",".join(f"{x:.1f}" for x in values)
    v = sorted(values)
    return f"med {v[len(v) // 2]:.1f} ({v[0]:.1f}-{v[-1]:.1f}, {len(v)} flows)"


def _q(ms):
    """A queue delay in ms: µs resolution below a millisecond."""
    return _f(ms, "{:.3f}" if ms is not None and ms < 1 else "{:.1f}")


def _spread(vals, fmt):
    v = sorted(x for x in vals if x is not None)
    if not v:
        return "-"
    if len(v) == 1:
        return fmt.format(v[0])
    return f"{fmt.format(v[len(v) // 2])} [{fmt.format(v[0])}-{fmt.format(v[-1])}]"


def _min_sender_jain(r):
    js = [s["jain"] for s in r.get("per_sender") or [] if s.get("jain") is not None]
    return min(js) if js else None


def _nrtt_p50(r):
    v = [s["network_rtt_us_p50"] for s in (r.get("ets") or {}).get("per_sender", [])
         if s.get("network_rtt_us_p50")]
    return sum(v) / len(v) if v else None


def repeat_rows(runs):
    """Scenarios with repeats: per (sweep point, CC), the median [min-max]
    over the repeated runs. None when nothing is repeated."""
    groups = {}
    for r in runs:
        pt = r.get("point") or ""
        if "run=" not in pt:
            continue
        base = pt.rpartition("run=")[0].strip() or "-"
        groups.setdefault((base, r["cc"]), []).append(r)
    if not groups:
        return None
    rows = [("point", "cc", "runs", "util %", "Jain all", "Jain per sender (min)", "retx %",
             "queue mean ms", "queue p99 ms", "Network_RTT p50 us")]
    for (pt, cc), rs in groups.items():
        rows.append((pt, cc, len(rs),
                     _spread([r["utilisation"] and 100 * r["utilisation"] for r in rs], "{:.1f}"),
                     _spread([r["jain_run"] for r in rs], "{:.3f}"),
                     _spread([_min_sender_jain(r) for r in rs], "{:.3f}"),
                     _spread([r["retransmit_rate"] is not None and 100 * r["retransmit_rate"]
                              for r in rs], "{:.3f}"),
                     _spread([(r.get("queue_delay_ms") or {}).get("mean") for r in rs], "{:.3f}"),
                     _spread([(r.get("queue_delay_ms") or {}).get("p99") for r in rs], "{:.3f}"),
                     _spread([_nrtt_p50(r) for r in rs], "{:.0f}")))
    return rows


def scorecard_rows(runs):
    """[(header...), (row...)...] - the scorecard table, also printed by the demo."""
    head = ("point", "cc", "goodput Mbit/s", "util %", "retx %", "loss %", "mark %",
            "queue p50/p95/p99 ms", "rtt p50 ms", "Jain run", "Jain 1s mean/min",
            "conv s", "lock-on Mbit/s", "valid")
    rows = [head]
    for r in runs:
        q = r.get("queue_delay_ms") or {}
        jw = r.get("jain_windows") or {}
        v = r.get("valid") or {}
        rows.append((r.get("point") or "-", r["cc"], _f(r["goodput_mbit"]),
                     _f(r["utilisation"] and 100 * r["utilisation"]),
                     _f(r["retransmit_rate"] is not None and 100 * r["retransmit_rate"], "{:.2f}"),
                     _f(r.get("loss_rate") is not None and 100 * r["loss_rate"], "{:.2f}")
                     if r.get("loss_rate") is not None else "-",
                     _f(100 * r["mark_rate"], "{:.2f}") if r.get("mark_rate") is not None else "-",
                     "/".join(_q(q.get(k)) for k in ("p50", "p95", "p99")),
                     _f((r.get("rtt_ms") or {}).get("p50")),
                     _f(r["jain_run"], "{:.3f}"),
                     f"{_f(jw.get('mean'), '{:.3f}')}/{_f(jw.get('min'), '{:.3f}')}",
                     _f(r["convergence_s"]),
                     _lock_on(r.get("lock_on_mbit")),
                     "yes" if v.get("valid") else "NO"))
    return rows


def _pct(x):
    return "-" if x is None else f"{x * 100:.3f}"


RETX_SECONDS_LISTED = 3     # seconds shown one by one, then the rest together


def retx_rows(runs):
    """Retransmits per second of the run (all flows): the first seconds one
    by one (start-up), then the rest together; only runs that retransmitted."""
    def cell(rows):
        rtx = sum(r["retransmits"] for r in rows)
        segs = sum(r["segments"] for r in rows)
        return f"{rtx} ({100.0 * rtx / segs:.2f} %)" if segs else f"{rtx}"

    head = [f"{k}-{k + 1} s" for k in range(RETX_SECONDS_LISTED)]
    rows = [("point", "cc", *head, f"after {RETX_SECONDS_LISTED} s")]
    for r in runs:
        per = r.get("retransmits_per_s") or []
        if not any(x["retransmits"] for x in per):
            continue
        rows.append((r.get("point") or "-", r["cc"],
                     *[cell(per[k:k + 1]) for k in range(RETX_SECONDS_LISTED)],
                     cell(per[RETX_SECONDS_LISTED:])))
    return rows if len(rows) > 1 else None


def sender_rows(runs):
    """Per sender: goodput, retransmits and Jain (runs with several senders)
    and mean Total_RTT / Network_RTT (runs with ETS), as the table of
    BBR.Swift's datacenter experiment in Google's BBR.Swift talk (IETF 109). None when no run has either."""
    rows = [("point", "cc", "sender", "goodput Mbit/s", "retx %", "retx after warm-up %", "Jain",
             "ETS attached", "Total_RTT mean us", "Network_RTT mean / p50 us",
             "decided p50 us", "Network_RTT samples")]
    for r in runs:
        e = r.get("ets") or {}
        ets = {s["sender"]: s for s in e.get("per_sender", [])}
        tput = {s["sender"]: s for s in r.get("per_sender") or []}
        for snd in sorted(set(ets) | set(tput)):
            t, x = tput.get(snd, {}), ets.get(snd, {})
            rows.append((r.get("point") or "-", r["cc"], snd,
                         _f(t.get("goodput_mbit")),
                         _pct(t.get("retransmit_rate")),
                         _pct(t.get("retransmit_rate_after_warmup")),
                         _f(t.get("jain"), "{:.3f}"),
                         {True: "yes", False: "no"}.get(e.get("attached"), "-"),
                         _f(x.get("total_rtt_us_mean"), "{:.0f}"),
                         _f(x.get("network_rtt_us_mean"), "{:.0f}") + " / " +
                         _f(x.get("network_rtt_us_p50"), "{:.0f}"),
                         _f(x.get("decided_rtt_us_p50"), "{:.0f}"),
                         x.get("network_rtt_samples", "-")))
    return rows if len(rows) > 1 else None


def vs_queue_rows(runs):
    """Kernel path with ETS: Network_RTT against the marker's queue per
    interval (runner.network_rtt_vs_queue). None when no run has it."""
    rows = [("point", "cc", "intervals", "Network_RTT mean us", "queue mean us",
             "Network_RTT - queue p10 / p50 / p90 us", "slope")]
    for r in runs:
        v = (r.get("ets") or {}).get("vs_queue") or {}
        if v.get("excess_us"):
            e = v["excess_us"]
            rows.append((r.get("point") or "-", r["cc"], v["intervals"],
                         _f(v["network_rtt_us_mean"], "{:.0f}"), _f(v["sojourn_us_mean"], "{:.0f}"),
                         " / ".join(_f(e[k], "{:.0f}") for k in ("p10", "p50", "p90")),
                         _f(v["slope"], "{:.2f}")))
    return rows if len(rows) > 1 else None


def rr_rows(runs):
    """Request/response flows: requests done, completion time p50 / p99."""
    rows = [("point", "cc", "rr flows", "requests done", "errors",
             "completion p50 ms", "completion p99 ms")]
    for r in runs:
        q = r.get("rr")
        if q:
            rows.append((r.get("point") or "-", r["cc"], q["flows"], q["requests_done"],
                         q["errors"], _f(q["completion_ms_p50"], "{:.2f}"),
                         _f(q["completion_ms_p99"], "{:.2f}")))
    return rows if len(rows) > 1 else None


def markdown_table(rows):
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def text_table(rows, skip_point=False):
    if skip_point:
        rows = [r[1:] for r in rows]
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def write(sc, ccs, runs, pngs, out):
    link = sc["link"]
    r0 = runs[0]
    lines = [f"# Lab report: {sc['name']}", ""]
    if sc.get("description"):
        lines += [sc["description"].strip(), ""]
    lines += [
        f"- link: {link.get('rate_mbit') or link.get('schedule') or link.get('trace')} Mbit/s, "
        f"base RTT {link.get('rtt_ms', 0)} ms, buffer {r0['buffer_bytes']:,} B "
        f"({r0['buffer_bytes'] / r0['bdp_bytes']:.2f} BDP)" if r0.get("bdp_bytes") else
        f"- link: {link}",
        f"- backend: {r0['backend']}; queue delay from: {r0.get('queue_source')}; "
        f"CC state from: {', '.join(sorted({r['state_source'] for r in runs}))}",
        f"- {sum(int(f.get('count', 1)) for f in sc['flows'])} flows, {sc['duration_s']:g} s per run, "
        f"metrics after a {sc['warmup_s']:g} s warm-up; CCs: {', '.join(ccs)}",
    ]
    if sc.get("sweep"):
        lines.append(f"- sweep: {sc['sweep']['param']} = {sc['sweep']['values']}")
    rep = repeat_rows(runs)
    if rep:
        lines += ["", "## Over the repeated runs", "", markdown_table(rep), "",
                  "Median [min-max] over the runs of each CC (`repeats`): util, Jain over "
                  "all bulk flows and the least of the senders' Jain, retransmits, the "
                  "bottleneck queue's mean and p99 after warm-up, the senders' median "
                  "Network_RTT (ETS runs)."]
    lines += ["", "## Scorecard", "", markdown_table(scorecard_rows(runs)), "",
              "Definitions (docs/lab.md): goodput = payload acknowledged per second "
              "(tcp_info bytes_acked, summed over flows, after warm-up); util = goodput / "
              "(C x 1448/1500); retx = total_retrans / data_segs_out; loss and mark = "
              "bottleneck drops / arrivals and CE marks / forwarded; queue = bottleneck "
              "sojourn time; Jain over the run and per 1-s window where all flows are "
              "active; conv = seconds from the last arrival until Jain per window stays "
              ">= 0.9; valid = the emulator's release lateness stayed within its bound "
              "(kernel path: the tbf dropped no more than the marker's virtual queue of the "
              "same size, so it kept its rate).", ""]
    for title, rows, note in (
            ("Per sender", sender_rows(runs),
             "Goodput: sum of the sender's bulk flows' mean goodput after warm-up; "
             "retx: total_retrans / data_segs_out of its flows, over the run and after "
             "warm-up; Jain: over its bulk flows' mean goodput after warm-up; Total_RTT: "
             "mean tcp_info srtt of its flows after warm-up; Network_RTT: mean and median of "
             "the CC's ETS samples (bbrctl trace) after warm-up (ETS runs only); decided: "
             "median of the Network_RTT bbr_swift's decisions used (the ETS path filter's "
             "value, or the round's least sample)."),
            ("Network_RTT against the queue", vs_queue_rows(runs),
             "Per 100 ms after warm-up with at least 20 ETS samples: the mean "
             "Network_RTT of the CC's samples and the mean sojourn of the packets "
             "the marker's virtual queue (the tbf's) admitted. Their difference is "
             "what the path adds beyond its queue (its base under this load; p10-p90: "
             "the error of reading the queue from Network_RTT); slope: least squares "
             "of Network_RTT on the queue (1 when every µs of queue shows)."),
            ("Retransmits per second", retx_rows(runs),
             "Retransmitted segments (and their share of the data segments sent) in "
             "each second of the run, all flows (tcp_info total_retrans deltas)."),
            ("Request/response flows", rr_rows(runs),
             "Completion time of one request (request sent to full response received, "
             "flowgen): p50 = median over the rr flows of each flow's median, p99 = the "
             "largest per-flow p99.")):
        if rows:        # a section only where the scenario has such flows
            lines += [f"## {title}", "", markdown_table(rows), "", note, ""]
    lines += ["## Plots", ""]
    for p in pngs:
        lines.append(f"![{p.stem}]({p.name})")
    (out / "report.md").write_text("\n".join(lines) + "\n")
