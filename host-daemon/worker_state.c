/* SPDX-License-Identifier: MIT */
/*
 * Suspend, resume and migration in the worker (VGPU_CTL_SAVE / RESTORE;
 * docs/DESIGN.md, "Save, restore and migration").
 *
 *   suspend: at a kernel boundary (worker_freeze), the vGPU's state goes
 *     to the file vgpud passed (state_file.h: the allocation table, the
 *     clients' library images, their module-scope variables, the memory
 *     of every mapped granule), then its physical memory is unmapped.
 *     The client threads stay frozen: a client's call waits until the
 *     resume (its ring, handles, streams, events and libraries stay as
 *     they were). The file stays open here for the resume.
 *   resume: the whole file is checked first (state_file_verify: header,
 *     every CRC, the structure, the vGPU's name and window, and every
 *     live allocation in it): a bad file is refused with the reason and
 *     the vGPU stays suspended as it was. Then the slice moves where
 *     vgpud planned it (migrate_* on an empty window, when that is
 *     another GPU or other groups), the memory is mapped again and
 *     filled from the file, the module variables are written back, and
 *     the clients go on with the same device pointers. A client that left
 *     meanwhile (its allocations freed) only makes its part of the file
 *     unused.
 *   migrate: the backend prepares the target while the clients go on,
 *     then copies and switches at a kernel boundary (backend.h).
 *
 * Main thread only. Every request is answered with VGPU_CTL_SAVED.
 */
#include <cuda.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl_msg.h"
#include "state_file.h"
#include "worker_part.h"
#include "worker_state.h"

#define PROGRESS_NS (200ull * 1000000ull) /* PROGRESS at most this often */
#define STATE_CHUNK STATE_MEMORY_CHUNK

/* A run of mapped granules [start, end). */
struct run {
	uint64_t start, end;
};

/* ---- helpers -------------------------------------------------------- */

void worker_state_answer(struct worker *w, struct vgpu_ctl_saved *r, int fd)
{
	int ctl = __atomic_load_n(&w->ctl_fd, __ATOMIC_ACQUIRE);

	r->message[sizeof(r->message) - 1] = '\0';
	r->sm_count = w->info.sm_count;
	r->gpu = w->cfg.gpu;
	r->change_count = __atomic_load_n(&w->change_count, __ATOMIC_ACQUIRE);
	if (ctl >= 0)
		ctl_send(ctl, VGPU_CTL_SAVED, r, sizeof(*r), fd);
}

void worker_state_refuse(struct worker *w, uint32_t seq, uint32_t op,
			 int32_t status, const char *msg)
{
	struct vgpu_ctl_saved r;

	memset(&r, 0, sizeof(r));
	r.seq = seq;
	r.op = op;
	r.status = status;
	snprintf(r.message, sizeof(r.message), "%s", msg);
	worker_log(w, "state op %u refused: %s", op, r.message);
	worker_state_answer(w, &r, -1);
}

/* PROGRESS to vgpud, at most every PROGRESS_NS (and at the end). */
static void progress(struct worker *w, uint64_t done, uint64_t total)
{
	struct worker_state *st = w->state;
	struct vgpu_ctl_progress p;
	uint64_t now = worker_now_ns();
	int ctl = __atomic_load_n(&w->ctl_fd, __ATOMIC_ACQUIRE);

	if (ctl < 0 || !st->seq ||
	    (done < total && now - st->progress_ns < PROGRESS_NS))
		return;
	st->progress_ns = now;
	memset(&p, 0, sizeof(p));
	p.seq = st->seq;
	p.op = st->op;
	p.done = done;
	p.total = total;
	ctl_send(ctl, VGPU_CTL_PROGRESS, &p, sizeof(p), -1);
}

/*
 * The runs of mapped granules: every granule a live allocation touches
 * (the sub-allocator maps exactly those). *n runs in a new array.
 */
static struct run *mapped_runs(struct worker *w, size_t *n, uint64_t *bytes)
{
	uint64_t pos = 0, a, sz, g = w->mem.granule, s, e;
	struct run *v = NULL, *t;
	size_t cap = 0;
	uint32_t owner;

	*n = 0;
	*bytes = 0;
	pthread_rwlock_rdlock(&w->mem_lock);
	while (suballoc_next(&w->mem, &pos, &a, &sz, &owner)) {
		s = a / g * g;
		e = (a + sz + g - 1) / g * g;
		if (*n && s <= v[*n - 1].end) {
			if (e > v[*n - 1].end)
				v[*n - 1].end = e;
			continue;
		}
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			t = realloc(v, cap * sizeof(*v));
			if (!t) {
				free(v);
				pthread_rwlock_unlock(&w->mem_lock);
				*n = (size_t)-1;
				return NULL;
			}
			v = t;
		}
		v[(*n)++] = (struct run){s, e};
	}
	pthread_rwlock_unlock(&w->mem_lock);
	for (size_t i = 0; i < *n; i++)
		*bytes += v[i].end - v[i].start;
	return v;
}

