// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbr3: BBRv3 as a BPF struct_ops tcp_congestion_ops.
 *
 * The algorithm is the core in core/bbr3.h; the struct_ops glue (reading
 * the kernel's inputs, calling the core, writing back cwnd and pacing
 * rate, the per-socket sk_storage map bbr3_sk_stor, the runtime parameters
 * bbr3_params and the state iterator dump_bbr3_state for `bbrctl stat`) is
 * lib/tcp_cc.h, shared with bbr_swift. bbr3 uses the glue with no hooks.
 *
 * Load with `bbrctl load bbr3` or `bpftool struct_ops register bbr3.bpf.o DIR`.
 */
#define BBR_GLUE_PREFIX		bbr3
#include "lib/tcp_cc.h"
