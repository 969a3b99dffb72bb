# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""A/B splits on the emulated path: `bbrctl attach --cc A:W,B:W` as an
operator would use it, checked against a difference the lab knows.

    selftests/pyrun labkit.ab [--loss 0.01] [--seconds 60] [--workers 8]
                              [--bytes 2000000] [--out DIR]

Two splits over one lossy path (linkem: 50 Mbit/s, 40 ms, 1 BDP of buffer,
Bernoulli loss on the data path), each for --seconds, from a sender
namespace whose transfers run in a cgroup of this run:

  A/B  cubic:50,bbr3:50   cubic halves its window at every loss; bbr3
                          counts 1 % loss as below its loss threshold
                          (loss_thresh 2 %), so its goodput per connection
                          must come out higher, the interval excluding 0;
  A/A  bbr3:50,bbr3b:50   two copies of bbr3 (`load --name`): the same
                          algorithm in both arms, so no difference may show.

--workers transfers run at once, each worker one connection after the
other of --bytes. Everything `bbrctl ab report` prints goes to stdout and,
with --out, to DIR/ab_lossy.md with the JSON beside it. Exit 1 if the A/B
goodput difference has the wrong sign or its interval includes 0, or if the
A/A arms' goodput differs by AA_MAX_RELATIVE or more, or by a third of the
A/B difference.
"""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import bbrtest

from .path import EmulatedPath
from .runner import kernel_lock

PORT = 5601
RATE_MBIT = 50                  # the lab's reference link (docs/lab.md)
RTT_MS = 40
BUFFER_BDP = 1
DRAIN_S = 5.0                   # after --seconds: the last transfers finish
# A/A: the identical arms' mean goodput within this share of each other, and
# their difference below the A/B's divided by AA_MAX_SHARE_OF_AB (a 60 s run:
# +1.8 % and 0.14 vs 11.8 Mbit/s, docs/ab-testing.md)
AA_MAX_RELATIVE = 0.25
AA_MAX_SHARE_OF_AB = 3

SINK = r"""
import socket, sys, threading
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], int(sys.argv[2]))); l.listen(256)
print("ready", flush=True)
def drain(a):
    while a.recv(1 << 16): pass
    a.close()
while True:
    a, _ = l.accept(); threading.Thread(target=drain, args=(a,), daemon=True).start()
"""

# --workers threads, each: connect, send --bytes, shut down, wait for the
# receiver's close; until --seconds are over.
LOAD = r"""
import socket, sys, threading, time
addr, port, workers, nbytes, secs = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                     int(sys.argv[4]), float(sys.argv[5]))
buf = b"x" * nbytes; end = time.monotonic() + secs; done = [0]
def work():
    while time.monotonic() < end:
        s = socket.create_connection((addr, port), timeout=60)
        s.sendall(buf); s.shutdown(socket.SHUT_WR)
        while s.recv(1 << 16): pass
        s.close(); done[0] += 1
