// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl: every access to the pin tree (PIN_ROOT on bpffs) goes through
 * here.
 *
 * bpffs is mode 1777, like /tmp: anyone may create PIN_ROOT before bbrctl
 * does, fill it with directories of their own, or plant symbolic links to
 * any directory on the machine. Root running bbrctl in such a tree would
 * read pins an attacker chose, and unlink or pin files wherever the links
 * point. So bbrctl never hands a path under PIN_ROOT to the kernel as a
 * string. It opens PIN_ROOT relative to the bpffs mount, then each
 * directory below relative to its verified parent, all with O_NOFOLLOW,
 * and accepts a directory only if fstat() of the open fd says it is a real
 * directory owned by root that nobody else may write. Inside a verified
 * directory nobody but root can add, rename or remove an entry; its
 * entries are opened, pinned, unlinked with the *at() calls relative to
 * its fd, and entries that are symbolic links are refused.
 *
 * libbpf's own path-taking calls (pinning an object's shared maps at load)
 * get /proc/self/fd/N/NAME, which the kernel resolves through the verified
 * directory fd N, never through PIN_ROOT's name.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC	0xcafe4a11
#endif

/* What is wrong with st as a directory bbrctl trusts; NULL if nothing. */
static const char *untrusted_why(const struct stat *st)
{
	if (S_ISLNK(st->st_mode))
		return "a symbolic link";
	if (!S_ISDIR(st->st_mode))
		return "not a directory";
	if (st->st_uid != 0)
		return "not owned by root";
	if (st->st_mode & 022)
		return "writable by group or others";
	return NULL;
}

static void refuse(const char *shown, const char *why)
{
	err("refusing to use %s: it is %s; bbrctl uses only pin directories "
	    "root owns and only root may write, and runs no command in a tree "
	    "someone else could have prepared (remove it with `rm -r %s`, which "
	    "follows no symbolic link, and run bbrctl again)", shown, why, shown);
}

/*
 * The directory name under the verified directory dfd (shown: its full
 * path, for messages), opened and verified: an fd, or -errno. Missing:
 * created with mode 0700 with PT_CREATE, else -ENOENT (quietly with
 * PT_QUIET). PT_EXCL: it must be new (-EEXIST, quietly).
 */
static int open_verified(int dfd, const char *name, const char *shown, int flags)
{
	bool loud = !(flags & PT_SILENT);
	struct stat st;
	const char *why;
	int fd, e;

	if (flags & PT_CREATE) {
		if (mkdirat(dfd, name, 0700) == 0)
			;
		else if (errno != EEXIST) {
			e = errno;
			err("cannot create %s: %s", shown, strerror(e));
			return -e;
		} else if (flags & PT_EXCL)
			return -EEXIST;
	}
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		e = errno;
		if (loud && (e != ENOENT || !(flags & PT_QUIET)))
			err("cannot stat %s: %s", shown, strerror(e));
		return -e;
	}
	why = untrusted_why(&st);
	if (why) {
		if (loud)
			refuse(shown, why);
		return -EPERM;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		err("cannot open %s: %s", shown, strerror(e));
		return -e;
	}
	/* what was opened, not what was looked at: the same unless someone
	 * swapped it in between (possible only in an untrusted parent) */
	if (fstat(fd, &st) || (why = untrusted_why(&st))) {
		if (loud)
			refuse(shown, why ? why : "unreadable");
		close(fd);
		return -EPERM;
	}
	return fd;
}

int pt_root(int flags)
{
	struct statfs sfs;
	int bfd, fd;

	bfd = open(BPFFS_MOUNT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bfd < 0) {
		if (!(flags & PT_QUIET) || errno != ENOENT)
			err("cannot open %s: %s", BPFFS_MOUNT, strerror(errno));
		return -ENOENT;
	}
	if (fstatfs(bfd, &sfs) || sfs.f_type != BPF_FS_MAGIC) {
		close(bfd);
		if (!(flags & PT_QUIET))
			err("no bpffs mounted at %s", BPFFS_MOUNT);
		return -ENOENT;
	}
	/* PIN_ROOT itself is never exclusive: several CCs share it */
	fd = open_verified(bfd, PIN_ROOT + sizeof(BPFFS_MOUNT), PIN_ROOT,
			   flags & ~PT_EXCL);
	close(bfd);
	return fd;
}

