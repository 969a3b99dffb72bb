// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl metrics: the state of the loaded congestion controls in the
 * Prometheus text exposition format (version 0.0.4), for node_exporter's
 * textfile collector (`--output FILE` writes it atomically) or any scraper
 * that runs a command. docs/bbrctl.md, "metrics".
 *
 * One read of each CC's state iterator, the one `stat` reads, aggregated
 * per CC and per cgroup: the labels are the CC's name and the cgroup's
 * path, both bounded by what the host has loaded and created; no series
 * is per socket. Sums over the sockets open at the read (bytes acked,
 * retransmits) are gauges: they fall when sockets close. Counters
 * (_total) are the ETS program's, the A/B splits' (ab.c, per arm), and
 * bbrctl's own runs, kept in BBRCTL_COUNTERS.
 *
 * Why a file for bbrctl's own counters: every command that changes
 * something already runs under BBRCTL_LOCK in BBRCTL_RUN_DIR, so a
 * read-increment-rename there is race free; the file lives on /run (tmpfs)
 * and resets at boot together with everything it counts; and it keeps the
 * pin tree what it is, links and maps of loaded objects, that `list`,
 * `unload all` and the pin checks walk.
 *
 * No HTTP endpoint: bbrctl runs as root, and a listening socket in it
 * would be the only network-facing code of the project; the textfile
 * collector, or a scraper running the command, gives the same series.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "core/types.h"
#include "bbr3_state.h"
#include "bbr_swift.h"
#include "ets_shared.h"
#include "bbrctl.h"

/* Histogram buckets (upper bounds, base units). RTTs from 50 µs (a
 * datacenter's) to 1 s (a bloated WAN queue); rates at each decade of bit/s
 * from 100 kbit/s to 100 Gbit/s, in bytes/s. */
static const double rtt_bounds_s[] = {
	50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3,
	50e-3, 100e-3, 250e-3, 500e-3, 1.0,
};
#define RTT_NB		(sizeof(rtt_bounds_s) / sizeof(rtt_bounds_s[0]))
static const double rate_bounds_Bps[] = {
	1.25e4, 1.25e5, 1.25e6, 1.25e7, 1.25e8, 1.25e9, 1.25e10,
};
#define RATE_NB		(sizeof(rate_bounds_Bps) / sizeof(rate_bounds_Bps[0]))
#define HIST_NB_MAX	RTT_NB

struct hist {
	uint64_t b[HIST_NB_MAX + 1];	/* per bucket, the last one +Inf */
	uint64_t count;
	double sum;
};

static void hist_add(struct hist *h, const double *bounds, size_t nb, double v)
{
	size_t i = 0;

	while (i < nb && v > bounds[i])
		i++;
	h->b[i]++;
	h->count++;
	h->sum += v;
}

/* The states a socket can be in: BBR's modes, PROBE_BW split by phase. */
enum { ST_STARTUP, ST_DRAIN, ST_PROBE_BW_UP, ST_PROBE_BW_DOWN,
       ST_PROBE_BW_CRUISE, ST_PROBE_BW_REFILL, ST_PROBE_RTT, NSTATES };
static const char *const state_names[NSTATES] = {
	"STARTUP", "DRAIN", "PROBE_BW_UP", "PROBE_BW_DOWN", "PROBE_BW_CRUISE",
	"PROBE_BW_REFILL", "PROBE_RTT",
};
static const char *const l4s_names[] = { "off", "on", "fallback" };
#define NL4S	(sizeof(l4s_names) / sizeof(l4s_names[0]))
static const char *const ecn_names[] = { "off", "rfc3168", "accecn", "pending" };
#define NECN	(sizeof(ecn_names) / sizeof(ecn_names[0]))
static const char *const swift_names[] = { "no_target", "no_ets", "stale", "active" };
#define NSWIFT	(sizeof(swift_names) / sizeof(swift_names[0]))

