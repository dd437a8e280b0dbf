/* SPDX-License-Identifier: MIT */
/*
 * vGPU state files: what `vgpu-admin suspend NAME --to FILE` writes and
 * `resume` reads back (docs/DESIGN.md, "Save, restore and migration").
 * Pure format code: a buffered writer and a checking reader over a file
 * descriptor (a regular file or a memfd), no backend, so it is unit-tested
 * on its own (tests/unit/test_state_file.c).
 *
 * Layout (little-endian):
 *
 *   struct state_header          256 bytes: magic "VGPUSAVE", version
 *                                major.minor, the vGPU (name, VA window,
 *                                granule, quota, GPU), counts, CRC32C
 *   records, each:
 *     struct state_rec           type, flags, payload length
 *     payload                    padded with zeros to 8 bytes
 *     struct state_rec_tail      CRC32C of the record header + payload
 *   an END record (struct state_end): the number of records before it,
 *   the file's length and a CRC32C over the records' CRCs, so a file
 *   that is cut short, has a record dropped or moved, or has anything
 *   after its end is refused.
 *
 * Records: ALLOCS (the allocation table: VA, size, owner client), LIBRARY
 * (a client's library image), GLOBAL (a module-scope variable's contents),
 * MEMORY (the contents of mapped memory, at most STATE_MEMORY_CHUNK
 * bytes each). A reader refuses anything it does not understand with a
 * sentence that names the record, its byte offset and what was wrong.
 */
#ifndef VGPU_STATE_FILE_H
#define VGPU_STATE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include <vgpu/protocol.h>

#define STATE_FILE_MAGIC	"VGPUSAVE"
#define STATE_FILE_MAJOR	1 /* a reader refuses another major */
#define STATE_FILE_MINOR	0 /* and reads any minor of its major */
#define STATE_FILE_HEADER_BYTES 256
/* MEMORY records carry at most this much each (progress, bounded reads) */
#define STATE_MEMORY_CHUNK (64u << 20)
/* One record's payload is at most this (a library image and its header) */
#define STATE_RECORD_MAX ((uint64_t)VGPU_MAX_IMAGE_BYTES + 4096)
/* Allocation entries per ALLOCS record */
#define STATE_ALLOCS_PER_RECORD 65536u

enum state_rec_type {
	STATE_REC_ALLOCS = 1,  /* struct state_alloc[] */
	STATE_REC_LIBRARY = 2, /* struct state_library, then the image */
	STATE_REC_GLOBAL = 3,  /* struct state_global, then its bytes */
	STATE_REC_MEMORY = 4,  /* struct state_memory, then the bytes */
	STATE_REC_END = 15,    /* struct state_end: the last record */
};

/* header.flags */
#define STATE_FLAG_SAVE_POINT 0x1u /* a periodic save point, not a suspend */

struct state_header {
	char magic[8]; /* STATE_FILE_MAGIC, no NUL */
	uint16_t major, minor;
	uint32_t header_bytes; /* STATE_FILE_HEADER_BYTES */
	uint32_t flags;	       /* STATE_FLAG_* */
	uint32_t backend;      /* enum vgpu_backend_kind it was saved from */
	char vgpu[VGPU_NAME_MAX];
	uint64_t va_base, va_size;
	uint64_t granule;
	uint64_t memory_quota;
	uint32_t gpu, sm_count; /* where it was saved from (informational) */
	uint64_t created_ns;	/* CLOCK_REALTIME */
	uint64_t memory_bytes;	/* MEMORY payload bytes in all (progress) */
	uint32_t nallocs;	/* allocation entries in all ALLOCS records */
	uint32_t nlibraries, nglobals, nmemory; /* records of each kind */
	uint8_t reserved[92];
	uint32_t crc; /* CRC32C of the header with this field 0 */
};

struct state_rec {
	uint32_t type; /* enum state_rec_type */
	uint32_t flags;
	uint64_t len; /* payload bytes (without padding) */
};

struct state_rec_tail {
	uint32_t crc; /* CRC32C of struct state_rec and the payload */
	uint32_t reserved;
};

struct state_alloc {
	uint64_t va, size; /* size as allocated (256-byte multiple) */
	uint32_t owner;	   /* the client */
	uint32_t reserved;
};

struct state_library {
	uint32_t owner, handle; /* the client and its library handle */
	uint64_t image_len;	/* bytes of image after this */
};

struct state_global {
	uint32_t owner, library; /* the client, its library handle */
	uint64_t addr, bytes;	 /* the address the client was given */
};

struct state_memory {
	uint64_t va, len; /* inside the granules of the allocations */
};

struct state_end {
	uint64_t records;    /* records before this one */
	uint64_t file_bytes; /* the file's length, this record included */
	uint32_t chain;	     /* CRC32C over the records' CRCs, in order */
	uint32_t reserved;
};

