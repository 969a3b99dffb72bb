// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Scenario sweeps (convergence, random loss, RTT fairness, ACK aggregation,
 * coexistence with CUBIC): runs the sim
 * (selftests/unit/sim.c) on the goal scenarios with a parameter profile
 * and several seeds, prints per-run and mean/min/max figures.
 *
 *   exp [PROFILE] [name=value ...] SCENARIO[,SCENARIO...] NSEEDS
 *
 * PROFILE (v3, v3plus: include/bbr_params.h) applies that profile and
 * name=value sets a field of the default parameter set (slot 0); slot 1
 * always keeps the reference defaults (for mixed runs).
 *
 * Environment: RATE_MBIT, RTT_MS (the path), LOSS_PPM (random loss on any
 * scenario), JITTER_US / JITTER_EXP_US (uniform / exponential noise on
 * every RTT sample, as a loaded host adds), TRACE=ms, PERSEC.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

struct bbr_params bbr_test_param_sets[BBR_PARAM_SLOTS];

#define NS_PER_SEC	1000000000ull
#define NS_PER_MS	1000000ull
/* The path: 50 Mbit/s, 40 ms unless RATE_MBIT / RTT_MS say otherwise. */
static u64 RATE = 50000000ull;
static u64 RTT_NS = 40 * NS_PER_MS;
#define BDP		((u32)(RATE / 8 * RTT_NS / NS_PER_SEC / SIM_WIRE_BYTES))

/* Every key of the parameter table (include/bbr_params.h). */
#define P(f, lo, hi, def, unit, what) { #f, offsetof(struct bbr_params, f) },
static const struct { const char *name; size_t off; } pfields[] = {
	BBR_PARAM_TABLE(P)
};
#undef P

static int set_param(struct bbr_params *p, const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t i;

	static const char *const profiles[] = BBR_PROFILE_NAMES;

	for (i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++) {
		if (!strcmp(kv, profiles[i])) {
			bbr_params_set_profile(p, (u32)i);
			return 0;
		}
	}
	if (!eq)
		return -1;
	for (i = 0; i < sizeof(pfields) / sizeof(pfields[0]); i++) {
		if (strlen(pfields[i].name) == (size_t)(eq - kv) &&
		    !strncmp(pfields[i].name, kv, eq - kv)) {
			*(u32 *)((char *)p + pfields[i].off) = (u32)strtoul(eq + 1, NULL, 0);
			return 0;
		}
	}
	return -1;
}

static struct sim_cfg cfg;
static u64 trace_next[SIM_MAX_FLOWS];
static u64 trace_every_ns;

/* TRACE=ms: one line per flow every ms of simulated time */
static void trace_ack(int f, u64 now, const struct bbr3 *b, const struct bbr_sock *sk)
{
	if (now < trace_next[f])
		return;
	trace_next[f] = now + trace_every_ns;
	printf("T %.2f f%d mode %d ph %d bw %.2f bwhi %.2f/%.2f bwlo %.2f minrtt %u srtt %u cwnd %u infl %u ihi %d ilo %d xacked %u pg %u cg %u pq %u noise %u\n",
	       now / 1e9, f, b->mode, b->cycle_idx,
	       (double)bbr_bw(b) * 1448 * 8 / 16777216.0,
	       (double)b->bw_hi[0] * 1448 * 8 / 16777216.0,
	       (double)b->bw_hi[1] * 1448 * 8 / 16777216.0,
	       b->bw_lo == BBR_UNSET ? -1.0 : (double)b->bw_lo * 1448 * 8 / 16777216.0,
	       b->min_rtt_us, sk->srtt_us, sk->snd_cwnd, sk->inflight,
	       (int)b->inflight_hi, (int)b->inflight_lo, bbr_extra_acked(b),
	       b->pacing_gain, b->cwnd_gain, b->probe_queue_us, b->rtt_noise_us);
}

static struct sim_result res;

/* metrics of one run: up to 6 named values */
#define NM 8
struct run { const char *names[NM]; double v[NM]; int n; };

static void put(struct run *r, const char *name, double v)
{
	r->names[r->n] = name;
	r->v[r->n++] = v;
}

