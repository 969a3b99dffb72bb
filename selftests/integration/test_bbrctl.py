# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""bbrctl, the operator tool: load / list / stat / unload and their errors.

Most tests use the tiny Reno congestion control of
selftests/progs/bbrbpf_test_cc.bpf.c, copied under a name unique to this
process (bc<pid><tag>), so that they never collide with another suite's CCs
and so that objects which must fail (no ssthresh: bbrbpf_test_nossthresh;
a name the kernel already has) exist without being committed.
The bbr3 tests use bpf/bbr3.bpf.o through `bbrctl load --name B3 bbr3`
(B3 = b3c<pid>), so that an operator's bbr3 may stay loaded meanwhile.
`unload all` runs in a mount namespace of its own with a fresh bpffs on
/sys/fs/bpf (PrivateBpffs), where it can only see what the test loaded.

Every test leaves nothing behind: the cleanup fixture unloads what the test
loaded (and removes /sys/fs/bpf/bbr-bpf if the test left it empty), and
conftest's no_leaks checks struct_ops maps, CCs and namespaces afterwards.
No test unloads, or depends on, a CC it did not load.
"""

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import bbrtest
from bbrtest.ctl import BBRCTL, MADE, PIN_ROOT, PrivateBpffs, bbrctl, list_json, pin_dir, \
    struct_ops_maps, unique
from conftest import PINS, REPO, STATE_VERSION, TEST_CC_NAME, make_target

BBR3_OBJ = REPO / "bpf" / "bbr3.bpf.o"
B3 = bbrtest.own_cc_name("b3c")         # bbr3 as this module loads it
MADE.add(B3)
CMD_TIMEOUT_S = 30
FREE_TIMEOUT_S = 2.0            # struct_ops maps are freed asynchronously
LOAD_TIME_SLACK_S = 120         # list's load time vs. the wall clock
STAT_SECONDS = 3.0              # bbr3 transfer watched by `bbrctl stat`
STAT_INTERVAL_S = 0.25
MODES = {"STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT"}
PHASES = {"UP", "DOWN", "CRUISE", "REFILL"}

# ---- helpers ------------------------------------------------------------------


def busy_elsewhere(reason):
    """Another process holds a machine-wide name (CC, bpffs pin) this test
    needs. On a shared developer machine that is skipped; in CI (CI=true)
    nothing else runs, so it is a failure, never a silent pass.

    Only for names fixed by what the test checks (the test CC object as
    built, bbrbpf_test): project CCs are loaded under names of this process
    (own_cc_name, `bbrctl load --name`), which nothing else holds."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI must run alone)")
    pytest.skip(reason)


def wait_for(pred, timeout_s=FREE_TIMEOUT_S):
    return bbrtest.wait_for(pred, timeout_s)


def assert_gone(name, map_ids=()):
    """name is unregistered, unpinned, and its struct_ops maps are freed."""
    assert name not in bbrtest.available_ccs()
    assert not pin_dir(name).exists(), f"{pin_dir(name)} left behind"
    assert wait_for(lambda: not (set(map_ids) & set(struct_ops_maps()))), \
        f"struct_ops map(s) {sorted(set(map_ids) & set(struct_ops_maps()))} of {name} " \
        f"still exist {FREE_TIMEOUT_S} s after unload"
    # Maps of the same name that predate the test belong to sockets of
    # earlier runs that are still closing (orphans keep their CC's map):
    # only a map this test could have created counts.
    def leftover():
        return [i for i, n in struct_ops_maps().items()
                if n == name and i not in _maps_at_test_start]
    assert wait_for(lambda: not leftover()), \
        f"struct_ops maps named {name} created during the test still exist: {leftover()}"


# ---- fixtures -------------------------------------------------------------------

_maps_at_test_start = set()


@pytest.fixture(autouse=True)
def maps_at_test_start():
    """Remember the struct_ops maps that exist before each test (assert_gone)."""
    _maps_at_test_start.clear()
    _maps_at_test_start.update(struct_ops_maps())

@pytest.fixture(scope="module", autouse=True)
def built():
    """bbrctl and vmlinux.h, (re)built through the Makefile."""
    make_target("loader/bbrctl", "bpf/vmlinux.h")


