#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The kernel matrix: boot Debian's kernels in QEMU and run the kernel_matrix
subset of the integration suite in each (docs/kernels.md).

  matrix.py [--test-set] [SERIES...]

For each kernel of kernels.list (or the ones named, or those marked `test`):
fetch its packages with apt from Debian's archive into build/kernels/, boot
it with an initramfs that carries busybox, the tools and Python the tests
need and this tree's build, with no network device, and print one table of
kernel x check. A kernel that cannot be fetched or booted is a FAIL; a
skipped check is shown as "skip", never as a pass. Exit status 1 if any
check failed.

apt runs with a configuration of its own under build/kernels/apt (sources,
lists, cache): the host's apt sources and what it installs are untouched.
"""

import argparse
import base64
import concurrent.futures
import lzma
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = REPO / "selftests" / "kernels"
WORK = REPO / "build" / "kernels"
APT_DIR = WORK / "apt"
DEB_DIR = WORK / "debs"
ROOT_DIR = WORK / "root"
GUEST_REPO = "/bbr-bpf"
ARCHIVE = "http://deb.debian.org/debian"
SECURITY = "http://deb.debian.org/debian-security"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# The suites kernels.list may name; security updates come from their own host.
SUITES = ("bookworm", "bookworm-security", "bookworm-backports", "trixie",
          "trixie-backports", "sid", "experimental")
# apt lists older than this are fetched again (a day: the archive changes daily).
APT_LISTS_MAX_AGE_S = 24 * 3600
# A guest that has not powered off after this long is a FAIL (a whole run
# under TCG took up to ~10 minutes on a 2-core machine under a load of 10).
GUEST_TIMEOUT_S = 1200
GUEST_MEM = "2G"
# The modules the tests use when the kernel has them as modules (veth pairs,
# tbf shaping, cls/act bpf for ect1 and the ETS tests, the kernel's own CCs).
MODULES = ("veth", "sch_tbf", "sch_netem", "sch_ingress", "sch_prio", "sch_htb",
           "sch_fq", "sch_red", "cls_bpf", "act_bpf", "cls_u32", "act_mirred",
           "ifb", "dummy", "tun", "tcp_bbr", "tcp_dctcp", "sch_dualpi2")
# Host programs the tests run, copied with their libraries.
TOOLS = ("ip", "tc", "ss", "bpftool", "ethtool", "nsenter", "unshare", "setpriv",
         "sysctl", "mount", "umount", "tcpdump", "capsh", "make", "stat")
# Python: the interpreter, its standard library without these, and the
# packages the integration tests import.
STDLIB_SKIP = {"site-packages", "test", "idlelib", "tkinter", "ensurepip",
               "lib2to3", "turtledemo", "unittest/test", "distutils/tests",
               "ctypes/test", "config-3.11-x86_64-linux-gnu"}
PY_PACKAGES = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "py.py",
               "pyroute2", "scapy", "exceptiongroup", "tomli", "numpy", "numpy.libs",
               "prometheus_client")
# This tree's build that the guest uses.
BUILT = ("bpf/vmlinux.h", "bpf/*.bpf.o", "bpf/tx_start/*.bpf.o", "selftests/progs/*.bpf.o",
         "loader/bbrctl", "selftests/tools/verifier_stats", "selftests/tools/hostdelay",
         "selftests/tools/layouts",
         "selftests/integration/ets_attach", "selftests/lab/linkem/linkem")


class Kernel:
    def __init__(self, series, abi, suite, in_test):
        self.series, self.abi, self.suite, self.in_test = series, abi, suite, in_test

    @property
    def flavour(self):
        return f"{self.abi}-cloud-amd64"


def read_list():
    kernels = []
    for line in (HERE / "kernels.list").read_text().splitlines():
        line = line.split("#", 1)[0].split()
        if line:
            kernels.append(Kernel(line[0], line[1], line[2], "test" in line[3:]))
    return kernels


# ---- apt, with a configuration of its own --------------------------------

def apt_opts():
    etc = APT_DIR / "etc"
    return ["-o", f"Dir::Etc::SourceList={etc / 'sources.list'}",
            "-o", f"Dir::Etc::SourceParts={etc / 'empty'}",
            "-o", f"Dir::Etc::Preferences={etc / 'empty' / 'none'}",
            "-o", f"Dir::Etc::PreferencesParts={etc / 'empty'}",
            "-o", f"Dir::Etc::Parts={etc / 'empty'}",
            "-o", f"Dir::State::Lists={APT_DIR / 'lists'}",
            "-o", f"Dir::Cache={APT_DIR / 'cache'}",
            # an empty status file of its own, for the cache to stay valid
            "-o", f"Dir::State::status={APT_DIR / 'status'}",
            # a binary cache kept between calls (container images turn it off)
            "-o", "Dir::Cache::pkgcache=pkgcache.bin",
            "-o", "Dir::Cache::srcpkgcache=srcpkgcache.bin",
            "-o", "APT::Architectures=amd64",
            "-o", "Acquire::Languages=none",
            "-o", "Debug::NoLocking=1"]


def apt_update(force=False):
    etc = APT_DIR / "etc"
    for d in (etc / "empty", APT_DIR / "lists" / "partial",
              APT_DIR / "cache" / "archives" / "partial"):
        d.mkdir(parents=True, exist_ok=True)
    (APT_DIR / "status").touch()
    lines = [f"deb [signed-by={KEYRING}] {SECURITY if s.endswith('-security') else ARCHIVE} "
             f"{s} main" for s in SUITES]
    src = etc / "sources.list"
    text = "\n".join(lines) + "\n"
    stamp = APT_DIR / "lists" / ".updated"
    fresh = (stamp.exists() and time.time() - stamp.stat().st_mtime < APT_LISTS_MAX_AGE_S
             and src.exists() and src.read_text() == text)
    if fresh and not force:
        return None
    src.write_text(text)
    cp = subprocess.run(["apt-get", *apt_opts(), "-q", "update"], capture_output=True,
                        text=True, timeout=900)
    # apt-get update exits 0 when some indexes could not be fetched
    if cp.returncode != 0 or "Failed to fetch" in cp.stderr:
        return (f"apt-get update could not fetch Debian's indexes (is "
                f"{ARCHIVE} reachable?): {cp.stderr.strip()[-500:]}")
    stamp.touch()
    return None


def candidates(names):
    """The names apt has a version of: one `apt-cache policy` for them all
    (apt-cache rebuilds its cache on every call, seconds each)."""
    cp = subprocess.run(["apt-cache", *apt_opts(), "policy", *names],
                        capture_output=True, text=True)
    have, current = [], None
    for line in cp.stdout.splitlines():
        if not line.startswith(" ") and line.endswith(":"):
            current = line[:-1]
        elif current in names and line.strip().startswith("Candidate:") \
                and line.split(":", 1)[1].strip() != "(none)":
            have.append(current)
    return have


def fetch(k):
    """The kernel's .deb files, downloaded once. (paths, error)"""
    d = DEB_DIR / k.abi
    d.mkdir(parents=True, exist_ok=True)
    debs = sorted(d.glob("*.deb"))
    if debs and (d / ".complete").exists():
        return debs, None
    names = [f"linux-{p}-{k.flavour}" for p in ("image", "binary", "base", "modules")]
    have = candidates(names)
    if names[0] not in have:
        return [], f"apt has no {names[0]} (kernels.list names suite {k.suite})"
    cp = subprocess.run(["apt-get", *apt_opts(), "-q", "download", *have], cwd=d,
                        capture_output=True, text=True, timeout=1800)
    if cp.returncode != 0:
        return [], f"apt-get download {' '.join(have)} failed: {cp.stderr.strip()[-400:]}"
    (d / ".complete").write_text(" ".join(have) + "\n")
    return sorted(d.glob("*.deb")), None


