/* SPDX-License-Identifier: MIT */
/*
 * vfio_user: the in-VM VFIO tests of a vgpu_mdev instance, as a user-space
 * VFIO driver (QEMU's position) sees it. Prints TAP lines without numbers
 * (tests/vm/run.sh numbers them); exit status 1 if any test failed.
 *
 *   vfio_user basic UUID [SMS MEMORY]  config space, BARs, MSI, channel 0,
 *                                      a NOP through the ring, the
 *                                      completion interrupt
 *   vfio_user intx UUID                 INTx instead of MSI: a NOP's
 *                                      completion signals its eventfd;
 *                                      automask, UNMASK, MASK, MSI and
 *                                      INTx exclusive, off (vfio_intx.c)
 *   vfio_user regs UUID                 BAR0 registers as NAME=VALUE lines
 *   vfio_user hostile UUID              bad accesses and commands; the
 *                                      device still works afterwards
 *   vfio_user reset UUID DIR            allocates memory, then (when the
 *                                      script says so) VFIO_DEVICE_RESET
 *   vfio_user hold UUID DIR SECS MODE   holds the device open with a
 *                                      channel; MODE error: until the
 *                                      device fails or is taken away;
 *                                      recover: until it fails and then
 *                                      is READY again and serves a NOP
 *   vfio_user bar2 UUID                 BAR2 is per VFIO session: a past
 *                                      user's bytes and kept mapping do
 *                                      not reach the next user's
 *   vfio_user ctl TYPE4 TYPE8           this program as vgpud on
 *                                      /dev/vgpu-ctl (vfio_ctl.c)
 *   vfio_user ctlopen root|nobody|nocap opens /dev/vgpu-ctl as that user,
 *                                      prints "opened" or the errno name
 *   vfio_user ctlhold DIR               holds /dev/vgpu-ctl, then lets go
 *                                      and unloads the module at once
 *                                      (vfio_ctlopen.c)
 *   vfio_user follow UUID DIR STEP...   holds the device open with MSI on
 *                                      while the script changes the vGPU
 *                                      (resize, move, migrate): after each
 *                                      STEP (NAME:SMS:GROUPS:GPU, "-" for
 *                                      what it does not check; GROUPS is
 *                                      COUNT or COUNT.FIRST) the device
 *                                      interrupt came and BAR0 shows the
 *                                      new composition
 *
 * DIR is where the program and its script meet: the program creates
 * DIR/NAME at a step and waits for DIR/NAME.go before the next.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vfio_dev.h"
#include "vgpu/ring.h"

static int tap_failed;

int tap(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s - ", cond ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		tap_failed++;
	return cond;
}

void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

int sync_point(const char *dir, const char *name)
{
	char path[512];
	int fd, i;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	snprintf(path, sizeof(path), "%s/%s.go", dir, name);
	for (i = 0; i < 1200; i++) {
		if (access(path, F_OK) == 0)
			return 0;
		usleep(100000);
	}
	diag("nobody said %s.go in 120 s", name);
	return -1;
}

/* Config space: our identity, the BARs, the MSI capability. */
static void test_config(struct vfio_dev *d)
{
	struct vfio_region_info *c = &d->region[VFIO_PCI_CONFIG_REGION_INDEX];
	uint8_t cfg[256];
	uint32_t bar0, sized;
	unsigned int ptr, steps, msi = 0;

	tap(c->size >= 256 && (c->flags & VFIO_REGION_INFO_FLAG_READ),
	    "config region is readable, %llu bytes",
	    (unsigned long long)c->size);
	if (!tap(cfg_read(d, 0, cfg, sizeof(cfg)) == 0,
		 "config space reads (256 bytes)"))
		return;
	tap(le16(cfg + 0x00) == VGPU_PCI_VENDOR_ID &&
		    le16(cfg + 0x02) == VGPU_PCI_DEVICE_ID,
	    "vendor:device is %04x:%04x (got %04x:%04x)", VGPU_PCI_VENDOR_ID,
	    VGPU_PCI_DEVICE_ID, le16(cfg), le16(cfg + 2));
	tap(le16(cfg + 0x2c) == VGPU_PCI_SUBSYS_VENDOR_ID &&
		    le16(cfg + 0x2e) == VGPU_PCI_SUBSYS_ID,
	    "subsystem is %04x:%04x", VGPU_PCI_SUBSYS_VENDOR_ID,
	    VGPU_PCI_SUBSYS_ID);
	tap((le32(cfg + 0x08) >> 8) == VGPU_PCI_CLASS &&
		    cfg[0x08] == VGPU_PCI_REVISION,
	    "class %06x revision %02x (got %06x %02x)", VGPU_PCI_CLASS,
	    VGPU_PCI_REVISION, le32(cfg + 0x08) >> 8, cfg[0x08]);
	bar0 = le32(cfg + 0x10);
	tap(!(bar0 & 1) && !(le32(cfg + 0x18) & 1),
	    "BAR0 and BAR2 are memory BARs (0x%08x, 0x%08x)", bar0,
	    le32(cfg + 0x18));
	/* a guest sizes a BAR by writing all ones and reading it back */
	sized = 0;
	if (cfg_write32(d, 0x10, 0xffffffffu) == 0 &&
	    cfg_read(d, 0x10, &sized, 4) == 0)
		tap((sized & ~0xfu) == (uint32_t) ~(VGPU_PCI_BAR0_SIZE - 1),
		    "BAR0 sizes as %u bytes (read back 0x%08x)",
		    VGPU_PCI_BAR0_SIZE, sized);
	else
		tap(0, "BAR0 sizing: config write or read failed: %s",
		    strerror(errno));
	cfg_write32(d, 0x10, bar0);
	if (!tap(le16(cfg + 0x06) & 0x10, "status says capabilities present"))
		return;
	ptr = cfg[0x34] & 0xfc;
	for (steps = 0; ptr >= 0x40 && ptr < 0xff && steps < 48; steps++) {
		if (cfg[ptr] == 0x05) {
			msi = ptr;
			break;
		}
		ptr = cfg[ptr + 1] & 0xfc;
	}
	tap(msi != 0, "MSI capability found (at 0x%02x)", msi);
}

