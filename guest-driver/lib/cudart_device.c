/* SPDX-License-Identifier: MIT */
/*
 * The runtime's start and the device: one device (0), the vGPU, whose
 * properties are those of its slice (SMs, memory quota, name) as our
 * driver API reports them; cudaDeviceReset.
 */
#include <pthread.h>
#include <string.h>

#include "cudart.h"
#include "cudart_registry.h"

struct cudart_start {
	pthread_once_t once;
	cudaError_t err;
	CUcontext primary;
	unsigned int flags; /* cudaSetDeviceFlags */
};

static struct cudart_start cudart_start_the = {.once = PTHREAD_ONCE_INIT};
static __thread int cudart_thread_ready;

static void start_once(void)
{
	struct cudart_start *s = &cudart_start_the;
	CUresult res = cuInit(0);

	if (res == CUDA_SUCCESS)
		res = cuDevicePrimaryCtxRetain(&s->primary, 0);
	s->err = res == CUDA_ERROR_NO_DEVICE ? cudaErrorNoDevice
					     : cudart_error_from_cu(res);
}

cudaError_t cudart_enter(void)
{
	struct cudart_start *s = &cudart_start_the;
	cudaError_t sticky = cudart_sticky();
	CUcontext cur = NULL;

	if (sticky != cudaSuccess)
		return sticky;
	pthread_once(&s->once, start_once);
	if (s->err != cudaSuccess)
		return s->err;
	if (!cudart_thread_ready) {
		/* a context the thread set itself (driver API) is kept */
		if (cuCtxGetCurrent(&cur) != CUDA_SUCCESS || !cur) {
			CUresult res = cuCtxSetCurrent(s->primary);

			if (res != CUDA_SUCCESS)
				return cudart_error_from_cu(res);
		}
		cudart_thread_ready = 1;
	}
	return cudaSuccess;
}

int cudart_attr(CUdevice_attribute a)
{
	int v = 0;

	if (cuDeviceGetAttribute(&v, a, 0) != CUDA_SUCCESS)
		return 0;
	return v;
}

CUDART_API cudaError_t CUDARTAPI cudaGetDeviceCount(int *count)
{
	cudaError_t err;

	if (!count)
		return cudart_ret(cudaErrorInvalidValue);
	err = cudart_enter();
	*count = err == cudaSuccess ? 1 : 0;
	return cudart_ret(err);
}

CUDART_API cudaError_t CUDARTAPI cudaSetDevice(int device)
{
	cudaError_t err = cudart_enter();

	if (err != cudaSuccess)
		return cudart_ret(err);
	return cudart_ret(device == 0 ? cudaSuccess : cudaErrorInvalidDevice);
}

CUDART_API cudaError_t CUDARTAPI cudaGetDevice(int *device)
{
	if (!device)
		return cudart_ret(cudaErrorInvalidValue);
	*device = 0;
	return cudaSuccess;
}

CUDART_API cudaError_t CUDARTAPI cudaInitDevice(int device,
						unsigned int deviceFlags,
						unsigned int flags)
{
	cudaError_t err = cudart_enter();

	if (err != cudaSuccess)
		return cudart_ret(err);
	return cudart_ret(device == 0 ? cudaSuccess : cudaErrorInvalidDevice);
}

/* Scheduling flags are hints here: kept and reported back. */
CUDART_API cudaError_t CUDARTAPI cudaSetDeviceFlags(unsigned int flags)
{
	if (flags & ~(unsigned int)cudaDeviceMask)
		return cudart_ret(cudaErrorInvalidValue);
	cudart_start_the.flags = flags;
	return cudaSuccess;
}

CUDART_API cudaError_t CUDARTAPI cudaGetDeviceFlags(unsigned int *flags)
{
	if (!flags)
		return cudart_ret(cudaErrorInvalidValue);
	*flags = cudart_start_the.flags | cudaDeviceMapHost;
	return cudaSuccess;
}

