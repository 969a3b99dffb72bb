// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl load / unload: open a congestion-control object, load it,
 * register it through its struct_ops link, pin the link (and the state
 * iterator); and the reverse. Every failure undoes what the failing step's
 * predecessors did.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "kfeat.h"

#define ST_OPS_LINK_SEC	".struct_ops.link"
#define ST_OPS_SEC	".struct_ops"
#define CC_STRUCT	"tcp_congestion_ops"

/*
 * The .name of the tcp_congestion_ops a struct_ops map will register: its
 * bytes in the map's initial value (which libbpf copies into the kernel's
 * at load, so a write before loading renames the CC). NULL after a message.
 */
static char *st_ops_member(struct cc_target *t, const char *member, size_t len)
{
	const struct btf *btf = bpf_object__btf(t->obj);
	const char *map_name = bpf_map__name(t->st_map);
	const struct btf_type *st;
	const struct btf_member *m;
	const char *tname;
	char *data;
	size_t size;

	if (!btf) {
		err("%s: object has no BTF", t->path);
		return NULL;
	}
	st = btf_st_ops_map_struct(btf, map_name);
	if (!st || !btf_is_struct(st)) {
		err("%s: cannot find the type of struct_ops map %s in the "
		    "object's BTF", t->path, map_name);
		return NULL;
	}
	/* a flavour (tcp_congestion_ops___tx_start) is the same struct to
	 * libbpf and the kernel: kfeat.h */
	tname = btf__name_by_offset(btf, st->name_off);
	if (!tname || !btf_name_is_flavour_of(tname, CC_STRUCT)) {
		err("%s: struct_ops map %s is a struct %s, not a congestion "
		    "control (struct " CC_STRUCT ")", t->path, map_name,
		    tname ? tname : "?");
		return NULL;
	}
	data = bpf_map__initial_value(t->st_map, &size);
	if (!data) {
		err("%s: cannot read the initial value of struct_ops map %s",
		    t->path, map_name);
		return NULL;
	}
	m = btf_members(st);
	for (int i = 0; i < btf_vlen(st); i++, m++) {
		const char *mname = btf__name_by_offset(btf, m->name_off);
		size_t off = btf_member_bit_offset(st, i) / 8;

		if (!mname || strcmp(mname, member) != 0)
			continue;
		if (off + len > size)
			break;
		return data + off;
	}
	err("%s: struct " CC_STRUCT " in the object has no usable .%s "
	    "member", t->path, member);
	return NULL;
}

int cc_add_ecn_flags(struct cc_target *t, uint32_t flags)
{
	uint32_t *f = (uint32_t *)st_ops_member(t, "flags", sizeof(*f));

	if (!f)
		return -EINVAL;
	*f |= flags;
	t->ecn_flags = flags;
	return 0;
}

/* Read the CC's name into t->obj_name; rename it to as_name if given. */
static int st_ops_cc_name(struct cc_target *t, const char *as_name)
{
	const char *map_name = bpf_map__name(t->st_map);
	char *field = st_ops_member(t, "name", CC_NAME_MAX + 1);
	size_t n;

	if (!field)
		return -EINVAL;
	n = strnlen(field, CC_NAME_MAX + 1);
	if (n == 0) {
		err("%s: the congestion control in map %s has an empty .name",
		    t->path, map_name);
		return -EINVAL;
	}
	if (n > CC_NAME_MAX) {
		err("%s: the .name of map %s is longer than %d characters; the "
		    "kernel would refuse it", t->path, map_name, CC_NAME_MAX);
		return -EINVAL;
	}
	memcpy(t->obj_name, field, n);
	t->obj_name[n] = '\0';
	if (!as_name) {
		memcpy(t->name, t->obj_name, n + 1);
		return 0;
	}
	if (!valid_cc_name(as_name) || strlen(as_name) > CC_NAME_MAX) {
		err("--name %s: a congestion control name is 1 to %d of letters, "
		    "digits, '_', '-', '.'", as_name, CC_NAME_MAX);
		return -EINVAL;
	}
	memset(field, 0, CC_NAME_MAX + 1);
	memcpy(field, as_name, strlen(as_name));
	snprintf(t->name, sizeof(t->name), "%s", as_name);
	return 0;
}

int cc_object_path(char *out, size_t len, const char *name)
{
	if (cc_build_running() == CC_BUILD_TX_START &&
	    snprintf(out, len, "%s/" CC_BUILD_TX_START_DIR "/%s" OBJ_SUFFIX,
		     g_opts.objdir, name) < (int)len &&
	    access(out, F_OK) == 0) {
		dbg("%s: the kernel has cwnd_event_tx_start: %s", name, out);
		return 0;
	}
	return snprintf(out, len, "%s/%s" OBJ_SUFFIX, g_opts.objdir, name) <
	       (int)len ? 0 : -1;
}

/*
 * What is wrong with path as a BPF object, said before libbpf's parser gets
 * it (whose answer to a text file is "Unknown error 4001"): 0, or -errno
 * after a message.
 */
