// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The maps, struct_ops programs, ops table and state iterator of a CC built
 * on lib/tcp_cc.h with no signal of its own (bbr3, bbr3_l4s): one body,
 * instantiated by each object under its own names.
 *
 * The including object defines, before including this file:
 *   BBR3_CC		its name, a bare identifier (bbr3): the ops table's
 *			map name, the prefix of every map and program, and
 *			the registered name (.name)
 *   BBR3_CC_FLAGS	ops flags beyond TCP_CONG_NON_RESTRICTED (0 if none)
 * and includes lib/tcp_cc.h and the hook sets first. The names come out as
 * before, e.g. bbr3_sk_stor, bbr3_main, dump_bbr3_state: bbrctl and
 * `bpftool struct_ops register` see no difference.
 */
#ifndef BBR3_CC
#error "define BBR3_CC (the CC's name) before including lib/bbr3_ops.h"
#endif
#ifndef BBR3_CC_FLAGS
#define BBR3_CC_FLAGS	0
#endif

#define BBR3_CAT3_(a, b, c)	a##_##b##_##c
#define BBR3_CAT_(a, b)		a##_##b
#define BBR3_CAT(a, b)		BBR3_CAT_(a, b)
#define BBR3_CC_(x)		BBR3_CAT(BBR3_CC, x)
#define BBR3_CC_ID_(a, n, b)	BBR3_CAT3_(a, n, b)
#define BBR3_CC_ID(a, b)	BBR3_CC_ID_(a, BBR3_CC, b)
#define BBR3_STR_(x)		#x
#define BBR3_CC_STR(x)		BBR3_STR_(x)
/* BPF_PROG pastes its name: hand it the name already expanded. */
#define BBR3_PROG_(name, args...)	BPF_PROG(name, args)
#define BBR3_CC_PROG(x, args...)	BBR3_PROG_(BBR3_CC_(x), args)

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bbr3_sk);
} BBR3_CC_(sk_stor) SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, BBR_TRACE_RING_BYTES);
} BBR3_CC_(trace_rb) SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct bbr_trace_ctl);
} BBR3_CC_(trace_ctl) SEC(".maps");

struct bbr_glue_stats BBR3_CC_(stats);

static __always_inline struct bbr3_sk *BBR3_CC_(sk)(struct sock *sk)
{
	return bbr_cc_value(&BBR3_CC_(sk_stor), sk, &BBR3_CC_(stats));
}

SEC("struct_ops")
void BBR3_CC_PROG(init, struct sock *sk)
{
	struct bbr3_sk *v = bpf_sk_storage_get(&BBR3_CC_(sk_stor), sk, NULL,
					       BPF_SK_STORAGE_GET_F_CREATE);

	if (!v) {	/* the socket keeps its initial cwnd, unpaced */
		__sync_fetch_and_add(&BBR3_CC_(stats).no_storage, 1);
		return;
	}
	bbr_cc_init(sk, v);
}

SEC("struct_ops")
void BBR3_CC_PROG(release, struct sock *sk)
{
	bpf_sk_storage_delete(&BBR3_CC_(sk_stor), sk);
}

SEC("struct_ops")
void BBR3_CC_PROG(main, struct sock *sk, u32 ack, int flag,
	      const struct rate_sample *rs)
{
	struct bbr3_sk *v = BBR3_CC_(sk)(sk);
	struct bbr_cc_ack a = {};

	if (!v)
		return;
	bbr_cc_ack_in(&a, sk, v, ack, flag, rs, &BBR3_CC_(trace_ctl));
	bbr_core_main(v, &a.s, &a.r, NULL);
	bbr_cc_ack_out(&a, sk, v, NULL, &BBR3_CC_(trace_rb));
}

SEC("struct_ops")
u32 BBR3_CC_PROG(ssthresh, struct sock *sk)
{
	struct bbr3_sk *v = BBR3_CC_(sk)(sk);

	return v ? bbr_cc_ssthresh(sk, v) : tcp_sk(sk)->snd_ssthresh;
}

