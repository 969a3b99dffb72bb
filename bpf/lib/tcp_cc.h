// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * lib/tcp_cc.h: what every struct_ops program of a CC built on the BBRv3
 * core does around the core: read the kernel's inputs from the socket and
 * the rate sample into a struct bbr_sock / struct bbr_rs, find the skbs the
 * stack just marked lost, call the core's entry point, write back what
 * changed (cwnd, pacing rate, app_limited, ssthresh), and fill the state
 * record of `bbrctl stat`. No algorithm here: that is core/bbr3.h.
 *
 * A CC (bpf/bbr3.bpf.c, bpf/bbr_swift.bpf.c) declares its own maps and
 * spells out its programs, each a few lines that look up the socket's
 * storage and call the bbr_cc_*() function of its op below. Its runtime
 * parameter sets are the array bbr_param_sets in the section .data.params
 * (BBR_CFG for the core; bbrctl set/params rewrite it), with
 * bbr_param_groups saying which rows of include/bbr_params.h it reads
 * (BBR_GLUE_PARAM_GROUPS, defined before including this file: the core's,
 * by default), and the hash map param_cgrp (cgroup v2 id -> set) that
 * chooses a socket's set.
 */
#ifndef BBR_LIB_TCP_CC_H
#define BBR_LIB_TCP_CC_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "core/types.h"
#include "bbr3_state.h"
#include "lib/cgroup.h"

#define BBR_CFG			bbr_param_sets
#define BBR_PRANDOM_U32()	bpf_get_prandom_u32()
#include "core/bbr3.h"

/* include/net/tcp.h: may be a netns default without being in
 * tcp_allowed_congestion_control, and keeps that across a live update. */
#define TCP_CONG_NON_RESTRICTED	0x1

/* net/ipv4/tcp_input.c FLAG_* bits passed to cong_control (checked
 * against 6.18). */
#define TCP_FLAG_ECE		0x40
#define TCP_FLAG_DSACK_TLP	0x20000

/* include/net/tcp_ecn.h (6.18): ECN negotiated as RFC 3168 or AccECN. */
#define TCP_ECN_MODE_RFC3168	0x1
#define TCP_ECN_MODE_ACCECN	0x10

/* Below 1.2 Mbit/s (150 kB/s) send one segment per TSO skb, as the
 * kernel's BBR does: bursts would be a large part of the BDP. */
#define BBR_MIN_TSO_RATE_BYTES_PER_SEC	(1200000 / 8)
/* Provision sndbuf as 3 x cwnd: room for cwnd growth in PROBE_UP and for
 * retransmits in recovery. Reference: bbr_sndbuf_expand. */
#define BBR_SNDBUF_EXPAND_FACTOR	3

/*
 * Runtime parameter sets, rewritable through the object's .data.params map
 * (its own section, so bbrctl rewrites them without touching other
 * globals). Every set starts as BBR_GLUE_PARAMS_INIT (the table's
 * defaults, unless the CC starts from a profile: bbr3_l4s); set 0 is the
 * default set.
 */
/* 1 in a CC whose object has the L4S mode's hooks (bbr3_l4s). */
#ifndef BBR_GLUE_L4S
#define BBR_GLUE_L4S		0
#endif

#ifndef BBR_GLUE_PARAMS_INIT
#define BBR_GLUE_PARAMS_INIT	BBR_PARAMS_DEFAULT
#endif
struct bbr_params bbr_param_sets[BBR_PARAM_SLOTS] SEC(".data.params") = {
	[0 ... BBR_PARAM_SLOTS - 1] = BBR_GLUE_PARAMS_INIT,
};

/* The rows of the table this CC reads (BBR_PARAM_GROUP_*), for bbrctl:
 * the programs never look at it. */
#ifndef BBR_GLUE_PARAM_GROUPS
#define BBR_GLUE_PARAM_GROUPS	BBR_PARAM_GROUP_CORE
#endif
u32 bbr_param_groups SEC(".data.params") = BBR_GLUE_PARAM_GROUPS;

#include "lib/param_cgrp.h"

/* Things a CC's programs could not do, for `bbrctl` and the tests (each
 * CC has one in .bss: <cc>_stats). */
struct bbr_glue_stats {
	u64 no_storage;		/* sk_storage allocation failed (init, or an ACK) */
	u64 not_initialized;	/* op called for a socket without state */
	u64 late_init;		/* state made on an ACK: init had none */
};

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

