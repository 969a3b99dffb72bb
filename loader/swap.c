// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl swap: live replacement without reboot.
 *
 * (1) `bbrctl swap [--obj PATH] NAME`: a new build of NAME replaces the
 *     registered one in place: load the new object, bpf_link__update_map()
 *     on the pinned struct_ops link (the kernel insists on the same .name),
 *     re-pin the state iterator over the new object's storage map, and
 *     rewrite every network namespace default that names NAME (the default
 *     holds a pointer to the old implementation, kernel-bpf-facts.md 3.2).
 *     Existing sockets keep the old programs until they close or switch.
 * (2) `bbrctl swap --from A --to B [--port N] [--cgroup PATH] [--netns NS]`:
 *     switch live sockets with the iter/tcp program bpf/cc_swap.bpf.c. The
 *     iterator walks the reader's network namespace, so with --netns bbrctl
 *     enters /run/netns/NS (setns) before creating the iterator.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "kfeat.h"
#include "cc_swap.skel.h"	/* generated: build/skel (Makefile) */

#define SYSCTL_DEFAULT_CC	"/proc/sys/net/ipv4/tcp_congestion_control"

/* ---- (2) live sockets ---- */

/* cc_swap with the filters in its .rodata, loaded; NULL with a message. */
static struct cc_swap *swap_load(const struct cmd_opts *o, uint64_t cgid)
{
	struct cc_swap *skel = cc_swap__open();

	if (!skel) {
		err("swap: opening cc_swap failed: %s", strerror(errno));
		return NULL;
	}
	snprintf(skel->rodata->from_cc, sizeof(skel->rodata->from_cc), "%s", o->from);
	snprintf(skel->rodata->to_cc, sizeof(skel->rodata->to_cc), "%s", o->to);
	skel->rodata->port = (uint16_t)o->port;
	skel->rodata->cgroup_id = cgid;
	if (cc_swap__load(skel)) {
		err("swap: loading cc_swap failed: %s", strerror(errno));
		cc_swap__destroy(skel);
		return NULL;
	}
	return skel;
}

/* The filters of `swap --from --to`, checked; the cgroup's id into *cgid
 * and, with --netns, this process moved into that namespace. */
static int swap_prepare(const struct cmd_opts *o, char *cg, size_t cg_len,
			uint64_t *cgid)
{
	if (!valid_cc_name(o->from) || !valid_cc_name(o->to)) {
		err("swap: invalid congestion control name");
		return EXIT_USAGE;
	}
	if (o->port < 0 || o->port > 65535) {
		err("swap: --port %d is out of range 1..65535", o->port);
		return EXIT_USAGE;
	}
	if (o->cgroup && cgroup_resolve(o->cgroup, cg, cg_len, cgid))
		return EXIT_FAIL;
	if (o->netns && enter_netns("swap", o->netns))
		return EXIT_FAIL;
	if (cc_available(o->to) != 1) {
		err("swap: unknown congestion control \"%s\": not in %s%s%s",
		    o->to, PROC_AVAIL_CC, o->netns ? " of netns " : "",
		    o->netns ? o->netns : "");
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* Read the iterator to its end (each read switches the sockets it walks),
 * printing its per-socket lines to out unless JSON without -v. */
static int swap_iter_read(int fd, FILE *out)
{
	char buf[4096], line[256];
	size_t ll = 0;
	int tries = 0;
	ssize_t n;

	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EAGAIN && tries++ < 100)
			continue;
		if (n < 0) {
			err("swap: reading the iterator failed: %s", strerror(errno));
			return EXIT_FAIL;
		}
		if (n == 0)
			return EXIT_OK;
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\n' || ll == sizeof(line) - 1) {
				line[ll] = 0;
				if (g_opts.verbose || !g_opts.json)
					fprintf(out, "socket %s\n", line);
				ll = 0;
			} else {
				line[ll++] = buf[i];
			}
		}
	}
}

