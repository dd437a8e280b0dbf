/* SPDX-License-Identifier: MIT */
/*
 * Modules and libraries: cuModuleLoad*, cuLibraryLoadData, kernel
 * lookup and unloading.
 *
 * An image goes to the worker through its staging buffer: pieces of at
 * most a copy chunk (VGPU_OP_STAGE_WRITE), then VGPU_OP_LIBRARY_LOAD. The
 * staging buffer is per client, so one image is staged at a time
 * (stage_lock). JIT and library options are accepted and ignored; the
 * log outputs they ask for come back empty.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client.h"
#include "client_api.h"
#include "client_copy.h"
#include "client_image.h"
#include "client_module.h"
#include "client_params.h"
#include "client_trace.h"

static void kernel_release(struct client_obj *o)
{
	struct client_kernel *k = (struct client_kernel *)o;

	free(k->name);
	free(k);
}

static void library_release(struct client_obj *o)
{
	struct client_library *l = (struct client_library *)o;

	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* Stages image in pieces and waits until the worker has every piece. */
static CUresult stage_image(struct client_ring *r, const void *image,
			    size_t size)
{
	struct client_group group = {0};
	uint64_t chunk = client_copy_chunk(r), done = 0, off;
	CUresult err = CUDA_SUCCESS, werr;

	while (done < size) {
		uint64_t len = size - done < chunk ? size - done : chunk;
		struct client_push how = {
			.mode = CLIENT_SLOT_ASYNC,
			.group = &group,
			.data_len = len,
		};
		struct vgpu_sqe sqe = {.opcode = VGPU_OP_STAGE_WRITE};

		err = client_ring_data_alloc(r, len, &off);
		if (err != CUDA_SUCCESS)
			break;
		memcpy(client_ring_data(r, off), (const char *)image + done,
		       len);
		how.data_off = off;
		sqe.a[0] = done;
		sqe.a[1] = off;
		sqe.a[2] = len;
		err = client_ring_push(r, &sqe, &how, NULL);
		if (err != CUDA_SUCCESS) {
			client_ring_data_free(r, off, len);
			break;
		}
		client_ring_flush(r);
		done += len;
	}
	werr = client_ring_wait_group(r, &group);
	if (err == CUDA_SUCCESS)
		err = werr != CUDA_SUCCESS ? werr : group.error;
	return err;
}

/* Loads size bytes of image into the worker; a new registered library
 * (module: loaded as a CUmodule). */
static CUresult library_load(struct client *c, const void *image, size_t size,
			     int module, struct client_library **out)
{
	struct client_push how = {.mode = CLIENT_SLOT_WAIT};
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_LIBRARY_LOAD};
	struct client_ring *r = &c->ring;
	struct client_library *l;
	struct vgpu_cqe cqe;
	uint32_t tag;
	CUresult err;

	if (size == 0 || size > VGPU_MAX_IMAGE_BYTES)
		return CUDA_ERROR_INVALID_IMAGE;
	l = calloc(1, sizeof(*l));
	if (!l)
		return CUDA_ERROR_OUT_OF_MEMORY;

	pthread_mutex_lock(&c->stage_lock);
	client_ring_lock(r);
	err = stage_image(r, image, size);
	if (err == CUDA_SUCCESS) {
		sqe.a[0] = size;
		err = client_ring_push(r, &sqe, &how, &tag);
	}
	if (err == CUDA_SUCCESS)
		err = client_ring_wait(r, tag, &cqe);
	if (err == CUDA_SUCCESS)
		err = (CUresult)cqe.status;
	if (err == CUDA_SUCCESS && !client_handle_ok(cqe.r[0]))
		err = CUDA_ERROR_INVALID_HANDLE;
	client_ring_unlock(r);
	pthread_mutex_unlock(&c->stage_lock);
	if (err != CUDA_SUCCESS) {
		free(l);
		return err;
	}

	l->obj.type = CLIENT_OBJ_LIBRARY;
	l->obj.release = library_release;
	l->handle = (uint32_t)cqe.r[0];
	l->module = module;
	pthread_mutex_init(&l->lock, NULL);
	if (client_registry_add(&c->registry, &l->obj)) {
		sqe = (struct vgpu_sqe){.opcode = VGPU_OP_LIBRARY_UNLOAD,
					.handle = l->handle};
		client_ring_call(r, &sqe, NULL);
		library_release(&l->obj);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = l;
	return CUDA_SUCCESS;
}

