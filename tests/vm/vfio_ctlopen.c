/* SPDX-License-Identifier: MIT */
/*
 * Who may hold /dev/vgpu-ctl (mdev/README.md: 0600, CAP_SYS_ADMIN at
 * open, one holder at a time):
 *
 *   vfio_user ctlopen AS   opens it as AS and prints "opened" or the
 *                          errno's name (EBUSY, EACCES, EPERM, ...); AS is
 *                          root, nobody (uid and gid 65534, no groups) or
 *                          nocap (root without CAP_SYS_ADMIN); exit 2
 *                          when it could not become AS
 *   vfio_user ctlhold DIR  holds it (DIR/holding), and when DIR/holding.go
 *                          appears lets go and unloads vgpu_mdev at once
 *                          (delete_module right after the close), so a
 *                          running vgpud that waits for the device never
 *                          gets it in between; TAP lines
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "vfio_dev.h"
#include "vgpu/mdev_ctl.h"

#define CTL_PATH "/dev/" VGPU_MDEV_CTL_NAME

static const char *errno_name(int e)
{
	static char buf[32];

	switch (e) {
	case EBUSY:
		return "EBUSY";
	case EACCES:
		return "EACCES";
	case EPERM:
		return "EPERM";
	case ENOENT:
		return "ENOENT";
	case ENODEV:
		return "ENODEV";
	case ENXIO:
		return "ENXIO";
	}
	snprintf(buf, sizeof(buf), "errno %d", e);
	return buf;
}

/* Drops CAP_SYS_ADMIN from this process's effective and permitted sets
 * (it stays root, so the file mode still lets it open). */
static int drop_sys_admin(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct c[_LINUX_CAPABILITY_U32S_3];

	memset(c, 0, sizeof(c));
	if (syscall(SYS_capget, &h, c) < 0)
		return -1;
	c[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
	c[CAP_TO_INDEX(CAP_SYS_ADMIN)].permitted &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
	c[CAP_TO_INDEX(CAP_SYS_ADMIN)].inheritable &=
		~CAP_TO_MASK(CAP_SYS_ADMIN);
	return (int)syscall(SYS_capset, &h, c);
}

int ctlopen_run(const char *as)
{
	int fd;

	if (!strcmp(as, "nobody")) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 ||
		    setuid(65534) < 0) {
			fprintf(stderr, "cannot become nobody: %s\n",
				strerror(errno));
			return 2;
		}
	} else if (!strcmp(as, "nocap")) {
		if (drop_sys_admin() < 0) {
			fprintf(stderr, "cannot drop CAP_SYS_ADMIN: %s\n",
				strerror(errno));
			return 2;
		}
	} else if (strcmp(as, "root")) {
		fprintf(stderr, "ctlopen: root, nobody or nocap\n");
		return 2;
	}
	fd = open(CTL_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("%s\n", errno_name(errno));
		return 0;
	}
	close(fd);
	printf("opened\n");
	return 0;
}

int ctlhold_run(const char *dir)
{
	int fd = open(CTL_PATH, O_RDWR | O_CLOEXEC), e;
	long r;

	if (!tap(fd >= 0, "another process holds %s (%s)", CTL_PATH,
		 fd >= 0 ? "opened" : errno_name(errno)))
		return 1;
	if (sync_point(dir, "holding") < 0) {
		close(fd);
		return 1;
	}
	close(fd); /* the release runs before close returns */
	r = syscall(SYS_delete_module, "vgpu_mdev", O_NONBLOCK);
	e = errno;
	return tap(r == 0,
		   "it lets go and unloads vgpu_mdev at once (delete_module: "
		   "%s)",
		   r == 0 ? "0" : errno_name(e))
		       ? 0
		       : 1;
}
