# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The operator's deliverables: the Debian package, the man page, the bash
completion.

The package is built with `make deb` (dpkg-buildpackage in a copy of the
tree), checked with lintian, then installed into a scratch root with
`dpkg --root=ROOT --force-script-chrootless`: the maintainer scripts run
with DPKG_ROOT=ROOT, so nothing of the host's dpkg database, /usr or /etc
is touched, and the suite runs beside an installed bbr-bpf (make install
or the package). From that root the test runs bbrctl and the unit's start
script with a configuration that loads bbr3 under a name of its own, splits a
cgroup of the test across that CC and cubic by hand (an A/B split, whose
arm plain unload refuses), then `dpkg -r` (whose prerm must undo that load
and detach the split), then `--purge`, and checks what is left after each
step.

The man page (docs/man/bbrctl.8.scd) and the completion
(packaging/bbrctl.bash-completion) are checked against bbrctl's own help:
every command of `bbrctl --help`, every option of `bbrctl help COMMAND`,
every exit status, so that a command added to bbrctl without them fails
here.
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import bbrtest
from bbrtest import BBRCTL, REPO, bbrctl
from bbrtest.cc import pin_layout

MAN_SRC = REPO / "docs" / "man" / "bbrctl.8.scd"
MAN_PAGE = REPO / "build" / "man" / "bbrctl.8"
# every page docs/man/NAME.SECTION.scd gives
MAN_PAGES = [REPO / "build" / "man" / p.stem for p in (REPO / "docs" / "man").glob("*.scd")]
COMPLETION = REPO / "packaging" / "bbrctl.bash-completion"
# dpkg-buildpackage of the whole tree: ~70 s on 2 busy cores; lintian ~30 s
DEB_BUILD_TIMEOUT_S = 900
LINTIAN_TIMEOUT_S = 300
DPKG_TIMEOUT_S = 120
# What the package must hold (paths in the installed system).
PACKAGE_FILES = (
    "usr/sbin/bbrctl",
    "usr/lib/bbr-bpf/bbr3.bpf.o", "usr/lib/bbr-bpf/bbr_swift.bpf.o",
    "usr/lib/bbr-bpf/dctcp_bpf.bpf.o",
    "usr/lib/bbr-bpf/tx_start/bbr3.bpf.o", "usr/lib/bbr-bpf/tx_start/bbr_swift.bpf.o",
    "usr/lib/bbr-bpf/bbr-bpf-boot",
    "lib/systemd/system/bbr-bpf.service",
    "etc/bbr-bpf/bbr-bpf.conf",
    "usr/share/man/man8/bbrctl.8.gz", "usr/share/man/man5/bbr-bpf.conf.5.gz",
    "usr/share/bash-completion/completions/bbrctl",
    "usr/share/doc/bbr-bpf/bbrctl.md", "usr/share/doc/bbr-bpf/operations.md",
    "usr/share/doc/bbr-bpf/ab-testing.md",
    "usr/share/doc/bbr-bpf/copyright",
)
CONFFILE = "etc/bbr-bpf/bbr-bpf.conf"
# Directories a bookworm base system has, which deb-systemd-helper writes
# its state into (owned there by systemd / init-system-helpers).
BASE_DIRS = ("var/lib/systemd/deb-systemd-helper-enabled",)


def run(argv, timeout, **kw):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                          timeout=timeout, **kw)


# ---- bbrctl's own account of its commands, options and exit codes -----------------

def help_text(*args):
    return bbrctl(*args, check=0).stdout


def bbrctl_commands():
    """The command names of `bbrctl --help`'s Commands section."""
    section = help_text("--help").split("\nCommands", 1)[1].split("\n\n", 1)[0]
    names = re.findall(r"^  ([a-z][a-z0-9-]*)", section, re.M)
    return list(dict.fromkeys(names))


def common_options():
    """-x and --xxx of the "Options of every command" section."""
    section = help_text("--help").split("\nOptions of every command", 1)[1].split("\n\n")[0]
    opts = []
    for line in section.splitlines():
        m = re.match(r"  (-\w, )?(--[a-z][a-z-]*)", line)
        if m:
            opts += [o.rstrip(", ") for o in m.groups() if o]
    return opts


def command_options(cmd):
    """The options in the Usage lines of `bbrctl help CMD`."""
    usage = help_text("help", cmd).split("\n\n", 1)[0]
    return sorted(set(re.findall(r"--[a-z][a-z-]*", usage)))


