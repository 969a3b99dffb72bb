// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * sk_stor_entries OBJ MAP_ID NETNS...: the TCP sockets of each network
 * namespace NETNS (a path: /run/netns/NAME, /proc/PID/ns/net) that hold an
 * entry in socket storage map MAP_ID, one JSON line each:
 *
 *   {"map":17364,"cookie":4099,"netns_cookie":4102,"cc":"bbr3"}
 *
 * OBJ is selftests/progs/sk_stor_entries.bpf.o; its map is replaced by
 * MAP_ID before loading. For the soak's leak checks (selftests/soak):
 * `bpftool map dump` cannot list an sk_storage map. Exit 0, or 1 with a
 * message on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define CA_NAME_BYTES	16

struct sk_stor_entry {		/* as in selftests/progs/sk_stor_entries.bpf.c */
	uint64_t sock_cookie;
	uint64_t netns_cookie;
	char ca_name[CA_NAME_BYTES];
};

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

static int dump_here(struct bpf_program *prog, unsigned int map_id)
{
	struct sk_stor_entry e;
	struct bpf_link *link = bpf_program__attach_iter(prog, NULL);
	size_t got = 0;
	ssize_t n;
	int fd;

	if (!link) {
		fprintf(stderr, "sk_stor_entries: attaching the iterator: %s\n", strerror(errno));
		return 1;
	}
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		fprintf(stderr, "sk_stor_entries: bpf_iter_create: %s\n", strerror(errno));
		bpf_link__destroy(link);
		return 1;
	}
	for (;;) {
		n = read(fd, (char *)&e + got, sizeof(e) - got);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		got += n;
		if (got < sizeof(e))
			continue;
		got = 0;
		e.ca_name[CA_NAME_BYTES - 1] = 0;
		printf("{\"map\":%u,\"cookie\":%llu,\"netns_cookie\":%llu,\"cc\":\"%s\"}\n", map_id,
		       (unsigned long long)e.sock_cookie, (unsigned long long)e.netns_cookie,
		       e.ca_name);
	}
	close(fd);
	bpf_link__destroy(link);
	if (n < 0) {
		fprintf(stderr, "sk_stor_entries: reading the iterator: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map;
	unsigned int map_id;
	int map_fd, self, ret = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: sk_stor_entries OBJ MAP_ID NETNS...\n");
		return 1;
	}
	map_id = strtoul(argv[2], NULL, 10);
	libbpf_set_print(quiet);
	map_fd = bpf_map_get_fd_by_id(map_id);
	if (map_fd < 0) {
		fprintf(stderr, "sk_stor_entries: map %u: %s\n", map_id, strerror(errno));
		return 1;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "sk_stor_entries: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	map = bpf_object__find_map_by_name(obj, "stor");
	prog = bpf_object__find_program_by_name(obj, "sk_stor_entries");
	if (!map || !prog || bpf_map__reuse_fd(map, map_fd) || bpf_object__load(obj)) {
		fprintf(stderr, "sk_stor_entries: loading %s over map %u: %s\n", argv[1], map_id,
			strerror(errno));
		return 1;
	}
	self = open("/proc/self/ns/net", O_RDONLY);
	for (int i = 3; i < argc && !ret; i++) {
		int ns = open(argv[i], O_RDONLY);

		if (ns < 0 || setns(ns, CLONE_NEWNET)) {
			fprintf(stderr, "sk_stor_entries: entering %s: %s\n", argv[i],
				strerror(errno));
			ret = 1;
		} else {
			ret = dump_here(prog, map_id);
		}
		if (ns >= 0)
			close(ns);
	}
	if (self >= 0 && setns(self, CLONE_NEWNET))
		ret = 1;
	bpf_object__close(obj);
	close(map_fd);
	return ret;
}
