/* SPDX-License-Identifier: MIT */
/*
 * The client socket: a client connects, sends one struct vgpu_hello, and
 * vgpud either refuses it with a vgpu_hello_reply saying why, or passes
 * the connection to its vGPU's worker (VGPU_CTL_CLIENT + the fd).
 *
 * Clients are untrusted. Every connection is non-blocking and has a
 * deadline; one that says nothing, says too little or too much, or
 * speaks another protocol gets an answer and is closed, without holding
 * up the loop. Any local user may connect, so what one user's
 * connections may take is bounded per user (DAEMON_MAX_HELLO_PER_USER),
 * and what they make vgpud log is rate-limited (daemon_ratelimit.c).
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl_msg.h"
#include "daemon.h"
#include "daemon_swap.h"

void daemon_client_refuse(struct daemon *d, struct daemon_conn *c,
			  int32_t status, const char *fmt, ...)
{
	struct vgpu_hello_reply r;
	va_list ap;

	memset(&r, 0, sizeof(r));
	r.magic = VGPU_PROTO_MAGIC;
	r.major = VGPU_PROTO_MAJOR;
	r.minor = VGPU_PROTO_MINOR;
	r.status = status;
	va_start(ap, fmt);
	vsnprintf(r.message, sizeof(r.message), fmt, ap);
	va_end(ap);
	/* one cause per reason (its format), whoever is refused */
	daemon_ratelimit_log(fmt, "client pid %d (uid %d) refused: %s",
			     (int)c->pid, (int)c->uid, r.message);
	/* never blocks; a client that does not read just loses it */
	ctl_send_fds(c->fd, &r, sizeof(r), NULL, 0);
	daemon_conn_close(d, c);
}

/* Whether c is a client connection that has not said hello yet. */
static bool waits_hello(const struct daemon_conn *c)
{
	return c->fd >= 0 && !c->admin && !c->parked;
}

/* Connections waiting for a hello: all of them, and *mine of uid, the
 * oldest of which is *oldest. */
static unsigned hello_waiting(struct daemon *d, uid_t uid, unsigned *mine,
			      struct daemon_conn **oldest)
{
	struct daemon_conn *c;
	unsigned n = 0;

	*mine = 0;
	*oldest = NULL;
	for (c = d->conns; c; c = c->next) {
		if (!waits_hello(c))
			continue;
		n++;
		if (c->uid != uid)
			continue;
		(*mine)++;
		if (!*oldest || c->deadline <= (*oldest)->deadline)
			*oldest = c; /* the list is newest first */
	}
	return n;
}

/*
 * More than DAEMON_MAX_HELLO_CONNS wait: refuse the oldest connection of
 * the user with the most of them (of equals, the one waiting longest).
 * That user holds at least as many as anyone, so whoever fills the table
 * loses its own connections, never another user's newcomer.
 */
static void hello_make_room(struct daemon *d)
{
	struct {
		uid_t uid;
		unsigned n;
		struct daemon_conn *oldest;
	} users[DAEMON_MAX_HELLO_CONNS + 1], *u, *most = NULL;
	unsigned nusers = 0, i, total = 0;
	struct daemon_conn *c;

	for (c = d->conns; c; c = c->next) {
		if (!waits_hello(c))
			continue;
		total++;
		for (i = 0; i < nusers && users[i].uid != c->uid; i++)
			;
		if (i == nusers) {
			if (nusers == DAEMON_MAX_HELLO_CONNS + 1)
				continue; /* cannot be: the bound keeps it */
			users[nusers].uid = c->uid;
			users[nusers].n = 0;
			users[nusers].oldest = c;
			nusers++;
		}
		u = &users[i];
		u->n++;
		if (c->deadline <= u->oldest->deadline)
			u->oldest = c; /* the list is newest first */
	}
	for (i = 0; i < nusers; i++) {
		u = &users[i];
		if (!most || u->n > most->n ||
		    (u->n == most->n &&
		     u->oldest->deadline < most->oldest->deadline))
			most = u;
	}
	if (!most)
		return;
	daemon_client_refuse(d, most->oldest, VGPU_HELLO_RESOURCES,
			     "vgpud has %u connections waiting for a hello "
			     "and uid %d has the most of them (%u): its "
			     "oldest, this one, is closed to make room",
			     total, (int)most->uid, most->n);
}

