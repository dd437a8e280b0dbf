/* SPDX-License-Identifier: MIT */
/*
 * vgpu-worker processes: the GPU probe at start, one worker per vGPU,
 * their control messages, their exits, and the fault domains.
 *
 * A worker runs as the worker user with a clean environment and talks to
 * vgpud over a SOCK_SEQPACKET socketpair (include/vgpu/control.h). vgpud
 * checks what a worker says (it runs untrusted guest work), and never
 * waits for one without a deadline.
 *
 * Fault domains: the shared vGPUs of a GPU are its shared (MPS) domain.
 * When one of their workers faults or dies, every worker of that domain
 * is stopped; once all have exited (MPS takes new clients only then),
 * all are started again with the same config. An exclusive vGPU runs
 * outside MPS (no MPS environment) and is a domain of its own: a fault
 * there restarts only it, and a shared-domain restart leaves it alone.
 *
 * Workers that a restarted vgpud adopted (daemon_state.c) are not its
 * children: their exits come through a pidfd instead of SIGCHLD.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl_msg.h"
#include "daemon.h"
#include "env_number.h"
#include "daemon_part.h"
#include "daemon_state_ops.h"
#include "daemon_mdev.h"
#include "daemon_sched.h"
#include "daemon_swap.h"

#define PROBE_TIMEOUT_MS      30000 /* times 4 under a wrapper */
#define PROBE_EXIT_TIMEOUT_MS 5000
#define WORKER_DEFAULT_PATH                                                    \
	"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

extern char **environ;

/* ---- set-up --------------------------------------------------------- */

int daemon_workers_init(struct daemon *d, char *err, size_t errlen)
{
	const char *w = getenv("VGPU_WORKER_WRAPPER");
	char *save = NULL, *word;
	size_t n = 0, max;
	uint64_t silent;

	d->ready_timeout_ms = DAEMON_READY_TIMEOUT_MS;
	/* valgrind and friends start slowly and serve slowly */
	if (env_number("VGPU_LIVENESS_MS",
		       w && *w ? DAEMON_WORKER_SILENT_WRAPPED_MS
			       : DAEMON_WORKER_SILENT_MS,
		       0, 0, DAEMON_WORKER_SILENT_MAX_MS, &silent, err, errlen))
		return -1;
	d->silent_ms = (int)silent;
	if (!w || !*w)
		return 0;
	d->ready_timeout_ms = DAEMON_READY_WRAPPED_MS;
	d->wrapper_buf = strdup(w);
	max = strlen(w) / 2 + 2;
	d->wrapper = calloc(max, sizeof(*d->wrapper));
	if (!d->wrapper_buf || !d->wrapper) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (word = strtok_r(d->wrapper_buf, " \t", &save); word && n + 1 < max;
	     word = strtok_r(NULL, " \t", &save))
		d->wrapper[n++] = word;
	d->wrapper[n] = NULL;
	daemon_log("workers run under the wrapper: %s (ready timeout %d s)", w,
		   d->ready_timeout_ms / 1000);
	return 0;
}

void daemon_workers_fini(struct daemon *d)
{
	free(d->wrapper);
	free(d->wrapper_buf);
	d->wrapper = NULL;
	d->wrapper_buf = NULL;
}

/* ---- spawning ------------------------------------------------------- */

static void strv_free(char **v)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

/*
 * The worker's environment: PATH, the MPS directories (cuda), the
 * simulator's settings (VGPU_SIM_*), the cuda backend's (VGPU_CUDA_*:
 * the kept-context cache, the API lock; DESIGN.md), VGPU_REAL_LIBCUDA
 * VGPU_SAVEPOINT_LOG (a log line per save point, worker_savepoint.c)
 * and VGPU_SLOW_REQUEST_MS (a log line per slow request,
 * worker_client.c); nothing else of ours (no LD_PRELOAD, no
 * LD_LIBRARY_PATH).
 */
static char **worker_env(const struct daemon *d, bool mps)
{
	size_t n = 0, i, max = 4;
	char **env;

	for (i = 0; environ[i]; i++)
		max++;
	env = calloc(max, sizeof(*env));
	if (!env)
		return NULL;
	if (asprintf(&env[n++], "PATH=%s",
		     getenv("PATH") ? getenv("PATH") : WORKER_DEFAULT_PATH) < 0)
		goto fail;
	if (mps && d->mps.active) {
		if (asprintf(&env[n++], "CUDA_MPS_PIPE_DIRECTORY=%s",
			     d->mps.pipe_dir) < 0 ||
		    asprintf(&env[n++], "CUDA_MPS_LOG_DIRECTORY=%s",
			     d->mps.log_dir) < 0)
			goto fail;
	}
	for (i = 0; environ[i] && n + 1 < max; i++) {
		if (strncmp(environ[i], "VGPU_SIM_", 9) &&
		    strncmp(environ[i], "VGPU_CUDA_", 10) &&
		    strncmp(environ[i], "VGPU_REAL_LIBCUDA=", 18) &&
		    strncmp(environ[i], "VGPU_SAVEPOINT_LOG=", 19) &&
		    strncmp(environ[i], "VGPU_SLOW_REQUEST_MS=", 21))
			continue;
		env[n] = strdup(environ[i]);
		if (!env[n++])
			goto fail;
	}
	return env;
fail:
	env[n ? n - 1 : 0] = NULL;
	strv_free(env);
	return NULL;
}

/*
 * fork + exec vgpu-worker as the worker user: [wrapper...] worker
 * [--probe KIND] --ctl-fd N. Returns its pid and vgpud's end of the
 * control socket (non-blocking) in *ctl, or -1 with a sentence in err.
 */
