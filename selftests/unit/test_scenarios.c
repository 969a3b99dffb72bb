// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Scenario tests: the core driving flows through the packet-level
 * bottleneck model of sim.c. These are the figures docs/bbr3.md quotes.
 */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "sim.h"

#define NS_PER_SEC	1000000000ull
#define NS_PER_MS	1000000ull
#define RATE_BPS	100000000ull	/* 100 Mbit/s */
#define BASE_RTT_NS	(20 * NS_PER_MS)
/* packets in one BDP: 100 Mbit/s x 20 ms / 1500 B */
#define BDP_PKTS	((u32)(RATE_BPS / 8 * BASE_RTT_NS / NS_PER_SEC / SIM_WIRE_BYTES))

static struct sim_result *new_result(void)
{
	return calloc(1, sizeof(struct sim_result));
}

/* What a single-flow run measured over its steady state. */
struct single_flow {
	double util;		/* goodput / link rate, 2-22 s */
	double queue_bdp;	/* time-averaged queue, 2-22 s */
	u32 max_queue_pkts;
	u64 drops;
	u32 mode, min_rtt_us, probe_rtts;
};

/* One flow, 2 BDP of buffer, 22 s; steady state is the 20 s after
 * STARTUP. Returns 0, or -1 if the model could not run. */
static int run_single_flow(struct single_flow *out)
{
	struct sim_cfg cfg = {
		.rate_bps = RATE_BPS,
		.buffer_pkts = 2 * BDP_PKTS,
		.duration_ns = 22 * NS_PER_SEC,
		.nflows = 1,
		.flow = { { .start_ns = 0, .base_rtt_ns = BASE_RTT_NS } },
	};
	struct sim_result *res = new_result();

	if (!res)
		return -1;
	res->measure_from_ns = 2 * NS_PER_SEC;
	if (sim_run(&cfg, res)) {
		free(res);
		return -1;
	}
	out->util = sim_goodput_bps(res, 0, 2 * NS_PER_SEC, 22 * NS_PER_SEC) / RATE_BPS;
	out->queue_bdp = res->queue_pkt_ns / res->queue_time_ns / BDP_PKTS;
	out->max_queue_pkts = res->queue_max_pkts;
	out->drops = res->drops;
	out->mode = res->final_mode[0];
	out->min_rtt_us = res->final_min_rtt_us[0];
	out->probe_rtts = res->probe_rtt_entries[0];
	free(res);
	return 0;
}

/* One flow, 2 BDP of buffer: BBR fills the pipe without keeping a queue. */
TEST(scenario_single_flow_utilisation_and_standing_queue)
{
	struct single_flow r;

	ASSERT_EQ(run_single_flow(&r), 0);
	UNIT_REPORT("single flow 100 Mbit/s 20 ms 2 BDP, 2-22 s: utilisation %.4f, mean queue %.3f BDP, max queue %u pkts, drops %llu, PROBE_RTT entries %u",
		    r.util, r.queue_bdp, r.max_queue_pkts,
		    (unsigned long long)r.drops, r.probe_rtts);
	/* The ceiling on an ideal path is ~97 %: pacing is 1 % below bw and
	 * each PROBE_RTT halves the rate for ~0.2 s every ~5.2 s (~2 %). */
	ASSERT_GE(r.util * 1000, 965);
	ASSERT_LT(r.queue_bdp * 1000, 250);
	ASSERT_TRUE(r.mode == BBR_PROBE_BW || r.mode == BBR_PROBE_RTT);
	/* min_rtt converged on the propagation delay (+ one packet time) */
	ASSERT_LE(r.min_rtt_us, BASE_RTT_NS / 1000 + 200);
	/* PROBE_RTT every ~5.2 s when no lower RTT shows up: 4 in 22 s */
	ASSERT_GE(r.probe_rtts, 3);
	ASSERT_LE(r.probe_rtts, 5);
}

