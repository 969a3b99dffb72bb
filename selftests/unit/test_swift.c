// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * BBR.Swift's delay response (bpf/core/swift.h) on the native BBRv3 core:
 * the decrease formula; Swift's window engaged by the first decision over
 * target, cut once per round trip, capping cwnd and pacing rate, kept
 * through PROBE_BW's REFILL and grown below the target; the 0.5 floor;
 * nothing at or below target; the decision on the round's least sample or
 * the path's value; STARTUP left at the first decision over target; over
 * target in UP ends the probe and lowers inflight_hi as BBRv3's loss/ECN
 * do; the host-delay target; fallback without a fresh sample (plain BBRv3)
 * and with a stale one (the window kept, growing); ECN off with a target;
 * the fractional window.
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

/* Let the flow's excursion hold (SWIFT_EXCURSION_GAPS packet gaps of its
 * window) pass, so the next decision over target may cut again. */
static void senv_past_hold(struct swift_env *s)
{
	s->e.sk.now_us += (u64)SWIFT_EXCURSION_GAPS * s->d.w.target_rtt_us *
			  SWIFT_MILLI_PER_PKT / s->d.w.cwnd_milli;
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

/* The first decision over target engages Swift's window at what was in
 * flight times the factor; cwnd and pacing rate follow on the same ACK;
 * BBRv3's lower bounds are left alone; one cut per round trip. */
TEST(swift_window_cut_once_per_round)
{
	struct swift_env s;
	u32 inflight0, w1, d0;
	u64 rate0, want;

	senv_init(&s, TARGET_US, 200);			/* factor 0.6 */
	ASSERT_EQ(s.e.b->mode, BBR_PROBE_BW);
	ASSERT_EQ(s.e.b->cycle_idx, BBR_BW_PROBE_DOWN);
	inflight0 = s.e.sk.inflight;
	rate0 = s.e.sk.pacing_rate;
	d0 = s.e.sk.delivered;
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.status, SWIFT_ST_ACTIVE);
	ASSERT_EQ(s.d.w.decreases, 1);
	w1 = s.d.w.cwnd_milli;
	want = (u64)inflight0 * 1000 * swift_md_factor(200, TARGET_US) >> SWIFT_FACTOR_SCALE;
	ASSERT_EQ(w1, want);
	ASSERT_LE(s.e.sk.snd_cwnd, (w1 + 999) / 1000);
	/* w packets per target_RTT, bytes per second */
	want = (((u64)w1 * BW_UNIT / (1000ull * TARGET_US)) * ENV_MSS_BYTES * 1000000u) >> BW_SCALE;
	ASSERT_LE(s.e.sk.pacing_rate, want);
	ASSERT_EQ(s.e.b->inflight_lo, BBR_UNSET);	/* BBRv3's model untouched */
	ASSERT_EQ(s.e.b->bw_lo, BBR_UNSET);
	UNIT_REPORT("in flight %u -> window %u/1000, cwnd %u, pacing %llu -> %llu B/s",
		    inflight0, w1, s.e.sk.snd_cwnd, (unsigned long long)rate0,
		    (unsigned long long)s.e.sk.pacing_rate);

	/* More ACKs for data sent before the cut: same round trip, no cut. */
	senv_ack(&s, 10, d0, true);
	senv_ack(&s, 10, d0 + BDP_PKTS - 1, true);
	ASSERT_EQ(s.d.w.decreases, 1);
	ASSERT_EQ(s.d.w.cwnd_milli, w1);
	/* The first ACK for data sent after it: the second cut. */
	senv_ack(&s, 10, s.d.w.decrease_delivered, true);
	ASSERT_EQ(s.d.w.decreases, 2);
	ASSERT_EQ(s.d.w.cwnd_milli, swift_scale(w1, swift_md_factor(200, TARGET_US)));
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

/* The ETS path value, when there is one, decides instead of the
 * connection's own samples, also in a fractional window: a spike of the
 * connection is ignored when the path's least sample is under target, and
 * a queue the path shows is cut on at its second sample. */
TEST(swift_path_value_decides)
{
	struct swift_env s;

	senv_init(&s, TARGET_US, 600);			/* the connection's spike */
	s.d.smp.path_rtt_us = 80;			/* the path: no queue */
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.decided_rtt_us, 80);
	ASSERT_EQ(s.d.w.path_rtt_us, 80);
	ASSERT_EQ(s.d.w.decreases, 0);
	s.d.smp.network_rtt_us = 90;			/* the connection sees none */
	s.d.smp.path_rtt_us = 200;			/* the path's least: a queue */
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.decided_rtt_us, 80);		/* the sample before: not yet */
	ASSERT_EQ(s.d.w.decreases, 0);
	senv_round(&s, BDP_PKTS);			/* it stands */
	ASSERT_EQ(s.d.w.decided_rtt_us, 200);
	ASSERT_EQ(s.d.w.decreases, 1);
	ASSERT_EQ(s.d.w.last_factor, swift_md_factor(200, TARGET_US));
	/* a fractional window decides on the path value too */
	s.d.w.cwnd_milli = 500;
	s.d.smp.network_rtt_us = 600;
	s.d.smp.path_rtt_us = 90;
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.decided_rtt_us, 90);
	ASSERT_EQ(s.d.w.decreases, 1);
	ASSERT_GT(s.d.w.cwnd_milli, 500);		/* grown, not cut */
}

