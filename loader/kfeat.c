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

/* libbpf's flavour separator: "___" between a non-'_' and a non-'_' */
static bool is_flavour_sep(const char *s)
{
	return s[0] != '_' && s[1] == '_' && s[2] == '_' && s[3] == '_' &&
	       s[4] != '_' && s[4] != '\0';
}

size_t btf_essential_name_len(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = n >= 5 ? n - 5 + 1 : 0; i-- > 0;)
		if (is_flavour_sep(name + i))
			return i + 1;
	return n;
}

bool btf_name_is_flavour_of(const char *name, const char *base)
{
	size_t n = btf_essential_name_len(name);

	return n == strlen(base) && strncmp(name, base, n) == 0;
}

const struct btf_type *btf_st_ops_map_struct(const struct btf *btf,
					     const char *map_name)
{
	static const char *const secs[] = { ".struct_ops.link", ".struct_ops" };

	for (size_t s = 0; s < sizeof(secs) / sizeof(secs[0]); s++) {
		int sec_id = btf__find_by_name_kind(btf, secs[s], BTF_KIND_DATASEC);
		const struct btf_var_secinfo *vsi;
		const struct btf_type *sec;

		if (sec_id < 0)
			continue;
		sec = btf__type_by_id(btf, sec_id);
		vsi = btf_var_secinfos(sec);
		for (int i = 0; i < btf_vlen(sec); i++, vsi++) {
			const struct btf_type *var = btf__type_by_id(btf, vsi->type);
			const char *vname;

			if (!var || !btf_is_var(var))
				continue;
			vname = btf__name_by_offset(btf, var->name_off);
			if (!vname || strcmp(vname, map_name) != 0)
				continue;
			return btf__type_by_id(btf, btf__resolve_type(btf, var->type));
		}
	}
	return NULL;
}

int cong_control_nargs(const struct btf *vmlinux)
{
	const struct btf_member *m;
	const struct btf_type *t;
	int id, i;

	id = btf__find_by_name_kind(vmlinux, "tcp_congestion_ops", BTF_KIND_STRUCT);
	if (id <= 0)
		return -1;
	t = btf__type_by_id(vmlinux, id);
	m = btf_members(t);
	for (i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(vmlinux, m->name_off);
		const struct btf_type *fp;

		if (!n || strcmp(n, "cong_control") != 0)
			continue;
		fp = btf__type_by_id(vmlinux, btf__resolve_type(vmlinux, m->type));
		if (fp && btf_is_ptr(fp))
			fp = btf__type_by_id(vmlinux, btf__resolve_type(vmlinux, fp->type));
		return fp && btf_is_func_proto(fp) ? btf_vlen(fp) : -1;
	}
	return -1;
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
