/* SPDX-License-Identifier: MIT */
/*
 * Load, power and energy per vGPU for vgpu-admin top (admin.h: TOP).
 *
 * Each worker's analyzer sends VGPU_CTL_LOAD once per stats period; the
 * latest window is kept as it came. NVML (cuda backend only; or the
 * library VGPU_NVML_LIBRARY names, for tests) is read at most every
 * DAEMON_NVML_PERIOD_MS per GPU, when a window of one of its vGPUs
 * arrives, read-only:
 *
 *   power, energy  the GPU's; a vGPU's share is weighted by its busy
 *                  fraction times its SMs in its latest window
 *                  (docs/DESIGN.md); energy used while no vGPU of the GPU
 *                  was busy belongs to nobody;
 *   utilisation    per process (the worker's pid) where NVML has it:
 *                  SM and memory-bandwidth percentages, from which the
 *                  bandwidth class follows; else the device's figures,
 *                  only when one vGPU of the GPU is busy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_msg.h"
#include "daemon_part.h"
#include "daemon_sched.h"
#include "nvml_sym.h"

#define LOAD_BUSY_MIN	  0.05 /* below: idle, for the bandwidth class */
#define LOAD_SOLE_BUSY	  0.10 /* device figures go to a vGPU this busy */
#define LOAD_MEMORY_RATIO 60   /* mem% >= 60% of SM%: memory-bound */
#define LOAD_MAX_SAMPLES  256  /* process samples read per GPU */

struct daemon_vgpu_part *daemon_vgpu_part(struct daemon_vgpu *v)
{
	struct daemon_vgpu_part *p = v->part;

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->sm_util = p->mem_util = VGPU_ADMIN_NA;
	p->power_mw = VGPU_ADMIN_NA;
	v->part = p;
	return p;
}

static struct daemon_part *part_of(struct daemon *d)
{
	uint32_t i;

	if (!d->part && (d->part = calloc(1, sizeof(*d->part))))
		for (i = 0; i < VGPU_MAX_GPUS; i++)
			d->part->gpu[i].power_mw = VGPU_ADMIN_NA;
	return d->part;
}

void daemon_part_vgpu_free(struct daemon *d, struct daemon_vgpu *v)
{
	daemon_resize_abort(d, v, "the vGPU is going away");
	free(v->part);
	v->part = NULL;
	daemon_sched_vgpu_free(d, v);
}

void daemon_part_fini(struct daemon *d)
{
	daemon_sched_fini(d);
	if (!d->part)
		return;
	if (d->part->nvml) {
		nvml_sym_unload(d->part->nvml);
		free(d->part->nvml);
	}
	free(d->part);
	d->part = NULL;
}

/* Load NVML once: on the cuda backend, or when a test names a library. */
static void nvml_open(struct daemon *d, struct daemon_part *dp)
{
	const char *lib = getenv("VGPU_NVML_LIBRARY");
	char err[256];
	uint32_t i, found = 0;

	if (dp->nvml_tried)
		return;
	dp->nvml_tried = true;
	if (d->backend != VGPU_BACKEND_CUDA && !(lib && *lib))
		return; /* the simulator: no GPU figures at all */
	dp->nvml = calloc(1, sizeof(*dp->nvml));
	if (!dp->nvml)
		return;
	if (nvml_sym_load(dp->nvml, err, sizeof(err))) {
		daemon_log("NVML: %s; power and energy are n/a", err);
		free(dp->nvml);
		dp->nvml = NULL;
		return;
	}
	for (i = 0; i < d->ngpus && i < VGPU_MAX_GPUS; i++) {
		dp->gpu[i].dev = nvml_device_by_uuid(dp->nvml, d->gpus[i].uuid);
		found += dp->gpu[i].dev != NULL;
	}
	daemon_log("NVML: reading power, energy and utilisation of %u of "
		   "%u GPU%s (read-only)",
		   found, d->ngpus, d->ngpus == 1 ? "" : "s");
}

/* Busy fraction of a window, or -1 when not measured. */
static double busy_of(const struct daemon_vgpu_part *p)
{
	if (!p || !p->have_load || !p->load.window_ns ||
	    p->load.busy_source == VGPU_BUSY_NONE)
		return -1;
	return (double)p->load.busy_ns / (double)p->load.window_ns;
}

/* A vGPU's weight in its GPU's power: busy fraction times SMs. */
static double weight_of(const struct daemon_vgpu *v)
{
	double b = busy_of(v->part);

	return b > 0 ? b * v->sms : 0;
}

static double gpu_weight(struct daemon *d, uint32_t gpu)
{
	struct daemon_vgpu *v;
	double sum = 0;

	for (v = d->vgpus; v; v = v->next)
		if (v->cfg.gpu == gpu && v->pid)
			sum += weight_of(v);
	return sum;
}

