# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Per-run CC configuration: a cgroup v2 per run, parameters, ETS.

A scenario's `[cc_params.NAME]` and `ets = true` (docs/lab.md) need the
flow processes of one run - flowgen's clients and servers - in a cgroup of
their own, so that `bbrctl` can configure exactly their sockets:

  RunCgroup      mkdir <cgroup2 root>/lab<pid>-<n> (the root is found the way
                 bbrctl finds it: /sys/fs/cgroup when that is cgroup2, else
                 the hybrid layout's /sys/fs/cgroup/unified, mounted there if
                 nothing is); processes are placed into it by a `sh` wrapper
                 that writes its own pid into cgroup.procs and then execs the
                 command (so every socket is created inside). rmdir on exit,
                 after moving any straggler back to the root.
  CcParams       `bbrctl set --cgroup CG NAME k=v...` (a profile as
                 `profile=NAME`), and `--reset` after the run.
  EtsAttach      `bbrctl attach --cgroup CG --cc CC` (plus `--ets` when
                 bbrctl offers it for CCs that do not need ETS themselves),
                 `bbrctl detach --cgroup CG` after the run.

All of them are context managers that undo what they did, also on failure.
Callers hold /tmp/bbrbpf-kernel.lock around them (runner.kernel_lock).
"""

import functools
import itertools
import os
import re
from pathlib import Path

import bbrtest

from .path import REPO, LabError

CG_PREFIX = "lab"                                # the lab's cgroup prefix
BBRCTL_TIMEOUT_S = 30.0
# Parameter keys per project CC: the rows of the parameter table
# (include/bbr_params.h: BBR_PARAM rows for every CC on the BBRv3 core,
# SWIFT_PARAM rows for bbr_swift only) and its profiles. Read from the
# header so a new key or profile needs no edit here.
BBR_PARAMS_HDR = REPO / "include" / "bbr_params.h"
PARAM_CCS = ("bbr3", "bbr_swift")
PROFILE_KEY = "profile"
VARIANT_SEP = ":"                                # "bbr3:v3plus": bbr3, profile v3plus
# Profiles that are an object of their own: the variant runs that object,
# whose ops flags negotiate ECN (PROFILE_ECN) and whose parameter sets
# start from the profile, sender and receiver alike (docs/l4s.md).
PROFILE_OBJECT = {"l4s": "bbr3_l4s"}
PROFILE_ECN = {"l4s": "accecn"}

_counter = itertools.count()


def _header():
    try:
        return Path(BBR_PARAMS_HDR).read_text()
    except OSError:
        return ""


def _table_keys(kind):
    """Key names of the KIND(name, ...) rows of the parameter table."""
    return set(re.findall(r"^\s*" + kind + r"\((\w+),", _header(), re.M))


@functools.lru_cache(maxsize=None)
def profiles():
    """The profile names of BBR_PROFILE_NAMES, in order."""
    m = re.search(r"#define\s+BBR_PROFILE_NAMES\s*\{([^}]*)\}", _header())
    return tuple(re.findall(r'"(\w+)"', m.group(1))) if m else ()


def _l4s_keys():
    """The L4S mode's rows (BBR_PARAM_TABLE_L4S): bbr3_l4s's, which bbrctl
    refuses for bbr3 and bbr_swift."""
    m = re.search(r"^#define\s+BBR_PARAM_TABLE_L4S\b(.*?)^#define", _header(), re.M | re.S)
    return set(re.findall(r"^\s*BBR_PARAM\((\w+),", m.group(1), re.M)) if m else set()


@functools.lru_cache(maxsize=None)
def param_keys(cc):
    """The keys `[cc_params.cc]` may set (empty: cc has no parameters)."""
    core = (_table_keys("BBR_PARAM") - _l4s_keys()) | {PROFILE_KEY}
    if cc == "bbr3":
        return frozenset(core)
    if cc == "bbr_swift":
        return frozenset(core | _table_keys("SWIFT_PARAM"))
    return frozenset()


def split_variant(spec):
    """"bbr3:v3plus" -> ("bbr3", "v3plus"); "cubic" -> ("cubic", None).
    A variant is a project CC run with one of its profiles (bbrctl set
    --cgroup ... profile=NAME), named apart in the results."""
    cc, sep, prof = spec.partition(VARIANT_SEP)
    if not sep:
        return cc, None
    if cc not in PARAM_CCS:
        raise LabError(f"{spec!r}: only {list(PARAM_CCS)} have profiles")
    if prof not in profiles():
        raise LabError(f"{spec!r}: no profile {prof!r} (profiles: {', '.join(profiles())})")
    return cc, prof


def variant_ecn(spec):
    """The ECN mode the variant's CC negotiates itself, or None."""
    return PROFILE_ECN.get(split_variant(spec)[1])


