// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cc_select: a cgroup sock_ops program that gives every TCP socket created
 * in one cgroup the congestion control named in cc_name.
 *
 * bbrctl loads one instance of this object per cgroup, writes the CC name
 * into .rodata before loading (so the verifier sees a constant string) and
 * attaches it to that cgroup with its own bpf_link, pinned under
 * PIN_CGROUP/<cgroup id>/ (include/bbr_pins.h). One attachment per cgroup
 * keeps "several cgroups with different CCs" trivially independent: detaching one
 * cgroup is removing one pin. The links are attached with BPF_F_ALLOW_MULTI
 * semantics (bpf_link attachments always are), so other sockops programs
 * (the ETS program, other tools) on the same cgroup keep running.
 *
 * Callbacks (enabled per socket with bpf_sock_ops_cb_flags_set() where
 * needed; the CC must be set before the SYN is built):
 *  - TCP_CONNECT_CB: active opens, before the SYN is built, so the chosen CC
 *    also governs the ECN negotiation of the SYN;
 *  - TCP_LISTEN_CB: listeners; their children inherit the CC through
 *    icsk_ca_setsockopt (tcp_ca_openreq_child);
 *  - PASSIVE_ESTABLISHED_CB: children of listeners created before the
 *    attachment (or outside the cgroup) still get the CC.
 * Counters in .bss tell bbrctl how many sockets were set and how many
 * setsockopt calls failed (and the last errno).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#define SOL_TCP_LEVEL		6	/* IPPROTO_TCP */
#define TCP_CONGESTION_OPT	13	/* include/uapi/linux/tcp.h */
#define CC_NAME_LEN		16	/* TCP_CA_NAME_MAX */

const volatile char cc_name[CC_NAME_LEN] = {};

__u64 set_ok = 0;
__u64 set_failed = 0;
__s64 last_error = 0;

static __always_inline void select_cc(struct bpf_sock_ops *skops)
{
	char name[CC_NAME_LEN];
	long ret;

	/* volatile reads: a plain memcpy would be folded to the
	 * compile-time initializer (all zero) of this .rodata constant */
	for (int i = 0; i < CC_NAME_LEN; i++)
		name[i] = cc_name[i];
	ret = bpf_setsockopt(skops, SOL_TCP_LEVEL, TCP_CONGESTION_OPT,
			     name, sizeof(name));
	if (ret) {
		__sync_fetch_and_add(&set_failed, 1);
		last_error = ret;
	} else {
		__sync_fetch_and_add(&set_ok, 1);
	}
}

SEC("sockops")
int cc_select(struct bpf_sock_ops *skops)
{
	switch (skops->op) {
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
	case BPF_SOCK_OPS_TCP_LISTEN_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		select_cc(skops);
		break;
	default:
		break;
	}
	return 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
