// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl A/B splits: `attach --cgroup P --cc bbr3:50,cubic:50` splits the
 * new TCP connections of cgroup P across congestion controls by a hash of
 * their 4-tuple (bpf/cc_ab.bpf.c, built in as a skeleton); attaching again
 * with the same arms and other weights changes the weights for new
 * connections only; `ab report --cgroup P` compares what the finished
 * connections of each arm did. docs/ab-testing.md.
 *
 * A split is an attachment like `attach --cc NAME`: one per cgroup, under
 * PIN_CGROUP/ID/, removed by `detach`. Its link is pinned as PIN_AB
 * (not PIN_SELECT) and its maps beside it (PIN_AB_MAPS), so that weights
 * can be changed and the report read by any later bbrctl.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bbrctl.h"
#include "num.h"
#include "ab.h"

#include "cc_ab.skel.h"		/* generated: build/skel (Makefile) */

/* `ab report`: goodput is compared over transfers of at least this many
 * bytes; smaller ones end in their handshake and slow start, whatever the
 * CC (1 MB: a few hundred packets, past the first round trips at the
 * lab's and a WAN's bandwidth-delay products). */
#define AB_MIN_BYTES_DEFAULT	1000000ull
/* z for a two-sided 95 % interval (normal approximation; the report asks
 * for at least AB_MIN_CONNS per arm before it draws a conclusion) */
#define AB_Z95			1.959964
#define AB_MIN_CONNS		10

bool ab_spec(const char *arg)
{
	return arg && strpbrk(arg, ":,") != NULL;
}

struct ab_arms {
	int n;
	char name[AB_ARMS_MAX][AB_NAME_LEN];
	uint32_t pct[AB_ARMS_MAX];
};

/* "bbr3:50,cubic:50" -> arms; EXIT_USAGE after a message. */
static int parse_spec(const char *spec, struct ab_arms *a)
{
	char buf[512], *save = NULL, *tok, why[160];
	uint32_t sum = 0;
	uint64_t w;

	memset(a, 0, sizeof(*a));
	if (snprintf(buf, sizeof(buf), "%s", spec) >= (int)sizeof(buf)) {
		err("attach: --cc %s: too long", spec);
		return EXIT_USAGE;
	}
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');

		if (a->n == AB_ARMS_MAX) {
			err("attach: --cc %s: at most %d arms", spec, AB_ARMS_MAX);
			return EXIT_USAGE;
		}
		if (!colon) {
			err("attach: --cc %s: \"%s\" is not NAME:WEIGHT (weights in "
			    "percent, e.g. bbr3:50,cubic:50)", spec, tok);
			return EXIT_USAGE;
		}
		*colon = '\0';
		if (!valid_cc_name(tok)) {
			err("attach: --cc %s: invalid congestion control name \"%s\"",
			    spec, tok);
			return EXIT_USAGE;
		}
		if (num_parse(colon + 1, 0, AB_WEIGHT_TOTAL, 0, &w, why, sizeof(why))) {
			err("attach: --cc %s: weight of %s: %s: %s (percent)", spec,
			    tok, colon + 1, why);
			return EXIT_USAGE;
		}
		for (int i = 0; i < a->n; i++)
			if (!strcmp(a->name[i], tok)) {
				err("attach: --cc %s: %s is given twice", spec, tok);
				return EXIT_USAGE;
			}
		snprintf(a->name[a->n], AB_NAME_LEN, "%s", tok);
		a->pct[a->n++] = (uint32_t)w;
		sum += (uint32_t)w;
	}
	if (a->n < 2 || sum != AB_WEIGHT_TOTAL) {
		err("attach: --cc %s: %s", spec, a->n < 2 ?
		    "a split needs at least two arms (NAME:WEIGHT,NAME:WEIGHT)" :
		    "the weights must add up to 100 (percent)");
		return EXIT_USAGE;
	}
	return 0;
}