/*
 * The entry check: modules live in a context, libraries (CUDA 12) need
 * only cuInit.
 */
static CUresult code_enter(struct client **c, int in_ctx)
{
	return in_ctx ? client_enter(c) : client_get(c);
}

/* A library from an in-memory image whose length the image tells. */
static CUresult library_load_image(const void *image, int in_ctx,
				   struct client_library **out)
{
	const void *start;
	struct client *c;
	size_t size;
	CUresult err = code_enter(&c, in_ctx);

	if (err != CUDA_SUCCESS)
		return err;
	err = client_image_span(image, &start, &size);
	if (err == CUDA_SUCCESS)
		err = library_load(c, start, size, in_ctx, out);
	if (err != CUDA_SUCCESS && client_trace_on())
		client_trace("%s of the image at %p -> %d\n",
			     in_ctx ? "module load" : "library load", image,
			     (int)err);
	return err;
}

/* Answers the JIT options that are outputs: empty logs, no time. */
static void jit_outputs(unsigned int n, const CUjit_option *options,
			void **values)
{
	if (!options || !values)
		return;
	for (unsigned int i = 0; i < n; i++) {
		switch (options[i]) {
		case CU_JIT_INFO_LOG_BUFFER:
		case CU_JIT_ERROR_LOG_BUFFER:
			if (values[i])
				*(char *)values[i] = '\0';
			break;
		case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
		case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
			values[i] = (void *)(uintptr_t)0;
			break;
		case CU_JIT_WALL_TIME: {
			float zero = 0;

			memcpy(&values[i], &zero, sizeof(zero));
			break;
		}
		default:
			break;
		}
	}
}

/*
 * Reads a whole module file (cuModuleLoad): CUDA_ERROR_FILE_NOT_FOUND
 * when it cannot be opened or read, CUDA_ERROR_INVALID_IMAGE when it is
 * empty or too large.
 */
static CUresult read_file(const char *fname, void **buf, size_t *size)
{
	struct stat st;
	CUresult err = CUDA_ERROR_FILE_NOT_FOUND;
	FILE *f = fopen(fname, "rb");
	char *p = NULL;

	if (!f)
		return CUDA_ERROR_FILE_NOT_FOUND;
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode))
		goto out;
	if (st.st_size <= 0 || st.st_size > VGPU_MAX_IMAGE_BYTES) {
		err = CUDA_ERROR_INVALID_IMAGE;
		goto out;
	}
	/* a NUL after the bytes: PTX text gets its terminator */
	p = malloc((size_t)st.st_size + 1);
	if (!p) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	if (fread(p, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		free(p);
		goto out;
	}
	p[st.st_size] = '\0';
	*buf = p;
	*size = (size_t)st.st_size;
	err = CUDA_SUCCESS;
out:
	fclose(f);
	return err;
}

/* A library from the file fname (in_ctx: a module). */
static CUresult library_load_file(const char *fname, int in_ctx,
				  struct client_library **out)
{
	struct client *c;
	void *buf;
	size_t size;
	CUresult err = code_enter(&c, in_ctx);

	if (err != CUDA_SUCCESS)
		return err;
	if (!fname)
		return CUDA_ERROR_INVALID_VALUE;
	err = read_file(fname, &buf, &size);
	if (err != CUDA_SUCCESS)
		return err;
	/* PTX text is sent up to and with its NUL, as from memory */
	if (!client_image_is_binary(buf, size))
		size = strlen(buf) + 1;
	err = library_load(c, buf, size, in_ctx, out);
	free(buf);
	return err;
}

VGPU_API CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
	struct client_library *l;
	CUresult err;

	if (!module)
		return CUDA_ERROR_INVALID_VALUE;
	err = library_load_file(fname, 1, &l);
	if (err == CUDA_SUCCESS)
		*module = (CUmodule)l;
	return err;
}

static CUresult module_load_data(CUmodule *module, const void *image)
{
	struct client_library *l;
	CUresult err;

	if (!module)
		return CUDA_ERROR_INVALID_VALUE;
	err = library_load_image(image, 1, &l);
	if (err == CUDA_SUCCESS)
		*module = (CUmodule)l;
	return err;
}

VGPU_API CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
	return module_load_data(module, image);
}

VGPU_API CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module,
					     const void *image,
					     unsigned int numOptions,
					     CUjit_option *options,
					     void **optionValues)
{
	if (numOptions && (!options || !optionValues))
		return CUDA_ERROR_INVALID_VALUE;
	jit_outputs(numOptions, options, optionValues);
	return module_load_data(module, image);
}

