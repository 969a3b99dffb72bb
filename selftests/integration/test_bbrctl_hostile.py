# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Hostile input to bbrctl: a pin tree someone else prepared, files planted
where it writes, objects and command lines that are not what they claim.
docs/security.md lists each threat and names the test here that performs it.

- a pin tree an unprivileged user (uid 65534) made while PIN_ROOT did not
  exist (mode 777, symbolic links to a root-owned scratch directory in the
  places bbrctl reads, pins and unlinks): every command refuses it, names
  the remedy (`rm -r`, never `bbrctl unload` there), and every file of the
  scratch directory survives;
- a root-owned tree with symbolic links inside: no command follows them;
- `trace --output` onto a planted symbolic link or an existing file;
- `swap --obj` with another CC's object;
- `load --name all`, duplicate options and keys, an overlong --cgroup,
  files that are not BPF objects;
- attach, rmdir the cgroup, unload: the unload goes through;
- an A/B split (`attach --cc A:50,B:50`, `ab report`, `metrics`, `detach`,
  `unload --force`) in a tree with planted split pins or a cgroup/ID
  symbolic link: nothing outside bpffs is touched.

The trees are built in a mount namespace of its own with a fresh bpffs on
/sys/fs/bpf (PrivateBpffs), so the machine's pin root, which an installed
bbr-bpf and other tests use meanwhile, is never touched. CCs are the test CC
or the project's under names of this process.
"""

import os
import subprocess
from pathlib import Path

import pytest

import bbrtest
from bbrtest.ctl import PIN_ROOT, PrivateBpffs, bbrctl, list_json, pin_dir
from conftest import PINS, REPO, TEST_CC_NAME, TEST_CC_OBJ, make_target

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]
# what bbrctl would unlink in a CC's directory, a cgroup attachment, shared/
# (and an A/B split's link and maps: PIN_AB, PIN_AB_MAPS)
SPLIT_PINS = [PINS["PIN_AB"], "ab_cfg", "ab_stats", "ab_conns", "ab_ring"]
BAIT_FILES = ["link", "state_iter", "trace_rb", "trace_ctl", "select", "ets",
              "ets_sk_stor", "ets_stats", "keep"] + SPLIT_PINS
# two arms every kernel has built in: the split needs no BPF CC loaded
SPLIT_SPEC = "reno:50,cubic:50"
FAKE_CGROUP_ID = "4242"
LONG_CGROUP_CHARS = 5000


def name_of(tag):
    return bbrtest.own_cc_name(f"bh{tag}")


@pytest.fixture(scope="module")
def test_cc(tmp_path_factory):
    make_target("loader/bbrctl", str(TEST_CC_OBJ.relative_to(REPO)), "bpf/bbr3.bpf.o",
                "bpf/dctcp_bpf.bpf.o")
    out = tmp_path_factory.mktemp("hostile-objs")

    def named(tag):
        name = name_of(tag)
        return name, bbrtest.cc.renamed_copy(TEST_CC_OBJ, TEST_CC_NAME, name,
                                             out / f"{tag}.bpf.o")
    return named


@pytest.fixture
def scratch(tmp_path):
    """A root-owned directory full of files named like bbrctl's pins."""
    d = tmp_path / "scratch"
    d.mkdir(mode=0o755)
    for f in BAIT_FILES:
        (d / f).write_text(f"{f} must survive\n")
    return d


def survivors(d):
    return sorted(p.name for p in d.iterdir())


def intact(d):
    """Every bait file there, and with its own content (nothing pinned over
    it, truncated or written)."""
    return survivors(d) == sorted(BAIT_FILES) and all(
        (d / f).read_text() == f"{f} must survive\n" for f in BAIT_FILES)


def ns_as_nobody(ns, *argv):
    return ns.run(*NOBODY, *argv)


