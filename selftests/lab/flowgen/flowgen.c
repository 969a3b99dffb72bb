// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * flowgen: many TCP flows from one process, each with its own congestion
 * control, sampled through TCP_INFO.
 *
 * iperf3 stops at 128 streams and sets one CC for all of them; the lab needs
 * hundreds to thousands of flows with a CC per socket, start and stop times,
 * bulk and request/response traffic, and a time series of the kernel's view
 * of every flow. Everything runs in one thread around one epoll instance with
 * non-blocking sockets, so a thousand flows cost a thousand sockets and no
 * threads.
 *
 *   flowgen server --addr A --ports P[-Q] [--cc NAME]
 *       listens on every port of the range, discards what bulk flows send
 *       (large reads) and answers every request of a request/response flow
 *       with resp_bytes. Prints READY once listening; runs until SIGTERM.
 *
 *   flowgen client --spec FLOWS.json --out SAMPLES.csv [--summary SUM.json]
 *       runs the flows of the spec (see README.md), writes one CSV row per
 *       open flow every sample_ms and a summary with per-flow totals and
 *       errors. An unknown CC is an error of that flow, not of the run.
 *
 * Wire protocol (client to server, once per connection): a 16-byte header
 * of four big-endian u32: FLOWGEN_MAGIC, kind (0 bulk, 1 rr), req_bytes,
 * resp_bytes. Everything after it is payload. A bulk flow's payload is
 * discarded; an rr flow's payload is cut into req_bytes requests, each
 * answered by resp_bytes. The client half-closes when it is done and the
 * server closes on EOF, so the client knows the last byte arrived.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FLOWGEN_MAGIC		0x666c6f77u	/* "flow" */
#define HDR_BYTES		16		/* four u32, see above */
#define IO_BUF_BYTES		(64 * 1024)	/* one read/write per wake-up: large to cut syscalls, small to stay fair */
#define LISTEN_BACKLOG		4096		/* = net.core.somaxconn default since 5.4 */
/*
 * epoll_wait batch. Small on purpose: under load one send can cost the whole
 * forwarding path (veth, router, shaper run in the sender's context), so a
 * batch of 16 x IO_BUF_BYTES keeps samples and stop times within a few ms.
 * Every reported event is handled: epoll rotates level-triggered fds to the
 * tail of its ready list, which is fair only if none is skipped.
 */
#define MAX_EVENTS		16
#define TICK_NS			1000000ull	/* start/stop resolution: 1 ms */
#define FD_SPARE		64		/* listen, epoll, stdio, files on top of flows */
#define DEFAULT_SAMPLE_MS	100		/* the lab's 100 ms goodput bins */
#define NS_PER_S		1000000000ull
#define NS_PER_MS		1000000ull
#define NS_PER_US		1000ull
#define CC_NAME_MAX		16		/* = TCP_CA_NAME_MAX in the kernel */
#define RR_LAT_MAX		65536		/* latencies kept per rr flow for percentiles */

enum kind { KIND_BULK = 0, KIND_RR = 1 };

static volatile sig_atomic_t stop_requested;
static char zero_buf[IO_BUF_BYTES];
static char sink_buf[IO_BUF_BYTES];

static void on_signal(int sig) { (void)sig; stop_requested = 1; }

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* Raise the soft (and if allowed the hard) fd limit to hold @need fds. */
static int raise_nofile(rlim_t need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -1;
	if (rl.rlim_cur >= need)
		return 0;
	if (rl.rlim_max < need) {
		struct rlimit want = { need, need };

		if (setrlimit(RLIMIT_NOFILE, &want) == 0)
			return 0;
		fprintf(stderr, "flowgen: need %llu fds, hard limit is %llu\n",
			(unsigned long long)need, (unsigned long long)rl.rlim_max);
		return -1;
	}
	rl.rlim_cur = need;
	return setrlimit(RLIMIT_NOFILE, &rl);
}

static void put_u32(unsigned char *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get_u32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

/* ---------------------------------------------------------------- server */

enum srv_tag { SRV_LISTEN, SRV_CONN };

struct srv_conn {
	enum srv_tag tag;
	int fd;
	unsigned char hdr[HDR_BYTES];
	unsigned int hdr_got;
	uint32_t kind, req_bytes, resp_bytes;
	uint64_t req_acc;	/* payload bytes of the current request */
	uint64_t out_pending;	/* response bytes still to write */
	bool want_out;
};

static uint64_t srv_bytes_in, srv_conns;

static int parse_ports(const char *s, int *lo, int *hi)
{
	char *end;
	long a = strtol(s, &end, 10), b = a;

	if (*end == '-')
		b = strtol(end + 1, &end, 10);
	if (*end || a < 1 || b > 65535 || b < a)
		return -1;
	*lo = a;
	*hi = b;
	return 0;
}

static void srv_close(int ep, struct srv_conn *c)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c);
}

