/* SPDX-License-Identifier: MIT */
/*
 * vgpud: the control plane. Options, the run directory and its sockets,
 * signals, and the one poll loop everything else hangs off. See
 * docs/DESIGN.md for the sockets and processes.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <libgen.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "daemon_part.h"
#include "daemon_mdev.h"
#include "daemon_sched.h"
#include "daemon_state_ops.h"
#include "daemon_swap.h"

#define VGPUD_DEFAULT_RUN_DIR "/run/vgpu"
#define VGPUD_DEFAULT_VA_BASE VGPU_VA_FIRST /* include/vgpu/va.h: why */
#define VGPUD_EXIT_GRACE_MS   5000 /* after the SIGKILLs, before giving up */

static const char vgpud_usage[] =
	"usage: vgpud [OPTIONS]\n"
	"\n"
	"The vgpu control plane: discovers the GPUs, plans SM groups, starts\n"
	"one vgpu-worker per vGPU, serves vgpu-admin on DIR/admin.sock (root\n"
	"only) and clients on DIR/client.sock. Runs in the foreground and\n"
	"logs to stderr; stop it with SIGTERM or SIGINT. Must run as root.\n"
	"\n"
	"  --run-dir DIR        sockets and MPS directories (default\n"
	"                       /run/vgpu)\n"
	"  --backend KIND       auto, cuda or sim (default auto: cuda when it\n"
	"                       finds a GPU, else the CPU simulator)\n"
	"  --worker-user NAME   unprivileged user the workers run as\n"
	"                       (default vgpu; create it with\n"
	"                       'useradd --system vgpu')\n"
	"  --worker PATH        the vgpu-worker binary (default: next to\n"
	"                       vgpud)\n"
	"  --va-base HEX        first vGPU's 1 TiB VA window, within\n"
	"                       0x110000000000-0x4f0000000000 (default\n"
	"                       0x110000000000)\n"
	"  --no-mps             cuda: run workers outside MPS (each its own\n"
	"                       fault domain, time-sliced; %smid then reports\n"
	"                       physical SMs). Default: one shared MPS domain\n"
	"  --state FILE         where vgpud keeps its vGPUs, to adopt their\n"
	"                       running workers after a restart (default\n"
	"                       DIR/state.json); a corrupt file stops vgpud\n"
	"                       from starting: move it aside to start empty\n"
	"  --orphan-timeout S   a worker left without vgpud exits after S\n"
	"                       seconds without clients (default 300)\n"
	"  --keep-workers       on SIGTERM leave the workers running (and\n"
	"                       the state file) for the next vgpud, e.g. for\n"
	"                       an upgrade; default: stop them\n"
	"  --mdev MODE          the VM path through /dev/vgpu-ctl\n"
	"                       (vgpu_mdev.ko): auto (default: when the\n"
	"                       device exists, or once it appears: tried\n"
	"                       every 2 s), on (fail without it), off;\n"
	"                       a device lost is tried again (not off)\n"
	"  --policy MODE        every GPU's scheduling policy at start:\n"
	"                       static (default: blueprint sizes fixed),\n"
	"                       fair or priority (vgpu-admin policy --gpu N\n"
	"                       --mode changes it later; the state file\n"
	"                       keeps it across restarts)\n"
	"  --foreground         stay in the foreground (the default)\n"
	"  --help               this text\n"
	"\n"
	"Environment: VGPU_WORKER_WRAPPER (a command prefixed to each\n"
	"worker's command line, e.g. valgrind); VGPU_SIM_* and\n"
	"VGPU_REAL_LIBCUDA are passed on to the workers.\n";

void daemon_log(const char *fmt, ...)
{
	struct timespec ts;
	struct tm tm;
	char when[32];
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ld vgpud: ", when, ts.tv_nsec / 1000000);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int64_t daemon_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct daemon_conn *daemon_conn_new(struct daemon *d, int fd, bool admin)
{
	struct daemon_conn *c = calloc(1, sizeof(*c));
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (!c)
		return NULL;
	c->fd = fd;
	c->admin = admin;
	c->uid = (uid_t)-1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
		c->uid = cred.uid;
		c->pid = cred.pid;
	}
	c->deadline = daemon_now_ms() + (admin ? DAEMON_ADMIN_TIMEOUT_MS
					       : DAEMON_HELLO_TIMEOUT_MS);
	c->next = d->conns;
	d->conns = c;
	return c;
}