static int check_object_file(const char *path)
{
	unsigned char ident[EI_NIDENT];
	Elf64_Ehdr eh;
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		err("cannot open BPF object %s: %s", path, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		err("%s is not a BPF object: it is %s", path,
		    S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
		close(fd);
		return -EINVAL;
	}
	n = read(fd, &eh, sizeof(eh));
	close(fd);
	memcpy(ident, eh.e_ident, sizeof(ident));
	if (n < (ssize_t)SELFMAG || memcmp(ident, ELFMAG, SELFMAG)) {
		err("%s is not a BPF object: %s", path, n == 0 ? "it is empty" :
		    "it is not an ELF file (objects are built by `clang -target "
		    "bpf`, e.g. bpf/NAME.bpf.o)");
		return -EINVAL;
	}
	if (n < (ssize_t)sizeof(eh) || ident[EI_CLASS] != ELFCLASS64) {
		err("%s is not a BPF object: %s", path, n < (ssize_t)sizeof(eh) ?
		    "it ends inside its ELF header (truncated)" :
		    "it is a 32-bit ELF file; BPF objects are 64-bit");
		return -EINVAL;
	}
	if (eh.e_machine != EM_BPF) {
		err("%s is not a BPF object: it is an ELF file for machine %u, "
		    "not BPF (%u)", path, eh.e_machine, EM_BPF);
		return -EINVAL;
	}
	if (eh.e_shoff == 0 || eh.e_shoff > (uint64_t)st.st_size ||
	    (uint64_t)eh.e_shnum * eh.e_shentsize > (uint64_t)st.st_size - eh.e_shoff) {
		err("%s is not a usable BPF object: its section table lies beyond "
		    "its end (%lld bytes): truncated? rebuild it", path,
		    (long long)st.st_size);
		return -EINVAL;
	}
	return 0;
}

/*
 * An object whose own .flags ask for AccECN (bbr3_l4s) loads only where the
 * kernel has the AccECN congestion-control flags (Linux 6.18): elsewhere
 * the kernel would refuse .flags with a bare EINVAL. -EOPNOTSUPP after a
 * message; `load all` passes over such an object.
 */
static int check_object_accecn(struct cc_target *t)
{
	uint32_t *f = (uint32_t *)st_ops_member(t, "flags", sizeof(*f));

	if (!f || !(*f & TCP_CONG_NEEDS_ACCECN) || kernel_has_accecn())
		return 0;
	err("%s: %s asks for AccECN (.flags 0x%x), which this kernel does not "
	    "have (struct tcp_sock has no received_ce in its BTF; AccECN came "
	    "with Linux 6.18): not loaded", t->path, t->obj_name, *f);
	return -EOPNOTSUPP;
}

/* Read the object file at path into t->obj (nothing in the kernel yet). */
static int cc_open_file(struct cc_target *t, const char *path, const char *want_name)
{
	int ret;

	if (snprintf(t->path, sizeof(t->path), "%s", path) >= (int)sizeof(t->path)) {
		err("object path too long: %s", path);
		return -ENAMETOOLONG;
	}
	if (access(path, R_OK) != 0) {
		ret = -errno;
		if (want_name)
			err("%s: object not found: %s: %s", want_name, path,
			    strerror(errno));
		else
			err("object not found: %s: %s", path, strerror(errno));
		return ret;
	}
	ret = check_object_file(path);
	if (ret)
		return ret;
	t->obj = bpf_object__open_file(path, NULL);
	if (!t->obj) {
		char why[128];

		ret = -errno;
		libbpf_strerror(ret, why, sizeof(why));
		err("cannot open BPF object %s: %s%s", path, why,
		    ret <= -__LIBBPF_ERRNO__START ? " (a truncated or damaged "
		    "object file? rebuild it)" : "");
		return ret;
	}
	return 0;
}

/* The struct_ops map to register: the one named want_name, else the only
 * one. Only it is created: another struct_ops map of the same object
 * would be loaded for nothing and dropped again at exit. */
static int cc_choose_map(struct cc_target *t, const char *want_name)
{
	struct bpf_map *map, *chosen = NULL, *last = NULL;
	int nst = 0;

	bpf_object__for_each_map(map, t->obj) {
		if (bpf_map__type(map) != BPF_MAP_TYPE_STRUCT_OPS)
			continue;
		nst++;
		last = map;
		if (want_name && strcmp(bpf_map__name(map), want_name) == 0)
			chosen = map;
	}
	if (nst == 0) {
		err("%s: no struct_ops map: not a congestion control object", t->path);
		return -ENOENT;
	}
	if (!chosen && nst > 1) {
		err("%s: %d struct_ops maps and none named %s; name the one to load",
		    t->path, nst, want_name ? want_name : "(none given)");
		return -EINVAL;
	}
	t->st_map = chosen = chosen ? chosen : last;
	bpf_object__for_each_map(map, t->obj)
		if (bpf_map__type(map) == BPF_MAP_TYPE_STRUCT_OPS && map != chosen)
			bpf_map__set_autocreate(map, false);
	if (!(bpf_map__map_flags(chosen) & BPF_F_LINK)) {
		err("%s: struct_ops map %s is in SEC(\"" ST_OPS_SEC "\"); bbrctl "
		    "needs SEC(\"" ST_OPS_LINK_SEC "\") so that the registration "
		    "can be pinned", t->path, bpf_map__name(chosen));
		return -EINVAL;
	}
	return 0;
}

/* The name the CC registers under must be usable here and be the one asked for. */
static int cc_check_name(const struct cc_target *t, const char *want_name)
{
	if (!valid_cc_name(t->name)) {
		err("%s: congestion control name \"%s\" is not usable as a "
		    "directory name (letters, digits, '_', '-', '.')", t->path, t->name);
		return -EINVAL;
	}
	if (!strcmp(t->name, "all")) {
		err("%s: \"all\" cannot be a congestion control's name: `bbrctl "
		    "unload all` means every one of them (--name another)", t->path);
		return -EINVAL;
	}
	if (pin_name_reserved(t->name)) {
		err("%s: \"%s\" names one of bbrctl's own directories under "
		    PIN_ROOT "; register the congestion control under another "
		    "name (--name)", t->path, t->name);
		return -EINVAL;
	}
	if (want_name && strcmp(t->obj_name, want_name) != 0) {
		err("%s: the congestion control in it is named \"%s\", not \"%s\"",
		    t->path, t->obj_name, want_name);
		return -EINVAL;
	}
	if (strcmp(t->obj_name, bpf_map__name(t->st_map)) != 0)
		warn("%s: map %s registers a congestion control named %s; by "
		     "convention the two names are equal", t->path,
		     bpf_map__name(t->st_map), t->obj_name);
	return 0;
}

/* The object's state iterator, socket storage and trace maps, named after
 * its own CC name; each optional, but the trace maps come as a pair and
 * an iterator needs the storage. */
static int cc_find_companions(struct cc_target *t)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "dump_%s_state", t->obj_name);
	t->iter_prog = bpf_object__find_program_by_name(t->obj, buf);
	snprintf(buf, sizeof(buf), "%s_trace_rb", t->obj_name);
	t->trace_rb = bpf_object__find_map_by_name(t->obj, buf);
	snprintf(buf, sizeof(buf), "%s_trace_ctl", t->obj_name);
	t->trace_ctl = bpf_object__find_map_by_name(t->obj, buf);
	snprintf(buf, sizeof(buf), "%s_sk_stor", t->obj_name);
	t->stor_map = bpf_object__find_map_by_name(t->obj, buf);
	if (!t->trace_rb != !t->trace_ctl) {
		err("%s: has only one of the maps %s_trace_rb and %s_trace_ctl",
		    t->path, t->obj_name, t->obj_name);
		return -EINVAL;
	}
	if (t->iter_prog && !t->stor_map) {
		err("%s: has iterator dump_%s_state but no map %s to attach it to",
		    t->path, t->obj_name, buf);
		return -EINVAL;
	}
	if (t->iter_prog && bpf_program__type(t->iter_prog) != BPF_PROG_TYPE_TRACING) {
		err("%s: dump_%s_state is not an iterator program "
		    "(SEC(\"iter/tcp\"))", t->path, t->obj_name);
		return -EINVAL;
	}
	return 0;
}