VGPU_API CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module,
						const void *fatCubin)
{
	return module_load_data(module, fatCubin);
}

/*
 * cuLibraryLoad*'s option arrays: present when counted; the JIT's
 * outputs answered. Each library option must be one cuda.h names.
 * CU_LIBRARY_BINARY_IS_PRESERVED (a hint we need not take: the worker
 * keeps its own copy) has no value, so its values array may be NULL, as
 * cuBLASLt passes it; from a file it is refused, as documented.
 */
static int library_options_ok(CUlibrary *library, CUjit_option *jit,
			      void **jit_values, unsigned int njit,
			      CUlibraryOption *lib_opts, void **lib_values,
			      unsigned int nlib, int from_file)
{
	if (!library || (njit && (!jit || !jit_values)) || (nlib && !lib_opts))
		return 0;
	for (unsigned int i = 0; i < nlib; i++) {
		if (lib_opts[i] == CU_LIBRARY_BINARY_IS_PRESERVED) {
			if (from_file)
				return 0;
		} else if (
			lib_opts[i] !=
				CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE ||
			!lib_values) {
			return 0;
		}
	}
	jit_outputs(njit, jit, jit_values);
	return 1;
}

VGPU_API CUresult CUDAAPI
cuLibraryLoadData(CUlibrary *library, const void *code,
		  CUjit_option *jitOptions, void **jitOptionsValues,
		  unsigned int numJitOptions, CUlibraryOption *libraryOptions,
		  void **libraryOptionValues, unsigned int numLibraryOptions)
{
	struct client_library *l;
	CUresult err;

	if (!library_options_ok(library, jitOptions, jitOptionsValues,
				numJitOptions, libraryOptions,
				libraryOptionValues, numLibraryOptions, 0))
		return CUDA_ERROR_INVALID_VALUE;
	err = library_load_image(code, 0, &l);
	if (err == CUDA_SUCCESS)
		*library = (CUlibrary)l;
	return err;
}

VGPU_API CUresult CUDAAPI cuLibraryLoadFromFile(
	CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
	void **jitOptionsValues, unsigned int numJitOptions,
	CUlibraryOption *libraryOptions, void **libraryOptionValues,
	unsigned int numLibraryOptions)
{
	struct client_library *l;
	CUresult err;

	if (!library_options_ok(library, jitOptions, jitOptionsValues,
				numJitOptions, libraryOptions,
				libraryOptionValues, numLibraryOptions, 1))
		return CUDA_ERROR_INVALID_VALUE;
	err = library_load_file(fileName, 0, &l);
	if (err == CUDA_SUCCESS)
		*library = (CUlibrary)l;
	return err;
}

/* Unregisters a library and its kernels, then unloads it in the worker. */
static CUresult library_unload(const void *handle, int in_ctx)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_LIBRARY_UNLOAD};
	struct client_library *l;
	struct client_kernel *k, *next;
	struct client_obj *o;
	struct client *c;
	CUresult err = code_enter(&c, in_ctx);

	if (err != CUDA_SUCCESS)
		return err;
	o = client_registry_take(&c->registry, handle, CLIENT_OBJ_LIBRARY);
	if (!o)
		return CUDA_ERROR_INVALID_HANDLE;
	l = (struct client_library *)o;
	pthread_mutex_lock(&l->lock);
	for (k = l->kernels; k; k = next) {
		next = k->next;
		o = client_registry_take(&c->registry, k, CLIENT_OBJ_KERNEL);
		if (o)
			client_obj_put(&c->registry, o);
	}
	l->kernels = NULL;
	pthread_mutex_unlock(&l->lock);
	sqe.handle = l->handle;
	err = client_ring_call(&c->ring, &sqe, NULL);
	client_obj_put(&c->registry, &l->obj);
	return err;
}

VGPU_API CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
	return library_unload(hmod, 1);
}

VGPU_API CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
	return library_unload(library, 0);
}

/*
 * VGPU_OP_LIBRARY_GET_KERNEL: the name and the layout answer share one
 * data region (name first, the answer on the next 8-byte boundary).
 */
static CUresult kernel_lookup(struct client *c, uint32_t lib, const char *name,
			      size_t len, uint32_t *handle,
			      struct vgpu_kernel_info *layout)
{
	struct client_push how = {.mode = CLIENT_SLOT_WAIT};
	struct vgpu_sqe sqe = {
		.opcode = VGPU_OP_LIBRARY_GET_KERNEL,
		.handle = lib,
	};
	struct client_ring *r = &c->ring;
	uint64_t name_room = (len + 1 + 7) & ~7ull, off;
	struct vgpu_cqe cqe;
	char why[160];
	uint32_t tag;
	CUresult err;

