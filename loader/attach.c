// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl attach / detach: choose the congestion control of every TCP socket
 * created in a cgroup (v2) with a cgroup sock_ops program.
 *
 * Design: one attachment per cgroup. `attach` loads a fresh instance of
 * bpf/cc_select.bpf.o with the CC name written into its .rodata, attaches
 * it to the cgroup with a bpf_link (multi-attach: other sockops programs on
 * the cgroup keep running) and pins the link at
 * PIN_ROOT/cgroup/<cgroup id>/select, so it outlives bbrctl. A CC that
 * needs the ETS timestamps (bbr_swift) also gets the ETS program
 * (ets.bpf.o, program ets_sockops) attached and pinned as .../ets. Every
 * step is undone if a later one fails. `detach` removes the pins: the last
 * reference to each link goes and the kernel detaches the program.
 *
 * Paths: an absolute PATH is used as is (and must be a cgroup2 directory);
 * any other PATH is relative to the cgroup2 root (CGROUP2_PURE if that is
 * cgroup2, else CGROUP2_HYBRID, mounted there if nothing is).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"

#define CGROUP2_MAGIC		0x63677270	/* CGROUP2_SUPER_MAGIC, linux/magic.h */
#define SELECT_OBJ		"cc_select"
#define SELECT_PROG		"cc_select"
#define ETS_OBJ			"ets"
#define ETS_PROG		"ets_sockops"
#define CC_NAME_BUF		16		/* TCP_CA_NAME_MAX */

static bool is_cgroup2(const char *path)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && (uint32_t)sf.f_type == CGROUP2_MAGIC;
}

/* The cgroup2 root: mount one at CGROUP2_HYBRID if nothing is mounted. */
static const char *cgroup2_root(void)
{
	if (is_cgroup2(CGROUP2_PURE))
		return CGROUP2_PURE;
	if (is_cgroup2(CGROUP2_HYBRID))
		return CGROUP2_HYBRID;
	if (mkdir(CGROUP2_HYBRID, 0755) && errno != EEXIST) {
		err("no cgroup2 hierarchy and cannot create %s: %s",
		    CGROUP2_HYBRID, strerror(errno));
		return NULL;
	}
	if (mount("cgroup2", CGROUP2_HYBRID, "cgroup2", 0, NULL)) {
		err("no cgroup2 hierarchy and mounting one at %s failed: %s",
		    CGROUP2_HYBRID, strerror(errno));
		return NULL;
	}
	info("mounted cgroup2 at %s", CGROUP2_HYBRID);
	return CGROUP2_HYBRID;
}

int cgroup_resolve(const char *arg, char *out, size_t len, uint64_t *id)
{
	const char *root;
	struct stat st;

	if (!arg || !*arg) {
		err("--cgroup PATH is required");
		return -EINVAL;
	}
	if (arg[0] == '/') {
		if (snprintf(out, len, "%s", arg) >= (int)len)
			return -ENAMETOOLONG;
	} else {
		root = cgroup2_root();
		if (!root)
			return -ENOENT;
		while (*arg == '/')
			arg++;
		if (snprintf(out, len, "%s/%s", root, arg) >= (int)len)
			return -ENAMETOOLONG;
	}
	if (stat(out, &st) || !S_ISDIR(st.st_mode) || !is_cgroup2(out)) {
		err("bad cgroup path: %s is not a cgroup v2 directory%s", out,
		    errno == ENOENT ? " (create it with mkdir first)" : "");
		return -ENOENT;
	}
	*id = st.st_ino;	/* cgroup2: the inode number is the cgroup id */
	return 0;
}

/* Write size bytes at global var in the object's section sec (before load). */
int set_global(struct bpf_object *obj, const char *sec,
		      const char *var, const void *val, size_t size)
{
	const struct btf *btf = bpf_object__btf(obj);
	const struct btf_var_secinfo *vs;
	const struct btf_type *t;
	struct bpf_map *map = NULL, *m;
	size_t msize;
	char *data;
	int id;

	bpf_object__for_each_map(m, obj) {
		const char *n = bpf_map__name(m);
		size_t nl = strlen(n), sl = strlen(sec);

		if (nl >= sl && strcmp(n + nl - sl, sec) == 0)
			map = m;
	}
	id = btf ? btf__find_by_name_kind(btf, sec, BTF_KIND_DATASEC) : -1;
	if (!map || id < 0)
		return -ENOENT;
	data = bpf_map__initial_value(map, &msize);
	t = btf__type_by_id(btf, id);
	vs = btf_var_secinfos(t);
	for (int i = 0; i < btf_vlen(t); i++, vs++) {
		const struct btf_type *v = btf__type_by_id(btf, vs->type);

		if (strcmp(btf__name_by_offset(btf, v->name_off), var))
			continue;
		if (!data || vs->offset + size > msize || size > vs->size)
			return -E2BIG;
		memcpy(data + vs->offset, val, size);
		return 0;
	}
	return -ENOENT;
}

