// SPDX-License-Identifier: GPL-2.0
/*
 * The emulated PCI config space and the BAR0 registers of an instance
 * (include/vgpu/pci.h). Config space is a byte array with a write mask,
 * as QEMU's own devices keep it: a write changes only the writable bits,
 * which is also how BAR sizing (write all ones, read back) works.
 */
#include <linux/pci_regs.h>
#include <linux/log2.h>
#include <linux/string.h>
#include <asm/unaligned.h>

#include "vgpu_mdev.h"

#define VGPU_CFG_MSI 0x40 /* the one capability: MSI, 64-bit, 1 vector */
#define VGPU_CMD_WMASK                                                         \
	(PCI_COMMAND_IO | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER |            \
	 PCI_COMMAND_PARITY | PCI_COMMAND_SERR | PCI_COMMAND_INTX_DISABLE)

static void cfg_set16(u8 *p, u32 off, u16 v)
{
	put_unaligned_le16(v, p + off);
}

static void cfg_set32(u8 *p, u32 off, u32 v)
{
	put_unaligned_le32(v, p + off);
}

/* The config space after power-on or reset. */
void vgpu_cfg_init(struct vgpu_inst *inst)
{
	u8 *c = inst->cfg, *w = inst->cfg_wmask;
	u64 bar2 = roundup_pow_of_two(inst->bar2_size);

	memset(c, 0, VGPU_CFG_SIZE);
	memset(w, 0, VGPU_CFG_SIZE);
	cfg_set16(c, PCI_VENDOR_ID, VGPU_PCI_VENDOR_ID);
	cfg_set16(c, PCI_DEVICE_ID, VGPU_PCI_DEVICE_ID);
	cfg_set16(w, PCI_COMMAND, VGPU_CMD_WMASK);
	cfg_set16(c, PCI_STATUS, PCI_STATUS_CAP_LIST);
	c[PCI_REVISION_ID] = VGPU_PCI_REVISION;
	c[PCI_CLASS_PROG] = VGPU_PCI_CLASS & 0xff;
	cfg_set16(c, PCI_CLASS_DEVICE, VGPU_PCI_CLASS >> 8);
	w[PCI_CACHE_LINE_SIZE] = 0xff;
	w[PCI_LATENCY_TIMER] = 0xff;
	c[PCI_HEADER_TYPE] = PCI_HEADER_TYPE_NORMAL;

	/* BAR0: 32-bit memory, registers */
	cfg_set32(c, PCI_BASE_ADDRESS_0, PCI_BASE_ADDRESS_MEM_TYPE_32);
	cfg_set32(w, PCI_BASE_ADDRESS_0, ~(VGPU_PCI_BAR0_SIZE - 1));
	/* BAR2 (+ BAR3, its high half): 64-bit prefetchable, the channels */
	cfg_set32(c, PCI_BASE_ADDRESS_2,
		  PCI_BASE_ADDRESS_MEM_TYPE_64 | PCI_BASE_ADDRESS_MEM_PREFETCH);
	cfg_set32(w, PCI_BASE_ADDRESS_2, lower_32_bits(~(bar2 - 1)) & ~0xfu);
	cfg_set32(w, PCI_BASE_ADDRESS_3, upper_32_bits(~(bar2 - 1)));

	cfg_set16(c, PCI_SUBSYSTEM_VENDOR_ID, VGPU_PCI_SUBSYS_VENDOR_ID);
	cfg_set16(c, PCI_SUBSYSTEM_ID, VGPU_PCI_SUBSYS_ID);
	c[PCI_CAPABILITY_LIST] = VGPU_CFG_MSI;
	w[PCI_INTERRUPT_LINE] = 0xff;
	c[PCI_INTERRUPT_PIN] = 1; /* INTA */

	/* MSI: 64-bit address, one vector (MMC 0), no per-vector mask */
	c[VGPU_CFG_MSI + PCI_CAP_LIST_ID] = PCI_CAP_ID_MSI;
	c[VGPU_CFG_MSI + PCI_CAP_LIST_NEXT] = 0;
	cfg_set16(c, VGPU_CFG_MSI + PCI_MSI_FLAGS, PCI_MSI_FLAGS_64BIT);
	cfg_set16(w, VGPU_CFG_MSI + PCI_MSI_FLAGS, PCI_MSI_FLAGS_ENABLE);
	cfg_set32(w, VGPU_CFG_MSI + PCI_MSI_ADDRESS_LO, 0xfffffffc);
	cfg_set32(w, VGPU_CFG_MSI + PCI_MSI_ADDRESS_HI, 0xffffffff);
	cfg_set16(w, VGPU_CFG_MSI + PCI_MSI_DATA_64, 0xffff);
}

