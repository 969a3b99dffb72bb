/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * core/l4s.h: the L4S mode, as hooks of the BBRv3 core (core/bbr3.h).
 *
 * BBR-evo's modifications (Ericsson, "BBR with L4S support", simulations)
 * for a path whose AQM marks CE at a shallow queue (RFC 9330-9332), each a
 * key of the parameter set (include/bbr_params.h, the l4s profile):
 *
 *   ce_discount_k      a bandwidth sample counts each CE-marked packet as
 *                      1 - 1/K packet (bbr_hook_bw_sample);
 *   cycle_rounds       PROBE_BW as a gain cycle of that many rounds, up at
 *                      cycle_up_gain, down at cycle_down_gain, then cruise
 *                      (bbr_update_l4s_cycle), with cycle_min_us a least
 *                      length of it;
 *   bw_slot_rounds     the max-bw filter moves a slot every that many rounds;
 *   startup_ce_rounds  STARTUP ends after that many rounds with CE, and goes
 *                      to PROBE_BW without DRAIN;
 *   l4s_no_probe_rtt   no PROBE_RTT.
 *
 * The object bbr3_l4s (bpf/bbr3_l4s.bpf.c) is the core plus these hooks,
 * registered with the AccECN flags and its parameter sets starting from
 * the l4s profile. The mode is in force on a connection while the key l4s
 * is set and its handshake negotiated AccECN, whose per-ACK CE counts the
 * mode reads (tp->delivered_ce); any other connection of the object runs
 * plain BBRv3 (stat: l4s_mode "fallback"). b->l4s says which, per ACK.
 * docs/l4s.md has the design and the lab's measurements.
 *
 * Include after core/bbr3.h and before core/bbr3_hooks.h.
 */
#ifndef BBR3_L4S_H
#define BBR3_L4S_H

/* The round numbers of the gain cycle's up and down rounds (the rest
 * cruise), and its least length. */
#define BBR_L4S_CYCLE_UP		0
#define BBR_L4S_CYCLE_DOWN		1
#define BBR_L4S_CYCLE_MIN_ROUNDS	2
/* startup_ecn_rounds counts the mode's rounds with CE up to the
 * startup_ce_rounds parameter's maximum. */
#define BBR_L4S_STARTUP_CE_ROUNDS_MAX	15u

static inline bool bbr_l4s_cycle(const struct bbr3 *b)
{
	return b->l4s && BBR_P(b).cycle_rounds;
}

/* STARTUP has seen its startup_ce_rounds rounds with CE: under an L4S AQM
 * a CE mark is the queue at its shallow threshold already, there is little
 * to drain, and the cycle's down round follows at once. */
static inline bool bbr_l4s_startup_ce(const struct bbr3 *b)
{
	return b->l4s && BBR_P(b).startup_ce_rounds &&
	       b->startup_ecn_rounds >= BBR_P(b).startup_ce_rounds;
}

/* The mode moves the max-bw filter itself (per cycle or per
 * bw_slot_rounds), not at the end of a BBRv3 probe. */
static inline bool bbr_l4s_own_bw_filter(const struct bbr3 *b)
{
	return b->l4s && (BBR_P(b).cycle_rounds || BBR_P(b).bw_slot_rounds);
}

/*
 * The gain cycle (cycle_rounds, BBR-evo: 3), in place of BBRv3's
 * PROBE_BW phases: a round at cycle_up_gain (9/8), a round at
 * cycle_down_gain (7/8), the rest at 1.0, round after round. BBR-evo cut
 * BBRv1's 8-round [5/4, 3/4, 1 x 6] to this: a smaller swing (less queue
 * jitter under an L4S AQM's shallow marking) probed three times as often.
 * The up round lifts the lower bounds as REFILL does and counts as a
 * probe: loss or CE too high in its ACKs lowers inflight_hi and goes to
 * the down round (bbr_handle_inflight_too_high()). Those ACKs are of the
 * round before it, sent at 1.0; the probe's own packets are ACKed in the
 * down round, and the growth slope of inflight_hi is not restarted. Both
 * differ from BBRv3's probe; aligned with it, the lab's RTT fairness was
 * worse (docs/l4s.md, "Known issues"). Without bw_slot_rounds the max-bw
 * filter moves one slot per cycle.
 *
 * Beyond BBR-evo, cycle_min_us makes the cycle last at least that long,
 * the extra rounds cruising: a flow with a short RTT otherwise probes (and
 * lifts its lower bounds) as many times more often as its RTT is shorter,
 * one reason it takes the larger share of a shared L4S queue. An
 * experiment, off by default: the lab has not shown a value that helps in
 * every run (docs/l4s.md).
 */

static inline void bbr_update_l4s_cycle(struct bbr3 *b,
					 const struct bbr_sock *sk)
{
	u32 n = bbr_max_u32(BBR_P(b).cycle_rounds, BBR_L4S_CYCLE_MIN_ROUNDS);
	bool long_enough = (s64)(sk->now_us - (b->cycle_mstamp_us +
					       BBR_P(b).cycle_min_us)) >= 0;

	/* rounds_since_probe, counted at each round start, is the round of
	 * the cycle here: 0 the up round, 1 the down round */
	if (!b->round_start)
		return;
	if (b->rounds_since_probe >= n && long_enough)
		b->rounds_since_probe = BBR_L4S_CYCLE_UP;
	switch (b->rounds_since_probe) {
	case BBR_L4S_CYCLE_UP:
		/* a probe, as BBRv3's REFILL and UP: the lower bounds lifted;
		 * its feedback is this round's ACKs (see above) */
		b->cycle_mstamp_us = sk->now_us;
		bbr_reset_lower_bounds(b);
		b->bw_probe_samples = 1;
		if (!BBR_P(b).bw_slot_rounds)
			bbr_advance_max_bw_filter(b);
		bbr_set_cycle_idx(b, BBR_BW_PROBE_UP);
		break;
	case BBR_L4S_CYCLE_DOWN:
		b->bw_probe_samples = 0;
		bbr_set_cycle_idx(b, BBR_BW_PROBE_DOWN);
		break;
	default:
		bbr_set_cycle_idx(b, BBR_BW_PROBE_CRUISE);
		break;
	}
}