int cc_open(struct cc_target *t, const char *path, const char *want_name,
	    const char *as_name)
{
	int ret;

	memset(t, 0, sizeof(*t));
	ret = cc_open_file(t, path, want_name);
	if (ret)
		return ret;
	ret = cc_choose_map(t, want_name);
	if (!ret)
		ret = st_ops_cc_name(t, as_name);
	if (!ret)
		ret = check_object_accecn(t);
	if (!ret)
		ret = cc_check_name(t, want_name);
	if (!ret)
		ret = cc_find_companions(t);
	if (ret) {
		bpf_object__close(t->obj);
		t->obj = NULL;
		return ret;
	}
	dbg("%s: congestion control %s (%s in the object), map %s, iterator %s",
	    path, t->name, t->obj_name, bpf_map__name(t->st_map),
	    t->iter_prog ? bpf_program__name(t->iter_prog) : "none");
	return 0;
}

static void explain_attach_error(const struct cc_target *t, int e)
{
	switch (e) {
	case EEXIST:
		err("%s: the kernel refused to register it: a congestion "
		    "control of that name is already registered", t->name);
		break;
	case EINVAL:
		err("%s: the kernel refused to register it (EINVAL): a required "
		    "op is missing (ssthresh, undo_cwnd, cong_avoid or "
		    "cong_control), .flags has unknown bits, or the name is "
		    "invalid", t->name);
		break;
	default:
		err("%s: registering the congestion control failed: %s",
		    t->name, strerror(e));
	}
}

/*
 * A map already pinned at path (by an earlier load) is reused only if it
 * has this object's layout. libbpf would refuse a different one with
 * "parameter mismatch"; say instead which build left it there and what to
 * do. 0 when nothing is pinned or it matches.
 */
static int shared_pin_compatible(struct bpf_map *map, int dfd, const char *name,
				 const char *path)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd, ret;

	fd = pt_obj_get(dfd, name);
	if (fd == -ELOOP) {
		err("refusing to use %s: it is a symbolic link", path);
		return -EPERM;
	}
	if (fd < 0)
		return 0;		/* not pinned yet: this load pins it */
	ret = bpf_map_get_info_by_fd(fd, &info, &len);
	close(fd);
	if (ret)
		return 0;		/* let libbpf say what is wrong */
	if (info.type == bpf_map__type(map) &&
	    info.key_size == bpf_map__key_size(map) &&
	    info.value_size == bpf_map__value_size(map) &&
	    info.max_entries == bpf_map__max_entries(map) &&
	    info.map_flags == bpf_map__map_flags(map))
		return 0;
	err("%s is pinned with another layout (map type %s, value %u bytes; this "
	    "build's: %s, %u bytes): it belongs to a different build of bbr-bpf "
	    "that still runs. Unload that build's CCs and detach its ETS "
	    "(`bbrctl unload all`, `bbrctl detach --cgroup ...` with that build's "
	    "bbrctl), then load again",
	    path, libbpf_bpf_map_type_str(info.type), info.value_size,
	    libbpf_bpf_map_type_str(bpf_map__type(map)), bpf_map__value_size(map));
	return -EEXIST;
}

