// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* bbrctl's JSON output through jansson; see json.h. */
#include <stdlib.h>
#include <string.h>

#include "bbrctl.h"

json_t *js_u64(uint64_t v)
{
	return v <= INT64_MAX ? json_integer((json_int_t)v) : json_real((double)v);
}

/* Length of the valid UTF-8 sequence at s, 0 if there is none (bad
 * continuation, overlong, surrogate or beyond U+10FFFF). */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 :
		   c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
	uint32_t cp = n > 1 ? c & (0x7Fu >> n) : c;

	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

json_t *js_str(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	json_t *v = json_string((const char *)p);
	char *clean, *q;

	if (v)
		return v;
	/* not UTF-8: U+FFFD (3 bytes) for each byte that starts no sequence */
	clean = malloc(3 * strlen((const char *)p) + 1);
	if (!clean)
		return NULL;
	for (q = clean; *p;) {
		size_t n = utf8_len(p);

		if (n) {
			memcpy(q, p, n);
			q += n;
			p += n;
		} else {
			memcpy(q, "\xEF\xBF\xBD", 3);
			q += 3;
			p++;
		}
	}
	*q = '\0';
	v = json_string(clean);
	free(clean);
	return v;
}

void js_set(json_t *obj, const char *key, json_t *v)
{
	json_object_set_new(obj, key, v ? v : json_null());
}

void js_set_u64(json_t *obj, const char *key, uint64_t v)
{
	js_set(obj, key, js_u64(v));
}

void js_set_i64(json_t *obj, const char *key, int64_t v)
{
	js_set(obj, key, json_integer(v));
}

void js_set_str(json_t *obj, const char *key, const char *s)
{
	js_set(obj, key, js_str(s));
}

void js_set_bool(json_t *obj, const char *key, bool v)
{
	js_set(obj, key, json_boolean(v));
}

int js_write(FILE *f, json_t *doc, bool pretty)
{
	size_t flags = (pretty ? JSON_INDENT(2) : JSON_COMPACT) | JSON_REAL_PRECISION(17);
	int ret = doc ? json_dumpf(doc, f, flags) : -1;

	json_decref(doc);
	if (ret || fputc('\n', f) == EOF || fflush(f)) {
		err("writing JSON output failed");
		return -1;
	}
	return 0;
}

int js_print(json_t *doc)
{
	return js_write(stdout, doc, g_opts.pretty);
}
