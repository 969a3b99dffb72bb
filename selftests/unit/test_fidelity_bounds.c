// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The send records' blind spot, bounded: a delivered packet sent before
 * the oldest of the 15 records (each loss opens one, so at a few losses per
 * round trip the ring spans less than a round). bbr_tx_lookup() then
 * rebuilds the packet's tx_in_flight from the oldest record less the new
 * data sent in between, and its tp->lost at send by carrying the ring's
 * loss pace (per packet delivered) back to it. These tests measure, over
 * those lookups only, how far the rebuilt values are from the exact ones a
 * BBRv3 kernel keeps in the skb, and whether the "too high" verdict is the
 * same, at the reference's 2 % and at v3plus's 15 % random-loss cap, on the
 * paths where the ring falls short: a shallow buffer, two flows of
 * different RTTs, and 24 % random loss while app-limited.
 */
#include <math.h>
#include <string.h>

#include "unit.h"
#include "sim.h"

#define NS_PER_SEC	1000000000ull
#define NS_PER_MS	1000000ull

struct fb_scenario {
	const char *name;
	u64 rate_bps;
	u64 rtt_ns[2];		/* per flow; [1] = 0: one flow */
	u32 buffer_pkts;
	u32 loss_ppm;
	u64 app_rate_bps;	/* 0: bulk */
	u64 duration_ns;
	u64 from_ns;		/* the loss and the application rate start then
				 * (0: from the start) */
};

static const struct fb_scenario fb_scenarios[] = {
	/* 50 Mbit/s, 40 ms: BDP 166; half of it as buffer */
	{ "shallow, 0.5 BDP", 50000000ull, { 40 * NS_PER_MS, 0 }, 83, 0, 0,
	  20 * NS_PER_SEC },
	{ "2 flows, 20 and 80 ms, 1 BDP of 80 ms", 50000000ull,
	  { 20 * NS_PER_MS, 80 * NS_PER_MS }, 333, 0, 0, 20 * NS_PER_SEC },
	/* from 3 s, in PROBE_BW (as the draft's PROBE_UP case) */
	{ "24 % random loss, app-limited at 50 of 100 Mbit/s, 80 ms",
	  100000000ull, { 80 * NS_PER_MS, 0 }, 1333, 240000, 50000000ull,
	  8 * NS_PER_SEC, 3 * NS_PER_SEC },
};
#define FB_N	(sizeof(fb_scenarios) / sizeof(fb_scenarios[0]))

/*
 * Bounds over the inexact lookups. Measured: mean lost rebuilt over exact
 * x1.04-1.16 (the oldest record as it is: x0.18 on the shallow path, so a
 * sample's loss rate read a sixth of the real one), tx_in_flight
 * x0.96-0.99 (x1.36); the "too high" verdict the same at 2 % on all of
 * them, at 15 % on 0.94 of the decisive ones at 24 % loss but only 0.38-0.59
 * on the two paths where the losses come in a burst a round after the
 * ring's span: the ring's loss pace is not that of the round before it.
 */
#define FB_LOST_RATIO_MIN_PERMILLE	800
#define FB_LOST_RATIO_MAX_PERMILLE	1300
#define FB_INFLIGHT_RATIO_MIN_PERMILLE	900
#define FB_INFLIGHT_RATIO_MAX_PERMILLE	1100
#define FB_AGREE_2PCT_MIN_PERMILLE	990
#define FB_AGREE_15PCT_MIN_PERMILLE	300
#define FB_AGREE_15PCT_STEADY_MIN_PERMILLE	900	/* the 24 % case */

static struct sim_cfg fb_cfg;
static struct sim_result fb_res;
static const struct fb_scenario *fb_cur;
static int fb_started;

static void fb_on_ack(int flow, u64 now, const struct bbr3 *b,
		      const struct bbr_sock *sk)
{
	(void)b; (void)sk;
	if (fb_started || now < fb_cur->from_ns)
		return;
	fb_started = 1;
	sim_set_loss_ppm(fb_cur->loss_ppm);
	if (fb_cur->app_rate_bps)
		sim_set_app_rate(flow, fb_cur->app_rate_bps);
}

