/* SPDX-License-Identifier: MIT */
/*
 * What a cross-GPU migration costs (issue 7 goal: an 8 GiB vGPU moved in
 * at most 60 ms). A client of a vGPU (VGPU=name, LD_LIBRARY_PATH=
 * build/lib; root, for vgpud's admin socket) fills GIB GiB of device
 * memory with a pattern, then runs a chain of small dependent kernels,
 * each launched and waited for (latency recorded), while a thread of the
 * same program migrates the vGPU between GPU_A and GPU_B ROUNDS times
 * through vgpud (VGPU_ADMIN_MIGRATE). At the end every byte is read back
 * through the same pointers and checked, and the chain's order log too.
 *
 *   migrate CUBIN RUN_DIR GIB GPU_A GPU_B [ROUNDS [GAP_MS]]
 *
 * Beside the GIB 1 GiB chunks it holds NVAR allocations of varied sizes
 * (a few bytes, a part of a granule, exactly one, several with an odd
 * tail: the backend maps each as its own physical extent, granules shared
 * between small ones once), checked after the last move, then each freed
 * and made again at once (a free must unmap exactly what its map mapped,
 * on the GPU it moved to). Then the chunks are freed, the vGPU suspended
 * to host memory and resumed (memory mapped back run by run), the varied
 * allocations checked, freed and made again once more and freed, and
 * GIB GiB allocated in one piece (the memory all came back).
 *
 * CUBIN is kernels/resize_seq.cubin. Lines for scripts:
 *   migrate_ms p50 P max M count N      admin round trip per migration
 *   total_ms p50 P max M                the worker's: prepare to thaw
 *   blackout_ms p50 P max M             clients held (kernel boundary,
 *                                       copy, remap, switch)
 *   prepare_ms / quiesce_ms / copy_ms / remap_ms p50 P max M
 *   other_ms p50 P max M                clients held, less quiesce, copy
 *                                       and remap: streams, events,
 *                                       module variables, the switch
 *   copy_gbps p50 P                     GiB moved per second of copy
 *   peer N of M                         migrations copied GPU to GPU
 *   chain_us baseline p99 P max M; during p99 P max M
 *   contents ok | contents FAILED ...   every byte after the last move
 *   order ok | order FAILED ...
 *   allocs ok ... | allocs FAILED ...   the varied allocations: intact,
 *                                       freed and made again (twice)
 *   suspend_resume ok ... | FAILED ...
 *   goal total_ms <= 60 for GIB GiB: met | not met (p50 P)
 */
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <vgpu/admin.h>

#include "bench_admin.h"
#include "bench_common.h"

#define N	      1024
#define MAX_ROUNDS    1000
#define ADMIN_WAIT_MS 120000
#define CHUNK	      (1ull << 30)
#define NVAR	      48

struct mover {
	const char *run_dir, *name;
	uint32_t gpu[2];
	int rounds, gap_ms, done, failed;
	volatile int stop;
	double admin_ms[MAX_ROUNDS];
	struct vgpu_admin_state_result res[MAX_ROUNDS];
	char last_error[VGPU_MESSAGE_MAX];
};

static void *mover_main(void *arg)
{
	struct mover *m = arg;
	struct vgpu_admin_response *resp = calloc(1, sizeof(*resp));
	struct vgpu_admin_request q;
	double t0;
	int i;

	if (!resp)
		return NULL;
	for (i = 0; i < m->rounds && !m->stop; i++) {
		usleep((useconds_t)m->gap_ms * 1000);
		memset(&q, 0, sizeof(q));
		q.magic = VGPU_ADMIN_MAGIC;
		q.major = VGPU_ADMIN_MAJOR;
		q.minor = VGPU_ADMIN_MINOR;
		q.op = VGPU_ADMIN_MIGRATE;
		snprintf(q.name, sizeof(q.name), "%s", m->name);
		q.gpu = m->gpu[(i + 1) % 2];
		t0 = bench_now_ms();
		if (bench_admin(m->run_dir, &q, resp, ADMIN_WAIT_MS)) {
			m->failed++;
			break;
		}
		if (resp->status) {
			m->failed++;
			snprintf(m->last_error, sizeof(m->last_error), "%s",
				 resp->message);
			break;
		}
		m->admin_ms[m->done] = bench_now_ms() - t0;
		m->res[m->done++] = resp->state.result;
		printf("round %d: %s\n", i, resp->message);
		fflush(stdout);
	}
	m->stop = 1;
	free(resp);
	return NULL;
}

