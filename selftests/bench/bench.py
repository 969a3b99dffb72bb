# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""make bench: what running BBR in BPF costs, measured against the kernel's CCs.

One run, one machine, eight sections (docs/performance.md explains each):

  cpu       CPU-bound iperf3 bulk transfers over an unshaped veth pair between
            two namespaces, offloads (TSO/GSO/GRO) on and off, each CC (bbr3,
            bbr_swift when its object exists, kernel bbr, kernel cubic) in
            interleaved repeats (ABCD ABCD ...): throughput, CPU seconds per
            GB (sender + receiver process CPU from iperf3's getrusage, which
            includes the softirq work done in their context; machine-wide
            sys+softirq from /proc/stat as a cross-check), ratio bbr3/bbr.
  bpf       kernel.bpf_stats_enabled=1 during interleaved transfers of bbr3,
            bbr3 with the ETS sockops program on its sockets (bbr3+ets) and
            bbr_swift (which runs ETS): per op (struct_ops program, and the
            sock_ops programs that ran) mean ns per call (run_time_ns /
            run_cnt deltas), calls per GB and ms per GB. The previous value of
            the sysctl is restored, also on failure.
  memory    1, 1000, 10000 held-open connections with bbr3 and with cubic:
            sk_storage value size (BTF), slab growth per connection, the
            marginal bytes bbr3 adds over cubic, sockets with state, and the
            same after closing (back to the baseline).
  profile   perf cpu-clock samples (when perf works), interleaved repeats:
            share of the iperf3 processes' CPU in the CC (bbr3, bbr3+ets,
            bbr_swift, kernel bbr, cubic), and its ratio to kernel bbr's
  core      the BBRv3 core's per-ACK step alone (selftests/progs/core_bench.bpf.c):
            BPF_PROG_TEST_RUN of a steady-state bulk ACK, 10^6 per repeat,
            ns per ACK net of the test-run loop: the core's instructions and
            BPF-to-BPF calls without socket, trampoline or cold caches
  parts     where one bbr3_main call's time goes: bbr3 built with clock reads
            between its parts (storage lookup, input copy, core, parameter
            pick at round starts, write-back; lib/parts_timing.h), and a
            build that runs the core first on a copy of its state (cold
            code, warm data) then on the socket's own (both warm); ns per
            call of each part, interleaved transfers, offloads off
  verifier  instructions processed and program size (selftests/tools/verifier_stats)
  emulator  the lab's linkem benchmark (labkit.linkem_bench)

Every figure with repeats is reported as min/median/max, ratios per repeat
(the runs of one repeat are adjacent in time). The machine's load (CPU busy
and stolen by the hypervisor while the bench idles, load average) is printed
before and after; --quiet-check refuses to run on a busy machine and to
report when it was not quiet throughout. The whole run holds flock
/tmp/bbrbpf-kernel.lock (registering CCs and bpf_stats_enabled are shared
kernel state). --quick: one short repeat, for development.

Run it as selftests/bench/run (or `make bench`): the toolkit (bbrtest) and
the lab (labkit) are on the path then.
"""

import argparse
import contextlib
import fcntl
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import bbrtest
from bbrtest.netns import in_netns, popen_in, set_offloads as _set_offloads

ROOT = bbrtest.REPO
KERNEL_LOCK = Path("/tmp/bbrbpf-kernel.lock")
BPF_STATS_SYSCTL = Path("/proc/sys/kernel/bpf_stats_enabled")
OPENER = Path(__file__).resolve().with_name("opener.py")
VERIFIER_STATS = ROOT / "selftests/tools/verifier_stats"
ETS_OBJ = ROOT / "bpf/ets.bpf.o"
CORE_BENCH_OBJ = ROOT / "selftests/progs/core_bench.bpf.o"
CORE_BENCH_ACKS = 1000000       # test-run iterations per repeat
CORE_BENCH_WARMUP = 100000      # iterations before measuring: past STARTUP
ETS_ATTACH = ROOT / "selftests/integration/ets_attach"
DEFAULT_JSON = ROOT / "build/bench/bench.json"

# name -> object; a BPF CC is benchmarked when its object exists.
BPF_CCS = {"bbr3": ROOT / "bpf/bbr3.bpf.o", "bbr_swift": ROOT / "bpf/bbr_swift.bpf.o"}
SWIFT_CCS = ("bbr_swift",)      # need ETS: measured with it only
# The bench registers each BPF CC under a name of its own (bbrtest
# own_cc_name), so it runs beside an installed bbr-bpf; reports keep the
# labels bbr3 / bbr_swift. REGISTERED: label -> {"name", "progs"}.
REGISTERED = {}
OWN_NAME_TAGS = {"bbr3": "bch3", "bbr_swift": "bchs", "parts": "bchp", "parts_twice": "bcht"}
# The parts section's timing builds of bbr3 (mk/bench.mk, lib/parts_timing.h),
# their per-CPU map, and the fields of its struct bbr_parts that hold times.
PARTS_OBJS = {"parts": ROOT / "build/bench/bbr3_parts.bpf.o",
              "parts_twice": ROOT / "build/bench/bbr3_parts_twice.bpf.o"}
PARTS_MAP = "bbr_parts"
PARTS_TIMED = ("get_ns", "in_ns", "first_ns", "copy_ns", "core_ns", "pick_ns", "out_ns", "clk_ns")
CONG_CONTROL_SUFFIX = "_main"   # <cc>_main is the cong_control program
FLOOR_OP_SUFFIX = "_min_tso_segs"
KERNEL_CCS = ["bbr", "cubic"]
VERIFIED_OBJS = ["bpf/bbr3.bpf.o", "bpf/bbr_swift.bpf.o", "bpf/dctcp_bpf.bpf.o",
                 "bpf/ets.bpf.o", "bpf/cc_select.bpf.o", "bpf/cc_swap.bpf.o"]

NS_PREFIX = "bch"               # the bench's namespace prefix
IPERF_PORT = 5301
OPENER_PORT = 5401
FULL = {"repeats": 5, "seconds": 5, "conns": [1, 1000, 10000], "bpf_seconds": 5}
QUICK = {"repeats": 1, "seconds": 2, "conns": [1, 1000], "bpf_seconds": 2}
IPERF_CONNECT_RETRIES = 20      # while the one-off server starts
IPERF_RETRY_S = 0.1
OPENER_TIMEOUT_S = 120.0
SETTLE_S = 1.0                  # after closing: let sockets be destroyed (RCU)
SOMAXCONN = 65535               # accept backlog for 10000 connections
USER_HZ = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
# The project's goals (docs/performance.md), printed beside the figures,
# never asserted: a benchmark reports, the reader judges.
GOAL_RATIO = 0.98               # bulk throughput bbr3/bbr, offloads off, median
GOAL_CONG_CONTROL_NS = 120      # bbr3_main per call
GOAL_CONG_CONTROL_MS_PER_GB = 2.0
GOAL_ALL_OPS_MS_PER_GB = 3.0    # every struct_ops program of bbr3 together
GOAL_PROFILE_RATIO = 1.5        # CC's CPU share / kernel bbr's
GOAL_PROFILE_RATIO_ETS = 2.0    # the same with the ETS sockops program
# ETS (issue "BBR.Swift at full link"): the sock_ops program's ms per GB at
# most twice bbr3's own struct_ops programs' in the same repeat, offloads
# on and off; bbr_swift with ETS at most 3 x kernel bbr's CPU share.
GOAL_ETS_MS_PER_GB_RATIO = 2.0
GOAL_PROFILE_RATIO_SWIFT_ETS = 3.0
ETS_PROG = "ets_sockops"
GOAL_BYTES_PER_SOCKET = 256
# --quiet-check: what "quiet" means while the bench itself idles. A 2-vCPU
# VM shows ~1 % busy and < 0.5 % steal at rest.
# The load average is printed, not judged: it lags a minute behind.
QUIET_SAMPLE_S = 5.0
QUIET_MAX_BUSY = 0.10           # share of all CPUs busy (user..softirq)
QUIET_MAX_STEAL = 0.02          # share stolen by the hypervisor
# A variant of a BPF CC: the CC and whether ETS runs on its sockets.
ETS_SUFFIX = "+ets"
# bbr3 with other builds of the ETS program (--ets-baseline OBJ, one
# variant "bbr3+ets@NAME" each, NAME the file's): the same transfer,
# interleaved, so that builds compare within one run.
ETS_BASE_PREFIX = "bbr3+ets@"
ETS_BASE_OBJS = {}


class BenchError(bbrtest.BbrtestError):
    pass


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def summary(values):
    """min/median/max of a list of numbers (None when empty)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return None
    return {"min": min(vals), "median": statistics.median(vals), "max": max(vals),
            "n": len(vals), "values": vals}


