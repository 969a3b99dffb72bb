/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bbrctl: load, unload, list and inspect the project's BPF congestion
 * controls. Declarations shared by the loader's source files.
 */
#ifndef BBRCTL_H
#define BBRCTL_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"

/* The Debian package build gives its version (-DBBRCTL_VERSION=...). */
#ifndef BBRCTL_VERSION
#define BBRCTL_VERSION		"0.1"
#endif

/* bpffs layout: include/bbr_pins.h */
#include "bbr_pins.h"
/* cgroup v2 hierarchy: /sys/fs/cgroup when it is cgroup2, else the hybrid
 * layout's /sys/fs/cgroup/unified, else bbrctl mounts one there. */
#define CGROUP2_PURE		"/sys/fs/cgroup"
#define CGROUP2_HYBRID		"/sys/fs/cgroup/unified"

#define DEFAULT_OBJDIR		"/usr/local/lib/bbr-bpf"
#define OBJ_SUFFIX		".bpf.o"
#define VMLINUX_BTF		"/sys/kernel/btf/vmlinux"
#define NETNS_RUN_DIR		"/run/netns"	/* ip netns */
#define PROC_AVAIL_CC		"/proc/sys/net/ipv4/tcp_available_congestion_control"

#define CC_NAME_MAX		15	/* TCP_CA_NAME_MAX - 1 */

/* top --interval and trace --duration, in µs */
#define INTERVAL_DEFAULT_US	1000000ull
#define INTERVAL_MIN_US		100000ull
#define INTERVAL_MAX_US		3600000000ull
#define DURATION_MAX_US		(365 * 86400 * 1000000ull)

/* How long unload waits for the name to leave the available list. */
#define UNLOAD_POLL_MS		2000

/* Exit codes */
#define EXIT_OK			0
#define EXIT_FAIL		1	/* the operation failed */
#define EXIT_USAGE		2	/* bad command line */

/* The options of every command (before or after its name). */
struct common_opts {
	const char *objdir;		/* resolved object directory */
	bool json;			/* -j, --json */
	bool pretty;			/* -p, --pretty (implies json) */
	int verbose;			/* -v, -vv */
};

extern struct common_opts g_opts;

/* A command's own options (bbrctl.c: which command takes which). */
struct cmd_opts {
	const char **objs;		/* --obj PATH (repeatable) */
	int nobjs;
	const char *cgroup;		/* --cgroup PATH */
	const char *cc;			/* --cc NAME */
	const char *name;		/* load --name: register as this */
	uint32_t ecn_flags;		/* load --ecn: TCP_CONG_* ECN flags to add */
	bool force;			/* unload --force: detach cgroups too;
					 * trace --force: overwrite --output */
	const char *from, *to;		/* swap --from/--to */
	const char *netns;		/* swap --netns NAME */
	int port;			/* swap --port N (0: any) */
	uint64_t interval_us;		/* top --interval (0: the default) */
	uint64_t count;			/* top --count (0: forever) */
	bool per_ack;			/* trace --per-ack */
	bool csv;			/* trace --csv */
	uint64_t duration_us;		/* trace --duration (0: until a signal) */
	const char *output;		/* trace --output FILE */
	bool set_default;		/* set --default */
	bool set_reset;			/* set --reset */
	bool set_socket;		/* set --socket COOKIE */
	uint64_t socket_cookie;		/* its cookie */
	uint64_t min_bytes;		/* ab report --min-bytes */
	bool min_bytes_set;
};

/* The commands (bbrctl.c's table): EXIT_* */
int cmd_load(const struct cmd_opts *o, char **args, int nargs);	/* cc.c */
int cmd_unload(const struct cmd_opts *o, char **args, int nargs);
int cmd_list(const struct cmd_opts *o, char **args, int nargs);	/* info.c */
int cmd_stat(const struct cmd_opts *o, char **args, int nargs);	/* state.c */
int cmd_top(const struct cmd_opts *o, char **args, int nargs);
int cmd_trace(const struct cmd_opts *o, char **args, int nargs);	/* trace.c */
int cmd_set(const struct cmd_opts *o, char **args, int nargs);	/* params.c */
int cmd_params(const struct cmd_opts *o, char **args, int nargs);
int cmd_attach(const struct cmd_opts *o, char **args, int nargs);	/* attach.c */
int cmd_detach(const struct cmd_opts *o, char **args, int nargs);
int cmd_swap(const struct cmd_opts *o, char **args, int nargs);	/* swap.c */
int cmd_hwtstamp(const struct cmd_opts *o, char **args, int nargs);	/* hwtstamp.c */
int cmd_ect1(const struct cmd_opts *o, char **args, int nargs);	/* ect1.c */

