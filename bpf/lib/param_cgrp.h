/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * param_cgrp: cgroup v2 id -> index of its parameter set (bbrctl set
 * --cgroup). A socket whose cgroup has no entry runs with set 0. bbrctl
 * also keeps here the sets of single sockets, under BBR_PARAM_KEY_SOCKET |
 * cookie (include/bbr_params.h). Not pinned: bbrctl finds it through the
 * struct_ops programs, and a new build starts with no entries, as its
 * parameter sets start with the defaults. One definition for the CCs
 * (lib/tcp_cc.h) and for param_sock, which bbrctl hands the CC's map.
 */
#ifndef BBR_LIB_PARAM_CGRP_H
#define BBR_LIB_PARAM_CGRP_H

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BBR_PARAM_SLOTS);
	__type(key, u64);
	__type(value, u32);
} param_cgrp SEC(".maps");

#endif /* BBR_LIB_PARAM_CGRP_H */
