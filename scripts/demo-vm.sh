#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/demo-vm.sh: the VM part of the demo (scripts/demo.sh runs it
# after its local part; `make demo-vm` runs it alone). Where this machine
# can, it boots the test VM (L1: Debian 12's kernel under QEMU, see
# vm-images/README.md), where vgpud runs on the simulator with
# vgpu_mdev.ko; composes two vGPUs from blueprints with `vgpu-admin
# create -f BP --mdev`; boots two guests (L2, nested KVM) at once, each
# with one vGPU as a vfio-pci device, each running unmodified CUDA runtime
# programs (nvcc -cudart shared) through vgpu_guest.ko and /dev/vgpu0; and
# prints `vgpu-admin list` while they run (vm-images/demo/l1_demo.sh).
#
# It reuses the test images' scripts: scripts/install-deps.sh demo-vm
# (qemu-system-x86, cpio, bc, libelf1), `make modules`,
# vm-images/build-initramfs.sh, vm-images/l2/build.sh, vm-images/l2/run-l1.sh.
#
# When the machine cannot (no Debian kernel to boot, QEMU not installable,
# nothing downloadable and nothing cached in build/vm) it prints
# "VM path skipped: REASON" and exits 0. Otherwise its exit status says
# whether every guest program succeeded. Progress lines carry the seconds
# since it started. Limits: VGPU_DEMO_VM_TIMEOUT (seconds for the whole VM
# part, default 900; VGPU_DEMO_VM=0 skips it); L1 is booted again once (VGPU_DEMO_VM_BOOTS, 2) when
# nested KVM wedged it (vm-images/README.md: "L2 under nested KVM").
# Everything it started is stopped on failure, time-out or Ctrl-C.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
VM_BUILD=${VM_BUILD:-$BUILD/vm}
mkdir -p "$VM_BUILD"
VM_BUILD=$(cd "$VM_BUILD" && pwd)
# the vm-images scripts print their progress on the same clock
VM_T0=$(date +%s.%N)
export BUILD VM_BUILD VM_T0
LIMIT=${VGPU_DEMO_VM_TIMEOUT:-900}
BOOTS=${VGPU_DEMO_VM_BOOTS:-2}
step_name="starting"
step_pid=""
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-demo-vm.XXXXXX")

elapsed()
{
	awk -v t0="$VM_T0" -v now="$(date +%s.%N)" \
		'BEGIN { printf "%.1f", now - t0 }'
}

progress()
{
	printf '[%6.1fs] %s\n' "$(elapsed)" "$*"
}

skip()
{
	echo "VM path skipped: $*"
	exit 0
}

# descendants PID: every process below PID, one pid a line.
descendants()
{
	local p
	for p in $(ps -o pid= --ppid "$1" 2>/dev/null); do
		echo "$p"
		descendants "$p"
	done
}

# Stops the running step: QEMU (and the timeout(1) around it) first, so
# that run-l1.sh ends by itself and removes its run directory; after
# 15 s whatever is left, by pid.
stop_step()
{
	local pid=$step_pid p i
	[ -n "$pid" ] || return 0
	step_pid=""
	for p in $(descendants "$pid"); do
		case $(ps -o comm= -p "$p" 2>/dev/null) in
		qemu-system-* | timeout) kill -TERM "$p" 2>/dev/null || true ;;
		esac
	done
	for i in $(seq 1 150); do
		kill -0 "$pid" 2>/dev/null || break
		[ "$i" -ne 30 ] || kill -TERM "$pid" 2>/dev/null || true
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		for p in $(descendants "$pid") "$pid"; do
			kill -KILL "$p" 2>/dev/null || true
		done
	fi
	wait "$pid" 2>/dev/null || true
}

