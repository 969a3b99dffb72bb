// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* PROBE_BW phases, the bw filter, inflight_hi, and PROBE_RTT. */
#include "unit.h"
#include "bbr_env.h"

#define RTT_US		8192u	/* 2^13 µs: exact bw samples */
#define BDP_PKTS	100u

static void expect_gains(struct env *e, u32 pacing, u32 cwnd, int *ok)
{
	*ok = e->b->pacing_gain == pacing && e->b->cwnd_gain == cwnd;
	if (!*ok)
		printf("  gains %u/%u, expected %u/%u (mode %u phase %u)\n",
		       e->b->pacing_gain, e->b->cwnd_gain, pacing, cwnd,
		       e->b->mode, e->b->cycle_idx);
}

/* DOWN -> CRUISE -> (Reno-coexistence time) REFILL -> UP -> (plateau)
 * DOWN, with each phase's gains. */
TEST(probe_bw_phase_sequence_and_gains)
{
	struct env e;
	u32 i, rounds, r0;
	int ok;

	env_to_probe_bw(&e, BDP_PKTS, RTT_US);
	ASSERT_EQ(e.b->mode, BBR_PROBE_BW);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_DOWN);
	expect_gains(&e, 232, 512, &ok);
	ASSERT_TRUE(ok);
	r0 = e.b->rounds_since_probe;
	ASSERT_LE(r0, 1);

	/* In flight was one BDP when this ACK's packet left: queue drained. */
	env_round(&e, BDP_PKTS, RTT_US);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_CRUISE);
	expect_gains(&e, 256, 512, &ok);
	ASSERT_TRUE(ok);

	/* BDP >= 63 pkts: a probe at least every 63 rounds (Reno needs ~BDP
	 * rounds to regrow), before the 2-3 s wall-clock wait. */
	for (rounds = 1; rounds < 100; rounds++) {
		env_round(&e, BDP_PKTS, RTT_US);
		if (e.b->cycle_idx != BBR_BW_PROBE_CRUISE)
			break;
	}
	ASSERT_EQ(rounds + 1 + r0, BBR_BW_PROBE_MAX_ROUNDS);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_REFILL);
	expect_gains(&e, 256, 512, &ok);
	ASSERT_TRUE(ok);
	ASSERT_EQ(e.b->bw_lo, BBR_UNSET);
	ASSERT_EQ(e.b->inflight_lo, BBR_UNSET);
	ASSERT_EQ(e.b->ack_phase, BBR_ACKS_REFILLING);

	/* One round of refilling, then UP. */
	env_round(&e, BDP_PKTS, RTT_US);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_UP);
	expect_gains(&e, 320, 576, &ok);
	ASSERT_TRUE(ok);
	ASSERT_EQ(e.b->bw_probe_samples, 1);
	ASSERT_EQ(e.b->ack_phase, BBR_ACKS_PROBE_STARTING);

	/* The path has no more bw: three flat rounds end the probe. */
	for (i = 0; i < 2; i++) {
		env_round(&e, BDP_PKTS, RTT_US);
		ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_UP);
	}
	ASSERT_EQ(e.b->ack_phase, BBR_ACKS_PROBE_FEEDBACK);
	env_round(&e, BDP_PKTS, RTT_US);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_DOWN);
	expect_gains(&e, 232, 512, &ok);
	ASSERT_TRUE(ok);
}

/* Without enough rounds, the wall clock decides: strictly more than
 * probe_wait_us after the cycle started. */
TEST(probe_bw_cruise_to_refill_after_probe_wait)
{
	struct env e;
	u64 due;

	env_to_probe_bw(&e, BDP_PKTS, RTT_US);
	env_round(&e, BDP_PKTS, RTT_US);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_CRUISE);
	due = e.b->cycle_mstamp_us + e.b->probe_wait_us;
	/* ACKs of old packets: time passes, no round starts */
	env_ack_full(&e, 1, e.sk.delivered - 50, due - e.sk.now_us, RTT_US,
		     RTT_US, 0);
	ASSERT_EQ(e.sk.now_us, due);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_CRUISE);
	env_ack_full(&e, 1, e.sk.delivered - 50, 1, RTT_US, RTT_US, 0);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_REFILL);
}

