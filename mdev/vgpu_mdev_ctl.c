// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/vgpu-ctl: how vgpud drives the module (include/vgpu/mdev_ctl.h).
 * One holder at a time (CAP_SYS_ADMIN). The module queues events for it
 * (a bounded ring: when vgpud stops reading, the operations that would
 * add an event fail instead of the queue growing), and vgpud answers with
 * ioctls, each checked field by field before anything changes.
 */
#include <linux/capability.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "vgpu_mdev.h"

/* ---- event queue ------------------------------------------------------ */

/*
 * The mdev core keeps the UUID as a guid_t (its sysfs name is printed with
 * %pUl); events carry it in the byte order of that text, so that user
 * space prints it (uuid_unparse) as the device's name.
 */
static void vgpu_uuid_text_order(const guid_t *g, u8 out[16])
{
	static const u8 order[16] = {3, 2, 1,  0,  5,  4,  7,  6,
				     8, 9, 10, 11, 12, 13, 14, 15};
	unsigned int i;

	for (i = 0; i < 16; i++)
		out[i] = g->b[order[i]];
}

/* CREATE, EXISTS and REMOVE: an instance's life, not its VFIO user's. */
static bool vgpu_ev_is_life(u32 type)
{
	return type == VGPU_MDEV_EV_CREATE || type == VGPU_MDEV_EV_EXISTS ||
	       type == VGPU_MDEV_EV_REMOVE;
}

/*
 * Events that say nothing new when the instance's last unread event is
 * the same one: vgpud does the same for one as for two in a row.
 */
static bool vgpu_ev_coalesces(u32 type)
{
	return type == VGPU_MDEV_EV_RESET ||
	       type == VGPU_MDEV_EV_CHANNEL_OPEN ||
	       type == VGPU_MDEV_EV_CHANNEL_CLOSE;
}

/*
 * Whether an event of this type fits its share of the queue (see
 * vgpu_mdev.h); the queue's lock is held. A share that is full says so
 * in *why.
 */
static bool vgpu_evq_room(const struct vgpu_evq *q,
			  const struct vgpu_inst *inst, u32 type,
			  const char **why)
{
	switch (type) {
	case VGPU_MDEV_EV_CREATE:
	case VGPU_MDEV_EV_EXISTS:
		*why = "creates";
		return q->nlife < VGPU_MDEV_EVQ_LIFE;
	case VGPU_MDEV_EV_REMOVE:
		*why = "removals";
		return q->nlife < VGPU_MDEV_EVQ_REMOVE;
	case VGPU_MDEV_EV_CLOSE:
		*why = "closes";
		return q->ninst < VGPU_MDEV_EVQ_CLOSE;
	}
	*why = "this instance's";
	if (inst->ev_unread >= VGPU_MDEV_EVQ_PER_INST)
		return false;
	*why = "all instances'";
	return q->ninst < VGPU_MDEV_EVQ_INST;
}

/*
 * Queues one event about an instance. Returns -ENOTCONN when no daemon
 * holds the device (the event is dropped: the next daemon learns the state
 * from EXISTS), -ENOSPC when the event's share of the queue is full (for
 * the guest's and the VFIO user's events: this instance has left
 * VGPU_MDEV_EVQ_PER_INST unread; other instances go on). A RESET or
 * CHANNEL_* event equal to the instance's last unread one is coalesced
 * (0, nothing queued).
 */
int vgpu_evq_push(struct vgpu_inst *inst, u32 type, u32 channel)
{
	struct vgpu_evq *q = &vgpu_mdev.evq;
	bool life = vgpu_ev_is_life(type);
	struct vgpu_evq_slot *slot;
	const char *why = NULL;
	unsigned long flags;

	spin_lock_irqsave(&q->lock, flags);
	if (!q->attached) {
		spin_unlock_irqrestore(&q->lock, flags);
		return -ENOTCONN;
	}
	if (vgpu_ev_coalesces(type) && inst->ev_unread &&
	    inst->ev_last_type == type && inst->ev_last_chan == channel) {
		spin_unlock_irqrestore(&q->lock, flags);
		return 0;
	}
	if (!vgpu_evq_room(q, inst, type, &why)) {
		spin_unlock_irqrestore(&q->lock, flags);
		dev_warn_ratelimited(
			&inst->mdev->dev,
			"instance %u: event %u not queued: vgpud has left too many of %s events unread on /dev/%s (%u of this instance's)\n",
			inst->id, type, why, VGPU_MDEV_CTL_NAME,
			inst->ev_unread);
		return -ENOSPC;
	}
	slot = &q->ring[(q->head + q->count) % VGPU_MDEV_EVQ_SIZE];
	memset(slot, 0, sizeof(*slot));
	slot->ev.type = type;
	slot->ev.instance = inst->id;
	slot->ev.type_index = inst->type->info.index;
	slot->ev.channel = channel;
	vgpu_uuid_text_order(&inst->mdev->uuid, slot->ev.uuid);
	if (type == VGPU_MDEV_EV_EXISTS)
		slot->ev.is_open = inst->open;
	slot->life = life;
	if (life) {
		q->nlife++;
	} else {
		q->ninst++;
		slot->owner = inst;
		inst->ev_unread++;
	}
	inst->ev_last_type = type;
	inst->ev_last_chan = channel;
	q->count++;
	atomic_inc(&vgpu_mdev.cnt.events);
	spin_unlock_irqrestore(&q->lock, flags);
	wake_up_interruptible(&q->wait);
	return 0;
}

/*
 * The instance is being freed: its queued events stay (vgpud still reads
 * them), but no longer count against it.
 */
