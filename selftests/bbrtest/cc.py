# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Congestion controls: the kernel's list, bpffs, and registering a BPF
object's struct_ops CC for a with-block (bpftool or bbrctl)."""

import itertools
import json
import os
import re
import shutil
import struct
import sys
import tempfile
import threading
from pathlib import Path

from .base import BBRCTL, REPO, BbrtestError, run, wait_for
from .btf import VMLINUX_BTF, kernel_cong_control_args  # noqa: F401 (bbrtest.cc's API)

# A load runs the verifier over bbr3's programs: under a second on the
# reference machine, but over 15 s (base.CMD_TIMEOUT_S) in a kernel matrix
# guest under TCG on a loaded host, where the verifier figures alone took
# 20-60 s for three objects.
LOAD_TIMEOUT_S = 180.0

__all__ = ["available_ccs", "struct_ops_ids", "ensure_bpffs", "StructOpsRegistration",
           "BbrctlRegistration", "register_cc", "bbrctl_can_load", "RegistrationError",
           "BPFFS_ROOT", "CC_LIST_PATH", "renamed_copy", "cc_name_copy", "own_cc_name",
           "pin_layout"]

BPFFS_ROOT = Path("/sys/fs/bpf")
BBRCTL_PIN_ROOT = BPFFS_ROOT / "bbr-bpf"        # where bbrctl pins (docs/bbrctl.md)
CC_LIST_PATH = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
UNREGISTER_TIMEOUT_S = 2.0      # until the CC name is gone from the list
CC_NAME_MAX = 15                # TCP_CA_NAME_MAX - 1
CC_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,%d}" % CC_NAME_MAX)  # what bbrctl accepts

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


def own_cc_name(tag):
    """A CC name of this process: tag followed by the pid, at most 15
    characters. Tests register the project's CCs under such names, so that
    they run beside the same CCs loaded by an operator (`bbrctl load bbr3`)
    or by another process, and never touch those."""
    name = f"{tag}{os.getpid()}"
    if not CC_NAME_RE.fullmatch(name):
        raise ValueError(f"{name!r}: a CC name is 1 to {CC_NAME_MAX} of letters, digits, "
                         f"'_', '-', '.' (shorten the tag {tag!r})")
    return name


class _Registration:
    """A CC registered for the duration of a with-block; see the subclasses.

    Subclasses implement _register() and _release(). Entering checks that
    the CC appeared in the available list; leaving (or unregister()) releases
    it and waits until every name it added has left the list again, also
    when registration failed half-way.

    as_name registers the object's CC under that name instead of the .name
    it was built with (cc_name is then as_name).
    """

    def __init__(self, obj, cc_name=None, as_name=None):
        self.obj = Path(obj)
        if as_name is not None:
            if cc_name not in (None, as_name):
                raise ValueError(f"cc_name {cc_name!r} and as_name {as_name!r} differ")
            if not CC_NAME_RE.fullmatch(as_name):
                raise ValueError(f"{as_name!r}: not a CC name (1 to {CC_NAME_MAX} of "
                                 f"letters, digits, '_', '-', '.')")
            cc_name = as_name
        self.cc_name = cc_name
        self.as_name = as_name
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
        if self.cc_name in self._added:
            names = {self.cc_name}      # not what others registered meanwhile
        else:                           # a wrong .name: whatever appeared may be ours
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
    as_name: register a copy of OBJ whose CC's .name is as_name
    (cc_name_copy; the object's own name is the file's, NAME.bpf.o, unless
    obj_cc_name says otherwise); the copy lives in a temporary directory
    until exit. bpftool still registers it as it would OBJ.
    Attributes: cc_name, pin_dir (Path), obj (Path), registered_obj (Path).
    """

    def __init__(self, obj, cc_name=None, pin_prefix="bbrbpf-test", as_name=None,
                 obj_cc_name=None):
        super().__init__(obj, cc_name, as_name)
        self.pin_dir = _fresh_pin_dir(pin_prefix)
        self.obj_cc_name = obj_cc_name
        self.registered_obj = self.obj
        self._tmpdir = None

    def _register(self):
        if self.as_name is not None:
            self._tmpdir = Path(tempfile.mkdtemp(prefix="bbrtest-cc-"))
            self.registered_obj = cc_name_copy(self.obj, self.as_name,
                                               self._tmpdir / f"{self.as_name}.bpf.o",
                                               old_name=self.obj_cc_name)
        run(["bpftool", "struct_ops", "register", str(self.registered_obj), str(self.pin_dir)],
            timeout=LOAD_TIMEOUT_S)

    def _release(self):
        remove_pin_dir(self.pin_dir)
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None


def remove_pin_dir(path):
    """Remove a bpffs directory of pins (the pins first: bpffs has no
    recursive rmdir); nothing if it is not there."""
    path = Path(path)
    if not path.is_dir():
        return
    for pin in path.iterdir():
        pin.unlink()
    path.rmdir()


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
    `bbrctl unload` for what it loaded. With as_name, `bbrctl load --name
    AS_NAME --obj OBJ`: bbrctl registers the object's CC as AS_NAME (and
    gives a bbr_swift copy the shared ETS map as to any). Same interface as
    StructOpsRegistration; pin_dir is that directory.
    """

    def __init__(self, obj, cc_name=None, bbrctl=BBRCTL, as_name=None, ecn=None):
        super().__init__(obj, cc_name, as_name)
        self.bbrctl = Path(bbrctl)
        self.ecn = ecn
        self._loaded = []

    @property
    def pin_dir(self):
        return BBRCTL_PIN_ROOT / self.cc_name if self.cc_name else None

    def _register(self):
        rename = ["--name", self.as_name] if self.as_name is not None else []
        rename += ["--ecn", self.ecn] if self.ecn else []
        pin_dir = self.pin_dir
        existed = pin_dir is not None and pin_dir.exists()
        try:
            cp = run([str(self.bbrctl), "load", *rename, "--obj", str(self.obj)],
                     timeout=LOAD_TIMEOUT_S)
        except BbrtestError:
            # bbrctl loads all or nothing, unless it was cut short (timeout)
            if pin_dir is not None and not existed and pin_dir.exists():
                self._loaded = [self.cc_name]
            raise
        # What bbrctl says it loaded, not what appeared in `bbrctl list`
        # meanwhile: other processes may load CCs at the same time.
        self._loaded = re.findall(r"^loaded (\S+) from ", cp.stdout, re.M)

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


