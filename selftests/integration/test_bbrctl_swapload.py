# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Swap under load: 50 bulk flows through the lab emulator while bbrctl
switches their CC cubic -> bbr3, replaces bbr3 in place with a new build,
switches them bbr3 -> cubic, and unloads bbr3 under live sockets.

Checked per flow, on the receiver: no connection reset or error, every byte
received, and the longest gap in received data; on the sender, that `swap`
switched every flow each time.

Two paths, because a stall bound needs a path that does not stall by
itself. On a drop-tail FIFO, 50 cubic flows fill the 4 BDP buffer (srtt
~100 ms instead of 20) and their own loss recovery leaves receive gaps of
~200 ms (2 RTT of the inflated RTT) with no swap at all: a swap stall would
drown in them. So:

* test_swap_under_load: the FIFO marks CE above ECN_K_MS of sojourn time
  (ECN-capable flows, as in the lab's l4s scenarios), the flows keep the
  queue near it and lose nothing; a baseline run without swaps shows no gap
  longer than 2 RTT (checked: otherwise the path, not bbrctl, is at fault),
  and with the swaps no receive gap within SWAP_WINDOW_S of a swap may be
  as long as the shortest RTO (MAX_SWAP_STALL_S, 0.9 x TCP_RTO_MIN).
* test_swap_under_load_with_loss: the drop-tail FIFO, so the flows are in
  loss recovery when they are switched (both ways); then bbr3 is unloaded
  while 50 sockets still run it. No reset, every byte, every socket
  switched, the sockets keep bbr3 after the unload, and once they close the
  kernel frees the struct_ops maps without a warning in dmesg. The gaps are
  printed next to the same path's no-swap figure, not bounded.

bbr3 is loaded as B3 (`bbrctl load --name B3 bbr3`, swapped in place with
`swap --obj bpf/bbr3.bpf.o B3`), so that an operator's bbr3 may stay loaded
and is never touched. "bbr3" in the action names below means B3.
"""

import json
import subprocess
import time

import pytest

import bbrtest
from bbrtest.ctl import bbrctl, struct_ops_maps
from conftest import make_target
from labkit.path import EmulatedPath

FLOWS = 50
RATE_NOMINAL_MBIT = 200
RATE_MBIT = bbrtest.scaled_rate_mbit(RATE_NOMINAL_MBIT)     # or less: bbrtest.rates
RTT_MS = 20
BUFFER_BDP = 4
ECN_K_MS = 5                    # CE above 5 ms of sojourn: a standing queue of ~5 ms
PATH_RTT_MS = RTT_MS + ECN_K_MS
# 100 MB in all at 200 Mbit/s: ~4 s at RATE_MBIT, past the last action
BYTES_PER_FLOW = bbrtest.scaled_bytes(2_000_000, RATE_NOMINAL_MBIT)
PORT = 5401
SWAP_WINDOW_S = 0.3             # a stall "around" a swap: within this of it
MAX_STALL_S = 2 * PATH_RTT_MS / 1000   # the path alone, without swaps
# Around a swap: bbrctl loads and verifies an object on the same 2 CPUs that
# carry the 50 flows and the emulator, tens of ms of CPU the flows lose.
# On a quiet 2-vCPU VM most runs stay under 4 RTT (27-81 ms), but about one
# in five shows 118-144 ms, with this code and with the code before the core
# split alike. What a broken swap causes, a stopped ACK clock, ends only in
# an RTO, and the kernel's RTO is never below TCP_RTO_MIN (200 ms): a bound
# just under that floor catches it and not the machine's noise.
TCP_RTO_MIN_S = 0.200
MAX_SWAP_STALL_S = 0.9 * TCP_RTO_MIN_S
RUN_TIMEOUT_S = 60
GAP_MIN_S = 0.005               # the receiver records gaps longer than this
B3 = bbrtest.own_cc_name("b3w")         # bbr3 as this test loads it
BBR3_OBJ = bbrtest.REPO / "bpf" / "bbr3.bpf.o"

# (time after the flows connected, action)
SWAPS = ((0.6, "cubic->bbr3"), (1.2, "bbr3 in place"), (1.8, "bbr3->cubic"))
LOSSY_ACTIONS = ((0.6, "cubic->bbr3"), (1.2, "bbr3->cubic"), (1.8, "cubic->bbr3"),
                 (2.4, "unload bbr3"))

# The receiver records every gap in each flow's data (what a swap stall
# would show); the sender runs FLOWS cubic flows of BYTES_PER_FLOW each.
RECEIVER = r"""
import json, selectors, socket, sys, time
n, port, addr, want, gap_min = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                                int(sys.argv[4]), float(sys.argv[5]))
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((addr, port)); l.listen(128)
print("ready", flush=True)
sel = selectors.DefaultSelector(); flows = []
for i in range(n):
    c, _ = l.accept(); c.setblocking(False)
    f = {"bytes": 0, "first": None, "last": None, "gaps": [], "error": None, "eof": False}
    flows.append(f); sel.register(c, selectors.EVENT_READ, f)
