/* SPDX-License-Identifier: MIT */
/*
 * The guest library's parallel memcpy (client_memcpy.c): every byte
 * lands where it should, and many large copies in a row with many
 * helpers never hang. A helper used to count itself into a job with a
 * plain increment while another helper counted itself out atomically;
 * the lost update left the owner waiting for ever for a helper that had
 * long gone (copy_sizes hung on the GPU machine, 3 helpers). The stress
 * case is bounded: an alarm fails it when one copy takes 10 s.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "client_memcpy.h"

#define BIG	     ((4u << 20) + 3) /* several pieces, odd length */
#define STRESS_COPY  (1u << 20)	      /* parallel: above 512 KiB */
#define STRESS_RUNS  200000
#define STRESS_NS    3000000000L /* at most 3 s of copies */
#define HANG_ALARM_S 10		 /* one copy this long: hung, fail */

static void on_alarm(int sig)
{
	static const char msg[] = "test_client_memcpy: client_memcpy hung "
				  "(a job's helper count never came back "
				  "to 0)\n";
	ssize_t n = write(2, msg, sizeof(msg) - 1);

	(void)n;
	(void)sig;
	_exit(1);
}

static long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void fill(unsigned char *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31 + seed);
}

/* Sizes below, at and above the parallel threshold, at odd offsets. */
static void memcpy_copies_every_byte(void **state)
{
	static const size_t sizes[] = {
		1, 4096, (512u << 10) - 1, 512u << 10, (1u << 20) + 1, BIG};
	unsigned char *src = malloc(BIG + 64), *dst = malloc(BIG + 64);

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];

		fill(src + 3, n, (unsigned int)k);
		memset(dst, 0xee, BIG + 64);
		client_memcpy(dst + 5, src + 3, n);
		assert_memory_equal(dst + 5, src + 3, n);
		assert_int_equal(dst[4], 0xee);
		assert_int_equal(dst[5 + n], 0xee);
	}
	free(src);
	free(dst);
}

/*
 * Back-to-back parallel copies with more helpers than pieces: helpers
 * join a job late, while others leave it. Every copy must return.
 */
static void memcpy_many_copies_never_hang(void **state)
{
	unsigned char *src = malloc(STRESS_COPY), *dst = malloc(STRESS_COPY);
	long t0 = now_ns();
	int i;

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	fill(src, STRESS_COPY, 7);
	signal(SIGALRM, on_alarm);
	for (i = 0; i < STRESS_RUNS && now_ns() - t0 < STRESS_NS; i++) {
		src[i % STRESS_COPY] = (unsigned char)i;
		alarm(HANG_ALARM_S);
		client_memcpy(dst, src, STRESS_COPY);
		assert_int_equal(dst[i % STRESS_COPY], (unsigned char)i);
	}
	alarm(0);
	assert_memory_equal(dst, src, STRESS_COPY);
	free(src);
	free(dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(memcpy_copies_every_byte),
		cmocka_unit_test(memcpy_many_copies_never_hang),
	};

	/* the pool reads this once, at the first large copy: many helpers
	 * make late joiners common even on a 2-CPU machine */
	setenv("VGPU_COPY_THREADS", "8", 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
