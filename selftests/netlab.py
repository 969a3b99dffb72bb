# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Network namespaces, transfers and struct_ops registration for bbr-bpf tests.

The one shared module for everything that moves packets: the integration
tests, scripts/demo.py and the lab build on it.

    with StructOpsRegistration("selftests/progs/bbrbpf_test_cc.bpf.o") as reg, \\
         Topology(rate_mbit=50) as topo:
        res = run_transfer(topo, reg.cc_name, seconds=3)
        print(res["mbps"], res["tcp_info"]["retransmits"])

Rules every helper here keeps:
  * Traffic only flows between namespaces created here, on addresses in
    198.18.0.0/15 (RFC 2544 benchmarking space). Nothing is added to the
    init namespace except pins under /sys/fs/bpf.
  * Whatever is created is deleted on exit, also when setup fails half-way
    or the body raises: namespaces (and any process left in them), pinned
    links and their directory, and with them the registered CC.
  * Every external command has a timeout and fails with its stderr.

Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_BPF), iproute2, ethtool and bpftool.
"""

import ipaddress
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

__all__ = [
    "Topology", "run_transfer", "available_ccs", "StructOpsRegistration",
    "struct_ops_ids", "BbrctlRegistration", "register_cc", "bbrctl_can_load",
    "ensure_bpffs", "netns_exec", "list_netns", "default_buffer_bytes",
    "NetlabError", "TransferError", "RegistrationError", "SetupClose", "add_netns",
    "delete_netns",
]

XFER_SCRIPT = Path(__file__).resolve().with_name("xfer.py")

ADDR_SPACE = ipaddress.ip_network("198.18.0.0/15")
SUBNET_PREFIX_LEN = 24
# Each topology takes a pair of /24s (sender side, receiver side): 256 pairs.
SUBNET_PAIRS = 2 ** (SUBNET_PREFIX_LEN - ADDR_SPACE.prefixlen) // 2
HOST_INDEX = 1                  # sender / receiver: .1 of their subnet
ROUTER_INDEX = 254              # router: .254 on each subnet
DIRECT_RCV_INDEX = 2            # receiver on the sender's subnet when unshaped

CMD_TIMEOUT_S = 15.0            # any single ip/tc/bpftool invocation
ETH_FRAME_MAX_BYTES = 1514      # what tbf charges per full-size packet on veth
# tbf bucket: TBF_BURST_TIME_US of tokens at the configured rate, at least
# two full frames. It must cover the qdisc watchdog's wake-up lateness, or the
# tokens a late wake-up would have earned are lost: on the 2-vCPU reference
# machine 1 ms gave 84-97 % of the ideal goodput, 4 ms gave 99.7-100.2 %
# (50 and 100 Mbit/s; reno, cubic and kernel bbr). A full bucket only drains
# at line rate after the queue was empty.
TBF_BURST_MIN_BYTES = 2 * ETH_FRAME_MAX_BYTES
TBF_BURST_TIME_US = 4000
# Default bottleneck buffer: one BDP of a 20 ms path at the configured rate.
# The namespaces add no delay of their own (tens of µs RTT), so a "real"
# BDP would be a few packets; 20 ms is the base RTT the lab emulates.
DEFAULT_BUFFER_RTT_MS = 20
BUFFER_MIN_BYTES = 10 * ETH_FRAME_MAX_BYTES
# Socket buffer ceilings in the end namespaces: 2 x (BDP + buffer) at 1 Gbit/s
# and 40 ms + 40 ms of buffer is about 20 MB; the kernel default 6 MB limited
# such runs to 611 Mbit/s on the reference machine.
TCP_MEM_MAX_BYTES = 32 * 1024 * 1024

BPFFS_ROOT = Path("/sys/fs/bpf")
BBRCTL_PIN_ROOT = BPFFS_ROOT / "bbr-bpf"        # where bbrctl pins (docs/bbrctl.md)
DEFAULT_BBRCTL = Path(__file__).resolve().parents[1] / "loader" / "bbrctl"
CC_LIST_PATH = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
NETNS_RUN_DIR = Path("/run/netns")
UNREGISTER_TIMEOUT_S = 2.0      # until the CC name is gone from the list
POLL_S = 0.02

TRANSFER_GRACE_S = 30.0         # on top of the expected transfer time
NBYTES_TIMEOUT_S = 120.0        # whole transfer when its length cannot be estimated
SERVER_STOP_S = 5.0             # for the server to report after the client exits

_instance_counter = itertools.count()
_counter_lock = threading.Lock()


class NetlabError(RuntimeError):
    """A namespace, qdisc or external command could not be set up."""


class TransferError(NetlabError):
    """A transfer failed; .errno/.errno_name/.stage say where when known."""

    def __init__(self, msg, errno_=None, errno_name=None, stage=None):
        super().__init__(msg)
        self.errno = errno_
        self.errno_name = errno_name
        self.stage = stage


class RegistrationError(NetlabError):
    """A struct_ops object could not be registered or unregistered."""


def _next_instance():
    with _counter_lock:
        return next(_instance_counter)


def _run(argv, timeout=CMD_TIMEOUT_S, check=True):
    """Run argv, return CompletedProcess; raise NetlabError with its stderr."""
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise NetlabError(f"{argv[0]}: not found (run `make setup`)") from None
    except subprocess.TimeoutExpired:
        raise NetlabError(f"`{' '.join(argv)}` timed out after {timeout} s") from None
    if check and cp.returncode != 0:
        raise NetlabError(f"`{' '.join(argv)}` failed ({cp.returncode}): "
                          f"{cp.stderr.strip() or cp.stdout.strip()}")
    return cp


def netns_exec(ns, argv, **kw):
    """Run argv inside network namespace ns (see _run for kw)."""
    return _run(["ip", "netns", "exec", ns, *argv], **kw)


def list_netns():
    """Names of the namespaces under /run/netns."""
    try:
        return sorted(p.name for p in NETNS_RUN_DIR.iterdir())
    except FileNotFoundError:
        return []


def _sysctl(ns, settings):
    args = [f"{key}={value}" for key, value in settings.items()]
    netns_exec(ns, ["sysctl", "-q", "-w", *args])


# ---- topology -------------------------------------------------------------------

class SetupClose:
    """Context-manager protocol for test fixtures: __enter__ runs
    self._setup() and, if that fails part-way, self.close() before the error
    propagates; __exit__ runs self.close(). close() must undo whatever
    _setup() got done and be safe to call twice. Shared by Topology and the
    lab's EmulatedPath and FastPath."""

    def __enter__(self):
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def add_netns(ns):
    """Create namespace ns with lo up and IPv6 off (no router solicitations
    or DAD on test links); NetlabError if it exists. Deleted again if its
    configuration fails."""
    if ns in list_netns():
        raise NetlabError(f"namespace {ns} already exists (left over from an "
                          f"earlier run? `ip netns del {ns}`)")
    _run(["ip", "netns", "add", ns])
    try:
        _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        _sysctl(ns, {"net.ipv6.conf.all.disable_ipv6": 1,
                     "net.ipv6.conf.default.disable_ipv6": 1})
    except BaseException:
        delete_netns(ns)
        raise