static void cfg_weights(struct ab_cfg *c, const struct ab_arms *a)
{
	uint32_t cum = 0;

	c->narms = (uint32_t)a->n;
	for (int i = 0; i < a->n; i++) {
		cum += a->pct[i];
		c->cum_pct[i] = cum;
		memcpy(c->name[i], a->name[i], AB_NAME_LEN);
	}
}

/*
 * The split's pins are reached only through the verified attachment
 * directory (pt_dir()/pt_subdir(): root's own, no symbolic links; see
 * pintree.c), never by a path under PIN_ROOT.
 */

/* The attachment directory of cgroup id under PIN_CGROUP: a verified fd,
 * or -errno (flags: PT_*; *cgdfd, if given, gets PIN_CGROUP's fd). */
static int ab_dir(uint64_t id, int flags, int *cgdfd)
{
	char idname[24];
	int cfd, dfd;

	if (cgdfd)
		*cgdfd = -1;
	snprintf(idname, sizeof(idname), "%llu", (unsigned long long)id);
	cfd = pt_dir(PIN_CGROUP_DIR, flags & ~PT_EXCL);
	if (cfd < 0)
		return cfd;
	dfd = pt_subdir(cfd, PIN_CGROUP, idname, flags);
	if (cgdfd)
		*cgdfd = cfd;
	else
		close(cfd);
	return dfd;
}

/* An fd of the split's pinned map f in dfd; -errno if absent. */
static int ab_map_fd(int dfd, const char *f)
{
	int fd = pt_obj_get(dfd, f);

	if (fd < 0)
		errno = -fd;	/* for the callers' messages */
	return fd;
}

static int read_cfg(int dfd, struct ab_cfg *c)
{
	uint32_t key = 0;
	int fd = ab_map_fd(dfd, "ab_cfg"), ret;

	if (fd < 0)
		return fd;
	ret = bpf_map_lookup_elem(fd, &key, c) ? -errno : 0;
	close(fd);
	return ret;
}

bool ab_pinned(int dfd)
{
	return pt_exists(dfd, PIN_AB);
}

bool ab_pinned_at(int cgdfd, const char *idname)
{
	int dfd = pt_subdir(cgdfd, PIN_CGROUP, idname, PT_QUIET | PT_SILENT);
	bool yes = dfd >= 0 && ab_pinned(dfd);

	if (dfd >= 0)
		close(dfd);
	return yes;
}

bool ab_has_arm(int dfd, const char *cc, bool *live)
{
	struct bpf_link_info li;
	uint32_t li_len = sizeof(li);
	struct ab_cfg c;
	int lfd;

	*live = false;
	lfd = pt_obj_get(dfd, PIN_AB);
	if (lfd < 0)
		return false;
	memset(&li, 0, sizeof(li));
	*live = !bpf_link_get_info_by_fd(lfd, &li, &li_len) &&
		li.type == BPF_LINK_TYPE_CGROUP && li.cgroup.cgroup_id != 0;
	close(lfd);
	if (!cc || read_cfg(dfd, &c))
		return false;
	for (uint32_t i = 0; i < c.narms && i < AB_ARMS_MAX; i++)
		if (!strncmp(c.name[i], cc, AB_NAME_LEN))
			return true;
	return false;
}

int ab_unpin(int dfd, const char *idname)
{
	static const char *const maps[] = PIN_AB_MAPS;
	int ret = 0, e;

	for (size_t i = 0; i <= sizeof(maps) / sizeof(maps[0]); i++) {
		const char *f = i ? maps[i - 1] : PIN_AB;	/* the link first */

		if ((e = pt_unlink(dfd, f))) {
			err("cannot remove %s/%s/%s: %s", PIN_CGROUP, idname, f,
			    strerror(-e));
			ret = -1;
		}
	}
	return ret;
}

