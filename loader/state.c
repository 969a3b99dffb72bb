// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl: read the state iterators (`stat`) of loaded congestion controls.
 * The runtime parameters (`params`, `set`) are in params.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "core/types.h"
#include "bbr3_state.h"
#include "bbr_swift.h"
#include "bbrctl.h"

#define BW_SCALE	24	/* bw is packets per µs << BW_SCALE */
#define BBR_SCALE	8	/* gains and ecn_alpha: 256 == 1.0 */

/*
 * Every member of struct bbr3 in declaration order: F scalar, A array.
 * The static assertion below fails when include/bbr3_state.h gains or
 * loses a member without this list (and BBR3_STATE_VERSION) following.
 */
#define BBR3_FIELDS(F, A)						\
	F(cycle_mstamp_us) F(ack_epoch_mstamp_us) F(min_rtt_stamp_us)	\
	F(probe_rtt_min_stamp_us) F(probe_rtt_done_stamp_us)		\
	F(min_rtt_us) F(probe_rtt_min_us) A(bw_hi) F(inflight_hi)	\
	F(bw_lo) F(inflight_lo) F(bw_latest) F(inflight_latest)		\
	F(next_rtt_delivered) F(loss_round_delivered) F(full_bw)	\
	F(bw_probe_up_cnt) F(bw_probe_up_acks) F(probe_wait_us)		\
	F(alpha_last_delivered) F(alpha_last_delivered_ce)		\
	F(ack_epoch_acked) F(prior_cwnd) F(undo_bw_lo)			\
	F(undo_inflight_lo) F(undo_inflight_hi)				\
	F(recovery_round_delivered) F(last_lost) F(tlp_high_seq)	\
	F(round_count)							\
	A(extra_acked) F(pacing_gain) F(cwnd_gain) F(ecn_alpha)		\
	F(mode) F(cycle_idx) F(ack_phase) F(prev_ca_state) F(init_cwnd)	\
	F(rounds_since_probe) F(bw_probe_up_rounds)			\
	F(loss_events_in_round) F(full_bw_cnt) F(startup_ecn_rounds)	\
	F(extra_acked_win_rtts) F(extra_acked_win_idx) F(tx_rec_head)	\
	F(in_recovery) F(round_start) F(loss_round_start)		\
	F(full_bw_reached) F(full_bw_now) F(has_seen_rtt)		\
	F(idle_restart) F(try_fast_path) F(probe_rtt_round_done)	\
	F(loss_in_round) F(ecn_in_round) F(loss_in_cycle)		\
	F(ecn_in_cycle) F(ecn_eligible) F(bw_probe_samples)		\
	F(prev_probe_too_high) F(stopped_risky_probe) F(initialized)	\
	F(tlp_retrans_seen) F(param_slot) F(drain_rounds) F(undo_state)	\
	F(loss_yet_in_recovery) F(idle_restarts) F(l4s)			\
	F(round_queue_max_us) F(round_queue_min_us) F(probe_queue_us) F(rtt_noise_us)

#define MEMB(n)		(((struct bbr3 *)0)->n)
#define F_SIZE(n)	+ sizeof(MEMB(n))
_Static_assert(0 BBR3_FIELDS(F_SIZE, F_SIZE) == sizeof(struct bbr3),
	       "struct bbr3 changed: update BBR3_FIELDS in loader/state.c");
_Static_assert(sizeof(struct bbr3_state_rec) ==
	       offsetof(struct bbr3_state_rec, st) + sizeof(struct bbr3),
	       "struct bbr3_state_rec changed: update loader/state.c");
_Static_assert(offsetof(struct bbr3_state_rec, st) ==
	       offsetof(struct bbr3_state_rec, cgroup_id) + sizeof(((struct bbr3_state_rec *)0)->cgroup_id),
	       "struct bbr3_state_rec header changed: update loader/state.c");

struct field {
	const char *name;
	size_t off, elem, count;
};

