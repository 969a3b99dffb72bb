# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""labkit metrics and scenarios on synthetic data (no root, no network)."""

import json
from pathlib import Path

import numpy as np
import pytest

from labkit import metrics as M
from labkit import scenario as S
from labkit import report


def test_jain_bounds():
    assert M.jain([10, 10, 10, 10]) == pytest.approx(1.0)
    assert M.jain([40, 0, 0, 0]) == pytest.approx(0.25)        # 1/n
    # (1+3)^2 / (2 * (1+9)) = 0.8
    assert M.jain([1, 3]) == pytest.approx(0.8)
    print("jain equal/one-hog/1:3 =", M.jain([1] * 4), M.jain([4, 0, 0, 0]), M.jain([1, 3]))


def _cumulative(rate_mbit, t_end, start=0.0, step=0.1):
    """Samples of a flow that delivers rate_mbit from start on."""
    rows = []
    t = start + step
    while t <= t_end + 1e-9:
        rows.append({"t_s": t, "bytes_acked": rate_mbit * 1e6 / 8 * (t - start)})
        t += step
    return rows


def test_goodput_bins_constant_rate():
    rows = [dict(r, flow=0) for r in _cumulative(20.0, 5.0)]
    rows += [dict(r, flow=1) for r in _cumulative(10.0, 5.0, start=2.0)]
    edges, bins = M.goodput_bins(rows, 5.0)
    assert len(edges) == 51 and set(bins) == {0, 1}
    assert np.allclose(bins[0], 20.0, atol=1e-6), bins[0]
    assert np.allclose(bins[1][:20], 0.0) and np.allclose(bins[1][21:], 10.0), bins[1]
    print("bins flow0", bins[0][:5], "flow1 around start", bins[1][18:23])


def test_jain_windows_only_when_all_active():
    rows = [dict(r, flow=0) for r in _cumulative(30.0, 6.0)]
    rows += [dict(r, flow=1) for r in _cumulative(10.0, 6.0, start=2.0)]
    edges, bins = M.goodput_bins(rows, 6.0)
    active = {0: (0.0, 6.0), 1: (2.0, 6.0)}
    jw = M.jain_windows(edges, bins, active, warmup_s=0.0, stop_s=6.0)
    assert [w for w, _ in jw] == [2.0, 3.0, 4.0, 5.0]
    assert all(j == pytest.approx(M.jain([30, 10])) for _, j in jw)
    # run-level: each flow's mean while active
    assert M.jain_run(bins, active) == pytest.approx(M.jain([30, 10]), rel=1e-3)
    print("windows", jw)


def test_convergence_time():
    jw = [(1.0, 0.5), (2.0, 0.95), (3.0, 0.7), (4.0, 0.92), (5.0, 0.99), (6.0, 0.97)]
    assert M.convergence_time(jw, arrival_s=1.0) == pytest.approx(3.0)   # from 4.0
    assert M.convergence_time(jw[:3], arrival_s=1.0) is None             # ends unfair
    assert M.convergence_time([(2.0, 0.99)], arrival_s=1.0) == pytest.approx(1.0)


def test_utilisation_and_retransmit_rate():
    rows = [dict(r, flow=0) for r in _cumulative(48.0, 4.0)]
    edges, bins = M.goodput_bins(rows, 4.0)
    u = M.utilisation(bins, edges, 50.0, 1.0, 4.0)
    assert u == pytest.approx(48.0 / (50 * 1448 / 1500), rel=1e-6)
    assert M.retransmit_rate([{"total_retrans": 5, "data_segs_out": 1000},
                              {"total_retrans": 15, "data_segs_out": 1000}]) == pytest.approx(0.01)


def test_lock_on_bw():
    rows = [{"mode": 0, "bw_bps": 1e6}, {"mode": 0, "bw_bps": 4e7}, {"mode": 1, "bw_bps": 4.8e7},
            {"mode": 2, "bw_bps": 4.9e7}]
    assert M.lock_on_bw(rows) == 4.8e7
    assert M.lock_on_bw([{"mode": 2, "bw_bps": 1}]) is None


def test_running_jain_nan_until_two_flows():
    rows = [dict(r, flow=0) for r in _cumulative(25.0, 4.0)]
    rows += [dict(r, flow=1) for r in _cumulative(25.0, 4.0, start=1.0)]
    edges, bins = M.goodput_bins(rows, 4.0)
    rj = M.running_jain(edges, bins, {0: (0, 4), 1: (1, 4)})
    assert np.all(np.isnan(rj[:19])) and np.allclose(rj[20:], 1.0, atol=1e-3)