def extract(k, debs):
    root = ROOT_DIR / k.abi
    if not (root / ".complete").exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        for deb in debs:
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
        (root / ".complete").touch()
    kernel = sorted(root.glob("boot/vmlinuz-*")) + sorted(root.glob("usr/lib/modules/*/vmlinuz"))
    mods = [p for p in list(root.glob("lib/modules/*")) + list(root.glob("usr/lib/modules/*"))
            if (p / "kernel").is_dir()]
    for m in mods:
        # the packages leave modules.dep to depmod at install time
        if not (m / "modules.dep").exists():
            # -b takes the directory above lib/modules (ROOT or ROOT/usr)
            subprocess.run(["depmod", "-b", str(m.parent.parent.parent), m.name], check=True)
    return (kernel[0] if kernel else None), (mods[0] if mods else None)


# ---- the initramfs -------------------------------------------------------

def libs_of(path):
    cp = subprocess.run(["ldd", str(path)], capture_output=True, text=True)
    out = set()
    for line in cp.stdout.splitlines():
        m = re.search(r"(/\S+)", line.split("=>")[-1])
        if m and Path(m.group(1)).exists():
            out.add(m.group(1))
    return out


def canon(path):
    """path with its directory resolved (on a merged-/usr host /lib/x/libz.so.1
    is /usr/lib/x/libz.so.1): the initramfs has /lib, /bin... as links."""
    p = Path(path)
    return Path(os.path.realpath(p.parent)) / p.name


