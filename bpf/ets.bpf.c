// SPDX-License-Identifier: GPL-2.0-only
/*
 * ETS (draft-yang-tcpm-ets-00) in a cgroup sockops program: negotiation,
 * the option on every segment, Receiver_ACK_Delay at the receiver and
 * Network_RTT at the sender, published in the sk_storage map ets_sk_stor
 * (include/ets_shared.h) that bbr_swift reads on the same ACK.
 *
 * Negotiation. The active side turns on the header-option callbacks at
 * TCP_CONNECT_CB and offers a 16-byte option on its SYN. A listener gets
 * the callbacks at TCP_LISTEN_CB and answers on the SYN-ACK only when the
 * SYN (syn_skb) carried ETS. ETS is enabled on a connection only when the
 * SYN-ACK (active side) or the handshake's final ACK (passive side) carries
 * it; otherwise it is disabled for good. Once enabled, an incoming segment
 * without the option disables it for good (draft §2.1), except when that
 * segment carries SACK blocks: the kernel gives SACK the option space
 * first, so a peer running this program legitimately drops ETS then.
 *
 * Clocks. TSval is the time the segment is written (bpf_ktime_get_ns() in
 * WRITE_HDR_OPT_CB), CLOCK_MONOTONIC, in us truncated to 32 bits. ACK
 * arrival and TS.LatestClock are the kernel's software RX stamp when it
 * keeps one (CLOCK_REALTIME, converted), else bpf_ktime_get_ns() in the
 * parse callback (softirq time), or the NIC's RX stamp converted with the
 * PHC->MONOTONIC offset the loader publishes in ets_cfg; never a raw PHC
 * stamp. See docs/ets.md.
 *
 * Cost. The receiver parses the segment its next ACK echoes and pauses
 * the parse callback until it writes again (parse_pause()): once per ACK,
 * not once per data segment. The option is read in place where our peer
 * writes it (ets_load_in_place()); the kernel's search is the fallback.
 * The length callback of an established connection, which the kernel
 * also runs for every MSS query (tcp_current_mss(), no segment), only
 * reserves the space: what it decided before (the silence check, the
 * parse resume) is done by the write callback of the same segment. The
 * per-segment counters are tallied per socket and added to ets_stats every
 * ETS_TALLY_FOLD_CALLS calls and at close (tally_fold()).
 *
 * Host delay. How late a data segment is written after its pacing time
 * (its EDT, skb->tstamp) and how long an ACK waited between its RX stamp
 * and this program are the sender's own delays: both are left out of
 * Network_RTT by the clocks above and published apart (ets_sk.tx_late_us,
 * rx_wait_us, host_delay_us), for bbr_swift's host target.
 *
 * The path filter. Each sample also updates the ets_path map (per netns and
 * peer: the least Network_RTT over the path window, core/ets_opt.h) and
 * publishes its value with the sample (ets_sk.path_rtt_us).
 *
 * The codec and every piece of arithmetic live in core/ets_opt.h (unit-tested
 * and fuzzed natively); this file is glue.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "core/types.h"
#include "ets_shared.h"
#include "core/ets_opt.h"

char LICENSE[] SEC("license") = "GPL";

/* include/uapi/linux/tcp.h / net/tcp.h values not in vmlinux.h's BTF. */
#define TCPHDR_SYN		0x02
#define TCPHDR_ACK		0x10
#define TCPHDR_FIN	0x01
#define TCPOPT_SACK		5
#define ENOMSG			42	/* include/uapi/asm-generic/errno.h */
#define ENOSPC			28
/*
 * The receiver's ACK delay bound on an ETS connection, advertised as
 * MaxACKDel and enforced (TCP_BPF_DELACK_MAX) unless ets_cfg says
 * otherwise: 8 ms, so that EcrDel fits the option's microsecond unit (13
 * bits: up to 8.191 ms). It is also the kernel's least (two jiffies,
 * TCP_TIMEOUT_MIN, at HZ 250; the timer then fires 4 to 8 ms after the
 * segment). Beyond that the
 * receiver must send it in milliseconds, rounded: +-0.5 ms of error on
 * every Network_RTT sample of a flow that sends a packet now and then and
 * gets its ACK after the kernel's delayed-ACK timer (40 ms or more), which
 * is every flow of a heavy incast. It also ACKs such flows once per packet,
 * so their delay control hears of the queue that much sooner (Swift does
 * not delay ACKs at all).
 */
#define ETS_MAX_ACK_DEL_DEFAULT_US	8000
/* include/net/tcp.h TCP_DELACK_MAX: the kernel's own bound, 200 ms; a
 * configured bound at or above it is advertised but not enforced. */
#define ETS_DELACK_MAX_US	200000
#define SOL_TCP			6	/* include/linux/socket.h */
#define TCP_SAVE_SYN		27	/* include/uapi/linux/tcp.h */
/* Network_RTT min filter window when ets_cfg leaves it 0 (Swift's base
 * delay horizon: a base RTT is remembered for about 10 s). */
#define ETS_MIN_WIN_NS		10000000000ull

#define ETS_CB_FLAGS	(BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG | \
			 BPF_SOCK_OPS_PARSE_ALL_HDR_OPT_CB_FLAG)

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

