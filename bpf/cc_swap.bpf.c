// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cc_swap: an iter/tcp program that switches live TCP sockets from one
 * congestion control to another with bpf_setsockopt(TCP_CONGESTION).
 *
 * bbrctl writes the filter into .rodata before loading (from/to names, an
 * optional port matched against either end, an optional cgroup id) and
 * reads the iterator fd to the end; the iterator walks the network
 * namespace of the process that reads it (the netns is bound when the
 * iterator fd is created), so
 * bbrctl enters the target netns first. Each socket the filter matches
 * yields one text line "cookie state result from to" so bbrctl can report
 * what was switched; the totals are also kept in .bss.
 *
 * TIME_WAIT and request (NEW_SYN_RECV) minisockets are not full sockets:
 * setsockopt is impossible for them; they are counted, not switched.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_tracing.h>

#define SOL_TCP_LEVEL		6	/* IPPROTO_TCP */
#define TCP_CONGESTION_OPT	13	/* include/uapi/linux/tcp.h */
#define CC_NAME_LEN		16	/* TCP_CA_NAME_MAX */
#define TCP_TIME_WAIT_STATE	6	/* include/net/tcp_states.h */
#define TCP_LISTEN_STATE	10
#define TCP_NEW_SYN_RECV_STATE	12

const volatile char from_cc[CC_NAME_LEN] = {};
const volatile char to_cc[CC_NAME_LEN] = {};
const volatile __u16 port = 0;		/* 0: any; else local or remote port */
const volatile __u64 cgroup_id = 0;	/* 0: any */

__u64 n_switched = 0;
__u64 n_failed = 0;
__u64 n_timewait = 0;
__u64 n_reqsk = 0;
__u64 n_other_cc = 0;

static __always_inline bool names_equal(const char *a, const volatile char *b)
{
	for (int i = 0; i < CC_NAME_LEN; i++) {
		if (a[i] != b[i])
			return false;
		if (!a[i])
			return true;
	}
	return true;
}

static __always_inline bool port_matches(struct sock_common *skc)
{
	if (!port)
		return true;
	return skc->skc_num == port || bpf_ntohs(skc->skc_dport) == port;
}

SEC("iter/tcp")
int cc_swap(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct seq_file *seq = ctx->meta->seq;
	char cur[CC_NAME_LEN] = {};
	char name[CC_NAME_LEN];
	struct tcp_sock *tp;
	__u64 cookie;
	long ret;

	if (!skc || !port_matches(skc))
		return 0;
	cookie = bpf_get_socket_cookie(skc);
	if (skc->skc_state == TCP_TIME_WAIT_STATE) {
		__sync_fetch_and_add(&n_timewait, 1);
		BPF_SEQ_PRINTF(seq, "%llu time_wait skipped\n", cookie);
		return 0;
	}
	if (skc->skc_state == TCP_NEW_SYN_RECV_STATE) {
		__sync_fetch_and_add(&n_reqsk, 1);
		BPF_SEQ_PRINTF(seq, "%llu request_sock skipped\n", cookie);
		return 0;
	}
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp)
		return 0;
	if (cgroup_id) {
		struct sock *sk = (struct sock *)tp;

		if (sk->sk_cgrp_data.cgroup &&
		    sk->sk_cgrp_data.cgroup->kn->id != cgroup_id)
			return 0;
		if (!sk->sk_cgrp_data.cgroup)
			return 0;
	}
	if (bpf_getsockopt(tp, SOL_TCP_LEVEL, TCP_CONGESTION_OPT, cur, sizeof(cur)))
		return 0;
	if (!names_equal(cur, from_cc)) {
		__sync_fetch_and_add(&n_other_cc, 1);
		return 0;
	}
	/* volatile reads: a plain memcpy would be folded to the
	 * compile-time initializer (all zero) of this .rodata constant */
	for (int i = 0; i < CC_NAME_LEN; i++)
		name[i] = to_cc[i];
	ret = bpf_setsockopt(tp, SOL_TCP_LEVEL, TCP_CONGESTION_OPT, name, sizeof(name));
	if (ret) {
		__sync_fetch_and_add(&n_failed, 1);
		BPF_SEQ_PRINTF(seq, "%llu error %ld\n", cookie, ret);
	} else {
		__sync_fetch_and_add(&n_switched, 1);
		BPF_SEQ_PRINTF(seq, "%llu switched %d\n", cookie, skc->skc_state);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
