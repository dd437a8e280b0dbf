/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for /dev/vgpu-ctl, so that vgpud's VM path can be tested
 * without vgpu_mdev.ko: fakectl_shim.so (LD_PRELOAD into vgpud) turns
 * open("/dev/vgpu-ctl") into two connections to the test (the socket in
 * $VGPU_FAKE_CTL), the first for events (read/poll go straight to it: one
 * struct vgpu_mdev_event per packet), the second for ioctls, forwarded as
 * below with their descriptors (SCM_RIGHTS) and answered by the test,
 * which plays the module.
 */
#ifndef VGPU_TEST_FAKECTL_H
#define VGPU_TEST_FAKECTL_H

#include <stdint.h>

#define FAKECTL_ENV	"VGPU_FAKE_CTL"
#define FAKECTL_EVENTS	'E' /* first byte on the event connection */
#define FAKECTL_IOCTLS	'I' /* ... on the ioctl connection */
#define FAKECTL_ARG_MAX 512
#define FAKECTL_MAX_FDS 2

/* shim -> test: one ioctl; arg follows, descriptors attached. */
struct fakectl_req {
	uint32_t req;  /* the ioctl number */
	uint32_t size; /* bytes of arg that follow */
};

/* test -> shim: the result; for _IOC_READ ioctls, arg follows (GET_BAR2:
 * with the memfd attached, which the shim puts in arg's fd). */
struct fakectl_rep {
	int32_t ret; /* 0 or -errno */
	uint32_t size;
};

#endif /* VGPU_TEST_FAKECTL_H */
