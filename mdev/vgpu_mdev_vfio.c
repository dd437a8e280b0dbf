// SPDX-License-Identifier: GPL-2.0
/*
 * The VFIO face of an instance: vfio_device_ops for a PCI device with
 * config space, BAR0 (trapped registers) and BAR2 (the channels' rings,
 * a memfd of vgpud's, mmap()ed straight through), and its interrupts
 * (INTx, one MSI vector, REQ, ERR) as eventfds, with vfio-pci's rules.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "vgpu_mdev.h"

static struct vgpu_inst *to_inst(struct vfio_device *vdev)
{
	return container_of(vdev, struct vgpu_inst, vdev);
}

/* ---- interrupts ------------------------------------------------------- */

/*
 * Signals the guest if IRQ_STATUS has bits: MSI each time (edge); INTx
 * once until the user unmasks it (level, automasked as in vfio-pci).
 */
static void vgpu_irq_fire(struct vgpu_inst *inst)
{
	unsigned long flags;

	spin_lock_irqsave(&inst->irq_lock, flags);
	if (atomic_read(&inst->irq_status)) {
		if (inst->irq_type == VGPU_IRQ_MSI && inst->msi_trigger) {
			eventfd_signal(inst->msi_trigger, 1);
		} else if (inst->irq_type == VGPU_IRQ_INTX &&
			   inst->intx_trigger && !inst->intx_masked) {
			inst->intx_masked = true;
			eventfd_signal(inst->intx_trigger, 1);
		}
	}
	spin_unlock_irqrestore(&inst->irq_lock, flags);
}

static void vgpu_irq_work(struct work_struct *work)
{
	vgpu_irq_fire(container_of(work, struct vgpu_inst, irq_work));
}

/* Sets IRQ_STATUS bits and interrupts the guest. */
void vgpu_irq_raise(struct vgpu_inst *inst, u32 bits)
{
	atomic_or(bits, &inst->irq_status);
	if (eventfd_signal_allowed())
		vgpu_irq_fire(inst);
	else
		queue_work(system_highpri_wq, &inst->irq_work);
}

/* Replaces a trigger (NULL clears it); the old one is put outside the lock. */
static void vgpu_set_trigger(struct vgpu_inst *inst, struct eventfd_ctx **slot,
			     struct eventfd_ctx *ctx)
{
	struct eventfd_ctx *old;
	unsigned long flags;

	spin_lock_irqsave(&inst->irq_lock, flags);
	old = *slot;
	*slot = ctx;
	spin_unlock_irqrestore(&inst->irq_lock, flags);
	if (ctx)
		atomic_inc(&vgpu_mdev.cnt.irq_eventfds);
	if (old) {
		eventfd_ctx_put(old);
		atomic_dec(&vgpu_mdev.cnt.irq_eventfds);
	}
}

static void vgpu_set_irq_type(struct vgpu_inst *inst, enum vgpu_irq_type t)
{
	unsigned long flags;

	spin_lock_irqsave(&inst->irq_lock, flags);
	inst->irq_type = t;
	inst->intx_masked = false;
	spin_unlock_irqrestore(&inst->irq_lock, flags);
}

/* All interrupts off, all triggers dropped (close, release). */
static void vgpu_irqs_disable(struct vgpu_inst *inst)
{
	vgpu_set_irq_type(inst, VGPU_IRQ_NONE);
	vgpu_set_trigger(inst, &inst->intx_trigger, NULL);
	vgpu_set_trigger(inst, &inst->msi_trigger, NULL);
	vgpu_set_trigger(inst, &inst->err_trigger, NULL);
	vgpu_set_trigger(inst, &inst->req_trigger, NULL);
}

/* The number of vectors of an irq index (VFIO_DEVICE_GET_IRQ_INFO). */
static u32 vgpu_irq_count(u32 index)
{
	switch (index) {
	case VFIO_PCI_INTX_IRQ_INDEX:
	case VFIO_PCI_MSI_IRQ_INDEX:
	case VFIO_PCI_ERR_IRQ_INDEX:
	case VFIO_PCI_REQ_IRQ_INDEX:
		return 1;
	}
	return 0; /* MSI-X: none */
}

