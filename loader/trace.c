// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl trace: stream the model events of loaded congestion controls.
 *
 * Every CC built on the glue has a ring buffer NAME_trace_rb and a control
 * word NAME_trace_ctl (bpf/lib/trace.h); `bbrctl load` pins both next to
 * the link. This command opens the pins, sets the control word's enable
 * flag (and the per-ACK flag with --per-ack), drains the rings into JSON
 * lines or CSV until SIGINT/SIGTERM or --duration, then clears the flag
 * before it exits, so that without a reader the CC pays one load and
 * branch per ACK. A reader killed with SIGKILL leaves the flag set; the
 * next `bbrctl trace` takes it over (its owner pid is gone) and clears it.
 *
 * Loss and CE rates per round (loss_ppm, ce_ppm) and swift_factor_ppm are
 * computed here from the counters in each event, per socket cookie.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "core/types.h"
#include "bbr3_state.h"
#include "bbrctl.h"

#define TRACE_BW_SCALE		24	/* bw is packets per µs << 24 (BW_UNIT) */
#define TRACE_SWIFT_UNIT	65536	/* SWIFT_FACTOR_UNIT: 1.0 */
#define TRACE_POLL_MS		100	/* longest wait for events / a signal */
/* Events with cookie 0 (the socket never had its cookie generated): run
 * the CC's state iterator, which generates cookies, at most this often. */
#define TRACE_COOKIE_GEN_NS	200000000ULL
#define TRACE_SOCKS_MAX		65536	/* sockets with per-round counters */

struct trace_cc {
	char name[CC_NAME_MAX + 1];
	int rb_fd, ctl_fd;
	bool claimed;			/* we set the control word */
	uint64_t dropped0;		/* ctl.dropped when we started */
	bool want_cookies;		/* saw cookie 0 since the last iterator run */
	uint64_t cookie_gen_ns;		/* last iterator run */
};

/* Per-socket counters at the last round start. Open addressing by cookie. */
struct trace_sock {
	uint64_t cookie;		/* 0: free slot */
	uint32_t delivered, lost, delivered_ce, decreases;
	uint32_t loss_ppm, ce_ppm;
	bool have_round;
};

static volatile sig_atomic_t trace_stop;
static bool csv, per_ack;		/* --csv, --per-ack */
static struct trace_sock *socks;
static FILE *out;
static uint64_t n_events, n_nocookie;
static bool out_failed;

