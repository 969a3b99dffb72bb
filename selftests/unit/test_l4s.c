// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbr3's L4S mode (docs/l4s.md): BBR-evo's modifications as keys that apply
 * only while the mode is in force (the l4s key and AccECN): the gain cycle
 * of three rounds at 9/8, 7/8, 1; the 2-round max-bw window; STARTUP left
 * for PROBE_BW after two rounds with CE; no PROBE_RTT; the CE-discounted
 * bandwidth sample (test_signals.c); and the fallback to BBRv3's normal
 * mode without AccECN. The l4s profile sets them all.
 */
#include "unit.h"
#include "bbr_env.h"

#define RTT_US		2048u
#define BDP_PKTS	100u

static void l4s_keys(void)
{
	bbr_params_set_profile(&bbr_test_params, BBR_PROFILE_l4s);
}

/* A connection in PROBE_BW whose handshake negotiated AccECN (or not). */
static void l4s_env(struct env *e, bool accecn)
{
	env_to_probe_bw(e, BDP_PKTS, RTT_US);
	e->sk.ecn_ok = 1;
	e->sk.accecn = accecn;
}

/* One round in one ACK, `ce` of its packets CE-marked (AccECN counts,
 * and the ACK's rate sample). */
static void l4s_round(struct env *e, u32 pkts, u32 ce)
{
	e->sk.delivered_ce += ce;
	e->next_ce = ce;
	env_round(e, pkts, RTT_US);
}

/* The l4s profile: the mode's keys at BBR-evo's values, BBRv3's ECN on at
 * any RTT; every other profile puts them back. */
TEST(l4s_profile_sets_bbr_evo)
{
	struct bbr_params p = BBR_PARAMS_DEFAULT;

	bbr_params_set_profile(&p, BBR_PROFILE_l4s);
	ASSERT_EQ(p.l4s, 1);
	ASSERT_EQ(p.ce_discount_k, 4);
	ASSERT_EQ(p.cycle_rounds, 3);
	ASSERT_EQ(p.cycle_up_gain, BBR_UNIT * 9 / 8);
	ASSERT_EQ(p.cycle_down_gain, BBR_UNIT * 7 / 8);
	ASSERT_EQ(p.bw_slot_rounds, 1);
	ASSERT_EQ(p.startup_ce_rounds, 2);
	ASSERT_EQ(p.l4s_no_probe_rtt, 1);
	ASSERT_EQ(p.ecn_enable, 1);
	ASSERT_EQ(p.ecn_max_rtt_us, 0);
	bbr_params_set_profile(&p, BBR_PROFILE_v3);
	ASSERT_EQ(p.l4s, 0);
	ASSERT_EQ(p.cycle_rounds, 0);
	ASSERT_EQ(p.ecn_max_rtt_us, 5000);
}

/* In force only with AccECN: with classic ECN (or none) the connection
 * runs BBRv3's phases and sample. */
TEST(l4s_needs_accecn)
{
	struct env e;
	int i;

	l4s_keys();
	l4s_env(&e, false);
	for (i = 0; i < 12; i++)
		l4s_round(&e, BDP_PKTS, 0);
	ASSERT_EQ(e.b->l4s, 0);
	/* BBRv3 cruises for seconds between probes; the cycle would have
	 * been up four times by now */
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_CRUISE);
	l4s_env(&e, true);
	l4s_round(&e, BDP_PKTS, 0);
	ASSERT_EQ(e.b->l4s, 1);
}

/* The gain cycle: up (9/8), down (7/8), cruise (1), round after round,
 * from the down round PROBE_BW starts in. */
TEST(l4s_gain_cycle_of_three_rounds)
{
	static const u8 want[9] = {
		BBR_BW_PROBE_CRUISE, BBR_BW_PROBE_UP, BBR_BW_PROBE_DOWN,
		BBR_BW_PROBE_CRUISE, BBR_BW_PROBE_UP, BBR_BW_PROBE_DOWN,
		BBR_BW_PROBE_CRUISE, BBR_BW_PROBE_UP, BBR_BW_PROBE_DOWN,
	};
	static const u16 gain[4] = {
		[BBR_BW_PROBE_UP] = BBR_UNIT * 9 / 8,
		[BBR_BW_PROBE_DOWN] = BBR_UNIT * 7 / 8,
		[BBR_BW_PROBE_CRUISE] = BBR_UNIT,
	};
	struct env e;
	int i;

	l4s_keys();
	l4s_env(&e, true);
	/* the ACK that turns the mode on: PROBE_BW's down round goes on */
	l4s_round(&e, BDP_PKTS, 0);
	e.b->rounds_since_probe = BBR_L4S_CYCLE_DOWN;
	e.b->cycle_idx = BBR_BW_PROBE_DOWN;
	for (i = 0; i < 9; i++) {
		l4s_round(&e, BDP_PKTS, 0);
		ASSERT_EQ(e.b->mode, BBR_PROBE_BW);
		ASSERT_EQ(e.b->cycle_idx, want[i]);
		ASSERT_EQ(e.b->pacing_gain, gain[want[i]]);
	}
	UNIT_REPORT("cycle: cruise, up 288, down 224, ... for 9 rounds");
}