static void srv_set_out(int ep, struct srv_conn *c, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c };

	if (c->want_out == on)
		return;
	c->want_out = on;
	epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Account @n payload bytes of an rr connection: each full request owes a response. */
static void srv_rr_consume(struct srv_conn *c, uint64_t n)
{
	c->req_acc += n;
	while (c->req_bytes && c->req_acc >= c->req_bytes) {
		c->req_acc -= c->req_bytes;
		c->out_pending += c->resp_bytes;
	}
}

/* Returns false when the connection is finished (EOF or error). */
static bool srv_read(struct srv_conn *c)
{
	for (;;) {
		ssize_t n = read(c->fd, sink_buf, sizeof(sink_buf));

		if (n == 0)
			return false;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		srv_bytes_in += n;
		size_t off = 0;

		if (c->hdr_got < HDR_BYTES) {
			size_t take = HDR_BYTES - c->hdr_got;

			if (take > (size_t)n)
				take = n;
			memcpy(c->hdr + c->hdr_got, sink_buf, take);
			c->hdr_got += take;
			off = take;
			if (c->hdr_got == HDR_BYTES) {
				if (get_u32(c->hdr) != FLOWGEN_MAGIC)
					return false;
				c->kind = get_u32(c->hdr + 4);
				c->req_bytes = get_u32(c->hdr + 8);
				c->resp_bytes = get_u32(c->hdr + 12);
			}
		}
		if (c->hdr_got == HDR_BYTES && c->kind == KIND_RR)
			srv_rr_consume(c, n - off);
		/* one large read per wake-up (level-triggered): fair to all */
		return true;
	}
}

static bool srv_write(struct srv_conn *c)
{
	if (c->out_pending) {
		size_t len = c->out_pending < IO_BUF_BYTES ? c->out_pending : IO_BUF_BYTES;
		ssize_t n = send(c->fd, zero_buf, len, MSG_NOSIGNAL);

		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		c->out_pending -= n;
	}
	return true;
}

static void srv_accept(int ep, int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		struct srv_conn *c = calloc(1, sizeof(*c));
		struct epoll_event ev = { .events = EPOLLIN };

		if (!c) {
			close(fd);
			return;
		}
		c->tag = SRV_CONN;
		c->fd = fd;
		ev.data.ptr = c;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			free(c);
			continue;
		}
		srv_conns++;
	}
}

/* The listeners' congestion control (--cc), or none: the namespace's. The
 * kernel negotiates ECN on a SYN-ACK with the listener's CC, so a receiver
 * of an AccECN sender needs an AccECN CC here (docs/l4s.md). */
static const char *srv_cc;

