/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A small streaming JSON writer for bbrctl's --json output.
 *
 * The writer tracks nesting and inserts commas itself, so callers only say
 * what comes next. Strings are escaped per RFC 8259: quote, backslash and
 * every control character; bytes >= 0x80 pass through (our strings are
 * ASCII names and addresses; invalid UTF-8 is replaced by U+FFFD escapes).
 */
#ifndef BBRCTL_JSON_H
#define BBRCTL_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *out;
	int depth;
	bool pretty;
	bool need_comma[JSON_MAX_DEPTH];
	bool after_key;		/* a key was written, the value comes next */
	bool error;		/* nesting misuse; checked by json_end() */
};

void json_init(struct json *j, FILE *out, bool pretty);
/* Flushes and returns 0 if the document was well formed and written. */
int json_end(struct json *j);

void json_begin_object(struct json *j);
void json_end_object(struct json *j);
void json_begin_array(struct json *j);
void json_end_array(struct json *j);

void json_key(struct json *j, const char *key);
void json_string(struct json *j, const char *s);
void json_u64(struct json *j, uint64_t v);
void json_i64(struct json *j, int64_t v);
/* Non-finite values are written as null (JSON has no NaN/Inf). */
void json_double(struct json *j, double v);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);

/* key + value shorthands */
void json_kv_string(struct json *j, const char *key, const char *s);
void json_kv_u64(struct json *j, const char *key, uint64_t v);
void json_kv_i64(struct json *j, const char *key, int64_t v);
void json_kv_double(struct json *j, const char *key, double v);
void json_kv_bool(struct json *j, const char *key, bool v);
void json_kv_null(struct json *j, const char *key);

/* Escape s into a JSON string literal (with quotes) on out. */
void json_write_escaped(FILE *out, const char *s);

#endif /* BBRCTL_JSON_H */
