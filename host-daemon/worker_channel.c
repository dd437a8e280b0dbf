/* SPDX-License-Identifier: MIT */
/*
 * VGPU_CTL_CHANNEL (include/vgpu/control.h): the checks a channel must
 * pass before the worker maps anything of it. A channel is a VM's client:
 * its ring lies in a window of the mdev's BAR2 memfd, its doorbells are
 * eventfds that vgpu_mdev.ko signals and watches, and its socket only
 * says whether vgpud still wants it.
 *
 * vgpud is trusted, but the memfd is also the guest's memory and a wrong
 * window or a wrong kind of descriptor would make the worker fault or
 * block; so every property the serving thread relies on is checked here,
 * once, and a refusal names what was wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vgpu/pci.h>

#include "worker.h"

/* What a descriptor number refers to, as /proc/self/fd shows it. */
static int fd_link(int fd, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, buf, len - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

bool worker_fd_is_eventfd(int fd)
{
	char link[64];

	return fd >= 0 && fd_link(fd, link, sizeof(link)) == 0 &&
	       !strcmp(link, "anon_inode:[eventfd]");
}

/* A connected AF_UNIX SOCK_SEQPACKET socket (vgpud's socketpair). */
static bool fd_is_seqpacket(int fd)
{
	int type = 0, domain = 0;
	socklen_t len = sizeof(type), dlen = sizeof(domain);

	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
	       getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) == 0 &&
	       type == SOCK_SEQPACKET && domain == AF_UNIX;
}

bool worker_channel_sock_ok(int fd)
{
	return fd >= 0 && fd_is_seqpacket(fd);
}

/*
 * The window [off, off + size) of the memfd: page-aligned, a page
 * multiple, at most one channel stride, room for the default queues and
 * WORKER_CHANNEL_MIN_DATA of data, and inside a memfd sealed against
 * shrinking (else a truncate would make the worker's accesses SIGBUS).
 */
static int check_window(const struct vgpu_ctl_channel *ch, int memfd,
			struct ring_layout *lay, char *why, size_t len)
{
	const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t off = ch->ring_offset, size = ch->ring_size;
	struct stat st;
	int seals;

	ring_layout_compute(lay, VGPU_RING_SQ_ENTRIES, VGPU_RING_CQ_ENTRIES, 0);
	if (off % page) {
		snprintf(why, len, "ring_offset 0x%llx is not page-aligned",
			 (unsigned long long)off);
		return -EINVAL;
	}
	if (!size || size % page) {
		snprintf(why, len, "ring_size %llu is not a multiple of %llu",
			 (unsigned long long)size, (unsigned long long)page);
		return -EINVAL;
	}
	if (size > VGPU_PCI_CHANNEL_STRIDE) {
		snprintf(why, len,
			 "ring_size %llu is larger than a channel (%u bytes)",
			 (unsigned long long)size, VGPU_PCI_CHANNEL_STRIDE);
		return -EINVAL;
	}
	if (size < lay->data_offset + WORKER_CHANNEL_MIN_DATA) {
		snprintf(why, len,
			 "ring_size %llu leaves less than %u bytes of data "
			 "area after the queues (%llu bytes)",
			 (unsigned long long)size, WORKER_CHANNEL_MIN_DATA,
			 (unsigned long long)lay->data_offset);
		return -EINVAL;
	}
	if (fstat(memfd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, len, "the ring descriptor is not a memfd");
		return -EINVAL;
	}
	seals = fcntl(memfd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
		snprintf(why, len,
			 "the ring memfd is not sealed against shrinking "
			 "(F_SEAL_SHRINK)");
		return -EINVAL;
	}
	if (off > (uint64_t)st.st_size || size > (uint64_t)st.st_size - off) {
		snprintf(why, len,
			 "ring window 0x%llx + %llu ends beyond the memfd "
			 "(%lld bytes)",
			 (unsigned long long)off, (unsigned long long)size,
			 (long long)st.st_size);
		return -EINVAL;
	}
	if (off > (uint64_t)LLONG_MAX) {
		snprintf(why, len, "ring_offset does not fit an off_t");
		return -EINVAL;
	}
	ring_layout_compute(lay, VGPU_RING_SQ_ENTRIES, VGPU_RING_CQ_ENTRIES,
			    size - lay->data_offset);
	return 0;
}

int worker_channel_check(const struct vgpu_ctl_channel *ch,
			 const int fds[WORKER_CHANNEL_FDS],
			 struct ring_layout *lay, char *why, size_t len)
{
	if (!worker_channel_sock_ok(fds[0])) {
		snprintf(why, len,
			 "descriptor 1 is not a SOCK_SEQPACKET Unix socket");
		return -ENOTSOCK;
	}
	if (!worker_fd_is_eventfd(fds[2])) {
		snprintf(why, len,
			 "descriptor 3 (submit doorbell) is not an eventfd");
		return -EBADF;
	}
	if (!worker_fd_is_eventfd(fds[3])) {
		snprintf(why, len,
			 "descriptor 4 (completion doorbell) is not an "
			 "eventfd");
		return -EBADF;
	}
	return check_window(ch, fds[1], lay, why, len);
}
