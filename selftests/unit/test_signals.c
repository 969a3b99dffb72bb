// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* ECN, loss and the lower bounds; recovery, undo, idle restart; and the
 * reconstruction of the inputs mainline does not provide. */
#include "unit.h"
#include "bbr_env.h"

#define RTT_US		2048u	/* <= 5 ms: ECN-eligible; 2^11 µs: exact bw */

/* alpha = (1 - 1/16) alpha + 1/16 ce_ratio, once per round. */
TEST(ecn_alpha_ewma_per_round)
{
	struct env e;

	bbr_test_params.ecn_enable = 1;
	env_init(&e, 10);
	e.sk.ecn_ok = 1;
	env_round(&e, 10, RTT_US);		/* no min_rtt yet: not eligible */
	ASSERT_EQ(e.b->ecn_eligible, 0);
	env_round(&e, 20, RTT_US);		/* eligible; 0 of 30 marked */
	ASSERT_EQ(e.b->ecn_eligible, 1);
	ASSERT_EQ(e.b->ecn_alpha, 240);		/* 240 * 256 >> 8 */
	e.sk.delivered_ce += 20;
	env_round(&e, 40, RTT_US);		/* 20 of 40: ratio 128 */
	ASSERT_EQ(e.b->ecn_alpha, (240 * 240 >> 8) + (16 * 128 >> 8));
	ASSERT_EQ(e.b->startup_ecn_rounds, 1);
	ASSERT_EQ(e.b->mode, BBR_STARTUP);
}

/* Two consecutive rounds with >= 50 % CE end STARTUP. */
TEST(ecn_too_high_in_startup_two_rounds)
{
	struct env e;

	bbr_test_params.ecn_enable = 1;
	env_init(&e, 10);
	e.sk.ecn_ok = 1;
	env_round(&e, 10, RTT_US);
	env_round(&e, 20, RTT_US);
	e.sk.delivered_ce += 20;
	env_round(&e, 40, RTT_US);
	ASSERT_EQ(e.b->full_bw_reached, 0);
	e.sk.delivered_ce += 60;
	env_round(&e, 80, RTT_US);
	ASSERT_EQ(e.b->full_bw_reached, 1);
	ASSERT_NE(e.b->mode, BBR_STARTUP);
	ASSERT_NE(e.b->inflight_hi, BBR_UNSET);
	/* a round below 50 % in between resets the count */
	env_init(&e, 10);
	e.sk.ecn_ok = 1;
	env_round(&e, 10, RTT_US);
	env_round(&e, 20, RTT_US);
	e.sk.delivered_ce += 20;
	env_round(&e, 40, RTT_US);
	env_round(&e, 80, RTT_US);
	ASSERT_EQ(e.b->startup_ecn_rounds, 0);
	ASSERT_EQ(e.b->full_bw_reached, 0);
}

/* ECN is only a signal when the operator enabled it and it was negotiated,
 * and only on low-RTT paths (<= 5 ms). */
TEST(ecn_ignored_unless_enabled_negotiated_low_rtt)
{
	struct env e;

	env_init(&e, 10);			/* ecn_enable = 0 (default) */
	e.sk.ecn_ok = 1;
	env_round(&e, 10, RTT_US);
	e.sk.delivered_ce += 20;
	env_round(&e, 20, RTT_US);
	ASSERT_EQ(e.b->ecn_eligible, 0);
	ASSERT_EQ(e.b->ecn_alpha, BBR_UNIT);

	bbr_test_params.ecn_enable = 1;
	env_init(&e, 10);			/* not negotiated */
	env_round(&e, 10, RTT_US);
	env_round(&e, 20, RTT_US);
	ASSERT_EQ(e.b->ecn_eligible, 0);

	env_init(&e, 10);			/* 10 ms path */
	e.sk.ecn_ok = 1;
	env_round(&e, 10, 10000);
	env_round(&e, 20, 10000);
	ASSERT_EQ(e.b->ecn_eligible, 0);
}

/* Per loss round while not probing: ECN cuts inflight_lo by
 * (1 - alpha * ecn_factor); loss cuts bw_lo/inflight_lo by beta, floored
 * at the latest delivery signals. */