/*
 * With no stack limit (ulimit -s unlimited, common on HPC hosts) Linux
 * places mmaps and shared libraries bottom-up from about 0x14xxxxxxxxxx,
 * inside the vGPU windows (include/vgpu/va.h): the worker's own libraries
 * then sat in a window and its creates failed (review of issue 16). The
 * worker gets a finite one: the default layout, top-down from the stack.
 * In the child, before exec.
 */
static void worker_stack_limit(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_STACK, &r) == 0 && r.rlim_cur == RLIM_INFINITY) {
		r.rlim_cur = DAEMON_WORKER_STACK;
		if (r.rlim_max != RLIM_INFINITY && r.rlim_max < r.rlim_cur)
			r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_STACK, &r);
	}
}

static pid_t worker_spawn(struct daemon *d, const char *probe, bool mps,
			  int *ctl, char *err, size_t errlen)
{
	char fdnum[16], **env, *argv[64];
	size_t argc = 0, i;
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		return -1;
	}
	env = worker_env(d, mps);
	if (!env) {
		close(sv[0]);
		close(sv[1]);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	snprintf(fdnum, sizeof(fdnum), "%d", sv[1]);
	for (i = 0; d->wrapper && d->wrapper[i] && argc < 56; i++)
		argv[argc++] = d->wrapper[i];
	argv[argc++] = d->opts.worker_path;
	if (probe) {
		argv[argc++] = "--probe";
		argv[argc++] = (char *)probe;
	}
	argv[argc++] = "--ctl-fd";
	argv[argc++] = fdnum;
	argv[argc] = NULL;

	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		strv_free(env);
		return -1;
	}
	if (pid == 0) {
		sigset_t none;
		int null = open("/dev/null", O_RDONLY);

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		worker_stack_limit();
		if (null >= 0)
			dup2(null, 0);
		if (setgroups(d->nworker_groups, d->worker_groups) < 0 ||
		    setgid(d->worker_gid) < 0 || setuid(d->worker_uid) < 0) {
			dprintf(2,
				"vgpud: cannot switch to user %s for the "
				"worker: %s\n",
				d->opts.worker_user, strerror(errno));
			_exit(126);
		}
		if (geteuid() == 0 || getuid() == 0) {
			dprintf(2, "vgpud: the worker would still run as "
				   "root; not starting it\n");
			_exit(126);
		}
		/* the child's end survives exec; nothing else of ours does */
		fcntl(sv[1], F_SETFD, 0);
		execvpe(argv[0], argv, env);
		dprintf(2, "vgpud: cannot execute %s as user %s: %s\n", argv[0],
			d->opts.worker_user, strerror(errno));
		_exit(127);
	}
	close(sv[1]);
	strv_free(env);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	*ctl = sv[0];
	return pid;
}

/* "exited with status 3 (GPU fault)" / "was killed by signal 9 (Killed)" */
static void describe_exit(int st, char *buf, size_t len)
{
	static const char *const codes[] = {
		[VGPU_WORKER_EXIT_OK] = "ok",
		[VGPU_WORKER_EXIT_CONFIG] = "bad config or bring-up failed",
		[VGPU_WORKER_EXIT_GPU_FAULT] = "GPU fault",
		[VGPU_WORKER_EXIT_WATCHDOG] = "kernel time limit",
		[VGPU_WORKER_EXIT_INTERNAL] = "internal error",
	};

	if (WIFEXITED(st)) {
		int code = WEXITSTATUS(st);
		const char *what = NULL;

		if (code < (int)(sizeof(codes) / sizeof(codes[0])))
			what = codes[code];
		else if (code == 126)
			what = "could not switch to the worker user";
		else if (code == 127)
			what = "could not be executed";
		snprintf(buf, len, "exited with status %d%s%s%s", code,
			 what ? " (" : "", what ? what : "", what ? ")" : "");
	} else if (WIFSIGNALED(st)) {
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	} else {
		snprintf(buf, len, "stopped (status 0x%x)", st);
	}
}

/* ---- probe ---------------------------------------------------------- */

/* Wait for pid up to ms, then SIGKILL it; its wait status or -1. */
static int wait_or_kill(pid_t pid, int ms)
{
	int64_t deadline = daemon_now_ms() + ms;
	int st;

	while (daemon_now_ms() < deadline) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			return st;
		if (w < 0 && errno != EINTR)
			return -1;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	if (waitpid(pid, &st, 0) == pid)
		return st;
	return -1;
}

/* Check a GPU_INFO message from the probe before anyone uses it. */
static int probe_check_info(const struct vgpu_gpu_info *g, uint32_t expect,
			    uint32_t kind, char *err, size_t errlen)
{
	if (g->index != expect || g->backend != kind ||
	    !memchr(g->name, '\0', sizeof(g->name)) ||
	    g->ngroups > VGPU_MAX_SM_GROUPS || g->min_partition == 0) {
		snprintf(err, errlen,
			 "the probe described GPU %u inconsistently (index "
			 "%u, backend %u, %u groups of at least %u SMs)",
			 expect, g->index, g->backend, g->ngroups,
			 g->min_partition);
		return -1;
	}
	return 0;
}

/*
 * Run vgpu-worker --probe kind: GPU_INFO per GPU, then READY. Fills
 * d->gpus and d->ngpus; -1 and a sentence when the probe failed.
 */