/* The socket's storage in the CC's map; counted if it has none. */
static __always_inline void *bbr_cc_value(void *stor, struct sock *sk,
					  struct bbr_glue_stats *stats)
{
	void *v = bpf_sk_storage_get(stor, sk, NULL, 0);

	if (!v)
		__sync_fetch_and_add(&stats->not_initialized, 1);
	return v;
}

/*
 * Choose the socket's parameter set from its cgroup: at init, and at every
 * round start (one hash lookup per round trip), so `bbrctl set` reaches
 * live connections within a round. Per ACK the core only indexes the array.
 * A socket with a set of its own (BBR_PARAM_SLOT_PINNED, written by
 * bpf/param_sock.bpf.c) keeps it.
 */
static __always_inline void bbr_cc_pick_params(struct sock *sk, struct bbr3 *b)
{
	u64 id;
	u32 *slot;

	if (b->param_slot & BBR_PARAM_SLOT_PINNED)
		return;
	id = bbr_sk_cgroup_id(sk);
	slot = bpf_map_lookup_elem(&param_cgrp, &id);
	bbr_core_set_param_slot(b, slot ? *slot : BBR_PARAM_SLOT_DEFAULT);
}

static __always_inline u32 packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* The ECN mode the handshake left in tp->ecn_flags (BBR_ECN_MODE_*). */
static __always_inline u8 bbr_ecn_mode(u8 ecn_flags)
{
	switch (ecn_flags & (TCP_ECN_MODE_RFC3168 | TCP_ECN_MODE_ACCECN)) {
	case TCP_ECN_MODE_RFC3168:
		return BBR_ECN_MODE_RFC3168;
	case TCP_ECN_MODE_ACCECN:
		return BBR_ECN_MODE_ACCECN;
	case TCP_ECN_MODE_RFC3168 | TCP_ECN_MODE_ACCECN:
		return BBR_ECN_MODE_PENDING;
	default:
		return BBR_ECN_MODE_OFF;
	}
}

/* Everything the core reads from the socket. */
static __always_inline void bbr_sock_load(struct bbr_sock *s, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct inet_connection_sock *icsk = inet_csk(sk);
	u64 wstamp = tp->tcp_wstamp_ns, clock = tp->tcp_clock_cache;

	s->now_us = tp->tcp_mstamp;
	s->delivered_mstamp_us = tp->delivered_mstamp;
	s->edt_lead_ns = wstamp > clock ? wstamp - clock : 0;
	s->max_pacing_rate = sk->sk_max_pacing_rate;
	s->delivered = tp->delivered;
	s->delivered_ce = tp->delivered_ce;
	s->lost = tp->lost;
	s->inflight = packets_in_flight(tp);
	s->packets_out = tp->packets_out;
	s->sacked_out = tp->sacked_out;
	s->lost_out = tp->lost_out;
	s->retrans_out = tp->retrans_out;
	s->mss = tp->mss_cache;
	s->srtt_us = tp->srtt_us >> 3;
	s->kernel_min_rtt_us = tp->rtt_min.s[0].v;
	s->snd_cwnd_clamp = tp->snd_cwnd_clamp;
	s->snd_nxt = tp->snd_nxt;
	s->snd_una = tp->snd_una;
	s->tlp_high_seq = tp->tlp_high_seq;
	s->prior_cwnd = tp->prior_cwnd;
	s->pacing_shift = sk->sk_pacing_shift;
	s->ca_state = BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
	s->is_cwnd_limited = BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited);
	s->tlp_retrans = BPF_CORE_READ_BITFIELD(tp, tlp_retrans);
	s->ecn_ok = !!(tp->ecn_flags & (TCP_ECN_MODE_RFC3168 | TCP_ECN_MODE_ACCECN));
	s->accecn = bbr_ecn_mode(tp->ecn_flags) == BBR_ECN_MODE_ACCECN;
	s->snd_cwnd = tp->snd_cwnd;
	s->snd_ssthresh = tp->snd_ssthresh;
	s->app_limited = tp->app_limited;
	s->pacing_rate = sk->sk_pacing_rate;
}

/* Write back the outputs the core changed. */
static __always_inline void bbr_sock_store(struct sock *sk,
					   const struct bbr_sock *s)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (s->snd_cwnd && tp->snd_cwnd != s->snd_cwnd)
		tp->snd_cwnd = s->snd_cwnd;
	if (tp->snd_ssthresh != s->snd_ssthresh)
		tp->snd_ssthresh = s->snd_ssthresh;
	if (tp->app_limited != s->app_limited)
		tp->app_limited = s->app_limited;
	if (sk->sk_pacing_rate != s->pacing_rate)
		sk->sk_pacing_rate = s->pacing_rate;
}