/* Everything about the sockets of one CC in one cgroup. */
struct group {
	char cc[CC_NAME_MAX + 1];
	uint64_t cgroup_id;
	uint64_t sockets, bytes_acked, bytes_retrans, total_retrans;
	uint64_t delivered, lost, delivered_ce;
	uint64_t state[NSTATES], l4s[NL4S], ecn[NECN];
	uint64_t swift[NSWIFT];
	bool is_swift;
	struct hist rate, srtt, min_rtt, net_rtt;
};

struct groups {
	struct group *g;
	size_t n, cap;
	uint64_t records;
	bool oom;
};

static struct group *group_of(struct groups *gs, const char *cc, uint64_t cg)
{
	struct group *g;

	/* few groups (CCs x cgroups with sockets): a linear search */
	for (size_t i = gs->n; i-- > 0;)
		if (gs->g[i].cgroup_id == cg && !strcmp(gs->g[i].cc, cc))
			return &gs->g[i];
	if (gs->n == gs->cap) {
		size_t cap = gs->cap ? gs->cap * 2 : 16;
		struct group *ng = realloc(gs->g, cap * sizeof(*ng));

		if (!ng) {
			gs->oom = true;
			return NULL;
		}
		gs->g = ng;
		gs->cap = cap;
	}
	g = &gs->g[gs->n++];
	memset(g, 0, sizeof(*g));
	snprintf(g->cc, sizeof(g->cc), "%s", cc);
	g->cgroup_id = cg;
	return g;
}

static int state_index(const struct bbr3 *b)
{
	switch (b->mode) {
	case BBR_STARTUP:	return ST_STARTUP;
	case BBR_DRAIN:		return ST_DRAIN;
	case BBR_PROBE_RTT:	return ST_PROBE_RTT;
	case BBR_PROBE_BW:
		if (b->cycle_idx <= BBR_BW_PROBE_REFILL)
			return ST_PROBE_BW_UP + b->cycle_idx;
		/* fall through */
	default:		return -1;
	}
}

static void add_rec(void *ctx, const char *cc, const struct bbr3_state_rec *r,
		    const struct bbr_swift_state_rec *sw)
{
	struct groups *gs = ctx;
	struct group *g = group_of(gs, cc, r->cgroup_id);
	int st;

	gs->records++;
	if (!g)
		return;
	g->sockets++;
	g->bytes_acked += r->bytes_acked;
	g->bytes_retrans += r->bytes_retrans;
	g->total_retrans += r->total_retrans;
	g->delivered += r->delivered;
	g->lost += r->lost;
	g->delivered_ce += r->delivered_ce;
	st = state_index(&r->st);
	if (st >= 0)
		g->state[st]++;
	if (r->l4s_mode < NL4S)
		g->l4s[r->l4s_mode]++;
	if (r->ecn_mode < NECN)
		g->ecn[r->ecn_mode]++;
	hist_add(&g->rate, rate_bounds_Bps, RATE_NB, (double)state_rec_bw_Bps(r));
	if (r->srtt_us)
		hist_add(&g->srtt, rtt_bounds_s, RTT_NB, r->srtt_us * 1e-6);
	if (r->st.min_rtt_us != BBR_UNSET)
		hist_add(&g->min_rtt, rtt_bounds_s, RTT_NB, r->st.min_rtt_us * 1e-6);
	if (sw) {
		g->is_swift = true;
		if (sw->sw.status < NSWIFT)
			g->swift[sw->sw.status]++;
		if (sw->sw.network_rtt_us)
			hist_add(&g->net_rtt, rtt_bounds_s, RTT_NB,
				 sw->sw.network_rtt_us * 1e-6);
	}
}

/* ---- the exposition format ------------------------------------------------------ */