/* A DATA_EVENTFD argument: an eventfd, or -1 for none. */
static int vgpu_irq_fd(s32 fd, struct eventfd_ctx **ctx)
{
	*ctx = NULL;
	if (fd == -1)
		return 0;
	if (fd < 0)
		return -EINVAL;
	*ctx = eventfd_ctx_fdget(fd);
	if (IS_ERR(*ctx)) {
		int ret = PTR_ERR(*ctx);

		*ctx = NULL;
		return ret;
	}
	return 0;
}

/* DATA_NONE or DATA_BOOL true with count 1: the user asks for a signal. */
static bool vgpu_irq_loopback(const struct vfio_irq_set *hdr, const u8 *data)
{
	if (hdr->count != 1)
		return false;
	if (hdr->flags & VFIO_IRQ_SET_DATA_BOOL)
		return data[0];
	return hdr->flags & VFIO_IRQ_SET_DATA_NONE;
}

/* ACTION_TRIGGER for INTx or MSI: enable, disable, or loopback. */
static int vgpu_set_intr_trigger(struct vgpu_inst *inst,
				 const struct vfio_irq_set *hdr, const u8 *data,
				 enum vgpu_irq_type type,
				 struct eventfd_ctx **slot)
{
	struct eventfd_ctx *ctx;
	unsigned long flags;
	int ret;

	if (!hdr->count) {
		if (!(hdr->flags & VFIO_IRQ_SET_DATA_NONE))
			return -EINVAL;
		if (inst->irq_type == type) {
			vgpu_set_irq_type(inst, VGPU_IRQ_NONE);
			vgpu_set_trigger(inst, slot, NULL);
		}
		return 0;
	}
	if (hdr->flags & VFIO_IRQ_SET_DATA_EVENTFD) {
		if (inst->irq_type != type && inst->irq_type != VGPU_IRQ_NONE)
			return -EINVAL; /* disable the other kind first */
		ret = vgpu_irq_fd(*(const s32 *)data, &ctx);
		if (ret)
			return ret;
		vgpu_set_trigger(inst, slot, ctx);
		vgpu_set_irq_type(inst, type);
		return 0;
	}
	if (inst->irq_type != type)
		return -EINVAL;
	if (vgpu_irq_loopback(hdr, data)) {
		spin_lock_irqsave(&inst->irq_lock, flags);
		if (*slot)
			eventfd_signal(*slot, 1);
		spin_unlock_irqrestore(&inst->irq_lock, flags);
	}
	return 0;
}

/* INTx ACTION_MASK / ACTION_UNMASK (no eventfd forms). */
static int vgpu_set_intx_mask(struct vgpu_inst *inst,
			      const struct vfio_irq_set *hdr, const u8 *data,
			      bool mask)
{
	unsigned long flags;
	bool fire = false;

	if (inst->irq_type != VGPU_IRQ_INTX || hdr->count != 1 ||
	    (hdr->flags & VFIO_IRQ_SET_DATA_EVENTFD))
		return -EINVAL;
	if (!vgpu_irq_loopback(hdr, data))
		return 0;
	spin_lock_irqsave(&inst->irq_lock, flags);
	inst->intx_masked = mask;
	fire = !mask;
	spin_unlock_irqrestore(&inst->irq_lock, flags);
	if (fire) /* level-triggered: still pending, fire again */
		vgpu_irq_fire(inst);
	return 0;
}

/* ERR and REQ: a single eventfd, as vfio_pci_set_ctx_trigger_single. */
static int vgpu_set_single_trigger(struct vgpu_inst *inst,
				   const struct vfio_irq_set *hdr,
				   const u8 *data, struct eventfd_ctx **slot)
{
	struct eventfd_ctx *ctx;
	unsigned long flags;
	int ret;

	if (hdr->flags & VFIO_IRQ_SET_DATA_EVENTFD) {
		if (hdr->count != 1)
			return -EINVAL;
		ret = vgpu_irq_fd(*(const s32 *)data, &ctx);
		if (ret)
			return ret;
		vgpu_set_trigger(inst, slot, ctx);
		return 0;
	}
	if (!hdr->count) {
		if (!(hdr->flags & VFIO_IRQ_SET_DATA_NONE))
			return -EINVAL;
		vgpu_set_trigger(inst, slot, NULL);
		return 0;
	}
	if (vgpu_irq_loopback(hdr, data)) {
		spin_lock_irqsave(&inst->irq_lock, flags);
		if (*slot)
			eventfd_signal(*slot, 1);
		spin_unlock_irqrestore(&inst->irq_lock, flags);
	}
	return 0;
}