def build_hostile_tree(ns, scratch, cc):
    """What an unprivileged user can do while PIN_ROOT does not exist."""
    steps = [("mkdir", "-m", "777", PIN_ROOT),
             ("mkdir", "-m", "777", PIN_ROOT / cc),
             ("ln", "-s", scratch, PIN_ROOT / cc / "trace_rb"),
             ("ln", "-s", scratch, PIN_ROOT / PINS["PIN_SHARED_DIR"]),
             ("ln", "-s", scratch, PIN_ROOT / "evil"),
             ("mkdir", "-m", "777", PIN_ROOT / PINS["PIN_CGROUP_DIR"]),
             ("ln", "-s", scratch, PIN_ROOT / PINS["PIN_CGROUP_DIR"] / FAKE_CGROUP_ID)]
    for argv in steps:
        cp = ns_as_nobody(ns, *argv)
        assert cp.returncode == 0, f"nobody: {argv}: {cp.stderr}"


HOSTILE_RUNS = {
    "load": lambda cc, obj, cg: ("load", "--obj", obj),
    "unload": lambda cc, obj, cg: ("unload", cc),
    "unload_all": lambda cc, obj, cg: ("unload", "all"),
    "unload_force": lambda cc, obj, cg: ("unload", "--force", cc),
    "attach": lambda cc, obj, cg: ("attach", "--cgroup", cg, "--cc", "reno"),
    "detach": lambda cc, obj, cg: ("detach", "--cgroup", cg),
    "list": lambda cc, obj, cg: ("list",),
    "stat": lambda cc, obj, cg: ("stat", cc),
    "trace": lambda cc, obj, cg: ("trace", cc, "--duration", "0.1"),
    "attach_split": lambda cc, obj, cg: ("attach", "--cgroup", cg, "--cc", SPLIT_SPEC),
    "ab_report": lambda cc, obj, cg: ("ab", "report", "--cgroup", cg),
    "metrics": lambda cc, obj, cg: ("metrics",),
}


@pytest.mark.parametrize("cmd", sorted(HOSTILE_RUNS))
def test_untrusted_pin_tree_is_refused_and_nothing_outside_is_touched(test_cc, scratch, cmd):
    """The attack of the issue: nobody makes PIN_ROOT (777) with NAME/ and
    symbolic links to a root-owned directory as shared/, a CC, a cgroup
    attachment. Before, `load` answered "stale pins ... run `bbrctl unload
    NAME`", and that unload (or unload all, or attach) unlinked the files in
    the links' target. Now every command refuses the tree."""
    cc, obj = test_cc("u")
    with bbrtest.Cgroup(f"bh{os.getpid()}{cmd}") as cg, PrivateBpffs() as ns:
        build_hostile_tree(ns, scratch, cc)
        cp = ns.bbrctl(*HOSTILE_RUNS[cmd](cc, obj, cg.path))
        print(f"bbrctl {cmd}: exit {cp.returncode}\n{cp.stderr.strip()}")
        print("scratch:", survivors(scratch))
        assert survivors(scratch) == sorted(BAIT_FILES), "bbrctl removed files outside bpffs"
        assert cp.returncode == 1
        assert f"refusing to use {PIN_ROOT}: it is not owned by root" in cp.stderr
        assert f"rm -r {PIN_ROOT}" in cp.stderr
        assert "bbrctl unload" not in cp.stderr, "advice to run unload in an untrusted tree"
        assert cc not in bbrtest.available_ccs()
        out = subprocess.run(["bpftool", "cgroup", "show", str(cg.path)],
                             capture_output=True, text=True).stdout
        assert "cc_select" not in out, out


def test_symbolic_links_inside_a_trusted_tree_are_never_followed(test_cc, scratch):
    """Only root can write into a root-owned 0700 tree; still, an entry that
    is a symbolic link (a mistake, or made while the tree was open) is never
    followed: unload NAME refuses it, unload all and attach skip it."""
    cc, obj = test_cc("t")
    cgdir = PIN_ROOT / PINS["PIN_CGROUP_DIR"]
    with bbrtest.Cgroup(f"bh{os.getpid()}t") as cg, PrivateBpffs() as ns:
        ns.run("mkdir", "-m", "700", PIN_ROOT, cgdir, check=0)
        ns.run("ln", "-s", scratch, PIN_ROOT / cc, check=0)
        ns.run("ln", "-s", scratch, cgdir / FAKE_CGROUP_ID, check=0)
        cp = ns.bbrctl("unload", cc)
        print("unload:", cp.stderr.strip())
        assert cp.returncode == 1 and "it is a symbolic link" in cp.stderr
        cp = ns.bbrctl("unload", "all")
        print("unload all:", cp.returncode, cp.stdout.strip(), cp.stderr.strip())
        assert cp.returncode == 0 and "nothing to unload" in cp.stdout
        cp = ns.bbrctl("attach", "--cgroup", cg.path, "--cc", "reno")
        print("attach:", cp.returncode, cp.stderr.strip())
        assert cp.returncode == 0
        ns.bbrctl("detach", "--cgroup", cg.path, check=0)
        print("scratch:", survivors(scratch))
        assert survivors(scratch) == sorted(BAIT_FILES)


