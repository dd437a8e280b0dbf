/* SPDX-License-Identifier: MIT */
/*
 * CRC32C, reflected polynomial 0x82f63b78, initial value and final xor
 * 0xffffffff (the usual convention: crc32c("123456789") = 0xe3069283).
 */
#include <pthread.h>
#include <string.h>

#include "crc32c.h"

#define CRC32C_POLY 0x82f63b78u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
		table[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			table[j][i] = (table[j - 1][i] >> 8) ^
				      table[0][table[j - 1][i] & 0xff];
}

/* Slicing-by-8 on the raw (not inverted) register. */
static uint32_t crc_soft(uint32_t c, const unsigned char *p, size_t n)
{
	uint64_t w;

	pthread_once(&table_once, table_init);
	while (n && ((uintptr_t)p & 7)) {
		c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
		n--;
	}
	while (n >= 8) {
		memcpy(&w, p, 8);
		w ^= c; /* little-endian hosts only (x86-64, aarch64) */
		c = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^
		    table[5][(w >> 16) & 0xff] ^ table[4][(w >> 24) & 0xff] ^
		    table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
		    table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
		p += 8;
		n -= 8;
	}
	while (n--)
		c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
	return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t
crc_hw(uint32_t c, const unsigned char *p, size_t n)
{
	uint64_t c64 = c, w;

	while (n && ((uintptr_t)p & 7)) {
		c64 = __builtin_ia32_crc32qi((uint32_t)c64, *p++);
		n--;
	}
	while (n >= 8) {
		memcpy(&w, p, 8);
		c64 = __builtin_ia32_crc32di(c64, w);
		p += 8;
		n -= 8;
	}
	while (n--)
		c64 = __builtin_ia32_crc32qi((uint32_t)c64, *p++);
	return (uint32_t)c64;
}

static int have_hw(void)
{
	static int known = -1;

	if (known < 0) {
		__builtin_cpu_init();
		known = __builtin_cpu_supports("sse4.2") ? 1 : 0;
	}
	return known;
}
#endif

uint32_t crc32c(uint32_t crc, const void *buf, size_t n)
{
	uint32_t c = ~crc;

#if defined(__x86_64__)
	if (have_hw())
		return ~crc_hw(c, buf, n);
#endif
	return ~crc_soft(c, buf, n);
}
