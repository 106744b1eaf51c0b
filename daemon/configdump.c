// SPDX-License-Identifier: MIT
/* The effective configuration, printed (justitiad --check-config): the
 * schema's tables walked again, so that every key that can be read is also
 * written, with the values in force (defaults included).
 * May call: config.c (the schema), configparse (values as stored). */
#include "configschema.h"

#include <stdio.h>
#include <string.h>

static json_t *dump_section(const struct section *s, const void *base, const struct config *c);

static json_t *dump_value(const struct field *f, const void *p, const struct config *c,
			  bool *leave_out)
{
	char buf[32];
	long long i;

	*leave_out = false;
	switch (f->type) {
	case T_INT:
		return json_integer(configparse_load_int(p, f->size, f->min < 0));
	case T_BOOL:
		return json_boolean(*(const bool *)p);
	case T_REAL:
		return json_real(*(const double *)p);
	case T_RATE:
		if (!*(const uint64_t *)p)
			return json_string("auto");
		config_format_rate(*(const uint64_t *)p, buf, sizeof(buf));
		return json_string(buf);
	case T_STR:
	case T_PATH:
		if (*(const char *)p || !(f->flags & (F_NULL | F_OPT)))
			return json_string(p);
		*leave_out = f->flags & F_OPT;
		return json_null();
	case T_ENUM:
		i = configparse_load_int(p, f->size, false);
		return i >= 0 && (size_t)i < configparse_name_count(f->names)
			   ? json_string(f->names[i])
			   : NULL;
	case T_OBJ:
		return dump_section(f->sub, p, c);
	case T_ARR: {
		json_t *a = json_array();
		const char *elems;
		size_t n;

		memcpy(&elems, (const char *)c + f->arr_off, sizeof(elems));
		memcpy(&n, (const char *)c + f->count_off, sizeof(n));
		for (size_t k = 0; a && k < n; k++) {
			if (json_array_append_new(a, dump_section(f->sub, elems + k * f->sub->size,
								  c))) {
				json_decref(a);
				return NULL;
			}
		}
		return a;
	}
	case T_FN:
		return f->dump(p, leave_out);
	}
	return NULL;
}

/* The members of s at base, NULL on failure (out of memory, or a string that is not UTF-8). */
static json_t *dump_section(const struct section *s, const void *base, const struct config *c)
{
	json_t *o = json_object(), *v;
	bool leave_out;

	for (size_t i = 0; o && i < s->n; i++) {
		const struct field *f = &s->fields[i];

		v = dump_value(f, (const char *)base + f->off, c, &leave_out);
		if (v && leave_out) {
			json_decref(v);
			continue;
		}
		if (json_object_set_new(o, f->key, v)) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

int config_dump(FILE *f, const struct config *c)
{
	json_t *root = dump_section(config_schema(), c, c);
	int rc;

	if (!root)
		return -EINVAL;
	rc = json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (rc || fputc('\n', f) == EOF)
		return -EIO;
	return 0;
}

