// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Parameter sets (bbrctl set): a socket runs with the set its param_slot
 * names, init keeps the slot the glue chose, out-of-range slots fall back
 * to the default set, and two connections with different sets behave
 * differently on the same inputs.
 */
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
