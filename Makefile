# SPDX-License-Identifier: MIT
#
# vgpu: top-level build. Each folder adds its targets through its own .mk
# fragment. Outputs go to $(BUILD) (default build/).
#
#   make            build everything (user space; kernel modules via Kbuild)
#   make test       install test dependencies, build, run every test
#   make vm-test    the same for the VM suite only (vm-images/README.md)
#   make demo       install what is needed, build, run the demo
#   make demo-vm    only its VM part (two guests on vGPUs; scripts/demo-vm.sh)
#   make gpu-check  on the GPU machine: build, check and measure (no installs)
#   make bench      on the GPU machine: the benchmarks only

CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(CUDA_HOME)/bin/nvcc
BUILD     ?= build
CC        ?= gcc

CPPFLAGS += -Iinclude -I$(CUDA_HOME)/include -D_GNU_SOURCE
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -pthread -MMD -MP
LDFLAGS  += -pthread
# Libraries from Debian: libyaml (blueprints), jansson (state file, --json),
# libzstd and liblz4 (the simulator reads CUDA's compressed code).
# On a machine without their -dev packages (the GPU machine), unpack them into
# .debs/root (scripts/carry-debs.sh) and the build uses them from there.
YAML_LIBS    := -lyaml
JANSSON_LIBS := -ljansson
UNPACK_LIBS  := -lzstd -llz4
DEBS_ROOT    := $(wildcard .debs/root)
ifneq ($(DEBS_ROOT),)
# (the path only in what links them: not in the guest libraries)
DEBS_LIB     := $(abspath $(DEBS_ROOT))/usr/lib/x86_64-linux-gnu
CPPFLAGS     += -I$(DEBS_ROOT)/usr/include
YAML_LIBS    := -L$(DEBS_LIB) -Wl,-rpath,$(DEBS_LIB) -lyaml
JANSSON_LIBS := -L$(DEBS_LIB) -Wl,-rpath,$(DEBS_LIB) -ljansson
UNPACK_LIBS  := -L$(DEBS_LIB) -Wl,-rpath,$(DEBS_LIB) -lzstd -llz4
endif
# NVIDIA's arch for test/bench kernels: Hopper (H100/H200).
CUDA_ARCH ?= sm_90

.PHONY: all unit-tests test demo demo-vm gpu-check bench check-nvcc clean format install
# all: the programs, libraries, kernels and test programs (no extra
# libraries needed, so it builds on the GPU machine too); unit-tests: the
# cmocka unit tests (libcmocka-dev, installed by make test).
all:
unit-tests:

include host-daemon/host-daemon.mk
include guest-driver/guest-driver.mk
include guest-driver/nvml/nvml.mk
include vgpu-run/vgpu-run.mk
include kernels/kernels.mk
include tests/tests.mk
include bench/bench.mk
include mdev/mdev.mk
include guest-driver/kmod/kmod.mk
include vm-images/vm.mk

check-nvcc:
	@test -x $(NVCC) || { echo "error: nvcc not found at $(NVCC)." \
	  "vgpu needs CUDA 13's nvcc (CUDA_HOME=$(CUDA_HOME)) to build its test" \
	  "kernels; install the CUDA toolkit or set CUDA_HOME." >&2; exit 1; }

test: check-nvcc
	@scripts/install-deps.sh test
	@$(MAKE) --no-print-directory all unit-tests
	@tests/run.sh

demo: check-nvcc
	@scripts/install-deps.sh build
	@$(MAKE) --no-print-directory all
	@scripts/demo.sh

demo-vm: check-nvcc
	@scripts/install-deps.sh build
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) scripts/demo-vm.sh

gpu-check: check-nvcc
	@$(MAKE) --no-print-directory all
	@scripts/gpu-check.sh

bench: check-nvcc
	@$(MAKE) --no-print-directory all
	@scripts/gpu-check.sh --bench-only

# Host side: vgpud, vgpu-worker (found next to vgpud), vgpu-admin, vgpu-run,
# the man page, the systemd unit; the guest library goes to
# $(PREFIX)/lib/vgpu, alone, where vgpu-run finds it (it is on the library
# path only of programs meant to run on a vGPU).
PREFIX  ?= /usr/local
DESTDIR ?=
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/vgpu \
		$(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)/etc/systemd/system
	install -m 0755 $(BUILD)/bin/vgpud $(BUILD)/bin/vgpu-worker \
		$(BUILD)/bin/vgpu-admin $(BUILD)/bin/vgpu-run \
		$(DESTDIR)$(PREFIX)/bin/
	install -m 0755 $(BUILD)/lib/libcuda.so.1 $(DESTDIR)$(PREFIX)/lib/vgpu/
	ln -sf libcuda.so.1 $(DESTDIR)$(PREFIX)/lib/vgpu/libcuda.so
	install -m 0644 docs/vgpu-admin.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	sed 's#@BINDIR@#$(PREFIX)/bin#' host-daemon/vgpud.service \
		>$(DESTDIR)/etc/systemd/system/vgpud.service

format:
	clang-format -i $$(git ls-files '*.c' '*.h' | grep -v '^mdev/\|\.ko')

clean:
	rm -rf $(BUILD)

# (not under $(BUILD)/vm: the VM images hold files like Debian's invoke-rc.d)
-include $(shell find $(BUILD) -path $(BUILD)/vm -prune -o -name '*.d' -type f -print 2>/dev/null)