void vgpu_evq_forget(struct vgpu_inst *inst)
{
	struct vgpu_evq *q = &vgpu_mdev.evq;
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&q->lock, flags);
	for (i = 0; i < q->count; i++) {
		struct vgpu_evq_slot *slot =
			&q->ring[(q->head + i) % VGPU_MDEV_EVQ_SIZE];

		if (slot->owner == inst)
			slot->owner = NULL;
	}
	inst->ev_unread = 0;
	spin_unlock_irqrestore(&q->lock, flags);
}

/*
 * A VFIO close must reach vgpud (it frees the channels and answers with
 * a fresh BAR2 memfd). When its share is full the CLOSE waits in
 * inst->close_pending and goes out from the next read (or the next open),
 * so the module and vgpud never disagree about it. Returns 0 when it was
 * queued or waits, -ENOTCONN when no daemon is there to tell.
 */
static int vgpu_inst_close_event(struct vgpu_inst *inst)
{
	struct vgpu_evq *q = &vgpu_mdev.evq;
	unsigned long flags;
	int ret;

	lockdep_assert_held(&inst->lock);
	ret = vgpu_evq_push(inst, VGPU_MDEV_EV_CLOSE, 0);
	inst->close_pending = ret == -ENOSPC;
	if (ret != -ENOSPC)
		return ret;
	spin_lock_irqsave(&q->lock, flags);
	q->close_pending = true;
	spin_unlock_irqrestore(&q->lock, flags);
	return 0;
}

/* close_device: tell vgpud (now or later); false when there is no vgpud. */
bool vgpu_inst_tell_close(struct vgpu_inst *inst)
{
	return vgpu_inst_close_event(inst) == 0;
}

/* open_device: a CLOSE still waiting must go before the new OPEN. */
int vgpu_inst_flush_close(struct vgpu_inst *inst)
{
	lockdep_assert_held(&inst->lock);
	if (!inst->close_pending)
		return 0;
	vgpu_inst_close_event(inst);
	return inst->close_pending ? -ENOSPC : 0;
}

/* After a read made room: the CLOSEs that waited for it. */
static void vgpu_evq_flush_closes(void)
{
	struct vgpu_evq *q = &vgpu_mdev.evq;
	struct vgpu_inst *inst;
	unsigned long flags;
	bool pending;

	spin_lock_irqsave(&q->lock, flags);
	pending = q->close_pending;
	q->close_pending = false;
	spin_unlock_irqrestore(&q->lock, flags);
	if (!pending)
		return;
	mutex_lock(&vgpu_mdev.lock);
	list_for_each_entry(inst, &vgpu_mdev.instances, node) {
		mutex_lock(&inst->lock);
		vgpu_inst_flush_close(inst);
		mutex_unlock(&inst->lock);
	}
	mutex_unlock(&vgpu_mdev.lock);
}

static unsigned int vgpu_evq_count(void)
{
	struct vgpu_evq *q = &vgpu_mdev.evq;
	unsigned long flags;
	unsigned int n;

	spin_lock_irqsave(&q->lock, flags);
	n = q->count;
	spin_unlock_irqrestore(&q->lock, flags);
	return n;
}

bool vgpu_daemon_attached(void)
{
	struct vgpu_evq *q = &vgpu_mdev.evq;
	unsigned long flags;
	bool attached;

	spin_lock_irqsave(&q->lock, flags);
	attached = q->attached;
	spin_unlock_irqrestore(&q->lock, flags);
	return attached;
}

/* Attaches (a daemon opened the device) or detaches and empties. */
static void vgpu_evq_attach(bool attached)
{
	struct vgpu_evq *q = &vgpu_mdev.evq;
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&q->lock, flags);
	for (i = 0; i < q->count; i++) {
		struct vgpu_evq_slot *slot =
			&q->ring[(q->head + i) % VGPU_MDEV_EVQ_SIZE];

		if (slot->owner)
			slot->owner->ev_unread = 0;
	}
	q->attached = attached;
	atomic_sub(q->count, &vgpu_mdev.cnt.events);
	q->head = 0;
	q->count = 0;
	q->ninst = 0;
	q->nlife = 0;
	q->close_pending = false;
	spin_unlock_irqrestore(&q->lock, flags);
}

/* Takes the oldest event off the queue (the reader copied it out). */
static void vgpu_evq_pop(void)
{
	struct vgpu_evq *q = &vgpu_mdev.evq;
	struct vgpu_evq_slot *slot;
	unsigned long flags;

	spin_lock_irqsave(&q->lock, flags);
	if (q->count) {
		slot = &q->ring[q->head];
		if (slot->life) {
			q->nlife--;
		} else {
			q->ninst--;
			if (slot->owner)
				slot->owner->ev_unread--;
		}
		q->head = (q->head + 1) % VGPU_MDEV_EVQ_SIZE;
		q->count--;
		atomic_dec(&vgpu_mdev.cnt.events);
	}
	spin_unlock_irqrestore(&q->lock, flags);
}

/* ---- instances: create and unlink ------------------------------------- */

static struct vgpu_inst *vgpu_inst_find(u32 id)
{
	struct vgpu_inst *inst;

	lockdep_assert_held(&vgpu_mdev.lock);
	list_for_each_entry(inst, &vgpu_mdev.instances, node)
		if (inst->id == id)
			return inst;
	return NULL;
}

/*
 * The create half of probe: tell vgpud (CREATE) and wait for its
 * CREATE_DONE. Without a daemon the create fails at once.
 */
