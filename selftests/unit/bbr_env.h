/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The BBRv3 core compiled natively, plus a scripted connection to drive it:
 * the test says what each ACK delivered and when, the environment keeps
 * tp->delivered, the clock, in-flight and the sequence space consistent.
 */
#ifndef BBR_ENV_H
#define BBR_ENV_H

#include <string.h>

#include "core/types.h"
#include "bbr3_state.h"
#include "bbr_swift.h"

u32 unit_prandom(void);
void unit_prandom_seed(u64 seed);
/* The parameter sets; tests change set 0 (the default) through
 * bbr_test_params, or other sets through bbr_test_param_sets[i]. */
#define BBR_PARAM_SLOTS		64
extern struct bbr_params bbr_test_param_sets[BBR_PARAM_SLOTS];
#define bbr_test_params		bbr_test_param_sets[0]

/* The core with both variants' hooks: the L4S mode's (in force while the
 * l4s key is set and the connection has AccECN, as in bbr3_l4s) and
 * BBR.Swift's (while the env has a delay signal, e->delay, as in
 * bbr_swift). The objects carry one variant each; the hooks' code is the
 * same, and with neither in force the core runs as plain bbr3. */
#define BBR_CFG			bbr_test_param_sets
#define BBR_PRANDOM_U32()	unit_prandom()
#define BBR_EXT			struct bbr_delay
#include "core/bbr3.h"
#include "core/l4s.h"
#include "core/swift.h"
#include "core/bbr3_2023.h"
#include "core/bbr3_hooks.h"

#define ENV_MSS_BYTES		1448u
#define ENV_START_US		1000000ull	/* the clock starts at 1 s */
#define ENV_ISN			1000u		/* first sequence number */
#define ENV_SENT_BURSTS		256u		/* bursts remembered, power of 2 */

struct env {
	struct bbr3_sk sks;
	struct bbr_sock sk;
	struct bbr3 *b;
	struct bbr_rs rs;	/* the last rate sample fed to the core */
	struct bbr_delay *delay;	/* a delay signal (BBR.Swift), or NULL */
	u32 max_inflight;	/* sender has at most this much to send */
	u32 next_ce;		/* CE-marked packets the next ACK's rate
				 * sample reports (then 0 again) */
	/* What was sent when: tp->delivered at send for each burst, so an
	 * ACK's prior_delivered names the burst of its newest packet. */
	struct { u32 end_seq, delivered; } sent[ENV_SENT_BURSTS];
	u32 sent_head, sent_tail;
};

/* A connection with initial cwnd `cwnd` and no RTT sample yet. */
static inline void env_init(struct env *e, u32 cwnd)
{
	memset(e, 0, sizeof(*e));
	e->b = &e->sks.st;
	e->sk.now_us = ENV_START_US;
	e->sk.delivered_mstamp_us = ENV_START_US;
	e->sk.mss = ENV_MSS_BYTES;
	e->sk.snd_cwnd = cwnd;
	e->sk.snd_cwnd_clamp = 0xFFFFFFFFu;
	e->sk.max_pacing_rate = ~0ull;
	e->sk.pacing_shift = BBR_PACING_SHIFT_DEFAULT;
	e->sk.kernel_min_rtt_us = BBR_UNSET;
	e->sk.snd_nxt = ENV_ISN;
	e->sk.snd_una = ENV_ISN;
	e->max_inflight = 0xFFFFFFFFu;
	bbr_core_init(&e->sks, &e->sk);
}

/* Put n packets in flight: the sequence space follows. The scripted
 * connection has no SACK scoreboard: packets_out is what is in flight. */
static inline void env_set_inflight(struct env *e, u32 n)
{
	e->sk.inflight = n;
	e->sk.packets_out = n;
	e->sk.snd_nxt = e->sk.snd_una + n * ENV_MSS_BYTES;
}

/* After an ACK a bulk sender fills cwnd (up to what it has to send). */
static inline void env_refill(struct env *e)
{
	u32 want = e->sk.snd_cwnd < e->max_inflight ? e->sk.snd_cwnd : e->max_inflight;

	if (want > e->sk.inflight) {
		e->sk.snd_nxt += (want - e->sk.inflight) * ENV_MSS_BYTES;
		e->sk.inflight = want;
		e->sk.packets_out = want;
		e->sent[e->sent_head % ENV_SENT_BURSTS].end_seq = e->sk.snd_nxt;
		e->sent[e->sent_head % ENV_SENT_BURSTS].delivered = e->sk.delivered;
		e->sent_head++;
	}
	e->sk.is_cwnd_limited = e->sk.inflight >= e->sk.snd_cwnd;
}

/*
 * One ACK arriving `elapsed_us` after the previous one, for `pkts` packets
 * that were sent when tp->delivered was `prior_delivered`, with an RTT
 * sample of rtt_us and a delivery-rate interval of interval_us.
 */
