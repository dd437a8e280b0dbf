/* SPDX-License-Identifier: MIT */
/*
 * How the guest library finds an in-memory image's length: from an ELF
 * cubin's headers and sections, a fatbin's header, the wrapper nvcc
 * emits, or PTX text; inconsistent headers are CUDA_ERROR_INVALID_IMAGE.
 */
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <vgpu/protocol.h>

#include "client_image.h"

/* An ELF64 image with a section table at 0x100 of three sections, the
 * last one's data ending at 0x400. */
static size_t make_elf(unsigned char *img, size_t cap)
{
	Elf64_Ehdr eh = {0};
	Elf64_Shdr sh[3] = {{0}};

	memset(img, 0, cap);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_shoff = 0x100;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 3;
	sh[1].sh_type = SHT_PROGBITS;
	sh[1].sh_offset = 0x300;
	sh[1].sh_size = 0x100;
	sh[2].sh_type = SHT_NOBITS; /* no bytes in the file */
	sh[2].sh_offset = 0x400;
	sh[2].sh_size = 0x10000;
	memcpy(img, &eh, sizeof(eh));
	memcpy(img + 0x100, sh, sizeof(sh));
	return 0x400;
}

static void image_elf_ends_at_its_last_section(void **state)
{
	static unsigned char img[0x400];
	const void *start;
	size_t size = 0;

	(void)state;
	assert_int_equal(make_elf(img, sizeof(img)), 0x400);
	assert_int_equal(client_image_span(img, &start, &size), CUDA_SUCCESS);
	assert_ptr_equal(start, img);
	assert_int_equal(size, 0x400);
}

static void image_elf_with_absurd_headers_is_invalid(void **state)
{
	static unsigned char img[0x400];
	Elf64_Ehdr eh;
	const void *start;
	size_t size;

	(void)state;
	make_elf(img, sizeof(img));
	memcpy(&eh, img, sizeof(eh));
	eh.e_shoff = UINT64_MAX - 8;
	memcpy(img, &eh, sizeof(eh));
	assert_int_equal(client_image_span(img, &start, &size),
			 CUDA_ERROR_INVALID_IMAGE);
	make_elf(img, sizeof(img));
	memcpy(&eh, img, sizeof(eh));
	eh.e_ident[EI_CLASS] = ELFCLASS32;
	memcpy(img, &eh, sizeof(eh));
	assert_int_equal(client_image_span(img, &start, &size),
			 CUDA_ERROR_INVALID_IMAGE);
}

struct fatbin_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t header_size;
	uint64_t fat_size;
};

static void image_fatbin_and_its_wrapper(void **state)
{
	static uint64_t fat[64]; /* aligned like nvcc's */
	struct fatbin_hdr h = {CLIENT_FATBIN_MAGIC, 1, 16, 200};
	struct {
		int32_t magic, version;
		const void *data;
		void *unused;
	} w = {(int32_t)CLIENT_FATBINC_MAGIC, 1, fat, NULL};
	const void *start;
	size_t size;

	(void)state;
	memcpy(fat, &h, sizeof(h));
	assert_int_equal(client_image_span(fat, &start, &size), CUDA_SUCCESS);
	assert_int_equal(size, 216);
	assert_int_equal(client_image_span(&w, &start, &size), CUDA_SUCCESS);
	assert_ptr_equal(start, fat);
	assert_int_equal(size, 216);
	h.fat_size = (uint64_t)VGPU_MAX_IMAGE_BYTES;
	memcpy(fat, &h, sizeof(h));
	assert_int_equal(client_image_span(fat, &start, &size),
			 CUDA_ERROR_INVALID_IMAGE);
}

static void image_ptx_is_text_with_its_nul(void **state)
{
	static const char ptx[] = "//\n.version 8.0\n.target sm_90\n";
	const void *start;
	size_t size;

	(void)state;
	assert_int_equal(client_image_span(ptx, &start, &size), CUDA_SUCCESS);
	assert_int_equal(size, sizeof(ptx));
	assert_false(client_image_is_binary(ptx, sizeof(ptx)));
}

static void image_garbage_is_invalid(void **state)
{
	static const unsigned char junk[16] = {0x01, 0x02, 0x03, 0x04};
	const void *start;
	size_t size;

	(void)state;
	assert_int_equal(client_image_span(junk, &start, &size),
			 CUDA_ERROR_INVALID_IMAGE);
	assert_int_equal(client_image_span(NULL, &start, &size),
			 CUDA_ERROR_INVALID_VALUE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(image_elf_ends_at_its_last_section),
		cmocka_unit_test(image_elf_with_absurd_headers_is_invalid),
		cmocka_unit_test(image_fatbin_and_its_wrapper),
		cmocka_unit_test(image_ptx_is_text_with_its_nul),
		cmocka_unit_test(image_garbage_is_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
