/* SPDX-License-Identifier: MIT */
/*
 * va_host_maps FIRST END: the process's own host memory never lands in
 * the vGPU windows [FIRST, END) (issue 16: a host pointer equal to a
 * device pointer), and /proc/self/maps shows the whole range reserved
 * (inaccessible anonymous mappings, no gap), before and after. A device
 * allocation lies inside the range. Host memory: 2,000 mallocs of 1 B to
 * 1 MiB, ten of 256 MiB, then mappings of 1 TiB (PROT_NONE, no memory
 * charged) until the address space runs out, which walks the kernel's
 * top-down placement past every free address. Prints what is wrong and
 * exits 1; else "va_host_maps: OK ..." and 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prog.h"

#define TiB	    (1ull << 40)
#define NMALLOC	    2000
#define NBIG_MALLOC 10
#define MAX_TIB	    128

static uint64_t first, end;
static int bad, maps_fd = -1;
static char maps[1 << 20]; /* read with no malloc: memory may be gone */

static void check(const char *what, const void *p, uint64_t n)
{
	uint64_t a = (uint64_t)(uintptr_t)p;

	if (a < end && first < a + n) {
		fprintf(stderr,
			"va_host_maps: %s 0x%llx + 0x%llx is in the "
			"vGPU windows\n",
			what, (unsigned long long)a, (unsigned long long)n);
		bad = 1;
	}
}

static void gap(const char *when, uint64_t a, uint64_t b)
{
	fprintf(stderr, "va_host_maps: %s: 0x%llx-0x%llx is not reserved\n",
		when, (unsigned long long)a, (unsigned long long)b);
	bad = 1;
}

/* Every mapping that meets [first, end) is a reservation, with no gap. */
static void check_maps(const char *when)
{
	unsigned long long lo, hi, ino;
	uint64_t covered = first;
	size_t len = 0;
	ssize_t n;
	char *line, *next, perms[8];
	int at;

	lseek(maps_fd, 0, SEEK_SET);
	while ((n = read(maps_fd, maps + len, sizeof(maps) - 1 - len)) > 0)
		len += (size_t)n;
	maps[len] = '\0';
	for (line = maps; *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		at = 0;
		if (sscanf(line, "%llx-%llx %7s %*s %*s %llu %n", &lo, &hi,
			   perms, &ino, &at) != 4 ||
		    hi <= first || lo >= end)
			continue;
		if (strcmp(perms, "---p") || ino || (at && line[at])) {
			fprintf(stderr,
				"va_host_maps: %s: not a reservation: %s\n",
				when, line);
			bad = 1;
		}
		if (lo > covered)
			gap(when, covered, lo);
		if (hi > covered)
			covered = hi;
	}
	if (covered < end)
		gap(when, covered, end);
}

int main(int argc, char **argv)
{
	static void *small[NMALLOC], *big[NBIG_MALLOC], *tib[MAX_TIB];
	CUdeviceptr d;
	CUdevice dev;
	int i, ntib = 0;

	if (argc != 3 || !(first = strtoull(argv[1], NULL, 16)) ||
	    (end = strtoull(argv[2], NULL, 16)) <= first) {
		fprintf(stderr, "usage: va_host_maps FIRST END (hex)\n");
		return 2;
	}
	maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (maps_fd < 0) {
		perror("va_host_maps: /proc/self/maps");
		return 1;
	}
	prog_init(&dev);
	CHECK(cuMemAlloc(&d, 1 << 20));
	if (d < first || d >= end) {
		fprintf(stderr,
			"va_host_maps: device pointer 0x%llx is not in "
			"the windows\n",
			(unsigned long long)d);
		bad = 1;
	}
	check_maps("at start");

	for (i = 0; i < NMALLOC; i++) {
		size_t n = (size_t)1 << (i % 21);

		small[i] = malloc(n);
		if (small[i])
			check("malloc", small[i], n);
	}
	for (i = 0; i < NBIG_MALLOC; i++) {
		big[i] = malloc(256u << 20);
		if (big[i])
			check("malloc", big[i], 256u << 20);
	}
	for (; ntib < MAX_TIB; ntib++) {
		tib[ntib] = mmap(NULL, TiB, PROT_NONE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				 -1, 0);
		if (tib[ntib] == MAP_FAILED)
			break;
		check("mmap", tib[ntib], TiB);
	}
	if (ntib == MAX_TIB) {
		fprintf(stderr, "va_host_maps: the address space never ran "
				"out\n");
		bad = 1;
	}
	check_maps("with the address space full");

	for (i = 0; i < ntib; i++)
		munmap(tib[i], TiB);
	for (i = 0; i < NBIG_MALLOC; i++)
		free(big[i]);
	for (i = 0; i < NMALLOC; i++)
		free(small[i]);
	CHECK(cuMemFree(d));
	close(maps_fd);
	if (bad)
		return 1;
	printf("va_host_maps: OK: host memory (%d TiB of it mapped at the "
	       "end) stayed out of 0x%llx-0x%llx\n",
	       ntib, (unsigned long long)first, (unsigned long long)end);
	return 0;
}
