/* SPDX-License-Identifier: MIT */
/*
 * Blueprint parser (format: blueprints/README.md).
 *
 * Reads libyaml's event stream, not its document tree: the events carry
 * the marks we need for "PATH:LINE:COL" and show anchors, aliases and tags
 * so they can be refused before anything is built from them. Parsing stops
 * at the first error, so hostile input (deep nesting, alias bombs, a huge
 * scalar) is never walked further than one unexpected event. The result is
 * written to the caller's struct only when the whole file is valid.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "blueprint.h"

#define BP_FILE_MAX		 (64 * 1024) /* bytes; larger files are refused */
#define BP_SMS_MAX		 1024
#define BP_SLICES_MAX		 64
#define BP_GPU_MAX		 15
#define BP_MEMORY_MAX		 (1ull << 50) /* 1 PiB */
#define BP_TIME_LIMIT_MAX_MS	 (24u * 3600u * 1000u)
#define BP_TIME_LIMIT_DEFAULT_MS 10000u
#define BP_SAVE_INTERVAL_MIN_MS	 100u
#define BP_SAVE_INTERVAL_MAX_MS	 (24u * 3600u * 1000u)
#define BP_WEIGHT_MAX		 1000
#define BP_ID_MAX		 4294967294ull /* (uid_t)-1 means "none" */
#define BP_QUOTE_MAX		 40 /* characters of a value shown in errors */

enum bp_field {
	BP_VERSION,
	BP_NAME,
	BP_CONSUMER,
	BP_GPU,
	BP_SMS,
	BP_SLICES,
	BP_MEMORY,
	BP_ISOLATION,
	BP_TIME_LIMIT,
	BP_MIN_SMS,
	BP_MAX_SMS,
	BP_WEIGHT,
	BP_PRIORITY,
	BP_RECOVERY,
	BP_SWAP,
	BP_NFIELDS,
};

static const char *const bp_field_names[BP_NFIELDS] = {
	[BP_VERSION] = "version",
	[BP_NAME] = "name",
	[BP_CONSUMER] = "consumer",
	[BP_GPU] = "gpu",
	[BP_SMS] = "sms",
	[BP_SLICES] = "slices",
	[BP_MEMORY] = "memory",
	[BP_ISOLATION] = "isolation",
	[BP_TIME_LIMIT] = "kernel_time_limit",
	[BP_MIN_SMS] = "min_sms",
	[BP_MAX_SMS] = "max_sms",
	[BP_WEIGHT] = "weight",
	[BP_PRIORITY] = "priority",
	[BP_RECOVERY] = "recovery",
	[BP_SWAP] = "swap",
};

#define BP_KNOWN_FIELDS                                                        \
	"version, name, consumer, gpu, sms, slices, memory, isolation, "       \
	"kernel_time_limit, min_sms, max_sms, weight, priority, recovery, "    \
	"swap"

/* Fields a later stage will act on: refused, saying when they come. */
static const struct {
	const char *name;
	const char *when;
} bp_future_fields[] = {
	{"mdev", "VM devices come with the VM path"},
	{"display", "VM devices come with the VM path"},
	{"heads", "VM devices come with the VM path"},
	{"profile", "workload settings come with workload profiles"},
	{"workload", "workload settings come with workload profiles"},
};

/* Fields that belong elsewhere: refused, saying where. */
static const struct {
	const char *name;
	const char *where;
} bp_misplaced_fields[] = {
	{"policy", "a GPU's scheduling policy is set with 'vgpu-admin policy "
		   "--gpu N --mode static|fair|priority'; a blueprint sets "
		   "min_sms, max_sms, weight and priority"},
	{"scheduling", "a GPU's scheduling policy is set with 'vgpu-admin "
		       "policy --gpu N --mode static|fair|priority'; a "
		       "blueprint sets min_sms, max_sms, weight and priority"},
};

/* The "(what is allowed)" part of each field's value errors. */
#define BP_ALLOW_VERSION "this build reads version 1"
#define BP_ALLOW_NAME	 "1 to 63 of A-Z a-z 0-9 _ . -, not '.' or '..'"
#define BP_ALLOW_CONSUMER                                                      \
	"a mapping with one of user or group, e.g. "                           \
	"'consumer: {user: alice}'; leave it out for the creating admin"
#define BP_ALLOW_ID                                                            \
	"a name of a-z 0-9 _ - starting with a-z or _, up to 63 characters, "  \
	"or a number up to 4294967294"
#define BP_ALLOW_GPU	      "any, or a device index 0 to 15"
#define BP_ALLOW_SMS	      "1 to 1024 SMs"
#define BP_ALLOW_SLICES	      "1 to 64 SM groups"
#define BP_ALLOW_MEMORY	      "use bytes or a K, M, G or T suffix"
#define BP_ALLOW_MEMORY_RANGE "1 byte to 1024T"
#define BP_ALLOW_ISOLATION    "shared or exclusive"
#define BP_ALLOW_LIMIT_SMS    "1 to 1024 SMs"
#define BP_ALLOW_WEIGHT	      "1 to 1000"
#define BP_ALLOW_PRIORITY     "low, normal or high"
#define BP_ALLOW_SWAP	      "allowed, never, or gpu: as its GPU says"
#define BP_ALLOW_RECOVERY                                                      \
	"'recovery: {save_interval: 10s}': a duration of 100ms to 24h "        \
	"(ms, s or m suffix), or 0 for none"
