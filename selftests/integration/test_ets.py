# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""ETS sockops (bpf/ets.bpf.o) between two namespaces.

  * the bytes on the wire (tcpdump + scapy) for SYN, SYN-ACK, data and pure
    ACKs against draft-yang-tcpm-ets-00 §3.2, and negotiation both ways;
  * Network_RTT against the lab emulator (labkit.EmulatedPath, linkem) at a
    known propagation delay with the receiver's delayed ACKs in play.
  * ETS on through loss episodes: ACKs the sender's backlog coalesced
    (forged, with its user held in send()), and a transfer through the lab's
    kernel path with drops and CE marks.

The program is attached to a cgroup v2 child this test creates; client and
server processes move themselves into it. Maps are pinned under a fresh
directory /sys/fs/bpf/bbrbpf-ets-<pid>-<tag>: outside bbrctl's tree, so
neither a running bbr_swift's shared map (PIN_SHARED) nor `bbrctl list` and
`unload` of an operator see them. Values are read from the pinned sk_storage map
by the client itself (lookup keyed by its socket fd).
"""

import json
import os
import shutil
import subprocess
import time

import pytest

import bbrtest
from bbrtest import ets, netns
from bbrtest.base import REPO

ETS_OBJ = REPO / "bpf" / "ets.bpf.o"
ETS_ATTACH = REPO / "selftests" / "integration" / "ets_attach"
NS_PREFIX = f"ets{os.getpid()}"
ADDR_A, ADDR_B = "198.18.200.1", "198.18.200.2"
PORT = 5301
CMD_TIMEOUT_S = 30

ETS_KIND, ETS_EXID = ets.ETS_KIND, ets.ETS_EXID
# The emulated path: base RTT and tolerance from issue 5 (5 % or 50 us).
EMU_RTT_MS = 40
EMU_TOL_FRAC = 0.05
EMU_TOL_FLOOR_US = 50
# Round trips the close takes: after it, a socket's per-segment counts
# are in ets_stats (they reach it at close, docs/ets.md "Counters").
CLOSE_RTTS = 3
# Bound on any single sample's error, as a fraction of the emulated RTT.
EMU_WORST_FRAC = 0.25
# Client writes one small message every MSG_GAP_S: the server has nothing to
# send back, so its ACK waits for the delayed-ACK timer (>= 40 ms, TCP_DELACK_MIN).
MSG_GAP_S = 0.1
MSG_COUNT = 30
# The server reads 60 ms after data arrived, later than the delayed-ACK timer
# (40 ms), so every ACK waits for the timer.
SERVER_READ_DELAY_S = 0.06
# The ACK delay the ETS program enforces (MaxACKDel, the 8 ms default), the
# delayed-ACK timer it replaces (TCP_DELACK_MIN, 40 ms), and what the timer
# wheel may add: the cap is armed in jiffies (2 at HZ=250) and may fire a
# jiffy late, and on an idle VM the expiry and the ACK it sends wait for
# CPUs to wake. Three jiffies: a clean-clone run on an idle host saw one
# EcrDel of 19.0 ms (the cap plus 11 ms) where sleeps of 8 ms came back at
# most 1.4 ms late. The bound, 20 ms and the measured lateness, is still
# half of the 40 ms an ACK waits when the cap does not hold.
ETS_MAX_ACK_DELAY_US = 8000
TCP_DELACK_MIN_US = 40000
TIMER_WHEEL_SLACK_US = 12000
# enum ets_sample_err's indices (bpf/core/ets_opt.h) of a Total_RTT beyond
# the connection's bound and of an EcrDel larger than Total_RTT
ETS_SAMPLE_TOO_OLD, ETS_SAMPLE_DEL_GT_RTT = 4, 6
# Share of samples that may be rejected as too old: none on a real machine;
# a fifth in a kernel-matrix guest (rates scaled: bbrtest.rates), whose vCPU
# stalls for hundreds of ms at times.
TOO_OLD_ALLOWED = 0.2 if bbrtest.rates_scaled() else 0
# How late this machine's timers fire, measured before the transfer: the
# largest lateness of LATENESS_SAMPLES sleeps of the cap's length. Emulated
# guests (the kernel matrix under TCG) wake several ms late; a real one in
# tens of us.
LATENESS_SAMPLES = 50


def run(argv, check=True, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=CMD_TIMEOUT_S, **kw)
    if check and r.returncode:
        raise RuntimeError(f"{argv} failed: {r.stderr.strip()}")
    return r


class EtsAttached:
    """cgroup2 child + ets_sockops attached + maps pinned; removed on exit."""

    def __init__(self, tag):
        if not ETS_OBJ.exists() or not ETS_ATTACH.exists():
            pytest.fail(f"build first: {ETS_OBJ} / {ETS_ATTACH} missing (make)")
        self.cgroup = bbrtest.Cgroup(f"{NS_PREFIX}-{tag}", kill=True)
        self.cg = self.cgroup.path
        # <pid> between dashes: conftest's no_leaks checks such pins
        self.pins = bbrtest.BPFFS_ROOT / f"bbrbpf-ets-{os.getpid()}-{tag}"

    def __enter__(self):
        self.cgroup.__enter__()
        try:
            out = run([str(ETS_ATTACH), str(ETS_OBJ), str(self.cg), str(self.pins)])
            print(out.stdout.strip())
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        if self.pins.exists():
            shutil.rmtree(self.pins, ignore_errors=True)
            for f in self.pins.glob("*") if self.pins.exists() else []:
                f.unlink()
            if self.pins.exists():
                self.pins.rmdir()
        self.cgroup.remove()

    def stats_by_netns(self):
        """{netns cookie: counters summed over the CPUs} (bpftool,
        BTF-formatted JSON). An open socket's counts since its last fold
        (ETS_TALLY_FOLD_CALLS calls at most) are not in them yet."""
        out = run(["bpftool", "-j", "map", "dump", "pinned", str(self.pins / "ets_stats")])
        res = {}
        for ent in json.loads(out.stdout):
            tot = res.setdefault(ent["formatted"]["key"], {})
            for cpu in ent["formatted"]["values"]:      # a per-CPU map: sum the CPUs
                for k, v in cpu["value"].items():
                    if isinstance(v, list):
                        tot[k] = [a + b for a, b in zip(tot.get(k, [0] * len(v)), v)]
                    else:
                        tot[k] = tot.get(k, 0) + v
        return res

    def stats(self):
        """The counters summed over every network namespace."""
        tot = {}
        for per_ns in self.stats_by_netns().values():
            for k, v in per_ns.items():
                if isinstance(v, list):
                    tot[k] = [a + b for a, b in zip(tot.get(k, [0] * len(v)), v)]
                else:
                    tot[k] = tot.get(k, 0) + v
        return tot


class VethPair(bbrtest.SetupClose):
    """Two namespaces ets<pid>a / ets<pid>b joined by a veth, TSO/GSO/GRO off."""

    def __init__(self):
        self.a, self.b = NS_PREFIX + "a", NS_PREFIX + "b"
        self.nss = netns.Namespaces()

    def _setup(self):
        for ns in (self.a, self.b):
            self.nss.add(ns)
        netns.veth(self.a, "eta", self.b, "etb")
        for ns, dev, addr in ((self.a, "eta", ADDR_A), (self.b, "etb", ADDR_B)):
            netns.add_addr(ns, dev, addr + "/24")
            netns.set_offloads(ns, dev, False, ("tso", "gso", "gro"))

    def close(self):
        self.nss.close()


# Server and client run as `python3 -c` inside a namespace (and the cgroup,
# bbrtest.python_in), so their sockets are the ETS program's.
COMMON = r"""
import ctypes, json, os, socket, struct, sys, time
"""

SERVER = COMMON + r"""
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(8)
print("LISTEN", flush=True)
c, _ = s.accept()
# TCP_QUICKACK 0 puts the socket in pingpong mode: ACKs wait for the
# delayed-ACK timer instead of the quickack budget of a new connection.
# With read_delay > 0 the application reads late, so the ACK is not sent
# when the data is read (tcp_cleanup_rbuf) but when the timer fires.
read_delay = float(sys.argv[3])
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 0)
import select
while True:
    select.select([c], [], [])
    time.sleep(read_delay)      # data waits unread: the timer sends the ACK
    if not c.recv(65536):
        break
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 0)
"""

# A socket's struct ets_sk, read from the pinned map by the process that
# holds the socket: ets_map(pins) opens the map (BPF_OBJ_GET = 7) once,
# ets_sk(sock, pins) -> {field: value} looks the socket up
# (BPF_MAP_LOOKUP_ELEM = 1, keyed by its fd); struct ets_sk as
# selftests/tools/layouts lays it out from include/ets_shared.h.
LAYOUTS_BIN = REPO / "selftests" / "tools" / "layouts"
ETS_SK_LOOKUP = COMMON + f"LAYOUTS_BIN = {str(LAYOUTS_BIN)!r}\n" + r"""
import subprocess
libc = ctypes.CDLL(None, use_errno=True)
NR_BPF = 321
def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(NR_BPF, cmd, buf, 128)
    if r < 0:
        raise OSError(ctypes.get_errno(), "bpf cmd %d" % cmd)
    return r
