# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bbr-bpf: one entry point per job.
#
#   make setup   install the toolchain on a bare Debian bookworm machine (root)
#   make         build BPF objects, the loader and the native unit tests
#   make run     the main job: a demo transfer through the project's CC
#   make unit    native unit tests of the algorithm core (fast, no root)
#   make test    everything: unit tests, a short fuzz run, integration tests
#   make lab     the full lab scenario set (long; writes reports)
#   make bench   cost of the BPF CCs against the kernel's own (not in `make test`)
#   make fuzz    a longer libFuzzer run of the core (not part of `make test`)
#   make soak    churn, swaps, unloads and forged options for SOAK_S seconds (`make test`: 60 s)
#   make clean
#
# Everything is built in-tree next to its source and ignored by git, except
# generated sources, which go to build/ (BUILD_DIR); see docs/development.md
# for the toolchain and why it is what it is.
# Each work area (lab, ETS, bench, install...) keeps its own rules in
# mk/<area>.mk, included below; they add to ALL_TARGETS, FUZZ_SHORT,
# PYTEST_DIRS and CLEAN_FILES.

CLANG    ?= clang-19
LLVM_STRIP ?= llvm-strip-19
BPFTOOL  ?= bpftool
CC       ?= gcc
PYTHON   ?= python3
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux

# -mcpu=v3: 32-bit atomics and jmp32; the kernels we target (>= 6.10) all have it.
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -Wall -Wextra -Werror \
	-Wno-unused-parameter -Wno-missing-field-initializers \
	-D__TARGET_ARCH_x86 -Ibpf -Iinclude
USER_CFLAGS := -g -O2 -Wall -Wextra -Werror -Wno-missing-field-initializers \
	-std=gnu11 -Iinclude -Ibpf
