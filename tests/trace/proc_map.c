/* SPDX-License-Identifier: MIT */
/*
 * proc_map STUB_LIST: what NVIDIA's driver answers cuGetProcAddress with,
 * for every driver function, every CUDA version cudaTypedefs.h names and
 * both flags (default, per-thread default stream): the symbol it returns
 * (dladdr), printed where the answer changes as the version grows:
 *
 *   NAME FLAGS: VERSION SYMBOL|- [VERSION SYMBOL|- ...]
 *
 * ("-": not found at that version; "?": a function the driver does not
 * export by name). STUB_LIST holds the toolkit stub's
 * exports, one a line; their base names (without _vN, _ptds, _ptsz) are
 * asked. The driver is found as the program's own libcuda.so.1. Issue 17:
 * our cuGetProcAddress must give the same variant for each request.
 */
#define _GNU_SOURCE /* dladdr */
#define __CUDA_API_VERSION_INTERNAL
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int versions[] = {
	2000,  2010,  2020,  2030,  3000,  3010,  3020,	 4000,	4010,  4020,
	5000,  5050,  6000,  6050,  7000,  8000,  9000,	 9020,	10000, 10010,
	10020, 11000, 11010, 11020, 11030, 11040, 11060, 11070, 12000, 12010,
	12020, 12030, 12040, 12050, 12060, 12080, 12090, 13000,
};

/* The name without a _vN, _ptds or _ptsz suffix, in place. */
static void base_name(char *n)
{
	char *p;
	int again = 1;

	while (again) {
		again = 0;
		p = strrchr(n, '_');
		if (!p)
			return;
		if (!strcmp(p, "_ptds") || !strcmp(p, "_ptsz") ||
		    (p[1] == 'v' && p[2] >= '0' && p[2] <= '9' &&
		     strspn(p + 2, "0123456789") == strlen(p + 2))) {
			*p = '\0';
			again = 1;
		}
	}
}

int main(int argc, char **argv)
{
	static char names[4096][128];
	char line[256], prev[128];
	int n = 0, i, j, f;
	FILE *in;

	if (argc != 2 || !(in = fopen(argv[1], "r"))) {
		fprintf(stderr, "usage: proc_map STUB_LIST\n");
		return 2;
	}
	while (n < 4096 && fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\n")] = '\0';
		base_name(line);
		for (i = 0; i < n && strcmp(names[i], line); i++)
			;
		if (i == n && *line)
			snprintf(names[n++], sizeof(names[0]), "%s", line);
	}
	fclose(in);
	if (cuInit(0)) {
		fprintf(stderr, "proc_map: cuInit failed\n");
		return 1;
	}
	for (i = 0; i < n; i++) {
		for (f = 0; f < 2; f++) {
			cuuint64_t flags =
				f ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
				  : CU_GET_PROC_ADDRESS_DEFAULT;

			printf("%s %d:", names[i], (int)flags);
			prev[0] = '\0';
			for (j = 0;
			     j < (int)(sizeof(versions) / sizeof(versions[0]));
			     j++) {
				CUdriverProcAddressQueryResult st;
				void *p = NULL;
				Dl_info di;
				const char *sym = "-";

				if (cuGetProcAddress_v2(names[i], &p,
							versions[j], flags,
							&st) == CUDA_SUCCESS &&
				    p && dladdr(p, &di) && di.dli_sname &&
				    di.dli_saddr == p)
					sym = di.dli_sname;
				else if (p)
					sym = "?";
				if (strcmp(sym, prev)) {
					printf(" %d %s", versions[j], sym);
					snprintf(prev, sizeof(prev), "%s", sym);
				}
			}
			printf("\n");
		}
	}
	return 0;
}