static int vgpu_set_irqs(struct vgpu_inst *inst, const struct vfio_irq_set *hdr,
			 const u8 *data)
{
	u32 action = hdr->flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;

	switch (hdr->index) {
	case VFIO_PCI_INTX_IRQ_INDEX:
		if (action == VFIO_IRQ_SET_ACTION_MASK)
			return vgpu_set_intx_mask(inst, hdr, data, true);
		if (action == VFIO_IRQ_SET_ACTION_UNMASK)
			return vgpu_set_intx_mask(inst, hdr, data, false);
		if (action == VFIO_IRQ_SET_ACTION_TRIGGER)
			return vgpu_set_intr_trigger(inst, hdr, data,
						     VGPU_IRQ_INTX,
						     &inst->intx_trigger);
		break;
	case VFIO_PCI_MSI_IRQ_INDEX:
		if (action == VFIO_IRQ_SET_ACTION_TRIGGER)
			return vgpu_set_intr_trigger(inst, hdr, data,
						     VGPU_IRQ_MSI,
						     &inst->msi_trigger);
		break;
	case VFIO_PCI_ERR_IRQ_INDEX:
		if (action == VFIO_IRQ_SET_ACTION_TRIGGER)
			return vgpu_set_single_trigger(inst, hdr, data,
						       &inst->err_trigger);
		break;
	case VFIO_PCI_REQ_IRQ_INDEX:
		if (action == VFIO_IRQ_SET_ACTION_TRIGGER)
			return vgpu_set_single_trigger(inst, hdr, data,
						       &inst->req_trigger);
		break;
	}
	return -EINVAL;
}

/* ---- device life ------------------------------------------------------ */

static int vgpu_vfio_init(struct vfio_device *vdev)
{
	struct vgpu_inst *inst = to_inst(vdev);

	inst->mdev = to_mdev_device(vdev->dev);
	inst->type = container_of(inst->mdev->type, struct vgpu_type, mtype);
	inst->channels = inst->type->info.channels;
	inst->bar2_size = (u64)inst->channels * VGPU_PCI_CHANNEL_STRIDE;
	INIT_LIST_HEAD(&inst->node);
	mutex_init(&inst->lock);
	init_completion(&inst->created);
	init_waitqueue_head(&inst->bar2_wait);
	inst->dev_state = VGPU_DEVICE_STARTING;
	spin_lock_init(&inst->irq_lock);
	INIT_WORK(&inst->irq_work, vgpu_irq_work);
	vgpu_chan_init(inst);
	vgpu_cfg_init(inst);
	atomic_inc(&vgpu_mdev.cnt.instances);
	return 0;
}

/* The last reference is gone: drop everything the instance holds. */
static void vgpu_vfio_release(struct vfio_device *vdev)
{
	struct vgpu_inst *inst = to_inst(vdev);
	unsigned int i;

	vgpu_evq_forget(inst);
	mutex_lock(&inst->lock);
	for (i = 0; i < inst->channels; i++)
		vgpu_chan_drop_fds(inst, i);
	mutex_unlock(&inst->lock);
	vgpu_irqs_disable(inst);
	cancel_work_sync(&inst->irq_work);
	if (inst->bar2) {
		fput(inst->bar2);
		atomic_dec(&vgpu_mdev.cnt.memfds);
	}
	if (inst->bar2_closed) {
		fput(inst->bar2_closed);
		atomic_dec(&vgpu_mdev.cnt.memfds);
	}
	mutex_destroy(&inst->lock);
	atomic_dec(&vgpu_mdev.cnt.instances);
	vfio_free_device(vdev);
}

