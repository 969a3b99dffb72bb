// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl attach / detach: choose the congestion control of every TCP socket
 * created in a cgroup (v2) with a cgroup sock_ops program.
 *
 * Design: one attachment per cgroup. `attach` loads a fresh instance of
 * cc_select (bpf/cc_select.bpf.c, built into bbrctl as a skeleton) with the
 * CC name in its .rodata, attaches it to the cgroup with a bpf_link
 * (multi-attach: other sockops programs on the cgroup keep running) and
 * pins the link at PIN_CGROUP/<cgroup id>/select, so it outlives bbrctl. A
 * CC that needs the ETS timestamps (bbr_swift) also gets the ETS program
 * (bpf/ets.bpf.c, ets_sockops) attached and pinned as .../ets. Every
 * step is undone if a later one fails. `detach` removes the pins: the last
 * reference to each link goes and the kernel detaches the program.
 *
 * Paths: an absolute PATH is used as is (and must be a cgroup2 directory);
 * any other PATH is relative to the cgroup2 root (CGROUP2_PURE if that is
 * cgroup2, else CGROUP2_HYBRID, mounted there if nothing is).
 */
#define _GNU_SOURCE		/* nftw */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/timex.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "core/types.h"
#include "ets_shared.h"

#include "cc_select.skel.h"	/* generated: build/skel (Makefile) */
#include "ets.skel.h"

#define CGROUP2_MAGIC		0x63677270	/* CGROUP2_SUPER_MAGIC, linux/magic.h */

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
			goto too_long;
	} else {
		root = cgroup2_root();
		if (!root)
			return -ENOENT;
		while (*arg == '/')
			arg++;
		if (snprintf(out, len, "%s/%s", root, arg) >= (int)len)
			goto too_long;
	}
	if (stat(out, &st) || !S_ISDIR(st.st_mode) || !is_cgroup2(out)) {
		err("bad cgroup path: %s is not a cgroup v2 directory%s", out,
		    errno == ENOENT ? " (create it with mkdir first)" : "");
		return -ENOENT;
	}
	*id = st.st_ino;	/* cgroup2: the inode number is the cgroup id */
	return 0;
too_long:
	err("--cgroup: the path is too long (%zu characters; a path has at most "
	    "%zu)", strlen(arg), len - 1);
	return -ENAMETOOLONG;
}

void att_undo(struct sockops_att *a)
{
	if (a->pinned)
		pt_unlink(a->dfd, a->pin);
	bpf_link__destroy(a->link);
	memset(a, 0, sizeof(*a));
}

/* After success the pin holds the link: let go of ours. */
void att_keep(struct sockops_att *a)
{
	if (!a->link)
		return;
	bpf_link__disconnect(a->link);
	bpf_link__destroy(a->link);
	a->link = NULL;
}

/* Attach prog (of a loaded skeleton) to cgroup cgfd and pin the link at
 * dfd/pin. */
int att_do(struct sockops_att *a, struct bpf_program *prog, int cgfd,
	   int dfd, const char *pin)
{
	int ret;

	a->dfd = dfd;
	a->pin = pin;
	a->link = bpf_program__attach_cgroup(prog, cgfd);
	if (!a->link) {
		ret = -errno;
		err("attaching %s to the cgroup failed: %s",
		    bpf_program__name(prog), strerror(-ret));
		return ret;
	}
	ret = pt_pin(bpf_link__fd(a->link), dfd, pin);
	if (ret) {
		err("pinning %s as %s failed: %s", bpf_program__name(prog), pin,
		    strerror(-ret));
		return ret;
	}
	a->pinned = true;
	return 0;
}

/* cc_select with the CC name in its .rodata, loaded. */
static struct cc_select *select_load(const char *cc)
{
	struct cc_select *skel = cc_select__open();

	if (!skel) {
		err("opening cc_select failed: %s", strerror(errno));
		return NULL;
	}
	snprintf(skel->rodata->cc_name, sizeof(skel->rodata->cc_name), "%s", cc);
	if (cc_select__load(skel)) {
		err("loading cc_select failed: %s", strerror(errno));
		cc_select__destroy(skel);
		return NULL;
	}
	return skel;
}

