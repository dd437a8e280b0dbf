/* SPDX-License-Identifier: MIT */
/*
 * The guest library's ring engine and copy pipeline against a fake
 * worker thread: round trips, more descriptors than the queues hold,
 * deferred and grouped errors, chunked copies that are exact and really
 * pipelined, several threads at once, and a worker that dies (header
 * DEAD, socket closed, nonsense completion) turning every pending and
 * later call into an error instead of a hang. Host regions: a CREATE
 * whose packet is wrong in any way is refused without a leak and the
 * region destroyed; the liveness check never eats a creator's packet.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include <vgpu/ring.h>

#include "client_copy.h"
#include "client_region.h"
#include "client_ring.h"

#define SQ	  16
#define CQ	  16
#define DATA	  (4u << 20)
#define DEV_BASE  0x500000000000ull
#define DEV_BYTES (12u << 20)

/* NOP a[0]: what the fake worker does with it */
enum fake_action {
	FAKE_OK = 0,
	FAKE_FAIL = 1,	  /* complete with status a[1] */
	FAKE_DIE = 2,	  /* mark the ring DEAD with error a[1], stop */
	FAKE_HANGUP = 3,  /* close the socket and stop, no completion */
	FAKE_BAD_TAG = 4, /* complete with a tag never issued */
	FAKE_SLOW = 5,	  /* complete after a[1] microseconds */
};

/* how the fake worker answers HOST_REGION_CREATE */
enum fake_region_mode {
	REGION_OK = 0,
	REGION_BAD_MAGIC,
	REGION_NO_FD,
	REGION_TWO_FDS,
	REGION_WRONG_HANDLE,
	REGION_WRONG_SIZE,
	REGION_SMALL_FD,
	REGION_UNSEALED, /* a worker that could shrink it under us */
	REGION_NO_PACKET,
	REGION_LONG_PACKET,
	REGION_UNSUPPORTED,
};

#define FAKE_REGIONS 16

struct fake_region {
	uint32_t handle; /* 0 = free */
	unsigned char *p;
	uint64_t size;
};

struct fake {
	void *map;
	struct vgpu_ring_header *hdr;
	struct ring_layout l;
	int sock[2]; /* [0] the client's, [1] the worker's */
	int submit_efd, complete_efd;
	pthread_t thread;
	int stop;
	unsigned char *dev;
	uint32_t max_outstanding; /* most descriptors seen waiting at once */
	int region_mode;	  /* enum fake_region_mode */
	int regions_live;
	uint32_t next_region;
	struct fake_region regions[FAKE_REGIONS];
	struct client_ring ring;
};

static void fake_post(struct fake *f, uint32_t *cq_tail,
		      const struct vgpu_cqe *cqe)
{
	struct vgpu_cqe *slot;
	uint64_t one = 1;

	while (ring_used(ring_load_acquire(&f->hdr->cq_head), *cq_tail) >=
	       f->l.cq_entries)
		usleep(10);
	slot = ring_cqe(f->map, f->l.cq_offset, f->l.cq_entries, *cq_tail);
	*slot = *cqe;
	ring_store_release(&f->hdr->cq_tail, ++*cq_tail);
	ring_full_barrier();
	if (__atomic_load_n(&f->hdr->client_sleeping, __ATOMIC_RELAXED))
		(void)!write(f->complete_efd, &one, sizeof(one));
}

static int fake_dev_ok(uint64_t addr, uint64_t len)
{
	return addr >= DEV_BASE &&
	       ring_range_ok(addr - DEV_BASE, len, DEV_BYTES);
}

static struct fake_region *fake_region_get(struct fake *f, uint32_t handle)
{
	for (int i = 0; i < FAKE_REGIONS; i++)
		if (handle && f->regions[i].handle == handle)
			return &f->regions[i];
	return NULL;
}

/*
 * HOST_REGION_CREATE as a worker does it, or wrongly as region_mode
 * says: a memfd, mapped here too, sent in one packet before the
 * completion, which comes a little later so the client's poller sees
 * the packet waiting.
 */
