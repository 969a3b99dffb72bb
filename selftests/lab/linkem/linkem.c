// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * linkem: a userspace bottleneck link between network namespaces.
 *
 * One TUN device per port, each created inside its port's namespace (setns
 * into /run/netns/<ns>, so no device moving or NAT). A packet read from a
 * port belonging to side "a" travels the "fwd" pipe, from side "b" the "rev"
 * pipe; its output port is the one whose addrs hold its IPv4 destination.
 * Each pipe is:
 *
 *   loss model -> tail-drop FIFO -> link server at C(t) -> propagation delay
 *
 * The link server places departures exactly: it keeps W(t), the bits the
 * link can have sent by time t (integral of a constant rate, a schedule of
 * steps and linear ramps, or a mahimahi trace of 1500-byte opportunities),
 * and a packet of b bits that may start at s departs at W^-1(max(used,
 * W(s)) + b). The emulator's own wake-up lateness therefore never changes
 * when a packet is due, only when it is actually written; that lateness is
 * measured per packet, histogrammed, and a run whose p99.9 exceeds the
 * configured bound is flagged invalid in STATS.json.
 *
 * ECN marking (sojourn > K at dequeue, queue length > K at enqueue, or a
 * departure rate above gamma x C over a sliding window) rewrites the IPv4
 * ECN field to CE with an incremental checksum update (RFC 1624); non-ECT
 * packets are never marked, only tail-dropped.
 *
 * One thread, ppoll() with a nanosecond timeout to the next event, timer
 * slack 1 ns, SCHED_FIFO when permitted, all memory preallocated and locked.
 * See README.md for the configuration reference and timing notes.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "linkem_log.h"

#define MAX_PORTS 64			/* uint8 port index, 255 = unrouted */
#define MAX_ADDRS_PER_PORT 16
#define PKT_BUF_BYTES 2048		/* >= TUN MTU 1500 with room to detect oversize */
#define TUN_MTU_BYTES 1500		/* what we set on every TUN */
#define TUN_TXQUEUELEN_PKTS 10000	/* default 500 hides drops on trace bursts */
#define READ_BATCH_PKTS 16		/* reads per port between release checks */
#define SPIN_BELOW_NS 3000		/* closer than this: poll without sleeping */
#define FIFO_PRIO 20			/* chrt -f 20, as in the feasibility runs */
/* Log ring between the data path and the writer thread: 256 Ki records
 * (16 MB) is 3 s of 1 Gbit/s data plus ACKs; a full ring loses records
 * (counted in STATS.json) rather than stalling the link. */
#define LOG_RING_RECS (256u << 10)
#define LOG_WRITER_IDLE_NS 2000000	/* writer polls the ring every 2 ms */
#define POOL_MIN_PKTS 8192
#define POOL_MAX_PKTS 262144		/* 512 MB of packet buffers at most */
#define HIST_BUCKETS_US 20000		/* 1 us buckets up to 20 ms, then overflow */
#define PHANTOM_WINDOW_DEFAULT_US 5000	/* issue 4: rate over a 5 ms window */
#define SOJOURN_K_DEFAULT_US 2000	/* an L4S step marks above 2 ms (RFC 9332's
					 * DualPI2 default is 1 ms; the L4S
					 * experiments here use 2 ms) */
#define ACK_SLOTS 1024			/* flows whose ACKs one direction coalesces at once */
#define ACK_HOLD_DEFAULT_US 1000	/* a held ACK goes out after 1 ms at the latest */
#define TCP_PROTO 6
#define TCP_OPT_EOL 0
#define TCP_OPT_NOP 1
#define TCP_OPT_SACK 5
#define TCP_FLAG_ACK 0x10
#define TCP_FLAG_PSH 0x08
#define NS_PER_S 1000000000ull
#define NS_PER_MS 1000000ull
#define NS_PER_US 1000ull
#define BITS_PER_OPPORTUNITY (1500 * 8)	/* mahimahi: one MTU per trace ms */
#define ECN_MASK 0x3
#define ECN_ECT1 0x1
#define ECN_ECT0 0x2
#define ECN_CE 0x3
#define U64_INF UINT64_MAX

/* ---------- configuration ---------- */

struct port {
	char name[64];
	char netns[128];
	char dev[IFNAMSIZ];
	int side;			/* 0 = a, 1 = b */
	uint32_t addrs[MAX_ADDRS_PER_PORT];	/* network order */
	int naddrs;
	uint64_t extra_delay_ns;
	int fd;
	int nsfd;			/* kept to read the TUN counters at exit */
	long long tun_tx_dropped, tun_rx_dropped;	/* -1: unknown */
};

enum rate_kind { RATE_NONE, RATE_CURVE, RATE_TRACE };
enum loss_kind { LOSS_NONE, LOSS_BERNOULLI, LOSS_GILBERT, LOSS_NTH };
enum ecn_kind { ECN_OFF, ECN_SOJOURN, ECN_QLEN, ECN_PHANTOM };

/* Piecewise-linear rate: points (t_ns, bits per ns), constant after last. */
struct curve {
	int n;
	double *t;		/* ns since origin */
	double *r;		/* bits/ns */
	double *w;		/* W at t[i], bits */
};

struct trace {
	uint64_t *t_ns;		/* opportunity times within one period */
	size_t n;
	uint64_t period_ns;
	bool repeat;
};

struct pipe_cfg {
	enum rate_kind rate_kind;
	struct curve curve;
	struct trace trace;
	double ref_rate_bpns;	/* for BDP sizing and phantom capacity (trace) */
	uint64_t q_limit_bytes;	/* 0 = unlimited */
	uint64_t q_limit_pkts;
	uint64_t delay_ns;
	enum loss_kind loss;
	double loss_p;		/* bernoulli p, gilbert p(good->bad) */
	double gil_r, gil_h_good, gil_h_bad;
	uint64_t nth;
	enum ecn_kind ecn;
	uint64_t k_ns;
	uint64_t k_pkts, k_bytes;
	double gamma;
	uint64_t window_ns;
	bool phantom_ramp;	/* mark with probability rising 0 -> 1 over gamma C -> C */
	bool ect1_only;
	uint64_t batch_ns;	/* releases only on a grid of this period (0: off) */
	uint32_t ack_every;	/* forward 1 of this many pure ACKs per flow (<= 1: off) */
	uint64_t ack_hold_ns;	/* ... or a held one once it waited this long */
};

struct config {
	struct port ports[MAX_PORTS];
	int nports;
	uint64_t base_rtt_ns;
	struct pipe_cfg pipe[2];
	uint64_t lateness_bound_ns;
	uint64_t seed;
	double duration_s;
	uint64_t pool_pkts;
	bool origin_first_packet;
	bool no_rt;
};

/* ---------- packets and per-direction state ---------- */

struct pkt {
	uint64_t arrive, deq, depart, release;
	uint64_t seq;		/* arrival order: ties in the delay line keep it */
	uint32_t qbytes, delay_us;
	uint16_t len;
	uint8_t in, out, dir, ecn_in, drop;
	uint8_t *data;
};

struct ring {			/* FIFO of packet indices */
	uint32_t *v;
	size_t cap, head, n;
};

struct win_ent { uint64_t t; uint32_t bits; };

/* One flow's pure ACK held back by ACK coalescing (see coalesce()). */
struct ack_slot {
	uint8_t key[12];	/* saddr, daddr, sport, dport as on the wire */
	uint32_t idx;		/* the held packet */
	uint32_t n;		/* ACKs it stands for */
	uint32_t ack;		/* its acknowledgment number */
	uint64_t deadline;
	bool used;
};

struct dir_state {
	struct pipe_cfg *cfg;
	struct ring q;
	uint64_t q_bytes;
	double used_bits;	/* link credit consumed, W units */
	uint64_t busy_until;	/* departure of the last packet served */
	uint64_t rng;
	uint64_t mark_rng;	/* own stream: marking never shifts loss decisions */
	int gil_bad;
	uint64_t nth_count;
	/* phantom queue: departures within the window */
	struct win_ent *win;
	size_t win_cap, win_head, win_n;
	uint64_t win_bits;
	/* ACK coalescing */
	struct ack_slot *acks;	/* ACK_SLOTS entries when ack_every > 1 */
	size_t acks_held;
	uint64_t acks_coalesced;
	/* counters */
	uint64_t arrived, arrived_bytes, forwarded, forwarded_bytes;
	uint64_t drops[6], ce_marked, ect_in, ce_in;
	uint64_t max_q_bytes, max_q_pkts;
};

