/* SPDX-License-Identifier: MIT */
/*
 * libcuda.so.1's entry-point surface (issue 17): cuGetProcAddress gives,
 * for every (name, version, flags) of procmap-cuda13.txt, our function of
 * the symbol NVIDIA's driver gave (by dladdr, the exact name), and not
 * found where NVIDIA's driver found nothing; every request NVIDIA's
 * runtime and libraries made (tests/trace/inventory-cuda13.txt) is
 * served; hostile requests fail without a crash; and every generated
 * stub fails with CUDA_ERROR_NOT_SUPPORTED, touching none of its
 * arguments, and says so once. Linked against the built libcuda.so.1.
 */
#define __CUDA_API_VERSION_INTERNAL 1

#include <dlfcn.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>

#define MAX_STEPS 16
/* NVIDIA's 580 driver's CUDA version, which ours reports too */
#define DRIVER_VERSION 13000

/* One line of the map: name and flags, then (version, symbol|NULL). */
struct map_line {
	char name[128];
	int flags;
	int n;
	int version[MAX_STEPS];
	char symbol[MAX_STEPS][128]; /* "" for "-" */
};

static struct map_line *map;
static int map_n;

static void load_map(void)
{
	FILE *f = fopen(PROCMAP, "r");
	char line[4096];

	assert_non_null(f);
	map = calloc(4096, sizeof(*map));
	assert_non_null(map);
	while (fgets(line, sizeof(line), f)) {
		struct map_line *m = &map[map_n];
		char *tok, *save;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		assert_true(map_n < 4096);
		tok = strtok_r(line, " \n", &save);
		snprintf(m->name, sizeof(m->name), "%s", tok);
		tok = strtok_r(NULL, " \n", &save);
		m->flags = atoi(tok);
		while ((tok = strtok_r(NULL, " \n", &save))) {
			assert_true(m->n < MAX_STEPS);
			m->version[m->n] = atoi(tok);
			tok = strtok_r(NULL, " \n", &save);
			assert_non_null(tok);
			snprintf(m->symbol[m->n], sizeof(m->symbol[0]), "%s",
				 strcmp(tok, "-") ? tok : "");
			m->n++;
		}
		assert_true(m->n > 0);
		map_n++;
	}
	fclose(f);
	assert_true(map_n > 900);
}

static const struct map_line *map_find(const char *name, int flags)
{
	for (int i = 0; i < map_n; i++)
		if (!strcmp(map[i].name, name) && map[i].flags == flags)
			return &map[i];
	return NULL;
}

/* The name of the exported symbol at p, or "" when p is not one. */
static const char *symbol_at(void *p)
{
	Dl_info di;

	if (!p || !dladdr(p, &di) || !di.dli_sname || di.dli_saddr != p)
		return "";
	return di.dli_sname;
}

/*
 * What the map says for version v: the symbol, or "" with *why the
 * status: a later step with a symbol makes it VERSION_NOT_SUFFICIENT.
 */
static const char *map_answer(const struct map_line *m, int v,
			      CUdriverProcAddressQueryResult *why)
{
	const char *sym = "";

	*why = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	for (int i = 0; i < m->n; i++) {
		if (m->version[i] <= v)
			sym = m->symbol[i];
		else if (m->symbol[i][0])
			*why = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
	}
	if (sym[0])
		*why = CU_GET_PROC_ADDRESS_SUCCESS;
	return sym;
}

static int checked;

/* Asks both entry points for (name, v, flags); compares with the map. */
static void check_request(const struct map_line *m, int v, cuuint64_t flags)
{
	CUdriverProcAddressQueryResult want_st, st = 99;
	const char *want = map_answer(m, v, &want_st);
	void *fn = (void *)1, *fn1 = (void *)1;
	CUresult rc = cuGetProcAddress_v2(m->name, &fn, v, flags, &st);
	CUresult rc1 = cuGetProcAddress(m->name, &fn1, v, flags);

	/* above the driver's version: refused, as NVIDIA's driver does */
	if (v > DRIVER_VERSION) {
		if (rc != CUDA_ERROR_INVALID_VALUE || fn || st != 99 ||
		    rc1 != rc || fn1)
			fail_msg("%s at %d (above the driver's %d): rc %d "
				 "status %d, want CUDA_ERROR_INVALID_VALUE",
				 m->name, v, DRIVER_VERSION, (int)rc, (int)st);
		checked++;
		return;
	}
	if (strcmp(symbol_at(fn), want) || st != want_st ||
	    rc != CUDA_SUCCESS || fn1 != fn || rc1 != rc)
		fail_msg("%s at %d flags %llu: got %s (rc %d status %d), "
			 "want %s (status %d)",
			 m->name, v, (unsigned long long)flags, symbol_at(fn),
			 (int)rc, (int)st, want[0] ? want : "not found",
			 (int)want_st);
	if (!want[0])
		assert_null(fn);
	checked++;
}

