// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbr3_l4s: BBRv3 with the L4S mode, as a BPF struct_ops
 * tcp_congestion_ops of its own.
 *
 * The core (core/bbr3.h) plus the L4S mode's hooks (core/l4s.h: BBR-evo's
 * modifications), with the ops and maps of bbr3 (lib/bbr3_ops.h) under its
 * own names. Two things make it the L4S mode without further commands:
 *
 *   - .flags asks the kernel for AccECN and ECT(1) (TCP_CONG_NEEDS_ECN |
 *     NEEDS_ACCECN | ECT_1_NEGOTIATION, Linux 6.18; docs/l4s.md): a
 *     connection negotiates AccECN with a peer that has it, falls back to
 *     classic ECN or none otherwise, and then runs plain BBRv3;
 *   - every parameter set starts from the l4s profile (include/bbr_params.h),
 *     so the mode's keys are in force from the first connection; `bbrctl
 *     set bbr3_l4s ...` changes them as for any CC.
 *
 * A kernel without the AccECN flags refuses the object (EINVAL); `bbrctl
 * load bbr3_l4s` says so before trying. Until the kernel sets ECT(1) on the
 * data itself, `bbrctl ect1 attach DEV` does it at the device.
 *
 * Load with `bbrctl load bbr3_l4s` (on Linux 7.1+ the loader picks
 * bpf/tx_start/bbr3_l4s.bpf.o: docs/bbr3.md, "Builds").
 */
#include "vmlinux.h"
#include "core/types.h"
#include "bbr3_state.h"

/* include/net/tcp.h (6.18): the AccECN congestion-control flags. */
#define TCP_CONG_NEEDS_ECN		0x2	/* negotiate ECN, send ECT */
#define TCP_CONG_NEEDS_ACCECN		0x4	/* ... as AccECN (RFC 9768) */
#define TCP_CONG_ECT_1_NEGOTIATION	0x8	/* ... and send ECT(1): L4S */
#define BBR_L4S_ECN_FLAGS	(TCP_CONG_NEEDS_ECN | TCP_CONG_NEEDS_ACCECN | \
				 TCP_CONG_ECT_1_NEGOTIATION)

/* Every parameter set starts as the l4s profile: the table's defaults,
 * then the profile's rows (a later designator overrides an earlier one). */
#define BBR_L4S_ROW_v3(key, val)
#define BBR_L4S_ROW_v3plus(key, val)
#define BBR_L4S_ROW_l4s(key, val)	.key = (val),
#define BBR_L4S_ROW(prof, key, val)	BBR_L4S_ROW_##prof(key, val)
#define BBR_GLUE_PARAMS_INIT						\
	{ BBR_PARAM_TABLE(BBR_PARAM_INIT) BBR_PROFILE_TABLE(BBR_L4S_ROW) }
#define BBR_GLUE_L4S		1
/* bbrctl takes the L4S mode's keys (and profile=l4s) for this object only */
#define BBR_GLUE_PARAM_GROUPS	(BBR_PARAM_GROUP_CORE | BBR_PARAM_GROUP_L4S)

#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Winitializer-overrides"
#include "lib/tcp_cc.h"
#pragma clang diagnostic pop
#include "core/l4s.h"
#include "core/bbr3_2023.h"
#include "core/bbr3_hooks.h"

char _license[] SEC("license") = "Dual BSD/GPL";

#define BBR3_CC		bbr3_l4s
#define BBR3_CC_FLAGS	BBR_L4S_ECN_FLAGS
#include "lib/bbr3_ops.h"	/* bbr3's maps, programs, ops and iterator */