void daemon_conn_close(struct daemon *d, struct daemon_conn *c)
{
	if (c->fd < 0)
		return;
	close(c->fd);
	c->fd = -1;
}

/* Free the connections that were closed during this loop iteration. */
static void conns_sweep(struct daemon *d)
{
	struct daemon_conn **pp = &d->conns;

	while (*pp) {
		struct daemon_conn *c = *pp;

		if (c->fd < 0) {
			*pp = c->next;
			free(c);
		} else {
			pp = &c->next;
		}
	}
}

/* ---- start-up ----------------------------------------------------- */

static int parse_options(struct daemon_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"run-dir", required_argument, NULL, 'r'},
		{"backend", required_argument, NULL, 'b'},
		{"worker-user", required_argument, NULL, 'u'},
		{"worker", required_argument, NULL, 'w'},
		{"va-base", required_argument, NULL, 'v'},
		{"foreground", no_argument, NULL, 'f'},
		{"no-mps", no_argument, NULL, 'm'},
		{"state", required_argument, NULL, 's'},
		{"orphan-timeout", required_argument, NULL, 'o'},
		{"keep-workers", no_argument, NULL, 'k'},
		{"mdev", required_argument, NULL, 'M'},
		{"policy", required_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *worker = NULL;
	char *end;
	int opt;

	o->run_dir = VGPUD_DEFAULT_RUN_DIR;
	o->backend = "auto";
	o->worker_user = "vgpu";
	o->va_base = VGPUD_DEFAULT_VA_BASE;
	o->orphan_timeout_s = DAEMON_ORPHAN_TIMEOUT_S;
	o->mdev = "auto";
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			o->run_dir = optarg;
			break;
		case 'b':
			o->backend = optarg;
			break;
		case 'u':
			o->worker_user = optarg;
			break;
		case 'w':
			worker = optarg;
			break;
		case 'v':
			errno = 0;
			o->va_base = strtoull(optarg, &end, 16);
			if (errno || !*optarg || *end) {
				fprintf(stderr,
					"vgpud: --va-base needs a hex address "
					"like 0x110000000000, got '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'f':
			break;
		case 'm':
			o->no_mps = true;
			break;
		case 's':
			if (!*optarg) {
				fprintf(stderr,
					"vgpud: --state needs a file\n");
				return 2;
			}
			o->state_path = optarg;
			break;
		case 'o': {
			unsigned long long t;

			errno = 0;
			t = strtoull(optarg, &end, 10);
			if (errno || !*optarg || *end || *optarg == '-' ||
			    t > 7 * 86400) {
				fprintf(stderr,
					"vgpud: --orphan-timeout needs seconds "
					"(0 to 604800), got '%s'\n",
					optarg);
				return 2;
			}
			o->orphan_timeout_s = (uint32_t)t;
			break;
		}
		case 'k':
			o->keep_workers = true;
			break;
		case 'M':
			if (strcmp(optarg, "auto") && strcmp(optarg, "on") &&
			    strcmp(optarg, "off")) {
				fprintf(stderr,
					"vgpud: --mdev is auto, on or off, "
					"not '%s'\n",
					optarg);
				return 2;
			}
			o->mdev = optarg;
			break;
		case 'P':
			if (strcmp(optarg, "static") &&
			    strcmp(optarg, "fair") &&
			    strcmp(optarg, "priority")) {
				fprintf(stderr,
					"vgpud: --policy is static, fair or "
					"priority, not '%s'\n",
					optarg);
				return 2;
			}
			o->policy = optarg;
			break;
		case 'h':
			fputs(vgpud_usage, stdout);
			return 1;
		default:
			fprintf(stderr, "\n%s", vgpud_usage);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vgpud: unexpected argument '%s'\n\n%s",
			argv[optind], vgpud_usage);
		return 2;
	}
	if (strcmp(o->backend, "auto") && strcmp(o->backend, "cuda") &&
	    strcmp(o->backend, "sim")) {
		fprintf(stderr,
			"vgpud: --backend must be auto, cuda or sim, got "
			"'%s'\n",
			o->backend);
		return 2;
	}
	if (worker) {
		if (!realpath(worker, o->worker_path)) {
			fprintf(stderr, "vgpud: --worker %s: %s\n", worker,
				strerror(errno));
			return 2;
		}
	} else {
		char self[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

		if (n < 0) {
			fprintf(stderr,
				"vgpud: cannot read /proc/self/exe (%s); pass "
				"--worker PATH\n",
				strerror(errno));
			return 2;
		}
		self[n] = '\0';
		snprintf(o->worker_path, sizeof(o->worker_path),
			 "%s/vgpu-worker", dirname(self));
	}
	if (access(o->worker_path, X_OK) < 0) {
		fprintf(stderr,
			"vgpud: the worker %s cannot be executed: %s (build it "
			"with 'make', or pass --worker PATH)\n",
			o->worker_path, strerror(errno));
		return 2;
	}
	return 0;
}

/* The worker user: must exist and must not be root. */
static int resolve_worker_user(struct daemon *d)
{
	const char *name = d->opts.worker_user;
	struct passwd *pw = getpwnam(name);
	int n = DAEMON_MAX_GROUPS;

	if (!pw) {
		fprintf(stderr,
			"vgpud: the worker user '%s' does not exist; create it "
			"with: useradd --system --no-create-home --shell "
			"/usr/sbin/nologin %s (or pass --worker-user NAME)\n",
			name, name);
		return -1;
	}
	if (pw->pw_uid == 0) {
		fprintf(stderr,
			"vgpud: the worker user '%s' is uid 0; workers run "
			"untrusted work and must not be root (create a system "
			"user: useradd --system vgpu)\n",
			name);
		return -1;
	}
	d->worker_uid = pw->pw_uid;
	d->worker_gid = pw->pw_gid;
	if (getgrouplist(name, pw->pw_gid, d->worker_groups, &n) < 0) {
		daemon_log("worker user %s is in more than %d groups; using "
			   "its primary group only",
			   name, DAEMON_MAX_GROUPS);
		d->worker_groups[0] = pw->pw_gid;
		n = 1;
	}
	d->nworker_groups = n;
	return 0;
}

/* DIR: created 0755, or an existing root-owned directory. */
static int make_run_dir(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "vgpud: cannot create %s: %s\n", dir,
			strerror(errno));
		return -1;
	}
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "vgpud: %s is not a directory\n", dir);
		return -1;
	}
	if (st.st_uid != 0 || (st.st_mode & 022)) {
		fprintf(stderr,
			"vgpud: %s must be owned by root and writable by root "
			"only (it holds the admin socket)\n",
			dir);
		return -1;
	}
	if (chmod(dir, 0755) < 0) {
		fprintf(stderr, "vgpud: chmod %s: %s\n", dir, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * DIR/workers: where each worker listens for a restarted vgpud. Owned by
 * the worker user, 0700: only the workers and root get in.
 */
static int make_workers_dir(struct daemon *d)
{
	struct stat st;

	snprintf(d->workers_dir, sizeof(d->workers_dir), "%s/workers",
		 d->opts.run_dir);
	/* DIR/workers/NAME.sock must fit a socket address, and the ctl_path
	 * of struct vgpu_worker_config, for the longest name */
	if (strlen(d->workers_dir) > 38) {
		fprintf(stderr,
			"vgpud: the run directory %s is too long: the workers' "
			"sockets DIR/workers/NAME.sock need it to be at most "
			"30 characters\n",
			d->opts.run_dir);
		return -1;
	}
	if (mkdir(d->workers_dir, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "vgpud: cannot create %s: %s\n", d->workers_dir,
			strerror(errno));
		return -1;
	}
	if (lstat(d->workers_dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    chown(d->workers_dir, d->worker_uid, d->worker_gid) < 0 ||
	    chmod(d->workers_dir, 0700) < 0) {
		fprintf(stderr,
			"vgpud: %s must be a directory of the worker user "
			"(%s)\n",
			d->workers_dir, strerror(errno ? errno : ENOTDIR));
		return -1;
	}
	return 0;
}

static int socket_addr(struct sockaddr_un *addr, const char *path)
{
	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(addr->sun_path)) {
		fprintf(stderr, "vgpud: socket path %s is too long\n", path);
		return -1;
	}
	strcpy(addr->sun_path, path);
	return 0;
}

/*
 * A socket file left behind by a vgpud that died is removed; one that a
 * live vgpud answers on means we must not start.
 */
static int remove_stale_socket(const char *path, const char *dir)
{
	struct sockaddr_un addr;
	struct stat st;
	int fd, r, e;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "vgpud: %s exists and is not a socket\n", path);
		return -1;
	}
	if (socket_addr(&addr, path))
		return -1;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	r = connect(fd, (struct sockaddr *)&addr, sizeof(addr));
	e = errno;
	close(fd);
	if (r == 0 || e == EPROTOTYPE) {
		fprintf(stderr, "vgpud: another vgpud is running on %s\n", dir);
		return -1;
	}
	if (e != ECONNREFUSED && e != ENOENT) {
		fprintf(stderr, "vgpud: cannot check %s: %s\n", path,
			strerror(e));
		return -1;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		fprintf(stderr, "vgpud: cannot remove the stale %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	daemon_log("removed the stale socket %s", path);
	return 0;
}

/* A non-blocking SOCK_SEQPACKET listener at path with the given mode. */
static int listen_on(const char *path, mode_t mode)
{
	struct sockaddr_un addr;
	mode_t old;
	int fd, r;

	if (socket_addr(&addr, path))
		return -1;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		fprintf(stderr, "vgpud: socket: %s\n", strerror(errno));
		return -1;
	}
	old = umask(0177); /* never wider than 0600 until the chmod */
	r = bind(fd, (struct sockaddr *)&addr, sizeof(addr));
	umask(old);
	if (r < 0 || chmod(path, mode) < 0 || listen(fd, 128) < 0) {
		fprintf(stderr, "vgpud: cannot listen on %s: %s\n", path,
			strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* SIGCHLD, SIGTERM, SIGINT, SIGHUP through a signalfd. */
static int setup_signals(struct daemon *d)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -1;
	d->signal_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return d->signal_fd < 0 ? -1 : 0;
}

static void handle_signals(struct daemon *d)
{
	struct signalfd_siginfo si;
	bool child = false;

	while (read(d->signal_fd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			child = true;
			break;
		case SIGTERM:
		case SIGINT:
			if (!d->stopping)
				daemon_log("%s: shutting down",
					   strsignal(si.ssi_signo));
			d->stopping = true;
			break;
		default:
			daemon_log("%s ignored", strsignal(si.ssi_signo));
		}
	}
	if (child)
		daemon_workers_reap(d);
}

/* Keep 0, 1 and 2 open so no socket ever lands on a stdio number. */
static void ensure_stdio(void)
{
	int fd;

	do {
		fd = open("/dev/null", O_RDWR);
	} while (fd >= 0 && fd <= 2);
	if (fd > 2)
		close(fd);
}

/* ---- the loop ----------------------------------------------------- */

enum poll_kind {
	POLL_SIGNAL,
	POLL_ADMIN,
	POLL_CLIENT,
	POLL_CONN,
	POLL_CTL,
	POLL_PIDFD,
	POLL_MDEV
};

struct poll_set {
	struct pollfd *fds;
	enum poll_kind *kind;
	void **ptr;
	size_t n, cap;
};

static int poll_add(struct poll_set *ps, int fd, enum poll_kind kind, void *ptr)
{
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 32;
		struct pollfd *fds = realloc(ps->fds, cap * sizeof(*fds));
		enum poll_kind *k;
		void **p;

		if (!fds)
			return -1;
		ps->fds = fds;
		k = realloc(ps->kind, cap * sizeof(*k));
		if (!k)
			return -1;
		ps->kind = k;
		p = realloc(ps->ptr, cap * sizeof(*p));
		if (!p)
			return -1;
		ps->ptr = p;
		ps->cap = cap;
	}
	ps->fds[ps->n] = (struct pollfd){.fd = fd, .events = POLLIN};
	ps->kind[ps->n] = kind;
	ps->ptr[ps->n] = ptr;
	ps->n++;
	return 0;
}

static void poll_free(struct poll_set *ps)
{
	free(ps->fds);
	free(ps->kind);
	free(ps->ptr);
}

/* What the loop waits on now; listeners only while we accept. */
static int poll_build(struct daemon *d, struct poll_set *ps, bool listen)
{
	struct daemon_conn *c;
	struct daemon_vgpu *v;
	int r = 0;

	ps->n = 0;
	r |= poll_add(ps, d->signal_fd, POLL_SIGNAL, NULL);
	if (listen) {
		r |= poll_add(ps, d->admin_fd, POLL_ADMIN, NULL);
		r |= poll_add(ps, d->client_fd, POLL_CLIENT, NULL);
		for (c = d->conns; c; c = c->next)
			if (c->fd >= 0 && !c->parked)
				r |= poll_add(ps, c->fd, POLL_CONN, c);
	}
	if (daemon_mdev_poll_fd(d) >= 0)
		r |= poll_add(ps, daemon_mdev_poll_fd(d), POLL_MDEV, NULL);
	for (v = d->vgpus; v; v = v->next) {
		if (v->ctl_fd >= 0)
			r |= poll_add(ps, v->ctl_fd, POLL_CTL, v);
		if (v->pidfd >= 0)
			r |= poll_add(ps, v->pidfd, POLL_PIDFD, v);
	}
	return r;
}

/* Milliseconds until the earliest deadline, capped; -1 for none. */
static int poll_timeout(struct daemon *d, int64_t now)
{
	int64_t next = daemon_workers_next_deadline(d);
	int64_t mdev = daemon_mdev_next_deadline(d);
	int64_t held = daemon_ratelimit_deadline();
	struct daemon_conn *c;

	if (mdev && (!next || mdev < next))
		next = mdev;
	/* lines held back are logged when their window ends, not later */
	if (held && (!next || held < next))
		next = held;
	for (c = d->conns; c; c = c->next)
		if (c->fd >= 0 && !c->parked &&
		    (next == 0 || c->deadline < next))
			next = c->deadline;
	if (next == 0)
		return -1;
	if (next <= now)
		return 0;
	return next - now > 60000 ? 60000 : (int)(next - now);
}

static void conns_timers(struct daemon *d, int64_t now)
{
	struct daemon_conn *c;

	for (c = d->conns; c; c = c->next) {
		if (c->fd < 0 || c->parked || now < c->deadline)
			continue;
		if (c->admin)
			daemon_admin_timeout(d, c);
		else
			daemon_client_timeout(d, c);
	}
}

/*
 * One turn: wait, then serve what is ready. Signals (which reap workers
 * and may free vGPUs) come after the descriptors of this turn.
 */
static int loop_once(struct daemon *d, struct poll_set *ps, bool listen)
{
	bool sig = false, pidfd_turn = false, mdev_turn = false;
	size_t i;
	int r;

	if (poll_build(d, ps, listen)) {
		daemon_log("out of memory in the main loop");
		return -1;
	}
	r = poll(ps->fds, ps->n, poll_timeout(d, daemon_now_ms()));
	d->loop_woke_ms = daemon_now_ms(); /* daemon_liveness.c */
	if (r < 0 && errno != EINTR) {
		daemon_log("poll: %s", strerror(errno));
		return -1;
	}
	for (i = 0; r > 0 && i < ps->n; i++) {
		if (!ps->fds[i].revents)
			continue;
		switch (ps->kind[i]) {
		case POLL_SIGNAL:
			sig = true;
			break;
		case POLL_ADMIN:
			daemon_admin_accept(d);
			break;
		case POLL_CLIENT:
			daemon_client_accept(d);
			break;
		case POLL_CONN: {
			struct daemon_conn *c = ps->ptr[i];

			if (c->fd < 0)
				break;
			if (c->admin)
				daemon_admin_input(d, c);
			else
				daemon_client_input(d, c);
			break;
		}
		case POLL_CTL:
			pidfd_turn = true;
			daemon_worker_input(d, ps->ptr[i]);
			break;
		case POLL_PIDFD:
			pidfd_turn = true;
			break;
		case POLL_MDEV:
			mdev_turn = true;
			break;
		}
	}
	/* adopted workers that exited (after their last words, above) */
	for (i = 0; pidfd_turn && i < ps->n; i++) {
		struct daemon_vgpu *v = ps->ptr[i];

		if (ps->kind[i] == POLL_PIDFD && ps->fds[i].revents &&
		    v->pidfd == ps->fds[i].fd)
			daemon_worker_pidfd(d, v);
	}
	/* after the workers' messages of this turn (a READY it answers) */
	if (mdev_turn)
		daemon_mdev_input(d);
	if (sig)
		handle_signals(d);
	daemon_workers_timers(d, daemon_now_ms());
	daemon_mdev_tick(d, daemon_now_ms());
	conns_timers(d, daemon_now_ms());
	daemon_ratelimit_tick(daemon_now_ms()); /* after this turn's lines */
	conns_sweep(d);
	if (d->state_dirty && !d->stopping)
		daemon_state_save(d);
	return 0;
}

/* Answer every parked admin request and drop every connection. */
static void conns_close_all(struct daemon *d)
{
	struct daemon_vgpu *v;
	struct daemon_conn *c;

	daemon_resize_close_waiters(d);
	daemon_state_close_waiters(d);
	for (v = d->vgpus; v; v = v->next) {
		if (v->create_waiter)
			daemon_admin_reply(
				d, v->create_waiter, VGPU_ADMIN_BUSY, NULL,
				"vgpud is shutting down; vGPU %s was "
				"not created",
				v->cfg.name);
		if (v->destroy_waiter)
			daemon_admin_reply(d, v->destroy_waiter, VGPU_ADMIN_OK,
					   NULL,
					   "vgpud is shutting down; it stops "
					   "vGPU %s with every other",
					   v->cfg.name);
		v->create_waiter = v->destroy_waiter = NULL;
	}
	for (c = d->conns; c; c = c->next)
		daemon_conn_close(d, c);
	conns_sweep(d);
}

/* SIGTERM: stop every worker (SHUTDOWN, SIGKILL after 5 s), reap them. */
static void shutdown_workers(struct daemon *d, struct poll_set *ps)
{
	struct daemon_vgpu *v;
	int64_t give_up;

	conns_close_all(d);
	if (d->opts.keep_workers) {
		/* their ctl connections close: they wait for the next vgpud */
		daemon_state_save(d);
		daemon_log("--keep-workers: leaving the workers running; the "
			   "next vgpud adopts them from %s",
			   d->state_path);
		d->mps.started = false; /* the next vgpud stops MPS */
		while (d->vgpus) {
			d->vgpus->cfg.ctl_path[0] = '\0'; /* keep the socket */
			daemon_vgpu_free(d, d->vgpus);
		}
		return;
	}
	for (v = d->vgpus; v; v = v->next)
		if (v->pid)
			daemon_vgpu_stop(d, v, DAEMON_STOP_EXIT,
					 DAEMON_EXIT_KILL_MS);
	give_up = daemon_now_ms() + DAEMON_EXIT_KILL_MS + VGPUD_EXIT_GRACE_MS;
	while (daemon_workers_alive(d) && daemon_now_ms() < give_up) {
		if (loop_once(d, ps, false))
			break;
	}
	daemon_workers_reap(d);
	for (v = d->vgpus; v; v = v->next)
		if (v->pid)
			daemon_log(
				"vGPU %s: worker pid %d would not exit; left "
				"behind",
				v->cfg.name, (int)v->pid);
	while (d->vgpus) {
		d->vgpus->pid = 0;
		daemon_vgpu_free(d, d->vgpus);
	}
	daemon_state_remove(d); /* nothing is left to adopt */
}

int main(int argc, char **argv)
{
	struct daemon *d;
	struct poll_set ps = {0};
	char err[512], serr[PATH_MAX + VGPU_MESSAGE_MAX + 128];
	bool mps_started = false;
	int rc = 1, r;

	ensure_stdio();
	d = calloc(1, sizeof(*d));
	if (!d) {
		fprintf(stderr, "vgpud: out of memory\n");
		return 1;
	}
	d->admin_fd = d->client_fd = d->signal_fd = -1;
	r = parse_options(&d->opts, argc, argv);
	if (r) {
		free(d);
		return r == 1 ? 0 : 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr,
			"vgpud: must run as root (it owns %s/admin.sock, "
			"starts MPS and runs workers as '%s'); try sudo "
			"vgpud\n",
			d->opts.run_dir, d->opts.worker_user);
		free(d);
		return 1;
	}
	snprintf(d->admin_path, sizeof(d->admin_path), "%s/admin.sock",
		 d->opts.run_dir);
	snprintf(d->client_path, sizeof(d->client_path), "%s/client.sock",
		 d->opts.run_dir);
	if (d->opts.state_path)
		snprintf(d->state_path, sizeof(d->state_path), "%s",
			 d->opts.state_path);
	else
		snprintf(d->state_path, sizeof(d->state_path), "%s/state.json",
			 d->opts.run_dir);
	d->plan = calloc(1, sizeof(*d->plan));
	if (!d->plan) {
		fprintf(stderr, "vgpud: out of memory\n");
		goto out;
	}
	if (plan_init(d->plan, d->opts.va_base, err, sizeof(err))) {
		fprintf(stderr, "vgpud: --va-base: %s\n", err);
		goto out;
	}
	if (resolve_worker_user(d) || make_run_dir(d->opts.run_dir) ||
	    make_workers_dir(d) ||
	    remove_stale_socket(d->admin_path, d->opts.run_dir) ||
	    remove_stale_socket(d->client_path, d->opts.run_dir))
		goto out;
	if (setup_signals(d)) {
		fprintf(stderr, "vgpud: signals: %s\n", strerror(errno));
		goto out;
	}
	if (daemon_workers_init(d, err, sizeof(err))) {
		fprintf(stderr, "vgpud: %s\n", err);
		goto out;
	}
	daemon_log("starting: run dir %s, worker %s as user %s (uid %u)",
		   d->opts.run_dir, d->opts.worker_path, d->opts.worker_user,
		   (unsigned)d->worker_uid);
	if (daemon_probe(d, err, sizeof(err))) {
		daemon_log("%s", err);
		goto out;
	}
	/* before the workers are touched (--mdev on may refuse to start);
	 * its EXISTS events are read in the loop, after the adoption */
	if (daemon_mdev_init(d, err, sizeof(err))) {
		daemon_log("%s", err);
		goto out;
	}
	if (daemon_sched_init(d, err, sizeof(err))) {
		daemon_log("%s", err);
		goto out;
	}
	/* all of the state file, checked, or nothing at all */
	if (daemon_state_load(d, &mps_started, serr, sizeof(serr))) {
		fprintf(stderr, "vgpud: %s\n", serr);
		goto out;
	}
	if (d->backend == VGPU_BACKEND_CUDA && !d->opts.no_mps &&
	    mps_start(&d->mps, d->opts.run_dir, d->worker_uid, d->worker_gid,
		      err, sizeof(err))) {
		daemon_log("MPS: %s", err);
		goto out;
	}
	if (mps_started && d->mps.active && !d->mps.started) {
		/* the vgpud before us started it: stopping it is ours now */
		d->mps.started = true;
		daemon_log("MPS: taking over the control daemon the previous "
			   "vgpud started");
	}
	if (d->vgpus)
		daemon_state_adopt(d);
	d->admin_fd = listen_on(d->admin_path, 0600);
	if (d->admin_fd < 0)
		goto out;
	d->client_fd = listen_on(d->client_path, 0666);
	if (d->client_fd < 0)
		goto out;
	daemon_log("ready: admin %s, clients %s, state %s", d->admin_path,
		   d->client_path, d->state_path);
	if (d->state_dirty)
		daemon_state_save(d);

	rc = 0;
	while (!d->stopping) {
		if (loop_once(d, &ps, true)) {
			rc = 1;
			break;
		}
	}
	shutdown_workers(d, &ps);
	daemon_ratelimit_flush();
	daemon_log("stopped");
out:
	daemon_mdev_fini(d);
	mps_stop(&d->mps);
	daemon_part_fini(d);
	daemon_swap_fini(d);
	if (d->admin_fd >= 0) {
		close(d->admin_fd);
		unlink(d->admin_path);
	}
	if (d->client_fd >= 0) {
		close(d->client_fd);
		unlink(d->client_path);
	}
	if (d->signal_fd >= 0)
		close(d->signal_fd);
	if (d->workers_dir[0])
		rmdir(d->workers_dir); /* only when no worker listens */
	rmdir(d->opts.run_dir); /* only when empty; /run/vgpu comes back */
	daemon_workers_fini(d);
	poll_free(&ps);
	free(d->plan);
	free(d);
	return rc;
}
