# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Fixtures for the integration tests, all built on the toolkit (selftests/bbrtest).

  topo          an unshaped sender/receiver namespace pair
  make_topo     factory: make_topo(rate_mbit=50) -> Topology, closed after the test
  test_cc_obj   path of the built bbrbpf_test object (built on demand)
  test_cc       bbrbpf_test registered for the test (a StructOpsRegistration)
  cc_objs       factory: cc_objs(tag) -> (name, path) of bbrbpf_test renamed
                bbrtest.ctl.unique(tag), for bbrctl's tests (module scope)

Every test also gets two checks for free: the session fails (not skips) with
a clear message when it lacks root, bpffs or a tool; and after each test
nothing it created may remain - struct_ops maps, CCs, namespaces or pins.
"""

import os
import re
import shutil
import subprocess
import time

import pytest

import bbrtest
from bbrtest import REPO
from bbrtest.cc import pin_layout

TEST_CC_NAME = "bbrbpf_test"
TEST_CC_OBJ = REPO / "selftests" / "progs" / "bbrbpf_test_cc.bpf.o"
NO_SSTHRESH_OBJ = REPO / "selftests" / "progs" / "bbrbpf_test_nossthresh.bpf.o"
# struct_ops maps, CCs and namespaces go away asynchronously (RCU, the netns
# cleanup workqueue, sockets closing): give them this long before calling
# anything a leak.
LEAK_SETTLE_S = 3.0
REQUIRED_TOOLS = ("ip", "tc", "ethtool", "bpftool", "mount")


# include/bbr_pins.h, as the tests read it
PINS = pin_layout()
# The layout version of bbr3's state records (bbrctl stat's "version"), as
# include/bbr3_state.h defines it.
STATE_VERSION = int(re.search(r"^#define\s+BBR3_STATE_VERSION\s+(\d+)",
                              (REPO / "include" / "bbr3_state.h").read_text(),
                              re.M).group(1))


@pytest.fixture(scope="session", autouse=True)
def environment():
    """Fail every test, with the reason, when the host cannot run them."""
    problems = []
    if os.geteuid() != 0:
        problems.append("not root: namespaces, qdiscs and struct_ops need "
                        "CAP_NET_ADMIN, CAP_SYS_ADMIN and CAP_BPF (run with sudo)")
    missing = [tool for tool in REQUIRED_TOOLS if shutil.which(tool) is None]
    if missing:
        problems.append(f"missing tools: {', '.join(missing)} (run `make setup`)")
    if not problems:
        try:
            bbrtest.ensure_bpffs()
        except bbrtest.BbrtestError as e:
            problems.append(f"no bpffs on {bbrtest.BPFFS_ROOT}: {e}")
    if problems:
        pytest.fail("integration tests cannot run here:\n  " + "\n  ".join(problems),
                    pytrace=False)


# The 4-argument cong_control of Linux 6.10 that every CC here implements.
CONG_CONTROL_ARGS = 4


@pytest.fixture(autouse=True)
def capable_kernel(request, environment):
    """On a kernel bbr-bpf refuses (cong_control without its 4 arguments,
    e.g. Debian bookworm's 6.1) skip, saying why, every test but those
    marked any_kernel, which check the refusal itself. A skip is not a pass:
    the kernel matrix shows it as one."""
    if request.node.get_closest_marker("any_kernel"):
        return
    nargs = bbrtest.cc.kernel_cong_control_args()
    if nargs != CONG_CONTROL_ARGS:
        pytest.skip(f"this kernel's tcp_congestion_ops.cong_control takes {nargs} "
                    f"arguments, bbr-bpf needs {CONG_CONTROL_ARGS} (Linux 6.10+): "
                    f"refused by bbrctl (test_this_kernel_runs_bbr_bpf_or_is_refused_by_name)")


# Set by the kernel matrix's guest (selftests/kernels/guest-init) to why the
# kernel has no loadable modules: Debian's archive carries no modules package
# for it. Only there does a missing qdisc or device count as a skip.
NO_MODULES_ENV = "BBRTEST_NO_MODULES"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that needed a module of a kernel known to have none (the
    matrix's guests of such kernels) is a skip, with both reasons; anywhere
    else bbrtest.KernelLacks is the failure it says."""
    outcome = yield
    why = os.environ.get(NO_MODULES_ENV)
    if not why or call.excinfo is None or not call.excinfo.errisinstance(bbrtest.KernelLacks):
        return
    rep = outcome.get_result()
    rep.outcome = "skipped"
    rep.longrepr = (str(item.path), item.location[1] or 0,
                    f"Skipped: {call.excinfo.value}: {why}")


def _own_tag():
    """bbrtest puts <pid>- into every namespace and pin directory it names."""
    return f"{os.getpid()}-"


def _snapshot():
    # CCs and struct_ops maps cannot be told apart by creator; namespaces and
    # pins can, so another suite running at the same time is not blamed here.
    return {
        "struct_ops map ids": bbrtest.struct_ops_ids(),
        "congestion controls": set(bbrtest.available_ccs()),
        "namespaces of this process": {ns for ns in bbrtest.list_netns() if _own_tag() in ns},
        "pins of this process": {p.name for p in bbrtest.BPFFS_ROOT.glob(f"*-{_own_tag()}*")},
    }


def _leaks(before):
    now = _snapshot()
    return {what: sorted(now[what] - before[what])
            for what in now if now[what] - before[what]}


@pytest.fixture(autouse=True)
def no_leaks(environment):
    """Fail the test if anything it created outlives it."""
    before = _snapshot()
    yield
    deadline = time.monotonic() + LEAK_SETTLE_S
    leaks = _leaks(before)
    while leaks and time.monotonic() < deadline:
        time.sleep(bbrtest.POLL_S)
        leaks = _leaks(before)
    if leaks:
        _remove_own_leftovers(leaks)
        pytest.fail(f"test left behind (after {LEAK_SETTLE_S} s): {leaks} (CCs and "
                    f"struct_ops maps: unless another process registered some meanwhile)",
                    pytrace=False)


def _remove_own_leftovers(leaks):
    """Delete what this process provably created (its pid is in the name), so
    one leaking test does not break the ones after it."""
    for ns in leaks.get("namespaces of this process", []):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)
    for name in leaks.get("pins of this process", []):
        bbrtest.remove_pin_dir(bbrtest.BPFFS_ROOT / name)