static void fb_run(const struct fb_scenario *sc, u32 thresh)
{
	struct sim_cfg *cfg = memset(&fb_cfg, 0, sizeof(fb_cfg));
	int f;

	memset(&fb_res, 0, sizeof(fb_res));
	unit_prandom_seed(1);
	cfg->rate_bps = sc->rate_bps;
	cfg->buffer_pkts = sc->buffer_pkts;
	if (sc->from_ns) {
		fb_cur = sc;
		fb_started = 0;
		cfg->on_ack = fb_on_ack;
	} else {
		cfg->loss_ppm = sc->loss_ppm;
	}
	cfg->duration_ns = sc->duration_ns;
	cfg->fid_loss_thresh = thresh;
	cfg->nflows = sc->rtt_ns[1] ? 2 : 1;
	for (f = 0; f < cfg->nflows; f++) {
		cfg->flow[f].base_rtt_ns = sc->rtt_ns[f];
		if (!sc->from_ns)
			cfg->flow[f].app_rate_bps = sc->app_rate_bps;
	}
	sim_run(cfg, &fb_res);
}

TEST(fidelity_bounds_of_packets_older_than_every_record)
{
	/* the reference's loss_thresh, and v3plus's random_loss_max */
	static const u32 thresholds[] = { BBR_UNIT * 2 / 100, BBR_UNIT * 15 / 100 };
	u32 i, k;

	for (i = 0; i < FB_N; i++) {
		for (k = 0; k < 2; k++) {
			const struct sim_fidelity *q = &fb_res.fid;
			double lost_ratio, tif_ratio, agree;

			fb_run(&fb_scenarios[i], thresholds[k]);
			lost_ratio = q->inexact_lost_exact > 0 ?
				     q->inexact_lost_recon / q->inexact_lost_exact : 0;
			tif_ratio = q->inexact_inflight_exact > 0 ?
				    q->inexact_inflight_recon / q->inexact_inflight_exact : 0;
			agree = sim_ratio(q->inexact_agree, q->inexact_decisive);
			UNIT_REPORT("%s: %llu of %llu samples older than every record: mean lost exact %.2f / rebuilt %.2f (x%.3f), tx_in_flight %.1f / %.1f (x%.3f); \"too high\" at %.0f %%: %llu decisive, agree %.3f (lost x0.8-1.3, tx_in_flight x0.9-1.1, agree >= 0.99 at 2 %%, 0.9 / 0.3 at 15 %%)",
				    fb_scenarios[i].name,
				    (unsigned long long)q->inexact_lookups,
				    (unsigned long long)q->samples,
				    q->inexact_lookups ? q->inexact_lost_exact / q->inexact_lookups : 0,
				    q->inexact_lookups ? q->inexact_lost_recon / q->inexact_lookups : 0,
				    lost_ratio,
				    q->inexact_lookups ? q->inexact_inflight_exact / q->inexact_lookups : 0,
				    q->inexact_lookups ? q->inexact_inflight_recon / q->inexact_lookups : 0,
				    tif_ratio, thresholds[k] * 100.0 / BBR_UNIT,
				    (unsigned long long)q->inexact_decisive, agree);
			ASSERT_GT(q->inexact_lookups, 100);
			ASSERT_GE(lost_ratio * 1000, FB_LOST_RATIO_MIN_PERMILLE);
			ASSERT_LE(lost_ratio * 1000, FB_LOST_RATIO_MAX_PERMILLE);
			ASSERT_GE(tif_ratio * 1000, FB_INFLIGHT_RATIO_MIN_PERMILLE);
			ASSERT_LE(tif_ratio * 1000, FB_INFLIGHT_RATIO_MAX_PERMILLE);
			ASSERT_GE(agree * 1000, k == 0 ? FB_AGREE_2PCT_MIN_PERMILLE :
					fb_scenarios[i].loss_ppm ? FB_AGREE_15PCT_STEADY_MIN_PERMILLE :
					FB_AGREE_15PCT_MIN_PERMILLE);
		}
	}
}