#define F_ENT(n) { #n, offsetof(struct bbr3, n), sizeof(MEMB(n)), 1 },
#define A_ENT(n) { #n, offsetof(struct bbr3, n), sizeof(MEMB(n)[0]),	\
		   sizeof(MEMB(n)) / sizeof(MEMB(n)[0]) },
static const struct field bbr3_fields[] = { BBR3_FIELDS(F_ENT, A_ENT) };

static uint64_t load_uint(const void *p, size_t size)
{
	uint8_t u8v; uint16_t u16v; uint32_t u32v; uint64_t u64v = 0;

	switch (size) {
	case 1: memcpy(&u8v, p, 1); return u8v;
	case 2: memcpy(&u16v, p, 2); return u16v;
	case 4: memcpy(&u32v, p, 4); return u32v;
	case 8: memcpy(&u64v, p, 8); return u64v;
	default: return 0;
	}
}

/* ---- reading the iterator -------------------------------------------------- */

/* One read of the state iterator in the current network namespace,
 * appended to the buffer. */
struct iter_read {
	int link_fd;
	char *buf;
	size_t len, cap;
	int err;		/* -errno of the first failure */
};

static int read_iter_here(void *ctx)
{
	struct iter_read *r = ctx;
	int ifd = bpf_iter_create(r->link_fd);
	ssize_t n;

	if (ifd < 0) {
		r->err = -errno;
		return r->err;
	}
	for (;;) {
		if (r->len == r->cap) {
			char *nb = realloc(r->buf, r->cap * 2);

			if (!nb) {
				r->err = -ENOMEM;
				break;
			}
			r->buf = nb;
			r->cap *= 2;
		}
		n = read(ifd, r->buf + r->len, r->cap - r->len);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			r->err = -errno;
			break;
		}
		if (n == 0)
			break;
		r->len += n;
	}
	close(ifd);
	return r->err;
}

int iter_read_all(int link_fd, void **out, size_t *outlen)
{
	struct iter_read r = { .link_fd = link_fd, .cap = 64 * 1024 };
	int ret;

	*out = NULL;
	*outlen = 0;
	r.buf = malloc(r.cap);
	ret = r.buf ? for_each_netns(read_iter_here, &r) : -ENOMEM;
	if (ret) {
		free(r.buf);
		return ret < 0 ? ret : -EIO;
	}
	*out = r.buf;
	*outlen = r.len;
	return 0;
}

int read_state_iter(const char *name, void **out, size_t *outlen, bool quiet)
{
	char path[PATH_MAX];
	int ret, dfd, lfd;

	*out = NULL;
	*outlen = 0;
	snprintf(path, sizeof(path), PIN_CC_FMT "/" PIN_ITER, name);
	dfd = pt_dir(name, quiet ? PT_SILENT : 0);
	if (dfd < 0)
		return dfd;
	lfd = pt_obj_get(dfd, PIN_ITER);
	close(dfd);
	if (lfd < 0) {
		ret = lfd;
		if (!quiet) {
			if (ret == -ENOENT)
				err("%s: no state iterator (%s does not exist; the "
				    "object has no dump_%s_state)", name, path, name);
			else
				err("%s: cannot open %s: %s", name, path,
				    strerror(-ret));
		}
		return ret;
	}
	ret = iter_read_all(lfd, out, outlen);
	if (ret && !quiet)
		err("%s: reading the state iterator %s: %s", name, path, strerror(-ret));
	close(lfd);			/* the pin stays */
	return ret;
}

/*
 * Size of one record of a stream: bbr3's struct bbr3_state_rec, or
 * bbr_swift's struct bbr_swift_state_rec (the same record followed by the
 * Swift part, recognised by its magic).
 */
static size_t rec_stride(const void *buf, size_t len)
{
	uint32_t magic;

	if (len >= sizeof(struct bbr_swift_state_rec)) {
		memcpy(&magic, (const char *)buf +
		       offsetof(struct bbr_swift_state_rec, magic), sizeof(magic));
		if (magic == BBR_SWIFT_STATE_REC_MAGIC)
			return sizeof(struct bbr_swift_state_rec);
	}
	return sizeof(struct bbr3_state_rec);
}

