// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * verifier_stats [-v] OBJ...: load each BPF object (without attaching
 * anything) with verifier statistics on, and print per program the
 * instructions the verifier processed and the program size, as JSON lines:
 *
 *   {"object":"bpf/bbr3.bpf.o","program":"bbr3_main","insns":2427,
 *    "processed_insns":31234,"states":612,"verified_insns":31234}
 *
 * processed_insns and states come from the statistics line of the
 * verifier's log ("processed N insns (limit ...) ... total_states M"): the
 * total over the program and its subprograms. Since Linux 7.2 the log also
 * has a line "insns processed A+B+..." before it, the count per subprogram,
 * which is not the total. verified_insns is the kernel's own count of the
 * whole verification (bpf_prog_info.verified_insns, Linux 5.16+), the same
 * figure as the log's total. -v copies every statistics line of the log to
 * stderr, "PROGRAM: line".
 */
#define _GNU_SOURCE	/* memmem, strchrnul */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define LOG_BUF_BYTES	(1u << 20)
#define LOG_LEVEL_STATS	4	/* BPF_LOG_STATS */

static int print_nothing(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)fmt;
	(void)ap;
	return level == LIBBPF_WARN ? 0 : 0;
}

static int verbose;

/* Every line of log that carries the verifier's statistics, to stderr. */
static void print_stats_lines(const char *prog, const char *log)
{
	const char *line = log, *end;

	for (; *line; line = *end ? end + 1 : end) {
		end = strchrnul(line, '\n');
		if (memmem(line, end - line, "processed ", 10) ||
		    memmem(line, end - line, "verification time", 17) ||
		    memmem(line, end - line, "stack depth", 11))
			fprintf(stderr, "%s: %.*s\n", prog, (int)(end - line), line);
	}
}

/* The "processed N insns" of the log's statistics line, or NULL. */
static const char *total_line(const char *log)
{
	const char *p = log;
	char *end;

	while ((p = strstr(p, "processed "))) {
		p += strlen("processed ");
		strtoul(p, &end, 10);
		if (end != p && !strncmp(end, " insns", 6))
			return p;
	}
	return NULL;
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
		const char *p = i < n ? total_line(logs[i]) : NULL;
		unsigned long processed = 0, states = 0;
		struct bpf_prog_info info = {0};
		__u32 info_len = sizeof(info);
		const char *st;

		if (bpf_prog_get_info_by_fd(bpf_program__fd(prog), &info, &info_len))
			info.verified_insns = 0;
		if (verbose && i < n)
			print_stats_lines(bpf_program__name(prog), logs[i]);
		if (p)
			processed = strtoul(p, NULL, 10);
		st = p ? strstr(p, "total_states ") : NULL;
		if (st)
			states = strtoul(st + strlen("total_states "), NULL, 10);
		printf("{\"object\":\"%s\",\"program\":\"%s\",\"insns\":%zu,"
		       "\"processed_insns\":%lu,\"states\":%lu,\"verified_insns\":%u}\n",
		       path, bpf_program__name(prog), bpf_program__insn_cnt(prog),
		       processed, states, info.verified_insns);
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

	if (argc > 1 && !strcmp(argv[1], "-v")) {
		verbose = 1;
		argv++;
		argc--;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: verifier_stats [-v] OBJ...\n");
		return 2;
	}
	libbpf_set_print(print_nothing);
	for (i = 1; i < argc; i++)
		rc |= stats_for(argv[i]);
	return rc;
}