static void on_signal(int sig)
{
	(void)sig;
	trace_stop = 1;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int trace_pin_maps(struct cc_target *t, int dfd)
{
	struct bpf_map *maps[2] = { t->trace_rb, t->trace_ctl };
	const char *files[2] = { PIN_TRACE_RB, PIN_TRACE_CTL };
	int ret;

	if (!t->trace_rb)
		return 0;
	for (int i = 0; i < 2; i++) {
		ret = pt_unlink(dfd, files[i]);
		if (ret) {
			err("%s: cannot replace " PIN_CC_FMT "/%s: %s", t->name,
			    t->name, files[i], strerror(-ret));
			return ret;
		}
		ret = pt_pin(bpf_map__fd(maps[i]), dfd, files[i]);
		if (ret) {
			err("%s: pinning %s at " PIN_CC_FMT "/%s failed: %s", t->name,
			    bpf_map__name(maps[i]), t->name, files[i], strerror(-ret));
			trace_unpin_maps(dfd);
			return ret;
		}
	}
	t->trace_pinned = true;
	return 0;
}

void trace_unpin_maps(int dfd)
{
	pt_unlink(dfd, PIN_TRACE_RB);
	pt_unlink(dfd, PIN_TRACE_CTL);
}

static struct trace_sock *sock_slot(uint64_t cookie)
{
	uint64_t h = cookie * 0x9E3779B97F4A7C15ULL;

	for (unsigned int i = 0; i < 64; i++) {
		struct trace_sock *s = &socks[(h + i) & (TRACE_SOCKS_MAX - 1)];

		if (s->cookie == cookie)
			return s;
		if (!s->cookie) {
			s->cookie = cookie;
			return s;
		}
	}
	return NULL;	/* table crowded: no per-round rates for this one */
}

static const char *mode_name(unsigned int m)
{
	static const char *const names[] = { "STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT" };

	return m < 4 ? names[m] : "?";
}

static const char *phase_name(const struct bbr_trace_ev *e)
{
	static const char *const names[] = { "UP", "DOWN", "CRUISE", "REFILL" };

	if (e->mode != BBR_PROBE_BW)
		return "";
	return e->phase < 4 ? names[e->phase] : "?";
}

static const char *ev_name(unsigned int ev)
{
	static const char *const names[] = { "round", "ack", "mode" };

	return ev < 3 ? names[ev] : "?";
}

static uint64_t bw_to_bps(uint32_t bw, uint32_t mss)
{
	/* packets/µs << 24 -> bits/s */
	return (((uint64_t)bw * mss * 1000000ULL) >> TRACE_BW_SCALE) * 8;
}

/* One output field: the same table gives the CSV header, CSV rows and JSON
 * objects, so the three cannot drift apart. */
enum trace_field_kind { TF_NUM, TF_STR, TF_BOOL };

struct trace_field {
	const char *name;
	enum trace_field_kind kind;
	uint64_t num;		/* TF_NUM, TF_BOOL */
	const char *str;	/* TF_STR */
};

#define TF_N(n, v)	{ .name = (n), .kind = TF_NUM, .num = (v) }
#define TF_S(n, v)	{ .name = (n), .kind = TF_STR, .str = (v) }
#define TF_B(n, v)	{ .name = (n), .kind = TF_BOOL, .num = (v) }

/* Per-round rates of one event, from the socket's previous round. */
struct trace_rates {
	uint32_t loss_ppm, ce_ppm, factor_ppm;
};

static struct trace_rates event_rates(const struct bbr_trace_ev *e, bool round_start)
{
	struct trace_sock *s = e->cookie ? sock_slot(e->cookie) : NULL;
	struct trace_rates r = { 0 };

	if (!s)
		return r;
	if (s->have_round && e->swift_decreases != s->decreases)
		r.factor_ppm = (uint32_t)((uint64_t)e->swift_factor * 1000000 /
					  TRACE_SWIFT_UNIT);
	if (round_start) {
		if (s->have_round) {
			uint32_t dd = e->delivered - s->delivered;
			uint32_t dl = e->lost - s->lost;
			uint32_t dce = e->delivered_ce - s->delivered_ce;

			s->loss_ppm = dd + dl ? (uint32_t)((uint64_t)dl * 1000000 / (dd + dl)) : 0;
			s->ce_ppm = dd ? (uint32_t)((uint64_t)dce * 1000000 / dd) : 0;
		}
		s->delivered = e->delivered;
		s->lost = e->lost;
		s->delivered_ce = e->delivered_ce;
		s->decreases = e->swift_decreases;
		s->have_round = true;
	}
	r.loss_ppm = s->loss_ppm;
	r.ce_ppm = s->ce_ppm;
	return r;
}

/* Fill f (TRACE_NFIELDS entries) with event e of cc, in output order. */
#define TRACE_NFIELDS	30
static void event_fields(struct trace_field *f, const struct trace_cc *cc,
			 const struct bbr_trace_ev *e, const struct trace_rates *r)
{
	const char *swst = strcmp(cc->name, "bbr_swift") ? "" :
			   swift_status_name(e->swift_status);

	const struct trace_field t[TRACE_NFIELDS] = {
		TF_N("t_ns", e->t_ns),
		TF_N("cookie", e->cookie),
		TF_S("cc", cc->name),
		TF_S("ev", ev_name(e->ev)),
		TF_S("mode", mode_name(e->mode)),
		TF_S("phase", phase_name(e)),
		TF_N("bw_bps", bw_to_bps(e->bw, e->mss_bytes)),
		TF_N("pacing_bps", (uint64_t)e->pacing_Bps * 8),
		TF_N("cwnd_pkts", e->cwnd_pkts),
		TF_N("inflight_pkts", e->inflight_pkts),
		TF_N("min_rtt_us", e->min_rtt_us),
		TF_N("rtt_us", e->rtt_us),
		TF_N("inflight_lo_pkts", e->inflight_lo),
		TF_N("inflight_hi_pkts", e->inflight_hi),
		TF_N("bw_lo_bps", bw_to_bps(e->bw_lo, e->mss_bytes)),
		TF_N("bw_hi_bps", bw_to_bps(e->bw_hi, e->mss_bytes)),
		TF_N("loss_ppm", r->loss_ppm),
		TF_N("ce_ppm", r->ce_ppm),
		TF_N("network_rtt_us", e->network_rtt_us),
		TF_N("swift_factor_ppm", r->factor_ppm),
		TF_N("srtt_us", e->srtt_us),
		TF_N("round", e->round_count),
		TF_N("delivered", e->delivered),
		TF_N("lost", e->lost),
		TF_N("delivered_ce", e->delivered_ce),
		TF_N("target_rtt_us", e->target_rtt_us),
		TF_S("swift_status", swst),
		TF_N("ca_state", e->ca_state),
		TF_B("round_start", !!(e->flags & BBR_TRACE_F_ROUND_START)),
		TF_N("decided_rtt_us", e->decided_rtt_us),
	};

	memcpy(f, t, sizeof(t));
}

static void print_csv_header(void)
{
	struct trace_field f[TRACE_NFIELDS];
	struct bbr_trace_ev e = { 0 };
	struct trace_rates r = { 0 };
	struct trace_cc cc = { 0 };

	event_fields(f, &cc, &e, &r);
	for (int i = 0; i < TRACE_NFIELDS; i++)
		fprintf(out, "%s%s", i ? "," : "", f[i].name);
	fputc('\n', out);
}

/* The JSON line of an event: one object, its members updated in place
 * (the keys keep the order of the first event). */
static json_t *ev_json;

static int print_json(const struct trace_field *f)
{
	char buf[2048];
	size_t n;

	if (!ev_json)
		ev_json = json_object();
	for (int i = 0; i < TRACE_NFIELDS; i++) {
		json_t *v = json_object_get(ev_json, f[i].name);

		if (f[i].kind == TF_BOOL)
			js_set_bool(ev_json, f[i].name, f[i].num);
		else if (f[i].kind == TF_STR && json_is_string(v))
			json_string_set(v, f[i].str);
		else if (f[i].kind == TF_STR)
			js_set_str(ev_json, f[i].name, f[i].str);
		else if (json_is_integer(v) && f[i].num <= INT64_MAX)
			json_integer_set(v, (json_int_t)f[i].num);
		else
			js_set_u64(ev_json, f[i].name, f[i].num);
	}
	n = json_dumpb(ev_json, buf, sizeof(buf) - 1, JSON_COMPACT);
	if (!n || n >= sizeof(buf) - 1)
		return -1;
	buf[n++] = '\n';
	return fwrite(buf, 1, n, out) == n ? 0 : -1;
}

static int print_csv(const struct trace_field *f)
{
	int n = 0;

	for (int i = 0; i < TRACE_NFIELDS && n >= 0; i++) {
		if (f[i].kind == TF_STR)
			n = fprintf(out, "%s%s", i ? "," : "", f[i].str);
		else
			n = fprintf(out, "%s%llu", i ? "," : "", (unsigned long long)f[i].num);
	}
	return n < 0 || fputc('\n', out) == EOF ? -1 : 0;
}

static void print_event(const struct trace_cc *cc, const struct bbr_trace_ev *e)
{
	struct trace_rates r = event_rates(e, e->flags & BBR_TRACE_F_ROUND_START);
	struct trace_field f[TRACE_NFIELDS];

	event_fields(f, cc, e, &r);
	if (csv ? print_csv(f) : print_json(f))
		out_failed = true;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct trace_cc *cc = ctx;
	const struct bbr_trace_ev *e = data;

	if (size < sizeof(*e) || e->version != BBR_TRACE_VERSION) {
		err("trace: %s: event of %zu bytes, version %u; this bbrctl reads "
		    "version %d (%zu bytes): rebuild and reload", cc->name, size,
		    size >= 2 ? e->version : 0, BBR_TRACE_VERSION, sizeof(*e));
		return -EINVAL;
	}
	if (!e->cookie) {
		n_nocookie++;
		cc->want_cookies = true;
	}
	n_events++;
	print_event(cc, e);
	return out_failed ? -EPIPE : 0;
}

/* Make the kernel generate cookies for the CC's sockets (the iterator calls
 * bpf_get_socket_cookie(), struct_ops programs cannot). */
static void gen_cookies(struct trace_cc *cc)
{
	void *buf;
	size_t len;

	if (read_state_iter(cc->name, &buf, &len, true) == 0)
		free(buf);
	cc->want_cookies = false;
	cc->cookie_gen_ns = mono_ns();
}

/* Take the control word of cc: fails if a live `bbrctl trace` holds it. */
static int claim(struct trace_cc *cc)
{
	struct bbr_trace_ctl c;
	uint32_t key = 0;

	if (bpf_map_lookup_elem(cc->ctl_fd, &key, &c)) {
		err("trace: %s: cannot read the control word: %s", cc->name,
		    strerror(errno));
		return -1;
	}
	if ((c.flags & BBR_TRACE_CTL_ON) && c.owner_pid &&
	    c.owner_pid != (uint32_t)getpid() &&
	    (kill((pid_t)c.owner_pid, 0) == 0 || errno == EPERM)) {
		err("trace: %s is already being traced by pid %u (one reader per "
		    "congestion control)", cc->name, c.owner_pid);
		return -1;
	}
	cc->dropped0 = c.dropped;
	c.flags = BBR_TRACE_CTL_ON | (per_ack ? BBR_TRACE_CTL_PER_ACK : 0);
	c.owner_pid = (uint32_t)getpid();
	if (bpf_map_update_elem(cc->ctl_fd, &key, &c, BPF_ANY)) {
		err("trace: %s: cannot set the control word: %s", cc->name,
		    strerror(errno));
		return -1;
	}
	cc->claimed = true;
	return 0;
}

/* Clear the enable flags; returns events the ring dropped while we ran. */
static uint64_t release_ctl(struct trace_cc *cc)
{
	struct bbr_trace_ctl c;
	uint32_t key = 0;

	if (!cc->claimed || bpf_map_lookup_elem(cc->ctl_fd, &key, &c))
		return 0;
	if (c.owner_pid == (uint32_t)getpid()) {
		c.flags = 0;
		c.owner_pid = 0;
		if (bpf_map_update_elem(cc->ctl_fd, &key, &c, BPF_ANY))
			warn("trace: %s: clearing the enable flag failed: %s",
			     cc->name, strerror(errno));
	}
	cc->claimed = false;
	return c.dropped - cc->dropped0;
}

static int open_cc(struct trace_cc *cc, const char *name, bool quiet)
{
	char dir[PATH_MAX];
	int dfd;

	snprintf(cc->name, sizeof(cc->name), "%s", name);
	cc->rb_fd = cc->ctl_fd = -1;
	snprintf(dir, sizeof(dir), PIN_CC_FMT, name);
	dfd = pt_dir(name, PT_QUIET);
	if (dfd < 0) {
		if (!quiet && dfd == -ENOENT)
			err("trace: %s is not loaded by bbrctl (no %s)", name, dir);
		return -1;
	}
	cc->rb_fd = pt_obj_get(dfd, PIN_TRACE_RB);
	if (cc->rb_fd < 0) {
		if (!quiet)
			err("trace: %s has no trace ring (%s/%s: %s): its object has no "
			    "lib/trace.h, or it was loaded by an older bbrctl; "
			    "reload it", name, dir, PIN_TRACE_RB, strerror(-cc->rb_fd));
		close(dfd);
		return -1;
	}
	cc->ctl_fd = pt_obj_get(dfd, PIN_TRACE_CTL);
	close(dfd);
	if (cc->ctl_fd < 0) {
		if (!quiet)
			err("trace: %s: cannot open %s/%s: %s", name, dir,
			    PIN_TRACE_CTL, strerror(-cc->ctl_fd));
		close(cc->rb_fd);
		cc->rb_fd = -1;
		return -1;
	}
	return 0;
}

/*
 * trace --output FILE: root writes where it is told, so a name an
 * unprivileged user could have planted in a shared directory (/tmp) must
 * not make it truncate another file: a symbolic link is never followed
 * (O_NOFOLLOW), and an existing file is kept unless --force (O_EXCL).
 */
static FILE *open_output(const char *path, bool force)
{
	int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
		    (force ? O_TRUNC : O_EXCL);
	int fd = open(path, flags, 0644), e;
	struct stat st;
	FILE *f;

	if (fd < 0) {
		e = errno;
		/* O_EXCL never follows a link either: say which it was */
		if (e == EEXIST && !lstat(path, &st) && S_ISLNK(st.st_mode))
			e = ELOOP;
		if (e == EEXIST)
			err("trace: %s exists; add --force to overwrite it", path);
		else if (e == ELOOP)
			err("trace: %s is a symbolic link; bbrctl writes only to "
			    "the file named, never through a link", path);
		else
			err("trace: cannot write %s: %s", path, strerror(e));
		return NULL;
	}
	/* --force on a FIFO or device: fine, but never a directory */
	if (fstat(fd, &st) || S_ISDIR(st.st_mode)) {
		err("trace: cannot write %s: not a file", path);
		close(fd);
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		err("trace: cannot write %s: %s", path, strerror(errno));
		close(fd);
	}
	return f;
}

/* Open the named CCs' trace rings (n > 0), else those of every pinned CC
 * that has one; *ncc counts those opened (also on failure, to close them).
 * -1 on failure. */
static int trace_open_ccs(struct trace_cc *ccs, int *ncc, char **names, int n,
			  char **pinned, int npinned)
{
	for (int i = 0; i < n; i++, (*ncc)++)
		if (open_cc(&ccs[*ncc], names[i], false))
			return -1;
	if (n)
		return 0;
	for (int i = 0; i < npinned; i++)
		if (!open_cc(&ccs[*ncc], pinned[i], true))
			(*ncc)++;
	if (!*ncc) {
		err("trace: no loaded congestion control has a trace ring "
		    "(load one with `bbrctl load bbr3`)");
		return -1;
	}
	return 0;
}

static void trace_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	/*
	 * SA_RESTART: a write blocked on a full stdout pipe (a reader that
	 * drains it only after signalling us, as `timeout` or a test does)
	 * resumes instead of failing with EINTR and losing the buffered
	 * events. epoll_wait() inside ring_buffer__poll() is never restarted
	 * (signal(7)), so the loop still sees the signal within one poll.
	 */
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);	/* a closed stdout is a write error */
}

