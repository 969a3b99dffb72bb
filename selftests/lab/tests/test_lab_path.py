# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""EmulatedPath: connectivity, sizing, and nothing left behind on failure.

Runs only between namespaces it creates (prefix lab<pid>), kernel CCs only.
"""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import labkit  # noqa: E402
from labkit.path import list_netns  # noqa: E402

PREFIX = f"lab{os.getpid()}-"


def _ours():
    return [ns for ns in list_netns() if ns.startswith(PREFIX)]


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
    """A TCP connection sender -> receiver through the path (nc-free: python)."""
    code = ("import socket,sys;s=socket.create_connection((sys.argv[1],5299),timeout=5);"
            "s.sendall(b'x'*100000);s.close()")
    srv = subprocess.Popen(["ip", "netns", "exec", p.rcv_ns, sys.executable, "-c",
                            "import socket;l=socket.socket();l.setsockopt(socket.SOL_SOCKET,"
                            "socket.SO_REUSEADDR,1);l.bind(('0.0.0.0',5299));l.listen();"
                            "l.settimeout(8);c,_=l.accept();n=0\n"
                            "while True:\n b=c.recv(65536)\n if not b: break\n n+=len(b)\n"
                            "print(n)"], stdout=subprocess.PIPE, text=True)
    try:
        cp = None
        for _ in range(50):
            cp = subprocess.run(["ip", "netns", "exec", p.snd_ns[sender], sys.executable, "-c",
                                 code, p.rcv_addr], capture_output=True, text=True, timeout=10)
            if cp.returncode == 0:
                break
        out, _ = srv.communicate(timeout=10)
        return int(out.strip() or 0)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()


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
