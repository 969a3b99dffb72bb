/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * core/swift.h: the BBR.Swift delay response on top of the BBRv3 core.
 *
 * BBR.Swift (Google, IETF 109 ICCRG) is BBRv3 with one more congestion
 * signal: the Network_RTT that TCP ETS measures (RTT minus the receiver's
 * ACK delay), compared with a configured target_RTT. When a fresh sample
 * exceeds the target, the short-term model is cut by Swift's multiplicative
 * decrease with beta = 0.8 and max_mdf = 0.5:
 *
 *     factor = max(1 - 0.8 * (Network_RTT - target_RTT) / Network_RTT, 0.5)
 *
 * applied, like BBRv3's loss and ECN responses, to the lower bounds bw_lo
 * and inflight_lo, so pacing rate (from bw) and cwnd (capped by
 * inflight_lo) both fall by the factor, while the long-term model
 * (max_bw, inflight_hi) and PROBE_BW's probing (REFILL resets the lower
 * bounds) stay BBRv3's. At most once per packet-timed round trip: a new
 * decrease needs an ACK for data sent after the previous one (Swift's
 * can_decrease), so the cut reacts to its own effect, not to the queue it
 * already answered. Not during STARTUP, REFILL and UP: those probe on
 * purpose, exactly as BBRv3's loss and ECN responses leave the lower bounds
 * alone there. Instead, over target ends the probe the way BBRv3 ends it on
 * too much loss or CE: STARTUP after SWIFT_STARTUP_OVER_ROUNDS rounds in a
 * row (then DRAIN, where the cuts apply), UP at once (inflight_hi, DOWN).
 *
 * Which Network_RTT decides: the least sample of the current packet-timed
 * round trip so far (swift_decision_rtt()), as the kernel's min_rtt
 * filters do for RTT. A sample carries the host's own delays on both ends
 * (softirq, qdisc, the emulator's or NIC's queues: with software
 * timestamps ~0.2 ms here and spikes of a millisecond and more under
 * load); the least sample of a round still carries the floor of that but
 * none of its spikes, while a queue that stands for a round raises every
 * sample of it. The cost is reaction time: a queue that builds within a
 * round is answered at the next round's samples, not at its first one. A
 * fractional window (below) decides on each sample: it sends less than a
 * packet per round trip, so a round holds one sample and the minimum would
 * only double its reaction time in the incast where queues build fastest.
 * The key raw_samples restores deciding on each latest sample everywhere.
 *
 * With a target set and a fresh sample the DCTCP-style ECN response of
 * BBRv3 is off (the delay is the signal). Without a fresh sample (no ETS
 * peer, no storage, stale sample) the socket runs plain BBRv3, and the
 * state says why (swift_state.status).
 *
 * Sub-packet windows: when a decrease would take the model's window below
 * BBRv3's cwnd floor (BBR_CWND_MIN_TARGET_PKTS), inflight_lo stays at the
 * floor and the window continues as a fractional one (subpkt_cwnd_milli,
 * down to SWIFT_SUBPKT_MIN_MILLI = 0.001 packet, as in Swift) that paces
 * the flow at that many packets per target_RTT: in a heavy incast a flow
 * sends less than one packet per round trip. While it lasts the fractional
 * window is the flow's whole control, an AIMD of its own as in Swift: an
 * ACK over target may cut it (once per round trip, whatever BBRv3's phase),
 * an ACK at or below target grows it (swift_subpkt_ai_milli()), and the
 * flow returns to BBRv3 when the window is back at the floor (at the same
 * rate) or on a fallback.
 *
 * A delay signal for the BBRv3 core, which consumes it at one point of its
 * per-ACK step (bbr_core_main(), after the loss inputs, before the model;
 * swift_after_ack() after the control): Swift reads the model and acts on
 * it only through the core's delay-signal API (bbr_signal_*() in
 * core/bbr3.h). Plain C, compiles natively (selftests/unit/test_swift*.c)
 * and as BPF; included by core/bbr3.h. See docs/bbr_swift.md.
 */