SCEN = """
name = "t"
duration_s = 10
[link]
rate_mbit = 50
rtt_ms = 40
buffer_bdp = 2
[[flows]]
count = 2
[[flows]]
count = 1
sender = 1
start_s = 2
cc = "cubic"
[sweep]
param = "link.loss"
values = [0.001, 0.01]
"""


def test_scenario_expand_and_sweep():
    sc = S.loads(SCEN)
    assert sc["ccs"] == ["bbr3", "bbr", "cubic"]
    pts = S.points(sc)
    assert [p[1]["link"]["loss"] for p in pts] == [0.001, 0.01]
    flows = S.expand_flows(pts[0][1], "bbr3")
    assert [(f["id"], f["cc"], f["sender"], f["start_s"], f["stop_s"]) for f in flows] == [
        (0, "bbr3", 0, 0.0, 10.0), (1, "bbr3", 0, 0.0, 10.0), (2, "cubic", 1, 2.0, 10.0)]
    kw = S.path_kwargs(pts[1][1], flows)
    assert kw["senders"] == 2 and kw["loss"] == 0.01 and kw["buffer_bdp"] == 2


def test_scenario_repeats():
    """repeats = N: every sweep point N times, labelled run=K after the point,
    each run recording its point's sweep value; --quick runs once."""
    from labkit import runner as R
    sc = S.loads("repeats = 3\n" + SCEN)
    pts = S.points(sc)
    assert [p[0] for p in pts] == [f"link.loss={v} run={k}" for v in (0.001, 0.01)
                                   for k in (1, 2, 3)]
    assert [R._sweep_value(sc, p) for _, p in pts] == [0.001] * 3 + [0.01] * 3
    plain = S.loads("repeats = 2\n" + SCEN.split("[sweep]")[0])
    assert [p[0] for p in S.points(plain)] == ["run=1", "run=2"]
    assert R._sweep_value(plain, S.points(plain)[1][1]) is None
    assert len(S.points(S.quick(sc))) == 2
    for bad in ("0", "11", "1.5", "true"):
        with pytest.raises(S.ScenarioError, match="repeats"):
            S.loads(f"repeats = {bad}\n" + SCEN)


def test_soj_histogram_layout_and_percentiles():
    """The marker's sojourn histogram as labkit reads it: 1 µs buckets below
    64 µs, then 16 per octave; percentiles interpolate within a bucket."""
    from labkit import fastpath as F
    edges = F.soj_bucket_edges_us()
    assert len(edges) == F.SOJ_BUCKETS == 256
    assert edges[63] == (63.0, 1.0) and edges[64] == (64.0, 4.0) and edges[80] == (128.0, 8.0)
    assert all(a[0] + a[1] == b[0] for a, b in zip(edges, edges[1:]))
    counts = [0] * F.SOJ_BUCKETS
    counts[10] = 50                         # 50 packets waited 10-11 µs
    counts[64 + 16 + 8] = 50                # 50 waited 192-200 µs
    p50, p99 = F.soj_percentiles_us(counts, (0.5, 0.99))
    assert p50 == pytest.approx(11.0) and 192 <= p99 <= 200
    assert F.soj_mean_us(counts) == pytest.approx((10.5 + 196) / 2)
    assert F.soj_percentiles_us([0] * F.SOJ_BUCKETS) == [None, None, None]


@pytest.mark.parametrize("text,msg", [
    ("duration_s = 5\n[link]\nrate_mbit=1\n[[flows]]\ncount=1\nbogus=1", "unknown keys"),
    ("duration_s = 5\n[link]\nrtt_ms=1\n[[flows]]\ncount=1", "rate_mbit"),
    ("duration_s = 5\n[link]\nrate_mbit=1", "flows"),
    ("duration_s = -1\n[link]\nrate_mbit=1\n[[flows]]\ncount=1", "duration_s"),
])
def test_scenario_errors(text, msg):
    with pytest.raises(S.ScenarioError, match=msg):
        S.loads(text)


def test_shipped_scenarios_parse():
    d = Path(__file__).resolve().parents[1] / "scenarios"
    files = sorted(d.glob("*.toml"))
    assert len(files) >= 12
    for f in files:
        sc = S.load(f)
        for _, p in S.points(sc):
            S.path_kwargs(p, S.expand_flows(p, "cubic"))
    print("parsed", [f.name for f in files])


