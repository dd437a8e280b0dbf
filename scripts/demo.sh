#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/demo.sh (`make demo` runs it after building): a vGPU end to end.
# Starts a private vgpud (the cuda backend when `nvidia-smi -L` finds a
# GPU, otherwise the CPU simulator, and it says so), composes a 16-SM vGPU,
# runs two unmodified CUDA driver-API programs on it through our
# libcuda.so.1, shows `vgpu-admin list`, destroys the vGPU and stops
# vgpud. Then the VM path (scripts/demo-vm.sh), where the machine can run
# it: two guests in VMs on vGPUs; else one line says why it is skipped.
# Everything it started is stopped and removed on any failure.
# Needs root (vgpud's admin socket is root-only; it creates the `vgpu`
# user its workers run as).
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
case "$BUILD" in
/*) ;;
*) BUILD="$PWD/$BUILD" ;;
esac
VGPUD="$BUILD/bin/vgpud"
ADMIN="$BUILD/bin/vgpu-admin"
NAME=demo
step_name="starting"
run_dir=""
vgpud_pid=""

step()
{
	step_name=$*
	printf '\n==> %s\n' "$*"
}

# Stops vgpud: SIGTERM, up to 30 s, then SIGKILL. Returns its status.
stop_vgpud()
{
	local pid=$vgpud_pid rc=0 i
	[ -n "$pid" ] || return 0
	vgpud_pid=""
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 1 300); do
		kill -0 "$pid" 2>/dev/null || break
		[ "$(ps -o stat= -p "$pid" 2>/dev/null)" = Z ] && break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null &&
		[ "$(ps -o stat= -p "$pid" 2>/dev/null)" != Z ]; then
		echo "vgpud did not stop within 30 s; killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || rc=$?
	return "$rc"
}

cleanup()
{
	local rc=$?
	if [ "$rc" -ne 0 ]; then
		echo >&2
		echo "demo FAILED during: $step_name (exit status $rc)" >&2
		if [ -n "$run_dir" ] && [ -s "$run_dir/vgpud.log" ]; then
			echo "last lines of vgpud's log:" >&2
			tail -n 20 "$run_dir/vgpud.log" >&2
		fi
	fi
	if [ -n "$vgpud_pid" ]; then
		timeout 60 "$ADMIN" --run-dir "$run_dir" destroy "$NAME" \
			>/dev/null 2>&1 || true
		stop_vgpud || true
	fi
	[ -n "$run_dir" ] && rm -rf "$run_dir"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# run_client PROGRAM ARGS...: a CUDA program on the demo vGPU.
run_client()
{
	VGPU="$NAME" VGPU_SOCKET="$run_dir/client.sock" \
		LD_LIBRARY_PATH="$BUILD/lib" VGPU_KERNEL_DIR="$BUILD/kernels" \
		timeout 600 "$BUILD/tests/programs/$1" "${@:2}"
}

step "checking what we need"
if [ "$(id -u)" -ne 0 ]; then
	echo "demo.sh needs root: vgpud's admin socket is root-only and the" \
		"workers run as the 'vgpu' system user. Run: sudo make demo" >&2
	exit 1
fi
for f in "$VGPUD" "$ADMIN" "$BUILD/bin/vgpu-worker" "$BUILD/lib/libcuda.so.1" \
	"$BUILD/tests/programs/vector_add" "$BUILD/tests/programs/matmul"; do
	if [ ! -e "$f" ]; then
		echo "missing $f: run 'make' first" >&2
		exit 1
	fi
done
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
	backend=cuda
	memory=4G
	matmul_n=2048
	echo "GPU found: $(nvidia-smi -L | head -n 1)"
	echo "backend: cuda (the real GPU)"
else
	backend=sim
	memory=1G
	matmul_n=256
	echo "No NVIDIA GPU found (nvidia-smi -L fails)."
	echo "backend: sim -- the CPU SIMULATOR. The programs below run on the"
	echo "CPU; nothing they print is a GPU figure."
fi
if ! id vgpu >/dev/null 2>&1; then
	echo "creating the system user 'vgpu' (vgpud runs its workers as it)"
	useradd --system --no-create-home --shell /usr/sbin/nologin vgpu
fi

step "starting vgpud (backend $backend) on a private run directory"
run_dir=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-demo.XXXXXX")
chmod 0755 "$run_dir"
"$VGPUD" --run-dir "$run_dir" --backend "$backend" --worker-user vgpu \
	>"$run_dir/vgpud.log" 2>&1 &
vgpud_pid=$!
for i in $(seq 1 600); do
	[ -S "$run_dir/admin.sock" ] && [ -S "$run_dir/client.sock" ] && break
	if ! kill -0 "$vgpud_pid" 2>/dev/null; then
		echo "vgpud exited during start-up" >&2
		exit 1
	fi
	[ "$i" -eq 600 ] && { echo "vgpud did not open its sockets in 60 s" >&2; exit 1; }
	sleep 0.1
done
echo "vgpud is up (pid $vgpud_pid, run directory $run_dir)"

step "creating vGPU '$NAME': 16 SMs, $memory"
timeout 120 "$ADMIN" --run-dir "$run_dir" create "$NAME" --sms 16 \
	--memory "$memory"

step "vgpu-admin list"
timeout 60 "$ADMIN" --run-dir "$run_dir" list

step "vector_add (1M floats) on vGPU '$NAME' through our libcuda.so.1"
run_client vector_add

step "matmul (${matmul_n}x$matmul_n, 16x16 tiles) on vGPU '$NAME'"
run_client matmul "$matmul_n"

step "vgpu-admin list (after the programs)"
timeout 60 "$ADMIN" --run-dir "$run_dir" list

step "destroying vGPU '$NAME'"
timeout 60 "$ADMIN" --run-dir "$run_dir" destroy "$NAME"

step "stopping vgpud"
stop_vgpud
echo "vgpud stopped cleanly"

step "the VM path: vGPUs for virtual machines (scripts/demo-vm.sh)"
BUILD="$BUILD" scripts/demo-vm.sh

echo
if [ "$backend" = sim ]; then
	echo "demo done (on the CPU SIMULATOR: no GPU was used)."
else
	echo "demo done on the GPU."
fi
