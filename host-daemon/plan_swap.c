/* SPDX-License-Identifier: MIT */
/*
 * Which idle vGPUs to swap out (see plan_swap.h). Every question "does it
 * fit now?" is the planner's own (plan_reserve for a create,
 * plan_move_choose for a resume), asked of a copy of the plan in which
 * the victims are suspended (plan_suspend): the same rules and the same
 * sentences about what is free as a create or a resume without swapping.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_move.h"
#include "plan_swap.h"

/* Whether need fits in q on GPU gpu; err says why not. */
static bool fits(const struct plan *q, const struct plan_swap_need *need,
		 uint32_t gpu, char *err, size_t errlen)
{
	struct plan_request req;
	struct plan_move m;
	struct plan *copy;
	bool ok;

	if (need->existing)
		return !plan_move_choose(q, need->name, gpu, PLAN_GPU_ANY,
					 need->sms, need->memory, &m, err,
					 errlen);
	copy = malloc(sizeof(*copy));
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	*copy = *q;
	memset(&req, 0, sizeof(req));
	req.name = need->name;
	req.sms = need->sms;
	req.memory = need->memory;
	req.gpu = gpu;
	req.gpu_exclude = need->gpu_exclude;
	ok = plan_reserve(copy, &req, err, errlen) != NULL;
	free(copy);
	return ok;
}

/* Longest idle first; then the larger quota; then the name. */
struct order {
	const struct plan_swap_cand *c;
	uint64_t memory;
	uint32_t idx;
};

static int order_cmp(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->c->idle_ms != y->c->idle_ms)
		return x->c->idle_ms > y->c->idle_ms ? -1 : 1;
	if (x->memory != y->memory)
		return x->memory > y->memory ? -1 : 1;
	return strcmp(x->c->name, y->c->name);
}

/* q = p with the chosen victims (but skip) suspended. */
static void suspend_all(struct plan *q, const struct plan *p,
			const struct order *o, const bool *chosen, uint32_t n,
			uint32_t skip)
{
	uint32_t i;

	*q = *p;
	for (i = 0; i < n; i++)
		if (chosen[i] && i != skip)
			plan_suspend(q, o[i].c->name);
}

/*
 * On GPU gpu: victims (o's order) until need fits, then the ones it
 * fits without dropped again. true with chosen[] set.
 */
static bool choose_on(const struct plan *p, const struct order *o, uint32_t n,
		      const struct plan_swap_need *need, uint32_t gpu,
		      bool *chosen, struct plan *q, char *err, size_t errlen)
{
	uint32_t i, k = 0;
	bool ok = false;

	memset(chosen, 0, n * sizeof(*chosen));
	*q = *p;
	for (i = 0; i < n && !ok; i++) {
		const struct plan_grant *g = plan_find(p, o[i].c->name);

		if (!g || g->gpu != gpu || !g->ngroups || k == PLAN_SWAP_MAX)
			continue;
		chosen[i] = true;
		k++;
		plan_suspend(q, o[i].c->name);
		ok = fits(q, need, gpu, err, errlen);
	}
	if (!ok)
		return false;
	for (i = n; i-- > 0;) {
		if (!chosen[i])
			continue;
		suspend_all(q, p, o, chosen, n, i);
		if (fits(q, need, gpu, err, errlen))
			chosen[i] = false;
	}
	return true;
}

int plan_swap_choose(const struct plan *p, const struct plan_swap_cand *c,
		     uint32_t n, const struct plan_swap_need *need,
		     struct plan_swap_choice *out, char *err, size_t errlen)
{
	struct order *o = NULL;
	struct plan *q = NULL;
	bool *chosen = NULL;
	uint32_t g, first, last, i;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (need->gpu != PLAN_GPU_ANY && need->gpu >= p->ngpus) {
		snprintf(err, errlen, "there is no GPU %u", need->gpu);
		return -1;
	}
	first = need->gpu == PLAN_GPU_ANY ? 0 : need->gpu;
	last = need->gpu == PLAN_GPU_ANY ? p->ngpus : need->gpu + 1;
	/* it may fit as it is (something was freed meanwhile) */
	for (g = first; g < last; g++) {
		if (need->gpu == PLAN_GPU_ANY && g < 64 &&
		    (need->gpu_exclude & (1ull << g)))
			continue;
		if (fits(p, need, g, err, errlen)) {
			out->gpu = g;
			return 0;
		}
	}
	if (!n) {
		snprintf(err, errlen, "no vGPU may be swapped out");
		return -1;
	}
	o = calloc(n, sizeof(*o));
	chosen = calloc(n, sizeof(*chosen));
	q = malloc(sizeof(*q));
	if (!o || !chosen || !q) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		const struct plan_grant *gr = plan_find(p, c[i].name);

		o[i].c = &c[i];
		o[i].idx = i;
		o[i].memory = gr ? gr->memory : 0;
	}
	qsort(o, n, sizeof(*o), order_cmp);
	for (g = first; g < last; g++) {
		if (need->gpu == PLAN_GPU_ANY && g < 64 &&
		    (need->gpu_exclude & (1ull << g)))
			continue;
		if (!choose_on(p, o, n, need, g, chosen, q, err, errlen))
			continue;
		out->gpu = g;
		for (i = 0; i < n; i++) {
			if (!chosen[i])
				continue;
			out->idx[out->n++] = o[i].idx;
			out->bytes += o[i].memory;
		}
		rc = 0;
		break;
	}
out:
	free(o);
	free(chosen);
	free(q);
	return rc;
}
