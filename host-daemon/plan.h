/* SPDX-License-Identifier: MIT */
/*
 * The SM-group planner: which SM groups, how much memory and which VA
 * window each vGPU gets. Pure bookkeeping (no I/O), so it is unit-tested
 * on its own (tests/unit/test_plan.c).
 *
 * Rules:
 *  - a request for N SMs takes ceil(N / min_partition) free groups of one
 *    GPU (lowest indices first); the real SM count is the sum of their
 *    sizes, reported back;
 *  - the SMs the split leaves over (H100: 132 - 15 x 8 = 12) form one
 *    more slice, group index ngroups, that a vGPU can only hold alone:
 *    a request takes it instead of regular groups when it fits and
 *    wastes fewer SMs (12 SMs asked: the leftover 12, not 2 x 8; 8 SMs
 *    asked: one group of 8), or when the regular groups do not fit;
 *  - groups are disjoint across vGPUs;
 *  - memory is accounted per GPU: the quotas of a GPU never exceed its
 *    memory minus a reserve for the driver, 5% of the memory or 1 GiB,
 *    whichever is less; quotas are rounded up to the GPU's allocation
 *    granularity;
 *  - VA windows: a vGPU in slot i gets [va_base + i TiB, + 1 TiB); the
 *    lowest free slot is taken;
 *  - names match [A-Za-z0-9_.-]{1,63} and are unique.
 */
#ifndef VGPU_PLAN_H
#define VGPU_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vgpu/control.h>
#include <vgpu/va.h>

/* At most PLAN_MAX_SLOTS vGPUs, fewer when their 1 TiB VA windows do
 * not all fit below PLAN_VA_TOP: the windows stay inside the range
 * every client keeps free for them (include/vgpu/va.h says why there).
 * The driver keeps 5% of a GPU's memory, at most 1 GiB. */
#define PLAN_MAX_SLOTS	 256
#define PLAN_VA_WINDOW	 VGPU_VA_WINDOW
#define PLAN_VA_BOTTOM	 VGPU_VA_FIRST
#define PLAN_VA_TOP	 VGPU_VA_END
#define PLAN_RESERVE_MAX (1ull << 30)
#define PLAN_GPU_ANY	 UINT32_MAX

struct plan_gpu {
	uint32_t sm_count;
	uint32_t min_partition;
	uint32_t ngroups;
	uint32_t group_sms[VGPU_MAX_SM_GROUPS];
	uint32_t leftover_sms; /* SMs in no group: slice ngroups; 0 = none */
	uint64_t groups_used;  /* bit i: group i belongs to a vGPU (bit
				  ngroups: the leftover slice) */
	uint64_t memory_total;
	uint64_t memory_reserve; /* kept for the driver */
	uint64_t memory_used;	 /* sum of the quotas on this GPU */
	uint64_t granularity;	 /* quotas are multiples of this */
};

/* What one vGPU holds. Lives in its VA slot. */
struct plan_grant {
	bool used;
	char name[VGPU_NAME_MAX];
	uint32_t gpu;
	uint32_t ngroups;
	uint32_t groups[VGPU_MAX_SM_GROUPS];
	uint32_t sms;	 /* sum of the groups' SMs */
	uint64_t memory; /* quota, rounded up to the granularity */
	uint32_t slot;
	uint64_t va_base;
	uint64_t va_size;
};

struct plan {
	uint32_t ngpus;
	struct plan_gpu gpus[VGPU_MAX_GPUS];
	uint64_t va_base;
	uint32_t nslots; /* VA windows that fit below PLAN_VA_TOP */
	struct plan_grant slots[PLAN_MAX_SLOTS];
};

struct plan_request {
	const char *name;
	uint32_t sms;
	uint64_t memory;
	uint32_t gpu;	      /* ordinal or PLAN_GPU_ANY */
	uint64_t gpu_exclude; /* bit g: GPU g may not be chosen by ANY */
};

/* Empty plan with VA windows from va_base, which must lie in
 * [PLAN_VA_BOTTOM, PLAN_VA_TOP - 1 TiB]; -1 and a sentence on error. */
int plan_init(struct plan *p, uint64_t va_base, char *err, size_t errlen);

/* Add the next GPU (its index must be p->ngpus); checks the info. */
int plan_add_gpu(struct plan *p, const struct vgpu_gpu_info *info, char *err,
		 size_t errlen);

/* True when name is a valid vGPU name; else a sentence in err. */
bool plan_name_valid(const char *name, char *err, size_t errlen);

/* Usable memory of a GPU: total minus the reserve. */
uint64_t plan_gpu_usable(const struct plan_gpu *g);

/* SMs in free groups of a GPU (and how many free regular groups);
 * the leftover slice counts in the SMs when it is free. */
uint32_t plan_gpu_free_sms(const struct plan_gpu *g, uint32_t *nfree);

/* True when the leftover slice of g exists and no vGPU holds it. */
bool plan_leftover_free(const struct plan_gpu *g);
/* The leftover slice's bit in a group mask (group index ngroups), or 0
 * when g has none. */
uint64_t plan_leftover_bit(const struct plan_gpu *g);

/*
 * Put back a grant exactly as recorded (vgpud's state file after a
 * restart): these groups of this GPU, this quota, the VA slot of
 * va_base. Checks everything (groups exist, are free and are either
 * regular or the leftover alone; memory fits; the slot is free) and
 * says what is wrong in err; -1 then, nothing changed.
 */
const struct plan_grant *plan_restore(struct plan *p, const char *name,
				      uint32_t gpu, uint32_t ngroups,
				      const uint32_t *groups, uint64_t memory,
				      uint64_t va_base, char *err,
				      size_t errlen);

/*
 * Reserve SM groups, memory and a VA slot for a new vGPU. On success
 * returns the grant (owned by the plan, valid until plan_release). On
 * refusal returns NULL and a sentence in err saying what is free.
 */
const struct plan_grant *plan_reserve(struct plan *p,
				      const struct plan_request *req, char *err,
				      size_t errlen);

/* The grant of a vGPU, or NULL. */
const struct plan_grant *plan_find(const struct plan *p, const char *name);

/* Return everything a vGPU holds; -1 when there is no such vGPU. */
int plan_release(struct plan *p, const char *name);

/* Human size "4.0 GiB" into buf (for messages). */
const char *plan_format_size(uint64_t bytes, char *buf, size_t len);

#endif /* VGPU_PLAN_H */
