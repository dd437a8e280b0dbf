/* SPDX-License-Identifier: MIT */
/*
 * sim_image for PTX text: the kernels (`.entry NAME (PARAMS)`) and the
 * module variables (`.global` and `.const` declarations at file scope)
 * a PTX module declares, as the PTX ISA writes them:
 *
 *   .visible .entry NAME(.param .u64 .ptr .global .align 4 NAME_param_0,
 *                        .param .align 8 .b8 NAME_param_1[72])
 *   .global .align 8 .u64 lut_sp;
 *
 * A parameter's alignment is its `.align` (before the type) or its
 * type's size; after `.ptr` an `.align` is the pointee's, not the
 * parameter's. A variable with an initialiser is left out: its bytes
 * are not read here, and a variable of zeros in their place would be a
 * wrong answer. Function bodies are skipped by their braces.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "sim_image_int.h"

struct lexer {
	const char *p, *end;
	const char *tok; /* the current token */
	size_t len;
};

static int ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '$' ||
	       c == '%';
}

/* The next token into lx->tok (len 0 at the end), comments skipped. */
static void next(struct lexer *lx)
{
	const char *p = lx->p;

	for (;;) {
		while (p < lx->end && isspace((unsigned char)*p))
			p++;
		if (lx->end - p >= 2 && p[0] == '/' && p[1] == '/') {
			while (p < lx->end && *p != '\n')
				p++;
		} else if (lx->end - p >= 2 && p[0] == '/' && p[1] == '*') {
			p += 2;
			while (lx->end - p >= 2 &&
			       !(p[0] == '*' && p[1] == '/'))
				p++;
			p = lx->end - p >= 2 ? p + 2 : lx->end;
		} else {
			break;
		}
	}
	lx->tok = p;
	if (p < lx->end && ident_char(*p)) {
		while (p < lx->end && ident_char(*p))
			p++;
	} else if (p < lx->end) {
		p++;
	}
	lx->len = (size_t)(p - lx->tok);
	lx->p = p;
}

static int is(const struct lexer *lx, const char *word)
{
	return lx->len == strlen(word) && memcmp(lx->tok, word, lx->len) == 0;
}

/* The size of a PTX scalar type (.u32, .b8, .f64, ...), or 0. */
static uint32_t type_size(const struct lexer *lx)
{
	static const struct {
		const char *name;
		uint32_t size;
	} types[] = {
		{".b8", 1},    {".u8", 1},  {".s8", 1},	 {".b16", 2},
		{".u16", 2},   {".s16", 2}, {".f16", 2}, {".bf16", 2},
		{".b32", 4},   {".u32", 4}, {".s32", 4}, {".f32", 4},
		{".b64", 8},   {".u64", 8}, {".s64", 8}, {".f64", 8},
		{".b128", 16},
	};
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (is(lx, types[i].name))
			return types[i].size;
	return 0;
}

/* A decimal number token into *v: 0, or -1. */
static int number(const struct lexer *lx, uint64_t *v)
{
	size_t i;

	if (!lx->len || lx->len > 12)
		return -1;
	*v = 0;
	for (i = 0; i < lx->len; i++) {
		if (!isdigit((unsigned char)lx->tok[i]))
			return -1;
		*v = *v * 10 + (uint64_t)(lx->tok[i] - '0');
	}
	return 0;
}

/*
 * `[.align A] .type [qualifiers] NAME [N]` after .param or .global
 * (`[]`: size 0):
 * *size and *align in bytes, *name (a copy). Stops after the name and its
 * count. 0, -1 out of memory, -2 not what PTX allows.
 */
static int declaration(struct lexer *lx, uint64_t *size, uint64_t *align,
		       char **name)
{
	uint64_t n = 1, elem;

	*align = 0;
	if (is(lx, ".align")) {
		next(lx);
		if (number(lx, align) || !*align || *align > 4096)
			return -2;
		next(lx);
	}
	elem = type_size(lx);
	if (!elem)
		return -2;
	if (!*align)
		*align = elem;
	next(lx);
	while (lx->len && lx->tok[0] == '.') { /* .ptr .global .align 4 */
		next(lx);
		if (isdigit((unsigned char)lx->tok[0]))
			next(lx);
	}
	if (!lx->len || !ident_char(lx->tok[0]) || lx->len >= 1024)
		return -2;
	*name = strndup(lx->tok, lx->len);
	if (!*name)
		return -1;
	next(lx);
	if (is(lx, "[")) {
		next(lx);
		if (is(lx, "]")) { /* .extern's unsized array */
			n = 0;
		} else if (number(lx, &n) || !n) {
			free(*name);
			return -2;
		} else {
			next(lx);
		}
		if (!is(lx, "]")) {
			free(*name);
			return -2;
		}
		next(lx);
	}
	*size = elem * n;
	return 0;
}