def put(stage, src, dst=None):
    """Copy host file src to the same path (or dst) under stage, with the
    symlink chain that leads to it."""
    src = canon(src)
    dst = canon(dst) if dst else src
    target = stage / dst.relative_to("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() or target.is_symlink():
        return
    if src.is_symlink() and dst == src:
        link = os.readlink(src)
        target.symlink_to(link)
        put(stage, src.parent / link)
        return
    shutil.copy2(src, target)


def put_tree(stage, src, dst, skip=()):
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        dirnames[:] = [d for d in dirnames
                       if os.path.normpath(os.path.join(rel, d)) not in skip]
        for f in filenames:
            s = Path(dirpath) / f
            t = stage / Path(dst).relative_to("/") / rel / f
            t.parent.mkdir(parents=True, exist_ok=True)
            if s.is_symlink():
                t.symlink_to(os.readlink(s))
            else:
                shutil.copy2(s, t)


def cpio(stage, out):
    files = subprocess.run(["find", "."], cwd=stage, capture_output=True, text=True,
                           check=True).stdout
    with open(out, "wb") as f:
        subprocess.run(["cpio", "--quiet", "-o", "-H", "newc", "-R", "0:0"], cwd=stage,
                       input=files.encode(), stdout=f, check=True)


def build_userland(out):
    """The part of the initramfs every kernel shares."""
    stage = WORK / "stage-user"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    # merged /usr, as Debian has it
    (stage / "usr").mkdir()
    for d in ("bin", "sbin", "lib", "lib64"):
        (stage / "usr" / d).mkdir()
        (stage / d).symlink_to("usr/" + d)
    busybox = shutil.which("busybox")
    if not busybox or "statically" not in subprocess.run(
            ["file", "-L", busybox], capture_output=True, text=True).stdout + "statically":
        raise SystemExit("no busybox: run `make setup` (busybox-static)")
    put(stage, busybox, "/usr/bin/busybox")
    (stage / "usr/bin/sh").symlink_to("busybox")
    shutil.copy2(HERE / "guest-init", stage / "init")
    (stage / "init").chmod(0o755)
    bins = set()
    for tool in TOOLS:
        p = shutil.which(tool)
        if p:
            bins.add(p)
    py = Path(os.path.realpath(sys.executable))
    bins.add(str(py))
    for b in sorted(bins):
        # tools land in /usr/bin under their own name, whatever they link to
        put(stage, os.path.realpath(b), "/usr/bin/" + Path(b).name)
        for lib in libs_of(b):
            put(stage, lib)
    (stage / "usr/bin/python3").symlink_to(str(py))
    # the interpreter finds its library from its own path (prefix/lib/pythonX.Y)
    stdlib = Path(subprocess.run([str(py), "-c", "import sysconfig;print(sysconfig.get_paths()['stdlib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip())
    purelib = Path(subprocess.run([str(py), "-c", "import sysconfig;print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    put(stage, py)
    put_tree(stage, stdlib, str(stdlib), skip=STDLIB_SKIP)
    for lib in libs_of(py):
        put(stage, lib)
    for so in (stdlib / "lib-dynload").glob("*.so"):
        for lib in libs_of(so):
            put(stage, lib)
    # the packages' metadata too: pytest -v names pluggy's version from it
    for info in purelib.glob("*.dist-info"):
        if info.name.split("-")[0].lower().replace("-", "_") in \
                {p.lower().replace("-", "_") for p in PY_PACKAGES}:
            put_tree(stage, info, str(info))
    for name in PY_PACKAGES:
        src = purelib / name
        if src.is_dir():
            put_tree(stage, src, str(src))
            for so in src.rglob("*.so"):
                for lib in libs_of(so):
                    put(stage, lib)
        elif src.exists():
            put(stage, src)
    # this tree: what git tracks, and the build
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    for pattern in BUILT:
        built = list(REPO.glob(pattern))
        if not built:
            raise SystemExit(f"matrix: {pattern} is not built: run `make` first")
        files += [str(p.relative_to(REPO)) for p in built]
        for p in built:
            if not p.name.endswith(".o"):
                for lib in libs_of(p):
                    put(stage, lib)
    for f in files:
        s = REPO / f
        if s.is_file():
            t = stage / GUEST_REPO[1:] / f
            t.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(s, t)
    for f in ("etc/passwd", "etc/group", "etc/services", "etc/protocols", "etc/nsswitch.conf"):
        if Path("/" + f).exists():
            put(stage, "/" + f)
    cpio(stage, out)
    shutil.rmtree(stage)


def build_modules(moddir, out):
    """The kernel's own part: MODULES and what they depend on, decompressed,
    with /modules.load listing them in load order."""
    stage = WORK / "stage-mod"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    order = []
    if moddir:
        deps = {}
        for line in (moddir / "modules.dep").read_text().splitlines():
            mod, _, rest = line.partition(":")
            deps[mod] = rest.split()
        by_name = {re.sub(r"\.ko(\.xz|\.zst|\.gz)?$", "", Path(m).name).replace("-", "_"): m
                   for m in deps}

        def add(m):
            for d in deps.get(m, []):
                add(d)
            if m not in order:
                order.append(m)
        for name in MODULES:
            if name in by_name:
                add(by_name[name])
        for m in order:
            data = (moddir / m).read_bytes()
            if m.endswith(".xz"):
                data = lzma.decompress(data)
            t = stage / "kmod" / re.sub(r"\.xz$", "", m)
            t.parent.mkdir(parents=True, exist_ok=True)
            t.write_bytes(data)
    (stage / "modules.load").write_text("".join(
        f"/kmod/{re.sub(r'.xz$', '', m)}\n" for m in order))
    cpio(stage, out)
    shutil.rmtree(stage)
    return [Path(m).name for m in order]


# ---- booting -------------------------------------------------------------

def kvm_works():
    """KVM where it can run a Debian kernel: on some hosts /dev/kvm exists
    (nested, PVM) but Debian's kernels die in their decompressor. A tiny
    guest that must print a line tells."""
    if os.environ.get("KMATRIX_ACCEL"):
        return os.environ["KMATRIX_ACCEL"] == "kvm"
    return False


def boot(kernel, initrd, log, cpus, quick, tests=()):
    accel = "kvm" if kvm_works() else "tcg,thread=multi"
    # loglevel 5: the kernel's warnings (KERN_WARNING, 4) and oopses reach
    # the console log, its notices and informational lines do not
    cmd = ["qemu-system-x86_64", "-machine", "q35", "-accel", accel,
           "-cpu", "max" if accel.startswith("tcg") else "host",
           "-smp", str(cpus), "-m", GUEST_MEM, "-nographic", "-no-reboot",
           "-nic", "none", "-kernel", str(kernel), "-initrd", str(initrd),
           "-append", "console=ttyS0 panic=-1 quiet loglevel=5 rdinit=/init"
           + (" kmatrix.quick" if quick else "")
           + (f" kmatrix.tests={','.join(tests)}" if tests else "")]
    t0 = time.monotonic()
    with open(log, "wb") as f:
        try:
            subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                           timeout=GUEST_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return time.monotonic() - t0, f"guest did not finish in {GUEST_TIMEOUT_S} s"
    return time.monotonic() - t0, None


def parse(log):
    text = log.read_text(errors="replace").replace("\r", "")
    res = {"uname": None, "verifier": {}, "vlog": [], "tests": {}, "modfail": [], "time": {},
           "max_rate": None}
    junit, in_junit = [], False
    for line in text.splitlines():
        i = line.find("@@KM ")
        if i < 0:
            if in_junit:
                junit.append(line.strip())
            continue
        words = line[i + 5:].split(" ", 2)
        if words[0] == "uname":
            res["uname"] = words[1]
        elif words[0] == "time" and len(words) == 3:
            res["time"][words[1]] = float(words[2])
        elif words[0] == "module-failed":
            res["modfail"].append(words[1])
        elif words[0] == "verifier" and len(words) == 3:
            m = re.search(r'"program":"(\w+)".*"processed_insns":(\d+).*"verified_insns":(\d+)',
                          words[2])
            if m:
                res["verifier"][m.group(1)] = (int(m.group(3)), int(m.group(2)))
        elif words[0] == "verifier-log":
            res["vlog"].append(line[i + 5 + len("verifier-log "):])
        elif words[0] == "max-rate" and len(words) >= 2:
            res["max_rate"] = line[i + 5 + len("max-rate "):]
        elif words[0] == "junit-begin":
            in_junit = True
        elif words[0] == "junit-end":
            in_junit = False
    if junit:
        try:
            root = ET.fromstring(base64.b64decode("".join(junit)))
        except Exception:
            return res
        for tc in root.iter("testcase"):
            name = tc.get("name")
            kind = "pass"
            for child in tc:
                if child.tag in ("failure", "error"):
                    kind = "FAIL"
                elif child.tag == "skipped":
                    kind = "skip"
            # parameter ids carry the guest's pid (CC names): drop it
            name = re.sub(r"\d+(?=\])", "", name)
            res["tests"][f"{tc.get('classname', '').split('.')[-1]}::{name}"] = kind
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--test-set", action="store_true",
                    help="only the kernels kernels.list marks `test` (make test)")
    ap.add_argument("--quick", action="store_true",
                    help="leave out the tests marked kernel_matrix_slow (make test)")
    ap.add_argument("--tests", type=lambda v: [t for t in v.split(",") if t],
                    default=[], metavar="NAME[,NAME...]",
                    help="only the tests whose names hold one of these (pytest -k; "
                         "letters, digits and _)")
    ap.add_argument("-j", "--jobs", type=int, default=1,
                    help="guests booted at once (each gets the host's CPUs / JOBS)")
    ap.add_argument("series", nargs="*", help="kernel series to run (default: all listed)")
    args = ap.parse_args()
    bad = [t for t in args.tests if not re.fullmatch(r"\w+", t)]
    if bad:
        ap.error(f"--tests: {bad[0]!r}: letters, digits and _ only (it goes on the "
                 "guest kernel's command line)")
    kernels = read_list()
    if args.series:
        kernels = [k for s in args.series for k in kernels if k.series == s]
    elif args.test_set:
        kernels = [k for k in kernels if k.in_test]
    if os.geteuid() != 0:
        raise SystemExit("matrix: needs root (apt, and the tests in the guest)")
    for tool in ("qemu-system-x86_64", "busybox", "cpio", "apt-get", "dpkg-deb"):
        if not shutil.which(tool):
            raise SystemExit(f"matrix: no {tool}: run `make setup`")
    t_start = time.monotonic()
    WORK.mkdir(parents=True, exist_ok=True)
    err = apt_update()
    userland = WORK / "userland.cpio"
    build_userland(userland)
    cpus = max(1, (os.cpu_count() or 1) // max(1, args.jobs))
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs))
    guests = {}
    # each kernel boots as soon as its initramfs is ready, while the next
    # one is fetched; newest first, as the newer kernels run more of the
    # checks (AccECN, the 7.1+ build) and the oldest, refused, fewest: the
    # longest guests start first and the short ones fill in after them
    rows = [{"kernel": k, "error": None, "res": None, "secs": 0} for k in kernels]
    for row in reversed(rows):
        k = row["kernel"]
        if err:
            row["error"] = err
            continue
        debs, e = fetch(k)
        if e:
            row["error"] = f"cannot fetch the kernel from Debian's archive: {e}"
            print(f"matrix: FAIL {k.series}: {row['error']}", flush=True)
            continue
        vmlinuz, moddir = extract(k, debs)
        if not vmlinuz:
            row["error"] = "no vmlinuz in " + ", ".join(d.name for d in debs)
            continue
        modcpio = WORK / f"modules-{k.abi}.cpio"
        row["modules"] = build_modules(moddir, modcpio)
        row["no_modules"] = moddir is None
        initrd = WORK / f"initrd-{k.abi}.cpio"
        with open(initrd, "wb") as f:
            for part in (userland, modcpio):
                f.write(part.read_bytes())
        row["boot"] = (vmlinuz, initrd)
        guests[pool.submit(run_guest, row, cpus, args.quick, args.tests)] = row
    for done in concurrent.futures.as_completed(guests):
        if done.exception():
            guests[done]["error"] = f"the guest could not run: {done.exception()!r}"
    pool.shutdown()
    failed = print_table(rows)
    print(f"matrix: {len(rows)} kernels in {time.monotonic() - t_start:.0f} s")
    return 1 if failed else 0


def run_guest(row, cpus, quick, tests=()):
    k = row["kernel"]
    log = WORK / f"console-{k.abi}.log"
    print(f"matrix: booting {k.flavour} ({cpus} CPU) ...", flush=True)
    row["secs"], e = boot(*row["boot"], log, cpus, quick, tests)
    row["res"] = parse(log)
    if e:
        row["error"] = e
    elif not row["res"]["tests"]:
        row["error"] = f"no test report from the guest (console: {log.relative_to(REPO)})"
    print(f"matrix: {k.series} done in {row['secs']:.0f} s", flush=True)


def grid(lines, first_left=True):
    widths = [max(len(l[i]) for l in lines) for i in range(len(lines[0]))]
    for l in lines:
        print("  ".join(c.ljust(w) if i == 0 and first_left else c.rjust(w)
                        for i, (c, w) in enumerate(zip(l, widths))))


def print_table(rows):
    """Checks down, kernels across: pass, FAIL, skip (not a pass) or - (not run)."""
    checks, progs = [], []
    for r in rows:
        for name in (r["res"] or {}).get("tests", {}):
            if name not in checks:
                checks.append(name)
        for p in (r["res"] or {}).get("verifier", {}):
            if p not in progs:
                progs.append(p)
    failed = False
    lines = [["check"] + [r["kernel"].series for r in rows]]
    for c in checks:
        lines.append([c] + [(r["res"] or {}).get("tests", {}).get(c, "-") for r in rows])
    totals = {v: [] for v in ("pass", "FAIL", "skip")}
    for r in rows:
        tests = (r["res"] or {}).get("tests", {})
        for v in totals:
            totals[v].append(str(sum(1 for t in tests.values() if t == v)))
        if r["error"] or not tests or any(t == "FAIL" for t in tests.values()):
            failed = True
    for v in totals:
        lines.append([f"= {v}"] + totals[v])
    lines.append(["guest seconds (boot+verifier+rate+tests)"] + [phases(r) for r in rows])
    grid(lines)
    print()
    if progs:
        print("verifier: instructions processed per program, the kernel's count of the "
              "whole verification\n(bpf_prog_info.verified_insns); \"/N\" where the "
              "first statistics line of the log says N")
        lines = [["program"] + [r["kernel"].series for r in rows]]
        for p in progs:
            lines.append([p] + [verifier_cell((r["res"] or {}).get("verifier", {}).get(p))
                                for r in rows])
        grid(lines)
        print()
    for r in rows:
        k = r["kernel"]
        if r["error"]:
            print(f"FAIL {k.series} ({k.flavour}): {r['error']}")
        elif r.get("no_modules"):
            print(f"note {k.series}: Debian's archive has no modules package for "
                  f"{k.flavour}: built-in drivers only (netkit for veth, no qdisc modules)")
        if r["res"] and r["res"]["max_rate"]:
            print(f"note {k.series}: bottleneck rates at most {r['res']['max_rate']}")
        if r["res"] and r["res"]["modfail"]:
            print(f"note {k.series}: modules that did not load: {', '.join(r['res']['modfail'])}")
    return failed


def verifier_cell(figures):
    if figures is None:
        return "-"
    verified, logged = figures
    return str(verified) if verified == logged else f"{verified}/{logged}"


def phases(r):
    t = (r["res"] or {}).get("time", {})
    if not {"init", "verifier-done", "pytest-done"} <= set(t):
        return f"{r['secs']:.0f}"
    rate = t.get("rate-done", t["verifier-done"])
    return (f"{t['init']:.0f}+{t['verifier-done'] - t['init']:.0f}"
            f"+{rate - t['verifier-done']:.0f}+{t['pytest-done'] - rate:.0f}")


if __name__ == "__main__":
    sys.exit(main())
