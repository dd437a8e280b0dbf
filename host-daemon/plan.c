/* SPDX-License-Identifier: MIT */
/*
 * The SM-group planner (see plan.h for the rules). Everything here is
 * bookkeeping on struct plan; vgpud calls it from its main loop only.
 */
#include <stdio.h>
#include <string.h>

#include "plan.h"

int plan_init(struct plan *p, uint64_t va_base, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	if (va_base == 0 || va_base % (2ull << 20) != 0) {
		snprintf(err, errlen,
			 "VA base 0x%llx must be a nonzero multiple of 2 MiB",
			 (unsigned long long)va_base);
		return -1;
	}
	/* below the range, clients would not keep the windows free */
	if (va_base < PLAN_VA_BOTTOM || va_base >= PLAN_VA_TOP ||
	    PLAN_VA_TOP - va_base < PLAN_VA_WINDOW) {
		snprintf(err, errlen,
			 "VA base 0x%llx leaves no room for a 1 TiB window "
			 "in 0x%llx-0x%llx, the range clients keep free",
			 (unsigned long long)va_base,
			 (unsigned long long)PLAN_VA_BOTTOM,
			 (unsigned long long)PLAN_VA_TOP);
		return -1;
	}
	p->va_base = va_base;
	p->nslots = (PLAN_VA_TOP - va_base) / PLAN_VA_WINDOW;
	if (p->nslots > PLAN_MAX_SLOTS)
		p->nslots = PLAN_MAX_SLOTS;
	return 0;
}

int plan_add_gpu(struct plan *p, const struct vgpu_gpu_info *info, char *err,
		 size_t errlen)
{
	struct plan_gpu *g;
	uint64_t sum = 0, reserve;
	uint32_t i;

	if (p->ngpus >= VGPU_MAX_GPUS) {
		snprintf(err, errlen, "more than %d GPUs", VGPU_MAX_GPUS);
		return -1;
	}
	if (info->index != p->ngpus) {
		snprintf(err, errlen, "GPU info has index %u, expected %u",
			 info->index, p->ngpus);
		return -1;
	}
	if (info->min_partition == 0 || info->ngroups > VGPU_MAX_SM_GROUPS) {
		snprintf(err, errlen,
			 "GPU %u: bad partition (min %u SMs, %u groups)",
			 info->index, info->min_partition, info->ngroups);
		return -1;
	}
	for (i = 0; i < info->ngroups; i++) {
		if (info->group_sms[i] == 0) {
			snprintf(err, errlen, "GPU %u: SM group %u is empty",
				 info->index, i);
			return -1;
		}
		sum += info->group_sms[i];
	}
	if (sum > info->sm_count) {
		snprintf(err, errlen,
			 "GPU %u: its groups hold %llu SMs, more than its %u",
			 info->index, (unsigned long long)sum, info->sm_count);
		return -1;
	}
	if (info->memory_total == 0) {
		snprintf(err, errlen, "GPU %u reports no memory", info->index);
		return -1;
	}
	if (info->granularity & (info->granularity - 1)) {
		snprintf(err, errlen,
			 "GPU %u: granularity %llu is not a power of two",
			 info->index, (unsigned long long)info->granularity);
		return -1;
	}

	g = &p->gpus[p->ngpus++];
	memset(g, 0, sizeof(*g));
	g->sm_count = info->sm_count;
	g->min_partition = info->min_partition;
	g->ngroups = info->ngroups;
	memcpy(g->group_sms, info->group_sms, sizeof(g->group_sms));
	g->memory_total = info->memory_total;
	reserve = info->memory_total / 20; /* 5% */
	if (reserve > PLAN_RESERVE_MAX)
		reserve = PLAN_RESERVE_MAX;
	g->memory_reserve = reserve;
	g->granularity = info->granularity ? info->granularity : 1;
	/* the leftover slice needs a bit of its own in groups_used */
	if (g->ngroups < VGPU_MAX_SM_GROUPS)
		g->leftover_sms = info->sm_count - (uint32_t)sum;
	return 0;
}

