/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The TCP ETS option (draft-yang-tcpm-ets-00 §3.2) as plain C: encoder,
 * parser and the EcrDel / Network_RTT arithmetic. The same header compiles
 * with `clang -target bpf` (included by bpf/ets.bpf.c after vmlinux.h) and
 * natively (unit tests in selftests/unit/test_ets*.c, libFuzzer target
 * selftests/fuzz/fuzz_ets.c).
 *
 * Wire format, big-endian:
 *
 *   0      1      2..3    4..7    8..11   12..13                    14..15
 *   kind   len    ExID    TSval   TSecr   Unit(2)|EcrDel(13)|Rsv(1)  MaxACKDel
 *   254    16/14  0x4554  us      us                                 SYN only
 *
 * Receiver (§3.2): TS.Latest is the newest peer TSval seen on a SYN or a
 * non-empty data segment, TS.LatestClock its arrival time. When an option
 * is written: EcrDel = (now - TS.LatestClock) + (TS.Latest - TSecr).
 * Sender (§3.3): Network_RTT = arrival - TSecr - EcrDel, which is the RTT
 * of the newest segment the receiver had, not of the echoed one.
 *
 * Everything here is bounded straight-line code: no loops, no division by
 * a variable, no 64-bit signed arithmetic.
 */
#ifndef ETS_OPT_H
#define ETS_OPT_H

#include "core/types.h"

#define ETS_OPT_KIND		254	/* RFC 6994 shared experimental kind */
#define ETS_OPT_EXID		0x4554	/* "ET", draft §3.2 */
#define ETS_OPT_LEN_SYN_BYTES	16	/* with MaxACKDel, SYN only */
#define ETS_OPT_LEN_BYTES	14	/* every other segment */
/* What bpf_reserve_hdr_opt() takes off the 40-byte budget: the kernel
 * rounds every reservation up to 4 bytes. */
#define ETS_OPT_SPACE_BYTES	16

/* EcrDelUnit, the two most significant bits of bytes 12..13. */
#define ETS_UNIT_US		0
#define ETS_UNIT_MS		1
#define ETS_UNIT_INVALID	2
#define ETS_UNIT_RESERVED	3
#define ETS_ECRDEL_MAX		0x1fff	/* 13 bits */
#define ETS_US_PER_MS		1000

/* MaxACKDel (us): saturates at 0xFFFE, 0xFFFF = not advertised. */
#define ETS_MAXACKDEL_SAT_US	0xfffe
#define ETS_MAXACKDEL_NONE	0xffff

/* Parser verdicts (also the index of the per-netns "rejected" counters). */
enum ets_parse_err {
	ETS_OK = 0,
	ETS_ERR_SHORT,		/* fewer bytes than the length byte claims */
	ETS_ERR_KIND,		/* not kind 254 */
	ETS_ERR_EXID,		/* kind 254 with another ExID */
	ETS_ERR_LEN,		/* length not 16 on SYN / not 14 otherwise */
	ETS_ERR__MAX,
};

/* Network_RTT sample verdicts. */
enum ets_sample_err {
	ETS_SAMPLE_OK = 0,
	ETS_SAMPLE_NO_ACK,	/* TSecr/EcrDel only mean something with ACK */
	ETS_SAMPLE_TSECR_ZERO,	/* nothing echoed */
	ETS_SAMPLE_FUTURE,	/* TSecr after the arrival time */
	ETS_SAMPLE_TOO_OLD,	/* Total_RTT beyond what the connection makes
				 * plausible (ets_rtt_bound_us()) */
	ETS_SAMPLE_UNIT,	/* EcrDelUnit invalid or reserved */
	ETS_SAMPLE_DEL_GT_RTT,	/* EcrDel larger than Total_RTT */
	ETS_SAMPLE__MAX,
};

/* An RTT sample older than this is not an RTT: 2^31 us is the draft's
 * half-space (§4.1, ~35.8 min); we bound far tighter, at 60 s, which is
 * above any RTO backoff the kernel would still sample. */
