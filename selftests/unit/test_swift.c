// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * BBR.Swift's delay response (bpf/core/swift.h) on the native BBRv3 core:
 * the decrease formula, once per round trip, the 0.5 floor, nothing at or
 * below target, the interplay with inflight_lo/hi and PROBE_BW (no cut in
 * REFILL/UP, but over target in UP ends the probe and lowers inflight_hi as
 * BBRv3's loss/ECN do), fallback to
 * BBRv3 without a fresh sample, ECN off with a target, sub-packet pacing.
 *
 * Each ACK goes through the one entry point bpf/bbr_swift.bpf.c calls:
 * bbr_core_main() with the delay signal (core/swift.h).
 */
#include "unit.h"
#include "bbr_env.h"
#include "bbr_swift.h"
#include "core/swift.h"

#define RTT_US		2048u	/* 2^11 us: exact bw arithmetic */
#define BDP_PKTS	100u
#define TARGET_US	100u
#define NS_PER_US	1000ull

struct swift_env {
	struct env e;
	struct bbr_delay d;	/* the delay signal the core consumes */
};

/* Give the connection a target and a fresh sample of net_rtt_us. */
static void senv_signal(struct swift_env *s, u32 target_us, u32 net_rtt_us)
{
	struct swift_cfg cfg = { .target_rtt_us = target_us };

	memset(&s->d, 0, sizeof(s->d));
	swift_apply_cfg(&s->d.w, &cfg, s->e.b->round_count);
	s->d.smp.present = 1;
	s->d.smp.network_rtt_us = net_rtt_us;
	s->d.smp.last_sample_ns = s->e.sk.now_us * NS_PER_US;
	s->e.delay = &s->d;
}

/* A connection in PROBE_BW with a target and fresh samples of net_rtt_us. */
static void senv_init(struct swift_env *s, u32 target_us, u32 net_rtt_us)
{
	env_to_probe_bw(&s->e, BDP_PKTS, RTT_US);
	senv_signal(s, target_us, net_rtt_us);
}

/* One ACK for `pkts` sent when tp->delivered was prior_delivered, with a
 * sample taken just now (unless the test froze it). */
static void senv_ack(struct swift_env *s, u32 pkts, u32 prior_delivered,
		     bool fresh)
{
	/* a sample taken when this ACK arrives (env_ack_full() moves the
	 * clock by RTT_US / 4 before the core runs) */
	if (fresh)
		s->d.smp.last_sample_ns = (s->e.sk.now_us + RTT_US / 4) * NS_PER_US;
	env_ack_full(&s->e, pkts, prior_delivered, RTT_US / 4, RTT_US / 4,
		     RTT_US, 0);
}

/* A whole round in one ACK (everything acked was sent after the last one). */
static void senv_round(struct swift_env *s, u32 pkts)
{
	senv_ack(s, pkts, s->e.sk.delivered, true);
}

/* 1 - 0.8 (N - T) / N, floored at 0.5, in SWIFT_FACTOR_UNIT. */
TEST(swift_factor_formula)
{
	/* N = 200, T = 100: 1 - 0.8 * 0.5 = 0.6 */
	ASSERT_LE(swift_md_factor(200, 100) - SWIFT_FACTOR_UNIT * 6 / 10, 1);
	ASSERT_GE(swift_md_factor(200, 100), SWIFT_FACTOR_UNIT * 6 / 10);
	/* N = 125, T = 100: 1 - 0.8 * 0.2 = 0.84 */
	ASSERT_LE(swift_md_factor(125, 100) - SWIFT_FACTOR_UNIT * 84 / 100, 1);
	/* N = 160, T = 100: 1 - 0.8 * 0.375 = 0.7 */
	ASSERT_LE(swift_md_factor(160, 100) - SWIFT_FACTOR_UNIT * 7 / 10, 1);
	/* N = 267, T = 100 would give 0.4996: the floor 0.5 */
	ASSERT_EQ(swift_md_factor(267, 100), SWIFT_FACTOR_UNIT / 2);
	ASSERT_EQ(swift_md_factor(1000000, 1), SWIFT_FACTOR_UNIT / 2);
	/* at or below target, or no target: no decrease */
	ASSERT_EQ(swift_md_factor(100, 100), SWIFT_FACTOR_UNIT);
	ASSERT_EQ(swift_md_factor(50, 100), SWIFT_FACTOR_UNIT);
	ASSERT_EQ(swift_md_factor(5000, SWIFT_TARGET_NONE), SWIFT_FACTOR_UNIT);
	UNIT_REPORT("factor(200,100)=%u factor(125,100)=%u (unit %u)",
		    swift_md_factor(200, 100), swift_md_factor(125, 100),
		    SWIFT_FACTOR_UNIT);
}

/* A cut scales bw_lo and inflight_lo by the factor; cwnd and pacing follow
 * on the same ACK. */
TEST(swift_cut_bounds_model_once_per_round)
{
	struct swift_env s;
	u32 max_bw, cwnd0, lo1, bw1, d0;
	u64 rate0;

	senv_init(&s, TARGET_US, 200);			/* factor 0.6 */
	ASSERT_EQ(s.e.b->mode, BBR_PROBE_BW);
	ASSERT_EQ(s.e.b->cycle_idx, BBR_BW_PROBE_DOWN);
	max_bw = bbr_max_bw(s.e.b);
	cwnd0 = s.e.sk.snd_cwnd;
	rate0 = s.e.sk.pacing_rate;
	d0 = s.e.sk.delivered;
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.status, SWIFT_ST_ACTIVE);
	ASSERT_EQ(s.d.w.decreases, 1);
	lo1 = s.e.b->inflight_lo;
	bw1 = s.e.b->bw_lo;
	ASSERT_LE(lo1, (u32)((u64)cwnd0 * 6 / 10) + 1);
	ASSERT_GE(lo1, (u32)((u64)cwnd0 * 6 / 10) - 1);
	ASSERT_EQ(bw1, swift_scale(max_bw, swift_md_factor(200, TARGET_US)));
	ASSERT_LE(s.e.sk.snd_cwnd, lo1);
	ASSERT_LT(s.e.sk.pacing_rate, rate0 * 7 / 10);
	UNIT_REPORT("cwnd %u -> %u, inflight_lo %u, bw_lo/max_bw %.3f, pacing %llu -> %llu",
		    cwnd0, s.e.sk.snd_cwnd, lo1, (double)bw1 / max_bw,
		    (unsigned long long)rate0, (unsigned long long)s.e.sk.pacing_rate);

	/* More ACKs for data sent before the cut: same round trip, no cut. */
	senv_ack(&s, 10, d0, true);
	senv_ack(&s, 10, d0 + BDP_PKTS - 1, true);
	ASSERT_EQ(s.d.w.decreases, 1);
	ASSERT_EQ(s.e.b->inflight_lo, lo1);
	/* The first ACK for data sent after it: the second cut. */
	senv_ack(&s, 10, s.d.w.decrease_delivered, true);
	ASSERT_EQ(s.d.w.decreases, 2);
	ASSERT_LE(s.e.b->inflight_lo, (u32)((u64)lo1 * 6 / 10) + 1);
}