LAY = json.loads(subprocess.run([LAYOUTS_BIN], capture_output=True, text=True,
                                check=True).stdout)["ets_sk"]
_maps = {}
def ets_map(pins):
    if pins not in _maps:
        path = ctypes.create_string_buffer((pins + "/ets_sk_stor").encode())
        _maps[pins] = bpf(7, struct.pack("=QII", ctypes.addressof(path), 0, 0))
    return _maps[pins]
def ets_sk(sock, pins):
    key = ctypes.c_int(sock.fileno()); val = ctypes.create_string_buffer(LAY["size"])
    bpf(1, struct.pack("=IIQQQ", ets_map(pins), 0, ctypes.addressof(key),
                       ctypes.addressof(val), 0))
    return {f: int.from_bytes(val.raw[off:off + n], sys.byteorder)
            for f, (off, n) in LAY["fields"].items()}
"""

CLIENT = ETS_SK_LOOKUP + r"""
# the short names the tests use, and the fields of struct ets_sk
NAMES = {"last_ns": "last_sample_ns", "net": "network_rtt_us", "total": "total_rtt_us",
         "del": "rcv_ack_delay_us", "min": "min_network_rtt_us",
         "min_ns": "min_network_rtt_stamp_ns", "samples": "samples", "rejected": "rejected",
         "path": "path_rtt_us", "host": "host_delay_us", "tx_late": "tx_late_us",
         "rx_wait": "rx_wait_us", "lclk": "ts_latest_clock_ns", "latest": "ts_latest_us",
         "recent": "ts_recent_us", "peer_mad": "peer_max_ack_delay_us", "flags": "flags"}
dst, port, pins, count, gap, size = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
ets_map(pins)                   # a missing pin fails the client here, before it connects
s = socket.create_connection((dst, port))
def record():
    e = ets_sk(s, pins)
    return {short: e[field] for short, field in NAMES.items()}
for i in range(count):
    s.sendall(b"x" * size)
    time.sleep(gap)
    try:
        print(json.dumps(record()), flush=True)
    except OSError as e:
        print(json.dumps({"err": str(e)}), flush=True)
if len(sys.argv) > 7 and sys.argv[7] == "hold":
    # Idle connection: the test injects segments, then says "go".
    print(json.dumps({"held": 1}), flush=True)
    sys.stdin.readline()
    print(json.dumps(record()), flush=True)