/* BAR0 registers: identity, composition, what the type promised. */
static void test_bar0(struct vfio_dev *d, uint32_t sms, uint64_t memory)
{
	struct vfio_region_info *b0 = &d->region[VFIO_PCI_BAR0_REGION_INDEX];
	struct vfio_region_info *b2 = &d->region[VFIO_PCI_BAR2_REGION_INDEX];
	char name[VGPU_REG_STRING_BYTES];
	uint64_t mem;
	uint32_t n;

	tap(b0->size == VGPU_PCI_BAR0_SIZE &&
		    (b0->flags & VFIO_REGION_INFO_FLAG_READ) &&
		    (b0->flags & VFIO_REGION_INFO_FLAG_WRITE),
	    "BAR0 region: %llu bytes, read/write",
	    (unsigned long long)b0->size);
	tap(reg_read(d, VGPU_REG_MAGIC) == VGPU_PCI_DEVICE_MAGIC,
	    "BAR0 MAGIC is 0x%08x", VGPU_PCI_DEVICE_MAGIC);
	tap(reg_read(d, VGPU_REG_VERSION) ==
		    ((uint32_t)VGPU_PROTO_MAJOR << 16 | VGPU_PROTO_MINOR),
	    "BAR0 VERSION is %u.%u", VGPU_PROTO_MAJOR, VGPU_PROTO_MINOR);
	tap(reg_read(d, VGPU_REG_DEVICE_STATE) == VGPU_DEVICE_READY,
	    "device state READY (got %u)", reg_read(d, VGPU_REG_DEVICE_STATE));
	n = reg_read(d, VGPU_REG_SM_COUNT);
	mem = reg_read(d, VGPU_REG_MEMORY_LO) |
	      (uint64_t)reg_read(d, VGPU_REG_MEMORY_HI) << 32;
	if (sms)
		tap(n == sms, "SM count %u matches the type (%u)", n, sms);
	else
		tap(n > 0, "SM count %u", n);
	if (memory)
		tap(mem == memory, "memory %llu matches the type (%llu)",
		    (unsigned long long)mem, (unsigned long long)memory);
	else
		tap(mem > 0, "memory %llu", (unsigned long long)mem);
	n = reg_read(d, VGPU_REG_NUM_CHANNELS);
	tap(n >= 1 && n <= VGPU_PCI_MAX_CHANNELS, "%u channels", n);
	tap(reg_read(d, VGPU_REG_CHANNEL_STRIDE) == VGPU_PCI_CHANNEL_STRIDE,
	    "channel stride is %u", VGPU_PCI_CHANNEL_STRIDE);
	tap(b2->size == (uint64_t)n * VGPU_PCI_CHANNEL_STRIDE &&
		    (b2->flags & VFIO_REGION_INFO_FLAG_MMAP),
	    "BAR2 region: %llu bytes (channels x stride), mmap-able",
	    (unsigned long long)b2->size);
	reg_string(d, VGPU_REG_GPU_NAME, name);
	tap(name[0] != '\0', "GPU name '%s'", name);
	reg_string(d, VGPU_REG_VGPU_NAME, name);
	tap(name[0] != '\0', "vGPU name '%s'", name);
}

