/* SPDX-License-Identifier: MIT */
/*
 * sim_image: the kernels and variables a library image names, from its
 * cubin or PTX (sim_image.h). Layers, each checking what it reads:
 *
 *   fatbin   a header (magic, version, header size, entries' size), then
 *            entries: kind (1: PTX, 2: cubin), header size, payload size,
 *            the compressed bytes at +16 (the payload is padded), the
 *            sm_ architecture at +28, flags at +40 and, when the payload
 *            is compressed, its size once uncompressed at +56;
 *   unpack   a compressed payload is a zstd frame (libzstd; flag 0x8000,
 *            as CUDA 13 makes them) or an LZ4 block (liblz4; flag 0x2000,
 *            as CUDA 12 did and cuFFT's PTX still is);
 *   ELF      the cubin: its symbol table names kernels (functions marked
 *            as entries, STO_CUDA_ENTRY) and variables (objects in a
 *            section of their own: .nv.global, .nv.global.init,
 *            .nv.constantN); each kernel's .nv.info.<name> section lists
 *            its parameters (EIATTR_KPARAM_INFO records);
 *   PTX      without a cubin: sim_image_ptx.c.
 *
 * These layouts are NVIDIA's, undocumented, and were read off images the
 * toolkit's nvcc makes and CUDA 13's libraries load; the unit test builds
 * its images by hand the same way (tests/unit/test_sim_image.c).
 */
#include <lz4.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include <vgpu/ring.h>

#include "sim_image_int.h"

#define FATBIN_MAGIC	   0xba55ed50u
#define FATBIN_HEADER	   16u
#define FATBIN_ENTRY_MIN   64u /* up to the uncompressed size */
#define FATBIN_KIND_PTX	   1u
#define FATBIN_KIND_CUBIN  2u
#define FATBIN_FLAG_LZ4	   0x2000ull
#define FATBIN_ARCH_WANTED 90u /* the simulated GPU is sm_90 */

#define STO_CUDA_ENTRY	   0x10
#define EIFMT_NVAL	   0x01
#define EIFMT_BVAL	   0x02
#define EIFMT_HVAL	   0x03
#define EIFMT_SVAL	   0x04
#define EIATTR_KPARAM_INFO 0x17
#define KPARAM_INFO_BYTES  12u
#define KPARAM_SIZE_SHIFT  18 /* the size in the flags' top 14 bits */
#define INFO_PREFIX	   ".nv.info."
#define SIM_IMAGE_CODE_MAX (256u << 20) /* VGPU_MAX_IMAGE_BYTES */

static uint16_t rd16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* A NUL-terminated string at off of a table of len bytes, or NULL. */
static const char *str_at(const char *tab, uint64_t len, uint64_t off)
{
	if (off >= len || !memchr(tab + off, '\0', len - off))
		return NULL;
	return tab + off;
}

/* ---- fatbin ------------------------------------------------------------ */

/* How good an entry is: a cubin before PTX; for sm_90 best, then the
 * newest older, then any. */
static int entry_rank(uint16_t kind, uint32_t arch)
{
	int r;

	if (kind != FATBIN_KIND_CUBIN && kind != FATBIN_KIND_PTX)
		return 0;
	if (arch == FATBIN_ARCH_WANTED)
		r = 1000;
	else if (arch < FATBIN_ARCH_WANTED)
		r = 500 + (int)arch;
	else
		r = 1;
	return kind == FATBIN_KIND_CUBIN ? r + 2000 : r;
}

/* One fatbin entry's payload. */
struct payload {
	const unsigned char *p;
	uint64_t size, raw_size, flags;
	uint32_t packed; /* the compressed bytes in it, 0: not said */
	uint16_t kind;
};

/*
 * The best entry of a fatbin. 0 when there is none (or the fatbin is
 * malformed: *why says so).
 */
static int fatbin_pick(const unsigned char *img, size_t len, struct payload *pl,
		       const char **why)
{
	uint64_t off, end, hsize, size;
	int best = 0, rank;

	off = rd16(img + 6);
	end = rd64(img + 8);
	if (off < FATBIN_HEADER || !ring_range_ok(off, end, len)) {
		*why = "fatbin header sizes outside the image";
		return 0;
	}
	end += off;
	while (end - off >= FATBIN_ENTRY_MIN) {
		hsize = rd32(img + off + 4);
		size = rd64(img + off + 8);
		if (hsize < FATBIN_ENTRY_MIN || hsize > end - off ||
		    size > end - off - hsize) {
			*why = "fatbin entry sizes outside the image";
			return 0;
		}
		rank = entry_rank(rd16(img + off), rd32(img + off + 28));
		if (rank > best) {
			best = rank;
			pl->kind = rd16(img + off);
			pl->p = img + off + hsize;
			pl->size = size;
			pl->flags = rd64(img + off + 40);
			pl->raw_size = rd64(img + off + 56);
			pl->packed = rd32(img + off + 16);
		}
		off += hsize + size;
	}
	return best != 0;
}

