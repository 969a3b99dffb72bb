// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Constants, fixed-point formulas and the STARTUP/DRAIN state machine. */
#include "unit.h"
#include "bbr_env.h"

/* 2^13 µs: bw samples of whole packets per RTT are exact in BW_UNIT. */
#define RTT_US 8192

/* The reference stores truncated integers; so must we. */
TEST(constants_match_reference_integers)
{
	struct bbr_params p = BBR_PARAMS_DEFAULT;

	ASSERT_EQ(p.startup_pacing_gain, 710);
	ASSERT_EQ(p.startup_cwnd_gain, 512);
	ASSERT_EQ(p.drain_gain, 0);		/* the generation's: */
	ASSERT_EQ(BBR_DRAIN_GAIN_2023, 88);	/* 1/2.885 */
	ASSERT_EQ(BBR_DRAIN_GAIN_2026, 128);	/* 0.5 */
	ASSERT_EQ(BBR_MAX_DRAIN_ROUNDS, 3);
	ASSERT_EQ(p.generation, BBR_GEN_2026);
	ASSERT_EQ(p.cwnd_gain, 512);
	ASSERT_EQ(p.probe_up_pacing_gain, 320);
	ASSERT_EQ(p.probe_down_pacing_gain, 232);
	ASSERT_EQ(p.beta, 76);
	ASSERT_EQ(p.loss_thresh, 5);
	ASSERT_EQ(p.full_loss_cnt, 6);
	ASSERT_EQ(p.ecn_thresh, 128);
	ASSERT_EQ(p.ecn_factor, 85);
	ASSERT_EQ(p.ecn_alpha_gain, 16);
	ASSERT_EQ(p.inflight_headroom, 38);
	ASSERT_EQ(p.probe_rtt_mode_ms, 200);
	ASSERT_EQ(p.probe_rtt_win_ms, 5000);
	ASSERT_EQ(p.min_rtt_win_sec, 10);
	ASSERT_EQ(BBR_FULL_BW_THRESH, 320);
	ASSERT_EQ(BBR_FULL_BW_CNT, 3);
	/* The kernel allocates sk_storage as a 72-byte element header plus
	 * the value: up to 440 B of value stays in a 512 B slab object. */
	ASSERT_LE(sizeof(struct bbr3_sk), 440);
}

TEST(init_state)
{
	struct env e;

	env_init(&e, 10);
	ASSERT_EQ(e.b->mode, BBR_STARTUP);
	ASSERT_EQ(e.b->pacing_gain, 710);
	ASSERT_EQ(e.b->cwnd_gain, 512);
	ASSERT_EQ(e.b->min_rtt_us, BBR_UNSET);
	ASSERT_EQ(e.b->bw_lo, BBR_UNSET);
	ASSERT_EQ(e.b->inflight_hi, BBR_UNSET);
	ASSERT_EQ(e.b->inflight_lo, BBR_UNSET);
	ASSERT_EQ(e.b->ecn_alpha, BBR_UNIT);
	ASSERT_EQ(e.b->init_cwnd, 10);
	ASSERT_EQ(e.sk.snd_ssthresh, BBR_TCP_INFINITE_SSTHRESH);
	/* No RTT yet: 10 pkts per 1 ms at 2.77x, 1 % margin. */
	ASSERT_EQ(e.sk.pacing_rate,
		  ((((u64)10 * BW_UNIT / 1000) * 1448 * 710 >> 8) * 990000) >> 24);
	ASSERT_EQ(e.b->has_seen_rtt, 0);
}

/* rate = bw * mss * gain * 99 % in bytes/s, within integer rounding. */
TEST(pacing_rate_formula)
{
	struct env e;
	u32 bw = env_bw(1000, 10000);	/* 1000 pkts per 10 ms = 0.1 pkt/us */
	u64 rate;
	double expect = 0.1 * 1448 * 1e6 * 1.25 * 0.99;

	env_init(&e, 10);
	rate = bbr_bw_to_pacing_rate(&e.sk, bw, 320);
	ASSERT_LE(rate, (u64)(expect * 1.0001));
	ASSERT_GE(rate, (u64)(expect * 0.9999));
	/* capped by SO_MAX_PACING_RATE */
	e.sk.max_pacing_rate = 1000000;
	ASSERT_EQ(bbr_bw_to_pacing_rate(&e.sk, bw, 320), 1000000);
	/* never zero */
	ASSERT_EQ(bbr_bw_to_pacing_rate(&e.sk, 0, 320), 1);
}

