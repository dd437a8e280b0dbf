/* SPDX-License-Identifier: MIT */
/* mdev instances through sysfs, for vgpu-admin (admin_mdev.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "admin_mdev.h"

static const char *sysfs_root(void)
{
	const char *r = getenv("VGPU_SYSFS_ROOT");

	return r && *r ? r : "/sys";
}

int admin_mdev_type_dir(const char *type, char *dir, size_t len, char *err,
			size_t errlen)
{
	char bus[512], types[1024], suffix[64];
	struct dirent *p, *t;
	DIR *pd, *td;
	size_t sl;
	int found = 0;

	snprintf(bus, sizeof(bus), "%s/class/mdev_bus", sysfs_root());
	snprintf(suffix, sizeof(suffix), "-%s", type);
	sl = strlen(suffix);
	pd = opendir(bus);
	if (!pd) {
		snprintf(err, errlen, "%s: %s (is vgpu_mdev.ko loaded?)", bus,
			 strerror(errno));
		return -1;
	}
	while ((p = readdir(pd))) {
		if (p->d_name[0] == '.')
			continue;
		snprintf(types, sizeof(types), "%s/%s/mdev_supported_types",
			 bus, p->d_name);
		td = opendir(types);
		while (td && (t = readdir(td))) {
			size_t n = strlen(t->d_name);

			if (t->d_name[0] == '.' ||
			    (strcmp(t->d_name, type) &&
			     (n <= sl || strcmp(t->d_name + n - sl, suffix))))
				continue;
			if (found++) {
				snprintf(err, errlen,
					 "more than one mdev parent has a type "
					 "'%s' (%s and %s/%s)",
					 type, dir, types, t->d_name);
				closedir(td);
				closedir(pd);
				return -1;
			}
			snprintf(dir, len, "%s/%s", types, t->d_name);
		}
		if (td)
			closedir(td);
	}
	closedir(pd);
	if (!found) {
		snprintf(err, errlen,
			 "no mdev parent in %s has a type '%s' (is "
			 "vgpu_mdev.ko loaded?)",
			 bus, type);
		return -1;
	}
	return 0;
}

bool admin_mdev_exists(const char *uuid)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/bus/mdev/devices/%s", sysfs_root(),
		 uuid);
	return lstat(path, &st) == 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Write text to path in a child, so that a write the kernel keeps waiting
 * cannot hang vgpu-admin: after timeout_s the child is killed (it goes
 * once the kernel lets the write return) and the caller hears why. The
 * child's exit status is the write's errno.
 */
static int write_bounded(const char *path, const char *text, int timeout_s,
			 char *err, size_t errlen)
{
	int64_t end = now_ms() + (int64_t)timeout_s * 1000;
	int st = 0, fd;
	pid_t pid, w;
	ssize_t n;

	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(errno & 0xff ? errno & 0xff : 1);
		n = write(fd, text, strlen(text));
		_exit(n == (ssize_t)strlen(text) ? 0
		      : n < 0 ? (errno & 0xff ? errno & 0xff : 1)
			      : EIO);
	}
	while ((w = waitpid(pid, &st, WNOHANG)) == 0 && now_ms() < end)
		usleep(20000);
	if (w == 0) {
		kill(pid, SIGKILL);
		snprintf(err, errlen,
			 "writing %s did not finish within %d s (the kernel "
			 "still waits; see dmesg)",
			 path, timeout_s);
		return -1;
	}
	if (w < 0 || !WIFEXITED(st)) {
		snprintf(err, errlen, "writing %s: the writer died", path);
		return -1;
	}
	if (WEXITSTATUS(st)) {
		snprintf(err, errlen, "writing %s: %s", path,
			 strerror(WEXITSTATUS(st)));
		return -1;
	}
	return 0;
}

int admin_mdev_create(const char *type_dir, const char *uuid, int timeout_s,
		      char *err, size_t errlen)
{
	char path[1100];

	snprintf(path, sizeof(path), "%s/create", type_dir);
	return write_bounded(path, uuid, timeout_s, err, errlen);
}

int admin_mdev_remove(const char *uuid, int timeout_s, char *err, size_t errlen)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/bus/mdev/devices/%s/remove",
		 sysfs_root(), uuid);
	return write_bounded(path, "1", timeout_s, err, errlen);
}
