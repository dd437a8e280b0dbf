/* SPDX-License-Identifier: MIT */
/*
 * l2_ring MODE [DEVICE] [N]: a guest process that drives its channel of
 * the vGPU straight through /dev/vgpuN (guest_uapi.h), without the CUDA
 * library, the way a hostile or broken program could. Run inside the L2
 * guest by tests/vm-l2/l2_hostile.sh; DEVICE defaults to /dev/vgpu0.
 *
 *   nop       N (default 1000) NOPs, one at a time; prints the median
 *             round trip as "RESULT name=l2_raw_nop_median value=.. unit=us"
 *   garbage   random descriptors (each must get an error completion and
 *             the ring must keep working), then a garbage sq_tail: the
 *             worker must mark the ring BROKEN; the fd then reports it
 *   unmap     starts a 64 MiB memset, unmaps the ring before it completes,
 *             rings the doorbell again and exits without close()
 *   channels  opens the device until an open fails: prints
 *             "channels: N open, then EBUSY" (a leak shows as fewer)
 *   watch     l2_ring watch ATTR SECONDS: poll() on a sysfs attribute
 *             (the device's change_count) until it is notified; prints
 *             "watch: FROM -> TO after S s" (0), or that nothing woke it
 *             in SECONDS (1)
 *
 * Prints what it saw; exits 0 when the device behaved as described, 1 when
 * it did not, 2 on a usage error. Every wait is bounded (WAIT_S).
 */
#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <vgpu/guest_uapi.h>
#include <vgpu/protocol.h>
#include <vgpu/ring.h>

#define WAIT_S		   10
#define CHANNELS_PROBE_MAX 64 /* more than any device has */

