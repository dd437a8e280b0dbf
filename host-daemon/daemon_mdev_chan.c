/* SPDX-License-Identifier: MIT */
/*
 * Channels of mdev instances (include/vgpu/pci.h): a guest process's
 * client of the vGPU. The guest writes OPEN; the module tells us
 * (CHANNEL_OPEN); we make the two doorbell eventfds and a socketpair,
 * give the eventfds to the module (CHANNEL_SETUP) and everything to the
 * worker (VGPU_CTL_CHANNEL: the ring is window i of the BAR2 memfd), and
 * say OPEN once the worker's hello reply came. Closing is a shutdown of
 * our end; the worker frees the client and closes its end, and only then
 * is the channel FREE (its ring may be reused).
 *
 * The socket is all we keep of a channel: its end of file means the
 * worker let go of the ring (it closed the channel, dropped a client that
 * broke the protocol, or exited).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl_msg.h"
#include "daemon_mdev.h"

static const char *const chan_names[] = {
	[MDEV_CHAN_FREE] = "FREE",     [MDEV_CHAN_OPENING] = "OPENING",
	[MDEV_CHAN_OPEN] = "OPEN",     [MDEV_CHAN_CLOSING] = "CLOSING",
	[MDEV_CHAN_FAILED] = "FAILED",
};

/* Tell the module; a state it no longer expects (EINVAL: it failed the
 * channel itself, e.g. on DEVICE_STATE ERROR) or a removed instance
 * (ENOENT) is not worth a log line. */
static void tell(struct daemon *d, struct mdev_chan *c, uint32_t state,
		 int error)
{
	struct vgpu_mdev_channel_state s = {
		.instance = c->inst->id,
		.channel = c->index,
		.state = state,
		.error = error,
	};
	int r;

	r = daemon_mdev_ioctl(d, VGPU_MDEV_IOC_CHANNEL_STATE, &s,
			      "CHANNEL_STATE", true);
	if (r && r != -EINVAL && r != -ENOENT)
		daemon_log("mdev: instance %u channel %u: CHANNEL_STATE %u: %s",
			   c->inst->id, c->index, state, strerror(-r));
}

static void sock_close(struct daemon *d, struct mdev_chan *c)
{
	if (c->sock < 0)
		return;
	epoll_ctl(d->mdev->epoll, EPOLL_CTL_DEL, c->sock, NULL);
	close(c->sock);
	c->sock = -1;
}

static void fail(struct daemon *d, struct mdev_chan *c, int error,
		 const char *why)
{
	mdev_log_limited(&c->inst->log,
			 "mdev: instance %u (vGPU %s) channel %u: %s: %s",
			 c->inst->id, c->inst->vgpu[0] ? c->inst->vgpu : "-",
			 c->index, chan_names[c->state], why);
	c->state = MDEV_CHAN_FAILED;
	tell(d, c, VGPU_CHAN_FAILED, error);
}

/*
 * Hand the channel to the worker: eventfds to the module, the socket,
 * the BAR2 memfd and the eventfds to the worker. 0, or -errno with the
 * reason in why.
 */
static int chan_start(struct daemon *d, struct mdev_chan *c,
		      struct daemon_vgpu *v, const char **why)
{
	struct mdev_inst *in = c->inst;
	struct vgpu_mdev_channel_setup setup = {.instance = in->id,
						.channel = c->index};
	struct vgpu_ctl_channel msg = {
		.instance = in->id,
		.channel = c->index,
		.ring_offset = (uint64_t)c->index * VGPU_PCI_CHANNEL_STRIDE,
		.ring_size = VGPU_PCI_CHANNEL_STRIDE,
	};
	struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
	int sv[2] = {-1, -1}, fds[4], r = 0, i;

