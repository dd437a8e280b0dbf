# SPDX-License-Identifier: MIT
# tests/libs/: programs that use CUDA's libraries (cuBLAS and cuBLASLt,
# cuFFT, cuRAND, cuSPARSE, cuSOLVER, cuDNN) the way their documentation
# shows, built with nvcc's default and linked against the toolkit's
# libraries (tests/integration/cuda_libs.sh; what they compute, on the GPU:
# scripts/nvrt-check.sh).

LIBS_TEST_PROGRAMS := $(BUILD)/tests/libs/libs_handles \
	$(BUILD)/tests/libs/cublas_handle $(BUILD)/tests/libs/libs_compute \
	$(BUILD)/tests/libs/cusparse_rt $(BUILD)/tests/libs/cusolver_rt \
	$(BUILD)/tests/libs/cublas_more_rt $(BUILD)/tests/libs/cufft_2d_rt

# cuDNN is not part of the toolkit: its cudnn.h is in $(CUDA_HOME)/include
# where it was installed there, else in python3's nvidia-cudnn-cu13 wheel
# (the GPU machine), which has no libcudnn.so link: the program links the
# library by its file name (-l:), with an rpath to its folder (found so at
# run time whatever LD_LIBRARY_PATH says). With neither, cudnn_conv_rt is
# left out, and `make all` goes on without it.
ifneq ($(wildcard $(CUDA_HOME)/include/cudnn.h),)
CUDNN_INC := $(CUDA_HOME)/include
CUDNN_LIB := $(CUDA_HOME)/lib64
else
CUDNN_WHEEL := $(shell python3 -c 'import nvidia.cudnn as m; \
	print(list(m.__path__)[0])' 2>/dev/null)
ifneq ($(CUDNN_WHEEL),)
ifneq ($(wildcard $(CUDNN_WHEEL)/include/cudnn.h),)
CUDNN_INC := $(CUDNN_WHEEL)/include
CUDNN_LIB := $(CUDNN_WHEEL)/lib
endif
endif
endif
ifneq ($(CUDNN_LIB),)
CUDNN_SO := $(firstword $(wildcard $(CUDNN_LIB)/libcudnn.so \
	$(CUDNN_LIB)/libcudnn.so.[0-9]*))
endif
ifneq ($(CUDNN_SO),)
LIBS_TEST_PROGRAMS += $(BUILD)/tests/libs/cudnn_conv_rt
$(BUILD)/tests/libs/cudnn_conv_rt: LIBS_LDLIBS := -I$(CUDNN_INC) \
	-L$(CUDNN_LIB) -l:$(notdir $(CUDNN_SO)) -Xlinker -rpath=$(CUDNN_LIB)
endif

all: $(LIBS_TEST_PROGRAMS)

$(BUILD)/tests/libs/libs_handles: LIBS_LDLIBS := -lcublas -lcufft -lcurand
$(BUILD)/tests/libs/cublas_handle: LIBS_LDLIBS := -lcublas
$(BUILD)/tests/libs/libs_compute: LIBS_LDLIBS := -lcublas -lcufft -lcurand
$(BUILD)/tests/libs/cusparse_rt: LIBS_LDLIBS := -lcusparse
$(BUILD)/tests/libs/cusolver_rt: LIBS_LDLIBS := -lcusolver
$(BUILD)/tests/libs/cublas_more_rt: LIBS_LDLIBS := -lcublas -lcublasLt
$(BUILD)/tests/libs/cufft_2d_rt: LIBS_LDLIBS := -lcufft

$(BUILD)/tests/libs/%: tests/libs/%.cu | check-nvcc
	@mkdir -p $(@D)
	$(NVCC) -O2 -arch=$(CUDA_ARCH) -o $@ $< $(LIBS_LDLIBS)
