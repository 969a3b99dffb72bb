// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl: runtime parameters per cgroup (`bbrctl set`) and of the default
 * set (`bbrctl params`).
 *
 * A CC built on lib/tcp_cc.h keeps BBR_PARAM_SLOTS parameter sets, the array
 * bbr_param_sets in its section .data.params, and a hash map param_cgrp
 * from cgroup v2 id to the index of a set. Set 0 is the default: sockets of
 * a cgroup without an entry use it. The glue picks a socket's set at init
 * and at every round start, so a change reaches live connections within a
 * round trip and the per-ACK cost is an array index (include/bbr3_state.h,
 * bpf/core/bbr3.h).
 *
 * `set --cgroup P NAME k=v...` finds P's set (or takes a free one, filled
 * with a copy of the default set first), writes the fields through an
 * mmap of the .data.params map (single u32 stores: the programs never see
 * a torn value), then publishes the cgroup -> set entry. bbr_swift's
 * target_RTT keys go to its pinned map swift_cgrp_cfg (include/bbr_swift.h)
 * under the same cgroup id (key 0 for --default). `set --socket COOKIE
 * bbr_swift k=v` writes one socket's entry of swift_sk_cfg through the
 * iterator bpf/swift_sk_set.bpf.o (only an fd of the socket could do it
 * from userspace).
 *
 * Every key=value is parsed and range-checked before anything is written:
 * a bad one exits 2 with nothing changed. Writers serialise on a lock file
 * so that two concurrent `set` calls cannot take the same free set.
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
#include <sys/stat.h>
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
#include "swift_sk_set.skel.h"	/* generated: build/skel (Makefile) */

#define PARAMS_SEC		".data.params"
#define PARAMS_VAR		"bbr_param_sets"	/* lib/tcp_cc.h */
#define PARAM_CGRP_MAP		"param_cgrp"
#define SET_LOCK_FILE		"/run/bbrctl-set.lock"

/* Upper bound of time-like values: an hour in µs fits u32 comfortably. */
#define MAX_TIME_US		(3600u * 1000000u)

/* One settable key: where it lives and its valid range. */
struct key_spec {
	const char *name;
	size_t off;		/* in struct bbr_params / struct swift_cfg */
	u32 min, max;
	const char *what;	/* unit and meaning, for messages and help */
};