static int probe_kind(struct daemon *d, const char *kind_name, uint32_t kind,
		      char *err, size_t errlen)
{
	union {
		struct vgpu_gpu_info info;
		struct vgpu_ctl_ready ready;
	} msg;
	int timeout = d->wrapper ? 4 * PROBE_TIMEOUT_MS : PROBE_TIMEOUT_MS;
	int64_t deadline = daemon_now_ms() + timeout;
	bool ready = false, failed = false;
	char why[96];
	uint32_t type, len;
	int fd, st, r;
	pid_t pid;

	d->ngpus = 0;
	pid = worker_spawn(d, kind_name, true, &fd, err, errlen);
	if (pid < 0)
		return -1;
	while (!ready && !failed) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int64_t left = deadline - daemon_now_ms();

		if (left <= 0) {
			snprintf(err, errlen,
				 "vgpu-worker --probe %s did not answer within "
				 "%d s",
				 kind_name, timeout / 1000);
			failed = true;
			break;
		}
		r = poll(&pfd, 1, (int)left);
		if (r <= 0)
			continue;
		r = ctl_recv(fd, &type, &msg, sizeof(msg), &len, NULL);
		if (r == -EAGAIN || r == -EINTR)
			continue;
		if (r == -EPIPE) {
			snprintf(err, errlen,
				 "vgpu-worker --probe %s exited without an "
				 "answer",
				 kind_name);
			failed = true;
		} else if (r < 0) {
			snprintf(err, errlen,
				 "vgpu-worker --probe %s sent a malformed "
				 "message (%s)",
				 kind_name, strerror(-r));
			failed = true;
		} else if (type == VGPU_CTL_GPU_INFO &&
			   len == sizeof(msg.info)) {
			if (d->ngpus >= VGPU_MAX_GPUS) {
				snprintf(err, errlen,
					 "the probe reported more than %d GPUs",
					 VGPU_MAX_GPUS);
				failed = true;
			} else if (probe_check_info(&msg.info, d->ngpus, kind,
						    err, errlen)) {
				failed = true;
			} else {
				d->gpus[d->ngpus++] = msg.info;
			}
		} else if (type == VGPU_CTL_READY && len == sizeof(msg.ready)) {
			msg.ready.message[VGPU_MESSAGE_MAX - 1] = '\0';
			if (msg.ready.status != 0) {
				snprintf(err, errlen, "%s (CUresult %d)",
					 msg.ready.message[0]
						 ? msg.ready.message
						 : "the probe failed",
					 msg.ready.status);
				failed = true;
			} else if (msg.ready.sm_count != d->ngpus) {
				snprintf(err, errlen,
					 "the probe said %u GPUs but described "
					 "%u",
					 msg.ready.sm_count, d->ngpus);
				failed = true;
			} else {
				ready = true;
			}
		} else {
			snprintf(err, errlen,
				 "vgpu-worker --probe %s sent %s (%u bytes), "
				 "expected GPU_INFO or READY",
				 kind_name, ctl_type_name(type), len);
			failed = true;
		}
	}
	close(fd);
	st = wait_or_kill(pid, PROBE_EXIT_TIMEOUT_MS);
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		if (st >= 0)
			describe_exit(st, why, sizeof(why));
		else
			snprintf(why, sizeof(why), "could not be waited for");
		if (ready)
			daemon_log("warning: vgpu-worker --probe %s %s after "
				   "answering",
				   kind_name, why);
		else if (failed && strstr(err, "without an answer"))
			snprintf(err, errlen,
				 "vgpu-worker --probe %s %s without an answer",
				 kind_name, why);
	}
	if (!ready)
		d->ngpus = 0;
	return ready ? 0 : -1;
}

/* One log line per GPU. */
static void log_gpu(const struct vgpu_gpu_info *g)
{
	char mem[32], groups[96];
	uint32_t i, in_groups = 0;
	bool uniform = true;

	for (i = 0; i < g->ngroups; i++) {
		in_groups += g->group_sms[i];
		if (g->group_sms[i] != g->group_sms[0])
			uniform = false;
	}
	if (uniform && g->ngroups)
		snprintf(groups, sizeof(groups), "%u groups of %u SMs",
			 g->ngroups, g->group_sms[0]);
	else
		snprintf(groups, sizeof(groups), "%u groups (%u SMs)",
			 g->ngroups, in_groups);
	daemon_log("GPU %u: %s [%s], %u SMs, minSmPartitionSize %u, "
		   "smCoscheduledAlignment %u, %s, %u SMs in no group, "
		   "memory %s, compute %u.%u",
		   g->index, g->name,
		   g->backend == VGPU_BACKEND_SIM ? "sim: simulated, not a GPU"
						  : "cuda",
		   g->sm_count, g->min_partition, g->alignment, groups,
		   g->sm_count - in_groups,
		   plan_format_size(g->memory_total, mem, sizeof(mem)),
		   g->cc_major, g->cc_minor);
}

int daemon_probe(struct daemon *d, char *err, size_t errlen)
{
	const char *b = d->opts.backend;
	char cuda_err[VGPU_MESSAGE_MAX + 64];
	uint32_t i;

	if (!strcmp(b, "cuda") || !strcmp(b, "auto")) {
		if (probe_kind(d, "cuda", VGPU_BACKEND_CUDA, cuda_err,
			       sizeof(cuda_err)) == 0 &&
		    d->ngpus == 0)
			snprintf(cuda_err, sizeof(cuda_err),
				 "the cuda backend found no GPU");
		if (d->ngpus > 0) {
			d->backend = VGPU_BACKEND_CUDA;
			daemon_log("backend: cuda, %u GPU%s", d->ngpus,
				   d->ngpus == 1 ? "" : "s");
		} else if (!strcmp(b, "cuda")) {
			snprintf(err, errlen, "--backend cuda: %s", cuda_err);
			return -1;
		} else {
			daemon_log("backend auto: cuda is not usable (%s); "
				   "using the simulator (sim)",
				   cuda_err);
		}
	}
	if (d->ngpus == 0) {
		if (probe_kind(d, "sim", VGPU_BACKEND_SIM, err, errlen))
			return -1;
		if (d->ngpus == 0) {
			snprintf(err, errlen, "the simulator has no GPU");
			return -1;
		}
		d->backend = VGPU_BACKEND_SIM;
		daemon_log("backend: sim (simulated GPUs, not real ones), %u "
			   "GPU%s",
			   d->ngpus, d->ngpus == 1 ? "" : "s");
	}
	for (i = 0; i < d->ngpus; i++) {
		char perr[256];

		log_gpu(&d->gpus[i]);
		if (plan_add_gpu(d->plan, &d->gpus[i], perr, sizeof(perr))) {
			snprintf(err, errlen, "GPU %u: %s", i, perr);
			return -1;
		}
	}
	return 0;
}

