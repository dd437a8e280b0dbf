/* SPDX-License-Identifier: MIT */
/*
 * Numeric settings from the environment (the simulator's VGPU_SIM_*, the
 * worker's test knobs): one parser, one set of messages.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "env_number.h"

/*
 * Read one numeric setting: unset means the default; anything else must
 * be a plain decimal number (with a K/M/G suffix where allowed) within
 * [min, max].
 */
int env_number(const char *var, uint64_t def, int suffix_ok, uint64_t min,
	       uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	const char *s = getenv(var);
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!s) {
		*out = def;
		return 0;
	}
	errno = 0;
	if (*s < '0' || *s > '9')
		goto bad;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		goto bad;
	if (suffix_ok && *end) {
		switch (*end) {
		case 'K':
		case 'k':
			shift = 10;
			break;
		case 'M':
		case 'm':
			shift = 20;
			break;
		case 'G':
		case 'g':
			shift = 30;
			break;
		default:
			goto bad;
		}
		end++;
	}
	if (*end)
		goto bad;
	if (shift && v > (UINT64_MAX >> shift))
		goto range;
	v <<= shift;
	if (v < min || v > max)
		goto range;
	*out = v;
	return 0;
bad:
	snprintf(err, errlen, "%s='%s' is not a %s", var, s,
		 suffix_ok ? "size (a number with an optional K, M or G)"
			   : "number");
	return -1;
range:
	snprintf(err, errlen,
		 "%s='%s' is out of range (%" PRIu64 " to %" PRIu64 ")", var, s,
		 min, max);
	return -1;
}
