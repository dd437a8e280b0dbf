/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of vGPU state files (host-daemon/state_file.c) and CRC32C:
 * a file written and read back; every way a file can be bad (cut short
 * anywhere, any bit flipped, another version, another vGPU, another
 * allocation table, not a file, data after the end) is refused with a
 * sentence that says what was wrong.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "crc32c.h"
#include "state_file.h"

#define VA   0x500000000000ull
#define GRAN (2ull << 20)

/* Bit by bit, as the definition says (reference for the fast paths). */
static uint32_t crc_ref(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	int k;

	while (n--) {
		c ^= *p++;
		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
	}
	return ~c;
}

static void crc_vectors(void **state)
{
	uint8_t buf[1000];
	size_t i, a;

	(void)state;
	assert_int_equal(crc32c(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(crc32c(0, "", 0), 0);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	/* every alignment and length, and split in two */
	for (a = 0; a < 9; a++) {
		for (i = 0; i + a <= 200; i += 13) {
			assert_int_equal(crc32c(0, buf + a, i),
					 crc_ref(buf + a, i));
			assert_int_equal(crc32c(crc32c(0, buf + a, i / 2),
						buf + a + i / 2, i - i / 2),
					 crc_ref(buf + a, i));
		}
	}
}

static int tmpfile_fd(void)
{
	int fd = memfd_create("state-test", 0);

	assert_true(fd >= 0);
	return fd;
}

static const struct state_alloc allocs[] = {
	{VA, 4096, 1, 0},
	{VA + 4096, 256, 2, 0},
	{VA + 8 * GRAN, 3 * GRAN, 1, 0},
};

static uint8_t mem0[8192], mem1[3 * 1024 * 1024];

/* A small but complete file: 3 allocations, a library, a module
 * variable, memory of both granule runs. */
static void write_file(int fd, const char *name, uint16_t bump_major)
{
	struct state_header h;
	struct state_writer w;
	struct state_library l = {
		.owner = 1, .handle = 0x10001, .image_len = 100};
	struct state_global g = {.owner = 2,
				 .library = 0x10001,
				 .addr = 0x7f0000001000ull,
				 .bytes = 16};
	struct state_memory m;
	uint8_t image[100], gv[16];
	size_t i;

	for (i = 0; i < sizeof(mem0); i++)
		mem0[i] = (uint8_t)(i * 7);
	for (i = 0; i < sizeof(mem1); i++)
		mem1[i] = (uint8_t)(i * 13 + 1);
	memset(image, 0xab, sizeof(image));
	memset(gv, 0x5a, sizeof(gv));
	memset(&h, 0, sizeof(h));
	snprintf(h.vgpu, sizeof(h.vgpu), "%s", name);
	h.va_base = VA;
	h.va_size = 1ull << 40;
	h.granule = GRAN;
	h.memory_quota = 1ull << 30;
	h.nallocs = 3;
	h.nlibraries = 1;
	h.nglobals = 1;
	h.nmemory = 2;
	h.memory_bytes = sizeof(mem0) + sizeof(mem1);
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(state_writer_init(&w, fd, &h), 0);
	assert_int_equal(state_writer_record(&w, STATE_REC_ALLOCS, allocs,
					     sizeof(allocs), NULL, 0),
			 0);
	assert_int_equal(state_writer_record(&w, STATE_REC_LIBRARY, &l,
					     sizeof(l), image, sizeof(image)),
			 0);
	assert_int_equal(state_writer_record(&w, STATE_REC_GLOBAL, &g,
					     sizeof(g), gv, sizeof(gv)),
			 0);
	m.va = VA;
	m.len = sizeof(mem0);
	assert_int_equal(state_writer_record(&w, STATE_REC_MEMORY, &m,
					     sizeof(m), mem0, sizeof(mem0)),
			 0);
	/* a big record in pieces */
	m.va = VA + 8 * GRAN;
	m.len = sizeof(mem1);
	assert_int_equal(state_writer_begin(&w, STATE_REC_MEMORY,
					    sizeof(m) + sizeof(mem1)),
			 0);
	assert_int_equal(state_writer_data(&w, &m, sizeof(m)), 0);
	for (i = 0; i < sizeof(mem1); i += 100000)
		assert_int_equal(state_writer_data(&w, mem1 + i,
						   i + 100000 <= sizeof(mem1)
							   ? 100000
							   : sizeof(mem1) - i),
				 0);
	assert_int_equal(state_writer_end(&w), 0);
	assert_int_equal(state_writer_finish(&w), 0);
	state_writer_release(&w);
	if (bump_major) {
		/* a version this reader does not know, with a good CRC */
		struct state_header hd;

		assert_int_equal(pread(fd, &hd, sizeof(hd), 0), sizeof(hd));
		hd.major = (uint16_t)(hd.major + bump_major);
		hd.crc = 0;
		hd.crc = crc32c(0, &hd, sizeof(hd));
		assert_int_equal(pwrite(fd, &hd, sizeof(hd), 0), sizeof(hd));
	}
}

static const struct state_expect expect_a = {
	.vgpu = "a", .va_base = VA, .va_size = 1ull << 40, .granule = GRAN};

static void round_trip(void **state)
{
	struct state_header h;
	struct state_reader r;
	struct state_rec rec;
	struct state_memory m;
	uint8_t *buf = malloc(sizeof(mem1));
	char err[512];
	int fd = tmpfile_fd(), k, nmem = 0;

	(void)state;
	write_file(fd, "a", 0);
	assert_int_equal(state_file_verify(fd, &expect_a, &h, err, sizeof(err)),
			 0);
	assert_string_equal(h.vgpu, "a");
	assert_int_equal(h.nallocs, 3);
	/* and read the memory back */
	assert_int_equal(state_reader_init(&r, fd, err, sizeof(err)), 0);
	while ((k = state_reader_next(&r, &rec, err, sizeof(err))) == 1) {
		if (rec.type != STATE_REC_MEMORY)
			continue;
		assert_int_equal(
			state_reader_data(&r, &m, sizeof(m), err, sizeof(err)),
			0);
		assert_int_equal(
			state_reader_data(&r, buf, m.len, err, sizeof(err)), 0);
		if (m.va == VA)
			assert_memory_equal(buf, mem0, sizeof(mem0));
		else
			assert_memory_equal(buf, mem1, sizeof(mem1));
		nmem++;
	}
	assert_int_equal(k, 0);
	assert_int_equal(nmem, 2);
	state_reader_release(&r);
	free(buf);
	close(fd);
}

/* A copy of fd's first n bytes in a new memfd. */
static int cut(int fd, size_t n)
{
	int out = tmpfile_fd();
	uint8_t *b = malloc(n ? n : 1);

	assert_int_equal(pread(fd, b, n, 0), (ssize_t)n);
	assert_int_equal(pwrite(out, b, n, 0), (ssize_t)n);
	free(b);
	return out;
}

static void truncated_anywhere(void **state)
{
	struct stat st;
	char err[512];
	int fd = tmpfile_fd(), t;
	size_t n;

	(void)state;
	write_file(fd, "a", 0);
	assert_int_equal(fstat(fd, &st), 0);
	for (n = 0; n < (size_t)st.st_size; n += n < 600 ? 7 : 99991) {
		t = cut(fd, n);
		err[0] = '\0';
		assert_int_equal(
			state_file_verify(t, &expect_a, NULL, err, sizeof(err)),
			-1);
		if (n == 0)
			assert_non_null(strstr(err, "empty"));
		else if (n >= 8)
			assert_non_null(strstr(err, "truncated"));
		close(t);
	}
	t = cut(fd, (size_t)st.st_size - 1);
	assert_int_equal(
		state_file_verify(t, &expect_a, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "truncated"));
	close(t);
	close(fd);
}

static void flipped_bits(void **state)
{
	struct stat st;
	char err[512];
	uint8_t b;
	int fd = tmpfile_fd(), fails = 0;
	off_t at;

	(void)state;
	write_file(fd, "a", 0);
	assert_int_equal(fstat(fd, &st), 0);
	for (at = 0; at < st.st_size; at += at < 1024 ? 3 : 65537) {
		assert_int_equal(pread(fd, &b, 1, at), 1);
		b ^= (uint8_t)(1u << (at % 8));
		assert_int_equal(pwrite(fd, &b, 1, at), 1);
		err[0] = '\0';
		if (state_file_verify(fd, &expect_a, NULL, err, sizeof(err)) ==
		    -1)
			fails++;
		else
			fail_msg("a flipped bit at byte %lld went unnoticed",
				 (long long)at);
		assert_true(err[0] != '\0');
		b ^= (uint8_t)(1u << (at % 8));
		assert_int_equal(pwrite(fd, &b, 1, at), 1);
	}
	assert_true(fails > 100);
	/* one in the middle of the big memory record: named as such */
	at = st.st_size - 4096;
	assert_int_equal(pread(fd, &b, 1, at), 1);
	b ^= 0x10;
	assert_int_equal(pwrite(fd, &b, 1, at), 1);
	assert_int_equal(
		state_file_verify(fd, &expect_a, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "checksum mismatch"));
	assert_non_null(strstr(err, "memory at 0x500001000000"));
	close(fd);
}

static void wrong_version_and_vgpu(void **state)
{
	char err[512];
	int fd = tmpfile_fd();

	(void)state;
	write_file(fd, "a", 1);
	assert_int_equal(
		state_file_verify(fd, &expect_a, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "version 2.0"));
	write_file(fd, "b", 0);
	assert_int_equal(
		state_file_verify(fd, &expect_a, NULL, err, sizeof(err)), -1);
	assert_string_equal(err, "the file holds vGPU 'b', not 'a'");
	close(fd);
}

static int match_calls;

/* The live table has the second allocation owned by client 3. */
static int alloc_match(void *ctx, const struct state_alloc *a, size_t n,
		       char *err, size_t len)
{
	size_t i;

	(void)ctx;
	match_calls++;
	for (i = 0; i < n; i++) {
		if (a[i].owner == 2) {
			snprintf(err, len,
				 "allocation 0x%llx belongs to client 3 now",
				 (unsigned long long)a[i].va);
			return -1;
		}
	}
	return 0;
}

static void allocation_table_mismatch(void **state)
{
	struct state_expect e = expect_a;
	char err[512];
	int fd = tmpfile_fd();

	(void)state;
	write_file(fd, "a", 0);
	e.alloc_match = alloc_match;
	e.nallocs = 3;
	assert_int_equal(state_file_verify(fd, &e, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "belongs to client 3"));
	assert_int_equal(match_calls, 1);
	close(fd);
}

static void not_a_file(void **state)
{
	char err[512];
	int p[2], d;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(
		state_file_verify(p[0], &expect_a, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a regular file (a pipe)"));
	close(p[0]);
	close(p[1]);
	d = open("/", O_RDONLY | O_DIRECTORY);
	assert_true(d >= 0);
	assert_int_equal(
		state_file_verify(d, &expect_a, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "directory"));
	close(d);
	d = tmpfile_fd();
	assert_int_equal(write(d, "hello, world, this is no state file", 35),
			 35);
	assert_int_equal(
		state_file_verify(d, &expect_a, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a vgpu state file"));
	close(d);
}

static void data_after_end(void **state)
{
	struct stat st;
	char err[512];
	int fd = tmpfile_fd();

	(void)state;
	write_file(fd, "a", 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(pwrite(fd, "x", 1, st.st_size), 1);
	assert_int_equal(
		state_file_verify(fd, &expect_a, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "there is data after the end record"));
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crc_vectors),
		cmocka_unit_test(round_trip),
		cmocka_unit_test(truncated_anywhere),
		cmocka_unit_test(flipped_bits),
		cmocka_unit_test(wrong_version_and_vgpu),
		cmocka_unit_test(allocation_table_mismatch),
		cmocka_unit_test(not_a_file),
		cmocka_unit_test(data_after_end),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
