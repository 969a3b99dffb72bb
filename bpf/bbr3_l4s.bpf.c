// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbr3_l4s: BBRv3 with the L4S mode, as a BPF struct_ops
 * tcp_congestion_ops of its own.
 *
 * The core (core/bbr3.h) plus the L4S mode's hooks (core/l4s.h: BBR-evo's
 * modifications), with the ops and maps of bbr3 (lib/tcp_cc.h) under its
 * own names. Two things make it the L4S mode without further commands:
 *
 *   - .flags asks the kernel for AccECN and ECT(1) (TCP_CONG_NEEDS_ECN |
 *     NEEDS_ACCECN | ECT_1_NEGOTIATION, Linux 6.18; docs/l4s.md): a
 *     connection negotiates AccECN with a peer that has it, falls back to
 *     classic ECN or none otherwise, and then runs plain BBRv3;
 *   - every parameter set starts from the l4s profile (include/bbr_params.h),
 *     so the mode's keys are in force from the first connection; `bbrctl
 *     set bbr3_l4s ...` changes them as for any CC.
 *
 * A kernel without the AccECN flags refuses the object (EINVAL); `bbrctl
 * load bbr3_l4s` says so before trying. Until the kernel sets ECT(1) on the
 * data itself, `bbrctl ect1 attach DEV` does it at the device.
 *
 * Load with `bbrctl load bbr3_l4s` (on Linux 7.1+ the loader picks
 * bpf/tx_start/bbr3_l4s.bpf.o: docs/bbr3.md, "Builds").
 */
#include "vmlinux.h"
#include "core/types.h"
#include "bbr3_state.h"

/* include/net/tcp.h (6.18): the AccECN congestion-control flags. */
#define TCP_CONG_NEEDS_ECN		0x2	/* negotiate ECN, send ECT */
#define TCP_CONG_NEEDS_ACCECN		0x4	/* ... as AccECN (RFC 9768) */
#define TCP_CONG_ECT_1_NEGOTIATION	0x8	/* ... and send ECT(1): L4S */
#define BBR_L4S_ECN_FLAGS	(TCP_CONG_NEEDS_ECN | TCP_CONG_NEEDS_ACCECN | \
				 TCP_CONG_ECT_1_NEGOTIATION)

/* Every parameter set starts as the l4s profile: the table's defaults,
 * then the profile's rows (a later designator overrides an earlier one). */
#define BBR_L4S_ROW_v3(key, val)
#define BBR_L4S_ROW_v3plus(key, val)
#define BBR_L4S_ROW_l4s(key, val)	.key = (val),
#define BBR_L4S_ROW(prof, key, val)	BBR_L4S_ROW_##prof(key, val)
#define BBR_GLUE_PARAMS_INIT						\
	{ BBR_PARAM_TABLE(BBR_PARAM_INIT) BBR_PROFILE_TABLE(BBR_L4S_ROW) }
#define BBR_GLUE_L4S		1

#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Winitializer-overrides"
#include "lib/tcp_cc.h"
#pragma clang diagnostic pop
#include "core/l4s.h"
#include "core/bbr3_2023.h"
#include "core/bbr3_hooks.h"

char _license[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bbr3_sk);
} bbr3_l4s_sk_stor SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, BBR_TRACE_RING_BYTES);
} bbr3_l4s_trace_rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct bbr_trace_ctl);
} bbr3_l4s_trace_ctl SEC(".maps");

struct bbr_glue_stats bbr3_l4s_stats;

static __always_inline struct bbr3_sk *bbr3_l4s_sk(struct sock *sk)
{
	return bbr_cc_value(&bbr3_l4s_sk_stor, sk, &bbr3_l4s_stats);
}

SEC("struct_ops")
void BPF_PROG(bbr3_l4s_init, struct sock *sk)
{
	struct bbr3_sk *v = bpf_sk_storage_get(&bbr3_l4s_sk_stor, sk, NULL,
					       BPF_SK_STORAGE_GET_F_CREATE);

	if (!v) {	/* the socket keeps its initial cwnd, unpaced */
		__sync_fetch_and_add(&bbr3_l4s_stats.no_storage, 1);
		return;
	}
	bbr_cc_init(sk, v);
}

SEC("struct_ops")
void BPF_PROG(bbr3_l4s_release, struct sock *sk)
{
	bpf_sk_storage_delete(&bbr3_l4s_sk_stor, sk);
}

SEC("struct_ops")
void BPF_PROG(bbr3_l4s_main, struct sock *sk, u32 ack, int flag,
	      const struct rate_sample *rs)
{
	struct bbr3_sk *v = bbr3_l4s_sk(sk);

	if (v)
		bbr_cc_main(sk, v, NULL, ack, flag, rs, &bbr3_l4s_trace_ctl,
			    &bbr3_l4s_trace_rb);
}

SEC("struct_ops")
u32 BPF_PROG(bbr3_l4s_ssthresh, struct sock *sk)
{
	struct bbr3_sk *v = bbr3_l4s_sk(sk);

	return v ? bbr_cc_ssthresh(sk, v) : tcp_sk(sk)->snd_ssthresh;
}

SEC("struct_ops")
u32 BPF_PROG(bbr3_l4s_undo_cwnd, struct sock *sk)
{
	struct bbr3_sk *v = bbr3_l4s_sk(sk);

	return v ? bbr_cc_undo_cwnd(sk, v) : tcp_sk(sk)->snd_cwnd;
}

SEC("struct_ops")
void BPF_PROG(bbr3_l4s_set_state, struct sock *sk, u8 new_state)
{
	struct bbr3_sk *v = bbr3_l4s_sk(sk);

	if (v)
		bbr_cc_set_state(sk, v, new_state);
}

#ifdef BBR_TX_START_OP
SEC("struct_ops")
void BPF_PROG(bbr3_l4s_cwnd_event_tx_start, struct sock *sk)
{
	struct bbr3_sk *v = bbr3_l4s_sk(sk);

	if (v)
		bbr_cc_tx_start(sk, v);
}
#else
SEC("struct_ops")
void BPF_PROG(bbr3_l4s_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct bbr3_sk *v;

	if (event != CA_EVENT_TX_START)
		return;		/* the only event BBRv3 acts on as a sender */
	v = bbr3_l4s_sk(sk);
	if (v)
		bbr_cc_tx_start(sk, v);
}
#endif

SEC("struct_ops")
void BPF_PROG(bbr3_l4s_in_ack_event, struct sock *sk, u32 flags)
{
	struct bbr3_sk *v;

	if (!bbr_cc_tlp_outstanding(sk))
		return;
	v = bbr3_l4s_sk(sk);
	if (v)
		bbr_cc_in_ack_event(sk, v);
}

SEC("struct_ops")
u32 BPF_PROG(bbr3_l4s_min_tso_segs, struct sock *sk)
{
	return bbr_cc_min_tso_segs(sk);
}

SEC("struct_ops")
u32 BPF_PROG(bbr3_l4s_sndbuf_expand, struct sock *sk)
{
	return BBR_SNDBUF_EXPAND_FACTOR;
}

#ifdef BBR_TX_START_OP
SEC(".struct_ops.link")
struct tcp_congestion_ops___tx_start bbr3_l4s = {
	.cwnd_event_tx_start = (void *)bbr3_l4s_cwnd_event_tx_start,
#else
SEC(".struct_ops.link")
struct tcp_congestion_ops bbr3_l4s = {
	.cwnd_event	= (void *)bbr3_l4s_cwnd_event,
#endif
	.init		= (void *)bbr3_l4s_init,
	.release	= (void *)bbr3_l4s_release,
	.cong_control	= (void *)bbr3_l4s_main,
	.ssthresh	= (void *)bbr3_l4s_ssthresh,
	.undo_cwnd	= (void *)bbr3_l4s_undo_cwnd,
	.set_state	= (void *)bbr3_l4s_set_state,
	.in_ack_event	= (void *)bbr3_l4s_in_ack_event,
	.min_tso_segs	= (void *)bbr3_l4s_min_tso_segs,
	.sndbuf_expand	= (void *)bbr3_l4s_sndbuf_expand,
	.flags		= TCP_CONG_NON_RESTRICTED | BBR_L4S_ECN_FLAGS,
	.name		= "bbr3_l4s",
};

/* `bbrctl stat`: one struct bbr3_state_rec per bbr3_l4s socket of the
 * network namespace that reads it. */
SEC("iter/tcp")
int dump_bbr3_l4s_state(struct bpf_iter__tcp *ctx)
{
	struct tcp_sock *tp = bbr_iter_tcp_sock(ctx);
	struct bbr3_state_rec rec = {};
	struct bbr3_sk *v;

	if (!tp)
		return 0;
	v = bpf_sk_storage_get(&bbr3_l4s_sk_stor, tp, NULL, 0);
	if (!v)
		return 0;
	bbr_cc_fill_rec(&rec, (struct sock *)tp, tp, v);
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}
