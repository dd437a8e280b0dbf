/* SPDX-License-Identifier: MIT */
/*
 * Re-adoption of a worker by a restarted vgpud (host-daemon/worker_adopt.c):
 * the ctl_path listener (0600, stale sockets replaced, live ones and other
 * files refused), one controller at a time, root peers only, the
 * VGPU_CTL_ADOPTED message, and the orphan timer. No backend: the client
 * totals come from a stub.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_msg.h"
#include "worker.h"

#define STUB_KERNELS 1234u

/* The worker's client totals, as worker_client.c would report them. */
void worker_client_stats(struct worker *w, struct vgpu_ctl_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->clients = w->nclients;
	st->kernels = STUB_KERNELS;
	st->memory_used = 4096;
}

struct fixture {
	char dir[64];
	struct worker *w;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/vgpu-adopt.XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	f->w = calloc(1, sizeof(*f->w));
	if (!f->w) {
		rmdir(f->dir);
		free(f);
		return -1;
	}
	snprintf(f->w->cfg.name, sizeof(f->w->cfg.name), "adopt-test");
	snprintf(f->w->cfg.ctl_path, sizeof(f->w->cfg.ctl_path), "%s/w.sock",
		 f->dir);
	f->w->cfg.orphan_timeout_s = 30;
	f->w->cfg.va_base = 0x500000000000ull;
	f->w->ctl_fd = -1;
	f->w->adopt.listen_fd = -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char path[128];

	worker_adopt_close(f->w);
	if (f->w->ctl_fd >= 0)
		close(f->w->ctl_fd);
	snprintf(path, sizeof(path), "%s/w.sock", f->dir);
	unlink(path);
	rmdir(f->dir);
	free(f->w);
	free(f);
	return 0;
}

/* A SOCK_SEQPACKET socket connected to path, or -1. */
static int connect_to(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A non-blocking connection attempt: the descriptor, or -1 once the
 * listener's backlog is full. */
static int connect_nonblock(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		assert_int_equal(errno, EAGAIN);
		close(fd);
		return -1;
	}
	return fd;
}

/* Bind a socket at path; listening or not. Returns the descriptor. */
static int bind_at(const char *path, int do_listen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (do_listen)
		assert_int_equal(listen(fd, 8), 0);
	return fd;
}

/* Wait until the listener has a connection to accept. */
static void wait_pending(struct worker *w)
{
	struct pollfd p = {.fd = w->adopt.listen_fd, .events = POLLIN};

	assert_int_equal(poll(&p, 1, 2000), 1);
}

/* The peer closed without a word: recv sees the end. */
static int closed_by_peer(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char c;

	if (poll(&p, 1, 2000) != 1)
		return 0;
	return recv(fd, &c, 1, MSG_DONTWAIT) == 0;
}

static void expect_listen_fails(struct worker *w, const char *what)
{
	char err[256] = "";

	assert_int_not_equal(worker_adopt_listen(w, err, sizeof(err)), 0);
	assert_int_equal(w->adopt.listen_fd, -1);
	if (!strstr(err, what))
		fail_msg("message '%s' does not say '%s'", err, what);
}

/* ---- the listener ----------------------------------------------------- */

static void listen_without_ctl_path_does_nothing(void **state)
{
	struct fixture *f = *state;
	char err[256] = "";

	f->w->cfg.ctl_path[0] = 0;
	assert_int_equal(worker_adopt_listen(f->w, err, sizeof(err)), 0);
	assert_int_equal(f->w->adopt.listen_fd, -1);
	worker_adopt_close(f->w); /* harmless */
}

