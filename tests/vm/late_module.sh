#!/bin/sh
# shellcheck disable=SC2317 # functions run through check
# SPDX-License-Identifier: MIT
# vgpu_mdev.ko loaded after vgpud: vgpud (--mdev auto) starts without it,
# `modprobe vgpu_mdev` (the image installs it under
# /lib/modules/KVER/extra with depmod), and vgpud attaches by itself
# within seconds: its types are offered and an instance created then is a
# vGPU. Then the module goes and comes back while vgpud runs: rmmod is
# refused while vgpud holds the device, so another holder has it when
# vgpud starts (EBUSY: vgpud waits), lets go and unloads the module at
# once (vfio_user ctlhold); modprobe again, and vgpud attaches again.
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh

LATE="VM path on: /dev/vgpu-ctl attached (module loaded after vgpud)"

# log_mark, then log_since: vgpud's log lines written in between.
log_mark()
{
	LOG_MARK=$(wc -l <"$VGPUD_LOG" 2>/dev/null || echo 0)
}

log_since()
{
	tail -n +$((LOG_MARK + 1)) "$VGPUD_LOG" 2>/dev/null
}

# log_has TEXT: a line since the mark holds TEXT (for wait_for).
log_has()
{
	log_since | grep -qF "$1"
}

# create_listed TYPE: an instance of TYPE is created, vgpu-admin list
# shows its vGPU (mdev- and the UUID's first 8 digits), and its removal
# destroys the vGPU again.
create_listed()
{
	local u name
	u=$(new_uuid)
	name=mdev-$(echo "$u" | cut -c1-8)
	if ! check "create a $1 instance" mdev_create "$1" "$u"; then
		return 1
	fi
	if vgpu_names | grep -qx "$name"; then
		ok "vgpu-admin list shows its vGPU $name"
	else
		not_ok "vgpu-admin list shows its vGPU $name" "$(vadmin list)"
	fi
	check "remove it" mdev_remove "$u"
	check "... and the vGPU goes with it" \
		wait_for 10 "$name to go" vgpu_absent "$name"
}

# attach_time: waits (20 s) for vgpud to offer instances; prints the
# seconds it took.
attach_time()
{
	local t0 t1
	t0=$(cut -d' ' -f1 /proc/uptime)
	wait_for 20 "vgpud to attach and publish its types" \
		available_is vgpu-8sm-4g -gt 0 || return 1
	t1=$(cut -d' ' -f1 /proc/uptime)
	echo "$t0 $t1" | awk '{ printf "%.1f\n", $2 - $1 }'
}

module_unload
kver=$(uname -r)
check "modules.dep lists extra/vgpu_mdev.ko with its dependencies" \
	grep -q '^extra/vgpu_mdev.ko: .*vfio' "/lib/modules/$kver/modules.dep"
if ! vgpud_has_mdev; then
	skip "vgpud attaches to a module loaded later" "vgpud has no --mdev"
	finish
fi

# 1. vgpud first, then modprobe
log_mark
if ! check "vgpud --mdev auto starts without the module" \
	vgpud_start --mdev auto; then
	finish
fi
check "... and says the VM path waits for the module" \
	log_has "no /dev/vgpu-ctl (vgpu_mdev.ko is not loaded)"
check "modprobe vgpu_mdev loads it" modprobe vgpu_mdev
if secs=$(attach_time); then
	ok "vgpud attaches by itself ${secs} s after modprobe (it looks every 2 s)"
else
	not_ok "vgpud attaches by itself after modprobe" "$(log_since | tail -n 5)"
	finish
fi
n=$(log_since | grep -cF "$LATE")
if [ "$n" = 1 ]; then
	ok "vgpud logs once: $LATE"
else
	not_ok "vgpud logs once: $LATE" "$n such lines"
fi
create_listed vgpu-8sm-4g
check_fails "rmmod is refused while vgpud holds /dev/vgpu-ctl" \
	rmmod vgpu_mdev
vgpud_stop

# 2. the module unloaded and loaded again while vgpud runs
hold=$TMP/hold
mkdir -p "$hold"
vfio_user ctlhold "$hold" >"$TMP/hold.out" 2>&1 &
holder=$!
if ! wait_for 10 "the other holder" test -e "$hold/holding"; then
	not_ok "another process holds /dev/vgpu-ctl" "$(cat "$TMP/hold.out")"
	bg_stop "$holder" 5 "vfio_user ctlhold"
	finish
fi
log_mark
check "vgpud --mdev auto starts while another process holds the device" \
	vgpud_start --mdev auto
check "... and says it is busy (and waits)" \
	log_has "cannot open /dev/vgpu-ctl: Device or resource busy"
touch "$hold/holding.go"
wait "$holder"
cat "$TMP/hold.out"
check_fails "vgpu_mdev is unloaded while vgpud runs" module_loaded
check "vgpud still serves (vgpu-admin list)" vadmin list
check "... and says the device is gone" \
	wait_for 10 "the log line" log_has "no /dev/vgpu-ctl"
check "modprobe vgpu_mdev loads it again" modprobe vgpu_mdev
if secs=$(attach_time); then
	ok "vgpud attaches to the reloaded module by itself ${secs} s later"
else
	not_ok "vgpud attaches to the reloaded module" "$(log_since | tail -n 5)"
	finish
fi
check "vgpud logs: $LATE" log_has "$LATE"
create_listed vgpu-16sm-8g
vgpud_stop
check "afterwards the counters are zero" \
	wait_for 10 "the counters to drop" objects_zero
finish
