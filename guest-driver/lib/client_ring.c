/* SPDX-License-Identifier: MIT */
/*
 * Submit/complete engine over the shared ring (see client_ring.h).
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <vgpu/ring.h>

#include "client_error.h"
#include "client_ring.h"

#define RING_SLOT_BITS	 16
#define RING_MAX_SLOTS	 (1u << RING_SLOT_BITS)
#define RING_MAX_ENTRIES 65536u
/*
 * Waiting for a completion: spin this long, then keep polling but yield
 * the CPU between looks until RING_YIELD_NS, then sleep on the doorbell.
 * A sleep costs a wake-up (5-20 us on the GPU machine), which is what a
 * 4 MiB copy or a 100 us kernel would otherwise pay on every call; CUDA's
 * own default (cudaDeviceScheduleAuto) spins and yields the same way.
 */
#define RING_SPIN_NS  50000L
#define RING_YIELD_NS 1000000L
#define RING_POLL_MS  100

enum slot_state {
	SLOT_FREE = 0,
	SLOT_PENDING = 1,
	SLOT_DONE = 2,
};

struct client_slot {
	uint16_t gen;
	uint8_t state;
	uint8_t mode;
	uint32_t next_free;
	struct client_group *group;
	uint64_t data_off;
	uint64_t data_len;
	struct vgpu_cqe cqe;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* [a, a + alen) and [b, b + blen) share a byte (both inside 64 bits). */
static int ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

/*
 * The layout is the worker's word, but a bad one must give an error, not
 * a fault: every region has to lie inside the mapping, apart from the
 * others and aligned for its entries.
 */
static int ring_check_layout(const struct vgpu_ring_header *h, uint64_t size,
			     char *err, size_t errlen)
{
	uint64_t sq_bytes, cq_bytes;

	if (size < sizeof(*h)) {
		snprintf(err, errlen,
			 "ring of %llu bytes is smaller than "
			 "its header",
			 (unsigned long long)size);
		return -1;
	}
	if (h->magic != VGPU_PROTO_MAGIC || h->major != VGPU_PROTO_MAJOR) {
		snprintf(err, errlen,
			 "ring header has magic 0x%x version %u "
			 "(want 0x%x version %u)",
			 h->magic, h->major, VGPU_PROTO_MAGIC,
			 VGPU_PROTO_MAJOR);
		return -1;
	}
	if (h->total_size != size) {
		snprintf(err, errlen,
			 "ring header says %llu bytes, the "
			 "handshake %llu",
			 (unsigned long long)h->total_size,
			 (unsigned long long)size);
		return -1;
	}
	if (!ring_is_pow2(h->sq_entries) || !ring_is_pow2(h->cq_entries) ||
	    h->sq_entries > RING_MAX_ENTRIES ||
	    h->cq_entries > RING_MAX_ENTRIES) {
		snprintf(err, errlen,
			 "ring has %u/%u queue entries (want "
			 "powers of two up to %u)",
			 h->sq_entries, h->cq_entries, RING_MAX_ENTRIES);
		return -1;
	}
	sq_bytes = (uint64_t)h->sq_entries * sizeof(struct vgpu_sqe);
	cq_bytes = (uint64_t)h->cq_entries * sizeof(struct vgpu_cqe);
	if (h->sq_offset % 8 || h->cq_offset % 8 ||
	    h->data_offset % CLIENT_DATA_ALIGN ||
	    !ring_range_ok(h->sq_offset, sq_bytes, size) ||
	    !ring_range_ok(h->cq_offset, cq_bytes, size) ||
	    !ring_range_ok(h->data_offset, h->data_size, size) ||
	    ranges_overlap(0, sizeof(*h), h->sq_offset, sq_bytes) ||
	    ranges_overlap(0, sizeof(*h), h->cq_offset, cq_bytes) ||
	    ranges_overlap(0, sizeof(*h), h->data_offset, h->data_size) ||
	    ranges_overlap(h->sq_offset, sq_bytes, h->cq_offset, cq_bytes) ||
	    ranges_overlap(h->sq_offset, sq_bytes, h->data_offset,
			   h->data_size) ||
	    ranges_overlap(h->cq_offset, cq_bytes, h->data_offset,
			   h->data_size)) {
		snprintf(err, errlen,
			 "ring layout is inconsistent (sq at %u, "
			 "cq at %u, data %llu+%llu, total %llu)",
			 h->sq_offset, h->cq_offset,
			 (unsigned long long)h->data_offset,
			 (unsigned long long)h->data_size,
			 (unsigned long long)size);
		return -1;
	}
	if (h->data_size < 4 * CLIENT_DATA_ALIGN) {
		snprintf(err, errlen,
			 "ring data area of %llu bytes is too "
			 "small",
			 (unsigned long long)h->data_size);
		return -1;
	}
	return 0;
}

int client_ring_init(struct client_ring *r, void *map, uint64_t map_size,
		     int sock, int submit_efd, int complete_efd, char *err,
		     size_t errlen)
{
	struct vgpu_ring_header h;
	uint32_t status;

	memset(r, 0, sizeof(*r));
	/* one snapshot: the checks and the use see the same values */
	memcpy(&h, map, map_size < sizeof(h) ? map_size : sizeof(h));
	if (ring_check_layout(&h, map_size, err, errlen))
		return -1;
	status = __atomic_load_n(&((struct vgpu_ring_header *)map)->status,
				 __ATOMIC_ACQUIRE);
	if (status != VGPU_RING_OK) {
		snprintf(err, errlen,
			 "the vGPU's ring is not usable "
			 "(status %u)",
			 status);
		return -1;
	}
	r->hdr = map;
	r->base = map;
	r->map_size = map_size;
	r->sq_entries = h.sq_entries;
	r->cq_entries = h.cq_entries;
	r->sq_offset = h.sq_offset;
	r->cq_offset = h.cq_offset;
	r->data = r->base + h.data_offset;
	r->data_size = h.data_size & ~(uint64_t)(CLIENT_DATA_ALIGN - 1);
	r->sock = sock;
	r->submit_efd = submit_efd;
	r->complete_efd = complete_efd;
	/* indices continue from wherever the worker started them */
	r->sq_tail = ring_load_acquire(&r->hdr->sq_tail);
	r->sq_published = r->sq_tail;
	r->cq_head = ring_load_acquire(&r->hdr->cq_head);
	if (r->cq_head != ring_load_acquire(&r->hdr->cq_tail) ||
	    r->sq_tail != ring_load_acquire(&r->hdr->sq_head)) {
		snprintf(err, errlen, "new ring is not empty");
		return -1;
	}
	r->max_inflight =
		r->sq_entries < r->cq_entries ? r->sq_entries : r->cq_entries;
	r->free_slot = UINT32_MAX;
	if (client_data_init(&r->area, r->data_size)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	return 0;
}

void client_ring_fini(struct client_ring *r)
{
	if (!r->hdr)
		return;
	client_data_fini(&r->area);
	free(r->slots);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	memset(r, 0, sizeof(*r));
}

void client_ring_lock(struct client_ring *r)
{
	pthread_mutex_lock(&r->lock);
}

void client_ring_unlock(struct client_ring *r)
{
	pthread_mutex_unlock(&r->lock);
}

/* ---- slots ---------------------------------------------------------- */

static int slot_get(struct client_ring *r, uint32_t *idx)
{
	struct client_slot *n;
	uint32_t i, cap;

	if (r->free_slot == UINT32_MAX) {
		if (r->nslots >= RING_MAX_SLOTS)
			return -1;
		cap = r->nslots ? r->nslots * 2 : 2 * r->max_inflight;
		if (cap > RING_MAX_SLOTS)
			cap = RING_MAX_SLOTS;
		n = realloc(r->slots, cap * sizeof(*n));
		if (!n)
			return -1;
		memset(n + r->nslots, 0, (cap - r->nslots) * sizeof(*n));
		for (i = cap; i-- > r->nslots;) {
			n[i].next_free = r->free_slot;
			r->free_slot = i;
		}
		r->slots = n;
		r->nslots = cap;
	}
	*idx = r->free_slot;
	r->free_slot = r->slots[*idx].next_free;
	return 0;
}

static void slot_put(struct client_ring *r, uint32_t idx)
{
	struct client_slot *s = &r->slots[idx];

	s->state = SLOT_FREE;
	s->gen++;
	s->group = NULL;
	s->next_free = r->free_slot;
	r->free_slot = idx;
}

static uint32_t slot_tag(const struct client_ring *r, uint32_t idx)
{
	return (uint32_t)r->slots[idx].gen << RING_SLOT_BITS | idx;
}

/* ---- death ---------------------------------------------------------- */

static void ring_set_dead(struct client_ring *r, CUresult err)
{
	if (r->dead)
		return;
	r->dead = err;
	pthread_cond_broadcast(&r->cond);
}

/*
 * Which error every pending and later call gets once the worker is gone:
 *  - header status DEAD (the vGPU failed: fault, watchdog, stop): the
 *    header's error when it holds a failure code, e.g.
 *    CUDA_ERROR_ILLEGAL_ADDRESS, else CUDA_ERROR_LAUNCH_FAILED;
 *  - header status BROKEN (the worker judged that we broke the protocol
 *    and dropped us): the header's error if set, else
 *    CUDA_ERROR_DEVICE_UNAVAILABLE;
 *  - the socket closed, or the worker posted a completion it never could
 *    have (bad tag, bad index), with the header still OK: the worker
 *    crashed or misbehaves: CUDA_ERROR_LAUNCH_FAILED.
 * Returns CUDA_SUCCESS while the header says OK.
 */
static CUresult ring_header_error(struct client_ring *r)
{
	uint32_t status = __atomic_load_n(&r->hdr->status, __ATOMIC_ACQUIRE);
	int32_t error;

	if (status == VGPU_RING_OK)
		return CUDA_SUCCESS;
	error = __atomic_load_n(&r->hdr->error, __ATOMIC_RELAXED);
	if (error > 0)
		return (CUresult)error;
	if (status == VGPU_RING_BROKEN)
		return CUDA_ERROR_DEVICE_UNAVAILABLE;
	return CUDA_ERROR_LAUNCH_FAILED;
}

static unsigned int ring_reap(struct client_ring *r);

/* Notices a ring the worker marked failed; reaps what it finished first
 * so that completed work still reports its own status. */
static void ring_check_alive(struct client_ring *r)
{
	CUresult err;

	if (r->dead)
		return;
	err = ring_header_error(r);
	if (err == CUDA_SUCCESS)
		return;
	ring_reap(r);
	ring_set_dead(r, err);
}

CUresult client_ring_dead(struct client_ring *r)
{
	ring_check_alive(r);
	return r->dead;
}

/* ---- completions ---------------------------------------------------- */

static void ring_complete(struct client_ring *r, const struct vgpu_cqe *cqe)
{
	uint32_t idx = cqe->tag & (RING_MAX_SLOTS - 1);
	struct client_slot *s;

	if (idx >= r->nslots || r->slots[idx].state != SLOT_PENDING ||
	    r->slots[idx].gen != cqe->tag >> RING_SLOT_BITS) {
		ring_set_dead(r, CUDA_ERROR_LAUNCH_FAILED);
		return;
	}
	s = &r->slots[idx];
	r->inflight--;
	if (s->mode == CLIENT_SLOT_WAIT) {
		s->cqe = *cqe;
		s->state = SLOT_DONE;
	} else {
		if (s->data_len)
			client_data_free(&r->area, s->data_off, s->data_len);
		if (cqe->status != CUDA_SUCCESS) {
			if (s->group && s->group->error == CUDA_SUCCESS)
				s->group->error = (CUresult)cqe->status;
			else if (!s->group && r->deferred == CUDA_SUCCESS)
				r->deferred = (CUresult)cqe->status;
		}
		if (s->group)
			s->group->pending--;
		slot_put(r, idx);
	}
	/* a fatal error poisons everything after it, as in CUDA */
	if (client_error_is_sticky((CUresult)cqe->status))
		ring_set_dead(r, (CUresult)cqe->status);
}

/* Takes every completion the worker posted; returns how many. */
static unsigned int ring_reap(struct client_ring *r)
{
	uint32_t tail, n, i;
	struct vgpu_cqe cqe;

	if (r->dead)
		return 0;
	tail = ring_load_acquire(&r->hdr->cq_tail);
	n = ring_used(r->cq_head, tail);
	if (n == 0)
		return 0;
	if (n > r->cq_entries || n > r->inflight) {
		ring_set_dead(r, CUDA_ERROR_LAUNCH_FAILED);
		return 0;
	}
	for (i = 0; i < n && !r->dead; i++) {
		memcpy(&cqe,
		       ring_cqe(r->base, r->cq_offset, r->cq_entries,
				r->cq_head),
		       sizeof(cqe));
		r->cq_head++;
		ring_complete(r, &cqe);
	}
	ring_store_release(&r->hdr->cq_head, r->cq_head);
	pthread_cond_broadcast(&r->cond);
	return n;
}

/* ---- waiting -------------------------------------------------------- */

static long elapsed_ns(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000000000L + t.tv_nsec - t0->tv_nsec;
}

/* Spins (lock dropped) until a completion shows up or the time is up. */
static int ring_spin(struct client_ring *r, uint32_t head)
{
	struct timespec t0;
	unsigned int i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 1;; i++) {
		if (ring_load_acquire(&r->hdr->cq_tail) != head ||
		    ring_load_acquire(&r->hdr->status) != VGPU_RING_OK)
			return 1;
		if (i % 64)
			cpu_relax();
		else if (elapsed_ns(&t0) > RING_YIELD_NS)
			return 0;
		else if (elapsed_ns(&t0) > RING_SPIN_NS)
			sched_yield();
	}
}

int client_ring_drain_sock(int sock)
{
	for (;;) {
		union {
			char buf[CMSG_SPACE(8 * sizeof(int))];
			struct cmsghdr align;
		} ctl;
		char buf[64];
		struct iovec iov = {buf, sizeof(buf)};
		struct msghdr msg = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = ctl.buf,
			.msg_controllen = sizeof(ctl.buf),
		};
		struct cmsghdr *c;
		ssize_t n;

		n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno != EAGAIN;
		for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
			size_t k, cnt;

			if (c->cmsg_level != SOL_SOCKET ||
			    c->cmsg_type != SCM_RIGHTS)
				continue;
			cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (k = 0; k < cnt; k++) {
				int d;

				memcpy(&d, CMSG_DATA(c) + k * sizeof(int),
				       sizeof(d));
				close(d);
			}
		}
		if (n == 0)
			return 1;
	}
}

