# SPDX-License-Identifier: MIT
# tests/unit/: the blueprint parser's unit tests (cmocka).
#   make build/tests/unit/test_blueprint && build/tests/unit/test_blueprint
#   make unit-blueprint            build and run them
#   make unit-blueprint-valgrind   the same under valgrind (leaks are errors)

BLUEPRINT_TEST_BIN := $(BUILD)/tests/unit/test_blueprint

unit-tests: $(BLUEPRINT_TEST_BIN)

$(BLUEPRINT_TEST_BIN): $(BUILD)/obj/tests/unit/test_blueprint.o \
		       $(BLUEPRINT_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(YAML_LIBS) -lcmocka

$(BUILD)/obj/tests/unit/test_blueprint.o: tests/unit/test_blueprint.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon \
		-DBLUEPRINT_DIR=\"$(abspath blueprints)\" \
		-DBLUEPRINT_BAD_DIR=\"$(abspath tests/blueprints)\" \
		$(CFLAGS) -c -o $@ $<

.PHONY: unit-blueprint unit-blueprint-valgrind
unit-blueprint: $(BLUEPRINT_TEST_BIN)
	$(BLUEPRINT_TEST_BIN)

unit-blueprint-valgrind: $(BLUEPRINT_TEST_BIN)
	valgrind --quiet --leak-check=full --show-leak-kinds=all \
		--errors-for-leak-kinds=all --error-exitcode=1 \
		$(BLUEPRINT_TEST_BIN)
