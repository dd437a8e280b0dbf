// SPDX-License-Identifier: MIT
// cublas_handle: a cuBLAS handle created and destroyed, as cuBLAS's
// documentation starts, linked against cuBLAS alone (the L2 guest reads
// the library over a 9p share: tests/vm-l2/l2_libs.sh). Prints "cublas:
// ok" or "cublas: status N" and exits 0 on ok.
#include <cstdio>
#include <cublas_v2.h>

int main()
{
	cublasHandle_t h;
	int rc = (int)cublasCreate(&h);

	if (rc == 0)
		rc = (int)cublasDestroy(h);
	printf(rc ? "cublas: status %d\n" : "cublas: ok\n", rc);
	return rc != 0;
}