t0 = time.monotonic(); open_ = n
while open_ and time.monotonic() - t0 < 50:
    for key, _ in sel.select(1.0):
        f = key.data; now = time.monotonic() - t0
        try:
            d = key.fileobj.recv(1 << 20)
        except OSError as e:
            f["error"] = str(e); d = b""
        if not d:
            f["eof"] = True; sel.unregister(key.fileobj); key.fileobj.close(); open_ -= 1
            continue
        if f["last"] is not None and now - f["last"] > gap_min:
            f["gaps"].append([round(f["last"], 4), round(now - f["last"], 4)])
        f["first"] = f["first"] if f["first"] is not None else now
        f["last"] = now; f["bytes"] += len(d)
print(json.dumps({"t0": t0, "flows": flows}), flush=True)
"""

SENDER = r"""
import socket, sys, time, selectors
n, port, addr, want = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
socks = []
for i in range(n):
    s = socket.socket(); s.setsockopt(6, 13, b"cubic"); s.connect((addr, port))
    s.setblocking(False); socks.append([s, want])
print("connected", flush=True)
sel = selectors.DefaultSelector(); buf = b"x" * 65536
for e in socks: sel.register(e[0], selectors.EVENT_WRITE, e)
left = n
while left:
    for key, _ in sel.select(1.0):
        e = key.data
        try:
            k = e[0].send(buf[:min(len(buf), e[1])])
        except BlockingIOError:
            continue
        e[1] -= k
        if e[1] == 0:
            sel.unregister(e[0]); e[0].shutdown(socket.SHUT_WR); left -= 1