	client_ring_lock(r);
	err = client_ring_data_alloc(r, name_room + sizeof(*layout), &off);
	if (err != CUDA_SUCCESS)
		goto out;
	memcpy(client_ring_data(r, off), name, len + 1);
	sqe.a[0] = off;
	sqe.a[1] = len + 1;
	sqe.a[2] = off + name_room;
	sqe.a[3] = sizeof(*layout);
	err = client_ring_push(r, &sqe, &how, &tag);
	if (err == CUDA_SUCCESS)
		err = client_ring_wait(r, tag, &cqe);
	if (err == CUDA_SUCCESS)
		err = (CUresult)cqe.status;
	if (err == CUDA_SUCCESS) {
		memcpy(layout, client_ring_data(r, off + name_room),
		       sizeof(*layout));
		if (!client_handle_ok(cqe.r[0]))
			err = CUDA_ERROR_INVALID_HANDLE;
		else if (client_params_check_layout(layout, why, sizeof(why)))
			err = CUDA_ERROR_INVALID_IMAGE;
		*handle = (uint32_t)cqe.r[0];
	}
	client_ring_data_free(r, off, name_room + sizeof(*layout));
out:
	client_ring_unlock(r);
	return err;
}

/* The kernel called name in library handle: the same object each time. */
CUresult client_kernel_get(const void *library, const char *name, int in_ctx,
			   struct client_kernel **out)
{
	struct client_library *l;
	struct client_kernel *k;
	struct client_obj *o;
	struct client *c;
	size_t len;
	CUresult err = code_enter(&c, in_ctx);

	if (err != CUDA_SUCCESS)
		return err;
	if (!out || !name)
		return CUDA_ERROR_INVALID_VALUE;
	len = strnlen(name, VGPU_KERNEL_NAME_MAX);
	if (len == 0 || len >= VGPU_KERNEL_NAME_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	o = client_registry_get(&c->registry, library, CLIENT_OBJ_LIBRARY);
	if (!o)
		return CUDA_ERROR_INVALID_HANDLE;
	l = (struct client_library *)o;

	pthread_mutex_lock(&l->lock);
	for (k = l->kernels; k; k = k->next)
		if (strcmp(k->name, name) == 0)
			goto found;
	k = calloc(1, sizeof(*k));
	if (k)
		k->name = strdup(name);
	if (!k || !k->name) {
		free(k);
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	err = kernel_lookup(c, l->handle, name, len, &k->handle, &k->layout);
	if (err == CUDA_SUCCESS) {
		k->obj.type = CLIENT_OBJ_KERNEL;
		k->obj.release = kernel_release;
		if (client_registry_add(&c->registry, &k->obj))
			err = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (err != CUDA_SUCCESS) {
		free(k->name);
		free(k);
		goto out;
	}
	k->next = l->kernels;
	l->kernels = k;
found:
	*out = k;
out:
	pthread_mutex_unlock(&l->lock);
	client_obj_put(&c->registry, o);
	return err;
}

VGPU_API CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod,
					      const char *name)
{
	struct client_kernel *k;
	CUresult err;

	if (!hfunc)
		return CUDA_ERROR_INVALID_VALUE;
	err = client_kernel_get(hmod, name, 1, &k);
	if (err == CUDA_SUCCESS)
		*hfunc = (CUfunction)k;
	return err;
}

VGPU_API CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel,
					     CUlibrary library,
					     const char *name)
{
	struct client_kernel *k;
	CUresult err;

	if (!pKernel)
		return CUDA_ERROR_INVALID_VALUE;
	err = client_kernel_get(library, name, 0, &k);
	if (err == CUDA_SUCCESS)
		*pKernel = (CUkernel)k;
	return err;
}

/*
 * Whether k is a kernel of this process (in_ctx: the call needs a current
 * context); its name into *name when name is given (valid while the
 * kernel's library is loaded). out is the caller's output, checked here.
 */
static CUresult kernel_known(const void *k, int in_ctx, const void *out,
			     const char **name)
{
	struct client_obj *o;
	struct client *c;
	CUresult err = code_enter(&c, in_ctx);

	if (err != CUDA_SUCCESS)
		return err;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	o = client_registry_get(&c->registry, k, CLIENT_OBJ_KERNEL);
	if (!o)
		return CUDA_ERROR_INVALID_HANDLE;
	if (name)
		*name = ((struct client_kernel *)o)->name;
	client_obj_put(&c->registry, o);
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc,
					      CUkernel kernel)
{
	CUresult err = kernel_known(kernel, 1, pFunc, NULL);

	if (err == CUDA_SUCCESS)
		*pFunc = (CUfunction)kernel;
	return err;
}

VGPU_API CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel hfunc)
{
	return kernel_known(hfunc, 0, name, name);
}