/* ---- messages (sys.c) ---- */
void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void setup_libbpf_logging(void);

/* ---- system checks and helpers (sys.c) ---- */
/* 0 if we hold what loading BPF struct_ops needs; prints why not. */
int check_privileges(const char *cmd);
int check_kernel_btf(void);
/* 0 if the kernel's BTF has struct_ops for tcp_congestion_ops; prints why not. */
int check_struct_ops_cc(void);
/* Mount bpffs at /sys/fs/bpf if nothing is mounted there. */
int ensure_bpffs(void);
bool bpffs_mounted(void);
/* Warn if a private mount namespace hides the host's bpffs. */
void warn_if_bpffs_hidden(void);
bool valid_cc_name(const char *name);
bool valid_cc_names(const char *cmd, char **names, int n);
/* Is name in tcp_available_congestion_control? -1 if unreadable. */
int cc_available(const char *name);
/* Poll until cc_available(name) == want or timeout; returns final state. */
int cc_wait_available(const char *name, bool want, int timeout_ms);
const char *resolve_objdir(void);
/* Convert a CLOCK_BOOTTIME ns stamp (bpf_prog_info.load_time) to wall clock. */
int64_t boottime_ns_to_unix_ns(uint64_t boot_ns);
void format_unix_ns(int64_t unix_ns, char *buf, size_t len);
/* A directory under PIN_ROOT that is not a CC's (PIN_RESERVED)? */
bool pin_name_reserved(const char *name);
/* Sorted names of the directories under PIN_ROOT; returns count or -1. */
int list_pinned_names(char ***names);
/*
 * Call fn(ctx) once from inside every network namespace this host can
 * reach: bbrctl's own, those of running processes (/proc/PID/ns/net) and
 * the named ones (/run/netns), each once. Returns to bbrctl's own
 * namespace after. Stops early if fn returns nonzero, and returns that.
 */
int for_each_netns(int (*fn)(void *ctx), void *ctx);
/* Enter /run/netns/NAME for the rest of the run; -errno after a message. */
int enter_netns(const char *cmd, const char *name);
void free_names(char **names, int n);
int path_join(char *buf, size_t len, const char *a, const char *b);

/* ---- loading and unloading (cc.c) ---- */
struct cc_target {
	char name[CC_NAME_MAX + 1];	/* the .name it registers under */
	char obj_name[CC_NAME_MAX + 1];	/* its .name in the object, which
					 * names the object's maps and iterator */
	char path[PATH_MAX];		/* object file */
	struct bpf_object *obj;
	struct bpf_map *st_map;		/* the .struct_ops.link map */
	struct bpf_program *iter_prog;	/* dump_<name>_state, or NULL */
	struct bpf_map *stor_map;	/* <name>_sk_stor, or NULL */
	struct bpf_link *link;
	struct bpf_link *iter_link;
	struct bpf_map *trace_rb;	/* <name>_trace_rb, or NULL */
	struct bpf_map *trace_ctl;	/* <name>_trace_ctl, or NULL */
	uint32_t ecn_flags;		/* ECN flags added to .flags (load --ecn) */
	bool dir_created, link_pinned, iter_pinned, trace_pinned;
};

/* Open (not load) an object; want_name may be NULL with an explicit path.
 * as_name: register it under this name instead of its own (NULL: its own). */
int cc_open(struct cc_target *t, const char *path, const char *want_name,
	    const char *as_name);
/* OR the TCP_CONG_* ECN flags into the opened object's .flags (load --ecn). */
int cc_add_ecn_flags(struct cc_target *t, uint32_t flags);
/* include/net/tcp.h: the ops flags that make the kernel negotiate ECN for
 * the CC's sockets (checked against 6.18.y; the kernel refuses unknown
 * bits with EINVAL). */
