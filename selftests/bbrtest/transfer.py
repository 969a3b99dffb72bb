# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""One bulk TCP transfer with a given CC, checked end to end.

The job of this generator: a single transfer whose every figure the caller
can trust (bytes sent = bytes received, the CC the socket really ran, the
sender's TCP_INFO at the end, errno when it failed). Each side is a process
of bbrtest/xfer.py (standard library only) inside its namespace. Many timed
flows with periodic samples are flowgen's job (bbrtest.flowgen).

    res = run_transfer(topo, "bbr3", seconds=3)

    with Transfer(path, "bbr3", seconds=5, port=5461) as t:
        cookie = t.connected()["cookie"]    # SO_COOKIE, while it runs
        ...
    res = t.result()

The path is anything with snd_ns, rcv_ns and rcv_addr (a Topology, the
lab's EmulatedPath: sender picks one of several snd_ns).
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from . import netns
from .base import POLL_S, BbrtestError, SetupClose, read_line

XFER_SCRIPT = Path(__file__).resolve().with_name("xfer.py")
TRANSFER_GRACE_S = 30.0         # on top of the expected transfer time
NBYTES_TIMEOUT_S = 120.0        # whole transfer when its length cannot be estimated
SERVER_STOP_S = 5.0             # for the server to report after the client exits
# A watched transfer's two processes run at this niceness, so that whoever
# samples it gets the CPU: in a 1-CPU kernel-matrix guest an unshaped flow
# kept the test process from running until the 3 s transfer had ended (no
# `bbrctl stat` sample at all, on Linux 7.0 and 7.1).
WATCHED_NICE = 10


class TransferError(BbrtestError):
    """A transfer failed; .errno/.errno_name/.stage say where when known."""

    def __init__(self, msg, errno_=None, errno_name=None, stage=None):
        super().__init__(msg)
        self.errno = errno_
        self.errno_name = errno_name
        self.stage = stage


class Transfer(SetupClose):
    """One bulk transfer from path's sender to its receiver, running while
    the with-block runs; see the module doc. Exactly one of nbytes (send
    that many bytes) or seconds (send for that long) must be given; timeout
    bounds the whole transfer (default: the expected duration plus
    TRANSFER_GRACE_S). cgroup (a path): both sides run in it, so that
    what is attached to it (bbrctl attach: cc_select, ETS) sees their
    sockets. watched: the caller samples the transfer while it runs
    (result(sample_cb=...)); both sides then run at WATCHED_NICE."""

    def __init__(self, path, cc, nbytes=None, seconds=None, port=5201, timeout=None,
                 sender=0, cgroup=None, server_cc=None, watched=False):
        if (nbytes is None) == (seconds is None):
            raise ValueError("give exactly one of nbytes or seconds")
        self.snd_ns = path.snd_ns if isinstance(path.snd_ns, str) else path.snd_ns[sender]
        self.rcv_ns, self.rcv_addr = path.rcv_ns, path.rcv_addr
        self.cc, self.port, self.cgroup = cc, port, cgroup
        self.server_cc = server_cc      # the listener's CC (None: the namespace's)
        self.nice = WATCHED_NICE if watched else 0
        self.timeout = timeout or _default_timeout(getattr(path, "rate_mbit", None),
                                                   nbytes, seconds)
        self.amount = (["--bytes", str(int(nbytes))] if nbytes is not None
                       else ["--seconds", str(seconds)])
        self.server = self.client = None
        self.deadline = None
        self._first = ""            # the client's lines already read
        self._result = None

    def _setup(self):
        common = ["--addr", self.rcv_addr, "--port", str(self.port),
                  "--timeout", str(self.timeout)]
        srv_cc = ["--cc", self.server_cc] if self.server_cc else []
        self.server = _spawn_xfer(self.rcv_ns, ["server", *common, *srv_cc], self.cgroup,
                                  self.nice)
        self.client = _spawn_xfer(self.snd_ns, ["client", *common, "--cc", self.cc,
                                                *self.amount], self.cgroup, self.nice)
        self.deadline = time.monotonic() + self.timeout

    def connected(self):
        """{"cookie", "sport"} of the sending socket once it is connected;
        TransferError if the client failed first."""
        line = read_line(self.client.stdout.fileno(), self.deadline - time.monotonic())
        self._first += line
        doc = _json_line(line)
        if doc is None or not doc.get("connected"):
            self.result()           # raises the client's (or the server's) error
            raise TransferError(f"client printed {line!r} instead of its connection")
        return doc

    def result(self, sample_cb=None, sample_interval=0.2):
        """Wait for the end; the figures of run_transfer. sample_cb: see there."""
        if self._result is not None:
            return self._result
        samples = []
        try:
            _sample_until_exit(self.client, self.deadline, sample_cb, sample_interval, samples)
            try:
                cli = _collect(self.client, "client", SERVER_STOP_S, self._first)
            except TransferError:
                _raise_server_error(self.server)    # the root cause, if the server failed first
                raise
            srv = _collect(self.server, "server", SERVER_STOP_S)
        finally:
            self.close()
        self._result = _result(cli, srv, samples)
        return self._result

    def close(self):
        """Stop both sides (if still running); safe to call twice."""
        netns.reap(self.client, self.server, timeout_s=SERVER_STOP_S)


def run_transfer(topo, cc, nbytes=None, seconds=None, port=5201,
                 sample_cb=None, sample_interval=0.2, timeout=None, server_cc=None):
    """One bulk TCP transfer from topo.snd_ns to topo.rcv_ns using CC cc.

    Exactly one of nbytes (send that many bytes) or seconds (send for that
    long) must be given. sample_cb, if given, is called with no arguments
    every sample_interval seconds while the transfer runs; its return values
    are collected in order. timeout (seconds) bounds the whole transfer; by
    default the expected duration plus TRANSFER_GRACE_S.

    Returns {
      "bytes_sent":     bytes the client wrote (all acknowledged),
      "bytes_received": bytes the server read until EOF,
      "seconds":        receiver time from accept to the last data byte,
      "mbps":           goodput, bytes_received * 8 / seconds / 1e6,
      "sender_seconds": client time from connect to all data acknowledged,
      "cc":             getsockopt(TCP_CONGESTION) on the sending socket,
      "cookie":         the sending socket's SO_COOKIE,
      "tcp_info":       sender TCP_INFO at the end (see xfer.TCP_INFO_REPORTED;
                        units in the names; "retransmits" = tcpi_total_retrans),
      "samples":        [sample_cb() results],
    }
    server_cc: the receiving listener's CC (default: the namespace's).
    Raises TransferError (with .errno, e.g. ENOENT for an unknown CC) on failure.
    """
    with Transfer(topo, cc, nbytes=nbytes, seconds=seconds, port=port, timeout=timeout,
                  server_cc=server_cc, watched=sample_cb is not None) as t:
        return t.result(sample_cb, sample_interval)


def _default_timeout(rate_mbit, nbytes, seconds):
    if seconds is not None:
        return seconds + TRANSFER_GRACE_S
    if rate_mbit:
        return nbytes * 8 / (rate_mbit * 1e6) * 2 + TRANSFER_GRACE_S
    return NBYTES_TIMEOUT_S


def _spawn_xfer(ns, args, cgroup=None, nice=0):
    proc = netns.popen_in(ns, [sys.executable, str(XFER_SCRIPT), *args], cgroup=cgroup)
    if nice:
        # not nice(1): the kernel-matrix guests' busybox has no such applet
        os.setpriority(os.PRIO_PROCESS, proc.pid, nice)
    return proc


def _json_line(line):
    try:
        return json.loads(line) if line.strip() else None
    except json.JSONDecodeError:
        return None


def _sample_until_exit(proc, deadline, sample_cb, interval_s, samples):
    next_sample = time.monotonic() + interval_s
    while proc.poll() is None:
        now = time.monotonic()
        if now >= deadline:
            raise TransferError("transfer timed out: client still running at its deadline",
                                stage="timeout")
        if sample_cb is not None and now >= next_sample:
            samples.append(sample_cb())
            done = time.monotonic()
            # A slow callback (seconds per `bbrctl stat` in a TCG guest):
            # no catching up, and as long a pause as it took, so that the
            # transfer, niced below it (WATCHED_NICE), keeps half the CPU.
            next_sample = max(next_sample + interval_s, done + (done - now))
            continue
        nap = POLL_S if sample_cb is None else min(POLL_S, next_sample - now)
        time.sleep(max(nap, 0))


def _collect(proc, role, timeout_s, already=""):
    """The JSON result line of a finished (or finishing) xfer.py; raise on its error."""
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise TransferError(f"{role} did not finish within {timeout_s} s", stage="timeout") from None
    lines = [line for line in (already + out).splitlines() if line.strip()]
    doc = _json_line(lines[-1]) if lines else None
    if doc is None:
        raise TransferError(f"{role} exited {proc.returncode} without a result: {err.strip()}")
    if "error" in doc or proc.returncode != 0:
        msg = doc.get("error", f"exited {proc.returncode}")
        raise TransferError(f"{role}: {msg}" + (f" ({doc['errno_name']})" if "errno_name" in doc else ""),
                            errno_=doc.get("errno"), errno_name=doc.get("errno_name"),
                            stage=doc.get("stage"))
    return doc


def _raise_server_error(server):
    """If the server already exited with an error, raise that error."""
    if server.poll() not in (None, 0):
        _collect(server, "server", SERVER_STOP_S)


def _result(cli, srv, samples):
    seconds = srv["seconds"]
    received = srv["bytes_received"]
    return {
        "bytes_sent": cli["bytes_sent"],
        "bytes_received": received,
        "seconds": seconds,
        "mbps": received * 8 / seconds / 1e6 if seconds > 0 else 0.0,
        "sender_seconds": cli["seconds"],
        "cc": cli["cc"],
        "cookie": cli["cookie"],
        "tcp_info": cli["tcp_info"],
        "samples": samples,
    }
