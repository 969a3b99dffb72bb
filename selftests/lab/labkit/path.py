# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""EmulatedPath: N sender and M receiver namespaces joined by one bottleneck.

Two backends build the same picture:

  backend="linkem"  the project's TUN emulator (selftests/lab/linkem/linkem,
                    contract in its README). One TUN per namespace; linkem
                    creates them, prints READY, and only then are addresses
                    and routes assigned here. Delay, loss, ECN marking,
                    rate schedules and traces all come from linkem.
  backend="kernel"  no added delay: a router namespace with one veth per
                    end point and tbf (bfifo limit) on the router's egress
                    towards the receiver(s); with loss or ECN, the fast path
                    (labkit.fastpath: tbf plus a cls_bpf marker).

Every namespace is <prefix><pid>-<n>{s<i>,r<j>,m} (prefix "lab" unless
given); addresses are /32s in 198.18.0.0/15. A sender's own interface is
never shaped (TSQ would hide every loss). Per-namespace TCP buffer ceilings
are at least 2 x (BDP + buffer). Everything created is deleted on exit,
also when the setup or the with-block fails: processes first (by pid),
then namespaces. Namespaces, links, addresses, sysctls and tbf come from
the toolkit (bbrtest.netns).
"""

import ipaddress
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from bbrtest import BbrtestError, KernelLacks, SetupClose, netns
from bbrtest.base import read_line
from bbrtest.netns import ADDR_SPACE

from . import linkem_log

LAB_DIR = Path(__file__).resolve().parents[1]
REPO = LAB_DIR.parents[1]
LINKEM_BIN = LAB_DIR / "linkem" / "linkem"
NS_PREFIX = "lab"                   # the lab's namespace prefix
SND_HOST_BASE = 1                   # sender i: .1+i of the path's /24
RCV_HOST_BASE = 101                 # receiver j: .101+j
ROUTER_HOST = 254                   # kernel backend: the router's address
MAX_ENDPOINTS = 100                 # senders (and receivers) per path
ACK_EVERY_MAX = 64                  # linkem's ack_every limit
SOJOURN_K_DEFAULT_US = 2000         # linkem's default step (linkem/README.md)
TUN_DEV = "lem0"                    # linkem's device in each end namespace
TUN_PATH = "/dev/net/tun"           # what linkem opens for its devices
VETH_DEV = "lab0"                   # kernel backend's device in each end namespace
READY_TIMEOUT_S = 10.0              # linkem: start-up until READY
STOP_TIMEOUT_S = 5.0                # linkem: SIGTERM until it has written its stats
IP_PACKET_BYTES = 1500              # per full-size packet as linkem counts it
TCP_MEM_MIN_MAX_BYTES = 8 * 1024 * 1024   # never below the kernel's usual 6 MB default
BUFFER_MIN_BYTES = 2 * IP_PACKET_BYTES

_counter = itertools.count()

# The lab's errors are the toolkit's: a failed namespace, command or
# registration reads the same to the runner and to its callers.
LabError = BbrtestError


def linkem_available():
    return os.access(LINKEM_BIN, os.X_OK)


def bdp_bytes(rate_mbit, rtt_ms):
    """Bandwidth-delay product in bytes: rate x base RTT."""
    return int(rate_mbit * 1e6 / 8 * rtt_ms / 1e3)


class EmulatedPath(SetupClose):
    """A bottleneck between `senders` and `receivers` namespaces.

    rate_mbit       bottleneck rate (both directions' data path: fwd); or use
    schedule        [{"t_ms":0,"mbit":100},{"t_ms":1000,"mbit":10,"ramp_ms":400}]
    trace           mahimahi trace file (linkem only; rate_mbit then only
                    sizes BDP-relative buffers)
    rtt_ms          base RTT; linkem adds rtt/2 per direction
    extra_delay_ms  per-sender extra RTT (list, linkem only)
    buffer_bdp / buffer_bytes / buffer_pkts   bottleneck FIFO (one of them)
    loss            random loss probability on the data path (0..1)
    ecn             linkem "ecn" dict, e.g. {"mode":"sojourn","k_us":2000}
    backend         "linkem", "kernel" or "auto" (linkem when built, and
                    always linkem when delay, loss or ECN is asked for)
    log             linkem: write the per-packet log (p.log_path)
    prefix          namespace name prefix (default "lab")

    Attributes after entering: snd_ns[i], snd_addr[i], rcv_ns (= rcv_nss[0]),
    rcv_addr (= rcv_addrs[0]), rcv_nss, rcv_addrs, buffer_bytes, bdp_bytes,
    workdir, log_path, stats_path, backend.
    """

    def __init__(self, rate_mbit=50, rtt_ms=40, buffer_bdp=None, buffer_bytes=None,
                 buffer_pkts=None, senders=1, receivers=1, extra_delay_ms=None,
                 loss=None, ecn=None, schedule=None, trace=None, backend="auto",
                 ack_batch_ms=0, ack_every=1, ack_hold_ms=None, log=True, workdir=None, lateness_bound_us=1000, seed=1, prefix=NS_PREFIX):
        if not 1 <= senders <= MAX_ENDPOINTS or not 1 <= receivers <= MAX_ENDPOINTS:
            raise ValueError(f"senders and receivers must be 1..{MAX_ENDPOINTS}")
        if sum(x is not None for x in (buffer_bdp, buffer_bytes, buffer_pkts)) > 1:
            raise ValueError("give at most one of buffer_bdp, buffer_bytes, buffer_pkts")
        if rate_mbit is None and not schedule:
            raise ValueError("give rate_mbit or schedule (with a trace, rate_mbit is "
                             "the nominal rate that sizes the buffer in BDP)")
        if loss is not None and not 0 <= loss < 1:
            raise ValueError(f"loss must be a probability in [0, 1), got {loss}")
        self.rate_mbit = rate_mbit if rate_mbit else _peak_rate(schedule)
        self.rtt_ms = float(rtt_ms)
        self.schedule, self.trace = schedule, trace
        self.extra_delay_ms = list(extra_delay_ms or [0] * senders)
        if len(self.extra_delay_ms) != senders:
            raise ValueError("extra_delay_ms needs one value per sender")
        self.loss, self.ecn = loss, ecn
        # ACK aggregation on the ACK path (linkem batch_us, ack_every)
        if ack_batch_ms < 0 or not 1 <= int(ack_every) <= ACK_EVERY_MAX:
            raise ValueError(f"ack_batch_ms must be >= 0 and ack_every 1..{ACK_EVERY_MAX}")
        self.ack_batch_ms, self.ack_every, self.ack_hold_ms = ack_batch_ms, int(ack_every), ack_hold_ms
        self.nsenders, self.nreceivers = senders, receivers
        self.bdp_bytes = bdp_bytes(self.rate_mbit, self.rtt_ms) if self.rtt_ms else 0
        if buffer_bytes is not None:
            self.buffer_bytes = int(buffer_bytes)
        elif buffer_pkts is not None:
            self.buffer_bytes = int(buffer_pkts) * IP_PACKET_BYTES
        else:
            self.buffer_bytes = int((buffer_bdp if buffer_bdp is not None else 1) * self.bdp_bytes)
        self.buffer_bytes = max(self.buffer_bytes, BUFFER_MIN_BYTES)
        self._queue = ({"bytes": int(buffer_bytes)} if buffer_bytes is not None else
                       {"packets": int(buffer_pkts)} if buffer_pkts is not None else
                       {"bytes": self.buffer_bytes})
        needs_linkem = bool(self.rtt_ms or any(self.extra_delay_ms) or schedule or trace or
                            ack_batch_ms or self.ack_every > 1)
        if backend == "auto":
            backend = "linkem" if (linkem_available() or needs_linkem) else "kernel"
        if backend not in ("linkem", "kernel"):
            raise ValueError(f"backend must be linkem, kernel or auto, not {backend!r}")
        if backend == "kernel" and needs_linkem:
            raise ValueError("the kernel backend cannot add delay, aggregate ACKs or "
                             "follow a schedule; use backend='linkem'")
        self.backend = backend
        self.lateness_bound_us, self.seed = lateness_bound_us, seed
        self.want_log = log
        n = next(_counter)
        base = f"{prefix}{os.getpid()}-{n}"
        self.snd_ns = [f"{base}s{i}" for i in range(senders)]
        self.rcv_nss = [f"{base}r{j}" for j in range(receivers)]
        self.rtr_ns = f"{base}m" if backend == "kernel" else None
        self.rcv_ns = self.rcv_nss[0]
        # One /24 per path, picked from pid and instance: paths never share addresses.
        net = ipaddress.ip_network((int(ADDR_SPACE.network_address)
                                    + (((os.getpid() * 7 + n) % 512) << 8), 24))
        self.net = net
        self.snd_addr = [str(net[SND_HOST_BASE + i]) for i in range(senders)]
        self.rcv_addrs = [str(net[RCV_HOST_BASE + j]) for j in range(receivers)]
        self.rcv_addr = self.rcv_addrs[0]
        self.router_addr = str(net[ROUTER_HOST])
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else None
        self.log_path = self.stats_path = self.config_path = None
        self._nss, self._procs, self._fastpath = netns.Namespaces(), [], None
        self._fastpaths = []
        self._stats = None
        self.started_mono_ns = None

    def __repr__(self):
        return (f"<EmulatedPath {self.backend} {self.nsenders}x{self.snd_ns[0]}.. -> "
                f"{self.rcv_ns}, {self.rate_mbit:g} Mbit/s, {self.rtt_ms:g} ms, "
                f"{self.buffer_bytes} B>")

    def namespaces(self):
        return [ns for ns in (*self.snd_ns, self.rtr_ns, *self.rcv_nss) if ns]

    # ---- setup (SetupClose: close() also when _setup fails) ----

    def _setup(self):
        if os.geteuid() != 0:
            raise LabError("the lab needs root (network namespaces, TUN, qdiscs)")
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="labpath-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        for ns in self.namespaces():
            self._nss.add(ns)
        if self.backend == "linkem":
            self._setup_linkem()
        else:
            self._setup_kernel()
        for ns in (*self.snd_ns, *self.rcv_nss):
            netns.tune_tcp(ns, self.tcp_mem_max_bytes(), core=True)
        if self.ecn:
            # Senders request ECN (tcp_ecn=1) when the bottleneck marks; a CC
            # with TCP_CONG_NEEDS_ECN negotiates it anyway.
            for ns in self.snd_ns:
                netns.sysctl(ns, {"net.ipv4.tcp_ecn": 1})
        self.started_mono_ns = time.monotonic_ns()

    def tcp_mem_max_bytes(self):
        """Socket buffer ceiling: at least 2 x (BDP + buffer), rounded up to a MiB."""
        bdp = bdp_bytes(self.rate_mbit, self.rtt_ms + max(self.extra_delay_ms))
        need = 2 * (bdp + self.buffer_bytes)
        return max(TCP_MEM_MIN_MAX_BYTES, -(-need // (1 << 20)) << 20)

    # ---- linkem backend ----

    def linkem_config(self):
        """The linkem config JSON (dict) for this path (contract: linkem/README.md)."""
        ports = [{"name": f"s{i}", "netns": ns, "dev": TUN_DEV, "side": "a",
                  "addrs": [self.snd_addr[i]],
                  "extra_delay_us": int(self.extra_delay_ms[i] * 1000)}
                 for i, ns in enumerate(self.snd_ns)]
        ports += [{"name": f"r{j}", "netns": ns, "dev": TUN_DEV, "side": "b",
                   "addrs": [self.rcv_addrs[j]], "extra_delay_us": 0}
                  for j, ns in enumerate(self.rcv_nss)]
        one_way_us = int(self.rtt_ms * 1000 / 2)
        if self.trace:
            rate = {"trace": str(self.trace), "repeat": True}
        elif self.schedule:
            rate = {"schedule": self.schedule}
        else:
            rate = {"mbit": self.rate_mbit}
        fwd = {"rate": rate, "queue": self._queue, "delay_us": one_way_us,
               "loss": {"model": "bernoulli", "p": self.loss} if self.loss else None,
               "ecn": self.ecn, "ect1_only": bool((self.ecn or {}).get("ect1_only", False))}
        if fwd["ecn"]:
            fwd["ecn"] = {k: v for k, v in fwd["ecn"].items() if k != "ect1_only"}
        # ACK path: unshaped, a large queue, the other half of the delay;
        # ACKs released in aggregates (batch_us) and/or coalesced (ack_every).
        rev = {"rate": None, "queue": {"packets": 100000}, "delay_us": one_way_us,
               "loss": None, "ecn": None, "ect1_only": False,
               "batch_us": int(self.ack_batch_ms * 1000), "ack_every": self.ack_every}
        if self.ack_hold_ms is not None:
            rev["ack_hold_us"] = int(self.ack_hold_ms * 1000)
        return {"ports": ports, "base_rtt_us": int(self.rtt_ms * 1000), "fwd": fwd,
                "rev": rev, "lateness_bound_us": self.lateness_bound_us,
                "seed": self.seed, "duration_s": 0}

    def _setup_linkem(self):
        if not linkem_available():
            raise LabError(f"{LINKEM_BIN}: not built (run `make`)")
        if not os.path.exists(TUN_PATH):
            raise KernelLacks(f"this kernel has no {TUN_PATH} (tun) for the emulator")
        self.config_path = self.workdir / "linkem.json"
        self.config_path.write_text(json.dumps(self.linkem_config(), indent=1))
        self.stats_path = self.workdir / "linkem-stats.json"
        argv = [str(LINKEM_BIN), "--config", str(self.config_path), "--stats", str(self.stats_path)]
        if self.want_log:
            self.log_path = self.workdir / "linkem-log.bin"
            argv += ["--log", str(self.log_path)]
        self._errf = open(self.workdir / "linkem.stderr", "w+")
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self._errf,
                                start_new_session=True)
        self._procs.append(proc)
        self.linkem = proc
        self._wait_ready(proc)
        for ns, addr in zip((*self.snd_ns, *self.rcv_nss), (*self.snd_addr, *self.rcv_addrs)):
            netns.add_addr(ns, TUN_DEV, f"{addr}/32")
            netns.link_up(ns, TUN_DEV)
            netns.add_route(ns, ADDR_SPACE, dev=TUN_DEV, src=addr)

    def _wait_ready(self, proc):
        line = read_line(proc.stdout.fileno(), READY_TIMEOUT_S)
        if line.strip() == "READY":
            return
        if not line:
            if proc.poll() is None:
                raise LabError(f"linkem did not print READY within {READY_TIMEOUT_S} s: "
                               f"{self._linkem_stderr()}")
            proc.wait(timeout=STOP_TIMEOUT_S)
            raise LabError(f"linkem exited ({proc.returncode}) before READY: "
                           f"{self._linkem_stderr()}")
        raise LabError(f"linkem printed {line!r} instead of READY")

    def _linkem_stderr(self):
        try:
            self._errf.seek(0)
            return self._errf.read().strip()[-2000:] or "(no stderr)"
        except (OSError, ValueError, AttributeError):
            return "(no stderr)"

    # ---- kernel backend ----

    def _setup_kernel(self):
        rtr = self.rtr_ns
        netns.sysctl(rtr, {"net.ipv4.ip_forward": 1})
        ends = [(ns, a, f"s{i}") for i, (ns, a) in enumerate(zip(self.snd_ns, self.snd_addr))]
        ends += [(ns, a, f"r{j}") for j, (ns, a) in enumerate(zip(self.rcv_nss, self.rcv_addrs))]
        for ns, addr, rdev in ends:
            netns.veth(ns, VETH_DEV, rtr, rdev)
            netns.add_addr(ns, VETH_DEV, f"{addr}/32")
            netns.add_addr(rtr, rdev, f"{self.router_addr}/32")
            netns.add_route(ns, self.router_addr, dev=VETH_DEV)
            netns.add_route(ns, ADDR_SPACE, via=self.router_addr, dev=VETH_DEV, src=addr)
            netns.add_route(rtr, f"{addr}/32", dev=rdev)
            # MTU-sized packets: the bottleneck FIFO queues and drops frames,
            # not 64 KB GSO super-packets.
            netns.set_offloads(ns, VETH_DEV, False)
        for j in range(self.nreceivers):
            self._shape_kernel(f"r{j}")

    def _shape_kernel(self, dev):
        """tbf plus the cls_bpf marker (labkit.fastpath): loss and ECN when
        asked, and always the per-packet sojourn of its virtual queue, the
        lab's measure of the kernel path's queue."""
        from . import fastpath
        ecn = None
        if self.ecn:
            mode = self.ecn.get("mode")
            if mode == "sojourn":
                ecn = {"mode": "step", "k_us": self.ecn.get("k_us", SOJOURN_K_DEFAULT_US)}
            elif mode == "phantom":
                ecn = {"mode": "phantom_rate", "gamma": self.ecn["gamma"],
                       "window_us": self.ecn.get("window_us", 5000)}
            else:
                raise LabError(f"kernel backend: ECN mode {mode!r} not supported "
                               "(sojourn or phantom)")
        fp = fastpath.FastPath(self.rtr_ns, dev, rate_mbit=self.rate_mbit,
                               buffer_bytes=self.buffer_bytes, ecn=ecn, loss=self.loss)
        fp.__enter__()
        self._fastpaths.append(fp)
        if self._fastpath is None:      # the first receiver's: what stats() report
            self._fastpath = fp

    def marker_sojourn(self):
        """Kernel backend: (summed virtual sojourn ns, packets) so far, from
        the marker's counters of the first bottleneck."""
        c = self._fastpath.counters(shaper=False)
        return c["soj_sum_ns"], c["soj_pkts"]

    def marker_hist(self):
        """Kernel backend: the marker's sojourn histogram so far (packets per
        labkit.fastpath.soj_bucket_edges_us() bucket)."""
        return self._fastpath.sojourn_hist()

    def kernel_qdisc(self, dev="r0"):
        """tbf counters on the router (kernel backend): bytes, packets, drops, backlog."""
        return netns.tbf_stats(self.rtr_ns, dev) or {}

    # ---- results ----

    def stats(self):
        """linkem: its STATS.json (after exit; stops it first if still running).
        kernel: the tbf counters, live."""
        if self.backend == "kernel":
            if self._stats is not None:
                return self._stats
            if self._fastpath is not None:
                c = self._fastpath.counters()
                return {"qdisc": self.kernel_qdisc(),
                        "marker": {**c, "marked": c.get("mark_step", 0) + c.get("mark_phantom", 0)}}
            return {"qdisc": self.kernel_qdisc()}
        if self._stats is None:
            self.stop_emulator()
        return self._stats

    def stop_emulator(self):
        """Stop linkem (SIGTERM), wait for it to write its stats, load them."""
        proc = getattr(self, "linkem", None)
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise LabError("linkem did not stop on SIGTERM")
        if self._stats is None and self.stats_path and self.stats_path.exists():
            try:
                self._stats = json.loads(self.stats_path.read_text())
            except ValueError as e:
                raise LabError(f"{self.stats_path}: {e}") from None
        elif self._stats is None:
            raise LabError(f"linkem exited ({proc.returncode}) without stats: "
                           f"{self._linkem_stderr()}")

    def read_log(self):
        """The per-packet log as labkit.linkem_log returns it (linkem backend only)."""
        if not self.log_path:
            raise LabError("no per-packet log (kernel backend or log=False)")
        return linkem_log.read_log(self.log_path)

    # ---- teardown ----

    def close(self):
        """Stop processes, delete namespaces; safe to call twice."""
        errors = []
        if self.backend == "kernel" and self.rtr_ns in self._nss.created and self._stats is None:
            try:
                self._stats = self.stats()
            except Exception:                           # noqa: BLE001 - stats are best effort here
                pass
        for fp in self._fastpaths:
            try:
                fp.close()
            except Exception as e:                      # noqa: BLE001 - report, go on
                errors.append(f"fastpath removal: {e}")
        self._fastpaths, self._fastpath = [], None
        try:
            self.stop_emulator()
        except LabError as e:
            if getattr(self, "linkem", None) is not None and self.linkem.returncode not in (0, None):
                pass                    # failed at start: the setup error says why
            else:
                errors.append(str(e))
        for proc in self._procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self._procs = []
        try:
            self._nss.close()
        except BbrtestError as e:
            errors.append(str(e))
        if self._own_workdir and self.workdir and not os.environ.get("LAB_KEEP"):
            shutil.rmtree(self.workdir, ignore_errors=True)
            self._own_workdir = False
        if errors:
            raise LabError("teardown incomplete: " + "; ".join(errors))


def _peak_rate(schedule):
    if not schedule:
        raise ValueError("no rate given")
    return max(step["mbit"] for step in schedule)
