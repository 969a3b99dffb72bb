# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""`bbrctl load --name NEW --ecn accecn|classic bbr3` on the wire.

A copy of bbr3 registered with ECN ops flags makes the kernel negotiate ECN
for its sockets whatever net.ipv4.tcp_ecn says (the test's namespaces keep
the default, 2: accept ECN, never ask). Captured with tcpdump at the
receiver and read with scapy, one transfer per copy, both ends on the copy:

  * accecn: the SYN asks for AccECN (AE, CWR and ECE set, RFC 9768) and
    the SYN-ACK answers it (not the classic ECE-only answer); both carry
    ECT(1), the L4S codepoint; every data segment is ECN-capable. Which
    ECT the data carries is the kernel's choice: Linux 6.18 sends ECT(0)
    once the connection is established (ECT(1) on data needs a flag
    mainline does not have yet; docs/l4s.md), so the test reports it and
    asserts only that it is ECT;
  * `bbrctl ect1` on the sender's device: the accecn copy's data leaves
    ECT(1), a classic copy's stays ECT(0), and an ECN copy whose peer has no
    ECN (or only RFC 3168, with --ecn accecn-only) sends Not-ECT, where the
    kernel alone would leave ECT(0) on with nobody to echo CE;
  * classic: an RFC 3168 SYN (ECE and CWR, no AE), data ECT(0);
  * the plain bbr3 copy: no ECN at all (Not-ECT data), as before;
  * `bbrctl swap` of the accecn copy keeps its flags;
  * `bbrctl stat --json` names the negotiated mode of the sender's socket
    (`ecn`: accecn, rfc3168, off) while the transfer runs;
  * through the emulator marking at a 1 ms step: bbr3_l4s (the L4S mode,
    an object with the AccECN flags of its own) negotiates AccECN, and CE
    marks reach its mode one by one (delivered_ce), on ECT(1) data at an
    ECT(1)-only marker when ect1 is on, and none without it.