/* Fresh device state for a new user or after a reset. */
static void vgpu_device_reset(struct vgpu_inst *inst)
{
	lockdep_assert_held(&inst->lock);
	vgpu_cfg_init(inst);
	atomic_set(&inst->irq_status, 0);
}

/*
 * A new VFIO user may start once vgpud has given the instance a BAR2
 * memfd since the last user closed it, or when there is no vgpud to give
 * one (the device shows ERROR; BAR2 has no backing until one comes).
 */
static bool vgpu_bar2_ready(struct vgpu_inst *inst)
{
	return READ_ONCE(inst->bar2) || !vgpu_daemon_attached();
}

static int vgpu_vfio_open(struct vfio_device *vdev)
{
	struct vgpu_inst *inst = to_inst(vdev);
	long left;
	int ret;

	mutex_lock(&inst->lock);
	ret = vgpu_inst_flush_close(inst);
	mutex_unlock(&inst->lock);
	if (ret)
		return ret;
	left = wait_event_killable_timeout(inst->bar2_wait,
					   vgpu_bar2_ready(inst),
					   VGPU_MDEV_BAR2_WAIT_S * HZ);
	if (left < 0)
		return left;
	if (!left) {
		dev_warn(
			&inst->mdev->dev,
			"instance %u: vgpud has not given a fresh BAR2 memfd since the last VFIO user closed it (waited %d s): open refused\n",
			inst->id, VGPU_MDEV_BAR2_WAIT_S);
		return -EAGAIN;
	}

	mutex_lock(&inst->lock);
	ret = vgpu_evq_push(inst, VGPU_MDEV_EV_OPEN, 0);
	if (ret == -ENOTCONN)
		ret = 0; /* no vgpud: the device shows DEVICE_ERROR */
	if (!ret) {
		inst->open = true;
		vgpu_device_reset(inst);
	}
	mutex_unlock(&inst->lock);
	return ret;
}

/*
 * The VFIO user let go: its BAR2 memfd goes (its mappings keep only that
 * file, which no later user sees; kept aside only to refuse it back),
 * channels close, vgpud is told (it answers with the next user's memfd).
 */
static void vgpu_vfio_close(struct vfio_device *vdev)
{
	struct vgpu_inst *inst = to_inst(vdev);
	struct file *bar2;

	mutex_lock(&inst->lock);
	vgpu_irqs_disable(inst);
	bar2 = inst->bar2_closed;
	inst->bar2_closed = inst->bar2;
	WRITE_ONCE(inst->bar2, NULL);
	vgpu_chans_begin_close(inst, vgpu_inst_tell_close(inst));
	inst->open = false;
	vgpu_device_reset(inst);
	mutex_unlock(&inst->lock);
	if (bar2) {
		fput(bar2);
		atomic_dec(&vgpu_mdev.cnt.memfds);
	}
}

/*
 * The instance is being removed while a user holds it (called again every
 * 10 s until it lets go): tell the user through the REQ eventfd, and the
 * guest through DEVICE_ERROR and the device interrupt.
 */
static void vgpu_vfio_request(struct vfio_device *vdev, unsigned int count)
{
	struct vgpu_inst *inst = to_inst(vdev);
	unsigned long flags;
	bool told = false;

	mutex_lock(&inst->lock);
	inst->removing = true; /* vgpud's READY must not undo this */
	inst->dev_state = VGPU_DEVICE_ERROR;
	inst->dev_error = ENODEV;
	mutex_unlock(&inst->lock);
	spin_lock_irqsave(&inst->irq_lock, flags);
	if (inst->req_trigger) {
		eventfd_signal(inst->req_trigger, 1);
		told = true;
	}
	spin_unlock_irqrestore(&inst->irq_lock, flags);
	vgpu_irq_raise(inst, VGPU_IRQ_DEVICE);
	if (!count)
		dev_notice(
			&inst->mdev->dev,
			"instance %u is being removed: asking its user to release it%s\n",
			inst->id, told ? "" : " (no request eventfd)");
}

/* ---- ioctls ----------------------------------------------------------- */

