/* SPDX-License-Identifier: MIT */
/*
 * /dev/vgpuN inside a VM: how the guest CUDA library reaches a channel of
 * the vGPU device (pci.h) through vgpu_guest.ko. The one definition of
 * that interface; the guest driver and the library's "pci" transport
 * include it.
 *
 * One open file is one channel (one client of the vGPU):
 *   open()   takes a free channel, writes CMD_OPEN and waits (at most
 *            VGPU_GUEST_OPEN_TIMEOUT_MS) until it is OPEN: the worker has
 *            laid out the ring. EBUSY: no channel free; EIO: the device is
 *            in ERROR (host daemon gone) or the open FAILED; ETIMEDOUT.
 *   mmap()   offset 0, up to ring_size bytes, MAP_SHARED: the channel's
 *            ring in BAR2 (protocol.h layout, same bytes as the local
 *            transport's memfd).
 *   write()  8 bytes, any value: the submit doorbell.
 *   read()   8 bytes: blocks (EAGAIN with O_NONBLOCK) until the channel
 *            has had an interrupt since the last read, returns how many.
 *   poll()   POLLIN when read() would not block; POLLERR | POLLHUP once
 *            the device is gone (hot-unplug) or in ERROR: every waiter is
 *            woken and the client reports a CUDA error, never hangs.
 *   close()  writes CMD_CLOSE (the worker frees the client's memory) and
 *            waits, bounded, for the channel to be FREE again.
 * The same fd therefore serves as both of the ring's doorbells.
 *
 * sysfs, /sys/class/vgpu/vgpuN/: sms, memory (bytes), gpu, vgpu_name,
 * slice, isolation, protocol_version ("1.3"), change_count, channels,
 * state (starting, ready, error). Each read reads the device now, so a
 * resize, move or migration on the host shows at once. change_count
 * grows with each change of the composition; poll() on it (read it, then
 * poll for POLLPRI | POLLERR, then read it again from offset 0) wakes when
 * it moved (the device interrupt, sysfs_notify). VGPU_GUEST_IOC_INFO reads
 * all of one composition (change_count before and after agree).
 */
#ifndef VGPU_GUEST_UAPI_H
#define VGPU_GUEST_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define VGPU_GUEST_DEV_PREFIX	   "/dev/vgpu"
#define VGPU_GUEST_OPEN_TIMEOUT_MS 10000

/* VGPU_GUEST_IOC_INFO: the device's composition and this fd's channel. */
struct vgpu_guest_info {
	__u32 version;	 /* ring protocol: major << 16 | minor */
	__u32 channel;	 /* this fd's channel */
	__u64 ring_size; /* bytes mmap may map */
	__u64 memory;	 /* quota, bytes */
	__u32 sm_count;
	__u32 change_count;
	__u32 gpu_index;
	__u32 slice_id;
	char gpu_name[64];
	char vgpu_name[64];
};

#define VGPU_GUEST_IOC_MAGIC 'v'
#define VGPU_GUEST_IOC_INFO                                                    \
	_IOR(VGPU_GUEST_IOC_MAGIC, 0, struct vgpu_guest_info)

#endif /* VGPU_GUEST_UAPI_H */
