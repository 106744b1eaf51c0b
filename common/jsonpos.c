// SPDX-License-Identifier: MIT
/* Source positions of JSON values: a minimal scanner that walks the raw text
 * along a path, for FILE:LINE:COL in the errors of the daemon's configuration
 * (daemon/configparse.c) and of justbench's scenarios (tools/bench_scenario.c).
 * May call: libc and jansson's types only; nothing of daemon/, tools/ or shim/. */
#include "jsonpos.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

struct scan {
	const char *s;
	size_t len;
	size_t i;
};

static int peek(const struct scan *sc)
{
	return sc->i < sc->len ? (unsigned char)sc->s[sc->i] : -1;
}

static void skip_ws(struct scan *sc)
{
	int c;

	while ((c = peek(sc)) == ' ' || c == '\t' || c == '\n' || c == '\r')
		sc->i++;
}

static int hex4(struct scan *sc, uint32_t *out)
{
	uint32_t v = 0;

	if (sc->len - sc->i < 4)
		return -1;
	for (int k = 0; k < 4; k++) {
		char c = sc->s[sc->i++];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static size_t utf8_encode(uint32_t cp, unsigned char *b)
{
	if (cp < 0x80) {
		b[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		b[0] = (unsigned char)(0xc0 | cp >> 6);
		b[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		b[0] = (unsigned char)(0xe0 | cp >> 12);
		b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	b[0] = (unsigned char)(0xf0 | cp >> 18);
	b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
	b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
	b[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A \u escape after the "\u" itself; a surrogate pair becomes one code point. */
static int unicode_escape(struct scan *sc, uint32_t *cp)
{
	size_t save;
	uint32_t lo;

	if (hex4(sc, cp))
		return -1;
	if (*cp < 0xd800 || *cp > 0xdbff || sc->len - sc->i < 6 || sc->s[sc->i] != '\\' ||
	    sc->s[sc->i + 1] != 'u')
		return 0;
	save = sc->i;
	sc->i += 2;
	if (hex4(sc, &lo) || lo < 0xdc00 || lo > 0xdfff) {
		sc->i = save;
		return 0;
	}
	*cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
	return 0;
}

/*
 * Consumes the string starting at sc->i (a '"').  Returns 1 if its decoded value equals name,
 * 0 if not (or name is NULL), -1 if it is malformed.
 */
static int scan_string(struct scan *sc, const char *name)
{
	size_t nlen = name ? strlen(name) : 0, k = 0;
	bool match = name != NULL;

	sc->i++;
	while (sc->i < sc->len) {
		unsigned char buf[4];
		size_t n = 1;
		char c = sc->s[sc->i++];
		uint32_t cp;

		if (c == '"')
			return match && k == nlen;
		if ((unsigned char)c < 0x20)
			return -1;
		buf[0] = (unsigned char)c;
		if (c == '\\') {
			if (sc->i >= sc->len)
				return -1;
			switch (c = sc->s[sc->i++]) {
			case '"':
			case '\\':
			case '/':
				buf[0] = (unsigned char)c;
				break;
			case 'b':
				buf[0] = '\b';
				break;
			case 'f':
				buf[0] = '\f';
				break;
			case 'n':
				buf[0] = '\n';
				break;
			case 'r':
				buf[0] = '\r';
				break;
			case 't':
				buf[0] = '\t';
				break;
			case 'u':
				if (unicode_escape(sc, &cp))
					return -1;
				n = utf8_encode(cp, buf);
				break;
			default:
				return -1;
			}
		}
		if (match && (k + n > nlen || memcmp(name + k, buf, n) != 0))
			match = false;
		k += n;
	}
	return -1;
}

/* Consumes one value of any kind; structure inside containers is trusted, not checked. */
static int skip_value(struct scan *sc)
{
	size_t nest = 0;

	do {
		int c;

		skip_ws(sc);
		c = peek(sc);
		if (c < 0)
			return -1;
		if (c == '"') {
			if (scan_string(sc, NULL) < 0)
				return -1;
		} else if (c == '{' || c == '[') {
			nest++;
			sc->i++;
		} else if (c == '}' || c == ']') {
			if (!nest)
				return -1;
			nest--;
			sc->i++;
		} else if (c == ',' || c == ':') {
			if (!nest)
				return -1;
			sc->i++;
		} else {
			size_t start = sc->i;

			while ((c = peek(sc)) > 0 && !strchr(" \t\r\n{}[],:\"", c))
				sc->i++;
			if (sc->i == start)
				return -1;
		}
	} while (nest);
	return 0;
}

int jsonpos_find(const char *text, size_t len, const struct jsonpos_seg *path, size_t depth,
		 bool want_key, struct jsonpos *out)
{
	struct scan sc = { .s = text, .len = len };

	for (;; path++, depth--) {
		skip_ws(&sc);
		if (depth == 0)
			break;
		if (path->key) {
			int m;

			if (peek(&sc) != '{')
				return -ENOENT;
			sc.i++;
			for (;;) {
				size_t at;

				skip_ws(&sc);
				at = sc.i;
				if (peek(&sc) != '"' || (m = scan_string(&sc, path->key)) < 0)
					return -ENOENT;
				skip_ws(&sc);
				if (peek(&sc) != ':')
					return -ENOENT;
				sc.i++;
				if (m && depth == 1 && want_key) {
					jsonpos_from_offset(text, len, at, out);
					return 0;
				}
				if (m)
					break;
				if (skip_value(&sc))
					return -ENOENT;
				skip_ws(&sc);
				if (peek(&sc) != ',')
					return -ENOENT;
				sc.i++;
			}
		} else {
			if (peek(&sc) != '[')
				return -ENOENT;
			sc.i++;
			for (size_t n = 0; n < path->index; n++) {
				if (skip_value(&sc))
					return -ENOENT;
				skip_ws(&sc);
				if (peek(&sc) != ',')
					return -ENOENT;
				sc.i++;
			}
			skip_ws(&sc);
			if (peek(&sc) == ']')
				return -ENOENT;
		}
	}
	if (sc.i >= len)
		return -ENOENT;
	jsonpos_from_offset(text, len, sc.i, out);
	return 0;
}

void jsonpos_from_offset(const char *text, size_t len, size_t offset, struct jsonpos *out)
{
	size_t bol = 0;

	if (offset > len)
		offset = len;
	out->line = 1;
	for (size_t i = 0; i < offset; i++) {
		if (text[i] == '\n') {
			out->line++;
			bol = i + 1;
		}
	}
	out->col = (unsigned)(offset - bol + 1);
	out->offset = offset;
}

size_t jsonpos_syntax_offset(const char *text, size_t len, const json_error_t *je)
{
	size_t pos = je->position > 0 ? (size_t)je->position : 0, tl;
	const char *near = strstr(je->text, " near '");

	if (pos > len)
		pos = len;
	if (near) {
		near += strlen(" near '");
		tl = strlen(near);
		if (tl > 1 && near[tl - 1] == '\'' && tl - 1 <= pos &&
		    memcmp(text + pos - (tl - 1), near, tl - 1) == 0)
			return pos - (tl - 1);
	}
	if (strstr(je->text, "near end of file"))
		return pos;
	return pos ? pos - 1 : 0;
}
