/* SPDX-License-Identifier: MIT */
/*
 * Periodic save points and their restore after a fault (worker_state.h;
 * docs/DESIGN.md, "Save, restore and migration").
 *
 * A vGPU whose config has save_interval_ms takes a save point that often,
 * at a kernel boundary (worker_freeze: the clients' calls wait meanwhile),
 * into a memfd: a mirror of its VA window (byte for byte at the same
 * offsets, sparse: only what was mapped takes memory) followed by a small
 * header and the allocation table. The first save point sends the memfd
 * to vgpud (VGPU_CTL_SAVED with SAVE_POINT), which keeps it.
 *
 * Incremental: a save point copies only the granules written since the
 * last one. The worker cannot see what a kernel writes, so a kernel
 * launch marks everything mapped (dirty_all); copies and memsets mark the
 * granules they write (worker_note_write); newly mapped granules count
 * as written; granules no longer mapped are punched out of the memfd. An
 * idle vGPU's save point copies nothing.
 *
 * The header is marked invalid while a save point is written and valid
 * after, so a fault in the middle of one leaves no torn save point that
 * would be taken for a good one (the vGPU then comes back empty).
 *
 * After a shared-domain fault vgpud starts the worker again and sends it
 * VGPU_STATE_RECOVER with the memfd before any client: the allocations
 * come back at their addresses with the saved contents, owned by
 * WORKER_OWNER_RECOVERED (the clients that made them died with the old
 * worker, since the guest library does not reconnect; any client of the
 * vGPU may use them), and the memfd goes on as this worker's mirror.
 */
#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "state_file.h"
#include "worker_state.h"

#define SP_FREEZE_MAX_MS 2000 /* a save point waits at most this */

/* After the mirror of the window: this, then the allocation table. */
struct sp_header {
	uint32_t magic; /* WORKER_SP_MAGIC */
	uint32_t valid; /* 0 while a save point is being written */
	uint64_t epoch; /* save points taken into this memfd */
	char vgpu[VGPU_NAME_MAX];
	uint64_t va_base, va_size, granule;
	uint64_t nallocs;  /* struct state_alloc entries after this */
	uint64_t saved_ns; /* CLOCK_REALTIME of the last one */
	uint64_t reserved[3];
};

static uint64_t ngranules(const struct worker *w)
{
	return w->cfg.va_size >> w->dirty_shift;
}

static size_t bitmap_bytes(const struct worker *w)
{
	return (size_t)((ngranules(w) + 63) / 64) * sizeof(uint64_t);
}

static int test_bit(const uint64_t *b, uint64_t i)
{
	return (b[i / 64] >> (i % 64)) & 1;
}

int worker_savepoint_init(struct worker *w)
{
	struct worker_state *st = w->state;
	uint64_t g = w->mem.granule;

	st->interval_ms = w->cfg.save_interval_ms;
	if (!st->interval_ms)
		return 0;
	w->dirty_shift = (uint32_t)__builtin_ctzll(g);
	st->sp_mapped = calloc(1, bitmap_bytes(w));
	w->dirty = calloc(1, bitmap_bytes(w));
	if (!st->sp_mapped || !w->dirty) {
		free(st->sp_mapped);
		free(w->dirty);
		st->sp_mapped = w->dirty = NULL;
		st->interval_ms = 0;
		return -ENOMEM;
	}
	w->dirty_all = 1; /* the first save point copies everything */
	st->sp_log = getenv("VGPU_SAVEPOINT_LOG") &&
		     !strcmp(getenv("VGPU_SAVEPOINT_LOG"), "1");
	st->next_ns = worker_now_ns() + st->interval_ms * 1000000ull;
	worker_log(w, "save points every %u ms", st->interval_ms);
	return 0;
}

void worker_savepoint_fini(struct worker *w)
{
	struct worker_state *st = w->state;

	if (st->sp_map)
		munmap(st->sp_map, w->cfg.va_size);
	if (st->sp_fd >= 0)
		close(st->sp_fd);
	st->sp_map = NULL;
	st->sp_fd = -1;
	free(st->sp_mapped);
	st->sp_mapped = NULL;
	free(w->dirty);
	w->dirty = NULL;
}