static void vgpu_region_info(struct vgpu_inst *inst,
			     struct vfio_region_info *info)
{
	info->offset = VGPU_INDEX_TO_OFFSET(info->index);
	info->cap_offset = 0;
	info->size = 0;
	info->flags = 0;
	switch (info->index) {
	case VFIO_PCI_CONFIG_REGION_INDEX:
		info->size = VGPU_CFG_SIZE;
		info->flags = VFIO_REGION_INFO_FLAG_READ |
			      VFIO_REGION_INFO_FLAG_WRITE;
		break;
	case VFIO_PCI_BAR0_REGION_INDEX:
		info->size = VGPU_PCI_BAR0_SIZE;
		info->flags = VFIO_REGION_INFO_FLAG_READ |
			      VFIO_REGION_INFO_FLAG_WRITE;
		break;
	case VFIO_PCI_BAR2_REGION_INDEX:
		info->size = inst->bar2_size;
		info->flags = VFIO_REGION_INFO_FLAG_READ |
			      VFIO_REGION_INFO_FLAG_WRITE |
			      VFIO_REGION_INFO_FLAG_MMAP;
		break;
	}
}

static long vgpu_ioctl_get_info(void __user *arg)
{
	unsigned long minsz = offsetofend(struct vfio_device_info, num_irqs);
	struct vfio_device_info info;

	if (copy_from_user(&info, arg, minsz))
		return -EFAULT;
	if (info.argsz < minsz)
		return -EINVAL;
	info.flags = VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET;
	info.num_regions = VFIO_PCI_NUM_REGIONS;
	info.num_irqs = VFIO_PCI_NUM_IRQS;
	return copy_to_user(arg, &info, minsz) ? -EFAULT : 0;
}

static long vgpu_ioctl_region_info(struct vgpu_inst *inst, void __user *arg)
{
	unsigned long minsz = offsetofend(struct vfio_region_info, offset);
	struct vfio_region_info info;

	if (copy_from_user(&info, arg, minsz))
		return -EFAULT;
	if (info.argsz < minsz || info.index >= VFIO_PCI_NUM_REGIONS)
		return -EINVAL;
	vgpu_region_info(inst, &info);
	return copy_to_user(arg, &info, minsz) ? -EFAULT : 0;
}

static long vgpu_ioctl_irq_info(void __user *arg)
{
	unsigned long minsz = offsetofend(struct vfio_irq_info, count);
	struct vfio_irq_info info;

	if (copy_from_user(&info, arg, minsz))
		return -EFAULT;
	if (info.argsz < minsz || info.index >= VFIO_PCI_NUM_IRQS)
		return -EINVAL;
	info.count = vgpu_irq_count(info.index);
	info.flags = info.count ? VFIO_IRQ_INFO_EVENTFD : 0;
	if (info.index == VFIO_PCI_INTX_IRQ_INDEX)
		info.flags |= VFIO_IRQ_INFO_MASKABLE | VFIO_IRQ_INFO_AUTOMASKED;
	else
		info.flags |= VFIO_IRQ_INFO_NORESIZE;
	return copy_to_user(arg, &info, minsz) ? -EFAULT : 0;
}

static long vgpu_ioctl_set_irqs(struct vgpu_inst *inst, void __user *arg)
{
	unsigned long minsz = offsetofend(struct vfio_irq_set, count);
	struct vfio_irq_set hdr;
	size_t data_size = 0;
	u8 *data = NULL;
	u32 action;
	int ret;

	if (copy_from_user(&hdr, arg, minsz))
		return -EFAULT;
	ret = vfio_set_irqs_validate_and_prepare(
		&hdr,
		hdr.index < VFIO_PCI_NUM_IRQS ? vgpu_irq_count(hdr.index) : 0,
		VFIO_PCI_NUM_IRQS, &data_size);
	if (ret)
		return ret;
	action = hdr.flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;
	if (action != VFIO_IRQ_SET_ACTION_MASK &&
	    action != VFIO_IRQ_SET_ACTION_UNMASK &&
	    action != VFIO_IRQ_SET_ACTION_TRIGGER)
		return -EINVAL;
	if (data_size) {
		data = memdup_user(arg + minsz, data_size);
		if (IS_ERR(data))
			return PTR_ERR(data);
	}
	mutex_lock(&inst->lock);
	ret = vgpu_set_irqs(inst, &hdr, data);
	mutex_unlock(&inst->lock);
	kfree(data);
	return ret;
}