/* While probing up and limited by it, inflight_hi grows 1, 2, 4 ...
 * packets per round; it is never the plateau that stops such a probe. */
TEST(inflight_hi_raised_while_probing_up)
{
	struct env e;
	u32 i, prev, grew[4];

	env_to_probe_bw(&e, BDP_PKTS, RTT_US);
	e.b->inflight_hi = BDP_PKTS;
	/* force the next probe now */
	e.b->rounds_since_probe = BBR_BW_PROBE_MAX_ROUNDS;
	env_round(&e, BDP_PKTS, RTT_US);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_REFILL);
	e.max_inflight = 10 * BDP_PKTS;
	env_round(&e, BDP_PKTS, RTT_US);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_UP);
	for (i = 0; i < 4; i++) {
		prev = e.b->inflight_hi;
		/* many ACKs per round, as on a real path */
		env_round_acks(&e, e.sk.snd_cwnd, RTT_US, 16);
		ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_UP);
		grew[i] = e.b->inflight_hi - prev;
		ASSERT_EQ(e.sk.snd_cwnd, e.b->inflight_hi);	/* capped by it */
	}
	/* growth doubles each round (per cwnd of ACKs) */
	UNIT_REPORT("inflight_hi growth per round: %u %u %u %u",
		    grew[0], grew[1], grew[2], grew[3]);
	ASSERT_GE(grew[0], 1);
	for (i = 1; i < 4; i++) {
		/* x2, give or take cwnd/slope rounding */
		ASSERT_GE(2 * grew[i], 3 * grew[i - 1]);
		ASSERT_LE(2 * grew[i], 5 * grew[i - 1]);
	}
}

/* Loss above 2 % of what was in flight during UP: inflight_hi becomes
 * max(tx_in_flight, 0.7 x target) and the probe ends (DOWN). */
TEST(inflight_hi_cut_by_beta_on_excess_loss)
{
	struct env e;
	struct bbr_rs rs = {};
	u32 target;

	env_to_probe_bw(&e, BDP_PKTS, RTT_US);
	e.b->rounds_since_probe = BBR_BW_PROBE_MAX_ROUNDS;
	env_round(&e, BDP_PKTS, RTT_US);
	env_round(&e, BDP_PKTS, RTT_US);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_UP);
	ASSERT_EQ(e.b->bw_probe_samples, 1);

	target = bbr_target_inflight(e.b, &e.sk);
	rs.tx_in_flight = 50;		/* below the 0.7 x target floor */
	rs.lost = 5;			/* 10 % > 2 % */
	ASSERT_TRUE(bbr_is_inflight_too_high(e.b, &rs));
	bbr_handle_inflight_too_high(e.b, &e.sk, &rs);
	ASSERT_EQ(e.b->inflight_hi, (u32)(((u64)target * (256 - 76)) >> 8));
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_DOWN);
	ASSERT_EQ(e.b->prev_probe_too_high, 1);
	ASSERT_EQ(e.b->bw_probe_samples, 0);

	/* 2 lost of 120 in flight is 1.7 %: not too high; 3 is 2.5 %. */
	rs.tx_in_flight = 120;
	rs.lost = 2;
	ASSERT_FALSE(bbr_is_inflight_too_high(e.b, &rs));
	rs.lost = 3;
	ASSERT_TRUE(bbr_is_inflight_too_high(e.b, &rs));
	/* app-limited samples never move inflight_hi */
	rs.is_app_limited = 1;
	e.b->inflight_hi = 1000;
	bbr_handle_inflight_too_high(e.b, &e.sk, &rs);
	ASSERT_EQ(e.b->inflight_hi, 1000);
}

