/* SPDX-License-Identifier: MIT */
/*
 * Source positions of JSON values.
 *
 * jansson reports line and column for syntax errors only; once a document is decoded its values
 * carry no position.  jsonpos_find() answers "where in the text is the value (or the member name)
 * at this path?" by scanning the raw text along the path, so semantic errors can say
 * FILE:LINE:COL.  The path is a JSON pointer (RFC 6901) already split into steps, with member
 * names decoded, so names containing '/', '~' or escapes need no quoting.
 *
 * Lines and columns are 1-based; columns count bytes.  The scanner never allocates, reads only
 * text[0..len), and is meant for text jansson accepted; on anything else it fails cleanly.
 */
#ifndef JUSTITIA_COMMON_JSONPOS_H
#define JUSTITIA_COMMON_JSONPOS_H

#include <stdbool.h>
#include <jansson.h>
#include <stddef.h>

/* One step of a path: the member `key` of an object, or element `index` of an array. */
struct jsonpos_seg {
	const char *key; /* decoded member name; NULL for an array element */
	size_t index;
};

struct jsonpos {
	unsigned line;
	unsigned col;
	size_t offset; /* byte offset in the text */
};

/*
 * Finds the value at path[0..depth) (depth 0: the top-level value), or with want_key the member
 * name of the last step (its opening quote; the last step must then be a member).
 * Returns 0, or -ENOENT if there is no such value or the text is not well-formed JSON.
 */
int jsonpos_find(const char *text, size_t len, const struct jsonpos_seg *path, size_t depth,
		 bool want_key, struct jsonpos *out);

/* Line and column of byte `offset` (clamped to len; offset len is just past the last byte). */
void jsonpos_from_offset(const char *text, size_t len, size_t offset, struct jsonpos *out);
/* Byte offset of a jansson syntax error in @text: jansson's position is just
 * past the offending token; this is the token's start when the error text
 * names it and the text confirms it. */
size_t jsonpos_syntax_offset(const char *text, size_t len, const json_error_t *je);

#endif
