/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * BBR.Swift state layouts, shared by bpf/bbr_swift.bpf.c, the native unit
 * tests and bbrctl.
 *
 * BBR.Swift is BBRv3 plus a delay target: when the ETS-measured
 * Network_RTT of a socket exceeds its target_RTT, Swift's window (which
 * caps cwnd and pacing rate after BBRv3's control) is cut by
 *     max(1 - SWIFT_BETA x (Network_RTT - target_RTT) / Network_RTT, SWIFT_MAX_MDF)
 * at most once per round trip, and grows additively below the target.
 * See core/swift.h and docs/bbr_swift.md.
 *
 * Its configuration - target_rtt_us, stale_us, keep_ecn, raw_samples,
 * host_target_us - is rows of the parameter table (include/bbr_params.h,
 * BBR_PARAM_TABLE_SWIFT), so it comes from the socket's parameter set like
 * every other parameter: the socket's own (bbrctl set --socket), its
 * cgroup's (--cgroup) or the default set (--default). The socket copies
 * those keys into its
 * Swift state (struct swift_cfg, swift_apply_cfg()) at init and at the
 * first ACK of every round, after the glue has picked its set for the
 * round. A target of SWIFT_TARGET_NONE (0) means "no target": the socket
 * runs plain BBRv3 (with BBRv3's own ECN response if ecn_enable is set).
 *
 * Needs u8..u64 defined first.
 */
#ifndef BBR_SWIFT_H
#define BBR_SWIFT_H

#define BBR_SWIFT_VERSION		4	/* bump when a layout below changes */

/* target_rtt_us value for "no target: plain BBRv3". */
#define SWIFT_TARGET_NONE		0u
/* Default target when nothing is configured: 0 = none. A CC that silently
 * slowed flows down to a made-up target would surprise; the operator sets
 * one per cgroup (the datacenter runs of Google's BBR.Swift talk, IETF 109,
 * used ~100 us targets). */
#define SWIFT_TARGET_RTT_DEFAULT_US	SWIFT_TARGET_NONE
/* A Network_RTT sample older than this is stale: fall back to BBRv3. 0 in
 * stale_us means this default. 100 ms: many datacenter RTTs, and about one
 * WAN RTT, after which the sample says nothing of the queue now. */
#define SWIFT_STALE_DEFAULT_US		100000u

/* Copy the configuration from the parameter set every this many rounds:
 * every round, so a change reaches a live socket at its next round start,
 * at the cost of three loads per round. */
#define SWIFT_CFG_REFRESH_ROUNDS	1u

/* swift_cfg.flags */
#define SWIFT_CFG_F_KEEP_ECN		0x1	/* keep BBRv3's ECN response with a target */
#define SWIFT_CFG_F_RAW_SAMPLES		0x2	/* decide on the latest sample, unfiltered */

/* The configuration in the form the Swift state takes it (swift_apply_cfg):
 * bbr_swift fills it from the socket's parameter set. */
struct swift_cfg {
	u32 target_rtt_us;		/* SWIFT_TARGET_NONE = no target */
	u32 stale_us;			/* sample age limit; 0 = SWIFT_STALE_DEFAULT_US */
	u32 flags;			/* SWIFT_CFG_F_*: keep_ecn, raw_samples */
	u32 host_target_us;		/* target of the sender's host delay; 0 = none */
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
	u32 fallback_acks;		/* ACKs without a fresh sample, target set (wraps) */
	u32 cfg_round;			/* bbr3.round_count of the last cfg read */
	u32 cwnd_milli;			/* Swift's window, 1/1000 pkt; 0 = not engaged */
	u32 flags;			/* cfg flags in force */
	u32 round_min_rtt_us;		/* least sample of this round so far; 0 = none */
	u32 decided_rtt_us;		/* what the last decision used (swift_decision_rtt()) */
	u32 path_rtt_us;		/* latest path value from ETS; 0 = none */
	u32 host_delay_us;		/* latest sender host delay from ETS; 0 = none */
	u32 host_target_us;		/* host delay target in force; 0 = none */
	u32 start_milli;		/* the window it started with, when its host
					 * shared an initial window or the path was
					 * over target (swift_on_start()); 0 = BBRv3's */
	u8 status;			/* SWIFT_ST_* */
	u8 has_decreased;		/* decrease_delivered is valid */
	u8 round_samples;		/* samples in round_min_rtt_us (saturates) */
	u8 in_excursion;		/* cut since the last decision at or
					 * below target (swift_same_excursion()) */
	u32 prev_path_rtt_us;		/* path value of the sample before the
					 * latest; 0 = none */
	u32 ack_delay_max_us;		/* the peer's bound on its ACK delay
					 * (ETS MaxACKDel); 0 = not known */
	u32 cut_rtt_us;			/* decided_rtt_us at the last decrease */
	u64 cut_us;			/* sk->now_us of the last decrease */
};

/* A Network_RTT sample, as the ETS sockops program left it. */
struct swift_sample {
	u64 last_sample_ns;		/* 0 = no sample (or no ETS storage) */
	u32 network_rtt_us;
	u32 present;			/* the socket has ETS storage */
	u32 path_rtt_us;		/* least Network_RTT to the peer from this
					 * host over ETS's path window; 0 = none */
	u32 host_delay_us;		/* the sender's own delay; 0 = none */
	u32 ack_delay_max_us;		/* the peer's MaxACKDel; 0 = not known */
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