static void base(u32 buf_pkts, int n, u64 dur_ns)
{
	memset(&cfg, 0, sizeof(cfg));
	memset(&res, 0, sizeof(res));
	cfg.rate_bps = RATE;
	cfg.buffer_pkts = buf_pkts;
	cfg.duration_ns = dur_ns;
	cfg.nflows = n;
	for (int f = 0; f < n; f++)
		cfg.flow[f].base_rtt_ns = RTT_NS;
	/* JITTER_US / JITTER_EXP_US: noise on every RTT sample (sim.h) */
	if (getenv("JITTER_US") || getenv("JITTER_EXP_US")) {
		cfg.core_rtt_noise = 1;
		cfg.net_rtt_jitter_us = getenv("JITTER_US") ?
			(u32)strtoul(getenv("JITTER_US"), NULL, 0) : 0;
		cfg.net_rtt_exp_us = getenv("JITTER_EXP_US") ?
			(u32)strtoul(getenv("JITTER_EXP_US"), NULL, 0) : 0;
	}
}

static double util(int n, u64 from, u64 to)
{
	double s = 0;

	for (int f = 0; f < n; f++)
		s += sim_goodput_bps(&res, f, from, to);
	return s / RATE;
}

/* per-second Jain over [from, to): mean and min */
static void jain_ps(struct run *r, int n, u64 from, u64 to)
{
	double sum = 0, mn = 1;
	int k = 0;

	for (u64 t = from; t + NS_PER_SEC <= to; t += NS_PER_SEC, k++) {
		double j = sim_jain(&res, n, t, t + NS_PER_SEC);

		sum += j;
		if (j < mn)
			mn = j;
	}
	put(r, "jain", sum / k);
	put(r, "jmin", mn);
}

static u64 retrans_total(int n)
{
	u64 s = 0;

	for (int f = 0; f < n; f++)
		s += res.retransmits[f];
	return s;
}

static double delivered_pkts(int n)
{
	double s = 0;

	for (int f = 0; f < n; f++)
		for (int b = 0; b < res.nbins; b++)
			s += res.bin_pkts[f][b];
	return s;
}