def run(argv, timeout=60, check=True):
    return bbrtest.run(argv, timeout=timeout, check=check)


# ---- machine ---------------------------------------------------------------------

def machine_info():
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_kb = _meminfo().get("MemTotal")
    return {"hostname": platform.node(), "kernel": platform.release(),
            "kernel_version": platform.version(), "arch": platform.machine(),
            "cpu_model": cpu, "cpus": os.cpu_count(), "mem_total_kb": mem_kb,
            "loadavg_start": os.getloadavg(),
            "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def _meminfo():
    out = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        key, val = line.split(":", 1)
        out[key] = int(val.split()[0])
    return out


def cpu_ticks():
    """/proc/stat's first line: ticks per state since boot."""
    f = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    return dict(zip(("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"), f))


def load_between(a, b):
    """Shares of CPU time between two cpu_ticks(): busy (user..softirq) and
    stolen by the hypervisor."""
    d = {k: b[k] - a[k] for k in a}
    total = sum(d.values()) or 1
    busy = d["user"] + d["nice"] + d["system"] + d["irq"] + d["softirq"]
    return {"busy": busy / total, "steal": d["steal"] / total}


def machine_load(seconds=QUIET_SAMPLE_S):
    """The machine's load while this process sleeps for seconds."""
    a = cpu_ticks()
    time.sleep(seconds)
    out = load_between(a, cpu_ticks())
    out["loadavg_1m"] = os.getloadavg()[0]
    out["quiet"], out["why"] = is_quiet(out)
    return out


def is_quiet(load):
    why = []
    if load["busy"] > QUIET_MAX_BUSY:
        why.append(f"CPU busy {load['busy']:.1%} > {QUIET_MAX_BUSY:.0%}")
    if load["steal"] > QUIET_MAX_STEAL:
        why.append(f"steal {load['steal']:.1%} > {QUIET_MAX_STEAL:.0%}")
    return not why, "; ".join(why)


def fmt_load(load):
    return (f"busy {load['busy']:.1%}, steal {load['steal']:.2%}"
            + (f", load average {load['loadavg_1m']:.2f}" if "loadavg_1m" in load else ""))


def proc_stat_cpu():
    """Machine-wide (user, system, softirq) seconds from /proc/stat."""
    t = cpu_ticks()
    return (t["user"] + t["nice"]) / USER_HZ, t["system"] / USER_HZ, t["softirq"] / USER_HZ


# ---- cpu: bulk transfers ------------------------------------------------------

def set_offloads(topo, on):
    for ns, dev in ((topo.snd_ns, topo.SND_DEV), (topo.rcv_ns, topo.RCV_DEV)):
        _set_offloads(ns, dev, on, ("tso", "gso", "gro"))


def kname(cc):
    """The name the kernel knows the CC labelled cc by."""
    return REGISTERED[cc]["name"] if cc in REGISTERED else cc


def split_variant(variant):
    """"bbr3+ets" -> ("bbr3", True): the CC and whether ETS runs."""
    cc, plus, _ = variant.partition(ETS_SUFFIX)
    return cc, bool(plus)


def iperf_run(topo, cc, seconds, cgroup=None):
    """One iperf3 transfer snd -> rcv with CC cc, both ends' processes in
    cgroup (a path) when given; returns the figures."""
    server = popen_in(topo.rcv_ns, ["iperf3", "-s", "-1", "-B", topo.rcv_addr,
                                    "-p", IPERF_PORT], cgroup=cgroup, stdout=subprocess.DEVNULL)
    try:
        for _ in range(IPERF_CONNECT_RETRIES):
            before = proc_stat_cpu()
            cp = run(in_netns(topo.snd_ns, ["iperf3", "-c", topo.rcv_addr, "-p", str(IPERF_PORT),
                                            "-t", str(seconds), "-C", kname(cc), "-J"],
                                   cgroup),
                     timeout=seconds + 30, check=False)
            after = proc_stat_cpu()
            res = json.loads(cp.stdout or "{}")
            err = res.get("error", "")
            if "unable to connect" in err or "Connection refused" in err:
                time.sleep(IPERF_RETRY_S)
                continue
            break
        if cp.returncode != 0 or "end" not in res:
            raise BenchError(f"iperf3 with {cc}: {res.get('error') or cp.stderr.strip()}")
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=5)
        if server.poll() is None:
            server.kill()
            server.wait()
    end = res["end"]
    used = end.get("sender_tcp_congestion") or res["start"].get("tcp_congestion") or ""
    if used and used != kname(cc):
        raise BenchError(f"iperf3 ran {used!r}, not {cc!r}")
    recv = end["sum_received"]
    dur = recv["seconds"]
    nbytes = recv["bytes"]
    cpu = end["cpu_utilization_percent"]
    # iperf3: (utime + stime) / wall time of each side's process, in percent.
    snd_s = cpu["host_total"] / 100 * dur
    rcv_s = cpu["remote_total"] / 100 * dur
    sys_s = (cpu["host_system"] + cpu["remote_system"]) / 100 * dur
    gb = nbytes / 1e9
    mach_sys = (after[1] - before[1]) + (after[2] - before[2])
    return {"cc": cc, "mbps": nbytes * 8 / dur / 1e6, "bytes": nbytes, "seconds": dur,
            "retrans": end["sum_sent"].get("retransmits"),
            "cpu_s_per_gb": (snd_s + rcv_s) / gb,
            "sys_s_per_gb": sys_s / gb,
            "snd_cpu_s_per_gb": snd_s / gb, "rcv_cpu_s_per_gb": rcv_s / gb,
            "machine_sys_softirq_s_per_gb": mach_sys / gb}


def bench_cpu(ccs, repeats, seconds):
    out = {}
    for offload in (True, False):
        key = "offloads_on" if offload else "offloads_off"
        runs = {cc: [] for cc in ccs}
        with bbrtest.Topology(prefix=NS_PREFIX) as topo:
            set_offloads(topo, offload)
            for rep in range(repeats):
                for cc in ccs:
                    r = iperf_run(topo, cc, seconds)
                    log(f"cpu {key} rep {rep + 1}/{repeats} {cc}: {r['mbps']:.0f} Mbit/s, "
                        f"{r['cpu_s_per_gb']:.3f} CPU s/GB")
                    runs[cc].append(r)
        sec = {"per_cc": {}}
        for cc, rs in runs.items():
            sec["per_cc"][cc] = {m: summary([r[m] for r in rs]) for m in
                                 ("mbps", "cpu_s_per_gb", "sys_s_per_gb", "snd_cpu_s_per_gb",
                                  "rcv_cpu_s_per_gb", "machine_sys_softirq_s_per_gb",
                                  "retrans")}
        # Ratios per repeat (runs of one repeat are adjacent in time), then spread.
        for num in [c for c in ccs if c in BPF_CCS]:
            if "bbr" in runs:
                sec[f"{num}/bbr"] = {
                    "mbps": summary([a["mbps"] / b["mbps"] for a, b in zip(runs[num], runs["bbr"])]),
                    "cpu_s_per_gb": summary([a["cpu_s_per_gb"] / b["cpu_s_per_gb"]
                                             for a, b in zip(runs[num], runs["bbr"])])}
        out[key] = sec
    return out


