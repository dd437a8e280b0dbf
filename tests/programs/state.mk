# SPDX-License-Identifier: MIT
# tests/programs/: the save, restore and migration test programs, built
# like the others by programs.mk's pattern rule.
STATE_PROGRAMS := state_pattern savepoint_load

all: $(STATE_PROGRAMS:%=$(BUILD)/tests/programs/%)
