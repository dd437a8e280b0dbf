/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the blueprint parser (host-daemon/blueprint.c): the
 * examples in blueprints/ parse to what they say, every rule of the format
 * (blueprints/README.md) is enforced with an error naming file, line,
 * column and field, and no input (the bad fixtures in tests/blueprints/,
 * truncated, mutated and random text) crashes or leaks; run under valgrind
 * with `make unit-blueprint-valgrind`.
 *
 * BLUEPRINT_DIR and BLUEPRINT_BAD_DIR are absolute paths from the Makefile.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "blueprint.h"

#ifndef BLUEPRINT_DIR
#error "BLUEPRINT_DIR must name the blueprints/ folder"
#endif
#ifndef BLUEPRINT_BAD_DIR
#error "BLUEPRINT_BAD_DIR must name the tests/blueprints/ folder"
#endif

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define TiB (1ull << 40)

#define ERRLEN 512

/* The smallest valid blueprint; tests append or replace lines. */
#define BASE "version: 1\nname: t\n"

static const char *const examples[] = {
	"inference-small.yaml",
	"training-large.yaml",
	"isolated.yaml",
	"group-shared.yaml",
};

/* Read a whole file into a malloc'd buffer of exactly its size. */
static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc(n ? (size_t)n : 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void parse_example(const char *file, struct blueprint *bp)
{
	char path[512], err[ERRLEN];

	snprintf(path, sizeof(path), "%s/%s", BLUEPRINT_DIR, file);
	if (blueprint_parse_file(path, bp, err, sizeof(err)))
		fail_msg("%s", err);
}

static struct blueprint parse_ok(const char *text)
{
	struct blueprint bp;
	char err[ERRLEN];

	memset(&bp, 0xa5, sizeof(bp));
	if (blueprint_parse_text(text, strlen(text), "t.yaml", &bp, err,
				 sizeof(err)))
		fail_msg("expected success for:\n%s\ngot: %s", text, err);
	return bp;
}

/* Parse text that must fail with an error containing want. */
static void parse_fails(const char *text, const char *want)
{
	struct blueprint bp;
	char err[ERRLEN];

	memset(err, 'x', sizeof(err));
	if (!blueprint_parse_text(text, strlen(text), "t.yaml", &bp, err,
				  sizeof(err)))
		fail_msg("expected failure '%s' for:\n%s", want, text);
	if (strncmp(err, "t.yaml:", 7) || !strstr(err, want))
		fail_msg("for:\n%s\nwanted '%s'\ngot    '%s'", text, want, err);
}

/*
 * A clean error: non-empty, "ORIGIN:LINE:COL: message" (or "ORIGIN: ..."
 * for whole-input errors), printable, NUL-terminated within the buffer.
 */
static void assert_clean_error(const char *err, size_t errlen,
			       const char *origin)
{
	size_t olen = strlen(origin), i;
	unsigned line, col;
	int used = 0;

	assert_non_null(memchr(err, '\0', errlen));
	if (strncmp(err, origin, olen) || err[olen] != ':')
		fail_msg("error does not start with '%s:': %s", origin, err);
	if (err[olen + 1] != ' ') {
		if (sscanf(err + olen, ":%u:%u: %n", &line, &col, &used) < 2 ||
		    !used || !line || !col)
			fail_msg("error without line:col: %s", err);
	}
	assert_true(strlen(err) > olen + 4);
	for (i = 0; err[i]; i++)
		if ((unsigned char)err[i] < 0x20 ||
		    (unsigned char)err[i] > 0x7e)
			fail_msg("unprintable byte in error: %s", err);
}

/* A successful parse never gives an impossible struct. */
static void assert_sane(const struct blueprint *bp)
{
	assert_true(bp->name[0] != '\0');
	assert_true(memchr(bp->name, '\0', sizeof(bp->name)) != NULL);
	assert_true((bp->sms != 0) != (bp->slices != 0));
	assert_true(bp->memory >= 1 && bp->memory <= 1024 * TiB);
	assert_true(bp->gpu >= -1 && bp->gpu <= 15);
	assert_true(bp->isolation <= VGPU_ISOLATION_EXCLUSIVE);
	assert_true(bp->kernel_time_limit_ms <= 24u * 3600 * 1000);
	assert_true(bp->consumer_kind <= BLUEPRINT_CONSUMER_GROUP);
}

/* Parse len bytes of a private copy (so valgrind sees any over-read). */
static void parse_robust(const char *text, size_t len)
{
	struct blueprint bp;
	char *copy = malloc(len ? len : 1);
	char err[ERRLEN];

	assert_non_null(copy);
	memcpy(copy, text, len);
	memset(err, 'x', sizeof(err));
	if (blueprint_parse_text(copy, len, "fuzz", &bp, err, sizeof(err)))
		assert_clean_error(err, sizeof(err), "fuzz");
	else
		assert_sane(&bp);
	free(copy);
}

/* --- the examples ------------------------------------------------------ */

static void blueprint_parses_inference_small(void **state)
{
	struct blueprint bp;

	parse_example("inference-small.yaml", &bp);
	assert_string_equal(bp.name, "inference-small");
	assert_int_equal(bp.consumer_kind, BLUEPRINT_CONSUMER_DEFAULT);
	assert_string_equal(bp.consumer, "");
	assert_int_equal(bp.gpu, -1);
	assert_int_equal(bp.sms, 16);
	assert_int_equal(bp.slices, 0);
	assert_int_equal(bp.memory, 4 * GiB);
	assert_int_equal(bp.isolation, VGPU_ISOLATION_SHARED);
	assert_int_equal(bp.kernel_time_limit_ms, 10000);
}

static void blueprint_parses_training_large(void **state)
{
	struct blueprint bp;

	parse_example("training-large.yaml", &bp);
	assert_string_equal(bp.name, "training-large");
	assert_int_equal(bp.consumer_kind, BLUEPRINT_CONSUMER_DEFAULT);
	assert_int_equal(bp.gpu, 0);
	assert_int_equal(bp.sms, 64);
	assert_int_equal(bp.slices, 0);
	assert_int_equal(bp.memory, 32 * GiB);
	assert_int_equal(bp.isolation, VGPU_ISOLATION_SHARED);
	assert_int_equal(bp.kernel_time_limit_ms, 5 * 60 * 1000);
}

static void blueprint_parses_isolated(void **state)
{
	struct blueprint bp;

	parse_example("isolated.yaml", &bp);
	assert_string_equal(bp.name, "isolated");
	assert_int_equal(bp.consumer_kind, BLUEPRINT_CONSUMER_USER);
	assert_string_equal(bp.consumer, "alice");
	assert_int_equal(bp.gpu, -1);
	assert_int_equal(bp.sms, 12);
	assert_int_equal(bp.slices, 0);
	assert_int_equal(bp.memory, 8 * GiB);
	assert_int_equal(bp.isolation, VGPU_ISOLATION_EXCLUSIVE);
	assert_int_equal(bp.kernel_time_limit_ms, 10000);
}

static void blueprint_parses_group_shared(void **state)
{
	struct blueprint bp;

	parse_example("group-shared.yaml", &bp);
	assert_string_equal(bp.name, "group-shared");
	assert_int_equal(bp.consumer_kind, BLUEPRINT_CONSUMER_GROUP);
	assert_string_equal(bp.consumer, "gpu-users");
	assert_int_equal(bp.gpu, -1);
	assert_int_equal(bp.sms, 0);
	assert_int_equal(bp.slices, 2);
	assert_int_equal(bp.memory, 6 * GiB);
	assert_int_equal(bp.isolation, VGPU_ISOLATION_SHARED);
	assert_int_equal(bp.kernel_time_limit_ms, 30000);
}

/* Any example someone adds to blueprints/ must be valid too. */
static void blueprint_every_example_in_blueprints_dir_parses(void **state)
{
	DIR *d = opendir(BLUEPRINT_DIR);
	struct dirent *de;
	struct blueprint bp;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (l < 6 || strcmp(de->d_name + l - 5, ".yaml"))
			continue;
		parse_example(de->d_name, &bp);
		assert_sane(&bp);
		n++;
	}
	closedir(d);
	assert_true(n >= 4);
}

