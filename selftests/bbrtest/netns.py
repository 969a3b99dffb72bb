# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Network namespaces, veth links, addresses, routes, sysctls, offloads and
the tbf bottleneck: the one implementation every topology is built from
(Topology here, the lab's EmulatedPath, the tests' own small setups).

Rules every helper keeps: traffic only between namespaces created here, on
198.18.0.0/15 (RFC 2544 benchmarking space); what a Namespaces group
created is deleted on close, with any process still running in it.
"""

import ipaddress
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from .base import BbrtestError, KernelLacks, SetupClose, run

ADDR_SPACE = ipaddress.ip_network("198.18.0.0/15")
NETNS_RUN_DIR = Path("/run/netns")
ETH_FRAME_MAX_BYTES = 1514      # what tbf charges per full-size packet on veth
# tbf bucket: TBF_BURST_TIME_US of tokens at the configured rate, at least
# two full frames. It must cover the qdisc watchdog's wake-up lateness, or the
# tokens a late wake-up would have earned are lost: on the 2-vCPU reference
# machine 1 ms gave 84-97 % of the ideal goodput, 4 ms gave 99.7-100.2 %
# (50 and 100 Mbit/s; reno, cubic and kernel bbr). A full bucket only drains
# at line rate after the queue was empty.
TBF_BURST_MIN_BYTES = 2 * ETH_FRAME_MAX_BYTES
TBF_BURST_TIME_US = 4000


def list_netns():
    """Names of the namespaces under /run/netns."""
    try:
        return sorted(p.name for p in NETNS_RUN_DIR.iterdir())
    except FileNotFoundError:
        return []


def netns_exec(ns, argv, **kw):
    """Run argv inside namespace ns (`ip netns exec`; see base.run for kw)."""
    return run(["ip", "netns", "exec", ns, *argv], **kw)


def add_netns(ns):
    """Create namespace ns with lo up and IPv6 off (no router solicitations
    or DAD on test links); BbrtestError if it exists. Deleted again if its
    configuration fails."""
    if ns in list_netns():
        raise BbrtestError(f"namespace {ns} already exists (left over from an "
                           f"earlier run? `ip netns del {ns}`)")
    run(["ip", "netns", "add", ns])
    try:
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
        sysctl(ns, {"net.ipv6.conf.all.disable_ipv6": 1,
                    "net.ipv6.conf.default.disable_ipv6": 1})
    except BaseException:
        delete_netns(ns)
        raise


def _descends_from(pid, ancestor):
    """Whether process pid is ancestor or one of its descendants."""
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])       # ppid, after "(comm)"
    return False


def delete_netns(ns):
    """Kill what still runs in ns, delete it.

    Only the caller's own processes (its descendants) are killed: a process
    of someone else may be in ns for a moment - `bbrctl stat`, `list` and
    `set --socket` enter every namespace under /run/netns in turn - and
    killing it would fail another run on the machine. The namespace goes
    once such a visitor has left."""
    cp = run(["ip", "netns", "pids", ns], check=False)
    for pid in cp.stdout.split():
        if not _descends_from(int(pid), os.getpid()):
            continue
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    cp = run(["ip", "netns", "del", ns], check=False)
    if cp.returncode != 0 and ns in list_netns():
        raise BbrtestError(f"cannot delete namespace {ns}: {cp.stderr.strip()}")


class Namespaces(SetupClose):
    """Namespaces created together and deleted together (newest first).

        with Namespaces("x1", "x2") as nss:     # or nss = Namespaces();
            ...                                 # nss.add("x1"); ...; nss.close()

    close() also works after a failed add and is safe to call twice.
    """

    def __init__(self, *names):
        self.names = names
        self.created = []

    def _setup(self):
        for ns in self.names:
            self.add(ns)

    def add(self, ns):
        add_netns(ns)
        self.created.append(ns)
        return ns

    def close(self):
        errors = []
        for ns in reversed(self.created):
            try:
                delete_netns(ns)
            except BbrtestError as e:
                errors.append(str(e))
        self.created = []
        if errors:
            raise BbrtestError("teardown incomplete: " + "; ".join(errors))


def sysctl(ns, settings):
    """Write {key: value} sysctls inside ns."""
    netns_exec(ns, ["sysctl", "-q", "-w", *(f"{k}={v}" for k, v in settings.items())])


def veth(ns_a, dev_a, ns_b, dev_b):
    """A veth pair dev_a (in ns_a) - dev_b (in ns_b), both up. On a kernel
    without veth (a module that is not there, e.g. in the kernel matrix's
    guests where Debian's archive has no modules package) an L2 netkit pair,
    which is built into Debian's kernels since 6.7, stands in for it."""
    cp = run(["ip", "-n", ns_a, "link", "add", dev_a, "type", "veth",
              "peer", "name", dev_b, "netns", ns_b], check=False)
    if cp.returncode != 0:
        if "Unknown device type" not in cp.stderr and "not supported" not in cp.stderr.lower():
            raise BbrtestError(f"veth {ns_a}/{dev_a} - {ns_b}/{dev_b}: {cp.stderr.strip()}")
        run(["ip", "-n", ns_a, "link", "add", dev_a, "type", "netkit", "mode", "l2",
             "peer", "name", dev_b, "netns", ns_b])
    run(["ip", "-n", ns_a, "link", "set", dev_a, "up"])
    run(["ip", "-n", ns_b, "link", "set", dev_b, "up"])


def link_up(ns, dev):
    run(["ip", "-n", ns, "link", "set", dev, "up"])


def add_addr(ns, dev, cidr):
    """Address cidr ("198.18.1.1/24") on dev in ns."""
    run(["ip", "-n", ns, "addr", "add", str(cidr), "dev", dev])


def add_route(ns, dst, via=None, dev=None, src=None):
    argv = ["ip", "-n", ns, "route", "add", str(dst)]
    for word, value in (("via", via), ("dev", dev), ("src", src)):
        if value is not None:
            argv += [word, str(value)]
    run(argv)


def set_offloads(ns, dev, on, features=("tso", "gso")):
    """Segmentation (and with "gro" receive) offloads of dev on or off.

    Off on a sender makes it emit MTU-sized packets: with TSO/GSO a
    forwarded skb may be a 64 KB super-packet, which a bottleneck FIFO would
    queue and drop as one unit (tbf only splits skbs larger than its
    bucket). A router queues frames, so does ours.
    """
    state = "on" if on else "off"
    netns_exec(ns, ["ethtool", "-K", dev, *(w for f in features for w in (f, state))])


def tune_tcp(ns, mem_max_bytes, core=False):
    """Socket buffer ceilings of mem_max_bytes (also net.core.*mem_max with
    core) and no cached metrics: every transfer starts from scratch, not from
    a cached ssthresh."""
    settings = {"net.ipv4.tcp_rmem": f"4096 131072 {mem_max_bytes}",
                "net.ipv4.tcp_wmem": f"4096 16384 {mem_max_bytes}",
                "net.ipv4.tcp_no_metrics_save": 1}
    if core:
        settings.update({"net.core.rmem_max": mem_max_bytes, "net.core.wmem_max": mem_max_bytes})
    sysctl(ns, settings)


def tbf_burst_bytes(rate_mbit):
    """tbf bucket for rate_mbit: TBF_BURST_TIME_US of tokens, at least two frames."""
    rate_bits_per_s = int(rate_mbit * 1_000_000)
    return max(TBF_BURST_MIN_BYTES, rate_bits_per_s // 8 * TBF_BURST_TIME_US // 1_000_000)


def add_tbf(ns, dev, rate_mbit, limit_bytes):
    """The bottleneck: tbf at rate_mbit as dev's root qdisc (handle 1:), a
    byte FIFO of limit_bytes."""
    cp = netns_exec(ns, ["tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "tbf",
                         "rate", f"{int(rate_mbit * 1_000_000)}bit",
                         "burst", str(tbf_burst_bytes(rate_mbit)), "limit", str(int(limit_bytes))],
                    check=False)
    if cp.returncode != 0:
        if "qdisc kind is unknown" in cp.stderr:
            raise KernelLacks("this kernel has no tbf qdisc (sch_tbf) for the bottleneck")
        raise BbrtestError(f"tbf on {ns}/{dev}: {cp.stderr.strip()}")


def tbf_stats(ns, dev):
    """Counters of dev's tbf (bytes, packets, drops, overlimits, backlog_bytes,
    backlog_pkts), or None when it has none."""
    cp = netns_exec(ns, ["tc", "-s", "-j", "qdisc", "show", "dev", dev])
    for q in json.loads(cp.stdout or "[]"):
        if q.get("kind") == "tbf":
            return {"bytes": q.get("bytes", 0), "packets": q.get("packets", 0),
                    "drops": q.get("drops", 0), "overlimits": q.get("overlimits", 0),
                    "backlog_bytes": q.get("backlog", 0), "backlog_pkts": q.get("qlen", 0)}
    return None


def in_netns(ns, argv, cgroup=None):
    """argv to run argv inside namespace ns, and first inside cgroup (a path)
    when given. nsenter, not `ip netns exec`: the latter remounts /sys, which
    hides the cgroup2 hierarchy and /sys/fs/bpf from the process."""
    argv = ["nsenter", f"--net={NETNS_RUN_DIR / ns}", *map(str, argv)]
    if cgroup is not None:
        # a shell puts itself into the cgroup, then execs: every socket the
        # command creates belongs to the cgroup
        argv = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(cgroup), *argv]
    return argv


def popen_in(ns, argv, cgroup=None, **kw):
    """subprocess.Popen of argv inside ns (and cgroup); stdout and stderr are
    pipes of text unless kw says otherwise."""
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("text", True)
    return subprocess.Popen(in_netns(ns, argv, cgroup), **kw)


def python_in(ns, code, *args, cgroup=None, **kw):
    """`python3 -c code args...` inside ns (and cgroup): popen_in."""
    return popen_in(ns, [sys.executable, "-c", code, *args], cgroup=cgroup, **kw)


REAP_TIMEOUT_S = 5.0            # for a killed process to exit and close its pipes


def reap(*procs, timeout_s=REAP_TIMEOUT_S):
    """Stop processes of popen_in/python_in: kill those still running, then
    wait for each (reading what is left of its pipes). None is skipped, so
    a `finally:` can reap a process whose start failed."""
    for proc in procs:
        if proc is None:
            continue
        if proc.poll() is None:
            proc.kill()
        try:
            proc.communicate(timeout=timeout_s)
        except (subprocess.TimeoutExpired, ValueError):
            pass