static int srv_listen(int ep, const char *addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, fd;
	struct srv_conn *l;
	struct epoll_event ev = { .events = EPOLLIN };

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "flowgen: bad --addr %s (IPv4 expected)\n", addr);
		return -1;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (srv_cc && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, srv_cc, strlen(srv_cc))) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, LISTEN_BACKLOG)) {
		fprintf(stderr, "flowgen: listen %s:%d: %s\n", addr, port, strerror(errno));
		return -1;
	}
	l = calloc(1, sizeof(*l));
	l->tag = SRV_LISTEN;
	l->fd = fd;
	ev.data.ptr = l;
	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static void srv_event(int ep, struct srv_conn *c, uint32_t events)
{
	bool ok = true;

	if (c->tag == SRV_LISTEN) {
		srv_accept(ep, c->fd);
		return;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		ok = srv_read(c);
	if (ok && c->out_pending)
		ok = srv_write(c);
	if (!ok) {
		srv_close(ep, c);
		return;
	}
	srv_set_out(ep, c, c->out_pending > 0);
}

/* A server takes what connections come: as many fds as the hard limit allows. */
static void raise_server_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int run_server(const char *addr, const char *ports)
{
	int lo, hi, ep;
	struct epoll_event evs[MAX_EVENTS];

	if (!addr || !ports || parse_ports(ports, &lo, &hi)) {
		fprintf(stderr, "flowgen server: need --addr A --ports P[-Q] (1..65535)\n");
		return 1;
	}
	raise_server_nofile();
	ep = epoll_create1(EPOLL_CLOEXEC);
	for (int p = lo; p <= hi; p++)
		if (srv_listen(ep, addr, p))
			return 1;
	printf("READY\n");
	fflush(stdout);
	while (!stop_requested) {
		int n = epoll_wait(ep, evs, MAX_EVENTS, 200);

		for (int i = 0; i < n; i++)
			srv_event(ep, evs[i].data.ptr, evs[i].events);
	}
	fprintf(stderr, "flowgen server: %llu connections, %llu bytes received\n",
		(unsigned long long)srv_conns, (unsigned long long)srv_bytes_in);
	return 0;
}

/* ---------------------------------------------------------------- client */

enum flow_state { F_PENDING, F_CONNECTING, F_RUNNING, F_DRAINING, F_DONE };

struct flow {
	/* spec */
	int id;
	char dst[64];
	int port;
	char cc[CC_NAME_MAX];		/* "" = namespace default */
	uint64_t start_ns, stop_ns;	/* relative to t0; stop 0 = none */
	enum kind kind;
	uint32_t req_bytes, resp_bytes;
	int64_t bytes;			/* bulk: payload to send, -1 = until stop */
	int64_t count;			/* rr: requests to complete, -1 = until stop */
	/* run */
	enum flow_state st;
	int fd;
	uint64_t cookie;
	char cc_actual[CC_NAME_MAX];
	unsigned char hdr[HDR_BYTES];
	unsigned int hdr_sent;
	uint64_t app_sent;		/* payload bytes written */
	uint64_t app_rcvd;		/* response bytes read */
	uint64_t req_left, resp_left;	/* rr: current request/response */
	int64_t rr_done;
	uint64_t rr_t0_ns;
	uint32_t *rr_lat_us;
	size_t rr_nlat;
	uint64_t t_connect_ns, t_end_ns;
	bool want_out;
	bool completed;			/* bytes/count reached and EOF seen */
	int connect_failures;
	const char *err_stage;
	int err_no;
	struct tcp_info last_ti;
	bool have_ti;
};

struct client {
	struct flow *flows;
	size_t nflows;
	uint64_t sample_ns;
	uint64_t t0;
	int ep;
	FILE *csv;
	uint64_t nsamples;
};

static void flow_fail(struct flow *f, const char *stage, int err)
{
	if (!f->err_stage) {
		f->err_stage = stage;
		f->err_no = err;
	}
}

static int json_int_field(json_t *o, const char *k, int64_t dflt, int64_t *out)
{
	json_t *v = json_object_get(o, k);

	if (!v || json_is_null(v)) {
		*out = dflt;
		return 0;
	}
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	if (json_is_real(v)) {
		*out = (int64_t)json_real_value(v);
		return 0;
	}
	return -1;
}

static int json_secs_field(json_t *o, const char *k, uint64_t *out_ns)
{
	json_t *v = json_object_get(o, k);

	*out_ns = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v) || json_number_value(v) < 0)
		return -1;
	*out_ns = (uint64_t)(json_number_value(v) * NS_PER_S + 0.5);
	return 0;
}

static int parse_flow(json_t *o, size_t idx, struct flow *f)
{
	const char *s;
	int64_t v;

#define BAD(what) do { fprintf(stderr, "flowgen: flows[%zu]: %s\n", idx, what); return -1; } while (0)
	if (!json_is_object(o))
		BAD("not an object");
	if (json_int_field(o, "id", idx, &v))
		BAD("id must be an integer");
	f->id = v;
	s = json_string_value(json_object_get(o, "dst"));
	if (!s || strlen(s) >= sizeof(f->dst))
		BAD("dst (IPv4 address string) missing");
	strcpy(f->dst, s);
	if (json_int_field(o, "port", 5201, &v) || v < 1 || v > 65535)
		BAD("port must be 1..65535");
	f->port = v;
	s = json_string_value(json_object_get(o, "cc"));
	if (s && strlen(s) >= sizeof(f->cc))
		BAD("cc name longer than 15 characters");
	strcpy(f->cc, s ? s : "");
	if (json_secs_field(o, "start_s", &f->start_ns) ||
	    json_secs_field(o, "stop_s", &f->stop_ns))
		BAD("start_s/stop_s must be non-negative numbers");
	if (f->stop_ns && f->stop_ns <= f->start_ns)
		BAD("stop_s must be after start_s");
	s = json_string_value(json_object_get(o, "kind"));
	if (!s || !strcmp(s, "bulk"))
		f->kind = KIND_BULK;
	else if (!strcmp(s, "rr"))
		f->kind = KIND_RR;
	else
		BAD("kind must be \"bulk\" or \"rr\"");
	if (json_int_field(o, "req_bytes", 100, &v) || v < 1 || v > UINT32_MAX)
		BAD("req_bytes must be 1..2^32-1");
	f->req_bytes = v;
	if (json_int_field(o, "resp_bytes", 1000, &v) || v < 0 || v > UINT32_MAX)
		BAD("resp_bytes must be 0..2^32-1");
	f->resp_bytes = v;
	if (json_int_field(o, "bytes", -1, &f->bytes) || f->bytes < -1)
		BAD("bytes must be null or >= 0");
	if (json_int_field(o, "count", -1, &f->count) || f->count < -1)
		BAD("count must be null or >= 0");
	if (!f->stop_ns && f->bytes < 0 && f->count < 0)
		BAD("a flow needs stop_s, bytes or count to end");
	return 0;
#undef BAD
}