static void print_stats(const char *label, double *v, int n)
{
	printf("%s p50 %.2f max %.2f\n", label, bench_quantile(v, n, 0.5),
	       bench_quantile(v, n, 1.0));
}

/* Size of varied allocation i: tiny, part of a granule, exactly one,
 * several with an odd tail (about 100 MiB in all). */
static size_t var_size(int i)
{
	switch (i % 4) {
	case 0:
		return 1 + (size_t)i * 37;
	case 1:
		return (size_t)(100 + i) << 10;
	case 2:
		return 2u << 20;
	default:
		return ((size_t)(1 + i % 5) << 21) + 4096 * (size_t)i + 13;
	}
}

static unsigned char var_byte(int i, size_t k)
{
	return (unsigned char)(i * 29 + k * 7 + (k >> 13));
}

/* Allocation i filled with its pattern (host buffer: at least its size). */
static void var_make(CUdeviceptr *p, int i, unsigned char *buf)
{
	size_t n = var_size(i), k;

	for (k = 0; k < n; k++)
		buf[k] = var_byte(i, k);
	CHECK(cuMemAlloc(p, n));
	CHECK(cuMemcpyHtoD(*p, buf, n));
}

/* Whether allocation i still holds its pattern; a sentence if not. */
static int var_check(CUdeviceptr p, int i, unsigned char *buf)
{
	size_t n = var_size(i), k;

	CHECK(cuMemcpyDtoH(buf, p, n));
	for (k = 0; k < n; k++) {
		if (buf[k] != var_byte(i, k)) {
			printf("allocs FAILED: allocation %d (%zu bytes) byte "
			       "%zu is 0x%02x, not 0x%02x\n",
			       i, n, k, buf[k], var_byte(i, k));
			return 0;
		}
	}
	return 1;
}

/*
 * Every varied allocation checked, then freed (odd ones first, so that
 * neighbours sharing a granule go at different times) and made again at
 * once, and checked once more; with free_all, freed at the end. 1 when
 * all is well.
 */
static int var_round(CUdeviceptr *var, unsigned char *buf, const char *when,
		     int free_all)
{
	int i, pass;

	for (i = 0; i < NVAR; i++)
		if (!var_check(var[i], i, buf))
			return 0;
	for (pass = 1; pass >= 0; pass--)
		for (i = pass; i < NVAR; i += 2) {
			CHECK(cuMemFree(var[i]));
			var_make(&var[i], i, buf);
		}
	for (i = 0; i < NVAR; i++)
		if (!var_check(var[i], i, buf))
			return 0;
	for (i = NVAR - 1; free_all && i >= 0; i--)
		CHECK(cuMemFree(var[i]));
	printf("allocs ok: %d varied allocations intact %s, each freed and "
	       "made again\n",
	       NVAR, when);
	return 1;
}

/*
 * Suspend the vGPU to host memory and resume it (where vgpud likes): its
 * memory comes back mapped run by run, which the frees after it take
 * apart again (the backend keeps a run's memory until its last
 * allocation goes). 0, or -1 with a line saying why.
 */
static int suspend_resume(const char *run_dir, const char *name)
{
	struct vgpu_admin_response *resp = calloc(1, sizeof(*resp));
	struct vgpu_admin_request q;
	double t0, ms[2];
	int i, rc = 0;

	if (!resp)
		return -1;
	for (i = 0; i < 2 && !rc; i++) {
		memset(&q, 0, sizeof(q));
		q.magic = VGPU_ADMIN_MAGIC;
		q.major = VGPU_ADMIN_MAJOR;
		q.minor = VGPU_ADMIN_MINOR;
		q.op = i ? VGPU_ADMIN_RESUME : VGPU_ADMIN_SUSPEND;
		q.gpu = VGPU_ADMIN_GPU_ANY;
		snprintf(q.name, sizeof(q.name), "%s", name);
		t0 = bench_now_ms();
		if (bench_admin(run_dir, &q, resp, ADMIN_WAIT_MS) ||
		    resp->status) {
			printf("suspend_resume FAILED: %s\n",
			       resp->status ? resp->message : "no answer");
			rc = -1;
		}
		ms[i] = bench_now_ms() - t0;
	}
	if (!rc)
		printf("suspend_resume ok: suspend %.1f ms, resume %.1f ms\n",
		       ms[0], ms[1]);
	free(resp);
	return rc;
}