/* Every key of the one parameter table (include/bbr_params.h). */
#define PK(n, lo, hi, def, unit, what)	\
	{ #n, offsetof(struct bbr_params, n), lo, hi, unit ": " what },
static const struct key_spec bbr_keys[] = { BBR_PARAM_TABLE(PK) };
#undef PK
#define N_BBR_KEYS	(sizeof(bbr_keys) / sizeof(bbr_keys[0]))

#define SWIFT_KEEP_ECN_OFF	((size_t)-1)	/* a flag bit, not a field */
static const struct key_spec swift_keys[] = {
	{ "target_rtt_us", offsetof(struct swift_cfg, target_rtt_us), 0,
	  MAX_TIME_US, "us, 0 = no target (plain BBRv3)" },
	{ "stale_us", offsetof(struct swift_cfg, stale_us), 0, MAX_TIME_US,
	  "us, 0 = the default 100000" },
	{ "keep_ecn", SWIFT_KEEP_ECN_OFF, 0, 1,
	  "0 or 1: keep BBRv3's ECN response with a target" },
	/* struct swift_cfg's own field, for callers that name the fields
	 * (the lab reads them from include/bbr_swift.h): SWIFT_CFG_F_* */
	{ "flags", offsetof(struct swift_cfg, flags), 0, SWIFT_CFG_F_KEEP_ECN,
	  "SWIFT_CFG_F_* bits: 1 = keep_ecn" },
};
#define N_SWIFT_KEYS	(sizeof(swift_keys) / sizeof(swift_keys[0]))

void print_param_keys(FILE *f)
{
	static const struct bbr_params def = BBR_PARAMS_DEFAULT;

	fprintf(f, "Keys of bbr3 and bbr_swift (KEY MIN..MAX default: unit: meaning):\n");
	for (size_t i = 0; i < N_BBR_KEYS; i++)
		fprintf(f, "  %s %u..%u default %u: %s\n", bbr_keys[i].name,
			bbr_keys[i].min, bbr_keys[i].max,
			*(const u32 *)((const char *)&def + bbr_keys[i].off),
			bbr_keys[i].what);
	fprintf(f, "bbr_swift only:\n");
	for (size_t i = 0; i < N_SWIFT_KEYS; i++)
		fprintf(f, "  %s %u..%u: %s\n", swift_keys[i].name,
			swift_keys[i].min, swift_keys[i].max, swift_keys[i].what);
}

/* The maps of one loaded CC. */
struct cc_maps {
	int params_fd;		/* .data.params, -1 if none */
	uint32_t params_id;
	uint32_t value_size;
	uint32_t var_off;	/* offset of bbr_param_sets in the value */
	int cgrp_fd;		/* param_cgrp, -1 if none */
	int swift_fd;		/* swift_cgrp_cfg, -1 if not a Swift CC */
	int sk_cfg_fd;		/* swift_sk_cfg, -1 if not a Swift CC */
	void *mem;		/* mmap of the .data.params value */
	size_t mem_len;
};

static void cc_maps_close(struct cc_maps *m)
{
	if (m->mem)
		munmap(m->mem, m->mem_len);
	if (m->params_fd >= 0)
		close(m->params_fd);
	if (m->cgrp_fd >= 0)
		close(m->cgrp_fd);
	if (m->swift_fd >= 0)
		close(m->swift_fd);
	if (m->sk_cfg_fd >= 0)
		close(m->sk_cfg_fd);
}

/* Is this array map the .data.params of `var`, an array of the sets? */
static bool is_params_map(int fd, const struct bpf_map_info *mi,
			  const char *var, struct cc_maps *m)
{
	const struct btf_type *sec, *t;
	const struct btf_var_secinfo *vsi;
	const char *sname;
	struct btf *btf;
	bool ok = false;

	if (mi->type != BPF_MAP_TYPE_ARRAY || !mi->btf_id || !mi->btf_value_type_id)
		return false;
	btf = btf__load_from_kernel_by_id(mi->btf_id);
	if (!btf)
		return false;
	sec = btf__type_by_id(btf, mi->btf_value_type_id);
	sname = sec ? btf__name_by_offset(btf, sec->name_off) : NULL;
	if (!sec || !btf_is_datasec(sec) || !sname || strcmp(sname, PARAMS_SEC))
		goto out;
	vsi = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++, vsi++) {
		const struct btf_type *v = btf__type_by_id(btf, vsi->type);
		const char *vname = v ? btf__name_by_offset(btf, v->name_off) : NULL;

		if (!vname || strcmp(vname, var))
			continue;
		t = btf__type_by_id(btf, btf__resolve_type(btf, v->type));
		/* The layout is the contract: refuse anything else. */
		if (!t || !btf_is_array(t) ||
		    btf_array(t)->nelems != BBR_PARAM_SLOTS ||
		    vsi->size != BBR_PARAM_SLOTS * sizeof(struct bbr_params) ||
		    vsi->offset + vsi->size > mi->value_size)
			break;
		m->params_fd = fd;
		m->value_size = mi->value_size;
		m->var_off = vsi->offset;
		ok = true;
		break;
	}
out:
	btf__free(btf);
	return ok;
}

static void consider_map(uint32_t id, const char *var, struct cc_maps *m)
{
	struct bpf_map_info mi;
	__u32 len = sizeof(mi);
	int fd = bpf_map_get_fd_by_id(id);

	if (fd < 0)
		return;
	memset(&mi, 0, sizeof(mi));
	if (bpf_map_get_info_by_fd(fd, &mi, &len))
		goto drop;
	if (m->cgrp_fd < 0 && mi.type == BPF_MAP_TYPE_HASH &&
	    !strcmp(mi.name, PARAM_CGRP_MAP) && mi.key_size == 8 &&
	    mi.value_size == 4) {
		m->cgrp_fd = fd;
		return;
	}
	if (m->swift_fd < 0 && mi.type == BPF_MAP_TYPE_HASH &&
	    !strcmp(mi.name, SWIFT_CGRP_CFG_MAP_NAME) && mi.key_size == 8 &&
	    mi.value_size == sizeof(struct swift_cfg)) {
		m->swift_fd = fd;
		return;
	}
	if (m->sk_cfg_fd < 0 && mi.type == BPF_MAP_TYPE_SK_STORAGE &&
	    !strcmp(mi.name, SWIFT_SK_CFG_MAP_NAME) &&
	    mi.value_size == sizeof(struct swift_cfg)) {
		m->sk_cfg_fd = fd;
		return;
	}
	if (m->params_fd < 0 && is_params_map(fd, &mi, var, m)) {
		m->params_id = id;
		if (!(mi.map_flags & BPF_F_MMAPABLE))
			m->params_fd = -1;	/* found, but unusable */
		else
			return;
	}
drop:
	close(fd);
}

