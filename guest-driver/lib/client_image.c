/* SPDX-License-Identifier: MIT */
/*
 * Image extent (see client_image.h). Only headers are read, and every
 * sum is checked against VGPU_MAX_IMAGE_BYTES before it is used.
 */
#include <elf.h>
#include <stdint.h>
#include <string.h>

#include <vgpu/protocol.h>

#include "client_image.h"

struct fatbin_header {
	uint32_t magic;
	uint16_t version;
	uint16_t header_size;
	uint64_t fat_size; /* bytes after the header */
};

struct fatbinc_wrapper {
	int32_t magic;
	int32_t version;
	const void *data;
	void *filename_or_fatbins;
};

static int end_of(uint64_t off, uint64_t len, uint64_t *end)
{
	if (off > VGPU_MAX_IMAGE_BYTES || len > VGPU_MAX_IMAGE_BYTES - off)
		return -1;
	if (off + len > *end)
		*end = off + len;
	return 0;
}

/* An ELF64 cubin ends at its last header table or section. */
static CUresult elf_size(const unsigned char *p, size_t *size)
{
	Elf64_Ehdr eh;
	uint64_t end = sizeof(eh), shnum;

	memcpy(&eh, p, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return CUDA_ERROR_INVALID_IMAGE;
	if (end_of(eh.e_phoff, (uint64_t)eh.e_phnum * eh.e_phentsize, &end))
		return CUDA_ERROR_INVALID_IMAGE;
	shnum = eh.e_shnum;
	if (eh.e_shoff && eh.e_shentsize < sizeof(Elf64_Shdr))
		return CUDA_ERROR_INVALID_IMAGE;
	if (eh.e_shoff && shnum == 0) {
		/* extended numbering: the count is in section 0 */
		Elf64_Shdr s0;

		if (end_of(eh.e_shoff, sizeof(s0), &end))
			return CUDA_ERROR_INVALID_IMAGE;
		memcpy(&s0, p + eh.e_shoff, sizeof(s0));
		shnum = s0.sh_size;
	}
	if (eh.e_shoff && end_of(eh.e_shoff, shnum * eh.e_shentsize, &end))
		return CUDA_ERROR_INVALID_IMAGE;
	for (uint64_t i = 0; eh.e_shoff && i < shnum; i++) {
		Elf64_Shdr sh;

		memcpy(&sh, p + eh.e_shoff + i * eh.e_shentsize, sizeof(sh));
		if (sh.sh_type == SHT_NOBITS)
			continue;
		if (end_of(sh.sh_offset, sh.sh_size, &end))
			return CUDA_ERROR_INVALID_IMAGE;
	}
	*size = (size_t)end;
	return CUDA_SUCCESS;
}

static CUresult fatbin_size(const unsigned char *p, size_t *size)
{
	struct fatbin_header fh;
	uint64_t end = 0;

	memcpy(&fh, p, sizeof(fh));
	if (fh.header_size < sizeof(fh) ||
	    end_of(fh.header_size, fh.fat_size, &end))
		return CUDA_ERROR_INVALID_IMAGE;
	*size = (size_t)end;
	return CUDA_SUCCESS;
}

static int is_text(unsigned char c)
{
	return c == '\t' || c == '\n' || c == '\r' || (c >= 0x20 && c < 0x7f);
}

CUresult client_image_span(const void *image, const void **start, size_t *size)
{
	const unsigned char *p = image;
	uint32_t magic;
	size_t n;

	if (!image)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&magic, p, sizeof(magic));
	if (magic == CLIENT_FATBINC_MAGIC) {
		struct fatbinc_wrapper w;

		memcpy(&w, p, sizeof(w));
		if (!w.data)
			return CUDA_ERROR_INVALID_IMAGE;
		p = w.data;
		memcpy(&magic, p, sizeof(magic));
		if (magic != CLIENT_FATBIN_MAGIC)
			return CUDA_ERROR_INVALID_IMAGE;
	}
	*start = p;
	if (magic == CLIENT_FATBIN_MAGIC)
		return fatbin_size(p, size);
	if (memcmp(p, ELFMAG, SELFMAG) == 0)
		return elf_size(p, size);
	if (!is_text(p[0]))
		return CUDA_ERROR_INVALID_IMAGE;
	/* PTX: text up to its NUL, which the worker gets too */
	n = strnlen((const char *)p, VGPU_MAX_IMAGE_BYTES);
	if (n >= VGPU_MAX_IMAGE_BYTES)
		return CUDA_ERROR_INVALID_IMAGE;
	*size = n + 1;
	return CUDA_SUCCESS;
}

int client_image_is_binary(const void *image, size_t size)
{
	uint32_t magic;

	if (size < sizeof(magic))
		return 0;
	memcpy(&magic, image, sizeof(magic));
	return magic == CLIENT_FATBIN_MAGIC ||
	       memcmp(image, ELFMAG, SELFMAG) == 0;
}
