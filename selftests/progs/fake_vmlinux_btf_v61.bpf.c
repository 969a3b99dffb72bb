// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Not a program: the BTF of a Linux 6.1-like kernel, for
 * test_bbrctl_kernel_checks.py (see fake_vmlinux_btf.bpf.c). It has struct_ops
 * for tcp_congestion_ops, but its cong_control takes two arguments (sk, rs):
 * the four-argument form bbr-bpf's CCs implement came with Linux 6.10.
 */
struct sock;
struct rate_sample;

struct tcp_congestion_ops {
	unsigned int (*ssthresh)(struct sock *sk);
	void (*cong_control)(struct sock *sk, const struct rate_sample *rs);
	char name[16];
};

struct bpf_struct_ops_tcp_congestion_ops {
	int refcnt;
	int state;
	struct tcp_congestion_ops data;
};

struct bpf_struct_ops_tcp_congestion_ops cts_v61_var;
