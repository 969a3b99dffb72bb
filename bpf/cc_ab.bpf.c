// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cc_ab: a cgroup sock_ops program that splits the new TCP connections of
 * one cgroup across several congestion controls ("arms"), and records what
 * each finished connection did, for `bbrctl ab report` and the arm-labelled
 * series of `bbrctl metrics` (docs/ab-testing.md).
 *
 * The arm of a connection is a hash of its 4-tuple (with a per-split salt)
 * into 100 buckets, the buckets given to arms by their weights in percent
 * (ab_cfg). The connection is given its arm's CC once, when it is created:
 *  - TCP_CONNECT_CB: active opens, before the SYN is built (its source port
 *    is chosen by then), so the CC also governs the SYN's ECN negotiation;
 *  - PASSIVE_ESTABLISHED_CB: accepted connections, the moment they exist
 *    as full sockets (they start with their listener's CC and switch
 *    before they have sent data).
 * Nothing changes a connection's CC afterwards: a weight change in ab_cfg
 * is read by new connections only, and every connection keeps its arm.
 *
 * The arm is kept in socket storage with the time of establishment. The
 * STATE_CB callback (enabled per connection) writes one struct ab_conn
 * into the ring ab_conns, and adds to the arm's counters, at the first of:
 *  - FIN_WAIT2: our FIN is acknowledged, so every byte sent is; this is
 *    the end of a transfer whose sender closes first;
 *  - CLOSE: the end of a connection closed by the peer first (LAST_ACK),
 *    reset, or aborted.
 * Its duration runs from establishment to that moment, so goodput is
 * bytes_acked / duration for a connection that sends and then closes; a
 * connection held open idle afterwards reads lower, which is why the
 * report compares transfers above a size.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "ab.h"

#define SOL_TCP_LEVEL		6	/* IPPROTO_TCP */
#define TCP_CONGESTION_OPT	13	/* include/uapi/linux/tcp.h */
#define AF_INET6_FAMILY		10
#define NSEC_PER_USEC		1000

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ab_cfg);
} ab_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, AB_ARMS_MAX);
	__type(key, __u32);
	__type(value, struct ab_stats);
} ab_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, AB_RING_SLOTS);
	__type(key, __u32);
	__type(value, struct ab_conn);
} ab_conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ab_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ab_sk);
} ab_sk_stor SEC(".maps");

/* splitmix64's finalizer: every input bit moves every output bit, so
 * neighbouring ports land in unrelated buckets. */
