// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The scenario model (see sim.h). Time is in ns; the core sees µs as the
 * kernel's tcp_mstamp. Event order at equal times: link departures, then
 * ACK arrivals, then sends; each flow's ACKs arrive in order because its
 * base RTT is constant and the queue is FIFO.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "bbr_swift.h"
#include "core/swift.h"
#include "core/ets_opt.h"

#define SIM_TX_RING_DEFAULT	(1u << 16)	/* transmissions remembered */
#define SIM_QUEUE_MAX		(1u << 16)
#define SIM_DUPTHRESH		3u	/* later packets ACKed before marking lost */
#define SIM_UNPACED_SEGS	10u	/* tcp_update_skb_after_send(): first 10 */
#define SIM_INIT_CWND		10u
#define SIM_NEVER		(~0ull)
#define SIM_ACK_LOST_MAX	64u	/* losses one ACK's verdict is judged on */
/* Retransmission timeout: Linux's 200 ms floor (TCP_RTO_MIN) plus srtt,
 * what rto = srtt + max(4 rttvar, rto_min) gives on a steady path. */
#define SIM_RTO_MIN_NS		200000000ull
#define SIM_DELACK_NS		40000000ull	/* a held ACK's timer, default */
/* CUBIC (RFC 9438): C in segments/s^3, beta the multiplicative decrease,
 * and the Reno-friendly region's additive increase per RTT. */
#define SIM_CUBIC_C		0.4
#define SIM_CUBIC_BETA		0.7
#define SIM_CUBIC_ALPHA		(3.0 * (1 - SIM_CUBIC_BETA) / (1 + SIM_CUBIC_BETA))

enum { TX_OUT, TX_ACKED, TX_LOST };

/* The scoreboard bits of a packet (TCP_SKB_CB(skb)->sacked). */
#define PKT_SACKED	0x1	/* delivered */
#define PKT_LOST	0x2	/* marked lost, not delivered since */
#define PKT_RETRANS	0x4	/* a retransmission of it is in flight */

struct sim_tx {
	u64 sent_ns;
	u64 delivered_mstamp_ns;	/* tp->delivered_mstamp at send */
	u64 first_tx_ns;		/* tp->first_tx_mstamp at send */
	u64 ack_unheld_ns;		/* when its ACK would arrive if the
					 * receiver sent it at once */
	u32 delivered;			/* tp->delivered at send */
	u32 pkt;			/* packet (sequence) number */
	/* what a BBRv3 kernel stores in the skb (tcp_rate_skb_sent) */
	u32 tx_in_flight;		/* in flight right after this send */
	u32 tx_lost;			/* tp->lost at this send */
	u8 state;
	u8 app_limited;
	u8 is_retrans;
};

struct sim_sender {
	struct env e;			/* the core's state and socket view */
	const struct sim_flow_cfg *cfg;
	struct sim_tx *tx;		/* ring indexed by transmission id */
	u8 *pkt_state;			/* PKT_*, ring indexed by packet number */
	u32 *pkt_tx;			/* its latest transmission, same ring */
	u32 next_tx, oldest_tx;		/* transmission ids */
	u32 next_pkt, una_pkt;		/* packet numbers */
	u32 *rtx;			/* packets waiting for retransmission */
	u32 rtx_head, rtx_tail;
	u32 inflight;			/* transmissions neither ACKed nor lost:
					 * tcp_packets_in_flight() */
	u32 sacked_out, lost_out, retrans_out;	/* the scoreboard counts */
	u32 ack_lost[SIM_ACK_LOST_MAX];	/* transmissions this batch marked lost */
	u32 n_ack_lost;
	u8 batch_judged;		/* this batch's verdict was measured */
	u32 segs_out;
	u64 next_send_ns;
	u64 first_tx_ns, delivered_mstamp_ns;
	u32 recovery_point;
	u64 progress_ns;		/* last forward progress (RTO timer start) */
	u32 kernel_min_rtt_us;
	u8 cwnd_blocked;
	u8 active;
	/* ACKs in flight back to the sender */
	u64 *ack_at;
	u32 *ack_tx;
	u32 ack_head, ack_tail;
	u32 ring;			/* size of the rings above */
	struct bbr_delay d;		/* BBR.Swift, when cfg->swift_target_us */
	u32 ack_held;			/* packets whose ACK the receiver holds */
	u32 ack_hold_from;		/* ack ring index of the first of them */
	/* SIM_CC_CUBIC */
	double cu_cwnd, cu_ssthresh, cu_wmax, cu_k, cu_origin, cu_west;
	u64 cu_epoch_ns;
	/* an application rate (cfg->app_rate_bps or sim_set_app_rate()) */
	u8 app_ctl;			/* has one: app-limited marking on */
	u8 app_resumed;			/* cfg->app_resume_ns has passed */
	u64 app_rate_bps;		/* SIM_APP_BULK: none now */
	double app_pkts;		/* written, not yet sent, at app_last_ns */
	u64 app_last_ns;
};

struct sim_pkt {
	int flow;
	u32 tx;
};

struct sim {
	const struct sim_cfg *cfg;
	struct sim_result *res;
	struct sim_sender s[SIM_MAX_FLOWS];
	struct sim_pkt *q;
	u32 q_head, q_tail;
	u64 link_busy_until_ns;		/* departure time of the head packet */
	u64 loss_rng;			/* state of the random-loss generator */
	u64 tx_time_ns;
	u64 last_q_change_ns;
	u64 now;
	u64 path_cur, path_prev;	/* the ETS path filter of the flows' host */
	u64 path_starts;		/* and its start count */
	/* what sim_set_*() may change while it runs (from cfg) */
	u64 rate_bps;
	u32 loss_ppm;
	u32 ack_burst_us;
	double pol_tokens;		/* the policer's bucket, bytes */
	u64 pol_last_ns;
};

/* The run in progress, for sim_set_*(). */
static struct sim *sim_cur;

/* Unsent data an application buffers ahead of the sender, packets. */
#define SIM_APP_BUF_PKTS	16.0
#define SIM_BITS_PER_PKT	((double)SIM_WIRE_BYTES * 8)

