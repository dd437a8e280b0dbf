/* SPDX-License-Identifier: GPL-2.0 */
/*
 * For the kernel build of vgpu_guest.ko only: include/vgpu/protocol.h is
 * shared with user space and includes <stdint.h>, which a kernel build
 * does not have. The kernel's <linux/types.h> defines the same fixed-width
 * names (uint32_t, int32_t, ...), so this file stands in for the C
 * library's header and the driver includes the one protocol definition.
 */
#ifndef VGPU_KMOD_SHIM_STDINT_H
#define VGPU_KMOD_SHIM_STDINT_H

#include <linux/types.h>

#endif /* VGPU_KMOD_SHIM_STDINT_H */
