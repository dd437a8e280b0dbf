/* SPDX-License-Identifier: MIT */
/*
 * Resizes and moves in the planner (see plan_resize.h for the rules).
 */
#include <stdio.h>
#include <string.h>

#include "plan_resize.h"

static uint32_t popcount64(uint64_t m)
{
	return (uint32_t)__builtin_popcountll(m);
}

/* Bit mask of a grant's groups. */
static uint64_t grant_mask(const struct plan_grant *gr)
{
	uint64_t m = 0;
	uint32_t i;

	for (i = 0; i < gr->ngroups; i++)
		if (gr->groups[i] < 64)
			m |= 1ull << gr->groups[i];
	return m;
}

/* SMs of the groups in mask (the leftover bit counts its SMs). */
static uint32_t mask_sms(const struct plan_gpu *g, uint64_t mask)
{
	uint32_t i, sms = 0;

	for (i = 0; i < 64; i++) {
		if (!(mask & (1ull << i)))
			continue;
		sms += i == g->ngroups	? g->leftover_sms
		       : i < g->ngroups ? g->group_sms[i]
					: 0;
	}
	return sms;
}

/* The name of the vGPU that holds group gr of GPU gpu, or NULL. */
static const char *holder(const struct plan *p, uint32_t gpu, uint32_t gr)
{
	uint32_t i, j;

	for (i = 0; i < p->nslots; i++) {
		const struct plan_grant *s = &p->slots[i];

		if (!s->used || s->gpu != gpu)
			continue;
		for (j = 0; j < s->ngroups; j++)
			if (s->groups[j] == gr)
				return s->name;
	}
	return NULL;
}

const char *plan_groups_text(const uint32_t *groups, uint32_t n, char *buf,
			     size_t len)
{
	size_t used = 0;
	uint32_t i = 0, j;

	buf[0] = '\0';
	while (i < n && used < len) {
		for (j = i; j + 1 < n && groups[j + 1] == groups[j] + 1; j++)
			;
		if (j > i)
			used += snprintf(buf + used, len - used, "%s%u-%u",
					 used ? "," : "", groups[i], groups[j]);
		else
			used += snprintf(buf + used, len - used, "%s%u",
					 used ? "," : "", groups[i]);
		i = j + 1;
	}
	return buf;
}

/* Fill r's group list from a mask (ascending). */
static void resize_from_mask(const struct plan_gpu *g, uint64_t mask,
			     uint64_t own, struct plan_resize *r)
{
	uint32_t i;

	r->ngroups = 0;
	for (i = 0; i < 64; i++)
		if (mask & (1ull << i))
			r->groups[r->ngroups++] = i;
	r->sms = mask_sms(g, mask);
	r->add_mask = mask & ~own;
	r->drop_mask = own & ~mask;
}

/* An explicit set of groups (a move): check each, name the holders. */
static int choose_mask(const struct plan *p, const struct plan_grant *gr,
		       uint64_t want, struct plan_resize *r, char *err,
		       size_t errlen)
{
	const struct plan_gpu *g = &p->gpus[gr->gpu];
	uint64_t own = grant_mask(gr);
	uint32_t i;
	const char *who;

	for (i = 0; i < 64; i++) {
		if (!(want & (1ull << i)))
			continue;
		if (i > g->ngroups || (i == g->ngroups && !g->leftover_sms)) {
			snprintf(err, errlen,
				 "GPU %u has no SM group %u (groups 0-%u%s)",
				 gr->gpu, i, g->ngroups - 1,
				 g->leftover_sms ? " and the leftover slice"
						 : "");
			return -1;
		}
		if ((g->groups_used & (1ull << i)) && !(own & (1ull << i))) {
			who = holder(p, gr->gpu, i);
			snprintf(err, errlen,
				 "SM group %u of GPU %u belongs to vGPU %s", i,
				 gr->gpu, who ? who : "(another)");
			return -1;
		}
	}
	resize_from_mask(g, want, own, r);
	return 0;
}

/* "vGPU x holds 16 SMs (groups 0-1); 24 SMs (3 groups of 8) are free" */
static void no_room(const struct plan *p, const struct plan_grant *gr,
		    uint32_t sms, char *err, size_t errlen)
{
	const struct plan_gpu *g = &p->gpus[gr->gpu];
	uint32_t nfree, free_sms = plan_gpu_free_sms(g, &nfree);
	char held[96];

	snprintf(err, errlen,
		 "asked for %u SMs; vGPU %s holds %u SMs (group%s %s) and "
		 "%u more SMs (%u group%s of %u%s) are free on GPU %u",
		 sms, gr->name, gr->sms, gr->ngroups == 1 ? "" : "s",
		 plan_groups_text(gr->groups, gr->ngroups, held, sizeof(held)),
		 free_sms, nfree, nfree == 1 ? "" : "s", g->min_partition,
		 plan_leftover_free(g) ? ", and the leftover slice" : "",
		 gr->gpu);
}

