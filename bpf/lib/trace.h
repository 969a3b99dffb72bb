// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * lib/trace.h: ring-buffer events of the BBRv3 model for `bbrctl trace`.
 *
 * Included once by lib/tcp_cc.h (after it has defined BBR_GLUE_SYM and the
 * value type), so every CC built on the glue gets two maps:
 *
 *   <prefix>_trace_rb   BPF_MAP_TYPE_RINGBUF of struct bbr_trace_ev
 *   <prefix>_trace_ctl  one struct bbr_trace_ctl: the enable flags that
 *                       `bbrctl trace` sets while it runs and clears when
 *                       it exits, its pid, and a count of events lost to
 *                       a full ring
 *
 * bbrctl pins both next to the CC's link (PIN_ROOT/NAME/trace_rb and
 * trace_ctl) at load time. Record and flags: include/bbr3_state.h.
 *
 * Cost: without a reader the per-ACK cost is the (inlined) array lookup
 * of the control word and one branch. With a reader, cong_control emits
 * an event when the ACK starts a round or changes mode/phase, or on every
 * ACK when the reader asked for --per-ack.
 *
 * A CC may add its own fields to an event with BBR_GLUE_HOOK_TRACE(e, v)
 * (bbr_swift fills Network_RTT and its decrease factor).
 */
#ifndef BBR_TRACE_H
#define BBR_TRACE_H

#ifndef BBR_GLUE_SYM
#error "lib/trace.h is included by lib/tcp_cc.h"
#endif

/* 1 MiB: at 120 B an event (with the ring's 8 B header) ~8700 events,
 * one second of per-ACK events of a 100 Mbit/s flow; the reader drains it
 * every BBRCTL_TRACE_POLL_MS or sooner when woken. */
#define BBR_TRACE_RING_BYTES	(1u << 20)

#ifndef BBR_GLUE_HOOK_TRACE
#define BBR_GLUE_HOOK_TRACE(e, v)	do { } while (0)
#endif

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, BBR_TRACE_RING_BYTES);
} BBR_GLUE_SYM(trace_rb) SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct bbr_trace_ctl);
} BBR_GLUE_SYM(trace_ctl) SEC(".maps");

/* The control word if a reader is tracing, else NULL. */
static __always_inline struct bbr_trace_ctl *bbr_trace_on(void)
{
	u32 key = 0;
	struct bbr_trace_ctl *c = bpf_map_lookup_elem(&BBR_GLUE_SYM(trace_ctl), &key);

	return c && (c->flags & BBR_TRACE_CTL_ON) ? c : NULL;
}

static __always_inline u32 bbr_trace_unset0(u32 v)
{
	return v == BBR_UNSET ? 0 : v;
}

/* Fill and submit one event; s and r are the ACK's inputs after the core
 * (and the CC's hooks) ran. */
static __always_inline void bbr_trace_emit(struct sock *sk, BBR_GLUE_VALUE *v,
					   const struct bbr_sock *s,
					   const struct bbr_rs *r,
					   struct bbr_trace_ctl *c,
					   u8 ev, u8 flags)
{
	const struct bbr3 *b = &BBR_GLUE_CORE(v)->st;
	struct bbr_trace_ev *e;

	e = bpf_ringbuf_reserve(&BBR_GLUE_SYM(trace_rb), sizeof(*e), 0);
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
	BBR_GLUE_HOOK_TRACE(e, v);
	bpf_ringbuf_submit(e, 0);
}

/* After the core ran on an ACK: decide whether this ACK makes an event.
 * prev_mode/prev_phase are the model's mode and PROBE_BW phase before. */
static __always_inline void bbr_trace_ack(struct sock *sk, BBR_GLUE_VALUE *v,
					  const struct bbr_sock *s,
					  const struct bbr_rs *r,
					  struct bbr_trace_ctl *c,
					  u8 prev_mode, u8 prev_phase)
{
	const struct bbr3 *b = &BBR_GLUE_CORE(v)->st;
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
	bbr_trace_emit(sk, v, s, r, c, ev, flags);
}

#endif /* BBR_TRACE_H */
