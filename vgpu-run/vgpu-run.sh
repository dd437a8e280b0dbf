#!/bin/sh
# SPDX-License-Identifier: MIT
#
# vgpu-run [--socket PATH] NAME COMMAND [ARGS...]
#
# Runs COMMAND on vGPU NAME of this host's vgpud: any CUDA program as it
# was built (nvcc's default static runtime, -cudart shared, CUDA's
# libraries), unmodified. It puts vgpu's libcuda.so.1, and nothing else
# of vgpu's, first on the library path (its own directory,
# LIBDIR/vgpu), so the program's CUDA runtime, NVIDIA's, talks to the
# vGPU. The CUDA toolkit's library directory ($CUDA_HOME/lib64, default
# /usr/local/cuda/lib64) goes last, for programs built with
# -cudart shared. vgpud's client socket is PATH, else $VGPU_SOCKET, else
# /run/vgpu/client.sock. In a VM no wrapper is needed: there vgpu's
# libcuda.so.1 is the system's.
set -eu

usage() {
	echo "usage: vgpu-run [--socket PATH] NAME COMMAND [ARGS...]" >&2
	exit 2
}

socket=${VGPU_SOCKET:-/run/vgpu/client.sock}
while [ $# -gt 0 ]; do
	case $1 in
	--socket)
		[ $# -ge 2 ] || usage
		socket=$2
		shift 2
		;;
	--help | -h)
		sed -n '4,16p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	--)
		shift
		break
		;;
	-*)
		echo "vgpu-run: unknown option $1" >&2
		usage
		;;
	*)
		break
		;;
	esac
done
[ $# -ge 2 ] || usage
name=$1
shift
[ -n "$name" ] || usage

# the driver directory: next to this script as installed (BINDIR/../lib/
# vgpu) or as built (build/bin/../lib/vgpu)
here=$(cd "$(dirname "$0")" && pwd)
drv=${VGPU_DRIVER_DIR:-$here/../lib/vgpu}
if [ ! -e "$drv/libcuda.so.1" ]; then
	echo "vgpu-run: vgpu's libcuda.so.1 is not in $drv (set" \
		"VGPU_DRIVER_DIR to its directory)" >&2
	exit 1
fi
drv=$(cd "$drv" && pwd)
if [ ! -S "$socket" ]; then
	echo "vgpu-run: no vgpud socket at $socket (is vgpud running? use" \
		"--socket or VGPU_SOCKET)" >&2
	exit 1
fi

path=$drv${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
toolkit=${CUDA_HOME:-/usr/local/cuda}/lib64
[ -d "$toolkit" ] && path=$path:$toolkit
VGPU=$name VGPU_SOCKET=$socket LD_LIBRARY_PATH=$path
export VGPU VGPU_SOCKET LD_LIBRARY_PATH
exec "$@"
