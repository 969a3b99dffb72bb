# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Declarative lab scenarios: TOML files (tomllib) and their sweeps.

    name = "two-flows"               # the results folder's default name
    description = "..."
    duration_s = 20                  # each CC's run
    warmup_s = 5                     # metrics after warm-up start here
    ccs = ["bbr3", "bbr", "cubic"]   # compared; --cc on the command line overrides;
                                     # "bbr3:v3plus": bbr3 with that profile
    backend = "auto"                 # "linkem", "kernel" (no delay) or "auto"

    [link]
    rate_mbit = 50                   # or schedule = [{t_ms=0, mbit=10}, ...]
                                     # or trace = "file" (mahimahi format)
    rtt_ms = 40                      # base RTT
    buffer_bdp = 2                   # or buffer_bytes = N / buffer_pkts = N
    loss = 0.0                       # random loss probability on the data path
    ecn = {mode = "sojourn", k_us = 2000}   # linkem's ecn object
    extra_delay_ms = [0, 10]         # per sender (extra RTT)
    ack_batch_ms = 4                 # ACKs reach the senders in aggregates every
                                     # 4 ms (Wi-Fi, cellular); default 0: off
    ack_every = 4                    # of each flow's pure ACKs only every 4th
                                     # (GRO/stretch ACKs; default 1: all) ...
    ack_hold_ms = 1                  # ... or one held that long (default 1)

    [[flows]]
    count = 2                        # that many identical flows
    sender = 0                       # sender namespace index (default 0)
    start_s = 0.0
    stop_s = 20.0                    # default: duration_s
    cc = "each"                      # the CC under test, or a fixed name ("cubic")
    kind = "bulk"                    # or "rr": request/response, one request
                                     # outstanding; req_bytes (default 100),
                                     # resp_bytes (1000), requests (default: until stop_s)

    [cc_params.bbr_swift]            # optional, per project CC: bbrctl set --cgroup
    target_rtt_us = 100              #   on the run's own cgroup (ccctl.py)
    ets = true                       # optional: ETS sockops on that cgroup (bbrctl attach)

    [sweep]                          # optional: one run per value
    param = "link.loss"              # dotted key into the scenario
    values = [0.0001, 0.01, 0.1]