int vgpu_inst_create(struct vgpu_inst *inst)
{
	struct vgpu_mdev *g = &vgpu_mdev;
	struct device *dev = &inst->mdev->dev;
	long left;
	u32 id;
	int ret;

	mutex_lock(&g->lock);
	if (!g->daemon) {
		mutex_unlock(&g->lock);
		dev_err(dev,
			"vgpud is not running (/dev/%s is not open): cannot create a vgpu instance\n",
			VGPU_MDEV_CTL_NAME);
		return -ENODEV;
	}
	if (g->ninstances >= VGPU_MDEV_MAX_INSTANCES) {
		mutex_unlock(&g->lock);
		dev_err(dev, "too many vgpu instances (%u)\n",
			VGPU_MDEV_MAX_INSTANCES);
		return -ENOSPC;
	}
	/* ids name instances in vgpud's ioctls: never two at once */
	do {
		id = g->next_id++;
		if (!g->next_id)
			g->next_id = 1;
	} while (vgpu_inst_find(id));
	inst->id = id;
	mutex_lock(&inst->lock);
	inst->create_pending = true;
	mutex_unlock(&inst->lock);
	ret = vgpu_evq_push(inst, VGPU_MDEV_EV_CREATE, 0);
	if (ret) {
		mutex_unlock(&g->lock);
		return ret == -ENOTCONN ? -ENODEV : ret;
	}
	list_add_tail(&inst->node, &g->instances);
	inst->linked = true;
	g->ninstances++;
	mutex_unlock(&g->lock);

	left = wait_for_completion_killable_timeout(
		&inst->created, VGPU_MDEV_CREATE_TIMEOUT_S * HZ);

	mutex_lock(&g->lock);
	mutex_lock(&inst->lock);
	if (inst->create_pending) {
		inst->create_pending = false;
		ret = left < 0 ? -EINTR : -ETIMEDOUT;
		dev_err(dev,
			"vgpud did not answer the create of instance %u %s\n",
			inst->id,
			left < 0 ? "(interrupted)" : "within the timeout");
	} else {
		ret = inst->create_status;
	}
	mutex_unlock(&inst->lock);
	if (ret && inst->linked) {
		list_del(&inst->node);
		inst->linked = false;
		g->ninstances--;
		/* a late answer may still come: tell vgpud to drop it */
		if (ret == -ETIMEDOUT || ret == -EINTR)
			vgpu_evq_push(inst, VGPU_MDEV_EV_REMOVE, 0);
	}
	mutex_unlock(&g->lock);
	return ret;
}

/* Takes an instance off the list (removal) and tells vgpud. */
void vgpu_inst_unlink(struct vgpu_inst *inst, bool tell_daemon)
{
	struct vgpu_mdev *g = &vgpu_mdev;

	mutex_lock(&g->lock);
	if (inst->linked) {
		list_del(&inst->node);
		inst->linked = false;
		g->ninstances--;
		if (tell_daemon)
			vgpu_evq_push(inst, VGPU_MDEV_EV_REMOVE, 0);
	}
	mutex_lock(&inst->lock);
	inst->close_pending = false; /* REMOVE says more */
	mutex_unlock(&inst->lock);
	mutex_unlock(&g->lock);
}

/*
 * The state vgpud asks for (DEVICE_STATE, CREATE_DONE), unless a removal
 * has pinned the device at ERROR (vgpu_vfio_request).
 */
static void vgpu_dev_state_set(struct vgpu_inst *inst, u32 state, u32 error)
{
	lockdep_assert_held(&inst->lock);
	if (inst->removing)
		return;
	inst->dev_state = state;
	inst->dev_error = error;
}

/*
 * The daemon is gone: fail what waits for it (a pending create leaves the
 * list at once, so a next daemon never sees it in EXISTS; an open waiting
 * for a BAR2 memfd goes on without one), mark the vGPU failed.
 */
static void vgpu_inst_daemon_gone(struct vgpu_inst *inst)
{
	u32 bits = 0;

	lockdep_assert_held(&vgpu_mdev.lock);
	mutex_lock(&inst->lock);
	if (inst->create_pending) {
		inst->create_pending = false;
		inst->create_status = -ENODEV;
		list_del(&inst->node);
		inst->linked = false;
		vgpu_mdev.ninstances--;
		complete(&inst->created);
	} else {
		vgpu_dev_state_set(inst, VGPU_DEVICE_ERROR, ENOTCONN);
		bits = VGPU_IRQ_DEVICE | vgpu_chans_fail(inst, ENOTCONN);
	}
	inst->close_pending = false;
	mutex_unlock(&inst->lock);
	wake_up_all(&inst->bar2_wait);
	if (bits)
		vgpu_irq_raise(inst, bits);
}

/* ---- ioctls ----------------------------------------------------------- */

/* A string field must end inside its array. */
static bool vgpu_str_ok(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

static bool vgpu_errno_ok(s32 e)
{
	return e >= 0 && e <= MAX_ERRNO;
}

static long vgpu_ioc_hello(void __user *arg)
{
	struct vgpu_mdev *g = &vgpu_mdev;
	struct vgpu_mdev_hello h;
	struct vgpu_inst *inst;
	u32 version;
	int ret = 0;

	if (copy_from_user(&h, arg, sizeof(h)))
		return -EFAULT;
	version = h.version;
	if (h.reserved)
		return -EINVAL;
	h.version = VGPU_MDEV_CTL_VERSION;
	h.ntypes = vgpu_ntypes;
	h.max_channels = VGPU_PCI_MAX_CHANNELS;
	if (copy_to_user(arg, &h, sizeof(h)))
		return -EFAULT;
	if (version < VGPU_MDEV_CTL_VERSION_MIN ||
	    version > VGPU_MDEV_CTL_VERSION) {
		pr_warn("vgpu_mdev: vgpud speaks control version %u, the module %u to %u\n",
			version, VGPU_MDEV_CTL_VERSION_MIN,
			VGPU_MDEV_CTL_VERSION);
		return -EPROTO;
	}

	mutex_lock(&g->lock);
	g->hello = true;
	g->version = version;
	list_for_each_entry(inst, &g->instances, node) {
		mutex_lock(&inst->lock);
		if (!inst->create_pending)
			ret = vgpu_evq_push(inst, VGPU_MDEV_EV_EXISTS, 0);
		mutex_unlock(&inst->lock);
		if (ret)
			break;
	}
	mutex_unlock(&g->lock);
	return ret;
}

static long vgpu_ioc_get_type(void __user *arg)
{
	struct vgpu_mdev_type_info t;

	if (copy_from_user(&t, arg, sizeof(t)))
		return -EFAULT;
	if (t.index >= vgpu_ntypes)
		return -EINVAL;
	t = vgpu_types[t.index].info;
	return copy_to_user(arg, &t, sizeof(t)) ? -EFAULT : 0;
}

static long vgpu_ioc_set_available(void __user *arg)
{
	struct vgpu_mdev_available a;
	struct vgpu_type *type;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.index >= vgpu_ntypes ||
	    !vgpu_str_ok(a.description, sizeof(a.description)))
		return -EINVAL;
	type = &vgpu_types[a.index];
	mutex_lock(&vgpu_mdev.lock);
	type->available = a.available;
	strscpy(type->description, a.description, sizeof(type->description));
	mutex_unlock(&vgpu_mdev.lock);
	return 0;
}

