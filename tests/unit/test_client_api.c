/* SPDX-License-Identifier: MIT */
/*
 * The guest library's driver API without a real vgpud: calls before
 * cuInit, cuGetProcAddress's version rules, cuInit's one-line reasons for
 * having no device, and a run against a fake vgpud/worker (a socket and
 * a ring served by a thread of this process) for contexts, handle
 * validation and a worker that dies.
 *
 * cuInit runs once per process, so every cuInit scenario runs in a
 * child process (fork) and reports through its exit status and stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <cuda.h>
#include <vgpu/ring.h>

#define FAKE_VA 0x500000000000ull

enum fake_mode {
	FAKE_REFUSE,   /* reply NO_SUCH_VGPU with a message */
	FAKE_NO_FDS,   /* reply OK without the descriptors */
	FAKE_BAD_RING, /* reply OK with a ring whose header is garbage */
	FAKE_SERVE,    /* a working ring, served until told to die */
};

struct fake_vgpud {
	char path[108];
	int listen_fd;
	enum fake_mode mode;
	pthread_t thread;
	int die;  /* FAKE_SERVE: mark the ring DEAD (700) and stop */
	int dead; /* ... done */
};

static void send_reply(int fd, int32_t status, const char *msg,
		       uint64_t ring_size, const int *fds, int nfds)
{
	struct vgpu_hello_reply r = {.magic = VGPU_PROTO_MAGIC,
				     .major = VGPU_PROTO_MAJOR,
				     .status = status,
				     .ring_size = ring_size};
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {&r, sizeof(r)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};

	snprintf(r.message, sizeof(r.message), "%s", msg);
	memset(&ctl, 0, sizeof(ctl));
	if (nfds) {
		struct cmsghdr *c;

		m.msg_control = ctl.buf;
		m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	(void)!sendmsg(fd, &m, 0);
}

/* The worker side of FAKE_SERVE: a few opcodes, enough for the API. */
static void serve(struct fake_vgpud *v, int sock)
{
	struct ring_layout l;
	struct vgpu_ring_header *h;
	uint32_t head = 0, cq_tail = 0;
	int fds[3];
	char *map, *data;

	ring_layout_compute(&l, 64, 64, 1u << 20);
	fds[0] = memfd_create("fake-ring", MFD_CLOEXEC);
	fds[1] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	fds[2] = eventfd(0, EFD_CLOEXEC);
	if (ftruncate(fds[0], (off_t)l.total_size))
		return;
	map = mmap(NULL, l.total_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fds[0], 0);
	h = (struct vgpu_ring_header *)map;
	data = map + l.data_offset;
	h->magic = VGPU_PROTO_MAGIC;
	h->major = VGPU_PROTO_MAJOR;
	h->sq_entries = l.sq_entries;
	h->cq_entries = l.cq_entries;
	h->sq_offset = l.sq_offset;
	h->cq_offset = l.cq_offset;
	h->data_offset = l.data_offset;
	h->data_size = l.data_size;
	h->total_size = l.total_size;
	if (v->mode == FAKE_BAD_RING)
		h->sq_entries = 3;
	send_reply(sock, VGPU_HELLO_OK, "", l.total_size, fds, 3);
	while (v->mode == FAKE_SERVE) {
		struct vgpu_sqe q;
		struct vgpu_cqe c = {0};

		if (__atomic_load_n(&v->die, __ATOMIC_ACQUIRE)) {
			h->error = CUDA_ERROR_ILLEGAL_ADDRESS;
			ring_store_release(&h->status, VGPU_RING_DEAD);
			(void)!write(fds[2], &(uint64_t){1}, 8);
			__atomic_store_n(&v->dead, 1, __ATOMIC_RELEASE);
			break;
		}
		if (ring_load_acquire(&h->sq_tail) == head) {
			usleep(50);
			continue;
		}
		q = *ring_sqe(map, l.sq_offset, l.sq_entries, head);
		ring_store_release(&h->sq_head, ++head);
		c.tag = q.tag;
		switch (q.opcode) {
		case VGPU_OP_GET_DEVICE_INFO: {
			struct vgpu_device_info info = {0};

			strcpy(info.name, "vGPU fake: 8-SM slice of nothing");
			info.sm_count = 8;
			info.cc_major = 9;
			info.memory_quota = 1u << 30;
			info.attrs[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK] =
				1024;
			memcpy(data + q.a[0], &info, sizeof(info));
			break;
		}
		case VGPU_OP_MEM_ALLOC:
			c.r[0] = FAKE_VA;
			break;
		case VGPU_OP_STREAM_CREATE:
			c.r[0] = 7;
			break;
		case VGPU_OP_EVENT_CREATE:
			c.r[0] = 9;
			break;
		case VGPU_OP_MEMSET:
			/* fails asynchronously: reported at the next sync */
			c.status = CUDA_ERROR_INVALID_VALUE;
			break;
		default:
			break;
		}
		*ring_cqe(map, l.cq_offset, l.cq_entries, cq_tail) = c;
		ring_store_release(&h->cq_tail, ++cq_tail);
		ring_full_barrier();
		if (h->client_sleeping)
			(void)!write(fds[2], &(uint64_t){1}, 8);
	}
	/* keep the socket open until the client is gone */
	if (v->mode == FAKE_SERVE) {
		char b;

		while (read(sock, &b, 1) > 0)
			;
	}
	munmap(map, l.total_size);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
}

static void *fake_vgpud_main(void *arg)
{
	struct fake_vgpud *v = arg;
	struct vgpu_hello hello;
	int fd = accept(v->listen_fd, NULL, NULL);

	if (fd < 0)
		return NULL;
	if (recv(fd, &hello, sizeof(hello), 0) == sizeof(hello)) {
		switch (v->mode) {
		case FAKE_REFUSE:
			send_reply(fd, VGPU_HELLO_NO_SUCH_VGPU,
				   "there is no vGPU named 'zz'", 0, NULL, 0);
			break;
		case FAKE_NO_FDS:
			send_reply(fd, VGPU_HELLO_OK, "", 1u << 20, NULL, 0);
			break;
		default:
			serve(v, fd);
		}
	}
	close(fd);
	return NULL;
}

static void fake_vgpud_start(struct fake_vgpud *v, enum fake_mode mode)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	memset(v, 0, sizeof(*v));
	v->mode = mode;
	snprintf(v->path, sizeof(v->path), "/tmp/vgpu-client-test-%d.sock",
		 (int)getpid());
	unlink(v->path);
	strcpy(sa.sun_path, v->path);
	v->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(v->listen_fd >= 0);
	assert_int_equal(bind(v->listen_fd, (struct sockaddr *)&sa, sizeof(sa)),
			 0);
	assert_int_equal(listen(v->listen_fd, 4), 0);
	assert_int_equal(pthread_create(&v->thread, NULL, fake_vgpud_main, v),
			 0);
}