/* A path value over target counts when the connection's sample before it
 * (within SWIFT_PERSIST_RTTS round trips) was over too: a one-sample stall
 * of the host cuts nothing. A connection whose samples are further apart
 * (a sparse incast flow) decides on each sample, and an ACK without a new
 * sample repeats the latest decision rather than making a second sample. */
TEST(swift_path_value_persists)
{
	struct swift_env s;

	senv_init(&s, TARGET_US, 80);
	s.d.smp.path_rtt_us = 80;
	senv_round(&s, BDP_PKTS);
	s.d.smp.path_rtt_us = 4 * TARGET_US;		/* one sample of a stall */
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.decided_rtt_us, 80);
	senv_ack(&s, BDP_PKTS, s.e.sk.delivered, false);	/* no new sample */
	ASSERT_EQ(s.d.w.decided_rtt_us, 80);
	ASSERT_EQ(s.d.w.decreases, 0);
	s.d.smp.path_rtt_us = 80;			/* under again */
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.decreases, 0);
	/* the next sample 3 round trips later: too far apart to wait */
	s.e.sk.now_us += (SWIFT_PERSIST_RTTS + 1) * RTT_US;
	s.d.smp.path_rtt_us = 4 * TARGET_US;
	senv_round(&s, BDP_PKTS);
	UNIT_REPORT("one-sample stall of %u us: no cut; the same %u round trips after the last "
		    "sample: decided %u us, %u cut(s)", 4 * TARGET_US, SWIFT_PERSIST_RTTS + 1,
		    s.d.w.decided_rtt_us, s.d.w.decreases);
	ASSERT_EQ(s.d.w.decided_rtt_us, 4 * TARGET_US);
	ASSERT_EQ(s.d.w.decreases, 1);
}

/* A connection still in STARTUP with a target and samples of net_rtt_us. */
static void senv_init_startup(struct swift_env *s, u32 target_us, u32 net_rtt_us)
{
	env_init(&s->e, 10);
	senv_signal(s, target_us, net_rtt_us);
}

/* Over target in STARTUP: no cut of the young model (an incast of 400
 * flows starved on it in the lab), but STARTUP ends at the first decision
 * over target (it is a filtered one), as BBRv3 ends it on CE; out of
 * STARTUP the window engages. */
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
	UNIT_REPORT("over target: STARTUP left after %u round(s) (mode %u), "
		    "decreases %u; below target: mode %u", rounds,
		    s.e.b->mode, s.d.w.decreases, ref.e.b->mode);
	ASSERT_NE(s.e.b->mode, BBR_STARTUP);
	ASSERT_EQ(s.e.b->full_bw_reached, 1);
	ASSERT_EQ(rounds, 1);
	ASSERT_EQ(s.d.w.decreases, 0);
	ASSERT_EQ(s.d.w.cwnd_milli, 0);
	/* Growing without a queue over target: still in STARTUP. */
	ASSERT_EQ(ref.e.b->mode, BBR_STARTUP);
	/* Out of STARTUP the window engages. */
	senv_round(&s, pkts);
	ASSERT_EQ(s.d.w.decreases, 1);
	ASSERT_GT(s.d.w.cwnd_milli, 0);
}

