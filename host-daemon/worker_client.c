/* SPDX-License-Identifier: MIT */
/*
 * One client of a vGPU: its ring (a sealed memfd), its two doorbells
 * (eventfds) and the thread that serves it.
 *
 * The thread copies each descriptor out of the ring, has worker_exec
 * validate and run it, and posts the completion. While descriptors keep
 * coming it makes no system call; when the queue is empty it spins for
 * WORKER_SPIN_NS, then sets worker_sleeping, re-checks, and sleeps in
 * epoll on: the submit doorbell (edge-triggered, so the worker never reads
 * it: a client that drains or stuffs its own doorbell cannot make the
 * worker block), the client socket (closing means the client is gone) and
 * a private kick eventfd (shutdown). The completion doorbell is rung only
 * when the client said it sleeps. It is a datagram socket pair, not an
 * eventfd: the worker sends on its own end with MSG_DONTWAIT, which the
 * client cannot turn into a blocking call (an eventfd's O_NONBLOCK lives
 * in the file description both sides share, and its counter can be
 * stuffed by the client between a poll and a write).
 *
 * A VM channel (VGPU_CTL_CHANNEL) is the same client with another
 * transport: its ring is a window of the mdev's BAR2 memfd (vgpud's, not
 * ours), its submit doorbell an eventfd that vgpu_mdev.ko signals, and its
 * completion doorbell an eventfd the worker writes 8 bytes to (made
 * non-blocking here: only the module reads it). The hello reply carries
 * no descriptors, and vgpud ends the channel by shutting its end down.
 *
 * The ring memory and the descriptors outlive the thread: the main thread
 * joins it and only then unmaps and closes, after taking the client off
 * the list under clients_lock, so the fault path (which marks every ring
 * of the list dead) never touches an unmapped ring.
 */
#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl_msg.h"
#include "env_number.h"
#include "worker.h"
#include "worker_part.h"
#include "worker_sched.h"
#include "worker_state.h"

#define WORKER_SPIN_NS		50000ull /* spin before sleeping */
#define WORKER_CQ_FULL_SLEEP_MS 1  /* poll interval while the CQ is full */
#define WORKER_STOP_JOIN_S	10 /* how long shutdown waits per client */
/* a departed client's thread still busy this long after its gates were
 * opened is reported in the stats (its queued work may simply be long:
 * daemon_liveness.c) */
#define WORKER_DEPART_STUCK_NS 2000000000ull
/* A departed client's thread this long in one call with the GPU idle is
 * wedged (worker_client_stats) */
#define WORKER_WEDGED_NS     2000000000ull
#define CLIENT_CALL_TEARDOWN (VGPU_OP_COUNT_ + 1u)

/*
 * VGPU_SLOW_REQUEST_MS=N (default 0, off): log every request that takes
 * longer than N ms to run, with its opcode. A diagnostic for "what does
 * this client wait for": synchronising calls are slow by nature.
 */
static uint64_t slow_request_ns;
static pthread_once_t slow_request_once = PTHREAD_ONCE_INIT;

static void slow_request_init(void)
{
	uint64_t ms;
	char err[160];

	if (env_number("VGPU_SLOW_REQUEST_MS", 0, 0, 0, 3600000, &ms, err,
		       sizeof(err)) == 0)
		slow_request_ns = ms * 1000000ull;
	else
		fprintf(stderr, "vgpu-worker: %s; not logging slow requests\n",
			err);
}

enum { EV_SUBMIT = 1, EV_SOCK = 2, EV_KICK = 3 };

struct worker_client {
	struct worker_client *next; /* w->clients, under clients_lock */
	struct worker *w;
	uint32_t id;
	struct vgpu_ctl_client who;

	int sock, ring_fd, submit_fd, complete_fd, kick_fd, epoll_fd;
	int complete_peer_fd;	 /* the client's end, sent in the hello reply */
	bool channel;		 /* a VM channel: complete_fd is an eventfd */
	uint32_t instance, chan; /* the channel's mdev instance, index */
	char label[64];		 /* "client 3 (pid 42)", for logs */
	int pinned; /* data area registered with the backend (DMA copies) */
	void *ring;
	struct vgpu_ring_header *hdr;
	struct ring_layout lay; /* private copy: never re-read from hdr */

	pthread_t thread;
	int stop;    /* set by the main thread: finish and leave */
	int serving; /* session set up: stats may read it */
	int active;  /* has work in hand: a hold waits for it (atomic;
			worker_sched.h) */
	int done;    /* the thread has finished and freed the session */
	uint64_t departed_ns; /* when its socket hung up (atomic; 0: not) */
	bool stuck_logged;    /* the stats said it is still in a call */
	/* the call in hand: its opcode + 1, CLIENT_CALL_TEARDOWN, or 0; and
	 * how many calls it has finished (client thread writes; atomic) */
	uint32_t call_op;
	uint64_t calls;
	/* the main loop's last look: calls then, and since when in one call
	 * (worker_client_stats only) */
	uint64_t seen_calls, seen_ns;
	bool wedged_logged;
	bool swap_failing; /* swapped out past vgpud's bound: its queued
			      calls fail (client thread only) */

