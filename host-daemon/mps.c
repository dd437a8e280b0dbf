/* SPDX-License-Identifier: MIT */
/*
 * MPS for the shared fault domains (see mps.h). We talk to MPS only
 * through its own tool, nvidia-cuda-mps-control, with the pipe and log
 * directories in its environment; every run has a timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon.h"
#include "mps.h"

#define MPS_CONTROL	     "nvidia-cuda-mps-control"
#define MPS_QUERY_TIMEOUT_MS 5000
#define MPS_START_TIMEOUT_MS 10000
#define MPS_QUIT_TIMEOUT_MS  10000
#define MPS_DEFAULT_PATH                                                       \
	"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* The control binary on PATH (or the default path), into m->control. */
static int mps_find_control(struct mps *m)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;
	int found = -1;

	copy = strdup(path && *path ? path : MPS_DEFAULT_PATH);
	if (!copy)
		return -1;
	for (dir = strtok_r(copy, ":", &save); dir;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(m->control, sizeof(m->control), "%s/%s", dir,
			 MPS_CONTROL);
		if (access(m->control, X_OK) == 0) {
			found = 0;
			break;
		}
	}
	free(copy);
	return found;
}

/* A directory owned by uid:gid, mode 0755; never through a symlink. */
static int mps_make_dir(const char *dir, uid_t uid, gid_t gid, char *err,
			size_t errlen)
{
	struct stat st;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", dir,
			 strerror(errno));
		return -1;
	}
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a directory", dir);
		return -1;
	}
	if (chown(dir, uid, gid) < 0 || chmod(dir, 0755) < 0) {
		snprintf(err, errlen, "cannot give %s to the worker user: %s",
			 dir, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Run nvidia-cuda-mps-control with args, input on its stdin and its
 * output (stdout and stderr) into out. Returns the wait status, or -1
 * when it could not run or ran past timeout_ms (then it is killed).
 * With capture false, its stdio is /dev/null (for -d: the daemon it
 * leaves behind must not hold our pipes).
 */
static int mps_run(const struct mps *m, const char *arg, const char *input,
		   bool capture, int timeout_ms, char *out, size_t outlen)
{
	char pipe_env[PATH_MAX + 32], log_env[PATH_MAX + 32], path_env[4096];
	char *envp[] = {path_env, pipe_env, log_env, NULL};
	char *argv[] = {(char *)m->control, (char *)arg, NULL};
	int in[2] = {-1, -1}, outp[2] = {-1, -1};
	int64_t deadline = daemon_now_ms() + timeout_ms;
	size_t used = 0;
	int status = -1;
	bool exited = false;
	pid_t pid;

	snprintf(pipe_env, sizeof(pipe_env), "CUDA_MPS_PIPE_DIRECTORY=%s",
		 m->pipe_dir);
	snprintf(log_env, sizeof(log_env), "CUDA_MPS_LOG_DIRECTORY=%s",
		 m->log_dir);
	snprintf(path_env, sizeof(path_env), "PATH=%s",
		 getenv("PATH") ? getenv("PATH") : MPS_DEFAULT_PATH);
	if (out && outlen)
		out[0] = '\0';
	if (pipe2(in, O_CLOEXEC) < 0)
		return -1;
	if (capture && pipe2(outp, O_CLOEXEC) < 0) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		close(in[0]);
		close(in[1]);
		if (capture) {
			close(outp[0]);
			close(outp[1]);
		}
		return -1;
	}
	if (pid == 0) {
		sigset_t none;
		int null = open("/dev/null", O_RDWR);

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		dup2(in[0], 0);
		dup2(capture ? outp[1] : null, 1);
		dup2(capture ? outp[1] : null, 2);
		if (!input)
			dup2(null, 0);
		execve(m->control, argv, envp);
		_exit(127);
	}
	close(in[0]);
	if (capture)
		close(outp[1]);
	if (input) {
		ssize_t w = write(in[1], input, strlen(input));

		(void)w; /* a control tool that does not read just fails */
	}
	close(in[1]);

	while (!exited) {
		int64_t left = deadline - daemon_now_ms();
		pid_t w;

		if (left <= 0)
			break;
		if (capture) {
			struct pollfd pfd = {.fd = outp[0], .events = POLLIN};

			if (poll(&pfd, 1, left < 50 ? (int)left : 50) > 0) {
				char buf[512];
				ssize_t n = read(outp[0], buf, sizeof(buf));

				if (n > 0 && out && used + 1 < outlen) {
					size_t k = (size_t)n;

					if (k > outlen - 1 - used)
						k = outlen - 1 - used;
					memcpy(out + used, buf, k);
					used += k;
					out[used] = '\0';
				}
			}
		} else {
			usleep(20000);
		}
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			exited = true;
	}
	if (capture)
		close(outp[0]);
	if (!exited) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return status;
}

/* True when a control daemon answers get_server_list on m->pipe_dir. */
static bool mps_answers(const struct mps *m)
{
	char path[PATH_MAX + 16], out[1024];
	int st;

	/* no control pipe, no daemon: do not let the tool wait on one */
	snprintf(path, sizeof(path), "%s/control", m->pipe_dir);
	if (access(path, F_OK) < 0)
		return false;
	st = mps_run(m, NULL, "get_server_list\n", true, MPS_QUERY_TIMEOUT_MS,
		     out, sizeof(out));
	return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int mps_start(struct mps *m, const char *run_dir, uid_t uid, gid_t gid,
	      char *err, size_t errlen)
{
	int st, i;

	memset(m, 0, sizeof(*m));
	snprintf(m->pipe_dir, sizeof(m->pipe_dir), "%s/mps", run_dir);
	snprintf(m->log_dir, sizeof(m->log_dir), "%s/mps-log", run_dir);
	if (mps_find_control(m) < 0) {
		snprintf(err, errlen,
			 MPS_CONTROL " was not found on PATH; the cuda "
				     "backend needs MPS (install the NVIDIA "
				     "driver's utilities, e.g. "
				     "nvidia-utils-<version>, or run vgpud "
				     "--backend sim)");
		return -1;
	}
	if (mps_make_dir(m->pipe_dir, uid, gid, err, errlen) ||
	    mps_make_dir(m->log_dir, uid, gid, err, errlen))
		return -1;

	if (mps_answers(m)) {
		m->active = true;
		daemon_log("MPS: using the control daemon already serving %s "
			   "(it stays running when vgpud exits)",
			   m->pipe_dir);
		return 0;
	}
	st = mps_run(m, "-d", NULL, false, MPS_START_TIMEOUT_MS, NULL, 0);
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(err, errlen,
			 "%s -d failed (%s %d); see %s/control.log", m->control,
			 st >= 0 && WIFEXITED(st) ? "exit status" : "status",
			 st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : st,
			 m->log_dir);
		return -1;
	}
	m->started = true;
	/* -d returns once it has forked; wait until it answers */
	for (i = 0; i < 50; i++) {
		if (mps_answers(m)) {
			m->active = true;
			daemon_log("MPS: started the control daemon on %s "
				   "(logs in %s)",
				   m->pipe_dir, m->log_dir);
			return 0;
		}
		usleep(100000);
	}
	snprintf(err, errlen,
		 "the MPS control daemon started on %s does not answer; see "
		 "%s/control.log",
		 m->pipe_dir, m->log_dir);
	mps_stop(m);
	return -1;
}

void mps_stop(struct mps *m)
{
	char out[1024];
	int st;

	if (!m->started)
		return;
	st = mps_run(m, NULL, "quit\n", true, MPS_QUIT_TIMEOUT_MS, out,
		     sizeof(out));
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		daemon_log("MPS: 'quit' to the control daemon on %s failed: "
			   "%s",
			   m->pipe_dir, out[0] ? out : "no answer");
	else
		daemon_log("MPS: stopped the control daemon on %s",
			   m->pipe_dir);
	m->started = false;
	m->active = false;
}
