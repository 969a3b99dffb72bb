// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The scenario model (see sim.h). Time is in ns; the core sees µs as the
 * kernel's tcp_mstamp. Event order at equal times: link departures, then
 * ACK arrivals, then sends; each flow's ACKs arrive in order because its
 * base RTT is constant and the queue is FIFO.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "bbr_swift.h"
#include "swift_core.h"

#define SIM_TX_RING_DEFAULT	(1u << 16)	/* transmissions remembered */
#define SIM_QUEUE_MAX		(1u << 16)
#define SIM_DUPTHRESH		3u	/* later packets ACKed before marking lost */
#define SIM_UNPACED_SEGS	10u	/* tcp_update_skb_after_send(): first 10 */
#define SIM_INIT_CWND		10u
#define SIM_NEVER		(~0ull)
/* Retransmission timeout: Linux's 200 ms floor (TCP_RTO_MIN) plus srtt,
 * what rto = srtt + max(4 rttvar, rto_min) gives on a steady path. */
#define SIM_RTO_MIN_NS		200000000ull

enum { TX_OUT, TX_ACKED, TX_LOST };

struct sim_tx {
	u64 sent_ns;
	u64 delivered_mstamp_ns;	/* tp->delivered_mstamp at send */
	u64 first_tx_ns;		/* tp->first_tx_mstamp at send */
	u32 delivered;			/* tp->delivered at send */
	u32 pkt;			/* packet (sequence) number */
	u8 state;
	u8 app_limited;
	u8 is_retrans;
};

struct sim_sender {
	struct env e;			/* the core's state and socket view */
	const struct sim_flow_cfg *cfg;
	struct sim_tx *tx;		/* ring indexed by transmission id */
	u8 *pkt_acked;			/* ring indexed by packet number */
	u32 next_tx, oldest_tx;		/* transmission ids */
	u32 next_pkt, una_pkt;		/* packet numbers */
	u32 *rtx;			/* packets waiting for retransmission */
	u32 rtx_head, rtx_tail;
	u32 packets_out;		/* transmissions neither ACKed nor lost */
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
	struct swift_state w;		/* BBR.Swift, when cfg->swift_target_us */
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
	u64 tx_time_ns;
	u64 last_q_change_ns;
	u64 now;
};

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
		m->res->queue_pkt_ns += (double)q_len(m) * (double)(m->now - from);
		m->res->queue_time_ns += (double)(m->now - from);
	}
	m->last_q_change_ns = m->now;
}

static void sender_load_sock(struct sim_sender *s, u64 now)
{
	struct bbr_sock *sk = &s->e.sk;

	sk->now_us = now / 1000;
	sk->delivered_mstamp_us = s->delivered_mstamp_ns / 1000;
	sk->edt_lead_ns = s->next_send_ns > now ? s->next_send_ns - now : 0;
	sk->inflight = s->packets_out;
	sk->snd_nxt = ENV_ISN + s->next_pkt * ENV_MSS_BYTES;
	sk->snd_una = ENV_ISN + s->una_pkt * ENV_MSS_BYTES;
	sk->kernel_min_rtt_us = s->kernel_min_rtt_us;
}

