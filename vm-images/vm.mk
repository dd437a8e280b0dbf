# SPDX-License-Identifier: MIT
# vm-images/: the test VM (Debian's kernel, a busybox initramfs with
# vgpu_mdev.ko, vgpud and the in-VM tests; see vm-images/README.md).
#
#   make vm-image   build the module and the initramfs (build/vm)
#   make vm-test    install test dependencies, build, run only the VM
#                   suites (tests/integration/vm.sh, and vm_l2.sh: the
#                   nested guest, vm-images/l2/) through tests/run.sh

.PHONY: vm-image vm-test

vm-image: all modules
	@VM_BUILD=$(VM_BUILD) vm-images/build-initramfs.sh

vm-test: check-nvcc
	@scripts/install-deps.sh test
	@$(MAKE) --no-print-directory all modules
	@BUILD=$(BUILD) VM_BUILD=$(VM_BUILD) tests/run.sh vm.sh vm_l2.sh

include vm-images/libvirt.mk
include vm-images/guest-image.mk
