# SPDX-License-Identifier: MIT
# tests/unit/: vgpu-worker's re-adoption (worker_adopt.c): the ctl_path
# listener, the peer check, VGPU_CTL_ADOPTED and the orphan timer (cmocka;
# no backend, client stats stubbed).
#   make build/tests/unit/test_worker_adopt && build/tests/unit/test_worker_adopt

ADOPT_TEST_BIN := $(BUILD)/tests/unit/test_worker_adopt

unit-tests: $(ADOPT_TEST_BIN)

$(ADOPT_TEST_BIN): $(BUILD)/obj/tests/unit/test_worker_adopt.o \
		   $(WORKER_OBJ_DIR)/worker_adopt.o $(CTL_MSG_OBJ) \
		   $(WORKER_CORE_OBJS) $(WORKER_OBJ_DIR)/env_number.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka -pthread

$(BUILD)/obj/tests/unit/test_worker_adopt.o: tests/unit/test_worker_adopt.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon $(CFLAGS) -c -o $@ $<
