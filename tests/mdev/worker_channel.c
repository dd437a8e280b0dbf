/* SPDX-License-Identifier: MIT */
/*
 * worker_channel WORKER LOG: drives one vgpu-worker (sim backend) through
 * VGPU_CTL_CHANNEL the way vgpud and vgpu_mdev.ko will: a BAR2 memfd, two
 * eventfds and a socketpair per channel; descriptors written into the
 * ring, the submit eventfd signalled, the completion eventfd waited on.
 * Then the hostile cases: bad windows, wrong kinds of descriptors,
 * garbage in the ring, a channel closed mid-copy. Prints TAP; the worker's
 * stderr goes to LOG, which the refusal tests read.
 */
#include <cuda.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <vgpu/control.h>
#include <vgpu/pci.h>

#include "ctl_msg.h"
#include "tring.h"

#define WAIT_MS	   10000
#define BAR2_CHANS 3
#define STRIDE	   ((uint64_t)VGPU_PCI_CHANNEL_STRIDE)

static int tap_n, tap_failed;
static const char *log_path;

static void tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	if (!ok)
		tap_failed++;
	printf("%sok %d - ", ok ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the worker ------------------------------------------------------- */

struct wk {
	pid_t pid;
	int ctl;
	struct vgpu_ctl_stats stats; /* the latest */
};

static int worker_spawn(struct wk *k, const char *bin)
{
	struct vgpu_worker_config cfg = {0};
	struct vgpu_ctl_ready ready;
	int sv[2], logfd;
	uint32_t type, len;
	int64_t end;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	logfd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	k->pid = fork();
	if (k->pid == 0) {
		char fd[16];

		snprintf(fd, sizeof(fd), "%d", sv[1]);
		fcntl(sv[1], F_SETFD, 0);
		dup2(logfd, 2);
		setenv("VGPU_ALLOW_ROOT_WORKER", "1", 1);
		execl(bin, bin, "--ctl-fd", fd, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	close(logfd);
	k->ctl = sv[0];
	snprintf(cfg.name, sizeof(cfg.name), "chan-test");
	cfg.backend = VGPU_BACKEND_SIM;
	cfg.ngroups = 1;
	cfg.va_base = 0x600000000000ull;
	cfg.va_size = 1ull << 40;
	cfg.memory_quota = 256ull << 20;
	cfg.max_clients = 8;
	if (ctl_send(k->ctl, VGPU_CTL_CONFIG, &cfg, sizeof(cfg), -1))
		return -1;
	end = now_ms() + 60000;
	while (now_ms() < end) {
		struct pollfd p = {.fd = k->ctl, .events = POLLIN};

		if (poll(&p, 1, 1000) <= 0)
			continue;
		if (ctl_recv(k->ctl, &type, &ready, sizeof(ready), &len, NULL))
			return -1;
		if (type == VGPU_CTL_READY)
			return ready.status;
	}
	return -1;
}

/* Read control messages until stats satisfy pred (or the time is up). */
static bool stats_wait(struct wk *k,
		       bool (*pred)(const struct vgpu_ctl_stats *, uint64_t),
		       uint64_t arg)
{
	int64_t end = now_ms() + WAIT_MS;
	union {
		struct vgpu_ctl_stats st;
		char buf[512];
	} m;
	uint32_t type, len;

	while (now_ms() < end) {
		struct pollfd p = {.fd = k->ctl, .events = POLLIN};

		if (poll(&p, 1, 200) <= 0)
			continue;
		if (ctl_recv(k->ctl, &type, &m, sizeof(m), &len, NULL))
			return false;
		if (type != VGPU_CTL_STATS || len != sizeof(m.st))
			continue;
		k->stats = m.st;
		if (pred(&m.st, arg))
			return true;
	}
	return false;
}

static bool idle_with(const struct vgpu_ctl_stats *s, uint64_t used)
{
	return s->clients == 0 && s->memory_used == used;
}

static bool clients_are(const struct vgpu_ctl_stats *s, uint64_t n)
{
	return s->clients == n;
}

static bool used_is(const struct vgpu_ctl_stats *s, uint64_t used)
{
	return s->memory_used == used;
}

static int count_fds(pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Lines of the worker's log that hold text. */
static int log_count(const char *text)
{
	FILE *f = fopen(log_path, "r");
	char line[1024];
	int n = 0;

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, text))
			n++;
	if (f)
		fclose(f);
	return n;
}

/* Wait until the log holds more than `before` lines with text. */
static bool log_has_new(const char *text, int before)
{
	int64_t end = now_ms() + WAIT_MS;

	while (now_ms() < end) {
		if (log_count(text) > before)
			return true;
		usleep(50000);
	}
	return false;
}

static bool log_has(const char *text)
{
	return log_has_new(text, 0);
}

/* ---- channels --------------------------------------------------------- */

struct chan {
	int sock, submit, complete; /* our ends (vgpud's and the module's) */
	struct tring r;
};

/* A BAR2 memfd of n channels, sealed as vgpud seals it (or not). */
static int bar2_create(unsigned n, bool seal)
{
	int fd = memfd_create("bar2", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)(n * STRIDE)) < 0)
		return -1;
	if (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		return -1;
	return fd;
}

/* Send CHANNEL with these four descriptors (closed here afterwards). */
static int channel_send(struct wk *k, int fds[4], int nfds, uint32_t idx,
			uint64_t off, uint64_t size)
{
	struct vgpu_ctl_channel ch = {.instance = 7,
				      .channel = idx,
				      .ring_offset = off,
				      .ring_size = size};
	int i, rc;

	rc = ctl_send_n(k->ctl, VGPU_CTL_CHANNEL, &ch, sizeof(ch), fds, nfds);
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	return rc;
}

/* The worker's hello reply: 1 (with *nfds), 0 for EOF, -1 timeout. */
static int reply_wait(int sock, struct vgpu_hello_reply *r, int *nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 4)];
	struct iovec iov = {.iov_base = r, .iov_len = sizeof(*r)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf)};
	struct pollfd p = {.fd = sock, .events = POLLIN};
	struct cmsghdr *cm;
	ssize_t n;

	*nfds = 0;
	if (poll(&p, 1, WAIT_MS) <= 0)
		return -1;
	n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return 0;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_type == SCM_RIGHTS)
			*nfds += (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	return n == sizeof(*r) ? 1 : -1;
}

