/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * core/dctcp.h: the sender and receiver logic of DCTCP (RFC 8257) as plain
 * C, for bpf/dctcp_bpf.bpf.c and the native unit tests. Written from the
 * RFC, our own code.
 *
 * Sender (RFC 8257 §3.3). Over each observation window (about one RTT: it
 * ends when SND.UNA passes WindowEnd, the SND.NXT at its start) count the
 * packets delivered and those delivered with an ECE echo; at its end
 *     alpha = (1 - g) alpha + g M,   M = marked / delivered,   g = 1/16
 * and on congestion (an ECE, at most once per window: the kernel's CWR
 * state gives that) cut cwnd to cwnd (1 - alpha / 2). Packets, not bytes:
 * the kernel counts delivered and delivered_ce in packets (an ECE ACK
 * counts everything it acks in delivered_ce, RFC 3168 or AccECN alike).
 * Loss is answered as standard TCP: ssthresh = cwnd / 2.
 *
 * Receiver (RFC 8257 §3.2). Echo CE exactly: ECE on every ACK while the
 * last data segment was CE-marked, and when the CE state changes with a
 * delayed ACK pending, first ACK what came before the change with the old
 * state. The glue does the sending; dctcp_rcv_ce_change() says what.
 *
 * Needs u8..u64 and bool defined first.
 */
#ifndef DCTCP_CORE_H
#define DCTCP_CORE_H

/* alpha is a fraction in DCTCP_ALPHA_UNIT (1024 == 1.0). */
#define DCTCP_ALPHA_SCALE	10
#define DCTCP_ALPHA_UNIT	(1u << DCTCP_ALPHA_SCALE)
/* Initial alpha 1.0: react fully until a window has been measured
 * (RFC 8257 §3.3 leaves it to the implementation; 1 is the safe choice). */
#define DCTCP_ALPHA_INIT	DCTCP_ALPHA_UNIT
/* g = 1/16 (RFC 8257 §4.2, the value the DCTCP paper and RFC recommend). */
#define DCTCP_G_SHIFT		4
/* The smallest ssthresh after a cut, packets (as standard TCP). */
#define DCTCP_MIN_SSTHRESH_PKTS	2u

struct dctcp {
	u32 alpha;			/* DCTCP_ALPHA_UNIT */
	u32 window_end;			/* SND.NXT when this window began */
	u32 win_delivered;		/* tp->delivered at its start */
	u32 win_delivered_ce;		/* tp->delivered_ce at its start */
	u32 loss_cwnd;			/* cwnd before the last reduction (undo) */
	u32 prior_rcv_nxt;		/* receiver: rcv_nxt before this segment */
	u32 windows;			/* windows measured (wraps) */
	u8 ce_state;			/* receiver: last data segment was CE */
	u8 _pad[3];
};

static inline bool dctcp_seq_after(u32 a, u32 b)
{
	return (s32)(a - b) > 0;
}

static inline void dctcp_init(struct dctcp *d, u32 snd_nxt, u32 delivered,
			      u32 delivered_ce)
{
	d->alpha = DCTCP_ALPHA_INIT;
	d->window_end = snd_nxt;
	d->win_delivered = delivered;
	d->win_delivered_ce = delivered_ce;
	d->loss_cwnd = 0;
	d->windows = 0;
	d->ce_state = 0;
}

/* alpha = (1 - g) alpha + g M for a window of `acked` pkts, `marked` CE. */
static inline u32 dctcp_alpha_ewma(u32 alpha, u32 acked, u32 marked)
{
	u32 m = 0;

	if (acked)
		m = (u32)(((u64)(marked < acked ? marked : acked) <<
			   DCTCP_ALPHA_SCALE) / acked);
	alpha = alpha - (alpha >> DCTCP_G_SHIFT) + (m >> DCTCP_G_SHIFT);
	return alpha > DCTCP_ALPHA_UNIT ? DCTCP_ALPHA_UNIT : alpha;
}

/* Per ACK: when SND.UNA passes WindowEnd, fold the window into alpha and
 * start the next. Returns true when a window ended. */
static inline bool dctcp_update_alpha(struct dctcp *d, u32 snd_una, u32 snd_nxt,
				      u32 delivered, u32 delivered_ce)
{
	if (!dctcp_seq_after(snd_una, d->window_end))
		return false;
	d->alpha = dctcp_alpha_ewma(d->alpha, delivered - d->win_delivered,
				    delivered_ce - d->win_delivered_ce);
	d->window_end = snd_nxt;
	d->win_delivered = delivered;
	d->win_delivered_ce = delivered_ce;
	d->windows++;
	return true;
}

/* ssthresh on ECE: cwnd (1 - alpha / 2). */
static inline u32 dctcp_ssthresh(struct dctcp *d, u32 cwnd)
{
	u32 cut = (u32)(((u64)cwnd * d->alpha) >> (DCTCP_ALPHA_SCALE + 1));

	d->loss_cwnd = cwnd;
	return cwnd - cut > DCTCP_MIN_SSTHRESH_PKTS ? cwnd - cut :
	       DCTCP_MIN_SSTHRESH_PKTS;
}

/* ssthresh on loss: standard TCP's half. */
static inline u32 dctcp_loss_ssthresh(struct dctcp *d, u32 cwnd)
{
	d->loss_cwnd = cwnd;
	return cwnd / 2 > DCTCP_MIN_SSTHRESH_PKTS ? cwnd / 2 :
	       DCTCP_MIN_SSTHRESH_PKTS;
}

static inline u32 dctcp_undo_cwnd(const struct dctcp *d, u32 cwnd)
{
	return cwnd > d->loss_cwnd ? cwnd : d->loss_cwnd;
}

/* Receiver: a data segment arrived with (ce = 1) or without CE. Returns
 * true when the state changed and an ACK pending for the data before this
 * segment must go out first with the old state (RFC 8257 §3.2). */
static inline bool dctcp_rcv_ce_change(struct dctcp *d, u8 ce)
{
	if (d->ce_state == ce)
		return false;
	d->ce_state = ce;
	return true;
}

#endif /* DCTCP_CORE_H */
