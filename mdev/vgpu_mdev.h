/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vgpu_mdev.ko internals: the state shared by the files of the module.
 *
 *   vgpu_mdev_main.c  module init/exit, the parent device, the type
 *                     catalogue, the mdev driver (probe/remove), debugfs
 *   vgpu_mdev_ctl.c   /dev/vgpu-ctl: the daemon, its event queue, ioctls
 *   vgpu_mdev_vfio.c  vfio_device_ops: regions, irqs, reset, mmap
 *   vgpu_mdev_cfg.c   emulated PCI config space and BAR0 registers
 *   vgpu_mdev_chan.c  channels: commands, doorbells, completion watchers
 *
 * Locking, outermost first:
 *   vgpu_mdev.lock   (mutex)    the instance list, the daemon, the types'
 *                                available/description
 *   vgpu_inst.lock   (mutex)    one instance: its state, config space,
 *                                channels, BAR2 memfd
 *   vgpu_inst.irq_lock (spin)   the irq triggers and INTx mask
 *   vgpu_evq.lock    (spin)     the event queue and each instance's
 *                                share of it (a leaf: taken under any of
 *                                the above, never the other way)
 * No copy_{to,from}_user() under vgpu_inst.lock (mmap_lock nests outside
 * it in the mmap path). The completion wakeup runs in atomic context under
 * the eventfd's own lock and only sets bits and queues irq_work.
 */
#ifndef VGPU_MDEV_H
#define VGPU_MDEV_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/eventfd.h>
#include <linux/list.h>
#include <linux/mdev.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/spinlock.h>
#include <linux/vfio.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include <vgpu/mdev_ctl.h>
#include <vgpu/pci.h>

#define VGPU_MDEV_NAME		"vgpu" /* class, parent device, type prefix */
#define VGPU_MDEV_MAX_INSTANCES 64
/*
 * The event queue (vgpu_mdev_ctl.c) keeps one instance's flood away from
 * the others: each instance may leave VGPU_MDEV_EVQ_PER_INST events of the
 * VFIO user's and the guest's (OPEN, RESET, CHANNEL_*) unread, then its
 * own operations fail; a VFIO close (CLOSE) may go past that, once per
 * session. CREATE and EXISTS have a share of their own, and a removal
 * (REMOVE) room past it. The ring holds all of it, so only a class's own
 * limit ever makes a push fail.
 */
#define VGPU_MDEV_EVQ_PER_INST 16
#define VGPU_MDEV_EVQ_INST     (VGPU_MDEV_MAX_INSTANCES * VGPU_MDEV_EVQ_PER_INST)
#define VGPU_MDEV_EVQ_CLOSE    (VGPU_MDEV_EVQ_INST + VGPU_MDEV_MAX_INSTANCES)
#define VGPU_MDEV_EVQ_LIFE     (2 * VGPU_MDEV_MAX_INSTANCES)
#define VGPU_MDEV_EVQ_REMOVE   (2 * VGPU_MDEV_EVQ_LIFE + VGPU_MDEV_MAX_INSTANCES)
#define VGPU_MDEV_EVQ_SIZE     (VGPU_MDEV_EVQ_CLOSE + VGPU_MDEV_EVQ_REMOVE)
#define VGPU_CFG_SIZE	       256 /* conventional PCI config space */

/* Region index in the high bits of a VFIO file offset, as vfio-pci. */
#define VGPU_OFFSET_SHIFT	  40
#define VGPU_OFFSET_TO_INDEX(off) ((off) >> VGPU_OFFSET_SHIFT)
#define VGPU_INDEX_TO_OFFSET(i)	  ((u64)(i) << VGPU_OFFSET_SHIFT)
#define VGPU_OFFSET_MASK	  (((u64)1 << VGPU_OFFSET_SHIFT) - 1)

/* One entry of the fixed catalogue (vgpu_mdev_main.c). */
struct vgpu_type {
	struct mdev_type mtype;
	struct vgpu_mdev_type_info info;
	/* from vgpud (SET_AVAILABLE); guarded by vgpu_mdev.lock */
	unsigned int available;
	char description[VGPU_MDEV_TEXT_MAX];
};

