# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""bbrctl attach / detach / swap: per-cgroup CC selection and live swap.

Each test creates its own cgroup v2 directory (ctl<pid>...) under the cgroup2
root and its own network namespace (ctl<pid>...), runs loopback TCP inside
that namespace from a process placed in the cgroup, and deletes everything
(cgroup, namespace, pins, loaded CCs) in finally blocks.

Kernel CCs reno and cubic stand in for "two different CCs" in the attach
tests, so that they do not depend on bbr3 being loadable; the in-place swap
uses two builds of test_bbrctl's tiny Reno CC with one name.
"""

import json
import os
import re
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest

import bbrtest
from bbrtest import wait_for
from bbrtest.ctl import BBRCTL, PIN_ROOT, bbrctl, cgroup_progs, struct_ops_maps, unique
from bbrtest.ctl import ctl_cgroup as cgroup
from bbrtest.ctl import ctl_netns as netns
from conftest import PINS, make_target

PIN_CGROUP = Path(PINS["PIN_CGROUP"])
PORT = 5301

# A process in the netns (and cgroup) that listens, connects, accepts and
# then answers lines on stdin: "cc" -> CCs of listener, client, child;
# "tw" -> makes one extra connection and closes it client-first (TIME_WAIT).
PEER = r"""
import socket, sys
port = int(sys.argv[1])
def cc(s): return s.getsockopt(6, 13, 16).rstrip(b"\0").decode()
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", port)); l.listen(16)
c = socket.create_connection(("127.0.0.1", port)); a, _ = l.accept()
print("ready", flush=True)
for line in sys.stdin:
    cmd = line.strip()
    if cmd == "cc":
        print(cc(l), cc(c), cc(a), flush=True)
    elif cmd == "tw":
        c2 = socket.create_connection(("127.0.0.1", port)); a2, _ = l.accept()
        c2.close(); a2.recv(1); a2.close(); print("ok", flush=True)
    elif cmd == "xfer":
        c.sendall(b"x" * 100000); got = 0
        while got < 100000: got += len(a.recv(65536))
        print("ok", got, flush=True)
