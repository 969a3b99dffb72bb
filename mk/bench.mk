# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# make bench: the cost of the BPF CCs against the kernel's bbr and cubic,
# measured side by side in one run (selftests/bench/run, the driver is
# selftests/bench/bench.py; how to read it:
# docs/performance.md). Not part of `make test`. BENCH_ARGS=--quick for a
# short development run. The driver holds /tmp/bbrbpf-kernel.lock itself.

BENCH_ARGS ?=

# The parts section's timing builds of bbr3 (bpf/lib/parts_timing.h): clock
# reads between the parts of cong_control, and the same with the core run
# on a copy first. For the bench only: never installed, never loaded by
# bbrctl's name lookup.
PARTS_OBJS := build/bench/bbr3_parts.bpf.o build/bench/bbr3_parts_twice.bpf.o

build/bench/bbr3_parts.bpf.o: PARTS_CFLAGS := -DBBR_PARTS_TIMING
build/bench/bbr3_parts_twice.bpf.o: PARTS_CFLAGS := -DBBR_PARTS_TIMING -DBBR_PARTS_TWICE
$(PARTS_OBJS): bpf/bbr3.bpf.c bpf/vmlinux.h $(CORE_HDRS)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) $(PARTS_CFLAGS) -c $< -o $@

bench: all $(PARTS_OBJS)
	PYTHON=$(PYTHON) selftests/bench/run $(BENCH_ARGS)
