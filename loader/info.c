// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl list: what the kernel knows about a pinned congestion control:
 * its link and struct_ops map, the programs behind it, their load time,
 * and the number of sockets its state iterator reports.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"

static struct btf *vmlinux_btf(void)
{
	static struct btf *btf;
	static int tried;

	if (!tried) {
		tried = 1;
		btf = btf__load_vmlinux_btf();
		if (!btf) {
			btf = NULL;
			dbg("cannot load vmlinux BTF: %s", strerror(errno));
		}
	}
	return btf;
}

/* The struct `data` inside the struct_ops value type vt, and its offset
 * in the value; NULL if vt has none. */
static const struct btf_type *ops_data_type(const struct btf *btf,
					    const struct btf_type *vt,
					    size_t *data_off)
{
	const struct btf_member *m = btf_members(vt);
	const struct btf_type *dt;

	for (int i = 0; i < btf_vlen(vt); i++, m++) {
		const char *mname = btf__name_by_offset(btf, m->name_off);

		if (mname && strcmp(mname, "data") == 0) {
			*data_off = btf_member_bit_offset(vt, i) / 8;
			dt = btf__type_by_id(btf, btf__resolve_type(btf, m->type));
			return dt && btf_is_struct(dt) ? dt : NULL;
		}
	}
	return NULL;
}

/* The program ids in the function-pointer members of data type dt at
 * data_off of the map's value (size bytes), up to max: how many. */
static int ops_value_prog_ids(const struct btf *btf, const struct btf_type *dt,
			      size_t data_off, const char *value, size_t size,
			      uint32_t *ids, int max)
{
	const struct btf_member *m = btf_members(dt);
	int n = 0;

	for (int i = 0; i < btf_vlen(dt) && n < max; i++, m++) {
		const struct btf_type *mt, *pt;
		size_t off = data_off + btf_member_bit_offset(dt, i) / 8;
		uint64_t id;

		mt = btf__type_by_id(btf, btf__resolve_type(btf, m->type));
		if (!mt || !btf_is_ptr(mt))
			continue;
		pt = btf__type_by_id(btf, btf__resolve_type(btf, mt->type));
		if (!pt || !btf_is_func_proto(pt))
			continue;
		if (off + sizeof(id) > size)
			break;
		memcpy(&id, value + off, sizeof(id));
		if (id && id <= UINT32_MAX)
			ids[n++] = (uint32_t)id;
	}
	return n;
}

/*
 * A struct_ops map's value as userspace reads it is the kernel's
 * struct bpf_struct_ops_<type> { refcnt; state; <type> data; } with each
 * function-pointer member of data holding the id of its program. Walk
 * the value type in vmlinux BTF to find them.
 */
int struct_ops_prog_ids(uint32_t map_id, uint32_t *ids, int max)
{
	struct bpf_map_info mi;
	__u32 mi_len = sizeof(mi);
	const struct btf_type *vt, *dt;
	struct btf *btf;
	size_t data_off = 0;
	char *value = NULL;
	__u32 key = 0;
	int fd, ret;

	fd = bpf_map_get_fd_by_id(map_id);
	if (fd < 0)
		return -errno;
	memset(&mi, 0, sizeof(mi));
	if (bpf_map_get_info_by_fd(fd, &mi, &mi_len)) {
		ret = -errno;
		goto out;
	}
	ret = -ENOENT;
	btf = vmlinux_btf();
	if (mi.type != BPF_MAP_TYPE_STRUCT_OPS || !mi.btf_vmlinux_value_type_id || !btf)
		goto out;
	value = calloc(1, mi.value_size);
	if (!value) {
		ret = -ENOMEM;
		goto out;
	}
	if (bpf_map_lookup_elem(fd, &key, value)) {
		ret = -errno;
		goto out;
	}
	vt = btf__type_by_id(btf, mi.btf_vmlinux_value_type_id);
	dt = vt && btf_is_struct(vt) ? ops_data_type(btf, vt, &data_off) : NULL;
	if (dt)
		ret = ops_value_prog_ids(btf, dt, data_off, value, mi.value_size,
					 ids, max);
out:
	free(value);
	close(fd);
	return ret;
}

/*
 * Ids of the maps the CC's struct_ops programs use (map_id: its struct_ops
 * map), up to PROG_MAP_IDS_MAX per program and max in all; a map used by
 * several programs appears once per program. The number found, or -errno
 * from struct_ops_prog_ids() (-EPERM without CAP_SYS_ADMIN).
 */
int struct_ops_map_ids(uint32_t map_id, uint32_t *ids, int max)
{
	uint32_t progs[STRUCT_OPS_PROGS_MAX];
	int np = struct_ops_prog_ids(map_id, progs, STRUCT_OPS_PROGS_MAX), n = 0;

	for (int i = 0; i < np && n < max; i++) {
		int k = prog_map_ids(progs[i], ids + n,
				     max - n < PROG_MAP_IDS_MAX ? max - n : PROG_MAP_IDS_MAX);

		if (k > 0)
			n += k;
	}
	return np < 0 ? np : n;
}