/* Between PROBE_RTTs (here: PROBE_RTT off) PROBE_BW keeps the pipe full. */
TEST(scenario_single_flow_probe_bw_utilisation)
{
	struct single_flow r;

	bbr_test_params.probe_rtt_mode_ms = 0;
	ASSERT_EQ(run_single_flow(&r), 0);
	UNIT_REPORT("single flow, PROBE_BW only, 2-22 s: utilisation %.4f, mean queue %.3f BDP",
		    r.util, r.queue_bdp);
	ASSERT_GE(r.util * 1000, 980);
	ASSERT_LT(r.queue_bdp * 1000, 250);
	ASSERT_EQ(r.probe_rtts, 0);
}

/*
 * Two flows, the second starting 1 s later. The BBRv3 reference (either
 * generation, fed exact inputs) converges slowly here: the early flow's
 * max-bw filter keeps the peaks it saw while the late one backed off, and
 * only PROBE_UP moves the split, a little per 2-3 s cycle (63.9 / 34.9
 * Mbit/s over 10-30 s, Jain 0.92). What it does promise: the link stays
 * full and the late flow is not starved.
 */
TEST(scenario_two_flows_share_like_the_reference)
{
	struct sim_cfg cfg = {
		.rate_bps = RATE_BPS,
		.buffer_pkts = 2 * BDP_PKTS,
		.duration_ns = 30 * NS_PER_SEC,
		.nflows = 2,
		.flow = {
			{ .start_ns = 0, .base_rtt_ns = BASE_RTT_NS },
			{ .start_ns = 1 * NS_PER_SEC, .base_rtt_ns = BASE_RTT_NS },
		},
	};
	struct sim_result *res = new_result();
	u64 t, converged_ns = 0;
	double jain, util;

	ASSERT_TRUE(res);
	res->measure_from_ns = 10 * NS_PER_SEC;
	if (sim_run(&cfg, res)) {
		free(res);
		ASSERT_TRUE(0);
	}
	/* convergence: the first second from which every later 1 s window
	 * has Jain's index >= 0.9 */
	for (t = 29 * NS_PER_SEC; t >= 1 * NS_PER_SEC; t -= NS_PER_SEC) {
		if (sim_jain(res, 2, t, t + NS_PER_SEC) < 0.9)
			break;
		converged_ns = t;
	}
	jain = sim_jain(res, 2, 10 * NS_PER_SEC, 30 * NS_PER_SEC);
	util = (sim_goodput_bps(res, 0, 10 * NS_PER_SEC, 30 * NS_PER_SEC) +
		sim_goodput_bps(res, 1, 10 * NS_PER_SEC, 30 * NS_PER_SEC)) / RATE_BPS;
	UNIT_REPORT("two flows, 2nd at 1 s: converged %.1f s after it started, Jain(10-30 s) %.3f, utilisation %.4f, flow goodput %.1f / %.1f Mbit/s, drops %llu",
		    converged_ns ? (double)(converged_ns - NS_PER_SEC) / NS_PER_SEC : -1.0,
		    jain, util,
		    sim_goodput_bps(res, 0, 10 * NS_PER_SEC, 30 * NS_PER_SEC) / 1e6,
		    sim_goodput_bps(res, 1, 10 * NS_PER_SEC, 30 * NS_PER_SEC) / 1e6,
		    (unsigned long long)res->drops);
	free(res);
	ASSERT_GE(jain * 1000, 900);
	ASSERT_GE(util * 1000, 950);
}

/*
 * The "beyond v3" profile (v3plus, include/bbr_params.h) on the paths
 * where the reference falls short, 50 Mbit/s, 40 ms: two flows in 2 BDP,
 * the second 1 s late (reference: per-second Jain over 10-30 s ~0.83), and
 * one flow at 1 % random loss in 1 BDP (reference: ~0.75 utilisation).
 */
