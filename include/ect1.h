/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ect1 (bpf/ect1.bpf.c): the counters it keeps and bbrctl reads (`bbrctl
 * ect1 status`). Types from the kernel's __u64 so that the BPF side and
 * userspace share one definition.
 */
#ifndef BBR_ECT1_H
#define BBR_ECT1_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* ect1's l3_off (.rodata): the IP header's offset in the packets a device
 * of this kind sends, as tc sees them */
#define ECT1_L3_OFF_ETHER	14	/* ARPHRD_ETHER: after ETH_HLEN */
#define ECT1_L3_OFF_IP		0	/* ARPHRD_NONE (tun), ARPHRD_RAWIP */

/* count(): which counter a packet of an L4S socket goes to */
#define ECT1_REWRITTEN		0
#define ECT1_CLEARED		1
#define ECT1_LEFT_ALONE		2

/* One per CPU (BPF_MAP_TYPE_PERCPU_ARRAY, key 0): packets of the sockets
 * ect1 acts for (an ECT(1) CC over AccECN, an ECN CC without ECN). */
struct ect1_stats {
	__u64 rewritten;	/* ECT(0) sent as ECT(1) */
	__u64 cleared;		/* ECT(0) sent as Not-ECT: no ECN negotiated */
	__u64 left_alone;	/* Not-ECT or CE: as they were */
};

#endif /* BBR_ECT1_H */