/* EOF on our end of the channel socket within WAIT_MS: 1. */
static int eof_wait(int sock)
{
	int64_t end = now_ms() + WAIT_MS;
	char b[512];

	while (now_ms() < end) {
		struct pollfd p = {.fd = sock, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 200) <= 0)
			continue;
		n = recv(sock, b, sizeof(b), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN))
			return 1;
	}
	return 0;
}

/*
 * Open channel idx at [off, off + size) of bar2: socketpair, eventfds,
 * CHANNEL, the reply, the ring. Returns the reply status (or -1).
 */
static int channel_open(struct wk *k, int bar2, struct chan *c, uint32_t idx,
			uint64_t off, uint64_t size, int *reply_fds)
{
	struct vgpu_hello_reply rep;
	int sv[2], fds[4], got;

	memset(c, 0, sizeof(*c));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	c->sock = sv[0];
	c->submit = eventfd(0, EFD_CLOEXEC);
	c->complete = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	fds[0] = sv[1];
	fds[1] = dup(bar2);
	fds[2] = dup(c->submit);
	fds[3] = dup(c->complete);
	if (channel_send(k, fds, 4, idx, off, size))
		return -1;
	got = reply_wait(c->sock, &rep, reply_fds);
	if (got != 1)
		return -1;
	if (rep.status != VGPU_HELLO_OK) {
		rep.message[sizeof(rep.message) - 1] = 0;
		fprintf(stderr, "# refused: %s\n", rep.message);
		return rep.status;
	}
	if (rep.ring_size != size ||
	    tring_open(&c->r, bar2, off, size, c->submit, c->complete))
		return -1;
	return 0;
}

static int channel_close(struct chan *c)
{
	int eof;

	shutdown(c->sock, SHUT_WR);
	eof = eof_wait(c->sock);
	tring_close(&c->r);
	close(c->sock);
	close(c->submit);
	close(c->complete);
	return eof;
}

/* ---- the tests -------------------------------------------------------- */