/*
 * True when the socket says the worker is gone. While a region is being
 * created the waiting packet is its creator's: look at nothing but the
 * hang-up flags. Otherwise nothing is expected on the socket: drain
 * stray packets (and close their descriptors).
 */
static int ring_sock_closed(struct client_ring *r, short revents)
{
	if (revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL))
		return 1;
	if (!(revents & POLLIN))
		return 0;
	if (__atomic_load_n(&r->region_busy, __ATOMIC_SEQ_CST))
		return 0;
	return client_ring_drain_sock(r->sock);
}

/*
 * The poller's wait: spin, then announce client_sleeping, re-check after
 * a full barrier (the worker rings our doorbell only when it sees the
 * flag after publishing), and block on the completion eventfd and the
 * socket. Called and returns with the lock held.
 */
static void ring_sleep(struct client_ring *r)
{
	uint32_t head = r->cq_head;
	struct pollfd p[2];
	uint64_t v;
	int gone = 0;

	pthread_mutex_unlock(&r->lock);
	if (ring_spin(r, head))
		goto relock;
	__atomic_store_n(&r->hdr->client_sleeping, 1, __ATOMIC_RELAXED);
	ring_full_barrier();
	if (ring_load_acquire(&r->hdr->cq_tail) == head &&
	    ring_load_acquire(&r->hdr->status) == VGPU_RING_OK) {
		p[0].fd = r->complete_efd;
		p[0].events = POLLIN;
		p[1].fd = r->sock;
		/* a creator's packet would keep POLLIN set: wait on hang-up */
		p[1].events = __atomic_load_n(&r->region_busy, __ATOMIC_SEQ_CST)
				      ? POLLRDHUP
				      : POLLIN | POLLRDHUP;
		p[0].revents = p[1].revents = 0;
		if (poll(p, 2, RING_POLL_MS) > 0) {
			if (p[0].revents & POLLIN) {
				/* only the poller reads it: cannot block */
				if (read(r->complete_efd, &v, sizeof(v)) < 0)
					v = 0;
			}
			if (p[0].revents & (POLLERR | POLLNVAL))
				gone = 1;
			if (p[1].revents && ring_sock_closed(r, p[1].revents))
				gone = 1;
		}
	}
	__atomic_store_n(&r->hdr->client_sleeping, 0, __ATOMIC_RELAXED);
relock:
	pthread_mutex_lock(&r->lock);
	ring_check_alive(r);
	if (gone && !r->dead) {
		ring_reap(r);
		ring_set_dead(r, CUDA_ERROR_LAUNCH_FAILED);
	}
}

