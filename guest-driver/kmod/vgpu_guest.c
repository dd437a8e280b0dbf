// SPDX-License-Identifier: GPL-2.0
/*
 * vgpu_guest.ko: the guest's driver for a vGPU, the PCI device of
 * include/vgpu/pci.h that an mdev instance of vgpu_mdev.ko presents to a
 * VM. It gives user space /dev/vgpuN with the file semantics of
 * include/vgpu/guest_uapi.h: one open file is one channel (one client of
 * the vGPU), its ring is the channel's window of BAR2, write() rings the
 * doorbell in BAR0 and read()/poll() count the channel's interrupts.
 *
 * Laid out in the order a reader needs it: constants and state, register
 * helpers, channels (take, open, close), the interrupt, the file
 * operations (mmap last of them), sysfs, PCI probe/remove, module init.
 *
 * Death and removal. A channel is dead once its STATE leaves OPENING/OPEN
 * without our asking (FAILED: the worker or vgpud went away; FREE or
 * CLOSING: a reset) or the device goes ERROR: read()/write() fail with EIO,
 * poll() reports POLLERR | POLLHUP, and the ring stays mapped (the BAR is
 * still there, and results already reaped from it must stay readable).
 * On remove() (hot-unplug, unbind) the BAR is going away: every mapping is
 * zapped and a later access faults in a per-file tombstone (a ring header
 * that says DEAD, a scratch page elsewhere), so a client still spinning
 * on its ring sees a dead ring instead of someone else's BAR or SIGBUS.
 *
 * Composition changes. The host changes BAR0's composition registers as
 * one (a resize, a move, a migration), CHANGE_COUNT last, and raises the
 * device interrupt. sysfs reads the registers at each read; the handler
 * compares CHANGE_COUNT with the last it saw and, when it moved, wakes
 * poll() on the change_count attribute (sysfs_notify: POLLPRI). A reader
 * of several registers (VGPU_GUEST_IOC_INFO) reads CHANGE_COUNT before
 * and after them and reads again when it moved.
 *
 * Locks: vd->lock (mutex) guards channel ownership; vd->hw_lock (rwsem)
 * guards every process-context BAR access against removal (readers check
 * vd->gone; remove() takes it for writing once to set gone). The interrupt
 * handler needs neither: free_irq() runs before the BARs are unmapped.
 * Order: mmap_lock -> hw_lock; vd->lock -> hw_lock; vd->lock -> i_mmap.
 * Nothing holds hw_lock across a user copy or a sleep.
 */
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/poll.h>
#include <linux/rwsem.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <asm/unaligned.h>

#include <vgpu/guest_uapi.h>
#include <vgpu/pci.h>
/*
 * protocol.h is user-space C (it includes <stdint.h>); the kernel build
 * finds shim/stdint.h first, which maps the fixed-width types to
 * <linux/types.h>. So the driver uses the one definition of
 * VGPU_PROTO_MAJOR and of the ring header, never a copy.
 */
#include <vgpu/protocol.h>

#define VGPU_GUEST_NAME	       "vgpu_guest"
#define VGPU_GUEST_CLASS       "vgpu" /* /sys/class/vgpu, /dev/vgpuN */
#define VGPU_GUEST_MAX_DEVICES 64     /* as many as vgpu_mdev instances */
/* close() waits this long for FREE: the uapi's open bound, reused */
#define VGPU_GUEST_CLOSE_TIMEOUT_MS VGPU_GUEST_OPEN_TIMEOUT_MS
/* waits re-read the state register this often even without interrupts */
#define VGPU_GUEST_WAIT_SLICE (HZ / 10)
/* reads of a consistent composition before taking what the last one saw */
#define VGPU_GUEST_COMP_TRIES 4

#define VGPU_BAR_REGS  0
#define VGPU_BAR_RINGS 2

struct vgpu_file;

/* One channel of a device; chan[i] is channel i. */
struct vgpu_chan {
	struct vgpu_file *owner; /* set under vd->lock; read by the IRQ */
	bool closing;		 /* owner's close() wrote CMD_CLOSE */
	bool dead;		 /* see the top of the file; set once */
	atomic64_t pending;	 /* interrupts since the last read() */
	wait_queue_head_t wq;	 /* read, poll, open and close waiters */
};

/* One vGPU device: /dev/vgpuN and /sys/class/vgpu/vgpuN. */
struct vgpu_dev {
	struct device dev; /* refcounted: outlives remove() while open */
	struct cdev cdev;
	struct pci_dev *pdev; /* only until remove() */
	int minor;
	int irq;
	char irq_name[16];

	void __iomem *regs;	    /* BAR0 */
	void *rings_wb;		    /* BAR2 mapped write-back: see mmap */
	resource_size_t rings_phys; /* BAR2 start */
	u32 nchannels;		    /* windows in BAR2, read at probe */
	u32 stride;		    /* bytes per window */
	u32 irq_mask;		    /* IRQ_STATUS bits that exist */
	u32 change_seen;	    /* CHANGE_COUNT the IRQ handler saw last */
	struct kernfs_node *change_kn; /* sysfs change_count, for poll() */

	struct rw_semaphore hw_lock; /* BAR access against removal */
	bool gone;		     /* remove() began: no BAR access */
	struct mutex lock;	     /* chan[].owner */
	struct vgpu_chan chan[VGPU_PCI_MAX_CHANNELS];
};

/* One open file: one channel. */
struct vgpu_file {
	struct vgpu_dev *vd;
	struct vgpu_chan *chan;
	unsigned int ch;
	/*
	 * The file's own address space (file->f_mapping), so that removal
	 * zaps exactly the mappings of this file, whatever device node it
	 * was opened through, forked children included.
	 */
	struct address_space mapping;
	struct page *tomb_header; /* ring header saying DEAD */
	struct page *tomb_data;	  /* every other page after removal */
};