UNIT_CFLAGS := $(USER_CFLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer
LIBBPF_LIBS := $(shell pkg-config --libs libbpf 2>/dev/null || echo -lbpf -lelf -lz)
JANSSON_LIBS := $(shell pkg-config --libs jansson 2>/dev/null || echo -ljansson)

BPF_SRCS  := $(wildcard bpf/*.bpf.c selftests/progs/*.bpf.c)
BPF_OBJS  := $(BPF_SRCS:.bpf.c=.bpf.o)
# lib/tcp_cc.h CCs built again for Linux 7.1+ (see the rule below)
TX_START_OBJS := bpf/tx_start/bbr3.bpf.o bpf/tx_start/bbr3_l4s.bpf.o bpf/tx_start/bbr_swift.bpf.o
CORE_HDRS := $(wildcard bpf/core/*.h bpf/lib/*.h include/*.h)

UNIT_SRCS := $(wildcard selftests/unit/*.c)
UNIT_BIN  := selftests/unit/run_unit
FUZZ_BIN  := selftests/fuzz/fuzz_core
LOADER    := loader/bbrctl
TOOLS     := selftests/tools/verifier_stats selftests/tools/hostdelay
BUILD_DIR := build
# make test builds with this many jobs (the host's CPUs)
NPROC     := $(shell nproc 2>/dev/null || echo 1)

# The fixed BPF programs bbrctl carries inside itself, as libbpf skeletons
# (`bpftool gen skeleton`): generated at build time, never committed. The
# congestion controls are not among them: bbrctl loads those from their
# object files (NAME.bpf.o, --obj PATH) with the generic bpf_object API.
SKEL_DIR    := $(BUILD_DIR)/skel
LOADER_SKEL := cc_ab cc_select cc_swap ect1 ets param_sock
LOADER_SKELS := $(LOADER_SKEL:%=$(SKEL_DIR)/%.skel.h)

.PHONY: all setup run unit test integration fuzz fuzz-short lab bench clean vmlinux
ALL_TARGETS := $(BPF_OBJS) $(TX_START_OBJS) $(LOADER) $(UNIT_BIN) $(TOOLS)
# Short fuzz runs that belong to `make test` (phony targets).
FUZZ_SHORT  := fuzz-core-short
# Where pytest looks in `make integration` / `make test`.
PYTEST_DIRS := selftests/integration
CLEAN_FILES :=

# The fragments below define targets of their own (bench, lab...); without
# this, the first of them would become what a bare `make` runs.
.DEFAULT_GOAL := all

-include $(sort $(wildcard mk/*.mk))

all: $(ALL_TARGETS)

setup:
	bash scripts/setup.sh

# vmlinux.h is generated from the running kernel's BTF rather than committed:
# the running kernel is the truth for types, CO-RE relocates field offsets at
# load time, and a 135k-line generated header would drown every diff.
bpf/vmlinux.h: $(VMLINUX_BTF)
	$(BPFTOOL) btf dump file $< format c > $@.tmp && mv $@.tmp $@
vmlinux: bpf/vmlinux.h

%.bpf.o: %.bpf.c bpf/vmlinux.h $(CORE_HDRS)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# The CCs built on lib/tcp_cc.h again with the cwnd_event_tx_start op of
# Linux 7.1+ (loader/kfeat.h): bbrctl loads bpf/tx_start/NAME.bpf.o where
# the running kernel has that op.
bpf/tx_start/%.bpf.o: bpf/%.bpf.c bpf/vmlinux.h $(CORE_HDRS)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -DBBR_TX_START_OP -c $< -o $@

# Skeletons of objects without a struct_ops map: bpftool 7.5's skeleton of a
# .struct_ops.link map does not compile against libbpf 1.4 (docs/bbrctl.md).
$(SKEL_DIR)/%.skel.h: bpf/%.bpf.o
	@mkdir -p $(@D)
	$(BPFTOOL) gen skeleton $< name $* > $@.tmp && mv $@.tmp $@

# CPPFLAGS, CFLAGS and LDFLAGS are empty unless given: the Debian package
# build (mk/deb.mk) passes dpkg-buildflags' hardening flags through them.
$(LOADER): $(wildcard loader/*.c loader/*.h) $(CORE_HDRS) $(LOADER_SKELS)
	$(CC) $(USER_CFLAGS) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -I$(SKEL_DIR) -o $@ $(filter %.c,$^) $(LIBBPF_LIBS) $(JANSSON_LIBS) -lm

selftests/tools/%: selftests/tools/%.c
	$(CC) $(USER_CFLAGS) -o $@ $< $(LIBBPF_LIBS)

# loader/kfeat.c (bbrctl's reading of kernel BTF, unit-tested on made-up BTF)
# and loader/num.c (its number parser) are tested with the core. One object
# per source: each includes the whole core and takes ~10 s with the
# sanitizers, so `make -j` builds them side by side.
UNIT_OBJ_DIR := $(BUILD_DIR)/unit
UNIT_OBJS := $(patsubst %.c,$(UNIT_OBJ_DIR)/%.o,$(UNIT_SRCS) loader/kfeat.c loader/num.c)

$(UNIT_OBJ_DIR)/%.o: %.c $(wildcard selftests/unit/*.h) loader/kfeat.h loader/num.h $(CORE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(UNIT_CFLAGS) -c $< -o $@

$(UNIT_BIN): $(UNIT_OBJS)
	$(CC) $(UNIT_CFLAGS) -o $@ $^ -lm $(LIBBPF_LIBS)

$(FUZZ_BIN): selftests/fuzz/fuzz_core.c $(CORE_HDRS)
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Ibpf -o $@ $<

# The Python entry points (scripts/demo, selftests/lab/run, selftests/bench/run)
# start through selftests/pyrun, which puts the test toolkit and the lab on
# the path; PYTHON is passed on.
run: all
	PYTHON=$(PYTHON) scripts/demo

unit: $(UNIT_BIN)
	./$(UNIT_BIN)

# A short fuzz run belongs to the suite: it is where overflow and division
# bugs in the core show up first. It replays the inputs that once failed
# (selftests/fuzz/regressions/core/), then fuzzes; a failure fails make,
# and the input that caused it lands in selftests/fuzz/ (crash-*).
# `make fuzz` runs longer.
FUZZ_ARTIFACTS := -artifact_prefix=selftests/fuzz/
fuzz-core-short: $(FUZZ_BIN)
	./$(FUZZ_BIN) $(FUZZ_ARTIFACTS) selftests/fuzz/regressions/core/* \
		>$(FUZZ_BIN).short.log 2>&1 && \
	./$(FUZZ_BIN) $(FUZZ_ARTIFACTS) -runs=200000 -seed=1 -max_len=4096 \
		>>$(FUZZ_BIN).short.log 2>&1; \
		rc=$$?; tail -3 $(FUZZ_BIN).short.log; exit $$rc

fuzz-short: $(FUZZ_SHORT)

fuzz: $(FUZZ_BIN)
	./$(FUZZ_BIN) $(FUZZ_ARTIFACTS) -max_total_time=300 -max_len=4096

integration: all
	$(PYTHON) -m pytest -q $(PYTEST_DIRS)

# The suite ends with the kernel matrix's `test` kernels (mk/kernels.mk,
# docs/kernels.md): the same tests in QEMU on Debian's 6.1 (the refusal),
# 6.12, 7.0, 7.1 and 7.3. Fetching them needs Debian's archive; a kernel that
# cannot be fetched fails the suite, saying so.
test:
	$(MAKE) --no-print-directory -j$(NPROC) all $(FUZZ_BIN)
	./$(UNIT_BIN)
	$(MAKE) --no-print-directory fuzz-short
	$(PYTHON) -m pytest -q --durations=20 $(PYTEST_DIRS)
	$(MAKE) --no-print-directory kernels-test

clean:
	rm -f $(BPF_OBJS) $(TX_START_OBJS) $(LOADER) $(UNIT_BIN) $(FUZZ_BIN) $(TOOLS) bpf/vmlinux.h $(CLEAN_FILES)
	rm -rf $(BUILD_DIR)