/* Host jitter: one sample far over the target in a round whose others are
 * under it is not a queue, and the round minimum does not cut on it (even
 * as the round's first sample: the filter spans two samples at least); the
 * latest-sample rule (raw_samples) does. A standing excess is answered
 * within a round or two. */
TEST(swift_round_minimum_ignores_spikes)
{
	struct swift_env s;
	u32 d, rounds, decided;

	senv_init(&s, TARGET_US, 80);			/* under target */
	senv_round(&s, BDP_PKTS);
	senv_round(&s, BDP_PKTS);
	d = s.e.sk.delivered;
	s.d.smp.network_rtt_us = 600;			/* a 0.5 ms spike */
	senv_ack(&s, 10, d, true);
	ASSERT_EQ(s.d.w.network_rtt_us, 600);
	decided = s.d.w.decided_rtt_us;
	ASSERT_EQ(decided, 80);
	ASSERT_EQ(s.d.w.decreases, 0);
	s.d.smp.network_rtt_us = 80;
	senv_ack(&s, 10, d + 10, true);
	ASSERT_EQ(s.d.w.decreases, 0);

	/* the same spike under raw_samples: cut at once */
	s.d.w.flags |= SWIFT_CFG_F_RAW_SAMPLES;
	s.d.smp.network_rtt_us = 600;
	senv_ack(&s, 10, s.e.sk.delivered, true);
	ASSERT_EQ(s.d.w.decided_rtt_us, 600);
	ASSERT_EQ(s.d.w.decreases, 1);
	s.d.w.flags &= ~SWIFT_CFG_F_RAW_SAMPLES;

	/* a queue that stands: every sample 200 from now on */
	s.d.smp.network_rtt_us = 200;
	for (rounds = 1; rounds <= 4 && s.d.w.decreases == 1; rounds++)
		senv_round(&s, BDP_PKTS);
	UNIT_REPORT("spike 600 us decided as %u us (no cut); standing 200 us cut after %u round(s)",
		    decided, rounds - 1);
	ASSERT_EQ(s.d.w.decreases, 2);
	ASSERT_LE(rounds - 1, 2);			/* one to two round trips */
	ASSERT_EQ(s.d.w.decided_rtt_us, 200);
}

