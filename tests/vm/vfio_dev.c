/* SPDX-License-Identifier: MIT */
/*
 * Opening a vgpu_mdev instance through VFIO as QEMU does, and plain access
 * to its regions and interrupts. Errors are returned (-1 with errno set)
 * so that the hostile tests can check them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vfio_dev.h"

/* The /dev/vfio/N of an mdev: its iommu_group link in sysfs. */
static int group_path(const char *uuid, char *out, size_t size)
{
	char link[128], target[256];
	const char *slash;
	ssize_t n;

	snprintf(link, sizeof(link), "/sys/bus/mdev/devices/%s/iommu_group",
		 uuid);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return -1;
	target[n] = '\0';
	slash = strrchr(target, '/');
	snprintf(out, size, "/dev/vfio/%s", slash ? slash + 1 : target);
	return 0;
}

/*
 * Container, group (type1 IOMMU), device fd, device and region info. On
 * failure says which step failed and leaves nothing open.
 */
int vfio_dev_open(struct vfio_dev *d, const char *uuid)
{
	struct vfio_group_status st = {.argsz = sizeof(st)};
	char path[PATH_MAX];
	unsigned int i;
	int e;

	memset(d, 0, sizeof(*d));
	d->container = d->group = d->device = d->msi_fd = -1;
	if (group_path(uuid, path, sizeof(path)) < 0) {
		diag("no iommu_group for %s: %s", uuid, strerror(errno));
		return -1;
	}
	d->container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
	if (d->container < 0) {
		diag("open /dev/vfio/vfio: %s", strerror(errno));
		goto fail;
	}
	d->group = open(path, O_RDWR | O_CLOEXEC);
	if (d->group < 0) {
		diag("open %s: %s", path, strerror(errno));
		goto fail;
	}
	if (ioctl(d->group, VFIO_GROUP_GET_STATUS, &st) < 0 ||
	    !(st.flags & VFIO_GROUP_FLAGS_VIABLE)) {
		diag("group %s is not viable", path);
		goto fail;
	}
	if (ioctl(d->group, VFIO_GROUP_SET_CONTAINER, &d->container) < 0 ||
	    ioctl(d->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU) < 0) {
		diag("type1 IOMMU for %s: %s", path, strerror(errno));
		goto fail;
	}
	d->device = ioctl(d->group, VFIO_GROUP_GET_DEVICE_FD, uuid);
	if (d->device < 0) {
		e = errno;
		diag("VFIO_GROUP_GET_DEVICE_FD %s: %s", uuid, strerror(e));
		vfio_dev_close(d);
		errno = e; /* the open's own error, for the tests */
		return -1;
	}
	d->info.argsz = sizeof(d->info);
	if (ioctl(d->device, VFIO_DEVICE_GET_INFO, &d->info) < 0) {
		diag("VFIO_DEVICE_GET_INFO: %s", strerror(errno));
		goto fail;
	}
	for (i = 0; i < VFIO_PCI_NUM_REGIONS && i < d->info.num_regions; i++) {
		d->region[i].argsz = sizeof(d->region[i]);
		d->region[i].index = i;
		if (ioctl(d->device, VFIO_DEVICE_GET_REGION_INFO,
			  &d->region[i]) < 0)
			d->region[i].size = 0;
	}
	return 0;
fail:
	vfio_dev_close(d);
	return -1;
}

void vfio_dev_close(struct vfio_dev *d)
{
	if (d->bar2)
		munmap(d->bar2, d->bar2_size);
	d->bar2 = NULL;
	if (d->msi_fd >= 0)
		close(d->msi_fd);
	if (d->device >= 0)
		close(d->device);
	if (d->group >= 0)
		close(d->group);
	if (d->container >= 0)
		close(d->container);
	d->msi_fd = d->device = d->group = d->container = -1;
}

ssize_t vfio_region_read(struct vfio_dev *d, unsigned int index, uint64_t off,
			 void *buf, size_t len)
{
	return pread(d->device, buf, len,
		     (off_t)(d->region[index].offset + off));
}