#define ETS_RTT_MAX_US		60000000u
/* TCP_RTO_MIN: a segment unacknowledged for longer than srtt plus this has
 * been retransmitted, so an echo that old is no RTT of the path. */
#define ETS_RTO_MIN_US		200000u

/*
 * The largest Total_RTT a connection with smoothed RTT srtt_us (0: none
 * yet) can plausibly sample: twice its srtt plus TCP's minimum RTO, at most
 * ETS_RTT_MAX_US. A forged echo (an on-path attacker's old TSecr) then
 * cannot inject a Network_RTT of seconds into a path of microseconds.
 */
static inline u32 ets_rtt_bound_us(u32 srtt_us)
{
	u64 bound;

	if (!srtt_us)
		return ETS_RTT_MAX_US;
	bound = 2ull * srtt_us + ETS_RTO_MIN_US;
	return bound < ETS_RTT_MAX_US ? (u32)bound : ETS_RTT_MAX_US;
}

/*
 * Is there a kind-254 option at all among the TCP options opts[0..len)
 * (the bytes after the fixed header)? For telling a malformed ETS option
 * (whose search by ExID fails) from a missing one. Walks the options as
 * the kernel does, stopping at EOL or at a length that cannot be right.
 */
#define ETS_TCPOPT_EOL		0
#define ETS_TCPOPT_NOP		1
#define ETS_TCP_OPTIONS_MAX	40
/* RFC 9293's default MSS of IPv4 (536): a segment's size when mss_cache
 * is not known yet. */
#define ETS_MSS_MIN_BYTES	536

struct ets_opt_walk {
	u8 opts[ETS_TCP_OPTIONS_MAX];
	u32 len;		/* bytes of opts in use */
	u32 i;			/* the option the walk is at */
	u32 found;		/* a kind-254 option was found */
	u32 err;		/* what is wrong with it: ETS_ERR_LEN (too short
				 * for an ExID, or running past the options),
				 * ETS_ERR_EXID (another experiment's ExID) */
};

/* One step of the walk: 1 when it is over (w->found says how), 0 to go on.
 * Each step moves on by at least a byte, so ETS_TCP_OPTIONS_MAX steps end
 * it (BPF runs the steps with bpf_loop(): the verifier checks one). */
static inline int ets_opt_walk_step(struct ets_opt_walk *w)
{
	u32 i = w->i, n;

	if (i >= w->len || i >= ETS_TCP_OPTIONS_MAX ||
	    w->opts[i] == ETS_TCPOPT_EOL)
		return 1;
	if (w->opts[i] == ETS_TCPOPT_NOP) {
		w->i = i + 1;
		return 0;
	}
	if (w->opts[i] == ETS_OPT_KIND) {
		u32 n2 = i + 1 < w->len && i + 1 < ETS_TCP_OPTIONS_MAX ?
			 w->opts[i + 1] : 0;

		w->found = 1;
		w->err = ETS_ERR_LEN;
		if (n2 >= 4 && i + 3 < w->len && i + 3 < ETS_TCP_OPTIONS_MAX &&
		    i + n2 <= w->len &&
		    ((u32)w->opts[i + 2] << 8 | w->opts[i + 3]) != ETS_OPT_EXID)
			w->err = ETS_ERR_EXID;
		return 1;
	}
	if (i + 1 >= w->len || i + 1 >= ETS_TCP_OPTIONS_MAX)
		return 1;
	n = w->opts[i + 1];
	if (n < 2)
		return 1;	/* the kernel stops here too */
	w->i = i + n;
	return 0;
}

static inline bool ets_has_kind254(struct ets_opt_walk *w)
{
	u32 k;

	w->i = 0;
	w->found = 0;
	w->err = ETS_OK;
	for (k = 0; k < ETS_TCP_OPTIONS_MAX; k++)
		if (ets_opt_walk_step(w))
			break;
	return w->found;
}