/* New weights for the same arms: one write of ab_cfg. */
static int ab_reweigh(int dfd, const char *dir, const char *cg,
		      const struct ab_arms *a)
{
	struct ab_cfg c, nc;
	uint32_t key = 0;
	int fd, ret;

	if ((ret = read_cfg(dfd, &c))) {
		err("attach: cannot read the split of %s (%s): %s", cg, dir,
		    strerror(-ret));
		return EXIT_FAIL;
	}
	if (c.narms != (uint32_t)a->n)
		goto other;
	for (int i = 0; i < a->n; i++)
		if (strncmp(c.name[i], a->name[i], AB_NAME_LEN))
			goto other;
	nc = c;
	cfg_weights(&nc, a);
	nc.generation = c.generation + 1;
	fd = ab_map_fd(dfd, "ab_cfg");
	ret = fd < 0 || bpf_map_update_elem(fd, &key, &nc, BPF_ANY);
	if (fd >= 0)
		close(fd);
	if (ret) {
		err("attach: cannot write the new weights of %s: %s", cg, strerror(errno));
		return EXIT_FAIL;
	}
	info("attached: new weights for new TCP connections in %s (generation %u); "
	     "existing connections keep their arms", cg, nc.generation);
	return EXIT_OK;
other:
	err("attach: %s already has a split with other arms; a split's arms are "
	    "fixed (its report compares them): `bbrctl detach --cgroup %s` first",
	    cg, cg);
	return EXIT_FAIL;
}

/* Pin the split's maps in the verified directory dfd (dir: its path, for
 * messages); -1 after a message. */
static int pin_maps(struct cc_ab *skel, int dfd, const char *dir)
{
	struct bpf_map *maps[] = { skel->maps.ab_cfg, skel->maps.ab_stats,
				   skel->maps.ab_conns, skel->maps.ab_ring };
	int e;

	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		e = pt_pin(bpf_map__fd(maps[i]), dfd, bpf_map__name(maps[i]));
		if (e) {
			err("pinning %s in %s failed: %s", bpf_map__name(maps[i]),
			    dir, strerror(-e));
			return -1;
		}
	}
	return 0;
}

/* The cgroup has an attachment of bbrctl already (cgdfd: its parent's pin
 * directory, closed here): new weights if it is a split, else refused. */
static int ab_attach_again(const struct cmd_opts *o, const struct att_target *t,
			   int cgdfd, const struct ab_arms *a)
{
	int dfd = pt_subdir(cgdfd, PIN_CGROUP, t->idname, 0), ret = EXIT_FAIL;

	if (dfd >= 0 && ab_pinned(dfd))
		ret = ab_reweigh(dfd, t->dir, t->cg, a);
	else if (dfd >= 0)
		err("attach: %s already has a congestion control attached by "
		    "bbrctl (%s); run `bbrctl detach --cgroup %s` first", t->cg,
		    t->dir, o->cgroup);
	if (dfd >= 0)
		close(dfd);
	close(cgdfd);
	return ret;
}

/* cc_ab loaded, its split written: the arms' weights and a salt for the
 * hash that assigns connections; NULL after a message. */
static struct cc_ab *ab_load(const struct ab_arms *a, uint64_t cgroup_id)
{
	struct cc_ab *skel = cc_ab__open_and_load();
	struct ab_cfg c = {};
	uint32_t key = 0;

	if (!skel) {
		err("loading cc_ab failed: %s", strerror(errno));
		return NULL;
	}
	cfg_weights(&c, a);
	if (getrandom(&c.salt, sizeof(c.salt), 0) != sizeof(c.salt))
		c.salt = cgroup_id * 0x9e3779b97f4a7c15ull;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.ab_cfg), &key, &c, BPF_ANY)) {
		err("attach: writing the split failed: %s", strerror(errno));
		cc_ab__destroy(skel);
		return NULL;
	}
	return skel;
}

/* A failed attach leaves nothing: the link, the ETS pin, the split's maps
 * and its directory. */
