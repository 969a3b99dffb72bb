# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Reader for linkem's per-packet binary log (layout: linkem/linkem_log.h).

    log = read_log("pkts.bin")            # dict of numpy arrays, one per field
    qd = queueing_delay_us(log)            # per forwarded packet
    t, flows, mbps = delivered_per_bin(log, bin_ms=100)
    rates = drop_mark_rates(log)

Times are CLOCK_MONOTONIC ns, the same clock as bpf_ktime_get_ns().
"""

import numpy as np

MAGIC = 0x4d454b4c          # "LKEM", linkem_log.h LINKEM_LOG_MAGIC
VERSION = 1
HDR_BYTES = 16

# Must match struct linkem_log_rec (64 bytes, little-endian).
REC_DTYPE = np.dtype([
    ("t_arrive_ns", "<u8"), ("t_dequeue_ns", "<u8"),
    ("t_depart_ns", "<u8"), ("t_release_ns", "<u8"),
    ("saddr", ">u4"), ("daddr", ">u4"),       # network byte order on disk
    ("sport", "<u2"), ("dport", "<u2"), ("size", "<u2"),
    ("proto", "u1"), ("dir", "u1"), ("in_port", "u1"), ("out_port", "u1"),
    ("ecn_in", "u1"), ("ecn_out", "u1"), ("drop", "u1"), ("pad0", "u1"),
    ("pad1", "<u2"), ("delay_us", "<u4"), ("qbytes", "<u4"),
])
assert REC_DTYPE.itemsize == 64

DROP_NONE, DROP_LOSS, DROP_QUEUE, DROP_NOROUTE, DROP_POOL, DROP_WRITE = range(6)
DROP_NAMES = ["none", "loss", "queue", "noroute", "pool", "write"]
DIR_FWD, DIR_REV = 0, 1
ECN_CE = 3


class LogError(Exception):
    pass


def read_log(path):
    """Return a dict field -> numpy array (records in release/drop order)."""
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size < HDR_BYTES:
        raise LogError(f"{path}: too short for a linkem log header")
    magic, version, rec_size, _ = np.frombuffer(raw[:HDR_BYTES].tobytes(), "<u4")
    if magic != MAGIC or version != VERSION or rec_size != REC_DTYPE.itemsize:
        raise LogError(f"{path}: not a linkem v{VERSION} log (magic {magic:#x}, "
                       f"version {version}, record {rec_size} bytes)")
    body = raw[HDR_BYTES:]
    n = body.size // REC_DTYPE.itemsize
    recs = np.frombuffer(body[:n * REC_DTYPE.itemsize].tobytes(), dtype=REC_DTYPE)
    return {name: recs[name] for name in REC_DTYPE.names}


def select(log, mask):
    """The records where mask is true, as a log dict."""
    return {k: v[mask] for k, v in log.items()}


def forwarded(log, direction=None):
    mask = log["drop"] == DROP_NONE
    if direction is not None:
        mask &= log["dir"] == direction
    return select(log, mask)


def queueing_delay_us(log, direction=DIR_FWD):
    """Sojourn time in the bottleneck queue of each forwarded packet, µs,
    in arrival order; with the arrival times (ns)."""
    f = forwarded(log, direction)
    order = np.argsort(f["t_arrive_ns"], kind="stable")
    qd = (f["t_dequeue_ns"][order].astype(np.int64)
          - f["t_arrive_ns"][order].astype(np.int64)) / 1e3
    return f["t_arrive_ns"][order], qd


def lateness_us(log, direction=None):
    """Actual minus scheduled release of each forwarded packet (of one
    direction, or both), µs."""
    f = forwarded(log, direction)
    sched = f["t_depart_ns"].astype(np.int64) + f["delay_us"].astype(np.int64) * 1000
    return (f["t_release_ns"].astype(np.int64) - sched) / 1e3


def flow_keys(log):
    """A per-record flow key (saddr, daddr, sport, dport, proto) as one int."""
    return ((log["saddr"].astype(np.uint64) << np.uint64(32))
            ^ (log["daddr"].astype(np.uint64))
            ^ (log["sport"].astype(np.uint64) << np.uint64(48))
            ^ (log["dport"].astype(np.uint64) << np.uint64(16))
            ^ log["proto"].astype(np.uint64))


def delivered_per_bin(log, bin_ms=100, direction=DIR_FWD, t0_ns=None):
    """Delivered (departed) bits per flow per time bin.

    Returns (bin_start_s, flows, mbps) where flows is a list of
    (saddr, daddr, sport, dport, proto) tuples and mbps[i, j] is flow j's
    delivery rate in bin i, by departure time from the bottleneck."""
    f = forwarded(log, direction)
    if not f["size"].size:
        return np.zeros(0), [], np.zeros((0, 0))
    t = f["t_depart_ns"].astype(np.int64)
    t0 = int(t.min()) if t0_ns is None else int(t0_ns)
    bins = ((t - t0) // int(bin_ms * 1e6)).astype(np.int64)
    keep = bins >= 0
    keys = flow_keys(f)[keep]
    bins = bins[keep]
    uniq, inv = np.unique(keys, return_inverse=True)
    flows = []
    for k in uniq:
        i = int(np.argmax(keys == k))
        idx = np.flatnonzero(keep)[i]
        flows.append((int(f["saddr"][idx]), int(f["daddr"][idx]),
                      int(f["sport"][idx]), int(f["dport"][idx]),
                      int(f["proto"][idx])))
    out = np.zeros((int(bins.max()) + 1 if bins.size else 0, len(uniq)))
    np.add.at(out, (bins, inv), f["size"][keep].astype(np.float64) * 8)
    return (np.arange(out.shape[0]) * bin_ms / 1e3, flows,
            out / (bin_ms / 1e3) / 1e6)


def drop_mark_rates(log, direction=DIR_FWD):
    """Fractions of arrived packets dropped per reason and of forwarded
    ECN-capable packets marked CE by the emulator."""
    d = log["dir"] == direction
    n = int(d.sum())
    res = {"arrived": n}
    for code, name in enumerate(DROP_NAMES):
        if code:
            res[f"drop_{name}"] = float(((log["drop"] == code) & d).sum()) / n if n else 0.0
    fwd = d & (log["drop"] == DROP_NONE)
    ect = fwd & (log["ecn_in"] != 0) & (log["ecn_in"] != ECN_CE)
    marked = ect & (log["ecn_out"] == ECN_CE)
    res["forwarded"] = int(fwd.sum())
    res["ect_forwarded"] = int(ect.sum())
    res["ce_marked"] = int(marked.sum())
    res["mark_rate"] = float(marked.sum()) / int(ect.sum()) if ect.any() else 0.0
    res["drop_rate"] = float((d & (log["drop"] != DROP_NONE)).sum()) / n if n else 0.0
    return res