static struct class *vgpu_class;
static dev_t vgpu_devt;
static DEFINE_IDA(vgpu_minors);
static const struct address_space_operations vgpu_aops = {};

/* ---- registers ---------------------------------------------------------- */

static u32 vgpu_rd(struct vgpu_dev *vd, u32 off)
{
	return readl(vd->regs + off);
}

static void vgpu_wr(struct vgpu_dev *vd, u32 off, u32 val)
{
	writel(val, vd->regs + off);
}

static u32 vgpu_chan_reg(unsigned int ch, u32 reg)
{
	return VGPU_REG_CHANNEL(ch) + reg;
}

/*
 * Process-context BAR access: returns -ENODEV once remove() began;
 * otherwise the BARs stay mapped until vgpu_hw_put().
 */
static int vgpu_hw_get(struct vgpu_dev *vd)
{
	down_read(&vd->hw_lock);
	if (vd->gone) {
		up_read(&vd->hw_lock);
		return -ENODEV;
	}
	return 0;
}

static void vgpu_hw_put(struct vgpu_dev *vd)
{
	up_read(&vd->hw_lock);
}

/* The 64-bit quota from its two halves, consistent across a change. */
static u64 vgpu_rd_memory(struct vgpu_dev *vd)
{
	u32 hi, lo, again;
	int tries = 3;

	do {
		hi = vgpu_rd(vd, VGPU_REG_MEMORY_HI);
		lo = vgpu_rd(vd, VGPU_REG_MEMORY_LO);
		again = vgpu_rd(vd, VGPU_REG_MEMORY_HI);
	} while (hi != again && --tries);
	return (u64)again << 32 | lo;
}

/* A NUL-padded 64-byte string register, always NUL-terminated here. */
static void vgpu_rd_string(struct vgpu_dev *vd, u32 off,
			   char out[VGPU_REG_STRING_BYTES])
{
	u32 i;

	for (i = 0; i < VGPU_REG_STRING_BYTES; i += 4)
		put_unaligned_le32(vgpu_rd(vd, off + i), out + i);
	out[VGPU_REG_STRING_BYTES - 1] = '\0';
}

/* The ring protocol major this driver and the guest library speak. */
static bool vgpu_version_ok(u32 version)
{
	return version >> 16 == VGPU_PROTO_MAJOR;
}

/* ---- channels ----------------------------------------------------------- */

static bool vgpu_chan_is_dead(struct vgpu_dev *vd, struct vgpu_chan *c)
{
	return READ_ONCE(c->dead) || READ_ONCE(vd->gone);
}

/* One channel's STATE, or -ENODEV once the device is being removed. */
static int vgpu_chan_state(struct vgpu_dev *vd, unsigned int ch, u32 *state)
{
	int ret = vgpu_hw_get(vd);

	if (ret)
		return ret;
	*state = vgpu_rd(vd, vgpu_chan_reg(ch, VGPU_CHAN_STATE));
	vgpu_hw_put(vd);
	return 0;
}

/*
 * A channel nobody owns that is not FREE was left behind (an open that
 * failed or timed out, a close the host refused, an earlier binding):
 * ask the host to free it. CLOSING is already on its way. hw held.
 */
static void vgpu_chan_recycle(struct vgpu_dev *vd, unsigned int ch, u32 state)
{
	if (state == VGPU_CHAN_OPENING || state == VGPU_CHAN_OPEN ||
	    state == VGPU_CHAN_FAILED)
		vgpu_wr(vd, vgpu_chan_reg(ch, VGPU_CHAN_CTRL),
			VGPU_CHAN_CMD_CLOSE);
}

/*
 * Picks a FREE channel for f, makes f its owner and writes CMD_OPEN.
 * EIO: device in ERROR; EAGAIN: not composed yet; EPROTONOSUPPORT: the
 * host now speaks another protocol major; EBUSY: no channel free.
 */
static int vgpu_chan_take(struct vgpu_dev *vd, struct vgpu_file *f)
{
	u32 dev_state, version, state;
	unsigned int i;
	int ret;

	if (mutex_lock_interruptible(&vd->lock))
		return -ERESTARTSYS;
	ret = vgpu_hw_get(vd);
	if (ret)
		goto out_unlock;
	dev_state = vgpu_rd(vd, VGPU_REG_DEVICE_STATE);
	version = vgpu_rd(vd, VGPU_REG_VERSION);
	if (dev_state == VGPU_DEVICE_ERROR) {
		ret = -EIO;
	} else if (dev_state != VGPU_DEVICE_READY) {
		ret = -EAGAIN;
	} else if (!vgpu_version_ok(version)) {
		dev_err_ratelimited(&vd->dev,
				    "host speaks ring protocol %u.%u, this "
				    "driver %u.x: refusing the open\n",
				    version >> 16, version & 0xffff,
				    VGPU_PROTO_MAJOR);
		ret = -EPROTONOSUPPORT;
	} else {
		ret = -EBUSY;
		for (i = 0; i < vd->nchannels; i++) {
			struct vgpu_chan *c = &vd->chan[i];

			if (c->owner)
				continue;
			state = vgpu_rd(vd, vgpu_chan_reg(i, VGPU_CHAN_STATE));
			if (state != VGPU_CHAN_FREE) {
				vgpu_chan_recycle(vd, i, state);
				continue;
			}
			WRITE_ONCE(c->dead, false);
			WRITE_ONCE(c->closing, false);
			atomic64_set(&c->pending, 0);
			f->ch = i;
			f->chan = c;
			/* owner first: the IRQ watches owned channels */
			WRITE_ONCE(c->owner, f);
			vgpu_wr(vd, vgpu_chan_reg(i, VGPU_CHAN_CTRL),
				VGPU_CHAN_CMD_OPEN);
			ret = 0;
			break;
		}
	}
	vgpu_hw_put(vd);
out_unlock:
	mutex_unlock(&vd->lock);
	return ret;
}