/* A connection still in STARTUP with a target and samples of net_rtt_us. */
static void senv_init_startup(struct swift_env *s, u32 target_us, u32 net_rtt_us)
{
	env_init(&s->e, 10);
	senv_signal(s, target_us, net_rtt_us);
}

/* Over target in STARTUP: no cut of the young model (an incast of 400
 * flows starved on it in the lab), but STARTUP ends after
 * SWIFT_STARTUP_OVER_ROUNDS rounds, as BBRv3 ends it on CE. */
TEST(swift_startup_over_target_exits_without_cut)
{
	struct swift_env s, ref;
	u32 pkts = 10, rounds = 0;

	senv_init_startup(&s, TARGET_US, 10 * TARGET_US);
	senv_init_startup(&ref, TARGET_US, TARGET_US / 2);
	ASSERT_EQ(s.e.b->mode, BBR_STARTUP);
	while (s.e.b->mode == BBR_STARTUP && rounds < 10) {
		senv_round(&s, pkts);
		senv_round(&ref, pkts);
		pkts *= 2;
		rounds++;
	}
	UNIT_REPORT("over target: STARTUP left after %u rounds (mode %u), "
		    "decreases %u; below target: mode %u", rounds,
		    s.e.b->mode, s.d.w.decreases, ref.e.b->mode);
	ASSERT_NE(s.e.b->mode, BBR_STARTUP);
	ASSERT_EQ(s.e.b->full_bw_reached, 1);
	ASSERT_LE(rounds, SWIFT_STARTUP_OVER_ROUNDS + 2);
	ASSERT_EQ(s.d.w.decreases, 0);
	ASSERT_EQ(s.e.b->bw_lo, BBR_UNSET);
	/* Growing without a queue over target: still in STARTUP. */
	ASSERT_EQ(ref.e.b->mode, BBR_STARTUP);
	/* Out of STARTUP the cuts apply. */
	senv_round(&s, pkts);
	senv_round(&s, pkts);
	ASSERT_GE(s.d.w.decreases, 1);
}

/* The floor: a huge excess still only halves. */
TEST(swift_floor_half)
{
	struct swift_env s;
	u32 cwnd0, bw0;

	senv_init(&s, TARGET_US, 100000);
	cwnd0 = s.e.sk.snd_cwnd;
	bw0 = bbr_max_bw(s.e.b);
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.last_factor, SWIFT_FACTOR_UNIT / 2);
	ASSERT_EQ(s.e.b->inflight_lo, cwnd0 / 2);
	ASSERT_EQ(s.e.b->bw_lo, bw0 / 2);
}

