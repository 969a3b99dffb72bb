// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Unit tests of the ETS option codec and arithmetic (bpf/core/ets_opt.h):
 * byte layout against draft-yang-tcpm-ets-00 §3.2, EcrDel unit choice,
 * malformed input, the draft's worked example, 32-bit wrap, and the
 * hardware-clock path with injected NIC stamps.
 */
#include <string.h>

#include "unit.h"
#include "core/ets_opt.h"
#include "ets_shared.h"

TEST(ets_encode_syn_bytes)
{
	u8 b[16];
	static const u8 want[16] = { 254, 16, 0x45, 0x54, 0x01, 0x02, 0x03, 0x04,
				     0, 0, 0, 0, 0, 0, 0xff, 0xfe };

	ASSERT_EQ(ets_encode(b, true, false, 0x01020304, 77, 5, 0xfffe), 16);
	for (int i = 0; i < 16; i++)
		ASSERT_EQ(b[i], want[i]);	/* TSecr, EcrDel 0 without ACK */
}

TEST(ets_encode_ack_bytes)
{
	u8 b[16];

	ASSERT_EQ(ets_encode(b, false, true, 0xa0b0c0d0, 0x11223344, 1000, 0), 14);
	ASSERT_EQ(b[0], 254);
	ASSERT_EQ(b[1], 14);
	ASSERT_EQ(ets_get32(b + 4), 0xa0b0c0d0);
	ASSERT_EQ(ets_get32(b + 8), 0x11223344);
	/* unit 0 (us), value 1000, reserved bit 0 */
	ASSERT_EQ(ets_get16(b + 12), 1000 << 1);
	ASSERT_EQ(b[13] & 1, 0);
}

TEST(ets_unit_choice)
{
	ASSERT_EQ(ets_ecrdel_field(0), 0);
	ASSERT_EQ(ets_ecrdel_field(8191), 8191 << 1);			/* us */
	ASSERT_EQ(ets_ecrdel_field(8192), (1 << 14) | (8 << 1));	/* ms */
	ASSERT_EQ(ets_ecrdel_field(40499), (1 << 14) | (40 << 1));	/* rounds */
	ASSERT_EQ(ets_ecrdel_field(40500), (1 << 14) | (41 << 1));
	ASSERT_EQ(ets_ecrdel_field(8191499), (1 << 14) | (8191 << 1));
	ASSERT_EQ(ets_ecrdel_field(8191500), 2 << 14);			/* invalid */
	ASSERT_EQ(ets_ecrdel_us(ETS_UNIT_MS, 41), 41000);
	ASSERT_EQ(ets_ecrdel_us(ETS_UNIT_INVALID, 3), -1);
	ASSERT_EQ(ets_ecrdel_us(ETS_UNIT_RESERVED, 3), -1);
	ASSERT_EQ(ets_maxackdel_field(200000), 0xfffe);
	ASSERT_EQ(ets_maxackdel_field(40000), 40000);
}

TEST(ets_roundtrip)
{
	struct ets_opt o;
	u8 b[16];

	ets_encode(b, false, true, 123456, 654321, 9000, 0);
	ASSERT_EQ(ets_parse(b, 14, false, &o), ETS_OK);
	ASSERT_EQ(o.tsval_us, 123456);
	ASSERT_EQ(o.tsecr_us, 654321);
	ASSERT_EQ(o.unit, ETS_UNIT_MS);
	ASSERT_EQ(o.ecrdel, 9);
	ets_encode(b, true, true, 1, 2, -1, 4000);
	ASSERT_EQ(ets_parse(b, 16, true, &o), ETS_OK);
	ASSERT_EQ(o.unit, ETS_UNIT_INVALID);
	ASSERT_EQ(o.max_ack_del_us, 4000);
}

TEST(ets_parse_malformed)
{
	struct ets_opt o;
	u8 b[16];

	ets_encode(b, false, true, 1, 2, 3, 0);
	ASSERT_EQ(ets_parse(b, 3, false, &o), ETS_ERR_SHORT);
	ASSERT_EQ(ets_parse(b, 13, false, &o), ETS_ERR_SHORT);	/* truncated */
	ASSERT_EQ(ets_parse(b, 14, true, &o), ETS_ERR_LEN);	/* SYN wants 16 */
	b[1] = 12;
	ASSERT_EQ(ets_parse(b, 12, false, &o), ETS_ERR_LEN);
	b[1] = 14;
	b[3] = 0x55;
	ASSERT_EQ(ets_parse(b, 14, false, &o), ETS_ERR_EXID);
	b[3] = 0x54;
	b[0] = 253;
	ASSERT_EQ(ets_parse(b, 14, false, &o), ETS_ERR_KIND);
	b[0] = 254;
	b[13] |= 1;		/* reserved bit: ignored */
	ASSERT_EQ(ets_parse(b, 14, false, &o), ETS_OK);
	ASSERT_EQ(o.ecrdel, 3);
}