cleanup()
{
	local rc=$?
	stop_step
	if [ "$rc" -eq 130 ]; then
		echo "VM part interrupted during: $step_name; everything it started is stopped" >&2
	elif [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then
		echo "VM part FAILED during: $step_name (exit status $rc)" >&2
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

remaining()
{
	awk -v t0="$VM_T0" -v now="$(date +%s.%N)" -v l="$LIMIT" \
		'BEGIN { r = int(l - (now - t0)); print (r > 0 ? r : 0) }'
}

# show_l1: L1's console as the user sees it: "vgpu-demo: step" lines and
# L1's own markers as progress, L1's kernel messages labelled, the rest
# (the vm-images scripts' progress, the demo's output) as it is.
show_l1()
{
	local l
	while IFS= read -r l; do
		case $l in
		"vgpu-demo: step "*) progress "${l#vgpu-demo: step }" ;;
		"vgpu-vm: up after "*) progress "L1 is up (kernel ${l##* kernel })" ;;
		"vgpu-vm: exit "*) ;;
		# L2's kernel touching AMD MSRs that L1's KVM does not emulate:
		# harmless, and printed once per guest boot
		*"Unhandled WRMSR"* | *"Unhandled RDMSR"*) ;;
		"vgpu-l1: restart"*) progress "L1: ${l#vgpu-l1: }" ;;
		\[*s\]\ *) printf '%s\n' "$l" ;;
		\[*\]\ *) printf '  [L1 kernel] %s\n' "$l" ;;
		*) printf '%s\n' "$l" ;;
		esac
	done
}

# run_step NAME LOG SHOW CMD...: runs CMD in the background with its
# output in LOG (SHOW: a filter that shows new lines as they come, or
# "-" for none), bounded by what is left of LIMIT; its exit status.
# Killed with everything below it on a time-out or Ctrl-C (stop_step).
run_step()
{
	local log=$2 show=$3 shown=0 n rc=0
	step_name=$1
	shift 3
	: >"$log"
	"$@" >"$log" 2>&1 &
	step_pid=$!
	while :; do
		if [ "$show" != - ]; then
			n=$(wc -l <"$log")
			if [ "$n" -gt "$shown" ]; then
				sed -n "$((shown + 1)),${n}p" "$log" | "$show"
				shown=$n
			fi
		fi
		kill -0 "$step_pid" 2>/dev/null || break
		if [ "$(remaining)" -le 0 ]; then
			echo "VM part stopped: it ran past its limit of $LIMIT s" \
				"(VGPU_DEMO_VM_TIMEOUT) during: $step_name" >&2
			stop_step
			exit 124
		fi
		sleep 0.2
	done
	wait "$step_pid" || rc=$?
	step_pid=""
	if [ "$show" != - ]; then
		n=$(wc -l <"$log")
		[ "$n" -le "$shown" ] || sed -n "$((shown + 1)),${n}p" "$log" | "$show"
	fi
	return "$rc"
}

pass()
{
	cat
}

# ---- can this machine run it? ----------------------------------------

[ "${VGPU_DEMO_VM:-1}" != 0 ] || skip "VGPU_DEMO_VM=0"
progress "VM path: checking that this machine can boot the test VMs"
if [ ! -d mdev ] || [ ! -x vm-images/l2/run-l1.sh ]; then
	skip "this tree has no mdev/ or vm-images/l2/"
fi
# The VMs boot Debian 12's kernel (vm-images/kernel.sh: apt-get download)
kernel_known()
{
	[ -f "$VM_BUILD/kernel/.complete" ] ||
		apt-cache depends linux-image-amd64 2>/dev/null |
		grep -q 'Depends: linux-image-[0-9]'
}
os_id=$(. /etc/os-release 2>/dev/null && echo "${ID:-}")
os=$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-}")
if ! kernel_known && [ "$os_id" = debian ] && [ "$(id -u)" -eq 0 ]; then
	# a fresh machine may have no package lists yet
	run_step "apt-get update" "$tmp/update" - apt-get update -qq || true
fi
if ! kernel_known; then
	skip "no Debian 12 kernel for the VMs: none cached in $VM_BUILD/kernel" \
		"and apt knows no linux-image-amd64 (this is ${os:-not Debian})"
fi
if ! run_step "installing QEMU and the VM tools" "$tmp/deps" - \
	scripts/install-deps.sh demo-vm; then
	skip "cannot install qemu-system-x86, cpio, bc, libelf1" \
		"($(tail -n 1 "$tmp/deps"))"