# ---- bpf: program run time ---------------------------------------------------------

def bpf_progs():
    cp = run(["bpftool", "prog", "show", "--json"])
    return {p["id"]: p for p in json.loads(cp.stdout)}


def all_struct_ops_prog_ids():
    """Ids of every struct_ops program loaded (not bbrtest.struct_ops_ids(): maps)."""
    return {pid for pid, p in bpf_progs().items() if p.get("type") == "struct_ops"}


def struct_ops_prog_ids(cc):
    """Program ids of the CC labelled cc that this bench registered: the
    struct_ops programs that appeared with its registration (the bench holds
    the kernel lock meanwhile). An installed bbr-bpf's programs carry the
    same names, so names alone cannot tell them apart."""
    return set(REGISTERED[cc]["progs"]) if cc in REGISTERED else set()


@contextlib.contextmanager
def register_own(cc, obj):
    """Register obj's CC under a name of this run; REGISTERED[cc] while it lasts."""
    before = all_struct_ops_prog_ids()
    with bbrtest.register_cc(obj, as_name=bbrtest.own_cc_name(OWN_NAME_TAGS[cc])) as reg:
        REGISTERED[cc] = {"name": reg.cc_name, "progs": sorted(all_struct_ops_prog_ids() - before)}
        try:
            yield reg.cc_name
        finally:
            REGISTERED.pop(cc, None)


@contextlib.contextmanager
def bpf_stats_enabled():
    prev = BPF_STATS_SYSCTL.read_text().strip()
    BPF_STATS_SYSCTL.write_text("1")
    try:
        yield prev
    finally:
        BPF_STATS_SYSCTL.write_text(prev)
        log(f"kernel.bpf_stats_enabled restored to {prev}")


@contextlib.contextmanager
def variant_cgroup(variant):
    """Where the iperf3 processes of a variant run: None for a plain CC; for
    CC+ets a cgroup of this process whose sockets run ETS's sock_ops
    program: `bbrctl attach` for bbr_swift (ETS and the CC then share the
    ETS map, as in production), the ets_attach helper (pins of its own)
    for any other CC."""
    cc, ets = split_variant(variant)
    if not ets:
        yield None
        return
    with bbrtest.Cgroup(f"{NS_PREFIX}{os.getpid()}-ets", kill=True) as cg:
        if cc in SWIFT_CCS:
            bbrtest.bbrctl("attach", "--cgroup", cg.path, "--cc", kname(cc), check=0)
            try:
                yield cg.path
            finally:
                bbrtest.bbrctl("detach", "--cgroup", cg.path)
            return
        pins = ets_pins()
        obj = ETS_BASE_OBJS.get(variant, ETS_OBJ)
        try:
            run([str(ETS_ATTACH), str(obj), str(cg.path), str(pins)])
            yield cg.path
        finally:
            bbrtest.remove_pin_dir(pins)


def ets_pins():
    """Where ets_attach pins the maps of a bbr3+ets variant's ETS program."""
    return bbrtest.BPFFS_ROOT / f"bbrbpf-bench-{os.getpid()}-ets"


def ets_counters():
    """ets_stats of the bench's own ETS program (ets_attach's pins), summed
    over network namespaces and CPUs; {} when there is none."""
    cp = run(["bpftool", "-j", "map", "dump", "pinned", str(ets_pins() / "ets_stats")],
             check=False)
    tot = {}
    try:
        ents = json.loads(cp.stdout or "[]")
    except ValueError:
        return tot
    for ent in ents:
        for cpu in ent.get("formatted", {}).get("values", []):
            for k, v in cpu["value"].items():
                if not isinstance(v, list):
                    tot[k] = tot.get(k, 0) + v
    return tot


def ets_calls(counters, run_cnt, gbytes):
    """ETS's calls per GB by callback: writes (an option written, or the
    store refused), parses (parse_calls: builds that count them), length
    callbacks of a segment (one per write, or the reservation refused), and
    the rest of run_cnt: the kernel's MSS queries (tcp_current_mss()), the
    handshakes' and the state callbacks. Also the parses that found no
    option, what PARSE_UNKNOWN_HDR_OPT_CB_FLAG would save."""
    if not counters or not run_cnt:
        return None
    writes = counters.get("sent", 0) + counters.get("store_err", 0)
    len_seg = counters.get("sent", 0) + counters.get("reserve_nospace", 0)
    parses = counters.get("parse_calls")
    out = {"write": writes / gbytes, "len_segment": len_seg / gbytes,
           "parse": parses / gbytes if parses is not None else None,
           "samples": counters.get("samples", 0) / gbytes}
    if parses is not None:
        out["len_mss_and_rest"] = (run_cnt - writes - len_seg - parses) / gbytes
        out["parse_without_option"] = (parses - counters.get("parsed", 0)) / gbytes
    return out


def ets_available():
    return (ETS_OBJ.is_file() and os.access(ETS_ATTACH, os.X_OK)
            and bbrtest.bbrctl_can_load())


def cgroup_prog_ids(cg):
    """Ids of the programs attached to cgroup cg (None: no cgroup)."""
    if cg is None:
        return set()
    cp = run(["bpftool", "-j", "cgroup", "show", str(cg)], check=False)
    try:
        return {x["id"] for x in json.loads(cp.stdout or "[]")}
    except (ValueError, KeyError):
        return set()


def op_figures(before, after, mine, gbytes):
    """Per program that ran: calls, ns/call, calls/GB, ms/GB (bpf_stats
    deltas). mine: the program ids of this transfer, the CC's struct_ops
    programs and the sock_ops programs attached to its cgroup (ETS,
    cc_select): another user's sock_ops program of the same name, busy
    at the same time on a shared machine, must not count."""
    progs = {}
    for pid, p in after.items():
        b = before.get(pid, {})
        dcnt = p.get("run_cnt", 0) - b.get("run_cnt", 0)
        dns = p.get("run_time_ns", 0) - b.get("run_time_ns", 0)
        if dcnt <= 0 or pid not in mine:
            continue
        progs[p.get("name", str(pid))] = {
            "type": p.get("type"), "run_cnt": dcnt, "ns_per_call": dns / dcnt,
            "calls_per_gb": dcnt / gbytes, "ms_per_gb": dns / 1e6 / gbytes}
    return progs


def bench_bpf(ccs, repeats, seconds):
    variants = [cc for cc in ccs if cc in BPF_CCS]
    if ets_available():
        variants = ["bbr3", "bbr3" + ETS_SUFFIX] + [c + ETS_SUFFIX for c in variants
                                                    if c in SWIFT_CCS]
        variants[2:2] = list(ETS_BASE_OBJS)
    out = {"note": ("bpf_stats deltas over each transfer: ns/call is the program's own "
                    "run time (the trampoline and the stats' clock reads are outside it); "
                    "ms/GB = calls x ns per GB received"),
           "variants": variants}
    with bpf_stats_enabled() as prev:
        out["bpf_stats_enabled_before"] = prev
        for offload in (True, False):
            key = "offloads_on" if offload else "offloads_off"
            runs = {v: [] for v in variants}
            with bbrtest.Topology(prefix=NS_PREFIX) as topo:
                set_offloads(topo, offload)
                for rep in range(repeats):
                    for v in variants:
                        cc, _ = split_variant(v)
                        with variant_cgroup(v) as cg:
                            mine = set(struct_ops_prog_ids(cc)) | cgroup_prog_ids(cg)
                            before = bpf_progs()
                            r = iperf_run(topo, cc, seconds, cgroup=cg)
                            after = bpf_progs()
                            counters = {}
                            if v.startswith("bbr3" + ETS_SUFFIX):
                                time.sleep(SETTLE_S)    # tallies reach ets_stats at close
                                counters = ets_counters()
                        progs = op_figures(before, after, mine, r["bytes"] / 1e9)
                        calls = ets_calls(counters, progs.get(ETS_PROG, {}).get("run_cnt"),
                                          r["bytes"] / 1e9)
                        runs[v].append({"mbps": r["mbps"], "bytes": r["bytes"], "programs": progs,
                                        "ets_calls_per_gb": calls})
                        log(f"bpf {key} rep {rep + 1}/{repeats} {v}: " + ", ".join(
                            f"{n} {x['ns_per_call']:.0f} ns x{x['calls_per_gb']:.0f}/GB"
                            for n, x in progs.items()))
            out[key] = {v: summarise_ops(rs) for v, rs in runs.items()}
            if "bbr3" in runs and "bbr3" + ETS_SUFFIX in runs:
                out[key]["ets_vs_bbr3"] = ets_vs_bbr3(runs["bbr3"], runs["bbr3" + ETS_SUFFIX])
            for v, obj in ETS_BASE_OBJS.items():
                if "bbr3" in runs and v in runs:
                    ek = "ets_vs_bbr3@" + v[len(ETS_BASE_PREFIX):]
                    out[key][ek] = dict(ets_vs_bbr3(runs["bbr3"], runs[v]), variant=v,
                                        object=str(obj))
    return out