static struct config cfg;
static struct pkt *pool;
static uint32_t *free_stack;
static size_t free_n;
static uint32_t *heap;		/* delay line: min-heap by release time */
static size_t heap_n;
static struct dir_state dirs[2];
static uint64_t origin_ns;	/* t = 0 of schedules and traces */
static bool origin_set;
static uint64_t arrival_seq;
static uint64_t start_ns;
static volatile sig_atomic_t stop_flag;
static int log_fd = -1;
static const char *log_path;	/* removed again if setup fails */
static struct linkem_log_rec *log_ring;
static _Atomic uint64_t log_head, log_tail;	/* producer / consumer counts */
static atomic_bool log_done;
static pthread_t log_thread;
static uint64_t log_records, log_lost;
static uint64_t hist[HIST_BUCKETS_US + 1];
static uint64_t late_count, late_max_ns, late_sum_ns;
static uint64_t noroute_drops;
static char warnings[4][160];
static int nwarnings;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("linkem: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (log_path)
		unlink(log_path);
	exit(1);
}

static void warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("linkem: warning: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (nwarnings < 4) {
		va_start(ap, fmt);
		vsnprintf(warnings[nwarnings++], sizeof(warnings[0]), fmt, ap);
		va_end(ap);
	}
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* xorshift64*: fast, seedable, good enough for loss decisions. */
static inline double rng_u01(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return ((x * 0x2545F4914F6CDD1Dull) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---------- config parsing ---------- */

/* The configuration is read with jansson (libjansson, as flowgen); absent
 * and null members mean "default" throughout. */
static void check_keys(const json_t *obj, const char *where,
		       const char *const *allowed)
{
	const char *key;
	json_t *val;

	if (!json_is_object(obj))
		die("config: %s must be an object", where);
	json_object_foreach((json_t *)obj, key, val) {
		const char *const *a;

		for (a = allowed; *a; a++)
			if (!strcmp(*a, key))
				break;
		if (!*a)
			die("config: unknown key \"%s\" in %s", key, where);
	}
}

static bool absent(const json_t *n)
{
	return !n || json_is_null(n);
}

static double get_num(const json_t *obj, const char *key, const char *where,
		      double def, double lo, double hi)
{
	const json_t *n = json_object_get(obj, key);
	double v;

	if (absent(n))
		return def;
	if (!json_is_number(n))
		die("config: %s.%s must be a number", where, key);
	v = json_number_value(n);
	if (!(v >= lo && v <= hi))
		die("config: %s.%s = %g is out of range [%g, %g]", where, key, v, lo, hi);
	return v;
}

static double need_num(const json_t *obj, const char *key, const char *where,
		       double lo, double hi)
{
	if (!json_object_get(obj, key))
		die("config: %s.%s is required", where, key);
	return get_num(obj, key, where, 0, lo, hi);
}

static bool get_bool(const json_t *obj, const char *key, const char *where,
		     bool def)
{
	const json_t *n = json_object_get(obj, key);

	if (absent(n))
		return def;
	if (!json_is_boolean(n))
		die("config: %s.%s must be true or false", where, key);
	return json_is_true(n);
}

static const char *get_str(const json_t *obj, const char *key,
			   const char *where, bool required)
{
	const json_t *n = json_object_get(obj, key);

	if (!n) {
		if (required)
			die("config: %s.%s is required", where, key);
		return NULL;
	}
	if (!json_is_string(n))
		die("config: %s.%s must be a string", where, key);
	return json_string_value(n);
}

static void copy_str(char *dst, size_t cap, const char *src, const char *what)
{
	if (strlen(src) >= cap || !*src)
		die("config: %s \"%s\" is empty or too long (max %zu)", what, src,
		    cap - 1);
	strcpy(dst, src);
}

#define MBIT_MAX 100000.0	/* 100 Gbit/s: far above anything a TUN carries */
#define MBIT_TO_BPNS(m) ((m) * 1e6 / 1e9)

static void curve_add(struct curve *c, double t, double r)
{
	c->t = realloc(c->t, (c->n + 1) * sizeof(double));
	c->r = realloc(c->r, (c->n + 1) * sizeof(double));
	c->w = realloc(c->w, (c->n + 1) * sizeof(double));
	if (!c->t || !c->r || !c->w)
		die("out of memory");
	c->t[c->n] = t;
	c->r[c->n] = r;
	c->w[c->n] = 0;
	if (c->n) {
		double dt = t - c->t[c->n - 1];

		c->w[c->n] = c->w[c->n - 1] + dt * (c->r[c->n - 1] + r) / 2;
	}
	c->n++;
}

static void parse_schedule(struct pipe_cfg *p, const json_t *sched,
			   const char *where)
{
	static const char *const keys[] = { "t_ms", "mbit", "ramp_ms", NULL };
	double last_t = -1;
	size_t i;

	if (!json_is_array(sched) || !json_array_size(sched))
		die("config: %s.rate.schedule must be a non-empty array", where);
	for (i = 0; i < json_array_size(sched); i++) {
		const json_t *e = json_array_get(sched, i);
		double t = need_num(e, "t_ms", where, 0, 1e9) * NS_PER_MS;
		double r = MBIT_TO_BPNS(need_num(e, "mbit", where, 0, MBIT_MAX));
		double ramp = get_num(e, "ramp_ms", where, 0, 0, 1e9) * NS_PER_MS;

		check_keys(e, "schedule entry", keys);
		if (i == 0 && t != 0)
			die("config: %s.rate.schedule must start at t_ms 0", where);
		if (t < last_t)
			die("config: %s.rate.schedule times must not decrease", where);
		if (i == 0) {
			curve_add(&p->curve, 0, r);
		} else {
			/* hold the previous rate until t, then step or ramp */
			double prev = p->curve.r[p->curve.n - 1];

			if (t > p->curve.t[p->curve.n - 1])
				curve_add(&p->curve, t, prev);
			curve_add(&p->curve, t + ramp, r);
		}
		last_t = t + ramp;
	}
	p->ref_rate_bpns = p->curve.r[0];
	for (i = 0; i < (size_t)p->curve.n; i++)
		if (p->curve.r[i] > 0)
			return;
	die("config: %s.rate.schedule never has a positive rate", where);
}

static void parse_trace(struct pipe_cfg *p, const char *file, bool repeat,
			const char *where)
{
	FILE *f = fopen(file, "r");
	char line[128];
	size_t cap = 0;
	uint64_t last = 0;

	if (!f)
		die("config: %s.rate.trace: cannot open %s: %s", where, file,
		    strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *end;
		unsigned long long ms;

		if (line[0] == '\n' || line[0] == '#')
			continue;
		ms = strtoull(line, &end, 10);
		if (end == line || (*end && *end != '\n' && *end != '\r'))
			die("config: trace %s: bad line \"%s\"", file, line);
		if (ms < last)
			die("config: trace %s: times must not decrease", file);
		last = ms;
		if (p->trace.n == cap) {
			cap = cap ? cap * 2 : 1024;
			p->trace.t_ns = realloc(p->trace.t_ns, cap * sizeof(uint64_t));
			if (!p->trace.t_ns)
				die("out of memory");
		}
		p->trace.t_ns[p->trace.n++] = ms * NS_PER_MS;
	}
	fclose(f);
	if (!p->trace.n || last == 0)
		die("config: trace %s: empty or ends at 0 ms", file);
	p->trace.period_ns = last * NS_PER_MS;
	p->trace.repeat = repeat;
	p->ref_rate_bpns = (double)p->trace.n * BITS_PER_OPPORTUNITY /
			   p->trace.period_ns;
}

static void parse_rate(struct pipe_cfg *p, const json_t *rate, const char *where)
{
	static const char *const keys[] = { "mbit", "schedule", "trace", "repeat", NULL };
	const json_t *sched;
	const char *trace;

	if (absent(rate)) {
		p->rate_kind = RATE_NONE;
		return;
	}
	check_keys(rate, "rate", keys);
	sched = json_object_get(rate, "schedule");
	trace = get_str(rate, "trace", where, false);
	if ((json_object_get(rate, "mbit") != NULL) + (sched != NULL) + (trace != NULL) != 1)
		die("config: %s.rate needs exactly one of mbit, schedule, trace", where);
	if (trace) {
		p->rate_kind = RATE_TRACE;
		parse_trace(p, trace, get_bool(rate, "repeat", where, true), where);
		return;
	}
	p->rate_kind = RATE_CURVE;
	if (sched) {
		parse_schedule(p, sched, where);
		return;
	}
	{
		double m = get_num(rate, "mbit", where, 0, 0, MBIT_MAX);

		if (m <= 0)
			die("config: %s.rate.mbit must be positive (got %g)", where, m);
		curve_add(&p->curve, 0, MBIT_TO_BPNS(m));
		p->ref_rate_bpns = p->curve.r[0];
	}
}

static void parse_queue(struct pipe_cfg *p, const json_t *q, const char *where)
{
	static const char *const keys[] = { "bytes", "packets", "bdp", NULL };

	if (absent(q))
		return;		/* unlimited */
	check_keys(q, "queue", keys);
	if (json_object_size(q) != 1)
		die("config: %s.queue needs exactly one of bytes, packets, bdp", where);
	if (json_object_get(q, "bytes"))
		p->q_limit_bytes = need_num(q, "bytes", where, 1, 1e12);
	else if (json_object_get(q, "packets"))
		p->q_limit_pkts = need_num(q, "packets", where, 1, 1e9);
	else {
		double bdp = need_num(q, "bdp", where, 0.001, 1e6);

		if (p->rate_kind == RATE_NONE)
			die("config: %s.queue.bdp needs a rate", where);
		if (!cfg.base_rtt_ns)
			die("config: %s.queue.bdp needs base_rtt_us", where);
		p->q_limit_bytes = (uint64_t)(bdp * p->ref_rate_bpns *
					      cfg.base_rtt_ns / 8);
		if (p->q_limit_bytes < TUN_MTU_BYTES)
			p->q_limit_bytes = TUN_MTU_BYTES;
	}
}

static void parse_loss(struct pipe_cfg *p, const json_t *l, const char *where)
{
	static const char *const keys[] = { "model", "p", "r", "h_good", "h_bad",
					    "n", NULL };
	const char *model;

	if (absent(l))
		return;
	check_keys(l, "loss", keys);
	model = get_str(l, "model", where, true);
	if (!strcmp(model, "bernoulli")) {
		p->loss = LOSS_BERNOULLI;
		p->loss_p = need_num(l, "p", where, 0, 1);
	} else if (!strcmp(model, "gilbert")) {
		/* Gilbert-Elliott: p = P(good->bad), r = P(bad->good) per packet,
		 * loss probability 1-h in each state (defaults: lossless good,
		 * all-lost bad, i.e. the simple Gilbert model). */
		p->loss = LOSS_GILBERT;
		p->loss_p = need_num(l, "p", where, 0, 1);
		p->gil_r = need_num(l, "r", where, 0, 1);
		p->gil_h_good = get_num(l, "h_good", where, 1, 0, 1);
		p->gil_h_bad = get_num(l, "h_bad", where, 0, 0, 1);
	} else if (!strcmp(model, "nth")) {
		p->loss = LOSS_NTH;
		p->nth = need_num(l, "n", where, 1, 1e12);
	} else {
		die("config: %s.loss.model \"%s\" unknown (bernoulli, gilbert, nth)",
		    where, model);
	}
}

static void parse_ecn(struct pipe_cfg *p, const json_t *e, const char *where)
{
	static const char *const keys[] = { "mode", "k_us", "k_pkts", "k_bytes",
					    "gamma", "window_us", "ramp", NULL };
	const char *mode;

	if (absent(e))
		return;
	check_keys(e, "ecn", keys);
	mode = get_str(e, "mode", where, true);
	if (p->rate_kind == RATE_NONE)
		die("config: %s.ecn needs a rate (there is no queue without one)", where);
	if (!strcmp(mode, "sojourn")) {
		p->ecn = ECN_SOJOURN;
		p->k_ns = get_num(e, "k_us", where, SOJOURN_K_DEFAULT_US, 0, 1e9) *
			  NS_PER_US;
	} else if (!strcmp(mode, "qlen")) {
		p->ecn = ECN_QLEN;
		p->k_pkts = get_num(e, "k_pkts", where, 0, 1, 1e9);
		p->k_bytes = get_num(e, "k_bytes", where, 0, 1, 1e12);
		if (!p->k_pkts == !p->k_bytes)
			die("config: %s.ecn qlen needs exactly one of k_pkts, k_bytes", where);
	} else if (!strcmp(mode, "phantom")) {
		p->ecn = ECN_PHANTOM;
		p->gamma = need_num(e, "gamma", where, 0.01, 10);
		p->window_ns = get_num(e, "window_us", where, PHANTOM_WINDOW_DEFAULT_US,
				       10, 1e7) * NS_PER_US;
		p->phantom_ramp = get_bool(e, "ramp", where, false);
		if (p->phantom_ramp && p->gamma >= 1)
			die("config: %s.ecn phantom ramp needs gamma < 1", where);
	} else {
		die("config: %s.ecn.mode \"%s\" unknown (sojourn, qlen, phantom)",
		    where, mode);
	}
}

static void parse_pipe(struct pipe_cfg *p, const json_t *j, const char *where)
{
	static const char *const keys[] = { "rate", "queue", "delay_us", "loss", "ecn",
					    "ect1_only", "batch_us", "ack_every",
					    "ack_hold_us", NULL };

	if (!j)
		die("config: \"%s\" is required", where);
	check_keys(j, where, keys);
	parse_rate(p, json_object_get(j, "rate"), where);
	parse_queue(p, json_object_get(j, "queue"), where);
	p->delay_ns = get_num(j, "delay_us", where, 0, 0, 1e8) * NS_PER_US;
	parse_loss(p, json_object_get(j, "loss"), where);
	parse_ecn(p, json_object_get(j, "ecn"), where);
	p->ect1_only = get_bool(j, "ect1_only", where, false);
	p->batch_ns = get_num(j, "batch_us", where, 0, 0, 1e6) * NS_PER_US;
	p->ack_every = get_num(j, "ack_every", where, 1, 1, 64);
	p->ack_hold_ns = get_num(j, "ack_hold_us", where, ACK_HOLD_DEFAULT_US,
				 1, 1e6) * NS_PER_US;
}

static void parse_port(struct port *pt, const json_t *j, int idx)
{
	static const char *const keys[] = { "name", "netns", "dev", "side", "addrs",
					    "extra_delay_us", NULL };
	const json_t *addrs;
	const char *side;
	char where[32];
	struct stat st;
	char path[256];
	size_t i;

	snprintf(where, sizeof(where), "ports[%d]", idx);
	check_keys(j, where, keys);
	copy_str(pt->name, sizeof(pt->name), get_str(j, "name", where, true), "port name");
	if (strspn(pt->name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			     "0123456789_.-") != strlen(pt->name))
		die("config: %s.name \"%s\": use letters, digits, _ . -", where, pt->name);
	copy_str(pt->netns, sizeof(pt->netns), get_str(j, "netns", where, true), "netns");
	copy_str(pt->dev, sizeof(pt->dev), get_str(j, "dev", where, true), "dev");
	if (strchr(pt->netns, '/') || !strcmp(pt->netns, "..") || !strcmp(pt->netns, "."))
		die("config: %s.netns \"%s\" is not a namespace name", where, pt->netns);
	snprintf(path, sizeof(path), "/run/netns/%s", pt->netns);
	if (stat(path, &st))
		die("config: %s: namespace \"%s\" does not exist (%s)", where,
		    pt->netns, path);
	side = get_str(j, "side", where, true);
	if (!strcmp(side, "a"))
		pt->side = 0;
	else if (!strcmp(side, "b"))
		pt->side = 1;
	else
		die("config: %s.side must be \"a\" or \"b\"", where);
	addrs = json_object_get(j, "addrs");
	if (!json_is_array(addrs) || !json_array_size(addrs))
		die("config: %s.addrs must be a non-empty array of IPv4 addresses", where);
	if (json_array_size(addrs) > MAX_ADDRS_PER_PORT)
		die("config: %s.addrs: at most %d", where, MAX_ADDRS_PER_PORT);
	for (i = 0; i < json_array_size(addrs); i++) {
		const char *a = json_string_value(json_array_get(addrs, i));
		struct in_addr in;

		if (!a || inet_pton(AF_INET, a, &in) != 1)
			die("config: %s.addrs[%zu] is not an IPv4 address", where, i);
		/* 198.18.0.0/15 only: the project's test address space */
		if ((ntohl(in.s_addr) & 0xfffe0000u) != 0xc6120000u)
			die("config: %s.addrs[%zu] %s is outside 198.18.0.0/15", where,
			    i, a);
		pt->addrs[pt->naddrs++] = in.s_addr;
	}
	pt->extra_delay_ns = get_num(j, "extra_delay_us", where, 0, 0, 1e8) * NS_PER_US;
	pt->fd = -1;
	pt->nsfd = -1;
}

static void load_config(const char *file)
{
	static const char *const keys[] = { "ports", "base_rtt_us", "fwd", "rev",
					    "lateness_bound_us", "seed", "duration_s",
					    "pool_pkts", "schedule_origin", "realtime",
					    NULL };
	json_error_t jerr;
	json_t *root, *ports;
	const char *origin;
	int i, k;

	root = json_load_file(file, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		if (jerr.line < 0)	/* not read at all */
			die("cannot read config %s: %s", file, jerr.text);
		die("config %s: line %d, column %d: %s", file, jerr.line, jerr.column,
		    jerr.text);
	}
	check_keys(root, "the top level", keys);
	cfg.base_rtt_ns = get_num(root, "base_rtt_us", "config", 0, 0, 1e8) * NS_PER_US;
	cfg.lateness_bound_ns = get_num(root, "lateness_bound_us", "config", 1000, 1,
					1e8) * NS_PER_US;
	cfg.seed = get_num(root, "seed", "config", 1, 0, 1e15);
	cfg.duration_s = get_num(root, "duration_s", "config", 0, 0, 1e7);
	cfg.pool_pkts = get_num(root, "pool_pkts", "config", 0, 1024, POOL_MAX_PKTS);
	cfg.no_rt = !get_bool(root, "realtime", "config", true);
	origin = get_str(root, "schedule_origin", "config", false);
	if (origin && strcmp(origin, "ready") && strcmp(origin, "first_packet"))
		die("config: schedule_origin must be \"ready\" or \"first_packet\"");
	cfg.origin_first_packet = origin && !strcmp(origin, "first_packet");
	ports = json_object_get(root, "ports");
	if (!json_is_array(ports) || json_array_size(ports) < 2)
		die("config: \"ports\" must be an array of at least two ports");
	if (json_array_size(ports) > MAX_PORTS)
		die("config: at most %d ports", MAX_PORTS);
	cfg.nports = json_array_size(ports);
	for (i = 0; i < cfg.nports; i++)
		parse_port(&cfg.ports[i], json_array_get(ports, i), i);
	for (i = 0; i < cfg.nports; i++)
		for (k = 0; k < i; k++) {
			int a, b;

			if (!strcmp(cfg.ports[i].netns, cfg.ports[k].netns) &&
			    !strcmp(cfg.ports[i].dev, cfg.ports[k].dev))
				die("config: ports %d and %d both use %s in %s", k, i,
				    cfg.ports[i].dev, cfg.ports[i].netns);
			for (a = 0; a < cfg.ports[i].naddrs; a++)
				for (b = 0; b < cfg.ports[k].naddrs; b++)
					if (cfg.ports[i].addrs[a] == cfg.ports[k].addrs[b])
						die("config: ports %d and %d share an address", k, i);
		}
	parse_pipe(&cfg.pipe[0], json_object_get(root, "fwd"), "fwd");
	parse_pipe(&cfg.pipe[1], json_object_get(root, "rev"), "rev");
	json_decref(root);
}

/* ---------- link server: W(t) and its inverse ---------- */

static double curve_w(const struct curve *c, double t)
{
	int lo = 0, hi = c->n - 1;
	double dt;

	if (t <= 0)
		return 0;
	while (lo < hi) {	/* last point with c->t <= t */
		int mid = (lo + hi + 1) / 2;

		if (c->t[mid] <= t)
			lo = mid;
		else
			hi = mid - 1;
	}
	dt = t - c->t[lo];
	if (lo == c->n - 1)
		return c->w[lo] + dt * c->r[lo];
	{
		double k = (c->r[lo + 1] - c->r[lo]) / (c->t[lo + 1] - c->t[lo]);

		return c->w[lo] + dt * (c->r[lo] + k * dt / 2);
	}
}

/* Smallest t with W(t) >= w; INFINITY if the link never gets there. */
static double curve_inv(const struct curve *c, double w)
{
	int lo = 0, hi = c->n - 1;
	double rem, r0, k, dt;

	while (lo < hi) {	/* last point with c->w <= w */
		int mid = (lo + hi + 1) / 2;

		if (c->w[mid] <= w)
			lo = mid;
		else
			hi = mid - 1;
	}
	/* zero-length segments (steps) share w: take the last of them */
	rem = w - c->w[lo];
	r0 = c->r[lo];
	if (lo == c->n - 1)
		return r0 > 0 ? c->t[lo] + rem / r0 : INFINITY;
	k = (c->r[lo + 1] - r0) / (c->t[lo + 1] - c->t[lo]);
	if (fabs(k) < 1e-18)
		dt = r0 > 0 ? rem / r0 : 0;
	else	/* r0 dt + k dt^2 / 2 = rem, the root with dt >= 0 */
		dt = (-r0 + sqrt(fmax(r0 * r0 + 2 * k * rem, 0))) / k;
	return c->t[lo] + dt;
}

/* Opportunities strictly before t (ns since origin). */
static double trace_count_before(const struct trace *tr, double t)
{
	uint64_t ti, cycles, lo = 0, hi = tr->n;

	if (t <= 0)
		return 0;
	ti = (uint64_t)ceil(t);
	cycles = ti / tr->period_ns;
	if (!tr->repeat && cycles >= 1)
		return tr->n;
	ti -= cycles * tr->period_ns;
	while (lo < hi) {	/* first index with t_ns >= ti */
		uint64_t mid = (lo + hi) / 2;

		if (tr->t_ns[mid] < ti)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (double)cycles * tr->n + lo;
}

/* Time of the k-th opportunity (1-based). */
static double trace_time_of(const struct trace *tr, double k)
{
	uint64_t i = (uint64_t)k - 1;
	uint64_t cycles = i / tr->n;

	if (!tr->repeat && cycles >= 1)
		return INFINITY;
	return (double)cycles * tr->period_ns + tr->t_ns[i % tr->n];
}

static double link_w(const struct pipe_cfg *p, double t)
{
	if (p->rate_kind == RATE_TRACE)
		return trace_count_before(&p->trace, t) * BITS_PER_OPPORTUNITY;
	return curve_w(&p->curve, t);
}

static double link_inv(const struct pipe_cfg *p, double w)
{
	if (p->rate_kind == RATE_TRACE)
		return trace_time_of(&p->trace, ceil(w / BITS_PER_OPPORTUNITY - 1e-9));
	return curve_inv(&p->curve, w);
}

/* Capacity now, bits/ns (phantom queue reference). */
static double link_rate(const struct pipe_cfg *p, double t)
{
	if (p->rate_kind == RATE_TRACE)
		return p->ref_rate_bpns;
	return (curve_w(&p->curve, t + 1000) - curve_w(&p->curve, t)) / 1000;
}

/* ---------- packet helpers ---------- */

static void ip_set_ecn(uint8_t *ip, uint8_t ecn)
{
	uint16_t old = (ip[0] << 8) | ip[1], new;
	uint32_t sum;
	uint16_t csum = (ip[10] << 8) | ip[11];

	ip[1] = (ip[1] & ~ECN_MASK) | ecn;
	new = (ip[0] << 8) | ip[1];
	/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') */
	sum = (uint16_t)~csum + (uint16_t)~old + new;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	csum = ~sum;
	ip[10] = csum >> 8;
	ip[11] = csum & 0xff;
}

static int route(uint32_t daddr)
{
	int i, a;

	for (i = 0; i < cfg.nports; i++)
		for (a = 0; a < cfg.ports[i].naddrs; a++)
			if (cfg.ports[i].addrs[a] == daddr)
				return i;
	return -1;
}

/*
 * The writer thread: file writes can stall for milliseconds (page cache
 * allocation, writeback), so they never happen on the data path. It runs
 * at normal priority (created before SCHED_FIFO is set) and drains the
 * ring in contiguous chunks.
 */
static void *log_writer(void *arg)
{
	(void)arg;
	for (;;) {
		uint64_t tail = atomic_load_explicit(&log_tail, memory_order_relaxed);
		uint64_t head = atomic_load_explicit(&log_head, memory_order_acquire);
		size_t off, n;
		ssize_t w;

		if (head == tail) {
			struct timespec ts = { 0, LOG_WRITER_IDLE_NS };

			if (atomic_load(&log_done))
				break;
			nanosleep(&ts, NULL);
			continue;
		}
		off = tail % LOG_RING_RECS;
		n = head - tail;
		if (n > LOG_RING_RECS - off)
			n = LOG_RING_RECS - off;
		w = write(log_fd, log_ring + off, n * sizeof(*log_ring));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			warn("log write failed: %s; records lost", strerror(errno));
			w = n * sizeof(*log_ring);	/* discard, keep draining */
		}
		atomic_store_explicit(&log_tail, tail + w / sizeof(*log_ring),
				      memory_order_release);
	}
	return NULL;
}

static void log_start(void)
{
	if (log_fd < 0)
		return;
	if (pthread_create(&log_thread, NULL, log_writer, NULL))
		die("cannot start the log writer thread");
}

static void log_finish(void)
{
	if (log_fd < 0)
		return;
	atomic_store(&log_done, true);
	pthread_join(log_thread, NULL);
	close(log_fd);
}

static void log_pkt(const struct pkt *p)
{
	struct linkem_log_rec *r;
	const uint8_t *ip = p->data;

	uint64_t head;

	if (log_fd < 0)
		return;
	head = atomic_load_explicit(&log_head, memory_order_relaxed);
	if (head - atomic_load_explicit(&log_tail, memory_order_acquire) >= LOG_RING_RECS) {
		log_lost++;
		return;
	}
	r = &log_ring[head % LOG_RING_RECS];
	memset(r, 0, sizeof(*r));
	r->t_arrive_ns = p->arrive;
	r->t_dequeue_ns = p->deq;
	r->t_depart_ns = p->depart;
	r->t_release_ns = p->release;
	r->size = p->len;
	r->dir = p->dir;
	r->in_port = p->in;
	r->out_port = p->out;
	r->ecn_in = p->ecn_in;
	r->drop = p->drop;
	r->delay_us = p->delay_us;
	r->qbytes = p->qbytes;
	if (p->len >= 20 && (ip[0] >> 4) == 4) {
		unsigned ihl = (ip[0] & 0xf) * 4;
		bool first_frag = !((ip[6] & 0x1f) | ip[7]);

		r->ecn_out = ip[1] & ECN_MASK;
		memcpy(&r->saddr, ip + 12, 4);
		memcpy(&r->daddr, ip + 16, 4);
		r->proto = ip[9];
		if ((r->proto == IPPROTO_TCP || r->proto == IPPROTO_UDP) &&
		    first_frag && p->len >= ihl + 4) {
			r->sport = (ip[ihl] << 8) | ip[ihl + 1];
			r->dport = (ip[ihl + 2] << 8) | ip[ihl + 3];
		}
	}
	atomic_store_explicit(&log_head, head + 1, memory_order_release);
	log_records++;
}

static void pkt_free(uint32_t idx)
{
	free_stack[free_n++] = idx;
}

static void drop_pkt(uint32_t idx, int reason)
{
	struct pkt *p = &pool[idx];

	p->drop = reason;
	dirs[p->dir].drops[reason]++;
	log_pkt(p);
	pkt_free(idx);
}

/* ---------- delay line (min-heap on release time) ---------- */

static inline bool rel_before(uint32_t a, uint32_t b)
{
	if (pool[a].release != pool[b].release)
		return pool[a].release < pool[b].release;
	return pool[a].seq < pool[b].seq;
}

static void heap_push(uint32_t idx)
{
	size_t i = heap_n++;

	while (i) {
		size_t parent = (i - 1) / 2;

		if (!rel_before(idx, heap[parent]))
			break;
		heap[i] = heap[parent];
		i = parent;
	}
	heap[i] = idx;
}

static uint32_t heap_pop(void)
{
	uint32_t top = heap[0], last = heap[--heap_n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= heap_n)
			break;
		if (c + 1 < heap_n && rel_before(heap[c + 1], heap[c]))
			c++;
		if (!rel_before(heap[c], last))
			break;
		heap[i] = heap[c];
		i = c;
	}
	if (heap_n)
		heap[i] = last;
	return top;
}

/* ---------- the pipeline ---------- */

static bool loss_drop(struct dir_state *d)
{
	const struct pipe_cfg *p = d->cfg;

	switch (p->loss) {
	case LOSS_BERNOULLI:
		return rng_u01(&d->rng) < p->loss_p;
	case LOSS_GILBERT: {
		bool lost = rng_u01(&d->rng) >= (d->gil_bad ? p->gil_h_bad : p->gil_h_good);

		if (d->gil_bad ? rng_u01(&d->rng) < p->gil_r
			       : rng_u01(&d->rng) < p->loss_p)
			d->gil_bad = !d->gil_bad;
		return lost;
	}
	case LOSS_NTH:
		return ++d->nth_count % p->nth == 0;
	default:
		return false;
	}
}

/* May this packet be marked at all? Non-ECT never; ECT(0) not if ect1_only. */
static bool ecn_capable(const struct pipe_cfg *p, uint8_t ecn)
{
	if (ecn == 0)
		return false;
	if (p->ect1_only && ecn == ECN_ECT0)
		return false;
	return true;
}

static void mark_ce(struct dir_state *d, struct pkt *p)
{
	if ((p->data[1] & ECN_MASK) == ECN_CE)
		return;
	ip_set_ecn(p->data, ECN_CE);
	d->ce_marked++;
}

static uint64_t path_delay_ns(const struct pkt *p)
{
	return dirs[p->dir].cfg->delay_ns + cfg.ports[p->in].extra_delay_ns +
	       cfg.ports[p->out].extra_delay_ns;
}

static void schedule_release(struct pkt *p, uint32_t idx)
{
	uint64_t delay = path_delay_ns(p);

	const struct pipe_cfg *c = dirs[p->dir].cfg;

	p->delay_us = delay / NS_PER_US;
	p->release = p->depart == U64_INF ? U64_INF : p->depart + delay;
	/* batch_us: held to the next grid point, as a Wi-Fi or cellular link
	 * hands packets over in aggregates every few ms */
	if (c->batch_ns && p->release != U64_INF && p->release > origin_ns) {
		uint64_t off = (p->release - origin_ns) % c->batch_ns;

		if (off)
			p->release += c->batch_ns - off;
	}
	heap_push(idx);
}

static void enqueue(struct dir_state *d, uint32_t idx)
{
	struct pkt *p = &pool[idx];
	const struct pipe_cfg *c = d->cfg;

	p->qbytes = d->q_bytes > UINT32_MAX ? UINT32_MAX : d->q_bytes;
	if (c->rate_kind == RATE_NONE) {
		p->deq = p->depart = p->arrive;
		schedule_release(p, idx);
		return;
	}
	if ((c->q_limit_bytes && d->q_bytes + p->len > c->q_limit_bytes) ||
	    (c->q_limit_pkts && d->q.n + 1 > c->q_limit_pkts)) {
		drop_pkt(idx, LEM_DROP_QUEUE);
		return;
	}
	if (c->ecn == ECN_QLEN && ecn_capable(c, p->ecn_in) &&
	    ((c->k_pkts && d->q.n + 1 > c->k_pkts) ||
	     (c->k_bytes && d->q_bytes + p->len > c->k_bytes)))
		mark_ce(d, p);
	d->q.v[(d->q.head + d->q.n) % d->q.cap] = idx;
	d->q.n++;
	d->q_bytes += p->len;
	if (d->q_bytes > d->max_q_bytes)
		d->max_q_bytes = d->q_bytes;
	if (d->q.n > d->max_q_pkts)
		d->max_q_pkts = d->q.n;
}

static bool phantom_over(struct dir_state *d, uint64_t t, uint32_t bits)
{
	const struct pipe_cfg *c = d->cfg;
	double cap;

	while (d->win_n && d->win[d->win_head].t + c->window_ns <= t) {
		d->win_bits -= d->win[d->win_head].bits;
		d->win_head = (d->win_head + 1) % d->win_cap;
		d->win_n--;
	}
	if (d->win_n == d->win_cap) {	/* cannot happen: cap = pool size */
		d->win_bits -= d->win[d->win_head].bits;
		d->win_head = (d->win_head + 1) % d->win_cap;
		d->win_n--;
	}
	d->win[(d->win_head + d->win_n) % d->win_cap] = (struct win_ent){ t, bits };
	d->win_n++;
	d->win_bits += bits;
	cap = link_rate(c, (double)(t - origin_ns)) * c->window_ns;
	if (c->phantom_ramp) {
		double u = cap > 0 ? d->win_bits / cap : 1.0;

		return rng_u01(&d->mark_rng) < (u - c->gamma) / (1 - c->gamma);
	}
	return d->win_bits > c->gamma * cap;
}

/* Start serving queued packets whose service starts no later than now. */
static void serve(struct dir_state *d, uint64_t now)
{
	const struct pipe_cfg *c = d->cfg;

	while (d->q.n) {
		uint32_t idx = d->q.v[d->q.head];
		struct pkt *p = &pool[idx];
		uint64_t start = p->arrive > d->busy_until ? p->arrive : d->busy_until;
		double w0, dep;
		bool over;

		if (start > now || d->busy_until == U64_INF)
			break;
		d->q.head = (d->q.head + 1) % d->q.cap;
		d->q.n--;
		d->q_bytes -= p->len;
		p->deq = start;
		w0 = link_w(c, (double)(start - origin_ns));
		if (d->used_bits > w0)
			w0 = d->used_bits;
		d->used_bits = w0 + p->len * 8.0;
		dep = link_inv(c, d->used_bits);
		p->depart = isinf(dep) ? U64_INF : origin_ns + (uint64_t)ceil(dep);
		if (p->depart < start)
			p->depart = start;
		d->busy_until = p->depart;
		/* every departure counts towards the phantom window */
		over = c->ecn == ECN_PHANTOM && phantom_over(d, start, p->len * 8);
		if (ecn_capable(c, p->ecn_in) &&
		    ((c->ecn == ECN_SOJOURN && start - p->arrive > c->k_ns) || over))
			mark_ce(d, p);
		schedule_release(p, idx);
	}
}

static void hist_add(uint64_t late_ns)
{
	uint64_t us = late_ns / NS_PER_US;

	hist[us < HIST_BUCKETS_US ? us : HIST_BUCKETS_US]++;
	late_count++;
	late_sum_ns += late_ns;
	if (late_ns > late_max_ns)
		late_max_ns = late_ns;
}

static void release_due(uint64_t now)
{
	while (heap_n && pool[heap[0]].release <= now) {
		uint32_t idx = heap_pop();
		struct pkt *p = &pool[idx];
		struct dir_state *d = &dirs[p->dir];
		uint64_t sched = p->release;
		ssize_t w;

		/* the stack receives the packet inside write(): stamp it before */
		p->release = now_ns();
		w = write(cfg.ports[p->out].fd, p->data, p->len);
		if (w != p->len) {
			drop_pkt(idx, LEM_DROP_WRITE);
			continue;
		}
		hist_add(p->release - sched);
		d->forwarded++;
		d->forwarded_bytes += p->len;
		log_pkt(p);
		pkt_free(idx);
	}
}

static void set_origin(uint64_t t)
{
	origin_ns = t;
	origin_set = true;
}

/* Read one packet from a port into the bottleneck; false if it had none. */
/* Into the pipe: the loss model, then the bottleneck queue. */
static void admit(struct dir_state *d, uint32_t idx)
{
	if (loss_drop(d))
		drop_pkt(idx, LEM_DROP_LOSS);
	else
		enqueue(d, idx);
}

/*
 * ACK coalescing (ack_every N): of the pure cumulative ACKs of one flow,
 * only every Nth enters the pipe, or the one held when ack_hold_us has
 * passed; each replaces the one held before it. The sender then sees what a
 * receiver with GRO/LRO or stretch ACKs sends: one ACK per 2N segments,
 * covering all of them. ACKs that carry data, flags other than ACK/PSH
 * (ECE included), a SACK block or a repeated acknowledgment number
 * (duplicate ACKs) are never held: they first release the flow's held ACK,
 * so that loss recovery and ECN see every signal, in order.
 */
static bool pure_ack(const uint8_t *ip, size_t len, uint32_t *ack)
{
	size_t ihl = (ip[0] & 0xf) * 4, doff, tot, o;

	if (ip[9] != TCP_PROTO || ihl < 20 || len < ihl + 20)
		return false;
	doff = (ip[ihl + 12] >> 4) * 4;
	tot = (size_t)ip[2] << 8 | ip[3];
	if (doff < 20 || tot > len || tot != ihl + doff ||
	    (ip[ihl + 13] & ~TCP_FLAG_PSH) != TCP_FLAG_ACK)
		return false;
	for (o = ihl + 20; o < ihl + doff;) {
		uint8_t kind = ip[o];

		if (kind == TCP_OPT_EOL)
			break;
		if (kind == TCP_OPT_NOP) {
			o++;
			continue;
		}
		if (kind == TCP_OPT_SACK || o + 1 >= ihl + doff || ip[o + 1] < 2)
			return false;
		o += ip[o + 1];
	}
	memcpy(ack, ip + ihl + 8, 4);
	return true;
}

static void ack_key(const uint8_t *ip, uint8_t key[12])
{
	size_t ihl = (ip[0] & 0xf) * 4;

	memcpy(key, ip + 12, 8);
	if (ip[9] == TCP_PROTO)
		memcpy(key + 8, ip + ihl, 4);
	else
		memset(key + 8, 0, 4);
}

static struct ack_slot *ack_slot_of(struct dir_state *d, const uint8_t key[12])
{
	uint32_t h = 2166136261u;	/* FNV-1a over the 4-tuple */
	int i;

	for (i = 0; i < 12; i++)
		h = (h ^ key[i]) * 16777619u;
	return &d->acks[h % ACK_SLOTS];
}

static void ack_release(struct dir_state *d, struct ack_slot *s, uint64_t now)
{
	struct pkt *p = &pool[s->idx];

	s->used = false;
	d->acks_held--;
	p->arrive = now;	/* it leaves the receiver now */
	p->seq = arrival_seq++;
	admit(d, s->idx);
}

/* true: idx is held (or replaced the held one); false: forward it now */
static bool coalesce(struct dir_state *d, uint32_t idx)
{
	struct pkt *p = &pool[idx];
	struct ack_slot *s;
	uint8_t key[12];
	uint32_t ack;
	bool pure;

	if (p->len < 20 || p->data[9] != TCP_PROTO)
		return false;
	ack_key(p->data, key);
	s = ack_slot_of(d, key);
	pure = pure_ack(p->data, p->len, &ack);
	if (s->used && memcmp(s->key, key, sizeof(key)))
		return false;		/* another flow's ACK holds the slot */
	if (!pure || (s->used && s->ack == ack)) {
		if (s->used)
			ack_release(d, s, p->arrive);
		return false;
	}
	if (s->used) {
		d->acks_coalesced++;	/* not logged: it never left */
		pkt_free(s->idx);
		s->n++;
	} else {
		memcpy(s->key, key, sizeof(key));
		s->used = true;
		s->n = 1;
		s->deadline = p->arrive + d->cfg->ack_hold_ns;
		d->acks_held++;
	}
	s->idx = idx;
	s->ack = ack;
	if (s->n >= d->cfg->ack_every)
		ack_release(d, s, p->arrive);
	return true;
}

/* Held ACKs whose time is up; the earliest deadline left (U64_INF: none). */
static uint64_t acks_due(struct dir_state *d, uint64_t now)
{
	uint64_t next = U64_INF;
	size_t i;

	for (i = 0; d->acks_held && i < ACK_SLOTS; i++) {
		struct ack_slot *s = &d->acks[i];

		if (!s->used)
			continue;
		if (s->deadline <= now)
			ack_release(d, s, now);
		else if (s->deadline < next)
			next = s->deadline;
	}
	return next;
}

static bool receive_one(int port_idx)
{
	static uint8_t scratch[PKT_BUF_BYTES];
	struct port *pt = &cfg.ports[port_idx];
	struct dir_state *d = &dirs[pt->side];
	uint32_t idx, daddr;
	struct pkt *p;
	ssize_t len;
	int out;

	if (!free_n) {	/* read into a scratch buffer and count it */
		len = read(pt->fd, scratch, sizeof(scratch));
		if (len <= 0)
			return false;
		d->arrived++;
		d->arrived_bytes += len;
		d->drops[LEM_DROP_POOL]++;
		return true;
	}
	idx = free_stack[free_n - 1];
	p = &pool[idx];
	len = read(pt->fd, p->data, PKT_BUF_BYTES);
	if (len <= 0)
		return false;
	free_n--;
	p->arrive = now_ns();
	p->seq = arrival_seq++;
	if (!origin_set)
		set_origin(p->arrive);
	p->len = len;
	p->in = port_idx;
	p->dir = pt->side;
	p->deq = p->depart = p->release = 0;
	p->qbytes = p->delay_us = 0;
	p->drop = 0;
	d->arrived++;
	d->arrived_bytes += len;
	if (len < 20 || (p->data[0] >> 4) != 4) {
		p->out = 255;
		p->ecn_in = 0;
		noroute_drops++;
		drop_pkt(idx, LEM_DROP_NOROUTE);
		return true;
	}
	p->ecn_in = p->data[1] & ECN_MASK;
	if (p->ecn_in == ECN_CE)
		d->ce_in++;
	else if (p->ecn_in)
		d->ect_in++;
	memcpy(&daddr, p->data + 16, 4);
	out = route(daddr);
	if (out < 0 || out == port_idx) {
		p->out = 255;
		drop_pkt(idx, LEM_DROP_NOROUTE);
		return true;
	}
	p->out = out;
	if (d->cfg->ack_every > 1 && coalesce(d, idx))
		return true;
	admit(d, idx);
	return true;
}

/*
 * Read the ports poll() found ready, one packet from each in turn, up to
 * READ_BATCH_PKTS per port. Whole batches port by port would put the first
 * port's packets into the bottleneck queue ahead of the others every time:
 * in swift_dc (two senders of 200 flows) the second sender's flows saw a
 * 15-90 us higher Network_RTT than the first's and got less throughput.
 */
static void receive_ready(const struct pollfd *pfd)
{
	bool more[MAX_PORTS];
	int i, n, left = 0;

	for (i = 0; i < cfg.nports; i++) {
		more[i] = pfd[i].revents & POLLIN;
		left += more[i];
	}
	for (n = 0; n < READ_BATCH_PKTS && left; n++)
		for (i = 0; i < cfg.nports; i++)
			if (more[i] && !receive_one(i)) {
				more[i] = false;
				left--;
			}
}

/* ---------- setup ---------- */

static int open_ns(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	return open(path, O_RDONLY | O_CLOEXEC);
}

static void tun_create(struct port *pt, int self_ns)
{
	struct ifreq ifr;
	int nsfd = open_ns(pt->netns), sock;

	if (nsfd < 0)
		die("namespace %s: %s", pt->netns, strerror(errno));
	if (setns(nsfd, CLONE_NEWNET))
		die("setns %s: %s", pt->netns, strerror(errno));
	pt->nsfd = nsfd;
	pt->fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (pt->fd < 0)
		die("open /dev/net/tun: %s", strerror(errno));
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	strncpy(ifr.ifr_name, pt->dev, IFNAMSIZ - 1);
	if (ioctl(pt->fd, TUNSETIFF, &ifr))
		die("TUNSETIFF %s in %s: %s", pt->dev, pt->netns, strerror(errno));
	if (strcmp(ifr.ifr_name, pt->dev))
		die("TUN %s got name %s", pt->dev, ifr.ifr_name);
	sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		die("socket: %s", strerror(errno));
	ifr.ifr_qlen = TUN_TXQUEUELEN_PKTS;
	if (ioctl(sock, SIOCSIFTXQLEN, &ifr))
		die("txqueuelen %s: %s", pt->dev, strerror(errno));
	ifr.ifr_mtu = TUN_MTU_BYTES;
	if (ioctl(sock, SIOCSIFMTU, &ifr))
		die("mtu %s: %s", pt->dev, strerror(errno));
	if (ioctl(sock, SIOCGIFFLAGS, &ifr))
		die("flags %s: %s", pt->dev, strerror(errno));
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(sock, SIOCSIFFLAGS, &ifr))
		die("up %s: %s", pt->dev, strerror(errno));
	close(sock);
	if (setns(self_ns, CLONE_NEWNET))
		die("setns back: %s", strerror(errno));
}

