# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# make bench: the cost of the BPF CCs against the kernel's bbr and cubic,
# measured side by side in one run (selftests/bench/run, the driver is
# selftests/bench/bench.py; how to read it:
# docs/performance.md). Not part of `make test`. BENCH_ARGS=--quick for a
# short development run. The driver holds /tmp/bbrbpf-kernel.lock itself.

BENCH_ARGS ?=

bench: all
	PYTHON=$(PYTHON) selftests/bench/run $(BENCH_ARGS)
