# SPDX-License-Identifier: MIT
# tests/unit/: the window's physical extents (host-daemon/backend_extent.c)
# and a vGPU's memory across migrations on the sim backend, driven by the
# worker's sub-allocator (cmocka).
#   make unit-extent           build and run them, and test_cuda_move (the
#                              cuda backend against a fake driver)
#   make unit-extent-valgrind  the same under valgrind --leak-check=full

EXTENT_TEST_BINS := $(BUILD)/tests/unit/test_backend_extent \
	$(BUILD)/tests/unit/test_sim_move

unit-tests: $(EXTENT_TEST_BINS)

$(BUILD)/tests/unit/test_backend_extent: \
		$(BUILD)/obj/tests/unit/test_backend_extent.o \
		$(BUILD)/obj/host-daemon/backend_extent.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

$(BUILD)/tests/unit/test_sim_move: \
		$(BUILD)/obj/tests/unit/test_sim_move.o \
		$(BUILD)/obj/host-daemon/mem_suballoc.o \
		$(BACKEND_OBJS) $(SIM_KERNEL_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(BACKEND_LIBS) -lcmocka -lm

$(BUILD)/obj/tests/unit/test_backend_extent.o \
$(BUILD)/obj/tests/unit/test_sim_move.o: \
		$(BUILD)/obj/tests/unit/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon $(CFLAGS) -c -o $@ $<


# The cuda backend's memory and migration against a fake driver
# (tests/unit/fake_libcuda.c), outside tests/unit/ so that tests/run.sh
# does not take the library for a test.
FAKE_LIBCUDA := $(BUILD)/tests/fake/libfakecuda.so
CUDA_MOVE_TEST := $(BUILD)/tests/unit/test_cuda_move

unit-tests: $(CUDA_MOVE_TEST)

$(FAKE_LIBCUDA): tests/unit/fake_libcuda.c tests/unit/fake_libcuda.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -shared -o $@ $< -pthread

$(CUDA_MOVE_TEST): $(BUILD)/obj/tests/unit/test_cuda_move.o \
		$(BUILD)/obj/host-daemon/mem_suballoc.o \
		$(BACKEND_OBJS) $(SIM_KERNEL_OBJS) | $(FAKE_LIBCUDA)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(BACKEND_LIBS) -lcmocka -lm

$(BUILD)/obj/tests/unit/test_cuda_move.o: tests/unit/test_cuda_move.c tests/unit/fake_libcuda.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon $(CFLAGS) \
		-DFAKE_LIBCUDA='"$(abspath $(FAKE_LIBCUDA))"' -c -o $@ $<

.PHONY: unit-extent unit-extent-valgrind
unit-extent: $(EXTENT_TEST_BINS) $(CUDA_MOVE_TEST)
	@for t in $(EXTENT_TEST_BINS) $(CUDA_MOVE_TEST); do $$t || exit 1; done

unit-extent-valgrind: $(EXTENT_TEST_BINS) $(CUDA_MOVE_TEST)
	@for t in $(EXTENT_TEST_BINS) $(CUDA_MOVE_TEST); do \
		valgrind -q --leak-check=full --error-exitcode=1 $$t || exit 1; \
	done
