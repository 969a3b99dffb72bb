// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The two reference generations (parameter `generation`): 2026 (the
 * default, google/bbr branch bbr-v3-2026-09-16-01, tcp_bbr3.c) and 2023
 * (google/bbr v3, tcp_bbr.c). Where they differ: DRAIN, the undo of a
 * spurious loss, and the TSO goal's cap.
 */
#include "unit.h"
#include "bbr_env.h"

#define RTT_US		8192u	/* 2^13 µs: exact bw samples */
#define BDP_PKTS	100u

/* STARTUP ends on a plateau; DRAIN is entered with in flight far above
 * the BDP, which never drains here (the sender keeps it at 3 BDP). */
static void env_to_stuck_drain(struct env *e)
{
	env_to_drain(e, BDP_PKTS, RTT_US);
}

/* 2026: DRAIN paces at 0.5 and ends after more than 3 round starts even
 * if in flight stays above the BDP; 2023 paces at 88/256 and waits. */
TEST(drain_2026_half_gain_and_at_most_three_rounds)
{
	struct env e;
	u32 rounds;

	env_to_stuck_drain(&e);
	ASSERT_EQ(e.b->mode, BBR_DRAIN);
	ASSERT_EQ(e.b->pacing_gain, 128);
	/* the round that entered DRAIN counted: three more end it */
	ASSERT_EQ(e.b->drain_rounds, 1);
	for (rounds = 1; rounds < 10 && e.b->mode == BBR_DRAIN; rounds++)
		env_round(&e, BDP_PKTS, RTT_US);
	ASSERT_EQ(rounds, 4);
	ASSERT_EQ(e.b->drain_rounds, BBR_MAX_DRAIN_ROUNDS + 1);
	ASSERT_EQ(e.b->mode, BBR_PROBE_BW);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_DOWN);

	bbr_test_params.generation = BBR_GEN_2023;
	env_to_stuck_drain(&e);
	ASSERT_EQ(e.b->pacing_gain, 88);
	for (rounds = 0; rounds < 10; rounds++)
		env_round(&e, BDP_PKTS, RTT_US);
	ASSERT_EQ(e.b->mode, BBR_DRAIN);

	/* an explicit drain_gain wins over either generation's */
	bbr_test_params.drain_gain = 100;
	env_to_stuck_drain(&e);
	ASSERT_EQ(e.b->pacing_gain, 100);
}

/* Into PROBE_UP with a probe being evaluated. */
static void env_to_probe_up(struct env *e)
{
	env_to_probe_bw(e, BDP_PKTS, RTT_US);
	e->b->rounds_since_probe = BBR_BW_PROBE_MAX_ROUNDS;
	env_round(e, BDP_PKTS, RTT_US);
	env_round(e, BDP_PKTS, RTT_US);
}

/* One lost packet through the per-lost-packet entry point, with the
 * send-time values a BBRv3 kernel would have. */
static void env_lose(struct env *e, u32 tx_in_flight, s32 lost)
{
	struct bbr_lost_skb l = {
		.pcount = 1, .has_tx = 1,
		.tx_in_flight = tx_in_flight, .lost = lost,
	};

	e->sk.lost++;
	bbr_core_skb_lost(&e->sks, &e->sk, &l);
}

/*
 * 2026 saves the undo state at the first lost packet of an episode, before
 * that loss cuts anything; ssthresh() (called after the marking) no longer
 * saves, and the episode ends when the state drops below Recovery.
 */
TEST(undo_state_saved_at_first_loss_2026)
{
	struct env e;
	u32 hi;

	env_to_probe_up(&e);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_UP);
	hi = e.b->inflight_hi;
	e.sk.snd_cwnd = 150;
	ASSERT_EQ(e.b->loss_yet_in_recovery, 0);
	env_lose(&e, 100, 10);			/* 10 % loss: too high */
	ASSERT_EQ(e.b->loss_yet_in_recovery, 1);
	ASSERT_EQ(e.b->undo_inflight_hi, hi);	/* saved before the cut */
	ASSERT_EQ(e.b->prior_cwnd, 150);
	ASSERT_NE(e.b->inflight_hi, hi);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_DOWN);
	ASSERT_EQ(e.b->undo_state, BBR_UNDO_PROBE_BW_UP);
	ASSERT_EQ(e.b->last_lost, e.sk.lost);	/* accounted: no double count */

	/* later losses of the episode, and ssthresh, save nothing */
	e.b->inflight_hi = 77;
	env_lose(&e, 100, 1);
	e.sk.ca_state = BBR_CA_RECOVERY;
	bbr_core_ssthresh(e.b, &e.sk);
	bbr_core_set_state(&e.sks, &e.sk, BBR_CA_RECOVERY);
	ASSERT_EQ(e.b->undo_inflight_hi, hi);
	/* back to Open: the next loss starts a new episode */
	bbr_core_set_state(&e.sks, &e.sk, BBR_CA_OPEN);
	ASSERT_NE(e.b->loss_yet_in_recovery, 1);	/* over (closed at cong_control) */
	env_lose(&e, 100, 1);
	ASSERT_EQ(e.b->undo_inflight_hi, 77);
}

