/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * BBR.Swift configuration and state layouts, shared by bpf/bbr_swift.bpf.c,
 * the native unit tests and bbrctl (`bbrctl set ... target_rtt_us=N`).
 *
 * BBR.Swift is BBRv3 plus a delay target: when the ETS-measured
 * Network_RTT of a socket exceeds its target_RTT, the short-term model
 * (bw_lo, inflight_lo) is cut by
 *     max(1 - SWIFT_BETA x (Network_RTT - target_RTT) / Network_RTT, SWIFT_MAX_MDF)
 * at most once per round trip. See docs/bbr_swift.md.
 *
 * Where the target comes from, first match wins:
 *   1. per socket: sk_storage map SWIFT_SK_CFG_MAP_NAME, value struct
 *      swift_cfg. An application writes it with bpf_map_update_elem(map_fd,
 *      &socket_fd, &cfg, BPF_ANY) on a socket it holds; bbrctl, which holds
 *      none, through the iterator bpf/swift_sk_set.bpf.c (`bbrctl set
 *      --socket COOKIE`, struct swift_sk_set_result below).
 *   2. per cgroup: hash map SWIFT_CGRP_CFG_MAP_NAME keyed by the cgroup v2
 *      id (u64, the inode number of the cgroup directory; what
 *      bpf_sk_cgroup_id() returns for the socket), value struct swift_cfg.
 *   3. the default: key SWIFT_CGRP_DEFAULT_KEY (0, no cgroup has id 0) in the
 *      same hash map.
 *   4. none of the above: SWIFT_TARGET_RTT_DEFAULT_US.
 * A target of SWIFT_TARGET_NONE (0) means "no target": the socket runs
 * plain BBRv3 (with BBRv3's own ECN response if ecn_enable is set).
 *
 * The socket reads its configuration when it is initialised and again
 * every SWIFT_CFG_REFRESH_ROUNDS round trips, so `bbrctl set` takes effect
 * on live connections within a few RTTs.
 *
 * Both maps are pinned by name (LIBBPF_PIN_BY_NAME) under SWIFT_PIN_ROOT,
 * the same directory as the ETS map, so bbrctl finds them without loading
 * the object, and they survive a reload of bbr_swift.
 *
 * Needs u8..u64 defined first.
 */
#ifndef BBR_SWIFT_H
#define BBR_SWIFT_H

#include "bbr_pins.h"

#define BBR_SWIFT_VERSION		1	/* bump when a layout below changes */

#define SWIFT_CGRP_CFG_MAP_NAME		"swift_cgrp_cfg"
#define SWIFT_SK_CFG_MAP_NAME		"swift_sk_cfg"
#define SWIFT_PIN_ROOT			PIN_SHARED	/* include/bbr_pins.h */
#define SWIFT_CGRP_CFG_MAX_ENTRIES	1024	/* cgroups with their own target */
#define SWIFT_CGRP_DEFAULT_KEY		0ULL	/* "every cgroup without an entry" */

/* swift_cfg.target_rtt_us value for "no target: plain BBRv3". */
#define SWIFT_TARGET_NONE		0u
/* Default target when nothing is configured: 0 = none. A CC that silently
 * slowed flows down to a made-up target would surprise; the operator sets
 * one per cgroup (the seed's datacenter runs used ~100 us targets). */
#define SWIFT_TARGET_RTT_DEFAULT_US	SWIFT_TARGET_NONE
/* A Network_RTT sample older than this is stale: fall back to BBRv3. 0 in
 * swift_cfg.stale_us means this default. 100 ms: many datacenter RTTs, and
 * about one WAN RTT, after which the sample says nothing of the queue now. */
#define SWIFT_STALE_DEFAULT_US		100000u

/* Re-read the configuration every this many rounds: `bbrctl set` reaches
 * live sockets within a few RTTs, at one map lookup per 16 rounds. */
#define SWIFT_CFG_REFRESH_ROUNDS	16u

/* swift_cfg.flags */
#define SWIFT_CFG_F_KEEP_ECN		0x1	/* keep BBRv3's ECN response with a target */

struct swift_cfg {
	u32 target_rtt_us;		/* SWIFT_TARGET_NONE = no target */
	u32 stale_us;			/* sample age limit; 0 = SWIFT_STALE_DEFAULT_US */
	u32 flags;			/* SWIFT_CFG_F_* */
	u32 _reserved;			/* 0 */
};

/* bpf/swift_sk_set.bpf.c: what it does to the socket with the cookie
 * (.rodata op) and which fields of its entry a write sets (set_mask). */
#define SWIFT_SK_OP_SHOW		0
#define SWIFT_SK_OP_WRITE		1
#define SWIFT_SK_OP_DELETE		2
#define SWIFT_SK_SET_TARGET		0x1	/* target_rtt_us */
#define SWIFT_SK_SET_STALE		0x2	/* stale_us */
#define SWIFT_SK_SET_FLAGS		0x4	/* flags */

/* Its .bss result for bbrctl. */
struct swift_sk_set_result {
	u64 cgroup_id;			/* the socket's cgroup v2 id (0: none) */
	u32 matched;			/* sockets with the cookie (0 or 1) */
	u32 had_entry;			/* it had a per-socket entry */
	s32 err;			/* of the write or delete: 0 or -errno */
	u32 status;			/* swift_state.status, SWIFT_ST_* */
	struct swift_cfg in_force;	/* what the socket uses now */
	struct swift_cfg old;		/* its entry before (had_entry) */
	struct swift_cfg written;	/* the entry written (SWIFT_SK_OP_WRITE) */
};

/* Fixed-point scale of decrease factors: 65536 == 1.0. */
#define SWIFT_FACTOR_SCALE		16
#define SWIFT_FACTOR_UNIT		(1u << SWIFT_FACTOR_SCALE)

/* swift_state.status: why the last ACK did (not) use the delay target.
 * Anything but SWIFT_ST_ACTIVE means the socket ran plain BBRv3. */
#define SWIFT_ST_NO_TARGET		0	/* no target configured */
#define SWIFT_ST_NO_ETS			1	/* no ETS storage / no sample ever */
#define SWIFT_ST_STALE			2	/* latest sample older than stale_us */
#define SWIFT_ST_ACTIVE			3	/* fresh sample, target in force */

/* Per-socket Swift state, appended to the BBRv3 state in the sk_storage
 * value of bbr_swift and in its state record. */
struct swift_state {
	u64 last_sample_ns;		/* ets_sk.last_sample_ns used last */
	u32 target_rtt_us;		/* target in force; 0 = none */
	u32 stale_us;			/* sample age limit in force */
	u32 network_rtt_us;		/* latest Network_RTT seen */
	u32 decrease_delivered;		/* tp->delivered at the last decrease */
	u32 last_factor;		/* last decrease factor, SWIFT_FACTOR_UNIT */
	u32 decreases;			/* decreases applied (wraps) */
	u32 fallback_acks;		/* ACKs run as plain BBRv3 with a target set (wraps) */
	u32 cfg_round;			/* bbr3.round_count of the last cfg read */
	u32 subpkt_cwnd_milli;		/* model's cwnd in 1/1000 pkt when < floor; 0 = off */
	u32 flags;			/* cfg flags in force */
	u8 status;			/* SWIFT_ST_* */
	u8 has_decreased;		/* decrease_delivered is valid */
	u8 startup_over_rounds;		/* rounds in a row over target in STARTUP */
	u8 _pad[5];
};

/* A Network_RTT sample, as the ETS sockops program left it. */
struct swift_sample {
	u64 last_sample_ns;		/* 0 = no sample (or no ETS storage) */
	u32 network_rtt_us;
	u32 present;			/* the socket has ETS storage */
};

/* The delay signal bbr_core_main() consumes: the socket's Swift state and
 * this ACK's sample. */
struct bbr_delay {
	struct swift_state w;
	struct swift_sample smp;
};

struct bbr_swift_sk {
	struct bbr3_sk bbr;
	struct bbr_delay delay;		/* Swift's state and latest sample */
};

/* bbr_swift's state record from its iterator (`bbrctl stat bbr_swift`):
 * the bbr3 record followed by the Swift part. */
#define BBR_SWIFT_STATE_REC_MAGIC	0x53574654u	/* "SWFT" */

/* The sk_storage value of bbr_swift and its iterator record. Needs
 * bbr3_state.h first. */
#ifdef BBR3_STATE_H

struct bbr_swift_state_rec {
	struct bbr3_state_rec bbr;	/* as bbr3's record */
	u32 magic;			/* BBR_SWIFT_STATE_REC_MAGIC */
	u32 version;			/* BBR_SWIFT_VERSION */
	struct swift_state sw;
};
#endif

#endif /* BBR_SWIFT_H */
