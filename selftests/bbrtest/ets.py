# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Forged ETS options (docs/ets.md) for live connections: what an on-path
attacker can do to the option, made from a captured segment with scapy.

    variants = malformed_variants(pure_ack)       # scapy packet, server -> client
    inject(server_ns, variants.values())          # sent from inside server_ns

Used by selftests/integration/test_ets.py (each variant counted and
ignored) and the soak (selftests/soak), which injects them into live
connections while everything else runs. scapy is imported only when a
function needs it.
"""

import subprocess

from . import netns
from .base import BbrtestError

ETS_KIND, ETS_EXID = 254, 0x4554
INJECT_TIMEOUT_S = 30

# Run inside a namespace with python_in. Each argument is
# HEX[,OFFSET,DELTA_US]: an IPv4 packet's bytes, and where to write a TSecr
# of CLOCK_MONOTONIC (the ETS clock) + DELTA_US just before sending it. The
# bytes go out as they are, on a raw socket (IP_HDRINCL): only the TCP
# checksum is computed here, since scapy, rebuilding a packet it parsed,
# rewrites what it takes for a mistake (an option of length 0 becomes 2)
# and the damage would never reach the program under test.
INJECT = r"""
import socket, sys, time

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(int.from_bytes(b[i:i + 2], "big") for i in range(0, len(b), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s & 0xFFFF).to_bytes(2, "big")

sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
for a in sys.argv[1:]:
    h, *patch = a.split(",")
    b = bytearray(bytes.fromhex(h))
    if patch:
        off, delta = int(patch[0]), int(patch[1])
        now = (time.monotonic_ns() // 1000 + delta) & 0xFFFFFFFF
        b[off:off + 4] = now.to_bytes(4, "big")
    ihl = (b[0] & 0xF) * 4
    total = int.from_bytes(b[2:4], "big")
    b[ihl + 16:ihl + 18] = b"\0\0"
    pseudo = bytes(b[12:20]) + bytes([0, 6]) + (total - ihl).to_bytes(2, "big")
    b[ihl + 16:ihl + 18] = csum(pseudo + bytes(b[ihl:total]))
    sock.sendto(bytes(b), (socket.inet_ntoa(bytes(b[16:20])), 0))
sock.close()
"""


def malformed_variants(pkt):
    """Injector arguments: copies of a server->client pure ACK with its ETS
    option damaged, by name.

    The sender bounds the age of an echo (2 srtt + 200 ms), and the copies
    leave well after the original: the injector writes each copy's TSecr
    from the ETS clock at send time (1 ms ago), so that only the damage
    decides what happens to it. forged_old echoes 59 s ago and tsecr_future
    10 s ahead on purpose; the kind-254 options of length 0 and 2 have no
    TSecr field left to write.

    What the receiving ETS program does with each (docs/ets.md): four
    parse rejections by length or as short (wrong_length, truncated,
    kind254_len0, kind254_len2), one by ExID (other_exid), four sample
    rejections (tsecr_future, forged_old, reserved_unit, absurd_ecrdel);
    none is a sample, none turns ETS off (other_exid counts towards the
    missing run, which the next good segment resets).

    The copies are the captured bytes with the damage written in: no
    packet library rebuilds them (which would repair some of the damage).
    """
    from scapy.all import IP
    raw = bytes(pkt[IP])
    ihl = (raw[0] & 0xF) * 4
    doff = (raw[ihl + 12] >> 4) * 4
    opts = raw[ihl + 20: ihl + doff]
    i = opts.find(bytes([ETS_KIND, 14, ETS_EXID >> 8, ETS_EXID & 0xFF]))
    if i < 0:
        raise BbrtestError("no ETS option to damage in the segment")
    base = ihl + 20 + i

    def mod(edits, tsecr_delta_us=-1000):
        """The packet's own bytes with edits at offsets of the option; the
        injector computes the TCP checksum (the IP one is the kernel's)."""
        b = bytearray(raw)
        for off, val in edits:
            b[base + off: base + off + len(val)] = val
        arg = bytes(b).hex()
        if tsecr_delta_us is not None:
            arg += f",{base + 8},{tsecr_delta_us}"
        return arg
    ms_8191 = ((1 << 14) | (8191 << 1)).to_bytes(2, "big")
    nops = bytes([1] * 12)
    return {
        "wrong_length": mod([(1, b"\x0c"), (12, b"\x01\x01")]),
        "absurd_ecrdel": mod([(12, ms_8191)]),
        "tsecr_future": mod([], 10_000_000),
        "truncated": mod([(1, bytes([14 + (doff - 20 - i - 14) + 2]))]),
        "reserved_unit": mod([(12, (3 << 14).to_bytes(2, "big"))]),
        "forged_old": mod([], -59_000_000),
        "kind254_len2": mod([(1, b"\x02"), (2, nops)], None),
        "kind254_len0": mod([(1, b"\x00"), (2, nops)], None),
        "other_exid": mod([(3, b"\x55")], None),
    }


def without_option(pkt):
    """Injector argument: a copy of pkt (a pure ACK with an ETS option)
    with the option overwritten by NOPs: a segment that lacks ETS, yet
    takes the kernel's slow path (its header is as long as before), so the
    receiving program counts it as missing."""
    from scapy.all import IP
    raw = bytearray(bytes(pkt[IP]))
    ihl = (raw[0] & 0xF) * 4
    doff = (raw[ihl + 12] >> 4) * 4
    i = bytes(raw[ihl + 20: ihl + doff]).find(bytes([ETS_KIND, 14, ETS_EXID >> 8,
                                                     ETS_EXID & 0xFF]))
    if i < 0:
        raise BbrtestError("no ETS option to remove from the segment")
    base = ihl + 20 + i
    raw[base: base + 14] = bytes([1]) * 14
    return bytes(raw).hex()


def inject(ns, args, timeout=INJECT_TIMEOUT_S):
    """Send the injector arguments (malformed_variants' values) from inside
    namespace ns; BbrtestError with the injector's stderr if that fails."""
    proc = netns.python_in(ns, INJECT, *args)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise BbrtestError(f"injecting into {ns} took longer than {timeout} s") from None
    if proc.returncode != 0:
        raise BbrtestError(f"injecting into {ns} failed: {err.strip()}")