/* One ring buffer reader over every CC's ring; NULL after a message. */
static struct ring_buffer *trace_rings(struct trace_cc *ccs, int ncc)
{
	struct ring_buffer *rb = NULL;

	for (int i = 0; i < ncc; i++) {
		int r = rb ? ring_buffer__add(rb, ccs[i].rb_fd, on_event, &ccs[i]) : 0;

		if (!rb) {
			rb = ring_buffer__new(ccs[i].rb_fd, on_event, &ccs[i], NULL);
			r = rb ? 0 : -errno;
		}
		if (r) {
			err("trace: %s: cannot map the trace ring: %s", ccs[i].name,
			    strerror(-r));
			ring_buffer__free(rb);
			return NULL;
		}
	}
	return rb;
}

/* Claim every CC's trace switch and start the cookie tables; -1 on failure. */
static int trace_start(struct trace_cc *ccs, int ncc)
{
	if (csv)
		print_csv_header();
	for (int i = 0; i < ncc; i++)
		if (claim(&ccs[i]))
			return -1;
	for (int i = 0; i < ncc; i++)
		gen_cookies(&ccs[i]);
	for (int i = 0; i < ncc; i++)
		info("trace: tracing %s%s", ccs[i].name, per_ack ? " (per ACK)" : "");
	return 0;
}

