# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Topology: a sender and a receiver namespace, optionally with a shaping
router between them."""

import ipaddress
import itertools
import os
import threading

from . import netns
from .base import BbrtestError, SetupClose
from .netns import ADDR_SPACE

SUBNET_PREFIX_LEN = 24
# Each topology takes a pair of /24s (sender side, receiver side): 256 pairs.
SUBNET_PAIRS = 2 ** (SUBNET_PREFIX_LEN - ADDR_SPACE.prefixlen) // 2
HOST_INDEX = 1                  # sender / receiver: .1 of their subnet
ROUTER_INDEX = 254              # router: .254 on each subnet
DIRECT_RCV_INDEX = 2            # receiver on the sender's subnet when unshaped

# Default bottleneck buffer: one BDP of a 20 ms path at the configured rate.
# The namespaces add no delay of their own (tens of µs RTT), so a "real"
# BDP would be a few packets; 20 ms is the base RTT the lab emulates.
DEFAULT_BUFFER_RTT_MS = 20
BUFFER_MIN_BYTES = 10 * netns.ETH_FRAME_MAX_BYTES
# Socket buffer ceilings in the end namespaces: 2 x (BDP + buffer) at 1 Gbit/s
# and 40 ms + 40 ms of buffer is about 20 MB; the kernel default 6 MB limited
# such runs to 611 Mbit/s on the reference machine.
TCP_MEM_MAX_BYTES = 32 * 1024 * 1024

_instance_counter = itertools.count()
_counter_lock = threading.Lock()


def _next_instance():
    with _counter_lock:
        return next(_instance_counter)


def default_buffer_bytes(rate_mbit):
    """Bottleneck buffer when none is given: rate x DEFAULT_BUFFER_RTT_MS."""
    bdp_bytes = int(rate_mbit * 1_000_000 / 8 * DEFAULT_BUFFER_RTT_MS / 1000)
    return max(bdp_bytes, BUFFER_MIN_BYTES)


def _subnet(index):
    first = int(ADDR_SPACE.network_address) + (index << (32 - SUBNET_PREFIX_LEN))
    net = ipaddress.ip_network((first, SUBNET_PREFIX_LEN))
    assert net.subnet_of(ADDR_SPACE), net
    return net


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
    and drops MTU-sized packets (netns.set_offloads).
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
        self._nss = netns.Namespaces()

    def __repr__(self):
        shape = (f"{self.rate_mbit} Mbit/s, {self.buffer_bytes} B buffer"
                 if self.rate_mbit else "unshaped")
        return f"<Topology {self.snd_ns}({self.snd_addr}) -> {self.rcv_ns}({self.rcv_addr}), {shape}>"

    def _setup(self):
        for ns in self.namespaces():
            self._nss.add(ns)
        cidr = f"/{SUBNET_PREFIX_LEN}"
        if self.rtr_ns is None:
            netns.veth(self.snd_ns, self.SND_DEV, self.rcv_ns, self.RCV_DEV)
            netns.add_addr(self.snd_ns, self.SND_DEV, self.snd_addr + cidr)
            netns.add_addr(self.rcv_ns, self.RCV_DEV, self.rcv_addr + cidr)
        else:
            snd_gw, rcv_gw = self.snd_net[ROUTER_INDEX], self.rcv_net[ROUTER_INDEX]
            netns.veth(self.snd_ns, self.SND_DEV, self.rtr_ns, self.RTR_SND_DEV)
            netns.veth(self.rtr_ns, self.RTR_RCV_DEV, self.rcv_ns, self.RCV_DEV)
            netns.add_addr(self.snd_ns, self.SND_DEV, self.snd_addr + cidr)
            netns.add_addr(self.rcv_ns, self.RCV_DEV, self.rcv_addr + cidr)
            netns.add_addr(self.rtr_ns, self.RTR_SND_DEV, f"{snd_gw}{cidr}")
            netns.add_addr(self.rtr_ns, self.RTR_RCV_DEV, f"{rcv_gw}{cidr}")
            netns.add_route(self.snd_ns, self.rcv_net, via=snd_gw)
            netns.add_route(self.rcv_ns, self.snd_net, via=rcv_gw)
            netns.sysctl(self.rtr_ns, {"net.ipv4.ip_forward": 1})
            netns.set_offloads(self.snd_ns, self.SND_DEV, False)
            self._shape()
        for ns in (self.snd_ns, self.rcv_ns):
            netns.tune_tcp(ns, TCP_MEM_MAX_BYTES)

    def _shape(self):
        netns.add_tbf(self.rtr_ns, self.RTR_RCV_DEV, self.rate_mbit, self.buffer_bytes)

    def namespaces(self):
        """The namespaces of this topology (planned or created)."""
        return [ns for ns in (self.snd_ns, self.rtr_ns, self.rcv_ns) if ns]

    def bottleneck_stats(self):
        """Counters of the shaping qdisc: bytes, packets, drops, overlimits, backlog."""
        if self.rtr_ns is None:
            raise BbrtestError(f"{self!r} has no bottleneck")
        stats = netns.tbf_stats(self.rtr_ns, self.RTR_RCV_DEV)
        if stats is None:
            raise BbrtestError(f"no tbf qdisc on {self.rtr_ns}/{self.RTR_RCV_DEV}")
        return stats

    def close(self):
        """Delete every namespace this instance created; safe to call twice."""
        self._nss.close()