ssize_t vfio_region_write(struct vfio_dev *d, unsigned int index, uint64_t off,
			  const void *buf, size_t len)
{
	return pwrite(d->device, buf, len,
		      (off_t)(d->region[index].offset + off));
}

/* Config space: 0 when all len bytes were read. */
int cfg_read(struct vfio_dev *d, uint64_t off, void *buf, size_t len)
{
	ssize_t n = vfio_region_read(d, VFIO_PCI_CONFIG_REGION_INDEX, off, buf,
				     len);

	return n == (ssize_t)len ? 0 : -1;
}

int cfg_write32(struct vfio_dev *d, uint64_t off, uint32_t v)
{
	ssize_t n = vfio_region_write(d, VFIO_PCI_CONFIG_REGION_INDEX, off, &v,
				      sizeof(v));

	return n == sizeof(v) ? 0 : -1;
}

/* A BAR0 register; all ones when the read fails (as a PCI master abort). */
uint32_t reg_read(struct vfio_dev *d, uint32_t reg)
{
	uint32_t v;

	if (vfio_region_read(d, VFIO_PCI_BAR0_REGION_INDEX, reg, &v,
			     sizeof(v)) != sizeof(v))
		return 0xffffffffu;
	return v;
}

int reg_write(struct vfio_dev *d, uint32_t reg, uint32_t v)
{
	return vfio_region_write(d, VFIO_PCI_BAR0_REGION_INDEX, reg, &v,
				 sizeof(v)) == sizeof(v)
		       ? 0
		       : -1;
}

/* A 64-byte string register, read 4 bytes at a time, NUL-terminated. */
void reg_string(struct vfio_dev *d, uint32_t reg, char *out)
{
	uint32_t i, v;

	for (i = 0; i < VGPU_REG_STRING_BYTES; i += 4) {
		v = reg_read(d, reg + i);
		memcpy(out + i, &v, 4);
	}
	out[VGPU_REG_STRING_BYTES - 1] = '\0';
}

/* Triggers of one vector of an IRQ index go to fd (-1: turn them off). */
int vfio_set_eventfd(struct vfio_dev *d, unsigned int index, int fd)
{
	char buf[sizeof(struct vfio_irq_set) + sizeof(int32_t)];
	struct vfio_irq_set *set = (struct vfio_irq_set *)buf;
	int32_t fd32 = fd;

	set->argsz = sizeof(buf);
	set->flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
	set->index = index;
	set->start = 0;
	set->count = 1;
	memcpy(set->data, &fd32, sizeof(fd32));
	return ioctl(d->device, VFIO_DEVICE_SET_IRQS, set);
}

/* An eventfd for the MSI vector, as QEMU sets one up for a guest. */
int vfio_msi_enable(struct vfio_dev *d)
{
	d->msi_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (d->msi_fd < 0)
		return -1;
	if (vfio_set_eventfd(d, VFIO_PCI_MSI_IRQ_INDEX, d->msi_fd) < 0) {
		close(d->msi_fd);
		d->msi_fd = -1;
		return -1;
	}
	return 0;
}

int vfio_map_bar2(struct vfio_dev *d)
{
	struct vfio_region_info *r = &d->region[VFIO_PCI_BAR2_REGION_INDEX];
	void *p;

	p = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, d->device,
		 (off_t)r->offset);
	if (p == MAP_FAILED)
		return -1;
	d->bar2 = p;
	d->bar2_size = r->size;
	return 0;
}

/* 1 when the eventfd fired within timeout_ms (its count is consumed),
 * 0 on timeout, -1 on error. */
int wait_eventfd(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	uint64_t v;
	int n;

	n = poll(&p, 1, timeout_ms);
	if (n <= 0)
		return n;
	if (read(fd, &v, sizeof(v)) != sizeof(v) && errno != EAGAIN)
		return -1;
	return 1;
}