#include "lib/ets_sk_stor.h"

/* Counters per network namespace (netns cookie). LRU: nothing tells the
 * program that a namespace is gone, so the entries of removed namespaces
 * make way for new ones instead of filling the map for good. Per CPU: the
 * sender's and the receiver's softirqs count on every segment, and one
 * shared counter would move its cache line between CPUs each time
 * (readers sum the CPUs). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, ETS_STATS_MAX_NETNS);
	__type(key, u64);
	__type(value, struct ets_stats);
} ets_stats SEC(".maps");


#define CNT(st, field)	do { if (st) __sync_fetch_and_add(&(st)->field, 1); } while (0)

/* The socket's netns cookie, what bpf_get_netns_cookie() returns, read
 * from the socket (as bbr_swift does for the same ets_path key) instead
 * of through a helper call. */
static __always_inline u64 netns_cookie(struct bpf_sock_ops *skops)
{
	struct bpf_sock_ops_kern *kctx = bpf_cast_to_kern_ctx(skops);
	struct sock *sk = kctx->sk;

	return sk ? sk->__sk_common.skc_net.net->net_cookie : 0;
}

static __always_inline struct ets_stats *stats_get(struct bpf_sock_ops *skops)
{
	static const struct ets_stats zero;
	u64 key = netns_cookie(skops);
	struct ets_stats *st;

	st = bpf_map_lookup_elem(&ets_stats, &key);
	if (st)
		return st;
	bpf_map_update_elem(&ets_stats, &key, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&ets_stats, &key);
}

/* A counter of something rare, by its u64 word in struct ets_stats: the
 * map lookup only when it happens, and out of line, so that the common
 * paths stay short. */
#define STATS_WORD(field)	(__builtin_offsetof(struct ets_stats, field) / sizeof(u64))
#define CNT_NOW(skops, field)	count_rare(skops, STATS_WORD(field))

static __noinline int count_rare(struct bpf_sock_ops *skops, u32 word)
{
	struct ets_stats *st = stats_get(skops);
	u64 *w = (u64 *)st;

	if (st && word < sizeof(*st) / sizeof(u64))
		__sync_fetch_and_add(&w[word], 1);
	return 0;
}

/* Add the socket's tally to the netns counters and start it again. */
static __noinline int tally_fold(struct bpf_sock_ops *skops, struct ets_sk *e)
{
	struct ets_tally *t = &e->tally;
	struct ets_stats *st;

	if (!t->sent && !t->parse_calls)
		return 0;	/* every other count comes with one of these */
	st = stats_get(skops);
	if (st) {
		__sync_fetch_and_add(&st->sent, t->sent);
		__sync_fetch_and_add(&st->parsed, t->parsed);
		__sync_fetch_and_add(&st->samples, t->samples);
		__sync_fetch_and_add(&st->parse_calls, t->parse_calls);
		__sync_fetch_and_add(&st->tx_late_sum_us, t->tx_late_sum_us);
		__sync_fetch_and_add(&st->tx_late_n, t->tx_late_n);
		__sync_fetch_and_add(&st->rx_wait_sum_us, t->rx_wait_sum_us);
		__sync_fetch_and_add(&st->rx_wait_n, t->rx_wait_n);
	}
	__builtin_memset(t, 0, sizeof(*t));
	return 0;
}

static __always_inline void tally_tick(struct bpf_sock_ops *skops,
				       struct ets_sk *e)
{
	if (e->tally.sent + e->tally.parse_calls >= ETS_TALLY_FOLD_CALLS)
		tally_fold(skops, e);
}

static __always_inline struct ets_cfg *cfg_get(void)
{
	u32 key = 0;

	return bpf_map_lookup_elem(&ets_cfg, &key);
}

static __always_inline struct ets_sk *ets_get(struct bpf_sock_ops *skops,
					      bool create)
{
	struct bpf_sock *sk = skops->sk;

	if (!sk)
		return NULL;
	return bpf_sk_storage_get(&ets_sk_stor, sk, NULL,
				  create ? BPF_SK_STORAGE_GET_F_CREATE : 0);
}

/* Find the ETS option in the current segment (flags 0) or the SYN. The
 * buffer holds any option (40 bytes), so an over-long option is copied and
 * rejected by ets_parse() by its length; one that runs past the header
 * fails the kernel's search (-EFAULT): truncated. */
#define ETS_LOAD_BUF_BYTES	40
static __always_inline int ets_load(struct bpf_sock_ops *skops, u8 *buf,
				    u64 flags)
{
	buf[0] = ETS_OPT_KIND;
	buf[1] = 4;		/* search by a 2-byte ExID */
	buf[2] = ETS_OPT_EXID >> 8;
	buf[3] = ETS_OPT_EXID & 0xff;
	return bpf_load_hdr_opt(skops, buf, ETS_LOAD_BUF_BYTES, flags);
}

/* The SYN's ETS offer (the SYN-ACK's callbacks: the SYN being answered;
 * PASSIVE_ESTABLISHED_CB: the SYN the listener kept), into *o; false when
 * the SYN has none, or a malformed one. buf: ETS_LOAD_BUF_BYTES. */