void daemon_client_accept(struct daemon *d)
{
	int i;

	for (i = 0; i < 64; i++) {
		struct daemon_conn *c, *oldest;
		unsigned total, mine;
		int fd = accept4(d->client_fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			/* EMFILE and the like come once per connection */
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				daemon_ratelimit_log("clients: accept",
						     "clients: accept: %s",
						     strerror(errno));
			return;
		}
		c = daemon_conn_new(d, fd, false);
		if (!c) {
			close(fd);
			continue;
		}
		/* a real client sends its hello as it connects: served now,
		 * it never waits, however many of its user's start at once */
		daemon_client_input(d, c);
		if (!waits_hello(c))
			continue;
		/* over a bound, the oldest connection of whoever holds too
		 * many is closed, never the newcomer: connections left silent
		 * cannot lock out the clients that come after them, not even
		 * their own user's (until their deadline, they would) */
		total = hello_waiting(d, c->uid, &mine, &oldest);
		if (mine > DAEMON_MAX_HELLO_PER_USER)
			daemon_client_refuse(
				d, oldest, VGPU_HELLO_RESOURCES,
				"uid %d has more than %d connections that "
				"have not said hello to vgpud: its oldest, "
				"this one, is closed to make room",
				(int)c->uid, DAEMON_MAX_HELLO_PER_USER);
		else if (total > DAEMON_MAX_HELLO_CONNS)
			hello_make_room(d);
	}
}

void daemon_client_timeout(struct daemon *d, struct daemon_conn *c)
{
	daemon_client_refuse(d, c, VGPU_HELLO_BAD_MESSAGE,
			     "no hello within %d ms of connecting",
			     DAEMON_HELLO_TIMEOUT_MS);
}

/*
 * Whether uid may use v: it is v's user, or (a group consumer) a member
 * of v's group, as its primary group or a supplementary one.
 */
static bool consumer_allows(const struct daemon_vgpu *v, uid_t uid)
{
	gid_t groups[256];
	struct passwd *pw;
	int n = 256, i;

	if (v->consumer_kind != VGPU_ADMIN_CONSUMER_GROUP)
		return uid == (uid_t)v->cfg.client_uid;
	pw = getpwuid(uid);
	if (!pw)
		return false;
	if (pw->pw_gid == (gid_t)v->consumer_gid)
		return true;
	if (getgrouplist(pw->pw_name, pw->pw_gid, groups, &n) < 0)
		n = 256; /* more than fit: check those that did */
	for (i = 0; i < n; i++)
		if (groups[i] == (gid_t)v->consumer_gid)
			return true;
	return false;
}

/* Why a vGPU that exists cannot take clients now, or NULL if it can. */
static const char *vgpu_unavailable(const struct daemon_vgpu *v)
{
	if (v->state == VGPU_ADMIN_STATE_RUNNING && v->ctl_fd >= 0)
		return NULL;
	switch (v->state) {
	case VGPU_ADMIN_STATE_STARTING:
		return "is starting; try again shortly";
	case VGPU_ADMIN_STATE_RESTARTING:
		return "is restarting after a fault; try again in a few "
		       "seconds";
	case VGPU_ADMIN_STATE_FAILED:
		return "has failed (its worker could not be restarted); an "
		       "administrator must destroy and re-create it";
	case VGPU_ADMIN_STATE_STOPPING:
		return "is being destroyed";
	case VGPU_ADMIN_STATE_SUSPENDED:
		return "is suspended; an administrator must resume it "
		       "(vgpu-admin resume)";
	}
	return "has no worker right now";
}

