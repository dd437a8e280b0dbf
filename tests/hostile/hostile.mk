# SPDX-License-Identifier: MIT
# tests/hostile/: raw-protocol clients that attack vgpud and the workers
# (driven by tests/integration/hostile_*.sh).

HOSTILE_BINS := $(BUILD)/tests/hostile/hostile_hello \
	$(BUILD)/tests/hostile/hostile_ring $(BUILD)/tests/hostile/hostile_admin \
	$(BUILD)/tests/hostile/hostile_flood

all: $(HOSTILE_BINS)

$(BUILD)/obj/tests/hostile/%.o: tests/hostile/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/hostile/%: $(BUILD)/obj/tests/hostile/%.o \
		$(BUILD)/obj/tests/hostile/hostile_conn.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^

.PRECIOUS: $(BUILD)/obj/tests/hostile/%.o
