#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vm-images/l2/build.sh: the two archives of the nested (L2) VM test, in
# ${VM_BUILD:-build/vm}/l2/:
#
#   l2.cpio.gz  the L2 guest's whole initramfs: busybox, lspci (pciutils),
#               vgpu_guest.ko, our libcuda.so.1 in /vgpu/lib, the
#               runtime test programs (build/tests/runtime, with NVIDIA's
#               libcudart.so.13 from the toolkit, and vector_add_rt as
#               nvcc builds it by default),
#               long_copy, busy_loop, vm_rtt, l2_ring, two cubins, the
#               shared libraries they need (ldd), the L2 tests (tests/vm-l2/l2_*.sh with
#               tests/vm/lib.sh and run.sh), /init (vm-images/l2/init)
#   l1.cpio.gz  what the test VM (L1) needs on top of its own two parts
#               (build-initramfs.sh) to run L2: qemu-system-x86_64 with its
#               libraries, TCG module and firmware, Debian's kvm, kvm_amd
#               modules, the L2 kernel (the same Debian kernel) and
#               l2.cpio.gz, our libcuda.so.1 and vm_rtt (the local
#               transport, for the comparison), the L1 tests
#               (tests/vm-l2/l1_*.sh, beside tests/vm's in /vgpu/tests)
#
# Run from the repository root after `make all modules guest-modules` and
# vm-images/build-initramfs.sh (which fetches the kernel and busybox).
# pciutils and libpci3 are downloaded once (apt-get download + dpkg -x).
# Cached like build-initramfs.sh: unchanged trees are not packed again.
set -euo pipefail
CUDA_LIB=${CUDA_HOME:-/usr/local/cuda}/lib64

# shellcheck source=vm-images/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vm-images/l2/stage.sh
. "$VM_IMAGES/l2/stage.sh"
BUILD=${BUILD:-build}
GUEST_MODULE=${VGPU_GUEST_MODULE:-guest-driver/kmod/vgpu_guest.ko}
OUT=$VM_BUILD/l2
STAGE=$OUT/stage
DEBS=$OUT/debs
DEB_PKGS=(pciutils libpci3)
BUSYBOX=$VM_BUILD/debs/root/bin/busybox
QEMU=${QEMU:-$(command -v qemu-system-x86_64 || true)}
# L1 loads these (and what they depend on) to offer KVM to L2
KVM_MODULES=(kvm kvm_amd)
# a 9p share over virtio (the toolkit's libraries, host -> L1 -> L2:
# tests/vm-l2/l2_libs.sh), loaded when a test mounts it
SHARE_MODULES=(virtio_pci 9pnet_virtio 9p)
RT_PROGRAMS=(vector_add_rt matmul_shared_rt streams_overlap_rt events_rt
	callbacks_rt symbols_rt templates_rt errors_rt device_props_rt
	func_attrs_rt resize_props_rt)

# ko_path NAME: the Debian module file of a module name.
ko_path()
{
	find "$KMODDIR" \( -name "$1.ko" -o -name "${1//_/-}.ko" \) -print -quit
}

# add_module PART NAME: NAME's dependencies, then NAME, staged into PART's
# /lib/modules and listed (each once) in ORDER_PART.
declare -a ORDER_l1=() ORDER_l2=()
declare -A SEEN=()
add_module()
{
	local part=$1 name=$2 file dep
	local -n order=ORDER_$part
	[ -z "${SEEN[$part/$name]:-}" ] || return 0
	SEEN[$part/$name]=1
	file=$(ko_path "$name")
	[ -n "$file" ] || die "module $name is not in $KMODDIR"
	for dep in $(ko_deps "$file"); do
		add_module "$part" "$dep"
	done
	order+=("$name")
	stage "$part" "$file" "lib/modules/$name.ko" 0644
}

# ko_deps FILE: the modules FILE depends on (its modinfo "depends=").
ko_deps()
{
	strings -a "$1" | sed -n 's/^depends=//p' | tr ',' ' '
}

# Our guest library, as `make install` lays it out (lib/vgpu).
stage_vgpu_libs()
{
	local part=$1
	stage "$part" "$BUILD/lib/libcuda.so.1" vgpu/lib/libcuda.so.1 0755
}