/* The floor: a huge excess still only halves. */
TEST(swift_floor_half)
{
	struct swift_env s;
	u32 inflight0;

	senv_init(&s, TARGET_US, 100000);
	inflight0 = s.e.sk.inflight;
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.last_factor, SWIFT_FACTOR_UNIT / 2);
	ASSERT_EQ(s.d.w.cwnd_milli, inflight0 * 1000 / 2);
}

/* At or below target: the model is BBRv3's, untouched, no window. */
TEST(swift_no_decrease_at_or_below_target)
{
	struct swift_env s;
	int i;

	senv_init(&s, TARGET_US, TARGET_US);
	for (i = 0; i < 5; i++)
		senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.status, SWIFT_ST_ACTIVE);
	ASSERT_EQ(s.d.w.decreases, 0);
	ASSERT_EQ(s.d.w.cwnd_milli, 0);
	ASSERT_EQ(s.e.b->inflight_lo, BBR_UNSET);
	ASSERT_EQ(s.e.b->bw_lo, BBR_UNSET);
	s.d.smp.network_rtt_us = TARGET_US - 30;
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.decreases, 0);
}

/*
 * The window outlives PROBE_BW's REFILL (which resets BBRv3's lower bounds:
 * the first version cut those, and a flow was back at max_bw at every
 * refill, every few rounds with a small BDP); at target it grows by the
 * additive increase, never past BBRv3's own cwnd (no credit banked).
 */
TEST(swift_window_survives_refill)
{
	struct swift_env s;
	u32 w1, grown = 0, last;
	int i;

	senv_init(&s, TARGET_US, 200);
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.decreases, 1);
	w1 = s.d.w.cwnd_milli;
	/* At target until the next probe starts. */
	s.d.smp.network_rtt_us = TARGET_US;
	last = w1;
	for (i = 0; i < 400 && s.e.b->cycle_idx != BBR_BW_PROBE_REFILL; i++) {
		senv_round(&s, BDP_PKTS / 2);
		if (s.d.w.cwnd_milli > last)
			grown++;
		last = s.d.w.cwnd_milli;
	}
	ASSERT_EQ(s.e.b->cycle_idx, BBR_BW_PROBE_REFILL);
	ASSERT_EQ(s.e.b->inflight_lo, BBR_UNSET);	/* BBRv3's reset */
	ASSERT_GT(s.d.w.cwnd_milli, w1);		/* grew at target */
	ASSERT_GT(grown, 0);
	ASSERT_LE(s.e.sk.snd_cwnd, (s.d.w.cwnd_milli + 999) / 1000);	/* still capped */
	UNIT_REPORT("window %u -> %u milli over %d rounds at target, into REFILL; cwnd %u",
		    w1, s.d.w.cwnd_milli, i, s.e.sk.snd_cwnd);
	/* Long at target: the window stops at BBRv3's cwnd. */
	s.d.w.cwnd_milli = 50 * BDP_PKTS * 1000;
	s.e.b->mode = BBR_PROBE_BW;
	s.e.b->cycle_idx = BBR_BW_PROBE_CRUISE;
	senv_round(&s, BDP_PKTS / 2);
	ASSERT_LE(s.d.w.cwnd_milli, (s.e.sk.snd_cwnd + 0) * 1000 + 1000);
	ASSERT_LT(s.d.w.cwnd_milli, 50 * BDP_PKTS * 1000);
}

/*
 * Over target in PROBE_BW UP with no window engaged: no cut (UP probes on
 * purpose), but the probe ends as BBRv3 ends it on loss or ECN:
 * inflight_hi comes down to what was in flight and the cycle goes to DOWN;
 * once per probe. At target the same probe runs on (UP or beyond,
 * inflight_hi untouched by Swift).
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
	ASSERT_EQ(s.d.w.decreases, 0);			/* no window engaged in UP */
	ASSERT_EQ(s.d.w.cwnd_milli, 0);
}

/* No ETS sample: plain BBRv3, the window dropped. A stale sample: the
 * window is kept (an RTO must not free a flow from the delay control) and
 * grows on each ACK as if at target, back towards BBRv3's own rate. The
 * state says which. */
