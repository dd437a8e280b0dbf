/* SPDX-License-Identifier: MIT */
/*
 * What a hostile VFIO user (a compromised QEMU, or a guest driving the
 * device model) may throw at a vgpu_mdev instance: accesses outside or
 * across the regions, unaligned and odd-sized register accesses, bogus
 * VFIO_DEVICE_SET_IRQS and info requests, bad channel commands, a broken
 * ring. Each must fail cleanly or be ignored, and the device must still
 * work afterwards.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vfio_dev.h"
#include "vgpu/ring.h"

#define BAR0 VFIO_PCI_BAR0_REGION_INDEX

/* An ioctl that must fail with one of the errnos listed (0-terminated). */
static int fails_with(int ret, const int *allowed)
{
	int e = errno;

	if (ret >= 0)
		return 0;
	for (; *allowed; allowed++)
		if (*allowed == e)
			return 1;
	diag("failed with %s, not an expected errno", strerror(e));
	return 0;
}

static const int einval[] = {EINVAL, 0};
static const int ebadf_einval[] = {EBADF, EINVAL, 0};

/* Reads, writes and mappings outside what the regions offer. */
static void hostile_regions(struct vfio_dev *d)
{
	struct vfio_region_info ri = {.argsz = sizeof(ri), .index = 99};
	uint8_t big[8192];
	uint64_t v8 = 0;
	uint32_t v = 0;
	uint16_t v2 = 0;
	ssize_t n;
	void *p;

	tap(fails_with(ioctl(d->device, VFIO_DEVICE_GET_REGION_INFO, &ri),
		       einval),
	    "GET_REGION_INFO of region 99 fails with EINVAL");
	ri.argsz = 4;
	ri.index = BAR0;
	tap(fails_with(ioctl(d->device, VFIO_DEVICE_GET_REGION_INFO, &ri),
		       einval),
	    "GET_REGION_INFO with a short argsz fails with EINVAL");
	n = vfio_region_read(d, BAR0, VGPU_PCI_BAR0_SIZE, &v, 4);
	tap(n <= 0, "a read at BAR0's end returns no data (%zd)", n);
	n = vfio_region_read(d, BAR0, VGPU_PCI_BAR0_SIZE - 2, &v, 4);
	tap(n < 4, "a read across BAR0's end is refused (%zd)", n);
	n = vfio_region_read(d, BAR0, 0, big, sizeof(big));
	tap(n < (ssize_t)sizeof(big), "an 8 KiB read of BAR0 is refused (%zd)",
	    n);
	n = vfio_region_write(d, BAR0, VGPU_PCI_BAR0_SIZE + 0x200, &v, 4);
	tap(n <= 0, "a write past BAR0's end is refused (%zd)", n);
	v = 0xdeadbeef;
	n = vfio_region_read(d, BAR0, VGPU_REG_MAGIC + 1, &v, 4);
	tap(n < 0 || v == 0, "an unaligned register read gives 0 or fails");
	n = vfio_region_read(d, BAR0, VGPU_REG_MAGIC, &v2, 2);
	tap(n < 0 || v2 == 0, "a 2-byte register read gives 0 or fails");
	n = vfio_region_read(d, BAR0, VGPU_REG_MAGIC, &v8, 8);
	tap(n < 0 || v8 == 0 || v8 == VGPU_PCI_DEVICE_MAGIC,
	    "an 8-byte register read gives 0 or fails (or the 4-byte value)");
	v = 0;
	reg_write(d, VGPU_REG_MAGIC, 0);
	reg_write(d, VGPU_REG_SM_COUNT, 999);
	tap(reg_read(d, VGPU_REG_MAGIC) == VGPU_PCI_DEVICE_MAGIC,
	    "writes to read-only registers are ignored");
	n = vfio_region_read(d, VFIO_PCI_CONFIG_REGION_INDEX,
			     d->region[VFIO_PCI_CONFIG_REGION_INDEX].size, &v,
			     4);
	tap(n <= 0, "a config read at its end returns no data (%zd)", n);
	n = vfio_region_read(d, VFIO_PCI_CONFIG_REGION_INDEX, 1ull << 39, &v,
			     4);
	tap(n <= 0, "a config read 512 GiB past its start returns no data");
	n = pread(d->device, &v, 4, (off_t)0x7fffffffffff0000ll);
	tap(n < 0, "a read at a region index that does not exist fails");
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, d->device,
		 (off_t)d->region[BAR0].offset);
	tap(p == MAP_FAILED ||
		    (d->region[BAR0].flags & VFIO_REGION_INFO_FLAG_MMAP),
	    "BAR0 (trapped registers) cannot be mapped");
	if (p != MAP_FAILED)
		munmap(p, 4096);
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, d->device,
		 (off_t)(d->region[VFIO_PCI_BAR2_REGION_INDEX].offset +
			 d->region[VFIO_PCI_BAR2_REGION_INDEX].size - 4096));
	tap(p == MAP_FAILED, "a mapping past BAR2's end is refused");
	if (p != MAP_FAILED)
		munmap(p, 8192);
}

