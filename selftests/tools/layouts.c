// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The layouts of the structs that Python reads out of BPF maps, as the C
 * compiler lays them out from the headers the BPF programs are built with:
 * one JSON object on stdout,
 *
 *   {"ets_shared_version": 6,
 *    "ets_sk": {"size": 96, "fields": {"last_sample_ns": [0, 8], ...}}}
 *
 * (each field: [offset, size] in bytes). selftests/bbrtest/layouts.py and
 * the soak's victim read it, so a layout change in include/ets_shared.h
 * reaches them without a copy to keep in step.
 */
#include <stddef.h>
#include <stdio.h>

#include "core/types.h"
#include "ets_shared.h"

#define MEMBER_SIZE(type, f)	sizeof(((type *)0)->f)

static int nfields;

static void field(const char *name, size_t off, size_t size)
{
	printf("%s\"%s\": [%zu, %zu]", nfields++ ? ", " : "", name, off, size);
}

#define FIELD(type, f)	field(#f, offsetof(type, f), MEMBER_SIZE(type, f))

int main(void)
{
	printf("{\"ets_shared_version\": %d, ", ETS_SHARED_VERSION);
	printf("\"ets_sk\": {\"size\": %zu, \"fields\": {", sizeof(struct ets_sk));
	FIELD(struct ets_sk, last_sample_ns);
	FIELD(struct ets_sk, network_rtt_us);
	FIELD(struct ets_sk, total_rtt_us);
	FIELD(struct ets_sk, rcv_ack_delay_us);
	FIELD(struct ets_sk, min_network_rtt_us);
	FIELD(struct ets_sk, min_network_rtt_stamp_ns);
	FIELD(struct ets_sk, samples);
	FIELD(struct ets_sk, rejected);
	FIELD(struct ets_sk, path_rtt_us);
	FIELD(struct ets_sk, host_delay_us);
	FIELD(struct ets_sk, tx_late_us);
	FIELD(struct ets_sk, rx_wait_us);
	FIELD(struct ets_sk, ts_latest_clock_ns);
	FIELD(struct ets_sk, ts_latest_us);
	FIELD(struct ets_sk, ts_recent_us);
	FIELD(struct ets_sk, peer_max_ack_delay_us);
	FIELD(struct ets_sk, flags);
	FIELD(struct ets_sk, missing_run);
	FIELD(struct ets_sk, una_mark);
	FIELD(struct ets_sk, rcv_mark);
	printf("}}}\n");
	return 0;
}
