# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""EmulatedPath: connectivity, sizing, and nothing left behind on failure.

Runs only between namespaces it creates (prefix lab<pid>), kernel CCs only.
"""

import os
import subprocess

import pytest

import bbrtest
import labkit

PREFIX = f"lab{os.getpid()}-"


def _ours():
    return [ns for ns in bbrtest.list_netns() if ns.startswith(PREFIX)]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _require_root():
    if os.geteuid() != 0:
        pytest.fail("needs root (network namespaces, TUN devices)")


def _connect(p, sender=0):
    """Bytes received of a TCP transfer sender -> receiver through the path."""
    with bbrtest.Transfer(p, "cubic", nbytes=100000, port=5299, sender=sender) as t:
        return t.result()["bytes_received"]


@pytest.mark.parametrize("backend", ["linkem", "kernel"])
def test_path_carries_tcp_and_is_removed(backend):
    _require_root()
    if backend == "linkem" and not labkit.linkem_available():
        pytest.fail("linkem not built: run make")
    rtt = 10 if backend == "linkem" else 0
    with labkit.EmulatedPath(rate_mbit=50, rtt_ms=rtt, buffer_bytes=100_000, senders=2,
                             backend=backend) as p:
        assert sorted(_ours()) == sorted(p.namespaces()), (_ours(), p.namespaces())
        for i in range(2):
            got = _connect(p, i)
            print(f"{backend}: sender {i} -> receiver: {got} bytes")
            assert got == 100000
        # 2 x (BDP + buffer) at least, and never below the usual default
        assert p.tcp_mem_max_bytes() >= 2 * (p.bdp_bytes + p.buffer_bytes)
        linkem_pid = p.linkem.pid if backend == "linkem" else None
    stats = p.stats()
    print("stats keys:", sorted(stats))
    assert _ours() == []
    if linkem_pid:
        assert not _alive(linkem_pid)
        assert stats["fwd"]["forwarded"] > 140, stats["fwd"]    # 2 x 100 kB of data


@pytest.mark.parametrize("backend", ["linkem", "kernel"])
def test_teardown_when_body_raises(backend):
    _require_root()
    pids = []
    with pytest.raises(RuntimeError, match="boom"):
        with labkit.EmulatedPath(rate_mbit=20, rtt_ms=20 if backend == "linkem" else 0,
                                 senders=3, backend=backend) as p:
            if backend == "linkem":
                pids.append(p.linkem.pid)
            # a process of ours inside a namespace must go too
            sleeper = subprocess.Popen(["ip", "netns", "exec", p.snd_ns[0], "sleep", "60"])
            pids.append(sleeper.pid)
            assert len(_ours()) == len(p.namespaces())
            raise RuntimeError("boom")
    sleeper.wait(timeout=5)
    print("left:", _ours(), "pids alive:", [x for x in pids if _alive(x)])
    assert _ours() == []
    assert not any(_alive(x) for x in pids)


def test_teardown_when_setup_fails():
    _require_root()
    if not labkit.linkem_available():
        pytest.fail("linkem not built: run make")
    with pytest.raises(labkit.LabError, match="linkem"):
        with labkit.EmulatedPath(rate_mbit=20, trace="/nonexistent/trace", rtt_ms=20):
            pass
    assert _ours() == []


def test_bad_arguments():
    with pytest.raises(ValueError):
        labkit.EmulatedPath(rate_mbit=10, buffer_bdp=1, buffer_bytes=1000)
    with pytest.raises(ValueError):
        labkit.EmulatedPath(rate_mbit=10, extra_delay_ms=[5], backend="kernel")
    with pytest.raises(ValueError):
        labkit.EmulatedPath(rate_mbit=10, loss=1.5)
