/* SPDX-License-Identifier: MIT */
/*
 * Re-adoption: a worker outlives its vgpud. With cfg.ctl_path set, the
 * worker listens there (AF_UNIX SOCK_SEQPACKET, 0600, its own user) from
 * start-up on. While vgpud's control connection is open, anything that
 * connects is refused: one controller at a time. When that connection
 * closes, the worker goes on serving its clients and waits for a
 * restarted vgpud (root) to connect; the first message on the new
 * connection is VGPU_CTL_ADOPTED, then everything goes on as before.
 *
 * A worker left alone exits once it has had no vgpud and no clients for
 * cfg.orphan_timeout_s seconds. Without ctl_path the old rule holds: it
 * exits as soon as vgpud is gone and the last client has left, since
 * nobody could hand it a new client.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cuda.h>

#include "ctl_msg.h"
#include "worker.h"
#include "worker_state.h"

#define ADOPT_BACKLOG	     4
#define ADOPT_SEND_TIMEOUT_S 2 /* as for the --ctl-fd socket */
#define ADOPT_NS_PER_S	     1000000000ull

/* The ctl_path as a socket address; -1 when it does not fit. */
static int adopt_addr(const char *path, struct sockaddr_un *sa)
{
	size_t n = strnlen(path, sizeof(sa->sun_path));

	if (n == 0 || n >= sizeof(sa->sun_path))
		return -1;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, n);
	return 0;
}

/*
 * Something already at the path: a live listener (another worker that
 * still owns it) is an error; a socket nobody answers on is the leftover
 * of a worker that died, and is removed. 0 or a CUresult with err set.
 */