/* ---- vGPUs ---------------------------------------------------------- */

struct daemon_vgpu *daemon_vgpu_find(struct daemon *d, const char *name)
{
	struct daemon_vgpu *v;

	for (v = d->vgpus; v; v = v->next)
		if (!strncmp(v->cfg.name, name, VGPU_NAME_MAX))
			return v;
	return NULL;
}

void daemon_vgpu_init(struct daemon *d, struct daemon_vgpu *v,
		      const struct plan_grant *grant,
		      const struct daemon_vgpu_spec *spec)
{
	memcpy(v->cfg.name, grant->name, sizeof(v->cfg.name));
	v->cfg.backend = d->backend;
	v->cfg.gpu = grant->gpu;
	v->cfg.ngroups = grant->ngroups;
	memcpy(v->cfg.groups, grant->groups, sizeof(v->cfg.groups));
	v->cfg.va_base = grant->va_base;
	v->cfg.va_size = grant->va_size;
	v->cfg.memory_quota = grant->memory;
	v->cfg.kernel_time_limit_ms = spec->time_limit_ms;
	v->cfg.max_clients = DAEMON_MAX_CLIENTS;
	v->cfg.client_uid = spec->uid;
	v->cfg.isolation = spec->isolation;
	v->consumer_kind = spec->consumer_kind;
	v->consumer_gid = spec->consumer_kind == VGPU_ADMIN_CONSUMER_GROUP
				  ? spec->gid
				  : 0;
	v->sms = grant->sms;
	v->state = VGPU_ADMIN_STATE_STARTING;
	v->ctl_fd = -1;
	v->pidfd = -1;
	daemon_vgpu_ctl_path(d, v);
}

void daemon_vgpu_append(struct daemon *d, struct daemon_vgpu *v)
{
	struct daemon_vgpu **tail;

	for (tail = &d->vgpus; *tail; tail = &(*tail)->next)
		;
	v->next = NULL;
	*tail = v;
}

bool daemon_vgpu_destroy(struct daemon *d, struct daemon_vgpu *v,
			 struct daemon_conn *waiter)
{
	daemon_log("destroying vGPU %s", v->cfg.name);
	v->destroying = true;
	v->state = VGPU_ADMIN_STATE_STOPPING;
	v->retry_at = 0;
	if (v->create_waiter) {
		daemon_admin_reply(d, v->create_waiter,
				   VGPU_ADMIN_WORKER_FAILED, NULL,
				   "vGPU %s was destroyed while it was "
				   "starting",
				   v->cfg.name);
		v->create_waiter = NULL;
	}
	if (v->pid) {
		if (waiter) {
			waiter->parked = true;
			v->destroy_waiter = waiter;
		}
		daemon_vgpu_stop(d, v, DAEMON_STOP_DESTROY,
				 DAEMON_DESTROY_KILL_MS);
		return false;
	}
	daemon_vgpu_free(d, v);
	return true;
}

void daemon_vgpu_free(struct daemon *d, struct daemon_vgpu *v)
{
	struct daemon_vgpu **pp;

	daemon_mdev_vgpu_freed(d, v);
	daemon_part_vgpu_free(d, v); /* before its grant goes */
	daemon_state_vgpu_free(d, v);
	for (pp = &d->vgpus; *pp; pp = &(*pp)->next) {
		if (*pp == v) {
			*pp = v->next;
			break;
		}
	}
	plan_release(d->plan, v->cfg.name);
	if (v->ctl_fd >= 0)
		close(v->ctl_fd);
	if (v->pidfd >= 0)
		close(v->pidfd);
	if (v->cfg.ctl_path[0])
		unlink(v->cfg.ctl_path);
	d->state_dirty = true;
	free(v);
}

const char *daemon_isolation_name(uint32_t isolation)
{
	return isolation == 1 ? "exclusive" : "shared";
}

void daemon_vgpu_ctl_path(struct daemon *d, struct daemon_vgpu *v)
{
	/* vgpud_main.c checked that the longest name fits */
	snprintf(v->cfg.ctl_path, sizeof(v->cfg.ctl_path), "%.38s/%s.sock",
		 d->workers_dir, v->cfg.name);
	v->cfg.orphan_timeout_s = d->opts.orphan_timeout_s;
}

void daemon_vgpu_kill(struct daemon_vgpu *v, int sig)
{
	if (v->pidfd >= 0) {
		/* not our child: its pid may be reused once it is gone */
		syscall(SYS_pidfd_send_signal, v->pidfd, sig, NULL, 0);
		return;
	}
	if (v->pid > 0)
		kill(v->pid, sig);
}

