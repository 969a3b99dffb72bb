// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * libFuzzer target for the ETS option codec and arithmetic (bpf/core/ets_opt.h).
 * The input is used three ways:
 *  1. as raw option bytes for ets_parse(): whatever it accepts must encode
 *     back to the same bytes (reserved bit cleared);
 *  2. as fields for ets_encode(): the result must parse back to them, with
 *     EcrDel within the unit's rounding of the requested delay;
 *  3. as clocks for the receiver/sender arithmetic: a Network_RTT sample is
 *     never negative and never above Total_RTT, and the HW clock path never
 *     returns a time after the software time.
 * A violated property traps, so libFuzzer keeps the input.
 */
#include <string.h>

#include "core/ets_opt.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

static u64 get(const u8 *d, size_t n, size_t off, int bytes)
{
	u64 v = 0;

	for (int i = 0; i < bytes; i++)
		v = (v << 8) | (off + i < n ? d[off + i] : 0);
	return v;
}

static void parse_roundtrip(const u8 *d, size_t n)
{
	u8 out[16];
	struct ets_opt o;
	bool syn = n && (d[n - 1] & 1);
	int avail = n > 16 ? 16 : (int)n;
	u8 in[16] = {};

	memcpy(in, d, avail);
	if (ets_parse(in, avail, syn, &o) != ETS_OK)
		return;
	CHECK(o.ecrdel <= ETS_ECRDEL_MAX && o.unit <= 3);
	/* Re-encode the raw field: unit and value as parsed. */
	ets_encode(out, syn, true, o.tsval_us, o.tsecr_us, 0, o.max_ack_del_us);
	ets_put16(out + 12, (u16)((o.unit << 14) | (o.ecrdel << 1)));
	in[13] &= ~1;
	CHECK(memcmp(in, out, syn ? 16 : 14) == 0);
}

static void encode_roundtrip(const u8 *d, size_t n)
{
	bool syn = get(d, n, 0, 1) & 1, ack = get(d, n, 0, 1) & 2;
	u32 tsval = get(d, n, 1, 4), tsecr = get(d, n, 5, 4);
	s64 delay = (s64)get(d, n, 9, 5) - 1;	/* -1 .. 2^40 */
	u16 mad = get(d, n, 14, 2);
	struct ets_opt o;
	u8 b[16];
	int len = ets_encode(b, syn, ack, tsval, tsecr, delay, mad);

	CHECK(len == (syn ? 16 : 14));
	CHECK(ets_parse(b, len, syn, &o) == ETS_OK);
	CHECK(o.tsval_us == tsval);
	CHECK(o.tsecr_us == (ack ? tsecr : 0));
	if (syn)
		CHECK(o.max_ack_del_us == mad);
	if (!ack) {
		CHECK(o.unit == 0 && o.ecrdel == 0);
	} else if (delay < 0 || delay > 8191499) {
		CHECK(o.unit == ETS_UNIT_INVALID);
	} else {
		s64 got = ets_ecrdel_us(o.unit, o.ecrdel);
		s64 diff = got - delay;

		CHECK(got >= 0);
		CHECK(o.unit == (delay <= ETS_ECRDEL_MAX ? ETS_UNIT_US : ETS_UNIT_MS));
		CHECK(diff <= 500 && diff >= -500);
		if (o.unit == ETS_UNIT_US)
			CHECK(diff == 0);
	}
}

static void arithmetic(const u8 *d, size_t n)
{
	struct ets_opt o = {
		.tsecr_us = get(d, n, 16, 4),
		.unit = get(d, n, 20, 1) & 3,
		.ecrdel = get(d, n, 21, 2) & ETS_ECRDEL_MAX,
	};
	u32 arrival = get(d, n, 23, 4);
	u64 now = get(d, n, 27, 8), clk = get(d, n, 35, 8);
	u32 latest = get(d, n, 43, 4), recent = get(d, n, 47, 4);
	u64 hw = get(d, n, 51, 8), sw = get(d, n, 59, 8);
	s64 off = (s64)get(d, n, 67, 8);
	u32 srtt = get(d, n, 76, 4);
	struct ets_sample s;
	bool is_hw;
	s64 del;
	u64 t;

	if (ets_sample(&o, true, arrival, ets_rtt_bound_us(srtt), &s) ==
	    ETS_SAMPLE_OK) {
		CHECK(s.network_rtt_us <= s.total_rtt_us);
		CHECK(s.network_rtt_us + s.ack_delay_us == s.total_rtt_us);
		CHECK(s.total_rtt_us <= ETS_RTT_MAX_US);
		CHECK(s.total_rtt_us <= ets_rtt_bound_us(srtt));
		CHECK(!ets_after(o.tsecr_us, arrival));
	}
	/* the option walk on arbitrary bytes: never reads past len */
	struct ets_opt_walk w = { .len = n < ETS_TCP_OPTIONS_MAX ? (u32)n : ETS_TCP_OPTIONS_MAX };

	memcpy(w.opts, d, w.len);
	CHECK(!ets_has_kind254(&w) || w.opts[w.i] == ETS_OPT_KIND);
	del = ets_ecrdel_compute_us(now, clk, latest, recent);
	CHECK(del >= -1);
	t = ets_rx_clock_ns(hw, sw, get(d, n, 75, 1) & 1, off, &is_hw);
	CHECK(t <= sw);
	CHECK(is_hw || t == sw);
	if (is_hw)
		CHECK(sw - t <= ETS_HW_MAX_AGE_NS);
}

int LLVMFuzzerTestOneInput(const u8 *d, size_t n)
{
	parse_roundtrip(d, n);
	encode_roundtrip(d, n);
	arithmetic(d, n);
	return 0;
}