static int adopt_clear_stale(const char *path, const struct sockaddr_un *sa,
			     char *err, size_t len)
{
	struct stat st;
	int fd, rc;

	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return CUDA_SUCCESS;
		snprintf(err, len, "ctl_path %s: %s", path, strerror(errno));
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, len, "ctl_path %s exists and is not a socket",
			 path);
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* non-blocking: a listener with a full backlog answers EAGAIN
	 * instead of holding us up, and is just as alive */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, len, "ctl_path %s: socket: %s", path,
			 strerror(errno));
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	if (rc == 0 || errno != ECONNREFUSED) {
		snprintf(err, len, "ctl_path %s: %s", path,
			 rc == 0 || errno == EAGAIN
				 ? "another process listens there"
				 : strerror(errno));
		close(fd);
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	close(fd);
	if (unlink(path) && errno != ENOENT) {
		snprintf(err, len, "ctl_path %s: removing the stale socket: %s",
			 path, strerror(errno));
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	return CUDA_SUCCESS;
}

int worker_adopt_listen(struct worker *w, char *err, size_t len)
{
	const char *path = w->cfg.ctl_path;
	struct sockaddr_un sa;
	struct stat st;
	mode_t old;
	int fd, rc;

	w->adopt.listen_fd = -1;
	w->adopt.deadline_ns = 0;
	if (!path[0])
		return CUDA_SUCCESS;
	if (adopt_addr(path, &sa)) {
		snprintf(err, len,
			 "config: ctl_path is not NUL-terminated within %zu "
			 "bytes",
			 sizeof(w->cfg.ctl_path));
		return CUDA_ERROR_INVALID_VALUE;
	}
	rc = adopt_clear_stale(path, &sa, err, len);
	if (rc)
		return rc;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, len, "ctl_path %s: socket: %s", path,
			 strerror(errno));
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	/* 0600 from the start: no window where others could connect. No
	 * other thread runs yet, so the process-wide umask is ours. */
	old = umask(0177);
	rc = bind(fd, (const struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc) {
		snprintf(err, len, "ctl_path %s: bind: %s", path,
			 strerror(errno));
		close(fd);
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	if (stat(path, &st) || listen(fd, ADOPT_BACKLOG)) {
		snprintf(err, len, "ctl_path %s: %s", path, strerror(errno));
		unlink(path);
		close(fd);
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	w->adopt.dev = st.st_dev;
	w->adopt.ino = st.st_ino;
	w->adopt.listen_fd = fd;
	return CUDA_SUCCESS;
}

/*
 * Remove the socket file, but only if it is still the one we bound: a
 * path that another worker has since taken over is left alone.
 */
void worker_adopt_unlink(struct worker *w)
{
	struct stat st;

	if (__atomic_load_n(&w->adopt.listen_fd, __ATOMIC_ACQUIRE) < 0)
		return;
	if (lstat(w->cfg.ctl_path, &st) == 0 && S_ISSOCK(st.st_mode) &&
	    st.st_dev == w->adopt.dev && st.st_ino == w->adopt.ino)
		unlink(w->cfg.ctl_path);
}

void worker_adopt_close(struct worker *w)
{
	int fd = w->adopt.listen_fd;

	if (fd < 0)
		return;
	worker_adopt_unlink(w);
	__atomic_store_n(&w->adopt.listen_fd, -1, __ATOMIC_RELEASE);
	close(fd);
}

int worker_adopt_idle(struct worker *w)
{
	if (w->adopt.listen_fd < 0) {
		worker_log(w, "control socket closed; no clients: exiting");
		return 1;
	}
	if (!w->cfg.orphan_timeout_s) {
		worker_log(w, "no vgpud and no clients, orphan timeout 0: "
			      "exiting");
		return 1;
	}
	if (!w->adopt.deadline_ns) {
		w->adopt.deadline_ns =
			worker_now_ns() +
			(uint64_t)w->cfg.orphan_timeout_s * ADOPT_NS_PER_S;
		worker_log(w,
			   "no vgpud and no clients: exiting in %u s "
			   "unless a vgpud adopts this worker",
			   w->cfg.orphan_timeout_s);
	}
	return 0;
}

int worker_adopt_ctl_lost(struct worker *w, uint32_t nclients)
{
	int fd = w->ctl_fd;

	/* -1 before the close: the fault path must never send on a
	 * descriptor number that a new connection may take */
	__atomic_store_n(&w->ctl_fd, -1, __ATOMIC_RELEASE);
	if (fd >= 0)
		close(fd);
	if (!nclients)
		return worker_adopt_idle(w);
	worker_log(w,
		   "control socket closed; serving the remaining %u "
		   "client(s)%s",
		   nclients,
		   w->adopt.listen_fd >= 0 ? " and waiting to be adopted" : "");
	return 0;
}

/* Accept one connection, or -1 (nothing pending, or an error logged). */
static int adopt_accept_one(struct worker *w)
{
	int fd = accept4(w->adopt.listen_fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
	    errno != EINTR && errno != ECONNABORTED)
		worker_log(w, "accept on %s: %s", w->cfg.ctl_path,
			   strerror(errno));
	return fd;
}

/* Take fd as the control connection: who we are first, then business. */
static int adopt_take(struct worker *w, int fd)
{
	struct timeval tv = {.tv_sec = ADOPT_SEND_TIMEOUT_S};
	struct vgpu_ctl_adopted a;
	int rc;

	/* a stuck vgpud must not keep a faulting worker from exiting */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	memset(&a, 0, sizeof(a));
	a.pid = (int32_t)getpid();
	a.cfg = w->cfg;
	worker_client_stats(w, &a.stats);
	rc = ctl_send(fd, VGPU_CTL_ADOPTED, &a, sizeof(a), -1);
	if (rc) {
		worker_log(w, "sending ADOPTED: %s", strerror(-rc));
		return rc;
	}
	__atomic_store_n(&w->ctl_fd, fd, __ATOMIC_RELEASE);
	w->adopt.deadline_ns = 0;
	if (w->state) /* the new vgpud gets the save point's memfd again */
		w->state->sp_sent = false;
	return 0;
}

int worker_adopt_accept(struct worker *w, int attached)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fd;

	if (w->adopt.listen_fd < 0)
		return attached;
	fd = adopt_accept_one(w);
	if (fd < 0)
		return attached;
	if (attached) {
		worker_log(w, "connection on %s refused: a vgpud is attached",
			   w->cfg.ctl_path);
		close(fd);
		return attached;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) ||
	    clen != sizeof(cred) || cred.uid != 0) {
		worker_log(w,
			   "connection on %s refused: peer pid %d uid %d is "
			   "not root",
			   w->cfg.ctl_path,
			   clen == sizeof(cred) ? cred.pid : -1,
			   clen == sizeof(cred) ? (int)cred.uid : -1);
		close(fd);
		return 0;
	}
	if (adopt_take(w, fd)) {
		close(fd);
		return 0;
	}
	worker_log(w, "adopted by a vgpud (pid %d) on %s", cred.pid,
		   w->cfg.ctl_path);
	return 1;
}

int worker_adopt_poll_timeout(const struct worker *w, int timeout_ms)
{
	uint64_t now, left;

	if (!w->adopt.deadline_ns)
		return timeout_ms;
	now = worker_now_ns();
	if (now >= w->adopt.deadline_ns)
		return 0;
	left = (w->adopt.deadline_ns - now) / 1000000u + 1;
	if (left > INT_MAX)
		left = INT_MAX;
	if (timeout_ms < 0 || left < (uint64_t)timeout_ms)
		return (int)left;
	return timeout_ms;
}

int worker_adopt_expired(struct worker *w)
{
	if (!w->adopt.deadline_ns || worker_now_ns() < w->adopt.deadline_ns)
		return 0;
	worker_log(w,
		   "no vgpud adopted this worker within %u s and it has "
		   "no clients: exiting",
		   w->cfg.orphan_timeout_s);
	return 1;
}