def test_trace_output_follows_no_link_and_keeps_files(test_cc, tmp_path):
    """trace --output in a directory a user owns: a symbolic link planted
    there must not make root truncate its target; an existing file is kept
    unless --force. (Not a sticky world-writable directory such as /tmp,
    where fs.protected_symlinks already stops root at another user's link.)"""
    cc = name_of("o")
    victim = tmp_path / "victim"
    victim.write_text("root's file\n")
    spool = Path(f"/tmp/bh-trace-{os.getpid()}")
    spool.mkdir(mode=0o755)
    os.chown(spool, 65534, 65534)
    link = spool / "trace.json"
    try:
        bbrctl("load", "--name", cc, "bbr3", check=0)
        cp = subprocess.run([*NOBODY, "ln", "-s", str(victim), str(link)],
                            capture_output=True, text=True)
        assert cp.returncode == 0, cp.stderr
        cp = bbrctl("trace", cc, "--duration", "0.1", "--output", link)
        print("onto a link:", cp.returncode, cp.stderr.strip())
        assert victim.read_text() == "root's file\n", "the link's target was truncated"
        assert cp.returncode == 1 and "symbolic link" in cp.stderr
        cp = bbrctl("trace", cc, "--duration", "0.1", "--output", link, "--force")
        print("onto a link, --force:", cp.returncode, cp.stderr.strip())
        assert victim.read_text() == "root's file\n" and cp.returncode == 1
        cp = bbrctl("trace", cc, "--duration", "0.1", "--output", victim)
        print("onto a file:", cp.returncode, cp.stderr.strip())
        assert victim.read_text() == "root's file\n"
        assert cp.returncode == 1 and "--force" in cp.stderr
        bbrctl("trace", cc, "--duration", "0.1", "--output", victim, "--force", check=0)
        assert victim.read_text() == "", "--force overwrites (no events: empty)"
    finally:
        bbrctl("unload", cc)
        link.unlink(missing_ok=True)
        spool.rmdir()


def test_swap_to_another_ccs_object_repins_what_describes_it():
    """swap --obj with another CC's object (dctcp_bpf in place of bbr3):
    the pins of NAME must describe the build in place. Before, bbr3's
    state iterator and trace ring stayed pinned, and stat/list read the old
    build's sockets (none) while new sockets ran the new one. dctcp_bpf has
    neither: both pins go, and stat says there is no iterator."""
    cc = name_of("s")
    try:
        bbrctl("load", "--name", cc, "bbr3", check=0)
        before = sorted(p.name for p in pin_dir(cc).iterdir())
        cp = bbrctl("swap", "--obj", REPO / "bpf" / "dctcp_bpf.bpf.o", cc, check=0)
        print("swap:", cp.stderr.strip())
        after = sorted(p.name for p in pin_dir(cc).iterdir())
        print("pins before", before, "after", after)
        assert before == ["link", "state_iter", "trace_ctl", "trace_rb"]
        assert after == ["link"]
        (e,) = [e for e in list_json() if e["name"] == cc]
        assert e["sockets"] is None, e
        cp = bbrctl("stat", cc, check=1)
        assert "no state iterator" in cp.stderr
        # and back: bbr3's build brings its own pins again
        bbrctl("swap", "--obj", REPO / "bpf" / "bbr3.bpf.o", cc, check=0)
        assert sorted(p.name for p in pin_dir(cc).iterdir()) == before
        bbrctl("stat", cc, check=0)
    finally:
        bbrctl("unload", cc)