static int load_spec(const char *path, struct client *cl)
{
	json_error_t jerr;
	json_t *root = json_load_file(path, 0, &jerr), *flows;
	int64_t sms;

	if (!root) {
		fprintf(stderr, "flowgen: %s:%d: %s\n", path, jerr.line, jerr.text);
		return -1;
	}
	flows = json_object_get(root, "flows");
	if (!json_is_array(flows) || json_array_size(flows) == 0) {
		fprintf(stderr, "flowgen: %s: \"flows\" must be a non-empty array\n", path);
		goto bad;
	}
	if (json_int_field(root, "sample_ms", DEFAULT_SAMPLE_MS, &sms) || sms < 1) {
		fprintf(stderr, "flowgen: %s: sample_ms must be a positive integer\n", path);
		goto bad;
	}
	cl->sample_ns = sms * NS_PER_MS;
	cl->nflows = json_array_size(flows);
	cl->flows = calloc(cl->nflows, sizeof(*cl->flows));
	for (size_t i = 0; i < cl->nflows; i++) {
		cl->flows[i].fd = -1;
		if (parse_flow(json_array_get(flows, i), i, &cl->flows[i]))
			goto bad;
	}
	json_decref(root);
	return 0;
bad:
	json_decref(root);
	return -1;
}

static void flow_epoll(struct client *cl, struct flow *f, bool out)
{
	struct epoll_event ev = { .events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = f };

	if (f->want_out == out)
		return;
	f->want_out = out;
	epoll_ctl(cl->ep, EPOLL_CTL_MOD, f->fd, &ev);
}

static void flow_sample_ti(struct flow *f)
{
	socklen_t len = sizeof(f->last_ti);

	if (f->fd >= 0 && !getsockopt(f->fd, IPPROTO_TCP, TCP_INFO, &f->last_ti, &len))
		f->have_ti = true;
}

static void flow_close(struct client *cl, struct flow *f, uint64_t now)
{
	if (f->fd >= 0) {
		flow_sample_ti(f);
		epoll_ctl(cl->ep, EPOLL_CTL_DEL, f->fd, NULL);
		close(f->fd);
		f->fd = -1;
	}
	f->t_end_ns = now - cl->t0;
	f->st = F_DONE;
}

static void flow_start(struct client *cl, struct flow *f, uint64_t now)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(f->port) };
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = f };
	socklen_t len;
	int fd;

	f->st = F_DONE;
	f->t_end_ns = now - cl->t0;
	if (inet_pton(AF_INET, f->dst, &sa.sin_addr) != 1)
		return flow_fail(f, "address", EINVAL);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return flow_fail(f, "socket", errno);
	f->fd = fd;
	if (f->cc[0] && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, f->cc, strlen(f->cc))) {
		flow_fail(f, "set_cc", errno);
		close(fd);
		f->fd = -1;
		return;
	}
	len = sizeof(f->cc_actual);
	getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, f->cc_actual, &len);
	f->cc_actual[sizeof(f->cc_actual) - 1] = 0;
	len = sizeof(f->cookie);
	getsockopt(fd, SOL_SOCKET, SO_COOKIE, &f->cookie, &len);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS) {
		f->connect_failures++;
		flow_fail(f, "connect", errno);
		close(fd);
		f->fd = -1;
		return;
	}
	if (epoll_ctl(cl->ep, EPOLL_CTL_ADD, fd, &ev)) {
		flow_fail(f, "epoll", errno);
		close(fd);
		f->fd = -1;
		return;
	}
	f->want_out = true;
	put_u32(f->hdr, FLOWGEN_MAGIC);
	put_u32(f->hdr + 4, f->kind);
	put_u32(f->hdr + 8, f->req_bytes);
	put_u32(f->hdr + 12, f->resp_bytes);
	f->st = F_CONNECTING;
}

