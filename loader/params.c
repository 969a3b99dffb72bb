// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl set / params: the runtime parameters of a CC built on
 * bpf/lib/tcp_cc.h, for its three scopes through one codec.
 *
 * The CC keeps BBR_PARAM_SLOTS parameter sets (struct bbr_params, the rows
 * of include/bbr_params.h): the array bbr_param_sets in its .data.params,
 * which bbrctl rewrites through an mmap (single u32 stores: a program never
 * reads a torn value). Which set a socket runs with:
 *   --socket COOKIE  a set of its own, pinned in its state by the iterator
 *                    bpf/param_sock.bpf.c (it finds the socket by the
 *                    cookie); bbrctl records it in param_cgrp under
 *                    BBR_PARAM_KEY_SOCKET | cookie so that it stays taken;
 *   --cgroup PATH    its cgroup's: param_cgrp[cgroup id];
 *   --default        set 0, for every socket without one of the above.
 * A scope's first write takes a free set, fills it with a copy of the set
 * the scope used until then and applies the pairs; --reset gives the scope
 * back to the next one down (socket, cgroup, default), or the default set
 * its built-in values.
 *
 * When a change takes effect (docs/bbrctl.md, "set"): a new socket picks
 * its set at init; a live socket re-picks its cgroup's at every round start
 * (one with its own set keeps it, and --socket writes that at once) and
 * reads the values of its set as it uses them; bbr_swift copies its three
 * keys from the set at the first ACK of every round.
 *
 * Every pair is parsed and range-checked before anything is written: a bad
 * one exits 2 with nothing changed. Writers serialise on a lock file, and
 * each write first drops the entries of removed cgroups and closed sockets,
 * so param_cgrp does not fill up with stale ids.
 */
#define _GNU_SOURCE	/* nftw() with FTW_PHYS */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "core/types.h"
#include "bbr3_state.h"
#include "bbr_params.h"
#include "bbr_swift.h"
#include "bbrctl.h"
#include "num.h"
#include "param_sock.skel.h"	/* generated: build/skel (Makefile) */

#define PARAMS_SEC		".data.params"
#define SETS_VAR		"bbr_param_sets"	/* lib/tcp_cc.h */
#define GROUPS_VAR		"bbr_param_groups"
#define BBR_L4S_OBJECT		"bbr3_l4s"	/* the object with the L4S mode's keys */
#define PARAM_CGRP_MAP		"param_cgrp"

/* ---- the keys ------------------------------------------------------------------ */

/* One key: a row of the parameter table (or another name for one). */
struct key_spec {
	const char *name;
	size_t off;		/* in struct bbr_params */
	u32 min, max, def;
	unsigned int group;	/* BBR_PARAM_GROUP_* */
	const char *unit, *what;
	const char *alias_of;	/* the row this name also sets */
};