/* Channel 0: open, one NOP through the ring, its interrupt, close. */
static void test_channel(struct vfio_dev *d)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_NOP, .tag = 0x1234};
	struct vgpu_cqe cqe = {0};
	struct vfio_ring r;
	int irq;

	if (!tap(vfio_map_bar2(d) == 0, "BAR2 maps (mmap %zu bytes)",
		 (size_t)d->region[VFIO_PCI_BAR2_REGION_INDEX].size))
		return;
	tap(reg_read(d, VGPU_REG_CHANNEL(0) + VGPU_CHAN_STATE) ==
		    VGPU_CHAN_FREE,
	    "channel 0 starts FREE");
	if (!tap(chan_open(d, 0, &r) == 0,
		 "channel 0 opens (CTRL OPEN -> state OPEN, ring header "
		 "valid)"))
		return;
	irq = reg_read(d, VGPU_REG_IRQ_STATUS);
	diag("IRQ_STATUS 0x%08x after the open", (unsigned int)irq);
	reg_write(d, VGPU_REG_IRQ_STATUS, irq);
	tap(reg_read(d, VGPU_REG_IRQ_STATUS) == 0,
	    "IRQ_STATUS clears when its bits are written back");
	irq = ring_call(d, &r, &sqe, &cqe);
	tap(irq >= 0 && cqe.status == 0,
	    "a NOP completes with status 0 (tag 0x%x)", cqe.tag);
	tap(irq == 1, "the completion raised the MSI (eventfd)");
	tap(reg_read(d, VGPU_REG_IRQ_STATUS) & 1, "IRQ_STATUS names channel 0");
	reg_write(d, VGPU_REG_IRQ_STATUS, 0xffffffffu);
	tap(chan_close(d, 0) == 0, "channel 0 closes (state FREE)");
}