static void fake_region_create(struct fake *f, const struct vgpu_sqe *q,
			       struct vgpu_cqe *c)
{
	int mode = __atomic_load_n(&f->region_mode, __ATOMIC_ACQUIRE);
	struct vgpu_region_msg m[2] = {{0}};
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {m, sizeof(m[0])};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct fake_region *reg = fake_region_get(f, 0);
	uint64_t size = (q->a[0] + 4095) & ~4095ull;
	struct cmsghdr *cm;
	int fd, fds[2];

	memset(&ctl, 0, sizeof(ctl));
	for (int i = 0; i < FAKE_REGIONS && !reg; i++)
		if (!f->regions[i].handle)
			reg = &f->regions[i];
	if (mode == REGION_UNSUPPORTED || !reg) {
		c->status = CUDA_ERROR_NOT_SUPPORTED;
		return;
	}
	fd = memfd_create("fake-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(fd >= 0);
	assert_int_equal(
		ftruncate(fd,
			  (off_t)(mode == REGION_SMALL_FD ? size / 2 : size)),
		0);
	if (mode != REGION_UNSEALED)
		assert_int_equal(
			fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	reg->p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(reg->p != MAP_FAILED);
	reg->size = size;
	reg->handle = ++f->next_region;
	f->regions_live++;
	m[0].magic = mode == REGION_BAD_MAGIC ? 0x1234 : VGPU_REGION_MSG_MAGIC;
	m[0].handle = reg->handle + (mode == REGION_WRONG_HANDLE);
	m[0].size = size + (mode == REGION_WRONG_SIZE ? 4096 : 0);
	if (mode == REGION_LONG_PACKET)
		iov.iov_len = sizeof(m);
	fds[0] = fds[1] = fd;
	if (mode != REGION_NO_FD) {
		int n = mode == REGION_TWO_FDS ? 2 : 1;

		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(n * sizeof(int));
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
	}
	if (mode != REGION_NO_PACKET)
		assert_true(sendmsg(f->sock[1], &msg, MSG_NOSIGNAL) > 0);
	close(fd);
	usleep(20000);
	c->r[0] = reg->handle;
	c->r[1] = size;
}

static void fake_region_destroy(struct fake *f, const struct vgpu_sqe *q,
				struct vgpu_cqe *c)
{
	struct fake_region *reg = fake_region_get(f, q->handle);

	if (!reg) {
		c->status = CUDA_ERROR_INVALID_HANDLE;
		return;
	}
	munmap(reg->p, reg->size);
	memset(reg, 0, sizeof(*reg));
	f->regions_live--;
}

/* MEMCPY_REGION_HTOD/DTOH between the fake's own mapping and f->dev. */
static void fake_region_copy(struct fake *f, const struct vgpu_sqe *q,
			     struct vgpu_cqe *c)
{
	struct fake_region *reg = fake_region_get(f, q->handle);

	if (!reg || !fake_dev_ok(q->a[0], q->a[2]) ||
	    !ring_range_ok(q->a[1], q->a[2], reg->size)) {
		c->status = CUDA_ERROR_INVALID_VALUE;
		return;
	}
	if (q->opcode == VGPU_OP_MEMCPY_REGION_HTOD)
		memcpy(f->dev + (q->a[0] - DEV_BASE), reg->p + q->a[1],
		       q->a[2]);
	else
		memcpy(reg->p + q->a[1], f->dev + (q->a[0] - DEV_BASE),
		       q->a[2]);
}

/* Runs one descriptor; returns 0 to go on, 1 to stop serving. */
static int fake_exec(struct fake *f, const struct vgpu_sqe *q,
		     struct vgpu_cqe *c, uint32_t *cq_tail)
{
	unsigned char *data = (unsigned char *)f->map + f->l.data_offset;

	memset(c, 0, sizeof(*c));
	c->tag = q->tag;
	switch (q->opcode) {
	case VGPU_OP_NOP:
		switch (q->a[0]) {
		case FAKE_FAIL:
			c->status = (int32_t)q->a[1];
			break;
		case FAKE_DIE:
			f->hdr->error = (int32_t)q->a[1];
			ring_store_release(&f->hdr->status, VGPU_RING_DEAD);
			(void)!write(f->complete_efd, &(uint64_t){1}, 8);
			return 1;
		case FAKE_HANGUP:
			close(f->sock[1]);
			f->sock[1] = -1;
			return 1;
		case FAKE_BAD_TAG:
			c->tag = q->tag ^ 0x7fff0000u;
			break;
		case FAKE_SLOW:
			usleep((useconds_t)q->a[1]);
			break;
		}
		break;
	case VGPU_OP_MEMCPY_HTOD:
		usleep(2000); /* a slow copy engine: the client gets ahead */
		if (!fake_dev_ok(q->a[0], q->a[2]) ||
		    !ring_range_ok(q->a[1], q->a[2], f->l.data_size))
			c->status = CUDA_ERROR_INVALID_VALUE;
		else
			memcpy(f->dev + (q->a[0] - DEV_BASE), data + q->a[1],
			       q->a[2]);
		break;
	case VGPU_OP_MEMCPY_DTOH:
		usleep(2000);
		if (!fake_dev_ok(q->a[0], q->a[2]) ||
		    !ring_range_ok(q->a[1], q->a[2], f->l.data_size))
			c->status = CUDA_ERROR_INVALID_VALUE;
		else
			memcpy(data + q->a[1], f->dev + (q->a[0] - DEV_BASE),
			       q->a[2]);
		break;
	case VGPU_OP_HOST_REGION_CREATE:
		fake_region_create(f, q, c);
		break;
	case VGPU_OP_HOST_REGION_DESTROY:
		fake_region_destroy(f, q, c);
		break;
	case VGPU_OP_MEMCPY_REGION_HTOD:
	case VGPU_OP_MEMCPY_REGION_DTOH:
		fake_region_copy(f, q, c);
		break;
	default:
		c->status = CUDA_ERROR_NOT_SUPPORTED;
	}
	(void)cq_tail;
	return 0;
}

static void *fake_worker(void *arg)
{
	struct fake *f = arg;
	uint32_t head = 0, cq_tail = 0, tail;
	struct vgpu_sqe q;
	struct vgpu_cqe c;

	while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
		tail = ring_load_acquire(&f->hdr->sq_tail);
		if (tail == head) {
			usleep(20); /* never sleeps for real: no doorbell */
			continue;
		}
		if (ring_used(head, tail) > f->max_outstanding)
			f->max_outstanding = ring_used(head, tail);
		memcpy(&q,
		       ring_sqe(f->map, f->l.sq_offset, f->l.sq_entries, head),
		       sizeof(q));
		ring_store_release(&f->hdr->sq_head, ++head);
		if (fake_exec(f, &q, &c, &cq_tail))
			break;
		fake_post(f, &cq_tail, &c);
	}
	return NULL;
}

static int fake_setup(void **state)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct vgpu_ring_header *h;
	char err[256];

