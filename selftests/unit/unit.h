/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A small test harness in the spirit of the kernel's BPF selftests: tests
 * register themselves, asserts print what they compared, and the runner
 * ends with "N passed, N failed".
 *
 *	TEST(startup_exits_after_three_flat_rounds) {
 *		ASSERT_EQ(b->mode, BBR_DRAIN);
 *	}
 */
#ifndef UNIT_H
#define UNIT_H

#include <stdio.h>

typedef void (*unit_fn)(void);
void unit_register(const char *name, const char *file, unit_fn fn);
void unit_fail(const char *file, int line, const char *what,
	       long long a, long long b);
extern int unit_failed_current;

#define TEST(name)							\
	static void name(void);						\
	__attribute__((constructor)) static void unit_reg_##name(void)	\
	{ unit_register(#name, __FILE__, name); }			\
	static void name(void)

#define UNIT_CMP(a, op, b)						\
	do {								\
		long long _a = (long long)(a), _b = (long long)(b);	\
		if (!(_a op _b)) {					\
			unit_fail(__FILE__, __LINE__, #a " " #op " " #b, _a, _b); \
			return;						\
		}							\
	} while (0)

#define ASSERT_EQ(a, b)	UNIT_CMP(a, ==, b)
#define ASSERT_NE(a, b)	UNIT_CMP(a, !=, b)
#define ASSERT_LT(a, b)	UNIT_CMP(a, <, b)
#define ASSERT_LE(a, b)	UNIT_CMP(a, <=, b)
#define ASSERT_GT(a, b)	UNIT_CMP(a, >, b)
#define ASSERT_GE(a, b)	UNIT_CMP(a, >=, b)
#define ASSERT_TRUE(a)	UNIT_CMP(!!(a), ==, 1)
#define ASSERT_FALSE(a)	UNIT_CMP(!!(a), ==, 0)

/* Prints a figure a test measured (scenario results), tagged for grep. */
#define UNIT_REPORT(fmt, ...) printf("  # " fmt "\n", ##__VA_ARGS__)

#endif