def exit_codes():
    line = re.search(r"^Exit status: (.*)$", help_text("--help"), re.M).group(1)
    return re.findall(r"\b(\d+) ", line)


@pytest.fixture(scope="module")
def built():
    bbrtest.make("loader/bbrctl", "man")
    assert MAN_PAGE.is_file()


# ---- the man page -------------------------------------------------------------------

def man_sections():
    """{heading: roff text} of the man page, .SH and .SS alike, escapes removed."""
    roff = MAN_PAGE.read_text()
    parts = re.split(r"^\.S[HS] (.*)$", roff, flags=re.M)
    plain = lambda s: re.sub(r"\\f[BIRP]|\\&", "", s)
    return {parts[i].strip('"'): plain(parts[i + 1]) for i in range(1, len(parts), 2)}


def man(page):
    env = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80")
    cp = run(["man", "--warnings", "-l", page], 60, env=env)
    print(f"man --warnings {page.name}: exit {cp.returncode}, "
          f"{len(cp.stdout.splitlines())} lines, warnings: {cp.stderr.strip() or 'none'}")
    assert cp.returncode == 0 and cp.stderr == "", cp.stderr
    return cp.stdout


def test_man_pages_render_without_warnings(built):
    assert MAN_PAGE in MAN_PAGES and len(MAN_PAGES) >= 2, MAN_PAGES
    for page in MAN_PAGES:
        text = man(page)
        for heading in ("NAME", "SYNOPSIS", "DESCRIPTION", "EXAMPLES", "SEE ALSO"):
            assert re.search(rf"^{heading}$", text, re.M), f"{page.name}: no {heading}"
    text = man(MAN_PAGE)
    for heading in ("OPTIONS", "COMMANDS", "EXIT STATUS", "FILES"):
        assert re.search(rf"^{heading}$", text, re.M), f"bbrctl.8: no {heading} section"


def test_man_page_has_every_command_option_and_exit_status(built):
    """Drift check: what bbrctl's help lists must be in the man page."""
    sections = man_sections()
    cmds = bbrctl_commands()
    print("commands of bbrctl --help:", " ".join(cmds))
    assert len(cmds) >= 14, f"too few commands parsed from bbrctl --help: {cmds}"
    missing = []
    for cmd in cmds:
        if cmd not in sections:
            missing.append(f"command {cmd} (no subsection)")
            continue
        for opt in command_options(cmd):
            if opt not in sections[cmd] and opt not in sections["OPTIONS"]:
                missing.append(f"{cmd} {opt}")
    for opt in common_options():
        if opt not in sections["OPTIONS"]:
            missing.append(f"option {opt} (OPTIONS)")
    codes = exit_codes()
    print("exit codes of bbrctl --help:", codes, "common options:", common_options())
    assert codes, "no exit status in bbrctl --help"
    for code in codes:
        if not re.search(rf"^{code}$", sections["EXIT STATUS"], re.M):
            missing.append(f"exit status {code}")
    assert not missing, f"{MAN_SRC.relative_to(REPO)} lacks: " + "; ".join(missing)


# ---- the bash completion -------------------------------------------------------------

