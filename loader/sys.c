// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl: messages, privilege and kernel checks, bpffs, paths, clocks.
 */
#define _GNU_SOURCE	/* setns() */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "kfeat.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON	38
#endif
#ifndef CAP_BPF
#define CAP_BPF		39
#endif
#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC	0xcafe4a11
#endif

/* ---- messages ------------------------------------------------------------ */

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "bbrctl: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/* err(), warn(), info(), dbg(): one line on stderr with its prefix; dbg()
 * only with -v. Progress goes to stderr too, so stdout stays
 * machine-readable. */
#define MESSAGE_FN(name, prefix, min_verbose)				\
void name(const char *fmt, ...)						\
{									\
	va_list ap;							\
									\
	if (g_opts.verbose < (min_verbose))				\
		return;							\
	va_start(ap, fmt);						\
	vmsg(prefix, fmt, ap);						\
	va_end(ap);							\
}
MESSAGE_FN(err, "error: ", 0)
MESSAGE_FN(warn, "warning: ", 0)
MESSAGE_FN(info, "", 0)
MESSAGE_FN(dbg, "debug: ", 1)

/* libbpf's warnings (including verifier logs) always; the rest with -v/-vv. */
static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_INFO && g_opts.verbose < 1)
		return 0;
	if (level == LIBBPF_DEBUG && g_opts.verbose < 2)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void setup_libbpf_logging(void)
{
	libbpf_set_print(libbpf_log);
}

/* ---- privileges and kernel ------------------------------------------------ */

static int effective_caps(uint64_t *eff)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
		.pid = 0,
	};
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) != 0)
		return -errno;
	*eff = (uint64_t)data[0].effective | ((uint64_t)data[1].effective << 32);
	return 0;
}

static bool has_cap(uint64_t eff, int cap)
{
	return (eff >> cap) & 1;
}

int check_privileges(const char *cmd)
{
	uint64_t eff = 0;
	bool sys_admin, bpf, perfmon;
	char missing[96] = "";
	int ret;

	ret = effective_caps(&eff);
	if (ret) {
		err("%s: cannot read own capabilities: %s", cmd, strerror(-ret));
		return -1;
	}
	sys_admin = has_cap(eff, CAP_SYS_ADMIN);
	bpf = sys_admin || has_cap(eff, CAP_BPF);
	perfmon = sys_admin || has_cap(eff, CAP_PERFMON);
	if (bpf && perfmon)
		return 0;

	snprintf(missing, sizeof(missing), "%s%s%s", !bpf ? "CAP_BPF" : "",
		 !bpf && !perfmon ? " and " : "", !perfmon ? "CAP_PERFMON" : "");
	if (geteuid() != 0)
		err("%s: permission denied: bbrctl must run as root "
		    "(needs %s, or CAP_SYS_ADMIN)", cmd, missing);
	else
		err("%s: permission denied: running as root but %s (or "
		    "CAP_SYS_ADMIN) is not in the effective capability set "
		    "(dropped by capsh/setpriv or a container?)", cmd, missing);
	return -1;
}

int check_kernel_btf(void)
{
	if (access(VMLINUX_BTF, R_OK) == 0)
		return 0;
	err("%s: %s; struct_ops congestion controls need a kernel built "
	    "with CONFIG_DEBUG_INFO_BTF=y", VMLINUX_BTF, strerror(errno));
	return -1;
}

/*
 * Can this kernel register BPF congestion controls? It can if its BTF has
 * the struct_ops value type of tcp_congestion_ops, which the kernel
 * generates for every struct_ops it supports (net/ipv4/bpf_tcp_ca.c needs
 * CONFIG_BPF_JIT and CONFIG_BPF_SYSCALL with TCP). Without it the load
 * would fail deep inside libbpf with a less helpful ENOTSUP/ENOENT.
 */
#define STRUCT_OPS_CC_TYPE	"bpf_struct_ops_tcp_congestion_ops"