def ets_vs_bbr3(plain, with_ets):
    """Per repeat: ETS's ms/GB in bbr3+ets over bbr3's own struct_ops
    ms/GB in the plain bbr3 transfer of the same repeat (seconds apart)."""
    def so(r):
        return sum(x["ms_per_gb"] for x in r["programs"].values() if x["type"] == "struct_ops")
    ratios = [r2["programs"][ETS_PROG]["ms_per_gb"] / so(r1)
              for r1, r2 in zip(plain, with_ets) if ETS_PROG in r2["programs"] and so(r1) > 0]
    return {"ratio": summary(ratios),
            "ets_ms_per_gb": summary([r["programs"].get(ETS_PROG, {}).get("ms_per_gb")
                                      for r in with_ets]),
            "bbr3_ms_per_gb": summary([so(r) for r in plain])}


def summarise_ops(rs):
    """min/median/max over repeats of every program's figures and of the
    totals: all struct_ops programs, and those plus the sock_ops ones."""
    names = sorted({n for r in rs for n in r["programs"]})
    progs = {n: {m: summary([r["programs"].get(n, {}).get(m) for r in rs])
                 for m in ("ns_per_call", "calls_per_gb", "ms_per_gb")}
             for n in names}
    for n in names:
        progs[n]["type"] = next(r["programs"][n]["type"] for r in rs if n in r["programs"])
    so = [sum(x["ms_per_gb"] for x in r["programs"].values() if x["type"] == "struct_ops")
          for r in rs]
    allp = [sum(x["ms_per_gb"] for x in r["programs"].values()) for r in rs]
    floor = [stats_floor_ns(r["programs"]) for r in rs]
    calls = [r.get("ets_calls_per_gb") for r in rs if r.get("ets_calls_per_gb")]
    ets_calls_sum = {k: summary([c.get(k) for c in calls])
                     for k in (calls[0] if calls else {})}
    return {"mbps": summary([r["mbps"] for r in rs]), "programs": progs,
            "ets_calls_per_gb": ets_calls_sum,
            "struct_ops_ms_per_gb": summary(so), "all_programs_ms_per_gb": summary(allp),
            "floor_ns": summary(floor),
            "cong_control_net_ns": summary([
                r["programs"][n]["ns_per_call"] - f for r, f in zip(rs, floor) if f is not None
                for n in r["programs"] if n.endswith(CONG_CONTROL_SUFFIX)])}


def stats_floor_ns(progs):
    """What bpf_stats count for a program that does nearly nothing: the
    min_tso_segs op (one load, one compare) of the same CC in the same
    transfer. It is the clock reads and the call itself; subtracting it
    gives a body's own cost (docs/performance.md)."""
    vals = [x["ns_per_call"] for n, x in progs.items() if n.endswith(FLOOR_OP_SUFFIX)]
    return min(vals) if vals else None


# ---- memory: held-open connections -------------------------------------------------

def registered_map(cc, name, map_type=None):
    """bpftool map info of the map called name (of map_type, if given)
    that the programs of cc's registration use, or None."""
    progs = bpf_progs()
    used = {mid for pid in struct_ops_prog_ids(cc) for mid in progs.get(pid, {}).get("map_ids", [])}
    for m in json.loads(run(["bpftool", "map", "show", "--json"]).stdout):
        if (m.get("name", "") == name[:15] and m.get("id") in used
                and map_type in (None, m.get("type"))):
            return m
    return None


def sk_storage_map(cc):
    """bpftool map info of the CC's sk_storage map (value size, memlock):
    the one its registered programs use."""
    want = {"bbr3": "bbr3_sk_stor", "bbr_swift": "bbr_swift_sk_stor"}.get(cc, cc + "_sk_stor")
    return registered_map(cc, want, "sk_storage")


def storage_sockets(cc):
    """Sockets that have state in cc's map, from the state iterator (bbrctl stat)."""
    if not bbrtest.ctl.available():
        return None
    cp = bbrtest.bbrctl("--json", "stat", kname(cc), timeout=60)
    if cp.returncode != 0:
        return None
    with contextlib.suppress(ValueError):
        data = json.loads(cp.stdout or "[]")
        if isinstance(data, dict):
            data = data.get("sockets", data.get(kname(cc), []))
        return len(data)
    return None


def slab_kb():
    mi = _meminfo()
    return mi["Slab"]


def _opener(ns, mode, addr, count, cc):
    return popen_in(ns, [sys.executable, OPENER, mode, "--addr", addr, "--port", OPENER_PORT,
                         "--count", count, "--cc", kname(cc)], stdin=subprocess.PIPE)


def _expect(proc, key, what):
    line = proc.stdout.readline()
    try:
        msg = json.loads(line)
    except ValueError:
        raise BenchError(f"opener {what}: {line.strip() or proc.stderr.read().strip()}") from None
    if key not in msg:
        raise BenchError(f"opener {what}: {msg.get('error', msg)}")
    return msg


def hold_connections(topo, count, cc):
    """Open count connections with cc; measure with them open and after closing."""
    base_slab = slab_kb()
    base_socks = storage_sockets(cc) if cc in BPF_CCS else None
    server = _opener(topo.rcv_ns, "server", topo.rcv_addr, count, cc)
    client = None
    try:
        _expect(server, "listening", "server")
        t0 = time.monotonic()
        client = _opener(topo.snd_ns, "client", topo.rcv_addr, count, cc)
        _expect(client, "open", "client")
        _expect(server, "open", "server")
        open_s = time.monotonic() - t0
        open_slab = slab_kb()
        m = sk_storage_map(cc) if cc in BPF_CCS else None
        open_socks = storage_sockets(cc) if cc in BPF_CCS else None
        for p in (client, server):
            p.stdin.write("\n")
            p.stdin.flush()
        _expect(client, "closed", "client")
        _expect(server, "closed", "server")
        for p in (client, server):
            p.wait(timeout=OPENER_TIMEOUT_S)
        time.sleep(SETTLE_S)
        closed_slab = slab_kb()
        closed_socks = storage_sockets(cc) if cc in BPF_CCS else None
    finally:
        for p in (client, server):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    return {"cc": cc, "connections": count, "open_seconds": open_s,
            "slab_bytes_per_conn": ((open_slab - base_slab) * 1024 / count
                                    if count >= SLAB_MIN_CONNS else None),
            "slab_kb_after_close_minus_base": closed_slab - base_slab,
            "map_memlock_bytes_open": m.get("bytes_memlock") if m else None,
            "sockets_with_state": {"before": base_socks, "open": open_socks,
                                   "closed": closed_socks}}


# Kernel allocation size classes (kmalloc and bpf_mem_alloc share them).
SLAB_CLASSES_BYTES = [8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192]
# Below this many connections, slab deltas drown in the noise of a busy machine.
SLAB_MIN_CONNS = 1000


def _slab_class(nbytes):
    return next((c for c in SLAB_CLASSES_BYTES if c >= nbytes), nbytes)