static int run_scenario(const char *sc, u32 seed, struct run *r)
{
	u64 dur = 30 * NS_PER_SEC;

	memset(r, 0, sizeof(*r));
	unit_prandom_seed(seed * 7919 + 1);
	if (!strcmp(sc, "two2") || !strcmp(sc, "two2long")) {
		if (!strcmp(sc, "two2long"))
			dur = 60 * NS_PER_SEC;
		base(2 * BDP, 2, dur);
		cfg.flow[1].start_ns = NS_PER_SEC;
	} else if (!strcmp(sc, "four1") || !strcmp(sc, "four100") ||
		   !strcmp(sc, "four8")) {
		base((!strcmp(sc, "four1") ? 1 : !strcmp(sc, "four8") ? 8 : 100) * BDP, 4, dur);
		cfg.flow[2].start_ns = cfg.flow[3].start_ns = NS_PER_SEC;
	} else if (!strcmp(sc, "loss1") || !strcmp(sc, "loss3") ||
		   !strcmp(sc, "loss01")) {
		base(BDP, 1, dur);
		cfg.loss_ppm = !strcmp(sc, "loss1") ? 10000 :
			       !strcmp(sc, "loss3") ? 30000 : 1000;
	} else if (!strcmp(sc, "single1") || !strcmp(sc, "single2") ||
		   !strcmp(sc, "single100")) {
		base((!strcmp(sc, "single1") ? 1 : !strcmp(sc, "single2") ? 2 : 100) * BDP, 1, dur);
	} else if (!strcmp(sc, "twoloss1")) {	/* 2 flows from t = 0, 1 BDP, 1 % loss */
		base(BDP, 2, dur);
		cfg.loss_ppm = 10000;
	} else if (!strncmp(sc, "shallow", 7)) {	/* shallow[N]: 4 flows, N % of a BDP (50) */
		u32 pct = sc[7] ? atoi(sc + 7) : 50;

		base(BDP * pct / 100 > 2 ? BDP * pct / 100 : 2, 4, 20 * NS_PER_SEC);
		dur = 20 * NS_PER_SEC;
	} else if (!strcmp(sc, "rttfair")) {
		base(2 * BDP, 2, dur);
		cfg.flow[0].base_rtt_ns = 20 * NS_PER_MS;
		cfg.flow[1].base_rtt_ns = 80 * NS_PER_MS;
	} else if (!strncmp(sc, "burst", 5)) {	/* burstN[@R]: ACK bursts every N ms, 1 BDP, R ms RTT */
		const char *at = strchr(sc, '@');
		u32 rtt = at ? atoi(at + 1) : 40;

		base(BDP * rtt / 40 > 20 ? BDP * rtt / 40 : 20, 1, dur);
		cfg.flow[0].base_rtt_ns = rtt * NS_PER_MS;
		cfg.ack_burst_us = atoi(sc + 5) * 1000;
	} else if (!strncmp(sc, "stretch", 7)) {	/* stretchN[@R]: ACK every N pkts */
		const char *at = strchr(sc, '@');
		u32 rtt = at ? atoi(at + 1) : 40;

		base(BDP * rtt / 40 > 20 ? BDP * rtt / 40 : 20, 1, dur);
		cfg.flow[0].base_rtt_ns = rtt * NS_PER_MS;
		cfg.ack_every = atoi(sc + 7);
	} else if (!strncmp(sc, "b2burst", 7)) {	/* 2 flows 2 BDP staggered + bursts */
		base(2 * BDP, 2, dur);
		cfg.flow[1].start_ns = NS_PER_SEC;
		cfg.ack_burst_us = atoi(sc + 7) * 1000;
	} else if (!strcmp(sc, "coex") || !strcmp(sc, "coexref") ||
		   !strcmp(sc, "coex1") || !strcmp(sc, "coex5")) {
		dur = 40 * NS_PER_SEC;
		base((!strcmp(sc, "coex1") ? 1 : !strcmp(sc, "coex5") ? 5 : 2) * BDP, 2, dur);
		cfg.flow[1].cc = SIM_CC_CUBIC;
		if (!strcmp(sc, "coexref"))
			cfg.flow[0].param_slot = 1;
	} else {
		fprintf(stderr, "unknown scenario %s\n", sc);
		return -1;
	}
	cfg.loss_seed = seed * 0x9E3779B1u + 12345;
	if (getenv("LOSS_PPM"))		/* random loss on any scenario */
		cfg.loss_ppm = strtoul(getenv("LOSS_PPM"), NULL, 0);
	if (getenv("TRACE")) {
		trace_every_ns = atoi(getenv("TRACE")) * NS_PER_MS;
		memset(trace_next, 0, sizeof(trace_next));
		cfg.on_ack = trace_ack;
	}
	res.measure_from_ns = 10 * NS_PER_SEC;
	if (sim_run(&cfg, &res))
		return -1;

	if (getenv("PERSEC")) {
		for (u64 t = 0; t + NS_PER_SEC <= dur; t += NS_PER_SEC) {
			printf("  t=%2llu", (unsigned long long)(t / NS_PER_SEC));
			for (int f = 0; f < cfg.nflows; f++)
				printf(" %5.1f", sim_goodput_bps(&res, f, t, t + NS_PER_SEC) / 1e6);
			printf("  J %.3f\n", sim_jain(&res, cfg.nflows, t, t + NS_PER_SEC));
		}
	}
	if (!strncmp(sc, "two2", 4) || !strcmp(sc, "twoloss1")) {
		jain_ps(r, 2, 10 * NS_PER_SEC, dur);
		put(r, "util", util(2, 10 * NS_PER_SEC, dur));
		put(r, "f0", sim_goodput_bps(&res, 0, 10 * NS_PER_SEC, dur) / 1e6);
		put(r, "f1", sim_goodput_bps(&res, 1, 10 * NS_PER_SEC, dur) / 1e6);
	} else if (!strncmp(sc, "four", 4)) {
		jain_ps(r, 4, 11 * NS_PER_SEC, dur);
		put(r, "util", util(4, 11 * NS_PER_SEC, dur));
		put(r, "rtx%", 100.0 * retrans_total(4) / delivered_pkts(4));
		put(r, "qmed_ms", sim_queue_quantile(&res, 0.5) * SIM_WIRE_BYTES * 8 * 1e3 / RATE);
	} else if (!strncmp(sc, "loss", 4)) {
		put(r, "util", util(1, 10 * NS_PER_SEC, dur));
	} else if (!strncmp(sc, "single", 6) || !strncmp(sc, "burst", 5) ||
		   !strncmp(sc, "stretch", 7)) {
		put(r, "util", util(1, 10 * NS_PER_SEC, dur));
		/* queue in % of the flow's base RTT */
		double pkt_ms = SIM_WIRE_BYTES * 8 * 1e3 / RATE;
		double rtt_ms = cfg.flow[0].base_rtt_ns / 1e6;

		put(r, "qmed%", sim_queue_quantile(&res, 0.5) * pkt_ms / rtt_ms * 100);
		put(r, "qmean%", res.queue_pkt_ns / res.queue_time_ns * pkt_ms / rtt_ms * 100);
		put(r, "rtx%", 100.0 * retrans_total(1) / delivered_pkts(1));
	} else if (!strncmp(sc, "shallow", 7)) {
		put(r, "rtx%", 100.0 * retrans_total(4) / delivered_pkts(4));
		put(r, "util", util(4, 5 * NS_PER_SEC, dur));
		jain_ps(r, 4, 5 * NS_PER_SEC, dur);
	} else if (!strcmp(sc, "rttfair")) {
		double a = sim_goodput_bps(&res, 0, 10 * NS_PER_SEC, dur);
		double b = sim_goodput_bps(&res, 1, 10 * NS_PER_SEC, dur);

		put(r, "jain", sim_jain(&res, 2, 10 * NS_PER_SEC, dur));
		put(r, "s20/s80", a / b);
		put(r, "util", (a + b) / RATE);
	} else if (!strncmp(sc, "b2burst", 7)) {
		jain_ps(r, 2, 10 * NS_PER_SEC, dur);
		put(r, "util", util(2, 10 * NS_PER_SEC, dur));
	} else if (!strncmp(sc, "coex", 4)) {
		double a = sim_goodput_bps(&res, 0, 10 * NS_PER_SEC, dur);
		double b = sim_goodput_bps(&res, 1, 10 * NS_PER_SEC, dur);

		put(r, "cubic_share", b / (a + b));
		put(r, "util", (a + b) / RATE);
		put(r, "rtx%", 100.0 * retrans_total(2) / delivered_pkts(2));
	}
	return 0;
}