TEST(swift_fallback_without_fresh_sample)
{
	struct swift_env s;
	u32 w1;

	senv_init(&s, TARGET_US, 500);
	s.d.smp.present = 0;				/* no ETS storage */
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.status, SWIFT_ST_NO_ETS);
	ASSERT_EQ(s.d.w.fallback_acks, 1);
	ASSERT_EQ(s.d.w.decreases, 0);
	ASSERT_EQ(s.d.w.cwnd_milli, 0);

	s.d.smp.present = 1;
	s.d.smp.last_sample_ns = 0;			/* storage, no sample yet */
	senv_ack(&s, BDP_PKTS, s.e.sk.delivered, false);
	ASSERT_EQ(s.d.w.status, SWIFT_ST_NO_ETS);

	/* fresh: the window engages */
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.status, SWIFT_ST_ACTIVE);
	ASSERT_EQ(s.d.w.decreases, 1);
	w1 = s.d.w.cwnd_milli;
	ASSERT_GT(w1, 0);
	/* a sample older than the 100 ms default: kept, grown, still capping */
	s.d.smp.last_sample_ns = (s.e.sk.now_us - SWIFT_STALE_DEFAULT_US - RTT_US) *
			       NS_PER_US;
	senv_ack(&s, 10, s.e.sk.delivered, false);
	ASSERT_EQ(s.d.w.status, SWIFT_ST_STALE);
	ASSERT_EQ(s.d.w.decreases, 1);
	ASSERT_EQ(s.d.w.fallback_acks, 3);
	ASSERT_GT(s.d.w.cwnd_milli, w1);
	ASSERT_LE(s.e.sk.snd_cwnd, (s.d.w.cwnd_milli + 999) / 1000);
	/* no storage any more: plain BBRv3 */
	s.d.smp.present = 0;
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.status, SWIFT_ST_NO_ETS);
	ASSERT_EQ(s.d.w.cwnd_milli, 0);

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

/* The host target: the sender's own delay over it cuts the window like
 * Network_RTT over target_RTT (the smaller factor wins); without a host
 * target the host delay is only shown. */
TEST(swift_host_target)
{
	struct swift_env s;

	senv_init(&s, TARGET_US, TARGET_US / 2);	/* the fabric: fine */
	s.d.smp.host_delay_us = 300;
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.host_delay_us, 300);
	ASSERT_EQ(s.d.w.decreases, 0);			/* no host target */
	s.d.w.host_target_us = 100;
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.decreases, 1);
	ASSERT_EQ(s.d.w.last_factor, swift_md_factor(300, 100));
	/* both over: the larger cut */
	s.d.smp.path_rtt_us = 2 * TARGET_US;		/* 0.6 */
	s.d.smp.host_delay_us = 120;			/* 0.87 */
	senv_round(&s, BDP_PKTS);
	ASSERT_EQ(s.d.w.last_factor, swift_md_factor(2 * TARGET_US, TARGET_US));
	/* the configuration carries it */
	{
		struct swift_cfg cfg = { .target_rtt_us = 1, .host_target_us = 77 };

		swift_apply_cfg(&s.d.w, &cfg, 0);
		ASSERT_EQ(s.d.w.host_target_us, 77);
	}
}

/* The kernel's cwnd under a paced window: the window's rate over srtt
 * (which carries the receiver's ACK delay; no more than the target plus
 * the 200 ms a receiver without MaxACKDel may hold an ACK) plus a packet,
 * BBRv3's floor at least, 16 floors at most. */
static u32 expect_paced_cwnd(u32 milli, u32 srtt_us, u32 target_us)
{
	u64 rtt = srtt_us > target_us ? srtt_us : target_us;
	u64 pkts;

	if (rtt > target_us + SWIFT_ACK_DELAY_UNKNOWN_US)
		rtt = target_us + SWIFT_ACK_DELAY_UNKNOWN_US;
	pkts = ((u64)milli * rtt + 1000ull * target_us - 1) / (1000ull * target_us) + 1;

	if (pkts > SWIFT_PACED_CWND_MAX_PKTS)
		pkts = SWIFT_PACED_CWND_MAX_PKTS;
	return pkts < BBR_CWND_MIN_TARGET_PKTS ? BBR_CWND_MIN_TARGET_PKTS : (u32)pkts;
}

/* Below the cwnd floor: pacing carries a fractional window per target_RTT,
 * less than one packet per RTT, and cwnd follows what that rate keeps in
 * flight over srtt (the floor when srtt is the target's); Swift's AIMD
 * acts on it in any PROBE_BW phase. */
