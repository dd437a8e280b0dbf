/* SPDX-License-Identifier: MIT */
/*
 * vfio_user intx UUID: the legacy interrupt (INTx) of an instance, as a
 * VMM without MSI uses it: SET_IRQS on VFIO_PCI_INTX_IRQ_INDEX with an
 * eventfd, a NOP's completion through the ring signalling it, and the
 * module's rules (mdev/vgpu_mdev_vfio.c): level-triggered and automasked
 * (one signal until UNMASK; UNMASK with IRQ_STATUS still set fires
 * again), ACTION_MASK holds it back, no eventfd form of UNMASK, INTx and
 * MSI never on at once (EINVAL, as vfio-pci), count 0 turns it off.
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "vfio_dev.h"
#include "vgpu/ring.h"

/* VFIO_DEVICE_SET_IRQS of vector 0 of index: flags, count, data. */
static int irq_set(struct vfio_dev *d, unsigned int index, uint32_t flags,
		   uint32_t count, const void *data, size_t len)
{
	char buf[sizeof(struct vfio_irq_set) + sizeof(int32_t)];
	struct vfio_irq_set *set = (struct vfio_irq_set *)buf;

	if (len > sizeof(int32_t))
		return -1;
	memset(buf, 0, sizeof(buf));
	set->argsz = sizeof(*set) + len;
	set->flags = flags;
	set->index = index;
	set->start = 0;
	set->count = count;
	if (len)
		memcpy(set->data, data, len);
	return ioctl(d->device, VFIO_DEVICE_SET_IRQS, set);
}

/* INTx ACTION_MASK or ACTION_UNMASK, as QEMU sends them (DATA_NONE). */
static int intx_mask(struct vfio_dev *d, int mask)
{
	return irq_set(d, VFIO_PCI_INTX_IRQ_INDEX,
		       VFIO_IRQ_SET_DATA_NONE |
			       (mask ? VFIO_IRQ_SET_ACTION_MASK
				     : VFIO_IRQ_SET_ACTION_UNMASK),
		       1, NULL, 0);
}

/* count 0: the index off (its eventfd dropped). */
static int irq_off(struct vfio_dev *d, unsigned int index)
{
	return irq_set(d, index,
		       VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 0,
		       NULL, 0);
}

/* Writes IRQ_STATUS's bits back (clears them) and drains fd. */
static void irq_clear(struct vfio_dev *d, int fd)
{
	reg_write(d, VGPU_REG_IRQ_STATUS, reg_read(d, VGPU_REG_IRQ_STATUS));
	wait_eventfd(fd, 0);
}

/*
 * A NOP with the completion interrupt asked for (client_sleeping), its
 * completion polled rather than waited for on an eventfd (a masked INTx
 * never signals). The flag stays up: the worker reads it after it has
 * published the completion; nop_end takes it down once the caller has
 * looked for the interrupt. 0, or -1.
 */
static int nop_begin(struct vfio_dev *d, struct vfio_ring *r)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_NOP, .tag = 0x1a7};
	struct vgpu_cqe cqe = {0};
	int fd = d->msi_fd, irq = 0, ret = 0;

	d->msi_fd = -1; /* ring_complete polls */
	r->hdr->client_sleeping = 1;
	ring_full_barrier();
	if (ring_submit(d, r, &sqe) < 0 ||
	    ring_complete(d, r, &cqe, 10000, &irq) < 0 || cqe.status ||
	    cqe.tag != sqe.tag)
		ret = -1;
	d->msi_fd = fd;
	return ret;
}

static void nop_end(struct vfio_ring *r)
{
	r->hdr->client_sleeping = 0;
}

/* The NOP and interrupt part; channel 0 open, INTx on with efd. */
static void intx_ring(struct vfio_dev *d, struct vfio_ring *r, int efd)
{
	uint32_t st;
	int got;

	/* the open's own interrupt, if it is still to come (a slow TCG
	 * guest): waited for, not slept past */
	wait_eventfd(efd, 2000);
	irq_clear(d, efd);
	tap(intx_mask(d, 0) == 0 && wait_eventfd(efd, 300) == 0,
	    "INTx: UNMASK with IRQ_STATUS clear raises nothing");
	got = nop_begin(d, r) == 0 ? wait_eventfd(efd, 5000) : -1;
	nop_end(r);
	st = reg_read(d, VGPU_REG_IRQ_STATUS);
	tap(got == 1 && (st & 1),
	    "INTx: a NOP through the ring completes and its completion "
	    "signals the INTx eventfd (IRQ_STATUS 0x%08x names channel 0)",
	    st);
	/* automasked now; IRQ_STATUS stays set */
	got = nop_begin(d, r) == 0 ? wait_eventfd(efd, 500) : -1;
	nop_end(r);
	tap(got == 0, "INTx: automasked, a second completion does not "
		      "signal again");
	tap(intx_mask(d, 0) == 0 && wait_eventfd(efd, 2000) == 1,
	    "INTx: UNMASK with IRQ_STATUS still set signals again "
	    "(level-triggered)");
	irq_clear(d, efd);
	tap(intx_mask(d, 0) == 0 && wait_eventfd(efd, 300) == 0,
	    "INTx: IRQ_STATUS cleared, then UNMASK: no signal");
	tap(intx_mask(d, 1) == 0, "INTx: ACTION_MASK (DATA_NONE) succeeds");
	got = nop_begin(d, r) == 0 ? wait_eventfd(efd, 500) : -1;
	nop_end(r);
	tap(got == 0, "INTx: masked, a completion does not signal");
	tap(intx_mask(d, 0) == 0 && wait_eventfd(efd, 2000) == 1,
	    "INTx: UNMASK delivers the completion held back");
	irq_clear(d, efd);
	intx_mask(d, 0);
}

