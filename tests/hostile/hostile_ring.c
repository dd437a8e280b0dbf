/* SPDX-License-Identifier: MIT */
/*
 * hostile_ring SOCKET NAME ATTACK: after a normal handshake, puts bad
 * descriptors on the ring and checks that each one gets an error
 * completion (and the ring keeps working), or for a bogus sq_tail that
 * the worker marks the ring VGPU_RING_BROKEN and drops the client.
 *
 * Attacks: valid (a correct session, proves the client is right),
 * data-offsets, overflow, bad-handles, unknown-opcode, nonzero-flags,
 * bad-launch, outside-memory, foreign-memory, bogus-sq-tail.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"

#define U64_MAX 0xffffffffffffffffull

/* Scratch offsets we use inside the data area. */
#define OFF_NAME    0
#define OFF_INFO    4096
#define OFF_PARAMS  16384
#define OFF_PAYLOAD (1u << 20)

struct session {
	struct hostile_ring r;
	int failures;
};

static struct vgpu_sqe op(uint16_t opcode, uint32_t handle, uint64_t a0,
			  uint64_t a1, uint64_t a2, uint64_t a3)
{
	struct vgpu_sqe s = {.opcode = opcode, .handle = handle};

	s.a[0] = a0;
	s.a[1] = a1;
	s.a[2] = a2;
	s.a[3] = a3;
	return s;
}

/*
 * Submits and checks the status: want == CUDA_SUCCESS needs success,
 * want == -1 any error, anything else exactly that error. Returns the
 * completion's r0.
 */
static uint64_t expect(struct session *s, const char *what, struct vgpu_sqe sqe,
		       int want)
{
	struct vgpu_cqe cqe;
	int good;

	if (hostile_submit(&s->r, &sqe, &cqe) < 0) {
		printf("  FAIL: %s: no completion\n", what);
		s->failures++;
		return 0;
	}
	if (want == -1)
		good = cqe.status != CUDA_SUCCESS;
	else
		good = cqe.status == want;
	printf("  %s: %s -> %s (%d)\n", good ? "ok" : "FAIL", what,
	       hostile_status_name(cqe.status), cqe.status);
	if (!good)
		s->failures++;
	return cqe.r[0];
}

#define ANY_ERROR -1

/* Submits and reports the status without judging it (either is fine). */
static uint64_t expect_status(struct session *s, const char *what,
			      struct vgpu_sqe sqe, int32_t *status)
{
	struct vgpu_cqe cqe;

	if (hostile_submit(&s->r, &sqe, &cqe) < 0) {
		printf("  FAIL: %s: no completion\n", what);
		s->failures++;
		*status = -1;
		return 0;
	}
	printf("  ok: %s -> %s (%d)\n", what, hostile_status_name(cqe.status),
	       cqe.status);
	*status = cqe.status;
	return cqe.r[0];
}

/* The ring still serves correct requests after the attack. */
static void still_works(struct session *s)
{
	expect(s, "NOP after the attack", op(VGPU_OP_NOP, 0, 0, 0, 0, 0),
	       CUDA_SUCCESS);
	expect(s, "MEM_GET_INFO after the attack",
	       op(VGPU_OP_MEM_GET_INFO, 0, 0, 0, 0, 0), CUDA_SUCCESS);
}

/* Loads a cubin through the stage and returns (library, kernel) handles
 * and the kernel's parameter layout. */