TEST(swift_subpacket_pacing)
{
	struct swift_env s;
	u32 w0, want_w;
	u64 want;
	int i;

	senv_init(&s, TARGET_US, 100000);	/* every cut is the 0.5 floor */
	for (i = 0; i < 40 && !(s.d.w.cwnd_milli &&
				s.d.w.cwnd_milli < SWIFT_MILLI_PER_PKT); i++)
		senv_round(&s, 4);
	ASSERT_GT(s.d.w.cwnd_milli, 0);
	ASSERT_LT(s.d.w.cwnd_milli, SWIFT_MILLI_PER_PKT);
	ASSERT_EQ(s.e.sk.snd_cwnd, expect_paced_cwnd(s.d.w.cwnd_milli, s.e.sk.srtt_us, TARGET_US));
	UNIT_REPORT("window %u milli at srtt %u us, target %u us: cwnd %u",
		    s.d.w.cwnd_milli, s.e.sk.srtt_us, TARGET_US, s.e.sk.snd_cwnd);
	/* w packets per target_RTT, bytes per second */
	want = (((u64)s.d.w.cwnd_milli * BW_UNIT / (1000ull * TARGET_US)) *
		ENV_MSS_BYTES * 1000000u) >> BW_SCALE;
	ASSERT_EQ(s.e.sk.pacing_rate, want);
	/* less than one MSS per target_RTT */
	ASSERT_LT(s.e.sk.pacing_rate * TARGET_US / 1000000u, ENV_MSS_BYTES);
	UNIT_REPORT("sub-packet window %u/1000 pkt, pacing %llu B/s = %.3f pkt per target",
		    s.d.w.cwnd_milli, (unsigned long long)s.e.sk.pacing_rate,
		    (double)s.e.sk.pacing_rate * TARGET_US / 1e6 / ENV_MSS_BYTES);
	/* a standing queue cuts on to the floor of 0.001 packet (once per
	 * excursion hold: a sparser window holds longer), and the floor holds */
	for (i = 0; i < 10000 && s.d.w.cwnd_milli > SWIFT_CWND_MIN_MILLI; i++)
		senv_round(&s, 1);
	UNIT_REPORT("a standing queue at factor 0.5: 0.001 packet after %d ACKs, %u cuts",
		    i, s.d.w.decreases);
	ASSERT_EQ(s.d.w.cwnd_milli, SWIFT_CWND_MIN_MILLI);
	senv_past_hold(&s);
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.cwnd_milli, SWIFT_CWND_MIN_MILLI);
	/* cuts go on whatever BBRv3's phase: REFILL and UP included */
	s.d.w.cwnd_milli = 500;
	s.e.b->cycle_idx = BBR_BW_PROBE_REFILL;
	senv_past_hold(&s);
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.cwnd_milli, 250);
	s.e.b->cycle_idx = BBR_BW_PROBE_UP;
	senv_past_hold(&s);
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.cwnd_milli, 125);
	ASSERT_EQ(s.e.sk.snd_cwnd, expect_paced_cwnd(125, s.e.sk.srtt_us, TARGET_US));
	/* what the kernel counts in flight: 0.22 packet per 150 us target with
	 * a 4.6 ms srtt (a receiver's delayed ACKs) -> 6.7 packets + 1 = 8;
	 * at srtt = target the floor; a long stall at most 16 floors, or
	 * what the target plus the receiver's ACK delay bound allow */
	{
		struct swift_state w = { .target_rtt_us = 150, .cwnd_milli = 220 };
		struct bbr_sock sk = { .srtt_us = 4600 };

		ASSERT_EQ(swift_paced_cwnd(&w, &sk), 8u);
		sk.srtt_us = 150;
		ASSERT_EQ(swift_paced_cwnd(&w, &sk), BBR_CWND_MIN_TARGET_PKTS);
		sk.srtt_us = 10000000;
		ASSERT_EQ(swift_paced_cwnd(&w, &sk), SWIFT_PACED_CWND_MAX_PKTS);
		/* a receiver that holds ACKs at most 8 ms (ETS MaxACKDel): a
		 * 1.5 s srtt is a queue, and counts as 150 us + 8 ms,
		 * 0.22 x 8150 / 150 = 11.95 -> 12 + 1; 4.6 ms stays 4.6 ms */
		w.ack_delay_max_us = 8000;
		sk.srtt_us = 1500000;
		ASSERT_EQ(swift_paced_cwnd(&w, &sk), 13u);
		sk.srtt_us = 4600;
		ASSERT_EQ(swift_paced_cwnd(&w, &sk), 8u);
		sk.srtt_us = 10000000;
		sk.snd_cwnd_clamp = 10;
		ASSERT_EQ(swift_paced_cwnd(&w, &sk), 10u);
	}
	/* at target each ACK adds 2 + ai x sqrt(w) below a packet ... (ai =
	 * 50 milli per ms of target: 5 at 100 us) */
	s.d.smp.network_rtt_us = TARGET_US;
	w0 = s.d.w.cwnd_milli;
	senv_round(&s, 1);
	want_w = w0 + SWIFT_AI_BASE_MILLI +
		 SWIFT_AI_MILLI_PER_MS * TARGET_US * swift_sqrt_milli(w0) /
		 1000000;
	ASSERT_EQ(s.d.w.cwnd_milli, want_w);
	/* ... and (2 + ai / sqrt(w)) per packet acknowledged from one on */
	s.d.w.cwnd_milli = 2000;
	senv_round(&s, 3);
	ASSERT_EQ(s.d.w.cwnd_milli, 2000 + 3 * (SWIFT_AI_BASE_MILLI +
					     SWIFT_AI_MILLI_PER_MS * TARGET_US /
					     swift_sqrt_milli(2000)));
	/* past the floor the window goes on, now as cwnd */
	s.d.w.cwnd_milli = SWIFT_CWND_FLOOR_MILLI - 1;
	s.e.b->cycle_idx = BBR_BW_PROBE_DOWN;
	senv_ack(&s, 1, s.e.sk.delivered, true);
	ASSERT_GE(s.d.w.cwnd_milli, SWIFT_CWND_FLOOR_MILLI);
	ASSERT_LE(s.e.sk.snd_cwnd, (s.d.w.cwnd_milli + 999) / 1000);
}

