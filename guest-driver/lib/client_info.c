/* SPDX-License-Identifier: MIT */
/*
 * The device description after cuInit. A resize or a move of the vGPU
 * changes its SM count while programs run; the worker bumps the ring
 * header's change_count (protocol 1.3) after it has rewritten the
 * description, so a query that sees a count other than the cached one
 * reads the description again. Queries already answered stay answered: a
 * program sees the new size in its new queries (cuDeviceGetAttribute,
 * cudaGetDeviceProperties), as after a GPU's reconfiguration.
 *
 * A worker of protocol 1.2 or older leaves the count at 0, as the cached
 * description's: nothing is ever read again. When the vGPU has failed the
 * read fails and the cached description stays.
 */
#include "client.h"

void client_info_refresh(struct client *c)
{
	struct vgpu_device_info fresh;
	uint32_t now, cached;

	now = __atomic_load_n(&c->ring.hdr->change_count, __ATOMIC_ACQUIRE);
	pthread_mutex_lock(&c->info_lock);
	cached = c->info.change_count;
	pthread_mutex_unlock(&c->info_lock);
	if (now == cached)
		return;
	if (client_fetch_info(c, &fresh) != CUDA_SUCCESS)
		return;
	pthread_mutex_lock(&c->info_lock);
	/* another thread may have read a newer one meanwhile */
	if ((int32_t)(fresh.change_count - c->info.change_count) > 0)
		c->info = fresh;
	pthread_mutex_unlock(&c->info_lock);
}

void client_info_lock(struct client *c)
{
	pthread_mutex_lock(&c->info_lock);
}

void client_info_unlock(struct client *c)
{
	pthread_mutex_unlock(&c->info_lock);
}