	if (in->bar2_fd < 0) {
		*why = "the instance has no BAR2 memfd (a VFIO close is not "
		       "answered yet)";
		return -EAGAIN;
	}
	setup.doorbell_fd = eventfd(0, EFD_CLOEXEC);
	setup.complete_fd = eventfd(0, EFD_CLOEXEC);
	if (setup.doorbell_fd < 0 || setup.complete_fd < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
		       0, sv) < 0) {
		r = -errno;
		*why = "out of descriptors";
		goto out;
	}
	r = daemon_mdev_ioctl(d, VGPU_MDEV_IOC_CHANNEL_SETUP, &setup,
			      "CHANNEL_SETUP", false);
	if (r) {
		*why = "vgpu_mdev.ko refused CHANNEL_SETUP";
		goto out;
	}
	fds[0] = sv[1];
	fds[1] = in->bar2_fd;
	fds[2] = setup.doorbell_fd;
	fds[3] = setup.complete_fd;
	r = ctl_send_n(v->ctl_fd, VGPU_CTL_CHANNEL, &msg, sizeof(msg), fds, 4);
	if (r) {
		*why = "the worker's control socket did not take the channel";
		goto out;
	}
	if (epoll_ctl(d->mdev->epoll, EPOLL_CTL_ADD, sv[0], &ev) < 0) {
		r = -errno;
		*why = "epoll";
		goto out;
	}
	c->sock = sv[0];
	sv[0] = -1;
out:
	for (i = 0; i < 2; i++)
		if (sv[i] >= 0)
			close(sv[i]);
	if (setup.doorbell_fd >= 0)
		close(setup.doorbell_fd);
	if (setup.complete_fd >= 0)
		close(setup.complete_fd);
	return r;
}

/*
 * A CHANNEL_OPEN we cannot take (out of range, or the channel is still
 * ours): answer FAILED, so the module's channel does not wait in OPENING
 * for ever; our own state stays (a later CLOSE ends it as usual).
 */
static void open_refused(struct daemon *d, struct mdev_inst *in, uint32_t ch,
			 int error, const char *why)
{
	struct vgpu_mdev_channel_state s = {
		.instance = in->id,
		.channel = ch,
		.state = VGPU_CHAN_FAILED,
		.error = error,
	};

	mdev_log_limited(&in->log,
			 "mdev: instance %u channel %u: CHANNEL_OPEN refused: "
			 "%s",
			 in->id, ch, why);
	daemon_mdev_ioctl(d, VGPU_MDEV_IOC_CHANNEL_STATE, &s,
			  "CHANNEL_STATE (refused open)", true);
}

void mdev_chan_open(struct daemon *d, struct mdev_inst *in, uint32_t ch)
{
	struct daemon_vgpu *v = daemon_mdev_vgpu(d, in);
	struct mdev_chan *c;
	const char *why = NULL;
	char text[160];
	int r;

	if (ch >= in->channels || ch >= VGPU_PCI_MAX_CHANNELS) {
		snprintf(text, sizeof(text), "the instance has %u channels",
			 in->channels);
		open_refused(d, in, ch, EINVAL, text);
		return;
	}
	c = &in->chan[ch];
	/* FAILED with the socket still open: the worker may still use the
	 * ring (it has not let go); only a CLOSE ends that */
	if (c->state != MDEV_CHAN_FREE &&
	    !(c->state == MDEV_CHAN_FAILED && c->sock < 0)) {
		snprintf(text, sizeof(text), "the channel is %s here%s",
			 chan_names[c->state],
			 c->sock >= 0 ? " (the worker still has it)" : "");
		open_refused(d, in, ch, EBUSY, text);
		return;
	}
	sock_close(d, c);
	if (!in->created || !v || !daemon_mdev_vgpu_up(v)) {
		c->state = MDEV_CHAN_OPENING;
		fail(d, c, EAGAIN, "its vGPU is not running");
		return;
	}
	r = chan_start(d, c, v, &why);
	if (r) {
		snprintf(text, sizeof(text), "%s (%s)", why, strerror(-r));
		c->state = MDEV_CHAN_OPENING;
		fail(d, c, -r, text);
		return;
	}
	c->state = MDEV_CHAN_OPENING;
	c->deadline = daemon_now_ms() + MDEV_CHAN_REPLY_MS;
}