static void proc_gives_nvidias_variant_at_every_step(void **state)
{
	(void)state;
	load_map();
	checked = 0;
	for (int i = 0; i < map_n; i++) {
		const struct map_line *m = &map[i];
		/* flags 0 is the legacy search, as LEGACY_STREAM */
		cuuint64_t alt = m->flags ? (cuuint64_t)m->flags
					  : CU_GET_PROC_ADDRESS_LEGACY_STREAM;

		for (int j = 0; j < m->n; j++) {
			check_request(m, m->version[j], m->flags);
			check_request(m, m->version[j] - 1, m->flags);
			check_request(m, m->version[j] + 10, alt);
		}
		check_request(m, 13000, m->flags);
		check_request(m, 13010, m->flags);
		check_request(m, 99999, alt);
	}
	print_message("%d requests over %d map lines\n", checked, map_n);
}

static void proc_serves_every_request_of_nvidias_runtime(void **state)
{
	FILE *f = fopen(INVENTORY, "r");
	char line[1024], prog[64], kind[16], name[256];
	int v, n = 0;
	unsigned long long flags;

	(void)state;
	if (!map)
		load_map();
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		const struct map_line *m;
		CUdriverProcAddressQueryResult st;
		void *fn = NULL;

		if (sscanf(line, "%63s %15s %255s %d %llu", prog, kind, name,
			   &v, &flags) != 5 ||
		    strcmp(kind, "proc"))
			continue;
		if (!strcmp(name, "\"\"")) { /* the runtime asks for "" once */
			assert_int_equal(
				cuGetProcAddress_v2("", &fn, v, flags, &st),
				CUDA_SUCCESS);
			assert_int_equal(st,
					 CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
			assert_null(fn);
			continue;
		}
		m = map_find(name, flags & 2 ? 2 : 0);
		if (!m)
			fail_msg("%s: not in the map", name);
		assert_int_equal(cuGetProcAddress_v2(name, &fn, v, flags, &st),
				 CUDA_SUCCESS);
		assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);
		check_request(m, v, flags);
		n++;
	}
	fclose(f);
	assert_true(n > 1000);
}