/* A label value: backslash, double quote and newline escaped. */
static void label_escape(const char *in, char *out, size_t len)
{
	size_t o = 0;

	for (; *in && o + 3 < len; in++) {
		if (*in == '\\' || *in == '"') {
			out[o++] = '\\';
			out[o++] = *in;
		} else if (*in == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else {
			out[o++] = *in;
		}
	}
	out[o] = '\0';
}

void metrics_cgroup_label(const char *path, uint64_t id, char *out, size_t len)
{
	const char *rel = path;

	/* relative to the cgroup2 root: "/system.slice/nginx.service" */
	if (!strncmp(rel, CGROUP2_HYBRID, strlen(CGROUP2_HYBRID)))
		rel += strlen(CGROUP2_HYBRID);
	else if (!strncmp(rel, CGROUP2_PURE, strlen(CGROUP2_PURE)))
		rel += strlen(CGROUP2_PURE);
	if (!*path) {
		/* removed since, or not in this mount namespace's hierarchy */
		snprintf(out, len, "id:%llu", (unsigned long long)id);
		return;
	}
	label_escape(*rel ? rel : "/", out, len);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The cgroup labels of the groups, looked up once per cgroup id. */
struct cg_label {
	uint64_t id;
	char label[PATH_MAX + 32];
};

static const char *cg_label(struct cg_label **tab, size_t *n, uint64_t id)
{
	char path[PATH_MAX];
	struct cg_label *nt;

	for (size_t i = 0; i < *n; i++)
		if ((*tab)[i].id == id)
			return (*tab)[i].label;
	nt = realloc(*tab, (*n + 1) * sizeof(**tab));
	if (!nt)
		return "?";
	*tab = nt;
	nt[*n].id = id;
	if (id)
		cgroup_path_of(id, path, sizeof(path));
	else
		snprintf(path, sizeof(path), "%s", "");
	if (!id)
		snprintf(nt[*n].label, sizeof(nt[*n].label), "none");
	else
		metrics_cgroup_label(path, id, nt[*n].label, sizeof(nt[*n].label));
	return nt[(*n)++].label;
}

#define LBL	"cc=\"%s\",cgroup=\"%s\""

static void hist_out(FILE *f, const char *name, const struct group *g,
		     const char *cgl, const struct hist *h, const double *bounds,
		     size_t nb)
{
	uint64_t cum = 0;

	for (size_t i = 0; i <= nb; i++) {
		cum += h->b[i];
		if (i < nb)
			fprintf(f, "%s_bucket{" LBL ",le=\"%g\"} %llu\n", name, g->cc,
				cgl, bounds[i], (unsigned long long)cum);
		else
			fprintf(f, "%s_bucket{" LBL ",le=\"+Inf\"} %llu\n", name,
				g->cc, cgl, (unsigned long long)cum);
	}
	fprintf(f, "%s_sum{" LBL "} %.9g\n", name, g->cc, cgl, h->sum);
	fprintf(f, "%s_count{" LBL "} %llu\n", name, g->cc, cgl,
		(unsigned long long)h->count);
}

/* A gauge family with one sample per group: the u64 at off of it. */
static void group_gauge(FILE *f, const struct groups *gs, const char **cgl,
			const char *name, const char *help, size_t off)
{
	family(f, name, "gauge", help);
	for (size_t i = 0; i < gs->n; i++) {
		uint64_t v;

		memcpy(&v, (const char *)&gs->g[i] + off, sizeof(v));
		fprintf(f, "%s{" LBL "} %llu\n", name, gs->g[i].cc, cgl[i],
			(unsigned long long)v);
	}
}

/* A gauge family with one sample per group and value of a label. */
static void group_split(FILE *f, const struct groups *gs, const char **cgl,
			const char *name, const char *help, const char *label,
			const char *const *names, size_t nnames, size_t off,
			bool swift_only)
{
	family(f, name, "gauge", help);
	for (size_t i = 0; i < gs->n; i++) {
		const uint64_t *v = (const void *)((const char *)&gs->g[i] + off);

		if (swift_only && !gs->g[i].is_swift)
			continue;
		for (size_t k = 0; k < nnames; k++)
			fprintf(f, "%s{" LBL ",%s=\"%s\"} %llu\n", name, gs->g[i].cc,
				cgl[i], label, names[k], (unsigned long long)v[k]);
	}
}

static void groups_out(FILE *f, const struct groups *gs, const char **cgl)
{
#define G_OFF(m) offsetof(struct group, m)
	group_gauge(f, gs, cgl, "bbrbpf_sockets",
		    "TCP sockets that use the congestion control, by the cgroup they were created in.",
		    G_OFF(sockets));
	group_split(f, gs, cgl, "bbrbpf_sockets_in_state",
		    "Sockets in each BBR state (PROBE_BW by phase).", "state",
		    state_names, NSTATES, G_OFF(state), false);
	group_gauge(f, gs, cgl, "bbrbpf_open_sockets_acked_bytes",
		    "Bytes acknowledged so far on the sockets open now (falls when sockets close).",
		    G_OFF(bytes_acked));
	group_gauge(f, gs, cgl, "bbrbpf_open_sockets_retransmitted_bytes",
		    "Bytes retransmitted so far on the sockets open now.",
		    G_OFF(bytes_retrans));
	group_gauge(f, gs, cgl, "bbrbpf_open_sockets_retransmitted_segments",
		    "Segments retransmitted so far on the sockets open now.",
		    G_OFF(total_retrans));
	group_gauge(f, gs, cgl, "bbrbpf_open_sockets_delivered_segments",
		    "Segments delivered so far on the sockets open now.",
		    G_OFF(delivered));
	group_gauge(f, gs, cgl, "bbrbpf_open_sockets_lost_segments",
		    "Segments the sockets open now have marked lost so far.",
		    G_OFF(lost));
	group_gauge(f, gs, cgl, "bbrbpf_open_sockets_ce_delivered_segments",
		    "Segments delivered with a CE mark so far on the sockets open now.",
		    G_OFF(delivered_ce));
	group_split(f, gs, cgl, "bbrbpf_sockets_by_ecn",
		    "Sockets by the ECN their handshake negotiated.", "ecn",
		    ecn_names, NECN, G_OFF(ecn), false);
	group_split(f, gs, cgl, "bbrbpf_sockets_by_l4s_mode",
		    "Sockets by L4S mode: off, on (in force: l4s key and AccECN), fallback (asked, no AccECN).",
		    "mode", l4s_names, NL4S, G_OFF(l4s), false);
	group_split(f, gs, cgl, "bbrbpf_swift_sockets_by_status",
		    "bbr_swift sockets by what their last ACK did with the delay target.",
		    "status", swift_names, NSWIFT, G_OFF(swift), true);
#undef G_OFF
	family(f, "bbrbpf_delivery_rate_bytes_per_second", "histogram",
	       "The model's bandwidth of each open socket (max-filtered delivery rate, bounded by bw_lo).");
	for (size_t i = 0; i < gs->n; i++)
		hist_out(f, "bbrbpf_delivery_rate_bytes_per_second", &gs->g[i], cgl[i],
			 &gs->g[i].rate, rate_bounds_Bps, RATE_NB);
	family(f, "bbrbpf_srtt_seconds", "histogram",
	       "Smoothed RTT of each open socket.");
	for (size_t i = 0; i < gs->n; i++)
		hist_out(f, "bbrbpf_srtt_seconds", &gs->g[i], cgl[i], &gs->g[i].srtt,
			 rtt_bounds_s, RTT_NB);
	family(f, "bbrbpf_min_rtt_seconds", "histogram",
	       "The model's min_rtt of each open socket that has one.");
	for (size_t i = 0; i < gs->n; i++)
		hist_out(f, "bbrbpf_min_rtt_seconds", &gs->g[i], cgl[i],
			 &gs->g[i].min_rtt, rtt_bounds_s, RTT_NB);
	family(f, "bbrbpf_network_rtt_seconds", "histogram",
	       "Latest ETS Network_RTT of each open bbr_swift socket that has a sample.");
	for (size_t i = 0; i < gs->n; i++)
		if (gs->g[i].is_swift)
			hist_out(f, "bbrbpf_network_rtt_seconds", &gs->g[i], cgl[i],
				 &gs->g[i].net_rtt, rtt_bounds_s, RTT_NB);
}

/* The ETS program's counters map (per CPU, a key per network namespace);
 * -1 if ETS was never attached. */
static int ets_stats_fd(void)
{
	int fd = -1, dfd;

	/* through the verified PIN_SHARED (pintree.c), never its path */
	dfd = pt_dir(PIN_SHARED_DIR, PT_QUIET);
	if (dfd >= 0) {
		fd = pt_obj_get(dfd, ETS_STATS_MAP_NAME);
		close(dfd);
	}
	return fd;
}

/* The map's counters summed over network namespaces and CPUs into *sum. */
static void ets_sum(int fd, int ncpu, struct ets_stats *sum)
{
	struct ets_stats *v = calloc((size_t)ncpu, sizeof(*v));
	uint64_t key, next, *cur = NULL;

	while (v && !bpf_map_get_next_key(fd, cur, &next)) {
		key = next;
		cur = &key;
		if (bpf_map_lookup_elem(fd, &key, v))
			continue;
		for (int c = 0; c < ncpu; c++) {
			const uint64_t *s = (const void *)&v[c];
			uint64_t *d = (void *)sum;

			for (size_t k = 0; k < sizeof(*sum) / sizeof(uint64_t); k++)
				d[k] += s[k];
		}
	}
	free(v);
}

/* The rejections, by stage: the parser's and the sample checks'. */
static void ets_rejected_out(FILE *f, const struct ets_stats *sum)
{
	uint64_t parse = 0, sample = 0;

	family(f, "bbrbpf_ets_rejected_total", "counter",
	       "ETS options or samples rejected, by stage.");
	for (size_t k = 0; k < sizeof(sum->rej_parse) / sizeof(sum->rej_parse[0]); k++)
		parse += sum->rej_parse[k];
	for (size_t k = 0; k < sizeof(sum->rej_sample) / sizeof(sum->rej_sample[0]); k++)
		sample += sum->rej_sample[k];
	fprintf(f, "bbrbpf_ets_rejected_total{stage=\"parse\"} %llu\n",
		(unsigned long long)parse);
	fprintf(f, "bbrbpf_ets_rejected_total{stage=\"sample\"} %llu\n",
		(unsigned long long)sample);
}

/* ---- the glue's own counters (lib/tcp_cc.h: <cc>_stats in the CC's .bss) ---- */

/* struct bbr_glue_stats, member by member: read by name from the map's
 * BTF, so a build that adds or moves one still reads right. */
static const char *const glue_events[] = { "no_storage", "not_initialized", "late_init" };
#define GLUE_EVENTS	(sizeof(glue_events) / sizeof(glue_events[0]))

/* The counters in the .bss map (fd, info mi): its variable of type struct
 * GLUE_STATS_TYPE (one per object: <cc>_stats, named after the CC the
 * object was built as, whatever name it was loaded under), into out (those
 * not in the build stay UINT64_MAX); 0 when it is there and was read. */
#define GLUE_STATS_TYPE	"bbr_glue_stats"
static int glue_stats_from_bss(int fd, const struct bpf_map_info *mi,
			       uint64_t out[GLUE_EVENTS])
{
	const struct btf_var_secinfo *vsi;
	const struct btf_type *sec, *st = NULL;
	struct btf *btf = btf__load_from_kernel_by_id(mi->btf_id);
	uint32_t off = 0, key = 0;
	unsigned char *val = NULL;
	int ret = -1;

	if (!btf)
		return -1;
	sec = btf__type_by_id(btf, mi->btf_value_type_id);
	if (!sec || !btf_is_datasec(sec))
		goto out;
	vsi = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec) && !st; i++) {
		const struct btf_type *v = btf__type_by_id(btf, vsi[i].type);
		const struct btf_type *t = v && btf_is_var(v) ?
			btf__type_by_id(btf, btf__resolve_type(btf, v->type)) : NULL;

		if (t && btf_is_struct(t) &&
		    !strcmp(btf__name_by_offset(btf, t->name_off), GLUE_STATS_TYPE)) {
			st = t;
			off = vsi[i].offset;
		}
	}
	if (!st || off + st->size > mi->value_size)
		goto out;
	val = calloc(1, mi->value_size);
	if (!val || bpf_map_lookup_elem(fd, &key, val))
		goto out;
	for (int i = 0; i < btf_vlen(st); i++) {
		const struct btf_member *m = btf_members(st) + i;
		uint32_t bits = btf_member_bit_offset(st, i);

		for (size_t k = 0; k < GLUE_EVENTS; k++)
			if (!strcmp(btf__name_by_offset(btf, m->name_off), glue_events[k]) &&
			    bits % 8 == 0 && off + bits / 8 + sizeof(uint64_t) <= mi->value_size)
				memcpy(&out[k], val + off + bits / 8, sizeof(uint64_t));
	}
	ret = 0;
out:
	free(val);
	btf__free(btf);
	return ret;
}

