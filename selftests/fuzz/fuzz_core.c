// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * libFuzzer target for the BBRv3 core: the input is a script of operations
 * on one connection (ACKs with adversarial rate samples, recovery and RTO
 * transitions, undo, idle restarts, TLP state, parameter flips), with or
 * without BBR.Swift's hooks (core/swift.h: fuzzed target, Network_RTT
 * samples and their age) around each ACK. After each
 * operation the core's invariants are checked; ASan and UBSan catch
 * out-of-bounds accesses and signed overflow on their own.
 *
 *   make fuzz            # 5 minutes
 *   make fuzz-short      # the run `make test` does
 */
#include <stdlib.h>
#include <string.h>

/* One parameter set: the fuzzer varies its fields, not the selection. */
#define BBR_PARAM_SLOTS		1

#include "core/types.h"
#include "bbr3_state.h"

static struct bbr_params fuzz_param_sets[BBR_PARAM_SLOTS];
#define fuzz_params		fuzz_param_sets[0]
static u64 fuzz_rand_state;

static u32 fuzz_prandom(void)
{
	fuzz_rand_state = fuzz_rand_state * 6364136223846793005ull +
			  1442695040888963407ull;
	return (u32)(fuzz_rand_state >> 33);
}

#define BBR_CFG			fuzz_param_sets
#define BBR_PRANDOM_U32()	fuzz_prandom()
#define BBR_EXT			struct bbr_delay
#include "bbr_swift.h"
#include "core/bbr3.h"
#include "core/l4s.h"
#include "core/swift.h"
#include "core/bbr3_2023.h"
#include "core/bbr3_hooks.h"

/* The byte stream the script is read from. */
struct reader {
	const u8 *p;
	size_t left;
};

static u32 take(struct reader *r, int bytes)
{
	u32 v = 0;

	while (bytes-- > 0) {
		v <<= 8;
		if (r->left) {
			v |= *r->p++;
			r->left--;
		}
	}
	return v;
}

#define CHECK(cond) do { if (!(cond)) __builtin_trap(); } while (0)

static bool gain_is_configured(const struct bbr3 *b)
{
	const struct bbr_params *p = &fuzz_params;
	u32 up_cwnd = p->cwnd_gain + p->bw_probe_cwnd_gain * BBR_UNIT / 4;

	switch (b->mode) {
	case BBR_STARTUP:
		return b->pacing_gain == (u16)p->startup_pacing_gain &&
		       b->cwnd_gain == (u16)p->startup_cwnd_gain;
	case BBR_DRAIN:		/* drain_gain 0: the generation's */
		return b->pacing_gain == (u16)(p->drain_gain ? :
					       BBR_P(b).generation != BBR_GEN_2023 ? BBR_DRAIN_GAIN_2026 :
								 BBR_DRAIN_GAIN_2023) &&
		       b->cwnd_gain == (u16)p->startup_cwnd_gain;
	case BBR_PROBE_RTT:
		return b->pacing_gain == BBR_UNIT && b->cwnd_gain == BBR_UNIT;
	default:
		return b->pacing_gain == (u16)p->probe_up_pacing_gain ||
		       b->pacing_gain == (u16)p->probe_down_pacing_gain ||
		       b->pacing_gain == BBR_UNIT ||
		       b->cwnd_gain == (u16)p->cwnd_gain ||
		       b->cwnd_gain == (u16)up_cwnd;
	}
}