ts = [threading.Thread(target=work) for _ in range(workers)]
[t.start() for t in ts]; [t.join() for t in ts]
print(done[0], flush=True)
"""


@contextlib.contextmanager
def bbr3_copy(tag):
    name = bbrtest.own_cc_name(tag)
    bbrtest.bbrctl("load", "--name", name, "bbr3", check=0)
    try:
        yield name
    finally:
        bbrtest.bbrctl("unload", "--force", name)


def run_split(path, cg, spec, args):
    """One split for args.seconds; its report (JSON) and text."""
    # no per-destination ssthresh carried from one arm's connections to
    # the other's (docs/ab-testing.md)
    bbrtest.netns.sysctl(path.snd_ns[0], {"net.ipv4.tcp_no_metrics_save": 1})
    bbrtest.bbrctl("attach", "--cgroup", cg.path, "--cc", spec, check=0)
    procs = []
    try:
        sink = bbrtest.python_in(path.rcv_ns, SINK, path.rcv_addr, PORT,
                                 stdin=subprocess.DEVNULL)
        procs.append(sink)
        assert sink.stdout.readline().strip() == "ready", "sink did not start"
        load = bbrtest.python_in(path.snd_ns[0], LOAD, path.rcv_addr, PORT, args.workers,
                                 args.bytes, args.seconds, cgroup=cg.path,
                                 stdin=subprocess.DEVNULL)
        procs.append(load)
        load.wait(timeout=args.seconds + 600)
        done = int(load.stdout.readline() or 0)
        time.sleep(DRAIN_S)
        rep = json.loads(bbrtest.bbrctl("ab", "report", "--json", "--cgroup", cg.path,
                                        "--min-bytes", args.bytes, check=0).stdout)
        text = bbrtest.bbrctl("ab", "report", "--cgroup", cg.path, "--min-bytes", args.bytes,
                              check=0).stdout
        print(f"{spec}: {done} transfers\n{text}", flush=True)
        return rep, text
    finally:
        for p in procs:
            p.kill()
            p.wait()
        bbrtest.bbrctl("detach", "--cgroup", cg.path)


def verdict(ab, aa):
    """The checks of the module docstring: a list of failures."""
    bad = []
    d = ab["arms"][1]["vs_first"]["goodput_bps"]
    # null in the JSON: an arm without transfers of the size
    if d["diff"] is None or d["ci95"] is None or not d["diff"] - d["ci95"] > 0:
        bad.append(f"A/B: bbr3 - cubic goodput {d['diff']} +- {d['ci95']}: "
                   "expected above 0 with the interval excluding 0")
    # A/A: practical equivalence, not "no interval excludes 0", which an A/A
    # run shows once in 20 by chance
    v = aa["arms"][1]["vs_first"]["goodput_bps"]
    if v["diff"] is None or v["relative"] is None or abs(v["relative"]) >= AA_MAX_RELATIVE:
        bad.append(f"A/A: goodput differs by {v['relative']} (bound {AA_MAX_RELATIVE})")
    elif not bad and abs(v["diff"]) >= d["diff"] / AA_MAX_SHARE_OF_AB:
        bad.append(f"A/A: goodput difference {v['diff']} not small beside the A/B's "
                   f"{d['diff']}")
    return bad


def main(argv=None):
    ap = argparse.ArgumentParser(prog="labkit.ab", description=__doc__.split("\n\n")[0])
    ap.add_argument("--loss", type=float, default=0.01, help="random loss on the data path")
    ap.add_argument("--seconds", type=float, default=60, help="length of each split")
    ap.add_argument("--workers", type=int, default=8, help="transfers at once")
    ap.add_argument("--bytes", type=int, default=2_000_000, help="bytes per transfer")
    ap.add_argument("--out", type=Path, help="write ab_lossy.md and ab_lossy.json here")
    args = ap.parse_args(argv)
    if os.geteuid():
        sys.exit("labkit.ab: needs root")
    with kernel_lock(), bbr3_copy("aba") as b3, bbr3_copy("abb") as b3b, \
            bbrtest.Cgroup(f"labab{os.getpid()}") as cg, \
            EmulatedPath(rate_mbit=RATE_MBIT, rtt_ms=RTT_MS, buffer_bdp=BUFFER_BDP,
                         loss=args.loss, log=False, prefix="labab") as path:
        ab, ab_text = run_split(path, cg, f"cubic:50,{b3}:50", args)
        aa, aa_text = run_split(path, cg, f"{b3}:50,{b3b}:50", args)
    bad = verdict(ab, aa)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "ab_lossy.json").write_text(json.dumps({"ab": ab, "aa": aa}, indent=1))
        (args.out / "ab_lossy.md").write_text(
            f"# A/B on a lossy path\n\n{RATE_MBIT} Mbit/s, {RTT_MS} ms, {BUFFER_BDP} BDP "
            f"buffer, {args.loss:.1%} random loss; {args.workers} transfers of "
            f"{args.bytes} bytes at a time for {args.seconds:g} s per split. "
            f"{b3} and {b3b} are bbr3, loaded under names of this run.\n\n"
            f"## A/B: cubic vs bbr3\n\n```\n{ab_text}```\n\n"
            f"## A/A: bbr3 vs bbr3\n\n```\n{aa_text}```\n\n"
            f"Verdict: {'; '.join(bad) if bad else 'A/B found, A/A found nothing'}\n")
    for b in bad:
        print("FAIL:", b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
