# shellcheck shell=sh
# SPDX-License-Identifier: MIT
# vgpu guest image: the example programs on PATH, and the vGPU device our
# libcuda.so.1 opens. /dev/vgpu0 is its default anyway when it exists;
# naming it makes a program run without a vGPU say "no vGPU device at
# /dev/vgpu0" instead of asking for a vgpud socket. Set VGPU_DEVICE to
# use another vGPU (/dev/vgpu1, ...).
case ":$PATH:" in
*:/usr/lib/vgpu/examples:*) ;;
*) PATH=$PATH:/usr/lib/vgpu/examples ;;
esac
export VGPU_DEVICE="${VGPU_DEVICE:-/dev/vgpu0}"
