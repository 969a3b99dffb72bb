# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Scenario keys [cc_params.NAME], ets, request/response flows; the run's
cgroup (labkit/ccctl.py) is removed whatever happens; trace parsing."""

import contextlib
import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from labkit import ccctl, report, runner
from labkit import scenario as S
from labkit.path import LabError
import bbrtest

BASE = """
duration_s = 10
[link]
rate_mbit = 50
rtt_ms = 1
"""

SCEN = "ets = true\n" + BASE + """
[cc_params.bbr_swift]
target_rtt_us = 100
ecn_enable = 1
[cc_params.bbr3]
ecn_enable = 1
[[flows]]
count = 2
[[flows]]
kind = "rr"
req_bytes = 200
resp_bytes = 3000
requests = 50
[sweep]
param = "cc_params.bbr_swift.target_rtt_us"
values = [50, 200]
"""


def test_scenario_cc_params_ets_rr():
    sc = S.loads(SCEN)
    assert sc["ets"] is True
    pts = S.points(sc)
    assert [p["cc_params"]["bbr_swift"]["target_rtt_us"] for _, p in pts] == [50, 200]
    assert all(p["cc_params"]["bbr3"] == {"ecn_enable": 1} for _, p in pts)
    flows = S.expand_flows(pts[0][1], "bbr_swift")
    assert [f["kind"] for f in flows] == ["bulk", "bulk", "rr"]
    assert flows[2]["req_bytes"] == 200 and flows[2]["resp_bytes"] == 3000
    assert flows[2]["requests"] == 50 and "req_bytes" not in flows[0]
    print("points", [p["cc_params"] for _, p in pts], "flows", flows)


def test_param_keys_from_headers():
    k3, ks = ccctl.param_keys("bbr3"), ccctl.param_keys("bbr_swift")
    print("bbr3 keys", sorted(k3), "swift extra", sorted(ks - k3))
    assert {"ecn_enable", "beta", "cwnd_gain", "probe_rtt_mode_ms"} <= k3
    assert {"target_rtt_us", "stale_us", "keep_ecn"} <= ks and "target_rtt_us" not in k3
    assert not any(k.startswith("_") for k in ks)


def test_variants_and_profiles():
    """"bbr3:v3plus" names bbr3 run with a profile; the profile names come
    from BBR_PROFILE_NAMES, and a scenario may set one as a key."""
    assert ccctl.profiles()[:2] == ("v3", "v3plus")
    assert ccctl.split_variant("bbr3:v3plus") == ("bbr3", "v3plus")
    assert ccctl.split_variant("cubic") == ("cubic", None)
    for bad, msg in (("cubic:v3", "only"), ("bbr3:fast", "no profile 'fast'")):
        with pytest.raises(LabError, match=msg):
            ccctl.split_variant(bad)
    sc = S.loads('ccs = ["bbr3:v3", "bbr3:v3plus", "bbr"]\n' + BASE +
                 "[cc_params.bbr3]\nprofile = \"v3plus\"\n[[flows]]\ncount = 1\n")
    assert sc["ccs"] == ["bbr3:v3", "bbr3:v3plus", "bbr"]
    for text, msg in (('ccs = ["bbr3:nope"]\n', "no profile"),
                      ('[cc_params.bbr3]\nprofile = "v9"\n', "profile: one of")):
        top = text.startswith("ccs")
        with pytest.raises(S.ScenarioError, match=msg):
            S.loads((text + BASE if top else BASE + text) + "[[flows]]\ncount = 1\n")


def test_l4s_variant_negotiates_accecn_and_the_receiver_follows():
    """bbr3:l4s runs the object bbr3_l4s, which negotiates AccECN; the
    receivers' listeners run the CC under test where ECN is in play (the
    link marks or the variant negotiates it), else the namespace's default."""
    assert "l4s" in ccctl.profiles()
    assert ccctl.variant_ecn("bbr3:l4s") == "accecn"
    assert ccctl.variant_object("bbr3:l4s") == "bbr3_l4s"
    assert ccctl.variant_object("bbr3:v3plus") == "bbr3" == ccctl.variant_object("bbr3")
    assert ccctl.variant_ecn("bbr3:v3plus") is None and ccctl.variant_ecn("cubic") is None
    marking = {"link": {"ecn": {"mode": "sojourn", "k_us": 2000}}}
    plain = {"link": {}}
    assert runner.receiver_cc(plain, "bbr3", "bbr3:l4s") == "bbr3"
    assert runner.receiver_cc(marking, "dctcp_bpf", "dctcp_bpf") == "dctcp_bpf"
    assert runner.receiver_cc(plain, "cubic", "cubic") is None
    with pytest.raises(ValueError, match="as_name"):
        bbrtest.register_cc("x.bpf.o", "bbr3", loader="bbrctl", ecn="accecn")


