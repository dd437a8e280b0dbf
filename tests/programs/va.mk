# SPDX-License-Identifier: MIT
# tests/programs/: the VA windows' test program (a client's own host
# memory stays out of them; tests/integration/va_windows.sh), built like
# the others by programs.mk's pattern rule.
VA_PROGRAMS := va_host_maps

all: $(VA_PROGRAMS:%=$(BUILD)/tests/programs/%)
