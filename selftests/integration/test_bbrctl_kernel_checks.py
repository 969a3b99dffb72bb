# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""bbrctl on kernels it cannot work with: no BTF, no struct_ops for CCs.

The kernel cannot be changed under a test, so each case runs bbrctl in a
private mount namespace (unshare -m) where /sys/kernel/btf/vmlinux is
hidden (a tmpfs over /sys/kernel/btf) or replaced (a bind mount of a tiny
BTF blob, the .BTF of selftests/progs/fake_vmlinux_btf.bpf.o: one struct,
no bpf_struct_ops_tcp_congestion_ops). bpffs and the cgroup tree stay the
host's. Each command must fail with the message that names the cause,
exit 1, and leave nothing behind (no pin, no registered CC, nothing on the
cgroup). The mount namespace disappears with the command. bbr3 is asked
for under a name of the test's own (B3, `load --name`), so an operator's
bbr3 on the same machine plays no part.
"""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import bbrtest
from bbrtest import cgroup2_root
from bbrtest.ctl import BBRCTL, PIN_ROOT, bbrctl, cgroup_progs
from conftest import PINS, REPO, make_target

NO_BTF = "/sys/kernel/btf/vmlinux: No such file or directory; struct_ops congestion " \
         "controls need a kernel built with CONFIG_DEBUG_INFO_BTF=y"
NO_STRUCT_OPS = "this kernel cannot register BPF congestion controls: no struct_ops " \
                "for tcp_congestion_ops"
B3 = bbrtest.own_cc_name("b3x")         # bbr3, were it loaded


@pytest.fixture(scope="module", autouse=True)
def built():
    make_target("loader/bbrctl", "bpf/bbr3.bpf.o")
    for tool in ("unshare", "mount"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is needed to simulate the kernel")


FAKE_BTF_OBJ = "selftests/progs/fake_vmlinux_btf.bpf.o"


@pytest.fixture(scope="module")
def fake_btf():
    """Raw BTF with one struct and nothing of struct_ops."""
    objcopy = shutil.which("llvm-objcopy-19") or shutil.which("llvm-objcopy")
    if not objcopy:
        pytest.fail("llvm-objcopy(-19) is needed to build a fake vmlinux BTF")
    make_target(FAKE_BTF_OBJ)
    with tempfile.TemporaryDirectory(prefix="cts") as d:
        btf = Path(d, "vmlinux")
        subprocess.run([objcopy, f"--dump-section=.BTF={btf}", str(REPO / FAKE_BTF_OBJ)],
                       check=True)
        yield btf


def in_fake_kernel(setup, *args):
    """bbrctl ARGS in a private mount namespace prepared by the shell `setup`."""
    cmd = f"{setup} && exec {BBRCTL} " + " ".join(f"'{a}'" for a in args)
    return subprocess.run(["unshare", "-m", "sh", "-c", cmd], capture_output=True,
                          text=True, timeout=30)


HIDE_BTF = "mount -t tmpfs cts-nobtf /sys/kernel/btf"


def fake_btf_setup(btf):
    return f"mount --bind {btf} /sys/kernel/btf/vmlinux"


def assert_nothing_left(name=B3):
    assert name not in bbrtest.available_ccs(), f"{name} got registered"
    assert not (PIN_ROOT / name).exists(), f"{PIN_ROOT / name} left behind"


def test_load_without_btf():
    cp = in_fake_kernel(HIDE_BTF, "load", "--name", B3, "bbr3")
    print(cp.stderr.strip())
    assert cp.returncode == 1 and NO_BTF in cp.stderr
    assert_nothing_left()


def test_load_and_swap_without_struct_ops(fake_btf):
    for args in (("load", "--name", B3, "bbr3"), ("swap", B3)):
        cp = in_fake_kernel(fake_btf_setup(fake_btf), *args)
        print(" ".join(args), "->", cp.stderr.strip())
        assert cp.returncode == 1 and NO_STRUCT_OPS in cp.stderr
        assert "bpf_struct_ops_tcp_congestion_ops" in cp.stderr
    assert_nothing_left()


def test_attach_without_btf_or_struct_ops(fake_btf):
    cg = cgroup2_root() / f"cts{os.getpid()}k"
    cg.mkdir()
    try:
        # no BTF at all: cc_select is a CO-RE program, even for kernel CCs
        cp = in_fake_kernel(HIDE_BTF, "attach", "--cgroup", cg, "--cc", "cubic")
        print("attach cubic, no BTF ->", cp.stderr.strip())
        assert cp.returncode == 1 and NO_BTF in cp.stderr
        # BTF without struct_ops: a project CC cannot be there; say why
        cp = in_fake_kernel(fake_btf_setup(fake_btf), "attach", "--cgroup", cg,
                            "--cc", "ctsnotloaded")
        print("attach ctsnotloaded, no struct_ops ->", cp.stderr.strip())
        assert cp.returncode == 1
        assert "unknown congestion control" in cp.stderr and NO_STRUCT_OPS in cp.stderr
        assert cgroup_progs(cg) == [], "something was attached"
        assert not (Path(PINS["PIN_CGROUP"]) / str(cg.stat().st_ino)).exists()
    finally:
        bbrctl("detach", "--cgroup", cg)
        cg.rmdir()


OLD_CONG_CONTROL = ("this kernel cannot run bbr-bpf's congestion controls: its "
                    "tcp_congestion_ops.cong_control takes 2 arguments, they need the "
                    "4-argument cong_control(sk, ack, flag, rs) of Linux 6.10 and later")
FAKE_V61_BTF_OBJ = "selftests/progs/fake_vmlinux_btf_v61.bpf.o"
# make setup's kernel check, and what it says on a kernel with the old cong_control
KERNEL_CHECK = REPO / "scripts" / "kernel-check.sh"
SETUP_REFUSAL = "cong_control takes 2 arguments; bbr-bpf's CCs need the 4-argument"


@pytest.fixture(scope="module")
def fake_v61_btf():
    """Raw BTF of a 6.1-like kernel: struct_ops for CCs, a 2-argument cong_control."""
    objcopy = shutil.which("llvm-objcopy-19") or shutil.which("llvm-objcopy")
    if not objcopy:
        pytest.fail("llvm-objcopy(-19) is needed to build a fake vmlinux BTF")
    make_target(FAKE_V61_BTF_OBJ)
    with tempfile.TemporaryDirectory(prefix="cts") as d:
        btf = Path(d, "vmlinux")
        subprocess.run([objcopy, f"--dump-section=.BTF={btf}", str(REPO / FAKE_V61_BTF_OBJ)],
                       check=True)
        yield btf


def test_load_on_a_kernel_before_6_10_names_cong_control(fake_v61_btf):
    """Debian bookworm's own kernel (6.1) has BPF CCs but the old cong_control:
    bbrctl says so instead of failing inside libbpf (the kernel matrix boots
    6.1 and runs this test on its real BTF too: test_this_kernel_...)."""
    cp = in_fake_kernel(fake_btf_setup(fake_v61_btf), "load", "--name", B3, "bbr3")
    print(cp.stderr.strip())
    assert cp.returncode == 1, cp
    assert OLD_CONG_CONTROL in cp.stderr, cp.stderr
    assert_nothing_left()


FAKE_NO_ACCECN_BTF_OBJ = "selftests/progs/fake_vmlinux_btf_no_accecn.bpf.o"
NO_ACCECN = ("which this kernel does not have (struct tcp_sock has no received_ce in its "
             "BTF; AccECN came with Linux 6.18): not loaded")


@pytest.fixture(scope="module")
def fake_no_accecn_btf():
    """Raw BTF of a 6.10 to 6.17 kernel: the 4-argument cong_control, no AccECN."""
    objcopy = shutil.which("llvm-objcopy-19") or shutil.which("llvm-objcopy")
    if not objcopy:
        pytest.fail("llvm-objcopy(-19) is needed to build a fake vmlinux BTF")
    make_target(FAKE_NO_ACCECN_BTF_OBJ, "bpf/bbr3_l4s.bpf.o")
    with tempfile.TemporaryDirectory(prefix="cts") as d:
        btf = Path(d, "vmlinux")
        subprocess.run([objcopy, f"--dump-section=.BTF={btf}",
                        str(REPO / FAKE_NO_ACCECN_BTF_OBJ)], check=True)
        yield btf


def test_l4s_object_refused_without_accecn(fake_no_accecn_btf):
    """bbr3_l4s's own ops flags ask for AccECN: on a kernel without it (this
    kernel has it, so its BTF is replaced by one of a 6.10-6.17 kernel)
    bbrctl refuses the object before the kernel sees it, naming the object
    and the missing feature, and registers nothing; `--ecn accecn` the same."""
    l4 = bbrtest.own_cc_name("ctl4")
    cp = in_fake_kernel(fake_btf_setup(fake_no_accecn_btf), "load", "--name", l4, "bbr3_l4s")
    print(cp.stderr.strip())
    assert cp.returncode == 1, cp
    assert "bbr3_l4s asks for AccECN" in cp.stderr and NO_ACCECN in cp.stderr, cp.stderr
    assert_nothing_left(l4)
    cp = in_fake_kernel(fake_btf_setup(fake_no_accecn_btf), "load", "--name", l4,
                        "--ecn", "accecn", "bbr3")
    print(cp.stderr.strip())
    assert cp.returncode == 1 and "this kernel has no AccECN" in cp.stderr, cp
    assert_nothing_left(l4)


@pytest.mark.kernel_matrix
@pytest.mark.any_kernel
def test_this_kernel_runs_bbr_bpf_or_is_refused_by_name():
    """On this kernel: bbrctl loads bbr3 where cong_control has 4 arguments
    (6.10+), and refuses with the missing feature named where it has not
    (6.1), and so does `make setup`'s kernel check: the check every kernel
    of the matrix runs."""
    btf = Path("/sys/kernel/btf/vmlinux").read_bytes()
    setup = subprocess.run(["sh", str(KERNEL_CHECK)], capture_output=True, text=True,
                           timeout=60)
    print(f"make setup's kernel check: exit {setup.returncode}: "
          f"{setup.stderr.strip() or setup.stdout.strip()}")
    cp = bbrctl("load", "--name", B3, "bbr3", timeout=120)
    try:
        print(f"bbrctl load: exit {cp.returncode}: {cp.stderr.strip() or cp.stdout.strip()}")
        if OLD_CONG_CONTROL.split(":")[0] in cp.stderr:
            assert cp.returncode == 1 and OLD_CONG_CONTROL in cp.stderr, cp.stderr
            assert_nothing_left()
            assert setup.returncode == 1 and SETUP_REFUSAL in setup.stderr, setup.stderr
        else:
            assert cp.returncode == 0, cp.stderr
            assert b"bpf_struct_ops_tcp_congestion_ops" in btf
            assert setup.returncode == 0, setup.stderr
    finally:
        bbrctl("unload", B3, timeout=60)