/*
 * The maps an object shares with others (PIN_SHARED_MAPS: bbr_swift reads
 * the ETS program's socket storage) are pinned, or reused, at
 * PIN_SHARED/<name>. bbrctl sets these paths itself; the objects declare
 * no pinning, so a plain `bpftool struct_ops register` pins nothing by
 * name at the bpffs root. libbpf pins them through the verified directory's
 * fd (pt_fd_path()), which stays open until bbrctl exits.
 */
int shared_map_pins(struct bpf_object *obj)
{
	static const char *const shared[] = PIN_SHARED_MAPS;
	static int shared_dfd = -1;
	char p[PATH_MAX], fdp[PATH_MAX];
	struct bpf_map *map;
	bool any = false;
	int ret;

	bpf_object__for_each_map(map, obj)
		for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++)
			if (!strcmp(bpf_map__name(map), shared[i]))
				any = true;
	if (!any)
		return 0;
	if (shared_dfd < 0)
		shared_dfd = pt_dir(PIN_SHARED_DIR, PT_CREATE);
	if (shared_dfd < 0)
		return shared_dfd;
	bpf_object__for_each_map(map, obj) {
		for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
			if (strcmp(bpf_map__name(map), shared[i]))
				continue;
			snprintf(p, sizeof(p), "%s/%s", PIN_SHARED, shared[i]);
			ret = shared_pin_compatible(map, shared_dfd, shared[i], p);
			if (ret)
				return ret;
			ret = bpf_map__set_pin_path(map, pt_fd_path(shared_dfd,
						    shared[i], fdp, sizeof(fdp)));
			if (ret) {
				err("%s: setting the pin path %s: %s",
				    bpf_map__name(map), p, strerror(-ret));
				return ret;
			}
		}
	}
	return 0;
}

/* Pin link at dfd/file; -errno after a message naming what it is. */
static int pin_at(const struct cc_target *t, struct bpf_link *link,
		  int dfd, const char *file, const char *what)
{
	int ret = pt_pin(bpf_link__fd(link), dfd, file);

	if (ret)
		err("%s: pinning the %s at " PIN_CC_FMT "/%s failed: %s", t->name,
		    what, t->name, file, strerror(-ret));
	return ret;
}

/* The object into the kernel, with the shared maps it reuses; -errno after
 * a message. */
static int cc_load_obj(struct cc_target *t)
{
	int ret = shared_map_pins(t->obj);

	if (ret)
		return ret;
	if (!bpf_object__load(t->obj))
		return 0;
	ret = -errno;
	err("%s: loading %s into the kernel failed: %s%s", t->name,
	    t->path, strerror(-ret),
	    ret == -EACCES || ret == -EINVAL || ret == -E2BIG ?
	    " (see the libbpf and verifier messages above)" : "");
	if (ret == -EINVAL && t->ecn_flags)
		err("--ecn: a kernel without the AccECN congestion control "
		     "flags refuses .flags 0x%x (EINVAL); try --ecn classic",
		     t->ecn_flags);
	return ret;
}

/* A new directory of our own (bbrctl_lock() keeps other bbrctl runs out
 * meanwhile), under a pin root nobody else can write: its fd, or -errno. */
static int cc_make_dir(struct cc_target *t)
{
	int root = pt_root(PT_CREATE), dfd;

	if (root < 0)
		return root;
	dfd = pt_subdir(root, PIN_ROOT, t->name, PT_CREATE | PT_EXCL);
	close(root);
	if (dfd < 0) {
		if (dfd == -EEXIST)
			err("%s: already loaded by bbrctl (" PIN_CC_FMT " exists); "
			    "run `bbrctl unload %s` first", t->name, t->name, t->name);
		pt_remove_root_if_empty();
		return dfd;
	}
	t->dir_created = true;
	return dfd;
}

/* The state iterator attached and pinned in dfd. */
static int cc_pin_iter(struct cc_target *t, int dfd)
{
	int ret;

	/* a TCP socket iterator: no map to bind */
	t->iter_link = bpf_program__attach_iter(t->iter_prog, NULL);
	if (!t->iter_link) {
		ret = -errno;
		err("%s: attaching iterator %s failed: %s", t->name,
		    bpf_program__name(t->iter_prog), strerror(-ret));
		return ret;
	}
	ret = pin_at(t, t->iter_link, dfd, PIN_ITER, "state iterator");
	if (!ret)
		t->iter_pinned = true;
	return ret;
}

/* Register: the struct_ops link, then the iterator and trace maps, pinned
 * in dfd; -errno after a message (the caller rolls back). */
static int cc_register(struct cc_target *t, int dfd)
{
	int ret;

	t->link = bpf_map__attach_struct_ops(t->st_map);
	if (!t->link) {
		ret = -errno;
		explain_attach_error(t, -ret);
		return ret;
	}
	ret = pin_at(t, t->link, dfd, PIN_LINK, "struct_ops link");
	if (ret)
		return ret;
	t->link_pinned = true;
	if (t->iter_prog && (ret = cc_pin_iter(t, dfd)))
		return ret;
	ret = trace_pin_maps(t, dfd);
	if (ret)
		return ret;
	/* Registration is synchronous; this only catches the impossible. */
	if (cc_wait_available(t->name, true, 200) != 1) {
		err("%s: attached, but it does not appear in %s", t->name,
		    PROC_AVAIL_CC);
		return -ENOENT;
	}
	return 0;
}