/* bdp = ceil(bw * min_rtt * gain); cwnd target adds the TSO budget. */
TEST(bdp_and_cwnd_target_formulas)
{
	struct env e;
	u32 bw = (u32)(100 * BW_UNIT / 10000);	/* 100 pkts per 10 ms, truncated */

	env_init(&e, 10);
	ASSERT_EQ(bbr_bdp(e.b, bw, BBR_UNIT), 10);	/* no RTT yet: init_cwnd */
	e.b->min_rtt_us = 10000;
	ASSERT_EQ(bbr_bdp(e.b, bw, BBR_UNIT), 100);
	ASSERT_EQ(bbr_bdp(e.b, bw, 512), 200);
	ASSERT_EQ(bbr_bdp(e.b, bw, 128), 50);
	ASSERT_EQ(bbr_bdp(e.b, bw, 2), 1);		/* rounds up */
	/* quantization budget: >= 3 TSO goals, >= 4, +2 in PROBE_UP */
	e.sk.pacing_rate = 0;
	ASSERT_EQ(bbr_tso_segs_goal(e.b, &e.sk), 2 + 0 * 1);
	ASSERT_EQ(bbr_quantization_budget(e.b, &e.sk, 1), 6 > 4 ? 6 : 4);
	e.b->min_rtt_us = 10000;	/* 10 ms >> 9 = 19: allowance 65536 >> 19 = 0 */
	e.b->mode = BBR_PROBE_BW;
	e.b->cycle_idx = BBR_BW_PROBE_UP;
	ASSERT_EQ(bbr_quantization_budget(e.b, &e.sk, 100), 102);
	e.b->cycle_idx = BBR_BW_PROBE_CRUISE;
	ASSERT_EQ(bbr_quantization_budget(e.b, &e.sk, 100), 100);
	/* 12.5 MB/s >> 10 = 12207 bytes = 8 segments per TSO burst */
	e.sk.pacing_rate = 12500000;
	ASSERT_EQ(bbr_tso_segs_goal(e.b, &e.sk), 12500000 / 1024 / 1448);
}

/* STARTUP grows cwnd by what is ACKed and ends after exactly three rounds
 * with less than 25 % bandwidth growth. */
TEST(startup_exits_after_three_flat_rounds_not_before)
{
	struct env e;
	u32 cwnd_before;

	env_init(&e, 10);
	env_round(&e, 10, RTT_US);
	env_round(&e, 20, RTT_US);
	env_round(&e, 40, RTT_US);
	env_round(&e, 80, RTT_US);
	ASSERT_EQ(e.b->full_bw, env_bw(80, RTT_US));
	ASSERT_EQ(e.b->full_bw_cnt, 0);
	/* 90 < 80 * 1.25: not growing */
	cwnd_before = e.sk.snd_cwnd;
	env_round(&e, 90, RTT_US);
	ASSERT_EQ(e.b->full_bw_cnt, 1);
	ASSERT_EQ(e.sk.snd_cwnd, cwnd_before + 90);	/* still growing by acked */
	env_round(&e, 90, RTT_US);
	ASSERT_EQ(e.b->full_bw_cnt, 2);
	ASSERT_EQ(e.b->mode, BBR_STARTUP);
	ASSERT_EQ(e.b->full_bw_reached, 0);
	env_round(&e, 90, RTT_US);
	ASSERT_EQ(e.b->full_bw_reached, 1);
	ASSERT_EQ(e.b->mode, BBR_DRAIN);
	ASSERT_EQ(e.b->pacing_gain, BBR_DRAIN_GAIN_2026);
	ASSERT_EQ(e.b->cwnd_gain, 512);
	/* ssthresh reports one BDP (90 pkts) */
	ASSERT_EQ(e.sk.snd_ssthresh, 90);
}

/* Growth of 25 % or more restarts the count. */
TEST(startup_growth_resets_plateau_count)
{
	struct env e;

	env_init(&e, 10);
	env_round(&e, 80, RTT_US);
	env_round(&e, 90, RTT_US);
	env_round(&e, 90, RTT_US);
	ASSERT_EQ(e.b->full_bw_cnt, 2);
	env_round(&e, 100, RTT_US);	/* 100 >= 80 * 1.25 */
	ASSERT_EQ(e.b->full_bw_cnt, 0);
	ASSERT_EQ(e.b->full_bw, env_bw(100, RTT_US));
	ASSERT_EQ(e.b->mode, BBR_STARTUP);
}

/* Before the pipe is full, the pacing rate never goes down. */
TEST(startup_pacing_rate_only_increases)
{
	struct env e;
	u64 rate;

	env_init(&e, 10);
	env_round(&e, 80, RTT_US);
	rate = e.sk.pacing_rate;
	ASSERT_GE(rate, bbr_bw_to_pacing_rate(&e.sk, env_bw(80, RTT_US), 710));
	env_round(&e, 10, RTT_US);
	ASSERT_EQ(e.sk.pacing_rate, rate);
}

