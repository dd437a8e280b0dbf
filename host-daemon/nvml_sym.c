/* SPDX-License-Identifier: MIT */
/*
 * libnvidia-ml.so.1 through dlopen (nvml_sym.h). Read-only by design: the
 * list of entry points holds no setter.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml_sym.h"

int nvml_sym_load(struct nvml_sym *n, char *err, size_t errlen)
{
	const char *path = getenv("VGPU_NVML_LIBRARY");
	nvmlReturn_t rc;

	memset(n, 0, sizeof(*n));
	if (!path || !*path)
		path = "libnvidia-ml.so.1";
	n->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!n->dl) {
		snprintf(err, errlen, "cannot load %s: %s", path, dlerror());
		return -1;
	}
#define NVML_SYM_RESOLVE(name, ret, args)                                      \
	*(void **)&n->name = dlsym(n->dl, #name);                              \
	if (!n->name) {                                                        \
		snprintf(err, errlen, "%s has no %s", path, #name);            \
		goto fail;                                                     \
	}
	NVML_SYM_LIST(NVML_SYM_RESOLVE)
#undef NVML_SYM_RESOLVE
	rc = n->nvmlInit_v2();
	if (rc != NVML_SUCCESS) {
		snprintf(err, errlen, "nvmlInit failed (NVML error %d)", rc);
		goto fail;
	}
	return 0;
fail:
	dlclose(n->dl);
	memset(n, 0, sizeof(*n));
	return -1;
}

void nvml_sym_unload(struct nvml_sym *n)
{
	if (!n->dl)
		return;
	n->nvmlShutdown();
	dlclose(n->dl);
	memset(n, 0, sizeof(*n));
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "GPU-a1b2c3d4-..." -> 16 bytes; -1 when it is not a GPU UUID. */
static int uuid_parse(const char *s, uint8_t out[16])
{
	int i = 0, hi = -1, v;

	if (strncmp(s, "GPU-", 4))
		return -1;
	for (s += 4; *s && i < 16; s++) {
		if (*s == '-')
			continue;
		v = hex_value(*s);
		if (v < 0)
			return -1;
		if (hi < 0) {
			hi = v;
		} else {
			out[i++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	return i == 16 ? 0 : -1;
}

nvmlDevice_t nvml_device_by_uuid(struct nvml_sym *n, const uint8_t uuid[16])
{
	char text[NVML_UUID_BUFFER_SIZE];
	unsigned int count = 0, i;
	nvmlDevice_t dev;
	uint8_t bytes[16];

	if (!n->dl || n->nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS)
		return NULL;
	for (i = 0; i < count; i++) {
		if (n->nvmlDeviceGetHandleByIndex_v2(i, &dev) != NVML_SUCCESS ||
		    n->nvmlDeviceGetUUID(dev, text, sizeof(text)) !=
			    NVML_SUCCESS)
			continue;
		text[sizeof(text) - 1] = '\0';
		if (uuid_parse(text, bytes) == 0 && !memcmp(bytes, uuid, 16))
			return dev;
	}
	return NULL;
}