static __always_inline bool syn_offer(struct bpf_sock_ops *skops, u8 *buf,
				      struct ets_opt *o)
{
	int len = ets_load(skops, buf, BPF_LOAD_HDR_OPT_TCP_SYN);

	return len >= 0 && ets_parse(buf, len, true, o) == ETS_OK;
}

/*
 * The option where this program's peer writes it: right after the RFC 7323
 * timestamp the kernel writes first (NOP, NOP, kind 8 length 10: 12 bytes),
 * with our length and ExID. Read from the header in place: no helper call,
 * no search. The option list is then exactly what the kernel's walk would
 * see first (NOP, NOP, a well-formed TS), so the option found is the one
 * bpf_load_hdr_opt() would return. Any other layout (no timestamps, SACK
 * blocks first, a malformed option) goes to ets_load(), which searches.
 * Returns the option's length copied into buf, or 0 when not there.
 */
#define ETS_TS_PREFIX_BYTES	12	/* NOP, NOP, TS (RFC 7323 appendix A) */
#define TCPOPT_TIMESTAMP	8
#define TCPOLEN_TIMESTAMP	10
static __always_inline int ets_load_in_place(struct bpf_sock_ops *skops, u8 *buf)
{
	u8 *data = (u8 *)(long)skops->skb_data;
	u8 *end = (u8 *)(long)skops->skb_data_end;
	struct tcphdr *th = (void *)data;
	u8 *o = data + sizeof(*th);

	if ((void *)(o + ETS_TS_PREFIX_BYTES + ETS_OPT_LEN_BYTES) > (void *)end)
		return 0;
	if (th->doff * 4 < sizeof(*th) + ETS_TS_PREFIX_BYTES + ETS_OPT_LEN_BYTES)
		return 0;
	if (o[0] != ETS_TCPOPT_NOP || o[1] != ETS_TCPOPT_NOP ||
	    o[2] != TCPOPT_TIMESTAMP || o[3] != TCPOLEN_TIMESTAMP)
		return 0;
	o += ETS_TS_PREFIX_BYTES;
	if (o[0] != ETS_OPT_KIND || o[1] != ETS_OPT_LEN_BYTES ||
	    o[2] != (ETS_OPT_EXID >> 8) || o[3] != (ETS_OPT_EXID & 0xff))
		return 0;
	__builtin_memcpy(buf, o, ETS_OPT_LEN_BYTES);
	return ETS_OPT_LEN_BYTES;
}

static __always_inline void cb_flags(struct bpf_sock_ops *skops, bool on)
{
	u32 f = skops->bpf_sock_ops_cb_flags;

	bpf_sock_ops_cb_flags_set(skops, on ? f | ETS_CB_FLAGS
					    : f & ~ETS_CB_FLAGS);
}

/* The skb of this callback's segment: its EDT when written, its software
 * RX stamp (or 0) when parsed. */
static __always_inline u64 skb_tstamp_ns(struct bpf_sock_ops *skops)
{
	struct bpf_sock_ops_kern *kctx = bpf_cast_to_kern_ctx(skops);
	struct sk_buff *skb = kctx->skb;

	return skb ? skb->tstamp : 0;
}

/* The largest TCP header: a segment written longer than this carries data. */
#define TCP_HDR_MAX_BYTES	60

/* A data segment is written now_ns: how late after its pacing time (EDT,
 * with TCP's internal pacing never in the future; with fq it is, and then
 * the wait is pacing, not host delay). */
static __always_inline void note_tx_late(struct bpf_sock_ops *skops,
					 struct ets_sk *e, u64 now_ns)
{
	u64 edt = skb_tstamp_ns(skops), late_us;

	if (skops->skb_len <= TCP_HDR_MAX_BYTES || !edt || edt > now_ns)
		return;
	late_us = (now_ns - edt) / 1000;
	if (late_us > ETS_HW_MAX_AGE_NS / 1000)
		return;		/* not a lateness: an EDT from an old clock */
	e->tx_late_us = ets_ewma_us(e->tx_late_us, (u32)late_us);
	e->tally.tx_late_sum_us += (u32)late_us;
	e->tally.tx_late_n++;
}

static __always_inline u16 max_ack_del_field(struct ets_cfg *cfg)
{
	return ets_maxackdel_field(cfg && cfg->max_ack_del_us ?
				   cfg->max_ack_del_us : ETS_MAX_ACK_DEL_DEFAULT_US);
}

static __always_inline void disable(struct bpf_sock_ops *skops,
				    struct ets_sk *e)
{
	e->flags |= ETS_F_DISABLED;
	e->flags &= ~ETS_F_ENABLED;
	cb_flags(skops, false);
	tally_fold(skops, e);
}

/* TCP states in which the peer may answer from TIME_WAIT (tcp_states.h). */
#define TCP_FIN_WAIT1_STATE	4
#define TCP_FIN_WAIT2_STATE	5
#define TCP_CLOSE_WAIT_STATE	8
#define TCP_LAST_ACK_STATE	9
#define TCP_CLOSING_STATE	11

