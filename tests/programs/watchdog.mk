# SPDX-License-Identifier: MIT
# tests/programs/: the kernel time limit's test program (legal work longer
# than the limit in all), built like the others by programs.mk's pattern
# rule.
WATCHDOG_PROGRAMS := long_work

all: $(WATCHDOG_PROGRAMS:%=$(BUILD)/tests/programs/%)