/* draft §3.3: TSval 1 arrives at t=2, TSval 2 lost, TSval 3 at t=10; the
 * ACK is written at t=10 with TSecr=1 (TS.Recent) and EcrDel=2; it
 * arrives at t=11: Network_RTT = 8, the RTT of TSval 3. Units: us. */
TEST(ets_draft_worked_example)
{
	u32 latest = 0, recent = 1;
	u64 latest_clock = 0;
	struct ets_sample s;
	struct ets_opt o;
	s64 del;
	u8 b[16];

	ASSERT_TRUE(ets_rcv_latest(&latest, &latest_clock, false, true, 1, 2000));
	ASSERT_TRUE(ets_rcv_latest(&latest, &latest_clock, false, true, 3, 10000));
	ASSERT_FALSE(ets_rcv_latest(&latest, &latest_clock, false, false, 9, 10000));
	del = ets_ecrdel_compute_us(10000, latest_clock, latest, recent);
	ASSERT_EQ(del, 2);
	ets_encode(b, false, true, 500, recent, del, 0);
	ASSERT_EQ(ets_parse(b, 14, false, &o), ETS_OK);
	ASSERT_EQ(ets_sample(&o, true, 11, ETS_RTT_MAX_US, &s), ETS_SAMPLE_OK);
	UNIT_REPORT("worked example: total %u us, ecrdel %u us, network %u us",
		    s.total_rtt_us, s.ack_delay_us, s.network_rtt_us);
	ASSERT_EQ(s.total_rtt_us, 10);
	ASSERT_EQ(s.network_rtt_us, 8);
}

TEST(ets_delayed_ack)
{
	u32 latest = 0;
	u64 clk = 0;

	/* One segment, ACK held 40 ms: EcrDel 40 ms, sent in ms units. */
	ets_rcv_latest(&latest, &clk, false, true, 1000, 5000000);
	ASSERT_EQ(ets_ecrdel_compute_us(45000000, clk, latest, 1000), 40000);
	ASSERT_EQ(ets_ecrdel_field(40000), (1 << 14) | (40 << 1));
	/* Clock went backwards or no TS.Latest: invalid. */
	ASSERT_EQ(ets_ecrdel_compute_us(4000000, clk, latest, 1000), -1);
	ASSERT_EQ(ets_ecrdel_compute_us(4000000, 0, 0, 0), -1);
	/* TSecr after TS.Latest: invalid. */
	ASSERT_EQ(ets_ecrdel_compute_us(45000000, clk, latest, 1001), -1);
}

TEST(ets_wrap)
{
	struct ets_opt o = { .tsecr_us = 0xfffffff0u, .unit = ETS_UNIT_US,
			     .ecrdel = 5 };
	struct ets_sample s;
	u32 latest = 0xfffffffe;
	u64 clk = 1;

	ASSERT_TRUE(ets_after(5, 0xfffffffb));
	ASSERT_FALSE(ets_after(0xfffffffb, 5));
	ASSERT_FALSE(ets_after(7, 7));
	/* Arrival wrapped past zero: Total_RTT 0x20 = 32 us. */
	ASSERT_EQ(ets_sample(&o, true, 0x10, ETS_RTT_MAX_US, &s), ETS_SAMPLE_OK);
	ASSERT_EQ(s.total_rtt_us, 32);
	ASSERT_EQ(s.network_rtt_us, 27);
	/* TS.Latest moves across the wrap. */
	ASSERT_TRUE(ets_rcv_latest(&latest, &clk, false, true, 3, 2));
	ASSERT_EQ(latest, 3);
	ASSERT_EQ(ets_ecrdel_compute_us(1002, clk, latest, 0xfffffffdu), 1 + 6);
}

