// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * verifier_stats OBJ...: load each BPF object (without attaching anything)
 * with verifier statistics on, and print per program the instructions the
 * verifier processed and the program size, as JSON lines:
 *
 *   {"object":"bpf/bbr3.bpf.o","program":"bbr3_main","insns":2427,
 *    "processed_insns":31234,"states":612}
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

#define LOG_BUF_BYTES	(1u << 20)
#define LOG_LEVEL_STATS	4	/* BPF_LOG_STATS */

static int print_nothing(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)fmt;
	(void)ap;
	return level == LIBBPF_WARN ? 0 : 0;
}

static int stats_for(const char *path)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map;
	char *logs[64] = {0};
	int n = 0, err, i;

	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		fprintf(stderr, "verifier_stats: %s: %s\n", path, strerror(errno));
		return 1;
	}
	/* Measure, never pin: maps pinned by name would otherwise land in
	 * the bpffs root and outlive this tool. */
	bpf_object__for_each_map(map, obj)
		bpf_map__set_pin_path(map, NULL);
	bpf_object__for_each_program(prog, obj) {
		if (n == 64)
			break;
		logs[n] = calloc(1, LOG_BUF_BYTES);
		if (!logs[n])
			return 1;
		bpf_program__set_log_buf(prog, logs[n], LOG_BUF_BYTES);
		bpf_program__set_log_level(prog, LOG_LEVEL_STATS);
		n++;
	}
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "verifier_stats: %s: load failed: %s\n", path,
			strerror(-err));
		return 1;
	}
	i = 0;
	bpf_object__for_each_program(prog, obj) {
		const char *p = i < n ? strstr(logs[i], "processed ") : NULL;
		unsigned long processed = 0, states = 0;
		const char *st;

		if (p)
			processed = strtoul(p + strlen("processed "), NULL, 10);
		st = p ? strstr(p, "total_states ") : NULL;
		if (st)
			states = strtoul(st + strlen("total_states "), NULL, 10);
		printf("{\"object\":\"%s\",\"program\":\"%s\",\"insns\":%zu,"
		       "\"processed_insns\":%lu,\"states\":%lu}\n",
		       path, bpf_program__name(prog), bpf_program__insn_cnt(prog),
		       processed, states);
		i++;
	}
	bpf_object__close(obj);
	for (i = 0; i < n; i++)
		free(logs[i]);
	return 0;
}

int main(int argc, char **argv)
{
	int i, rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: verifier_stats OBJ...\n");
		return 2;
	}
	libbpf_set_print(print_nothing);
	for (i = 1; i < argc; i++)
		rc |= stats_for(argv[i]);
	return rc;
}
