/* SPDX-License-Identifier: MIT */
/*
 * vGPU state files (see state_file.h): writer, reader, whole-file check.
 *
 * Both ends go through a 4 MiB buffer with pwrite/pread at offsets they
 * track themselves, so the descriptor's own file offset is never used
 * (vgpu-admin or vgpud may share the open file description).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "state_file.h"

#define STATE_BUF (4u << 20)

static const uint8_t zeros[8];

static uint64_t pad8(uint64_t n)
{
	return (8 - (n & 7)) & 7;
}

static const char *human(uint64_t n, char *buf, size_t len)
{
	if (n >= (1ull << 30))
		snprintf(buf, len, "%.1f GiB", n / (double)(1ull << 30));
	else if (n >= (1ull << 20))
		snprintf(buf, len, "%.1f MiB", n / (double)(1ull << 20));
	else if (n >= 1024)
		snprintf(buf, len, "%.1f KiB", n / 1024.0);
	else
		snprintf(buf, len, "%" PRIu64 " bytes", n);
	return buf;
}

const char *state_rec_name(uint32_t type, char *buf, size_t len)
{
	switch (type) {
	case STATE_REC_ALLOCS:
		return "allocation table";
	case STATE_REC_LIBRARY:
		return "library";
	case STATE_REC_GLOBAL:
		return "module variable";
	case STATE_REC_MEMORY:
		return "memory";
	case STATE_REC_END:
		return "end";
	}
	snprintf(buf, len, "type %u", type);
	return buf;
}

/* ---- writer ------------------------------------------------------------ */