static size_t estimate_pool(void)
{
	double need = 4096;
	int d;

	if (cfg.pool_pkts)
		return cfg.pool_pkts;
	for (d = 0; d < 2; d++) {
		const struct pipe_cfg *p = &cfg.pipe[d];
		double rate = p->rate_kind == RATE_NONE ? MBIT_TO_BPNS(2000) : 0;
		double max_delay = p->delay_ns;
		int i;

		if (p->rate_kind == RATE_CURVE)
			for (i = 0; i < p->curve.n; i++)
				rate = fmax(rate, p->curve.r[i]);
		else if (p->rate_kind == RATE_TRACE)
			rate = p->ref_rate_bpns * 4;
		for (i = 0; i < cfg.nports; i++)
			max_delay += 2 * (double)cfg.ports[i].extra_delay_ns / cfg.nports;
		need += rate * max_delay / (8 * 1000) * 2;	/* delay line, 1000 B avg */
		if (p->rate_kind == RATE_NONE)
			continue;	/* no server, so the queue is never used */
		if (p->q_limit_pkts)
			need += p->q_limit_pkts;
		else if (p->q_limit_bytes)
			need += p->q_limit_bytes / 500.0;
		else if (p->rate_kind != RATE_NONE)
			need += 65536;
	}
	if (need < POOL_MIN_PKTS)
		need = POOL_MIN_PKTS;
	if (need > POOL_MAX_PKTS)
		need = POOL_MAX_PKTS;
	return (size_t)need;
}

