/* SPDX-License-Identifier: MIT */
/*
 * The pci transport (see client_transport.h), inside a VM: one open of
 * /dev/vgpuN (vgpu_guest.ko, include/vgpu/guest_uapi.h) is one channel of
 * the vGPU. Its ring is the channel's window of BAR2, mapped from the
 * file; the same file is both doorbells (write 8 bytes: submit; poll for
 * POLLIN and read 8 bytes: completion; POLLERR/POLLHUP: the device failed
 * or went away). There is no socket: liveness comes from the file, and
 * host regions are not offered (the worker answers NOT_SUPPORTED).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vgpu/guest_uapi.h>
#include <vgpu/protocol.h>

#include "client_transport.h"

const char *client_transport_pick_device(const char *socket_env,
					 const char *device_env)
{
	if (socket_env && *socket_env)
		return NULL;
	if (device_env && *device_env)
		return device_env;
	if (access(CLIENT_DEFAULT_DEVICE, F_OK) == 0)
		return CLIENT_DEFAULT_DEVICE;
	return NULL;
}

/* One sentence for a failed open() of the device (guest_uapi.h's errors). */
static void open_error(const char *path, int e, char *err, size_t errlen)
{
	switch (e) {
	case ENOENT:
	case ENXIO:
	case ENODEV:
		snprintf(err, errlen,
			 "no vGPU device at %s (%s): is vgpu_guest.ko loaded?",
			 path, strerror(e));
		break;
	case EBUSY:
		snprintf(err, errlen,
			 "every channel of the vGPU at %s is in use", path);
		break;
	case EIO:
		snprintf(err, errlen,
			 "the vGPU at %s is unavailable (its host daemon is "
			 "gone or the host failed to open a channel)",
			 path);
		break;
	case ETIMEDOUT:
		snprintf(err, errlen,
			 "the host did not open a channel of %s within %d s",
			 path, VGPU_GUEST_OPEN_TIMEOUT_MS / 1000);
		break;
	case EAGAIN:
		snprintf(err, errlen, "the vGPU at %s is not composed yet",
			 path);
		break;
	case EPROTONOSUPPORT:
		snprintf(err, errlen,
			 "the vGPU at %s speaks another protocol major than "
			 "this library (%u)",
			 path, VGPU_PROTO_MAJOR);
		break;
	default:
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
		break;
	}
}

/*
 * The device's description and the checks on it: our protocol major,
 * the vGPU the caller named (if any), a sane ring window.
 */
static int check_info(const char *path, struct vgpu_guest_info *info,
		      const char *name, char *err, size_t errlen)
{
	const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	info->gpu_name[sizeof(info->gpu_name) - 1] = '\0';
	info->vgpu_name[sizeof(info->vgpu_name) - 1] = '\0';
	if (info->version >> 16 != VGPU_PROTO_MAJOR) {
		snprintf(err, errlen,
			 "the vGPU at %s speaks protocol %u.%u, this library "
			 "%u.%u",
			 path, info->version >> 16, info->version & 0xffff,
			 VGPU_PROTO_MAJOR, VGPU_PROTO_MINOR);
		return -1;
	}
	if (name && *name && strcmp(name, info->vgpu_name) != 0) {
		snprintf(err, errlen,
			 "%s is vGPU '%s', not '%s' (VGPU; unset it, or set "
			 "VGPU_DEVICE to the right device)",
			 path, info->vgpu_name, name);
		return -1;
	}
	if (info->ring_size < page || info->ring_size % page ||
	    info->ring_size > CLIENT_MAX_RING_BYTES) {
		snprintf(err, errlen, "%s offers a ring window of %llu bytes",
			 path, (unsigned long long)info->ring_size);
		return -1;
	}
	return 0;
}

/*
 * Maps the channel's window and keeps the part the worker laid out (the
 * ring header's total_size, when it is a smaller, sane size): the ring
 * engine wants the mapping to be exactly the ring. A header that says
 * more than the window is left for client_ring_init() to report.
 */
static int map_window(struct client_transport *t, int fd, const char *path,
		      uint64_t window, char *err, size_t errlen)
{
	const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t total, keep;
	void *map;

	map = mmap(NULL, window, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		snprintf(err, errlen, "cannot map the ring of %s: %s", path,
			 strerror(errno));
		return -1;
	}
	t->map = map;
	t->map_size = window;
	memcpy(&total,
	       (char *)map + offsetof(struct vgpu_ring_header, total_size),
	       sizeof(total));
	if (total >= page && total < window) {
		keep = (total + page - 1) & ~(page - 1);
		if (keep < window)
			munmap((char *)map + keep, window - keep);
		t->map_size = total;
	}
	return 0;
}

int client_transport_open_pci(struct client_transport *t, const char *path,
			      const char *name, char *err, size_t errlen)
{
	struct vgpu_guest_info info;
	struct stat st;
	int fd;

	memset(t, 0, sizeof(*t));
	t->sock = t->submit_efd = t->complete_efd = -1;
	do
		fd = open(path, O_RDWR | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		open_error(path, errno, err, errlen);
		return -1;
	}
	if (fstat(fd, &st) || !S_ISCHR(st.st_mode)) {
		snprintf(err, errlen, "%s is not a vGPU device", path);
		goto fail;
	}
	memset(&info, 0, sizeof(info));
	if (ioctl(fd, VGPU_GUEST_IOC_INFO, &info)) {
		snprintf(err, errlen, "%s is not a vGPU device (%s)", path,
			 strerror(errno));
		goto fail;
	}
	t->minor = info.version & 0xffff;
	if (check_info(path, &info, name, err, errlen))
		goto fail;
	if (map_window(t, fd, path, info.ring_size, err, errlen))
		goto fail;
	t->submit_efd = fd;
	t->complete_efd = fd;
	memcpy(t->vgpu_name, info.vgpu_name, sizeof(t->vgpu_name));
	return 0;

fail:
	close(fd); /* the channel is closed with its last reference */
	return -1;
}
