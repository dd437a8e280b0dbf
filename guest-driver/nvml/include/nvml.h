/* SPDX-License-Identifier: MIT */
/*
 * The part of NVML's API (nvml.h, API version 13) that vgpu's guest
 * libnvidia-ml.so.1 answers, for builds on a toolkit that ships no
 * nvml.h (the pip-assembled CUDA 13 here has none). Names, values and
 * structure layouts are NVIDIA's: a program built against NVIDIA's
 * header calls this library unchanged, and one built against this
 * header runs on NVIDIA's library. Only what guest-driver/nvml serves by
 * hand is declared; every other NVML function exists in the library as
 * a NOT_SUPPORTED stub (gen_nvml_stubs.py) and is not declared here.
 *
 * As in NVIDIA's header, the unversioned names are macros for the
 * current versions (nvmlInit is nvmlInit_v2, ...). Define
 * NVML_NO_UNVERSIONED_FUNC_DEFS to call (or define) the older versions
 * under their own names.
 */
#ifndef __nvml_nvml_h__
#define __nvml_nvml_h__

#ifdef __cplusplus
extern "C" {
#endif

#define DECLDIR

#define NVML_API_VERSION     13
#define NVML_API_VERSION_STR "13"

#ifndef NVML_NO_UNVERSIONED_FUNC_DEFS
#define nvmlInit		      nvmlInit_v2
#define nvmlDeviceGetPciInfo	      nvmlDeviceGetPciInfo_v3
#define nvmlDeviceGetCount	      nvmlDeviceGetCount_v2
#define nvmlDeviceGetHandleByIndex    nvmlDeviceGetHandleByIndex_v2
#define nvmlDeviceGetHandleByPciBusId nvmlDeviceGetHandleByPciBusId_v2
#define nvmlDeviceGetComputeRunningProcesses                                   \
	nvmlDeviceGetComputeRunningProcesses_v3
#define nvmlDeviceGetGraphicsRunningProcesses                                  \
	nvmlDeviceGetGraphicsRunningProcesses_v3
#define nvmlDeviceGetMPSComputeRunningProcesses                                \
	nvmlDeviceGetMPSComputeRunningProcesses_v3
#endif

/* A versioned structure's version field: its size, and the version in
 * the top byte. */
#define NVML_STRUCT_VERSION(data, ver)                                         \
	(unsigned int)(sizeof(nvml##data##_v##ver##_t) | (ver << 24U))

#define NVML_VALUE_NOT_AVAILABLE (-1)

typedef struct nvmlDevice_st *nvmlDevice_t;

/* ---- return codes ------------------------------------------------------ */

typedef enum nvmlReturn_enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_ALREADY_INITIALIZED = 5,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_INSUFFICIENT_POWER = 8,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_IRQ_ISSUE = 11,
	NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_CORRUPTED_INFOROM = 14,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_RESET_REQUIRED = 16,
	NVML_ERROR_OPERATING_SYSTEM = 17,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_IN_USE = 19,
	NVML_ERROR_MEMORY = 20,
	NVML_ERROR_NO_DATA = 21,
	NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
	NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
	NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
	NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
	NVML_ERROR_DEPRECATED = 26,
	NVML_ERROR_NOT_READY = 27,
	NVML_ERROR_GPU_NOT_FOUND = 28,
	NVML_ERROR_INVALID_STATE = 29,
	NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
	NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

/* ---- buffer sizes and flags ------------------------------------------- */

#define NVML_INIT_FLAG_NO_GPUS	 1
#define NVML_INIT_FLAG_NO_ATTACH 2

#define NVML_DEVICE_UUID_BUFFER_SIZE	       80
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE	       96
#define NVML_DEVICE_NAME_BUFFER_SIZE	       64
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE	       96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE   80
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE     32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE  16

/* ---- structures -------------------------------------------------------- */

typedef struct nvmlPciInfo_st {
	char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;    /* device id << 16 | vendor id */
	unsigned int pciSubSystemId; /* subsystem device id */
	char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

#define NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT "%04X:%02X:%02X.0"
#define NVML_DEVICE_PCI_BUS_ID_FMT	  "%08X:%02X:%02X.0"
#define NVML_DEVICE_PCI_BUS_ID_FMT_ARGS(pciInfo)                               \
	(pciInfo)->domain, (pciInfo)->bus, (pciInfo)->device

typedef struct nvmlMemory_st {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
	unsigned int version; /* nvmlMemory_v2 */
	unsigned long long total;
	unsigned long long reserved;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_v2_t;

#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

typedef struct nvmlUtilization_st {
	unsigned int gpu;
	unsigned int memory;
} nvmlUtilization_t;

typedef struct nvmlProcessInfo_v1_st {
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct nvmlProcessInfo_v2_st {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t, nvmlProcessInfo_t;

/* ---- enumerations ------------------------------------------------------ */

typedef enum nvmlEnableState_enum {
	NVML_FEATURE_DISABLED = 0,
	NVML_FEATURE_ENABLED = 1
} nvmlEnableState_t;

typedef enum nvmlBrandType_enum {
	NVML_BRAND_UNKNOWN = 0,
	NVML_BRAND_QUADRO = 1,
	NVML_BRAND_TESLA = 2,
	NVML_BRAND_NVS = 3,
	NVML_BRAND_GRID = 4,
	NVML_BRAND_GEFORCE = 5,
	NVML_BRAND_TITAN = 6,
	NVML_BRAND_NVIDIA_VAPPS = 7,
	NVML_BRAND_NVIDIA_VPC = 8,
	NVML_BRAND_NVIDIA_VCS = 9,
	NVML_BRAND_NVIDIA_VWS = 10,
	NVML_BRAND_NVIDIA_CLOUD_GAMING = 11,
	NVML_BRAND_QUADRO_RTX = 12,
	NVML_BRAND_NVIDIA_RTX = 13,
	NVML_BRAND_NVIDIA = 14,
	NVML_BRAND_GEFORCE_RTX = 15,
	NVML_BRAND_TITAN_RTX = 16,
	NVML_BRAND_COUNT = 18
} nvmlBrandType_t;

typedef unsigned int nvmlDeviceArchitecture_t;

#define NVML_DEVICE_ARCH_KEPLER	   2
#define NVML_DEVICE_ARCH_MAXWELL   3
#define NVML_DEVICE_ARCH_PASCAL	   4
#define NVML_DEVICE_ARCH_VOLTA	   5
#define NVML_DEVICE_ARCH_TURING	   6
#define NVML_DEVICE_ARCH_AMPERE	   7
#define NVML_DEVICE_ARCH_ADA	   8
#define NVML_DEVICE_ARCH_HOPPER	   9
#define NVML_DEVICE_ARCH_BLACKWELL 10
#define NVML_DEVICE_ARCH_UNKNOWN   0xffffffff

typedef enum nvmlComputeMode_enum {
	NVML_COMPUTEMODE_DEFAULT = 0,
	NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
	NVML_COMPUTEMODE_PROHIBITED = 2,
	NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
	NVML_COMPUTEMODE_COUNT
} nvmlComputeMode_t;

typedef enum nvmlClockType_enum {
	NVML_CLOCK_GRAPHICS = 0,
	NVML_CLOCK_SM = 1,
	NVML_CLOCK_MEM = 2,
	NVML_CLOCK_VIDEO = 3,
	NVML_CLOCK_COUNT
} nvmlClockType_t;

typedef enum nvmlTemperatureSensors_enum {
	NVML_TEMPERATURE_GPU = 0,
	NVML_TEMPERATURE_COUNT
} nvmlTemperatureSensors_t;

typedef enum nvmlGpuLevel_enum {
	NVML_TOPOLOGY_INTERNAL = 0,
	NVML_TOPOLOGY_SINGLE = 10,
	NVML_TOPOLOGY_MULTIPLE = 20,
	NVML_TOPOLOGY_HOSTBRIDGE = 30,
	NVML_TOPOLOGY_NODE = 40,
	NVML_TOPOLOGY_SYSTEM = 50
} nvmlGpuTopologyLevel_t;

typedef enum nvmlGpuP2PStatus_enum {
	NVML_P2P_STATUS_OK = 0,
	NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED,
	NVML_P2P_STATUS_GPU_NOT_SUPPORTED,
	NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED,
	NVML_P2P_STATUS_DISABLED_BY_REGKEY,
	NVML_P2P_STATUS_NOT_SUPPORTED,
	NVML_P2P_STATUS_UNKNOWN
} nvmlGpuP2PStatus_t;

typedef enum nvmlGpuP2PCapsIndex_enum {
	NVML_P2P_CAPS_INDEX_READ = 0,
	NVML_P2P_CAPS_INDEX_WRITE = 1,
	NVML_P2P_CAPS_INDEX_NVLINK = 2,
	NVML_P2P_CAPS_INDEX_ATOMICS = 3,
	NVML_P2P_CAPS_INDEX_PCI = 4,
	NVML_P2P_CAPS_INDEX_UNKNOWN = 5
} nvmlGpuP2PCapsIndex_t;

/* ---- initialisation and errors ---------------------------------------- */

nvmlReturn_t DECLDIR nvmlInit_v2(void);
nvmlReturn_t DECLDIR nvmlInitWithFlags(unsigned int flags);
nvmlReturn_t DECLDIR nvmlShutdown(void);
const DECLDIR char *nvmlErrorString(nvmlReturn_t result);

/* ---- system ------------------------------------------------------------ */

nvmlReturn_t DECLDIR nvmlSystemGetDriverVersion(char *version,
						unsigned int length);
nvmlReturn_t DECLDIR nvmlSystemGetNVMLVersion(char *version,
					      unsigned int length);
nvmlReturn_t DECLDIR nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion);
nvmlReturn_t DECLDIR nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion);

/* ---- devices ----------------------------------------------------------- */

nvmlReturn_t DECLDIR nvmlDeviceGetCount_v2(unsigned int *deviceCount);
nvmlReturn_t DECLDIR nvmlDeviceGetHandleByIndex_v2(unsigned int index,
						   nvmlDevice_t *device);
nvmlReturn_t DECLDIR nvmlDeviceGetHandleByUUID(const char *uuid,
					       nvmlDevice_t *device);
nvmlReturn_t DECLDIR nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId,
						      nvmlDevice_t *device);
nvmlReturn_t DECLDIR nvmlDeviceGetName(nvmlDevice_t device, char *name,
				       unsigned int length);
nvmlReturn_t DECLDIR nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid,
				       unsigned int length);
nvmlReturn_t DECLDIR nvmlDeviceGetIndex(nvmlDevice_t device,
					unsigned int *index);
nvmlReturn_t DECLDIR nvmlDeviceGetMinorNumber(nvmlDevice_t device,
					      unsigned int *minorNumber);
nvmlReturn_t DECLDIR nvmlDeviceGetPciInfo_v3(nvmlDevice_t device,
					     nvmlPciInfo_t *pci);
nvmlReturn_t DECLDIR nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
					     nvmlMemory_t *memory);
nvmlReturn_t DECLDIR nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
						nvmlMemory_v2_t *memory);
nvmlReturn_t DECLDIR nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device,
							int *major, int *minor);
