# SPDX-License-Identifier: MIT
# vm-images/guest-image/: a small Debian 12 guest disk image with the vgpu
# guest driver and library, for trying vgpu in an ordinary VM
# (vm-images/guest-image/README.md). Not part of `make test` (slow: it
# boots the image twice under TCG).
#
#   make guest-image        build $(VM_BUILD)/guest/vgpu-guest.qcow2 (as
#                           root; 1.5 to 3.5 minutes the first time, then
#                           only what changed)
#   make guest-image-test   build it, boot it (BIOS and UEFI, no vGPU) and
#                           check it (TAP; vm-images/guest-image/test.sh)

GUEST_IMAGE_EXAMPLES := $(shell sed 's/\#.*//' vm-images/guest-image/examples)
# what goes into the image from this tree (not all of `all`)
GUEST_IMAGE_INPUTS := $(BUILD)/lib/libcuda.so.1 \
	$(GUEST_IMAGE_EXAMPLES:%=$(BUILD)/tests/runtime/%)

.PHONY: guest-image guest-image-test

guest-image: $(GUEST_IMAGE_INPUTS) guest-modules
	@BUILD=$(BUILD) VM_BUILD=$(VM_BUILD) vm-images/guest-image/build.sh

guest-image-test: guest-image
	@BUILD=$(BUILD) VM_BUILD=$(VM_BUILD) vm-images/guest-image/test.sh