static __always_inline void bbr_rs_load(struct bbr_rs *r,
					const struct rate_sample *rs)
{
	r->interval_us = rs->interval_us;
	r->rtt_us = rs->rtt_us;
	r->prior_delivered = rs->prior_delivered;
	r->delivered = rs->delivered;
	r->delivered_ce = rs->delivered_ce;
	r->losses = rs->losses;
	r->acked_sacked = rs->acked_sacked;
	r->prior_in_flight = rs->prior_in_flight;
	r->last_end_seq = rs->last_end_seq;
	r->is_app_limited = rs->is_app_limited;
	r->is_retrans = rs->is_retrans;
	r->is_ack_delayed = rs->is_ack_delayed;
}

/*
 * The skbs the stack just marked lost (core/bbr3.h, "Finding the skbs the
 * stack just marked lost"): walk the retransmit queue (an rb-tree in
 * sequence order) from the stack's retransmit hint, or its head, and offer
 * the core each skb flagged lost and not yet retransmitted. Queue memory is
 * read with bpf_probe_read_kernel at CO-RE offsets: the skbs are reached
 * through rb_node pointers, which the verifier cannot retype.
 */
#define TCPCB_SACKED_ACKED	0x01	/* include/net/tcp.h */
#define TCPCB_SACKED_RETRANS	0x02
#define TCPCB_LOST		0x04
#define TCPCB_EVER_RETRANS	0x80
/* rb_next() climbs or descends at most the tree's height, 2 log2(n): 24
 * for the 4096 skbs of a large window. A walk that would go deeper stops;
 * what it did not reach is judged as one skb. */
#define BBR_RB_MAX_DEPTH	24

static __always_inline u64 bbr_read_ptr(u64 addr)
{
	u64 v = 0;

	if (addr)
		bpf_probe_read_kernel(&v, sizeof(v), (void *)addr);
	return v;
}

/* rb_node fields of the node at addr: __rb_parent_color, rb_right, rb_left */
#define BBR_RB_PARENT(n) (bbr_read_ptr((n) + bpf_core_field_offset(struct rb_node, __rb_parent_color)) & ~3ull)
#define BBR_RB_RIGHT(n)	bbr_read_ptr((n) + bpf_core_field_offset(struct rb_node, rb_right))
#define BBR_RB_LEFT(n)	bbr_read_ptr((n) + bpf_core_field_offset(struct rb_node, rb_left))

/* The leftmost node below n (n itself if it has no left child). */
static __always_inline u64 bbr_rb_leftmost(u64 n)
{
	u64 l;
	int i;

	for (i = 0; i < BBR_RB_MAX_DEPTH && n; i++) {
		l = BBR_RB_LEFT(n);
		if (!l)
			break;
		n = l;
	}
	return n;
}

/*
 * The walk is an in-order traversal done one rb-tree step per bpf_loop()
 * round, so the verifier checks one step instead of every path through
 * nested loops: visit a node (offer it if lost), then find its successor
 * by descending the right subtree's left spine or climbing while we come
 * from a right child.
 */
enum bbr_walk_step { BBR_WALK_VISIT, BBR_WALK_DESCEND, BBR_WALK_CLIMB };

struct bbr_walk_ctx {
	struct bbr3_sk *sks;
	struct bbr_sock *s;
	struct bbr_lost_walk w;
	u64 node;
	u32 step;	/* enum bbr_walk_step */
	u32 visited;
};

/* Offer the skb at node to the core if it is lost and not yet
 * retransmitted; false once the core wants no more. */
