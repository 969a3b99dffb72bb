/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * core/reconstruct.h: the inputs of BBRv3 that mainline Linux does not
 * provide, rebuilt from what it does keep.
 *
 * A BBRv3 kernel hands its CC, for every ACK, the in-flight volume and the
 * loss count at the time the sampled packet was sent (rs->tx_in_flight,
 * rs->lost), calls a hook for every packet it marks lost, and reports a
 * loss repaired by a TLP retransmit. Mainline does none of that. This file
 * rebuilds them for the core (core/bbr3.h), which consumes them as the
 * reference's hooks would deliver them:
 *
 *   - send records (struct bbr_tx_rec, a small ring per socket) from which
 *     the send-time values of any packet follow (bbr_tx_note(),
 *     bbr_tx_lookup());
 *   - the packets the stack just marked lost, as the glue finds them in the
 *     retransmit queue (bbr_core_lost_walk_skb()), or as one skb when no
 *     walk saw them (bbr_handle_unhooked_losses());
 *   - the TLP outcome (bbr_reconstruct_inputs()).
 *
 * Each lost packet goes to the model through bbr_lost_packets(), a TLP
 * repair through bbr_run_loss_probe_recovery() (both core/bbr3.h). Included
 * at the end of core/bbr3.h, whose entry points call bbr_reconstruct_inputs(),
 * bbr_tx_note() and bbr_tx_reset(). docs/bbr3.md ("Inputs mainline lacks,
 * and how we rebuild them") has the derivation; selftests/unit/
 * test_fidelity.c measures how well the result matches a BBRv3 kernel.
 */
#ifndef BBR3_RECONSTRUCT_H
#define BBR3_RECONSTRUCT_H

/* ---- Send records: the per-packet inputs mainline does not keep ----------------------- */

/*
 * A BBRv3 kernel stores in every skb it transmits (new data and
 * retransmits alike) the packets in flight right after that transmission
 * (tx.in_flight = tcp_packets_in_flight() + pcount, taken before
 * packets_out or retrans_out count it) and tp->lost at that moment
 * (tx.lost). The rate sample hands them back for the most recently sent
 * packet an ACK delivered (rs->tx_in_flight, rs->lost = tp->lost -
 * tx.lost), and the per-lost-packet hook for each packet the stack marks
 * lost. Mainline keeps neither, but both follow from counters it does
 * keep, given a record (struct bbr_tx_rec) at the right moments:
 *
 *   A = packets_out - sacked_out + delivered
 *
 * is left unchanged by every ACK (a packet leaves packets_out or
 * sacked_out as it enters delivered), by marking losses and by
 * retransmitting; sending new data raises it by the packets sent. So for
 * new data ending at end_seq, sent after record r while tp->delivered was
 * D (the rate sample's prior_delivered, or the lost skb's tx.delivered):
 *
 *   tx_in_flight = r.inflight + pending + pkts(r.snd_nxt, end_seq) - (D - r.delivered)
 *
 * where pending = r's lost_out - retrans_out: packets marked lost and not
 * yet retransmitted, which the stack retransmits before any new data (so
 * they are back in flight by then; a TLP retransmit in flight makes it
 * negative, and stays). And tx.lost = r.lost. A retransmission sent while
 * tp->delivered == r.delivered went out right after the ACK that opened r:
 * tx_in_flight = r.inflight + 1 (exact for the first of a burst; the k-th
 * is k - 1 low), tx.lost = r.lost.
 *
 * A record opens (bbr_tx_note) whenever the last one would predict wrong:
 * tp->lost changed, A is not what the last record predicts for snd_nxt (a
 * DSACK counted as delivered, SACK reneging, a segment shorter than mss),
 * or retransmits are pending. It is taken where the state changes: at the
 * end of cong_control (before the sends that ACK triggers), in set_state
 * (RTO marking), and by the lost-packet hook when one is attached (RACK
 * reorder timer). In bulk transfer without loss one record lasts forever;
 * each loss opens one or two. What stays approximate: the k-th retransmit
 * of a burst, and losses marked by a timer with no CC callback after them
 * (RACK reorder timer in Recovery) when the lost-packet hook is absent.
 */

/* Packets from sequence `from` up to `to`, counting a partial one; 0 if
 * `to` is not after `from`. */
static inline u32 bbr_tx_pkts(u32 from, u32 to, u32 mss)
{
	if (!mss || !bbr_after(to, from))
		return 0;
	return (to - from + mss - 1) / mss;
}

/* The i-th newest record (i < BBR_TX_RECS). */
static inline struct bbr_tx_rec *bbr_tx_rec_at(struct bbr3_sk *sks, u32 i)
{
	u32 head = sks->st.tx_rec_head, idx;

	idx = head >= i ? head - i : head + BBR_TX_RECS - i;
	if (idx >= BBR_TX_RECS)
		idx = 0;	/* unreachable; bounds the index for the verifier */
	return &sks->rec[idx];
}

static inline s32 bbr_tx_rec_pending(const struct bbr_tx_rec *r)
{
	return (s8)r->rtx_pending;
}

static inline s32 bbr_sk_rtx_pending(const struct bbr_sock *sk)
{
	s32 pending = (s32)(sk->lost_out - sk->retrans_out);

	if (pending > BBR_TX_PENDING_MAX)
		return BBR_TX_PENDING_MAX;
	return pending < -BBR_TX_PENDING_MAX ? -BBR_TX_PENDING_MAX : pending;
}

static inline void bbr_tx_rec_fill(struct bbr_tx_rec *r,
				   const struct bbr_sock *sk)
{
	r->snd_nxt = sk->snd_nxt;
	r->delivered = sk->delivered;
	r->lost = sk->lost;
	r->inflight_pkts = bbr_min_u32(sk->inflight, (1u << 24) - 1);
	r->rtx_pending = (u8)(s8)bbr_sk_rtx_pending(sk);
}

/* A = packets_out - sacked_out + delivered after sending up to end_seq
 * under record r (u32 arithmetic: only differences of it mean anything). */
static inline u32 bbr_tx_rec_pkt_index(const struct bbr_tx_rec *r, u32 end_seq,
				       u32 mss)
{
	return r->inflight_pkts + r->delivered + bbr_tx_rec_pending(r) +
	       bbr_tx_pkts(r->snd_nxt, end_seq, mss);
}

/* Open a record if the newest one no longer describes what is sent next. */
static inline void bbr_tx_note(struct bbr3_sk *sks, const struct bbr_sock *sk)
{
	struct bbr_tx_rec *r = bbr_tx_rec_at(sks, 0);
	u32 pkt_index = sk->packets_out - sk->sacked_out + sk->delivered, head;

	if (r->lost == sk->lost &&
	    bbr_tx_rec_pkt_index(r, sk->snd_nxt, sk->mss) == pkt_index)
		return;
	head = sks->st.tx_rec_head + 1u;
	if (head >= BBR_TX_RECS)
		head = 0;
	sks->st.tx_rec_head = (u8)head;
	bbr_tx_rec_fill(&sks->rec[head], sk);
}

static inline void bbr_tx_reset(struct bbr3_sk *sks, const struct bbr_sock *sk)
{
	u32 i;

	for (i = 0; i < BBR_TX_RECS; i++)
		bbr_tx_rec_fill(&sks->rec[i], sk);
	sks->st.tx_rec_head = 0;
}

/*
 * tx_in_flight and lost (tp->lost `lost_now` less tp->lost at its send) of
 * a transmission, from the record in force when it was sent: new data by
 * its end_seq, a retransmit by tp->delivered at its send (`tx_delivered`).
 * Returns 1 if a record matched, 0 if the oldest record stood in (the ring
 * no longer reaches back to the send).
 */
/* bbr_tx_find(): the record's index, and whether it matched. */
/* bbr_tx_lost_before_oldest() moves a send's tp->lost back by at most
 * this: a bound on the loop-free arithmetic, far above any round's loss. */
#define BBR_TX_LOST_EXTRAP_MAX	(1u << 20)
#define BBR_TX_FIND_IDX		0xFF
#define BBR_TX_FIND_MATCH	0x100

/*
 * The record in force when a transmission was sent: for new data (`key` =
 * its end_seq) the newest opened before snd_nxt reached it, for a
 * retransmit (`key` = tp->delivered at its send) the newest opened at or
 * before that delivery count. If the ring no longer reaches back that far,
 * the oldest record stands in (no BBR_TX_FIND_MATCH).
 */
BBR_API int bbr_tx_find(struct bbr3_sk *sks, u32 key, u32 by_delivered)
{
	struct bbr_tx_rec *r;
	u32 i, idx, head;

	if (!sks)
		return 0;
	head = sks->st.tx_rec_head;
	for (i = 0; i < BBR_TX_RECS; i++) {
		idx = head >= i ? head - i : head + BBR_TX_RECS - i;
		if (idx >= BBR_TX_RECS)
			return 0;
		r = &sks->rec[idx];
		if (by_delivered ? !bbr_after(r->delivered, key) :
				   bbr_before(r->snd_nxt, key))
			return (int)(idx | BBR_TX_FIND_MATCH);
	}
	return (int)(head + 1 < BBR_TX_RECS ? head + 1 : 0);	/* the oldest */
}

/*
 * tp->lost at a send older than every record, from the oldest record `r`:
 * losses keep the pace they had over the ring's span (r to now, per packet
 * delivered), so the send `back` deliveries before r saw that many fewer.
 * Taking r's count as it is would leave out every loss marked between the
 * send and r: with many losses per round trip the ring spans less than a
 * round, and every sample's loss rate would be understated by the share of
 * the round the ring does not reach.
 */
static inline u32 bbr_tx_lost_before_oldest(const struct bbr_tx_rec *r,
					    const struct bbr_sock *sk,
					    u32 tx_delivered, u32 lost_now)
{
	u32 span = sk->delivered - r->delivered, back = r->delivered - tx_delivered;
	u32 span_lost = lost_now - r->lost;
	u64 earlier;

	if ((s32)span <= 0 || (s32)back <= 0 || (s32)span_lost <= 0)
		return r->lost;
	earlier = bbr_min_u64((u64)span_lost * back / span, BBR_TX_LOST_EXTRAP_MAX);
	return r->lost - (u32)earlier;
}

/* Always inlined: BPF passes at most 5 arguments to a call. */
BBR_INLINE int bbr_tx_lookup(struct bbr3_sk *sks, const struct bbr_sock *sk,
			     u32 end_seq, u32 tx_delivered, bool is_retrans,
			     u32 lost_now, u32 *tx_in_flight, s32 *lost)
{
	int found = bbr_tx_find(sks, is_retrans ? tx_delivered : end_seq,
				is_retrans);
	u32 idx = (u32)found & BBR_TX_FIND_IDX;
	struct bbr_tx_rec *r = &sks->rec[idx < BBR_TX_RECS ? idx : 0];
	s32 pending = bbr_tx_rec_pending(r);
	bool match = found & BBR_TX_FIND_MATCH;
	u32 tx_lost = r->lost;
	s64 est;

	if (is_retrans) {
		/* in flight before it: A - delivered - still to retransmit,
		 * about one retransmit per delivery since the record */
		pending -= (s32)(tx_delivered - r->delivered);
		est = (s64)(s32)(bbr_tx_rec_pkt_index(r, r->snd_nxt, sk->mss) -
				 tx_delivered) - (pending > 0 ? pending : 0) + 1;
	} else if (!match && bbr_before(end_seq, r->snd_nxt)) {
		/* sent before the oldest record opened: A then was A at the
		 * record less the new data sent in between */
		est = (s64)(s32)(bbr_tx_rec_pkt_index(r, r->snd_nxt, sk->mss) -
				 tx_delivered) -
		      bbr_tx_pkts(end_seq, r->snd_nxt, sk->mss) -
		      (pending < 0 ? pending : 0);
	} else {
		/* what was still to retransmit went out first; a TLP
		 * retransmit in flight (pending < 0) stays */
		est = (s64)(s32)(bbr_tx_rec_pkt_index(r, end_seq, sk->mss) -
				 tx_delivered) - (pending < 0 ? pending : 0);
	}
	*tx_in_flight = est > 1 ? (u32)est : 1;
	if (!match) {
		/* losses marked after a send are of packets in flight at it
		 * (later ones are marked only after it is delivered) */
		tx_lost = bbr_tx_lost_before_oldest(r, sk, tx_delivered, lost_now);
		if ((s32)(lost_now - tx_lost) > (s32)*tx_in_flight)
			tx_lost = lost_now - *tx_in_flight;
	}
	*lost = (s32)(lost_now - tx_lost) > 0 ? (s32)(lost_now - tx_lost) : 0;
	return match;
}

/* The rate sample's tx_in_flight and lost, unless the caller gave them.
 * A function of its own in BPF: inlined, the lookup's frame grew
 * bbr_core_main()'s, and bbr_swift's deepest per-ACK call chain passed
 * the 512-byte stack limit. */
BBR_API int bbr_tx_sample(struct bbr3_sk *sks, const struct bbr_sock *sk,
			  struct bbr_rs *rs)
{
	if (!sks || !sk || !rs || rs->has_tx)
		return 0;
	if (rs->prior_delivered || rs->last_end_seq)
		bbr_tx_lookup(sks, sk, rs->last_end_seq, rs->prior_delivered,
			      rs->is_retrans, sk->lost, &rs->tx_in_flight,
			      &rs->lost);
	return 0;
}


/*
 * One lost skb, in the order the stack marked them (the reference's
 * skb_marked_lost). `l` describes it as the glue finds it in the
 * retransmit queue; unless l->has_tx, its send-time values come from the
 * send records. tp->lost as the reference's hook sees it (counting this
 * skb) is what was accounted before it plus its pcount.
 */
BBR_INLINE void bbr_skb_lost(struct bbr3_sk *sks, struct bbr_sock *sk,
			     const struct bbr_lost_skb *l)
{
	struct bbr3 *b = &sks->st;
	struct bbr_rs lrs = {};
	u32 lost_now;

	if (!b->initialized || !l->pcount)
		return;
	lost_now = b->last_lost + l->pcount;
	if (l->has_tx) {
		lrs.tx_in_flight = l->tx_in_flight;
		lrs.lost = l->lost;
	} else {
		bbr_tx_lookup(sks, sk, l->end_seq, l->tx_delivered,
			      l->is_retrans, lost_now, &lrs.tx_in_flight,
			      &lrs.lost);
	}
	lrs.is_app_limited = l->is_app_limited;
	b->last_lost = lost_now;
	bbr_lost_packets(b, sk, &lrs, l->pcount);
}

BBR_API int bbr_core_skb_lost(struct bbr3_sk *sks, struct bbr_sock *sk,
			      struct bbr_lost_skb *l)
{
	if (!sks || !sk || !l)
		return 0;
	/* the hook runs as the stack marks: a loss it reports after the
	 * state fell below Recovery opens a new episode */
	if (sks->st.loss_yet_in_recovery == BBR_LOSS_EPISODE_ENDING)
		sks->st.loss_yet_in_recovery = 0;
	bbr_skb_lost(sks, sk, l);
	return 0;
}

/*
 * Finding the skbs the stack just marked lost. Mainline calls no CC hook
 * when it marks a packet lost, but when it has (on the ACK that marked them,
 * in ssthresh() and set_state() after an RTO marked them) they are still in
 * the retransmit queue, flagged lost and not yet retransmitted, in sequence
 * order. The glue walks the queue from the stack's retransmit hint and
 * offers each such skb here; packets marked lost before this batch and not
 * yet retransmitted (cwnd-limited recovery) come first and are skipped.
 * Whatever the walk does not reach is judged at cong_control as one skb
 * (bbr_handle_unhooked_losses).
 */
struct bbr_lost_walk {
	u32 skip;	/* packets to pass over: marked before this batch */
	u32 want;	/* packets marked lost in this batch, still to find */
};

/* skbs the glue visits per walk: SACKed runs are merged into one skb, so
 * a hole or two past the hint is a few skbs away; losses beyond are
 * judged as one skb. */
#define BBR_LOST_WALK_MAX_SKBS	16u

/* Returns true if the stack marked packets lost that no skb was offered for. */
static inline bool bbr_lost_walk_start(const struct bbr3 *b,
				       const struct bbr_sock *sk,
				       struct bbr_lost_walk *w)
{
	u32 newly = sk->lost - b->last_lost;
	u32 pending = sk->lost_out - sk->retrans_out;

	w->want = (s32)newly > 0 ? newly : 0;
	w->skip = (s32)pending > (s32)w->want ? pending - w->want : 0;
	return w->want > 0;
}

/* One lost, not yet retransmitted skb from the walk; returns true while
 * more are wanted. */
BBR_API int bbr_core_lost_walk_skb(struct bbr3_sk *sks, struct bbr_sock *sk,
				   struct bbr_lost_walk *w, struct bbr_lost_skb *l)
{
	if (!sks || !sk || !w || !l || !w->want)
		return 0;
	if (w->skip >= l->pcount) {
		w->skip -= l->pcount;
		return 1;
	}
	w->skip = 0;
	l->pcount = bbr_min_u32(l->pcount, w->want);
	w->want -= l->pcount;
	bbr_skb_lost(sks, sk, l);
	return w->want > 0;
}

/*
 * Losses no hook reported (no hook attached, or a marking path it does not
 * see): tp->lost grew by `newly_lost` since they were last accounted. They
 * were marked on this ACK because later packets were delivered, so they
 * were sent shortly before the sampled packet: take its send context, as
 * one lost skb of newly_lost packets. Returns that skb's pcount.
 */
static inline u32 bbr_unhooked_loss_sample(const struct bbr_sock *sk,
					   const struct bbr_rs *rs,
					   u32 newly_lost, struct bbr_rs *lrs)
{
	lrs->tx_in_flight = rs->tx_in_flight ? : rs->prior_in_flight;
	lrs->lost = rs->lost > (s32)newly_lost ? rs->lost : (s32)newly_lost;
	lrs->is_app_limited = sk->app_limited != 0;
	return bbr_min_u32(newly_lost, lrs->tx_in_flight);
}

static inline void bbr_handle_unhooked_losses(struct bbr3 *b, struct bbr_sock *sk,
					      const struct bbr_rs *rs,
					      u32 newly_lost)
{
	struct bbr_rs lrs = {};
	u32 pcount = bbr_unhooked_loss_sample(sk, rs, newly_lost, &lrs);

	b->last_lost = sk->lost;
	bbr_lost_packets(b, sk, &lrs, pcount);
}

/*
 * Per-ACK inputs, before the reference pipeline (where the reference's
 * per-skb hooks would have run during ACK processing): tx_in_flight/lost
 * for the sample, losses no hook reported, the TLP outcome.
 * b->tlp_high_seq/tlp_retrans_seen were recorded by in_ack_event, before
 * the stack processed the TLP state of this ACK.
 */
static inline void bbr_reconstruct_inputs(struct bbr3_sk *sks,
					  struct bbr_sock *sk, struct bbr_rs *rs)
{
	struct bbr3 *b = &sks->st;
	u32 tlp_seq = b->tlp_high_seq, newly_lost;
	bool tlp_was_retrans = b->tlp_retrans_seen;

	bbr_tx_sample(sks, sk, rs);

	rs->is_acking_tlp_retrans_seq = tlp_seq && tlp_was_retrans &&
					!bbr_before(sk->ack, tlp_seq);

	newly_lost = sk->lost - b->last_lost;
	if ((s32)newly_lost > 0)
		bbr_handle_unhooked_losses(b, sk, rs, newly_lost);
	else
		b->last_lost = sk->lost;

	/* The stack clears tlp_high_seq when an ACK beyond it shows the TLP
	 * retransmit repaired a real loss (and not via a DSACK). */
	if (tlp_seq && tlp_was_retrans && !sk->tlp_high_seq &&
	    bbr_after(sk->ack, tlp_seq) && !sk->dsack_tlp)
		bbr_run_loss_probe_recovery(b, sk);

	b->tlp_high_seq = 0;
	b->tlp_retrans_seen = 0;
}

#endif /* BBR3_RECONSTRUCT_H */
