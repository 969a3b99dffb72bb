// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbr3: BBRv3 as a BPF struct_ops tcp_congestion_ops.
 *
 * The algorithm is core/bbr3.h. Each program below looks up the socket's
 * state in bbr3_sk_stor and calls its op in lib/tcp_cc.h, which reads the
 * kernel's inputs, calls the core and writes back cwnd and pacing rate.
 * The runtime parameter sets (bbr_param_sets, param_cgrp) are declared in
 * lib/tcp_cc.h; `bbrctl stat` reads dump_bbr3_state, `bbrctl trace` the
 * two trace maps.
 *
 * Load with `bbrctl load bbr3` or `bpftool struct_ops register bbr3.bpf.o DIR`
 * (on Linux 7.1+, bpf/tx_start/bbr3.bpf.o: docs/bbr3.md, "Builds").
 */
#include "lib/tcp_cc.h"
#include "core/bbr3_2023.h"	/* the 2023 generation, by the key */
#include "core/bbr3_hooks.h"	/* BBRv3: every other hook at its default */

char _license[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bbr3_sk);
} bbr3_sk_stor SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, BBR_TRACE_RING_BYTES);
} bbr3_trace_rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct bbr_trace_ctl);
} bbr3_trace_ctl SEC(".maps");

struct bbr_glue_stats bbr3_stats;

static __always_inline struct bbr3_sk *bbr3_sk(struct sock *sk)
{
	return bbr_cc_value(&bbr3_sk_stor, sk, &bbr3_stats);
}

SEC("struct_ops")
void BPF_PROG(bbr3_init, struct sock *sk)
{
	struct bbr3_sk *v = bpf_sk_storage_get(&bbr3_sk_stor, sk, NULL,
					       BPF_SK_STORAGE_GET_F_CREATE);

	if (!v) {	/* the socket keeps its initial cwnd, unpaced */
		__sync_fetch_and_add(&bbr3_stats.no_storage, 1);
		return;
	}
	bbr_cc_init(sk, v);
}

SEC("struct_ops")
void BPF_PROG(bbr3_release, struct sock *sk)
{
	bpf_sk_storage_delete(&bbr3_sk_stor, sk);
}

SEC("struct_ops")
void BPF_PROG(bbr3_main, struct sock *sk, u32 ack, int flag,
	      const struct rate_sample *rs)
{
	struct bbr3_sk *v = bbr3_sk(sk);

	if (v)
		bbr_cc_main(sk, v, NULL, ack, flag, rs, &bbr3_trace_ctl,
			    &bbr3_trace_rb);
}

SEC("struct_ops")
u32 BPF_PROG(bbr3_ssthresh, struct sock *sk)
{
	struct bbr3_sk *v = bbr3_sk(sk);

	return v ? bbr_cc_ssthresh(sk, v) : tcp_sk(sk)->snd_ssthresh;
}

SEC("struct_ops")
u32 BPF_PROG(bbr3_undo_cwnd, struct sock *sk)
{
	struct bbr3_sk *v = bbr3_sk(sk);

	return v ? bbr_cc_undo_cwnd(sk, v) : tcp_sk(sk)->snd_cwnd;
}

SEC("struct_ops")
void BPF_PROG(bbr3_set_state, struct sock *sk, u8 new_state)
{
	struct bbr3_sk *v = bbr3_sk(sk);

	if (v)
		bbr_cc_set_state(sk, v, new_state);
}

#ifdef BBR_TX_START_OP
SEC("struct_ops")
void BPF_PROG(bbr3_cwnd_event_tx_start, struct sock *sk)
{
	struct bbr3_sk *v = bbr3_sk(sk);

	if (v)
		bbr_cc_tx_start(sk, v);
}
#else
SEC("struct_ops")
void BPF_PROG(bbr3_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct bbr3_sk *v;

	if (event != CA_EVENT_TX_START)
		return;		/* the only event BBRv3 acts on as a sender */
	v = bbr3_sk(sk);
	if (v)
		bbr_cc_tx_start(sk, v);
}
#endif

SEC("struct_ops")
void BPF_PROG(bbr3_in_ack_event, struct sock *sk, u32 flags)
{
	struct bbr3_sk *v;

	if (!bbr_cc_tlp_outstanding(sk))
		return;
	v = bbr3_sk(sk);
	if (v)
		bbr_cc_in_ack_event(sk, v);
}

SEC("struct_ops")
u32 BPF_PROG(bbr3_min_tso_segs, struct sock *sk)
{
	return bbr_cc_min_tso_segs(sk);
}

SEC("struct_ops")
u32 BPF_PROG(bbr3_sndbuf_expand, struct sock *sk)
{
	return BBR_SNDBUF_EXPAND_FACTOR;
}

#ifdef BBR_TX_START_OP
SEC(".struct_ops.link")
struct tcp_congestion_ops___tx_start bbr3 = {
	.cwnd_event_tx_start = (void *)bbr3_cwnd_event_tx_start,
#else
SEC(".struct_ops.link")
struct tcp_congestion_ops bbr3 = {
	.cwnd_event	= (void *)bbr3_cwnd_event,
#endif
	.init		= (void *)bbr3_init,
	.release	= (void *)bbr3_release,
	.cong_control	= (void *)bbr3_main,
	.ssthresh	= (void *)bbr3_ssthresh,
	.undo_cwnd	= (void *)bbr3_undo_cwnd,
	.set_state	= (void *)bbr3_set_state,
	.in_ack_event	= (void *)bbr3_in_ack_event,
	.min_tso_segs	= (void *)bbr3_min_tso_segs,
	.sndbuf_expand	= (void *)bbr3_sndbuf_expand,
	.flags		= TCP_CONG_NON_RESTRICTED,
	.name		= "bbr3",
};

/* `bbrctl stat`: one struct bbr3_state_rec per bbr3 socket of the
 * network namespace that reads it. */
SEC("iter/tcp")
int dump_bbr3_state(struct bpf_iter__tcp *ctx)
{
	struct tcp_sock *tp = bbr_iter_tcp_sock(ctx);
	struct bbr3_state_rec rec = {};
	struct bbr3_sk *v;

	if (!tp)
		return 0;
	v = bpf_sk_storage_get(&bbr3_sk_stor, tp, NULL, 0);
	if (!v)
		return 0;
	bbr_cc_fill_rec(&rec, (struct sock *)tp, tp, v);
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}