@pytest.fixture(autouse=True)
def cleanup():
    """Unload whatever the test loaded; remove an empty /sys/fs/bpf/bbr-bpf.

    By name, and only names this module makes (unique(), B3) or the test
    CC's own that appeared during the test: a CC an operator or another
    process loads meanwhile is not the test's to unload. Never `unload all`.
    """
    before = set(p.name for p in PIN_ROOT.iterdir()) if PIN_ROOT.is_dir() else set()
    yield
    if not PIN_ROOT.is_dir():
        return
    ours = (set(p.name for p in PIN_ROOT.iterdir()) - before) & (MADE | {TEST_CC_NAME})
    if ours:
        bbrctl("unload", *sorted(ours))
    for name in ours:                   # if bbrctl itself failed to clean up
        d = pin_dir(name)
        if d.is_dir():
            for f in d.iterdir():
                f.unlink()
            d.rmdir()
    try:
        PIN_ROOT.rmdir()                # only if empty
    except OSError:
        pass


# ---- help and usage ---------------------------------------------------------------

def test_help_documents_commands_and_layout():
    out = bbrctl("--help", check=0).stdout
    for word in ("load", "unload", "list", "stat", "params", "--objdir", "--obj", "--json",
                 f"{PIN_ROOT}/NAME/{PINS['PIN_LINK']}", f"{PIN_ROOT}/NAME/{PINS['PIN_ITER']}"):
        assert word in out, f"--help does not mention {word}"
    for cmd in ("load", "unload", "list", "stat", "params"):
        assert bbrctl(cmd, "--help", check=0).stdout.startswith(f"Usage: bbrctl {cmd}")
        assert bbrctl("help", cmd, check=0).stdout.startswith(f"Usage: bbrctl {cmd}")


@pytest.mark.parametrize("args", [
    [], ["frobnicate"], ["load"], ["unload"], ["params"], ["load", "../etc"],
    ["load", "x" * 16], ["unload", "--json", "x"], ["list", "--obj", "x.o"],
    ["load", "all", "bbr3"],
])
def test_usage_errors(args):
    cp = bbrctl(*args, check=2)
    assert cp.stderr.strip(), "usage error without a message"


# ---- load / list / unload ---------------------------------------------------------------

@pytest.mark.kernel_matrix
def test_load_list_unload(cc_objs):
    name, obj = cc_objs("a")
    assert name not in bbrtest.available_ccs()
    maps_before = struct_ops_maps()

    out = bbrctl("load", "--obj", obj, check=0).stdout
    assert f"loaded {name}" in out
    assert name in bbrtest.available_ccs()
    assert sorted(p.name for p in pin_dir(name).iterdir()) == ["link"]   # no iterator

    entries = [e for e in list_json() if e["name"] == name]
    assert len(entries) == 1, entries
    e = entries[0]
    assert e["state"] == "registered" and e["registered"] is True
    assert e["struct_ops_map_id"] in set(struct_ops_maps()) - set(maps_before)
    assert e["link_id"] > 0 and e["prog_id"] > 0
    assert abs(e["load_time_unix_ns"] / 1e9 - time.time()) < LOAD_TIME_SLACK_S, e
    assert e["sockets"] is None and e["state_iter"] is False

    table = bbrctl("list", check=0).stdout.splitlines()
    assert table[0].split()[:3] == ["NAME", "MAP_ID", "LINK_ID"]
    row = [line.split() for line in table[1:] if line.split()[0] == name]
    assert row and row[0][1] == str(e["struct_ops_map_id"]) and row[0][-2] == "-", table

    out = bbrctl("unload", name, check=0).stdout
    assert f"unloaded {name}" in out
    assert_gone(name, [e["struct_ops_map_id"]])
    assert name not in [x["name"] for x in list_json()]


@pytest.mark.kernel_matrix
def test_load_by_name_from_objdir_and_all(cc_objs, tmp_path):
    names = []
    for tag in ("b", "c"):
        name, obj = cc_objs(tag)
        shutil.copy(obj, tmp_path / f"{name}.bpf.o")
        names.append(name)
    (tmp_path / "notes.txt").write_text("not an object\n")

    bbrctl("--objdir", tmp_path, "load", names[0], check=0)
    assert names[0] in bbrtest.available_ccs()
    cp = bbrctl("--objdir", tmp_path, "load", "all", check=1)     # names[0] is loaded
    assert "already loaded" in cp.stderr
    assert names[1] not in bbrtest.available_ccs(), "load all was not all or nothing"
    bbrctl("unload", names[0], check=0)

    bbrctl("--objdir", tmp_path, "load", "all", check=0)
    listed = {e["name"]: e for e in list_json()}
    ids = []
    for name in names:
        assert name in bbrtest.available_ccs()
        assert listed[name]["registered"]
        ids.append(listed[name]["struct_ops_map_id"])
    bbrctl("unload", *names, check=0)
    for name, map_id in zip(names, ids):
        assert_gone(name, [map_id])