/* VFIO_DEVICE_RESET (a guest reboot): channels close, vgpud is told. */
static long vgpu_ioctl_reset(struct vgpu_inst *inst)
{
	int ret;

	mutex_lock(&inst->lock);
	ret = vgpu_evq_push(inst, VGPU_MDEV_EV_RESET, 0);
	if (ret == -ENOTCONN || !ret) {
		vgpu_chans_begin_close(inst, ret == 0);
		vgpu_device_reset(inst);
		ret = 0;
	}
	mutex_unlock(&inst->lock);
	return ret;
}

static long vgpu_vfio_ioctl(struct vfio_device *vdev, unsigned int cmd,
			    unsigned long arg)
{
	struct vgpu_inst *inst = to_inst(vdev);
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case VFIO_DEVICE_GET_INFO:
		return vgpu_ioctl_get_info(uarg);
	case VFIO_DEVICE_GET_REGION_INFO:
		return vgpu_ioctl_region_info(inst, uarg);
	case VFIO_DEVICE_GET_IRQ_INFO:
		return vgpu_ioctl_irq_info(uarg);
	case VFIO_DEVICE_SET_IRQS:
		return vgpu_ioctl_set_irqs(inst, uarg);
	case VFIO_DEVICE_RESET:
		return vgpu_ioctl_reset(inst);
	}
	return -ENOTTY;
}

/* ---- region read/write, mmap ------------------------------------------ */

/* BAR2 through the memfd, for users that do not mmap it. */
static ssize_t vgpu_bar2_rw(struct vgpu_inst *inst, char __user *ubuf,
			    size_t count, u64 off, bool write)
{
	struct file *f;
	size_t done = 0;
	void *bounce;
	ssize_t ret = 0;

	if (off >= inst->bar2_size)
		return -EINVAL;
	count = min_t(u64, count, inst->bar2_size - off);
	mutex_lock(&inst->lock);
	f = inst->bar2 ? get_file(inst->bar2) : NULL;
	mutex_unlock(&inst->lock);
	if (!f)
		return -ENODEV;
	bounce = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!bounce) {
		fput(f);
		return -ENOMEM;
	}
	while (done < count) {
		size_t n = min_t(size_t, count - done, PAGE_SIZE);
		loff_t pos = off + done;

		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		if (write) {
			if (copy_from_user(bounce, ubuf + done, n)) {
				ret = -EFAULT;
				break;
			}
			ret = kernel_write(f, bounce, n, &pos);
		} else {
			ret = kernel_read(f, bounce, n, &pos);
			if (ret > 0 && copy_to_user(ubuf + done, bounce, ret))
				ret = -EFAULT;
		}
		if (ret <= 0)
			break;
		done += ret;
		cond_resched();
	}
	kfree(bounce);
	fput(f);
	return done ? done : ret;
}

/*
 * Config space: any size and offset. BAR0: aligned 32-bit accesses only;
 * other accesses read zeros and are ignored (pci.h).
 */
