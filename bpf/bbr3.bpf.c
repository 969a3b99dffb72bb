// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbr3: BBRv3 as a BPF struct_ops tcp_congestion_ops.
 *
 * Thin glue around the algorithm core in bbr3_core.h: each op reads the
 * kernel's inputs from the socket and the rate sample into a struct
 * bbr_sock / struct bbr_rs, calls the core, and writes back what changed
 * (cwnd, pacing rate, app_limited, ssthresh). The per-socket state lives in
 * the sk_storage map bbr3_sk_stor (icsk_ca_priv holds only 104 bytes).
 *
 * The object also carries dump_bbr3_state, an iterator over that map which
 * emits one struct bbr3_state_rec per socket for `bbrctl stat`.
 *
 * Load with `bbrctl load bbr3` or `bpftool struct_ops register bbr3.bpf.o DIR`.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "bbr_types.h"
#include "bbr3_state.h"

#define BBR_CFG			bbr3_params
#define BBR_PRANDOM_U32()	bpf_get_prandom_u32()
#include "bbr3_core.h"

char _license[] SEC("license") = "Dual BSD/GPL";

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

/* Runtime parameters, rewritable through the object's .data map. */
struct bbr_params bbr3_params = BBR_PARAMS_DEFAULT;

/* Things the glue could not do, for `bbrctl` and the tests. */
struct bbr3_glue_stats {
	u64 no_storage;		/* sk_storage allocation failed in init */
	u64 not_initialized;	/* op called for a socket without state */
} bbr3_stats;

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bbr3_sk);
} bbr3_sk_stor SEC(".maps");

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline struct bbr3_sk *bbr3_state(struct sock *sk)
{
	struct bbr3_sk *sks = bpf_sk_storage_get(&bbr3_sk_stor, sk, NULL, 0);

	if (!sks)
		__sync_fetch_and_add(&bbr3_stats.not_initialized, 1);
	return sks;
}

static __always_inline u32 packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
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

SEC("struct_ops")
void BPF_PROG(bbr3_init, struct sock *sk)
{
	struct bbr3_sk *sks;
	struct bbr_sock s = {};

	/* Without pacing there is no BBR: let TCP's internal EDT pacing
	 * enforce sk_pacing_rate when no fq qdisc does. */
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;

	sks = bpf_sk_storage_get(&bbr3_sk_stor, sk, NULL,
				 BPF_SK_STORAGE_GET_F_CREATE);
	if (!sks) {
		/* The socket keeps its initial cwnd, unpaced. */
		__sync_fetch_and_add(&bbr3_stats.no_storage, 1);
		return;
	}
	bbr_sock_load(&s, sk);
	bbr_core_init(sks, &s);
	bbr_sock_store(sk, &s);
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
	struct bbr3_sk *sks = bbr3_state(sk);
	struct bbr_sock s = {};
	struct bbr_rs r = {};

	if (!sks)
		return;
	bbr_sock_load(&s, sk);
	s.ack = ack;
	s.ece = !!(flag & TCP_FLAG_ECE);
	s.dsack_tlp = !!(flag & TCP_FLAG_DSACK_TLP);
	bbr_rs_load(&r, rs);
	bbr_core_main(sks, &s, &r);
	bbr_sock_store(sk, &s);
}

SEC("struct_ops")
u32 BPF_PROG(bbr3_ssthresh, struct sock *sk)
{
	struct bbr3_sk *sks = bbr3_state(sk);
	struct bbr_sock s = {};

	if (!sks)
		return tcp_sk(sk)->snd_ssthresh;
	bbr_sock_load(&s, sk);
	return bbr_core_ssthresh(&sks->st, &s);
}

SEC("struct_ops")
u32 BPF_PROG(bbr3_undo_cwnd, struct sock *sk)
{
	struct bbr3_sk *sks = bbr3_state(sk);
	struct bbr_sock s = {};

	if (!sks)
		return tcp_sk(sk)->snd_cwnd;
	bbr_sock_load(&s, sk);
	return bbr_core_undo_cwnd(&sks->st, &s);
}

SEC("struct_ops")
void BPF_PROG(bbr3_set_state, struct sock *sk, u8 new_state)
{
	struct bbr3_sk *sks = bbr3_state(sk);
	struct bbr_sock s = {};

	if (!sks)
		return;
	bbr_sock_load(&s, sk);
	bbr_core_set_state(&sks->st, &s, new_state);
	bbr_sock_store(sk, &s);
}

