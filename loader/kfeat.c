// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl: kernel features read from BTF (see kfeat.h).
 */
#include <string.h>
#include <bpf/btf.h>

#include "kfeat.h"

#define VMLINUX_BTF_PATH	"/sys/kernel/btf/vmlinux"

int btf_member_offset(const struct btf *btf, const char *type,
		      const char *member)
{
	const struct btf_member *m;
	const struct btf_type *t;
	int id, i;

	id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
	if (id <= 0)
		return -1;
	t = btf__type_by_id(btf, id);
	m = btf_members(t);
	for (i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(btf, m->name_off);

		if (n && strcmp(n, member) == 0)
			return (int)(btf_member_bit_offset(t, i) / 8);
	}
	return -1;
}

bool btf_struct_has_member(const struct btf *btf, const char *type,
			   const char *member)
{
	return btf_member_offset(btf, type, member) >= 0;
}

enum cc_build cc_build_for(const struct btf *vmlinux)
{
	return btf_struct_has_member(vmlinux, "tcp_congestion_ops",
				     "cwnd_event_tx_start") ?
	       CC_BUILD_TX_START : CC_BUILD_BASE;
}

enum cc_build cc_build_running(void)
{
	struct btf *btf = btf__parse(VMLINUX_BTF_PATH, NULL);
	enum cc_build b;

	if (!btf)
		return CC_BUILD_BASE;
	b = cc_build_for(btf);
	btf__free(btf);
	return b;
}

const char *cc_build_name(enum cc_build b)
{
	return b == CC_BUILD_TX_START ? "cwnd_event_tx_start" : "cwnd_event";
}

bool kernel_has_accecn(void)
{
	struct btf *btf = btf__parse(VMLINUX_BTF_PATH, NULL);
	bool yes;

	if (!btf)
		return false;
	yes = btf_struct_has_member(btf, "tcp_sock", "received_ce");
	btf__free(btf);
	return yes;
}