/*
 * pl's bytes, uncompressed, into a copy with a NUL after them (for PTX
 * text): 0, -1 out of memory, -2 with *why.
 */
static int unpack(const struct payload *pl, unsigned char **out, size_t *len,
		  const char **why)
{
	uint64_t raw = pl->raw_size, size = pl->size;
	const unsigned char *p = pl->p;
	int zstd = size >= 4 && rd32(p) == ZSTD_MAGICNUMBER;
	size_t frame;
	long got;

	if (!zstd && !(pl->flags & FATBIN_FLAG_LZ4))
		raw = size;
	if (raw == 0 || raw > SIM_IMAGE_CODE_MAX || raw > INT32_MAX) {
		*why = "a fatbin entry of no size, or too large";
		return -2;
	}
	if (zstd) {
		/* the payload is padded: the frame may end before it */
		frame = ZSTD_findFrameCompressedSize(p, size);
		if (ZSTD_isError(frame) ||
		    ZSTD_getFrameContentSize(p, size) != raw) {
			*why = "a zstd entry whose size is not its frame's";
			return -2;
		}
	}
	*out = malloc(raw + 1);
	if (!*out)
		return -1;
	if (zstd) {
		got = (long)ZSTD_decompress(*out, raw, p, frame);
		if (ZSTD_isError((size_t)got))
			got = -1;
	} else if (pl->flags & FATBIN_FLAG_LZ4) {
		if (pl->packed && pl->packed <= size)
			size = pl->packed;
		got = LZ4_decompress_safe(
			(const char *)p, (char *)*out,
			(int)(size < INT32_MAX ? size : INT32_MAX), (int)raw);
	} else {
		memcpy(*out, p, raw);
		got = (long)raw;
	}
	if (got < 0 || (uint64_t)got != raw) {
		free(*out);
		*out = NULL;
		*why = "a compressed entry that does not unpack to its size";
		return -2;
	}
	(*out)[raw] = '\0';
	*len = raw;
	return 0;
}

/*
 * The code of image into im: the best fatbin entry, or the image itself
 * (a cubin, or PTX text). 0 (im->code NULL: nothing to read), -1 out of
 * memory, -2 with *why.
 */
static int image_code(struct sim_image *im, const unsigned char *img,
		      size_t len, const char **why)
{
	struct payload pl = {.p = img, .size = len};
	int rc;

	if (len >= FATBIN_HEADER && rd32(img) == FATBIN_MAGIC) {
		if (!fatbin_pick(img, len, &pl, why))
			return *why ? -2 : 0;
	} else if (len >= SELFMAG && memcmp(img, ELFMAG, SELFMAG) == 0) {
		pl.kind = FATBIN_KIND_CUBIN;
	} else if (len && memmem(img, len, ".entry", 6)) {
		pl.kind = FATBIN_KIND_PTX;
	} else {
		return 0;
	}
	rc = unpack(&pl, &im->code, &im->len, why);
	if (rc)
		return rc;
	im->ptx = pl.kind == FATBIN_KIND_PTX;
	if (!im->ptx &&
	    (im->len < SELFMAG || memcmp(im->code, ELFMAG, SELFMAG) != 0)) {
		*why = "a cubin entry that is not an ELF file";
		return -2;
	}
	return 0;
}

/* ---- ELF --------------------------------------------------------------- */

static const Elf64_Shdr *section(const struct sim_image *im, uint32_t i)
{
	return i < im->shnum ? &im->sh[i] : NULL;
}

static const char *section_name(const struct sim_image *im, const Elf64_Shdr *s)
{
	return str_at(im->shstr, im->shstr_len, s->sh_name);
}

/* Whether section s's bytes lie inside the file (NOBITS have none). */
static int section_ok(const struct sim_image *im, const Elf64_Shdr *s)
{
	return s->sh_type == SHT_NOBITS ||
	       ring_range_ok(s->sh_offset, s->sh_size, im->len);
}

/* The ELF header and section table: 0, or -2 with *why. */
static int elf_sections(struct sim_image *im, const char **why)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)im->code;
	const Elf64_Shdr *ss;
	uint32_t i;

	if (im->len < sizeof(*eh) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB) {
		*why = "a cubin that is not a 64-bit little-endian ELF file";
		return -2;
	}
	if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum == 0 ||
	    eh->e_shoff % 8 ||
	    !ring_range_ok(eh->e_shoff,
			   (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr),
			   im->len) ||
	    eh->e_shstrndx >= eh->e_shnum) {
		*why = "a cubin whose section table is outside it";
		return -2;
	}
	im->sh = (const Elf64_Shdr *)(im->code + eh->e_shoff);
	im->shnum = eh->e_shnum;
	for (i = 0; i < im->shnum; i++)
		if (!section_ok(im, &im->sh[i])) {
			*why = "a cubin section outside the file";
			return -2;
		}
	ss = &im->sh[eh->e_shstrndx];
	if (ss->sh_type != SHT_STRTAB) {
		*why = "a cubin without section names";
		return -2;
	}
	im->shstr = (const char *)im->code + ss->sh_offset;
	im->shstr_len = ss->sh_size;
	return 0;
}

