// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* DCTCP (bpf/core/dctcp.h, RFC 8257): the alpha EWMA with g = 1/16 over
 * observation windows, the alpha/2 cut, loss halving, undo, receiver CE
 * state changes. */
#include "unit.h"
#include "core/types.h"
#include "core/dctcp.h"

/* alpha converges to the marked fraction; starts at 1. */
TEST(dctcp_alpha_ewma_g_1_16)
{
	u32 a = DCTCP_ALPHA_INIT;
	int i;

	ASSERT_EQ(a, 1024);
	a = dctcp_alpha_ewma(a, 100, 0);		/* no marks: 1024 * 15/16 */
	ASSERT_EQ(a, 960);
	a = dctcp_alpha_ewma(a, 100, 100);		/* all marked: +64 - 60 */
	ASSERT_EQ(a, 960 - 60 + 64);
	for (i = 0; i < 200; i++)
		a = dctcp_alpha_ewma(a, 100, 25);	/* M = 0.25 -> 256 */
	ASSERT_GE(a, 256 - 16);
	ASSERT_LE(a, 256 + 16);
	UNIT_REPORT("alpha after 200 windows at M=0.25: %u/1024", a);
	for (i = 0; i < 200; i++)
		a = dctcp_alpha_ewma(a, 100, 0);
	ASSERT_LE(a, 15);				/* decays to ~0 */
	ASSERT_EQ(dctcp_alpha_ewma(0, 0, 0), 0);	/* empty window: decay only */
}

/* The window ends when SND.UNA passes WindowEnd, once. */
TEST(dctcp_alpha_once_per_window)
{
	struct dctcp d;

	dctcp_init(&d, 1000, 0, 0);
	ASSERT_FALSE(dctcp_update_alpha(&d, 1000, 5000, 10, 10));	/* not past */
	ASSERT_EQ(d.alpha, 1024);
	ASSERT_TRUE(dctcp_update_alpha(&d, 1001, 5000, 20, 5));	/* M = 1/4 */
	ASSERT_EQ(d.alpha, 1024 - 64 + (256 >> 4));
	ASSERT_EQ(d.window_end, 5000);
	ASSERT_FALSE(dctcp_update_alpha(&d, 4000, 9000, 30, 10));
	ASSERT_EQ(d.windows, 1);
}

/* cwnd (1 - alpha/2); loss halves; undo restores; floor 2. */
TEST(dctcp_cut_by_half_alpha)
{
	struct dctcp d;

	dctcp_init(&d, 0, 0, 0);
	ASSERT_EQ(dctcp_ssthresh(&d, 100), 50);		/* alpha 1: half */
	d.alpha = 256;					/* 0.25: cut 12.5 % */
	ASSERT_EQ(dctcp_ssthresh(&d, 100), 88);
	d.alpha = 0;
	ASSERT_EQ(dctcp_ssthresh(&d, 100), 100);
	d.alpha = 1024;
	ASSERT_EQ(dctcp_ssthresh(&d, 3), 2);
	ASSERT_EQ(dctcp_loss_ssthresh(&d, 80), 40);
	ASSERT_EQ(dctcp_undo_cwnd(&d, 40), 80);
	ASSERT_EQ(dctcp_undo_cwnd(&d, 90), 90);
}

TEST(dctcp_receiver_ce_changes)
{
	struct dctcp d;

	dctcp_init(&d, 0, 0, 0);
	ASSERT_FALSE(dctcp_rcv_ce_change(&d, 0));
	ASSERT_TRUE(dctcp_rcv_ce_change(&d, 1));
	ASSERT_FALSE(dctcp_rcv_ce_change(&d, 1));
	ASSERT_TRUE(dctcp_rcv_ce_change(&d, 0));
	ASSERT_EQ(d.ce_state, 0);
}
