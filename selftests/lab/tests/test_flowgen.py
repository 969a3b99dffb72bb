# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""flowgen: many flows, a CC per socket, TCP_INFO samples, stop times, rr counts.

Runs between namespaces this test builds (bbrtest.Topology, prefix "lfp"+pid),
with kernel CCs only (cubic, reno, bbr), so it needs no struct_ops lock.
flowgen runs through the toolkit's wrapper (bbrtest.flowgen).
"""

import json
import os
import subprocess
import time
from collections import defaultdict

import pytest

import bbrtest
from bbrtest.flowgen import FLOWGEN_BIN as FLOWGEN
from bbrtest.flowgen import PORT_LO, run_client
from bbrtest.flowgen import topology_server as Server

NS_PREFIX = f"lfp{os.getpid()}"
SAMPLE_MS = 100
SAMPLE_LATE_MEDIAN_S = 0.03     # a flow's median lateness behind its ticks (2 ms seen, quiet host)
SKIPPED_TICKS_MAX = 2          # ticks a flow's sampler may skip (the sample count allows 2 missing)
STOP_TOL_S = 0.05               # stop at 1 ms ticks, plus scheduling noise
KERNEL_CCS = ("cubic", "reno", "bbr")
BUFFER_BYTES = 4_000_000


def _need_root():
    if os.geteuid() != 0:
        pytest.fail("flowgen tests need root (namespaces, tc)")
    if not FLOWGEN.exists():
        pytest.fail(f"{FLOWGEN} not built: run make")


def _assert_no_leftovers():
    left = [ns for ns in bbrtest.list_netns() if ns.startswith(NS_PREFIX)]
    assert not left, f"namespaces left behind: {left}"


def test_200_mixed_flows(tmp_path):
    """200 flows: bulk with two stop times, rr with counts; cubic/reno/bbr per socket."""
    _need_root()
    flows = []
    for i in range(200):
        f = {"id": i, "dst": None, "port": PORT_LO + i % 4, "cc": KERNEL_CCS[i % 3]}
        # Bulk flows all open at 0, before the queue fills: a SYN dropped at a
        # full bottleneck waits 1 s for its retry. rr flows start later, staggered
        # (their SYNs may meet a full queue; they have until 10 s).
        if i < 150:
            f.update(kind="bulk", start_s=0, stop_s=1.5 if i % 2 else 2.5)
        else:
            f.update(kind="rr", start_s=0.5 + 0.01 * (i - 150), req_bytes=200,
                     resp_bytes=3000, count=20, stop_s=10)
        flows.append(f)
    try:
        # 4 MB of buffer, ~18 packets per bulk flow: with the toolkit's default
        # (2 per flow) some flows sit in RTO backoff for the whole run.
        with bbrtest.Topology(rate_mbit=200, buffer_bytes=BUFFER_BYTES, prefix=NS_PREFIX) as topo:
            for f in flows:
                f["dst"] = topo.rcv_addr
            with Server(topo, tmp_path):
                t0 = time.monotonic()
                cp, summary, rows = run_client(topo.snd_ns, flows, tmp_path)
                wall_s = time.monotonic() - t0
    finally:
        _assert_no_leftovers()
    assert cp.returncode == 0, f"client exit {cp.returncode}: {cp.stderr}"
    per_flow = {f["id"]: f for f in summary["flows"]}
    errors = [f for f in per_flow.values() if f["error"]]
    assert not errors, f"flows with errors: {errors[:3]}"
    assert len(per_flow) == 200

    by_flow = defaultdict(list)
    for r in rows:
        by_flow[int(r["flow"])].append(r)
    # Bytes of all flows acked in the first 1.45 s (every bulk flow open)
    # against the bottleneck: the generator keeps a 200 Mbit/s link busy.
    # Cumulative from 0, slow start included: a window in mid-run swings with
    # when SACKed data from the start-up losses is credited (145-208 Mbit/s
    # over 14 quiet runs), the total from 0 less so (154-182 Mbit/s, ideal
    # goodput 191). A generator that cannot keep up (a blocking write, a
    # starved flow set) lands far below the 70 % floor.
    def acked_by(fid, t):
        before = [int(r["bytes_acked"]) for r in by_flow[fid] if float(r["t_s"]) <= t]
        return before[-1] if before else 0
    early_mbit = sum(acked_by(i, 1.45) for i in range(200)) * 8 / 1.45 / 1e6
    print(f"200 flows in {wall_s:.2f} s wall, {len(rows)} samples, "
          f"{early_mbit:.1f} Mbit/s acked in the first 1.45 s (tbf 200 Mbit/s, goodput 191)")
    assert early_mbit >= 0.7 * 191, "generator cannot fill the bottleneck"

    worst_late_s = worst_median_late_s = 0.0
    most_skipped = 0
    for spec in flows:
        fid = spec["id"]
        s = per_flow[fid]
        assert s["connected"], f"flow {fid} never connected"
        assert s["cc_actual"] == spec["cc"], f"flow {fid}: cc {s['cc_actual']} != {spec['cc']}"
        assert s["cookie"] > 0
        samples = by_flow[fid]
        assert {r["cc"] for r in samples} == {spec["cc"]}, f"flow {fid}: CSV cc column"
        assert {int(r["cookie"]) for r in samples} == {s["cookie"]}
        if spec["kind"] == "bulk":
            # 150 flows share 200 Mbit/s: ~330 kB each on average; every one moves some
            assert s["bytes_acked"] > 10_000, f"bulk flow {fid} moved {s['bytes_acked']} B"
            # stop time honoured: closed within STOP_TOL_S, no sample after it
            assert spec["stop_s"] <= s["t_end_s"] <= spec["stop_s"] + STOP_TOL_S, \
                f"flow {fid} ended at {s['t_end_s']} (stop {spec['stop_s']})"
            ts = [float(r["t_s"]) for r in samples]
            assert max(ts) <= spec["stop_s"] + STOP_TOL_S
            # sampled from its connect: a SYN among 150 at once may connect late
            expect = int((spec["stop_s"] - max(spec["start_s"], s["t_connect_s"]))
                         * 1000 / SAMPLE_MS)
            assert expect - 2 <= len(ts) <= expect + 1, \
                f"flow {fid}: {len(ts)} samples, expected ~{expect}"
            # flowgen samples on a fixed grid (t0 + k x sample_ms): a late sample
            # does not shift the next one, and a pass that falls a whole period
            # behind skips that tick rather than sampling twice in a burst.
            # Each sample sits on its own tick (none doubled), and ticks are
            # skipped at most one in a row and SKIPPED_TICKS_MAX per flow: a
            # busy epoll pass under 200 flows on 2 vCPUs delays one sample by
            # 37-97 ms, once in CI by just over a period. A sampler that
            # drifted (each tick timed from the last sample) would move the
            # median, which stays within SAMPLE_LATE_MEDIAN_S.
            period_s = SAMPLE_MS / 1000
            ticks = [int(t / period_s + 1e-6) for t in ts]
            late = sorted(t - k * period_s for t, k in zip(ts, ticks))
            median_late_s = late[len(late) // 2]
            worst_late_s = max(worst_late_s, late[-1])
            worst_median_late_s = max(worst_median_late_s, median_late_s)
            assert median_late_s <= SAMPLE_LATE_MEDIAN_S, \
                f"flow {fid}: median sample {median_late_s * 1000:.0f} ms after its tick"
            steps = [b - a for a, b in zip(ticks, ticks[1:])]
            skipped = sum(d - 1 for d in steps)
            most_skipped = max(most_skipped, skipped)
            assert all(1 <= d <= 2 for d in steps) and skipped <= SKIPPED_TICKS_MAX, \
                f"flow {fid}: sample ticks {ticks} doubled or skipped"
        else:
            assert s["t_connect_s"] >= spec["start_s"], f"rr flow {fid} started early"
            assert s["completed"], f"rr flow {fid} did not complete"
            assert s["rr_done"] == 20, f"rr flow {fid}: {s['rr_done']} of 20"
            assert s["app_bytes_received"] == 20 * 3000
            assert s["app_bytes_sent"] == 20 * 200
    print(f"bulk samples after their ticks: worst flow median {worst_median_late_s * 1000:.0f} ms "
          f"(bound {SAMPLE_LATE_MEDIAN_S * 1000:.0f}), latest single sample {worst_late_s * 1000:.0f} ms, "
          f"at most {most_skipped} ticks skipped in a flow (bound {SKIPPED_TICKS_MAX})")
    rr_p50 = sorted(per_flow[i]["rr_latency_us"]["p50"] for i in range(150, 200))
    print(f"rr: 50 flows x 20 requests complete, median of per-flow p50 latency {rr_p50[25]} us")


def test_unknown_cc_is_a_flow_error(tmp_path):
    """An unknown CC fails that flow (with errno ENOENT) and the run goes on."""
    _need_root()
    try:
        with bbrtest.Topology(prefix=NS_PREFIX) as topo:
            flows = [{"id": 0, "dst": topo.rcv_addr, "port": PORT_LO, "cc": "cubic",
                      "kind": "bulk", "bytes": 1_000_000},
                     {"id": 1, "dst": topo.rcv_addr, "port": PORT_LO, "cc": "no_such_cc",
                      "kind": "bulk", "bytes": 1_000_000}]
            with Server(topo, tmp_path):
                cp, summary, rows = run_client(topo.snd_ns, flows, tmp_path)
    finally:
        _assert_no_leftovers()
    print(cp.stderr.strip(), json.dumps(summary["flows"][1]["error"]))
    assert cp.returncode == 3, f"exit {cp.returncode}, expected 3 (flow errors)"
    good, bad = summary["flows"]
    assert good["error"] is None and good["completed"]
    assert good["bytes_acked"] >= 1_000_000
    assert bad["error"]["stage"] == "set_cc"
    assert bad["error"]["errno_name"] == "ENOENT"
    assert not bad["connected"] and bad["bytes_acked"] == 0
    assert summary["n_errors"] == 1


def test_bad_spec_is_rejected(tmp_path):
    """Malformed input: exit 1 with a message naming the field, nothing written."""
    _need_root()
    spec = tmp_path / "bad.json"
    spec.write_text(json.dumps({"flows": [{"id": 0, "dst": "198.18.0.1", "kind": "stream",
                                           "stop_s": 1}]}))
    cp = subprocess.run([str(FLOWGEN), "client", "--spec", str(spec),
                         "--out", str(tmp_path / "s.csv")], capture_output=True, text=True)
    print(cp.stderr.strip())
    assert cp.returncode == 1 and "kind" in cp.stderr