def test_test_cc_object_by_path(test_cc_obj):
    """The built test CC object as it is, under the name it was built with.
    That name is the point, so it can be taken: only by another run of this
    suite (the installed bbr-bpf has no test CCs), hence busy_elsewhere."""
    busy = f"{TEST_CC_NAME} is registered by someone else right now"
    if TEST_CC_NAME in bbrtest.available_ccs():
        busy_elsewhere(busy)
    cp = bbrctl("load", "--obj", test_cc_obj)
    if cp.returncode == 1 and "already registered" in cp.stderr:
        busy_elsewhere(busy)       # another run won the race for the name
    assert cp.returncode == 0, cp.stderr
    (e,) = [e for e in list_json() if e["name"] == TEST_CC_NAME]
    bbrctl("unload", TEST_CC_NAME, check=0)
    assert_gone(TEST_CC_NAME, [e["struct_ops_map_id"]])


def test_shared_pin_of_another_layout():
    """A shared map pinned by another build with another layout (here: the
    ETS storage as a plain hash) makes bbrctl refuse the load with a message
    that names the pin and what to do, and leave nothing registered, where
    libbpf alone would say "parameter mismatch". In a private bpffs, so that
    an installed bbr-bpf's own shared pins are never touched."""
    name = bbrtest.own_cc_name("swl")
    shared = Path(PINS["PIN_SHARED"])
    stor = shared / PINS["PIN_ETS_SK_STOR"]
    with PrivateBpffs() as ns:
        host_dev = bbrtest.BPFFS_ROOT.stat().st_dev
        assert int(ns.run("stat", "-c", "%d", bbrtest.BPFFS_ROOT, check=0).stdout) != host_dev
        ns.run("mkdir", "-p", "-m", "0700", shared, check=0)
        ns.run("bpftool", "map", "create", stor, "type", "hash", "key", "4", "value", "8",
               "entries", "4", "name", "ets_sk_stor", check=0)
        cp = ns.bbrctl("load", "--name", name, "bbr_swift")
        print(cp.stderr.strip())
        assert cp.returncode != 0
        assert f"{stor} is pinned with another layout" in cp.stderr
        assert "map type hash" in cp.stderr and "sk_storage" in cp.stderr
        assert "parameter mismatch" not in cp.stderr
        assert name not in bbrtest.available_ccs()
        assert ns.run("test", "-e", PIN_ROOT / name).returncode == 1, "half-loaded pins left"
        # the operator's remedy works: remove the stale pin and load again
        ns.run("rm", stor, check=0)
        ns.bbrctl("load", "--name", name, "bbr_swift", check=0)
        assert name in bbrtest.available_ccs()
        ns.bbrctl("unload", name, check=0)
    assert name not in bbrtest.available_ccs()


@pytest.mark.kernel_matrix
def test_unload_all(cc_objs):
    """`unload all` removes every CC bbrctl has pinned, and nothing else.

    It would also remove CCs an operator or another process loaded with
    bbrctl, so it runs where only this test's pins are: in a private mount
    namespace with a fresh bpffs on /sys/fs/bpf. A witness CC loaded on the
    machine's bpffs before must be untouched afterwards."""
    witness, witness_obj = cc_objs("w")
    names = [cc_objs(tag)[0] for tag in ("d", "e")]
    bbrctl("load", "--obj", witness_obj, check=0)
    (w,) = [e for e in list_json() if e["name"] == witness]
    with PrivateBpffs() as ns:
        # the guard: a bpffs of its own, not the machine's, or the test stops here
        host_dev = bbrtest.BPFFS_ROOT.stat().st_dev
        ns_dev = int(ns.run("stat", "-c", "%d", bbrtest.BPFFS_ROOT, check=0).stdout)
        assert ns_dev != host_dev, "the namespace sees the machine's bpffs"
        assert ns.run("test", "-e", PIN_ROOT).returncode == 1, f"{PIN_ROOT} in a fresh bpffs"
        assert "nothing to unload" in ns.bbrctl("unload", "all", check=0).stdout

        ns.bbrctl("load", *[a for t in ("d", "e") for a in ("--obj", cc_objs(t)[1])], check=0)
        inside = {e["name"]: e for e in json.loads(ns.bbrctl("list", "--json", check=0).stdout)}
        assert sorted(inside) == sorted(names), inside
        assert all(n in bbrtest.available_ccs() for n in names)
        assert not set(names) & {e["name"] for e in list_json()}, \
            "the machine's bpffs shows the private namespace's pins"
        ids = [inside[n]["struct_ops_map_id"] for n in names]

        out = ns.bbrctl("unload", "all", check=0).stdout
        print(out.strip())
        for name in names:
            assert f"unloaded {name}" in out
            assert_gone(name, ids)
        assert ns.run("test", "-e", PIN_ROOT).returncode == 1, \
            "unload all left an empty /sys/fs/bpf/bbr-bpf"
    # the machine's bbrctl pins: the witness as it was
    (w2,) = [e for e in list_json() if e["name"] == witness]
    same = ("link_id", "struct_ops_map_id", "prog_id", "state")
    assert {k: w2[k] for k in same} == {k: w[k] for k in same}
    assert witness in bbrtest.available_ccs()
    bbrctl("unload", witness, check=0)
    assert_gone(witness, [w["struct_ops_map_id"]])


