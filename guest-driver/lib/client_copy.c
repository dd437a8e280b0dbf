/* SPDX-License-Identifier: MIT */
/*
 * Chunked, pipelined copies (see client_copy.h).
 */
#include <string.h>

#include <vgpu/protocol.h>

#include "client_copy.h"
#include "client_memcpy.h"

#define COPY_DTOH_WINDOW 4 /* D2H chunks in flight per copy */

uint64_t client_copy_chunk(const struct client_ring *r)
{
	uint64_t chunk = r->area.size / 4;

	if (chunk > VGPU_COPY_CHUNK_BYTES)
		chunk = VGPU_COPY_CHUNK_BYTES;
	return chunk & ~(uint64_t)(CLIENT_DATA_ALIGN - 1);
}

/* What a synchronous copy returns: its own failure, else one deferred
 * from earlier asynchronous work. Lock held. */
static CUresult sync_result(struct client_ring *r, CUresult err)
{
	return err != CUDA_SUCCESS ? err : client_ring_take_deferred(r);
}

/*
 * H2D: each chunk is copied into the data area and pushed as an ASYNC
 * descriptor that frees its region when the worker is done with it, so
 * the next chunk is filled while the worker copies this one. The data
 * area bounds how many are in flight.
 */
CUresult client_copy_htod(struct client_ring *r, uint32_t stream, uint64_t dst,
			  const void *src, size_t n, int sync)
{
	struct client_group group = {0};
	uint64_t chunk, done = 0, off;
	CUresult err = CUDA_SUCCESS;

	if (n == 0)
		return CUDA_SUCCESS;
	client_hostfn_wait_stream(stream);
	client_ring_lock(r);
	chunk = client_copy_chunk(r);
	while (done < n) {
		uint64_t len = n - done < chunk ? n - done : chunk;
		struct client_push how = {
			.mode = CLIENT_SLOT_ASYNC,
			.group = sync ? &group : NULL,
			.data_len = len,
		};
		struct vgpu_sqe sqe = {
			.opcode = VGPU_OP_MEMCPY_HTOD,
			.stream = stream,
		};

		err = client_ring_data_alloc(r, len, &off);
		if (err != CUDA_SUCCESS)
			break;
		client_memcpy(client_ring_data(r, off),
			      (const char *)src + done, len);
		how.data_off = off;
		sqe.a[0] = dst + done;
		sqe.a[1] = off;
		sqe.a[2] = len;
		err = client_ring_push(r, &sqe, &how, NULL);
		if (err != CUDA_SUCCESS) {
			client_ring_data_free(r, off, len);
			break;
		}
		client_ring_flush(r);
		done += len;
	}
	client_ring_flush(r);
	if (sync) {
		/* wait for what was pushed even after a failure */
		CUresult werr = client_ring_wait_group(r, &group);

		if (err == CUDA_SUCCESS)
			err = werr != CUDA_SUCCESS ? werr : group.error;
		err = sync_result(r, err);
	}
	client_ring_unlock(r);
	return err;
}

struct dtoh_chunk {
	uint32_t tag;
	uint64_t off;
	uint64_t len;
	uint64_t at; /* offset in the copy */
};

/*
 * D2H: up to COPY_DTOH_WINDOW chunks in flight as WAIT descriptors;
 * the oldest is drained into the caller's buffer (and its region given
 * back) before another is pushed. When the area is full the copy drains
 * its own chunks rather than wait for a region, so it never waits for
 * space while holding some.
 */