TEST(ets_sample_bounds)
{
	struct ets_opt o = { .tsecr_us = 1000, .unit = ETS_UNIT_US, .ecrdel = 300 };
	struct ets_sample s;

	ASSERT_EQ(ets_sample(&o, false, 2000, ETS_RTT_MAX_US, &s), ETS_SAMPLE_NO_ACK);
	ASSERT_EQ(ets_sample(&o, true, 999, ETS_RTT_MAX_US, &s), ETS_SAMPLE_FUTURE);
	ASSERT_EQ(ets_sample(&o, true, 1200, ETS_RTT_MAX_US, &s), ETS_SAMPLE_DEL_GT_RTT);
	ASSERT_EQ(ets_sample(&o, true, 1300, ETS_RTT_MAX_US, &s), ETS_SAMPLE_OK);
	ASSERT_EQ(s.network_rtt_us, 0);			/* never negative */
	o.unit = ETS_UNIT_MS;
	o.ecrdel = 8191;				/* absurd: 8.19 s */
	ASSERT_EQ(ets_sample(&o, true, 1300, ETS_RTT_MAX_US, &s), ETS_SAMPLE_DEL_GT_RTT);
	o.unit = ETS_UNIT_INVALID;
	ASSERT_EQ(ets_sample(&o, true, 1300, ETS_RTT_MAX_US, &s), ETS_SAMPLE_UNIT);
	o.unit = ETS_UNIT_RESERVED;
	ASSERT_EQ(ets_sample(&o, true, 1300, ETS_RTT_MAX_US, &s), ETS_SAMPLE_UNIT);
	o.tsecr_us = 0;
	ASSERT_EQ(ets_sample(&o, true, 1300, ETS_RTT_MAX_US, &s), ETS_SAMPLE_TSECR_ZERO);
	o.tsecr_us = 1;
	o.unit = ETS_UNIT_US;
	ASSERT_EQ(ets_sample(&o, true, 1 + ETS_RTT_MAX_US + 1, ETS_RTT_MAX_US, &s),
		  ETS_SAMPLE_TOO_OLD);
}

/* A forged echo of long ago: on a 40 us path (srtt 40 us) no Total_RTT
 * beyond 2 srtt + TCP's minimum RTO is an RTT; before any srtt, 60 s. */
TEST(ets_sample_bounded_by_the_connection)
{
	struct ets_opt o = { .tsecr_us = 1000, .unit = ETS_UNIT_US, .ecrdel = 0 };
	struct ets_sample s;
	u32 bound = ets_rtt_bound_us(40);

	ASSERT_EQ(bound, 2 * 40 + ETS_RTO_MIN_US);
	ASSERT_EQ(ets_rtt_bound_us(0), ETS_RTT_MAX_US);
	ASSERT_EQ(ets_rtt_bound_us(50000000), ETS_RTT_MAX_US);
	ASSERT_EQ(ets_sample(&o, true, 1000 + bound, bound, &s), ETS_SAMPLE_OK);
	ASSERT_EQ(ets_sample(&o, true, 1000 + 59000000, bound, &s), ETS_SAMPLE_TOO_OLD);
}

/* Telling a malformed ETS option from a missing one: any kind 254 counts,
 * whatever its length; the walk stops where the kernel's would. */
TEST(ets_kind254_found_whatever_its_length)
{
	struct ets_opt_walk ts_then_bad = { { 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2, 254, 2 }, 14 };
	struct ets_opt_walk len0 = { { 254, 0 }, 2 };
	struct ets_opt_walk none = { { 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2 }, 12 };
	struct ets_opt_walk eol_first = { { 0, 254, 4, 0x45, 0x54 }, 5 };
	struct ets_opt_walk bad_len_first = { { 5, 1, 254, 4 }, 4 };

	ASSERT_TRUE(ets_has_kind254(&ts_then_bad));
	ASSERT_TRUE(ets_has_kind254(&len0));
	ASSERT_FALSE(ets_has_kind254(&none));
	ASSERT_FALSE(ets_has_kind254(&eol_first));
	ASSERT_FALSE(ets_has_kind254(&bad_len_first));
}

/* What is wrong with the kind-254 option found: too short for an ExID
 * (length 2, 3; or running past the options) is a length error, another
 * experiment's ExID (RFC 6994) an ExID error. */
