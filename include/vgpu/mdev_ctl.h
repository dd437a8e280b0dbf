/* SPDX-License-Identifier: MIT */
/*
 * /dev/vgpu-ctl: how vgpud drives vgpu_mdev.ko. The one definition of the
 * control device's events and ioctls; kernel and user space include it.
 *
 * Only one process (vgpud, root: CAP_SYS_ADMIN) may hold the device open;
 * a second open gets EBUSY. The daemon:
 *
 *   1. VGPU_MDEV_IOC_HELLO (the module takes any version from
 *      VGPU_MDEV_CTL_VERSION_MIN up to its own; a daemon that said an older
 *      one uses only that version's ioctls, newer ones get ENOTTY), then
 *      VGPU_MDEV_IOC_GET_TYPE for each type of the fixed catalogue, and
 *      VGPU_MDEV_IOC_SET_AVAILABLE whenever what it could compose changes
 *      (free SM groups, memory).
 *   2. read()s struct vgpu_mdev_event records (poll: POLLIN), and answers:
 *      CREATE           -> CREATE_DONE (status 0, or -errno and a message;
 *                          the sysfs create that caused it waits for this,
 *                          at most VGPU_MDEV_CREATE_TIMEOUT_S)
 *      CHANNEL_OPEN     -> CHANNEL_SETUP with the two eventfds, then
 *                          CHANNEL_STATE OPEN (the worker has laid out the
 *                          ring) or FAILED
 *      CHANNEL_CLOSE    -> once the worker has let go of the ring:
 *                          CHANNEL_STATE FREE
 *      RESET            -> as CHANNEL_CLOSE, for every channel not FREE
 *      CLOSE            -> the same, and SET_BAR2 with a fresh memfd: the
 *                          module drops its BAR2 memfd at every VFIO close
 *                          (a past user's mappings keep only that file),
 *                          and the next VFIO open waits for a new one (at
 *                          most VGPU_MDEV_BAR2_WAIT_S, then it fails)
 *      REMOVE           -> nothing to answer: the instance is gone; destroy
 *                          its vGPU
 *      EXISTS           -> CREATE_DONE again (a restarted daemon re-attaches)
 *                          with the memfd GET_BAR2 returns (the one the VM
 *                          has mapped), or a new one when it says ENODATA
 *      and, with no event, COMPOSITION after each change of a composed
 *      instance's vGPU (resize, slice move, migration, resume elsewhere).
 *   3. When it closes the device (or dies), every instance goes to
 *      VGPU_DEVICE_ERROR (the guest gets an interrupt), its channels to
 *      VGPU_CHAN_FAILED, and their eventfds are dropped. The next daemon's
 *      HELLO queues one EXISTS event per instance.
 *
 * Every ioctl names an instance by the id of its events; a stale id gets
 * ENOENT, a bad channel or state EINVAL, and nothing else changes.
 */
#ifndef VGPU_MDEV_CTL_H
#define VGPU_MDEV_CTL_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define VGPU_MDEV_CTL_NAME "vgpu-ctl" /* /dev/vgpu-ctl */
/* Control versions: 2 SET_BAR2, GET_BAR2, a fresh BAR2 per VFIO session;
 * 3 COMPOSITION. */
#define VGPU_MDEV_CTL_VERSION	   3
#define VGPU_MDEV_CTL_VERSION_MIN  2 /* the oldest HELLO a module takes */
#define VGPU_MDEV_CREATE_TIMEOUT_S 30
#define VGPU_MDEV_BAR2_WAIT_S	   5
#define VGPU_MDEV_TEXT_MAX	   256
#define VGPU_MDEV_TYPE_NAME_MAX	   32

enum vgpu_mdev_event_type {
	VGPU_MDEV_EV_CREATE = 1,	/* an instance was created (sysfs) */
	VGPU_MDEV_EV_REMOVE = 2,	/* an instance is gone */
	VGPU_MDEV_EV_OPEN = 3,		/* a VFIO user opened the device */
	VGPU_MDEV_EV_CLOSE = 4,		/* ... and closed it */
	VGPU_MDEV_EV_RESET = 5,		/* VFIO_DEVICE_RESET (guest reboot) */
	VGPU_MDEV_EV_CHANNEL_OPEN = 6,	/* the guest wrote CMD_OPEN */
	VGPU_MDEV_EV_CHANNEL_CLOSE = 7, /* the guest wrote CMD_CLOSE */
	VGPU_MDEV_EV_EXISTS = 8,	/* replayed after HELLO */
};