static void *alloc_zero(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		die("cannot allocate %zu bytes: %s", bytes, strerror(errno));
	return p;
}

static void alloc_state(void)
{
	size_t n = estimate_pool(), i;
	uint8_t *bufs;
	int d;

	pool = alloc_zero(n * sizeof(*pool));
	bufs = alloc_zero(n * PKT_BUF_BYTES);
	free_stack = alloc_zero(n * sizeof(uint32_t));
	heap = alloc_zero(n * sizeof(uint32_t));
	for (i = 0; i < n; i++) {
		pool[i].data = bufs + i * PKT_BUF_BYTES;
		free_stack[n - 1 - i] = i;
	}
	free_n = n;
	cfg.pool_pkts = n;
	for (d = 0; d < 2; d++) {
		dirs[d].cfg = &cfg.pipe[d];
		dirs[d].q.v = alloc_zero(n * sizeof(uint32_t));
		dirs[d].q.cap = n;
		dirs[d].rng = (cfg.seed + 1) * 0x9E3779B97F4A7C15ull + d * 0xD1B54A32D192ED03ull;
		if (!dirs[d].rng)
			dirs[d].rng = 1;
		dirs[d].mark_rng = dirs[d].rng ^ 0xA0761D6478BD642Full;
		if (cfg.pipe[d].ecn == ECN_PHANTOM) {
			dirs[d].win = alloc_zero(n * sizeof(struct win_ent));
			dirs[d].win_cap = n;
		}
		if (cfg.pipe[d].ack_every > 1)
			dirs[d].acks = alloc_zero(ACK_SLOTS * sizeof(struct ack_slot));
	}
	if (log_fd >= 0)
		log_ring = alloc_zero(LOG_RING_RECS * sizeof(*log_ring));
}