/* --- values and defaults ------------------------------------------------ */

static void blueprint_applies_defaults(void **state)
{
	struct blueprint bp = parse_ok(BASE "sms: 8\nmemory: 1G\n");

	assert_string_equal(bp.name, "t");
	assert_int_equal(bp.consumer_kind, BLUEPRINT_CONSUMER_DEFAULT);
	assert_string_equal(bp.consumer, "");
	assert_int_equal(bp.gpu, -1);
	assert_int_equal(bp.isolation, VGPU_ISOLATION_SHARED);
	assert_int_equal(bp.kernel_time_limit_ms, 10000);
	assert_string_equal(blueprint_isolation_name(bp.isolation), "shared");
}

static void blueprint_accepts_sizes_with_binary_suffixes(void **state)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} t[] = {
		{"1", 1},
		{"4096", 4096},
		{"1K", KiB},
		{"512M", 512 * MiB},
		{"4G", 4 * GiB},
		{"2T", 2 * TiB},
		{"1024T", 1024 * TiB},
		{"1125899906842624", 1024 * TiB},
		{"\"8G\"", 8 * GiB},
	};
	char text[128];
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(text, sizeof(text), BASE "sms: 8\nmemory: %s\n",
			 t[i].text);
		assert_int_equal(parse_ok(text).memory, t[i].bytes);
	}
}

static void blueprint_accepts_time_limits_in_ms_s_and_m(void **state)
{
	static const struct {
		const char *text;
		uint32_t ms;
	} t[] = {
		{"0", 0},
		{"0s", 0},
		{"250ms", 250},
		{"10", 10000},
		{"10s", 10000},
		{"5m", 300000},
		{"86400", 86400000},
		{"1440m", 86400000},
		{"86400000ms", 86400000},
	};
	char text[128];
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(text, sizeof(text),
			 BASE "sms: 8\nmemory: 1G\nkernel_time_limit: %s\n",
			 t[i].text);
		assert_int_equal(parse_ok(text).kernel_time_limit_ms, t[i].ms);
	}
}

static void blueprint_accepts_gpu_any_or_index(void **state)
{
	assert_int_equal(parse_ok(BASE "gpu: any\nsms: 8\nmemory: 1G\n").gpu,
			 -1);
	assert_int_equal(parse_ok(BASE "gpu: 0\nsms: 8\nmemory: 1G\n").gpu, 0);
	assert_int_equal(parse_ok(BASE "gpu: 15\nsms: 8\nmemory: 1G\n").gpu,
			 15);
}