s.close()
"""


def transfer(cli_ns, srv_ns, srv_addr, cg_cli, cg_srv, pins, count, gap, size,
             read_delay=0.0):
    """cg_cli, cg_srv: the cgroup of each side, or None (outside it)."""
    srv = bbrtest.python_in(srv_ns, SERVER, srv_addr, PORT, read_delay, cgroup=cg_srv)
    try:
        line = srv.stdout.readline()
        if "LISTEN" not in line:
            pytest.fail(f"server did not start: {srv.stderr.read()}")
        cli = bbrtest.python_in(cli_ns, CLIENT, srv_addr, PORT, pins, count, gap, size,
                                cgroup=cg_cli)
        out, err = cli.communicate(timeout=CMD_TIMEOUT_S + count * gap)
        if cli.returncode:
            pytest.fail(f"client failed: {err}")
        return [json.loads(l) for l in out.splitlines() if l.strip()]
    finally:
        bbrtest.reap(srv)


def ets_opts(pkt):
    """[(kind254 option bytes)] of a scapy TCP packet, ExID 0x4554 only."""
    from scapy.layers.inet import TCP
    res = []
    for kind, val in pkt[TCP].options:
        if kind == ETS_KIND or kind == "Experiment" or kind == 254:
            raw = val if isinstance(val, (bytes, bytearray)) else None
            if raw is None and isinstance(val, tuple):
                raw = val[0].to_bytes(2, "big") + (val[1] if len(val) > 1 else b"")
            if raw is not None and len(raw) >= 2 and int.from_bytes(raw[:2], "big") == ETS_EXID:
                res.append(bytes([ETS_KIND, len(raw) + 2]) + bytes(raw))
    return res


def capture(ns, dev, pcap):
    p = subprocess.Popen(["ip", "netns", "exec", ns, "tcpdump", "-U", "--immediate-mode", "-n", "-Z", "root", "-i", dev,
                          "-w", str(pcap), "tcp", "port", str(PORT)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)
    return p


def stop_capture(p):
    time.sleep(0.3)
    p.terminate()
    p.wait(timeout=10)


def timer_lateness_us():
    """The largest lateness of LATENESS_SAMPLES sleeps of ETS_MAX_ACK_DELAY_US."""
    worst_ns = 0
    for _ in range(LATENESS_SAMPLES):
        t0 = time.monotonic_ns()
        time.sleep(ETS_MAX_ACK_DELAY_US / 1e6)
        worst_ns = max(worst_ns, time.monotonic_ns() - t0 - ETS_MAX_ACK_DELAY_US * 1000)
    return worst_ns // 1000


def read_pcap(pcap):
    from scapy.all import rdpcap  # registers the Ether/IP/TCP layers
    return rdpcap(str(pcap))


def check_option(opt, syn, ack):
    """Field checks of draft §3.2 on one ETS option; returns the fields."""
    want_len = 16 if syn else 14
    assert opt[0] == 254 and opt[1] == want_len, f"kind/len {opt[:2].hex()} want 254/{want_len}"
    assert len(opt) == want_len
    assert int.from_bytes(opt[2:4], "big") == ETS_EXID
    tsval = int.from_bytes(opt[4:8], "big")
    tsecr = int.from_bytes(opt[8:12], "big")
    f = int.from_bytes(opt[12:14], "big")
    unit, ecrdel, rsv = f >> 14, (f >> 1) & 0x1FFF, f & 1
    assert rsv == 0, "reserved bit set"
    if not ack:
        assert tsecr == 0 and f == 0, f"no ACK: TSecr {tsecr} EcrDel field {f:#x} must be 0"
    mad = int.from_bytes(opt[14:16], "big") if syn else None
    return dict(tsval=tsval, tsecr=tsecr, unit=unit, ecrdel=ecrdel, mad=mad)


@pytest.mark.kernel_matrix
@pytest.mark.kernel_matrix_slow
def test_ets_wire_format_and_negotiation(tmp_path):
    from scapy.layers.inet import TCP
    # An ACK the cap sent: the cap, the wheel's slack and this machine's timer
    # lateness. One the cap missed waits for the delayed-ACK timer (40 ms+):
    # the bound must stay below that to tell the two apart.
    lateness_us = timer_lateness_us()
    max_del_us = ETS_MAX_ACK_DELAY_US + TIMER_WHEEL_SLACK_US + lateness_us
    print(f"timers fire up to {lateness_us} us late here: EcrDel bound {max_del_us} us")
    assert max_del_us < TCP_DELACK_MIN_US, \
        (f"timers fire {lateness_us} us late: an ACK under the {ETS_MAX_ACK_DELAY_US} us cap "
         f"cannot be told from one of the {TCP_DELACK_MIN_US} us delayed-ACK timer")
    with EtsAttached("wire") as att, VethPair() as vp:
        pcap = tmp_path / "ets.pcap"
        cap = capture(vp.a, "eta", pcap)
        try:
            rows = transfer(vp.a, vp.b, ADDR_B, att.cg, att.cg, att.pins,
                            count=10, gap=0.05, size=3000)
        finally:
            stop_capture(cap)
        pkts = [p for p in read_pcap(pcap) if TCP in p]
        assert pkts, "nothing captured"
        seen = {"syn": 0, "synack": 0, "data": 0, "pure_ack": 0}
        syn_tsval = None
        skbs = set()
        max_ecrdel_us = us_unit = 0
        fin_from = set()
        for p in pkts:
            t = p[TCP]
            flags = int(t.flags)
            syn, ack = bool(flags & 0x02), bool(flags & 0x10)
            opts = ets_opts(p)
            if flags & 0x01:
                fin_from.add(t.sport)
            # The ACK of the last FIN may come from a TIME_WAIT socket
            # (an orphaned FIN_WAIT2 socket becomes one at once), which
            # runs no sockops: the one segment that may lack the option.
            if not opts and len(fin_from) == 2 and t.sport in fin_from and \
                    not len(t.payload) and not flags & 0x07:
                print("the last ACK, from TIME_WAIT, without ETS:", t.summary())
                continue
            assert len(opts) == 1, f"{t.summary()}: {len(opts)} ETS options"
            o = check_option(opts[0], syn, ack)
            skbs.add((t.sport, o["tsval"]))
            if syn and not ack:
                seen["syn"] += 1
                syn_tsval = o["tsval"]
                assert o["mad"] == ETS_MAX_ACK_DELAY_US, f"MaxACKDel {o['mad']}: the 8 ms default"
            elif syn:
                seen["synack"] += 1
                assert o["tsecr"] == syn_tsval, "SYN-ACK must echo the SYN's TSval"
                assert o["unit"] == 2, "SYN-ACK EcrDel is sent as invalid"
            elif len(t.payload):
                seen["data"] += 1
            else:
                seen["pure_ack"] += 1
                assert o["tsecr"] != 0
                # Sends 50 ms apart would wait for the 40 ms delayed-ACK
                # timer; the enforced 8 ms MaxACKDel caps the wait.
                if o["unit"] != 2:
                    del_us = o["ecrdel"] * (1000 if o["unit"] == 1 else 1)
                    assert del_us <= max_del_us, \
                        f"EcrDel {del_us} us > {max_del_us} us: the 8 ms cap did not hold"
                    max_ecrdel_us = max(max_ecrdel_us, del_us)
                    us_unit += o["unit"] == 0
            # Option space: TCP header within 60 bytes (40 of options).
            assert t.dataofs * 4 <= 60
        print("ETS options per segment type:", seen, "largest EcrDel", max_ecrdel_us, "us,",
              us_unit, "in us")
        assert seen["syn"] >= 1 and seen["synack"] >= 1
        assert seen["data"] >= 10 and seen["pure_ack"] >= 5
        st = att.stats()
        print("counters:", st)
        assert st["negotiated"] >= 2, st
        # One option write per skb; a GSO skb's segments share its TSval.
        assert st["sent"] >= len(skbs), (st["sent"], len(skbs))
        assert st["missing"] == 0 and st["refused"] == 0
        # Clean run: no rejections, except EcrDel > Total_RTT by the us
        # truncation of both clocks on this ~20 us veth RTT (docs/ets.md),
        # and, in a kernel-matrix guest, Total_RTTs beyond 2 srtt + 200 ms
        # (ets_rtt_bound_us): there a TCG vCPU shared with another guest
        # stalls for that long at times (3 of 27 samples once on 7.3).
        too_old = st["rej_sample"][ETS_SAMPLE_TOO_OLD]
        print(f"rejected as too old: {too_old} of {st['samples'] + too_old} samples")
        assert sum(st["rej_parse"]) == 0, st
        assert not [n for i, n in enumerate(st["rej_sample"])
                    if n and i not in (ETS_SAMPLE_TOO_OLD, ETS_SAMPLE_DEL_GT_RTT)], st
        assert too_old <= TOO_OLD_ALLOWED * (st["samples"] + too_old), st
        assert st["rej_sample"][ETS_SAMPLE_DEL_GT_RTT] <= 0.25 * st["samples"], st
        last = [r for r in rows if "net" in r][-1]
        print("client's ets_sk at the end:", last)
        assert last["flags"] & 0x04 and not last["flags"] & 0x08
        assert last["samples"] > 0


# A server that reads its own accepted socket's struct ets_sk after the
# first data and prints it, then drains the connection.
SERVER_RECORD = ETS_SK_LOOKUP + r"""
addr, port, pins = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ets_map(pins)
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((addr, port)); l.listen(8)
print("LISTEN", flush=True)
c, _ = l.accept()
c.recv(65536)
e = ets_sk(c, pins)
print(json.dumps({"peer_mad": e["peer_max_ack_delay_us"], "flags": e["flags"]}), flush=True)
while c.recv(65536):
    pass