#ifndef SWIFT_CORE_H
#define SWIFT_CORE_H

/* Swift's MD gain beta = 0.8, as an exact ratio (Kumar et al. 2020, and the
 * BBR.Swift rule). */
#define SWIFT_BETA_NUM			4u
#define SWIFT_BETA_DEN			5u
/* Swift's max_mdf = 0.5: no single decrease below half. */
#define SWIFT_MIN_FACTOR		(SWIFT_FACTOR_UNIT / 2)
/* Smallest fractional window, in 1/1000 packet: Swift's 0.001 packet. */
#define SWIFT_SUBPKT_MIN_MILLI		1u
#define SWIFT_MILLI_PER_PKT		1000u
#define SWIFT_SUBPKT_FLOOR_MILLI	(BBR_CWND_MIN_TARGET_PKTS * SWIFT_MILLI_PER_PKT)
/* Additive increase of a fractional window on an ACK at or below target,
 * in 1/1000 packet (swift_subpkt_ai_milli()): SWIFT_SUBPKT_AI_BASE_MILLI
 * plus SWIFT_SUBPKT_AI_MILLI_PER_MS for each millisecond of target_RTT,
 * times sqrt(w) below one packet or 1 / sqrt(w) from one packet on (w in
 * packets). Swift's ai is a whole packet per RTT, which hundreds of flows
 * sharing a pipe of a few packets cannot afford: each adds a packet per RTT
 * to a 16-packet pipe and the queue stands where the 0.5 cuts balance it,
 * ~3 x the target. The values were chosen in the packet model
 * (selftests/unit/sim.c; docs/bbr_swift.md has the sweep): from 4 flows at
 * an 11 ms target to 400 flows at 400 us, Jain >= 0.94 per group and
 * Network_RTT within 10 % of the target. */
#define SWIFT_SUBPKT_AI_BASE_MILLI	2u
#define SWIFT_SUBPKT_AI_MILLI_PER_MS	50u
#define SWIFT_USEC_PER_MSEC		1000u
/* Rounds in a row with Network_RTT over target that end STARTUP: as many as
 * BBRv3 needs with CE over its threshold (BBR_FULL_ECN_CNT). */
#define SWIFT_STARTUP_OVER_ROUNDS	BBR_FULL_ECN_CNT
/* The decision's filter spans at least this many samples, also at the
 * start of a round (swift_decision_rtt()). */
#define SWIFT_FILTER_MIN_SAMPLES	2u
#define SWIFT_NSEC_PER_USEC		1000ULL
#define SWIFT_USEC_PER_SEC		1000000ULL


/* factor in SWIFT_FACTOR_UNIT; SWIFT_FACTOR_UNIT when at or below target. */
static inline u32 swift_md_factor(u32 network_rtt_us, u32 target_rtt_us)
{
	u64 excess, cut;

	if (target_rtt_us == SWIFT_TARGET_NONE || network_rtt_us <= target_rtt_us)
		return SWIFT_FACTOR_UNIT;
	excess = network_rtt_us - target_rtt_us;
	cut = (excess * SWIFT_BETA_NUM * SWIFT_FACTOR_UNIT) /
	      ((u64)network_rtt_us * SWIFT_BETA_DEN);
	if (cut >= SWIFT_FACTOR_UNIT - SWIFT_MIN_FACTOR)
		return SWIFT_MIN_FACTOR;
	return SWIFT_FACTOR_UNIT - (u32)cut;
}

static inline u32 swift_scale(u32 x, u32 factor)
{
	return (u32)(((u64)x * factor) >> SWIFT_FACTOR_SCALE);
}

