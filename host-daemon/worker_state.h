/* SPDX-License-Identifier: MIT */
/*
 * vgpu-worker's save, restore and migration (docs/DESIGN.md, "Save,
 * restore and migration"):
 *
 *   worker_freeze.c     the kernel boundary: client threads stop between
 *                       two descriptors (their calls wait), every stream
 *                       drains; and the thaw
 *   worker_state.c      VGPU_CTL_SAVE / RESTORE: suspend to a state file
 *                       (state_file.h) and resume from it; migration to
 *                       another GPU (backend.h: migrate_*)
 *   worker_savepoint.c  periodic save points into a memfd that vgpud
 *                       keeps, incremental (granules written since the
 *                       last one), and their restore after a fault
 *
 * Everything runs on the main thread, except the inline helpers below,
 * which client threads call.
 */
#ifndef VGPU_WORKER_STATE_H
#define VGPU_WORKER_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "worker.h"

/* A save point's mirror of the window, then its allocation table. */
#define WORKER_SP_MAGIC 0x54504756u /* "VGPT" */

/* The state behind it (main thread only). */
struct worker_state {
	/* suspended: memory unmapped, clients held (frozen) */
	bool suspended;
	int file_fd;	    /* the suspend's file, kept for RESUME; -1: none */
	char file_what[48]; /* "the state file" or "host memory" */
	uint64_t suspended_bytes;
	/* a swap-out's bound (VGPU_CTL_SAVE.wait_ms) in ns while suspended,
	 * 0 otherwise and while a resume runs (atomic: client threads) */
	uint64_t swap_wait_ns;
	/* periodic save points (worker_savepoint.c) */
	uint32_t interval_ms; /* 0: none */
	uint64_t next_ns;     /* the next one is due then */
	int sp_fd;	      /* the mirror memfd; -1 until the first */
	uint8_t *sp_map;      /* its mapping */
	uint64_t sp_size;
	uint64_t *sp_mapped; /* granules mapped at the last save point */
	bool sp_sent;	     /* vgpud has the memfd */
	uint64_t sp_count, sp_bytes_total, sp_blackout_total_ns;
	uint32_t sp_failures;
	bool sp_log; /* VGPU_SAVEPOINT_LOG=1: a log line per save point */
	/* the request being answered */
	uint32_t seq, op;
	uint64_t progress_ns; /* when the last PROGRESS went out */
};

/* Set up (after bring-up, before any client); 0 or -ENOMEM. */
int worker_state_init(struct worker *w);
/* Exit path: after the clients are stopped. */
void worker_state_fini(struct worker *w);

/* VGPU_CTL_SAVE / VGPU_CTL_RESTORE from vgpud (fd: the attached file or
 * -1; taken over). Always answered by VGPU_CTL_SAVED. */
void worker_state_save(struct worker *w, const void *payload, uint32_t len,
		       int fd);
void worker_state_restore(struct worker *w, const void *payload, uint32_t len,
			  int fd);
/* Main loop: a save point when one is due. */
void worker_state_tick(struct worker *w);
/* Main loop: its poll timeout, shortened to the next save point. */
int worker_state_timeout(const struct worker *w, int timeout_ms);

/* ---- worker_state.c, for worker_savepoint.c ---- */
/* SAVED to vgpud (sm_count, gpu, change_count filled in here), with fd
 * attached when >= 0. */
void worker_state_answer(struct worker *w, struct vgpu_ctl_saved *r, int fd);
void worker_state_refuse(struct worker *w, uint32_t seq, uint32_t op,
			 int32_t status, const char *msg);

/* ---- worker_savepoint.c ---- */
/* Save points as the config asks (cfg.save_interval_ms). 0 or -ENOMEM. */
int worker_savepoint_init(struct worker *w);
void worker_savepoint_fini(struct worker *w);
/* VGPU_STATE_RECOVER: the save point in the memfd fd (taken over). */
void worker_savepoint_recover(struct worker *w,
			      const struct vgpu_ctl_restore *q, int fd);

/* ---- worker_freeze.c ---- */

/*
 * Stop every client thread between two descriptors and wait until every
 * stream of every client is idle: a kernel boundary. At most timeout_ms
 * (0: VGPU_STATE_TIMEOUT_MS); on failure the clients go on and err says
 * why. *ns: how long it took. CUresult.
 */
int worker_freeze(struct worker *w, uint32_t timeout_ms, uint64_t *ns,
		  char *err, size_t len);
/* Let the client threads go on. */
void worker_thaw(struct worker *w);

/*
 * Client threads, before they touch their session outside the descriptor
 * loop (setting it up, freeing it): wait while the vGPU is frozen, unless
 * stop is set. *active is the thread's flag (worker_client.c); it is 1 on
 * return, and the freeze waits for it.
 */
void worker_state_enter(struct worker *w, int *active, const int *stop);

/* ---- worker_client.c ---- */
/* The sessions of the clients being served now (array to free); only
 * while frozen: none is set up or freed meanwhile. */
struct worker_session **worker_client_sessions(struct worker *w, uint32_t *n);

/* ---- inline: client threads ---- */

static inline bool worker_frozen(struct worker *w)
{
	return __atomic_load_n(&w->frozen, __ATOMIC_SEQ_CST) != 0;
}

/* A copy or memset wrote [va, va + len): its granules are dirty for the
 * next save point (nothing when save points are off). */
static inline void worker_note_write(struct worker *w, uint64_t va,
				     uint64_t len)
{
	uint64_t *d = w->dirty, off, i, last, bit;

	if (!d || !len || va < w->cfg.va_base ||
	    va - w->cfg.va_base >= w->cfg.va_size)
		return; /* module variables are saved whole each time */
	off = va - w->cfg.va_base;
	if (len > w->cfg.va_size - off)
		len = w->cfg.va_size - off;
	last = (off + len - 1) >> w->dirty_shift;
	for (i = off >> w->dirty_shift; i <= last; i++) {
		bit = 1ull << (i % 64);
		if (!(__atomic_load_n(&d[i / 64], __ATOMIC_RELAXED) & bit))
			__atomic_or_fetch(&d[i / 64], bit, __ATOMIC_RELAXED);
	}
}

/* A kernel ran: it may have written anywhere in the window. */
static inline void worker_note_launch(struct worker *w)
{
	if (w->dirty && !__atomic_load_n(&w->dirty_all, __ATOMIC_RELAXED))
		__atomic_store_n(&w->dirty_all, 1, __ATOMIC_RELAXED);
}

/* A swapped-out vGPU: how long a client's call may wait for it to come
 * back before it fails (0: no bound). Any thread. */
static inline uint64_t worker_swap_wait_ns(const struct worker *w)
{
	return w->state ? __atomic_load_n(&w->state->swap_wait_ns,
					  __ATOMIC_ACQUIRE)
			: 0;
}

/* Whether the vGPU's memory is unmapped (suspended). */
static inline bool worker_suspended(const struct worker *w)
{
	return w->state && w->state->suspended;
}

#endif /* VGPU_WORKER_STATE_H */
