/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The one number parser of bbrctl's command line: option values, socket
 * cookies and KEY=VALUE pairs all go through num_parse(), so every number
 * is read the same strict way (loader/num.c; selftests/unit/test_num.c).
 */
#ifndef BBRCTL_NUM_H
#define BBRCTL_NUM_H

#include <stddef.h>
#include <stdint.h>

/* Also "0x" and hex digits; only where the help says so (KEY=VALUE). */
#define NUM_HEX		0x1
/* A decimal fraction with at most 6 places after the point, returned in
 * millionths: seconds as microseconds ("0.5" -> 500000). min and max are
 * millionths too. */
#define NUM_MICRO	0x2

/*
 * Parse s as an unsigned number in min..max: decimal digits only - no sign,
 * no blanks, no leading zero (so "010" is neither 10 nor octal 8) - or with
 * NUM_HEX "0x" followed by hex digits. Returns 0 and *out, or -EINVAL (not
 * such a number) or -ERANGE (outside min..max, also beyond 2^64 - 1), with
 * why[] a phrase for the message: "out of range 1..65535", "not a
 * non-negative integer (no sign or blank)".
 */
int num_parse(const char *s, uint64_t min, uint64_t max, unsigned int flags,
	      uint64_t *out, char *why, size_t whylen);

#endif
