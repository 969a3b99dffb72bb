# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# make kernels: boot each kernel of selftests/kernels/kernels.list (Debian's
# cloud kernels, fetched with apt into build/kernels/) in QEMU and run the
# kernel_matrix subset of the integration suite in each; one table of
# kernel x check and the verifier's figures (docs/kernels.md).
#
#   make kernels                       # every listed kernel
#   make kernels KERNELS="7.1 7.2"     # some series
#   make kernels-test                  # the ones kernels.list marks `test`,
#                                      # without the tests marked
#                                      # kernel_matrix_slow: the last step
#                                      # of `make test`
#
# KERNELS_JOBS guests run at once, each on the host's CPUs / KERNELS_JOBS.
# A kernel that cannot be fetched or booted fails the target.

KERNELS ?=
KERNELS_JOBS ?= 2

.PHONY: kernels kernels-test
kernels: all
	$(PYTHON) selftests/kernels/matrix.py --jobs $(KERNELS_JOBS) $(KERNELS)

kernels-test: all
	$(PYTHON) selftests/kernels/matrix.py --jobs $(KERNELS_JOBS) --test-set --quick
