/* SPDX-License-Identifier: MIT */
/*
 * The worker's hold on its VA window (va_hold.h). The worker holds one
 * window, so one range is all the state there is; bring-up is single
 * threaded, so it needs no lock.
 */
#include <inttypes.h>
#include <stdio.h>

#include <vgpu/va.h>

#include "va_hold.h"

static uint64_t va_hold_base, va_hold_size;

int va_hold(uint64_t base, uint64_t size, char *err, size_t errlen)
{
	char holder[256];
	int rc;

	if (va_hold_size) {
		snprintf(err, errlen,
			 "VA window 0x%" PRIx64
			 " is already held (at most one)",
			 va_hold_base);
		return -1;
	}
	rc = vgpu_va_reserve(base, size);
	if (rc) {
		vgpu_va_holder(base, size, holder, sizeof(holder));
		snprintf(err, errlen,
			 "cannot reserve the VA window at 0x%" PRIx64
			 " (0x%" PRIx64
			 " bytes): %s; this process has there: %s",
			 base, size, vgpu_va_why(rc), holder);
		return -1;
	}
	va_hold_base = base;
	va_hold_size = size;
	return 0;
}

void va_hold_release(uint64_t base, uint64_t size)
{
	if (!va_hold_size || base + size <= va_hold_base ||
	    base >= va_hold_base + va_hold_size)
		return;
	munmap((void *)(uintptr_t)va_hold_base, va_hold_size);
	va_hold_base = va_hold_size = 0;
}

int va_hold_take(uint64_t base, uint64_t size)
{
	if (!va_hold_size || base != va_hold_base || size != va_hold_size)
		return 0;
	va_hold_base = va_hold_size = 0;
	return 1;
}
