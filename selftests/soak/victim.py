#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The soak's ETS victim: one connection that forged options are injected
into while it is idle, then checked. One side per process, each inside its
namespace and the ETS cgroup (run by selftests/soak/soak.py).

    victim.py server ADDR PORT
    victim.py client ADDR PORT ETS_SK_STOR_PIN MSGS GAP_S MSG_BYTES MORE_BYTES

server: accepts one connection, reads to EOF, prints
        {"bytes_received": N} and closes.
client: connects; sends MSGS messages of MSG_BYTES, GAP_S apart (so the
        server's ACKs carry ETS samples); prints {"held": ..., "ets": E}
        and waits, idle, for a line on stdin (the soak injects meanwhile:
        a copy of an idle connection's last ACK passes PAWS and the
        sequence checks, as in selftests/integration/test_ets.py); then
        prints the socket's ETS state again, sends MORE_BYTES, half-closes,
        waits for the server's close and prints {"bytes_sent": N, "ets": E}.

E is the client socket's struct ets_sk (include/ets_shared.h) read from
the pinned shared map by its fd, laid out as selftests/tools/layouts says
(built from the same header; no copy of the layout here). Standard library
only; every failure is one JSON line with "error" and exit 1.
"""

import ctypes
import json
import os
import socket
import struct
import subprocess
import sys
import time

NR_BPF = 321                    # x86_64
BPF_MAP_LOOKUP_ELEM, BPF_OBJ_GET = 1, 7
BPF_ATTR_BYTES = 128
# the struct layouts as the C headers give them (selftests/tools/layouts.c)
LAYOUTS_BIN = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "tools", "layouts")
INT_FORMATS = {1: "B", 2: "H", 4: "I", 8: "Q"}
CONNECT_TIMEOUT_S = 10.0
IO_TIMEOUT_S = 60.0

libc = ctypes.CDLL(None, use_errno=True)


def out(doc):
    print(json.dumps(doc), flush=True)


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, BPF_ATTR_BYTES)
    r = libc.syscall(NR_BPF, cmd, buf, BPF_ATTR_BYTES)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"bpf cmd {cmd}")
    return r


def map_get(pin):
    path = ctypes.create_string_buffer(pin.encode())
    return bpf(BPF_OBJ_GET, struct.pack("=QII", ctypes.addressof(path), 0, 0))


def ets_sk_layout():
    out = subprocess.run([LAYOUTS_BIN], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["ets_sk"]


ETS_SK = ets_sk_layout()


def ets_state(mfd, sock):
    key = ctypes.c_int(sock.fileno())
    val = ctypes.create_string_buffer(ETS_SK["size"])
    try:
        bpf(BPF_MAP_LOOKUP_ELEM, struct.pack("=IIQQQ", mfd, 0, ctypes.addressof(key),
                                             ctypes.addressof(val), 0))
    except OSError as e:
        return {"lookup_error": e.strerror or str(e)}
    return {name: struct.unpack_from("=" + INT_FORMATS[size], val.raw, off)[0]
            for name, (off, size) in ETS_SK["fields"].items()}


def server(addr, port):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(1)
    out({"listening": True})
    c, _ = ls.accept()
    c.settimeout(IO_TIMEOUT_S)
    n = 0
    while True:
        b = c.recv(65536)
        if not b:
            break
        n += len(b)
    c.close()
    out({"bytes_received": n})


def client(addr, port, pin, msgs, gap_s, msg_bytes, more_bytes):
    mfd = map_get(pin)
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while True:
        try:
            s = socket.create_connection((addr, port), timeout=IO_TIMEOUT_S)
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)
    sent = 0
    for _ in range(msgs):
        s.sendall(b"v" * msg_bytes)
        sent += msg_bytes
        time.sleep(gap_s)
    out({"held": True, "sport": s.getsockname()[1], "ets": ets_state(mfd, s)})
    if not sys.stdin.readline():
        raise RuntimeError("stdin closed before the go-ahead")
    before_more = ets_state(mfd, s)
    s.sendall(b"w" * more_bytes)
    sent += more_bytes
    s.shutdown(socket.SHUT_WR)
    while s.recv(65536):
        pass
    s.close()
    out({"bytes_sent": sent, "ets": before_more})


def main(argv):
    try:
        if argv[0] == "server":
            server(argv[1], int(argv[2]))
        elif argv[0] == "client":
            client(argv[1], int(argv[2]), argv[3], int(argv[4]), float(argv[5]),
                   int(argv[6]), int(argv[7]))
        else:
            raise ValueError(f"unknown mode {argv[0]!r}")
    except Exception as e:      # one JSON line for the soak, whatever failed
        out({"error": f"{type(e).__name__}: {e}"})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
