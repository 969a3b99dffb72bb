// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrbpf_test: the smallest useful struct_ops congestion control, used only
 * by the plumbing tests (selftests/integration/test_plumbing.py) and to try
 * scripts/demo.py without the real algorithm.
 *
 * It is Reno, delegated entirely to the kernel's own Reno through the three
 * kfuncs the kernel exports to struct_ops programs, so that a failing
 * plumbing test points at registration, namespaces or sockets and never at
 * congestion control logic.
 *
 * Register with `bpftool struct_ops register bbrbpf_test_cc.bpf.o DIR`;
 * unregister by removing the pinned link in DIR.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "Dual BSD/GPL";

/* include/net/tcp.h (a #define, so not in vmlinux.h): the CC may be selected
 * by unprivileged sockets and made a non-init netns default. */
#ifndef TCP_CONG_NON_RESTRICTED
#define TCP_CONG_NON_RESTRICTED	0x1
#endif

extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

SEC("struct_ops")
__u32 BPF_PROG(bbrbpf_test_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
void BPF_PROG(bbrbpf_test_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(bbrbpf_test_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops bbrbpf_test = {
	.ssthresh	= (void *)bbrbpf_test_ssthresh,
	.cong_avoid	= (void *)bbrbpf_test_cong_avoid,
	.undo_cwnd	= (void *)bbrbpf_test_undo_cwnd,
	.flags		= TCP_CONG_NON_RESTRICTED,
	.name		= "bbrbpf_test",
};
