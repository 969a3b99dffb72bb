# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Paths, the error type, the command runner and the setup/teardown protocol."""

import os
import select
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BBRCTL = REPO / "loader" / "bbrctl"

CMD_TIMEOUT_S = 15.0            # any single ip/tc/bpftool invocation
MAKE_TIMEOUT_S = 300.0
POLL_S = 0.02


class BbrtestError(RuntimeError):
    """A namespace, qdisc, cgroup, registration or external command could
    not be set up; the message says why."""


class KernelLacks(BbrtestError):
    """The running kernel has no such feature (a qdisc, a device type): no
    module for it is built or installed. A failure like any other, except
    where the machine is known to lack the modules (the kernel matrix's
    guests of kernels whose modules Debian's archive does not carry): there
    the integration suite reports it as a skip (conftest)."""


def run(argv, timeout=CMD_TIMEOUT_S, check=True):
    """Run argv, return the CompletedProcess; raise BbrtestError with its stderr."""
    argv = [str(a) for a in argv]
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise BbrtestError(f"{argv[0]}: not found (run `make setup`)") from None
    except subprocess.TimeoutExpired:
        raise BbrtestError(f"`{' '.join(argv)}` timed out after {timeout} s") from None
    if check and cp.returncode != 0:
        raise BbrtestError(f"`{' '.join(argv)}` failed ({cp.returncode}): "
                           f"{cp.stderr.strip() or cp.stdout.strip()}")
    return cp


def make(*targets):
    """(Re)build targets through the Makefile; BbrtestError with make's output.

    With BBRTEST_PREBUILT set (the kernel matrix's guests, which have the
    build but no toolchain) the targets must exist already."""
    if os.environ.get("BBRTEST_PREBUILT"):
        missing = [t for t in targets if not (REPO / t).exists()]
        if missing:
            raise BbrtestError(f"not built: {', '.join(missing)} (BBRTEST_PREBUILT is set)")
        return
    try:
        cp = subprocess.run(["make", "-C", str(REPO), "--no-print-directory", *targets],
                            capture_output=True, text=True, timeout=MAKE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise BbrtestError(f"`make {' '.join(targets)}` took longer than "
                           f"{MAKE_TIMEOUT_S:g} s") from None
    if cp.returncode != 0:
        raise BbrtestError(f"`make {' '.join(targets)}` failed:\n{cp.stdout}{cp.stderr}")


def read_line(fd, timeout_s):
    """One line from file descriptor fd, read a byte at a time so that
    nothing after it is consumed (a later communicate() still gets the
    rest). Shorter, without its newline, on EOF or after timeout_s."""
    deadline = time.monotonic() + timeout_s
    buf = b""
    while not buf.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        byte = os.read(fd, 1)
        if not byte:
            break
        buf += byte
    return buf.decode(errors="replace")


def wait_for(pred, timeout_s, poll_s=POLL_S):
    """Poll pred() until it is true (True) or timeout_s passes (False)."""
    deadline = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)
    return True


class SetupClose:
    """Context-manager protocol of everything that builds something: __enter__
    runs self._setup() and, if that fails part-way, self.close() before the
    error propagates; __exit__ runs self.close(). close() must undo whatever
    _setup() got done and be safe to call twice."""

    def __enter__(self):
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False
