/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A/B splits of congestion controls on live traffic (bpf/cc_ab.bpf.c,
 * `bbrctl attach --cgroup CG --cc bbr3:50,cubic:50`, `bbrctl ab report`):
 * the layouts the sockops program and bbrctl share. Types from the
 * kernel's __u64 so that one definition serves both sides.
 *
 * One split per cgroup. Its maps are pinned next to its link under
 * PIN_ROOT/cgroup/ID/ (include/bbr_pins.h, PIN_AB_*):
 *   ab_cfg    the arms and their weights (bbrctl writes it; a weight change
 *             is one write of it, read by new connections only)
 *   ab_stats  per arm, counters since the split was attached
 *   ab_conns  the last AB_RING_SLOTS finished connections, one record each
 *   ab_ring   the ring's head: how many records were ever written
 */
#ifndef BBR_AB_H
#define BBR_AB_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define AB_ARMS_MAX		8	/* arms of one split */
#define AB_NAME_LEN		16	/* TCP_CA_NAME_MAX */
#define AB_WEIGHT_TOTAL		100	/* weights are percent */
/* Finished connections kept for `ab report`: a power of two (the index is
 * masked). 65536 x 40 B = 2.5 MiB per split; at 100 connections/s the last
 * 11 minutes. */
#define AB_RING_SLOTS		65536

struct ab_cfg {
	__u32 narms;
	__u32 generation;		/* bumped by every weight change */
	__u64 salt;			/* mixed into the 4-tuple hash */
	/* arm i takes the hash buckets [cum_pct[i-1], cum_pct[i]) of 0..99 */
	__u32 cum_pct[AB_ARMS_MAX];
	char name[AB_ARMS_MAX][AB_NAME_LEN];	/* the congestion control of each arm */
};

/* Per arm, since the split was attached; counters only grow. */
struct ab_stats {
	__u64 opened;			/* connections given this arm */
	__u64 set_failed;		/* ... whose setsockopt failed (they keep
					 * the cgroup's or namespace's CC) */
	__u64 closed;			/* finished connections recorded */
	__u64 bytes_acked;		/* of the finished connections */
	__u64 data_segs_out;
	__u64 total_retrans;		/* retransmitted segments */
	__u64 srtt_sum_us;		/* srtt at the end, summed */
	__u64 duration_sum_us;
};

/* One finished connection (ab_conns). */
struct ab_conn {
	__u64 seq;			/* ab_ring head when written + 1; 0 = empty */
	__u64 bytes_acked;
	__u64 duration_us;		/* establishment to the end (cc_ab.bpf.c) */
	__u32 data_segs_out;
	__u32 total_retrans;
	__u32 srtt_us;
	__u16 arm;
	__u16 generation;		/* ab_cfg.generation when it was split */
};

/* The connection's arm, kept in socket storage from its split on. */
struct ab_sk {
	__u64 start_ns;			/* bpf_ktime_get_ns() at establishment; 0 = not yet */
	__u16 arm;
	__u16 generation;
	__u8 recorded;			/* its record is written */
	__u8 _pad[3];
};

#endif /* BBR_AB_H */
