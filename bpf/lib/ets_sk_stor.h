/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ets_sk_stor: the ETS sockops program's per-socket state (struct ets_sk,
 * include/ets_shared.h), which bbr_swift reads. Both objects include this
 * one definition; bbrctl pins it once under PIN_SHARED and hands it to
 * each (include/bbr_pins.h).
 */
#ifndef BBR_LIB_ETS_SK_STOR_H
#define BBR_LIB_ETS_SK_STOR_H

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ets_sk);
} ets_sk_stor SEC(".maps");

#endif /* BBR_LIB_ETS_SK_STOR_H */