/*
 * A PM QoS request for 0 us of CPU wake-up latency, held (the fd open) until
 * exit, as cyclictest does: on a VM an idle vCPU halts, and its wake-up adds
 * 100-300 us to a release and to linkem's own wake-up when a packet arrives
 * (2-vCPU VM with the haltpoll cpuidle driver: release lateness p50 140 ->
 * 70 us, a UDP echo's RTT above the configured delay 1.1 -> 0.75 ms). The
 * idle loop polls instead of halting while linkem runs; it gives the CPU
 * to any runnable task as before.
 */
static void hold_wakeup_latency(void)
{
	const int32_t zero_us = 0;
	int fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);

	if (fd >= 0 && write(fd, &zero_us, sizeof(zero_us)) == sizeof(zero_us))
		return;		/* fd stays open: the request lasts until exit */
	warn("/dev/cpu_dma_latency: %s (idle CPUs may add wake-up lateness)",
	     strerror(errno));
	if (fd >= 0)
		close(fd);
}

static void setup_realtime(void)
{
	struct sched_param sp = { .sched_priority = FIFO_PRIO };

	if (prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0))
		warn("PR_SET_TIMERSLACK: %s", strerror(errno));
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		warn("mlockall: %s (page faults may add lateness)", strerror(errno));
	if (cfg.no_rt)
		return;
	hold_wakeup_latency();
	if (sched_setscheduler(0, SCHED_FIFO, &sp))
		warn("SCHED_FIFO not permitted (%s): expect rare ms-scale lateness",
		     strerror(errno));
}