"""


@contextmanager
def peer(ns, cg=None, port=PORT):
    """PEER in netns ns, moved into cgroup cg before it opens any socket."""
    p = bbrtest.python_in(ns, PEER, port, cgroup=cg, stdin=subprocess.PIPE, stderr=None)
    try:
        assert p.stdout.readline().strip() == "ready", "peer did not start"
        yield p
    finally:
        bbrtest.reap(p)


def ask(p, cmd):
    p.stdin.write(cmd + "\n")
    p.stdin.flush()
    return p.stdout.readline().split()


@pytest.fixture(scope="module", autouse=True)
def built():
    make_target("loader/bbrctl", "bpf/cc_select.bpf.o", "bpf/cc_swap.bpf.o")


# ---- attach / detach --------------------------------------------------------------

@pytest.mark.kernel_matrix
def test_attach_two_cgroups_different_ccs():
    with cgroup("a") as cga, cgroup("b") as cgb, netns("n") as ns:
        bbrctl("attach", "--cgroup", cga.name, "--cc", "reno", check=0)   # relative path
        bbrctl("attach", "--cgroup", str(cgb), "--cc", "cubic", check=0)  # absolute path
        assert cgroup_progs(cga) == ["cc_select"] and cgroup_progs(cgb) == ["cc_select"]
        ids = sorted(p.name for p in PIN_CGROUP.iterdir())
        print("pinned attachments:", ids)
        assert str(cga.stat().st_ino) in ids and str(cgb.stat().st_ino) in ids
        # the attachment outlives bbrctl: sockets made now get the CC
        with peer(ns, cga, PORT) as pa, peer(ns, cgb, PORT + 1) as pb, \
                peer(ns, None, PORT + 2) as pn:
            got = (ask(pa, "cc"), ask(pb, "cc"), ask(pn, "cc"))
            print("listener/client/child CC: cgroup a", got[0], "cgroup b", got[1],
                  "no cgroup", got[2])
            assert got[0] == ["reno"] * 3
            assert got[1] == ["cubic"] * 3
            # a new netns starts with the init netns default
            assert got[2] == [Path("/proc/sys/net/ipv4/tcp_congestion_control")
                              .read_text().strip()] * 3
        bbrctl("detach", "--cgroup", cga.name, check=0)
        assert cgroup_progs(cga) == [] and cgroup_progs(cgb) == ["cc_select"]
        with peer(ns, cga) as pa:
            assert ask(pa, "cc") != ["reno"] * 3, "detached cgroup still selects reno"
        bbrctl("detach", "--cgroup", str(cgb), check=0)
        assert cgroup_progs(cgb) == []
        assert not (PIN_CGROUP / str(cga.stat().st_ino)).exists()


def test_attach_errors_leave_nothing():
    with cgroup("e") as cg:
        cases = [
            (["attach", "--cgroup", cg.name, "--cc", "nosuchcc0"], 1, "unknown congestion control"),
            (["attach", "--cgroup", f"{cg.name}-missing", "--cc", "reno"], 1, "bad cgroup path"),
            (["attach", "--cgroup", "/tmp", "--cc", "reno"], 1, "bad cgroup path"),
            (["attach", "--cc", "reno"], 2, "--cgroup"),
            (["attach", "--cgroup", cg.name], 2, "--cc"),
            (["attach", "--cgroup", cg.name, "--cc", "x" * 16], 2, "invalid"),
            (["detach", "--cgroup", cg.name], 1, "nothing attached"),
        ]
        for args, rc, msg in cases:
            cp = bbrctl(*args, check=rc)
            print(args, "->", rc, cp.stderr.strip())
            assert msg in cp.stderr, f"{args}: message lacks {msg!r}: {cp.stderr}"
            assert cgroup_progs(cg) == []
        bbrctl("attach", "--cgroup", cg.name, "--cc", "reno", check=0)
        cp = bbrctl("attach", "--cgroup", cg.name, "--cc", "cubic", check=1)
        assert "already has a congestion control" in cp.stderr
        assert cgroup_progs(cg) == ["cc_select"], "a failed attach changed the cgroup"
        bbrctl("detach", "--cgroup", cg.name, check=0)


# ---- swap of live sockets ---------------------------------------------------------

def swap(ns, frm, to, port=PORT, rc=0):
    cp = bbrctl("swap", "--json", "--netns", ns, "--from", frm, "--to", to,
                "--port", port, check=rc)
    return json.loads(cp.stdout)


@pytest.mark.kernel_matrix
def test_swap_live_sockets_and_back():
    with netns("s") as ns, peer(ns) as p:
        # sockets start with the netns default (the init netns default)
        first = ask(p, "cc")
        print("before:", first)
        start = first[0]
        assert len(set(first)) == 1
        ask(p, "tw")                        # one TIME_WAIT socket on PORT
        r = swap(ns, start, "cubic")
        print("swap", start, "-> cubic:", r)
        assert r["switched"] == 3 and r["failed"] == 0, r
        assert r["time_wait_skipped"] >= 1, r
        assert ask(p, "cc") == ["cubic"] * 3
        assert ask(p, "xfer") == ["ok", "100000"], "connection broken by the switch"
        r = swap(ns, "cubic", start)
        print("swap cubic ->", start, r)
        assert r["switched"] == 3 and ask(p, "cc") == [start] * 3
        assert ask(p, "xfer") == ["ok", "100000"]
        # filters: another port matches nothing
        r = swap(ns, start, "cubic", port=PORT + 7)
        assert r["switched"] == 0 and ask(p, "cc") == [start] * 3


def test_swap_errors():
    with netns("x") as ns:
        for args, rc, msg in [
            (["swap", "--from", "cubic"], 2, "usage"),
            (["swap", "--from", "cubic", "--to", "reno", "--netns", f"nx{os.getpid()}"], 1,
             "no network namespace"),
            (["swap", "--from", "cubic", "--to", "nosuchcc0", "--netns", ns], 1,
             "unknown congestion control"),
            (["swap", "--from", "cubic", "--to", "reno", "--port", "70000"], 2, "port"),
            (["swap", f"nl{os.getpid()}"], 1, "not loaded"),
        ]:
            cp = bbrctl(*args, check=rc)
            print(args, "->", rc, cp.stderr.strip())
            assert msg in cp.stderr


# ---- swap in place ------------------------------------------------------------------

def link_map_id(name):
    cp = subprocess.run(["bpftool", "-j", "link", "show", "pinned",
                         str(PIN_ROOT / name / PINS["PIN_LINK"])], capture_output=True, text=True)
    # bpftool 7.5 exits 255 after printing a struct_ops link: trust the JSON
    assert cp.stdout.strip(), f"bpftool link show: {cp.stderr}"
    return json.loads(cp.stdout)["map_id"]


def test_swap_in_place(cc_objs):
    name, v1 = cc_objs("sw")
    _, v2 = cc_objs("sw2", name=name)
    other, vx = cc_objs("swx")
    try:
        bbrctl("load", "--obj", v1, check=0)
        m1 = link_map_id(name)
        with netns("i") as ns:
            bbrtest.netns.sysctl(ns, {"net.ipv4.tcp_congestion_control": name})
            with peer(ns) as p:
                assert ask(p, "cc") == [name] * 3
                cp = bbrctl("swap", "--obj", v2, other, check=1)
                print("not loaded:", cp.stderr.strip())
                assert "not loaded" in cp.stderr and link_map_id(name) == m1
                assert other not in bbrtest.available_ccs()
                # an object built under another name is registered as NAME
                bbrctl("swap", "--obj", vx, name, check=0)
                mx = link_map_id(name)
                assert mx != m1 and other not in bbrtest.available_ccs()
                bbrctl("swap", "--obj", v2, name, check=0)
                m2 = link_map_id(name)
                print("struct_ops map before/after the swaps:", m1, mx, m2)
                assert m2 not in (m1, mx)
                # old sockets keep the old build and still move data
                assert ask(p, "xfer") == ["ok", "100000"]
                assert m1 in struct_ops_maps()
            with peer(ns) as p:           # new sockets via the refreshed default
                assert ask(p, "cc") == [name] * 3
            # old sockets gone and the default refreshed: the old map is freed
            assert wait_for(lambda: m1 not in struct_ops_maps(), 5.0), \
                f"old struct_ops map {m1} still held after its sockets closed"
    finally:
        bbrctl("unload", name)
    assert name not in bbrtest.available_ccs()



def bpftool_json(*args):
    cp = subprocess.run(["bpftool", "-j", *map(str, args)], capture_output=True, text=True,
                        timeout=60)
    assert cp.stdout.strip(), f"bpftool {' '.join(map(str, args))}: {cp.stderr}"
    return json.loads(cp.stdout)


def cc_maps(name):
    """{map name: id} of the maps the programs of loaded CC name use (the
    programs of its struct_ops map, whose value names their ids)."""
    cp = subprocess.run(["bpftool", "-j", "struct_ops", "dump", "id", str(link_map_id(name))],
                        capture_output=True, text=True, timeout=60)
    progs = set(re.findall(r"/prog_id:(\d+)", cp.stdout))
    assert progs, f"bpftool struct_ops dump: no programs: {cp.stdout} {cp.stderr}"
    ids = set()
    for prog in progs:
        ids |= set(bpftool_json("prog", "show", "id", prog).get("map_ids", []))
    return {bpftool_json("map", "show", "id", i)["name"]: i for i in ids}


def test_swap_in_place_keeps_the_shared_ets_map():
    """A new bbr_swift build swapped in reads the ETS program's socket
    storage, the map pinned in shared/, as the build it replaces did; a
    private copy would stay empty and every new socket run as plain
    BBRv3 (status no_ets), however ETS is attached."""
    make_target("bpf/bbr_swift.bpf.o")
    name = unique("es")
    shared = Path(PINS["PIN_SHARED"]) / PINS["PIN_ETS_SK_STOR"]
    try:
        bbrctl("load", "--name", name, "bbr_swift", check=0)
        want = bpftool_json("map", "show", "pinned", shared)["id"]
        assert cc_maps(name)["ets_sk_stor"] == want
        m1 = link_map_id(name)
        bbrctl("swap", "--obj", Path(BBRCTL).parents[1] / "bpf" / "bbr_swift.bpf.o", name,
               check=0)
        assert link_map_id(name) != m1, "no new build in place"
        got = cc_maps(name)
        print(f"ets_sk_stor pinned: map {want}; the new build's: map {got['ets_sk_stor']}")
        assert got["ets_sk_stor"] == want, "the new build has an ets_sk_stor of its own"
    finally:
        bbrctl("unload", name)
    assert name not in bbrtest.available_ccs()

# ---- make install and the boot script ------------------------------------------------

def test_make_install_destdir(tmp_path):
    stage = tmp_path / "stage"
    cp = subprocess.run(["make", "-C", str(Path(BBRCTL).parents[1]), "--no-print-directory",
                         "install", f"DESTDIR={stage}", "PREFIX=/opt/bbrt"],
                        capture_output=True, text=True, timeout=300)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    want = ["opt/bbrt/sbin/bbrctl", "opt/bbrt/lib/bbr-bpf/bbr3.bpf.o",
            "opt/bbrt/lib/bbr-bpf/cc_select.bpf.o", "opt/bbrt/lib/bbr-bpf/cc_swap.bpf.o",
            "opt/bbrt/lib/bbr-bpf/tx_start/bbr3.bpf.o",
            "opt/bbrt/lib/bbr-bpf/bbr-bpf-boot", "opt/bbrt/share/doc/bbr-bpf/bbrctl.md",
            "opt/bbrt/share/doc/bbr-bpf/operations.md",
            "opt/bbrt/share/doc/bbr-bpf/ab-testing.md", "opt/bbrt/share/man/man8/bbrctl.8",
            "opt/bbrt/share/man/man5/bbr-bpf.conf.5",
            "opt/bbrt/share/bash-completion/completions/bbrctl",
            "opt/bbrt/lib/systemd/system/bbr-bpf.service", "etc/bbr-bpf/bbr-bpf.conf"]
    missing = [w for w in want if not (stage / w).is_file()]
    assert not missing, f"not installed: {missing}"
    unit = (stage / "opt/bbrt/lib/systemd/system/bbr-bpf.service").read_text()
    assert "@" not in unit and "/opt/bbrt/lib/bbr-bpf/bbr-bpf-boot start /etc/" in unit
    out = subprocess.run([str(stage / "opt/bbrt/sbin/bbrctl"), "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert f"(here: {stage}/opt/bbrt/lib/bbr-bpf)" in out, "installed bbrctl misses its objects"
    for cmd in ("load", "unload", "list", "stat", "params", "attach", "detach", "swap"):
        assert f"  {cmd}" in out and bbrctl("help", cmd, check=0).stdout.startswith("Usage")

    # make uninstall takes back every file (the config too: it is unchanged)
    cp = subprocess.run(["make", "-C", str(Path(BBRCTL).parents[1]), "--no-print-directory",
                         "uninstall", f"DESTDIR={stage}", "PREFIX=/opt/bbrt"],
                        capture_output=True, text=True, timeout=300)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    left = [str(f.relative_to(stage)) for f in stage.rglob("*") if not f.is_dir()]
    assert not left, f"left after make uninstall: {left}"
    assert not (stage / "opt/bbrt/lib/bbr-bpf").exists()
    # a config the operator changed stays
    make = ["make", "-C", str(Path(BBRCTL).parents[1]), "--no-print-directory",
            f"DESTDIR={stage}", "PREFIX=/opt/bbrt"]
    subprocess.run([*make, "install"], capture_output=True, text=True, timeout=300, check=True)
    conf = stage / "etc/bbr-bpf/bbr-bpf.conf"
    conf.write_text(conf.read_text() + "load bbr3\n")
    out = subprocess.run([*make, "uninstall"], capture_output=True, text=True, timeout=300,
                         check=True).stdout
    assert "kept" in out and conf.is_file()
    assert [f for f in stage.rglob("*") if not f.is_dir()] == [conf]


def test_boot_script_all_or_nothing(cc_objs, tmp_path):
    boot = Path(BBRCTL).parents[1] / "packaging" / "bbr-bpf-boot"
    name, obj = cc_objs("bt")
    with cgroup("boot") as cg:
        good = tmp_path / "good.conf"
        good.write_text(f"# test\nload --obj {obj} {name}\nattach --cgroup {cg.name} --cc {name}\n")
        bad = tmp_path / "bad.conf"
        env = dict(os.environ, PATH=f"{Path(BBRCTL).parent}:{os.environ['PATH']}")
        try:
            # a bad attach, a set on a CC without parameter sets, a set
            # line that could not be undone: each undoes what came before
            for last in (f"attach --cgroup {cg.name}-missing --cc {name}",
                         f"set --default {name} beta=100",
                         f"set --socket 1 {name} target_rtt_us=100"):
                bad.write_text(f"load --obj {obj} {name}\n"
                               f"attach --cgroup {cg.name} --cc {name}\n{last}\n")
                cp = subprocess.run([str(boot), "start", str(bad)], capture_output=True,
                                    text=True, env=env, timeout=60)
                print("bad config:", last, "->", cp.returncode, cp.stderr.strip())
                assert cp.returncode == 1 and "undoing" in cp.stderr
                assert name not in bbrtest.available_ccs() and cgroup_progs(cg) == []
            cp = subprocess.run([str(boot), "start", str(good)], capture_output=True, text=True,
                                env=env, timeout=60)
            assert cp.returncode == 0, cp.stderr
            assert name in bbrtest.available_ccs() and cgroup_progs(cg) == ["cc_select"]
            cp = subprocess.run([str(boot), "stop", str(good)], capture_output=True, text=True,
                                env=env, timeout=60)
            assert cp.returncode == 0, cp.stderr
            assert name not in bbrtest.available_ccs() and cgroup_progs(cg) == []
        finally:
            bbrctl("unload", name)


def test_boot_script_sets_parameters(tmp_path):
    """A set line is applied at start and reset at stop; bbr3 is loaded as
    a copy of the test's own (`load --name`), which stop unloads."""
    make_target("bpf/bbr3.bpf.o")
    b3 = bbrtest.own_cc_name("b3b")
    boot = Path(BBRCTL).parents[1] / "packaging" / "bbr-bpf-boot"
    conf = tmp_path / "set.conf"
    env = dict(os.environ, PATH=f"{Path(BBRCTL).parent}:{os.environ['PATH']}")
    with cgroup("bootset") as cg:
        conf.write_text(f"load --name {b3} bbr3\nset --default {b3} beta=100\n"
                        f"set --cgroup {cg.name} {b3} ecn_enable=1   # web\n")
        try:
            cp = subprocess.run([str(boot), "start", str(conf)], capture_output=True,
                                text=True, env=env, timeout=60)
            assert cp.returncode == 0, cp.stderr
            d = json.loads(bbrctl("set", "--json", "--default", b3, check=0).stdout)
            c = json.loads(bbrctl("set", "--json", "--cgroup", cg, b3, check=0).stdout)
            print("after start: default beta", d["params"]["beta"], "cgroup slot", c["slot"],
                  "ecn_enable", c["params"]["ecn_enable"])
            assert d["params"]["beta"] == 100
            assert c["slot"] >= 1 and c["params"]["ecn_enable"] == 1 and c["params"]["beta"] == 100
            cp = subprocess.run([str(boot), "stop", str(conf)], capture_output=True,
                                text=True, env=env, timeout=60)
            assert cp.returncode == 0, cp.stderr
            assert b3 not in bbrtest.available_ccs()
        finally:
            bbrctl("unload", b3)