/* 2026 undo: bounds back, the probe the loss ended is re-entered through
 * REFILL, cwnd at least the saved one, and the pipeline runs once (pacing
 * and cwnd follow the restored model). */
TEST(undo_returns_to_refill_after_spurious_probe_loss_2026)
{
	struct env e;
	u32 cwnd;

	env_to_probe_up(&e);
	e.sk.snd_cwnd = 150;
	env_lose(&e, 100, 10);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_DOWN);
	e.sk.snd_cwnd = 90;
	e.sk.pacing_rate = 1;
	cwnd = bbr_core_undo_cwnd(e.b, &e.sk);
	ASSERT_EQ(e.b->mode, BBR_PROBE_BW);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_REFILL);
	ASSERT_EQ(e.b->undo_state, BBR_UNDO_NONE);
	ASSERT_EQ(e.b->inflight_hi, BBR_UNSET);	/* unset before the probe */
	ASSERT_GE(cwnd, 150);
	ASSERT_EQ(cwnd, e.sk.snd_cwnd);
	ASSERT_GT(e.sk.pacing_rate, 1);		/* the pipeline ran */
	ASSERT_EQ(e.b->loss_in_round, 0);
	ASSERT_EQ(e.b->loss_round_delivered, e.sk.delivered);
}

/* A loss-based STARTUP exit that proves spurious returns to STARTUP. */
TEST(undo_returns_to_startup_after_spurious_startup_exit_2026)
{
	struct env e;
	u32 i;

	env_init(&e, 10);
	e.max_inflight = 1000;
	env_round(&e, 10, RTT_US);
	env_round(&e, 20, RTT_US);
	e.sk.ca_state = BBR_CA_RECOVERY;
	/* six loss events in a round, 10 % lost: STARTUP ends on loss */
	for (i = 0; i < 6; i++)
		env_ack_full(&e, 5, e.sk.delivered - 30, 100, RTT_US, RTT_US, 1);
	env_round(&e, 40, RTT_US);
	ASSERT_EQ(e.b->full_bw_reached, 1);
	ASSERT_NE(e.b->mode, BBR_STARTUP);
	ASSERT_EQ(e.b->undo_state, BBR_UNDO_STARTUP);
	bbr_core_undo_cwnd(e.b, &e.sk);
	ASSERT_EQ(e.b->mode, BBR_STARTUP);
	ASSERT_EQ(e.b->full_bw_reached, 0);
	ASSERT_EQ(e.b->undo_state, BBR_UNDO_NONE);
}

/* 2023 keeps its undo: state saved in ssthresh, no phase change, the saved
 * cwnd returned as it is. */
TEST(undo_2023_keeps_phase_and_returns_saved_cwnd)
{
	struct env e;

	bbr_test_params.generation = BBR_GEN_2023;
	env_to_probe_up(&e);
	e.sk.snd_cwnd = 150;
	env_lose(&e, 100, 10);
	ASSERT_EQ(e.b->loss_yet_in_recovery, 0);
	ASSERT_EQ(e.b->undo_state, BBR_UNDO_NONE);
	bbr_core_ssthresh(e.b, &e.sk);
	ASSERT_EQ(e.b->prior_cwnd, 150);
	e.sk.snd_cwnd = 90;
	ASSERT_EQ(bbr_core_undo_cwnd(e.b, &e.sk), 150);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_DOWN);
}

/* Without a lost-packet hook, the 2026 save happens in ssthresh, which the
 * stack calls after marking and before an RTO resets cwnd. */
TEST(undo_state_saved_in_ssthresh_when_no_hook_reported_2026)
{
	struct env e;

	env_to_probe_bw(&e, BDP_PKTS, RTT_US);
	e.sk.snd_cwnd = 200;
	bbr_core_ssthresh(e.b, &e.sk);		/* nothing marked: no save */
	ASSERT_EQ(e.b->loss_yet_in_recovery, 0);
	e.sk.lost += 50;			/* the RTO marked them */
	bbr_core_ssthresh(e.b, &e.sk);
	ASSERT_EQ(e.b->loss_yet_in_recovery, 1);
	ASSERT_EQ(e.b->prior_cwnd, 200);
}

/* The TSO goal: 2026 caps the byte budget at gso_max_size, 2023 at
 * gso_max_size - 1 - MAX_TCP_HEADER; for mss 1452 that is 45 vs 44. */
TEST(tso_goal_cap_per_generation)
{
	struct env e;

	env_init(&e, 10);
	e.sk.pacing_rate = 1000000000ull;	/* 8 Gbit/s: the cap binds */
	e.b->min_rtt_us = 100;
	ASSERT_EQ(bbr_tso_segs_generic(e.b, &e.sk, 1452, 65536), 45);
	bbr_test_params.generation = BBR_GEN_2023;
	ASSERT_EQ(bbr_tso_segs_generic(e.b, &e.sk, 1452, 65536), 44);
	/* 1448 (the usual): the same in both */
	ASSERT_EQ(bbr_tso_segs_generic(e.b, &e.sk, 1448, 65536), 45);
}