/* Why an open ended in state (not OPENING, not OPEN), as an errno. */
static int vgpu_open_error(struct vgpu_dev *vd, unsigned int ch, u32 state)
{
	u32 dev_state, error;

	if (vgpu_hw_get(vd))
		return -ENODEV;
	dev_state = vgpu_rd(vd, VGPU_REG_DEVICE_STATE);
	error = vgpu_rd(vd, vgpu_chan_reg(ch, VGPU_CHAN_ERROR));
	vgpu_hw_put(vd);
	dev_info_ratelimited(
		&vd->dev, "channel %u: open failed (state %u, host error %u)\n",
		ch, state, error);
	/* refused before it started because the vGPU was not composed yet */
	if (dev_state != VGPU_DEVICE_ERROR && state == VGPU_CHAN_FREE &&
	    error == EAGAIN)
		return -EAGAIN;
	return -EIO;
}

/*
 * Waits, interruptibly and at most VGPU_GUEST_OPEN_TIMEOUT_MS, until the
 * channel CMD_OPEN was written to is OPEN (the worker laid out the ring).
 */
static int vgpu_chan_wait_open(struct vgpu_dev *vd, struct vgpu_file *f)
{
	unsigned long deadline =
		jiffies + msecs_to_jiffies(VGPU_GUEST_OPEN_TIMEOUT_MS);
	struct vgpu_chan *c = f->chan;
	long left, ret;
	u32 state;
	s64 seen;

	for (;;) {
		/* before the read: an interrupt after it ends the wait */
		seen = atomic64_read(&c->pending);
		ret = vgpu_chan_state(vd, f->ch, &state);
		if (ret)
			return ret;
		if (state == VGPU_CHAN_OPEN)
			break;
		if (state != VGPU_CHAN_OPENING)
			return vgpu_open_error(vd, f->ch, state);
		left = (long)(deadline - jiffies);
		if (left <= 0)
			return -ETIMEDOUT;
		ret = wait_event_interruptible_timeout(
			c->wq,
			atomic64_read(&c->pending) != seen ||
				READ_ONCE(vd->gone),
			min_t(long, left, VGPU_GUEST_WAIT_SLICE));
		if (ret < 0)
			return ret;
	}
	/* the open's own interrupts are not the client's to count */
	atomic64_set(&c->pending, 0);
	return 0;
}

/*
 * close(): CMD_CLOSE, then (wait) a bounded, uninterruptible wait for FREE
 * (the worker has freed the client's memory). A channel the host does not
 * free in time stays CLOSING; a later open skips it until it is FREE. A
 * failed open does not wait: the host was slow or refused already.
 */
static void vgpu_chan_close(struct vgpu_dev *vd, struct vgpu_file *f, bool wait)
{
	unsigned long deadline =
		jiffies + msecs_to_jiffies(VGPU_GUEST_CLOSE_TIMEOUT_MS);
	struct vgpu_chan *c = f->chan;
	u32 state;
	s64 seen;
	long left;

	WRITE_ONCE(c->closing, true);
	if (vgpu_hw_get(vd))
		return;
	state = vgpu_rd(vd, vgpu_chan_reg(f->ch, VGPU_CHAN_STATE));
	vgpu_chan_recycle(vd, f->ch, state);
	vgpu_hw_put(vd);
	while (wait) {
		seen = atomic64_read(&c->pending);
		if (vgpu_chan_state(vd, f->ch, &state))
			return;
		if (state == VGPU_CHAN_FREE)
			return;
		if (state != VGPU_CHAN_CLOSING) {
			dev_warn_ratelimited(
				&vd->dev,
				"channel %u: close refused (state %u)\n", f->ch,
				state);
			return;
		}
		left = (long)(deadline - jiffies);
		if (left <= 0) {
			dev_warn_ratelimited(
				&vd->dev, "channel %u: not free after %u ms\n",
				f->ch, VGPU_GUEST_CLOSE_TIMEOUT_MS);
			return;
		}
		wait_event_timeout(c->wq,
				   atomic64_read(&c->pending) != seen ||
					   READ_ONCE(vd->gone),
				   min_t(long, left, VGPU_GUEST_WAIT_SLICE));
	}
}

/* Gives f's channel up (after a failed open or at the end of close). */
static void vgpu_chan_release(struct vgpu_dev *vd, struct vgpu_file *f)
{
	mutex_lock(&vd->lock);
	WRITE_ONCE(f->chan->owner, NULL);
	mutex_unlock(&vd->lock);
}

/* ---- interrupt ---------------------------------------------------------- */

/*
 * One channel's share of an interrupt: count it, wake its waiters, and
 * find out whether an owned channel died (its STATE is not what its
 * owner expects, or the whole device is in ERROR).
 */
static void vgpu_chan_irq(struct vgpu_dev *vd, unsigned int ch, bool dev_error)
{
	struct vgpu_chan *c = &vd->chan[ch];
	u32 state;

	if (READ_ONCE(c->owner) && !READ_ONCE(c->closing)) {
		state = dev_error ? VGPU_CHAN_FAILED
				  : vgpu_rd(vd,
					    vgpu_chan_reg(ch, VGPU_CHAN_STATE));
		if (state != VGPU_CHAN_OPENING && state != VGPU_CHAN_OPEN)
			WRITE_ONCE(c->dead, true);
	}
	atomic64_inc(&c->pending);
	wake_up(&c->wq);
}

/*
 * A device interrupt may say the composition changed (a resize, a
 * migration): when CHANGE_COUNT moved, poll() on sysfs change_count
 * wakes. kernfs_notify may be called from any context; the node is held
 * from probe until after free_irq().
 */