static void
blueprint_accepts_consumer_user_or_group_by_name_or_number(void **state)
{
	struct blueprint bp;

	bp = parse_ok(BASE "consumer: {user: 1000}\nsms: 8\nmemory: 1G\n");
	assert_int_equal(bp.consumer_kind, BLUEPRINT_CONSUMER_USER);
	assert_string_equal(bp.consumer, "1000");
	bp = parse_ok(BASE "consumer:\n  group: _ml-team2\nsms: 8\n"
			   "memory: 1G\n");
	assert_int_equal(bp.consumer_kind, BLUEPRINT_CONSUMER_GROUP);
	assert_string_equal(bp.consumer, "_ml-team2");
	bp = parse_ok(BASE "consumer: {group: 0}\nsms: 8\nmemory: 1G\n");
	assert_string_equal(bp.consumer, "0");
	bp = parse_ok(BASE "consumer: {user: 4294967294}\nsms: 8\n"
			   "memory: 1G\n");
	assert_string_equal(bp.consumer, "4294967294");
}

static void blueprint_accepts_the_longest_names(void **state)
{
	char text[512], name[64], user[64];
	struct blueprint bp;

	memset(name, 'a', 63);
	name[63] = '\0';
	memset(user, 'u', 63);
	user[63] = '\0';
	snprintf(text, sizeof(text),
		 "version: 1\nname: %s\nconsumer: {user: %s}\nsms: 8\n"
		 "memory: 1G\n",
		 name, user);
	bp = parse_ok(text);
	assert_string_equal(bp.name, name);
	assert_string_equal(bp.consumer, user);
	bp = parse_ok("version: 1\nname: A-z_0.9\nsms: 8\nmemory: 1G\n");
	assert_string_equal(bp.name, "A-z_0.9");
}

/* --- the rules ---------------------------------------------------------- */

static void blueprint_rejects_unknown_field(void **state)
{
	parse_fails(BASE "sms: 8\nmemory: 1G\nsm: 8\n",
		    "t.yaml:5:1: unknown field 'sm' (allowed: version, name, "
		    "consumer, gpu, sms, slices, memory, isolation, "
		    "kernel_time_limit, min_sms, max_sms, weight, priority, "
		    "recovery, swap)");
}

static void blueprint_rejects_unknown_field_in_consumer(void **state)
{
	parse_fails(BASE "consumer:\n  user: alice\n  uid: 7\nsms: 8\n"
			 "memory: 1G\n",
		    "t.yaml:5:3: unknown field 'uid' in 'consumer' (allowed: "
		    "user, group)");
}

static void blueprint_keys_are_case_sensitive(void **state)
{
	parse_fails(BASE "SMS: 8\nmemory: 1G\n", "unknown field 'SMS'");
	parse_fails(BASE "sms: 8\nmemory: 1G\nisolation: Shared\n",
		    "field 'isolation': 'Shared' is not an isolation");
	parse_fails(BASE "sms: 8\nmemory: 1g\n",
		    "field 'memory': '1g' is not a size");
}

static void blueprint_rejects_future_fields_saying_when_they_come(void **state)
{
	static const struct {
		const char *key, *when;
	} t[] = {
		{"mdev", "VM devices come with the VM path"},
		{"display", "VM devices come with the VM path"},
		{"heads", "VM devices come with the VM path"},
		{"profile", "workload settings come with workload profiles"},
		{"workload", "workload settings come with workload profiles"},
	};
	char text[128], want[160];
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(text, sizeof(text), BASE "sms: 8\n%s: 1\nmemory: 1G\n",
			 t[i].key);
		snprintf(want, sizeof(want),
			 "t.yaml:4:1: field '%s' is not supported yet: %s",
			 t[i].key, t[i].when);
		parse_fails(text, want);
	}
}

/* The GPU's policy is not a blueprint's: the error says where it is. */
static void blueprint_rejects_a_policy_saying_where_it_belongs(void **state)
{
	parse_fails(BASE "sms: 8\npolicy: fair\nmemory: 1G\n",
		    "t.yaml:4:1: field 'policy' does not belong in a "
		    "blueprint: a GPU's scheduling policy is set with "
		    "'vgpu-admin policy --gpu N --mode static|fair|priority'");
	parse_fails(BASE "sms: 8\nscheduling: x\nmemory: 1G\n",
		    "field 'scheduling' does not belong in a blueprint");
}

static void blueprint_reads_the_policy_fields(void **state)
{
	struct blueprint bp = parse_ok(BASE "sms: 32\nmemory: 1G\n"
					    "min_sms: 16\nmax_sms: 64\n"
					    "weight: 3\npriority: high\n");

	assert_int_equal(bp.min_sms, 16);
	assert_int_equal(bp.max_sms, 64);
	assert_int_equal(bp.weight, 3);
	assert_int_equal(bp.priority, BLUEPRINT_PRIO_HIGH);
	bp = parse_ok(BASE "sms: 8\nmemory: 1G\n");
	assert_int_equal(bp.min_sms, 0);
	assert_int_equal(bp.max_sms, 0);
	assert_int_equal(bp.weight, 0);
	assert_int_equal(bp.priority, BLUEPRINT_PRIO_DEFAULT);
	bp = parse_ok(BASE "sms: 8\nmemory: 1G\npriority: low\n");
	assert_int_equal(bp.priority, BLUEPRINT_PRIO_LOW);
	bp = parse_ok(BASE "sms: 8\nmemory: 1G\npriority: normal\n");
	assert_int_equal(bp.priority, BLUEPRINT_PRIO_NORMAL);
	/* slices: the limits are checked by vgpud (it knows the groups) */
	bp = parse_ok(BASE "slices: 1\nmemory: 1G\nmin_sms: 64\n");
	assert_int_equal(bp.min_sms, 64);
	/* the edges */
	bp = parse_ok(BASE "sms: 8\nmemory: 1\nweight: 1000\n");
	assert_int_equal(bp.weight, 1000);
	bp = parse_ok(BASE "sms: 1024\nmemory: 1\nmax_sms: 1024\n");
	assert_int_equal(bp.max_sms, 1024);
}

