/* SPDX-License-Identifier: MIT */
/*
 * The integrity check NVIDIA's runtime makes of its driver (slot 1 of
 * export table {d4082055-bde6-704b-8d34-ba123c66e1f2}): given a version
 * and the time, the driver answers 16 bytes the runtime can compute
 * itself. It is an HMAC over MD2 (RFC 1319: 16-byte blocks, the
 * permutation of pi's digits below) with a fixed 16-byte key, of what
 * both sides know: the driver's CUDA version, the version asked, the
 * process and thread ids, the addresses of the runtime-interface table,
 * of this table and of this function, the time, and for every device its
 * UUID and PCI domain, bus and device ids. Versions ending in 0 or 1 get
 * fixed answers. The layout is what public interoperability work found
 * (for CUDA 12); the runtime checks the answer, so a wrong one shows at
 * once: tests/integration/nvidia_runtime.sh runs NVIDIA's runtime here.
 */
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include "client_api.h"
#include "client_trace.h"
#include "cuda_export.h"

/* RFC 1319, PI_SUBST */
static const unsigned char md2_s[256] = {
	41,  46,  67,  201, 162, 216, 124, 1,	61,  54,  84,  161, 236, 240,
	6,   19,  98,  167, 5,	 243, 192, 199, 115, 140, 152, 147, 43,	 217,
	188, 76,  130, 202, 30,	 155, 87,  60,	253, 212, 224, 22,  103, 66,
	111, 24,  138, 23,  229, 18,  190, 78,	196, 214, 218, 158, 222, 73,
	160, 251, 245, 142, 187, 47,  238, 122, 169, 104, 121, 145, 21,	 178,
	7,   63,  148, 194, 16,	 137, 11,  34,	95,  33,  128, 127, 93,	 154,
	90,  144, 50,  39,  53,	 62,  204, 231, 191, 247, 151, 3,   255, 25,
	48,  179, 72,  165, 181, 209, 215, 94,	146, 42,  172, 86,  170, 198,
	79,  184, 56,  210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116,
	4,   241, 69,  157, 112, 89,  100, 113, 135, 32,  134, 91,  207, 101,
	230, 45,  168, 2,   27,	 96,  37,  173, 174, 176, 185, 246, 28,	 70,
	97,  105, 52,  64,  126, 15,  85,  71,	163, 35,  221, 81,  175, 58,
	195, 92,  249, 206, 186, 197, 234, 38,	44,  83,  13,  110, 133, 40,
	132, 9,	  211, 223, 205, 244, 65,  129, 77,  82,  106, 220, 55,	 200,
	108, 193, 171, 250, 36,	 225, 123, 8,	12,  189, 177, 74,  120, 136,
	149, 139, 227, 99,  232, 109, 233, 203, 213, 254, 59,  0,   29,	 57,
	242, 239, 183, 14,  102, 88,  208, 228, 166, 119, 114, 248, 235, 117,
	75,  10,  49,  68,  80,	 180, 143, 237, 31,  26,  219, 153, 141, 51,
	159, 17,  131, 20,
};

struct md2 {
	unsigned char x[48], c[16], buf[16];
	unsigned int n; /* bytes in buf */
};

static void md2_block(struct md2 *m)
{
	unsigned char t = 0, l = m->c[15];
	int j, k;

	for (j = 0; j < 16; j++) {
		m->x[16 + j] = m->buf[j];
		m->x[32 + j] = m->x[j] ^ m->buf[j];
		l = m->c[j] ^= md2_s[m->buf[j] ^ l];
	}
	for (j = 0; j < 18; j++) {
		for (k = 0; k < 48; k++)
			t = m->x[k] ^= md2_s[t];
		t = (unsigned char)(t + j);
	}
}

static void md2_update(struct md2 *m, const void *p, size_t len,
		       unsigned char x)
{
	const unsigned char *b = p;

	while (len--) {
		m->buf[m->n++] = *b++ ^ x;
		if (m->n == 16) {
			md2_block(m);
			m->n = 0;
		}
	}
}

static void md2_final(struct md2 *m, unsigned char out[16])
{
	unsigned char pad = (unsigned char)(16 - m->n), c[16];

	while (m->n)
		md2_update(m, &pad, 1, 0);
	if (pad == 16) /* a whole block of padding */
		for (int i = 0; i < 16; i++)
			md2_update(m, &pad, 1, 0);
	memcpy(c, m->c, 16);
	md2_update(m, c, 16, 0);
	memcpy(out, m->x, 16);
}

void export_md2(const void *p, size_t len, unsigned char out[16])
{
	struct md2 m;

	memset(&m, 0, sizeof(m));
	md2_update(&m, p, len, 0);
	md2_final(&m, out);
}

static const unsigned char integrity_key[16] = {
	0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
	0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f,
};

struct integrity_input {
	uint32_t driver_version, version, pid, tid;
	const void *cudart_table, *integrity_table, *fn;
	uint64_t unix_seconds;
};

struct integrity_device {
	CUuuid uuid;
	int32_t pci_domain, pci_bus, pci_device;
};

CUresult export_integrity_check(uint32_t version, uint64_t unix_seconds,
				uint64_t result[2])
{
	struct integrity_input in;
	struct integrity_device d;
	unsigned char inner[16], out[16];
	struct md2 m;
	int n = 0, dv = 0, i;
	CUresult err;

	if (!result)
		return CUDA_ERROR_INVALID_VALUE;
	if (version % 10 <= 1) {
		result[0] = version % 10 ? 0x1841181c03cb675cull
					 : 0x3341181c03cb675cull;
		result[1] = 0x8ed383aa1f4cd1e8ull;
		return CUDA_SUCCESS;
	}
	if ((err = cuDriverGetVersion(&dv)) || (err = cuDeviceGetCount(&n)))
		return err;
	memset(&in, 0, sizeof(in));
	in.driver_version = (uint32_t)dv;
	in.version = version;
	in.pid = (uint32_t)getpid();
	in.tid = (uint32_t)(uintptr_t)pthread_self(); /* its low half */
	in.cudart_table = export_table(EXPORT_CUDART);
	in.integrity_table = export_table(EXPORT_INTEGRITY);
	in.fn = export_table(EXPORT_INTEGRITY)[1];
	in.unix_seconds = unix_seconds;

	memset(&m, 0, sizeof(m));
	md2_update(&m, integrity_key, 16, 0x36);
	md2_update(&m, &in, sizeof(in), 0);
	for (i = 0; i < n; i++) {
		memset(&d, 0, sizeof(d));
		if ((err = cuDeviceGetUuid(&d.uuid, i)) ||
		    (err = cuDeviceGetAttribute(
			     &d.pci_domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
			     i)) ||
		    (err = cuDeviceGetAttribute(
			     &d.pci_bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, i)) ||
		    (err = cuDeviceGetAttribute(
			     &d.pci_device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
			     i)))
			return err;
		md2_update(&m, &d, sizeof(d), 0);
	}
	md2_final(&m, inner);
	memset(&m, 0, sizeof(m));
	md2_update(&m, integrity_key, 16, 0x5c);
	md2_update(&m, inner, 16, 0);
	md2_final(&m, out);
	memcpy(result, out, 16);
	if (client_trace_on())
		client_trace("integrity check version %u at %llu: driver %d, "
			     "%d device(s), pid %u tid %u -> %016llx%016llx\n",
			     version, (unsigned long long)unix_seconds, dv, n,
			     in.pid, in.tid, (unsigned long long)result[0],
			     (unsigned long long)result[1]);
	return CUDA_SUCCESS;
}