/*
 * Checks a BAR2 memfd (CREATE_DONE, SET_BAR2) and takes a reference: a
 * shmem file open read-write, exactly as large as BAR2, sealed against
 * resizing and further seals (a shrink would SIGBUS the VMM; a later
 * write seal would be bypassed by the mappings it has) and not against
 * writing. what names the ioctl in the log.
 */
static struct file *vgpu_bar2_get(struct vgpu_inst *inst, int fd,
				  const char *what)
{
	const unsigned int need = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	struct device *dev = &inst->mdev->dev;
	unsigned int seals;
	struct file *f;

	f = fget(fd);
	if (!f) {
		dev_warn(dev, "%s: bar2_fd %d is not an open file\n", what, fd);
		return ERR_PTR(-EBADF);
	}
	if (!shmem_file(f)) {
		dev_warn(dev, "%s: bar2_fd is not a memfd\n", what);
		goto err;
	}
	if ((f->f_mode & (FMODE_READ | FMODE_WRITE)) !=
	    (FMODE_READ | FMODE_WRITE)) {
		dev_warn(dev, "%s: bar2_fd is not open read-write\n", what);
		goto err;
	}
	if (i_size_read(file_inode(f)) != inst->bar2_size) {
		dev_warn(dev, "%s: bar2_fd has %lld bytes, BAR2 has %llu\n",
			 what, i_size_read(file_inode(f)), inst->bar2_size);
		goto err;
	}
	seals = READ_ONCE(SHMEM_I(file_inode(f))->seals);
	if ((seals & need) != need ||
	    (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE))) {
		dev_warn(
			dev,
			"%s: bar2_fd must be sealed with F_SEAL_SHRINK, F_SEAL_GROW and F_SEAL_SEAL, and be writable (seals 0x%x)\n",
			what, seals);
		goto err;
	}
	return f;
err:
	fput(f);
	return ERR_PTR(-EINVAL);
}

/*
 * Makes f the instance's BAR2 memfd (the caller's reference moves in).
 * While a VFIO user holds the device with a memfd, another file is
 * refused (-EBUSY): the user's mappings are of the one it has, and the
 * worker must serve the rings there. The memfd the last VFIO user had is
 * refused too (-ESTALE: a GET_BAR2 answer that a close overtook), so it
 * never reaches the next user. Returns the replaced file, for the caller
 * to fput, or an ERR_PTR (f is then still the caller's).
 */
static struct file *vgpu_bar2_install(struct vgpu_inst *inst, struct file *f)
{
	struct file *old = inst->bar2;

	lockdep_assert_held(&inst->lock);
	if (old && inst->open && file_inode(old) != file_inode(f)) {
		dev_warn(
			&inst->mdev->dev,
			"instance %u: another BAR2 memfd while a VFIO user holds the device: refused\n",
			inst->id);
		return ERR_PTR(-EBUSY);
	}
	if (inst->bar2_closed &&
	    file_inode(inst->bar2_closed) == file_inode(f)) {
		dev_warn(
			&inst->mdev->dev,
			"instance %u: the BAR2 memfd of the last VFIO user again: refused\n",
			inst->id);
		return ERR_PTR(-ESTALE);
	}
	if (inst->bar2_closed) {
		fput(inst->bar2_closed); /* a file reference: no lock issue */
		inst->bar2_closed = NULL;
		atomic_dec(&vgpu_mdev.cnt.memfds);
	}
	WRITE_ONCE(inst->bar2, f);
	if (!old)
		atomic_inc(&vgpu_mdev.cnt.memfds);
	wake_up_all(&inst->bar2_wait);
	return old;
}

static int vgpu_check_create_done(struct vgpu_inst *inst,
				  const struct vgpu_mdev_create_done *d)
{
	u32 iso = inst->type->info.isolation;

	if (d->status > 0 || d->status < -MAX_ERRNO)
		return -EINVAL;
	if (!vgpu_str_ok(d->message, sizeof(d->message)))
		return -EINVAL;
	if (d->status)
		return 0;
	if (!vgpu_str_ok(d->gpu_name, sizeof(d->gpu_name)) ||
	    !vgpu_str_ok(d->vgpu_name, sizeof(d->vgpu_name)))
		return -EINVAL;
	if (d->isolation != VGPU_MDEV_SHARED &&
	    d->isolation != VGPU_MDEV_EXCLUSIVE)
		return -EINVAL;
	if (iso && d->isolation != iso)
		return -EINVAL;
	return 0;
}