static u32 q_len(const struct sim *m)
{
	return m->q_tail - m->q_head;
}

/* Integrate queue occupancy up to now (for the standing-queue figure). */
static void q_account(struct sim *m)
{
	u64 from = m->last_q_change_ns;

	if (from < m->res->measure_from_ns)
		from = m->res->measure_from_ns;
	if (m->now > from) {
		u32 qb = q_len(m) < SIM_QHIST ? q_len(m) : SIM_QHIST - 1;

		m->res->queue_pkt_ns += (double)q_len(m) * (double)(m->now - from);
		m->res->queue_time_ns += (double)(m->now - from);
		m->res->queue_hist_ns[qb] += (double)(m->now - from);
	}
	m->last_q_change_ns = m->now;
}

/* xorshift64*: the loss process has its own generator, so it is the same
 * whatever the core draws. */
static u32 sim_loss_draw(struct sim *m)
{
	u64 x = m->loss_rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	m->loss_rng = x;
	return (u32)((x * 0x2545F4914F6CDD1Dull) >> 32);
}

static bool sim_random_loss(struct sim *m)
{
	return m->loss_ppm &&
	       (u64)sim_loss_draw(m) * 1000000u < (u64)m->loss_ppm << 32;
}

/* Does the policer pass a packet now (no policer: yes)? */
static bool sim_policer_pass(struct sim *m)
{
	if (!m->cfg->policer_rate_bps)
		return true;
	m->pol_tokens += (double)(m->now - m->pol_last_ns) *
			 m->cfg->policer_rate_bps / 8 / 1e9;
	if (m->pol_tokens > m->cfg->policer_burst_bytes)
		m->pol_tokens = m->cfg->policer_burst_bytes;
	m->pol_last_ns = m->now;
	if (m->pol_tokens < SIM_WIRE_BYTES)
		return false;
	m->pol_tokens -= SIM_WIRE_BYTES;
	return true;
}

/* Packets the application has written and the sender not yet sent. */
static double app_backlog(const struct sim_sender *s, u64 now)
{
	double p;

	if (s->app_rate_bps == SIM_APP_BULK)
		return 1e18;
	p = s->app_pkts + (double)(now - s->app_last_ns) * s->app_rate_bps /
			  SIM_BITS_PER_PKT / 1e9;
	return p < SIM_APP_BUF_PKTS ? p : SIM_APP_BUF_PKTS;
}

static bool sender_rtx_pending(const struct sim_sender *s);

/* tcp_rate_check_app_limited(), as the stack calls it when the
 * application writes and after sends: nothing to send, cwnd open, no
 * retransmit pending: samples until what is in flight now is delivered
 * are app-limited. */
static void sender_check_app_limited(struct sim_sender *s, u64 now)
{
	u32 mark;

	if (!s->app_ctl || !s->active || s->cfg->cc != SIM_CC_BBR ||
	    sender_rtx_pending(s) || s->inflight >= s->e.sk.snd_cwnd ||
	    app_backlog(s, now) >= 1.0)
		return;
	mark = s->e.sk.delivered + s->inflight;
	s->e.sk.app_limited = mark ? mark : 1;
}

static void app_set_rate(struct sim_sender *s, u64 now, u64 rate_bps)
{
	sender_check_app_limited(s, now);	/* the write finds nothing queued */
	s->app_pkts = s->app_rate_bps == SIM_APP_BULK ? 0 : app_backlog(s, now);
	s->app_last_ns = now;
	s->app_rate_bps = rate_bps;
	s->app_ctl = 1;
}

static bool sender_rtx_pending(const struct sim_sender *s)
{
	return s->rtx_head != s->rtx_tail;
}

static void sender_load_sock(struct sim_sender *s, u64 now)
{
	struct bbr_sock *sk = &s->e.sk;

	sk->now_us = now / 1000;
	sk->delivered_mstamp_us = s->delivered_mstamp_ns / 1000;
	sk->edt_lead_ns = s->next_send_ns > now ? s->next_send_ns - now : 0;
	sk->inflight = s->inflight;
	sk->packets_out = s->next_pkt - s->una_pkt;
	sk->sacked_out = s->sacked_out;
	sk->lost_out = s->lost_out;
	sk->retrans_out = s->retrans_out;
	sk->snd_nxt = ENV_ISN + s->next_pkt * ENV_MSS_BYTES;
	sk->snd_una = ENV_ISN + s->una_pkt * ENV_MSS_BYTES;
	sk->kernel_min_rtt_us = s->kernel_min_rtt_us;
}