#define TCP_CONG_NEEDS_ECN		0x2	/* negotiate ECN, send ECT */
#define TCP_CONG_NEEDS_ACCECN		0x4	/* ... as AccECN (RFC 9768) */
#define TCP_CONG_ECT_1_NEGOTIATION	0x8	/* ... and send ECT(1): L4S */
#define TCP_CONG_NO_FALLBACK_RFC3168	0x10	/* no ECN rather than RFC 3168 */
#define LOAD_ECN_ACCECN	(TCP_CONG_NEEDS_ECN | TCP_CONG_NEEDS_ACCECN | TCP_CONG_ECT_1_NEGOTIATION)
#define LOAD_ECN_ACCECN_ONLY	(LOAD_ECN_ACCECN | TCP_CONG_NO_FALLBACK_RFC3168)
#define LOAD_ECN_CLASSIC	TCP_CONG_NEEDS_ECN
/* objdir/name.bpf.o, or its build for the running kernel's ops
 * (kfeat.h) if there is one; -1 if the path does not fit. */
int cc_object_path(char *out, size_t len, const char *name);
/* Load, attach, pin. On failure everything this call did is undone. */
int cc_attach(struct cc_target *t);
/* Undo a successful cc_attach() of this process (used for rollback). */
void cc_rollback(struct cc_target *t);
void cc_close(struct cc_target *t);
/* Remove a pinned CC (from any process). */
int cc_unload_pinned(const char *name);

/* ---- information about pinned CCs (info.c) ---- */
struct cc_info {
	char name[CC_NAME_MAX + 1];
	bool has_link;			/* link pin exists and opens */
	bool has_iter;			/* state_iter pin exists */
	int registered;			/* in tcp_available_congestion_control (-1: unknown) */
	uint32_t link_id;
	uint32_t map_id;		/* struct_ops map; 0 if the link is detached */
	uint32_t prog_id;		/* one struct_ops program; 0 if unknown */
	uint64_t load_time_boot_ns;	/* bpf_prog_info.load_time, 0 if unknown */
	long sockets;			/* -1 if unknown */
	char note[512];			/* why something is unknown */
};

int cc_get_info(const char *name, struct cc_info *ci);
/* cc_get_info()'s link part only (has_link, link_id, map_id, note; the
 * rest unknown), without reading the CC's state iterator: for callers that
 * want its struct_ops map. */
int cc_get_link(const char *name, struct cc_info *ci);
/* Program ids of the function members of a struct_ops map value. */
#define STRUCT_OPS_PROGS_MAX	32	/* members of tcp_congestion_ops, with room */
int struct_ops_prog_ids(uint32_t map_id, uint32_t *ids, int max);
/* Map ids those programs use. */
#define PROG_MAP_IDS_MAX	64
int struct_ops_map_ids(uint32_t map_id, uint32_t *ids, int max);
/* Map ids program prog_id uses, at most max: the number, or -errno. */
int prog_map_ids(uint32_t prog_id, uint32_t *ids, int max);
/* An fd of the map of program prog_id whose name ends with suffix and whose
 * values are value_size bytes; -1 if it has none. */
int prog_map_fd(uint32_t prog_id, const char *suffix, uint32_t value_size);
/* fd of the first of the maps ids[0..n) whose name ends in suffix (and
 * whose value is value_size bytes, unless 0), its info in *info when not
 * NULL; -1 when none is. */
struct bpf_map_info;
int map_fd_by_suffix(const uint32_t *ids, int n, const char *suffix,
		     uint32_t value_size, struct bpf_map_info *info);

/* ---- state records (state.c) ---- */
/* Everything the iterator behind link_fd produces, read in every network
 * namespace (a TCP socket iterator walks the reader's): malloc'ed. */
int iter_read_all(int link_fd, void **buf, size_t *len);
/* Read everything the pinned iterator of name produces (malloc'ed). */
int read_state_iter(const char *name, void **buf, size_t *len, bool quiet);
/* Count records; -1 if the stream is not a valid bbr3_state_rec stream. */
long count_state_recs(const void *buf, size_t len);
/* stat's output for names (every loaded CC with an iterator if n == 0) */
int stat_print(char **names, int n);
/* swift_state.status as stat, trace and set print it ("active", "stale"...). */
const char *swift_status_name(unsigned int st);
/* ---- parameter sets (params.c) ---- */
/* `bbrctl help keys`: every parameter key, its range, default and meaning. */
void print_param_keys(FILE *f);