/* CLOCK_TAI - CLOCK_REALTIME into the shared ets_cfg (the other fields
 * kept): the ETS program turns the kernel's software RX stamps, which are
 * REALTIME, into waits with bpf_ktime_get_tai_ns(). The offset is the
 * kernel's TAI offset, whole seconds that change only when an NTP or PTP
 * daemon sets them; a wrong one makes every wait implausible (tens of
 * seconds) and the program ignores them (docs/ets.md, "Host delay"). */
static void ets_publish_tai_offset(struct ets *skel)
{
	int fd = bpf_map__fd(skel->maps.ets_cfg);
	struct timex tx = { 0 };
	struct ets_cfg cfg;
	uint32_t key = 0;

	if (adjtimex(&tx) < 0 || bpf_map_lookup_elem(fd, &key, &cfg))
		return;
	cfg.tai_off_ns = (int64_t)tx.tai * 1000000000ll;
	if (bpf_map_update_elem(fd, &key, &cfg, BPF_ANY))
		warn("ETS: cannot publish the TAI offset: %s", strerror(errno));
}

/* The ETS program, its maps pinned in PIN_SHARED (where the CCs that read
 * them find them), loaded. */
static struct ets *ets_load(void)
{
	struct ets *skel = ets__open();

	if (!skel) {
		err("opening the ETS program failed: %s", strerror(errno));
		return NULL;
	}
	if (shared_map_pins(skel->obj)) {
		ets__destroy(skel);
		return NULL;
	}
	if (ets__load(skel)) {
		err("loading the ETS program failed: %s", strerror(errno));
		ets__destroy(skel);
		return NULL;
	}
	ets_publish_tai_offset(skel);
	return skel;
}

/*
 * Does the CC read the ETS program's storage (bbr_swift, whatever name it
 * was loaded under)? Its programs use a map of that name. A CC that bbrctl
 * did not load cannot be asked: by name then.
 */
bool cc_needs_ets(const char *cc)
{
	uint32_t maps[STRUCT_OPS_PROGS_MAX * PROG_MAP_IDS_MAX];
	struct cc_info ci;
	bool yes = false;
	int n;

	if (cc_get_link(cc, &ci) || !ci.map_id)
		return strcmp(cc, "bbr_swift") == 0;
	n = struct_ops_map_ids(ci.map_id, maps, (int)(sizeof(maps) / sizeof(maps[0])));
	for (int k = 0; k < n && !yes; k++) {
		struct bpf_map_info mi;
		uint32_t mlen = sizeof(mi);
		int mfd = bpf_map_get_fd_by_id(maps[k]);

		if (mfd < 0)
			continue;
		memset(&mi, 0, sizeof(mi));
		yes = !bpf_map_get_info_by_fd(mfd, &mi, &mlen) &&
		      !strcmp(mi.name, PIN_ETS_SK_STOR);
		close(mfd);
	}
	return yes;
}

int cg_pin_dir(uint64_t id, char *buf, size_t len)
{
	return snprintf(buf, len, PIN_CGROUP "/%llu",
			(unsigned long long)id) >= (int)len ? -ENAMETOOLONG : 0;
}

int ets_attach_cgroup(struct sockops_att *a, int cgfd, int dfd, const char *pin)
{
	struct ets *skel = ets_load();
	int ret = -1;

	if (skel && !att_do(a, skel->progs.ets_sockops, cgfd, dfd, pin))
		ret = 0;
	if (ret)
		att_undo(a);
	else
		att_keep(a);
	ets__destroy(skel);
	return ret;
}

int att_prepare(const struct cmd_opts *o, const char *const *ccs, int n,
		struct att_target *t)
{
	/* cc_select and ETS are CO-RE programs: they need the kernel's BTF. */
	if (check_privileges("attach") || check_kernel_btf() || ensure_bpffs())
		return EXIT_FAIL;
	for (int i = 0; i < n; i++) {
		if (cc_available(ccs[i]) == 1)
			continue;
		err("attach: unknown congestion control \"%s\": not in %s "
		    "(load it first with `bbrctl load %s`)", ccs[i],
		    PROC_AVAIL_CC, ccs[i]);
		/* ...which cannot work on a kernel without BPF CCs: say so. */
		check_struct_ops_cc();
		return EXIT_FAIL;
	}
	if (cgroup_resolve(o->cgroup, t->cg, sizeof(t->cg), &t->id) ||
	    cg_pin_dir(t->id, t->dir, sizeof(t->dir)))
		return EXIT_FAIL;
	snprintf(t->idname, sizeof(t->idname), "%llu", (unsigned long long)t->id);
	if (attachments_of(NULL, false) < 0)	/* drop those of removed cgroups */
		return EXIT_FAIL;
	return 0;
}