/* The mirror memfd, made on the first save point. */
static int mirror_create(struct worker *w)
{
	struct worker_state *st = w->state;
	void *p;
	int fd;

	fd = memfd_create("vgpu-savepoint", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)(w->cfg.va_size + sizeof(struct sp_header))) <
		    0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	p = mmap(NULL, w->cfg.va_size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (p == MAP_FAILED) {
		int e = -errno;

		close(fd);
		return e;
	}
	st->sp_fd = fd;
	st->sp_map = p;
	return 0;
}

static int put_header(struct worker *w, struct sp_header *h)
{
	ssize_t n =
		pwrite(w->state->sp_fd, h, sizeof(*h), (off_t)w->cfg.va_size);

	return n == (ssize_t)sizeof(*h) ? 0 : -EIO;
}

/* The allocation table after the header (grows the memfd as needed). */
static int put_allocs(struct worker *w, uint64_t *nallocs)
{
	uint64_t pos = 0, k = 0, cap = w->mem.nallocs;
	struct state_alloc *a = calloc(cap + 1, sizeof(*a));
	off_t at = (off_t)(w->cfg.va_size + sizeof(struct sp_header));
	struct stat sb;
	int rc = 0;

	if (!a)
		return -ENOMEM;
	pthread_rwlock_rdlock(&w->mem_lock);
	while (k < cap &&
	       suballoc_next(&w->mem, &pos, &a[k].va, &a[k].size, &a[k].owner))
		k++;
	pthread_rwlock_unlock(&w->mem_lock);
	if (fstat(w->state->sp_fd, &sb) == 0 &&
	    (uint64_t)sb.st_size < (uint64_t)at + k * sizeof(*a) &&
	    ftruncate(w->state->sp_fd, at + (off_t)(k * sizeof(*a))) < 0)
		rc = -errno;
	if (!rc && k &&
	    pwrite(w->state->sp_fd, a, k * sizeof(*a), at) !=
		    (ssize_t)(k * sizeof(*a)))
		rc = -EIO;
	free(a);
	*nallocs = k;
	return rc;
}

/*
 * The mapped granules now, as a bitmap; copy those that changed since
 * the last save point into the mirror, punch out those no longer mapped.
 * Frozen. *bytes: copied. CUresult or -errno.
 */
static int mirror_update(struct worker *w, uint64_t *bytes)
{
	struct worker_state *st = w->state;
	uint64_t n = ngranules(w), g = w->mem.granule, i, j, pos = 0, a, sz;
	uint64_t *cur = calloc(1, bitmap_bytes(w)), *d = w->dirty;
	int all = __atomic_load_n(&w->dirty_all, __ATOMIC_RELAXED), rc = 0;
	uint32_t owner;

	if (!cur)
		return -ENOMEM;
	pthread_rwlock_rdlock(&w->mem_lock);
	while (suballoc_next(&w->mem, &pos, &a, &sz, &owner)) {
		uint64_t f = (a - w->cfg.va_base) / g;
		uint64_t l = (a + sz - 1 - w->cfg.va_base) / g;

		for (i = f; i <= l; i++)
			cur[i / 64] |= 1ull << (i % 64);
	}
	pthread_rwlock_unlock(&w->mem_lock);
	for (i = 0; i < n && !rc;) {
		int need = test_bit(cur, i) && (all || test_bit(d, i) ||
						!test_bit(st->sp_mapped, i));

		if (!need) {
			if (!test_bit(cur, i) && test_bit(st->sp_mapped, i) &&
			    fallocate(st->sp_fd,
				      FALLOC_FL_PUNCH_HOLE |
					      FALLOC_FL_KEEP_SIZE,
				      (off_t)(i * g), (off_t)g) < 0)
				worker_log(w, "save point: punching a hole: %s",
					   strerror(errno));
			i++;
			continue;
		}
		for (j = i;
		     j < n && test_bit(cur, j) &&
		     (all || test_bit(d, j) || !test_bit(st->sp_mapped, j));
		     j++)
			;
		rc = w->ops->memcpy_dtoh(w->be, NULL, st->sp_map + i * g,
					 w->cfg.va_base + i * g, (j - i) * g);
		if (rc)
			worker_check(w, rc, "memcpy_dtoh (save point)");
		*bytes += (j - i) * g;
		i = j;
	}
	if (!rc) {
		memcpy(st->sp_mapped, cur, bitmap_bytes(w));
		memset(d, 0, bitmap_bytes(w));
		__atomic_store_n(&w->dirty_all, 0, __ATOMIC_RELAXED);
	}
	free(cur);
	return rc;
}