static void test_basics(struct wk *k, int bar2)
{
	struct chan c0, c1;
	struct vgpu_sqe sqe;
	struct vgpu_cqe cqe;
	uint64_t p0, p1, i;
	uint8_t *src, *dst;
	int nfds = -1, rc;

	rc = channel_open(k, bar2, &c0, 0, 0, STRIDE, &nfds);
	tap(rc == 0 && nfds == 0,
	    "channel 0 opens: hello reply OK with no descriptors, ring laid "
	    "out in the window");
	if (rc)
		return;
	tap(c0.r.lay.data_size == STRIDE - c0.r.lay.data_offset &&
		    c0.r.lay.sq_entries == VGPU_RING_SQ_ENTRIES,
	    "the data area fills the window (%llu bytes)",
	    (unsigned long long)c0.r.lay.data_size);

	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = VGPU_OP_NOP;
	tap(tring_call(&c0.r, &sqe, &cqe) == CUDA_SUCCESS,
	    "NOP completes through the eventfd doorbells");

	p0 = tring_alloc(&c0.r, 4 << 20);
	src = tring_data(&c0.r, 0);
	dst = tring_data(&c0.r, 8 << 20);
	for (i = 0; i < (4 << 20); i++)
		src[i] = (uint8_t)(i * 7 + 3);
	memset(dst, 0, 4 << 20);
	rc = p0 ? tring_copy(&c0.r, VGPU_OP_MEMCPY_HTOD, p0, 0, 4 << 20) : -1;
	if (!rc)
		rc = tring_copy(&c0.r, VGPU_OP_MEMCPY_DTOH, p0, 8 << 20,
				4 << 20);
	tap(p0 && rc == 0 && !memcmp(src, dst, 4 << 20),
	    "MEM_ALLOC + MEMCPY HTOD/DTOH round trip of 4 MiB");

	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = VGPU_OP_HOST_REGION_CREATE;
	sqe.a[0] = 4096;
	tap(tring_call(&c0.r, &sqe, &cqe) == CUDA_ERROR_NOT_SUPPORTED,
	    "HOST_REGION_CREATE on a channel: NOT_SUPPORTED");

	rc = channel_open(k, bar2, &c1, 1, STRIDE, STRIDE, &nfds);
	tap(rc == 0, "channel 1 opens in the next window of the same memfd");
	if (rc)
		goto close0;
	p1 = tring_alloc(&c1.r, 2 << 20);
	rc = tring_copy(&c1.r, VGPU_OP_MEMCPY_DTOH, p0, 0, 4096);
	tap(p1 && rc == CUDA_ERROR_INVALID_VALUE,
	    "channel 1 cannot read channel 0's memory (status %d)", rc);
	tap(stats_wait(k, clients_are, 2) && k->stats.memory_used == (6 << 20),
	    "stats: 2 clients, 6 MiB used");
	tap(channel_close(&c1) && stats_wait(k, used_is, 4 << 20),
	    "closing channel 1 (SHUT_WR) ends it: EOF, its 2 MiB freed, "
	    "channel 0's kept");
	rc = tring_copy(&c0.r, VGPU_OP_MEMCPY_DTOH, p0, 8 << 20, 4096);
	tap(rc == 0, "channel 0 still works");
close0:
	tap(channel_close(&c0) && stats_wait(k, idle_with, 0),
	    "closing channel 0: EOF, no clients, no memory left");

	rc = channel_open(k, bar2, &c0, 0, 0, STRIDE, &nfds);
	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = VGPU_OP_NOP;
	tap(rc == 0 && tring_call(&c0.r, &sqe, &cqe) == CUDA_SUCCESS,
	    "channel 0 opens again in the used window with a fresh header");
	if (!rc)
		channel_close(&c0);

	rc = channel_open(k, bar2, &c0, 2, 2 * STRIDE, 2 << 20, &nfds);
	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = VGPU_OP_NOP;
	tap(rc == 0 && tring_call(&c0.r, &sqe, &cqe) == CUDA_SUCCESS,
	    "a 2 MiB ring (smaller than the stride) works");
	if (!rc)
		channel_close(&c0);
}

/*
 * One refused channel: fds as given (closed), expect no OK reply and a
 * log line holding why.
 */
