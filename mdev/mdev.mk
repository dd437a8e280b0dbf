# SPDX-License-Identifier: MIT
#
# vgpu_mdev.ko, the host kernel module, built against Debian 12's kernel:
# vm-images/kernel.sh fetches that kernel and its headers once into
# $(VM_BUILD)/kernel. Not part of `all` (the GPU machine runs Ubuntu and
# never loads it).
#
#   make modules       build mdev/vgpu_mdev.ko (W=1: keep it warning-free)
#   make mdev-clean    remove the Kbuild outputs in mdev/
#
# Needs gcc, make, bc and libelf1 (scripts/install-deps.sh test), and
# apt-get + dpkg for the download.

VM_BUILD ?= $(BUILD)/vm

.PHONY: modules mdev-module mdev-clean
modules: mdev-module

mdev-module:
	@eval "$$(VM_BUILD=$(VM_BUILD) vm-images/kernel.sh)" && \
	$(MAKE) --no-print-directory -C "$$KDIR" M=$(abspath mdev) W=1 modules

mdev-clean:
	@eval "$$(VM_BUILD=$(VM_BUILD) vm-images/kernel.sh)" && \
	$(MAKE) --no-print-directory -C "$$KDIR" M=$(abspath mdev) clean