static void check_invariants(const struct bbr3_sk *sks, const struct bbr_sock *sk,
			     bool after_ack)
{
	const struct bbr3 *b = &sks->st;

	CHECK(b->initialized == 1);
	CHECK(b->mode <= BBR_PROBE_RTT);
	CHECK(b->cycle_idx <= BBR_BW_PROBE_REFILL);
	CHECK(b->ack_phase <= BBR_ACKS_PROBE_STOPPING);
	CHECK(b->ecn_alpha <= BBR_UNIT);
	CHECK(b->tx_rec_head < BBR_TX_RECS);
	CHECK(b->drain_rounds <= BBR_DRAIN_ROUNDS_MAX);
	CHECK(b->undo_state <= BBR_UNDO_PROBE_BW_UP);
	/* 2 (ending) only between set_state() and the end of the ACK */
	CHECK(b->loss_yet_in_recovery <= BBR_LOSS_EPISODE_ENDING);
	CHECK(b->full_bw_cnt <= BBR_FULL_BW_CNT);
	CHECK(b->loss_events_in_round <= BBR_LOSS_EVENTS_MAX);
	CHECK(b->bw_probe_up_rounds <= BBR_BW_PROBE_UP_ROUNDS_MAX);
	CHECK(b->extra_acked_win_rtts <= BBR_EXTRA_ACKED_WIN_RTTS_MAX);
	CHECK(b->extra_acked_win_idx <= 1);
	CHECK(b->startup_ecn_rounds <= BBR_STARTUP_ECN_ROUNDS_MAX);
	CHECK(b->bw_lo >= 1);			/* unset is all ones */
	CHECK(b->bw_probe_up_cnt >= 1);
	CHECK(b->probe_wait_us < BBR_BW_PROBE_BASE_US + BBR_BW_PROBE_RAND_US);
	CHECK(!b->full_bw_now || b->full_bw_reached);
	CHECK(b->mode == BBR_STARTUP || b->full_bw_reached ||
	      b->mode == BBR_PROBE_RTT);
	if (after_ack) {
		CHECK(gain_is_configured(b));
		CHECK(sk->pacing_rate >= 1);
		CHECK(sk->pacing_rate <= sk->max_pacing_rate);
		/* cwnd floor: 4 unless the clamp is lower */
		CHECK(sk->snd_cwnd >= bbr_min_u32(BBR_CWND_MIN_TARGET_PKTS,
						  sk->snd_cwnd_clamp) ||
		      !sk->snd_cwnd);
	}
}

/* A socket view that moves on plausibly, but with fuzzed jumps. */
static void advance_socket(struct reader *r, struct bbr_sock *sk, u32 *delivered_now)
{
	u32 step = take(r, 1);

	sk->now_us += (step & 0x80) ? (u64)take(r, 3) * 16 : step;
	sk->delivered_mstamp_us = sk->now_us - (take(r, 1) & 0x0F);
	*delivered_now = take(r, 1) & 0x3F;
	sk->delivered += *delivered_now;
	if (take(r, 1) & 1)
		sk->delivered_ce += *delivered_now / 2;
	sk->lost += take(r, 1) & 0x07;
	sk->inflight = take(r, 2);
	sk->packets_out = sk->inflight + (take(r, 1) & 0x3F);
	sk->sacked_out = take(r, 1) & 0x1F;
	sk->lost_out = take(r, 1) & 0x1F;
	sk->retrans_out = take(r, 1) & 0x1F;
	sk->snd_nxt += take(r, 2) * (sk->mss ? sk->mss : 1);
	sk->snd_una += take(r, 2);
	sk->srtt_us = take(r, 3);
	sk->is_cwnd_limited = take(r, 1) & 1;
	sk->edt_lead_ns = take(r, 2) * 1000ull;
	sk->ca_state = take(r, 1) % 5;
	sk->app_limited = (take(r, 1) & 3) ? 0 : sk->delivered + sk->inflight;
	sk->ece = take(r, 1) & 1;
	sk->ack = sk->snd_una;
}

static void fill_rs(struct reader *r, const struct bbr_sock *sk, struct bbr_rs *rs,
		    u32 delivered_now)
{
	u32 back = take(r, 2);
	u8 shape = (u8)take(r, 1);

	memset(rs, 0, sizeof(*rs));
	rs->prior_delivered = sk->delivered - delivered_now - (back & 0x3FF);
	rs->delivered = (shape & 1) ? (s32)take(r, 4) :
			(s32)(sk->delivered - rs->prior_delivered);
	rs->delivered_ce = (s32)(take(r, 1) & 0x3F) - 8;
	rs->interval_us = (shape & 2) ? -(s64)take(r, 1) : (s64)take(r, 3);
	rs->rtt_us = (shape & 4) ? -1 : (s64)take(r, 3);
	rs->losses = (s32)(take(r, 1) & 0x0F) - 2;
	rs->acked_sacked = (shape & 8) ? 0 : (take(r, 2) & 0x3FF);
	rs->prior_in_flight = take(r, 2);
	rs->last_end_seq = sk->snd_una + take(r, 2);
	rs->is_app_limited = (shape >> 4) & 1;
	rs->is_retrans = (shape >> 5) & 1;
	rs->is_ack_delayed = (shape >> 6) & 1;
}

