// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrbpf_test without its ssthresh op, a required one: it loads, and the
 * kernel refuses to register it at attach time. bbrctl's all-or-nothing
 * test (selftests/integration/test_bbrctl.py) loads it after a good CC.
 */
#define NO_SSTHRESH
#include "bbrbpf_test_cc.bpf.c"