/* cycle_min_us: a cycle of 3 rounds of 2 ms made to last at least 5 of
 * them cruises 2 more rounds (a flow with five times the RTT would keep
 * its 3 rounds). */
TEST(l4s_cycle_min_us_stretches_the_cruise)
{
	struct env e;
	int i, ups = 0, last_up = -1, gap = 0;

	l4s_keys();
	bbr_test_params.cycle_min_us = 5 * RTT_US;
	l4s_env(&e, true);
	l4s_round(&e, BDP_PKTS, 0);
	for (i = 0; i < 24; i++) {
		l4s_round(&e, BDP_PKTS, 0);
		if (e.b->cycle_idx != BBR_BW_PROBE_UP)
			continue;
		if (last_up >= 0)
			gap = i - last_up;
		last_up = i;
		ups++;
	}
	UNIT_REPORT("cycle_min_us %u us, rounds of %u us: %d ups in 24 rounds, "
		    "%d rounds apart", bbr_test_params.cycle_min_us, RTT_US, ups, gap);
	/* up, down, then cruise until 5 rounds have passed since the up:
	 * the next up starts the 5th round after it, not the 3rd */
	ASSERT_EQ(gap, 5);
	ASSERT_EQ(ups, 5);
}

/* The up round lifts the lower bounds (as REFILL does) so the probe can
 * find more. */
TEST(l4s_up_round_lifts_lower_bounds)
{
	struct env e;
	int i;

	l4s_keys();
	l4s_env(&e, true);
	for (i = 0; i < 6 && e.b->cycle_idx != BBR_BW_PROBE_CRUISE; i++)
		l4s_round(&e, BDP_PKTS, 0);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_CRUISE);
	e.b->inflight_lo = BDP_PKTS / 2;
	e.b->bw_lo = env_bw(BDP_PKTS / 2, RTT_US);
	l4s_round(&e, BDP_PKTS, 0);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_UP);
	ASSERT_EQ(e.b->inflight_lo, BBR_UNSET);
	ASSERT_EQ(e.b->bw_lo, BBR_UNSET);
}

/* Run whole rounds until the cycle is at `idx` (at most 8 rounds). */
static void l4s_until(struct env *e, u8 idx)
{
	int i;

	for (i = 0; i < 8 && e->b->cycle_idx != idx; i++)
		l4s_round(e, BDP_PKTS, 0);
	ASSERT_EQ(e->b->cycle_idx, idx);
}

/* A round in two ACKs: the first starts the round, the second (of the
 * same round) carries `ce` CE-marked packets. */
static void l4s_round_ce_late(struct env *e, u32 ce)
{
	u32 before = e->sk.delivered, half = BDP_PKTS / 2;

	env_ack_full(e, half, before, RTT_US / 2, RTT_US, RTT_US, 0);
	e->sk.delivered_ce += ce;
	e->next_ce = ce;
	env_ack_full(e, half, before, RTT_US / 2, RTT_US, RTT_US, 0);
}

/* The probe's feedback window, as the cycle has it (docs/l4s.md, "Known
 * issues"): CE above ecn_thresh in the up round's ACKs lowers inflight_hi
 * and ends the up round; the same CE in a cruise round does not. */
TEST(l4s_probe_feedback_is_the_up_rounds_acks)
{
	struct env e;
	u32 hi;

	l4s_keys();
	l4s_env(&e, true);
	l4s_until(&e, BBR_BW_PROBE_CRUISE);
	e.b->inflight_hi = 2 * BDP_PKTS;
	l4s_round(&e, BDP_PKTS, 0);		/* the up round starts */
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_UP);
	l4s_round_ce_late(&e, 0);		/* down */
	l4s_round_ce_late(&e, 60);		/* cruise: 60 % of the sample CE */
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_CRUISE);
	ASSERT_EQ(e.b->inflight_hi, 2 * BDP_PKTS);
	l4s_until(&e, BBR_BW_PROBE_UP);
	e.sk.delivered_ce += 100;		/* CE in the up round's ACKs: */
	e.next_ce = 100;			/* 100 of the sample's 150 */
	env_ack_full(&e, BDP_PKTS / 2, e.sk.delivered - BDP_PKTS, RTT_US / 2,
		     RTT_US, RTT_US, 0);
	hi = e.b->inflight_hi;
	UNIT_REPORT("CE over half the sample: inflight_hi %u after a cruise round, %u in the up "
		    "round (phase %u)", 2 * BDP_PKTS, hi, e.b->cycle_idx);
	ASSERT_LT(hi, 2 * BDP_PKTS);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_DOWN);
	ASSERT_EQ(e.b->prev_probe_too_high, 1);
}