/* Poll the rings until a signal or the deadline (0: none); EXIT_OK or
 * EXIT_FAIL after a read or write error. */
static int trace_loop(struct ring_buffer *rb, struct trace_cc *ccs, int ncc,
		      uint64_t duration_us)
{
	uint64_t deadline = duration_us ? mono_ns() + duration_us * 1000 : 0;

	while (!trace_stop && (!deadline || mono_ns() < deadline)) {
		int r = ring_buffer__poll(rb, TRACE_POLL_MS);

		if (r < 0 && r != -EINTR) {
			if (r != -EPIPE)
				err("trace: reading the rings failed: %s", strerror(-r));
			return EXIT_FAIL;
		}
		for (int i = 0; i < ncc; i++)
			if (ccs[i].want_cookies &&
			    mono_ns() - ccs[i].cookie_gen_ns > TRACE_COOKIE_GEN_NS)
				gen_cookies(&ccs[i]);
		if (r > 0 && fflush(out))
			out_failed = true;
		if (out_failed) {
			err("trace: writing the events failed: %s", strerror(errno));
			return EXIT_FAIL;
		}
	}
	return EXIT_OK;
}

/* Stop the producers first, then drain what they wrote and close the
 * output; the exit status, ret unless the end failed. */
static int trace_finish(struct ring_buffer *rb, struct trace_cc *ccs, int ncc,
			const char *output, int ret)
{
	uint64_t dropped = 0;

	for (int i = 0; i < ncc; i++)
		dropped += release_ctl(&ccs[i]);
	if (rb && ret == EXIT_OK && ring_buffer__consume(rb) < 0 && !out_failed)
		ret = EXIT_FAIL;
	if (out && fflush(out))
		ret = EXIT_FAIL;
	if (out && out != stdout && fclose(out)) {
		err("trace: writing %s failed: %s", output, strerror(errno));
		ret = EXIT_FAIL;
	}
	if (rb || ret == EXIT_OK)
		info("trace: %llu events, %llu lost to a full ring, %llu without a "
		     "socket cookie", (unsigned long long)n_events,
		     (unsigned long long)dropped, (unsigned long long)n_nocookie);
	for (int i = 0; i < ncc; i++) {
		if (ccs[i].rb_fd >= 0)
			close(ccs[i].rb_fd);
		if (ccs[i].ctl_fd >= 0)
			close(ccs[i].ctl_fd);
	}
	return ret;
}

