/* SPDX-License-Identifier: MIT */
/*
 * The vGPU windows kept out of the process's own memory.
 *
 * A device pointer is an address in a vGPU window (include/vgpu/va.h).
 * Were the program's own malloc or mmap to return an address there, a
 * host pointer could equal a device pointer, and a copy whose direction
 * is read from the addresses (cuMemcpy, cudaMemcpyDefault) would go the
 * wrong way. So the library reserves every window PROT_NONE as soon as
 * it is loaded: a constructor, which runs before main and before the
 * program's own constructors, on a host and in a VM alike (the guest's
 * device pointers are the host worker's). No memory is charged for it.
 * Window by window, so that a window something else already holds (a
 * mapping placed there on purpose before the library was loaded) costs
 * that window only; cuInit then says which and what holds it, and goes
 * on: the vGPU may well be in another window.
 *
 * Under an address-space limit (ulimit -v) nothing is reserved either:
 * the reservations count against it, and the program's own allocations
 * would fail; cuInit says so.
 *
 * Under valgrind nothing is reserved, and nothing said (a run under
 * valgrind is a debugging run, and its output is the program's):
 * memcheck keeps about 1.3 GiB of bookkeeping per TiB mapped, even
 * PROT_NONE, and 63 TiB would exhaust the machine. Valgrind is told by
 * its preloaded vgpreload_*.so.
 */
#include <inttypes.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>

#include <vgpu/va.h>

#include "client_va.h"

_Static_assert(VGPU_VA_WINDOWS <= 64, "one bit per window");

static uint64_t client_va_mask;	 /* bit i: window i is reserved by us */
static char client_va_note[512]; /* for cuInit to say; "" = all held */

static int client_va_under_valgrind(void)
{
	const char *pre = getenv("LD_PRELOAD");

	return pre && strstr(pre, "/vgpreload_");
}

__attribute__((constructor)) static void client_va_reserve(void)
{
	uint64_t i, first = 0;
	unsigned int missed = 0;
	char holder[256];
	int rc, first_rc = 0;
	struct rlimit as;

	if (client_va_under_valgrind())
		return;
	if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
		snprintf(client_va_note, sizeof(client_va_note),
			 "vgpu: an address-space limit is set (ulimit -v): "
			 "the vGPU VA windows are not reserved, so host "
			 "memory can alias device pointers");
		return;
	}
	for (i = 0; i < VGPU_VA_WINDOWS; i++) {
		uint64_t base = VGPU_VA_FIRST + i * VGPU_VA_WINDOW;

		rc = vgpu_va_reserve(base, VGPU_VA_WINDOW);
		if (!rc) {
			client_va_mask |= 1ull << i;
		} else if (!missed++) {
			first = base;
			first_rc = rc;
		}
	}
	if (!missed)
		return;
	vgpu_va_holder(first, VGPU_VA_WINDOW, holder, sizeof(holder));
	snprintf(client_va_note, sizeof(client_va_note),
		 "vgpu: %u of the %llu vGPU VA windows could not be reserved; "
		 "the first, at 0x%" PRIx64 ": %s; this process has there: "
		 "%s. Host memory there can alias device pointers of a vGPU "
		 "in that window",
		 missed, VGPU_VA_WINDOWS, first, vgpu_va_why(first_rc), holder);
}

/* For dlclose: a library loaded again reserves the windows again. */
__attribute__((destructor)) static void client_va_release(void)
{
	uint64_t i;

	for (i = 0; i < VGPU_VA_WINDOWS; i++)
		if (client_va_mask & (1ull << i))
			munmap((void *)(uintptr_t)(VGPU_VA_FIRST +
						   i * VGPU_VA_WINDOW),
			       VGPU_VA_WINDOW);
	client_va_mask = 0;
}

void client_va_report(void)
{
	if (client_va_note[0])
		fprintf(stderr, "%s\n", client_va_note);
}