def make_target(*targets):
    """(Re)build targets through the Makefile; the test fails with make's output."""
    try:
        bbrtest.make(*targets)
    except bbrtest.BbrtestError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def test_cc_obj(environment):
    """The bbrbpf_test object, (re)built through the Makefile if needed."""
    make_target(str(TEST_CC_OBJ.relative_to(REPO)))
    return TEST_CC_OBJ


@pytest.fixture
def test_cc(test_cc_obj):
    """bbrbpf_test registered for the duration of the test."""
    with bbrtest.StructOpsRegistration(test_cc_obj, cc_name=TEST_CC_NAME) as reg:
        yield reg


@pytest.fixture(scope="module")
def cc_objs(tmp_path_factory):
    """named(tag, name=None, no_ssthresh=False) -> (name, path) of a test CC
    object: the built bbrbpf_test (or its variant without ssthresh) renamed
    name, by default bbrtest.ctl.unique(tag)."""
    make_target(*(str(o.relative_to(REPO)) for o in (TEST_CC_OBJ, NO_SSTHRESH_OBJ)))
    out = tmp_path_factory.mktemp("bbrctl-objs")
    cache = {}

    def named(tag, name=None, no_ssthresh=False):
        name = name or bbrtest.ctl.unique(tag)
        key = (name, no_ssthresh)
        if key not in cache:
            obj = bbrtest.cc.renamed_copy(NO_SSTHRESH_OBJ if no_ssthresh else TEST_CC_OBJ,
                                          TEST_CC_NAME, name, out / f"{tag}.bpf.o")
            cache[key] = (name, obj)
        return cache[key]

    return named


@pytest.fixture
def topo():
    with bbrtest.Topology() as t:
        yield t


@pytest.fixture
def make_topo():
    """Factory for topologies with arguments; all are deleted after the test."""
    made = []

    def make(**kw):
        t = bbrtest.Topology(**kw)
        made.append(t)
        return t.__enter__()

    yield make
    errors = []
    for t in reversed(made):
        try:
            t.close()
        except bbrtest.BbrtestError as e:
            errors.append(str(e))
    if errors:
        pytest.fail("; ".join(errors), pytrace=False)