Validation errors name the file and the key.
"""

import copy
import tomllib
from pathlib import Path

DEFAULT_CCS = ["bbr3", "bbr", "cubic"]
EACH = "each"
PATH_LINK_KEYS = ("rate_mbit", "schedule", "trace", "rtt_ms", "buffer_bdp", "buffer_bytes",
                  "buffer_pkts", "loss", "ecn", "extra_delay_ms", "ack_batch_ms", "ack_every",
                  "ack_hold_ms")
LINK_KEYS = set(PATH_LINK_KEYS)
TOP_KEYS = {"name", "description", "duration_s", "warmup_s", "ccs", "backend", "link",
            "flows", "sweep", "expect", "cc_params", "ets", "repeats"}
FLOW_KEYS = {"count", "sender", "receiver", "start_s", "stop_s", "cc", "kind",
             "req_bytes", "resp_bytes", "requests"}
RR_KEYS = {"req_bytes", "resp_bytes", "requests"}
KINDS = ("bulk", "rr")
QUICK_DURATION_S = 8.0
QUICK_WARMUP_S = 3.0
# Wall-clock cost of one run on top of its duration: namespaces, linkem start
# and stop, flow start, metrics and plots (measured ~2-5 s on the 2-vCPU
# reference machine), and of registering a project CC once per scenario.
RUN_OVERHEAD_S = 5.0
REGISTER_OVERHEAD_S = 3.0
PROJECT_CCS = ("bbr3", "bbr_swift", "dctcp_bpf")
MAX_REPEATS = 10            # repeats = N: each point N times (the spread of a result)


class ScenarioError(ValueError):
    pass


def load(path):
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            sc = tomllib.load(fh)
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file") from None
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: {e}") from None
    sc.setdefault("name", path.stem)
    validate(sc, str(path))
    return sc


def loads(text, origin="<string>"):
    sc = tomllib.loads(text)
    sc.setdefault("name", "scenario")
    validate(sc, origin)
    return sc


def validate(sc, origin):
    def bad(msg):
        raise ScenarioError(f"{origin}: {msg}")
    unknown = set(sc) - TOP_KEYS
    if unknown:
        bad(f"unknown keys {sorted(unknown)} (known: {sorted(TOP_KEYS)})")
    if not isinstance(sc.get("duration_s"), (int, float)) or sc["duration_s"] <= 0:
        bad("duration_s must be a positive number")
    sc.setdefault("warmup_s", min(5.0, sc["duration_s"] / 4))
    if not 0 <= sc["warmup_s"] < sc["duration_s"]:
        bad("warmup_s must be in [0, duration_s)")
    sc.setdefault("ccs", list(DEFAULT_CCS))
    if not isinstance(sc["ccs"], list) or not sc["ccs"]:
        bad("ccs must be a non-empty list of CC names (or NAME:PROFILE)")
    from .ccctl import split_variant
    for c in sc["ccs"]:
        try:
            split_variant(c)
        except Exception as e:      # LabError: name the file and the key
            bad(f"ccs: {e}")
    sc.setdefault("backend", "auto")
    link = sc.get("link")
    if not isinstance(link, dict):
        bad("a [link] table is needed")
    unknown = set(link) - LINK_KEYS
    if unknown:
        bad(f"[link]: unknown keys {sorted(unknown)} (known: {sorted(LINK_KEYS)})")
    if not any(k in link for k in ("rate_mbit", "schedule", "trace")):
        bad("[link] needs rate_mbit, schedule or trace")
    for k, lo, hi in (("ack_batch_ms", 0, 1000), ("ack_hold_ms", 0.001, 1000)):
        v = link.get(k, lo)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
            bad(f"[link].{k}: a number of ms in [{lo}, {hi}], got {v!r}")
    v = link.get("ack_every", 1)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 64:
        bad(f"[link].ack_every: an integer in [1, 64], got {v!r}")
    flows = sc.get("flows")
    if not flows:
        bad("at least one [[flows]] entry is needed")
    for i, f in enumerate(flows):
        unknown = set(f) - FLOW_KEYS
        if unknown:
            bad(f"[[flows]] #{i}: unknown keys {sorted(unknown)} (known: {sorted(FLOW_KEYS)})")
        kind = f.get("kind", "bulk")
        if kind not in KINDS:
            bad(f"[[flows]] #{i}: kind must be one of {list(KINDS)}, not {kind!r}")
        if kind != "rr" and RR_KEYS & set(f):
            bad(f"[[flows]] #{i}: {sorted(RR_KEYS & set(f))} only apply to kind = \"rr\"")
        for k in RR_KEYS & set(f):
            if isinstance(f[k], bool) or not isinstance(f[k], int) or f[k] <= 0:
                bad(f"[[flows]] #{i}: {k} must be a positive integer")
    if "cc_params" in sc:
        from .ccctl import validate_params
        validate_params(sc["cc_params"], bad)
    if not isinstance(sc.get("ets", False), bool):
        bad("ets must be true or false")
    if sc.get("ets"):
        fixed = sorted({f["cc"] for f in flows if f.get("cc", EACH) != EACH})
        if fixed:
            bad(f"ets = true: flows with a fixed cc {fixed} are not supported (bbrctl "
                "attach gives every socket of the run's cgroup the CC under test)")
    rep = sc.get("repeats", 1)
    if not isinstance(rep, int) or isinstance(rep, bool) or not 1 <= rep <= MAX_REPEATS:
        bad(f"repeats must be an integer 1..{MAX_REPEATS}, not {rep!r}")
    sweep = sc.get("sweep")
    if sweep is not None:
        if not isinstance(sweep.get("param"), str) or not sweep.get("values"):
            bad("[sweep] needs param (dotted key) and a non-empty values list")


def quick(sc):
    """A shorter version for smoke runs: <= QUICK_DURATION_S, 3 sweep points."""
    sc = copy.deepcopy(sc)
    scale = min(1.0, QUICK_DURATION_S / sc["duration_s"])
    sc["duration_s"] = sc["duration_s"] * scale
    sc["warmup_s"] = min(sc["warmup_s"] * scale, QUICK_WARMUP_S)
    for f in sc["flows"]:
        for k in ("start_s", "stop_s"):
            if k in f:
                f[k] = f[k] * scale
    sc.pop("repeats", None)
    sw = sc.get("sweep")
    if sw and len(sw["values"]) > 3:
        v = sw["values"]
        sw["values"] = [v[0], v[len(v) // 2], v[-1]]
    return sc


def estimate_s(sc, ccs=None):
    """Estimated wall-clock seconds of run_scenario(sc, ccs)."""
    ccs = ccs or sc["ccs"]
    pts = points(sc)
    runs = len(pts) * len(ccs)
    return (sum(p["duration_s"] for _, p in pts) * len(ccs) + runs * RUN_OVERHEAD_S
            + REGISTER_OVERHEAD_S * sum(c.partition(":")[0] in PROJECT_CCS for c in ccs))


def points(sc):
    """[(label, concrete scenario)] - one per sweep value (or the scenario
    itself), each `repeats` times: labels "run=K" after the sweep's."""
    rep = sc.get("repeats", 1)
    pts = _sweep_points(sc)
    if rep == 1:
        return pts
    out = []
    for label, c in pts:
        for k in range(1, rep + 1):
            out.append(((label + " " if label else "") + f"run={k}", c))
    return out


