/* SPDX-License-Identifier: MIT */
/*
 * resize_chain [launches [heavy]]: a long chain of dependent launches that
 * must come out exactly right while the vGPU is resized and moved under it
 * (tests/integration/resize.sh, scripts/gpu-check.sh). With "heavy" each
 * link is followed by a computeBound launch on the same stream, so the GPU,
 * not the host, sets the pace: work queues up, and a switch finds the old
 * stream busy (the event wait of the ECLIP rule).
 *
 *   stream A: resizeSeqStep with k = 0, 1, ... on vA (each launch reads
 *             the one before) and a log of the order the launches ran in;
 *   stream B: every 64 launches of A, B waits for an event of A, runs a
 *             chainStep of its own chain on vB, and A waits for an event of
 *             B before it goes on: dependencies across streams, through
 *             events, across every switch;
 *   every 512 launches an event query loop, every 2048 a synchronisation,
 *   so the switches find the streams now busy, now idle.
 *
 * At the end: vA and vB against a CPU reference, the log against 0, 1, ...
 * (nothing lost, repeated or reordered), the SM counts that device queries
 * returned on the way and how many distinct SMs ran block 0.
 */
#include "prog.h"

#define N   1024
#define MAX (1 << 20)

int main(int argc, char **argv)
{
	int launches = argc > 1 ? atoi(argv[1]) : 20000;
	int heavy = argc > 2 && !strcmp(argv[2], "heavy");
	CUlibrary lib_cb;
	CUkernel kcb;
	CUdeviceptr cb_out;
	int cb_iters = 4000;
	static unsigned long long ha[N], hb[N], ra[N], rb[N];
	unsigned long long *log;
	unsigned int *smids, seen_sms[64], nseen = 0, k_b = 0;
	CUdeviceptr va, vb, dlog, dsmid;
	CUlibrary lib_seq, lib_chain;
	CUkernel kseq, kchain;
	CUevent ea, eb, eq;
	CUstream a, b;
	CUdevice dev;
	void *image;
	int n = N, sms, bad = 0, distinct = 0;
	unsigned char smid_seen[4096] = {0};

	if (launches < 1 || launches > MAX) {
		fprintf(stderr, "resize_chain: launches 1..%d\n", MAX);
		return 2;
	}
	log = calloc((size_t)launches + 1, sizeof(*log));
	smids = calloc((size_t)launches, sizeof(*smids));
	if (!log || !smids)
		return 1;
	for (int i = 0; i < N; i++) {
		ha[i] = ra[i] = 1000 + i;
		hb[i] = rb[i] = 7 * i + 3;
	}
	prog_init(&dev);
	image = prog_read_cubin("resize_seq");
	CHECK(cuLibraryLoadData(&lib_seq, image, NULL, NULL, 0, NULL, NULL, 0));
	free(image);
	image = prog_read_cubin("chain");
	CHECK(cuLibraryLoadData(&lib_chain, image, NULL, NULL, 0, NULL, NULL,
				0));
	free(image);
	CHECK(cuLibraryGetKernel(&kseq, lib_seq, "resizeSeqStep"));
	if (heavy) {
		image = prog_read_cubin("compute_bound");
		CHECK(cuLibraryLoadData(&lib_cb, image, NULL, NULL, 0, NULL,
					NULL, 0));
		free(image);
		CHECK(cuLibraryGetKernel(&kcb, lib_cb, "computeBound"));
		CHECK(cuMemAlloc(&cb_out, 64 * 256 * sizeof(float)));
	}
	CHECK(cuLibraryGetKernel(&kchain, lib_chain, "chainStep"));
	CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&ea, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&eb, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&eq, CU_EVENT_DISABLE_TIMING));
	CHECK(cuMemAlloc(&va, sizeof(ha)));
	CHECK(cuMemAlloc(&vb, sizeof(hb)));
	CHECK(cuMemAlloc(&dlog, ((size_t)launches + 1) * sizeof(*log)));
	CHECK(cuMemAlloc(&dsmid, (size_t)launches * sizeof(*smids)));
	CHECK(cuMemcpyHtoD(va, ha, sizeof(ha)));
	CHECK(cuMemcpyHtoD(vb, hb, sizeof(hb)));
	CHECK(cuMemsetD8(dlog, 0, ((size_t)launches + 1) * sizeof(*log)));
	/* the memset is asynchronous, on the default stream, which a and b
	 * (non-blocking) do not wait for */
	CHECK(cuCtxSynchronize());
	printf("resize_chain: started, %d launches\n", launches);
	fflush(stdout);

	for (unsigned long long k = 0; k < (unsigned long long)launches; k++) {
		void *pa[] = {&va, &n, &k, &dlog, &dsmid};

		CHECK(cuLaunchKernel((CUfunction)kseq, N / 256, 1, 1, 256, 1, 1,
				     0, a, pa, NULL));
		if (heavy) {
			void *pc[] = {&cb_out, &cb_iters};

			CHECK(cuLaunchKernel((CUfunction)kcb, 64, 1, 1, 256, 1,
					     1, 0, a, pc, NULL));
		}
		if (k % 64 == 63) {
			unsigned long long kb = k_b++;
			void *pb[] = {&vb, &n, &kb};

			CHECK(cuEventRecord(ea, a));
			CHECK(cuStreamWaitEvent(b, ea, 0));
			CHECK(cuLaunchKernel((CUfunction)kchain, N / 256, 1, 1,
					     256, 1, 1, 0, b, pb, NULL));
			CHECK(cuEventRecord(eb, b));
			CHECK(cuStreamWaitEvent(a, eb, 0));
		}
		if (k % 512 == 511) {
			CUresult q;

			CHECK(cuEventRecord(eq, a));
			while ((q = cuEventQuery(eq)) == CUDA_ERROR_NOT_READY)
				;
			CHECK(q);
		}
		if (k % 2048 == 2047)
			CHECK(cuStreamSynchronize(a));
		if (k % 256 == 0) {
			unsigned int i;

			CHECK(cuDeviceGetAttribute(
				&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
				dev));
			for (i = 0; i < nseen && seen_sms[i] != (unsigned)sms;
			     i++)
				;
			if (i == nseen && nseen < 64)
				seen_sms[nseen++] = (unsigned)sms;
		}
	}
	CHECK(cuCtxSynchronize());
	CHECK(cuMemcpyDtoH(ha, va, sizeof(ha)));
	CHECK(cuMemcpyDtoH(hb, vb, sizeof(hb)));
	CHECK(cuMemcpyDtoH(log, dlog, ((size_t)launches + 1) * sizeof(*log)));
	CHECK(cuMemcpyDtoH(smids, dsmid, (size_t)launches * sizeof(*smids)));

	for (unsigned long long k = 0; k < (unsigned long long)launches; k++)
		for (int i = 0; i < N; i++)
			ra[i] = ra[i] * 31 + k + i;
	for (unsigned long long k = 0; k < k_b; k++)
		for (int i = 0; i < N; i++)
			rb[i] = rb[i] * 31 + k + i;
	if (log[0] != (unsigned long long)launches) {
		printf("resize_chain: FAILED: %llu launches ran, expected %d\n",
		       log[0], launches);
		bad = 1;
	}
	for (int j = 0; j < launches && !bad; j++) {
		if (log[1 + j] != (unsigned long long)j) {
			printf("resize_chain: FAILED: the %d-th launch to run "
			       "was k = %llu\n",
			       j, log[1 + j]);
			bad = 1;
		}
	}
	for (int i = 0; i < N && !bad; i++) {
		if (ha[i] != ra[i] || hb[i] != rb[i]) {
			printf("resize_chain: FAILED: element %d: A %llu (want "
			       "%llu), B %llu (want %llu)\n",
			       i, ha[i], ra[i], hb[i], rb[i]);
			bad = 1;
		}
	}
	for (int j = 0; j < launches; j++) {
		if (smids[j] < sizeof(smid_seen) && !smid_seen[smids[j]]) {
			smid_seen[smids[j]] = 1;
			distinct++;
		}
	}
	printf("resize_chain: SM counts seen:");
	for (unsigned int i = 0; i < nseen; i++)
		printf(" %u", seen_sms[i]);
	printf("; %d distinct SMs ran block 0\n", distinct);
	CHECK(cuMemFree(va));
	CHECK(cuMemFree(vb));
	CHECK(cuMemFree(dlog));
	CHECK(cuMemFree(dsmid));
	CHECK(cuEventDestroy(ea));
	CHECK(cuEventDestroy(eb));
	CHECK(cuEventDestroy(eq));
	CHECK(cuStreamDestroy(a));
	CHECK(cuStreamDestroy(b));
	CHECK(cuLibraryUnload(lib_seq));
	if (heavy) {
		CHECK(cuMemFree(cb_out));
		CHECK(cuLibraryUnload(lib_cb));
	}
	CHECK(cuLibraryUnload(lib_chain));
	prog_fini(dev);
	free(log);
	free(smids);
	if (bad)
		return 1;
	printf("resize_chain: %d dependent launches (and %u on a second "
	       "stream) ran once each, in order\n",
	       launches, k_b);
	return 0;
}