/* The same reaction through the whole pipeline: losses reported by the
 * stack while probing up end the probe with inflight_hi below cwnd. */
TEST(loss_during_probe_up_ends_probe_through_pipeline)
{
	struct env e;
	u32 cwnd;

	env_to_probe_bw(&e, BDP_PKTS, RTT_US);
	e.b->rounds_since_probe = BBR_BW_PROBE_MAX_ROUNDS;
	env_round(&e, BDP_PKTS, RTT_US);
	e.max_inflight = 10 * BDP_PKTS;
	env_round(&e, BDP_PKTS, RTT_US);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_UP);
	cwnd = e.sk.snd_cwnd;
	env_ack_full(&e, 10, e.sk.delivered, 1000, RTT_US, RTT_US, 10);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_DOWN);
	ASSERT_NE(e.b->inflight_hi, BBR_UNSET);
	ASSERT_LT(e.b->inflight_hi, cwnd + 10);
	ASSERT_EQ(e.b->loss_in_round, 1);
}

/* The max-bw filter holds the max over the current and previous cycle. */
TEST(max_bw_filter_ages_over_two_cycles)
{
	struct env e;

	env_init(&e, 10);
	bbr_take_max_bw_sample(e.b, 100);
	ASSERT_EQ(bbr_max_bw(e.b), 100);
	bbr_advance_max_bw_filter(e.b);		/* cycle 1 ends */
	bbr_take_max_bw_sample(e.b, 50);
	ASSERT_EQ(bbr_max_bw(e.b), 100);	/* still remembered */
	bbr_advance_max_bw_filter(e.b);		/* cycle 2 ends */
	ASSERT_EQ(bbr_max_bw(e.b), 50);		/* 100 aged out */
	bbr_advance_max_bw_filter(e.b);		/* a cycle with no samples */
	ASSERT_EQ(bbr_max_bw(e.b), 50);		/* keeps the old window */
	/* the model bw is bounded by bw_lo */
	e.b->bw_lo = 30;
	ASSERT_EQ(bbr_bw(e.b), 30);
}

/* 5 s without a new min RTT: PROBE_RTT, cwnd at 0.5 BDP, held 200 ms and a
 * round after in-flight got there, then PROBE_BW (CRUISE). */
TEST(probe_rtt_entry_hold_and_exit)
{
	struct env e;
	u64 stamp, done_at;
	u32 i, prior_cwnd, probe_rtt_cwnd;

	env_to_probe_bw(&e, BDP_PKTS, RTT_US);
	stamp = e.b->probe_rtt_min_stamp_us;
	for (i = 0; i < 1000 && e.b->mode != BBR_PROBE_RTT; i++) {
		ASSERT_LE(e.sk.now_us, stamp + 5000000);
		env_round(&e, BDP_PKTS, RTT_US);
	}
	ASSERT_EQ(e.b->mode, BBR_PROBE_RTT);
	ASSERT_GT(e.sk.now_us, stamp + 5000000);
	ASSERT_LE(e.sk.now_us, stamp + 5000000 + RTT_US);
	expect_gains(&e, 256, 256, (int *)&i);
	ASSERT_TRUE(i);
	probe_rtt_cwnd = bbr_probe_rtt_cwnd(e.b);
	ASSERT_EQ(probe_rtt_cwnd, BDP_PKTS / 2);
	ASSERT_LE(e.sk.snd_cwnd, probe_rtt_cwnd);
	prior_cwnd = e.b->prior_cwnd;
	ASSERT_GE(prior_cwnd, BDP_PKTS);
	ASSERT_NE(e.sk.app_limited, 0);		/* low-rate samples discounted */

	/* In flight at the PROBE_RTT cwnd (here already on the entry ACK,
	 * which ACKed a whole round): the 200 ms hold starts. */
	ASSERT_NE(e.b->probe_rtt_done_stamp_us, 0);
	done_at = e.b->probe_rtt_done_stamp_us;
	ASSERT_EQ(done_at, e.sk.now_us + 200000);
	while (e.sk.now_us + RTT_US <= done_at) {
		env_round(&e, probe_rtt_cwnd, RTT_US);
		ASSERT_EQ(e.b->mode, BBR_PROBE_RTT);
		ASSERT_LE(e.sk.snd_cwnd, probe_rtt_cwnd);
	}
	env_round(&e, probe_rtt_cwnd, RTT_US);
	ASSERT_EQ(e.b->mode, BBR_PROBE_BW);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_CRUISE);
	/* cwnd restored from prior_cwnd, then trimmed to the model's
	 * target (2 BDP + aggregation allowance) on the same ACK */
	ASSERT_GE(prior_cwnd, 2 * BDP_PKTS);
	ASSERT_GE(e.sk.snd_cwnd, 2 * BDP_PKTS);
	ASSERT_EQ(e.b->probe_rtt_min_stamp_us, e.sk.now_us);
	ASSERT_EQ(e.b->bw_lo, BBR_UNSET);
}

