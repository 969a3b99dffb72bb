// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbr_swift: BBR.Swift as a BPF struct_ops tcp_congestion_ops.
 *
 * BBRv3 (core/bbr3.h, through the same glue as bbr3: lib/tcp_cc.h) plus the
 * Swift delay response of core/swift.h: two hooks around the core's
 * per-ACK pipeline. Before it, the socket's target (per-socket map, else
 * per-cgroup map, else the default entry; include/bbr_swift.h) and its
 * latest Network_RTT from the ETS sockops program (ets_sk_stor,
 * include/ets_shared.h) decide whether the delay signal is in force and
 * apply at most one decrease per round trip to the lower bounds. After
 * it, a fractional window lowers the pacing rate below one packet per RTT.
 *
 * The three maps are pinned by name. Their directory is the object's
 * pin_root_path: bbrctl opens this object with SWIFT_PIN_ROOT (the ETS
 * directory), so ets_sk_stor is the very map the sockops program fills.
 * `bpftool struct_ops register` has no pin-root option and pins under
 * /sys/fs/bpf/: loaded that way bbr_swift sees no ETS samples and runs as
 * BBRv3 (status SWIFT_ST_NO_ETS). See docs/bbr_swift.md.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "core/types.h"
#include "bbr3_state.h"
#include "bbr_swift.h"
#include "ets_shared.h"
#include "lib/cgroup.h"	/* bbr_sk_cgroup_id(), shared with the glue */

#define BBR_GLUE_PREFIX		bbr_swift
#define BBR_CFG			bbr_swift_params
#define BBR_PRANDOM_U32()	bpf_get_prandom_u32()
#include "core/bbr3.h"
#include "core/swift.h"

/* Filled by the ETS sockops program (bpf/ets.bpf.c); read-only here. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ets_sk);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ets_sk_stor SEC(".maps");

/* target_RTT per cgroup id; key SWIFT_CGRP_DEFAULT_KEY is the default. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SWIFT_CGRP_CFG_MAX_ENTRIES);
	__type(key, u64);
	__type(value, struct swift_cfg);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} swift_cgrp_cfg SEC(".maps");

/* target_RTT per socket (written by bbrctl through a socket fd). */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct swift_cfg);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} swift_sk_cfg SEC(".maps");

static __always_inline void swift_read_cfg(struct sock *sk,
					   struct bbr_swift_sk *v)
{
	struct swift_cfg *cfg;
	u64 key;

	cfg = bpf_sk_storage_get(&swift_sk_cfg, sk, NULL, 0);
	if (!cfg) {
		key = bbr_sk_cgroup_id(sk);
		cfg = bpf_map_lookup_elem(&swift_cgrp_cfg, &key);
	}
	if (!cfg) {
		key = SWIFT_CGRP_DEFAULT_KEY;
		cfg = bpf_map_lookup_elem(&swift_cgrp_cfg, &key);
	}
	swift_apply_cfg(&v->sw, cfg, v->bbr.st.round_count);
}

static __always_inline void swift_hook_init(struct sock *sk,
					    struct bbr_swift_sk *v)
{
	__builtin_memset(&v->sw, 0, sizeof(v->sw));
	swift_read_cfg(sk, v);
}

static __always_inline void swift_hook_pre(struct sock *sk,
					   struct bbr_swift_sk *v,
					   struct bbr_sock *s,
					   const struct bbr_rs *r)
{
	struct swift_sample smp = {};
	struct ets_sk *e;

	if (swift_cfg_due(&v->sw, v->bbr.st.round_count))
		swift_read_cfg(sk, v);
	if (v->sw.target_rtt_us != SWIFT_TARGET_NONE) {
		e = bpf_sk_storage_get(&ets_sk_stor, sk, NULL, 0);
		if (e) {
			smp.present = 1;
			smp.last_sample_ns = e->last_sample_ns;
			smp.network_rtt_us = e->network_rtt_us;
		}
	}
	swift_on_ack(&v->bbr.st, &v->sw, s, r, &smp);
}

static __always_inline void swift_hook_rec(struct bbr_swift_state_rec *rec,
					   const struct bbr_swift_sk *v)
{
	rec->magic = BBR_SWIFT_STATE_REC_MAGIC;
	rec->version = BBR_SWIFT_VERSION;
	__builtin_memcpy(&rec->sw, &v->sw, sizeof(rec->sw));
}

/* `bbrctl trace`: Network_RTT, target and the last decrease factor. */
static __always_inline void swift_hook_trace(struct bbr_trace_ev *e,
					     const struct bbr_swift_sk *v)
{
	e->network_rtt_us = v->sw.network_rtt_us;
	e->target_rtt_us = v->sw.target_rtt_us;
	e->swift_factor = v->sw.last_factor;
	e->swift_decreases = v->sw.decreases;
	e->swift_status = v->sw.status;
}

#define BBR_GLUE_VALUE		struct bbr_swift_sk
#define BBR_GLUE_CORE(v)	(&(v)->bbr)
#define BBR_GLUE_REC_T		struct bbr_swift_state_rec
#define BBR_GLUE_REC_BASE(r)	((r).bbr)
#define BBR_GLUE_HOOK_INIT(sk, v, s)		swift_hook_init(sk, v)
#define BBR_GLUE_HOOK_MAIN_PRE(sk, v, s, r)	swift_hook_pre(sk, v, s, r)
#define BBR_GLUE_HOOK_MAIN_POST(sk, v, s, r)	\
	swift_after_ack(&(v)->bbr.st, &(v)->sw, s)
#define BBR_GLUE_HOOK_REC(rec, v)		swift_hook_rec(rec, v)
#define BBR_GLUE_HOOK_TRACE(e, v)		swift_hook_trace(e, v)
#include "lib/tcp_cc.h"