TEST(ets_kind254_verdict_len_or_exid)
{
	struct ets_opt_walk len2 = { { 1, 1, 254, 2 }, 4 };
	struct ets_opt_walk len3 = { { 254, 3, 0x45 }, 3 };
	struct ets_opt_walk other_exid = { { 254, 14, 0x45, 0x55, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }, 14 };
	struct ets_opt_walk exid_past_end = { { 254, 14, 0x45, 0x55 }, 4 };

	ASSERT_TRUE(ets_has_kind254(&len2));
	ASSERT_EQ(len2.err, ETS_ERR_LEN);
	ASSERT_TRUE(ets_has_kind254(&len3));
	ASSERT_EQ(len3.err, ETS_ERR_LEN);
	ASSERT_TRUE(ets_has_kind254(&other_exid));
	ASSERT_EQ(other_exid.err, ETS_ERR_EXID);
	ASSERT_TRUE(ets_has_kind254(&exid_past_end));
	ASSERT_EQ(exid_past_end.err, ETS_ERR_LEN);
}

/* A peer gone silent: ETS_MISSING_LIMIT segments' worth of ACKs or data
 * past the marks, wrap-safe; segments behind the marks (old duplicates)
 * never count, and the marks only move forward. */
TEST(ets_peer_silent_by_sequence)
{
	const u32 mss = 1448, lim = ETS_MISSING_LIMIT;
	u32 una = 0xfffff000u, rcv = 1000, mark;

	ASSERT_FALSE(ets_peer_silent(una, rcv, una, rcv, mss, lim));
	ASSERT_FALSE(ets_peer_silent(una + lim * mss - 1, rcv, una, rcv, mss, lim));
	ASSERT_TRUE(ets_peer_silent(una + lim * mss, rcv, una, rcv, mss, lim));
	ASSERT_TRUE(ets_peer_silent(una, rcv + lim * mss, una, rcv, mss, lim));
	/* behind the mark: an old segment, not silence */
	ASSERT_FALSE(ets_peer_silent(una - 10 * mss, rcv - 10 * mss, una, rcv, mss, lim));
	/* no MSS yet: counted in the least segments (536 bytes) */
	ASSERT_TRUE(ets_peer_silent(una + lim * ETS_MSS_MIN_BYTES, rcv, una, rcv, 0, lim));
	mark = una;
	ets_mark_advance(&mark, una - mss);
	ASSERT_EQ(mark, una);
	ets_mark_advance(&mark, una + 2 * mss);	/* across the wrap */
	ASSERT_EQ(mark, una + 2 * mss);
}

/* Hardware RX path with injected stamps: the PHC runs 1e12 ns ahead of
 * CLOCK_MONOTONIC; the loader publishes hw_off_ns = -1e12. */
TEST(ets_hw_clock_path)
{
	const s64 off = -1000000000000ll;
	u64 sw = 5000000000ull;		/* parse callback time, monotonic */
	bool hw;

	/* Stamp 30 us before the callback on the NIC clock. */
	ASSERT_EQ(ets_rx_clock_ns(sw - 30000 - off, sw, true, off, &hw), sw - 30000);
	ASSERT_TRUE(hw);
	/* No offset published: never use the raw PHC value. */
	ASSERT_EQ(ets_rx_clock_ns(sw - 30000 - off, sw, false, off, &hw), sw);
	ASSERT_FALSE(hw);
	/* No stamp on the packet (veth): software time. */
	ASSERT_EQ(ets_rx_clock_ns(0, sw, true, off, &hw), sw);
	ASSERT_FALSE(hw);
	/* Stale offset: converted stamp in the future or 1 s old: software. */
	ASSERT_EQ(ets_rx_clock_ns(sw + 5000 - off, sw, true, off, &hw), sw);
	ASSERT_FALSE(hw);
	ASSERT_EQ(ets_rx_clock_ns(sw - 1000000000ull - off, sw, true, off, &hw), sw);
	ASSERT_FALSE(hw);
	/* End to end: HW arrival of data at the receiver gives a smaller
	 * LatestACKDel than the softirq time, by exactly the 30 us. */
	{
		u32 latest = 0;
		u64 clk = 0;
		u64 arr = ets_rx_clock_ns(sw - 30000 - off, sw, true, off, &hw);

		ets_rcv_latest(&latest, &clk, false, true, 77, arr);
		ASSERT_EQ(ets_ecrdel_compute_us(sw + 100000, clk, latest, 77), 130);
	}
}

