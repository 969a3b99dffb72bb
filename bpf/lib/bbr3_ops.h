// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The maps, struct_ops programs, ops table and state iterator of every CC
 * built on lib/tcp_cc.h (bbr3, bbr3_l4s, bbr_swift): one body, instantiated
 * by each object under its own names.
 *
 * The including object defines, before including this file:
 *   BBR3_CC		its name, a bare identifier (bbr3): the ops table's
 *			map name, the prefix of every map and program, and
 *			the registered name (.name)
 *   BBR3_CC_FLAGS	ops flags beyond TCP_CONG_NON_RESTRICTED (0 if none)
 * and includes lib/tcp_cc.h and the hook sets first. The names come out as
 * before, e.g. bbr3_sk_stor, bbr3_main, dump_bbr3_state: bbrctl and
 * `bpftool struct_ops register` see no difference.
 *
 * A variant with per-socket state of its own beside BBRv3's (bbr_swift:
 * the core's BBR_EXT) also defines, each function under a macro of its
 * name in capitals as the core's hooks are (core/bbr3_hooks.h):
 *   BBR3_CC_SK			the socket's storage: a struct holding a
 *				struct bbr3_sk and the variant's state
 *   BBR3_CC_REC		the state iterator's record
 *   bbr3_ops_core(v)		the struct bbr3_sk in v
 *   bbr3_ops_ext(v)		the variant's state in v (BBR_EXT), which
 *				the core's hooks receive per ACK
 *   bbr3_ops_rec(rec, sk, tp, v)	fill the record of v's socket
 * and, where it has work there:
 *   bbr3_ops_init(sk, v)	at init, after BBRv3's
 *   bbr3_ops_ack(sk, v)	at each ACK, before the glue reads its inputs
 * The defaults below are bbr3's: its state alone, no work of its own.
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

#ifndef BBR3_CC_SK
#define BBR3_CC_SK		struct bbr3_sk
#define BBR3_CC_REC		struct bbr3_state_rec

#define BBR3_OPS_CORE
static __always_inline struct bbr3_sk *bbr3_ops_core(struct bbr3_sk *v)
{
	return v;
}

#define BBR3_OPS_EXT
static __always_inline BBR_EXT *bbr3_ops_ext(struct bbr3_sk *v)
{
	return NULL;
}

#define BBR3_OPS_REC
static __always_inline void bbr3_ops_rec(struct bbr3_state_rec *rec,
					 struct sock *sk, struct tcp_sock *tp,
					 struct bbr3_sk *v)
{
	bbr_cc_fill_rec(rec, sk, tp, v);
}
#endif

#if !defined(BBR3_CC_REC) || !defined(BBR3_OPS_CORE) || \
	!defined(BBR3_OPS_EXT) || !defined(BBR3_OPS_REC)
#error "with BBR3_CC_SK, define BBR3_CC_REC, bbr3_ops_core, bbr3_ops_ext and bbr3_ops_rec"
#endif

#ifndef BBR3_OPS_INIT
static __always_inline void bbr3_ops_init(struct sock *sk, BBR3_CC_SK *v)
{
}
#endif

#ifndef BBR3_OPS_ACK
static __always_inline void bbr3_ops_ack(struct sock *sk, BBR3_CC_SK *v)
{
}
#endif

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, BBR3_CC_SK);
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

#include "lib/parts_timing.h"

static __always_inline BBR3_CC_SK *BBR3_CC_(sk)(struct sock *sk)
{
	return bbr_cc_value(&BBR3_CC_(sk_stor), sk, &BBR3_CC_(stats));
}

/*
 * The socket's state, made and initialised: at init, and on an ACK of an
 * established socket that has none. Without state the ops leave the
 * socket alone, at its initial cwnd and unpaced: in one lab run
 * (swift_dc_kernel, 400 connections opened within a few ms) 8 connections
 * ran so for the whole run, without a trace record, and took 457 of 473
 * Mbit/s from the other 392. init can fail to make the state (its storage
 * is allocated atomically in softirq: no_storage counts it); the next ACK
 * tries again.
 */
static __noinline BBR3_CC_SK *BBR3_CC_(state_new)(struct sock *sk)
{
	BBR3_CC_SK *v = bpf_sk_storage_get(&BBR3_CC_(sk_stor), sk, NULL,
					   BPF_SK_STORAGE_GET_F_CREATE);

	if (!v) {
		__sync_fetch_and_add(&BBR3_CC_(stats).no_storage, 1);
		return NULL;
	}
	bbr_cc_init(sk, bbr3_ops_core(v));
	bbr3_ops_init(sk, v);
	return v;
}

SEC("struct_ops")
void BBR3_CC_PROG(init, struct sock *sk)
{
	BBR3_CC_(state_new)(sk);
}

