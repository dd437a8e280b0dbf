/* SPDX-License-Identifier: MIT */
/*
 * Bringing the connection up (cuInit) and handing it to the API calls.
 *
 * A driver library is process-wide by nature, so this file holds the
 * one struct client of the process; everything else takes it as an
 * argument.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "client_error.h"
#include "client_va.h"

static struct client client_the;
static pthread_once_t client_once = PTHREAD_ONCE_INIT;
static CUresult client_state = CUDA_ERROR_NOT_INITIALIZED;
static int client_forked;

/*
 * A child of fork must not touch its parent's ring (the worker would see
 * two writers), and must not keep the parent's socket alive after the
 * parent exits: drop the mapping and the descriptors, leave the rest.
 */
static void client_atfork_child(void)
{
	client_forked = 1;
	if (__atomic_load_n(&client_state, __ATOMIC_ACQUIRE) == CUDA_SUCCESS)
		client_transport_close(&client_the.transport);
}

/* VGPU_OP_GET_DEVICE_INFO into *info, strings made safe to print. */
CUresult client_fetch_info(struct client *c, struct vgpu_device_info *info)
{
	struct client_ring *r = &c->ring;
	struct client_push how = {.mode = CLIENT_SLOT_WAIT};
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_GET_DEVICE_INFO};
	struct vgpu_cqe cqe;
	uint64_t off;
	uint32_t tag;
	CUresult err;

	client_ring_lock(r);
	err = client_ring_data_alloc(r, sizeof(*info), &off);
	if (err != CUDA_SUCCESS)
		goto out;
	sqe.a[0] = off;
	sqe.a[1] = sizeof(*info);
	err = client_ring_push(r, &sqe, &how, &tag);
	if (err == CUDA_SUCCESS)
		err = client_ring_wait(r, tag, &cqe);
	if (err == CUDA_SUCCESS && cqe.status == CUDA_SUCCESS)
		memcpy(info, client_ring_data(r, off), sizeof(*info));
	else if (err == CUDA_SUCCESS)
		err = (CUresult)cqe.status;
	client_ring_data_free(r, off, sizeof(*info));
out:
	client_ring_unlock(r);
	info->name[sizeof(info->name) - 1] = '\0';
	info->gpu_name[sizeof(info->gpu_name) - 1] = '\0';
	info->vgpu_name[sizeof(info->vgpu_name) - 1] = '\0';
	return err;
}

/*
 * Brings the transport up (client_transport.h says which one): in a VM
 * /dev/vgpuN, where VGPU is optional (the device is the vGPU); on a host
 * vgpud's socket, where VGPU names the vGPU. *name becomes the vGPU's
 * name for later messages. Returns 0, or -1 after saying why.
 */
static int client_connect(struct client *c, const char **name)
{
	const char *path = getenv("VGPU_SOCKET");
	const char *device;
	char err[VGPU_MESSAGE_MAX + 128];

	device = client_transport_pick_device(path, getenv("VGPU_DEVICE"));
	if (device) {
		if (client_transport_open_pci(&c->transport, device, *name, err,
					      sizeof(err))) {
			fprintf(stderr, "vgpu: %s\n", err);
			return -1;
		}
		*name = c->transport.vgpu_name;
		return 0;
	}
	if (!*name || !**name) {
		if (path && *path)
			fprintf(stderr, "vgpu: VGPU is not set: name the "
					"vGPU to use\n");
		else /* nothing says where it runs: a VM or a host */
			fprintf(stderr,
				"vgpu: no vGPU: in a VM there is no %s (is "
				"vgpu_guest.ko loaded and a vGPU attached?); "
				"on a host, set VGPU to the vGPU's name\n",
				CLIENT_DEFAULT_DEVICE);
		return -1;
	}
	if (!path || !*path)
		path = CLIENT_DEFAULT_SOCKET;
	if (client_transport_connect(&c->transport, path, *name, err,
				     sizeof(err))) {
		fprintf(stderr, "vgpu: %s\n", err);
		return -1;
	}
	return 0;
}

static void client_init_once(void)
{
	struct client *c = &client_the;
	char err[VGPU_MESSAGE_MAX + 128];
	const char *name = getenv("VGPU");
	const struct client_error_entry *e;
	CUresult rc;

	client_va_report();
	if (client_connect(c, &name))
		goto fail;
	if (client_ring_init(&c->ring, c->transport.map, c->transport.map_size,
			     c->transport.sock, c->transport.submit_efd,
			     c->transport.complete_efd, err, sizeof(err))) {
		fprintf(stderr, "vgpu: vGPU '%s': %s\n", name, err);
		goto fail_transport;
	}
	/* in a VM the device's version is vgpud's; the worker behind it,
	 * adopted from an older vgpud, may speak an older minor (it writes
	 * its own into the ring header): the lower one holds */
	if (c->ring.hdr->minor < c->transport.minor) /* major checked */
		c->transport.minor = c->ring.hdr->minor;
	if (client_registry_init(&c->registry)) {
		fprintf(stderr, "vgpu: out of memory\n");
		goto fail_ring;
	}
	client_alloc_table_init(&c->allocs);
	client_region_table_init(&c->regions);
	pthread_mutex_init(&c->stage_lock, NULL);
	pthread_mutex_init(&c->primary_lock, NULL);
	pthread_mutex_init(&c->info_lock, NULL);
	client_order_init(&c->order);
	rc = client_fetch_info(c, &c->info);
	if (rc != CUDA_SUCCESS) {
		e = client_error_find(rc);
		fprintf(stderr, "vgpu: vGPU '%s' did not describe itself: %s\n",
			name, e ? e->name : "unknown error");
		goto fail_tables;
	}
	pthread_atfork(NULL, NULL, client_atfork_child);
	__atomic_store_n(&client_state, CUDA_SUCCESS, __ATOMIC_RELEASE);
	return;

fail_tables:
	pthread_mutex_destroy(&c->info_lock);
	pthread_mutex_destroy(&c->primary_lock);
	pthread_mutex_destroy(&c->stage_lock);
	client_alloc_table_fini(&c->allocs);
	client_region_table_fini(&c->regions);
	client_registry_fini(&c->registry);
fail_ring:
	client_ring_fini(&c->ring);
fail_transport:
	client_transport_close(&c->transport);
fail:
	__atomic_store_n(&client_state, CUDA_ERROR_NO_DEVICE, __ATOMIC_RELEASE);
}

CUresult client_init(void)
{
	if (client_forked)
		return CUDA_ERROR_NOT_INITIALIZED;
	pthread_once(&client_once, client_init_once);
	return __atomic_load_n(&client_state, __ATOMIC_ACQUIRE);
}

CUresult client_get(struct client **c)
{
	/* threads that never called cuInit see the state through this */
	if (client_forked ||
	    __atomic_load_n(&client_state, __ATOMIC_ACQUIRE) != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	*c = &client_the;
	return CUDA_SUCCESS;
}

CUresult client_enter(struct client **c)
{
	CUresult err = client_get(c);

	if (err != CUDA_SUCCESS)
		return err;
	return client_ctx_require(*c);
}