class Topology(SetupClose):
    """Sender and receiver namespaces, optionally with a shaping router between.

    Topology()                      sender <-veth-> receiver, one /24, unshaped
    Topology(rate_mbit=50)          sender <-> router <-> receiver; tbf at
                                    50 Mbit/s on the router's egress towards the
                                    receiver, with a byte FIFO of buffer_bytes
                                    (default: rate x DEFAULT_BUFFER_RTT_MS)

    The sender's own interface is never shaped: a qdisc there would push back
    on the socket (TSQ) and the CC would never see a queue or a loss. With a
    router, the sender's interface has TSO/GSO off, so the bottleneck queues
    and drops MTU-sized packets (see _no_segmentation_offload).
    Namespaces are <prefix><pid>-<n>{s,r,m}. Each instance takes two /24s of
    198.18.0.0/15 picked from pid and an instance counter, so topologies can
    coexist (their namespaces isolate them anyway).

    Attributes: snd_ns, rcv_ns, rtr_ns (None when unshaped), snd_addr,
    rcv_addr, rate_mbit, buffer_bytes (None when unshaped), bottleneck_dev
    (router interface carrying the shaper, or None).
    """

    SND_DEV = "snd0"            # in snd_ns
    RCV_DEV = "rcv0"            # in rcv_ns
    RTR_SND_DEV = "rs0"         # in rtr_ns, towards the sender
    RTR_RCV_DEV = "rr0"         # in rtr_ns, towards the receiver (shaped)

    def __init__(self, rate_mbit=None, delay=None, buffer_bytes=None, prefix="bbrt"):
        if delay is not None:
            raise NotImplementedError(
                "delay emulation needs the lab's emulator: this kernel has no netem")
        if rate_mbit is not None and rate_mbit <= 0:
            raise ValueError(f"rate_mbit must be positive, got {rate_mbit}")
        if buffer_bytes is not None and rate_mbit is None:
            raise ValueError("buffer_bytes only applies with rate_mbit (there is no queue otherwise)")
        self.rate_mbit = rate_mbit
        self.buffer_bytes = None
        if rate_mbit is not None:
            self.buffer_bytes = buffer_bytes or default_buffer_bytes(rate_mbit)
        n = _next_instance()
        base = f"{prefix}{os.getpid()}-{n}"
        self.snd_ns = base + "s"
        self.rcv_ns = base + "r"
        self.rtr_ns = base + "m" if rate_mbit is not None else None
        self.bottleneck_dev = self.RTR_RCV_DEV if rate_mbit is not None else None

        slot = (os.getpid() + n) % SUBNET_PAIRS
        self.snd_net = _subnet(2 * slot)
        self.rcv_net = _subnet(2 * slot + 1)
        self.snd_addr = str(self.snd_net[HOST_INDEX])
        if rate_mbit is None:
            self.rcv_addr = str(self.snd_net[DIRECT_RCV_INDEX])
        else:
            self.rcv_addr = str(self.rcv_net[HOST_INDEX])
        self._created = []

    def __repr__(self):
        shape = (f"{self.rate_mbit} Mbit/s, {self.buffer_bytes} B buffer"
                 if self.rate_mbit else "unshaped")
        return f"<Topology {self.snd_ns}({self.snd_addr}) -> {self.rcv_ns}({self.rcv_addr}), {shape}>"

    # -- setup --

    def _setup(self):
        for ns in self.namespaces():
            self._add_netns(ns)
        if self.rtr_ns is None:
            self._link(self.snd_ns, self.SND_DEV, self.rcv_ns, self.RCV_DEV)
            self._addr(self.snd_ns, self.SND_DEV, self.snd_addr)
            self._addr(self.rcv_ns, self.RCV_DEV, self.rcv_addr)
        else:
            self._link(self.snd_ns, self.SND_DEV, self.rtr_ns, self.RTR_SND_DEV)
            self._link(self.rtr_ns, self.RTR_RCV_DEV, self.rcv_ns, self.RCV_DEV)
            self._addr(self.snd_ns, self.SND_DEV, self.snd_addr)
            self._addr(self.rcv_ns, self.RCV_DEV, self.rcv_addr)
            self._addr(self.rtr_ns, self.RTR_SND_DEV, str(self.snd_net[ROUTER_INDEX]))
            self._addr(self.rtr_ns, self.RTR_RCV_DEV, str(self.rcv_net[ROUTER_INDEX]))
            self._route(self.snd_ns, self.rcv_net, self.snd_net[ROUTER_INDEX])
            self._route(self.rcv_ns, self.snd_net, self.rcv_net[ROUTER_INDEX])
            _sysctl(self.rtr_ns, {"net.ipv4.ip_forward": 1})
            self._no_segmentation_offload(self.snd_ns, self.SND_DEV)
            self._shape()
        for ns in (self.snd_ns, self.rcv_ns):
            self._tune_tcp(ns)

    def namespaces(self):
        """The namespaces of this topology (planned or created)."""
        return [ns for ns in (self.snd_ns, self.rtr_ns, self.rcv_ns) if ns]

    def _add_netns(self, ns):
        add_netns(ns)
        self._created.append(ns)

    @staticmethod
    def _link(ns_a, dev_a, ns_b, dev_b):
        _run(["ip", "-n", ns_a, "link", "add", dev_a, "type", "veth",
              "peer", "name", dev_b, "netns", ns_b])
        _run(["ip", "-n", ns_a, "link", "set", dev_a, "up"])
        _run(["ip", "-n", ns_b, "link", "set", dev_b, "up"])

    @staticmethod
    def _addr(ns, dev, addr):
        _run(["ip", "-n", ns, "addr", "add", f"{addr}/{SUBNET_PREFIX_LEN}", "dev", dev])

    @staticmethod
    def _route(ns, net, via):
        _run(["ip", "-n", ns, "route", "add", str(net), "via", str(via)])

    @staticmethod
    def _no_segmentation_offload(ns, dev):
        """Make the sender emit MTU-sized packets.

        With TSO/GSO a forwarded skb may be a 64 KB super-packet, which the
        bottleneck FIFO would queue and drop as one unit (tbf only splits
        skbs larger than its bucket). A router queues frames, so does ours.
        """
        netns_exec(ns, ["ethtool", "-K", dev, "tso", "off", "gso", "off"])

    def _shape(self):
        rate_bits_per_s = int(self.rate_mbit * 1_000_000)
        burst_bytes = max(TBF_BURST_MIN_BYTES, rate_bits_per_s // 8 * TBF_BURST_TIME_US // 1_000_000)
        _run(["ip", "netns", "exec", self.rtr_ns, "tc", "qdisc", "add",
              "dev", self.RTR_RCV_DEV, "root", "handle", "1:", "tbf",
              "rate", f"{rate_bits_per_s}bit", "burst", str(burst_bytes),
              "limit", str(self.buffer_bytes)])

    @staticmethod
    def _tune_tcp(ns):
        _sysctl(ns, {
            "net.ipv4.tcp_rmem": f"4096 131072 {TCP_MEM_MAX_BYTES}",
            "net.ipv4.tcp_wmem": f"4096 16384 {TCP_MEM_MAX_BYTES}",
            # Start every transfer from scratch, not from a cached ssthresh.
            "net.ipv4.tcp_no_metrics_save": 1,
        })

    # -- inspection --

    def bottleneck_stats(self):
        """Counters of the shaping qdisc: bytes, packets, drops, overlimits, backlog."""
        if self.rtr_ns is None:
            raise NetlabError(f"{self!r} has no bottleneck")
        cp = netns_exec(self.rtr_ns, ["tc", "-s", "-j", "qdisc", "show", "dev", self.RTR_RCV_DEV])
        for q in json.loads(cp.stdout):
            if q.get("kind") == "tbf":
                return {"bytes": q.get("bytes", 0), "packets": q.get("packets", 0),
                        "drops": q.get("drops", 0), "overlimits": q.get("overlimits", 0),
                        "backlog_bytes": q.get("backlog", 0)}
        raise NetlabError(f"no tbf qdisc on {self.rtr_ns}/{self.RTR_RCV_DEV}")

    # -- teardown --

    def close(self):
        """Delete every namespace this instance created; safe to call twice."""
        errors = []
        for ns in reversed(self._created):
            try:
                delete_netns(ns)
            except NetlabError as e:
                errors.append(str(e))
        self._created = []
        if errors:
            raise NetlabError("teardown incomplete: " + "; ".join(errors))


def default_buffer_bytes(rate_mbit):
    """Bottleneck buffer when none is given: rate x DEFAULT_BUFFER_RTT_MS."""
    bdp_bytes = int(rate_mbit * 1_000_000 / 8 * DEFAULT_BUFFER_RTT_MS / 1000)
    return max(bdp_bytes, BUFFER_MIN_BYTES)


def _subnet(index):
    first = int(ADDR_SPACE.network_address) + (index << (32 - SUBNET_PREFIX_LEN))
    net = ipaddress.ip_network((first, SUBNET_PREFIX_LEN))
    assert net.subnet_of(ADDR_SPACE), net
    return net


def delete_netns(ns):
    """Kill what still runs in ns (only ever the creator's own processes), delete it."""
    cp = _run(["ip", "netns", "pids", ns], check=False)
    for pid in cp.stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    cp = _run(["ip", "netns", "del", ns], check=False)
    if cp.returncode != 0 and ns in list_netns():
        raise NetlabError(f"cannot delete namespace {ns}: {cp.stderr.strip()}")


# ---- cgroups ----------------------------------------------------------------------

# Where the cgroup v2 hierarchy is: pure v2 layout, then the hybrid layout's.
CGROUP2_ROOTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
CGROUP2_FSTYPE = "cgroup2fs"            # stat -f -c %T
CGROUP_RMDIR_TRIES = 50
CGROUP_RMDIR_WAIT_S = 0.1               # members leave a cgroup asynchronously


def cgroup2_root():
    """The mounted cgroup v2 hierarchy; NetlabError if there is none
    (bbrctl attach mounts one on a hybrid layout)."""
    for root in CGROUP2_ROOTS:
        cp = _run(["stat", "-f", "-c", "%T", str(root)], check=False)
        if cp.stdout.strip() == CGROUP2_FSTYPE:
            return root
    raise NetlabError(f"no cgroup2 hierarchy mounted (looked at "
                      f"{', '.join(map(str, CGROUP2_ROOTS))})")


def remove_cgroup(path, kill=False):
    """Remove the test's cgroup path, retrying while its members exit; with
    kill, SIGKILL what still runs in it first (only the creator's processes)."""
    path = Path(path)
    if not path.exists():
        return
    if kill:
        for pid in (path / "cgroup.procs").read_text().split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
    for _ in range(CGROUP_RMDIR_TRIES):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(CGROUP_RMDIR_WAIT_S)


# ---- transfers ------------------------------------------------------------------

def run_transfer(topo, cc, nbytes=None, seconds=None, port=5201,
                 sample_cb=None, sample_interval=0.2, timeout=None):
    """One bulk TCP transfer from topo.snd_ns to topo.rcv_ns using CC cc.

    Exactly one of nbytes (send that many bytes) or seconds (send for that
    long) must be given. sample_cb, if given, is called with no arguments
    every sample_interval seconds while the transfer runs; its return values
    are collected in order. timeout (seconds) bounds the whole transfer; by
    default the expected duration plus TRANSFER_GRACE_S.

    Returns {
      "bytes_sent":     bytes the client wrote (all acknowledged),
      "bytes_received": bytes the server read until EOF,
      "seconds":        receiver time from accept to the last data byte,
      "mbps":           goodput, bytes_received * 8 / seconds / 1e6,
      "sender_seconds": client time from connect to all data acknowledged,
      "cc":             getsockopt(TCP_CONGESTION) on the sending socket,
      "tcp_info":       sender TCP_INFO at the end (see xfer.TCP_INFO_REPORTED;
                        units in the names; "retransmits" = tcpi_total_retrans),
      "samples":        [sample_cb() results],
    }
    Raises TransferError (with .errno, e.g. ENOENT for an unknown CC) on failure.
    """
    if (nbytes is None) == (seconds is None):
        raise ValueError("give exactly one of nbytes or seconds")
    timeout = timeout or _default_timeout(topo, nbytes, seconds)
    amount = ["--bytes", str(int(nbytes))] if nbytes is not None else ["--seconds", str(seconds)]
    server = client = None
    samples = []
    try:
        server = _spawn_xfer(topo.rcv_ns, ["server", "--addr", topo.rcv_addr, "--port", str(port),
                                           "--timeout", str(timeout)])
        client = _spawn_xfer(topo.snd_ns, ["client", "--addr", topo.rcv_addr, "--port", str(port),
                                           "--cc", cc, "--timeout", str(timeout), *amount])
        _sample_until_exit(client, time.monotonic() + timeout, sample_cb, sample_interval, samples)
        try:
            cli = _collect(client, "client", SERVER_STOP_S)
        except TransferError:
            _raise_server_error(server)     # the root cause, if the server failed first
            raise
        srv = _collect(server, "server", SERVER_STOP_S)
    finally:
        for proc in (client, server):
            _reap(proc)
    return _result(cli, srv, samples)


def _default_timeout(topo, nbytes, seconds):
    if seconds is not None:
        return seconds + TRANSFER_GRACE_S
    if topo.rate_mbit:
        return nbytes * 8 / (topo.rate_mbit * 1e6) * 2 + TRANSFER_GRACE_S
    return NBYTES_TIMEOUT_S


def _spawn_xfer(ns, args):
    argv = ["ip", "netns", "exec", ns, sys.executable, str(XFER_SCRIPT), *args]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _sample_until_exit(proc, deadline, sample_cb, interval_s, samples):
    next_sample = time.monotonic() + interval_s
    while proc.poll() is None:
        now = time.monotonic()
        if now >= deadline:
            raise TransferError("transfer timed out: client still running at its deadline",
                                stage="timeout")
        if sample_cb is not None and now >= next_sample:
            samples.append(sample_cb())
            next_sample += interval_s
            if next_sample < time.monotonic():      # a slow callback: do not catch up
                next_sample = time.monotonic() + interval_s
            continue
        nap = POLL_S if sample_cb is None else min(POLL_S, next_sample - now)
        time.sleep(max(nap, 0))


def _collect(proc, role, timeout_s):
    """The JSON line of a finished (or finishing) xfer.py; raise on its error."""
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise TransferError(f"{role} did not finish within {timeout_s} s", stage="timeout") from None
    lines = [line for line in out.splitlines() if line.strip()]
    try:
        doc = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        doc = None
    if doc is None:
        raise TransferError(f"{role} exited {proc.returncode} without a result: {err.strip()}")
    if "error" in doc or proc.returncode != 0:
        msg = doc.get("error", f"exited {proc.returncode}")
        raise TransferError(f"{role}: {msg}" + (f" ({doc['errno_name']})" if "errno_name" in doc else ""),
                            errno_=doc.get("errno"), errno_name=doc.get("errno_name"),
                            stage=doc.get("stage"))
    return doc


def _raise_server_error(server):
    """If the server already exited with an error, raise that error."""
    if server.poll() not in (None, 0):
        _collect(server, "server", SERVER_STOP_S)


def _reap(proc):
    if proc is None:
        return
    if proc.poll() is None:
        proc.kill()
    try:
        proc.communicate(timeout=SERVER_STOP_S)
    except (subprocess.TimeoutExpired, ValueError):
        pass


def _result(cli, srv, samples):
    seconds = srv["seconds"]
    received = srv["bytes_received"]
    return {
        "bytes_sent": cli["bytes_sent"],
        "bytes_received": received,
        "seconds": seconds,
        "mbps": received * 8 / seconds / 1e6 if seconds > 0 else 0.0,
        "sender_seconds": cli["seconds"],
        "cc": cli["cc"],
        "tcp_info": cli["tcp_info"],
        "samples": samples,
    }


# ---- congestion controls and struct_ops ---------------------------------------------

def available_ccs():
    """Names in /proc/sys/net/ipv4/tcp_available_congestion_control."""
    return CC_LIST_PATH.read_text().split()


def struct_ops_ids():
    """Ids of all struct_ops maps the kernel holds (for leak checks)."""
    cp = _run(["bpftool", "-j", "struct_ops", "show"])
    return {entry["id"] for entry in json.loads(cp.stdout or "[]")}


def ensure_bpffs():
    """Mount bpffs on /sys/fs/bpf unless it already is (it is left mounted)."""
    if _is_bpffs(BPFFS_ROOT):
        return
    _run(["mount", "-t", "bpf", "bpf", str(BPFFS_ROOT)])
    if not _is_bpffs(BPFFS_ROOT):
        raise NetlabError(f"mounted bpffs but {BPFFS_ROOT} still is not one")


def _is_bpffs(path):
    with open("/proc/self/mounts") as f:
        return any(fields[1] == str(path) and fields[2] == "bpf"
                   for fields in (line.split() for line in f))


def _wait_for(pred, timeout_s):
    deadline = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True


class _Registration:
    """A CC registered for the duration of a with-block; see the subclasses.

    Subclasses implement _register() and _release(). Entering checks that
    the CC appeared in the available list; leaving (or unregister()) releases
    it and waits until every name it added has left the list again, also
    when registration failed half-way.
    """

    def __init__(self, obj, cc_name=None):
        self.obj = Path(obj)
        self.cc_name = cc_name
        self._added = set()     # CC names that appeared when registering
        self._active = False

    def __enter__(self):
        if not self.obj.is_file():
            raise RegistrationError(f"{self.obj}: no such BPF object (run `make`)")
        ensure_bpffs()
        before = set(available_ccs())
        if self.cc_name in before:
            raise RegistrationError(
                f"CC {self.cc_name!r} is already registered (a leftover pin under "
                f"{BPFFS_ROOT}? `bpftool link show`)")
        self._active = True     # from here on, leaving releases whatever was done
        try:
            self._register()
            self._added = set(available_ccs()) - before
            self._check_registered()
        except BaseException:
            self._unregister_quietly()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.unregister()
        else:
            self._unregister_quietly()      # do not hide the original error
        return False

    def _check_registered(self):
        if self.cc_name is None:
            if len(self._added) != 1:
                raise RegistrationError(f"{self.obj}: expected one new CC after registering, "
                                        f"got {sorted(self._added) or 'none'}; pass cc_name")
            self.cc_name = next(iter(self._added))
        elif self.cc_name not in self._added:
            raise RegistrationError(
                f"{self.obj} registered, but CC {self.cc_name!r} is not in {CC_LIST_PATH} "
                f"(new: {sorted(self._added) or 'none'}); wrong .name?")

    def unregister(self):
        """Release the CC; wait until its name has left the available list."""
        if not self._active:
            return
        self._active = False
        self._release()
        names = self._added | ({self.cc_name} if self.cc_name else set())
        if not _wait_for(lambda: not names & set(available_ccs()), UNREGISTER_TIMEOUT_S):
            raise RegistrationError(
                f"CC {sorted(names & set(available_ccs()))} still registered "
                f"{UNREGISTER_TIMEOUT_S} s after release (another pin or a netns "
                f"default holding it?)")

    def _unregister_quietly(self):
        try:
            self.unregister()
        except NetlabError as e:
            print(f"netlab: {e}", file=sys.stderr)

    def _register(self):
        raise NotImplementedError

    def _release(self):
        raise NotImplementedError


class StructOpsRegistration(_Registration):
    """Register a BPF object's struct_ops CC(s) with bpftool for a with-block.

    `bpftool struct_ops register OBJ PIN_DIR` pins one link per struct_ops
    map in a fresh PIN_DIR (/sys/fs/bpf/bbrbpf-test-<pid>-<n>); the CC stays
    registered while a pin exists. Exit removes the pins and PIN_DIR, then
    waits until the CC name is gone from the available list.

    cc_name: the CC's .name; if None, it is inferred as the one name that
    appeared in the available list (an object with several CCs needs it).
    Attributes: cc_name, pin_dir (Path), obj (Path).
    """

    def __init__(self, obj, cc_name=None, pin_prefix="bbrbpf-test"):
        super().__init__(obj, cc_name)
        self.pin_dir = _fresh_pin_dir(pin_prefix)

    def _register(self):
        _run(["bpftool", "struct_ops", "register", str(self.obj), str(self.pin_dir)])

    def _release(self):
        if self.pin_dir.is_dir():
            for pin in self.pin_dir.iterdir():
                pin.unlink()
            self.pin_dir.rmdir()


def _fresh_pin_dir(prefix):
    with _counter_lock:
        for n in itertools.count():
            path = BPFFS_ROOT / f"{prefix}-{os.getpid()}-{n}"
            if not path.exists() and path not in _reserved_pin_dirs:
                _reserved_pin_dirs.add(path)
                return path


_reserved_pin_dirs = set()


class BbrctlRegistration(_Registration):
    """Register a CC with the project's loader for a with-block.

    `bbrctl load --obj OBJ` pins the link (and the state iterator, so that
    `bbrctl stat` works) under /sys/fs/bpf/bbr-bpf/NAME; exit runs
    `bbrctl unload` for what it loaded. Same interface as
    StructOpsRegistration; pin_dir is that directory.
    """

    def __init__(self, obj, cc_name=None, bbrctl=DEFAULT_BBRCTL):
        super().__init__(obj, cc_name)
        self.bbrctl = Path(bbrctl)
        self._loaded = []

    @property
    def pin_dir(self):
        return BBRCTL_PIN_ROOT / self.cc_name if self.cc_name else None

    def _loaded_names(self):
        cp = _run([str(self.bbrctl), "--json", "list"])
        return {entry["name"] for entry in json.loads(cp.stdout or "[]")}

    def _register(self):
        before = self._loaded_names()
        try:
            _run([str(self.bbrctl), "load", "--obj", str(self.obj)])
        finally:
            self._loaded = sorted(self._loaded_names() - before)

    def _release(self):
        if self._loaded:
            _run([str(self.bbrctl), "unload", *self._loaded])
            self._loaded = []


def bbrctl_can_load(bbrctl=DEFAULT_BBRCTL):
    """Whether bbrctl exists and has `load --obj`."""
    if not os.access(bbrctl, os.X_OK):
        return False
    cp = _run([str(bbrctl), "help", "load"], check=False)
    return cp.returncode == 0 and "--obj" in cp.stdout


def register_cc(obj, cc_name=None, loader="auto", bbrctl=DEFAULT_BBRCTL):
    """A registration context manager: loader is "bbrctl", "bpftool" or "auto"
    (bbrctl when bbrctl_can_load(), else bpftool)."""
    if loader == "auto":
        loader = "bbrctl" if bbrctl_can_load(bbrctl) else "bpftool"
    if loader == "bbrctl":
        return BbrctlRegistration(obj, cc_name, bbrctl)
    if loader == "bpftool":
        return StructOpsRegistration(obj, cc_name)
    raise ValueError(f"unknown loader {loader!r} (bbrctl, bpftool or auto)")
