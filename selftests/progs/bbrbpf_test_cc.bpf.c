// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrbpf_test: the smallest useful struct_ops congestion control, used by
 * the plumbing tests (selftests/integration/test_plumbing.py) and, renamed
 * per test, by bbrctl's tests (test_bbrctl*.py).
 *
 * It is Reno, delegated entirely to the kernel's own Reno through the three
 * kfuncs the kernel exports to struct_ops programs, so that a failing
 * plumbing test points at registration, namespaces or sockets and never at
 * congestion control logic.
 *
 * Register with `bpftool struct_ops register bbrbpf_test_cc.bpf.o DIR`;
 * unregister by removing the pinned link in DIR.
 *
 * CC_NAME is both the struct_ops variable (libbpf's map name) and .name.
 * Tests that need CCs of their own (one name per test process, so that two
 * suites never collide) copy the built object and overwrite that name in
 * place (bbrtest.cc.renamed_copy): no other string in the object may be
 * the same, hence the programs' own names. NO_SSTHRESH leaves out a
 * required op: the kernel then refuses the registration at attach time,
 * after a clean load (bbrbpf_test_nossthresh.bpf.c).
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

#ifndef CC_NAME
#define CC_NAME bbrbpf_test
#endif
#define STR2(x) #x
#define STR(x) STR2(x)

extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

#ifndef NO_SSTHRESH
SEC("struct_ops")
__u32 BPF_PROG(test_cc_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}
#endif

SEC("struct_ops")
void BPF_PROG(test_cc_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(test_cc_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops CC_NAME = {
#ifndef NO_SSTHRESH
	.ssthresh	= (void *)test_cc_ssthresh,
#endif
	.cong_avoid	= (void *)test_cc_cong_avoid,
	.undo_cwnd	= (void *)test_cc_undo_cwnd,
	.flags		= TCP_CONG_NON_RESTRICTED,
	.name		= STR(CC_NAME),
};
