// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbr_swift: BBR.Swift as a BPF struct_ops tcp_congestion_ops.
 *
 * BBRv3 (core/bbr3.h, with the same ops as bbr3: lib/tcp_cc.h) plus the
 * Swift delay signal of core/swift.h, which the core consumes at one point
 * of its per-ACK step. Before each ACK, this file gives it the socket's
 * target (the rows target_rtt_us, stale_us, keep_ecn, raw_samples and
 * host_target_us of its parameter set: include/bbr_params.h) and its latest
 * Network_RTT, path value and host delay from the ETS sockops program
 * (ets_sk_stor, include/ets_shared.h).
 *
 * ets_sk_stor declares no pinning: bbrctl gives it the pin path
 * PIN_SHARED/ets_sk_stor (include/bbr_pins.h) before loading, so it is the
 * very map the sockops program fills. Registered with plain `bpftool
 * struct_ops register`, the object pins nothing and its ets_sk_stor stays
 * empty: bbr_swift then runs as BBRv3 (status SWIFT_ST_NO_ETS). See
 * docs/bbr_swift.md.
 */
/* bbr_swift reads the core's parameters and its own (bbrctl takes both). */
#define BBR_GLUE_PARAM_GROUPS	(BBR_PARAM_GROUP_CORE | BBR_PARAM_GROUP_SWIFT)
/* The core's variant state (core/bbr3.h, "Hooks"): Swift's window and
 * sample, which its hooks receive. */
#include "vmlinux.h"
#include "bbr3_state.h"
#include "bbr_swift.h"
#define BBR_EXT			struct bbr_delay
#include "lib/tcp_cc.h"
#include "core/swift.h"
#include "core/bbr3_2023.h"
#include "core/bbr3_hooks.h"
#include "ets_shared.h"
#include "core/ets_opt.h"

#define AF_INET		2	/* include/linux/socket.h */

char _license[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bbr_swift_sk);
} bbr_swift_sk_stor SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, BBR_TRACE_RING_BYTES);
} bbr_swift_trace_rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct bbr_trace_ctl);
} bbr_swift_trace_ctl SEC(".maps");

struct bbr_glue_stats bbr_swift_stats;

/* Filled by the ETS sockops program (bpf/ets.bpf.c); read-only here. */
#include "lib/ets_sk_stor.h"

static __always_inline struct bbr_swift_sk *swift_sk(struct sock *sk)
{
	return bbr_cc_value(&bbr_swift_sk_stor, sk, &bbr_swift_stats);
}

/* The socket's target, from the parameter set it runs with (its own, its
 * cgroup's or the default: the glue picks it at init and round starts). */
static __always_inline void swift_read_cfg(struct bbr_swift_sk *v)
{
	const struct bbr_params *p = bbr_params_of(&v->bbr.st);
	struct swift_cfg cfg = {
		.target_rtt_us = p->target_rtt_us,
		.stale_us = p->stale_us,
		.flags = (p->keep_ecn ? SWIFT_CFG_F_KEEP_ECN : 0) |
			 (p->raw_samples ? SWIFT_CFG_F_RAW_SAMPLES : 0),
		.host_target_us = p->host_target_us,
	};

	swift_apply_cfg(&v->delay.w, &cfg, v->bbr.st.round_count);
}

/* This ACK's delay signal: the configuration (copied again at the first
 * ACK of every round, SWIFT_CFG_REFRESH_ROUNDS) and the latest ETS sample. */
static __always_inline void swift_load_signal(struct sock *sk,
					      struct bbr_swift_sk *v)
{
	struct ets_sk *e;

	if (swift_cfg_due(&v->delay.w, v->bbr.st.round_count))
		swift_read_cfg(v);
	__builtin_memset(&v->delay.smp, 0, sizeof(v->delay.smp));
	if (v->delay.w.target_rtt_us == SWIFT_TARGET_NONE)
		return;
	e = bpf_sk_storage_get(&ets_sk_stor, sk, NULL, 0);
	/* ETS off for this connection (never agreed, or turned off since: a
	 * peer that went silent) is no_ets, not a stale signal: its last
	 * sample says nothing of the path any more. */
	if (e && (e->flags & ETS_F_ENABLED)) {
		v->delay.smp.present = 1;
		v->delay.smp.last_sample_ns = e->last_sample_ns;
		v->delay.smp.network_rtt_us = e->network_rtt_us;
		v->delay.smp.path_rtt_us = e->path_rtt_us;
		v->delay.smp.host_delay_us = e->host_delay_us;
	}
}