def complete(*words):
    """COMPREPLY of the completion for the command line words (last: the
    word being completed)."""
    script = (f"source {COMPLETION}\n"
              f"COMP_WORDS=({' '.join(repr(w) for w in (str(BBRCTL), *words))})\n"
              f"COMP_CWORD={len(words)}\n_bbrctl\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    cp = run(["bash", "-c", script], 30)
    assert cp.returncode == 0, cp.stderr
    return set(cp.stdout.split())


def test_bash_completion_knows_commands_and_options(built):
    cmds = bbrctl_commands()
    got = complete("")
    print("commands completed:", sorted(got))
    assert got == set(cmds)
    common = set(common_options())
    assert complete("-") == common
    long_common = {o for o in common if o.startswith("--")}
    for cmd in cmds:
        want = set(command_options(cmd)) | long_common
        got = complete(cmd, "--")
        assert want <= got, f"{cmd}: not completed {sorted(want - got)}"
        assert got <= want, f"{cmd}: completed options it does not take {sorted(got - want)}"
    # values: objects of the object directory, the --ecn modes, a number
    # option that takes a value gets no word suggested
    assert {"all", "bbr3", "bbr_swift"} <= complete("load", "")
    assert "cc_select" not in complete("load", ""), "a non-CC object offered for load"
    assert complete("load", "--name", "x", "--ecn", "") == {"accecn", "accecn-only",
                                                             "classic"}
    assert complete("top", "--interval", "") == set()
    assert complete("ab", "") == {"report"}
    assert complete("ab", "report", "--min-bytes", "") == set()
    assert complete("help", "") == set(cmds) | {"keys"}


# ---- the Debian package --------------------------------------------------------------

@pytest.fixture(scope="module")
def deb():
    cp = run(["make", "-C", REPO, "--no-print-directory", "deb"], DEB_BUILD_TIMEOUT_S)
    assert cp.returncode == 0, f"make deb failed:\n{cp.stdout[-4000:]}\n{cp.stderr[-4000:]}"
    path = Path(re.search(r"^deb-build: (.*\.deb)$", cp.stdout, re.M).group(1))
    assert re.fullmatch(r"bbr-bpf_[0-9][0-9A-Za-z.+~]*_amd64\.deb", path.name), path.name
    print("built", path.name)
    return path


def test_deb_lintian(deb):
    """No lintian tag (pedantic, info too) beyond the package's overrides,
    each of which says why it is there."""
    cp = run(["lintian", "--pedantic", "--display-info", "--fail-on", "none", deb],
             LINTIAN_TIMEOUT_S)
    tags = [l for l in cp.stdout.splitlines() if re.match(r"[EWIPX]: ", l)]
    print(f"lintian: exit {cp.returncode}, {len(tags)} tags")
    for t in tags:
        print(" ", t)
    assert cp.returncode == 0, cp.stderr
    assert not tags, "lintian tags not overridden with a reason in " \
                     "packaging/debian/bbr-bpf.lintian-overrides"


def field(deb, name):
    return run(["dpkg-deb", "-f", deb, name], 30).stdout.strip()


def scratch_root(root, deb):
    """A dpkg root: an empty database but for the package's dependencies,
    which are copied from the host's (they must be installed here: the
    package's bbrctl runs with the host's libraries)."""
    admin = root / "var/lib/dpkg"
    for d in ("info", "updates", "triggers"):
        (admin / d).mkdir(parents=True)
    for d in BASE_DIRS:
        (root / d).mkdir(parents=True)
    status = []
    for dep in re.split(r",\s*", field(deb, "Depends")):
        name = dep.split()[0]
        cp = run(["dpkg-query", "-W", "-f", "${binary:Package}\t${db:Status-Abbrev}\n", name],
                 30)
        assert cp.returncode == 0 and "\tii" in cp.stdout, \
            f"the package depends on {dep}, which is not installed here"
        status.append(run(["dpkg-query", "-s", name], 30).stdout.rstrip("\n") + "\n")
        (admin / "info" / f"{cp.stdout.split()[0]}.list").touch()
    (admin / "status").write_text("\n".join(status))


def files_under(root):
    """Files and links under root, outside dpkg's database and the base dirs."""
    out = set()
    for p in root.rglob("*"):
        rel = p.relative_to(root).as_posix()
        if rel.startswith("var/lib/dpkg/") or p.is_dir() and not p.is_symlink():
            continue
        out.add(rel)
    return out


def dirs_under(root):
    base = {"var/lib/dpkg"} | {str(Path(d).parents[i]) for d in BASE_DIRS
                               for i in range(len(Path(d).parents) - 1)} | set(BASE_DIRS)
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.is_dir() and not p.relative_to(root).as_posix().startswith("var/lib/dpkg/")} \
        - base


# The CCs the package could load (its objects); other processes may load
# and unload CCs of their own names meanwhile, so only these are watched.
PACKAGE_CCS = ("bbr3", "bbr_swift", "dctcp_bpf")


def host_cc_state():
    """The host's default CC, and which of the package's CCs are registered
    or pinned."""
    read = lambda f: Path(f"/proc/sys/net/ipv4/{f}").read_text().split()
    pins = Path(pin_layout()["PIN_ROOT"])
    return {"default": read("tcp_congestion_control"),
            "registered": [c for c in PACKAGE_CCS if c in read("tcp_available_congestion_control")],
            "pinned": [c for c in PACKAGE_CCS if (pins / c).exists()]}


