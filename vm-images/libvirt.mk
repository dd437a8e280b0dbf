# SPDX-License-Identifier: MIT
# vm-images/libvirt/: libvirt in the test VM (vm-images/README.md, "libvirt").
#
#   make vm-libvirt-test   install test dependencies, build, run the libvirt
#                          suite (tests/integration/vm_libvirt.sh: virsh
#                          attach-device/detach-device of our mdev hostdev,
#                          vm-images/examples) through tests/run.sh

.PHONY: vm-libvirt-test

vm-libvirt-test: check-nvcc
	@scripts/install-deps.sh test
	@$(MAKE) --no-print-directory all modules
	@BUILD=$(BUILD) VM_BUILD=$(VM_BUILD) tests/run.sh vm_libvirt.sh