TEST(lower_bounds_from_ecn_and_loss)
{
	struct env e;

	env_to_probe_bw(&e, 100, 8192);
	e.b->cycle_idx = BBR_BW_PROBE_CRUISE;
	e.sk.snd_cwnd = 100;

	e.b->ecn_eligible = 1;
	e.b->ecn_in_round = 1;
	e.b->ecn_alpha = BBR_UNIT;
	bbr_adapt_lower_bounds(e.b, &e.sk);
	ASSERT_EQ(e.b->inflight_lo, 100 * (256 - 85) >> 8);	/* 66 */
	ASSERT_EQ(e.b->bw_lo, BBR_UNSET);			/* ECN: volume only */

	e.b->ecn_in_round = 0;
	e.b->loss_in_round = 1;
	e.b->inflight_lo = 100;
	e.b->bw_latest = 0;
	e.b->inflight_latest = 0;
	bbr_adapt_lower_bounds(e.b, &e.sk);
	ASSERT_EQ(e.b->inflight_lo, 100 * 180 >> 8);		/* 70 */
	ASSERT_EQ(e.b->bw_lo, (u32)((u64)bbr_max_bw(e.b) * 180 >> 8));

	/* the floor: never below what the last loss round delivered */
	e.b->inflight_lo = 100;
	e.b->inflight_latest = 90;
	bbr_adapt_lower_bounds(e.b, &e.sk);
	ASSERT_EQ(e.b->inflight_lo, 90);

	/* while probing (UP, REFILL, STARTUP) the bounds don't move */
	e.b->cycle_idx = BBR_BW_PROBE_UP;
	e.b->inflight_lo = 100;
	bbr_adapt_lower_bounds(e.b, &e.sk);
	ASSERT_EQ(e.b->inflight_lo, 100);
}

/* The cwnd cap per phase: inflight_hi while probing, inflight_hi less 15 %
 * headroom while cruising, inflight_lo always, never below 4. */
TEST(bound_cwnd_for_inflight_model)
{
	struct env e;

	env_to_probe_bw(&e, 100, 8192);
	e.b->inflight_hi = 100;
	e.b->inflight_lo = BBR_UNSET;
	e.b->cycle_idx = BBR_BW_PROBE_UP;
	e.sk.snd_cwnd = 500;
	bbr_bound_cwnd_for_inflight_model(e.b, &e.sk);
	ASSERT_EQ(e.sk.snd_cwnd, 100);
	e.b->cycle_idx = BBR_BW_PROBE_CRUISE;
	e.sk.snd_cwnd = 500;
	bbr_bound_cwnd_for_inflight_model(e.b, &e.sk);
	ASSERT_EQ(e.sk.snd_cwnd, 100 - (100 * 38 >> 8));	/* 86 */
	e.b->inflight_lo = 50;
	bbr_bound_cwnd_for_inflight_model(e.b, &e.sk);
	ASSERT_EQ(e.sk.snd_cwnd, 50);
	e.b->inflight_lo = 1;
	bbr_bound_cwnd_for_inflight_model(e.b, &e.sk);
	ASSERT_EQ(e.sk.snd_cwnd, 4);
}

/* 2023: entering recovery saves cwnd and the bounds; a spurious recovery
 * is undone by lifting the bounds back and returning the saved cwnd. */
TEST(ssthresh_saves_and_undo_restores_2023)
{
	struct env e;

	bbr_test_params.generation = BBR_GEN_2023;
	env_to_probe_bw(&e, 100, 8192);
	e.b->cycle_idx = BBR_BW_PROBE_CRUISE;
	e.sk.snd_cwnd = 120;
	e.b->inflight_hi = 150;
	e.b->inflight_lo = BBR_UNSET;
	ASSERT_EQ(bbr_core_ssthresh(e.b, &e.sk), e.sk.snd_ssthresh);
	ASSERT_EQ(e.b->prior_cwnd, 120);
	/* loss cuts the bounds ... */
	e.b->inflight_lo = 84;
	e.b->inflight_hi = 90;
	e.b->bw_lo = 1000;
	/* ... but it was spurious */
	ASSERT_EQ(bbr_core_undo_cwnd(e.b, &e.sk), 120);
	ASSERT_EQ(e.b->inflight_lo, BBR_UNSET);
	ASSERT_EQ(e.b->inflight_hi, 150);
	ASSERT_EQ(e.b->bw_lo, BBR_UNSET);
	ASSERT_EQ(e.b->full_bw, 0);
}

/* RTO: the next loss round cuts from the pre-RTO cwnd; leaving Loss
 * restores the last-known good cwnd. */