TEST(scenario_v3plus_converges_and_tolerates_random_loss)
{
	const u64 bdp = 50000000ull / 8 * 40 / 1000 / SIM_WIRE_BYTES;
	struct sim_cfg cfg = {
		.rate_bps = 50000000ull,
		.buffer_pkts = (u32)(2 * bdp),
		.duration_ns = 30 * NS_PER_SEC,
		.nflows = 2,
		.flow = {
			{ .start_ns = 0, .base_rtt_ns = 40 * NS_PER_MS },
			{ .start_ns = 1 * NS_PER_SEC, .base_rtt_ns = 40 * NS_PER_MS },
		},
	};
	struct sim_result *res = new_result();
	double jain = 0, util;
	u64 t;

	ASSERT_TRUE(res);
	bbr_params_set_profile(&bbr_test_params, BBR_PROFILE_v3plus);
	res->measure_from_ns = 10 * NS_PER_SEC;
	if (sim_run(&cfg, res)) {
		free(res);
		ASSERT_TRUE(0);
	}
	for (t = 10; t < 30; t++)
		jain += sim_jain(res, 2, t * NS_PER_SEC, (t + 1) * NS_PER_SEC) / 20;

	memset(res, 0, sizeof(*res));
	cfg.buffer_pkts = (u32)bdp;
	cfg.nflows = 1;
	cfg.loss_ppm = 10000;
	res->measure_from_ns = 10 * NS_PER_SEC;
	if (sim_run(&cfg, res)) {
		free(res);
		ASSERT_TRUE(0);
	}
	util = sim_goodput_bps(res, 0, 10 * NS_PER_SEC, 30 * NS_PER_SEC) / 50e6;
	UNIT_REPORT("v3plus: two flows 2 BDP, 2nd at 1 s: per-second Jain(10-30 s) %.3f; 1 %% random loss, 1 BDP: utilisation %.3f",
		    jain, util);
	free(res);
	/* 20 seeds: mean 0.968, range 0.903..0.985; reference mean 0.834 */
	ASSERT_GE(jain * 1000, 930);
	ASSERT_GE(util * 1000, 900);
}

/* Per-second Jain over [from_s, to_s): its mean and lowest second. */
static void jain_per_second(const struct sim_result *res, int nflows,
			    u32 from_s, u32 to_s, double *mean, double *low)
{
	u32 t;

	*mean = 0;
	*low = 1;
	for (t = from_s; t < to_s; t++) {
		double j = sim_jain(res, nflows, t * NS_PER_SEC, (t + 1) * NS_PER_SEC);

		*mean += j / (to_s - from_s);
		if (j < *low)
			*low = j;
	}
}

/*
 * Regression guards of the v3plus profile on the long horizons where the
 * reference is weakest (50 Mbit/s, 40 ms): four flows in 100 BDP, two of
 * them 1 s late (reference: Jain ~0.85, lowest second ~0.79), 3 % random
 * loss (reference: ~0.19 utilisation), and a 20 ms flow beside an 80 ms
 * one in 2 BDP (reference: the 20 ms flow gets half of the other's rate).
 * Each run prints the reference's figure beside v3plus's.
 */
static int run_v3plus_guard(u32 profile, int which, double out[2])
{
	const u64 bdp = 50000000ull / 8 * 40 / 1000 / SIM_WIRE_BYTES;
	struct sim_cfg cfg = {
		.rate_bps = 50000000ull,
		.duration_ns = 30 * NS_PER_SEC,
		.flow = {
			{ .base_rtt_ns = 40 * NS_PER_MS },
			{ .base_rtt_ns = 40 * NS_PER_MS },
			{ .start_ns = NS_PER_SEC, .base_rtt_ns = 40 * NS_PER_MS },
			{ .start_ns = NS_PER_SEC, .base_rtt_ns = 40 * NS_PER_MS },
		},
	};
	struct sim_result *res = new_result();
	const struct bbr_params ref = BBR_PARAMS_DEFAULT;

	if (!res)
		return -1;
	bbr_test_params = ref;
	bbr_params_set_profile(&bbr_test_params, profile);
	res->measure_from_ns = 10 * NS_PER_SEC;
	if (which == 0) {		/* 4 flows, 100 BDP */
		cfg.buffer_pkts = (u32)(100 * bdp);
		cfg.nflows = 4;
	} else if (which == 1) {	/* 3 % random loss, 1 BDP */
		cfg.buffer_pkts = (u32)bdp;
		cfg.nflows = 1;
		cfg.loss_ppm = 30000;
	} else {			/* 20 ms beside 80 ms, 2 BDP */
		cfg.buffer_pkts = (u32)(2 * bdp);
		cfg.nflows = 2;
		cfg.flow[0].base_rtt_ns = 20 * NS_PER_MS;
		cfg.flow[1].base_rtt_ns = 80 * NS_PER_MS;
	}
	if (sim_run(&cfg, res)) {
		free(res);
		return -1;
	}
	if (which == 0) {
		jain_per_second(res, 4, 11, 30, &out[0], &out[1]);
	} else if (which == 1) {
		out[0] = sim_goodput_bps(res, 0, 10 * NS_PER_SEC, 30 * NS_PER_SEC) / 50e6;
	} else {
		out[0] = sim_jain(res, 2, 10 * NS_PER_SEC, 30 * NS_PER_SEC);
		out[1] = sim_goodput_bps(res, 0, 10 * NS_PER_SEC, 30 * NS_PER_SEC) /
			 sim_goodput_bps(res, 1, 10 * NS_PER_SEC, 30 * NS_PER_SEC);
	}
	free(res);
	return 0;
}

