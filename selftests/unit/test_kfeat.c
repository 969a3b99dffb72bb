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

/*
 * libbpf's flavour convention: "X___Y" is type X to CO-RE and to struct_ops
 * registration. The 7.1+ builds declare their struct_ops variable as a
 * struct tcp_congestion_ops___tx_start, and bbrctl must take that for a
 * congestion control, not refuse it.
 */
TEST(flavoured_struct_name_is_the_base_struct)
{
	static const struct { const char *name; size_t len; bool cc; } cases[] = {
		{ "tcp_congestion_ops", 18, true },
		{ "tcp_congestion_ops___tx_start", 18, true },
		{ "tcp_congestion_ops___a___b", 22, false },	/* the last "___" */
		{ "tcp_congestion_ops___", 21, false },	/* no flavour after it */
		{ "tcp_congestion_ops____x", 23, false },	/* 4 underscores */
		{ "tcp_congestion_ops_x", 20, false },
		{ "tcp_congestion_opsx", 19, false },
		{ "tcp_congestion_op", 17, false },
		{ "bpf_dummy_ops___tx_start", 13, false },
		{ "a___b", 1, false },
		{ "", 0, false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		UNIT_REPORT("%-30s essential length %zu, a tcp_congestion_ops: %d",
			    cases[i].name, btf_essential_name_len(cases[i].name),
			    btf_name_is_flavour_of(cases[i].name, "tcp_congestion_ops"));
		ASSERT_EQ(btf_essential_name_len(cases[i].name), cases[i].len);
		ASSERT_EQ(btf_name_is_flavour_of(cases[i].name, "tcp_congestion_ops"),
			  cases[i].cc);
	}
}

/* An object's BTF as clang writes it for
 *	SEC(".struct_ops.link") struct tcp_congestion_ops___tx_start bbr3;
 * the map's struct is found through the DATASEC and passes the CC check. */
TEST(tx_start_struct_ops_map_is_a_congestion_control)
{
	struct btf *btf = btf__new_empty();
	const struct btf_type *st;
	const char *tname;
	int u64, ops, var, sec;

	ASSERT_TRUE(btf != NULL);
	u64 = btf__add_int(btf, "u64", 8, 0);
	ops = btf__add_struct(btf, "tcp_congestion_ops___tx_start", 8);
	ASSERT_GT(ops, 0);
	ASSERT_EQ(btf__add_field(btf, "flags", u64, 0, 0), 0);
	var = btf__add_var(btf, "bbr3", BTF_VAR_GLOBAL_ALLOCATED, ops);
	ASSERT_GT(var, 0);
	sec = btf__add_datasec(btf, ".struct_ops.link", 8);
	ASSERT_GT(sec, 0);
	ASSERT_EQ(btf__add_datasec_var_info(btf, var, 0, 8), 0);

	st = btf_st_ops_map_struct(btf, "bbr3");
	ASSERT_TRUE(st != NULL);
	ASSERT_EQ(btf__type_by_id(btf, ops), st);
	ASSERT_TRUE(btf_st_ops_map_struct(btf, "bbr_swift") == NULL);
	tname = btf__name_by_offset(btf, st->name_off);
	UNIT_REPORT("map bbr3 is a struct %s", tname);
	ASSERT_TRUE(btf_name_is_flavour_of(tname, "tcp_congestion_ops"));
	btf__free(btf);
}

/* cong_control's arity: 2 (sk, rs) before Linux 6.10, 4 (sk, ack, flag, rs)
 * since; bbrctl refuses a kernel without the 4-argument form. */
static struct btf *fake_cong_control(int nargs)
{
	struct btf *btf = btf__new_empty();
	int sock, psock, proto, pfn, i;

	sock = btf__add_struct(btf, "sock", 8);
	psock = btf__add_ptr(btf, sock);
	proto = btf__add_func_proto(btf, 0);
	for (i = 0; i < nargs; i++)
		btf__add_func_param(btf, i ? "x" : "sk", psock);
	pfn = btf__add_ptr(btf, proto);
	btf__add_struct(btf, "tcp_congestion_ops", 16);
	btf__add_field(btf, "ssthresh", pfn, 0, 0);
	btf__add_field(btf, "cong_control", pfn, 64, 0);
	return btf;
}

TEST(cong_control_arity_read_from_btf)
{
	struct btf *v61 = fake_cong_control(2), *v610 = fake_cong_control(4);
	struct btf *none = btf__new_empty();

	ASSERT_TRUE(v61 && v610 && none);
	UNIT_REPORT("cong_control: %d arguments (6.1-like), %d (6.10-like), %d (absent)",
		    cong_control_nargs(v61), cong_control_nargs(v610),
		    cong_control_nargs(none));
	ASSERT_EQ(cong_control_nargs(v61), 2);
	ASSERT_EQ(cong_control_nargs(v610), CONG_CONTROL_ARGS);
	ASSERT_EQ(cong_control_nargs(none), -1);
	btf__free(v61);
	btf__free(v610);
	btf__free(none);
}