/* set_irqs: one VFIO_DEVICE_SET_IRQS with a data payload of n fds. */
static int set_irqs(struct vfio_dev *d, uint32_t argsz, uint32_t flags,
		    uint32_t index, uint32_t start, uint32_t count, int fd)
{
	char buf[sizeof(struct vfio_irq_set) + 4 * sizeof(int32_t)];
	struct vfio_irq_set *s = (struct vfio_irq_set *)buf;
	int32_t fds[4] = {fd, fd, fd, fd};

	memset(buf, 0, sizeof(buf));
	s->argsz = argsz;
	s->flags = flags;
	s->index = index;
	s->start = start;
	s->count = count;
	memcpy(s->data, fds, sizeof(fds));
	return ioctl(d->device, VFIO_DEVICE_SET_IRQS, s);
}

static void hostile_irqs(struct vfio_dev *d)
{
	const uint32_t ev =
		VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
	const uint32_t full = sizeof(struct vfio_irq_set) + 4;
	struct vfio_irq_info ii = {.argsz = sizeof(ii), .index = 99};
	int efd = eventfd(0, EFD_CLOEXEC), file = open("/init", O_RDONLY);
	const uint32_t msi = VFIO_PCI_MSI_IRQ_INDEX;

	tap(fails_with(ioctl(d->device, VFIO_DEVICE_GET_IRQ_INFO, &ii), einval),
	    "GET_IRQ_INFO of index 99 fails with EINVAL");
	tap(fails_with(set_irqs(d, full, ev, 99, 0, 1, efd), einval),
	    "SET_IRQS on index 99 fails with EINVAL");
	tap(fails_with(set_irqs(d, full + 12, ev, msi, 0, 2, efd), einval),
	    "SET_IRQS of 2 MSI vectors (there is 1) fails with EINVAL");
	tap(fails_with(set_irqs(d, full, ev, msi, 1, 1, efd), einval),
	    "SET_IRQS of MSI vector 1 fails with EINVAL");
	tap(fails_with(set_irqs(d, full,
				VFIO_IRQ_SET_DATA_NONE |
					VFIO_IRQ_SET_DATA_BOOL |
					VFIO_IRQ_SET_ACTION_TRIGGER,
				msi, 0, 1, efd),
		       einval),
	    "SET_IRQS with two data types fails with EINVAL");
	tap(fails_with(set_irqs(d, full,
				VFIO_IRQ_SET_DATA_EVENTFD |
					VFIO_IRQ_SET_ACTION_MASK |
					VFIO_IRQ_SET_ACTION_TRIGGER,
				msi, 0, 1, efd),
		       einval),
	    "SET_IRQS with two actions fails with EINVAL");
	tap(fails_with(set_irqs(d, sizeof(struct vfio_irq_set), ev, msi, 0, 1,
				efd),
		       einval),
	    "SET_IRQS whose argsz leaves out the fd fails with EINVAL");
	tap(fails_with(set_irqs(d, 8, ev, msi, 0, 1, efd), einval),
	    "SET_IRQS with argsz 8 fails with EINVAL");
	tap(fails_with(set_irqs(d, full, ev, msi, 0, 1, -5), ebadf_einval),
	    "SET_IRQS with fd -5 fails (EBADF or EINVAL)");
	tap(fails_with(set_irqs(d, full, ev, msi, 0, 1, 1000), ebadf_einval),
	    "SET_IRQS with a closed fd fails (EBADF or EINVAL)");
	tap(fails_with(set_irqs(d, full, ev, msi, 0, 1, file), ebadf_einval),
	    "SET_IRQS with a file that is not an eventfd fails");
	tap(set_irqs(d, full, ev, msi, 0, 1, efd) == 0 &&
		    set_irqs(d, full, ev, msi, 0, 1, efd) == 0 &&
		    set_irqs(d, full, ev, msi, 0, 1, -1) == 0,
	    "setting the MSI eventfd twice and removing it works");
	close(efd);
	close(file);
}