static int load_kernel(struct session *s, const char *cubin, const char *kname,
		       uint32_t *lib, uint32_t *kern,
		       struct vgpu_kernel_info *info)
{
	const char *dir = getenv("VGPU_KERNEL_DIR");
	char path[4096];
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.cubin", dir ? dir : "build/kernels",
		 cubin);
	f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	len = fread(hostile_data(&s->r, OFF_PAYLOAD), 1,
		    s->r.lay.data_size - OFF_PAYLOAD, f);
	fclose(f);
	expect(s, "STAGE_WRITE of a cubin",
	       op(VGPU_OP_STAGE_WRITE, 0, 0, OFF_PAYLOAD, len, 0),
	       CUDA_SUCCESS);
	*lib = expect(s, "LIBRARY_LOAD",
		      op(VGPU_OP_LIBRARY_LOAD, 0, len, 0, 0, 0), CUDA_SUCCESS);
	strcpy(hostile_data(&s->r, OFF_NAME), kname);
	*kern = expect(s, "LIBRARY_GET_KERNEL",
		       op(VGPU_OP_LIBRARY_GET_KERNEL, *lib, OFF_NAME,
			  strlen(kname) + 1, OFF_INFO, sizeof(*info)),
		       CUDA_SUCCESS);
	memcpy(info, hostile_data(&s->r, OFF_INFO), sizeof(*info));
	if (info->nparams > VGPU_MAX_PARAMS ||
	    info->param_bytes > VGPU_MAX_PARAM_BYTES) {
		printf("  FAIL: kernel info has %u params, %u bytes\n",
		       info->nparams, info->param_bytes);
		s->failures++;
		return -1;
	}
	return s->failures ? -1 : 0;
}

static struct vgpu_sqe launch(uint32_t kern, uint32_t gx, uint32_t gy,
			      uint32_t gz, uint32_t bx, uint32_t by,
			      uint32_t bz, uint64_t poff, uint64_t plen)
{
	struct vgpu_sqe s = {.opcode = VGPU_OP_LAUNCH, .handle = kern};

	s.a[0] = gx | (uint64_t)gy << 32;
	s.a[1] = gz | (uint64_t)bx << 32;
	s.a[2] = by | (uint64_t)bz << 32;
	s.a[3] = 0;
	s.a[4] = poff;
	s.a[5] = plen;
	return s;
}

/* A correct session: device info, memory, copies, a vecAdd launch. */
static void attack_valid(struct session *s)
{
	struct vgpu_kernel_info info;
	struct vgpu_device_info *dev = hostile_data(&s->r, OFF_INFO);
	uint32_t lib, kern, n = 256;
	uint64_t a, b, c;
	float *f = hostile_data(&s->r, OFF_PAYLOAD);
	char *pb;

	expect(s, "GET_DEVICE_INFO",
	       op(VGPU_OP_GET_DEVICE_INFO, 0, OFF_INFO, sizeof(*dev), 0, 0),
	       CUDA_SUCCESS);
	printf("  device: \"%.255s\", %u SMs, quota %llu\n", dev->name,
	       dev->sm_count, (unsigned long long)dev->memory_quota);
	a = expect(s, "MEM_ALLOC a", op(VGPU_OP_MEM_ALLOC, 0, 4 * n, 0, 0, 0),
		   CUDA_SUCCESS);
	b = expect(s, "MEM_ALLOC b", op(VGPU_OP_MEM_ALLOC, 0, 4 * n, 0, 0, 0),
		   CUDA_SUCCESS);
	c = expect(s, "MEM_ALLOC c", op(VGPU_OP_MEM_ALLOC, 0, 4 * n, 0, 0, 0),
		   CUDA_SUCCESS);
	for (uint32_t i = 0; i < n; i++)
		f[i] = i;
	expect(s, "MEMCPY_HTOD a",
	       op(VGPU_OP_MEMCPY_HTOD, 0, a, OFF_PAYLOAD, 4 * n, 0),
	       CUDA_SUCCESS);
	expect(s, "MEMCPY_DTOD b = a",
	       op(VGPU_OP_MEMCPY_DTOD, 0, b, a, 4 * n, 0), CUDA_SUCCESS);
	if (load_kernel(s, "vector_add", "vecAdd", &lib, &kern, &info) < 0)
		return;
	pb = hostile_data(&s->r, OFF_PARAMS);
	memset(pb, 0, info.param_bytes);
	memcpy(pb + info.params[0].offset, &a, 8);
	memcpy(pb + info.params[1].offset, &b, 8);
	memcpy(pb + info.params[2].offset, &c, 8);
	memcpy(pb + info.params[3].offset, &n, 4);
	expect(s, "LAUNCH vecAdd",
	       launch(kern, 1, 1, 1, n, 1, 1, OFF_PARAMS, info.param_bytes),
	       CUDA_SUCCESS);
	expect(s, "CTX_SYNC", op(VGPU_OP_CTX_SYNC, 0, 0, 0, 0, 0),
	       CUDA_SUCCESS);
	memset(f, 0, 4 * n);
	expect(s, "MEMCPY_DTOH c",
	       op(VGPU_OP_MEMCPY_DTOH, 0, c, OFF_PAYLOAD, 4 * n, 0),
	       CUDA_SUCCESS);
	for (uint32_t i = 0; i < n; i++) {
		if (f[i] != 2.0f * i) {
			printf("  FAIL: c[%u] = %g, expected %g\n", i, f[i],
			       2.0f * i);
			s->failures++;
			break;
		}
	}
	expect(s, "LIBRARY_UNLOAD", op(VGPU_OP_LIBRARY_UNLOAD, lib, 0, 0, 0, 0),
	       CUDA_SUCCESS);
	expect(s, "MEM_FREE a", op(VGPU_OP_MEM_FREE, 0, a, 0, 0, 0),
	       CUDA_SUCCESS);
}