/* The iterator's counters, as JSON or one line; failed sockets fail. */
static int swap_report(const struct cmd_opts *o, const struct cc_swap *skel,
		       uint64_t cgid)
{
	const struct cc_swap__bss *c = skel->bss;	/* mapped */

	if (g_opts.json) {
		json_t *j = json_object();

		js_set_str(j, "from", skel->rodata->from_cc);
		js_set_str(j, "to", skel->rodata->to_cc);
		js_set(j, "netns", o->netns ? js_str(o->netns) : json_null());
		js_set_u64(j, "port", o->port);
		js_set_u64(j, "cgroup_id", cgid);
		js_set_u64(j, "switched", c->n_switched);
		js_set_u64(j, "failed", c->n_failed);
		js_set_u64(j, "time_wait_skipped", c->n_timewait);
		js_set_u64(j, "request_sock_skipped", c->n_reqsk);
		js_set_u64(j, "other_cc", c->n_other_cc);
		js_print(j);
	} else {
		printf("swap %s -> %s: %llu switched, %llu failed, %llu TIME_WAIT "
		       "and %llu request sockets skipped (not full sockets), "
		       "%llu matching sockets use another CC\n", skel->rodata->from_cc,
		       skel->rodata->to_cc, (unsigned long long)c->n_switched,
		       (unsigned long long)c->n_failed, (unsigned long long)c->n_timewait,
		       (unsigned long long)c->n_reqsk, (unsigned long long)c->n_other_cc);
	}
	if (!c->n_failed)
		return EXIT_OK;
	err("swap: %llu sockets could not be switched (see the error lines)",
	    (unsigned long long)c->n_failed);
	return EXIT_FAIL;
}

static int swap_sockets(const struct cmd_opts *o)
{
	char cg[PATH_MAX];
	uint64_t cgid = 0;
	struct cc_swap *skel = NULL;
	struct bpf_link *link = NULL;
	int fd = -1, ret;

	ret = swap_prepare(o, cg, sizeof(cg), &cgid);
	if (ret != EXIT_OK)
		return ret;
	skel = swap_load(o, cgid);
	if (!skel)
		return EXIT_FAIL;
	ret = EXIT_FAIL;
	link = bpf_program__attach_iter(skel->progs.cc_swap, NULL);
	if (!link) {
		err("swap: creating the TCP iterator failed: %s", strerror(errno));
		goto out;
	}
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err("swap: bpf_iter_create failed: %s", strerror(errno));
		goto out;
	}
	/* per-socket lines go to stderr in JSON mode */
	if (swap_iter_read(fd, g_opts.json ? stderr : stdout) == EXIT_OK)
		ret = swap_report(o, skel, cgid);
out:
	if (fd >= 0)
		close(fd);
	bpf_link__destroy(link);
	cc_swap__destroy(skel);
	return ret;
}

/* ---- (1) in place ---- */

/* Rewrite the default CC of the current netns if it names name. */
static void refresh_default(const char *name, const char *where)
{
	char cur[64] = "";
	FILE *f = fopen(SYSCTL_DEFAULT_CC, "r+");

	if (!f)
		return;
	if (fgets(cur, sizeof(cur), f)) {
		cur[strcspn(cur, "\n")] = 0;
		if (strcmp(cur, name) == 0) {
			rewind(f);
			if (fprintf(f, "%s\n", name) < 0 || fflush(f))
				warn("refreshing the default CC of %s failed: %s",
				     where, strerror(errno));
			else
				info("refreshed the default CC of %s", where);
		}
	}
	fclose(f);
}

static void refresh_all_defaults(const char *name)
{
	int self = open("/proc/self/ns/net", O_RDONLY);
	struct dirent *de;
	DIR *d;

	refresh_default(name, "the init netns");
	d = opendir(NETNS_RUN_DIR);
	if (!d || self < 0) {
		if (d)
			closedir(d);
		if (self >= 0)
			close(self);
		return;
	}
	while ((de = readdir(d))) {
		char p[PATH_MAX];
		int fd;

		if (de->d_name[0] == '.')
			continue;
		path_join(p, sizeof(p), NETNS_RUN_DIR, de->d_name);
		fd = open(p, O_RDONLY);
		if (fd < 0)
			continue;
		if (setns(fd, CLONE_NEWNET) == 0)
			refresh_default(name, de->d_name);
		close(fd);
	}
	closedir(d);
	if (setns(self, CLONE_NEWNET))
		warn("returning to the original netns failed: %s", strerror(errno));
	close(self);
}



/* The struct_ops map registered behind link: an fd (-1 if unknown) and its
 * info in *mi. */