int check_struct_ops_cc(void)
{
	struct btf *btf;
	int id, e, nargs;

	btf = btf__parse(VMLINUX_BTF, NULL);
	if (!btf) {
		e = errno;
		err("%s: cannot read it as BTF (%s); struct_ops congestion "
		    "controls need a kernel built with CONFIG_DEBUG_INFO_BTF=y",
		    VMLINUX_BTF, strerror(e));
		return -1;
	}
	id = btf__find_by_name_kind(btf, STRUCT_OPS_CC_TYPE, BTF_KIND_STRUCT);
	nargs = cong_control_nargs(btf);
	btf__free(btf);
	if (id > 0 && nargs != CONG_CONTROL_ARGS) {
		/* e.g. Linux 6.1: cong_control(sk, rs), no ack and flag */
		err("this kernel cannot run bbr-bpf's congestion controls: its "
		    "tcp_congestion_ops.cong_control takes %d arguments, they need "
		    "the %d-argument cong_control(sk, ack, flag, rs) of Linux 6.10 "
		    "and later", nargs, CONG_CONTROL_ARGS);
		return -1;
	}
	if (id > 0)
		return 0;
	err("this kernel cannot register BPF congestion controls: no struct_ops "
	    "for tcp_congestion_ops (%s has no %s; it needs CONFIG_BPF_JIT and "
	    "CONFIG_BPF_SYSCALL, Linux 5.6 or later)", VMLINUX_BTF,
	    STRUCT_OPS_CC_TYPE);
	return -1;
}

/* ---- bpffs --------------------------------------------------------------- */

bool bpffs_mounted(void)
{
	struct statfs st;

	return statfs(BPFFS_MOUNT, &st) == 0 && st.f_type == BPF_FS_MAGIC;
}

/* Are we in the same mount namespace as PID 1? -1 if unknown. */
static int in_init_mntns(void)
{
	struct stat a, b;

	if (stat("/proc/self/ns/mnt", &a) != 0 || stat("/proc/1/ns/mnt", &b) != 0)
		return -1;
	return a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

/*
 * `ip netns exec NS` enters a private mount namespace with a fresh /sys,
 * hiding the host's bpffs. /proc/1/ns/mnt is not always readable, so also
 * look for our network namespace among the named ones in /run/netns.
 */
static bool in_private_view(void)
{
	struct stat self, st;
	struct dirent *de;
	char p[PATH_MAX];
	bool found = false;
	DIR *d;

	if (in_init_mntns() == 0)
		return true;
	if (stat("/proc/self/ns/net", &self) != 0)
		return false;
	d = opendir(NETNS_RUN_DIR);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (snprintf(p, sizeof(p), NETNS_RUN_DIR "/%s", de->d_name) >= (int)sizeof(p))
			continue;
		found = stat(p, &st) == 0 && st.st_ino == self.st_ino &&
			st.st_dev == self.st_dev;
	}
	closedir(d);
	return found;
}

void warn_if_bpffs_hidden(void)
{
	if (!bpffs_mounted() && in_private_view())
		warn("no bpffs at %s in this mount namespace, so nothing "
		     "loaded is visible (running under `ip netns exec`? use "
		     "`nsenter --net=/run/netns/NAME` instead)", BPFFS_MOUNT);
}

int ensure_bpffs(void)
{
	if (bpffs_mounted())
		return 0;
	/* A bpffs mounted in a private mount namespace (`ip netns exec`
	 * remounts /sys) dies with the namespace, and with it our pins and
	 * the congestion control. Refuse rather than load something that
	 * vanishes when this process exits. */
	if (in_private_view()) {
		err("no bpffs at %s in this mount namespace, and one mounted "
		    "here would vanish with it (running under `ip netns exec`? "
		    "use `nsenter --net=/run/netns/NAME` instead)", BPFFS_MOUNT);
		return -1;
	}
	if (mount("bpf", BPFFS_MOUNT, "bpf", 0, "mode=0700") != 0) {
		err("no bpffs at %s and mounting one failed: %s", BPFFS_MOUNT,
		    strerror(errno));
		return -1;
	}
	info("mounted bpffs at %s", BPFFS_MOUNT);
	return 0;
}