@pytest.mark.parametrize("argv,expect", [
    (("load", "--name", "all", "bbr3"), "\"all\" cannot be a congestion control's name"),
    (("load", "--name", "bhx1", "--name", "bhx2", "bbr3"), "--name given twice"),
    (("unload", "--force", "--force", "bhnone"), "--force given twice"),
    (("set", "--default", "bhnone", "beta=7", "beta=9"), "beta given twice"),
    (("set", "--default", "bhnone", "profile=v3", "profile=l4s"), "profile given twice"),
    (("set", "--cgroup", "a" * LONG_CGROUP_CHARS, "bhnone", "beta=7"),
     f"the path is too long ({LONG_CGROUP_CHARS} characters"),
])
def test_bad_command_lines_are_refused_with_a_message(argv, expect):
    """In a private bpffs: a bbrctl that took `--name all` (or the last of
    two --name) would register it, and the namespace's end unregisters it."""
    with PrivateBpffs() as ns:
        cp = ns.bbrctl(*argv)
        print(" ".join(argv)[:80], "->", cp.returncode, cp.stderr.strip()[:300])
        assert cp.returncode in (1, 2) and expect in cp.stderr
        assert not {"all", "bhx1", "bhx2"} & set(bbrtest.available_ccs())


def test_files_that_are_not_bpf_objects_say_what_is_wrong(tmp_path):
    obj = (REPO / "bpf" / "bbr3.bpf.o").read_bytes()
    (tmp_path / "head").write_bytes(obj[:3000])
    (tmp_path / "text").write_text("root:x:0:0::/root:/bin/sh\n")
    (tmp_path / "x86").write_bytes(Path("/bin/true").read_bytes())
    cases = {"/dev/null": "not a regular file", str(tmp_path): "it is a directory",
             str(tmp_path / "text"): "not an ELF file",
             str(tmp_path / "x86"): "an ELF file for machine",
             str(tmp_path / "head"): "truncated"}
    for path, why in cases.items():
        cp = bbrctl("load", "--name", name_of("f"), "--obj", path)
        print(path, "->", cp.stderr.strip())
        assert cp.returncode == 1 and why in cp.stderr
        assert "Unknown error" not in cp.stderr


def test_unload_after_the_attached_cgroup_is_removed(test_cc):
    """attach, rmdir the cgroup, unload: the cgroup is gone, so is the
    attachment; unload must not refuse with advice naming a cgroup that
    cannot be detached any more."""
    cc, obj = test_cc("r")
    try:
        bbrctl("load", "--obj", obj, check=0)
        with bbrtest.Cgroup(f"bh{os.getpid()}r") as cg:
            bbrctl("attach", "--cgroup", cg.path, "--cc", cc, check=0)
            att = Path(PINS["PIN_CGROUP"]) / str(cg.id)
            assert att.exists()
        cp = bbrctl("unload", cc)
        print("unload:", cp.returncode, cp.stdout.strip(), cp.stderr.strip())
        assert cp.returncode == 0 and f"unloaded {cc}" in cp.stdout
        assert not att.exists(), f"{att} left behind"
    finally:
        if pin_dir(cc).exists():
            bbrctl("unload", "--force", cc)


def cgroup_sockops_progs(cg):
    out = subprocess.run(["bpftool", "cgroup", "show", str(cg)],
                         capture_output=True, text=True).stdout
    return out


def run_split_commands(ns, cg, cc):
    """ab report and metrics on the planted tree, then attach a split, ab
    report again, detach, unload --force: {name: (exit code, stdout,
    stderr)}, each printed with its stderr; "progs": the cgroup's programs
    right after the attach."""
    runs = [("report_before", ("ab", "report", "--cgroup", cg)),
            ("metrics_before", ("metrics",)),
            ("attach", ("attach", "--cgroup", cg, "--cc", SPLIT_SPEC)),
            ("report", ("ab", "report", "--cgroup", cg)),
            ("detach", ("detach", "--cgroup", cg)),
            ("unload_force", ("unload", "--force", cc))]
    res = {}
    for name, argv in runs:
        cp = ns.bbrctl(*argv)
        print(f"bbrctl {name}: exit {cp.returncode}: {cp.stderr.strip()[:300]}")
        res[name] = (cp.returncode, cp.stdout, cp.stderr)
        if name == "attach":
            res["progs"] = cgroup_sockops_progs(cg)
    return res