TEST(ets_min_filter)
{
	u32 min = 0;
	u64 st = 0;

	ets_min_update(&min, &st, 500, 1000, 10000);
	ASSERT_EQ(min, 500);
	ets_min_update(&min, &st, 700, 2000, 10000);
	ASSERT_EQ(min, 500);
	ets_min_update(&min, &st, 400, 3000, 10000);
	ASSERT_EQ(min, 400);
	ets_min_update(&min, &st, 900, 13001, 10000);	/* window expired */
	ASSERT_EQ(min, 900);
}

/* Feed n samples of value us into the path filter, 1 us apart from t. */
static u32 path_feed(u64 *cur, u64 *prev, u32 n, u32 us, u64 t, u32 win)
{
	u32 v = 0, i;

	for (i = 0; i < n; i++)
		v = ets_path_update(cur, prev, us, t + i * 1000, win);
	return v;
}

/* The path filter of a busy host (ETS_PATH_HALF_MIN_SAMPLES or more per
 * half-window): the least sample over the current half-window and the one
 * before it; older halves forgotten; a half that was skipped leaves no
 * previous value. */
TEST(ets_path_filter)
{
	u64 cur = 0, prev = 0;
	const u32 win = 500;		/* halves of 250 us */
	const u64 half = 250000;	/* ns */
	u64 t = 100 * half;		/* some half-window index */

	ASSERT_EQ(ets_path_update(&cur, &prev, 400, t, win), 400);
	ASSERT_EQ(ets_path_update(&cur, &prev, 900, t + 10000, win), 400);
	ASSERT_EQ(ets_path_update(&cur, &prev, 300, t + 20000, win), 300);
	ASSERT_EQ(path_feed(&cur, &prev, ETS_PATH_HALF_MIN_SAMPLES, 500, t + 30000, win), 300);
	/* next half: the previous half's least still counts */
	ASSERT_EQ(ets_path_update(&cur, &prev, 800, t + half, win), 300);
	ASSERT_EQ(ets_path_update(&cur, &prev, 350, t + half + 1000, win), 300);
	ASSERT_EQ(path_feed(&cur, &prev, ETS_PATH_HALF_MIN_SAMPLES, 600, t + half + 2000, win), 300);
	/* the half after: only the last half (350) and this one */
	ASSERT_EQ(ets_path_update(&cur, &prev, 700, t + 2 * half, win), 350);
	ASSERT_EQ(path_feed(&cur, &prev, ETS_PATH_HALF_MIN_SAMPLES, 700, t + 2 * half + 1000, win), 350);
	/* unsampled for longer than a stretch: the old value is gone */
	t += (2 + ETS_PATH_STRETCH_HALVES + 1) * half;
	ASSERT_EQ(ets_path_update(&cur, &prev, 650, t, win), 650);
	ASSERT_EQ(ets_path_min(prev), 0);
	ASSERT_EQ(path_feed(&cur, &prev, ETS_PATH_HALF_MIN_SAMPLES, 650, t + 1000, win), 650);
	/* a standing queue raises every sample: the value follows within a
	 * window */
	ASSERT_EQ(path_feed(&cur, &prev, ETS_PATH_HALF_MIN_SAMPLES, 900, t + half, win), 650);
	ASSERT_EQ(path_feed(&cur, &prev, ETS_PATH_HALF_MIN_SAMPLES, 910, t + 2 * half, win), 900);
	/* 0 is not a sample (it would pin the minimum) and the default window
	 * applies for 0 */
	ASSERT_EQ(ets_path_update(&cur, &prev, 0, t + 2 * half + 100000, 0), 1);
	/* a busy half is written only for a new least once it is counted full */
	cur = ets_path_pack3(200, ETS_PATH_HALF_MIN_SAMPLES, 300);
	prev = 0;
	ASSERT_EQ(ets_path_update(&cur, &prev, 500, 200 * half + 1, win), 300);
	ASSERT_EQ(ets_path_cnt(cur), ETS_PATH_HALF_MIN_SAMPLES);
}

/* A host that samples its path less than ETS_PATH_HALF_MIN_SAMPLES times a
 * half-window: its half stays open for samples up to
 * ETS_PATH_STRETCH_HALVES half-windows apart until it holds that many, so
 * the value is a least over several samples, not the latest one alone (a
 * host stall then reads as a queue only if it lasts); a silence longer
 * than the stretch forgets the old samples. */