struct sockops_att {
	struct bpf_object *obj;
	struct bpf_link *link;
	char pin[PATH_MAX];
	bool pinned;
};

static void att_undo(struct sockops_att *a)
{
	if (a->pinned)
		unlink(a->pin);
	bpf_link__destroy(a->link);
	bpf_object__close(a->obj);
	memset(a, 0, sizeof(*a));
}

/* Load prog of objdir/objname.bpf.o, attach it to cgfd, pin at pin. */
static int att_do(struct sockops_att *a, const char *objname,
		  const char *progname, const char *cc, int cgfd,
		  const char *pin)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = PIN_SHARED);
	char path[PATH_MAX], name[CC_NAME_BUF] = {};
	struct bpf_program *prog;
	int ret;

	snprintf(path, sizeof(path), "%s/%s" OBJ_SUFFIX, g_opts.objdir, objname);
	snprintf(a->pin, sizeof(a->pin), "%s", pin);
	if (access(path, R_OK)) {
		err("%s is unavailable: %s: %s", progname, path, strerror(errno));
		return -ENOENT;
	}
	a->obj = bpf_object__open_file(path, &oo);
	if (!a->obj) {
		ret = -errno;
		err("cannot open %s: %s", path, strerror(-ret));
		return ret;
	}
	prog = bpf_object__find_program_by_name(a->obj, progname);
	if (!prog) {
		err("%s has no program %s", path, progname);
		return -ENOENT;
	}
	if (cc) {
		snprintf(name, sizeof(name), "%s", cc);
		if (set_global(a->obj, ".rodata", "cc_name", name, sizeof(name))) {
			err("%s: no const cc_name[16] in .rodata", path);
			return -EINVAL;
		}
	}
	if (bpf_object__load(a->obj)) {
		ret = -errno;
		err("loading %s failed: %s", path, strerror(-ret));
		return ret;
	}
	a->link = bpf_program__attach_cgroup(prog, cgfd);
	if (!a->link) {
		ret = -errno;
		err("attaching %s to the cgroup failed: %s", progname, strerror(-ret));
		return ret;
	}
	if (bpf_link__pin(a->link, pin)) {
		ret = -errno;
		err("pinning %s at %s failed: %s", progname, pin, strerror(-ret));
		return ret;
	}
	a->pinned = true;
	return 0;
}

static bool cc_needs_ets(const char *cc)
{
	return strcmp(cc, "bbr_swift") == 0;
}

static int cg_pin_dir(uint64_t id, char *buf, size_t len)
{
	return snprintf(buf, len, PIN_CGROUP "/%llu",
			(unsigned long long)id) >= (int)len ? -ENAMETOOLONG : 0;
}

