// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* bbrctl's strict number parser; see num.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "num.h"

#define MICRO		1000000u
#define MICRO_PLACES	6

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Accumulate digits of base at *p into *v; false on overflow. Stops at the
 * first non-digit; *n counts the digits read. */
static bool digits(const char **p, unsigned int base, uint64_t *v, int *n)
{
	bool ok = true;
	int d;

	for (*n = 0; (d = hexval(**p)) >= 0 && d < (int)base; (*p)++, (*n)++) {
		if (*v > (UINT64_MAX - d) / base)
			ok = false;
		else
			*v = *v * base + d;
	}
	return ok;
}

static void range_text(char *buf, size_t len, uint64_t v, unsigned int flags)
{
	if (!(flags & NUM_MICRO)) {
		snprintf(buf, len, "%llu", (unsigned long long)v);
		return;
	}
	if (v % MICRO == 0)
		snprintf(buf, len, "%llu", (unsigned long long)(v / MICRO));
	else
		snprintf(buf, len, "%llu.%06llu", (unsigned long long)(v / MICRO),
			 (unsigned long long)(v % MICRO));
	/* 0.100000 -> 0.1 */
	for (char *e = buf; *e; e++)
		if (*e == '.') {
			char *z = e + 1;

			while (*z)
				z++;
			while (z[-1] == '0')
				*--z = '\0';
			break;
		}
}

static int fail(char *why, size_t len, const char *what, const char *detail)
{
	snprintf(why, len, "not a %s (%s)", what, detail);
	return -EINVAL;
}

/* A decimal number (with NUM_MICRO, up to 6 places after a point, in
 * millionths) into *v; *ok false if it does not fit in 64 bits. */
static int dec_parse(const char *s, unsigned int flags, const char *what,
		     uint64_t *v, bool *ok, char *why, size_t whylen)
{
	const char *p = s;
	uint64_t frac = 0;
	int n = 0, places = 0;

	*ok = digits(&p, 10, v, &n);
	if (!n)
		return fail(why, whylen, what, flags & NUM_HEX ?
			    "decimal digits, or 0x and hex digits" :
			    "decimal digits only");
	if (n > 1 && s[0] == '0')
		return fail(why, whylen, what, "no leading zeros: 010 is neither 10 nor octal");
	if ((flags & NUM_MICRO) && *p == '.') {
		p++;
		for (; *p >= '0' && *p <= '9'; p++, places++)
			if (places < MICRO_PLACES)
				frac = frac * 10 + (uint64_t)(*p - '0');
		if (!places || places > MICRO_PLACES || *p)
			return fail(why, whylen, what,
				    "decimal, at most 6 digits after the point");
		while (places++ < MICRO_PLACES)
			frac *= 10;
	} else if (*p) {
		return fail(why, whylen, what, flags & NUM_HEX ?
			    "decimal digits, or 0x and hex digits" :
			    "decimal digits only");
	}
	if (flags & NUM_MICRO) {
		if (*v > (UINT64_MAX - frac) / MICRO)
			*ok = false;
		else
			*v = *v * MICRO + frac;
	}
	return 0;
}

int num_parse(const char *s, uint64_t min, uint64_t max, unsigned int flags,
	      uint64_t *out, char *why, size_t whylen)
{
	const char *what = flags & NUM_MICRO ? "non-negative number" :
			   "non-negative integer";
	const char *p = s;
	char lo[32], hi[32];
	uint64_t v = 0;
	bool ok = true;
	int n = 0, ret;

	if (!s || !*s)
		return fail(why, whylen, what, "empty");
	if (*s == '+' || *s == '-' || *s == ' ' || *s == '\t')
		return fail(why, whylen, what, "no sign or blank");
	if ((flags & NUM_HEX) && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		p += 2;
		ok = digits(&p, 16, &v, &n);
		if (!n || *p)
			return fail(why, whylen, what, "0x must be followed by hex digits only");
	} else if ((ret = dec_parse(s, flags, what, &v, &ok, why, whylen))) {
		return ret;
	}
	range_text(lo, sizeof(lo), min, flags);
	range_text(hi, sizeof(hi), max, flags);
	if (!ok) {
		snprintf(why, whylen, "not a %s below 2^64: out of range %s..%s",
			 what, lo, hi);
		return -ERANGE;
	}
	if (v < min || v > max) {
		snprintf(why, whylen, "out of range %s..%s", lo, hi);
		return -ERANGE;
	}
	*out = v;
	return 0;
}
