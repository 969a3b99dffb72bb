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
  CcParams       `bbrctl set --cgroup CG NAME k=v...` and `--reset` after the
                 run; when bbrctl has no `set` yet: global `bbrctl params
                 NAME k=v...`, the previous values read first and written
                 back after the run.
  EtsAttach      `bbrctl attach --cgroup CG --cc CC` (plus `--ets` when
                 bbrctl offers it for CCs that do not need ETS themselves),
                 `bbrctl detach --cgroup CG` after the run.

All of them are context managers that undo what they did, also on failure.
Callers hold /tmp/bbrbpf-kernel.lock around them (runner.kernel_lock).
"""

import functools
import itertools
import json
import os
import re
import subprocess
from pathlib import Path

import bbrtest

from .path import REPO, LabError

BBRCTL = REPO / "loader" / "bbrctl"
CG_PREFIX = "lab"                                # the lab's cgroup prefix
BBRCTL_TIMEOUT_S = 30.0
# Parameter keys per project CC: the rows of the parameter table
# (include/bbr_params.h) and, for bbr_swift, the fields of struct swift_cfg
# (include/bbr_swift.h). Read from the headers so a new key needs no edit here.
BBR_PARAMS_HDR = REPO / "include" / "bbr_params.h"
SWIFT_HDR = REPO / "include" / "bbr_swift.h"
PARAM_CCS = ("bbr3", "bbr_swift", "dctcp_bpf")

_counter = itertools.count()


def _struct_fields(header, struct):
    """Field names of `struct NAME {...}` in a C header (u32 x; lines), no _reserved."""
    try:
        text = Path(header).read_text()
    except OSError:
        return set()
    m = re.search(r"struct\s+" + struct + r"\s*\{(.*?)\};", text, re.S)
    if not m:
        return set()
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    return {n for n in re.findall(r"\b(\w+)\s*(?:\[[^\]]*\])?\s*;", body)
            if not n.startswith("_")}


def _table_keys(header):
    """Key names of the BBR_PARAM(name, ...) rows of the parameter table."""
    try:
        text = Path(header).read_text()
    except OSError:
        return set()
    return set(re.findall(r"^\s*BBR_PARAM\((\w+),", text, re.M))


@functools.lru_cache(maxsize=None)
def param_keys(cc):
    """The keys `[cc_params.cc]` may set (empty: cc has no parameters)."""
    bbr = _table_keys(BBR_PARAMS_HDR)
    if cc == "bbr3":
        return frozenset(bbr)
    if cc == "bbr_swift":
        # keep_ecn: bbrctl set's name for the SWIFT_CFG_F_KEEP_ECN flag
        return frozenset(bbr | _struct_fields(SWIFT_HDR, "swift_cfg") | {"keep_ecn"})
    return frozenset()


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
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
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

def _bbrctl(args, check=True):
    if not os.access(BBRCTL, os.X_OK):
        raise LabError(f"{BBRCTL}: not built (run `make`)")
    return bbrtest.run([BBRCTL, *args], timeout=BBRCTL_TIMEOUT_S, check=check)


def bbrctl_help(cmd):
    """bbrctl's help text of cmd, or None when bbrctl lacks that command."""
    if not os.access(BBRCTL, os.X_OK):
        return None
    cp = subprocess.run([str(BBRCTL), "help", cmd], capture_output=True, text=True, timeout=10)
    text = cp.stdout + cp.stderr
    if cp.returncode != 0 or "unknown" in text.lower().split("\n")[0]:
        return None
    return text


def has_set():
    h = bbrctl_help("set")
    return bool(h and "--cgroup" in h)


class CcParams:
    """Parameters of CC cc for the sockets of cgroup cg (see the module doc)."""

    def __init__(self, cc, params, cg):
        self.cc, self.params, self.cg = cc, dict(params), cg
        self.method = None
        self._old = None

    def __enter__(self):
        kv = [f"{k}={v}" for k, v in self.params.items()]
        if has_set():
            _bbrctl(["set", "--cgroup", str(self.cg.path), self.cc, *kv])
            self.method = "bbrctl set --cgroup"
            return self
        cur = _bbrctl(["--json", "params", self.cc])
        try:
            old = json.loads(cur.stdout)
        except ValueError:
            raise LabError(f"`bbrctl --json params {self.cc}` printed no JSON: "
                           f"{cur.stdout[:200]!r}") from None
        old = old.get("params", old) if isinstance(old, dict) else {}
        missing = [k for k in self.params if k not in old]
        if missing:
            raise LabError(f"bbrctl has no `set --cgroup`, and the global parameters of "
                           f"{self.cc} have no {missing}")
        self._old = {k: old[k] for k in self.params}
        cp = _bbrctl(["params", self.cc, *kv], check=False)
        if cp.returncode != 0:
            raise LabError(f"bbrctl has neither `set --cgroup` nor `params NAME key=value` "
                           f"({(cp.stderr or cp.stdout).strip()})")
        self.method = "bbrctl params (global; restored after the run)"
        return self

    def __exit__(self, *exc):
        if self.method is None:
            return False
        if self._old is None:
            _bbrctl(["set", "--cgroup", str(self.cg.path), self.cc, "--reset"])
        else:
            _bbrctl(["params", self.cc, *(f"{k}={v}" for k, v in self._old.items())])
        self.method = None
        return False


class EtsAttach:
    """The ETS sockops program (and cc_select for cc) on cgroup cg."""

    def __init__(self, cc, cg):
        self.cc, self.cg = cc, cg
        self.attached = False
        self.ets = None             # True: ETS attached; False: bbrctl could not

    def __enter__(self):
        h = bbrctl_help("attach") or ""
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