/* ---- names and the kernel's list of congestion controls ------------------ */

bool valid_cc_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > CC_NAME_MAX || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

/* Every one of names[0..n) a valid name? If not, say which, for cmd. */
bool valid_cc_names(const char *cmd, char **names, int n)
{
	for (int i = 0; i < n; i++) {
		if (!valid_cc_name(names[i])) {
			err("%s: invalid congestion control name \"%s\" (1-%d letters, "
			    "digits, '_', '-', '.')", cmd, names[i], CC_NAME_MAX);
			return false;
		}
	}
	return true;
}

int cc_available(const char *name)
{
	char buf[4096], *tok, *save = NULL;
	ssize_t n;
	int fd;

	fd = open(PROC_AVAIL_CC, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	for (tok = strtok_r(buf, " \t\n", &save); tok;
	     tok = strtok_r(NULL, " \t\n", &save))
		if (strcmp(tok, name) == 0)
			return 1;
	return 0;
}

int cc_wait_available(const char *name, bool want, int timeout_ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 20 * 1000 * 1000 };
	int waited = 0, cur;

	for (;;) {
		cur = cc_available(name);
		if (cur < 0 || cur == (int)want || waited >= timeout_ms)
			return cur;
		nanosleep(&ts, NULL);
		waited += 20;
	}
}

/* ---- paths ----------------------------------------------------------------- */

int path_join(char *buf, size_t len, const char *a, const char *b)
{
	int n = snprintf(buf, len, "%s/%s", a, b);

	if (n < 0 || (size_t)n >= len) {
		err("path too long: %s/%s", a, b);
		return -1;
	}
	return 0;
}

const char *resolve_objdir(void)
{
	static char dir[PATH_MAX];
	char exe[PATH_MAX], cand[PATH_MAX + 16], *slash;
	struct stat st;
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(cand, sizeof(cand), "%s/../bpf", exe);
			if (stat(cand, &st) == 0 && S_ISDIR(st.st_mode) &&
			    realpath(cand, dir))
				return dir;
			/* installed: PREFIX/sbin/bbrctl, PREFIX/lib/bbr-bpf */
			snprintf(cand, sizeof(cand), "%s/../lib/bbr-bpf", exe);
			if (stat(cand, &st) == 0 && S_ISDIR(st.st_mode) &&
			    realpath(cand, dir))
				return dir;
		}
	}
	return DEFAULT_OBJDIR;
}

bool pin_name_reserved(const char *name)
{
	static const char *const reserved[] = PIN_RESERVED;

	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (strcmp(name, reserved[i]) == 0)
			return true;
	return false;
}

int list_pinned_names(char ***out)
{
	char **names = NULL;
	int n, k = 0, root;

	*out = NULL;
	root = pt_root(PT_QUIET);
	if (root == -ENOENT)
		return 0;
	if (root < 0)
		return -1;
	n = pt_list(root, true, &names);
	close(root);
	/* Not congestion controls: cgroup attachments, ETS maps, ect1 */
	for (int i = 0; i < n; i++) {
		if (pin_name_reserved(names[i]))
			free(names[i]);
		else
			names[k++] = names[i];
	}
	*out = names;
	return n < 0 ? n : k;
}

void free_names(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* ---- clocks ---------------------------------------------------------------- */

int64_t boottime_ns_to_unix_ns(uint64_t boot_ns)
{
	struct timespec rt, bt;
	int64_t rt_ns, bt_ns;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_BOOTTIME, &bt);
	rt_ns = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
	bt_ns = (int64_t)bt.tv_sec * 1000000000 + bt.tv_nsec;
	return rt_ns - (bt_ns - (int64_t)boot_ns);
}