static __always_inline bool bbr_walk_visit(struct bbr_walk_ctx *c)
{
	u64 cb = c->node + bpf_core_field_offset(struct sk_buff, cb);
	struct bbr_lost_skb l = {};
	u32 tx_flags = 0;
	u16 pcount = 0;
	u8 sacked = 0;

	/* TCP_SKB_CB(skb): the fields the walk needs, at CO-RE offsets */
	if (bpf_probe_read_kernel(&sacked, 1, (void *)(cb +
			bpf_core_field_offset(struct tcp_skb_cb, sacked))))
		return false;
	if ((sacked & (TCPCB_SACKED_ACKED | TCPCB_SACKED_RETRANS | TCPCB_LOST)) !=
	    TCPCB_LOST)
		return true;
	bpf_probe_read_kernel(&l.end_seq, 4, (void *)(cb +
		bpf_core_field_offset(struct tcp_skb_cb, end_seq)));
	bpf_probe_read_kernel(&l.tx_delivered, 4, (void *)(cb +
		bpf_core_field_offset(struct tcp_skb_cb, tx.delivered)));
	bpf_probe_read_kernel(&pcount, 2, (void *)(cb +
		bpf_core_field_offset(struct tcp_skb_cb, tcp_gso_segs)));
	/* tx.is_app_limited: bit 0 of tx's first word (little endian) */
	bpf_probe_read_kernel(&tx_flags, 4, (void *)(cb +
		bpf_core_field_offset(struct tcp_skb_cb, tx)));
	l.pcount = pcount ? : 1;
	l.is_retrans = !!(sacked & TCPCB_EVER_RETRANS);
	l.is_app_limited = tx_flags & 1;
	return bbr_core_lost_walk_skb(c->sks, c->s, &c->w, &l);
}

static long bbr_walk_step(u64 index, void *ctx)
{
	struct bbr_walk_ctx *c = ctx;
	u64 next, parent;

	if (!c->node)
		return 1;
	switch (c->step) {
	case BBR_WALK_VISIT:
		if (c->visited++ >= BBR_LOST_WALK_MAX_SKBS || !bbr_walk_visit(c))
			return 1;
		next = BBR_RB_RIGHT(c->node);
		if (next) {
			c->node = next;
			c->step = BBR_WALK_DESCEND;
		} else {
			c->step = BBR_WALK_CLIMB;
		}
		return 0;
	case BBR_WALK_DESCEND:
		next = BBR_RB_LEFT(c->node);
		if (next)
			c->node = next;
		else
			c->step = BBR_WALK_VISIT;
		return 0;
	default:	/* BBR_WALK_CLIMB */
		parent = BBR_RB_PARENT(c->node);
		if (!parent || BBR_RB_RIGHT(parent) != c->node)
			c->step = BBR_WALK_VISIT;
		c->node = parent;
		return 0;
	}
}

/* skb->rbnode is the skb's first member: a node's address is its skb's.
 * A global function: the verifier checks it once, on its own. */
__noinline int bbr_cc_walk_lost(struct bbr3_sk *sks, struct bbr_sock *s,
				  u64 node)
{
	struct bbr_walk_ctx c = { .sks = sks, .s = s, .node = node };

	if (!sks || !s || !bbr_lost_walk_start(&sks->st, s, &c.w))
		return 0;
	bpf_loop(BBR_LOST_WALK_MAX_SKBS * (2 * BBR_RB_MAX_DEPTH + 1),
		 bbr_walk_step, &c, 0);
	return 0;
}

/* Offer the core what the stack marked lost since it last looked. */
static __always_inline void bbr_cc_find_lost(struct sock *sk,
					       struct bbr3_sk *sks,
					       struct bbr_sock *s)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u64 node;

	if (s->lost == sks->st.last_lost)
		return;		/* the common case: nothing new */
	/* read as plain addresses: the walk follows them with probe reads */
	node = bbr_read_ptr((u64)&tp->retransmit_skb_hint);
	if (!node)
		node = bbr_rb_leftmost(bbr_read_ptr((u64)&sk->tcp_rtx_queue.rb_node));
	bbr_cc_walk_lost(sks, s, node);
}

#include "lib/trace.h"

/* ---- The ops ---------------------------------------------------------------------------- */

/* init: a fresh per-socket state (v from BPF_SK_STORAGE_GET_F_CREATE). */
static __always_inline void bbr_cc_init(struct sock *sk, struct bbr3_sk *sks)
{
	struct bbr_sock s = {};

	/* Without pacing there is no BBR: let TCP's internal EDT pacing
	 * enforce sk_pacing_rate when no fq qdisc does. */
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;
	bbr_cc_pick_params(sk, &sks->st);
	bbr_sock_load(&s, sk);
	/* the latest rate sample, for a warm start of a live connection */
	s.rate_delivered = tcp_sk(sk)->rate_delivered;
	s.rate_interval_us = tcp_sk(sk)->rate_interval_us;
	bbr_core_init(sks, &s);
	bbr_sock_store(sk, &s);
}

