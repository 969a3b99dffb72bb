// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Not a program: the BTF of a kernel that cannot run BPF congestion
 * controls. selftests/integration/test_bbrctl_kernel_checks.py copies this
 * object's .BTF section and bind-mounts it over /sys/kernel/btf/vmlinux in a
 * private mount namespace: one struct, and no bpf_struct_ops_tcp_congestion_ops.
 */
struct cts_fake {
	int a;
};

struct cts_fake cts_fake_var;
