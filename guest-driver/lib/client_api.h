/* SPDX-License-Identifier: MIT */
/*
 * What every cuda_*.c file needs: cuda.h, the export macro, and the
 * process's connection to its vGPU.
 *
 * The library is built with -fvisibility=hidden; exactly the driver API
 * (and the vgpu_client_library marker) carries VGPU_API. Including
 * cuda.h makes a definition of, say, cuMemAlloc define cuMemAlloc_v2,
 * the symbol a program compiled against cuda.h 13 references.
 */
#ifndef VGPU_CLIENT_API_H
#define VGPU_CLIENT_API_H

#include <cuda.h>

#define VGPU_API __attribute__((visibility("default")))

#endif /* VGPU_CLIENT_API_H */