static void vgpu_irq_composition(struct vgpu_dev *vd)
{
	u32 count = vgpu_rd(vd, VGPU_REG_CHANGE_COUNT);
	struct kernfs_node *kn;

	if (count == vd->change_seen || count == U32_MAX)
		return;
	vd->change_seen = count;
	kn = READ_ONCE(vd->change_kn);
	if (kn)
		sysfs_notify_dirent(kn);
}

/*
 * MSI or INTx (shared). Reads and clears IRQ_STATUS (write 1 to clear);
 * the device bit means any state may have changed: every channel looks.
 */
static irqreturn_t vgpu_irq(int irq, void *data)
{
	struct vgpu_dev *vd = data;
	bool dev_error = false;
	u32 status, chans;

	status = vgpu_rd(vd, VGPU_REG_IRQ_STATUS);
	if (status == U32_MAX) /* all ones: the device does not answer */
		return IRQ_NONE;
	status &= vd->irq_mask;
	if (!status)
		return IRQ_NONE;
	vgpu_wr(vd, VGPU_REG_IRQ_STATUS, status);
	chans = status & ~VGPU_IRQ_DEVICE;
	if (status & VGPU_IRQ_DEVICE) {
		chans = vd->irq_mask & ~VGPU_IRQ_DEVICE;
		dev_error =
			vgpu_rd(vd, VGPU_REG_DEVICE_STATE) == VGPU_DEVICE_ERROR;
		vgpu_irq_composition(vd);
	}
	while (chans) {
		vgpu_chan_irq(vd, __ffs(chans), dev_error);
		chans &= chans - 1;
	}
	return IRQ_HANDLED;
}

/* ---- file operations ---------------------------------------------------- */

static void vgpu_file_free(struct vgpu_file *f)
{
	if (f->tomb_header)
		__free_page(f->tomb_header);
	if (f->tomb_data)
		__free_page(f->tomb_data);
	kfree(f);
}

static struct vgpu_file *vgpu_file_alloc(struct vgpu_dev *vd,
					 struct inode *inode)
{
	struct vgpu_ring_header *h;
	struct vgpu_file *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return NULL;
	f->vd = vd;
	address_space_init_once(&f->mapping);
	f->mapping.host = inode;
	f->mapping.a_ops = &vgpu_aops;
	f->tomb_header = alloc_page(GFP_KERNEL | __GFP_ZERO);
	f->tomb_data = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!f->tomb_header || !f->tomb_data) {
		vgpu_file_free(f);
		return NULL;
	}
	h = page_address(f->tomb_header);
	h->magic = VGPU_PROTO_MAGIC;
	h->major = VGPU_PROTO_MAJOR;
	h->minor = VGPU_PROTO_MINOR;
	h->status = VGPU_RING_DEAD;
	return f;
}

/* open(): take a channel and wait until the host has opened it. */
static int vgpu_fop_open(struct inode *inode, struct file *file)
{
	struct vgpu_dev *vd =
		container_of(inode->i_cdev, struct vgpu_dev, cdev);
	struct vgpu_file *f;
	int ret;

	f = vgpu_file_alloc(vd, inode);
	if (!f)
		return -ENOMEM;
	get_device(&vd->dev);
	ret = vgpu_chan_take(vd, f);
	if (ret)
		goto err_free;
	ret = vgpu_chan_wait_open(vd, f);
	if (ret) {
		/* FAILED, a timeout, a signal: leave nothing open behind */
		vgpu_chan_close(vd, f, false);
		vgpu_chan_release(vd, f);
		goto err_free;
	}
	file->private_data = f;
	file->f_mapping = &f->mapping;
	return stream_open(inode, file);

err_free:
	vgpu_file_free(f);
	put_device(&vd->dev);
	return ret;
}

/* close() (the last reference, mappings included). */
static int vgpu_fop_release(struct inode *inode, struct file *file)
{
	struct vgpu_file *f = file->private_data;
	struct vgpu_dev *vd = f->vd;

	vgpu_chan_close(vd, f, true);
	vgpu_chan_release(vd, f);
	vgpu_file_free(f);
	put_device(&vd->dev);
	return 0;
}

/* read(): 8 bytes, the interrupts since the last read (at least one). */
static ssize_t vgpu_fop_read(struct file *file, char __user *buf, size_t count,
			     loff_t *ppos)
{
	struct vgpu_file *f = file->private_data;
	struct vgpu_dev *vd = f->vd;
	struct vgpu_chan *c = f->chan;
	u64 n;
	int ret;

	if (count != sizeof(n))
		return -EINVAL;
	for (;;) {
		if (vgpu_chan_is_dead(vd, c))
			return -EIO;
		n = atomic64_xchg(&c->pending, 0);
		if (n)
			break;
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(
			c->wq,
			atomic64_read(&c->pending) || vgpu_chan_is_dead(vd, c));
		if (ret)
			return ret;
	}
	if (copy_to_user(buf, &n, sizeof(n)))
		return -EFAULT;
	return sizeof(n);
}

/* write(): 8 bytes, any value: the channel's submit doorbell. */
static ssize_t vgpu_fop_write(struct file *file, const char __user *buf,
			      size_t count, loff_t *ppos)
{
	struct vgpu_file *f = file->private_data;
	struct vgpu_dev *vd = f->vd;
	u64 val;

	if (count != sizeof(val))
		return -EINVAL;
	if (copy_from_user(&val, buf, sizeof(val)))
		return -EFAULT;
	if (vgpu_chan_is_dead(vd, f->chan) || vgpu_hw_get(vd))
		return -EIO;
	vgpu_wr(vd, vgpu_chan_reg(f->ch, VGPU_CHAN_DOORBELL), 1);
	vgpu_hw_put(vd);
	return sizeof(val);
}