/* ---- tracing (trace.c) ---- */
/* Pin the trace maps of t in the verified directory dfd (replacing older pins); 0 if it has none. */
int trace_pin_maps(struct cc_target *t, int dfd);
void trace_unpin_maps(int dfd);

/* ---- cgroup attachment and live swap (attach.c, swap.c) ---- */
/* The cgroups bbrctl attached cc to (cc NULL: none), each reported as an
 * error, or detached when detach is set; stale attachments (cgroup removed)
 * are removed on the way. Returns how many were found. */
int attachments_of(const char *cc, bool detach);
/* ---- safe pin directories and the lock (sys.c) ---- */
#define BBRCTL_RUN_DIR		"/run/bbr-bpf"
#define BBRCTL_LOCK_NAME	"bbrctl.lock"
#define BBRCTL_LOCK		BBRCTL_RUN_DIR "/" BBRCTL_LOCK_NAME
#define BBRCTL_LOCK_WAIT_S	60
/* Pin paths of the object's maps that are shared (PIN_SHARED_MAPS). */
int shared_map_pins(struct bpf_object *obj);
int bbrctl_lock(const char *cmd);
/* BBRCTL_RUN_DIR, opened with O_NOFOLLOW and verified (a directory root
 * owns that nobody else may write): an fd, or -errno after a message
 * (missing and !create: -ENOENT, quietly). */
int run_dir_open(bool create);
/* BBRCTL_RUN_DIR/sub under the same rules (hwtstamp's saved state). */
int run_subdir_open(const char *sub, bool create);

/* ---- the pin tree (pintree.c): the only code that touches PIN_ROOT ---- */
#define PT_CREATE	0x1	/* create missing directories (mode 0700) */
#define PT_EXCL		0x2	/* the last one must be new: -EEXIST, quietly */
#define PT_QUIET	0x4	/* missing: -ENOENT without a message */
#define PT_SILENT	0x8	/* no message at all */
/* PIN_ROOT opened and verified (a real directory, root's, writable by root
 * only, reached without following a link): an fd, or -errno after a
 * message (an untrusted tree: -EPERM). */
int pt_root(int flags);
/* The directory rel ("NAME", "cgroup/ID"...) under PIN_ROOT, each step
 * opened relative to its verified parent and verified the same way. */
int pt_dir(const char *rel, int flags);
/* The directory name under the verified directory dfd (shown_parent: its
 * path, for messages). */
int pt_subdir(int dfd, const char *shown_parent, const char *name, int flags);
/* A pinned object dfd/name (not through a symbolic link): fd or -errno,
 * quietly. */
int pt_obj_get(int dfd, const char *name);
/* Pin fd at dfd/name: 0 or -errno, quietly. */
int pt_pin(int fd, int dfd, const char *name);
bool pt_exists(int dfd, const char *name);
/* Remove the entry dfd/name (a link itself, never its target); missing is
 * fine: 0 or -errno, quietly. */
int pt_unlink(int dfd, const char *name);
int pt_rmdir(int dfd, const char *name);
/* Remove PIN_ROOT if it is bbrctl's and empty. */
void pt_remove_root_if_empty(void);
/* A path that reaches dfd/name through the fd, for libbpf's path APIs. */
const char *pt_fd_path(int dfd, const char *name, char *buf, size_t len);
/* Sorted names in the directory dfd (only subdirectories with dirs_only):
 * the count, or -1 after a message. */
int pt_list(int dfd, bool dirs_only, char ***names);

/* Resolve --cgroup PATH (absolute, or relative to the cgroup2 root). */
int cgroup_resolve(const char *arg, char *out, size_t len, uint64_t *id);
/* The path of the cgroup with id `id`, or "" when there is none. */
void cgroup_path_of(uint64_t id, char *out, size_t len);
/* PIN_CGROUP/ID of cgroup id. */
int cg_pin_dir(uint64_t id, char *buf, size_t len);
/* The verified pin directory of cgroup/IDNAME under cgdfd (PT_QUIET), its id
 * in *id; -ENOENT if IDNAME is not a cgroup id. */