TEST(scenario_v3plus_long_horizon_guards)
{
	double v3[3][2] = {}, plus[3][2] = {};
	int w;

	for (w = 0; w < 3; w++) {
		ASSERT_EQ(run_v3plus_guard(BBR_PROFILE_v3, w, v3[w]), 0);
		ASSERT_EQ(run_v3plus_guard(BBR_PROFILE_v3plus, w, plus[w]), 0);
	}
	UNIT_REPORT("4 flows 100 BDP: Jain mean/lowest s v3 %.3f/%.3f, v3plus %.3f/%.3f",
		    v3[0][0], v3[0][1], plus[0][0], plus[0][1]);
	UNIT_REPORT("3 %% random loss: utilisation v3 %.3f, v3plus %.3f", v3[1][0], plus[1][0]);
	UNIT_REPORT("20 vs 80 ms: Jain v3 %.3f, v3plus %.3f; rate 20 ms / 80 ms v3 %.2f, v3plus %.2f",
		    v3[2][0], plus[2][0], v3[2][1], plus[2][1]);
	/* 20 seeds: Jain mean 0.971 [0.938..0.986], lowest 0.939 [0.907..0.967] */
	ASSERT_GE(plus[0][0] * 1000, 950);
	ASSERT_GE(plus[0][1] * 1000, 880);
	/* 20 seeds: 0.779 [0.739..0.813] */
	ASSERT_GE(plus[1][0] * 1000, 700);
	/* 20 seeds: 0.991 [0.919..1.000]; rate ratio 0.94 */
	ASSERT_GE(plus[2][0] * 1000, 950);
	ASSERT_GE(plus[2][1] * 100, 75);
}

/*
 * v3plus's random-loss test on a path whose RTT samples carry host noise
 * (docs/bbr3.md, "Beyond v3"). 50 Mbit/s, 40 ms:
 *  - one flow in 1 BDP at 3 % random loss, each RTT sample up to 2 ms late
 *    (uniform; the lab's loaded host puts samples ~1.5 ms above min_rtt):
 *    v3plus learns the noise level (rtt_noise_us) from the rounds whose
 *    queue drained and keeps >= 0.80 of the link (with the fixed 1.25 ms
 *    floor alone it kept 0.49; the reference 0.19);
 *  - four flows in a buffer of 0.1 BDP (4 ms, below the 5 ms allowance),
 *    which they keep partly full: that standing queue must not pass for
 *    noise, the drops still count as congestion (without the drained-round
 *    rule: retransmits 7.3 %, Jain 0.68).
 * Three seeds each; every run prints its figures beside the reference's.
 */
static u32 noise_seen_us;

static void note_noise(int flow, u64 now_ns, const struct bbr3 *b,
		       const struct bbr_sock *sk)
{
	(void)now_ns;
	(void)sk;
	if (flow == 0)
		noise_seen_us = b->rtt_noise_us;
}