static void ab_attach_undo(struct sockops_att *lk, const struct sockops_att *ets,
			   int dfd, int cgdfd, const struct att_target *t)
{
	att_undo(lk);
	if (ets->pinned)	/* ets_attach_cgroup() let go of its link */
		pt_unlink(dfd, PIN_ETS);
	ab_unpin(dfd, t->idname);
	pt_rmdir(cgdfd, t->idname);
}

/* The split's sockops program on the cgroup, with ETS if an arm needs it,
 * its maps and link pinned in dfd. */
static int ab_attach_new(const struct cmd_opts *o, const struct att_target *t,
			 const struct ab_arms *a, bool need_ets, int dfd, int cgdfd)
{
	struct sockops_att lk = {}, ets = {};
	struct cc_ab *skel = NULL;
	int cgfd, ret = EXIT_FAIL;

	cgfd = att_open_cgroup(t);
	if (cgfd < 0)
		goto out;
	if (need_ets && ets_attach_cgroup(&ets, cgfd, dfd, PIN_ETS)) {
		err("attach: an arm needs the ETS sockops program, which is "
		    "unavailable; nothing attached");
		goto out;
	}
	skel = ab_load(a, t->id);
	if (!skel || pin_maps(skel, dfd, t->dir) ||
	    att_do(&lk, skel->progs.cc_ab, cgfd, dfd, PIN_AB))
		goto out;
	info("attached: new TCP connections in %s (cgroup id %llu) split %s%s; "
	     "pinned at %s", t->cg, (unsigned long long)t->id, o->cc,
	     ets.pinned ? " with ETS" : "", t->dir);
	ret = EXIT_OK;
out:
	if (ret != EXIT_OK)
		ab_attach_undo(&lk, &ets, dfd, cgdfd, t);
	else
		att_keep(&lk);
	cc_ab__destroy(skel);
	if (cgfd >= 0)
		close(cgfd);
	return ret;
}

int ab_attach(const struct cmd_opts *o)
{
	const char *names[AB_ARMS_MAX];
	struct att_target t;
	struct ab_arms a;
	bool need_ets = false;
	int cgdfd = -1, dfd, ret;

	ret = parse_spec(o->cc, &a);
	if (ret)
		return ret;
	for (int i = 0; i < a.n; i++) {
		names[i] = a.name[i];
		need_ets |= cc_needs_ets(a.name[i]);
	}
	if (att_prepare(o, names, a.n, &t))
		return EXIT_FAIL;
	dfd = ab_dir(t.id, PT_CREATE | PT_EXCL, &cgdfd);
	if (dfd == -EEXIST)
		return ab_attach_again(o, &t, cgdfd, &a);
	if (dfd < 0) {
		if (cgdfd >= 0)
			close(cgdfd);
		return EXIT_FAIL;
	}
	ret = ab_attach_new(o, &t, &a, need_ets, dfd, cgdfd);
	close(dfd);
	close(cgdfd);
	return ret;
}

/* ---- the report ------------------------------------------------------------------- */

/* Running mean and variance (Welford): numerically safe for 65536 values. */
struct moments {
	uint64_t n;
	double mean, m2;
};

static void mom_add(struct moments *m, double x)
{
	double d = x - m->mean;

	m->n++;
	m->mean += d / (double)m->n;
	m->m2 += d * (x - m->mean);
}

static double mom_var(const struct moments *m)
{
	return m->n > 1 ? m->m2 / (double)(m->n - 1) : NAN;
}

/* Half width of the 95 % interval of the mean. */
static double mom_ci(const struct moments *m)
{
	return m->n > 1 ? AB_Z95 * sqrt(mom_var(m) / (double)m->n) : NAN;
}

struct arm_report {
	uint64_t conns;			/* finished connections in the ring */
	struct moments goodput;		/* bit/s, transfers >= min_bytes */
	struct moments retrans;		/* retransmitted / sent data segments */
	struct moments srtt;		/* µs */
};

/* B - A for one measure: difference of means and its 95 % interval
 * (Welch: the arms' variances are not assumed equal). */
