/* SPDX-License-Identifier: MIT */
/*
 * The device's PCI address, from CUDA's attributes (PCI_DOMAIN_ID,
 * PCI_BUS_ID, PCI_DEVICE_ID): the address CUDA gives the device, so that
 * NVML and CUDA name the same one (on the GPU, the physical GPU's
 * address on the host; on the simulator 00000000:00:00.0). CUDA does not
 * say the product's PCI IDs: pciDeviceId and pciSubSystemId are 0.
 */
#include <stdio.h>
#include <string.h>

#include "nvml_state.h"

struct nvml_pci_addr {
	unsigned int domain, bus, device;
};

static nvmlReturn_t nvml_pci_addr(nvmlDevice_t device, struct nvml_pci_addr *a)
{
	const struct nvml_cuda *cu;
	int domain, bus, dev_no;
	CUdevice dev;
	nvmlReturn_t rc = nvml_device_enter(device, &cu, &dev);

	if (rc != NVML_SUCCESS)
		return rc;
	rc = nvml_from_cuda(cu->device_get_attribute(
		&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev));
	if (rc == NVML_SUCCESS)
		rc = nvml_from_cuda(cu->device_get_attribute(
			&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev));
	if (rc == NVML_SUCCESS)
		rc = nvml_from_cuda(cu->device_get_attribute(
			&dev_no, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev));
	if (rc != NVML_SUCCESS)
		return rc;
	a->domain = (unsigned int)domain;
	a->bus = (unsigned int)bus;
	a->device = (unsigned int)dev_no;
	return NVML_SUCCESS;
}

/*
 * The fields every version of nvmlPciInfo_t has, at the same offsets:
 * the 16-byte bus id (busIdLegacy since version 3) and the five numbers.
 * Versions 1 and 2 end there (then reserved words); version 3 adds the
 * 32-byte busId.
 */
static void nvml_pci_fill_common(nvmlPciInfo_t *pci,
				 const struct nvml_pci_addr *a)
{
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy),
		 NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT, a->domain & 0xffff, a->bus,
		 a->device);
	pci->domain = a->domain;
	pci->bus = a->bus;
	pci->device = a->device;
	pci->pciDeviceId = 0;
	pci->pciSubSystemId = 0;
}

NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device,
					      nvmlPciInfo_t *pci)
{
	struct nvml_pci_addr a;
	nvmlReturn_t rc = nvml_pci_addr(device, &a);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!pci)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(pci, 0, sizeof(*pci));
	nvml_pci_fill_common(pci, &a);
	snprintf(pci->busId, sizeof(pci->busId), NVML_DEVICE_PCI_BUS_ID_FMT,
		 NVML_DEVICE_PCI_BUS_ID_FMT_ARGS(&a));
	return NVML_SUCCESS;
}

/* Versions 1 and 2: only the common part is written (their structure is
 * shorter than version 3's). */
NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device,
					      nvmlPciInfo_t *pci)
{
	struct nvml_pci_addr a;
	nvmlReturn_t rc = nvml_pci_addr(device, &a);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!pci)
		return NVML_ERROR_INVALID_ARGUMENT;
	nvml_pci_fill_common(pci, &a);
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device,
					   nvmlPciInfo_t *pci)
{
	return nvmlDeviceGetPciInfo_v2(device, pci);
}

/*
 * A bus id as NVML takes it: "domain:bus:device.function",
 * "domain:bus:device" or "bus:device.function" (domain 0), in hex.
 * 0, or -1 when it is none of these.
 */
static int nvml_pci_parse(const char *s, struct nvml_pci_addr *a,
			  unsigned int *fn)
{
	char tail;

	*fn = 0;
	a->domain = 0;
	if (sscanf(s, "%x:%x:%x.%x%c", &a->domain, &a->bus, &a->device, fn,
		   &tail) == 4)
		return 0;
	if (sscanf(s, "%x:%x:%x%c", &a->domain, &a->bus, &a->device, &tail) ==
	    3)
		return 0;
	a->domain = 0;
	if (sscanf(s, "%x:%x.%x%c", &a->bus, &a->device, fn, &tail) == 3)
		return 0;
	return -1;
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId,
						       nvmlDevice_t *device)
{
	struct nvml_pci_addr want, ours;
	const struct nvml_cuda *cu;
	unsigned int fn;
	nvmlDevice_t d;
	nvmlReturn_t rc = nvml_enter(&cu);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!pciBusId || !device || nvml_pci_parse(pciBusId, &want, &fn))
		return NVML_ERROR_INVALID_ARGUMENT;
	d = nvml_device_handle(0);
	if (!d)
		return NVML_ERROR_NOT_FOUND;
	rc = nvml_pci_addr(d, &ours);
	if (rc != NVML_SUCCESS)
		return rc;
	if (want.domain != ours.domain || want.bus != ours.bus ||
	    want.device != ours.device || fn != 0)
		return NVML_ERROR_NOT_FOUND;
	*device = d;
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId,
						    nvmlDevice_t *device)
{
	return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}