struct chan {
	int fd;
	void *base;
	struct vgpu_ring_header *hdr;
	struct ring_layout lay; /* ours, from the header, checked */
	struct vgpu_guest_info info;
	uint32_t next_tag;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Opens a channel, maps its ring and checks the header's layout. */
static int chan_open(struct chan *c, const char *dev)
{
	const struct vgpu_ring_header *h;

	memset(c, 0, sizeof(*c));
	c->fd = open(dev, O_RDWR | O_CLOEXEC);
	if (c->fd < 0) {
		fprintf(stderr, "open %s: %s\n", dev, strerror(errno));
		return -1;
	}
	if (ioctl(c->fd, VGPU_GUEST_IOC_INFO, &c->info) < 0) {
		fprintf(stderr, "VGPU_GUEST_IOC_INFO: %s\n", strerror(errno));
		return -1;
	}
	c->base = mmap(NULL, c->info.ring_size, PROT_READ | PROT_WRITE,
		       MAP_SHARED, c->fd, 0);
	if (c->base == MAP_FAILED) {
		fprintf(stderr, "mmap %llu bytes: %s\n",
			(unsigned long long)c->info.ring_size, strerror(errno));
		return -1;
	}
	c->hdr = c->base;
	h = c->hdr;
	ring_layout_compute(&c->lay, h->sq_entries, h->cq_entries,
			    h->data_size);
	if (h->magic != VGPU_PROTO_MAGIC || h->major != VGPU_PROTO_MAJOR ||
	    !ring_is_pow2(h->sq_entries) || !ring_is_pow2(h->cq_entries) ||
	    h->sq_offset != c->lay.sq_offset ||
	    h->cq_offset != c->lay.cq_offset ||
	    h->data_offset != c->lay.data_offset ||
	    h->total_size != c->lay.total_size ||
	    h->total_size > c->info.ring_size) {
		fprintf(stderr,
			"channel %u: the ring header is not what "
			"ring.h lays out\n",
			c->info.channel);
		return -1;
	}
	printf("channel %u of %s (%u SMs), ring %llu bytes\n", c->info.channel,
	       c->info.vgpu_name, c->info.sm_count,
	       (unsigned long long)c->info.ring_size);
	return 0;
}

static int doorbell(struct chan *c)
{
	uint64_t one = 1;

	if (write(c->fd, &one, sizeof(one)) != sizeof(one)) {
		fprintf(stderr, "doorbell: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* Publishes one sqe (tag filled in) and rings the doorbell. */
static int post(struct chan *c, struct vgpu_sqe *sqe)
{
	uint32_t tail = c->hdr->sq_tail;

	sqe->tag = ++c->next_tag;
	*ring_sqe(c->base, c->lay.sq_offset, c->lay.sq_entries, tail) = *sqe;
	ring_store_release(&c->hdr->sq_tail, tail + 1);
	return doorbell(c);
}

/*
 * Waits for the next completion: spins briefly, then sleeps on the fd's
 * interrupt count with the client_sleeping handshake of protocol.h.
 * 0 with *cqe, -1 on timeout, a dead ring or a device error.
 */
static int wait_cqe(struct chan *c, struct vgpu_cqe *cqe)
{
	struct vgpu_ring_header *h = c->hdr;
	uint32_t head = h->cq_head;
	double t0 = now(), spin_until = t0 + 50e-6;
	struct pollfd p = {.fd = c->fd, .events = POLLIN};
	uint64_t count;

	while (ring_load_acquire(&h->cq_tail) == head) {
		if (ring_load_acquire(&h->status) != VGPU_RING_OK) {
			printf("ring status %u (error %d) while waiting\n",
			       h->status, h->error);
			return -1;
		}
		if (now() - t0 > WAIT_S) {
			printf("no completion within %d s\n", WAIT_S);
			return -1;
		}
		if (now() < spin_until)
			continue;
		ring_store_release(&h->client_sleeping, 1);
		ring_full_barrier();
		if (ring_load_acquire(&h->cq_tail) == head &&
		    poll(&p, 1, 100) > 0) {
			if (p.revents & (POLLERR | POLLHUP)) {
				printf("the device reports an error "
				       "(poll revents 0x%x)\n",
				       p.revents);
				ring_store_release(&h->client_sleeping, 0);
				return -1;
			}
			if (p.revents & POLLIN &&
			    read(c->fd, &count, sizeof(count)) < 0 &&
			    errno != EAGAIN)
				fprintf(stderr, "read: %s\n", strerror(errno));
		}
		ring_store_release(&h->client_sleeping, 0);
	}
	*cqe = *ring_cqe(c->base, c->lay.cq_offset, c->lay.cq_entries, head);
	ring_store_release(&h->cq_head, head + 1);
	return 0;
}

static int call(struct chan *c, struct vgpu_sqe *sqe, struct vgpu_cqe *cqe)
{
	if (post(c, sqe) < 0 || wait_cqe(c, cqe) < 0)
		return -1;
	if (cqe->tag != sqe->tag) {
		printf("completion tag %u, expected %u\n", cqe->tag, sqe->tag);
		return -1;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int mode_nop(struct chan *c, int n)
{
	double *t = calloc(n, sizeof(*t));
	struct vgpu_cqe cqe = {0};

	if (!t)
		return 1;
	for (int i = 0; i < n; i++) {
		struct vgpu_sqe sqe = {.opcode = VGPU_OP_NOP};
		double t0 = now();

		if (call(c, &sqe, &cqe) < 0 || cqe.status != CUDA_SUCCESS) {
			printf("NOP %d failed (status %d)\n", i, cqe.status);
			free(t);
			return 1;
		}
		t[i] = (now() - t0) * 1e6;
	}
	qsort(t, n, sizeof(*t), cmp_double);
	printf("RESULT name=l2_raw_nop_median value=%.1f unit=us\n", t[n / 2]);
	printf("RESULT name=l2_raw_nop_p90 value=%.1f unit=us\n",
	       t[(int)(0.9 * (n - 1))]);
	free(t);
	return 0;
}

static int mode_garbage(struct chan *c)
{
	struct vgpu_ring_header *h = c->hdr;
	unsigned long long seed = 0x5eed;
	struct vgpu_sqe sqe;
	struct vgpu_cqe cqe;
	int errors = 0;
	double t0;

	/* random descriptors under a valid tail: errors, not a crash */
	for (int i = 0; i < 64; i++) {
		unsigned char *b = (unsigned char *)&sqe;

		for (size_t k = 0; k < sizeof(sqe); k++) {
			seed = seed * 6364136223846793005ULL + 1;
			b[k] = (unsigned char)(seed >> 33);
		}
		/* no valid opcode may sneak in and do real work */
		sqe.opcode = (uint16_t)(VGPU_OP_COUNT_ + (seed & 0xff));
		if (call(c, &sqe, &cqe) < 0)
			return 1;
		errors += cqe.status != CUDA_SUCCESS;
	}
	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = VGPU_OP_NOP;
	if (call(c, &sqe, &cqe) < 0 || cqe.status != CUDA_SUCCESS) {
		printf("a NOP after 64 garbage descriptors failed\n");
		return 1;
	}
	printf("64 garbage descriptors: %d error completions; the ring still "
	       "works\n",
	       errors);
	if (errors != 64)
		return 1;
	/* garbage indices: the worker must break the ring */
	ring_store_release(&h->sq_tail, h->sq_head + 7 * c->lay.sq_entries);
	doorbell(c);
	t0 = now();
	while (ring_load_acquire(&h->status) != VGPU_RING_BROKEN) {
		if (now() - t0 > WAIT_S) {
			printf("ring status still %u %d s after a garbage "
			       "sq_tail\n",
			       h->status, WAIT_S);
			return 1;
		}
		usleep(1000);
	}
	printf("garbage sq_tail: the worker marked the ring BROKEN\n");
	t0 = now();
	if (close(c->fd) < 0)
		printf("close: %s\n", strerror(errno));
	printf("close took %.2f s\n", now() - t0);
	return now() - t0 < WAIT_S ? 0 : 1;
}

static int mode_unmap(struct chan *c)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_MEM_ALLOC};
	struct vgpu_cqe cqe = {0};
	uint64_t ptr;

	sqe.a[0] = 64u << 20;
	if (call(c, &sqe, &cqe) < 0 || cqe.status != CUDA_SUCCESS) {
		printf("MEM_ALLOC of 64 MiB failed (status %d)\n", cqe.status);
		return 1;
	}
	ptr = cqe.r[0];
	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = VGPU_OP_MEMSET;
	sqe.a[0] = ptr;
	sqe.a[1] = 0xab;
	sqe.a[2] = 64u << 20;
	sqe.a[3] = 1;
	if (post(c, &sqe) < 0)
		return 1;
	if (munmap(c->base, c->info.ring_size) < 0) {
		printf("munmap: %s\n", strerror(errno));
		return 1;
	}
	printf("unmapped the ring with a 64 MiB memset in flight\n");
	doorbell(c);
	return 0; /* exit without close(): the kernel closes the fd */
}

/* Holds as many channels as the device gives, then lets them all go. */
static int mode_channels(const char *dev)
{
	int fds[CHANNELS_PROBE_MAX], n = 0, err = 0;

	while (n < CHANNELS_PROBE_MAX) {
		fds[n] = open(dev, O_RDWR | O_CLOEXEC);
		if (fds[n] < 0) {
			err = errno;
			break;
		}
		n++;
	}
	printf("channels: %d open, then %s\n", n,
	       err == EBUSY ? "EBUSY" : strerror(err));
	while (n > 0)
		close(fds[--n]);
	return err == EBUSY ? 0 : 1;
}

/* The attribute's text from its start (sysfs: one value, a newline). */
static int attr_read(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);

	if (n < 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/*
 * Waits for a sysfs_notify on attr as a guest program would: read it
 * once (poll() reports only notifications after a read), then poll for
 * POLLPRI | POLLERR, then read it again.
 */
static int mode_watch(const char *attr, int secs)
{
	struct pollfd p = {.events = POLLPRI | POLLERR};
	char before[64], after[64];
	double t0;
	int n;

	p.fd = open(attr, O_RDONLY | O_CLOEXEC);
	if (p.fd < 0 || attr_read(p.fd, before, sizeof(before)) < 0) {
		printf("watch: %s: %s\n", attr, strerror(errno));
		return 1;
	}
	printf("watch: %s is %s; waiting\n", attr, before);
	t0 = now();
	n = poll(&p, 1, secs * 1000);
	if (n <= 0 || attr_read(p.fd, after, sizeof(after)) < 0) {
		printf("watch: nothing woke poll() in %d s (%s)\n", secs,
		       n < 0 ? strerror(errno) : "timeout");
		close(p.fd);
		return 1;
	}
	printf("watch: %s -> %s after %.2f s (revents 0x%x)\n", before, after,
	       now() - t0, p.revents);
	close(p.fd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	const char *dev = argc > 2 ? argv[2] : VGPU_GUEST_DEV_PREFIX "0";
	int n = argc > 3 ? atoi(argv[3]) : 1000;
	struct chan c;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "watch") && argc == 4)
		return mode_watch(argv[2], atoi(argv[3]));
	if (strcmp(mode, "nop") && strcmp(mode, "garbage") &&
	    strcmp(mode, "unmap") && strcmp(mode, "channels")) {
		fprintf(stderr,
			"usage: %s nop|garbage|unmap|channels [DEVICE] [N], "
			"watch ATTR SECONDS\n",
			argv[0]);
		return 2;
	}
	if (n < 1 || n > 1000000) {
		fprintf(stderr, "N must be 1..1000000\n");
		return 2;
	}
	if (!strcmp(mode, "channels"))
		return mode_channels(dev);
	if (chan_open(&c, dev) < 0)
		return 1;
	if (!strcmp(mode, "nop"))
		rc = mode_nop(&c, n);
	else if (!strcmp(mode, "garbage"))
		rc = mode_garbage(&c);
	else
		rc = mode_unmap(&c);
	printf("l2_ring %s: %s\n", mode, rc ? "FAILED" : "OK");
	return rc;
}