def test_boot_script_undoes_load_name(cc_objs, tmp_path):
    """`load --name NEW NAME` is undone by unloading NEW alone: NAME may be
    loaded too (an operator's bbr3 beside a renamed copy) and stays."""
    name, obj = cc_objs("bo")
    objdir = tmp_path / "objs"
    objdir.mkdir()
    shutil.copy(obj, objdir / f"{name}.bpf.o")
    copy = unique("bc")
    boot = Path(BBRCTL).parents[1] / "packaging" / "bbr-bpf-boot"
    conf = tmp_path / "name.conf"
    conf.write_text(f"load --objdir {objdir} --name {copy} {name}\n")
    env = dict(os.environ, PATH=f"{Path(BBRCTL).parent}:{os.environ['PATH']}")
    bbrctl("--objdir", objdir, "load", name, check=0)
    try:
        cp = subprocess.run([str(boot), "start", str(conf)], capture_output=True, text=True,
                            env=env, timeout=60)
        assert cp.returncode == 0, cp.stderr
        assert {name, copy} <= set(bbrtest.available_ccs())
        cp = subprocess.run([str(boot), "stop", str(conf)], capture_output=True, text=True,
                            env=env, timeout=60)
        print("stop:", cp.returncode, cp.stdout.strip(), cp.stderr.strip())
        assert cp.returncode == 0, cp.stderr
        assert copy not in bbrtest.available_ccs()
        assert name in bbrtest.available_ccs(), f"stop unloaded {name}, not only {copy}"
    finally:
        bbrctl("unload", copy)
        bbrctl("unload", name)


