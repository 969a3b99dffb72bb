// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbr_swift: BBR.Swift as a BPF struct_ops tcp_congestion_ops.
 *
 * BBRv3 (core/bbr3.h) plus the Swift delay signal of core/swift.h, which
 * the core consumes at one point of its per-ACK step, with the ops, maps
 * and iterator of bbr3 (lib/bbr3_ops.h) under its own names. What is
 * Swift's is below: the socket's storage (struct bbr_swift_sk: bbr3's state
 * and Swift's), and the template's hooks that fill Swift's part. Before
 * each ACK they give it the socket's target (the rows target_rtt_us,
 * stale_us, keep_ecn, raw_samples and host_target_us of its parameter set:
 * include/bbr_params.h) and its latest Network_RTT, path value and host
 * delay from the ETS sockops program (ets_sk_stor, include/ets_shared.h).
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

/* Filled by the ETS sockops program (bpf/ets.bpf.c); read-only here. */
#include "lib/ets_sk_stor.h"

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
		if (e->peer_max_ack_delay_us &&
		    e->peer_max_ack_delay_us < ETS_MAXACKDEL_NONE)
			v->delay.smp.ack_delay_max_us = e->peer_max_ack_delay_us;
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

/* The template's hooks (lib/bbr3_ops.h): Swift's state beside bbr3's. */
#define BBR3_CC_SK		struct bbr_swift_sk
#define BBR3_CC_REC		struct bbr_swift_state_rec

#define BBR3_OPS_CORE
static __always_inline struct bbr3_sk *bbr3_ops_core(struct bbr_swift_sk *v)
{
	return &v->bbr;
}

#define BBR3_OPS_EXT
static __always_inline struct bbr_delay *bbr3_ops_ext(struct bbr_swift_sk *v)
{
	return &v->delay;
}

/* At init, after BBRv3's: the target in force, and the start under it. */
#define BBR3_OPS_INIT
static __always_inline void bbr3_ops_init(struct sock *sk,
					  struct bbr_swift_sk *v)
{
	__builtin_memset(&v->delay, 0, sizeof(v->delay));
	swift_read_cfg(v);
	swift_start(sk, v);
}

#define BBR3_OPS_ACK
static __always_inline void bbr3_ops_ack(struct sock *sk,
					 struct bbr_swift_sk *v)
{
	swift_load_signal(sk, v);
}

/* `bbrctl stat`: bbr3's record of each bbr_swift socket, plus its Swift
 * state. */
#define BBR3_OPS_REC
static __always_inline void bbr3_ops_rec(struct bbr_swift_state_rec *rec,
					 struct sock *sk, struct tcp_sock *tp,
					 struct bbr_swift_sk *v)
{
	bbr_cc_fill_rec(&rec->bbr, sk, tp, &v->bbr);
	rec->magic = BBR_SWIFT_STATE_REC_MAGIC;
	rec->version = BBR_SWIFT_VERSION;
	__builtin_memcpy(&rec->sw, &v->delay.w, sizeof(rec->sw));
}

#define BBR3_CC		bbr_swift
#include "lib/bbr3_ops.h"	/* bbr3's maps, programs, ops and iterator */