# ---- errors -------------------------------------------------------------------------------

def test_unknown_name():
    name = unique("zz")
    cp = bbrctl("load", name, check=1)
    assert "object not found" in cp.stderr and name in cp.stderr
    cp = bbrctl("unload", name, check=1)
    assert "is not loaded" in cp.stderr
    cp = bbrctl("stat", name, check=1)
    assert "not loaded" in cp.stderr
    cp = bbrctl("params", name, check=1)
    assert "not loaded" in cp.stderr
    cp = bbrctl("load", "--obj", "/nonexistent/x.bpf.o", check=1)
    assert "object not found" in cp.stderr
    assert not pin_dir(name).exists()


def test_double_load_keeps_the_first(cc_objs):
    name, obj = cc_objs("f")
    bbrctl("load", "--obj", obj, check=0)
    (first,) = [e for e in list_json() if e["name"] == name]

    cp = bbrctl("load", "--obj", obj, check=1)
    assert "already loaded by bbrctl" in cp.stderr

    (again,) = [e for e in list_json() if e["name"] == name]
    same = ("link_id", "struct_ops_map_id", "prog_id", "state", "registered")
    assert {k: again[k] for k in same} == {k: first[k] for k in same}, \
        "the failed second load disturbed the first"
    assert name in bbrtest.available_ccs()
    bbrctl("unload", name, check=0)
    assert_gone(name, [first["struct_ops_map_id"]])