static void blueprint_checks_the_policy_fields(void **state)
{
	parse_fails(BASE "sms: 8\nmemory: 1G\npriority: urgent\n",
		    "t.yaml:5:11: field 'priority': 'urgent' is not a "
		    "priority (low, normal or high)");
	parse_fails(BASE "sms: 8\nmemory: 1G\nweight: 0\n",
		    "field 'weight': '0' is out of range (1 to 1000)");
	parse_fails(BASE "sms: 8\nmemory: 1G\nweight: 1001\n",
		    "field 'weight': '1001' is out of range");
	parse_fails(BASE "sms: 8\nmemory: 1G\nmin_sms: 0\n",
		    "field 'min_sms': '0' is out of range (1 to 1024 SMs)");
	parse_fails(BASE "sms: 8\nmemory: 1G\nmax_sms: 1025\n",
		    "field 'max_sms': '1025' is out of range");
	parse_fails(BASE "sms: 8\nmemory: 1G\nmax_sms: 8.5\n",
		    "field 'max_sms': '8.5' is not a whole number");
	parse_fails(BASE "sms: 16\nmemory: 1G\nmin_sms: 32\nmax_sms: 24\n",
		    "t.yaml:5:1: field 'min_sms': 32 is above max_sms 24 "
		    "(line 6)");
	parse_fails(BASE "sms: 16\nmemory: 1G\nmin_sms: 24\n",
		    "t.yaml:5:1: field 'min_sms': 24 is above sms 16 (line "
		    "3); a vGPU is composed within its limits");
	parse_fails(BASE "max_sms: 8\nsms: 16\nmemory: 1G\n",
		    "t.yaml:3:1: field 'max_sms': 8 is below sms 16 (line 4)");
	parse_fails(BASE "sms: 8\nmemory: 1G\npriority: low\npriority: high\n",
		    "field 'priority': given twice");
}

static void blueprint_rejects_both_sms_and_slices(void **state)
{
	parse_fails(BASE "sms: 8\nslices: 1\nmemory: 1G\n",
		    "t.yaml:4:1: field 'slices': 'sms' is already given on "
		    "line 3 (give exactly one of sms or slices)");
	parse_fails(BASE "slices: 1\nmemory: 1G\nsms: 8\n",
		    "t.yaml:5:1: field 'sms': 'slices' is already given on "
		    "line 3");
}

static void blueprint_rejects_neither_sms_nor_slices(void **state)
{
	parse_fails(BASE "memory: 1G\n",
		    "t.yaml:1:1: missing required field 'sms' or 'slices'");
}

static void blueprint_reports_missing_field_at_the_mapping_start(void **state)
{
	parse_fails("# a comment\n\n  version: 1\n  name: t\n  sms: 8\n",
		    "t.yaml:3:3: missing required field 'memory' (use bytes "
		    "or a K, M, G or T suffix)");
	parse_fails("name: t\nsms: 8\nmemory: 1G\n",
		    "t.yaml:1:1: missing required field 'version'");
	parse_fails("version: 1\nsms: 8\nmemory: 1G\n",
		    "t.yaml:1:1: missing required field 'name'");
	parse_fails("{version: 1, name: t, memory: 1G}",
		    "t.yaml:1:1: missing required field 'sms' or 'slices'");
}

static void blueprint_rejects_duplicate_fields(void **state)
{
	parse_fails(BASE "sms: 8\nmemory: 1G\nname: u\n",
		    "t.yaml:5:1: field 'name': given twice (first on line 2");
	parse_fails(BASE "consumer: {user: a, user: b}\nsms: 8\nmemory: 1G\n",
		    "t.yaml:3:21: field 'consumer.user': given twice");
	parse_fails(BASE "consumer: {user: a}\nconsumer: {user: a}\nsms: 8\n"
			 "memory: 1G\n",
		    "t.yaml:4:1: field 'consumer': given twice");
}

static void blueprint_rejects_both_user_and_group(void **state)
{
	parse_fails(BASE "consumer: {group: g, user: a}\nsms: 8\nmemory: 1G\n",
		    "field 'consumer.user': 'consumer.group' is already given "
		    "on line 3 (give exactly one of user or group)");
	parse_fails(BASE "consumer: {}\nsms: 8\nmemory: 1G\n",
		    "t.yaml:3:11: field 'consumer': names no user or group");
	parse_fails(BASE "consumer:\nsms: 8\nmemory: 1G\n",
		    "field 'consumer': no value given");
	parse_fails(BASE "consumer: [alice]\nsms: 8\nmemory: 1G\n",
		    "field 'consumer': expected a mapping, not a list");
}

