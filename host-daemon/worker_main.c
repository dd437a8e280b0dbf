/* SPDX-License-Identifier: MIT */
/*
 * vgpu-worker: the process that owns one vGPU (docs/DESIGN.md).
 *
 *   vgpu-worker --ctl-fd N
 *	Serve one vGPU. The first message on the control socket N (from
 *	vgpud, SOCK_SEQPACKET) is VGPU_CTL_CONFIG; the answer is
 *	VGPU_CTL_READY. Then: VGPU_CTL_CLIENT hands over client sockets,
 *	VGPU_CTL_CHANNEL a VM's channel (ring in an mdev's BAR2),
 *	VGPU_CTL_SHUTDOWN stops; the worker sends VGPU_CTL_STATS about once
 *	a second and VGPU_CTL_FAULT before it exits on a fault.
 *
 *   vgpu-worker --probe cuda|sim --ctl-fd N
 *	Describe the GPUs: one VGPU_CTL_GPU_INFO each, then VGPU_CTL_READY
 *	with status 0 and sm_count = the number of GPUs; exit 0.
 *
 * The worker runs guest work and refuses to run as root. Environment
 * VGPU_ALLOW_ROOT_WORKER=1 overrides that, for debugging on a machine
 * where only root can reach the GPU: never in production, since a guest
 * that escapes through the worker would then own the host.
 *
 * Exit codes: enum vgpu_worker_exit (include/vgpu/control.h).
 */
#include <cuda.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <fcntl.h>

#include "ctl_msg.h"
#include "va_hold.h"
#include "worker.h"
#include "worker_part.h"
#include "worker_sched.h"
#include "worker_state.h"

#define WORKER_STATS_NS		  1000000000ull
#define WORKER_CTL_SEND_TIMEOUT_S 2
#define WORKER_CTL_MAX_PAYLOAD	  4096

static void usage(FILE *f)
{
	fprintf(f, "usage: vgpu-worker --ctl-fd N\n"
		   "       vgpu-worker --probe cuda|sim --ctl-fd N\n"
		   "Started by vgpud; see docs/DESIGN.md.\n");
}