TEST(ets_path_filter_sparse_host)
{
	u64 cur = 0, prev = 0;
	const u32 win = 500;
	const u64 half = 250000;
	u64 t = 100 * half;
	u32 i, v;

	/* one sample per two half-windows: 120 us, then a stall raises the
	 * next three; the half holds all four, the least stays 120 */
	ASSERT_EQ(ets_path_update(&cur, &prev, 120, t, win), 120);
	for (i = 1; i < ETS_PATH_HALF_MIN_SAMPLES; i++) {
		v = ets_path_update(&cur, &prev, 900, t + 2 * i * half, win);
		printf("    sample %u (900 us) %u half-windows on: path value %u us, "
		       "half count %u\n", i, 2 * i, v, ets_path_cnt(cur));
		ASSERT_EQ(v, 120);
	}
	ASSERT_EQ(ets_path_cnt(cur), ETS_PATH_HALF_MIN_SAMPLES);
	/* full: the next half-window starts a new half, the full one is its
	 * previous while adjacent */
	ASSERT_EQ(ets_path_update(&cur, &prev, 800, t + 7 * half, win), 120);
	ASSERT_EQ(ets_path_min(prev), 120);
	/* a queue that stands raises every sample: the value follows once the
	 * old half is no longer adjacent */
	for (i = 0; i < ETS_PATH_HALF_MIN_SAMPLES; i++)
		v = ets_path_update(&cur, &prev, 800 + i, t + (9 + 2 * i) * half, win);
	v = ets_path_update(&cur, &prev, 850, t + 17 * half, win);
	ASSERT_EQ(v, 800);
	/* silence longer than the stretch: the old half is forgotten */
	v = ets_path_update(&cur, &prev, 300, t + (17 + ETS_PATH_STRETCH_HALVES + 1) * half, win);
	ASSERT_EQ(v, 300);
	ASSERT_EQ(ets_path_min(prev), 0);
}

/* Host delay: EWMA with gain 1/8 from the first sample; a software RX stamp
 * as a wait, 0 for no stamp, a stamp in the future or one older than
 * ETS_HW_MAX_AGE_NS (a wrong TAI offset: 37 s). */
TEST(ets_host_delay)
{
	u64 now = 5000000000000ull;
	u32 avg;

	avg = ets_ewma_us(0, 40);
	ASSERT_EQ(avg, 40);
	avg = ets_ewma_us(avg, 120);		/* 40 + (120 - 40) / 8 */
	ASSERT_EQ(avg, 50);
	ASSERT_EQ(ets_ewma_us(0, 0), 1);	/* 0 means "no value yet" */
	ASSERT_EQ(ets_rx_wait_ns(0, now, 0), 0);
	ASSERT_EQ(ets_rx_wait_ns(now - 7000, now, 0), 7000);
	ASSERT_EQ(ets_rx_wait_ns(now - 37000000000ull - 7000, now, 37000000000ll), 7000);
	ASSERT_EQ(ets_rx_wait_ns(now - 37000000000ull - 7000, now, 0), 0);
	ASSERT_EQ(ets_rx_wait_ns(now + 1000, now, 0), 0);
}

/* The path's value for a start decision: the last window's least sample
 * while it is at most max_age old, else nothing; the start count per
 * window. */
TEST(ets_path_start_inputs)
{
	u64 cur = 0, prev = 0, st = 0;
	const u64 half = 250000, win10ms = 10000000;
	u64 t = 400 * half;

	ASSERT_EQ(ets_path_least(cur, prev, t, 500, 20000), 0);	/* never measured */
	ets_path_update(&cur, &prev, 700, t, 500);
	ets_path_update(&cur, &prev, 900, t + half, 500);
	ASSERT_EQ(ets_path_least(cur, prev, t + half, 500, 20000), 700);
	/* 10 ms on: the last window's least (both of its halves) */
	ASSERT_EQ(ets_path_least(cur, prev, t + 40 * half, 500, 20000), 700);
	ASSERT_EQ(ets_path_least(cur, prev, t + 200 * half, 500, 20000), 0);	/* 50 ms on */
	st = ets_path_count_start(st, 3 * win10ms, win10ms);
	ASSERT_EQ((u32)st, 1);
	st = ets_path_count_start(st, 3 * win10ms + 1, win10ms);
	st = ets_path_count_start(st, 4 * win10ms - 1, win10ms);
	ASSERT_EQ((u32)st, 3);
	st = ets_path_count_start(st, 4 * win10ms, win10ms);	/* a new window */
	ASSERT_EQ((u32)st, 1);
}