/*
 * sms SMs: the regular groups it holds first, then the lowest free ones;
 * or the leftover slice when it fits and wastes fewer SMs (as at create).
 */
static int choose_sms(const struct plan *p, const struct plan_grant *gr,
		      uint32_t sms, struct plan_resize *r, char *err,
		      size_t errlen)
{
	const struct plan_gpu *g = &p->gpus[gr->gpu];
	uint64_t own = grant_mask(gr), left = 0, avail, pick = 0;
	uint32_t need, i, reg_sms = 0;
	bool left_ok;

	if (g->ngroups < 64)
		left = 1ull << g->ngroups;
	need = (uint32_t)(((uint64_t)sms + g->min_partition - 1) /
			  g->min_partition);
	/* regular groups: its own, then free ones */
	avail = 0;
	for (i = 0; i < g->ngroups; i++)
		if (!(g->groups_used & (1ull << i)) || (own & (1ull << i)))
			avail |= 1ull << i;
	for (i = 0; i < g->ngroups && popcount64(pick) < need; i++)
		if (own & (1ull << i) & ~left)
			pick |= 1ull << i;
	for (i = 0; i < g->ngroups && popcount64(pick) < need; i++)
		if ((avail & (1ull << i)) && !(pick & (1ull << i)))
			pick |= 1ull << i;
	if (popcount64(pick) == need && need <= g->ngroups)
		reg_sms = mask_sms(g, pick);
	if (reg_sms && reg_sms < sms)
		reg_sms = 0; /* groups smaller than min_partition */
	left_ok = left && g->leftover_sms >= sms &&
		  (!(g->groups_used & left) || own == left);
	if (left_ok &&
	    (!reg_sms || g->leftover_sms - sms < reg_sms - sms ||
	     (own == left && g->leftover_sms - sms == reg_sms - sms)))
		pick = left;
	else if (!reg_sms) {
		no_room(p, gr, sms, err, errlen);
		return -1;
	}
	resize_from_mask(g, pick, own, r);
	return 0;
}

int plan_resize_choose(const struct plan *p, const char *name, uint32_t sms,
		       uint64_t want_mask, struct plan_resize *out, char *err,
		       size_t errlen)
{
	const struct plan_grant *gr = plan_find(p, name);
	int rc;

	memset(out, 0, sizeof(*out));
	if (!gr) {
		snprintf(err, errlen, "no vGPU named '%s'", name);
		return -1;
	}
	if (!want_mask && sms == 0) {
		snprintf(err, errlen,
			 "a vGPU needs at least 1 SM (to free all of it, "
			 "destroy it)");
		return -1;
	}
	out->gpu = gr->gpu;
	out->old_sms = gr->sms;
	rc = want_mask ? choose_mask(p, gr, want_mask, out, err, errlen)
		       : choose_sms(p, gr, sms, out, err, errlen);
	return rc;
}

int plan_resize_hold(struct plan *p, const char *name,
		     const struct plan_resize *r)
{
	const struct plan_grant *gr = plan_find(p, name);
	struct plan_gpu *g;

	if (!gr || gr->gpu != r->gpu)
		return -1;
	g = &p->gpus[gr->gpu];
	if (g->groups_used & r->add_mask)
		return -1;
	g->groups_used |= r->add_mask;
	return 0;
}

void plan_resize_finish(struct plan *p, const char *name,
			const struct plan_resize *r, bool ok)
{
	struct plan_grant *gr = (struct plan_grant *)plan_find(p, name);
	struct plan_gpu *g;

	if (!gr || gr->gpu != r->gpu)
		return;
	g = &p->gpus[gr->gpu];
	if (!ok) {
		g->groups_used &= ~r->add_mask;
		return;
	}
	g->groups_used &= ~r->drop_mask;
	gr->ngroups = r->ngroups;
	memset(gr->groups, 0, sizeof(gr->groups));
	memcpy(gr->groups, r->groups, r->ngroups * sizeof(r->groups[0]));
	gr->sms = r->sms;
}
