# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The attacks and faults of docs/security.md, performed for real.

- pin squatting: an unprivileged user (uid 65534 through setpriv) who
  creates bbrctl's pin root first, or a symbolic link in its place, must
  make bbrctl refuse with a message, registering nothing; where the root
  already exists, nobody may create anything in it;
- unload of a CC that a cgroup is attached to is refused, naming the
  cgroup; --force detaches first and says so;
- parallel bbrctl runs: ten `unload NAME` at once, one unloads, the others
  say "not loaded" and nothing else.

The CCs are the test CC of selftests/progs under names of this process
(bs<pid><tag>); nothing of anyone else's is touched.
"""

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import bbrtest
from bbrtest.ctl import PIN_ROOT, bbrctl, pin_dir
from conftest import REPO, TEST_CC_NAME, TEST_CC_OBJ, make_target

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]
PARALLEL_RUNS = 10


def name_of(tag):
    return bbrtest.own_cc_name(f"bs{tag}")


@pytest.fixture(scope="module")
def objs(tmp_path_factory):
    make_target("loader/bbrctl", str(TEST_CC_OBJ.relative_to(REPO)))
    out = tmp_path_factory.mktemp("sec-objs")

    def named(tag):
        name = name_of(tag)
        return name, bbrtest.cc.renamed_copy(TEST_CC_OBJ, TEST_CC_NAME, name,
                                             out / f"{tag}.bpf.o")
    return named


def as_nobody(*cmd):
    if not shutil.which("setpriv"):
        pytest.fail("setpriv (util-linux) is needed to act as an unprivileged user")
    return subprocess.run([*NOBODY, *cmd], capture_output=True, text=True, timeout=10)


@pytest.fixture
def unload_after():
    names = []
    yield names
    for n in names:
        if pin_dir(n).exists():
            bbrctl("unload", "--force", n)


@pytest.mark.parametrize("how", ["directory", "symlink"])
def test_pin_root_squatting_is_refused(objs, unload_after, how):
    """bpffs is mode 1777: whoever creates PIN_ROOT first owns it. bbrctl
    must refuse a root that is not root's, not a directory, or writable by
    others. If the root exists (another bbr-bpf is loaded), the attack is
    to write into it: that must fail for nobody."""
    name, obj = objs("q" + how[0])
    if PIN_ROOT.exists():
        st = PIN_ROOT.lstat()
        print(f"{PIN_ROOT} exists: uid {st.st_uid} mode {oct(st.st_mode)}")
        assert st.st_uid == 0 and not (st.st_mode & 0o022) and PIN_ROOT.is_dir()
        cp = as_nobody("mkdir", str(PIN_ROOT / name))
        print("nobody: mkdir:", cp.returncode, cp.stderr.strip())
        assert cp.returncode != 0 and "Permission denied" in cp.stderr
        assert not pin_dir(name).exists()
        return
    bait = Path(f"/tmp/bbrbpf-bait-{os.getpid()}")
    try:
        if how == "directory":
            cp = as_nobody("mkdir", "-m", "777", str(PIN_ROOT))
        else:
            cp = as_nobody("ln", "-s", str(bait), str(PIN_ROOT))
        assert cp.returncode == 0, f"nobody could not squat {PIN_ROOT}: {cp.stderr}"
        unload_after.append(name)
        cp = bbrctl("load", "--obj", obj, check=1)
        print("bbrctl:", cp.stderr.strip())
        assert "refusing to use " + str(PIN_ROOT) in cp.stderr
        assert ("not owned by root" if how == "directory" else "a symbolic link") in cp.stderr
        assert name not in bbrtest.available_ccs()
        assert not bait.exists(), "bbrctl followed the link"
    finally:
        if PIN_ROOT.is_symlink():
            PIN_ROOT.unlink()
        elif PIN_ROOT.is_dir() and PIN_ROOT.stat().st_uid != 0:
            shutil.rmtree(PIN_ROOT)
        shutil.rmtree(bait, ignore_errors=True)


def test_unload_refuses_an_attached_cc_and_force_detaches(objs, unload_after):
    name, obj = objs("a")
    unload_after.append(name)
    bbrctl("load", "--obj", obj, check=0)
    with bbrtest.Cgroup(f"bs{os.getpid()}att") as cg:
        try:
            bbrctl("attach", "--cgroup", cg.path, "--cc", name, check=0)
            cp = bbrctl("unload", name, check=1)
            print("unload:", cp.stderr.strip())
            assert str(cg.path) in cp.stderr or cg.name in cp.stderr
            assert name in bbrtest.available_ccs() and pin_dir(name).exists()
            cp = bbrctl("unload", "--force", name, check=0)
            print("unload --force:", (cp.stdout + cp.stderr).strip())
            assert "detach" in (cp.stdout + cp.stderr)
            assert name not in bbrtest.available_ccs() and not pin_dir(name).exists()
            out = subprocess.run(["bpftool", "cgroup", "show", str(cg.path)],
                                 capture_output=True, text=True).stdout
            assert "cc_select" not in out, out
        finally:
            bbrctl("detach", "--cgroup", cg.path)


def test_parallel_unloads_one_wins_the_rest_say_not_loaded(objs, unload_after):
    name, obj = objs("p")
    unload_after.append(name)
    bbrctl("load", "--obj", obj, check=0)
    with ThreadPoolExecutor(PARALLEL_RUNS) as ex:
        cps = list(ex.map(lambda _: bbrctl("unload", name), range(PARALLEL_RUNS)))
    rcs = sorted(cp.returncode for cp in cps)
    losers = [cp.stderr.strip().splitlines() for cp in cps if cp.returncode]
    print("exit codes", rcs, "messages", {tuple(m) for m in losers})
    assert rcs == [0] + [1] * (PARALLEL_RUNS - 1)
    # each loser's last line is the error; before it, at most the notice
    # that it queued behind the lock (printed when the wait is noticeable)
    assert all(m[-1] == f"bbrctl: error: {name} is not loaded (no {pin_dir(name)})"
               for m in losers)
    assert all(line.startswith("bbrctl: unload: waiting for another bbrctl")
               for m in losers for line in m[:-1])
    assert name not in bbrtest.available_ccs()