int cc_attach(struct cc_target *t)
{
	int ret, dfd;

	ret = cc_load_obj(t);
	if (ret)
		return ret;
	dfd = cc_make_dir(t);
	if (dfd < 0)
		return dfd;
	ret = cc_register(t, dfd);
	close(dfd);
	if (ret)
		cc_rollback(t);
	return ret;
}

void cc_rollback(struct cc_target *t)
{
	int dfd = t->dir_created ? pt_dir(t->name, 0) : -1;
	int root, ret;

	if (t->iter_pinned && dfd >= 0 && (ret = pt_unlink(dfd, PIN_ITER)))
		warn("%s: removing the state iterator pin failed: %s", t->name,
		     strerror(-ret));
	t->iter_pinned = false;
	if (t->iter_link)
		bpf_link__destroy(t->iter_link);
	t->iter_link = NULL;

	if (t->link_pinned && dfd >= 0 && (ret = pt_unlink(dfd, PIN_LINK)))
		warn("%s: removing the link pin failed: %s", t->name,
		     strerror(-ret));
	t->link_pinned = false;
	if (t->link) {
		/* Unregister now rather than when the fd happens to close. */
		if (bpf_link__detach(t->link) && errno != EOPNOTSUPP)
			dbg("%s: link detach: %s", t->name, strerror(errno));
		bpf_link__destroy(t->link);
	}
	t->link = NULL;

	if (t->dir_created && dfd >= 0) {
		if (t->trace_pinned)
			trace_unpin_maps(dfd);
		t->trace_pinned = false;
		root = pt_root(0);
		if (root >= 0 && (ret = pt_rmdir(root, t->name)))
			warn("cannot remove " PIN_CC_FMT ": %s", t->name,
			     strerror(-ret));
		if (root >= 0)
			close(root);
		pt_remove_root_if_empty();
	}
	if (dfd >= 0)
		close(dfd);
	t->dir_created = false;
}

void cc_close(struct cc_target *t)
{
	/* After a successful attach the pins keep everything alive: let go
	 * of our references without detaching. */
	if (t->iter_link) {
		bpf_link__disconnect(t->iter_link);
		bpf_link__destroy(t->iter_link);
		t->iter_link = NULL;
	}
	if (t->link) {
		bpf_link__disconnect(t->link);
		bpf_link__destroy(t->link);
		t->link = NULL;
	}
	if (t->obj)
		bpf_object__close(t->obj);
	t->obj = NULL;
}

/* Remove dfd/file (of the directory dir); ENOENT is fine. */
static int remove_pin(int dfd, const char *dir, const char *file)
{
	int ret = pt_unlink(dfd, file);

	if (ret)
		err("cannot remove %s/%s: %s", dir, file, strerror(-ret));
	return ret;
}

/*
 * The verified directory of the CC name, or -ENOENT after saying it is not
 * loaded (-EPERM after a refusal of an untrusted tree).
 */
static int loaded_dir(const char *name, bool quiet)
{
	int root, dfd;

	root = pt_root(PT_QUIET);
	if (root == -ENOENT)
		dfd = -ENOENT;
	else if (root < 0)
		return root;
	else {
		dfd = pt_subdir(root, PIN_ROOT, name, PT_QUIET);
		close(root);
	}
	if (dfd != -ENOENT || quiet)
		return dfd;
	if (cc_available(name) == 1)
		err("%s is not loaded by bbrctl (no " PIN_CC_FMT "); it is "
		    "registered by the kernel or another loader, and bbrctl "
		    "leaves it alone", name, name);
	else
		err("%s is not loaded (no " PIN_CC_FMT ")", name, name);
	return -ENOENT;
}

/* Detach the CC's link (dir: its pin directory, for messages): the id of
 * its struct_ops map, 0 if unknown. */
static uint32_t unload_detach(int dfd, const char *name, const char *dir)
{
	struct bpf_link_info li;
	__u32 li_len = sizeof(li);
	uint32_t map_id = 0;
	int fd = pt_obj_get(dfd, PIN_LINK);

	if (fd < 0) {
		if (fd != -ENOENT)
			warn("%s: cannot open %s/%s: %s; removing the pin anyway",
			     name, dir, PIN_LINK, strerror(-fd));
		return 0;
	}
	memset(&li, 0, sizeof(li));
	if (bpf_link_get_info_by_fd(fd, &li, &li_len) == 0 &&
	    li.type == BPF_LINK_TYPE_STRUCT_OPS)
		map_id = li.struct_ops.map_id;
	/* Detach explicitly: a pin is not the only possible holder of the
	 * link, and unload must unregister regardless. */
	if (bpf_link_detach(fd) != 0 && errno != EOPNOTSUPP &&
	    errno != ENOLINK && errno != EINVAL)
		warn("%s: detaching the link failed: %s; removing the "
		     "pin anyway", name, strerror(errno));
	close(fd);
	return map_id;
}