def storage_alloc_bytes(value_bytes):
    """What the kernel allocates per socket for one sk_storage value, from BTF:
    a bpf_local_storage_elem (header + the value at sdata.data) and, for a
    socket's first storage map, the bpf_local_storage that lists them."""
    types = json.loads(run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux",
                            "-j"], timeout=120).stdout)["types"]
    structs = {t["name"]: t for t in types if t.get("kind") == "STRUCT"
               and t.get("name") in ("bpf_local_storage_elem", "bpf_local_storage",
                                     "bpf_local_storage_data")}
    sdata = next(m for m in structs["bpf_local_storage_elem"]["members"]
                 if m["name"] == "sdata")["bits_offset"] // 8
    data = next(m for m in structs["bpf_local_storage_data"]["members"]
                if m["name"] == "data")["bits_offset"] // 8
    elem = sdata + data + value_bytes
    ls = structs["bpf_local_storage"]["size"]
    return {"elem_bytes": elem, "elem_alloc_bytes": _slab_class(elem),
            "local_storage_bytes": ls, "local_storage_alloc_bytes": _slab_class(ls),
            "total_alloc_bytes": _slab_class(elem) + _slab_class(ls),
            "max_value_bytes_for_elem_class_256": 256 - sdata - data}


def bench_memory(conns):
    out = {"note": ("slab growth counts both ends (2 sockets per connection); "
                    "bbr3 - cubic is the marginal cost of the CC's state")}
    m = sk_storage_map("bbr3")
    out["bbr3_sk_storage_value_bytes"] = m.get("bytes_value") if m else None
    out["bbr3_sk_storage_map_memlock_bytes"] = m.get("bytes_memlock") if m else None
    if m:
        out["bbr3_alloc_per_socket"] = storage_alloc_bytes(m["bytes_value"])
    rows = []
    with bbrtest.Topology(prefix=NS_PREFIX) as topo:
        bbrtest.netns_exec(topo.rcv_ns, ["sysctl", "-q", "-w", f"net.core.somaxconn={SOMAXCONN}",
                                        f"net.ipv4.tcp_max_syn_backlog={SOMAXCONN}"])
        bbrtest.netns_exec(topo.snd_ns, ["sysctl", "-q", "-w",
                                        "net.ipv4.ip_local_port_range=10000 65000"])
        for n in conns:
            for cc in ("bbr3", "cubic"):
                r = hold_connections(topo, n, cc)
                log(f"memory {cc} x{n}: {r['slab_bytes_per_conn']} B slab/conn, "
                    f"state sockets {r['sockets_with_state']}")
                rows.append(r)
    out["runs"] = rows
    for n in conns:
        a = next(r for r in rows if r["cc"] == "bbr3" and r["connections"] == n)
        b = next(r for r in rows if r["cc"] == "cubic" and r["connections"] == n)
        if a["slab_bytes_per_conn"] is not None and b["slab_bytes_per_conn"] is not None:
            out[f"bbr3_minus_cubic_bytes_per_conn_{n}"] = (a["slab_bytes_per_conn"]
                                                           - b["slab_bytes_per_conn"])
    return out


# ---- verifier, hot path, emulator -------------------------------------------------

def parts_sums(map_id):
    """struct bbr_parts summed over the CPUs."""
    doc = json.loads(run(["bpftool", "map", "lookup", "id", str(map_id),
                          "key", "0", "0", "0", "0", "-j"]).stdout)
    tot = {}
    for cpu in doc.get("formatted", doc)["values"]:
        for k, v in cpu["value"].items():
            if isinstance(v, int):
                tot[k] = tot.get(k, 0) + v
    return tot


def bench_parts(repeats, seconds):
    """Where one cong_control call's time goes: bbr3's timing builds
    (lib/parts_timing.h) in interleaved transfers, offloads off; ns per
    call of each part, each carrying one clock read (clk_ns)."""
    missing = [str(o) for o in PARTS_OBJS.values() if not o.is_file()]
    if missing:
        return {"status": "not available", "reason": f"{', '.join(missing)} not built "
                "(make bench builds them)"}
    runs = {label: [] for label in PARTS_OBJS}
    with contextlib.ExitStack() as st:
        maps = {}
        for label, obj in PARTS_OBJS.items():
            st.enter_context(register_own(label, obj))
            m = registered_map(label, PARTS_MAP)
            if m is None:
                raise BenchError(f"{label}: no {PARTS_MAP} map among its programs' maps")
            maps[label] = m["id"]
        topo = st.enter_context(bbrtest.Topology(prefix=NS_PREFIX))
        set_offloads(topo, False)
        for rep in range(repeats):
            for label in PARTS_OBJS:
                before = parts_sums(maps[label])
                r = iperf_run(topo, label, seconds)
                after = parts_sums(maps[label])
                d = {k: after[k] - before.get(k, 0) for k in after}
                calls = max(d["calls"], 1)
                row = {k: d[k] / calls for k in PARTS_TIMED}
                row["round_starts_per_call"] = d["round_starts"] / calls
                row["calls"] = d["calls"]
                row["mbps"] = r["mbps"]
                runs[label].append(row)
                log(f"parts {label} rep {rep + 1}/{repeats}: " + ", ".join(
                    f"{k[:-3]} {row[k]:.0f}" for k in PARTS_TIMED if row[k]) +
                    f" ns per call; round starts per call {row['round_starts_per_call']:.2f}")
    out = {"status": "ok", "offloads": "off"}
    for label, rows in runs.items():
        out[label] = {k: summary([r[k] for r in rows]) for k in rows[0]}
    return out


def bench_verifier():
    if not os.access(VERIFIER_STATS, os.X_OK):
        return {"error": f"{VERIFIER_STATS} not built (run `make`)"}
    out = []
    for obj in VERIFIED_OBJS:
        if not (ROOT / obj).is_file():
            continue
        cp = run([str(VERIFIER_STATS), obj], check=False, timeout=120)
        if cp.returncode != 0:
            out.append({"object": obj, "error": cp.stderr.strip()})
            continue
        out.extend(json.loads(l) for l in cp.stdout.splitlines() if l.strip())
    return out


def core_run(pin_dir, prog, pkt, repeat):
    out = run(["bpftool", "prog", "run", "pinned", str(pin_dir / prog), "data_in", str(pkt),
               "repeat", str(repeat)]).stdout
    m = re.search(r"duration \(average\): (\d+)ns", out)
    if not m:
        raise BenchError(f"bpftool prog run {prog}: no duration in {out!r}")
    return int(m.group(1))


def bench_core(repeats):
    """ns per ACK of bbr_core_main() alone, net of the test-run loop."""
    if not CORE_BENCH_OBJ.is_file():
        return {"status": "not available", "reason": f"{CORE_BENCH_OBJ} not built (run `make`)"}
    pin_dir = bbrtest.BPFFS_ROOT / f"bbrbpf-bench-{os.getpid()}-core"
    pkt = DEFAULT_JSON.with_name("core_bench.pkt")
    pkt.parent.mkdir(parents=True, exist_ok=True)     # also when --json is elsewhere
    pkt.write_bytes(bytes(64))          # tc test runs need a packet; unused
    try:
        run(["bpftool", "prog", "loadall", str(CORE_BENCH_OBJ), str(pin_dir)])
        core_run(pin_dir, "core_ack", pkt, CORE_BENCH_WARMUP)
        acks, nops = [], []
        for _ in range(repeats):
            acks.append(core_run(pin_dir, "core_ack", pkt, CORE_BENCH_ACKS))
            nops.append(core_run(pin_dir, "core_nop", pkt, CORE_BENCH_ACKS))
    finally:
        bbrtest.remove_pin_dir(pin_dir)
        pkt.unlink(missing_ok=True)
    out = {"status": "ok", "ack_ns": summary(acks), "loop_ns": summary(nops),
           "core_ns_per_ack": summary([a - n for a, n in zip(acks, nops)])}
    log(f"core: {fmt(out['core_ns_per_ack'])} ns per ACK (net of the loop)")
    return out


