// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * hostdelay [--seconds N] [OBJ]: where this host's share of TCP round
 * trips goes, over N seconds (default 10) of whatever runs, in every
 * namespace: one JSON object per stage on stdout,
 *
 *   {"stage":"tx_data","count":221972,"mean_us":6.3,"p50_us":8,"p90_us":16,"p99_us":32}
 *
 * (percentiles are the upper edges of log2 buckets). The stages are those
 * of selftests/progs/hostdelay.bpf.c (OBJ, by default next to this tool's
 * source tree). Needs root and BTF-enabled tracepoints. For the host-delay
 * decomposition in docs/bbr_swift.md: run it beside a lab scenario. Exit
 * 0, 1 on an error (a message on stderr), 2 on bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "../progs/hostdelay.h"

#define DEFAULT_OBJ	"selftests/progs/hostdelay.bpf.o"

static const char *const stage_names[HD_STAGES] = {
	[HD_TX_DATA] = "tx_data", [HD_TX_ACK] = "tx_ack",
	[HD_DEV_QUEUE] = "dev_queue", [HD_RX_DATA] = "rx_data",
	[HD_RX_ACK] = "rx_ack", [HD_FWD_DATA] = "fwd_data",
	[HD_FWD_ACK] = "fwd_ack",
};

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

/* Upper edge in us of the bucket holding the q-quantile (q in percent). */
static uint64_t quantile_us(const struct hd_hist *h, unsigned int q)
{
	uint64_t acc = 0;

	for (int b = 0; b < HD_BUCKETS; b++) {
		acc += h->bucket[b];
		if (acc * 100 >= h->count * q)
			return 1ull << b;
	}
	return 1ull << (HD_BUCKETS - 1);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: hostdelay [--seconds N] [OBJ]\n"
		   "  the host's delays per stage (tx_data, tx_ack, dev_queue, rx_data,\n"
		   "  rx_ack) over N seconds (default 10), one JSON line each;\n"
		   "  OBJ defaults to %s\n", DEFAULT_OBJ);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *path = DEFAULT_OBJ;
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map;
	long seconds = 10;
	char *end;
	int c, fd, ret = 1;

	while ((c = getopt_long(argc, argv, "s:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			seconds = strtol(optarg, &end, 10);
			if (*end || seconds <= 0 || seconds > 86400) {
				fprintf(stderr, "hostdelay: --seconds: 1..86400, not \"%s\"\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		path = argv[optind++];
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	libbpf_set_print(quiet);
	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		fprintf(stderr, "hostdelay: cannot open %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "hostdelay: cannot load %s: %s\n", path, strerror(errno));
		goto out;
	}
	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__attach(prog)) {
			fprintf(stderr, "hostdelay: cannot attach %s: %s\n",
				bpf_program__name(prog), strerror(errno));
			goto out;
		}
	}
	map = bpf_object__find_map_by_name(obj, "hd_hist");
	fd = map ? bpf_map__fd(map) : -1;
	if (fd < 0) {
		fprintf(stderr, "hostdelay: %s has no map hd_hist\n", path);
		goto out;
	}
	sleep((unsigned int)seconds);
	for (__u32 i = 0; i < HD_STAGES; i++) {
		struct hd_hist h;

		if (bpf_map_lookup_elem(fd, &i, &h)) {
			fprintf(stderr, "hostdelay: reading stage %u: %s\n", i, strerror(errno));
			goto out;
		}
		printf("{\"stage\":\"%s\",\"count\":%llu,\"mean_us\":%.1f,\"p50_us\":%llu,"
		       "\"p90_us\":%llu,\"p99_us\":%llu}\n", stage_names[i],
		       (unsigned long long)h.count,
		       h.count ? (double)h.sum_us / h.count : 0.0,
		       (unsigned long long)(h.count ? quantile_us(&h, 50) : 0),
		       (unsigned long long)(h.count ? quantile_us(&h, 90) : 0),
		       (unsigned long long)(h.count ? quantile_us(&h, 99) : 0));
	}
	ret = 0;
out:
	bpf_object__close(obj);
	return ret;
}