/* The pins bbrctl made in the CC's directory. */
static int unload_remove_pins(int dfd, const char *dir)
{
	int ret = remove_pin(dfd, dir, PIN_ITER);

	if (!ret)
		ret = remove_pin(dfd, dir, PIN_TRACE_RB);
	if (!ret)
		ret = remove_pin(dfd, dir, PIN_TRACE_CTL);
	if (!ret)
		ret = remove_pin(dfd, dir, PIN_LINK);
	return ret;
}

/* The CC's directory, emptied. */
static int unload_rmdir(const char *name, const char *dir)
{
	int root = pt_root(0), ret;

	if (root < 0)
		return root;
	ret = pt_rmdir(root, name);
	close(root);
	if (ret == -ENOTEMPTY)
		err("%s: %s holds files bbrctl did not create; the "
		    "congestion control is unregistered but the directory "
		    "is left in place", name, dir);
	else if (ret)
		err("cannot remove %s: %s", dir, strerror(-ret));
	return ret;
}

int cc_unload_pinned(const char *name)
{
	char dir[PATH_MAX];
	uint32_t map_id;
	int ret, dfd;

	if (!valid_cc_name(name)) {
		err("invalid congestion control name \"%s\"", name);
		return -EINVAL;
	}
	snprintf(dir, sizeof(dir), PIN_CC_FMT, name);
	dfd = loaded_dir(name, false);
	if (dfd < 0)
		return dfd;
	map_id = unload_detach(dfd, name, dir);
	ret = unload_remove_pins(dfd, dir);
	close(dfd);
	if (!ret)
		ret = unload_rmdir(name, dir);
	if (ret)
		return ret;
	pt_remove_root_if_empty();
	if (cc_wait_available(name, false, UNLOAD_POLL_MS) == 1) {
		err("%s: pins removed, but it is still in %s after %d ms "
		    "(another process holds the link?)", name, PROC_AVAIL_CC,
		    UNLOAD_POLL_MS);
		return -EBUSY;
	}
	if (map_id)
		printf("unloaded %s (struct_ops map id %u)\n", name, map_id);
	else
		printf("unloaded %s (stale pins removed)\n", name);
	return 0;
}

/* NAME... of load and unload: valid names, and `all` only alone. */
static bool names_not_all(const char *cmd, char **names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], "all") == 0) {
			err("%s: `all` must be the only argument", cmd);
			return false;
		}
	return valid_cc_names(cmd, names, n);
}

/* ---- load: the command -------------------------------------------------------- */

static bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n > m && strcmp(s + n - m, suf) == 0;
}

/* NAMEs of the NAME.bpf.o files in dir, sorted. */
static int objdir_names(const char *dir, char ***out)
{
	char **names = NULL;
	struct dirent **ents = NULL;
	int n, cnt = 0;

	*out = NULL;
	n = scandir(dir, &ents, NULL, alphasort);
	if (n < 0)
		return -errno;
	names = calloc(n ? n : 1, sizeof(*names));
	for (int i = 0; i < n; i++) {
		const char *d = ents[i]->d_name;

		if (names && has_suffix(d, OBJ_SUFFIX) && d[0] != '.') {
			names[cnt] = strndup(d, strlen(d) - strlen(OBJ_SUFFIX));
			if (names[cnt])
				cnt++;
		}
		free(ents[i]);
	}
	free(ents);
	if (!names)
		return -ENOMEM;
	*out = names;
	return cnt;
}

static void hint_objdir(void)
{
	char **names;
	int n = objdir_names(g_opts.objdir, &names);

	if (n < 0) {
		fprintf(stderr, "bbrctl: object directory %s: %s (set it with "
			"--objdir, or use --obj PATH)\n", g_opts.objdir,
			strerror(-n));
		return;
	}
	fprintf(stderr, "bbrctl: objects in %s:", g_opts.objdir);
	for (int i = 0; i < n; i++)
		fprintf(stderr, " %s", names[i]);
	fprintf(stderr, "%s\n", n ? "" : " (none)");
	free_names(names, n);
}

/* Is path an object with a struct_ops map? Quietly. */
static bool is_cc_object(const char *path)
{
	struct bpf_object *obj;
	struct bpf_map *map;
	bool yes = false;

	libbpf_set_print(NULL);
	obj = bpf_object__open_file(path, NULL);
	setup_libbpf_logging();
	if (!obj)
		return false;
	bpf_object__for_each_map(map, obj)
		if (bpf_map__type(map) == BPF_MAP_TYPE_STRUCT_OPS)
			yes = true;
	bpf_object__close(obj);
	return yes;
}

static int preflight(const struct cc_target *t)
{
	char dir[PATH_MAX];
	int avail = cc_available(t->name);
	int dfd;

	snprintf(dir, sizeof(dir), PIN_CC_FMT, t->name);
	/* In a tree bbrctl does not trust (someone else's pin root) this
	 * refuses and says to remove it: never to run `unload` there. */
	dfd = loaded_dir(t->name, true);
	if (dfd < 0 && dfd != -ENOENT)
		return -1;
	if (dfd >= 0) {
		close(dfd);
		if (avail == 1)
			err("%s is already loaded by bbrctl (%s); run `bbrctl "
			    "unload %s` first", t->name, dir, t->name);
		else
			err("%s has stale pins in %s but is not registered; run "
			    "`bbrctl unload %s` to clean up", t->name, dir, t->name);
		return -1;
	}
	if (avail == 1) {
		err("a congestion control named %s is already registered (a "
		    "kernel module or another loader, see %s); bbrctl will not "
		    "replace it", t->name, PROC_AVAIL_CC);
		return -1;
	}
	if (avail < 0) {
		err("cannot read %s", PROC_AVAIL_CC);
		return -1;
	}
	return 0;
}

