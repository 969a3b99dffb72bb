# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Flow generator and kernel fast path of the lab (selftests/lab/flowgen/README.md):
#   flowgen     one-process epoll TCP flow generator, CC per socket, TCP_INFO CSV
#   marker      clsact egress cls_bpf program: virtual-queue step / phantom-queue
#               CE marking and random loss for the fast path (labkit/fastpath.py)

FLOWGEN     := selftests/lab/flowgen/flowgen
MARKER_OBJ  := selftests/lab/marker/marker.bpf.o

ALL_TARGETS += $(FLOWGEN)
CLEAN_FILES += $(FLOWGEN)
PYTEST_DIRS := $(filter-out selftests/lab/tests,$(PYTEST_DIRS)) selftests/lab/tests

$(FLOWGEN): selftests/lab/flowgen/flowgen.c
	$(CC) $(USER_CFLAGS) -o $@ $< $(JANSSON_LIBS)

# Outside bpf/ and selftests/progs/, so not caught by the Makefile's pattern
# rule: same compiler and flags, and vmlinux.h from bpf/.
ALL_TARGETS += $(MARKER_OBJ)
CLEAN_FILES += $(MARKER_OBJ)

$(MARKER_OBJ): selftests/lab/marker/marker.bpf.c bpf/vmlinux.h
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@