CUDART_API cudaError_t CUDARTAPI
cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
	cudaError_t err = cudart_enter();

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (!value)
		return cudart_ret(cudaErrorInvalidValue);
	if (device != 0)
		return cudart_ret(cudaErrorInvalidDevice);
	/* cudaDeviceAttr and CUdevice_attribute share their values */
	return cudart_ret_cu(
		cuDeviceGetAttribute(value, (CUdevice_attribute)attr, 0));
}

/* Fills the texture and surface limits of prop from the device. */
static void props_textures(struct cudaDeviceProp *p)
{
#define A(x) cudart_attr(CU_DEVICE_ATTRIBUTE_##x)
	p->maxTexture1D = A(MAXIMUM_TEXTURE1D_WIDTH);
	p->maxTexture1DMipmap = A(MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH);
	p->maxTexture2D[0] = A(MAXIMUM_TEXTURE2D_WIDTH);
	p->maxTexture2D[1] = A(MAXIMUM_TEXTURE2D_HEIGHT);
	p->maxTexture2DMipmap[0] = A(MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH);
	p->maxTexture2DMipmap[1] = A(MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT);
	p->maxTexture2DLinear[0] = A(MAXIMUM_TEXTURE2D_LINEAR_WIDTH);
	p->maxTexture2DLinear[1] = A(MAXIMUM_TEXTURE2D_LINEAR_HEIGHT);
	p->maxTexture2DLinear[2] = A(MAXIMUM_TEXTURE2D_LINEAR_PITCH);
	p->maxTexture2DGather[0] = A(MAXIMUM_TEXTURE2D_GATHER_WIDTH);
	p->maxTexture2DGather[1] = A(MAXIMUM_TEXTURE2D_GATHER_HEIGHT);
	p->maxTexture3D[0] = A(MAXIMUM_TEXTURE3D_WIDTH);
	p->maxTexture3D[1] = A(MAXIMUM_TEXTURE3D_HEIGHT);
	p->maxTexture3D[2] = A(MAXIMUM_TEXTURE3D_DEPTH);
	p->maxTexture3DAlt[0] = A(MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE);
	p->maxTexture3DAlt[1] = A(MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE);
	p->maxTexture3DAlt[2] = A(MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE);
	p->maxTextureCubemap = A(MAXIMUM_TEXTURECUBEMAP_WIDTH);
	p->maxTexture1DLayered[0] = A(MAXIMUM_TEXTURE1D_LAYERED_WIDTH);
	p->maxTexture1DLayered[1] = A(MAXIMUM_TEXTURE1D_LAYERED_LAYERS);
	p->maxTexture2DLayered[0] = A(MAXIMUM_TEXTURE2D_LAYERED_WIDTH);
	p->maxTexture2DLayered[1] = A(MAXIMUM_TEXTURE2D_LAYERED_HEIGHT);
	p->maxTexture2DLayered[2] = A(MAXIMUM_TEXTURE2D_LAYERED_LAYERS);
	p->maxTextureCubemapLayered[0] =
		A(MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH);
	p->maxTextureCubemapLayered[1] =
		A(MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS);
	p->maxSurface1D = A(MAXIMUM_SURFACE1D_WIDTH);
	p->maxSurface2D[0] = A(MAXIMUM_SURFACE2D_WIDTH);
	p->maxSurface2D[1] = A(MAXIMUM_SURFACE2D_HEIGHT);
	p->maxSurface3D[0] = A(MAXIMUM_SURFACE3D_WIDTH);
	p->maxSurface3D[1] = A(MAXIMUM_SURFACE3D_HEIGHT);
	p->maxSurface3D[2] = A(MAXIMUM_SURFACE3D_DEPTH);
	p->maxSurface1DLayered[0] = A(MAXIMUM_SURFACE1D_LAYERED_WIDTH);
	p->maxSurface1DLayered[1] = A(MAXIMUM_SURFACE1D_LAYERED_LAYERS);
	p->maxSurface2DLayered[0] = A(MAXIMUM_SURFACE2D_LAYERED_WIDTH);
	p->maxSurface2DLayered[1] = A(MAXIMUM_SURFACE2D_LAYERED_HEIGHT);
	p->maxSurface2DLayered[2] = A(MAXIMUM_SURFACE2D_LAYERED_LAYERS);
	p->maxSurfaceCubemap = A(MAXIMUM_SURFACECUBEMAP_WIDTH);
	p->maxSurfaceCubemapLayered[0] =
		A(MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH);
	p->maxSurfaceCubemapLayered[1] =
		A(MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS);
}