#define BP_ALLOW_TIME                                                          \
	"a number of seconds, or a ms, s or m suffix, at most 24h = 86400s; "  \
	"0 = none"

/* One parse: the libyaml parser, where errors go, and what was seen. */
struct bp_parser {
	yaml_parser_t yaml;
	const char *origin;
	const unsigned char *text;
	size_t len;
	char *err;
	size_t errlen;
	struct blueprint bp;
	size_t seen_line[BP_NFIELDS]; /* 1-based line of the key; 0 = unseen */
};

/* A scalar value as libyaml hands it: not NUL-safe, so carry the length. */
struct bp_value {
	const char *s;
	size_t n;
	yaml_mark_t mark;
};

/*
 * Copy a value or key for an error message: at most BP_QUOTE_MAX
 * characters, anything but printable ASCII shown as '?', so a hostile file
 * cannot put control bytes into a terminal or a log.
 */
static void bp_quote(const char *s, size_t n, char *out, size_t outlen)
{
	size_t i, o = 0;

	for (i = 0; i < n && i < BP_QUOTE_MAX && o + 1 < outlen; i++) {
		unsigned char c = (unsigned char)s[i];

		out[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	if (i < n && o + 4 < outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

/* Write "ORIGIN:LINE:COL: message" (1-based) into the caller's buffer. */
static int bp_fail_at(struct bp_parser *p, size_t line, size_t col,
		      const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!p->err || !p->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(p->err, p->errlen, "%s:%zu:%zu: %s", p->origin, line, col,
		 msg);
	return -1;
}

#define bp_fail(p, mark, ...)                                                  \
	bp_fail_at((p), (mark).line + 1, (mark).column + 1, __VA_ARGS__)

/* "field 'F': 'V' WHAT (ALLOWED)", or "no value" when V is empty. */
static int bp_bad_value(struct bp_parser *p, const char *field,
			const struct bp_value *v, const char *what,
			const char *allowed)
{
	char q[BP_QUOTE_MAX + 8];

	if (!v->n)
		return bp_fail(p, v->mark, "field '%s': no value given (%s)",
			       field, allowed);
	bp_quote(v->s, v->n, q, sizeof(q));
	return bp_fail(p, v->mark, "field '%s': '%s' %s (%s)", field, q, what,
		       allowed);
}

/* Line and column of a byte offset: libyaml's reader errors give only it. */
static void bp_offset_mark(const struct bp_parser *p, size_t offset,
			   size_t *line, size_t *col)
{
	size_t i;

	*line = 1;
	*col = 1;
	if (offset > p->len)
		offset = p->len;
	for (i = 0; i < offset; i++) {
		if (p->text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* Turn libyaml's error state into "ORIGIN:L:C: YAML syntax error: ...". */
static int bp_syntax_error(struct bp_parser *p)
{
	const yaml_parser_t *y = &p->yaml;
	const char *problem = y->problem ? y->problem : "unknown error";
	const char *context = y->context ? y->context : "";
	const char *sep = y->context ? " " : "";
	size_t line, col;

	switch (y->error) {
	case YAML_MEMORY_ERROR:
		return bp_fail_at(p, 1, 1, "out of memory while parsing");
	case YAML_READER_ERROR:
		bp_offset_mark(p, y->problem_offset, &line, &col);
		return bp_fail_at(p, line, col, "YAML syntax error: %s",
				  problem);
	default:
		/* where the construct started helps when it is elsewhere */
		if (y->context && y->context_mark.line != y->problem_mark.line)
			return bp_fail(p, y->problem_mark,
				       "YAML syntax error: %s %s (from line "
				       "%zu, column %zu)",
				       problem, context,
				       y->context_mark.line + 1,
				       y->context_mark.column + 1);
		return bp_fail(p, y->problem_mark, "YAML syntax error: %s%s%s",
			       problem, sep, context);
	}
}

/*
 * Next event, with everything a blueprint never uses refused: aliases,
 * anchors and tags. field names what the event belongs to (or NULL) for
 * the message. On success the caller owns ev and must yaml_event_delete it.
 */
static int bp_next(struct bp_parser *p, yaml_event_t *ev, const char *field)
{
	const yaml_char_t *anchor = NULL, *tag = NULL;
	char where[96] = "";
	char q[BP_QUOTE_MAX + 8];

	if (!yaml_parser_parse(&p->yaml, ev))
		return bp_syntax_error(p);
	if (field)
		snprintf(where, sizeof(where), "field '%s': ", field);

	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		anchor = ev->data.alias.anchor;
		bp_quote((const char *)anchor, strlen((const char *)anchor), q,
			 sizeof(q));
		bp_fail(p, ev->start_mark,
			"%salias '*%s' is not allowed (write the value out)",
			where, q);
		yaml_event_delete(ev);
		return -1;
	case YAML_SCALAR_EVENT:
		anchor = ev->data.scalar.anchor;
		tag = ev->data.scalar.tag;
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = ev->data.sequence_start.anchor;
		tag = ev->data.sequence_start.tag;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = ev->data.mapping_start.anchor;
		tag = ev->data.mapping_start.tag;
		break;
	default:
		break;
	}
	if (anchor) {
		bp_quote((const char *)anchor, strlen((const char *)anchor), q,
			 sizeof(q));
		bp_fail(p, ev->start_mark,
			"%sanchor '&%s' is not allowed (write values out)",
			where, q);
		yaml_event_delete(ev);
		return -1;
	}
	if (tag) {
		bp_quote((const char *)tag, strlen((const char *)tag), q,
			 sizeof(q));
		bp_fail(p, ev->start_mark,
			"%stag '%s' is not allowed (write plain values)", where,
			q);
		yaml_event_delete(ev);
		return -1;
	}
	return 0;
}

/* What a non-scalar event is, for "expected a single value, not ...". */
static const char *bp_event_kind(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_SEQUENCE_START_EVENT:
		return "a list";
	case YAML_MAPPING_START_EVENT:
		return "a mapping";
	default:
		return "something else";
	}
}

/* Does the value equal the NUL-terminated word? */
static bool bp_is(const struct bp_value *v, const char *word)
{
	return v->n == strlen(word) && !memcmp(v->s, word, v->n);
}

/*
 * Leading decimal digits of s[0..n): how many, and their value (saturated
 * at UINT64_MAX, so a long run of digits cannot wrap into range). A number
 * with a leading zero counts as no digits: YAML 1.1 reads 010 as octal 8,
 * and a blueprint never means that.
 */
static size_t bp_digits(const char *s, size_t n, uint64_t *val)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
	}
	if (i > 1 && s[0] == '0')
		return 0;
	*val = v;
	return i;
}

/* A whole value that is a plain decimal number; false otherwise. */
static bool bp_number(const struct bp_value *v, uint64_t *out)
{
	return v->n && bp_digits(v->s, v->n, out) == v->n;
}

static int bp_set_version(struct bp_parser *p, const struct bp_value *v)
{
	uint64_t n;

	if (!bp_number(v, &n))
		return bp_bad_value(p, "version", v, "is not a version number",
				    BP_ALLOW_VERSION);
	if (n != BLUEPRINT_VERSION)
		return bp_bad_value(p, "version", v, "is not supported",
				    BP_ALLOW_VERSION);
	return 0;
}

static bool bp_name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

static int bp_set_name(struct bp_parser *p, const struct bp_value *v)
{
	size_t i;

	/* "." and ".." would be path components if a name ever names a file */
	if (!v->n || v->n >= VGPU_NAME_MAX || bp_is(v, ".") || bp_is(v, ".."))
		goto bad;
	for (i = 0; i < v->n; i++)
		if (!bp_name_char(v->s[i]))
			goto bad;
	memcpy(p->bp.name, v->s, v->n);
	p->bp.name[v->n] = '\0';
	return 0;
bad:
	return bp_bad_value(p, "name", v, "is not a valid name", BP_ALLOW_NAME);
}

/* The shape of a user or group: a name as useradd allows, or a number. */
static int bp_set_id(struct bp_parser *p, const char *field, uint32_t kind,
		     const struct bp_value *v)
{
	uint64_t n;
	size_t i;

	if (v->n && v->s[0] >= '0' && v->s[0] <= '9') {
		if (!bp_number(v, &n))
			return bp_bad_value(p, field, v, "is not a number",
					    BP_ALLOW_ID);
		if (n > BP_ID_MAX)
			return bp_bad_value(p, field, v, "is out of range",
					    BP_ALLOW_ID);
	} else {
		if (!v->n || v->n >= BLUEPRINT_CONSUMER_MAX)
			goto bad;
		if (!((v->s[0] >= 'a' && v->s[0] <= 'z') || v->s[0] == '_'))
			goto bad;
		for (i = 1; i < v->n; i++) {
			char c = v->s[i];

			if (!((c >= 'a' && c <= 'z') ||
			      (c >= '0' && c <= '9') || c == '_' || c == '-'))
				goto bad;
		}
	}
	/* a number is at most 10 digits, so it fits too */
	memcpy(p->bp.consumer, v->s, v->n);
	p->bp.consumer[v->n] = '\0';
	p->bp.consumer_kind = kind;
	return 0;
bad:
	return bp_bad_value(p, field, v,
			    kind == BLUEPRINT_CONSUMER_USER
				    ? "is not a user name or number"
				    : "is not a group name or number",
			    BP_ALLOW_ID);
}

static int bp_set_gpu(struct bp_parser *p, const struct bp_value *v)
{
	uint64_t n;

	if (bp_is(v, "any")) {
		p->bp.gpu = -1;
		return 0;
	}
	if (!bp_number(v, &n))
		return bp_bad_value(p, "gpu", v, "is not a device index",
				    BP_ALLOW_GPU);
	if (n > BP_GPU_MAX)
		return bp_bad_value(p, "gpu", v, "is out of range",
				    BP_ALLOW_GPU);
	p->bp.gpu = (int32_t)n;
	return 0;
}

/* sms and slices: a whole number in 1..max. */
static int bp_set_count(struct bp_parser *p, const char *field,
			const struct bp_value *v, uint64_t max,
			const char *allowed, uint32_t *out)
{
	uint64_t n;

	if (!bp_number(v, &n))
		return bp_bad_value(p, field, v, "is not a whole number",
				    allowed);
	if (n < 1 || n > max)
		return bp_bad_value(p, field, v, "is out of range", allowed);
	*out = (uint32_t)n;
	return 0;
}

static int bp_set_memory(struct bp_parser *p, const struct bp_value *v)
{
	static const char suffixes[] = "KMGT";
	const char *sfx;
	unsigned shift = 0;
	uint64_t n;
	size_t d = bp_digits(v->s, v->n, &n);

	if (!d)
		goto bad;
	if (d + 1 == v->n) {
		sfx = memchr(suffixes, v->s[d], 4);
		if (!sfx)
			goto bad;
		shift = 10 * (unsigned)(sfx - suffixes + 1);
	} else if (d != v->n) {
		goto bad;
	}
	if (n < 1 || n > (BP_MEMORY_MAX >> shift))
		return bp_bad_value(p, "memory", v, "is out of range",
				    BP_ALLOW_MEMORY_RANGE);
	p->bp.memory = n << shift;
	return 0;
bad:
	return bp_bad_value(p, "memory", v, "is not a size", BP_ALLOW_MEMORY);
}

static int bp_set_isolation(struct bp_parser *p, const struct bp_value *v)
{
	if (bp_is(v, "shared"))
		p->bp.isolation = VGPU_ISOLATION_SHARED;
	else if (bp_is(v, "exclusive"))
		p->bp.isolation = VGPU_ISOLATION_EXCLUSIVE;
	else
		return bp_bad_value(p, "isolation", v, "is not an isolation",
				    BP_ALLOW_ISOLATION);
	return 0;
}

static int bp_set_priority(struct bp_parser *p, const struct bp_value *v)
{
	if (bp_is(v, "low"))
		p->bp.priority = BLUEPRINT_PRIO_LOW;
	else if (bp_is(v, "normal"))
		p->bp.priority = BLUEPRINT_PRIO_NORMAL;
	else if (bp_is(v, "high"))
		p->bp.priority = BLUEPRINT_PRIO_HIGH;
	else
		return bp_bad_value(p, "priority", v, "is not a priority",
				    BP_ALLOW_PRIORITY);
	return 0;
}

static int bp_set_swap(struct bp_parser *p, const struct bp_value *v)
{
	if (bp_is(v, "allowed"))
		p->bp.swap = BLUEPRINT_SWAP_ALLOWED;
	else if (bp_is(v, "never"))
		p->bp.swap = BLUEPRINT_SWAP_NEVER;
	else if (bp_is(v, "gpu"))
		p->bp.swap = BLUEPRINT_SWAP_GPU;
	else
		return bp_bad_value(p, "swap", v, "is not a swap choice",
				    BP_ALLOW_SWAP);
	return 0;
}

/* A duration ("10", "10s", "250ms", "2m") in ms, at most max_ms. */
static int bp_duration(struct bp_parser *p, const char *field,
		       const struct bp_value *v, uint64_t max_ms,
		       const char *allowed, uint32_t *out)
{
	struct bp_value unit;
	uint64_t n, mult;
	size_t d = bp_digits(v->s, v->n, &n);

	if (!d)
		goto bad;
	unit.s = v->s + d;
	unit.n = v->n - d;
	if (unit.n == 0 || bp_is(&unit, "s"))
		mult = 1000;
	else if (bp_is(&unit, "ms"))
		mult = 1;
	else if (bp_is(&unit, "m"))
		mult = 60000;
	else
		goto bad;
	if (n > max_ms / mult)
		return bp_bad_value(p, field, v, "is out of range", allowed);
	*out = (uint32_t)(n * mult);
	return 0;
bad:
	return bp_bad_value(p, field, v, "is not a duration", allowed);
}

static int bp_set_time_limit(struct bp_parser *p, const struct bp_value *v)
{
	return bp_duration(p, "kernel_time_limit", v, BP_TIME_LIMIT_MAX_MS,
			   BP_ALLOW_TIME, &p->bp.kernel_time_limit_ms);
}

/*
 * Read the next event as the scalar value of field into *v (pointing into
 * *ev, which the caller deletes on success). A mapping or sequence where a
 * value belongs is an error naming the field.
 */
static int bp_next_scalar(struct bp_parser *p, const char *field,
			  yaml_event_t *ev, struct bp_value *v)
{
	int rc;

	if (bp_next(p, ev, field))
		return -1;
	if (ev->type != YAML_SCALAR_EVENT) {
		rc = bp_fail(p, ev->start_mark,
			     "field '%s': expected a single value, not %s",
			     field, bp_event_kind(ev));
		yaml_event_delete(ev);
		return rc;
	}
	v->s = (const char *)ev->data.scalar.value;
	v->n = ev->data.scalar.length;
	v->mark = ev->start_mark;
	return 0;
}

/*
 * Read the value of a field that takes a scalar and hand it to the
 * field's checker. The key is already consumed.
 */
static int bp_scalar_field(struct bp_parser *p, enum bp_field f)
{
	const char *field = bp_field_names[f];
	struct bp_value v;
	yaml_event_t ev;
	int rc;

	if (bp_next_scalar(p, field, &ev, &v))
		return -1;

	switch (f) {
	case BP_VERSION:
		rc = bp_set_version(p, &v);
		break;
	case BP_NAME:
		rc = bp_set_name(p, &v);
		break;
	case BP_GPU:
		rc = bp_set_gpu(p, &v);
		break;
	case BP_SMS:
		rc = bp_set_count(p, "sms", &v, BP_SMS_MAX, BP_ALLOW_SMS,
				  &p->bp.sms);
		break;
	case BP_SLICES:
		rc = bp_set_count(p, "slices", &v, BP_SLICES_MAX,
				  BP_ALLOW_SLICES, &p->bp.slices);
		break;
	case BP_MEMORY:
		rc = bp_set_memory(p, &v);
		break;
	case BP_ISOLATION:
		rc = bp_set_isolation(p, &v);
		break;
	case BP_TIME_LIMIT:
		rc = bp_set_time_limit(p, &v);
		break;
	case BP_MIN_SMS:
		rc = bp_set_count(p, "min_sms", &v, BP_SMS_MAX,
				  BP_ALLOW_LIMIT_SMS, &p->bp.min_sms);
		break;
	case BP_MAX_SMS:
		rc = bp_set_count(p, "max_sms", &v, BP_SMS_MAX,
				  BP_ALLOW_LIMIT_SMS, &p->bp.max_sms);
		break;
	case BP_WEIGHT:
		rc = bp_set_count(p, "weight", &v, BP_WEIGHT_MAX,
				  BP_ALLOW_WEIGHT, &p->bp.weight);
		break;
	case BP_PRIORITY:
		rc = bp_set_priority(p, &v);
		break;
	case BP_SWAP:
		rc = bp_set_swap(p, &v);
		break;
	default:
		rc = bp_fail(p, v.mark, "field '%s': internal error", field);
		break;
	}
	yaml_event_delete(&ev);
	return rc;
}

/*
 * Read a mapping key. Returns 1 with the key copied (NUL-terminated,
 * truncated to keylen - 1; *truncated set when it was longer or held a
 * NUL) and its mark, 0 at the mapping's end, -1 on error.
 */
static int bp_key(struct bp_parser *p, const char *in, char *key, size_t keylen,
		  bool *truncated, yaml_mark_t *mark)
{
	yaml_event_t ev;
	size_t n;
	int rc;

	if (bp_next(p, &ev, NULL))
		return -1;
	if (ev.type == YAML_MAPPING_END_EVENT) {
		yaml_event_delete(&ev);
		return 0;
	}
	if (ev.type != YAML_SCALAR_EVENT) {
		rc = bp_fail(p, ev.start_mark,
			     "%s%s%sfield names must be plain words, not %s",
			     in ? "in '" : "", in ? in : "", in ? "': " : "",
			     bp_event_kind(&ev));
		yaml_event_delete(&ev);
		return rc;
	}
	n = ev.data.scalar.length;
	*truncated =
		n >= keylen || memchr(ev.data.scalar.value, '\0', n) != NULL;
	if (n >= keylen)
		n = keylen - 1;
	memcpy(key, ev.data.scalar.value, n);
	key[n] = '\0';
	*mark = ev.start_mark;
	yaml_event_delete(&ev);
	return 1;
}

/* Refuse a key seen before in the same mapping; else remember its line. */
static int bp_once(struct bp_parser *p, size_t *seen, const char *field,
		   yaml_mark_t mark)
{
	if (*seen)
		return bp_fail(p, mark,
			       "field '%s': given twice (first on line %zu; "
			       "give each field once)",
			       field, *seen);
	*seen = mark.line + 1;
	return 0;
}

/* consumer: a mapping with exactly one of user or group. */
static int bp_consumer(struct bp_parser *p)
{
	size_t seen[2] = {0, 0}; /* user, group */
	yaml_mark_t start, mark;
	struct bp_value v;
	yaml_event_t ev;
	bool truncated;
	char key[64], q[BP_QUOTE_MAX + 8];
	int rc, i;

	if (bp_next(p, &ev, "consumer"))
		return -1;
	if (ev.type != YAML_MAPPING_START_EVENT) {
		if (ev.type == YAML_SCALAR_EVENT) {
			v.s = (const char *)ev.data.scalar.value;
			v.n = ev.data.scalar.length;
			v.mark = ev.start_mark;
			rc = bp_bad_value(p, "consumer", &v, "is not a mapping",
					  BP_ALLOW_CONSUMER);
		} else {
			rc = bp_fail(p, ev.start_mark,
				     "field 'consumer': expected a mapping, "
				     "not %s (%s)",
				     bp_event_kind(&ev), BP_ALLOW_CONSUMER);
		}
		yaml_event_delete(&ev);
		return rc;
	}
	start = ev.start_mark;
	yaml_event_delete(&ev);

	while ((rc = bp_key(p, "consumer", key, sizeof(key), &truncated,
			    &mark)) > 0) {
		const char *field;
		uint32_t kind;

		if (!truncated && !strcmp(key, "user")) {
			i = 0;
			field = "consumer.user";
			kind = BLUEPRINT_CONSUMER_USER;
		} else if (!truncated && !strcmp(key, "group")) {
			i = 1;
			field = "consumer.group";
			kind = BLUEPRINT_CONSUMER_GROUP;
		} else {
			bp_quote(key, strlen(key), q, sizeof(q));
			return bp_fail(p, mark,
				       "unknown field '%s%s' in 'consumer' "
				       "(allowed: user, group)",
				       q, truncated ? "..." : "");
		}
		if (bp_once(p, &seen[i], field, mark))
			return -1;
		if (seen[!i])
			return bp_fail(p, mark,
				       "field '%s': 'consumer.%s' is already "
				       "given on line %zu (give exactly one "
				       "of user or group)",
				       field, i ? "user" : "group", seen[!i]);

		if (bp_next_scalar(p, field, &ev, &v))
			return -1;
		rc = bp_set_id(p, field, kind, &v);
		yaml_event_delete(&ev);
		if (rc)
			return rc;
	}
	if (rc < 0)
		return rc;
	if (p->bp.consumer_kind == BLUEPRINT_CONSUMER_DEFAULT)
		return bp_fail(p, start,
			       "field 'consumer': names no user or group (%s)",
			       BP_ALLOW_CONSUMER);
	return 0;
}

/*
 * recovery: a mapping with save_interval, the period of the vGPU's save
 * points (its memory comes back from the last one after a shared-domain
 * fault; docs/DESIGN.md "Save, restore and migration"). 0 = none.
 */
static int bp_recovery(struct bp_parser *p)
{
	size_t seen = 0;
	yaml_mark_t mark;
	struct bp_value v;
	yaml_event_t ev;
	bool truncated;
	char key[64], q[BP_QUOTE_MAX + 8];
	int rc;

	if (bp_next(p, &ev, "recovery"))
		return -1;
	if (ev.type != YAML_MAPPING_START_EVENT) {
		rc = bp_fail(p, ev.start_mark,
			     "field 'recovery': expected a mapping, not %s "
			     "(%s)",
			     bp_event_kind(&ev), BP_ALLOW_RECOVERY);
		yaml_event_delete(&ev);
		return rc;
	}
	yaml_event_delete(&ev);
	while ((rc = bp_key(p, "recovery", key, sizeof(key), &truncated,
			    &mark)) > 0) {
		if (truncated || strcmp(key, "save_interval")) {
			bp_quote(key, strlen(key), q, sizeof(q));
			return bp_fail(p, mark,
				       "unknown field '%s%s' in 'recovery' "
				       "(allowed: save_interval)",
				       q, truncated ? "..." : "");
		}
		if (bp_once(p, &seen, "recovery.save_interval", mark) ||
		    bp_next_scalar(p, "recovery.save_interval", &ev, &v))
			return -1;
		rc = bp_duration(p, "recovery.save_interval", &v,
				 BP_SAVE_INTERVAL_MAX_MS, BP_ALLOW_RECOVERY,
				 &p->bp.save_interval_ms);
		if (!rc && p->bp.save_interval_ms &&
		    p->bp.save_interval_ms < BP_SAVE_INTERVAL_MIN_MS)
			rc = bp_bad_value(p, "recovery.save_interval", &v,
					  "is out of range", BP_ALLOW_RECOVERY);
		yaml_event_delete(&ev);
		if (rc)
			return rc;
	}
	return rc < 0 ? rc : 0;
}

/* A key that is not a field: say when it comes, or that it is unknown. */
static int bp_unknown_field(struct bp_parser *p, const char *key,
			    bool truncated, yaml_mark_t mark)
{
	char q[BP_QUOTE_MAX + 8];
	size_t i;

	for (i = 0;
	     !truncated &&
	     i < sizeof(bp_misplaced_fields) / sizeof(bp_misplaced_fields[0]);
	     i++)
		if (!strcmp(key, bp_misplaced_fields[i].name))
			return bp_fail(p, mark,
				       "field '%s' does not belong in a "
				       "blueprint: %s",
				       key, bp_misplaced_fields[i].where);
	for (i = 0; !truncated &&
		    i < sizeof(bp_future_fields) / sizeof(bp_future_fields[0]);
	     i++)
		if (!strcmp(key, bp_future_fields[i].name))
			return bp_fail(p, mark,
				       "field '%s' is not supported yet: %s",
				       key, bp_future_fields[i].when);
	bp_quote(key, strlen(key), q, sizeof(q));
	return bp_fail(p, mark, "unknown field '%s%s' (allowed: %s)", q,
		       truncated ? "..." : "", BP_KNOWN_FIELDS);
}

/*
 * The size within its limits: min_sms <= sms <= max_sms (given ones; a
 * size in slices is checked by vgpud, which knows the group size).
 * Reported at the line of the limit that is broken.
 */
static int bp_limits(struct bp_parser *p)
{
	const struct blueprint *b = &p->bp;

	if (b->min_sms && b->max_sms && b->min_sms > b->max_sms)
		return bp_fail_at(p, p->seen_line[BP_MIN_SMS], 1,
				  "field 'min_sms': %u is above max_sms %u "
				  "(line %zu)",
				  b->min_sms, b->max_sms,
				  p->seen_line[BP_MAX_SMS]);
	if (b->sms && b->min_sms && b->sms < b->min_sms)
		return bp_fail_at(p, p->seen_line[BP_MIN_SMS], 1,
				  "field 'min_sms': %u is above sms %u (line "
				  "%zu); a vGPU is composed within its limits",
				  b->min_sms, b->sms, p->seen_line[BP_SMS]);
	if (b->sms && b->max_sms && b->sms > b->max_sms)
		return bp_fail_at(p, p->seen_line[BP_MAX_SMS], 1,
				  "field 'max_sms': %u is below sms %u (line "
				  "%zu); a vGPU is composed within its limits",
				  b->max_sms, b->sms, p->seen_line[BP_SMS]);
	return 0;
}

/* The top-level mapping: every field, then what must have been given. */
static int bp_fields(struct bp_parser *p, yaml_mark_t start)
{
	yaml_mark_t mark;
	bool truncated;
	char key[64];
	int rc, f;

	while ((rc = bp_key(p, NULL, key, sizeof(key), &truncated, &mark)) >
	       0) {
		for (f = 0; !truncated && f < BP_NFIELDS; f++)
			if (!strcmp(key, bp_field_names[f]))
				break;
		if (truncated || f == BP_NFIELDS)
			return bp_unknown_field(p, key, truncated, mark);
		if (bp_once(p, &p->seen_line[f], key, mark))
			return -1;
		if (f == BP_SMS && p->seen_line[BP_SLICES])
			return bp_fail(p, mark,
				       "field 'sms': 'slices' is already "
				       "given on line %zu (give exactly one "
				       "of sms or slices)",
				       p->seen_line[BP_SLICES]);
		if (f == BP_SLICES && p->seen_line[BP_SMS])
			return bp_fail(p, mark,
				       "field 'slices': 'sms' is already "
				       "given on line %zu (give exactly one "
				       "of sms or slices)",
				       p->seen_line[BP_SMS]);
		rc = f == BP_CONSUMER	? bp_consumer(p)
		     : f == BP_RECOVERY ? bp_recovery(p)
					: bp_scalar_field(p, (enum bp_field)f);
		if (rc)
			return rc;
	}
	if (rc < 0)
		return rc;

	if (!p->seen_line[BP_VERSION])
		return bp_fail(p, start,
			       "missing required field 'version' (%s)",
			       BP_ALLOW_VERSION);
	if (!p->seen_line[BP_NAME])
		return bp_fail(p, start, "missing required field 'name' (%s)",
			       BP_ALLOW_NAME);
	if (!p->seen_line[BP_SMS] && !p->seen_line[BP_SLICES])
		return bp_fail(p, start,
			       "missing required field 'sms' or 'slices' "
			       "(give exactly one: %s, or %s)",
			       BP_ALLOW_SMS, BP_ALLOW_SLICES);
	if (!p->seen_line[BP_MEMORY])
		return bp_fail(p, start, "missing required field 'memory' (%s)",
			       BP_ALLOW_MEMORY);
	return bp_limits(p);
}

/* One stream, one document, whose top level is the field mapping. */
static int bp_document(struct bp_parser *p)
{
	yaml_mark_t start;
	yaml_event_t ev;
	int rc = -1;

	if (bp_next(p, &ev, NULL)) /* stream start */
		return -1;
	yaml_event_delete(&ev);

	if (bp_next(p, &ev, NULL))
		return -1;
	if (ev.type == YAML_STREAM_END_EVENT) {
		rc = bp_fail(p, ev.start_mark,
			     "the blueprint is empty (expected fields: %s)",
			     BP_KNOWN_FIELDS);
		yaml_event_delete(&ev);
		return rc;
	}
	yaml_event_delete(&ev); /* document start */

	if (bp_next(p, &ev, NULL))
		return -1;
	if (ev.type != YAML_MAPPING_START_EVENT) {
		rc = bp_fail(p, ev.start_mark,
			     "the top level must be a mapping of fields, "
			     "not %s (e.g. 'version: 1' on its own line)",
			     ev.type == YAML_SCALAR_EVENT ? "a single value"
							  : bp_event_kind(&ev));
		yaml_event_delete(&ev);
		return rc;
	}
	start = ev.start_mark;
	yaml_event_delete(&ev);
	if (bp_fields(p, start))
		return -1;

	if (bp_next(p, &ev, NULL)) /* document end */
		return -1;
	yaml_event_delete(&ev);
	if (bp_next(p, &ev, NULL))
		return -1;
	if (ev.type != YAML_STREAM_END_EVENT)
		rc = bp_fail(p, ev.start_mark,
			     "a second YAML document is not allowed (one "
			     "blueprint per file)");
	else
		rc = 0;
	yaml_event_delete(&ev);
	return rc;
}

int blueprint_parse_text(const char *text, size_t len, const char *origin,
			 struct blueprint *bp, char *err, size_t errlen)
{
	struct bp_parser *p;
	int rc;

	if (!origin)
		origin = "<blueprint>";
	if (err && errlen)
		err[0] = '\0';
	if (!text || !bp) {
		if (err && errlen)
			snprintf(err, errlen, "%s: no blueprint given", origin);
		return -1;
	}
	if (len > BP_FILE_MAX) {
		if (err && errlen)
			snprintf(err, errlen,
				 "%s: larger than 64 KiB (a blueprint is a "
				 "few lines)",
				 origin);
		return -1;
	}
	p = calloc(1, sizeof(*p));
	if (!p || !yaml_parser_initialize(&p->yaml)) {
		if (err && errlen)
			snprintf(err, errlen, "%s: out of memory", origin);
		free(p);
		return -1;
	}
	p->origin = origin;
	p->text = (const unsigned char *)text;
	p->len = len;
	p->err = err;
	p->errlen = errlen;
	p->bp.gpu = -1;
	p->bp.consumer_kind = BLUEPRINT_CONSUMER_DEFAULT;
	p->bp.isolation = VGPU_ISOLATION_SHARED;
	p->bp.kernel_time_limit_ms = BP_TIME_LIMIT_DEFAULT_MS;
	yaml_parser_set_input_string(&p->yaml, p->text, len);

	rc = bp_document(p);
	if (!rc)
		*bp = p->bp;
	yaml_parser_delete(&p->yaml);
	free(p);
	return rc;
}

/*
 * Read a file of at most BP_FILE_MAX bytes. Opened non-blocking and checked
 * to be a regular file, so a FIFO or a device given as a path cannot hang
 * or flood the reader.
 */
int blueprint_parse_file(const char *path, struct blueprint *bp, char *err,
			 size_t errlen)
{
	struct stat st;
	size_t total = 0;
	char *buf;
	ssize_t n;
	int fd, rc;

	if (err && errlen)
		err[0] = '\0';
	if (!path) {
		if (err && errlen)
			snprintf(err, errlen, "<blueprint>: no file given");
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s: cannot open: %s", path,
				 strerror(errno));
		return -1;
	}
	if (fstat(fd, &st)) {
		if (err && errlen)
			snprintf(err, errlen, "%s: cannot stat: %s", path,
				 strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > BP_FILE_MAX) {
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path,
				 !S_ISREG(st.st_mode)
					 ? "not a regular file"
					 : "larger than 64 KiB (a blueprint is "
					   "a few lines)");
		close(fd);
		return -1;
	}
	buf = malloc(BP_FILE_MAX + 1);
	if (!buf) {
		if (err && errlen)
			snprintf(err, errlen, "%s: out of memory", path);
		close(fd);
		return -1;
	}
	/* read one byte past the limit: a file that grew is still refused */
	while (total <= BP_FILE_MAX) {
		n = read(fd, buf + total, BP_FILE_MAX + 1 - total);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (err && errlen)
				snprintf(err, errlen, "%s: cannot read: %s",
					 path, strerror(errno));
			close(fd);
			free(buf);
			return -1;
		}
		if (n == 0)
			break;
		total += (size_t)n;
	}
	close(fd);
	rc = blueprint_parse_text(buf, total, path, bp, err, errlen);
	free(buf);
	return rc;
}

const char *blueprint_isolation_name(uint32_t isolation)
{
	switch (isolation) {
	case VGPU_ISOLATION_SHARED:
		return "shared";
	case VGPU_ISOLATION_EXCLUSIVE:
		return "exclusive";
	default:
		return "unknown";
	}
}
