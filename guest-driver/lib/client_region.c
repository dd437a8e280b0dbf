/* SPDX-License-Identifier: MIT */
/*
 * Host regions (see client_region.h): the table of host buffers, and
 * creating a region: one CREATE descriptor, then the worker's packet
 * with the region's memfd, taken from the socket under the ring lock
 * right after the completion, checked, and mapped.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vgpu/protocol.h>

#include "client_snapshot.h"
#include "client_region.h"

#define REGION_MAX_FDS 4 /* room to notice (and close) extra fds */

void client_region_table_init(struct client_region_table *t)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
}

void client_region_table_fini(struct client_region_table *t)
{
	free(t->v);
	pthread_mutex_destroy(&t->lock);
	memset(t, 0, sizeof(*t));
}

/* Index of the first entry whose base is > ptr. Lock held. */
static size_t region_upper_bound(const struct client_region_table *t,
				 uint64_t ptr)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].base <= ptr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int client_region_add(struct client_region_table *t,
		      const struct client_region *reg)
{
	struct client_region *n;
	int ret = -1;
	size_t i;

	if (reg->size == 0 || reg->base + reg->size < reg->base)
		return -1;
	pthread_mutex_lock(&t->lock);
	i = region_upper_bound(t, reg->base);
	if (i > 0 && t->v[i - 1].base + t->v[i - 1].size > reg->base)
		goto out;
	if (i < t->n && reg->base + reg->size > t->v[i].base)
		goto out;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;

		n = realloc(t->v, cap * sizeof(*n));
		if (!n)
			goto out;
		t->v = n;
		t->cap = cap;
	}
	memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof(*t->v));
	t->v[i] = *reg;
	/* ids apart from device allocations': the top bit set */
	t->v[i].id = ++t->ids | 1ull << 63;
	t->n++;
	ret = 0;
out:
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int client_region_remove(struct client_region_table *t, uint64_t base,
			 struct client_region *out)
{
	int ret = -1;
	size_t i;

