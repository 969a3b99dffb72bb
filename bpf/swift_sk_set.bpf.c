// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * swift_sk_set: bbrctl's writer of one socket's bbr_swift configuration
 * (`bbrctl set --socket COOKIE bbr_swift target_rtt_us=N`).
 *
 * bbr_swift looks for a socket's target first in its sk_storage map
 * swift_sk_cfg (include/bbr_swift.h). Userspace can update an sk_storage
 * entry only through a file descriptor of the socket, which bbrctl does not
 * hold; so this TCP socket iterator walks the sockets of the reader's
 * network namespace (bbrctl reads it once per namespace), looks each up in
 * bbr_swift's own socket storage, and acts on the one socket whose
 * SO_COOKIE bbrctl wrote into .rodata:
 *
 *   SWIFT_SK_OP_SHOW    report its entry (if any) and what it uses now;
 *   SWIFT_SK_OP_WRITE   create or update its entry: the fields in
 *                       set_mask take the values in .rodata, the others
 *                       keep the entry's values or, for a new entry, the
 *                       values the socket uses now (from its cgroup or the
 *                       default), so one key changes one thing;
 *   SWIFT_SK_OP_DELETE  remove its entry: the socket goes back to its
 *                       cgroup's or the default configuration.
 *
 * The socket rereads its configuration every SWIFT_CFG_REFRESH_ROUNDS
 * round trips (include/bbr_swift.h). Results are in .bss for bbrctl.
 * bbrctl hands this object the loaded bbr_swift's own swift_sk_cfg and
 * bbr_swift_sk_stor (bpf_map__reuse_fd), so it never creates a map of its
 * own.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "core/types.h"
#include "bbr3_state.h"
#include "bbr_swift.h"
#include "lib/cgroup.h"

#define ENOENT_ERR	2
#define ENOMEM_ERR	12

const volatile __u64 cookie = 0;
const volatile __u32 op = SWIFT_SK_OP_SHOW;
const volatile __u32 set_mask = 0;		/* SWIFT_SK_SET_* */
const volatile __u32 new_target_rtt_us = 0;
const volatile __u32 new_stale_us = 0;
const volatile __u32 new_flags = 0;

struct swift_sk_set_result result = {};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct swift_cfg);
} swift_sk_cfg SEC(".maps");

/* bbr_swift's per-socket state (replaced by the loaded one's) */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bbr_swift_sk);
} bbr_swift_sk_stor SEC(".maps");

static __always_inline void merge(struct swift_cfg *c)
{
	if (set_mask & SWIFT_SK_SET_TARGET)
		c->target_rtt_us = new_target_rtt_us;
	if (set_mask & SWIFT_SK_SET_STALE)
		c->stale_us = new_stale_us;
	if (set_mask & SWIFT_SK_SET_FLAGS)
		c->flags = new_flags;
	c->_reserved = 0;
}

SEC("iter/tcp")
int swift_sk_set(struct bpf_iter__tcp *ctx)
{
	struct swift_cfg *c, base;
	struct bbr_swift_sk *v;
	struct sock_common *skc;
	struct tcp_sock *tp;
	struct sock *sk;

	skc = ctx->sk_common;
	if (!skc)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp)
		return 0;
	sk = (struct sock *)tp;
	if (bpf_get_socket_cookie(sk) != cookie)
		return 0;
	v = bpf_sk_storage_get(&bbr_swift_sk_stor, sk, NULL, 0);
	if (!v)
		return 0;
	result.matched++;
	result.cgroup_id = bbr_sk_cgroup_id(sk);
	result.in_force.target_rtt_us = v->delay.w.target_rtt_us;
	result.in_force.stale_us = v->delay.w.stale_us;
	result.in_force.flags = v->delay.w.flags;
	result.status = v->delay.w.status;
	c = bpf_sk_storage_get(&swift_sk_cfg, sk, NULL, 0);
	if (c) {
		result.had_entry = 1;
		result.old = *c;
		base = *c;
	} else {
		base = result.in_force;
	}
	if (op == SWIFT_SK_OP_DELETE) {
		result.err = bpf_sk_storage_delete(&swift_sk_cfg, sk);
		if (result.err == -ENOENT_ERR)
			result.err = 0;		/* nothing to remove */
		return 0;
	}
	if (op != SWIFT_SK_OP_WRITE)
		return 0;
	merge(&base);
	if (!c)
		c = bpf_sk_storage_get(&swift_sk_cfg, sk, NULL,
				       BPF_SK_STORAGE_GET_F_CREATE);
	if (!c) {
		result.err = -ENOMEM_ERR;
		return 0;
	}
	*c = base;
	result.written = base;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