def test_scorecard_goals_from_summaries(tmp_path):
    """labkit.scorecard reads results/<scenario>/summary.json of the
    bbr3_profiles set: absolute goals, goals relative to another CC of the
    same run (kernel bbr's retransmits), and a missing scenario reported as
    missing, never as met."""
    from labkit import scorecard

    def write(scen, runs):
        (tmp_path / scen).mkdir()
        (tmp_path / scen / "summary.json").write_text(json.dumps({"runs": runs}))

    def run(cc, **kw):
        r = {"cc": cc, "sweep_value": None, "flows": [{"min_rtt_ms": 40.0}]}
        r.update(kw)
        return r
    write("two_flows_2bdp", [run("bbr3:v3", jain_windows={"mean": 0.83, "min": 0.7}),
                             run("bbr3:v3plus", jain_windows={"mean": 0.97, "min": 0.9}),
                             run("bbr", jain_windows={"mean": 0.99, "min": 0.95})])
    write("shallow_buffer", [run("bbr3:v3", retransmit_rate=0.004),
                             run("bbr3:v3plus", retransmit_rate=0.02),
                             run("bbr", retransmit_rate=0.05)])
    rows, ccs = scorecard.evaluate(tmp_path)
    by = {r["goal"]: r for r in rows}
    text = scorecard.render(rows, ccs)
    print(text)
    assert ccs[:3] == ["bbr3:v3", "bbr3:v3plus", "bbr"]
    two = by["2 flows 2 BDP: Jain mean >= 0.95"]
    assert two["met"] == {"bbr3:v3": False, "bbr3:v3plus": True}
    shallow = by["0.5 BDP: retransmits <= 0.30 x bbr's"]
    assert shallow["met"] == {"bbr3:v3": True, "bbr3:v3plus": False}   # 0.02 > 0.3 x 0.05
    lost = by["1 % loss: utilisation >= 0.90"]
    assert lost["missing"] and not lost["met"]
    assert "no results (random_loss)" in text


def test_retransmits_per_second():
    """Counters at the end of each second, less those of the second before,
    summed over flows; a second without a sample of a flow adds nothing for
    it; the report lists the first seconds and the rest."""
    rows = [{"t_s": 0.1, "flow": 0, "total_retrans": 5, "data_segs_out": 50},
            {"t_s": 0.9, "flow": 0, "total_retrans": 8, "data_segs_out": 100},
            {"t_s": 0.9, "flow": 1, "total_retrans": 2, "data_segs_out": 100},
            {"t_s": 1.5, "flow": 0, "total_retrans": 8, "data_segs_out": 300},
            {"t_s": 2.5, "flow": 1, "total_retrans": 3, "data_segs_out": 400},
            {"t_s": 4.2, "flow": 0, "total_retrans": 9, "data_segs_out": 500}]
    per = M.retransmits_per_second(rows, 5.0)
    assert [(p["retransmits"], p["segments"]) for p in per] == \
        [(10, 200), (0, 200), (1, 300), (0, 0), (1, 200)]
    table = report.retx_rows([{"cc": "bbr_swift", "point": "", "retransmits_per_s": per},
                              {"cc": "cubic", "point": "", "retransmits_per_s":
                               [{"t_s": 0, "retransmits": 0, "segments": 9}]}])
    assert table[1] == ("-", "bbr_swift", "10 (5.00 %)", "0 (0.00 %)", "1 (0.33 %)",
                        "1 (0.50 %)")
    assert len(table) == 2          # a run without retransmits is left out


def test_kernel_path_validity_from_shaper_drops():
    """A kernel-path run is invalid when the tbf dropped more than the
    marker's virtual queue of the same size (beyond 0.1 % of the packets)."""
    from labkit import runner as R

    def stats(tbf, virtual, pkts=100_000):
        return {"qdisc": {"drops": tbf}, "marker": {"vq_full": virtual, "pkts": pkts}}
    assert R.validity(stats(0, 0), "kernel")["valid"]
    assert R.validity(stats(120, 30), "kernel")["valid"]          # 90 extra: 0.09 %
    bad = R.validity(stats(15387, 125), "kernel")
    print(bad)
    assert not bad["valid"] and "15387" in bad["why"]