int cmd_trace(const struct cmd_opts *o, char **names, int n)
{
	struct trace_cc *ccs = NULL;
	struct ring_buffer *rb = NULL;
	char **pinned = NULL;
	int npinned = 0, ncc = 0, ret = EXIT_FAIL;

	csv = o->csv;
	per_ack = o->per_ack;
	if (!valid_cc_names("trace", names, n))
		return EXIT_USAGE;
	if (check_privileges("trace"))
		return EXIT_FAIL;
	if (!n) {
		npinned = list_pinned_names(&pinned);
		if (npinned < 0)
			npinned = 0;
	}
	ccs = calloc((size_t)(n ? n : npinned) + 1, sizeof(*ccs));
	socks = calloc(TRACE_SOCKS_MAX, sizeof(*socks));
	if (!ccs || !socks) {
		err("out of memory");
		goto out;
	}
	if (trace_open_ccs(ccs, &ncc, names, n, pinned, npinned))
		goto out;
	out = o->output ? open_output(o->output, o->force) : stdout;
	if (!out)
		goto out;
	trace_signals();
	rb = trace_rings(ccs, ncc);
	if (rb && !trace_start(ccs, ncc))
		ret = trace_loop(rb, ccs, ncc, o->duration_us);
out:
	ret = trace_finish(rb, ccs, ncc, o->output, ret);
	ring_buffer__free(rb);
	free(ccs);
	free(socks);
	json_decref(ev_json);
	ev_json = NULL;
	free_names(pinned, npinned);
	return ret;
}