struct ets_opt {
	u32 tsval_us;
	u32 tsecr_us;
	u16 ecrdel;		/* 13-bit value in `unit` */
	u8 unit;		/* ETS_UNIT_* */
	u8 syn;			/* MaxACKDel present (length 16) */
	u16 max_ack_del_us;	/* only with syn */
};

/* RFC 7323 / draft §3.2: s is "after" t when 0 < (s - t) < 2^31 mod 2^32. */
static inline bool ets_after(u32 s, u32 t)
{
	return (s32)(s - t) > 0;
}

/*
 * A peer that stops sending the option (a middlebox strips it, or its ETS
 * program is detached) sends segments with the RFC 7323 timestamp only:
 * they match the kernel's header prediction, take its fast path and never
 * reach the parse callback, so nothing counts them there. What does move
 * is the sequence space: the position up to which segments with the option
 * (or excused without it: SACK, closing) were seen is remembered, the
 * acknowledged (snd_una) and received (rcv_nxt) positions are compared
 * with it whenever this side writes a segment, and ETS_MISSING_LIMIT
 * segments' worth (of mss_bytes each) past it on either means that many
 * segments arrived without the option. One comparison per written segment,
 * no callback more per segment.
 */
static inline void ets_mark_advance(u32 *mark, u32 seq)
{
	if (ets_after(seq, *mark))
		*mark = seq;
}

static inline bool ets_peer_silent(u32 snd_una, u32 rcv_nxt, u32 una_mark,
				   u32 rcv_mark, u32 mss_bytes, u32 limit_segs)
{
	u32 limit = limit_segs * (mss_bytes ? mss_bytes : ETS_MSS_MIN_BYTES);
	u32 acked = snd_una - una_mark, rcvd = rcv_nxt - rcv_mark;

	/* "past": ahead by less than half the sequence space (ets_after) */
	return (acked < 0x80000000u && acked >= limit) ||
	       (rcvd < 0x80000000u && rcvd >= limit);
}

/* The EcrDel field for a delay in us: us units when it fits 13 bits, ms
 * (rounded to nearest) when that fits, else "invalid" (draft leaves the
 * choice open; this is the rule of docs/ets.md). */
static inline u16 ets_ecrdel_field(u64 delay_us)
{
	u64 ms;

	if (delay_us <= ETS_ECRDEL_MAX)
		return (u16)((ETS_UNIT_US << 14) | (delay_us << 1));
	ms = (delay_us + ETS_US_PER_MS / 2) / ETS_US_PER_MS;
	if (ms <= ETS_ECRDEL_MAX)
		return (u16)((ETS_UNIT_MS << 14) | (ms << 1));
	return (u16)(ETS_UNIT_INVALID << 14);
}

/* The delay an EcrDel field carries, in us; -1 for invalid/reserved. */
static inline s64 ets_ecrdel_us(u8 unit, u16 ecrdel)
{
	if (unit == ETS_UNIT_US)
		return ecrdel;
	if (unit == ETS_UNIT_MS)
		return (s64)ecrdel * ETS_US_PER_MS;
	return -1;
}