/*
 * A failed CREATE_DONE's status as the sysfs create returns it: codes
 * from ERESTARTSYS (512) up are the kernel's own and must never reach
 * user space (a restart code would make the write start over), so they
 * become EIO.
 */
static int vgpu_create_errno(struct vgpu_inst *inst, s32 status)
{
	if (status > -ERESTARTSYS)
		return status;
	dev_warn(
		&inst->mdev->dev,
		"instance %u: vgpud's status %d is a kernel-internal code: EIO instead\n",
		inst->id, status);
	return -EIO;
}

/* Whether two compositions differ in anything but their change_count. */
static bool vgpu_compose_differs(const struct vgpu_compose *a,
				 const struct vgpu_compose *b)
{
	return a->version != b->version || a->features != b->features ||
	       a->sm_count != b->sm_count || a->gpu_index != b->gpu_index ||
	       a->memory != b->memory || a->slice_id != b->slice_id ||
	       a->isolation != b->isolation ||
	       memcmp(a->gpu_name, b->gpu_name, sizeof(a->gpu_name)) ||
	       memcmp(a->vgpu_name, b->vgpu_name, sizeof(a->vgpu_name));
}

/*
 * Shows c in BAR0. The caller holds inst->lock, which BAR0 reads take
 * too, so no read sees half of it; CHANGE_COUNT goes last all the same.
 */
static void vgpu_compose_show(struct vgpu_inst *inst,
			      const struct vgpu_compose *c)
{
	struct vgpu_compose *cur = &inst->comp;

	lockdep_assert_held(&inst->lock);
	cur->version = c->version;
	cur->features = c->features;
	cur->sm_count = c->sm_count;
	cur->gpu_index = c->gpu_index;
	cur->memory = c->memory;
	cur->slice_id = c->slice_id;
	cur->isolation = c->isolation;
	memcpy(cur->gpu_name, c->gpu_name, sizeof(cur->gpu_name));
	memcpy(cur->vgpu_name, c->vgpu_name, sizeof(cur->vgpu_name));
	WRITE_ONCE(cur->change_count, c->change_count);
}

/*
 * CREATE_DONE's composition. A re-attach (EXISTS: a restarted vgpud)
 * never moves CHANGE_COUNT back: a lower count keeps BAR0's, one more
 * when the composition differs, so a guest still notices the change.
 */
static void vgpu_compose_set(struct vgpu_inst *inst,
			     const struct vgpu_mdev_create_done *d)
{
	struct vgpu_compose c;

	lockdep_assert_held(&inst->lock);
	memset(&c, 0, sizeof(c));
	c.version = d->version;
	c.features = d->features;
	c.sm_count = d->sm_count;
	c.gpu_index = d->gpu_index;
	c.memory = d->memory;
	c.slice_id = d->slice_id;
	c.isolation = d->isolation;
	c.change_count = d->change_count;
	strscpy_pad(c.gpu_name, d->gpu_name, sizeof(c.gpu_name));
	strscpy_pad(c.vgpu_name, d->vgpu_name, sizeof(c.vgpu_name));
	if (inst->composed && c.change_count <= inst->comp.change_count)
		c.change_count = inst->comp.change_count +
				 vgpu_compose_differs(&inst->comp, &c);
	vgpu_compose_show(inst, &c);
}

/*
 * CREATE_DONE answers a pending create (the sysfs write returns) or an
 * EXISTS (a restarted vgpud re-attaches: the device is READY again).
 */
static long vgpu_ioc_create_done(void __user *arg)
{
	struct vgpu_mdev *g = &vgpu_mdev;
	struct vgpu_mdev_create_done *d;
	struct vgpu_inst *inst;
	struct file *bar2 = NULL, *old = NULL;
	u32 bits = 0;
	int status;
	long ret;

	d = memdup_user(arg, sizeof(*d));
	if (IS_ERR(d))
		return PTR_ERR(d);

	mutex_lock(&g->lock);
	inst = vgpu_inst_find(d->instance);
	if (!inst) {
		ret = -ENOENT;
		goto out;
	}
	ret = vgpu_check_create_done(inst, d);
	if (ret)
		goto out;
	if (!d->status) {
		bar2 = vgpu_bar2_get(inst, d->bar2_fd, "CREATE_DONE");
		if (IS_ERR(bar2)) {
			ret = PTR_ERR(bar2);
			goto out;
		}
	}

	mutex_lock(&inst->lock);
	if (d->status) {
		status = vgpu_create_errno(inst, d->status);
		dev_err(&inst->mdev->dev, "vgpud: instance %u: %s (%d)\n",
			inst->id, d->message, d->status);
		if (inst->create_pending) {
			inst->create_status = status;
		} else {
			vgpu_dev_state_set(inst, VGPU_DEVICE_ERROR, -status);
			bits = VGPU_IRQ_DEVICE |
			       vgpu_chans_fail(inst, inst->dev_error);
		}
	} else {
		old = vgpu_bar2_install(inst, bar2);
		if (IS_ERR(old)) {
			ret = PTR_ERR(old);
			old = NULL;
			mutex_unlock(&inst->lock);
			goto out;
		}
		bar2 = NULL;
		vgpu_compose_set(inst, d);
		inst->composed = true;
		vgpu_dev_state_set(inst, VGPU_DEVICE_READY, 0);
		if (inst->create_pending)
			inst->create_status = 0;
		else
			bits = VGPU_IRQ_DEVICE;
	}
	if (inst->create_pending) {
		inst->create_pending = false;
		complete(&inst->created);
	}
	mutex_unlock(&inst->lock);
	if (bits)
		vgpu_irq_raise(inst, bits);
out:
	mutex_unlock(&g->lock);
	if (old)
		fput(old);
	if (!IS_ERR_OR_NULL(bar2))
		fput(bar2);
	kfree(d);
	return ret;
}

