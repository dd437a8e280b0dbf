# shellcheck shell=dash
# SPDX-License-Identifier: MIT
#
# Helpers for the libvirt test, L1's side (tests/vm-libvirt/l1_libvirt.sh,
# busybox sh in the test VM; source after tests/vm/lib.sh and
# tests/vm-l2/l1_lib.sh, whose watchdogs, l2_follow, follow the L2 guest
# that libvirt starts here).
#
#   libvirtd_start        libvirtd in the background (vm-images/libvirt/etc),
#                         waits for its socket; libvirtd_stop
#   lv ARGS               virsh on qemu:///system, bounded (LV_TIMEOUT, 120 s)
#   lv_domain DIR ACCEL CMD   writes DIR/domain.xml from the example guest
#                         (vm-images/examples/vgpu-guest.xml) with L2's kernel,
#                         an initrd of L2's image plus CMD and the L2 scripts
#                         of this test, the console in DIR/console
#   lv_boot DIR           virsh start, and what l2_follow needs (DIR/accel,
#                         t0, dmesg0, L2_QEMU_PID from libvirt's pid file)
#   lv_destroy DIR        virsh destroy, then l2_stop (bounded; 1: QEMU is
#                         stuck in L1's KVM)
#   lv_hostdev UUID OUT   the example hostdev with UUID, as OUT
#   hostdevs DOM [--inactive] UUID  how many hostdevs of UUID dumpxml lists
#   lv_state_is DOM STATE     virsh domstate is STATE (for wait_for)
LV_DOM=${LV_DOM:-vgpu-l2}
LV_EXAMPLES=/vgpu/examples
# the UUID in vm-images/examples/vgpu-hostdev.xml
LV_EXAMPLE_UUID=c0ffee00-5647-4001-8000-000000000001
LIBVIRTD_LOG=/tmp/libvirtd.log
LIBVIRTD_PID=

lv()
{
	timeout "${LV_TIMEOUT:-120}" virsh -q -c qemu:///system "$@"
}

libvirtd_start()
{
	mkdir -p /run/libvirt
	/usr/sbin/libvirtd >/tmp/libvirtd.out 2>&1 &
	LIBVIRTD_PID=$!
	# (or it died: then at once)
	wait_for "${LV_START_TIMEOUT:-120}" "libvirtd's socket" sh -c \
		"test -S /run/libvirt/libvirt-sock || ! kill -0 $LIBVIRTD_PID"
	if ! test -S /run/libvirt/libvirt-sock; then
		diag_file /tmp/libvirtd.out
		diag_file "$LIBVIRTD_LOG"
		return 1
	fi
}

# Stops libvirtd (SIGTERM; SIGKILL after 30 s). The domains it runs stay
# (QEMU is not its child in the process sense that matters here).
libvirtd_stop()
{
	bg_stop "$LIBVIRTD_PID" 30 libvirtd
	LIBVIRTD_PID=
}

# lv_domain DIR ACCEL CMD
lv_domain()
{
	local dir=$1 accel=$2 cmd=$3 type=kvm cpu=host-passthrough
	rm -rf "$dir"
	mkdir -p "$dir/cmd/vgpu/tests"
	printf '%s\n' "$cmd" >"$dir/cmd/vgpu/cmd"
	cp /vgpu/libvirt/l2/*.sh "$dir/cmd/vgpu/tests/"
	(cd "$dir/cmd" && find . | cpio -o -H newc 2>/dev/null) | gzip -1 \
		>"$dir/cmd.cpio.gz"
	cat "$L2_DIR/initrd.gz" "$dir/cmd.cpio.gz" >"$dir/initrd"
	if [ "$accel" != kvm ]; then
		type=qemu
		cpu=maximum
	fi
	sed -e "s|<domain type='kvm'>|<domain type='$type'>|" \
		-e "s|<name>vgpu-guest</name>|<name>$LV_DOM</name>|" \
		-e "s|<cpu mode='host-passthrough'/>|<cpu mode='$cpu'/>|" \
		-e "s|/var/lib/libvirt/boot/vmlinuz|$L2_DIR/vmlinuz|" \
		-e "s|/var/lib/libvirt/boot/initrd.img|$dir/initrd|" \
		-e "s|<cmdline>.*</cmdline>|<cmdline>console=ttyS0 panic=-1 loglevel=${L2_LOGLEVEL:-4} tsc=reliable ${L2_APPEND:-}</cmdline>|" \
		-e "s|/var/log/libvirt/qemu/vgpu-guest.console|$dir/console|" \
		-e "s|<memory unit='MiB'>512</memory>|<memory unit='MiB'>${L2_MEMORY_MIB:-512}</memory>|" \
		"$LV_EXAMPLES/vgpu-guest.xml" >"$dir/domain.xml"
	echo "$accel" >"$dir/accel"
}

lv_boot()
{
	local dir=$1
	: >"$dir/console"
	rm -f "$dir/up" "$dir/secs" "$dir/why" "$dir/l1.tap"
	dmesg | wc -l >"$dir/dmesg0"
	l2_uptime >"$dir/t0"
	lv start "$LV_DOM" || return 1
	L2_QEMU_PID=$(cat "/run/libvirt/qemu/$LV_DOM.pid" 2>/dev/null)
	[ -n "$L2_QEMU_PID" ]
}

lv_destroy()
{
	lv destroy "$LV_DOM" >/dev/null 2>&1
	l2_stop "$1"
}

# lv_hostdev UUID OUT: vgpu-hostdev.xml with UUID in place of the
# example's, as a user would write it.
lv_hostdev()
{
	sed "s/$LV_EXAMPLE_UUID/$1/" "$LV_EXAMPLES/vgpu-hostdev.xml" >"$2"
}

# hostdevs DOM [--inactive] UUID: the number of <address uuid='UUID'/>
# in the domain's XML (live, or the persistent definition).
hostdevs()
{
	local dom=$1 opt=
	shift
	if [ "$1" = --inactive ]; then
		opt=--inactive
		shift
	fi
	# shellcheck disable=SC2086 # opt is empty or one word
	lv dumpxml $opt "$dom" | grep -c "<address uuid='$1'/>"
}

lv_state_is()
{
	[ "$(lv domstate "$1" 2>/dev/null | head -n 1)" = "$2" ]
}