static void proc_refuses_hostile_requests(void **state)
{
	static const int versions[] = {0, -1, INT_MIN, 1999};
	static const cuuint64_t bad_flags[] = {4, 8, 1ULL << 63, ~0ULL};
	CUdriverProcAddressQueryResult st;
	char *longname = malloc(1 << 16);
	void *fn;

	(void)state;
	assert_non_null(longname);
	memset(longname, 'c', (1 << 16) - 1);
	longname[(1 << 16) - 1] = '\0';
	assert_int_equal(cuGetProcAddress_v2(NULL, &fn, 13000, 0, &st),
			 CUDA_ERROR_INVALID_VALUE);
	assert_null(fn);
	assert_int_equal(cuGetProcAddress_v2("cuInit", NULL, 13000, 0, &st),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGetProcAddress(NULL, NULL, 13000, 0),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGetProcAddress_v2("cuInit", &fn, 13000, 0, NULL),
			 CUDA_SUCCESS);
	assert_ptr_equal(fn, (void *)cuInit);
	assert_int_equal(cuGetProcAddress_v2("", &fn, 13000, 0, &st),
			 CUDA_SUCCESS);
	assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	assert_int_equal(cuGetProcAddress_v2(longname, &fn, 13000, 0, &st),
			 CUDA_SUCCESS);
	assert_int_equal(cuGetProcAddress_v2("cuInit_v2", &fn, 13000, 0, &st),
			 CUDA_SUCCESS);
	assert_int_equal(cuGetProcAddress_v2("cudbgMain", &fn, 13000, 0, &st),
			 CUDA_SUCCESS);
	assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		assert_int_equal(
			cuGetProcAddress_v2("cuInit", &fn, versions[i], 0, &st),
			CUDA_SUCCESS);
		assert_int_equal(st,
				 CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
		assert_null(fn);
	}
	/* a version above the driver's (13000 here, as NVIDIA's 580 driver):
	 * CUDA_ERROR_INVALID_VALUE, the status untouched (measured on the
	 * H200: 13010, 14000 and 99000 alike); at the driver's own version
	 * the newest variant */
	for (int v = 13001; v <= 99000; v += 43000) {
		fn = (void *)1;
		st = 77;
		assert_int_equal(
			cuGetProcAddress_v2("cuCtxCreate", &fn, v, 0, &st),
			CUDA_ERROR_INVALID_VALUE);
		assert_null(fn);
		assert_int_equal(st, 77);
	}
	assert_int_equal(
		cuGetProcAddress_v2("cuCtxCreate", &fn, INT_MAX, 0, &st),
		CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGetProcAddress_v2("cuCtxCreate", &fn, 13000, 0, &st),
			 CUDA_SUCCESS);
	assert_string_equal(symbol_at(fn), "cuCtxCreate_v4");
	for (size_t i = 0; i < sizeof(bad_flags) / sizeof(bad_flags[0]); i++) {
		fn = (void *)1;
		assert_int_equal(cuGetProcAddress_v2("cuInit", &fn, 13000,
						     bad_flags[i], &st),
				 CUDA_ERROR_INVALID_VALUE);
		assert_null(fn);
	}
	free(longname);
}

/* Runs fn with stderr in a file; returns what it wrote (static). */
static const char *stderr_of(CUresult (*fn)(void *, void *, void *, void *,
					    void *, void *, void *, void *,
					    void *, void *, void *, void *),
			     void *arg, CUresult *rc)
{
	static char buf[4096];
	FILE *tmp = tmpfile();
	int saved = dup(2);
	size_t n;

	assert_non_null(tmp);
	assert_true(saved >= 0);
	fflush(stderr);
	assert_true(dup2(fileno(tmp), 2) == 2);
	*rc = fn(arg, arg, arg, arg, arg, arg, arg, arg, arg, arg, arg, arg);
	fflush(stderr);
	assert_true(dup2(saved, 2) == 2);
	close(saved);
	rewind(tmp);
	n = fread(buf, 1, sizeof(buf) - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
	return buf;
}

static void stubs_fail_once_loudly_and_touch_nothing(void **state)
{
	FILE *f = fopen(STUBS_SRC, "r");
	/* any read or write through an argument faults */
	void *poison =
		mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char line[512], name[256], want[512];
	int n = 0;

	(void)state;
	assert_non_null(f);
	assert_true(poison != MAP_FAILED);
	while (fgets(line, sizeof(line), f)) {
		CUresult (*fn)(void *, void *, void *, void *, void *, void *,
			       void *, void *, void *, void *, void *, void *);
		CUresult rc;

		if (sscanf(line, "CUDA_UNSUPPORTED(%255[^)])", name) != 1)
			continue;
		*(void **)&fn = dlsym(RTLD_DEFAULT, name);
		if (!fn)
			fail_msg("%s is not exported", name);
		snprintf(want, sizeof(want),
			 "vgpu: %s is not supported on a vGPU "
			 "(CUDA_ERROR_NOT_SUPPORTED)\n",
			 name);
		assert_string_equal(stderr_of(fn, poison, &rc), want);
		assert_int_equal(rc, CUDA_ERROR_NOT_SUPPORTED);
		assert_string_equal(stderr_of(fn, NULL, &rc), "");
		assert_int_equal(rc, CUDA_ERROR_NOT_SUPPORTED);
		n++;
	}
	fclose(f);
	munmap(poison, 4096);
	assert_true(n > 100);
	print_message("%d stubs\n", n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(proc_gives_nvidias_variant_at_every_step),
		cmocka_unit_test(proc_serves_every_request_of_nvidias_runtime),
		cmocka_unit_test(proc_refuses_hostile_requests),
		cmocka_unit_test(stubs_fail_once_loudly_and_touch_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