static __poll_t vgpu_fop_poll(struct file *file, poll_table *wait)
{
	struct vgpu_file *f = file->private_data;
	struct vgpu_chan *c = f->chan;
	__poll_t mask = EPOLLOUT | EPOLLWRNORM;

	poll_wait(file, &c->wq, wait);
	if (vgpu_chan_is_dead(f->vd, c))
		return EPOLLERR | EPOLLHUP;
	if (atomic64_read(&c->pending))
		mask |= EPOLLIN | EPOLLRDNORM;
	return mask;
}

/*
 * The composition from BAR0, all of one: CHANGE_COUNT before and after
 * the other registers agree (the host changes them together, the count
 * last), or the last of VGPU_GUEST_COMP_TRIES reads. hw held.
 */
static void vgpu_rd_info(struct vgpu_dev *vd, struct vgpu_guest_info *info)
{
	int tries = VGPU_GUEST_COMP_TRIES;
	u32 count;

	do {
		count = vgpu_rd(vd, VGPU_REG_CHANGE_COUNT);
		info->version = vgpu_rd(vd, VGPU_REG_VERSION);
		info->memory = vgpu_rd_memory(vd);
		info->sm_count = vgpu_rd(vd, VGPU_REG_SM_COUNT);
		info->gpu_index = vgpu_rd(vd, VGPU_REG_GPU_INDEX);
		info->slice_id = vgpu_rd(vd, VGPU_REG_SLICE_ID);
		vgpu_rd_string(vd, VGPU_REG_GPU_NAME, info->gpu_name);
		vgpu_rd_string(vd, VGPU_REG_VGPU_NAME, info->vgpu_name);
		info->change_count = vgpu_rd(vd, VGPU_REG_CHANGE_COUNT);
	} while (info->change_count != count && --tries);
}

/* VGPU_GUEST_IOC_INFO: the composition, read from BAR0 now. */
static long vgpu_fop_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	struct vgpu_file *f = file->private_data;
	struct vgpu_dev *vd = f->vd;
	struct vgpu_guest_info info;
	int ret;

	/* the number encodes the size: only the exact one is accepted */
	if (cmd != VGPU_GUEST_IOC_INFO)
		return -ENOTTY;
	memset(&info, 0, sizeof(info));
	ret = vgpu_hw_get(vd);
	if (ret)
		return ret;
	vgpu_rd_info(vd, &info);
	vgpu_hw_put(vd);
	info.channel = f->ch;
	info.ring_size = vd->stride;
	if (copy_to_user((void __user *)arg, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

/*
 * A fault on the ring: the page of the channel's BAR2 window, or after
 * removal the file's tombstone (page 0: a header that says DEAD).
 * Faulting pages in (instead of remap_pfn_range at mmap) is what makes
 * removal race-free: a fault holds hw_lock, so it either finishes before
 * remove() sets gone (and the zap that follows removes its page) or sees
 * gone; an mmap() that ran concurrently with removal has mapped nothing.
 */
static vm_fault_t vgpu_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct vgpu_file *f = vma->vm_private_data;
	struct vgpu_dev *vd = f->vd;
	unsigned long pfn;
	vm_fault_t ret;

	if (vmf->pgoff >= vd->stride >> PAGE_SHIFT)
		return VM_FAULT_SIGBUS;
	if (vgpu_hw_get(vd) == 0) {
		pfn = PHYS_PFN(vd->rings_phys +
			       (resource_size_t)f->ch * vd->stride) +
		      vmf->pgoff;
		ret = vmf_insert_pfn(vma, vmf->address, pfn);
		vgpu_hw_put(vd);
		return ret;
	}
	pfn = page_to_pfn(vmf->pgoff ? f->tomb_data : f->tomb_header);
	return vmf_insert_pfn(vma, vmf->address, pfn);
}

static const struct vm_operations_struct vgpu_vm_ops = {
	.fault = vgpu_vm_fault,
};

/*
 * mmap(): offset 0, at most the channel's window, MAP_SHARED, not
 * executable. Pages are faulted in by vgpu_vm_fault().
 *
 * Memory type: the host backs BAR2 with ordinary RAM (a memfd that the
 * worker maps write-back and accesses with plain loads, stores and
 * atomics), and BAR2 is prefetchable, so the guest maps it as normal
 * write-back memory: the vma keeps the default page protection (no
 * pgprot_noncached/writecombine). Uncached would make every ring access
 * a bus transaction; write-combining would also break the ring's
 * ordering (a release store may not be seen after an earlier WC store).
 * On x86 a pfn inserted at fault time gets the memory type that PAT has
 * recorded for its physical range (uncached where none is recorded), so
 * probe memremap()s BAR2 write-back: that records WB for the range (or
 * what the guest's MTRRs allow, which is then consistent everywhere).
 * Under KVM without non-coherent DMA the guest's type is ignored and the
 * access is write-back anyway; under TCG there are no caches.
 */
static int vgpu_fop_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct vgpu_file *f = file->private_data;
	struct vgpu_dev *vd = f->vd;

	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL; /* MAP_PRIVATE: a copy of a ring is useless */
	if (vma->vm_pgoff != 0 || vma_pages(vma) > vd->stride >> PAGE_SHIFT)
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	if (READ_ONCE(vd->gone))
		return -ENODEV;
	if (READ_ONCE(f->chan->dead))
		return -EIO;
	vma->vm_flags |= VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_flags &= ~VM_MAYEXEC;
	vma->vm_ops = &vgpu_vm_ops;
	vma->vm_private_data = f;
	return 0;
}

static const struct file_operations vgpu_fops = {
	.owner = THIS_MODULE,
	.open = vgpu_fop_open,
	.release = vgpu_fop_release,
	.read = vgpu_fop_read,
	.write = vgpu_fop_write,
	.poll = vgpu_fop_poll,
	.unlocked_ioctl = vgpu_fop_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = vgpu_fop_mmap,
	.llseek = no_llseek,
};