/* The pattern of word i of chunk c: cuMemsetD32 writes it per chunk. */
static unsigned int pattern(int c)
{
	return 0x5a000000u | (unsigned int)c * 0x10101u;
}

int main(int argc, char **argv)
{
	static struct mover m;
	CUfunction fn;
	CUstream s;
	CUdeviceptr v, logp, smids, *chunk, var[NVAR];
	unsigned long long k = 0, *log;
	unsigned int *host;
	double *base, *during, t0, x[MAX_ROUNDS];
	char when[64];
	int gib, nbase = 2000, nd = 0, cap = 1 << 20, n = N, bad = 0, i;
	size_t len, total_k;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	pthread_t t;
	void *img;

	if (argc < 6) {
		fprintf(stderr,
			"usage: %s CUBIN RUN_DIR GIB GPU_A GPU_B [ROUNDS "
			"[GAP_MS]]\n",
			argv[0]);
		return 2;
	}
	m.run_dir = argv[2];
	m.name = getenv("VGPU");
	gib = atoi(argv[3]);
	m.gpu[0] = (uint32_t)atoi(argv[4]);
	m.gpu[1] = (uint32_t)atoi(argv[5]);
	m.rounds = argc > 6 ? atoi(argv[6]) : 6;
	m.gap_ms = argc > 7 ? atoi(argv[7]) : 200;
	if (!m.name || gib < 1 || gib > 512 || m.rounds < 1 ||
	    m.rounds > MAX_ROUNDS || m.gap_ms < 0) {
		fprintf(stderr, "VGPU must name the vGPU; GIB 1..512, ROUNDS "
				"1..1000\n");
		return 2;
	}
	base = calloc(nbase, sizeof(*base));
	during = calloc(cap, sizeof(*during));
	chunk = calloc(gib, sizeof(*chunk));
	host = malloc(CHUNK);
	if (!base || !during || !chunk || !host)
		return 1;
	img = bench_read_file(argv[1], &len);
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuModuleLoadData(&mod, img));
	CHECK(cuModuleGetFunction(&fn, mod, "resizeSeqStep"));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	total_k = (size_t)nbase + (size_t)cap;
	CHECK(cuMemAlloc(&v, N * sizeof(unsigned long long)));
	CHECK(cuMemAlloc(&logp, (total_k + 1) * sizeof(*log)));
	CHECK(cuMemAlloc(&smids, total_k * sizeof(unsigned int)));
	CHECK(cuMemsetD8(v, 0, N * sizeof(unsigned long long)));
	CHECK(cuMemsetD8(logp, 0, (total_k + 1) * sizeof(*log)));
	for (i = 0; i < NVAR; i++)
		var_make(&var[i], i, (unsigned char *)host);
	for (i = 0; i < gib; i++) {
		CHECK(cuMemAlloc(&chunk[i], CHUNK));
		CHECK(cuMemsetD32(chunk[i], pattern(i), CHUNK / 4));
	}
	CHECK(cuCtxSynchronize());
	printf("migrate: %d GiB filled, migrating between GPU %u and %u\n", gib,
	       m.gpu[0], m.gpu[1]);
	fflush(stdout);

	for (i = 0; i < nbase; i++, k++) {
		void *a[] = {&v, &n, &k, &logp, &smids};

		t0 = bench_now_ms();
		CHECK(cuLaunchKernel(fn, N / 256, 1, 1, 256, 1, 1, 0, s, a,
				     NULL));
		CHECK(cuStreamSynchronize(s));
		base[i] = (bench_now_ms() - t0) * 1e3;
	}
	if (pthread_create(&t, NULL, mover_main, &m))
		return 1;
	while (!m.stop && nd < cap) {
		void *a[] = {&v, &n, &k, &logp, &smids};

		t0 = bench_now_ms();
		CHECK(cuLaunchKernel(fn, N / 256, 1, 1, 256, 1, 1, 0, s, a,
				     NULL));
		CHECK(cuStreamSynchronize(s));
		during[nd++] = (bench_now_ms() - t0) * 1e3;
		k++;
	}
	m.stop = 1;
	pthread_join(t, NULL);

	/* every byte, through the same pointers */
	for (i = 0; i < gib && !bad; i++) {
		CHECK(cuMemcpyDtoH(host, chunk[i], CHUNK));
		for (size_t w = 0; w < CHUNK / 4; w++) {
			if (host[w] != pattern(i)) {
				printf("contents FAILED: GiB %d word %zu is "
				       "0x%08x, not 0x%08x\n",
				       i, w, host[w], pattern(i));
				bad = 1;
				break;
			}
		}
	}
	if (!bad)
		printf("contents ok: %d GiB intact after %d migrations\n", gib,
		       m.done);
	log = calloc(k + 1, sizeof(*log));
	if (!log)
		return 1;
	CHECK(cuMemcpyDtoH(log, logp, (k + 1) * sizeof(*log)));
	if (log[0] != k) {
		printf("order FAILED: %llu launches logged of %llu\n", log[0],
		       k);
		bad = 1;
	} else {
		for (unsigned long long j = 0; j < k; j++)
			if (log[1 + j] != j) {
				printf("order FAILED: the %llu-th launch was "
				       "k = %llu\n",
				       j, log[1 + j]);
				bad = 1;
				break;
			}
		if (!bad)
			printf("order ok: %llu dependent launches, each once, "
			       "in order\n",
			       k);
	}

	snprintf(when, sizeof(when), "after %d migrations", m.done);
	if (!bad && !var_round(var, (unsigned char *)host, when, 0))
		bad = 1;
	for (i = 0; i < gib; i++)
		CHECK(cuMemFree(chunk[i]));
	if (!bad && (suspend_resume(m.run_dir, m.name) ||
		     !var_round(var, (unsigned char *)host,
				"after a suspend and resume", 1)))
		bad = 1;
	/* the chunks' memory is back: as much again in one piece */
	if (!bad) {
		CHECK(cuMemAlloc(&chunk[0], (size_t)gib * CHUNK));
		CHECK(cuMemFree(chunk[0]));
	}

	print_stats("migrate_ms", m.admin_ms, m.done);
