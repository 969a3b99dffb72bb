// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * dctcp_bpf: DCTCP (RFC 8257) as a BPF struct_ops tcp_congestion_ops, the
 * datacenter baseline the lab compares bbr_swift and bbr3 (ECN) with: the
 * kernel here is built without tcp_dctcp. Our own implementation from the
 * RFC; the logic is in core/dctcp.h (unit-tested natively), this file is
 * the glue.
 *
 *   sender    in_ack_event folds each observation window into alpha;
 *             ssthresh (called by the kernel once per window of ECE, when
 *             it enters CWR, and at loss) cuts by alpha / 2, or by half
 *             on loss (set_state Recovery, CA_EVENT_LOSS); growth is Reno's
 *             (the tcp_reno_cong_avoid kfunc); undo restores the cwnd.
 *   receiver  CA_EVENT_ECN_IS_CE / _NO_CE (sent only to CCs with
 *             TCP_CONG_NEEDS_ECN) keep ECE on ACKs exactly while data is
 *             CE-marked, with an immediate ACK on a change (RFC 8257 §3.2).
 *
 * State is small and lives in icsk_ca_priv. TCP_CONG_NEEDS_ECN makes every
 * socket using it negotiate ECN and send ECT(0), whatever the sysctl says.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "core/types.h"
#include "core/dctcp.h"

char _license[] SEC("license") = "Dual BSD/GPL";

/* include/net/tcp.h */
#define TCP_CONG_NON_RESTRICTED	0x1
#define TCP_CONG_NEEDS_ECN	0x2
/* include/net/tcp_ecn.h (6.18): receiver sets ECE on its ACKs */
#define TCP_ECN_DEMAND_CWR	0x4
/* include/net/tcp_states.h / tcp.h */
#define DCTCP_CA_RECOVERY	3

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

/* Counters for tests: windows measured and cuts made, all sockets. */
struct dctcp_bpf_stats {
	u64 windows;
	u64 ecn_cuts;
	u64 loss_cuts;
	u64 ce_changes;
} dctcp_bpf_stats;

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct dctcp *dctcp_ca(struct sock *sk)
{
	return (struct dctcp *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

SEC("struct_ops")
void BPF_PROG(dctcp_bpf_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *d = dctcp_ca(sk);

	dctcp_init(d, tp->snd_nxt, tp->delivered, tp->delivered_ce);
	d->prior_rcv_nxt = tp->rcv_nxt;
}

SEC("struct_ops")
u32 BPF_PROG(dctcp_bpf_ssthresh, struct sock *sk)
{
	__sync_fetch_and_add(&dctcp_bpf_stats.ecn_cuts, 1);
	return dctcp_ssthresh(dctcp_ca(sk), tcp_sk(sk)->snd_cwnd);
}

SEC("struct_ops")
void BPF_PROG(dctcp_bpf_cong_avoid, struct sock *sk, u32 ack, u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
void BPF_PROG(dctcp_bpf_in_ack_event, struct sock *sk, u32 flags)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (dctcp_update_alpha(dctcp_ca(sk), tp->snd_una, tp->snd_nxt,
			       tp->delivered, tp->delivered_ce))
		__sync_fetch_and_add(&dctcp_bpf_stats.windows, 1);
}

static __always_inline void dctcp_on_loss(struct sock *sk, u32 cwnd)
{
	struct tcp_sock *tp = tcp_sk(sk);

	tp->snd_ssthresh = dctcp_loss_ssthresh(dctcp_ca(sk), cwnd);
	__sync_fetch_and_add(&dctcp_bpf_stats.loss_cuts, 1);
}

SEC("struct_ops")
void BPF_PROG(dctcp_bpf_set_state, struct sock *sk, u8 new_state)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;

	if (new_state == DCTCP_CA_RECOVERY &&
	    new_state != BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state))
		dctcp_on_loss(sk, tcp_sk(sk)->snd_cwnd);
}

/* Receiver: ECE follows CE; on a change, ACK the data before it first. */
static __always_inline void dctcp_ce_event(struct sock *sk, u8 ce)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *d = dctcp_ca(sk);
	u8 old = d->ce_state;

	if (dctcp_rcv_ce_change(d, ce)) {
		__sync_fetch_and_add(&dctcp_bpf_stats.ce_changes, 1);
		if (icsk->icsk_ack.pending & ICSK_ACK_TIMER) {
			if (old)
				tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
			else
				tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
			bpf_tcp_send_ack(tp, d->prior_rcv_nxt);
		}
	}
	d->prior_rcv_nxt = tp->rcv_nxt;
	if (ce)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
}

SEC("struct_ops")
void BPF_PROG(dctcp_bpf_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	switch (ev) {
	case CA_EVENT_ECN_IS_CE:
		dctcp_ce_event(sk, 1);
		break;
	case CA_EVENT_ECN_NO_CE:
		dctcp_ce_event(sk, 0);
		break;
	case CA_EVENT_LOSS:
		/* RTO: ssthresh() ran just before and saved the cwnd. */
		dctcp_on_loss(sk, dctcp_ca(sk)->loss_cwnd);
		break;
	default:
		break;
	}
}

SEC("struct_ops")
u32 BPF_PROG(dctcp_bpf_undo_cwnd, struct sock *sk)
{
	return dctcp_undo_cwnd(dctcp_ca(sk), tcp_sk(sk)->snd_cwnd);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops dctcp_bpf = {
	.init		= (void *)dctcp_bpf_init,
	.ssthresh	= (void *)dctcp_bpf_ssthresh,
	.cong_avoid	= (void *)dctcp_bpf_cong_avoid,
	.in_ack_event	= (void *)dctcp_bpf_in_ack_event,
	.set_state	= (void *)dctcp_bpf_set_state,
	.cwnd_event	= (void *)dctcp_bpf_cwnd_event,
	.undo_cwnd	= (void *)dctcp_bpf_undo_cwnd,
	.flags		= TCP_CONG_NON_RESTRICTED | TCP_CONG_NEEDS_ECN,
	.name		= "dctcp_bpf",
};