static void savepoint_take(struct worker *w)
{
	struct worker_state *st = w->state;
	struct vgpu_ctl_saved r;
	struct sp_header h;
	struct timespec now;
	char err[VGPU_MESSAGE_MAX] = "";
	uint64_t t0 = worker_now_ns(), quiesce = 0, bytes = 0, nallocs = 0;
	uint32_t tmo = st->interval_ms < SP_FREEZE_MAX_MS ? st->interval_ms
							  : SP_FREEZE_MAX_MS;
	int rc;

	if (st->sp_fd < 0 && (rc = mirror_create(w))) {
		if (!st->sp_failures++)
			worker_log(w, "save point: no memfd: %s",
				   strerror(-rc));
		return;
	}
	rc = worker_freeze(w, tmo, &quiesce, err, sizeof(err));
	if (rc) {
		/* a busy vGPU: the next one will do */
		if (!(st->sp_failures++ % 16))
			worker_log(w, "save point skipped: %s", err);
		return;
	}
	memset(&h, 0, sizeof(h));
	h.magic = WORKER_SP_MAGIC;
	h.valid = 0;
	h.epoch = st->sp_count;
	snprintf(h.vgpu, sizeof(h.vgpu), "%s", w->cfg.name);
	h.va_base = w->cfg.va_base;
	h.va_size = w->cfg.va_size;
	h.granule = w->mem.granule;
	rc = put_header(w, &h);
	if (!rc)
		rc = mirror_update(w, &bytes);
	if (!rc)
		rc = put_allocs(w, &nallocs);
	if (!rc) {
		clock_gettime(CLOCK_REALTIME, &now);
		h.valid = 1;
		h.epoch = ++st->sp_count;
		h.nallocs = nallocs;
		h.saved_ns = (uint64_t)now.tv_sec * 1000000000ull +
			     (uint64_t)now.tv_nsec;
		rc = put_header(w, &h);
	}
	worker_thaw(w);
	if (rc) {
		if (!(st->sp_failures++ % 16))
			worker_log(w, "save point failed: error %d", rc);
		return;
	}
	memset(&r, 0, sizeof(r));
	r.op = VGPU_STATE_SAVE_POINT;
	r.bytes = bytes;
	r.quiesce_ns = quiesce;
	r.blackout_ns = worker_now_ns() - t0;
	r.total_ns = r.blackout_ns;
	st->sp_bytes_total += bytes;
	st->sp_blackout_total_ns += r.blackout_ns;
	if (st->sp_log)
		worker_log(w,
			   "save point %llu: %.1f MiB copied, clients held "
			   "%.2f ms (kernel boundary %.2f ms)",
			   (unsigned long long)st->sp_count + 0ull,
			   bytes / 1048576.0, r.blackout_ns / 1e6,
			   quiesce / 1e6);
	snprintf(r.message, sizeof(r.message),
		 "save point %llu: %llu allocations, %.1f MiB copied",
		 (unsigned long long)st->sp_count, (unsigned long long)nallocs,
		 bytes / 1048576.0);
	/* vgpud keeps the memfd from the first one on */
	worker_state_answer(w, &r, st->sp_sent ? -1 : st->sp_fd);
	st->sp_sent = true;
}

void worker_state_tick(struct worker *w)
{
	struct worker_state *st = w->state;
	uint64_t now;

	if (!st || !st->interval_ms || st->suspended)
		return;
	now = worker_now_ns();
	if (now < st->next_ns)
		return;
	st->next_ns = now + st->interval_ms * 1000000ull;
	savepoint_take(w);
}