time.sleep(0.5)
print("done", flush=True)
"""


@pytest.fixture(scope="module", autouse=True)
def built():
    make_target("loader/bbrctl", "bpf/bbr3.bpf.o", "bpf/cc_swap.bpf.o",
                "selftests/lab/linkem/linkem")


def swap_sockets(ns, frm, to):
    cp = bbrctl("swap", "--json", "--netns", ns, "--from", frm, "--to", to,
                "--port", PORT, check=0)
    return json.loads(cp.stdout)


def ccs_of_flows(ns):
    """CC names of the sockets to PORT in namespace ns (ss -ti; TIME_WAIT
    sockets have none)."""
    out = subprocess.run(["ip", "netns", "exec", ns, "ss", "-tinH", "exclude", "time-wait",
                          f"( dport = :{PORT} )"], capture_output=True, text=True,
                         check=True, timeout=10).stdout
    words = out.split()
    return [w for w in words if w in ("cubic", B3, "bbr3", "bbr", "reno")]


def act(what, ns):
    """One timed action of a run; returns what it reported."""
    if what == "cubic->bbr3":
        r = swap_sockets(ns, "cubic", B3)
        recs = json.loads(bbrctl("stat", "--json", B3, check=0).stdout)
        mine = [x for x in recs if PORT in (x["sport"], x["dport"])]
        r["modes"] = sorted(x["mode_name"] for x in mine)
        r["srtt_ms"] = sorted(x["srtt_us"] / 1000 for x in mine if "srtt_us" in x)
        top = bbrctl("top", "--count", "1", B3, check=0).stdout
        r["top_rows"] = sum(1 for ln in top.splitlines() if f":{PORT}" in ln)
        r["top"] = top
        return r
    if what == "bbr3->cubic":
        return swap_sockets(ns, B3, "cubic")
    if what == "bbr3 in place":
        bbrctl("swap", "--obj", BBR3_OBJ, B3, check=0)
        return {}
    if what == "unload bbr3":
        bbrctl("unload", B3, check=0)
        return {"ccs_after": ccs_of_flows(ns)}
    raise ValueError(what)


def run_flows(actions, ecn_k_ms=None):
    """FLOWS flows through the emulator; bbrctl carries out `actions` at
    their times. Returns (receiver result, [(t_begin, t_end, what, report)])."""
    ecn = {"mode": "sojourn", "k_us": int(ecn_k_ms * 1000)} if ecn_k_ms else None
    rcv = snd = None
    events = []
    try:
        with EmulatedPath(rate_mbit=RATE_MBIT, rtt_ms=RTT_MS, buffer_bdp=BUFFER_BDP,
                          ecn=ecn, backend="linkem", log=False) as p:
            args = [str(FLOWS), str(PORT), p.rcv_addr, str(BYTES_PER_FLOW)]
            rcv = bbrtest.python_in(p.rcv_ns, RECEIVER, *args, GAP_MIN_S, stderr=None)
            assert rcv.stdout.readline().strip() == "ready"
            snd = bbrtest.python_in(p.snd_ns[0], SENDER, *args, stderr=None)
            assert snd.stdout.readline().strip() == "connected"
            t_start = time.monotonic()
            for at, what in actions:
                time.sleep(max(0, t_start + at - time.monotonic()))
                t = time.monotonic() - t_start
                r = act(what, p.snd_ns[0])
                events.append((t, time.monotonic() - t_start, what, r))
                print(f"t={t:.2f}s..{events[-1][1]:.2f}s {what}:",
                      {k: v for k, v in r.items() if k not in ("top", "modes", "srtt_ms")})
            out, _ = rcv.communicate(timeout=RUN_TIMEOUT_S)
            snd.wait(timeout=RUN_TIMEOUT_S)
    finally:
        for proc in (snd, rcv):
            if proc and proc.poll() is None:
                proc.kill()
                proc.wait()
    return json.loads(out.strip().splitlines()[-1]), events


def gap_figures(res, windows):
    """(errors, short flows, worst gap in the windows, worst gap overall)."""
    flows = res["flows"]
    errors = [f["error"] for f in flows if f["error"]]
    short = [f["bytes"] for f in flows if f["bytes"] != BYTES_PER_FLOW or not f["eof"]]
    gaps = [g for f in flows for g in f["gaps"]]
    near = [g[1] for g in gaps for (a, b) in windows
            if a - SWAP_WINDOW_S <= g[0] <= b + SWAP_WINDOW_S]
    return errors, short, max(near, default=0.0), max((g[1] for g in gaps), default=0.0)


def assert_switched(events, what):
    """Every flow switched, but for one that had already sent its last
    byte (in TIME_WAIT, which swap counts apart and cannot switch)."""
    for t, _, w, r in events:
        if w == what:
            assert r["switched"] + r["time_wait_skipped"] == FLOWS and \
                r["failed"] == 0, (w, r)


def assert_warm_start(r):
    """Warm start (core/bbr3.h): live cubic flows switched to bbr3 continue
    in PROBE_BW at their own rate; none re-enters STARTUP (2.77x pacing)."""
    modes = r["modes"]
    print(f"modes right after cubic -> bbr3: {len(modes)} flows, "
          f"{modes.count('STARTUP')} in STARTUP, {modes.count('PROBE_BW')} in PROBE_BW")
    assert len(modes) == FLOWS and "STARTUP" not in modes, modes
    assert r["top_rows"] >= FLOWS, "bbrctl top does not show the switched flows:\n" + r["top"]


def dmesg():
    return subprocess.run(["dmesg"], capture_output=True, text=True).stdout


def assert_kernel_clean(maps_before, dmesg_before):
    """No struct_ops map of the test left once its sockets are gone, and no
    kernel warning since dmesg_before."""
    bbrtest.wait_for(lambda: not (set(struct_ops_maps()) - maps_before), 5.0)
    leaked = set(struct_ops_maps()) - maps_before
    assert not leaked, f"struct_ops maps left after unload: {leaked}"
    dmesg_after = dmesg()
    new = dmesg_after[len(dmesg_before):] if dmesg_after.startswith(dmesg_before[:200]) \
        else dmesg_after
    bad = [ln for ln in new.splitlines() if "WARNING" in ln or "BUG" in ln]
    assert not bad, f"kernel warnings during the run: {bad[:5]}"


@pytest.mark.kernel_matrix
@pytest.mark.kernel_matrix_slow        # 50 flows through the emulator, twice
def test_swap_under_load():
    maps_before, dmesg_before = set(struct_ops_maps()), dmesg()
    windows = [(at, at) for at, _ in SWAPS]
    base, _ = run_flows((), ecn_k_ms=ECN_K_MS)
    b_err, b_short, b_near, b_worst = gap_figures(base, windows)
    print(f"no swaps: longest receive gap within {SWAP_WINDOW_S} s of the swap times "
          f"{b_near * 1000:.1f} ms, whole run {b_worst * 1000:.1f} ms")
    assert not b_err and not b_short, "the baseline run itself lost data"
    assert b_near <= MAX_STALL_S, \
        (f"the path stalls by itself ({b_near * 1000:.1f} ms > 2 RTT = "
         f"{MAX_STALL_S * 1000:.0f} ms without any swap): the emulator or the machine, "
         f"not bbrctl; nothing to measure the swaps against")
    bbrctl("load", "--name", B3, "bbr3", check=0)
    try:
        res, events = run_flows(SWAPS, ecn_k_ms=ECN_K_MS)
    finally:
        bbrctl("unload", B3)
    windows = [(a, b) for a, b, _, _ in events]
    errors, short, worst_near, worst = gap_figures(res, windows)
    first = events[0][3]
    print("bbrctl top after cubic -> bbr3:\n" + first["top"])
    srtt = first["srtt_ms"]
    print(f"{FLOWS} flows x {BYTES_PER_FLOW} B, {RATE_MBIT} Mbit/s, base RTT {RTT_MS} ms, "
          f"CE above {ECN_K_MS} ms, buffer {BUFFER_BDP} BDP; srtt at cubic -> bbr3: "
          f"median {srtt[len(srtt) // 2] if srtt else float('nan'):.1f} ms")
    print("longest gap per swap window (ms):",
          [round(gap_figures(res, [w])[2] * 1000, 1) for w in windows],
          f"bound {MAX_SWAP_STALL_S * 1000:.0f} ms, under the RTO floor; whole run {worst * 1000:.1f} ms")
    assert_switched(events, "cubic->bbr3")
    assert_switched(events, "bbr3->cubic")
    assert_warm_start(first)
    assert not errors, f"connection errors: {errors[:5]}"
    assert not short, f"flows that lost bytes or did not end: {short[:5]}"
    assert worst_near <= MAX_SWAP_STALL_S, \
        (f"a flow stalled {worst_near * 1000:.1f} ms within {SWAP_WINDOW_S} s of a swap "
         f"(bound {MAX_SWAP_STALL_S * 1000:.0f} ms, under the RTO floor; {b_near * 1000:.1f} ms without swaps)")
    assert_kernel_clean(maps_before, dmesg_before)


def test_swap_under_load_with_loss():
    maps_before, dmesg_before = set(struct_ops_maps()), dmesg()
    bbrctl("load", "--name", B3, "bbr3", check=0)
    try:
        res, events = run_flows(LOSSY_ACTIONS)
    finally:
        if B3 in bbrtest.available_ccs():
            bbrctl("unload", B3)
    windows = [(a, b) for a, b, _, _ in events]
    errors, short, worst_near, worst = gap_figures(res, windows)
    print("longest gap per window (ms):",
          [(w, round(gap_figures(res, [(a, b)])[2] * 1000, 1)) for a, b, w, _ in events],
          f"whole run {worst * 1000:.1f} ms (drop-tail: the flows' own loss recovery)")
    assert_switched(events, "cubic->bbr3")
    assert_switched(events, "bbr3->cubic")
    assert_warm_start(events[0][3])
    # The flows that have not finished by the unload (most: ~4 s of data each)
    # keep running the unregistered bbr3 until they close.
    ccs = events[-1][3]["ccs_after"]
    print(f"after unload: {ccs.count(B3)} sockets on {B3}, {len(ccs)} in all")
    assert set(ccs) == {B3} and len(ccs) >= FLOWS // 2, \
        f"after unload the live sockets should keep bbr3 until they close: {ccs}"
    assert not errors, f"connection errors: {errors[:5]}"
    assert not short, f"flows that lost bytes or did not end: {short[:5]}"
    assert_kernel_clean(maps_before, dmesg_before)