static void diff_ci(const struct moments *a, const struct moments *b,
		    double *d, double *ci)
{
	*d = b->mean - a->mean;
	*ci = a->n > 1 && b->n > 1 ?
	      AB_Z95 * sqrt(mom_var(a) / (double)a->n + mom_var(b) / (double)b->n) : NAN;
}

static json_t *js_num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *measure_json(const struct moments *m)
{
	json_t *j = json_object();

	js_set_u64(j, "n", m->n);
	js_set(j, "mean", js_num(m->n ? m->mean : NAN));
	js_set(j, "ci95", js_num(mom_ci(m)));
	return j;
}

static json_t *diff_json(const struct moments *a, const struct moments *b)
{
	json_t *j = json_object();
	double d, ci;

	diff_ci(a, b, &d, &ci);
	js_set(j, "diff", js_num(a->n && b->n ? d : NAN));
	js_set(j, "ci95", js_num(ci));
	js_set(j, "relative", js_num(a->n && b->n && a->mean ? d / a->mean : NAN));
	js_set_bool(j, "significant", isfinite(ci) && fabs(d) > ci &&
		    a->n >= AB_MIN_CONNS && b->n >= AB_MIN_CONNS);
	return j;
}

static void print_measure(const char *what, const char *unit, double scale,
			  const struct moments *m)
{
	if (!m->n)
		printf("  %-10s -\n", what);
	else
		printf("  %-10s %12.4g %s  ± %-10.3g (n=%llu)\n", what, m->mean / scale,
		       unit, mom_ci(m) / scale, (unsigned long long)m->n);
}

static void print_diff(const char *what, const char *unit, double scale,
		       const struct moments *a, const struct moments *b)
{
	double d, ci;

	diff_ci(a, b, &d, &ci);
	if (!a->n || !b->n) {
		printf("  %-10s -\n", what);
		return;
	}
	printf("  %-10s %+12.4g %s  ± %-10.3g (%+.1f %%)%s\n", what, d / scale, unit,
	       ci / scale, a->mean ? 100 * d / a->mean : 0.0,
	       isfinite(ci) && fabs(d) > ci && a->n >= AB_MIN_CONNS &&
	       b->n >= AB_MIN_CONNS ? "  *" : "");
}

/* The split's ring of finished connections, read in one batch (an array
 * map: keys 0..N-1), and its head (how many finished); -1 with errno set. */