nvmlReturn_t DECLDIR nvmlDeviceGetMultiGpuBoard(nvmlDevice_t device,
						unsigned int *multiGpuBool);
nvmlReturn_t DECLDIR nvmlDeviceGetComputeMode(nvmlDevice_t device,
					      nvmlComputeMode_t *mode);
nvmlReturn_t DECLDIR nvmlDeviceGetPersistenceMode(nvmlDevice_t device,
						  nvmlEnableState_t *mode);
nvmlReturn_t DECLDIR nvmlDeviceGetBrand(nvmlDevice_t device,
					nvmlBrandType_t *type);
nvmlReturn_t DECLDIR nvmlDeviceGetArchitecture(nvmlDevice_t device,
					       nvmlDeviceArchitecture_t *arch);
nvmlReturn_t DECLDIR nvmlDeviceGetMaxClockInfo(nvmlDevice_t device,
					       nvmlClockType_t type,
					       unsigned int *clock);
nvmlReturn_t DECLDIR nvmlDeviceGetClockInfo(nvmlDevice_t device,
					    nvmlClockType_t type,
					    unsigned int *clock);
nvmlReturn_t DECLDIR nvmlDeviceGetComputeRunningProcesses_v3(
	nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos);
nvmlReturn_t DECLDIR nvmlDeviceGetGraphicsRunningProcesses_v3(
	nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos);