int att_open_cgroup(const struct att_target *t)
{
	int fd = open(t->cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		err("cannot open %s: %s", t->cg, strerror(errno));
	return fd;
}

/* attach's command line, an A/B split aside: EXIT_OK or EXIT_USAGE. */
static int attach_check_args(const struct cmd_opts *o, char **args, int nargs)
{
	if (nargs) {
		err("attach: unexpected argument \"%s\" (parameters: use `bbrctl set`)",
		    args[0]);
		return EXIT_USAGE;
	}
	if (!o->cc || !o->cgroup) {
		err("attach: --cgroup PATH and --cc NAME are required");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* The cgroup's new pin directory (its parent's fd in *cgdfd, the caller
 * closes it); -1 after a message if it has one already. */
static int attach_dir(const struct cmd_opts *o, const struct att_target *t,
		      int *cgdfd)
{
	int dfd;

	*cgdfd = pt_dir(PIN_CGROUP_DIR, PT_CREATE);
	if (*cgdfd < 0)
		return -1;
	dfd = pt_subdir(*cgdfd, PIN_CGROUP, t->idname, PT_CREATE | PT_EXCL);
	if (dfd == -EEXIST)
		err("attach: %s already has a congestion control %s "
		    "by bbrctl (%s); run `bbrctl detach --cgroup %s` first",
		    t->cg, ab_pinned_at(*cgdfd, t->idname) ?
		    "split (A/B) attached" : "attached", t->dir, o->cgroup);
	return dfd;
}

/* cc_select for o->cc on the cgroup, with ETS if the CC needs it, their
 * links pinned in dfd; nothing is left on failure. */
static int attach_progs(const struct cmd_opts *o, const struct att_target *t,
			int dfd, int cgdfd)
{
	struct sockops_att sel = {}, ets = {};
	struct cc_select *sel_skel = NULL;
	struct ets *ets_skel = NULL;
	int cgfd, ret = EXIT_FAIL;

	cgfd = att_open_cgroup(t);
	if (cgfd < 0)
		goto out;
	if (cc_needs_ets(o->cc)) {
		ets_skel = ets_load();
		if (!ets_skel || att_do(&ets, ets_skel->progs.ets_sockops, cgfd,
					dfd, PIN_ETS)) {
			err("attach: %s needs the ETS sockops program, which is "
			    "unavailable; nothing attached", o->cc);
			goto out;
		}
	}
	sel_skel = select_load(o->cc);
	if (!sel_skel || att_do(&sel, sel_skel->progs.cc_select, cgfd, dfd,
				PIN_SELECT))
		goto out;
	info("attached: new TCP sockets in %s (cgroup id %llu) use %s%s; pinned at %s",
	     t->cg, (unsigned long long)t->id, o->cc,
	     ets.link ? " with ETS" : "", t->dir);
	ret = EXIT_OK;
out:
	if (ret != EXIT_OK) {
		att_undo(&sel);
		att_undo(&ets);
		pt_rmdir(cgdfd, t->idname);
	} else {
		att_keep(&sel);
		att_keep(&ets);
	}
	cc_select__destroy(sel_skel);
	ets__destroy(ets_skel);
	if (cgfd >= 0)
		close(cgfd);
	return ret;
}

int cmd_attach(const struct cmd_opts *o, char **args, int nargs)
{
	struct att_target t;
	int ret, cgdfd = -1, dfd;

	ret = attach_check_args(o, args, nargs);
	if (ret)
		return ret;
	if (ab_spec(o->cc))	/* --cc A:W,B:W...: an A/B split (ab.c) */
		return ab_attach(o);
	if (!valid_cc_name(o->cc)) {
		err("attach: invalid congestion control name \"%s\"", o->cc);
		return EXIT_USAGE;
	}
	if (att_prepare(o, (const char *const *)&o->cc, 1, &t))
		return EXIT_FAIL;
	dfd = attach_dir(o, &t, &cgdfd);
	if (dfd < 0) {
		if (cgdfd >= 0)
			close(cgdfd);
		return EXIT_FAIL;
	}
	ret = attach_progs(o, &t, dfd, cgdfd);
	close(dfd);
	close(cgdfd);
	return ret;
}

/* ---- the attachments bbrctl has pinned ---------------------------------------------- */

/*
 * The CC a cgroup attachment selects: the cc_name in the .rodata of the
 * cc_select instance behind the link pinned at select_pin. Also says
 * whether the link still has its cgroup (the kernel detaches a link whose
 * cgroup was removed; its pin stays until someone removes it).
 */
static int attachment_cc(int dfd, char *cc, size_t len, bool *live)
{
	struct bpf_link_info li;
	struct cc_select__rodata ro;
	uint32_t li_len = sizeof(li), key = 0;
	int lfd, mfd, ret = -ENOENT;

	*cc = '\0';
	*live = false;
	lfd = pt_obj_get(dfd, PIN_SELECT);
	if (lfd < 0)
		return lfd;
	memset(&li, 0, sizeof(li));
	if (bpf_link_get_info_by_fd(lfd, &li, &li_len)) {
		ret = -errno;
		goto out;
	}
	*live = li.type == BPF_LINK_TYPE_CGROUP && li.cgroup.cgroup_id != 0;
	mfd = prog_map_fd(li.prog_id, ".rodata", sizeof(ro));
	if (mfd >= 0) {
		if (!bpf_map_lookup_elem(mfd, &key, &ro)) {
			snprintf(cc, len, "%.*s", (int)sizeof(ro.cc_name), ro.cc_name);
			ret = 0;
		}
		close(mfd);
	}
out:
	close(lfd);
	return ret;
}

/* Remove the attachment idname under the verified PIN_CGROUP directory
 * cgdfd: its pins (its select and ets links go with them), its directory. */
static int attachment_remove(int cgdfd, const char *idname)
{
	int dfd, ret = 0, e;

	dfd = pt_subdir(cgdfd, PIN_CGROUP, idname, PT_QUIET);
	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0)
		return -1;
	for (const char *f = PIN_SELECT; f; f = f == (const char *)PIN_SELECT ? PIN_ETS : NULL) {
		if ((e = pt_unlink(dfd, f))) {
			err("cannot remove %s/%s/%s: %s", PIN_CGROUP, idname, f,
			    strerror(-e));
			ret = -1;
		}
	}
	if (ab_unpin(dfd, idname))
		ret = -1;
	close(dfd);
	if ((e = pt_rmdir(cgdfd, idname))) {
		err("cannot remove %s/%s: %s", PIN_CGROUP, idname, strerror(-e));
		ret = -1;
	}
	return ret;
}

/* PIN_CGROUP itself, once its last attachment is gone. */
static void cgroup_dir_remove_if_empty(void)
{
	int root = pt_root(PT_QUIET | PT_SILENT);

	if (root >= 0) {
		pt_rmdir(root, PIN_CGROUP_DIR);	/* only if empty */
		close(root);
	}
}

static uint64_t path_id_want;
static char *path_id_out;
static size_t path_id_len;

static int path_id_visit(const char *path, const struct stat *st, int type,
			 struct FTW *f)
{
	(void)f;
	if (type == FTW_D && st->st_ino == path_id_want) {
		snprintf(path_id_out, path_id_len, "%s", path);
		return 1;
	}
	return 0;
}

/* The path of the cgroup with id `id`, or "" when there is none. */
void cgroup_path_of(uint64_t id, char *out, size_t len)
{
	const char *root = is_cgroup2(CGROUP2_PURE) ? CGROUP2_PURE :
			   is_cgroup2(CGROUP2_HYBRID) ? CGROUP2_HYBRID : NULL;

	*out = '\0';
	if (!root)
		return;
	path_id_want = id;
	path_id_out = out;
	path_id_len = len;
	nftw(root, path_id_visit, 16, FTW_PHYS | FTW_MOUNT);
}

int cg_pin_subdir(int cgdfd, const char *idname, uint64_t *id)
{
	char *end;

	*id = strtoull(idname, &end, 10);
	if (*end || !*idname)
		return -ENOENT;		/* not a cgroup id: not ours */
	return pt_subdir(cgdfd, PIN_CGROUP, idname, PT_QUIET);
}

/* One pinned attachment (idname: its cgroup id) of the tree cgdfd: removed
 * if its cgroup is gone; if it selects cc, detached or refused by detach.
 * 1 if it selects cc, else 0. */
static int attachment_visit(int cgdfd, const char *idname, const char *cc,
			    bool detach)
{
	char name[CC_NAME_MAX + 1], cg[PATH_MAX];
	uint64_t id;
	int dfd, ret;
	bool arm, live;

	dfd = cg_pin_subdir(cgdfd, idname, &id);
	if (dfd < 0)
		return 0;
	if (ab_pinned(dfd)) {	/* a split: is cc one of its arms? */
		ret = 0;
		arm = ab_has_arm(dfd, cc, &live);
	} else {
		ret = attachment_cc(dfd, name, sizeof(name), &live);
		arm = !ret && cc && !strcmp(name, cc);
	}
	close(dfd);
	*cg = '\0';
	if (!ret && live)
		cgroup_path_of(id, cg, sizeof(cg));
	/*
	 * Its cgroup is gone (or the pin is broken): nothing selects through
	 * it any more. The kernel detaches the link of a removed cgroup only
	 * once the cgroup is freed, which may be later than its rmdir: a
	 * cgroup that no longer has a path is as gone for this purpose.
	 */
	if (ret || !live || !*cg) {
		dbg("removing the stale attachment %s/%s", PIN_CGROUP, idname);
		attachment_remove(cgdfd, idname);
		return 0;
	}
	if (!cc || !arm)
		return 0;
	if (!detach)
		err("%s is attached to cgroup %s (id %llu): `bbrctl detach "
		    "--cgroup %s` first, or unload --force to detach it", cc,
		    cg, (unsigned long long)id, cg);
	else if (!attachment_remove(cgdfd, idname))
		info("%s: detached from cgroup %s (id %llu)", cc, cg,
		     (unsigned long long)id);
	return 1;
}

int attachments_of(const char *cc, bool detach)
{
	char **ids = NULL;
	int found = 0, n, cgdfd;

	cgdfd = pt_dir(PIN_CGROUP_DIR, PT_QUIET);
	if (cgdfd == -ENOENT)
		return 0;
	if (cgdfd < 0)
		return -1;
	n = pt_list(cgdfd, true, &ids);
	for (int i = 0; i < n; i++)
		found += attachment_visit(cgdfd, ids[i], cc, detach);
	free_names(ids, n > 0 ? n : 0);
	close(cgdfd);
	cgroup_dir_remove_if_empty();
	return found;
}

int cmd_detach(const struct cmd_opts *o, char **args, int nargs)
{
	(void)args;
	char cg[PATH_MAX], dir[PATH_MAX], idname[24];
	uint64_t id;
	int ret = EXIT_OK, cgdfd;

	if (nargs || !o->cgroup) {
		err("detach: usage: bbrctl detach --cgroup PATH");
		return EXIT_USAGE;
	}
	if (check_privileges("detach"))
		return EXIT_FAIL;
	if (cgroup_resolve(o->cgroup, cg, sizeof(cg), &id) ||
	    cg_pin_dir(id, dir, sizeof(dir)))
		return EXIT_FAIL;
	snprintf(idname, sizeof(idname), "%llu", (unsigned long long)id);
	cgdfd = pt_dir(PIN_CGROUP_DIR, PT_QUIET);
	if (cgdfd < 0 && cgdfd != -ENOENT)
		return EXIT_FAIL;
	if (cgdfd < 0 || !pt_exists(cgdfd, idname)) {
		err("detach: nothing attached by bbrctl to %s (no %s)", cg, dir);
		if (cgdfd >= 0)
			close(cgdfd);
		return EXIT_FAIL;
	}
	if (attachment_remove(cgdfd, idname))
		ret = EXIT_FAIL;
	close(cgdfd);
	cgroup_dir_remove_if_empty();
	if (ret == EXIT_OK)
		info("detached: %s (cgroup id %llu)", cg, (unsigned long long)id);
	return ret;
}