static void sender_send(struct sim *m, struct sim_sender *s, int f)
{
	struct sim_tx *t = &s->tx[s->next_tx % s->ring];
	u64 gap_ns;

	if (s->app_ctl && !s->inflight && !sender_rtx_pending(s) &&
	    s->cfg->cc == SIM_CC_BBR) {	/* CA_EVENT_TX_START */
		sender_load_sock(s, m->now);
		bbr_core_tx_start(s->e.b, &s->e.sk);
	}
	if (s->app_ctl && !sender_rtx_pending(s)) {	/* new data written */
		s->app_pkts = app_backlog(s, m->now) - 1;
		s->app_last_ns = m->now;
	}
	if (!s->inflight) {		/* tcp_rate_skb_sent(): restart */
		s->first_tx_ns = m->now;
		s->delivered_mstamp_ns = m->now;
		s->progress_ns = m->now;
	}
	memset(t, 0, sizeof(*t));
	t->sent_ns = m->now;
	t->first_tx_ns = s->first_tx_ns;
	t->delivered_mstamp_ns = s->delivered_mstamp_ns;
	t->delivered = s->e.sk.delivered;
	t->app_limited = s->e.sk.app_limited != 0;
	t->state = TX_OUT;
	/* as a BBRv3 kernel's tcp_rate_skb_sent(): before the counts below */
	t->tx_in_flight = s->inflight + 1;
	t->tx_lost = s->e.sk.lost;
	if (s->rtx_head != s->rtx_tail) {	/* retransmits go first */
		t->pkt = s->rtx[s->rtx_head++ % s->ring];
		t->is_retrans = 1;
		s->pkt_state[t->pkt % s->ring] |= PKT_RETRANS;
		s->retrans_out++;
		m->res->retransmits[f]++;
	} else {
		t->pkt = s->next_pkt++;
		s->pkt_state[t->pkt % s->ring] = 0;
	}
	s->pkt_tx[t->pkt % s->ring] = s->next_tx;
	s->next_tx++;
	s->inflight++;
	s->segs_out++;

	/* EDT pacing, as tcp_update_skb_after_send(): by payload bytes, as
	 * the core computes the rate from bw x mss */
	if (s->segs_out > SIM_UNPACED_SEGS && s->e.sk.pacing_rate) {
		gap_ns = (u64)ENV_MSS_BYTES * 1000000000ull / s->e.sk.pacing_rate;
		s->next_send_ns = (s->next_send_ns > m->now ? s->next_send_ns : m->now) +
				  gap_ns;
	}

	/* into the bottleneck: random loss, policer, tail drop */
	if (sim_random_loss(m) || !sim_policer_pass(m) ||
	    q_len(m) >= m->cfg->buffer_pkts) {
		m->res->drops++;
		return;
	}
	q_account(m);
	if (!q_len(m))
		m->link_busy_until_ns = m->now + m->tx_time_ns;
	m->q[m->q_tail % SIM_QUEUE_MAX].flow = f;
	m->q[m->q_tail % SIM_QUEUE_MAX].tx = s->next_tx - 1;
	m->q_tail++;
	if (q_len(m) > m->res->queue_max_pkts)
		m->res->queue_max_pkts = q_len(m);
}

static u32 pkt_end_seq(u32 pkt)
{
	return ENV_ISN + (pkt + 1) * ENV_MSS_BYTES;
}

/* Bucket of an error (reconstructed - exact), see SIM_ERR_BUCKETS. */
static int err_bucket(s64 err)
{
	static const s64 upper[SIM_ERR_BUCKETS - 1] = { -21, -6, -2, -1, 0, 1, 5, 20 };
	int i;

	for (i = 0; i < SIM_ERR_BUCKETS - 1; i++)
		if (err <= upper[i])
			return i;
	return SIM_ERR_BUCKETS - 1;
}

/* The inflight_hi a lost skb leads to: 0 if not too high, else the level
 * at which the loss rate crossed loss_thresh. */
static u32 lost_verdict(const struct bbr3 *b, struct bbr_rs *lrs, u32 pcount)
{
	if (!bbr_is_loss_too_high(b, lrs))
		return 0;
	return bbr_inflight_hi_from_lost(b, lrs, pcount);
}

/* The stack marks a transmission lost (tcp_mark_skb_lost): scoreboard and
 * tp->lost; a BBRv3 kernel then calls the CC's per-lost-skb hook. */
static void sender_lose(struct sim *m, struct sim_sender *s, struct sim_tx *t)
{
	u8 *st = &s->pkt_state[t->pkt % s->ring];
	struct bbr_lost_skb l = {
		.pcount = 1,
		.is_app_limited = t->app_limited,
		.has_tx = 1,
		.tx_in_flight = t->tx_in_flight,
	};

	t->state = TX_LOST;
	s->inflight--;
	if (!(*st & PKT_LOST)) {
		*st |= PKT_LOST;
		s->lost_out++;
	} else if (*st & PKT_RETRANS) {		/* a retransmit lost again */
		*st &= (u8)~PKT_RETRANS;
		s->retrans_out--;
	}
	s->e.sk.lost++;
	s->rtx[s->rtx_tail++ % s->ring] = t->pkt;
	m->res->fid.lost_pkts++;
	if (m->cfg->inputs != SIM_INPUTS_EXACT || !s->e.b->initialized ||
	    s->cfg->cc != SIM_CC_BBR)
		return;
	sender_load_sock(s, m->now);
	l.lost = (s32)(s->e.sk.lost - t->tx_lost);
	bbr_core_skb_lost(&s->e.sks, &s->e.sk, &l);
}

/* Was transmission `txid` marked lost by the current batch? */
static bool in_batch(const struct sim_sender *s, u32 txid)
{
	u32 k;

	for (k = 0; k < s->n_ack_lost; k++)
		if (s->ack_lost[k] == txid)
			return true;
	return false;
}

/*
 * What the glue does in cong_control after the stack marked losses: walk
 * the retransmit queue in sequence order and offer the core each skb that
 * is lost and not yet retransmitted. Runs of delivered packets count as one
 * skb (the stack merges SACKed skbs). Judges, on the way, the verdict the
 * core reaches against the reference's: once per batch of losses, if a
 * probe is being evaluated.
 */