	pthread_mutex_lock(&t->lock);
	i = region_upper_bound(t, base);
	if (i > 0 && t->v[i - 1].base == base) {
		i--;
		if (out)
			*out = t->v[i];
		memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof(*t->v));
		t->n--;
		ret = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int client_region_find(struct client_region_table *t, uint64_t ptr,
		       uint64_t len, struct client_region *out)
{
	const struct client_region *e;
	int found = 0;
	size_t i;

	if (len == 0)
		len = 1;
	pthread_mutex_lock(&t->lock);
	i = region_upper_bound(t, ptr);
	if (i > 0) {
		e = &t->v[i - 1];
		/* ptr - base < size, and len fits in what is left */
		if (ptr - e->base < e->size &&
		    len <= e->size - (ptr - e->base)) {
			found = 1;
			if (out)
				*out = *e;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return found;
}

long client_region_snapshot(struct client_region_table *t,
			    struct client_region **out)
{
	void *copy;
	long n = client_snapshot(&t->lock, (void *const *)&t->v, &t->n,
				 sizeof(*t->v), &copy);

	*out = copy;
	return n;
}

/* ---- creation ------------------------------------------------------- */

static void close_fds(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/*
 * Takes the one packet the worker sent before the CREATE completion and
 * returns its memfd, or -1 when the packet is missing, has the wrong
 * size, magic, handle or size, or did not carry exactly one descriptor
 * of at least size bytes. Everything that came is closed on failure.
 * Never blocks: the packet was sent before the completion was posted.
 */
static int region_recv_fd(int sock, uint32_t handle, uint64_t size)
{
	union {
		char buf[CMSG_SPACE(REGION_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct vgpu_region_msg m[2]; /* room to notice a longer packet */
	struct iovec iov = {m, sizeof(m)};
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	int fds[REGION_MAX_FDS];
	int nfds = 0, extra = 0;
	struct cmsghdr *c;
	struct stat st;
	ssize_t n;

	do
		n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		size_t k, cnt;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < cnt; k++) {
			int d;

			memcpy(&d, CMSG_DATA(c) + k * sizeof(int), sizeof(d));
			if (nfds < REGION_MAX_FDS)
				fds[nfds++] = d;
			else
				close(d);
		}
	}
	if (msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC))
		extra = 1;
	if (extra || nfds != 1 || n != (ssize_t)sizeof(m[0]) ||
	    m[0].magic != VGPU_REGION_MSG_MAGIC || m[0].handle != handle ||
	    m[0].size != size)
		goto fail;
	/* sealed against shrinking, or a bad worker could truncate it under
	 * our mapping and SIGBUS the program */
	if (fstat(fds[0], &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size < size ||
	    !(fcntl(fds[0], F_GET_SEALS) & F_SEAL_SHRINK))
		goto fail;
	return fds[0];
fail:
	close_fds(fds, nfds);
	return -1;
}

/* The worker's region goes away again. Lock held. */
static void region_destroy_locked(struct client_ring *r, uint32_t handle)
{
	struct client_push how = {.mode = CLIENT_SLOT_WAIT};
	struct vgpu_sqe sqe = {
		.opcode = VGPU_OP_HOST_REGION_DESTROY,
		.handle = handle,
	};
	struct vgpu_cqe cqe;
	uint32_t tag;

	if (client_ring_push(r, &sqe, &how, &tag) == CUDA_SUCCESS)
		client_ring_wait(r, tag, &cqe);
}

CUresult client_region_create(struct client_ring *r, uint64_t bytes,
			      struct client_region *out)
{
	struct client_push how = {.mode = CLIENT_SLOT_WAIT};
	struct vgpu_sqe sqe = {
		.opcode = VGPU_OP_HOST_REGION_CREATE,
		.a = {bytes},
	};
	struct vgpu_cqe cqe;
	uint32_t tag, handle;
	uint64_t size;
	CUresult err;
	void *map;
	int fd;

	memset(out, 0, sizeof(*out));
	if (bytes == 0 || bytes > VGPU_HOST_REGION_MAX_BYTES)
		return CUDA_ERROR_INVALID_VALUE;
	client_ring_lock(r);
	client_ring_region_begin(r);
	err = client_ring_push(r, &sqe, &how, &tag);
	if (err == CUDA_SUCCESS)
		err = client_ring_wait(r, tag, &cqe);
	if (err != CUDA_SUCCESS)
		goto out;
	if (cqe.status != CUDA_SUCCESS) {
		/* a packet sent for a failed creation is nobody's */
		client_ring_drain_sock(r->sock);
		err = (CUresult)cqe.status;
		goto out;
	}
	handle = (uint32_t)cqe.r[0];
	size = cqe.r[1];
	err = CUDA_ERROR_OUT_OF_MEMORY;
	if (cqe.r[0] == 0 || cqe.r[0] > UINT32_MAX) {
		/* no handle to destroy: nothing to give back */
		client_ring_drain_sock(r->sock);
		goto out;
	}
	if (size < bytes || size > VGPU_HOST_REGION_MAX_BYTES) {
		client_ring_drain_sock(r->sock);
		goto destroy;
	}
	fd = region_recv_fd(r->sock, handle, size);
	if (fd < 0)
		goto destroy;
	map = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   0);
	close(fd); /* the mapping keeps the memory */
	if (map == MAP_FAILED)
		goto destroy;
	out->base = (uint64_t)(uintptr_t)map;
	out->size = size;
	out->handle = handle;
	err = CUDA_SUCCESS;
	goto out;
destroy:
	region_destroy_locked(r, handle);
out:
	client_ring_region_end(r);
	client_ring_unlock(r);
	return err;
}

CUresult client_region_map_device(struct client_ring *r,
				  struct client_region *reg)
{
	struct vgpu_sqe sqe = {
		.opcode = VGPU_OP_HOST_REGION_ADDRESS,
		.handle = reg->handle,
	};
	struct vgpu_cqe cqe;
	void *want, *hold, *moved;
	CUresult err = client_ring_call(r, &sqe, &cqe);

	if (err != CUDA_SUCCESS)
		return err;
	if (cqe.r[1] != reg->size || !cqe.r[0] ||
	    cqe.r[0] % (uint64_t)sysconf(_SC_PAGESIZE))
		return CUDA_ERROR_NOT_SUPPORTED; /* the worker's mistake */
	want = (void *)(uintptr_t)cqe.r[0];
	if (cqe.r[0] == reg->base)
		goto mapped;
	/* hold the range first, so that the move replaces nothing of the
	 * program's: MREMAP_FIXED would unmap whatever lay there */
	hold = mmap(want, (size_t)reg->size, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (hold != want) {
		if (hold != MAP_FAILED)
			munmap(hold, (size_t)reg->size); /* an old kernel */
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	moved = mremap((void *)(uintptr_t)reg->base, (size_t)reg->size,
		       (size_t)reg->size, MREMAP_MAYMOVE | MREMAP_FIXED, want);
	if (moved != want) {
		munmap(hold, (size_t)reg->size);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	reg->base = cqe.r[0];
mapped:
	reg->mapped = 1;
	return CUDA_SUCCESS;
}

CUresult client_region_destroy(struct client_ring *r,
			       const struct client_region *reg)
{
	struct vgpu_sqe sqe = {
		.opcode = VGPU_OP_HOST_REGION_DESTROY,
		.handle = reg->handle,
	};
	CUresult err = client_ring_call(r, &sqe, NULL);

	munmap((void *)(uintptr_t)reg->base, (size_t)reg->size);
	return err;
}