static __always_inline bool closing(struct bpf_sock_ops *skops)
{
	u32 st = skops->state;

	return (skops->skb_tcp_flags & TCPHDR_FIN) ||
	       st == TCP_FIN_WAIT1_STATE || st == TCP_FIN_WAIT2_STATE ||
	       st == TCP_CLOSE_WAIT_STATE || st == TCP_LAST_ACK_STATE ||
	       st == TCP_CLOSING_STATE;
}

/*
 * Segments with the option (or excused without it) were seen up to here:
 * the segment being parsed acknowledges up to its ack_seq and carries data
 * up to its end_seq. Both are read from the skb's control block
 * (TCP_SKB_CB()), which is what tcp_ack() and tcp_data_queue() act on,
 * not from its TCP header: when the socket is owned by its user, the
 * kernel appends a segment with the same options as the one queued
 * before it to that one (tcp_add_backlog()), pure ACKs included, and
 * advances only the control block's ack_seq. Two ACKs the peer wrote in
 * the same millisecond with the same SACK blocks and no room for ETS (three
 * blocks) are such a pair: with the header's ack_seq, the second one's
 * acknowledgment was never seen here, and snd_una ran ahead of una_mark as
 * if the peer had gone silent (docs/ets.md, "A peer gone silent").
 */
static __always_inline void mark_seen(struct bpf_sock_ops *skops,
				      struct ets_sk *e)
{
	struct bpf_sock_ops_kern *kctx = bpf_cast_to_kern_ctx(skops);
	struct sk_buff *skb = kctx->skb;
	struct tcp_skb_cb *cb;

	if (!skb)
		return;
	cb = (void *)skb->cb;
	if (skops->skb_tcp_flags & TCPHDR_ACK)
		ets_mark_advance(&e->una_mark, cb->ack_seq);
	ets_mark_advance(&e->rcv_mark, cb->end_seq);
}

/*
 * Before this side writes a segment: has the peer gone silent, ACKs or
 * data ETS_MISSING_LIMIT segments past the last that carried the option,
 * all on the kernel's fast path (ets_peer_silent())? Then ETS is turned off
 * as for segments counted missing in the parse callback; not on a closing
 * connection, whose peer may answer from TIME_WAIT.
 */
static __always_inline bool peer_went_silent(struct bpf_sock_ops *skops,
					     struct ets_sk *e)
{
	if (!ets_peer_silent(skops->snd_una, skops->rcv_nxt, e->una_mark,
			     e->rcv_mark, skops->mss_cache, ETS_MISSING_LIMIT) ||
	    closing(skops))
		return false;
	disable(skops, e);
	CNT_NOW(skops, missing);
	return true;
}

/*
 * The receiver's pause. What an ACK echoes is the TSval of the segment
 * that covered Last.ACK.sent (TS.Recent, RFC 7323 §4.3): the first one to
 * arrive after this side last wrote. Once that data segment has been
 * parsed, the segments after it until this side writes again add nothing
 * the next ACK needs but TS.Latest, and TS.Latest taken from the echoed
 * segment itself makes EcrDel exactly how long that segment was held
 * (docs/ets.md, "Receiver"). So the parse callback is turned off there
 * and back on at the next segment this side writes: a bulk receiver runs
 * the program once per ACK instead of once per data segment.
 *
 * The segments it did not see may have acknowledged data or carried the
 * option: the marks of the silence check move to where this side is when
 * it resumes, so a peer gone silent is noticed one ACK later than it
 * would have been, not falsely.
 */
static __always_inline void parse_pause(struct bpf_sock_ops *skops,
					struct ets_sk *e)
{
	e->flags |= ETS_F_PARSE_PAUSED;
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags &
				  ~BPF_SOCK_OPS_PARSE_ALL_HDR_OPT_CB_FLAG);
}

static __always_inline void parse_resume(struct bpf_sock_ops *skops,
					 struct ets_sk *e)
{
	e->flags &= ~ETS_F_PARSE_PAUSED;
	ets_mark_advance(&e->una_mark, skops->snd_una);
	ets_mark_advance(&e->rcv_mark, skops->rcv_nxt);
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
				  BPF_SOCK_OPS_PARSE_ALL_HDR_OPT_CB_FLAG);
}

/*
 * A segment goes out: the parse resumes (the next segment to echo is on
 * its way), and the segment carries tcp_select_window()'s rcv_wup, which
 * is rcv_nxt.
 */
static __always_inline void segment_out(struct bpf_sock_ops *skops,
					struct ets_sk *e)
{
	if (e->flags & ETS_F_PARSE_PAUSED)
		parse_resume(skops, e);
	e->rcv_wup = skops->rcv_nxt;
}

/* ---- HDR_OPT_LEN_CB ------------------------------------------------ */

/* A segment goes out without the option (SACK blocks took the space):
 * no write callback follows, so the segment's side of the protocol is
 * done here. Rare: out of line. */
static __noinline int out_without_option(struct bpf_sock_ops *skops)
{
	struct ets_sk *e;

	CNT_NOW(skops, reserve_nospace);
	if (skops->skb_tcp_flags & TCPHDR_SYN)
		return 0;
	e = ets_get(skops, false);
	if (e && (e->flags & ETS_F_ENABLED))
		segment_out(skops, e);
	return 0;
}

