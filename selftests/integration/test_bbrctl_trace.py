# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""`bbrctl trace`: the ring-buffer events of a live bbr3 transfer.

A bulk transfer (bbrtest.Transfer) runs through the lab emulator (linkem:
RATE_MBIT, RTT_MS, BUFFER_BDP) between namespaces this test creates (prefix
"ctt"), under bbr3 loaded by bbrctl as B3 (`load --name`: an operator's
bbr3 may stay loaded meanwhile), while `bbrctl trace B3` streams. Checked on the events of the
sender socket (matched by its SO_COOKIE):
  - the model goes STARTUP -> DRAIN -> PROBE_BW, in that order;
  - in PROBE_BW, bw_bps is the path's payload rate, min_rtt_us the path's
    RTT, cwnd_pkts about cwnd_gain x BDP (figures with tolerances below);
  - one "round" event per round trip: the median gap between round starts
    is the socket's smoothed RTT;
  - the command exits 0 on SIGINT, SIGTERM and --duration and leaves the
    enable flag cleared; --per-ack gives one event per ACK (many per round);
  - error paths: unknown CC, a second reader, a reader killed with SIGKILL
    (the next one takes its flag over).
"""

import csv
import io
import json
import re
import signal
import statistics
import subprocess
import time

import pytest

import bbrtest
from bbrtest.ctl import PIN_ROOT, bbrctl
from bbrtest.ctl import argv as ctl_argv
from conftest import PINS, make_target
from labkit.path import EmulatedPath

RATE_MBIT = 50
RTT_MS = 40
BUFFER_BDP = 2
TRANSFER_S = 5                  # STARTUP+DRAIN take ~1 s, then PROBE_BW
PER_ACK_TRANSFER_S = 2
STAT_TRANSFER_S = 4
STAT_AT_S = 2.5                 # well into PROBE_BW (STARTUP+DRAIN ~0.5 s)
PORT = 5461
MSS_BYTES = 1448                # 1500 MTU - 20 IP - 32 TCP with timestamps
# linkem serialises IP packets at RATE_MBIT: the payload rate is less.
PAYLOAD_MBIT = RATE_MBIT * MSS_BYTES / 1500
BDP_PKTS = PAYLOAD_MBIT * 1e6 * RTT_MS / 1e3 / 8 / MSS_BYTES
# Tolerances. bw: the max filter over a cycle may sit a little above the
# average (ACK compression) and the path may be a little slower than set.
BW_LO, BW_HI = 0.80, 1.15
# cwnd = cwnd_gain (2) x BDP + ACK-aggregation headroom, bounded by
# inflight_hi after a loss: anything from 1.2 to 3.5 BDP is BBR, cubic or a
# broken model (cwnd stuck at the initial 10 or growing without bound) is not.
CWND_LO_BDP, CWND_HI_BDP = 1.2, 3.5
MIN_RTT_SLACK = 1.15            # linkem adds well under a ms; scheduling noise
ROUND_LO, ROUND_HI = 0.6, 1.6   # median round gap / median srtt
PER_ACK_MIN_PER_ROUND = 5       # delayed ACKs: ~cwnd/2 ACKs per round
NS_PREFIX = "ctt"               # this test's namespace prefix
TRACE_START_S = 5.0
TRACE_STOP_S = 10.0
SIGNALS_WHILE_BLOCKED = 4
CONTRACT_FIELDS = ["t_ns", "cookie", "cc", "ev", "mode", "phase", "bw_bps", "pacing_bps",
                   "cwnd_pkts", "inflight_pkts", "min_rtt_us", "rtt_us", "inflight_lo_pkts",
                   "inflight_hi_pkts", "bw_lo_bps", "bw_hi_bps", "loss_ppm", "ce_ppm",
                   "network_rtt_us", "swift_factor_ppm"]
B3 = bbrtest.own_cc_name("b3t")         # bbr3 and bbr_swift as loaded here
BS = bbrtest.own_cc_name("bst")

@pytest.fixture(scope="module", autouse=True)
def built():
    make_target("loader/bbrctl", "bpf/bbr3.bpf.o", "selftests/lab/linkem/linkem")


@pytest.fixture(scope="module")
def bbr3_loaded():
    bbrctl("load", "--name", B3, "bbr3", check=0)
    try:
        yield
    finally:
        bbrctl("unload", B3, check=0)


def trace_ctl(name=B3):
    """The control word of NAME's trace ring, as bpftool prints it."""
    cp = subprocess.run(["bpftool", "-j", "map", "dump", "pinned",
                         str(PIN_ROOT / name / PINS["PIN_TRACE_CTL"])],
                        capture_output=True, text=True, timeout=10, check=True)
    return json.loads(cp.stdout)[0]["formatted"]["value"]