int worker_state_timeout(const struct worker *w, int timeout_ms)
{
	const struct worker_state *st = w->state;
	uint64_t now, left;

	if (!st || !st->interval_ms || st->suspended)
		return timeout_ms;
	now = worker_now_ns();
	left = st->next_ns > now ? (st->next_ns - now) / 1000000u + 1 : 0;
	if (timeout_ms < 0 || (uint64_t)timeout_ms > left)
		return (int)left;
	return timeout_ms;
}

/* ---- recovery --------------------------------------------------------------
 */

/* The save point's header and table, checked. NULL with err set. */
static struct state_alloc *read_savepoint(struct worker *w, int fd,
					  struct sp_header *h, char *err,
					  size_t len)
{
	struct state_alloc *a;
	uint64_t i, end, prev = 0, bytes;
	struct stat sb;

	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		snprintf(err, len, "the save point is not a memfd");
		return NULL;
	}
	if ((uint64_t)sb.st_size < w->cfg.va_size + sizeof(*h) ||
	    pread(fd, h, sizeof(*h), (off_t)w->cfg.va_size) !=
		    (ssize_t)sizeof(*h) ||
	    h->magic != WORKER_SP_MAGIC) {
		snprintf(err, len, "the save point has no header");
		return NULL;
	}
	if (!h->valid) {
		snprintf(err, len,
			 h->epoch ? "the last save point was cut short (the "
				    "fault came while it was written)"
				  : "no save point was taken before the fault");
		return NULL;
	}
	if (strncmp(h->vgpu, w->cfg.name, sizeof(h->vgpu)) ||
	    h->va_base != w->cfg.va_base || h->va_size != w->cfg.va_size ||
	    h->granule != w->mem.granule || h->nallocs > WORKER_MAX_ALLOCS) {
		snprintf(err, len,
			 "the save point is of another vGPU or window");
		return NULL;
	}
	bytes = h->nallocs * sizeof(*a);
	if ((uint64_t)sb.st_size < w->cfg.va_size + sizeof(*h) + bytes) {
		snprintf(err, len, "the save point's table is cut short");
		return NULL;
	}
	a = calloc(h->nallocs + 1, sizeof(*a));
	if (!a) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	if (bytes &&
	    pread(fd, a, bytes, (off_t)(w->cfg.va_size + sizeof(*h))) !=
		    (ssize_t)bytes) {
		free(a);
		snprintf(err, len, "the save point's table is unreadable");
		return NULL;
	}
	for (i = 0; i < h->nallocs; i++) {
		end = a[i].va + a[i].size;
		if (a[i].va < w->cfg.va_base || !a[i].size || end < a[i].va ||
		    end > w->cfg.va_base + w->cfg.va_size || a[i].va < prev ||
		    a[i].va % SUBALLOC_ALIGN) {
			free(a);
			snprintf(err, len,
				 "the save point's allocation %llu is "
				 "malformed",
				 (unsigned long long)i);
			return NULL;
		}
		prev = end;
	}
	return a;
}