static uint32_t map_id_of(struct bpf_map *map)
{
	struct bpf_map_info mi;
	__u32 len = sizeof(mi);

	memset(&mi, 0, sizeof(mi));
	if (bpf_map_get_info_by_fd(bpf_map__fd(map), &mi, &len))
		return 0;
	return mi.id;
}

/* The usage errors of load's arguments: EXIT_USAGE after a message, else 0. */
static int load_usage(const struct cmd_opts *o, char **args, int nargs, bool all)
{
	if (nargs == 0 && o->nobjs == 0) {
		err("load: name a congestion control, `all`, or --obj PATH");
		return EXIT_USAGE;
	}
	if (all && o->nobjs) {
		err("load: `all` and --obj do not go together");
		return EXIT_USAGE;
	}
	if (!all && !names_not_all("load", args, nargs))
		return EXIT_USAGE;
	if (o->nobjs && nargs && o->nobjs != nargs) {
		err("load: with --obj, give either no NAMEs or one NAME per --obj");
		return EXIT_USAGE;
	}
	if (o->ecn_flags && !o->name) {
		err("load: --ecn registers a copy under a name of its own: add "
		    "--name NEW (e.g. --name bbr3_acc --ecn accecn bbr3)");
		return EXIT_USAGE;
	}
	if (o->name && (all || o->nobjs + (o->nobjs ? 0 : nargs) != 1)) {
		err("load: --name registers one congestion control: give one NAME "
		    "or one --obj");
		return EXIT_USAGE;
	}
	return 0;
}

/* Whether this kernel and process can load at all; a message if not. */
static bool load_possible(const struct cmd_opts *o)
{
	if (check_privileges("load") || check_kernel_btf() ||
	    check_struct_ops_cc())
		return false;
	if ((o->ecn_flags & TCP_CONG_NEEDS_ACCECN) && !kernel_has_accecn()) {
		err("load: --ecn accecn: this kernel has no AccECN (struct tcp_sock "
		    "has no received_ce in its BTF; AccECN came with Linux 6.18): "
		    "use --ecn classic");
		return false;
	}
	return true;
}

/* Open one object into t (and give it --ecn's flags). */
static int load_open_one(const struct cmd_opts *o, struct cc_target *t,
			 const char *path, const char *want)
{
	int e = cc_open(t, path, want, o->name);

	if (e)
		return e;
	return o->ecn_flags ? cc_add_ecn_flags(t, o->ecn_flags) : 0;
}

/* Open the --obj objects; with as many NAMEs, NAME i selects the map of
 * object i. The number opened in *nt; -1 on failure. */
static int load_open_objs(const struct cmd_opts *o, char **args, int nargs,
			  struct cc_target *t, int *nt)
{
	for (int i = 0; i < o->nobjs; i++) {
		const char *want = i < nargs && o->nobjs == nargs ? args[i] : NULL;

		if (load_open_one(o, &t[*nt], o->objs[i], want))
			return -1;
		(*nt)++;
	}
	return 0;
}

/* Open the objects of names in the object directory (all: every CC object
 * there, passing over those this kernel cannot take). -1 on failure. */
static int load_open_names(const struct cmd_opts *o, char **names, int n, bool all,
			   struct cc_target *t, int *nt)
{
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];
		int e;

		if (cc_object_path(path, sizeof(path), names[i])) {
			err("object path too long");
			return -1;
		}
		if (all && !is_cc_object(path)) {
			dbg("%s: no congestion control, skipped", path);
			continue;
		}
		if (!all && access(path, F_OK) != 0) {
			err("%s: object not found: %s", names[i], path);
			hint_objdir();
			return -1;
		}
		e = load_open_one(o, &t[*nt], path, names[i]);
		if (all && e == -EOPNOTSUPP)
			continue;	/* said why; load the others */
		if (e)
			return -1;
		(*nt)++;
	}
	if (all && *nt == 0) {
		err("load all: no congestion control objects in %s", g_opts.objdir);
		return -1;
	}
	return 0;
}

/* A CC name given twice: EXIT_USAGE after a message, else 0. */
static int load_name_twice(const struct cc_target *t, int nt)
{
	for (int i = 0; i < nt; i++)
		for (int k = 0; k < i; k++)
			if (strcmp(t[i].name, t[k].name) == 0) {
				err("load: %s given twice (%s, %s)", t[i].name,
				    t[k].path, t[i].path);
				return EXIT_USAGE;
			}
	return 0;
}

/* Register and pin every target, all or nothing; no half-done state if
 * interrupted: signals wait until it is done. 0 if all were loaded. */