/* A descriptor number from the command line, checked to be our socket. */
static int parse_ctl_fd(const char *arg, int *fd)
{
	int type = 0;
	socklen_t len = sizeof(type);
	struct timeval tv = {.tv_sec = WORKER_CTL_SEND_TIMEOUT_S};
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 0 || v > INT_MAX)
		return -EINVAL;
	if (getsockopt((int)v, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
		return -errno;
	if (type != SOCK_SEQPACKET)
		return -EPROTOTYPE;
	fcntl((int)v, F_SETFD, FD_CLOEXEC);
	/* a stuck vgpud must not keep a faulting worker from exiting */
	setsockopt((int)v, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	*fd = (int)v;
	return 0;
}

static void send_ready(int ctl, int32_t status, uint32_t sm_count,
		       uint64_t va_base, const char *message)
{
	struct vgpu_ctl_ready r;
	int rc;

	memset(&r, 0, sizeof(r));
	r.status = status;
	r.sm_count = sm_count;
	r.va_base = va_base;
	if (message)
		snprintf(r.message, sizeof(r.message), "%s", message);
	rc = ctl_send(ctl, VGPU_CTL_READY, &r, sizeof(r), -1);
	if (rc)
		fprintf(stderr, "vgpu-worker: sending READY: %s\n",
			strerror(-rc));
}

/* --probe: describe the GPUs of one backend to vgpud. */
static int run_probe(const char *name, int ctl)
{
	struct vgpu_gpu_info gpus[VGPU_MAX_GPUS];
	char err[VGPU_MESSAGE_MAX] = "";
	const struct backend_ops *ops = NULL;
	uint32_t kind;
	int i, n, rc;

	if ((strcmp(name, "cuda") && strcmp(name, "sim")) ||
	    backend_kind_from_name(name, &kind) ||
	    !(ops = backend_by_kind(kind))) {
		snprintf(err, sizeof(err), "unknown backend '%s'", name);
		goto fail;
	}
	memset(gpus, 0, sizeof(gpus));
	n = ops->probe(gpus, VGPU_MAX_GPUS, err, sizeof(err));
	if (n < 0) {
		if (!err[0])
			snprintf(err, sizeof(err), "%s probe failed", name);
		goto fail;
	}
	if (n > VGPU_MAX_GPUS)
		n = VGPU_MAX_GPUS;
	for (i = 0; i < n; i++) {
		rc = ctl_send(ctl, VGPU_CTL_GPU_INFO, &gpus[i], sizeof(gpus[i]),
			      -1);
		if (rc) {
			fprintf(stderr, "vgpu-worker: sending GPU_INFO: %s\n",
				strerror(-rc));
			return VGPU_WORKER_EXIT_INTERNAL;
		}
	}
	send_ready(ctl, CUDA_SUCCESS, (uint32_t)n, 0, NULL);
	return VGPU_WORKER_EXIT_OK;
fail:
	err[sizeof(err) - 1] = 0;
	fprintf(stderr, "vgpu-worker: probe: %s\n", err);
	send_ready(ctl, CUDA_ERROR_NO_DEVICE, 0, 0, err);
	return VGPU_WORKER_EXIT_CONFIG;
}

/*
 * Check a VGPU_CTL_CONFIG before anything uses it. vgpud is ours, but a
 * wrong config must fail with a sentence, not with a crash or a window
 * reserved somewhere unexpected. The granule alignment is checked again
 * once the backend says what its granule is.
 */
static int config_check(const struct vgpu_worker_config *c, char *err,
			size_t len)
{
	uint64_t seen = 0;
	uint32_t i;

	if (!memchr(c->name, 0, sizeof(c->name)) || !c->name[0]) {
		snprintf(err, len,
			 "config: name is empty or not NUL-terminated");
		return -1;
	}
	if (!backend_by_kind(c->backend)) {
		snprintf(err, len, "config: unknown backend %u", c->backend);
		return -1;
	}
	if (c->gpu >= VGPU_MAX_GPUS) {
		snprintf(err, len, "config: gpu %u out of range", c->gpu);
		return -1;
	}
	if (!c->ngroups || c->ngroups > VGPU_MAX_SM_GROUPS) {
		snprintf(err, len, "config: ngroups %u not in 1..%d",
			 c->ngroups, VGPU_MAX_SM_GROUPS);
		return -1;
	}
	for (i = 0; i < c->ngroups; i++) {
		if (c->groups[i] >= VGPU_MAX_SM_GROUPS ||
		    (seen & (1ull << c->groups[i]))) {
			snprintf(err, len,
				 "config: SM group %u out of range or repeated",
				 c->groups[i]);
			return -1;
		}
		seen |= 1ull << c->groups[i];
	}
	if (!c->va_base || !c->va_size || (c->va_base & 4095) ||
	    (c->va_size & 4095) || c->va_base + c->va_size < c->va_base) {
		snprintf(err, len,
			 "config: VA window 0x%llx + 0x%llx is empty, not "
			 "aligned or overflows",
			 (unsigned long long)c->va_base,
			 (unsigned long long)c->va_size);
		return -1;
	}
	if (!c->memory_quota || c->memory_quota > c->va_size) {
		snprintf(err, len,
			 "config: memory_quota is 0 or larger than the VA "
			 "window");
		return -1;
	}
	if (c->max_clients > WORKER_MAX_CLIENTS) {
		snprintf(err, len, "config: max_clients %u above %u",
			 c->max_clients, WORKER_MAX_CLIENTS);
		return -1;
	}
	/* kernel_time_limit_ms: any (0 = none); client_uid: informational;
	 * reserved: ignored */
	return 0;
}

static int running_as_root_refused(void)
{
	const char *allow = getenv("VGPU_ALLOW_ROOT_WORKER");

	return geteuid() == 0 && !(allow && !strcmp(allow, "1"));
}

/*
 * The fault path: tell the clients (ring status DEAD + error), tell vgpud,
 * exit. Only the first fault is reported; a second thread that faults
 * meanwhile waits for the exit.
 */
static void worker_fault_exit(struct worker *w, uint32_t kind, int32_t status,
			      const char *msg)
{
	struct vgpu_ctl_fault f;
	int fd;

	if (__atomic_exchange_n(&w->faulting, 1, __ATOMIC_ACQ_REL))
		for (;;)
			pause();
	worker_log(w, "fault: %s (CUDA error %d)", msg, status);
	worker_client_mark_dead(w, status);
	memset(&f, 0, sizeof(f));
	f.kind = kind;
	f.status = status;
	snprintf(f.message, sizeof(f.message), "%s", msg);
	/* orphaned (ctl_fd -1): nobody to tell, the exit code says it */
	fd = __atomic_load_n(&w->ctl_fd, __ATOMIC_ACQUIRE);
	if (fd >= 0)
		ctl_send(fd, VGPU_CTL_FAULT, &f, sizeof(f), -1);
	worker_adopt_unlink(w);
	_exit(kind == VGPU_FAULT_WATCHDOG ? VGPU_WORKER_EXIT_WATCHDOG
	      : kind == VGPU_FAULT_GPU	  ? VGPU_WORKER_EXIT_GPU_FAULT
					  : VGPU_WORKER_EXIT_INTERNAL);
}

/*
 * One message from vgpud. Returns 0 to go on, 1 on SHUTDOWN, -1 when the
 * control socket is gone.
 */
static int handle_ctl(struct worker *w)
{
	union {
		struct vgpu_ctl_client client;
		struct vgpu_ctl_channel channel;
		char buf[WORKER_CTL_MAX_PAYLOAD];
	} m;
	int fds[WORKER_CHANNEL_FDS], nfds = 0, i, rc;
	uint32_t type, len;

	rc = ctl_recv_n(w->ctl_fd, &type, &m, sizeof(m), &len, fds,
			WORKER_CHANNEL_FDS, &nfds);
	if (rc == -EAGAIN || rc == -EINTR)
		return 0;
	if (rc == -EMSGSIZE || rc == -EPROTO) {
		worker_log(w, "malformed control message ignored: %s",
			   strerror(-rc));
		return 0;
	}
	if (rc)
		return -1;
	switch (type) {
	case VGPU_CTL_CLIENT:
		if (len != sizeof(m.client) || nfds != 1) {
			worker_log(w,
				   "CLIENT message of %u bytes with %d "
				   "descriptors ignored (needs %zu and 1)",
				   len, nfds, sizeof(m.client));
			break;
		}
		worker_client_start(w, fds[0], &m.client);
		return 0; /* the descriptor is the client's now */
	case VGPU_CTL_CHANNEL:
		if (len != sizeof(m.channel) || nfds != WORKER_CHANNEL_FDS) {
			worker_log(w,
				   "CHANNEL message of %u bytes with %d "
				   "descriptors ignored (needs %zu and %d)",
				   len, nfds, sizeof(m.channel),
				   WORKER_CHANNEL_FDS);
			break;
		}
		worker_channel_start(w, fds, &m.channel);
		return 0; /* the descriptors are the channel's now */
	case VGPU_CTL_RESIZE:
		worker_resize_request(w, &m, len);
		break;
	case VGPU_CTL_SCHED:
		worker_sched_request(w, &m, len);
		break;
	case VGPU_CTL_SAVE:
	case VGPU_CTL_RESTORE:
		if (nfds > 1) {
			worker_log(w, "%s with %d descriptors ignored",
				   ctl_type_name(type), nfds);
			break;
		}
		if (type == VGPU_CTL_SAVE)
			worker_state_save(w, &m, len, nfds ? fds[0] : -1);
		else
			worker_state_restore(w, &m, len, nfds ? fds[0] : -1);
		return 0; /* the descriptor is taken over */
	case VGPU_CTL_SHUTDOWN:
		worker_log(w, "shutdown requested");
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		return 1;
	default:
		worker_log(w, "unexpected control message %s (%u) ignored",
			   ctl_type_name(type), type);
		break;
	}
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	return 0;
}

static void send_stats(struct worker *w)
{
	struct vgpu_ctl_stats st;

	worker_client_stats(w, &st);
	ctl_send(w->ctl_fd, VGPU_CTL_STATS, &st, sizeof(st), -1);
	worker_load_send(w);
}

/*
 * Serve until SHUTDOWN. If vgpud goes away (the control socket closes),
 * the clients already connected keep being served: their work must not
 * die with the control plane. With a ctl_path, a restarted vgpud may
 * adopt the worker there (worker_adopt.c); the worker exits once it has
 * been without vgpud and without clients for the orphan timeout. Without
 * one, it exits when the control socket is gone and the last client has
 * left, since nobody could hand it a new client.
 */
static void main_loop(struct worker *w)
{
	struct pollfd p[3];
	uint64_t now, next_stats = worker_now_ns() + WORKER_STATS_NS, v;
	int ctl_open = 1, timeout, ready, rc;
	ssize_t n;

	for (;;) {
		p[0] = (struct pollfd){.fd = w->wake_fd, .events = POLLIN};
		p[1] = (struct pollfd){.fd = ctl_open ? w->ctl_fd : -1,
				       .events = POLLIN};
		p[2] = (struct pollfd){.fd = w->adopt.listen_fd,
				       .events = POLLIN};
		now = worker_now_ns();
		timeout = next_stats > now
				  ? (int)((next_stats - now) / 1000000u) + 1
				  : 0;
		timeout = worker_part_timeout(w, timeout);
		timeout = worker_sched_timeout(w, timeout);
		timeout = worker_state_timeout(w, timeout);
		ready = poll(p, 3, worker_adopt_poll_timeout(w, timeout));
		if (ready < 0 && errno != EINTR) {
			worker_log(w, "poll: %s", strerror(errno));
			return;
		}
		if (ready > 0 && p[0].revents) {
			n = read(w->wake_fd, &v, sizeof(v));
			(void)n;
			if (!worker_client_reap(w) && !ctl_open &&
			    worker_adopt_idle(w))
				return;
		}
		if (ready > 0 && ctl_open && p[1].revents) {
			rc = handle_ctl(w);
			if (rc > 0)
				return;
			if (rc < 0) {
				ctl_open = 0;
				if (worker_adopt_ctl_lost(
					    w, worker_client_reap(w)))
					return;
			}
		}
		if (ready > 0 && p[2].revents)
			ctl_open = worker_adopt_accept(w, ctl_open);
		if (!ctl_open && worker_adopt_expired(w))
			return;
		now = worker_now_ns();
		if (now >= next_stats) {
			if (ctl_open)
				send_stats(w);
			next_stats = now + WORKER_STATS_NS;
		}
		worker_part_tick(w);
		worker_sched_tick(w);
		worker_state_tick(w);
	}
}

/*
 * Backend up, memory window ready; on failure a sentence in err. The
 * window is held first, so that nothing the backend's open maps (cuInit
 * maps a great deal) can land in it; the backend takes it over.
 */
static int worker_bring_up(struct worker *w, char *err, size_t len)
{
	const struct vgpu_worker_config *c = &w->cfg;
	uint64_t g;
	int rc;

	w->ops = backend_by_kind(c->backend);
	if (va_hold(c->va_base, c->va_size, err, len))
		return CUDA_ERROR_OUT_OF_MEMORY;
	err[0] = 0;
	rc = w->ops->open(&w->be, c, err, len);
	if (rc) {
		if (!err[0])
			snprintf(err, len, "%s backend: open failed",
				 w->ops->name);
		w->be = NULL;
		return rc;
	}
	rc = w->ops->thread_attach(w->be);
	if (rc) {
		snprintf(err, len, "thread_attach failed");
		return rc;
	}
	g = w->ops->granularity(w->be);
	if (g < SUBALLOC_ALIGN || (g & (g - 1)) || (c->va_base & (g - 1)) ||
	    (c->va_size & (g - 1))) {
		snprintf(err, len,
			 "VA window not aligned to the backend's granule "
			 "(%llu bytes)",
			 (unsigned long long)g);
		return CUDA_ERROR_INVALID_VALUE;
	}
	rc = suballoc_init(&w->mem, c->va_base, c->va_size, g, c->memory_quota,
			   WORKER_MAX_ALLOCS, worker_mem_map, worker_mem_unmap,
			   w);
	if (rc) {
		snprintf(err, len, "memory window: %s", strerror(-rc));
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memset(&w->info, 0, sizeof(w->info));
	w->ops->device_info(w->be, &w->info);
	w->info.name[sizeof(w->info.name) - 1] = 0;
	w->info.gpu_name[sizeof(w->info.gpu_name) - 1] = 0;
	w->info.vgpu_name[sizeof(w->info.vgpu_name) - 1] = 0;
	worker_regions_cap_init(w);
	rc = worker_watchdog_start(w);
	if (!rc) {
		rc = worker_gate_init(w);
		if (rc)
			worker_watchdog_stop(w);
	}
	if (!rc) {
		rc = worker_depart_start(w);
		if (rc) {
			worker_gate_fini(w);
			worker_watchdog_stop(w);
		}
	}
	if (rc) {
		suballoc_destroy(&w->mem);
		snprintf(err, len, "watchdog, gates or departures: %s",
			 strerror(-rc));
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

static void worker_free(struct worker *w)
{
	if (w->wake_fd >= 0)
		close(w->wake_fd);
	pthread_rwlock_destroy(&w->mem_lock);
	pthread_mutex_destroy(&w->clients_lock);
	free(w);
}

static int run_worker(int ctl)
{
	struct vgpu_worker_config cfg;
	char err[VGPU_MESSAGE_MAX];
	struct worker *w;
	uint32_t type, len;
	int rc;

	rc = ctl_recv(ctl, &type, &cfg, sizeof(cfg), &len, NULL);
	if (rc && rc != -EMSGSIZE && rc != -EPROTO) {
		fprintf(stderr, "vgpu-worker: reading CONFIG: %s\n",
			strerror(-rc));
		return VGPU_WORKER_EXIT_CONFIG;
	}
	if (rc || type != VGPU_CTL_CONFIG || len != sizeof(cfg)) {
		snprintf(err, sizeof(err),
			 "the first control message must be CONFIG of %zu "
			 "bytes",
			 sizeof(cfg));
		goto refuse_invalid;
	}
	if (config_check(&cfg, err, sizeof(err)))
		goto refuse_invalid;
	if (running_as_root_refused()) {
		snprintf(err, sizeof(err), "vgpu-worker must not run as root");
		fprintf(stderr, "vgpu-worker: %s\n", err);
		send_ready(ctl, CUDA_ERROR_NOT_PERMITTED, 0, 0, err);
		return VGPU_WORKER_EXIT_CONFIG;
	}

	w = calloc(1, sizeof(*w));
	if (!w) {
		send_ready(ctl, CUDA_ERROR_OUT_OF_MEMORY, 0, 0,
			   "out of memory");
		return VGPU_WORKER_EXIT_CONFIG;
	}
	w->cfg = cfg;
	w->ctl_fd = ctl;
	w->adopt.listen_fd = -1;
	w->fault = worker_fault_exit;
	w->next_client_id = 1;
	w->max_clients =
		cfg.max_clients ? cfg.max_clients : WORKER_DEFAULT_MAX_CLIENTS;
	pthread_mutex_init(&w->clients_lock, NULL);
	pthread_rwlock_init(&w->mem_lock, NULL);
	w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* the ctl_path socket first: bind's umask is process-wide */
	rc = w->wake_fd < 0 ? CUDA_ERROR_OUT_OF_MEMORY
			    : worker_adopt_listen(w, err, sizeof(err));
	if (!rc)
		rc = worker_bring_up(w, err, sizeof(err));
	if (w->wake_fd < 0)
		snprintf(err, sizeof(err), "eventfd: %s", strerror(errno));
	if (rc) {
		worker_log(w, "bring-up failed: %s (CUDA error %d)", err, rc);
		send_ready(ctl, rc, 0, 0, err);
		if (w->be)
			w->ops->close(w->be);
		worker_adopt_close(w);
		worker_free(w);
		return VGPU_WORKER_EXIT_CONFIG;
	}
	worker_log(
		w,
		"ready: %s backend, %u SMs, VA 0x%llx + 0x%llx, quota "
		"%llu bytes, kernel limit %u ms",
		w->ops->name, w->info.sm_count, (unsigned long long)cfg.va_base,
		(unsigned long long)cfg.va_size,
		(unsigned long long)cfg.memory_quota, cfg.kernel_time_limit_ms);
	if (worker_part_init(w))
		worker_log(w, "out of memory: no resizes or load reports");
	if (worker_coop_init(w))
		worker_log(w, "out of memory: a resize does not wait for "
			      "cooperative kernels");
	if (worker_sched_init(w))
		worker_log(w, "out of memory: no holds or activity reports");
	if (worker_state_init(w))
		worker_log(w, "out of memory: no save points");
	send_ready(ctl, CUDA_SUCCESS, w->info.sm_count, cfg.va_base, NULL);

	main_loop(w);
	/* no new vgpud may find a worker that is going away */
	worker_adopt_close(w);

	worker_client_stop_all(w);
	if (worker_client_reap(w)) {
		/* a thread is stuck in the backend: closing it under that
		 * thread could crash; the exit frees everything */
		worker_log(w, "exiting with clients still busy");
		return VGPU_WORKER_EXIT_OK;
	}
	worker_depart_stop(w);
	worker_watchdog_stop(w);
	worker_gate_fini(w);
	suballoc_destroy(&w->mem);
	worker_coop_fini(w); /* its events are the backend's */
	w->ops->close(w->be);
	worker_part_fini(w);
	worker_sched_fini(w);
	worker_state_fini(w);
	worker_log(w, "stopped");
	worker_free(w);
	return VGPU_WORKER_EXIT_OK;

refuse_invalid:
	fprintf(stderr, "vgpu-worker: %s\n", err);
	send_ready(ctl, CUDA_ERROR_INVALID_VALUE, 0, 0, err);
	return VGPU_WORKER_EXIT_CONFIG;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"ctl-fd", required_argument, NULL, 'c'},
		{"probe", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *probe = NULL, *ctl_arg = NULL;
	int opt, ctl = -1, rc;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			ctl_arg = optarg;
			break;
		case 'p':
			probe = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return VGPU_WORKER_EXIT_CONFIG;
		}
	}
	if (optind != argc || !ctl_arg) {
		usage(stderr);
		return VGPU_WORKER_EXIT_CONFIG;
	}
	rc = parse_ctl_fd(ctl_arg, &ctl);
	if (rc) {
		fprintf(stderr,
			"vgpu-worker: --ctl-fd %s: not a SOCK_SEQPACKET "
			"socket (%s)\n",
			ctl_arg, strerror(-rc));
		return VGPU_WORKER_EXIT_CONFIG;
	}
	signal(SIGPIPE, SIG_IGN);
	if (probe)
		return run_probe(probe, ctl);
	return run_worker(ctl);
}
