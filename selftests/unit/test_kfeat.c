// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl's choice of object build from the kernel's BTF (loader/kfeat.c):
 * a tcp_congestion_ops with cwnd_event_tx_start (Linux 7.1+) takes the
 * tx_start build, one without it the base build. The kernels are BTF made
 * here, with the members each generation has.
 */
#include <bpf/btf.h>

#include "unit.h"
#include "../../loader/kfeat.h"

/* A vmlinux-like BTF with struct tcp_congestion_ops of these members
 * (each a pointer to a function taking a struct sock *). */
static struct btf *fake_vmlinux(const char *const *members, int n)
{
	struct btf *btf = btf__new_empty();
	int sock, psock, proto, pfn, ops, i;

	if (!btf)
		return NULL;
	sock = btf__add_struct(btf, "sock", 8);
	psock = btf__add_ptr(btf, sock);
	proto = btf__add_func_proto(btf, 0);
	btf__add_func_param(btf, "sk", psock);
	pfn = btf__add_ptr(btf, proto);
	ops = btf__add_struct(btf, "tcp_congestion_ops", 8 * n);
	if (sock < 0 || psock < 0 || proto < 0 || pfn < 0 || ops < 0) {
		btf__free(btf);
		return NULL;
	}
	for (i = 0; i < n; i++)
		btf__add_field(btf, members[i], pfn, i * 64, 0);
	return btf;
}

TEST(kernel_with_tx_start_op_takes_that_build)
{
	static const char *const v618[] = { "ssthresh", "cong_avoid", "set_state",
		"cwnd_event", "in_ack_event", "pkts_acked", "min_tso_segs",
		"cong_control", "undo_cwnd", "sndbuf_expand", "init", "release" };
	static const char *const v71[] = { "ssthresh", "cong_avoid", "set_state",
		"cwnd_event", "cwnd_event_tx_start", "in_ack_event", "pkts_acked",
		"min_tso_segs", "cong_control", "undo_cwnd", "sndbuf_expand",
		"init", "release" };
	struct btf *old = fake_vmlinux(v618, 12), *new = fake_vmlinux(v71, 13);

	ASSERT_TRUE(old && new);
	ASSERT_EQ(cc_build_for(old), CC_BUILD_BASE);
	ASSERT_EQ(cc_build_for(new), CC_BUILD_TX_START);
	ASSERT_TRUE(btf_struct_has_member(new, "tcp_congestion_ops", "cwnd_event"));
	ASSERT_FALSE(btf_struct_has_member(new, "tcp_sock", "cwnd_event"));
	btf__free(old);
	btf__free(new);
}

/* The machine's own kernel: whatever it is, its answer agrees with its BTF. */
TEST(running_kernel_build_matches_its_btf)
{
	struct btf *btf = btf__parse("/sys/kernel/btf/vmlinux", NULL);

	if (!btf) {
		UNIT_REPORT("no readable /sys/kernel/btf/vmlinux: base build assumed");
		ASSERT_EQ(cc_build_running(), CC_BUILD_BASE);
		return;
	}
	UNIT_REPORT("running kernel takes the %s build", cc_build_name(cc_build_running()));
	ASSERT_EQ(cc_build_running(), cc_build_for(btf));
	btf__free(btf);
}