/* At or below target: the model is BBRv3's, untouched. */
TEST(swift_no_decrease_at_or_below_target)
{
	struct swift_env s;
	int i;

	senv_init(&s, TARGET_US, TARGET_US);
	for (i = 0; i < 5; i++)
		senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.status, SWIFT_ST_ACTIVE);
	ASSERT_EQ(s.d.w.decreases, 0);
	ASSERT_EQ(s.e.b->inflight_lo, BBR_UNSET);
	ASSERT_EQ(s.e.b->bw_lo, BBR_UNSET);
	s.d.smp.network_rtt_us = TARGET_US - 30;
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.decreases, 0);
}

/* Probing still works: no cut in REFILL/UP, and REFILL resets the bounds a
 * cut set, so inflight_hi / max_bw can grow again. */
TEST(swift_probe_bw_resets_lower_bounds)
{
	struct swift_env s;
	int i;

	senv_init(&s, TARGET_US, 200);
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.decreases, 1);
	ASSERT_NE(s.e.b->inflight_lo, BBR_UNSET);
	/* Cruise along at target until the next probe starts. */
	s.d.smp.network_rtt_us = TARGET_US;
	for (i = 0; i < 400 && s.e.b->cycle_idx != BBR_BW_PROBE_REFILL; i++)
		senv_round(&s, BDP_PKTS / 2);
	ASSERT_EQ(s.e.b->cycle_idx, BBR_BW_PROBE_REFILL);
	ASSERT_EQ(s.e.b->inflight_lo, BBR_UNSET);	/* BBRv3's reset */
	ASSERT_EQ(s.e.b->bw_lo, BBR_UNSET);
	/* Over target while probing: no cut (BBRv3 ignores ECN there too). */
	s.d.smp.network_rtt_us = 400;
	senv_round(&s, BDP_PKTS / 2);
	ASSERT_TRUE(s.e.b->cycle_idx == BBR_BW_PROBE_REFILL ||
		    s.e.b->cycle_idx == BBR_BW_PROBE_UP);
	ASSERT_EQ(s.d.w.decreases, 1);
	ASSERT_EQ(s.e.b->inflight_lo, BBR_UNSET);
	/* inflight_hi is the long-term model: a cut never touches it. */
	ASSERT_NE(s.e.b->inflight_hi, 0);
}

/*
 * Over target in PROBE_BW UP: no cut of the lower bounds (REFILL reset
 * them), but the probe ends as BBRv3 ends it on loss or ECN: inflight_hi
 * comes down to what was in flight and the cycle goes to DOWN; once per
 * probe. At target the same probe runs on (UP or beyond, inflight_hi
 * untouched by Swift).
 */
TEST(swift_over_target_ends_probe_up)
{
	struct swift_env s;
	u32 hi_before, rounds;
	int i;

	senv_init(&s, TARGET_US, TARGET_US);
	s.e.b->inflight_hi = 3 * BDP_PKTS;
	for (i = 0; i < 400 && s.e.b->cycle_idx != BBR_BW_PROBE_UP; i++)
		senv_round(&s, BDP_PKTS / 2);
	ASSERT_EQ(s.e.b->cycle_idx, BBR_BW_PROBE_UP);
	ASSERT_EQ(s.d.w.decreases, 0);
	hi_before = s.e.b->inflight_hi;
	/* The queue grows past the target during the probe. */
	s.d.smp.network_rtt_us = 2 * TARGET_US;
	for (rounds = 0; rounds < 8 && s.e.b->cycle_idx == BBR_BW_PROBE_UP; rounds++)
		senv_round(&s, BDP_PKTS);
	printf("    UP over target: left UP after %u round(s), cycle %u, "
	       "inflight_hi %u -> %u, decreases %u\n", rounds, s.e.b->cycle_idx,
	       hi_before, s.e.b->inflight_hi, s.d.w.decreases);
	/* at the second sample over target (swift_decision_rtt() spans two
	 * samples at least); each round is one ACK here, so the second round */
	ASSERT_LE(rounds, 2);
	/* DOWN, or already past it to CRUISE on the same ACK (inflight is
	 * below the new bound at once) */
	ASSERT_TRUE(s.e.b->cycle_idx == BBR_BW_PROBE_DOWN ||
		    s.e.b->cycle_idx == BBR_BW_PROBE_CRUISE);
	ASSERT_LT(s.e.b->inflight_hi, hi_before);	/* long-term bound learned */
	ASSERT_TRUE(s.e.b->prev_probe_too_high);
	ASSERT_EQ(s.d.w.decreases, 0);			/* no lower-bound cut in UP */
}