/* Why this ACK does or does not use the target (SWIFT_ST_*). */
static inline u8 swift_classify(const struct swift_state *w,
				const struct swift_sample *smp, u64 now_us)
{
	u64 sample_us;

	if (w->target_rtt_us == SWIFT_TARGET_NONE)
		return SWIFT_ST_NO_TARGET;
	if (!smp->present || !smp->last_sample_ns || !smp->network_rtt_us)
		return SWIFT_ST_NO_ETS;
	sample_us = smp->last_sample_ns / SWIFT_NSEC_PER_USEC;
	if (now_us > sample_us && now_us - sample_us > w->stale_us)
		return SWIFT_ST_STALE;
	return SWIFT_ST_ACTIVE;
}

/*
 * The Network_RTT this ACK's decisions use: the least sample since the
 * current round began (BBRv3's packet-timed rounds; round_start still
 * holds the previous ACK's verdict here, which shifts the window by one
 * ACK), and never fewer than the last SWIFT_FILTER_MIN_SAMPLES samples, so
 * the first sample of a round is not taken alone. In a fractional window
 * or with SWIFT_CFG_F_RAW_SAMPLES, the sample itself. prev_sample_us: the
 * sample before this one (0: none).
 */
static inline u32 swift_decision_rtt(struct swift_state *w, const struct bbr3 *b,
				     u32 sample_us, u32 prev_sample_us)
{
	u32 least;

	if (b->round_start) {
		w->round_min_rtt_us = 0;
		w->round_samples = 0;
	}
	if (!w->round_min_rtt_us || sample_us < w->round_min_rtt_us)
		w->round_min_rtt_us = sample_us;
	if (w->round_samples < SWIFT_FILTER_MIN_SAMPLES)
		w->round_samples++;
	least = w->round_min_rtt_us;
	if (w->round_samples < SWIFT_FILTER_MIN_SAMPLES && prev_sample_us &&
	    prev_sample_us < least)
		least = prev_sample_us;
	if ((w->flags & SWIFT_CFG_F_RAW_SAMPLES) || w->subpkt_cwnd_milli)
		return sample_us;
	return least;
}

/* Swift's can_decrease: an ACK for data sent after the last decrease. */
static inline bool swift_can_decrease(const struct swift_state *w,
				      const struct bbr_rs *rs)
{
	if (!w->has_decreased)
		return true;
	if (rs->delivered <= 0)
		return false;	/* no valid sample: cannot tell */
	return (s32)(rs->prior_delivered - w->decrease_delivered) >= 0;
}

/* REFILL and UP probe on purpose and reset the lower bounds afterwards. */
static inline bool swift_probing(const struct bbr3 *b)
{
	return b->mode == BBR_PROBE_BW &&
	       (b->cycle_idx == BBR_BW_PROBE_REFILL ||
		b->cycle_idx == BBR_BW_PROBE_UP);
}

/* Cut bw_lo and inflight_lo by factor; below the cwnd floor the window
 * continues as a fractional one (bw_lo then stays where it was: the
 * fractional window alone sets the rate until it is back at the floor). */
static inline void swift_cut_lower_bounds(struct bbr3 *b, struct swift_state *w,
					  const struct bbr_sock *sk, u32 factor)
{
	u64 win_milli;

	u32 bw_lo, inflight_lo;

	bbr_signal_lower_bounds(b, sk, &bw_lo, &inflight_lo);
	win_milli = ((u64)inflight_lo * SWIFT_MILLI_PER_PKT * factor) >>
		    SWIFT_FACTOR_SCALE;
	if (win_milli >= SWIFT_SUBPKT_FLOOR_MILLI) {
		bbr_signal_set_lower_bounds(b, swift_scale(bw_lo, factor),
					    (u32)(win_milli / SWIFT_MILLI_PER_PKT));
		return;
	}
	/* max_bw may still be 0: bw_lo at least 1 */
	bbr_signal_set_lower_bounds(b, bw_lo, BBR_CWND_MIN_TARGET_PKTS);
	w->subpkt_cwnd_milli = bbr_max_u32((u32)win_milli, SWIFT_SUBPKT_MIN_MILLI);
}