/* Data-area offsets and lengths that leave the data area. */
static void attack_data_offsets(struct session *s)
{
	uint64_t size = s->r.lay.data_size;
	uint64_t p =
		expect(s, "MEM_ALLOC 64 KiB",
		       op(VGPU_OP_MEM_ALLOC, 0, 65536, 0, 0, 0), CUDA_SUCCESS);

	expect(s, "HTOD from data[size-8], 16 bytes",
	       op(VGPU_OP_MEMCPY_HTOD, 0, p, size - 8, 16, 0), ANY_ERROR);
	expect(s, "HTOD from data[size], 1 byte",
	       op(VGPU_OP_MEMCPY_HTOD, 0, p, size, 1, 0), ANY_ERROR);
	expect(s, "HTOD of more bytes than the data area",
	       op(VGPU_OP_MEMCPY_HTOD, 0, p, 0, size + 1, 0), ANY_ERROR);
	expect(s, "DTOH to data[size-8], 16 bytes",
	       op(VGPU_OP_MEMCPY_DTOH, 0, p, size - 8, 16, 0), ANY_ERROR);
	expect(s, "DTOH to data[2^40]",
	       op(VGPU_OP_MEMCPY_DTOH, 0, p, 1ull << 40, 16, 0), ANY_ERROR);
	expect(s, "STAGE_WRITE from data[size-4], 64 bytes",
	       op(VGPU_OP_STAGE_WRITE, 0, 0, size - 4, 64, 0), ANY_ERROR);
	expect(s, "GET_DEVICE_INFO at data[size-16]",
	       op(VGPU_OP_GET_DEVICE_INFO, 0, size - 16,
		  sizeof(struct vgpu_device_info), 0, 0),
	       ANY_ERROR);
	expect(s, "GET_DEVICE_INFO into 16 bytes",
	       op(VGPU_OP_GET_DEVICE_INFO, 0, 0, 16, 0, 0), ANY_ERROR);
	expect(s, "GET_KERNEL with the name at data[size]",
	       op(VGPU_OP_LIBRARY_GET_KERNEL, 1, size, 8, 0, 4096), ANY_ERROR);
	expect(s, "LAUNCH with params at data[size-4]",
	       launch(1, 1, 1, 1, 1, 1, 1, size - 4, 32), ANY_ERROR);
	still_works(s);
}

