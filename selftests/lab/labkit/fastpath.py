# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The lab's kernel fast path: shaper + BPF marker on a router's egress device.

For runs that need no added delay (µs-RTT datacenter runs, many flows,
multi-Gbit), the userspace emulator is unnecessary: a router namespace
shapes with tbf (or htb + bfifo) and the clsact egress program
selftests/lab/marker/marker.bpf.o marks CE from a virtual queue and drops at
random (see that file's comment for the rules).

    with FastPath(topo.rtr_ns, topo.bottleneck_dev, rate_mbit=100,
                  buffer_bytes=250_000, ecn={"mode": "step", "k_us": 2000},
                  loss=0.001) as fp:
        ... traffic ...
        print(fp.counters())   # {"pkts":..,"mark_step":..,"drop_loss":..,...}
        h = fp.sojourn_hist()  # packets per bucket of the queue each one met
        print(soj_percentiles_us(h))   # p50, p95, p99 in µs

ecn: None, {"mode": "step", "k_us": K}, {"mode": "phantom", "gamma": 0.95,
"thresh_bytes": B}, or {"mode": "phantom_rate", "gamma": 0.95,
"window_us": 5000}. loss: None or a probability in [0, 1).

The shaper replaces the device's root qdisc (a bbrtest.Topology's own tbf,
for instance); on exit the root qdisc and clsact are deleted (the device is
left with its default qdisc) and the program and its maps go with the
filter. Nothing is pinned: the maps are found through the filter's program
id and read with bpftool by id. GSO: the shaper queues what it is given,
so the sender's interface must have TSO/GSO off (Topology does that), or
the tbf bucket must cover a 64 KB skb.
"""

import json
import struct
import time
from pathlib import Path

from bbrtest import BbrtestError, SetupClose, run
from bbrtest.netns import ETH_FRAME_MAX_BYTES, add_tbf, netns_exec, tbf_burst_bytes

MARKER_OBJ = Path(__file__).resolve().parents[1] / "marker" / "marker.bpf.o"
# struct marker_cfg in marker.bpf.c
CFG_FORMAT = "<QQQIIIIQI4x"
MARK_STEP, MARK_PHANTOM_Q, MARK_PHANTOM_RATE = 1, 2, 4
GAMMA_UNIT = 1000
LOSS_SCALE = 2 ** 32
DEFAULT_PHANTOM_THRESH_BYTES = 3 * ETH_FRAME_MAX_BYTES   # HULL-like: a few packets
DEFAULT_WINDOW_US = 5000                                 # the 5 ms rate window
# enum counter in marker.bpf.c, in order
COUNTERS = ("pkts", "bytes", "drop_loss", "mark_step", "mark_phantom",
            "want_not_ect", "vq_over_k", "vq_full", "soj_pkts", "soj_sum_ns")
# soj_hist's layout (SOJ_* in marker.bpf.c): 1 us buckets below 64 us, then
# 16 per power of two for 12 octaves; the last bucket is open-ended.
SOJ_LINEAR_US = 64
SOJ_SUB_BUCKETS = 16
SOJ_OCTAVES = 12
SOJ_BUCKETS = SOJ_LINEAR_US + SOJ_OCTAVES * SOJ_SUB_BUCKETS
MAP_GONE_TIMEOUT_S = 3.0


class FastPathError(BbrtestError):
    pass


def soj_bucket_edges_us():
    """Lower edge and width (µs) of each soj_hist bucket, in order."""
    edges = [(float(u), 1.0) for u in range(SOJ_LINEAR_US)]
    for octave in range(SOJ_OCTAVES):
        base = SOJ_LINEAR_US << octave
        width = base / SOJ_SUB_BUCKETS
        edges += [(base + i * width, width) for i in range(SOJ_SUB_BUCKETS)]
    return edges


def soj_percentiles_us(counts, qs=(0.5, 0.95, 0.99)):
    """Percentiles (µs) of a soj_hist count vector, linear within a bucket;
    None for each when it holds no packet."""
    total = sum(counts)
    if not total:
        return [None for _ in qs]
    edges = soj_bucket_edges_us()
    out = []
    for q in qs:
        want, acc = q * total, 0
        for (lo, width), n in zip(edges, counts):
            if n and acc + n >= want:
                out.append(lo + width * (want - acc) / n)
                break
            acc += n
        else:
            out.append(edges[-1][0])
    return out


def soj_mean_us(counts):
    """Mean (µs) of a soj_hist count vector, each bucket at its middle; None
    when it holds no packet."""
    total = sum(counts)
    if not total:
        return None
    return sum((lo + w / 2) * n for (lo, w), n in zip(soj_bucket_edges_us(), counts)) / total


def _percpu_sum(entry):
    return sum(v["value"] if isinstance(v["value"], int) else
               int.from_bytes(bytes(int(x, 16) for x in v["value"]), "little")
               for v in entry.get("values", []))


def _key_index(key):
    return key if isinstance(key, int) else int.from_bytes(
        bytes(int(x, 16) for x in key), "little")


def config_bytes(rate_mbit, buffer_bytes, ecn=None, loss=None):
    """Pack struct marker_cfg from the FastPath arguments (raises ValueError)."""
    rate_Bps = int(rate_mbit * 1e6 / 8)
    k_us = mode = gamma_milli = window_us = thresh = 0
    if ecn:
        kind = ecn.get("mode")
        if kind == "step":
            mode, k_us = MARK_STEP, int(ecn["k_us"])
            if k_us <= 0:
                raise ValueError("ecn step k_us must be positive")
        elif kind in ("phantom", "phantom_rate"):
            gamma = float(ecn.get("gamma", 0.95))
            if not 0 < gamma <= 1:
                raise ValueError(f"ecn gamma must be in (0, 1], got {gamma}")
            gamma_milli = round(gamma * GAMMA_UNIT)
            if kind == "phantom":
                mode = MARK_PHANTOM_Q
                thresh = int(ecn.get("thresh_bytes", DEFAULT_PHANTOM_THRESH_BYTES))
            else:
                mode = MARK_PHANTOM_RATE
                window_us = int(ecn.get("window_us", DEFAULT_WINDOW_US))
        else:
            raise ValueError(f"ecn mode must be step, phantom or phantom_rate, got {kind!r}")
    # The step rule's counter (vq_over_k) needs a K even without marking.
    if not k_us:
        k_us = int(ecn.get("k_us", 0)) if ecn else 0
    loss_p32 = 0
    if loss:
        if not 0 <= loss < 1:
            raise ValueError(f"loss must be in [0, 1), got {loss}")
        loss_p32 = min(int(loss * LOSS_SCALE), LOSS_SCALE - 1)
    return struct.pack(CFG_FORMAT, rate_Bps, int(buffer_bytes), tbf_burst_bytes(rate_mbit),
                       k_us, mode,
                       gamma_milli, window_us, thresh, loss_p32)


class FastPath(SetupClose):
    """Shaper + marker on ns/dev; a context manager that removes both on exit."""

    def __init__(self, ns, dev, rate_mbit, buffer_bytes, ecn=None, loss=None,
                 shaper="tbf", obj=MARKER_OBJ):
        if rate_mbit <= 0 or buffer_bytes < ETH_FRAME_MAX_BYTES:
            raise ValueError("rate_mbit must be > 0 and buffer_bytes at least one frame")
        if shaper not in ("tbf", "htb"):
            raise ValueError(f"shaper must be tbf or htb, got {shaper!r}")
        self.ns, self.dev = ns, dev
        self.rate_mbit, self.buffer_bytes = rate_mbit, int(buffer_bytes)
        self.shaper, self.obj = shaper, Path(obj)
        self.cfg = config_bytes(rate_mbit, buffer_bytes, ecn, loss)
        self.prog_id = None
        self.map_ids = {}
        self._root = self._clsact = False

    def _tc(self, *args, check=True):
        return netns_exec(self.ns, ["tc", *args], check=check)

    def __enter__(self):
        if not self.obj.exists():
            raise FastPathError(f"{self.obj} not built: run make")
        return super().__enter__()

    def _setup(self):
        """Called by SetupClose.__enter__, which closes on failure."""
        self._install_shaper()
        self._install_marker()
        self._configure()

    def _install_shaper(self):
        rate = f"{int(self.rate_mbit * 1e6)}bit"
        # Whatever root qdisc was there (a Topology's tbf) goes: "replace"
        # cannot turn a tbf 1: into an htb 1:.
        self._tc("qdisc", "del", "dev", self.dev, "root", check=False)
        self._root = True
        if self.shaper == "tbf":
            add_tbf(self.ns, self.dev, self.rate_mbit, self.buffer_bytes)
        else:
            self._tc("qdisc", "add", "dev", self.dev, "root", "handle", "1:", "htb",
                     "default", "1")
            self._tc("class", "add", "dev", self.dev, "parent", "1:", "classid", "1:1",
                     "htb", "rate", rate, "ceil", rate,
                     "burst", str(tbf_burst_bytes(self.rate_mbit)),
                     "cburst", str(tbf_burst_bytes(self.rate_mbit)))
            self._tc("qdisc", "add", "dev", self.dev, "parent", "1:1", "handle", "10:",
                     "bfifo", "limit", str(self.buffer_bytes))

    def _install_marker(self):
        self._tc("qdisc", "add", "dev", self.dev, "clsact")
        self._clsact = True
        self._tc("filter", "add", "dev", self.dev, "egress", "bpf", "direct-action",
                 "obj", str(self.obj), "sec", "tc")
        out = json.loads(self._tc("-j", "filter", "show", "dev", self.dev, "egress").stdout)
        ids = [f["options"]["prog"]["id"] for f in out if "prog" in f.get("options", {})]
        if len(ids) != 1:
            raise FastPathError(f"expected one marker program on {self.ns}/{self.dev}, got {ids}")
        self.prog_id = ids[0]
        prog = json.loads(run(["bpftool", "-j", "prog", "show", "id", str(self.prog_id)]).stdout)
        for mid in prog.get("map_ids", []):
            m = json.loads(run(["bpftool", "-j", "map", "show", "id", str(mid)]).stdout)
            self.map_ids[m["name"]] = mid
        missing = {"cfg", "vstate", "cnt", "soj_hist"} - set(self.map_ids)
        if missing:
            raise FastPathError(f"marker program {self.prog_id} lacks maps {missing}")

    def _configure(self):
        run(["bpftool", "map", "update", "id", str(self.map_ids["cfg"]),
              "key", "hex", "00", "00", "00", "00",
              "value", "hex", *[f"{b:02x}" for b in self.cfg]])

    def counters(self, shaper=True):
        """Marker counters summed over CPUs, plus (shaper) the shaper's drops
        and backlog."""
        out = dict(zip(COUNTERS, self._percpu_array("cnt", len(COUNTERS))))
        if shaper:
            out.update(self.shaper_stats())
        return out

    def sojourn_hist(self):
        """soj_hist summed over CPUs: packets per bucket (soj_bucket_edges_us)."""
        return self._percpu_array("soj_hist", SOJ_BUCKETS)

    def _percpu_array(self, name, n):
        """The first n entries of the per-CPU array map name, summed over CPUs."""
        dump = json.loads(run(["bpftool", "-j", "map", "dump", "id",
                                str(self.map_ids[name])]).stdout)
        out = [0] * n
        for entry in dump:
            idx = _key_index(entry["key"])
            if idx < n:
                out[idx] = _percpu_sum(entry)
        return out

    def shaper_stats(self):
        qs = json.loads(self._tc("-s", "-j", "qdisc", "show", "dev", self.dev).stdout)
        drops = sent = backlog = 0
        for q in qs:
            if q.get("kind") in ("tbf", "bfifo"):
                drops += q.get("drops", 0)
                sent = max(sent, q.get("bytes", 0))
                backlog = max(backlog, q.get("backlog", 0))
        return {"shaper_drops": drops, "shaper_bytes": sent, "shaper_backlog_bytes": backlog}

    def close(self):
        """Remove clsact (filter, program) and the root qdisc; safe to call twice."""
        errors = []
        if self._clsact:
            cp = self._tc("qdisc", "del", "dev", self.dev, "clsact", check=False)
            if cp.returncode:
                errors.append(cp.stderr.strip())
            self._clsact = False
        if self._root:
            cp = self._tc("qdisc", "del", "dev", self.dev, "root", check=False)
            if cp.returncode and "Cannot find device" not in cp.stderr:
                errors.append(cp.stderr.strip())
            self._root = False
        if self.prog_id is not None and not self._wait_gone():
            errors.append(f"marker program {self.prog_id} still loaded")
        if errors:
            raise FastPathError("fast path removal incomplete: " + "; ".join(errors))

    def _wait_gone(self):
        """The program and its maps are freed after an RCU grace period."""
        deadline = time.monotonic() + MAP_GONE_TIMEOUT_S
        while time.monotonic() < deadline:
            alive = run(["bpftool", "prog", "show", "id", str(self.prog_id)],
                         check=False).returncode == 0
            alive |= any(run(["bpftool", "map", "show", "id", str(m)], check=False).returncode == 0
                         for m in self.map_ids.values())
            if not alive:
                return True
            time.sleep(0.05)
        return False
