# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""bbrctl set / params: runtime parameters per cgroup, per socket, default.

A loaded bbr3 keeps 64 parameter sets; `bbrctl set --cgroup P bbr3 k=v`
gives cgroup P its own set and its sockets pick it at creation and at every
round start; `set --socket COOKIE` gives one live socket a set of its own.
These tests check the command's success and error paths (every error exits
2 and changes nothing) and that two cgroups at once run with different
parameters: a socket of a cgroup with ecn_enable=1 becomes ECN-eligible
(visible in the state record), a socket of the other does not until `set`
changes its cgroup, or the socket, while it runs.

Each test creates its own cgroups (cts<pid>...) and network namespace
(cts<pid>...) with 198.18.250.1 on its loopback, loads bbr3 or bbr_swift
under a name of its own (B3, BS: `bbrctl load --name`), and removes them
all in finally blocks / fixtures.
"""

import json
import os
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

import bbrtest
from bbrtest import cgroup2_root
from bbrtest.ctl import bbrctl, list_json, pin_dir, struct_ops_maps
from conftest import PINS, make_target

# bbr3 and bbr_swift as these tests load them (`bbrctl load --name`): an
# operator's bbr3 and bbr_swift may stay loaded meanwhile.
B3 = bbrtest.own_cc_name("b3s")
BS = bbrtest.own_cc_name("bss")
L4 = bbrtest.own_cc_name("b4s")         # bbr3_l4s, the L4S mode's object

ADDR = "198.18.250.1"           # on the test namespace's loopback
PORT = 5401
ROUND_WAIT_S = 3.0              # a change must reach a live socket by then
FREE_TIMEOUT_S = 2.0            # struct_ops maps are freed asynchronously
XFER_BYTES = 2_000_000          # per burst: many rounds on loopback

# In the netns and the cgroup: a bbr3 connection to itself; "xfer N" sends
# N bytes (a thread drains them) and answers "ok <local port>".
PEER = r"""
import socket, sys, threading
addr, port = sys.argv[1], int(sys.argv[2])
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((addr, port)); l.listen(4)
c = socket.socket(); c.setsockopt(6, 13, sys.argv[3].encode()); c.connect((addr, port))
a, _ = l.accept()
def drain():
    while a.recv(1 << 16): pass
threading.Thread(target=drain, daemon=True).start()
print("ready", c.getsockname()[1], flush=True)
for line in sys.stdin:
    n = int(line.split()[1]); c.sendall(b"x" * n)
    print("ok", c.getsockname()[1], flush=True)
"""


@pytest.fixture(scope="module", autouse=True)
def built():
    make_target("loader/bbrctl", "bpf/bbr3.bpf.o", "bpf/bbr3_l4s.bpf.o")


@contextmanager
def loaded(name, obj_name):
    """obj_name's object (bbr3, bbr_swift) loaded as name."""
    bbrctl("load", "--name", name, obj_name, check=0)
    (e,) = [e for e in list_json() if e["name"] == name]
    try:
        yield e
    finally:
        if pin_dir(name).exists():
            bbrctl("unload", name, check=0)
        # Only our own map: closed sockets of earlier runs may still hold
        # older maps of the same object.
        assert name not in bbrtest.available_ccs() and not pin_dir(name).exists()
        mid = e["struct_ops_map_id"]
        assert bbrtest.wait_for(lambda: mid not in struct_ops_maps(), FREE_TIMEOUT_S), \
            f"map {mid} left {FREE_TIMEOUT_S} s after unload"


@pytest.fixture
def bbr3():
    with loaded(B3, "bbr3") as e:
        yield e



@contextmanager
def cgroup(tag):
    with bbrtest.Cgroup(f"cts{os.getpid()}{tag}") as cg:
        yield cg.path


@contextmanager
def netns():
    with bbrtest.Namespaces(f"cts{os.getpid()}") as nss:
        name = nss.names[0]
        bbrtest.netns.add_addr(name, "lo", f"{ADDR}/32")
        # ECN negotiated on every connection: ecn_enable decides the rest.
        bbrtest.netns.sysctl(name, {"net.ipv4.tcp_ecn": 1})
        yield name