static void sender_lost_walk(struct sim *m, struct sim_sender *s)
{
	struct sim_fidelity *fid = &m->res->fid;
	struct bbr_rs lrs = {};
	struct bbr_lost_walk w;
	u32 p, steps = 0, lost_before = s->e.b->last_lost;
	u32 v_exact = 0, v_recon = 0, k;
	bool more, measure;

	sender_load_sock(s, m->now);
	more = bbr_lost_walk_start(s->e.b, &s->e.sk, &w);
	measure = !s->batch_judged && more && s->e.b->bw_probe_samples;
	s->batch_judged |= more;
	if (measure) {		/* the reference: one by one, in marking order */
		for (k = 0; k < s->n_ack_lost && !v_exact; k++) {
			const struct sim_tx *t = &s->tx[s->ack_lost[k] % s->ring];

			lrs.tx_in_flight = t->tx_in_flight;
			lrs.lost = (s32)(lost_before + k + 1 - t->tx_lost);
			v_exact = lost_verdict(s->e.b, &lrs, 1);
		}
	}
	if (m->cfg->inputs == SIM_INPUTS_MAINLINE) {
		for (p = s->una_pkt; more && p != s->next_pkt &&
		     steps < BBR_LOST_WALK_MAX_SKBS; p++, steps++) {
			u8 st = s->pkt_state[p % s->ring];
			u32 txid = s->pkt_tx[p % s->ring];
			const struct sim_tx *t = &s->tx[txid % s->ring];
			struct bbr_lost_skb l = {
				.end_seq = pkt_end_seq(p), .tx_delivered = t->delivered,
				.pcount = 1, .is_retrans = t->is_retrans,
				.is_app_limited = t->app_limited,
			};
			bool take = w.skip == 0;

			if (st & PKT_SACKED) {
				while (p + 1 != s->next_pkt &&
				       (s->pkt_state[(p + 1) % s->ring] & PKT_SACKED))
					p++;
				continue;
			}
			if (!(st & PKT_LOST) || (st & PKT_RETRANS))
				continue;
			if (take) {
				fid->lost_found++;
				fid->lost_misfound += !in_batch(s, txid);
				if (measure && !v_recon) {
					bbr_tx_lookup(&s->e.sks, &s->e.sk, l.end_seq,
						      l.tx_delivered, l.is_retrans,
						      s->e.b->last_lost + 1,
						      &lrs.tx_in_flight, &lrs.lost);
					v_recon = lost_verdict(s->e.b, &lrs, 1);
				}
			}
			more = bbr_core_lost_walk_skb(&s->e.sks, &s->e.sk, &w, &l);
		}
	}
	if (!measure)
		return;
	if (!v_recon && w.want) {	/* the rest: one skb at cong_control */
		struct bbr_rs rs = {};
		u32 pcount;

		bbr_tx_lookup(&s->e.sks, &s->e.sk, s->e.rs.last_end_seq,
			      s->e.rs.prior_delivered, s->e.rs.is_retrans,
			      s->e.sk.lost, &rs.tx_in_flight, &rs.lost);
		rs.prior_in_flight = s->e.rs.prior_in_flight;
		pcount = bbr_unhooked_loss_sample(&s->e.sk, &rs, w.want, &lrs);
		v_recon = lost_verdict(s->e.b, &lrs, pcount);
	}
	fid->ack_losses_probing++;
	fid->ack_losses_agree += v_exact == v_recon;
	fid->ack_too_high_exact += v_exact != 0;
	fid->ack_too_high_recon += v_recon != 0;
}

/* Mark transmissions lost once SIM_DUPTHRESH later ones were ACKed. */
static u32 sender_mark_lost(struct sim *m, struct sim_sender *s, u32 acked_tx)
{
	u32 losses = 0;

	while (s->oldest_tx != s->next_tx &&
	       bbr_before(s->oldest_tx + SIM_DUPTHRESH, acked_tx + 1)) {
		struct sim_tx *t = &s->tx[s->oldest_tx % s->ring];

		if (t->state == TX_OUT) {
			if (s->n_ack_lost < SIM_ACK_LOST_MAX)
				s->ack_lost[s->n_ack_lost++] = s->oldest_tx;
			sender_lose(m, s, t);
			losses++;
		}
		s->oldest_tx++;
	}
	return losses;
}

/* The rate sample's tx_in_flight/lost: the exact ones (t's), what the send
 * records give, how the two compare, and which the core gets. */
static void sender_sample_inputs(struct sim *m, struct sim_sender *s,
				 const struct sim_tx *t, struct bbr_rs *rs)
{
	struct sim_fidelity *fid = &m->res->fid;
	struct bbr_rs exact = {}, recon = {};
	bool th_exact, th_recon;

	exact.tx_in_flight = t->tx_in_flight;
	exact.lost = (s32)(s->e.sk.lost - t->tx_lost);
	if (!bbr_tx_lookup(&s->e.sks, &s->e.sk, rs->last_end_seq,
			   rs->prior_delivered, rs->is_retrans, s->e.sk.lost,
			   &recon.tx_in_flight, &recon.lost)) {
		fid->inexact_lookups++;
		fid->inexact_lost_exact += (s32)(s->e.sk.lost - t->tx_lost);
		fid->inexact_lost_recon += recon.lost;
		fid->inexact_inflight_exact += t->tx_in_flight;
		fid->inexact_inflight_recon += recon.tx_in_flight;
		if (m->cfg->fid_loss_thresh) {
			u64 thr = m->cfg->fid_loss_thresh;
			bool te = (u64)(s32)(s->e.sk.lost - t->tx_lost) * BBR_UNIT >
				  t->tx_in_flight * thr;
			bool tr = (u64)recon.lost * BBR_UNIT > recon.tx_in_flight * thr;

			if (te || tr) {
				fid->inexact_decisive++;
				fid->inexact_agree += te == tr;
			}
		}
	}
	fid->samples++;
	fid->err_inflight[err_bucket((s64)recon.tx_in_flight - exact.tx_in_flight)]++;
	fid->err_lost[err_bucket((s64)recon.lost - exact.lost)]++;
	fid->lost_exact += exact.lost;
	fid->lost_recon += recon.lost;
	if (t->is_retrans) {
		fid->rtx_samples++;
		fid->rtx_inflight_exact += exact.tx_in_flight;
		fid->rtx_inflight_recon += recon.tx_in_flight;
		fid->rtx_lost_exact += exact.lost;
		fid->rtx_lost_recon += recon.lost;
	}
	if (exact.lost > 0 || recon.lost > 0) {
		th_exact = bbr_is_loss_too_high(s->e.b, &exact);
		th_recon = bbr_is_loss_too_high(s->e.b, &recon);
		fid->decisive++;
		fid->decisive_agree += th_exact == th_recon;
		fid->too_high_exact += th_exact;
		fid->too_high_recon += th_recon;
	}
	if (m->cfg->inputs == SIM_INPUTS_EXACT) {
		rs->has_tx = 1;
		rs->tx_in_flight = exact.tx_in_flight;
		rs->lost = exact.lost;
	}
}

