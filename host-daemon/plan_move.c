/* SPDX-License-Identifier: MIT */
/*
 * Suspend, resume and migration in the planner (see plan_move.h).
 *
 * The placement is the create's own (plan_reserve), tried on a copy of
 * the plan without the vGPU: the same rules and the same sentences about
 * what is free, from one piece of code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_move.h"

int plan_move_choose(const struct plan *p, const char *name, uint32_t gpu,
		     uint32_t not_gpu, uint32_t sms, uint64_t memory,
		     struct plan_move *out, char *err, size_t errlen)
{
	const struct plan_grant *gr = plan_find(p, name);
	struct plan_request req;
	struct plan *copy;
	uint32_t i;

	memset(out, 0, sizeof(*out));
	if (!gr) {
		snprintf(err, errlen, "no vGPU named '%s'", name);
		return -1;
	}
	if (gpu != PLAN_GPU_ANY && gpu == not_gpu) {
		snprintf(err, errlen, "vGPU %s is on GPU %u already", name,
			 gpu);
		return -1;
	}
	copy = malloc(sizeof(*copy));
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	*copy = *p;
	plan_release(copy, name);
	memset(&req, 0, sizeof(req));
	req.name = name;
	req.sms = sms;
	req.memory = memory;
	req.gpu = gpu;
	if (not_gpu < 64)
		req.gpu_exclude = 1ull << not_gpu;
	gr = plan_reserve(copy, &req, err, errlen);
	if (gr) {
		out->gpu = gr->gpu;
		out->ngroups = gr->ngroups;
		memcpy(out->groups, gr->groups,
		       gr->ngroups * sizeof(gr->groups[0]));
		out->sms = gr->sms;
		out->memory = gr->memory;
		for (i = 0; i < gr->ngroups; i++)
			if (gr->groups[i] < 64)
				out->mask |= 1ull << gr->groups[i];
	}
	free(copy);
	return gr ? 0 : -1;
}

int plan_move_hold(struct plan *p, const struct plan_move *m)
{
	struct plan_gpu *g;

	if (m->gpu >= p->ngpus)
		return -1;
	g = &p->gpus[m->gpu];
	if ((g->groups_used & m->mask) ||
	    m->memory > plan_gpu_usable(g) - g->memory_used)
		return -1;
	g->groups_used |= m->mask;
	g->memory_used += m->memory;
	return 0;
}

void plan_move_unhold(struct plan *p, const struct plan_move *m)
{
	struct plan_gpu *g;

	if (m->gpu >= p->ngpus)
		return;
	g = &p->gpus[m->gpu];
	g->groups_used &= ~m->mask;
	g->memory_used -= m->memory;
}

/* Give back a grant's groups and memory, keep the grant. */
static void grant_empty(struct plan *p, struct plan_grant *gr)
{
	struct plan_gpu *g = &p->gpus[gr->gpu];
	uint32_t i;

	for (i = 0; i < gr->ngroups; i++)
		if (gr->groups[i] < 64)
			g->groups_used &= ~(1ull << gr->groups[i]);
	g->memory_used -= gr->memory;
	gr->ngroups = 0;
	memset(gr->groups, 0, sizeof(gr->groups));
	gr->sms = 0;
	gr->memory = 0;
}

int plan_move_finish(struct plan *p, const char *name,
		     const struct plan_move *m)
{
	struct plan_grant *gr = (struct plan_grant *)plan_find(p, name);

	if (!gr)
		return -1;
	grant_empty(p, gr);
	gr->gpu = m->gpu;
	gr->ngroups = m->ngroups;
	memcpy(gr->groups, m->groups, m->ngroups * sizeof(m->groups[0]));
	gr->sms = m->sms;
	gr->memory = m->memory;
	return 0;
}

int plan_suspend(struct plan *p, const char *name)
{
	struct plan_grant *gr = (struct plan_grant *)plan_find(p, name);

	if (!gr)
		return -1;
	grant_empty(p, gr);
	return 0;
}

const struct plan_grant *plan_restore_suspended(struct plan *p,
						const char *name, uint32_t gpu,
						uint64_t va_base, char *err,
						size_t errlen)
{
	struct plan_grant *gr;
	uint64_t slot;

	if (!plan_name_valid(name, err, errlen))
		return NULL;
	if (plan_find(p, name)) {
		snprintf(err, errlen, "vGPU '%s' appears twice", name);
		return NULL;
	}
	if (gpu >= p->ngpus) {
		snprintf(err, errlen,
			 "vGPU %s was on GPU %u, but this host has %u GPU%s",
			 name, gpu, p->ngpus, p->ngpus == 1 ? "" : "s");
		return NULL;
	}
	if (va_base < p->va_base || (va_base - p->va_base) % PLAN_VA_WINDOW ||
	    (slot = (va_base - p->va_base) / PLAN_VA_WINDOW) >= p->nslots ||
	    p->slots[slot].used) {
		snprintf(err, errlen,
			 "vGPU %s has VA base 0x%llx, which is not a free "
			 "window start from 0x%llx",
			 name, (unsigned long long)va_base,
			 (unsigned long long)p->va_base);
		return NULL;
	}
	gr = &p->slots[slot];
	memset(gr, 0, sizeof(*gr));
	gr->used = true;
	snprintf(gr->name, sizeof(gr->name), "%s", name);
	gr->gpu = gpu;
	gr->slot = (uint32_t)slot;
	gr->va_base = va_base;
	gr->va_size = PLAN_VA_WINDOW;
	return gr;
}