TEST(rto_sets_inflight_lo_and_exit_restores_cwnd)
{
	struct env e;

	env_to_probe_bw(&e, 100, 8192);
	e.b->cycle_idx = BBR_BW_PROBE_CRUISE;
	e.sk.snd_cwnd = 200;
	e.sk.lost += 150;			/* the RTO marked them lost */
	bbr_core_ssthresh(e.b, &e.sk);
	e.sk.snd_cwnd = 1;			/* the stack: inflight + 1 */
	bbr_core_set_state(&e.sks, &e.sk, BBR_CA_LOSS);
	ASSERT_EQ(e.b->inflight_lo, 200);
	ASSERT_EQ(e.b->prev_ca_state, BBR_CA_LOSS);
	e.sk.snd_cwnd = 30;
	bbr_core_set_state(&e.sks, &e.sk, BBR_CA_OPEN);
	ASSERT_EQ(e.sk.snd_cwnd, 200);
}

/* After idle, the first send paces at bw x 1.0 (no probe burst), and the
 * ACK-aggregation epoch restarts. */
TEST(idle_restart_paces_at_bw)
{
	struct env e;

	env_to_probe_bw(&e, 100, 8192);
	e.sk.app_limited = e.sk.delivered + 1;
	e.b->ack_epoch_acked = 77;
	bbr_core_tx_start(e.b, &e.sk);
	ASSERT_EQ(e.b->idle_restart, 1);
	ASSERT_EQ(e.b->ack_epoch_acked, 0);
	ASSERT_EQ(e.sk.pacing_rate, bbr_bw_to_pacing_rate(&e.sk, bbr_bw(e.b),
							   BBR_UNIT));
	/* not app-limited: not an idle restart */
	env_to_probe_bw(&e, 100, 8192);
	bbr_core_tx_start(e.b, &e.sk);
	ASSERT_EQ(e.b->idle_restart, 0);
}

/* Optional packet conservation in the first round of fast recovery. */
TEST(recovery_packet_conservation_first_round)
{
	struct env e;
	u32 start;

	bbr_test_params.recovery_conservation = 1;
	env_to_probe_bw(&e, 100, 8192);
	env_round(&e, 100, 8192);
	e.sk.ca_state = BBR_CA_RECOVERY;
	bbr_core_ssthresh(e.b, &e.sk);
	start = e.sk.delivered;
	env_ack_full(&e, 2, start - 50, 100, 8192, 8192, 3);
	/* cwnd = in flight + delivered by this ACK */
	ASSERT_EQ(e.b->in_recovery, 1);
	ASSERT_EQ(e.sk.snd_cwnd, e.rs.prior_in_flight - 2 - 3 + 2);
	/* later in the same round: never below in flight + acked */
	env_ack_full(&e, 2, start - 40, 100, 8192, 8192, 0);
	ASSERT_GE(e.sk.snd_cwnd, e.rs.prior_in_flight);
	/* recovery ends: back to the saved cwnd (then the model bounds) */
	e.sk.ca_state = BBR_CA_OPEN;
	env_round(&e, 10, 8192);
	ASSERT_EQ(e.b->in_recovery, 0);
	ASSERT_GE(e.sk.snd_cwnd, 100);
}

/* Default (as the v3 reference): no conservation, cwnd keeps following the
 * model during recovery. */
TEST(recovery_without_conservation_follows_model)
{
	struct env e;
	u32 cwnd;

	env_to_probe_bw(&e, 100, 8192);
	env_round(&e, 100, 8192);
	cwnd = e.sk.snd_cwnd;
	e.sk.ca_state = BBR_CA_RECOVERY;
	env_ack_full(&e, 2, e.sk.delivered - 50, 100, 8192, 8192, 3);
	ASSERT_EQ(e.b->in_recovery, 0);
	ASSERT_GE(e.sk.snd_cwnd, cwnd);
}

/* ---- reconstruction ------------------------------------------------------ */

/*
 * Send records. A record at snd_nxt S with in flight I, delivered D,
 * pending P: new data ending at end_seq sent while tp->delivered was D'
 * had I + P + pkts(S, end_seq) - (D' - D) in flight right after it; a
 * retransmit sent at D had I + 1. ACKs that keep packets_out - sacked_out +
 * delivered open no record; a new loss does.
 */