SEC("struct_ops")
void BPF_PROG(bbr3_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct bbr3_sk *sks;
	struct bbr_sock s = {};

	if (event != CA_EVENT_TX_START)
		return;		/* the only event BBRv3 acts on as a sender */
	sks = bbr3_state(sk);
	if (!sks)
		return;
	bbr_sock_load(&s, sk);
	bbr_core_cwnd_event(&sks->st, &s, event);
	bbr_sock_store(sk, &s);
}

SEC("struct_ops")
void BPF_PROG(bbr3_in_ack_event, struct sock *sk, u32 flags)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr3_sk *sks;

	if (!tp->tlp_high_seq)
		return;		/* common case: no TLP outstanding, nothing to do */
	sks = bbr3_state(sk);
	if (!sks)
		return;
	sks->st.tlp_high_seq = tp->tlp_high_seq;
	sks->st.tlp_retrans_seen = BPF_CORE_READ_BITFIELD(tp, tlp_retrans);
}

SEC("struct_ops")
u32 BPF_PROG(bbr3_min_tso_segs, struct sock *sk)
{
	return sk->sk_pacing_rate < BBR_MIN_TSO_RATE_BYTES_PER_SEC ? 1 : 2;
}

SEC("struct_ops")
u32 BPF_PROG(bbr3_sndbuf_expand, struct sock *sk)
{
	return BBR_SNDBUF_EXPAND_FACTOR;
}

SEC(".struct_ops.link")
struct tcp_congestion_ops bbr3 = {
	.init		= (void *)bbr3_init,
	.release	= (void *)bbr3_release,
	.cong_control	= (void *)bbr3_main,
	.ssthresh	= (void *)bbr3_ssthresh,
	.undo_cwnd	= (void *)bbr3_undo_cwnd,
	.set_state	= (void *)bbr3_set_state,
	.cwnd_event	= (void *)bbr3_cwnd_event,
	.in_ack_event	= (void *)bbr3_in_ack_event,
	.min_tso_segs	= (void *)bbr3_min_tso_segs,
	.sndbuf_expand	= (void *)bbr3_sndbuf_expand,
	.flags		= TCP_CONG_NON_RESTRICTED,
	.name		= "bbr3",
};

/* ---- State view for userspace --------------------------------------------- */

SEC("iter/bpf_sk_storage_map")
int dump_bbr3_state(struct bpf_iter__bpf_sk_storage_map *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct bbr3_sk *sks = ctx->value;
	struct sock *sk = ctx->sk;
	struct bbr3_state_rec rec = {};
	struct tcp_sock *tp;

	if (!sk || !sks)
		return 0;
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return 0;

	rec.version = BBR3_STATE_VERSION;
	rec.cookie = bpf_get_socket_cookie(sk);
	rec.pacing_rate_Bps = sk->sk_pacing_rate;
	rec.snd_cwnd_pkts = tp->snd_cwnd;
	rec.inflight_pkts = packets_in_flight(tp);
	rec.mss_bytes = tp->mss_cache;
	rec.srtt_us = tp->srtt_us >> 3;
	rec.delivered = tp->delivered;
	rec.lost = tp->lost;
	rec.delivered_ce = tp->delivered_ce;
	rec.family = sk->__sk_common.skc_family;
	rec.sport = sk->__sk_common.skc_num;
	rec.dport = bpf_ntohs(sk->__sk_common.skc_dport);
	if (rec.family == 2 /* AF_INET */) {
		__builtin_memcpy(rec.saddr, &sk->__sk_common.skc_rcv_saddr, 4);
		__builtin_memcpy(rec.daddr, &sk->__sk_common.skc_daddr, 4);
	} else {
		bpf_probe_read_kernel(rec.saddr, 16,
				      &sk->__sk_common.skc_v6_rcv_saddr);
		bpf_probe_read_kernel(rec.daddr, 16,
				      &sk->__sk_common.skc_v6_daddr);
	}
	__builtin_memcpy(&rec.st, &sks->st, sizeof(rec.st));
	bpf_seq_write(seq, &rec, sizeof(rec));
	return 0;
}