def dpkg(root, *args):
    """dpkg on a scratch root (scripts run with DPKG_ROOT=root), or with
    root None on this host."""
    where = [f"--root={root}", "--force-script-chrootless"] if root else []
    cp = run(["dpkg", *where, *args], DPKG_TIMEOUT_S,
             env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    print(f"dpkg {' '.join(map(str, args))}: exit {cp.returncode}\n{cp.stdout}{cp.stderr}")
    assert cp.returncode == 0, cp.stderr
    return cp


def test_deb_install_run_remove_purge(deb, tmp_path):
    root = tmp_path / "root"
    scratch_root(root, deb)
    name = bbrtest.own_cc_name("pkg")
    boot = root / "usr/lib/bbr-bpf/bbr-bpf-boot"
    conf = root / CONFFILE
    host_before = host_cc_state()
    pkg_bbrctl = root / "usr/sbin/bbrctl"
    cg = bbrtest.Cgroup(f"pkg{os.getpid()}ab")
    try:
        cg.__enter__()
        # install: every file there, the config a conffile, the unit
        # disabled, and nothing loaded or changed on the host
        dpkg(root, "-i", deb)
        missing = [f for f in PACKAGE_FILES if not (root / f).is_file()]
        assert not missing, f"not in the package: {missing}"
        for page in root.glob("usr/share/man/man*/*.gz"):     # as `man bbrctl` reads them
            assert "NAME" in man(page)
        status = run(["dpkg", f"--root={root}", "-s", "bbr-bpf"], 30).stdout
        assert re.search(r"^Conffiles:\n /etc/bbr-bpf/bbr-bpf.conf ", status, re.M), status
        enabled = [p.relative_to(root).as_posix() for p in (root / "etc").rglob("*.service")]
        assert not enabled, f"the unit is enabled at install: {enabled}"
        unit = (root / "lib/systemd/system/bbr-bpf.service").read_text()
        assert "ExecStart=/usr/lib/bbr-bpf/bbr-bpf-boot start /etc/bbr-bpf/bbr-bpf.conf" in unit
        assert "ExecStop=/usr/lib/bbr-bpf/bbr-bpf-boot stop /etc/bbr-bpf/bbr-bpf.conf" in unit
        host_after = host_cc_state()
        print("host before:", host_before, "\nhost after install:", host_after)
        assert host_after == host_before, "installing the package changed the host's CCs"

        # run: the package's bbrctl finds the package's objects, and the
        # unit's start script loads what the config says
        out = run([root / "usr/sbin/bbrctl", "--help"], 30).stdout
        assert f"(here: {root}/usr/lib/bbr-bpf)" in out
        version = run([root / "usr/sbin/bbrctl", "--version"], 30)
        print("bbrctl --version:", version.stdout.strip())
        assert version.returncode == 0 and \
            version.stdout.startswith(f"bbrctl {field(deb, 'Version')} "), version
        conf.write_text(f"# the test's own copy of bbr3\nload --name {name} bbr3\n")
        cp = run([boot, "start", conf], 60)
        print("bbr-bpf-boot start:", cp.returncode, cp.stdout.strip(), cp.stderr.strip())
        assert cp.returncode == 0, cp.stderr
        assert re.search(rf"loaded {name} from {root}/usr/lib/bbr-bpf/(tx_start/)?bbr3.bpf.o",
                         cp.stdout), cp.stdout
        assert name in bbrtest.available_ccs()
        listed = json.loads(run([root / "usr/sbin/bbrctl", "list", "--json"], 30).stdout)
        assert name in [c["name"] for c in listed]
        assert run([boot, "started", conf], 30).returncode == 0

        # an A/B split by hand with the package's bbrctl (cc_ab is built
        # into it: the package need not carry its object) with the
        # unit's CC as an arm, which plain `unload` refuses
        cp = run([pkg_bbrctl, "attach", "--cgroup", cg.path, "--cc", f"{name}:50,cubic:50"], 30)
        print("attach the split:", cp.returncode, cp.stderr.strip())
        assert cp.returncode == 0, cp.stderr
        split = Path(pin_layout()["PIN_CGROUP"]) / str(cg.id)
        assert (split / "ab").exists(), f"no split pinned at {split}"

        # remove: the prerm undoes what the start script applied, the
        # split of its CC included; only the conffile (changed: kept) and
        # deb-systemd-helper's record stay
        cp = dpkg(root, "-r", "bbr-bpf")
        assert "undoing what bbr-bpf-boot applied" in cp.stdout
        assert name not in bbrtest.available_ccs(), f"dpkg -r left {name} registered"
        assert not split.exists(), f"dpkg -r left the split of {cg.path} pinned"
        assert f"detached from cgroup {cg.path}" in cp.stdout + cp.stderr
        left = files_under(root)
        print("after remove:", sorted(left))
        assert left == {CONFFILE, "var/lib/systemd/deb-systemd-helper-enabled/"
                                  "bbr-bpf.service.dsh-also"}, sorted(left)
        assert f"load --name {name} bbr3" in conf.read_text()

        # purge: nothing of the package is left, the config included
        dpkg(root, "--purge", "bbr-bpf")
        left, dirs = files_under(root), dirs_under(root)
        print("after purge: files", sorted(left), "directories", sorted(dirs))
        assert not left and not dirs, f"left after purge: {sorted(left | dirs)}"
        st = run(["dpkg-query", f"--root={root}", "-W", "-f", "${db:Status-Abbrev}",
                  "bbr-bpf"], 30)
        assert st.stdout.strip() in ("", "un", "pn"), st.stdout
        assert host_cc_state() == host_before
    finally:
        if cg.created:
            bbrctl("detach", "--cgroup", cg.path)
            cg.remove()
        if name in bbrtest.available_ccs():
            bbrctl("unload", "--force", name)
        if boot.exists() and conf.exists():
            run([boot, "stop", conf], 60)


# Files whose presence means bbr-bpf is installed on this machine already
# (by the package or by `make install`), which the test on the host itself
# must not replace or remove.
INSTALLED_MARKERS = ("/usr/sbin/bbrctl", "/usr/lib/bbr-bpf", "/etc/bbr-bpf",
                     "/lib/systemd/system/bbr-bpf.service", "/usr/local/sbin/bbrctl",
                     "/usr/local/lib/bbr-bpf", "/usr/local/lib/systemd/system/bbr-bpf.service",
                     "/run/bbr-bpf/boot/_etc_bbr-bpf_bbr-bpf.conf")


def test_deb_on_this_host(deb):
    """The maintainer scripts as they run on a real host (no DPKG_ROOT):
    dpkg -i, the unit started (systemctl where systemd runs, else its start
    script by hand, as in a container), dpkg -r unloads what it loaded,
    --purge leaves nothing. Only where bbr-bpf is not installed at all."""
    st = run(["dpkg-query", "-W", "-f", "${db:Status-Abbrev}", "bbr-bpf"], 30).stdout.strip()
    present = [m for m in INSTALLED_MARKERS if os.path.lexists(m)]
    if st not in ("", "un", "pn") or present:
        pytest.skip(f"bbr-bpf is installed on this host (dpkg status {st or 'none'!r}, "
                    f"{present}); the package test ran in a scratch root instead")
    systemd = Path("/run/systemd/system").is_dir()
    name = bbrtest.own_cc_name("pkh")
    conf = Path("/" + CONFFILE)
    host_before = host_cc_state()
    try:
        dpkg(None, "-i", deb)
        assert host_cc_state() == host_before, "installing the package changed the host's CCs"
        if systemd:
            assert run(["systemctl", "is-enabled", "bbr-bpf"], 30).stdout.strip() == "disabled"
            assert run(["systemctl", "is-active", "bbr-bpf"], 30).stdout.strip() == "inactive"
        conf.write_text(f"# the test's own copy of bbr3\nload --name {name} bbr3\n")
        if systemd:
            cp = run(["systemctl", "start", "bbr-bpf"], 120)
        else:
            cp = run(["/usr/lib/bbr-bpf/bbr-bpf-boot", "start", conf], 60)
        print(f"start ({'systemctl' if systemd else 'bbr-bpf-boot, no systemd'}):",
              cp.returncode, cp.stdout.strip(), cp.stderr.strip())
        assert cp.returncode == 0, cp.stderr
        assert name in bbrtest.available_ccs()
        version = run(["/usr/sbin/bbrctl", "--version"], 30).stdout
        assert version.startswith(f"bbrctl {field(deb, 'Version')} "), version

        dpkg(None, "-r", "bbr-bpf")
        assert name not in bbrtest.available_ccs(), f"dpkg -r left {name} registered"
        assert not os.path.exists("/usr/sbin/bbrctl") and conf.is_file()
        dpkg(None, "--purge", "bbr-bpf")
        left = [m for m in INSTALLED_MARKERS if os.path.lexists(m)]
        left += [f for f in PACKAGE_FILES if os.path.lexists("/" + f)]
        left += [str(p) for p in Path("/var/lib/systemd").rglob("bbr-bpf.service*")]
        print("after purge, left:", left)
        assert not left
        assert run(["dpkg-query", "-W", "-f", "${db:Status-Abbrev}", "bbr-bpf"],
                   30).stdout.strip() in ("", "un", "pn")
    finally:
        if name in bbrtest.available_ccs():
            bbrctl("unload", name)
        run(["dpkg", "--purge", "bbr-bpf"], DPKG_TIMEOUT_S)