fi
fetch()
{
	vm-images/build-initramfs.sh --fetch && vm-images/l2/build.sh --fetch
}
refetch()
{
	fetch || { [ "$(id -u)" -eq 0 ] && apt-get update -qq && fetch; }
}
if ! run_step "downloading the Debian kernel and packages" "$tmp/fetch" - \
	refetch; then
	skip "cannot download the Debian kernel or packages (no network?):" \
		"$(tail -n 1 "$tmp/fetch")"
fi
progress "VM path: QEMU $(qemu-system-x86_64 --version | head -n 1 |
	awk '{ print $4 }'), Debian's kernel $(sed -n 's/^KVER=//p' \
	"$VM_BUILD/kernel/.complete"); everything lands in $VM_BUILD"

# ---- build -----------------------------------------------------------

progress "building vgpu_mdev.ko and vgpu_guest.ko against that kernel (make modules)"
if ! run_step "make modules" "$tmp/make" - \
	make --no-print-directory modules; then
	tail -n 30 "$tmp/make" >&2
	exit 1
fi
progress "building the images: L1 (vgpud, vgpu_mdev.ko, QEMU) and L2 (vgpu_guest.ko, our libcuda with NVIDIA's runtime, the runtime programs)"
run_step "building the VM images" "$tmp/images" pass \
	sh -c 'vm-images/build-initramfs.sh && vm-images/l2/build.sh'

# ---- boot ------------------------------------------------------------

# l1_broke_in_kvm LOG: L1's kernel failed under nested KVM in a way that is
# TCG's SVM emulation's, not ours (as tests/integration/vm_l2.sh decides)
l1_broke_in_kvm()
{
	grep -Eq 'Kernel panic|soft lockup' "$1" &&
		grep -Eq 'Comm: qemu-system-x86|soft lockup.*qemu-system' "$1" &&
		! grep -q '\[vgpu_mdev\]' "$1"
}

cmd="DEMO_BLUEPRINTS='${VGPU_DEMO_BLUEPRINTS:-inference-small training-large}'
$(cat vm-images/demo/l1_demo.sh)"
export L2_MEMORY=${L2_MEMORY:-512M} L2_CPUS=${L2_CPUS:-1}
for ((boot = 1; ; boot++)); do
	if [ "$(remaining)" -lt 60 ]; then
		echo "VM part stopped: less than a minute of its $LIMIT s" \
			"(VGPU_DEMO_VM_TIMEOUT) is left to boot the VMs" >&2
		exit 124
	fi
	progress "booting the test VM (L1) in QEMU; inside it two guests (L2) with a vGPU each"
	rc=0
	run_step "the VMs" "$tmp/l1.out" show_l1 \
		vm-images/l2/run-l1.sh --memory 3G --timeout "$(remaining)" \
		-- "$cmd" || rc=$?
	why=""
	if [ "$rc" -eq 126 ]; then
		why="an L2 got stuck in L1's KVM (nested KVM on TCG, not vgpu)"
	elif [ "$rc" -eq 125 ] && l1_broke_in_kvm "$tmp/l1.out"; then
		why="L1's kernel crashed in KVM under QEMU, not in vgpu_mdev"
	fi
	if [ -z "$why" ] || [ "$boot" -ge "$BOOTS" ] || [ "$(remaining)" -lt 120 ]; then
		break
	fi
	progress "L1 boot $boot: $why; booting L1 again"
done
case $rc in
0) ;;
124)
	echo "VM part stopped: it ran past its limit of $LIMIT s" \
		"(VGPU_DEMO_VM_TIMEOUT); L1's console: $VM_BUILD/l2/console.log" >&2
	exit 124
	;;
*)
	echo "the VMs failed (run-l1.sh exit $rc${why:+: $why});" \
		"L1's console: $VM_BUILD/l2/console.log" >&2
	exit 1
	;;
esac
progress "VM path done: two guests ran unmodified CUDA programs on their vGPUs through vfio-pci (L1 boots: $boot)"
