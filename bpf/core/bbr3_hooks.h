/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * core/bbr3_hooks.h: BBRv3's own behaviour at every hook of the core that
 * the includer's variant did not define (core/bbr3.h, "Hooks"). Include it
 * last, after core/bbr3.h and the variant's hooks. Plain BBRv3 (bbr3's
 * object) is the core plus this file alone.
 */
#ifndef BBR3_HOOKS_H
#define BBR3_HOOKS_H

#ifndef BBR_HOOK_MODE
static inline void bbr_hook_mode(struct bbr3 *b, const struct bbr_sock *sk)
{
}
#endif

#ifndef BBR_HOOK_SIGNAL
static inline void bbr_hook_signal(struct bbr3 *b, BBR_EXT *x, struct bbr_sock *sk,
				   const struct bbr_rs *rs)
{
}
#endif

#ifndef BBR_HOOK_CAP
static inline void bbr_hook_cap(const struct bbr3 *b, BBR_EXT *x,
				struct bbr_sock *sk)
{
}
#endif

#ifndef BBR_HOOK_BW_SAMPLE
static inline void bbr_hook_bw_sample(const struct bbr3 *b, const struct bbr_rs *rs,
				      u64 *pkts, u64 *scale)
{
}
#endif

#ifndef BBR_HOOK_READS_CE
static inline bool bbr_hook_reads_ce(const struct bbr3 *b)
{
	return false;
}
#endif

#ifndef BBR_HOOK_STARTUP_CE
static inline bool bbr_hook_startup_ce(struct bbr3 *b, const struct bbr_sock *sk,
				       u32 delivered_ce)
{
	return false;
}
#endif

#ifndef BBR_HOOK_SKIP_DRAIN
static inline bool bbr_hook_skip_drain(const struct bbr3 *b)
{
	return false;
}
#endif

#ifndef BBR_HOOK_UNDO_STARTUP
static inline void bbr_hook_undo_startup(struct bbr3 *b)
{
}
#endif

#ifndef BBR_HOOK_CYCLE
static inline bool bbr_hook_cycle(struct bbr3 *b, const struct bbr_sock *sk)
{
	return false;
}
#endif

#ifndef BBR_HOOK_CYCLE_GAINS
static inline bool bbr_hook_cycle_gains(struct bbr3 *b)
{
	return false;
}
#endif

#ifndef BBR_HOOK_CYCLE_DOWN
static inline void bbr_hook_cycle_down(struct bbr3 *b)
{
}
#endif

#ifndef BBR_HOOK_CYCLE_OWNS_BW_FILTER
static inline bool bbr_hook_cycle_owns_bw_filter(const struct bbr3 *b)
{
	return false;
}
#endif

#ifndef BBR_HOOK_ROUND_START
static inline void bbr_hook_round_start(struct bbr3 *b)
{
}
#endif

#ifndef BBR_HOOK_PROBE_RTT_ALLOWED
static inline bool bbr_hook_probe_rtt_allowed(const struct bbr3 *b)
{
	return true;
}
#endif

#ifndef BBR_HOOK_TRACE
static inline void bbr_hook_trace(struct bbr_trace_ev *ev, const BBR_EXT *x)
{
}
#endif

/* The 2026 reference generation (the 2023 one: core/bbr3_2023.h). */
#ifndef BBR_HOOK_TSO_MAX_BYTES
static inline u32 bbr_hook_tso_max_bytes(const struct bbr3 *b, u32 gso_max_size)
{
	return gso_max_size;
}
#endif

#ifndef BBR_HOOK_DRAIN_GAIN
static inline u32 bbr_hook_drain_gain(const struct bbr3 *b)
{
	return BBR_DRAIN_GAIN_2026;
}
#endif

#ifndef BBR_HOOK_DRAIN_ROUNDS
static inline bool bbr_hook_drain_rounds(const struct bbr3 *b)
{
	return true;
}
#endif

#ifndef BBR_HOOK_STARTUP_LOSS_TOO_HIGH
static inline bool bbr_hook_startup_loss_too_high(const struct bbr3 *b,
						  const struct bbr_rs *rs)
{
	return bbr_is_loss_too_high(b, rs);
}
#endif

#ifndef BBR_HOOK_LOSS_UNDO
static inline bool bbr_hook_loss_undo(const struct bbr3 *b)
{
	return true;
}
#endif

#endif /* BBR3_HOOKS_H */