/* Whether a variable in section s is a module variable (its own kind of
 * memory; .nv.shared.* are per block). */
static int var_section(const struct sim_image *im, const Elf64_Shdr *s)
{
	const char *n = section_name(im, s);

	return n && (strcmp(n, ".nv.global") == 0 ||
		     strcmp(n, ".nv.global.init") == 0 ||
		     strncmp(n, ".nv.constant", 12) == 0);
}

int sim_image_grow(void *arr, uint32_t n, uint32_t *cap, size_t size)
{
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*(void **)arr, (size_t)(*cap ? *cap * 2 : 8) * size);
	if (!p)
		return -1;
	*(void **)arr = p;
	*cap = *cap ? *cap * 2 : 8;
	return 0;
}

int sim_image_var_room(struct sim_image *im, uint64_t bytes, const char **why)
{
	if (im->nvars >= SIM_IMAGE_NAMES_MAX || bytes > SIM_IMAGE_VARS_MAX ||
	    im->var_bytes + bytes > SIM_IMAGE_VARS_MAX) {
		*why = "module variables beyond 64 MiB or 2^20 of them";
		return -2;
	}
	im->var_bytes += bytes;
	return 0;
}

static int add_var(struct sim_image *im, const char *name, const Elf64_Sym *sym,
		   const Elf64_Shdr *s)
{
	struct sim_image_var *v;

	if (sim_image_grow(&im->vars, im->nvars, &im->vars_cap, sizeof(*v)))
		return -1;
	v = &im->vars[im->nvars++];
	v->name = name;
	v->bytes = sym->st_size;
	v->init = s->sh_type == SHT_NOBITS
			  ? NULL
			  : im->code + s->sh_offset + sym->st_value;
	return 0;
}

static int add_kernel(struct sim_image *im, const char *name)
{
	if (im->nkernels >= SIM_IMAGE_NAMES_MAX)
		return -2;
	if (sim_image_grow(&im->kernels, im->nkernels, &im->kernels_cap,
			   sizeof(*im->kernels)))
		return -1;
	im->kernels[im->nkernels].name = name;
	im->kernels[im->nkernels].ptx = NULL;
	im->nkernels++;
	return 0;
}

/* Kernels and variables from the symbol table: 0, -1 out of memory, or
 * -2 with *why. */
static int elf_symbols(struct sim_image *im, const char **why)
{
	const Elf64_Shdr *st = NULL, *str, *s;
	const Elf64_Sym *sym;
	const char *strtab;
	uint64_t i, n;
	char *name;
	int rc;

	for (i = 0; i < im->shnum && !st; i++)
		if (im->sh[i].sh_type == SHT_SYMTAB)
			st = &im->sh[i];
	if (!st)
		return 0; /* no names: nothing to find */
	str = section(im, st->sh_link);
	if (st->sh_entsize != sizeof(Elf64_Sym) || st->sh_offset % 8 || !str ||
	    str->sh_type != SHT_STRTAB) {
		*why = "a cubin symbol table that cannot be read";
		return -2;
	}
	strtab = (const char *)im->code + str->sh_offset;
	n = st->sh_size / sizeof(Elf64_Sym);
	sym = (const Elf64_Sym *)(im->code + st->sh_offset);
	for (i = 0; i < n; i++, sym++) {
		name = (char *)str_at(strtab, str->sh_size, sym->st_name);
		s = section(im, sym->st_shndx);
		if (!name || !*name || !s || sym->st_shndx == SHN_UNDEF)
			continue;
		if (ELF64_ST_TYPE(sym->st_info) == STT_FUNC &&
		    (sym->st_other & STO_CUDA_ENTRY)) {
			rc = add_kernel(im, name);
			if (rc == -2)
				*why = "more than 2^20 kernels";
			if (rc)
				return rc;
		} else if (ELF64_ST_TYPE(sym->st_info) == STT_OBJECT &&
			   var_section(im, s)) {
			if (!ring_range_ok(sym->st_value, sym->st_size,
					   s->sh_size)) {
				*why = "a cubin variable outside its section";
				return -2;
			}
			rc = sim_image_var_room(im, sym->st_size, why);
			if (rc == 0 && add_var(im, name, sym, s))
				rc = -1;
			if (rc)
				return rc;
		}
	}
	return 0;
}

