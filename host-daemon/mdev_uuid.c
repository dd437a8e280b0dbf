/* SPDX-License-Identifier: MIT */
/* mdev UUIDs as text (mdev_uuid.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "mdev_uuid.h"

void mdev_uuid_format(const uint8_t u[16], char out[MDEV_UUID_TEXT])
{
	snprintf(out, MDEV_UUID_TEXT,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int mdev_uuid_parse(const char *text, uint8_t out[16])
{
	int i, n = 0, hi, lo;
	uint8_t uuid[16];

	if (strlen(text) != MDEV_UUID_TEXT - 1)
		return -1;
	for (i = 0; i < MDEV_UUID_TEXT - 1;) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (text[i++] != '-')
				return -1;
			continue;
		}
		hi = hex_digit(text[i]);
		lo = hex_digit(text[i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		uuid[n++] = (uint8_t)(hi << 4 | lo);
		i += 2;
	}
	memcpy(out, uuid, sizeof(uuid));
	return 0;
}

int mdev_uuid_random(uint8_t uuid[16])
{
	ssize_t n = getrandom(uuid, 16, 0);

	if (n != 16)
		return n < 0 ? -errno : -EIO;
	uuid[6] = (uuid[6] & 0x0f) | 0x40; /* version 4 */
	uuid[8] = (uuid[8] & 0x3f) | 0x80; /* RFC 4122 variant */
	return 0;
}

bool mdev_uuid_is_zero(const uint8_t uuid[16])
{
	static const uint8_t zero[16];

	return !memcmp(uuid, zero, 16);
}