/* A cut bounds cwnd through inflight_lo even while inflight_hi is higher. */
TEST(swift_cut_below_inflight_hi)
{
	struct swift_env s;

	senv_init(&s, TARGET_US, 200);
	s.e.b->inflight_hi = 3 * BDP_PKTS;
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.e.b->inflight_hi, 3 * BDP_PKTS);
	ASSERT_LT(s.e.b->inflight_lo, s.e.b->inflight_hi);
	ASSERT_LE(s.e.sk.snd_cwnd, s.e.b->inflight_lo);
}

/* No ETS sample, stale sample, no target: plain BBRv3, and the state says so. */
TEST(swift_fallback_without_fresh_sample)
{
	struct swift_env s;

	senv_init(&s, TARGET_US, 500);
	s.d.smp.present = 0;				/* no ETS storage */
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.status, SWIFT_ST_NO_ETS);
	ASSERT_EQ(s.d.w.fallback_acks, 1);
	ASSERT_EQ(s.d.w.decreases, 0);
	ASSERT_EQ(s.e.b->inflight_lo, BBR_UNSET);

	s.d.smp.present = 1;
	s.d.smp.last_sample_ns = 0;			/* storage, no sample yet */
	senv_ack(&s, BDP_PKTS, s.e.sk.delivered, false);
	ASSERT_EQ(s.d.w.status, SWIFT_ST_NO_ETS);

	/* a sample older than the 100 ms default */
	s.d.smp.last_sample_ns = (s.e.sk.now_us - SWIFT_STALE_DEFAULT_US - RTT_US) *
			       NS_PER_US;
	senv_ack(&s, BDP_PKTS, s.e.sk.delivered, false);
	ASSERT_EQ(s.d.w.status, SWIFT_ST_STALE);
	ASSERT_EQ(s.d.w.decreases, 0);
	ASSERT_EQ(s.d.w.fallback_acks, 3);
	/* fresh again: in force */
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.status, SWIFT_ST_ACTIVE);
	ASSERT_EQ(s.d.w.decreases, 1);

	/* no target at all: not counted as a fallback */
	senv_init(&s, SWIFT_TARGET_NONE, 500);
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.status, SWIFT_ST_NO_TARGET);
	ASSERT_EQ(s.d.w.fallback_acks, 0);
	ASSERT_EQ(s.d.w.decreases, 0);
}

/* With the target in force BBRv3's ECN response is off; without a target
 * it is BBRv3's. */
TEST(swift_ecn_off_with_target)
{
	struct swift_env s;

	bbr_test_params.ecn_enable = 1;
	senv_init(&s, TARGET_US, TARGET_US);
	s.e.sk.ecn_ok = 1;
	s.e.b->ecn_eligible = 1;
	s.e.sk.ece = 1;
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.e.b->ecn_eligible, 0);
	ASSERT_EQ(s.e.b->ecn_in_round, 0);
	ASSERT_EQ(s.e.b->inflight_lo, BBR_UNSET);

	senv_init(&s, SWIFT_TARGET_NONE, TARGET_US);
	s.e.sk.ecn_ok = 1;
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.e.b->ecn_eligible, 1);		/* BBRv3 as configured */
	bbr_test_params.ecn_enable = 0;
}

/* Below the cwnd floor: cwnd stays at 4, pacing carries a fractional
 * window per target_RTT, less than one packet per RTT; Swift's AIMD acts on
 * it in any PROBE_BW phase; back at the floor the flow returns to BBRv3 at
 * the same rate. */