@pytest.mark.parametrize("extra,msg", [
    ("[cc_params.cubic]\nbeta = 1\n", "unknown congestion control 'cubic'"),
    ("[cc_params.bbr_fast]\nbeta = 1\n", "unknown congestion control 'bbr_fast'"),
    ("[cc_params.bbr3]\nbogus_gain = 1\n", "unknown key 'bogus_gain'"),
    ("[cc_params.bbr3]\ntarget_rtt_us = 100\n", "unknown key 'target_rtt_us'"),
    ("[cc_params.bbr3]\nbeta = -1\n", "non-negative integer"),
    ("[cc_params.bbr3]\nbeta = 0.5\n", "non-negative integer"),
    ("cc_params = 3\n", "table of tables"),
    ("ets = 1\n", "ets must be true or false"),
])
def test_scenario_param_errors(extra, msg):
    top = extra.startswith(("ets", "cc_params ="))
    text = (extra + BASE if top else BASE + extra) + "[[flows]]\ncount = 1\n"
    with pytest.raises(S.ScenarioError, match=msg) as e:
        S.loads(text)
    print("error:", e.value)


@pytest.mark.parametrize("flows,msg", [
    ('[[flows]]\ncc = "cubic"\n', "fixed cc"),
    ('[[flows]]\nkind = "bulk"\nreq_bytes = 5\n', "only apply to kind"),
    ('[[flows]]\nkind = "udp"\n', "kind must be one of"),
    ('[[flows]]\nkind = "rr"\nrequests = 0\n', "positive integer"),
])
def test_scenario_flow_errors(flows, msg):
    with pytest.raises(S.ScenarioError, match=msg) as e:
        S.loads("ets = true\n" + BASE + flows)
    print("error:", e.value)


def _need_root():
    if os.geteuid() != 0:
        pytest.fail("needs root (cgroup v2 directories)")


def test_cgroup_holds_wrapped_process_and_is_removed_on_failure():
    _need_root()
    proc = None
    with pytest.raises(RuntimeError, match="body failed"):
        with ccctl.RunCgroup() as cg:
            path = cg.path
            assert path.is_dir() and path.parent == ccctl.cgroup2_root()
            proc = subprocess.Popen(cg.wrap(["sleep", "30"]))
            deadline = time.monotonic() + 5
            while proc.pid not in cg.pids() and time.monotonic() < deadline:
                time.sleep(0.02)
            print("cgroup", path, "pids", cg.pids(), "sleep pid", proc.pid)
            assert proc.pid in cg.pids()       # sh exec'd sleep: same pid, in the cgroup
            raise RuntimeError("body failed")
    try:
        assert not path.exists(), f"{path} left behind"
        assert proc.poll() is None             # moved out, not killed
    finally:
        proc.kill()
        proc.wait()