/* The glue counters of loaded CC cc, from the .bss map its struct_ops
 * programs use. -1 when it has none (not built on lib/tcp_cc.h, a
 * detached link). */
static int glue_stats_read(const char *cc, uint64_t out[GLUE_EVENTS])
{
	uint32_t maps[STRUCT_OPS_PROGS_MAX * PROG_MAP_IDS_MAX];
	struct bpf_map_info mi;
	struct cc_info ci;
	int n, fd, ret = -1;

	for (size_t k = 0; k < GLUE_EVENTS; k++)
		out[k] = UINT64_MAX;
	cc_get_link(cc, &ci);
	if (!ci.map_id)
		return -1;
	n = struct_ops_map_ids(ci.map_id, maps, (int)(sizeof(maps) / sizeof(maps[0])));
	fd = map_fd_by_suffix(maps, n, ".bss", 0, &mi);
	if (fd < 0)
		return -1;
	if (mi.btf_id && mi.btf_value_type_id)
		ret = glue_stats_from_bss(fd, &mi, out);
	close(fd);
	return ret;
}

static void glue_out(FILE *f, char **names, int n)
{
	uint64_t v[GLUE_EVENTS];

	family(f, "bbrbpf_cc_glue_events_total", "counter",
	       "What a congestion control's programs could not do as asked, since it was loaded: "
	       "no_storage (no socket storage could be made), not_initialized (an op on a socket "
	       "without state), late_init (state made on an ACK because init had none).");
	for (int i = 0; i < n; i++) {
		if (glue_stats_read(names[i], v))
			continue;
		for (size_t k = 0; k < GLUE_EVENTS; k++)
			if (v[k] != UINT64_MAX)
				fprintf(f, "bbrbpf_cc_glue_events_total{cc=\"%s\",event=\"%s\"} %llu\n",
					names[i], glue_events[k], (unsigned long long)v[k]);
	}
}