void mdev_chan_close(struct daemon *d, struct mdev_inst *in, uint32_t ch)
{
	struct mdev_chan *c;

	if (ch >= in->channels || ch >= VGPU_PCI_MAX_CHANNELS)
		return;
	c = &in->chan[ch];
	switch (c->state) {
	case MDEV_CHAN_OPENING:
	case MDEV_CHAN_OPEN:
		/* the worker sees end of file, frees the client, closes */
		shutdown(c->sock, SHUT_WR);
		c->state = MDEV_CHAN_CLOSING;
		break;
	case MDEV_CHAN_CLOSING:
		break;
	case MDEV_CHAN_FAILED:
		if (c->sock >= 0) {
			/* the worker has not let go yet: FREE at its EOF */
			shutdown(c->sock, SHUT_WR);
			c->state = MDEV_CHAN_CLOSING;
			break;
		}
		/* fall through */
	case MDEV_CHAN_FREE:
		/* nothing of the worker's left (or never known to us, e.g.
		 * failed while no vgpud held the device): FREE now */
		c->state = MDEV_CHAN_FREE;
		tell(d, c, VGPU_CHAN_FREE, 0);
		break;
	}
}

void mdev_chan_close_all(struct daemon *d, struct mdev_inst *in)
{
	uint32_t i;

	for (i = 0; i < in->channels && i < VGPU_PCI_MAX_CHANNELS; i++)
		mdev_chan_close(d, in, i);
}

void mdev_chan_drop_all(struct daemon *d, struct mdev_inst *in)
{
	uint32_t i;

	for (i = 0; i < VGPU_PCI_MAX_CHANNELS; i++) {
		sock_close(d, &in->chan[i]);
		in->chan[i].state = MDEV_CHAN_FREE;
	}
}

/* The worker's hello reply on an OPENING channel. */
static void chan_reply(struct daemon *d, struct mdev_chan *c,
		       const struct vgpu_hello_reply *r, ssize_t n)
{
	char why[VGPU_MESSAGE_MAX + 32];

	if (n != sizeof(*r) || r->magic != VGPU_PROTO_MAGIC) {
		fail(d, c, EPROTO, "the worker's reply is malformed");
		shutdown(c->sock, SHUT_WR);
		return;
	}
	if (r->status != VGPU_HELLO_OK) {
		snprintf(why, sizeof(why), "the worker refused it: %.*s",
			 (int)sizeof(r->message) - 1, r->message);
		fail(d, c, r->status == VGPU_HELLO_RESOURCES ? ENOSPC : EIO,
		     why);
		shutdown(c->sock, SHUT_WR);
		return;
	}
	c->state = MDEV_CHAN_OPEN;
	tell(d, c, VGPU_CHAN_OPEN, 0);
}

/* End of file: the worker has let go of the ring. */
static void chan_ended(struct daemon *d, struct mdev_chan *c)
{
	switch (c->state) {
	case MDEV_CHAN_OPENING:
		fail(d, c, EIO, "the worker dropped it before answering");
		break;
	case MDEV_CHAN_OPEN:
		fail(d, c, EIO,
		     "the worker ended it (its ring broke the protocol, or "
		     "the worker is gone)");
		break;
	case MDEV_CHAN_CLOSING:
		c->state = MDEV_CHAN_FREE;
		tell(d, c, VGPU_CHAN_FREE, 0);
		break;
	case MDEV_CHAN_FREE:
	case MDEV_CHAN_FAILED:
		break;
	}
	sock_close(d, c);
}

void mdev_chan_input(struct daemon *d, struct mdev_chan *c, uint32_t events)
{
	struct vgpu_hello_reply r;
	ssize_t n;
	int i;

	(void)events; /* the socket itself says what happened */
	for (i = 0; i < 4 && c->sock >= 0 && !c->inst->gone; i++) {
		n = recv(c->sock, &r, sizeof(r), MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			chan_ended(d, c);
			return;
		}
		if (c->state == MDEV_CHAN_OPENING)
			chan_reply(d, c, &r, n);
		/* anything later is ignored: the worker says nothing more */
	}
}

void mdev_chan_timers(struct daemon *d, struct mdev_inst *in, int64_t now)
{
	uint32_t i;

	for (i = 0; i < in->channels && i < VGPU_PCI_MAX_CHANNELS; i++) {
		struct mdev_chan *c = &in->chan[i];

		if (c->state != MDEV_CHAN_OPENING || now < c->deadline)
			continue;
		fail(d, c, ETIMEDOUT, "no answer from the worker in time");
		if (c->sock >= 0)
			shutdown(c->sock, SHUT_WR);
	}
}