static ssize_t vgpu_vfio_rw(struct vfio_device *vdev, char __user *ubuf,
			    size_t count, loff_t *ppos, bool write)
{
	struct vgpu_inst *inst = to_inst(vdev);
	u32 index = VGPU_OFFSET_TO_INDEX((u64)*ppos);
	u64 off = *ppos & VGPU_OFFSET_MASK;
	u8 buf[VGPU_CFG_SIZE];
	ssize_t ret;
	__le32 le;

	if (*ppos < 0)
		return -EINVAL;
	switch (index) {
	case VFIO_PCI_CONFIG_REGION_INDEX:
		if (off >= VGPU_CFG_SIZE)
			return -EINVAL;
		count = min_t(u64, count, VGPU_CFG_SIZE - off);
		if (write && copy_from_user(buf, ubuf, count))
			return -EFAULT;
		mutex_lock(&inst->lock);
		if (write)
			vgpu_cfg_write(inst, off, buf, count);
		else
			vgpu_cfg_read(inst, off, buf, count);
		mutex_unlock(&inst->lock);
		if (!write && copy_to_user(ubuf, buf, count))
			return -EFAULT;
		ret = count;
		break;
	case VFIO_PCI_BAR0_REGION_INDEX:
		if (off >= VGPU_PCI_BAR0_SIZE)
			return -EINVAL;
		count = min_t(u64, count, VGPU_PCI_BAR0_SIZE - off);
		if (count != 4 || (off & 3)) {
			if (!write && clear_user(ubuf, count))
				return -EFAULT;
			ret = count;
			break;
		}
		if (write) {
			if (get_user(le, (__le32 __user *)ubuf))
				return -EFAULT;
			mutex_lock(&inst->lock);
			vgpu_bar0_write(inst, off, le32_to_cpu(le));
			mutex_unlock(&inst->lock);
		} else {
			mutex_lock(&inst->lock);
			le = cpu_to_le32(vgpu_bar0_read(inst, off));
			mutex_unlock(&inst->lock);
			if (put_user(le, (__le32 __user *)ubuf))
				return -EFAULT;
		}
		ret = 4;
		break;
	case VFIO_PCI_BAR2_REGION_INDEX:
		ret = vgpu_bar2_rw(inst, ubuf, count, off, write);
		break;
	default:
		return -EINVAL;
	}
	if (ret > 0)
		*ppos += ret;
	return ret;
}

static ssize_t vgpu_vfio_read(struct vfio_device *vdev, char __user *buf,
			      size_t count, loff_t *ppos)
{
	return vgpu_vfio_rw(vdev, buf, count, ppos, false);
}

static ssize_t vgpu_vfio_write(struct vfio_device *vdev, const char __user *buf,
			       size_t count, loff_t *ppos)
{
	return vgpu_vfio_rw(vdev, (char __user *)buf, count, ppos, true);
}

/*
 * mmap of BAR2: the vma becomes a mapping of vgpud's memfd (as dma-buf
 * hands a vma to its exporter), so the guest reaches the same pages the
 * worker maps. Shared mappings inside BAR2 only, and they cannot grow
 * (mremap) past it. The mapping holds the memfd, not this device: after
 * close it reaches only that session's file (vgpu_vfio_close).
 */
static int vgpu_vfio_mmap(struct vfio_device *vdev, struct vm_area_struct *vma)
{
	struct vgpu_inst *inst = to_inst(vdev);
	u64 pos = (u64)vma->vm_pgoff << PAGE_SHIFT;
	u64 off = pos & VGPU_OFFSET_MASK;
	u64 size = vma->vm_end - vma->vm_start;
	struct file *f;

	if (VGPU_OFFSET_TO_INDEX(pos) != VFIO_PCI_BAR2_REGION_INDEX)
		return -EINVAL;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (off >= inst->bar2_size || size > inst->bar2_size - off)
		return -EINVAL;
	mutex_lock(&inst->lock);
	f = inst->bar2 ? get_file(inst->bar2) : NULL;
	mutex_unlock(&inst->lock);
	if (!f)
		return -ENODEV;
	if (!f->f_op->mmap) {
		fput(f);
		return -ENODEV;
	}
	vma->vm_pgoff = off >> PAGE_SHIFT;
	vma->vm_flags |= VM_DONTEXPAND;
	vma_set_file(vma, f);
	fput(f); /* the vma holds its own reference now */
	return call_mmap(vma->vm_file, vma);
}

const struct vfio_device_ops vgpu_vfio_ops = {
	.name = "vgpu-mdev",
	.init = vgpu_vfio_init,
	.release = vgpu_vfio_release,
	.open_device = vgpu_vfio_open,
	.close_device = vgpu_vfio_close,
	.read = vgpu_vfio_read,
	.write = vgpu_vfio_write,
	.ioctl = vgpu_vfio_ioctl,
	.mmap = vgpu_vfio_mmap,
	.request = vgpu_vfio_request,
};
