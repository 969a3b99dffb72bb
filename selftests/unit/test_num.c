// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bbrctl's number parser (loader/num.c): decimal only unless hex is
 * allowed, no sign, no blanks, no leading zeros (no octal), the range and
 * 64-bit overflow checked, seconds with up to six decimals.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "unit.h"
#include "../../loader/num.h"

static char why[160];

static int parse(const char *s, uint64_t min, uint64_t max, unsigned int flags,
		 uint64_t *v)
{
	*v = 12345;
	return num_parse(s, min, max, flags, v, why, sizeof(why));
}

TEST(num_decimal_in_range)
{
	uint64_t v;

	ASSERT_EQ(parse("0", 0, 10, 0, &v), 0);
	ASSERT_EQ(v, 0);
	ASSERT_EQ(parse("10", 0, 10, 0, &v), 0);
	ASSERT_EQ(v, 10);
	ASSERT_EQ(parse("18446744073709551615", 0, UINT64_MAX, 0, &v), 0);
	ASSERT_TRUE(v == UINT64_MAX);
}

TEST(num_rejects_sign_blank_octal_and_junk)
{
	static const char *const bad[] = { "", "-1", "+5", " 5", "5 ", "\t5",
		"010", "00", "1.5", "1e3", "0x10", "x", "5x", " -1" };
	uint64_t v;

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_EQ(parse(bad[i], 0, UINT64_MAX, 0, &v), -EINVAL);
		ASSERT_EQ(v, 12345);			/* untouched */
		ASSERT_TRUE(strstr(why, "not a non-negative integer"));
	}
	ASSERT_EQ(parse("010", 0, 100, 0, &v), -EINVAL);
	ASSERT_TRUE(strstr(why, "leading zeros"));
}

TEST(num_range_and_overflow)
{
	uint64_t v;

	ASSERT_EQ(parse("257", 0, 256, 0, &v), -ERANGE);
	ASSERT_EQ(strcmp(why, "out of range 0..256"), 0);
	ASSERT_EQ(parse("0", 1, 65535, 0, &v), -ERANGE);
	ASSERT_EQ(parse("18446744073709551616", 0, UINT64_MAX, 0, &v), -ERANGE);
	ASSERT_EQ(parse("99999999999999999999", 0, 256, 0, &v), -ERANGE);
	ASSERT_TRUE(strstr(why, "not a non-negative integer"));
	ASSERT_TRUE(strstr(why, "out of range 0..256"));
	ASSERT_EQ(v, 12345);
}

TEST(num_hex_only_when_allowed)
{
	uint64_t v;

	ASSERT_EQ(parse("0x40", 0, 256, NUM_HEX, &v), 0);
	ASSERT_EQ(v, 64);
	ASSERT_EQ(parse("0XfF", 0, 256, NUM_HEX, &v), 0);
	ASSERT_EQ(v, 255);
	ASSERT_EQ(parse("0x", 0, 256, NUM_HEX, &v), -EINVAL);
	ASSERT_EQ(parse("0x1g", 0, 256, NUM_HEX, &v), -EINVAL);
	ASSERT_EQ(parse("0x101", 0, 256, NUM_HEX, &v), -ERANGE);
	ASSERT_EQ(parse("0x10000000000000000", 0, UINT64_MAX, NUM_HEX, &v), -ERANGE);
	ASSERT_EQ(parse("0x40", 0, 256, 0, &v), -EINVAL);
}

TEST(num_seconds_in_micro)
{
	uint64_t v;

	ASSERT_EQ(parse("0.5", 100000, 3600000000ull, NUM_MICRO, &v), 0);
	ASSERT_EQ(v, 500000);
	ASSERT_EQ(parse("3600", 100000, 3600000000ull, NUM_MICRO, &v), 0);
	ASSERT_EQ(v, 3600000000ull);
	ASSERT_EQ(parse("0.000001", 1, 10, NUM_MICRO, &v), 0);
	ASSERT_EQ(v, 1);
	ASSERT_EQ(parse("0.05", 100000, 3600000000ull, NUM_MICRO, &v), -ERANGE);
	ASSERT_EQ(strcmp(why, "out of range 0.1..3600"), 0);
	ASSERT_EQ(parse("1.", 0, 10000000, NUM_MICRO, &v), -EINVAL);
	ASSERT_EQ(parse(".5", 0, 10000000, NUM_MICRO, &v), -EINVAL);
	ASSERT_EQ(parse("0.1234567", 0, 10000000, NUM_MICRO, &v), -EINVAL);
	ASSERT_EQ(parse("1e-1", 0, 10000000, NUM_MICRO, &v), -EINVAL);
	ASSERT_EQ(parse("-0.5", 0, 10000000, NUM_MICRO, &v), -EINVAL);
	ASSERT_EQ(parse("18446744073709551615", 0, UINT64_MAX, NUM_MICRO, &v), -ERANGE);
}