/*
 * The slice as a device: name, SMs and memory are the vGPU's; the rest
 * is the physical GPU's, except what a vGPU does not offer (managed and
 * mapped host memory, host registration, cooperative and cluster
 * launches, memory pools, IPC), which reads 0.
 */
CUDART_API cudaError_t CUDARTAPI
cudaGetDeviceProperties(struct cudaDeviceProp *p, int device)
{
	cudaError_t err = cudart_enter();
	size_t mem = 0;
	CUuuid uuid;

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (!p)
		return cudart_ret(cudaErrorInvalidValue);
	if (device != 0)
		return cudart_ret(cudaErrorInvalidDevice);
	memset(p, 0, sizeof(*p));
	cuDeviceGetName(p->name, sizeof(p->name), 0);
	if (cuDeviceGetUuid(&uuid, 0) == CUDA_SUCCESS)
		memcpy(p->uuid.bytes, uuid.bytes, sizeof(p->uuid.bytes));
	cuDeviceTotalMem(&mem, 0);
	p->totalGlobalMem = mem;
	p->sharedMemPerBlock = (size_t)A(MAX_SHARED_MEMORY_PER_BLOCK);
	p->regsPerBlock = A(MAX_REGISTERS_PER_BLOCK);
	p->warpSize = A(WARP_SIZE);
	p->memPitch = (size_t)A(MAX_PITCH);
	p->maxThreadsPerBlock = A(MAX_THREADS_PER_BLOCK);
	p->maxThreadsDim[0] = A(MAX_BLOCK_DIM_X);
	p->maxThreadsDim[1] = A(MAX_BLOCK_DIM_Y);
	p->maxThreadsDim[2] = A(MAX_BLOCK_DIM_Z);
	p->maxGridSize[0] = A(MAX_GRID_DIM_X);
	p->maxGridSize[1] = A(MAX_GRID_DIM_Y);
	p->maxGridSize[2] = A(MAX_GRID_DIM_Z);
	p->totalConstMem = (size_t)A(TOTAL_CONSTANT_MEMORY);
	p->major = A(COMPUTE_CAPABILITY_MAJOR);
	p->minor = A(COMPUTE_CAPABILITY_MINOR);
	p->textureAlignment = (size_t)A(TEXTURE_ALIGNMENT);
	p->texturePitchAlignment = (size_t)A(TEXTURE_PITCH_ALIGNMENT);
	p->multiProcessorCount = A(MULTIPROCESSOR_COUNT);
	p->integrated = A(INTEGRATED);
	props_textures(p);
	p->surfaceAlignment = (size_t)A(SURFACE_ALIGNMENT);
	p->concurrentKernels = A(CONCURRENT_KERNELS);
	p->ECCEnabled = A(ECC_ENABLED);
	p->pciBusID = A(PCI_BUS_ID);
	p->pciDeviceID = A(PCI_DEVICE_ID);
	p->pciDomainID = A(PCI_DOMAIN_ID);
	p->tccDriver = A(TCC_DRIVER);
	p->asyncEngineCount = A(ASYNC_ENGINE_COUNT);
	p->unifiedAddressing = A(UNIFIED_ADDRESSING);
	p->memoryBusWidth = A(GLOBAL_MEMORY_BUS_WIDTH);
	p->l2CacheSize = A(L2_CACHE_SIZE);
	p->persistingL2CacheMaxSize = A(MAX_PERSISTING_L2_CACHE_SIZE);
	p->maxThreadsPerMultiProcessor = A(MAX_THREADS_PER_MULTIPROCESSOR);
	p->streamPrioritiesSupported = A(STREAM_PRIORITIES_SUPPORTED);
	p->globalL1CacheSupported = A(GLOBAL_L1_CACHE_SUPPORTED);
	p->localL1CacheSupported = A(LOCAL_L1_CACHE_SUPPORTED);
	p->sharedMemPerMultiprocessor =
		(size_t)A(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
	p->regsPerMultiprocessor = A(MAX_REGISTERS_PER_MULTIPROCESSOR);
	p->isMultiGpuBoard = A(MULTI_GPU_BOARD);
	p->multiGpuBoardGroupID = A(MULTI_GPU_BOARD_GROUP_ID);
	p->hostNativeAtomicSupported = A(HOST_NATIVE_ATOMIC_SUPPORTED);
	p->computePreemptionSupported = A(COMPUTE_PREEMPTION_SUPPORTED);
	p->sharedMemPerBlockOptin =
		(size_t)A(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
	p->maxBlocksPerMultiProcessor = A(MAX_BLOCKS_PER_MULTIPROCESSOR);
	p->accessPolicyMaxWindowSize = A(MAX_ACCESS_POLICY_WINDOW_SIZE);
	p->reservedSharedMemPerBlock =
		(size_t)A(RESERVED_SHARED_MEMORY_PER_BLOCK);
	p->unifiedFunctionPointers = A(UNIFIED_FUNCTION_POINTERS);
	p->deviceNumaConfig = A(NUMA_CONFIG);
	p->deviceNumaId = A(NUMA_ID);
	p->mpsEnabled = A(MPS_ENABLED);
	p->hostNumaId = A(HOST_NUMA_ID);
	p->gpuPciDeviceID = (unsigned int)A(GPU_PCI_DEVICE_ID);
	p->gpuPciSubsystemID = (unsigned int)A(GPU_PCI_SUBSYSTEM_ID);
#undef A
	return cudaSuccess;
}

CUDART_API cudaError_t CUDARTAPI cudaDeviceSynchronize(void)
{
	cudaError_t err = cudart_enter();

	if (err != cudaSuccess)
		return cudart_ret(err);
	return cudart_ret_cu(cuCtxSynchronize());
}

/*
 * What CUDA documents: every allocation (device and pinned host), stream,
 * event and loaded module of the process is destroyed (our driver's
 * cuDevicePrimaryCtxReset), the device's settings go back to their
 * defaults and the thread's last error is cleared. The program's kernels
 * and variables stay registered and are loaded again on first use. The
 * primary context is retained again at once, so the runtime goes on as
 * after its first start.
 *
 * A sticky error is not cleared: on a vGPU it means the worker that ran
 * the process's work has gone (the fault took its context down), and the
 * process's connection with it; as the header says of these errors, the
 * process must start over. cudaDeviceReset returns that error then.
 */
CUDART_API cudaError_t CUDARTAPI cudaDeviceReset(void)
{
	struct cudart_start *s = &cudart_start_the;
	cudaError_t err = cudart_enter();
	CUcontext again;

	if (err != cudaSuccess)
		return cudart_ret(err);
	err = cudart_error_from_cu(cuDevicePrimaryCtxReset(0));
	if (cudart_error_is_sticky(err))
		return cudart_ret(err);
	cudart_registry_forget_loaded(&cudart_registry_the);
	if (cuDevicePrimaryCtxRetain(&again, 0) != CUDA_SUCCESS ||
	    again != s->primary)
		return cudart_ret(cudaErrorUnknown);
	s->flags = 0;
	cudart_hints_reset();
	cudart_error_reset_thread();
	return cudaSuccess;
}

CUDART_API cudaError_t CUDARTAPI
cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	/* the worker does not order streams by priority */
	if (leastPriority)
		*leastPriority = 0;
	if (greatestPriority)
		*greatestPriority = 0;
	return cudaSuccess;
}

CUDART_API cudaError_t CUDARTAPI cudaRuntimeGetVersion(int *runtimeVersion)
{
	if (!runtimeVersion)
		return cudart_ret(cudaErrorInvalidValue);
	*runtimeVersion = CUDART_VERSION;
	return cudaSuccess;
}

CUDART_API cudaError_t CUDARTAPI cudaDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return cudart_ret(cudaErrorInvalidValue);
	return cudart_ret_cu(cuDriverGetVersion(driverVersion));
}