_Static_assert(sizeof(struct state_header) == STATE_FILE_HEADER_BYTES,
	       "the state header is 256 bytes");

/* ---- writing ---------------------------------------------------------- */

struct state_writer {
	int fd;
	uint64_t off; /* bytes handed to the file so far */
	uint8_t *buf;
	size_t len, cap;
	int in_rec;
	uint64_t rec_left;
	uint32_t rec_crc;
	uint64_t records;
	uint32_t chain;
	int err; /* first -errno; everything after it fails */
};

/* Start a file on fd (written from offset 0): the header, with its CRC
 * computed here. 0 or -errno. */
int state_writer_init(struct state_writer *w, int fd,
		      const struct state_header *h);
/* A record of len payload bytes: begin, data (any pieces adding up to
 * len), end. 0 or -errno (-EINVAL when the pieces do not add up). */
int state_writer_begin(struct state_writer *w, uint32_t type, uint64_t len);
int state_writer_data(struct state_writer *w, const void *p, size_t n);
int state_writer_end(struct state_writer *w);
/* A whole record from two pieces (b may be NULL with blen 0). */
int state_writer_record(struct state_writer *w, uint32_t type, const void *a,
			size_t alen, const void *b, size_t blen);
/* The END record, flush, cut the file there. 0 or -errno. */
int state_writer_finish(struct state_writer *w);
/* Free the buffer (after finish, or to abandon the file). */
void state_writer_release(struct state_writer *w);

/* ---- reading ---------------------------------------------------------- */

struct state_reader {
	int fd;
	uint64_t size; /* of the file, at open */
	uint64_t off;  /* of the next byte to read */
	uint8_t *buf;
	size_t pos, len, cap;
	struct state_header h;
	/* the record being read */
	int in_rec;
	struct state_rec rec;
	uint64_t rec_at; /* its offset */
	uint64_t rec_left;
	uint32_t rec_crc;
	uint8_t rec_head[24]; /* its payload's first bytes, for messages */
	size_t rec_head_len;
	uint64_t records;
	uint32_t chain;
	int ended;
};

/*
 * Open a state file on fd (read from offset 0): fd must be a regular file
 * (or a memfd); the header must have the magic, a major version of 1, its
 * size and a good CRC. 0, or -1 with a sentence in err ("not a vgpu state
 * file", "state file version 2.0; this vgpu reads 1.x", "header checksum
 * mismatch", "truncated", ...).
 */
int state_reader_init(struct state_reader *r, int fd, char *err, size_t len);
/*
 * The next record's header in *rec (the rest of the current record is
 * read and its CRC checked first). 1: a record; 0: the END record was
 * reached and everything checks out (counts, length, the CRC chain,
 * nothing after it); -1: error, with a sentence naming the record.
 */
int state_reader_next(struct state_reader *r, struct state_rec *rec, char *err,
		      size_t len);
/* n bytes of the current record's payload (n <= what is left of it).
 * 0 or -1 with a sentence. */
int state_reader_data(struct state_reader *r, void *p, size_t n, char *err,
		      size_t len);
void state_reader_release(struct state_reader *r);

/* "memory 0x500000200000 + 64.0 MiB" and the like: the record now being
 * read, for messages. */
const char *state_reader_what(const struct state_reader *r, char *buf,
			      size_t len);
/* "allocs", "library", "global", "memory", "end", or "type N". */
const char *state_rec_name(uint32_t type, char *buf, size_t len);

/* ---- checking a whole file ------------------------------------------- */

/*
 * What a file must match to be restored into a vGPU. The callbacks are
 * optional (NULL: not checked).
 */
struct state_expect {
	const char *vgpu;	   /* its name */
	uint64_t va_base, va_size; /* its window */
	uint64_t granule;	   /* its backend's */
	uint64_t nallocs;	   /* not 0: exactly so many allocations */
	/* a run of the file's allocation table, in order: must match the
	 * live table (0, or -1 with a sentence in err) */
	int (*alloc_match)(void *ctx, const struct state_alloc *a, size_t n,
			   char *err, size_t len);
	/* bytes of MEMORY checked so far, of header.memory_bytes */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *ctx;
};

/*
 * Read the whole file and check everything without changing anything:
 * header, every record's CRC and structure (allocations inside the window,
 * in order, not overlapping; memory inside allocations' granules; sizes
 * adding up; counts matching the header), the END record, and the
 * expectations. 0 with *hdr filled, or -1 with a sentence in err.
 */
int state_file_verify(int fd, const struct state_expect *e,
		      struct state_header *hdr, char *err, size_t len);

#endif /* VGPU_STATE_FILE_H */