@contextmanager
def peer(ns, cg, port, cc=B3):
    """PEER in netns ns, moved into cgroup cg before it opens a socket."""
    p = bbrtest.python_in(ns, PEER, ADDR, port, cc, cgroup=cg, stdin=subprocess.PIPE,
                          stderr=None)
    try:
        words = p.stdout.readline().split()
        assert words[:1] == ["ready"], f"peer did not start: {words}"
        p.sport = int(words[1])
        p.port, p.cc = port, cc
        yield p
    finally:
        bbrtest.reap(p)


def xfer(p, n=XFER_BYTES):
    p.stdin.write(f"xfer {n}\n")
    p.stdin.flush()
    assert p.stdout.readline().split()[0] == "ok"


def record(p, cc=B3):
    """The state record of p's client socket."""
    recs = json.loads(bbrctl("stat", "--json", cc, check=0).stdout)
    mine = [r for r in recs if r["sport"] == p.sport and r["dport"] == p.port]
    assert len(mine) == 1, f"client socket :{p.sport} not in stat: {recs}"
    return mine[0]


def settle(p, pred):
    """Send bursts until pred(record) holds or ROUND_WAIT_S passes."""
    deadline = time.monotonic() + ROUND_WAIT_S
    while True:
        xfer(p)
        r = record(p, p.cc)
        if pred(r) or time.monotonic() > deadline:
            return r


def set_json(*args):
    return json.loads(bbrctl("set", "--json", *args, check=0).stdout)


# ---- two cgroups at once ----------------------------------------------------------

@pytest.mark.kernel_matrix
def test_two_cgroups_run_different_parameters(bbr3):
    with cgroup("a") as cga, cgroup("b") as cgb, netns() as ns:
        sa = set_json("--cgroup", cga, B3, "ecn_enable=1")
        print("cgroup a:", sa["slot"], sa["params"]["ecn_enable"])
        assert sa["scope"] == "cgroup" and sa["cgroup_id"] == cga.stat().st_ino
        assert sa["slot"] >= 1 and sa["params"]["ecn_enable"] == 1
        sb = set_json("--cgroup", cgb, B3)
        assert sb["slot"] == 0 and sb["params"]["ecn_enable"] == 0, \
            "a cgroup without set must show the default set"
        with peer(ns, cga, PORT) as pa, peer(ns, cgb, PORT + 1) as pb:
            ra = settle(pa, lambda r: r["ecn_eligible"] == 1)
            rb = settle(pb, lambda r: False)     # a few bursts, nothing expected
            print(f"a: slot {ra['param_slot']} ecn_eligible {ra['ecn_eligible']}; "
                  f"b: slot {rb['param_slot']} ecn_eligible {rb['ecn_eligible']}")
            assert ra["param_slot"] == sa["slot"] and ra["ecn_eligible"] == 1
            assert rb["param_slot"] == 0 and rb["ecn_eligible"] == 0

            # A live socket follows its cgroup's new set within a round.
            sb = set_json("--cgroup", cgb, B3, "ecn_enable=1", "beta=128")
            assert sb["slot"] >= 1 and sb["slot"] != sa["slot"]
            rb = settle(pb, lambda r: r["param_slot"] == sb["slot"] and r["ecn_eligible"])
            print(f"b after set: slot {rb['param_slot']} ecn_eligible {rb['ecn_eligible']}")
            assert rb["param_slot"] == sb["slot"] and rb["ecn_eligible"] == 1

            # --reset sends a's live socket back to the default set.
            bbrctl("set", "--cgroup", cga, B3, "--reset", check=0)
            ra = settle(pa, lambda r: r["param_slot"] == 0)
            print(f"a after reset: slot {ra['param_slot']}")
            assert ra["param_slot"] == 0
            assert set_json("--cgroup", cga, B3)["slot"] == 0
        bbrctl("set", "--cgroup", cgb, B3, "--reset", check=0)


# ---- one socket -------------------------------------------------------------------

PINNED = 0x80                   # BBR_PARAM_SLOT_PINNED, include/bbr_params.h