/* CUBIC's window after an ACK in congestion avoidance or slow start. */
static void cubic_grow(struct sim *m, struct sim_sender *s)
{
	double t, target, rtt_s = s->kernel_min_rtt_us / 1e6;

	if (s->cu_cwnd < s->cu_ssthresh) {
		s->cu_cwnd += 1;
		return;
	}
	if (!s->cu_epoch_ns) {
		s->cu_epoch_ns = m->now;
		if (s->cu_wmax > s->cu_cwnd) {
			s->cu_k = cbrt((s->cu_wmax - s->cu_cwnd) / SIM_CUBIC_C);
			s->cu_origin = s->cu_wmax;
		} else {
			s->cu_k = 0;
			s->cu_origin = s->cu_cwnd;
		}
		s->cu_west = s->cu_cwnd;
	}
	t = (double)(m->now - s->cu_epoch_ns) / 1e9 + rtt_s;
	target = s->cu_origin + SIM_CUBIC_C * (t - s->cu_k) * (t - s->cu_k) * (t - s->cu_k);
	if (target > 1.5 * s->cu_cwnd)
		target = 1.5 * s->cu_cwnd;
	s->cu_west += SIM_CUBIC_ALPHA / s->cu_cwnd;
	if (s->cu_west > target)
		target = s->cu_west;
	if (target > s->cu_cwnd)
		s->cu_cwnd += (target - s->cu_cwnd) / s->cu_cwnd;
	else
		s->cu_cwnd += 0.01 / s->cu_cwnd;
}

/* CUBIC's multiplicative decrease (with fast convergence). */
static void cubic_decrease(struct sim_sender *s)
{
	s->cu_wmax = s->cu_cwnd < s->cu_wmax ?
		     s->cu_cwnd * (1 + SIM_CUBIC_BETA) / 2 : s->cu_cwnd;
	s->cu_cwnd *= SIM_CUBIC_BETA;
	if (s->cu_cwnd < 2)
		s->cu_cwnd = 2;
	s->cu_ssthresh = s->cu_cwnd;
	s->cu_epoch_ns = 0;
}

/*
 * Measurement noise on a Network_RTT sample (host and emulator delay):
 * uniform in [0, net_rtt_jitter_us) plus, with net_rtt_exp_us, an
 * exponential of that mean (the long tail of a busy host's softirq and
 * the emulator's release lateness), cut at 20 means.
 */
static u32 sim_net_rtt_noise_us(const struct sim_cfg *cfg)
{
	double u, e = 0;
	u32 n = 0;

	if (cfg->net_rtt_jitter_us)
		n += unit_prandom() % cfg->net_rtt_jitter_us;
	if (cfg->net_rtt_exp_us) {
		u = (unit_prandom() + 1.0) / 4294967297.0;	/* (0, 1) */
		e = -log(u) * cfg->net_rtt_exp_us;
		if (e > 20.0 * cfg->net_rtt_exp_us)
			e = 20.0 * cfg->net_rtt_exp_us;
		n += (u32)e;
	}
	return n;
}

/* A loss-based flow's ACK: Recovery entry/exit as for the core, window
 * growth outside Recovery. */
static void cubic_on_ack(struct sim *m, struct sim_sender *s, u32 losses)
{
	struct bbr_sock *sk = &s->e.sk;

	if (losses && sk->ca_state == BBR_CA_OPEN) {
		cubic_decrease(s);
		sk->ca_state = BBR_CA_RECOVERY;
		s->recovery_point = s->next_pkt;
	} else if ((sk->ca_state == BBR_CA_RECOVERY ||
		    sk->ca_state == BBR_CA_LOSS) &&
		   !bbr_before(s->una_pkt, s->recovery_point)) {
		sk->ca_state = BBR_CA_OPEN;
	} else if (sk->ca_state == BBR_CA_OPEN || sk->ca_state == BBR_CA_LOSS) {
		cubic_grow(m, s);	/* CA_LOSS: slow start after an RTO */
	}
	sk->snd_cwnd = s->cu_cwnd < 1 ? 1 : (u32)s->cu_cwnd;
}