/*
 * One step towards whatever the caller waits for: reap, or wait to be
 * able to. Lock held; it may be dropped meanwhile.
 */
static void ring_progress(struct client_ring *r)
{
	if (ring_reap(r))
		return;
	ring_check_alive(r);
	if (r->dead)
		return;
	if (r->inflight == 0 || r->poller) {
		/* nothing to poll for, or someone else polls for us */
		pthread_cond_wait(&r->cond, &r->lock);
		return;
	}
	client_ring_flush(r);
	r->poller = 1;
	ring_sleep(r);
	r->poller = 0;
	ring_reap(r);
	pthread_cond_broadcast(&r->cond);
}

/* ---- submission ----------------------------------------------------- */

void client_ring_flush(struct client_ring *r)
{
	uint64_t one = 1;

	if (r->sq_published == r->sq_tail || r->dead)
		return;
	ring_store_release(&r->hdr->sq_tail, r->sq_tail);
	r->sq_published = r->sq_tail;
	ring_full_barrier();
	if (__atomic_load_n(&r->hdr->worker_sleeping, __ATOMIC_RELAXED)) {
		/* EAGAIN only if the counter is near overflow: it is awake */
		if (write(r->submit_efd, &one, sizeof(one)) < 0)
			(void)errno;
	}
}

