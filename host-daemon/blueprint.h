/* SPDX-License-Identifier: MIT */
/*
 * Blueprints: the file an operator writes to compose a vGPU (format in
 * blueprints/README.md), parsed with libyaml into a trusted struct.
 *
 * Both vgpu-admin (validate, create -f) and vgpud's tests use this parser.
 * Every error names the file, the line and column, and the field:
 *   "blueprints/small.yaml:7:10: field 'memory': '4Q' is not a size
 *    (use bytes or a K, M, G or T suffix)"
 * Unknown fields, and fields that a later issue will act on but this build
 * does not, are errors: a blueprint is never half-understood.
 */
#ifndef VGPU_BLUEPRINT_H
#define VGPU_BLUEPRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vgpu/protocol.h>

#define BLUEPRINT_VERSION      1 /* the `version:` this parser reads */
#define BLUEPRINT_CONSUMER_MAX 64

enum vgpu_isolation {
	VGPU_ISOLATION_SHARED = 0,    /* MPS client: concurrent, shared fate */
	VGPU_ISOLATION_EXCLUSIVE = 1, /* outside MPS: own fault domain */
};

/* A vGPU's scheduling priority (the values of admin.h's). */
enum blueprint_priority {
	BLUEPRINT_PRIO_DEFAULT = 0, /* not given: normal */
	BLUEPRINT_PRIO_LOW = 1,
	BLUEPRINT_PRIO_NORMAL = 2,
	BLUEPRINT_PRIO_HIGH = 3,
};

/* Whether vgpud may swap the vGPU out when idle (docs/DESIGN.md "Swap"). */
enum blueprint_swap {
	BLUEPRINT_SWAP_GPU = 0,	    /* not given: as its GPU says */
	BLUEPRINT_SWAP_NEVER = 1,   /* never */
	BLUEPRINT_SWAP_ALLOWED = 2, /* allowed */
};

enum blueprint_consumer_kind {
	BLUEPRINT_CONSUMER_DEFAULT = 0, /* none given: the creating admin */
	BLUEPRINT_CONSUMER_USER = 1,
	BLUEPRINT_CONSUMER_GROUP = 2,
};

struct blueprint {
	char name[VGPU_NAME_MAX];
	uint32_t consumer_kind; /* enum blueprint_consumer_kind */
	char consumer[BLUEPRINT_CONSUMER_MAX]; /* user or group name/number */
	int32_t gpu;	    /* device index, -1 = any GPU with room */
	uint32_t sms;	    /* SMs asked for (0 when slices is given) */
	uint32_t slices;    /* SM groups asked for (0 when sms is given) */
	uint64_t memory;    /* bytes */
	uint32_t isolation; /* enum vgpu_isolation */
	uint32_t kernel_time_limit_ms; /* 0 = none; default 10000 */
	uint32_t save_interval_ms;     /* recovery.save_interval; 0 = none */
	/* scheduling policy (docs/DESIGN.md "Scheduling"); 0 = the default */
	uint32_t min_sms, max_sms; /* limits of its size */
	uint32_t weight;	   /* its share against others' */
	uint32_t priority;	   /* enum blueprint_priority */
	uint32_t swap;		   /* enum blueprint_swap */
};

/* Parse and check one blueprint file. 0 on success; -1 with err set. */
int blueprint_parse_file(const char *path, struct blueprint *bp, char *err,
			 size_t errlen);

/* The same for text in memory; origin names it in errors. */
int blueprint_parse_text(const char *text, size_t len, const char *origin,
			 struct blueprint *bp, char *err, size_t errlen);

/* "shared" / "exclusive" */
const char *blueprint_isolation_name(uint32_t isolation);

#endif /* VGPU_BLUEPRINT_H */
