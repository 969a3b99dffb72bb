// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Test helper for test_ets*.py: load bpf/ets.bpf.o with its shared maps
 * (PIN_SHARED_MAPS) pinned under PINDIR (instead of PIN_SHARED, so a test
 * never touches the maps a running bbr_swift shares), attach ets_sockops
 * to CGROUP and pin
 * the link as PINDIR/link. Removing PINDIR/link detaches it; the test
 * removes the whole directory afterwards.
 *
 *   ets_attach OBJ CGROUP PINDIR
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "bbr_pins.h"

int main(int argc, char **argv)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo);
	static const char *const shared[] = PIN_SHARED_MAPS;
	struct bpf_program *prog;
	struct bpf_object *obj;
	struct bpf_map *map;
	struct bpf_link *link;
	char path[4096];
	int cg;

	if (argc != 4) {
		fprintf(stderr, "usage: %s OBJ CGROUP PINDIR\n", argv[0]);
		return 2;
	}
	if (mkdir(argv[3], 0700) && errno != EEXIST) {
		fprintf(stderr, "mkdir %s: %s\n", argv[3], strerror(errno));
		return 1;
	}
	obj = bpf_object__open_file(argv[1], &oo);
	if (!obj) {
		fprintf(stderr, "open %s failed\n", argv[1]);
		return 1;
	}
	for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
		map = bpf_object__find_map_by_name(obj, shared[i]);
		snprintf(path, sizeof(path), "%s/%s", argv[3], shared[i]);
		if (!map || bpf_map__set_pin_path(map, path)) {
			fprintf(stderr, "%s: no map %s to pin\n", argv[1], shared[i]);
			return 1;
		}
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "load %s failed\n", argv[1]);
		return 1;
	}
	prog = bpf_object__find_program_by_name(obj, "ets_sockops");
	cg = open(argv[2], O_RDONLY | O_DIRECTORY);
	if (!prog || cg < 0) {
		fprintf(stderr, "no program or cgroup %s\n", argv[2]);
		return 1;
	}
	link = bpf_program__attach_cgroup(prog, cg);
	snprintf(path, sizeof(path), "%s/link", argv[3]);
	if (!link || bpf_link__pin(link, path)) {
		fprintf(stderr, "attach/pin failed: %s\n", strerror(errno));
		return 1;
	}
	printf("attached %s to %s, link %s\n", argv[1], argv[2], path);
	return 0;
}