def test_socket_has_its_own_set(bbr3):
    """`set --socket COOKIE bbr3`: the live socket runs with a set of its own
    at once, its cgroup's later sets do not move it, --reset hands it back to
    its cgroup's set; the set of a closed socket is free again."""
    with cgroup("o") as cg, netns() as ns, peer(ns, cg, PORT + 4) as p:
        cookie = record(p)["cookie"]
        s = set_json("--socket", str(cookie), B3, "ecn_enable=1")
        print("socket set:", s["slot"], s["params_from"], s["cgroup_id"])
        assert s["scope"] == "socket" and s["params_from"] == "socket" and s["slot"] >= 1
        assert s["cookie"] == cookie and s["cgroup_id"] == cg.stat().st_ino
        own = s["slot"]
        r = settle(p, lambda r: r["ecn_eligible"] == 1)
        assert r["param_slot"] == own | PINNED and r["ecn_eligible"] == 1
        # the cgroup's own set does not reach a socket with its own
        c = set_json("--cgroup", cg, B3, "beta=100")
        assert c["slot"] not in (0, own)
        assert settle(p, lambda r: False)["param_slot"] == own | PINNED
        s = set_json("--socket", str(cookie), B3, "--reset")
        assert s["params_from"] == "cgroup" and s["slot"] == c["slot"]
        assert settle(p, lambda r: r["param_slot"] == c["slot"])["param_slot"] == c["slot"]
        s = set_json("--socket", str(cookie), B3, "beta=90")
        assert s["params_from"] == "socket" and s["params"]["beta"] == 90
        own = s["slot"]
        assert settle(p, lambda r: r["param_slot"] & PINNED)["param_slot"] == own | PINNED
        assert own < c["slot"]
    # The socket closed with its set, its cgroup is gone: the next write
    # drops both entries and hands out the lowest free set, the socket's.
    cp = bbrctl("set", "--socket", str(cookie), B3, check=1)
    assert f"no {B3} socket with cookie {cookie}" in cp.stderr
    with cgroup("q") as cg2:
        c2 = set_json("--cgroup", cg2, B3, "beta=80")
        print("after close: the socket's set", own, "-> cgroup", c2["slot"])
        assert c2["slot"] == own
        bbrctl("set", "--cgroup", cg2, B3, "--reset", check=0)


# ---- bbr_swift: its target keys are rows of its parameter sets ---------------------

def test_swift_target_rtt_per_cgroup():
    make_target("bpf/bbr_swift.bpf.o")
    with loaded(BS, "bbr_swift"), cgroup("s") as cg:
        s = set_json("--cgroup", cg, BS, "target_rtt_us=100", "keep_ecn=1",
                     "ecn_enable=1", "host_target_us=40")
        print("bbr_swift set:", s["slot"], s["swift"])
        assert s["swift"] == {"target_rtt_us": 100, "stale_us": 0, "keep_ecn": 1, "raw_samples": 0,
                              "host_target_us": 40, "flags": 1, "from": "cgroup"}
        assert s["slot"] >= 1 and s["params"]["ecn_enable"] == 1
        # one configuration path: no map of bbr_swift's own any more
        shared = Path(PINS["PIN_SHARED"])
        assert not (shared / "swift_cgrp_cfg").exists() and not (shared / "swift_sk_cfg").exists()
        # flags is struct swift_cfg's own name for keep_ecn
        s = set_json("--cgroup", cg, BS, "flags=0", "target_rtt_us=250")
        assert s["slot"] >= 1 and s["swift"] == {"target_rtt_us": 250, "stale_us": 0,
                                                  "keep_ecn": 0, "raw_samples": 0,
                                                  "host_target_us": 40, "flags": 0, "from": "cgroup"}
        cp = bbrctl("set", "--cgroup", cg, BS, "target_rtt_us=3600000001", check=2)
        assert "out of range" in cp.stderr
        assert set_json("--cgroup", cg, BS)["swift"]["target_rtt_us"] == 250
        bbrctl("set", "--cgroup", cg, BS, "--reset", check=0)
        s = set_json("--cgroup", cg, BS)
        assert s["slot"] == 0 and s["swift"]["from"] == "default"