/* The ETS program's counters, summed over network namespaces and CPUs. */
static void ets_out(FILE *f)
{
	int ncpu = libbpf_num_possible_cpus(), fd = ets_stats_fd();
	struct ets_stats sum = {};

	if (fd < 0 || ncpu <= 0) {
		if (fd >= 0)
			close(fd);
		return;		/* ETS never attached */
	}
	ets_sum(fd, ncpu, &sum);
	close(fd);
#define ETS_C(name, field, help)					\
	do {								\
		family(f, "bbrbpf_ets_" name "_total", "counter", help);	\
		fprintf(f, "bbrbpf_ets_" name "_total %llu\n",		\
			(unsigned long long)sum.field);			\
	} while (0)
	ETS_C("options_sent", sent, "ETS options written (all network namespaces).");
	ETS_C("options_parsed", parsed, "ETS options received and well formed.");
	ETS_C("parse_calls", parse_calls, "ETS parse callbacks on connections with ETS on.");
	ETS_C("samples", samples, "Network_RTT samples accepted.");
	ETS_C("connections_negotiated", negotiated, "Connections with ETS enabled.");
	ETS_C("connections_refused", refused, "Handshakes that ended without ETS.");
	ETS_C("options_missing", missing, "Expected ETS options that were absent.");
	ETS_C("no_option_space", reserve_nospace, "ETS options not sent for lack of option space.");
	ETS_C("store_errors", store_err, "bpf_store_hdr_opt() failures.");
	ETS_C("hw_rx_stamps", hw_rx, "Arrivals stamped with the NIC clock.");
#undef ETS_C
	ets_rejected_out(f, &sum);
}