	assert_non_null(f);
	ring_layout_compute(&f->l, SQ, CQ, DATA);
	f->map = aligned_alloc(4096, f->l.total_size);
	f->dev = calloc(1, DEV_BYTES);
	assert_non_null(f->map);
	assert_non_null(f->dev);
	memset(f->map, 0, f->l.total_size);
	h = f->hdr = f->map;
	h->magic = VGPU_PROTO_MAGIC;
	h->major = VGPU_PROTO_MAJOR;
	h->minor = VGPU_PROTO_MINOR;
	h->sq_entries = f->l.sq_entries;
	h->cq_entries = f->l.cq_entries;
	h->sq_offset = f->l.sq_offset;
	h->cq_offset = f->l.cq_offset;
	h->data_offset = f->l.data_offset;
	h->data_size = f->l.data_size;
	h->total_size = f->l.total_size;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, f->sock), 0);
	f->submit_efd = eventfd(0, 0);
	f->complete_efd = eventfd(0, 0);
	assert_int_equal(client_ring_init(&f->ring, f->map, f->l.total_size,
					  f->sock[0], f->submit_efd,
					  f->complete_efd, err, sizeof(err)),
			 0);
	assert_int_equal(pthread_create(&f->thread, NULL, fake_worker, f), 0);
	*state = f;
	return 0;
}