def start_trace(*args):
    """`bbrctl trace ARGS` in the background, once it has set its flag."""
    proc = subprocess.Popen(ctl_argv("trace", *args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + TRACE_START_S
    try:
        while trace_ctl()["owner_pid"] != proc.pid:
            assert proc.poll() is None, f"bbrctl trace exited early: {proc.communicate()}"
            assert time.monotonic() < deadline, "bbrctl trace did not set its flag"
            time.sleep(0.02)
    except BaseException:
        proc.kill()         # never leave a reader (and its map references) behind
        proc.communicate()
        raise
    return proc


def stop_trace(proc, sig=signal.SIGINT):
    if sig is not None:
        proc.send_signal(sig)
    try:
        out, errs = proc.communicate(timeout=TRACE_STOP_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return proc.returncode, out, errs


def transfer(seconds, cc=B3, during=None, during_at_s=None):
    """One flow of CC cc through the emulator; returns its SO_COOKIE, or with
    during, (cookie, during(path, cookie)) called during_at_s into the flow."""
    with EmulatedPath(rate_mbit=RATE_MBIT, rtt_ms=RTT_MS, buffer_bdp=BUFFER_BDP,
                      backend="linkem", log=False, prefix=NS_PREFIX) as p, \
            bbrtest.Transfer(p, cc, seconds=seconds, port=PORT) as t:
        cookie = t.connected()["cookie"]
        seen = None
        if during:
            time.sleep(during_at_s)
            seen = during(p, cookie)
        res = t.result()
    assert res["bytes_received"] == res["bytes_sent"] > 0
    return (cookie, seen) if during else cookie


def first_index(seq, value):
    return seq.index(value) if value in seq else None


def test_round_events_follow_the_model(bbr3_loaded):
    trace = start_trace(B3)
    try:
        cookie = transfer(TRANSFER_S)
    finally:
        rc, out, errs = stop_trace(trace)
    assert rc == 0, errs
    events = [json.loads(line) for line in out.splitlines()]
    assert events, f"no events; stderr: {errs}"
    assert list(events[0])[:len(CONTRACT_FIELDS)] == CONTRACT_FIELDS
    mine = [e for e in events if e["cookie"] == cookie]
    print(f"{len(events)} events, {len(mine)} for cookie {cookie}; stderr: {errs.strip()}")
    assert len(mine) >= 20, f"too few events for the socket: {len(mine)}"
    assert all(e["cc"] == B3 and e["ev"] in ("round", "mode") for e in mine)

    modes = [e["mode"] for e in mine]
    idx = [first_index(modes, m) for m in ("STARTUP", "DRAIN", "PROBE_BW")]
    print(f"first STARTUP/DRAIN/PROBE_BW at event {idx}")
    assert None not in idx and idx[0] < idx[1] < idx[2], f"mode sequence: {modes[:40]}"
    for e in mine:
        assert (e["phase"] != "") == (e["mode"] == "PROBE_BW"), e

    pbw = [e for e in mine if e["mode"] == "PROBE_BW" and e["ev"] == "round"]
    assert len(pbw) >= 10, f"only {len(pbw)} PROBE_BW rounds"
    bw = statistics.median(e["bw_bps"] for e in pbw) / 1e6
    min_rtt = statistics.median(e["min_rtt_us"] for e in pbw)
    cwnd = statistics.median(e["cwnd_pkts"] for e in pbw)
    pacing = statistics.median(e["pacing_bps"] for e in pbw) / 1e6
    print(f"PROBE_BW: bw {bw:.1f} Mbit/s (path payload {PAYLOAD_MBIT:.1f}), pacing "
          f"{pacing:.1f} Mbit/s, min_rtt {min_rtt} us (path {RTT_MS * 1000}), cwnd {cwnd} "
          f"pkts (BDP {BDP_PKTS:.0f})")
    assert BW_LO * PAYLOAD_MBIT <= bw <= BW_HI * PAYLOAD_MBIT
    assert RTT_MS * 1000 <= min_rtt <= RTT_MS * 1000 * MIN_RTT_SLACK
    assert CWND_LO_BDP * BDP_PKTS <= cwnd <= CWND_HI_BDP * BDP_PKTS
    assert 0.5 * bw <= pacing <= 1.5 * bw

    starts = [e for e in mine if e["round_start"]]
    gaps = [(b["t_ns"] - a["t_ns"]) / 1e3 for a, b in zip(starts, starts[1:])
            if b["round"] == a["round"] + 1]
    srtt = statistics.median(e["srtt_us"] for e in starts)
    ratio = statistics.median(gaps) / srtt
    print(f"{len(starts)} round starts in {TRANSFER_S} s; median gap "
          f"{statistics.median(gaps):.0f} us, median srtt {srtt:.0f} us, ratio {ratio:.2f}")
    assert ROUND_LO <= ratio <= ROUND_HI
    assert all(0 <= e["loss_ppm"] <= 1_000_000 and e["ce_ppm"] == 0 for e in mine)
    ctl = trace_ctl()
    assert ctl["flags"] == 0 and ctl["owner_pid"] == 0, ctl


def test_per_ack_csv_with_duration(bbr3_loaded):
    trace = start_trace(B3, "--per-ack", "--csv", "--duration", str(PER_ACK_TRANSFER_S + 2))
    try:
        cookie = transfer(PER_ACK_TRANSFER_S)
    finally:
        rc, out, errs = stop_trace(trace, sig=None)
    assert rc == 0, errs
    rows = list(csv.DictReader(io.StringIO(out)))
    header = out.splitlines()[0].split(",")
    assert header[:len(CONTRACT_FIELDS)] == CONTRACT_FIELDS
    mine = [r for r in rows if int(r["cookie"]) == cookie]
    rounds = sum(r["round_start"] == "1" for r in mine)
    print(f"--per-ack: {len(mine)} events, {rounds} round starts for cookie {cookie}")
    assert mine and all(r["ev"] == "ack" for r in mine)
    assert rounds >= 5 and len(mine) >= PER_ACK_MIN_PER_ROUND * rounds
    ctl = trace_ctl()
    assert ctl["flags"] == 0 and ctl["owner_pid"] == 0, ctl


def wchan(pid):
    try:
        return open(f"/proc/{pid}/wchan").read().strip()
    except OSError:
        return ""


def test_signal_while_stdout_is_full_loses_nothing(bbr3_loaded):
    """A reader that drains bbrctl's stdout only after signalling it (as
    `timeout` or subprocess.communicate do): the signal lands while bbrctl
    is blocked writing to the full pipe (SIGNALS_WHILE_BLOCKED of them, as
    impatient Ctrl-Cs). It must finish the write, drain the ring and exit 0
    with every counted event printed (CI once saw EINTR there: "writing the
    events failed: Interrupted system call")."""
    trace = start_trace(B3, "--per-ack")
    try:
        transfer(PER_ACK_TRANSFER_S)
        deadline = time.monotonic() + TRACE_START_S
        while "pipe_write" not in wchan(trace.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        blocked = wchan(trace.pid)
        # A write the signal interrupts after it had written part of its
        # buffer returns that part, and the next write blocks again with
        # nothing written: signals then, or a second Ctrl-C, catch it there.
        for _ in range(SIGNALS_WHILE_BLOCKED - 1):
            trace.send_signal(signal.SIGINT)
            time.sleep(0.05)
    finally:
        rc, out, errs = stop_trace(trace)
    lines = out.count("\n")
    counted = re.search(r"trace: (\d+) events", errs)
    print(f"blocked in {blocked!r} at the signal; {lines} lines printed; stderr: {errs.strip()}")
    assert "pipe_write" in blocked, "the per-ACK events did not fill the pipe: the test checks nothing"
    assert rc == 0, errs
    assert counted and int(counted.group(1)) == lines and lines > 1000


def test_errors_second_reader_and_takeover(bbr3_loaded, tmp_path):
    cp = bbrctl("trace", "nosuch", check=1)
    assert "nosuch is not loaded" in cp.stderr
    bbrctl("trace", "--duration", "0", check=2)

    first = start_trace(B3, "--output", str(tmp_path / "t.jsonl"))
    try:
        cp = bbrctl("trace", B3, "--duration", "1", check=1)
        assert f"already being traced by pid {first.pid}" in cp.stderr
        assert cp.stdout == ""
    finally:
        rc, _, errs = stop_trace(first, sig=signal.SIGTERM)
    assert rc == 0, errs

    killed = start_trace(B3)
    killed.kill()
    killed.communicate()
    assert trace_ctl()["flags"] != 0, "the flag of a SIGKILLed reader stays set"
    bbrctl("trace", B3, "--duration", "0.3", check=0)
    ctl = trace_ctl()
    assert ctl["flags"] == 0 and ctl["owner_pid"] == 0, ctl


def stat_snapshot(cc):
    """`bbrctl --json stat CC` and `bbrctl top --count 1 CC` in one go."""
    def snap(path, cookie):
        recs = json.loads(bbrctl("--json", "stat", cc, check=0).stdout)
        top = bbrctl("top", "--count", "1", cc, check=0).stdout
        return path.snd_addr[0], path.rcv_addr, [r for r in recs if r["cookie"] == cookie], top
    return snap


def test_stat_columns_of_a_live_bbr3_flow(bbr3_loaded):
    cookie, (saddr, daddr, recs, top) = transfer(STAT_TRANSFER_S, during=stat_snapshot(B3),
                                                 during_at_s=STAT_AT_S)
    assert len(recs) == 1, f"no stat record for cookie {cookie}"
    r = recs[0]
    print(top)
    print({k: r[k] for k in ("mode_name", "bw_bps", "srtt_us", "kernel_min_rtt_us", "rttvar_us",
                             "total_retrans", "bytes_acked", "loss_ppm", "ce_ppm", "ca_state")})
    assert (r["saddr"], r["daddr"], r["dport"]) == (saddr, daddr, PORT)
    assert r["cc"] == B3 and "swift" not in r
    assert r["mode_name"] == "PROBE_BW"
    assert BW_LO * PAYLOAD_MBIT <= r["bw_bps"] / 1e6 <= BW_HI * PAYLOAD_MBIT
    assert RTT_MS * 1000 <= r["kernel_min_rtt_us"] <= RTT_MS * 1000 * MIN_RTT_SLACK
    assert r["srtt_us"] >= RTT_MS * 1000 and r["rttvar_us"] > 0
    # bytes_acked is what arrived in STAT_AT_S at no more than the path's rate.
    acked_mbit = r["bytes_acked"] * 8 / 1e6
    assert 0.5 * PAYLOAD_MBIT * (STAT_AT_S - 1) <= acked_mbit <= PAYLOAD_MBIT * STAT_AT_S
    assert r["loss_ppm"] == (r["lost"] * 1_000_000 // (r["delivered"] + r["lost"]))
    assert r["ce_ppm"] == 0 and r["ca_state"] in range(5)
    assert r["total_retrans"] >= 0 and r["bytes_retrans"] <= r["bytes_acked"]
    header = top.splitlines()[2].split()
    for col in ("LOSS%", "CE%", "RETRANS", "NET_RTT", "SWIFT", "MIN_RTT", "INFL_LO"):
        assert col in header, header
    row = next(line.split() for line in top.splitlines() if f" {cookie} " in f" {line} ")
    assert row[header.index("SWIFT")] == "-" and row[header.index("NET_RTT")] == "-"


def test_stat_decodes_the_swift_record():
    bbrctl("load", "--name", BS, "bbr_swift", check=0)
    try:
        cookie, (_, _, recs, top) = transfer(STAT_TRANSFER_S, cc=BS,
                                             during=stat_snapshot(BS),
                                             during_at_s=STAT_AT_S)
    finally:
        bbrctl("unload", BS, check=0)
    assert len(recs) == 1, f"no stat record for cookie {cookie}"
    print(top)
    sw = recs[0]["swift"]
    print(sw)
    # No target configured, no ETS: plain BBRv3, and the record says so.
    assert sw["status"] == "no_target" and sw["fallback"] is True
    assert sw["target_rtt_us"] == 0 and sw["network_rtt_us"] == 0 and sw["decreases"] == 0
    assert recs[0]["mode_name"] in ("DRAIN", "PROBE_BW")
    header = top.splitlines()[2].split()
    row = next(line.split() for line in top.splitlines() if f" {cookie} " in f" {line} ")
    assert row[header.index("SWIFT")] == "no_target"
