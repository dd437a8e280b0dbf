/* SPDX-License-Identifier: MIT */
/*
 * CRC32C (Castagnoli, as in iSCSI and ext4): the checksum of vGPU state
 * files (state_file.h). The SSE4.2 crc32 instruction when the CPU has it
 * (several GB/s), else slicing-by-8 tables (about 1 GB/s). No library.
 */
#ifndef VGPU_CRC32C_H
#define VGPU_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * Continue a CRC over n more bytes: crc32c(0, ...) starts one, and
 * crc32c(crc32c(0, a), b) == crc32c(0, a followed by b).
 */
uint32_t crc32c(uint32_t crc, const void *buf, size_t n);

#endif /* VGPU_CRC32C_H */