/* COMPOSITION's fields that need no instance: EINVAL when one is bad. */
static int vgpu_check_composition(const struct vgpu_mdev_composition *c)
{
	if (c->reserved[0] || c->reserved[1] || !c->sm_count)
		return -EINVAL;
	if (c->isolation != VGPU_MDEV_SHARED &&
	    c->isolation != VGPU_MDEV_EXCLUSIVE)
		return -EINVAL;
	if (!vgpu_str_ok(c->gpu_name, sizeof(c->gpu_name)))
		return -EINVAL;
	return 0;
}

/*
 * Applies a checked COMPOSITION to a composed instance. Returns 1 when
 * BAR0 changed (the guest is to be told), 0 when it already showed this,
 * -ESTALE (c->change_count set to BAR0's) when the count does not pass
 * BAR0's, -EINVAL when the isolation is not the type's.
 */
static int vgpu_compose_update(struct vgpu_inst *inst,
			       struct vgpu_mdev_composition *c)
{
	struct vgpu_compose next;

	lockdep_assert_held(&inst->lock);
	if (c->isolation != inst->comp.isolation)
		return -EINVAL; /* CREATE_DONE's, which is the type's */
	next = inst->comp;
	next.sm_count = c->sm_count;
	next.gpu_index = c->gpu_index;
	next.memory = c->memory;
	next.slice_id = c->slice_id;
	strscpy_pad(next.gpu_name, c->gpu_name, sizeof(next.gpu_name));
	next.change_count = c->change_count;
	if (c->change_count == inst->comp.change_count &&
	    !vgpu_compose_differs(&inst->comp, &next))
		return 0;
	if (c->change_count <= inst->comp.change_count) {
		dev_warn_ratelimited(
			&inst->mdev->dev,
			"instance %u: COMPOSITION with change count %u, BAR0 shows %u: refused\n",
			inst->id, c->change_count, inst->comp.change_count);
		c->change_count = inst->comp.change_count;
		return -ESTALE;
	}
	vgpu_compose_show(inst, &next);
	return 1;
}

/*
 * COMPOSITION: a composed instance's vGPU changed (resize, move,
 * migration); BAR0 follows at once and the guest gets the device
 * interrupt. See mdev_ctl.h for the rules.
 */
static long vgpu_ioc_composition(void __user *arg)
{
	struct vgpu_mdev *g = &vgpu_mdev;
	struct vgpu_mdev_composition c;
	struct vgpu_inst *inst;
	long ret;

	if (copy_from_user(&c, arg, sizeof(c)))
		return -EFAULT;
	ret = vgpu_check_composition(&c);
	if (ret)
		return ret;

	mutex_lock(&g->lock);
	inst = vgpu_inst_find(c.instance);
	if (!inst) {
		mutex_unlock(&g->lock);
		return -ENOENT;
	}
	mutex_lock(&inst->lock);
	if (inst->create_pending || !inst->composed)
		ret = -EINVAL; /* CREATE_DONE brings the first one */
	else
		ret = vgpu_compose_update(inst, &c);
	mutex_unlock(&inst->lock);
	if (ret > 0)
		vgpu_irq_raise(inst, VGPU_IRQ_DEVICE);
	mutex_unlock(&g->lock);
	if (ret == -ESTALE && copy_to_user(arg, &c, sizeof(c)))
		return -EFAULT;
	return ret < 0 ? ret : 0;
}

/*
 * SET_BAR2: vgpud's fresh memfd for the next VFIO session (its answer to
 * CLOSE), checked as CREATE_DONE's. Wakes an open that waits for it.
 */
static long vgpu_ioc_set_bar2(void __user *arg)
{
	struct vgpu_mdev *g = &vgpu_mdev;
	struct file *f = NULL, *old = NULL;
	struct vgpu_mdev_bar2 b;
	struct vgpu_inst *inst;
	long ret = 0;

	if (copy_from_user(&b, arg, sizeof(b)))
		return -EFAULT;
	mutex_lock(&g->lock);
	inst = vgpu_inst_find(b.instance);
	if (!inst) {
		ret = -ENOENT;
		goto out;
	}
	f = vgpu_bar2_get(inst, b.fd, "SET_BAR2");
	if (IS_ERR(f)) {
		ret = PTR_ERR(f);
		f = NULL;
		goto out;
	}
	mutex_lock(&inst->lock);
	if (inst->create_pending || !inst->composed) {
		ret = -EINVAL; /* CREATE_DONE brings the first one */
	} else {
		old = vgpu_bar2_install(inst, f);
		if (IS_ERR(old)) {
			ret = PTR_ERR(old);
			old = NULL;
		} else {
			f = NULL;
		}
	}
	mutex_unlock(&inst->lock);
out:
	mutex_unlock(&g->lock);
	if (old)
		fput(old);
	if (f)
		fput(f);
	return ret;
}

/*
 * GET_BAR2: a new descriptor of the instance's memfd, for a restarted
 * vgpud (EXISTS) to give the worker the file the VM has mapped. ENODATA
 * when there is none (closed since, and no SET_BAR2 yet).
 */
static long vgpu_ioc_get_bar2(void __user *arg)
{
	struct vgpu_mdev *g = &vgpu_mdev;
	struct vgpu_mdev_bar2 b;
	struct vgpu_inst *inst;
	struct file *f = NULL;
	int fd;

	if (copy_from_user(&b, arg, sizeof(b)))
		return -EFAULT;
	mutex_lock(&g->lock);
	inst = vgpu_inst_find(b.instance);
	if (inst) {
		mutex_lock(&inst->lock);
		if (inst->bar2)
			f = get_file(inst->bar2);
		mutex_unlock(&inst->lock);
	}
	mutex_unlock(&g->lock);
	if (!inst)
		return -ENOENT;
	if (!f)
		return -ENODATA;
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		fput(f);
		return fd;
	}
	b.fd = fd;
	if (copy_to_user(arg, &b, sizeof(b))) {
		put_unused_fd(fd);
		fput(f);
		return -EFAULT;
	}
	fd_install(fd, f);
	return 0;
}