/*
 * Drops outside linkem: the TUN's tx_dropped counts packets the namespace
 * sent while the device queue was full (linkem read too slowly), rx_dropped
 * packets linkem wrote that the stack refused (backlog full). Read from
 * /proc/thread-self/net/dev inside the port's namespace.
 */
static void read_tun_drops(struct port *pt, int self_ns)
{
	char line[512];
	FILE *f;

	pt->tun_tx_dropped = pt->tun_rx_dropped = -1;
	if (pt->nsfd < 0 || setns(pt->nsfd, CLONE_NEWNET))
		return;
	f = fopen("/proc/thread-self/net/dev", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':'), *name = line;
		unsigned long long v[16];

		if (!c)
			continue;
		*c = 0;
		while (*name == ' ')
			name++;
		if (strcmp(name, pt->dev))
			continue;
		if (sscanf(c + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
			   &v[8], &v[9], &v[10], &v[11]) == 12) {
			pt->tun_rx_dropped = v[3];
			pt->tun_tx_dropped = v[11];
		}
	}
	if (f)
		fclose(f);
	if (setns(self_ns, CLONE_NEWNET))
		warn("setns back: %s", strerror(errno));
}

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* ---------- stats ---------- */

static double hist_pct(double q)
{
	uint64_t target, acc = 0;
	size_t i;

	if (!late_count)
		return 0;
	target = (uint64_t)ceil(q * late_count);
	if (!target)
		target = 1;
	for (i = 0; i <= HIST_BUCKETS_US; i++) {
		acc += hist[i];
		if (acc >= target)
			return i < HIST_BUCKETS_US ? (double)(i + 1) : late_max_ns / 1000.0;
	}
	return late_max_ns / 1000.0;
}

