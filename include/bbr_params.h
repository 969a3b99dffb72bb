/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The runtime parameters of the CCs built on the BBRv3 core (bbr3,
 * bbr_swift): one table, written once, from which the BPF objects take the
 * struct and the defaults, bbrctl the key names, ranges and help, and the
 * tests and docs their checks (selftests/unit/test_params.c compares it
 * with docs/bbrctl.md).
 *
 * Each row: BBR_PARAM(name, min, max, default, unit, meaning). Values are
 * u32. Gains and fractions are in BBR_PARAM_UNIT (== BBR_UNIT, 256 = 1.0).
 * Ranges: gains end up in u16 fields of the state, so at most 16x;
 * fractions at most 1.0; loss_thresh strictly below 1.0 because the core
 * divides by (BBR_UNIT - loss_thresh); full_loss_cnt saturates at 15 in the
 * state; time-like values at most an hour in µs. Defaults are the
 * reference's integers (its module parameters), with its truncation.
 *
 * The table has three groups of rows: the BBRv3 core's (BBR_PARAM_TABLE_CORE,
 * read by every CC on the core), the L4S mode's within it
 * (BBR_PARAM_TABLE_L4S, read by bbr3_l4s) and bbr_swift's delay target
 * (BBR_PARAM_TABLE_SWIFT). A CC says which groups it reads in
 * bbr_param_groups (bpf/lib/tcp_cc.h); bbrctl takes only those keys for it.
 *
 * Each loaded CC keeps BBR_PARAM_SLOTS sets of them (the array
 * bbr_param_sets in the object's section .data.params). Set 0 is the
 * default set; the others belong to a cgroup (bbrctl set --cgroup: the hash
 * map param_cgrp, cgroup id -> set) or to one socket (bbrctl set --socket:
 * the socket's param_slot, below). docs/bbrctl.md, "set", says when a
 * change reaches a socket. Needs u32 and u64.
 */
#ifndef BBR_PARAMS_H
#define BBR_PARAMS_H

#define BBR_PARAM_UNIT		256u		/* BBR_UNIT: 1.0 */
#define BBR_PARAM_MAX_TIME_US	3600000000u	/* an hour */

/* Reference generations (the `generation` parameter). */
#define BBR_GEN_2023		2023	/* google/bbr v3, net/ipv4/tcp_bbr.c */
#define BBR_GEN_2026		2026	/* branch bbr-v3-2026-09-16-01, tcp_bbr3.c */

/* Every row: what struct bbr_params holds, what bbrctl knows. */
#define BBR_PARAM_TABLE(BBR_PARAM)						\
	BBR_PARAM_TABLE_CORE(BBR_PARAM) BBR_PARAM_TABLE_SWIFT(BBR_PARAM)

/* The core's rows, with the L4S mode's in the middle (where they have
 * always been in struct bbr_params). */
#define BBR_PARAM_TABLE_CORE(BBR_PARAM)						\
	BBR_PARAM_TABLE_CORE_HEAD(BBR_PARAM) BBR_PARAM_TABLE_L4S(BBR_PARAM)	\
	BBR_PARAM_TABLE_CORE_TAIL(BBR_PARAM)

#define BBR_PARAM_TABLE_CORE_HEAD(BBR_PARAM)					\
	/* 4 ln 2 rounded up: 256 * 277 / 100 + 1 = 710 (~2.77) */		\
	BBR_PARAM(startup_pacing_gain, 64, 4096, BBR_PARAM_UNIT * 277 / 100 + 1,\
		  "BBR_UNIT", "STARTUP pacing gain")				\
	BBR_PARAM(startup_cwnd_gain, 64, 4096, BBR_PARAM_UNIT * 2,		\
		  "BBR_UNIT", "STARTUP and DRAIN cwnd gain")			\
	BBR_PARAM(drain_gain, 0, 256, 0,					\
		  "BBR_UNIT", "DRAIN pacing gain; 0 = the generation's (128 in 2026, 88 in 2023)") \
	BBR_PARAM(cwnd_gain, 64, 4096, BBR_PARAM_UNIT * 2,			\
		  "BBR_UNIT", "PROBE_BW cwnd gain")				\
	BBR_PARAM(probe_up_pacing_gain, 256, 4096, BBR_PARAM_UNIT * 5 / 4,	\
		  "BBR_UNIT", "PROBE_BW UP pacing gain")			\
	/* 256 * 91 / 100 = 232 (~0.906); the draft says 0.90 */		\
	BBR_PARAM(probe_down_pacing_gain, 1, 256, BBR_PARAM_UNIT * 91 / 100,	\
		  "BBR_UNIT", "PROBE_BW DOWN pacing gain")			\
	BBR_PARAM(bw_probe_cwnd_gain, 0, 64, 1,					\
		  "BBR_UNIT/4", "extra UP cwnd gain (UP cwnd gain = cwnd_gain + this/4)") \
	/* 256 * 30 / 100 = 76: a cut keeps 180/256 (~0.7) */			\
	BBR_PARAM(beta, 0, 256, BBR_PARAM_UNIT * 30 / 100,			\
		  "BBR_UNIT", "multiplicative cut on loss or ECN is (1 - beta)") \
	/* 256 * 2 / 100 = 5 (~1.95 %) */					\
	BBR_PARAM(loss_thresh, 1, 255, BBR_PARAM_UNIT * 2 / 100,		\
		  "BBR_UNIT", "loss rate that is too high; below 1.0")		\
	BBR_PARAM(full_loss_cnt, 0, 15, 6,					\
		  "events", "loss events in a round that end STARTUP; 0 = never") \
	BBR_PARAM(ecn_enable, 0, 1, 0,						\
		  "0/1", "react to CE marks (needs a low-threshold AQM)")	\
	BBR_PARAM(ecn_thresh, 0, 256, BBR_PARAM_UNIT / 2,			\
		  "BBR_UNIT", "CE ratio that is too high")			\
	/* 256 / 3 = 85 (~0.332) */						\
	BBR_PARAM(ecn_factor, 0, 256, BBR_PARAM_UNIT / 3,			\
		  "BBR_UNIT", "share of the CE EWMA in the inflight_lo cut")	\
	BBR_PARAM(ecn_alpha_gain, 0, 256, BBR_PARAM_UNIT / 16,			\
		  "BBR_UNIT", "EWMA gain of the CE ratio")			\
	BBR_PARAM(ecn_max_rtt_us, 0, BBR_PARAM_MAX_TIME_US, 5000,		\
		  "us", "ECN only if min_rtt is at most this; 0 = any")		\
	BBR_PARAM(ecn_reprobe_gain, 0, 1024, BBR_PARAM_UNIT / 2,		\
		  "BBR_UNIT", "inflight_hi share that sets the slope of a re-probe after CE only")

/*
 * The L4S mode's rows (docs/l4s.md), read by bbr3_l4s only (core/l4s.h):
 * the keys after `l4s` apply only while it is in force, i.e. l4s = 1 and
 * the connection has AccECN. Plain bbr3 and bbr_swift have no L4S code, so
 * bbrctl refuses these keys for them (BBR_PARAM_GROUP_L4S). They stay in
 * struct bbr_params of every CC, in this place, so that one layout serves
 * all objects.
 */
#define BBR_PARAM_TABLE_L4S(BBR_PARAM)						\
	BBR_PARAM(l4s, 0, 1, 0,							\
		  "0/1", "L4S mode: the L4S keys apply while the connection has AccECN (else it runs as with 0)") \
	BBR_PARAM(ce_discount_k, 0, 64, 0,					\
		  "1/K", "L4S: a bandwidth sample counts each CE-marked packet as 1 - 1/K packet (BBR-evo: K = 4); 0 = off") \
	BBR_PARAM(cycle_rounds, 0, 16, 0,					\
		  "rounds", "L4S: PROBE_BW as a cycle of this many rounds, up, down, then cruise (BBR-evo: 3); 0 = BBRv3's phases; 1 counts as 2") \
	/* 256 * 9 / 8 = 288, 256 * 7 / 8 = 224: BBR-evo's cycle */		\
	BBR_PARAM(cycle_up_gain, 256, 4096, BBR_PARAM_UNIT * 9 / 8,		\
		  "BBR_UNIT", "L4S: pacing gain of the cycle's up round")	\
	BBR_PARAM(cycle_down_gain, 1, 256, BBR_PARAM_UNIT * 7 / 8,		\
		  "BBR_UNIT", "L4S: pacing gain of the cycle's down round")	\
	BBR_PARAM(cycle_min_us, 0, BBR_PARAM_MAX_TIME_US, 0,			\
		  "us", "L4S: the cycle lasts at least this long, cruising longer if its rounds are shorter (probing as often at any RTT); 0 = cycle_rounds rounds") \
	BBR_PARAM(bw_slot_rounds, 0, 255, 0,					\
		  "rounds", "L4S: the 2-slot max-bw filter moves a slot every this many rounds (BBR-evo's 2-round window: 1); 0 = once per PROBE_BW cycle") \
	BBR_PARAM(startup_ce_rounds, 0, 15, 0,					\
		  "rounds", "L4S: STARTUP goes to PROBE_BW after this many rounds with CE (BBR-evo: 2); 0 = BBRv3's rule") \
	BBR_PARAM(l4s_no_probe_rtt, 0, 1, 0,					\
		  "0/1", "L4S: no PROBE_RTT (BBR-evo); 0 = BBRv3's")

#define BBR_PARAM_TABLE_CORE_TAIL(BBR_PARAM)					\
	/* 256 * 15 / 100 = 38 (~0.148) */					\
	BBR_PARAM(inflight_headroom, 0, 256, BBR_PARAM_UNIT * 15 / 100,		\
		  "BBR_UNIT", "headroom below inflight_hi while cruising")	\
	BBR_PARAM(probe_rtt_mode_ms, 0, 60000, 200,				\
		  "ms", "PROBE_RTT duration; 0 = no PROBE_RTT")			\
	BBR_PARAM(probe_rtt_win_ms, 100, 3600000, 5000,				\
		  "ms", "PROBE_RTT interval without a new min RTT")		\
	BBR_PARAM(min_rtt_win_sec, 1, 3600, 10,					\
		  "s", "min_rtt filter window")					\
	BBR_PARAM(extra_acked_gain, 0, 4096, BBR_PARAM_UNIT,			\
		  "BBR_UNIT", "ACK-aggregation cwnd allowance gain")		\
	BBR_PARAM(recovery_conservation, 0, 1, 0,				\
		  "0/1", "packet conservation in the first recovery round")	\
	BBR_PARAM(fast_path, 0, 1, 1,						\
		  "0/1", "app-limited fast path")				\
	BBR_PARAM(generation, BBR_GEN_2023, BBR_GEN_2026, BBR_GEN_2026,		\
		  "year", "reference generation: 2023, any other value 2026 (docs/bbr3.md)") \
	/* Beyond the reference: 0 = off, the reference's behaviour */	\
	BBR_PARAM(loss_queue_thresh, 0, 1024, 0,				\
		  "BBR_UNIT", "loss counts as congestion only if its round's RTT rose this share of min_rtt (or half the last probe's queue) above min_rtt; 0 = always") \
	BBR_PARAM(random_loss_max, 0, 256, 0,					\
		  "BBR_UNIT", "with loss_queue_thresh: a loss rate above this counts as congestion, queue or not") \
	BBR_PARAM(cwnd_headroom_us, 0, BBR_PARAM_MAX_TIME_US, 0,		\
		  "us", "PROBE_BW cwnd adds bw x this (at most min_rtt); 0 = none") \
	BBR_PARAM(probe_headroom_us, 0, BBR_PARAM_MAX_TIME_US, 0,		\
		  "us", "PROBE_UP cwnd adds bw x this more (all at most 1.25 min_rtt); 0 = none")

/*
 * bbr_swift's delay target (docs/bbr_swift.md). The defaults are the
 * behaviour without configuration: no target (plain BBRv3), samples stale
 * after SWIFT_STALE_DEFAULT_US, BBRv3's ECN response off while a target is
 * in force. Its rows are written SWIFT_PARAM(...) so that a reader of this
 * header (selftests/lab/labkit/ccctl.py) can tell them from the core's.
 */
#define BBR_PARAM_TABLE_SWIFT(SWIFT_PARAM)					\
	SWIFT_PARAM(target_rtt_us, 0, BBR_PARAM_MAX_TIME_US, 0,			\
		    "us", "target Network_RTT; 0 = none (plain BBRv3)") \
	SWIFT_PARAM(stale_us, 0, BBR_PARAM_MAX_TIME_US, 0,			\
		    "us", "age at which an ETS sample is stale; 0 = 100000") \
	SWIFT_PARAM(keep_ecn, 0, 1, 0,						\
		    "0/1", "keep BBRv3's ECN response with a target")		\
	SWIFT_PARAM(raw_samples, 0, 1, 0,					\
		    "0/1", "decide on each latest Network_RTT sample, not the path's or the round trip's least") \
	SWIFT_PARAM(host_target_us, 0, BBR_PARAM_MAX_TIME_US, 0,		\
		    "us", "target of the sender's own host delay; 0 = none")

/* bbr_param_groups: which groups of rows a CC reads. */
#define BBR_PARAM_GROUP_CORE	0x1	/* BBR_PARAM_TABLE_CORE */
#define BBR_PARAM_GROUP_SWIFT	0x2	/* BBR_PARAM_TABLE_SWIFT */
#define BBR_PARAM_GROUP_L4S	0x4	/* BBR_PARAM_TABLE_L4S (inside the core's) */

/* The fields, in table order. */
struct bbr_params {
#define BBR_PARAM_FIELD(name, lo, hi, def, unit, what)	u32 name;
	BBR_PARAM_TABLE(BBR_PARAM_FIELD)
#undef BBR_PARAM_FIELD
};

#define BBR_PARAM_INIT(name, lo, hi, def, unit, what)	.name = (def),
#define BBR_PARAMS_DEFAULT { BBR_PARAM_TABLE(BBR_PARAM_INIT) }

/*
 * Profiles: named presets over the table (`bbrctl set bbr3 profile=NAME`).
 *   v3      the reference: every key below at its table default.
 *   v3plus  the reference plus random-loss tolerance and a queue allowance
 *           in time instead of in RTTs (docs/bbr3.md, "Beyond v3").
 *   l4s     the L4S mode with BBR-evo's modifications (Ericsson, "BBR with
 *           L4S support"; docs/l4s.md): CE-discounted bandwidth (K = 4), a
 *           3-round gain cycle [9/8, 7/8, 1], a 2-round max-bw window, no
 *           PROBE_RTT, STARTUP left after 2 rounds with CE; BBRv3's ECN
 *           response on at any RTT. Needs AccECN (`bbrctl load --ecn accecn`).
 * Each row: BBR_PROFILE_VALUE(profile, key, value). A key that any profile
 * sets is reset to its default by every other profile, so that switching
 * profiles never leaves a mix. bbr_params_set_profile() (bpf/core/bbr3.h)
 * applies a profile in C; bbrctl and the lab read the rows from here.
 */
#define BBR_PROFILE_v3		0
#define BBR_PROFILE_v3plus	1
#define BBR_PROFILE_l4s		2
#define BBR_PROFILE_NAMES	{ "v3", "v3plus", "l4s" }

#define BBR_PROFILE_TABLE(BBR_PROFILE_VALUE)					\
	/* 1.0 x BDP plus a time allowance instead of 2 x BDP */		\
	BBR_PROFILE_VALUE(v3plus, cwnd_gain, BBR_PARAM_UNIT)			\
	BBR_PROFILE_VALUE(v3plus, bw_probe_cwnd_gain, 0)			\
	BBR_PROFILE_VALUE(v3plus, cwnd_headroom_us, 15000)			\
	/* UP: 1.0 x BDP + 55 ms, so at most the 1.25 min_rtt cap (2.25 x BDP) \
	 * on paths of 44 ms or more: a probe moves as far as the reference's \
	 * there, which keeps the share against CUBIC in deep buffers */	\
	BBR_PROFILE_VALUE(v3plus, probe_headroom_us, 40000)			\
	/* 256 / 8 = 32: a queue of 1/8 min_rtt means congestion */		\
	BBR_PROFILE_VALUE(v3plus, loss_queue_thresh, BBR_PARAM_UNIT / 8)	\
	/* 256 * 15 / 100 = 38 (~14.8 %): above it loss always counts */	\
	BBR_PROFILE_VALUE(v3plus, random_loss_max, BBR_PARAM_UNIT * 15 / 100)	\
	BBR_PROFILE_VALUE(l4s, l4s, 1)						\
	BBR_PROFILE_VALUE(l4s, ecn_enable, 1)					\
	BBR_PROFILE_VALUE(l4s, ecn_max_rtt_us, 0)				\
	BBR_PROFILE_VALUE(l4s, ce_discount_k, 4)				\
	BBR_PROFILE_VALUE(l4s, cycle_rounds, 3)					\
	BBR_PROFILE_VALUE(l4s, bw_slot_rounds, 1)				\
	BBR_PROFILE_VALUE(l4s, startup_ce_rounds, 2)				\
	BBR_PROFILE_VALUE(l4s, l4s_no_probe_rtt, 1)

/* Parameter sets per CC: a power of two, so that masking keeps any index
 * in bounds (the verifier needs that proof, and a corrupt slot must not
 * read outside the array). 64 sets x 116 B = 7.25 KiB: room for the lab's
 * per-run cgroups plus the operator's own. */
#ifndef BBR_PARAM_SLOTS
#define BBR_PARAM_SLOTS		64
#endif
#define BBR_PARAM_SLOT_DEFAULT	0	/* sockets in no configured cgroup */

/*
 * One socket's own set (bbrctl set --socket): its struct bbr3.param_slot
 * carries BBR_PARAM_SLOT_PINNED, so the glue's re-pick from its cgroup at
 * each round start leaves it alone; the core masks the bit off
 * (bbr_params_of). bbrctl records the set under BBR_PARAM_KEY_SOCKET |
 * cookie in param_cgrp, so that no cgroup gets it while the socket lives;
 * the programs look up cgroup ids only, which never have that bit.
 */
#define BBR_PARAM_SLOT_PINNED	0x80
#define BBR_PARAM_KEY_SOCKET	(1ULL << 63)
_Static_assert(BBR_PARAM_SLOTS <= BBR_PARAM_SLOT_PINNED,
	       "param_slot needs a bit above the slot numbers");

/*
 * bpf/param_sock.bpf.c, bbrctl's hand on one socket's set: an iter/tcp
 * program that finds the socket by its cookie in the CC's socket storage
 * (every CC on bpf/lib/tcp_cc.h) and does req.op to it.
 */
#define PARAM_SOCK_SHOW		0	/* report its set */
#define PARAM_SOCK_PIN		1	/* give it set req.slot, pinned */
#define PARAM_SOCK_UNPIN	2	/* back to its cgroup's set, or set 0 */
#define PARAM_SOCK_LIST		3	/* one struct param_sock_pinned per pinned socket */

struct param_sock_req {			/* written by bbrctl between walks */
	u64 cookie;
	u32 op;				/* PARAM_SOCK_* */
	u32 slot;			/* PARAM_SOCK_PIN */
};

struct param_sock_result {		/* read by bbrctl after a walk */
	u64 cgroup_id;			/* the socket's cgroup v2 id (0: none) */
	u32 matched;			/* sockets with the cookie (0 or 1) */
	u8 slot;			/* its param_slot before */
	u8 new_slot;			/* and after */
	u8 _pad[2];
};

struct param_sock_pinned {		/* PARAM_SOCK_LIST, in the iterator's output */
	u64 cookie;
	u32 slot;
	u32 _pad;
};

#endif /* BBR_PARAMS_H */