/* The parameter list after `(`, up to its `)`, into a new layout. */
static int params(struct lexer *lx, struct vgpu_kernel_info **out)
{
	struct vgpu_kernel_info *info = calloc(1, sizeof(*info));
	uint64_t size, align, off = 0;
	char *name;
	int rc;

	if (!info)
		return -1;
	while (!is(lx, ")")) {
		if (!is(lx, ".param") || info->nparams == VGPU_MAX_PARAMS)
			goto bad;
		next(lx);
		rc = declaration(lx, &size, &align, &name);
		if (rc) {
			free(info);
			return rc;
		}
		free(name);
		off = (off + align - 1) / align * align;
		if (off + size > VGPU_MAX_PARAM_BYTES)
			goto bad;
		info->params[info->nparams].offset = (uint32_t)off;
		info->params[info->nparams].size = (uint32_t)size;
		info->nparams++;
		off += size;
		if (is(lx, ","))
			next(lx);
		else if (!is(lx, ")"))
			goto bad;
	}
	info->param_bytes = (uint32_t)off;
	*out = info;
	return 0;
bad:
	free(info);
	return -2;
}

/* `.entry NAME (...)`: one more kernel. */
static int entry(struct sim_image *im, struct lexer *lx)
{
	struct vgpu_kernel_info *info = NULL;
	char *name;
	int rc;

	next(lx);
	if (!lx->len || !ident_char(lx->tok[0]) || lx->len >= 1024 ||
	    im->nkernels >= SIM_IMAGE_NAMES_MAX)
		return -2;
	name = strndup(lx->tok, lx->len);
	if (!name)
		return -1;
	next(lx);
	rc = -2;
	if (is(lx, "(")) {
		next(lx);
		rc = params(lx, &info);
	} else if (is(lx, "{") || lx->tok[0] == '.') {
		rc = 0; /* no parameter list: none */
		info = calloc(1, sizeof(*info));
		if (!info)
			rc = -1;
	}
	if (rc == 0 && sim_image_grow(&im->kernels, im->nkernels,
				      &im->kernels_cap, sizeof(*im->kernels)))
		rc = -1;
	if (rc) {
		free(name);
		free(info);
		return rc;
	}
	im->kernels[im->nkernels].name = name;
	im->kernels[im->nkernels].ptx = info;
	im->nkernels++;
	return 0;
}

/* `.global`/`.const` at file scope: one more variable, unless it has an
 * initialiser or is only declared here (.extern). */
static int variable(struct sim_image *im, struct lexer *lx, int external,
		    const char **why)
{
	struct sim_image_var *v;
	uint64_t size, align;
	char *name;
	int rc;

	next(lx);
	rc = declaration(lx, &size, &align, &name);
	if (rc)
		return rc;
	if (external || !size || !is(lx, ";")) { /* or "= {...}" follows */
		free(name);
		return 0;
	}
	rc = sim_image_var_room(im, size, why);
	if (rc) {
		free(name);
		return rc;
	}
	if (sim_image_grow(&im->vars, im->nvars, &im->vars_cap, sizeof(*v))) {
		free(name);
		return -1;
	}
	v = &im->vars[im->nvars++];
	v->name = name;
	v->bytes = size;
	v->init = NULL;
	return 0;
}

int sim_image_ptx_read(struct sim_image *im, const char **why)
{
	struct lexer lx = {
		.p = (const char *)im->code,
		.end = (const char *)im->code + im->len,
	};
	int depth = 0, external = 0, rc = 0;

	for (next(&lx); lx.len && rc == 0; next(&lx)) {
		if (is(&lx, "{")) {
			depth++;
		} else if (is(&lx, "}")) {
			depth -= depth > 0;
		} else if (depth) {
			continue;
		} else if (is(&lx, ".extern")) {
			external = 1;
			continue;
		} else if (is(&lx, ".entry")) {
			rc = entry(im, &lx);
			if (rc == 0 && is(&lx, "{"))
				depth++;
		} else if (is(&lx, ".global") || is(&lx, ".const")) {
			rc = variable(im, &lx, external, why);
		}
		if (is(&lx, ";"))
			external = 0;
	}
	if (rc == -2 && !*why)
		*why = "PTX whose declarations cannot be read";
	return rc;
}