static inline void env_ack_full(struct env *e, u32 pkts, u32 prior_delivered,
				u64 elapsed_us, s64 interval_us, s64 rtt_us,
				s32 losses)
{
	struct bbr_rs *rs = &e->rs;

	memset(rs, 0, sizeof(*rs));
	e->sk.now_us += elapsed_us;
	e->sk.delivered_mstamp_us = e->sk.now_us;
	rs->prior_in_flight = e->sk.inflight;
	rs->prior_delivered = prior_delivered;
	rs->delivered = (s32)(e->sk.delivered + pkts - prior_delivered);
	rs->acked_sacked = pkts;
	rs->interval_us = interval_us;
	rs->rtt_us = rtt_us;
	rs->losses = losses;
	rs->delivered_ce = (s32)e->next_ce;
	e->next_ce = 0;
	rs->last_end_seq = e->sk.snd_una + pkts * ENV_MSS_BYTES;

	e->sk.delivered += pkts;
	e->sk.snd_una += pkts * ENV_MSS_BYTES;
	e->sk.inflight -= pkts < e->sk.inflight ? pkts : e->sk.inflight;
	if (losses > 0) {
		e->sk.lost += (u32)losses;
		e->sk.inflight -= (u32)losses < e->sk.inflight ? (u32)losses :
				  e->sk.inflight;
	}
	if (rtt_us > 0)
		e->sk.srtt_us = (u32)rtt_us;
	e->sk.packets_out = e->sk.inflight;
	if (e->sk.app_limited && bbr_after(e->sk.delivered, e->sk.app_limited))
		e->sk.app_limited = 0;	/* as tcp_rate_gen() does */
	bbr_core_main(&e->sks, &e->sk, rs, e->delay);
	env_refill(e);
}

/* A whole round in one ACK: pkts delivered over rtt_us, all sent after the
 * previous ACK, so every call starts a new round. */
static inline void env_round(struct env *e, u32 pkts, u32 rtt_us)
{
	env_ack_full(e, pkts, e->sk.delivered, rtt_us, rtt_us, rtt_us, 0);
}

/* ACK the next `pkts` in order; prior_delivered is what tp->delivered was
 * when the newest of them was sent (needs the sender to have sent them). */
static inline void env_ack(struct env *e, u32 pkts, u64 elapsed_us, u32 rtt_us)
{
	u32 end = e->sk.snd_una + pkts * ENV_MSS_BYTES, pd = e->sk.delivered;

	while (e->sent_tail != e->sent_head) {
		u32 i = e->sent_tail % ENV_SENT_BURSTS;

		pd = e->sent[i].delivered;
		if (!bbr_before(e->sent[i].end_seq, end))
			break;
		e->sent_tail++;
	}
	env_ack_full(e, pkts, pd, elapsed_us, rtt_us, rtt_us, 0);
}

/* A round's worth of packets ACKed by `nacks` ACKs spread over rtt_us. */
static inline void env_round_acks(struct env *e, u32 pkts, u32 rtt_us, u32 nacks)
{
	u32 i, chunk = pkts / nacks;

	for (i = 0; i < nacks; i++)
		env_ack(e, i + 1 < nacks ? chunk : pkts - chunk * i,
			rtt_us / nacks, rtt_us);
}

/* bw in BW_UNIT for pkts per rtt_us, as the core computes it. */
static inline u32 env_bw(u32 pkts, u32 rtt_us)
{
	return (u32)(((u64)pkts * BW_UNIT + rtt_us - 1) / rtt_us);
}

/* Drive a fresh connection through STARTUP until the delivery rate has
 * plateaued at `bdp_pkts` per `rtt_us` (it is then in DRAIN), the sender
 * keeping up to 3 BDP in flight. */
static inline void env_to_drain(struct env *e, u32 bdp_pkts, u32 rtt_us)
{
	u32 pkts = 10, i;

	env_init(e, 10);
	e->max_inflight = bdp_pkts * 3;
	for (i = 0; i < 40 && e->b->mode == BBR_STARTUP; i++) {
		env_round(e, pkts, rtt_us);
		pkts = pkts * 2 < bdp_pkts ? pkts * 2 : bdp_pkts;
	}
}

/* Drive a fresh connection through STARTUP and DRAIN into PROBE_BW on a
 * path of `bdp_pkts` per `rtt_us`. */
static inline void env_to_probe_bw(struct env *e, u32 bdp_pkts, u32 rtt_us)
{
	u32 i;

	env_to_drain(e, bdp_pkts, rtt_us);
	/* DRAIN: a round drains the queue (1/4 BDP) and in flight falls to
	 * one BDP; the ACK that sees it enters PROBE_BW, in DOWN (it was sent
	 * with the queue still there). */
	e->max_inflight = bdp_pkts;
	for (i = 0; i < 10 && e->b->mode == BBR_DRAIN; i++) {
		env_set_inflight(e, bdp_pkts + bdp_pkts / 4);
		env_round(e, bdp_pkts, rtt_us);
	}
}

#endif /* BBR_ENV_H */