nvmlReturn_t DECLDIR nvmlDeviceGetMPSComputeRunningProcesses_v3(
	nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos);

/* Answered NVML_ERROR_NOT_SUPPORTED (after the usual argument checks):
 * the physical GPU's state, shared by every vGPU on it. */
nvmlReturn_t DECLDIR nvmlDeviceGetTemperature(
	nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
	unsigned int *temp);
nvmlReturn_t DECLDIR nvmlDeviceGetPowerUsage(nvmlDevice_t device,
					     unsigned int *power);
nvmlReturn_t DECLDIR nvmlDeviceGetTotalEnergyConsumption(
	nvmlDevice_t device, unsigned long long *energy);
nvmlReturn_t DECLDIR nvmlDeviceGetFanSpeed(nvmlDevice_t device,
					   unsigned int *speed);
nvmlReturn_t DECLDIR nvmlDeviceGetUtilizationRates(
	nvmlDevice_t device, nvmlUtilization_t *utilization);
nvmlReturn_t DECLDIR nvmlDeviceGetNumGpuCores(nvmlDevice_t device,
					      unsigned int *numCores);
nvmlReturn_t DECLDIR nvmlDeviceGetCurrPcieLinkGeneration(
	nvmlDevice_t device, unsigned int *currLinkGen);