void worker_savepoint_recover(struct worker *w,
			      const struct vgpu_ctl_restore *q, int fd)
{
	struct worker_state *st = w->state;
	struct vgpu_ctl_saved r;
	struct sp_header h;
	struct state_alloc *a = NULL;
	char err[VGPU_MESSAGE_MAX] = "";
	uint64_t t0 = worker_now_ns(), quiesce = 0, i, k = 0, bytes = 0;
	uint64_t g = w->mem.granule, pos = 0, s, sz;
	uint8_t *map = MAP_FAILED;
	uint32_t owner;
	int rc;

	if (fd < 0) {
		worker_state_refuse(w, q->seq, q->op, CUDA_ERROR_INVALID_VALUE,
				    "RECOVER without a save point");
		return;
	}
	a = read_savepoint(w, fd, &h, err, sizeof(err));
	if (!a) {
		worker_state_refuse(w, q->seq, q->op, CUDA_ERROR_INVALID_IMAGE,
				    err);
		goto out;
	}
	map = mmap(NULL, w->cfg.va_size, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (map == MAP_FAILED) {
		worker_state_refuse(w, q->seq, q->op, CUDA_ERROR_OUT_OF_MEMORY,
				    "cannot map the save point");
		goto out;
	}
	rc = worker_freeze(w, q->timeout_ms, &quiesce, err, sizeof(err));
	if (rc) {
		worker_state_refuse(w, q->seq, q->op, rc, err);
		goto out;
	}
	pthread_rwlock_wrlock(&w->mem_lock);
	for (k = 0; k < h.nallocs; k++) {
		rc = suballoc_alloc_at(&w->mem, a[k].va, a[k].size,
				       WORKER_OWNER_RECOVERED);
		if (rc)
			break;
	}
	if (rc) {
		for (i = 0; i < k; i++)
			suballoc_free(&w->mem, a[i].va, WORKER_OWNER_RECOVERED);
		pthread_rwlock_unlock(&w->mem_lock);
		worker_thaw(w);
		snprintf(err, sizeof(err),
			 "allocation 0x%llx (%llu bytes) could not come back "
			 "(%s)",
			 (unsigned long long)a[k].va,
			 (unsigned long long)a[k].size,
			 rc == -ENOMEM ? "no room in the quota or the GPU"
				       : "the range is taken");
		worker_state_refuse(w, q->seq, q->op, CUDA_ERROR_OUT_OF_MEMORY,
				    err);
		goto out;
	}
	pthread_rwlock_unlock(&w->mem_lock);
	/* the contents: every granule the allocations touch */
	rc = CUDA_SUCCESS;
	while (rc == CUDA_SUCCESS &&
	       suballoc_next(&w->mem, &pos, &s, &sz, &owner)) {
		uint64_t f = s / g * g, e = (s + sz + g - 1) / g * g;

		rc = w->ops->memcpy_htod(w->be, NULL, f,
					 map + (f - w->cfg.va_base), e - f);
		bytes += e - f;
	}
	if (rc) {
		worker_check(w, rc, "memcpy_htod (recover)");
		worker_thaw(w);
		snprintf(err, sizeof(err),
			 "writing the saved memory: CUDA error %d", rc);
		worker_state_refuse(w, q->seq, q->op, rc, err);
		goto out;
	}
	/* the memfd goes on as this worker's mirror, which now matches */
	if (st->interval_ms && st->sp_fd < 0) {
		st->sp_fd = fd;
		st->sp_map = map;
		st->sp_count = h.epoch;
		st->sp_sent = true;
		fd = -1;
		map = MAP_FAILED;
		pos = 0;
		memset(st->sp_mapped, 0, bitmap_bytes(w));
		while (suballoc_next(&w->mem, &pos, &s, &sz, &owner))
			for (i = (s - w->cfg.va_base) / g;
			     i <= (s + sz - 1 - w->cfg.va_base) / g; i++)
				st->sp_mapped[i / 64] |= 1ull << (i % 64);
		memset(w->dirty, 0, bitmap_bytes(w));
		__atomic_store_n(&w->dirty_all, 0, __ATOMIC_RELAXED);
	}
	worker_thaw(w);
	memset(&r, 0, sizeof(r));
	r.seq = q->seq;
	r.op = q->op;
	r.bytes = bytes;
	r.quiesce_ns = quiesce;
	r.copy_ns = worker_now_ns() - t0;
	r.total_ns = r.copy_ns;
	r.blackout_ns = r.copy_ns;
	snprintf(r.message, sizeof(r.message),
		 "%llu allocations and %.1f MiB back from save point %llu",
		 (unsigned long long)h.nallocs, bytes / 1048576.0,
		 (unsigned long long)h.epoch);
	worker_log(w, "recovered: %s", r.message);
	worker_state_answer(w, &r, -1);
out:
	free(a);
	if (map != MAP_FAILED)
		munmap(map, w->cfg.va_size);
	if (fd >= 0)
		close(fd);
}