static void check_swift(const struct bbr3_sk *sks, const struct bbr_sock *sk,
			const struct swift_state *w)
{
	bool in_force = w->status == SWIFT_ST_ACTIVE || w->status == SWIFT_ST_STALE;

	CHECK(w->status <= SWIFT_ST_ACTIVE);
	CHECK(w->cwnd_milli <= SWIFT_CWND_MAX_MILLI);
	CHECK(!w->decreases || (w->last_factor >= SWIFT_MIN_FACTOR &&
				w->last_factor < SWIFT_FACTOR_UNIT));
	/* without a signal in force there is no window */
	CHECK(in_force || !w->cwnd_milli);
	/* an engaged window caps cwnd (BBRv3's floor at least); a paced one
	 * (below the floor) at what its rate keeps in flight over srtt */
	if (in_force && w->cwnd_milli >= SWIFT_CWND_FLOOR_MILLI && sks->st.initialized)
		CHECK(sk->snd_cwnd <= (w->cwnd_milli + SWIFT_MILLI_PER_PKT - 1) /
					SWIFT_MILLI_PER_PKT);
	if (in_force && w->cwnd_milli && w->cwnd_milli < SWIFT_CWND_FLOOR_MILLI &&
	    sks->st.initialized)
		CHECK(sk->snd_cwnd <= swift_paced_cwnd(w, sk));
}

/* A Network_RTT sample as the ETS program would leave it, fuzzed. */
static void fill_sample(struct reader *r, const struct bbr_sock *sk,
			struct swift_sample *smp)
{
	u8 shape = (u8)take(r, 1);

	smp->present = !(shape & 1);
	smp->network_rtt_us = (shape & 2) ? 0 : take(r, 3);
	smp->last_sample_ns = (shape & 4) ? 0 :
			      (sk->now_us - (take(r, 2) << (shape >> 4))) * 1000ull;
	/* the path value and the host delay, from the same bytes (the input
	 * format, and with it the corpus, stays as it was) */
	smp->path_rtt_us = (shape & 8) ? smp->network_rtt_us / 2 + 1 : 0;
	smp->host_delay_us = (shape & 8) ? smp->network_rtt_us & 0x3FF : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bbr_delay d;
	struct swift_cfg scfg;
	u8 cfg_bits, ecn_bits, l4s_bits;
	bool swift;
	struct reader r = { data, size };
	struct bbr3_sk sks;
	struct bbr_sock sk;
	struct bbr_rs rs;
	u32 ops = 0, delivered_now;

	memset(&sks, 0, sizeof(sks));
	memset(&sk, 0, sizeof(sk));
	fuzz_params = (struct bbr_params)BBR_PARAMS_DEFAULT;
	fuzz_rand_state = take(&r, 4);

	/* a socket at a random point of its life, near counter wrap */
	sk.now_us = (u64)take(&r, 4) << 8;
	sk.delivered_mstamp_us = sk.now_us;
	sk.mss = take(&r, 2) % 9001;
	sk.delivered = take(&r, 4);
	sk.lost = take(&r, 4);
	sk.delivered_ce = take(&r, 4);
	sk.snd_nxt = take(&r, 4);
	sk.snd_una = sk.snd_nxt;
	sk.snd_cwnd = take(&r, 2) | 1;
	sk.snd_cwnd_clamp = (take(&r, 1) & 1) ? take(&r, 2) | 1 : 0xFFFFFFFFu;
	sk.max_pacing_rate = (take(&r, 1) & 1) ? (u64)take(&r, 4) + 1 : ~0ull;
	sk.pacing_shift = take(&r, 1) % 16;
	sk.kernel_min_rtt_us = (take(&r, 1) & 1) ? take(&r, 3) : BBR_UNSET;
	sk.srtt_us = take(&r, 3);
	ecn_bits = (u8)take(&r, 1);
	sk.ecn_ok = ecn_bits & 1;
	sk.accecn = sk.ecn_ok && (ecn_bits & 2);	/* the same byte: the corpus holds */
	bbr_core_init(&sks, &sk);
	check_invariants(&sks, &sk, false);
	memset(&d, 0, sizeof(d));
	memset(&scfg, 0, sizeof(scfg));
	swift = take(&r, 1) & 1;
	scfg.target_rtt_us = take(&r, 3);
	scfg.stale_us = take(&r, 3);
	cfg_bits = (u8)take(&r, 1);
	scfg.flags = cfg_bits & (SWIFT_CFG_F_KEEP_ECN | SWIFT_CFG_F_RAW_SAMPLES);
	scfg.host_target_us = (cfg_bits & 0x4) ? (scfg.stale_us & 0xFFFF) : 0;
	swift_apply_cfg(&d.w, &scfg, sks.st.round_count);