int prog_map_ids(uint32_t prog_id, uint32_t *ids, int max)
{
	struct bpf_prog_info pi;
	__u32 len = sizeof(pi);
	int pfd = bpf_prog_get_fd_by_id(prog_id), ret;

	if (pfd < 0)
		return -errno;
	memset(&pi, 0, sizeof(pi));
	pi.nr_map_ids = (uint32_t)max;
	pi.map_ids = (uintptr_t)ids;
	ret = bpf_prog_get_info_by_fd(pfd, &pi, &len) ? -errno :
	      (int)(pi.nr_map_ids < (uint32_t)max ? pi.nr_map_ids : (uint32_t)max);
	close(pfd);
	return ret;
}

int map_fd_by_suffix(const uint32_t *ids, int n, const char *suffix,
		     uint32_t value_size, struct bpf_map_info *info)
{
	size_t sl = strlen(suffix);

	for (int i = 0; i < n; i++) {
		struct bpf_map_info mi;
		__u32 len = sizeof(mi);
		int mfd = bpf_map_get_fd_by_id(ids[i]);
		size_t nl;

		if (mfd < 0)
			continue;
		memset(&mi, 0, sizeof(mi));
		if (!bpf_map_get_info_by_fd(mfd, &mi, &len) &&
		    (nl = strlen(mi.name)) >= sl && !strcmp(mi.name + nl - sl, suffix) &&
		    (!value_size || mi.value_size == value_size)) {
			if (info)
				*info = mi;
			return mfd;
		}
		close(mfd);
	}
	return -1;
}

int prog_map_fd(uint32_t prog_id, const char *suffix, uint32_t value_size)
{
	uint32_t ids[PROG_MAP_IDS_MAX];
	int n = prog_map_ids(prog_id, ids, PROG_MAP_IDS_MAX);

	return map_fd_by_suffix(ids, n, suffix, value_size, NULL);
}

static int prog_id_of_link_pin(int dfd, const char *name)
{
	struct bpf_link_info li;
	__u32 len = sizeof(li);
	int fd, id = 0;

	fd = pt_obj_get(dfd, name);
	if (fd < 0)
		return 0;
	memset(&li, 0, sizeof(li));
	if (bpf_link_get_info_by_fd(fd, &li, &len) == 0)
		id = (int)li.prog_id;
	close(fd);
	return id;
}

/* The CC's link (p: its pin path, for the note): its id and struct_ops
 * map's, or a note why not. */
static void cc_info_link(int dfd, const char *p, struct cc_info *ci)
{
	struct bpf_link_info li;
	__u32 len = sizeof(li);
	int fd = pt_obj_get(dfd, PIN_LINK);

	if (fd < 0) {
		snprintf(ci->note, sizeof(ci->note), "cannot open %.200s: %s", p,
			 strerror(-fd));
		return;
	}
	ci->has_link = true;
	memset(&li, 0, sizeof(li));
	if (bpf_link_get_info_by_fd(fd, &li, &len) == 0) {
		ci->link_id = li.id;
		if (li.type == BPF_LINK_TYPE_STRUCT_OPS)
			ci->map_id = li.struct_ops.map_id;
	}
	close(fd);
}

/* One program of the load (the struct_ops map's first, or the iterator's)
 * and the time it was loaded. */
static void cc_info_load_time(int dfd, struct cc_info *ci)
{
	uint32_t ids[STRUCT_OPS_PROGS_MAX];
	struct bpf_prog_info pi;
	__u32 pi_len = sizeof(pi);
	int n, pfd;

	if (ci->map_id) {
		n = struct_ops_prog_ids(ci->map_id, ids, STRUCT_OPS_PROGS_MAX);
		if (n > 0)
			ci->prog_id = ids[0];
		else if (n < 0)
			snprintf(ci->note, sizeof(ci->note),
				 "cannot read struct_ops map %u: %s", ci->map_id,
				 strerror(-n));
	}
	/* Same object, same load: the iterator's program is as good a
	 * witness of the load time if the map could not be read. */
	if (!ci->prog_id && ci->has_iter)
		ci->prog_id = prog_id_of_link_pin(dfd, PIN_ITER);
	if (!ci->prog_id)
		return;
	pfd = bpf_prog_get_fd_by_id(ci->prog_id);
	if (pfd < 0)
		return;
	memset(&pi, 0, sizeof(pi));
	if (bpf_prog_get_info_by_fd(pfd, &pi, &pi_len) == 0)
		ci->load_time_boot_ns = pi.load_time;
	close(pfd);
}

/* Start ci for CC name and read its link pin (has_link, link_id, map_id,
 * or why not in note): the pin directory's fd, -ENOENT when there is none
 * (said in note), or another -errno. */