bool plan_leftover_free(const struct plan_gpu *g)
{
	return g->leftover_sms && !(g->groups_used & (1ull << g->ngroups));
}

uint64_t plan_leftover_bit(const struct plan_gpu *g)
{
	return g->leftover_sms && g->ngroups < 64 ? 1ull << g->ngroups : 0;
}

bool plan_name_valid(const char *name, char *err, size_t errlen)
{
	size_t i, len = strnlen(name, VGPU_NAME_MAX);

	if (len == 0) {
		snprintf(err, errlen, "the vGPU name is empty");
		return false;
	}
	if (len >= VGPU_NAME_MAX) {
		snprintf(err, errlen,
			 "the vGPU name is longer than %d characters",
			 VGPU_NAME_MAX - 1);
		return false;
	}
	for (i = 0; i < len; i++) {
		char c = name[i];

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-')
			continue;
		snprintf(err, errlen,
			 "the vGPU name has a character outside "
			 "[A-Za-z0-9_.-] at position %zu",
			 i + 1);
		return false;
	}
	return true;
}

uint64_t plan_gpu_usable(const struct plan_gpu *g)
{
	return g->memory_total - g->memory_reserve;
}

uint32_t plan_gpu_free_sms(const struct plan_gpu *g, uint32_t *nfree)
{
	uint32_t i, sms = 0, n = 0;

	for (i = 0; i < g->ngroups; i++) {
		if (g->groups_used & (1ull << i))
			continue;
		sms += g->group_sms[i];
		n++;
	}
	if (plan_leftover_free(g))
		sms += g->leftover_sms;
	if (nfree)
		*nfree = n;
	return sms;
}