static const char *const drop_names[] = { "none", "loss", "queue", "noroute",
					   "pool", "write" };

static void write_dir_stats(FILE *f, const char *name, const struct dir_state *d,
			    bool last)
{
	const struct pipe_cfg *c = d->cfg;
	int r;

	fprintf(f, "  \"%s\": {\"arrived\": %llu, \"arrived_bytes\": %llu, "
		"\"forwarded\": %llu, \"forwarded_bytes\": %llu, \"dropped\": {",
		name, (unsigned long long)d->arrived,
		(unsigned long long)d->arrived_bytes, (unsigned long long)d->forwarded,
		(unsigned long long)d->forwarded_bytes);
	for (r = 1; r <= LEM_DROP_WRITE; r++)
		fprintf(f, "\"%s\": %llu%s", drop_names[r],
			(unsigned long long)d->drops[r], r < LEM_DROP_WRITE ? ", " : "");
	fprintf(f, "}, \"ce_marked\": %llu, \"ect_in\": %llu, \"ce_in\": %llu, "
		"\"max_queue_bytes\": %llu, \"max_queue_pkts\": %llu, "
		"\"left_in_queue\": %zu, \"queue_limit_bytes\": %llu, "
		"\"queue_limit_pkts\": %llu, \"delay_us\": %llu, "
		"\"acks_coalesced\": %llu, \"rate_mbit\": ",
		(unsigned long long)d->ce_marked, (unsigned long long)d->ect_in,
		(unsigned long long)d->ce_in, (unsigned long long)d->max_q_bytes,
		(unsigned long long)d->max_q_pkts, d->q.n,
		(unsigned long long)c->q_limit_bytes,
		(unsigned long long)c->q_limit_pkts,
		(unsigned long long)(c->delay_ns / NS_PER_US),
		(unsigned long long)d->acks_coalesced);
	if (c->rate_kind == RATE_NONE)
		fputs("null", f);
	else
		fprintf(f, "%.6f", c->ref_rate_bpns * 1e3);
	fprintf(f, "}%s\n", last ? "" : ",");
}