def test_concurrent_loads_of_one_name(cc_objs):
    """Racing loads: exactly one wins, the others fail and clean up after themselves."""
    name, obj = cc_objs("r")
    procs = [subprocess.Popen(bbrtest.ctl.argv("load", "--obj", obj), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [(p.wait(timeout=CMD_TIMEOUT_S), *p.communicate()) for p in procs]
    codes = sorted(rc for rc, _, _ in results)
    assert codes == [0, 1, 1, 1], results
    for rc, _, stderr in results:
        if rc:
            assert "already" in stderr, stderr
    assert sorted(p.name for p in pin_dir(name).iterdir()) == ["link"]
    (e,) = [e for e in list_json() if e["name"] == name]
    assert e["state"] == "registered"
    bbrctl("unload", name, check=0)
    assert_gone(name, [e["struct_ops_map_id"]])


def test_name_clash_with_kernel_cc(cc_objs):
    """A CC named like one the kernel already has is refused before loading."""
    _, obj = cc_objs("reno", name="reno")
    maps_before = struct_ops_maps()
    cp = bbrctl("load", "--obj", obj, check=1)
    assert "already registered" in cp.stderr and "reno" in cp.stderr
    assert not pin_dir("reno").exists()
    assert "reno" in bbrtest.available_ccs()
    assert not [i for i, n in struct_ops_maps().items() if n == "reno" and i not in maps_before]


def test_unload_not_ours():
    cp = bbrctl("unload", "reno", check=1)
    assert "not loaded by bbrctl" in cp.stderr
    assert "reno" in bbrtest.available_ccs()


def test_all_or_nothing(cc_objs):
    """The 2nd CC fails at registration: the 1st is unloaded again."""
    good, good_obj = cc_objs("g")
    bad, bad_obj = cc_objs("h", no_ssthresh=True)
    maps_before = set(struct_ops_maps())

    cp = bbrctl("load", "--obj", good_obj, "--obj", bad_obj, check=1)
    assert "refused to register" in cp.stderr and bad in cp.stderr, cp.stderr
    assert "unloaded again" in cp.stderr
    new_maps = set(struct_ops_maps()) - maps_before
    for name in (good, bad):
        assert_gone(name, new_maps)


def test_stale_pins(cc_objs):
    """A link detached behind bbrctl's back: list says so, unload cleans up."""
    name, obj = cc_objs("s")
    bbrctl("load", "--obj", obj, check=0)
    (e,) = [e for e in list_json() if e["name"] == name]
    subprocess.run(["bpftool", "link", "detach", "id", str(e["link_id"])], check=True,
                   capture_output=True, timeout=CMD_TIMEOUT_S)
    assert wait_for(lambda: name not in bbrtest.available_ccs())

    (e2,) = [e for e in list_json() if e["name"] == name]
    assert e2["state"] == "detached" and not e2["registered"]
    cp = bbrctl("load", "--obj", obj, check=1)
    assert "stale pins" in cp.stderr
    bbrctl("unload", name, check=0)
    assert_gone(name, [e["struct_ops_map_id"]])


def _unprivileged_prefixes():
    """Ways to run bbrctl without the capabilities it needs, real ones only."""
    ways = []
    if shutil.which("capsh"):
        ways.append(("capsh", ["capsh", "--drop=cap_bpf,cap_sys_admin", "--", "-c",
                               'exec "$0" "$@"']))
    if shutil.which("setpriv"):
        ways.append(("setpriv-nobody", ["setpriv", "--reuid=65534", "--regid=65534",
                                        "--clear-groups", "--inh-caps=-all"]))
    return ways


@pytest.mark.parametrize("how,prefix", _unprivileged_prefixes() or
                         [pytest.param("none", [], marks=pytest.mark.skip(
                             reason="neither capsh nor setpriv; see test_not_root_as_nobody"))])
def test_not_root(cc_objs, how, prefix):
    name, obj = cc_objs("p")
    maps_before = set(struct_ops_maps())
    cp = bbrctl("load", "--obj", obj, prefix=prefix, check=1)
    assert "permission denied" in cp.stderr, cp.stderr
    assert "CAP_BPF" in cp.stderr
    assert "libbpf" not in cp.stderr, "bbrctl touched BPF before checking privileges"
    # Root without CAP_BPF may still unlink pins: should the check ever let
    # `unload all` through, it finds only a fresh bpffs of its own.
    with PrivateBpffs() as ns:
        for cmd in (["unload", "all"], ["list"], ["stat"]):
            cp = bbrctl(*cmd, prefix=[*ns.enter, *prefix], check=1)
            assert "permission denied" in cp.stderr, (cmd, cp.stderr)
    assert name not in bbrtest.available_ccs()
    assert not pin_dir(name).exists()
    assert not [i for i, n in struct_ops_maps().items() if n == name and i not in maps_before]


def test_not_root_as_nobody(cc_objs):
    """Without capsh/setpriv, a plain setuid child: still a real non-root run."""
    name, obj = cc_objs("q")
    cp = bbrctl("load", "--obj", obj, user=65534, group=65534, extra_groups=[], check=1)
    assert "must run as root" in cp.stderr, cp.stderr
    assert name not in bbrtest.available_ccs()


def test_refuses_private_mount_namespace(cc_objs, topo):
    """Under `ip netns exec` a bpffs mounted by bbrctl would vanish with it."""
    name, obj = cc_objs("n")
    cp = bbrtest.netns_exec(topo.snd_ns, [str(BBRCTL), "load", "--obj", str(obj)], check=False)
    assert cp.returncode == 1, cp
    assert "nsenter" in cp.stderr, cp.stderr
    assert name not in bbrtest.available_ccs()


# ---- bbr3: load, stat during a transfer, unload -----------------------------------------

@pytest.fixture
def bbr3_loaded():
    """bbr3.bpf.o loaded as B3 (`load --name`); its list entry."""
    make_target("bpf/bbr3.bpf.o")
    out = bbrctl("load", "--name", B3, "bbr3", check=0).stdout
    assert out.startswith(f"loaded {B3} from "), out
    (e,) = [e for e in list_json() if e["name"] == B3]
    yield e
    if pin_dir(B3).exists():
        bbrctl("unload", B3, check=0)
    assert_gone(B3, [e["struct_ops_map_id"]])


@pytest.mark.kernel_matrix
def test_bbr3_stat_during_transfer(bbr3_loaded, topo):
    assert bbr3_loaded["state_iter"], "bbr3.bpf.o has no state iterator"
    assert sorted(p.name for p in pin_dir(B3).iterdir()) == \
        sorted(PINS[k] for k in ("PIN_LINK", "PIN_ITER", "PIN_TRACE_CTL", "PIN_TRACE_RB"))
    assert isinstance(json.loads(bbrctl("stat", "--json", B3, check=0).stdout), list)

    def sample():
        # The table first, the records last, and only once the socket is
        # connected: a socket in the records was there for the other two
        # calls as well, also when the flow closes during the sample.
        table = bbrctl("stat", B3, check=0).stdout
        listed = {e["name"]: e for e in list_json()}
        recs = json.loads(bbrctl("stat", "--json", B3, check=0).stdout)
        return recs, listed[B3]["sockets"], table

    # Samples take seconds in a kernel-matrix guest: run long enough for a few.
    seconds = bbrtest.ctl.watched_seconds(STAT_SECONDS, sample)
    with bbrtest.Transfer(topo, B3, seconds=seconds, watched=True) as t:
        t.connected()
        res = t.result(sample_cb=sample, sample_interval=STAT_INTERVAL_S)
    assert res["cc"] == B3
    assert res["bytes_received"] == res["bytes_sent"] > 0

    ours = []
    for recs, sockets, table in res["samples"]:
        mine = [r for r in recs if r["saddr"] == topo.snd_addr and r["daddr"] == topo.rcv_addr]
        if mine:
            assert sockets >= len(mine)
            assert f"{topo.snd_addr}:" in table
            ours.append(mine[0])
    assert ours and len(ours) >= len(res["samples"]) // 2, \
        f"the sender's socket showed up in only {len(ours)} of {len(res['samples'])} samples"
    print(f"\n{B3} (bbr3) {res['mbps']:.0f} Mbit/s; last sample: "
          + json.dumps({k: ours[-1][k] for k in ("mode_name", "phase_name", "bw_bps",
                                                  "pacing_rate_Bps", "snd_cwnd_pkts",
                                                  "min_rtt_us", "inflight_hi")}))
    for r in ours:
        assert r["cc"] == B3 and r["version"] == STATE_VERSION
        assert r["family"] == 2 and r["dport"] == 5201 and r["sport"] > 0
        assert r["mode_name"] in MODES
        assert (r["phase_name"] in PHASES) == (r["mode_name"] == "PROBE_BW")
        assert r["snd_cwnd_pkts"] > 0 and r["mss_bytes"] > 0
        assert r["bw_bps"] == r["bw"] * r["mss_bytes"] * 8 * 10**6 >> 24
        assert isinstance(r["bw_hi"], list) and len(r["bw_hi"]) == 2
        assert "_pad" not in r
    # By the end of a few seconds on an unshaped path the model has a
    # bandwidth and a min RTT, and STARTUP is over. STARTUP ends on a
    # plateau of samples that are not app-limited: in a kernel-matrix guest
    # (rates scaled, BBRTEST_MAX_RATE_MBIT) the nice-10 sender shares one
    # emulated CPU with the sampler, often cannot keep its window full, and
    # its app-limited samples rightly keep STARTUP going (seen on 7.2: 61
    # Mbit/s, still in STARTUP after 9 s). There only the model is checked.
    last = ours[-1]
    assert last["bw_bps"] > 0 and last["min_rtt_us"] != 0xFFFFFFFF
    assert last["initialized"] == 1
    if not bbrtest.rates_scaled():
        assert any(r["full_bw_reached"] for r in ours), "STARTUP never ended"
    else:
        print("rates scaled (BBRTEST_MAX_RATE_MBIT): STARTUP's end not judged; "
              f"full_bw_reached in {sum(r['full_bw_reached'] for r in ours)} of {len(ours)} samples")


@pytest.mark.kernel_matrix
def test_bbr3_params(bbr3_loaded):
    doc = json.loads(bbrctl("params", "--json", B3, check=0).stdout)
    assert doc["cc"] == B3
    p = doc["params"]
    for key in ("startup_pacing_gain", "cwnd_gain", "beta", "probe_rtt_mode_ms", "fast_path"):
        assert key in p, key
    assert not [k for k in p if k.startswith("_")]
    assert p["cwnd_gain"] > 0
    table = bbrctl("params", B3, check=0).stdout
    assert "startup_pacing_gain" in table