TEST(tx_records_rebuild_send_time_inflight_and_lost)
{
	struct env e;
	u32 tif = 0;
	s32 lost = -1;

	env_init(&e, 100);
	e.sk.delivered = 1000;
	e.sk.lost = 7;
	e.sk.inflight = 60;
	e.sk.packets_out = 64;
	e.sk.sacked_out = 4;
	e.sk.snd_nxt = 500000;
	bbr_tx_reset(&e.sks, &e.sk);
	/* 10 more packets sent, then an ACK delivers 3 (2 SACKed, 1 cum.) */
	e.sk.snd_nxt += 10 * ENV_MSS_BYTES;
	e.sk.packets_out = 73;			/* 64 + 10 - 1 */
	e.sk.sacked_out = 6;
	e.sk.delivered = 1003;
	e.sk.inflight = 67;
	bbr_tx_note(&e.sks, &e.sk);
	ASSERT_EQ(e.b->tx_rec_head, 0);		/* still described: no record */

	/* the 5th of the 10 packets, sent before the ACK (D' = 1000) */
	ASSERT_EQ(bbr_tx_lookup(&e.sks, &e.sk, 500000 + 5 * ENV_MSS_BYTES, 1000,
				false, e.sk.lost, &tif, &lost), 1);
	ASSERT_EQ(tif, 60 + 5);
	ASSERT_EQ(lost, 0);
	/* the 12th, sent after it (D' = 1003): 67 + 2 in flight */
	e.sk.lost = 9;
	ASSERT_EQ(bbr_tx_lookup(&e.sks, &e.sk, 500000 + 12 * ENV_MSS_BYTES, 1003,
				false, e.sk.lost, &tif, &lost), 1);
	ASSERT_EQ(tif, 67 + 2);
	ASSERT_EQ(lost, 2);

	/* a new loss (2 marked, not yet retransmitted) opens a record */
	e.sk.lost_out = 2;
	e.sk.inflight = 65;
	bbr_tx_note(&e.sks, &e.sk);
	ASSERT_EQ(e.b->tx_rec_head, 1);
	ASSERT_EQ(e.sks.rec[1].lost, 9);
	ASSERT_EQ(e.sks.rec[1].inflight_pkts, 65);
	/* the first retransmit after it: 65 + 1 in flight, lost since: 0 */
	ASSERT_EQ(bbr_tx_lookup(&e.sks, &e.sk, 400000, 1003, true, e.sk.lost, &tif, &lost), 1);
	ASSERT_EQ(tif, 66);
	ASSERT_EQ(lost, 0);
	/* new data after both retransmits: they are back in flight */
	ASSERT_EQ(bbr_tx_lookup(&e.sks, &e.sk, 500000 + 11 * ENV_MSS_BYTES, 1003,
				false, e.sk.lost, &tif, &lost), 1);
	ASSERT_EQ(tif, 65 + 2 + 1);
	/* older than every record: the oldest stands in, reported inexact */
	ASSERT_EQ(bbr_tx_lookup(&e.sks, &e.sk, 400000, 900, true, e.sk.lost, &tif, &lost), 0);
}

/* A DSACK counts a delivery that moves neither snd_una nor sacked_out: the
 * record no longer predicts, and a new one opens. */
TEST(tx_records_reopen_when_prediction_breaks)
{
	struct env e;

	env_init(&e, 100);
	e.sk.delivered = 50;
	e.sk.inflight = e.sk.packets_out = 20;
	e.sk.snd_nxt = 100000;
	bbr_tx_reset(&e.sks, &e.sk);
	e.sk.delivered++;			/* DSACK */
	bbr_tx_note(&e.sks, &e.sk);
	ASSERT_EQ(e.b->tx_rec_head, 1);
	/* a partial segment (500 bytes, one packet) and full ones after it:
	 * the byte count still rounds to the packet count */
	e.sk.snd_nxt += 500 + 2 * ENV_MSS_BYTES;
	e.sk.packets_out += 3;
	e.sk.inflight += 3;
	bbr_tx_note(&e.sks, &e.sk);
	ASSERT_EQ(e.b->tx_rec_head, 1);
	/* a second partial one: 1000 bytes in two packets no longer does */
	e.sk.snd_nxt += 500;
	e.sk.packets_out++;
	e.sk.inflight++;
	bbr_tx_note(&e.sks, &e.sk);
	ASSERT_EQ(e.b->tx_rec_head, 2);
}

/* The in-flight level at which the loss rate crossed 2 %:
 * (lost_prev + x) / (inflight_prev + x) = 5/256. */