/* sqrt(w / 1000 packet) x 1000, i.e. floor(sqrt(w_milli x 1000)), for a
 * fractional window (1 <= w_milli <= SWIFT_SUBPKT_FLOOR_MILLI, so the root
 * is 31..2000). Newton's iteration from above, a fixed number of steps and
 * no data-dependent branch but the last (a bit-by-bit loop with a branch
 * per bit multiplied the verifier's states by five): from 2048 it halves
 * to the root and then converges quadratically within SWIFT_SQRT_STEPS, and
 * ends on the root or one above it. */
#define SWIFT_SQRT_START		2048u	/* >= sqrt(4000 x 1000) */
#define SWIFT_SQRT_STEPS		12
static inline u32 swift_sqrt_milli(u32 w_milli)
{
	u32 x = bbr_min_u32(bbr_max_u32(w_milli, 1), SWIFT_SUBPKT_FLOOR_MILLI) *
		SWIFT_MILLI_PER_PKT;
	u32 r = SWIFT_SQRT_START;
	int i;

	for (i = 0; i < SWIFT_SQRT_STEPS; i++)
		r = (r + x / r) >> 1;
	if (r * r > x)
		r--;
	return r;
}

/*
 * Growth of a fractional window of w packets on an ACK at or below target:
 * base + ai x sqrt(w) below one packet, base + ai / sqrt(w) from one packet
 * on, ai = SWIFT_SUBPKT_AI_MILLI_PER_MS x target_RTT in ms. Per round trip
 * (w ACKs) that is ai x w^1.5 below one packet and ai x sqrt(w) above:
 *
 *  - continuous at one packet: with a jump there (Swift's own rule has one
 *    once ai is scaled down), the flows just above a packet outgrew the
 *    rest and ended with 20-100 x their share (packet model, 20-400 flows);
 *  - below one packet it grows a flow by less than the cuts take from it as
 *    its window grows (one cut per ACK over target: w ACKs per round trip),
 *    and above one packet by less than in proportion to its window (one cut
 *    per round trip): smaller flows gain on larger ones on both sides;
 *  - in proportion to the target: a flow of a 10 ms path left with two
 *    packets by a STARTUP exit gets back to BBRv3's floor in a few round
 *    trips (with a fixed ai fit for 400 flows at 400 us, such flows stayed
 *    at a quarter of their share for the whole run while the flows still in
 *    BBRv3 kept theirs: lab, 4 flows, target 10.5 ms, Jain 0.47);
 *  - the constant term pulls the smallest flows up: without it the 400-flow
 *    model ended at Jain 0.8 instead of 0.95-0.98.
 */
static inline u32 swift_subpkt_ai_milli(const struct swift_state *w)
{
	u64 ai = (u64)SWIFT_SUBPKT_AI_MILLI_PER_MS * w->target_rtt_us;
	u32 root = swift_sqrt_milli(w->subpkt_cwnd_milli);	/* >= 31 */

	if (w->subpkt_cwnd_milli >= SWIFT_MILLI_PER_PKT)
		ai = ai / root;
	else
		ai = ai * root / ((u64)SWIFT_USEC_PER_MSEC * SWIFT_MILLI_PER_PKT);
	return SWIFT_SUBPKT_AI_BASE_MILLI + (u32)bbr_min_u64(ai, SWIFT_SUBPKT_FLOOR_MILLI);
}

/* Rate of a fractional window: subpkt_cwnd_milli packets per target_RTT.
 * The target rather than the measured Network_RTT: every flow on a path
 * then converts the same window to the same rate, whatever the noise of its
 * last sample, and at the operating point the two are the same. */
static inline u64 swift_subpkt_bw(const struct swift_state *w, u32 milli)
{
	return (u64)milli * BW_UNIT / ((u64)SWIFT_MILLI_PER_PKT * w->target_rtt_us);
}