/* Watches a channel's complete eventfd from the kernel (as virqfd). */
struct vgpu_watch {
	struct eventfd_ctx *ctx; /* NULL: no watcher */
	wait_queue_entry_t wait;
	poll_table pt;
	struct vgpu_inst *inst;
	u32 bit; /* IRQ_STATUS bit of the channel */
};

struct vgpu_chan {
	u32 state; /* enum vgpu_channel_state */
	u32 error; /* errno of the last failure (VGPU_CHAN_ERROR) */
	struct eventfd_ctx *doorbell;
	struct vgpu_watch complete;
};

/*
 * What vgpud composed (CREATE_DONE, then COMPOSITION), shown in BAR0.
 * Changed only under vgpu_inst.lock, which every BAR0 read takes: a read
 * sees all of one composition or all of the next.
 */
struct vgpu_compose {
	u32 version;
	u32 features;
	u32 sm_count;
	u32 gpu_index;
	u64 memory;
	u32 slice_id;
	u32 isolation;
	u32 change_count;
	char gpu_name[VGPU_REG_STRING_BYTES];
	char vgpu_name[VGPU_REG_STRING_BYTES];
};

enum vgpu_irq_type {
	VGPU_IRQ_NONE = 0,
	VGPU_IRQ_INTX,
	VGPU_IRQ_MSI,
};

struct vgpu_inst {
	struct vfio_device vdev; /* first: vfio_alloc_device() */
	struct mdev_device *mdev;
	struct vgpu_type *type;
	u32 id;		       /* the id of its events */
	u32 channels;	       /* type->info.channels */
	u64 bar2_size;	       /* channels * VGPU_PCI_CHANNEL_STRIDE */
	struct list_head node; /* vgpu_mdev.instances */
	bool linked;	       /* on that list (vgpu_mdev.lock) */

	/* guarded by vgpu_evq.lock: its unread events (vgpu_mdev_ctl.c) */
	unsigned int ev_unread; /* OPEN, CLOSE, RESET, CHANNEL_* in the queue */
	u32 ev_last_type;	/* the last event queued for it, and its */
	u32 ev_last_chan;	/* channel: a repeat of it is coalesced */

	struct mutex lock; /* everything below, up to the irq state */
	bool create_pending;
	int create_status;
	struct completion created;
	bool composed;	    /* a CREATE_DONE with status 0 came at least once */
	bool open;	    /* a VFIO user holds it */
	bool removing;	    /* .request came: DEVICE_STATE stays ERROR */
	bool close_pending; /* a CLOSE that found no room: sent later */
	u32 dev_state;	    /* enum vgpu_device_state */
	u32 dev_error;
	struct vgpu_compose comp;
	/*
	 * The memfd behind BAR2: vgpud's, one per VFIO session. Dropped at
	 * close_device (a past user's mappings keep only the old file);
	 * open_device waits on bar2_wait for vgpud's next one (SET_BAR2).
	 * bar2_closed is the one dropped last, kept (until the next comes)
	 * only to refuse it: a GET_BAR2 answer a close overtook.
	 */
	struct file *bar2;
	struct file *bar2_closed;
	wait_queue_head_t bar2_wait;
	u8 cfg[VGPU_CFG_SIZE];
	u8 cfg_wmask[VGPU_CFG_SIZE];
	struct vgpu_chan chan[VGPU_PCI_MAX_CHANNELS];

	spinlock_t irq_lock;
	atomic_t irq_status; /* VGPU_REG_IRQ_STATUS */
	enum vgpu_irq_type irq_type;
	bool intx_masked;
	struct eventfd_ctx *intx_trigger;
	struct eventfd_ctx *msi_trigger;
	struct eventfd_ctx *err_trigger;
	struct eventfd_ctx *req_trigger;
	struct work_struct irq_work;
};