/* offset + length wraps around 2^64. */
static void attack_overflow(struct session *s)
{
	uint64_t p =
		expect(s, "MEM_ALLOC 64 KiB",
		       op(VGPU_OP_MEM_ALLOC, 0, 65536, 0, 0, 0), CUDA_SUCCESS);

	expect(s, "HTOD data offset 2^64-8, 16 bytes",
	       op(VGPU_OP_MEMCPY_HTOD, 0, p, U64_MAX - 7, 16, 0), ANY_ERROR);
	expect(s, "DTOH data offset 2^64-8, 16 bytes",
	       op(VGPU_OP_MEMCPY_DTOH, 0, p, U64_MAX - 7, 16, 0), ANY_ERROR);
	expect(s, "HTOD of 2^64-1 bytes",
	       op(VGPU_OP_MEMCPY_HTOD, 0, p, 0, U64_MAX, 0), ANY_ERROR);
	expect(s, "HTOD to device pointer 2^64-8, 16 bytes",
	       op(VGPU_OP_MEMCPY_HTOD, 0, U64_MAX - 7, 0, 16, 0), ANY_ERROR);
	expect(s, "DTOD of 2^64-1 bytes",
	       op(VGPU_OP_MEMCPY_DTOD, 0, p, p, U64_MAX, 0), ANY_ERROR);
	expect(s, "MEMSET of 2^62 4-byte elements",
	       op(VGPU_OP_MEMSET, 0, p, 0, 1ull << 62, 4), ANY_ERROR);
	expect(s, "STAGE_WRITE at stage offset 2^64-8, 16 bytes",
	       op(VGPU_OP_STAGE_WRITE, 0, U64_MAX - 7, 0, 16, 0), ANY_ERROR);
	expect(s, "LIBRARY_LOAD of 2^63 bytes",
	       op(VGPU_OP_LIBRARY_LOAD, 0, 1ull << 63, 0, 0, 0), ANY_ERROR);
	expect(s, "MEM_ALLOC of 2^64-1 bytes",
	       op(VGPU_OP_MEM_ALLOC, 0, U64_MAX, 0, 0, 0), ANY_ERROR);
	expect(s, "GET_DEVICE_INFO at 2^64-8",
	       op(VGPU_OP_GET_DEVICE_INFO, 0, U64_MAX - 7, 4096, 0, 0),
	       ANY_ERROR);
	expect(s, "GET_KERNEL name length 2^64-1",
	       op(VGPU_OP_LIBRARY_GET_KERNEL, 1, 0, U64_MAX, 0, 4096),
	       ANY_ERROR);
	expect(s, "LAUNCH params at 2^64-8, 16 bytes",
	       launch(1, 1, 1, 1, 1, 1, 1, U64_MAX - 7, 16), ANY_ERROR);
	still_works(s);
}