static int pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
	const uint8_t *b = p;
	ssize_t k;

	while (n) {
		k = pwrite(fd, b, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		b += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

static int wflush(struct state_writer *w)
{
	int rc;

	if (w->err)
		return w->err;
	if (!w->len)
		return 0;
	rc = pwrite_all(w->fd, w->buf, w->len, w->off);
	if (rc)
		return w->err = rc;
	w->off += w->len;
	w->len = 0;
	return 0;
}

/* Append n bytes (large pieces go straight to the file). */
static int wput(struct state_writer *w, const void *p, size_t n)
{
	int rc;

	if (w->err)
		return w->err;
	if (n >= w->cap) {
		if ((rc = wflush(w)))
			return rc;
		rc = pwrite_all(w->fd, p, n, w->off);
		if (rc)
			return w->err = rc;
		w->off += n;
		return 0;
	}
	if (w->len + n > w->cap && (rc = wflush(w)))
		return rc;
	memcpy(w->buf + w->len, p, n);
	w->len += n;
	return 0;
}

int state_writer_init(struct state_writer *w, int fd,
		      const struct state_header *h)
{
	struct state_header hd = *h;

	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->cap = STATE_BUF;
	w->buf = malloc(w->cap);
	if (!w->buf)
		return w->err = -ENOMEM;
	memcpy(hd.magic, STATE_FILE_MAGIC, sizeof(hd.magic));
	hd.major = STATE_FILE_MAJOR;
	hd.minor = STATE_FILE_MINOR;
	hd.header_bytes = STATE_FILE_HEADER_BYTES;
	hd.crc = 0;
	hd.crc = crc32c(0, &hd, sizeof(hd));
	return wput(w, &hd, sizeof(hd));
}

int state_writer_begin(struct state_writer *w, uint32_t type, uint64_t len)
{
	struct state_rec rec = {.type = type, .flags = 0, .len = len};

	if (w->err)
		return w->err;
	if (w->in_rec || len > STATE_RECORD_MAX)
		return w->err = -EINVAL;
	w->in_rec = 1;
	w->rec_left = len;
	w->rec_crc = crc32c(0, &rec, sizeof(rec));
	return wput(w, &rec, sizeof(rec));
}

int state_writer_data(struct state_writer *w, const void *p, size_t n)
{
	if (w->err)
		return w->err;
	if (!w->in_rec || n > w->rec_left)
		return w->err = -EINVAL;
	w->rec_crc = crc32c(w->rec_crc, p, n);
	w->rec_left -= n;
	return wput(w, p, n);
}

int state_writer_end(struct state_writer *w)
{
	struct state_rec_tail t = {0};
	uint64_t at = w->off + w->len;

	if (w->err)
		return w->err;
	if (!w->in_rec || w->rec_left)
		return w->err = -EINVAL;
	/* the payload started 16 bytes after the header; pad it to 8 */
	if (wput(w, zeros, pad8(at)))
		return w->err;
	t.crc = w->rec_crc;
	w->chain = crc32c(w->chain, &t.crc, sizeof(t.crc));
	w->records++;
	w->in_rec = 0;
	return wput(w, &t, sizeof(t));
}

int state_writer_record(struct state_writer *w, uint32_t type, const void *a,
			size_t alen, const void *b, size_t blen)
{
	if (state_writer_begin(w, type, (uint64_t)alen + blen) ||
	    (alen && state_writer_data(w, a, alen)) ||
	    (blen && state_writer_data(w, b, blen)))
		return w->err;
	return state_writer_end(w);
}

int state_writer_finish(struct state_writer *w)
{
	struct state_end e = {0};
	uint64_t total;

	if (w->err)
		return w->err;
	if (w->in_rec)
		return w->err = -EINVAL;
	total = w->off + w->len + sizeof(struct state_rec) + sizeof(e) +
		pad8(sizeof(e)) + sizeof(struct state_rec_tail);
	e.records = w->records;
	e.file_bytes = total;
	e.chain = w->chain;
	if (state_writer_record(w, STATE_REC_END, &e, sizeof(e), NULL, 0) ||
	    wflush(w))
		return w->err;
	if (ftruncate(w->fd, (off_t)total) < 0)
		return w->err = -errno;
	return 0;
}

void state_writer_release(struct state_writer *w)
{
	free(w->buf);
	w->buf = NULL;
}

/* ---- reader ------------------------------------------------------------ */

/* n more bytes from the file (buffered); -1 when the file ends first. */
static int rget(struct state_reader *r, void *p, size_t n)
{
	uint8_t *out = p;
	size_t take;
	ssize_t k;

	while (n) {
		if (r->pos == r->len) {
			r->pos = r->len = 0;
			if (r->off >= r->size)
				return -1;
			do {
				k = pread(r->fd, r->buf, r->cap, (off_t)r->off);
			} while (k < 0 && errno == EINTR);
			if (k <= 0)
				return -1;
			r->len = (size_t)k;
			r->off += (uint64_t)k;
		}
		take = r->len - r->pos;
		if (take > n)
			take = n;
		memcpy(out, r->buf + r->pos, take);
		r->pos += take;
		out += take;
		n -= take;
	}
	return 0;
}

/* Offset of the next byte rget returns. */
static uint64_t rat(const struct state_reader *r)
{
	return r->off - (r->len - r->pos);
}

int state_reader_init(struct state_reader *r, int fd, char *err, size_t len)
{
	struct state_header *h = &r->h;
	struct stat st;
	uint32_t crc;

	memset(r, 0, sizeof(*r));
	r->fd = fd;
	if (fstat(fd, &st) < 0) {
		snprintf(err, len, "cannot stat the state file: %s",
			 strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, len,
			 "not a regular file (a %s): a state file is a plain "
			 "file",
			 S_ISDIR(st.st_mode)	? "directory"
			 : S_ISFIFO(st.st_mode) ? "pipe"
			 : S_ISCHR(st.st_mode)	? "character device"
			 : S_ISBLK(st.st_mode)	? "block device"
			 : S_ISSOCK(st.st_mode) ? "socket"
						: "special file");
		return -1;
	}
	r->size = (uint64_t)st.st_size;
	r->cap = STATE_BUF;
	r->buf = malloc(r->cap);
	if (!r->buf) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	if (r->size == 0) {
		snprintf(err, len, "the file is empty: not a vgpu state file");
		return -1;
	}
	if (r->size < sizeof(*h) || rget(r, h, sizeof(*h))) {
		if (r->size >= 8 && pread(fd, h->magic, 8, 0) == 8 &&
		    memcmp(h->magic, STATE_FILE_MAGIC, 8) == 0)
			snprintf(err, len,
				 "truncated: the file is %" PRIu64
				 " bytes, shorter than a state file's %u-byte "
				 "header",
				 r->size, STATE_FILE_HEADER_BYTES);
		else
			snprintf(err, len,
				 "not a vgpu state file (%" PRIu64
				 " bytes, no VGPUSAVE header)",
				 r->size);
		return -1;
	}
	if (memcmp(h->magic, STATE_FILE_MAGIC, sizeof(h->magic)) != 0) {
		snprintf(err, len,
			 "not a vgpu state file (it does not start with "
			 "\"VGPUSAVE\")");
		return -1;
	}
	if (h->major != STATE_FILE_MAJOR) {
		snprintf(err, len,
			 "state file version %u.%u: this vgpu reads version "
			 "%u.x only",
			 h->major, h->minor, STATE_FILE_MAJOR);
		return -1;
	}
	crc = h->crc;
	h->crc = 0;
	h->crc = crc32c(0, h, sizeof(*h));
	if (h->crc != crc) {
		snprintf(err, len,
			 "header checksum mismatch (stored 0x%08x, computed "
			 "0x%08x): the file is corrupted",
			 crc, h->crc);
		return -1;
	}
	if (h->header_bytes != STATE_FILE_HEADER_BYTES) {
		snprintf(err, len,
			 "the header says it is %u bytes, not %u: the file is "
			 "corrupted",
			 h->header_bytes, STATE_FILE_HEADER_BYTES);
		return -1;
	}
	if (!memchr(h->vgpu, 0, sizeof(h->vgpu))) {
		snprintf(err, len,
			 "the vGPU name in the header is not terminated");
		return -1;
	}
	return 0;
}

const char *state_reader_what(const struct state_reader *r, char *buf,
			      size_t len)
{
	const uint8_t *hd = r->rec_head;
	char t[32], sz[32];
	uint64_t a, b;
	uint32_t x, y;

	switch (r->rec.type) {
	case STATE_REC_MEMORY:
		if (r->rec_head_len < 16)
			break;
		memcpy(&a, hd, 8);
		memcpy(&b, hd + 8, 8);
		snprintf(buf, len, "memory at 0x%" PRIx64 ", %s", a,
			 human(b, sz, sizeof(sz)));
		return buf;
	case STATE_REC_LIBRARY:
		if (r->rec_head_len < 8)
			break;
		memcpy(&x, hd, 4);
		memcpy(&y, hd + 4, 4);
		snprintf(buf, len, "library %u of client %u", y, x);
		return buf;
	case STATE_REC_GLOBAL:
		if (r->rec_head_len < 24)
			break;
		memcpy(&x, hd, 4);
		memcpy(&a, hd + 8, 8);
		memcpy(&b, hd + 16, 8);
		snprintf(buf, len,
			 "module variable at 0x%" PRIx64 " (%" PRIu64
			 " bytes) of client %u",
			 a, b, x);
		return buf;
	case STATE_REC_ALLOCS:
		snprintf(buf, len, "allocation table (%" PRIu64 " entries)",
			 r->rec.len / sizeof(struct state_alloc));
		return buf;
	}
	snprintf(buf, len, "%s", state_rec_name(r->rec.type, t, sizeof(t)));
	return buf;
}

/* Where a message about the current record starts. */
static void rec_where(const struct state_reader *r, char *buf, size_t len)
{
	char what[128];

	snprintf(buf, len, "record %" PRIu64 " (%s) at byte %" PRIu64,
		 r->records + 1, state_reader_what(r, what, sizeof(what)),
		 r->rec_at);
}

/* Read payload bytes, keeping the first ones for messages. */
static int rpayload(struct state_reader *r, void *p, size_t n)
{
	size_t keep;

	if (rget(r, p, n))
		return -1;
	r->rec_crc = crc32c(r->rec_crc, p, n);
	if (r->rec_head_len < sizeof(r->rec_head)) {
		keep = sizeof(r->rec_head) - r->rec_head_len;
		if (keep > n)
			keep = n;
		memcpy(r->rec_head + r->rec_head_len, p, keep);
		r->rec_head_len += keep;
	}
	r->rec_left -= n;
	return 0;
}

static void truncated(const struct state_reader *r, char *err, size_t len)
{
	char where[200];

	rec_where(r, where, sizeof(where));
	snprintf(err, len,
		 "truncated: %s needs %" PRIu64
		 " bytes, but the file ends at byte %" PRIu64,
		 where,
		 sizeof(struct state_rec) + r->rec.len + pad8(r->rec.len) +
			 sizeof(struct state_rec_tail),
		 r->size);
}

int state_reader_data(struct state_reader *r, void *p, size_t n, char *err,
		      size_t len)
{
	if (!r->in_rec || n > r->rec_left) {
		snprintf(err, len, "internal: read past a record");
		return -1;
	}
	if (rpayload(r, p, n)) {
		truncated(r, err, len);
		return -1;
	}
	return 0;
}

/* Finish the current record: the rest of it, padding, the CRC. */
static int rec_finish(struct state_reader *r, char *err, size_t len)
{
	uint8_t skip[4096];
	struct state_rec_tail t;
	char where[200];
	size_t n;

	while (r->rec_left) {
		n = r->rec_left < sizeof(skip) ? (size_t)r->rec_left
					       : sizeof(skip);
		if (rpayload(r, skip, n)) {
			truncated(r, err, len);
			return -1;
		}
	}
	if (rget(r, skip, pad8(r->rec.len)) || rget(r, &t, sizeof(t))) {
		truncated(r, err, len);
		return -1;
	}
	if (memcmp(skip, zeros, pad8(r->rec.len)) || t.reserved) {
		rec_where(r, where, sizeof(where));
		snprintf(err, len,
			 "%s: its padding is not zero: the file is corrupted",
			 where);
		return -1;
	}
	if (t.crc != r->rec_crc) {
		rec_where(r, where, sizeof(where));
		snprintf(err, len,
			 "%s: checksum mismatch (stored 0x%08x, computed "
			 "0x%08x): the file is corrupted",
			 where, t.crc, r->rec_crc);
		return -1;
	}
	r->chain = crc32c(r->chain, &t.crc, sizeof(t.crc));
	r->records++;
	r->in_rec = 0;
	return 0;
}

/* The END record: counts, length, chain, nothing after it. */
static int end_check(struct state_reader *r, char *err, size_t len)
{
	struct state_end e;
	uint32_t chain = r->chain;
	uint64_t before = r->records;

	if (r->rec.len != sizeof(e)) {
		snprintf(err, len,
			 "the end record at byte %" PRIu64 " has %" PRIu64
			 " bytes, not %zu: the file is "
			 "corrupted",
			 r->rec_at, r->rec.len, sizeof(e));
		return -1;
	}
	if (rpayload(r, &e, sizeof(e))) {
		truncated(r, err, len);
		return -1;
	}
	if (rec_finish(r, err, len))
		return -1;
	if (e.records != before || e.chain != chain) {
		snprintf(err, len,
			 "the end record says %" PRIu64
			 " records came before it, %" PRIu64
			 " did%s: a record was dropped, added or moved",
			 e.records, before,
			 e.records == before ? " but their checksums differ"
					     : "");
		return -1;
	}
	if (e.file_bytes != rat(r) || rat(r) != r->size) {
		snprintf(err, len,
			 "the file is %" PRIu64
			 " bytes, its end record says %" PRIu64
			 ": %s after the end record",
			 r->size, e.file_bytes,
			 r->size > e.file_bytes ? "there is data"
						: "bytes are "
						  "missing");
		return -1;
	}
	r->ended = 1;
	return 0;
}

int state_reader_next(struct state_reader *r, struct state_rec *rec, char *err,
		      size_t len)
{
	if (r->ended)
		return 0;
	if (r->in_rec && rec_finish(r, err, len))
		return -1;
	r->rec_at = rat(r);
	r->rec_head_len = 0;
	if (rget(r, &r->rec, sizeof(r->rec))) {
		snprintf(err, len,
			 "truncated: the file ends at byte %" PRIu64
			 " after %" PRIu64 " records, without its end record",
			 r->size, r->records);
		return -1;
	}
	r->in_rec = 1;
	r->rec_left = r->rec.len;
	r->rec_crc = crc32c(0, &r->rec, sizeof(r->rec));
	if (r->rec.len > STATE_RECORD_MAX) {
		snprintf(err, len,
			 "record %" PRIu64 " at byte %" PRIu64
			 " claims %" PRIu64 " bytes, more than any record "
			 "holds: the file is corrupted",
			 r->records + 1, r->rec_at, r->rec.len);
		return -1;
	}
	if (r->rec_at + sizeof(r->rec) + r->rec.len + pad8(r->rec.len) +
		    sizeof(struct state_rec_tail) >
	    r->size) {
		truncated(r, err, len);
		return -1;
	}
	if (r->rec.type == STATE_REC_END)
		return end_check(r, err, len) ? -1 : 0;
	*rec = r->rec;
	return 1;
}

void state_reader_release(struct state_reader *r)
{
	free(r->buf);
	r->buf = NULL;
}

/* ---- the whole-file check ------------------------------------------- */

struct run {
	uint64_t start, end; /* granule-aligned */
};

struct verify {
	const struct state_expect *e;
	struct state_header h;
	struct run *runs;
	size_t nruns, cap;
	uint64_t prev_end; /* of the last allocation */
	uint64_t nallocs, nlibs, nglobals, nmem, mem_bytes;
	int seen_other; /* a record other than ALLOCS came already */
};

static int run_add(struct verify *v, uint64_t start, uint64_t end)
{
	struct run *n;

	if (v->nruns && start <= v->runs[v->nruns - 1].end) {
		if (end > v->runs[v->nruns - 1].end)
			v->runs[v->nruns - 1].end = end;
		return 0;
	}
	if (v->nruns == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 64;
		n = realloc(v->runs, v->cap * sizeof(*n));
		if (!n)
			return -1;
		v->runs = n;
	}
	v->runs[v->nruns++] = (struct run){start, end};
	return 0;
}

/* Whether [va, va + n) lies in one run of mapped granules. */
static int in_runs(const struct verify *v, uint64_t va, uint64_t n)
{
	size_t lo = 0, hi = v->nruns, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (v->runs[mid].end <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < v->nruns && v->runs[lo].start <= va &&
	       n <= v->runs[lo].end - va;
}

static int verify_allocs(struct verify *v, struct state_reader *r, char *err,
			 size_t len)
{
	const struct state_expect *e = v->e;
	struct state_alloc a[512];
	uint64_t left, g = v->h.granule, end;
	char where[200];
	size_t n, i;

	rec_where(r, where, sizeof(where));
	if (v->seen_other) {
		snprintf(err, len,
			 "%s: the allocation table must come before the "
			 "other records",
			 where);
		return -1;
	}
	if (!r->rec.len || r->rec.len % sizeof(a[0]) ||
	    r->rec.len / sizeof(a[0]) > STATE_ALLOCS_PER_RECORD) {
		snprintf(err, len,
			 "%s: %" PRIu64 " bytes is not a whole number of "
			 "1 to %u allocation entries",
			 where, r->rec.len, STATE_ALLOCS_PER_RECORD);
		return -1;
	}
	for (left = r->rec.len / sizeof(a[0]); left; left -= n) {
		n = left < 512 ? (size_t)left : 512;
		if (state_reader_data(r, a, n * sizeof(a[0]), err, len))
			return -1;
		for (i = 0; i < n; i++) {
			end = a[i].va + a[i].size;
			if (a[i].va < v->h.va_base || !a[i].size ||
			    end < a[i].va ||
			    end > v->h.va_base + v->h.va_size ||
			    a[i].va % 256 || a[i].size % 256 || !a[i].owner ||
			    a[i].va < v->prev_end) {
				snprintf(err, len,
					 "%s: allocation 0x%" PRIx64
					 " + %" PRIu64 " (client %u) is "
					 "outside the VA window, misaligned, "
					 "empty, unowned, out of order or "
					 "overlapping the one before",
					 where, a[i].va, a[i].size, a[i].owner);
				return -1;
			}
			v->prev_end = end;
			if (run_add(v, a[i].va / g * g,
				    (end + g - 1) / g * g)) {
				snprintf(err, len, "out of memory");
				return -1;
			}
		}
		if (e && e->alloc_match &&
		    e->alloc_match(e->ctx, a, n, err, len))
			return -1;
		v->nallocs += n;
	}
	return 0;
}

static int verify_record(struct verify *v, struct state_reader *r, char *err,
			 size_t len)
{
	const struct state_expect *e = v->e;
	union {
		struct state_library l;
		struct state_global g;
		struct state_memory m;
	} u;
	char where[200];

	if (r->rec.type == STATE_REC_ALLOCS)
		return verify_allocs(v, r, err, len);
	v->seen_other = 1;
	switch (r->rec.type) {
	case STATE_REC_LIBRARY:
		if (r->rec.len < sizeof(u.l) ||
		    state_reader_data(r, &u.l, sizeof(u.l), err, len))
			break;
		if (!u.l.owner || !u.l.image_len ||
		    u.l.image_len > VGPU_MAX_IMAGE_BYTES ||
		    u.l.image_len != r->rec.len - sizeof(u.l))
			break;
		v->nlibs++;
		return 0;
	case STATE_REC_GLOBAL:
		if (r->rec.len < sizeof(u.g) ||
		    state_reader_data(r, &u.g, sizeof(u.g), err, len))
			break;
		if (!u.g.owner || !u.g.bytes ||
		    u.g.bytes != r->rec.len - sizeof(u.g))
			break;
		v->nglobals++;
		return 0;
	case STATE_REC_MEMORY:
		if (r->rec.len < sizeof(u.m) ||
		    state_reader_data(r, &u.m, sizeof(u.m), err, len))
			break;
		if (!u.m.len || u.m.len > STATE_MEMORY_CHUNK ||
		    u.m.len != r->rec.len - sizeof(u.m))
			break;
		if (!in_runs(v, u.m.va, u.m.len)) {
			rec_where(r, where, sizeof(where));
			snprintf(err, len,
				 "%s: the range is not inside the memory of "
				 "the file's allocations",
				 where);
			return -1;
		}
		v->nmem++;
		v->mem_bytes += u.m.len;
		if (e && e->progress)
			e->progress(e->ctx, v->mem_bytes, v->h.memory_bytes);
		return 0;
	default:
		rec_where(r, where, sizeof(where));
		snprintf(err, len,
			 "%s: unknown record type %u (written by a newer "
			 "vgpu?)",
			 where, r->rec.type);
		return -1;
	}
	rec_where(r, where, sizeof(where));
	if (!err[0] || !strstr(err, "truncated"))
		snprintf(err, len,
			 "%s: its fields do not match its length of %" PRIu64
			 " bytes (or are zero): the file is corrupted",
			 where, r->rec.len);
	return -1;
}

/* The header against what the vGPU is. */
static int verify_header(const struct state_header *h,
			 const struct state_expect *e, char *err, size_t len)
{
	if (!e)
		return 0;
	if (e->vgpu && strncmp(h->vgpu, e->vgpu, sizeof(h->vgpu)) != 0) {
		snprintf(err, len, "the file holds vGPU '%s', not '%s'",
			 h->vgpu, e->vgpu);
		return -1;
	}
	if ((e->va_base && h->va_base != e->va_base) ||
	    (e->va_size && h->va_size != e->va_size)) {
		snprintf(err, len,
			 "the file's VA window 0x%" PRIx64 " + 0x%" PRIx64
			 " is not the vGPU's 0x%" PRIx64 " + 0x%" PRIx64,
			 h->va_base, h->va_size, e->va_base, e->va_size);
		return -1;
	}
	if (e->granule && h->granule != e->granule) {
		snprintf(err, len,
			 "the file was saved with %" PRIu64
			 "-byte granules, this GPU has %" PRIu64,
			 h->granule, e->granule);
		return -1;
	}
	if (!h->granule || (h->granule & (h->granule - 1)) ||
	    h->va_base % h->granule || h->va_size % h->granule ||
	    h->va_base + h->va_size < h->va_base) {
		snprintf(err, len,
			 "the header's window or granule is malformed: the "
			 "file is corrupted");
		return -1;
	}
	return 0;
}

int state_file_verify(int fd, const struct state_expect *e,
		      struct state_header *hdr, char *err, size_t len)
{
	struct state_reader r;
	struct state_rec rec;
	struct verify v;
	int rc = -1, k;

	memset(&v, 0, sizeof(v));
	v.e = e;
	err[0] = '\0';
	if (state_reader_init(&r, fd, err, len))
		goto out;
	v.h = r.h;
	if (verify_header(&r.h, e, err, len))
		goto out;
	while ((k = state_reader_next(&r, &rec, err, len)) == 1) {
		err[0] = '\0';
		if (verify_record(&v, &r, err, len))
			goto out;
	}
	if (k < 0)
		goto out;
	if (v.nallocs != r.h.nallocs || v.nlibs != r.h.nlibraries ||
	    v.nglobals != r.h.nglobals || v.nmem != r.h.nmemory ||
	    v.mem_bytes != r.h.memory_bytes) {
		snprintf(err, len,
			 "the header counts %u allocations, %u libraries, %u "
			 "module variables and %" PRIu64
			 " bytes of memory, the records hold %" PRIu64
			 ", %" PRIu64 ", %" PRIu64 " and %" PRIu64,
			 r.h.nallocs, r.h.nlibraries, r.h.nglobals,
			 r.h.memory_bytes, v.nallocs, v.nlibs, v.nglobals,
			 v.mem_bytes);
		goto out;
	}
	if (e && e->nallocs && v.nallocs != e->nallocs) {
		snprintf(err, len,
			 "the file has %" PRIu64 " allocations, the vGPU has "
			 "%" PRIu64 ": it was saved from another state of the "
			 "vGPU",
			 v.nallocs, e->nallocs);
		goto out;
	}
	if (hdr)
		*hdr = r.h;
	rc = 0;
out:
	free(v.runs);
	state_reader_release(&r);
	return rc;
}