def test_run_config_removes_cgroup_when_bbrctl_fails(monkeypatch):
    """A failing `bbrctl set/attach` leaves no cgroup and undoes earlier steps."""
    _need_root()
    made, undone = [], []

    class FailingParams:
        def __init__(self, cc, kv, cg):
            made.append(cg.path)
            self.method = "fake"

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            undone.append("params")
            return False

    class FailingEts:
        def __init__(self, cc, cg):
            pass

        def __enter__(self):
            raise LabError("bbrctl attach failed (injected)")

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(ccctl, "CcParams", FailingParams)
    monkeypatch.setattr(ccctl, "EtsAttach", FailingEts)
    monkeypatch.setattr(runner, "kernel_lock", contextlib.nullcontext)
    sc = S.loads("ets = true\n" + BASE + "[cc_params.bbr3]\nbeta = 1\n[[flows]]\ncount = 1\n")
    flows = S.expand_flows(sc, "bbr3")
    with pytest.raises(LabError, match="injected"):
        with runner.run_config(sc, "bbr3", flows):
            pass
    print("cgroup", made, "undone", undone)
    assert made and not made[0].exists(), f"{made} left behind"
    assert undone == ["params"]
    # nothing asked for: no cgroup at all
    sc2 = S.loads(BASE + "[[flows]]\ncount = 1\n")
    with runner.run_config(sc2, "cubic", S.expand_flows(sc2, "cubic")) as (cg, info):
        assert cg is None and info == {}


def test_trace_lines_to_state_rows(tmp_path):
    f = tmp_path / "trace.jsonl"
    ev = {"t_ns": 12_500_000_000, "cookie": 77, "cc": "bbr3", "ev": "round", "mode": "PROBE_BW",
          "phase": "CRUISE", "bw_bps": 48_000_000, "pacing_bps": 47_000_000, "cwnd_pkts": 90,
          "inflight_pkts": 80, "min_rtt_us": 40_100, "rtt_us": 41_000, "inflight_lo_pkts": 0,
          "inflight_hi_pkts": 120, "bw_lo_bps": 0, "bw_hi_bps": 0, "loss_ppm": 0, "ce_ppm": 0,
          "network_rtt_us": 40_500, "swift_factor_ppm": 0}
    f.write_text(json.dumps(ev) + "\n" + json.dumps(dict(ev, mode="STARTUP", t_ns=10**10))
                 + '\n{"t_ns": 13')                       # a line cut at SIGINT
    rows = runner.read_trace(f, 10.0)
    print(rows)
    assert len(rows) == 2
    assert rows[0]["t_s"] == pytest.approx(2.5) and rows[0]["mode"] == 2
    assert rows[0]["cwnd"] == 90 and rows[0]["network_rtt_us"] == 40_500
    assert rows[1]["mode"] == 0 and rows[1]["t_s"] == pytest.approx(0.0)


def test_ets_and_rr_summaries():
    flows = [{"id": 0, "sender": 0, "kind": "bulk"}, {"id": 1, "sender": 1, "kind": "bulk"},
             {"id": 2, "sender": 1, "kind": "rr"}]
    samples = [{"t_s": t, "flow": f, "cookie": 100 + f, "rtt_us": 1000 * (f + 1)}
               for t in (0.5, 2, 3) for f in (0, 1)]
    state = [{"t_s": 2.0, "cookie": 100, "network_rtt_us": 300, "decided_rtt_us": 280},
             {"t_s": 3.0, "cookie": 100, "network_rtt_us": 500, "decided_rtt_us": 320},
             {"t_s": 3.5, "cookie": 100, "network_rtt_us": 1300},   # bbr3: no decision
             {"t_s": 0.5, "cookie": 101, "network_rtt_us": 9999},   # before warm-up
             {"t_s": 3.0, "cookie": 101, "network_rtt_us": 0}]      # no ETS sample
    e = runner.ets_summary(flows, samples, state, 1.0, {"attached": True})
    print(e)
    assert e["per_sender"][0] == {"sender": 0, "total_rtt_us_mean": 1000.0,
                                  "network_rtt_us_mean": 700.0, "network_rtt_us_p50": 500.0,
                                  "decided_rtt_us_p50": 300.0, "network_rtt_samples": 3}
    assert e["per_sender"][1]["total_rtt_us_mean"] == 2000.0
    assert e["per_sender"][1]["network_rtt_us_mean"] is None
    sums = {2: {"rr_done": 40, "rr_latency_us": {"p50": 2500, "p99": 9000, "max": 9500}}}
    rr = runner.rr_summary(flows, sums)
    print(rr)
    assert rr["requests_done"] == 40 and rr["completion_ms_p50"] == 2.5
    assert rr["completion_ms_p99"] == 9.0 and rr["errors"] == 0
    assert runner.rr_summary(flows[:2], sums) is None