def test_swift_target_rtt_per_socket():
    """`set --socket COOKIE bbr_swift`: one live socket's own target, before
    its cgroup's and the default; --reset gives it back. The socket has no
    ETS peer, so a target in force shows as status no_ets (fallback to
    BBRv3), no target as no_target."""
    make_target("bpf/bbr_swift.bpf.o")
    with loaded(BS, "bbr_swift"), cgroup("k") as cg, netns() as ns, \
            peer(ns, cg, PORT + 2, cc=BS) as p, peer(ns, cg, PORT + 3, cc=BS) as q:
        try:
            set_json("--cgroup", cg, BS, "target_rtt_us=1000")
            r = settle(p, lambda r: r["swift"]["target_rtt_us"] == 1000)
            cookie, other = r["cookie"], record(q, BS)["cookie"]
            s = set_json("--socket", str(cookie), BS)
            print("before:", s)
            assert s["scope"] == "socket" and s["cookie"] == cookie
            assert s["cgroup_id"] == cg.stat().st_ino
            assert s["swift"]["from"] == "cgroup" and s["swift"]["target_rtt_us"] == 1000

            # its own set: a copy of its cgroup's, stale_us as there (0 = 100 ms)
            s = set_json("--socket", str(cookie), BS, "target_rtt_us=250")
            assert s["swift"] == {"target_rtt_us": 250, "stale_us": 0, "keep_ecn": 0, "raw_samples": 0,
                                  "host_target_us": 0, "flags": 0, "from": "socket"}
            r = settle(p, lambda r: r["swift"]["target_rtt_us"] == 250)
            print("after set:", r["swift"])
            assert r["swift"]["target_rtt_us"] == 250 and r["swift"]["status"] == "no_ets"
            # only that socket
            assert settle(q, lambda r: False)["swift"]["target_rtt_us"] == 1000
            assert set_json("--socket", str(other), BS)["swift"]["from"] == "cgroup"
            # one key changes one thing; the cgroup's change does not reach it
            s = set_json("--socket", str(cookie), BS, "stale_us=5000")
            assert (s["swift"]["target_rtt_us"], s["swift"]["stale_us"]) == (250, 5000)
            set_json("--cgroup", cg, BS, "target_rtt_us=0")
            r = settle(p, lambda r: r["swift"]["stale_us"] == 5000)
            assert (r["swift"]["target_rtt_us"], r["swift"]["stale_us"]) == (250, 5000)
            assert settle(q, lambda r: r["swift"]["target_rtt_us"] == 0)["swift"]["status"] == \
                "no_target"

            s = set_json("--socket", str(cookie), BS, "--reset")
            # what it goes back to (the cgroup's 0), not the 250 it still runs
            assert s["swift"]["from"] == "cgroup" and s["swift"]["target_rtt_us"] == 0
            r = settle(p, lambda r: r["swift"]["target_rtt_us"] == 0)
            print("after reset:", r["swift"])
            assert r["swift"]["target_rtt_us"] == 0 and r["swift"]["status"] == "no_target"
            assert set_json("--socket", str(cookie), BS)["swift"]["from"] == "cgroup"

            # every key per socket, those of the BBRv3 core too
            s = set_json("--socket", str(cookie), BS, "beta=100")
            assert s["params_from"] == "socket" and s["params"]["beta"] == 100
            bbrctl("set", "--socket", str(cookie), BS, "--reset", check=0)
            for args, code, words in [
                (("--socket", str(cookie), BS, "target_rtt_us=-1"), 2,
                 "not a non-negative integer"),
                (("--socket", "0", BS), 2, "a socket cookie"),
                (("--socket", "x1", BS), 2, "a socket cookie"),
                (("--socket", str(cookie), "--cgroup", str(cg), BS), 2, "exactly one of"),
                (("--socket", str(cookie + 1_000_000), BS), 1, f"no {BS} socket"),
            ]:
                cp = bbrctl("set", *args, check=code)
                print(" ".join(args), "->", cp.stderr.strip().splitlines()[0])
                assert words in cp.stderr
            assert set_json("--socket", str(cookie), BS)["swift"]["from"] == "cgroup"
        finally:
            bbrctl("set", "--cgroup", cg, BS, "--reset", check=0)


# ---- success paths --------------------------------------------------------------

