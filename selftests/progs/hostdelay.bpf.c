// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * hostdelay: where a host's share of a TCP round trip goes, from kernel
 * tracepoints (BTF-enabled, tp_btf), for docs/bbr_swift.md's decomposition
 * of Network_RTT. Four stages, each a log2 histogram in microseconds:
 *
 *   HD_TX_DATA, HD_TX_ACK  TCP's departure time of a segment (its EDT,
 *                          skb->tstamp, CLOCK_MONOTONIC) to the device's
 *                          xmit (net_dev_start_xmit): pacing-timer
 *                          lateness, TSQ, qdisc; data and pure ACKs
 *   HD_DEV_QUEUE           the device's xmit to the skb being freed
 *                          (consume_skb): for TUN, until the emulator
 *                          reads it; for a NIC, until TX completion
 *   HD_RX_DATA, HD_RX_ACK  the device handing the skb to the stack
 *                          (netif_receive_skb, netif_rx) to TCP processing
 *                          it (tcp_probe, at the start of
 *                          tcp_rcv_established): softirq, socket backlog
 *   HD_FWD_DATA, HD_FWD_ACK
 *                          the device handing the skb to the stack to
 *                          another device's xmit, for a forwarded skb
 *                          (a router namespace): backlog, forwarding, and
 *                          the qdisc's queue plus its release lateness
 *
 * Driven by selftests/tools/hostdelay. Every namespace is counted.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "hostdelay.h"

char LICENSE[] SEC("license") = "GPL";

/* skb address -> time, between two tracepoints of one skb; LRU so that
 * skbs freed on another path age out. */
#define HD_INFLIGHT_SKBS	65536

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HD_STAGES);
	__type(key, __u32);
	__type(value, struct hd_hist);
} hd_hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, HD_INFLIGHT_SKBS);
	__type(key, __u64);
	__type(value, __u64);
} hd_xmit SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, HD_INFLIGHT_SKBS);
	__type(key, __u64);
	__type(value, __u64);
} hd_rx SEC(".maps");

/* Larger than any TCP header with options: a longer skb carries data. */
#define HD_HDR_MAX_BYTES	120
/* A departure time more than this in the past is not an EDT. */
#define HD_EDT_MAX_AGE_NS	1000000000ull
/* A receive time older than this at xmit is an skb freed on some path we
 * do not trace, its address reused: not a forwarded one. */
#define HD_FWD_MAX_AGE_NS	100000000ull

static void hd_add(__u32 stage, __u64 ns)
{
	struct hd_hist *h = bpf_map_lookup_elem(&hd_hist, &stage);
	__u64 us = ns / 1000;
	__u32 b = 0;

	if (!h)
		return;
	while (b < HD_BUCKETS - 1 && (1ull << b) <= us)
		b++;
	__sync_fetch_and_add(&h->count, 1);
	__sync_fetch_and_add(&h->sum_us, us);
	if (b < HD_BUCKETS)
		__sync_fetch_and_add(&h->bucket[b], 1);
}

SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(hd_xmit_start, struct sk_buff *skb, struct net_device *dev)
{
	__u64 now = bpf_ktime_get_ns(), key = (__u64)skb, edt = skb->tstamp;
	__u64 *rx = bpf_map_lookup_elem(&hd_rx, &key);
	bool data = skb->len > HD_HDR_MAX_BYTES;

	bpf_map_update_elem(&hd_xmit, &key, &now, BPF_ANY);
	if (rx) {
		/* received on one device, sent on another: forwarded */
		if (*rx <= now && now - *rx < HD_FWD_MAX_AGE_NS)
			hd_add(data ? HD_FWD_DATA : HD_FWD_ACK, now - *rx);
		bpf_map_delete_elem(&hd_rx, &key);
		return 0;
	}
	if (edt && edt <= now && now - edt < HD_EDT_MAX_AGE_NS)
		hd_add(data ? HD_TX_DATA : HD_TX_ACK, now - edt);
	return 0;
}

SEC("tp_btf/consume_skb")
int BPF_PROG(hd_consume, struct sk_buff *skb)
{
	__u64 key = (__u64)skb, *t = bpf_map_lookup_elem(&hd_xmit, &key);

	if (t) {
		hd_add(HD_DEV_QUEUE, bpf_ktime_get_ns() - *t);
		bpf_map_delete_elem(&hd_xmit, &key);
	}
	return 0;
}

static int hd_rx_start(struct sk_buff *skb)
{
	__u64 now = bpf_ktime_get_ns(), key = (__u64)skb;

	bpf_map_update_elem(&hd_rx, &key, &now, BPF_ANY);
	return 0;
}

SEC("tp_btf/netif_receive_skb")
int BPF_PROG(hd_netif_receive, struct sk_buff *skb)
{
	return hd_rx_start(skb);
}

SEC("tp_btf/netif_rx")
int BPF_PROG(hd_netif_rx, struct sk_buff *skb)
{
	return hd_rx_start(skb);
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(hd_tcp_rcv, struct sock *sk, struct sk_buff *skb)
{
	__u64 key = (__u64)skb, *t = bpf_map_lookup_elem(&hd_rx, &key);

	if (t) {
		hd_add(skb->len > HD_HDR_MAX_BYTES ? HD_RX_DATA : HD_RX_ACK,
		       bpf_ktime_get_ns() - *t);
		bpf_map_delete_elem(&hd_rx, &key);
	}
	return 0;
}