"""

import contextlib
import functools
import json
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

import bbrtest
from bbrtest.ctl import PIN_ROOT, PrivateBpffs
from bbrtest.netns import popen_in, sysctl

NS_PREFIX = "ecn"
TRANSFER_S = 1.0               # long enough for a few `bbrctl stat` samples
PORT = 5311
PIN_ECT1 = PIN_ROOT / "ect1"           # include/bbr_pins.h: ect1 attach's links
CAPTURE_PKTS = 400              # the handshake and the first data: enough
SNAPLEN = 128                   # headers only
PCAP_READY_S = 5.0              # tcpdump writes the pcap header when listening
CMD_TIMEOUT_S = 30
# IP ECN field (RFC 3168) and the TCP header's flag bits scapy names
NOT_ECT, ECT_1, ECT_0, CE = 0, 1, 2, 3
ECN_NAMES = {NOT_ECT: "Not-ECT", ECT_1: "ECT(1)", ECT_0: "ECT(0)", CE: "CE"}


# bbrctl, its exit status checked (0 unless check= says otherwise; None: any)
bbrctl = functools.partial(bbrtest.bbrctl, check=0)


@pytest.fixture
def copy_of_bbr3():
    """Load bbr3 (or obj: bbr3_l4s) under a name of this test with the
    given --ecn (or none). AccECN (--ecn accecn, or bbr3_l4s whose own flags
    ask for it) on a kernel without AccECN (before 6.18: no tcp_sock
    received_ce in its BTF, the same probe as bbrctl's) skips the test,
    saying so: bbrctl refuses it there (test_accecn_refused_without_kernel_accecn)."""
    loaded = []

    def load(tag, ecn=None, obj="bbr3"):
        if (ecn == "accecn" or obj == "bbr3_l4s") and not kernel_has_accecn():
            pytest.skip("this kernel has no AccECN (no tcp_sock.received_ce in its BTF)")
        name = bbrtest.own_cc_name(tag)
        bbrctl("load", "--name", name, *(["--ecn", ecn] if ecn else []), obj)
        loaded.append(name)
        return name
    yield load
    for name in loaded:
        bbrctl("unload", name, check=None)
    assert not set(loaded) & set(bbrtest.available_ccs())


def kernel_has_accecn():
    return b"\0received_ce\0" in Path("/sys/kernel/btf/vmlinux").read_bytes()


@pytest.mark.kernel_matrix
def test_accecn_refused_without_kernel_accecn():
    """Where the kernel has no AccECN, `load --ecn accecn` fails naming it and
    registers nothing; where it has, test_accecn_copy_... covers the load."""
    if kernel_has_accecn():
        pytest.skip("this kernel has AccECN: the negotiation tests cover it")
    name = bbrtest.own_cc_name("nac")
    cp = bbrctl("load", "--name", name, "--ecn", "accecn", "bbr3", check=None)
    print(cp.stderr.strip())
    assert cp.returncode == 1 and "this kernel has no AccECN" in cp.stderr, cp
    assert name not in bbrtest.available_ccs()


def stat_ecn(cc):
    """The ecn field of cc's sender-side sockets in `bbrctl stat --json`."""
    cp = bbrctl("--json", "stat", cc, check=None)
    if cp.returncode != 0:
        return []
    return [r["ecn"] for r in json.loads(cp.stdout or "[]") if r.get("dport") == PORT]


@contextlib.contextmanager
def ect1_on(ns, dev):
    """`bbrctl ect1 attach` on dev of ns for the block; detached after, even
    on failure, by the pin's name (NETNS-IFINDEX), which works also after
    the device is gone (linkem's tun goes when linkem stops)."""
    bbrctl("ect1", "attach", "--netns", ns, dev)
    cp = bbrctl("--json", "ect1", "status", "--netns", ns, dev, check=None)
    pin = json.loads(cp.stdout)[0]["pin"].rsplit("/", 1)[1] if cp.returncode == 0 else dev
    try:
        yield
    finally:
        bbrctl("ect1", "detach", pin)


def ect1_counts(ns, dev):
    """(rewritten, cleared) of ect1 on dev of ns."""
    cp = bbrctl("--json", "ect1", "status", "--netns", ns, dev)
    row, = json.loads(cp.stdout)
    assert row["state"] == "attached", row
    return row["rewritten"], row["cleared"]


def capture(tmp_path, cc, ect1=False, server_cc=None, peer_no_ecn=False):
    """A transfer with cc on both ends, captured at the receiver: the SYN,
    the SYN-ACK, the client's data segments, and the ECN modes `bbrctl
    stat` gave the sender's socket while it ran. ect1: with `bbrctl ect1`
    on the sender's device, whose counters the result then carries;
    server_cc: the receiver's CC when not cc; peer_no_ecn: the receiver's
    namespace refuses ECN (net.ipv4.tcp_ecn = 0)."""
    from scapy.all import IP, TCP, rdpcap
    pcap = tmp_path / f"{cc}-{time.monotonic_ns()}.pcap"
    with bbrtest.Topology(prefix=NS_PREFIX) as topo, \
            (ect1_on(topo.snd_ns, topo.SND_DEV) if ect1 else contextlib.nullcontext()):
        if peer_no_ecn:
            sysctl(topo.rcv_ns, {"net.ipv4.tcp_ecn": 0})
        dump = popen_in(topo.rcv_ns, ["tcpdump", "-i", topo.RCV_DEV, "-U", "-w", pcap,
                                      "-s", SNAPLEN, "-c", CAPTURE_PKTS, "tcp"],
                        stdout=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + PCAP_READY_S
            while not (pcap.exists() and pcap.stat().st_size > 0):
                assert time.monotonic() < deadline, "tcpdump did not start"
                time.sleep(0.05)
            # `bbrctl stat` takes seconds in a kernel-matrix guest: a few samples
            seconds = bbrtest.ctl.watched_seconds(TRANSFER_S, lambda: stat_ecn(cc))
            res = bbrtest.run_transfer(topo, cc, seconds=seconds, port=PORT,
                                       server_cc=server_cc or cc,
                                       sample_cb=lambda: stat_ecn(cc), sample_interval=0.2)
        finally:
            if dump.poll() is None:
                dump.terminate()
            dump.wait(timeout=CMD_TIMEOUT_S)
        counts = ect1_counts(topo.snd_ns, topo.SND_DEV) if ect1 else None
    assert res["cc"] == cc and res["bytes_received"] == res["bytes_sent"] > 0
    tcp = [p for p in rdpcap(str(pcap)) if IP in p and TCP in p]
    syn = next(p for p in tcp if p[TCP].flags.S and not p[TCP].flags.A)
    synack = next(p for p in tcp if p[TCP].flags.S and p[TCP].flags.A)
    data = [p for p in tcp if p[IP].src == topo.snd_addr and len(p[TCP].payload) > 0]
    assert data, "no data segments captured"
    seen = {m for sample in res["samples"] for m in sample}
    if ect1:
        return syn, synack, data, seen, counts
    return syn, synack, data, seen


def ecn_of(p):
    from scapy.all import IP
    return p[IP].tos & 3


def flags_of(p):
    from scapy.all import TCP
    f = p[TCP].flags
    return {"ae": bool(f.N), "cwr": bool(f.C), "ece": bool(f.E)}


@pytest.mark.kernel_matrix
# A minute a guest under TCG, and `bbrctl stat` there takes seconds a call:
# with two guests and the kernel downloads of a clean clone sharing the
# host, no sample of one 7.1 run caught the socket. make kernels runs it.
@pytest.mark.kernel_matrix_slow
def test_accecn_copy_negotiates_accecn_and_marks_ect1(tmp_path, copy_of_bbr3):
    cc = copy_of_bbr3("l4s", "accecn")
    syn, synack, data, seen = capture(tmp_path, cc)
    data_ecn = Counter(ECN_NAMES[ecn_of(p)] for p in data)
    assert seen == {"accecn"}, f"bbrctl stat ecn: {seen}"
    print(f"SYN {flags_of(syn)} {ECN_NAMES[ecn_of(syn)]}; SYN-ACK {flags_of(synack)} "
          f"{ECN_NAMES[ecn_of(synack)]}; data {dict(data_ecn)}")
    assert flags_of(syn) == {"ae": True, "cwr": True, "ece": True}, "no AccECN SYN"
    # the classic answer is ECE alone; AccECN's sets AE or CWR (RFC 9768 3.1.1)
    sa = flags_of(synack)
    assert sa["ae"] or sa["cwr"], f"SYN-ACK {sa}: not an AccECN answer"
    assert ecn_of(syn) == ECT_1 and ecn_of(synack) == ECT_1
    assert all(ecn_of(p) in (ECT_0, ECT_1) for p in data), data_ecn

    # a live swap of the copy keeps its ECN flags
    bbrctl("swap", cc)
    syn, _, _, _ = capture(tmp_path, cc)
    assert flags_of(syn) == {"ae": True, "cwr": True, "ece": True}, "swap lost --ecn"


def test_classic_copy_negotiates_rfc3168(tmp_path, copy_of_bbr3):
    cc = copy_of_bbr3("ecc", "classic")
    syn, synack, data, seen = capture(tmp_path, cc)
    assert seen == {"rfc3168"}, f"bbrctl stat ecn: {seen}"
    print(f"SYN {flags_of(syn)}; SYN-ACK {flags_of(synack)}; data "
          f"{dict(Counter(ECN_NAMES[ecn_of(p)] for p in data))}")
    assert flags_of(syn) == {"ae": False, "cwr": True, "ece": True}
    assert flags_of(synack) == {"ae": False, "cwr": False, "ece": True}
    assert all(ecn_of(p) == ECT_0 for p in data)


def test_plain_copy_stays_without_ecn(tmp_path, copy_of_bbr3):
    cc = copy_of_bbr3("noe")
    syn, _, data, seen = capture(tmp_path, cc)
    assert seen == {"off"}, f"bbrctl stat ecn: {seen}"
    assert flags_of(syn) == {"ae": False, "cwr": False, "ece": False}
    assert all(ecn_of(p) == NOT_ECT for p in data)


def test_ect1_sends_accecn_data_as_ect1(tmp_path, copy_of_bbr3):
    """`bbrctl ect1 attach` on the sender's device: the AccECN copy's data
    leaves as ECT(1), every segment; a classic copy's stays ECT(0) through
    the same device (its peer did not negotiate AccECN); detach leaves no
    pin."""
    l4s = copy_of_bbr3("e1a", "accecn")
    classic = copy_of_bbr3("e1c", "classic")
    syn, _, data, seen, (rewritten, cleared) = capture(tmp_path, l4s, ect1=True)
    data_ecn = Counter(ECN_NAMES[ecn_of(p)] for p in data)
    print(f"accecn + ect1: data {dict(data_ecn)}, ect1 rewrote {rewritten} "
          f"packets (GSO: fewer than segments)")
    assert seen == {"accecn"} and ecn_of(syn) == ECT_1
    assert data_ecn == {"ECT(1)": len(data)}, data_ecn
    assert rewritten > 0 and cleared == 0
    _, _, data, seen, (rewritten, _) = capture(tmp_path, classic, ect1=True)
    data_ecn = Counter(ECN_NAMES[ecn_of(p)] for p in data)
    print(f"classic + ect1: data {dict(data_ecn)}, ect1 rewrote {rewritten}")
    assert seen == {"rfc3168"} and data_ecn == {"ECT(0)": len(data)}, data_ecn
    assert rewritten == 0


def test_accecn_falls_back_to_rfc3168_unless_accecn_only(tmp_path, copy_of_bbr3):
    """Against a receiver with RFC 3168 ECN only: the accecn copy falls back
    to classic ECN (stat: rfc3168, data ECT(0)); accecn-only
    (TCP_CONG_NO_FALLBACK_RFC3168) runs without ECN (stat: off; its data
    Not-ECT with ect1 on the device, see the next test)."""
    l4s = copy_of_bbr3("fba", "accecn")
    strict = copy_of_bbr3("fbo", "accecn-only")
    classic = copy_of_bbr3("fbc", "classic")
    _, synack, data, seen = capture(tmp_path, l4s, server_cc=classic)
    print(f"accecn -> classic peer: SYN-ACK {flags_of(synack)}, stat {seen}, data "
          f"{dict(Counter(ECN_NAMES[ecn_of(p)] for p in data))}")
    assert seen == {"rfc3168"} and all(ecn_of(p) == ECT_0 for p in data)
    syn, _, data, seen, _ = capture(tmp_path, strict, server_cc=classic, ect1=True)
    print(f"accecn-only -> classic peer, ect1: SYN {flags_of(syn)}, stat {seen}, data "
          f"{dict(Counter(ECN_NAMES[ecn_of(p)] for p in data))}")
    assert flags_of(syn) == {"ae": True, "cwr": True, "ece": True}
    assert seen == {"off"} and all(ecn_of(p) == NOT_ECT for p in data)


def test_ect1_clears_ect_when_the_peer_has_no_ecn(tmp_path, copy_of_bbr3):
    """An ECN copy talking to a peer without ECN: the kernel leaves its
    socket's ECT on the data (clearing it is the CC's init's job, which a
    BPF CC cannot do), so CE marks would go unechoed; with ect1 on the
    device, the data leaves Not-ECT."""
    l4s = copy_of_bbr3("nea", "accecn")
    plain = copy_of_bbr3("nep")
    _, _, data, seen = capture(tmp_path, l4s, server_cc=plain, peer_no_ecn=True)
    print(f"no ect1: stat {seen}, data {dict(Counter(ECN_NAMES[ecn_of(p)] for p in data))}"
          " (the kernel's)")
    assert seen == {"off"}
    _, _, data, seen, (rewritten, cleared) = capture(tmp_path, l4s, ect1=True,
                                                     server_cc=plain, peer_no_ecn=True)
    data_ecn = Counter(ECN_NAMES[ecn_of(p)] for p in data)
    print(f"ect1: stat {seen}, data {dict(data_ecn)}, cleared {cleared}")
    assert seen == {"off"} and data_ecn == {"Not-ECT": len(data)}, data_ecn
    assert cleared > 0 and rewritten == 0


def test_ect1_errors_attach_nothing():
    with bbrtest.Topology(prefix=NS_PREFIX) as topo:
        cp = bbrctl("ect1", "attach", "--netns", topo.snd_ns, "nosuch0", check=1)
        assert "no interface" in cp.stderr
        cp = bbrctl("ect1", "attach", "--netns", topo.snd_ns, "lo", check=1)
        assert "Ethernet" in cp.stderr
        cp = bbrctl("ect1", "detach", "--netns", topo.snd_ns, topo.SND_DEV, check=1)
        assert "no ect1 attached" in cp.stderr
        with ect1_on(topo.snd_ns, topo.SND_DEV):
            cp = bbrctl("ect1", "attach", "--netns", topo.snd_ns, topo.SND_DEV, check=1)
            assert "already" in cp.stderr
            assert ect1_counts(topo.snd_ns, topo.SND_DEV) == (0, 0)
        bbrctl("ect1", "status", "--netns", topo.snd_ns, topo.SND_DEV, check=1)
    bbrctl("ect1", "bogus", check=2)
    bbrctl("ect1", "status", "--netns", "no-such-ns-e1", check=1)
    # its pin directory is not a CC name
    cp = bbrctl("load", "--name", "ect1", "bbr3", check=1)
    assert "bbrctl's own directories" in cp.stderr


def test_ect1_prune_removes_the_pins_of_gone_devices_only():
    """A device that is removed takes ect1 with it and leaves its pin:
    `ect1 status` says gone, and `ect1 prune` removes that pin and no other
    (the live device's stays attached). In a private bpffs, so that no
    other run's pins are pruned; the namespaces exist before it, so that
    its mount namespace sees them."""
    with bbrtest.Topology(prefix=NS_PREFIX, rate_mbit=100) as topo, PrivateBpffs() as priv:
        priv.bbrctl("ect1", "attach", "--netns", topo.snd_ns, topo.SND_DEV, check=0)
        priv.bbrctl("ect1", "attach", "--netns", topo.rcv_ns, topo.RCV_DEV, check=0)
        bbrtest.netns_exec(topo.snd_ns, ["ip", "link", "del", topo.SND_DEV])

        def states():
            rows = json.loads(priv.bbrctl("--json", "ect1", "status", check=0).stdout)
            return sorted((r["pin"].rsplit("/", 1)[1], r["state"]) for r in rows)

        before = states()
        cp = priv.bbrctl("ect1", "prune", check=0)
        after = states()
        print("before:", before, "| prune:", cp.stdout.strip(), "| after:", after)
        assert sorted(s for _, s in before) == ["attached", "gone"], before
        gone = [p for p, s in before if s == "gone"]
        assert cp.stdout.strip() == f"pruned {PIN_ECT1}/{gone[0]} (device gone)", cp.stdout
        assert after == [(p, s) for p, s in before if s == "attached"], after
        cp = priv.bbrctl("ect1", "prune", check=0)
        assert cp.stdout == "" and "nothing to prune" in cp.stderr, cp
        priv.bbrctl("ect1", "detach", "--netns", topo.rcv_ns, topo.RCV_DEV, check=0)
    bbrctl("ect1", "prune", "--netns", "x", check=2)      # prune looks at every namespace


def test_ecn_needs_a_name_of_its_own():
    cp = bbrctl("load", "--ecn", "accecn", "bbr3", check=2)
    assert "--name" in cp.stderr
    cp = bbrctl("load", "--name", bbrtest.own_cc_name("bad"), "--ecn", "l4s", "bbr3", check=2)
    assert "accecn" in cp.stderr and "classic" in cp.stderr
    assert bbrtest.own_cc_name("bad") not in bbrtest.available_ccs()


# The L4S mode through the lab's emulator marking CE above 1 ms of sojourn
# (an L4S AQM's step): 20 Mbit/s (or less: bbrtest.rates), 10 ms, 2 s.
L4S_RATE_MBIT = bbrtest.scaled_emulated_rate_mbit(20)
L4S_RTT_MS, L4S_STEP_US, L4S_TRANSFER_S = 10, 1000, 2.0


def l4s_transfer(cc, ect1=False, ect1_only=False, server_cc=None):
    """A transfer on cc (both ends, or server_cc at the receiver) through a
    marking bottleneck; the sender socket's last `bbrctl stat` record, and
    the CE marks linkem put on the data. ect1: `bbrctl ect1` on the sender's
    (tun) device; ect1_only: the bottleneck marks ECT(1) only, as an L4S
    AQM's L4S queue does."""
    from labkit.path import TUN_DEV, EmulatedPath
    recs = []

    def sample():
        cp = bbrctl("--json", "stat", cc, check=None)
        mine = [r for r in json.loads(cp.stdout or "[]") if r.get("dport") == PORT] \
            if cp.returncode == 0 else []
        recs.extend(mine)
        return len(mine)
    ecn = {"mode": "sojourn", "k_us": L4S_STEP_US, "ect1_only": ect1_only}
    with EmulatedPath(rate_mbit=L4S_RATE_MBIT, rtt_ms=L4S_RTT_MS, buffer_bdp=4,
                      ecn=ecn) as path, \
            (ect1_on(path.snd_ns[0], TUN_DEV) if ect1 else contextlib.nullcontext()):
        res = bbrtest.run_transfer(path, cc, seconds=L4S_TRANSFER_S, port=PORT,
                                   server_cc=server_cc or cc, sample_cb=sample,
                                   sample_interval=0.2)
        marks = path.stats()["fwd"]["ce_marked"]
    assert res["cc"] == cc and recs, res
    return recs[-1], marks, res


@pytest.mark.kernel_matrix
@pytest.mark.kernel_matrix_slow        # three transfers through the emulator
def test_l4s_mode_needs_accecn_and_counts_every_mark(copy_of_bbr3):
    """bbr3_l4s, loaded with no other command: it negotiates AccECN, stat
    shows the mode in force, and the sender's CE count (tp->delivered_ce,
    which the mode's CE-discounted samples and CE rounds read) matches what
    the emulator marked. Against a receiver with classic ECN only it falls
    back to BBRv3's normal mode, and the count is ECE's coarse one. bbr3
    itself has no L4S mode: it refuses profile=l4s, naming bbr3_l4s, and
    its sockets stay out of the mode (stat: off)."""
    l4s = copy_of_bbr3("l4m", obj="bbr3_l4s")
    classic = copy_of_bbr3("l4c", "classic")
    rec, marks, res = l4s_transfer(l4s)
    print(f"accecn: l4s_mode {rec['l4s_mode']}, ecn {rec['ecn']}, delivered_ce "
          f"{rec['delivered_ce']} of {rec['delivered']}, linkem marked {marks}, "
          f"{res['mbps']:.1f} Mbit/s")
    assert rec["ecn"] == "accecn" and rec["l4s_mode"] == "on" and rec["l4s"] == 1
    assert marks > 20, "the bottleneck marked too little to tell"
    # every mark reaches the sender, one by one: the last samples miss
    # only what was marked after them
    assert 0.8 * marks <= rec["delivered_ce"] <= marks
    rec, marks, _ = l4s_transfer(l4s, server_cc=classic)
    print(f"classic peer: l4s_mode {rec['l4s_mode']}, ecn {rec['ecn']}, delivered_ce "
          f"{rec['delivered_ce']}, linkem marked {marks}")
    assert rec["ecn"] == "rfc3168" and rec["l4s_mode"] == "fallback" and rec["l4s"] == 0
    cp = bbrctl("set", "--default", classic, "profile=l4s", check=2)
    print(f"bbr3 classic copy, set profile=l4s: {cp.stderr.strip()}")
    assert "bbrctl load bbr3_l4s" in cp.stderr, cp.stderr
    rec, _, _ = l4s_transfer(classic)
    print(f"bbr3 classic copy: l4s_mode {rec['l4s_mode']}, l4s {rec['l4s']}")
    assert rec["l4s_mode"] == "off" and rec["l4s"] == 0


def test_l4s_mode_on_ect1_through_an_l4s_only_marker(copy_of_bbr3):
    """The whole L4S path: bbr3_l4s, ect1 on the sender's device, a
    bottleneck that marks ECT(1) only. Marks happen (so the data is ECT(1)
    at the AQM) and reach the CC one by one; without ect1 the same
    bottleneck marks nothing (the data is ECT(0))."""
    cc = copy_of_bbr3("l4e", obj="bbr3_l4s")
    rec, marks, res = l4s_transfer(cc, ect1=True, ect1_only=True)
    print(f"ect1: l4s_mode {rec['l4s_mode']}, delivered_ce {rec['delivered_ce']} "
          f"of {rec['delivered']}, linkem marked {marks}, {res['mbps']:.1f} Mbit/s")
    assert rec["l4s_mode"] == "on" and marks > 20
    assert 0.8 * marks <= rec["delivered_ce"] <= marks
    rec, marks, _ = l4s_transfer(cc, ect1=False, ect1_only=True)
    print(f"no ect1: linkem marked {marks}, delivered_ce {rec['delivered_ce']}")
    assert marks == 0 and rec["delivered_ce"] == 0