static void blueprint_rejects_anchors_aliases_and_tags(void **state)
{
	parse_fails(BASE "sms: &n 8\nmemory: 1G\n",
		    "t.yaml:3:6: field 'sms': anchor '&n' is not allowed");
	parse_fails(BASE "sms: &n 8\nslices: *n\nmemory: 1G\n",
		    "anchor '&n' is not allowed");
	parse_fails(BASE "sms: *n\nmemory: 1G\n",
		    "t.yaml:3:6: field 'sms': alias '*n' is not allowed");
	parse_fails(BASE "sms: !!str 8\nmemory: 1G\n",
		    "field 'sms': tag 'tag:yaml.org,2002:str' is not allowed");
	parse_fails(BASE "consumer: !x {user: a}\nsms: 8\nmemory: 1G\n",
		    "field 'consumer': tag '!x' is not allowed");
	parse_fails("--- !bp\n" BASE "sms: 8\nmemory: 1G\n",
		    "tag '!bp' is not allowed");
	parse_fails(BASE "&k sms: 8\nmemory: 1G\n", "anchor '&k'");
	/* the billion-laughs shape stops at its first anchor */
	parse_fails(BASE "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n",
		    "unknown field 'a'");
}

static void blueprint_rejects_multiple_documents(void **state)
{
	parse_fails(BASE "sms: 8\nmemory: 1G\n---\n" BASE "sms: 8\n"
			 "memory: 1G\n",
		    "t.yaml:5:1: a second YAML document is not allowed");
	parse_fails(BASE "sms: 8\nmemory: 1G\n...\n---\n",
		    "a second YAML document");
	/* one explicit document is fine */
	parse_ok("---\n" BASE "sms: 8\nmemory: 1G\n...\n");
}

static void blueprint_rejects_a_top_level_that_is_not_a_mapping(void **state)
{
	parse_fails("- sms: 8\n", "t.yaml:1:1: the top level must be a "
				  "mapping of fields, not a list");
	parse_fails("8\n", "not a single value");
	parse_fails("", "t.yaml:1:1: the blueprint is empty");
	parse_fails("# only a comment\n", "the blueprint is empty");
	parse_fails("---\n", "the top level must be a mapping");
}

static void blueprint_rejects_values_that_are_not_scalars(void **state)
{
	parse_fails(BASE "sms: [8]\nmemory: 1G\n",
		    "t.yaml:3:6: field 'sms': expected a single value, not a "
		    "list");
	parse_fails(BASE "sms: 8\nmemory: {G: 1}\n",
		    "field 'memory': expected a single value, not a mapping");
	parse_fails(BASE "sms: 8\nmemory: 1G\n[a]: 1\n",
		    "field names must be plain words, not a list");
	parse_fails(BASE "consumer: {[a]: 1}\nsms: 8\nmemory: 1G\n",
		    "in 'consumer': field names must be plain words");
	parse_fails(BASE "consumer: {user: [a]}\nsms: 8\nmemory: 1G\n",
		    "field 'consumer.user': expected a single value, not a "
		    "list");
}

/* Every scalar is range-checked, at both edges. */
static void blueprint_checks_every_range(void **state)
{
	static const struct {
		const char *line, *want;
	} bad[] = {
		{"version: 0", "field 'version': '0' is not supported"},
		{"version: 1.0", "field 'version': '1.0' is not a version"},
		{"version: 01", "is not a version number"},
		{"sms: 0", "field 'sms': '0' is out of range (1 to 1024 SMs)"},
		{"sms: 1025", "field 'sms': '1025' is out of range"},
		{"sms: -1", "field 'sms': '-1' is not a whole number"},
		{"sms: +8", "is not a whole number"},
		{"sms: 0x10", "is not a whole number"},
		{"sms: 99999999999999999999999", "is out of range"},
		{"slices: 0", "field 'slices': '0' is out of range (1 to 64"},
		{"slices: 65", "field 'slices': '65' is out of range"},
		{"memory: 0", "field 'memory': '0' is out of range (1 byte to "
			      "1024T)"},
		{"memory: 1025T", "is out of range"},
		{"memory: 1125899906842625", "is out of range"},
		{"memory: 18446744073709551616", "is out of range"},
		{"memory: 99999999999999999999999T", "is out of range"},
		{"memory: 4GB", "field 'memory': '4GB' is not a size"},
		{"memory: 4 G", "is not a size"},
		{"memory: G", "is not a size"},
		{"memory: 1.5G", "is not a size"},
		{"gpu: 16", "field 'gpu': '16' is out of range (any, or a "
			    "device index 0 to 15)"},
		{"gpu: -1", "field 'gpu': '-1' is not a device index"},
		{"gpu: all", "is not a device index"},
		{"kernel_time_limit: 86401", "field 'kernel_time_limit': "
					     "'86401' is out of range"},
		{"kernel_time_limit: 1441m", "is out of range"},
		{"kernel_time_limit: 86400001ms", "is out of range"},
		{"kernel_time_limit: 99999999999999999999m", "is out of "
							     "range"},
		{"kernel_time_limit: 1h", "'1h' is not a duration"},
		{"kernel_time_limit: s", "is not a duration"},
		{"kernel_time_limit: -1", "is not a duration"},
		{"isolation: none", "'none' is not an isolation (shared or "
				    "exclusive)"},
		{"isolation:", "field 'isolation': no value given (shared "
			       "or exclusive)"},
	};
	char text[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* sms/slices lines replace the default sms line */
		if (!strncmp(bad[i].line, "sms", 3) ||
		    !strncmp(bad[i].line, "slices", 6))
			snprintf(text, sizeof(text), BASE "%s\nmemory: 1G\n",
				 bad[i].line);
		else if (!strncmp(bad[i].line, "memory", 6))
			snprintf(text, sizeof(text), BASE "sms: 8\n%s\n",
				 bad[i].line);
		else if (!strncmp(bad[i].line, "version", 7))
			snprintf(text, sizeof(text),
				 "%s\nname: t\nsms: 8\nmemory: 1G\n",
				 bad[i].line);
		else
			snprintf(text, sizeof(text),
				 BASE "sms: 8\nmemory: 1G\n%s\n", bad[i].line);
		parse_fails(text, bad[i].want);
	}
	/* the accepted edges */
	assert_int_equal(parse_ok(BASE "sms: 1\nmemory: 1\n").sms, 1);
	assert_int_equal(parse_ok(BASE "sms: 1024\nmemory: 1\n").sms, 1024);
	assert_int_equal(parse_ok(BASE "slices: 1\nmemory: 1\n").slices, 1);
	assert_int_equal(parse_ok(BASE "slices: 64\nmemory: 1\n").slices, 64);
}