int sim_image_open(const void *image, size_t len, struct sim_image **out,
		   const char **why)
{
	const char *dummy;
	struct sim_image *im;
	int rc;

	*out = NULL;
	if (!why)
		why = &dummy;
	*why = NULL;
	im = calloc(1, sizeof(*im));
	if (!im)
		return -1;
	rc = image_code(im, image, len, why);
	if (rc == 0 && im->code && im->ptx)
		rc = sim_image_ptx_read(im, why);
	else if (rc == 0 && im->code)
		rc = elf_sections(im, why);
	if (rc == 0 && im->code && !im->ptx)
		rc = elf_symbols(im, why);
	if (rc || !im->code) {
		sim_image_free(im);
		return rc == -1 ? -1 : 0;
	}
	*out = im;
	return 0;
}

void sim_image_free(struct sim_image *im)
{
	uint32_t i;

	if (!im)
		return;
	for (i = 0; im->ptx && i < im->nkernels; i++) {
		free((char *)im->kernels[i].name);
		free(im->kernels[i].ptx);
	}
	for (i = 0; im->ptx && i < im->nvars; i++)
		free((char *)im->vars[i].name);
	free(im->kernels);
	free(im->vars);
	free(im->code);
	free(im);
}

uint32_t sim_image_kernel_count(const struct sim_image *im)
{
	return im->nkernels;
}

const char *sim_image_kernel_name(const struct sim_image *im, uint32_t i)
{
	return i < im->nkernels ? im->kernels[i].name : NULL;
}

uint64_t sim_image_bytes(const struct sim_image *im)
{
	return im->len + im->var_bytes;
}

uint32_t sim_image_var_count(const struct sim_image *im)
{
	return im->nvars;
}

const struct sim_image_var *sim_image_var(const struct sim_image *im,
					  uint32_t i)
{
	return i < im->nvars ? &im->vars[i] : NULL;
}

/* The .nv.info.<name> section of kernel name, or NULL. */
static const Elf64_Shdr *info_section(const struct sim_image *im,
				      const char *name)
{
	size_t plen = strlen(INFO_PREFIX);
	const char *n;
	uint32_t i;

	for (i = 0; i < im->shnum; i++) {
		n = section_name(im, &im->sh[i]);
		if (n && strncmp(n, INFO_PREFIX, plen) == 0 &&
		    strcmp(n + plen, name) == 0 &&
		    im->sh[i].sh_type != SHT_NOBITS)
			return &im->sh[i];
	}
	return NULL;
}

/* One KPARAM_INFO record (12 bytes) into info: 0, or -1 if it makes no
 * sense. */
static int kparam(const unsigned char *p, struct vgpu_kernel_info *info)
{
	uint32_t ordinal = rd16(p + 4), offset = rd16(p + 6);
	uint32_t size = rd32(p + 8) >> KPARAM_SIZE_SHIFT;

	if (ordinal >= VGPU_MAX_PARAMS || size == 0 ||
	    offset + size > VGPU_MAX_PARAM_BYTES)
		return -1;
	info->params[ordinal].offset = offset;
	info->params[ordinal].size = size;
	if (ordinal + 1 > info->nparams)
		info->nparams = ordinal + 1;
	if (offset + size > info->param_bytes)
		info->param_bytes = offset + size;
	return 0;
}

int sim_image_kernel_params(const struct sim_image *im, const char *name,
			    struct vgpu_kernel_info *info)
{
	const Elf64_Shdr *s;
	const unsigned char *p, *end;
	uint32_t i, sz;

	for (i = 0; i < im->nkernels; i++)
		if (strcmp(im->kernels[i].name, name) == 0)
			break;
	if (i == im->nkernels)
		return -1;
	if (im->kernels[i].ptx) {
		*info = *im->kernels[i].ptx;
		return 0;
	}
	memset(info, 0, sizeof(*info));
	s = info_section(im, name);
	if (!s)
		return 0; /* no records: no parameters */
	p = im->code + s->sh_offset;
	end = p + s->sh_size;
	while (end - p >= 4) {
		switch (p[0]) {
		case EIFMT_NVAL:
		case EIFMT_BVAL:
		case EIFMT_HVAL:
			p += 4;
			continue;
		case EIFMT_SVAL:
			sz = rd16(p + 2);
			if ((size_t)(end - p - 4) < sz)
				return -1;
			if (p[1] == EIATTR_KPARAM_INFO &&
			    (sz != KPARAM_INFO_BYTES || kparam(p + 4, info)))
				return -1;
			p += 4 + sz;
			continue;
		default:
			return -1;
		}
	}
	/* every ordinal up to the last must have been listed */
	for (i = 0; i < info->nparams; i++)
		if (info->params[i].size == 0)
			return -1;
	return 0;
}