/* Find the maps of loaded CC `name`; prints why not and returns -1. */
static int cc_maps_find(const char *name, struct cc_maps *m)
{
	uint32_t progs[32], maps[64];
	struct cc_info ci;
	char var[64];
	int np;

	memset(m, 0, sizeof(*m));
	m->params_fd = m->cgrp_fd = m->swift_fd = m->sk_cfg_fd = -1;
	cc_get_info(name, &ci);
	if (!ci.has_link) {
		err("%s is not loaded by bbrctl (%s)", name,
		    ci.note[0] ? ci.note : "no link pin");
		return -1;
	}
	if (!ci.map_id) {
		err("%s: the pinned link is detached (stale pins; run `bbrctl "
		    "unload %s`)", name, name);
		return -1;
	}
	np = struct_ops_prog_ids(ci.map_id, progs, 32);
	if (np == -EPERM || np == -EACCES) {
		err("%s: reading its programs by id needs CAP_SYS_ADMIN", name);
		return -1;
	}
	snprintf(var, sizeof(var), "%s", PARAMS_VAR);
	for (int i = 0; i < np; i++) {
		struct bpf_prog_info pi;
		__u32 len = sizeof(pi);
		int pfd = bpf_prog_get_fd_by_id(progs[i]);

		if (pfd < 0)
			continue;
		memset(&pi, 0, sizeof(pi));
		pi.nr_map_ids = 64;
		pi.map_ids = (uintptr_t)maps;
		if (!bpf_prog_get_info_by_fd(pfd, &pi, &len))
			for (uint32_t k = 0; k < pi.nr_map_ids && k < 64; k++)
				consider_map(maps[k], var, m);
		close(pfd);
	}
	if (m->params_fd < 0 || m->cgrp_fd < 0) {
		err("%s: no parameter sets: its programs use no %s array in %s "
		    "with a %s map%s (not built on lib/tcp_cc.h, or an older "
		    "build: reload it)", name, var, PARAMS_SEC, PARAM_CGRP_MAP,
		    m->params_id ? "; or the map is not mmapable" : "");
		cc_maps_close(m);
		return -1;
	}
	m->mem_len = (m->value_size + (size_t)getpagesize() - 1) &
		     ~((size_t)getpagesize() - 1);
	m->mem = mmap(NULL, m->mem_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		      m->params_fd, 0);
	if (m->mem == MAP_FAILED) {
		m->mem = NULL;
		err("%s: mapping its parameter map %u: %s", name, m->params_id,
		    strerror(errno));
		cc_maps_close(m);
		return -1;
	}
	return 0;
}

static volatile u32 *param_field(struct cc_maps *m, u32 slot, size_t off)
{
	return (volatile u32 *)((char *)m->mem + m->var_off +
				slot * sizeof(struct bbr_params) + off);
}

/* ---- parsing ------------------------------------------------------------------ */

struct pair {
	const struct key_spec *key;
	bool swift;
	u32 value;
};

static const struct key_spec *find_key(const struct key_spec *t, size_t n,
				       const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(t[i].name) == len && !strncmp(t[i].name, name, len))
			return &t[i];
	return NULL;
}

static void list_keys(FILE *f, bool swift)
{
	fprintf(f, "bbrctl: keys:");
	for (size_t i = 0; i < N_BBR_KEYS; i++)
		fprintf(f, " %s", bbr_keys[i].name);
	if (swift)
		for (size_t i = 0; i < N_SWIFT_KEYS; i++)
			fprintf(f, " %s", swift_keys[i].name);
	fputc('\n', f);
}

/* Parse "key=value"; EXIT_USAGE with a message if it is not valid. */
static int parse_pair(const char *cc, const char *arg, bool swift_ok,
		      struct pair *p)
{
	const char *eq = strchr(arg, '=');
	char why[160];
	uint64_t v;