/*
 * The length callback. Established: the kernel runs it for every segment
 * it builds and for every MSS query (tcp_current_mss(): no segment,
 * args[0] BPF_WRITE_HDR_TCP_CURRENT_MSS), which must account for the
 * option too, and the queries are about half of the calls. It runs only
 * while the header-option callbacks are on, which this program turns on
 * for a connection with ETS (or in its handshake) and off when ETS goes:
 * so it reserves the space and does nothing else, no storage lookup, no
 * counter. The write callback of the same segment does the rest
 * (on_write()). SYN-ACK: answer only a well-formed offer; space reserved
 * and not written would go out as 16 bytes of NOPs.
 */
static __always_inline void on_opt_len(struct bpf_sock_ops *skops)
{
	u8 tcp_flags = skops->skb_tcp_flags;
	u8 buf[ETS_LOAD_BUF_BYTES];
	struct ets_opt syn_opt;

	if ((tcp_flags & (TCPHDR_SYN | TCPHDR_ACK)) == (TCPHDR_SYN | TCPHDR_ACK) &&
	    !syn_offer(skops, buf, &syn_opt))
		return;
	if (bpf_reserve_hdr_opt(skops, ETS_OPT_SPACE_BYTES, 0) &&
	    skops->args[0] != BPF_WRITE_HDR_TCP_CURRENT_MSS)
		out_without_option(skops);
}

/* ---- WRITE_HDR_OPT_CB ---------------------------------------------- */

/* SYN and SYN-ACK: the offer and the answer (rare: counted at once). */
static __always_inline void on_write_syn(struct bpf_sock_ops *skops, bool ack,
					 u64 now_ns)
{
	u32 tsval = (u32)(now_ns / 1000);
	u8 buf[ETS_LOAD_BUF_BYTES] = {};
	struct ets_stats *st;
	struct ets_opt syn_opt;
	struct ets_sk *e;

	if (ack) {
		/* The SYN's TSval is echoed; the time the SYN waited is not
		 * known here, so EcrDel is "invalid" (no sample from it). */
		if (!syn_offer(skops, buf, &syn_opt))
			return;
		ets_encode(buf, true, true, tsval, syn_opt.tsval_us, -1,
			   max_ack_del_field(cfg_get()));
	} else {
		e = ets_get(skops, true);
		if (e)
			e->flags |= ETS_F_OFFERED;
		ets_encode(buf, true, false, tsval, 0, 0,
			   max_ack_del_field(cfg_get()));
	}
	st = stats_get(skops);
	if (bpf_store_hdr_opt(skops, buf, ETS_OPT_LEN_SYN_BYTES, 0)) {
		CNT(st, store_err);
		return;
	}
	CNT(st, sent);
	CNT(st, sent_syn);
}

/*
 * Every other segment. First what the length callback left here: the
 * segment goes out (segment_out()); a peer gone silent turns ETS off, and
 * this one segment then carries the 16 bytes the length callback reserved
 * as NOPs.
 */
static __always_inline void on_write(struct bpf_sock_ops *skops)
{
	u8 tcp_flags = skops->skb_tcp_flags;
	u8 buf[ETS_OPT_LEN_BYTES];	/* all of it written by ets_encode() */
	struct ets_sk *e;
	u64 now_ns;

	if (tcp_flags & TCPHDR_SYN) {
		on_write_syn(skops, tcp_flags & TCPHDR_ACK, bpf_ktime_get_ns());
		return;
	}
	e = ets_get(skops, false);
	if (!e || !(e->flags & ETS_F_ENABLED))
		return;
	segment_out(skops, e);
	if (peer_went_silent(skops, e))
		return;
	now_ns = bpf_ktime_get_ns();
	note_tx_late(skops, e, now_ns);
	ets_encode(buf, false, tcp_flags & TCPHDR_ACK, (u32)(now_ns / 1000),
		   e->ts_recent_us,
		   ets_ecrdel_compute_us(now_ns, e->ts_latest_clock_ns,
					 e->ts_latest_us, e->ts_recent_us), 0);
	if (bpf_store_hdr_opt(skops, buf, ETS_OPT_LEN_BYTES, 0)) {
		CNT_NOW(skops, store_err);
		return;
	}
	e->tally.sent++;
	tally_tick(skops, e);
}

/* ---- handshake ----------------------------------------------------- */

/* Keep the MaxACKDel promise (see ETS_MAX_ACK_DEL_DEFAULT_US): cap the
 * connection's delayed-ACK timer; the kernel rounds up to a jiffy and
 * refuses less than two (at HZ 100, 20 ms): then the kernel's bound stays
 * and ets_stats.delack_refused counts it. */
static __always_inline void enforce_max_ack_delay(struct bpf_sock_ops *skops,
						  struct ets_cfg *cfg,
						  struct ets_stats *st)
{
	int us = cfg && cfg->max_ack_del_us ? (int)cfg->max_ack_del_us
					    : ETS_MAX_ACK_DEL_DEFAULT_US;

	if (us < ETS_DELACK_MAX_US &&
	    bpf_setsockopt(skops, SOL_TCP, TCP_BPF_DELACK_MAX, &us, sizeof(us)))
		CNT(st, delack_refused);
}


