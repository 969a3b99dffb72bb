// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * One ACK that both marks a loss and ends Recovery. A BBRv3 kernel's
 * per-packet hook sees the loss as the stack marks it, before set_state()
 * drops below Recovery: it belongs to the episode that ends, and the next
 * episode saves its own undo state at its first loss. On mainline the
 * glue finds that loss only in cong_control, after set_state(): taken as
 * the first loss of a new episode it saved the undo state there, and the
 * next real episode saved nothing (a lock-step run against the reference
 * showed prior_cwnd 42 where the reference had 49). Both paths must save
 * the same.
 */
#include "unit.h"
#include "bbr_env.h"

#define UO_RTT_US		8192u
#define UO_BDP_PKTS		100u
#define UO_CWND_FIRST		150u	/* cwnd at the first episode */
#define UO_CWND_ENDING		120u	/* at the ACK that ends it */
#define UO_CWND_NEXT		90u	/* at the next episode's first loss */

/* A loss reported by the per-packet hook, as the stack marks it. */
static void uo_hook_loss(struct env *e)
{
	struct bbr_lost_skb l = {
		.pcount = 1, .has_tx = 1, .tx_in_flight = UO_BDP_PKTS, .lost = 1,
	};

	e->sk.lost++;
	bbr_core_skb_lost(&e->sks, &e->sk, &l);
}

static void uo_enter_recovery(struct env *e)
{
	e->sk.ca_state = BBR_CA_RECOVERY;
	bbr_core_ssthresh(e->b, &e->sk);
	bbr_core_set_state(&e->sks, &e->sk, BBR_CA_RECOVERY);
}

static void uo_leave_recovery(struct env *e)
{
	e->sk.ca_state = BBR_CA_OPEN;
	bbr_core_set_state(&e->sks, &e->sk, BBR_CA_OPEN);
}

/* The sequence, with losses from the hook (`hooked`) or found by the
 * glue in cong_control; returns prior_cwnd saved for the second episode. */
static u32 uo_run(bool hooked, u32 *undo_hi)
{
	struct env e;

	env_to_probe_bw(&e, UO_BDP_PKTS, UO_RTT_US);
	/* episode 1 */
	e.sk.snd_cwnd = UO_CWND_FIRST;
	if (hooked)
		uo_hook_loss(&e);
	else
		e.sk.lost++;			/* seen first in ssthresh */
	uo_enter_recovery(&e);
	env_ack_full(&e, 1, e.sk.delivered - UO_BDP_PKTS, 100, UO_RTT_US,
		     UO_RTT_US, 0);
	/* one ACK: a new loss marked, then Recovery ends, then cong_control */
	e.sk.snd_cwnd = UO_CWND_ENDING;
	e.b->inflight_hi = 333;
	if (hooked) {
		uo_hook_loss(&e);
		uo_leave_recovery(&e);
		env_ack_full(&e, 1, e.sk.delivered - UO_BDP_PKTS, 100,
			     UO_RTT_US, UO_RTT_US, 0);
	} else {
		uo_leave_recovery(&e);
		env_ack_full(&e, 1, e.sk.delivered - UO_BDP_PKTS, 100,
			     UO_RTT_US, UO_RTT_US, 1);	/* found here */
	}
	/* a few clean ACKs; episode 2 starts from another cwnd */
	env_round(&e, UO_BDP_PKTS, UO_RTT_US);
	e.sk.snd_cwnd = UO_CWND_NEXT;
	e.b->inflight_hi = 222;
	if (hooked)
		uo_hook_loss(&e);
	else
		e.sk.lost++;
	uo_enter_recovery(&e);
	*undo_hi = e.b->undo_inflight_hi;
	return e.b->prior_cwnd;
}

TEST(undo_state_of_loss_on_the_ack_that_ends_recovery)
{
	u32 hi_hooked, hi_found;
	u32 cwnd_hooked = uo_run(true, &hi_hooked);
	u32 cwnd_found = uo_run(false, &hi_found);

	UNIT_REPORT("second episode saves prior_cwnd %u / inflight_hi %u with the hook, %u / %u with losses found in cong_control (both %u / 222)",
		    cwnd_hooked, hi_hooked, cwnd_found, hi_found, UO_CWND_NEXT);
	ASSERT_EQ(cwnd_hooked, UO_CWND_NEXT);
	ASSERT_EQ(hi_hooked, 222);
	ASSERT_EQ(cwnd_found, cwnd_hooked);
	ASSERT_EQ(hi_found, hi_hooked);
}
