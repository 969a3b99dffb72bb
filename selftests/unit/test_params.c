// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Parameter sets (bbrctl set): a socket runs with the set its param_slot
 * names, init keeps the slot the glue chose, out-of-range slots fall back
 * to the default set, and two connections with different sets behave
 * differently on the same inputs.
 */
#include <stdio.h>
#include <string.h>

#include "unit.h"
#include "bbr_env.h"

#define RTT_US		8192	/* 2^13 µs: exact bw arithmetic */
#define BDP_PKTS	100

TEST(param_slot_selects_the_set)
{
	struct bbr3 b = {};

	bbr_test_param_sets[5].beta = 128;
	bbr_core_set_param_slot(&b, 5);
	ASSERT_EQ(b.param_slot, 5);
	ASSERT_EQ(bbr_params_of(&b), &bbr_test_param_sets[5]);
	ASSERT_EQ(BBR_P(&b).beta, 128);
	ASSERT_EQ(bbr_test_params.beta, 76);	/* the default set untouched */

	bbr_core_set_param_slot(&b, BBR_PARAM_SLOTS);	/* out of range */
	ASSERT_EQ(b.param_slot, BBR_PARAM_SLOT_DEFAULT);
	b.param_slot = 0xFF;		/* corrupt: masked, stays in bounds */
	ASSERT_EQ(bbr_params_of(&b), &bbr_test_param_sets[0xFF & (BBR_PARAM_SLOTS - 1)]);
}

TEST(init_keeps_the_slot_chosen_before_it)
{
	struct env e;

	env_init(&e, 10);
	bbr_core_set_param_slot(e.b, 7);
	bbr_core_init(&e.sks, &e.sk);
	ASSERT_EQ(e.b->param_slot, 7);
	ASSERT_EQ(e.b->mode, BBR_STARTUP);
}

/* The STARTUP pacing gain of the socket's own set drives its pacing. */
TEST(two_sets_two_startup_pacing_rates)
{
	struct env a, b;
	u64 ra, rb;

	bbr_test_param_sets[3].startup_pacing_gain = BBR_UNIT;	/* 1.0x */
	env_init(&a, 10);
	env_init(&b, 10);
	bbr_core_set_param_slot(b.b, 3);
	bbr_core_init(&b.sks, &b.sk);
	for (int i = 0; i < 3; i++) {
		env_round(&a, 10, RTT_US);
		env_round(&b, 10, RTT_US);
	}
	ASSERT_EQ(a.b->pacing_gain, 710);
	ASSERT_EQ(b.b->pacing_gain, BBR_UNIT);
	ra = a.sk.pacing_rate;
	rb = b.sk.pacing_rate;
	printf("  # pacing: default set %llu B/s, set 3 (gain 1.0) %llu B/s\n",
	       (unsigned long long)ra, (unsigned long long)rb);
	/* 2.77x against 1.0x, less the same 1 % margin on both */
	ASSERT_LT(rb * 26 / 10, ra);
	ASSERT_LT(ra, rb * 29 / 10);
}

/* Switching the slot of a live socket changes its behaviour from then on:
 * the ECN response is on for set 1 only. */
TEST(live_slot_change_switches_ecn_response)
{
	struct env e;

	/* 8 ms RTT: above the default ecn_max_rtt_us, so lift it in both
	 * sets; ecn_enable is the only difference. */
	bbr_test_param_sets[0].ecn_max_rtt_us = 0;
	bbr_test_param_sets[1].ecn_max_rtt_us = 0;
	bbr_test_param_sets[1].ecn_enable = 1;
	env_to_probe_bw(&e, BDP_PKTS, RTT_US);
	e.sk.ecn_ok = 1;
	env_round(&e, BDP_PKTS, RTT_US);
	ASSERT_EQ(e.b->ecn_eligible, 0);	/* default set: ecn_enable 0 */
	bbr_core_set_param_slot(e.b, 1);
	env_round(&e, BDP_PKTS, RTT_US);
	ASSERT_EQ(e.b->ecn_eligible, 1);
}

/* ---- warm start: init on a live connection (bbrctl swap --from cubic) ---- */

/* A connection another CC has run for a while: 100 pkts per 10 ms. */
static void env_live(struct env *e, u32 ssthresh)
{
	env_init(e, 10);
	e->sk.delivered = 5000;
	e->sk.lost = 40;
	e->sk.snd_cwnd = 100;
	e->sk.snd_ssthresh = ssthresh;
	e->sk.srtt_us = 10000;
	e->sk.kernel_min_rtt_us = 8000;
	e->sk.rate_delivered = 90;		/* last sample: 90 pkts in 10 ms */
	e->sk.rate_interval_us = 10000;
	env_set_inflight(e, 100);
	bbr_core_init(&e->sks, &e->sk);
}