/* Handles that were never created, or are gone. */
static void attack_bad_handles(struct session *s)
{
	const int bad = CUDA_ERROR_INVALID_HANDLE;
	struct vgpu_sqe q;
	uint32_t st, ev;

	q = op(VGPU_OP_STREAM_SYNC, 0, 0, 0, 0, 0);
	q.stream = 12345;
	expect(s, "STREAM_SYNC on stream 12345", q, bad);
	q = op(VGPU_OP_EVENT_RECORD, 999, 0, 0, 0, 0);
	expect(s, "EVENT_RECORD of event 999", q, bad);
	expect(s, "EVENT_SYNC of event 0xffffffff",
	       op(VGPU_OP_EVENT_SYNC, 0xffffffffu, 0, 0, 0, 0), bad);
	expect(s, "LIBRARY_UNLOAD of library 777",
	       op(VGPU_OP_LIBRARY_UNLOAD, 777, 0, 0, 0, 0), bad);
	strcpy(hostile_data(&s->r, OFF_NAME), "vecAdd");
	expect(s, "GET_KERNEL from library 778",
	       op(VGPU_OP_LIBRARY_GET_KERNEL, 778, OFF_NAME, 7, OFF_INFO,
		  sizeof(struct vgpu_kernel_info)),
	       bad);
	expect(s, "LAUNCH of kernel 5555",
	       launch(5555, 1, 1, 1, 1, 1, 1, OFF_PARAMS, 8), bad);

	st = expect(s, "STREAM_CREATE",
		    op(VGPU_OP_STREAM_CREATE, 0, 0, 0, 0, 0), CUDA_SUCCESS);
	q = op(VGPU_OP_STREAM_DESTROY, 0, 0, 0, 0, 0);
	q.stream = st;
	q.handle = st; /* whichever field the worker reads */
	expect(s, "STREAM_DESTROY", q, CUDA_SUCCESS);
	q = op(VGPU_OP_STREAM_QUERY, 0, 0, 0, 0, 0);
	q.stream = st;
	expect(s, "STREAM_QUERY on the destroyed stream", q, bad);
	ev = expect(s, "EVENT_CREATE", op(VGPU_OP_EVENT_CREATE, 0, 0, 0, 0, 0),
		    CUDA_SUCCESS);
	expect(s, "EVENT_ELAPSED to event 4242",
	       op(VGPU_OP_EVENT_ELAPSED, ev, 4242, 0, 0, 0), bad);
	expect(s, "EVENT_DESTROY", op(VGPU_OP_EVENT_DESTROY, ev, 0, 0, 0, 0),
	       CUDA_SUCCESS);
	expect(s, "EVENT_QUERY of the destroyed event",
	       op(VGPU_OP_EVENT_QUERY, ev, 0, 0, 0, 0), bad);
	expect(s, "EVENT_DESTROY twice",
	       op(VGPU_OP_EVENT_DESTROY, ev, 0, 0, 0, 0), bad);
	q = op(VGPU_OP_STREAM_WAIT_EVENT, ev, 0, 0, 0, 0);
	expect(s, "STREAM_WAIT_EVENT on the destroyed event", q, bad);
	still_works(s);
}

static void attack_unknown_opcode(struct session *s)
{
	static const uint16_t codes[] = {
		2, 9, 17, 25, 36, 47, VGPU_OP_COUNT_, 1000, 0xffff};

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		char what[64];

		snprintf(what, sizeof(what), "opcode %u", codes[i]);
		expect(s, what, op(codes[i], 0, 0, 0, 0, 0), ANY_ERROR);
	}
	still_works(s);
}

static void attack_nonzero_flags(struct session *s)
{
	struct vgpu_sqe q = op(VGPU_OP_NOP, 0, 0, 0, 0, 0);

	q.flags = 1;
	expect(s, "NOP with flags 1", q, ANY_ERROR);
	q = op(VGPU_OP_MEM_ALLOC, 0, 4096, 0, 0, 0);
	q.flags = 0x8000;
	expect(s, "MEM_ALLOC with flags 0x8000", q, ANY_ERROR);
	still_works(s);
}

