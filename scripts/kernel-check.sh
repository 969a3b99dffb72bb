#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The running kernel against what bbr-bpf's CCs need, from its BTF: `make
# setup` runs this first (scripts/setup.sh), and the kernel matrix's guests
# run it on every kernel (test_bbrctl_kernel_checks). Exit 1, naming the
# missing feature, on a kernel that cannot run them; POSIX sh and python3's
# standard library only.
set -eu

die() { echo "setup: $*" >&2; exit 1; }
here=$(cd "$(dirname "$0")/.." && pwd)
btf=/sys/kernel/btf/vmlinux

[ -r $btf ] || die "$btf missing: the kernel needs CONFIG_DEBUG_INFO_BTF=y"
# The struct_ops wrapper for tcp_congestion_ops is a plain string in the
# BTF string section.
grep -qa 'bpf_struct_ops_tcp_congestion_ops' $btf ||
	die "kernel BTF has no bpf_struct_ops_tcp_congestion_ops: needs CONFIG_BPF_JIT, CONFIG_BPF_SYSCALL and BPF TCP CC support (Linux >= 5.6)"
# The CCs implement cong_control(sk, ack, flag, rs), the 4-argument form of
# Linux 6.10; older kernels (Debian bookworm's 6.1) have cong_control(sk, rs).
# The count comes from the BTF, as bbrctl reads it (loader/kfeat.c): a
# kernel with the feature backported passes, a version number decides nothing.
nargs=$(python3 "$here/selftests/bbrtest/btf.py") ||
	die "kernel BTF has no tcp_congestion_ops.cong_control function prototype"
[ "$nargs" = 4 ] ||
	die "kernel $(uname -r): tcp_congestion_ops.cong_control takes $nargs arguments; bbr-bpf's CCs need the 4-argument cong_control(sk, ack, flag, rs) of Linux 6.10+"
echo "setup: kernel $(uname -r): BTF, struct_ops tcp_congestion_ops and the 4-argument cong_control present"