VGPU_API CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc)
{
	return kernel_known(hfunc, 0, name, name);
}

/*
 * VGPU_OP_LIBRARY_GET_GLOBAL (protocol 1.1): the device address and size
 * of a __device__ or __constant__ variable of a library. The worker
 * checks the name; we check that what comes back is a plausible range.
 */
static CUresult global_lookup(struct client *c, uint32_t lib, const char *name,
			      size_t len, CUdeviceptr *dptr, size_t *bytes)
{
	struct client_push how = {.mode = CLIENT_SLOT_WAIT};
	struct vgpu_sqe sqe = {
		.opcode = VGPU_OP_LIBRARY_GET_GLOBAL,
		.handle = lib,
	};
	struct client_ring *r = &c->ring;
	struct vgpu_cqe cqe;
	uint64_t off;
	uint32_t tag;
	CUresult err;

	client_ring_lock(r);
	err = client_ring_data_alloc(r, len + 1, &off);
	if (err != CUDA_SUCCESS)
		goto out;
	memcpy(client_ring_data(r, off), name, len + 1);
	sqe.a[0] = off;
	sqe.a[1] = len + 1;
	err = client_ring_push(r, &sqe, &how, &tag);
	if (err == CUDA_SUCCESS)
		err = client_ring_wait(r, tag, &cqe);
	if (err == CUDA_SUCCESS)
		err = (CUresult)cqe.status;
	if (err == CUDA_SUCCESS) {
		/* a null address or a range that wraps is the worker's bug */
		if (cqe.r[0] == 0 || cqe.r[1] > UINT64_MAX - cqe.r[0])
			err = CUDA_ERROR_INVALID_VALUE;
		if (dptr)
			*dptr = (CUdeviceptr)cqe.r[0];
		if (bytes)
			*bytes = (size_t)cqe.r[1];
	}
	client_ring_data_free(r, off, len + 1);
out:
	client_ring_unlock(r);
	return err;
}

/* The entry check and name check shared by both versions. */
static CUresult global_get(CUdeviceptr *dptr, size_t *bytes,
			   const void *library, const char *name, int in_ctx)
{
	struct client_library *l;
	struct client_obj *o;
	struct client *c;
	size_t len;
	CUresult err = code_enter(&c, in_ctx);

	if (err != CUDA_SUCCESS)
		return err;
	if (!name || (!dptr && !bytes))
		return CUDA_ERROR_INVALID_VALUE;
	len = strnlen(name, VGPU_KERNEL_NAME_MAX);
	if (len == 0 || len >= VGPU_KERNEL_NAME_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	o = client_registry_get(&c->registry, library, CLIENT_OBJ_LIBRARY);
	if (!o)
		return CUDA_ERROR_INVALID_HANDLE;
	l = (struct client_library *)o;
	err = global_lookup(c, l->handle, name, len, dptr, bytes);
	client_obj_put(&c->registry, o);
	return err;
}

/* cuModuleGetGlobal of cuda.h 13 is cuModuleGetGlobal_v2. */
VGPU_API CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes,
					    CUmodule hmod, const char *name)
{
	return global_get(dptr, bytes, hmod, name, 1);
}

VGPU_API CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes,
					     CUlibrary library,
					     const char *name)
{
	return global_get(dptr, bytes, library, name, 0);
}

/* As NVIDIA's driver: lazy unless CUDA_MODULE_LOADING=EAGER. Our
 * libraries are loaded in the worker when the program loads them either
 * way; the answer only tells the runtime how to ask. */
VGPU_API CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
	const char *v = getenv("CUDA_MODULE_LOADING");

	if (!mode)
		return CUDA_ERROR_INVALID_VALUE;
	*mode = v && !strcmp(v, "EAGER") ? CU_MODULE_EAGER_LOADING
					 : CU_MODULE_LAZY_LOADING;
	return CUDA_SUCCESS;
}
