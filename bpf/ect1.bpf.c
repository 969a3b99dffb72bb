// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ect1: a tcx egress program that puts the IP ECN codepoint a BPF
 * congestion control asked for on its connections' packets, where Linux
 * 6.18 does not: ECT(1), the codepoint an L4S AQM classifies by (RFC 9331),
 * on the data of L4S connections, and Not-ECT on connections that
 * negotiated no ECN at all.
 *
 * A congestion control registered with TCP_CONG_ECT_1_NEGOTIATION (bbrctl
 * load --ecn accecn) gets its SYN and SYN-ACK sent as ECT(1), but Linux
 * 6.18 sends the established connection's segments as ECT(0): ECT(1) on
 * data needs an ops flag mainline does not have yet, and a BPF congestion
 * control can neither write inet_sock.tos nor set its ECN bits with
 * IP_TOS. This program supplies the missing step on the way out: a packet
 * whose socket
 *   - is a full TCP socket,
 *   - runs a congestion control with TCP_CONG_ECT_1_NEGOTIATION, and
 *   - negotiated AccECN (with a classic ECN peer its packets stay ECT(0),
 *     RFC 9331's fallback; with none, see below),
 * and that carries ECT(0) leaves with ECT(1). Not-ECT packets stay Not-ECT
 * and CE is never touched.
 *
 * A congestion control with TCP_CONG_NEEDS_ECN has the socket send ECT
 * from the SYN on. When the peer answers without ECN, the kernel leaves
 * clearing that to the CC's init (DCTCP calls INET_ECN_dontxmit()), which a
 * BPF CC cannot do: its data would leave ECN-capable with nobody to echo
 * CE, so a marking AQM would never slow it down (RFC 3168 6.1.1 forbids
 * that). A packet of such a socket, once past the handshake, leaves as
 * Not-ECT.
 *
 * The IPv4 header checksum is updated; the TCP checksum does not cover the
 * ECN field.
 *
 * bbrctl (bbrctl ect1 attach IFACE) attaches it to a device's egress
 * (Ethernet, or an IP device such as tun: l3_off) with a bpf_link pinned
 * under PIN_ROOT/ect1/ (include/bbr_pins.h) and reads the counters in
 * ect1_stats. It returns TCX_NEXT always:
 * packets continue to whatever else is attached.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "ect1.h"

/* include/net/tcp.h (6.18) */
#define TCP_CONG_NEEDS_ECN		0x2
#define TCP_CONG_ECT_1_NEGOTIATION	0x8
/* include/net/tcp_ecn.h (6.18): the ECN mode the handshake left */
#define TCP_ECN_MODE_RFC3168		0x1
#define TCP_ECN_MODE_ACCECN		0x10
/* include/net/inet_ecn.h: the IP ECN field */
#define IP_ECN_MASK			0x3
#define IP_ECN_NOT_ECT			0x0
#define IP_ECN_ECT_1			0x1
#define IP_ECN_ECT_0			0x2
/* include/uapi/linux/if_ether.h */
#define ETH_P_IPV4			0x0800
#define ETH_P_IPV6			0x86DD
/* include/uapi/linux/ip.h: offsets in struct iphdr */
#define IPV4_TOS_OFF			1
#define IPV4_CSUM_OFF			10
/* IPv6: the traffic class straddles bytes 0 and 1; its ECN bits are bits
 * 4-5 of byte 1 */
#define IPV6_TC_LO_OFF			1
#define IPV6_ECN_SHIFT			4

/* Where the IP header starts: set by bbrctl before loading, from the
 * device's type (ECT1_L3_OFF_*, include/ect1.h). */
const volatile __u32 l3_off = ECT1_L3_OFF_ETHER;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ect1_stats);
} ect1_stats SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u32 zero = 0;
	struct ect1_stats *s = bpf_map_lookup_elem(&ect1_stats, &zero);

	if (!s)
		return;
	if (which == ECT1_REWRITTEN)
		s->rewritten++;
	else if (which == ECT1_CLEARED)
		s->cleared++;
	else
		s->left_alone++;
}

/*
 * The codepoint the packet's socket wants in place of ECT(0): IP_ECN_ECT_1
 * (an L4S connection), IP_ECN_NOT_ECT (an ECN CC's connection without
 * ECN), or -1: leave the packet alone.
 */
static __always_inline int wanted_ecn(struct __sk_buff *skb)
{
	struct bpf_sock *bsk = skb->sk;
	struct tcp_sock *tp;
	u32 ca_flags;
	u8 mode;

	if (!bsk)
		return -1;
	tp = bpf_skc_to_tcp_sock(bsk);
	if (!tp)
		return -1;	/* not TCP, or a request or TIME_WAIT socket */
	ca_flags = tp->inet_conn.icsk_ca_ops->flags;
	mode = tp->ecn_flags & (TCP_ECN_MODE_RFC3168 | TCP_ECN_MODE_ACCECN);
	if (mode == TCP_ECN_MODE_ACCECN)
		return ca_flags & TCP_CONG_ECT_1_NEGOTIATION ? IP_ECN_ECT_1 : -1;
	if (mode == 0 && (ca_flags & TCP_CONG_NEEDS_ECN) &&
	    bsk->state != BPF_TCP_SYN_SENT && bsk->state != BPF_TCP_SYN_RECV)
		return IP_ECN_NOT_ECT;
	return -1;
}

static __always_inline void count_change(int to)
{
	count(to == IP_ECN_ECT_1 ? ECT1_REWRITTEN : ECT1_CLEARED);
}

static __always_inline void ect0_to_v4(struct __sk_buff *skb, int to)
{
	__u32 off = l3_off;
	__be16 old, new;
	__u8 *b = (__u8 *)&new;

	if (bpf_skb_load_bytes(skb, off, &old, sizeof(old)))
		return;
	new = old;
	if ((b[IPV4_TOS_OFF] & IP_ECN_MASK) != IP_ECN_ECT_0) {
		count(ECT1_LEFT_ALONE);
		return;
	}
	b[IPV4_TOS_OFF] = (b[IPV4_TOS_OFF] & ~IP_ECN_MASK) | to;
	if (bpf_l3_csum_replace(skb, off + IPV4_CSUM_OFF, old, new, sizeof(new)) ||
	    bpf_skb_store_bytes(skb, off, &new, sizeof(new), 0))
		return;
	count_change(to);
}

static __always_inline void ect0_to_v6(struct __sk_buff *skb, int to)
{
	__u32 off = l3_off + IPV6_TC_LO_OFF;
	__u8 b;

	if (bpf_skb_load_bytes(skb, off, &b, 1))
		return;
	if (((b >> IPV6_ECN_SHIFT) & IP_ECN_MASK) != IP_ECN_ECT_0) {
		count(ECT1_LEFT_ALONE);
		return;
	}
	b = (b & ~(IP_ECN_MASK << IPV6_ECN_SHIFT)) | (to << IPV6_ECN_SHIFT);
	if (bpf_skb_store_bytes(skb, off, &b, 1, 0))
		return;
	count_change(to);
}

SEC("tcx/egress")
int ect1_egress(struct __sk_buff *skb)
{
	int to = wanted_ecn(skb);

	if (to < 0)
		return TCX_NEXT;
	if (skb->protocol == bpf_htons(ETH_P_IPV4))
		ect0_to_v4(skb, to);
	else if (skb->protocol == bpf_htons(ETH_P_IPV6))
		ect0_to_v6(skb, to);
	return TCX_NEXT;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