#define CORE_KEY(n, lo, hi, d, unit, what)	\
	{ #n, offsetof(struct bbr_params, n), lo, hi, d, BBR_PARAM_GROUP_CORE, unit, what, NULL },
#define L4S_KEY(n, lo, hi, d, unit, what)	\
	{ #n, offsetof(struct bbr_params, n), lo, hi, d, BBR_PARAM_GROUP_L4S, unit, what, NULL },
#define SWIFT_KEY(n, lo, hi, d, unit, what)	\
	{ #n, offsetof(struct bbr_params, n), lo, hi, d, BBR_PARAM_GROUP_SWIFT, unit, what, NULL },
static const struct key_spec keys[] = {
	BBR_PARAM_TABLE_CORE_HEAD(CORE_KEY)
	BBR_PARAM_TABLE_L4S(L4S_KEY)
	BBR_PARAM_TABLE_CORE_TAIL(CORE_KEY)
	BBR_PARAM_TABLE_SWIFT(SWIFT_KEY)
	/* keep_ecn under the name of its bit in struct swift_cfg, which set
	 * has taken since before keep_ecn was a row */
	{ "flags", offsetof(struct bbr_params, keep_ecn), 0, 1, 0,
	  BBR_PARAM_GROUP_SWIFT, "0/1", "the same as keep_ecn", "keep_ecn" },
};
#undef CORE_KEY
#undef L4S_KEY
#undef SWIFT_KEY
#define N_KEYS	(sizeof(keys) / sizeof(keys[0]))

/* The profiles (include/bbr_params.h): `profile=NAME` sets every key a
 * profile names, to that profile's value or else to the key's default. */
static const char *const profile_names[] = BBR_PROFILE_NAMES;
#define N_PROFILES	(sizeof(profile_names) / sizeof(profile_names[0]))

#define PROFILE_ROW(prof, key, val)	\
	{ BBR_PROFILE_##prof, offsetof(struct bbr_params, key), val },
static const struct { u32 profile; size_t off; u32 value; } profile_rows[] = {
	BBR_PROFILE_TABLE(PROFILE_ROW)
};
#undef PROFILE_ROW
#define N_PROFILE_ROWS	(sizeof(profile_rows) / sizeof(profile_rows[0]))

static const struct key_spec *key_at(size_t off)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (keys[i].off == off && !keys[i].alias_of)
			return &keys[i];
	return NULL;
}

/* The value key `off` has under profile p. */
static u32 profile_value(u32 p, size_t off)
{
	const struct key_spec *k = key_at(off);
	u32 v = k ? k->def : 0;

	for (size_t i = 0; i < N_PROFILE_ROWS; i++)
		if (profile_rows[i].off == off && profile_rows[i].profile == p)
			v = profile_rows[i].value;
	return v;
}

/* Whether profile row i is the first that names its key. */
static bool first_row_of_key(size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (profile_rows[j].off == profile_rows[i].off)
			return false;
	return true;
}

static const char *group_name(unsigned int group)
{
	return group == BBR_PARAM_GROUP_SWIFT ? "bbr_swift" :
	       group == BBR_PARAM_GROUP_L4S ? "L4S mode" : "BBRv3 core";
}

/* The object that reads a group's keys, for the message that refuses one. */
static const char *group_object(unsigned int group)
{
	return group == BBR_PARAM_GROUP_SWIFT ? "bbr_swift" :
	       group == BBR_PARAM_GROUP_L4S ? BBR_L4S_OBJECT : "bbr3";
}

/* The heading of a group's keys in `bbrctl help keys`. */
static const char *group_heading(unsigned int group)
{
	switch (group) {
	case BBR_PARAM_GROUP_CORE:
		return "Keys of bbr3, bbr3_l4s and bbr_swift (KEY MIN..MAX default: unit: meaning):";
	case BBR_PARAM_GROUP_L4S:
		return "bbr3_l4s only (the L4S mode; bbr3 and bbr_swift refuse them):";
	default:
		return "bbr_swift only:";
	}
}

static const unsigned int groups_in_order[] = {
	BBR_PARAM_GROUP_CORE, BBR_PARAM_GROUP_L4S, BBR_PARAM_GROUP_SWIFT,
};
#define N_GROUPS	(sizeof(groups_in_order) / sizeof(groups_in_order[0]))

static void print_group_keys(FILE *f, unsigned int group)
{
	fprintf(f, "%s\n", group_heading(group));
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct key_spec *k = &keys[i];

		if (k->group != group)
			continue;
		if (k->alias_of)
			fprintf(f, "  %s: %s\n", k->name, k->what);
		else
			fprintf(f, "  %s %u..%u default %u: %s: %s\n", k->name, k->min,
				k->max, k->def, k->unit, k->what);
	}
}

void print_param_keys(FILE *f)
{
	fprintf(f, "profile=NAME (bbr3, bbr3_l4s and bbr_swift; l4s: bbr3_l4s only) sets "
		"these keys at once:\n");
	for (size_t p = 0; p < N_PROFILES; p++) {
		fprintf(f, "  %s:", profile_names[p]);
		for (size_t i = 0; i < N_PROFILE_ROWS; i++)
			if (first_row_of_key(i))
				fprintf(f, " %s=%u", key_at(profile_rows[i].off)->name,
					profile_value((u32)p, profile_rows[i].off));
		fputc('\n', f);
	}

	for (size_t g = 0; g < N_GROUPS; g++)
		print_group_keys(f, groups_in_order[g]);
}

/* ---- the parameter sets of a loaded CC ------------------------------------------- */

struct cc_params {
	const char *cc;
	int data_fd;		/* .data.params; -1 until found */
	u32 data_id;
	bool unmappable;	/* found, but not BPF_F_MMAPABLE */
	u32 value_size, sets_off, groups_off;
	u32 groups;		/* bbr_param_groups */
	void *mem;		/* mmap of the .data.params value */
	size_t mem_len;
	int cgrp_fd;		/* param_cgrp; -1 until found */
	struct param_sock *walker;	/* bpf/param_sock.bpf.c, on first use */
	struct bpf_link *walk_link;
};

static volatile u32 *param_field(struct cc_params *c, int slot, size_t off)
{
	return (volatile u32 *)((char *)c->mem + c->sets_off +
				(size_t)slot * sizeof(struct bbr_params) + off);
}

/* Set `to` = the struct bbr_params at from (another set, or the defaults). */
static void copy_set(struct cc_params *c, int to, const volatile void *from)
{
	for (size_t i = 0; i < sizeof(struct bbr_params); i += sizeof(u32))
		*param_field(c, to, i) = *(const volatile u32 *)((const volatile char *)from + i);
}

static void cc_params_close(struct cc_params *c)
{
	bpf_link__destroy(c->walk_link);
	param_sock__destroy(c->walker);
	if (c->mem)
		munmap(c->mem, c->mem_len);
	if (c->data_fd >= 0)
		close(c->data_fd);
	if (c->cgrp_fd >= 0)
		close(c->cgrp_fd);
}

/* Does struct st lay out every key where this bbrctl writes it? */
static bool layout_matches(const struct btf *btf, const struct btf_type *st)
{
	if (!st || !btf_is_struct(st) || st->size != sizeof(struct bbr_params))
		return false;
	for (size_t k = 0; k < N_KEYS; k++) {
		const struct btf_member *m = btf_members(st);
		bool found = keys[k].alias_of != NULL;

		for (int i = 0; i < btf_vlen(st) && !found; i++, m++)
			found = !strcmp(btf__name_by_offset(btf, m->name_off), keys[k].name) &&
				btf_member_bit_offset(st, i) == keys[k].off * 8;
		if (!found)
			return false;
	}
	return true;
}

/* Is this map the .data.params of lib/tcp_cc.h, with both variables laid
 * out as this bbrctl expects? Notes their offsets in c. */
static bool is_params_map(const struct bpf_map_info *mi, struct cc_params *c)
{
	const struct btf_var_secinfo *vsi;
	const struct btf_type *sec;
	struct btf *btf;
	bool sets = false, groups = false;

	if (mi->type != BPF_MAP_TYPE_ARRAY || !mi->btf_id || !mi->btf_value_type_id)
		return false;
	btf = btf__load_from_kernel_by_id(mi->btf_id);
	if (!btf)
		return false;
	sec = btf__type_by_id(btf, mi->btf_value_type_id);
	if (!sec || !btf_is_datasec(sec) ||
	    strcmp(btf__name_by_offset(btf, sec->name_off), PARAMS_SEC))
		goto out;
	vsi = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++, vsi++) {
		const struct btf_type *v = btf__type_by_id(btf, vsi->type);
		const char *name = btf__name_by_offset(btf, v->name_off);
		const struct btf_type *t = btf__type_by_id(btf, btf__resolve_type(btf, v->type));

		if (vsi->offset + vsi->size > mi->value_size)
			continue;
		if (!strcmp(name, SETS_VAR) && t && btf_is_array(t) &&
		    btf_array(t)->nelems == BBR_PARAM_SLOTS &&
		    vsi->size == BBR_PARAM_SLOTS * sizeof(struct bbr_params) &&
		    layout_matches(btf, btf__type_by_id(btf, btf__resolve_type(btf,
							btf_array(t)->type)))) {
			c->sets_off = vsi->offset;
			sets = true;
		} else if (!strcmp(name, GROUPS_VAR) && vsi->size == sizeof(u32)) {
			c->groups_off = vsi->offset;
			groups = true;
		}
	}
out:
	btf__free(btf);
	return sets && groups;
}

static void consider_map(u32 id, struct cc_params *c)
{
	struct bpf_map_info mi;
	__u32 len = sizeof(mi);
	int fd = bpf_map_get_fd_by_id(id);

	if (fd < 0)
		return;
	memset(&mi, 0, sizeof(mi));
	if (!bpf_map_get_info_by_fd(fd, &mi, &len)) {
		if (c->cgrp_fd < 0 && mi.type == BPF_MAP_TYPE_HASH &&
		    !strcmp(mi.name, PARAM_CGRP_MAP) && mi.key_size == sizeof(u64) &&
		    mi.value_size == sizeof(u32)) {
			c->cgrp_fd = fd;
			return;
		}
		if (c->data_fd < 0 && is_params_map(&mi, c)) {
			c->data_id = id;
			c->value_size = mi.value_size;
			if (mi.map_flags & BPF_F_MMAPABLE) {
				c->data_fd = fd;
				return;
			}
			c->unmappable = true;
		}
	}
	close(fd);
}

/* Find and map the parameter sets of loaded CC cc; -1 with a message. */
static int cc_params_open(const char *cc, struct cc_params *c)
{
	uint32_t maps[STRUCT_OPS_PROGS_MAX * PROG_MAP_IDS_MAX];
	struct cc_info ci;
	int n;

	memset(c, 0, sizeof(*c));
	c->cc = cc;
	c->data_fd = c->cgrp_fd = -1;
	cc_get_link(cc, &ci);
	if (!ci.has_link) {
		err("%s is not loaded by bbrctl (%s)", cc, ci.note[0] ? ci.note : "no link pin");
		return -1;
	}
	if (!ci.map_id) {
		err("%s: the pinned link is detached (stale pins; run `bbrctl unload %s`)",
		    cc, cc);
		return -1;
	}
	n = struct_ops_map_ids(ci.map_id, maps, (int)(sizeof(maps) / sizeof(maps[0])));
	if (n == -EPERM || n == -EACCES) {
		err("%s: reading its programs by id needs CAP_SYS_ADMIN", cc);
		return -1;
	}
	for (int k = 0; k < n; k++)
		consider_map(maps[k], c);
	if (c->data_fd < 0 || c->cgrp_fd < 0) {
		err("%s: no parameter sets: its programs use no %s array in %s with "
		    "%s and a %s map laid out as this bbrctl expects%s (not built on "
		    "lib/tcp_cc.h, or an older build: reload it)", cc, SETS_VAR,
		    PARAMS_SEC, GROUPS_VAR, PARAM_CGRP_MAP,
		    c->unmappable ? "; or the map is not mmapable" : "");
		cc_params_close(c);
		return -1;
	}
	c->mem_len = (c->value_size + (size_t)getpagesize() - 1) &
		     ~((size_t)getpagesize() - 1);
	c->mem = mmap(NULL, c->mem_len, PROT_READ | PROT_WRITE, MAP_SHARED, c->data_fd, 0);
	if (c->mem == MAP_FAILED) {
		c->mem = NULL;
		err("%s: mapping its parameter map %u: %s", cc, c->data_id, strerror(errno));
		cc_params_close(c);
		return -1;
	}
	c->groups = *(volatile u32 *)((char *)c->mem + c->groups_off);
	return 0;
}

/* ---- the socket walker (bpf/param_sock.bpf.c) ------------------------------------ */

/* The socket storage of cc: the map its pinned state iterator reads. */
static int cc_stor_map_fd(const char *cc)
{
	struct bpf_link_info li;
	struct bpf_prog_info pi;
	struct bpf_map_info mi;
	__u32 len = sizeof(li), ids[16];
	char path[PATH_MAX];
	int dfd, lfd, pfd = -1, fd = -1;

	snprintf(path, sizeof(path), PIN_CC_FMT "/" PIN_ITER, cc);
	dfd = pt_dir(cc, PT_QUIET);	/* missing: said below */
	if (dfd < 0 && dfd != -ENOENT)
		return -1;
	lfd = dfd < 0 ? dfd : pt_obj_get(dfd, PIN_ITER);
	if (dfd >= 0)
		close(dfd);
	if (lfd < 0) {
		err("set: %s: cannot open its state iterator %s: %s", cc, path,
		    strerror(-lfd));
		return -1;
	}
	memset(&li, 0, sizeof(li));
	memset(&pi, 0, sizeof(pi));
	pi.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	pi.map_ids = (uintptr_t)ids;
	if (bpf_link_get_info_by_fd(lfd, &li, &len) ||
	    (pfd = bpf_prog_get_fd_by_id(li.prog_id)) < 0 ||
	    (len = sizeof(pi), bpf_prog_get_info_by_fd(pfd, &pi, &len))) {
		err("set: %s: %s: %s", cc, path, strerror(errno));
		pi.nr_map_ids = 0;
	}
	for (u32 i = 0; i < pi.nr_map_ids && i < sizeof(ids) / sizeof(ids[0]) && fd < 0; i++) {
		fd = bpf_map_get_fd_by_id(ids[i]);
		memset(&mi, 0, sizeof(mi));
		len = sizeof(mi);
		if (fd >= 0 && (bpf_map_get_info_by_fd(fd, &mi, &len) ||
				mi.type != BPF_MAP_TYPE_SK_STORAGE)) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0 && pi.nr_map_ids)
		err("set: %s: its state iterator uses no socket storage", cc);
	if (pfd >= 0)
		close(pfd);
	close(lfd);
	return fd;
}

/* param_sock over the CC's own maps, loaded and attached. */
static int walker_load(struct cc_params *c)
{
	int stor;

	if (c->walk_link)
		return 0;
	stor = cc_stor_map_fd(c->cc);
	if (stor < 0)
		return -1;
	c->walker = param_sock__open();
	if (!c->walker ||
	    bpf_map__reuse_fd(c->walker->maps.cc_sk_stor, stor) ||
	    bpf_map__reuse_fd(c->walker->maps.param_cgrp, c->cgrp_fd) ||
	    param_sock__load(c->walker) ||
	    !(c->walk_link = bpf_program__attach_iter(c->walker->progs.param_sock, NULL))) {
		err("set: %s: loading the socket walker (param_sock) failed: %s", c->cc,
		    strerror(errno));
		close(stor);
		return -1;
	}
	close(stor);
	return 0;
}

/* One walk of every network namespace doing op (PARAM_SOCK_*) to the socket
 * with cookie; its result in *res, what PARAM_SOCK_LIST wrote in *out. */
static int walk(struct cc_params *c, u32 op, u64 cookie, u32 slot,
		struct param_sock_result *res, void **out, size_t *outlen)
{
	void *buf;
	size_t len;
	int ret;

	if (walker_load(c))
		return -1;
	c->walker->bss->req = (struct param_sock_req){ .cookie = cookie, .op = op, .slot = slot };
	memset(&c->walker->bss->result, 0, sizeof(c->walker->bss->result));
	ret = iter_read_all(bpf_link__fd(c->walk_link), &buf, &len);
	if (ret) {
		err("set: walking the sockets of %s failed: %s", c->cc, strerror(-ret));
		return -1;
	}
	if (res)
		*res = c->walker->bss->result;	/* mapped: what the program wrote */
	if (out) {
		*out = buf;
		*outlen = len;
	} else {
		free(buf);
	}
	return 0;
}

/* ---- sets and who holds them ------------------------------------------------------ */

/* The set recorded under key (a cgroup id, or a socket's key), or -1. */
static int slot_of(struct cc_params *c, u64 key)
{
	u32 slot;

	if (bpf_map_lookup_elem(c->cgrp_fd, &key, &slot))
		return -1;
	return slot < BBR_PARAM_SLOTS ? (int)slot : -1;
}

/* Ids of the cgroups that exist now (nftw has no user pointer). */
static u64 *live_ids;
static size_t n_live, cap_live;

static int note_cgroup(const char *path, const struct stat *st, int type,
		       struct FTW *ftw)
{
	u64 *p;

	(void)path;
	(void)ftw;
	if (type != FTW_D)
		return 0;
	if (n_live == cap_live) {
		cap_live = cap_live ? 2 * cap_live : 256;
		p = realloc(live_ids, cap_live * sizeof(*p));
		if (!p)
			return -1;
		live_ids = p;
	}
	live_ids[n_live++] = st->st_ino;
	return 0;
}

static bool among(const u64 *v, size_t n, u64 x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/*
 * Drop the entries of cgroups that no longer exist (a lab run removes its
 * cgroup without --reset) and of sockets that have closed: their sets are
 * free again. What cannot be checked (no cgroup2 hierarchy, a walk that
 * fails) is kept.
 */
static void tidy(struct cc_params *c)
{
	u64 key, next, root_id, *cookies = NULL;
	void *prev = NULL, *buf = NULL;
	bool cgroups = false, sockets = false, cg_ok = false, sk_ok = false;
	char root[PATH_MAX];
	size_t len = 0, n_ck = 0;

	while (!bpf_map_get_next_key(c->cgrp_fd, prev, &next)) {
		if (next & BBR_PARAM_KEY_SOCKET)
			sockets = true;
		else
			cgroups = true;
		key = next;
		prev = &key;
	}
	n_live = 0;
	if (cgroups)
		cg_ok = !cgroup_resolve(".", root, sizeof(root), &root_id) &&
			!nftw(root, note_cgroup, 16, FTW_PHYS);
	if (sockets && !walk(c, PARAM_SOCK_LIST, 0, 0, NULL, &buf, &len)) {
		const struct param_sock_pinned *r = buf;

		n_ck = len / sizeof(*r);
		cookies = calloc(n_ck + 1, sizeof(*cookies));
		sk_ok = cookies != NULL;
		for (size_t i = 0; sk_ok && i < n_ck; i++)
			cookies[i] = r[i].cookie | BBR_PARAM_KEY_SOCKET;
	}
	for (prev = NULL; !bpf_map_get_next_key(c->cgrp_fd, prev, &next);) {
		bool sock = next & BBR_PARAM_KEY_SOCKET;
		bool dead = sock ? sk_ok && !among(cookies, n_ck, next) :
				   cg_ok && !among(live_ids, n_live, next);

		if (dead && !bpf_map_delete_elem(c->cgrp_fd, &next)) {
			dbg("dropped the parameter set of %s %llu", sock ? "closed socket" :
			    "removed cgroup", (unsigned long long)(next & ~BBR_PARAM_KEY_SOCKET));
			continue;	/* again from the same prev */
		}
		key = next;
		prev = &key;
	}
	free(buf);
	free(cookies);
}

/* A set nobody holds (1.., set 0 is the default's), or -1. */
static int free_slot(struct cc_params *c)
{
	bool used[BBR_PARAM_SLOTS] = { true };
	u64 key, next;
	void *prev = NULL;
	int slot;

	while (!bpf_map_get_next_key(c->cgrp_fd, prev, &next)) {
		slot = slot_of(c, next);
		if (slot >= 0)
			used[slot] = true;
		key = next;
		prev = &key;
	}
	for (int i = 1; i < BBR_PARAM_SLOTS; i++)
		if (!used[i])
			return i;
	return -1;
}

/* ---- scopes ------------------------------------------------------------------------ */

enum scope_kind { SC_DEFAULT, SC_CGROUP, SC_SOCKET };

struct scope {
	enum scope_kind kind;
	const char *path;	/* SC_CGROUP: the resolved path */
	u64 cgroup_id;		/* SC_CGROUP, SC_SOCKET (0: none) */
	u64 cookie;		/* SC_SOCKET */
	u64 key;		/* its param_cgrp key (not SC_DEFAULT) */
};

static const char *const scope_names[] = { "default", "cgroup", "socket" };

/* The set scope sc uses now, and whose it is (a scope_names[] entry). */
static int scope_slot(struct cc_params *c, const struct scope *sc, const char **from)
{
	int slot;

	if (sc->kind == SC_SOCKET && (slot = slot_of(c, sc->key)) >= 0) {
		*from = scope_names[SC_SOCKET];
		return slot;
	}
	if (sc->kind != SC_DEFAULT && sc->cgroup_id &&
	    (slot = slot_of(c, sc->cgroup_id)) >= 0) {
		*from = scope_names[SC_CGROUP];
		return slot;
	}
	*from = scope_names[SC_DEFAULT];
	return BBR_PARAM_SLOT_DEFAULT;
}

/* Find the socket of --socket: its cgroup; -1 with a message if none. */
static int find_socket(struct cc_params *c, struct scope *sc)
{
	struct param_sock_result res;

	if (walk(c, PARAM_SOCK_SHOW, sc->cookie, 0, &res, NULL, NULL))
		return -1;
	if (!res.matched) {
		err("set: no %s socket with cookie %llu (`bbrctl stat %s` lists them)",
		    c->cc, (unsigned long long)sc->cookie, c->cc);
		return -1;
	}
	sc->cgroup_id = res.cgroup_id;
	return 0;
}

/* ---- output ------------------------------------------------------------------------ */

/* The name of the profile set `slot` matches exactly, or "custom". */
static const char *profile_of(struct cc_params *c, int slot)
{
	for (size_t p = 0; p < N_PROFILES; p++) {
		bool all = true;

		for (size_t i = 0; i < N_PROFILE_ROWS && all; i++)
			all = *param_field(c, slot, profile_rows[i].off) ==
			      profile_value((u32)p, profile_rows[i].off);
		if (all)
			return profile_names[p];
	}
	return "custom";
}

/* A set's value of a key, by its member of struct bbr_params. */
#define SLOT_VAL(c, slot, key)	\
	(*param_field(c, slot, offsetof(struct bbr_params, key)))

/* bbr_swift's keys of the set, as the object "swift" of `--json`. */
static json_t *show_swift_json(struct cc_params *c, int slot, const char *from)
{
	u32 keep_ecn = SLOT_VAL(c, slot, keep_ecn), raw = SLOT_VAL(c, slot, raw_samples);
	json_t *sw = json_object();

	js_set_u64(sw, "target_rtt_us", SLOT_VAL(c, slot, target_rtt_us));
	js_set_u64(sw, "stale_us", SLOT_VAL(c, slot, stale_us));
	js_set_u64(sw, "keep_ecn", keep_ecn);
	js_set_u64(sw, "raw_samples", raw);
	js_set_u64(sw, "host_target_us", SLOT_VAL(c, slot, host_target_us));
	js_set_u64(sw, "flags", (keep_ecn ? SWIFT_CFG_F_KEEP_ECN : 0) |
			       (raw ? SWIFT_CFG_F_RAW_SAMPLES : 0));
	js_set_str(sw, "from", from);
	return sw;
}

static void show_json(struct cc_params *c, const struct scope *sc, int slot,
		      const char *from)
{
	json_t *j = json_object(), *pj = json_object();

	js_set_str(j, "cc", c->cc);
	js_set_str(j, "scope", scope_names[sc->kind]);
	if (sc->kind == SC_CGROUP)
		js_set_str(j, "cgroup", sc->path);
	if (sc->kind == SC_SOCKET)
		js_set_u64(j, "cookie", sc->cookie);
	if (sc->kind != SC_DEFAULT)
		js_set_u64(j, "cgroup_id", sc->cgroup_id);
	js_set_u64(j, "slot", slot);
	js_set_str(j, "params_from", from);
	js_set_u64(j, "data_map_id", c->data_id);
	if (c->groups & BBR_PARAM_GROUP_CORE)
		js_set_str(j, "profile", profile_of(c, slot));
	for (size_t i = 0; i < N_KEYS; i++)
		if (keys[i].group & c->groups & (BBR_PARAM_GROUP_CORE | BBR_PARAM_GROUP_L4S))
			js_set_u64(pj, keys[i].name, *param_field(c, slot, keys[i].off));
	js_set(j, "params", pj);
	if (c->groups & BBR_PARAM_GROUP_SWIFT)
		js_set(j, "swift", show_swift_json(c, slot, from));
	js_print(j);
}

static void show(struct cc_params *c, const struct scope *sc)
{
	static const char *const whose[] = { "the default", "its cgroup's", "its own" };
	const char *from;
	int slot = scope_slot(c, sc, &from);
	const char *set_of = whose[!strcmp(from, scope_names[sc->kind]) ? 2 :
				   !strcmp(from, scope_names[SC_CGROUP])];

	if (g_opts.json) {
		show_json(c, sc, slot, from);
		return;
	}
	if (sc->kind == SC_DEFAULT)
		printf("%s, default parameter set 0\n", c->cc);
	else if (sc->kind == SC_CGROUP)
		printf("%s, cgroup %s (id %llu): parameter set %d (%s)\n", c->cc, sc->path,
		       (unsigned long long)sc->cgroup_id, slot, set_of);
	else
		printf("%s, socket %llu (cgroup id %llu): parameter set %d (%s)\n", c->cc,
		       (unsigned long long)sc->cookie, (unsigned long long)sc->cgroup_id,
		       slot, set_of);
	if (c->groups & BBR_PARAM_GROUP_CORE)
		printf("%-24s %s\n", "profile", profile_of(c, slot));
	for (size_t i = 0; i < N_KEYS; i++)
		if ((keys[i].group & c->groups) && !keys[i].alias_of)
			printf("%-24s %u\n", keys[i].name, *param_field(c, slot, keys[i].off));
}

/* ---- writing ----------------------------------------------------------------------- */

struct pair {
	const struct key_spec *key;
	u32 value;
};

/* "profile=NAME": a pair for every key a profile names, appended at
 * p[*n]; EXIT_USAGE with a message if NAME is not a profile. */
static int parse_profile(const struct cc_params *c, const char *name,
			 struct pair *p, int *n)
{
	if (!(c->groups & BBR_PARAM_GROUP_CORE)) {
		err("set: %s has no BBRv3 core: profile is for bbr3 and bbr_swift", c->cc);
		return EXIT_USAGE;
	}
	for (size_t q = 0; q < N_PROFILES; q++) {
		if (strcmp(name, profile_names[q]))
			continue;
		if (q == BBR_PROFILE_l4s && !(c->groups & BBR_PARAM_GROUP_L4S)) {
			err("set: %s has no L4S mode: profile l4s is the object %s "
			    "(`bbrctl load %s`)", c->cc, BBR_L4S_OBJECT, BBR_L4S_OBJECT);
			return EXIT_USAGE;
		}
		for (size_t i = 0; i < N_PROFILE_ROWS; i++) {
			if (!first_row_of_key(i))
				continue;
			p[*n].key = key_at(profile_rows[i].off);
			p[*n].value = profile_value((u32)q, profile_rows[i].off);
			(*n)++;
		}
		return 0;
	}
	{
		char list[128] = "";

		for (size_t q = 0; q < N_PROFILES; q++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list),
				 "%s%s", q ? ", " : "", profile_names[q]);
		err("set: profile=%s: no such profile (there are %s; `bbrctl help "
		    "keys` lists what each sets)", name, list);
	}
	return EXIT_USAGE;
}

/* Parse "key=value" for c; EXIT_USAGE with a message if it is not valid. */
static int parse_pair(const struct cc_params *c, const char *arg, struct pair *p)
{
	const char *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : 0;
	char why[160];
	uint64_t v;

	if (!eq || eq == arg) {
		err("set: \"%s\" is not key=value", arg);
		return EXIT_USAGE;
	}
	p->key = NULL;
	for (size_t i = 0; i < N_KEYS && !p->key; i++)
		if (strlen(keys[i].name) == len && !strncmp(keys[i].name, arg, len))
			p->key = &keys[i];
	if (!p->key) {
		err("set: unknown key \"%.*s\" for %s", (int)len, arg, c->cc);
		fprintf(stderr, "bbrctl: keys:");
		for (size_t i = 0; i < N_KEYS; i++)
			if (keys[i].group & c->groups)
				fprintf(stderr, " %s", keys[i].name);
		fputc('\n', stderr);
		return EXIT_USAGE;
	}
	if (!(p->key->group & c->groups)) {
		err("set: %s is a %s key; %s does not read it (it is %s's: `bbrctl load %s`)",
		    p->key->name, group_name(p->key->group), c->cc,
		    group_object(p->key->group), group_object(p->key->group));
		return EXIT_USAGE;
	}
	if (num_parse(eq + 1, p->key->min, p->key->max, NUM_HEX, &v, why, sizeof(why))) {
		err("set: %s=%s: %s (%s: %s)", p->key->name, eq + 1, why, p->key->unit,
		    p->key->what);
		return EXIT_USAGE;
	}
	p->value = (u32)v;
	return 0;
}

/* Write the pairs into the scope's own set: the one it has, or a free one
 * filled with a copy of the set it used so far, published after. */
static int write_pairs(struct cc_params *c, const struct scope *sc,
		       const struct pair *p, int n)
{
	struct param_sock_result res;
	const char *from;
	int base = scope_slot(c, sc, &from), slot = base;
	bool own = !strcmp(from, scope_names[sc->kind]);
	u32 s;

	if (!own) {
		slot = free_slot(c);
		if (slot < 0) {
			err("set: all %d parameter sets of %s are in use; `bbrctl set "
			    "--cgroup PATH %s --reset` (or --socket COOKIE) frees one",
			    BBR_PARAM_SLOTS - 1, c->cc, c->cc);
			return -1;
		}
		copy_set(c, slot, param_field(c, base, 0));
	}
	for (int i = 0; i < n; i++)
		*param_field(c, slot, p[i].key->off) = p[i].value;
	if (own)
		return 0;
	s = (u32)slot;
	if (bpf_map_update_elem(c->cgrp_fd, &sc->key, &s, BPF_ANY)) {
		err("set: %s: recording the set: %s", c->cc, strerror(errno));
		return -1;
	}
	if (sc->kind != SC_SOCKET)
		return 0;
	if (!walk(c, PARAM_SOCK_PIN, sc->cookie, s, &res, NULL, NULL) && res.matched)
		return 0;
	bpf_map_delete_elem(c->cgrp_fd, &sc->key);
	if (!res.matched)
		err("set: %s socket %llu closed meanwhile", c->cc,
		    (unsigned long long)sc->cookie);
	return -1;
}

static int reset(struct cc_params *c, const struct scope *sc)
{
	static const struct bbr_params def = BBR_PARAMS_DEFAULT;
	struct param_sock_result res;

	if (sc->kind == SC_DEFAULT) {
		copy_set(c, BBR_PARAM_SLOT_DEFAULT, &def);
		return 0;
	}
	if (sc->kind == SC_SOCKET &&
	    walk(c, PARAM_SOCK_UNPIN, sc->cookie, 0, &res, NULL, NULL))
		return -1;
	if (bpf_map_delete_elem(c->cgrp_fd, &sc->key) && errno != ENOENT) {
		err("set: %s: removing the %s's set: %s", c->cc, scope_names[sc->kind],
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- the commands -------------------------------------------------------------------- */

/* The command line of `set`/`params` checked before anything is opened:
 * the name, one scope, no pair with --reset, no key twice. */
static int set_check_args(const char *cmd, const struct cmd_opts *o, char **args,
			  int nargs, bool dflt)
{
	int npairs = nargs - 1;

	if (nargs < 1) {
		err("%s: name one congestion control", cmd);
		return EXIT_USAGE;
	}
	if (!valid_cc_name(args[0])) {
		err("%s: invalid congestion control name \"%s\"", cmd, args[0]);
		return EXIT_USAGE;
	}
	if (!dflt && !!o->cgroup + o->set_default + o->set_socket != 1) {
		err("%s: give exactly one of --cgroup PATH, --default and "
		    "--socket COOKIE", cmd);
		return EXIT_USAGE;
	}
	if (o->set_reset && npairs) {
		err("%s: --reset takes no key=value pairs", cmd);
		return EXIT_USAGE;
	}
	/* the last of two would win silently: refuse (a key after a profile
	 * overrides the profile's value, which is meant) */
	for (int i = 1; i <= npairs; i++)
		for (int k = 1; k < i; k++) {
			size_t len = strcspn(args[i], "=");

			if (len == strcspn(args[k], "=") &&
			    !strncmp(args[i], args[k], len)) {
				err("%s: %.*s given twice (%s, %s)", cmd, (int)len,
				    args[i], args[k], args[i]);
				return EXIT_USAGE;
			}
		}
	return 0;
}

/* The set the options name (path: room for a cgroup's path): the
 * default, a cgroup's or a socket's. */
static int set_scope(const struct cmd_opts *o, struct scope *sc, char *path,
		     size_t size)
{
	*sc = (struct scope){ .kind = SC_DEFAULT };
	if (o->cgroup) {
		if (cgroup_resolve(o->cgroup, path, size, &sc->cgroup_id))
			return -1;
		sc->kind = SC_CGROUP;
		sc->path = path;
		sc->key = sc->cgroup_id;
	} else if (o->set_socket) {
		sc->kind = SC_SOCKET;
		sc->cookie = o->socket_cookie;
		sc->key = BBR_PARAM_KEY_SOCKET | o->socket_cookie;
	}
	return 0;
}

/* The key=value and profile=NAME arguments, in argument order (keys after
 * a profile override it), into pairs: their number, or -1 after a message. */
static int set_parse_pairs(struct cc_params *c, char **args, int npairs,
			   struct pair *pairs)
{
	int n = 0;

	for (int i = 0; i < npairs; i++)
		if (!strncmp(args[i], "profile=", 8) ?
		    parse_profile(c, args[i] + 8, pairs, &n) :
		    parse_pair(c, args[i], &pairs[n++]))
			return -1;
	return n;
}

/* `set` and `params`: args are NAME [key=value...]. */
static int set_common(const char *cmd, const struct cmd_opts *o, char **args,
		      int nargs, bool dflt)
{
	char path[PATH_MAX];
	struct scope sc;
	struct cc_params c;
	struct pair *pairs = NULL;
	int ret, npairs = nargs - 1, n;

	ret = set_check_args(cmd, o, args, nargs, dflt);
	if (ret)
		return ret;
	if (check_privileges(cmd) || set_scope(o, &sc, path, sizeof(path)))
		return EXIT_FAIL;
	if (cc_params_open(args[0], &c))
		return EXIT_FAIL;
	/* a profile=NAME argument stands for N_PROFILE_ROWS pairs at most */
	pairs = calloc((size_t)npairs * N_PROFILE_ROWS + 1, sizeof(*pairs));
	if (!pairs) {
		err("out of memory");
		ret = EXIT_FAIL;
		goto out;
	}
	n = set_parse_pairs(&c, args + 1, npairs, pairs);
	ret = EXIT_USAGE;
	if (n < 0)
		goto out;	/* nothing written */
	ret = EXIT_FAIL;
	if (npairs || o->set_reset)
		tidy(&c);	/* under bbrctl_lock(), as every change */
	if (sc.kind == SC_SOCKET && find_socket(&c, &sc))
		goto out;
	if (o->set_reset ? reset(&c, &sc) : n ? write_pairs(&c, &sc, pairs, n) : 0)
		goto out;
	show(&c, &sc);
	ret = EXIT_OK;
out:
	free(pairs);
	cc_params_close(&c);
	return ret;
}

int cmd_set(const struct cmd_opts *o, char **args, int nargs)
{
	return set_common("set", o, args, nargs, false);
}

/* `params NAME [key=value...]`: the default set, as `set --default`. */
int cmd_params(const struct cmd_opts *o, char **args, int nargs)
{
	return set_common("params", o, args, nargs, true);
}