TEST(warm_start_enters_probe_bw_at_the_flows_rate)
{
	struct env e;
	u32 bw = env_bw(100, 10000);	/* cwnd/srtt beats the 90-pkt sample */

	env_live(&e, 70);
	printf("  # warm start: mode %u phase %u bw %u (want %u) pacing %llu B/s\n",
	       e.b->mode, e.b->cycle_idx, bbr_max_bw(e.b), bw,
	       (unsigned long long)e.sk.pacing_rate);
	ASSERT_EQ(e.b->mode, BBR_PROBE_BW);
	ASSERT_EQ(e.b->cycle_idx, BBR_BW_PROBE_DOWN);
	ASSERT_EQ(e.b->full_bw_reached, 1);
	ASSERT_LE(bbr_max_bw(e.b), bw);
	ASSERT_GE(bbr_max_bw(e.b) + 1, bw);
	ASSERT_EQ(e.b->min_rtt_us, 8000);
	/* ssthresh reported as after DRAIN: one BDP (100 pkts/10 ms x 8 ms) */
	ASSERT_GE(e.sk.snd_ssthresh, 79);
	ASSERT_LE(e.sk.snd_ssthresh, 81);
	ASSERT_EQ(e.b->pacing_gain, 232);	/* DOWN: 0.9x, not STARTUP's 2.77x */
	/* 100 pkts x 1448 B / 10 ms = 14.48 MB/s, x 0.906 x 0.99 margin */
	ASSERT_GT(e.sk.pacing_rate, 12500000);
	ASSERT_LT(e.sk.pacing_rate, 13500000);
	/* the model keeps the flow going: next round, no STARTUP, cwnd > 0 */
	env_round(&e, 100, 10000);
	ASSERT_EQ(e.b->mode, BBR_PROBE_BW);
	ASSERT_GE(e.sk.snd_cwnd, 4);
}

TEST(warm_start_uses_the_rate_sample_when_larger)
{
	struct env e;

	env_init(&e, 10);
	e.sk.delivered = 5000;
	e.sk.snd_cwnd = 50;
	e.sk.snd_ssthresh = 40;
	e.sk.srtt_us = 10000;
	e.sk.kernel_min_rtt_us = 8000;
	e.sk.rate_delivered = 80;
	e.sk.rate_interval_us = 10000;
	bbr_core_init(&e.sks, &e.sk);
	ASSERT_EQ(e.b->mode, BBR_PROBE_BW);
	/* 80 pkts / 10 ms (floor) beats cwnd/srtt = 50 pkts / 10 ms */
	ASSERT_EQ(bbr_max_bw(e.b), (u32)(80ull * BW_UNIT / 10000));
}

TEST(cold_start_in_slow_start_or_when_new)
{
	struct env e;

	env_live(&e, BBR_TCP_INFINITE_SSTHRESH);	/* previous CC in slow start */
	ASSERT_EQ(e.b->mode, BBR_STARTUP);
	ASSERT_EQ(e.b->full_bw_reached, 0);
	ASSERT_EQ(e.sk.snd_ssthresh, BBR_TCP_INFINITE_SSTHRESH);
	env_init(&e, 10);				/* a new connection */
	ASSERT_EQ(e.b->mode, BBR_STARTUP);
	ASSERT_EQ(e.b->pacing_gain, 710);
}

/* The one parameter table: every default in its own range, and docs/
 * bbrctl.md's key table lists exactly the table's keys with its ranges. */
struct param_row { const char *name; u32 min, max, def; };

#define PARAM_ROW(n, lo, hi, d, unit, what)	{ #n, lo, hi, d },
static const struct param_row param_rows[] = { BBR_PARAM_TABLE(PARAM_ROW) };
#undef PARAM_ROW
#define N_PARAM_ROWS	(sizeof(param_rows) / sizeof(param_rows[0]))

