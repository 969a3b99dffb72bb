/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * core/bbr3_params.h: how the core reaches its tunables.
 *
 * The tunables (include/bbr_params.h: names, ranges, defaults) come in
 * BBR_PARAM_SLOTS sets, an array the includer defines and names BBR_CFG
 * (BPF: in the section .data.params, so bbrctl can rewrite a set at run
 * time). Each socket runs with one set, named by b->param_slot (slot 0 is
 * the default set); the glue picks it from the socket's cgroup (bbrctl set
 * --cgroup) at init and at every round start, so the per-ACK cost is one
 * masked index into an array, not a map lookup.
 *
 * Profiles are named presets over the table (`bbrctl set NAME
 * profile=...`): bbr_params_set_profile() applies one in C (the tests, the
 * fuzzer, and a variant object that starts from one); bbrctl and the lab
 * read the same rows from include/bbr_params.h.
 *
 * Included by core/bbr3.h; needs u32 and struct bbr3 (bbr3_state.h).
 */
#ifndef BBR3_PARAMS_CORE_H
#define BBR3_PARAMS_CORE_H

/* Every key a profile sets takes the profile's value, every other key a
 * profile sets goes back to its default: switching never leaves a mix. */
static inline void bbr_params_set_profile(struct bbr_params *p, u32 profile)
{
	const struct bbr_params ref = BBR_PARAMS_DEFAULT;

#define BBR_PROFILE_APPLY(prof, key, val)				\
	p->key = profile == BBR_PROFILE_##prof ? (val) : ref.key;
	BBR_PROFILE_TABLE(BBR_PROFILE_APPLY)
#undef BBR_PROFILE_APPLY
}

extern struct bbr_params BBR_CFG[BBR_PARAM_SLOTS];

/* The parameter set a socket runs with. */
static inline const struct bbr_params *bbr_params_of(const struct bbr3 *b)
{
	return &BBR_CFG[b->param_slot & (BBR_PARAM_SLOTS - 1)];
}
#define BBR_P(b)		(*bbr_params_of(b))

/* Select parameter set `slot` for this socket (out-of-range: default). */
static inline void bbr_core_set_param_slot(struct bbr3 *b, u32 slot)
{
	b->param_slot = slot < BBR_PARAM_SLOTS ? (u8)slot :
						 BBR_PARAM_SLOT_DEFAULT;
}

#endif /* BBR3_PARAMS_CORE_H */