/* A flow of less than a packet per round trip answers an excursion over
 * target once, unless the queue grows: a later decision over target cuts
 * again only when it asks for a deeper cut, reads more than
 * SWIFT_EXCURSION_GROWTH x the Network_RTT of the last cut, or comes
 * SWIFT_EXCURSION_GAPS packet gaps (target / window) after it; a decision
 * at or below target ends the excursion. */
TEST(swift_one_cut_per_excursion)
{
	struct swift_env s;
	u32 w;

	senv_init(&s, TARGET_US, 150);		/* factor 0.733 */
	s.d.w.cwnd_milli = 200;			/* 0.2 packet per target */
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.decreases, 1);
	w = s.d.w.cwnd_milli;
	ASSERT_EQ(w, swift_scale(200, swift_md_factor(150, TARGET_US)));
	/* the same queue on the next ACKs (0.5 ms apart, the hold is 4 gaps
	 * of 0.68 ms): answered already */
	senv_round(&s, 1);
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.decreases, 1);
	ASSERT_EQ(s.d.w.cwnd_milli, w);
	/* a deeper cut asked for: the queue grew */
	s.d.smp.network_rtt_us = 200;		/* factor 0.6 */
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.decreases, 2);
	w = s.d.w.cwnd_milli;
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.decreases, 2);
	/* past the 0.5 floor the factor no longer deepens: more than twice
	 * the Network_RTT of the last cut does */
	s.d.smp.network_rtt_us = 400;		/* the floor, deeper than 0.6 */
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.decreases, 3);
	s.d.smp.network_rtt_us = 800;		/* the floor, twice 400 */
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.decreases, 3);
	s.d.smp.network_rtt_us = 801;
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.decreases, 4);
	/* the hold ends: a queue that stands is cut again */
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.decreases, 4);
	senv_past_hold(&s);
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.decreases, 5);
	/* a decision at or below target ends the excursion: the next queue,
	 * a shallower one, is answered at once */
	s.d.smp.network_rtt_us = TARGET_US;
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.in_excursion, 0);
	s.d.smp.network_rtt_us = 150;
	w = s.d.w.cwnd_milli;
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.decreases, 6);
	ASSERT_EQ(s.d.w.cwnd_milli, swift_scale(w, swift_md_factor(150, TARGET_US)));
	UNIT_REPORT("excursions: %u cuts in 11 ACKs over target, window 200 -> %u milli", s.d.w.decreases,
		    s.d.w.cwnd_milli);
	/* from a packet per round trip on the round trip alone guards (as in
	 * swift_window_cut_once_per_round): a window of 1.5 packets, whose
	 * hold of 4 gaps would be 267 us, is cut on each round's ACK */
	s.d.w.cwnd_milli = 1500;
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.decreases, 7);
	s.d.w.cwnd_milli = 1500;
	s.e.sk.now_us -= RTT_US / 4 - 1;	/* the next ACK 1 us later */
	senv_round(&s, 1);
	ASSERT_EQ(s.d.w.decreases, 8);
}

