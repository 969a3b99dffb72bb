/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The histograms selftests/progs/hostdelay.bpf.c fills and
 * selftests/tools/hostdelay reads. */
#ifndef HOSTDELAY_H
#define HOSTDELAY_H

enum hd_stage {
	HD_TX_DATA,		/* EDT -> device xmit, data segments */
	HD_TX_ACK,		/* the same, pure ACKs */
	HD_DEV_QUEUE,		/* device xmit -> skb freed */
	HD_RX_DATA,		/* device -> TCP, data segments */
	HD_RX_ACK,		/* the same, pure ACKs */
	HD_FWD_DATA,		/* device -> another device's xmit: a
				 * router's backlog, forwarding and qdisc */
	HD_FWD_ACK,		/* the same, pure ACKs */
	HD_STAGES,
};

/* bucket[b]: samples below 2^b us (bucket 0: below 1 us), the last one
 * everything above. */
#define HD_BUCKETS	24

struct hd_hist {
	__u64 count;
	__u64 sum_us;
	__u64 bucket[HD_BUCKETS];
};

#endif /* HOSTDELAY_H */