static void fake_vgpud_stop(struct fake_vgpud *v)
{
	shutdown(v->listen_fd, SHUT_RDWR);
	pthread_join(v->thread, NULL);
	close(v->listen_fd);
	unlink(v->path);
}

/*
 * Runs cuInit in a child with VGPU/VGPU_SOCKET as given; returns the
 * child's cuInit result and its stderr in err.
 */
static int child_cuinit(const char *vgpu, const char *sock, char *err,
			size_t errlen)
{
	int p[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 2);
		if (vgpu)
			setenv("VGPU", vgpu, 1);
		else
			unsetenv("VGPU");
		if (sock)
			setenv("VGPU_SOCKET", sock, 1);
		else
			unsetenv("VGPU_SOCKET");
		unsetenv("VGPU_DEVICE");
		_exit(cuInit(0));
	}
	close(p[1]);
	while ((n = read(p[0], err + got, errlen - 1 - (size_t)got)) > 0)
		got += n;
	err[got] = '\0';
	close(p[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* True when s is exactly one "vgpu: ..." line. */
static int one_line(const char *s)
{
	const char *nl = strchr(s, '\n');

	return strncmp(s, "vgpu: ", 6) == 0 && nl && nl[1] == '\0';
}

static void api_calls_before_cuinit_are_not_initialized(void **state)
{
	CUdeviceptr p;
	CUcontext ctx;
	int n = 0;

	(void)state;
	assert_int_equal(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(cuMemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(cuCtxGetCurrent(&ctx), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(cuDriverGetVersion(&n), CUDA_SUCCESS);
	assert_int_equal(n, CUDA_VERSION);
	assert_int_equal(cuInit(1), CUDA_ERROR_INVALID_VALUE);
}

static void api_proc_address_honours_versions(void **state)
{
	CUdriverProcAddressQueryResult st;
	void *fn;

	(void)state;
	assert_int_equal(cuGetProcAddress("cuMemAlloc", &fn, 12000, 0, &st),
			 CUDA_SUCCESS);
	assert_ptr_equal(fn, (void *)cuMemAlloc_v2);
	assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);
	/* cuMemcpy came with CUDA 4.0 (procmap-cuda13.txt) */
	/* not found: CUDA_SUCCESS, fn NULL and the reason, as cuda.h says */
	assert_int_equal(cuGetProcAddress("cuMemcpy", &fn, 3020, 0, &st),
			 CUDA_SUCCESS);
	assert_int_equal(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	assert_null(fn);
	assert_int_equal(cuGetProcAddress("cuCtxCreate", &fn, 13000, 0, &st),
			 CUDA_SUCCESS);
	assert_ptr_equal(fn, (void *)cuCtxCreate_v4);
	assert_int_equal(
		cuGetProcAddress("cuEventElapsedTime", &fn, 12000, 0, &st),
		CUDA_SUCCESS);
	assert_ptr_not_equal(fn, (void *)cuEventElapsedTime_v2);
	assert_int_equal(
		cuGetProcAddress("cuMemcpyHtoD", &fn, 13000,
				 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
				 &st),
		CUDA_SUCCESS);
	assert_ptr_not_equal(fn, (void *)cuMemcpyHtoD_v2);
	assert_int_equal(cuGetProcAddress("cuMemcpyHtoD", &fn, 13000,
					  CU_GET_PROC_ADDRESS_LEGACY_STREAM,
					  &st),
			 CUDA_SUCCESS);
	assert_ptr_equal(fn, (void *)cuMemcpyHtoD_v2);
	assert_int_equal(cuGetProcAddress("cuNoSuchCall", &fn, 13000, 0, &st),
			 CUDA_SUCCESS);
	assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	assert_null(fn);
	assert_int_equal(cuGetProcAddress("cuInit", &fn, 13000, 4, &st),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGetProcAddress("cuInit", NULL, 13000, 0, &st),
			 CUDA_ERROR_INVALID_VALUE);
}

static void api_cuinit_says_why_there_is_no_device(void **state)
{
	struct fake_vgpud v;
	char err[1024];

	(void)state;
	assert_int_equal(
		child_cuinit(NULL, "/nonexistent/x.sock", err, sizeof(err)),
		CUDA_ERROR_NO_DEVICE);
	assert_string_equal(err,
			    "vgpu: VGPU is not set: name the vGPU to use\n");
	/* nothing set and no /dev/vgpu0: a sentence for a VM and a host */
	if (access("/dev/vgpu0", F_OK) != 0) {
		assert_int_equal(child_cuinit(NULL, NULL, err, sizeof(err)),
				 CUDA_ERROR_NO_DEVICE);
		assert_non_null(strstr(err, "in a VM there is no /dev/vgpu0"));
		assert_non_null(strstr(err, "on a host, set VGPU"));
	}
	assert_int_equal(
		child_cuinit("a", "/nonexistent/x.sock", err, sizeof(err)),
		CUDA_ERROR_NO_DEVICE);
	assert_string_equal(err, "vgpu: cannot reach vgpud at "
				 "/nonexistent/x.sock: No such file or "
				 "directory\n");

	fake_vgpud_start(&v, FAKE_REFUSE);
	assert_int_equal(child_cuinit("zz", v.path, err, sizeof(err)),
			 CUDA_ERROR_NO_DEVICE);
	assert_string_equal(err, "vgpu: there is no vGPU named 'zz'\n");
	fake_vgpud_stop(&v);

	fake_vgpud_start(&v, FAKE_NO_FDS);
	assert_int_equal(child_cuinit("a", v.path, err, sizeof(err)),
			 CUDA_ERROR_NO_DEVICE);
	assert_non_null(strstr(err, "descriptors"));
	assert_true(one_line(err));
	fake_vgpud_stop(&v);

	fake_vgpud_start(&v, FAKE_BAD_RING);
	assert_int_equal(child_cuinit("a", v.path, err, sizeof(err)),
			 CUDA_ERROR_NO_DEVICE);
	assert_non_null(strstr(err, "queue entries"));
	assert_true(one_line(err));
	fake_vgpud_stop(&v);
}

#define CHILD_EXPECT(call, want)                                               \
	do {                                                                   \
		CUresult r_ = (call);                                          \
		if (r_ != (want)) {                                            \
			fprintf(stderr, "%s: got %d, want %d\n", #call,        \
				(int)r_, (int)(want));                         \
			_exit(1);                                              \
		}                                                              \
	} while (0)

/* The child's side of the fake-worker run; exits 0 when all held. */
static void child_api_run(struct fake_vgpud *v)
{
	CUcontext ctx, ctx2, cur;
	CUstream s;
	CUevent e;
	CUdeviceptr p;
	char name[64];
	int n;

	setenv("VGPU", "fake", 1);
	setenv("VGPU_SOCKET", v->path, 1);
	n = cuInit(0);
	unlink(v->path); /* connected or not: this child _exits */
	CHILD_EXPECT((CUresult)n, CUDA_SUCCESS);
	CHILD_EXPECT(cuDeviceGetName(name, 10, 0), CUDA_SUCCESS);
	if (strcmp(name, "vGPU fake") != 0)
		_exit(2);
	CHILD_EXPECT(cuDeviceGetAttribute(
			     &n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0),
		     CUDA_SUCCESS);
	if (n != 8)
		_exit(3);
	CHILD_EXPECT(cuDeviceGetAttribute(&n, (CUdevice_attribute)0, 0),
		     CUDA_ERROR_INVALID_VALUE);
	CHILD_EXPECT(cuDeviceGet(&n, 1), CUDA_ERROR_INVALID_DEVICE);

	/* no context yet */
	CHILD_EXPECT(cuMemAlloc(&p, 64), CUDA_ERROR_INVALID_CONTEXT);
	CHILD_EXPECT(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
	CHILD_EXPECT(cuCtxPopCurrent(&cur), CUDA_ERROR_INVALID_CONTEXT);
	CHILD_EXPECT(cuCtxSetCurrent((CUcontext)(uintptr_t)0x1000),
		     CUDA_ERROR_INVALID_CONTEXT);

	/* a stack of contexts */
	CHILD_EXPECT(cuCtxCreate(&ctx, NULL, 0, 0), CUDA_SUCCESS);
	CHILD_EXPECT(cuDevicePrimaryCtxRetain(&ctx2, 0), CUDA_SUCCESS);
	CHILD_EXPECT(cuCtxDestroy(ctx2), CUDA_ERROR_INVALID_CONTEXT);
	CHILD_EXPECT(cuCtxPushCurrent(ctx2), CUDA_SUCCESS);
	CHILD_EXPECT(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
	if (cur != ctx2)
		_exit(4);
	CHILD_EXPECT(cuCtxPopCurrent(&cur), CUDA_SUCCESS);
	CHILD_EXPECT(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
	if (cur != ctx || cur == ctx2)
		_exit(5);

	/* handles: garbage is refused, stale too */
	CHILD_EXPECT(cuStreamSynchronize((CUstream)(uintptr_t)0xdeadbeef),
		     CUDA_ERROR_INVALID_HANDLE);
	CHILD_EXPECT(cuStreamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);
	CHILD_EXPECT(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	CHILD_EXPECT(cuEventCreate(&e, 0), CUDA_SUCCESS);
	CHILD_EXPECT(cuEventRecord(e, s), CUDA_SUCCESS);
	CHILD_EXPECT(cuEventRecord((CUevent)s, s), CUDA_ERROR_INVALID_HANDLE);
	CHILD_EXPECT(cuStreamDestroy(s), CUDA_SUCCESS);
	CHILD_EXPECT(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
	CHILD_EXPECT(cuEventRecord(e, s), CUDA_ERROR_INVALID_HANDLE);
	CHILD_EXPECT(cuLaunchKernel((CUfunction)e, 1, 1, 1, 1, 1, 1, 0, NULL,
				    NULL, NULL),
		     CUDA_ERROR_INVALID_HANDLE);

	/* memory: only allocation starts can be freed; unified copies */
	CHILD_EXPECT(cuMemAlloc(&p, 4096), CUDA_SUCCESS);
	if (p != FAKE_VA)
		_exit(6);
	CHILD_EXPECT(cuMemFree(p + 16), CUDA_ERROR_INVALID_VALUE);
	CHILD_EXPECT(cuMemsetD32(p + 2, 0, 4), CUDA_ERROR_INVALID_VALUE);

	/* an asynchronous failure comes with the next synchronizing call */
	CHILD_EXPECT(cuMemsetD8Async(p, 0, 1, NULL), CUDA_SUCCESS);
	CHILD_EXPECT(cuCtxSynchronize(), CUDA_ERROR_INVALID_VALUE);
	CHILD_EXPECT(cuCtxSynchronize(), CUDA_SUCCESS);

	/* the worker dies: every later call fails, none hangs */
	__atomic_store_n(&v->die, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&v->dead, __ATOMIC_ACQUIRE))
		usleep(100);
	CHILD_EXPECT(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	CHILD_EXPECT(cuMemFree(p), CUDA_ERROR_ILLEGAL_ADDRESS);
	CHILD_EXPECT(cuStreamCreate(&s, 0), CUDA_ERROR_ILLEGAL_ADDRESS);
	/* device queries still answer from the cached description */
	CHILD_EXPECT(cuDeviceGetCount(&n), CUDA_SUCCESS);
	_exit(0);
}

static void api_runs_against_a_fake_worker(void **state)
{
	struct fake_vgpud v;
	int status;
	pid_t pid;

	(void)state;
	/* the serving thread lives in the child, next to the library */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fake_vgpud_start(&v, FAKE_SERVE);
		child_api_run(&v);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(api_calls_before_cuinit_are_not_initialized),
		cmocka_unit_test(api_proc_address_honours_versions),
		cmocka_unit_test(api_cuinit_says_why_there_is_no_device),
		cmocka_unit_test(api_runs_against_a_fake_worker),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