def hot_path(cc):
    """Helper calls in the xlated cong_control program, and its jited size."""
    ids = sorted(struct_ops_prog_ids(cc))
    progs = bpf_progs()
    for pid in ids:
        if progs[pid].get("name") == f"{cc}_main":
            xl = run(["bpftool", "prog", "dump", "xlated", "id", str(pid)]).stdout
            helpers, subprogs = {}, {}
            for m in re.finditer(r"call (\S+)", xl):
                # "call pc+N#bpf_prog_TAG_FUNC" is a BPF-to-BPF call; else a helper/kfunc.
                sub = re.match(r"pc[+-]\d+#bpf_prog_[0-9a-f]+_(\w+)", m.group(1))
                table, name = ((subprogs, sub.group(1)) if sub
                               else (helpers, re.sub(r"#\d+$", "", m.group(1))))
                table[name] = table.get(name, 0) + 1
            return {"program": f"{cc}_main", "xlated_bytes": progs[pid].get("bytes_xlated"),
                    "jited_bytes": progs[pid].get("bytes_jited"),
                    "xlated_insns": sum(1 for l in xl.splitlines() if re.match(r"\s*\d+:", l)),
                    "helper_calls_in_code": helpers, "subprog_calls_in_code": subprogs}
    return None


# Symbols that are the CC's own work in a perf profile. A BPF CC also pays
# for the struct_ops trampoline (__bpf_prog_enter/exit) and its sk_storage;
# with ETS, for its sock_ops program, the header-option helpers and the
# cgroup hook that runs it.
PROFILE_SYMS = {
    "bpf": re.compile(r"^(bpf_prog_[0-9a-f]+_(bbr|swift)\w*|__bpf_prog_(enter|exit)\w*"
                      r"|bpf_sk_storage_get|bpf_local_storage\w*|bpf_user_rnd_u32"
                      r"|bpf_trampoline_\w+)$"),
    "ets": re.compile(r"^(bpf_prog_[0-9a-f]+_ets\w*|bpf_sock_ops_\w+|__cgroup_bpf_run_filter_sock_ops"
                      r"|bpf_(load|store|reserve)_hdr_opt\w*|bpf_skops_\w+|\w*htab_lru\w*)$"),
    "kernel": re.compile(r"^(bbr_\w+|bictcp_\w+|cubictcp_\w+|tcp_reno_\w+)$"),
}
PROFILE_FREQ_HZ = 4999


def perf_works():
    cp = run(["perf", "record", "-q", "-e", "cpu-clock", "-o", "/dev/null", "true"],
             check=False, timeout=30)
    return cp.returncode == 0


def profile_once(topo, variant, seconds, data):
    """perf samples of one transfer: {symbol: percent of iperf3's samples}."""
    cc, _ = split_variant(variant)
    with variant_cgroup(variant) as cg:
        perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F",
                                 str(PROFILE_FREQ_HZ), "-a", "-o", str(data), "--",
                                 "sleep", str(max(1, seconds - 1))],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            iperf_run(topo, cc, seconds, cgroup=cg)
        finally:
            perf.wait(timeout=seconds + 30)
    rep = run(["perf", "report", "-i", str(data), "--comms", "iperf3", "--sort", "sym",
               "--stdio", "-F", "overhead,sym", "--percent-limit", "0",
               "--percentage", "relative"], check=False, timeout=120).stdout
    syms = {}
    for line in rep.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[[k.]\]\s+(\S+)", line)
        if m:
            syms[m.group(2)] = syms.get(m.group(2), 0.0) + float(m.group(1))
    return syms


def cc_share(variant, syms):
    cc, ets = split_variant(variant)
    pats = [PROFILE_SYMS["bpf" if cc in BPF_CCS else "kernel"]]
    if ets:
        pats.append(PROFILE_SYMS["ets"])
    return {k: v for k, v in syms.items() if any(p.match(k) for p in pats)}


def bench_profile(ccs, repeats, seconds):
    """Share of the iperf3 processes' CPU samples spent in the CC itself,
    interleaved repeats; ratio to kernel bbr's share per repeat."""
    if not perf_works():
        return {"status": "not available", "reason": "perf record -e cpu-clock failed"}
    variants = list(ccs)
    if ets_available():
        variants = [v if v not in SWIFT_CCS else v + ETS_SUFFIX for v in variants]
        variants.insert(variants.index("bbr3") + 1, "bbr3" + ETS_SUFFIX)
    out = {"status": "ok", "variants": variants,
           "note": ("perf cpu-clock samples of the iperf3 processes of both ends (their "
                    "softirq work included), offloads off; the CC runs on both ends")}
    data = DEFAULT_JSON.with_name("perf.data")
    shares = {v: [] for v in variants}
    tops = {v: {} for v in variants}
    with bbrtest.Topology(prefix=NS_PREFIX) as topo:
        set_offloads(topo, False)
        for rep in range(repeats):
            for v in variants:
                mine = cc_share(v, profile_once(topo, v, seconds, data))
                shares[v].append(sum(mine.values()))
                for k, x in mine.items():
                    tops[v].setdefault(k, []).append(x)
                log(f"profile rep {rep + 1}/{repeats} {v}: {shares[v][-1]:.2f} % in the CC")
    data.unlink(missing_ok=True)
    for v in variants:
        top = {k: statistics.median(x) for k, x in tops[v].items()}
        out[v] = {"cc_percent": summary(shares[v]),
                  "top": dict(sorted(top.items(), key=lambda kv: -kv[1])[:12])}
        if "bbr" in shares and v != "bbr":
            out[v]["ratio_to_bbr"] = summary([a / b for a, b in zip(shares[v], shares["bbr"])
                                              if b > 0])
    return out


def bench_emulator(quick):
    from labkit import linkem_available, linkem_bench
    if not linkem_available():
        return {"status": "not available", "reason": "linkem not built (run `make`)"}
    try:
        result = linkem_bench.run([50, 500, 1000], 3 if quick else 10)
    except bbrtest.BbrtestError as e:
        return {"status": "failed", "error": str(e)[-2000:]}
    DEFAULT_JSON.with_name("linkem.json").write_text(json.dumps(result, indent=2) + "\n")
    return {"status": "ok", "result": result}


# ---- report --------------------------------------------------------------------------

def fmt(s, scale=1.0, digits=0):
    if not s:
        return "-"
    return "/".join(f"{v * scale:.{digits}f}" for v in (s["min"], s["median"], s["max"]))