	if (!eq || eq == arg) {
		err("set: \"%s\" is not key=value", arg);
		return EXIT_USAGE;
	}
	p->key = find_key(bbr_keys, N_BBR_KEYS, arg, eq - arg);
	p->swift = false;
	if (!p->key) {
		p->key = find_key(swift_keys, N_SWIFT_KEYS, arg, eq - arg);
		p->swift = true;
		if (p->key && !swift_ok) {
			err("set: %.*s is a bbr_swift key; %s has no %s map",
			    (int)(eq - arg), arg, cc, SWIFT_CGRP_CFG_MAP_NAME);
			return EXIT_USAGE;
		}
	}
	if (!p->key) {
		err("set: unknown key \"%.*s\" for %s", (int)(eq - arg), arg, cc);
		list_keys(stderr, swift_ok);
		return EXIT_USAGE;
	}
	if (num_parse(eq + 1, p->key->min, p->key->max, NUM_HEX, &v, why,
		      sizeof(why))) {
		err("set: %s=%s: %s (%s)", p->key->name, eq + 1, why, p->key->what);
		return EXIT_USAGE;
	}
	p->value = (u32)v;
	return 0;
}

/* ---- slots ---------------------------------------------------------------------- */

struct scope {
	const char *path;	/* NULL: --default */
	u64 id;			/* cgroup id; SWIFT_CGRP_DEFAULT_KEY for --default */
};