int daemon_vgpu_start(struct daemon *d, struct daemon_vgpu *v)
{
	int fd, e;
	pid_t pid;

	v->start_error[0] = '\0';
	if (v->pidfd >= 0)
		close(v->pidfd);
	v->pidfd = -1;
	v->adopted = false;
	/* any worker that listened there is gone: we start its successor */
	if (v->cfg.ctl_path[0])
		unlink(v->cfg.ctl_path);
	pid = worker_spawn(d, NULL, daemon_vgpu_shared(v), &fd, v->start_error,
			   sizeof(v->start_error));
	if (pid < 0) {
		daemon_log("vGPU %s: cannot start a worker: %s", v->cfg.name,
			   v->start_error);
		return -1;
	}
	v->pid = pid;
	v->ctl_fd = fd;
	v->ready = false;
	v->fault_reported = false;
	v->stop = DAEMON_STOP_NONE;
	v->kill_deadline = 0;
	v->retry_at = 0;
	v->ready_deadline = daemon_now_ms() + d->ready_timeout_ms;
	memset(&v->stats, 0, sizeof(v->stats));
	e = ctl_send(fd, VGPU_CTL_CONFIG, &v->cfg, sizeof(v->cfg), -1);
	if (e < 0) {
		snprintf(v->start_error, sizeof(v->start_error),
			 "could not send the config to the worker: %s",
			 strerror(-e));
		daemon_log("vGPU %s: %s", v->cfg.name, v->start_error);
		v->stop = DAEMON_STOP_START_FAILED;
		kill(pid, SIGKILL);
		d->state_dirty = true;
		return 0;
	}
	daemon_log("vGPU %s: worker pid %d started (%s%s)", v->cfg.name,
		   (int)pid, daemon_isolation_name(v->cfg.isolation),
		   daemon_vgpu_shared(v) ? " domain" : ": its own domain");
	/* after a fault: its save point, before any client */
	daemon_state_started(d, v);
	d->state_dirty = true;
	return 0;
}

void daemon_vgpu_stop(struct daemon *d, struct daemon_vgpu *v,
		      enum daemon_stop why, int64_t ms)
{
	int64_t deadline = daemon_now_ms() + ms;

	if (!v->pid)
		return;
	/* the stronger reason wins: EXIT > DESTROY > DOMAIN > START */
	if (why > v->stop)
		v->stop = why;
	if (v->ctl_fd >= 0)
		ctl_send(v->ctl_fd, VGPU_CTL_SHUTDOWN, NULL, 0, -1);
	if (!v->kill_deadline || deadline < v->kill_deadline)
		v->kill_deadline = deadline;
	v->ready_deadline = 0;
}

/* ---- fault domains -------------------------------------------------- */

static void domain_check(struct daemon *d, uint32_t gpu);

/*
 * A worker of GPU gpu's shared domain faulted or died: every worker of
 * the domain goes down (MPS has broken their work anyway), and all come
 * back once the last has exited.
 */
static void exclusive_fault(struct daemon *d, struct daemon_vgpu *v,
			    const char *why)
{
	if (d->stopping)
		return;
	daemon_log("vGPU %s (exclusive: its own fault domain) %s; restarting "
		   "only it",
		   v->cfg.name, why);
	v->state = VGPU_ADMIN_STATE_RESTARTING;
	if (v->pid)
		daemon_vgpu_stop(d, v, DAEMON_STOP_DOMAIN,
				 DAEMON_DOMAIN_KILL_MS);
	else
		v->retry_at = daemon_now_ms();
}

static void domain_fault(struct daemon *d, uint32_t gpu,
			 struct daemon_vgpu *culprit, const char *why)
{
	struct daemon_vgpu *v;
	unsigned n = 0;

	if (d->stopping)
		return;
	if (!daemon_vgpu_shared(culprit)) {
		exclusive_fault(d, culprit, why);
		return;
	}
	if (d->domains[gpu].recovering) {
		daemon_log("GPU %u: vGPU %s %s while its domain restarts", gpu,
			   culprit->cfg.name, why);
		return;
	}
	d->domains[gpu].recovering = true;
	for (v = d->vgpus; v; v = v->next) {
		if (v->cfg.gpu != gpu || v->destroying ||
		    !daemon_vgpu_shared(v) ||
		    v->state == VGPU_ADMIN_STATE_FAILED)
			continue;
		n++;
		/* a suspended one's worker is an MPS client too: it goes,
		 * and the vGPU stays suspended (daemon_state_ops.c) */
		if (!daemon_state_suspended(v))
			v->state = VGPU_ADMIN_STATE_RESTARTING;
		v->retry_at = 0;
		if (v->pid)
			daemon_vgpu_stop(d, v, DAEMON_STOP_DOMAIN,
					 DAEMON_DOMAIN_KILL_MS);
	}
	daemon_log("GPU %u: vGPU %s %s; restarting the %u vGPU%s of the "
		   "GPU's shared fault domain",
		   gpu, culprit->cfg.name, why, n, n == 1 ? "" : "s");
	domain_check(d, gpu);
}

/* A worker never came up (or could not be started). */
static void start_failed(struct daemon *d, struct daemon_vgpu *v,
			 const char *why)
{
	if (!v->ever_ready) {
		/* a create: answer it and give everything back */
		daemon_log("vGPU %s: not created: %s", v->cfg.name, why);
		if (v->create_waiter)
			daemon_admin_reply(d, v->create_waiter,
					   VGPU_ADMIN_WORKER_FAILED, NULL,
					   "vGPU %s: %s", v->cfg.name, why);
		v->create_waiter = NULL;
		daemon_vgpu_free(d, v);
		return;
	}
	v->start_failures++;
	if (v->start_failures >= DAEMON_MAX_START_FAILURES) {
		v->state = VGPU_ADMIN_STATE_FAILED;
		daemon_log("vGPU %s: restart failed %u times in a row (%s); "
			   "giving up: it stays failed until destroyed",
			   v->cfg.name, v->start_failures, why);
		return;
	}
	v->state = VGPU_ADMIN_STATE_RESTARTING;
	daemon_log("vGPU %s: restart attempt %u failed (%s); retrying in "
		   "%d ms",
		   v->cfg.name, v->start_failures, why, DAEMON_RETRY_DELAY_MS);
	if (!daemon_vgpu_shared(v) || !d->domains[v->cfg.gpu].recovering)
		v->retry_at = daemon_now_ms() + DAEMON_RETRY_DELAY_MS;
}