def _sweep_points(sc):
    sw = sc.get("sweep")
    if not sw:
        return [("", sc)]
    out = []
    for v in sw["values"]:
        c = copy.deepcopy(sc)
        keys = sw["param"].split(".")
        node = c
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = v
        c.pop("sweep")
        validate(c, f"{sc['name']} sweep {sw['param']}={v}")
        out.append((f"{sw['param']}={v}", c))
    return out


def expand_flows(sc, cc):
    """Concrete flows for one run under CC cc: ids 0.., "each" replaced."""
    out = []
    for f in sc["flows"]:
        for _ in range(int(f.get("count", 1))):
            name = f.get("cc", EACH)
            out.append({"id": len(out), "sender": int(f.get("sender", 0)),
                        "receiver": int(f.get("receiver", 0)),
                        "cc": cc if name == EACH else name,
                        "start_s": float(f.get("start_s", 0.0)),
                        "stop_s": float(f.get("stop_s", sc["duration_s"])),
                        "kind": f.get("kind", "bulk"),
                        **{k: int(f[k]) for k in RR_KEYS if k in f}})
    return out


def path_kwargs(sc, flows):
    """EmulatedPath keyword arguments for one run."""
    link = sc["link"]
    kw = {k: link[k] for k in PATH_LINK_KEYS if k in link}
    if "rate_mbit" not in kw:
        kw["rate_mbit"] = None
    kw.setdefault("rtt_ms", 0)
    kw["senders"] = max(max(f["sender"] for f in flows) + 1, len(link.get("extra_delay_ms", [])))
    kw["receivers"] = max(f["receiver"] for f in flows) + 1
    if "extra_delay_ms" in kw and len(kw["extra_delay_ms"]) < kw["senders"]:
        kw["extra_delay_ms"] = list(kw["extra_delay_ms"]) + [0] * (kw["senders"] - len(kw["extra_delay_ms"]))
    kw["backend"] = sc.get("backend", "auto")
    return kw
