/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A small JSON reader for linkem's configuration file.
 *
 * The configuration is a few hundred bytes read once at start-up, so the
 * parser favours clear errors over speed: it builds a tree of nodes, and
 * every lookup helper reports the dotted path of the offending key. There is
 * no JSON library on the reference machine's base install, hence this file.
 */
#ifndef LINKEM_JSON_H
#define LINKEM_JSON_H

#include <stddef.h>

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jnode {
	enum jtype type;
	double num;		/* J_NUM, J_BOOL (0/1) */
	char *str;		/* J_STR */
	char *key;		/* member name when inside an object */
	struct jnode *kids;	/* J_ARR / J_OBJ: first child */
	struct jnode *next;	/* next sibling */
	size_t n;		/* number of children */
};

/* Parse text; on error return NULL and write a message into err. */
struct jnode *json_parse(const char *text, char *err, size_t errlen);
void json_free(struct jnode *n);
struct jnode *json_get(const struct jnode *obj, const char *key);
struct jnode *json_at(const struct jnode *arr, size_t i);

#endif