/* The i-th record of a stream of records stride bytes apart. */
static const struct bbr3_state_rec *rec_at(const void *buf, size_t stride, size_t i)
{
	return (const void *)((const char *)buf + i * stride);
}

/* The Swift part of a record, or NULL for bbr3 records. */
static const struct bbr_swift_state_rec *swift_rec(const struct bbr3_state_rec *r,
						   size_t stride)
{
	const struct bbr_swift_state_rec *sr = (const void *)r;

	if (stride != sizeof(*sr) || sr->magic != BBR_SWIFT_STATE_REC_MAGIC ||
	    sr->version != BBR_SWIFT_VERSION)
		return NULL;
	return sr;
}

long count_state_recs(const void *buf, size_t len)
{
	size_t stride = rec_stride(buf, len), n = len / stride;

	if (len % stride)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (rec_at(buf, stride, i)->version != BBR3_STATE_VERSION)
			return -1;
	return (long)n;
}

/* Check a record stream; prints why it is unusable. */
static int validate_stream(const char *name, const void *buf, size_t len)
{
	size_t stride = rec_stride(buf, len);
	uint32_t version;

	if (len >= offsetof(struct bbr3_state_rec, version) + sizeof(version)) {
		memcpy(&version, (const char *)buf +
		       offsetof(struct bbr3_state_rec, version), sizeof(version));
		if (version != BBR3_STATE_VERSION) {
			err("%s: state records have version %u, this bbrctl "
			    "reads version %u (rebuild bbrctl and the object "
			    "from the same include/bbr3_state.h)", name, version,
			    BBR3_STATE_VERSION);
			return -1;
		}
	}
	if (len % stride) {
		err("%s: the state iterator produced %zu bytes, not a multiple "
		    "of the %zu-byte record (object and bbrctl built from "
		    "different include/bbr3_state.h or bbr_swift.h?)", name, len,
		    stride);
		return -1;
	}
	for (size_t i = 0; i < len / stride; i++) {
		const struct bbr3_state_rec *r = rec_at(buf, stride, i);

		if (r->version != BBR3_STATE_VERSION) {
			err("%s: record %zu has version %u, expected %u", name,
			    i, r->version, BBR3_STATE_VERSION);
			return -1;
		}
		if (stride != sizeof(*r) && !swift_rec(r, stride)) {
			err("%s: record %zu has a bad Swift part (magic or version "
			    "%u, expected %u)", name, i,
			    ((const struct bbr_swift_state_rec *)r)->version,
			    BBR_SWIFT_VERSION);
			return -1;
		}
	}
	return 0;
}

/* ---- derived values ----------------------------------------------------------- */

static const char *mode_name(unsigned int mode)
{
	switch (mode) {
	case BBR_STARTUP:	return "STARTUP";
	case BBR_DRAIN:		return "DRAIN";
	case BBR_PROBE_BW:	return "PROBE_BW";
	case BBR_PROBE_RTT:	return "PROBE_RTT";
	default:		return "?";
	}
}

static const char *phase_name(unsigned int idx)
{
	switch (idx) {
	case BBR_BW_PROBE_UP:		return "UP";
	case BBR_BW_PROBE_DOWN:		return "DOWN";
	case BBR_BW_PROBE_CRUISE:	return "CRUISE";
	case BBR_BW_PROBE_REFILL:	return "REFILL";
	default:			return "?";
	}
}

/* The model's bandwidth, as the core's bbr_bw(): min(max(bw_hi), bw_lo). */
static uint32_t model_bw(const struct bbr3 *b)
{
	uint32_t hi = b->bw_hi[0] > b->bw_hi[1] ? b->bw_hi[0] : b->bw_hi[1];

	return hi < b->bw_lo ? hi : b->bw_lo;
}

