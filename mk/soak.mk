# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# make soak: bbr-bpf under churn, live swaps, unloads under load, forged ETS
# options, parameter and cgroup changes for SOAK_S seconds (default 600),
# then the counts; exit 1 when any is wrong (selftests/soak/README.md).
# SOAK_ARGS passes more options, e.g. --json.
#
#   make soak                    # 10 minutes
#   make soak SOAK_S=120         # 2 minutes
#   make soak SOAK_ARGS="--json --seed 1"
#
# `make test` runs a short soak (SOAK_SHORT_S, 60 s) through
# selftests/soak/test_soak.py, so that what only the soak exercises (the
# victim's reading of struct ets_sk, the forged options in live
# connections) cannot drift unnoticed.

SOAK_S    ?= 600
SOAK_ARGS ?=
PYTEST_DIRS := $(filter-out selftests/soak,$(PYTEST_DIRS)) selftests/soak

.PHONY: soak
soak: all
	PYTHON=$(PYTHON) selftests/soak/run --seconds $(SOAK_S) $(SOAK_ARGS)

# Lists the sockets that hold entries in a socket storage map (the soak's
# leak checks; selftests/progs/sk_stor_entries.bpf.c is what it loads).
SK_STOR_ENTRIES := selftests/tools/sk_stor_entries
ALL_TARGETS += $(SK_STOR_ENTRIES)
CLEAN_FILES += $(SK_STOR_ENTRIES)

# The struct layouts Python reads from BPF maps, printed from the C headers
# (selftests/tools/layouts.c; selftests/bbrtest/layouts.py, the victim).
LAYOUTS := selftests/tools/layouts
ALL_TARGETS += $(LAYOUTS)
CLEAN_FILES += $(LAYOUTS)
$(LAYOUTS): include/ets_shared.h include/bbr_pins.h bpf/core/types.h