/* The max-bw window: with bw_slot_rounds = 1 a high sample is forgotten
 * after two rounds; BBRv3's window (two probe cycles) keeps it. */
TEST(l4s_max_bw_window_of_two_rounds)
{
	struct env l4s, ref;
	u32 high = env_bw(2 * BDP_PKTS, RTT_US), r_l4s = 0, r_ref = 0;
	int i;

	l4s_keys();
	l4s_env(&l4s, true);
	bbr_test_params.cycle_rounds = 0;	/* the window alone */
	l4s_round(&l4s, BDP_PKTS, 0);
	l4s.b->bw_hi[1] = high;			/* a burst measured twice the rate */
	for (i = 1; i <= 6 && bbr_max_bw(l4s.b) >= high; i++)
		l4s_round(&l4s, BDP_PKTS, 0), r_l4s = i;

	bbr_params_set_profile(&bbr_test_params, BBR_PROFILE_v3);
	l4s_env(&ref, true);
	l4s_round(&ref, BDP_PKTS, 0);
	ref.b->bw_hi[1] = high;
	for (i = 1; i <= 6 && bbr_max_bw(ref.b) >= high; i++)
		l4s_round(&ref, BDP_PKTS, 0), r_ref = i;
	UNIT_REPORT("a sample of twice the rate forgotten after %u rounds (L4S); "
		    "still in BBRv3's filter after %u", r_l4s, r_ref);
	ASSERT_LE(r_l4s, 2);
	ASSERT_LT(bbr_max_bw(l4s.b), high);
	ASSERT_EQ(bbr_max_bw(ref.b), high);
}

/* STARTUP with CE in two rounds (in a row or not) goes straight to
 * PROBE_BW, no DRAIN; BBRv3's rule (two rounds in a row at 50 % CE) would
 * have gone on. */
/* A new connection's STARTUP, `rounds` rounds doubling from 10 packets,
 * one CE mark in every other round from the second on (5 % and less).
 * Returns the packets of the last round. */
static u32 startup_with_ce(struct env *e, bool accecn, int rounds)
{
	u32 pkts = 10;
	int i;

	env_init(e, 10);
	e->sk.ecn_ok = 1;
	e->sk.accecn = accecn;
	for (i = 0; i < rounds; i++, pkts *= 2)
		l4s_round(e, pkts, i % 2);
	return pkts / 2;
}

TEST(l4s_startup_left_after_two_rounds_with_ce)
{
	struct env e;
	u32 pkts;

	l4s_keys();
	startup_with_ce(&e, true, 3);		/* one round with CE */
	ASSERT_EQ(e.b->mode, BBR_STARTUP);
	pkts = startup_with_ce(&e, true, 4);	/* the second round with CE */
	UNIT_REPORT("STARTUP left after 2 rounds with CE: mode %u, phase %u",
		    e.b->mode, e.b->cycle_idx);
	ASSERT_EQ(e.b->mode, BBR_PROBE_BW);
	ASSERT_EQ(e.b->full_bw_reached, 1);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_DOWN);
	l4s_round(&e, pkts, 0);			/* and the cycle goes on */
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_CRUISE);

	/* the same without BBRv3's ECN response (ecn_enable = 0): the mode
	 * reads the rounds' CE itself */
	bbr_test_params.ecn_enable = 0;
	startup_with_ce(&e, true, 4);
	ASSERT_EQ(e.b->mode, BBR_PROBE_BW);
	ASSERT_EQ(e.b->ecn_eligible, 0);
	bbr_test_params.ecn_enable = 1;

	/* one CE mark in a round of 400 packets (under 1/256) counts */
	env_init(&e, 10);
	e.sk.ecn_ok = 1;
	e.sk.accecn = 1;
	l4s_round(&e, 10, 0);
	l4s_round(&e, 400, 1);
	l4s_round(&e, 800, 1);
	ASSERT_EQ(e.b->mode, BBR_PROBE_BW);

	/* without AccECN: BBRv3's rule, still in STARTUP */
	startup_with_ce(&e, false, 5);
	ASSERT_EQ(e.b->mode, BBR_STARTUP);
}

/* No PROBE_RTT in the L4S mode; BBRv3's after probe_rtt_win_ms. */
TEST(l4s_no_probe_rtt)
{
	struct env e;
	int i, rounds = (int)(6000000 / RTT_US);	/* 6 s > 5 s */
	bool seen = false;

	l4s_keys();
	l4s_env(&e, true);
	for (i = 0; i < rounds; i++) {
		env_round(&e, BDP_PKTS, RTT_US + 100);	/* never a new min */
		seen |= e.b->mode == BBR_PROBE_RTT;
	}
	ASSERT_FALSE(seen);
	l4s_env(&e, false);				/* fallback: BBRv3's */
	for (i = 0; i < rounds && !seen; i++) {
		env_round(&e, BDP_PKTS, RTT_US + 100);
		seen |= e.b->mode == BBR_PROBE_RTT;
	}
	ASSERT_TRUE(seen);
}
