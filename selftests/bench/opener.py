#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Hold N TCP connections open, one side per process; run by bench.py.

    opener.py server --addr A --port P --count N
    opener.py client --addr A --port P --count N --cc NAME

Both sides raise RLIMIT_NOFILE, then the server listens and accepts N
connections; the client opens N connections with TCP_CONGESTION = NAME.
When its N sockets are established each side prints one JSON line
{"open": N} and waits for a line on stdin (or EOF); then it closes every
socket, prints {"closed": N} and exits 0. On failure: one JSON line with
"error" and exit 1. Only the standard library: this runs in bare namespaces.
"""

import argparse
import json
import resource
import socket
import sys

# Two descriptors per connection would be enough for one side; margin for
# the interpreter's own files.
NOFILE_MARGIN = 256
LISTEN_BACKLOG = 65535          # capped by net.core.somaxconn in the namespace
CONNECT_TIMEOUT_S = 10.0
TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)


def raise_nofile(count):
    want = count + NOFILE_MARGIN
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(want, soft), max(want, hard)))


def serve(addr, port, count):
    lsk = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsk.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsk.bind((addr, port))
    lsk.listen(LISTEN_BACKLOG)
    print(json.dumps({"listening": True}), flush=True)
    lsk.settimeout(CONNECT_TIMEOUT_S * 3)
    conns = [lsk.accept()[0] for _ in range(count)]
    lsk.close()
    return conns


def connect(addr, port, count, cc):
    conns = []
    for _ in range(count):
        sk = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sk.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, cc.encode())
        sk.settimeout(CONNECT_TIMEOUT_S)
        sk.connect((addr, port))
        conns.append(sk)
    got = conns[0].getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16).split(b"\0")[0].decode()
    if got != cc:
        raise RuntimeError(f"socket runs {got!r}, not {cc!r}")
    return conns


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["server", "client"])
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--cc", default="cubic")
    a = ap.parse_args()
    try:
        raise_nofile(a.count)
        conns = (serve(a.addr, a.port, a.count) if a.mode == "server"
                 else connect(a.addr, a.port, a.count, a.cc))
        print(json.dumps({"open": len(conns)}), flush=True)
        sys.stdin.readline()
        for sk in conns:
            sk.close()
        print(json.dumps({"closed": len(conns)}), flush=True)
    except (OSError, RuntimeError, ValueError) as e:
        print(json.dumps({"error": f"{a.mode}: {e}"}), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
