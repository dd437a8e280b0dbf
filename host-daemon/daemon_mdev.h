/* SPDX-License-Identifier: MIT */
/*
 * vgpud's side of the VM path: /dev/vgpu-ctl (include/vgpu/mdev_ctl.h).
 * vgpud holds the control device of vgpu_mdev.ko, publishes what it could
 * compose (SET_AVAILABLE), composes a vGPU for each mdev instance (or
 * hands it the one vgpu-admin bound to the instance's UUID), gives each
 * instance a BAR2 memfd, and turns each channel the guest opens into a
 * VGPU_CTL_CHANNEL client of the vGPU's worker.
 *
 *   daemon_mdev.c        the device: open, HELLO, catalogue, events,
 *                        instances (CREATE, EXISTS, REMOVE, OPEN/CLOSE),
 *                        device states
 *   daemon_mdev_chan.c   channels: eventfds, socketpair, the worker's
 *                        hello reply, closing
 *   daemon_mdev_avail.c  SET_AVAILABLE: how many of each type fit now
 *
 * Everything runs on vgpud's one loop: the device and every channel
 * socket sit in one epoll descriptor the loop polls, and answers that
 * wait for a worker are sent from daemon_mdev_tick, never by blocking.
 */
#ifndef VGPU_DAEMON_MDEV_H
#define VGPU_DAEMON_MDEV_H

#include <stdbool.h>
#include <stdint.h>

#include <vgpu/mdev_ctl.h>
#include <vgpu/pci.h>

#include "daemon.h"
#include "mdev_uuid.h"

#define MDEV_CTL_PATH	      "/dev/" VGPU_MDEV_CTL_NAME
#define MDEV_MAX_TYPES	      64
#define MDEV_CREATE_ANSWER_MS ((VGPU_MDEV_CREATE_TIMEOUT_S - 3) * 1000)
#define MDEV_CHAN_REPLY_MS    10000 /* the worker's hello reply */
#define MDEV_BAR2_RETRY_MS    1000  /* a fresh BAR2 memfd that failed */
#define MDEV_LOG_BURST	      10    /* event log lines per instance ... */
#define MDEV_LOG_WINDOW_MS    10000 /* ... per window; the rest counted */
#define MDEV_RETRY_MS	      2000  /* reopening /dev/vgpu-ctl */
#define MDEV_RETRY_MAX_MS     60000 /* ... when it keeps failing soon after */

/*
 * The log lines a VM can cause (its opens, closes, resets, channels):
 * MDEV_LOG_BURST per window, then counted and said once.
 */
struct mdev_ratelimit {
	int64_t start;
	unsigned int lines, held;
};

/* Our side of one channel (pci.h). */
enum mdev_chan_state {
	MDEV_CHAN_FREE = 0,
	MDEV_CHAN_OPENING, /* CHANNEL sent to the worker, no reply yet */
	MDEV_CHAN_OPEN,
	MDEV_CHAN_CLOSING, /* our end shut down: waiting for the worker's */
	MDEV_CHAN_FAILED,  /* told the module FAILED: waits for a CLOSE */
};

struct mdev_inst;

struct mdev_chan {
	struct mdev_inst *inst;
	uint32_t index;
	enum mdev_chan_state state;
	int sock;	  /* vgpud's end of the channel's socketpair, or -1 */
	int64_t deadline; /* OPENING: fail it then */
};

/* One mdev instance of vgpu_mdev.ko. */
struct mdev_inst {
	struct mdev_inst *next;
	uint32_t id; /* the module's, in every event and ioctl */
	uint8_t uuid[16];
	uint32_t type_index;
	uint32_t channels;	      /* BAR2 channels (the type's) */
	char vgpu[VGPU_NAME_MAX];     /* the vGPU it is; "" = none (yet) */
	bool pending;		      /* CREATE/EXISTS waits for CREATE_DONE */
	bool replay;		      /* it came from EXISTS, not CREATE */
	int64_t deadline;	      /* pending: answer a failure by then */
	bool created;		      /* CREATE_DONE 0 was answered */
	bool open;		      /* a VFIO user holds it */
	bool gone;		      /* REMOVE came: freed by the tick */
	uint32_t dev_state;	      /* last DEVICE_STATE told the module */
	int bar2_fd;		      /* the BAR2 memfd of the current VFIO
					 session (fresh after each CLOSE),
					 or -1 */
	int64_t bar2_retry;	      /* created, bar2_fd -1: try again then */
	struct mdev_ratelimit log;    /* its event lines */
	char why[VGPU_MDEV_TEXT_MAX]; /* a failure to answer with */
	/* what BAR0 shows as far as vgpud knows: CREATE_DONE's, then each
	 * COMPOSITION's (its change_count may trail the module's after a
	 * vgpud restart: the module says so, ESTALE) */
	struct vgpu_mdev_composition comp;
	struct mdev_chan chan[VGPU_PCI_MAX_CHANNELS];
};

struct daemon_mdev {
	int fd;		  /* /dev/vgpu-ctl */
	int epoll;	  /* fd and every channel socket */
	uint32_t version; /* control version HELLO agreed on; below 3 (an
			     older module): no COMPOSITION */
	uint32_t ntypes;
	struct vgpu_mdev_type_info types[MDEV_MAX_TYPES];
	int custom; /* index of the custom type, -1 when none */
	struct mdev_inst *insts;
	/* SET_AVAILABLE: what was last told, and the inputs it came from */
	uint64_t avail_sig;
	bool avail_sent;
	struct plan *scratch;	   /* a copy of the plan to try placements on */
	struct mdev_ratelimit log; /* lines about unknown instances */
};

