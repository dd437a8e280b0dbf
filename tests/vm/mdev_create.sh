#!/bin/sh
# shellcheck disable=SC2317 # functions run through check
# SPDX-License-Identifier: MIT
# The ways to make an instance, each composing a vGPU that vgpu-admin
# shows, and each removal destroying it: sysfs; mdevctl 1.2.0 (start with
# parent and type, or define, then start by UUID); a blueprint bound to a
# UUID with vgpu-admin create -f BP --mdev UUID (which creates the custom
# instance itself).
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh

# expect_vgpu UUID SMS MEMORY: BAR0 shows the composition and vgpu-admin
# lists the vGPU; its name is left in $vgpu.
expect_vgpu()
{
	vgpu=$(regs "$1" vgpu)
	sms=$(regs "$1" sms)
	mem=$(regs "$1" memory)
	if [ -n "$vgpu" ] && [ "$sms" = "$2" ] && [ "$mem" = "$3" ] &&
		vgpu_names | grep -qx "$vgpu"; then
		ok "BAR0 shows vGPU $vgpu ($sms SMs, $mem bytes), vgpu-admin lists it"
	else
		not_ok "BAR0 shows the vGPU ($2 SMs, $3 bytes), vgpu-admin lists it" \
			"BAR0: '$vgpu' $sms SMs $mem bytes; vgpu-admin list:" \
			"$(vadmin list 2>&1 | tr '\n' '|')"
	fi
}

# expect_destroyed NAME: the vGPU is gone from vgpu-admin list (10 s).
expect_destroyed()
{
	if [ -n "$1" ] && wait_for 10 "$1 to go" vgpu_absent "$1"; then
		ok "its vGPU $1 is destroyed (not in vgpu-admin list)"
	else
		not_ok "its vGPU '$1' is destroyed" "$(vadmin list 2>&1 | tr '\n' '|')"
	fi
}

bp_listed()
{
	vgpu_names | grep -qx vm-bp
}

module_load
if ! vgpud_has_mdev; then
	skip "creating instances" "vgpud has no --mdev yet"
	finish
fi
if ! check "vgpud starts with the mdev transport" vgpud_start; then
	finish
fi
wait_for 10 "vgpud to publish what it can create" \
	available_is vgpu-8sm-4g -gt 0

# sysfs
u=$(new_uuid)
check "create through sysfs (vgpu-8sm-4g)" mdev_create vgpu-8sm-4g "$u"
check "the device is on the mdev bus with its type" \
	test "$(basename "$(readlink "/sys/bus/mdev/devices/$u/mdev_type")")" = vgpu-8sm-4g
check "it has an IOMMU group" test -c "$(group_of "$u")"
expect_vgpu "$u" 8 4294967296
check "remove through sysfs" mdev_remove "$u"
expect_destroyed "$vgpu"

# mdevctl
check "mdevctl types lists our types" sh -c 'mdevctl types | grep -q vgpu-16sm-8g'
u=$(new_uuid)
check "mdevctl start -p $(parent_name) --type vgpu-16sm-8g -u UUID" \
	mdevctl start -p "$(parent_name)" --type vgpu-16sm-8g -u "$u"
check "mdevctl list shows it" sh -c "mdevctl list | grep -q $u"
expect_vgpu "$u" 16 8589934592
check "mdevctl stop -u UUID" mdevctl stop -u "$u"
check_fails "the device is gone" mdev_exists "$u"
expect_destroyed "$vgpu"
u=$(new_uuid)
check "mdevctl define -u UUID -p $(parent_name) --type vgpu-8sm-4g" \
	mdevctl define -u "$u" -p "$(parent_name)" --type vgpu-8sm-4g
check "mdevctl list --defined shows it" sh -c "mdevctl list --defined | grep -q $u"
check "mdevctl start -u UUID starts the defined device" mdevctl start -u "$u"
expect_vgpu "$u" 8 4294967296
check "mdevctl stop -u UUID, undefine -u UUID" \
	sh -c "mdevctl stop -u $u && mdevctl undefine -u $u"
expect_destroyed "$vgpu"

# a blueprint bound to a UUID: vgpu-admin creates the custom instance
cat >"$TMP/bp.yaml" <<BP
version: 1
name: vm-bp
sms: 24
memory: 512M
BP
u=$(new_uuid)
check "vgpu-admin create -f BP --mdev UUID" vadmin create -f "$TMP/bp.yaml" --mdev "$u"
check "vgpu-admin list shows vm-bp" bp_listed
check "the instance exists, of the custom type" \
	test "$(basename "$(readlink "/sys/bus/mdev/devices/$u/mdev_type")")" = vgpu-custom
expect_vgpu "$u" 24 536870912
check "remove it" mdev_remove "$u"
expect_destroyed vm-bp
check_fails "a custom instance with no blueprint bound fails" \
	mdev_create vgpu-custom "$(new_uuid)"
vgpud_stop
finish