def test_state_recorder_prefers_trace_and_falls_back_to_stat(monkeypatch, tmp_path):
    """bbrctl trace when it starts; stat polling when bbrctl has no trace or
    the trace fails to start; the source is recorded either way."""
    class FakePoller:
        def __init__(self, cc, t0):
            import threading
            self.stop, self.rows, self.error = threading.Event(), [{"t_s": 1.0}], None

        def start(self):
            pass

        def join(self):
            pass

    class FakeTracer:
        ok = True

        def __init__(self, cc, t0, outdir):
            self.rows, self.error, self.t0 = [{"t_s": 2.0}], None, t0

        def start(self):
            if not FakeTracer.ok:
                self.error = "bbrctl trace exited (1): no trace ring"
            return FakeTracer.ok

        def stop(self):
            pass

    monkeypatch.setattr(runner, "StatePoller", FakePoller)
    monkeypatch.setattr(runner, "TraceRecorder", FakeTracer)
    monkeypatch.setattr(runner, "state_available", lambda cc: cc == "bbr3")
    seen = {}
    for trace, ok in ((True, True), (True, False), (False, True)):
        monkeypatch.setattr(runner, "trace_available", lambda t=trace: t)
        FakeTracer.ok = ok
        with runner.state_recorder("bbr3", 0.0, tmp_path) as rec:
            pass
        seen[(trace, ok)] = (rec["source"], rec["rows"], rec["error"])
    with runner.state_recorder("cubic", 0.0, tmp_path) as rec:
        pass
    print(seen, rec)
    assert seen[(True, True)] == ("bbrctl trace", [{"t_s": 2.0}], None)
    assert seen[(True, False)][0].startswith("bbrctl stat") and "no trace ring" in seen[(True, False)][2]
    assert seen[(False, True)][0].startswith("bbrctl stat") and seen[(False, True)][1] == [{"t_s": 1.0}]
    assert rec["source"].startswith("none") and rec["rows"] == []


FAKE_BBRCTL = """#!/bin/sh
# logs its arguments; set, attach and detach succeed
echo "$@" >> "$0.log"
case "$1 $2" in
  "help attach") echo "Usage: bbrctl attach --cgroup PATH --cc NAME"; exit 0;;
  "set --cgroup") exit 0;;
  "attach --cgroup") echo "bbrctl: attached: ... use bbr3; pinned at ..." >&2; exit 0;;
  "detach --cgroup") exit 0;;
esac
exit 1
"""