/*
 * A listener keeps each SYN for its children (TCP_SAVE_SYN), unless its
 * application chose already: the passive side reads the peer's MaxACKDel
 * from the SYN's offer at establishment (passive_peer_max_ack_delay()),
 * since the ACK that completes the handshake does not carry it. The kernel
 * keeps the copy (the SYN's IP and TCP headers, ~100 bytes) with the child
 * until it is closed or its application reads it.
 */
static __always_inline void save_syn(struct bpf_sock_ops *skops)
{
	int one = 1, cur = 0;

	if (!bpf_getsockopt(skops, SOL_TCP, TCP_SAVE_SYN, &cur, sizeof(cur)) && !cur)
		bpf_setsockopt(skops, SOL_TCP, TCP_SAVE_SYN, &one, sizeof(one));
}

/* Passive side: the peer's MaxACKDel from the saved SYN (it stays unknown,
 * 0, when the listener kept no SYN: a syncookie, or a listener that was
 * open before the program was attached). Without it a sending server's
 * bbr_swift knew no bound on its client's ACK delay and assumed the
 * kernel's 200 ms (swift_paced_cwnd()). */
static __always_inline void passive_peer_max_ack_delay(struct bpf_sock_ops *skops,
							struct ets_sk *e)
{
	u8 buf[ETS_LOAD_BUF_BYTES];
	struct ets_opt syn_opt;

	if (syn_offer(skops, buf, &syn_opt))
		e->peer_max_ack_delay_us = syn_opt.max_ack_del_us;
}

/*
 * The handshake is over: enable ETS if both ends agreed. Active side: skb is
 * the SYN-ACK, which must answer the offer our SYN made. Passive side: skb is
 * the ACK that completed the handshake; the client only puts ETS on it when
 * our SYN-ACK answered its offer, so its presence is the agreement.
 */
static __always_inline void on_estab(struct bpf_sock_ops *skops, bool active)
{
	struct ets_stats *st = stats_get(skops);
	u8 buf[ETS_LOAD_BUF_BYTES];
	struct ets_opt o;
	struct ets_sk *e;
	int len;

	e = ets_get(skops, true);
	if (!e) {
		/* no state, no ETS: and no callbacks for it */
		cb_flags(skops, false);
		CNT(st, refused);
		return;
	}
	len = ets_load(skops, buf, 0);
	if ((active && !(e->flags & ETS_F_OFFERED)) || len < 0 ||
	    ets_parse(buf, len, active, &o) != ETS_OK) {
		disable(skops, e);
		CNT(st, refused);
		return;
	}
	e->flags |= ETS_F_OFFERED | ETS_F_PEER_OFFERED | ETS_F_ENABLED;
	e->ts_recent_us = o.tsval_us;
	e->una_mark = skops->snd_una;
	e->rcv_mark = skops->rcv_nxt;
	e->rcv_wup = skops->rcv_nxt;	/* as the kernel's at establishment */
	if (active) {
		e->peer_max_ack_delay_us = o.max_ack_del_us;
		ets_rcv_latest(&e->ts_latest_us, &e->ts_latest_clock_ns, true,
			       false, o.tsval_us, bpf_ktime_get_ns());
	} else {
		passive_peer_max_ack_delay(skops, e);
	}
	/* and the state callback, for the tally at close (tally_fold());
	 * never turned off here: another program may want it */
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
				  ETS_CB_FLAGS | BPF_SOCK_OPS_STATE_CB_FLAG);
	enforce_max_ack_delay(skops, cfg_get(), st);
	CNT(st, negotiated);
}

/* ---- PARSE_HDR_OPT_CB ---------------------------------------------- */

static __always_inline bool has_sack(struct bpf_sock_ops *skops)
{
	u8 buf[40] = { TCPOPT_SACK, 0 };

	return bpf_load_hdr_opt(skops, buf, sizeof(buf), 0) > 0;
}

/* RFC 7323 §4.3: TS.Recent follows a segment that covers Last.ACK.sent
 * (the kernel's tp->rcv_wup, which e->rcv_wup follows: on_opt_len()) with
 * a TSval not older than TS.Recent. Returns whether the segment covered
 * Last.ACK.sent. */
static __always_inline bool update_ts_recent(struct bpf_sock_ops *skops,
					     struct ets_sk *e, u32 tsval)
{
	struct tcphdr *th = (void *)(long)skops->skb_data;
	u32 seq;

	if ((void *)(th + 1) > (void *)(long)skops->skb_data_end)
		return false;
	seq = bpf_ntohl(th->seq);
	if (ets_after(seq, e->rcv_wup))
		return false;
	if (!e->ts_recent_us || !ets_after(e->ts_recent_us, tsval))
		e->ts_recent_us = tsval;
	return true;
}

/* The segment's arrival: the NIC's stamp, else the kernel's software RX
 * stamp, else now. *wait_ns: how long it waited for this program (0 when
 * unknown), the sender's host delay on an ACK. */