@pytest.mark.parametrize("plant", ["split_pins", "cgroup_id_link"])
def test_split_with_planted_pins_touches_nothing_outside(test_cc, scratch, plant):
    """A root-owned tree where the split's attachment directory of a real
    cgroup holds symbolic links named like its pins (ab, ab_cfg, ..., ets)
    to a root-owned scratch directory, or where PIN_CGROUP/ID itself is
    such a link. A split is never read through a link: ab report and
    metrics see none; attach removes the planted pins as a stale
    attachment (unlinking the links, not their targets) and makes a real
    split, or refuses the linked directory; detach and unload --force
    follow no link. The scratch files keep their names and contents."""
    cc, obj = test_cc("s")
    cgdir = PIN_ROOT / PINS["PIN_CGROUP_DIR"]
    with bbrtest.Cgroup(f"bh{os.getpid()}{plant[:5]}") as cg, PrivateBpffs() as ns:
        att = cgdir / str(os.stat(cg.path).st_ino)
        ns.run("mkdir", "-m", "700", PIN_ROOT, cgdir, check=0)
        if plant == "split_pins":
            ns.run("mkdir", "-m", "700", att, check=0)
            for f in SPLIT_PINS + [PINS["PIN_ETS"]]:
                ns.run("ln", "-s", scratch / f, att / f, check=0)
        else:
            ns.run("ln", "-s", scratch, att, check=0)
        ns.bbrctl("load", "--obj", obj, check=0)
        try:
            res = run_split_commands(ns, cg.path, cc)
        finally:
            ns.bbrctl("detach", "--cgroup", cg.path)
            ns.bbrctl("unload", "--force", cc)
        print("scratch:", survivors(scratch))
        assert intact(scratch), "bbrctl touched files outside bpffs"
        progs_attached = res.pop("progs")
        rcs = {k: v[0] for k, v in res.items()}
        assert rcs["report_before"] == 1, rcs
        assert rcs["metrics_before"] == 0 and "bbrbpf_ab_" not in res["metrics_before"][1]
        assert rcs["unload_force"] == 0, rcs
        if plant == "split_pins":
            # the planted pins were a stale attachment: replaced by a split
            assert rcs["attach"] == 0 and "cc_ab" in progs_attached, (rcs, progs_attached)
            assert rcs["report"] == 0 and rcs["detach"] == 0, rcs
        else:
            assert rcs["attach"] == 1 and "it is a symbolic link" in res["attach"][2]
            assert rcs["report"] == 1 and rcs["detach"] == 1, rcs
        progs = cgroup_sockops_progs(cg.path)
        assert "cc_ab" not in progs and "cc_select" not in progs, progs
        assert cc not in bbrtest.available_ccs()


def test_split_in_a_private_bpffs_works_and_leaves_the_scratch_alone(test_cc, scratch):
    """The split's commands on a clean tree in the private bpffs: attached,
    reported, exported (both arms at weight 0.5) and removed, so the
    refusals above are about the planted tree, not a split that cannot
    work here."""
    cc, obj = test_cc("p")
    with bbrtest.Cgroup(f"bh{os.getpid()}p") as cg, PrivateBpffs() as ns:
        ns.bbrctl("load", "--obj", obj, check=0)
        try:
            ns.bbrctl("attach", "--cgroup", cg.path, "--cc", SPLIT_SPEC, check=0)
            progs = cgroup_sockops_progs(cg.path)
            print(progs)
            assert "cc_ab" in progs
            cp = ns.bbrctl("ab", "report", "--cgroup", cg.path, check=0)
            print(cp.stdout)
            cp = ns.bbrctl("metrics", check=0)
            weights = [ln for ln in cp.stdout.splitlines()
                       if ln.startswith("bbrbpf_ab_weight_ratio{")]
            print(weights)
            assert len(weights) == 2 and all(ln.endswith(" 0.5") for ln in weights)
            ns.bbrctl("detach", "--cgroup", cg.path, check=0)
            assert "cc_ab" not in cgroup_sockops_progs(cg.path)
        finally:
            ns.bbrctl("detach", "--cgroup", cg.path)
            ns.bbrctl("unload", "--force", cc)
        assert intact(scratch)