/* BW_UNIT -> bit/s: bw * mss * 8 * 1e6 / 2^24. */
static uint64_t bw_to_bps(uint32_t bw, uint32_t mss)
{
	unsigned __int128 v = (unsigned __int128)bw * mss * 8 * 1000000;

	v >>= BW_SCALE;
	return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

static void fmt_addr(const struct bbr3_state_rec *r, const uint8_t *addr,
		     char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (r->family == AF_INET && inet_ntop(AF_INET, addr, a, sizeof(a)))
		snprintf(buf, len, "%s", a);
	else if (r->family == AF_INET6 && inet_ntop(AF_INET6, addr, a, sizeof(a)))
		snprintf(buf, len, "%s", a);
	else
		snprintf(buf, len, "?");
}

static void fmt_endpoint(const struct bbr3_state_rec *r, const uint8_t *addr,
			 unsigned int port, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN + 2];

	fmt_addr(r, addr, a, sizeof(a));
	if (r->family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", a, port);
	else
		snprintf(buf, len, "%s:%u", a, port);
}

static void fmt_rate(uint64_t bps, char *buf, size_t len)
{
	if (bps >= 1000000000ULL)
		snprintf(buf, len, "%.2fGbit", bps / 1e9);
	else if (bps >= 1000000ULL)
		snprintf(buf, len, "%.1fMbit", bps / 1e6);
	else if (bps >= 1000ULL)
		snprintf(buf, len, "%.1fkbit", bps / 1e3);
	else
		snprintf(buf, len, "%llubit", (unsigned long long)bps);
}

static void fmt_u32_unset(uint32_t v, char *buf, size_t len)
{
	if (v == BBR_UNSET)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%u", v);
}

/* ---- output ------------------------------------------------------------------- */

enum {
	C_CC, C_COOKIE, C_LOCAL, C_PEER, C_MODE, C_PHASE, C_BW, C_PACING,
	C_CWND, C_INFLIGHT, C_SRTT, C_MINRTT, C_INFL_LO, C_INFL_HI, C_LOSS,
	C_CE, C_RETRANS, C_ECN, C_NETRTT, C_SWIFT, C_FULLBW, NCOLS
};

static const char *const col_names[NCOLS] = {
	"CC", "COOKIE", "LOCAL", "PEER", "MODE", "PHASE", "BW", "PACING",
	"CWND", "INFLIGHT", "SRTT", "MIN_RTT", "INFL_LO", "INFL_HI",
	"LOSS%", "CE%", "RETRANS", "ECN_ALPHA", "NET_RTT", "SWIFT", "FULL_BW",
};

/* Lost / (delivered + lost) over the connection's life, parts per million. */
static uint64_t loss_ppm(const struct bbr3_state_rec *r)
{
	uint64_t d = (uint64_t)r->delivered + r->lost;

	return d ? (uint64_t)r->lost * 1000000 / d : 0;
}

/* CE-marked / delivered over the connection's life, parts per million. */
static uint64_t ce_ppm(const struct bbr3_state_rec *r)
{
	return r->delivered ? (uint64_t)r->delivered_ce * 1000000 / r->delivered : 0;
}

/* bbr3_state_rec.ecn_mode as `bbrctl stat --json` names it. */
static const char *ecn_mode_name(unsigned int m)
{
	static const char *const names[] = {
		[BBR_ECN_MODE_OFF] = "off", [BBR_ECN_MODE_RFC3168] = "rfc3168",
		[BBR_ECN_MODE_ACCECN] = "accecn", [BBR_ECN_MODE_PENDING] = "pending",
	};

	return m < sizeof(names) / sizeof(names[0]) ? names[m] : "?";
}

/* bbr3_state_rec.l4s_mode as `bbrctl stat --json` names it. */
static const char *l4s_mode_name(unsigned int m)
{
	static const char *const names[] = {
		[BBR_L4S_OFF] = "off", [BBR_L4S_ON] = "on",
		[BBR_L4S_FALLBACK] = "fallback",
	};

	return m < sizeof(names) / sizeof(names[0]) ? names[m] : "?";
}

/* swift_state.status: "active" means the target is in force; anything
 * else is the fallback to plain BBRv3 and says why. */
const char *swift_status_name(unsigned int st)
{
	switch (st) {
	case SWIFT_ST_NO_TARGET:	return "no_target";
	case SWIFT_ST_NO_ETS:		return "no_ets";
	case SWIFT_ST_STALE:		return "stale";
	case SWIFT_ST_ACTIVE:		return "active";
	default:			return "?";
	}
}

#define CELL 64
struct row { char c[NCOLS][CELL]; };

static void rec_to_row(const char *cc, const struct bbr3_state_rec *r,
		       const struct bbr_swift_state_rec *sw, struct row *row)
{
	const struct bbr3 *b = &r->st;

	snprintf(row->c[C_CC], CELL, "%s", cc);
	snprintf(row->c[C_COOKIE], CELL, "%llu", (unsigned long long)r->cookie);
	fmt_endpoint(r, r->saddr, r->sport, row->c[C_LOCAL], CELL);
	fmt_endpoint(r, r->daddr, r->dport, row->c[C_PEER], CELL);
	snprintf(row->c[C_MODE], CELL, "%s", mode_name(b->mode));
	snprintf(row->c[C_PHASE], CELL, "%s",
		 b->mode == BBR_PROBE_BW ? phase_name(b->cycle_idx) : "-");
	fmt_rate(bw_to_bps(model_bw(b), r->mss_bytes), row->c[C_BW], CELL);
	fmt_rate(r->pacing_rate_Bps > UINT64_MAX / 8 ? UINT64_MAX :
		 r->pacing_rate_Bps * 8, row->c[C_PACING], CELL);
	snprintf(row->c[C_CWND], CELL, "%u", r->snd_cwnd_pkts);
	snprintf(row->c[C_INFLIGHT], CELL, "%u", r->inflight_pkts);
	snprintf(row->c[C_SRTT], CELL, "%uus", r->srtt_us);
	if (b->min_rtt_us == BBR_UNSET)
		snprintf(row->c[C_MINRTT], CELL, "-");
	else
		snprintf(row->c[C_MINRTT], CELL, "%uus", b->min_rtt_us);
	fmt_u32_unset(b->inflight_lo, row->c[C_INFL_LO], CELL);
	fmt_u32_unset(b->inflight_hi, row->c[C_INFL_HI], CELL);
	snprintf(row->c[C_LOSS], CELL, "%.2f", loss_ppm(r) / 1e4);
	snprintf(row->c[C_CE], CELL, "%.2f", ce_ppm(r) / 1e4);
	snprintf(row->c[C_RETRANS], CELL, "%u", r->total_retrans);
	snprintf(row->c[C_ECN], CELL, "%.3f", b->ecn_alpha / (double)(1 << BBR_SCALE));
	if (sw && sw->sw.network_rtt_us)
		snprintf(row->c[C_NETRTT], CELL, "%uus", sw->sw.network_rtt_us);
	else
		snprintf(row->c[C_NETRTT], CELL, "-");
	if (!sw)
		snprintf(row->c[C_SWIFT], CELL, "-");
	else if (sw->sw.target_rtt_us)
		snprintf(row->c[C_SWIFT], CELL, "%s/%uus",
			 swift_status_name(sw->sw.status), sw->sw.target_rtt_us);
	else
		snprintf(row->c[C_SWIFT], CELL, "%s", swift_status_name(sw->sw.status));
	snprintf(row->c[C_FULLBW], CELL, "%s", b->full_bw_reached ? "yes" : "no");
}

static void print_table(const struct row *rows, size_t n)
{
	size_t w[NCOLS];

	for (int c = 0; c < NCOLS; c++) {
		w[c] = strlen(col_names[c]);
		for (size_t i = 0; i < n; i++)
			if (strlen(rows[i].c[c]) > w[c])
				w[c] = strlen(rows[i].c[c]);
	}
	for (size_t i = 0; i <= n; i++) {
		for (int c = 0; c < NCOLS; c++) {
			const char *cell = i ? rows[i - 1].c[c] : col_names[c];

			if (c == NCOLS - 1)
				printf("%s\n", cell);	/* no trailing blanks */
			else
				printf("%-*s  ", (int)w[c], cell);
		}
	}
}

/* The socket: who it is, its cwnd, delivery and addresses. */
static void sock_to_json(json_t *j, const char *cc, const struct bbr3_state_rec *r)
{
	char addr[INET6_ADDRSTRLEN + 2];

	js_set_str(j, "cc", cc);
	js_set_u64(j, "cookie", r->cookie);
	js_set_u64(j, "pacing_rate_Bps", r->pacing_rate_Bps);
	js_set_u64(j, "version", r->version);
	js_set_u64(j, "snd_cwnd_pkts", r->snd_cwnd_pkts);
	js_set_u64(j, "inflight_pkts", r->inflight_pkts);
	js_set_u64(j, "mss_bytes", r->mss_bytes);
	js_set_u64(j, "srtt_us", r->srtt_us);
	js_set_u64(j, "delivered", r->delivered);
	js_set_u64(j, "lost", r->lost);
	js_set_u64(j, "delivered_ce", r->delivered_ce);
	js_set_u64(j, "family", r->family);
	js_set_u64(j, "sport", r->sport);
	js_set_u64(j, "dport", r->dport);
	fmt_addr(r, r->saddr, addr, sizeof(addr));
	js_set_str(j, "saddr", addr);
	fmt_addr(r, r->daddr, addr, sizeof(addr));
	js_set_str(j, "daddr", addr);
}

/* struct bbr3, flattened: its member names do not collide. */
static void bbr3_to_json(json_t *j, const struct bbr3 *b)
{
	for (size_t i = 0; i < sizeof(bbr3_fields) / sizeof(bbr3_fields[0]); i++) {
		const struct field *f = &bbr3_fields[i];
		const char *base = (const char *)b + f->off;
		json_t *aj;

		if (f->name[0] == '_')
			continue;
		if (f->count == 1) {
			js_set_u64(j, f->name, load_uint(base, f->elem));
			continue;
		}
		aj = json_array();
		for (size_t k = 0; k < f->count; k++)
			json_array_append_new(aj, js_u64(load_uint(base + k * f->elem, f->elem)));
		js_set(j, f->name, aj);
	}
}

/* What the model's state means: mode and phase by name, bw in bit/s. */
static void model_to_json(json_t *j, const struct bbr3_state_rec *r)
{
	const struct bbr3 *b = &r->st;
	uint32_t bw = model_bw(b);

	js_set_str(j, "mode_name", mode_name(b->mode));
	if (b->mode == BBR_PROBE_BW)
		js_set_str(j, "phase_name", phase_name(b->cycle_idx));
	else
		js_set(j, "phase_name", json_null());
	js_set_u64(j, "bw", bw);
	js_set_u64(j, "bw_bps", bw_to_bps(bw, r->mss_bytes));
}

/* tcp_info's fields, read by the iterator. */
static void tcp_info_to_json(json_t *j, const struct bbr3_state_rec *r)
{
	js_set_u64(j, "bytes_acked", r->bytes_acked);
	js_set_u64(j, "bytes_retrans", r->bytes_retrans);
	js_set_u64(j, "total_retrans", r->total_retrans);
	js_set_u64(j, "retrans_out", r->retrans_out);
	js_set_u64(j, "lost_out", r->lost_out);
	js_set_u64(j, "sacked_out", r->sacked_out);
	js_set_u64(j, "snd_ssthresh", r->snd_ssthresh);
	js_set_u64(j, "rttvar_us", r->rttvar_us);
	js_set_u64(j, "kernel_min_rtt_us", r->kernel_min_rtt_us);
	js_set_u64(j, "ca_state", r->ca_state);
	js_set_u64(j, "cgroup_id", r->cgroup_id);
	js_set_str(j, "ecn", ecn_mode_name(r->ecn_mode));
	js_set_str(j, "l4s_mode", l4s_mode_name(r->l4s_mode));
	js_set_u64(j, "loss_ppm", loss_ppm(r));
	js_set_u64(j, "ce_ppm", ce_ppm(r));
}

/* bbr_swift's part of the record, as the object "swift". */
static json_t *swift_to_json(const struct bbr_swift_state_rec *sw)
{
	json_t *sj = json_object();

	js_set_u64(sj, "version", sw->version);
	js_set_str(sj, "status", swift_status_name(sw->sw.status));
	js_set_u64(sj, "status_code", sw->sw.status);
	js_set_bool(sj, "fallback", sw->sw.status != SWIFT_ST_ACTIVE);
	js_set_u64(sj, "target_rtt_us", sw->sw.target_rtt_us);
	js_set_u64(sj, "network_rtt_us", sw->sw.network_rtt_us);
	js_set_u64(sj, "decided_rtt_us", sw->sw.decided_rtt_us);
	js_set_u64(sj, "stale_us", sw->sw.stale_us);
	js_set_u64(sj, "last_sample_ns", sw->sw.last_sample_ns);
	js_set_u64(sj, "last_factor", sw->sw.last_factor);
	js_set_u64(sj, "last_factor_ppm",
		    (uint64_t)sw->sw.last_factor * 1000000 / SWIFT_FACTOR_UNIT);
	js_set_u64(sj, "decreases", sw->sw.decreases);
	js_set_u64(sj, "fallback_acks", sw->sw.fallback_acks);
	js_set_u64(sj, "cwnd_milli", sw->sw.cwnd_milli);
	js_set_u64(sj, "path_rtt_us", sw->sw.path_rtt_us);
	js_set_u64(sj, "host_delay_us", sw->sw.host_delay_us);
	js_set_u64(sj, "host_target_us", sw->sw.host_target_us);
	js_set_u64(sj, "start_milli", sw->sw.start_milli);
	js_set_u64(sj, "flags", sw->sw.flags);
	return sj;
}

static json_t *rec_to_json(const char *cc, const struct bbr3_state_rec *r,
			   const struct bbr_swift_state_rec *sw)
{
	json_t *j = json_object();

	sock_to_json(j, cc, r);
	bbr3_to_json(j, &r->st);
	model_to_json(j, r);
	tcp_info_to_json(j, r);
	if (sw)
		js_set(j, "swift", swift_to_json(sw));
	return j;
}

/* One CC's state stream, read and checked: 0 and the records in *buf, 1
 * when a CC found by listing has no iterator (skipped), -1 on error (said). */
static int stat_read(const char *name, bool explicit, void **buf, size_t *len)
{
	char p[PATH_MAX];
	bool has_iter;
	int dfd;

	if (!valid_cc_name(name)) {
		err("invalid congestion control name \"%s\"", name);
		return -1;
	}
	snprintf(p, sizeof(p), PIN_CC_FMT, name);
	dfd = pt_dir(name, PT_QUIET);
	if (dfd < 0) {
		if (dfd == -ENOENT)
			err("%s is not loaded by bbrctl (no %s)", name, p);
		return -1;
	}
	has_iter = pt_exists(dfd, PIN_ITER);
	close(dfd);
	if (!explicit && !has_iter) {
		dbg("%s: no state iterator, skipped", name);
		return 1;
	}
	if (read_state_iter(name, buf, len, false) ||
	    validate_stream(name, *buf, *len)) {
		free(*buf);
		*buf = NULL;
		return -1;
	}
	return 0;
}

/* The records of one CC as rows of the table, appended to *rows. */
static int stat_rows(const char *name, const void *buf, size_t len,
		     struct row **rows, size_t *nrows)
{
	size_t stride = rec_stride(buf, len), cnt = len / stride;
	struct row *nr;

	if (!cnt)
		return 0;
	nr = realloc(*rows, (*nrows + cnt) * sizeof(**rows));
	if (!nr) {
		err("out of memory");
		return -1;
	}
	*rows = nr;
	for (size_t k = 0; k < cnt; k++) {
		const struct bbr3_state_rec *r = rec_at(buf, stride, k);

		rec_to_row(name, r, swift_rec(r, stride), &nr[(*nrows)++]);
	}
	return 0;
}

/* The records of one CC as JSON objects, appended to arr. */
static void stat_json(const char *name, const void *buf, size_t len, json_t *arr)
{
	size_t stride = rec_stride(buf, len), cnt = len / stride;

	for (size_t k = 0; k < cnt; k++) {
		const struct bbr3_state_rec *r = rec_at(buf, stride, k);

		json_array_append_new(arr, rec_to_json(name, r, swift_rec(r, stride)));
	}
}

static int stat_output(json_t *arr, const struct row *rows, size_t nrows, int ret)
{
	if (g_opts.json)
		return js_print(arr) ? -1 : ret;
	if (nrows)
		print_table(rows, nrows);
	else if (ret == 0)
		printf("no sockets\n");
	return ret;
}

int stat_print(char **names, int n)
{
	char **all = NULL;
	int nall = 0, ret = 0;
	struct row *rows = NULL;
	size_t nrows = 0;
	json_t *arr = NULL;
	bool explicit = n > 0;

	if (!explicit) {
		nall = list_pinned_names(&all);
		if (nall < 0)
			return -1;
		names = all;
		n = nall;
	}
	if (g_opts.json)
		arr = json_array();
	for (int i = 0; i < n; i++) {
		void *buf = NULL;
		size_t len = 0;
		int rc = stat_read(names[i], explicit, &buf, &len);

		if (rc) {
			if (rc < 0)
				ret = -1;
			continue;
		}
		if (g_opts.json) {
			stat_json(names[i], buf, len, arr);
		} else if (stat_rows(names[i], buf, len, &rows, &nrows)) {
			free(buf);
			ret = -1;
			break;
		}
		free(buf);
	}
	ret = stat_output(arr, rows, nrows, ret);
	free(rows);
	free_names(all, nall);
	return ret;
}

long state_for_each(const char *cc, state_rec_fn fn, void *ctx)
{
	void *buf = NULL;
	size_t len = 0, stride, cnt;

	if (read_state_iter(cc, &buf, &len, false) || validate_stream(cc, buf, len)) {
		free(buf);
		return -1;
	}
	stride = rec_stride(buf, len);
	cnt = len / stride;
	for (size_t k = 0; k < cnt; k++) {
		const struct bbr3_state_rec *r = rec_at(buf, stride, k);

		fn(ctx, cc, r, swift_rec(r, stride));
	}
	free(buf);
	return (long)cnt;
}

uint64_t state_rec_bw_Bps(const struct bbr3_state_rec *r)
{
	return bw_to_bps(model_bw(&r->st), r->mss_bytes) / 8;
}

/* ---- the commands --------------------------------------------------------------- */

int cmd_stat(const struct cmd_opts *o, char **args, int nargs)
{
	(void)o;
	if (!valid_cc_names("stat", args, nargs))
		return EXIT_USAGE;
	if (check_privileges("stat"))
		return EXIT_FAIL;
	warn_if_bpffs_hidden();
	return stat_print(args, nargs) ? EXIT_FAIL : EXIT_OK;
}

int cmd_top(const struct cmd_opts *o, char **args, int nargs)
{
	uint64_t interval_us = o->interval_us ? o->interval_us : INTERVAL_DEFAULT_US;
	struct timespec ts;
	char when[64];
	int ret = EXIT_OK;
	bool tty = isatty(STDOUT_FILENO);

	if (!valid_cc_names("top", args, nargs))
		return EXIT_USAGE;
	if (check_privileges("top"))
		return EXIT_FAIL;
	for (uint64_t k = 0; !o->count || k < o->count; k++) {
		if (k) {
			ts.tv_sec = (time_t)(interval_us / 1000000);
			ts.tv_nsec = (long)(interval_us % 1000000) * 1000;
			nanosleep(&ts, NULL);
		}
		if (!g_opts.json) {
			clock_gettime(CLOCK_REALTIME, &ts);
			format_unix_ns((int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec,
				       when, sizeof(when));
			printf("%sbbrctl top  %s  every %.1f s\n\n", tty ? "\033[H\033[2J" : "",
			       when, interval_us / 1e6);
		}
		if (stat_print(args, nargs))
			ret = EXIT_FAIL;
		if (g_opts.json)
			putchar('\n');
		else if (!tty)
			putchar('\n');
		fflush(stdout);
	}
	return ret;
}