static __always_inline u64 rx_time_ns(struct bpf_sock_ops *skops,
				      struct ets_sk *e, struct ets_cfg *cfg,
				      u64 *wait_ns)
{
	u64 sw = bpf_ktime_get_ns(), rx_real = skb_tstamp_ns(skops);
	bool hw = false;
	u64 t;

	*wait_ns = 0;
	if (rx_real)	/* the netstamp key is on: a REALTIME stamp */
		*wait_ns = ets_rx_wait_ns(rx_real, bpf_ktime_get_tai_ns(),
					  cfg ? cfg->tai_off_ns : 0);
	if (!cfg)
		return sw - *wait_ns;
	t = ets_rx_clock_ns(skops->skb_hwtstamp, sw, cfg->hw_off_valid,
			    cfg->hw_off_ns, &hw);
	if (hw) {
		e->flags |= ETS_F_HW_RX;
		CNT_NOW(skops, hw_rx);
		return t;
	}
	return sw - *wait_ns;
}

/* The path filter: this host's least Network_RTT to the peer over the
 * window, this sample included; 0 if the map is full of busier peers. */
static __always_inline u32 path_update(struct bpf_sock_ops *skops, u32 sample_us,
				       u64 now_ns, struct ets_cfg *cfg)
{
	struct ets_path_key key = { .netns = netns_cookie(skops) };
	static const struct ets_path zero;
	struct ets_path *p;

	if (skops->family == 2 /* AF_INET */) {
		key.addr[0] = skops->remote_ip4;
	} else {
		key.addr[0] = skops->remote_ip6[0];
		key.addr[1] = skops->remote_ip6[1];
		key.addr[2] = skops->remote_ip6[2];
		key.addr[3] = skops->remote_ip6[3];
	}
	p = bpf_map_lookup_elem(&ets_path, &key);
	if (!p) {
		bpf_map_update_elem(&ets_path, &key, &zero, BPF_NOEXIST);
		p = bpf_map_lookup_elem(&ets_path, &key);
		if (!p)
			return 0;
	}
	return ets_path_update(&p->cur, &p->prev, sample_us, now_ns,
			       cfg ? cfg->path_win_us : 0);
}

static __always_inline void publish(struct bpf_sock_ops *skops,
				    struct ets_sk *e, struct ets_sample *s,
				    u64 now_ns, struct ets_cfg *cfg)
{
	u64 win = cfg && cfg->min_rtt_win_ns ? cfg->min_rtt_win_ns
					     : ETS_MIN_WIN_NS;

	/* a millisecond EcrDel is +-0.5 ms: not for the path's least */
	if (s->ack_delay_exact)
		e->path_rtt_us = path_update(skops, s->network_rtt_us, now_ns, cfg);
	e->host_delay_us = e->tx_late_us + e->rx_wait_us;
	e->network_rtt_us = s->network_rtt_us;
	e->total_rtt_us = s->total_rtt_us;
	e->rcv_ack_delay_us = s->ack_delay_us;
	ets_min_update(&e->min_network_rtt_us, &e->min_network_rtt_stamp_ns,
		       s->network_rtt_us, now_ns, win);
	e->samples++;
	e->last_sample_ns = now_ns;
}

/* An ACK waited wait_ns between its RX stamp and this program (0: no
 * stamp). */
static __always_inline void note_rx_wait(struct ets_sk *e, u64 wait_ns)
{
	e->rx_wait_us = (u32)(wait_ns / 1000);
	if (!wait_ns)
		return;
	e->tally.rx_wait_sum_us += (u32)(wait_ns / 1000);
	e->tally.rx_wait_n++;
}

/* The TCP options of the segment being parsed, copied out: for telling a
 * malformed ETS option from a missing one (ets_opt_walk_step()). */
static __always_inline u32 tcp_options(struct bpf_sock_ops *skops, u8 *opts)
{
	u8 *data = (u8 *)(long)skops->skb_data;
	u8 *end = (u8 *)(long)skops->skb_data_end;
	struct tcphdr *th = (void *)data;
	u32 i, n;

	if ((void *)(th + 1) > (void *)end)
		return 0;
	n = th->doff * 4 - sizeof(*th);
	for (i = 0; i < ETS_TCP_OPTIONS_MAX && i < n; i++) {
		u8 *p = data + sizeof(*th) + i;

		if ((void *)(p + 1) > (void *)end)
			break;
		opts[i] = *p;
	}
	return i;
}

static long opt_walk_step(u64 index, void *ctx)
{
	return ets_opt_walk_step(ctx);
}

/*
 * A segment without a well-formed ETS option. A malformed one (a kind-254
 * option too short for the ExID the search matches by: length 2 or 3) is
 * a rejected option, not a missing one: counted (ETS_ERR_LEN) and, like
 * any segment with an ETS option, it resets the missing run. A kind-254
 * option of another experiment (another ExID, RFC 6994) is counted
 * (ETS_ERR_EXID) but is no ETS option: the segment counts as missing one.
 * A closing connection's segments may come from the peer's TIME_WAIT
 * socket, which runs no sockops; a segment with SACK blocks may have had
 * no room left for the option: both are excused. Only ETS_MISSING_LIMIT
 * segments in a row without any turn ETS off.
 */
static __always_inline void on_missing(struct bpf_sock_ops *skops,
				       struct ets_sk *e)
{
	struct ets_opt_walk w = {};
	struct ets_stats *st;