CUresult client_ring_push(struct client_ring *r, struct vgpu_sqe *sqe,
			  const struct client_push *how, uint32_t *tag)
{
	struct client_slot *s;
	uint32_t idx;

	for (;;) {
		ring_check_alive(r);
		if (r->dead)
			return r->dead;
		if (r->inflight < r->max_inflight)
			break;
		client_ring_flush(r);
		ring_progress(r);
	}
	if (slot_get(r, &idx))
		return CUDA_ERROR_OUT_OF_MEMORY;
	s = &r->slots[idx];
	s->state = SLOT_PENDING;
	s->mode = how->mode;
	s->group = how->mode == CLIENT_SLOT_ASYNC ? how->group : NULL;
	s->data_off = how->data_off;
	s->data_len = how->mode == CLIENT_SLOT_ASYNC ? how->data_len : 0;
	if (s->group)
		s->group->pending++;
	sqe->tag = slot_tag(r, idx);
	memcpy(ring_sqe(r->base, r->sq_offset, r->sq_entries, r->sq_tail), sqe,
	       sizeof(*sqe));
	r->sq_tail++;
	r->inflight++;
	if (tag)
		*tag = sqe->tag;
	return CUDA_SUCCESS;
}

CUresult client_ring_wait(struct client_ring *r, uint32_t tag,
			  struct vgpu_cqe *cqe)
{
	uint32_t idx = tag & (RING_MAX_SLOTS - 1);

