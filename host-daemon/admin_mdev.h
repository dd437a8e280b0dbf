/* SPDX-License-Identifier: MIT */
/*
 * vgpu-admin's side of the VM path: mdev instances through sysfs. The
 * writes that create and remove an instance block in the kernel until
 * vgpud has answered (create) or the device is released (remove), so
 * they run in a child process that vgpu-admin waits for with a deadline.
 *
 * The sysfs root is $VGPU_SYSFS_ROOT, or /sys (tests point it at a tree
 * of their own).
 */
#ifndef VGPU_ADMIN_MDEV_H
#define VGPU_ADMIN_MDEV_H

#include <stdbool.h>
#include <stddef.h>

/* The directory of the mdev type whose sysfs name is type ("custom": a
 * directory ".../mdev_supported_types/<driver>-custom") of the one mdev
 * parent that has it. 0, or -1 with a sentence in err. */
int admin_mdev_type_dir(const char *type, char *dir, size_t len, char *err,
			size_t errlen);

/* Whether the mdev device UUID exists (/sys/bus/mdev/devices/UUID). */
bool admin_mdev_exists(const char *uuid);

/* echo UUID > DIR/create, waiting at most timeout_s. 0 or -1, err. */
int admin_mdev_create(const char *type_dir, const char *uuid, int timeout_s,
		      char *err, size_t errlen);

/* echo 1 > /sys/bus/mdev/devices/UUID/remove, the same way. */
int admin_mdev_remove(const char *uuid, int timeout_s, char *err,
		      size_t errlen);

#endif /* VGPU_ADMIN_MDEV_H */
