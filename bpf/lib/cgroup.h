/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * lib/cgroup.h: the cgroup v2 id of a socket, for the BPF objects that
 * look up per-cgroup configuration (lib/tcp_cc.h's parameter sets,
 * bbr_swift's target_RTT). BPF only; needs vmlinux.h and bpf_core_read.h.
 *
 * The id is the kernfs node id of the cgroup the socket was created in
 * (sk->sk_cgrp_data, which an accepted socket inherits from its listener):
 * the inode number of the cgroup directory, what bpf_sk_cgroup_id()
 * returns, and what bbrctl computes from a cgroup path with stat(2).
 * Struct_ops programs may not call bpf_sk_cgroup_id(), hence the CO-RE read:
 * plain loads through the socket's BTF pointer (the verifier makes them
 * fault-safe), not BPF_CORE_READ()'s three bpf_probe_read_kernel() calls,
 * which cost ~800 ns per call and ran at every round start (on a veth
 * pair, every other ACK: ~400 ns of bbr3_main's ~1 µs per ACK).
 * sk must be a pointer the verifier knows as a struct sock (a struct_ops
 * argument, bpf_skc_to_tcp_sock()'s result).
 */
#ifndef BBR_CGROUP_H
#define BBR_CGROUP_H

/* The socket's cgroup v2 id, 0 if it has none (no cgroup has id 0). */
static __always_inline u64 bbr_sk_cgroup_id(struct sock *sk)
{
	struct cgroup *cg = sk->sk_cgrp_data.cgroup;

	return cg && cg->kn ? cg->kn->id : 0;
}

#endif /* BBR_CGROUP_H */
