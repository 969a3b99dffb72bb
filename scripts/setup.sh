#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# make setup: bring a bare Debian bookworm machine to the point where `make`,
# `make test` and `make run` work. Idempotent; run as root.
#
# 1. Check the kernel can host us at all (BTF, BPF struct_ops for
#    tcp_congestion_ops with cong_control, privileges), and stop with a clear
#    message if not: installing a toolchain is pointless on a kernel that
#    cannot run the result.
# 2. Add bookworm-backports (bookworm's own libbpf 1.1 cannot load
#    .struct_ops.link maps) and install the toolchain from Debian.
# 3. Install the pinned Python test dependencies.
set -euo pipefail

die() { echo "setup: $*" >&2; exit 1; }
say() { echo "setup: $*"; }

here=$(cd "$(dirname "$0")/.." && pwd)

# --- 1. kernel and privileges -------------------------------------------------
[ "$(id -u)" -eq 0 ] || die "must run as root (needs CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN and apt)"
capeff=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
# CAP_NET_ADMIN = 12, CAP_SYS_ADMIN = 21, CAP_BPF = 39
for bit in 12 21 39; do
	(( (0x$capeff >> bit) & 1 )) || die "root lacks capability bit $bit (CAP_NET_ADMIN=12, CAP_SYS_ADMIN=21, CAP_BPF=39); run outside a restricted container"
done
# BTF, struct_ops for CCs, the 4-argument cong_control (scripts/kernel-check.sh,
# which needs python3's standard library: without python3 yet it runs once the
# packages below are installed).
kernel_checked=
if command -v python3 >/dev/null; then
	"$here/scripts/kernel-check.sh"
	kernel_checked=1
fi

# --- 2. Debian packages ---------------------------------------------------------
. /etc/os-release
[ "${VERSION_CODENAME:-}" = bookworm ] || say "warning: tested on Debian bookworm, this is ${PRETTY_NAME:-unknown}"

bp=/etc/apt/sources.list.d/bookworm-backports.sources
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	say "adding bookworm-backports"
	cat > "$bp" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi

export DEBIAN_FRONTEND=noninteractive
stamp=/var/lib/apt/periodic/bbr-bpf-update-stamp
if [ ! -e "$stamp" ] || [ -n "$(find "$bp" -newer "$stamp" 2>/dev/null)" ] ||
   ! apt-cache policy libbpf-dev 2>/dev/null | grep -q backports; then
	apt-get update -qq
	mkdir -p "$(dirname "$stamp")" && touch "$stamp"
fi

# From bookworm itself.
base_pkgs=(clang-19 llvm-19 libclang-rt-19-dev libelf-dev zlib1g-dev pkg-config make gcc
	   iperf3 ethtool tcpdump libcap-dev libjansson-dev
	   qemu-system-x86 busybox-static kmod cpio xz-utils)  # make kernels
# `make deb` and its test: debhelper (with dpkg-dev), lintian; the man page:
# scdoc to build it, man-db and groff-base to check it (`man --warnings`).
base_pkgs+=(debhelper lintian scdoc man-db groff-base)
# From backports: libbpf >= 1.4 (struct_ops links), bpftool 7.5, iproute2 6.x.
bp_pkgs=(libbpf-dev bpftool iproute2)

missing=()
for p in "${base_pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
	say "installing ${missing[*]}"
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Always ask apt for the backports versions: bookworm's own may already be in.
apt-get install -y -qq --no-install-recommends -t bookworm-backports "${bp_pkgs[@]}" >/dev/null

libbpf_ver=$(pkg-config --modversion libbpf 2>/dev/null || echo 0)
case "$libbpf_ver" in
	0|0.*|1.[0-3]|1.[0-3].*) die "libbpf $libbpf_ver is too old (need >= 1.4 from bookworm-backports)";;
esac
command -v bpftool >/dev/null || die "bpftool not on PATH after install"
command -v clang-19 >/dev/null || die "clang-19 not on PATH after install"
[ -n "$kernel_checked" ] || "$here/scripts/kernel-check.sh"

# --- 3. Python --------------------------------------------------------------------
py=${PYTHON:-python3}
"$py" -m pip install -q --disable-pip-version-check --root-user-action=ignore \
	-r "$here/requirements.txt"

say "done: clang-19 $(clang-19 --version | sed -n 's/.*version \([0-9.]*\).*/\1/p;q'), libbpf $libbpf_ver, $(bpftool version | head -1)"