/* Launch geometry and parameter buffers a GPU would refuse. */
static void attack_bad_launch(struct session *s)
{
	struct vgpu_kernel_info info;
	uint32_t lib, kern, pb, junk_lib;
	int32_t status;

	if (load_kernel(s, "vector_add", "vecAdd", &lib, &kern, &info) < 0)
		return;
	pb = info.param_bytes;
	memset(hostile_data(&s->r, OFF_PARAMS), 0, pb);
	expect(s, "LAUNCH grid 0x1x1",
	       launch(kern, 0, 1, 1, 32, 1, 1, OFF_PARAMS, pb), ANY_ERROR);
	expect(s, "LAUNCH block 0x1x1",
	       launch(kern, 1, 1, 1, 0, 1, 1, OFF_PARAMS, pb), ANY_ERROR);
	expect(s, "LAUNCH block 2048x1x1 (over 1024 threads)",
	       launch(kern, 1, 1, 1, 2048, 1, 1, OFF_PARAMS, pb), ANY_ERROR);
	expect(s, "LAUNCH block 32x32x2 (over 1024 threads)",
	       launch(kern, 1, 1, 1, 32, 32, 2, OFF_PARAMS, pb), ANY_ERROR);
	expect(s, "LAUNCH block z = 65",
	       launch(kern, 1, 1, 1, 1, 1, 65, OFF_PARAMS, pb), ANY_ERROR);
	expect(s, "LAUNCH grid y = 65536",
	       launch(kern, 1, 65536, 1, 32, 1, 1, OFF_PARAMS, pb), ANY_ERROR);
	expect(s, "LAUNCH grid 2^32-1 x 65535 x 65535",
	       launch(kern, 0xffffffffu, 65535, 65535, 1, 1, 1, OFF_PARAMS, pb),
	       ANY_ERROR);
	expect(s, "LAUNCH with a parameter buffer 4 bytes short",
	       launch(kern, 1, 1, 1, 32, 1, 1, OFF_PARAMS, pb - 4), ANY_ERROR);
	expect(s, "LAUNCH with a 1 MiB parameter buffer",
	       launch(kern, 1, 1, 1, 32, 1, 1, OFF_PARAMS, 1u << 20),
	       ANY_ERROR);
	struct vgpu_sqe q = launch(kern, 1, 1, 1, 32, 1, 1, OFF_PARAMS, pb);
	q.a[3] = 1u << 30; /* 1 GiB of shared memory */
	expect(s, "LAUNCH with 1 GiB of shared memory", q, ANY_ERROR);
	q = launch(kern, 1, 1, 1, 32, 1, 1, OFF_PARAMS, pb);
	q.stream = 31337;
	expect(s, "LAUNCH on stream 31337", q, CUDA_ERROR_INVALID_HANDLE);
	expect(s, "LAUNCH of a kernel handle never given out",
	       launch(kern + 1000, 1, 1, 1, 32, 1, 1, OFF_PARAMS, pb),
	       CUDA_ERROR_INVALID_HANDLE);
	strcpy(hostile_data(&s->r, OFF_NAME), "noSuchKernel");
	expect(s, "GET_KERNEL noSuchKernel",
	       op(VGPU_OP_LIBRARY_GET_KERNEL, lib, OFF_NAME, 13, OFF_INFO,
		  sizeof(info)),
	       ANY_ERROR);
	memset(hostile_data(&s->r, OFF_NAME), 'k', 64);
	expect(s, "GET_KERNEL with an unterminated name",
	       op(VGPU_OP_LIBRARY_GET_KERNEL, lib, OFF_NAME, 64, OFF_INFO,
		  sizeof(info)),
	       ANY_ERROR);
	memset(hostile_data(&s->r, OFF_PAYLOAD), 0x7f, 4096);
	expect(s, "STAGE_WRITE of 4 KiB of junk",
	       op(VGPU_OP_STAGE_WRITE, 0, 0, OFF_PAYLOAD, 4096, 0),
	       CUDA_SUCCESS);
	junk_lib = expect_status(s, "LIBRARY_LOAD of the junk",
				 op(VGPU_OP_LIBRARY_LOAD, 0, 4096, 0, 0, 0),
				 &status);
	if (status == CUDA_SUCCESS) {
		/* a simulator may take any bytes; it must not find a kernel */
		strcpy(hostile_data(&s->r, OFF_NAME), "vecAdd");
		expect(s, "GET_KERNEL vecAdd from the junk library",
		       op(VGPU_OP_LIBRARY_GET_KERNEL, junk_lib, OFF_NAME, 7,
			  OFF_INFO, sizeof(info)),
		       ANY_ERROR);
	}
	still_works(s);
}