int pt_subdir(int dfd, const char *shown_parent, const char *name, int flags)
{
	char shown[PATH_MAX];

	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")) {
		err("bad pin directory name \"%s\"", name);
		return -EINVAL;
	}
	if (snprintf(shown, sizeof(shown), "%s/%s", shown_parent, name) >=
	    (int)sizeof(shown))
		return -ENAMETOOLONG;
	return open_verified(dfd, name, shown, flags);
}

int pt_dir(const char *rel, int flags)
{
	char shown[PATH_MAX], comp[NAME_MAX + 1];
	const char *p = rel, *slash;
	int fd, next;

	/* PT_EXCL applies to the last component only */
	fd = pt_root(rel && *rel ? flags & ~PT_EXCL : flags);
	if (fd < 0 || !rel || !*rel)
		return fd;
	snprintf(shown, sizeof(shown), "%s", PIN_ROOT);
	while (*p) {
		size_t n;

		slash = strchr(p, '/');
		n = slash ? (size_t)(slash - p) : strlen(p);
		if (n == 0 || n > NAME_MAX) {
			close(fd);
			err("bad pin directory %s", rel);
			return -EINVAL;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		next = pt_subdir(fd, shown, comp, slash ? flags & ~PT_EXCL : flags);
		close(fd);
		if (next < 0)
			return next;
		fd = next;
		if (strlen(shown) + 1 + n < sizeof(shown)) {
			strcat(shown, "/");
			strcat(shown, comp);
		}
		p += n + (slash ? 1 : 0);
	}
	return fd;
}

/* 0 if dfd/name is not a symbolic link (or is missing); -ELOOP if it is. */
static int not_a_link(int dfd, const char *name)
{
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	return S_ISLNK(st.st_mode) ? -ELOOP : 0;
}

int pt_obj_get(int dfd, const char *name)
{
	LIBBPF_OPTS(bpf_obj_get_opts, opts, .file_flags = BPF_F_PATH_FD,
		    .path_fd = dfd);
	int ret = not_a_link(dfd, name), fd;

	if (ret)
		return ret;
	fd = bpf_obj_get_opts(name, &opts);
	return fd < 0 ? -errno : fd;
}

int pt_pin(int fd, int dfd, const char *name)
{
	LIBBPF_OPTS(bpf_obj_pin_opts, opts, .file_flags = BPF_F_PATH_FD,
		    .path_fd = dfd);

	return bpf_obj_pin_opts(fd, name, &opts) ? -errno : 0;
}

bool pt_exists(int dfd, const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int pt_unlink(int dfd, const char *name)
{
	/* unlinkat() never follows a link: it removes the entry itself */
	return unlinkat(dfd, name, 0) && errno != ENOENT ? -errno : 0;
}

int pt_rmdir(int dfd, const char *name)
{
	return unlinkat(dfd, name, AT_REMOVEDIR) && errno != ENOENT ? -errno : 0;
}

void pt_remove_root_if_empty(void)
{
	struct statfs sfs;
	int bfd = open(BPFFS_MOUNT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (bfd < 0)
		return;
	/* only bbrctl's own root: a stranger's is refused, never removed */
	if (!fstatfs(bfd, &sfs) && sfs.f_type == BPF_FS_MAGIC) {
		int fd = open_verified(bfd, PIN_ROOT + sizeof(BPFFS_MOUNT),
				       PIN_ROOT, PT_QUIET | PT_SILENT);

		if (fd >= 0) {
			close(fd);
			unlinkat(bfd, PIN_ROOT + sizeof(BPFFS_MOUNT), AT_REMOVEDIR);
		}
	}
	close(bfd);
}

const char *pt_fd_path(int dfd, const char *name, char *buf, size_t len)
{
	if (snprintf(buf, len, "/proc/self/fd/%d/%s", dfd, name) >= (int)len)
		return NULL;
	return buf;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int pt_list(int dfd, bool dirs_only, char ***out)
{
	char **names = NULL;
	struct dirent *de;
	struct stat st;
	int n = 0, cap = 0, fd;
	DIR *d;

	*out = NULL;
	fd = dup(dfd);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		err("cannot read a pin directory: %s", strerror(errno));
		return -1;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (dirs_only && (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
				  !S_ISDIR(st.st_mode)))
			continue;
		if (n == cap) {
			char **nn;

			cap = cap ? cap * 2 : 8;
			nn = realloc(names, cap * sizeof(*names));
			if (!nn)
				goto oom;
			names = nn;
		}
		names[n] = strdup(de->d_name);
		if (!names[n])
			goto oom;
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	*out = names;
	return n;
oom:
	closedir(d);
	free_names(names, n);
	err("out of memory");
	return -1;
}