/*
 * cong_control is three steps in the CC's program, as mainline's bbr_main()
 * is one function: bbr_cc_ack_in() reads the ACK's inputs into a struct
 * bbr_cc_ack, the core's bbr_core_main() runs the model and the control on
 * it (bbr_main_pipeline() -> bbr_set_pacing_rate(), bbr_set_cwnd()), and
 * bbr_cc_ack_out() writes cwnd and pacing rate to the socket (after the
 * parameter set of a new round is picked: bbr_cc_pick_params()). The entry
 * program calls the core itself: entry -> bbr_core_main ->
 * bbr_main_pipeline -> bbr_set_cwnd, three calls, and nothing between the
 * kernel's inputs and the algorithm but one copy on the stack.
 */
struct bbr_cc_ack {
	struct bbr_sock s;
	struct bbr_rs r;
	struct bbr_trace_ctl *tc;	/* a reader is tracing, or NULL */
	u8 prev_mode;			/* before this ACK, for the trace */
	u8 prev_phase;
};

static __always_inline void bbr_cc_ack_in(struct bbr_cc_ack *a, struct sock *sk,
					  struct bbr3_sk *sks, u32 ack, int flag,
					  const struct rate_sample *rs,
					  void *trace_ctl)
{
	a->tc = bbr_trace_on(trace_ctl);
	a->prev_mode = sks->st.mode;
	a->prev_phase = sks->st.cycle_idx;
	bbr_sock_load(&a->s, sk);
	a->s.ack = ack;
	a->s.ece = !!(flag & TCP_FLAG_ECE);
	a->s.dsack_tlp = !!(flag & TCP_FLAG_DSACK_TLP);
	bbr_rs_load(&a->r, rs);
	bbr_cc_find_lost(sk, sks, &a->s);
}

/* x: the variant's per-socket state (bbr_swift's), or NULL. The caller
 * has picked the parameters of a new round (bbr_cc_pick_params()). */
static __always_inline void bbr_cc_ack_out(struct bbr_cc_ack *a, struct sock *sk,
					   struct bbr3_sk *sks, BBR_EXT *x,
					   void *trace_rb)
{
	if (a->tc)
		bbr_trace_ack(trace_rb, a->tc, sk, sks, x, &a->s, &a->r,
			      a->prev_mode, a->prev_phase);
	bbr_sock_store(sk, &a->s);
}

static __always_inline u32 bbr_cc_ssthresh(struct sock *sk, struct bbr3_sk *sks)
{
	struct bbr_sock s = {};

	bbr_sock_load(&s, sk);
	return bbr_core_ssthresh(&sks->st, &s);
}

static __always_inline u32 bbr_cc_undo_cwnd(struct sock *sk, struct bbr3_sk *sks)
{
	struct bbr_sock s = {};
	u32 cwnd;

	bbr_sock_load(&s, sk);
	cwnd = bbr_core_undo_cwnd(&sks->st, &s);
	bbr_sock_store(sk, &s);		/* 2026 runs the pipeline: pacing */
	return cwnd;
}

static __always_inline void bbr_cc_set_state(struct sock *sk, struct bbr3_sk *sks,
					     u8 new_state)
{
	struct bbr_sock s = {};

	bbr_sock_load(&s, sk);
	bbr_core_set_state(sks, &s, new_state);
	bbr_sock_store(sk, &s);
}

/* CA_EVENT_TX_START through cwnd_event, or the cwnd_event_tx_start op of
 * Linux 7.1+ (docs/bbr3.md, "Builds"). */
static __always_inline void bbr_cc_tx_start(struct sock *sk, struct bbr3_sk *sks)
{
	struct bbr_sock s = {};

	bbr_sock_load(&s, sk);
	bbr_core_tx_start(&sks->st, &s);
	bbr_sock_store(sk, &s);
}

/* in_ack_event runs before the stack processes this ACK's TLP state. Most
 * ACKs have no TLP outstanding: nothing to read then, no storage lookup. */
static __always_inline bool bbr_cc_tlp_outstanding(struct sock *sk)
{
	return tcp_sk(sk)->tlp_high_seq != 0;
}

static __always_inline void bbr_cc_in_ack_event(struct sock *sk, struct bbr3_sk *sks)
{
	struct bbr_sock s = {};

	s.tlp_high_seq = tcp_sk(sk)->tlp_high_seq;
	s.tlp_retrans = BPF_CORE_READ_BITFIELD(tcp_sk(sk), tlp_retrans);
	bbr_core_in_ack_event(&sks->st, &s);
}