TEST(param_table_defaults_in_range_and_documented)
{
	char line[512], name[64];
	unsigned int lo, hi;
	bool seen[N_PARAM_ROWS] = {};
	FILE *f = fopen("docs/bbrctl.md", "r");
	u32 i, documented = 0;

	ASSERT_TRUE(f);		/* run from the repository root (make unit) */
	for (i = 0; i < N_PARAM_ROWS; i++) {
		ASSERT_LE(param_rows[i].min, param_rows[i].def);
		ASSERT_LE(param_rows[i].def, param_rows[i].max);
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "| `%63[a-z0-9_]` | %u..%u |", name, &lo, &hi) != 3)
			continue;
		for (i = 0; i < N_PARAM_ROWS; i++) {
			if (strcmp(name, param_rows[i].name))
				continue;
			if (lo != param_rows[i].min || hi != param_rows[i].max)
				printf("  docs/bbrctl.md: %s %u..%u, table %u..%u\n",
				       name, lo, hi, param_rows[i].min, param_rows[i].max);
			ASSERT_EQ(lo, param_rows[i].min);
			ASSERT_EQ(hi, param_rows[i].max);
			seen[i] = true;
			documented++;
		}
	}
	fclose(f);
	for (i = 0; i < N_PARAM_ROWS; i++)
		if (!seen[i])
			printf("  docs/bbrctl.md does not list %s\n", param_rows[i].name);
	ASSERT_EQ(documented, N_PARAM_ROWS);
}

/*
 * Profiles (include/bbr_params.h): v3plus sets its values within the
 * table's ranges; v3 afterwards gives back exactly the table's defaults,
 * so switching profiles never leaves a mix.
 */
#define PROFILE_ROW(prof, key, val)	{ #key, BBR_PROFILE_##prof, val },
static const struct { const char *key; u32 profile, val; } profile_rows[] = {
	BBR_PROFILE_TABLE(PROFILE_ROW)
};
#undef PROFILE_ROW

TEST(profiles_set_their_keys_and_v3_restores_the_reference)
{
	const struct bbr_params ref = BBR_PARAMS_DEFAULT;
	struct bbr_params p = ref;
	u32 i, j, changed = 0;

	bbr_params_set_profile(&p, BBR_PROFILE_v3plus);
	for (i = 0; i < sizeof(profile_rows) / sizeof(profile_rows[0]); i++) {
		for (j = 0; j < N_PARAM_ROWS; j++) {
			if (strcmp(profile_rows[i].key, param_rows[j].name))
				continue;
			ASSERT_LE(param_rows[j].min, profile_rows[i].val);
			ASSERT_LE(profile_rows[i].val, param_rows[j].max);
			break;
		}
		ASSERT_LT(j, N_PARAM_ROWS);	/* a key of the table */
	}
	for (i = 0; i < sizeof(p) / sizeof(u32); i++)
		changed += ((u32 *)&p)[i] != ((const u32 *)&ref)[i];
	printf("  v3plus changes %u of %zu keys\n", changed, sizeof(p) / sizeof(u32));
	ASSERT_EQ(changed, 6);
	ASSERT_EQ(p.cwnd_gain, BBR_UNIT);
	ASSERT_EQ(p.cwnd_headroom_us, 15000);

	/* docs/bbrctl.md's profile table: a row per key a profile sets, a
	 * column per profile (v3, v3plus, l4s), the values of the table */
	{
		static const char *const names[] = BBR_PROFILE_NAMES;
		char line[512], name[64];
		u32 v[3], rows = 0, prof, keys = 0;
		FILE *f = fopen("docs/bbrctl.md", "r");

		ASSERT_EQ(sizeof(names) / sizeof(names[0]), 3);
		for (i = 0; i < sizeof(profile_rows) / sizeof(profile_rows[0]); i++) {
			for (j = 0; j < i && strcmp(profile_rows[j].key, profile_rows[i].key); j++)
				;
			keys += j == i;		/* distinct keys */
		}
		ASSERT_TRUE(f);
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "| `%63[a-z0-9_]` | %u | %u | %u |",
				   name, &v[0], &v[1], &v[2]) != 4)
				continue;
			for (prof = 0; prof < 3; prof++) {
				struct bbr_params q = ref;

				bbr_params_set_profile(&q, prof);
				for (j = 0; j < N_PARAM_ROWS; j++)
					if (!strcmp(name, param_rows[j].name))
						break;
				ASSERT_LT(j, N_PARAM_ROWS);
				if (v[prof] != ((u32 *)&q)[j])
					printf("  docs/bbrctl.md: %s %s = %u, table %u\n", names[prof],
					       name, v[prof], ((u32 *)&q)[j]);
				ASSERT_EQ(v[prof], ((u32 *)&q)[j]);
			}
			rows++;
		}
		fclose(f);
		ASSERT_EQ(rows, keys);
	}

	p.beta = 100;		/* a key outside every profile: left alone */
	bbr_params_set_profile(&p, BBR_PROFILE_v3);
	ASSERT_EQ(p.beta, 100);
	p.beta = ref.beta;
	ASSERT_EQ(memcmp(&p, &ref, sizeof(p)), 0);
}