static void refuse_case(struct wk *k, int fds[4], uint64_t off, uint64_t size,
			int sock, const char *why, const char *name)
{
	struct vgpu_hello_reply rep;
	int nfds, got, before = log_count(why);

	channel_send(k, fds, 4, 0, off, size);
	got = sock >= 0 ? reply_wait(sock, &rep, &nfds) : 0;
	tap((got == 0 || (got == 1 && rep.status != VGPU_HELLO_OK)) &&
		    log_has_new(why, before),
	    "refused: %s (\"%s\")", name, why);
	if (sock >= 0)
		close(sock);
}

/* fds for a channel: a fresh socketpair end, bar2, two eventfds. */
static int fresh(int fds[4], int bar2)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	fds[0] = sv[1];
	fds[1] = dup(bar2);
	fds[2] = eventfd(0, EFD_CLOEXEC);
	fds[3] = eventfd(0, EFD_CLOEXEC);
	return sv[0];
}

static void test_refusals(struct wk *k, int bar2)
{
	int fds[4], s, pipefd[2], loose, before, after;

	stats_wait(k, idle_with, 0);
	before = count_fds(k->pid);

	s = fresh(fds, bar2);
	refuse_case(k, fds, 4097, STRIDE, s, "is not page-aligned",
		    "offset not page-aligned");
	s = fresh(fds, bar2);
	refuse_case(k, fds, 0, STRIDE - 100, s, "is not a multiple",
		    "size not a page multiple");
	s = fresh(fds, bar2);
	refuse_case(k, fds, 0, 2 * STRIDE, s, "larger than a channel",
		    "size above the channel stride");
	s = fresh(fds, bar2);
	refuse_case(k, fds, 0, 512 << 10, s, "less than",
		    "ring too small for the queues and 1 MiB of data");
	s = fresh(fds, bar2);
	refuse_case(k, fds, BAR2_CHANS * STRIDE, STRIDE, s,
		    "ends beyond the memfd", "window beyond the memfd");
	s = fresh(fds, bar2);
	refuse_case(k, fds, (uint64_t)-4096, 1ull << 21, s,
		    "ends beyond the memfd", "offset + size overflows");

	loose = bar2_create(1, false);
	s = fresh(fds, bar2);
	close(fds[1]);
	fds[1] = loose;
	refuse_case(k, fds, 0, STRIDE, s, "not sealed", "memfd not sealed");

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return;
	s = fresh(fds, bar2);
	close(fds[1]);
	fds[1] = pipefd[0];
	refuse_case(k, fds, 0, STRIDE, s, "not a memfd", "memfd slot: a pipe");
	s = fresh(fds, bar2);
	close(fds[2]);
	fds[2] = pipefd[1];
	refuse_case(k, fds, 0, STRIDE, s, "descriptor 3 (submit doorbell)",
		    "submit slot: a pipe");
	s = fresh(fds, bar2);
	close(fds[3]);
	fds[3] = dup(bar2);
	refuse_case(k, fds, 0, STRIDE, s, "descriptor 4 (completion doorbell)",
		    "completion slot: a memfd");
	s = fresh(fds, bar2);
	close(s);
	close(fds[0]);
	fds[0] = eventfd(0, EFD_CLOEXEC);
	refuse_case(k, fds, 0, STRIDE, -1, "descriptor 1 is not",
		    "socket slot: an eventfd");
	{
		int sv[2];

		s = fresh(fds, bar2);
		close(s);
		close(fds[0]);
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
		fds[0] = sv[1];
		refuse_case(k, fds, 0, STRIDE, sv[0], "descriptor 1 is not",
			    "socket slot: a stream socket");
	}

	/* wrong message shapes: dropped, every descriptor closed */
	s = fresh(fds, bar2);
	channel_send(k, fds, 3, 0, 0, STRIDE);
	close(fds[3]);
	tap(eof_wait(s) && log_has("with 3 descriptors ignored"),
	    "CHANNEL with 3 descriptors: ignored, its socket closed");
	close(s);
	s = fresh(fds, bar2);
	{
		char junk[12] = {0};

		ctl_send_n(k->ctl, VGPU_CTL_CHANNEL, junk, sizeof(junk), fds,
			   4);
		close(fds[0]);
		close(fds[1]);
		close(fds[2]);
		close(fds[3]);
	}
	tap(eof_wait(s) && log_has("CHANNEL message of 12 bytes"),
	    "CHANNEL of the wrong length: ignored, its socket closed");
	close(s);

	stats_wait(k, idle_with, 0);
	after = count_fds(k->pid);
	tap(before > 0 && before == after,
	    "no descriptor leaked by the refusals (%d before, %d after)",
	    before, after);
}