SEC("struct_ops")
void BBR3_CC_PROG(release, struct sock *sk)
{
	bpf_sk_storage_delete(&BBR3_CC_(sk_stor), sk);
}

/* The BBR_PARTS_* lines are empty but in `make bench`'s timing build
 * (lib/parts_timing.h). */
SEC("struct_ops")
void BBR3_CC_PROG(main, struct sock *sk, u32 ack, int flag,
	      const struct rate_sample *rs)
{
	BBR_PARTS_BEGIN();
	BBR3_CC_SK *v = BBR3_CC_(sk)(sk);
	struct bbr_cc_ack a = {};

	if (!v) {
		/* the handshake's ACK comes before init (tcp_ack() runs in
		 * SYN_SENT and SYN_RECV, tcp_init_transfer() after) */
		if (sk->__sk_common.skc_state == TCP_SYN_SENT ||
		    sk->__sk_common.skc_state == TCP_SYN_RECV)
			return;
		v = BBR3_CC_(state_new)(sk);
		if (!v)
			return;
		__sync_fetch_and_add(&BBR3_CC_(stats).late_init, 1);
	}
	BBR_PARTS_MARK(get_ns);
	bbr3_ops_ack(sk, v);
	bbr_cc_ack_in(&a, sk, bbr3_ops_core(v), ack, flag, rs,
		      &BBR3_CC_(trace_ctl));
	BBR_PARTS_MARK(in_ns);
	BBR_PARTS_CORE_ON_COPY(bbr3_ops_core(v), &a, bbr3_ops_ext(v));
	bbr_core_main(bbr3_ops_core(v), &a.s, &a.r, bbr3_ops_ext(v));
	BBR_PARTS_MARK(core_ns);
	if (bbr3_ops_core(v)->st.round_start) {
		BBR_PARTS_ROUND_START();
		bbr_cc_pick_params(sk, &bbr3_ops_core(v)->st);
	}
	BBR_PARTS_MARK(pick_ns);
	bbr_cc_ack_out(&a, sk, bbr3_ops_core(v), bbr3_ops_ext(v),
		       &BBR3_CC_(trace_rb));
	BBR_PARTS_MARK(out_ns);
	BBR_PARTS_END();
}

SEC("struct_ops")
u32 BBR3_CC_PROG(ssthresh, struct sock *sk)
{
	BBR3_CC_SK *v = BBR3_CC_(sk)(sk);

	return v ? bbr_cc_ssthresh(sk, bbr3_ops_core(v)) :
		   tcp_sk(sk)->snd_ssthresh;
}

SEC("struct_ops")
u32 BBR3_CC_PROG(undo_cwnd, struct sock *sk)
{
	BBR3_CC_SK *v = BBR3_CC_(sk)(sk);

	return v ? bbr_cc_undo_cwnd(sk, bbr3_ops_core(v)) : tcp_sk(sk)->snd_cwnd;
}

SEC("struct_ops")
void BBR3_CC_PROG(set_state, struct sock *sk, u8 new_state)
{
	BBR3_CC_SK *v = BBR3_CC_(sk)(sk);

	if (v)
		bbr_cc_set_state(sk, bbr3_ops_core(v), new_state);
}

#ifdef BBR_TX_START_OP
SEC("struct_ops")
void BBR3_CC_PROG(cwnd_event_tx_start, struct sock *sk)
{
	BBR3_CC_SK *v = BBR3_CC_(sk)(sk);

	if (v)
		bbr_cc_tx_start(sk, bbr3_ops_core(v));
}
#else
SEC("struct_ops")
void BBR3_CC_PROG(cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	BBR3_CC_SK *v;

	if (event != CA_EVENT_TX_START)
		return;		/* the only event BBRv3 acts on as a sender */
	v = BBR3_CC_(sk)(sk);
	if (v)
		bbr_cc_tx_start(sk, bbr3_ops_core(v));
}
#endif

SEC("struct_ops")
void BBR3_CC_PROG(in_ack_event, struct sock *sk, u32 flags)
{
	BBR3_CC_SK *v;

	if (!bbr_cc_tlp_outstanding(sk))
		return;
	v = BBR3_CC_(sk)(sk);
	if (v)
		bbr_cc_in_ack_event(sk, bbr3_ops_core(v));
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

/* `bbrctl stat`: one record (BBR3_CC_REC) per socket of this CC of the
 * network namespace that reads it. */
SEC("iter/tcp")
int BBR3_CC_ID(dump, state)(struct bpf_iter__tcp *ctx)
{
	struct tcp_sock *tp = bbr_iter_tcp_sock(ctx);
	BBR3_CC_REC rec = {};
	BBR3_CC_SK *v;

	if (!tp)
		return 0;
	v = bpf_sk_storage_get(&BBR3_CC_(sk_stor), tp, NULL, 0);
	if (!v)
		return 0;
	bbr3_ops_rec(&rec, (struct sock *)tp, tp, v);
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}