/*
 * Reopening /dev/vgpu-ctl while vgpud runs without it: --mdev auto found
 * none at start (the module may be loaded later), or the device was lost
 * (in any mode but off). The tick tries every MDEV_RETRY_MS; a failure is
 * logged once (again only when its reason changes).
 */
struct daemon_mdev_retry {
	int64_t at; /* the next try */
	bool lost;  /* it was attached before: "attached again" */
	/* HELLO or the catalogue failed on this device node (a module of
	 * another version): tried again only once the node is another */
	bool refused;
	uint64_t node_ino, node_rdev;
	/* a device lost soon after each attach (under MDEV_RETRY_MAX_MS)
	 * is tried again later each time, up to MDEV_RETRY_MAX_MS */
	int64_t attached_at;
	uint32_t backoff_ms;
	char why[VGPU_MESSAGE_MAX + 64]; /* the last failure logged */
};

/* ---- daemon_mdev.c ---- */
/* Open /dev/vgpu-ctl per --mdev (auto, on, off), HELLO, read the types.
 * 0 (also when off, or absent in auto: then the tick keeps trying); -1
 * with a sentence in err. */
int daemon_mdev_init(struct daemon *d, char *err, size_t errlen);
void daemon_mdev_fini(struct daemon *d);
/* The descriptor the loop polls (POLLIN), -1 when the VM path is off. */
int daemon_mdev_poll_fd(const struct daemon *d);
/* It is readable: device events and channel sockets. */
void daemon_mdev_input(struct daemon *d);
/* End of each loop turn: pending answers, device states, availability,
 * deadlines; frees removed instances. Without the device: tries to open
 * it when the retry is due (struct daemon_mdev_retry). */
void daemon_mdev_tick(struct daemon *d, int64_t now);
int64_t daemon_mdev_next_deadline(const struct daemon *d);
/* v is being freed: answer a create that waited for it, unbind. */
void daemon_mdev_vgpu_freed(struct daemon *d, struct daemon_vgpu *v);
/* The instance that is v, or NULL. */
struct mdev_inst *daemon_mdev_inst_of(const struct daemon *d,
				      const struct daemon_vgpu *v);
/* For the admin socket: may v be bound to uuid (all zero: make one up,
 * written back)? 0, or an admin status with a sentence in err. */
int daemon_mdev_bind_check(struct daemon *d, uint8_t uuid[16], char *err,
			   size_t errlen);
/* MDEVS: v's binding as the admin protocol shows it. */
void daemon_mdev_fill(const struct daemon *d, const struct daemon_vgpu *v,
		      struct vgpu_admin_mdev *m);
/* The instance of that id (not removed), or NULL. */
struct mdev_inst *daemon_mdev_inst(const struct daemon *d, uint32_t id);
/* ioctl on the device; logs a failure unless quiet. 0 or -errno. */
int daemon_mdev_ioctl(struct daemon *d, unsigned long req, void *arg,
		      const char *what, bool quiet);
/* Whether v's worker serves (its device can be READY). */
bool daemon_mdev_vgpu_up(const struct daemon_vgpu *v);
/* The vGPU of an instance, or NULL. */
struct daemon_vgpu *daemon_mdev_vgpu(struct daemon *d,
				     const struct mdev_inst *in);
/* daemon_log, within rl's budget (struct mdev_ratelimit). */
void mdev_log_limited(struct mdev_ratelimit *rl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- daemon_mdev_inst.c ---- */
/* CREATE or EXISTS: find or compose its vGPU; the tick answers. */
void mdev_inst_create(struct daemon *d, const struct vgpu_mdev_event *ev);
/* REMOVE: drop it; a vGPU composed for it is destroyed. */
void mdev_inst_remove(struct daemon *d, struct mdev_inst *in);
/* A pending instance: CREATE_DONE once its vGPU is ready, or a failure. */
void mdev_inst_answer(struct daemon *d, struct mdev_inst *in, int64_t now);
/* A created instance: BAR0's composition (COMPOSITION) and DEVICE_STATE
 * follow its vGPU (ERROR, READY). */
void mdev_inst_state(struct daemon *d, struct mdev_inst *in);
/* Answer a pending instance with a failure (-errno, a sentence). */
void mdev_inst_fail(struct daemon *d, struct mdev_inst *in, int status,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* CLOSE: the session's BAR2 memfd goes, a fresh one to the module
 * (SET_BAR2; the tick tries again when that fails). */
void mdev_inst_closed(struct daemon *d, struct mdev_inst *in);
/* v's composition changed (resize, slice move, migration, resume; the
 * worker's change_count with it): BAR0 of its instance follows now
 * (COMPOSITION). No instance, or an older module: nothing. */
void daemon_mdev_vgpu_changed(struct daemon *d, struct daemon_vgpu *v,
			      uint32_t change_count);

/* ---- daemon_mdev_chan.c ---- */
/* The guest wrote OPEN / CLOSE to a channel's CTRL (events). */
void mdev_chan_open(struct daemon *d, struct mdev_inst *in, uint32_t ch);
void mdev_chan_close(struct daemon *d, struct mdev_inst *in, uint32_t ch);
/* VFIO close or reset: every channel back to FREE. */
void mdev_chan_close_all(struct daemon *d, struct mdev_inst *in);
/* The instance is gone: drop its sockets, tell nobody. */
void mdev_chan_drop_all(struct daemon *d, struct mdev_inst *in);
/* A channel socket is readable (reply, EOF). */
void mdev_chan_input(struct daemon *d, struct mdev_chan *c, uint32_t events);
/* OPENING past its deadline: FAILED. */
void mdev_chan_timers(struct daemon *d, struct mdev_inst *in, int64_t now);

/* ---- daemon_mdev_avail.c ---- */
/* Tell the module what each type could have now, if that changed. */
void mdev_avail_update(struct daemon *d);

#endif /* VGPU_DAEMON_MDEV_H */
