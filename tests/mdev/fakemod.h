/* SPDX-License-Identifier: MIT */
/*
 * The test's model of vgpu_mdev.ko, on the far end of fakectl_shim.so
 * (fakectl.h): the type catalogue, instances and channels with the
 * module's state rules (mdev/vgpu_mdev_ctl.c, vgpu_mdev_chan.c), the
 * event queue, and a fake sysfs tree whose "create" and "remove" files
 * are FIFOs the model reads, as the kernel would act on those writes.
 */
#ifndef VGPU_TEST_FAKEMOD_H
#define VGPU_TEST_FAKEMOD_H

#include <stdbool.h>
#include <stdint.h>

#include <vgpu/mdev_ctl.h>
#include <vgpu/pci.h>

#define FM_TYPES 6
#define FM_INSTS 16

struct fm_chan {
	uint32_t state; /* enum vgpu_channel_state */
	int error;
	int doorbell, complete; /* from CHANNEL_SETUP, or -1 */
};

struct fm_inst {
	bool used;
	uint32_t id;
	uint8_t uuid[16];
	uint32_t type;
	bool pending; /* CREATE sent, no CREATE_DONE yet */
	int status;   /* the CREATE_DONE's */
	char message[VGPU_MDEV_TEXT_MAX];
	bool composed, open;
	unsigned int composes; /* CREATE_DONEs with status 0 */
	uint32_t dev_state;
	int dev_error;
	struct vgpu_mdev_create_done comp;
	int bar2;	/* the memfd of the latest CREATE_DONE or SET_BAR2,
			   or -1 (dropped at a VFIO close, as the module) */
	int bar2_first; /* the first one (kept to compare), or -1 */
	unsigned int bar2_sets; /* SET_BAR2s taken */
	struct fm_chan chan[VGPU_PCI_MAX_CHANNELS];
};

struct fm {
	int listen, ev, io; /* vgpud's connections, -1 when none */
	char sock[108];	    /* where listen is bound */
	char sysfs[256];
	int create_fifo[FM_TYPES];
	struct vgpu_mdev_type_info types[FM_TYPES];
	uint32_t avail[FM_TYPES];
	char desc[FM_TYPES][VGPU_MDEV_TEXT_MAX];
	unsigned int avail_sets, get_types, chan_state_einval;
	bool hello;
	struct fm_inst inst[FM_INSTS];
	uint32_t next_id;
};

/* Listen on sock; the fake sysfs under sysfs (created). 0 or -1. */
int fm_init(struct fm *m, const char *sock, const char *sysfs);
/* The module is loaded (listen on its socket again) or unloaded (vgpud's
 * open of /dev/vgpu-ctl then fails with ENOENT). 0 or -1. */
int fm_listen(struct fm *m);
void fm_unlisten(struct fm *m);
/* Accept vgpud's two connections (its open of /dev/vgpu-ctl). */
int fm_accept(struct fm *m, int timeout_ms);
/* Serve vgpud's ioctls and the fake sysfs writes for up to timeout_ms,
 * or until pred(m, arg) holds (checked after each one). */
bool fm_wait(struct fm *m, bool (*pred)(struct fm *, void *), void *arg,
	     int timeout_ms);
/* vgpud is gone (its connections closed): what the module does then. */
void fm_daemon_gone(struct fm *m);
/* An instance, as a sysfs create makes it: CREATE queued. */
struct fm_inst *fm_create(struct fm *m, uint32_t type, const uint8_t uuid[16]);
struct fm_inst *fm_find_uuid(struct fm *m, const uint8_t uuid[16]);
/* Queue an event of in (channel for CHANNEL_*). */
void fm_event(struct fm *m, uint32_t type, struct fm_inst *in, uint32_t ch,
	      uint32_t instance_override);
/* The guest's CTRL writes and a VFIO close, with the module's rules. */
void fm_guest_open(struct fm *m, struct fm_inst *in, uint32_t ch);
void fm_guest_close(struct fm *m, struct fm_inst *in, uint32_t ch);
/* A VFIO open: false (nothing done) while the instance has no BAR2
 * memfd, where the module would wait for vgpud's SET_BAR2. */
bool fm_vfio_open(struct fm *m, struct fm_inst *in);
void fm_vfio_close(struct fm *m, struct fm_inst *in);
/* A removal (sysfs remove): REMOVE queued, the instance dropped. */
void fm_remove(struct fm *m, struct fm_inst *in);
int fm_type_index(const struct fm *m, const char *name);

#endif /* VGPU_TEST_FAKEMOD_H */