/* Payload this flow may write now (bulk: all it has; rr: rest of the request). */
static uint64_t flow_send_budget(const struct flow *f)
{
	if (f->kind == KIND_RR)
		return f->req_left;
	if (f->bytes >= 0)
		return (uint64_t)f->bytes - f->app_sent;
	return UINT64_MAX;
}

static void flow_rr_next(struct flow *f, uint64_t now)
{
	if (f->count >= 0 && f->rr_done >= f->count) {
		f->req_left = 0;
		return;
	}
	f->req_left = f->req_bytes;
	f->resp_left = f->resp_bytes;
	f->rr_t0_ns = now;
}

/* Half-close once everything asked for is written (and answered). */
static bool flow_finished_sending(const struct flow *f)
{
	if (f->kind == KIND_BULK)
		return f->bytes >= 0 && f->app_sent >= (uint64_t)f->bytes;
	return f->count >= 0 && f->rr_done >= f->count;
}

static bool flow_write(struct flow *f)
{
	while (f->hdr_sent < HDR_BYTES) {
		ssize_t n = send(f->fd, f->hdr + f->hdr_sent, HDR_BYTES - f->hdr_sent, MSG_NOSIGNAL);

		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? true : (flow_fail(f, "send", errno), false);
		f->hdr_sent += n;
	}
	for (;;) {
		uint64_t budget = flow_send_budget(f);
		size_t len = budget < IO_BUF_BYTES ? budget : IO_BUF_BYTES;
		ssize_t n;

		if (!len)
			return true;
		n = send(f->fd, zero_buf, len, MSG_NOSIGNAL);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? true : (flow_fail(f, "send", errno), false);
		f->app_sent += n;
		if (f->kind == KIND_RR)
			f->req_left -= n;
		/* One buffer per wake-up: epoll is level-triggered, and a loop
		 * until EAGAIN lets one flow with a 32 MB sndbuf stall the
		 * samples and stop times of a thousand others. */
		return true;
	}
}

static void flow_rr_record(struct flow *f, uint64_t now)
{
	if (!f->rr_lat_us)
		f->rr_lat_us = calloc(RR_LAT_MAX, sizeof(*f->rr_lat_us));
	if (f->rr_lat_us && f->rr_nlat < RR_LAT_MAX)
		f->rr_lat_us[f->rr_nlat++] = (now - f->rr_t0_ns) / NS_PER_US;
	f->rr_done++;
}

/* Returns false on EOF or error. */
static bool flow_read(struct flow *f, uint64_t now)
{
	for (;;) {
		ssize_t n = read(f->fd, sink_buf, sizeof(sink_buf));

		if (n == 0)
			return false;
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return true;
			flow_fail(f, "recv", errno);
			return false;
		}
		f->app_rcvd += n;
		if (f->kind == KIND_RR) {
			uint64_t left = n;

			while (left && f->resp_left && !f->req_left) {
				uint64_t take = left < f->resp_left ? left : f->resp_left;

				f->resp_left -= take;
				left -= take;
				if (!f->resp_left) {
					flow_rr_record(f, now);
					flow_rr_next(f, now);
				}
			}
		}
		return true;	/* one read per wake-up, as in flow_write */
	}
}

static void flow_connected(struct flow *f, uint64_t now, uint64_t t0)
{
	int err = 0;
	socklen_t len = sizeof(err);

	getsockopt(f->fd, SOL_SOCKET, SO_ERROR, &err, &len);
	if (err) {
		f->connect_failures++;
		flow_fail(f, "connect", err);
		return;
	}
	f->st = F_RUNNING;
	f->t_connect_ns = now - t0;
	if (f->kind == KIND_RR) {
		flow_rr_next(f, now);
		/* zero-byte responses complete as soon as the request is out */
	}
}