static int fake_teardown(void **state)
{
	struct fake *f = *state;

	__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
	pthread_join(f->thread, NULL);
	for (int i = 0; i < FAKE_REGIONS; i++)
		if (f->regions[i].handle)
			munmap(f->regions[i].p, f->regions[i].size);
	client_ring_fini(&f->ring);
	close(f->sock[0]);
	if (f->sock[1] >= 0)
		close(f->sock[1]);
	close(f->submit_efd);
	close(f->complete_efd);
	free(f->map);
	free(f->dev);
	free(f);
	return 0;
}

static CUresult nop(struct client_ring *r, uint64_t action, uint64_t arg)
{
	struct vgpu_sqe q = {.opcode = VGPU_OP_NOP, .a = {action, arg}};

	return client_ring_call(r, &q, NULL);
}

static void ring_round_trip_returns_the_status(void **state)
{
	struct fake *f = *state;

	assert_int_equal(nop(&f->ring, FAKE_OK, 0), CUDA_SUCCESS);
	assert_int_equal(nop(&f->ring, FAKE_FAIL, CUDA_ERROR_INVALID_HANDLE),
			 CUDA_ERROR_INVALID_HANDLE);
	/* a slow one makes the client sleep on its eventfd */
	assert_int_equal(nop(&f->ring, FAKE_SLOW, 300000), CUDA_SUCCESS);
	assert_int_equal(nop(&f->ring, FAKE_OK, 0), CUDA_SUCCESS);
}