static int run_noisy_loss_or_overflow(u32 profile, int overflow, u32 seed,
				      double out[2])
{
	const u64 bdp = 50000000ull / 8 * 40 / 1000 / SIM_WIRE_BYTES;
	const u64 dur = (overflow ? 20 : 30) * NS_PER_SEC;
	struct sim_cfg cfg = {
		.rate_bps = 50000000ull,
		.duration_ns = dur,
		.loss_seed = seed * 0x9E3779B1u + 12345,
		.on_ack = note_noise,
	};
	struct sim_result *res = new_result();
	const struct bbr_params ref = BBR_PARAMS_DEFAULT;
	double delivered = 0, rtx = 0;
	int f, b;

	if (!res)
		return -1;
	unit_prandom_seed(seed * 7919 + 1);
	bbr_test_params = ref;
	bbr_params_set_profile(&bbr_test_params, profile);
	noise_seen_us = 0;
	if (overflow) {
		cfg.buffer_pkts = (u32)(bdp / 10);
		cfg.nflows = 4;
		res->measure_from_ns = 5 * NS_PER_SEC;
	} else {
		cfg.buffer_pkts = (u32)bdp;
		cfg.nflows = 1;
		cfg.loss_ppm = 30000;
		cfg.core_rtt_noise = 1;
		cfg.net_rtt_jitter_us = 2000;
		res->measure_from_ns = 10 * NS_PER_SEC;
	}
	for (f = 0; f < cfg.nflows; f++)
		cfg.flow[f].base_rtt_ns = 40 * NS_PER_MS;
	if (sim_run(&cfg, res)) {
		free(res);
		return -1;
	}
	if (overflow) {
		for (f = 0; f < 4; f++) {
			rtx += res->retransmits[f];
			for (b = 0; b < res->nbins; b++)
				delivered += res->bin_pkts[f][b];
		}
		out[0] = delivered ? 100.0 * rtx / delivered : 100;
		jain_per_second(res, 4, 5, 20, &out[1], &(double){0});
	} else {
		out[0] = sim_goodput_bps(res, 0, 10 * NS_PER_SEC, dur) / 50e6;
		out[1] = noise_seen_us;
	}
	free(res);
	return 0;
}

TEST(scenario_v3plus_random_loss_under_rtt_noise_still_cuts_on_overflow)
{
	double v3[2], plus[2], util = 0, rtx = 0, jain = 0;
	u32 seed;

	for (seed = 1; seed <= 3; seed++) {
		ASSERT_EQ(run_noisy_loss_or_overflow(BBR_PROFILE_v3, 0, seed, v3), 0);
		ASSERT_EQ(run_noisy_loss_or_overflow(BBR_PROFILE_v3plus, 0, seed, plus), 0);
		UNIT_REPORT("seed %u, 3 %% loss, RTT noise 0-2 ms: utilisation v3 %.3f, v3plus %.3f (noise learned %.0f us: the allowance is at least %.0f us, the fixed floor 1250 us)",
			    seed, v3[0], plus[0], plus[1], 2 * plus[1]);
		util += plus[0] / 3;
		ASSERT_GE(plus[0] * 1000, 800);
		/* the noise level: near the 2 ms the samples spread over */
		ASSERT_GE(plus[1], 1000);
		ASSERT_LE(plus[1], 2500);
	}
	for (seed = 1; seed <= 3; seed++) {
		ASSERT_EQ(run_noisy_loss_or_overflow(BBR_PROFILE_v3, 1, seed, v3), 0);
		ASSERT_EQ(run_noisy_loss_or_overflow(BBR_PROFILE_v3plus, 1, seed, plus), 0);
		UNIT_REPORT("seed %u, 4 flows in 0.1 BDP: retransmits v3 %.2f %%, v3plus %.2f %%; Jain v3 %.3f, v3plus %.3f",
			    seed, v3[0], plus[0], v3[1], plus[1]);
		rtx += plus[0] / 3;
		jain += plus[1] / 3;
		/* drops that passed as random: 7 % and more */
		ASSERT_LE(plus[0] * 100, 350);
		ASSERT_GE(plus[1] * 1000, 900);
	}
	UNIT_REPORT("v3plus mean: 3 %% loss with noise %.3f of the link; 0.1 BDP retransmits %.2f %%, Jain %.3f",
		    util, rtx, jain);
}
