# SPDX-License-Identifier: MIT
#
# vgpu_guest.ko, the guest's PCI driver (/dev/vgpuN), built against
# Debian 12's kernel, the one the VMs run: vm-images/kernel.sh fetches its
# headers once into $(VM_BUILD)/kernel. Not part of `all` (no kernel is
# built on the GPU machine); part of `make modules`.
#
#   make guest-modules        build guest-driver/kmod/vgpu_guest.ko
#                             (W=1, warnings are errors)
#   make guest-modules-clean  remove its Kbuild outputs

VM_BUILD ?= $(BUILD)/vm
GUEST_KMOD_DIR := guest-driver/kmod

.PHONY: modules guest-modules guest-modules-clean
modules: guest-modules

guest-modules:
	@eval "$$(VM_BUILD=$(VM_BUILD) vm-images/kernel.sh)" && \
	$(MAKE) --no-print-directory -C "$$KDIR" \
		M=$(abspath $(GUEST_KMOD_DIR)) W=1 modules

guest-modules-clean:
	@eval "$$(VM_BUILD=$(VM_BUILD) vm-images/kernel.sh)" && \
	$(MAKE) --no-print-directory -C "$$KDIR" \
		M=$(abspath $(GUEST_KMOD_DIR)) clean