/* ---- sysfs: /sys/class/vgpu/vgpuN/ ----------------------------------------
 */

static struct vgpu_dev *to_vgpu(struct device *dev)
{
	return container_of(dev, struct vgpu_dev, dev);
}

/* One register, read now; -ENODEV while the device is being removed. */
static int vgpu_attr_reg(struct device *dev, u32 off, u32 *val)
{
	struct vgpu_dev *vd = to_vgpu(dev);
	int ret = vgpu_hw_get(vd);

	if (ret)
		return ret;
	*val = vgpu_rd(vd, off);
	vgpu_hw_put(vd);
	return 0;
}

static ssize_t vgpu_show_u32(struct device *dev, u32 off, char *buf)
{
	u32 v;
	int ret = vgpu_attr_reg(dev, off, &v);

	return ret ? ret : sysfs_emit(buf, "%u\n", v);
}

static ssize_t vgpu_show_string(struct device *dev, u32 off, char *buf)
{
	struct vgpu_dev *vd = to_vgpu(dev);
	char s[VGPU_REG_STRING_BYTES];
	int ret = vgpu_hw_get(vd);

	if (ret)
		return ret;
	vgpu_rd_string(vd, off, s);
	vgpu_hw_put(vd);
	return sysfs_emit(buf, "%s\n", s);
}

#define VGPU_ATTR_U32(name, reg)                                               \
	static ssize_t name##_show(struct device *dev,                         \
				   struct device_attribute *attr, char *buf)   \
	{                                                                      \
		return vgpu_show_u32(dev, reg, buf);                           \
	}                                                                      \
	static DEVICE_ATTR_RO(name)

VGPU_ATTR_U32(sms, VGPU_REG_SM_COUNT);
VGPU_ATTR_U32(gpu, VGPU_REG_GPU_INDEX);
VGPU_ATTR_U32(change_count, VGPU_REG_CHANGE_COUNT);
VGPU_ATTR_U32(channels, VGPU_REG_NUM_CHANNELS);

static ssize_t gpu_name_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return vgpu_show_string(dev, VGPU_REG_GPU_NAME, buf);
}
static DEVICE_ATTR_RO(gpu_name);

static ssize_t vgpu_name_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	return vgpu_show_string(dev, VGPU_REG_VGPU_NAME, buf);
}
static DEVICE_ATTR_RO(vgpu_name);

static ssize_t memory_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct vgpu_dev *vd = to_vgpu(dev);
	int ret = vgpu_hw_get(vd);
	u64 bytes;

	if (ret)
		return ret;
	bytes = vgpu_rd_memory(vd);
	vgpu_hw_put(vd);
	return sysfs_emit(buf, "%llu\n", bytes);
}
static DEVICE_ATTR_RO(memory);

/* "FIRST COUNT": the first SM group of the slice and how many groups. */
static ssize_t slice_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	u32 v;
	int ret = vgpu_attr_reg(dev, VGPU_REG_SLICE_ID, &v);

	return ret ? ret : sysfs_emit(buf, "%u %u\n", v >> 16, v & 0xffff);
}
static DEVICE_ATTR_RO(slice);

static ssize_t isolation_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	u32 v;
	int ret = vgpu_attr_reg(dev, VGPU_REG_ISOLATION, &v);

	if (ret)
		return ret;
	return sysfs_emit(buf, "%s\n",
			  v == 1   ? "shared"
			  : v == 2 ? "exclusive"
				   : "unknown");
}
static DEVICE_ATTR_RO(isolation);

static ssize_t protocol_version_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	u32 v;
	int ret = vgpu_attr_reg(dev, VGPU_REG_VERSION, &v);

	return ret ? ret : sysfs_emit(buf, "%u.%u\n", v >> 16, v & 0xffff);
}
static DEVICE_ATTR_RO(protocol_version);

static ssize_t state_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	static const char *const names[] = {
		[VGPU_DEVICE_STARTING] = "starting",
		[VGPU_DEVICE_READY] = "ready",
		[VGPU_DEVICE_ERROR] = "error",
	};
	u32 v;
	int ret = vgpu_attr_reg(dev, VGPU_REG_DEVICE_STATE, &v);

	if (ret)
		return ret;
	return sysfs_emit(buf, "%s\n",
			  v < ARRAY_SIZE(names) ? names[v] : "unknown");
}
static DEVICE_ATTR_RO(state);

static struct attribute *vgpu_attrs[] = {
	&dev_attr_sms.attr,	     &dev_attr_memory.attr,
	&dev_attr_gpu.attr,	     &dev_attr_gpu_name.attr,
	&dev_attr_vgpu_name.attr,    &dev_attr_slice.attr,
	&dev_attr_isolation.attr,    &dev_attr_protocol_version.attr,
	&dev_attr_change_count.attr, &dev_attr_channels.attr,
	&dev_attr_state.attr,	     NULL,
};
ATTRIBUTE_GROUPS(vgpu);

/* Everyone may use a vGPU, as everyone may use /dev/nvidia* by default. */
static char *vgpu_devnode(struct device *dev, umode_t *mode)
{
	if (mode)
		*mode = 0666;
	return NULL;
}

/* ---- PCI ---------------------------------------------------------------- */

static void vgpu_dev_release(struct device *dev)
{
	kfree(to_vgpu(dev));
}

/*
 * The device must be ours and speak our protocol major; its channel
 * windows must fit BAR2. Fills nchannels, stride and irq_mask.
 */