/* One queued event, and whose share of the queue it takes. */
struct vgpu_evq_slot {
	struct vgpu_mdev_event ev;
	struct vgpu_inst *owner; /* counted in owner->ev_unread, or NULL */
	bool life;		 /* CREATE, EXISTS, REMOVE (else OPEN ...) */
};

struct vgpu_evq {
	spinlock_t lock;
	wait_queue_head_t wait;
	struct mutex read_lock; /* one reader at a time pops */
	struct vgpu_evq_slot *ring;
	unsigned int head;
	unsigned int count;
	unsigned int ninst; /* slots of OPEN, CLOSE, RESET, CHANNEL_* */
	unsigned int nlife; /* slots of CREATE, EXISTS, REMOVE */
	bool attached;	    /* a daemon holds /dev/vgpu-ctl: events kept */
	bool close_pending; /* some instance has close_pending set */
};

/* Object counters (debugfs vgpu_mdev/objects): zero when all is gone. */
struct vgpu_counters {
	atomic_t instances;
	atomic_t channels; /* channels holding eventfds */
	atomic_t events;   /* events queued */
	atomic_t memfds;   /* BAR2 memfd references */
	atomic_t watchers; /* complete-eventfd watchers */
	atomic_t irq_eventfds;
};

struct vgpu_mdev {
	struct class *cls;
	struct device dev;
	struct mdev_parent parent;

	struct mutex lock;
	struct list_head instances;
	unsigned int ninstances;
	u32 next_id;
	struct file *daemon; /* holder of /dev/vgpu-ctl, or NULL */
	bool hello;	     /* the holder said HELLO */
	u32 version;	     /* ... with this control version */

	struct vgpu_evq evq;
	struct vgpu_counters cnt;
	struct dentry *debugfs;
};

extern struct vgpu_mdev vgpu_mdev;

/* vgpu_mdev_main.c */
extern struct vgpu_type vgpu_types[];
extern const unsigned int vgpu_ntypes;
void vgpu_type_reset_available(struct vgpu_type *type);

/* vgpu_mdev_ctl.c */
int vgpu_ctl_init(void);
void vgpu_ctl_exit(void);
int vgpu_ctl_register(void);
void vgpu_ctl_deregister(void);
int vgpu_evq_push(struct vgpu_inst *inst, u32 type, u32 channel);
void vgpu_evq_forget(struct vgpu_inst *inst);
bool vgpu_daemon_attached(void);
bool vgpu_inst_tell_close(struct vgpu_inst *inst);
int vgpu_inst_flush_close(struct vgpu_inst *inst);
int vgpu_inst_create(struct vgpu_inst *inst);
void vgpu_inst_unlink(struct vgpu_inst *inst, bool tell_daemon);

/* vgpu_mdev_vfio.c */
extern const struct vfio_device_ops vgpu_vfio_ops;
void vgpu_irq_raise(struct vgpu_inst *inst, u32 bits);

/* vgpu_mdev_cfg.c */
void vgpu_cfg_init(struct vgpu_inst *inst);
void vgpu_cfg_read(struct vgpu_inst *inst, u32 off, u8 *buf, u32 count);
void vgpu_cfg_write(struct vgpu_inst *inst, u32 off, const u8 *buf, u32 count);
u32 vgpu_bar0_read(struct vgpu_inst *inst, u32 off);
void vgpu_bar0_write(struct vgpu_inst *inst, u32 off, u32 val);

/* vgpu_mdev_chan.c */
void vgpu_chan_init(struct vgpu_inst *inst);
void vgpu_chan_drop_fds(struct vgpu_inst *inst, unsigned int ch);
int vgpu_chan_set_fds(struct vgpu_inst *inst, unsigned int ch, int doorbell_fd,
		      int complete_fd);
void vgpu_chan_command(struct vgpu_inst *inst, unsigned int ch, u32 cmd);
void vgpu_chan_doorbell(struct vgpu_inst *inst, unsigned int ch);
u32 vgpu_chans_fail(struct vgpu_inst *inst, u32 error);
void vgpu_chans_begin_close(struct vgpu_inst *inst, bool daemon_told);

#endif /* VGPU_MDEV_H */