	struct worker_session sess;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

/* ---- ring setup ------------------------------------------------------ */

/*
 * Write the ring header from our private layout. A channel's window may
 * hold an earlier channel's indices and flags: the header page starts
 * from zero. (The guest may scribble on it at any time; the worker never
 * reads the layout back.)
 */
static void client_ring_header(struct worker_client *c)
{
	const struct ring_layout *l = &c->lay;
	struct vgpu_ring_header *h;

	h = c->hdr = c->ring;
	memset(h, 0, sizeof(*h));
	h->magic = VGPU_PROTO_MAGIC;
	h->major = VGPU_PROTO_MAJOR;
	h->minor = VGPU_PROTO_MINOR;
	h->features = VGPU_FEATURE_NONE;
	h->sq_entries = l->sq_entries;
	h->cq_entries = l->cq_entries;
	h->sq_offset = l->sq_offset;
	h->cq_offset = l->cq_offset;
	h->data_offset = l->data_offset;
	h->data_size = l->data_size;
	h->total_size = l->total_size;
	h->change_count =
		__atomic_load_n(&c->w->change_count, __ATOMIC_ACQUIRE);
	ring_store_release(&h->status, VGPU_RING_OK);
}

/* The sealed memfd ring, mapped, with its header's layout filled in. */
static int client_ring_create(struct worker_client *c)
{
	struct ring_layout *l = &c->lay;

	ring_layout_compute(l, VGPU_RING_SQ_ENTRIES, VGPU_RING_CQ_ENTRIES,
			    VGPU_RING_DATA_BYTES);
	c->ring_fd = memfd_create("vgpu-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (c->ring_fd < 0)
		return -errno;
	if (ftruncate(c->ring_fd, (off_t)l->total_size) < 0)
		return -errno;
	/* the client can neither resize it (SIGBUS here) nor add seals */
	if (fcntl(c->ring_fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return -errno;
	c->ring = mmap(NULL, l->total_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       c->ring_fd, 0);
	if (c->ring == MAP_FAILED) {
		c->ring = NULL;
		return -errno;
	}
	client_ring_header(c);
	return 0;
}

static int epoll_add(int ep, int fd, uint32_t events, uint32_t tag)
{
	struct epoll_event ev = {.events = events, .data.u32 = tag};

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* What the thread sleeps on: the submit doorbell, the socket, a kick. */
static int client_wait_setup(struct worker_client *c)
{
	c->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	c->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (c->kick_fd < 0 || c->epoll_fd < 0)
		return -errno;
	if (epoll_add(c->epoll_fd, c->submit_fd, EPOLLIN | EPOLLET,
		      EV_SUBMIT) ||
	    epoll_add(c->epoll_fd, c->sock, EPOLLIN | EPOLLRDHUP, EV_SOCK) ||
	    epoll_add(c->epoll_fd, c->kick_fd, EPOLLIN, EV_KICK))
		return -errno;
	return 0;
}

/* A local client's doorbells: made here, handed over in the reply. */
static int client_fds_create(struct worker_client *c)
{
	int pair[2];

	c->submit_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) == 0) {
		c->complete_fd = pair[0];
		c->complete_peer_fd = pair[1];
	}
	if (c->submit_fd < 0 || c->complete_fd < 0)
		return -errno;
	return client_wait_setup(c);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void client_free(struct worker_client *c)
{
	if (c->ring)
		munmap(c->ring, c->lay.total_size);
	close_fd(&c->sock);
	close_fd(&c->ring_fd);
	close_fd(&c->submit_fd);
	close_fd(&c->complete_fd);
	close_fd(&c->complete_peer_fd);
	close_fd(&c->kick_fd);
	close_fd(&c->epoll_fd);
	free(c);
}

/* Answer the client's hello (the worker's half of the handshake). */
static int client_reply(struct worker_client *c, int32_t status,
			const char *message)
{
	struct vgpu_hello_reply r;
	int fds[3] = {c->ring_fd, c->submit_fd, c->complete_peer_fd};

	memset(&r, 0, sizeof(r));
	r.magic = VGPU_PROTO_MAGIC;
	r.major = VGPU_PROTO_MAJOR;
	r.minor = VGPU_PROTO_MINOR;
	r.status = status;
	if (status == VGPU_HELLO_OK)
		r.ring_size = c->lay.total_size;
	else
		strncpy(r.message, message, sizeof(r.message) - 1);
	return ctl_send_fds(c->sock, &r, sizeof(r), fds,
			    status == VGPU_HELLO_OK && !c->channel ? 3 : 0);
}

/* ---- the serving thread ---------------------------------------------- */

/*
 * Ring the completion doorbell; never blocks (see top). EAGAIN means the
 * client has not read earlier rings: it is awake or will be.
 */
static void client_doorbell(struct worker_client *c)
{
	uint64_t one = 1;
	ssize_t n;

	if (c->channel) /* O_NONBLOCK: EAGAIN only at the counter's top */
		n = write(c->complete_fd, &one, sizeof(one));
	else
		n = send(c->complete_fd, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)n;
}

/* Mark the ring broken (a protocol violation) and wake the client. */
static void client_break(struct worker_client *c, const char *why)
{
	worker_log(c->w, "%s: ring broken: %s; dropping it", c->label, why);
	ring_store_release(&c->hdr->status, VGPU_RING_BROKEN);
	ring_full_barrier();
	client_doorbell(c);
}

/*
 * Sleep until something happens (timeout_ms, or -1). Returns 0 to go on,
 * -1 when the client is gone, broke the protocol or must stop.
 */
static int client_sleep(struct worker_client *c, int timeout_ms)
{
	struct epoll_event ev[3];
	uint64_t v;
	char b;
	int i, n;
	ssize_t k;

	n = epoll_wait(c->epoll_fd, ev, 3, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -1;
	for (i = 0; i < n; i++) {
		switch (ev[i].data.u32) {
		case EV_SOCK:
			if (ev[i].events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))
				return -1;
			k = recv(c->sock, &b, 1, MSG_DONTWAIT | MSG_PEEK);
			if (k == 0 || (k < 0 && errno != EAGAIN &&
				       errno != EWOULDBLOCK && errno != EINTR))
				return -1;
			if (k > 0) {
				client_break(c, "it wrote to its socket after "
						"the handshake");
				return -1;
			}
			break;
		case EV_KICK:
			k = read(c->kick_fd, &v, sizeof(v));
			(void)k;
			break;
		}
	}
	return __atomic_load_n(&c->stop, __ATOMIC_ACQUIRE) ? -1 : 0;
}

/*
 * The submission queue is empty at head: spin a little, then announce
 * sleep, re-check (the client rings only when it sees the flag), sleep.
 */
static int client_wait_submit(struct worker_client *c, uint32_t head)
{
	struct vgpu_ring_header *h = c->hdr;
	uint64_t t0 = worker_now_ns();
	int rc;

	do {
		if (ring_load_acquire(&h->sq_tail) != head)
			return 0;
		cpu_relax();
	} while (worker_now_ns() - t0 < WORKER_SPIN_NS);

	__atomic_store_n(&h->worker_sleeping, 1, __ATOMIC_RELAXED);
	ring_full_barrier();
	if (ring_load_acquire(&h->sq_tail) != head) {
		__atomic_store_n(&h->worker_sleeping, 0, __ATOMIC_RELAXED);
		return 0;
	}
	/* deferred work: the pump's kick wakes us when a gate opens; the
	 * poll covers a flush skipped while held or frozen */
	rc = client_sleep(c, c->sess.held ? WORKER_HOLD_POLL_MS : -1);
	__atomic_store_n(&h->worker_sleeping, 0, __ATOMIC_RELAXED);
	return rc;
}

/*
 * Wait until the completion queue has room for one more entry at
 * cq_tail. The client does not ring when it consumes, so a full queue is
 * polled (spin, then 1 ms sleeps that still notice the socket closing).
 */
static int client_hold(struct worker_client *c);

static int client_wait_cq(struct worker_client *c, uint32_t cq_tail)
{
	struct vgpu_ring_header *h = c->hdr;
	uint64_t t0 = 0;
	uint32_t used;

	for (;;) {
		used = ring_used(ring_load_acquire(&h->cq_head), cq_tail);
		if (used > c->lay.cq_entries) {
			client_break(c, "cq_head is not within cq_entries of "
					"cq_tail");
			return -1;
		}
		if (used < c->lay.cq_entries)
			return 0;
		if (!t0)
			t0 = worker_now_ns();
		if (worker_now_ns() - t0 < WORKER_SPIN_NS) {
			cpu_relax();
			continue;
		}
		/* no descriptor taken yet: a client that does not read its
		 * completions must not keep a freeze from happening */
		if (worker_frozen(c->w) && client_hold(c) < 0)
			return -1;
		if (client_sleep(c, WORKER_CQ_FULL_SLEEP_MS) < 0)
			return -1;
	}
}

/* Copy a descriptor out of shared memory: each word read exactly once. */
static void sqe_copy(struct vgpu_sqe *dst, const struct vgpu_sqe *src)
{
	union {
		struct vgpu_sqe sqe;
		uint64_t w[sizeof(struct vgpu_sqe) / 8];
	} u;
	const volatile uint64_t *s = (const volatile uint64_t *)src;
	size_t i;

	for (i = 0; i < sizeof(u.w) / sizeof(u.w[0]); i++)
		u.w[i] = s[i];
	*dst = u.sqe;
}

/*
 * A vGPU that vgpud swapped out gives up on a call once it has waited
 * the bound vgpud gave (worker_state.h: worker_swap_wait_ns), and on
 * the calls queued behind it at once: the client gets a CUDA error
 * instead of a hang. since: when this wait began.
 */
static bool client_swap_gives_up(struct worker_client *c, uint64_t since)
{
	uint64_t bound = worker_swap_wait_ns(c->w);

	if (!bound || !worker_frozen(c->w))
		return false;
	if (!c->swap_failing && worker_now_ns() - since < bound)
		return false;
	if (!c->swap_failing)
		worker_log(c->w,
			   "%s: waited %.1f s for the swapped-out vGPU to "
			   "come back; its calls fail "
			   "(CUDA_ERROR_DEVICE_UNAVAILABLE) until it is back",
			   c->label, (worker_now_ns() - since) / 1e9);
	c->swap_failing = true;
	return true;
}

/*
 * The vGPU is held (worker_sched.h): stand aside until it is not, still
 * noticing the client leaving and a stop. 0 to go on, -1 to leave, 1 to
 * answer the next descriptor with an error (swapped out too long).
 */
static int client_hold(struct worker_client *c)
{
	uint64_t t0 = worker_now_ns();

	for (;;) {
		if (client_swap_gives_up(c, t0))
			return 1;
		__atomic_store_n(&c->active, 0, __ATOMIC_SEQ_CST);
		if (client_sleep(c, WORKER_HOLD_POLL_MS) < 0)
			return -1;
		__atomic_store_n(&c->active, 1, __ATOMIC_SEQ_CST);
		if (!worker_sched_held(c->w) && !worker_frozen(c->w)) {
			c->swap_failing = false;
			return 0;
		}
	}
}

/* The descriptor loop; returns when the client is gone or must stop. */
/* One call, marked as in hand for the liveness check (two stores). */
static void client_exec(struct worker_client *c, const struct vgpu_sqe *sqe,
			struct vgpu_cqe *cqe)
{
	__atomic_store_n(&c->call_op, sqe->opcode + 1u, __ATOMIC_RELAXED);
	worker_exec(&c->sess, sqe, cqe);
	__atomic_store_n(&c->call_op, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->calls, c->calls + 1, __ATOMIC_RELEASE);
}

static void client_serve(struct worker_client *c)
{
	struct vgpu_ring_header *h = c->hdr;
	const uint32_t sq_n = c->lay.sq_entries, cq_n = c->lay.cq_entries;
	struct vgpu_sqe *sq =
		(struct vgpu_sqe *)((char *)c->ring + c->lay.sq_offset);
	struct vgpu_cqe *cq =
		(struct vgpu_cqe *)((char *)c->ring + c->lay.cq_offset);
	struct vgpu_sqe sqe;
	struct vgpu_cqe cqe;
	uint32_t head = 0, cq_tail = 0, tail;
	int held;

	pthread_once(&slow_request_once, slow_request_init);

	for (;;) {
		if (__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
			return;
		/* work held back behind host functions whose gates opened
		 * (worker_defer.c); not while held or frozen */
		if (c->sess.held) {
			if (!c->active)
				__atomic_store_n(&c->active, 1,
						 __ATOMIC_SEQ_CST);
			if (!worker_sched_gate(c->w) && !worker_frozen(c->w))
				worker_defer_flush(&c->sess);
		}
		tail = ring_load_acquire(&h->sq_tail);
		if (tail == head) {
			c->swap_failing = false; /* a new call waits anew */
			if (c->active)
				__atomic_store_n(&c->active, 0,
						 __ATOMIC_SEQ_CST);
			if (client_wait_submit(c, head) < 0)
				return;
			continue;
		}
		if (!c->active)
			__atomic_store_n(&c->active, 1, __ATOMIC_SEQ_CST);
		if (ring_used(head, tail) > sq_n) {
			client_break(c, "sq_tail is not within sq_entries of "
					"sq_head");
			return;
		}
		while (head != tail) {
			/* gone (worker_client_departed): what it queued
			 * behind the call that waited is not run */
			if (__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE))
				return;
			/* held by the scheduler, or frozen for a save or a
			 * migration (worker_state.h) */
			held = 0;
			if ((worker_sched_gate(c->w) || worker_frozen(c->w)) &&
			    (held = client_hold(c)) < 0)
				return;
			if (client_wait_cq(c, cq_tail) < 0)
				return;
			sqe_copy(&sqe, &sq[head & (sq_n - 1)]);
			head++;
			ring_store_release(&h->sq_head, head);

			if (held > 0) { /* swapped out too long: not run */
				memset(&cqe, 0, sizeof(cqe));
				cqe.tag = sqe.tag;
				cqe.status = CUDA_ERROR_DEVICE_UNAVAILABLE;
			} else if (slow_request_ns) {
				uint64_t t0 = worker_now_ns(), ms;

				client_exec(c, &sqe, &cqe);
				if (worker_now_ns() - t0 > slow_request_ns) {
					ms = (worker_now_ns() - t0) / 1000000;
					worker_log(c->w,
						   "%s: opcode %u took %llu ms",
						   c->label, sqe.opcode,
						   (unsigned long long)ms);
				}
			} else {
				client_exec(c, &sqe, &cqe);
			}

			cq[cq_tail & (cq_n - 1)] = cqe;
			cq_tail++;
			ring_store_release(&h->cq_tail, cq_tail);
			ring_full_barrier();
			if (__atomic_load_n(&h->client_sleeping,
					    __ATOMIC_RELAXED))
				client_doorbell(c);
		}
	}
}

static void client_finished(struct worker_client *c)
{
	uint64_t one = 1;
	ssize_t n;

	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	n = write(c->w->wake_fd, &one, sizeof(one));
	(void)n;
}

static void *client_thread(void *arg)
{
	struct worker_client *c = arg;
	struct worker *w = c->w;
	int rc;

	/* not while the vGPU is frozen (a migration or a suspend) */
	worker_state_enter(w, &c->active, &c->stop);
	rc = w->ops->thread_attach(w->be);
	if (rc) {
		worker_check(w, rc, "thread_attach");
		client_reply(c, VGPU_HELLO_UNAVAILABLE,
			     "the vGPU could not serve a new client");
		goto out;
	}
	rc = worker_session_init(&c->sess, w, c->id,
				 (uint8_t *)c->ring + c->lay.data_offset,
				 c->lay.data_size);
	if (rc) {
		client_reply(c, VGPU_HELLO_RESOURCES,
			     "the vGPU could not create the client's "
			     "default stream");
		goto out;
	}
	c->sess.pid = c->who.pid;
	/* a gate opening wakes the thread for its deferred work */
	c->sess.wake_fd = c->kick_fd;
	c->sess.stop = &c->stop;
	/* host regions' memfds go to the client on its socket. The worker
	 * only sends there (MSG_DONTWAIT): its epoll watches the socket for
	 * input and hang-up, which its own sends never raise. A channel's
	 * socket leads to vgpud, not to the guest: no regions there. */
	c->sess.sock = c->channel ? -1 : c->sock;
	if (w->ops->host_register) {
		rc = w->ops->host_register(w->be, c->sess.data,
					   c->sess.data_size);
		if (rc)
			worker_log(w,
				   "%s: data area not pinned "
				   "(CUresult %d): copies are staged",
				   c->label, rc);
		c->pinned = rc == 0;
	}
	c->sess.data_gpu_ok = !w->ops->host_register || c->pinned;
	__atomic_store_n(&c->serving, 1, __ATOMIC_RELEASE);
	rc = client_reply(c, VGPU_HELLO_OK, NULL);
	close_fd(&c->ring_fd);		/* the mapping stays */
	close_fd(&c->complete_peer_fd); /* the client has its end now */
	if (rc) {
		worker_log(w, "%s: hello reply failed: %s", c->label,
			   strerror(-rc));
	} else {
		worker_log(w, "%s (uid %u) connected", c->label, c->who.uid);
		client_serve(c);
		worker_log(w, "%s left", c->label);
	}
	{
		void *data = c->sess.data; /* fini may clear the session */

		/* a client leaving a frozen vGPU waits (worker_state.h) */
		worker_state_enter(w, &c->active, &c->stop);
		__atomic_store_n(&c->call_op, CLIENT_CALL_TEARDOWN,
				 __ATOMIC_RELAXED);
		worker_session_fini(&c->sess); /* syncs: no copy in flight */
		if (c->pinned)
			w->ops->host_unregister(w->be, data);
		__atomic_store_n(&c->call_op, 0, __ATOMIC_RELAXED);
	}
out:
	client_finished(c);
	return NULL;
}

/* ---- called by the main thread --------------------------------------- */

static struct worker_client *client_new(struct worker *w, int sock,
					const struct vgpu_ctl_client *who)
{
	struct worker_client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->w = w;
	c->who = *who;
	c->sock = sock;
	c->ring_fd = c->submit_fd = c->complete_fd = c->complete_peer_fd = -1;
	c->kick_fd = c->epoll_fd = -1;
	snprintf(c->label, sizeof(c->label), "client (pid %d)", (int)who->pid);
	return c;
}

/* Count c against max_clients and give it an id. 0 or -EBUSY. */
static int client_count(struct worker_client *c)
{
	struct worker *w = c->w;

	pthread_mutex_lock(&w->clients_lock);
	if (w->nclients >= w->max_clients) {
		pthread_mutex_unlock(&w->clients_lock);
		return -EBUSY;
	}
	w->nclients++;
	c->id = w->next_client_id++;
	if (!w->next_client_id)
		w->next_client_id = 1;
	pthread_mutex_unlock(&w->clients_lock);
	if (c->channel)
		snprintf(c->label, sizeof(c->label),
			 "client %u (instance %u channel %u)", c->id,
			 c->instance, c->chan);
	else
		snprintf(c->label, sizeof(c->label), "client %u (pid %d)",
			 c->id, (int)c->who.pid);
	return 0;
}

static void client_uncount(struct worker_client *c)
{
	pthread_mutex_lock(&c->w->clients_lock);
	c->w->nclients--;
	pthread_mutex_unlock(&c->w->clients_lock);
}

/* Put a counted client on the list and start its thread. 0/-errno. */
static int client_launch(struct worker_client *c)
{
	struct worker *w = c->w;
	struct worker_client **pp;
	int rc;

	pthread_mutex_lock(&w->clients_lock);
	c->next = w->clients;
	w->clients = c;
	pthread_mutex_unlock(&w->clients_lock);

	rc = -pthread_create(&c->thread, NULL, client_thread, c);
	if (!rc)
		return 0;
	pthread_mutex_lock(&w->clients_lock);
	for (pp = &w->clients; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	pthread_mutex_unlock(&w->clients_lock);
	return rc;
}

int worker_client_start(struct worker *w, int sock,
			const struct vgpu_ctl_client *who)
{
	struct worker_client *c;
	const char *why;
	int rc;

	c = client_new(w, sock, who);
	if (!c) {
		close(sock);
		return -ENOMEM;
	}
	why = "the vGPU has as many clients as it may have";
	rc = client_count(c);
	if (rc)
		goto fail;
	why = "the worker could not set up a ring";
	rc = client_ring_create(c);
	if (!rc)
		rc = client_fds_create(c);
	if (!rc) {
		why = "the worker could not watch the client's socket";
		rc = worker_depart_watch(w, sock, c->id);
	}
	if (!rc) {
		why = "the worker could not start a thread";
		rc = client_launch(c);
	}
	if (!rc)
		return 0;
	client_uncount(c);
fail:
	worker_log(w, "client (pid %d) refused: %s (%s)", (int)who->pid, why,
		   strerror(-rc));
	client_reply(c, VGPU_HELLO_RESOURCES, why);
	client_free(c);
	return rc;
}

/*
 * The channel's ring: its window of the BAR2 memfd, mapped (the memfd
 * itself is closed once mapped: vgpud keeps it), with a fresh header.
 */
static int channel_ring_map(struct worker_client *c, int memfd,
			    const struct vgpu_ctl_channel *ch)
{
	c->ring = mmap(NULL, c->lay.total_size, PROT_READ | PROT_WRITE,
		       MAP_SHARED, memfd, (off_t)ch->ring_offset);
	if (c->ring == MAP_FAILED) {
		c->ring = NULL;
		return -errno;
	}
	client_ring_header(c);
	return 0;
}

int worker_channel_start(struct worker *w, int fds[WORKER_CHANNEL_FDS],
			 const struct vgpu_ctl_channel *ch)
{
	struct worker_client *c;
	char why[VGPU_MESSAGE_MAX];
	int rc, flags;

	c = client_new(w, fds[0], &ch->who);
	if (!c) {
		rc = -ENOMEM;
		snprintf(why, sizeof(why), "out of memory");
		goto refuse;
	}
	c->channel = true;
	c->instance = ch->instance;
	c->chan = ch->channel;
	c->submit_fd = fds[2];
	c->complete_fd = fds[3];
	rc = worker_channel_check(ch, fds, &c->lay, why, sizeof(why));
	if (rc)
		goto refuse;
	snprintf(why, sizeof(why),
		 "the vGPU has as many clients as it may have");
	rc = client_count(c);
	if (rc)
		goto refuse;
	snprintf(why, sizeof(why), "the worker could not set up the ring");
	rc = channel_ring_map(c, fds[1], ch);
	flags = fcntl(c->complete_fd, F_GETFL);
	if (!rc && (flags < 0 ||
		    fcntl(c->complete_fd, F_SETFL, flags | O_NONBLOCK) < 0))
		rc = -errno;
	if (!rc)
		rc = client_wait_setup(c);
	if (!rc) {
		snprintf(why, sizeof(why),
			 "the worker could not watch the channel's socket");
		rc = worker_depart_watch(w, c->sock, c->id);
	}
	if (!rc) {
		snprintf(why, sizeof(why),
			 "the worker could not start a thread");
		rc = client_launch(c);
	}
	if (!rc) {
		close(fds[1]); /* mapped; vgpud and the module hold the file */
		return 0;
	}
	client_uncount(c);
refuse:
	worker_log(w, "channel %u of instance %u refused: %s (%s)", ch->channel,
		   ch->instance, why, strerror(-rc));
	if (c && worker_channel_sock_ok(c->sock))
		client_reply(c, VGPU_HELLO_RESOURCES, why);
	if (c) {
		client_free(c); /* closes the socket and both eventfds */
	} else {
		close(fds[0]);
		close(fds[2]);
		close(fds[3]);
	}
	close(fds[1]);
	return rc;
}

/* Take the clients whose thread is done off the list, join, free them. */
uint32_t worker_client_reap(struct worker *w)
{
	struct worker_client *c, **pp, *dead = NULL;
	uint32_t left;

	pthread_mutex_lock(&w->clients_lock);
	for (pp = &w->clients; (c = *pp);) {
		if (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
			*pp = c->next;
			c->next = dead;
			dead = c;
			w->nclients--;
			w->gone_kernels += c->sess.kernels;
			w->gone_bytes += c->sess.bytes_copied;
		} else {
			pp = &c->next;
		}
	}
	left = w->nclients;
	pthread_mutex_unlock(&w->clients_lock);

	while ((c = dead)) {
		dead = c->next;
		pthread_join(c->thread, NULL);
		client_free(c);
	}
	return left;
}

static void client_kick(struct worker_client *c)
{
	uint64_t one = 1;
	ssize_t n;

	__atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
	n = write(c->kick_fd, &one, sizeof(one));
	(void)n;
}

/*
 * The client's socket hung up (worker_depart.c). Its thread may be
 * waiting inside a call for a host function that will now never run:
 * open its gates, so that the wait ends, and have it stop.
 */
void worker_client_departed(struct worker *w, uint32_t id)
{
	struct worker_client *c;

	pthread_mutex_lock(&w->clients_lock);
	for (c = w->clients; c; c = c->next)
		if (c->id == id && !__atomic_load_n(&c->done, __ATOMIC_ACQUIRE))
			break;
	if (c) {
		__atomic_store_n(&c->departed_ns, worker_now_ns(),
				 __ATOMIC_RELEASE);
		/* before the session exists there is nothing to open */
		if (__atomic_load_n(&c->serving, __ATOMIC_ACQUIRE)) {
			if (__atomic_load_n(&c->active, __ATOMIC_ACQUIRE))
				worker_log(w,
					   "%s hung up inside a call: "
					   "opening its stream gates (its "
					   "host functions will not run)",
					   c->label);
			worker_gate_session_gone(w, &c->sess);
		}
		client_kick(c);
	}
	pthread_mutex_unlock(&w->clients_lock);
}

void worker_client_stop_all(struct worker *w)
{
	struct worker_client *c;
	uint64_t deadline;
	uint32_t left;

	/* the vGPU stops: work still queued will not run (ring DEAD). A
	 * ring a fault marked dead keeps the fault's error: its client may
	 * not have read it yet (worker_client_mark_dead) */
	pthread_mutex_lock(&w->clients_lock);
	for (c = w->clients; c; c = c->next) {
		if (ring_load_acquire(&c->hdr->status) == VGPU_RING_OK) {
			c->hdr->error = CUDA_ERROR_DEVICE_UNAVAILABLE;
			ring_store_release(&c->hdr->status, VGPU_RING_DEAD);
		}
		ring_full_barrier();
		client_doorbell(c);
		client_kick(c);
	}
	pthread_mutex_unlock(&w->clients_lock);

	deadline = worker_now_ns() + WORKER_STOP_JOIN_S * 1000000000ull;
	for (;;) {
		left = worker_client_reap(w);
		if (!left)
			return;
		if (worker_now_ns() > deadline) {
			worker_log(w, "%u client(s) did not stop in %d s", left,
				   WORKER_STOP_JOIN_S);
			return;
		}
		usleep(10000);
	}
}

void worker_client_mark_dead(struct worker *w, int32_t status)
{
	struct worker_client *c;
	struct timespec deadline;

	/* bounded: a fault must not hang on a lock held by a stuck thread */
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 1;
	if (pthread_mutex_timedlock(&w->clients_lock, &deadline))
		return;
	for (c = w->clients; c; c = c->next) {
		c->hdr->error = status;
		ring_store_release(&c->hdr->status, VGPU_RING_DEAD);
		ring_full_barrier();
		client_doorbell(c);
	}
	pthread_mutex_unlock(&w->clients_lock);
}

/*
 * Whether c's thread, its client gone, is wedged: in one call (or its
 * teardown) for more than WORKER_WEDGED_NS while the kernel watchdog sees
 * nothing of the vGPU's on the GPU (gpu_idle). A departed client's thread
 * may wait long and rightly: for its queued kernels, or for other
 * clients' (the driver makes frees and unloads wait for every stream of
 * the context), each bounded by the time limit; never for its own host
 * functions (worker_depart.c opened their gates). With nothing on the GPU
 * it waits for nothing that will come. A library load is left alone (a
 * JIT compilation may take long), and so is every call without the
 * watchdog (nothing then tells what the GPU runs). Main loop, under
 * clients_lock.
 */
static bool client_wedged(struct worker_client *c, uint64_t now, bool gpu_idle)
{
	uint32_t op = __atomic_load_n(&c->call_op, __ATOMIC_RELAXED);
	uint64_t calls = __atomic_load_n(&c->calls, __ATOMIC_ACQUIRE);

	if (!op || calls != c->seen_calls) {
		c->seen_calls = calls;
		c->seen_ns = now;
		return false;
	}
	if (!c->seen_ns)
		c->seen_ns = now;
	if (now - c->seen_ns <= WORKER_WEDGED_NS || !gpu_idle ||
	    op == VGPU_OP_LIBRARY_LOAD + 1u)
		return false;
	if (!c->wedged_logged)
		worker_log(c->w,
			   "%s: its thread has been in one call (%s %u) for "
			   "%.1f s after the client left, with nothing on the "
			   "GPU: wedged",
			   c->label,
			   op == CLIENT_CALL_TEARDOWN ? "teardown" : "opcode",
			   op == CLIENT_CALL_TEARDOWN ? 0 : op - 1,
			   (now - c->seen_ns) / 1e9);
	c->wedged_logged = true;
	return true;
}

void worker_client_stats(struct worker *w, struct vgpu_ctl_stats *st)
{
	struct worker_client *c;
	uint64_t now = worker_now_ns(), gone;
	/* before clients_lock: the watchdog's lock is never taken inside */
	bool gpu_idle = w->wd && worker_watchdog_pending(w) == 0;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&w->clients_lock);
	st->clients = w->nclients;
	st->kernels = w->gone_kernels;
	st->bytes_copied = w->gone_bytes;
	for (c = w->clients; c; c = c->next) {
		gone = __atomic_load_n(&c->departed_ns, __ATOMIC_ACQUIRE);
		if (gone && now - gone > WORKER_DEPART_STUCK_NS &&
		    !__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
			st->stuck_clients++;
			if (!c->stuck_logged)
				worker_log(w,
					   "%s: its thread is still in a call "
					   "%.1f s after the client left",
					   c->label, (now - gone) / 1e9);
			c->stuck_logged = true;
			if (client_wedged(c, now, gpu_idle))
				st->wedged_clients++;
		} else if (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
			client_wedged(c, now, false); /* keeps the clock */
		}
		if (!__atomic_load_n(&c->serving, __ATOMIC_ACQUIRE))
			continue;
		st->kernels +=
			__atomic_load_n(&c->sess.kernels, __ATOMIC_RELAXED);
		st->bytes_copied += __atomic_load_n(&c->sess.bytes_copied,
						    __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&w->clients_lock);
	/*
	 * Not nested in clients_lock: the fault path takes them the other
	 * way round. Never waited for: the main loop's stats are vgpud's
	 * sign that the worker lives (daemon_liveness.c), and a lock a
	 * client thread holds across the driver must not stop them (the
	 * driver makes some calls wait for all work of the context, a host
	 * function another client never runs included; measured on the
	 * H200 the mappings under this lock do not, but nothing promises
	 * it). Busy: the last figures again.
	 */
	if (pthread_rwlock_tryrdlock(&w->mem_lock) == 0) {
		w->stats_memory_used = w->mem.used;
		w->stats_memory_mapped = w->mem.mapped;
		pthread_rwlock_unlock(&w->mem_lock);
	}
	st->memory_used = w->stats_memory_used;
	st->memory_mapped = w->stats_memory_mapped;
}

/* ---- dynamic partitioning (worker_part.h) ------------------------------ */

void worker_client_publish_change(struct worker *w, uint32_t count)
{
	struct worker_client *c;

	pthread_mutex_lock(&w->clients_lock);
	for (c = w->clients; c; c = c->next)
		ring_store_release(&c->hdr->change_count, count);
	pthread_mutex_unlock(&w->clients_lock);
}

void worker_client_kick_all(struct worker *w)
{
	struct worker_client *c;
	uint64_t one = 1;
	ssize_t n;

	pthread_mutex_lock(&w->clients_lock);
	for (c = w->clients; c; c = c->next) {
		if (c->kick_fd < 0)
			continue;
		n = write(c->kick_fd, &one, sizeof(one));
		(void)n;
	}
	pthread_mutex_unlock(&w->clients_lock);
}

struct worker_session **worker_client_sessions(struct worker *w, uint32_t *n)
{
	struct worker_session **v;
	struct worker_client *c;
	uint32_t k = 0;

	pthread_mutex_lock(&w->clients_lock);
	v = calloc(w->nclients + 1, sizeof(*v));
	for (c = w->clients; v && c; c = c->next)
		if (__atomic_load_n(&c->serving, __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) &&
		    k < w->nclients)
			v[k++] = &c->sess;
	pthread_mutex_unlock(&w->clients_lock);
	*n = k;
	return v;
}

bool worker_client_any_active(struct worker *w)
{
	struct worker_client *c;
	bool any = false;

	pthread_mutex_lock(&w->clients_lock);
	for (c = w->clients; c && !any; c = c->next)
		any = __atomic_load_n(&c->active, __ATOMIC_SEQ_CST) &&
		      !__atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&w->clients_lock);
	return any;
}

uint32_t worker_client_queue_depth(struct worker *w)
{
	struct worker_client *c;
	uint32_t n = 0, used;

	pthread_mutex_lock(&w->clients_lock);
	for (c = w->clients; c; c = c->next) {
		if (!__atomic_load_n(&c->serving, __ATOMIC_ACQUIRE))
			continue;
		/* a statistic only: whatever the client wrote, at most a
		 * ring's worth counts */
		used = ring_used(ring_load_acquire(&c->hdr->cq_tail),
				 ring_load_acquire(&c->hdr->sq_tail));
		n += used > c->lay.sq_entries ? c->lay.sq_entries : used;
	}
	pthread_mutex_unlock(&w->clients_lock);
	return n;
}
