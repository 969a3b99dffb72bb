/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Where bbr-bpf keeps its objects on bpffs: everything under PIN_ROOT.
 * One place for the loader (bbrctl), the BPF objects (where their shared
 * maps are pinned) and the tests, which read the strings
 * below from this file (selftests/integration/conftest.py, pin_layout()).
 * docs/bbrctl.md, "bpffs layout", describes what each pin holds.
 *
 *   PIN_ROOT/                       created by the first load, removed when empty
 *   PIN_ROOT/NAME/                  one directory per loaded CC (PIN_CC_FMT)
 *   PIN_ROOT/NAME/link              its struct_ops link: NAME stays registered
 *   PIN_ROOT/NAME/state_iter        its state iterator link (if it has one)
 *   PIN_ROOT/NAME/trace_rb          its trace ring (bpf/lib/trace.h)
 *   PIN_ROOT/NAME/trace_ctl         the ring's control word
 *   PIN_ROOT/cgroup/ID/select       `bbrctl attach`: the cc_select link of
 *   PIN_ROOT/cgroup/ID/ets          cgroup ID, and the ETS program's link
 *   PIN_ROOT/cgroup/ID/ab           `attach --cc A:W,B:W`: the cc_ab link
 *   PIN_ROOT/cgroup/ID/ab_*         of an A/B split, and its maps (include/ab.h)
 *   PIN_ROOT/shared/                maps shared between objects
 *                                   (PIN_SHARED_MAPS): ets_sk_stor...
 *   PIN_ROOT/ect1/NETNS-IFINDEX     `bbrctl ect1 attach`: the ect1 tcx link
 *                                   on device IFINDEX of the network
 *                                   namespace whose cookie is NETNS
 *
 * "cgroup", "shared" and "ect1" are therefore not available as CC names
 * (PIN_RESERVED).
 * Only string literals here: no types, so any C file can include it.
 */
#ifndef BBR_PINS_H
#define BBR_PINS_H

#define BPFFS_MOUNT		"/sys/fs/bpf"
#define PIN_ROOT		BPFFS_MOUNT "/bbr-bpf"

/* A CC's directory: printf format with the CC name. */
#define PIN_CC_FMT		PIN_ROOT "/%s"
#define PIN_LINK		"link"
#define PIN_ITER		"state_iter"
#define PIN_TRACE_RB		"trace_rb"
#define PIN_TRACE_CTL		"trace_ctl"

/* cgroup attachments: PIN_CGROUP/<cgroup id>/{select,ets} */
#define PIN_CGROUP_DIR		"cgroup"
#define PIN_CGROUP		PIN_ROOT "/" PIN_CGROUP_DIR
#define PIN_SELECT		"select"
#define PIN_ETS			"ets"
/* an A/B split instead of select (bpf/cc_ab.bpf.c): its link and maps */
#define PIN_AB			"ab"
#define PIN_AB_MAPS		{ "ab_cfg", "ab_stats", "ab_conns", "ab_ring" }

/* bbrctl pins (or reuses) an object's shared maps here. Every directory
 * under PIN_ROOT must be root's and writable by root only (bbrctl checks:
 * bpffs is mode 1777). */
#define PIN_SHARED_DIR		"shared"
#define PIN_SHARED		PIN_ROOT "/" PIN_SHARED_DIR
/* The maps pinned there: the ETS program's; bbr_swift reads the first. */
#define PIN_ETS_SK_STOR		"ets_sk_stor"
#define PIN_SHARED_MAPS		{ PIN_ETS_SK_STOR, "ets_stats", "ets_cfg", "ets_path" }

/* ECT(1) on egress (bpf/ect1.bpf.c): PIN_ECT1/PIN_ECT1_FMT */
#define PIN_ECT1_DIR		"ect1"
#define PIN_ECT1		PIN_ROOT "/" PIN_ECT1_DIR
#define PIN_ECT1_FMT		"%llu-%d"	/* netns cookie, ifindex */

/* The directories under PIN_ROOT that are not congestion controls. */
#define PIN_RESERVED		{ PIN_CGROUP_DIR, PIN_SHARED_DIR, PIN_ECT1_DIR }

#endif /* BBR_PINS_H */