static int cc_info_open(const char *name, struct cc_info *ci)
{
	char dir[PATH_MAX], p[PATH_MAX];
	int dfd;

	memset(ci, 0, sizeof(*ci));
	snprintf(ci->name, sizeof(ci->name), "%s", name);
	ci->sockets = -1;
	ci->registered = -1;
	snprintf(dir, sizeof(dir), PIN_CC_FMT, name);
	if (path_join(p, sizeof(p), dir, PIN_LINK))
		return -ENAMETOOLONG;
	dfd = pt_dir(name, PT_QUIET);
	if (dfd == -ENOENT) {
		snprintf(ci->note, sizeof(ci->note), "cannot open %.200s: %s", p,
			 strerror(ENOENT));
		return dfd;
	}
	if (dfd >= 0)
		cc_info_link(dfd, p, ci);
	return dfd;
}

int cc_get_link(const char *name, struct cc_info *ci)
{
	int dfd = cc_info_open(name, ci);

	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0)
		return -1;
	close(dfd);
	return 0;
}

int cc_get_info(const char *name, struct cc_info *ci)
{
	int dfd = cc_info_open(name, ci);

	ci->registered = cc_available(name);
	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0)
		return -1;
	ci->has_iter = pt_exists(dfd, PIN_ITER);
	cc_info_load_time(dfd, ci);
	if (ci->has_iter) {
		void *buf = NULL;
		size_t blen = 0;

		if (read_state_iter(name, &buf, &blen, true) == 0)
			ci->sockets = count_state_recs(buf, blen);
		free(buf);
	}
	close(dfd);
	return 0;
}

/* ---- list: the command -------------------------------------------------------- */

static const char *state_word(const struct cc_info *ci)
{
	if (!ci->has_link)
		return "broken";	/* no usable link pin */
	if (!ci->map_id)
		return "detached";	/* the link exists, nothing behind it */
	if (ci->registered == 1)
		return "registered";
	return "stale";
}

/* One element of `list --json`. */
static json_t *cc_info_json(const struct cc_info *ci)
{
	json_t *e = json_object();
	char ts[64];

	js_set_str(e, "name", ci->name);
	js_set_str(e, "state", state_word(ci));
	js_set_bool(e, "registered", ci->registered == 1);
	js_set_u64(e, "link_id", ci->link_id);
	js_set_u64(e, "struct_ops_map_id", ci->map_id);
	js_set_u64(e, "prog_id", ci->prog_id);
	if (ci->load_time_boot_ns) {
		int64_t ns = boottime_ns_to_unix_ns(ci->load_time_boot_ns);

		format_unix_ns(ns, ts, sizeof(ts));
		js_set_str(e, "load_time", ts);
		js_set_i64(e, "load_time_unix_ns", ns);
	} else {
		js_set(e, "load_time", json_null());
		js_set(e, "load_time_unix_ns", json_null());
	}
	js_set(e, "sockets", ci->sockets >= 0 ? json_integer(ci->sockets) : json_null());
	js_set_bool(e, "state_iter", ci->has_iter);
	return e;
}

int cmd_list(const struct cmd_opts *o, char **args, int nargs)
{
	char **names = NULL;
	struct cc_info *infos = NULL;
	int n, i;

	(void)o;
	(void)args;

	if (nargs) {
		err("list: takes no arguments");
		return EXIT_USAGE;
	}
	if (check_privileges("list"))
		return EXIT_FAIL;
	warn_if_bpffs_hidden();
	n = list_pinned_names(&names);
	if (n < 0)
		return EXIT_FAIL;
	infos = calloc(n ? n : 1, sizeof(*infos));
	if (!infos) {
		free_names(names, n);
		err("out of memory");
		return EXIT_FAIL;
	}
	for (i = 0; i < n; i++)
		cc_get_info(names[i], &infos[i]);

	if (g_opts.json) {
		json_t *arr = json_array();

		for (i = 0; i < n; i++)
			json_array_append_new(arr, cc_info_json(&infos[i]));
		js_print(arr);
	} else if (n == 0) {
		printf("no congestion controls loaded by bbrctl (nothing under %s)\n",
		       PIN_ROOT);
	} else {
		printf("%-15s  %6s  %7s  %-24s  %7s  %s\n", "NAME", "MAP_ID",
		       "LINK_ID", "LOADED", "SOCKETS", "STATE");
		for (i = 0; i < n; i++) {
			const struct cc_info *ci = &infos[i];
			char ts[64] = "-", socks[24] = "-";

			if (ci->load_time_boot_ns)
				format_unix_ns(boottime_ns_to_unix_ns(ci->load_time_boot_ns),
					       ts, sizeof(ts));
			if (ci->sockets >= 0)
				snprintf(socks, sizeof(socks), "%ld", ci->sockets);
			printf("%-15s  %6u  %7u  %-24s  %7s  %s\n", ci->name,
			       ci->map_id, ci->link_id, ts, socks, state_word(ci));
			if (ci->note[0])
				dbg("%s: %s", ci->name, ci->note);
		}
	}
	free(infos);
	free_names(names, n);
	return EXIT_OK;
}