static int load_attach_all(struct cc_target *t, int nt)
{
	sigset_t block, old;
	int i, loaded = 0;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	sigprocmask(SIG_BLOCK, &block, &old);
	for (i = 0; i < nt && !cc_attach(&t[i]); i++)
		loaded++;
	if (loaded < nt) {
		for (i = loaded - 1; i >= 0; i--) {
			cc_rollback(&t[i]);
			info("%s: unloaded again (all or nothing)", t[i].name);
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return loaded < nt ? -1 : 0;
}

int cmd_load(const struct cmd_opts *o, char **args, int nargs)
{
	struct cc_target *t = NULL;
	char **names = NULL;
	int nnames = 0, nt = 0, i, ret = EXIT_FAIL;
	bool all = nargs == 1 && strcmp(args[0], "all") == 0;

	ret = load_usage(o, args, nargs, all);
	if (ret)
		return ret;
	if (!load_possible(o))
		return EXIT_FAIL;
	if (all) {
		nnames = objdir_names(g_opts.objdir, &names);
		if (nnames < 0) {
			err("load all: cannot read object directory %s: %s",
			    g_opts.objdir, strerror(-nnames));
			return EXIT_FAIL;
		}
	}
	ret = EXIT_FAIL;
	t = calloc((size_t)(all ? nnames : nargs) + o->nobjs, sizeof(*t));
	if (!t) {
		err("out of memory");
		goto out;
	}
	/* Open (parse) everything first: no kernel state changes yet. */
	if (o->nobjs ? load_open_objs(o, args, nargs, t, &nt) :
	    load_open_names(o, all ? names : args, all ? nnames : nargs, all, t, &nt))
		goto out;
	ret = load_name_twice(t, nt);
	if (ret)
		goto out;
	ret = EXIT_FAIL;
	for (i = 0; i < nt; i++)
		if (preflight(&t[i]))
			goto out;
	if (ensure_bpffs() || load_attach_all(t, nt))
		goto out;
	for (i = 0; i < nt; i++)
		printf("loaded %s from %s (struct_ops map id %u%s), pinned at "
		       "%s/%s\n", t[i].name, t[i].path, map_id_of(t[i].st_map),
		       t[i].iter_link ? ", state iterator" : "", PIN_ROOT,
		       t[i].name);
	ret = EXIT_OK;
out:
	for (i = 0; t && i < nt; i++)
		cc_close(&t[i]);
	free(t);
	free_names(names, nnames);
	return ret;
}

/* ---- unload: the command ------------------------------------------------------ */

/*
 * The maps pinned under PIN_ROOT/shared (PIN_SHARED_MAPS: the ETS storage)
 * are shared by the CC objects and the ETS sockops program.
 * Once no CC is loaded by bbrctl and no cgroup attachment remains, nothing
 * can use them any more: unpin them so an unload leaves bpffs clean.
 */
static void release_shared_pins(void)
{
	char **names = NULL;
	int n, root, dfd, ret;

	n = list_pinned_names(&names);
	free_names(names, n > 0 ? n : 0);
	if (n != 0)
		return;
	root = pt_root(PT_QUIET | PT_SILENT);
	if (root < 0)
		return;
	if (pt_rmdir(root, PIN_CGROUP_DIR))
		goto out;		/* attachments remain */
	dfd = pt_subdir(root, PIN_ROOT, PIN_SHARED_DIR, PT_QUIET);
	if (dfd >= 0) {
		n = pt_list(dfd, false, &names);
		for (int i = 0; i < n; i++)
			if ((ret = pt_unlink(dfd, names[i])))
				warn("cannot unpin %s/%s: %s", PIN_SHARED,
				     names[i], strerror(-ret));
		free_names(names, n > 0 ? n : 0);
		close(dfd);
		pt_rmdir(root, PIN_SHARED_DIR);
	}
out:
	close(root);
	pt_remove_root_if_empty();
}

/*
 * Unloading a CC that cgroups are attached to would leave their new
 * sockets on the namespace default without a word: refuse, naming them
 * (true), or with --force detach them first.
 */
static bool attached_refusal(const struct cmd_opts *o, char **names, int n)
{
	int found = 0;

	for (int i = 0; i < n; i++) {
		int k = attachments_of(names[i], o->force);

		if (k < 0)
			return true;	/* an untrusted tree: refused */
		found += k;
	}
	return found && !o->force;
}

int cmd_unload(const struct cmd_opts *o, char **args, int nargs)
{
	char **names = NULL;
	int n = 0, ret = EXIT_OK, i;
	bool all = nargs == 1 && strcmp(args[0], "all") == 0;

	if (nargs == 0) {
		err("unload: name a congestion control or `all`");
		return EXIT_USAGE;
	}
	if (!all && !names_not_all("unload", args, nargs))
		return EXIT_USAGE;
	if (check_privileges("unload"))
		return EXIT_FAIL;
	warn_if_bpffs_hidden();

	if (all) {
		n = list_pinned_names(&names);
		if (n < 0)
			return EXIT_FAIL;
		if (n == 0)
			printf("nothing to unload\n");
		if (attached_refusal(o, names, n)) {
			free_names(names, n);
			return EXIT_FAIL;
		}
		for (i = 0; i < n; i++)
			if (cc_unload_pinned(names[i]))
				ret = EXIT_FAIL;
		free_names(names, n);
		release_shared_pins();
		return ret;
	}
	/* Check every name first, so a typo unloads nothing. */
	for (i = 0; i < nargs; i++) {
		int dfd = loaded_dir(args[i], false);

		if (dfd >= 0)
			close(dfd);
		else
			ret = EXIT_FAIL;
	}
	if (ret != EXIT_OK || attached_refusal(o, args, nargs))
		return EXIT_FAIL;
	for (i = 0; i < nargs; i++)
		if (cc_unload_pinned(args[i]))
			ret = EXIT_FAIL;
	release_shared_pins();
	return ret;
}
