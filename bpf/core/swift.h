/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * core/swift.h: the BBR.Swift delay response on top of the BBRv3 core.
 *
 * BBR.Swift (Google, IETF 109 ICCRG) is BBRv3 with one more congestion
 * signal: the Network_RTT that TCP ETS measures (RTT minus the receiver's
 * ACK delay), compared with a configured target_RTT. When it exceeds the
 * target, cwnd and pacing rate are cut by Swift's multiplicative decrease
 * with beta = 0.8 and max_mdf = 0.5:
 *
 *     factor = max(1 - 0.8 * (Network_RTT - target_RTT) / Network_RTT, 0.5)
 *
 * The Swift window. The decrease acts on a window of its own, Swift's
 * cwnd (swift_state.cwnd_milli, in 1/1000 packet), not on BBRv3's model:
 * the first decision over target engages it at the flow's window times the
 * factor, and from then on it is an AIMD of its own, as in Swift: an ACK
 * whose decision is over target cuts it by the factor (at most once per
 * packet-timed round trip: Swift's can_decrease, so a cut reacts to its
 * own effect, not to the queue it already answered; and a sparse flow
 * once per excursion over target unless the queue grows:
 * swift_same_excursion()), an ACK at or below target grows it
 * (swift_ai_milli()). After BBRv3's control, cwnd and
 * pacing rate are capped by it (swift_after_ack()): cwnd at the window,
 * pacing at the window per target_RTT. BBRv3's model (max_bw, inflight_hi,
 * its probing, loss and ECN) still runs and bounds the flow from above;
 * the Swift window is capped at BBRv3's own cwnd in steady state so it
 * keeps no credit beyond what the model would send. This is Swift's
 * "effective cwnd = min(fabric cwnd, endpoint cwnd)" with BBRv3 as the
 * other window.
 *
 * Why a window of its own rather than a cut of BBRv3's lower bounds
 * (bw_lo, inflight_lo, as BBRv3 answers loss and ECN; the first version
 * did that): PROBE_BW's REFILL resets the lower bounds, and with a BDP of a
 * few packets BBRv3's Reno-coexistence timer refills every few rounds, so
 * a flow in BBRv3's regime was back at max_bw each time while the flows in
 * the fractional regime (below) paid for its queue. Measured in swift_dc
 * (400 flows): one flow that fell out of the delay control for a moment
 * (an RTO, so no sample for 100 ms) probed up to 200-500 Mbit/s and held
 * it for the rest of the run (Jain 0.013 over 400 flows). An AIMD on one
 * window for every flow, whatever its size and BBRv3's phase, is what
 * makes Swift fair: equal additive increase, proportional decrease.
 *
 * Below BBRv3's cwnd floor (BBR_CWND_MIN_TARGET_PKTS) the window continues
 * as a fractional one, down to SWIFT_CWND_MIN_MILLI = 0.001 packet as in
 * Swift: cwnd stays at the floor and the pacing rate alone, window per
 * target_RTT, makes the flow send less than one packet per round trip
 * (heavy incast: 400 flows on a pipe of 16 packets).
 *
 * Which Network_RTT decides (swift_decision_rtt()): the path's, when the
 * ETS program gives one (smp->path_rtt_us: the least Network_RTT that any
 * connection of this host to the same peer measured over the last
 * ETS_PATH_WIN_US or so): host and emulator jitter differ from packet to
 * packet and between connections, while a queue at the bottleneck raises
 * every sample of every connection through it, so the least of many
 * samples is the queue's and not the jitter's, and all connections to the
 * peer decide on the same value (fair cuts). The path value decides
 * together with the one the connection's previous sample carried, if that
 * came within two round trips (the smaller of the two): a queue stands
 * through both, a stall of the host that raised every sample of one path
 * window rarely does (swift_path_rtt()). Without a path value: the least
 * sample of the connection's current round trip (over two samples at
 * least), as the kernel's min_rtt filters do for RTT; a fractional window
 * decides on each sample (its round holds one). The key raw_samples
 * restores deciding on each latest sample everywhere.
 *
 * Host delay. ETS also gives the sender's own share of the delay
 * (smp->host_delay_us: how late this host put its segments on the wire
 * after their pacing time, and how long ACKs waited before TCP saw them),
 * which Network_RTT no longer contains. With a host target (key
 * host_target_us, 0 = none) it is a second signal with the same decrease
 * on the same window: the factor is the smaller of the two.
 *
 * STARTUP ends at the first decision over target (the queue beyond the
 * target is the flow's own making): then DRAIN, where the window engages.
 * The window is not cut in STARTUP itself: it would act on a bandwidth
 * estimate a round or two old and tiny (measured in the lab: 400 flows of
 * an incast cut to 85 B/s in their first rounds). REFILL and UP do not
 * cut an unengaged flow either (they probe on purpose, as BBRv3 leaves its
 * lower bounds alone there); over target in UP ends the probe as BBRv3
 * ends it on too much loss or CE.
 *
 * With a target set and a fresh sample the DCTCP-style ECN response of
 * BBRv3 is off (the delay is the signal). Without a sample (no ETS peer,
 * no storage, or ETS turned off on the connection since: a middlebox
 * strips the option) the socket runs plain BBRv3 and the window is
 * dropped; with a stale one (ETS on, but no sample for stale_us: an RTO, a
 * long recovery) the window is kept and grows on every ACK as if at
 * target, so a flow whose signal paused returns to BBRv3's own rate
 * gradually instead of all at once. The state says which
 * (swift_state.status).
 *
 * A set of hooks of the BBRv3 core (core/bbr3.h, "Hooks"): its signal
 * (swift_on_ack(), after the loss inputs, before the model) and its cap
 * (swift_after_ack(), after the control), with the socket's struct
 * bbr_delay as the variant's state (BBR_EXT). Swift reads the model and
 * acts on it only through the core's bbr_signal_*() functions. Plain C,
 * compiles natively (selftests/unit/test_swift*.c) and as BPF; bbr_swift's
 * object includes it after the core (include/bbr_swift.h first, with
 * BBR_EXT defined as struct bbr_delay), then core/bbr3_hooks.h. See
 * docs/bbr_swift.md.
 */
#ifndef SWIFT_CORE_H
#define SWIFT_CORE_H

/* Swift's MD gain beta = 0.8, as an exact ratio (Kumar et al. 2020, and the
 * BBR.Swift rule). */
#define SWIFT_BETA_NUM			4u
#define SWIFT_BETA_DEN			5u
/* Swift's max_mdf = 0.5: no single decrease below half. */
#define SWIFT_MIN_FACTOR		(SWIFT_FACTOR_UNIT / 2)
/* Smallest window, in 1/1000 packet: Swift's 0.001 packet. */
#define SWIFT_CWND_MIN_MILLI		1u
#define SWIFT_MILLI_PER_PKT		1000u
/* Below this the window is paced: the pacing rate carries the window and
 * cwnd only follows what that rate keeps in flight (swift_paced_cwnd()). */
#define SWIFT_CWND_FLOOR_MILLI		(BBR_CWND_MIN_TARGET_PKTS * SWIFT_MILLI_PER_PKT)
/* Ceiling of the in-flight allowance of a paced window (swift_paced_cwnd()):
 * 16 x BBRv3's floor, so that an srtt inflated by a long stall cannot open
 * the kernel's cwnd without bound (the pacing rate still governs). */
#define SWIFT_PACED_CWND_MAX_PKTS	(16 * BBR_CWND_MIN_TARGET_PKTS)
/* Largest window (1/1000 packet): 2^31, ~2.1 M packets, so sums and
 * scaled values stay in 32 bits. */
#define SWIFT_CWND_MAX_MILLI		(1u << 31)
/* Additive increase on an ACK at or below target, in 1/1000 packet
 * (swift_ai_milli()): SWIFT_AI_BASE_MILLI plus SWIFT_AI_MILLI_PER_MS for
 * each millisecond of target_RTT, times sqrt(w) below one packet or
 * 1 / sqrt(w) from one packet on (w in packets), per packet acknowledged
 * from one packet on. Swift's ai is a whole packet per RTT, which hundreds
 * of flows sharing a pipe of a few packets cannot afford: each adds a
 * packet per RTT to a 16-packet pipe and the queue stands where the 0.5
 * cuts balance it, ~3 x the target. The values were chosen in the packet
 * model (selftests/unit/sim.c; docs/bbr_swift.md has the sweep): from 4
 * flows at an 11 ms target to 400 flows at 400 us, Jain >= 0.94 per group
 * and Network_RTT within 10 % of the target. */
#define SWIFT_AI_BASE_MILLI		2u
#define SWIFT_AI_MILLI_PER_MS		50u
/* Packets of one ACK that count for the increase: a stretch ACK of a GRO
 * receiver counts, a jump of the cumulative ACK after a loss repair does
 * not count for more than this. */
#define SWIFT_AI_MAX_ACKED_PKTS		64u
#define SWIFT_USEC_PER_MSEC		1000u
/* The decision's own-sample filter spans at least this many samples, also
 * at the start of a round (swift_decision_rtt()). */
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
 * The path value this ACK decides on: the smaller of the latest sample's
 * and the previous sample's of this connection, when that one came within
 * SWIFT_PERSIST_RTTS round trips (srtt) before it; the latest alone
 * otherwise. With tens of connections sharing a pipe of a few packets,
 * ACKs are sparse and a path window often holds one or two samples, so a
 * host stall of a millisecond or two raised the path value of a whole
 * window: on the kernel path (swift_dc_kernel_regime, the packets' queue
 * under 1 us), 5 % of the round trips decided over target and 85-90 % of
 * those followed one under target, each a cut of up to half. A queue
 * above target stands through both samples and is cut one sample later.
 * A connection whose samples are further apart than that (an incast of
 * hundreds of flows, a sample every ~30 round trips) cannot wait for a
 * second one: in the packet model the queue then overshot the target by
 * half (swift_incast_fair_at_target). Samples, not ACKs: an ACK that
 * brought no new sample (no room for the option) repeats the latest.
 */
#define SWIFT_PERSIST_RTTS		2u
static inline u32 swift_path_rtt(struct swift_state *w,
				 const struct swift_sample *smp, u32 srtt_us)
{
	if (smp->last_sample_ns != w->last_sample_ns) {	/* a new sample */
		u64 gap_ns = smp->last_sample_ns - w->last_sample_ns;
		bool recent = w->last_sample_ns && srtt_us &&
			      gap_ns <= (u64)SWIFT_PERSIST_RTTS * srtt_us *
					SWIFT_NSEC_PER_USEC;

		w->prev_path_rtt_us = recent ? w->path_rtt_us : 0;
	}
	if (!w->prev_path_rtt_us)
		return smp->path_rtt_us;
	return bbr_min_u32(smp->path_rtt_us, w->prev_path_rtt_us);
}

/*
 * The Network_RTT this ACK's decisions use: the path's value when the ETS
 * program gives one (swift_path_rtt()); else the least sample since the current
 * round began (BBRv3's packet-timed rounds; round_start still holds the
 * previous ACK's verdict here, which shifts the window by one ACK), and
 * never fewer than the last SWIFT_FILTER_MIN_SAMPLES samples, so the first
 * sample of a round is not taken alone. A fractional window without a path
 * value, or SWIFT_CFG_F_RAW_SAMPLES, decides on the sample itself.
 * prev_sample_us: the sample before this one (0: none).
 */
static inline u32 swift_decision_rtt(struct swift_state *w, const struct bbr3 *b,
				     const struct swift_sample *smp,
				     u32 prev_sample_us, u32 srtt_us)
{
	u32 sample_us = smp->network_rtt_us, least;

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
	if (w->flags & SWIFT_CFG_F_RAW_SAMPLES)
		return sample_us;
	if (smp->path_rtt_us)
		return swift_path_rtt(w, smp, srtt_us);
	if (w->cwnd_milli && w->cwnd_milli < SWIFT_CWND_FLOOR_MILLI)
		return sample_us;
	return least;
}

/* The decrease this ACK's signals ask for: the smaller of the fabric's
 * (decided Network_RTT against target_RTT) and the host's (the sender's
 * own delay against host_target_us, when one is set). */
static inline u32 swift_factor(const struct swift_state *w)
{
	u32 fabric = swift_md_factor(w->decided_rtt_us, w->target_rtt_us);
	u32 host = SWIFT_FACTOR_UNIT;

	if (w->host_target_us && w->host_delay_us)
		host = swift_md_factor(w->host_delay_us, w->host_target_us);
	return bbr_min_u32(fabric, host);
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

/* REFILL and UP probe on purpose. */
static inline bool swift_probing(const struct bbr3 *b)
{
	return b->mode == BBR_PROBE_BW &&
	       (b->cycle_idx == BBR_BW_PROBE_REFILL ||
		b->cycle_idx == BBR_BW_PROBE_UP);
}

/*
 * sqrt(w / 1000 packet) x 1000, i.e. floor(sqrt(w_milli x 1000)), for any
 * window (0 counts as SWIFT_CWND_MIN_MILLI). Newton's iteration from a
 * power of two at most 4 x above the root (from the window's log2), a
 * fixed number of steps and no data-dependent branch but the last (a
 * bit-by-bit loop with a branch per bit multiplied the verifier's states
 * by five): from within 4 x the error falls to 2.1 x, 1.3 x, 1.03 x ...
 * and SWIFT_SQRT_STEPS end on the root or one above it.
 */
#define SWIFT_SQRT_STEPS		6
static inline u32 swift_sqrt_milli(u32 w_milli)
{
	u64 x = (u64)bbr_max_u32(w_milli, SWIFT_CWND_MIN_MILLI) * SWIFT_MILLI_PER_PKT;
	/* x < 2^(ilog2(w) + 11), so 2^((ilog2(w) + 11) / 2 + 1) > sqrt(x) */
	u64 r = 1ull << ((bbr_ilog2_u32(bbr_max_u32(w_milli, 1)) + 11) / 2 + 1);
	int i;

	for (i = 0; i < SWIFT_SQRT_STEPS; i++)
		r = (r + x / r) >> 1;
	if (r * r > x)
		r--;
	return (u32)r;
}

/*
 * Growth of a window of w packets on an ACK at or below target:
 * base + ai x sqrt(w) below one packet, (base + ai / sqrt(w)) per packet
 * acknowledged from one packet on, ai = SWIFT_AI_MILLI_PER_MS x target_RTT
 * in ms. Per round trip (w packets) that is ai x w^1.5 below one packet
 * and ai x sqrt(w) above (plus base x w):
 *
 *  - continuous at one packet: with a jump there (Swift's own rule has one
 *    once ai is scaled down), the flows just above a packet outgrew the
 *    rest and ended with 20-100 x their share (packet model, 20-400 flows);
 *  - below one packet it grows a flow by less than the cuts take from it as
 *    its window grows (one cut per ACK over target: w ACKs per round trip),
 *    and above one packet by less than in proportion to its window (one cut
 *    per round trip): smaller flows gain on larger ones on both sides;
 *  - in proportion to the target: a flow of a 10 ms path left with two
 *    packets by a STARTUP exit gets back to its share in a few round trips
 *    (with a fixed ai fit for 400 flows at 400 us, such flows stayed at a
 *    quarter of their share for the whole run: lab, 4 flows, target
 *    10.5 ms, Jain 0.47);
 *  - the constant term pulls the smallest flows up: without it the 400-flow
 *    model ended at Jain 0.8 instead of 0.95-0.98.
 */
static inline u32 swift_ai_milli(const struct swift_state *w, u32 acked)
{
	u64 ai = (u64)SWIFT_AI_MILLI_PER_MS * w->target_rtt_us;
	u32 root = swift_sqrt_milli(w->cwnd_milli);	/* >= 31 */

	if (w->cwnd_milli < SWIFT_MILLI_PER_PKT) {
		ai = ai * root / ((u64)SWIFT_USEC_PER_MSEC * SWIFT_MILLI_PER_PKT);
		return SWIFT_AI_BASE_MILLI +
		       (u32)bbr_min_u64(ai, SWIFT_CWND_FLOOR_MILLI);
	}
	ai = bbr_min_u64(ai / root, SWIFT_CWND_FLOOR_MILLI);
	acked = bbr_min_u32(bbr_max_u32(acked, 1), SWIFT_AI_MAX_ACKED_PKTS);
	return (SWIFT_AI_BASE_MILLI + (u32)ai) * acked;
}

static inline void swift_grow(struct swift_state *w, u32 acked)
{
	u64 next = (u64)w->cwnd_milli + swift_ai_milli(w, acked);

	w->cwnd_milli = (u32)bbr_min_u64(next, SWIFT_CWND_MAX_MILLI);
}

/* Pacing rate of the window: cwnd_milli packets per target_RTT. The target
 * rather than the measured Network_RTT: every flow on a path then converts
 * the same window to the same rate, whatever the noise of its last sample,
 * and at the operating point the two are the same. */
static inline u64 swift_window_bw(const struct swift_state *w, u32 milli)
{
	return (u64)milli * BW_UNIT / ((u64)SWIFT_MILLI_PER_PKT * w->target_rtt_us);
}

/* A decrease was applied on this ACK. */
static inline void swift_note_decrease(struct swift_state *w,
				       const struct bbr_sock *sk, u32 factor)
{
	w->has_decreased = 1;
	w->in_excursion = 1;
	w->cut_us = sk->now_us;
	w->cut_rtt_us = w->decided_rtt_us;
	w->decrease_delivered = sk->delivered;
	w->last_factor = factor;
	w->decreases++;
}

/* The first decision over target: the window starts at what the flow has
 * in flight (its cwnd when nothing is), times the factor. */
static inline void swift_engage(struct swift_state *w, const struct bbr_sock *sk,
				const struct bbr_rs *rs, u32 factor)
{
	u32 pkts = sk->snd_cwnd;
	u64 milli;

	if (rs->prior_in_flight && rs->prior_in_flight < pkts)
		pkts = rs->prior_in_flight;
	milli = ((u64)pkts * SWIFT_MILLI_PER_PKT * factor) >> SWIFT_FACTOR_SCALE;
	w->cwnd_milli = (u32)bbr_max_u64(bbr_min_u64(milli, SWIFT_CWND_MAX_MILLI),
					 SWIFT_CWND_MIN_MILLI);
}

/*
 * One decrease per excursion over target, unless the queue grows. Swift
 * cuts at most once per round trip, so that a cut answers its own effect
 * and not the queue it already answered. A flow with less than a packet
 * per round trip sends a packet every target / window, longer than a
 * round trip: each of its ACKs is a round of its own. But its cut shows
 * in the queue only once the other flows of the path have cut too, each
 * at its own next packet, as sparse as this one's: until then its next
 * samples still meet the queue it answered, and with the round trip as
 * the only guard it was cut again on each of them. On the lab's kernel
 * path (swift_dc_kernel_regime, 32 flows at 0.2 packet per round trip)
 * each excursion cut every flow two or three times, the flows' summed
 * rate fell from ~530 to 150-290 Mbit/s of a 500 Mbit/s link and grew
 * back over 60-130 ms: a sawtooth that used 66-74 % of the link.
 *
 * So after a decrease, a later decision over target cuts again only when
 * it asks for a deeper cut than the last one, or reads more than
 * SWIFT_EXCURSION_GROWTH times the Network_RTT that one did (the queue
 * grew although this flow answered it: also past the 0.5 floor, where the
 * factor no longer deepens), or once SWIFT_EXCURSION_GAPS of the flow's
 * own packet gaps (target / window, at most stale_us) have passed since.
 * A decision at or below target ends the excursion. From a packet per
 * round trip on, the round trip alone guards, as in Swift (holding such
 * windows too lowered the four-flow model's Jain at an 11 ms target,
 * windows of ~10 packets, from 0.997 to 0.966). Four gaps were chosen in
 * the lab from 2, 4 and 8 (docs/bbr_swift.md, "One decrease per
 * excursion").
 */
#define SWIFT_EXCURSION_GAPS		4u
#define SWIFT_EXCURSION_GROWTH		2u
static inline bool swift_same_excursion(const struct swift_state *w,
					const struct bbr_sock *sk, u32 factor)
{
	u64 hold_us;

	if (!w->in_excursion || w->cwnd_milli >= SWIFT_MILLI_PER_PKT ||
	    factor < w->last_factor ||
	    w->decided_rtt_us > (u64)SWIFT_EXCURSION_GROWTH * w->cut_rtt_us)
		return false;
	hold_us = (u64)SWIFT_EXCURSION_GAPS * w->target_rtt_us * SWIFT_MILLI_PER_PKT /
		  bbr_max_u32(w->cwnd_milli, SWIFT_CWND_MIN_MILLI);
	hold_us = bbr_min_u64(hold_us, w->stale_us);
	return sk->now_us - w->cut_us < hold_us;
}

/* An ACK of a flow whose window is engaged: Swift's AIMD, whatever BBRv3's
 * phase (the window is not BBRv3's model). */
static inline void swift_window_on_ack(struct swift_state *w,
				       const struct bbr_sock *sk,
				       const struct bbr_rs *rs, u32 factor)
{
	if (factor == SWIFT_FACTOR_UNIT) {
		w->in_excursion = 0;
		swift_grow(w, rs->acked_sacked);
		return;
	}
	if (!swift_can_decrease(w, rs))
		return;
	if (swift_same_excursion(w, sk, factor))
		return;
	w->cwnd_milli = bbr_max_u32(swift_scale(w->cwnd_milli, factor),
				    SWIFT_CWND_MIN_MILLI);
	swift_note_decrease(w, sk, factor);
}

/*
 * Network_RTT above target while probing up: the probe has found the
 * in-flight level at which the queue exceeds the target. Answer it as
 * BBRv3 answers loss or ECN above their thresholds in UP (once per probe,
 * bw_probe_samples): inflight_hi to the level in flight, then DOWN. Without
 * this every probe ran at 1.25 x max_bw into a deep buffer until its round
 * ended, and the flows of a path took turns at rebuilding the queue the
 * decreases had drained (measured through linkem: 4 flows, 10 ms, target
 * base + 1 ms: Network_RTT 2 to 3 x the target). In REFILL the flow has
 * not yet raised its rate: nothing to answer there.
 */
static inline void swift_probe_too_high(struct bbr3 *b,
					const struct bbr_sock *sk,
					const struct bbr_rs *rs)
{
	if (b->mode != BBR_PROBE_BW || b->cycle_idx != BBR_BW_PROBE_UP ||
	    !b->bw_probe_samples || rs->delivered <= 0)
		return;
	bbr_signal_end_probe(b, sk, rs);
}

/* Over target in STARTUP: the pipe is full and the queue beyond the target
 * is the flow's own making. Leave STARTUP at once (full pipe, inflight_hi
 * from the BDP or the last round's delivery, then DRAIN), as BBRv3 does on
 * too much loss or CE; the decision is already filtered (the path's least
 * sample, or the round's), so one is enough. */
static inline void swift_startup_too_high(struct bbr3 *b,
					  const struct bbr_sock *sk)
{
	if (b->mode == BBR_STARTUP && !b->full_bw_reached)
		bbr_signal_end_startup(b, sk);
}

/* No usable sample on this ACK: NO_ETS drops the window (plain BBRv3);
 * STALE keeps it and grows it as if at target (see the top). */
static inline void swift_no_signal(struct swift_state *w,
				   const struct bbr_rs *rs)
{
	if (w->status == SWIFT_ST_NO_TARGET) {
		w->cwnd_milli = 0;
		return;
	}
	w->fallback_acks++;
	if (w->status == SWIFT_ST_STALE && w->cwnd_milli)
		swift_grow(w, rs->acked_sacked);
	else
		w->cwnd_milli = 0;
}

/*
 * In bbr_core_main(), before the model: classify, switch ECN off when the
 * delay signal is in force, decide, and run the window's AIMD (or engage
 * it on the first decision over target).
 */
static inline void swift_on_ack(struct bbr3 *b, struct swift_state *w,
				struct bbr_sock *sk, const struct bbr_rs *rs,
				const struct swift_sample *smp)
{
	bool probing = swift_probing(b);
	u32 factor;

	w->status = swift_classify(w, smp, sk->now_us);
	if (w->status != SWIFT_ST_ACTIVE) {
		swift_no_signal(w, rs);
		return;
	}
	if (!(w->flags & SWIFT_CFG_F_KEEP_ECN))
		bbr_signal_no_ecn(b, sk);	/* the delay is the signal */
	w->decided_rtt_us = swift_decision_rtt(w, b, smp, w->network_rtt_us,
					       sk->srtt_us);
	w->network_rtt_us = smp->network_rtt_us;
	w->path_rtt_us = smp->path_rtt_us;
	w->host_delay_us = smp->host_delay_us;
	w->ack_delay_max_us = smp->ack_delay_max_us;
	w->last_sample_ns = smp->last_sample_ns;
	factor = swift_factor(w);
	if (!b->initialized)
		return;
	if (factor != SWIFT_FACTOR_UNIT) {
		swift_startup_too_high(b, sk);
		swift_probe_too_high(b, sk, rs);
	}
	if (w->cwnd_milli) {
		swift_window_on_ack(w, sk, rs, factor);
		return;
	}
	/* (probing: as the ACK found it, before an ended probe went DOWN) */
	if (factor == SWIFT_FACTOR_UNIT || b->mode == BBR_STARTUP || probing ||
	    !swift_can_decrease(w, rs))
		return;
	swift_engage(w, sk, rs, factor);
	swift_note_decrease(w, sk, factor);
}

/* How long a receiver may hold an ACK when it did not say (no ETS
 * MaxACKDel): the kernel's TCP_DELACK_MAX, HZ / 5. */
#define SWIFT_ACK_DELAY_UNKNOWN_US	200000u

/*
 * The kernel's cwnd for a window below the floor, which the pacing rate
 * carries (window per target_RTT): what that rate keeps in flight over a
 * whole round trip as the kernel counts it, srtt, plus a packet; BBRv3's
 * floor at least. Network_RTT leaves out the receiver's ACK delay, the
 * kernel's in flight does not: a receiver that holds the ACK of a lone
 * full-sized segment until its delayed-ACK timer (4-8 ms at HZ 250 under
 * ETS's MaxACKDel) has rate x srtt unacknowledged, far more than the
 * window. With the cwnd at the floor the flow then sent 4 packets per
 * srtt whatever its window: 32 flows at 0.2 packet per Network_RTT on the
 * kernel path (srtt 4.4 ms, Network_RTT 0.1 ms) filled 54-65 % of the
 * link with the queue empty and no cut; with the cwnd following the rate,
 * 84-92 % (lab scenario swift_dc_kernel_regime, interleaved invocations,
 * docs/bbr_swift.md). Swift itself does not delay ACKs; here the rate is
 * the window's and the cwnd only follows it.
 *
 * The round trip counts no longer than the target plus the receiver's
 * bound on its ACK delay (ETS MaxACKDel): beyond that srtt holds a queue,
 * and a cwnd that grew with it fed the queue that raised srtt. Through
 * linkem (swift_dc, 400 flows) srtt reached 1-1.5 s that way, cwnd 30-64
 * packets a flow, and Network_RTT a second.
 */
static inline u32 swift_paced_cwnd(const struct swift_state *w, const struct bbr_sock *sk)
{
	u32 ack_delay_us = w->ack_delay_max_us ? w->ack_delay_max_us
					       : SWIFT_ACK_DELAY_UNKNOWN_US;
	u64 rtt_us = bbr_min_u64(bbr_max_u32(sk->srtt_us, w->target_rtt_us),
				 (u64)w->target_rtt_us + ack_delay_us);
	u64 pkts = bbr_div_round_up_u64((u64)w->cwnd_milli * rtt_us,
					(u64)SWIFT_MILLI_PER_PKT * w->target_rtt_us) + 1;

	pkts = bbr_min_u64(pkts, SWIFT_PACED_CWND_MAX_PKTS);
	if (sk->snd_cwnd_clamp)
		pkts = bbr_min_u64(pkts, sk->snd_cwnd_clamp);
	return (u32)bbr_max_u64(pkts, BBR_CWND_MIN_TARGET_PKTS);
}

/*
 * In bbr_core_main(), after the control: cwnd and pacing rate no higher
 * than the engaged window's (cwnd at the window, BBRv3's floor at least;
 * pacing at the window per target_RTT). In PROBE_BW out of loss recovery
 * the window is first held at BBRv3's own cwnd, so it banks no increase
 * the model would not use.
 */
static inline void swift_after_ack(const struct bbr3 *b, struct swift_state *w,
				   struct bbr_sock *sk)
{
	u32 cwnd;
	u64 rate;

	if (!b->initialized || !w->cwnd_milli ||
	    (w->status != SWIFT_ST_ACTIVE && w->status != SWIFT_ST_STALE))
		return;
	if (b->mode == BBR_PROBE_BW && sk->ca_state == BBR_CA_OPEN &&
	    w->cwnd_milli > (u64)sk->snd_cwnd * SWIFT_MILLI_PER_PKT)
		w->cwnd_milli = bbr_max_u32(sk->snd_cwnd * SWIFT_MILLI_PER_PKT,
					    SWIFT_CWND_MIN_MILLI);
	cwnd = bbr_max_u32((u32)bbr_div_round_up_u64(w->cwnd_milli, SWIFT_MILLI_PER_PKT),
			   BBR_CWND_MIN_TARGET_PKTS);
	rate = (swift_window_bw(w, w->cwnd_milli) * sk->mss *
		SWIFT_USEC_PER_SEC) >> BW_SCALE;
	if (w->cwnd_milli < SWIFT_CWND_FLOOR_MILLI)
		bbr_signal_pace(sk, swift_paced_cwnd(w, sk), rate);
	else
		bbr_signal_cap(sk, cwnd, rate);
}

/*
 * The start of a connection under a target, given what its host knows of
 * the path to the peer from its other connections: path_rtt_us, the ETS
 * path filter's latest value (0: not measured lately), and starts, how many
 * connections it opened to the peer within the last SWIFT_START_WIN_US,
 * this one included. An initial window per connection cannot hold when
 * hundreds start at once: in swift_dc, 200 connections opened within
 * ~10 ms each sent their 10 initial packets into a 1 MB buffer (~690
 * packets): 846 drops in 4 ms, before any of them heard of the queue. So:
 *
 *  - the connections a host starts together share one initial window:
 *    the window engages at init_cwnd / starts (the n-th of a burst gets
 *    1/n of it, a burst of N sends ~init_cwnd x ln N in all), paced at the
 *    window per target_RTT;
 *  - on a path already over target the window engages at one packet per
 *    target_RTT at most, whatever the count.
 *
 * The first connection to an idle or unmeasured path starts as BBRv3
 * does. The window then runs as any engaged window (the first ACK's
 * decision ends STARTUP if the path is over target).
 */
#define SWIFT_START_WIN_US		10000u
/* How old the path's last measurement may be for a start decision: while a
 * queue builds, ACKs come back after it, so the path's latest window may
 * be a few ms old; one stays a sign of a loaded path for this long. */
#define SWIFT_START_PATH_AGE_US		20000u

static inline void swift_on_start(const struct bbr3 *b, struct swift_state *w,
				  struct bbr_sock *sk, u32 path_rtt_us, u32 starts)
{
	bool full = path_rtt_us > w->target_rtt_us;
	u32 milli;

	if (w->target_rtt_us == SWIFT_TARGET_NONE || (!full && starts <= 1))
		return;
	milli = sk->snd_cwnd * SWIFT_MILLI_PER_PKT / bbr_max_u32(starts, 1);
	if (full)
		milli = bbr_min_u32(milli, SWIFT_MILLI_PER_PKT);
	w->status = SWIFT_ST_ACTIVE;
	w->path_rtt_us = path_rtt_us;
	w->decided_rtt_us = path_rtt_us;
	w->cwnd_milli = bbr_max_u32(milli, SWIFT_CWND_MIN_MILLI);
	w->start_milli = w->cwnd_milli;
	swift_after_ack(b, w, sk);
}

/* Target configuration in force: bbr_swift's keys of the socket's
 * parameter set (the glue passes them; NULL: the built-in defaults). */
static inline void swift_apply_cfg(struct swift_state *w,
				   const struct swift_cfg *cfg, u32 round)
{
	w->target_rtt_us = cfg ? cfg->target_rtt_us : SWIFT_TARGET_RTT_DEFAULT_US;
	w->stale_us = (cfg && cfg->stale_us) ? cfg->stale_us : SWIFT_STALE_DEFAULT_US;
	w->flags = cfg ? cfg->flags : 0;
	w->host_target_us = cfg ? cfg->host_target_us : SWIFT_TARGET_NONE;
	w->cfg_round = round;
}

static inline bool swift_cfg_due(const struct swift_state *w, u32 round)
{
	return round - w->cfg_round >= SWIFT_CFG_REFRESH_ROUNDS;
}

/* ---- The hooks ---------------------------------------------------------- */

_Static_assert(__builtin_types_compatible_p(BBR_EXT, struct bbr_delay),
	       "bbr_swift's includer defines BBR_EXT as struct bbr_delay");

/* x: the socket's Swift state and this ACK's sample; NULL runs BBRv3. */
#define BBR_HOOK_SIGNAL
static inline void bbr_hook_signal(struct bbr3 *b, struct bbr_delay *x,
				   struct bbr_sock *sk, const struct bbr_rs *rs)
{
	if (x)
		swift_on_ack(b, &x->w, sk, rs, &x->smp);
}

#define BBR_HOOK_CAP
static inline void bbr_hook_cap(const struct bbr3 *b, struct bbr_delay *x,
				struct bbr_sock *sk)
{
	if (x)
		swift_after_ack(b, &x->w, sk);
}

/* bbr_swift's trace events: Network_RTT, target and the last decrease. */
#define BBR_HOOK_TRACE
static inline void bbr_hook_trace(struct bbr_trace_ev *e,
				  const struct bbr_delay *x)
{
	if (!x)
		return;
	e->network_rtt_us = x->w.network_rtt_us;
	e->decided_rtt_us = x->w.decided_rtt_us;
	e->target_rtt_us = x->w.target_rtt_us;
	e->swift_factor = x->w.last_factor;
	e->swift_decreases = x->w.decreases;
	e->swift_status = x->w.status;
}

#endif /* SWIFT_CORE_H */