int cmd_attach_impl(char **args, int nargs)
{
	struct sockops_att sel = {}, ets = {};
	char cg[PATH_MAX], dir[PATH_MAX], p[PATH_MAX];
	uint64_t id;
	int cgfd = -1, ret = EXIT_FAIL;

	if (nargs) {
		err("attach: unexpected argument \"%s\" (parameters: use `bbrctl set`)",
		    args[0]);
		return EXIT_USAGE;
	}
	if (!g_opts.cc || !g_opts.cgroup) {
		err("attach: --cgroup PATH and --cc NAME are required");
		return EXIT_USAGE;
	}
	if (!valid_cc_name(g_opts.cc)) {
		err("attach: invalid congestion control name \"%s\"", g_opts.cc);
		return EXIT_USAGE;
	}
	/* cc_select and ETS are CO-RE programs: they need the kernel's BTF. */
	if (check_privileges("attach") || check_kernel_btf() || ensure_bpffs())
		return EXIT_FAIL;
	if (cc_available(g_opts.cc) != 1) {
		err("attach: unknown congestion control \"%s\": not in %s "
		    "(load it first with `bbrctl load %s`)", g_opts.cc,
		    PROC_AVAIL_CC, g_opts.cc);
		/* ...which cannot work on a kernel without BPF CCs: say so. */
		check_struct_ops_cc();
		return EXIT_FAIL;
	}
	if (cgroup_resolve(g_opts.cgroup, cg, sizeof(cg), &id))
		return EXIT_FAIL;
	if (cg_pin_dir(id, dir, sizeof(dir)))
		return EXIT_FAIL;
	snprintf(p, sizeof(p), "%s", PIN_CGROUP);
	if ((mkdir(PIN_ROOT, 0700) && errno != EEXIST) ||
	    (mkdir(p, 0700) && errno != EEXIST)) {
		err("cannot create %s: %s", p, strerror(errno));
		return EXIT_FAIL;
	}
	if (mkdir(dir, 0700)) {
		if (errno == EEXIST)
			err("attach: %s already has a congestion control attached "
			    "by bbrctl (%s); run `bbrctl detach --cgroup %s` first",
			    cg, dir, g_opts.cgroup);
		else
			err("cannot create %s: %s", dir, strerror(errno));
		return EXIT_FAIL;
	}
	cgfd = open(cg, O_RDONLY | O_DIRECTORY);
	if (cgfd < 0) {
		err("cannot open %s: %s", cg, strerror(errno));
		goto out;
	}
	if (cc_needs_ets(g_opts.cc)) {
		path_join(p, sizeof(p), dir, PIN_ETS);
		if (att_do(&ets, ETS_OBJ, ETS_PROG, NULL, cgfd, p)) {
			err("attach: %s needs the ETS sockops program, which is "
			    "unavailable; nothing attached", g_opts.cc);
			goto out;
		}
	}
	path_join(p, sizeof(p), dir, PIN_SELECT);
	if (att_do(&sel, SELECT_OBJ, SELECT_PROG, g_opts.cc, cgfd, p))
		goto out;
	info("attached: new TCP sockets in %s (cgroup id %llu) use %s%s; pinned at %s",
	     cg, (unsigned long long)id, g_opts.cc,
	     ets.link ? " with ETS" : "", dir);
	ret = EXIT_OK;
out:
	if (ret != EXIT_OK) {
		att_undo(&sel);
		att_undo(&ets);
		rmdir(dir);
	} else {
		bpf_link__disconnect(sel.link);
		bpf_link__destroy(sel.link);
		bpf_object__close(sel.obj);
		if (ets.link) {
			bpf_link__disconnect(ets.link);
			bpf_link__destroy(ets.link);
			bpf_object__close(ets.obj);
		}
	}
	if (cgfd >= 0)
		close(cgfd);
	return ret;
}

int cmd_detach_impl(char **args, int nargs)
{
	(void)args;
	char cg[PATH_MAX], dir[PATH_MAX], p[PATH_MAX];
	uint64_t id;
	int ret = EXIT_OK;

	if (nargs || !g_opts.cgroup) {
		err("detach: usage: bbrctl detach --cgroup PATH");
		return EXIT_USAGE;
	}
	if (check_privileges("detach"))
		return EXIT_FAIL;
	if (cgroup_resolve(g_opts.cgroup, cg, sizeof(cg), &id) ||
	    cg_pin_dir(id, dir, sizeof(dir)))
		return EXIT_FAIL;
	if (access(dir, F_OK)) {
		err("detach: nothing attached by bbrctl to %s (no %s)", cg, dir);
		return EXIT_FAIL;
	}
	for (const char *f = PIN_SELECT; f; f = f == (const char *)PIN_SELECT ? PIN_ETS : NULL) {
		path_join(p, sizeof(p), dir, f);
		if (unlink(p) && errno != ENOENT) {
			err("cannot remove %s: %s", p, strerror(errno));
			ret = EXIT_FAIL;
		}
	}
	if (rmdir(dir) && errno != ENOENT) {
		err("cannot remove %s: %s", dir, strerror(errno));
		ret = EXIT_FAIL;
	}
	snprintf(p, sizeof(p), "%s", PIN_CGROUP);
	rmdir(p);	/* only if empty */
	if (ret == EXIT_OK)
		info("detached: %s (cgroup id %llu)", cg, (unsigned long long)id);
	return ret;
}