/* Device pointers outside every live allocation of this client. */
static void attack_outside_memory(struct session *s)
{
	uint64_t p =
		expect(s, "MEM_ALLOC 4 KiB",
		       op(VGPU_OP_MEM_ALLOC, 0, 4096, 0, 0, 0), CUDA_SUCCESS);

	expect(s, "HTOD just past the allocation",
	       op(VGPU_OP_MEMCPY_HTOD, 0, p + 4096, 0, 16, 0), ANY_ERROR);
	expect(s, "HTOD across the allocation's end",
	       op(VGPU_OP_MEMCPY_HTOD, 0, p + 4090, 0, 16, 0), ANY_ERROR);
	expect(s, "HTOD before the allocation",
	       op(VGPU_OP_MEMCPY_HTOD, 0, p - 256, 0, 16, 0), ANY_ERROR);
	expect(s, "HTOD to address 0x1000",
	       op(VGPU_OP_MEMCPY_HTOD, 0, 0x1000, 0, 16, 0), ANY_ERROR);
	expect(s, "HTOD to a host address of the worker (stack-like)",
	       op(VGPU_OP_MEMCPY_HTOD, 0, 0x7ffff7000000ull, 0, 16, 0),
	       ANY_ERROR);
	expect(s, "DTOH from past the allocation",
	       op(VGPU_OP_MEMCPY_DTOH, 0, p + 4096, 0, 16, 0), ANY_ERROR);
	expect(s, "DTOD from outside",
	       op(VGPU_OP_MEMCPY_DTOD, 0, p, p + 8192, 16, 0), ANY_ERROR);
	expect(s, "DTOD to outside",
	       op(VGPU_OP_MEMCPY_DTOD, 0, p + 8192, p, 16, 0), ANY_ERROR);
	expect(s, "MEMSET of 4097 bytes", op(VGPU_OP_MEMSET, 0, p, 0, 4097, 1),
	       ANY_ERROR);
	expect(s, "MEMSET of 1025 words", op(VGPU_OP_MEMSET, 0, p, 0, 1025, 4),
	       ANY_ERROR);
	expect(s, "MEMSET with element size 3",
	       op(VGPU_OP_MEMSET, 0, p, 0, 16, 3), ANY_ERROR);
	expect(s, "MEM_FREE of an interior pointer",
	       op(VGPU_OP_MEM_FREE, 0, p + 256, 0, 0, 0), ANY_ERROR);
	expect(s, "MEM_ALLOC of 0 bytes", op(VGPU_OP_MEM_ALLOC, 0, 0, 0, 0, 0),
	       ANY_ERROR);
	expect(s, "MEM_FREE", op(VGPU_OP_MEM_FREE, 0, p, 0, 0, 0),
	       CUDA_SUCCESS);
	expect(s, "HTOD to the freed allocation",
	       op(VGPU_OP_MEMCPY_HTOD, 0, p, 0, 16, 0), ANY_ERROR);
	expect(s, "MEM_FREE twice", op(VGPU_OP_MEM_FREE, 0, p, 0, 0, 0),
	       ANY_ERROR);
	still_works(s);
}