static long vgpu_ioc_device_state(void __user *arg)
{
	struct vgpu_mdev *g = &vgpu_mdev;
	struct vgpu_mdev_device_state s;
	struct vgpu_inst *inst;
	u32 bits = 0;
	long ret = 0;

	if (copy_from_user(&s, arg, sizeof(s)))
		return -EFAULT;
	if (s.state > VGPU_DEVICE_ERROR || !vgpu_errno_ok(s.error) ||
	    s.reserved)
		return -EINVAL;

	mutex_lock(&g->lock);
	inst = vgpu_inst_find(s.instance);
	if (!inst) {
		ret = -ENOENT;
		goto out;
	}
	mutex_lock(&inst->lock);
	if (inst->create_pending ||
	    (s.state == VGPU_DEVICE_READY && !inst->composed)) {
		ret = -EINVAL; /* compose it with CREATE_DONE first */
	} else if (!inst->removing || s.state == VGPU_DEVICE_ERROR) {
		vgpu_dev_state_set(inst, s.state,
				   s.state == VGPU_DEVICE_ERROR
					   ? (s.error ? s.error : EIO)
					   : 0);
		bits = VGPU_IRQ_DEVICE;
		if (s.state == VGPU_DEVICE_ERROR)
			bits |= vgpu_chans_fail(inst, inst->dev_error);
	}
	mutex_unlock(&inst->lock);
	if (bits)
		vgpu_irq_raise(inst, bits);
out:
	mutex_unlock(&g->lock);
	return ret;
}

static long vgpu_ioc_channel_setup(void __user *arg)
{
	struct vgpu_mdev *g = &vgpu_mdev;
	struct vgpu_mdev_channel_setup s;
	struct vgpu_inst *inst;
	long ret;

	if (copy_from_user(&s, arg, sizeof(s)))
		return -EFAULT;

	mutex_lock(&g->lock);
	inst = vgpu_inst_find(s.instance);
	if (!inst) {
		ret = -ENOENT;
		goto out;
	}
	mutex_lock(&inst->lock);
	if (s.channel >= inst->channels ||
	    inst->chan[s.channel].state != VGPU_CHAN_OPENING)
		ret = -EINVAL;
	else
		ret = vgpu_chan_set_fds(inst, s.channel, s.doorbell_fd,
					s.complete_fd);
	mutex_unlock(&inst->lock);
out:
	mutex_unlock(&g->lock);
	return ret;
}

/*
 * CHANNEL_STATE: OPEN (from OPENING, after CHANNEL_SETUP), FAILED (from
 * OPENING or OPEN) or FREE (from any state: drops the eventfds; FREE on
 * a FREE channel changes nothing and raises no interrupt).
 */
static long vgpu_ioc_channel_state(void __user *arg)
{
	struct vgpu_mdev *g = &vgpu_mdev;
	struct vgpu_mdev_channel_state s;
	struct vgpu_inst *inst;
	struct vgpu_chan *c;
	bool raise = false;
	long ret = 0;

	if (copy_from_user(&s, arg, sizeof(s)))
		return -EFAULT;
	if ((s.state != VGPU_CHAN_OPEN && s.state != VGPU_CHAN_FAILED &&
	     s.state != VGPU_CHAN_FREE) ||
	    !vgpu_errno_ok(s.error))
		return -EINVAL;

	mutex_lock(&g->lock);
	inst = vgpu_inst_find(s.instance);
	if (!inst) {
		ret = -ENOENT;
		goto out;
	}
	mutex_lock(&inst->lock);
	if (s.channel >= inst->channels) {
		ret = -EINVAL;
		goto unlock;
	}
	c = &inst->chan[s.channel];
	switch (s.state) {
	case VGPU_CHAN_OPEN:
		if (c->state != VGPU_CHAN_OPENING || !c->doorbell ||
		    !c->complete.ctx) {
			ret = -EINVAL;
			goto unlock;
		}
		c->error = 0;
		break;
	case VGPU_CHAN_FAILED:
		if (c->state != VGPU_CHAN_OPENING &&
		    c->state != VGPU_CHAN_OPEN) {
			ret = -EINVAL;
			goto unlock;
		}
		c->error = s.error ? s.error : EIO;
		vgpu_chan_drop_fds(inst, s.channel);
		break;
	default: /* FREE */
		if (c->state == VGPU_CHAN_FREE)
			goto unlock; /* nothing changes: no interrupt */
		vgpu_chan_drop_fds(inst, s.channel);
		break;
	}
	c->state = s.state;
	raise = true;
unlock:
	mutex_unlock(&inst->lock);
	if (raise)
		vgpu_irq_raise(inst, BIT(s.channel));
out:
	mutex_unlock(&g->lock);
	return ret;
}

