/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The ETS sockops program's maps that bbr_swift reads: ets_sk_stor, the
 * per-socket state (struct ets_sk, include/ets_shared.h), ets_path, the
 * path filter (struct ets_path), and ets_cfg, its configuration. Both
 * objects include these definitions; bbrctl pins each map once under
 * PIN_SHARED and hands it to each (include/bbr_pins.h).
 */
#ifndef BBR_LIB_ETS_SK_STOR_H
#define BBR_LIB_ETS_SK_STOR_H

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ets_sk);
} ets_sk_stor SEC(".maps");

/* LRU: peers come and go. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, ETS_PATH_MAX_ENTRIES);
	__type(key, struct ets_path_key);
	__type(value, struct ets_path);
} ets_path SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct ets_cfg);
} ets_cfg SEC(".maps");

#endif /* BBR_LIB_ETS_SK_STOR_H */