/* The increase: its square root exact over any window; per round trip
 * continuous at one packet (a jump there made the flows just above a
 * packet outgrow the rest in the packet model), growing less than the
 * cuts as the window grows, and in proportion to the target. */
TEST(swift_window_increase)
{
	struct swift_state w = { .target_rtt_us = 400 };
	u32 x, r, below, at, per_ack[4], i;
	static const u32 win[4] = { 50, 500, 2000, 3500 };
	static const u32 big[6] = { 4001, 65536, 1000000, 12345678, 1u << 30, SWIFT_CWND_MAX_MILLI };

	/* the root, exact over the fractional range and beyond */
	for (x = 1; x < 2 * SWIFT_CWND_FLOOR_MILLI; x++) {
		r = swift_sqrt_milli(x);
		ASSERT_LE((u64)r * r, (u64)x * 1000);
		ASSERT_GT((u64)(r + 1) * (r + 1), (u64)x * 1000);
	}
	for (i = 0; i < 6; i++) {
		r = swift_sqrt_milli(big[i]);
		ASSERT_LE((u64)r * r, (u64)big[i] * 1000);
		ASSERT_GT((u64)(r + 1) * (r + 1), (u64)big[i] * 1000);
	}
	ASSERT_EQ(swift_sqrt_milli(0), 31);		/* 0.001 packet */
	/* per round trip: (w ACKs) x (increase per ACK), in milli-packets */
	w.cwnd_milli = 999;
	below = 999 * swift_ai_milli(&w, 1) / 1000;
	w.cwnd_milli = 1000;
	at = swift_ai_milli(&w, 1);
	UNIT_REPORT("increase per round trip at 0.999 / 1.000 packet, 400 us target: "
		    "%u / %u milli", below, at);
	ASSERT_LE(at > below ? at - below : below - at, 2);	/* two truncations */
	ASSERT_EQ(at, SWIFT_AI_BASE_MILLI + SWIFT_AI_MILLI_PER_MS * 400 / 1000);
	/* from one packet on, per packet acknowledged (a stretch ACK counts,
	 * up to SWIFT_AI_MAX_ACKED_PKTS) */
	ASSERT_EQ(swift_ai_milli(&w, 4), 4 * at);
	ASSERT_EQ(swift_ai_milli(&w, 1000), SWIFT_AI_MAX_ACKED_PKTS * at);
	ASSERT_EQ(swift_ai_milli(&w, 0), at);
	/* Growth per cut opportunity falls as the window grows: a flow sees
	 * one possible cut per ACK below a packet (w per round trip) and one
	 * per round trip above; per round trip it grows by w x a(w). So
	 * a(w) / min(w, 1) must fall: smaller flows gain on larger ones. */
	for (i = 0; i < 4; i++) {
		w.cwnd_milli = win[i];
		per_ack[i] = swift_ai_milli(&w, 1);
	}
	UNIT_REPORT("increase per ACK at 0.05 / 0.5 / 2 / 3.5 packets: %u / %u / %u / %u milli",
		    per_ack[0], per_ack[1], per_ack[2], per_ack[3]);
	for (i = 0; i + 1 < 4; i++)
		ASSERT_GT((u64)per_ack[i] * bbr_min_u32(win[i + 1], 1000),
			  (u64)per_ack[i + 1] * bbr_min_u32(win[i], 1000));
	/* in proportion to the target (but for the constant term) */
	w.cwnd_milli = 2000;
	w.target_rtt_us = 400;
	x = swift_ai_milli(&w, 1) - SWIFT_AI_BASE_MILLI;
	w.target_rtt_us = 11000;
	r = swift_ai_milli(&w, 1) - SWIFT_AI_BASE_MILLI;
	UNIT_REPORT("increase per ACK at 2 packets: %u milli at 400 us, %u at 11 ms", x, r);
	ASSERT_LE(r > x * 11000 / 400 ? r - x * 11000 / 400 : x * 11000 / 400 - r, 27);
	/* never more than the floor per packet in one step, however long the
	 * target, and never past the largest window */
	w.target_rtt_us = 0xFFFFFFFFu;
	w.cwnd_milli = 999;
	ASSERT_LE(swift_ai_milli(&w, 1), SWIFT_AI_BASE_MILLI + SWIFT_CWND_FLOOR_MILLI);
	w.cwnd_milli = SWIFT_CWND_MAX_MILLI - 1;
	swift_grow(&w, 64);
	ASSERT_EQ(w.cwnd_milli, SWIFT_CWND_MAX_MILLI);
}

