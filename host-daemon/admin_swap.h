/* SPDX-License-Identifier: MIT */
/*
 * vgpu-admin's swap options and views (admin_swap.c; admin.h 1.4 SWAP).
 */
#ifndef VGPU_ADMIN_SWAP_H
#define VGPU_ADMIN_SWAP_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include <vgpu/admin.h>

#include "admin_cli.h"

/* What policy's --swap, --swap-idle and --swap-wait said. */
struct admin_swap_opts {
	bool given;
	uint32_t mode; /* enum vgpu_admin_swap_mode; 0: not given */
	char mode_text[16];
	uint32_t idle_ms;
	uint16_t wait_ms;
};

/* One of them at argv[*i]: 1 taken, 0 not one of them, or -exit code. */
int admin_swap_option(const struct admin_ctx *ctx, const char *cmd, int argc,
		      char **argv, int *i, struct admin_swap_opts *o);
/* Send them for vGPU name (or, name NULL, GPU gpu) and print the answer;
 * an exit code. */
int admin_swap_apply(const struct admin_ctx *ctx, const char *cmd,
		     const struct admin_swap_opts *o, const char *name,
		     uint32_t gpu);
/* show NAME: its swap lines (or a "swap" key in obj); nothing from a
 * vgpud before 1.4. */
void admin_swap_show(const struct admin_ctx *ctx, const char *name,
		     json_t *obj);
/* policy: every GPU's swap line and the swapped-out vGPUs printed
 * (print), or as an object; NULL before 1.4. */
json_t *admin_swap_view(const struct admin_ctx *ctx, bool print);
/* create --swap allowed|never|gpu into req's flags; an exit code. */
int admin_swap_create_option(const struct admin_ctx *ctx, const char *v,
			     struct vgpu_admin_request *req);

#endif /* VGPU_ADMIN_SWAP_H */
