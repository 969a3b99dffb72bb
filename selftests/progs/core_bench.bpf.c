// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The BBRv3 core's per-ACK step alone, for `make bench` (section "core"):
 * each BPF_PROG_TEST_RUN iteration of core_ack is one ACK of a bulk flow in
 * steady state (BDP 100 packets, 10 ms RTT, 2 packets per ACK), fed to
 * bbr_core_main() as bpf/lib/tcp_cc.h feeds it, on state in .bss. No
 * socket, no trampoline, no storage lookup, warm caches: what remains is
 * the core's own instructions and its BPF-to-BPF calls, measured to the
 * nanosecond instead of through bpf_stats' ~100 ns floor. core_nop is the
 * same program without the core (the test-run loop's own cost).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "core/types.h"
#include "bbr3_state.h"

char _license[] SEC("license") = "Dual BSD/GPL";

struct bbr_params bench_param_sets[BBR_PARAM_SLOTS] = {
	[0 ... BBR_PARAM_SLOTS - 1] = BBR_PARAMS_DEFAULT,
};
#define BBR_CFG			bench_param_sets
#define BBR_PRANDOM_U32()	bpf_get_prandom_u32()
#include "core/bbr3.h"
#include "core/bbr3_2023.h"
#include "core/bbr3_hooks.h"

#define BENCH_MSS_BYTES		1448u
#define BENCH_BDP_PKTS		100u
#define BENCH_RTT_US		10000u
#define BENCH_PKTS_PER_ACK	2u
#define BENCH_ACK_GAP_US	(BENCH_RTT_US * BENCH_PKTS_PER_ACK / BENCH_BDP_PKTS)
#define BENCH_START_US		1000000ull

struct bbr3_sk bench_sks;
struct bbr_sock bench_sk;
struct bbr_rs bench_rs;
u64 bench_acks;

static __always_inline void bench_init(struct bbr_sock *s)
{
	s->now_us = BENCH_START_US;
	s->delivered_mstamp_us = BENCH_START_US;
	s->mss = BENCH_MSS_BYTES;
	s->snd_cwnd = 10;
	s->snd_cwnd_clamp = 0xFFFFFFFFu;
	s->max_pacing_rate = ~0ull;
	s->pacing_shift = BBR_PACING_SHIFT_DEFAULT;
	s->kernel_min_rtt_us = BENCH_RTT_US;
	s->srtt_us = BENCH_RTT_US;
	s->inflight = BENCH_BDP_PKTS;
	s->packets_out = BENCH_BDP_PKTS;
	s->delivered = BENCH_BDP_PKTS;
	s->snd_una = 1000;
	s->snd_nxt = s->snd_una + BENCH_BDP_PKTS * BENCH_MSS_BYTES;
	bbr_core_init(&bench_sks, s);
}

/* One ACK for BENCH_PKTS_PER_ACK packets sent one RTT ago; the sender
 * refills to BENCH_BDP_PKTS in flight. */
SEC("tc")
int core_ack(struct __sk_buff *skb)
{
	struct bbr_sock *s = &bench_sk;
	struct bbr_rs *r = &bench_rs;

	bench_acks++;
	if (!bench_sks.st.initialized)
		bench_init(s);
	s->now_us += BENCH_ACK_GAP_US;
	s->delivered_mstamp_us = s->now_us;
	r->prior_in_flight = s->inflight;
	r->prior_delivered = s->delivered - BENCH_BDP_PKTS + BENCH_PKTS_PER_ACK;
	r->delivered = BENCH_BDP_PKTS;
	r->acked_sacked = BENCH_PKTS_PER_ACK;
	r->interval_us = BENCH_RTT_US;
	r->rtt_us = BENCH_RTT_US;
	r->losses = 0;
	r->last_end_seq = s->snd_una + BENCH_PKTS_PER_ACK * BENCH_MSS_BYTES;
	s->delivered += BENCH_PKTS_PER_ACK;
	s->snd_una += BENCH_PKTS_PER_ACK * BENCH_MSS_BYTES;
	s->snd_nxt = s->snd_una + BENCH_BDP_PKTS * BENCH_MSS_BYTES;
	bbr_core_main(&bench_sks, s, r, NULL);
	return 0;
}

SEC("tc")
int core_nop(struct __sk_buff *skb)
{
	bench_acks++;
	return 0;
}
