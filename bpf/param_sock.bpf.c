// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * param_sock: bbrctl's hand on one live socket's parameter set (`bbrctl
 * set --socket COOKIE NAME`), for any CC built on lib/tcp_cc.h.
 *
 * A socket runs with the set its state names (struct bbr3.param_slot):
 * picked from its cgroup at init and at every round start, unless the slot
 * carries BBR_PARAM_SLOT_PINNED (include/bbr_params.h). bbrctl cannot reach
 * a socket's storage from userspace without a file descriptor of it, so
 * this TCP socket iterator walks the sockets of the reader's network
 * namespace (bbrctl reads it once per namespace), looks each up in the
 * CC's socket storage and does req.op to the one with req.cookie:
 *
 *   PARAM_SOCK_SHOW   report its cgroup and param_slot;
 *   PARAM_SOCK_PIN    param_slot = req.slot | PINNED: the socket runs with
 *                     that set from its next ACK on, whatever its cgroup;
 *   PARAM_SOCK_UNPIN  param_slot = its cgroup's set (param_cgrp), or set 0:
 *                     as the glue would pick it;
 *   PARAM_SOCK_LIST   (every socket) write a struct param_sock_pinned for
 *                     each socket with a pinned set, for bbrctl to tell
 *                     which recorded sets still have their socket.
 *
 * The iterator holds the socket's lock while it runs (the CC's programs
 * hold it too), so a write never races the glue's re-pick. bbrctl hands
 * this object the loaded CC's own socket storage and param_cgrp
 * (bpf_map__reuse_fd) and writes req through the skeleton between walks.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "core/types.h"
#include "bbr3_state.h"
#include "lib/cgroup.h"

struct param_sock_req req = {};
struct param_sock_result result = {};

/* The CC's socket storage: its value starts with struct bbr3_sk. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bbr3_sk);
} cc_sk_stor SEC(".maps");

/* The CC's cgroup id -> set map. */
#include "lib/param_cgrp.h"

SEC("iter/tcp")
int param_sock(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct param_sock_pinned rec = {};
	struct tcp_sock *tp;
	struct bbr3_sk *v;
	struct sock *sk;
	u32 *slot;
	u64 id;

	tp = skc ? bpf_skc_to_tcp_sock(skc) : NULL;
	if (!tp)
		return 0;
	sk = (struct sock *)tp;
	v = bpf_sk_storage_get(&cc_sk_stor, sk, NULL, 0);
	if (!v)
		return 0;
	if (req.op == PARAM_SOCK_LIST) {
		if (v->st.param_slot & BBR_PARAM_SLOT_PINNED) {
			rec.cookie = bpf_get_socket_cookie(sk);
			rec.slot = v->st.param_slot & ~BBR_PARAM_SLOT_PINNED;
			bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
		}
		return 0;
	}
	if (bpf_get_socket_cookie(sk) != req.cookie)
		return 0;
	id = bbr_sk_cgroup_id(sk);
	result.matched++;
	result.cgroup_id = id;
	result.slot = v->st.param_slot;
	if (req.op == PARAM_SOCK_PIN) {
		v->st.param_slot = (req.slot & (BBR_PARAM_SLOTS - 1)) | BBR_PARAM_SLOT_PINNED;
	} else if (req.op == PARAM_SOCK_UNPIN) {
		slot = bpf_map_lookup_elem(&param_cgrp, &id);
		v->st.param_slot = slot && *slot < BBR_PARAM_SLOTS ? *slot :
			BBR_PARAM_SLOT_DEFAULT;
	}
	result.new_slot = v->st.param_slot;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