	client_ring_flush(r);
	for (;;) {
		/* index afresh: progress may move the slot array */
		if (r->slots[idx].state == SLOT_DONE) {
			*cqe = r->slots[idx].cqe;
			slot_put(r, idx);
			return CUDA_SUCCESS;
		}
		if (r->dead) {
			/* nothing is reaped any more: the slot is ours */
			slot_put(r, idx);
			return r->dead;
		}
		ring_progress(r);
	}
}

CUresult client_ring_wait_group(struct client_ring *r,
				struct client_group *group)
{
	client_ring_flush(r);
	while (group->pending) {
		if (r->dead)
			return r->dead;
		ring_progress(r);
	}
	return r->dead;
}

CUresult client_ring_take_deferred(struct client_ring *r)
{
	CUresult err = r->deferred;

	ring_check_alive(r);
	if (r->dead)
		return r->dead;
	r->deferred = CUDA_SUCCESS;
	return err;
}

CUresult client_ring_sync_result(struct client_ring *r, CUresult err)
{
	if (err != CUDA_SUCCESS)
		return err;
	client_ring_lock(r);
	err = client_ring_take_deferred(r);
	client_ring_unlock(r);
	return err;
}

/* ---- data area ------------------------------------------------------ */

CUresult client_ring_try_data_alloc(struct client_ring *r, uint64_t len,
				    uint64_t *off)
{
	if (len == 0 || client_data_round(len) > r->area.size)
		return CUDA_ERROR_INVALID_VALUE;
	if (r->dead)
		return r->dead;
	if (client_data_alloc(&r->area, len, off))
		return CUDA_ERROR_NOT_READY;
	return CUDA_SUCCESS;
}