def test_set_default_and_params(bbr3):
    d = set_json("--default", B3)
    assert d["scope"] == "default" and d["slot"] == 0
    beta0 = d["params"]["beta"]
    assert beta0 == 76                       # BBR_PARAMS_DEFAULT
    try:
        d = set_json("--default", B3, "beta=100", "ecn_thresh=0x40")
        assert d["params"]["beta"] == 100 and d["params"]["ecn_thresh"] == 64
        # params NAME is the default set, read and write
        p = json.loads(bbrctl("params", "--json", B3, check=0).stdout)
        assert p["params"]["beta"] == 100
        bbrctl("params", B3, "beta=90", check=0)
        assert set_json("--default", B3)["params"]["beta"] == 90
        with cgroup("c") as cg:
            # A cgroup's first set copies the default set, then applies k=v.
            c = set_json("--cgroup", cg.name, B3, "cwnd_gain=600")   # relative path
            print("new cgroup set:", c["slot"], c["params"]["beta"], c["params"]["cwnd_gain"])
            assert c["slot"] >= 1 and c["params"]["beta"] == 90
            assert c["params"]["cwnd_gain"] == 600
            assert set_json("--default", B3)["params"]["cwnd_gain"] == 512
            table = bbrctl("set", "--cgroup", cg, B3, check=0).stdout
            assert "parameter set" in table and "cwnd_gain" in table and "600" in table
            bbrctl("set", "--cgroup", cg, B3, "--reset", check=0)
            assert set_json("--cgroup", cg, B3)["slot"] == 0
    finally:
        d = set_json("--default", B3)
        bbrctl("set", "--default", B3, "--reset", check=0)
    assert set_json("--default", B3)["params"]["beta"] == beta0


def test_sets_of_removed_cgroups_are_reclaimed(bbr3):
    """63 cgroup sets; a removed cgroup's set is taken back when needed."""
    made = []
    try:
        for i in range(63):
            cg = cgroup2_root() / f"cts{os.getpid()}r{i}"
            cg.mkdir()
            made.append(cg)
            bbrctl("set", "--cgroup", cg, B3, "beta=100", check=0)
        with cgroup("x") as cg:
            cp = bbrctl("set", "--cgroup", cg, B3, "beta=100", check=1)
            print(cp.stderr.strip())
            assert "all 63 parameter sets" in cp.stderr
            made.pop().rmdir()                # removed without --reset
            s = set_json("--cgroup", cg, B3, "beta=101")
            assert s["slot"] >= 1 and s["params"]["beta"] == 101
            bbrctl("set", "--cgroup", cg, B3, "--reset", check=0)
    finally:
        for cg in made:
            bbrctl("set", "--cgroup", cg, B3, "--reset")
            cg.rmdir()


# ---- error paths: exit 2, nothing changed -------------------------------------------

@pytest.mark.parametrize("pair, words", [
    ("beta=257", "out of range 0..256"),
    ("loss_thresh=256", "out of range 1..255"),
    ("startup_pacing_gain=0", "out of range 64..4096"),
    ("ecn_enable=2", "out of range 0..1"),
    ("beta=-1", "not a non-negative integer"),
    ("beta=1.5", "not a non-negative integer"),
    ("beta=", "not a non-negative integer"),
    ("beta=99999999999999999999", "not a non-negative integer"),
    ("nosuchkey=1", "unknown key"),
    ("beta", "is not key=value"),
    ("target_rtt_us=100", "is a bbr_swift key"),
    # the L4S mode is the object bbr3_l4s: bbr3 has none of its code
    ("l4s=1", "is a L4S mode key; %s does not read it (it is bbr3_l4s's: `bbrctl load "
              "bbr3_l4s`)"),
    ("ce_discount_k=4", "bbrctl load bbr3_l4s"),
    ("profile=l4s", "has no L4S mode: profile l4s is the object bbr3_l4s"),
])
def test_set_rejects_bad_values(bbr3, pair, words):
    with cgroup("e") as cg:
        before = set_json("--default", B3)
        # the bad pair last: the good one before it must not be applied
        # (a key of its own: a key given twice is an error of its own)
        good = "loss_thresh=3" if pair.startswith("ecn_enable") else "ecn_enable=1"
        cp = bbrctl("set", "--cgroup", cg, B3, good, pair, check=2)
        print(cp.stderr.strip())
        assert words.replace("%s", B3) in cp.stderr
        assert set_json("--cgroup", cg, B3)["slot"] == 0, "a set was taken"
        cp = bbrctl("set", "--default", B3, "beta=50", pair, check=2)
        assert set_json("--default", B3) == before


