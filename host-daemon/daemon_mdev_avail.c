/* SPDX-License-Identifier: MIT */
/*
 * SET_AVAILABLE: what sysfs shows as available_instances and description
 * of each mdev type. For a catalogue type: how many vGPUs of its SMs,
 * memory and isolation the planner could still place now, tried on a copy
 * of the plan (so the answer is exactly what a CREATE would get, SM groups,
 * the leftover slice, memory reserve and VA slots included). For the
 * custom type: the vGPUs bound to a UUID that no instance is yet.
 *
 * Recomputed only when something it depends on changed (a cheap
 * signature of the plan, the domains and the bindings).
 */
#include <stdio.h>
#include <string.h>

#include "daemon_mdev.h"

static uint64_t mix(uint64_t h, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++, v >>= 8) {
		h ^= v & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The vGPUs bound to a UUID (vgpu-admin create --mdev) not yet created. */
static uint32_t bound_waiting(const struct daemon *d)
{
	const struct daemon_vgpu *v;
	uint32_t n = 0;

	for (v = d->vgpus; v; v = v->next)
		if (v->mdev && !v->mdev_owned && !v->destroying &&
		    !daemon_mdev_inst_of(d, v))
			n++;
	return n;
}

static uint64_t avail_sig(const struct daemon *d)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint32_t i;

	for (i = 0; i < d->plan->ngpus; i++) {
		h = mix(h, d->plan->gpus[i].groups_used);
		h = mix(h, d->plan->gpus[i].memory_used);
		h = mix(h, d->domains[i].recovering);
	}
	for (i = 0; i < d->plan->nslots; i++)
		h = mix(h, d->plan->slots[i].used);
	h = mix(h, bound_waiting(d));
	return mix(h, d->stopping);
}

/* vGPUs of type t that fit now on GPU gpu (or PLAN_GPU_ANY). */
static uint32_t fits(struct daemon *d, const struct vgpu_mdev_type_info *t,
		     uint32_t gpu)
{
	struct plan *p = d->mdev->scratch;
	struct plan_request req = {0};
	char name[VGPU_NAME_MAX], err[VGPU_MESSAGE_MAX];
	uint32_t n, g;

	if (t->isolation == VGPU_MDEV_SHARED) {
		for (g = 0; g < d->ngpus; g++)
			if (d->domains[g].recovering)
				req.gpu_exclude |= 1ull << g;
		if (gpu != PLAN_GPU_ANY && (req.gpu_exclude >> gpu & 1))
			return 0;
	}
	memcpy(p, d->plan, sizeof(*p));
	req.name = name;
	req.sms = t->sms;
	req.memory = t->memory;
	req.gpu = gpu;
	for (n = 0; n < PLAN_MAX_SLOTS; n++) {
		snprintf(name, sizeof(name), "..mdev-avail.%u", n);
		if (!plan_reserve(p, &req, err, sizeof(err)))
			break;
	}
	return n;
}

/* "16 SMs, 8.0 GiB, shared; 3 free on GPU 0 (NVIDIA H100 ...)" */
static uint32_t describe(struct daemon *d, const struct vgpu_mdev_type_info *t,
			 char *buf, size_t len)
{
	char size[32];
	uint32_t total, g, n, shown = 0;
	size_t off;

	total = d->stopping ? 0 : fits(d, t, PLAN_GPU_ANY);
	off = snprintf(buf, len, "%u SMs, %s, %s; ", t->sms,
		       plan_format_size(t->memory, size, sizeof(size)),
		       t->isolation == VGPU_MDEV_EXCLUSIVE ? "exclusive"
							   : "shared");
	for (g = 0; g < d->ngpus && total && off < len; g++) {
		n = fits(d, t, g);
		if (!n)
			continue;
		off += snprintf(buf + off, len - off, "%s%u %s GPU %u (%s)",
				shown ? ", " : "", n, shown ? "on" : "free on",
				g, d->gpus[g].name);
		shown++;
	}
	if (!total && off < len)
		snprintf(buf + off, len - off, "%s",
			 d->stopping ? "vgpud is shutting down"
				     : "none free now");
	return total;
}

void mdev_avail_update(struct daemon *d)
{
	struct daemon_mdev *m = d->mdev;
	struct vgpu_mdev_available a;
	uint64_t sig = avail_sig(d);
	uint32_t i, n;

	if (m->avail_sent && sig == m->avail_sig)
		return;
	for (i = 0; i < m->ntypes; i++) {
		const struct vgpu_mdev_type_info *t = &m->types[i];

		memset(&a, 0, sizeof(a));
		a.index = i;
		if (t->sms) {
			a.available = describe(d, t, a.description,
					       sizeof(a.description));
		} else {
			n = d->stopping ? 0 : bound_waiting(d);
			a.available = n;
			snprintf(a.description, sizeof(a.description),
				 "a vGPU composed from a blueprint and bound "
				 "to the UUID (vgpu-admin create -f FILE "
				 "--mdev UUID); %u bound, not created",
				 n);
		}
		if (daemon_mdev_ioctl(d, VGPU_MDEV_IOC_SET_AVAILABLE, &a,
				      "SET_AVAILABLE", false))
			return; /* try again next turn */
	}
	m->avail_sig = sig;
	m->avail_sent = true;
}