static void write_stats(const char *file, uint64_t end)
{
	FILE *f = fopen(file, "w");
	double p999 = hist_pct(0.999);
	bool valid = p999 * NS_PER_US <= cfg.lateness_bound_ns;
	size_t i;
	int w;

	if (!f) {
		warn("cannot write %s: %s", file, strerror(errno));
		return;
	}
	fprintf(f, "{\n  \"version\": 1,\n  \"valid\": %s,\n", valid ? "true" : "false");
	fprintf(f, "  \"start_ns\": %llu, \"end_ns\": %llu, \"origin_ns\": %llu,\n",
		(unsigned long long)start_ns, (unsigned long long)end,
		(unsigned long long)origin_ns);
	fprintf(f, "  \"pool_pkts\": %llu, \"log_records\": %llu, \"log_lost\": %llu, "
		"\"in_flight_at_exit\": %zu,\n",
		(unsigned long long)cfg.pool_pkts, (unsigned long long)log_records,
		(unsigned long long)log_lost, heap_n);
	fprintf(f, "  \"lateness_bound_us\": %.3f,\n", cfg.lateness_bound_ns / 1e3);
	fprintf(f, "  \"lateness_us\": {\"count\": %llu, \"mean\": %.3f, \"p50\": %.0f, "
		"\"p90\": %.0f, \"p99\": %.0f, \"p999\": %.0f, \"max\": %.3f,\n"
		"    \"hist_bucket_us\": 1, \"hist\": [",
		(unsigned long long)late_count,
		late_count ? late_sum_ns / 1e3 / late_count : 0.0, hist_pct(0.5),
		hist_pct(0.9), hist_pct(0.99), p999, late_max_ns / 1e3);
	for (i = 0, w = 0; i <= HIST_BUCKETS_US; i++)
		if (hist[i])
			fprintf(f, "%s[%zu, %llu]", w++ ? ", " : "", i,
				(unsigned long long)hist[i]);
	fputs("]},\n  \"warnings\": [", f);
	for (w = 0; w < nwarnings; w++) {
		char *c;

		for (c = warnings[w]; *c; c++)
			if (*c == '"' || *c == '\\')
				*c = '\'';
		fprintf(f, "%s\"%s\"", w ? ", " : "", warnings[w]);
	}
	fputs("],\n  \"ports\": [", f);
	for (w = 0; w < cfg.nports; w++)
		fprintf(f, "%s{\"name\": \"%s\", \"dev\": \"%s\", \"tun_tx_dropped\": %lld, "
			"\"tun_rx_dropped\": %lld}", w ? ", " : "", cfg.ports[w].name,
			cfg.ports[w].dev, cfg.ports[w].tun_tx_dropped,
			cfg.ports[w].tun_rx_dropped);
	fputs("],\n", f);
	write_dir_stats(f, "fwd", &dirs[0], false);
	write_dir_stats(f, "rev", &dirs[1], true);
	fputs("}\n", f);
	fclose(f);
}

/* ---------- main loop ---------- */

static uint64_t next_event(uint64_t now)
{
	uint64_t next = U64_INF, t;
	int d;

	/* first: held ACKs due now enter the pipe (and the delay line) */
	for (d = 0; d < 2; d++)
		if (dirs[d].acks_held && (t = acks_due(&dirs[d], now)) < next)
			next = t;
	if (heap_n && pool[heap[0]].release < next)
		next = pool[heap[0]].release;
	for (d = 0; d < 2; d++) {
		const struct dir_state *ds = &dirs[d];
		uint64_t start;

		if (!ds->q.n || ds->busy_until == U64_INF)
			continue;
		start = pool[ds->q.v[ds->q.head]].arrive;
		if (ds->busy_until > start)
			start = ds->busy_until;
		if (start < next)
			next = start;
	}
	return next;
}

static void run(uint64_t deadline)
{
	struct pollfd pfd[MAX_PORTS];
	sigset_t unblocked;
	int i;

	sigemptyset(&unblocked);
	for (i = 0; i < cfg.nports; i++) {
		pfd[i].fd = cfg.ports[i].fd;
		pfd[i].events = POLLIN;
	}
	while (!stop_flag) {
		uint64_t now = now_ns(), next;
		struct timespec ts, *tsp = NULL;
		int n;

		if (now >= deadline)
			break;
		serve(&dirs[0], now);
		serve(&dirs[1], now);
		release_due(now);
		now = now_ns();
		next = next_event(now);
		if (deadline < next)
			next = deadline;
		if (next != U64_INF) {
			uint64_t wait = next > now ? next - now : 0;

			if (wait < SPIN_BELOW_NS)
				wait = 0;
			ts.tv_sec = wait / NS_PER_S;
			ts.tv_nsec = wait % NS_PER_S;
			tsp = &ts;
		}
		n = ppoll(pfd, cfg.nports, tsp, &unblocked);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("ppoll: %s", strerror(errno));
		}
		for (i = 0; n > 0 && i < cfg.nports; i++)
			if (!(pfd[i].revents & POLLIN) &&
			    (pfd[i].revents & (POLLERR | POLLHUP | POLLNVAL)))
				die("port %s: device gone", cfg.ports[i].name);
		if (n > 0)
			receive_ready(pfd);
	}
}

static void usage(FILE *f)
{
	fputs("usage: linkem --config CFG.json [--log PKTS.bin] [--stats STATS.json]\n"
	      "\n"
	      "Bottleneck link emulator between network namespaces over TUN devices.\n"
	      "Creates one TUN per port in its namespace, prints READY, forwards\n"
	      "until SIGTERM/SIGINT (or duration_s), then writes the stats.\n"
	      "See selftests/lab/linkem/README.md for the configuration.\n", f);
}

int main(int argc, char **argv)
{
	const char *cfg_file = NULL, *log_file = NULL, *stats_file = NULL;
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block;
	uint64_t deadline = U64_INF;
	int i, self_ns;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		}
		if (i + 1 >= argc)
			die("%s needs an argument (try --help)", argv[i]);
		if (!strcmp(argv[i], "--config"))
			cfg_file = argv[++i];
		else if (!strcmp(argv[i], "--log"))
			log_file = argv[++i];
		else if (!strcmp(argv[i], "--stats"))
			stats_file = argv[++i];
		else
			die("unknown option %s (try --help)", argv[i]);
	}
	if (!cfg_file) {
		usage(stderr);
		return 1;
	}
	load_config(cfg_file);

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (log_file) {
		struct linkem_log_hdr h = { LINKEM_LOG_MAGIC, LINKEM_LOG_VERSION,
					    sizeof(struct linkem_log_rec), 0 };

		log_fd = open(log_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (log_fd < 0)
			die("cannot create log %s: %s", log_file, strerror(errno));
		log_path = log_file;
		if (write(log_fd, &h, sizeof(h)) != sizeof(h))
			die("cannot write log %s", log_file);
	}
	alloc_state();
	self_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self_ns < 0)
		die("own namespace: %s", strerror(errno));
	/* TUN fds are not persistent: exit (also via die) removes the devices */
	for (i = 0; i < cfg.nports; i++)
		tun_create(&cfg.ports[i], self_ns);
	log_start();		/* before SCHED_FIFO: the writer stays SCHED_OTHER */
	setup_realtime();

	start_ns = now_ns();
	if (!cfg.origin_first_packet)
		set_origin(start_ns);
	if (cfg.duration_s > 0)
		deadline = start_ns + (uint64_t)(cfg.duration_s * NS_PER_S);
	log_path = NULL;	/* from here on the log is a result */
	fputs("READY\n", stdout);
	fflush(stdout);

	run(deadline);

	log_finish();
	for (i = 0; i < cfg.nports; i++)
		read_tun_drops(&cfg.ports[i], self_ns);
	if (stats_file)
		write_stats(stats_file, now_ns());
	for (i = 0; i < cfg.nports; i++)
		close(cfg.ports[i].fd);
	return 0;
}