/* Start every worker of a restarting domain again. */
static void domain_restart(struct daemon *d, uint32_t gpu)
{
	struct daemon_domain *dom = &d->domains[gpu];
	struct daemon_vgpu *v, *next;

	dom->recovering = false;
	dom->restart_at = 0;
	dom->last_restart = daemon_now_ms();
	daemon_log("GPU %u: starting the shared domain's workers again", gpu);
	for (v = d->vgpus; v; v = next) {
		next = v->next; /* start_failed may free v */
		if (v->cfg.gpu != gpu || v->destroying ||
		    !daemon_vgpu_shared(v) ||
		    v->state == VGPU_ADMIN_STATE_FAILED ||
		    daemon_state_suspended(v))
			continue;
		v->retry_at = 0;
		if (daemon_vgpu_start(d, v) < 0)
			start_failed(d, v, v->start_error);
	}
}

/*
 * Once every worker of a restarting domain has exited (MPS takes new
 * clients only then), start them all again: at once, or after a growing
 * delay when the domain faulted soon after its last restart.
 */
static void domain_check(struct daemon *d, uint32_t gpu)
{
	struct daemon_domain *dom = &d->domains[gpu];
	struct daemon_vgpu *v;
	int64_t now = daemon_now_ms();

	if (!dom->recovering || dom->restart_at || d->stopping)
		return;
	for (v = d->vgpus; v; v = v->next)
		if (v->cfg.gpu == gpu && daemon_vgpu_shared(v) && v->pid)
			return;
	daemon_log("GPU %u: every worker of the shared domain has exited", gpu);
	if (dom->last_restart &&
	    now - dom->last_restart < DAEMON_DOMAIN_STABLE_MS) {
		dom->backoff_ms = dom->backoff_ms ? dom->backoff_ms * 2 : 1000;
		if (dom->backoff_ms > DAEMON_DOMAIN_BACKOFF_MAX_MS)
			dom->backoff_ms = DAEMON_DOMAIN_BACKOFF_MAX_MS;
		dom->restart_at = now + dom->backoff_ms;
		daemon_log("GPU %u: it faulted within %d s of its last "
			   "restart; waiting %d ms before the next",
			   gpu, DAEMON_DOMAIN_STABLE_MS / 1000,
			   dom->backoff_ms);
		return;
	}
	dom->backoff_ms = 0;
	domain_restart(d, gpu);
}

/* ---- worker messages ------------------------------------------------ */

static void worker_exited(struct daemon *d, struct daemon_vgpu *v, int st);

static void worker_ready(struct daemon *d, struct daemon_vgpu *v,
			 struct vgpu_ctl_ready *r)
{
	r->message[VGPU_MESSAGE_MAX - 1] = '\0';
	if (v->ready || v->stop != DAEMON_STOP_NONE) {
		daemon_log("vGPU %s: ignoring a late READY from pid %d",
			   v->cfg.name, (int)v->pid);
		return;
	}
	v->ready_deadline = 0;
	if (r->status != 0) {
		snprintf(v->start_error, sizeof(v->start_error),
			 "the worker could not bring it up: %.200s (CUresult "
			 "%d)",
			 r->message[0] ? r->message : "no reason given",
			 r->status);
		daemon_log("vGPU %s: %s", v->cfg.name, v->start_error);
		daemon_vgpu_stop(d, v, DAEMON_STOP_START_FAILED,
				 DAEMON_DESTROY_KILL_MS);
		return;
	}
	if (r->va_base != v->cfg.va_base) {
		snprintf(v->start_error, sizeof(v->start_error),
			 "the worker reserved its VA window at 0x%llx, not "
			 "at 0x%llx",
			 (unsigned long long)r->va_base,
			 (unsigned long long)v->cfg.va_base);
		daemon_log("vGPU %s: %s", v->cfg.name, v->start_error);
		daemon_vgpu_stop(d, v, DAEMON_STOP_START_FAILED,
				 DAEMON_DESTROY_KILL_MS);
		return;
	}
	if (r->sm_count != v->sms)
		daemon_log("vGPU %s: warning: the worker's green context has "
			   "%u SMs, the plan gave it %u",
			   v->cfg.name, r->sm_count, v->sms);
	v->ready = true;
	v->start_failures = 0;
	v->state = VGPU_ADMIN_STATE_RUNNING;
	d->state_dirty = true;
	if (!v->ever_ready) {
		v->ever_ready = true;
		daemon_log("vGPU %s: ready (worker pid %d)", v->cfg.name,
			   (int)v->pid);
		if (v->create_waiter)
			daemon_admin_reply(d, v->create_waiter, VGPU_ADMIN_OK,
					   v, "created vGPU %s", v->cfg.name);
		v->create_waiter = NULL;
	} else {
		v->restarts++;
		daemon_log("vGPU %s: restarted (restart %u, worker pid %d)",
			   v->cfg.name, v->restarts, (int)v->pid);
	}
}

static const char *fault_kind_name(uint32_t kind)
{
	switch (kind) {
	case VGPU_FAULT_GPU:
		return "GPU error";
	case VGPU_FAULT_WATCHDOG:
		return "kernel time limit";
	case VGPU_FAULT_INTERNAL:
		return "internal error";
	}
	return "unknown kind";
}