"""


@pytest.mark.kernel_matrix
def test_ets_both_ends_know_the_peers_max_ack_delay():
    """Each end learns the other's MaxACKDel (the 8 ms default both
    advertise): the client from the SYN-ACK, the server from the SYN its
    listener kept (TCP_SAVE_SYN). A sending server's bbr_swift bounds the
    round trip its paced cwnd counts with it (swift_paced_cwnd())."""
    with EtsAttached("mad") as att, VethPair() as vp:
        srv = bbrtest.python_in(vp.b, SERVER_RECORD, ADDR_B, PORT, att.pins, cgroup=att.cg)
        try:
            assert "LISTEN" in srv.stdout.readline(), srv.stderr.read()
            cli = bbrtest.python_in(vp.a, CLIENT, ADDR_B, PORT, att.pins, 3, 0.02, 3000,
                                    cgroup=att.cg)
            out, err = cli.communicate(timeout=CMD_TIMEOUT_S)
            assert cli.returncode == 0, err
            server = json.loads(srv.stdout.readline())
        finally:
            bbrtest.reap(srv)
    client = [json.loads(l) for l in out.splitlines() if l.strip()][-1]
    print(f"MaxACKDel the client learned {client['peer_mad']} us, the server "
          f"{server['peer_mad']} us (both advertise {ETS_MAX_ACK_DELAY_US} us)")
    assert server["flags"] & 0x04, "ETS not enabled on the server's socket"
    assert client["peer_mad"] == ETS_MAX_ACK_DELAY_US
    assert server["peer_mad"] == ETS_MAX_ACK_DELAY_US


@pytest.mark.parametrize("side_with_prog", ["client", "server"])
def test_ets_negotiation_one_sided(tmp_path, side_with_prog):
    from scapy.layers.inet import TCP
    with EtsAttached("one" + side_with_prog[0]) as att, VethPair() as vp:
        pcap = tmp_path / "one.pcap"
        cg_cli = att.cg if side_with_prog == "client" else None
        cg_srv = att.cg if side_with_prog == "server" else None
        cap = capture(vp.a, "eta", pcap)
        try:
            transfer(vp.a, vp.b, ADDR_B, cg_cli, cg_srv, att.pins, count=5, gap=0.05,
                     size=1000)
        finally:
            stop_capture(cap)
        pkts = [p for p in read_pcap(pcap) if TCP in p]
        with_opt = [(p[TCP].flags, bool(ets_opts(p))) for p in pkts]
        syn = [o for f, o in with_opt if int(f) & 0x12 == 0x02]
        rest = [o for f, o in with_opt if int(f) & 0x12 != 0x02]
        print(side_with_prog, "SYN has ETS:", syn, "later segments with ETS:",
              sum(rest), "of", len(rest))
        assert syn == [side_with_prog == "client"]
        assert len(rest) > 5 and sum(rest) == 0, "no option after the SYN"
        st = att.stats()
        print("counters:", st)
        assert st.get("negotiated", 0) == 0
        if side_with_prog == "client":
            assert st["refused"] >= 1


# A bulk transfer between the two namespaces, offloads off: how many times
# the program runs. Every skb written costs a length and a write callback
# (TCP builds GSO skbs of up to 64 KB even so: the device segments them;
# the length callback's MSS queries are not counted, they touch no
# state); the parse callback runs once per ACK at each end ("One parse
# per ACK", docs/ets.md), while the receiver gets every segment apart.
BULK_BYTES = 16 << 20
GSO_MAX_BYTES = 65536
MSS_BYTES = 1448                # the veth's MTU 1500 less IP, TCP and TS
# SO_NETNS_COOKIE (include/uapi/asm-generic/socket.h): which ets_stats
# entry is whose.
SO_NETNS_COOKIE = 71
# Parse callbacks per segment the receiver wrote (its ACKs, with the option
# or without it: an ACK whose SACK blocks left no room still resumes the
# parse), at each end: 1 in a clean transfer, plus the handshake's and the
# close's few segments (PARSE_SLACK_CALLS). A transfer that met losses
# (drops in a busy machine's backlog) adds the segments no ACK can echo:
# each out-of-order or duplicate arrival is parsed without a pause; 1.34
# per ACK with the option, 1.18 per ACK written, in one such CI run. Without
# the pause the receiver parses every data segment: as many per ACK as the
# data segments each ACK covers (12-30 here).
PARSE_PER_WRITE_MAX = 1.5
PARSE_SLACK_CALLS = 10
# What the bound needs to tell the two apart: the receiver ACKs at most
# every other full segment (tcp_ack_snd_check()), far fewer under stretch
# ACKs (12-30 segments per ACK on this kind of machine). At 3 or more, a
# broken pause parses at least twice the bound.
DATA_SEGS_PER_WRITE_MIN = 3
# Every ACK the receiver wrote is parsed by the sender, and (but for the
# few rejected for the us truncation on this ~20 us path, docs/ets.md)
# gives a Network_RTT sample.
SAMPLES_PER_ACK_MIN = 0.7

BULK_SERVER = COMMON + r"""
SO_NETNS_COOKIE = int(sys.argv[3])
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1)
print("LISTEN", flush=True)
c, _ = s.accept()
n = 0
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    n += len(b)
cookie = struct.unpack("=Q", c.getsockopt(socket.SOL_SOCKET, SO_NETNS_COOKIE, 8))[0]
c.close()
print(json.dumps({"bytes": n, "netns": cookie}), flush=True)
"""

BULK_CLIENT = COMMON + r"""
SO_NETNS_COOKIE = int(sys.argv[4])
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
s.sendall(b"x" * int(sys.argv[3]))
cookie = struct.unpack("=Q", s.getsockopt(socket.SOL_SOCKET, SO_NETNS_COOKIE, 8))[0]
s.close()
print(json.dumps({"netns": cookie}), flush=True)
"""


def test_ets_calls_per_transfer():
    """The number of calls a bulk transfer costs, from ets_stats: writes
    (one per segment sent, as many length callbacks with a segment) and
    parses per ACK at each end. A regression that parses data segments
    again, or ACKs twice, shows here; so does one that loses samples."""
    with EtsAttached("calls") as att, VethPair() as vp:
        srv = bbrtest.python_in(vp.b, BULK_SERVER, ADDR_B, PORT, SO_NETNS_COOKIE,
                                cgroup=att.cg)
        try:
            assert "LISTEN" in srv.stdout.readline()
            cli = bbrtest.python_in(vp.a, BULK_CLIENT, ADDR_B, PORT, BULK_BYTES,
                                    SO_NETNS_COOKIE, cgroup=att.cg)
            out, err = cli.communicate(timeout=CMD_TIMEOUT_S)
            assert cli.returncode == 0, err
            snd = json.loads(out)
            got = json.loads(srv.communicate(timeout=CMD_TIMEOUT_S)[0])
        finally:
            bbrtest.reap(srv)
        # both sockets are closed: their tallies are in ets_stats (at close)
        time.sleep(0.3)
        per_ns = att.stats_by_netns()
    assert got["bytes"] == BULK_BYTES
    s, r = per_ns[snd["netns"]], per_ns[got["netns"]]
    acks, skbs, data_segs = r["sent"], s["sent"], BULK_BYTES / MSS_BYTES
    writes = acks + r["reserve_nospace"]
    print(f"{BULK_BYTES} bytes: sender wrote {skbs} options, receiver {acks} "
          f"and {r['reserve_nospace']} ACKs without ({data_segs / writes:.1f} data "
          f"segments per ACK); parse calls: receiver {r['parse_calls']} "
          f"({r['parse_calls'] / writes:.2f} per ACK), sender {s['parse_calls']} "
          f"({s['parse_calls'] / writes:.2f} per ACK; bound {PARSE_PER_WRITE_MAX} "
          f"+ {PARSE_SLACK_CALLS}); samples {s['samples']} "
          f"({s['samples'] / acks:.2f} per ACK, at least {SAMPLES_PER_ACK_MIN}); "
          f"calls per MB (writes x 2 + parses): "
          f"{(2 * (acks + skbs) + r['parse_calls'] + s['parse_calls']) / (BULK_BYTES / 1e6):.0f}")
    print("sender:", s)
    print("receiver:", r)
    assert skbs >= BULK_BYTES / GSO_MAX_BYTES, "one option per skb written"
    assert data_segs / writes >= DATA_SEGS_PER_WRITE_MIN, \
        "the receiver ACKed nearly every segment: the parse bound cannot tell a regression"
    assert r["parse_calls"] <= PARSE_PER_WRITE_MAX * writes + PARSE_SLACK_CALLS, \
        "the receiver parses more than once per segment it writes"
    assert s["parse_calls"] <= PARSE_PER_WRITE_MAX * writes + PARSE_SLACK_CALLS, \
        "the sender parses more than once per ACK"
    assert s["samples"] >= SAMPLES_PER_ACK_MIN * acks, "Network_RTT samples lost"
    assert s["missing"] == r["missing"] == 0 and s["negotiated"] == r["negotiated"] == 1


# A transfer through a lossy bottleneck (the lab's kernel path: tbf with a
# small FIFO and the BPF marker's step ECN and random drops; bbrtest.Topology
# and labkit.fastpath): the loss episodes must leave ETS on at both ends. In
# loss recovery the receiver's ACKs carry SACK blocks, and with three there
# is no room for ETS. Retransmissions that arrive back to back each get an
# ACK at once (CE marks also put the receiver in quickack mode), and two of
# those written in the same millisecond have the same options (RFC 7323
# timestamps, SACK blocks): when the sender's user holds its socket, the
# kernel appends the second to the first in the backlog (tcp_add_backlog())
# and advances only the control block's ack_seq. The program read the TCP
# header's, missed the second acknowledgment, and found snd_una 3 MSS past
# its mark at the next write: ETS off on a healthy peer, then on its peer
# (`missing` 1 to 4 at each end in 3 of 4 runs of these figures before the
# fix; test_ets_coalesced_acks_are_no_silence makes such a pair every time).
LOSS_FLOWS = 16
LOSS_BYTES_PER_FLOW = 8 << 20
LOSS_CHUNK_BYTES = 2 << 20         # the client reads its TCP_INFO between chunks
LOSS_RATE_MBIT = 300
LOSS_BUFFER_BYTES = 200_000        # ~5 ms at the rate: tail drops in every episode
LOSS_ECN_K_US = 50                 # the lab's step marking (swift_dc_kernel)
LOSS_RANDOM = 0.01                 # the marker's random drops: holes, so SACK blocks
# The sender's CC, set per socket: this repository's BBRv3 under a name of
# the test's own (BBRv3 ignores CE without ecn_enable, as the lab's
# bbr_swift with a target does, so the marks keep the receiver in quickack
# mode while the FIFO overflows).
BBR3_OBJ = REPO / "bpf" / "bbr3.bpf.o"
LOSS_TIMEOUT_S = 120
ETS_F_ENABLED, ETS_F_DISABLED = 0x04, 0x08

LOSS_CLIENT = ETS_SK_LOOKUP + r"""
import threading
dst, port, pins = sys.argv[1], int(sys.argv[2]), sys.argv[3]
nflows, nbytes, chunk, cc = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
TCP_INFO_BYTES, TOTAL_RETRANS_OFF = 104, 100      # struct tcp_info's tcpi_total_retrans
def ets(s):
    e = ets_sk(s, pins)
    return e["flags"], e["samples"]