static __always_inline u32 bbr_cc_min_tso_segs(struct sock *sk)
{
	return sk->sk_pacing_rate < BBR_MIN_TSO_RATE_BYTES_PER_SEC ? 1 : 2;
}

/*
 * The ops as Linux 7.1+ has them, which this kernel's vmlinux.h (6.x) may
 * not: libbpf strips the ___tx_start flavour and matches the members by
 * name against the running kernel's tcp_congestion_ops. A build with it
 * (-DBBR_TX_START_OP, bpf/tx_start/) loads only where cwnd_event_tx_start
 * exists; bbrctl picks it there (loader/kfeat.h), the base build elsewhere.
 */
struct tcp_congestion_ops___tx_start {
	u32 (*ssthresh)(struct sock *sk);
	void (*set_state)(struct sock *sk, u8 new_state);
	void (*cwnd_event_tx_start)(struct sock *sk);
	void (*in_ack_event)(struct sock *sk, u32 flags);
	u32 (*min_tso_segs)(struct sock *sk);
	void (*cong_control)(struct sock *sk, u32 ack, int flag,
			     const struct rate_sample *rs);
	u32 (*undo_cwnd)(struct sock *sk);
	u32 (*sndbuf_expand)(struct sock *sk);
	char name[16];
	u32 flags;
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
};

/* ---- The state record of `bbrctl stat` -------------------------------------------------- */

/* The common part of a socket's record (struct bbr3_state_rec). */
static __always_inline void bbr_cc_fill_rec(struct bbr3_state_rec *rec,
					    struct sock *sk, struct tcp_sock *tp,
					    const struct bbr3_sk *sks)
{
	rec->version = BBR3_STATE_VERSION;
	rec->cookie = bpf_get_socket_cookie(sk);
	rec->pacing_rate_Bps = sk->sk_pacing_rate;
	rec->snd_cwnd_pkts = tp->snd_cwnd;
	rec->inflight_pkts = packets_in_flight(tp);
	rec->mss_bytes = tp->mss_cache;
	rec->srtt_us = tp->srtt_us >> 3;
	rec->delivered = tp->delivered;
	rec->lost = tp->lost;
	rec->delivered_ce = tp->delivered_ce;
	rec->family = sk->__sk_common.skc_family;
	rec->sport = sk->__sk_common.skc_num;
	rec->dport = bpf_ntohs(sk->__sk_common.skc_dport);
	if (rec->family == 2 /* AF_INET */) {
		__builtin_memcpy(rec->saddr, &sk->__sk_common.skc_rcv_saddr, 4);
		__builtin_memcpy(rec->daddr, &sk->__sk_common.skc_daddr, 4);
	} else {
		bpf_probe_read_kernel(rec->saddr, 16,
				      &sk->__sk_common.skc_v6_rcv_saddr);
		bpf_probe_read_kernel(rec->daddr, 16,
				      &sk->__sk_common.skc_v6_daddr);
	}
	rec->bytes_acked = tp->bytes_acked;
	rec->bytes_retrans = tp->bytes_retrans;
	rec->total_retrans = tp->total_retrans;
	rec->retrans_out = tp->retrans_out;
	rec->lost_out = tp->lost_out;
	rec->sacked_out = tp->sacked_out;
	rec->snd_ssthresh = tp->snd_ssthresh;
	rec->rttvar_us = tp->mdev_us >> 2;
	rec->kernel_min_rtt_us = tp->rtt_min.s[0].v;
	rec->ca_state = BPF_CORE_READ_BITFIELD(&tp->inet_conn, icsk_ca_state);
	rec->ecn_mode = bbr_ecn_mode(tp->ecn_flags);
	rec->cgroup_id = bbr_sk_cgroup_id(sk);
	/* the L4S mode exists in bbr3_l4s only (BBR_GLUE_L4S) */
	rec->l4s_mode = !BBR_GLUE_L4S || !bbr_params_of(&sks->st)->l4s ? BBR_L4S_OFF :
			rec->ecn_mode == BBR_ECN_MODE_ACCECN ? BBR_L4S_ON :
							       BBR_L4S_FALLBACK;
	__builtin_memcpy(&rec->st, &sks->st, sizeof(rec->st));
}

/* The socket an iter/tcp program is at, if it is a full TCP socket
 * (TIME_WAIT and request socks have no CC state). */
static __always_inline struct tcp_sock *bbr_iter_tcp_sock(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;

	return skc ? bpf_skc_to_tcp_sock(skc) : NULL;
}

#endif /* BBR_LIB_TCP_CC_H */