/* The GPU used delta_mj since the last reading: share it out. */
static void energy_share(struct daemon *d, uint32_t gpu, uint64_t delta_mj)
{
	double sum = gpu_weight(d, gpu);
	struct daemon_vgpu *v;

	for (v = d->vgpus; v; v = v->next) {
		if (v->cfg.gpu != gpu || !daemon_vgpu_part(v))
			continue;
		v->part->energy_known = true;
		if (sum > 0 && v->pid)
			v->part->energy_mj +=
				(uint64_t)(delta_mj * weight_of(v) / sum);
	}
}

/*
 * SM and memory utilisation: the worker's own process figures where NVML
 * has them; else (NVML cannot see the worker, as under MPS, where the
 * work runs in the MPS server) the device's, when this is the only busy
 * vGPU of the GPU; else not known.
 */
static void util_read(struct daemon *d, struct daemon_part *dp, uint32_t gpu)
{
	nvmlProcessUtilizationSample_t samples[LOAD_MAX_SAMPLES];
	unsigned long long newest = dp->gpu[gpu].util_ts;
	struct nvml_sym *n = dp->nvml;
	nvmlDevice_t dev = dp->gpu[gpu].dev;
	struct daemon_vgpu *v, *busy = NULL;
	unsigned int count = LOAD_MAX_SAMPLES, i, nbusy = 0;
	nvmlUtilization_t u;
	bool found;

	if (n->nvmlDeviceGetProcessUtilization(dev, samples, &count,
					       dp->gpu[gpu].util_ts) !=
		    NVML_SUCCESS ||
	    count > LOAD_MAX_SAMPLES)
		count = 0;
	for (i = 0; i < count; i++)
		if (samples[i].timeStamp > newest)
			newest = samples[i].timeStamp;
	dp->gpu[gpu].util_ts = newest;
	for (v = d->vgpus; v; v = v->next) {
		if (v->cfg.gpu != gpu || !daemon_vgpu_part(v))
			continue;
		v->part->sm_util = v->part->mem_util = VGPU_ADMIN_NA;
		found = false;
		for (i = 0; i < count; i++) {
			if (samples[i].pid != (unsigned)v->pid)
				continue;
			v->part->sm_util = samples[i].smUtil;
			v->part->mem_util = samples[i].memUtil;
			found = true;
		}
		if (busy_of(v->part) >= LOAD_SOLE_BUSY) {
			nbusy++;
			busy = found ? NULL : v;
		}
	}
	if (nbusy == 1 && busy &&
	    n->nvmlDeviceGetUtilizationRates(dev, &u) == NVML_SUCCESS) {
		busy->part->sm_util = u.gpu;
		busy->part->mem_util = u.memory;
	}
}

/* Read NVML for one GPU if it is time to. */
static void nvml_sample(struct daemon *d, uint32_t gpu, int64_t now)
{
	struct daemon_part *dp = part_of(d);
	unsigned long long e;
	unsigned int mw;

	if (!dp || gpu >= VGPU_MAX_GPUS)
		return;
	nvml_open(d, dp);
	if (!dp->nvml || !dp->gpu[gpu].dev ||
	    (dp->gpu[gpu].at_ms &&
	     now - dp->gpu[gpu].at_ms < DAEMON_NVML_PERIOD_MS))
		return;
	dp->gpu[gpu].at_ms = now;
	if (dp->nvml->nvmlDeviceGetTotalEnergyConsumption(dp->gpu[gpu].dev,
							  &e) == NVML_SUCCESS) {
		if (dp->gpu[gpu].energy_ok && e >= dp->gpu[gpu].energy_mj)
			energy_share(d, gpu, e - dp->gpu[gpu].energy_mj);
		dp->gpu[gpu].energy_mj = e;
		dp->gpu[gpu].energy_ok = true;
	}
	if (dp->nvml->nvmlDeviceGetPowerUsage(dp->gpu[gpu].dev, &mw) ==
	    NVML_SUCCESS)
		dp->gpu[gpu].power_mw = mw;
	else
		dp->gpu[gpu].power_mw = VGPU_ADMIN_NA;
	util_read(d, dp, gpu);
}

/* Compute- or memory-bound, from the SM and memory percentages. */
static uint32_t bw_class_of(const struct daemon_vgpu_part *p)
{
	double b = busy_of(p);

	if (p->sm_util == VGPU_ADMIN_NA || p->mem_util == VGPU_ADMIN_NA)
		return b >= 0 && b < LOAD_BUSY_MIN ? VGPU_ADMIN_BW_IDLE
						   : VGPU_ADMIN_BW_NA;
	if (p->sm_util < 5)
		return b >= LOAD_BUSY_MIN ? VGPU_ADMIN_BW_NA
					  : VGPU_ADMIN_BW_IDLE;
	if ((uint64_t)p->mem_util * 100 >=
	    (uint64_t)LOAD_MEMORY_RATIO * p->sm_util)
		return VGPU_ADMIN_BW_MEMORY;
	return VGPU_ADMIN_BW_COMPUTE;
}