static int cmd_basic(const char *uuid, uint32_t sms, uint64_t memory)
{
	struct vfio_dev d;
	struct vfio_irq_info irq = {.argsz = sizeof(irq),
				    .index = VFIO_PCI_MSI_IRQ_INDEX};

	if (!tap(vfio_dev_open(&d, uuid) == 0,
		 "VFIO container, group (type1) and device open"))
		return 1;
	tap((d.info.flags & VFIO_DEVICE_FLAGS_PCI) &&
		    d.info.num_regions > VFIO_PCI_CONFIG_REGION_INDEX &&
		    d.info.num_irqs > VFIO_PCI_MSI_IRQ_INDEX,
	    "device info: vfio-pci, %u regions, %u irqs", d.info.num_regions,
	    d.info.num_irqs);
	test_config(&d);
	test_bar0(&d, sms, memory);
	tap(ioctl(d.device, VFIO_DEVICE_GET_IRQ_INFO, &irq) == 0 &&
		    irq.count == 1 && (irq.flags & VFIO_IRQ_INFO_EVENTFD),
	    "MSI irq info: 1 vector, eventfd");
	if (tap(vfio_msi_enable(&d) == 0,
		"VFIO_DEVICE_SET_IRQS: MSI vector 0 -> eventfd"))
		test_channel(&d);
	tap(vfio_set_eventfd(&d, VFIO_PCI_MSI_IRQ_INDEX, -1) == 0,
	    "MSI eventfd removed again");
	vfio_dev_close(&d);
	return tap_failed ? 1 : 0;
}

static int cmd_regs(const char *uuid)
{
	char s[VGPU_REG_STRING_BYTES];
	struct vfio_dev d;

	if (vfio_dev_open(&d, uuid) < 0)
		return 1;
	printf("magic=0x%08x\n", reg_read(&d, VGPU_REG_MAGIC));
	printf("state=%u\n", reg_read(&d, VGPU_REG_DEVICE_STATE));
	printf("error=%d\n", (int)reg_read(&d, VGPU_REG_DEVICE_ERROR));
	printf("sms=%u\n", reg_read(&d, VGPU_REG_SM_COUNT));
	printf("memory=%llu\n",
	       (unsigned long long)(reg_read(&d, VGPU_REG_MEMORY_LO) |
				    (uint64_t)reg_read(&d, VGPU_REG_MEMORY_HI)
					    << 32));
	printf("channels=%u\n", reg_read(&d, VGPU_REG_NUM_CHANNELS));
	printf("slice=0x%08x\n", reg_read(&d, VGPU_REG_SLICE_ID));
	printf("gpu_index=%u\n", reg_read(&d, VGPU_REG_GPU_INDEX));
	printf("change=%u\n", reg_read(&d, VGPU_REG_CHANGE_COUNT));
	reg_string(&d, VGPU_REG_VGPU_NAME, s);
	printf("vgpu=%s\n", s);
	reg_string(&d, VGPU_REG_GPU_NAME, s);
	printf("gpu=%s\n", s);
	vfio_dev_close(&d);
	return 0;
}

/* Opens channel 0 with MSI on; the common start of reset and hold. */
static int open_with_channel(struct vfio_dev *d, const char *uuid,
			     struct vfio_ring *r)
{
	if (!tap(vfio_dev_open(d, uuid) == 0, "device opens"))
		return -1;
	if (!tap(vfio_msi_enable(d) == 0 && vfio_map_bar2(d) == 0 &&
			 chan_open(d, 0, r) == 0,
		 "MSI on, BAR2 mapped, channel 0 open")) {
		vfio_dev_close(d);
		return -1;
	}
	return 0;
}

static int nop(struct vfio_dev *d, struct vfio_ring *r)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_NOP, .tag = 7};
	struct vgpu_cqe cqe = {0};

	return ring_call(d, r, &sqe, &cqe) >= 0 && cqe.status == 0 ? 0 : -1;
}

/* Memory allocated through the ring, then a reset (as a guest reboot). */
static int cmd_reset(const char *uuid, const char *dir)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_MEM_ALLOC, .tag = 1};
	struct vgpu_cqe cqe = {0};
	struct vfio_ring r;
	struct vfio_dev d;
	int ok;

	if (open_with_channel(&d, uuid, &r) < 0)
		return 1;
	tap(d.info.flags & VFIO_DEVICE_FLAGS_RESET,
	    "device info offers VFIO_DEVICE_RESET");
	sqe.a[0] = 4u << 20;
	ok = ring_call(&d, &r, &sqe, &cqe) >= 0 && cqe.status == 0;
	tap(ok && cqe.r[0] != 0,
	    "MEM_ALLOC of 4 MiB through the ring (at 0x%llx)",
	    (unsigned long long)cqe.r[0]);
	if (sync_point(dir, "allocated") == 0) {
		tap(ioctl(d.device, VFIO_DEVICE_RESET) == 0,
		    "VFIO_DEVICE_RESET succeeds");
		tap(chan_wait_state(&d, 0, VGPU_CHAN_FREE, 10000) == 0,
		    "the reset closed channel 0 (state FREE)");
		tap(reg_read(&d, VGPU_REG_DEVICE_STATE) == VGPU_DEVICE_READY,
		    "the device is READY after the reset");
		if (sync_point(dir, "reset") == 0)
			tap(chan_open(&d, 0, &r) == 0 && nop(&d, &r) == 0,
			    "channel 0 opens again and serves a NOP");
	}
	vfio_dev_close(&d);
	return tap_failed ? 1 : 0;
}