/* ---- bbrctl's own counters ----------------------------------------------------------- */

#define EVENTS_MAX	64	/* command x result lines the file can hold */

struct event_line {
	char cmd[32];
	char result[16];
	unsigned long long n;
};

/* The counters in the verified run directory rfd (none there: 0). */
static int events_read(int rfd, struct event_line *ev, int max)
{
	int fd = openat(rfd, BBRCTL_COUNTERS_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	FILE *in = fd >= 0 ? fdopen(fd, "r") : NULL;
	int n = 0;

	if (!in) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while (n < max && fscanf(in, "%31s %15s %llu", ev[n].cmd, ev[n].result,
				 &ev[n].n) == 3)
		n++;
	fclose(in);
	return n;
}

void events_count(const char *cmd, bool ok)
{
	struct event_line ev[EVENTS_MAX];
	const char *res = ok ? "ok" : "failed";
	char tmp[NAME_MAX + 1];
	int rfd, n, i, fd;
	FILE *out;

	/* under BBRCTL_LOCK, which verified the directory first */
	rfd = run_dir_open(false);
	if (rfd < 0)
		return;
	n = events_read(rfd, ev, EVENTS_MAX);
	for (i = 0; i < n; i++)
		if (!strcmp(ev[i].cmd, cmd) && !strcmp(ev[i].result, res))
			break;
	if (i == n) {
		if (n == EVENTS_MAX) {
			close(rfd);
			return;
		}
		snprintf(ev[n].cmd, sizeof(ev[n].cmd), "%s", cmd);
		snprintf(ev[n].result, sizeof(ev[n].result), "%s", res);
		ev[n++].n = 0;
	}
	ev[i].n++;
	/* a new file beside it (a leftover of a killed run removed first),
	 * renamed over it */
	snprintf(tmp, sizeof(tmp), "%s.%d", BBRCTL_COUNTERS_NAME, (int)getpid());
	unlinkat(rfd, tmp, 0);
	fd = openat(rfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || !(out = fdopen(fd, "w"))) {
		if (fd >= 0)
			close(fd);
		dbg("cannot count the event in %s: %s", BBRCTL_COUNTERS, strerror(errno));
		close(rfd);
		return;
	}
	for (int k = 0; k < n; k++)
		fprintf(out, "%s %s %llu\n", ev[k].cmd, ev[k].result, ev[k].n);
	if (fclose(out) || renameat(rfd, tmp, rfd, BBRCTL_COUNTERS_NAME)) {
		dbg("cannot count the event in %s: %s", BBRCTL_COUNTERS, strerror(errno));
		unlinkat(rfd, tmp, 0);
	}
	close(rfd);
}

static void events_out(FILE *f)
{
	struct event_line ev[EVENTS_MAX];
	int rfd = run_dir_open(false), n = 0;

	if (rfd >= 0) {	/* missing: no run yet; refused: said why */
		n = events_read(rfd, ev, EVENTS_MAX);
		close(rfd);
	}
	family(f, "bbrbpf_bbrctl_runs_total", "counter",
	       "Runs of the bbrctl commands that change something (load, unload, attach, "
	       "detach, swap, set, params), by result, since boot.");
	for (int i = 0; i < n; i++) {
		char c[64], r[32];

		label_escape(ev[i].cmd, c, sizeof(c));
		label_escape(ev[i].result, r, sizeof(r));
		fprintf(f, "bbrbpf_bbrctl_runs_total{command=\"%s\",result=\"%s\"} %llu\n",
			c, r, ev[i].n);
	}
}

/* ---- the command ---------------------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int metrics_write(FILE *f)
{
	struct groups gs = {};
	struct cg_label *tab = NULL;
	const char **cgl = NULL;
	char **names = NULL;
	size_t ntab = 0;
	double t0 = now_s();
	int n, ret = 0;

	n = list_pinned_names(&names);
	if (n < 0)
		return -1;
	family(f, "bbrbpf_cc_registered", "gauge",
	       "1 for each congestion control bbrctl has loaded and the kernel has registered.");
	for (int i = 0; i < n; i++)
		fprintf(f, "bbrbpf_cc_registered{cc=\"%s\"} %d\n", names[i],
			cc_available(names[i]) == 1);
	/* A CC whose iterator cannot be read (another build's record layout)
	 * costs its own series, with the reason on stderr, not the others. */
	family(f, "bbrbpf_metrics_read_failed", "gauge",
	       "1 for each congestion control whose state iterator this run could not read.");
	for (int i = 0; i < n; i++) {
		int dfd = pt_dir(names[i], PT_QUIET | PT_SILENT);
		bool has_iter = dfd >= 0 && pt_exists(dfd, PIN_ITER);

		if (dfd >= 0)
			close(dfd);
		if (!has_iter)
			continue;	/* no state iterator */
		fprintf(f, "bbrbpf_metrics_read_failed{cc=\"%s\"} %d\n", names[i],
			state_for_each(names[i], add_rec, &gs) < 0);
	}
	cgl = calloc(gs.n ? gs.n : 1, sizeof(*cgl));
	if (!cgl || gs.oom) {
		err("metrics: out of memory");
		ret = -1;
		goto out;
	}
	for (size_t i = 0; i < gs.n; i++)
		cgl[i] = cg_label(&tab, &ntab, gs.g[i].cgroup_id);
	groups_out(f, &gs, cgl);
	glue_out(f, names, n);
	ets_out(f);
	ab_metrics(f);
	events_out(f);
	family(f, "bbrbpf_metrics_sockets_read", "gauge",
	       "State records this run of bbrctl metrics read.");
	fprintf(f, "bbrbpf_metrics_sockets_read %llu\n", (unsigned long long)gs.records);
	family(f, "bbrbpf_metrics_duration_seconds", "gauge",
	       "How long this run of bbrctl metrics took to read and aggregate.");
	fprintf(f, "bbrbpf_metrics_duration_seconds %.6f\n", now_s() - t0);
out:
	free(cgl);
	free(tab);
	free(gs.g);
	free_names(names, n);
	return ret;
}

