# SPDX-License-Identifier: MIT
# host-daemon/: the blueprint parser (blueprint.c, libyaml).
#
# Shared with other pieces (link it, with $(YAML_LIBS); no rules of your own):
#   BLUEPRINT_OBJS  the parser: vgpu-admin (validate, create -f) and vgpud

BLUEPRINT_OBJS := $(BUILD)/obj/host-daemon/blueprint.o

$(BLUEPRINT_OBJS): $(BUILD)/obj/host-daemon/%.o: host-daemon/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<