CUresult client_ring_data_alloc(struct client_ring *r, uint64_t len,
				uint64_t *off)
{
	CUresult err;

	for (;;) {
		err = client_ring_try_data_alloc(r, len, off);
		if (err != CUDA_ERROR_NOT_READY)
			return err;
		/* nobody holds a region: only bookkeeping memory can lack */
		if (r->area.live == 0)
			return CUDA_ERROR_OUT_OF_MEMORY;
		client_ring_flush(r);
		ring_progress(r);
	}
}

void client_ring_data_free(struct client_ring *r, uint64_t off, uint64_t len)
{
	client_data_free(&r->area, off, len);
	pthread_cond_broadcast(&r->cond);
}

/* ---- host regions -------------------------------------------------- */

void client_ring_region_begin(struct client_ring *r)
{
	while (__atomic_load_n(&r->region_busy, __ATOMIC_RELAXED))
		pthread_cond_wait(&r->cond, &r->lock);
	__atomic_store_n(&r->region_busy, 1, __ATOMIC_SEQ_CST);
}

void client_ring_region_end(struct client_ring *r)
{
	__atomic_store_n(&r->region_busy, 0, __ATOMIC_SEQ_CST);
	pthread_cond_broadcast(&r->cond);
}

/* ---- one-shot helpers ----------------------------------------------- */

CUresult client_ring_call(struct client_ring *r, struct vgpu_sqe *sqe,
			  struct vgpu_cqe *cqe)
{
	struct client_push how = {.mode = CLIENT_SLOT_WAIT};
	struct vgpu_cqe c;
	uint32_t tag;
	CUresult err;

	client_ring_lock(r);
	err = client_ring_push(r, sqe, &how, &tag);
	if (err == CUDA_SUCCESS)
		err = client_ring_wait(r, tag, &c);
	client_ring_unlock(r);
	if (err != CUDA_SUCCESS)
		return err;
	if (cqe)
		*cqe = c;
	return (CUresult)c.status;
}

CUresult client_ring_submit_async(struct client_ring *r, struct vgpu_sqe *sqe)
{
	struct client_push how = {.mode = CLIENT_SLOT_ASYNC};
	CUresult err;

	client_ring_lock(r);
	err = client_ring_push(r, sqe, &how, NULL);
	client_ring_flush(r);
	client_ring_unlock(r);
	return err;
}
