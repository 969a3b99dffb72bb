// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Not a program: the BTF of a kernel between Linux 6.10 and 6.17, for
 * test_bbrctl_kernel_checks.py (see fake_vmlinux_btf.bpf.c). It has struct_ops
 * for tcp_congestion_ops with the four-argument cong_control bbr-bpf's CCs
 * implement, but no AccECN: struct tcp_sock lacks received_ce, the field
 * that came with the AccECN congestion-control flags in 6.18 and by which
 * bbrctl tells (loader/kfeat.c, kernel_has_accecn()).
 */
struct sock;
struct rate_sample;

struct tcp_congestion_ops {
	unsigned int (*ssthresh)(struct sock *sk);
	void (*cong_control)(struct sock *sk, unsigned int ack, int flag,
			     const struct rate_sample *rs);
	unsigned int flags;
	char name[16];
};

struct bpf_struct_ops_tcp_congestion_ops {
	int refcnt;
	int state;
	struct tcp_congestion_ops data;
};

struct tcp_sock {
	unsigned int snd_cwnd;
	unsigned int delivered_ce;
};

struct bpf_struct_ops_tcp_congestion_ops cts_noaccecn_var;
struct tcp_sock cts_noaccecn_tp;
