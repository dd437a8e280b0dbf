/* SPDX-License-Identifier: MIT */
/*
 * The registration entry points nvcc's code calls (__cudaRegister*,
 * __cudaUnregisterFatBinary, __cudaInitModule, __cudaGetKernel) and
 * lazy loading. Registration runs in static constructors before main:
 * it only records, and the vGPU is first contacted by the first runtime
 * call that needs it.
 */
#include <stdio.h>

#include "cudart.h"
#include "cudart_module.h"

/* Loads fb's library once; a failed load is tried again next time. */
static cudaError_t fatbin_library(struct cudart_fatbin *fb, CUlibrary *lib)
{
	CUresult res = CUDA_SUCCESS;

	if (!fb->image)
		return cudaErrorInvalidKernelImage;
	pthread_mutex_lock(&fb->lock);
	if (!fb->loaded) {
		res = cuLibraryLoadData(&fb->lib, fb->image, NULL, NULL, 0,
					NULL, NULL, 0);
		fb->loaded = res == CUDA_SUCCESS;
	}
	*lib = fb->lib;
	pthread_mutex_unlock(&fb->lock);
	if (res == CUDA_ERROR_INVALID_IMAGE)
		return cudaErrorInvalidKernelImage;
	if (res == CUDA_ERROR_NO_BINARY_FOR_GPU)
		return cudaErrorNoKernelImageForDevice;
	return cudart_error_from_cu(res);
}

cudaError_t cudart_func_kernel(struct cudart_func *f, CUkernel *k)
{
	CUkernel kern = __atomic_load_n(&f->kernel, __ATOMIC_ACQUIRE);
	cudaError_t err;
	CUlibrary lib;
	CUresult res;

	if (kern) {
		*k = kern;
		return cudaSuccess;
	}
	err = fatbin_library(f->fb, &lib);
	if (err != cudaSuccess)
		return err;
	/* two threads may both look it up; the library returns the same
	 * kernel object to both */
	res = cuLibraryGetKernel(&kern, lib, f->name);
	if (res == CUDA_ERROR_NOT_FOUND || res == CUDA_ERROR_INVALID_VALUE)
		return cudaErrorInvalidDeviceFunction;
	if (res != CUDA_SUCCESS)
		return cudart_error_from_cu(res);
	__atomic_store_n(&f->kernel, kern, __ATOMIC_RELEASE);
	*k = kern;
	return cudaSuccess;
}

cudaError_t cudart_var_resolve(struct cudart_var *v, CUdeviceptr *dptr,
			       size_t *bytes)
{
	cudaError_t err = cudaSuccess;
	CUlibrary lib;
	CUresult res;

	pthread_mutex_lock(&v->lock);
	if (!v->resolved) {
		err = fatbin_library(v->fb, &lib);
		if (err != cudaSuccess)
			goto out;
		res = cuLibraryGetGlobal(&v->dptr, &v->bytes, lib, v->name);
		if (res == CUDA_ERROR_NOT_FOUND ||
		    res == CUDA_ERROR_INVALID_VALUE) {
			err = cudaErrorInvalidSymbol;
			goto out;
		}
		err = cudart_error_from_cu(res);
		if (err != cudaSuccess)
			goto out;
		v->resolved = 1;
	}
	*dptr = v->dptr;
	*bytes = v->bytes;
out:
	pthread_mutex_unlock(&v->lock);
	return err;
}

struct cudart_func *cudart_func_of(const void *host)
{
	return cudart_registry_func(&cudart_registry_the, host);
}

/* Returns the handle nvcc passes to the other registration calls. */
CUDART_API void **CUDARTAPI __cudaRegisterFatBinary(void *fatCubin)
{
	struct cudart_fatbin *fb =
		cudart_registry_add_fatbin(&cudart_registry_the, fatCubin);

	if (!fb)
		fprintf(stderr, "vgpu: out of memory registering CUDA code\n");
	else if (!fb->image)
		fprintf(stderr, "vgpu: CUDA code with an unknown fat binary "
				"wrapper; its kernels will not run\n");
	return (void **)fb;
}

/* Loading is lazy (first use), so there is nothing to finish here. */
CUDART_API void CUDARTAPI __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
}

CUDART_API void CUDARTAPI __cudaUnregisterFatBinary(void **fatCubinHandle)
{
	CUlibrary lib;
	int loaded;

	if (!fatCubinHandle ||
	    cudart_registry_remove_fatbin(
		    &cudart_registry_the,
		    (struct cudart_fatbin *)fatCubinHandle, &lib, &loaded))
		return;
	if (loaded)
		cuLibraryUnload(lib);
}

CUDART_API void CUDARTAPI __cudaRegisterFunction(
	void **fatCubinHandle, const char *hostFun, char *deviceFun,
	const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
	dim3 *bDim, dim3 *gDim, int *wSize)
{
	const char *name = deviceFun ? deviceFun : deviceName;

	if (cudart_registry_add_func(&cudart_registry_the,
				     (struct cudart_fatbin *)fatCubinHandle,
				     hostFun, name))
		fprintf(stderr, "vgpu: cannot register kernel %s\n",
			name ? name : "(null)");
}

CUDART_API void CUDARTAPI __cudaRegisterVar(void **fatCubinHandle,
					    char *hostVar, char *deviceAddress,
					    const char *deviceName, int ext,
					    size_t size, int constant,
					    int global)
{
	const char *name = deviceName ? deviceName : deviceAddress;

	if (cudart_registry_add_var(&cudart_registry_the,
				    (struct cudart_fatbin *)fatCubinHandle,
				    hostVar, name, size, constant))
		fprintf(stderr, "vgpu: cannot register variable %s\n",
			name ? name : "(null)");
}

/* Managed variables need managed memory, which a vGPU does not have. */
CUDART_API void CUDARTAPI __cudaRegisterManagedVar(
	void **fatCubinHandle, void **hostVarPtrAddress, char *deviceAddress,
	const char *deviceName, int ext, size_t size, int constant, int global)
{
	cudart_unsupported("__managed__ variables");
}

/* Used before managed variables are touched: loads the module now. */
CUDART_API char CUDARTAPI __cudaInitModule(void **fatCubinHandle)
{
	struct cudart_fatbin *fb = (struct cudart_fatbin *)fatCubinHandle;
	CUlibrary lib;

	if (!fb || !cudart_registry_has_fatbin(&cudart_registry_the, fb) ||
	    cudart_enter() != cudaSuccess)
		return 0;
	return fatbin_library(fb, &lib) == cudaSuccess;
}

/*
 * nvcc's stub asks once, at its first launch, for the handle it passes to
 * __cudaLaunchKernel: our registration entry, resolved to a device kernel
 * at launch, so this never needs the vGPU and never fails later.
 */
CUDART_API cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t *kernel,
						 const void *func)
{
	struct cudart_func *f;

	if (!kernel)
		return cudart_ret(cudaErrorInvalidValue);
	f = cudart_func_of(func);
	if (!f)
		return cudart_ret(cudaErrorInvalidDeviceFunction);
	*kernel = (cudaKernel_t)f;
	return cudaSuccess;
}

CUDART_API cudaError_t CUDARTAPI cudaGetKernel(cudaKernel_t *kernelPtr,
					       const void *entryFuncAddr)
{
	return __cudaGetKernel(kernelPtr, entryFuncAddr);
}
