/* SPDX-License-Identifier: MIT */
/*
 * state_pattern: a client whose memory must survive a suspend and resume,
 * a migration, or (read mode) a fault of its neighbour with save points
 * (tests/integration/save_restore.sh, recovery.sh, scripts/gpu-check.sh).
 *
 *   state_pattern hold DIR [MIB]
 *	Allocates A (MIB MiB + 100 bytes, default 4), B (256 bytes) and C
 *	(1024 u64 changed by 64 chainStep launches: kernel writes), fills A
 *	with a pattern by copies, B with a memset, writes their addresses to
 *	DIR/ptrs ("A B C bytes"), touches DIR/ready, then waits for DIR/go.
 *	If DIR/suspended appears first it makes one call right away (a
 *	cuMemcpyDtoH of B) and says how long it waited for it: the vGPU is
 *	suspended then, and the call returns once it is resumed. After go
 *	it reads A, B and C back through the same pointers, checks them,
 *	runs 16 more launches on C and checks again. Exit 0 when all is
 *	intact ("contents intact" on stdout), 1 otherwise.
 *
 *   state_pattern read PTR BYTES
 *	Reads BYTES at device address PTR (another, earlier client's A) and
 *	checks A's pattern: exit 0 intact, 1 wrong contents, 3 the read was
 *	refused (no such allocation: the memory did not come back).
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prog.h"

#define N 1024

static unsigned char pat(size_t i)
{
	return (unsigned char)(i * 7u + 13u + (i >> 12));
}

static void chain_ref(unsigned long long *v, unsigned long long k0,
		      unsigned long long k1)
{
	for (unsigned long long k = k0; k < k1; k++)
		for (int i = 0; i < N; i++)
			v[i] = v[i] * 31ull + k + (unsigned long long)i;
}

static void chain_run(CUkernel kc, CUdeviceptr c, unsigned long long k0,
		      unsigned long long k1)
{
	int n = N;

	for (unsigned long long k = k0; k < k1; k++) {
		void *p[] = {&c, &n, &k};

		CHECK(cuLaunchKernel((CUfunction)kc, N / 256, 1, 1, 256, 1, 1,
				     0, NULL, p, NULL));
	}
}

static int exists(const char *dir, const char *name)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0;
}

static void touch(const char *dir, const char *name, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.tmp", dir, name);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
	{
		char to[4096];

		snprintf(to, sizeof(to), "%s/%s", dir, name);
		rename(path, to);
	}
}

static int hold(const char *dir, size_t mib)
{
	size_t na = mib * 1048576 + 100, i, bad = 0;
	static unsigned long long hc[N], rc[N];
	unsigned char *ha = malloc(na), hb[256];
	CUdeviceptr a, b, c;
	CUlibrary lib;
	CUkernel kc;
	CUdevice dev;
	void *image;
	char text[256];
	double t0, waited = -1;

	if (!ha)
		return 1;
	prog_init(&dev);
	image = prog_read_cubin("chain");
	CHECK(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
	free(image);
	CHECK(cuLibraryGetKernel(&kc, lib, "chainStep"));
	CHECK(cuMemAlloc(&a, na));
	CHECK(cuMemAlloc(&b, 256));
	CHECK(cuMemAlloc(&c, sizeof(hc)));
	for (i = 0; i < na; i++)
		ha[i] = pat(i);
	for (i = 0; i < N; i++)
		hc[i] = rc[i] = 1000 + i;
	CHECK(cuMemcpyHtoD(a, ha, na));
	CHECK(cuMemsetD8(b, 0x5a, 256));
	CHECK(cuMemcpyHtoD(c, hc, sizeof(hc)));
	chain_run(kc, c, 0, 64);
	chain_ref(rc, 0, 64);
	CHECK(cuCtxSynchronize());
	snprintf(text, sizeof(text), "0x%llx 0x%llx 0x%llx %zu\n",
		 (unsigned long long)a, (unsigned long long)b,
		 (unsigned long long)c, na);
	touch(dir, "ptrs", text);
	touch(dir, "ready", "");
	printf("state_pattern: ready: A %s", text);
	fflush(stdout);

	t0 = prog_now();
	while (!exists(dir, "go")) {
		if (waited < 0 && exists(dir, "suspended")) {
			double s = prog_now();

			/* blocks while the vGPU is suspended */
			CHECK(cuMemcpyDtoH(hb, b, sizeof(hb)));
			waited = prog_now() - s;
			printf("state_pattern: a call made while suspended "
			       "returned after %.2f s\n",
			       waited);
			fflush(stdout);
		}
		if (prog_now() - t0 > 300) {
			printf("state_pattern: FAILED: no go within 300 s\n");
			return 1;
		}
		usleep(10000);
	}
	memset(ha, 0, na);
	memset(hc, 0, sizeof(hc));
	memset(hb, 0, sizeof(hb));
	CHECK(cuMemcpyDtoH(ha, a, na));
	CHECK(cuMemcpyDtoH(hb, b, sizeof(hb)));
	CHECK(cuMemcpyDtoH(hc, c, sizeof(hc)));
	for (i = 0; i < na; i++)
		if (ha[i] != pat(i) && !bad++)
			printf("state_pattern: FAILED: A[%zu] is %u, not %u\n",
			       i, ha[i], pat(i));
	for (i = 0; i < sizeof(hb); i++)
		if (hb[i] != 0x5a && !bad++)
			printf("state_pattern: FAILED: B[%zu] is %u\n", i,
			       hb[i]);
	for (i = 0; i < N; i++)
		if (hc[i] != rc[i] && !bad++)
			printf("state_pattern: FAILED: C[%zu] differs\n", i);
	/* and the code and streams still work there */
	chain_run(kc, c, 64, 80);
	chain_ref(rc, 64, 80);
	CHECK(cuMemcpyDtoH(hc, c, sizeof(hc)));
	for (i = 0; i < N; i++)
		if (hc[i] != rc[i] && !bad++)
			printf("state_pattern: FAILED: C[%zu] wrong after more "
			       "launches\n",
			       i);
	if (!bad)
		printf("state_pattern: contents intact (%zu bytes of A, B, "
		       "C and 16 more launches)\n",
		       na);
	CHECK(cuMemFree(a));
	CHECK(cuMemFree(b));
	CHECK(cuMemFree(c));
	CHECK(cuLibraryUnload(lib));
	prog_fini(dev);
	free(ha);
	return bad ? 1 : 0;
}

