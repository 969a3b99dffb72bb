#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Benchmark of the linkem emulator: forwarded throughput and release lateness.

For each rate, one TCP bulk transfer (kernel cubic) runs through linkem
with a 40 ms RTT (20 ms each way) and a 1 BDP buffer, with socket buffers
large enough not to limit it. Reported per rate: goodput at the receiver,
the bottleneck's utilisation from the emulator's own counters, and the
release lateness percentiles from STATS.json (and whether the run is valid
under the default 1 ms p99.9 bound). Not a test: it asserts nothing.

    bench.py --rates 50,500,1000 --seconds 10 --json OUT.json
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LINKEM = HERE / "linkem"
SND_ADDR, RCV_ADDR = "198.18.210.1", "198.18.211.1"
PORT = 5400
RTT_US = 40000
SOCK_BUF_BYTES = 64 << 20       # >= 2 x (BDP + buffer) at 1 Gbit/s, 40 ms
WARMUP_S = 2.0                  # slow start excluded from the goodput figure

RECEIVER = r"""
import socket, sys, time, json
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1)
print("BOUND", flush=True)
c, _ = s.accept(); buf = bytearray(1 << 20); n = 0; marks = []
t0 = time.monotonic(); nxt = t0
while True:
    k = c.recv_into(buf)
    if not k: break
    n += k
    now = time.monotonic()
    if now >= nxt:
        marks.append((now - t0, n)); nxt = now + 0.1
marks.append((time.monotonic() - t0, n))
print(json.dumps(marks))
"""
SENDER = r"""
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
s.connect((sys.argv[1], int(sys.argv[2])))
b = b"x" * (1 << 20); end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end: s.sendall(b)
s.close()
"""


def sh(*cmd):
    subprocess.run(cmd, check=True, capture_output=True, timeout=20)


def setup_ns(ns):
    sh("ip", "netns", "add", ns)
    for key, val in (("net.ipv4.tcp_rmem", f"4096 131072 {SOCK_BUF_BYTES}"),
                     ("net.ipv4.tcp_wmem", f"4096 16384 {SOCK_BUF_BYTES}"),
                     ("net.core.rmem_max", str(SOCK_BUF_BYTES)),
                     ("net.core.wmem_max", str(SOCK_BUF_BYTES))):
        sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w", f"{key}={val}")


def run_one(rate, seconds, tmp, log):
    tag = f"{os.getpid()}r{rate}"
    ns = [f"lemBa{tag}", f"lemBb{tag}"]
    procs = []
    try:
        for n in ns:
            setup_ns(n)
        cfg = {"ports": [
            {"name": "s", "netns": ns[0], "dev": "lemb0", "side": "a", "addrs": [SND_ADDR]},
            {"name": "r", "netns": ns[1], "dev": "lemb1", "side": "b", "addrs": [RCV_ADDR]}],
            "base_rtt_us": RTT_US,
            "fwd": {"rate": {"mbit": rate}, "queue": {"bdp": 1}, "delay_us": RTT_US // 2},
            "rev": {"rate": None, "delay_us": RTT_US // 2}}
        cpath, spath = Path(tmp, f"cfg{rate}.json"), Path(tmp, f"stats{rate}.json")
        cpath.write_text(json.dumps(cfg))
        cmd = [str(LINKEM), "--config", str(cpath), "--stats", str(spath)]
        if log:
            cmd += ["--log", str(Path(tmp, f"pkts{rate}.bin"))]
        lem = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(lem)
        if lem.stdout.readline() != "READY\n":
            raise RuntimeError(f"linkem failed: {lem.stderr.read()}")
        for n, dev, a in ((ns[0], "lemb0", SND_ADDR), (ns[1], "lemb1", RCV_ADDR)):
            sh("ip", "-n", n, "addr", "add", f"{a}/32", "dev", dev)
            sh("ip", "-n", n, "route", "add", "198.18.0.0/15", "dev", dev)
        rx = subprocess.Popen(["ip", "netns", "exec", ns[1], sys.executable, "-c", RECEIVER,
                               RCV_ADDR, str(PORT)], stdout=subprocess.PIPE, text=True)
        procs.append(rx)
        assert rx.stdout.readline() == "BOUND\n"
        subprocess.run(["ip", "netns", "exec", ns[0], sys.executable, "-c", SENDER,
                        RCV_ADDR, str(PORT), str(seconds)], check=True, timeout=seconds + 60)
        marks = json.loads(rx.communicate(timeout=60)[0])
        lem.send_signal(signal.SIGTERM)
        lem.wait(timeout=30)
        st = json.loads(spath.read_text())
        t_end, n_end = marks[-1]
        w = next((m for m in marks if m[0] >= WARMUP_S), marks[0])
        goodput = (n_end - w[1]) * 8 / max(t_end - w[0], 1e-9) / 1e6
        fwd = st["fwd"]
        dur_s = (st["end_ns"] - st["start_ns"]) / 1e9
        lat = st["lateness_us"]
        return {"rate_mbit": rate, "goodput_mbit": round(goodput, 2),
                "goodput_ceiling_mbit": round(rate * 1448 / 1500, 2),
                "goodput_ratio": round(goodput / (rate * 1448 / 1500), 4),
                "forwarded_pkts": fwd["forwarded"], "queue_drops": fwd["dropped"]["queue"],
                "linkem_mbit_avg": round(fwd["forwarded_bytes"] * 8 / dur_s / 1e6, 2),
                "lateness_p50_us": lat["p50"], "lateness_p99_us": lat["p99"],
                "lateness_p999_us": lat["p999"], "lateness_max_us": lat["max"],
                "valid": st["valid"], "warnings": st["warnings"]}
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for n in ns:
            subprocess.run(["ip", "netns", "del", n], capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="50,500,1000", help="Mbit/s, comma-separated")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--no-log", action="store_true", help="run linkem without its packet log")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench.py: needs root (namespaces, TUN)")
    if not LINKEM.exists():
        sys.exit(f"bench.py: {LINKEM} not built (run make)")
    try:
        rates = [float(r) for r in a.rates.split(",")]
    except ValueError:
        sys.exit(f"bench.py: bad --rates {a.rates!r}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="lembench") as tmp:
        for r in rates:
            rows.append(run_one(int(r) if r.is_integer() else r, a.seconds, tmp, not a.no_log))
            print(f"  {r:g} Mbit/s done", file=sys.stderr)
    hdr = f"{'rate':>6} {'goodput':>8} {'ratio':>6} {'drops':>6} {'p50us':>6} {'p99us':>6} {'p999us':>7} {'maxus':>8} valid"
    print(hdr)
    for x in rows:
        print(f"{x['rate_mbit']:>6} {x['goodput_mbit']:>8.1f} {x['goodput_ratio']:>6.3f} "
              f"{x['queue_drops']:>6} {x['lateness_p50_us']:>6.0f} {x['lateness_p99_us']:>6.0f} "
              f"{x['lateness_p999_us']:>7.0f} {x['lateness_max_us']:>8.0f} {x['valid']}")
    out = {"tool": "linkem", "seconds": a.seconds, "rtt_ms": RTT_US / 1000, "buffer_bdp": 1,
           "cc": "cubic", "results": rows}
    print(json.dumps(out))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