void daemon_worker_input(struct daemon *d, struct daemon_vgpu *v)
{
	union {
		struct vgpu_ctl_ready ready;
		struct vgpu_ctl_stats stats;
		struct vgpu_ctl_fault fault;
		struct vgpu_ctl_resized resized;
		struct vgpu_ctl_load load;
		struct vgpu_ctl_activity activity;
		struct vgpu_ctl_saved saved;
		struct vgpu_ctl_progress progress;
	} msg;
	char why[VGPU_MESSAGE_MAX + 64];
	uint32_t type, len;
	int i, r, fd;

	for (i = 0; i < 32 && v->ctl_fd >= 0; i++) {
		/* only SAVED carries a descriptor (a save point's memfd) */
		r = ctl_recv(v->ctl_fd, &type, &msg, sizeof(msg), &len, &fd);
		if (r == 0 && fd >= 0 &&
		    (type != VGPU_CTL_SAVED || len != sizeof(msg.saved))) {
			close(fd);
			fd = -1;
		}
		if (r == -EAGAIN || r == -EINTR)
			return;
		if (r == -EPIPE || r == -ECONNRESET) {
			/* the worker is gone; SIGCHLD (or its pidfd) tells us
			 * how, except for one adopted without a pidfd */
			close(v->ctl_fd);
			v->ctl_fd = -1;
			if (v->adopted && v->pidfd < 0)
				worker_exited(d, v, -1);
			return;
		}
		if (r < 0) {
			daemon_log("vGPU %s: worker pid %d sent a malformed "
				   "control message (%s); dropped",
				   v->cfg.name, (int)v->pid, strerror(-r));
			continue;
		}
		switch (type) {
		case VGPU_CTL_READY:
			if (len != sizeof(msg.ready))
				break;
			worker_ready(d, v, &msg.ready);
			continue;
		case VGPU_CTL_STATS:
			if (len != sizeof(msg.stats))
				break;
			v->stats = msg.stats;
			daemon_liveness_stats(v);
			continue;
		case VGPU_CTL_RESIZED:
			if (len != sizeof(msg.resized))
				break;
			daemon_resize_done(d, v, &msg.resized);
			continue;
		case VGPU_CTL_LOAD:
			if (len != sizeof(msg.load))
				break;
			daemon_load_update(d, v, &msg.load);
			continue;
		case VGPU_CTL_ACTIVITY:
			if (len != sizeof(msg.activity))
				break;
			daemon_sched_activity(d, v, &msg.activity);
			continue;
		case VGPU_CTL_SAVED:
			if (len != sizeof(msg.saved))
				break;
			daemon_state_saved(d, v, &msg.saved, fd);
			continue;
		case VGPU_CTL_PROGRESS:
			if (len != sizeof(msg.progress))
				break;
			daemon_state_progress(d, v, &msg.progress);
			continue;
		case VGPU_CTL_FAULT:
			if (len != sizeof(msg.fault))
				break;
			msg.fault.message[VGPU_MESSAGE_MAX - 1] = '\0';
			snprintf(why, sizeof(why),
				 "reported a fault (%s): %s (CUresult %d)",
				 fault_kind_name(msg.fault.kind),
				 msg.fault.message, msg.fault.status);
			daemon_log("vGPU %s: worker pid %d %s", v->cfg.name,
				   (int)v->pid, why);
			v->fault_reported = true;
			if (v->ready && v->stop == DAEMON_STOP_NONE)
				domain_fault(d, v->cfg.gpu, v, why);
			continue;
		}
		daemon_log("vGPU %s: worker pid %d sent an unexpected %s "
			   "(type %u, %u bytes); dropped",
			   v->cfg.name, (int)v->pid, ctl_type_name(type), type,
			   len);
	}
}

/* ---- exits ---------------------------------------------------------- */

/* st -1: an adopted worker, whose status only its parent (init) saw */
static void worker_exited(struct daemon *d, struct daemon_vgpu *v, int st)
{
	uint32_t gpu = v->cfg.gpu;
	char how[96], why[VGPU_MESSAGE_MAX + 128];
	bool clean = st >= 0 ? WIFEXITED(st) && WEXITSTATUS(st) == 0
			     : v->stop != DAEMON_STOP_NONE;
	pid_t pid = v->pid;

	/* what it said before it went (a FAULT, a READY) counts first */
	if (v->ctl_fd >= 0)
		daemon_worker_input(d, v);
	if (v->ctl_fd >= 0)
		close(v->ctl_fd);
	v->ctl_fd = -1;
	daemon_resize_abort(d, v, "its worker exited");
	daemon_state_abort(d, v, "its worker exited");
	if (v->pidfd >= 0)
		close(v->pidfd);
	v->pidfd = -1;
	v->adopted = false;
	v->pid = 0;
	v->kill_deadline = 0;
	v->ready_deadline = 0;
	d->state_dirty = true;
	memset(&v->stats, 0, sizeof(v->stats));
	if (st >= 0)
		describe_exit(st, how, sizeof(how));
	else
		snprintf(how, sizeof(how),
			 "exited (adopted, so its status is unknown)");

	if (v->destroying) {
		struct daemon_conn *waiter = v->destroy_waiter;
		char name[VGPU_NAME_MAX];

		daemon_log("vGPU %s: worker pid %d %s; destroyed", v->cfg.name,
			   (int)pid, how);
		memcpy(name, v->cfg.name, sizeof(name));
		daemon_vgpu_free(d, v); /* gone from the state first */
		if (waiter)
			daemon_admin_reply(d, waiter, VGPU_ADMIN_OK, NULL,
					   "destroyed vGPU %s", name);
		domain_check(d, gpu);
		return;
	}
	if (d->stopping || v->stop == DAEMON_STOP_EXIT) {
		daemon_log("vGPU %s: worker pid %d %s", v->cfg.name, (int)pid,
			   how);
		return;
	}
	if (daemon_state_suspended(v)) {
		daemon_log(
			"vGPU %s: worker pid %d %s while suspended; it stays "
			"suspended (a resume starts a new, empty worker)",
			v->cfg.name, (int)pid, how);
		daemon_state_worker_gone(d, v);
		domain_check(d, gpu);
		return;
	}
	if (v->stop == DAEMON_STOP_LIVENESS) {
		/* no GPU fault: only it comes back, at once */
		daemon_log(
			"vGPU %s: worker pid %d %s (it had stopped serving); "
			"restarting it",
			v->cfg.name, (int)pid, how);
		v->state = VGPU_ADMIN_STATE_RESTARTING;
		v->retry_at = daemon_now_ms();
		return;
	}
	if (v->stop == DAEMON_STOP_DOMAIN) {
		daemon_log("vGPU %s: worker pid %d %s (domain restart)",
			   v->cfg.name, (int)pid, how);
		if (!daemon_vgpu_shared(v))
			v->retry_at = daemon_now_ms();
		domain_check(d, gpu);
		return;
	}
	if (!v->ready) {
		if (v->start_error[0])
			snprintf(why, sizeof(why), "%s", v->start_error);
		else
			snprintf(why, sizeof(why),
				 "vgpu-worker %s before it was ready (see "
				 "vgpud's log)",
				 how);
		daemon_log("vGPU %s: worker pid %d %s before it was ready",
			   v->cfg.name, (int)pid, how);
		start_failed(d, v, why);
		domain_check(d, gpu);
		return;
	}
	if ((v->fault_reported || !clean) && !daemon_vgpu_shared(v)) {
		snprintf(why, sizeof(why), "worker pid %d %s", (int)pid, how);
		exclusive_fault(d, v, why);
		return;
	}
	if (v->fault_reported || !clean) {
		snprintf(why, sizeof(why), "worker pid %d %s", (int)pid, how);
		daemon_log("vGPU %s: %s", v->cfg.name, why);
		v->state = VGPU_ADMIN_STATE_RESTARTING;
		domain_fault(d, gpu, v, why);
		domain_check(d, gpu);
		return;
	}
	/* exit 0 unasked: no fault, so only this one comes back */
	daemon_log("vGPU %s: worker pid %d exited unasked (status 0); "
		   "restarting it",
		   v->cfg.name, (int)pid);
	v->state = VGPU_ADMIN_STATE_RESTARTING;
	v->retry_at = daemon_now_ms();
}