/* A decrease was applied on this ACK. */
static inline void swift_note_decrease(struct swift_state *w,
				       const struct bbr_sock *sk, u32 factor)
{
	w->has_decreased = 1;
	w->decrease_delivered = sk->delivered;
	w->last_factor = factor;
	w->decreases++;
}

/*
 * An ACK of a flow with a fractional window: Swift's AIMD on that window,
 * whatever BBRv3's phase (the window is not BBRv3's model). Back at the
 * floor the flow returns to BBRv3 at the rate it had: bw_lo and inflight_lo
 * describe the floor window per target_RTT until the next REFILL lets it
 * probe. (Its bw_hi, made of one-packet flights' delivery-rate samples of
 * about a packet per RTT, says nothing of its share.)
 */
static inline void swift_subpkt_on_ack(struct bbr3 *b, struct swift_state *w,
				       const struct bbr_sock *sk,
				       const struct bbr_rs *rs, u32 factor)
{
	if (factor != SWIFT_FACTOR_UNIT) {
		if (!swift_can_decrease(w, rs))
			return;
		w->subpkt_cwnd_milli = bbr_max_u32(swift_scale(w->subpkt_cwnd_milli, factor),
						   SWIFT_SUBPKT_MIN_MILLI);
		swift_note_decrease(w, sk, factor);
		return;
	}
	w->subpkt_cwnd_milli += swift_subpkt_ai_milli(w);
	if (w->subpkt_cwnd_milli < SWIFT_SUBPKT_FLOOR_MILLI)
		return;
	w->subpkt_cwnd_milli = 0;
	bbr_signal_set_lower_bounds(b, (u32)bbr_min_u64(swift_subpkt_bw(w, SWIFT_SUBPKT_FLOOR_MILLI),
							  0xFFFFFFFFu),
				    BBR_CWND_MIN_TARGET_PKTS);
}

/*
 * Network_RTT above target while probing up: the probe has found the
 * in-flight level at which the queue exceeds the target. Answer it as
 * BBRv3 answers loss or ECN above their thresholds in UP (once per probe,
 * bw_probe_samples): inflight_hi to the level in flight, then DOWN. Without
 * this the lower bounds that REFILL reset let every probe run at
 * 1.25 x max_bw into a deep buffer until its round ends, and the flows of
 * a path took turns at rebuilding the queue the decreases had drained
 * (measured through linkem: 4 flows, 10 ms, target base + 1 ms: Network_RTT
 * 2 to 3 x the target). In REFILL the flow has not yet raised its rate:
 * nothing to answer there.
 */
static inline void swift_probe_too_high(struct bbr3 *b,
					const struct bbr_sock *sk,
					const struct bbr_rs *rs)
{
	if (b->cycle_idx != BBR_BW_PROBE_UP || !b->bw_probe_samples ||
	    rs->delivered <= 0)
		return;
	bbr_signal_end_probe(b, sk, rs);
}

/*
 * Network_RTT over target in STARTUP: the pipe is full and the queue beyond
 * the target is the flow's own making. Cutting the lower bounds here would
 * act on a bandwidth estimate that is a round or two old and tiny (measured
 * in the lab: 400 flows of an incast cut to 85 B/s in their first rounds
 * and never got out); BBRv3 does the same for CE. Counted at round starts
 * (b->round_start is the previous ACK's: once per round).
 */
static inline void swift_startup_too_high(struct bbr3 *b,
					  struct swift_state *w,
					  const struct bbr_sock *sk, bool over)
{
	if (b->mode != BBR_STARTUP || b->full_bw_reached || !b->round_start)
		return;
	if (!over) {
		w->startup_over_rounds = 0;
		return;
	}
	if (w->startup_over_rounds < SWIFT_STARTUP_OVER_ROUNDS)
		w->startup_over_rounds++;
	if (w->startup_over_rounds >= SWIFT_STARTUP_OVER_ROUNDS)
		bbr_signal_end_startup(b, sk);
}

