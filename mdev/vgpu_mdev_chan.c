// SPDX-License-Identifier: GPL-2.0
/*
 * Channels: one guest client each (include/vgpu/pci.h). The guest drives
 * a channel through its CTRL register; vgpud answers with CHANNEL_SETUP
 * (two eventfds) and CHANNEL_STATE. A DOORBELL write signals the doorbell
 * eventfd; a write by the worker to the complete eventfd raises the
 * guest's interrupt with the channel's bit, watched here from the kernel
 * the way vfio's virqfd and KVM's irqfd watch theirs.
 */
#include <linux/file.h>
#include <linux/fs.h>

#include "vgpu_mdev.h"

/*
 * Wakeup of the complete eventfd: runs under the eventfd's lock with
 * interrupts off, inside eventfd_write() (so eventfd_signal() is not
 * allowed here). Consume the count, set the bit, let irq_work signal.
 */
static int vgpu_watch_wakeup(wait_queue_entry_t *wait, unsigned int mode,
			     int sync, void *key)
{
	struct vgpu_watch *w = container_of(wait, struct vgpu_watch, wait);
	__poll_t flags = key_to_poll(key);
	u64 cnt;

	if (flags & EPOLLIN) {
		eventfd_ctx_do_read(w->ctx, &cnt);
		atomic_or(w->bit, &w->inst->irq_status);
		queue_work(system_highpri_wq, &w->inst->irq_work);
	}
	/* EPOLLHUP: the last fd is closed; we hold the ctx until FREE */
	return 0;
}

static void vgpu_watch_ptable(struct file *file, wait_queue_head_t *wqh,
			      poll_table *pt)
{
	struct vgpu_watch *w = container_of(pt, struct vgpu_watch, pt);

	add_wait_queue(wqh, &w->wait);
}

void vgpu_chan_init(struct vgpu_inst *inst)
{
	unsigned int i;

	for (i = 0; i < VGPU_PCI_MAX_CHANNELS; i++) {
		struct vgpu_chan *c = &inst->chan[i];

		c->state = VGPU_CHAN_FREE;
		c->complete.inst = inst;
		c->complete.bit = BIT(i);
	}
}

/* Drops a channel's eventfds (and the watcher). */
void vgpu_chan_drop_fds(struct vgpu_inst *inst, unsigned int ch)
{
	struct vgpu_chan *c = &inst->chan[ch];
	u64 cnt;

	lockdep_assert_held(&inst->lock);
	if (!c->doorbell && !c->complete.ctx)
		return;
	if (c->complete.ctx) {
		/* after this the wakeup cannot run again */
		eventfd_ctx_remove_wait_queue(c->complete.ctx,
					      &c->complete.wait, &cnt);
		eventfd_ctx_put(c->complete.ctx);
		c->complete.ctx = NULL;
		atomic_dec(&vgpu_mdev.cnt.watchers);
	}
	if (c->doorbell) {
		eventfd_ctx_put(c->doorbell);
		c->doorbell = NULL;
	}
	atomic_dec(&vgpu_mdev.cnt.channels);
}

/*
 * CHANNEL_SETUP: takes both eventfds (each must be an eventfd), replacing
 * any earlier pair, and starts watching the complete one.
 */
int vgpu_chan_set_fds(struct vgpu_inst *inst, unsigned int ch, int doorbell_fd,
		      int complete_fd)
{
	struct vgpu_chan *c = &inst->chan[ch];
	struct eventfd_ctx *doorbell, *complete;
	struct fd f;
	__poll_t events;

	lockdep_assert_held(&inst->lock);
	doorbell = eventfd_ctx_fdget(doorbell_fd);
	if (IS_ERR(doorbell))
		return PTR_ERR(doorbell);
	f = fdget(complete_fd);
	if (!f.file) {
		eventfd_ctx_put(doorbell);
		return -EBADF;
	}
	complete = eventfd_ctx_fileget(f.file);
	if (IS_ERR(complete)) {
		fdput(f);
		eventfd_ctx_put(doorbell);
		return PTR_ERR(complete);
	}

	vgpu_chan_drop_fds(inst, ch);
	c->doorbell = doorbell;
	c->complete.ctx = complete;
	init_waitqueue_func_entry(&c->complete.wait, vgpu_watch_wakeup);
	init_poll_funcptr(&c->complete.pt, vgpu_watch_ptable);
	atomic_inc(&vgpu_mdev.cnt.channels);
	atomic_inc(&vgpu_mdev.cnt.watchers);
	events = vfs_poll(f.file, &c->complete.pt);
	fdput(f);
	/* a completion written before we watched: raise it now */
	if (events & EPOLLIN) {
		atomic_or(c->complete.bit, &inst->irq_status);
		queue_work(system_highpri_wq, &inst->irq_work);
	}
	return 0;
}

