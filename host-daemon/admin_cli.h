/* SPDX-License-Identifier: MIT */
/*
 * vgpu-admin's shared pieces: the command context, exit codes and the
 * helpers that admin_main.c defines and the other command files
 * (admin_dyn.c: resize, move, top) use.
 */
#ifndef VGPU_ADMIN_CLI_H
#define VGPU_ADMIN_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include <vgpu/admin.h>

#define ADMIN_EXIT_OK	       0
#define ADMIN_EXIT_REFUSED     1
#define ADMIN_EXIT_USAGE       2
#define ADMIN_EXIT_UNREACHABLE 3

/* What every command gets: where vgpud is, and how to answer. */
struct admin_ctx {
	const char *run_dir;
	bool json;  /* --json: one JSON object on stdout */
	bool quiet; /* no messages about reaching vgpud (validate) */
};

/* ---- admin_main.c ---- */
void request_init(struct vgpu_admin_request *req, uint32_t op);
/* Print obj (consumed) on stdout, in a stable key order. */
void json_print(json_t *obj);
/* --json: the error object for an exit code other than 0. */
int json_fail(const struct admin_ctx *ctx, int code, const char *msg);
/* A usage error: what was wrong, and where the help is. Exit code 2. */
int usage_error(const struct admin_ctx *ctx, const char *cmd, const char *fmt,
		...) __attribute__((format(printf, 3, 4)));
/* A decimal number in [0, max]. 0 or -1. */
int parse_uint(const char *s, unsigned long long max, uint32_t *out);
/* One call with the usual answers to failure; 0 with resp filled. */
int call_ok(const struct admin_ctx *ctx, const struct vgpu_admin_request *req,
	    struct vgpu_admin_response *resp);
struct vgpu_admin_response *response_alloc(void);
/* A vGPU as its stable JSON object (documented in vgpu-admin(1)). */
json_t *entry_json(const struct vgpu_admin_entry *e);
const char *state_text(uint32_t state);
const char *backend_text(uint32_t backend);

/* ---- admin_dyn.c ---- */
extern const char admin_usage_resize[];
extern const char admin_usage_move[];
extern const char admin_usage_top[];
int cmd_resize(const struct admin_ctx *ctx, int argc, char **argv);
int cmd_move(const struct admin_ctx *ctx, int argc, char **argv);
int cmd_top(const struct admin_ctx *ctx, int argc, char **argv);

#endif /* VGPU_ADMIN_CLI_H */
