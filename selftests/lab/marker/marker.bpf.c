// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * marker: CE marking and random loss for the lab's kernel fast path.
 *
 * This kernel has no netem, RED, fq_codel or dualpi2, so a router namespace
 * shapes with tbf (or htb + bfifo) and this clsact egress program, attached
 * to the same device in direct-action mode, decides per packet before it
 * reaches the shaper's queue:
 *
 *   1. random loss: drop with probability loss_p32 / 2^32
 *      (bpf_get_prandom_u32), counted as DROP_LOSS;
 *   2. a virtual queue drained at the shaper's rate R mirrors the real
 *      tbf (backlog += len, backlog -= R * dt, capped at the buffer like a
 *      tail drop, and floored at -burst_bytes: a negative backlog is the
 *      token bucket's credit, so a burst that tbf passes at once does not
 *      count as queue). STEP marking: CE when the virtual sojourn
 *      max(backlog, 0) / R exceeds k_us (L4S / DCTCP step);
 *   3. a phantom queue drained at gamma * R (HULL): PHANTOM_Q marks when its
 *      backlog exceeds phantom_thresh_bytes; PHANTOM_RATE marks when the
 *      arrival rate over a sliding window_us exceeds gamma * R (the
 *      "departure rate over 5 ms" rule; arrivals equal departures of a
 *      shaper that is not dropping).
 *
 * The queue each packet meets. A packet the virtual queue admits waits
 * max(backlog before it, 0) / R before its own transmission starts: its
 * sojourn in the real FIFO, without its own serialisation. The program
 * sums it (SOJ_SUM_NS over SOJ_PKTS: the mean per packet, which the lab
 * polls for its queue-over-time series) and counts it in a log-linear
 * histogram (soj_hist: 1 us buckets below 64 us, then 16 per power of two,
 * so a bucket is at most 1/16 of its value wide), from which the lab reads
 * the percentiles of the queue every packet saw.
 *
 * Marking uses bpf_skb_ecn_set_ce(), which only changes ECT(0)/ECT(1)
 * packets; a packet that should be marked but is Not-ECT is counted in
 * WANT_NOT_ECT and passes (a real AQM would drop it; the lab wants to see
 * the difference). Configuration is one entry of the array map "cfg",
 * written by selftests/lab/labkit/fastpath.py right after attach; an all-zero
 * config passes everything. Counters live in the per-CPU map "cnt".
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#define TC_ACT_OK	0
#define TC_ACT_SHOT	2
#define NSEC_PER_SEC	1000000000ull
#define NSEC_PER_USEC	1000ull
/* Longest gap the drain arithmetic takes at once: 1 s x 2^34 B/s fits u64. */
#define DRAIN_GAP_MAX_NS	NSEC_PER_SEC
#define GAMMA_UNIT	1000	/* gamma_milli: gamma x 1000 */

/* soj_hist's layout, mirrored by labkit/fastpath.py (soj_bucket_edges_us):
 * buckets 0..SOJ_LINEAR_US-1 are 1 us wide; above, each power of two from
 * SOJ_LINEAR_US on is split into SOJ_SUB_BUCKETS; the last bucket also
 * takes everything beyond 2^(SOJ_LINEAR_SHIFT + SOJ_OCTAVES) us (268 ms). */
#define SOJ_LINEAR_SHIFT	6
#define SOJ_LINEAR_US		(1u << SOJ_LINEAR_SHIFT)	/* 64 us */
#define SOJ_SUB_SHIFT		4
#define SOJ_SUB_BUCKETS		(1u << SOJ_SUB_SHIFT)	/* 16 per octave */
#define SOJ_OCTAVES		12
#define SOJ_BUCKETS		(SOJ_LINEAR_US + SOJ_OCTAVES * SOJ_SUB_BUCKETS)	/* 256 */

enum mark_mode {
	MARK_STEP	  = 1 << 0,
	MARK_PHANTOM_Q	  = 1 << 1,
	MARK_PHANTOM_RATE = 1 << 2,
};