def test_params_profile_first_and_reset_after_failure(monkeypatch, tmp_path):
    """`bbrctl set --cgroup` with the profile before the scenario's keys (so
    they override it), `--reset` after the run also when it fails, and
    attach/detach pair up."""
    fake = tmp_path / "bbrctl"
    fake.write_text(FAKE_BBRCTL)
    fake.chmod(0o755)
    monkeypatch.setattr(bbrtest.ctl, "BBRCTL", fake)

    class Cg:
        path = Path("/sys/fs/cgroup/unified/lab-test")

    cg = str(Cg.path)
    with pytest.raises(RuntimeError):
        with ccctl.CcParams("bbr3", {"beta": 128, "profile": "v3plus"}, Cg()) as cp, \
                ccctl.EtsAttach("bbr3", Cg()) as ea:
            assert cp.method == "bbrctl set --cgroup"
            assert ea.ets is False
            raise RuntimeError("run failed")
    log = (tmp_path / "bbrctl.log").read_text().splitlines()
    print("\n".join(log))
    assert f"set --cgroup {cg} bbr3 profile=v3plus beta=128" in log
    assert log[-1] == f"set --cgroup {cg} bbr3 --reset"            # reset last
    assert f"detach --cgroup {cg}" in log
    assert log.index(f"detach --cgroup {cg}") < len(log) - 1


def test_sender_summary_and_table():
    """The per-sender table of swift_dc (the BBR.Swift talk reports per sender machine):
    goodput and Jain over each sender's bulk flows after warm-up, retransmits
    of all its flows over the run and after warm-up, joined with the ETS RTT
    means."""
    flows = [{"id": 0, "sender": 0, "kind": "bulk"}, {"id": 1, "sender": 0, "kind": "bulk"},
             {"id": 2, "sender": 1, "kind": "bulk"}, {"id": 3, "sender": 1, "kind": "rr"}]
    n = int(4 / runner.M.BIN_S)
    i0 = int(1 / runner.M.BIN_S)
    bins = {0: np.full(n, 30.0), 1: np.full(n, 10.0), 2: np.full(n, 50.0), 3: np.full(n, 1.0)}
    bins[0][:i0] = 1000.0                       # warm-up: left out
    last = {0: {"data_segs_out": 1000, "total_retrans": 10},
            1: {"data_segs_out": 1000, "total_retrans": 30},
            2: {"data_segs_out": 500, "total_retrans": 0},
            3: {"data_segs_out": 500, "total_retrans": 5}}
    first = {0: {"data_segs_out": 500, "total_retrans": 10},     # all of flow 0's before
             1: {"data_segs_out": 200, "total_retrans": 10},
             2: {"data_segs_out": 100, "total_retrans": 0}}      # flow 3: no sample after
    ps = runner.sender_summary(flows, bins, last, first, 1.0)
    print(ps)
    assert ps[0]["goodput_mbit"] == pytest.approx(40.0)
    assert ps[0]["jain"] == pytest.approx(40.0 ** 2 / (2 * (30.0 ** 2 + 10.0 ** 2)))
    assert ps[0]["retransmit_rate"] == pytest.approx(0.02)
    # after warm-up: (0 + 20) retransmits of (500 + 800) segments
    assert ps[0]["retransmit_rate_after_warmup"] == pytest.approx(20 / 1300)
    assert ps[1]["retransmit_rate_after_warmup"] == 0.0
    assert ps[1]["goodput_mbit"] == pytest.approx(50.0)      # the rr flow is not bulk
    assert ps[1]["jain"] == pytest.approx(1.0) and ps[1]["flows"] == 2
    assert ps[1]["retransmit_rate"] == pytest.approx(0.005)
    run = {"cc": "bbr_swift", "point": "", "per_sender": ps,
           "ets": {"attached": True, "per_sender": [
               {"sender": 0, "total_rtt_us_mean": 196.0, "network_rtt_us_mean": 93.0,
                "network_rtt_us_p50": 90.0, "decided_rtt_us_p50": 85.0,
                "network_rtt_samples": 7}]}}
    rows = report.sender_rows([run])
    print(rows)
    assert rows[1] == ("-", "bbr_swift", 0, "40.0", "2.000", "1.538", "0.800", "yes", "196",
                       "93 / 90", "85", 7)
    assert rows[2][:7] == ("-", "bbr_swift", 1, "50.0", "0.500", "0.000", "1.000")
    assert rows[2][8:] == ("-", "- / -", "-", "-")
    assert report.sender_rows([{"cc": "cubic", "per_sender": None}]) is None