static void test_hostile_ring(struct wk *k, int bar2)
{
	struct vgpu_sqe sqe;
	struct vgpu_cqe cqe;
	struct chan c;
	uint64_t p, one = 1;
	ssize_t n;
	int nfds, rc, i;

	if (channel_open(k, bar2, &c, 0, 0, STRIDE, &nfds))
		return;
	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = 999;
	rc = tring_call(&c.r, &sqe, &cqe);
	tap(rc == CUDA_ERROR_NOT_SUPPORTED, "unknown opcode: error completion");
	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = VGPU_OP_NOP;
	sqe.flags = 0x8000;
	rc = tring_call(&c.r, &sqe, &cqe);
	tap(rc != CUDA_SUCCESS && rc > 0, "undefined flags: error completion");
	p = tring_alloc(&c.r, 1 << 20);
	rc = tring_copy(&c.r, VGPU_OP_MEMCPY_HTOD, p, c.r.lay.data_size - 10,
			4096);
	tap(rc == CUDA_ERROR_INVALID_VALUE,
	    "copy from beyond the data area: INVALID_VALUE");
	ring_store_release(&c.r.hdr->sq_tail, 0x80000000u);
	n = write(c.submit, &one, sizeof(one));
	(void)n;
	tap(eof_wait(c.sock) &&
		    ring_load_acquire(&c.r.hdr->status) == VGPU_RING_BROKEN,
	    "garbage sq_tail: ring BROKEN, the worker ends the channel");
	tring_close(&c.r);
	close(c.sock);
	close(c.submit);
	close(c.complete);
	tap(stats_wait(k, idle_with, 0), "its memory is freed");

	/* closed mid-copy: 200 copies queued, then everything dropped */
	if (channel_open(k, bar2, &c, 0, 0, STRIDE, &nfds))
		return;
	p = tring_alloc(&c.r, 16 << 20);
	for (i = 0; i < 200; i++) {
		memset(&sqe, 0, sizeof(sqe));
		sqe.opcode = VGPU_OP_MEMCPY_HTOD;
		sqe.a[0] = p + (uint64_t)(i % 16) * (1 << 20);
		sqe.a[1] = (uint64_t)(i % 16) * (1 << 20);
		sqe.a[2] = 1 << 20;
		tring_post(&c.r, &sqe);
	}
	shutdown(c.sock, SHUT_RDWR);
	close(c.sock);
	close(c.submit);
	close(c.complete);
	tring_close(&c.r);
	tap(p && stats_wait(k, idle_with, 0),
	    "channel dropped mid-copy: client gone, memory freed");
	tap(kill(k->pid, 0) == 0, "the worker is still running");
}

int main(int argc, char **argv)
{
	struct wk k = {0};
	int bar2, st = 0, rc;
	int64_t end;

	if (argc != 3) {
		fprintf(stderr, "usage: worker_channel WORKER LOG\n");
		return 2;
	}
	log_path = argv[2];
	signal(SIGPIPE, SIG_IGN);
	rc = worker_spawn(&k, argv[1]);
	tap(rc == 0, "the worker starts on the simulator (READY %d)", rc);
	if (rc) {
		printf("1..%d\n", tap_n);
		return 1;
	}
	bar2 = bar2_create(BAR2_CHANS, true);
	test_basics(&k, bar2);
	test_refusals(&k, bar2);
	test_hostile_ring(&k, bar2);

	ctl_send(k.ctl, VGPU_CTL_SHUTDOWN, NULL, 0, -1);
	end = now_ms() + WAIT_MS;
	while ((rc = waitpid(k.pid, &st, WNOHANG)) == 0 && now_ms() < end)
		usleep(20000);
	tap(rc == k.pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "SHUTDOWN: the worker exits 0");
	if (rc != k.pid) {
		kill(k.pid, SIGKILL);
		waitpid(k.pid, &st, 0);
	}
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