stage_l2()
{
	local p f m progs=()
	stage l2 "$VM_IMAGES/l2/init" init 0755
	stage l2 "$BUSYBOX" bin/busybox 0755
	stage l2 "$DEBS/root/usr/bin/lspci" usr/bin/lspci 0755
	LD_LIBRARY_PATH=$DEBS/root/usr/lib/x86_64-linux-gnu \
		stage_libs l2 "$DEBS/root/usr/bin/lspci"
	stage_vgpu_libs l2
	for p in "${RT_PROGRAMS[@]}"; do
		progs+=("$BUILD/tests/runtime/$p")
	done
	# nvcc's default build: NVIDIA's static runtime over our libcuda.so.1
	stage l2 "$BUILD/tests/runtime-static/vector_add_rt" \
		vgpu/bin/vector_add_rt_static 0755
	LD_LIBRARY_PATH=$BUILD/lib stage_libs l2 \
		"$BUILD/tests/runtime-static/vector_add_rt"
	progs+=("$BUILD/tests/programs/long_copy"
		"$BUILD/tests/programs/busy_loop" "$BUILD/bench/vm_rtt")
	for f in "${progs[@]}"; do
		stage l2 "$f" "vgpu/bin/$(basename "$f")" 0755
	done
	stage l2 "$BUILD/tests/vm-l2/l2_ring" vgpu/bin/l2_ring 0755
	for f in vector_add chain; do
		stage l2 "$BUILD/kernels/$f.cubin" "vgpu/kernels/$f.cubin" 0644
	done
	# NVIDIA's libcudart.so.13 among them, from the toolkit
	LD_LIBRARY_PATH=$BUILD/lib:$CUDA_LIB stage_libs l2 "${progs[@]}"
	if [ -f "$GUEST_MODULE" ]; then
		stage l2 "$GUEST_MODULE" lib/modules/vgpu_guest.ko 0644
		# what the guest driver needs from Debian's modules, if anything
		for m in $(ko_deps "$GUEST_MODULE"); do
			add_module l2 "$m"
		done
	else
		step "warning: no $GUEST_MODULE (make guest-modules): L2 has no guest driver"
	fi
	stage l2 tests/vm/lib.sh vgpu/tests/lib.sh 0755
	stage l2 tests/vm/run.sh vgpu/tests/run.sh 0755
	for f in tests/vm-l2/l2_*.sh; do
		stage l2 "$f" "vgpu/tests/$(basename "$f")" 0755
	done
	stage_text l2 etc/passwd 0644 <<-'EOF'
		root:x:0:0:root:/root:/bin/sh
	EOF
	stage_text l2 etc/group 0644 <<-'EOF'
		root:x:0:
	EOF
	stage_text l2 lib/modules/load-order 0644 < <(printf '%s\n' "${ORDER_l2[@]}")
	ORDER_l2=()
	for m in "${SHARE_MODULES[@]}"; do
		add_module l2 "$m"
	done
	stage_text l2 lib/modules/share-order 0644 < <(printf '%s\n' "${ORDER_l2[@]}")
	# cuBLAS, linked as its documentation says; its libraries come from
	# the share, never into the archive (over 500 MiB)
	stage l2 "$BUILD/tests/libs/cublas_handle" vgpu/bin/cublas_handle 0755
	STAGE_LIBS_SKIP=$CUDA_LIB LD_LIBRARY_PATH=$CUDA_LIB \
		stage_libs l2 "$BUILD/tests/libs/cublas_handle"
	mkdir -p "$STAGE"/l2/{dev,proc,sys,tmp,run,root,sbin,usr/sbin}
}

stage_l1()
{
	local m f moddir
	stage l1 "$QEMU" usr/bin/qemu-system-x86_64 0755
	stage_libs l1 "$QEMU"
	# TCG is a loadable module in Debian's QEMU (KVM is built in)
	moddir=/usr/lib/x86_64-linux-gnu/qemu
	stage l1 "$moddir/accel-tcg-x86_64.so" "${moddir#/}/accel-tcg-x86_64.so" 0644
	stage_libs l1 "$moddir/accel-tcg-x86_64.so"
	# firmware for -M pc with -kernel and no display
	stage l1 /usr/share/seabios/bios-256k.bin usr/share/seabios/bios-256k.bin 0644
	for f in linuxboot_dma.bin kvmvapic.bin; do
		stage l1 "/usr/share/qemu/$f" "usr/share/qemu/$f" 0644
	done
	for m in "${KVM_MODULES[@]}"; do
		add_module l1 "$m"
	done
	stage_text l1 lib/modules/kvm-order 0644 < <(printf '%s\n' "${ORDER_l1[@]}")
	ORDER_l1=()
	for m in "${SHARE_MODULES[@]}"; do
		add_module l1 "$m"
	done
	stage_text l1 lib/modules/share-order 0644 < <(printf '%s\n' "${ORDER_l1[@]}")
	stage l1 "$VMLINUZ" vgpu/l2/vmlinuz 0644
	stage l1 "$OUT/l2.cpio.gz" vgpu/l2/initrd.gz 0644
	stage_vgpu_libs l1
	stage l1 "$BUILD/bench/vm_rtt" vgpu/bin/vm_rtt 0755
	stage l1 "$BUILD/kernels/vector_add.cubin" vgpu/kernels/vector_add.cubin 0644
	stage_libs l1 "$BUILD/bench/vm_rtt"
	for f in tests/vm-l2/l1_*.sh; do
		stage l1 "$f" "vgpu/tests/$(basename "$f")" 0755
	done
}

step "start"
mkdir -p "$OUT"
exec 9>"$OUT.lock"
flock 9
vm_kernel || die "cannot get the Debian kernel (vm-images/kernel.sh)"
[ -x "$BUSYBOX" ] || die "no $BUSYBOX: run vm-images/build-initramfs.sh first"
[ -n "$QEMU" ] || die "no qemu-system-x86_64 (scripts/install-deps.sh test)"
debs_fetch "$DEBS" "" "${DEB_PKGS[@]}"
[ "${1:-}" != --fetch ] || exit 0
[ -f "$BUILD/lib/libcuda.so.1" ] ||
	die "$BUILD/lib/libcuda.so.1 is not built (make all)"
[ -f "$CUDA_LIB/libcudart.so.13" ] ||
	die "no NVIDIA libcudart.so.13 in $CUDA_LIB (the CUDA toolkit)"
for f in "$BUILD/bench/vm_rtt" "$BUILD/tests/vm-l2/l2_ring" \
	"$BUILD/tests/programs/long_copy" "$BUILD/tests/libs/cublas_handle"; do
	[ -x "$f" ] || die "$f is not built (make all)"
done
mkdir -p "$STAGE/l2" "$STAGE/l1"
stage_l2
prune l2
pack l2 "$OUT/l2.cpio.gz"
stage_l1
prune l1
pack l1 "$OUT/l1.cpio.gz"
step "L2 archives ready in $OUT"