/* One record of read(); a read returns whole records only. */
struct vgpu_mdev_event {
	__u32 type;	  /* enum vgpu_mdev_event_type */
	__u32 instance;	  /* id, unique while the module is loaded */
	__u32 type_index; /* catalogue index (CREATE, EXISTS) */
	__u32 channel;	  /* CHANNEL_* */
	__u8 uuid[16];	  /* the mdev's UUID (every event), bytes in the
			     order of its text form (the sysfs name) */
	__u32 is_open;	  /* EXISTS: a VFIO user holds it open */
	__u32 reserved[3];
};

struct vgpu_mdev_hello {
	__u32 version;	    /* in: the daemon's (VGPU_MDEV_CTL_VERSION, or
			       an older one for an older module); out: the
			       module's; EPROTO outside its range */
	__u32 ntypes;	    /* out: entries in the type catalogue */
	__u32 max_channels; /* out: VGPU_PCI_MAX_CHANNELS */
	__u32 reserved;
};

enum vgpu_mdev_isolation {
	VGPU_MDEV_SHARED = 1, /* as enum vgpu_isolation of blueprint.h */
	VGPU_MDEV_EXCLUSIVE = 2,
};

/*
 * One entry of the fixed type catalogue (6.1 fixes the set of types when
 * the parent registers). A type of sms == 0 is "custom": its instances
 * are the vGPUs that vgpu-admin composed from a blueprint and bound to
 * the instance's UUID beforehand.
 */
struct vgpu_mdev_type_info {
	__u32 index;	 /* in */
	__u32 sms;	 /* SMs of the slice; 0 = custom */
	__u64 memory;	 /* bytes; 0 = custom */
	__u32 isolation; /* enum vgpu_mdev_isolation; 0 = custom */
	__u32 channels;	 /* BAR2 channels (sizes BAR2) */
	char name[VGPU_MDEV_TYPE_NAME_MAX]; /* sysfs_name, e.g. "16sm-8g" */
};

struct vgpu_mdev_available {
	__u32 index;	 /* catalogue index */
	__u32 available; /* instances vgpud could create now */
	char description[VGPU_MDEV_TEXT_MAX]; /* NUL-terminated */
};

/* Answer to CREATE (and EXISTS): the composed vGPU, or why not. */
struct vgpu_mdev_create_done {
	__u32 instance;
	__s32 status; /* 0, or -errno: the sysfs create fails with it */
	char message[VGPU_MDEV_TEXT_MAX]; /* logged when status != 0 */
	/* status 0 only: BAR0 composition registers, and BAR2 */
	__u32 version; /* ring protocol, major << 16 | minor */
	__u32 features;
	__u32 sm_count;
	__u32 gpu_index;
	__u64 memory;
	__u32 slice_id;
	__u32 isolation;
	__u32 change_count;
	__s32 bar2_fd; /* memfd of exactly channels *
			  VGPU_PCI_CHANNEL_STRIDE bytes, sealed with
			  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL, not
			  against writing; the module keeps a reference
			  (until the next VFIO close), the caller may close
			  its fd. While a VFIO user holds the device, a
			  memfd other than its own is refused (EBUSY). */
	char gpu_name[64];
	char vgpu_name[64];
};

/* vGPU state changes outside an event (it failed, it came back). */
struct vgpu_mdev_device_state {
	__u32 instance;
	__u32 state; /* enum vgpu_device_state (pci.h) */
	__s32 error; /* errno for DEVICE_ERROR register */
	__u32 reserved;
};

struct vgpu_mdev_channel_setup {
	__u32 instance;
	__u32 channel;
	__s32 doorbell_fd; /* eventfd the module signals on a DOORBELL write */
	__s32 complete_fd; /* eventfd the module watches: each write by the
			      worker raises the guest's interrupt with this
			      channel's bit */
};