def retrans(s):
    return struct.unpack_from("=I", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO,
                                                 TCP_INFO_BYTES), TOTAL_RETRANS_OFF)[0]
res = [None] * nflows
def flow(i):
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    s.connect((dst, port))
    at_loss, buf, sent = None, b"x" * chunk, 0
    while sent < nbytes:
        s.sendall(buf)
        sent += chunk
        if at_loss is None and retrans(s):
            at_loss = ets(s)[1]     # samples when the first loss was repaired
    s.shutdown(socket.SHUT_WR)
    s.recv(1)                       # the server's close: everything acknowledged
    flags, samples = ets(s)
    res[i] = {"retrans": retrans(s), "samples_at_loss": at_loss, "samples": samples,
              "flags": flags}
    s.close()
threads = [threading.Thread(target=flow, args=(i,)) for i in range(nflows)]
for t in threads: t.start()
for t in threads: t.join()
cookie = struct.unpack("=Q", socket.socket().getsockopt(socket.SOL_SOCKET, int(sys.argv[8]), 8))[0]
print(json.dumps({"netns": cookie, "flows": res}), flush=True)
"""

LOSS_SERVER = COMMON + r"""
import threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(64)
print("LISTEN", flush=True)
def drain(c):
    while c.recv(1 << 20):
        pass
    c.close()
for _ in range(int(sys.argv[3])):
    threading.Thread(target=drain, args=(s.accept()[0],)).start()
"""


def backlog_coalesced(ns):
    """TcpExtTCPBacklogCoalesce of namespace ns: segments the kernel appended
    to the one before them in a socket's backlog."""
    out = netns.netns_exec(ns, ["cat", "/proc/net/netstat"]).stdout.splitlines()
    for names, values in zip(out[::2], out[1::2]):
        if names.startswith("TcpExt:"):
            return dict(zip(names.split()[1:], map(int, values.split()[1:]))).get(
                "TCPBacklogCoalesce", 0)
    return 0


def test_ets_stays_on_through_losses():
    """LOSS_FLOWS bulk flows through a bottleneck that drops (its FIFO
    overflows, and at random) and marks CE: every connection has loss
    episodes, and ETS must stay on at both ends of each (`missing` 0, the
    connection's flags ENABLED) with Network_RTT samples after its first
    repaired loss. The bottleneck's drops, the receiver's ACKs without room
    for the option (`reserve_nospace`) and the sender's coalesced backlog
    segments are printed: the conditions of the bug this guards against."""
    from labkit.fastpath import FastPath
    cc = bbrtest.own_cc_name("etl")
    with bbrtest.register_cc(BBR3_OBJ, as_name=cc), EtsAttached("loss") as att, \
            bbrtest.Topology(rate_mbit=LOSS_RATE_MBIT, buffer_bytes=LOSS_BUFFER_BYTES) as topo:
        for ns in (topo.snd_ns, topo.rcv_ns):
            netns.sysctl(ns, {"net.ipv4.tcp_ecn": 1})
        with FastPath(topo.rtr_ns, topo.bottleneck_dev, rate_mbit=LOSS_RATE_MBIT,
                      buffer_bytes=LOSS_BUFFER_BYTES, ecn={"mode": "step", "k_us": LOSS_ECN_K_US},
                      loss=LOSS_RANDOM) as fp:
            coalesced0 = backlog_coalesced(topo.snd_ns)
            srv = bbrtest.python_in(topo.rcv_ns, LOSS_SERVER, topo.rcv_addr, PORT, LOSS_FLOWS,
                                    cgroup=att.cg)
            try:
                assert "LISTEN" in srv.stdout.readline()
                cli = bbrtest.python_in(topo.snd_ns, LOSS_CLIENT, topo.rcv_addr, PORT, att.pins,
                                        LOSS_FLOWS, LOSS_BYTES_PER_FLOW, LOSS_CHUNK_BYTES,
                                        cc, SO_NETNS_COOKIE, cgroup=att.cg)
                out, err = cli.communicate(timeout=LOSS_TIMEOUT_S)
                assert cli.returncode == 0, err
            finally:
                bbrtest.reap(srv)
            got = json.loads(out)
            flows = got["flows"]
            marker = fp.counters()
            tbf = topo.bottleneck_stats()
            coalesced = backlog_coalesced(topo.snd_ns) - coalesced0
        time.sleep(0.3)     # the sockets' tallies reach ets_stats at close
        st = att.stats_by_netns()
    s = st[got["netns"]]
    r = next(v for k, v in st.items() if k != got["netns"])
    print(f"bottleneck: {tbf['drops']} tail drops, {marker['drop_loss']} random drops, "
          f"{marker['mark_step']} CE marks; sender: {coalesced} segments coalesced in "
          f"backlogs")
    print("sender:", {k: s[k] for k in ("negotiated", "missing", "samples", "parse_calls")},
          "receiver:", {k: r[k] for k in ("negotiated", "missing", "sent", "reserve_nospace")})
    for i, f in enumerate(flows):
        print(f"flow {i}: {f['retrans']} retransmissions; Network_RTT samples "
              f"{f['samples_at_loss']} when the first was seen, {f['samples']} at the end; "
              f"flags {f['flags']:#x}")
    lossy = [f for f in flows if f["samples_at_loss"] is not None]
    assert tbf["drops"] + marker["drop_loss"] > 0 and len(lossy) >= LOSS_FLOWS // 2, \
        "most flows must retransmit while they send: else this checks nothing"
    assert r["reserve_nospace"] > 0, "no receiver ACK without room for ETS: no SACK recovery"
    assert s["negotiated"] == r["negotiated"] == LOSS_FLOWS
    assert s["missing"] == 0 and r["missing"] == 0, "ETS turned off on a healthy peer"
    for i, f in enumerate(flows):
        assert f["flags"] & ETS_F_ENABLED and not f["flags"] & ETS_F_DISABLED, \
            f"flow {i}: ETS off at the sender"
    for i, f in enumerate(flows):
        assert f["samples_at_loss"] is None or f["samples"] > f["samples_at_loss"], \
            f"flow {i}: no Network_RTT sample after its first loss"


# The same two ACKs, forged and delivered while the sender's socket is owned
# by its user, so that the kernel coalesces them in the backlog every time:
# the user is held in send() by a buffer whose pages fault into a
# userfaultfd the client serves only after the injection (UFFDIO_* are
# include/uapi/linux/userfaultfd.h's, x86-64 numbers).
COAL_SEGS = 12                  # data outstanding when the ACKs come
COAL_SEG_BYTES = 1432           # the veth's MSS less the 16 bytes of ETS
COAL_ACK1_SEGS, COAL_ACK2_SEGS = 1, 5   # 4 segments apart: past the 3 MSS rule
COAL_SACK_SEGS = ((7, 8), (9, 10), (11, 12))    # three blocks: no room for ETS
COAL_CLIENT = ETS_SK_LOOKUP + r"""
import fcntl, mmap, select, threading
dst, port, pins, nbytes = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
flags = lambda: ets_sk(s, pins)["flags"]  # noqa: E731
NR_USERFAULTFD, UFFD_API = 323, 0xAA
UFFDIO_API, UFFDIO_REGISTER, UFFDIO_ZEROPAGE = 0xC018AA3F, 0xC020AA00, 0xC020AA04
UFFDIO_REGISTER_MODE_MISSING = 1
HELD_PAGES = 16
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)   # send() never waits for room
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.connect((dst, port))
for _ in range(3):          # acknowledged: the window opens, the test captures an ACK
    s.sendall(b"x" * 3000)
    time.sleep(0.1)
print(json.dumps({"port": s.getsockname()[1], "flags": flags()}), flush=True)
sys.stdin.readline()        # the server's ACKs go nowhere from here on
s.sendall(b"y" * nbytes)
uffd = libc.syscall(NR_USERFAULTFD, os.O_CLOEXEC | os.O_NONBLOCK)
fcntl.ioctl(uffd, UFFDIO_API, bytearray(struct.pack("=QQQ", UFFD_API, 0, 0)))
page = mmap.PAGESIZE
region = mmap.mmap(-1, HELD_PAGES * page, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
region[:page] = b"z" * page
base = ctypes.addressof(ctypes.c_char.from_buffer(region))
held = (base + page, (HELD_PAGES - 1) * page)
fcntl.ioctl(uffd, UFFDIO_REGISTER, bytearray(struct.pack("=QQQQ", *held,
                                                         UFFDIO_REGISTER_MODE_MISSING, 0)))
sender = threading.Thread(target=s.sendall, args=(memoryview(region),))
sender.start()
if not select.select([uffd], [], [], 5)[0]:
    sys.exit("send() did not fault")
print(json.dumps({"held": 1}), flush=True)
sys.stdin.readline()        # the test injected its ACKs
fcntl.ioctl(uffd, UFFDIO_ZEROPAGE, bytearray(struct.pack("=QQQq", *held, 0, 0)))
sender.join()
time.sleep(0.2)
print(json.dumps({"flags": flags()}), flush=True)
s.close()
"""