/* What this host knows of the path to the socket's peer (ETS's path
 * filter, include/ets_shared.h): its least Network_RTT over the path
 * window if measured within max_age_us (0: none), and, counting this one,
 * how many connections to the peer it started in the current start window.
 * The entry is made here if ETS has not made it yet. */
static __always_inline u32 swift_path_now(struct sock *sk, u32 max_age_us,
					  u32 *starts)
{
	struct ets_path_key key = { .netns = sk->__sk_common.skc_net.net->net_cookie };
	static const struct ets_path empty;
	u64 now = bpf_ktime_get_ns(), old, new;
	struct ets_path *p;
	struct ets_cfg *cfg;
	u32 zero = 0;

	*starts = 1;

	if (sk->__sk_common.skc_family == AF_INET) {
		key.addr[0] = sk->__sk_common.skc_daddr;
	} else {
		key.addr[0] = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[0];
		key.addr[1] = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[1];
		key.addr[2] = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[2];
		key.addr[3] = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[3];
	}
	p = bpf_map_lookup_elem(&ets_path, &key);
	if (!p) {
		bpf_map_update_elem(&ets_path, &key, &empty, BPF_NOEXIST);
		p = bpf_map_lookup_elem(&ets_path, &key);
		if (!p)
			return 0;
	}
	old = p->starts;
	new = ets_path_count_start(old, now, SWIFT_START_WIN_US * 1000ull);
	if (__sync_val_compare_and_swap(&p->starts, old, new) == old)
		*starts = (u32)new;
	cfg = bpf_map_lookup_elem(&ets_cfg, &zero);
	return ets_path_least(p->cur, p->prev, now, cfg ? cfg->path_win_us : 0,
			      max_age_us);
}

/* The start under a target: the host's connections started together share
 * one initial window, and a path already over target gets a packet per
 * target_RTT (swift_on_start()). */
static __always_inline void swift_start(struct sock *sk, struct bbr_swift_sk *v)
{
	struct bbr_sock s = {};
	u32 path, starts;

	if (v->delay.w.target_rtt_us == SWIFT_TARGET_NONE)
		return;
	path = swift_path_now(sk, SWIFT_START_PATH_AGE_US, &starts);
	if (path <= v->delay.w.target_rtt_us && starts <= 1)
		return;
	bbr_sock_load(&s, sk);
	swift_on_start(&v->bbr.st, &v->delay.w, &s, path, starts);
	bbr_sock_store(sk, &s);
}

SEC("struct_ops")
void BPF_PROG(bbr_swift_init, struct sock *sk)
{
	struct bbr_swift_sk *v = bpf_sk_storage_get(&bbr_swift_sk_stor, sk, NULL,
						    BPF_SK_STORAGE_GET_F_CREATE);

	if (!v) {	/* the socket keeps its initial cwnd, unpaced */
		__sync_fetch_and_add(&bbr_swift_stats.no_storage, 1);
		return;
	}
	bbr_cc_init(sk, &v->bbr);
	__builtin_memset(&v->delay, 0, sizeof(v->delay));
	swift_read_cfg(v);
	swift_start(sk, v);
}

SEC("struct_ops")
void BPF_PROG(bbr_swift_release, struct sock *sk)
{
	bpf_sk_storage_delete(&bbr_swift_sk_stor, sk);
}

SEC("struct_ops")
void BPF_PROG(bbr_swift_main, struct sock *sk, u32 ack, int flag,
	      const struct rate_sample *rs)
{
	struct bbr_swift_sk *v = swift_sk(sk);
	struct bbr_cc_ack a = {};

	if (!v)
		return;
	swift_load_signal(sk, v);
	bbr_cc_ack_in(&a, sk, &v->bbr, ack, flag, rs, &bbr_swift_trace_ctl);
	bbr_core_main(&v->bbr, &a.s, &a.r, &v->delay);
	bbr_cc_ack_out(&a, sk, &v->bbr, &v->delay, &bbr_swift_trace_rb);
}