/*
 * BAR2 per VFIO session (vgpud answers each close with a fresh memfd): a
 * past user's bytes are not in the next user's BAR2, a mapping it kept
 * past its close does not reach it, and the next user's channel works
 * (the worker lays its ring out in the new memfd).
 */
static int cmd_bar2(const char *uuid)
{
	struct vfio_ring r;
	struct vfio_dev d;
	uint8_t *old, *cur;
	off_t last;
	int zero = 1, i;

	if (open_with_channel(&d, uuid, &r) < 0)
		return 1;
	last = (off_t)d.bar2_size - 4096;
	old = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, d.device,
		   (off_t)d.region[VFIO_PCI_BAR2_REGION_INDEX].offset + last);
	if (!tap(old != MAP_FAILED, "a second mapping of BAR2's last page")) {
		vfio_dev_close(&d);
		return 1;
	}
	memset(old, 0xa5, 4096);
	tap(((uint8_t *)d.bar2)[last] == 0xa5,
	    "a write there shows in the device's BAR2 mapping");
	chan_close(&d, 0);
	vfio_dev_close(&d); /* the second mapping stays */
	if (!tap(vfio_dev_open(&d, uuid) == 0 && vfio_msi_enable(&d) == 0 &&
			 vfio_map_bar2(&d) == 0,
		 "the next user opens it (vgpud answered the close with a "
		 "fresh BAR2 memfd) and maps BAR2"))
		goto out;
	cur = (uint8_t *)d.bar2 + last;
	for (i = 0; i < 4096; i++)
		zero &= cur[i] == 0;
	memset(old, 0x3c, 4096);
	tap(zero && cur[0] == 0,
	    "the past user's bytes are not in the next user's BAR2, and its "
	    "kept mapping does not reach it");
	tap(chan_open(&d, 0, &r) == 0 && nop(&d, &r) == 0,
	    "the next user's channel 0 opens (its ring in the fresh memfd) "
	    "and serves a NOP");
	chan_close(&d, 0);
	vfio_dev_close(&d);
out:
	munmap(old, 4096);
	return tap_failed ? 1 : 0;
}

/*
 * Holds the device open with channel 0 open, reporting what it sees (one
 * line per change) until the device fails or is taken away (the module's
 * request, or reads failing), or, in recover mode, until it is READY
 * again after an ERROR and serves a NOP. Exit 0 when that happened within
 * secs, else 1.
 */