/* Whether the backend's slice is on gpu, over exactly these groups. */
static bool slice_is(const struct worker *w, uint32_t gpu,
		     const uint32_t *groups, uint32_t ngroups)
{
	return w->cfg.gpu == gpu && w->cfg.ngroups == ngroups &&
	       !memcmp(w->cfg.groups, groups, ngroups * sizeof(*groups));
}

/* After the backend moved the slice: the config says where it is now. */
static void config_moved(struct worker *w, uint32_t gpu, const uint32_t *groups,
			 uint32_t ngroups)
{
	w->cfg.gpu = gpu;
	w->cfg.ngroups = ngroups;
	memset(w->cfg.groups, 0, sizeof(w->cfg.groups));
	memcpy(w->cfg.groups, groups, ngroups * sizeof(*groups));
	if (w->part)
		w->part->reclaiming = w->ops->resize_reclaim != NULL;
}

/* Move the slice (nothing of it may run). CUresult, err on failure. */
static int move_slice(struct worker *w, uint32_t gpu, const uint32_t *groups,
		      uint32_t ngroups, struct backend_move_info *mi, char *err,
		      size_t len)
{
	struct backend_move *m = NULL;
	int rc;

	memset(mi, 0, sizeof(*mi));
	if (slice_is(w, gpu, groups, ngroups))
		return CUDA_SUCCESS;
	if (!w->ops->migrate_prepare) {
		snprintf(err, len, "the %s backend cannot move a slice",
			 w->ops->name);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	rc = w->ops->migrate_prepare(w->be, gpu, groups, ngroups, &m, err, len);
	if (rc == CUDA_SUCCESS)
		rc = w->ops->migrate_commit(w->be, m, mi, err, len);
	if (rc == CUDA_SUCCESS)
		config_moved(w, gpu, groups, ngroups);
	return rc;
}

/* ---- set-up ------------------------------------------------------------ */

int worker_state_init(struct worker *w)
{
	struct worker_state *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	st->file_fd = -1;
	st->sp_fd = -1;
	w->state = st;
	return worker_savepoint_init(w);
}

void worker_state_fini(struct worker *w)
{
	struct worker_state *st = w->state;

	if (!st)
		return;
	worker_savepoint_fini(w);
	if (st->file_fd >= 0)
		close(st->file_fd);
	free(st);
	w->state = NULL;
}

/* ---- suspend ------------------------------------------------------------ */

/* Counts for the header: libraries with a kept image, module variables. */
static void count_code(struct worker_session **v, uint32_t n, uint32_t *nlibs,
		       uint32_t *nglobals)
{
	struct worker_library *lib;
	uint32_t i, pos, h;

	*nlibs = *nglobals = 0;
	for (i = 0; i < n; i++) {
		pos = 0;
		while ((lib = handle_table_next(&v[i]->h.libraries, &pos, &h)))
			*nlibs += lib->image != NULL;
		*nglobals += v[i]->h.globals.n;
	}
}

/* The allocation table, in records of at most STATE_ALLOCS_PER_RECORD. */
static int write_allocs(struct worker *w, struct state_writer *sw,
			uint64_t nallocs)
{
	struct state_alloc *a;
	uint64_t pos = 0, left = nallocs, k, i;
	int rc = 0;

	a = malloc(STATE_ALLOCS_PER_RECORD * sizeof(*a));
	if (!a)
		return -ENOMEM;
	pthread_rwlock_rdlock(&w->mem_lock);
	while (left && !rc) {
		k = left < STATE_ALLOCS_PER_RECORD ? left
						   : STATE_ALLOCS_PER_RECORD;
		for (i = 0; i < k; i++) {
			memset(&a[i], 0, sizeof(a[i]));
			if (!suballoc_next(&w->mem, &pos, &a[i].va, &a[i].size,
					   &a[i].owner))
				break;
		}
		if (i != k) {
			rc = -EIO; /* the table changed under us: a bug */
			break;
		}
		rc = state_writer_record(sw, STATE_REC_ALLOCS, a,
					 k * sizeof(*a), NULL, 0);
		left -= k;
	}
	pthread_rwlock_unlock(&w->mem_lock);
	free(a);
	return rc;
}

/* Library images and module variables of every client. */
static int write_code(struct worker *w, struct state_writer *sw,
		      struct worker_session **v, uint32_t n, char *err,
		      size_t len)
{
	struct worker_library *lib;
	struct state_library sl;
	struct state_global sg;
	uint32_t i, j, pos, h;
	uint8_t *buf;
	int rc;

	for (i = 0; i < n; i++) {
		pos = 0;
		while ((lib = handle_table_next(&v[i]->h.libraries, &pos,
						&h))) {
			if (!lib->image)
				continue;
			sl.owner = v[i]->owner;
			sl.handle = h;
			sl.image_len = lib->image_len;
			rc = state_writer_record(sw, STATE_REC_LIBRARY, &sl,
						 sizeof(sl), lib->image,
						 lib->image_len);
			if (rc)
				return rc;
		}
		for (j = 0; j < v[i]->h.globals.n; j++) {
			const struct worker_global *g = &v[i]->h.globals.v[j];

			buf = malloc(g->bytes);
			if (!buf)
				return -ENOMEM;
			rc = w->ops->memcpy_dtoh(w->be, NULL, buf, g->addr,
						 g->bytes);
			if (rc) {
				free(buf);
				snprintf(err, len,
					 "reading a module variable of client "
					 "%u: CUDA error %d",
					 v[i]->owner, rc);
				worker_check(w, rc, "memcpy_dtoh");
				return -EIO;
			}
			sg.owner = v[i]->owner;
			sg.library = g->library;
			sg.addr = g->addr;
			sg.bytes = g->bytes;
			rc = state_writer_record(sw, STATE_REC_GLOBAL, &sg,
						 sizeof(sg), buf, g->bytes);
			free(buf);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* The memory of every run, in MEMORY records of at most STATE_CHUNK. */
static int write_memory(struct worker *w, struct state_writer *sw,
			const struct run *runs, size_t nruns, uint64_t total,
			char *err, size_t len)
{
	struct state_memory m;
	uint64_t va, c, done = 0;
	uint8_t *buf = malloc(STATE_CHUNK);
	size_t i;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < nruns && !rc; i++) {
		for (va = runs[i].start; va < runs[i].end && !rc; va += c) {
			c = runs[i].end - va < STATE_CHUNK ? runs[i].end - va
							   : STATE_CHUNK;
			rc = w->ops->memcpy_dtoh(w->be, NULL, buf, va, c);
			if (rc) {
				snprintf(err, len,
					 "reading the vGPU's memory at 0x%llx: "
					 "CUDA error %d",
					 (unsigned long long)va, rc);
				worker_check(w, rc, "memcpy_dtoh");
				rc = -EIO;
				break;
			}
			m.va = va;
			m.len = c;
			rc = state_writer_record(sw, STATE_REC_MEMORY, &m,
						 sizeof(m), buf, c);
			done += c;
			progress(w, done, total);
		}
	}
	free(buf);
	return rc;
}

/* The whole state file on fd. 0, or -errno / -EIO with err set. */
static int write_state(struct worker *w, int fd, const struct run *runs,
		       size_t nruns, uint64_t bytes, char *err, size_t len)
{
	struct worker_session **v;
	struct state_header h;
	struct state_writer sw;
	struct timespec now;
	uint32_t n, nlibs, nglobals;
	size_t i;
	int rc;

	v = worker_client_sessions(w, &n);
	if (!v)
		return -ENOMEM;
	count_code(v, n, &nlibs, &nglobals);
	memset(&h, 0, sizeof(h));
	snprintf(h.vgpu, sizeof(h.vgpu), "%s", w->cfg.name);
	h.backend = w->cfg.backend;
	h.va_base = w->cfg.va_base;
	h.va_size = w->cfg.va_size;
	h.granule = w->mem.granule;
	h.memory_quota = w->cfg.memory_quota;
	h.gpu = w->cfg.gpu;
	h.sm_count = w->info.sm_count;
	clock_gettime(CLOCK_REALTIME, &now);
	h.created_ns =
		(uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	h.memory_bytes = bytes;
	h.nallocs = (uint32_t)w->mem.nallocs;
	h.nlibraries = nlibs;
	h.nglobals = nglobals;
	for (i = 0; i < nruns; i++)
		h.nmemory += (uint32_t)((runs[i].end - runs[i].start +
					 STATE_CHUNK - 1) /
					STATE_CHUNK);
	rc = state_writer_init(&sw, fd, &h);
	if (!rc)
		rc = write_allocs(w, &sw, w->mem.nallocs);
	if (!rc)
		rc = write_code(w, &sw, v, n, err, len);
	if (!rc)
		rc = write_memory(w, &sw, runs, nruns, bytes, err, len);
	if (!rc)
		rc = state_writer_finish(&sw);
	if (!rc && fsync(fd) < 0 && errno != EINVAL && errno != EROFS)
		rc = -errno;
	if (rc && !err[0])
		snprintf(err, len, "writing the state: %s", strerror(-rc));
	state_writer_release(&sw);
	free(v);
	return rc;
}

static void do_suspend(struct worker *w, const struct vgpu_ctl_save *q, int fd)
{
	struct worker_state *st = w->state;
	struct vgpu_ctl_saved r;
	char err[VGPU_MESSAGE_MAX] = "";
	uint64_t t0 = worker_now_ns(), t1, bytes, quiesce = 0;
	struct run *runs;
	struct stat sb;
	size_t nruns, i;
	int rc;

	if (st->suspended) {
		worker_state_refuse(w, q->seq, q->op, CUDA_ERROR_ILLEGAL_STATE,
				    "it is suspended already");
		goto out;
	}
	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		worker_state_refuse(w, q->seq, q->op, CUDA_ERROR_INVALID_VALUE,
				    "the state must go to a regular file");
		goto out;
	}
	rc = worker_freeze(w, q->timeout_ms, &quiesce, err, sizeof(err));
	if (rc) {
		worker_state_refuse(w, q->seq, q->op, rc, err);
		goto out;
	}
	t1 = worker_now_ns();
	runs = mapped_runs(w, &nruns, &bytes);
	if (nruns == (size_t)-1) {
		worker_thaw(w);
		worker_state_refuse(w, q->seq, q->op, CUDA_ERROR_OUT_OF_MEMORY,
				    "out of memory");
		goto out;
	}
	rc = write_state(w, fd, runs, nruns, bytes, err, sizeof(err));
	if (rc) {
		free(runs);
		worker_thaw(w);
		worker_state_refuse(w, q->seq, q->op,
				    rc == -ENOSPC || rc == -EDQUOT
					    ? CUDA_ERROR_OUT_OF_MEMORY
					    : CUDA_ERROR_OPERATING_SYSTEM,
				    err);
		goto out;
	}
	/* the memory goes back: the sub-allocator keeps its bookkeeping */
	for (i = 0; i < nruns; i++) {
		rc = w->ops->mem_unmap(w->be, runs[i].start,
				       runs[i].end - runs[i].start);
		if (rc) {
			/* part of it is gone: the file holds it, but the
			 * running vGPU cannot go on like this */
			free(runs);
			worker_check(w, rc, "mem_unmap");
			w->fault(w, VGPU_FAULT_INTERNAL, rc,
				 "suspend: could not unmap the memory");
			goto out;
		}
	}
	free(runs);
	st->suspended = true;
	st->suspended_bytes = bytes;
	st->file_fd = fd;
	fd = -1;
	__atomic_store_n(&st->swap_wait_ns, (uint64_t)q->wait_ms * 1000000ull,
			 __ATOMIC_RELEASE);
	memset(&r, 0, sizeof(r));
	r.seq = q->seq;
	r.op = q->op;
	r.bytes = bytes;
	r.quiesce_ns = quiesce;
	r.copy_ns = worker_now_ns() - t1;
	r.blackout_ns = worker_now_ns() - t0; /* and on until the resume */
	r.total_ns = r.blackout_ns;
	worker_log(w,
		   "suspended: %.1f MiB saved in %.1f ms (kernel boundary "
		   "%.2f ms); GPU memory freed, clients wait",
		   bytes / 1048576.0, r.copy_ns / 1e6, quiesce / 1e6);
	worker_state_answer(w, &r, -1);
out:
	if (fd >= 0)
		close(fd);
}

/* ---- resume ---------------------------------------------------------------
 */

/* The file's allocation table against the live one: every live one must
 * be there (a client that left has extra ones in the file). */
struct match {
	struct worker *w;
	uint64_t pos; /* the live cursor */
	bool have;    /* cur is the next live allocation */
	struct state_alloc cur;
};

static bool live_next(struct match *m)
{
	uint32_t owner;

	pthread_rwlock_rdlock(&m->w->mem_lock);
	m->have = suballoc_next(&m->w->mem, &m->pos, &m->cur.va, &m->cur.size,
				&owner);
	pthread_rwlock_unlock(&m->w->mem_lock);
	m->cur.owner = owner;
	return m->have;
}

static void live_missing(const struct match *m, char *err, size_t len)
{
	snprintf(err, len,
		 "the vGPU's allocation at 0x%llx (%llu bytes, client %u) is "
		 "not in the file: it was saved from another state of the "
		 "vGPU",
		 (unsigned long long)m->cur.va, (unsigned long long)m->cur.size,
		 m->cur.owner);
}

static int alloc_match(void *ctx, const struct state_alloc *a, size_t n,
		       char *err, size_t len)
{
	struct match *m = ctx;
	size_t i;

	for (i = 0; i < n; i++) {
		if (m->have && m->cur.va < a[i].va) {
			live_missing(m, err, len);
			return -1;
		}
		if (!m->have || a[i].va + a[i].size <= m->cur.va)
			continue; /* a client that has left since */
		if (a[i].va != m->cur.va || a[i].size != m->cur.size ||
		    a[i].owner != m->cur.owner) {
			snprintf(err, len,
				 "the file's allocation at 0x%llx (%llu bytes, "
				 "client %u) is not the vGPU's (0x%llx, %llu "
				 "bytes, client %u): it was saved from another "
				 "state of the vGPU",
				 (unsigned long long)a[i].va,
				 (unsigned long long)a[i].size, a[i].owner,
				 (unsigned long long)m->cur.va,
				 (unsigned long long)m->cur.size, m->cur.owner);
			return -1;
		}
		live_next(m);
	}
	return 0;
}

/* The check of the file is the first half of the resume's progress. */
static void verify_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct match *m = ctx;

	progress(m->w, done, 2 * total);
}

/* [va, va + n) split along the runs: write what lies inside them. */
static int write_clipped(struct worker *w, const struct run *runs, size_t nruns,
			 uint64_t va, const uint8_t *buf, uint64_t n)
{
	uint64_t s, e;
	size_t i;
	int rc;

	for (i = 0; i < nruns; i++) {
		s = runs[i].start > va ? runs[i].start : va;
		e = runs[i].end < va + n ? runs[i].end : va + n;
		if (s >= e)
			continue;
		rc = w->ops->memcpy_htod(w->be, NULL, s, buf + (s - va), e - s);
		if (rc)
			return rc;
	}
	return CUDA_SUCCESS;
}

/* A module variable of the file back, where its client still has it. */
static int write_global(struct worker *w, struct worker_session **v, uint32_t n,
			const struct state_global *g, const uint8_t *data)
{
	uint32_t i, j;

	for (i = 0; i < n; i++) {
		if (v[i]->owner != g->owner)
			continue;
		for (j = 0; j < v[i]->h.globals.n; j++) {
			const struct worker_global *x = &v[i]->h.globals.v[j];

			if (x->addr == g->addr && x->bytes == g->bytes &&
			    x->library == g->library)
				return w->ops->memcpy_htod(w->be, NULL, g->addr,
							   data, g->bytes);
		}
	}
	return CUDA_SUCCESS; /* its library is gone: nothing to restore */
}

/* The second pass: the file's contents into the mapped memory. */
static int apply_file(struct worker *w, int fd, const struct run *runs,
		      size_t nruns, uint64_t total, char *err, size_t len)
{
	struct worker_session **v;
	struct state_reader r;
	struct state_rec rec;
	union {
		struct state_memory m;
		struct state_global g;
	} u;
	uint8_t *buf = malloc(STATE_CHUNK);
	uint64_t done = 0;
	uint32_t n = 0;
	int k, rc = CUDA_SUCCESS;

	v = worker_client_sessions(w, &n);
	if (!buf || !v) {
		free(buf);
		free(v);
		snprintf(err, len, "out of memory");
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (state_reader_init(&r, fd, err, len)) {
		rc = CUDA_ERROR_INVALID_IMAGE;
		goto out;
	}
	while ((k = state_reader_next(&r, &rec, err, len)) == 1) {
		if (rec.type == STATE_REC_MEMORY) {
			if (state_reader_data(&r, &u.m, sizeof(u.m), err,
					      len) ||
			    u.m.len > STATE_CHUNK ||
			    state_reader_data(&r, buf, u.m.len, err, len))
				break;
			rc = write_clipped(w, runs, nruns, u.m.va, buf,
					   u.m.len);
			done += u.m.len;
			progress(w, total + done, 2 * total);
		} else if (rec.type == STATE_REC_GLOBAL) {
			if (state_reader_data(&r, &u.g, sizeof(u.g), err,
					      len) ||
			    u.g.bytes > STATE_CHUNK ||
			    state_reader_data(&r, buf, u.g.bytes, err, len))
				break;
			rc = write_global(w, v, n, &u.g, buf);
		}
		if (rc) {
			snprintf(err, len, "writing the memory: CUDA error %d",
				 rc);
			worker_check(w, rc, "memcpy_htod");
			goto out;
		}
	}
	if (k != 0) {
		rc = CUDA_ERROR_INVALID_IMAGE; /* it changed since the check */
		if (!strstr(err, "changed"))
			strncat(err, " (the file changed while it was read)",
				len - strlen(err) - 1);
	}
out:
	state_reader_release(&r);
	free(buf);
	free(v);
	return rc;
}

/* The backend's own map and unmap for suballoc_map_live (the worker's
 * callbacks do nothing while it is suspended). */
static int resume_map(void *ctx, uint64_t va, uint64_t len)
{
	struct worker *w = ctx;

	return w->ops->mem_map(w->be, va, len);
}

static int resume_unmap(void *ctx, uint64_t va, uint64_t len)
{
	struct worker *w = ctx;

	return w->ops->mem_unmap(w->be, va, len);
}

/* Map the allocations again in the spans their frees will unmap (the
 * backend unmaps only what one map mapped), or unmap them. */
static int remap_live(struct worker *w, bool map)
{
	int rc;

	pthread_rwlock_rdlock(&w->mem_lock);
	rc = map ? suballoc_map_live(&w->mem, resume_map, resume_unmap, w)
		 : suballoc_unmap_live(&w->mem, resume_unmap, w);
	pthread_rwlock_unlock(&w->mem_lock);
	return rc;
}

static void do_resume(struct worker *w, const struct vgpu_ctl_restore *q,
		      int fd)
{
	struct worker_state *st = w->state;
	struct vgpu_ctl_saved r;
	struct state_expect e;
	struct state_header hdr;
	struct match m;
	struct backend_move_info mi, back;
	char err[VGPU_MESSAGE_MAX] = "", e2[VGPU_MESSAGE_MAX];
	uint64_t t0 = worker_now_ns(), t1, bytes;
	uint32_t old_gpu = w->cfg.gpu, old_n = w->cfg.ngroups;
	uint32_t old_groups[VGPU_MAX_SM_GROUPS];
	struct run *runs = NULL;
	size_t nruns = 0;
	bool mapped = false;
	int use = fd >= 0 ? fd : st->file_fd, rc;

	memcpy(old_groups, w->cfg.groups, sizeof(old_groups));
	if (!st->suspended) {
		worker_state_refuse(w, q->seq, q->op, CUDA_ERROR_ILLEGAL_STATE,
				    "it is not suspended");
		goto out;
	}
	if (use < 0) {
		worker_state_refuse(w, q->seq, q->op, CUDA_ERROR_INVALID_VALUE,
				    "there is no state file to resume from");
		goto out;
	}
	/* pass 1: the whole file, checked, nothing changed */
	memset(&m, 0, sizeof(m));
	m.w = w;
	live_next(&m);
	memset(&e, 0, sizeof(e));
	e.vgpu = w->cfg.name;
	e.va_base = w->cfg.va_base;
	e.va_size = w->cfg.va_size;
	e.granule = w->mem.granule;
	e.alloc_match = alloc_match;
	e.progress = verify_progress;
	e.ctx = &m;
	rc = state_file_verify(use, &e, &hdr, err, sizeof(err));
	if (rc == 0 && m.have) {
		live_missing(&m, err, sizeof(err));
		rc = -1;
	}
	if (rc) {
		worker_state_refuse(w, q->seq, q->op, CUDA_ERROR_INVALID_IMAGE,
				    err);
		goto out;
	}
	t1 = worker_now_ns();
	/* the slice where vgpud planned it */
	rc = move_slice(w, q->gpu, q->groups, q->ngroups, &mi, err,
			sizeof(err));
	if (rc) {
		worker_state_refuse(w, q->seq, q->op, rc, err);
		goto out;
	}
	runs = mapped_runs(w, &nruns, &bytes);
	if (nruns == (size_t)-1) {
		nruns = 0;
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		snprintf(err, sizeof(err), "out of memory");
		goto undo;
	}
	rc = remap_live(w, true);
	if (rc) {
		snprintf(err, sizeof(err),
			 "GPU %u lacks the memory to map the vGPU's %.1f MiB "
			 "(CUDA error %d)",
			 w->cfg.gpu, bytes / 1048576.0, rc);
		goto undo;
	}
	mapped = true;
	/* pass 2: the contents */
	rc = apply_file(w, use, runs, nruns, hdr.memory_bytes, err,
			sizeof(err));
	if (rc)
		goto undo;
	st->suspended = false;
	__atomic_store_n(&w->dirty_all, 1, __ATOMIC_RELAXED);
	if (st->file_fd >= 0 && st->file_fd != fd)
		close(st->file_fd);
	st->file_fd = -1;
	worker_publish_info(w, NULL);
	worker_thaw(w);
	memset(&r, 0, sizeof(r));
	r.seq = q->seq;
	r.op = q->op;
	r.bytes = bytes;
	r.prepare_ns = t1 - t0; /* the check of the file */
	r.copy_ns = worker_now_ns() - t1;
	r.total_ns = worker_now_ns() - t0;
	r.blackout_ns = r.total_ns;
	worker_log(w,
		   "resumed on GPU %u (%u SMs): %.1f MiB back in %.1f ms "
		   "(file checked in %.1f ms)",
		   w->cfg.gpu, w->info.sm_count, bytes / 1048576.0,
		   r.copy_ns / 1e6, r.prepare_ns / 1e6);
	free(runs);
	worker_state_answer(w, &r, -1);
	if (fd >= 0)
		close(fd);
	return;
undo:
	if (mapped)
		remap_live(w, false);
	free(runs);
	if (!slice_is(w, old_gpu, old_groups, old_n) &&
	    move_slice(w, old_gpu, old_groups, old_n, &back, e2, sizeof(e2)))
		worker_log(w, "moving the suspended slice back failed: %s", e2);
	worker_state_refuse(w, q->seq, q->op, rc, err);
out:
	if (fd >= 0)
		close(fd);
}

/* ---- migrate ---------------------------------------------------------------
 */

static void do_migrate(struct worker *w, const struct vgpu_ctl_restore *q)
{
	struct backend_move_info mi;
	struct backend_move *m = NULL;
	struct vgpu_ctl_saved r;
	char err[VGPU_MESSAGE_MAX] = "";
	uint64_t t0 = worker_now_ns(), t1, t2, quiesce = 0;
	uint32_t from = w->cfg.gpu;
	int rc;

	if (w->state->suspended) {
		worker_state_refuse(
			w, q->seq, q->op, CUDA_ERROR_ILLEGAL_STATE,
			"it is suspended: resume it onto the other GPU "
			"instead");
		return;
	}
	if (!w->ops->migrate_prepare) {
		snprintf(err, sizeof(err),
			 "the %s backend cannot migrate a vGPU", w->ops->name);
		worker_state_refuse(w, q->seq, q->op, CUDA_ERROR_NOT_SUPPORTED,
				    err);
		return;
	}
	if (slice_is(w, q->gpu, q->groups, q->ngroups)) {
		worker_state_refuse(w, q->seq, q->op, CUDA_ERROR_INVALID_VALUE,
				    "it is there already");
		return;
	}
	/* the target, made ready while the clients go on */
	rc = w->ops->migrate_prepare(w->be, q->gpu, q->groups, q->ngroups, &m,
				     err, sizeof(err));
	if (rc) {
		worker_state_refuse(w, q->seq, q->op, rc, err);
		worker_check(w, rc, "migrate_prepare");
		return;
	}
	t1 = worker_now_ns();
	rc = worker_freeze(w, q->timeout_ms, &quiesce, err, sizeof(err));
	if (rc) {
		w->ops->migrate_abort(w->be, m);
		worker_state_refuse(w, q->seq, q->op, rc, err);
		return;
	}
	rc = w->ops->migrate_commit(w->be, m, &mi, err, sizeof(err));
	if (rc) {
		worker_thaw(w);
		worker_state_refuse(w, q->seq, q->op, rc, err);
		worker_check(w, rc, "migrate_commit");
		return;
	}
	config_moved(w, q->gpu, q->groups, q->ngroups);
	worker_publish_info(w, NULL);
	__atomic_store_n(&w->dirty_all, 1, __ATOMIC_RELAXED);
	worker_thaw(w);
	t2 = worker_now_ns();
	memset(&r, 0, sizeof(r));
	r.seq = q->seq;
	r.op = q->op;
	r.bytes = mi.bytes;
	r.quiesce_ns = quiesce;
	r.prepare_ns = t1 - t0;
	r.copy_ns = mi.copy_ns;
	r.remap_ns = mi.remap_ns;
	r.blackout_ns = t2 - t1;
	r.total_ns = t2 - t0;
	r.peer = mi.peer;
	worker_log(w,
		   "migrated GPU %u -> %u (%u SMs): %.1f MiB %s; prepare %.2f "
		   "ms (context %.2f, memory made %.2f, access %.2f), kernel "
		   "boundary %.2f ms, copy %.2f ms, remap %.2f ms, clients "
		   "held %.2f ms",
		   from, w->cfg.gpu, w->info.sm_count, mi.bytes / 1048576.0,
		   mi.peer ? "GPU to GPU" : "through the host",
		   r.prepare_ns / 1e6, mi.prepare_slice_ns / 1e6,
		   mi.prepare_create_ns / 1e6, mi.prepare_access_ns / 1e6,
		   quiesce / 1e6, mi.copy_ns / 1e6, mi.remap_ns / 1e6,
		   r.blackout_ns / 1e6);
	worker_state_answer(w, &r, -1);
	worker_part_tick(w); /* reclaim the old context at once if idle */
}

/* ---- requests -------------------------------------------------------------
 */

void worker_state_save(struct worker *w, const void *payload, uint32_t len,
		       int fd)
{
	struct vgpu_ctl_save q;

	if (len != sizeof(q)) {
		worker_log(w, "SAVE message of %u bytes ignored (needs %zu)",
			   len, sizeof(q));
		if (fd >= 0)
			close(fd);
		return;
	}
	memcpy(&q, payload, sizeof(q));
	if (!w->state || __atomic_load_n(&w->faulting, __ATOMIC_ACQUIRE)) {
		worker_state_refuse(w, q.seq, q.op, CUDA_ERROR_ILLEGAL_STATE,
				    "the vGPU is failing");
		if (fd >= 0)
			close(fd);
		return;
	}
	w->state->seq = q.seq;
	w->state->op = q.op;
	if (q.op == VGPU_STATE_SUSPEND) {
		do_suspend(w, &q, fd);
	} else {
		worker_state_refuse(w, q.seq, q.op, CUDA_ERROR_INVALID_VALUE,
				    "unknown SAVE operation");
		if (fd >= 0)
			close(fd);
	}
	w->state->seq = 0;
}

void worker_state_restore(struct worker *w, const void *payload, uint32_t len,
			  int fd)
{
	struct vgpu_ctl_restore q;
	uint64_t seen = 0, bound;
	uint32_t i;

	if (len != sizeof(q)) {
		worker_log(w, "RESTORE message of %u bytes ignored (needs %zu)",
			   len, sizeof(q));
		if (fd >= 0)
			close(fd);
		return;
	}
	memcpy(&q, payload, sizeof(q));
	if (!w->state || __atomic_load_n(&w->faulting, __ATOMIC_ACQUIRE)) {
		worker_state_refuse(w, q.seq, q.op, CUDA_ERROR_ILLEGAL_STATE,
				    "the vGPU is failing");
		goto close;
	}
	if (q.op == VGPU_STATE_RESUME || q.op == VGPU_STATE_MIGRATE) {
		if (!q.ngroups || q.ngroups > VGPU_MAX_SM_GROUPS ||
		    q.gpu >= VGPU_MAX_GPUS) {
			worker_state_refuse(
				w, q.seq, q.op, CUDA_ERROR_INVALID_VALUE,
				"RESTORE: gpu or ngroups out of range");
			goto close;
		}
		for (i = 0; i < q.ngroups; i++) {
			if (q.groups[i] >= VGPU_MAX_SM_GROUPS ||
			    (seen & (1ull << q.groups[i]))) {
				worker_state_refuse(
					w, q.seq, q.op,
					CUDA_ERROR_INVALID_VALUE,
					"RESTORE: an SM group is out of range "
					"or repeated");
				goto close;
			}
			seen |= 1ull << q.groups[i];
		}
	}
	w->state->seq = q.seq;
	w->state->op = q.op;
	switch (q.op) {
	case VGPU_STATE_RESUME:
		/* no call gives up on a swap-out while it comes back; a
		 * failed resume leaves the bound as it was */
		bound = __atomic_exchange_n(&w->state->swap_wait_ns, 0,
					    __ATOMIC_ACQ_REL);
		do_resume(w, &q, fd);
		if (w->state->suspended)
			__atomic_store_n(&w->state->swap_wait_ns, bound,
					 __ATOMIC_RELEASE);
		break;
	case VGPU_STATE_MIGRATE:
		if (fd >= 0)
			close(fd);
		do_migrate(w, &q);
		break;
	case VGPU_STATE_RECOVER:
		worker_savepoint_recover(w, &q, fd);
		break;
	default:
		worker_state_refuse(w, q.seq, q.op, CUDA_ERROR_INVALID_VALUE,
				    "unknown RESTORE operation");
		if (fd >= 0)
			close(fd);
	}
	w->state->seq = 0;
	return;
close:
	if (fd >= 0)
		close(fd);
}