static void flow_event(struct client *cl, struct flow *f, uint32_t events, uint64_t now)
{
	bool ok = true;

	if (f->st == F_CONNECTING) {
		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		flow_connected(f, now, cl->t0);
		if (f->st != F_RUNNING)
			return flow_close(cl, f, now);
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		ok = flow_read(f, now);
		if (!ok) {
			f->completed = f->st == F_DRAINING && !f->err_stage;
			if (!f->completed && !f->err_stage)
				flow_fail(f, "peer_closed", ECONNRESET);
			return flow_close(cl, f, now);
		}
	}
	if (f->st == F_RUNNING) {
		if (!flow_write(f))
			return flow_close(cl, f, now);
		/* rr with empty responses: the request being out is the answer */
		if (f->kind == KIND_RR && !f->resp_bytes && !f->req_left && f->hdr_sent == HDR_BYTES) {
			while (!f->req_left && !flow_finished_sending(f)) {
				flow_rr_record(f, now);
				flow_rr_next(f, now);
				if (!flow_write(f))
					return flow_close(cl, f, now);
			}
		}
		if (flow_finished_sending(f) && f->hdr_sent == HDR_BYTES) {
			shutdown(f->fd, SHUT_WR);
			f->st = F_DRAINING;
		}
	}
	flow_epoll(cl, f, f->st == F_RUNNING && (f->hdr_sent < HDR_BYTES || flow_send_budget(f)));
}

static void csv_header(FILE *o)
{
	fprintf(o, "t_s,flow,cookie,cc,bytes_acked,bytes_sent,bytes_retrans,total_retrans,"
		   "data_segs_out,rtt_us,min_rtt_us,snd_cwnd,pacing_rate_Bps,"
		   "delivery_rate_Bps,delivered,delivered_ce,state\n");
}

static void csv_row(FILE *o, double t_s, const struct flow *f, const struct tcp_info *ti)
{
	fprintf(o, "%.3f,%d,%llu,%s,%llu,%llu,%llu,%u,%u,%u,%u,%u,%llu,%llu,%u,%u,%u\n",
		t_s, f->id, (unsigned long long)f->cookie, f->cc_actual,
		(unsigned long long)ti->tcpi_bytes_acked, (unsigned long long)ti->tcpi_bytes_sent,
		(unsigned long long)ti->tcpi_bytes_retrans, ti->tcpi_total_retrans,
		ti->tcpi_data_segs_out, ti->tcpi_rtt, ti->tcpi_min_rtt, ti->tcpi_snd_cwnd,
		(unsigned long long)ti->tcpi_pacing_rate,
		(unsigned long long)ti->tcpi_delivery_rate, ti->tcpi_delivered,
		ti->tcpi_delivered_ce, ti->tcpi_state);
}

static void sample_all(struct client *cl, uint64_t t_rel)
{
	double t_s = (double)t_rel / NS_PER_S;

	for (size_t i = 0; i < cl->nflows; i++) {
		struct flow *f = &cl->flows[i];

		if (f->fd < 0 || f->st == F_PENDING || f->st == F_CONNECTING)
			continue;
		flow_sample_ti(f);
		if (f->have_ti)
			csv_row(cl->csv, t_s, f, &f->last_ti);
	}
	fflush(cl->csv);
	cl->nsamples++;
}

