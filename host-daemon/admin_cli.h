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
/* One request, one response: ADMIN_EXIT_OK with *resp filled (whatever
 * its status), or an exit code with the reason printed (unless quiet). */
int admin_call(const struct admin_ctx *ctx,
	       const struct vgpu_admin_request *req,
	       struct vgpu_admin_response *resp);
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

/* ---- admin_policy.c ---- */
struct blueprint;
extern const char admin_usage_policy[];
int cmd_policy(const struct admin_ctx *ctx, int argc, char **argv);
/* create's --weight/--min-sms/--max-sms/--priority at argv[*i]: 1 taken
 * (req filled, CREATE_POLICY set), 0 not one of them, or -exit code. */
int admin_policy_option(const struct admin_ctx *ctx, const char *cmd, int argc,
			char **argv, int *i, struct vgpu_admin_request *req);
/* Which of opts[0..n) is at argv[*i] ("--opt VALUE" or "--opt=VALUE"):
 * its index with *value set, n when none is, or -exit code (no value). */
int admin_opt_pick(const struct admin_ctx *ctx, const char *cmd, int argc,
		   char **argv, int *i, const char *const *opts, int n,
		   const char **value);
/* A blueprint's policy fields into a CREATE or PLAN_CHECK. */
void admin_policy_from_blueprint(const struct blueprint *bp,
				 struct vgpu_admin_request *req);
/* show NAME: its policy lines (or, obj given, a "policy" key in obj);
 * nothing when vgpud has no scheduler (before 1.3). */
void admin_policy_show(const struct admin_ctx *ctx, const char *name,
		       json_t *obj);
/* top: the policy table printed (print), or as an object; NULL when
 * vgpud has no scheduler. */
json_t *admin_policy_top(const struct admin_ctx *ctx, bool print);

/* ---- admin_state.c ---- */
extern const char admin_usage_suspend[];
extern const char admin_usage_resume[];
extern const char admin_usage_migrate[];
int cmd_suspend(const struct admin_ctx *ctx, int argc, char **argv);
int cmd_resume(const struct admin_ctx *ctx, int argc, char **argv);
int cmd_migrate(const struct admin_ctx *ctx, int argc, char **argv);
/* --save-interval SECONDS into a CREATE (CREATE_RECOVERY). 0 or -1. */
int admin_save_interval(const char *v, struct vgpu_admin_request *req);

#endif /* VGPU_ADMIN_CLI_H */