static void blueprint_checks_name_and_consumer_shapes(void **state)
{
	char text[512], name[65];

	parse_fails("version: 1\nname: a/b\nsms: 8\nmemory: 1G\n",
		    "t.yaml:2:7: field 'name': 'a/b' is not a valid name (1 to "
		    "63 of A-Z a-z 0-9 _ . -, not '.' or '..')");
	parse_fails("version: 1\nname: ''\nsms: 8\nmemory: 1G\n",
		    "field 'name': no value given");
	parse_fails("version: 1\nname: ..\nsms: 8\nmemory: 1G\n",
		    "field 'name': '..' is not a valid name");
	parse_fails("version: 1\nname: \"a\\0b\"\nsms: 8\nmemory: 1G\n",
		    "field 'name': 'a?b' is not a valid name");
	memset(name, 'n', 64);
	name[64] = '\0';
	snprintf(text, sizeof(text),
		 "version: 1\nname: %s\nsms: 8\n"
		 "memory: 1G\n",
		 name);
	parse_fails(text,
		    "field 'name': 'nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
		    "...' is not a valid name");

	parse_fails(
		BASE "consumer: {user: Bob}\nsms: 8\nmemory: 1G\n",
		"field 'consumer.user': 'Bob' is not a user name or number");
	parse_fails(BASE "consumer: {group: 1abc}\nsms: 8\nmemory: 1G\n",
		    "field 'consumer.group': '1abc' is not a number");
	parse_fails(BASE "consumer: {group: -g}\nsms: 8\nmemory: 1G\n",
		    "'-g' is not a group name or number");
	parse_fails(BASE "consumer: {user: 4294967295}\nsms: 8\nmemory: 1G\n",
		    "field 'consumer.user': '4294967295' is out of range");
	parse_fails(BASE "consumer: {user: 'a b'}\nsms: 8\nmemory: 1G\n",
		    "is not a user name or number");
	memset(name, 'u', 64);
	snprintf(text, sizeof(text),
		 BASE "consumer: {user: %s}\nsms: 8\n"
		      "memory: 1G\n",
		 name);
	parse_fails(text, "is not a user name or number");
}

/* --- error messages ----------------------------------------------------- */

static void blueprint_error_names_file_line_and_field(void **state)
{
	char path[512], want[1024], err[ERRLEN];
	struct blueprint bp;

	snprintf(path, sizeof(path), "%s/bad-size.yaml", BLUEPRINT_BAD_DIR);
	assert_int_equal(blueprint_parse_file(path, &bp, err, sizeof(err)), -1);
	snprintf(want, sizeof(want),
		 "%s:5:9: field 'memory': '4Q' is not a size (use bytes or a "
		 "K, M, G or T suffix)",
		 path);
	assert_string_equal(err, want);
}

static void blueprint_syntax_error_names_line_and_column(void **state)
{
	parse_fails(BASE "sms: 8\nmemory: 1G\nisolation\n",
		    "t.yaml:6:1: YAML syntax error: could not find expected "
		    "':' while scanning a simple key (from line 5, column 1)");
	parse_fails(BASE "sms: 8\nmemory: 1G\n- x\n",
		    "t.yaml:5:1: YAML syntax error: did not find expected key "
		    "while parsing a block mapping (from line 1, column 1)");
	parse_fails("version: 1\nname: t: u\n",
		    "t.yaml:2:8: YAML syntax error: mapping values are not "
		    "allowed in this context");
	parse_fails(BASE "consumer: {user: alice",
		    "t.yaml:4:1: YAML syntax error: did not find expected "
		    "',' or '}' while parsing a flow mapping (from line 3, "
		    "column 11)");
	parse_fails(BASE "sms: \"unterminated\n",
		    "YAML syntax error: found unexpected end of stream while "
		    "scanning a quoted scalar");
	parse_fails(BASE "sms: 8\x01\n", "t.yaml:3:7: YAML syntax error: "
					 "control characters are not allowed");
}

static void blueprint_error_quotes_hostile_values_safely(void **state)
{
	char text[4096], err[ERRLEN], *p;
	struct blueprint bp;

	/* escapes make control bytes; the message shows them as '?' */
	parse_fails(BASE "sms: 8\nmemory: \"\\e[31m\\n\\t\"\n",
		    "field 'memory': '?[31m?"
		    "?' is not a size");
	/* a long value is cut, and a tiny buffer still gets a NUL */
	p = text + snprintf(text, sizeof(text), BASE "sms: 8\nmemory: ");
	memset(p, 'z', 3000);
	strcpy(p + 3000, "\n");
	parse_fails(text, "'zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz...' is "
			  "not a size");
	memset(err, 'x', sizeof(err));
	assert_int_equal(
		blueprint_parse_text(text, strlen(text), "t.yaml", &bp, err, 8),
		-1);
	assert_string_equal(err, "t.yaml:");
	/* no error buffer at all is allowed */
	assert_int_equal(blueprint_parse_text(text, strlen(text), "t.yaml", &bp,
					      NULL, 0),
			 -1);
}