TEST(swift_subpacket_pacing)
{
	struct swift_env s;
	u32 w0, want_w, want_bw;
	u64 want;
	int i;

	senv_init(&s, TARGET_US, 100000);	/* every cut is the 0.5 floor */
	for (i = 0; i < 40 && !(s.d.w.subpkt_cwnd_milli &&
				s.d.w.subpkt_cwnd_milli < SWIFT_MILLI_PER_PKT); i++)
		senv_round(&s, 4);
	ASSERT_GT(s.d.w.subpkt_cwnd_milli, 0);
	ASSERT_LT(s.d.w.subpkt_cwnd_milli, SWIFT_MILLI_PER_PKT);
	ASSERT_EQ(s.e.sk.snd_cwnd, BBR_CWND_MIN_TARGET_PKTS);
	/* w packets per target_RTT, bytes per second */
	want = (((u64)s.d.w.subpkt_cwnd_milli * BW_UNIT / (1000ull * TARGET_US)) *
		ENV_MSS_BYTES * 1000000u) >> BW_SCALE;
	ASSERT_EQ(s.e.sk.pacing_rate, want);
	/* less than one MSS per target_RTT */
	ASSERT_LT(s.e.sk.pacing_rate * TARGET_US / 1000000u, ENV_MSS_BYTES);
	UNIT_REPORT("sub-packet window %u/1000 pkt, pacing %llu B/s = %.3f pkt per target",
		    s.d.w.subpkt_cwnd_milli, (unsigned long long)s.e.sk.pacing_rate,
		    (double)s.e.sk.pacing_rate * TARGET_US / 1e6 / ENV_MSS_BYTES);
	/* the floor of 0.001 packet holds */
	for (i = 0; i < 20; i++)
		senv_round(&s, 1);
	ASSERT_EQ(s.d.w.subpkt_cwnd_milli, SWIFT_SUBPKT_MIN_MILLI);
	/* cuts go on whatever BBRv3's phase: REFILL and UP included */
	s.d.w.subpkt_cwnd_milli = 500;
	s.e.b->cycle_idx = BBR_BW_PROBE_REFILL;
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.subpkt_cwnd_milli, 250);
	s.e.b->cycle_idx = BBR_BW_PROBE_UP;
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.subpkt_cwnd_milli, 125);
	ASSERT_EQ(s.e.sk.snd_cwnd, BBR_CWND_MIN_TARGET_PKTS);
	/* at target each ACK adds 2 + ai x sqrt(w) below a packet ... (ai =
	 * 50 milli per ms of target: 5 at 100 us) */
	s.d.smp.network_rtt_us = TARGET_US;
	w0 = s.d.w.subpkt_cwnd_milli;
	senv_round(&s, 1);
	want_w = w0 + SWIFT_SUBPKT_AI_BASE_MILLI +
		 SWIFT_SUBPKT_AI_MILLI_PER_MS * TARGET_US * swift_sqrt_milli(w0) /
		 1000000;
	ASSERT_EQ(s.d.w.subpkt_cwnd_milli, want_w);
	/* ... and 2 + ai / sqrt(w) from one packet on */
	s.d.w.subpkt_cwnd_milli = 2000;
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.subpkt_cwnd_milli, 2000 + SWIFT_SUBPKT_AI_BASE_MILLI +
					 SWIFT_SUBPKT_AI_MILLI_PER_MS * TARGET_US /
					 swift_sqrt_milli(2000));
	/* back at the floor: BBRv3 again at 4 packets per target_RTT */
	s.d.w.subpkt_cwnd_milli = SWIFT_SUBPKT_FLOOR_MILLI - 1;
	s.e.b->cycle_idx = BBR_BW_PROBE_DOWN;
	senv_ack(&s, 1, s.e.sk.delivered, true);
	ASSERT_EQ(s.d.w.subpkt_cwnd_milli, 0);
	want_bw = (u32)((u64)BBR_CWND_MIN_TARGET_PKTS * BW_UNIT / TARGET_US);
	ASSERT_EQ(s.e.b->inflight_lo, BBR_CWND_MIN_TARGET_PKTS);
	ASSERT_EQ(s.e.b->bw_lo, want_bw);
	/* a fallback also ends it at once */
	s.d.smp.network_rtt_us = 100000;
	for (i = 0; i < 40 && !s.d.w.subpkt_cwnd_milli; i++)
		senv_round(&s, 1);
	ASSERT_GT(s.d.w.subpkt_cwnd_milli, 0);
	s.d.smp.present = 0;
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.subpkt_cwnd_milli, 0);
}

