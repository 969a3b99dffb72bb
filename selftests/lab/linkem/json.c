// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Recursive-descent JSON parser (RFC 8259 subset: no \u escapes beyond
 * ASCII, which a configuration file never needs). See json.h.
 */
#include "json.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nesting deeper than this is certainly a mistake in a config file. */
#define JSON_MAX_DEPTH 32

struct jp {
	const char *s;
	const char *start;
	char *err;
	size_t errlen;
	int failed;
};

static void jp_fail(struct jp *p, const char *what)
{
	if (p->failed)
		return;
	p->failed = 1;
	snprintf(p->err, p->errlen, "JSON syntax error at offset %ld: %s",
		 (long)(p->s - p->start), what);
}

static void skip_ws(struct jp *p)
{
	while (*p->s && isspace((unsigned char)*p->s))
		p->s++;
}

static struct jnode *new_node(enum jtype t)
{
	struct jnode *n = calloc(1, sizeof(*n));

	if (n)
		n->type = t;
	return n;
}

static char *parse_string_raw(struct jp *p)
{
	size_t cap = 32, len = 0;
	char *out = malloc(cap);

	if (!out || *p->s != '"') {
		free(out);
		jp_fail(p, "expected string");
		return NULL;
	}
	p->s++;
	while (*p->s && *p->s != '"') {
		char c = *p->s++;

		if (c == '\\') {
			c = *p->s++;
			switch (c) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case '"': case '\\': case '/': break;
			default:
				free(out);
				jp_fail(p, "unsupported escape");
				return NULL;
			}
		}
		if (len + 2 > cap) {
			char *o = realloc(out, cap *= 2);

			if (!o) {
				free(out);
				jp_fail(p, "out of memory");
				return NULL;
			}
			out = o;
		}
		out[len++] = c;
	}
	if (*p->s != '"') {
		free(out);
		jp_fail(p, "unterminated string");
		return NULL;
	}
	p->s++;
	out[len] = 0;
	return out;
}

static struct jnode *parse_value(struct jp *p, int depth);

static struct jnode *parse_container(struct jp *p, int depth, int is_obj)
{
	struct jnode *n = new_node(is_obj ? J_OBJ : J_ARR), **tail;
	char close = is_obj ? '}' : ']';

	if (!n) {
		jp_fail(p, "out of memory");
		return NULL;
	}
	tail = &n->kids;
	p->s++;
	skip_ws(p);
	if (*p->s == close) {
		p->s++;
		return n;
	}
	for (;;) {
		char *key = NULL;
		struct jnode *v;

		skip_ws(p);
		if (is_obj) {
			key = parse_string_raw(p);
			if (!key)
				break;
			skip_ws(p);
			if (*p->s != ':') {
				free(key);
				jp_fail(p, "expected ':'");
				break;
			}
			p->s++;
		}
		v = parse_value(p, depth + 1);
		if (!v) {
			free(key);
			break;
		}
		v->key = key;
		*tail = v;
		tail = &v->next;
		n->n++;
		skip_ws(p);
		if (*p->s == ',') {
			p->s++;
			continue;
		}
		if (*p->s == close) {
			p->s++;
			return n;
		}
		jp_fail(p, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
		break;
	}
	json_free(n);
	return NULL;
}

static struct jnode *parse_value(struct jp *p, int depth)
{
	struct jnode *n;

	if (depth > JSON_MAX_DEPTH) {
		jp_fail(p, "nesting too deep");
		return NULL;
	}
	skip_ws(p);
	switch (*p->s) {
	case '{':
		return parse_container(p, depth, 1);
	case '[':
		return parse_container(p, depth, 0);
	case '"':
		n = new_node(J_STR);
		if (!n || !(n->str = parse_string_raw(p))) {
			free(n);
			jp_fail(p, "bad string");
			return NULL;
		}
		return n;
	}
	if (!strncmp(p->s, "null", 4)) {
		p->s += 4;
		return new_node(J_NULL);
	}
	if (!strncmp(p->s, "true", 4) || !strncmp(p->s, "false", 5)) {
		n = new_node(J_BOOL);
		if (n)
			n->num = p->s[0] == 't';
		p->s += p->s[0] == 't' ? 4 : 5;
		return n;
	}
	if (*p->s == '-' || isdigit((unsigned char)*p->s)) {
		char *end;
		double v = strtod(p->s, &end);

		if (end == p->s) {
			jp_fail(p, "bad number");
			return NULL;
		}
		p->s = end;
		n = new_node(J_NUM);
		if (n)
			n->num = v;
		return n;
	}
	jp_fail(p, "unexpected character");
	return NULL;
}

struct jnode *json_parse(const char *text, char *err, size_t errlen)
{
	struct jp p = { .s = text, .start = text, .err = err, .errlen = errlen };
	struct jnode *n = parse_value(&p, 0);

	if (n) {
		skip_ws(&p);
		if (*p.s) {
			jp_fail(&p, "trailing characters");
			json_free(n);
			return NULL;
		}
	}
	return n;
}

void json_free(struct jnode *n)
{
	while (n) {
		struct jnode *next = n->next;

		json_free(n->kids);
		free(n->str);
		free(n->key);
		free(n);
		n = next;
	}
}

struct jnode *json_get(const struct jnode *obj, const char *key)
{
	struct jnode *k;

	if (!obj || obj->type != J_OBJ)
		return NULL;
	for (k = obj->kids; k; k = k->next)
		if (!strcmp(k->key, key))
			return k;
	return NULL;
}

struct jnode *json_at(const struct jnode *arr, size_t i)
{
	struct jnode *k = arr ? arr->kids : NULL;

	while (k && i--)
		k = k->next;
	return k;
}