TEST(inflight_hi_from_lost_formula)
{
	struct bbr_rs rs = {};
	struct bbr3 b = {};

	rs.tx_in_flight = 100;
	rs.lost = 10;
	/* 90 before, 0 lost: budget ceil(90*5/256) = 2, x = 2*256/251 = 2 */
	ASSERT_EQ(bbr_inflight_hi_from_lost(&b, &rs, 10), 92);
	rs.lost = 12;			/* 2 lost before: already at budget */
	ASSERT_EQ(bbr_inflight_hi_from_lost(&b, &rs, 10), 90);
	rs.lost = 5;			/* inconsistent: more lost than counted */
	ASSERT_EQ(bbr_inflight_hi_from_lost(&b, &rs, 10), BBR_UNSET);
}

/* v3plus: below 50 packets in flight one random loss is already above the
 * 2 % threshold, so a sample's loss is "too high" only from
 * BBR_LOSS_MIN_PKTS (3) lost packets; the reference counts the first. The
 * round's RTT rose 10 ms over a 40 ms min_rtt, so the losses do not look
 * random (that test would pass them all). */
TEST(v3plus_loss_too_high_needs_three_lost)
{
	struct bbr_rs rs = { .tx_in_flight = 40 };
	struct bbr3 b = { .min_rtt_us = 40000, .round_queue_max_us = 10000 };
	static const int want_v3[] = { 0, 1, 1, 1 }, want_plus[] = { 0, 0, 0, 1 };
	int lost;

	for (lost = 0; lost <= 3; lost++) {
		rs.lost = lost;
		bbr_params_set_profile(&bbr_test_params, BBR_PROFILE_v3);
		printf("  40 in flight, %d lost: too high v3 %d (want %d)", lost,
		       bbr_is_loss_too_high(&b, &rs), want_v3[lost]);
		ASSERT_EQ(bbr_is_loss_too_high(&b, &rs), want_v3[lost]);
		bbr_params_set_profile(&bbr_test_params, BBR_PROFILE_v3plus);
		printf(", v3plus %d (want %d)\n", bbr_is_loss_too_high(&b, &rs), want_plus[lost]);
		ASSERT_EQ(bbr_is_loss_too_high(&b, &rs), want_plus[lost]);
	}
	/* above 50 in flight the rate rules as before: 3 of 150 is > 2 % */
	rs.tx_in_flight = 150;
	rs.lost = 3;
	ASSERT_TRUE(bbr_is_loss_too_high(&b, &rs));
	/* no queue in the round: 3 of 40 (7.5 % < 15 %) looks random */
	b.round_queue_max_us = 500;
	rs.tx_in_flight = 40;
	ASSERT_FALSE(bbr_is_loss_too_high(&b, &rs));
}

/* Growth of tp->lost between ACKs (also timer-marked losses, which
 * rs->losses misses) opens a loss round. */
TEST(newly_lost_from_tp_lost_delta)
{
	struct env e;

	env_to_probe_bw(&e, 100, 8192);
	env_round(&e, 100, 8192);
	ASSERT_EQ(e.b->loss_in_round, 0);
	e.sk.lost += 3;				/* marked by the RACK timer */
	env_ack_full(&e, 2, e.sk.delivered - 50, 100, 8192, 8192, 0);
	ASSERT_EQ(e.b->loss_in_cycle, 1);
	ASSERT_EQ(e.b->last_lost, e.sk.lost);
}

/* A TLP retransmit that repaired a loss (ACK beyond tlp_high_seq, not via
 * DSACK) is a loss signal; a DSACKed TLP (spurious) is not. */
TEST(tlp_recovery_detected_from_in_ack_event)
{
	struct env e;
	u32 seq;

	env_to_probe_bw(&e, 100, 8192);
	env_round(&e, 100, 8192);
	e.b->loss_in_cycle = 0;
	seq = e.sk.snd_una + 3000;
	e.sk.tlp_high_seq = seq;
	e.sk.tlp_retrans = 1;
	bbr_core_in_ack_event(e.b, &e.sk);
	e.sk.tlp_high_seq = 0;			/* the stack processed the TLP */
	e.sk.ack = seq + 1448;
	env_ack_full(&e, 3, e.sk.delivered - 50, 100, 8192, 8192, 0);
	ASSERT_EQ(e.b->loss_in_cycle, 1);
	ASSERT_EQ(e.b->tlp_high_seq, 0);	/* consumed */

	e.b->loss_in_cycle = 0;
	e.b->loss_in_round = 0;
	e.sk.tlp_high_seq = seq;
	bbr_core_in_ack_event(e.b, &e.sk);
	e.sk.tlp_high_seq = 0;
	e.sk.dsack_tlp = 1;
	env_ack_full(&e, 3, e.sk.delivered - 50, 100, 8192, 8192, 0);
	ASSERT_EQ(e.b->loss_in_cycle, 0);
}

