/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * bbrctl's --json output, built with jansson: a command builds one JSON
 * value and js_print() writes it (compact, or indented with --pretty).
 */
#ifndef BBRCTL_JSON_H
#define BBRCTL_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

/* A number. jansson's integers are signed 64-bit: a larger value (only an
 * unlimited pacing rate, ~0, gets that far) is written as a real. */
json_t *js_u64(uint64_t v);
/* A string; bytes that are not UTF-8 become U+FFFD (jansson takes only
 * UTF-8, and a cgroup path or netns name may be anything). NULL: "". */
json_t *js_str(const char *s);

/* obj[key] = v, taking v's reference (as json_object_set_new). */
void js_set(json_t *obj, const char *key, json_t *v);
void js_set_u64(json_t *obj, const char *key, uint64_t v);
void js_set_i64(json_t *obj, const char *key, int64_t v);
void js_set_str(json_t *obj, const char *key, const char *s);
void js_set_bool(json_t *obj, const char *key, bool v);

/* Write doc and a newline on f (compact, or indented with --pretty), flush,
 * and drop the reference; -1 with a message if it could not be written. */
int js_write(FILE *f, json_t *doc, bool pretty);
/* The same on stdout with the command line's --pretty. */
int js_print(json_t *doc);

#endif /* BBRCTL_JSON_H */