/* ISO 8601 local time with UTC offset, second resolution. */
void format_unix_ns(int64_t unix_ns, char *buf, size_t len)
{
	time_t secs = (time_t)(unix_ns / 1000000000);
	struct tm tm;

	if (!localtime_r(&secs, &tm) ||
	    strftime(buf, len, "%Y-%m-%dT%H:%M:%S%z", &tm) == 0)
		snprintf(buf, len, "@%lld", (long long)secs);
}

/* ---- every network namespace ----------------------------------------------- */

struct netns_seen {
	dev_t dev[1024];
	ino_t ino[1024];
	int n;
};

/* Enter the namespace behind path (once per namespace) and call fn there. */
static int netns_visit(struct netns_seen *seen, const char *path,
		       int (*fn)(void *ctx), void *ctx)
{
	struct stat st;
	int i, fd, ret;

	if (stat(path, &st) != 0)
		return 0;
	for (i = 0; i < seen->n; i++)
		if (seen->dev[i] == st.st_dev && seen->ino[i] == st.st_ino)
			return 0;
	if (seen->n == (int)(sizeof(seen->ino) / sizeof(seen->ino[0]))) {
		dbg("more than %d network namespaces: %s skipped", seen->n, path);
		return 0;
	}
	seen->dev[seen->n] = st.st_dev;
	seen->ino[seen->n++] = st.st_ino;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;	/* the process exited meanwhile */
	ret = setns(fd, CLONE_NEWNET) ? 0 : fn(ctx);
	close(fd);
	return ret;
}

int for_each_netns(int (*fn)(void *ctx), void *ctx)
{
	struct netns_seen *seen = calloc(1, sizeof(*seen));
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	char p[PATH_MAX];
	struct dirent *de;
	int ret = -1;
	DIR *d;

	if (!seen || self < 0) {
		err("cannot enumerate network namespaces: %s", strerror(errno));
		goto out;
	}
	ret = netns_visit(seen, "/proc/self/ns/net", fn, ctx);
	d = opendir(NETNS_RUN_DIR);
	while (!ret && d && (de = readdir(d))) {
		if (de->d_name[0] == '.' ||
		    snprintf(p, sizeof(p), NETNS_RUN_DIR "/%s", de->d_name) >= (int)sizeof(p))
			continue;
		ret = netns_visit(seen, p, fn, ctx);
	}
	if (d)
		closedir(d);
	d = opendir("/proc");
	while (!ret && d && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
		    snprintf(p, sizeof(p), "/proc/%s/ns/net", de->d_name) >= (int)sizeof(p))
			continue;
		ret = netns_visit(seen, p, fn, ctx);
	}
	if (d)
		closedir(d);
	if (setns(self, CLONE_NEWNET))
		warn("returning to bbrctl's own network namespace failed: %s",
		     strerror(errno));
out:
	if (self >= 0)
		close(self);
	free(seen);
	return ret;
}

/*
 * Enter the named network namespace /run/netns/NAME (ip netns) for the rest
 * of the run; 0, or -errno after a message that names cmd.
 */
int enter_netns(const char *cmd, const char *name)
{
	char p[PATH_MAX];
	int fd;

	if (strchr(name, '/') || path_join(p, sizeof(p), NETNS_RUN_DIR, name)) {
		err("%s: bad network namespace name \"%s\"", cmd, name);
		return -EINVAL;
	}
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err("%s: no network namespace %s (%s): %s", cmd, name, p,
		    strerror(errno));
		return -ENOENT;
	}
	if (setns(fd, CLONE_NEWNET)) {
		err("%s: entering network namespace %s failed: %s", cmd, name,
		    strerror(errno));
		close(fd);
		return -EPERM;
	}
	close(fd);
	return 0;
}