def test_boot_script_stop_unloads_an_arm_of_a_split(tmp_path):
    """Stop unloads the CCs start loaded even where a cgroup got one of them
    since, by hand, as an arm of an A/B split (where plain unload refuses):
    that split is detached and named, the config's own split too, and
    nothing is left registered or pinned, so the next start can load again
    (and the package's removal, which runs this stop, leaves nothing)."""
    make_target("bpf/bbr3.bpf.o")
    b3 = bbrtest.own_cc_name("bab")
    boot = Path(BBRCTL).parents[1] / "packaging" / "bbr-bpf-boot"
    conf = tmp_path / "ab.conf"
    env = dict(os.environ, PATH=f"{Path(BBRCTL).parent}:{os.environ['PATH']}")
    sh = lambda *a: subprocess.run([str(boot), *a, str(conf)], capture_output=True, text=True,
                                   env=env, timeout=60)
    with cgroup("bootab") as cg, cgroup("handab") as hand:
        conf.write_text(f"load --name {b3} bbr3\nattach --cgroup {cg.name} --cc cubic:50,{b3}:50\n")
        pins = [PIN_CGROUP / str(c.stat().st_ino) for c in (cg, hand)]
        try:
            cp = sh("start")
            assert cp.returncode == 0, cp.stderr
            bbrctl("attach", "--cgroup", hand, "--cc", f"{b3}:30,cubic:70", check=0)
            bbrctl("unload", b3, check=1)          # refused: an arm of two splits
            print("pinned splits:", [p.name for p in pins if (p / "ab").exists()])
            assert all((p / "ab").exists() for p in pins)
            cp = sh("stop")
            print("stop:", cp.returncode, cp.stdout.strip(), cp.stderr.strip())
            assert cp.returncode == 0, cp.stderr
            assert b3 not in bbrtest.available_ccs(), "stop left the arm registered"
            assert not (Path(PIN_ROOT) / b3).exists()
            assert f"detached from cgroup {hand}" in cp.stderr, cp.stderr
            assert not any(p.exists() for p in pins), "a split outlived the stop"
            assert cgroup_progs(cg) == [] and cgroup_progs(hand) == []
            cp = sh("start")                     # and the unit starts again
            assert cp.returncode == 0, cp.stderr
            assert sh("stop").returncode == 0 and b3 not in bbrtest.available_ccs()
        finally:
            sh("stop")
            bbrctl("unload", "--force", b3)


