# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# make bench: the cost of the BPF CCs against the kernel's bbr and cubic,
# measured side by side in one run (selftests/bench/bench.py; how to read it:
# docs/performance.md). Not part of `make test`. BENCH_ARGS=--quick for a
# short development run. The driver holds /tmp/bbrbpf-kernel.lock itself.

BENCH_ARGS ?=

bench: all
	$(PYTHON) selftests/bench/bench.py $(BENCH_ARGS)
