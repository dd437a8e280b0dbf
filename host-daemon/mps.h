/* SPDX-License-Identifier: MIT */
/*
 * The MPS control daemon that makes a GPU's shared fault domain: vgpud
 * uses one that already serves DIR/mps, or starts nvidia-cuda-mps-control
 * -d there and sends it "quit" when vgpud exits. cuda backend only.
 */
#ifndef VGPU_MPS_H
#define VGPU_MPS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct mps {
	char pipe_dir[PATH_MAX]; /* CUDA_MPS_PIPE_DIRECTORY */
	char log_dir[PATH_MAX];	 /* CUDA_MPS_LOG_DIRECTORY */
	char control[PATH_MAX];	 /* the nvidia-cuda-mps-control binary */
	bool active;		 /* a control daemon serves pipe_dir */
	bool started;		 /* we started it: quit it at exit */
};

/*
 * Make DIR/mps and DIR/mps-log (owned by the worker user, who runs every
 * MPS client), then find or start the control daemon. -1 and a sentence
 * in err when MPS cannot be had.
 */
int mps_start(struct mps *m, const char *run_dir, uid_t uid, gid_t gid,
	      char *err, size_t errlen);

/* Quit the control daemon if we started it; leaves others alone. */
void mps_stop(struct mps *m);

#endif /* VGPU_MPS_H */