static void sender_on_ack(struct sim *m, struct sim_sender *s, int f, u32 txid)
{
	struct sim_tx *t = &s->tx[txid % s->ring];
	struct env *e = &s->e;
	struct bbr_rs *rs = &e->rs;
	u64 snd_us, ack_us, rtt_us;
	u32 prior_in_flight = s->inflight, losses, bin, prior_hi = e->b->inflight_hi;
	u8 prev_mode = e->b->mode, *st = &s->pkt_state[t->pkt % s->ring];

	if (t->state != TX_OUT)
		return;		/* declared lost already; its retransmit counts */
	s->n_ack_lost = 0;
	s->batch_judged = 0;
	t->state = TX_ACKED;
	s->inflight--;
	/* SACK tagging (tcp_sacktag_one): the packet is delivered */
	if (*st & PKT_LOST)
		s->lost_out--;
	if (*st & PKT_RETRANS)
		s->retrans_out--;
	*st = PKT_SACKED;
	s->sacked_out++;
	bin = (u32)(m->now / SIM_BIN_NS);
	if (bin < SIM_MAX_BINS)
		m->res->bin_pkts[f][bin]++;
	/* the cumulative ACK point moves over what is delivered */
	while (s->una_pkt != s->next_pkt &&
	       (s->pkt_state[s->una_pkt % s->ring] & PKT_SACKED)) {
		s->sacked_out--;
		s->una_pkt++;
	}

	e->sk.delivered++;
	s->delivered_mstamp_ns = m->now;
	s->progress_ns = m->now;
	losses = sender_mark_lost(m, s, txid);

	/* tcp_rate_skb_delivered() + tcp_rate_gen() for a one-packet ACK */
	memset(rs, 0, sizeof(*rs));
	rs->prior_delivered = t->delivered;
	rs->is_app_limited = t->app_limited;
	rs->is_retrans = t->is_retrans;
	s->first_tx_ns = t->sent_ns;
	snd_us = (t->sent_ns - t->first_tx_ns) / 1000;
	ack_us = (m->now - t->delivered_mstamp_ns) / 1000;
	rs->interval_us = (s64)(snd_us > ack_us ? snd_us : ack_us);
	rs->delivered = (s32)(e->sk.delivered - t->delivered);
	rtt_us = (m->now - t->sent_ns) / 1000;
	if (m->cfg->core_rtt_noise && !m->cfg->swift_target_us)
		rtt_us += sim_net_rtt_noise_us(m->cfg);
	rs->rtt_us = t->is_retrans ? -1 : (s64)rtt_us;
	if (!t->is_retrans && rtt_us < s->kernel_min_rtt_us)
		s->kernel_min_rtt_us = (u32)rtt_us;
	if (rs->interval_us < (s64)s->kernel_min_rtt_us)
		rs->interval_us = -1;	/* shorter than min RTT: not trusted */
	rs->acked_sacked = 1;
	rs->losses = (s32)losses;
	rs->prior_in_flight = prior_in_flight;
	rs->last_end_seq = pkt_end_seq(t->pkt);
	if (!t->is_retrans)
		e->sk.srtt_us = e->sk.srtt_us ?
			(u32)((7ull * e->sk.srtt_us + rtt_us) / 8) : (u32)rtt_us;
	if (e->sk.app_limited && bbr_after(e->sk.delivered, e->sk.app_limited))
		e->sk.app_limited = 0;

	sender_load_sock(s, m->now);
	if (s->cfg->cc == SIM_CC_CUBIC) {
		cubic_on_ack(m, s, losses);
		return;
	}
	/* Recovery entry and exit, as tcp_fastretrans_alert() would */
	if (losses && e->sk.ca_state == BBR_CA_OPEN) {
		bbr_core_ssthresh(e->b, &e->sk);
		e->sk.ca_state = BBR_CA_RECOVERY;
		bbr_core_set_state(&e->sks, &e->sk, BBR_CA_RECOVERY);
		s->recovery_point = s->next_pkt;
	} else if ((e->sk.ca_state == BBR_CA_RECOVERY ||
		    e->sk.ca_state == BBR_CA_LOSS) &&
		   !bbr_before(s->una_pkt, s->recovery_point)) {
		e->sk.ca_state = BBR_CA_OPEN;
		bbr_core_set_state(&e->sks, &e->sk, BBR_CA_OPEN);
	}
	e->sk.is_cwnd_limited = s->cwnd_blocked;
	s->cwnd_blocked = 0;
	e->sk.ack = e->sk.snd_una;
	if (m->cfg->swift_target_us && !t->is_retrans) {
		/* ETS would measure exactly this: the RTT less the time the
		 * receiver held the ACK (EcrDel); a retransmit's ACK leaves
		 * the previous sample in place */
		if (m->now > t->ack_unheld_ns)
			rtt_us -= (m->now - t->ack_unheld_ns) / 1000;
		s->d.smp.present = 1;
		s->d.smp.last_sample_ns = m->now;
		s->d.smp.network_rtt_us = (u32)rtt_us + sim_net_rtt_noise_us(m->cfg);
		if (m->cfg->swift_path_win_us)
			s->d.smp.path_rtt_us = ets_path_update(&m->path_cur, &m->path_prev,
							       s->d.smp.network_rtt_us,
							       m->now, m->cfg->swift_path_win_us);
		if (m->now >= m->res->measure_from_ns) {
			m->res->net_rtt_sum_us += s->d.smp.network_rtt_us;
			m->res->net_rtt_true_sum_us += rtt_us;
			m->res->net_rtt_samples++;
		}
	}
	sender_sample_inputs(m, s, t, rs);
	sender_lost_walk(m, s);			/* the glue's cong_control */
	bbr_core_main(&e->sks, &e->sk, rs, m->cfg->swift_target_us ? &s->d : NULL);
	if (e->b->inflight_hi < prior_hi)
		m->res->inflight_hi_cuts[f]++;
	if (m->cfg->on_ack)
		m->cfg->on_ack(f, m->now, e->b, &e->sk);

	if (e->b->mode != prev_mode) {
		m->res->mode_changes[f]++;
		if (e->b->mode == BBR_PROBE_RTT)
			m->res->probe_rtt_entries[f]++;
	}
}

/*
 * When the ACK of a packet leaving the bottleneck now reaches its sender:
 * one base RTT later, unless the receiver holds it to ACK ack_every packets
 * at once (the held ones go with the ack_every-th, or on the delayed-ACK
 * timer), and the ACK path releases ACKs only on a grid of ack_burst_us.
 * Times stay in order along the flow's ACK ring.
 */
static u64 sim_ack_time(struct sim *m, struct sim_sender *s)
{
	u64 at = m->now + s->cfg->base_rtt_ns, burst, delack, k;

	if (m->cfg->ack_every > 1) {
		delack = m->cfg->delack_us ? m->cfg->delack_us * 1000ull :
					     SIM_DELACK_NS;
		if (s->ack_held &&
		    s->ack_at[s->ack_hold_from % s->ring] <= at)
			s->ack_held = 0;	/* the timer sent them */
		if (!s->ack_held)
			s->ack_hold_from = s->ack_tail;
		if (++s->ack_held >= m->cfg->ack_every) {
			for (k = s->ack_hold_from; k != s->ack_tail; k++)
				s->ack_at[k % s->ring] = at;	/* sent with this one */
			s->ack_held = 0;
		} else if (s->ack_held == 1) {
			at += delack;
		} else {
			at = s->ack_at[s->ack_hold_from % s->ring];
		}
	}
	burst = (u64)m->ack_burst_us * 1000ull;
	if (burst)
		at = (at + burst - 1) / burst * burst;
	return at;
}

static u64 sender_rto_at(const struct sim_sender *s)
{
	if (!s->active || !s->inflight)
		return SIM_NEVER;
	return s->progress_ns + SIM_RTO_MIN_NS + (u64)s->e.sk.srtt_us * 1000;
}

/* tcp_retransmit_timer() -> tcp_enter_loss(): everything out is lost, cwnd
 * one packet beyond what is in flight (none), the CC hears CA_Loss. */