static void sender_send(struct sim *m, struct sim_sender *s, int f)
{
	struct sim_tx *t = &s->tx[s->next_tx % s->ring];
	u64 gap_ns;

	if (!s->packets_out) {		/* tcp_rate_skb_sent(): restart */
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
	if (s->rtx_head != s->rtx_tail) {
		t->pkt = s->rtx[s->rtx_head++ % s->ring];
		t->is_retrans = 1;
		m->res->retransmits[f]++;
	} else {
		t->pkt = s->next_pkt++;
		s->pkt_acked[t->pkt % s->ring] = 0;
	}
	s->next_tx++;
	s->packets_out++;
	s->segs_out++;

	/* EDT pacing, as tcp_update_skb_after_send(): by payload bytes, as
	 * the core computes the rate from bw x mss */
	if (s->segs_out > SIM_UNPACED_SEGS && s->e.sk.pacing_rate) {
		gap_ns = (u64)ENV_MSS_BYTES * 1000000000ull / s->e.sk.pacing_rate;
		s->next_send_ns = (s->next_send_ns > m->now ? s->next_send_ns : m->now) +
				  gap_ns;
	}

	/* into the bottleneck: tail drop */
	if (q_len(m) >= m->cfg->buffer_pkts) {
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

/* A transmission is lost: out of flight, its packet queued to go again. */
static void sender_lose(struct sim_sender *s, struct sim_tx *t)
{
	t->state = TX_LOST;
	s->packets_out--;
	s->e.sk.lost++;
	s->rtx[s->rtx_tail++ % s->ring] = t->pkt;
}

/* Mark transmissions lost once SIM_DUPTHRESH later ones were ACKed. */
static u32 sender_mark_lost(struct sim_sender *s, u32 acked_tx)
{
	u32 losses = 0;

	while (s->oldest_tx != s->next_tx &&
	       bbr_before(s->oldest_tx + SIM_DUPTHRESH, acked_tx + 1)) {
		struct sim_tx *t = &s->tx[s->oldest_tx % s->ring];

		if (t->state == TX_OUT) {
			sender_lose(s, t);
			losses++;
		}
		s->oldest_tx++;
	}
	return losses;
}

static void sender_on_ack(struct sim *m, struct sim_sender *s, int f, u32 txid)
{
	struct sim_tx *t = &s->tx[txid % s->ring];
	struct env *e = &s->e;
	struct bbr_rs *rs = &e->rs;
	u64 snd_us, ack_us, rtt_us;
	u32 prior_in_flight = s->packets_out, losses, bin;
	u8 prev_mode = e->b->mode;

	if (t->state != TX_OUT)
		return;		/* declared lost already; its retransmit counts */
	t->state = TX_ACKED;
	s->packets_out--;
	if (!s->pkt_acked[t->pkt % s->ring]) {
		s->pkt_acked[t->pkt % s->ring] = 1;
		bin = (u32)(m->now / SIM_BIN_NS);
		if (bin < SIM_MAX_BINS)
			m->res->bin_pkts[f][bin]++;
	}
	while (s->una_pkt != s->next_pkt && s->pkt_acked[s->una_pkt % s->ring])
		s->una_pkt++;

	e->sk.delivered++;
	s->delivered_mstamp_ns = m->now;
	s->progress_ns = m->now;
	losses = sender_mark_lost(s, txid);

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
	rs->rtt_us = t->is_retrans ? -1 : (s64)rtt_us;
	if (!t->is_retrans && rtt_us < s->kernel_min_rtt_us)
		s->kernel_min_rtt_us = (u32)rtt_us;
	if (rs->interval_us < (s64)s->kernel_min_rtt_us)
		rs->interval_us = -1;	/* shorter than min RTT: not trusted */
	rs->acked_sacked = 1;
	rs->losses = (s32)losses;
	rs->prior_in_flight = prior_in_flight;
	rs->last_end_seq = ENV_ISN + (t->pkt + 1) * ENV_MSS_BYTES;
	if (!t->is_retrans)
		e->sk.srtt_us = e->sk.srtt_us ?
			(u32)((7ull * e->sk.srtt_us + rtt_us) / 8) : (u32)rtt_us;
	if (e->sk.app_limited && bbr_after(e->sk.delivered, e->sk.app_limited))
		e->sk.app_limited = 0;

	sender_load_sock(s, m->now);
	/* Recovery entry and exit, as tcp_fastretrans_alert() would */
	if (losses && e->sk.ca_state == BBR_CA_OPEN) {
		bbr_core_ssthresh(e->b, &e->sk);
		e->sk.ca_state = BBR_CA_RECOVERY;
		bbr_core_set_state(e->b, &e->sk, BBR_CA_RECOVERY);
		s->recovery_point = s->next_pkt;
	} else if ((e->sk.ca_state == BBR_CA_RECOVERY ||
		    e->sk.ca_state == BBR_CA_LOSS) &&
		   !bbr_before(s->una_pkt, s->recovery_point)) {
		e->sk.ca_state = BBR_CA_OPEN;
		bbr_core_set_state(e->b, &e->sk, BBR_CA_OPEN);
	}
	e->sk.is_cwnd_limited = s->cwnd_blocked;
	s->cwnd_blocked = 0;
	e->sk.ack = e->sk.snd_una;
	if (m->cfg->swift_target_us && !t->is_retrans) {
		/* ETS would measure exactly this: no receiver delay here */
		struct swift_sample smp = { .present = 1, .last_sample_ns = m->now,
					    .network_rtt_us = (u32)rtt_us };

		if (m->cfg->net_rtt_jitter_us)
			smp.network_rtt_us += unit_prandom() % m->cfg->net_rtt_jitter_us;

		if (m->now >= m->res->measure_from_ns) {
			m->res->net_rtt_sum_us += smp.network_rtt_us;
			m->res->net_rtt_samples++;
		}
		swift_on_ack(e->b, &s->w, &e->sk, rs, &smp);
	}
	bbr_core_main(&e->sks, &e->sk, rs);
	if (m->cfg->swift_target_us)
		swift_after_ack(e->b, &s->w, &e->sk);

	if (e->b->mode != prev_mode) {
		m->res->mode_changes[f]++;
		if (e->b->mode == BBR_PROBE_RTT)
			m->res->probe_rtt_entries[f]++;
	}
}

static u64 sender_rto_at(const struct sim_sender *s)
{
	if (!s->active || !s->packets_out)
		return SIM_NEVER;
	return s->progress_ns + SIM_RTO_MIN_NS + (u64)s->e.sk.srtt_us * 1000;
}

/* tcp_retransmit_timer() -> tcp_enter_loss(): everything out is lost, cwnd
 * one packet beyond what is in flight (none), the CC hears CA_Loss. */
static void sender_rto(struct sim *m, struct sim_sender *s)
{
	struct env *e = &s->e;

	while (s->oldest_tx != s->next_tx) {
		struct sim_tx *t = &s->tx[s->oldest_tx % s->ring];

		if (t->state == TX_OUT)
			sender_lose(s, t);
		s->oldest_tx++;
	}
	sender_load_sock(s, m->now);
	if (e->sk.ca_state != BBR_CA_LOSS)
		bbr_core_ssthresh(e->b, &e->sk);
	e->sk.ca_state = BBR_CA_LOSS;
	bbr_core_set_state(e->b, &e->sk, BBR_CA_LOSS);
	e->sk.snd_cwnd = 1;
	s->recovery_point = s->next_pkt;
	s->progress_ns = m->now;
	m->res->rtos++;
}

static u64 sender_next_send(const struct sim *m, const struct sim_sender *s)
{
	if (!s->active)
		return SIM_NEVER;
	if (s->packets_out >= s->e.sk.snd_cwnd)
		return SIM_NEVER;	/* cwnd-limited: wait for an ACK */
	return s->next_send_ns > m->now ? s->next_send_ns : m->now;
}

static int sender_init(struct sim_sender *s, const struct sim_flow_cfg *cfg,
		       u32 ring)
{
	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->ring = ring ? ring : SIM_TX_RING_DEFAULT;
	s->tx = calloc(s->ring, sizeof(*s->tx));
	s->pkt_acked = calloc(s->ring, 1);
	s->rtx = calloc(s->ring, sizeof(*s->rtx));
	s->ack_at = calloc(s->ring, sizeof(*s->ack_at));
	s->ack_tx = calloc(s->ring, sizeof(*s->ack_tx));
	s->kernel_min_rtt_us = BBR_UNSET;
	return s->tx && s->pkt_acked && s->rtx && s->ack_at && s->ack_tx ? 0 : -1;
}

static void sender_free(struct sim_sender *s)
{
	free(s->tx);
	free(s->pkt_acked);
	free(s->rtx);
	free(s->ack_at);
	free(s->ack_tx);
}

static void sender_start(const struct sim *m, struct sim_sender *s, u64 now)
{
	struct swift_cfg scfg = { .target_rtt_us = m->cfg->swift_target_us };

	env_init(&s->e, SIM_INIT_CWND);
	s->e.sk.now_us = now / 1000;
	s->e.sk.delivered_mstamp_us = now / 1000;
	s->e.sk.snd_cwnd = SIM_INIT_CWND;
	bbr_core_init(&s->e.sks, &s->e.sk);
	memset(&s->w, 0, sizeof(s->w));
	swift_apply_cfg(&s->w, &scfg, 0);
	s->next_send_ns = now;
	s->active = 1;
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
			s->ack_at[s->ack_tail % s->ring] = m->now + s->cfg->base_rtt_ns;
			s->ack_tx[s->ack_tail % s->ring] = p->tx;
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
			if (s->active && s->packets_out >= s->e.sk.snd_cwnd)
				s->cwnd_blocked = 1;
		}
	}
	m->now = cfg->duration_ns;
	q_account(m);
	for (f = 0; f < cfg->nflows; f++) {
		res->final_mode[f] = m->s[f].e.b->mode;
		res->final_cwnd[f] = m->s[f].e.sk.snd_cwnd;
		res->final_min_rtt_us[f] = m->s[f].e.b->min_rtt_us;
		res->final_subpkt_milli[f] = m->s[f].w.subpkt_cwnd_milli;
	}
	err = 0;
out:
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