/* The 200 ms are not enough on their own: a round must also complete. */
TEST(probe_rtt_needs_a_round_after_200ms)
{
	struct env e;
	u32 i;

	env_to_probe_bw(&e, BDP_PKTS, RTT_US);
	e.b->probe_rtt_min_stamp_us = e.sk.now_us - 5000001;
	env_round(&e, BDP_PKTS, RTT_US);
	ASSERT_EQ(e.b->mode, BBR_PROBE_RTT);
	ASSERT_NE(e.b->probe_rtt_done_stamp_us, 0);	/* drained: hold starts */
	/* 300 ms of ACKs for packets sent before the hold began */
	for (i = 0; i < 30; i++)
		env_ack_full(&e, 1, e.b->next_rtt_delivered - 10, 10000,
			     RTT_US, RTT_US, 0);
	ASSERT_EQ(e.b->mode, BBR_PROBE_RTT);
	env_round(&e, 10, RTT_US);
	ASSERT_EQ(e.b->mode, BBR_PROBE_BW);
}

/* PROBE_RTT before the pipe was ever full goes back to STARTUP. */
TEST(probe_rtt_from_startup_returns_to_startup)
{
	struct env e;

	env_init(&e, 10);
	env_round(&e, 10, RTT_US);
	env_round(&e, 20, RTT_US);
	e.b->probe_rtt_min_stamp_us = e.sk.now_us - 5000001;
	env_round(&e, 40, RTT_US);
	ASSERT_EQ(e.b->mode, BBR_PROBE_RTT);
	env_set_inflight(&e, 2);
	e.max_inflight = 2;
	env_round(&e, 2, RTT_US);
	e.sk.now_us += 200000;
	env_round(&e, 2, RTT_US);
	ASSERT_EQ(e.b->mode, BBR_STARTUP);
	ASSERT_EQ(e.b->full_bw_reached, 0);
}

/* A lower RTT sample resets the 5 s PROBE_RTT clock; an ACK-delayed sample
 * does not refresh an expired one. */
TEST(min_rtt_filters)
{
	struct env e;

	env_init(&e, 10);
	env_round(&e, 10, 10000);
	ASSERT_EQ(e.b->min_rtt_us, 10000);
	env_round(&e, 10, 9000);
	ASSERT_EQ(e.b->min_rtt_us, 9000);
	ASSERT_EQ(e.b->probe_rtt_min_stamp_us, e.sk.now_us);
	env_round(&e, 10, 12000);
	ASSERT_EQ(e.b->min_rtt_us, 9000);
	/* the 10 s window expires: a higher RTT becomes the min */
	bbr_test_params.probe_rtt_mode_ms = 0;	/* no PROBE_RTT in this test */
	e.sk.now_us += 11000000;
	e.rs.is_ack_delayed = 0;
	env_round(&e, 10, 15000);
	ASSERT_EQ(e.b->min_rtt_us, 15000);
}