static int running_ops_map(int link_fd, struct bpf_map_info *mi)
{
	struct bpf_link_info li = {};
	__u32 len = sizeof(li), mlen = sizeof(*mi);
	int fd;

	if (bpf_link_get_info_by_fd(link_fd, &li, &len) ||
	    li.type != BPF_LINK_TYPE_STRUCT_OPS)
		return -1;
	fd = bpf_map_get_fd_by_id(li.struct_ops.map_id);
	if (fd < 0)
		return -1;
	memset(mi, 0, sizeof(*mi));
	if (bpf_map_get_info_by_fd(fd, mi, &mlen)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The ECN ops flags (load --ecn) of the registered CC whose struct_ops map
 * is fd: read from the kernel's copy of its tcp_congestion_ops, at the
 * offsets the running kernel's BTF gives. 0 if none, or if it cannot be
 * read.
 */
static uint32_t running_ecn_flags(int fd, const struct bpf_map_info *mi)
{
	__u32 key = 0, flags = 0;
	struct btf *btf = btf__load_vmlinux_btf();
	int data_off, flags_off;
	void *val = calloc(1, mi->value_size);

	if (!btf || !val)
		goto out;
	data_off = btf_member_offset(btf, "bpf_struct_ops_tcp_congestion_ops", "data");
	flags_off = btf_member_offset(btf, "tcp_congestion_ops", "flags");
	if (data_off < 0 || flags_off < 0 ||
	    (size_t)data_off + flags_off + sizeof(flags) > mi->value_size ||
	    bpf_map_lookup_elem(fd, &key, val))
		goto out;
	memcpy(&flags, (char *)val + data_off + flags_off, sizeof(flags));
	flags &= LOAD_ECN_ACCECN_ONLY | LOAD_ECN_CLASSIC;	/* what --ecn sets */
	dbg("swap: the running CC has ECN flags 0x%x", flags);
out:
	free(val);
	btf__free(btf);
	return flags;
}

/* The object that replaces name: --obj, else name's own, or for a copy
 * loaded with `load --name NAME BASE` BASE's (*from = BASE, the name the
 * registered struct_ops map carries). */
static void swap_object_path(const struct cmd_opts *o, const char *name,
			     int ops_fd, const struct bpf_map_info *ops,
			     char *path, size_t len, char *from, size_t from_len)
{
	if (o->nobjs) {
		snprintf(path, len, "%s", o->objs[0]);
		return;
	}
	cc_object_path(path, len, name);
	if (access(path, F_OK) != 0 && ops_fd >= 0 && ops->name[0] &&
	    valid_cc_name(ops->name)) {
		snprintf(from, from_len, "%s", ops->name);
		cc_object_path(path, len, from);
		dbg("swap: %s is a copy of %s: %s", name, from, path);
	}
}

/* Open and load the new build as name, with the running copy's ECN flags
 * and the pinned shared maps; 0 or -1 with a message. */
static int swap_load_new(struct cc_target *t, const struct cmd_opts *o,
			 const char *path, const char *from, const char *name,
			 uint32_t ecn)
{
	int ret;

	/* With --obj or for a copy, its CC takes the loaded one's name
	 * (loaded with `load --name`, the two differ): the kernel replaces a
	 * CC only by one of the same name. */
	if (o->nobjs || from[0])
		ret = cc_open(t, path, o->nobjs ? NULL : from, name);
	else
		ret = cc_open(t, path, name, NULL);
	if (ret)
		return -1;
	/* A copy loaded with --ecn keeps its ECN flags across the swap. */
	if (ecn && cc_add_ecn_flags(t, ecn))
		return -1;
	/* The maps it shares with the ETS program (bbr_swift's ets_sk_stor)
	 * must be the pinned ones, as at load: a map of its own would stay
	 * empty, and every socket of the new build would run without ETS. */
	if (shared_map_pins(t->obj))
		return -1;
	if (bpf_object__load(t->obj)) {
		err("swap: loading %s failed: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The pins of NAME describe the build in place: the new build's iterator
 * and trace ring replace the old ones, and where it has none (another
 * CC's object, e.g. dctcp_bpf in place of bbr3) the old ones go, so that
 * stat and trace say there is nothing to read rather than read the
 * previous build's sockets. *it holds the iterator link to destroy.
 */
static void swap_repin(struct cc_target *t, int dfd, const char *dir,
		       const char *path, const char *name, struct bpf_link **it)
{
	char p[PATH_MAX];
	int e;

	path_join(p, sizeof(p), dir, PIN_ITER);
	pt_unlink(dfd, PIN_ITER);
	if (t->iter_prog) {
		*it = bpf_program__attach_iter(t->iter_prog, NULL);
		e = *it ? pt_pin(bpf_link__fd(*it), dfd, PIN_ITER) : -errno;
		if (e)
			warn("swap: re-pinning the state iterator at %s failed: %s "
			     "(stat shows no sockets of the new build)", p,
			     strerror(-e));
	} else {
		info("swap: %s has no state iterator: `bbrctl stat %s` has "
		     "nothing to show", path, name);
	}
	if (!t->trace_rb) {
		trace_unpin_maps(dfd);
		info("swap: %s has no trace ring: `bbrctl trace %s` has "
		     "nothing to show", path, name);
	} else if (trace_pin_maps(t, dfd)) {
		warn("swap: `bbrctl trace %s` sees no events of the new build", name);
	}
}

/* name's verified pin directory (*dfd) and its pinned link, as an fd
 * (*link_fd) and as libbpf's handle for bpf_link__update_map(); NULL with
 * a message (the fds it opened are then in *dfd / *link_fd, or < 0). */
static struct bpf_link *swap_open_link(const char *name, const char *dir,
				       int *dfd, int *link_fd)
{
	char p[PATH_MAX];
	struct bpf_link *link;

	path_join(p, sizeof(p), dir, PIN_LINK);
	*dfd = pt_dir(name, PT_QUIET);
	if (*dfd < 0 && *dfd != -ENOENT)
		return NULL;
	*link_fd = *dfd < 0 ? *dfd : pt_obj_get(*dfd, PIN_LINK);
	if (*link_fd < 0) {
		err("swap: %s is not loaded by bbrctl (%s: %s); use `bbrctl load %s`",
		    name, p, strerror(-*link_fd), name);
		return NULL;
	}
	/* reached through the verified directory, and not a link
	 * (pt_obj_get()) */
	link = bpf_link__open(pt_fd_path(*dfd, PIN_LINK, p, sizeof(p)));
	if (!link) {
		path_join(p, sizeof(p), dir, PIN_LINK);
		err("swap: cannot open %s: %s", p, strerror(errno));
	}
	return link;
}

static int swap_in_place(const struct cmd_opts *o, const char *name)
{
	struct cc_target t;
	char path[PATH_MAX], dir[PATH_MAX];
	struct bpf_link *link = NULL, *it = NULL;
	int ret = EXIT_FAIL, ops_fd = -1, dfd = -1, link_fd = -1;
	struct bpf_map_info ops = {};
	char from[BPF_OBJ_NAME_LEN] = "";
	uint32_t ecn = 0;

	memset(&t, 0, sizeof(t));
	if (!valid_cc_name(name)) {
		err("swap: invalid congestion control name \"%s\"", name);
		return EXIT_USAGE;
	}
	snprintf(dir, sizeof(dir), PIN_CC_FMT, name);
	link = swap_open_link(name, dir, &dfd, &link_fd);
	if (!link)
		goto out;
	if (o->nobjs > 1) {
		err("swap: give at most one --obj");
		goto out;
	}
	/* what is registered now: its map's name and its ECN flags */
	ops_fd = running_ops_map(link_fd, &ops);
	if (ops_fd >= 0)
		ecn = running_ecn_flags(ops_fd, &ops);
	swap_object_path(o, name, ops_fd, &ops, path, sizeof(path), from,
			 sizeof(from));
	if (swap_load_new(&t, o, path, from, name, ecn))
		goto out;
	if (bpf_link__update_map(link, t.st_map)) {
		err("swap: replacing %s in place failed: %s", name, strerror(errno));
		goto out;
	}
	swap_repin(&t, dfd, dir, path, name, &it);
	refresh_all_defaults(name);
	info("swapped %s in place with %s; existing sockets keep the previous "
	     "build until they close or are switched", name, path);
	ret = EXIT_OK;
out:
	if (ops_fd >= 0)
		close(ops_fd);
	bpf_link__destroy(it);
	if (link) {
		bpf_link__disconnect(link);
		bpf_link__destroy(link);
	}
	if (link_fd >= 0)
		close(link_fd);
	if (dfd >= 0)
		close(dfd);
	cc_close(&t);
	return ret;
}

int cmd_swap(const struct cmd_opts *o, char **args, int nargs)
{
	if (check_privileges("swap") || check_kernel_btf())
		return EXIT_FAIL;
	if (o->from || o->to) {
		if (!o->from || !o->to || nargs) {
			err("swap: usage: bbrctl swap --from CC --to CC [--port N] "
			    "[--cgroup PATH] [--netns NAME]");
			return EXIT_USAGE;
		}
		return swap_sockets(o);
	}
	if (nargs != 1) {
		err("swap: usage: bbrctl swap [--obj PATH] NAME, or "
		    "bbrctl swap --from CC --to CC [filters]");
		return EXIT_USAGE;
	}
	if (check_struct_ops_cc())
		return EXIT_FAIL;
	return swap_in_place(o, args[0]);
}