static int read_ring(int dfd, struct ab_conn *ring, uint64_t *head)
{
	uint32_t key = 0, keys_out, count = AB_RING_SLOTS, *keys;
	LIBBPF_OPTS(bpf_map_batch_opts, bo);
	int fd = ab_map_fd(dfd, "ab_ring"), r, e;

	if (fd < 0 || bpf_map_lookup_elem(fd, &key, head)) {
		e = errno;
		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	fd = ab_map_fd(dfd, "ab_conns");
	keys = calloc(AB_RING_SLOTS, sizeof(*keys));
	if (fd < 0 || !keys) {
		e = fd < 0 ? errno : ENOMEM;
		free(keys);
		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	r = bpf_map_lookup_batch(fd, NULL, &keys_out, keys, ring, &count, &bo);
	e = errno;
	free(keys);
	close(fd);
	errno = e;
	return r && e != ENOENT ? -1 : 0;
}

/* Each arm's connections, goodput (transfers of at least min_bytes),
 * retransmission rate and srtt; the number of connections kept. */
static uint64_t tally_arms(const struct ab_conn *ring, const struct ab_cfg *c,
			   uint64_t min_bytes, struct arm_report *rep)
{
	uint64_t kept = 0;

	for (uint32_t i = 0; i < AB_RING_SLOTS; i++) {
		const struct ab_conn *k = &ring[i];
		struct arm_report *ar;

		if (!k->seq || k->arm >= c->narms || k->arm >= AB_ARMS_MAX)
			continue;
		kept++;
		ar = &rep[k->arm];
		ar->conns++;
		if (k->data_segs_out)
			mom_add(&ar->retrans, (double)k->total_retrans / k->data_segs_out);
		if (k->srtt_us)
			mom_add(&ar->srtt, k->srtt_us);
		if (k->bytes_acked >= min_bytes && k->duration_us)
			mom_add(&ar->goodput, (double)k->bytes_acked * 8e6 / (double)k->duration_us);
	}
	return kept;
}

/* What ab report says of one split, for both outputs. */
struct ab_summary {
	const char *cg;
	uint64_t id, min_bytes, head, kept;
	const struct ab_cfg *c;
	const struct arm_report *rep;
};

static uint32_t arm_weight(const struct ab_cfg *c, uint32_t i)
{
	return c->cum_pct[i] - (i ? c->cum_pct[i - 1] : 0);
}

static int report_json(const struct ab_summary *s)
{
	const struct ab_cfg *c = s->c;
	const struct arm_report *rep = s->rep;
	json_t *j = json_object(), *arms = json_array();

	js_set_str(j, "cgroup", s->cg);
	js_set_u64(j, "cgroup_id", s->id);
	js_set_u64(j, "min_bytes", s->min_bytes);
	js_set_u64(j, "generation", c->generation);
	js_set_u64(j, "finished", s->head);
	js_set_u64(j, "kept", s->kept);
	for (uint32_t i = 0; i < c->narms && i < AB_ARMS_MAX; i++) {
		json_t *a = json_object();

		js_set_str(a, "arm", c->name[i]);
		js_set_u64(a, "weight_pct", arm_weight(c, i));
		js_set_u64(a, "connections", rep[i].conns);
		js_set(a, "goodput_bps", measure_json(&rep[i].goodput));
		js_set(a, "retrans_rate", measure_json(&rep[i].retrans));
		js_set(a, "srtt_us", measure_json(&rep[i].srtt));
		if (i) {
			json_t *v = json_object();

			js_set(v, "goodput_bps", diff_json(&rep[0].goodput, &rep[i].goodput));
			js_set(v, "retrans_rate", diff_json(&rep[0].retrans, &rep[i].retrans));
			js_set(v, "srtt_us", diff_json(&rep[0].srtt, &rep[i].srtt));
			js_set(a, "vs_first", v);
		}
		json_array_append_new(arms, a);
	}
	js_set(j, "arms", arms);
	return js_print(j) ? EXIT_FAIL : EXIT_OK;
}

static int report_text(const struct ab_summary *s)
{
	const struct ab_cfg *c = s->c;
	const struct arm_report *rep = s->rep;

	printf("A/B split of %s (generation %u): %llu connections finished, the last "
	       "%llu kept; goodput over transfers of at least %llu bytes; "
	       "mean ± 95 %% interval\n", s->cg, c->generation, (unsigned long long)s->head,
	       (unsigned long long)s->kept, (unsigned long long)s->min_bytes);
	for (uint32_t i = 0; i < c->narms && i < AB_ARMS_MAX; i++) {
		printf("\n%s (weight %u %%): %llu connections\n", c->name[i],
		       arm_weight(c, i), (unsigned long long)rep[i].conns);
		print_measure("goodput", "Mbit/s", 1e6, &rep[i].goodput);
		print_measure("retrans", "%", 0.01, &rep[i].retrans);
		print_measure("srtt", "ms", 1e3, &rep[i].srtt);
	}
	for (uint32_t i = 1; i < c->narms && i < AB_ARMS_MAX; i++) {
		printf("\n%s - %s (* the interval excludes 0):\n", c->name[i], c->name[0]);
		print_diff("goodput", "Mbit/s", 1e6, &rep[0].goodput, &rep[i].goodput);
		print_diff("retrans", "%", 0.01, &rep[0].retrans, &rep[i].retrans);
		print_diff("srtt", "ms", 1e3, &rep[0].srtt, &rep[i].srtt);
	}
	return EXIT_OK;
}

static int ab_report(const struct cmd_opts *o)
{
	struct arm_report rep[AB_ARMS_MAX] = {};
	struct ab_summary sum = { .rep = rep };
	char cg[PATH_MAX], dir[PATH_MAX];
	struct ab_cfg c;
	struct ab_conn *ring = NULL;
	int dfd, ret = EXIT_FAIL;

	sum.min_bytes = o->min_bytes_set ? o->min_bytes : AB_MIN_BYTES_DEFAULT;
	if (!o->cgroup) {
		err("ab report: --cgroup PATH is required");
		return EXIT_USAGE;
	}
	if (check_privileges("ab"))
		return EXIT_FAIL;
	if (cgroup_resolve(o->cgroup, cg, sizeof(cg), &sum.id) ||
	    cg_pin_dir(sum.id, dir, sizeof(dir)))
		return EXIT_FAIL;
	dfd = ab_dir(sum.id, PT_QUIET, NULL);
	if (dfd < 0 && dfd != -ENOENT)
		return EXIT_FAIL;	/* refused, with the reason */
	if (dfd < 0 || !ab_pinned(dfd) || read_cfg(dfd, &c)) {
		err("ab report: %s has no split attached by bbrctl (`bbrctl attach "
		    "--cgroup %s --cc A:50,B:50`)", cg, o->cgroup);
		if (dfd >= 0)
			close(dfd);
		return EXIT_FAIL;
	}
	ring = calloc(AB_RING_SLOTS, sizeof(*ring));
	if (!ring || read_ring(dfd, ring, &sum.head)) {
		err("ab report: reading the split of %s (%s) failed: %s", cg, dir,
		    strerror(ring ? errno : ENOMEM));
	} else {
		sum.cg = cg;
		sum.c = &c;
		sum.kept = tally_arms(ring, &c, sum.min_bytes, rep);
		ret = g_opts.json ? report_json(&sum) : report_text(&sum);
	}
	close(dfd);
	free(ring);
	return ret;
}

int cmd_ab(const struct cmd_opts *o, char **args, int nargs)
{
	if (nargs != 1 || strcmp(args[0], "report")) {
		err("ab: usage: bbrctl ab report --cgroup PATH [--min-bytes N]");
		return EXIT_USAGE;
	}
	return ab_report(o);
}

/* ---- metrics ------------------------------------------------------------------------ */

struct ab_split {
	char cgroup[PATH_MAX];
	struct ab_cfg cfg;
	struct ab_stats st[AB_ARMS_MAX];
};

#define AB_OFF(m)	offsetof(struct ab_stats, m)
#define AB_WEIGHT	((size_t)-1)	/* ab_family(): the weight, from the split */

/* One family: HELP, TYPE, then a sample per arm of every split. */
static void ab_family(FILE *f, const struct ab_split *s, int ns, const char *name,
		      const char *type, const char *help, size_t off, double scale)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
	for (int k = 0; k < ns; k++)
		for (uint32_t i = 0; i < s[k].cfg.narms && i < AB_ARMS_MAX; i++) {
			uint64_t v;

			if (off == AB_WEIGHT)
				v = s[k].cfg.cum_pct[i] - (i ? s[k].cfg.cum_pct[i - 1] : 0);
			else
				memcpy(&v, (const char *)&s[k].st[i] + off, sizeof(v));
			fprintf(f, "%s{cgroup=\"%s\",arm=\"%.*s\"} %.17g\n", name,
				s[k].cgroup, AB_NAME_LEN, s[k].cfg.name[i], (double)v * scale);
		}
}

/* One pinned split (dfd: its directory, closed here) into *sp; -1 if it
 * cannot be read. */
static int ab_split_read(int dfd, uint64_t id, struct ab_split *sp)
{
	char cg[PATH_MAX];
	int fd;

	memset(sp, 0, sizeof(*sp));
	if (read_cfg(dfd, &sp->cfg)) {
		close(dfd);
		return -1;
	}
	fd = ab_map_fd(dfd, "ab_stats");
	close(dfd);
	for (uint32_t i = 0; fd >= 0 && i < sp->cfg.narms && i < AB_ARMS_MAX; i++)
		bpf_map_lookup_elem(fd, &i, &sp->st[i]);
	if (fd >= 0)
		close(fd);
	cgroup_path_of(id, cg, sizeof(cg));
	metrics_cgroup_label(cg, id, sp->cgroup, sizeof(sp->cgroup));
	return 0;
}

/* Every split bbrctl has pinned, in *out (the caller frees it); how many. */
static int ab_splits(struct ab_split **out)
{
	struct ab_split *s = NULL;
	char **ids = NULL;
	int ns = 0, n, cgdfd;

	/* a tree bbrctl does not trust is refused (with a message): no series */
	cgdfd = pt_dir(PIN_CGROUP_DIR, PT_QUIET);
	if (cgdfd < 0)
		return 0;
	n = pt_list(cgdfd, true, &ids);
	for (int k = 0; k < n; k++) {
		struct ab_split *ns2;
		uint64_t id;
		int dfd;

		dfd = cg_pin_subdir(cgdfd, ids[k], &id);
		if (dfd < 0)
			continue;
		if (!ab_pinned(dfd)) {
			close(dfd);
			continue;
		}
		ns2 = realloc(s, (ns + 1) * sizeof(*s));
		if (!ns2) {
			close(dfd);
			break;
		}
		s = ns2;
		if (!ab_split_read(dfd, id, &s[ns]))
			ns++;
	}
	free_names(ids, n > 0 ? n : 0);
	close(cgdfd);
	*out = s;
	return ns;
}

/* The A/B families of `bbrctl metrics`, in their order of output. */
static const struct ab_fam {
	const char *name, *type, *help;
	size_t off;
	double scale;
} ab_fams[] = {
	{ "bbrbpf_ab_weight_ratio", "gauge",
	  "Share of new connections an A/B split gives the arm.", AB_WEIGHT, 0.01 },
	{ "bbrbpf_ab_connections_opened_total", "counter",
	  "Connections the split gave the arm.", AB_OFF(opened), 1 },
	{ "bbrbpf_ab_setsockopt_failures_total", "counter",
	  "Connections whose switch to the arm's CC failed.", AB_OFF(set_failed), 1 },
	{ "bbrbpf_ab_connections_finished_total", "counter",
	  "Connections of the arm that finished.", AB_OFF(closed), 1 },
	{ "bbrbpf_ab_acked_bytes_total", "counter",
	  "Bytes acknowledged on the arm's finished connections.",
	  AB_OFF(bytes_acked), 1 },
	{ "bbrbpf_ab_data_segments_sent_total", "counter",
	  "Data segments sent on the arm's finished connections.",
	  AB_OFF(data_segs_out), 1 },
	{ "bbrbpf_ab_retransmitted_segments_total", "counter",
	  "Segments retransmitted on the arm's finished connections.",
	  AB_OFF(total_retrans), 1 },
	{ "bbrbpf_ab_srtt_seconds_total", "counter",
	  "Smoothed RTT at the end of each finished connection, summed "
	  "(divide by _finished_total for the mean).", AB_OFF(srtt_sum_us), 1e-6 },
	{ "bbrbpf_ab_duration_seconds_total", "counter",
	  "Lifetimes of the arm's finished connections, summed.",
	  AB_OFF(duration_sum_us), 1e-6 },
};

void ab_metrics(FILE *f)
{
	struct ab_split *s = NULL;
	int ns = ab_splits(&s);

	for (size_t i = 0; ns && i < sizeof(ab_fams) / sizeof(ab_fams[0]); i++)
		ab_family(f, s, ns, ab_fams[i].name, ab_fams[i].type,
			  ab_fams[i].help, ab_fams[i].off, ab_fams[i].scale);
	free(s);
}