static void blueprint_leaves_struct_untouched_on_error(void **state)
{
	struct blueprint bp, before;
	const char *text = BASE "sms: 8\nmemory: 1G\nisolation: bad\n";
	char err[ERRLEN];

	memset(&bp, 0x5a, sizeof(bp));
	before = bp;
	assert_int_equal(blueprint_parse_text(text, strlen(text), "t.yaml", &bp,
					      err, sizeof(err)),
			 -1);
	assert_memory_equal(&bp, &before, sizeof(bp));
}

static void blueprint_isolation_name_names_both(void **state)
{
	assert_string_equal(blueprint_isolation_name(VGPU_ISOLATION_SHARED),
			    "shared");
	assert_string_equal(blueprint_isolation_name(VGPU_ISOLATION_EXCLUSIVE),
			    "exclusive");
	assert_string_equal(blueprint_isolation_name(7), "unknown");
}

/* --- files -------------------------------------------------------------- */

static void blueprint_refuses_input_over_64k(void **state)
{
	const size_t max = 64 * 1024;
	const char *body = BASE "sms: 8\nmemory: 1G\n";
	char path[] = "/tmp/test_blueprint_XXXXXX";
	char err[ERRLEN], *text;
	struct blueprint bp;
	size_t blen = strlen(body);
	FILE *f;
	int fd;

	/* exactly 64 KiB, padded with a comment, is accepted */
	text = malloc(max + 1);
	assert_non_null(text);
	memcpy(text, body, blen);
	text[blen] = '#';
	memset(text + blen + 1, 'c', max - blen - 2);
	text[max - 1] = '\n';
	assert_int_equal(blueprint_parse_text(text, max, "t.yaml", &bp, err,
					      sizeof(err)),
			 0);
	text[max] = '\n';
	assert_int_equal(blueprint_parse_text(text, max + 1, "t.yaml", &bp, err,
					      sizeof(err)),
			 -1);
	assert_string_equal(err, "t.yaml: larger than 64 KiB (a blueprint is "
				 "a few lines)");

	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, max, f), max);
	fflush(f);
	assert_int_equal(blueprint_parse_file(path, &bp, err, sizeof(err)), 0);
	assert_int_equal(fwrite("\n", 1, 1, f), 1);
	fclose(f);
	assert_int_equal(blueprint_parse_file(path, &bp, err, sizeof(err)), -1);
	assert_non_null(strstr(err, ": larger than 64 KiB"));
	unlink(path);
	free(text);
}

static void blueprint_refuses_missing_and_non_regular_files(void **state)
{
	char err[ERRLEN];
	struct blueprint bp;

	assert_int_equal(blueprint_parse_file("/nonexistent/x.yaml", &bp, err,
					      sizeof(err)),
			 -1);
	assert_string_equal(err, "/nonexistent/x.yaml: cannot open: No such "
				 "file or directory");
	assert_int_equal(
		blueprint_parse_file("/dev/null", &bp, err, sizeof(err)), -1);
	assert_string_equal(err, "/dev/null: not a regular file");
	assert_int_equal(
		blueprint_parse_file(BLUEPRINT_DIR, &bp, err, sizeof(err)), -1);
	assert_non_null(strstr(err, ": not a regular file"));
}

/*
 * Each file in tests/blueprints/ shows one kind of error; its first line
 * says "# expect: TEXT" and the error must contain TEXT.
 */
static void blueprint_rejects_every_bad_fixture(void **state)
{
	DIR *d = opendir(BLUEPRINT_BAD_DIR);
	char path[512], err[ERRLEN];
	struct dirent *de;
	struct blueprint bp;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name), len;
		char *text, *want, *nl;

		if (l < 6 || strcmp(de->d_name + l - 5, ".yaml"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", BLUEPRINT_BAD_DIR,
			 de->d_name);
		text = read_all(path, &len);
		if (len < 10 || strncmp(text, "# expect: ", 10))
			fail_msg("%s: first line must be '# expect: ...'",
				 path);
		want = text + 10;
		nl = memchr(want, '\n', len - 10);
		assert_non_null(nl);
		*nl = '\0';

		memset(err, 'x', sizeof(err));
		if (!blueprint_parse_file(path, &bp, err, sizeof(err)))
			fail_msg("%s: parsed, expected '%s'", path, want);
		assert_clean_error(err, sizeof(err), path);
		if (!strstr(err, want))
			fail_msg("%s:\nwanted '%s'\ngot    '%s'", path, want,
				 err);
		free(text);
		n++;
	}
	closedir(d);
	assert_true(n >= 30);
}

/* --- robustness --------------------------------------------------------- */

/* Every valid example cut at every byte: a clean error or a sane parse. */
static void blueprint_survives_truncated_input(void **state)
{
	char path[512];
	size_t i, off, len;
	char *text;

	for (i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", BLUEPRINT_DIR,
			 examples[i]);
		text = read_all(path, &len);
		for (off = 0; off <= len; off++)
			parse_robust(text, off);
		free(text);
	}
}

