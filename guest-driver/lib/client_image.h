/* SPDX-License-Identifier: MIT */
/*
 * cuModuleLoadData and friends get a pointer without a length. The
 * worker needs the image's bytes, so the client finds its extent from
 * the container's own header: an ELF cubin (headers and sections), a
 * fatbin (its header's size), the fatbin wrapper nvcc emits (follow it),
 * or PTX text (up to its NUL).
 */
#ifndef VGPU_CLIENT_IMAGE_H
#define VGPU_CLIENT_IMAGE_H

#include <stddef.h>

#include <cuda.h>

#define CLIENT_FATBIN_MAGIC  0xBA55ED50u
#define CLIENT_FATBINC_MAGIC 0x466243B1u /* __fatBinC_Wrapper_t */

/*
 * The bytes to send for image: *start (image, or where a wrapper points)
 * and *size. CUDA_ERROR_INVALID_VALUE for NULL, CUDA_ERROR_INVALID_IMAGE
 * for something unrecognised, inconsistent or larger than
 * VGPU_MAX_IMAGE_BYTES.
 */
CUresult client_image_span(const void *image, const void **start, size_t *size);

/* True when the size bytes at image start like an ELF or a fatbin (a
 * file, as cuModuleLoad reads it); false for text such as PTX. */
int client_image_is_binary(const void *image, size_t size);

#endif /* VGPU_CLIENT_IMAGE_H */