def forged_ack(ack, ack_no, sacks):
    """Injector argument: a pure ACK like the captured one (the server's
    to the client: its seq, window, timestamps) acknowledging ack_no, with
    the SACK blocks sacks ((start, end), ...) and no ETS option."""
    from scapy.all import IP, TCP
    ts = dict(ack[TCP].options)["Timestamp"]
    opts = bytes([1, 1, 8, 10]) + (ts[0] + 1).to_bytes(4, "big") + ts[1].to_bytes(4, "big")
    opts += bytes([1, 1, 5, 2 + 8 * len(sacks)]) + b"".join(
        a.to_bytes(4, "big") + b.to_bytes(4, "big") for a, b in sacks)
    t = ack[TCP]
    tcp = (t.sport.to_bytes(2, "big") + t.dport.to_bytes(2, "big") +
           t.seq.to_bytes(4, "big") + ack_no.to_bytes(4, "big") +
           bytes([(5 + len(opts) // 4) << 4, 0x10]) + t.window.to_bytes(2, "big") +
           bytes(4) + opts)
    ip = (bytes([0x45, 0]) + (20 + len(tcp)).to_bytes(2, "big") + bytes(4) +
          bytes([64, 6, 0, 0]) + bytes(map(int, ack[IP].src.split("."))) +
          bytes(map(int, ack[IP].dst.split("."))))
    return (ip + tcp).hex()


def test_ets_coalesced_acks_are_no_silence(tmp_path):
    """Two ACKs with the same options (three SACK blocks, no room for ETS),
    4 segments apart, reach the sender while its user holds the socket:
    the kernel appends the second to the first in the backlog
    (TcpExtTCPBacklogCoalesce + 1) and only the control block's ack_seq
    moves. snd_una then moves by both; the program must have seen both
    too, and keep ETS on. Before, it read the first ACK's header, found
    snd_una 4 segments past the last acknowledgment it saw and turned ETS
    off as for a silent peer (`missing` + 1)."""
    from scapy.all import TCP
    with EtsAttached("coal") as att, VethPair() as vp:
        pcap = tmp_path / "coal.pcap"
        cap = capture(vp.a, "eta", pcap)
        srv = bbrtest.python_in(vp.b, LOSS_SERVER, ADDR_B, PORT, 1, cgroup=att.cg)
        cli = None
        try:
            assert "LISTEN" in srv.stdout.readline()
            cli = bbrtest.python_in(vp.a, COAL_CLIENT, ADDR_B, PORT, att.pins,
                                    COAL_SEGS * COAL_SEG_BYTES, cgroup=att.cg,
                                    stdin=subprocess.PIPE)
            first = json.loads(cli.stdout.readline() or "{}")
            assert "port" in first, f"client failed: {cli.stderr.read()}"
            time.sleep(0.3)
            acks = [p for p in read_pcap(pcap) if TCP in p and p[TCP].dport == first["port"]
                    and not len(p[TCP].payload)]
            assert acks, "no pure ACK of the server's to copy"
            last = acks[-1]
            una = last[TCP].ack
            # the server's ACKs from here on are dropped on its side
            netns.netns_exec(vp.b, ["ip", "route", "add", "blackhole", ADDR_A + "/32"])
            cli.stdin.write("send\n")
            cli.stdin.flush()
            held = json.loads(cli.stdout.readline() or "{}")
            assert "held" in held, f"client failed: {cli.stderr.read()}"
            seg = lambda n: (una + n * COAL_SEG_BYTES) & 0xFFFFFFFF  # noqa: E731
            sacks = [(seg(a), seg(b)) for a, b in COAL_SACK_SEGS]
            st0, coal0 = att.stats(), backlog_coalesced(vp.a)
            ets.inject(vp.a, [forged_ack(last, seg(COAL_ACK1_SEGS), sacks),
                              forged_ack(last, seg(COAL_ACK2_SEGS), sacks)])
            coalesced = backlog_coalesced(vp.a) - coal0
            cli.stdin.write("go\n")
            cli.stdin.flush()
            after = json.loads(cli.stdout.readline() or "{}")
            assert "flags" in after, f"client failed: {cli.stderr.read()}"
            st1 = att.stats()
        finally:
            bbrtest.reap(cli, srv)
            stop_capture(cap)
    print(f"ACKs of {COAL_ACK1_SEGS} and {COAL_ACK2_SEGS} segments past snd_una {una}, "
          f"SACK {sacks}: {coalesced} coalesced in the backlog; sender's flags "
          f"{first['flags']:#x} before, {after['flags']:#x} after; missing "
          f"{st0['missing']} -> {st1['missing']}")
    assert coalesced == 1, "the two ACKs were not coalesced: the test checks nothing"
    assert st1["missing"] == st0["missing"] == 0, "a coalesced ACK taken for silence"
    assert after["flags"] & ETS_F_ENABLED and not after["flags"] & ETS_F_DISABLED, \
        "ETS off at the sender"


def test_ets_network_rtt_against_emulator():
    from labkit.path import EmulatedPath, linkem_available
    if not linkem_available():
        pytest.fail("linkem not built (make): the emulator provides the known delay")
    with EtsAttached("emu") as att, \
            EmulatedPath(rate_mbit=50, rtt_ms=EMU_RTT_MS, backend="linkem", log=False) as p:
        rows = transfer(p.snd_ns[0], p.rcv_ns, p.rcv_addr, att.cg, att.cg, att.pins, count=MSG_COUNT, gap=MSG_GAP_S, size=200,
                        read_delay=SERVER_READ_DELAY_S)
        # the close's FIN exchange (a round trip or two) brings the
        # sockets' tallies into the counters printed below
        time.sleep(CLOSE_RTTS * EMU_RTT_MS / 1000)
        st = att.stats()
    rows = [r for r in rows if "net" in r and r["samples"]]
    assert len(rows) >= MSG_COUNT // 2, f"too few samples: {rows[:3]}"
    # Skip the first rows (quickack at connection start).
    tail = rows[5:]
    rtt_us = EMU_RTT_MS * 1000
    tol = max(EMU_TOL_FRAC * rtt_us, EMU_TOL_FLOOR_US)
    nets = sorted(r["net"] for r in tail)
    totals = sorted(r["total"] for r in tail)
    med_net, med_tot = nets[len(nets) // 2], totals[len(totals) // 2]
    worst = max(abs(n - rtt_us) for n in nets)
    within = sum(abs(n - rtt_us) <= tol for n in nets) / len(nets)
    print(f"emulated RTT {rtt_us} us; Network_RTT median {med_net} us "
          f"(error {med_net - rtt_us:+d} us, worst {worst} us, tol {tol:.0f}, "
          f"{within:.0%} within tol); "
          f"Total_RTT median {med_tot} us; rcv delay median "
          f"{sorted(r['del'] for r in tail)[len(tail) // 2]} us; counters {st}")
    assert abs(med_net - rtt_us) <= tol
    # A sample can carry a scheduling hiccup of the 2 shared cores (one of
    # 7.5 ms was seen under load), so bound the bulk tightly and the worst
    # loosely: leaving the ACK delay in would be off by ~40 ms on every one.
    assert within >= 0.9, "90 % of Network_RTT samples within tol of the emulated RTT"
    assert worst <= EMU_WORST_FRAC * rtt_us, "no Network_RTT sample grossly off"
    # Delayed ACKs in play: Total_RTT well above the path's RTT.
    assert med_tot >= rtt_us + 10000, "Total_RTT must include the receiver's ACK delay"
    assert all(r["net"] <= r["total"] for r in tail)


def inject_into_held_flow(tmp_path, tag, build):
    """A client sends 3 messages to the server, both in an ETS cgroup, then
    holds its connection open; build(ack) turns a copy of the server's last
    pure ACK into the packets injected towards the client. Returns the
    client's rows before the injection, the ETS counters before and after
    it, and the client's state after it as it closes."""
    from scapy.all import TCP
    with EtsAttached(tag) as att, VethPair() as vp:
        pcap = tmp_path / f"{tag}.pcap"
        cap = capture(vp.a, "eta", pcap)
        srv = bbrtest.python_in(vp.b, SERVER, ADDR_B, PORT, 0.0, cgroup=att.cg)
        cli = None
        try:
            assert "LISTEN" in srv.stdout.readline()
            cli = bbrtest.python_in(vp.a, CLIENT, ADDR_B, PORT, att.pins, 3, 0.2, 500, "hold",
                                    cgroup=att.cg, stdin=subprocess.PIPE)
            rows = []
            while True:
                line = cli.stdout.readline()
                assert line, f"client died: {cli.stderr.read()}"
                r = json.loads(line)
                if "held" in r:
                    break
                rows.append(r)
            st0 = att.stats()
            time.sleep(0.3)
            acks = [p for p in read_pcap(pcap) if TCP in p and p[TCP].sport == PORT
                    and not len(p[TCP].payload) and int(p[TCP].flags) & 0x10]
            assert acks, "no pure ACK from the server to copy"
            ets.inject(vp.b, build(acks[-1]))
            time.sleep(0.3)
            # Counters before the client goes on and closes: what they
            # count from here on is the close, not the injection.
            st1 = att.stats()
            cli.stdin.write("go\n")
            cli.stdin.flush()
            after = json.loads(cli.stdout.readline())
        finally:
            bbrtest.reap(cli, srv)
            stop_capture(cap)
    return rows, st0, st1, after


def test_ets_malformed_options_counted_and_ignored(tmp_path):
    variants = {}

    def build(ack):
        variants.update(ets.malformed_variants(ack))
        return list(variants.values())

    rows, st0, st1, after = inject_into_held_flow(tmp_path, "bad", build)
    before = rows[-1]
    d_parse = [b - a for a, b in zip(st0["rej_parse"], st1["rej_parse"])]
    d_sample = [b - a for a, b in zip(st0["rej_sample"], st1["rej_sample"])]
    assert bytes.fromhex(variants["kind254_len0"].split(",")[0]).find(
        bytes([ETS_KIND, 0, 1, 1])) > 0, "length 0 must be in the bytes sent"
    print("injected:", list(variants), "rej_parse delta [ok,short,kind,exid,len]:",
          d_parse, "rej_sample delta [ok,noack,tsecr0,future,old,unit,del>rtt]:", d_sample)
    print("client before:", before, "after:", after)
    # The bytes on the wire are the variants' own (bbrtest.ets builds them
    # without a packet library), so a length of 0 arrives as 0. The
    # kernel's option walk stops at a length below 2 as at an option
    # running past the header: both are short (ETS_ERR_SHORT); a kind-254
    # option of length 2 (no room for the ExID) or a wrong length is a
    # length error, another ExID an ExID error (docs/ets.md).
    assert d_parse[3] == 1, "another experiment's ExID counted as an ExID error"
    assert d_parse[4] >= 2, "wrong length and kind 254 of length 2 counted as ETS_ERR_LEN"
    assert d_parse[1] >= 1, "kind 254 of length 0 counted as ETS_ERR_SHORT"
    assert d_parse[1] + d_parse[4] == 4, \
        "wrong length, truncated, length 0 and 2: four parse rejections"
    assert d_sample[3] == 1, "TSecr from the future counted"
    assert d_sample[4] == 1, "an echo of 59 s ago rejected as implausible"
    assert d_sample[6] == 1, "absurd EcrDel counted"
    assert d_sample[5] == 1, "reserved unit counted"
    assert st1["samples"] == st0["samples"], "no sample from a malformed option"
    assert st1["missing"] == st0["missing"] == 0, "malformed is not missing"
    assert after["net"] == before["net"] and after["samples"] == before["samples"]
    assert after["flags"] & 0x04 and not after["flags"] & 0x08, "ETS still enabled"
    assert after["rejected"] - before["rejected"] >= 9


SILENT_MSGS = 60
SILENT_GAP_S = 0.05
SILENT_MSG_BYTES = 3000         # three segments at the veth MTU, each ACKed
SILENT_DETACH_AFTER = 15        # messages sent before the receiver's ETS goes
# Messages after the detach by which the sender must have noticed: 3 MSS
# (ETS_MISSING_LIMIT full segments, 4344 bytes) is 1.5 messages of ACKs
# without the option; the check runs at the next write, and a row is read a
# gap after its message, so the detach itself lands up to a message late.
SILENT_OFF_WITHIN = 4


def test_ets_turns_off_when_the_peer_goes_silent():
    """The receiver's ETS program is detached mid-transfer: its ACKs carry
    the RFC 7323 timestamp only, match the kernel's header prediction and
    take the fast path, where no parse callback runs. The sender must still
    notice (ETS_MISSING_LIMIT segments' worth acknowledged past the last
    ACK with the option, checked when it writes) and turn ETS off: flags
    ENABLED cleared, DISABLED set, `missing` counted. Before, it stayed
    enabled for good and bbr_swift saw a stale signal forever."""
    with EtsAttached("sc") as cli_att, EtsAttached("ss") as srv_att, VethPair() as vp:
        srv = bbrtest.python_in(vp.b, SERVER, ADDR_B, PORT, 0.0, cgroup=srv_att.cg)
        cli = None
        try:
            assert "LISTEN" in srv.stdout.readline()
            cli = bbrtest.python_in(vp.a, CLIENT, ADDR_B, PORT, cli_att.pins, SILENT_MSGS,
                                    SILENT_GAP_S, SILENT_MSG_BYTES, cgroup=cli_att.cg)
            rows = []
            for line in cli.stdout:
                rows.append(json.loads(line))
                if len(rows) == SILENT_DETACH_AFTER:
                    st0 = cli_att.stats()
                    (srv_att.pins / "link").unlink()    # the receiver's ETS goes
            cli.wait(timeout=CMD_TIMEOUT_S)
        finally:
            bbrtest.reap(cli, srv)
        st1 = cli_att.stats()
    flags = [r.get("flags") for r in rows]
    print("sender's ets_sk flags per message:", flags)
    print("missing before/after the detach:", st0["missing"], st1["missing"],
          "samples:", st0["samples"], st1["samples"])
    assert len(rows) == SILENT_MSGS
    before = flags[:SILENT_DETACH_AFTER]
    assert all(f & 0x04 and not f & 0x08 for f in before), "ETS on before the detach"
    off_at = next((i for i, f in enumerate(flags) if f & 0x08), None)
    assert off_at is not None, "the sender never noticed the silent peer"
    assert off_at < SILENT_DETACH_AFTER + SILENT_OFF_WITHIN, \
        f"noticed {off_at - SILENT_DETACH_AFTER} messages after the detach"
    assert all(f & 0x08 and not f & 0x04 for f in flags[off_at:]), "off for good"
    assert st1["missing"] - st0["missing"] == 1


SYN_SPORT = 40123
SYN_ISN = 1000


def crafted_syn(ets_opt):
    """A SYN from ADDR_A to the server: MSS 1460 and ets_opt, padded with
    NOPs to a 4-byte boundary; bytes as sent (checksums: the injector)."""
    opts = bytes([2, 4, 0x05, 0xB4]) + ets_opt
    opts += bytes([1]) * (-len(opts) % 4)
    tcp = (SYN_SPORT.to_bytes(2, "big") + PORT.to_bytes(2, "big") +
           SYN_ISN.to_bytes(4, "big") + bytes(4) +
           bytes([(5 + len(opts) // 4) << 4, 0x02]) + (64240).to_bytes(2, "big") +
           bytes(4) + opts)
    ip = (bytes([0x45, 0]) + (20 + len(tcp)).to_bytes(2, "big") + bytes(4) +
          bytes([64, 6, 0, 0]) + bytes(map(int, ADDR_A.split("."))) +
          bytes(map(int, ADDR_B.split("."))))
    return (ip + tcp).hex()


def synack_options(pcap):
    """The TCP option bytes of the server's SYN-ACK to SYN_SPORT."""
    from scapy.all import IP, TCP
    for p in read_pcap(pcap):
        if TCP in p and p[TCP].dport == SYN_SPORT and int(p[TCP].flags) & 0x12 == 0x12:
            raw = bytes(p[IP])
            ihl = (raw[0] & 0xF) * 4
            return raw[ihl + 20: ihl + (raw[ihl + 12] >> 4) * 4]
    return None


def test_ets_synack_answers_only_a_well_formed_offer(tmp_path):
    """A SYN whose ETS option has the data segments' length (14, not 16)
    is no offer: its SYN-ACK must carry no ETS and no room reserved for it
    (before, 16 bytes of NOPs: reserved, then nothing written). A SYN with a
    well-formed 16-byte offer, the control, gets ETS on its SYN-ACK."""
    good = bytes([ETS_KIND, 16, ETS_EXID >> 8, ETS_EXID & 0xFF]) + bytes(8) + \
        bytes(2) + (8000).to_bytes(2, "big")
    bad = bytes([ETS_KIND, 14, ETS_EXID >> 8, ETS_EXID & 0xFF]) + bytes(10)
    got = {}
    with EtsAttached("syn") as att, VethPair() as vp:
        srv = bbrtest.python_in(vp.b, SERVER, ADDR_B, PORT, 0.0, cgroup=att.cg)
        try:
            assert "LISTEN" in srv.stdout.readline()
            for name, opt in (("len14", bad), ("len16", good)):
                pcap = tmp_path / f"{name}.pcap"
                cap = capture(vp.a, "eta", pcap)
                try:
                    ets.inject(vp.a, [crafted_syn(opt)])
                    time.sleep(0.3)
                finally:
                    stop_capture(cap)
                got[name] = synack_options(pcap)
        finally:
            bbrtest.reap(srv)
    for name, o in got.items():
        print(f"SYN with a {name} ETS option: SYN-ACK options {o.hex() if o else None}")
    assert got["len16"] is not None and got["len14"] is not None, "no SYN-ACK captured"
    assert bytes([ETS_KIND, 16]) in got["len16"], "control: a good offer is answered"
    assert ETS_KIND not in got["len14"], "ETS answered to a malformed offer"
    assert got["len14"].count(1) < 4, f"NOP padding where nothing was written: {got['len14'].hex()}"
    assert len(got["len14"]) == 4, "the SYN-ACK carries MSS only, as the SYN offered"


def test_ets_malformed_option_resets_the_missing_run(tmp_path):
    """Segments without ETS turn it off after ETS_MISSING_LIMIT (3) in a
    row; a malformed ETS option in between resets the run (docs/ets.md).
    Injected: two copies of an ACK with the option removed, one with a
    kind-254 option of length 2, two more without: at most two in a row,
    so ETS stays on. Before, the malformed one did not reset the run and
    the fourth missing segment turned ETS off."""
    def build(ack):
        gone = ets.without_option(ack)
        bad = ets.malformed_variants(ack)["kind254_len2"]
        return [gone, gone, bad, gone, gone]

    _, st0, st1, after = inject_into_held_flow(tmp_path, "run", build)
    d_len = st1["rej_parse"][4] - st0["rej_parse"][4]
    print("injected: 2 without ETS, kind 254 of length 2, 2 without; missing",
          st0["missing"], "->", st1["missing"], "length errors +", d_len,
          "client flags", after["flags"])
    assert d_len == 1, "the malformed option counted as a length error"
    assert st1["missing"] == st0["missing"] == 0, "the run was not reset"
    assert after["flags"] & 0x04 and not after["flags"] & 0x08, "ETS still enabled"


SWIFT_OBJ = REPO / "bpf" / "bbr_swift.bpf.o"
SWIFT_TARGET_US = 1_000_000     # far above the veth RTT: the target is in force


def swift_status(name, dport):
    """`bbrctl stat NAME --json`: the swift status of the socket to dport."""
    cp = bbrtest.bbrctl("stat", name, "--json", check=0)
    recs = [r for r in json.loads(cp.stdout) if r.get("dport") == dport]
    return recs[0]["swift"]["status"] if recs else None


def test_swift_reports_no_ets_once_the_peer_goes_silent():
    """bbr_swift on both ends through `bbrctl attach` (with ETS); the
    receiver's cgroup is detached mid-transfer. Once the sender's ETS
    program turns ETS off (the silent peer), `bbrctl stat` must say
    no_ets: ETS is off for the connection. Before, it said stale (a signal
    only late) for good, and an operator could not tell the two apart."""
    name = bbrtest.own_cc_name("esi")
    make_cg = lambda tag: bbrtest.Cgroup(f"{NS_PREFIX}-{tag}", kill=True)  # noqa: E731
    statuses = {}
    with bbrtest.register_cc(SWIFT_OBJ, loader="bbrctl", as_name=name), \
            make_cg("swc") as ccg, make_cg("sws") as scg, VethPair() as vp:
        attached = []
        try:
            for cg in (ccg, scg):
                bbrtest.bbrctl("attach", "--cgroup", str(cg.path), "--cc", name, check=0)
                attached.append(cg)
            bbrtest.bbrctl("set", "--cgroup", str(ccg.path), name,
                           f"target_rtt_us={SWIFT_TARGET_US}", check=0)
            srv = bbrtest.python_in(vp.b, SERVER, ADDR_B, PORT, 0.0, cgroup=scg.path)
            cli = None
            try:
                assert "LISTEN" in srv.stdout.readline()
                cli = bbrtest.python_in(vp.a, CLIENT, ADDR_B, PORT,
                                        bbrtest.cc.pin_layout()["PIN_SHARED"], SILENT_MSGS,
                                        SILENT_GAP_S, SILENT_MSG_BYTES, cgroup=ccg.path)
                n = 0
                for line in cli.stdout:
                    n += 1
                    if n == SILENT_DETACH_AFTER:
                        statuses["before"] = swift_status(name, PORT)
                        bbrtest.bbrctl("detach", "--cgroup", str(scg.path), check=0)
                        attached.remove(scg)
                    if n == SILENT_MSGS - 5:
                        statuses["after"] = swift_status(name, PORT)
                        flags = json.loads(line).get("flags")
                cli.wait(timeout=CMD_TIMEOUT_S)
            finally:
                bbrtest.reap(cli, srv)
        finally:
            for cg in attached:
                bbrtest.bbrctl("detach", "--cgroup", cg.path, timeout=CMD_TIMEOUT_S)
            bbrtest.bbrctl("set", "--cgroup", ccg.path, name, "--reset", timeout=CMD_TIMEOUT_S)
    print("bbr_swift status before/after the receiver's detach:", statuses,
          "sender's ets_sk flags at the end:", flags)
    assert statuses["before"] == "active", statuses
    assert flags & 0x08, "the sender's ETS noticed the silent peer"
    assert statuses["after"] == "no_ets", statuses