/* xorshift: a fixed-seed generator, so a failure reproduces */
static uint32_t next_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/*
 * Every valid example with each byte replaced by each YAML-significant
 * character, then random text from a YAML-ish alphabet and random bytes.
 */
static void blueprint_survives_mutated_and_random_input(void **state)
{
	static const char subst[] = {
		'\0', '\n', ':', '&',  '*', '!', '[', '{',	  '"',
		'\'', '-',  '#', '\t', '?', '|', '%', (char)0xff, (char)0xc3};
	static const char alpha[] = "abcsmyG019 :\n-[]{},&*!#'\"|>?%@`\t\\.";
	char path[512], buf[1024];
	uint32_t seed = 0x9e3779b9;
	size_t i, j, k, off, len;
	char *text;

	for (i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", BLUEPRINT_DIR,
			 examples[i]);
		text = read_all(path, &len);
		for (off = 0; off < len; off++) {
			char keep = text[off];

			for (k = 0; k < sizeof(subst); k++) {
				text[off] = subst[k];
				parse_robust(text, len);
			}
			text[off] = keep;
		}
		free(text);
	}
	for (i = 0; i < 3000; i++) {
		len = next_rand(&seed) % sizeof(buf);
		for (j = 0; j < len; j++) {
			uint32_t r = next_rand(&seed);

			buf[j] = (i & 1) ? (char)r
					 : alpha[r % (sizeof(alpha) - 1)];
		}
		parse_robust(buf, len);
	}
}

/* Deep nesting and a 64 KiB scalar end in a clean error, quickly. */
static void blueprint_survives_deep_nesting_and_huge_scalars(void **state)
{
	static const char head[] = BASE "sms: 8\nmemory: 1G\nname2: ";
	const size_t max = 64 * 1024, hlen = sizeof(head) - 1;
	char *text = malloc(max);
	size_t i;

	assert_non_null(text);
	memset(text, '[', max);
	parse_robust(text, max);
	for (i = 0; i + 3 < max; i += 3)
		memcpy(text + i, "a: ", 3);
	parse_robust(text, max);
	memcpy(text, head, hlen);
	memset(text + hlen, 'v', max - hlen);
	parse_robust(text, max);
	for (i = 0; i < max; i++)
		text[i] = (i % 4 == 3) ? '\n' : "- a"[i % 4];
	parse_robust(text, max);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(blueprint_parses_inference_small),
		cmocka_unit_test(blueprint_parses_training_large),
		cmocka_unit_test(blueprint_parses_isolated),
		cmocka_unit_test(blueprint_parses_group_shared),
		cmocka_unit_test(
			blueprint_every_example_in_blueprints_dir_parses),
		cmocka_unit_test(blueprint_applies_defaults),
		cmocka_unit_test(blueprint_accepts_sizes_with_binary_suffixes),
		cmocka_unit_test(blueprint_accepts_time_limits_in_ms_s_and_m),
		cmocka_unit_test(blueprint_accepts_gpu_any_or_index),
		cmocka_unit_test(
			blueprint_accepts_consumer_user_or_group_by_name_or_number),
		cmocka_unit_test(blueprint_accepts_the_longest_names),
		cmocka_unit_test(blueprint_rejects_unknown_field),
		cmocka_unit_test(blueprint_rejects_unknown_field_in_consumer),
		cmocka_unit_test(blueprint_keys_are_case_sensitive),
		cmocka_unit_test(
			blueprint_rejects_future_fields_saying_when_they_come),
		cmocka_unit_test(
			blueprint_rejects_a_policy_saying_where_it_belongs),
		cmocka_unit_test(blueprint_reads_the_policy_fields),
		cmocka_unit_test(blueprint_checks_the_policy_fields),
		cmocka_unit_test(blueprint_rejects_both_sms_and_slices),
		cmocka_unit_test(blueprint_rejects_neither_sms_nor_slices),
		cmocka_unit_test(
			blueprint_reports_missing_field_at_the_mapping_start),
		cmocka_unit_test(blueprint_rejects_duplicate_fields),
		cmocka_unit_test(blueprint_rejects_both_user_and_group),
		cmocka_unit_test(blueprint_rejects_anchors_aliases_and_tags),
		cmocka_unit_test(blueprint_rejects_multiple_documents),
		cmocka_unit_test(
			blueprint_rejects_a_top_level_that_is_not_a_mapping),
		cmocka_unit_test(blueprint_rejects_values_that_are_not_scalars),
		cmocka_unit_test(blueprint_checks_every_range),
		cmocka_unit_test(blueprint_checks_name_and_consumer_shapes),
		cmocka_unit_test(blueprint_error_names_file_line_and_field),
		cmocka_unit_test(blueprint_syntax_error_names_line_and_column),
		cmocka_unit_test(blueprint_error_quotes_hostile_values_safely),
		cmocka_unit_test(blueprint_leaves_struct_untouched_on_error),
		cmocka_unit_test(blueprint_isolation_name_names_both),
		cmocka_unit_test(blueprint_refuses_input_over_64k),
		cmocka_unit_test(
			blueprint_refuses_missing_and_non_regular_files),
		cmocka_unit_test(blueprint_rejects_every_bad_fixture),
		cmocka_unit_test(blueprint_survives_truncated_input),
		cmocka_unit_test(blueprint_survives_mutated_and_random_input),
		cmocka_unit_test(
			blueprint_survives_deep_nesting_and_huge_scalars),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