/* The increase of a fractional window: its square root exact; per
 * round trip continuous at one packet (a jump there made the flows just
 * above a packet outgrow the rest in the packet model), growing less than
 * the cuts as the window grows, and in proportion to the target. */
TEST(swift_subpacket_increase)
{
	struct swift_state w = { .target_rtt_us = 400 };
	u32 x, r, below, at, per_ack[4], i;
	static const u32 win[4] = { 50, 500, 2000, 3500 };

	/* the root, exact over the whole fractional range */
	for (x = 1; x < SWIFT_SUBPKT_FLOOR_MILLI; x++) {
		r = swift_sqrt_milli(x);
		ASSERT_LE((u64)r * r, (u64)x * 1000);
		ASSERT_GT((u64)(r + 1) * (r + 1), (u64)x * 1000);
	}
	ASSERT_EQ(swift_sqrt_milli(0), 31);		/* clamped to 0.001 packet */
	/* per round trip: (w ACKs) x (increase per ACK), in milli-packets */
	w.subpkt_cwnd_milli = 999;
	below = 999 * swift_subpkt_ai_milli(&w) / 1000;
	w.subpkt_cwnd_milli = 1000;
	at = swift_subpkt_ai_milli(&w);
	UNIT_REPORT("increase per round trip at 0.999 / 1.000 packet, 400 us target: "
		    "%u / %u milli", below, at);
	ASSERT_LE(at > below ? at - below : below - at, 2);	/* two truncations */
	ASSERT_EQ(at, SWIFT_SUBPKT_AI_BASE_MILLI + SWIFT_SUBPKT_AI_MILLI_PER_MS * 400 / 1000);
	/* Growth per cut opportunity falls as the window grows: a flow sees
	 * one possible cut per ACK below a packet (w per round trip) and one
	 * per round trip above; per round trip it grows by w x a(w). So
	 * a(w) / min(w, 1) must fall: smaller flows gain on larger ones. */
	for (i = 0; i < 4; i++) {
		w.subpkt_cwnd_milli = win[i];
		per_ack[i] = swift_subpkt_ai_milli(&w);
	}
	UNIT_REPORT("increase per ACK at 0.05 / 0.5 / 2 / 3.5 packets: %u / %u / %u / %u milli",
		    per_ack[0], per_ack[1], per_ack[2], per_ack[3]);
	for (i = 0; i + 1 < 4; i++)
		ASSERT_GT((u64)per_ack[i] * bbr_min_u32(win[i + 1], 1000),
			  (u64)per_ack[i + 1] * bbr_min_u32(win[i], 1000));
	/* in proportion to the target (but for the constant term) */
	w.subpkt_cwnd_milli = 2000;
	w.target_rtt_us = 400;
	x = swift_subpkt_ai_milli(&w) - SWIFT_SUBPKT_AI_BASE_MILLI;
	w.target_rtt_us = 11000;
	r = swift_subpkt_ai_milli(&w) - SWIFT_SUBPKT_AI_BASE_MILLI;
	UNIT_REPORT("increase per ACK at 2 packets: %u milli at 400 us, %u at 11 ms", x, r);
	ASSERT_LE(r > x * 11000 / 400 ? r - x * 11000 / 400 : x * 11000 / 400 - r, 27);
	/* never more than the floor in one step, however long the target */
	w.target_rtt_us = 0xFFFFFFFFu;
	w.subpkt_cwnd_milli = 999;
	ASSERT_LE(swift_subpkt_ai_milli(&w), SWIFT_SUBPKT_AI_BASE_MILLI + SWIFT_SUBPKT_FLOOR_MILLI);
}