	while (r.left && ops++ < 4096) {
		switch (take(&r, 1) % 11) {
		case 0: case 1: case 2: case 3: case 4:
			advance_socket(&r, &sk, &delivered_now);
			fill_rs(&r, &sk, &rs, delivered_now);
			if (swift)
				fill_sample(&r, &sk, &d.smp);
			bbr_core_main(&sks, &sk, &rs, swift ? &d : NULL);
			/* the step closes a loss episode set_state() ended */
			CHECK(sks.st.loss_yet_in_recovery <= 1);
			if (swift)
				check_swift(&sks, &sk, &d.w);
			/* The app-limited fast path may skip the control step
			 * and leave cwnd as it was, as the reference does. */
			check_invariants(&sks, &sk, rs.acked_sacked && sk.mss &&
					 !(fuzz_params.fast_path && rs.is_app_limited));
			break;
		case 5:
			sk.snd_ssthresh = bbr_core_ssthresh(&sks.st, &sk);
			sk.snd_cwnd = bbr_core_undo_cwnd(&sks.st, &sk) | 1;
			check_invariants(&sks, &sk, false);
			break;
		case 6:
			sk.ca_state = take(&r, 1) % 5;
			if (sk.ca_state == BBR_CA_LOSS)
				sk.snd_cwnd = sk.inflight + 1;
			bbr_core_set_state(&sks, &sk, sk.ca_state);
			check_invariants(&sks, &sk, false);
			break;
		case 7:
			sk.app_limited = take(&r, 1) & 1 ? sk.delivered | 1 : 0;
			bbr_core_tx_start(&sks.st, &sk);
			check_invariants(&sks, &sk, false);
			break;
		case 8:
			sk.tlp_high_seq = take(&r, 4);
			sk.tlp_retrans = take(&r, 1) & 1;
			bbr_core_in_ack_event(&sks.st, &sk);
			sk.tlp_high_seq = (take(&r, 1) & 1) ? sk.tlp_high_seq : 0;
			sk.dsack_tlp = take(&r, 1) & 1;
			break;
		case 9: {	/* the glue's walk offers lost skbs */
			struct bbr_lost_walk lw;
			struct bbr_lost_skb l;
			u32 n = take(&r, 1) & 7;

			if (!bbr_lost_walk_start(&sks.st, &sk, &lw))
				break;
			while (n--) {
				memset(&l, 0, sizeof(l));
				l.end_seq = sk.snd_una + take(&r, 2);
				l.tx_delivered = sk.delivered - (take(&r, 2) & 0x3FF);
				l.pcount = take(&r, 1) & 0x3F;
				l.is_retrans = take(&r, 1) & 1;
				l.is_app_limited = take(&r, 1) & 1;
				if (!bbr_core_lost_walk_skb(&sks, &sk, &lw, &l))
					break;
			}
			CHECK(!bbr_after(sks.st.last_lost, sk.lost));
			check_invariants(&sks, &sk, false);
			break;
		}
		default:
			fuzz_params.generation = take(&r, 1) & 1 ? BBR_GEN_2023 :
								  BBR_GEN_2026;
			fuzz_params.ecn_enable = take(&r, 1) & 1;
			fuzz_params.recovery_conservation = take(&r, 1) & 1;
			fuzz_params.probe_rtt_mode_ms = (take(&r, 1) & 1) ? 200 : 0;
			fuzz_params.fast_path = take(&r, 1) & 1;
			/* the L4S mode from the same bytes' high bits */
			l4s_bits = (u8)take(&r, 1);
			if (l4s_bits & 0x80)
				bbr_params_set_profile(&fuzz_params, BBR_PROFILE_l4s);
			fuzz_params.cycle_rounds = (l4s_bits >> 1) & 0x7;
			fuzz_params.bw_slot_rounds = (l4s_bits >> 4) & 0x3;
			break;
		}
	}
	return 0;
}