def print_table(res):
    p = print
    mi = res["machine"]
    p(f"\nbbr-bpf bench  {mi['time_utc']}  kernel {mi['kernel']}  {mi['cpus']} x {mi['cpu_model']}"
      f"  ({'quick' if res['quick'] else 'full'}: "
      f"{res['params']['repeats']} x {res['params']['seconds']} s)")
    ld = res.get("load", {})
    for when in ("before", "after"):
        if when in ld:
            p(f"machine {when}: {fmt_load(ld[when])}"
              + ("" if ld[when]["quiet"] else f"  NOT QUIET ({ld[when]['why']})"))
    if "during" in ld:
        p(f"machine during the run: steal {ld['during']['steal']:.2%}")
    p("figures: min/median/max over repeats, ratios per repeat\n")
    for key in ("offloads_on", "offloads_off"):
        sec = res["cpu"].get(key)
        if not sec:
            continue
        p(f"CPU, bulk over veth, {key.replace('_', ' ')}")
        p(f"  {'cc':10} {'Mbit/s':>22} {'CPU s/GB (snd+rcv)':>22} {'retrans':>12}")
        for cc, s in sec["per_cc"].items():
            p(f"  {cc:10} {fmt(s['mbps']):>22} {fmt(s['cpu_s_per_gb'], digits=3):>22} "
              f"{fmt(s['retrans']):>12}")
        for k, v in sec.items():
            if "/" in k:
                p(f"  ratio {k}: throughput {fmt(v['mbps'], digits=3)}  "
                  f"CPU/GB {fmt(v['cpu_s_per_gb'], digits=3)}  (goal throughput >= {GOAL_RATIO})")
        p("")
    bpf = res.get("bpf", {})
    for key in ("offloads_on", "offloads_off"):
        for v, sec in bpf.get(key, {}).items():
            if v.startswith("ets_vs_bbr3"):
                continue
            p(f"BPF run time, {v}, {key.replace('_', ' ')} ({fmt(sec['mbps'])} Mbit/s): "
              f"struct_ops {fmt(sec['struct_ops_ms_per_gb'], digits=2)} ms/GB, "
              f"with sock_ops {fmt(sec['all_programs_ms_per_gb'], digits=2)} ms/GB; "
              f"stats floor {fmt(sec['floor_ns'])} ns/call, cong_control net of it "
              f"{fmt(sec['cong_control_net_ns'])} ns")
            p(f"  {'program':22} {'type':10} {'ns/call':>14} {'calls/GB':>26} {'ms/GB':>18}")
            for name, pv in sorted(sec["programs"].items()):
                p(f"  {name:22} {pv['type']:10} {fmt(pv['ns_per_call']):>14} "
                  f"{fmt(pv['calls_per_gb']):>26} {fmt(pv['ms_per_gb'], digits=2):>18}")
            for what, cv in sec.get("ets_calls_per_gb", {}).items():
                p(f"    {ETS_PROG} {what.replace('_', ' ') + ' per GB':30} {fmt(cv):>24}")
            p("")
    for key in ("offloads_on", "offloads_off"):
        for ek in sorted(k for k in bpf.get(key, {}) if k.startswith("ets_vs_bbr3")):
            ev = bpf[key][ek]
            label = f" ({ev['variant']}: {ev['object']})" if "object" in ev else ""
            if ev:
                p(f"ETS{label}, {key.replace('_', ' ')}: {ETS_PROG} "
                  f"{fmt(ev['ets_ms_per_gb'], digits=2)} ms/GB, "
                  f"bbr3's own {fmt(ev['bbr3_ms_per_gb'], digits=2)} ms/GB, ratio per repeat "
                  f"{fmt(ev['ratio'], digits=2)} (goal <= {GOAL_ETS_MS_PER_GB_RATIO:g})")
    p("")
    mem = res.get("memory", {})
    if mem:
        p(f"Memory: bbr3 sk_storage value {mem.get('bbr3_sk_storage_value_bytes')} B "
          f"(goal <= {GOAL_BYTES_PER_SOCKET})")
        for r in mem.get("runs", []):
            s = r["sockets_with_state"]
            per = r["slab_bytes_per_conn"]
            per = f"{per:8.0f}" if per is not None else "   (n/a)"
            p(f"  {r['cc']:6} x{r['connections']:<6} slab {per} B/conn"
              f"  after close {r['slab_kb_after_close_minus_base']:+6d} kB"
              f"  sockets with state before/open/closed {s['before']}/{s['open']}/{s['closed']}")
        al = mem.get("bbr3_alloc_per_socket")
        if al:
            p(f"  allocated per socket (BTF): elem {al['elem_bytes']} B -> {al['elem_alloc_bytes']}"
              f" B + local_storage {al['local_storage_bytes']} B -> "
              f"{al['local_storage_alloc_bytes']} B = {al['total_alloc_bytes']} B")
        for k, v in mem.items():
            if k.startswith("bbr3_minus_cubic"):
                p(f"  {k}: {v:.0f} B")
        p("")
    core = res.get("core", {})
    if core.get("status") == "ok":
        p(f"Core alone (BPF_PROG_TEST_RUN, warm): {fmt(core['core_ns_per_ack'])} ns per ACK "
          f"(loop {fmt(core['loop_ns'])} ns)\n")
    elif core:
        p(f"Core alone: {core.get('status')} ({core.get('reason')})\n")
    parts = res.get("parts", {})
    if parts.get("status") == "ok":
        p("Parts of one bbr3_main call (timing builds, offloads off; ns per call, each part "
          "with one clock read of 'clk' ns):")
        for label in PARTS_OBJS:
            row = parts[label]
            p(f"  {label:12s} " + "  ".join(f"{k[:-3]} {fmt(row[k])}" for k in PARTS_TIMED
                                          if row[k]["median"]) +
              f"  round starts/call {fmt(row['round_starts_per_call'], digits=2)}")
        p("")
    elif parts:
        p(f"Parts: {parts.get('status')} ({parts.get('reason')})\n")
    p("Verifier")
    for v in res.get("verifier", []):
        if "error" in v:
            p(f"  {v['object']}: {v['error']}")
        else:
            p(f"  {v['program']:24} {v['insns']:6} insns  {v['processed_insns']:8} processed")
    hp = res.get("hot_path")
    if hp:
        p(f"\nHot path {hp['program']}: {hp['xlated_insns']} xlated insns, {hp['jited_bytes']} B "
          f"jited\n  helper/kfunc call sites {hp['helper_calls_in_code']}\n"
          f"  BPF-to-BPF call sites {hp['subprog_calls_in_code']}")
    prof = res.get("profile", {})
    if prof.get("status") == "ok":
        p("\nProfile (perf, offloads off): share of iperf3 CPU samples in the CC, ratio to bbr's")
        for v in prof.get("variants", []):
            x = prof[v]
            top = ", ".join(f"{k} {val:.2f}" for k, val in list(x["top"].items())[:4])
            ratio = fmt(x.get("ratio_to_bbr"), digits=2) if x.get("ratio_to_bbr") else "-"
            p(f"  {v:14} {fmt(x['cc_percent'], digits=2):>18} %  x bbr {ratio:>16}   {top}")
    elif prof:
        p(f"\nProfile: {prof.get('status')} ({prof.get('reason')})")
    p("\nGoals (median, min-max in brackets; judge them on a quiet run):")
    for line in goal_lines(res):
        p("  " + line)
    em = res.get("emulator", {})
    p(f"\nEmulator (linkem): {em.get('status')} {em.get('reason', em.get('error', ''))}")
    for r in (em.get("result") or {}).get("results", []):
        p(f"  {r.get('rate_mbit'):>5} Mbit/s: goodput {r.get('goodput_mbit')} Mbit/s "
          f"(ratio {r.get('goodput_ratio')}), lateness p50/p99/p99.9/max "
          f"{r.get('lateness_p50_us')}/{r.get('lateness_p99_us')}/{r.get('lateness_p999_us')}/"
          f"{r.get('lateness_max_us')} us, valid {r.get('valid')}")
    p(f"\nJSON: {res['json_path']}")


def _goal(name, s, goal, below=True, digits=3):
    if not s:
        return f"{name}: not measured"
    ok = s["median"] <= goal if below else s["median"] >= goal
    return (f"{name}: {s['median']:.{digits}f} [{s['min']:.{digits}f}-{s['max']:.{digits}f}] "
            f"goal {'<=' if below else '>='} {goal}  {'met' if ok else 'NOT MET'}")


