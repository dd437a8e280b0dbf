/* SPDX-License-Identifier: MIT */
/*
 * Runtime exports a vGPU does not offer whose prototypes are not the
 * generic "returns cudaError_t" kind that gen_cudart_stubs.py stubs at
 * build time (managed memory, graphs, IPC, arrays ... are generated into
 * cudart_stubs.c): NVIDIA's private entry points, written by hand so each
 * returns what its caller can cope with. None is declared in a header;
 * the signatures are those of NVIDIA's libcudart.so.13 as its code uses
 * them (how many argument registers, what comes back); arguments none of
 * them reads are named for what they seem to be.
 */
#include "cudart.h"

/*
 * NVIDIA's private function tables (asked for by UUID by their own
 * libraries: cuBLAS, cuDNN ...). Our driver has none to give: the caller
 * gets the documented failure, not a table it would call into.
 */
CUDART_API cudaError_t CUDARTAPI
cudaGetExportTable(const void **ppExportTable, const cudaUUID_t *pExportTableId)
{
	if (ppExportTable)
		*ppExportTable = NULL;
	return cudart_unsupported("cudaGetExportTable");
}

/* In NVIDIA's 13.0 runtime this returns 0 and does nothing; so does ours
 * (0 reads as NULL or cudaSuccess, whichever the caller expects). */
CUDART_API void *CUDARTAPI __cudaGetProcAddress(void)
{
	return NULL;
}

/*
 * Registration of host variables and of unified function tables (code
 * for unified-memory platforms): void, like the other __cudaRegister*
 * calls. Nothing on a vGPU can use them, so they are not recorded and
 * the program is told once.
 */
CUDART_API void CUDARTAPI __cudaRegisterHostVar(void **fatCubinHandle,
						const char *deviceName,
						void *hostVar, size_t size)
{
	cudart_unsupported("__cudaRegisterHostVar");
}

CUDART_API void CUDARTAPI __cudaRegisterUnifiedTable(void **fatCubinHandle,
						     void *a, void *b, void *c,
						     void *d)
{
	cudart_unsupported("__cudaRegisterUnifiedTable");
}