const char *plan_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	while (v >= 1024.0 && u < 4) {
		v /= 1024.0;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

const struct plan_grant *plan_find(const struct plan *p, const char *name)
{
	uint32_t i;

	for (i = 0; i < p->nslots; i++) {
		if (p->slots[i].used &&
		    strncmp(p->slots[i].name, name, VGPU_NAME_MAX) == 0)
			return &p->slots[i];
	}
	return NULL;
}

/* "(5 groups of 8)" when the free groups are all of the minimum size. */
static void free_groups_text(const struct plan_gpu *g, char *buf, size_t len)
{
	uint32_t i, n = 0;
	bool uniform = true;

	for (i = 0; i < g->ngroups; i++) {
		if (g->groups_used & (1ull << i))
			continue;
		n++;
		if (g->group_sms[i] != g->min_partition)
			uniform = false;
	}
	if (uniform)
		snprintf(buf, len, "%u group%s of %u", n, n == 1 ? "" : "s",
			 g->min_partition);
	else
		snprintf(buf, len, "%u group%s", n, n == 1 ? "" : "s");
}

/* Groups a request for sms SMs needs on g. */
static uint32_t groups_needed(const struct plan_gpu *g, uint32_t sms)
{
	return (uint32_t)(((uint64_t)sms + g->min_partition - 1) /
			  g->min_partition);
}

/* Quota rounded up to the granularity; 0 on overflow. */
static uint64_t quota_rounded(const struct plan_gpu *g, uint64_t memory)
{
	uint64_t r = memory % g->granularity;

	if (r == 0)
		return memory;
	if (memory > UINT64_MAX - (g->granularity - r))
		return 0;
	return memory + (g->granularity - r);
}

/* SMs of the lowest `need` free regular groups; 0 when too few free. */
static uint32_t regular_sms(const struct plan_gpu *g, uint32_t need)
{
	uint32_t i, n = 0, sms = 0;

	for (i = 0; i < g->ngroups && n < need; i++) {
		if (g->groups_used & (1ull << i))
			continue;
		sms += g->group_sms[i];
		n++;
	}
	return n == need ? sms : 0;
}

/*
 * How req is best placed on g: true with *leftover set when the
 * leftover slice alone fits with fewer spare SMs than the regular
 * groups (or they do not fit); false when neither fits.
 */
static bool choose_slice(const struct plan_gpu *g, uint32_t sms, bool *leftover)
{
	uint32_t need = groups_needed(g, sms);
	uint32_t reg = need <= g->ngroups ? regular_sms(g, need) : 0;
	bool left = plan_leftover_free(g) && g->leftover_sms >= sms;

	if (reg && reg < sms) /* groups smaller than min_partition */
		reg = 0;
	if (left && (!reg || g->leftover_sms - sms < reg - sms)) {
		*leftover = true;
		return true;
	}
	*leftover = false;
	return reg != 0;
}

/*
 * Whether req fits on GPU gi; when it does not, a sentence saying what
 * is free there.
 */
static bool gpu_fits(const struct plan *p, uint32_t gi,
		     const struct plan_request *req, char *err, size_t errlen)
{
	const struct plan_gpu *g = &p->gpus[gi];
	uint32_t nfree, free_sms = plan_gpu_free_sms(g, &nfree);
	uint32_t need = groups_needed(g, req->sms);
	uint64_t quota = quota_rounded(g, req->memory);
	uint64_t usable = plan_gpu_usable(g);
	char a[32], b[32], c[32], d[32], e[32], groups[96];
	bool leftover;

	if (need > g->ngroups && g->leftover_sms < req->sms) {
		uint32_t i, total = 0;

		for (i = 0; i < g->ngroups; i++)
			total += g->group_sms[i];
		snprintf(err, errlen,
			 "asked for %u SMs, GPU %u has only %u SMs in slices "
			 "(%u groups of %u) in all",
			 req->sms, gi, total, g->ngroups, g->min_partition);
		return false;
	}
	if (!choose_slice(g, req->sms, &leftover)) {
		bool left = plan_leftover_free(g);

		free_groups_text(g, groups, sizeof(groups));
		snprintf(err, errlen,
			 "asked for %u SMs, %u SMs (%s) are free on GPU %u",
			 req->sms, left ? free_sms - g->leftover_sms : free_sms,
			 groups, gi);
		if (left) {
			size_t used = strlen(err);

			snprintf(err + used, errlen - used,
				 "; so is the leftover slice of %u SMs "
				 "(usable alone)",
				 g->leftover_sms);
		}
		return false;
	}
	if (quota == 0 || quota > usable - g->memory_used) {
		snprintf(
			err, errlen,
			"asked for %s of memory, %s is free on GPU %u "
			"(%s usable: %s minus %s kept for the driver)",
			plan_format_size(req->memory, a, sizeof(a)),
			plan_format_size(usable - g->memory_used, b, sizeof(b)),
			gi, plan_format_size(usable, c, sizeof(c)),
			plan_format_size(g->memory_total, d, sizeof(d)),
			plan_format_size(g->memory_reserve, e, sizeof(e)));
		return false;
	}
	return true;
}

/* Fill grant with the chosen slice and the memory of GPU gi. */
static void gpu_take(struct plan *p, uint32_t gi,
		     const struct plan_request *req, struct plan_grant *grant)
{
	struct plan_gpu *g = &p->gpus[gi];
	uint32_t i, need = groups_needed(g, req->sms);
	bool leftover = false;

	choose_slice(g, req->sms, &leftover);
	grant->gpu = gi;
	grant->ngroups = 0;
	grant->sms = 0;
	if (leftover) {
		g->groups_used |= 1ull << g->ngroups;
		grant->groups[grant->ngroups++] = g->ngroups;
		grant->sms = g->leftover_sms;
	}
	for (i = 0; !leftover && i < g->ngroups && grant->ngroups < need; i++) {
		if (g->groups_used & (1ull << i))
			continue;
		g->groups_used |= 1ull << i;
		grant->groups[grant->ngroups++] = i;
		grant->sms += g->group_sms[i];
	}
	grant->memory = quota_rounded(g, req->memory);
	g->memory_used += grant->memory;
}

const struct plan_grant *plan_reserve(struct plan *p,
				      const struct plan_request *req, char *err,
				      size_t errlen)
{
	struct plan_grant *grant = NULL;
	uint32_t i, gi = PLAN_GPU_ANY;

	if (!plan_name_valid(req->name, err, errlen))
		return NULL;
	if (plan_find(p, req->name)) {
		snprintf(err, errlen, "a vGPU named '%s' already exists",
			 req->name);
		return NULL;
	}
	if (req->sms == 0) {
		snprintf(err, errlen, "a vGPU needs at least 1 SM");
		return NULL;
	}
	if (req->memory == 0) {
		snprintf(err, errlen, "a vGPU needs some memory (asked for 0)");
		return NULL;
	}
	if (p->ngpus == 0) {
		snprintf(err, errlen, "there is no GPU to place a vGPU on");
		return NULL;
	}
	for (i = 0; i < p->nslots; i++) {
		if (!p->slots[i].used) {
			grant = &p->slots[i];
			break;
		}
	}
	if (!grant) {
		snprintf(err, errlen,
			 "all %u VA windows are in use (at most %u vGPUs with "
			 "VA base 0x%llx)",
			 p->nslots, p->nslots, (unsigned long long)p->va_base);
		return NULL;
	}

	if (req->gpu != PLAN_GPU_ANY) {
		if (req->gpu >= p->ngpus) {
			snprintf(err, errlen,
				 "there is no GPU %u (this host has %u)",
				 req->gpu, p->ngpus);
			return NULL;
		}
		if (!gpu_fits(p, req->gpu, req, err, errlen))
			return NULL;
		gi = req->gpu;
	} else {
		uint32_t best = PLAN_GPU_ANY, best_free = 0;

		for (i = 0; i < p->ngpus; i++) {
			uint32_t f;

			if (i < 64 && (req->gpu_exclude & (1ull << i)))
				continue;
			if (gpu_fits(p, i, req, err, errlen)) {
				gi = i;
				break;
			}
			f = plan_gpu_free_sms(&p->gpus[i], NULL);
			if (best == PLAN_GPU_ANY || f > best_free) {
				best = i;
				best_free = f;
			}
		}
		if (gi == PLAN_GPU_ANY) {
			if (best == PLAN_GPU_ANY)
				snprintf(err, errlen,
					 "no GPU can take a vGPU now (all "
					 "are recovering from a fault)");
			else
				/* say what is free where the most is */
				gpu_fits(p, best, req, err, errlen);
			return NULL;
		}
	}

	memset(grant, 0, sizeof(*grant));
	grant->used = true;
	snprintf(grant->name, sizeof(grant->name), "%s", req->name);
	grant->slot = (uint32_t)(grant - p->slots);
	grant->va_base = p->va_base + (uint64_t)grant->slot * PLAN_VA_WINDOW;
	grant->va_size = PLAN_VA_WINDOW;
	gpu_take(p, gi, req, grant);
	return grant;
}

int plan_release(struct plan *p, const char *name)
{
	struct plan_grant *grant = (struct plan_grant *)plan_find(p, name);
	struct plan_gpu *g;
	uint32_t i;

	if (!grant)
		return -1;
	g = &p->gpus[grant->gpu];
	for (i = 0; i < grant->ngroups; i++)
		if (grant->groups[i] < 64)
			g->groups_used &= ~(1ull << grant->groups[i]);
	g->memory_used -= grant->memory;
	memset(grant, 0, sizeof(*grant));
	return 0;
}

const struct plan_grant *plan_restore(struct plan *p, const char *name,
				      uint32_t gpu, uint32_t ngroups,
				      const uint32_t *groups, uint64_t memory,
				      uint64_t va_base, char *err,
				      size_t errlen)
{
	struct plan_grant *grant;
	struct plan_gpu *g;
	uint64_t mask = 0, quota, slot;
	uint32_t i, sms = 0;

	if (!plan_name_valid(name, err, errlen))
		return NULL;
	if (plan_find(p, name)) {
		snprintf(err, errlen, "vGPU '%s' appears twice", name);
		return NULL;
	}
	if (gpu >= p->ngpus) {
		snprintf(err, errlen,
			 "vGPU %s is on GPU %u, but this host has %u GPU%s",
			 name, gpu, p->ngpus, p->ngpus == 1 ? "" : "s");
		return NULL;
	}
	g = &p->gpus[gpu];
	if (ngroups == 0 || ngroups > VGPU_MAX_SM_GROUPS) {
		snprintf(err, errlen, "vGPU %s has %u SM groups", name,
			 ngroups);
		return NULL;
	}
	for (i = 0; i < ngroups; i++) {
		uint32_t gr = groups[i];

		if (gr > g->ngroups || (gr == g->ngroups && !g->leftover_sms)) {
			snprintf(err, errlen,
				 "vGPU %s holds SM group %u, but GPU %u has "
				 "groups 0-%u%s",
				 name, gr, gpu, g->ngroups - 1,
				 g->leftover_sms ? " and the leftover slice"
						 : "");
			return NULL;
		}
		if ((mask | g->groups_used) & (1ull << gr)) {
			snprintf(err, errlen,
				 "vGPU %s holds SM group %u of GPU %u, which "
				 "another vGPU (or itself) already holds",
				 name, gr, gpu);
			return NULL;
		}
		mask |= 1ull << gr;
		sms += gr == g->ngroups ? g->leftover_sms : g->group_sms[gr];
	}
	quota = quota_rounded(g, memory);
	if (memory == 0 || quota != memory ||
	    memory > plan_gpu_usable(g) - g->memory_used) {
		snprintf(err, errlen,
			 "vGPU %s has a memory quota of %llu bytes: zero, not "
			 "a multiple of the granularity, or more than is free "
			 "on GPU %u",
			 name, (unsigned long long)memory, gpu);
		return NULL;
	}
	if (va_base < PLAN_VA_BOTTOM || va_base >= PLAN_VA_TOP) {
		snprintf(err, errlen,
			 "vGPU %s has VA base 0x%llx, outside 0x%llx-0x%llx "
			 "where windows lie (a vgpud from before issue 16 put "
			 "them from 0x500000000000: destroy its vGPUs first)",
			 name, (unsigned long long)va_base,
			 (unsigned long long)PLAN_VA_BOTTOM,
			 (unsigned long long)PLAN_VA_TOP);
		return NULL;
	}
	if (va_base < p->va_base || (va_base - p->va_base) % PLAN_VA_WINDOW) {
		snprintf(err, errlen,
			 "vGPU %s has VA base 0x%llx, which is not a window "
			 "start from 0x%llx",
			 name, (unsigned long long)va_base,
			 (unsigned long long)p->va_base);
		return NULL;
	}
	slot = (va_base - p->va_base) / PLAN_VA_WINDOW;
	if (slot >= p->nslots || p->slots[slot].used) {
		snprintf(err, errlen,
			 "vGPU %s has VA base 0x%llx, whose window is %s", name,
			 (unsigned long long)va_base,
			 slot >= p->nslots ? "past the last one"
					   : "already another vGPU's");
		return NULL;
	}
	grant = &p->slots[slot];
	memset(grant, 0, sizeof(*grant));
	grant->used = true;
	snprintf(grant->name, sizeof(grant->name), "%s", name);
	grant->gpu = gpu;
	grant->ngroups = ngroups;
	memcpy(grant->groups, groups, ngroups * sizeof(*groups));
	grant->sms = sms;
	grant->memory = memory;
	grant->slot = (uint32_t)slot;
	grant->va_base = va_base;
	grant->va_size = PLAN_VA_WINDOW;
	g->groups_used |= mask;
	g->memory_used += memory;
	return grant;
}