int intx_run(const char *uuid)
{
	struct vfio_irq_info info = {.argsz = sizeof(info),
				     .index = VFIO_PCI_INTX_IRQ_INDEX};
	const uint32_t want = VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_MASKABLE |
			      VFIO_IRQ_INFO_AUTOMASKED;
	struct vfio_ring r;
	struct vfio_dev d;
	int32_t fd32;
	int efd, msi, ok, got, e;

	if (!tap(vfio_dev_open(&d, uuid) == 0, "INTx: device opens"))
		return 1;
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	msi = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0 || msi < 0) {
		tap(0, "INTx: two eventfds: %s", strerror(errno));
		goto out;
	}
	ok = ioctl(d.device, VFIO_DEVICE_GET_IRQ_INFO, &info) == 0;
	tap(ok && info.count == 1 && (info.flags & want) == want,
	    "INTx irq info: 1 vector, eventfd, maskable, automasked (flags "
	    "0x%x)",
	    info.flags);
	e = intx_mask(&d, 0) < 0 ? errno : 0;
	tap(e == EINVAL,
	    "INTx: UNMASK before INTx is on fails with EINVAL "
	    "(%s)",
	    strerror(e));
	if (!tap(vfio_set_eventfd(&d, VFIO_PCI_INTX_IRQ_INDEX, efd) == 0,
		 "INTx: SET_IRQS ACTION_TRIGGER | DATA_EVENTFD turns it on"))
		goto out;
	d.msi_fd = efd; /* the channel helpers nap on the device interrupt */
	e = vfio_set_eventfd(&d, VFIO_PCI_MSI_IRQ_INDEX, msi) < 0 ? errno : 0;
	tap(e == EINVAL, "INTx on: enabling MSI too fails with EINVAL (%s)",
	    strerror(e));
	wait_eventfd(efd, 0);
	tap(irq_set(&d, VFIO_PCI_INTX_IRQ_INDEX,
		    VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, 1,
		    NULL, 0) == 0 &&
		    wait_eventfd(efd, 1000) == 1,
	    "INTx: ACTION_TRIGGER | DATA_NONE (loopback) signals the eventfd");
	fd32 = efd;
	e = irq_set(&d, VFIO_PCI_INTX_IRQ_INDEX,
		    VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_UNMASK, 1,
		    &fd32, sizeof(fd32)) < 0
		    ? errno
		    : 0;
	tap(e == EINVAL,
	    "INTx: UNMASK with an eventfd (a resampling irqfd) is not "
	    "offered: EINVAL (%s)",
	    strerror(e));
	ok = vfio_map_bar2(&d) == 0 && chan_open(&d, 0, &r) == 0;
	if (tap(ok, "INTx: BAR2 mapped, channel 0 open")) {
		intx_ring(&d, &r, efd);
		tap(irq_off(&d, VFIO_PCI_INTX_IRQ_INDEX) == 0,
		    "INTx: SET_IRQS count 0 (DATA_NONE) turns it off");
		got = nop_begin(&d, &r) == 0 ? wait_eventfd(efd, 500) : -1;
		nop_end(&r);
		tap(got == 0, "INTx off: a completion signals nothing");
		irq_clear(&d, efd);
		e = intx_mask(&d, 0) < 0 ? errno : 0;
		tap(e == EINVAL, "INTx off: UNMASK fails with EINVAL (%s)",
		    strerror(e));
		ok = vfio_set_eventfd(&d, VFIO_PCI_MSI_IRQ_INDEX, msi) == 0;
		tap(ok, "INTx off: MSI can be turned on now");
		e = ok && vfio_set_eventfd(&d, VFIO_PCI_INTX_IRQ_INDEX, efd) < 0
			    ? errno
			    : 0;
		tap(e == EINVAL,
		    "MSI on: enabling INTx too fails with EINVAL (%s)",
		    strerror(e));
		d.msi_fd = msi;
		got = nop_begin(&d, &r) == 0 ? wait_eventfd(msi, 5000) : -1;
		nop_end(&r);
		d.msi_fd = efd;
		tap(got == 1, "MSI after INTx: a completion raises the MSI");
		irq_clear(&d, msi);
		tap(irq_off(&d, VFIO_PCI_MSI_IRQ_INDEX) == 0 &&
			    vfio_set_eventfd(&d, VFIO_PCI_INTX_IRQ_INDEX,
					     efd) == 0 &&
			    irq_off(&d, VFIO_PCI_INTX_IRQ_INDEX) == 0,
		    "MSI off (count 0): INTx can be turned on again, and off");
		tap(chan_close(&d, 0) == 0, "INTx: channel 0 closes");
	}
out:
	if (msi >= 0)
		close(msi);
	if (efd >= 0 && d.msi_fd != efd)
		close(efd);
	vfio_dev_close(&d); /* closes d.msi_fd */
	return 0;
}
