/* SPDX-License-Identifier: MIT */
/*
 * Contexts are host-side objects only: every context of the process
 * talks to the same worker over the one ring, so a context carries no
 * more than its device, its flags and whether it is the primary one.
 */
#ifndef VGPU_CLIENT_CTX_H
#define VGPU_CLIENT_CTX_H

#include <cuda.h>

#include "client.h"
#include "client_registry.h"

struct client_ctx {
	struct client_obj obj;
	CUdevice dev;
	unsigned int flags;
	int primary;
	unsigned long long id; /* cuCtxGetId: unique in the process, from 1 */
};

/* The context at the top of this thread's stack, or NULL. */
CUcontext client_ctx_current(void);

/* A new registered context; NULL without memory. */
struct client_ctx *client_ctx_new(struct client *c, unsigned int flags,
				  int primary);

/* ctx (NULL: the current context) is a valid context of the process. */
CUresult client_ctx_check(CUcontext ctx, struct client **c);

/* The id of ctx (NULL: the current context), as cuCtxGetId gives it. */
CUresult client_ctx_id(CUcontext ctx, unsigned long long *id);

/* The device's primary context, made if need be, its references left
 * alone (cuda_context.c). */
CUresult client_primary_ctx(CUdevice dev, CUcontext *pctx);

/* The process's context preferences back to their defaults (a reset). */
void client_ctx_prefs_reset(void);

/* A valid CUfunc_cache preference, a valid CUsharedconfig
 * (cuda_context.c). */
int client_cache_config_ok(CUfunc_cache config);
int client_shared_config_ok(CUsharedconfig config);

#endif /* VGPU_CLIENT_CTX_H */