/* The ACK of the TLP retransmit itself does not restart the latest
 * delivery signals. */
TEST(ack_of_tlp_retransmit_keeps_latest_signals)
{
	struct env e;
	struct bbr_rs rs = {};

	env_init(&e, 10);
	e.b->loss_round_start = 1;
	e.b->bw_latest = 500;
	rs.bw = 10;
	rs.delivered = 1;
	rs.is_acking_tlp_retrans_seq = 1;
	bbr_advance_latest_delivery_signals(e.b, &rs);
	ASSERT_EQ(e.b->bw_latest, 500);
	rs.is_acking_tlp_retrans_seq = 0;
	bbr_advance_latest_delivery_signals(e.b, &rs);
	ASSERT_EQ(e.b->bw_latest, 10);
}

/* ACK aggregation: packets ACKed beyond what bw explains since the epoch
 * start are added to cwnd (at most bw x 100 ms). */
TEST(extra_acked_estimator)
{
	struct env e;
	struct bbr_rs rs = {};
	u32 bw = (u32)(BW_UNIT / 128);		/* 1/128 pkt/us: 16 pkts per 2048 us */

	env_init(&e, 100);
	e.b->bw_hi[0] = bw;
	e.b->full_bw_reached = 1;
	e.b->ack_epoch_mstamp_us = e.sk.now_us;
	e.b->ack_epoch_acked = 30;		/* ahead of bw: epoch goes on */
	rs.acked_sacked = 40;
	rs.delivered = 40;
	rs.interval_us = 1000;
	/* 2048 us into the epoch 16 pkts are expected, 70 were ACKed */
	e.sk.delivered_mstamp_us = e.sk.now_us + 2048;
	bbr_update_ack_aggregation(e.b, &e.sk, &rs);
	ASSERT_EQ(e.b->ack_epoch_acked, 70);
	ASSERT_EQ(bbr_extra_acked(e.b), 70 - 16);
	ASSERT_EQ(bbr_ack_aggregation_cwnd(e.b), 54);
	/* ACKs at or below the model rate restart the epoch */
	e.b->ack_epoch_acked = 10;
	bbr_update_ack_aggregation(e.b, &e.sk, &rs);
	ASSERT_EQ(e.b->ack_epoch_acked, 40);
	ASSERT_EQ(e.b->ack_epoch_mstamp_us, e.sk.delivered_mstamp_us);
	/* the allowance is capped at bw x 100 ms = 781 pkts */
	e.b->extra_acked[0] = 5000;
	ASSERT_EQ(bbr_ack_aggregation_cwnd(e.b), 100000 / 128);
}

/* ce_discount_k (L4S): the rate sample counts CE-marked packets 1/K less;
 * 0 leaves the reference's sample, and a sample without CE is unchanged;
 * outside the L4S mode (no AccECN) the key does nothing. */
TEST(ce_discount_shrinks_bw_sample)
{
	struct env e;
	struct bbr_rs rs = { .interval_us = 1000, .delivered = 100, .delivered_ce = 40 };
	u32 plain, discounted, no_ce;

	env_init(&e, 10);
	bbr_calculate_bw_sample(e.b, &rs);
	plain = rs.bw;
	bbr_test_params.ce_discount_k = 4;
	bbr_calculate_bw_sample(e.b, &rs);
	ASSERT_EQ(rs.bw, plain);		/* the mode is not in force */
	e.b->l4s = 1;
	bbr_calculate_bw_sample(e.b, &rs);
	discounted = rs.bw;
	rs.delivered_ce = 0;
	bbr_calculate_bw_sample(e.b, &rs);
	no_ce = rs.bw;
	UNIT_REPORT("100 delivered, 40 CE: bw %u, with K = 4 %u (ratio %.3f; want 0.900)",
		    plain, discounted, (double)discounted / plain);
	/* (100 - 40 / 4) / 100 = 0.9 */
	ASSERT_LE(discounted, (u32)((u64)plain * 9 / 10) + 1);
	ASSERT_GE(discounted, (u32)((u64)plain * 9 / 10) - 1);
	ASSERT_EQ(no_ce, plain);
	/* all marked, K = 1: nothing counts */
	bbr_test_params.ce_discount_k = 1;
	rs.delivered_ce = 100;
	bbr_calculate_bw_sample(e.b, &rs);
	ASSERT_EQ(rs.bw, 0);
}
