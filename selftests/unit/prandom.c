// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The core's prandom source in native builds (bbr_env.h): xorshift64*,
 * deterministic, so every run sees the same "random" probe timing; tests
 * and sweeps that care reseed it. Shared by run_unit and exp.
 */
#include "bbr_env.h"

static u64 prandom_state;

u32 unit_prandom(void)
{
	prandom_state ^= prandom_state >> 12;
	prandom_state ^= prandom_state << 25;
	prandom_state ^= prandom_state >> 27;
	return (u32)((prandom_state * 0x2545F4914F6CDD1DULL) >> 32);
}

void unit_prandom_seed(u64 seed)
{
	prandom_state = seed ? seed : 0x9E3779B97F4A7C15ULL;
}