void daemon_load_update(struct daemon *d, struct daemon_vgpu *v,
			const struct vgpu_ctl_load *l)
{
	struct daemon_vgpu_part *p = daemon_vgpu_part(v);
	int64_t now = daemon_now_ms();

	if (!p)
		return;
	p->load = *l;
	if (p->load.busy_source > VGPU_BUSY_EVENTS)
		p->load.busy_source = VGPU_BUSY_NONE; /* unknown: ignore it */
	if (p->load.busy_ns > p->load.window_ns)
		p->load.busy_ns = p->load.window_ns;
	p->have_load = true;
	p->load_ms = now;
	p->change_count = l->change_count;
	nvml_sample(d, v->cfg.gpu, now);
	/* without NVML for its GPU (the simulator): nothing to tell */
	p->bw_class = VGPU_ADMIN_BW_NA;
	if (d->part && v->cfg.gpu < VGPU_MAX_GPUS &&
	    d->part->gpu[v->cfg.gpu].dev)
		p->bw_class = bw_class_of(p);
	daemon_sched_load(d, v);
}

static void fill_load(struct daemon *d, struct daemon_vgpu *v,
		      struct vgpu_admin_load *e, int64_t now)
{
	struct daemon_vgpu_part *p = daemon_vgpu_part(v);
	struct daemon_part *dp = d->part;
	double sum, w;
	uint32_t gpu_mw = VGPU_ADMIN_NA;

	memset(e, 0, sizeof(*e));
	memcpy(e->name, v->cfg.name, sizeof(e->name));
	e->gpu = v->cfg.gpu;
	e->backend = v->cfg.backend;
	e->state = v->state;
	e->sms = v->sms;
	e->clients = v->stats.clients;
	e->memory_used = v->stats.memory_used;
	e->memory_quota = v->cfg.memory_quota;
	e->age_ms = VGPU_ADMIN_NA;
	e->sm_util = e->mem_util = VGPU_ADMIN_NA;
	e->power_mw = e->gpu_power_mw = VGPU_ADMIN_NA;
	e->energy_mj = VGPU_ADMIN_NA_64;
	if (!p)
		return;
	e->change_count = p->change_count;
	e->resizes = p->resizes;
	e->last_switch_ns = p->last_switch_ns;
	e->last_build_us = p->last_build_us;
	e->last_waits = p->last_waits;
	if (p->have_load && v->pid) {
		e->busy_source = p->load.busy_source;
		e->queue_depth = p->load.queue_depth;
		e->window_ns = p->load.window_ns;
		e->busy_ns = p->load.busy_ns;
		e->kernels = p->load.kernels;
		e->bytes_copied = p->load.bytes_copied;
		e->barrier_ns = p->load.barrier_ns;
		e->memory_used = p->load.memory_used;
		e->clients = p->load.clients;
		e->age_ms = now - p->load_ms > (int64_t)UINT32_MAX - 1
				    ? UINT32_MAX - 1
				    : (uint32_t)(now - p->load_ms);
		e->bw_class = p->bw_class;
		e->sm_util = p->sm_util;
		e->mem_util = p->mem_util;
	}
	if (dp && v->cfg.gpu < VGPU_MAX_GPUS && dp->gpu[v->cfg.gpu].dev)
		gpu_mw = dp->gpu[v->cfg.gpu].power_mw;
	e->gpu_power_mw = gpu_mw;
	if (gpu_mw != VGPU_ADMIN_NA) {
		sum = gpu_weight(d, v->cfg.gpu);
		w = v->pid ? weight_of(v) : 0;
		e->power_mw = sum > 0 ? (uint32_t)(gpu_mw * w / sum) : 0;
	}
	if (p->energy_known)
		e->energy_mj = p->energy_mj;
}

void daemon_load_top(struct daemon *d, struct daemon_conn *c,
		     const struct vgpu_admin_request *req)
{
	struct vgpu_admin_response *r = daemon_admin_response_new(d, c);
	struct daemon_vgpu *v;
	int64_t now = daemon_now_ms();
	uint32_t i = 0;

	if (!r)
		return; /* answered */
	for (v = d->vgpus; v; v = v->next, i++)
		if (i >= req->first && r->count < VGPU_ADMIN_LIST_MAX)
			fill_load(d, v, &r->loads[r->count++], now);
	r->total = i;
	snprintf(r->message, sizeof(r->message), "%u vGPU%s", i,
		 i == 1 ? "" : "s");
	daemon_admin_response_send(d, c, r);
}
