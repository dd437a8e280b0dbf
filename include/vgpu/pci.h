/* SPDX-License-Identifier: MIT */
/*
 * The vGPU as a PCI device: what a VM sees when an mdev instance of
 * vgpu_mdev.ko is given to it (vfio-pci). The one definition of the
 * device model, used by the host module (mdev/), the guest driver
 * (guest-driver/) and the tests. Kernel and user space both include it.
 *
 *   BAR0  4 KiB of registers (below), trapped by the host module.
 *   BAR2  channels: channel i is the ring of protocol.h at
 *         i * VGPU_PCI_CHANNEL_STRIDE (the header page, sq, cq, data
 *         area), mapped straight into the guest (the same pages the
 *         worker maps: no copy, no trap).
 *   IRQ   one MSI vector (INTx when the guest has no MSI): a channel's
 *         completion doorbell, a channel's state change, a device state
 *         change. VGPU_REG_IRQ_STATUS says which channels.
 *
 * A channel is one client of the vGPU (one guest process). To use it, a
 * guest writes VGPU_CHAN_CMD_OPEN to its CTRL register and waits (the
 * interrupt) until its STATE is OPEN; the worker has then laid out the
 * ring header in the channel's BAR2 range. The submit doorbell is a write
 * of any value to the channel's DOORBELL register. CLOSE frees everything
 * the channel's client owned on the vGPU; STATE goes back to FREE.
 *
 * All registers are 32-bit, little-endian, naturally aligned; other
 * sizes or offsets read as 0 and ignore writes.
 */
#ifndef VGPU_PCI_H
#define VGPU_PCI_H

#include <linux/types.h>

/* PCI identity. 0x5647 ("VG") is not assigned in pci.ids (checked
 * 2026-11); a private value, as a test device may use. Change the pair
 * here only: the module, the guest driver and the tests take it from here. */
#define VGPU_PCI_VENDOR_ID	  0x5647
#define VGPU_PCI_DEVICE_ID	  0x0001
#define VGPU_PCI_SUBSYS_VENDOR_ID VGPU_PCI_VENDOR_ID
#define VGPU_PCI_SUBSYS_ID	  0x0001
#define VGPU_PCI_CLASS		  0x030200 /* display controller, 3D */
#define VGPU_PCI_REVISION	  0x01

#define VGPU_PCI_BAR0_SIZE	4096u
#define VGPU_PCI_CHANNEL_STRIDE (32u << 20) /* one ring per 32 MiB */
#define VGPU_PCI_MAX_CHANNELS	16u
#define VGPU_PCI_DEVICE_MAGIC	0x55504756u /* "VGPU", as protocol.h */

/* ---- BAR0 register map ---------------------------------------------- */

/* identity and composition: read-only */
#define VGPU_REG_MAGIC		0x000 /* VGPU_PCI_DEVICE_MAGIC */
#define VGPU_REG_VERSION	0x004 /* ring protocol: major << 16 | minor */
#define VGPU_REG_FEATURES	0x008 /* VGPU_FEATURE_* of protocol.h */
#define VGPU_REG_DEVICE_STATE	0x00c /* enum vgpu_device_state */
#define VGPU_REG_SM_COUNT	0x010 /* SMs of the slice */
#define VGPU_REG_MEMORY_LO	0x014 /* memory quota, bytes */
#define VGPU_REG_MEMORY_HI	0x018
#define VGPU_REG_GPU_INDEX	0x01c /* physical GPU ordinal on the host */
#define VGPU_REG_SLICE_ID	0x020 /* first SM group << 16 | groups */
#define VGPU_REG_ISOLATION	0x024 /* 1 shared, 2 exclusive */
#define VGPU_REG_CHANGE_COUNT	0x028 /* bumped when the composition changes */
#define VGPU_REG_NUM_CHANNELS	0x02c /* channels in BAR2 */
#define VGPU_REG_CHANNEL_STRIDE 0x030 /* VGPU_PCI_CHANNEL_STRIDE */
#define VGPU_REG_DEVICE_ERROR	0x034 /* why DEVICE_STATE is ERROR (errno) */
#define VGPU_REG_GPU_NAME	0x040 /* 64 bytes, NUL-padded */
#define VGPU_REG_VGPU_NAME	0x080 /* 64 bytes, NUL-padded */
#define VGPU_REG_STRING_BYTES	64u

/* interrupts */
#define VGPU_REG_IRQ_STATUS                                                    \
	0x100 /* bit i: channel i; bit 31: device.                             \
		 Read; write 1s to clear. */
#define VGPU_IRQ_DEVICE (1u << 31)

/* channel i's registers at VGPU_REG_CHANNEL(i) + one of the below */
#define VGPU_REG_CHANNEL(i) (0x200 + (i)*0x10)
#define VGPU_CHAN_CTRL	    0x0 /* write: enum vgpu_channel_cmd */
#define VGPU_CHAN_STATE	    0x4 /* read: enum vgpu_channel_state */
#define VGPU_CHAN_DOORBELL  0x8 /* write any value: submit doorbell */
#define VGPU_CHAN_ERROR	    0xc /* read: errno of the last failure */

enum vgpu_device_state {
	VGPU_DEVICE_STARTING = 0, /* the host has not composed it yet */
	VGPU_DEVICE_READY = 1,
	VGPU_DEVICE_ERROR = 2, /* host daemon gone or vGPU failed; channels
				  are CLOSED, rings are DEAD */
};

enum vgpu_channel_cmd {
	VGPU_CHAN_CMD_OPEN = 1,
	VGPU_CHAN_CMD_CLOSE = 2,
};

enum vgpu_channel_state {
	VGPU_CHAN_FREE = 0,
	VGPU_CHAN_OPENING = 1,
	VGPU_CHAN_OPEN = 2,
	VGPU_CHAN_CLOSING = 3,
	VGPU_CHAN_FAILED = 4, /* open failed or the vGPU failed: see ERROR;
				 a CLOSE makes it FREE again */
};

#endif /* VGPU_PCI_H */