static int cmd_hold(const char *uuid, const char *dir, int secs, int recover)
{
	struct vfio_ring r;
	struct vfio_dev d;
	uint32_t st, last = 0xfffffffe;
	int req_fd, saw_error = 0, done = 0, i = 0;

	if (open_with_channel(&d, uuid, &r) < 0)
		return 1;
	req_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (vfio_set_eventfd(&d, VFIO_PCI_REQ_IRQ_INDEX, req_fd) < 0) {
		diag("no request interrupt (%s)", strerror(errno));
		close(req_fd);
		req_fd = -1;
	}
	if (sync_point(dir, "holding") < 0)
		goto out;
	for (i = 0; i < secs * 20 && !done; i++) {
		if (req_fd >= 0 && wait_eventfd(req_fd, 0) > 0) {
			printf("event: request (the device is taken away)\n");
			done = !recover;
			saw_error = 1;
		}
		st = reg_read(&d, VGPU_REG_DEVICE_STATE);
		if (st != last) {
			printf("event: device state %u (channel 0 state %u, "
			       "error %d)\n",
			       st,
			       reg_read(&d,
					VGPU_REG_CHANNEL(0) + VGPU_CHAN_STATE),
			       (int)reg_read(&d, VGPU_REG_DEVICE_ERROR));
			fflush(stdout);
			last = st;
		}
		if (st == VGPU_DEVICE_ERROR || st == 0xffffffffu) {
			saw_error = 1;
			done = !recover;
		} else if (st == VGPU_DEVICE_READY && saw_error && recover) {
			/* the channel was FAILED; CLOSE makes it FREE */
			chan_close(&d, 0);
			if (chan_open(&d, 0, &r) == 0 && nop(&d, &r) == 0)
				printf("event: recovered, a NOP completed\n");
			else
				printf("event: READY again but the channel "
				       "does not work\n");
			done = 1;
		}
		if (!done)
			wait_eventfd(d.msi_fd, 50);
	}
out:
	if (req_fd >= 0)
		close(req_fd);
	vfio_dev_close(&d);
	printf("event: closed the device after %d.%d s\n", i / 20,
	       (i % 20) * 5);
	return done ? 0 : 1;
}

/* The composition registers, read as a guest reads them: CHANGE_COUNT
 * before and after the others, again while it moves. */
struct comp_regs {
	uint32_t sms, slice, gpu, change;
	uint64_t memory;
};

static void comp_read(struct vfio_dev *d, struct comp_regs *c)
{
	int tries = 4;
	uint32_t before;

	do {
		before = reg_read(d, VGPU_REG_CHANGE_COUNT);
		c->sms = reg_read(d, VGPU_REG_SM_COUNT);
		c->slice = reg_read(d, VGPU_REG_SLICE_ID);
		c->gpu = reg_read(d, VGPU_REG_GPU_INDEX);
		c->memory = reg_read(d, VGPU_REG_MEMORY_LO) |
			    (uint64_t)reg_read(d, VGPU_REG_MEMORY_HI) << 32;
		c->change = reg_read(d, VGPU_REG_CHANGE_COUNT);
	} while (c->change != before && --tries);
}

/* "-" or a number: whether to check it, and the number. */
static int step_field(const char *s, uint32_t *v)
{
	if (!s || !strcmp(s, "-"))
		return 0;
	*v = (uint32_t)strtoul(s, NULL, 0);
	return 1;
}

/*
 * One STEP of follow: the script changed the vGPU (DIR/NAME.go says it is
 * done, vgpu-admin has answered); the device interrupt must have come (or
 * come within 10 s) with IRQ_STATUS's device bit, CHANGE_COUNT must have
 * grown, and SM_COUNT, SLICE_ID's group count and GPU_INDEX must be the
 * step's; memory stays.
 */
static void follow_step(struct vfio_dev *d, const char *dir, char *step,
			struct comp_regs *last)
{
	char *name = strtok(step, ":");
	char *f_sms = strtok(NULL, ":"), *f_groups = strtok(NULL, ":");
	char *f_gpu = strtok(NULL, ":");
	uint32_t want, status;
	struct comp_regs now;
	int irq;

