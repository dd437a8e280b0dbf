# SPDX-License-Identifier: MIT
#
# vgpu_mdev.ko, the host kernel module, built against Debian 12's kernel:
# vm-images/kernel.sh fetches that kernel and its headers once into
# $(VM_BUILD)/kernel. Not part of `all` (the GPU machine runs Ubuntu and
# never loads it).
#
#   make modules          build mdev/vgpu_mdev.ko (W=1: keep it warning-free)
#   make modules_install  install it as /lib/modules/KVER/extra/vgpu_mdev.ko
#                         (the kernel's Kbuild modules_install with
#                         INSTALL_MOD_DIR=extra), then depmod, so that
#                         `modprobe vgpu_mdev` finds it
#   make mdev-clean       remove the Kbuild outputs in mdev/
#
# KDIR: the kernel build tree to build and install against; empty (the
# default) is Debian 12's (the test VM's). For the running kernel:
#   make modules modules_install KDIR=/lib/modules/$(uname -r)/build
# KVER is that tree's UTS_RELEASE (what `uname -r` says on that kernel;
# Debian's include/config/kernel.release holds the upstream version).
# INSTALL_MOD_PATH (default none: /) installs under a staging root, and
# depmod -b there; DEPMOD (default depmod, from kmod) is the depmod run
# (Kbuild's own is skipped). Signed only when KDIR has the kernel's
# signing key (a distribution's headers do not).
#
# Needs gcc, make, bc and libelf1 (scripts/install-deps.sh test), and
# apt-get + dpkg for the download.

VM_BUILD ?= $(BUILD)/vm
DEPMOD ?= depmod
# Sets the shell's KDIR for a recipe: make's KDIR, or kernel.sh's.
MDEV_KDIR = $(if $(KDIR),KDIR='$(KDIR)',eval "$$(VM_BUILD=$(VM_BUILD) \
	vm-images/kernel.sh)")
MDEV_MOD_PATH = $(if $(INSTALL_MOD_PATH),$(abspath $(INSTALL_MOD_PATH)))

.PHONY: modules mdev-module mdev-clean modules_install
modules: mdev-module

mdev-module:
	@$(MDEV_KDIR) && \
	$(MAKE) --no-print-directory -C "$$KDIR" M=$(abspath mdev) W=1 modules

modules_install: mdev-module
	@$(MDEV_KDIR) && \
	kver=$$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$$/\1/p' \
		"$$KDIR/include/generated/utsrelease.h") && \
	if [ -z "$$kver" ]; then \
		echo "modules_install: no UTS_RELEASE in $$KDIR" >&2; exit 1; \
	fi && \
	PATH=$$PATH:/sbin:/usr/sbin && \
	if ! command -v $(firstword $(DEPMOD)) >/dev/null; then \
		echo "modules_install: no $(firstword $(DEPMOD)) (apt-get" \
			"install kmod, or DEPMOD=...)" >&2; exit 1; \
	fi && \
	key=$$(sed -n 's/^CONFIG_MODULE_SIG_KEY="\(.*\)"$$/\1/p' \
		"$$KDIR/.config" 2>/dev/null || true) && \
	case "$$key" in /*) ;; *) key=$$KDIR/$$key ;; esac && \
	nosig= && \
	if [ -z "$$key" ] || [ ! -f "$$key" ]; then \
		nosig=CONFIG_MODULE_SIG_ALL=; \
		echo "modules_install: no signing key in $$KDIR: the module" \
			"is not signed"; \
	fi && \
	$(MAKE) --no-print-directory -C "$$KDIR" M=$(abspath mdev) \
		KERNELRELEASE="$$kver" INSTALL_MOD_DIR=extra DEPMOD=true \
		$(if $(MDEV_MOD_PATH),INSTALL_MOD_PATH=$(MDEV_MOD_PATH)) \
		$$nosig modules_install && \
	$(DEPMOD) $(if $(MDEV_MOD_PATH),-b $(MDEV_MOD_PATH)) "$$kver" && \
	echo "installed $(MDEV_MOD_PATH)/lib/modules/$$kver/extra/vgpu_mdev.ko" \
		"(depmod done: modprobe vgpu_mdev loads it on $$kver)"

mdev-clean:
	@$(MDEV_KDIR) && \
	$(MAKE) --no-print-directory -C "$$KDIR" M=$(abspath mdev) clean