/* App-limited samples neither count as a plateau nor lower max bw. */
TEST(app_limited_samples_ignored_unless_higher)
{
	struct env e;
	u32 max_bw, cnt;

	env_init(&e, 10);
	env_round(&e, 80, RTT_US);
	max_bw = bbr_max_bw(e.b);
	cnt = e.b->full_bw_cnt;
	/* a low, app-limited sample at a round start */
	e.rs.is_app_limited = 1;
	e.rs.bw = env_bw(20, RTT_US);
	e.rs.interval_us = RTT_US;
	e.rs.acked_sacked = 20;
	bbr_update_congestion_signals(e.b, &e.sk, &e.rs);
	ASSERT_EQ(bbr_max_bw(e.b), max_bw);
	e.b->round_start = 1;
	bbr_check_full_bw_reached(e.b, &e.rs);
	ASSERT_EQ(e.b->full_bw_cnt, cnt);
	/* ...but an app-limited sample above max_bw is taken */
	e.rs.bw = max_bw * 2;
	bbr_update_congestion_signals(e.b, &e.sk, &e.rs);
	ASSERT_EQ(bbr_max_bw(e.b), max_bw * 2);
}

/* DRAIN lasts until in-flight (at the next departure time) is one BDP. */
TEST(drain_ends_when_inflight_reaches_bdp)
{
	struct env e;
	u32 bdp;

	env_init(&e, 10);
	env_round(&e, 80, RTT_US);
	env_round(&e, 90, RTT_US);
	env_round(&e, 90, RTT_US);
	e.max_inflight = 400;
	env_round(&e, 90, RTT_US);
	ASSERT_EQ(e.b->mode, BBR_DRAIN);
	bdp = bbr_inflight(e.b, &e.sk, bbr_max_bw(e.b), BBR_UNIT);
	ASSERT_EQ(bdp, 90);
	/* Still above one BDP in flight: keep draining. */
	env_set_inflight(&e, bdp + 20);
	e.max_inflight = bdp + 20;
	env_round(&e, 10, RTT_US);
	ASSERT_EQ(e.b->mode, BBR_DRAIN);
	/* Down to one BDP: PROBE_BW, starting in DOWN. */
	env_set_inflight(&e, bdp + 1);
	e.max_inflight = bdp;
	env_round(&e, 1, RTT_US);
	ASSERT_EQ(e.b->mode, BBR_PROBE_BW);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_DOWN);
	ASSERT_EQ(e.b->pacing_gain, 232);
	/* DOWN starts a fresh round and a randomized 2-3 s probe wait */
	ASSERT_EQ(e.b->next_rtt_delivered, e.sk.delivered);
	ASSERT_GE(e.b->probe_wait_us, BBR_BW_PROBE_BASE_US);
	ASSERT_LT(e.b->probe_wait_us, BBR_BW_PROBE_BASE_US + BBR_BW_PROBE_RAND_US);
	ASSERT_EQ(e.b->cycle_mstamp_us, e.sk.now_us);
}

/* Three rounds of STARTUP growth, then Recovery: returns the delivered
 * count at which the loss round starts. */
static u32 startup_in_recovery(struct env *e)
{
	env_init(e, 10);
	env_round(e, 10, RTT_US);
	env_round(e, 20, RTT_US);
	env_round(e, 40, RTT_US);
	e->sk.ca_state = BBR_CA_RECOVERY;
	return e->sk.delivered;
}

/* STARTUP ends on loss: >= 6 loss events in a loss round, in Recovery, with
 * loss above 2 %; inflight_hi is seeded with max(BDP, latest delivered). */
TEST(startup_exits_on_excess_loss)
{
	struct env e;
	u32 i, start;

	start = startup_in_recovery(&e);
	/* 6 ACKs, each marking a loss, all in one loss round */
	for (i = 0; i < 6; i++)
		env_ack_full(&e, 5, start, 1000, RTT_US, RTT_US, 1);
	ASSERT_EQ(e.b->mode, BBR_STARTUP);
	ASSERT_EQ(e.b->loss_events_in_round, 6);
	/* the ACK that ends the loss round decides */
	env_ack_full(&e, 5, e.sk.delivered, 1000, RTT_US, RTT_US, 1);
	ASSERT_EQ(e.b->full_bw_reached, 1);
	ASSERT_NE(e.b->mode, BBR_STARTUP);
	ASSERT_GE(e.b->inflight_hi, e.b->inflight_latest);
	ASSERT_GE(e.b->inflight_hi,
		  bbr_inflight(e.b, &e.sk, bbr_max_bw(e.b), BBR_UNIT));
	ASSERT_NE(e.b->inflight_hi, BBR_UNSET);
}

TEST(startup_five_loss_events_are_not_enough)
{
	struct env e;
	u32 i, start;

	start = startup_in_recovery(&e);
	for (i = 0; i < 4; i++)
		env_ack_full(&e, 5, start, 1000, RTT_US, RTT_US, 1);
	env_ack_full(&e, 5, e.sk.delivered, 1000, RTT_US, RTT_US, 1);
	ASSERT_EQ(e.b->mode, BBR_STARTUP);
	ASSERT_EQ(e.b->full_bw_reached, 0);
	ASSERT_EQ(e.b->loss_events_in_round, 0);	/* reset at round end */
}