int cg_pin_subdir(int cgdfd, const char *idname, uint64_t *id);

/* One cgroup sockops attachment: its link and the pin that keeps it. */
struct bpf_program;
struct sockops_att {
	struct bpf_link *link;
	int dfd;			/* the attachment's pin directory */
	const char *pin;		/* its name there */
	bool pinned;
};
/* Attach prog to cgroup cgfd and pin the link at dfd/pin (dfd: a
 * directory pt_dir()/pt_subdir() verified). */
int att_do(struct sockops_att *a, struct bpf_program *prog, int cgfd,
	   int dfd, const char *pin);
void att_undo(struct sockops_att *a);	/* remove the pin, detach */
void att_keep(struct sockops_att *a);	/* the pin keeps it: let go of ours */
/*
 * What `attach --cgroup P --cc ...` works on, one cc or a split's arms:
 * the cgroup's resolved path and id and its pin directory's path, after
 * the checks both share (privileges, the kernel's BTF, bpffs, every CC
 * registered) and with the pins of removed cgroups dropped.
 */
struct att_target {
	char cg[PATH_MAX], dir[PATH_MAX], idname[24];
	uint64_t id;
};
int att_prepare(const struct cmd_opts *o, const char *const *ccs, int n,
		struct att_target *t);
/* The cgroup directory t->cg opened for attaching; -1 after a message. */
int att_open_cgroup(const struct att_target *t);
/* Does cc read the ETS program's storage (bbr_swift)? */
bool cc_needs_ets(const char *cc);
/* The ETS program attached to cgroup cgfd, its link pinned at dfd/pin
 * (kept). */
int ets_attach_cgroup(struct sockops_att *a, int cgfd, int dfd, const char *pin);

/* ---- A/B splits (ab.c) ---- */
/* Is --cc ARG a split ("bbr3:50,cubic:50")? */
bool ab_spec(const char *arg);
/* attach --cgroup P --cc A:W,B:W...: a new split, or new weights. */
int ab_attach(const struct cmd_opts *o);
int cmd_ab(const struct cmd_opts *o, char **args, int nargs);
/* Does the verified attachment directory dfd hold a split? */
bool ab_pinned(int dfd);
/* Does the attachment idname under the verified PIN_CGROUP directory
 * cgdfd hold a split? */
bool ab_pinned_at(int cgdfd, const char *idname);
/* Is cc one of its arms? *live: its link still has its cgroup. */
bool ab_has_arm(int dfd, const char *cc, bool *live);
/* Remove a split's pins from dfd, the attachment idname (none there: 0). */
int ab_unpin(int dfd, const char *idname);
/* The arm-labelled series of `bbrctl metrics`, for every split. */
void ab_metrics(FILE *f);

/* ---- metrics (metrics.c) ---- */
int cmd_metrics(const struct cmd_opts *o, char **args, int nargs);
/* The cgroup label of path (cgroup id id): relative to the cgroup2 root,
 * escaped; "id:ID" when path is "". */
void metrics_cgroup_label(const char *path, uint64_t id, char *out, size_t len);
/* Count one run of a command that changes something, in BBRCTL_COUNTERS
 * (under BBRCTL_LOCK). */
void events_count(const char *cmd, bool ok);
#define BBRCTL_COUNTERS_NAME	"events"
#define BBRCTL_COUNTERS		BBRCTL_RUN_DIR "/" BBRCTL_COUNTERS_NAME

/* ---- state records for other readers (state.c) ---- */
struct bbr3_state_rec;
struct bbr_swift_state_rec;
typedef void (*state_rec_fn)(void *ctx, const char *cc,
			     const struct bbr3_state_rec *r,
			     const struct bbr_swift_state_rec *sw);
/* fn for every record of the pinned iterator of cc; the number, or -1. */
long state_for_each(const char *cc, state_rec_fn fn, void *ctx);
/* The record's model bandwidth in bytes per second. */
uint64_t state_rec_bw_Bps(const struct bbr3_state_rec *r);

#endif /* BBRCTL_H */
