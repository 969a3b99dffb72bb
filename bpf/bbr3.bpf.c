// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbr3: BBRv3 as a BPF struct_ops tcp_congestion_ops.
 *
 * The algorithm is core/bbr3.h. Each program below looks up the socket's
 * state in bbr3_sk_stor and calls its op in lib/tcp_cc.h, which reads the
 * kernel's inputs, calls the core and writes back cwnd and pacing rate.
 * The runtime parameter sets (bbr_param_sets, param_cgrp) are declared in
 * lib/tcp_cc.h; `bbrctl stat` reads dump_bbr3_state, `bbrctl trace` the
 * two trace maps.
 *
 * Load with `bbrctl load bbr3` or `bpftool struct_ops register bbr3.bpf.o DIR`
 * (on Linux 7.1+, bpf/tx_start/bbr3.bpf.o: docs/bbr3.md, "Builds").
 */
#include "lib/tcp_cc.h"
#include "core/bbr3_2023.h"	/* the 2023 generation, by the key */
#include "core/bbr3_hooks.h"	/* BBRv3: every other hook at its default */

char _license[] SEC("license") = "Dual BSD/GPL";

#define BBR3_CC		bbr3
#include "lib/bbr3_ops.h"	/* maps, programs, ops, state iterator */