#define STAT(label, field)                                                     \
	do {                                                                   \
		for (i = 0; i < m.done; i++)                                   \
			x[i] = m.res[i].field / 1e6;                           \
		print_stats(label, x, m.done);                                 \
	} while (0)
	STAT("total_ms", total_ns);
	STAT("blackout_ms", blackout_ns);
	STAT("prepare_ms", prepare_ns);
	STAT("quiesce_ms", quiesce_ns);
	STAT("copy_ms", copy_ns);
	STAT("remap_ms", remap_ns);
	for (i = 0; i < m.done; i++)
		x[i] = ((double)m.res[i].blackout_ns -
			(double)m.res[i].quiesce_ns - (double)m.res[i].copy_ns -
			(double)m.res[i].remap_ns) /
		       1e6;
	print_stats("other_ms", x, m.done);
	{
		int peers = 0;

		for (i = 0; i < m.done; i++) {
			x[i] = m.res[i].copy_ns
				       ? (m.res[i].bytes /
					  (double)(1ull << 30)) /
						 (m.res[i].copy_ns / 1e9)
				       : 0;
			peers += m.res[i].peer != 0;
		}
		print_stats("copy_gbps", x, m.done);
		printf("peer %d of %d\n", peers, m.done);
	}
	printf("chain_us baseline p99 %.1f max %.1f; during p99 %.1f max "
	       "%.1f\n",
	       bench_quantile(base, nbase, 0.99),
	       bench_quantile(base, nbase, 1.0),
	       bench_quantile(during, nd, 0.99),
	       bench_quantile(during, nd, 1.0));
	for (i = 0; i < m.done; i++)
		x[i] = m.res[i].total_ns / 1e6;
	if (m.done) {
		double p50 = bench_quantile(x, m.done, 0.5);

		printf("goal total_ms <= 60 for %d GiB: %s (p50 %.1f)\n", gib,
		       p50 <= 60 ? "met" : "not met", p50);
	}
	if (m.failed)
		printf("refused %d (last: %s)\n", m.failed, m.last_error);
	CHECK(cuModuleUnload(mod));
	CHECK(cuStreamDestroy(s));
	CHECK(cuDevicePrimaryCtxRelease(dev));
	return bad || m.failed ? 1 : 0;
}