/*
 * BBRCTL_RUN_DIR holds the lock and bbrctl's event counters, which root
 * writes: like the pin tree, it is used only if it is a real directory
 * that root owns and nobody else may write, and its entries are opened
 * relative to that fd, never following a symbolic link.
 */
int run_dir_open(bool create)
{
	struct stat st;
	int fd;

	if (create && mkdir(BBRCTL_RUN_DIR, 0755) && errno != EEXIST) {
		int e = errno;

		err("cannot create %s: %s", BBRCTL_RUN_DIR, strerror(e));
		return -e;
	}
	fd = open(BBRCTL_RUN_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		if (e != ENOENT || create)
			err("cannot open %s: %s%s", BBRCTL_RUN_DIR, strerror(e),
			    e == ENOTDIR || e == ELOOP ? " (a symbolic link or "
			    "not a directory: refused)" : "");
		return -e;
	}
	if (fstat(fd, &st) || st.st_uid != 0 || (st.st_mode & 022)) {
		err("refusing to use %s: it is not a directory root owns and only "
		    "root may write (remove it and run bbrctl again)", BBRCTL_RUN_DIR);
		close(fd);
		return -EPERM;
	}
	return fd;
}

/*
 * BBRCTL_RUN_DIR/sub, under the same rules as BBRCTL_RUN_DIR itself: a
 * real directory (no symbolic link followed) that root owns and nobody
 * else may write; created first with create. An fd, or -errno (after a
 * message unless it just does not exist and create is false).
 */
int run_subdir_open(const char *sub, bool create)
{
	int rfd = run_dir_open(create), fd, e;
	struct stat st;

	if (rfd < 0)
		return rfd;
	if (create && mkdirat(rfd, sub, 0755) && errno != EEXIST) {
		e = errno;
		err("cannot create %s/%s: %s", BBRCTL_RUN_DIR, sub, strerror(e));
		close(rfd);
		return -e;
	}
	fd = openat(rfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	e = errno;
	close(rfd);
	if (fd < 0) {
		if (e != ENOENT || create)
			err("cannot open %s/%s: %s%s", BBRCTL_RUN_DIR, sub, strerror(e),
			    e == ENOTDIR || e == ELOOP ? " (a symbolic link or not a "
			    "directory: refused)" : "");
		return -e;
	}
	if (fstat(fd, &st) || st.st_uid != 0 || (st.st_mode & 022)) {
		err("refusing to use %s/%s: it is not a directory root owns and only "
		    "root may write (remove it and run bbrctl again)", BBRCTL_RUN_DIR, sub);
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* ---- the lock ------------------------------------------------------------------ */

/*
 * One bbrctl at a time changes pins, registrations and parameter sets:
 * parallel runs (ten `unload bbr3` at once) otherwise race on the same pins
 * and print errors for what another run just did. Held until exit.
 */
int bbrctl_lock(const char *cmd)
{
	struct timespec t0, t;
	bool told = false;
	int fd, rfd;

	rfd = run_dir_open(true);
	if (rfd < 0)
		return -1;
	fd = openat(rfd, BBRCTL_LOCK_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		    0600);
	close(rfd);
	if (fd < 0) {
		err("%s: cannot open the lock %s: %s", cmd, BBRCTL_LOCK,
		    strerror(errno));
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno != EWOULDBLOCK) {
			err("%s: lock %s: %s", cmd, BBRCTL_LOCK, strerror(errno));
			close(fd);
			return -1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= BBRCTL_LOCK_WAIT_S) {
			err("%s: another bbrctl has held %s for %d s; giving up",
			    cmd, BBRCTL_LOCK, BBRCTL_LOCK_WAIT_S);
			close(fd);
			return -1;
		}
		if (!told && t.tv_sec - t0.tv_sec >= 1) {
			info("%s: waiting for another bbrctl (%s)", cmd, BBRCTL_LOCK);
			told = true;
		}
		usleep(20000);
	}
	return 0;	/* fd stays open: the lock goes with the process */
}
