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
void unit_fail_f(const char *file, int line, const char *what,
		 double a, double b);
extern int unit_failed_current;

#define TEST(name)							\
	static void name(void);						\
	__attribute__((constructor)) static void unit_reg_##name(void)	\
	{ unit_register(#name, __FILE__, name); }			\
	static void name(void)

/* A floating-point operand makes the comparison a floating-point one (a
 * figure like a Jain index would otherwise be truncated to 0 or 1 first);
 * integers compare as long long. __builtin_classify_type() gives 8 for
 * real types in GCC and clang. */
#define UNIT_IS_FLOAT(x)	(__builtin_classify_type(x) == 8)
/* x as a double when x is a number; 0 for a pointer (never compared so:
 * a pointer is not a floating operand) */
#define UNIT_AS_DOUBLE(x)						\
	__builtin_choose_expr(__builtin_classify_type(x) == 5, 0.0, (x))

#define UNIT_CMP(a, op, b)						\
	do {								\
		if (UNIT_IS_FLOAT(a) || UNIT_IS_FLOAT(b)) {		\
			double _fa = UNIT_AS_DOUBLE(a);			\
			double _fb = UNIT_AS_DOUBLE(b);			\
			if (!(_fa op _fb)) {				\
				unit_fail_f(__FILE__, __LINE__,		\
					    #a " " #op " " #b, _fa, _fb); \
				return;					\
			}						\
		} else {						\
			long long _a = (long long)(a), _b = (long long)(b); \
			if (!(_a op _b)) {				\
				unit_fail(__FILE__, __LINE__,		\
					  #a " " #op " " #b, _a, _b);	\
				return;					\
			}						\
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