static void ring_more_descriptors_than_entries(void **state)
{
	struct fake *f = *state;
	struct client_ring *r = &f->ring;
	struct client_group g = {0};
	struct client_push how = {.mode = CLIENT_SLOT_ASYNC, .group = &g};

	client_ring_lock(r);
	for (int i = 0; i < 20 * SQ; i++) {
		struct vgpu_sqe q = {.opcode = VGPU_OP_NOP};

		if (i == 37) {
			q.a[0] = FAKE_FAIL;
			q.a[1] = CUDA_ERROR_INVALID_VALUE;
		}
		assert_int_equal(client_ring_push(r, &q, &how, NULL),
				 CUDA_SUCCESS);
		client_ring_flush(r);
	}
	assert_int_equal(client_ring_wait_group(r, &g), CUDA_SUCCESS);
	assert_int_equal(g.pending, 0);
	assert_int_equal(g.error, CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(r->inflight, 0);
	client_ring_unlock(r);
}

static void ring_deferred_error_is_reported_once(void **state)
{
	struct fake *f = *state;
	struct client_ring *r = &f->ring;
	struct vgpu_sqe q = {.opcode = VGPU_OP_NOP,
			     .a = {FAKE_FAIL, CUDA_ERROR_NOT_SUPPORTED}};

	assert_int_equal(client_ring_submit_async(r, &q), CUDA_SUCCESS);
	assert_int_equal(nop(r, FAKE_OK, 0), CUDA_SUCCESS);
	client_ring_lock(r);
	assert_int_equal(client_ring_take_deferred(r),
			 CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(client_ring_take_deferred(r), CUDA_SUCCESS);
	client_ring_unlock(r);
}

static void fill(unsigned char *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (unsigned char)(seed >> 16);
	}
}

static void copy_round_trip_is_exact_and_pipelined(void **state)
{
	struct fake *f = *state;
	const size_t n = (5u << 20) + 3; /* six chunks, the last 3 bytes */
	unsigned char *src = malloc(n), *dst = malloc(n);

	assert_non_null(src);
	assert_non_null(dst);
	fill(src, n, 1);
	memset(dst, 0, n);
	assert_int_equal(client_copy_htod(&f->ring, 0, DEV_BASE + 5, src, n, 1),
			 CUDA_SUCCESS);
	assert_memory_equal(f->dev + 5, src, n);
	assert_true(f->max_outstanding >= 2);
	f->max_outstanding = 0;
	assert_int_equal(client_copy_dtoh(&f->ring, 0, dst, DEV_BASE + 5, n),
			 CUDA_SUCCESS);
	assert_memory_equal(dst, src, n);
	assert_true(f->max_outstanding >= 2);
	assert_int_equal(f->ring.area.free_bytes, f->ring.area.size);
	free(src);
	free(dst);
}

static void copy_error_of_one_chunk_fails_the_copy(void **state)
{
	struct fake *f = *state;
	const size_t n = 3u << 20;
	unsigned char *buf = calloc(1, n);

	assert_non_null(buf);
	/* the last chunk runs past the fake device */
	assert_int_equal(client_copy_htod(&f->ring, 0,
					  DEV_BASE + DEV_BYTES - (2u << 20),
					  buf, n, 1),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(client_copy_dtoh(&f->ring, 0, buf,
					  DEV_BASE + DEV_BYTES - (2u << 20), n),
			 CUDA_ERROR_INVALID_VALUE);
	/* nothing left behind: the next copy works, the area is whole */
	assert_int_equal(client_copy_dtoh(&f->ring, 0, buf, DEV_BASE, n),
			 CUDA_SUCCESS);
	assert_int_equal(f->ring.area.free_bytes, f->ring.area.size);
	free(buf);
}

struct thread_arg {
	struct fake *f;
	int id;
	int failures;
};

static void *hammer(void *p)
{
	struct thread_arg *a = p;
	unsigned char buf[3000], back[3000];

	for (int i = 0; i < 300; i++) {
		uint64_t at = DEV_BASE + (uint64_t)a->id * 8192;

		fill(buf, sizeof(buf), (unsigned int)(a->id * 1000 + i));
		if (nop(&a->f->ring, FAKE_OK, 0) ||
		    client_copy_htod(&a->f->ring, 0, at, buf, sizeof(buf), 1) ||
		    client_copy_dtoh(&a->f->ring, 0, back, at, sizeof(back)) ||
		    memcmp(buf, back, sizeof(buf)))
			a->failures++;
	}
	return NULL;
}

static void ring_threads_share_it(void **state)
{
	struct fake *f = *state;
	struct thread_arg args[4];
	pthread_t t[4];

	for (int i = 0; i < 4; i++) {
		args[i] = (struct thread_arg){f, i, 0};
		assert_int_equal(pthread_create(&t[i], NULL, hammer, &args[i]),
				 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(args[i].failures, 0);
	}
}

static void ring_dead_header_fails_pending_and_later_calls(void **state)
{
	struct fake *f = *state;
	struct client_ring *r = &f->ring;
	struct vgpu_sqe q = {.opcode = VGPU_OP_NOP};
	struct client_push how = {.mode = CLIENT_SLOT_WAIT};
	struct vgpu_cqe c;
	uint32_t tag;

	assert_int_equal(nop(r, FAKE_OK, 0), CUDA_SUCCESS);
	/* one queued behind the fatal one: never completed */
	client_ring_lock(r);
	q.a[0] = FAKE_SLOW;
	q.a[1] = 100000;
	assert_int_equal(client_ring_push(r, &q, &how, &tag), CUDA_SUCCESS);
	q.a[0] = FAKE_DIE;
	q.a[1] = CUDA_ERROR_ILLEGAL_ADDRESS;
	assert_int_equal(client_ring_push(r, &q, &how, NULL), CUDA_SUCCESS);
	q.a[0] = FAKE_OK;
	assert_int_equal(client_ring_push(r, &q, &how, NULL), CUDA_SUCCESS);
	/* the slow one completes before the death and keeps its status */
	assert_int_equal(client_ring_wait(r, tag, &c), CUDA_SUCCESS);
	assert_int_equal(c.status, CUDA_SUCCESS);
	client_ring_unlock(r);
	assert_int_equal(nop(r, FAKE_OK, 0), CUDA_ERROR_ILLEGAL_ADDRESS);
	assert_int_equal(nop(r, FAKE_OK, 0), CUDA_ERROR_ILLEGAL_ADDRESS);
	assert_int_equal(client_copy_htod(r, 0, DEV_BASE, "x", 1, 1),
			 CUDA_ERROR_ILLEGAL_ADDRESS);
}

static void ring_closed_socket_is_launch_failed(void **state)
{
	struct fake *f = *state;

	assert_int_equal(nop(&f->ring, FAKE_HANGUP, 0),
			 CUDA_ERROR_LAUNCH_FAILED);
	assert_int_equal(nop(&f->ring, FAKE_OK, 0), CUDA_ERROR_LAUNCH_FAILED);
}

static void ring_nonsense_completion_is_launch_failed(void **state)
{
	struct fake *f = *state;

	assert_int_equal(nop(&f->ring, FAKE_BAD_TAG, 0),
			 CUDA_ERROR_LAUNCH_FAILED);
	assert_int_equal(nop(&f->ring, FAKE_OK, 0), CUDA_ERROR_LAUNCH_FAILED);
}

static void ring_init_rejects_bad_layouts(void **state)
{
	struct ring_layout l;
	struct client_ring r;
	struct vgpu_ring_header *h;
	char err[256];
	void *map;

	(void)state;
	ring_layout_compute(&l, SQ, CQ, 1u << 20);
	map = aligned_alloc(4096, l.total_size);
	assert_non_null(map);
#define RESET()                                                                \
	do {                                                                   \
		memset(map, 0, l.total_size);                                  \
		h = map;                                                       \
		h->magic = VGPU_PROTO_MAGIC;                                   \
		h->major = VGPU_PROTO_MAJOR;                                   \
		h->sq_entries = SQ;                                            \
		h->cq_entries = CQ;                                            \
		h->sq_offset = l.sq_offset;                                    \
		h->cq_offset = l.cq_offset;                                    \
		h->data_offset = l.data_offset;                                \
		h->data_size = l.data_size;                                    \
		h->total_size = l.total_size;                                  \
	} while (0)
#define REJECTED()                                                             \
	assert_int_equal(client_ring_init(&r, map, l.total_size, -1, -1, -1,   \
					  err, sizeof(err)),                   \
			 -1)
	RESET();
	assert_int_equal(client_ring_init(&r, map, l.total_size, -1, -1, -1,
					  err, sizeof(err)),
			 0);
	client_ring_fini(&r);
	RESET();
	h->magic = 0;
	REJECTED();
	RESET();
	h->major = VGPU_PROTO_MAJOR + 1;
	REJECTED();
	RESET();
	h->sq_entries = 12;
	REJECTED();
	RESET();
	h->total_size += 4096;
	REJECTED();
	RESET();
	h->data_size += 4096; /* past the mapping */
	REJECTED();
	RESET();
	h->cq_offset = h->sq_offset; /* overlaps the SQ */
	REJECTED();
	RESET();
	h->sq_offset = 64; /* inside the header */
	REJECTED();
	RESET();
	h->data_offset = UINT64_MAX - 10; /* overflow */
	REJECTED();
	RESET();
	h->status = VGPU_RING_DEAD;
	REJECTED();
	free(map);
}

/* ---- host regions ---------------------------------------------------- */

static void region_table_lookup_edges(void **state)
{
	struct client_region_table t;
	struct client_region a = {.base = 0x10000, .size = 0x2000, .handle = 1},
			     b = {.base = 0x20000, .size = 0x1000, .handle = 2};
	struct client_region plain = {.base = 0x30000,
				      .size = 0x1000,
				      .handle = 0},
			     got;

	(void)state;
	client_region_table_init(&t);
	assert_int_equal(client_region_add(&t, &b), 0);
	assert_int_equal(client_region_add(&t, &a), 0);
	assert_int_equal(client_region_add(&t, &plain), 0);
	/* first byte, last byte, whole range */
	assert_true(client_region_find(&t, 0x10000, 1, &got));
	assert_int_equal(got.handle, 1);
	assert_true(client_region_find(&t, 0x11fff, 1, &got));
	assert_true(client_region_find(&t, 0x10000, 0x2000, &got));
	assert_true(client_region_find(&t, 0x10800, 0, &got));
	/* one past either end, and ranges that run out of it */
	assert_false(client_region_find(&t, 0xffff, 1, NULL));
	assert_false(client_region_find(&t, 0x12000, 1, NULL));
	assert_false(client_region_find(&t, 0x10000, 0x2001, NULL));
	assert_false(client_region_find(&t, 0x11fff, 2, NULL));
	assert_false(client_region_find(&t, 0x1ffff, 2, NULL));
	/* no wrap-around with a huge length */
	assert_false(client_region_find(&t, 0x10001, UINT64_MAX, NULL));
	assert_false(client_region_find(&t, 0, 1, NULL));
	assert_false(client_region_find(&t, UINT64_MAX, 1, NULL));
	assert_true(client_region_find(&t, 0x20800, 0x800, &got));
	assert_int_equal(got.handle, 2);
	assert_true(client_region_find(&t, 0x30000, 1, &got));
	assert_int_equal(got.handle, 0);
	/* remove only by base */
	assert_int_equal(client_region_remove(&t, 0x10800, NULL), -1);
	assert_int_equal(client_region_remove(&t, 0x10000, &got), 0);
	assert_int_equal(got.handle, 1);
	assert_int_equal(got.size, 0x2000);
	assert_false(client_region_find(&t, 0x10000, 1, NULL));
	assert_int_equal(client_region_remove(&t, 0x10000, NULL), -1);
	client_region_table_fini(&t);
}

static void region_table_refuses_overlaps(void **state)
{
	struct client_region_table t;
	struct client_region a = {.base = 0x10000, .size = 0x2000, .handle = 1};
	struct client_region bad[] = {
		{.base = 0x10000, .size = 0x2000, .handle = 2}, /* the same */
		{.base = 0xf000,
		 .size = 0x1001,
		 .handle = 3}, /* runs into it */
		{.base = 0x11fff,
		 .size = 0x10,
		 .handle = 4}, /* starts in its last byte */
		{.base = 0x10800, .size = 0x100, .handle = 5}, /* inside */
		{.base = 0xf000, .size = 0x4000, .handle = 6}, /* around */
		{.base = 0x40000, .size = 0, .handle = 7},     /* empty */
		{.base = UINT64_MAX - 0xfff,
		 .size = 0x2000,
		 .handle = 8}, /* wraps */
	};
	struct client_region before = {
		.base = 0xf000, .size = 0x1000, .handle = 9};
	struct client_region after = {
		.base = 0x12000, .size = 0x1000, .handle = 10};

	(void)state;
	client_region_table_init(&t);
	assert_int_equal(client_region_add(&t, &a), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(client_region_add(&t, &bad[i]), -1);
	assert_int_equal(client_region_add(&t, &before), 0);
	assert_int_equal(client_region_add(&t, &after), 0);
	assert_int_equal(t.n, 3);
	client_region_table_fini(&t);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n++;
	closedir(d);
	return n;
}

static void region_create_copy_destroy(void **state)
{
	struct fake *f = *state;
	struct client_ring *r = &f->ring;
	struct client_region reg;
	unsigned char *p;
	int fds = count_fds();

	assert_int_equal(client_region_create(r, 3 << 20, &reg), CUDA_SUCCESS);
	assert_int_equal(reg.size, 3 << 20);
	assert_int_equal(f->regions_live, 1);
	assert_int_equal(count_fds(), fds); /* the fd was closed, mapped */
	p = (unsigned char *)(uintptr_t)reg.base;
	for (size_t i = 0; i < reg.size; i++)
		p[i] = (unsigned char)(i * 7 + 3);
	assert_int_equal(client_copy_region(r, 0, VGPU_OP_MEMCPY_REGION_HTOD,
					    reg.handle, DEV_BASE + 4096, 0,
					    reg.size, 1),
			 CUDA_SUCCESS);
	memset(p, 0, reg.size);
	assert_int_equal(client_copy_region(r, 0, VGPU_OP_MEMCPY_REGION_DTOH,
					    reg.handle, DEV_BASE + 4096, 0,
					    reg.size, 0),
			 CUDA_SUCCESS);
	for (size_t i = 0; i < reg.size; i++)
		assert_int_equal(p[i], (unsigned char)(i * 7 + 3));
	assert_int_equal(client_region_destroy(r, &reg), CUDA_SUCCESS);
	assert_int_equal(f->regions_live, 0);
	/* the ring still works, and nothing was left on the socket */
	assert_int_equal(nop(r, FAKE_OK, 0), CUDA_SUCCESS);
}

static void region_bad_packets_are_refused(void **state)
{
	static const int modes[] = {
		REGION_BAD_MAGIC,    REGION_NO_FD,	REGION_TWO_FDS,
		REGION_WRONG_HANDLE, REGION_WRONG_SIZE, REGION_SMALL_FD,
		REGION_UNSEALED,     REGION_NO_PACKET,	REGION_LONG_PACKET,
	};
	struct fake *f = *state;
	struct client_region reg;
	int fds = count_fds();

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		__atomic_store_n(&f->region_mode, modes[i], __ATOMIC_RELEASE);
		assert_int_equal(client_region_create(&f->ring, 8192, &reg),
				 CUDA_ERROR_OUT_OF_MEMORY);
		/* destroyed on the worker, nothing left open here */
		assert_int_equal(f->regions_live, 0);
		assert_int_equal(count_fds(), fds);
		assert_int_equal(client_ring_dead(&f->ring), CUDA_SUCCESS);
	}
	__atomic_store_n(&f->region_mode, REGION_UNSUPPORTED, __ATOMIC_RELEASE);
	assert_int_equal(client_region_create(&f->ring, 8192, &reg),
			 CUDA_ERROR_NOT_SUPPORTED);
	__atomic_store_n(&f->region_mode, REGION_OK, __ATOMIC_RELEASE);
	assert_int_equal(client_region_create(&f->ring, 8192, &reg),
			 CUDA_SUCCESS);
	assert_int_equal(client_region_destroy(&f->ring, &reg), CUDA_SUCCESS);
	assert_int_equal(count_fds(), fds);
}

struct region_thread {
	struct fake *f;
	int ok;
};

/* Creates and destroys regions while other threads do the same and
 * the fake's packets sit on the socket under a sleeping poller. */
static void *region_thread_main(void *arg)
{
	struct region_thread *t = arg;
	struct client_region reg;

	for (int i = 0; i < 8; i++) {
		if (client_region_create(&t->f->ring, 4096 * (i + 1), &reg))
			return NULL;
		((volatile char *)(uintptr_t)reg.base)[0] = 1;
		if (nop(&t->f->ring, FAKE_SLOW, 1000) ||
		    client_region_destroy(&t->f->ring, &reg))
			return NULL;
	}
	t->ok = 1;
	return NULL;
}

static void region_creates_from_threads(void **state)
{
	struct region_thread t[4];
	pthread_t th[4];

	for (int i = 0; i < 4; i++) {
		t[i] = (struct region_thread){*state, 0};
		assert_int_equal(
			pthread_create(&th[i], NULL, region_thread_main, &t[i]),
			0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_true(t[i].ok);
	}
	assert_int_equal(((struct fake *)*state)->regions_live, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			ring_round_trip_returns_the_status, fake_setup,
			fake_teardown),
		cmocka_unit_test_setup_teardown(
			ring_more_descriptors_than_entries, fake_setup,
			fake_teardown),
		cmocka_unit_test_setup_teardown(
			ring_deferred_error_is_reported_once, fake_setup,
			fake_teardown),
		cmocka_unit_test_setup_teardown(
			copy_round_trip_is_exact_and_pipelined, fake_setup,
			fake_teardown),
		cmocka_unit_test_setup_teardown(
			copy_error_of_one_chunk_fails_the_copy, fake_setup,
			fake_teardown),
		cmocka_unit_test_setup_teardown(ring_threads_share_it,
						fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(
			ring_dead_header_fails_pending_and_later_calls,
			fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(
			ring_closed_socket_is_launch_failed, fake_setup,
			fake_teardown),
		cmocka_unit_test_setup_teardown(
			ring_nonsense_completion_is_launch_failed, fake_setup,
			fake_teardown),
		cmocka_unit_test(ring_init_rejects_bad_layouts),
		cmocka_unit_test(region_table_lookup_edges),
		cmocka_unit_test(region_table_refuses_overlaps),
		cmocka_unit_test_setup_teardown(region_create_copy_destroy,
						fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(region_bad_packets_are_refused,
						fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(region_creates_from_threads,
						fake_setup, fake_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
