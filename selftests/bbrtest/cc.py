# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Congestion controls: the kernel's list, bpffs, and registering a BPF
object's struct_ops CC for a with-block (bpftool or bbrctl)."""

import itertools
import json
import os
import re
import sys
import threading
from pathlib import Path

from .base import BBRCTL, REPO, BbrtestError, run, wait_for

__all__ = ["available_ccs", "struct_ops_ids", "ensure_bpffs", "StructOpsRegistration",
           "BbrctlRegistration", "register_cc", "bbrctl_can_load", "RegistrationError",
           "BPFFS_ROOT", "CC_LIST_PATH", "renamed_copy", "pin_layout"]

BPFFS_ROOT = Path("/sys/fs/bpf")
BBRCTL_PIN_ROOT = BPFFS_ROOT / "bbr-bpf"        # where bbrctl pins (docs/bbrctl.md)
CC_LIST_PATH = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
UNREGISTER_TIMEOUT_S = 2.0      # until the CC name is gone from the list

_counter_lock = threading.Lock()


def pin_layout(header=REPO / "include" / "bbr_pins.h"):
    """The string macros of include/bbr_pins.h, the bpffs layout bbrctl and the
    BPF objects use: {"PIN_ROOT": "/sys/fs/bpf/bbr-bpf", "PIN_LINK": "link", ...}.
    Each is a sequence of string literals and earlier macros, as in C."""
    pins = {}
    for name, body in re.findall(r"^#define[ \t]+(\w+)[ \t]+(.+?)[ \t]*(?:/\*.*)?$",
                                 Path(header).read_text(), re.M):
        parts = re.findall(r'"([^"]*)"|(\w+)', body)
        if parts and all(lit or ref in pins for lit, ref in parts):
            pins[name] = "".join(lit or pins[ref] for lit, ref in parts)
    return pins


class RegistrationError(BbrtestError):
    """A struct_ops object could not be registered or unregistered."""


def available_ccs():
    """Names in /proc/sys/net/ipv4/tcp_available_congestion_control."""
    return CC_LIST_PATH.read_text().split()


def struct_ops_ids():
    """Ids of all struct_ops maps the kernel holds (for leak checks)."""
    cp = run(["bpftool", "-j", "struct_ops", "show"])
    return {entry["id"] for entry in json.loads(cp.stdout or "[]")}


def ensure_bpffs():
    """Mount bpffs on /sys/fs/bpf unless it already is (it is left mounted)."""
    if _is_bpffs(BPFFS_ROOT):
        return
    run(["mount", "-t", "bpf", "bpf", str(BPFFS_ROOT)])
    if not _is_bpffs(BPFFS_ROOT):
        raise BbrtestError(f"mounted bpffs but {BPFFS_ROOT} still is not one")


def _is_bpffs(path):
    with open("/proc/self/mounts") as f:
        return any(fields[1] == str(path) and fields[2] == "bpf"
                   for fields in (line.split() for line in f))


class _Registration:
    """A CC registered for the duration of a with-block; see the subclasses.

    Subclasses implement _register() and _release(). Entering checks that
    the CC appeared in the available list; leaving (or unregister()) releases
    it and waits until every name it added has left the list again, also
    when registration failed half-way.
    """

    def __init__(self, obj, cc_name=None):
        self.obj = Path(obj)
        self.cc_name = cc_name
        self._added = set()     # CC names that appeared when registering
        self._active = False

    def __enter__(self):
        if not self.obj.is_file():
            raise RegistrationError(f"{self.obj}: no such BPF object (run `make`)")
        ensure_bpffs()
        before = set(available_ccs())
        if self.cc_name in before:
            raise RegistrationError(
                f"CC {self.cc_name!r} is already registered (a leftover pin under "
                f"{BPFFS_ROOT}? `bpftool link show`)")
        self._active = True     # from here on, leaving releases whatever was done
        try:
            self._register()
            self._added = set(available_ccs()) - before
            self._check_registered()
        except BaseException:
            self._unregister_quietly()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.unregister()
        else:
            self._unregister_quietly()      # do not hide the original error
        return False

    def _check_registered(self):
        if self.cc_name is None:
            if len(self._added) != 1:
                raise RegistrationError(f"{self.obj}: expected one new CC after registering, "
                                        f"got {sorted(self._added) or 'none'}; pass cc_name")
            self.cc_name = next(iter(self._added))
        elif self.cc_name not in self._added:
            raise RegistrationError(
                f"{self.obj} registered, but CC {self.cc_name!r} is not in {CC_LIST_PATH} "
                f"(new: {sorted(self._added) or 'none'}); wrong .name?")

    def unregister(self):
        """Release the CC; wait until its name has left the available list."""
        if not self._active:
            return
        self._active = False
        self._release()
        names = self._added | ({self.cc_name} if self.cc_name else set())
        if not wait_for(lambda: not names & set(available_ccs()), UNREGISTER_TIMEOUT_S):
            raise RegistrationError(
                f"CC {sorted(names & set(available_ccs()))} still registered "
                f"{UNREGISTER_TIMEOUT_S} s after release (another pin or a netns "
                f"default holding it?)")

    def _unregister_quietly(self):
        try:
            self.unregister()
        except BbrtestError as e:
            print(f"bbrtest: {e}", file=sys.stderr)

    def _register(self):
        raise NotImplementedError

    def _release(self):
        raise NotImplementedError


