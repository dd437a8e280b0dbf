/* SPDX-License-Identifier: MIT */
/*
 * Where device pointers live: the vGPU windows, one 1 TiB window per
 * vGPU (vgpud's slot i is VGPU_VA_FIRST + i TiB), all of them inside
 * [VGPU_VA_FIRST, VGPU_VA_END), on a host and in a VM alike (a guest's
 * device pointers come from its worker on the host).
 *
 * Why 17 TiB .. 80 TiB (x86-64, 47-bit user space below 0x800000000000):
 * nothing the kernel or the loader places on its own goes there, in the
 * default layout:
 *   - position-independent executables load at 0x555555554000 plus up to
 *     mmap_rnd_bits of randomisation upwards (0x55.. to 0x56.. by
 *     default, 0x65.. at the maximum of 32 bits), their brk heap right
 *     after them; the old windows from 0x500000000000 up met them there;
 *   - mmap and shared libraries are placed top-down from below the stack
 *     (0x7f..); they reach 80 TiB only after some 47 TiB of mappings.
 *     Not with no stack limit (ulimit -s unlimited): the legacy layout
 *     maps bottom-up from about 0x14.., inside the range; vgpud gives its
 *     workers a finite limit, and a client under the legacy layout is
 *     told at cuInit which windows it could not reserve;
 *   - non-PIE executables sit at 0x400000, their heap after them;
 *   - on the sim backend the worker holds its window from start-up; on
 *     the cuda backend it gives the hold back before cuInit (the driver
 *     never hands out what the process had mapped when it started), so
 *     from cuInit to cuMemAddressReserve only the driver maps there;
 *   - AddressSanitizer's shadow ends at 0x10007fff7fff: the first window
 *     starts above it, at 17 TiB, so that an ASan-built client can
 *     reserve every window.
 * ThreadSanitizer and MemorySanitizer claim most of user space and are
 * not supported. 63 windows: at most 63 vGPUs on a host (the old windows
 * allowed 48).
 *
 * Every process that holds device addresses keeps the windows out of
 * its own map with a PROT_NONE reservation (no memory is charged for
 * it): the worker its own window from start-up until the backend maps it
 * (host-daemon/va_hold.c), a client all of them from the moment the
 * guest library is loaded (guest-driver/lib/client_va.c).
 */
#ifndef VGPU_VA_H
#define VGPU_VA_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define VGPU_VA_WINDOW	(1ull << 40)
#define VGPU_VA_FIRST	0x110000000000ull
#define VGPU_VA_END	0x500000000000ull
#define VGPU_VA_WINDOWS ((VGPU_VA_END - VGPU_VA_FIRST) / VGPU_VA_WINDOW)

/*
 * Reserve [base, base + size) at exactly that address, inaccessible and
 * without charging memory, and only where nothing is mapped yet. 0, or
 * -errno: -EEXIST when something is there, -ENOMEM under a small
 * `ulimit -v` (address space counts even when it holds no memory).
 */
static inline int vgpu_va_reserve(uint64_t base, uint64_t size)
{
	void *want = (void *)(uintptr_t)base;
	void *p = mmap(want, size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
			       MAP_FIXED_NOREPLACE,
		       -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	if (p != want) { /* a kernel before 4.17 takes the flag as a hint */
		munmap(p, size);
		return -EEXIST;
	}
	return 0;
}

/* vgpu_va_reserve's error in words. */
static inline const char *vgpu_va_why(int rc)
{
	if (rc == -EEXIST)
		return "the range is already in use";
	if (rc == -ENOMEM)
		return "out of address space (a `ulimit -v`?)";
	return strerror(-rc);
}

/*
 * What the process has mapped first in [base, base + size), as
 * "0x7f0000000000-0x7f0000021000 rw-p [heap]" (read from
 * /proc/self/maps), into buf: for the sentence that says why a window
 * could not be had. "nothing" when nothing is mapped there.
 */
static inline void vgpu_va_holder(uint64_t base, uint64_t size, char *buf,
				  size_t len)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long long lo, hi;
	char perms[8], *line = NULL;
	size_t cap = 0;
	int at;

	snprintf(buf, len, f ? "nothing" : "(cannot read /proc/self/maps)");
	while (f && getline(&line, &cap, f) > 0) {
		at = 0;
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %n", &lo, &hi,
			   perms, &at) != 3 ||
		    hi <= base || lo >= base + size)
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(buf, len, "0x%llx-0x%llx %s %s", lo, hi, perms,
			 at > 0 && line[at] ? line + at : "(anonymous)");
		break;
	}
	free(line);
	if (f)
		fclose(f);
}

#endif /* VGPU_VA_H */
