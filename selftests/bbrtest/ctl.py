# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""bbrctl, the operator tool, as every test, the lab, the bench and the soak run it.

    from bbrtest.ctl import bbrctl, list_json, pin_dir

    cp = bbrctl("load", "--name", name, "bbr3", check=0)   # exit 0 or BbrctlError
    (e,) = [e for e in list_json() if e["name"] == name]
    bbrctl("unload", name, check=0)

One path (BBRCTL, the built loader/bbrctl), one runner (bbrctl()), and the
helpers more than one test file needs around it: the pin directory of a CC,
`bbrctl list --json`, the struct_ops maps, a cgroup with its own bbrctl
attach undone on exit, and a private bpffs for commands that must see no
other pin (PrivateBpffs).
"""

import json
import os
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

from .base import BBRCTL, BbrtestError
from .cc import CC_NAME_MAX, pin_layout
from .cgroup import Cgroup
from .netns import Namespaces

# Long enough for bbrctl's lock wait on a busy machine (other bbrctl runs
# hold it while they verify an object: seconds each).
BBRCTL_TIMEOUT_S = 30.0
PIN_ROOT = Path(pin_layout()["PIN_ROOT"])        # include/bbr_pins.h
HOLDER_TIMEOUT_S = 30.0                          # PrivateBpffs' holder process

__all__ = ["BBRCTL", "BBRCTL_TIMEOUT_S", "PIN_ROOT", "BbrctlError", "MADE", "unique", "argv", "available",
           "bbrctl", "help_text", "list_json", "pin_dir", "struct_ops_maps", "cgroup_progs",
           "ctl_cgroup", "ctl_netns", "PrivateBpffs"]


class BbrctlError(BbrtestError, AssertionError):
    """bbrctl exited with another status than the caller asked for; the
    message has its arguments, the status and both outputs. An
    AssertionError too, so that pytest reports it as a failed check."""


# The CC names unique() made in this process: what a cleanup may unload.
MADE = set()


def unique(tag):
    """A CC name of this process for bbrctl's tests, bc<pid><tag> (at most 15
    characters), remembered in MADE."""
    name = f"bc{os.getpid()}{tag}"
    if len(name) > CC_NAME_MAX:
        raise ValueError(f"{name!r} is longer than {CC_NAME_MAX} characters (shorten {tag!r})")
    MADE.add(name)
    return name


def argv(*args):
    """The command line of `bbrctl ARGS` (for Popen or a timed run)."""
    return [str(BBRCTL), *map(str, args)]


def available():
    """Whether bbrctl is built."""
    return os.access(BBRCTL, os.X_OK)


def bbrctl(*args, check=None, prefix=(), timeout=BBRCTL_TIMEOUT_S, **kw):
    """Run `bbrctl ARGS` (after the command prefix, e.g. nsenter's) and return
    the CompletedProcess with text output. check: the exit status expected
    (an int; None: any), else BbrctlError. A timeout raises
    subprocess.TimeoutExpired."""
    if not available():
        raise BbrtestError(f"{BBRCTL}: not built (run `make`)")
    if isinstance(check, bool):
        raise TypeError("check is an exit status (0, 1, 2) or None, not a bool")
    cp = subprocess.run([*map(str, prefix), *argv(*args)], capture_output=True, text=True,
                        timeout=timeout, **kw)
    if check is not None and cp.returncode != check:
        raise BbrctlError(f"bbrctl {' '.join(map(str, args))}: exit {cp.returncode}, "
                          f"expected {check}\nstdout: {cp.stdout}\nstderr: {cp.stderr}")
    return cp


def help_text(cmd):
    """bbrctl's help of cmd, or None when bbrctl is not built or lacks cmd."""
    if not available():
        return None
    cp = bbrctl("help", cmd)
    text = cp.stdout + cp.stderr
    if cp.returncode != 0 or "unknown" in text.lower().split("\n")[0]:
        return None
    return text


def list_json():
    """`bbrctl list --json`: one dict per CC under the pin root."""
    return json.loads(bbrctl("list", "--json", check=0).stdout)


def pin_dir(name):
    """Where bbrctl pins CC name."""
    return PIN_ROOT / name


def struct_ops_maps():
    """{id: name} of all struct_ops maps the kernel holds."""
    cp = subprocess.run(["bpftool", "-j", "struct_ops", "show"], capture_output=True,
                        text=True, timeout=BBRCTL_TIMEOUT_S, check=True)
    return {e["id"]: e.get("name", "") for e in json.loads(cp.stdout or "[]")}


def cgroup_progs(cg):
    """Names of the BPF programs attached to cgroup cg (bpftool)."""
    cp = subprocess.run(["bpftool", "-j", "cgroup", "show", str(cg)], capture_output=True,
                        text=True, timeout=BBRCTL_TIMEOUT_S, check=True)
    return [e["name"] for e in json.loads(cp.stdout.strip() or "[]")]


@contextmanager
def ctl_cgroup(tag):
    """A cgroup of this process (ctl<pid><tag>) for a with-block, as its
    path; whatever `bbrctl attach` put on it is detached on exit."""
    with Cgroup(f"ctl{os.getpid()}{tag}") as cg:
        try:
            yield cg.path
        finally:
            bbrctl("detach", "--cgroup", cg.path)     # harmless if not attached


@contextmanager
def ctl_netns(tag):
    """A network namespace of this process (ctl<pid><tag>), as its name."""
    with Namespaces(f"ctl{os.getpid()}{tag}") as nss:
        yield nss.names[0]


class PrivateBpffs:
    """A mount namespace of its own with a fresh bpffs on /sys/fs/bpf.

    A holder process (unshare -m, private propagation) mounts the bpffs and
    waits on its stdin; run() runs a command in that namespace (nsenter
    --mount), where bbrctl pins into the fresh bpffs and sees no other pin.
    The CC list and struct_ops maps stay the kernel's, shared by all.
    Closing stdin ends the holder, also when the test process dies: the
    namespace and its bpffs go, and with them any pin left there (the CC
    it kept registered is unregistered).
    """

    BPFFS = Path("/sys/fs/bpf")

    def __enter__(self):
        self.proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c",
             f"mount -t bpf bbrbpf-test {self.BPFFS} && echo ready && exec cat >/dev/null"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if line != "ready":             # sh has given up (mount failed)
            self.proc.stdin.close()
            self.proc.wait(timeout=HOLDER_TIMEOUT_S)
            why = self.proc.stderr.read().strip() or line
            self.close()
            raise BbrtestError(f"no fresh bpffs in a private mount namespace: {why}")
        return self

    @property
    def enter(self):
        """The command prefix that runs a command in the namespace."""
        return ["nsenter", f"--mount=/proc/{self.proc.pid}/ns/mnt", "--"]

    def run(self, *argv, check=None):
        cp = subprocess.run([*self.enter, *map(str, argv)], capture_output=True, text=True,
                            timeout=HOLDER_TIMEOUT_S)
        if check is not None and cp.returncode != check:
            raise BbrctlError(f"{' '.join(map(str, argv))} (private bpffs): exit "
                              f"{cp.returncode}, expected {check}\nstdout: {cp.stdout}\n"
                              f"stderr: {cp.stderr}")
        return cp

    def bbrctl(self, *args, check=None):
        return bbrctl(*args, check=check, prefix=self.enter)

    def close(self):
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=HOLDER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()

    def __exit__(self, *exc):
        self.close()
        return False


def watched_seconds(nominal_s, sample, samples=4):
    """How long a transfer watched by sample() runs here: nominal_s, or long
    enough for `samples` calls of sample() where one takes long (bbrctl in a
    kernel-matrix guest under QEMU's TCG takes seconds per call). sample() is
    timed once, before the transfer, so it must accept being called then."""
    t0 = time.monotonic()
    sample()
    took_s = time.monotonic() - t0
    return max(nominal_s, samples * took_s + 1.0)