/* Bad values in the channel registers, then a ring with a bad index. */
static void hostile_channels(struct vfio_dev *d)
{
	uint32_t nch = reg_read(d, VGPU_REG_NUM_CHANNELS), st;
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_NOP, .tag = 3};
	struct vgpu_cqe cqe = {0};
	struct vfio_ring r;

	reg_write(d, VGPU_REG_CHANNEL(0) + VGPU_CHAN_CTRL, 0);
	reg_write(d, VGPU_REG_CHANNEL(0) + VGPU_CHAN_CTRL, 99);
	reg_write(d, VGPU_REG_CHANNEL(0) + VGPU_CHAN_CTRL, 0xffffffffu);
	reg_write(d, VGPU_REG_CHANNEL(0) + VGPU_CHAN_CTRL + 1,
		  VGPU_CHAN_CMD_OPEN);
	usleep(200000);
	st = reg_read(d, VGPU_REG_CHANNEL(0) + VGPU_CHAN_STATE);
	tap(st == VGPU_CHAN_FREE,
	    "unknown and unaligned channel commands leave channel 0 FREE "
	    "(state %u)",
	    st);
	reg_write(d, VGPU_REG_CHANNEL(0) + VGPU_CHAN_CTRL, VGPU_CHAN_CMD_CLOSE);
	reg_write(d, VGPU_REG_CHANNEL(0) + VGPU_CHAN_DOORBELL, 1);
	usleep(200000);
	tap(reg_read(d, VGPU_REG_CHANNEL(0) + VGPU_CHAN_STATE) ==
		    VGPU_CHAN_FREE,
	    "CLOSE and DOORBELL on a FREE channel change nothing");
	if (nch < VGPU_PCI_MAX_CHANNELS) {
		reg_write(d, VGPU_REG_CHANNEL(nch) + VGPU_CHAN_CTRL,
			  VGPU_CHAN_CMD_OPEN);
		usleep(200000);
		st = reg_read(d, VGPU_REG_CHANNEL(nch) + VGPU_CHAN_STATE);
		tap(st != VGPU_CHAN_OPEN && st != VGPU_CHAN_OPENING,
		    "OPEN of channel %u (beyond the %u channels) does "
		    "nothing (state %u)",
		    nch, nch, st);
	}
	reg_write(d, VGPU_REG_CHANNEL(VGPU_PCI_MAX_CHANNELS) + VGPU_CHAN_CTRL,
		  VGPU_CHAN_CMD_OPEN);
	tap(reg_read(d, VGPU_REG_CHANNEL(VGPU_PCI_MAX_CHANNELS) +
				VGPU_CHAN_STATE) == 0,
	    "channel %u's registers (past the last) read as 0",
	    VGPU_PCI_MAX_CHANNELS);
	reg_write(d, VGPU_REG_IRQ_STATUS, 0xffffffffu);

	if (vfio_msi_enable(d) < 0 || vfio_map_bar2(d) < 0 ||
	    !tap(chan_open(d, 0, &r) == 0, "channel 0 opens")) {
		return;
	}
	reg_write(d, VGPU_REG_CHANNEL(0) + VGPU_CHAN_CTRL, VGPU_CHAN_CMD_OPEN);
	tap(ring_call(d, &r, &sqe, &cqe) >= 0 && cqe.status == 0,
	    "a second OPEN of an open channel does not break it (a NOP "
	    "completes)");
	/* a tail far beyond the head breaks the ring (protocol.h) */
	ring_store_release(&r.hdr->sq_tail, r.hdr->sq_tail + 100000);
	reg_write(d, VGPU_REG_CHANNEL(0) + VGPU_CHAN_DOORBELL, 1);
	st = VGPU_RING_OK;
	for (int i = 0; i < 100 && st == VGPU_RING_OK; i++) {
		usleep(100000);
		st = ring_load_acquire(&r.hdr->status);
	}
	tap(st == VGPU_RING_BROKEN,
	    "a submission tail 100000 ahead breaks the ring (status %u)", st);
	tap(chan_close(d, 0) == 0, "the broken channel closes (FREE)");
	tap(chan_open(d, 0, &r) == 0 &&
		    (sqe.tag = 4, ring_call(d, &r, &sqe, &cqe)) >= 0 &&
		    cqe.status == 0,
	    "channel 0 opens again and a NOP completes");
	chan_close(d, 0);
}

int hostile_run(struct vfio_dev *d)
{
	hostile_regions(d);
	hostile_irqs(d);
	hostile_channels(d);
	tap(reg_read(d, VGPU_REG_MAGIC) == VGPU_PCI_DEVICE_MAGIC &&
		    reg_read(d, VGPU_REG_DEVICE_STATE) == VGPU_DEVICE_READY,
	    "after all that the device is READY");
	return 0;
}