/*
 * In bbr_core_main(), before the model: classify, switch ECN off when the
 * delay signal is in force, and apply at most one decrease per round trip.
 * The cut is in the model, so this ACK's pacing rate and cwnd already
 * follow it.
 */
static inline void swift_on_ack(struct bbr3 *b, struct swift_state *w,
				struct bbr_sock *sk, const struct bbr_rs *rs,
				const struct swift_sample *smp)
{
	u32 factor;

	w->status = swift_classify(w, smp, sk->now_us);
	if (w->status != SWIFT_ST_ACTIVE) {
		/* Plain BBRv3: no fractional window without the signal. */
		w->subpkt_cwnd_milli = 0;
		if (w->status != SWIFT_ST_NO_TARGET)
			w->fallback_acks++;
		return;
	}
	if (!(w->flags & SWIFT_CFG_F_KEEP_ECN))
		bbr_signal_no_ecn(b, sk);	/* the delay is the signal */
	w->decided_rtt_us = swift_decision_rtt(w, b, smp->network_rtt_us,
					       w->network_rtt_us);
	w->network_rtt_us = smp->network_rtt_us;
	w->last_sample_ns = smp->last_sample_ns;
	factor = swift_md_factor(w->decided_rtt_us, w->target_rtt_us);
	if (b->initialized)
		swift_startup_too_high(b, w, sk, factor != SWIFT_FACTOR_UNIT);
	/* The fractional window outlives a reset of the lower bounds by
	 * REFILL and ignores BBRv3's phases: a flow in heavy incast probes
	 * only once its window is back at the floor. Without that, BBRv3's
	 * Reno-coexistence timer (rounds ~ BDP in packets, a handful here)
	 * would refill every few rounds, and flows in REFILL or UP would
	 * escape the cuts the others take. */
	if (w->subpkt_cwnd_milli) {
		swift_subpkt_on_ack(b, w, sk, rs, factor);
		return;
	}
	if (factor == SWIFT_FACTOR_UNIT)
		return;
	if (!b->initialized || b->mode == BBR_STARTUP)
		return;
	if (swift_probing(b)) {
		swift_probe_too_high(b, sk, rs);
		return;
	}
	if (!swift_can_decrease(w, rs))
		return;
	swift_cut_lower_bounds(b, w, sk, factor);
	swift_note_decrease(w, sk, factor);
}

/* In bbr_core_main(), after the control: with a fractional window, cwnd
 * stays at its floor (whatever REFILL did to inflight_lo) and the pacing
 * rate is the window's (swift_subpkt_bw()), less than a packet per round
 * trip below one packet. */
static inline void swift_after_ack(const struct bbr3 *b,
				   const struct swift_state *w,
				   struct bbr_sock *sk)
{
	u64 rate;

	if (!b->initialized || w->status != SWIFT_ST_ACTIVE ||
	    !w->subpkt_cwnd_milli)
		return;
	rate = (swift_subpkt_bw(w, w->subpkt_cwnd_milli) * sk->mss *
		SWIFT_USEC_PER_SEC) >> BW_SCALE;
	bbr_signal_cap(sk, BBR_CWND_MIN_TARGET_PKTS, rate);
}

/* Target configuration in force: bbr_swift's keys of the socket's
 * parameter set (the glue passes them; NULL: the built-in defaults). */
static inline void swift_apply_cfg(struct swift_state *w,
				   const struct swift_cfg *cfg, u32 round)
{
	w->target_rtt_us = cfg ? cfg->target_rtt_us : SWIFT_TARGET_RTT_DEFAULT_US;
	w->stale_us = (cfg && cfg->stale_us) ? cfg->stale_us : SWIFT_STALE_DEFAULT_US;
	w->flags = cfg ? cfg->flags : 0;
	w->cfg_round = round;
}

static inline bool swift_cfg_due(const struct swift_state *w, u32 round)
{
	return round - w->cfg_round >= SWIFT_CFG_REFRESH_ROUNDS;
}

#endif /* SWIFT_CORE_H */