	if (!name || sync_point(dir, name) < 0) {
		tap(0, "%s: the script made the change", name ? name : "?");
		return;
	}
	irq = wait_eventfd(d->msi_fd, 10000);
	status = reg_read(d, VGPU_REG_IRQ_STATUS);
	reg_write(d, VGPU_REG_IRQ_STATUS, status);
	tap(irq == 1 && (status & VGPU_IRQ_DEVICE),
	    "%s: the device interrupt arrived (MSI, IRQ_STATUS 0x%08x)", name,
	    status);
	comp_read(d, &now);
	tap(now.change > last->change, "%s: CHANGE_COUNT went up (%u -> %u)",
	    name, last->change, now.change);
	if (step_field(f_sms, &want))
		tap(now.sms == want, "%s: SM_COUNT is %u (was %u, got %u)",
		    name, want, last->sms, now.sms);
	if (step_field(f_groups, &want))
		tap((now.slice & 0xffff) == want &&
			    (!strchr(f_groups, '.') ||
			     now.slice >> 16 ==
				     strtoul(strchr(f_groups, '.') + 1, NULL,
					     0)),
		    "%s: SLICE_ID is %s groups (COUNT.FIRST; 0x%08x, was "
		    "0x%08x)",
		    name, f_groups, now.slice, last->slice);
	if (step_field(f_gpu, &want))
		tap(now.gpu == want, "%s: GPU_INDEX is %u (was %u, got %u)",
		    name, want, last->gpu, now.gpu);
	tap(now.memory == last->memory, "%s: MEMORY stays %llu", name,
	    (unsigned long long)now.memory);
	*last = now;
}

static int cmd_follow(const char *uuid, const char *dir, int nsteps,
		      char **steps)
{
	struct comp_regs last;
	struct vfio_dev d;
	int i;

	if (!tap(vfio_dev_open(&d, uuid) == 0 && vfio_msi_enable(&d) == 0,
		 "a VFIO user opens it with MSI on"))
		return 1;
	reg_write(&d, VGPU_REG_IRQ_STATUS, 0xffffffffu);
	wait_eventfd(d.msi_fd, 0);
	comp_read(&d, &last);
	diag("BAR0: %u SMs, slice 0x%08x, GPU %u, change %u", last.sms,
	     last.slice, last.gpu, last.change);
	for (i = 0; i < nsteps; i++)
		follow_step(&d, dir, steps[i], &last);
	vfio_dev_close(&d);
	return tap_failed ? 1 : 0;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: vfio_user basic|intx|regs|hostile|bar2 UUID, "
		"reset UUID DIR, hold UUID DIR SECONDS error|recover, "
		"ctl TYPE4 TYPE8, ctlopen root|nobody|nocap, ctlhold DIR, "
		"follow UUID DIR NAME:SMS:GROUPS:GPU... "
		"(see the comment at the top of tests/vm/vfio_user.c)\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct vfio_dev d;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3)
		return usage();
	if (!strcmp(argv[1], "basic"))
		return cmd_basic(argv[2],
				 argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 0)
					  : 0,
				 argc > 4 ? strtoull(argv[4], NULL, 0) : 0);
	if (!strcmp(argv[1], "intx"))
		return intx_run(argv[2]) || tap_failed ? 1 : 0;
	if (!strcmp(argv[1], "ctlopen"))
		return ctlopen_run(argv[2]);
	if (!strcmp(argv[1], "ctlhold"))
		return ctlhold_run(argv[2]) || tap_failed ? 1 : 0;
	if (!strcmp(argv[1], "regs"))
		return cmd_regs(argv[2]);
	if (!strcmp(argv[1], "reset") && argc == 4)
		return cmd_reset(argv[2], argv[3]);
	if (!strcmp(argv[1], "bar2"))
		return cmd_bar2(argv[2]);
	if (!strcmp(argv[1], "follow") && argc >= 5)
		return cmd_follow(argv[2], argv[3], argc - 4, argv + 4);
	if (!strcmp(argv[1], "ctl") && argc == 4)
		return ctl_run(argv[2], argv[3]) || tap_failed ? 1 : 0;
	if (!strcmp(argv[1], "hold") && argc == 6)
		return cmd_hold(argv[2], argv[3], atoi(argv[4]),
				!strcmp(argv[5], "recover"));
	if (!strcmp(argv[1], "hostile")) {
		if (!tap(vfio_dev_open(&d, argv[2]) == 0, "device opens"))
			return 1;
		hostile_run(&d);
		vfio_dev_close(&d);
		return tap_failed ? 1 : 0;
	}
	return usage();
}