/* The start under a target: the first connection to an idle path starts
 * as BBRv3; the n-th of a burst its host opens together gets 1/n of the
 * initial window, paced at the window per target_RTT; on a path already
 * over target at most a packet per target_RTT. */
TEST(swift_start_shares_the_initial_window)
{
	struct swift_env s;
	u64 rate0;

	env_init(&s.e, 10);
	senv_signal(&s, TARGET_US, TARGET_US);
	memset(&s.d.w, 0, sizeof(s.d.w));
	s.d.w.target_rtt_us = TARGET_US;
	rate0 = s.e.sk.pacing_rate;
	swift_on_start(s.e.b, &s.d.w, &s.e.sk, 0, 1);		/* alone, unmeasured */
	ASSERT_EQ(s.d.w.cwnd_milli, 0);
	ASSERT_EQ(s.e.sk.snd_cwnd, 10);
	ASSERT_EQ(s.e.sk.pacing_rate, rate0);
	swift_on_start(s.e.b, &s.d.w, &s.e.sk, TARGET_US - 10, 1);	/* alone, not full */
	ASSERT_EQ(s.d.w.cwnd_milli, 0);

	swift_on_start(s.e.b, &s.d.w, &s.e.sk, 0, 5);		/* 5th of a burst */
	ASSERT_EQ(s.d.w.cwnd_milli, 2000);
	ASSERT_EQ(s.d.w.start_milli, 2000);
	ASSERT_EQ(s.d.w.status, SWIFT_ST_ACTIVE);
	ASSERT_EQ(s.e.sk.snd_cwnd, BBR_CWND_MIN_TARGET_PKTS);
	ASSERT_EQ(s.e.sk.pacing_rate, ((2000ull * BW_UNIT / (1000ull * TARGET_US)) *
				       ENV_MSS_BYTES * 1000000u) >> BW_SCALE);

	env_init(&s.e, 10);
	memset(&s.d.w, 0, sizeof(s.d.w));
	s.d.w.target_rtt_us = TARGET_US;
	swift_on_start(s.e.b, &s.d.w, &s.e.sk, 3 * TARGET_US, 1);	/* full path */
	ASSERT_EQ(s.d.w.cwnd_milli, SWIFT_MILLI_PER_PKT);
	ASSERT_EQ(s.d.w.decided_rtt_us, 3 * TARGET_US);
	env_init(&s.e, 10);
	swift_on_start(s.e.b, &s.d.w, &s.e.sk, 3 * TARGET_US, 5000);	/* 1/5000 */
	ASSERT_EQ(s.d.w.cwnd_milli, 2);
	env_init(&s.e, 10);
	swift_on_start(s.e.b, &s.d.w, &s.e.sk, 3 * TARGET_US, 50000);	/* floor */
	ASSERT_EQ(s.d.w.cwnd_milli, SWIFT_CWND_MIN_MILLI);
	/* no target: nothing */
	env_init(&s.e, 10);
	memset(&s.d.w, 0, sizeof(s.d.w));
	swift_on_start(s.e.b, &s.d.w, &s.e.sk, 3 * TARGET_US, 50);
	ASSERT_EQ(s.d.w.cwnd_milli, 0);
	ASSERT_EQ(s.e.sk.snd_cwnd, 10);
}