def test_boot_script_stop_undoes_what_start_applied(tmp_path):
    """Stop undoes the lines start recorded, not the config as it reads at
    stop: an edit while the unit runs takes effect at the next start.
    `started` tells whether a record exists (the package's prerm asks)."""
    make_target("bpf/bbr3.bpf.o")
    first, second = bbrtest.own_cc_name("bsa"), bbrtest.own_cc_name("bsb")
    boot = Path(BBRCTL).parents[1] / "packaging" / "bbr-bpf-boot"
    conf = tmp_path / "edit.conf"
    env = dict(os.environ, PATH=f"{Path(BBRCTL).parent}:{os.environ['PATH']}")
    sh = lambda *a: subprocess.run([str(boot), *a, str(conf)], capture_output=True, text=True,
                                   env=env, timeout=60)
    conf.write_text(f"load --name {first} bbr3\n")
    try:
        assert sh("started").returncode == 1
        cp = sh("start")
        assert cp.returncode == 0, cp.stderr
        assert sh("started").returncode == 0
        again = sh("start")
        print("second start:", again.returncode, again.stderr.strip())
        assert again.returncode == 1 and "already started" in again.stderr
        conf.write_text(f"load --name {second} bbr3\n")     # edited while running
        cp = sh("stop")
        print("stop after the edit:", cp.returncode, cp.stdout.strip(), cp.stderr.strip())
        assert cp.returncode == 0 and f"unloaded {first}" in cp.stdout, cp.stdout + cp.stderr
        assert first not in bbrtest.available_ccs() and sh("started").returncode == 1
        assert second not in bbrtest.available_ccs()
    finally:
        sh("stop")
        bbrctl("unload", first)
        bbrctl("unload", second)