static int vgpu_check_device(struct vgpu_dev *vd)
{
	struct pci_dev *pdev = vd->pdev;
	u32 magic, version, state, nch, stride;
	u64 need;

	magic = vgpu_rd(vd, VGPU_REG_MAGIC);
	if (magic != VGPU_PCI_DEVICE_MAGIC) {
		pci_err(pdev, "BAR0 magic is 0x%08x, not 0x%08x: not a vGPU\n",
			magic, VGPU_PCI_DEVICE_MAGIC);
		return -ENODEV;
	}
	version = vgpu_rd(vd, VGPU_REG_VERSION);
	state = vgpu_rd(vd, VGPU_REG_DEVICE_STATE);
	/* a device not composed yet may show version 0: open checks again */
	if (!vgpu_version_ok(version) &&
	    !(state == VGPU_DEVICE_STARTING && version == 0)) {
		pci_err(pdev,
			"the vGPU speaks ring protocol %u.%u, this driver "
			"%u.x: refusing the device\n",
			version >> 16, version & 0xffff, VGPU_PROTO_MAJOR);
		return -ENODEV;
	}
	nch = vgpu_rd(vd, VGPU_REG_NUM_CHANNELS);
	stride = vgpu_rd(vd, VGPU_REG_CHANNEL_STRIDE);
	need = (u64)nch * stride;
	if (nch == 0 || nch > VGPU_PCI_MAX_CHANNELS || stride == 0 ||
	    !PAGE_ALIGNED(stride) ||
	    need > pci_resource_len(pdev, VGPU_BAR_RINGS)) {
		pci_err(pdev,
			"%u channels of %u bytes do not fit BAR2 (%llu bytes, "
			"at most %u channels)\n",
			nch, stride,
			(u64)pci_resource_len(pdev, VGPU_BAR_RINGS),
			VGPU_PCI_MAX_CHANNELS);
		return -ENODEV;
	}
	vd->nchannels = nch;
	vd->stride = stride;
	vd->irq_mask = VGPU_IRQ_DEVICE | (u32)GENMASK(nch - 1, 0);
	return 0;
}

/* Both BARs are memory BARs of the sizes pci.h gives. */
static int vgpu_check_bars(struct pci_dev *pdev)
{
	if (!(pci_resource_flags(pdev, VGPU_BAR_REGS) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, VGPU_BAR_REGS) < VGPU_PCI_BAR0_SIZE) {
		pci_err(pdev,
			"BAR0 is not a memory BAR of %u bytes: not a vGPU\n",
			VGPU_PCI_BAR0_SIZE);
		return -ENODEV;
	}
	if (!(pci_resource_flags(pdev, VGPU_BAR_RINGS) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, VGPU_BAR_RINGS) < VGPU_PCI_CHANNEL_STRIDE) {
		pci_err(pdev, "BAR2 is not a memory BAR of a channel or more: "
			      "not a vGPU\n");
		return -ENODEV;
	}
	return 0;
}

/*
 * Channels left open by an earlier binding of this device (an unbind
 * while files were open): ask the host to free them.
 */
static void vgpu_close_stale(struct vgpu_dev *vd)
{
	unsigned int i;

	for (i = 0; i < vd->nchannels; i++)
		vgpu_chan_recycle(
			vd, i, vgpu_rd(vd, vgpu_chan_reg(i, VGPU_CHAN_STATE)));
}

static int vgpu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct vgpu_dev *vd;
	unsigned int i;
	int ret;

	ret = vgpu_check_bars(pdev);
	if (ret)
		return ret;
	vd = kzalloc(sizeof(*vd), GFP_KERNEL);
	if (!vd)
		return -ENOMEM;
	vd->pdev = pdev;
	vd->minor = -1;
	init_rwsem(&vd->hw_lock);
	mutex_init(&vd->lock);
	for (i = 0; i < VGPU_PCI_MAX_CHANNELS; i++)
		init_waitqueue_head(&vd->chan[i].wq);
	device_initialize(&vd->dev);
	vd->dev.release = vgpu_dev_release; /* from here on: put_device */

	ret = pci_enable_device(pdev);
	if (ret)
		goto err_put;
	ret = pci_request_regions(pdev, VGPU_GUEST_NAME);
	if (ret)
		goto err_disable;
	vd->regs = pci_iomap(pdev, VGPU_BAR_REGS, VGPU_PCI_BAR0_SIZE);
	if (!vd->regs) {
		ret = -ENOMEM;
		goto err_regions;
	}
	ret = vgpu_check_device(vd);
	if (ret)
		goto err_iounmap;
	vd->rings_phys = pci_resource_start(pdev, VGPU_BAR_RINGS);
	vd->rings_wb =
		memremap(vd->rings_phys, (size_t)vd->nchannels * vd->stride,
			 MEMREMAP_WB);
	if (!vd->rings_wb)
		pci_warn(pdev, "BAR2 cannot be mapped write-back: rings will "
			       "be uncached\n");
	pci_set_master(pdev); /* MSI is a write by the device */

	ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI | PCI_IRQ_LEGACY);
	if (ret < 0) {
		pci_err(pdev, "no interrupt (MSI or INTx): %d\n", ret);
		goto err_memunmap;
	}
	ret = ida_alloc_max(&vgpu_minors, VGPU_GUEST_MAX_DEVICES - 1,
			    GFP_KERNEL);
	if (ret < 0)
		goto err_vectors;
	vd->minor = ret;
	snprintf(vd->irq_name, sizeof(vd->irq_name), "vgpu%d", vd->minor);
	/* nothing from before this driver may look like ours */
	vgpu_wr(vd, VGPU_REG_IRQ_STATUS, vd->irq_mask);
	vd->change_seen = vgpu_rd(vd, VGPU_REG_CHANGE_COUNT);
	vd->irq = pci_irq_vector(pdev, 0);
	ret = request_irq(vd->irq, vgpu_irq, IRQF_SHARED, vd->irq_name, vd);
	if (ret)
		goto err_minor;
	vgpu_close_stale(vd);

	vd->dev.class = vgpu_class;
	vd->dev.parent = &pdev->dev;
	vd->dev.devt = MKDEV(MAJOR(vgpu_devt), vd->minor);
	ret = dev_set_name(&vd->dev, "vgpu%d", vd->minor);
	if (ret)
		goto err_irq;
	cdev_init(&vd->cdev, &vgpu_fops);
	vd->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&vd->cdev, &vd->dev);
	if (ret)
		goto err_irq;
	/* NULL only means no poll() wakeups: the attribute reads as ever */
	WRITE_ONCE(vd->change_kn,
		   sysfs_get_dirent(vd->dev.kobj.sd, "change_count"));
	pci_set_drvdata(pdev, vd);
	pci_info(pdev, "%s: %u channels of %u MiB, protocol %u.%u, %s\n",
		 dev_name(&vd->dev), vd->nchannels, vd->stride >> 20,
		 vgpu_rd(vd, VGPU_REG_VERSION) >> 16,
		 vgpu_rd(vd, VGPU_REG_VERSION) & 0xffff,
		 pdev->msi_enabled ? "MSI" : "INTx");
	return 0;

