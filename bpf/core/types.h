/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Types and the few primitives the algorithm core needs, so that the same
 * headers compile with `clang -target bpf` (where vmlinux.h has already
 * provided u8..u64) and natively (where they come from <stdint.h>).
 *
 * The core must stay inside what the BPF verifier accepts: no signed 64-bit
 * division (BPF v3 has none), no floating point, bounded loops only, no
 * function pointers.
 */
#ifndef BBR_TYPES_H
#define BBR_TYPES_H

#ifdef __bpf__
/* vmlinux.h is included by the .bpf.c file before this header. */
#define BBR_NOINLINE __attribute__((noinline))
/* Global (non-static) functions are verified once on their own, which keeps
 * the verifier's path count bounded for a state machine this size. The
 * verifier only accepts global functions that return a scalar, so entry
 * points return int (0) rather than void. */
#define BBR_API BBR_NOINLINE
#else
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;
#define BBR_NOINLINE __attribute__((noinline))
#define BBR_API static inline
#endif

#ifndef BBR_INLINE
#define BBR_INLINE static inline __attribute__((always_inline))
#endif

/* Wrap-safe sequence/counter order, as the kernel's before()/after(). */
BBR_INLINE bool bbr_before(u32 a, u32 b) { return (s32)(a - b) < 0; }
BBR_INLINE bool bbr_after(u32 a, u32 b) { return bbr_before(b, a); }

BBR_INLINE u32 bbr_min_u32(u32 a, u32 b) { return a < b ? a : b; }
BBR_INLINE u32 bbr_max_u32(u32 a, u32 b) { return a > b ? a : b; }
BBR_INLINE u64 bbr_min_u64(u64 a, u64 b) { return a < b ? a : b; }
BBR_INLINE u64 bbr_max_u64(u64 a, u64 b) { return a > b ? a : b; }

/* Unsigned division rounding up; d must be non-zero. */
BBR_INLINE u64 bbr_div_round_up_u64(u64 n, u64 d) { return (n + d - 1) / d; }

/* floor(log2(v)) for v > 0, 0 for v == 0: five fixed steps, no loop. */
BBR_INLINE u32 bbr_ilog2_u32(u32 v)
{
	u32 r = 0;

	if (v >= 1u << 16) { v >>= 16; r += 16; }
	if (v >= 1u << 8)  { v >>= 8;  r += 8; }
	if (v >= 1u << 4)  { v >>= 4;  r += 4; }
	if (v >= 1u << 2)  { v >>= 2;  r += 2; }
	if (v >= 1u << 1)  { r += 1; }
	return r;
}

#endif /* BBR_TYPES_H */