/* Another client's allocation and stream on the same vGPU. */
static void attack_foreign_memory(struct session *s, const char *path,
				  const char *name)
{
	struct session other = {0};
	uint64_t p;
	uint32_t st;
	struct vgpu_sqe q;

	if (hostile_ring_open(&other.r, path, name) < 0) {
		printf("  FAIL: second client could not connect\n");
		s->failures++;
		return;
	}
	p = expect(&other, "other client: MEM_ALLOC 4 KiB",
		   op(VGPU_OP_MEM_ALLOC, 0, 4096, 0, 0, 0), CUDA_SUCCESS);
	st = expect(&other, "other client: STREAM_CREATE",
		    op(VGPU_OP_STREAM_CREATE, 0, 0, 0, 0, 0), CUDA_SUCCESS);
	expect(s, "HTOD into the other client's allocation",
	       op(VGPU_OP_MEMCPY_HTOD, 0, p, 0, 16, 0), ANY_ERROR);
	expect(s, "DTOH from the other client's allocation",
	       op(VGPU_OP_MEMCPY_DTOH, 0, p, 0, 16, 0), ANY_ERROR);
	expect(s, "MEMSET of the other client's allocation",
	       op(VGPU_OP_MEMSET, 0, p, 0, 16, 1), ANY_ERROR);
	expect(s, "MEM_FREE of the other client's allocation",
	       op(VGPU_OP_MEM_FREE, 0, p, 0, 0, 0), ANY_ERROR);
	q = op(VGPU_OP_STREAM_SYNC, 0, 0, 0, 0, 0);
	q.stream = st;
	expect(s, "STREAM_SYNC on the other client's stream", q,
	       CUDA_ERROR_INVALID_HANDLE);
	expect(&other, "other client: its allocation still works",
	       op(VGPU_OP_MEMCPY_HTOD, 0, p, 0, 16, 0), CUDA_SUCCESS);
	s->failures += other.failures;
	hostile_ring_close(&other.r);
	still_works(s);
}

/* A tail far beyond the head: the ring is broken, the client dropped. */
static void attack_bogus_sq_tail(struct session *s)
{
	struct vgpu_ring_header *h = s->r.hdr;
	uint64_t one = 1;
	int i;

	ring_store_release(&h->sq_tail,
			   ring_load_acquire(&h->sq_head) + h->sq_entries + 7);
	if (write(s->r.submit_fd, &one, sizeof(one)) != sizeof(one))
		perror("doorbell");
	for (i = 0; i < HOSTILE_TIMEOUT_S * 100; i++) {
		if (ring_load_acquire(&h->status) != VGPU_RING_OK)
			break;
		usleep(10000);
	}
	if (h->status != VGPU_RING_BROKEN) {
		printf("  FAIL: ring status is %u, expected VGPU_RING_BROKEN\n",
		       h->status);
		s->failures++;
	} else {
		printf("  ok: ring marked VGPU_RING_BROKEN\n");
	}
	if (!hostile_wait_closed(s->r.sock)) {
		printf("  FAIL: the worker did not drop the client within "
		       "%d s\n",
		       HOSTILE_TIMEOUT_S);
		s->failures++;
	} else {
		printf("  ok: the worker closed the client's socket\n");
	}
}

int main(int argc, char **argv)
{
	struct session s = {0};
	const char *attack;

	if (argc != 4) {
		fprintf(stderr, "usage: hostile_ring SOCKET NAME ATTACK\n");
		return 2;
	}
	attack = argv[3];
	if (hostile_ring_open(&s.r, argv[1], argv[2]) < 0)
		return 1;
	printf("%s:\n", attack);
	if (!strcmp(attack, "valid"))
		attack_valid(&s);
	else if (!strcmp(attack, "data-offsets"))
		attack_data_offsets(&s);
	else if (!strcmp(attack, "overflow"))
		attack_overflow(&s);
	else if (!strcmp(attack, "bad-handles"))
		attack_bad_handles(&s);
	else if (!strcmp(attack, "unknown-opcode"))
		attack_unknown_opcode(&s);
	else if (!strcmp(attack, "nonzero-flags"))
		attack_nonzero_flags(&s);
	else if (!strcmp(attack, "bad-launch"))
		attack_bad_launch(&s);
	else if (!strcmp(attack, "outside-memory"))
		attack_outside_memory(&s);
	else if (!strcmp(attack, "foreign-memory"))
		attack_foreign_memory(&s, argv[1], argv[2]);
	else if (!strcmp(attack, "bogus-sq-tail"))
		attack_bogus_sq_tail(&s);
	else {
		fprintf(stderr, "unknown attack %s\n", attack);
		return 2;
	}
	hostile_ring_close(&s.r);
	printf("%s: %d failure(s)\n", attack, s.failures);
	return s.failures ? 1 : 0;
}