class StructOpsRegistration(_Registration):
    """Register a BPF object's struct_ops CC(s) with bpftool for a with-block.

    `bpftool struct_ops register OBJ PIN_DIR` pins one link per struct_ops
    map in a fresh PIN_DIR (/sys/fs/bpf/bbrbpf-test-<pid>-<n>); the CC stays
    registered while a pin exists. Exit removes the pins and PIN_DIR, then
    waits until the CC name is gone from the available list.

    cc_name: the CC's .name; if None, it is inferred as the one name that
    appeared in the available list (an object with several CCs needs it).
    Attributes: cc_name, pin_dir (Path), obj (Path).
    """

    def __init__(self, obj, cc_name=None, pin_prefix="bbrbpf-test"):
        super().__init__(obj, cc_name)
        self.pin_dir = _fresh_pin_dir(pin_prefix)

    def _register(self):
        run(["bpftool", "struct_ops", "register", str(self.obj), str(self.pin_dir)])

    def _release(self):
        if self.pin_dir.is_dir():
            for pin in self.pin_dir.iterdir():
                pin.unlink()
            self.pin_dir.rmdir()


def _fresh_pin_dir(prefix):
    with _counter_lock:
        for n in itertools.count():
            path = BPFFS_ROOT / f"{prefix}-{os.getpid()}-{n}"
            if not path.exists() and path not in _reserved_pin_dirs:
                _reserved_pin_dirs.add(path)
                return path


_reserved_pin_dirs = set()


class BbrctlRegistration(_Registration):
    """Register a CC with the project's loader for a with-block.

    `bbrctl load --obj OBJ` pins the link (and the state iterator, so that
    `bbrctl stat` works) under /sys/fs/bpf/bbr-bpf/NAME; exit runs
    `bbrctl unload` for what it loaded. Same interface as
    StructOpsRegistration; pin_dir is that directory.
    """

    def __init__(self, obj, cc_name=None, bbrctl=BBRCTL):
        super().__init__(obj, cc_name)
        self.bbrctl = Path(bbrctl)
        self._loaded = []

    @property
    def pin_dir(self):
        return BBRCTL_PIN_ROOT / self.cc_name if self.cc_name else None

    def _loaded_names(self):
        cp = run([str(self.bbrctl), "--json", "list"])
        return {entry["name"] for entry in json.loads(cp.stdout or "[]")}

    def _register(self):
        before = self._loaded_names()
        try:
            run([str(self.bbrctl), "load", "--obj", str(self.obj)])
        finally:
            self._loaded = sorted(self._loaded_names() - before)

    def _release(self):
        if self._loaded:
            run([str(self.bbrctl), "unload", *self._loaded])
            self._loaded = []


def bbrctl_can_load(bbrctl=BBRCTL):
    """Whether bbrctl exists and has `load --obj`."""
    if not os.access(bbrctl, os.X_OK):
        return False
    cp = run([str(bbrctl), "help", "load"], check=False)
    return cp.returncode == 0 and "--obj" in cp.stdout


def register_cc(obj, cc_name=None, loader="auto", bbrctl=BBRCTL):
    """A registration context manager: loader is "bbrctl", "bpftool" or "auto"
    (bbrctl when bbrctl_can_load(), else bpftool)."""
    if loader == "auto":
        loader = "bbrctl" if bbrctl_can_load(bbrctl) else "bpftool"
    if loader == "bbrctl":
        return BbrctlRegistration(obj, cc_name, bbrctl)
    if loader == "bpftool":
        return StructOpsRegistration(obj, cc_name)
    raise ValueError(f"unknown loader {loader!r} (bbrctl, bpftool or auto)")


def renamed_copy(obj, old_name, new_name, dst):
    """Copy BPF object obj to dst with its CC old_name renamed new_name.

    For objects built for the purpose (selftests/progs/bbrbpf_test_cc.bpf.c):
    the CC's name is both its struct_ops variable and its .name, and no
    other string in the object equals it. Every NUL-delimited occurrence -
    the symbol, the BTF and DWARF strings, the .name field - is overwritten
    in place, NUL-padded, so no offset moves: new_name may not be longer.
    Returns dst (a Path)."""
    old, new = old_name.encode(), new_name.encode()
    if not new or len(new) > len(old):
        raise ValueError(f"{new_name!r}: 1 to {len(old)} characters, to fit {old_name!r}")
    data = Path(obj).read_bytes()
    pattern = b"\0" + old + b"\0"
    if pattern not in data:
        raise RegistrationError(f"{obj}: no CC named {old_name!r} to rename")
    dst = Path(dst)
    dst.write_bytes(data.replace(pattern, b"\0" + new.ljust(len(old), b"\0") + b"\0"))
    return dst
