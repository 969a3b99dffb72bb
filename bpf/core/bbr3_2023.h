/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * core/bbr3_2023.h: the 2023 reference generation (google/bbr v3 as of
 * 2023, net/ipv4/tcp_bbr.c) as hooks of the core, which is the 2026 one
 * (docs/bbr3.md, "The two reference generations").
 *
 * A socket follows it while its parameter set's key `generation` is 2023
 * (any other value: 2026), so every object includes this file (after the
 * core and its variant's hooks, before core/bbr3_hooks.h); an object
 * without it runs the 2026 generation only. What differs:
 *
 *   - the TSO burst is capped at gso_max_size - 1 - MAX_TCP_HEADER, not at
 *     gso_max_size;
 *   - DRAIN paces at 1/2.885 (~0.34), not 0.5, and has no round limit;
 *   - STARTUP's loss exit also counts CE above ecn_thresh;
 *   - the undo state is saved at ssthresh() (not at the first lost packet),
 *     and undo only lifts the bounds and returns the saved cwnd.
 */
#ifndef BBR3_2023_H
#define BBR3_2023_H

/* MAX_TCP_HEADER on x86-64 distribution kernels: L1_CACHE_ALIGN(128 +
 * MAX_HEADER) with MAX_HEADER = 128 + 48. */
#define BBR_MAX_TCP_HEADER_BYTES	320u
/* 1/2.885: 256 * 1000 / 2885 = 88, ~0.344. */
#define BBR_DRAIN_GAIN_2023		(BBR_UNIT * 1000 / 2885)

static inline bool bbr_gen_2023(const struct bbr3 *b)
{
	return BBR_P(b).generation == BBR_GEN_2023;
}

#define BBR_HOOK_TSO_MAX_BYTES
static inline u32 bbr_hook_tso_max_bytes(const struct bbr3 *b, u32 gso_max_size)
{
	return bbr_gen_2023(b) ? gso_max_size - 1 - BBR_MAX_TCP_HEADER_BYTES :
				 gso_max_size;
}

#define BBR_HOOK_DRAIN_GAIN
static inline u32 bbr_hook_drain_gain(const struct bbr3 *b)
{
	return bbr_gen_2023(b) ? BBR_DRAIN_GAIN_2023 : BBR_DRAIN_GAIN_2026;
}

#define BBR_HOOK_DRAIN_ROUNDS
static inline bool bbr_hook_drain_rounds(const struct bbr3 *b)
{
	return !bbr_gen_2023(b);
}

#define BBR_HOOK_STARTUP_LOSS_TOO_HIGH
static inline bool bbr_hook_startup_loss_too_high(const struct bbr3 *b,
						  const struct bbr_rs *rs)
{
	return bbr_gen_2023(b) ? bbr_is_inflight_too_high(b, rs) :
				 bbr_is_loss_too_high(b, rs);
}

#define BBR_HOOK_LOSS_UNDO
static inline bool bbr_hook_loss_undo(const struct bbr3 *b)
{
	return !bbr_gen_2023(b);
}

#endif /* BBR3_2023_H */