/* Start due flows, stop expired ones. Returns true while any flow is not done. */
static bool schedule(struct client *cl, uint64_t now)
{
	uint64_t t = now - cl->t0;
	bool live = false;

	for (size_t i = 0; i < cl->nflows; i++) {
		struct flow *f = &cl->flows[i];

		if (f->st == F_PENDING && t >= f->start_ns)
			flow_start(cl, f, now);
		if (f->st != F_PENDING && f->st != F_DONE && f->stop_ns && t >= f->stop_ns) {
			if (f->st == F_CONNECTING)
				flow_fail(f, "connect", ETIMEDOUT);
			flow_close(cl, f, now);
		}
		if (f->st != F_DONE)
			live = true;
	}
	return live;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static json_t *flow_summary(struct flow *f)
{
	json_t *o = json_object();
	const struct tcp_info *ti = &f->last_ti;

	json_object_set_new(o, "id", json_integer(f->id));
	json_object_set_new(o, "cc", json_string(f->cc));
	json_object_set_new(o, "cc_actual", json_string(f->cc_actual));
	json_object_set_new(o, "cookie", json_integer((json_int_t)f->cookie));
	json_object_set_new(o, "kind", json_string(f->kind == KIND_RR ? "rr" : "bulk"));
	json_object_set_new(o, "connected", json_boolean(f->t_connect_ns > 0));
	json_object_set_new(o, "completed", json_boolean(f->completed));
	json_object_set_new(o, "t_connect_s", json_real((double)f->t_connect_ns / NS_PER_S));
	json_object_set_new(o, "t_end_s", json_real((double)f->t_end_ns / NS_PER_S));
	json_object_set_new(o, "app_bytes_sent", json_integer(f->app_sent));
	json_object_set_new(o, "app_bytes_received", json_integer(f->app_rcvd));
	json_object_set_new(o, "bytes_acked", json_integer(f->have_ti ? ti->tcpi_bytes_acked : 0));
	json_object_set_new(o, "bytes_sent", json_integer(f->have_ti ? ti->tcpi_bytes_sent : 0));
	json_object_set_new(o, "bytes_retrans", json_integer(f->have_ti ? ti->tcpi_bytes_retrans : 0));
	json_object_set_new(o, "total_retrans", json_integer(f->have_ti ? ti->tcpi_total_retrans : 0));
	json_object_set_new(o, "data_segs_out", json_integer(f->have_ti ? ti->tcpi_data_segs_out : 0));
	json_object_set_new(o, "delivered_ce", json_integer(f->have_ti ? ti->tcpi_delivered_ce : 0));
	json_object_set_new(o, "rr_done", json_integer(f->rr_done));
	if (f->rr_nlat) {
		qsort(f->rr_lat_us, f->rr_nlat, sizeof(*f->rr_lat_us), cmp_u32);
		json_object_set_new(o, "rr_latency_us", json_pack("{s:I,s:I,s:I}",
			"p50", (json_int_t)f->rr_lat_us[f->rr_nlat / 2],
			"p99", (json_int_t)f->rr_lat_us[f->rr_nlat * 99 / 100],
			"max", (json_int_t)f->rr_lat_us[f->rr_nlat - 1]));
	}
	json_object_set_new(o, "connect_failures", json_integer(f->connect_failures));
	if (f->err_stage)
		json_object_set_new(o, "error", json_pack("{s:s,s:i,s:s,s:s}",
			"stage", f->err_stage, "errno", f->err_no,
			"errno_name", strerrorname_np(f->err_no) ? strerrorname_np(f->err_no) : "?",
			"message", strerror(f->err_no)));
	else
		json_object_set_new(o, "error", json_null());
	return o;
}

static int write_summary(struct client *cl, const char *path, uint64_t dur_ns, int *nerr)
{
	json_t *root = json_object(), *arr = json_array();
	uint64_t acked = 0;
	int rc;

	*nerr = 0;
	for (size_t i = 0; i < cl->nflows; i++) {
		struct flow *f = &cl->flows[i];

		*nerr += f->err_stage != NULL;
		acked += f->have_ti ? f->last_ti.tcpi_bytes_acked : 0;
		json_array_append_new(arr, flow_summary(f));
	}
	json_object_set_new(root, "flows", arr);
	json_object_set_new(root, "n_flows", json_integer(cl->nflows));
	json_object_set_new(root, "n_errors", json_integer(*nerr));
	json_object_set_new(root, "duration_s", json_real((double)dur_ns / NS_PER_S));
	json_object_set_new(root, "bytes_acked", json_integer(acked));
	json_object_set_new(root, "sample_ms", json_integer(cl->sample_ns / NS_PER_MS));
	json_object_set_new(root, "n_samples", json_integer(cl->nsamples));
	json_object_set_new(root, "interrupted", json_boolean(stop_requested));
	rc = path ? json_dump_file(root, path, JSON_INDENT(1)) : 0;
	json_decref(root);
	if (rc)
		fprintf(stderr, "flowgen: cannot write %s\n", path);
	return rc;
}

static int timeout_ms(uint64_t now, uint64_t next_sample, uint64_t next_tick)
{
	uint64_t next = next_sample < next_tick ? next_sample : next_tick;

	return next <= now ? 0 : (int)((next - now + NS_PER_MS - 1) / NS_PER_MS);
}

static int run_client(const char *spec, const char *out, const char *sum)
{
	struct client cl = { 0 };
	struct epoll_event evs[MAX_EVENTS];
	uint64_t next_sample, next_tick, now;
	int nerr = 0;
	bool live = true;

	if (!spec || !out) {
		fprintf(stderr, "flowgen client: need --spec FLOWS.json --out SAMPLES.csv\n");
		return 1;
	}
	if (load_spec(spec, &cl))
		return 1;
	if (raise_nofile(cl.nflows + FD_SPARE))
		return 1;
	cl.csv = fopen(out, "w");
	if (!cl.csv) {
		fprintf(stderr, "flowgen: %s: %s\n", out, strerror(errno));
		return 1;
	}
	csv_header(cl.csv);
	cl.ep = epoll_create1(EPOLL_CLOEXEC);
	cl.t0 = now = now_ns();
	next_sample = cl.t0 + cl.sample_ns;
	next_tick = cl.t0;
	while (live && !stop_requested) {
		int n = epoll_wait(cl.ep, evs, MAX_EVENTS, timeout_ms(now, next_sample, next_tick));

		now = now_ns();
		for (int i = 0; i < n; i++)
			flow_event(&cl, evs[i].data.ptr, evs[i].events, now);
		now = now_ns();
		if (now >= next_sample) {
			now = now_ns();	/* the events above may have taken a while */
			sample_all(&cl, now - cl.t0);
			next_sample += cl.sample_ns;
			if (next_sample <= now)	/* fell behind: skip, never burst */
				next_sample = now + cl.sample_ns - (now - cl.t0) % cl.sample_ns;
		}
		if (now >= next_tick) {
			live = schedule(&cl, now);
			next_tick = now + TICK_NS;
		}
	}
	now = now_ns();
	for (size_t i = 0; i < cl.nflows; i++)
		if (cl.flows[i].st != F_DONE && cl.flows[i].st != F_PENDING)
			flow_close(&cl, &cl.flows[i], now);
	fclose(cl.csv);
	if (write_summary(&cl, sum, now - cl.t0, &nerr))
		return 1;
	if (nerr)
		fprintf(stderr, "flowgen: %d of %zu flows had errors (see summary)\n", nerr, cl.nflows);
	return nerr ? 3 : 0;
}

/* ---------------------------------------------------------------- main */

static void usage(FILE *o)
{
	fprintf(o,
"usage: flowgen server --addr A --ports P[-Q] [--cc NAME]\n"
"       flowgen client --spec FLOWS.json --out SAMPLES.csv [--summary SUM.json]\n"
"\n"
"server  listen on A:P..Q, discard bulk data, answer request/response flows;\n"
"        prints READY when listening, runs until SIGTERM/SIGINT. --cc: the\n"
"        listeners' congestion control (it negotiates ECN on the SYN-ACK).\n"
"client  run the flows of FLOWS.json, one epoll loop, TCP_CONGESTION per socket:\n"
"          {\"sample_ms\": 100, \"flows\": [{\"id\": 0, \"dst\": \"198.18.1.1\",\n"
"            \"port\": 5201, \"cc\": \"cubic\", \"start_s\": 0, \"stop_s\": 10,\n"
"            \"kind\": \"bulk\"|\"rr\", \"req_bytes\": 100, \"resp_bytes\": 1000,\n"
"            \"bytes\": null, \"count\": null}]}\n"
"        writes TCP_INFO of every open flow every sample_ms to SAMPLES.csv and\n"
"        per-flow totals and errors to SUM.json. Exit 0 when every flow ran,\n"
"        3 when some flows had errors (unknown CC, refused...), 1 on bad input.\n"
"See selftests/lab/flowgen/README.md.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "addr", required_argument, 0, 'a' },
		{ "ports", required_argument, 0, 'p' },
		{ "spec", required_argument, 0, 's' },
		{ "out", required_argument, 0, 'o' },
		{ "summary", required_argument, 0, 'S' },
		{ "cc", required_argument, 0, 'c' },
		{ "help", no_argument, 0, 'h' },
		{ 0 }
	};
	const char *addr = NULL, *ports = NULL, *spec = NULL, *out = NULL, *sum = NULL;
	const char *mode;
	struct sigaction sa = { .sa_handler = on_signal };
	int c;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 1 : 0;
	}
	mode = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'a': addr = optarg; break;
		case 'p': ports = optarg; break;
		case 's': spec = optarg; break;
		case 'o': out = optarg; break;
		case 'S': sum = optarg; break;
		case 'c': srv_cc = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "flowgen: unexpected argument %s\n", argv[optind]);
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(mode, "server"))
		return run_server(addr, ports);
	if (!strcmp(mode, "client"))
		return run_client(spec, out, sum);
	fprintf(stderr, "flowgen: unknown mode %s\n", mode);
	usage(stderr);
	return 1;
}
