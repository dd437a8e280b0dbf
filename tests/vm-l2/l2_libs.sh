#!/bin/sh
# SPDX-License-Identifier: MIT
# A cuBLAS handle in L2 (issue 17), through NVIDIA's cuBLAS, our
# libcuda.so.1 and the pci transport: cublas_handle (linked against
# cuBLAS as its documentation says) creates and destroys one. The
# libraries are over 500 MiB, too large for L2's initramfs: they come
# read-only from the host's toolkit over 9p, host -> L1 -> L2
# (vm-images/l2/run-l1.sh, l2_start in tests/vm-l2/l1_lib.sh); without
# that share the test is skipped, saying so. (200 s: under TCG the
# loader reads what it needs of them over two 9p hops.)
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh
# shellcheck source=tests/vm-l2/l2_lib.sh
. ./l2_lib.sh

need_guest_driver "cuBLAS in L2"
if ! share_mount cuda /cuda; then
	skip "a cuBLAS handle in L2" "no 9p share of the toolkit's libraries"
	finish
fi
check "the share has libcublas.so.13 and libcublasLt.so.13" \
	test -e /cuda/libcublas.so.13 -a -e /cuda/libcublasLt.so.13
t0=$(cut -d' ' -f1 /proc/uptime)
if LD_LIBRARY_PATH=/vgpu/lib:/cuda timeout 200 cublas_handle \
	>"$TMP/out" 2>&1 && grep -q '^cublas: ok$' "$TMP/out"; then
	secs=$(echo "$(cut -d' ' -f1 /proc/uptime) $t0" |
		awk '{ printf "%.1f", $1 - $2 }')
	ok "cublas_handle: a cuBLAS handle created and destroyed ($secs s)"
else
	not_ok "cublas_handle: a cuBLAS handle created and destroyed"
fi
diag_file "$TMP/out"
finish
