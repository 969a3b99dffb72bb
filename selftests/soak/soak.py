# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The soak: bbr-bpf used for S seconds the way a hostile but fair user and
a busy operator would, all at once, then counted (README.md here).

Phases, each a thread, all running over the same two namespaces:

  churn       flowgen batches of short connections (bulk and
              request/response) in the bbr_swift+ETS cgroup and the bbr3
              cgroup
  long flows  bulk transfers for the whole run, two per cgroup, bytes
              sent and received counted per flow
  swap        bbrctl swap --from A --to B (live sockets, both namespaces,
              sometimes per cgroup), and swap NAME in place with a new build
  unload      load a copy, attach it to a cgroup with flows, unload --force
              it under load, check the flows finish, load it again
  victims     idle ETS connections that forged options are injected into
              (bbrtest.ets), then checked: ETS still on, no sample taken,
              every byte delivered
  params      bbrctl set --cgroup / --socket / --default during traffic
  cgroups     cgroups created, attached, used, and removed with or without
              detach and --reset
  stat        bbrctl stat: bbr_swift sockets of the ETS cgroup must see ETS

At the end: connections, bytes, resets, kernel warnings, and what is left
that should not be: socket storage entries of the soak's sockets,
parameter-set records, struct_ops maps of its builds, pins, namespaces,
cgroups, registered CCs. Exit 0 only when every count is right.
"""

import argparse
import collections
import contextlib
import importlib.util
import itertools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import bbrtest
from bbrtest import ets, flowgen, netns
from bbrtest.base import BBRCTL, REPO, BbrtestError, read_line
from bbrtest.cc import pin_layout

PINS = pin_layout()
PIN_ROOT = Path(PINS["PIN_ROOT"])
PIN_CGROUP = Path(PINS["PIN_CGROUP"])
PIN_SHARED = Path(PINS["PIN_SHARED"])
ETS_SK_STOR_PIN = PIN_SHARED / PINS["PIN_ETS_SK_STOR"]
ETS_STATS_PIN = PIN_SHARED / "ets_stats"
SK_STOR_ENTRIES = REPO / "selftests" / "tools" / "sk_stor_entries"
SK_STOR_ENTRIES_OBJ = REPO / "selftests" / "progs" / "sk_stor_entries.bpf.o"
VICTIM = Path(__file__).resolve().with_name("victim.py")

DEFAULT_SECONDS = 600
RATE_MBIT = 100                 # the bottleneck between the namespaces (tbf)
BBRCTL_TIMEOUT_S = 120          # bbrctl waits up to 60 s for its lock
# churn: flowgen batches of BATCH_S seconds of connection starts
BATCH_S = 5.0
CHURN_PER_S = 10                # connections per second and cgroup
FLOW_STOP_S = 60                # a churn flow still running this long has hung
SAMPLE_MS = 1000                # flowgen's TCP_INFO rows: not used, keep them few
FLOWGEN_HDR_BYTES = 16          # flowgen's per-connection header (its README)
LONG_FLOWS_PER_CGROUP = 2
# phase periods, seconds
SWAP_EVERY_S = 3.0
INPLACE_EVERY_S = 15.0
PARAMS_EVERY_S = 1.5
CGROUP_EVERY_S = 4.0
VICTIM_EVERY_S = 8.0
STAT_EVERY_S = 2.0
STALE_CHECK_EVERY = 5           # stat rounds between socket storage checks
UNLOAD_FLOW_S = 7.0             # an unload cycle's flows
UNLOAD_AFTER_S = 2.5            # into the cycle: unload --force
# ports (server side) per use
PORTS = {"churn_swift": (6100, 6103), "churn_bbr3": (6200, 6203), "churn_unload": (6300, 6301),
         "long": (7000, 7099), "unload": (7100, 7199), "victim": (7200, 7299)}
# bbr_swift sockets of the ETS cgroup: once they delivered this many
# packets they have ETS samples, so status no_ets means the CC reads
# another map than the one the ETS program fills
SWIFT_CHECK_MIN_DELIVERED = 50
SWIFT_TARGET_US = 2000          # the default target of the soak's bbr_swift
SETTLE_S = 30.0                 # for struct_ops maps and namespaces to go
SOCKETS_CLOSE_S = 75.0          # FIN_WAIT2 orphans time out after 60 s
THREAD_JOIN_S = 180.0
DMESG_RE = re.compile(r"WARNING|BUG|Oops|refcount|leak|bpf")
DMESG_TS_RE = re.compile(r"^\[\s*(\d+\.\d+)\]")
SO_NETNS_COOKIE = 71            # include/uapi/asm-generic/socket.h

# parameter changes: key -> values a fair user may write (in range,
# including the range's edges where the flows survive them)
PARAM_VALUES = {
    "beta": (0, 76, 128, 256),
    "loss_thresh": (1, 5, 20, 255),
    "ecn_enable": (0, 1),
    "probe_rtt_mode_ms": (0, 100, 200),
    "probe_rtt_win_ms": (100, 5000, 60000),
    "min_rtt_win_sec": (1, 10, 60),
    "cwnd_gain": (256, 512, 1024),
    "extra_acked_gain": (0, 256, 1024),
    "fast_path": (0, 1),
    "generation": (2023, 2026),
    "loss_queue_thresh": (0, 32, 1024),
    "inflight_headroom": (0, 38, 256),
    "profile": ("v3", "v3plus"),
}
SWIFT_PARAM_VALUES = {
    "target_rtt_us": (200, 1000, 5000, 50000),
    "stale_us": (0, 20000, 1000000),
    "keep_ecn": (0, 1),
}


def log(msg):
    print(f"soak: {msg}", file=sys.stderr, flush=True)


class Tally:
    """Counters and problems, shared by the phases."""

    def __init__(self):
        self.lock = threading.Lock()
        self.n = collections.Counter()
        self.failures = collections.Counter()     # why connections failed
        self.problems = []

    def add(self, key, n=1):
        with self.lock:
            self.n[key] += n

    def fail(self, why, n=1):
        with self.lock:
            self.failures[why] += n

    def problem(self, msg):
        with self.lock:
            self.problems.append(msg)
        log(f"PROBLEM: {msg}")


class Stop(Exception):
    """SIGTERM (or SIGINT) during the run."""


# ---- bbrctl and bpftool ------------------------------------------------------------

def bbrctl(*args, tally=None, ok=(0,)):
    """bbrctl ARGS; a crash or an exit status outside ok is a problem.

    stat, list, set and swap enter every namespace under /run/netns in
    turn; another run on the machine that deletes its namespace meanwhile
    may SIGKILL whatever it finds inside (bbrtest before delete_netns()
    spared visitors). Such a command is run once more, and counted."""
    for attempt in (1, 2):
        try:
            cp = bbrtest.bbrctl(*args, timeout=BBRCTL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            cp = subprocess.CompletedProcess(bbrtest.ctl.argv(*args), -1, "",
                                             f"timed out after {BBRCTL_TIMEOUT_S} s")
        if cp.returncode != -signal.SIGKILL or attempt == 2:
            break
        if tally is not None:
            tally.add("bbrctl_killed")
        log(f"`bbrctl {' '.join(map(str, args))}` was killed (SIGKILL); once more")
    if cp.returncode not in ok and tally is not None:
        tally.problem(f"`bbrctl {' '.join(map(str, args))}` exited {cp.returncode}: "
                      f"{(cp.stderr or cp.stdout).strip()[-500:]}")
    return cp


def bpftool_json(*args):
    # bpftool 7.5 prints some links and then exits 255: trust its JSON
    cp = bbrtest.run(["bpftool", "-j", *args], timeout=60, check=False)
    if not cp.stdout.strip():
        raise BbrtestError(f"bpftool {' '.join(map(str, args))}: {cp.stderr.strip()}")
    return json.loads(cp.stdout)


def struct_ops_of(names):
    """{map id: CC name} of the struct_ops maps of CCs named one of names
    (registered or not: an unloaded or swapped-out build lives while sockets
    use it)."""
    found = {}
    for m in bpftool_json("struct_ops", "show") or []:
        cp = bbrtest.run(["bpftool", "-j", "struct_ops", "dump", "id", str(m["id"])],
                         timeout=60, check=False)
        hit = re.search(r'"name"\s*:\s*"([^"]*)"', cp.stdout)
        if cp.returncode == 0 and hit and hit.group(1) in names:
            found[m["id"]] = hit.group(1)
    return found


def prog_maps(struct_ops_id):
    """{map id: name} of the maps the programs of a struct_ops map use (its
    value names the programs: "bbr3_main/prog_id:N")."""
    cp = bbrtest.run(["bpftool", "-j", "struct_ops", "dump", "id", str(struct_ops_id)],
                     timeout=60)
    ids = set()
    for prog in set(re.findall(r"/prog_id:(\d+)", cp.stdout)):
        ids |= set(bpftool_json("prog", "show", "id", prog).get("map_ids", []))
    return {i: bpftool_json("map", "show", "id", str(i)).get("name", "") for i in sorted(ids)}


def cc_storage_maps(names):
    """{socket storage map id: CC name} of every build, registered or not,
    of the CCs named one of names (NAME_sk_stor; not the shared ETS map)."""
    found = {}
    for sid, cc in struct_ops_of(names).items():
        try:
            maps = prog_maps(sid)
        except BbrtestError:
            continue                # freed meanwhile
        for mid, mname in maps.items():
            if mname.endswith("_sk_stor") and mname != PINS["PIN_ETS_SK_STOR"]:
                found[mid] = cc
    return found


def sk_stor_entries(map_id, netns_paths):
    """[{"cookie", "netns_cookie", "cc"}] of the TCP sockets in netns_paths
    with an entry in socket storage map map_id (selftests/tools/sk_stor_entries:
    `bpftool map dump` cannot list these maps)."""
    cp = bbrtest.run([SK_STOR_ENTRIES, SK_STOR_ENTRIES_OBJ, map_id, *netns_paths],
                     timeout=60, check=False)
    if cp.returncode != 0:
        if bbrtest.run(["bpftool", "map", "show", "id", str(map_id)], check=False).returncode:
            return []               # the map went away meanwhile
        raise BbrtestError(f"sk_stor_entries map {map_id}: {cp.stderr.strip()}")
    return [json.loads(line) for line in cp.stdout.splitlines() if line.strip()]


def param_cgrp_entries(name):
    """Entries of the param_cgrp map (lib/tcp_cc.h) of loaded CC name."""
    link = bpftool_json("link", "show", "pinned", PIN_ROOT / name / PINS["PIN_LINK"])
    maps = prog_maps(link["map_id"])
    for mid, mname in maps.items():
        if mname == "param_cgrp":
            return bpftool_json("map", "dump", "id", str(mid))
    raise BbrtestError(f"{name}: no param_cgrp map among its programs' maps {maps}")


def ets_stats_keys():
    """Netns cookies with counters in the shared ets_stats map (none if it
    is not pinned)."""
    if not ETS_STATS_PIN.exists():
        return set()
    keys = set()
    for e in bpftool_json("map", "dump", "pinned", ETS_STATS_PIN) or []:
        k = e.get("formatted", {}).get("key")
        if k is None:
            k = int.from_bytes(bytes(int(b, 16) for b in e["key"]), "little")
        keys.add(k)
    return keys


def ets_option_of(pkt):
    """The ETS option bytes of a scapy packet (kind 254, length 14, ExID), or None."""
    from scapy.all import IP
    raw = bytes(pkt[IP])
    ihl = (raw[0] & 0xF) * 4
    doff = (raw[ihl + 12] >> 4) * 4
    opts = raw[ihl + 20: ihl + doff]
    i = opts.find(bytes([ets.ETS_KIND, 14, ets.ETS_EXID >> 8, ets.ETS_EXID & 0xFF]))
    return None if i < 0 else opts[i:i + 14]


def dmesg_lines():
    cp = bbrtest.run(["dmesg"], timeout=30, check=False)
    return cp.stdout.splitlines()


def dmesg_last_ts(lines):
    for line in reversed(lines):
        m = DMESG_TS_RE.match(line)
        if m:
            return float(m.group(1))
    return 0.0


def netns_cookie(ns):
    code = ("import socket; s = socket.socket(); "
            f"print(int.from_bytes(s.getsockopt(socket.SOL_SOCKET, {SO_NETNS_COOKIE}, 8), 'little'))")
    proc = netns.python_in(ns, code)
    out, err = proc.communicate(timeout=30)
    if proc.returncode != 0:
        raise BbrtestError(f"netns cookie of {ns}: {err.strip()}")
    return int(out)


def open_sockets(ns):
    """TCP sockets in ns other than TIME_WAIT (ss)."""
    cp = bbrtest.run(netns.in_netns(ns, ["ss", "-Htan"]), timeout=30, check=False)
    return [line for line in cp.stdout.splitlines()
            if line.strip() and not line.startswith("TIME-WAIT")]


# ---- the soak ----------------------------------------------------------------------

class Soak:
    def __init__(self, args):
        self.args = args
        self.seconds = args.seconds
        self.rng = random.Random(args.seed)
        self.rng_lock = threading.Lock()
        self.tag = f"soak{os.getpid()}"
        self.cc = {"bbr3": self.tag + "3", "swift": self.tag + "s", "copy": self.tag + "u"}
        self.obj = {}               # base CC -> the object bbrctl loaded it from
        self.loaded = set()         # our CC names bbrctl has loaded now
        self.copy_base = "bbr3"
        self.tally = Tally()
        self.stop = threading.Event()
        self.procs = []             # every process started, killed on the way out
        self.procs_lock = threading.Lock()
        self.cg = {}                # role -> bbrtest.Cgroup
        self.attached = set()       # cgroup paths attached by us
        self.temp_cgroups = {}      # path -> Cgroup (cgroup churn)
        self.cgroup_ids = set()     # ids of every cgroup created (their pins)
        self.servers = {}           # churn role -> {"server", "expect_bytes", "flows"}
        self.batch = itertools.count()
        self.socket_sets = []       # (cc, cookie) with a set of their own
        self.workdir = None
        self.topo = None
        self.netns_cookies = set()
        self.summary = None
        self.phases = []
        self.cleaning = False       # signals no longer interrupt
        self.long_swift_ports = set()
        self.swift_no_ets_seen = collections.Counter()
        self.attach_cc = {}         # cgroup path -> the CC attached there
        self.stale_seen = set()     # (map id, cookie) reported

    # -- shared by the phases --

    def choice(self, seq):
        with self.rng_lock:
            return self.rng.choice(list(seq))

    def track(self, proc):
        with self.procs_lock:
            if len(self.procs) > 200:
                self.procs = [p for p in self.procs if p.poll() is None]
            self.procs.append(proc)
        return proc

    def kill_all(self):
        with self.procs_lock:
            procs, self.procs = self.procs, []
        for p in procs:
            if p.poll() is None:
                p.kill()
            try:
                p.communicate(timeout=5)
            except (subprocess.TimeoutExpired, ValueError):
                pass

    def ctl(self, *args, ok=(0,)):
        return bbrctl(*args, tally=self.tally, ok=ok)

    def sleep(self, s):
        """Sleep s seconds; False once the soak is stopping."""
        return not self.stop.wait(s)

    # -- setup and teardown --

    def preflight(self):
        problems = []
        if os.geteuid() != 0:
            problems.append("not root (namespaces, cgroups and bbrctl need it)")
        for f in (BBRCTL, flowgen.FLOWGEN_BIN, SK_STOR_ENTRIES, SK_STOR_ENTRIES_OBJ):
            if not os.access(f, os.R_OK):
                problems.append(f"{f}: not built (run `make`)")
        for tool in ("ip", "tc", "ss", "bpftool", "nsenter", "tcpdump", "dmesg"):
            if shutil.which(tool) is None:
                problems.append(f"{tool}: not found (run `make setup`)")
        if importlib.util.find_spec("scapy") is None:     # the victims forge with it
            problems.append("scapy is not installed (run `make setup`)")
        if problems:
            raise BbrtestError("the soak cannot run here:\n  " + "\n  ".join(problems))

    def load(self, name, base):
        cp = self.ctl("load", "--name", name, base)
        if cp.returncode != 0:
            raise BbrtestError(f"cannot load {base} as {name}")
        self.loaded.add(name)
        m = re.search(r"loaded \S+ from (\S+) \(", cp.stdout)
        if m:
            self.obj[base] = m.group(1)

    def unload(self, name, force=True):
        args = ["unload", "--force", name] if force else ["unload", name]
        cp = self.ctl(*args)
        if cp.returncode == 0:
            self.loaded.discard(name)
            with self.procs_lock:   # attachments of name went with it
                self.attached = {p for p in self.attached if self.attach_cc.get(p) != name}
        return cp

    def attach(self, path, name):
        cp = self.ctl("attach", "--cgroup", path, "--cc", name)
        if cp.returncode == 0:
            with self.procs_lock:
                self.attached.add(str(path))
                self.attach_cc[str(path)] = name
        return cp.returncode == 0

    def detach(self, path):
        cp = self.ctl("detach", "--cgroup", path)
        with self.procs_lock:
            self.attached.discard(str(path))
        return cp.returncode == 0

    def setup(self, stack):
        self.start = {
            "ccs": set(bbrtest.available_ccs()),
            "pin_root": PIN_ROOT.exists(),
            "shared": PIN_SHARED.exists(),
        }
        lines = dmesg_lines()
        self.dmesg_ts = dmesg_last_ts(lines)
        self.workdir = Path(tempfile.mkdtemp(prefix=self.tag + "-"))
        stack.callback(shutil.rmtree, self.workdir, True)
        stack.callback(self.kill_all)

        self.topo = bbrtest.Topology(rate_mbit=self.args.rate_mbit, prefix="soak")
        stack.enter_context(self.topo)
        for ns in self.topo.namespaces():
            self.netns_cookies.add(netns_cookie(ns))
        log(f"namespaces {', '.join(self.topo.namespaces())}: {self.topo.snd_addr} -> "
            f"{self.topo.rcv_addr}, {self.args.rate_mbit} Mbit/s")

        parent = bbrtest.Cgroup(self.tag, kill=True, mount=True)
        stack.enter_context(parent)
        self.cgroup_ids.add(parent.id)
        for role in ("swift", "bbr3", "unload"):
            cg = bbrtest.Cgroup(f"{self.tag}/{role}", kill=True)
            stack.enter_context(cg)
            self.cg[role] = cg
            self.cgroup_ids.add(cg.id)
        stack.callback(self.remove_temp_cgroups)
        stack.callback(self.undo_bbrctl)

        self.load(self.cc["bbr3"], "bbr3")
        self.load(self.cc["swift"], "bbr_swift")
        self.load(self.cc["copy"], self.copy_base)
        self.obj.setdefault("bbr3", str(REPO / "bpf" / "bbr3.bpf.o"))
        self.obj.setdefault("bbr_swift", str(REPO / "bpf" / "bbr_swift.bpf.o"))
        for role, cc in (("swift", "swift"), ("bbr3", "bbr3"), ("unload", "copy")):
            if not self.attach(self.cg[role].path, self.cc[cc]):
                raise BbrtestError(f"cannot attach {self.cc[cc]} to {self.cg[role].path}")
        self.ctl("set", "--default", self.cc["swift"], f"target_rtt_us={SWIFT_TARGET_US}")
        log(f"loaded {', '.join(sorted(self.loaded))}; attached to {self.tag}/swift (with ETS), "
            f"/bbr3 and /unload")

        for role in ("swift", "bbr3"):
            self.start_server(f"churn_{role}", self.cg[role])
            stack.callback(self.stop_server, f"churn_{role}")

    def start_server(self, role, cg):
        lo, hi = PORTS[role]
        srv = flowgen.Server(self.topo.rcv_ns, self.topo.rcv_addr, f"{lo}-{hi}",
                             self.workdir / f"server-{role}.err", cgroup=cg.path)
        srv.__enter__()
        self.track(srv.proc)
        with self.tally.lock:
            self.servers[role] = {"server": srv, "expect_bytes": 0, "hdr_bytes": 0}

    def stop_server(self, role):
        with self.tally.lock:
            s = self.servers.pop(role, None)
        if s is None:
            return
        s["server"].__exit__()
        text = s["server"].errpath.read_text()
        m = re.search(r"(\d+) connections, (\d+) bytes received", text)
        if not m:
            self.tally.problem(f"flowgen server {role} left no count: {text.strip()[-300:]}")
            return
        got = int(m.group(2)) - s["hdr_bytes"]
        self.tally.add("bytes_received", got)
        if got != s["expect_bytes"]:
            log(f"server {role}: received {got} payload bytes, clients sent {s['expect_bytes']}")

    def undo_bbrctl(self):
        """Detach and unload what the soak attached and loaded (also after a
        failure half-way)."""
        for path in sorted(self.attached):
            self.detach(path)
        for name in sorted(self.loaded):
            self.unload(name)

    def remove_temp_cgroups(self):
        for path, cg in list(self.temp_cgroups.items()):
            try:
                cg.remove()
            except BbrtestError as e:
                self.tally.problem(str(e))
            self.temp_cgroups.pop(path, None)

    # -- traffic --

    def churn_flows(self, role, n, spread_s):
        lo, hi = PORTS[role]
        flows = []
        for i in range(n):
            with self.rng_lock:
                start = round(i * spread_s / max(n, 1), 3)
                port = self.rng.randint(lo, hi)
                if self.rng.random() < 0.35:
                    f = {"kind": "bulk", "bytes": self.rng.randint(8, 128) * 1024}
                else:
                    f = {"kind": "rr", "req_bytes": self.rng.choice((100, 300, 1000)),
                         "resp_bytes": self.rng.randint(1, 16) * 1000,
                         "count": self.rng.randint(1, 4)}
            f.update({"id": i, "dst": self.topo.rcv_addr, "port": port, "start_s": start,
                      "stop_s": start + FLOW_STOP_S})
            flows.append(f)
        return flows

    def run_batch(self, server_role, cg_path, flows, what="churn"):
        """One flowgen client in cg_path for flows against the server of
        server_role; counts them."""
        tag = f"-{next(self.batch)}"
        proc = self.track(flowgen.start_client(self.topo.snd_ns, flows, self.workdir, tag=tag,
                                               sample_ms=SAMPLE_MS, cgroup=cg_path))
        limit = max(f["stop_s"] for f in flows) + 30
        try:
            proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            self.tally.problem(f"flowgen client{tag} still running after {limit} s")
        summ = self.workdir / f"flowsum{tag}.json"
        try:
            summary = json.loads(summ.read_text())
        except (OSError, json.JSONDecodeError):
            err = (self.workdir / f"client{tag}.err").read_text(errors="replace")
            self.tally.problem(f"flowgen client{tag} exited {proc.returncode} without a "
                               f"summary: {err.strip()[-300:]}")
            summary = {"flows": []}
        by_id = {f["id"]: f for f in flows}
        sent = hdr = 0
        for r in summary["flows"]:
            spec = by_id.get(r["id"], {})
            self.tally.add("opened")
            self.tally.add(f"{what}_connections")
            if r.get("completed"):
                self.tally.add("completed")
            else:
                err = r.get("error") or {}
                self.tally.add("failed")
                self.tally.fail(f"{what} {err.get('stage', '?')}/{err.get('errno_name', '?')}")
            sent += r.get("app_bytes_sent", 0)
            if r.get("connected"):
                hdr += FLOWGEN_HDR_BYTES
            if spec.get("kind") == "rr":
                self.tally.add("bytes_sent", (r.get("app_bytes_sent", 0) // spec["req_bytes"])
                               * spec["resp_bytes"])
                self.tally.add("bytes_received", r.get("app_bytes_received", 0))
        missing = len(flows) - len(summary["flows"])
        if missing > 0:
            self.tally.add("opened", missing)
            self.tally.add("failed", missing)
            self.tally.fail(f"{what} not in the summary", missing)
        self.tally.add("bytes_sent", sent)
        with self.tally.lock:
            s = self.servers.get(server_role)
            if s is not None:
                s["expect_bytes"] += sent
                s["hdr_bytes"] += hdr
        for pattern in (f"flows{tag}.json", f"samples{tag}.csv", f"flowsum{tag}.json",
                        f"client{tag}.err"):
            (self.workdir / pattern).unlink(missing_ok=True)

    def phase_churn(self, role):
        n = max(1, int(self.args.churn_rate * BATCH_S))
        while not self.stop.is_set():
            self.run_batch(f"churn_{role}", self.cg[role].path,
                           self.churn_flows(f"churn_{role}", n, BATCH_S))

    def transfer(self, cc, port, seconds, cg):
        t = bbrtest.Transfer(self.topo, cc, seconds=seconds, port=port, cgroup=cg.path,
                             timeout=seconds + 60)
        t.__enter__()
        self.track(t.server)
        self.track(t.client)
        self.tally.add("opened")
        return t

    def transfer_done(self, t, what):
        """Count a Transfer's result; the result or None."""
        try:
            res = t.result()
        except (BbrtestError, OSError, ValueError) as e:
            self.tally.add("failed")
            self.tally.fail(f"{what} {getattr(e, 'stage', None) or ''}/"
                            f"{getattr(e, 'errno_name', None) or '?'}")
            self.tally.problem(f"{what} flow to port {t.port} failed: {e}")
            return None
        self.tally.add("completed")
        self.tally.add("bytes_sent", res["bytes_sent"])
        self.tally.add("bytes_received", res["bytes_received"])
        if res["bytes_sent"] != res["bytes_received"]:
            self.tally.problem(f"{what} flow to port {t.port}: {res['bytes_sent']} bytes sent, "
                               f"{res['bytes_received']} received")
        return res

    def phase_swap(self):
        """Live sockets back and forth between the soak's bbr3 and bbr_swift."""
        a, b = self.cc["bbr3"], self.cc["swift"]
        for k in itertools.count():
            if not self.sleep(SWAP_EVERY_S):
                return
            # each namespace in turn, each way in turn: a socket spends
            # two periods on either CC
            frm, to = (a, b) if (k // 2) % 2 == 0 else (b, a)
            ns = (self.topo.snd_ns, self.topo.rcv_ns)[k % 2]
            args = ["--json", "swap", "--from", frm, "--to", to, "--netns", ns]
            if k % 5 == 4:
                args += ["--cgroup", self.cg[self.choice(("swift", "bbr3"))].path]
            cp = self.ctl(*args)
            try:
                doc = json.loads(cp.stdout)
            except json.JSONDecodeError:
                continue            # ctl() reported it
            self.tally.add("live_swaps")
            self.tally.add("sockets_switched", doc["switched"])
            self.tally.add("swap_failed", doc["failed"])

    def phase_inplace(self):
        """swap NAME: a new build in place, bbr3 and bbr_swift in turn."""
        for k in itertools.count():
            if not self.sleep(INPLACE_EVERY_S):
                return
            role, base = (("bbr3", "bbr3"), ("swift", "bbr_swift"))[k % 2]
            cp = self.ctl("swap", "--obj", self.obj[base], self.cc[role])
            if cp.returncode == 0:
                self.tally.add("inplace_swaps")
            if role == "swift":     # a new build starts from the defaults: no target
                self.ctl("set", "--default", self.cc["swift"], f"target_rtt_us={SWIFT_TARGET_US}")

    def phase_unload(self):
        """A copy attached to the unload cgroup, unloaded (--force) under
        load, loaded again; its flows must finish with every byte."""
        copy, cg = self.cc["copy"], self.cg["unload"]
        lo, hi = PORTS["unload"]
        ports = itertools.cycle(range(lo, hi + 1))
        while not self.stop.is_set():
            if copy not in self.loaded:
                self.copy_base = "bbr_swift" if self.copy_base == "bbr3" else "bbr3"
                self.load(copy, self.copy_base)
                self.tally.add("reloads")
                if not self.attach(cg.path, copy):
                    return
            self.start_server("churn_unload", cg)
            flows = [self.transfer(copy, next(ports), UNLOAD_FLOW_S, cg) for _ in range(2)]
            batch = threading.Thread(target=self.run_batch, name="unload-churn", args=(
                "churn_unload", cg.path,
                self.churn_flows("churn_unload", int(self.args.churn_rate * UNLOAD_FLOW_S / 2),
                                 UNLOAD_FLOW_S)), kwargs={"what": "churn"})
            batch.start()
            time.sleep(UNLOAD_AFTER_S)
            cookies = set()
            for t in flows:
                try:
                    cookies.add(t.connected()["cookie"])
                except BbrtestError:
                    pass            # transfer_done() below counts it
            cp = self.ctl("--json", "stat", copy)
            try:
                on_copy = {s["cookie"] for s in json.loads(cp.stdout)}
            except json.JSONDecodeError:
                on_copy = set()
            if cookies - on_copy:
                self.tally.problem(f"sockets {sorted(cookies - on_copy)} of {copy}'s cgroup "
                                   f"do not run {copy} before its unload")
                self.tally.add("unload_not_on_copy", len(cookies - on_copy))
            cp = self.unload(copy)
            if cp.returncode == 0:
                self.tally.add("unloads")
                if "detached" not in cp.stderr:
                    self.tally.problem(f"unload --force {copy} did not say it detached "
                                       f"{cg.path}: {cp.stderr.strip()}")
            for t in flows:
                self.tally.add("unload_flows")
                res = self.transfer_done(t, "unload")
                if res is not None and res["cc"] != copy:
                    log(f"unload flow to port {t.port} ended on {res['cc']}")
            batch.join()
            self.stop_server("churn_unload")

    def phase_victims(self):
        lo, hi = PORTS["victim"]
        for port in itertools.cycle(range(lo, hi + 1)):
            if not self.sleep(VICTIM_EVERY_S):
                return
            state = {"opened": False, "counted": False}
            try:
                self.victim(port, state)
            except (BbrtestError, OSError, ValueError, KeyError,
                    subprocess.TimeoutExpired) as e:
                self.tally.add("victims_failed")
                self.tally.problem(f"ETS victim on port {port}: {type(e).__name__}: {e}")
                if state["opened"] and not state["counted"]:
                    self.tally.add("failed")
                    self.tally.fail(f"victim {type(e).__name__}")

    def victim(self, port, state):
        from scapy.all import TCP, rdpcap
        snd, rcv, cg = self.topo.snd_ns, self.topo.rcv_ns, self.cg["swift"].path
        pcap = self.workdir / f"victim{port}.pcap"
        srv = cli = cap = None
        try:
            cap = self.track(netns.popen_in(snd, ["tcpdump", "-U", "--immediate-mode", "-n",
                                                  "-Z", "root", "-i", self.topo.SND_DEV,
                                                  "-w", pcap, "tcp", "src", "port", str(port)]))
            try:
                if "listening" not in read_line(cap.stderr.fileno(), 10):
                    raise BbrtestError("tcpdump did not start")
                srv = self.track(netns.popen_in(rcv, [sys.executable, VICTIM, "server",
                                                      self.topo.rcv_addr, port], cgroup=cg))
                if "listening" not in read_line(srv.stdout.fileno(), 10):
                    raise BbrtestError("victim server did not start")
                self.tally.add("opened")
                state["opened"] = True
                cli = self.track(netns.popen_in(
                    snd, [sys.executable, VICTIM, "client", self.topo.rcv_addr, port,
                          ETS_SK_STOR_PIN, 3, 0.25, 500, 200_000], cgroup=cg,
                    stdin=subprocess.PIPE))
                held = json.loads(read_line(cli.stdout.fileno(), 30) or "{}")
                if not held.get("held"):
                    raise BbrtestError(f"victim client: {held}")
                before = held["ets"]
                time.sleep(0.2)
            finally:
                cap.terminate()
                cap.communicate(timeout=10)
            acks = [p for p in rdpcap(str(pcap)) if TCP in p and not len(p[TCP].payload)
                    and int(p[TCP].flags) & 0x10 and int(p[TCP].flags) & 0x07 == 0]
            if not acks:
                raise BbrtestError("no pure ACK from the victim server to forge from")
            # Only the latest ACK passes PAWS and the sequence checks, so
            # that the ETS program parses its copies. A loss on the shared
            # bottleneck can leave it with SACK and no room for ETS: then
            # there is nothing to forge from this time.
            variants = {}
            if ets_option_of(acks[-1]) is None:
                self.tally.add("victims_skipped")
                log(f"ETS victim on port {port}: its last ACK carries no ETS option "
                    f"(SACK took the room); skipped")
            else:
                variants = ets.malformed_variants(acks[-1])
                ets.inject(rcv, variants.values())
                self.tally.add("forged_segments", len(variants))
            time.sleep(0.3)
            cli.stdin.write("go\n")
            cli.stdin.flush()
            end = json.loads(read_line(cli.stdout.fileno(), 60) or "{}")
            cli.wait(timeout=60)
            got = json.loads(read_line(srv.stdout.fileno(), 30) or "{}")
            srv.wait(timeout=30)
        finally:
            pcap.unlink(missing_ok=True)
            for p in (cli, srv, cap):
                if p is not None and p.poll() is None:
                    p.kill()
        if "bytes_sent" not in end or "bytes_received" not in got:
            self.tally.add("failed")
            self.tally.fail("victim " + (end.get("error") or got.get("error") or "?"))
            state["counted"] = True
            raise BbrtestError(f"victim connection failed: client {end}, server {got}")
        self.tally.add("completed")
        state["counted"] = True
        self.tally.add("victims")
        self.tally.add("bytes_sent", end["bytes_sent"])
        self.tally.add("bytes_received", got["bytes_received"])
        after = end["ets"]
        wrong = []
        if not before.get("flags", 0) & 0x04:
            wrong.append(f"ETS was not on before the injection: {before}")
        if not after.get("flags", 0) & 0x04 or after.get("flags", 0) & 0x08:
            wrong.append("ETS turned off by forged options")
        if after.get("samples") != before.get("samples"):
            wrong.append("a forged option gave a sample")
        if after.get("network_rtt_us") != before.get("network_rtt_us"):
            wrong.append("Network_RTT moved")
        if (after.get("rejected", 0) - before.get("rejected", 0)) % 2**32 < len(variants):
            wrong.append(f"rejected {after.get('rejected')} - {before.get('rejected')} "
                         f"< {len(variants)} forged")
        if end["bytes_sent"] != got["bytes_received"]:
            wrong.append(f"{end['bytes_sent']} bytes sent, {got['bytes_received']} received")
        if wrong:
            self.tally.add("victims_failed")
            self.tally.problem(f"ETS victim on port {port}: {'; '.join(wrong)} "
                               f"(before {before}, after {after})")

    def phase_params(self):
        for k in itertools.count():
            if not self.sleep(PARAMS_EVERY_S):
                return
            role = self.choice(("bbr3", "swift"))
            name = self.cc[role]
            what = self.choice(("cgroup", "cgroup", "cgroup", "reset", "default", "socket",
                                "socket", "unsocket"))
            pairs = self.param_pairs(role)
            if what == "cgroup":
                args = ["set", "--cgroup", self.cg[role].path, name, *pairs]
            elif what == "reset":
                args = ["set", "--cgroup", self.cg[role].path, name, "--reset"]
            elif what == "default":
                if role == "swift":     # keep a target, the stat check relies on it
                    pairs = [p for p in pairs if not p.startswith("target_rtt_us=")]
                    pairs.append(f"target_rtt_us={SWIFT_TARGET_US}")
                args = ["set", "--default", name, *pairs]
            elif what == "socket":
                cp = self.ctl("--json", "stat", name)
                try:
                    socks = json.loads(cp.stdout)
                except json.JSONDecodeError:
                    continue
                if not socks:
                    continue
                cookie = self.choice(s["cookie"] for s in socks)
                args = ["set", "--socket", cookie, name, *pairs]
                self.socket_sets.append((name, cookie))
            else:
                if not self.socket_sets:
                    continue
                name, cookie = self.socket_sets.pop(0)
                args = ["set", "--socket", cookie, name, "--reset"]
            cp = self.ctl(*args, ok=(0, 1))
            if cp.returncode == 0:
                self.tally.add("param_sets")
                if what in ("socket", "unsocket"):
                    self.tally.add("socket_param_sets")
            elif ("socket with cookie" in cp.stderr or "closed meanwhile" in cp.stderr) \
                    and what in ("socket", "unsocket"):
                # it closed before bbrctl found it, or between finding it
                # and writing its set (bbrctl then drops the record again)
                self.tally.add("socket_param_gone")
            elif cp.returncode == 1:
                self.tally.problem(f"`bbrctl {' '.join(map(str, args))}` exited 1: "
                                   f"{cp.stderr.strip()[-300:]}")

    def param_pairs(self, role):
        table = dict(PARAM_VALUES)
        if role == "swift":
            table.update(SWIFT_PARAM_VALUES)
        with self.rng_lock:
            keys = self.rng.sample(sorted(table), self.rng.randint(1, 3))
            pairs = [f"{k}={self.rng.choice(table[k])}" for k in keys]
        # a profile first: keys after it override it
        return sorted(pairs, key=lambda p: not p.startswith("profile="))

    def phase_cgroups(self):
        """Cgroups come and go with attachments and parameter sets."""
        for k in itertools.count():
            if not self.sleep(CGROUP_EVERY_S):
                return
            cg = bbrtest.Cgroup(f"{self.tag}/t{k}", kill=True)
            cg.__enter__()
            with self.procs_lock:
                self.temp_cgroups[str(cg.path)] = cg
            self.cgroup_ids.add(cg.id)
            self.tally.add("cgroups_created")
            role = ("bbr3", "swift")[k % 2]
            name = self.cc[role]
            if self.attach(cg.path, name):
                self.tally.add("attaches")
            ending = k % 3             # 0 detach, 1 removed attached, 2 a set left behind
            if ending == 2:
                self.ctl("set", "--cgroup", cg.path, name, *self.param_pairs(role))
            self.run_batch("churn_bbr3", cg.path,
                           self.churn_flows("churn_bbr3", 10, 1.0), what="probe")
            if ending == 0 and self.detach(cg.path):
                self.tally.add("detaches")
            else:
                with self.procs_lock:
                    self.attached.discard(str(cg.path))
            try:
                cg.remove()
                self.tally.add("cgroups_deleted")
            except BbrtestError as e:
                self.tally.problem(str(e))
            with self.procs_lock:
                self.temp_cgroups.pop(str(cg.path), None)

    def phase_stat(self):
        """bbr_swift sockets of the ETS cgroup must see ETS samples."""
        ets_ports = set(self.long_swift_ports)
        for role in ("churn_swift", "victim"):
            lo, hi = PORTS[role]
            ets_ports |= set(range(lo, hi + 1))
        seen = self.swift_no_ets_seen
        for k in itertools.count(1):
            if not self.sleep(STAT_EVERY_S):
                return
            if k % STALE_CHECK_EVERY == 0:
                self.check_stale_entries()
            cp = self.ctl("--json", "stat", self.cc["swift"])
            try:
                socks = json.loads(cp.stdout)
            except json.JSONDecodeError:
                continue
            self.tally.add("stat_samples")
            for s in socks:
                ports = {s.get("sport"), s.get("dport")}
                if not ports & ets_ports:
                    continue
                sw = s.get("swift") or {}
                if s.get("delivered", 0) < SWIFT_CHECK_MIN_DELIVERED or \
                        not str(sw.get("status", "")).startswith("no_ets"):
                    continue
                # twice: one sample of exactly 0 us Network_RTT also reads
                # as no sample
                seen[s["cookie"]] += 1
                if seen[s["cookie"]] == 2:
                    self.tally.add("swift_no_ets")
                    self.tally.problem(
                        f"bbr_swift socket {s['cookie']} ({s.get('saddr')}:{s.get('sport')} -> "
                        f"{s.get('daddr')}:{s.get('dport')}) of the ETS cgroup has no ETS "
                        f"sample after {s.get('delivered')} packets")

    def check_stale_entries(self):
        """A socket holds an entry only in the storage of the CC it runs:
        the CC it left (swap --from/--to) must have deleted its own."""
        for mid, cc in cc_storage_maps(set(self.cc.values())).items():
            for e in sk_stor_entries(mid, self.netns_paths()):
                if e["cc"] == cc or (mid, e["cookie"]) in self.stale_seen:
                    continue
                self.stale_seen.add((mid, e["cookie"]))
                self.tally.add("leak_stale_sk_storage")
                self.tally.problem(f"socket {e['cookie']} runs {e['cc']} but still has an "
                                   f"entry in {cc}'s socket storage (map {mid})")
        self.tally.add("stale_checks")

    # -- the run --

    def run(self):
        t_begin = time.monotonic()
        with contextlib.ExitStack() as stack:
            try:
                self.setup(stack)
                long_flows = []
                lo, _ = PORTS["long"]
                port = itertools.count(lo)
                for role, cc in (("swift", "swift"), ("bbr3", "bbr3"), ("unload", "copy")):
                    for _ in range(LONG_FLOWS_PER_CGROUP):
                        p = next(port)
                        if role == "swift":
                            self.long_swift_ports.add(p)
                        long_flows.append(self.transfer(self.cc[cc], p, self.seconds,
                                                        self.cg[role]))
                        self.tally.add("long_flows")
                self.phases = phases = [
                    threading.Thread(target=self.guard, args=(f, *a), name=n, daemon=True)
                          for n, f, a in (("churn-swift", self.phase_churn, ("swift",)),
                                          ("churn-bbr3", self.phase_churn, ("bbr3",)),
                                          ("swap", self.phase_swap, ()),
                                          ("inplace", self.phase_inplace, ()),
                                          ("unload", self.phase_unload, ()),
                                          ("victims", self.phase_victims, ()),
                                          ("params", self.phase_params, ()),
                                          ("cgroups", self.phase_cgroups, ()),
                                          ("stat", self.phase_stat, ()))]
                for t in phases:
                    t.start()
                log(f"running {self.seconds} s: churn, {len(long_flows)} long flows, swaps, "
                    f"unload under load, forged ETS options, parameters, cgroups")
                t_end = time.monotonic() + self.seconds
                next_note = time.monotonic() + 60
                while time.monotonic() < t_end and not self.stop.is_set():
                    time.sleep(min(1.0, max(t_end - time.monotonic(), 0)))
                    if time.monotonic() >= next_note:
                        next_note += 60
                        with self.tally.lock:
                            n = dict(self.tally.n)
                        log(f"{int(time.monotonic() - t_begin)} s: {n.get('opened', 0)} "
                            f"connections, {n.get('failed', 0)} failed, "
                            f"{len(self.tally.problems)} problems")
                self.stop.set()
                log("stopping: waiting for the phases and the long flows to finish")
                for t in phases:
                    t.join(THREAD_JOIN_S)
                    if t.is_alive():
                        self.tally.problem(f"phase {t.name} did not finish")
                for t in long_flows:
                    self.transfer_done(t, "long")
                for role in list(self.servers):
                    self.stop_server(role)
                self.check_live_state()
            except (Stop, KeyboardInterrupt):
                self.stop.set()
                self.tally.problem("interrupted: the counts are of a partial run")
                log("interrupted: cleaning up")
            except BbrtestError as e:
                self.stop.set()
                self.tally.problem(f"setup or check failed: {e}")
            finally:
                self.cleaning = True
                self.stop.set()
                self.kill_all()
                for t in self.phases:
                    t.join(60)
                self.kill_all()
        self.check_leftovers()
        self.summary = self.summarize(time.monotonic() - t_begin)
        return self.summary

    def guard(self, fn, *args):
        """A phase: an unexpected exception is a problem, not a silent end."""
        try:
            fn(*args)
        except Exception as e:     # noqa: BLE001 - reported, and the soak goes on
            if not self.stop.is_set():
                self.tally.problem(f"phase {threading.current_thread().name}: "
                                   f"{type(e).__name__}: {e}")

    def check_live_state(self):
        """Before teardown, once every soak socket has closed: what the
        maps still hold for them."""
        deadline = time.monotonic() + SOCKETS_CLOSE_S
        while True:
            left = {ns: open_sockets(ns) for ns in (self.topo.snd_ns, self.topo.rcv_ns)}
            if not any(left.values()) or time.monotonic() > deadline:
                break
            time.sleep(1)
        if any(left.values()):
            self.tally.problem(f"sockets still open {SOCKETS_CLOSE_S} s after the end: {left}")
        # parameter sets: the cgroups' own back to the default, then one
        # write that drops the records of removed cgroups and closed sockets
        for role, cc in (("swift", "swift"), ("bbr3", "bbr3")):
            self.ctl("set", "--cgroup", self.cg[role].path, self.cc[cc], "--reset")
        param_left = 0
        for name in sorted(self.loaded):
            self.ctl("set", "--default", name, "--reset")
            entries = param_cgrp_entries(name)
            if entries:
                self.tally.problem(f"{name}: param_cgrp still holds {len(entries)} records "
                                   f"after every cgroup was reset or removed and every socket "
                                   f"closed: {entries}")
            param_left += len(entries)
        self.tally.add("leak_param_entries", param_left)
        maps = cc_storage_maps(set(self.cc.values()))
        if ETS_SK_STOR_PIN.exists():
            maps[bpftool_json("map", "show", "pinned", ETS_SK_STOR_PIN)["id"]] = "ETS"
        n = 0
        for mid, cc in maps.items():
            left = sk_stor_entries(mid, self.netns_paths())
            if left:
                self.tally.problem(f"{cc}'s socket storage (map {mid}) still holds entries of "
                                   f"the soak's sockets after they closed: {left}")
            n += len(left)
        self.tally.add("leak_sk_storage_entries", n)
        # builds: only those registered now may remain
        def extra():
            return struct_ops_of(set(self.cc.values()))
        deadline = time.monotonic() + SETTLE_S
        live = extra()
        while len(live) > len(self.loaded) and time.monotonic() < deadline:
            time.sleep(0.5)
            live = extra()
        if len(live) > len(self.loaded):
            self.tally.problem(f"struct_ops maps of the soak with no socket left: {live} "
                               f"(registered: {sorted(self.loaded)})")
        self.tally.add("leak_struct_ops_live", max(len(live) - len(self.loaded), 0))

    def netns_paths(self):
        return [str(netns.NETNS_RUN_DIR / ns) for ns in (self.topo.snd_ns, self.topo.rcv_ns)]

    def check_leftovers(self):
        """After teardown: nothing of the soak may remain."""
        t = self.tally
        deadline = time.monotonic() + SETTLE_S
        while True:
            ccs = sorted(set(bbrtest.available_ccs()) & set(self.cc.values()))
            maps = struct_ops_of(set(self.cc.values()))
            nss = [ns for ns in bbrtest.list_netns() if ns.startswith(self.tag + "-")]
            if not (ccs or maps or nss) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        pins = [p for p in (PIN_ROOT / n for n in self.cc.values()) if p.exists()]
        pins += [p for p in (PIN_CGROUP / str(i) for i in self.cgroup_ids) if p.exists()]
        if not self.start.get("shared") and PIN_SHARED.exists():
            others = [p.name for p in PIN_ROOT.iterdir() if p.name != PINS["PIN_SHARED_DIR"]] \
                if PIN_ROOT.exists() else []
            if not others:      # nobody else's CC or attachment keeps it
                pins.append(PIN_SHARED)
        cgroups = []
        try:
            root = bbrtest.cgroup2_root()
            cgroups = [str(p) for p in (root / self.tag,) if p.exists()]
        except BbrtestError:
            pass
        for what, items in (("CCs still registered", ccs), ("struct_ops maps", maps),
                            ("namespaces", nss), ("pins", pins), ("cgroups", cgroups)):
            if items:
                t.problem(f"left behind: {what}: {items}")
        t.add("leak_ccs", len(ccs))
        t.add("leak_struct_ops", len(maps))
        t.add("leak_netns", len(nss))
        t.add("leak_pins", len(pins))
        t.add("leak_cgroups", len(cgroups))
        # counters the ETS program keeps per network namespace, for
        # namespaces that are gone (reported; see README.md)
        try:
            t.add("ets_stats_of_removed_netns", len(ets_stats_keys() & self.netns_cookies))
        except BbrtestError:
            pass
        new = [line for line in dmesg_lines()
               if (m := DMESG_TS_RE.match(line)) and float(m.group(1)) > self.dmesg_ts]
        warn = [line for line in new if DMESG_RE.search(line)]
        for line in warn[:20]:
            log(f"dmesg: {line}")
        t.add("kernel_warnings", len(warn))
        self.cc_list_after = sorted(bbrtest.available_ccs())

    def summarize(self, elapsed):
        t = self.tally
        n = t.n
        leaks = {
            "sk_storage_entries": n["leak_sk_storage_entries"],
            "stale_sk_storage_entries": n["leak_stale_sk_storage"],
            "param_cgrp_entries": n["leak_param_entries"],
            "struct_ops_maps_without_sockets": n["leak_struct_ops_live"],
            "struct_ops_maps": n["leak_struct_ops"],
            "pins": n["leak_pins"],
            "netns": n["leak_netns"],
            "cgroups": n["leak_cgroups"],
            "ccs": n["leak_ccs"],
        }
        s = {
            "seconds": round(elapsed, 1),
            "tag": self.tag,
            "connections": {"opened": n["opened"], "completed": n["completed"],
                            "churn": n["churn_connections"], "probe": n["probe_connections"],
                            "long": n["long_flows"], "unload": n["unload_flows"],
                            "victims": n["victims"]},
            "bytes": {"sent": n["bytes_sent"], "received": n["bytes_received"],
                      "lost": n["bytes_sent"] - n["bytes_received"]},
            "resets": n["failed"],
            "reset_causes": dict(t.failures),
            "kernel_warnings": n["kernel_warnings"],
            "leaks": leaks,
            "activity": {k: n[k] for k in (
                "live_swaps", "sockets_switched", "swap_failed", "inplace_swaps", "unloads",
                "reloads", "forged_segments", "param_sets", "socket_param_sets",
                "socket_param_gone", "cgroups_created", "cgroups_deleted", "attaches",
                "detaches", "stat_samples", "stale_checks", "bbrctl_killed")},
            "checks": {"swift_without_ets": n["swift_no_ets"],
                       "unload_flows_not_on_copy": n["unload_not_on_copy"],
                       "victims_failed": n["victims_failed"]},
            "ets_stats_of_removed_netns": n["ets_stats_of_removed_netns"],
            "cc_list": {"before": sorted(self.start["ccs"]) if hasattr(self, "start") else [],
                        "after": getattr(self, "cc_list_after", [])},
            "problems": list(t.problems),
        }
        wrong = []
        if s["connections"]["completed"] != s["connections"]["opened"]:
            wrong.append("connections not completed")
        if s["bytes"]["lost"] != 0:
            wrong.append("lost bytes")
        if s["resets"]:
            wrong.append("resets")
        if s["kernel_warnings"]:
            wrong.append("kernel warnings")
        wrong += [f"leaked {k}" for k, v in leaks.items() if v]
        if n["swap_failed"]:
            wrong.append("swap failures")
        wrong += [k for k, v in s["checks"].items() if v]
        if t.problems:
            wrong.append("problems")
        s["ok"] = not wrong
        s["wrong"] = wrong
        return s


def text_summary(s):
    c, b, lk, a, ch = s["connections"], s["bytes"], s["leaks"], s["activity"], s["checks"]
    lines = [
        f"soak {s['tag']}: {s['seconds']} s",
        f"connections  opened {c['opened']}, completed {c['completed']} (churn {c['churn']}, "
        f"cgroup probes {c['probe']}, long {c['long']}, unload {c['unload']}, "
        f"ETS victims {c['victims']})",
        f"bytes        sent {b['sent']}, received {b['received']}, lost {b['lost']}",
        f"resets       {s['resets']}" + (f" {s['reset_causes']}" if s["reset_causes"] else ""),
        f"kernel       warnings {s['kernel_warnings']}",
        "leaks        " + ", ".join(f"{k} {v}" for k, v in lk.items()),
        f"checks       swift without ETS {ch['swift_without_ets']}, unload flows not on the "
        f"copy {ch['unload_flows_not_on_copy']}, ETS victims failed {ch['victims_failed']}, "
        f"swap failures {a['swap_failed']}",
        f"activity     live swaps {a['live_swaps']} ({a['sockets_switched']} sockets), in place "
        f"{a['inplace_swaps']}, unloads {a['unloads']}, reloads {a['reloads']}, forged "
        f"segments {a['forged_segments']}, parameter sets {a['param_sets']} (sockets "
        f"{a['socket_param_sets']}, gone {a['socket_param_gone']}), cgroups "
        f"{a['cgroups_created']}/{a['cgroups_deleted']} created/deleted, attaches "
        f"{a['attaches']}, detaches {a['detaches']}, stat samples {a['stat_samples']}, "
        f"socket storage checks {a['stale_checks']}, bbrctl killed by others' namespace "
        f"teardown {a['bbrctl_killed']}",
        f"ets_stats    entries of removed namespaces {s['ets_stats_of_removed_netns']}",
    ]
    if s["cc_list"]["before"] != s["cc_list"]["after"]:
        lines.append(f"CC list      before {s['cc_list']['before']}, after {s['cc_list']['after']}")
    for p in s["problems"]:
        lines.append(f"problem      {p}")
    lines.append("result       " + ("OK" if s["ok"] else "FAILED: " + ", ".join(s["wrong"])))
    return "\n".join(lines)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="selftests/soak/run",
                                description="bbr-bpf under churn, swaps, unloads and forged "
                                            "options for a while; counts at the end "
                                            "(selftests/soak/README.md)")
    p.add_argument("--seconds", type=float, default=DEFAULT_SECONDS,
                   help=f"how long the traffic runs (default {DEFAULT_SECONDS})")
    p.add_argument("--json", action="store_true",
                   help="the summary as one JSON object on stdout (the text goes to stderr)")
    p.add_argument("--rate-mbit", type=float, default=RATE_MBIT,
                   help=f"bottleneck rate between the namespaces (default {RATE_MBIT})")
    p.add_argument("--churn-rate", type=float, default=CHURN_PER_S,
                   help=f"new short connections per second and cgroup (default {CHURN_PER_S})")
    p.add_argument("--seed", type=int, default=None, help="random choices (default: any)")
    a = p.parse_args(argv)
    if a.seconds < 10:
        p.error("--seconds: at least 10")
    return a


def main(argv):
    args = parse_args(argv)
    soak = Soak(args)

    def on_signal(signum, frame):
        # once, and never during the cleanup, which must run to its end
        if soak.cleaning:
            return
        soak.cleaning = True
        raise Stop(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        soak.preflight()
    except BbrtestError as e:
        print(f"soak: {e}", file=sys.stderr)
        return 2
    s = soak.run()
    text = text_summary(s)
    if args.json:
        print(text, file=sys.stderr)
        print(json.dumps(s, indent=1))
    else:
        print(text)
    return 0 if s["ok"] else 1