def variant_object(spec):
    """The object (bpf/NAME.bpf.o) the variant runs: its profile's own
    (bbr3:l4s -> bbr3_l4s), else its CC's."""
    cc, prof = split_variant(spec)
    return PROFILE_OBJECT.get(prof, cc)


def validate_params(cc_params, bad):
    """Scenario check of [cc_params]: known CCs, known keys, integer values."""
    if not isinstance(cc_params, dict):
        bad("[cc_params] must be a table of tables ([cc_params.NAME])")
    for cc, kv in cc_params.items():
        if cc not in PARAM_CCS:
            bad(f"[cc_params.{cc}]: unknown congestion control {cc!r}: parameters exist "
                f"only for the project's CCs {list(PARAM_CCS)}")
        if not isinstance(kv, dict) or not kv:
            bad(f"[cc_params.{cc}] must be a non-empty table of key = value")
        keys = param_keys(cc)
        for k, v in kv.items():
            if k not in keys:
                bad(f"[cc_params.{cc}]: unknown key {k!r} (known: {sorted(keys)})")
            if k == PROFILE_KEY:
                if v not in profiles():
                    bad(f"[cc_params.{cc}].profile: one of {list(profiles())}, got {v!r}")
            elif isinstance(v, bool) or not isinstance(v, int) or v < 0:
                bad(f"[cc_params.{cc}].{k}: needs a non-negative integer, got {v!r}")


# ---- cgroup v2 ----

def cgroup2_root():
    """The cgroup2 hierarchy, as bbrctl finds it (mounting the hybrid one if needed)."""
    return bbrtest.cgroup2_root(mount=True)


class RunCgroup(bbrtest.Cgroup):
    """A cgroup v2 directory for one run's flow processes; what still runs
    in it at the end is moved back to the root, not killed."""

    def __init__(self, name=None):
        super().__init__(name or f"{CG_PREFIX}{os.getpid()}-{next(_counter)}", mount=True)


# ---- bbrctl ----

def _bbrctl(args):
    """bbrctl ARGS, exit 0 or LabError (BbrctlError) with its output."""
    return bbrtest.bbrctl(*args, check=0, timeout=BBRCTL_TIMEOUT_S)


class CcParams:
    """Parameters of CC cc for the sockets of cgroup cg (see the module doc).
    A profile is written first, so the scenario's own keys override it."""

    def __init__(self, cc, params, cg):
        self.cc, self.params, self.cg = cc, dict(params), cg
        self.method = None

    def __enter__(self):
        kv = sorted((f"{k}={v}" for k, v in self.params.items()),
                    key=lambda x: not x.startswith(PROFILE_KEY + "="))
        _bbrctl(["set", "--cgroup", str(self.cg.path), self.cc, *kv])
        self.method = "bbrctl set --cgroup"
        return self

    def __exit__(self, *exc):
        if self.method is not None:
            _bbrctl(["set", "--cgroup", str(self.cg.path), self.cc, "--reset"])
            self.method = None
        return False


class EtsAttach:
    """The ETS sockops program (and cc_select for cc) on cgroup cg."""

    def __init__(self, cc, cg):
        self.cc, self.cg = cc, cg
        self.attached = False
        self.ets = None             # True: ETS attached; False: bbrctl could not

    def __enter__(self):
        h = bbrtest.ctl.help_text("attach") or ""
        argv = ["attach", "--cgroup", str(self.cg.path), "--cc", self.cc]
        if "--ets" in h:
            argv.append("--ets")
        cp = _bbrctl(argv)
        self.attached = True
        self.ets = "with ETS" in (cp.stderr + cp.stdout) or "--ets" in argv
        self.message = (cp.stderr or cp.stdout).strip()
        return self

    def __exit__(self, *exc):
        if self.attached:
            _bbrctl(["detach", "--cgroup", str(self.cg.path)])
            self.attached = False
        return False