static inline void ets_put16(u8 *p, u16 v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static inline void ets_put32(u8 *p, u32 v)
{
	p[0] = v >> 24;
	p[1] = (v >> 16) & 0xff;
	p[2] = (v >> 8) & 0xff;
	p[3] = v & 0xff;
}

static inline u16 ets_get16(const u8 *p)
{
	return (u16)((p[0] << 8) | p[1]);
}

static inline u32 ets_get32(const u8 *p)
{
	return ((u32)p[0] << 24) | ((u32)p[1] << 16) | ((u32)p[2] << 8) | p[3];
}

/* MaxACKDel field for a delayed-ACK bound in us. */
static inline u16 ets_maxackdel_field(u64 us)
{
	return us >= ETS_MAXACKDEL_SAT_US ? ETS_MAXACKDEL_SAT_US : (u16)us;
}

/*
 * Encode into buf (at least ETS_OPT_LEN_SYN_BYTES). With ack == false the
 * draft wants TSecr and EcrDel zero. delay_us < 0 means "no TS.Latest yet":
 * the unit is then "invalid". Returns the option length written.
 */
static inline int ets_encode(u8 *buf, bool syn, bool ack, u32 tsval_us,
			     u32 tsecr_us, s64 delay_us, u16 max_ack_del_us)
{
	u16 del;

	if (!ack) {
		tsecr_us = 0;
		del = 0;
	} else if (delay_us < 0) {
		del = ETS_UNIT_INVALID << 14;
	} else {
		del = ets_ecrdel_field((u64)delay_us);
	}
	buf[0] = ETS_OPT_KIND;
	buf[1] = syn ? ETS_OPT_LEN_SYN_BYTES : ETS_OPT_LEN_BYTES;
	ets_put16(buf + 2, ETS_OPT_EXID);
	ets_put32(buf + 4, tsval_us);
	ets_put32(buf + 8, tsecr_us);
	ets_put16(buf + 12, del);	/* reserved bit 0 stays 0 */
	if (!syn)
		return ETS_OPT_LEN_BYTES;
	ets_put16(buf + 14, max_ack_del_us);
	return ETS_OPT_LEN_SYN_BYTES;
}

/*
 * Parse one option of `avail` bytes at buf (as bpf_load_hdr_opt() copies
 * it: kind, len, data). `syn` says whether the segment had SYN set, which
 * fixes the length the draft requires. Later versions "MAY" be longer; we
 * only accept -00's exact lengths so a truncated or padded option is
 * counted, not half-read. The reserved bit is ignored.
 */
static inline int ets_parse(const u8 *buf, int avail, bool syn,
			    struct ets_opt *o)
{
	u16 f;
	int want = syn ? ETS_OPT_LEN_SYN_BYTES : ETS_OPT_LEN_BYTES;

	if (avail < 4)
		return ETS_ERR_SHORT;
	if (buf[0] != ETS_OPT_KIND)
		return ETS_ERR_KIND;
	if (ets_get16(buf + 2) != ETS_OPT_EXID)
		return ETS_ERR_EXID;
	if (buf[1] != want)
		return ETS_ERR_LEN;
	if (avail < want)
		return ETS_ERR_SHORT;
	o->tsval_us = ets_get32(buf + 4);
	o->tsecr_us = ets_get32(buf + 8);
	f = ets_get16(buf + 12);
	o->unit = f >> 14;
	o->ecrdel = (f >> 1) & ETS_ECRDEL_MAX;
	o->syn = syn;
	o->max_ack_del_us = syn ? ets_get16(buf + 14) : ETS_MAXACKDEL_NONE;
	return ETS_OK;
}

/*
 * Receiver, draft §3.2 step 1: a SYN or a non-empty data segment with a
 * TSval after TS.Latest moves TS.Latest and TS.LatestClock. Returns true
 * when it moved.
 */
static inline bool ets_rcv_latest(u32 *ts_latest_us, u64 *ts_latest_clock_ns,
				  bool syn, bool has_data, u32 tsval_us,
				  u64 arrival_ns)
{
	if (!syn && !has_data)
		return false;
	if (!syn && *ts_latest_clock_ns && !ets_after(tsval_us, *ts_latest_us))
		return false;
	*ts_latest_us = tsval_us;
	*ts_latest_clock_ns = arrival_ns;
	return true;
}

/*
 * Receiver, draft §3.2 step 2: EcrDel at the time the ACK is written.
 * LatestACKDel = now - TS.LatestClock (receiver clock), TSecrAge =
 * TS.Latest - TSecr (sender clock; wrap-safe u32). Returns -1 when there
 * is no TS.Latest yet, TS.Latest is not at or after TSecr, or the clock
 * went backwards: the caller then sends unit "invalid".
 */
static inline s64 ets_ecrdel_compute_us(u64 now_ns, u64 ts_latest_clock_ns,
					u32 ts_latest_us, u32 tsecr_us)
{
	u32 age_us = ts_latest_us - tsecr_us;

	if (!ts_latest_clock_ns || now_ns < ts_latest_clock_ns)
		return -1;
	if (age_us >= 0x80000000u)	/* TSecr after TS.Latest */
		return -1;
	return (s64)((now_ns - ts_latest_clock_ns) / 1000) + age_us;
}

struct ets_sample {
	u32 total_rtt_us;
	u32 network_rtt_us;
	u32 ack_delay_us;
	u32 ack_delay_exact;	/* EcrDel came in us (not rounded to a ms) */
};

/*
 * Sender, draft §3.3. arrival_us is the ACK's arrival on the same clock
 * (and truncation) that produced the TSvals we sent; max_rtt_us the largest
 * plausible Total_RTT (ets_rtt_bound_us()). Total_RTT is always filled when
 * TSecr is usable; Network_RTT only with ETS_SAMPLE_OK, and then
 * 0 <= Network_RTT <= Total_RTT by construction.
 */
static inline int ets_sample(const struct ets_opt *o, bool ack, u32 arrival_us,
			     u32 max_rtt_us, struct ets_sample *s)
{
	u32 total = arrival_us - o->tsecr_us;
	s64 del;

	if (!ack)
		return ETS_SAMPLE_NO_ACK;
	if (!o->tsecr_us)
		return ETS_SAMPLE_TSECR_ZERO;
	if (ets_after(o->tsecr_us, arrival_us))
		return ETS_SAMPLE_FUTURE;
	if (total > ETS_RTT_MAX_US || total > max_rtt_us)
		return ETS_SAMPLE_TOO_OLD;
	s->total_rtt_us = total;
	del = ets_ecrdel_us(o->unit, o->ecrdel);
	if (del < 0)
		return ETS_SAMPLE_UNIT;
	if ((u64)del > total)
		return ETS_SAMPLE_DEL_GT_RTT;
	s->ack_delay_us = (u32)del;
	s->ack_delay_exact = o->unit == ETS_UNIT_US;
	s->network_rtt_us = total - (u32)del;
	return ETS_SAMPLE_OK;
}

/*
 * RX arrival time on the host's CLOCK_MONOTONIC, which is the only clock
 * the program subtracts in. A NIC hardware stamp (PHC ns) is used only
 * when the loader published a PHC->MONOTONIC offset (hw_off_valid) and the
 * converted stamp lies within [sw_ns - ETS_HW_MAX_AGE_NS, sw_ns]: a stamp
 * from the future or from long ago means a stale offset, and the software
 * time (bpf_ktime_get_ns() in the parse callback) is used instead.
 * Returns the arrival in ns; *hw says which clock it came from.
 */
#define ETS_HW_MAX_AGE_NS	100000000ull	/* 100 ms: NAPI + backlog bound */

static inline u64 ets_rx_clock_ns(u64 hw_ns, u64 sw_ns, bool hw_off_valid,
				  s64 hw_off_ns, bool *hw)
{
	u64 conv;

	*hw = false;
	if (!hw_ns || !hw_off_valid)
		return sw_ns;
	conv = hw_ns + (u64)hw_off_ns;	/* two's complement add */
	if (conv > sw_ns || sw_ns - conv > ETS_HW_MAX_AGE_NS)
		return sw_ns;
	*hw = true;
	return conv;
}

/* Windowed min of Network_RTT: a new sample replaces the min when lower
 * or when the min is older than win_ns. */
static inline void ets_min_update(u32 *min_us, u64 *stamp_ns, u32 sample_us,
				  u64 now_ns, u64 win_ns)
{
	if (!*min_us || sample_us <= *min_us || now_ns - *stamp_ns > win_ns) {
		*min_us = sample_us ? sample_us : 1;
		*stamp_ns = now_ns;
	}
}

/*
 * The path filter: the least Network_RTT that any connection of a host to
 * one peer measured over the last window, for bbr_swift's decisions
 * (core/swift.h, swift_decision_rtt()). Host and emulator jitter differ
 * from packet to packet and between connections; a queue at the
 * bottleneck raises every sample of every connection through it. So the
 * least of many samples is the queue's delay and not the jitter's, and
 * every connection to the peer decides on the same value.
 *
 * Two halves of the window, each a (half-window index of its last sample,
 * sample count, least sample) packed in a u64 so that a reader never sees
 * an index with another half's minimum: the value covers the current half
 * and the one before it, so between half and all of the window. Updates
 * from several CPUs race without a lock: a lost update costs one sample of
 * one half. The default window is a few datacenter round trips and holds
 * tens of samples of a busy host; measured in docs/bbr_swift.md.
 *
 * A half closes at the first sample of a later half-window once it holds
 * ETS_PATH_HALF_MIN_SAMPLES samples; with fewer it stays open for samples
 * up to ETS_PATH_STRETCH_HALVES half-windows apart. A host that sends
 * little sampled its path less than once per half-window, and a least
 * over one sample filters nothing: on the kernel path (two senders of 16
 * flows, a quiet host) the sender with 0.6 samples per half decided on
 * its connection's own sample in 68 % of its decisions, read its host's
 * stalls as a queue, was cut, sent less and sampled less, and ended with
 * 78 of 845 Mbit/s of pacing. A busy host's halves still close at each
 * half-window; a silence of up to ETS_PATH_STRETCH_HALVES half-windows no
 * longer drops the half before it.
 */
#define ETS_PATH_WIN_DEFAULT_US		500u
#define ETS_PATH_IDX_SHIFT		32
#define ETS_PATH_CNT_SHIFT		24
#define ETS_PATH_CNT_MAX		0xFFu
#define ETS_PATH_LEAST_MAX_US		0xFFFFFFu	/* 16.7 s */
#define ETS_PATH_HALF_MIN_SAMPLES	4u
#define ETS_PATH_STRETCH_HALVES		4u

static inline u64 ets_path_pack3(u32 idx, u32 cnt, u32 least_us)
{
	if (cnt > ETS_PATH_CNT_MAX)
		cnt = ETS_PATH_CNT_MAX;
	if (least_us > ETS_PATH_LEAST_MAX_US)
		least_us = ETS_PATH_LEAST_MAX_US;
	return ((u64)idx << ETS_PATH_IDX_SHIFT) | ((u64)cnt << ETS_PATH_CNT_SHIFT) |
	       least_us;
}

static inline u64 ets_path_pack(u32 idx, u32 least_us)
{
	return ets_path_pack3(idx, 1, least_us);
}

static inline u32 ets_path_idx(u64 half)
{
	return (u32)(half >> ETS_PATH_IDX_SHIFT);
}

static inline u32 ets_path_cnt(u64 half)
{
	return (u32)(half >> ETS_PATH_CNT_SHIFT) & ETS_PATH_CNT_MAX;
}

/* A half's least sample; 0: the half is empty. */
static inline u32 ets_path_min(u64 half)
{
	return (u32)half & ETS_PATH_LEAST_MAX_US;
}

/* Add a sample taken at now_ns; returns the path's least sample over the
 * window, this one included. *cur and *prev are struct ets_path's. */
static inline u32 ets_path_update(u64 *cur, u64 *prev, u32 sample_us,
				  u64 now_ns, u32 win_us)
{
	u64 half_ns = (u64)(win_us ? win_us : ETS_PATH_WIN_DEFAULT_US) * 500;
	u32 idx = (u32)(now_ns / (half_ns ? half_ns : 1));
	u64 c = *cur, p = *prev;
	u32 least, gap, cnt;

	if (!sample_us)
		sample_us = 1;
	if (sample_us > ETS_PATH_LEAST_MAX_US)
		sample_us = ETS_PATH_LEAST_MAX_US;
	gap = idx - ets_path_idx(c);
	cnt = ets_path_cnt(c);
	if (ets_path_min(c) &&
	    (gap == 0 || (cnt < ETS_PATH_HALF_MIN_SAMPLES && gap <= ETS_PATH_STRETCH_HALVES))) {
		/* the same half: counted until it holds enough samples, then
		 * written only for a new least */
		if (gap || cnt < ETS_PATH_HALF_MIN_SAMPLES || sample_us < ets_path_min(c)) {
			least = ets_path_min(c) < sample_us ? ets_path_min(c) : sample_us;
			c = ets_path_pack3(idx, cnt + 1, least);
			*cur = c;
		}
	} else {
		/* a new half (or the first): the old one becomes the previous
		 * unless the path went unsampled for longer than a stretch */
		p = gap <= ETS_PATH_STRETCH_HALVES ? c : 0;
		*prev = p;
		c = ets_path_pack(idx, sample_us);
		*cur = c;
	}
	least = ets_path_min(c);
	if (ets_path_min(p) && ets_path_min(p) < least)
		least = ets_path_min(p);
	return least;
}

/* The path's least sample over the last window that had samples, without
 * adding one, if that window ended at most max_age_us before now_ns; 0
 * otherwise (a path nobody measured lately says nothing). */
static inline u32 ets_path_least(u64 cur, u64 prev, u64 now_ns, u32 win_us,
				 u32 max_age_us)
{
	u64 half_ns = (u64)(win_us ? win_us : ETS_PATH_WIN_DEFAULT_US) * 500;
	u32 idx = (u32)(now_ns / (half_ns ? half_ns : 1));
	u32 cidx = ets_path_idx(cur), least;

	if (!ets_path_min(cur) ||
	    (u64)(u32)(idx - cidx) * half_ns > (u64)max_age_us * 1000 + half_ns)
		return 0;
	least = ets_path_min(cur);
	/* the previous half ended at most a stretch before the current one
	 * began, which spans at most ETS_PATH_HALF_MIN_SAMPLES stretches */
	if (ets_path_min(prev) && ets_path_min(prev) < least &&
	    cidx - ets_path_idx(prev) <=
	    (ETS_PATH_HALF_MIN_SAMPLES + 1) * ETS_PATH_STRETCH_HALVES)
		least = ets_path_min(prev);
	return least;
}

/*
 * Connections a host opened to one peer lately, this one included:
 * starts counted per window of win_ns (a new window starts from 1). The
 * packed (index, count) is replaced with one compare-and-swap by the BPF
 * caller; here the arithmetic.
 */
static inline u64 ets_path_count_start(u64 starts, u64 now_ns, u64 win_ns)
{
	u32 idx = (u32)(now_ns / (win_ns ? win_ns : 1));

	if ((u32)(starts >> ETS_PATH_IDX_SHIFT) != idx)
		return ((u64)idx << ETS_PATH_IDX_SHIFT) | 1;
	if ((u32)starts == 0xFFFFFFFFu)
		return starts;
	return starts + 1;
}

/* EWMA with gain 1/8 of a host delay in us (0 = no value yet). */
#define ETS_HOST_EWMA_SHIFT	3
static inline u32 ets_ewma_us(u32 avg_us, u32 sample_us)
{
	if (!avg_us)
		return sample_us ? sample_us : 1;
	return (u32)(((u64)avg_us * ((1u << ETS_HOST_EWMA_SHIFT) - 1) + sample_us) >>
		     ETS_HOST_EWMA_SHIFT);
}

/* A software RX stamp (CLOCK_REALTIME ns, net_timestamp_check()) as the
 * wait until now; tai_now_ns is bpf_ktime_get_tai_ns(), tai_off_ns
 * TAI - REALTIME. 0 when there is no stamp or the result is not a wait of
 * at most ETS_HW_MAX_AGE_NS (a clock step, a wrong offset). */
static inline u64 ets_rx_wait_ns(u64 rx_real_ns, u64 tai_now_ns, s64 tai_off_ns)
{
	u64 rx_tai;

	if (!rx_real_ns)
		return 0;
	rx_tai = rx_real_ns + (u64)tai_off_ns;
	if (rx_tai > tai_now_ns || tai_now_ns - rx_tai > ETS_HW_MAX_AGE_NS)
		return 0;
	return tai_now_ns - rx_tai;
}

#endif /* ETS_OPT_H */