RUN_DIR = Path("/run/bbr-bpf")     # BBRCTL_RUN_DIR: the lock, the event counters


@pytest.mark.parametrize("plant", ["symlink", "user_dir"])
def test_run_dir_someone_else_made_is_refused(test_cc, scratch, plant):
    """bbrctl writes its lock and its event counters in /run/bbr-bpf. A
    symbolic link there (to a root-owned directory), or a directory a user
    made and may write, is refused: the command that changes something
    stops before its lock, metrics reports no events, and no file appears
    in or disappears from the link's target. On a tmpfs of the test's own
    on /run, in its private mount namespace."""
    with PrivateBpffs() as ns:
        ns.run("mount", "-t", "tmpfs", "bbrbpf-test-run", "/run", check=0)
        if plant == "symlink":
            ns.run("ln", "-s", scratch, RUN_DIR, check=0)
        else:
            ns.run("mkdir", "-m", "777", RUN_DIR, check=0)
            ns.run("chown", "65534:65534", RUN_DIR, check=0)
        cp = ns.bbrctl("unload", name_of("r"))
        print("unload:", cp.returncode, cp.stderr.strip())
        assert cp.returncode == 1 and str(RUN_DIR) in cp.stderr
        assert "refus" in cp.stderr, "a run directory someone else made was used"
        cp = ns.bbrctl("metrics")
        events = [ln for ln in cp.stdout.splitlines()
                  if ln.startswith("bbrbpf_bbrctl_runs_total{")]
        print("metrics:", cp.returncode, events, cp.stderr.strip())
        assert events == []
        listing = ns.run("ls", "-A", RUN_DIR if plant == "user_dir" else scratch).stdout.split()
        print("left there:", listing)
        assert "bbrctl.lock" not in listing and not any(f.startswith("events") for f in listing)
        assert intact(scratch)


@pytest.mark.parametrize("plant", ["symlinked_file", "symlinked_dir", "user_dir"])
def test_hwtstamp_state_someone_else_planted_is_not_read(scratch, plant):
    """`hwtstamp disable IFACE` reads the configuration enable saved in
    /run/bbr-bpf/hwtstamp/IFACE, and writes the NIC with it. A symbolic
    link there (file or directory), or a directory a user made and may
    write, is not read: bbrctl says nothing was saved. With a real file
    it goes on to the NIC (lo: no hardware timestamping), which shows the
    file would have been read. On a tmpfs of the test's own on /run."""
    saved = "0 0 1\n"                   # flags, tx_type, rx_filter
    with PrivateBpffs() as ns:
        ns.run("mount", "-t", "tmpfs", "bbrbpf-test-run", "/run", check=0)
        ns.run("mkdir", "-m", "755", RUN_DIR, check=0)
        hw = RUN_DIR / "hwtstamp"
        target = Path(scratch) / "hwts"
        ns.run("sh", "-c", f"mkdir -p {target} && printf '{saved}' > {target}/lo", check=0)
        if plant == "symlinked_file":
            ns.run("mkdir", "-m", "755", hw, check=0)
            ns.run("ln", "-s", target / "lo", hw / "lo", check=0)
        elif plant == "symlinked_dir":
            ns.run("ln", "-s", target, hw, check=0)
        else:
            ns.run("mkdir", "-m", "777", hw, check=0)
            ns.run("chown", "65534:65534", hw, check=0)
            ns.run("sh", "-c", f"printf '{saved}' > {hw}/lo", check=0)
        cp = ns.bbrctl("hwtstamp", "disable", "lo")
        print(plant, "->", cp.returncode, cp.stderr.strip())
        assert cp.returncode == 1
        assert "nothing saved for lo" in cp.stderr or "refus" in cp.stderr, cp.stderr
        assert "no hardware timestamping" not in cp.stderr, "the planted file was read"
        # the control: a real file in a real root-owned directory is read
        ns.run("sh", "-c", f"rm -rf {hw} && mkdir -m 755 {hw} && printf '{saved}' > {hw}/lo",
               check=0)
        cp = ns.bbrctl("hwtstamp", "disable", "lo")
        print("real file ->", cp.returncode, cp.stderr.strip())
        assert cp.returncode == 1 and "no hardware timestamping" in cp.stderr, cp.stderr