static void sender_rto(struct sim *m, struct sim_sender *s)
{
	struct env *e = &s->e;

	s->n_ack_lost = 0;
	s->batch_judged = 0;
	while (s->oldest_tx != s->next_tx) {
		struct sim_tx *t = &s->tx[s->oldest_tx % s->ring];

		if (t->state == TX_OUT) {
			if (s->n_ack_lost < SIM_ACK_LOST_MAX)
				s->ack_lost[s->n_ack_lost++] = s->oldest_tx;
			sender_lose(m, s, t);
		}
		s->oldest_tx++;
	}
	sender_load_sock(s, m->now);
	if (s->cfg->cc == SIM_CC_CUBIC) {
		if (e->sk.ca_state != BBR_CA_LOSS)
			cubic_decrease(s);
		s->cu_cwnd = 1;
	} else {
		if (e->sk.ca_state != BBR_CA_LOSS)
			bbr_core_ssthresh(e->b, &e->sk);
		bbr_core_set_state(&e->sks, &e->sk, BBR_CA_LOSS);
	}
	e->sk.ca_state = BBR_CA_LOSS;
	e->sk.snd_cwnd = 1;
	s->recovery_point = s->next_pkt;
	s->progress_ns = m->now;
	m->res->rtos++;
}

static u64 sender_next_send(const struct sim *m, const struct sim_sender *s)
{
	u64 at;
	double need;

	if (!s->active)
		return SIM_NEVER;
	if (s->inflight >= s->e.sk.snd_cwnd)
		return SIM_NEVER;	/* cwnd-limited: wait for an ACK */
	at = s->next_send_ns > m->now ? s->next_send_ns : m->now;
	if (!s->app_ctl || sender_rtx_pending(s))
		return at;
	need = 1.0 - app_backlog(s, at);	/* the application's next packet */
	if (need <= 0)
		return at;
	if (!s->app_rate_bps)
		return SIM_NEVER;
	return at + (u64)(need * SIM_BITS_PER_PKT * 1e9 / s->app_rate_bps) + 1;
}

void sim_set_rate(u64 rate_bps)
{
	if (!sim_cur || !rate_bps)
		return;
	sim_cur->rate_bps = rate_bps;
	sim_cur->tx_time_ns = (u64)SIM_WIRE_BYTES * 8 * 1000000000ull / rate_bps;
}

void sim_set_loss_ppm(u32 loss_ppm)
{
	if (sim_cur)
		sim_cur->loss_ppm = loss_ppm;
}

void sim_set_ack_burst_us(u32 ack_burst_us)
{
	if (sim_cur)
		sim_cur->ack_burst_us = ack_burst_us;
}

void sim_set_app_rate(int flow, u64 rate_bps)
{
	if (sim_cur && flow >= 0 && flow < sim_cur->cfg->nflows)
		app_set_rate(&sim_cur->s[flow], sim_cur->now, rate_bps);
}

static int sender_init(struct sim_sender *s, const struct sim_flow_cfg *cfg,
		       u32 ring)
{
	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->ring = ring ? ring : SIM_TX_RING_DEFAULT;
	s->tx = calloc(s->ring, sizeof(*s->tx));
	s->pkt_state = calloc(s->ring, 1);
	s->pkt_tx = calloc(s->ring, sizeof(*s->pkt_tx));
	s->rtx = calloc(s->ring, sizeof(*s->rtx));
	s->ack_at = calloc(s->ring, sizeof(*s->ack_at));
	s->ack_tx = calloc(s->ring, sizeof(*s->ack_tx));
	s->kernel_min_rtt_us = BBR_UNSET;
	return s->tx && s->pkt_state && s->pkt_tx && s->rtx && s->ack_at &&
	       s->ack_tx ? 0 : -1;
}

static void sender_free(struct sim_sender *s)
{
	free(s->tx);
	free(s->pkt_state);
	free(s->pkt_tx);
	free(s->rtx);
	free(s->ack_at);
	free(s->ack_tx);
}

static void sender_start(struct sim *m, struct sim_sender *s, u64 now)
{
	struct swift_cfg scfg = { .target_rtt_us = m->cfg->swift_target_us };

	env_init(&s->e, SIM_INIT_CWND);
	s->e.sk.now_us = now / 1000;
	s->e.sk.delivered_mstamp_us = now / 1000;
	s->e.sk.snd_cwnd = SIM_INIT_CWND;
	bbr_core_set_param_slot(s->e.b, s->cfg->param_slot);
	bbr_core_init(&s->e.sks, &s->e.sk);
	if (s->cfg->cc == SIM_CC_CUBIC) {	/* unpaced, slow start */
		s->e.sk.pacing_rate = 0;
		s->cu_cwnd = SIM_INIT_CWND;
		s->cu_ssthresh = 1e9;
		s->cu_wmax = 0;
		s->cu_epoch_ns = 0;
	}
	memset(&s->d, 0, sizeof(s->d));
	swift_apply_cfg(&s->d.w, &scfg, 0);
	if (m->cfg->swift_target_us && m->cfg->swift_path_win_us) {	/* bbr_swift_init() */
		m->path_starts = ets_path_count_start(m->path_starts, now,
						      SWIFT_START_WIN_US * 1000ull);
		swift_on_start(s->e.b, &s->d.w, &s->e.sk,
			       ets_path_least(m->path_cur, m->path_prev, now,
					      m->cfg->swift_path_win_us,
					      SWIFT_START_PATH_AGE_US),
			       (u32)m->path_starts);
	}
	s->next_send_ns = now;
	s->active = 1;
	s->app_rate_bps = SIM_APP_BULK;
	if (s->cfg->app_rate_bps)
		app_set_rate(s, now, s->cfg->app_rate_bps);
}

