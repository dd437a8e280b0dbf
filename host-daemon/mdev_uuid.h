/* SPDX-License-Identifier: MIT */
/*
 * mdev UUIDs as text (vgpud's state file and logs, vgpu-admin, sysfs):
 * "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lower case when written.
 *
 * The 16 bytes are in the order of the text (as mdev_ctl.h defines the
 * events' uuid[]): byte 0 is the first two hex digits. The admin protocol
 * and the state file carry the same.
 */
#ifndef VGPU_MDEV_UUID_H
#define VGPU_MDEV_UUID_H

#include <stdbool.h>
#include <stdint.h>

#define MDEV_UUID_TEXT 37 /* with the NUL */

void mdev_uuid_format(const uint8_t uuid[16], char out[MDEV_UUID_TEXT]);
/* 0 when text is exactly a UUID (either case), else -1. */
int mdev_uuid_parse(const char *text, uint8_t uuid[16]);
/* A random (version 4) UUID; 0 or -errno. */
int mdev_uuid_random(uint8_t uuid[16]);
bool mdev_uuid_is_zero(const uint8_t uuid[16]);

#endif /* VGPU_MDEV_UUID_H */