def register_cc(obj, cc_name=None, loader="auto", bbrctl=BBRCTL, as_name=None, ecn=None):
    """A registration context manager: loader is "bbrctl", "bpftool" or "auto"
    (bbrctl when bbrctl_can_load(), else bpftool). as_name: register the
    object's CC under that name (see the two classes). ecn: `bbrctl load
    --ecn` (accecn, classic; needs as_name and bbrctl)."""
    if loader == "auto":
        loader = "bbrctl" if bbrctl_can_load(bbrctl) else "bpftool"
    if ecn and (loader != "bbrctl" or as_name is None):
        raise ValueError("ecn needs the bbrctl loader and as_name")
    if loader == "bbrctl":
        return BbrctlRegistration(obj, cc_name, bbrctl, as_name=as_name, ecn=ecn)
    if loader == "bpftool":
        return StructOpsRegistration(obj, cc_name, as_name=as_name)
    raise ValueError(f"unknown loader {loader!r} (bbrctl, bpftool or auto)")


def renamed_copy(obj, old_name, new_name, dst):
    """Copy BPF object obj to dst with its CC old_name renamed new_name.

    For objects built for the purpose (selftests/progs/bbrbpf_test_cc.bpf.c;
    the objects of bpf/ are not, see cc_name_copy):
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


_SHT_NOBITS = 8


def _elf_sections(data, path):
    """[(name, type, offset, size)] of the sections of an ELF64 little-endian
    object (the BPF objects clang builds here)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise RegistrationError(f"{path}: not an ELF64 little-endian object")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if not shnum or shstrndx >= shnum:
        raise RegistrationError(f"{path}: no section headers")
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
               for i in range(shnum)]
    strtab = headers[shstrndx][4]

    def name(off):
        start = strtab + off
        return data[start:data.index(b"\0", start)].decode()

    return [(name(h[0]), h[1], h[4], h[5]) for h in headers]


def cc_name_copy(obj, new_name, dst, old_name=None):
    """Copy BPF object obj to dst with its CC registered as new_name.

    Only the struct tcp_congestion_ops' .name changes: the 16 bytes of that
    char array in the struct_ops map's initial value (the .struct_ops.link
    or .struct_ops section), which is what the kernel registers the CC
    under - the same field `bbrctl load --name` writes before loading.
    Symbols, BTF, maps and programs keep their names, so this works for
    objects whose name is also a type or a prefix of other names (bbr3,
    bbr_swift), where renamed_copy cannot. old_name is the CC's current
    .name; by default the file's NAME of NAME.bpf.o (the convention of
    bpf/, docs/bbrctl.md). The field must occur exactly once.
    Returns dst (a Path)."""
    obj = Path(obj)
    if old_name is None:
        old_name = obj.name.removesuffix(".bpf.o")
    for n in (old_name, new_name):
        if not CC_NAME_RE.fullmatch(n):
            raise ValueError(f"{n!r}: not a CC name (1 to {CC_NAME_MAX} of letters, digits, "
                             f"'_', '-', '.')")
    field = CC_NAME_MAX + 1
    old, new = old_name.encode().ljust(field, b"\0"), new_name.encode().ljust(field, b"\0")
    data = obj.read_bytes()
    hits = []
    for name, sh_type, off, size in _elf_sections(data, obj):
        if sh_type == _SHT_NOBITS or not (name == ".struct_ops" or
                                          name.startswith(".struct_ops.")):
            continue
        at = data.find(old, off, off + size)
        while at >= 0:
            hits.append(at)
            at = data.find(old, at + 1, off + size)
    if len(hits) != 1:
        raise RegistrationError(f"{obj}: expected one struct_ops .name {old_name!r}, found "
                                f"{len(hits)}")
    out = bytearray(data)
    out[hits[0]:hits[0] + field] = new
    dst = Path(dst)
    dst.write_bytes(out)
    return dst
