#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The lab's built-in flow generator, used when flowgen is not built.

Same interface and output columns as flowgen (selftests/lab/flowgen):

    pyflow.py server --addr A --ports P[-Q] [--timeout S]
    pyflow.py client --spec FLOWS.json --out SAMPLES.csv [--summary SUM.json]

FLOWS.json = {"flows":[{"id":0,"dst":"198.18..","port":5201,"cc":"cubic",
"start_s":0,"stop_s":10,"kind":"bulk"}], "sample_ms":100}. One thread per
bulk flow selects its CC with TCP_CONGESTION before connect and writes until
stop_s; one sampler thread reads TCP_INFO of every open socket each
sample_ms and writes one CSV row per flow. Only the standard library: this
runs inside bare namespaces. Good for tens of flows; flowgen for thousands.
"""

import argparse
import csv
import json
import socket
import struct
import sys
import threading
import time

CHUNK_BYTES = 64 * 1024
TCP_INFO_BYTES = 232
SEND_TIMEOUT_S = 0.1            # a blocked send re-checks the stop time this often
CONNECT_RETRY_S = 0.02
CONNECT_TIMEOUT_S = 5.0
SO_COOKIE = 57                  # include/uapi/asm-generic/socket.h

# struct tcp_info (include/uapi/linux/tcp.h) up to bytes_retrans: 216 bytes.
_FIELDS = ("state ca_state retransmits probes backoff options wscale flags "
           "rto ato snd_mss rcv_mss unacked sacked lost retrans fackets "
           "last_data_sent last_ack_sent last_data_recv last_ack_recv "
           "pmtu rcv_ssthresh rtt rttvar snd_ssthresh snd_cwnd advmss reordering "
           "rcv_rtt rcv_space total_retrans pacing_rate max_pacing_rate bytes_acked "
           "bytes_received segs_out segs_in notsent_bytes min_rtt data_segs_in "
           "data_segs_out delivery_rate busy_time rwnd_limited sndbuf_limited "
           "delivered delivered_ce bytes_sent bytes_retrans").split()
_FMT = "=8B24I4Q2I4IQ3Q2I2Q"
assert struct.calcsize(_FMT) == 216

COLUMNS = ["t_s", "flow", "cookie", "cc", "bytes_acked", "bytes_sent", "bytes_retrans",
           "total_retrans", "data_segs_out", "rtt_us", "min_rtt_us", "snd_cwnd",
           "pacing_rate_Bps", "delivery_rate_Bps", "delivered", "delivered_ce", "state"]


def tcp_info(sock):
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_BYTES)
    return dict(zip(_FIELDS, struct.unpack_from(_FMT, raw)))


def parse_ports(text):
    lo, _, hi = text.partition("-")
    return range(int(lo), int(hi or lo) + 1)


def serve(args):
    """Accept on every port, discard what arrives, until --timeout."""
    stop = time.monotonic() + args.timeout
    listeners = []
    for port in parse_ports(args.ports):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((args.addr, port))
        s.listen(256)
        s.settimeout(0.2)
        listeners.append(s)
    print("LISTENING", flush=True)

    def sink(conn):
        conn.settimeout(1.0)
        while time.monotonic() < stop:
            try:
                if not conn.recv(1 << 20):
                    break
            except socket.timeout:
                continue
            except OSError:
                break
        conn.close()

    def acceptor(s):
        while time.monotonic() < stop:
            try:
                conn, _ = s.accept()
            except socket.timeout:
                continue
            threading.Thread(target=sink, args=(conn,), daemon=True).start()

    threads = [threading.Thread(target=acceptor, args=(s,), daemon=True) for s in listeners]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return 0


class Flow:
    def __init__(self, spec, t0):
        self.spec, self.t0 = spec, t0
        self.sock = None
        self.error = None
        self.cookie = 0
        self.final = None
        self.done = False

    def run(self):
        spec = self.spec
        try:
            time.sleep(max(0.0, self.t0 + spec.get("start_s", 0) - time.monotonic()))
            stop = self.t0 + spec["stop_s"]
            s = socket.socket()
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, spec["cc"].encode())
            deadline = time.monotonic() + CONNECT_TIMEOUT_S
            while True:
                try:
                    s.connect((spec["dst"], spec["port"]))
                    break
                except (ConnectionRefusedError, OSError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(CONNECT_RETRY_S)
                    s.close()
                    s = socket.socket()
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, spec["cc"].encode())
            self.cookie = struct.unpack("Q", s.getsockopt(socket.SOL_SOCKET, SO_COOKIE, 8))[0]
            s.settimeout(SEND_TIMEOUT_S)
            self.sock = s
            buf = memoryview(bytearray(CHUNK_BYTES))
            while time.monotonic() < stop:
                try:
                    s.send(buf)
                except socket.timeout:
                    continue
            self.final = tcp_info(s)
            self.done = True
            s.close()
        except OSError as e:
            self.error = f"{type(e).__name__}: {e}"
            self.done = True


def client(args):
    spec = json.load(open(args.spec))
    sample_s = spec.get("sample_ms", 100) / 1000
    t0 = time.monotonic()
    flows = [Flow(f, t0) for f in spec["flows"]]
    threads = [threading.Thread(target=f.run, daemon=True) for f in flows]
    for t in threads:
        t.start()
    with open(args.out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        nxt = t0
        while not all(f.done for f in flows):
            nxt += sample_s
            time.sleep(max(0.0, nxt - time.monotonic()))
            t = time.monotonic() - t0
            for f in flows:
                if f.sock is None or f.done:
                    continue
                try:
                    ti = tcp_info(f.sock)
                except OSError:
                    continue
                w.writerow(_row(t, f, ti))
        for f in flows:
            if f.final:
                w.writerow(_row(time.monotonic() - t0, f, f.final))
    summary = {"flows": [{"id": f.spec["id"], "cc": f.spec["cc"], "cookie": f.cookie,
                          "bytes": (f.final or {}).get("bytes_acked", 0),
                          "retransmits": (f.final or {}).get("total_retrans", 0),
                          "error": f.error} for f in flows]}
    if args.summary:
        json.dump(summary, open(args.summary, "w"))
    errors = [f"flow {f.spec['id']}: {f.error}" for f in flows if f.error]
    if errors:
        print("; ".join(errors), file=sys.stderr)
        return 1
    return 0


def _row(t, f, ti):
    return [f"{t:.4f}", f.spec["id"], f.cookie, f.spec["cc"], ti["bytes_acked"], ti["bytes_sent"],
            ti["bytes_retrans"], ti["total_retrans"], ti["data_segs_out"], ti["rtt"],
            ti["min_rtt"], ti["snd_cwnd"], ti["pacing_rate"], ti["delivery_rate"],
            ti["delivered"], ti["delivered_ce"], ti["ca_state"]]


def main(argv=None):
    p = argparse.ArgumentParser(description="the lab's built-in flow generator")
    sub = p.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("server")
    s.add_argument("--addr", required=True)
    s.add_argument("--ports", required=True)
    s.add_argument("--timeout", type=float, default=600)
    c = sub.add_parser("client")
    c.add_argument("--spec", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--summary")
    a = p.parse_args(argv)
    return serve(a) if a.mode == "server" else client(a)


if __name__ == "__main__":
    sys.exit(main())
