// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Streaming JSON writer; see json.h. */
#include <math.h>
#include <inttypes.h>
#include <string.h>

#include "json.h"

void json_init(struct json *j, FILE *out, bool pretty)
{
	memset(j, 0, sizeof(*j));
	j->out = out;
	j->pretty = pretty;
}

int json_end(struct json *j)
{
	if (j->depth != 0 || j->after_key)
		j->error = true;
	fputc('\n', j->out);
	if (fflush(j->out) != 0 || ferror(j->out))
		return -1;
	return j->error ? -1 : 0;
}

static void newline_indent(struct json *j)
{
	if (!j->pretty)
		return;
	fputc('\n', j->out);
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->out);
}

/* Called before every value and every key. */
static void before_item(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->depth > 0) {
		if (j->need_comma[j->depth])
			fputc(',', j->out);
		j->need_comma[j->depth] = true;
		newline_indent(j);
	}
}

static void push(struct json *j, char c)
{
	before_item(j);
	fputc(c, j->out);
	if (j->depth + 1 >= JSON_MAX_DEPTH) {
		j->error = true;
		return;
	}
	j->depth++;
	j->need_comma[j->depth] = false;
}

static void pop(struct json *j, char c)
{
	bool had_items;

	if (j->depth <= 0 || j->after_key) {
		j->error = true;
		return;
	}
	had_items = j->need_comma[j->depth];
	j->depth--;
	if (had_items)
		newline_indent(j);
	fputc(c, j->out);
}

void json_begin_object(struct json *j) { push(j, '{'); }
void json_end_object(struct json *j) { pop(j, '}'); }
void json_begin_array(struct json *j) { push(j, '['); }
void json_end_array(struct json *j) { pop(j, ']'); }

/* Length of the valid UTF-8 sequence starting at s, 0 if invalid. */
static size_t utf8_seq_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		n = 2; cp = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3; cp = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4; cp = c & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	/* overlong, surrogate or out of range */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

void json_write_escaped(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', out);
	while (*s) {
		unsigned char c = *s;
		size_t n;

		switch (c) {
		case '"':  fputs("\\\"", out); s++; continue;
		case '\\': fputs("\\\\", out); s++; continue;
		case '\b': fputs("\\b", out); s++; continue;
		case '\f': fputs("\\f", out); s++; continue;
		case '\n': fputs("\\n", out); s++; continue;
		case '\r': fputs("\\r", out); s++; continue;
		case '\t': fputs("\\t", out); s++; continue;
		default: break;
		}
		if (c < 0x20 || c == 0x7F) {
			fprintf(out, "\\u%04x", c);
			s++;
			continue;
		}
		n = utf8_seq_len(s);
		if (n == 0) {
			fputs("\\ufffd", out);
			s++;
			continue;
		}
		fwrite(s, 1, n, out);
		s += n;
	}
	fputc('"', out);
}

void json_key(struct json *j, const char *key)
{
	if (j->after_key || j->depth == 0)
		j->error = true;
	before_item(j);
	json_write_escaped(j->out, key);
	fputs(j->pretty ? ": " : ":", j->out);
	j->after_key = true;
}

void json_string(struct json *j, const char *s)
{
	before_item(j);
	json_write_escaped(j->out, s ? s : "");
}

void json_u64(struct json *j, uint64_t v)
{
	before_item(j);
	fprintf(j->out, "%" PRIu64, v);
}

void json_i64(struct json *j, int64_t v)
{
	before_item(j);
	fprintf(j->out, "%" PRId64, v);
}

void json_double(struct json *j, double v)
{
	before_item(j);
	if (!isfinite(v))
		fputs("null", j->out);
	else
		fprintf(j->out, "%.10g", v);
}

void json_bool(struct json *j, bool v)
{
	before_item(j);
	fputs(v ? "true" : "false", j->out);
}

void json_null(struct json *j)
{
	before_item(j);
	fputs("null", j->out);
}

void json_kv_string(struct json *j, const char *k, const char *s) { json_key(j, k); json_string(j, s); }
void json_kv_u64(struct json *j, const char *k, uint64_t v) { json_key(j, k); json_u64(j, v); }
void json_kv_i64(struct json *j, const char *k, int64_t v) { json_key(j, k); json_i64(j, v); }
void json_kv_double(struct json *j, const char *k, double v) { json_key(j, k); json_double(j, v); }
void json_kv_bool(struct json *j, const char *k, bool v) { json_key(j, k); json_bool(j, v); }
void json_kv_null(struct json *j, const char *k) { json_key(j, k); json_null(j); }
