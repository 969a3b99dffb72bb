#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""One bulk TCP transfer, one side per process; run by bbrtest.transfer.

    xfer.py server --addr A [--port P] [--timeout S]
    xfer.py client --addr A [--port P] --cc NAME (--bytes N | --seconds S)

Each mode prints one JSON line with its result on stdout and exits 0; the
client prints {"connected": true, "cookie": C, "sport": P} before it (C is
the socket's SO_COOKIE, as `bbrctl stat` and `bbrctl trace` show it). On
failure the last line has an "error" key (and "errno"/"errno_name" when a
system call failed) and the process exits non-zero, so the caller can report
the exact cause, e.g. ENOENT when the congestion control is not registered.

The server accepts one connection and counts bytes until EOF. The client
selects the congestion control with setsockopt(TCP_CONGESTION) before
connecting (so the SYN already runs under it), sends, waits until every byte
is acknowledged, reads TCP_CONGESTION and TCP_INFO back, then closes.

Only the standard library is used: this runs inside bare namespaces.
"""

import argparse
import errno
import fcntl
import json
import socket
import struct
import sys
import termios
import time

CHUNK_BYTES = 128 * 1024
RECV_BUF_BYTES = 1024 * 1024
CONNECT_RETRY_S = 0.01          # between connect attempts while the server starts
DRAIN_POLL_S = 0.001            # between checks that all data is acknowledged
SEND_POLL_S = 0.1               # longest a blocked send() waits before the deadline is rechecked
TCP_CA_NAME_MAX_BYTES = 16      # TCP_CA_NAME_MAX in include/net/tcp.h
TCP_INFO_MAX_BYTES = 512        # more than any kernel's struct tcp_info
SO_COOKIE = 57                  # include/uapi/asm-generic/socket.h
# In --seconds mode, keep at most this much written-but-unsent data in the
# socket, so that sending stops about when the time is up instead of after
# draining a send buffer autotuned to tens of MB (seconds at 100 Mbit/s).
# 512 KiB is 4 ms at 1 Gbit/s: plenty of time to refill it.
TIMED_NOTSENT_LOWAT_BYTES = 512 * 1024

EXIT_ERROR = 1
EXIT_SETSOCKOPT = 2             # the congestion control could not be selected

# struct tcp_info (include/uapi/linux/tcp.h), in order, up to the last field
# read here. Every member is naturally aligned, so "=" packing matches the
# kernel layout. The names we export carry their unit.
_TCP_INFO_LAYOUT = (
    ("state", "B"), ("ca_state", "B"), ("rto_retransmits", "B"),
    ("probes", "B"), ("backoff", "B"), ("options", "B"), ("wscale", "B"),
    ("delivery_rate_app_limited", "B"),
    ("rto_us", "I"), ("ato_us", "I"), ("snd_mss_bytes", "I"), ("rcv_mss_bytes", "I"),
    ("unacked_pkts", "I"), ("sacked_pkts", "I"), ("lost_pkts", "I"),
    ("retrans_pkts", "I"), ("fackets", "I"),
    ("last_data_sent_ms", "I"), ("last_ack_sent_ms", "I"),
    ("last_data_recv_ms", "I"), ("last_ack_recv_ms", "I"),
    ("pmtu_bytes", "I"), ("rcv_ssthresh_bytes", "I"), ("rtt_us", "I"),
    ("rttvar_us", "I"), ("snd_ssthresh_pkts", "I"), ("snd_cwnd_pkts", "I"),
    ("advmss_bytes", "I"), ("reordering_pkts", "I"), ("rcv_rtt_us", "I"),
    ("rcv_space_bytes", "I"), ("retransmits", "I"),
    ("pacing_rate_bytes_per_s", "Q"), ("max_pacing_rate_bytes_per_s", "Q"),
    ("bytes_acked", "Q"), ("bytes_received", "Q"),
    ("segs_out", "I"), ("segs_in", "I"), ("notsent_bytes", "I"),
    ("min_rtt_us", "I"), ("data_segs_in", "I"), ("data_segs_out", "I"),
    ("delivery_rate_bytes_per_s", "Q"),
    ("busy_time_us", "Q"), ("rwnd_limited_us", "Q"), ("sndbuf_limited_us", "Q"),
    ("delivered_pkts", "I"), ("delivered_ce_pkts", "I"),
    ("bytes_sent", "Q"), ("bytes_retrans", "Q"),
)
_TCP_INFO_FMT = "=" + "".join(fmt for _, fmt in _TCP_INFO_LAYOUT)
_TCP_INFO_NEEDED_BYTES = struct.calcsize(_TCP_INFO_FMT)
# Anchors from the 6.18 BTF, so a typo in the table cannot go unnoticed.
assert struct.calcsize("=" + "".join(f for n, f in _TCP_INFO_LAYOUT[:32])) == 104
assert _TCP_INFO_NEEDED_BYTES == 216

# What run_transfer() reports: the fields the tests and the demo look at.
TCP_INFO_REPORTED = (
    "retransmits", "bytes_retrans", "lost_pkts", "pacing_rate_bytes_per_s",
    "delivery_rate_bytes_per_s", "delivery_rate_app_limited", "snd_cwnd_pkts",
    "snd_ssthresh_pkts", "rtt_us", "rttvar_us", "min_rtt_us", "snd_mss_bytes",
    "bytes_acked", "bytes_sent", "data_segs_out", "delivered_pkts",
    "delivered_ce_pkts", "busy_time_us", "rwnd_limited_us", "sndbuf_limited_us",
)


class XferError(Exception):
    """A failure to report as the one JSON line, with its exit code."""

    def __init__(self, stage, err, exit_code=EXIT_ERROR):
        super().__init__(f"{stage}: {err}")
        self.stage = stage
        self.err = err
        self.exit_code = exit_code

    def as_json(self):
        out = {"error": str(self), "stage": self.stage}
        eno = getattr(self.err, "errno", None)
        if eno:
            out["errno"] = eno
            out["errno_name"] = errno.errorcode.get(eno, "?")
        return out


def parse_tcp_info(raw):
    """Decode the TCP_INFO bytes into {name: value} for TCP_INFO_REPORTED."""
    if len(raw) < _TCP_INFO_NEEDED_BYTES:
        raise ValueError(f"TCP_INFO returned {len(raw)} bytes, need {_TCP_INFO_NEEDED_BYTES}")
    values = struct.unpack_from(_TCP_INFO_FMT, raw)
    info = dict(zip((name for name, _ in _TCP_INFO_LAYOUT), values))
    info["delivery_rate_app_limited"] &= 1      # a one-bit bitfield
    return {name: info[name] for name in TCP_INFO_REPORTED}


def get_cc(sock):
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, TCP_CA_NAME_MAX_BYTES)
    return raw.split(b"\0", 1)[0].decode()


def bytes_not_acked(sock):
    """Bytes written but not yet acknowledged (SIOCOUTQ)."""
    buf = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0" * 4)
    return struct.unpack("i", buf)[0]


# ---- client -------------------------------------------------------------------

def connect_with_cc(addr, port, cc, connect_timeout_s):
    """A socket using congestion control cc, connected to addr:port.

    The server may still be starting, so ECONNREFUSED is retried until
    connect_timeout_s; every attempt uses a new socket with cc set first.
    """
    deadline = time.monotonic() + connect_timeout_s
    while True:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        except OSError as e:
            sock.close()
            raise XferError(f"setsockopt(TCP_CONGESTION, {cc!r})", e, EXIT_SETSOCKOPT)
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            sock.connect((addr, port))
            return sock
        except ConnectionRefusedError as e:
            sock.close()
            if time.monotonic() >= deadline:
                raise XferError(f"connect({addr}:{port})", e)
            time.sleep(CONNECT_RETRY_S)
        except OSError as e:
            sock.close()
            raise XferError(f"connect({addr}:{port})", e)


def send_bulk(sock, nbytes, seconds, deadline):
    """Send nbytes, or as much as possible for seconds; return bytes sent."""
    payload = memoryview(b"\x5a" * CHUNK_BYTES)
    stop = time.monotonic() + seconds if seconds is not None else None
    if stop is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NOTSENT_LOWAT, TIMED_NOTSENT_LOWAT_BYTES)
    sent = 0
    sock.settimeout(SEND_POLL_S)
    while nbytes is None or sent < nbytes:
        now = time.monotonic()
        if stop is not None and now >= stop:
            break
        if now >= deadline:
            raise XferError("send", TimeoutError(f"timed out after {sent} bytes"))
        want = CHUNK_BYTES if nbytes is None else min(CHUNK_BYTES, nbytes - sent)
        try:
            sent += sock.send(payload[:want])
        except socket.timeout:
            continue
        except OSError as e:
            raise XferError("send", e)
    return sent


def wait_all_acked(sock, deadline):
    while bytes_not_acked(sock) > 0:
        if time.monotonic() >= deadline:
            raise XferError("drain", TimeoutError(
                f"{bytes_not_acked(sock)} bytes still unacknowledged"))
        time.sleep(DRAIN_POLL_S)


def wait_peer_close(sock, deadline):
    sock.settimeout(max(deadline - time.monotonic(), 0.001))
    try:
        while sock.recv(4096):
            pass
    except OSError as e:
        raise XferError("waiting for the server to close", e)


def run_client(args):
    deadline = time.monotonic() + args.timeout
    sock = connect_with_cc(args.addr, args.port, args.cc, args.connect_timeout)
    with sock:
        cookie = struct.unpack("=Q", sock.getsockopt(socket.SOL_SOCKET, SO_COOKIE, 8))[0]
        print(json.dumps({"connected": True, "cookie": cookie,
                          "sport": sock.getsockname()[1]}), flush=True)
        start = time.monotonic()
        sent = send_bulk(sock, args.bytes, args.seconds, deadline)
        wait_all_acked(sock, deadline)
        elapsed = time.monotonic() - start
        cc = get_cc(sock)
        info = parse_tcp_info(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO,
                                              TCP_INFO_MAX_BYTES))
        sock.shutdown(socket.SHUT_WR)
        wait_peer_close(sock, deadline)
    return {"bytes_sent": sent, "seconds": elapsed, "cc": cc, "tcp_info": info,
            "cookie": cookie}


# ---- server -------------------------------------------------------------------

def accept_one(addr, port, timeout_s, cc=None):
    """The first connection to addr:port; with cc, the listener (and so the
    connection it accepts, and its SYN-ACK) uses that congestion control."""
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    with lsock:
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if cc:
            try:
                lsock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
            except OSError as e:
                raise XferError(f"setsockopt(TCP_CONGESTION, {cc}) on the listener", e)
        try:
            lsock.bind((addr, port))
            lsock.listen(1)
        except OSError as e:
            raise XferError(f"listen({addr}:{port})", e)
        lsock.settimeout(timeout_s)
        try:
            conn, peer = lsock.accept()
        except OSError as e:
            raise XferError("accept", e)
    return conn, peer


def run_server(args):
    deadline = time.monotonic() + args.timeout
    conn, peer = accept_one(args.addr, args.port, args.timeout, args.cc)
    buf = bytearray(RECV_BUF_BYTES)
    received = 0
    with conn:
        start = last = time.monotonic()
        while True:
            conn.settimeout(max(deadline - time.monotonic(), 0.001))
            try:
                n = conn.recv_into(buf)
            except OSError as e:
                raise XferError(f"recv after {received} bytes", e)
            if n == 0:
                break
            received += n
            last = time.monotonic()
    # Goodput spans accept to the last data byte: the FIN that follows waits
    # for the client to see every byte acknowledged, which is not transfer time.
    return {"bytes_received": received, "seconds": last - start, "peer": peer[0]}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = p.add_subparsers(dest="mode", required=True)
    srv = sub.add_parser("server", help="accept one connection and count bytes until EOF")
    cli = sub.add_parser("client", help="connect with a given CC and send")
    for sp in (srv, cli):
        sp.add_argument("--addr", required=True, help="IPv4 address to bind (server) or reach (client)")
        sp.add_argument("--port", type=int, default=5201)
        sp.add_argument("--timeout", type=float, default=60.0, help="whole run limit, seconds")
    cli.add_argument("--cc", required=True, help="congestion control name for TCP_CONGESTION")
    srv.add_argument("--cc", help="congestion control of the listener (default: the namespace's)")
    amount = cli.add_mutually_exclusive_group(required=True)
    amount.add_argument("--bytes", type=int, help="send exactly this many bytes")
    amount.add_argument("--seconds", type=float, help="send for this many seconds")
    cli.add_argument("--connect-timeout", type=float, default=5.0,
                     help="how long to retry a refused connect, seconds")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        out = run_server(args) if args.mode == "server" else run_client(args)
    except XferError as e:
        print(json.dumps(e.as_json()), flush=True)
        return e.exit_code
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
