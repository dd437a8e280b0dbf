/* SPDX-License-Identifier: MIT */
/*
 * The in-VM VFIO test program's view of a vgpu_mdev instance: opened the
 * way QEMU opens it (legacy container + group + device fd, VFIO type1 on
 * the emulated IOMMU), its registers (include/vgpu/pci.h) and channels
 * (rings of include/vgpu/protocol.h in BAR2).
 */
#ifndef VFIO_DEV_H
#define VFIO_DEV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/vfio.h>

#include "vgpu/pci.h"
#include "vgpu/protocol.h"

struct vfio_dev {
	int container, group, device;
	struct vfio_device_info info;
	struct vfio_region_info region[VFIO_PCI_NUM_REGIONS];
	int msi_fd; /* eventfd of the MSI vector, -1 when none */
	void *bar2; /* BAR2 mapped, bar2_size bytes; NULL when not */
	size_t bar2_size;
};

/* One channel's ring in BAR2, with the layout read (once) from its header. */
struct vfio_ring {
	unsigned int channel;
	uint8_t *base;
	struct vgpu_ring_header *hdr;
	uint32_t sq_entries, cq_entries, sq_offset, cq_offset;
	uint64_t total_size;
};

/* vfio_dev.c: opening, regions, interrupts */
int vfio_dev_open(struct vfio_dev *d, const char *uuid);
void vfio_dev_close(struct vfio_dev *d);
ssize_t vfio_region_read(struct vfio_dev *d, unsigned int index, uint64_t off,
			 void *buf, size_t len);
ssize_t vfio_region_write(struct vfio_dev *d, unsigned int index, uint64_t off,
			  const void *buf, size_t len);
int cfg_read(struct vfio_dev *d, uint64_t off, void *buf, size_t len);
int cfg_write32(struct vfio_dev *d, uint64_t off, uint32_t v);
uint32_t reg_read(struct vfio_dev *d, uint32_t reg);
int reg_write(struct vfio_dev *d, uint32_t reg, uint32_t v);
void reg_string(struct vfio_dev *d, uint32_t reg, char *out);
int vfio_set_eventfd(struct vfio_dev *d, unsigned int index, int fd);
int vfio_msi_enable(struct vfio_dev *d);
int vfio_map_bar2(struct vfio_dev *d);
int wait_eventfd(int fd, int timeout_ms);

/* vfio_chan.c: channels and their rings */
int chan_wait_state(struct vfio_dev *d, unsigned int ch, uint32_t want,
		    int timeout_ms);
int chan_open(struct vfio_dev *d, unsigned int ch, struct vfio_ring *r);
int chan_close(struct vfio_dev *d, unsigned int ch);
int ring_submit(struct vfio_dev *d, struct vfio_ring *r,
		const struct vgpu_sqe *sqe);
int ring_complete(struct vfio_dev *d, struct vfio_ring *r, struct vgpu_cqe *cqe,
		  int timeout_ms, int *got_irq);
int ring_call(struct vfio_dev *d, struct vfio_ring *r, struct vgpu_sqe *sqe,
	      struct vgpu_cqe *cqe);

/* vfio_user.c: TAP lines ("ok - ...", unnumbered; tests/vm/run.sh numbers
 * them). tap() returns cond. */
int tap(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Creates DIR/name, then waits (120 s at most) for DIR/name.go: the
 * host-side script's cue. 0, or -1. */
int sync_point(const char *dir, const char *name);

/* vfio_hostile.c */
int hostile_run(struct vfio_dev *d);

/* vfio_ctl.c: this program as /dev/vgpu-ctl's daemon (no vgpud) */
int ctl_run(const char *type4, const char *type8);

/* vfio_intx.c: INTx (legacy interrupt) end to end */
int intx_run(const char *uuid);

/* vfio_ctlopen.c: who may open /dev/vgpu-ctl; holding it, then unloading */
int ctlopen_run(const char *as);
int ctlhold_run(const char *dir);

#endif /* VFIO_DEV_H */