int sim_run(const struct sim_cfg *cfg, struct sim_result *res)
{
	struct sim *m = calloc(1, sizeof(*m));
	int f, err = -1;

	if (!m)
		return -1;
	m->cfg = cfg;
	m->res = res;
	m->q = calloc(SIM_QUEUE_MAX, sizeof(*m->q));
	m->tx_time_ns = (u64)SIM_WIRE_BYTES * 8 * 1000000000ull / cfg->rate_bps;
	m->loss_rng = cfg->loss_seed ? cfg->loss_seed : 0x9E3779B97F4A7C15ull;
	m->rate_bps = cfg->rate_bps;
	m->loss_ppm = cfg->loss_ppm;
	m->ack_burst_us = cfg->ack_burst_us;
	m->pol_tokens = cfg->policer_burst_bytes;
	sim_cur = m;
	res->nbins = (int)(cfg->duration_ns / SIM_BIN_NS);
	if (!m->q)
		goto out;
	for (f = 0; f < cfg->nflows; f++)
		if (sender_init(&m->s[f], &cfg->flow[f], cfg->tx_ring))
			goto out;

	while (m->now < cfg->duration_ns) {
		u64 t = SIM_NEVER;

		for (f = 0; f < cfg->nflows; f++) {
			struct sim_sender *s = &m->s[f];
			u64 stop = s->cfg->stop_ns ? s->cfg->stop_ns : SIM_NEVER;

			if (!s->active && m->now >= s->cfg->start_ns && m->now < stop)
				sender_start(m, s, m->now);
			if (s->active && m->now >= stop)
				s->active = 0;
			if (!s->active && s->cfg->start_ns > m->now && s->cfg->start_ns < t)
				t = s->cfg->start_ns;
			if (s->active && s->app_ctl && !s->app_resumed &&
			    s->cfg->app_resume_ns) {
				if (m->now >= s->cfg->app_resume_ns) {
					app_set_rate(s, m->now, SIM_APP_BULK);
					s->app_resumed = 1;
				} else if (s->cfg->app_resume_ns < t) {
					t = s->cfg->app_resume_ns;
				}
			}
			if (s->ack_head != s->ack_tail &&
			    s->ack_at[s->ack_head % s->ring] < t)
				t = s->ack_at[s->ack_head % s->ring];
			if (sender_next_send(m, s) < t)
				t = sender_next_send(m, s);
			if (sender_rto_at(s) < t)
				t = sender_rto_at(s);
		}
		if (q_len(m) && m->link_busy_until_ns < t)
			t = m->link_busy_until_ns;
		if (t == SIM_NEVER || t >= cfg->duration_ns)
			break;
		m->now = t;

		/* 1. the link finishes the head packet: its ACK heads back */
		while (q_len(m) && m->link_busy_until_ns <= m->now) {
			struct sim_pkt *p = &m->q[m->q_head % SIM_QUEUE_MAX];
			struct sim_sender *s = &m->s[p->flow];

			q_account(m);
			m->q_head++;
			s->ack_at[s->ack_tail % s->ring] = sim_ack_time(m, s);
			s->ack_tx[s->ack_tail % s->ring] = p->tx;
			s->tx[p->tx % s->ring].ack_unheld_ns = m->now + s->cfg->base_rtt_ns;
			s->ack_tail++;
			if (q_len(m))
				m->link_busy_until_ns += m->tx_time_ns;
		}
		for (f = 0; f < cfg->nflows; f++) {
			struct sim_sender *s = &m->s[f];

			/* 2. ACKs arrive */
			while (s->ack_head != s->ack_tail &&
			       s->ack_at[s->ack_head % s->ring] <= m->now) {
				u32 txid = s->ack_tx[s->ack_head % s->ring];

				s->ack_head++;
				if (s->active)
					sender_on_ack(m, s, f, txid);
			}
			if (sender_rto_at(s) <= m->now)
				sender_rto(m, s);
			/* 3. sends, paced and within cwnd */
			while (s->active && sender_next_send(m, s) <= m->now)
				sender_send(m, s, f);
			sender_check_app_limited(s, m->now);
			if (s->active && s->inflight >= s->e.sk.snd_cwnd)
				s->cwnd_blocked = 1;
		}
	}
	m->now = cfg->duration_ns;
	q_account(m);
	for (f = 0; f < cfg->nflows; f++) {
		res->final_mode[f] = m->s[f].e.b->mode;
		res->final_cwnd[f] = m->s[f].e.sk.snd_cwnd;
		res->final_min_rtt_us[f] = m->s[f].e.b->min_rtt_us;
		res->final_swift_milli[f] = m->s[f].d.w.cwnd_milli;
		res->final_inflight_hi[f] = m->s[f].e.b->inflight_hi;
	}
	err = 0;
out:
	sim_cur = NULL;
	for (f = 0; f < cfg->nflows; f++)
		sender_free(&m->s[f]);
	free(m->q);
	free(m);
	return err;
}

double sim_goodput_bps(const struct sim_result *res, int f, u64 from_ns,
		       u64 to_ns)
{
	u64 pkts = 0, b;

	for (b = from_ns / SIM_BIN_NS; b < to_ns / SIM_BIN_NS && b < SIM_MAX_BINS; b++)
		pkts += res->bin_pkts[f][b];
	return (double)pkts * SIM_WIRE_BYTES * 8 * 1e9 / (double)(to_ns - from_ns);
}

u32 sim_queue_quantile(const struct sim_result *res, double q)
{
	double want = res->queue_time_ns * q, sum = 0;
	u32 i;

	for (i = 0; i < SIM_QHIST; i++) {
		sum += res->queue_hist_ns[i];
		if (sum >= want && sum > 0)
			return i;
	}
	return SIM_QHIST - 1;
}

double sim_ratio(u64 n, u64 total)
{
	return total ? (double)n / (double)total : 0;
}

double sim_jain(const struct sim_result *res, int nflows, u64 from_ns,
		u64 to_ns)
{
	double sum = 0, sumsq = 0, x;
	int f;

	for (f = 0; f < nflows; f++) {
		x = sim_goodput_bps(res, f, from_ns, to_ns);
		sum += x;
		sumsq += x * x;
	}
	return sumsq > 0 ? sum * sum / (nflows * sumsq) : 0;
}