	w.len = tcp_options(skops, w.opts);
	bpf_loop(ETS_TCP_OPTIONS_MAX, opt_walk_step, &w, 0);
	st = stats_get(skops);	/* rare: a segment without the option */
	if (w.found) {
		if (w.err == ETS_ERR_EXID) {
			CNT(st, rej_parse[ETS_ERR_EXID]);
		} else {
			CNT(st, rej_parse[ETS_ERR_LEN]);
			e->missing_run = 0;
			mark_seen(skops, e);
		}
		e->rejected++;
		if (w.err != ETS_ERR_EXID)
			return;
	}
	if (closing(skops)) {
		CNT(st, missing_closing);
		mark_seen(skops, e);
		return;
	}
	if (has_sack(skops)) {
		mark_seen(skops, e);
		return;
	}
	if (++e->missing_run < ETS_MISSING_LIMIT)
		return;
	disable(skops, e);
	CNT(st, missing);
}

static __always_inline void parse_segment(struct bpf_sock_ops *skops,
					  struct ets_sk *e)
{
	u8 buf[ETS_LOAD_BUF_BYTES];
	struct ets_sample s = {};
	struct ets_cfg *cfg;
	struct ets_opt o;
	bool has_data, ack, echoed;
	u64 arrival, wait_ns;
	int len, err;

	len = ets_load_in_place(skops, buf);
	if (!len)
		len = ets_load(skops, buf, 0);
	if (len == -ENOMSG) {
		on_missing(skops, e);
		return;
	}
	e->missing_run = 0;
	mark_seen(skops, e);
	if (len < 0) {
		/* -ENOSPC: longer than any -00 option; else (-EFAULT) an
		 * option running past the header: truncated. */
		if (len == -ENOSPC)
			CNT_NOW(skops, rej_parse[ETS_ERR_LEN]);
		else
			CNT_NOW(skops, rej_parse[ETS_ERR_SHORT]);
		e->rejected++;
		return;
	}
	err = ets_parse(buf, len, false, &o);
	if (err) {
		if (err > 0 && err < ETS_ERR__MAX)
			count_rare(skops, STATS_WORD(rej_parse) + err);
		e->rejected++;
		return;
	}
	e->tally.parsed++;
	cfg = cfg_get();
	arrival = rx_time_ns(skops, e, cfg, &wait_ns);
	has_data = skops->skb_len > skops->skb_data_end - skops->skb_data;
	ack = skops->skb_tcp_flags & TCPHDR_ACK;

	/* Receiver side. */
	echoed = update_ts_recent(skops, e, o.tsval_us);
	ets_rcv_latest(&e->ts_latest_us, &e->ts_latest_clock_ns, false,
		       has_data, o.tsval_us, arrival);
	if (has_data && echoed)
		parse_pause(skops, e);

	/* Sender side. */
	if (ack && !has_data)
		note_rx_wait(e, wait_ns);
	err = ets_sample(&o, ack, (u32)(arrival / 1000),
			 ets_rtt_bound_us(skops->srtt_us >> 3), &s);
	if (err == ETS_SAMPLE_OK) {
		publish(skops, e, &s, arrival, cfg);
		e->tally.samples++;
	} else if (err == ETS_SAMPLE_UNIT && o.unit == ETS_UNIT_INVALID) {
		/* The peer had no valid EcrDel (e.g. no data from us since
		 * its TS.Recent moved): legitimate, not a rejection. */
		CNT_NOW(skops, ecrdel_invalid);
	} else if (err != ETS_SAMPLE_NO_ACK && err != ETS_SAMPLE_TSECR_ZERO) {
		if (err > 0 && err < ETS_SAMPLE__MAX)
			count_rare(skops, STATS_WORD(rej_sample) + err);
		e->rejected++;
	}
}

static __always_inline void on_parse(struct bpf_sock_ops *skops)
{
	struct ets_sk *e = ets_get(skops, false);

	if (!e || !(e->flags & ETS_F_ENABLED))
		return;
	e->tally.parse_calls++;
	parse_segment(skops, e);
	tally_tick(skops, e);
}

/* The socket is closing for good: what its tally holds goes to ets_stats. */
static __always_inline void on_state(struct bpf_sock_ops *skops)
{
	struct ets_sk *e;

	if (skops->args[1] != BPF_TCP_CLOSE)
		return;
	e = ets_get(skops, false);
	if (e)
		tally_fold(skops, e);
}

SEC("sockops")
int ets_sockops(struct bpf_sock_ops *skops)
{
	switch (skops->op) {
	case BPF_SOCK_OPS_TCP_LISTEN_CB:
		/* Children inherit the flags; the listener needs them for
		 * the SYN-ACK's LEN/WRITE callbacks. */
		cb_flags(skops, true);
		save_syn(skops);
		break;
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
		if (ets_get(skops, true))
			cb_flags(skops, true);
		break;
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		on_estab(skops, true);
		break;
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		on_estab(skops, false);
		break;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		on_opt_len(skops);
		break;
	case BPF_SOCK_OPS_WRITE_HDR_OPT_CB:
		on_write(skops);
		break;
	case BPF_SOCK_OPS_PARSE_HDR_OPT_CB:
		on_parse(skops);
		break;
	case BPF_SOCK_OPS_STATE_CB:
		on_state(skops);
		break;
	}
	return 1;
}
