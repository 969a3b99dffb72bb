// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * sk_stor_entries: which TCP sockets of a network namespace hold an entry
 * in a given socket storage map, and which CC each of them runs; for leak
 * checks (selftests/tools/sk_stor_entries loads it and hands it the map).
 *
 * Userspace cannot walk an sk_storage map: it has no get_next_key, so
 * `bpftool map dump` prints [] whatever the map holds. The map's own
 * iterator (iter/bpf_sk_storage_map) would walk every entry, but not every
 * kernel lets it load (EPERM on the reference machine's 6.18, as for
 * iter/bpf_map_elem). A TCP socket iterator can ask each socket instead,
 * as bbrctl's param_sock does: the program never reads the value, so one
 * build fits every map.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char _license[] SEC("license") = "Dual BSD/GPL";

#define CA_NAME_BYTES	16	/* TCP_CA_NAME_MAX */

struct sk_stor_entry {
	__u64 sock_cookie;		/* SO_COOKIE of the socket */
	__u64 netns_cookie;		/* SO_NETNS_COOKIE of its namespace */
	char ca_name[CA_NAME_BYTES];	/* the CC it runs now */
};

/* Replaced by the map to look in (bpf_map__reuse_fd) before loading. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} stor SEC(".maps");

SEC("iter/tcp")
int sk_stor_entries(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct sk_stor_entry e = {};
	const struct tcp_congestion_ops *ca;
	struct tcp_sock *tp;

	tp = skc ? bpf_skc_to_tcp_sock(skc) : NULL;
	if (!tp || !bpf_sk_storage_get(&stor, tp, NULL, 0))
		return 0;
	e.sock_cookie = bpf_get_socket_cookie(tp);
	e.netns_cookie = BPF_CORE_READ(tp, inet_conn.icsk_inet.sk.__sk_common.skc_net.net,
				       net_cookie);
	ca = BPF_CORE_READ(tp, inet_conn.icsk_ca_ops);
	if (ca)
		bpf_probe_read_kernel_str(e.ca_name, sizeof(e.ca_name), ca->name);
	bpf_seq_write(ctx->meta->seq, &e, sizeof(e));
	return 0;
}