def test_l4s_keys_and_profile_are_bbr3_l4s_s(bbr3):
    """bbr3_l4s takes the L4S mode's keys and profile=l4s (its sets start
    as that profile) and shows them; bbr3 neither shows them nor takes
    them (test_set_rejects_bad_values), so `set bbr3 l4s=1` cannot look
    as if it did something."""
    if b"\0received_ce\0" not in Path("/sys/kernel/btf/vmlinux").read_bytes():
        pytest.skip("this kernel has no AccECN (tcp_sock.received_ce, Linux 6.18): "
                    "bbr3_l4s does not load (test_bbrctl_kernel_checks covers the refusal)")
    shown = set_json("--default", B3)
    print("bbr3 shows:", sorted(shown["params"]))
    assert not {"l4s", "ce_discount_k", "l4s_no_probe_rtt"} & set(shown["params"])
    with loaded(L4, "bbr3_l4s"):
        d = set_json("--default", L4)
        print("bbr3_l4s default set:", d["profile"], {k: d["params"][k] for k in
                                                       ("l4s", "ce_discount_k", "cycle_rounds")})
        assert d["profile"] == "l4s" and d["params"]["l4s"] == 1
        assert d["params"]["ce_discount_k"] == 4 and d["params"]["cycle_rounds"] == 3
        d = set_json("--default", L4, "l4s=0", "ce_discount_k=2")
        assert d["params"]["l4s"] == 0 and d["params"]["ce_discount_k"] == 2
        assert d["profile"] == "custom"
        d = set_json("--default", L4, "profile=l4s")
        assert d["profile"] == "l4s" and d["params"]["ce_discount_k"] == 4
        keys = bbrctl("set", "--default", L4, check=0).stdout
        assert "l4s_no_probe_rtt" in keys and "target_rtt_us" not in keys, keys


def test_set_usage_errors(bbr3):
    with cgroup("u") as cg:
        for args, words in [
            (("set", B3, "beta=1"), "exactly one of --cgroup PATH, --default and --socket"),
            (("set", "--default", "--cgroup", cg, B3), "exactly one of"),
            (("set", "--default"), "name one congestion control"),
            (("set", "--default", B3, "beta=1", "--reset"), "--reset takes no"),
            (("set", "--default", "bad/name"), "invalid congestion control name"),
            (("stat", "--reset"), "only for set"),
            (("params", "--cgroup", cg, B3), "always works on the default set"),
        ]:
            cp = bbrctl(*args, check=2)
            print(" ".join(map(str, args)), "->", cp.stderr.strip())
            assert words in cp.stderr
    # operational failures exit 1
    cp = bbrctl("set", "--cgroup", "/nonexistent/cg", B3, check=1)
    assert "bad cgroup path" in cp.stderr
    cp = bbrctl("set", "--default", "nosuchcc", check=1)
    assert "not loaded" in cp.stderr
    cp = bbrctl("set", "--socket", "1", B3, check=1)
    assert f"no {B3} socket with cookie 1" in cp.stderr


def test_set_help_documents_keys():
    out = bbrctl("help", "set", check=0).stdout
    for key in ("--cgroup", "--default", "--socket COOKIE", "--reset", "target_rtt_us",
                "bbrctl help keys", "Example"):
        assert key in out, key
    keys = bbrctl("help", "keys", check=0).stdout
    for key in ("ecn_enable 0..1 default 0", "loss_thresh 1..255 default 5",
                "generation 2023..2026 default 2026", "target_rtt_us"):
        assert key in keys, key
    assert "set --cgroup" in bbrctl("--help", check=0).stdout


# ---- help: every command has its own text ------------------------------------------

@pytest.mark.parametrize("cmd, words", [
    ("set", "--cgroup PATH NAME"), ("params", "set --default"),
    ("hwtstamp", "enable|disable|status IFACE"), ("load", "Usage: bbrctl load"),
    ("attach", "Usage: bbrctl attach"), ("swap", "Usage: bbrctl swap"),
    ("ect1", "Usage: bbrctl ect1 attach"),
])
def test_command_help(cmd, words):
    a = bbrctl("help", cmd, check=0).stdout
    b = bbrctl(cmd, "--help", check=0).stdout
    assert a == b and words in a, f"help {cmd}: {a!r}"
    assert f"  {cmd} " in bbrctl("--help", check=0).stdout
