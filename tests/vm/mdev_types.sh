#!/bin/sh
# shellcheck disable=SC2317 # functions run through check
# SPDX-License-Identifier: MIT
# The mdev types in sysfs: every attribute present, vfio-pci; what they
# offer follows vgpud (nothing without it, and a clear log line when a
# create is tried; with it, available_instances and descriptions change as
# instances come and go, and a create beyond what is available fails).
# vgpud runs on a simulated GPU of 64 SMs: 8 groups of 8.
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh

nothing_available()
{
	! cat "$(parent)"/mdev_supported_types/*/available_instances |
		grep -qv '^0$'
}
remove_two()
{
	mdev_remove "$u1" && mdev_remove "$u2"
}

module_load
for t in $(types_dir); do
	name=$(basename "$t")
	if [ -s "$t/name" ] && [ -s "$t/description" ] &&
		[ -r "$t/available_instances" ] &&
		[ "$(cat "$t/device_api")" = vfio-pci ] && [ -e "$t/create" ]; then
		ok "$name: name '$(cat "$t/name")', description, available_instances, device_api vfio-pci, create"
	else
		not_ok "$name: name, description, available_instances, device_api vfio-pci, create" \
			"$(ls "$t")"
	fi
done

# without vgpud
zero=1
for t in $(types_dir); do
	[ "$(cat "$t/available_instances")" = 0 ] || zero=0
	grep -q "vgpud is not running" "$t/description" || zero=0
done
if [ "$zero" = 1 ]; then
	ok "without vgpud: 0 available, descriptions say vgpud is not running"
else
	not_ok "without vgpud: 0 available, descriptions say vgpud is not running" \
		"$(head "$(parent)"/mdev_supported_types/*/available_instances "$(parent)"/mdev_supported_types/*/description)"
fi
u=$(new_uuid)
dmesg_mark
check_fails "without vgpud a create fails" mdev_create vgpu-8sm-4g "$u"
if dmesg_since | grep -q "vgpud is not running"; then
	ok "... and the kernel log says why:$(dmesg_since | grep -m1 'vgpud is not running' | cut -d: -f2-)"
else
	not_ok "... and the kernel log says why" "$(dmesg_since | tail -n 5)"
fi
check_fails "... and leaves no instance behind" mdev_exists "$u"

if ! vgpud_has_mdev; then
	skip "types follow vgpud" "vgpud has no --mdev yet"
	finish
fi
if ! check "vgpud starts with the mdev transport" vgpud_start; then
	finish
fi
wait_for 10 "vgpud to publish what it can create" \
	available_is vgpu-8sm-4g -gt 0
desc0=$(cat "$(parent)"/mdev_supported_types/*/description)
for want in vgpu-8sm-4g:8 vgpu-16sm-8g:4 vgpu-32sm-16g:2 vgpu-64sm-32g:1; do
	t=${want%:*}
	n=${want#*:}
	if [ "$(available "$t")" = "$n" ]; then
		ok "with vgpud: $t offers $n instances (64 SMs)"
	else
		not_ok "with vgpud: $t offers $n instances" "got $(available "$t")"
	fi
done

u1=$(new_uuid)
u2=$(new_uuid)
check "create a 32-SM instance" mdev_create vgpu-32sm-16g "$u1"
if wait_for 10 "available to drop" available_is vgpu-32sm-16g = 1; then
	ok "vgpu-32sm-16g now offers 1 (8sm-4g: $(available vgpu-8sm-4g), 64sm-32g: $(available vgpu-64sm-32g))"
else
	not_ok "vgpu-32sm-16g now offers 1" "got $(available vgpu-32sm-16g)"
fi
check "vgpu-64sm-32g offers 0 now" available_is vgpu-64sm-32g = 0
desc1=$(cat "$(parent)"/mdev_supported_types/*/description)
if [ "$desc1" != "$desc0" ]; then
	ok "the descriptions changed: $(type_attr vgpu-32sm-16g description)"
else
	not_ok "the descriptions changed" "$desc1"
fi
check "create a second 32-SM instance" mdev_create vgpu-32sm-16g "$u2"
wait_for 10 "available to drop" available_is vgpu-32sm-16g = 0
check "nothing is available now" nothing_available
u3=$(new_uuid)
dmesg_mark
check_fails "a create beyond available_instances fails" \
	mdev_create vgpu-8sm-4g "$u3"
if dmesg_since | grep -q .; then
	ok "... and the kernel log says why:$(dmesg_since | grep -m1 . | cut -d: -f2-)"
else
	not_ok "... and the kernel log says why" "nothing logged"
fi
check_fails "... and leaves no instance behind" mdev_exists "$u3"
check "the two instances are removed" remove_two
if wait_for 10 "availability to come back" \
	available_is vgpu-32sm-16g = 2; then
	ok "vgpu-32sm-16g offers 2 again"
else
	not_ok "vgpu-32sm-16g offers 2 again" "got $(available vgpu-32sm-16g)"
fi
desc2=$(cat "$(parent)"/mdev_supported_types/*/description)
if [ "$desc2" = "$desc0" ]; then
	ok "the descriptions are back to what they were"
else
	not_ok "the descriptions are back to what they were" "$desc2"
fi
vgpud_stop
check "after vgpud stops every type offers 0 again" nothing_available
finish