nvmlReturn_t DECLDIR nvmlDeviceGetCurrPcieLinkWidth(
	nvmlDevice_t device, unsigned int *currLinkWidth);
nvmlReturn_t DECLDIR nvmlDeviceGetMaxPcieLinkGeneration(
	nvmlDevice_t device, unsigned int *maxLinkGen);
nvmlReturn_t DECLDIR nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device,
						   unsigned int *maxLinkWidth);
nvmlReturn_t DECLDIR nvmlDeviceGetP2PStatus(nvmlDevice_t device1,
					    nvmlDevice_t device2,
					    nvmlGpuP2PCapsIndex_t p2pIndex,
					    nvmlGpuP2PStatus_t *p2pStatus);
nvmlReturn_t DECLDIR
nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
				    nvmlGpuTopologyLevel_t *pathInfo);
nvmlReturn_t DECLDIR nvmlDeviceGetNvLinkState(nvmlDevice_t device,
					      unsigned int link,
					      nvmlEnableState_t *isActive);
nvmlReturn_t DECLDIR nvmlDeviceGetMigMode(nvmlDevice_t device,
					  unsigned int *currentMode,
					  unsigned int *pendingMode);

/* The versions the macros above replace, still exported for programs
 * built against older headers. */
#ifdef NVML_NO_UNVERSIONED_FUNC_DEFS
nvmlReturn_t DECLDIR nvmlInit(void);
nvmlReturn_t DECLDIR nvmlDeviceGetCount(unsigned int *deviceCount);
nvmlReturn_t DECLDIR nvmlDeviceGetHandleByIndex(unsigned int index,
						nvmlDevice_t *device);
nvmlReturn_t DECLDIR nvmlDeviceGetHandleByPciBusId(const char *pciBusId,
						   nvmlDevice_t *device);
nvmlReturn_t DECLDIR nvmlDeviceGetPciInfo(nvmlDevice_t device,
					  nvmlPciInfo_t *pci);
nvmlReturn_t DECLDIR nvmlDeviceGetPciInfo_v2(nvmlDevice_t device,
					     nvmlPciInfo_t *pci);
nvmlReturn_t DECLDIR nvmlDeviceGetComputeRunningProcesses(
	nvmlDevice_t device, unsigned int *infoCount,
	nvmlProcessInfo_v1_t *infos);
nvmlReturn_t DECLDIR nvmlDeviceGetComputeRunningProcesses_v2(
	nvmlDevice_t device, unsigned int *infoCount,
	nvmlProcessInfo_v2_t *infos);
nvmlReturn_t DECLDIR nvmlDeviceGetGraphicsRunningProcesses(
	nvmlDevice_t device, unsigned int *infoCount,
	nvmlProcessInfo_v1_t *infos);
nvmlReturn_t DECLDIR nvmlDeviceGetGraphicsRunningProcesses_v2(
	nvmlDevice_t device, unsigned int *infoCount,
	nvmlProcessInfo_v2_t *infos);
nvmlReturn_t DECLDIR nvmlDeviceGetMPSComputeRunningProcesses(
	nvmlDevice_t device, unsigned int *infoCount,
	nvmlProcessInfo_v1_t *infos);
nvmlReturn_t DECLDIR nvmlDeviceGetMPSComputeRunningProcesses_v2(
	nvmlDevice_t device, unsigned int *infoCount,
	nvmlProcessInfo_v2_t *infos);
#endif

#ifdef __cplusplus
}
#endif

#endif /* __nvml_nvml_h__ */