/* Layout shared with labkit/fastpath.py (struct.pack "<QQQIIIIQI4x"). */
struct marker_cfg {
	__u64 rate_Bps;			/* shaper rate R, bytes/s; 0 = no queue model */
	__u64 buffer_bytes;		/* virtual queue cap = the real FIFO's limit */
	__u64 burst_bytes;		/* the shaper's token bucket depth */
	__u32 k_us;			/* step threshold on virtual sojourn */
	__u32 mode;			/* enum mark_mode bits */
	__u32 gamma_milli;		/* phantom drain = R x gamma_milli / 1000 */
	__u32 window_us;		/* PHANTOM_RATE window */
	__u64 phantom_thresh_bytes;	/* PHANTOM_Q threshold */
	__u32 loss_p32;			/* drop probability x 2^32 */
};

struct marker_state {
	struct bpf_spin_lock lock;
	__u64 last_ns;
	__s64 vq_bytes;			/* virtual queue at R; < 0: bucket tokens */
	__u64 pq_bytes;			/* phantom queue at gamma x R */
	__u64 win_start_ns;
	__u64 win_bytes;		/* arrivals in the current window */
	__u64 prev_win_bytes;		/* arrivals in the previous window */
};

enum counter {
	CNT_PKTS,		/* packets seen */
	CNT_BYTES,		/* bytes seen */
	CNT_DROP_LOSS,		/* dropped by random loss */
	CNT_MARK_STEP,		/* CE set by the step rule */
	CNT_MARK_PHANTOM,	/* CE set by a phantom rule (and not the step rule) */
	CNT_WANT_NOT_ECT,	/* a rule fired on a Not-ECT packet */
	CNT_VQ_OVER_K,		/* packets whose virtual sojourn exceeded k_us */
	CNT_VQ_FULL,		/* virtual queue at its cap (the FIFO would tail-drop) */
	CNT_SOJ_PKTS,		/* packets the virtual queue admitted */
	CNT_SOJ_SUM_NS,		/* their virtual sojourn, summed */
	CNT_MAX,
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct marker_cfg);
} cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct marker_state);
} vstate SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} cnt SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SOJ_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} soj_hist SEC(".maps");

static __always_inline void count(__u32 idx, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&cnt, &idx);

	if (c)
		*c += n;
}

/* Bytes a queue drained at @rate_Bps empties in @gap_ns. */
static __always_inline __u64 drained_bytes(__u64 gap_ns, __u64 rate_Bps)
{
	if (gap_ns > DRAIN_GAP_MAX_NS)
		gap_ns = DRAIN_GAP_MAX_NS;
	return gap_ns * rate_Bps / NSEC_PER_SEC;
}

static __always_inline __u64 sub_floor(__u64 a, __u64 b)
{
	return a > b ? a - b : 0;
}

/* Index of the highest set bit of @v > 0 (no clz instruction in BPF). */
static __always_inline __u32 msb_index(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8)  { v >>= 8;  r += 8; }
	if (v >> 4)  { v >>= 4;  r += 4; }
	if (v >> 2)  { v >>= 2;  r += 2; }
	if (v >> 1)  r += 1;
	return r;
}

/* soj_hist's bucket for a sojourn of @us microseconds. */
static __always_inline __u32 soj_bucket(__u64 us)
{
	__u32 octave;

	if (us < SOJ_LINEAR_US)
		return us;
	octave = msb_index(us) - SOJ_LINEAR_SHIFT;
	if (octave >= SOJ_OCTAVES)
		return SOJ_BUCKETS - 1;
	return SOJ_LINEAR_US + octave * SOJ_SUB_BUCKETS +
	       ((us >> (octave + SOJ_LINEAR_SHIFT - SOJ_SUB_SHIFT)) & (SOJ_SUB_BUCKETS - 1));
}

static __always_inline void soj_record(__u64 soj_ns)
{
	__u32 b = soj_bucket(soj_ns / NSEC_PER_USEC);
	__u64 *h = bpf_map_lookup_elem(&soj_hist, &b);

	if (h)
		*h += 1;
	count(CNT_SOJ_PKTS, 1);
	count(CNT_SOJ_SUM_NS, soj_ns);
}

/* Sliding-window arrival estimate: previous window weighted by its overlap. */
static __always_inline __u64 window_bytes(struct marker_state *s, __u64 now, __u64 win_ns)
{
	__u64 into = now - s->win_start_ns;

	if (into >= win_ns)
		return s->win_bytes;
	return s->win_bytes + s->prev_win_bytes * (win_ns - into) / win_ns;
}