static long vgpu_ctl_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	u32 version;
	bool hello;

	if (cmd == VGPU_MDEV_IOC_HELLO)
		return vgpu_ioc_hello(uarg);

	mutex_lock(&vgpu_mdev.lock);
	hello = vgpu_mdev.hello;
	version = vgpu_mdev.version;
	mutex_unlock(&vgpu_mdev.lock);
	if (!hello)
		return -EPROTO; /* HELLO first */

	switch (cmd) {
	case VGPU_MDEV_IOC_GET_TYPE:
		return vgpu_ioc_get_type(uarg);
	case VGPU_MDEV_IOC_SET_AVAILABLE:
		return vgpu_ioc_set_available(uarg);
	case VGPU_MDEV_IOC_CREATE_DONE:
		return vgpu_ioc_create_done(uarg);
	case VGPU_MDEV_IOC_DEVICE_STATE:
		return vgpu_ioc_device_state(uarg);
	case VGPU_MDEV_IOC_CHANNEL_SETUP:
		return vgpu_ioc_channel_setup(uarg);
	case VGPU_MDEV_IOC_CHANNEL_STATE:
		return vgpu_ioc_channel_state(uarg);
	case VGPU_MDEV_IOC_SET_BAR2:
		return vgpu_ioc_set_bar2(uarg);
	case VGPU_MDEV_IOC_GET_BAR2:
		return vgpu_ioc_get_bar2(uarg);
	case VGPU_MDEV_IOC_COMPOSITION:
		/* not in the version the daemon said it speaks */
		return version >= 3 ? vgpu_ioc_composition(uarg) : -ENOTTY;
	}
	return -ENOTTY;
}

/* ---- file operations -------------------------------------------------- */

static int vgpu_ctl_open(struct inode *inode, struct file *file)
{
	struct vgpu_mdev *g = &vgpu_mdev;
	int ret = 0;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	mutex_lock(&g->lock);
	if (g->daemon) {
		ret = -EBUSY;
	} else {
		g->daemon = file;
		g->hello = false;
		g->version = 0;
		vgpu_evq_attach(true);
	}
	mutex_unlock(&g->lock);
	if (!ret)
		pr_info("vgpu_mdev: vgpud attached (pid %d)\n",
			task_tgid_nr(current));
	return ret ? ret : stream_open(inode, file);
}

/*
 * The daemon let go (or died): every instance goes to DEVICE_ERROR
 * (ENOTCONN), its channels to FAILED; pending creates fail.
 */
static int vgpu_ctl_release(struct inode *inode, struct file *file)
{
	struct vgpu_mdev *g = &vgpu_mdev;
	struct vgpu_inst *inst, *next;
	unsigned int i;

	mutex_lock(&g->lock);
	vgpu_evq_attach(false);
	g->daemon = NULL;
	g->hello = false;
	g->version = 0;
	for (i = 0; i < vgpu_ntypes; i++)
		vgpu_type_reset_available(&vgpu_types[i]);
	list_for_each_entry_safe(inst, next, &g->instances, node)
		vgpu_inst_daemon_gone(inst);
	mutex_unlock(&g->lock);
	pr_info("vgpu_mdev: vgpud detached\n");
	return 0;
}

/* read(): whole struct vgpu_mdev_event records, oldest first. */
static ssize_t vgpu_ctl_read(struct file *file, char __user *buf, size_t count,
			     loff_t *ppos)
{
	struct vgpu_evq *q = &vgpu_mdev.evq;
	struct vgpu_mdev_event ev;
	unsigned long flags;
	size_t done = 0;
	int ret;

	if (count < sizeof(ev))
		return -EINVAL;
	if (mutex_lock_interruptible(&q->read_lock))
		return -ERESTARTSYS;
	while (!vgpu_evq_count()) {
		if (file->f_flags & O_NONBLOCK) {
			ret = -EAGAIN;
			goto out;
		}
		ret = wait_event_interruptible(q->wait, vgpu_evq_count());
		if (ret)
			goto out;
	}
	while (count - done >= sizeof(ev)) {
		spin_lock_irqsave(&q->lock, flags);
		if (!q->count) {
			spin_unlock_irqrestore(&q->lock, flags);
			break;
		}
		ev = q->ring[q->head].ev;
		spin_unlock_irqrestore(&q->lock, flags);
		if (copy_to_user(buf + done, &ev, sizeof(ev))) {
			ret = done ? 0 : -EFAULT;
			goto out;
		}
		/* only readers pop, and they hold read_lock */
		vgpu_evq_pop();
		done += sizeof(ev);
	}
	ret = 0;
out:
	mutex_unlock(&q->read_lock);
	if (done)
		vgpu_evq_flush_closes();
	return done ? done : ret;
}

static __poll_t vgpu_ctl_poll(struct file *file, poll_table *wait)
{
	poll_wait(file, &vgpu_mdev.evq.wait, wait);
	return vgpu_evq_count() ? EPOLLIN | EPOLLRDNORM : 0;
}

static const struct file_operations vgpu_ctl_fops = {
	.owner = THIS_MODULE,
	.open = vgpu_ctl_open,
	.release = vgpu_ctl_release,
	.read = vgpu_ctl_read,
	.poll = vgpu_ctl_poll,
	.unlocked_ioctl = vgpu_ctl_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = no_llseek,
};

static struct miscdevice vgpu_ctl_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = VGPU_MDEV_CTL_NAME,
	.fops = &vgpu_ctl_fops,
	.mode = 0600,
};

/* The event queue; the device itself comes last (vgpu_ctl_register). */
int vgpu_ctl_init(void)
{
	struct vgpu_evq *q = &vgpu_mdev.evq;

	spin_lock_init(&q->lock);
	init_waitqueue_head(&q->wait);
	mutex_init(&q->read_lock);
	q->ring = kvcalloc(VGPU_MDEV_EVQ_SIZE, sizeof(*q->ring), GFP_KERNEL);
	return q->ring ? 0 : -ENOMEM;
}

void vgpu_ctl_exit(void)
{
	kvfree(vgpu_mdev.evq.ring);
	vgpu_mdev.evq.ring = NULL;
}

/*
 * /dev/vgpu-ctl appears last in module init (and goes first in exit), so
 * no daemon can hold it while the rest may still fail or be torn down.
 */
int vgpu_ctl_register(void)
{
	return misc_register(&vgpu_ctl_misc);
}

void vgpu_ctl_deregister(void)
{
	misc_deregister(&vgpu_ctl_misc);
}