int main(int argc, char **argv)
{
	int i, nseeds, verbose = getenv("V") != NULL;
	char *scs, *sc;

	if (getenv("RATE_MBIT"))
		RATE = strtoull(getenv("RATE_MBIT"), NULL, 0) * 1000000ull;
	if (getenv("RTT_MS"))
		RTT_NS = strtoull(getenv("RTT_MS"), NULL, 0) * NS_PER_MS;
	for (i = 0; i < BBR_PARAM_SLOTS; i++)
		bbr_test_param_sets[i] = (struct bbr_params)BBR_PARAMS_DEFAULT;
	for (i = 1; i < argc - 2; i++)
		if (set_param(&bbr_test_param_sets[0], argv[i])) {
			fprintf(stderr, "bad param %s\n", argv[i]);
			return 2;
		}
	if (argc < 3)
		return 2;
	scs = strdup(argv[argc - 2]);
	nseeds = atoi(argv[argc - 1]);
	for (sc = strtok(scs, ","); sc; sc = strtok(NULL, ",")) {
		double sum[NM] = {0}, mn[NM], mx[NM];
		struct run r;
		int s;

		for (s = 0; s < NM; s++) { mn[s] = 1e18; mx[s] = -1e18; }
		for (s = 1; s <= nseeds; s++) {
			if (run_scenario(sc, (u32)s, &r))
				return 1;
			if (verbose) {
				printf("  %-10s seed %d:", sc, s);
				for (int k = 0; k < r.n; k++)
					printf(" %s %.3f", r.names[k], r.v[k]);
				printf("\n");
			}
			for (int k = 0; k < r.n; k++) {
				sum[k] += r.v[k];
				if (r.v[k] < mn[k]) mn[k] = r.v[k];
				if (r.v[k] > mx[k]) mx[k] = r.v[k];
			}
		}
		printf("%-10s", sc);
		for (int k = 0; k < r.n; k++)
			printf("  %s %.3f [%.3f..%.3f]", r.names[k], sum[k] / nseeds, mn[k], mx[k]);
		printf("\n");
		fflush(stdout);
	}
	return 0;
}
