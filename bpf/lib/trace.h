// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * lib/trace.h: ring-buffer events of the BBRv3 model for `bbrctl trace`.
 *
 * Every CC built on the BBRv3 core declares two maps (bbr3.bpf.c):
 *
 *   <cc>_trace_rb   BPF_MAP_TYPE_RINGBUF of struct bbr_trace_ev
 *   <cc>_trace_ctl  one struct bbr_trace_ctl: the enable flags that
 *                   `bbrctl trace` sets while it runs and clears when it
 *                   exits, its pid, and a count of events lost to a full
 *                   ring
 *
 * and passes them to bbr_cc_ack_in() / bbr_cc_ack_out(). bbrctl pins both next to the CC's link
 * (PIN_ROOT/NAME/trace_rb and trace_ctl) at load time. Record and flags:
 * include/bbr3_state.h.
 *
 * Cost: without a reader the per-ACK cost is the (inlined) array lookup
 * of the control word and one branch. With a reader, cong_control emits
 * an event when the ACK starts a round or changes mode/phase, or on every
 * ACK when the reader asked for --per-ack.
 */
#ifndef BBR_LIB_TRACE_H
#define BBR_LIB_TRACE_H

/* 1 MiB: at 120 B an event (with the ring's 8 B header) ~8700 events,
 * one second of per-ACK events of a 100 Mbit/s flow; the reader drains it
 * every BBRCTL_TRACE_POLL_MS or sooner when woken. */
#define BBR_TRACE_RING_BYTES	(1u << 20)

/* The control word if a reader is tracing, else NULL. */
static __always_inline struct bbr_trace_ctl *bbr_trace_on(void *trace_ctl)
{
	u32 key = 0;
	struct bbr_trace_ctl *c = bpf_map_lookup_elem(trace_ctl, &key);

	return c && (c->flags & BBR_TRACE_CTL_ON) ? c : NULL;
}

static __always_inline u32 bbr_trace_unset0(u32 v)
{
	return v == BBR_UNSET ? 0 : v;
}

/* Fill and submit one event; s and r are the ACK's inputs after the core
 * ran; x the variant's state (bbr_swift's) or NULL. */
static __always_inline void bbr_trace_emit(void *trace_rb, struct bbr_trace_ctl *c,
					   struct sock *sk, const struct bbr3_sk *sks,
					   const BBR_EXT *x,
					   const struct bbr_sock *s,
					   const struct bbr_rs *r, u8 ev, u8 flags)
{
	const struct bbr3 *b = &sks->st;
	struct bbr_trace_ev *e;

	e = bpf_ringbuf_reserve(trace_rb, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&c->dropped, 1);
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->t_ns = bpf_ktime_get_ns();
	/* The socket cookie is generated lazily (SO_COOKIE, ss, the state
	 * iterator); struct_ops programs cannot generate it themselves. */
	e->cookie = sk->__sk_common.skc_cookie.counter;
	e->pacing_Bps = s->pacing_rate;
	e->bw = bbr_bw(b);
	e->bw_lo = bbr_trace_unset0(b->bw_lo);
	e->bw_hi = bbr_max_bw(b);
	e->mss_bytes = s->mss;
	e->cwnd_pkts = s->snd_cwnd;
	e->inflight_pkts = s->inflight;
	e->min_rtt_us = bbr_trace_unset0(b->min_rtt_us);
	e->rtt_us = r->rtt_us > 0 ? (u32)r->rtt_us : 0;
	e->srtt_us = s->srtt_us;
	e->inflight_lo = bbr_trace_unset0(b->inflight_lo);
	e->inflight_hi = bbr_trace_unset0(b->inflight_hi);
	e->delivered = s->delivered;
	e->lost = s->lost;
	e->delivered_ce = s->delivered_ce;
	e->round_count = b->round_count;
	e->version = BBR_TRACE_VERSION;
	e->ev = ev;
	e->mode = b->mode;
	e->phase = b->cycle_idx;
	e->flags = flags;
	e->ca_state = s->ca_state;
	bbr_hook_trace(e, x);	/* the variant's fields (bbr_swift's) */
	bpf_ringbuf_submit(e, 0);
}

/* After the core ran on an ACK: decide whether this ACK makes an event.
 * prev_mode/prev_phase are the model's mode and PROBE_BW phase before. */
static __always_inline void bbr_trace_ack(void *trace_rb, struct bbr_trace_ctl *c,
					  struct sock *sk, const struct bbr3_sk *sks,
					  const BBR_EXT *x,
					  const struct bbr_sock *s,
					  const struct bbr_rs *r,
					  u8 prev_mode, u8 prev_phase)
{
	const struct bbr3 *b = &sks->st;
	u8 flags = 0, ev;

	if (b->round_start)
		flags |= BBR_TRACE_F_ROUND_START;
	if (b->mode != prev_mode ||
	    (b->mode == BBR_PROBE_BW && b->cycle_idx != prev_phase))
		flags |= BBR_TRACE_F_MODE_CHANGE;
	if (c->flags & BBR_TRACE_CTL_PER_ACK)
		ev = BBR_TRACE_EV_ACK;
	else if (flags & BBR_TRACE_F_MODE_CHANGE)
		ev = BBR_TRACE_EV_MODE;
	else if (flags & BBR_TRACE_F_ROUND_START)
		ev = BBR_TRACE_EV_ROUND;
	else
		return;
	bbr_trace_emit(trace_rb, c, sk, sks, x, s, r, ev, flags);
}

#endif /* BBR_LIB_TRACE_H */