/* Reads count bytes at off (the caller keeps it inside config space). */
void vgpu_cfg_read(struct vgpu_inst *inst, u32 off, u8 *buf, u32 count)
{
	lockdep_assert_held(&inst->lock);
	memcpy(buf, inst->cfg + off, count);
}

/* Writes count bytes at off, each through its write mask. */
void vgpu_cfg_write(struct vgpu_inst *inst, u32 off, const u8 *buf, u32 count)
{
	u32 i;

	lockdep_assert_held(&inst->lock);
	for (i = 0; i < count; i++) {
		u8 m = inst->cfg_wmask[off + i];

		inst->cfg[off + i] = (inst->cfg[off + i] & ~m) | (buf[i] & m);
	}
}

/* A 4-byte window of a NUL-padded string register. */
static u32 vgpu_str_reg(const char *s, u32 off)
{
	return get_unaligned_le32(s + off);
}

/* One aligned 32-bit BAR0 read (the caller checked size and alignment). */
u32 vgpu_bar0_read(struct vgpu_inst *inst, u32 off)
{
	const struct vgpu_compose *c = &inst->comp;
	u32 ch;

	lockdep_assert_held(&inst->lock);
	switch (off) {
	case VGPU_REG_MAGIC:
		return VGPU_PCI_DEVICE_MAGIC;
	case VGPU_REG_VERSION:
		return c->version;
	case VGPU_REG_FEATURES:
		return c->features;
	case VGPU_REG_DEVICE_STATE:
		return inst->dev_state;
	case VGPU_REG_SM_COUNT:
		return c->sm_count;
	case VGPU_REG_MEMORY_LO:
		return lower_32_bits(c->memory);
	case VGPU_REG_MEMORY_HI:
		return upper_32_bits(c->memory);
	case VGPU_REG_GPU_INDEX:
		return c->gpu_index;
	case VGPU_REG_SLICE_ID:
		return c->slice_id;
	case VGPU_REG_ISOLATION:
		return c->isolation;
	case VGPU_REG_CHANGE_COUNT:
		return c->change_count;
	case VGPU_REG_NUM_CHANNELS:
		return inst->channels;
	case VGPU_REG_CHANNEL_STRIDE:
		return VGPU_PCI_CHANNEL_STRIDE;
	case VGPU_REG_DEVICE_ERROR:
		return inst->dev_error;
	case VGPU_REG_IRQ_STATUS:
		return atomic_read(&inst->irq_status);
	}
	if (off >= VGPU_REG_GPU_NAME &&
	    off < VGPU_REG_GPU_NAME + VGPU_REG_STRING_BYTES)
		return vgpu_str_reg(c->gpu_name, off - VGPU_REG_GPU_NAME);
	if (off >= VGPU_REG_VGPU_NAME &&
	    off < VGPU_REG_VGPU_NAME + VGPU_REG_STRING_BYTES)
		return vgpu_str_reg(c->vgpu_name, off - VGPU_REG_VGPU_NAME);
	if (off >= VGPU_REG_CHANNEL(0) &&
	    off < VGPU_REG_CHANNEL(inst->channels)) {
		ch = (off - VGPU_REG_CHANNEL(0)) / 0x10;
		switch (off - VGPU_REG_CHANNEL(ch)) {
		case VGPU_CHAN_STATE:
			return inst->chan[ch].state;
		case VGPU_CHAN_ERROR:
			return inst->chan[ch].error;
		}
	}
	return 0;
}

/* One aligned 32-bit BAR0 write; the read-only registers ignore it. */
void vgpu_bar0_write(struct vgpu_inst *inst, u32 off, u32 val)
{
	u32 ch;

	lockdep_assert_held(&inst->lock);
	if (off == VGPU_REG_IRQ_STATUS) {
		atomic_andnot(val, &inst->irq_status);
		return;
	}
	if (off < VGPU_REG_CHANNEL(0) ||
	    off >= VGPU_REG_CHANNEL(inst->channels))
		return;
	ch = (off - VGPU_REG_CHANNEL(0)) / 0x10;
	switch (off - VGPU_REG_CHANNEL(ch)) {
	case VGPU_CHAN_CTRL:
		vgpu_chan_command(inst, ch, val);
		break;
	case VGPU_CHAN_DOORBELL:
		vgpu_chan_doorbell(inst, ch);
		break;
	}
}
