/* SPDX-License-Identifier: MIT */
/*
 * NVML's error codes: their text (nvmlErrorString, which needs no
 * nvmlInit) and the translation of the CUDA driver's errors.
 */
#include <stddef.h>

#include "nvml_state.h"

static const char *const nvml_error_text[] = {
	[NVML_SUCCESS] = "Success",
	[NVML_ERROR_UNINITIALIZED] = "Uninitialized",
	[NVML_ERROR_INVALID_ARGUMENT] = "Invalid Argument",
	[NVML_ERROR_NOT_SUPPORTED] = "Not Supported",
	[NVML_ERROR_NO_PERMISSION] = "Insufficient Permissions",
	[NVML_ERROR_ALREADY_INITIALIZED] = "Already Initialized",
	[NVML_ERROR_NOT_FOUND] = "Not Found",
	[NVML_ERROR_INSUFFICIENT_SIZE] = "Insufficient Size",
	[NVML_ERROR_INSUFFICIENT_POWER] = "Insufficient External Power",
	[NVML_ERROR_DRIVER_NOT_LOADED] = "Driver Not Loaded",
	[NVML_ERROR_TIMEOUT] = "Timeout",
	[NVML_ERROR_IRQ_ISSUE] = "Interrupt Request Issue",
	[NVML_ERROR_LIBRARY_NOT_FOUND] = "NVML Shared Library Not Found",
	[NVML_ERROR_FUNCTION_NOT_FOUND] = "Function Not Found",
	[NVML_ERROR_CORRUPTED_INFOROM] = "Corrupted infoROM",
	[NVML_ERROR_GPU_IS_LOST] = "GPU is lost",
	[NVML_ERROR_RESET_REQUIRED] = "GPU requires restart",
	[NVML_ERROR_OPERATING_SYSTEM] =
		"The operating system has blocked the request",
	[NVML_ERROR_LIB_RM_VERSION_MISMATCH] =
		"RM has detected an NVML/RM version mismatch",
	[NVML_ERROR_IN_USE] = "In use by another client",
	[NVML_ERROR_MEMORY] = "Insufficient Memory",
	[NVML_ERROR_NO_DATA] = "No data",
	[NVML_ERROR_VGPU_ECC_NOT_SUPPORTED] =
		"The requested vgpu operation is not available on target "
		"device, because ECC is enabled",
	[NVML_ERROR_INSUFFICIENT_RESOURCES] = "Insufficient resources",
	[NVML_ERROR_FREQ_NOT_SUPPORTED] = "Frequency not supported",
	[NVML_ERROR_ARGUMENT_VERSION_MISMATCH] = "Argument version mismatch",
	[NVML_ERROR_DEPRECATED] = "Deprecated",
	[NVML_ERROR_NOT_READY] = "Not ready",
	[NVML_ERROR_GPU_NOT_FOUND] = "GPU not found",
	[NVML_ERROR_INVALID_STATE] = "Invalid state",
	[NVML_ERROR_RESET_TYPE_NOT_SUPPORTED] = "Reset type not supported",
};

NVML_API const char *nvmlErrorString(nvmlReturn_t result)
{
	size_t n = sizeof(nvml_error_text) / sizeof(nvml_error_text[0]);

	if ((unsigned int)result < n && nvml_error_text[result])
		return nvml_error_text[result];
	return "Unknown Error";
}

/*
 * What a failed driver call means to an NVML caller. A worker that died
 * (its ring DEAD or BROKEN) fails every later call: the vGPU is lost to
 * this process, as a GPU that fell off the bus.
 */
nvmlReturn_t nvml_from_cuda(CUresult err)
{
	switch (err) {
	case CUDA_SUCCESS:
		return NVML_SUCCESS;
	case CUDA_ERROR_INVALID_VALUE:
	case CUDA_ERROR_INVALID_DEVICE:
		return NVML_ERROR_INVALID_ARGUMENT;
	case CUDA_ERROR_NOT_SUPPORTED:
		return NVML_ERROR_NOT_SUPPORTED;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return NVML_ERROR_MEMORY;
	case CUDA_ERROR_NOT_INITIALIZED:
	case CUDA_ERROR_DEINITIALIZED:
	case CUDA_ERROR_NO_DEVICE:
		return NVML_ERROR_DRIVER_NOT_LOADED;
	case CUDA_ERROR_DEVICE_UNAVAILABLE:
	case CUDA_ERROR_LAUNCH_FAILED:
	case CUDA_ERROR_ILLEGAL_ADDRESS:
		return NVML_ERROR_GPU_IS_LOST;
	default:
		return NVML_ERROR_UNKNOWN;
	}
}