static __always_inline __u64 mix64(__u64 x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* The connection's bucket, 0..AB_WEIGHT_TOTAL-1, from its 4-tuple. */
static __always_inline __u32 tuple_bucket(const struct bpf_sock_ops *skops, __u64 salt)
{
	__u64 h = salt;

	if (skops->family == AF_INET6_FAMILY) {
		h = mix64(h ^ skops->local_ip6[0] ^ ((__u64)skops->local_ip6[1] << 32));
		h = mix64(h ^ skops->local_ip6[2] ^ ((__u64)skops->local_ip6[3] << 32));
		h = mix64(h ^ skops->remote_ip6[0] ^ ((__u64)skops->remote_ip6[1] << 32));
		h = mix64(h ^ skops->remote_ip6[2] ^ ((__u64)skops->remote_ip6[3] << 32));
	} else {
		h = mix64(h ^ skops->local_ip4 ^ ((__u64)skops->remote_ip4 << 32));
	}
	h = mix64(h ^ skops->local_port ^ ((__u64)skops->remote_port << 16));
	return (__u32)(h % AB_WEIGHT_TOTAL);
}

static __always_inline struct ab_stats *arm_stats(__u32 arm)
{
	return bpf_map_lookup_elem(&ab_stats, &arm);
}

/* Give the new connection its arm's CC and remember the arm. */
static __always_inline void split(struct bpf_sock_ops *skops, bool established)
{
	char name[AB_NAME_LEN];
	struct ab_stats *st;
	struct ab_cfg *cfg;
	struct bpf_sock *bsk = skops->sk;
	struct ab_sk *sk;
	__u32 key = 0, bucket, arm = 0;

	cfg = bpf_map_lookup_elem(&ab_cfg, &key);
	if (!cfg || !cfg->narms || !bsk)
		return;
	bucket = tuple_bucket(skops, cfg->salt);
	for (__u32 i = 0; i < AB_ARMS_MAX; i++) {
		if (i >= cfg->narms)
			break;
		arm = i;
		if (bucket < cfg->cum_pct[i])
			break;
	}
	arm &= AB_ARMS_MAX - 1;
	__builtin_memcpy(name, cfg->name[arm], sizeof(name));
	st = arm_stats(arm);
	if (bpf_setsockopt(skops, SOL_TCP_LEVEL, TCP_CONGESTION_OPT, name, sizeof(name))) {
		if (st)
			__sync_fetch_and_add(&st->set_failed, 1);
		return;
	}
	sk = bpf_sk_storage_get(&ab_sk_stor, bsk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
	if (!sk)
		return;
	sk->arm = arm;
	sk->generation = (__u16)cfg->generation;
	sk->start_ns = established ? bpf_ktime_get_ns() : 0;
	if (st)
		__sync_fetch_and_add(&st->opened, 1);
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
				  BPF_SOCK_OPS_STATE_CB_FLAG);
}

/* An active open's handshake finished: its transfer starts now. */
static __always_inline void established(struct bpf_sock_ops *skops)
{
	struct bpf_sock *bsk = skops->sk;
	struct ab_sk *sk;

	if (!bsk)
		return;
	sk = bpf_sk_storage_get(&ab_sk_stor, bsk, NULL, 0);
	if (sk && !sk->start_ns)
		sk->start_ns = bpf_ktime_get_ns();
}

/* The connection ended: one record in the ring, the arm's counters. */
static __always_inline void finished(struct bpf_sock_ops *skops)
{
	__u32 key = 0, slot, srtt_us;
	struct ab_stats *st;
	struct ab_conn *c;
	struct ab_sk *sk;
	__u64 *head, idx, dur_us;
	struct bpf_sock *bsk = skops->sk;

	if (!bsk)
		return;
	sk = bpf_sk_storage_get(&ab_sk_stor, bsk, NULL, 0);
	if (!sk || sk->recorded || !sk->start_ns)
		return;
	sk->recorded = 1;
	dur_us = (bpf_ktime_get_ns() - sk->start_ns) / NSEC_PER_USEC;
	srtt_us = skops->srtt_us >> 3;		/* tp->srtt_us is 8 x srtt */
	st = arm_stats(sk->arm & (AB_ARMS_MAX - 1));
	if (st) {
		__sync_fetch_and_add(&st->closed, 1);
		__sync_fetch_and_add(&st->bytes_acked, skops->bytes_acked);
		__sync_fetch_and_add(&st->data_segs_out, skops->data_segs_out);
		__sync_fetch_and_add(&st->total_retrans, skops->total_retrans);
		__sync_fetch_and_add(&st->srtt_sum_us, srtt_us);
		__sync_fetch_and_add(&st->duration_sum_us, dur_us);
	}
	head = bpf_map_lookup_elem(&ab_ring, &key);
	if (!head)
		return;
	idx = __sync_fetch_and_add(head, 1);
	slot = (__u32)idx & (AB_RING_SLOTS - 1);
	c = bpf_map_lookup_elem(&ab_conns, &slot);
	if (!c)
		return;
	c->bytes_acked = skops->bytes_acked;
	c->duration_us = dur_us;
	c->data_segs_out = skops->data_segs_out;
	c->total_retrans = skops->total_retrans;
	c->srtt_us = srtt_us;
	c->arm = sk->arm;
	c->generation = sk->generation;
	c->seq = idx + 1;
}

SEC("sockops")
int cc_ab(struct bpf_sock_ops *skops)
{
	switch (skops->op) {
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
		split(skops, false);
		break;
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		split(skops, true);
		break;
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		established(skops);
		break;
	case BPF_SOCK_OPS_STATE_CB:
		if (skops->args[1] == BPF_TCP_FIN_WAIT2 || skops->args[1] == BPF_TCP_CLOSE)
			finished(skops);
		break;
	default:
		break;
	}
	return 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