static int read_back(const char *ptr, const char *bytes)
{
	unsigned long long p = strtoull(ptr, NULL, 0);
	size_t n = strtoull(bytes, NULL, 0), i, bad = 0;
	unsigned char *h = malloc(n ? n : 1);
	CUresult r;
	CUdevice dev;

	if (!h || !n)
		return 2;
	prog_init(&dev);
	r = cuMemcpyDtoH(h, (CUdeviceptr)p, n);
	if (r != CUDA_SUCCESS) {
		printf("state_pattern: the read of 0x%llx was refused: %s "
		       "(no such allocation)\n",
		       p, prog_err_name(r));
		return 3;
	}
	for (i = 0; i < n; i++)
		if (h[i] != pat(i) && !bad++)
			printf("state_pattern: FAILED: byte %zu is %u, not "
			       "%u\n",
			       i, h[i], pat(i));
	if (!bad)
		printf("state_pattern: %zu bytes at 0x%llx intact\n", n, p);
	prog_fini(dev);
	free(h);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "hold"))
		return hold(argv[2], argc > 3 ? strtoul(argv[3], NULL, 0) : 4);
	if (argc == 4 && !strcmp(argv[1], "read"))
		return read_back(argv[2], argv[3]);
	fprintf(stderr, "usage: state_pattern hold DIR [MIB]\n"
			"       state_pattern read PTR BYTES\n");
	return 2;
}
