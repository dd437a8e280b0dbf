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
 * would fail; cuInit says so. Each device allocation is then checked
 * against the process's memory at that moment instead, and one that
 * overlaps it is refused as below. What the check cannot stop is host
 * memory placed later: with the default layout, mappings grow down from
 * below the stack, and the limit keeps them tens of TiB above the
 * windows; under `ulimit -s unlimited` as well they grow up from a third
 * of the address space, inside the windows, and may land on device
 * memory (cuInit's note names that case).
 *
 * A window the load could not reserve (something was there first: a
 * `ulimit -s unlimited` process's libraries, placed bottom-up from a
 * third of the address space) is claimed when a device allocation first
 * lands in it (client_va_claim): every gap of it is reserved then, so no
 * host memory can come there later, and an allocation that overlaps what
 * was there before (anything but an inaccessible anonymous mapping) is
 * refused, with what holds the range: a device pointer there would equal
 * a host pointer of this process.
 *
 * Under valgrind nothing is reserved, and nothing said (a run under
 * valgrind is a debugging run, and its output is the program's):
 * memcheck keeps about 1.3 GiB of bookkeeping per TiB mapped, even
 * PROT_NONE, and 63 TiB would exhaust the machine. Valgrind is told by
 * its preloaded vgpreload_*.so.
 */
#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>

#include <vgpu/va.h>

#include "client_va.h"

_Static_assert(VGPU_VA_WINDOWS <= 64, "one bit per window");

static uint64_t client_va_mask;	 /* bit i: window i is reserved by us */
static char client_va_note[512]; /* for cuInit to say; "" = all held */

/* Windows claimed after the load (client_va_claim), and what of the
 * process's own memory lay in them then. */
#define CLIENT_VA_FOREIGN_MAX 64
static pthread_mutex_t client_va_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t client_va_claimed; /* bit i: window i claimed */
static struct {
	uint64_t lo, hi;
	char what[160];
} client_va_foreign[CLIENT_VA_FOREIGN_MAX];
static unsigned int client_va_nforeign;
/* nothing reserved: under valgrind, or under ulimit -v (then each
 * allocation is checked, client_va_check) */
enum { CLIENT_VA_ON, CLIENT_VA_OFF_VALGRIND, CLIENT_VA_OFF_LIMIT };
static int client_va_off;

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

	if (client_va_under_valgrind()) {
		client_va_off = CLIENT_VA_OFF_VALGRIND;
		return;
	}
	if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
		client_va_off = CLIENT_VA_OFF_LIMIT;
		if (getrlimit(RLIMIT_STACK, &as) == 0 &&
		    as.rlim_cur == RLIM_INFINITY)
			snprintf(client_va_note, sizeof(client_va_note),
				 "vgpu: an address-space limit is set "
				 "(ulimit -v) with an unlimited stack "
				 "(ulimit -s unlimited): the vGPU VA windows "
				 "are not reserved, and host memory mapped "
				 "after a device allocation may alias its "
				 "device pointers");
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

/*
 * Claim window i (under client_va_lock): note what of the process lies
 * in it (all but inaccessible anonymous mappings: reservations, ours or
 * not, hold no memory) and reserve every gap between. Gaps stay reserved
 * for the life of the process.
 */
static void client_va_claim_window(uint64_t i)
{
	uint64_t base = VGPU_VA_FIRST + i * VGPU_VA_WINDOW,
		 end = base + VGPU_VA_WINDOW, at = base;
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long long lo, hi;
	char perms[8], *line = NULL, *what;
	size_t cap = 0, n;
	int pos;

	client_va_claimed |= 1ull << i;
	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s%n", &lo, &hi, perms,
			   &pos) < 3 ||
		    hi <= base || lo >= end)
			continue;
		if (lo < base)
			lo = base;
		if (hi > end)
			hi = end;
		if (at < lo)
			vgpu_va_reserve(at, lo - at);
		at = hi;
		while (line[pos] == ' ')
			pos++;
		if ((!strcmp(perms, "---p") && line[pos] == '\n') ||
		    client_va_nforeign == CLIENT_VA_FOREIGN_MAX)
			continue;
		client_va_foreign[client_va_nforeign].lo = lo;
		client_va_foreign[client_va_nforeign].hi = hi;
		what = client_va_foreign[client_va_nforeign].what;
		snprintf(what, sizeof(client_va_foreign[0].what), "%s", line);
		for (n = strlen(what);
		     n && isspace((unsigned char)what[n - 1]);)
			what[--n] = '\0';
		client_va_nforeign++;
	}
	if (at < end)
		vgpu_va_reserve(at, end - at);
	free(line);
	fclose(f);
}

/*
 * Under ulimit -v: whether [ptr, end) overlaps the process's memory now
 * (any mapping: nothing of ours is reserved there); -1 with why if so.
 */
static int client_va_check(uint64_t ptr, uint64_t end, char *why, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long long lo, hi;
	char perms[8], *line = NULL;
	size_t cap = 0, n;
	int rc = 0;

	if (!f)
		return 0;
	while (getline(&line, &cap, f) > 0) {
		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) < 3 ||
		    hi <= ptr || lo >= end)
			continue;
		/* an inaccessible reserve counts too: glibc's malloc arenas
		 * reserve so, and make it usable later */
		for (n = strlen(line);
		     n && isspace((unsigned char)line[n - 1]);)
			line[--n] = '\0';
		snprintf(why, len,
			 "device memory at 0x%" PRIx64 "-0x%" PRIx64
			 " would share its addresses with this process's own "
			 "memory there (%s): under an address-space limit "
			 "(ulimit -v) the vGPU's VA window is not reserved",
			 ptr, end, line);
		rc = -1;
		break;
	}
	free(line);
	fclose(f);
	return rc;
}

int client_va_claim(uint64_t ptr, uint64_t bytes, char *why, size_t len)
{
	uint64_t i, end = ptr + bytes;
	unsigned int k;
	int rc = 0;

	if (ptr < VGPU_VA_FIRST || ptr >= VGPU_VA_END ||
	    client_va_off == CLIENT_VA_OFF_VALGRIND)
		return 0;
	if (client_va_off == CLIENT_VA_OFF_LIMIT)
		return client_va_check(ptr, end, why, len);
	i = (ptr - VGPU_VA_FIRST) / VGPU_VA_WINDOW;
	if (client_va_mask & (1ull << i))
		return 0; /* reserved whole at load */
	pthread_mutex_lock(&client_va_lock);
	if (!(client_va_claimed & (1ull << i)))
		client_va_claim_window(i);
	for (k = 0; k < client_va_nforeign; k++) {
		if (client_va_foreign[k].lo < end &&
		    ptr < client_va_foreign[k].hi) {
			snprintf(why, len,
				 "device memory at 0x%" PRIx64 "-0x%" PRIx64
				 " would share its addresses with this "
				 "process's own memory there (%s), which "
				 "was in the vGPU's VA window before the "
				 "library was loaded (a `ulimit -s "
				 "unlimited` places libraries there)",
				 ptr, end, client_va_foreign[k].what);
			rc = -1;
			break;
		}
	}
	pthread_mutex_unlock(&client_va_lock);
	return rc;
}

void client_va_report(void)
{
	if (client_va_note[0])
		fprintf(stderr, "%s\n", client_va_note);
}
