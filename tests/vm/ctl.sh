#!/bin/sh
# shellcheck disable=SC2317 # functions run through check
# SPDX-License-Identifier: MIT
# /dev/vgpu-ctl with vfio_user in vgpud's place (tests/vm/vfio_ctl.c), so
# that the daemon's side can answer wrongly, late or not at all: the
# checks of CREATE_DONE, the BAR2 memfd per VFIO session (SET_BAR2,
# GET_BAR2, the open that waits for a fresh one), one instance's events
# against the queue, and a removal's ERROR that stays. Then who may open
# the device: root only (mode 0600: EACCES for nobody; CAP_SYS_ADMIN:
# EPERM for root without it), one holder at a time (EBUSY while vgpud
# holds it).
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh

# ctl_open_is AS WANT...: vfio_user ctlopen AS prints one of WANT.
ctl_open_is()
{
	local as=$1 got w
	shift
	got=$(vfio_user ctlopen "$as" 2>&1)
	for w in "$@"; do
		[ "$got" = "$w" ] && return 0
	done
	echo "open as $as: $got (want $*)"
	return 1
}

module_load
dmesg_mark
rc=0
vfio_user ctl vgpu-8sm-4g vgpu-32sm-16g || rc=$?
[ "$rc" -le 1 ] || not_ok "vfio_user ctl exited with status $rc"
if dmesg_since | grep -q "has not given a fresh BAR2 memfd"; then
	ok "the refused open says why in the kernel log:$(dmesg_since | grep -m1 'has not given a fresh BAR2' | cut -d: -f2-)"
else
	not_ok "the refused open says why in the kernel log" "$(dmesg_since | tail -n 5)"
fi
mdev_remove_all
check "afterwards the counters are zero" \
	wait_for 10 "the counters to drop" objects_zero

# who may open /dev/vgpu-ctl
check "/dev/vgpu-ctl is mode 0600, owned by root" \
	test "$(stat -c '%a %u %g' /dev/vgpu-ctl)" = "600 0 0"
check "a non-root user (uid 65534) cannot open it (EACCES or EPERM)" \
	ctl_open_is nobody EACCES EPERM
check "root without CAP_SYS_ADMIN cannot open it (EPERM)" \
	ctl_open_is nocap EPERM
check "root opens it while nobody holds it" ctl_open_is root opened
if ! vgpud_has_mdev; then
	skip "a second holder is refused" "vgpud has no --mdev"
	finish
fi
if check "vgpud starts and holds it" vgpud_start; then
	wait_for 10 "vgpud to publish what it can create" \
		available_is vgpu-8sm-4g -gt 0
	check "a second open while vgpud holds it fails with EBUSY" \
		ctl_open_is root EBUSY
	check "... and vgpud goes on holding it (types still offered)" \
		available_is vgpu-8sm-4g -gt 0
	vgpud_stop
	check "once vgpud stopped, root opens it again" ctl_open_is root opened
fi
finish