SEC("struct_ops")
u32 BPF_PROG(bbr_swift_ssthresh, struct sock *sk)
{
	struct bbr_swift_sk *v = swift_sk(sk);

	return v ? bbr_cc_ssthresh(sk, &v->bbr) : tcp_sk(sk)->snd_ssthresh;
}

SEC("struct_ops")
u32 BPF_PROG(bbr_swift_undo_cwnd, struct sock *sk)
{
	struct bbr_swift_sk *v = swift_sk(sk);

	return v ? bbr_cc_undo_cwnd(sk, &v->bbr) : tcp_sk(sk)->snd_cwnd;
}

SEC("struct_ops")
void BPF_PROG(bbr_swift_set_state, struct sock *sk, u8 new_state)
{
	struct bbr_swift_sk *v = swift_sk(sk);

	if (v)
		bbr_cc_set_state(sk, &v->bbr, new_state);
}

#ifdef BBR_TX_START_OP
SEC("struct_ops")
void BPF_PROG(bbr_swift_cwnd_event_tx_start, struct sock *sk)
{
	struct bbr_swift_sk *v = swift_sk(sk);

	if (v)
		bbr_cc_tx_start(sk, &v->bbr);
}
#else
SEC("struct_ops")
void BPF_PROG(bbr_swift_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct bbr_swift_sk *v;

	if (event != CA_EVENT_TX_START)
		return;		/* the only event BBRv3 acts on as a sender */
	v = swift_sk(sk);
	if (v)
		bbr_cc_tx_start(sk, &v->bbr);
}
#endif

SEC("struct_ops")
void BPF_PROG(bbr_swift_in_ack_event, struct sock *sk, u32 flags)
{
	struct bbr_swift_sk *v;

	if (!bbr_cc_tlp_outstanding(sk))
		return;
	v = swift_sk(sk);
	if (v)
		bbr_cc_in_ack_event(sk, &v->bbr);
}

SEC("struct_ops")
u32 BPF_PROG(bbr_swift_min_tso_segs, struct sock *sk)
{
	return bbr_cc_min_tso_segs(sk);
}

SEC("struct_ops")
u32 BPF_PROG(bbr_swift_sndbuf_expand, struct sock *sk)
{
	return BBR_SNDBUF_EXPAND_FACTOR;
}

#ifdef BBR_TX_START_OP
SEC(".struct_ops.link")
struct tcp_congestion_ops___tx_start bbr_swift = {
	.cwnd_event_tx_start = (void *)bbr_swift_cwnd_event_tx_start,
#else
SEC(".struct_ops.link")
struct tcp_congestion_ops bbr_swift = {
	.cwnd_event	= (void *)bbr_swift_cwnd_event,
#endif
	.init		= (void *)bbr_swift_init,
	.release	= (void *)bbr_swift_release,
	.cong_control	= (void *)bbr_swift_main,
	.ssthresh	= (void *)bbr_swift_ssthresh,
	.undo_cwnd	= (void *)bbr_swift_undo_cwnd,
	.set_state	= (void *)bbr_swift_set_state,
	.in_ack_event	= (void *)bbr_swift_in_ack_event,
	.min_tso_segs	= (void *)bbr_swift_min_tso_segs,
	.sndbuf_expand	= (void *)bbr_swift_sndbuf_expand,
	.flags		= TCP_CONG_NON_RESTRICTED,
	.name		= "bbr_swift",
};

/* `bbrctl stat`: bbr3's record of each bbr_swift socket, plus its Swift
 * state. */
SEC("iter/tcp")
int dump_bbr_swift_state(struct bpf_iter__tcp *ctx)
{
	struct tcp_sock *tp = bbr_iter_tcp_sock(ctx);
	struct bbr_swift_state_rec rec = {};
	struct bbr_swift_sk *v;

	if (!tp)
		return 0;
	v = bpf_sk_storage_get(&bbr_swift_sk_stor, tp, NULL, 0);
	if (!v)
		return 0;
	bbr_cc_fill_rec(&rec.bbr, (struct sock *)tp, tp, &v->bbr);
	rec.magic = BBR_SWIFT_STATE_REC_MAGIC;
	rec.version = BBR_SWIFT_VERSION;
	__builtin_memcpy(&rec.sw, &v->delay.w, sizeof(rec.sw));
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}