int cmd_metrics(const struct cmd_opts *o, char **args, int nargs)
{
	char tmp[PATH_MAX];
	FILE *f = stdout;
	int fd = -1, ret;

	if (nargs) {
		err("metrics: unexpected argument \"%s\"", args[0]);
		return EXIT_USAGE;
	}
	if (check_privileges("metrics"))
		return EXIT_FAIL;
	warn_if_bpffs_hidden();
	if (o->output) {
		/* beside FILE, renamed over it: a collector never reads half */
		if (snprintf(tmp, sizeof(tmp), "%s.%d.tmp", o->output, (int)getpid()) >=
		    (int)sizeof(tmp)) {
			err("metrics: --output %s: path too long", o->output);
			return EXIT_USAGE;
		}
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
		if (fd < 0 || !(f = fdopen(fd, "w"))) {
			err("metrics: cannot create %s: %s", tmp, strerror(errno));
			if (fd >= 0)
				close(fd);
			return EXIT_FAIL;
		}
	}
	ret = metrics_write(f);
	if (o->output) {
		if (fclose(f) || ret || rename(tmp, o->output)) {
			if (!ret)
				err("metrics: writing %s failed: %s", o->output, strerror(errno));
			unlink(tmp);
			return EXIT_FAIL;
		}
		return EXIT_OK;
	}
	return fflush(stdout) || ret ? EXIT_FAIL : EXIT_OK;
}