struct vgpu_mdev_channel_state {
	__u32 instance;
	__u32 channel;
	__u32 state; /* OPEN, FAILED or FREE (enum vgpu_channel_state) */
	__s32 error; /* errno, for FAILED */
};

/*
 * An instance's BAR2 memfd outside CREATE_DONE. SET_BAR2 (fd in, checked
 * as CREATE_DONE's bar2_fd; EINVAL before a CREATE_DONE of status 0): the
 * answer to CLOSE. GET_BAR2 (fd out): a new descriptor (close-on-exec) of
 * the memfd the module holds, or ENODATA when it holds none (a VFIO user
 * closed it and no SET_BAR2 came since). The memfd of the last VFIO user
 * is refused (ESTALE) by SET_BAR2 and CREATE_DONE: a GET_BAR2 answer that
 * a close overtook; ask again.
 */
struct vgpu_mdev_bar2 {
	__u32 instance;
	__s32 fd;
};

/*
 * COMPOSITION (version 3): the vGPU of a composed instance changed (a
 * resize, a slice move, a migration, a resume elsewhere); its composition
 * now, for BAR0. Checked as CREATE_DONE's fields (strings NUL-terminated,
 * isolation 1 or 2 and the type's, reserved 0) and sm_count > 0: else
 * EINVAL; a stale id: ENOENT; before a CREATE_DONE of status 0: EINVAL.
 * change_count must pass the one BAR0 shows: lower, or equal with other
 * values, is ESTALE, and change_count comes back as BAR0's (equal with the
 * same values changes nothing: 0). The registers change as one under the
 * lock every BAR0 access takes (a read sees all old or all new values),
 * CHANGE_COUNT last, and the device interrupt is raised (VGPU_IRQ_DEVICE),
 * so a guest reads CHANGE_COUNT, the registers, then CHANGE_COUNT again.
 */
struct vgpu_mdev_composition {
	__u32 instance;
	__u32 change_count; /* in: the worker's; out (ESTALE): BAR0's */
	__u32 sm_count;
	__u32 gpu_index;
	__u64 memory;
	__u32 slice_id;
	__u32 isolation;
	__u32 reserved[2];
	char gpu_name[64];
};

#define VGPU_MDEV_IOC_MAGIC 'V'
#define VGPU_MDEV_IOC_HELLO                                                    \
	_IOWR(VGPU_MDEV_IOC_MAGIC, 0, struct vgpu_mdev_hello)
#define VGPU_MDEV_IOC_GET_TYPE                                                 \
	_IOWR(VGPU_MDEV_IOC_MAGIC, 1, struct vgpu_mdev_type_info)
#define VGPU_MDEV_IOC_SET_AVAILABLE                                            \
	_IOW(VGPU_MDEV_IOC_MAGIC, 2, struct vgpu_mdev_available)
#define VGPU_MDEV_IOC_CREATE_DONE                                              \
	_IOW(VGPU_MDEV_IOC_MAGIC, 3, struct vgpu_mdev_create_done)
#define VGPU_MDEV_IOC_DEVICE_STATE                                             \
	_IOW(VGPU_MDEV_IOC_MAGIC, 4, struct vgpu_mdev_device_state)
#define VGPU_MDEV_IOC_CHANNEL_SETUP                                            \
	_IOW(VGPU_MDEV_IOC_MAGIC, 5, struct vgpu_mdev_channel_setup)
#define VGPU_MDEV_IOC_CHANNEL_STATE                                            \
	_IOW(VGPU_MDEV_IOC_MAGIC, 6, struct vgpu_mdev_channel_state)
#define VGPU_MDEV_IOC_SET_BAR2                                                 \
	_IOW(VGPU_MDEV_IOC_MAGIC, 7, struct vgpu_mdev_bar2)
#define VGPU_MDEV_IOC_GET_BAR2                                                 \
	_IOWR(VGPU_MDEV_IOC_MAGIC, 8, struct vgpu_mdev_bar2)
#define VGPU_MDEV_IOC_COMPOSITION                                              \
	_IOWR(VGPU_MDEV_IOC_MAGIC, 9, struct vgpu_mdev_composition)

#endif /* VGPU_MDEV_CTL_H */