void daemon_workers_reap(struct daemon *d)
{
	struct daemon_vgpu *v;
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (v = d->vgpus; v; v = v->next)
			if (v->pid == pid)
				break;
		if (v && !v->adopted)
			worker_exited(d, v, st);
	}
}

void daemon_worker_pidfd(struct daemon *d, struct daemon_vgpu *v)
{
	worker_exited(d, v, -1);
}

/*
 * After a vgpud restart v's worker was gone (or not the one recorded):
 * an exclusive vGPU is started again; a shared one takes its GPU's
 * shared domain down and up again, since MPS may hold a fault of it.
 */
void daemon_vgpu_gone(struct daemon *d, struct daemon_vgpu *v)
{
	v->pid = 0;
	v->state = VGPU_ADMIN_STATE_RESTARTING;
	d->state_dirty = true;
	if (!daemon_vgpu_shared(v)) {
		v->retry_at = daemon_now_ms();
		return;
	}
	domain_fault(d, v->cfg.gpu, v, "had no worker when vgpud came back");
}

void daemon_workers_timers(struct daemon *d, int64_t now)
{
	struct daemon_vgpu *v, *next;
	uint32_t gpu;

	for (gpu = 0; gpu < d->ngpus && !d->stopping; gpu++) {
		struct daemon_domain *dom = &d->domains[gpu];

		if (dom->recovering && dom->restart_at &&
		    now >= dom->restart_at)
			domain_restart(d, gpu);
	}
	daemon_resize_timers(d, now);
	daemon_state_timers(d, now);
	daemon_sched_timers(d, now);
	daemon_liveness_check(d, now);

	for (v = d->vgpus; v; v = next) {
		next = v->next;
		if (v->pid && v->kill_deadline && now >= v->kill_deadline) {
			daemon_log("vGPU %s: worker pid %d did not stop in "
				   "time; killing it",
				   v->cfg.name, (int)v->pid);
			daemon_vgpu_kill(v, SIGKILL);
			v->kill_deadline = 0;
		}
		if (v->pid && v->ready_deadline && now >= v->ready_deadline) {
			snprintf(v->start_error, sizeof(v->start_error),
				 "the worker did not become ready within %d s",
				 d->ready_timeout_ms / 1000);
			daemon_log("vGPU %s: %s; killing pid %d", v->cfg.name,
				   v->start_error, (int)v->pid);
			v->stop = DAEMON_STOP_START_FAILED;
			daemon_vgpu_kill(v, SIGKILL);
			v->ready_deadline = 0;
		}
		if (!v->pid && v->retry_at && now >= v->retry_at &&
		    !d->stopping) {
			v->retry_at = 0;
			if (daemon_vgpu_shared(v) &&
			    d->domains[v->cfg.gpu].recovering)
				continue; /* the domain restart starts it */
			if (daemon_vgpu_start(d, v) < 0)
				start_failed(d, v, v->start_error);
		}
	}
}

int64_t daemon_workers_next_deadline(struct daemon *d)
{
	struct daemon_vgpu *v;
	int64_t next = 0;
	uint32_t i;

#define CONSIDER(t)                                                            \
	do {                                                                   \
		if ((t) && (!next || (t) < next))                              \
			next = (t);                                            \
	} while (0)
	for (v = d->vgpus; v; v = v->next) {
		if (v->pid) {
			CONSIDER(v->kill_deadline);
			CONSIDER(v->ready_deadline);
			CONSIDER(daemon_resize_deadline(v));
			CONSIDER(daemon_state_deadline(v));
			CONSIDER(daemon_liveness_deadline(d, v));
		} else {
			CONSIDER(v->retry_at);
		}
	}
	for (i = 0; i < d->ngpus; i++)
		CONSIDER(d->domains[i].restart_at);
	CONSIDER(daemon_sched_deadline(d));
	CONSIDER(daemon_swap_next_deadline(d));
#undef CONSIDER
	return next;
}

bool daemon_workers_alive(struct daemon *d)
{
	struct daemon_vgpu *v;

	for (v = d->vgpus; v; v = v->next)
		if (v->pid)
			return true;
	return false;
}