SEC("struct_ops")
u32 BBR3_CC_PROG(undo_cwnd, struct sock *sk)
{
	struct bbr3_sk *v = BBR3_CC_(sk)(sk);

	return v ? bbr_cc_undo_cwnd(sk, v) : tcp_sk(sk)->snd_cwnd;
}

SEC("struct_ops")
void BBR3_CC_PROG(set_state, struct sock *sk, u8 new_state)
{
	struct bbr3_sk *v = BBR3_CC_(sk)(sk);

	if (v)
		bbr_cc_set_state(sk, v, new_state);
}

#ifdef BBR_TX_START_OP
SEC("struct_ops")
void BBR3_CC_PROG(cwnd_event_tx_start, struct sock *sk)
{
	struct bbr3_sk *v = BBR3_CC_(sk)(sk);

	if (v)
		bbr_cc_tx_start(sk, v);
}
#else
SEC("struct_ops")
void BBR3_CC_PROG(cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct bbr3_sk *v;

	if (event != CA_EVENT_TX_START)
		return;		/* the only event BBRv3 acts on as a sender */
	v = BBR3_CC_(sk)(sk);
	if (v)
		bbr_cc_tx_start(sk, v);
}
#endif

SEC("struct_ops")
void BBR3_CC_PROG(in_ack_event, struct sock *sk, u32 flags)
{
	struct bbr3_sk *v;

	if (!bbr_cc_tlp_outstanding(sk))
		return;
	v = BBR3_CC_(sk)(sk);
	if (v)
		bbr_cc_in_ack_event(sk, v);
}

SEC("struct_ops")
u32 BBR3_CC_PROG(min_tso_segs, struct sock *sk)
{
	return bbr_cc_min_tso_segs(sk);
}

SEC("struct_ops")
u32 BBR3_CC_PROG(sndbuf_expand, struct sock *sk)
{
	return BBR_SNDBUF_EXPAND_FACTOR;
}

#ifdef BBR_TX_START_OP
SEC(".struct_ops.link")
struct tcp_congestion_ops___tx_start BBR3_CC = {
	.cwnd_event_tx_start = (void *)BBR3_CC_(cwnd_event_tx_start),
#else
SEC(".struct_ops.link")
struct tcp_congestion_ops BBR3_CC = {
	.cwnd_event	= (void *)BBR3_CC_(cwnd_event),
#endif
	.init		= (void *)BBR3_CC_(init),
	.release	= (void *)BBR3_CC_(release),
	.cong_control	= (void *)BBR3_CC_(main),
	.ssthresh	= (void *)BBR3_CC_(ssthresh),
	.undo_cwnd	= (void *)BBR3_CC_(undo_cwnd),
	.set_state	= (void *)BBR3_CC_(set_state),
	.in_ack_event	= (void *)BBR3_CC_(in_ack_event),
	.min_tso_segs	= (void *)BBR3_CC_(min_tso_segs),
	.sndbuf_expand	= (void *)BBR3_CC_(sndbuf_expand),
	.flags		= TCP_CONG_NON_RESTRICTED | BBR3_CC_FLAGS,
	.name		= BBR3_CC_STR(BBR3_CC),
};

/* `bbrctl stat`: one struct bbr3_state_rec per socket of this CC of the
 * network namespace that reads it. */
SEC("iter/tcp")
int BBR3_CC_ID(dump, state)(struct bpf_iter__tcp *ctx)
{
	struct tcp_sock *tp = bbr_iter_tcp_sock(ctx);
	struct bbr3_state_rec rec = {};
	struct bbr3_sk *v;

	if (!tp)
		return 0;
	v = bpf_sk_storage_get(&BBR3_CC_(sk_stor), tp, NULL, 0);
	if (!v)
		return 0;
	bbr_cc_fill_rec(&rec, (struct sock *)tp, tp, v);
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}