err_irq:
	free_irq(vd->irq, vd);
err_minor:
	ida_free(&vgpu_minors, vd->minor);
err_vectors:
	pci_free_irq_vectors(pdev);
err_memunmap:
	pci_clear_master(pdev);
	if (vd->rings_wb)
		memunmap(vd->rings_wb);
err_iounmap:
	pci_iounmap(pdev, vd->regs);
err_regions:
	pci_release_regions(pdev);
err_disable:
	pci_disable_device(pdev);
err_put:
	put_device(&vd->dev);
	return ret;
}

/*
 * Hot-unplug or unbind, possibly with files open: no new opens, no BAR
 * access from now on, every channel dead and every waiter woken, every
 * mapping zapped (later faults get the tombstone). The files keep the
 * struct alive (dev refcount) and close without touching the device.
 */
static void vgpu_remove(struct pci_dev *pdev)
{
	struct vgpu_dev *vd = pci_get_drvdata(pdev);
	struct kernfs_node *kn = vd->change_kn;
	unsigned int i;

	WRITE_ONCE(vd->change_kn, NULL); /* put once the handler is gone */
	cdev_device_del(&vd->cdev, &vd->dev);

	/* let the host free what the open files held while it still can */
	mutex_lock(&vd->lock);
	for (i = 0; i < vd->nchannels; i++)
		if (vd->chan[i].owner)
			vgpu_wr(vd, vgpu_chan_reg(i, VGPU_CHAN_CTRL),
				VGPU_CHAN_CMD_CLOSE);
	mutex_unlock(&vd->lock);

	down_write(&vd->hw_lock);
	vd->gone = true;
	up_write(&vd->hw_lock);
	free_irq(vd->irq, vd);
	pci_free_irq_vectors(pdev);
	if (kn)
		sysfs_put(kn);

	mutex_lock(&vd->lock);
	for (i = 0; i < VGPU_PCI_MAX_CHANNELS; i++) {
		struct vgpu_chan *c = &vd->chan[i];

		WRITE_ONCE(c->dead, true);
		if (c->owner)
			unmap_mapping_range(&c->owner->mapping, 0, 0, 1);
		wake_up_all(&c->wq);
	}
	mutex_unlock(&vd->lock);

	pci_clear_master(pdev);
	if (vd->rings_wb)
		memunmap(vd->rings_wb);
	pci_iounmap(pdev, vd->regs);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
	ida_free(&vgpu_minors, vd->minor);
	vd->pdev = NULL;
	put_device(&vd->dev);
}

static const struct pci_device_id vgpu_ids[] = {
	{PCI_DEVICE(VGPU_PCI_VENDOR_ID, VGPU_PCI_DEVICE_ID)}, {}};
MODULE_DEVICE_TABLE(pci, vgpu_ids);

static struct pci_driver vgpu_pci_driver = {
	.name = VGPU_GUEST_NAME,
	.id_table = vgpu_ids,
	.probe = vgpu_probe,
	.remove = vgpu_remove,
};

/* ---- module ------------------------------------------------------------- */

static int __init vgpu_guest_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&vgpu_devt, 0, VGPU_GUEST_MAX_DEVICES,
				  VGPU_GUEST_CLASS);
	if (ret)
		return ret;
	vgpu_class = class_create(THIS_MODULE, VGPU_GUEST_CLASS);
	if (IS_ERR(vgpu_class)) {
		ret = PTR_ERR(vgpu_class);
		pr_err("%s: cannot create class %s (%d); vgpu_mdev.ko (the "
		       "host module) uses the same name\n",
		       VGPU_GUEST_NAME, VGPU_GUEST_CLASS, ret);
		goto err_region;
	}
	vgpu_class->devnode = vgpu_devnode;
	vgpu_class->dev_groups = vgpu_groups;
	ret = pci_register_driver(&vgpu_pci_driver);
	if (ret)
		goto err_class;
	return 0;

err_class:
	class_destroy(vgpu_class);
err_region:
	unregister_chrdev_region(vgpu_devt, VGPU_GUEST_MAX_DEVICES);
	return ret;
}

/* Open files pin the module (cdev owner), so every device is closed. */
static void __exit vgpu_guest_exit(void)
{
	pci_unregister_driver(&vgpu_pci_driver);
	class_destroy(vgpu_class);
	unregister_chrdev_region(vgpu_devt, VGPU_GUEST_MAX_DEVICES);
	ida_destroy(&vgpu_minors);
}

module_init(vgpu_guest_init);
module_exit(vgpu_guest_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vgpu: guest driver for a composable vGPU (/dev/vgpuN)");