void daemon_client_input(struct daemon *d, struct daemon_conn *c)
{
	struct vgpu_ctl_client cc;
	struct vgpu_hello h;
	struct daemon_vgpu *v;
	const char *why;
	char err[160];
	ssize_t n;
	int e;

	/* MSG_TRUNC: n is the packet's real size, even if larger */
	n = recv(c->fd, &h, sizeof(h), MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) { /* gave up before saying hello */
		daemon_conn_close(d, c);
		return;
	}
	if ((size_t)n != sizeof(h)) {
		daemon_client_refuse(d, c, VGPU_HELLO_BAD_MESSAGE,
				     "hello is %zd bytes, expected %zu", n,
				     sizeof(h));
		return;
	}
	if (h.magic != VGPU_PROTO_MAGIC) {
		daemon_client_refuse(
			d, c, VGPU_HELLO_BAD_MESSAGE,
			"bad magic 0x%08x in the hello (not a vgpu "
			"client?)",
			h.magic);
		return;
	}
	if (h.flags != 0) {
		daemon_client_refuse(
			d, c, VGPU_HELLO_BAD_MESSAGE,
			"hello flags 0x%x are not defined (must be 0)",
			h.flags);
		return;
	}
	if (h.major != VGPU_PROTO_MAJOR) {
		daemon_client_refuse(
			d, c, VGPU_HELLO_BAD_VERSION,
			"client speaks protocol %u.%u, vgpud speaks "
			"%u.%u",
			h.major, h.minor, VGPU_PROTO_MAJOR, VGPU_PROTO_MINOR);
		return;
	}
	if (!memchr(h.vgpu_name, '\0', sizeof(h.vgpu_name))) {
		daemon_client_refuse(d, c, VGPU_HELLO_BAD_MESSAGE,
				     "the vGPU name in the hello is not "
				     "NUL-terminated");
		return;
	}
	if (!plan_name_valid(h.vgpu_name, err, sizeof(err))) {
		daemon_client_refuse(d, c, VGPU_HELLO_NO_SUCH_VGPU,
				     "no such vGPU: %s (check VGPU)", err);
		return;
	}
	v = daemon_vgpu_find(d, h.vgpu_name);
	if (!v) {
		daemon_client_refuse(d, c, VGPU_HELLO_NO_SUCH_VGPU,
				     "there is no vGPU named '%s' (check VGPU; "
				     "vgpu-admin list shows them)",
				     h.vgpu_name);
		return;
	}
	/* only the vGPU's user or group; root's vGPUs are root's */
	if (!consumer_allows(v, c->uid)) {
		if (v->consumer_kind == VGPU_ADMIN_CONSUMER_GROUP)
			daemon_client_refuse(
				d, c, VGPU_HELLO_PERMISSION,
				"vGPU '%s' belongs to the members of gid "
				"%u; you (uid %d) are not one",
				h.vgpu_name, v->consumer_gid, (int)c->uid);
		else
			daemon_client_refuse(
				d, c, VGPU_HELLO_PERMISSION,
				"vGPU '%s' belongs to uid %u; you are uid "
				"%d",
				h.vgpu_name, v->cfg.client_uid, (int)c->uid);
		return;
	}
	memset(&cc, 0, sizeof(cc));
	cc.pid = c->pid;
	cc.uid = c->uid;
	cc.major = h.major;
	cc.minor = h.minor;
	/* swapped out: the hello waits for the swap-in (daemon_swap.c) */
	if (daemon_swap_hello(d, c, v, &cc))
		return;
	why = vgpu_unavailable(v);
	if (why) {
		daemon_client_refuse(d, c, VGPU_HELLO_UNAVAILABLE,
				     "vGPU '%s' %s", h.vgpu_name, why);
		return;
	}

	e = ctl_send(v->ctl_fd, VGPU_CTL_CLIENT, &cc, sizeof(cc), c->fd);
	if (e < 0) {
		daemon_client_refuse(
			d, c, VGPU_HELLO_UNAVAILABLE,
			"vGPU '%s' is not answering (%s); try again "
			"shortly",
			h.vgpu_name, strerror(-e));
		return;
	}
	/* a client of the vGPU can connect as often as it likes too */
	daemon_ratelimit_log(
		"client -> vGPU",
		"client pid %d (uid %d) -> vGPU %s (worker pid %d)",
		(int)c->pid, (int)c->uid, v->cfg.name, (int)v->pid);
	daemon_conn_close(d, c); /* the worker has its own copy now */
}