static __always_inline void window_roll(struct marker_state *s, __u64 now, __u64 win_ns)
{
	__u64 into = now - s->win_start_ns;

	if (into < win_ns)
		return;
	s->prev_win_bytes = into < 2 * win_ns ? s->win_bytes : 0;
	s->win_bytes = 0;
	s->win_start_ns = now;
}

/* Update the queues with one arrival of @len bytes; return the rules that fire. */
static __always_inline __u32 queues_update(const struct marker_cfg *c, struct marker_state *s,
					   __u64 now, __u64 len, __u64 *soj_ns)
{
	__u64 gap = s->last_ns ? now - s->last_ns : 0;
	__u64 phantom_Bps = c->rate_Bps * c->gamma_milli / GAMMA_UNIT;
	__u64 win_ns = (__u64)c->window_us * NSEC_PER_USEC;
	__u32 fired = 0;

	if (!s->last_ns)	/* tbf starts with a full bucket: so does the model */
		s->vq_bytes = -(__s64)c->burst_bytes;
	s->last_ns = now;
	s->vq_bytes -= drained_bytes(gap, c->rate_Bps);
	if (s->vq_bytes < -(__s64)c->burst_bytes)
		s->vq_bytes = -(__s64)c->burst_bytes;
	s->pq_bytes = sub_floor(s->pq_bytes, drained_bytes(gap, phantom_Bps));
	if (!c->buffer_bytes || s->vq_bytes + (__s64)len <= (__s64)c->buffer_bytes) {
		*soj_ns = s->vq_bytes > 0 ? (__u64)s->vq_bytes * NSEC_PER_SEC / c->rate_Bps : 0;
		s->vq_bytes += len;
	} else
		fired |= 1u << 31;	/* virtual tail drop: counted, not acted on */
	s->pq_bytes += len;
	if (s->vq_bytes > 0 &&
	    (__u64)s->vq_bytes * NSEC_PER_SEC / c->rate_Bps > (__u64)c->k_us * NSEC_PER_USEC)
		fired |= MARK_STEP;
	if (c->phantom_thresh_bytes && s->pq_bytes > c->phantom_thresh_bytes)
		fired |= MARK_PHANTOM_Q;
	if (win_ns) {
		window_roll(s, now, win_ns);
		s->win_bytes += len;
		if (window_bytes(s, now, win_ns) * NSEC_PER_SEC > phantom_Bps * win_ns)
			fired |= MARK_PHANTOM_RATE;
	}
	return fired;
}

SEC("tc")
int marker(struct __sk_buff *skb)
{
	__u32 zero = 0, fired = 0;
	__u64 soj_ns = 0;
	struct marker_cfg *c = bpf_map_lookup_elem(&cfg, &zero);
	struct marker_state *s;
	__u64 now = bpf_ktime_get_ns();

	if (!c)
		return TC_ACT_OK;
	count(CNT_PKTS, 1);
	count(CNT_BYTES, skb->len);
	if (c->loss_p32 && bpf_get_prandom_u32() < c->loss_p32) {
		count(CNT_DROP_LOSS, 1);
		return TC_ACT_SHOT;
	}
	if (!c->rate_Bps)
		return TC_ACT_OK;
	s = bpf_map_lookup_elem(&vstate, &zero);
	if (!s)
		return TC_ACT_OK;
	bpf_spin_lock(&s->lock);
	fired = queues_update(c, s, now, skb->len, &soj_ns);
	bpf_spin_unlock(&s->lock);

	if (!(fired & (1u << 31)))
		soj_record(soj_ns);
	if (fired & (1u << 31))
		count(CNT_VQ_FULL, 1);
	if (fired & MARK_STEP)
		count(CNT_VQ_OVER_K, 1);
	fired &= c->mode;
	if (!fired)
		return TC_ACT_OK;
	if (!bpf_skb_ecn_set_ce(skb))
		count(CNT_WANT_NOT_ECT, 1);
	else if (fired & MARK_STEP)
		count(CNT_MARK_STEP, 1);
	else
		count(CNT_MARK_PHANTOM, 1);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