CUresult client_copy_dtoh(struct client_ring *r, uint32_t stream, void *dst,
			  uint64_t src, size_t n)
{
	struct dtoh_chunk win[COPY_DTOH_WINDOW];
	unsigned int head = 0, count = 0;
	uint64_t chunk, next = 0;
	CUresult err = CUDA_SUCCESS, werr;
	struct vgpu_cqe cqe;

	if (n == 0)
		return CUDA_SUCCESS;
	client_ring_lock(r);
	chunk = client_copy_chunk(r);
	while (next < n || count) {
		/* push while the window has room and nothing failed */
		while (err == CUDA_SUCCESS && next < n &&
		       count < COPY_DTOH_WINDOW) {
			struct dtoh_chunk *c =
				&win[(head + count) % COPY_DTOH_WINDOW];
			struct client_push how = {.mode = CLIENT_SLOT_WAIT};
			struct vgpu_sqe sqe = {
				.opcode = VGPU_OP_MEMCPY_DTOH,
				.stream = stream,
			};
			CUresult aerr;

			c->len = n - next < chunk ? n - next : chunk;
			aerr = count ? client_ring_try_data_alloc(r, c->len,
								  &c->off)
				     : client_ring_data_alloc(r, c->len,
							      &c->off);
			if (aerr == CUDA_ERROR_NOT_READY)
				break; /* drain one of ours first */
			if (aerr != CUDA_SUCCESS) {
				err = aerr;
				break;
			}
			sqe.a[0] = src + next;
			sqe.a[1] = c->off;
			sqe.a[2] = c->len;
			aerr = client_ring_push(r, &sqe, &how, &c->tag);
			if (aerr != CUDA_SUCCESS) {
				client_ring_data_free(r, c->off, c->len);
				err = aerr;
				break;
			}
			client_ring_flush(r);
			c->at = next;
			next += c->len;
			count++;
		}
		if (count == 0)
			break;
		/* drain the oldest */
		werr = client_ring_wait(r, win[head].tag, &cqe);
		if (werr != CUDA_SUCCESS) {
			err = werr;
			break; /* dead: nothing more will come back */
		}
		if (cqe.status != CUDA_SUCCESS && err == CUDA_SUCCESS)
			err = (CUresult)cqe.status;
		if (err == CUDA_SUCCESS)
			client_memcpy((char *)dst + win[head].at,
				      client_ring_data(r, win[head].off),
				      win[head].len);
		client_ring_data_free(r, win[head].off, win[head].len);
		head = (head + 1) % COPY_DTOH_WINDOW;
		count--;
		if (err != CUDA_SUCCESS)
			next = n; /* collect what is in flight, push no more */
	}
	err = sync_result(r, err);
	client_ring_unlock(r);
	return err;
}

CUresult client_copy_dtod(struct client_ring *r, uint32_t stream, uint64_t dst,
			  uint64_t src, size_t n, int sync)
{
	struct vgpu_sqe sqe = {
		.opcode = VGPU_OP_MEMCPY_DTOD,
		.stream = stream,
		.a = {dst, src, n},
	};
	CUresult err;

	if (n == 0)
		return CUDA_SUCCESS;
	if (!sync)
		return client_ring_submit_async(r, &sqe);
	err = client_ring_call(r, &sqe, NULL);
	return client_ring_sync_result(r, err);
}

CUresult client_copy_region(struct client_ring *r, uint32_t stream,
			    uint16_t opcode, uint32_t handle, uint64_t dev,
			    uint64_t off, size_t n, int sync)
{
	struct vgpu_sqe sqe = {
		.opcode = opcode,
		.stream = stream,
		.handle = handle,
		.a = {dev, off, n},
	};
	CUresult err;

	if (n == 0)
		return CUDA_SUCCESS;
	err = client_ring_call(r, &sqe, NULL);
	return sync ? client_ring_sync_result(r, err) : err;
}

CUresult client_memset(struct client_ring *r, uint32_t stream, uint64_t dst,
		       uint32_t value, uint32_t elem_size, size_t count,
		       int sync)
{
	struct vgpu_sqe sqe = {
		.opcode = VGPU_OP_MEMSET,
		.stream = stream,
		.a = {dst, value, count, elem_size},
	};
	CUresult err;

	if (count == 0)
		return CUDA_SUCCESS;
	if (!sync)
		return client_ring_submit_async(r, &sqe);
	err = client_ring_call(r, &sqe, NULL);
	return client_ring_sync_result(r, err);
}