/* At a round start: the L4S mode's max-bw filter moves a slot every
 * bw_slot_rounds rounds (BBR-evo's 2-round window: 1). */
static inline void bbr_l4s_advance_bw_slot(struct bbr3 *b)
{
	u32 n = BBR_P(b).bw_slot_rounds;

	if (b->l4s && n && b->mode == BBR_PROBE_BW && !(b->round_count % n))
		bbr_advance_max_bw_filter(b);
}

/* ---- The hooks ---------------------------------------------------------- */

#define BBR_HOOK_MODE
static inline void bbr_hook_mode(struct bbr3 *b, const struct bbr_sock *sk)
{
	b->l4s = BBR_P(b).l4s && sk->accecn;
}

/* bw = (delivered - delivered_ce / K) / interval: a flow whose packets an
 * L4S AQM marks sees its bandwidth estimate shrink with the marking rate
 * instead of waiting for a lower bound to be cut. */
#define BBR_HOOK_BW_SAMPLE
static inline void bbr_hook_bw_sample(const struct bbr3 *b, const struct bbr_rs *rs,
				      u64 *pkts, u64 *scale)
{
	u32 k = b->l4s ? BBR_P(b).ce_discount_k : 0;

	if (k && rs->delivered_ce > 0 && rs->delivered_ce <= rs->delivered) {
		*pkts = *pkts * k - (u64)rs->delivered_ce;	/* in 1/K packets */
		*scale = k;
	}
}

/* The mode reads the round's CE ratio with or without BBRv3's ECN
 * response. */
#define BBR_HOOK_READS_CE
static inline bool bbr_hook_reads_ce(const struct bbr3 *b)
{
	return b->l4s;
}

/* startup_ce_rounds rounds with any CE, in a row or not, end STARTUP, and
 * bbr_check_drain() goes straight to PROBE_BW (BBR-evo: more than one
 * round). */
#define BBR_HOOK_STARTUP_CE
static inline bool bbr_hook_startup_ce(struct bbr3 *b, const struct bbr_sock *sk,
				       u32 delivered_ce)
{
	if (!b->l4s || !BBR_P(b).startup_ce_rounds)
		return false;
	if (delivered_ce && b->startup_ecn_rounds < BBR_L4S_STARTUP_CE_ROUNDS_MAX)
		b->startup_ecn_rounds++;
	if (bbr_l4s_startup_ce(b))
		bbr_handle_queue_too_high_in_startup(b, sk);
	return true;
}

/* CE ended STARTUP: the queue is at the AQM's step, nothing to drain. */
#define BBR_HOOK_SKIP_DRAIN
static inline bool bbr_hook_skip_drain(const struct bbr3 *b)
{
	return bbr_l4s_startup_ce(b);
}

/* Back in STARTUP after a spurious loss: the count of rounds with CE never
 * resets by itself. */
#define BBR_HOOK_UNDO_STARTUP
static inline void bbr_hook_undo_startup(struct bbr3 *b)
{
	if (b->l4s)
		b->startup_ecn_rounds = 0;
}

#define BBR_HOOK_CYCLE
static inline bool bbr_hook_cycle(struct bbr3 *b, const struct bbr_sock *sk)
{
	if (!bbr_l4s_cycle(b))
		return false;
	bbr_update_l4s_cycle(b, sk);
	return true;
}

#define BBR_HOOK_CYCLE_GAINS
static inline bool bbr_hook_cycle_gains(struct bbr3 *b)
{
	if (!bbr_l4s_cycle(b))
		return false;
	switch (b->cycle_idx) {
	case BBR_BW_PROBE_UP:
		b->pacing_gain = (u16)BBR_P(b).cycle_up_gain;
		break;
	case BBR_BW_PROBE_DOWN:
		b->pacing_gain = (u16)BBR_P(b).cycle_down_gain;
		break;
	default:
		b->pacing_gain = BBR_UNIT;
		break;
	}
	b->cwnd_gain = (u16)BBR_P(b).cwnd_gain;
	return true;
}

/* An L4S cycle goes on from its down round. */
#define BBR_HOOK_CYCLE_DOWN
static inline void bbr_hook_cycle_down(struct bbr3 *b)
{
	if (bbr_l4s_cycle(b))
		b->rounds_since_probe = BBR_L4S_CYCLE_DOWN;
}

#define BBR_HOOK_CYCLE_OWNS_BW_FILTER
static inline bool bbr_hook_cycle_owns_bw_filter(const struct bbr3 *b)
{
	return bbr_l4s_own_bw_filter(b);
}

#define BBR_HOOK_ROUND_START
static inline void bbr_hook_round_start(struct bbr3 *b)
{
	bbr_l4s_advance_bw_slot(b);
}

/* BBR-evo: no PROBE_RTT (l4s_no_probe_rtt). */
#define BBR_HOOK_PROBE_RTT_ALLOWED
static inline bool bbr_hook_probe_rtt_allowed(const struct bbr3 *b)
{
	return !(b->l4s && BBR_P(b).l4s_no_probe_rtt);
}

#endif /* BBR3_L4S_H */