static void listen_creates_a_private_socket_and_close_removes_it(void **state)
{
	struct fixture *f = *state;
	char err[256] = "";
	struct stat st;

	assert_int_equal(worker_adopt_listen(f->w, err, sizeof(err)), 0);
	assert_true(f->w->adopt.listen_fd >= 0);
	assert_int_equal(stat(f->w->cfg.ctl_path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_true(fcntl(f->w->adopt.listen_fd, F_GETFD) & FD_CLOEXEC);

	worker_adopt_close(f->w);
	assert_int_equal(f->w->adopt.listen_fd, -1);
	assert_int_equal(stat(f->w->cfg.ctl_path, &st), -1);
	assert_int_equal(errno, ENOENT);
	worker_adopt_close(f->w); /* idempotent */
}

static void listen_replaces_a_stale_socket(void **state)
{
	struct fixture *f = *state;
	char err[256] = "";
	int old = bind_at(f->w->cfg.ctl_path, 0), c;

	close(old); /* its file stays behind, nobody answers on it */
	assert_int_equal(worker_adopt_listen(f->w, err, sizeof(err)), 0);
	c = connect_to(f->w->cfg.ctl_path);
	assert_true(c >= 0);
	close(c);
}

static void listen_refuses_a_path_someone_listens_on(void **state)
{
	struct fixture *f = *state;
	int live = bind_at(f->w->cfg.ctl_path, 1), conns[64], n;
	struct stat st;

	expect_listen_fails(f->w, f->w->cfg.ctl_path);
	expect_listen_fails(f->w, "another process listens there");
	/* even one that accepts nobody (a full backlog): no hang */
	for (n = 0; n < 64; n++)
		if ((conns[n] = connect_nonblock(f->w->cfg.ctl_path)) < 0)
			break;
	assert_true(n < 64);
	expect_listen_fails(f->w, "another process listens there");
	while (n--)
		close(conns[n]);
	/* the live one is untouched */
	assert_int_equal(stat(f->w->cfg.ctl_path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	close(live);
}

static void listen_refuses_a_file_that_is_not_a_socket(void **state)
{
	struct fixture *f = *state;
	int fd = open(f->w->cfg.ctl_path, O_CREAT | O_WRONLY, 0600);

	assert_true(fd >= 0);
	close(fd);
	expect_listen_fails(f->w, "not a socket");
	assert_int_equal(access(f->w->cfg.ctl_path, F_OK), 0);
}

static void listen_names_the_path_when_bind_fails(void **state)
{
	struct fixture *f = *state;

	snprintf(f->w->cfg.ctl_path, sizeof(f->w->cfg.ctl_path),
		 "%s/no-such-dir/w.sock", f->dir);
	expect_listen_fails(f->w, f->w->cfg.ctl_path);
	expect_listen_fails(f->w, "bind");
}

static void listen_refuses_an_unterminated_path(void **state)
{
	struct fixture *f = *state;

	memset(f->w->cfg.ctl_path, 'a', sizeof(f->w->cfg.ctl_path));
	expect_listen_fails(f->w, "ctl_path is not NUL-terminated");
}

static void close_leaves_a_newer_socket_alone(void **state)
{
	struct fixture *f = *state;
	char err[256] = "";
	struct stat st;
	int other;

	assert_int_equal(worker_adopt_listen(f->w, err, sizeof(err)), 0);
	/* someone else has taken the path meanwhile */
	assert_int_equal(unlink(f->w->cfg.ctl_path), 0);
	other = bind_at(f->w->cfg.ctl_path, 1);
	worker_adopt_close(f->w);
	assert_int_equal(stat(f->w->cfg.ctl_path, &st), 0);
	close(other);
}

/* ---- adoption --------------------------------------------------------- */

static void accept_refuses_a_second_controller(void **state)
{
	struct fixture *f = *state;
	char err[256] = "";
	int c;

	assert_int_equal(worker_adopt_listen(f->w, err, sizeof(err)), 0);
	f->w->ctl_fd = dup(2); /* stands for vgpud's connection */
	c = connect_to(f->w->cfg.ctl_path);
	assert_true(c >= 0);
	wait_pending(f->w);
	assert_int_equal(worker_adopt_accept(f->w, 1), 1);
	assert_true(closed_by_peer(c));
	close(c);
}

static void accept_takes_a_root_peer_and_says_adopted(void **state)
{
	struct fixture *f = *state;
	struct vgpu_ctl_adopted a;
	char err[256] = "";
	uint32_t type, len;
	int c;

	if (geteuid() != 0)
		skip(); /* only root may adopt */
	assert_int_equal(worker_adopt_listen(f->w, err, sizeof(err)), 0);
	f->w->nclients = 2;
	assert_int_equal(worker_adopt_ctl_lost(f->w, 2), 0);
	c = connect_to(f->w->cfg.ctl_path);
	assert_true(c >= 0);
	wait_pending(f->w);
	assert_int_equal(worker_adopt_accept(f->w, 0), 1);
	assert_true(f->w->ctl_fd >= 0);

	memset(&a, 0xaa, sizeof(a));
	assert_int_equal(ctl_recv(c, &type, &a, sizeof(a), &len, NULL), 0);
	assert_int_equal(type, VGPU_CTL_ADOPTED);
	assert_int_equal(len, sizeof(a));
	assert_int_equal(a.pid, getpid());
	assert_memory_equal(&a.cfg, &f->w->cfg, sizeof(a.cfg));
	assert_int_equal(a.stats.clients, 2);
	assert_int_equal(a.stats.kernels, STUB_KERNELS);

	/* the connection is the control connection now: both ways */
	assert_int_equal(ctl_send(f->w->ctl_fd, VGPU_CTL_STATS, &a.stats,
				  sizeof(a.stats), -1),
			 0);
	assert_int_equal(
		ctl_recv(c, &type, &a.stats, sizeof(a.stats), &len, NULL), 0);
	assert_int_equal(type, VGPU_CTL_STATS);
	assert_int_equal(ctl_send(c, VGPU_CTL_SHUTDOWN, NULL, 0, -1), 0);
	assert_int_equal(ctl_recv(f->w->ctl_fd, &type, NULL, 0, &len, NULL), 0);
	assert_int_equal(type, VGPU_CTL_SHUTDOWN);
	close(c);
}

static void accept_refuses_a_peer_that_is_not_root(void **state)
{
	struct fixture *f = *state;
	char err[256] = "";
	int status, pipefd[2];
	pid_t pid;
	char go;

	assert_int_equal(worker_adopt_listen(f->w, err, sizeof(err)), 0);
	assert_int_equal(worker_adopt_ctl_lost(f->w, 1), 0);
	assert_int_equal(pipe(pipefd), 0);
	/* as root, let the listener's file be reachable by the child */
	if (geteuid() == 0) {
		assert_int_equal(chmod(f->dir, 0711), 0);
		assert_int_equal(chmod(f->w->cfg.ctl_path, 0666), 0);
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int c, ok;

		close(pipefd[0]);
		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(10);
		c = connect_to(f->w->cfg.ctl_path);
		if (c < 0)
			_exit(11);
		if (write(pipefd[1], "c", 1) != 1)
			_exit(12);
		ok = closed_by_peer(c);
		_exit(ok ? 0 : 13);
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &go, 1), 1);
	close(pipefd[0]);
	wait_pending(f->w);
	assert_int_equal(worker_adopt_accept(f->w, 0), 0);
	assert_int_equal(f->w->ctl_fd, -1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- vgpud gone: the orphan timer ------------------------------------- */

static void ctl_lost_closes_the_old_connection(void **state)
{
	struct fixture *f = *state;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	f->w->ctl_fd = sv[0];
	assert_int_equal(worker_adopt_ctl_lost(f->w, 3), 0);
	assert_int_equal(f->w->ctl_fd, -1);
	assert_true(closed_by_peer(sv[1]));
	close(sv[1]);
}

static void without_ctl_path_exit_once_the_last_client_leaves(void **state)
{
	struct fixture *f = *state;
	char err[256] = "";

	f->w->cfg.ctl_path[0] = 0;
	assert_int_equal(worker_adopt_listen(f->w, err, sizeof(err)), 0);
	assert_int_equal(worker_adopt_ctl_lost(f->w, 1), 0);
	assert_int_equal(worker_adopt_idle(f->w), 1);
	assert_int_equal(worker_adopt_ctl_lost(f->w, 0), 1);
	assert_int_equal(worker_adopt_expired(f->w), 0);
}

static void orphan_timeout_zero_exits_at_once(void **state)
{
	struct fixture *f = *state;
	char err[256] = "";

	f->w->cfg.orphan_timeout_s = 0;
	assert_int_equal(worker_adopt_listen(f->w, err, sizeof(err)), 0);
	assert_int_equal(worker_adopt_ctl_lost(f->w, 0), 1);
}

static void orphan_timer_runs_only_without_clients(void **state)
{
	struct fixture *f = *state;
	char err[256] = "";
	uint64_t t;

	f->w->cfg.orphan_timeout_s = 5;
	assert_int_equal(worker_adopt_listen(f->w, err, sizeof(err)), 0);
	/* clients left: no timer, poll as before */
	assert_int_equal(worker_adopt_ctl_lost(f->w, 2), 0);
	assert_int_equal(f->w->adopt.deadline_ns, 0);
	assert_int_equal(worker_adopt_poll_timeout(f->w, 1000), 1000);
	assert_int_equal(worker_adopt_expired(f->w), 0);

	/* the last one leaves: the timer starts, and a second call does not
	 * push it back */
	assert_int_equal(worker_adopt_idle(f->w), 0);
	t = f->w->adopt.deadline_ns;
	assert_true(t > worker_now_ns() + 4000000000ull);
	assert_int_equal(worker_adopt_idle(f->w), 0);
	assert_int_equal(f->w->adopt.deadline_ns, t);
	assert_int_equal(worker_adopt_poll_timeout(f->w, 1000), 1000);
	assert_true(worker_adopt_poll_timeout(f->w, -1) <= 5001);
	assert_int_equal(worker_adopt_expired(f->w), 0);

	/* close to the end, poll wakes for it; past it, exit */
	f->w->adopt.deadline_ns = worker_now_ns() + 200000000ull;
	assert_true(worker_adopt_poll_timeout(f->w, 1000) <= 201);
	f->w->adopt.deadline_ns = worker_now_ns() - 1;
	assert_int_equal(worker_adopt_poll_timeout(f->w, 1000), 0);
	assert_int_equal(worker_adopt_expired(f->w), 1);
}

static void adoption_stops_the_orphan_timer(void **state)
{
	struct fixture *f = *state;
	char err[256] = "";
	int c;

	if (geteuid() != 0)
		skip();
	assert_int_equal(worker_adopt_listen(f->w, err, sizeof(err)), 0);
	assert_int_equal(worker_adopt_ctl_lost(f->w, 0), 0);
	assert_int_not_equal(f->w->adopt.deadline_ns, 0);
	c = connect_to(f->w->cfg.ctl_path);
	assert_true(c >= 0);
	wait_pending(f->w);
	assert_int_equal(worker_adopt_accept(f->w, 0), 1);
	assert_int_equal(f->w->adopt.deadline_ns, 0);
	assert_int_equal(worker_adopt_expired(f->w), 0);
	close(c);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(listen_without_ctl_path_does_nothing),
		T(listen_creates_a_private_socket_and_close_removes_it),
		T(listen_replaces_a_stale_socket),
		T(listen_refuses_a_path_someone_listens_on),
		T(listen_refuses_a_file_that_is_not_a_socket),
		T(listen_names_the_path_when_bind_fails),
		T(listen_refuses_an_unterminated_path),
		T(close_leaves_a_newer_socket_alone),
		T(accept_refuses_a_second_controller),
		T(accept_takes_a_root_peer_and_says_adopted),
		T(accept_refuses_a_peer_that_is_not_root),
		T(ctl_lost_closes_the_old_connection),
		T(without_ctl_path_exit_once_the_last_client_leaves),
		T(orphan_timeout_zero_exits_at_once),
		T(orphan_timer_runs_only_without_clients),
		T(adoption_stops_the_orphan_timer),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