def goal_lines(res):
    out = []
    cpu = res.get("cpu", {}).get("offloads_off", {}).get("bbr3/bbr")
    out.append(_goal("throughput bbr3/bbr, offloads off", cpu and cpu["mbps"], GOAL_RATIO,
                     below=False))
    for key in ("offloads_off", "offloads_on"):
        sec = res.get("bpf", {}).get(key, {}).get("bbr3")
        if not sec:
            continue
        main = sec["programs"].get("bbr3_main", {})
        tag = key.replace("_", " ")
        out.append(_goal(f"cong_control ns/call, {tag}", main.get("ns_per_call"),
                         GOAL_CONG_CONTROL_NS, digits=0))
        out.append(_goal(f"cong_control ns/call net of the stats floor, {tag}",
                         sec.get("cong_control_net_ns"), GOAL_CONG_CONTROL_NS, digits=0))
        out.append(_goal(f"cong_control ms/GB, {tag}", main.get("ms_per_gb"),
                         GOAL_CONG_CONTROL_MS_PER_GB, digits=2))
        out.append(_goal(f"all bbr3 ops ms/GB, {tag}", sec["struct_ops_ms_per_gb"],
                         GOAL_ALL_OPS_MS_PER_GB, digits=2))
    for key in ("offloads_off", "offloads_on"):
        ev = res.get("bpf", {}).get(key, {}).get("ets_vs_bbr3")
        if ev:
            out.append(_goal(f"ETS ms/GB / bbr3's own, {key.replace('_', ' ')}", ev["ratio"],
                             GOAL_ETS_MS_PER_GB_RATIO, digits=2))
    prof = res.get("profile", {})
    if prof.get("status") == "ok":
        out.append(_goal("CPU share bbr3 / bbr", prof.get("bbr3", {}).get("ratio_to_bbr"),
                         GOAL_PROFILE_RATIO, digits=2))
        out.append(_goal("CPU share bbr3+ets / bbr",
                         prof.get("bbr3" + ETS_SUFFIX, {}).get("ratio_to_bbr"),
                         GOAL_PROFILE_RATIO_ETS, digits=2))
        out.append(_goal("CPU share bbr_swift+ets / bbr",
                         prof.get("bbr_swift" + ETS_SUFFIX, {}).get("ratio_to_bbr"),
                         GOAL_PROFILE_RATIO_SWIFT_ETS, digits=2))
    mem = res.get("memory", {})
    if mem.get("bbr3_sk_storage_value_bytes"):
        out.append(f"per-socket state: {mem['bbr3_sk_storage_value_bytes']} B value; "
                   f"goal <= {GOAL_BYTES_PER_SOCKET}")
    return out


def main():
    ap = argparse.ArgumentParser(prog="selftests/bench/run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one short repeat (development)")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON, help=f"default {DEFAULT_JSON}")
    ap.add_argument("--repeats", type=int, help="override repeats per CC")
    ap.add_argument("--seconds", type=int, help="override seconds per transfer")
    ap.add_argument("--only", default="cpu,bpf,profile,memory,core,parts,verifier,emulator",
                    help="comma-separated sections to run")
    ap.add_argument("--quiet-check", action="store_true",
                    # argparse %-formats help: the percent signs are doubled
                    help=(f"refuse to run unless the machine is quiet (over {QUIET_SAMPLE_S:g} s: "
                          f"CPU busy <= {QUIET_MAX_BUSY:.0%}%, steal <= {QUIET_MAX_STEAL:.0%}%), "
                          "and to print "
                          "figures unless it still is afterwards and steal stayed under the "
                          "bound during the run (exit 3 either way)"))
    ap.add_argument("--ets-baseline", type=Path, metavar="OBJ", action="append", default=[],
                    help=("another build of bpf/ets.bpf.o (repeatable): the bpf section runs "
                          f"bbr3 with it too ({ETS_BASE_PREFIX}NAME), interleaved with the "
                          "current one"))
    a = ap.parse_args()
    ETS_BASE_OBJS.update({ETS_BASE_PREFIX + o.stem.replace(".bpf", ""): o.resolve()
                          for o in a.ets_baseline})
    if os.geteuid() != 0:
        print("bench: needs root (namespaces, struct_ops, bpf_stats_enabled)", file=sys.stderr)
        return 1
    params = dict(QUICK if a.quick else FULL)
    if a.repeats:
        params["repeats"] = a.repeats
    if a.seconds:
        params["seconds"] = params["bpf_seconds"] = a.seconds
    only = set(a.only.split(","))
    for tool in ("iperf3", "bpftool", "ethtool"):
        if run(["sh", "-c", f"command -v {tool}"], check=False).returncode != 0:
            print(f"bench: {tool} not found (run `make setup`)", file=sys.stderr)
            return 1
    if not BPF_CCS["bbr3"].is_file():
        print(f"bench: {BPF_CCS['bbr3']} missing (run `make`)", file=sys.stderr)
        return 1
    res = {"quick": a.quick, "params": params, "machine": machine_info(),
           "goals": {"throughput_ratio_min": GOAL_RATIO, "cong_control_ns_max": GOAL_CONG_CONTROL_NS,
                     "cong_control_ms_per_gb_max": GOAL_CONG_CONTROL_MS_PER_GB,
                     "all_ops_ms_per_gb_max": GOAL_ALL_OPS_MS_PER_GB,
                     "cpu_share_ratio_max": GOAL_PROFILE_RATIO,
                     "cpu_share_ratio_ets_max": GOAL_PROFILE_RATIO_ETS,
                     "ets_ms_per_gb_ratio_to_bbr3_max": GOAL_ETS_MS_PER_GB_RATIO,
                     "cpu_share_ratio_swift_ets_max": GOAL_PROFILE_RATIO_SWIFT_ETS,
                     "bytes_per_socket_max": GOAL_BYTES_PER_SOCKET}}
    log(f"measuring the machine's load for {QUIET_SAMPLE_S:g} s")
    res["load"] = {"before": machine_load()}
    log(f"machine before: {fmt_load(res['load']['before'])}")
    if a.quiet_check and not res["load"]["before"]["quiet"]:
        print(f"bench: the machine is not quiet: {res['load']['before']['why']}; "
              "not running (drop --quiet-check to run anyway)", file=sys.stderr)
        return 3
    ticks0 = cpu_ticks()
    a.json.parent.mkdir(parents=True, exist_ok=True)
    res["json_path"] = str(a.json)
    KERNEL_LOCK.touch(exist_ok=True)
    with open(KERNEL_LOCK) as lockf:
        log(f"waiting for {KERNEL_LOCK}")
        fcntl.flock(lockf, fcntl.LOCK_EX)
        log("lock held")
        if "verifier" in only:
            res["verifier"] = bench_verifier()
        if "core" in only:
            res["core"] = bench_core(params["repeats"])
        if "parts" in only:
            res["parts"] = bench_parts(params["repeats"], params["bpf_seconds"])
        with contextlib.ExitStack() as regs:
            ccs = []
            for cc, obj in BPF_CCS.items():
                if obj.is_file():
                    name = regs.enter_context(register_own(cc, obj))
                    ccs.append(cc)
                    log(f"registered {cc} as {name}")
            ccs += KERNEL_CCS
            res["ccs"] = ccs
            res["hot_path"] = hot_path("bbr3")
            if "cpu" in only:
                res["cpu"] = bench_cpu(ccs, params["repeats"], params["seconds"])
            if "bpf" in only:
                res["bpf"] = bench_bpf(ccs, params["repeats"], params["bpf_seconds"])
            if "profile" in only:
                res["profile"] = bench_profile(ccs, params["repeats"], params["bpf_seconds"])
            if "memory" in only:
                res["memory"] = bench_memory(params["conns"])
    if "emulator" in only:
        res["emulator"] = bench_emulator(a.quick)
    res["machine"]["loadavg_end"] = os.getloadavg()
    res["load"]["during"] = load_between(ticks0, cpu_ticks())
    res["load"]["after"] = machine_load()
    res.setdefault("cpu", {})
    quiet = res["load"]["after"]["quiet"] and res["load"]["during"]["steal"] <= QUIET_MAX_STEAL
    res["quiet"] = quiet
    a.json.write_text(json.dumps(res, indent=1) + "\n")
    if a.quiet_check and not quiet:
        why = res["load"]["after"]["why"] or (f"steal {res['load']['during']['steal']:.1%} "
                                             f"during the run > {QUIET_MAX_STEAL:.0%}")
        print(f"bench: the machine was not quiet ({why}): no report; the raw figures are in "
              f"{a.json}", file=sys.stderr)
        return 3
    print_table(res)
    return 0


def _exit_on_sigterm(signum, frame):
    # SystemExit unwinds the with-blocks: namespaces, cgroups, registered
    # CCs and bpf_stats_enabled are undone as on any other failure.
    sys.exit(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        sys.exit(main())
    except (bbrtest.BbrtestError, subprocess.TimeoutExpired) as e:
        print(f"bench: {e}", file=sys.stderr)
        sys.exit(1)