/*
 * A guest write to CTRL. OPEN in FREE: OPENING, vgpud told; CLOSE in
 * OPENING/OPEN/FAILED: CLOSING, vgpud told (or FREE at once when no
 * vgpud holds the device: nothing on the host to wait for). Anything else
 * leaves the state and sets ERROR. A failure raises the channel's
 * interrupt so a guest waiting for a state change looks at ERROR.
 */
void vgpu_chan_command(struct vgpu_inst *inst, unsigned int ch, u32 cmd)
{
	struct vgpu_chan *c = &inst->chan[ch];
	u32 error = 0;
	int ret;

	lockdep_assert_held(&inst->lock);
	if (cmd == VGPU_CHAN_CMD_OPEN && c->state == VGPU_CHAN_FREE) {
		if (inst->dev_state != VGPU_DEVICE_READY) {
			error = inst->dev_error ? inst->dev_error : EAGAIN;
		} else {
			ret = vgpu_evq_push(inst, VGPU_MDEV_EV_CHANNEL_OPEN,
					    ch);
			if (ret)
				error = -ret;
			else
				c->state = VGPU_CHAN_OPENING;
		}
	} else if (cmd == VGPU_CHAN_CMD_CLOSE &&
		   (c->state == VGPU_CHAN_OPENING ||
		    c->state == VGPU_CHAN_OPEN ||
		    c->state == VGPU_CHAN_FAILED)) {
		ret = vgpu_evq_push(inst, VGPU_MDEV_EV_CHANNEL_CLOSE, ch);
		if (ret == -ENOTCONN) {
			vgpu_chan_drop_fds(inst, ch);
			c->state = VGPU_CHAN_FREE;
			vgpu_irq_raise(inst, BIT(ch));
		} else if (ret) {
			error = -ret;
		} else {
			c->state = VGPU_CHAN_CLOSING;
		}
	} else {
		error = EINVAL;
	}
	if (error) {
		c->error = error;
		vgpu_irq_raise(inst, BIT(ch));
	}
}

/* A guest write to DOORBELL: the worker's doorbell, if the channel is open. */
void vgpu_chan_doorbell(struct vgpu_inst *inst, unsigned int ch)
{
	struct vgpu_chan *c = &inst->chan[ch];

	lockdep_assert_held(&inst->lock);
	if (c->state == VGPU_CHAN_OPEN && c->doorbell)
		eventfd_signal(c->doorbell, 1);
}

/* Every channel not FREE fails with error; returns their IRQ bits. */
u32 vgpu_chans_fail(struct vgpu_inst *inst, u32 error)
{
	u32 bits = 0;
	unsigned int i;

	lockdep_assert_held(&inst->lock);
	for (i = 0; i < inst->channels; i++) {
		struct vgpu_chan *c = &inst->chan[i];

		vgpu_chan_drop_fds(inst, i);
		if (c->state == VGPU_CHAN_FREE)
			continue;
		c->state = VGPU_CHAN_FAILED;
		c->error = error;
		bits |= BIT(i);
	}
	return bits;
}

/*
 * A VFIO close or reset: every channel not FREE goes to CLOSING when
 * vgpud was told (it answers FREE for each), else straight to FREE.
 */
void vgpu_chans_begin_close(struct vgpu_inst *inst, bool daemon_told)
{
	unsigned int i;

	lockdep_assert_held(&inst->lock);
	for (i = 0; i < inst->channels; i++) {
		struct vgpu_chan *c = &inst->chan[i];

		if (c->state == VGPU_CHAN_FREE)
			continue;
		if (daemon_told) {
			c->state = VGPU_CHAN_CLOSING;
		} else {
			vgpu_chan_drop_fds(inst, i);
			c->state = VGPU_CHAN_FREE;
		}
	}
}