/* The set of cgroup `id`, or -1 if it has none. */
static int slot_of(struct cc_maps *m, u64 id)
{
	u32 slot;

	if (bpf_map_lookup_elem(m->cgrp_fd, &id, &slot))
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

/*
 * Drop the entries of cgroups that no longer exist (a lab run removes its
 * cgroup without `--reset`): their sets become free. Returns how many.
 */
static int drop_dead_cgroups(struct cc_maps *m)
{
	char root[PATH_MAX];
	u64 root_id, key, next;
	void *prev = NULL;
	int dropped = 0;
	bool live;

	if (cgroup_resolve(".", root, sizeof(root), &root_id))
		return 0;
	n_live = 0;
	if (nftw(root, note_cgroup, 16, FTW_PHYS))
		return 0;	/* unsure what exists: drop nothing */
	while (!bpf_map_get_next_key(m->cgrp_fd, prev, &next)) {
		live = false;
		for (size_t i = 0; i < n_live && !live; i++)
			live = live_ids[i] == next;
		if (!live && !bpf_map_delete_elem(m->cgrp_fd, &next)) {
			dbg("dropped the parameter set of removed cgroup %llu",
			    (unsigned long long)next);
			dropped++;
			continue;	/* restart from the same prev */
		}
		key = next;
		prev = &key;
	}
	return dropped;
}

/* A set no cgroup uses (1.., 0 is the default), or -1. */
static int free_slot_once(struct cc_maps *m)
{
	bool used[BBR_PARAM_SLOTS] = { true };	/* set 0 is never free */
	u64 key, next;
	void *prev = NULL;
	u32 slot;

	while (!bpf_map_get_next_key(m->cgrp_fd, prev, &next)) {
		if (!bpf_map_lookup_elem(m->cgrp_fd, &next, &slot) &&
		    slot < BBR_PARAM_SLOTS)
			used[slot] = true;
		key = next;
		prev = &key;
	}
	for (int i = 1; i < BBR_PARAM_SLOTS; i++)
		if (!used[i])
			return i;
	return -1;
}

static int free_slot(struct cc_maps *m)
{
	int slot = free_slot_once(m);

	if (slot < 0 && drop_dead_cgroups(m) > 0)
		slot = free_slot_once(m);
	return slot;
}

/* The set `set` writes for the scope: the cgroup's own, or a free one
 * (*fresh); -1 with a message if none is free. */
static int pick_slot(const char *cc, struct cc_maps *m, const struct scope *sc,
		     bool *fresh)
{
	int slot;

	*fresh = false;
	if (!sc->path)
		return 0;
	slot = slot_of(m, sc->id);
	if (slot >= 0)
		return slot;
	slot = free_slot(m);
	if (slot < 0) {
		err("set: all %d parameter sets of %s are in use; "
		    "`bbrctl set --cgroup PATH %s --reset` frees one",
		    BBR_PARAM_SLOTS - 1, cc, cc);
		return -1;
	}
	*fresh = true;
	return slot;
}

/* ---- output --------------------------------------------------------------------- */

/* The bbr_swift configuration of cgroup_id (0: the default) in the order
 * bbr_swift reads it for a socket without an entry of its own: the
 * cgroup's, the default, the built-in; returns where it came from. */
static const char *inherited(struct cc_maps *m, u64 cgroup_id, struct swift_cfg *c)
{
	u64 key = cgroup_id;

	if (cgroup_id && !bpf_map_lookup_elem(m->swift_fd, &key, c))
		return "cgroup";
	key = SWIFT_CGRP_DEFAULT_KEY;
	if (!bpf_map_lookup_elem(m->swift_fd, &key, c))
		return "default";
	memset(c, 0, sizeof(*c));
	c->target_rtt_us = SWIFT_TARGET_RTT_DEFAULT_US;
	return "builtin";
}

/* A bbr_swift configuration and where it comes from, as "swift": {...}. */
static void swift_cfg_json(json_t *j, const struct swift_cfg *c, const char *from)
{
	json_t *sw = json_object();

	js_set_u64(sw, "target_rtt_us", c->target_rtt_us);
	js_set_u64(sw, "stale_us", c->stale_us);
	js_set_u64(sw, "keep_ecn", !!(c->flags & SWIFT_CFG_F_KEEP_ECN));
	js_set_u64(sw, "flags", c->flags);
	js_set_str(sw, "from", from);
	js_set(j, "swift", sw);
}

static void swift_cfg_text(const struct swift_cfg *c, const char *from)
{
	printf("%-24s %u (from %s)\n", "target_rtt_us", c->target_rtt_us, from);
	printf("%-24s %u\n", "stale_us", c->stale_us);
	printf("%-24s %u\n", "keep_ecn", !!(c->flags & SWIFT_CFG_F_KEEP_ECN));
}

static void show(const char *cc, struct cc_maps *m, const struct scope *sc)
{
	int slot = sc->path ? slot_of(m, sc->id) : 0;
	struct swift_cfg sw;
	const char *sw_src = NULL;

	if (m->swift_fd >= 0)
		sw_src = inherited(m, sc->path ? sc->id : SWIFT_CGRP_DEFAULT_KEY, &sw);
	if (slot < 0)
		slot = 0;
	if (g_opts.json) {
		json_t *j = json_object(), *pj = json_object();

		js_set_str(j, "cc", cc);
		js_set_str(j, "scope", sc->path ? "cgroup" : "default");
		if (sc->path) {
			js_set_str(j, "cgroup", sc->path);
			js_set_u64(j, "cgroup_id", sc->id);
		}
		js_set_u64(j, "slot", slot);
		js_set_str(j, "params_from", slot ? "cgroup" : "default");
		js_set_u64(j, "data_map_id", m->params_id);
		for (size_t i = 0; i < N_BBR_KEYS; i++)
			js_set_u64(pj, bbr_keys[i].name, *param_field(m, slot, bbr_keys[i].off));
		js_set(j, "params", pj);
		if (m->swift_fd >= 0)
			swift_cfg_json(j, &sw, sw_src);
		js_print(j);
		return;
	}
	if (sc->path)
		printf("%s, cgroup %s (id %llu): parameter set %d (%s)\n", cc,
		       sc->path, (unsigned long long)sc->id, slot,
		       slot ? "its own" : "the default");
	else
		printf("%s, default parameter set 0\n", cc);
	for (size_t i = 0; i < N_BBR_KEYS; i++)
		printf("%-24s %u\n", bbr_keys[i].name,
		       *param_field(m, slot, bbr_keys[i].off));
	if (m->swift_fd >= 0)
		swift_cfg_text(&sw, sw_src);
}

/* ---- writing -------------------------------------------------------------------- */

static bool any_pair(const struct pair *p, int n, bool swift)
{
	for (int i = 0; i < n; i++)
		if (p[i].swift == swift)
			return true;
	return false;
}

/* Write the bbr_params pairs into set `slot` (fresh: copy the default set
 * first), then publish the cgroup's entry. */
static int write_params(const char *cc, struct cc_maps *m, const struct scope *sc,
			const struct pair *p, int n, int slot, bool fresh)
{
	u32 one;

	if (!any_pair(p, n, false))
		return 0;
	if (fresh)
		for (size_t i = 0; i < sizeof(struct bbr_params); i += 4)
			*param_field(m, slot, i) = *param_field(m, 0, i);
	for (int i = 0; i < n; i++)
		if (!p[i].swift)
			*param_field(m, slot, p[i].key->off) = p[i].value;
	if (sc->path) {
		one = (u32)slot;
		if (bpf_map_update_elem(m->cgrp_fd, &sc->id, &one, BPF_ANY)) {
			err("set: %s: cgroup entry: %s", cc, strerror(errno));
			return -1;
		}
	}
	return 0;
}

static int write_swift(const char *cc, struct cc_maps *m, const struct scope *sc,
		       const struct pair *p, int n)
{
	struct swift_cfg cfg;

	if (!any_pair(p, n, true))
		return 0;
	/* start from what the scope uses now */
	inherited(m, sc->path ? sc->id : SWIFT_CGRP_DEFAULT_KEY, &cfg);
	for (int i = 0; i < n; i++) {
		if (!p[i].swift)
			continue;
		if (p[i].key->off == SWIFT_KEEP_ECN_OFF)
			cfg.flags = p[i].value ? cfg.flags | SWIFT_CFG_F_KEEP_ECN :
						 cfg.flags & ~SWIFT_CFG_F_KEEP_ECN;
		else
			*(u32 *)((char *)&cfg + p[i].key->off) = p[i].value;
	}
	if (bpf_map_update_elem(m->swift_fd, &sc->id, &cfg, BPF_ANY)) {
		err("set: %s: %s entry: %s", cc, SWIFT_CGRP_CFG_MAP_NAME,
		    strerror(errno));
		return -1;
	}
	return 0;
}

static int reset(const char *cc, struct cc_maps *m, const struct scope *sc)
{
	const struct bbr_params def = BBR_PARAMS_DEFAULT;
	u64 key = sc->id;

	if (sc->path) {
		if (bpf_map_delete_elem(m->cgrp_fd, &key) && errno != ENOENT) {
			err("set: %s: removing the cgroup entry: %s", cc, strerror(errno));
			return -1;
		}
	} else {
		for (size_t i = 0; i < sizeof(def); i += 4)
			*param_field(m, 0, i) = *(const u32 *)((const char *)&def + i);
	}
	if (m->swift_fd >= 0 && bpf_map_delete_elem(m->swift_fd, &key) &&
	    errno != ENOENT) {
		err("set: %s: removing the %s entry: %s", cc,
		    SWIFT_CGRP_CFG_MAP_NAME, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- one bbr_swift socket (--socket COOKIE) ------------------------------------ */


/* The sk_storage map that the pinned state iterator of cc looks sockets up
 * in (an entry per socket of cc); a map fd or -1 with a message. */
static int cc_stor_map_fd(const char *cc)
{
	struct bpf_link_info li;
	struct bpf_prog_info pi;
	struct bpf_map_info mi;
	__u32 len = sizeof(li), ids[16], i;
	char path[PATH_MAX];
	int lfd, pfd = -1, fd = -1;

	snprintf(path, sizeof(path), PIN_CC_FMT "/" PIN_ITER, cc);
	lfd = bpf_obj_get(path);
	if (lfd < 0) {
		err("set: %s: cannot open its state iterator %s: %s", cc, path,
		    strerror(errno));
		return -1;
	}
	memset(&li, 0, sizeof(li));
	if (bpf_link_get_info_by_fd(lfd, &li, &len) ||
	    (pfd = bpf_prog_get_fd_by_id(li.prog_id)) < 0) {
		err("set: %s: %s: %s", cc, path, strerror(errno));
		goto out;
	}
	memset(&pi, 0, sizeof(pi));
	pi.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	pi.map_ids = (__u64)(unsigned long)ids;
	len = sizeof(pi);
	if (bpf_prog_get_info_by_fd(pfd, &pi, &len)) {
		err("set: %s: %s: %s", cc, path, strerror(errno));
		goto out;
	}
	for (i = 0; i < pi.nr_map_ids && i < sizeof(ids) / sizeof(ids[0]) && fd < 0; i++) {
		fd = bpf_map_get_fd_by_id(ids[i]);
		memset(&mi, 0, sizeof(mi));
		len = sizeof(mi);
		if (fd >= 0 && (bpf_map_get_info_by_fd(fd, &mi, &len) ||
				mi.type != BPF_MAP_TYPE_SK_STORAGE)) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		err("set: %s: its state iterator uses no socket storage", cc);
out:
	if (pfd >= 0)
		close(pfd);
	close(lfd);
	return fd;
}

/*
 * Run bpf/swift_sk_set.bpf.o once over cc's socket storage with op on the
 * socket with the cookie; the new values are those of the swift pairs.
 * Fills *res; -1 with a message if the walk could not run.
 */
struct sk_set_walk {
	int link_fd;
	int err;		/* -errno */
};

/* One pass of the iterator over the current network namespace. */
static int sk_set_walk_here(void *ctx)
{
	struct sk_set_walk *w = ctx;
	char buf[256];
	ssize_t r;
	int it = bpf_iter_create(w->link_fd);

	if (it < 0) {
		w->err = -errno;
		return w->err;
	}
	while ((r = read(it, buf, sizeof(buf))) > 0 || (r < 0 && errno == EAGAIN))
		;
	if (r < 0)
		w->err = -errno;
	close(it);
	return w->err;
}

static int sk_set_run(const char *cc, struct cc_maps *m, u32 op, u64 cookie,
		      const struct pair *p, int n, struct swift_sk_set_result *res)
{
	struct swift_sk_set *skel = NULL;
	struct bpf_link *link = NULL;
	struct sk_set_walk walk = { 0 };
	int stor = -1, ret = -1;

	stor = cc_stor_map_fd(cc);
	if (stor < 0)
		return -1;
	skel = swift_sk_set__open();
	if (!skel) {
		err("set: opening swift_sk_set failed: %s", strerror(errno));
		goto out;
	}
	skel->rodata->cookie = cookie;
	skel->rodata->op = op;
	for (int i = 0; i < n; i++) {
		if (p[i].key->off == offsetof(struct swift_cfg, target_rtt_us)) {
			skel->rodata->new_target_rtt_us = p[i].value;
			skel->rodata->set_mask |= SWIFT_SK_SET_TARGET;
		} else if (p[i].key->off == offsetof(struct swift_cfg, stale_us)) {
			skel->rodata->new_stale_us = p[i].value;
			skel->rodata->set_mask |= SWIFT_SK_SET_STALE;
		} else {	/* keep_ecn or flags: the one bit there is */
			skel->rodata->new_flags = p[i].value ? SWIFT_CFG_F_KEEP_ECN : 0;
			skel->rodata->set_mask |= SWIFT_SK_SET_FLAGS;
		}
	}
	/* the loaded bbr_swift's own maps: never new ones */
	if (bpf_map__reuse_fd(skel->maps.swift_sk_cfg, m->sk_cfg_fd) ||
	    bpf_map__reuse_fd(skel->maps.bbr_swift_sk_stor, stor) ||
	    swift_sk_set__load(skel)) {
		err("set: loading swift_sk_set failed: %s", strerror(errno));
		goto out;
	}
	link = bpf_program__attach_iter(skel->progs.swift_sk_set, NULL);
	if (!link) {
		err("set: walking the sockets of %s failed: %s", cc, strerror(errno));
		goto out;
	}
	/* a TCP socket iterator walks the reader's network namespace */
	walk.link_fd = bpf_link__fd(link);
	if (for_each_netns(sk_set_walk_here, &walk)) {
		err("set: walking the sockets of %s failed: %s", cc,
		    strerror(-walk.err));
		goto out;
	}
	*res = skel->bss->result;	/* mapped: what the program wrote */
	ret = 0;
out:
	bpf_link__destroy(link);
	swift_sk_set__destroy(skel);
	close(stor);
	return ret;
}

static void show_socket(const char *cc, struct cc_maps *m, u32 op, u64 cookie,
			const struct swift_sk_set_result *res)
{
	/* its entry as written or found, else what it inherits (after a
	 * --reset: what it goes back to at its next refresh) */
	struct swift_cfg inh;
	const struct swift_cfg *c = &inh;
	const char *from = "socket";

	if (op == SWIFT_SK_OP_WRITE)
		c = &res->written;
	else if (op == SWIFT_SK_OP_SHOW && res->had_entry)
		c = &res->old;
	else
		from = inherited(m, res->cgroup_id, &inh);

	if (g_opts.json) {
		json_t *j = json_object(), *in = json_object();

		js_set_str(j, "cc", cc);
		js_set_str(j, "scope", "socket");
		js_set_u64(j, "cookie", cookie);
		js_set_u64(j, "cgroup_id", res->cgroup_id);
		js_set_str(j, "status", swift_status_name(res->status));
		swift_cfg_json(j, c, from);
		js_set_u64(in, "target_rtt_us", res->in_force.target_rtt_us);
		js_set_u64(in, "stale_us", res->in_force.stale_us);
		js_set_u64(in, "flags", res->in_force.flags);
		js_set(j, "in_force", in);
		js_print(j);
		return;
	}
	printf("%s, socket %llu (cgroup id %llu): %s\n", cc,
	       (unsigned long long)cookie, (unsigned long long)res->cgroup_id,
	       op == SWIFT_SK_OP_WRITE ? "its own entry, written" :
	       op == SWIFT_SK_OP_DELETE ? "its own entry removed" :
	       res->had_entry ? "its own entry" : "no entry of its own");
	swift_cfg_text(c, from);
	printf("%-24s %s (target in use %u)\n", "status",
	       swift_status_name(res->status), res->in_force.target_rtt_us);
	if (op != SWIFT_SK_OP_SHOW)
		printf("the socket applies it within %u round trips\n",
		       SWIFT_CFG_REFRESH_ROUNDS);
}

/* `set --socket COOKIE NAME [k=v...|--reset]` */
static int set_socket(const char *cc, struct cc_maps *m, const struct pair *p,
		      int n, const struct cmd_opts *o)
{
	u64 cookie = o->socket_cookie;
	struct swift_sk_set_result res;
	u32 op = o->set_reset ? SWIFT_SK_OP_DELETE :
		 n ? SWIFT_SK_OP_WRITE : SWIFT_SK_OP_SHOW;

	if (m->swift_fd < 0 || m->sk_cfg_fd < 0) {
		err("set: --socket: %s has no per-socket configuration (only "
		    "bbr_swift: target_rtt_us, stale_us, keep_ecn)", cc);
		return EXIT_USAGE;
	}
	for (int i = 0; i < n; i++)
		if (!p[i].swift) {
			err("set: --socket: %s is per cgroup (--cgroup PATH) or "
			    "the default (--default); per socket only "
			    "target_rtt_us, stale_us and keep_ecn", p[i].key->name);
			return EXIT_USAGE;
		}
	memset(&res, 0, sizeof(res));
	if (sk_set_run(cc, m, op, cookie, p, n, &res))
		return EXIT_FAIL;
	if (!res.matched) {
		err("set: no %s socket with cookie %llu (`bbrctl stat %s` lists "
		    "them)", cc, (unsigned long long)cookie, cc);
		return EXIT_FAIL;
	}
	if (res.err) {
		err("set: %s socket %llu: %s its entry failed: %s", cc,
		    (unsigned long long)cookie,
		    op == SWIFT_SK_OP_DELETE ? "removing" : "writing",
		    strerror(-res.err));
		return EXIT_FAIL;
	}
	show_socket(cc, m, op, cookie, &res);
	return EXIT_OK;
}

/* ---- the command ---------------------------------------------------------------- */

/* `set` and `params`: args are NAME [key=value...]. */
static int set_common(const char *cmd, const struct cmd_opts *o, char **args,
		      int nargs, bool dflt)
{
	char path[PATH_MAX];
	struct scope sc = { NULL, SWIFT_CGRP_DEFAULT_KEY };
	struct cc_maps m;
	struct pair *pairs = NULL;
	int ret = EXIT_USAGE, lock = -1, slot = 0;
	bool fresh = false;

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
	if (o->set_reset && nargs > 1) {
		err("%s: --reset takes no key=value pairs", cmd);
		return EXIT_USAGE;
	}
	if (check_privileges(cmd))
		return EXIT_FAIL;
	if (o->cgroup) {
		if (cgroup_resolve(o->cgroup, path, sizeof(path), &sc.id))
			return EXIT_FAIL;
		sc.path = path;
	}
	if (cc_maps_find(args[0], &m))
		return EXIT_FAIL;
	pairs = calloc(nargs, sizeof(*pairs));
	if (!pairs) {
		err("out of memory");
		ret = EXIT_FAIL;
		goto out;
	}
	for (int i = 1; i < nargs; i++)
		if (parse_pair(args[0], args[i], m.swift_fd >= 0, &pairs[i - 1]))
			goto out;	/* EXIT_USAGE, nothing written */
	if (o->set_socket) {
		ret = set_socket(args[0], &m, pairs, nargs - 1, o);
		goto out;
	}
	ret = EXIT_FAIL;
	if (nargs > 1 || o->set_reset) {
		lock = open(SET_LOCK_FILE, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (lock < 0 || flock(lock, LOCK_EX)) {
			err("%s: lock %s: %s", cmd, SET_LOCK_FILE, strerror(errno));
			goto out;
		}
	}
	if (o->set_reset) {
		if (reset(args[0], &m, &sc))
			goto out;
	} else if (nargs > 1) {
		/* Find room first: out of sets, nothing is written. */
		if (any_pair(pairs, nargs - 1, false)) {
			slot = pick_slot(args[0], &m, &sc, &fresh);
			if (slot < 0)
				goto out;
		}
		if ((m.swift_fd >= 0 && write_swift(args[0], &m, &sc, pairs, nargs - 1)) ||
		    write_params(args[0], &m, &sc, pairs, nargs - 1, slot, fresh))
			goto out;
	}
	show(args[0], &m, &sc);
	ret = EXIT_OK;
out:
	if (lock >= 0)
		close(lock);
	free(pairs);
	cc_maps_close(&m);
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
