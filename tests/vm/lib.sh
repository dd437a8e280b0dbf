# shellcheck shell=dash
# SPDX-License-Identifier: MIT
#
# Helpers for the in-VM tests (tests/vm/*.sh, run by busybox sh inside the
# test VM as root; source it; `local` as in dash and busybox ash). Test
# results are TAP lines without numbers ("ok - what", "not ok - what",
# "# diagnostics"); tests/vm/run.sh numbers them for the whole suite.
#
#   TAP          ok, not_ok, skip, check, check_fails, diag_file, finish
#   kernel log   dmesg_mark, dmesg_since
#   waiting      wait_for SECONDS WHAT COMMAND...
#   processes    bg_stop PID SECONDS NAME
#   9p share     share_mount TAG DIR
#   module       module_load, module_unload, parent, parent_name,
#                types_dir, type_attr, objects_zero
#   vgpud        vgpud_start [ARGS], vgpud_stop, vgpud_kill, vadmin ARGS,
#                vgpud_has_mdev, vgpu_names, vgpu_json NAME FIELD,
#                vgpu_json_is NAME FIELD OP N, vgpu_absent NAME
#   instances    new_uuid, mdev_create TYPE UUID, mdev_remove UUID,
#                mdev_exists UUID, group_of UUID, regs UUID FIELD,
#                available TYPE, available_is TYPE OP N, type_sms TYPE,
#                type_memory TYPE
# Everything a script starts is stopped by its EXIT trap.

MODULE=/lib/modules/vgpu_mdev.ko
OBJECTS=/sys/kernel/debug/vgpu_mdev/objects
RUN_DIR=/run/vgpu
VGPUD_LOG=/tmp/vgpud.log
VGPUD_PID=
FAILS=0
TMP=$(mktemp -d /tmp/vmtest.XXXXXX)

# ---- TAP -------------------------------------------------------------

ok()
{
	echo "ok - $1"
}

# not_ok WHAT [DIAGNOSTIC...]
not_ok()
{
	local l
	echo "not ok - $1"
	shift
	for l in "$@"; do
		echo "# $l"
	done
	FAILS=$((FAILS + 1))
}

skip()
{
	echo "ok - $1 # SKIP $2"
}

# Prints a file (the last 20 lines) as diagnostics.
diag_file()
{
	tail -n 20 "$1" 2>/dev/null | sed 's/^/# /'
}

# check WHAT COMMAND...: ok when the command succeeds; its output is in
# $TMP/out (shown when it fails).
check()
{
	local what=$1
	shift
	if "$@" >"$TMP/out" 2>&1; then
		ok "$what"
		return 0
	fi
	not_ok "$what" "failed: $*"
	diag_file "$TMP/out"
	return 1
}

# check_fails WHAT COMMAND...: ok when the command fails.
check_fails()
{
	local what=$1
	shift
	if "$@" >"$TMP/out" 2>&1; then
		not_ok "$what" "succeeded: $*"
		return 1
	fi
	ok "$what"
	return 0
}

# Ends the script: status 1 if any test failed (then vgpud's log and the
# kernel's last lines come as diagnostics).
finish()
{
	if [ "$FAILS" -ne 0 ]; then
		echo "# vgpud log (last lines):"
		diag_file "$VGPUD_LOG"
		echo "# kernel log (last lines):"
		dmesg | tail -n 15 | sed 's/^/# /'
	fi
	[ "$FAILS" -eq 0 ]
	exit $?
}

# dmesg_mark, then dmesg_since: the kernel log lines logged in between
# (the log is never cleared: health.sh reads all of it at the end).
dmesg_mark()
{
	DMESG_MARK=$(dmesg | wc -l)
}

dmesg_since()
{
	dmesg | tail -n +$((DMESG_MARK + 1))
}

# ---- waiting ---------------------------------------------------------

# wait_for SECONDS WHAT COMMAND...: polls (every 0.1 s) until the command
# succeeds; 1 with a diagnostic after SECONDS.
wait_for()
{
	local secs=$1 what=$2 end
	shift 2
	end=$(($(date +%s) + secs))
	while ! "$@" >/dev/null 2>&1; do
		if [ "$(date +%s)" -ge "$end" ]; then
			echo "# timed out after $secs s waiting for $what"
			return 1
		fi
		sleep 0.1
	done
}

# ---- a 9p share from the VM's host -----------------------------------

# share_mount TAG DIR: mounts the host's read-only 9p share TAG at DIR
# (QEMU's -virtfs; the modules listed in /lib/modules/share-order are
# loaded first). True when it is mounted; false when this VM has no such
# share.
share_mount()
{
	local m
	grep -qs " $2 9p " /proc/mounts && return 0
	[ -f /lib/modules/share-order ] || return 1
	for m in $(cat /lib/modules/share-order); do
		[ -d "/sys/module/$m" ] || insmod "/lib/modules/$m.ko" 2>/dev/null
	done
	grep -qs "$1" /sys/bus/virtio/drivers/9pnet_virtio/*/mount_tag ||
		return 1
	mkdir -p "$2"
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 "$1" "$2"
}

# ---- the module --------------------------------------------------------

module_loaded()
{
	[ -d /sys/module/vgpu_mdev ]
}

module_load()
{
	module_loaded || insmod "$MODULE"
}

module_unload()
{
	! module_loaded || rmmod vgpu_mdev
}

# The mdev parent's sysfs directory (/sys/class/mdev_bus/NAME).
parent()
{
	for p in /sys/class/mdev_bus/*; do
		[ -d "$p/mdev_supported_types" ] && echo "$p" && return 0
	done
	return 1
}

parent_name()
{
	basename "$(parent)"
}

# The type directories, one per line.
types_dir()
{
	ls -d "$(parent)"/mdev_supported_types/* 2>/dev/null
}

# type_attr TYPE ATTR: one attribute of a type (TYPE: its sysfs name).
type_attr()
{
	cat "$(parent)/mdev_supported_types/$1/$2"
}

# True when every counter in the module's debugfs objects file is 0
# (lines "NAME: N" or "NAME N"); prints the file.
objects_zero()
{
	[ -r "$OBJECTS" ] || return 1
	cat "$OBJECTS"
	awk '{ v = $NF; if (v ~ /^[0-9]+$/ && v != 0) bad = 1 }
		END { exit bad }' "$OBJECTS"
}

# ---- vgpud -------------------------------------------------------------

# True when this vgpud has the mdev transport (--mdev).
vgpud_has_mdev()
{
	vgpud --help 2>&1 | grep -q -- '--mdev'
}

# vgpud_start [ARGS...]: vgpud on the simulator (64 SMs, so that capacity
# runs out: 8 groups of 8) with the mdev transport; waits for its
# sockets and for /dev/vgpu-ctl to be held.
vgpud_start()
{
	mkdir -p "$RUN_DIR"
	VGPU_SIM_SMS=${VGPU_SIM_SMS:-64} VGPU_SIM_MEMORY=${VGPU_SIM_MEMORY:-64G} \
		vgpud --run-dir "$RUN_DIR" --backend sim --worker-user vgpu \
		--mdev on "$@" >>"$VGPUD_LOG" 2>&1 &
	VGPUD_PID=$!
	if ! wait_for 30 "vgpud's sockets" test -S "$RUN_DIR/admin.sock"; then
		diag_file "$VGPUD_LOG"
		return 1
	fi
}

# bg_stop PID SECONDS NAME: stops a background process of this shell
# (SIGTERM; SIGKILL when it is still there after SECONDS) and reaps it;
# nothing when PID is empty.
bg_stop()
{
	[ -n "$1" ] || return 0
	kill -TERM "$1" 2>/dev/null
	wait_for "$2" "$3 to exit" sh -c "! kill -0 $1" ||
		kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

# Stops vgpud (SIGTERM; SIGKILL after 20 s).
vgpud_stop()
{
	bg_stop "$VGPUD_PID" 20 vgpud
	VGPUD_PID=
}

# Kills vgpud with SIGKILL (its workers live on, as on a crash).
vgpud_kill()
{
	[ -n "$VGPUD_PID" ] || return 0
	kill -KILL "$VGPUD_PID" 2>/dev/null
	wait "$VGPUD_PID" 2>/dev/null
	VGPUD_PID=
	return 0
}

vadmin()
{
	timeout 60 vgpu-admin --run-dir "$RUN_DIR" "$@"
}

# The names of the vGPUs vgpud has, one per line.
vgpu_names()
{
	vadmin list | awk 'NR > 1 { print $1 }'
}

# vgpu_json NAME FIELD: a number field of `vgpu-admin show NAME --json`.
vgpu_json()
{
	vadmin show "$1" --json |
		sed -n "s/^ *\"$2\": *\([0-9][0-9]*\).*/\1/p" | head -n 1
}

# vgpu_json_is NAME FIELD OP N: test(1) of that field (for wait_for).
vgpu_json_is()
{
	test "$(vgpu_json "$1" "$2")" "$3" "$4"
}

# ---- instances ---------------------------------------------------------

new_uuid()
{
	cat /proc/sys/kernel/random/uuid
}

# mdev_create TYPE UUID: creates an instance through sysfs.
mdev_create()
{
	echo "$2" >"$(parent)/mdev_supported_types/$1/create"
}

# mdev_remove UUID
mdev_remove()
{
	echo 1 >"/sys/bus/mdev/devices/$1/remove"
}

mdev_exists()
{
	[ -e "/sys/bus/mdev/devices/$1" ]
}

# Removes every instance (bounded by the module's own timeouts).
mdev_remove_all()
{
	local d
	for d in /sys/bus/mdev/devices/*; do
		[ -e "$d/remove" ] && echo 1 >"$d/remove"
	done
	return 0
}

# group_of UUID: /dev/vfio/N of an instance.
group_of()
{
	echo "/dev/vfio/$(basename "$(readlink "/sys/bus/mdev/devices/$1/iommu_group")")"
}

# type_sms TYPE, type_memory TYPE: what a catalogue type promises, from
# its name (vgpu-16sm-8g: 16 SMs, 8 GiB).
type_sms()
{
	echo "$1" | sed -n 's/^.*-\([0-9][0-9]*\)sm-.*$/\1/p'
}

type_memory()
{
	echo "$1" | sed -n 's/^.*sm-\([0-9][0-9]*\)g.*$/\1/p' |
		awk '{ printf "%.0f\n", $1 * 1073741824 }'
}

# available TYPE: its available_instances.
available()
{
	type_attr "$1" available_instances
}

# available_is TYPE OP N: test(1) of available_instances, e.g. -gt 0
# (for wait_for, which runs it again on every try).
available_is()
{
	test "$(available "$1")" "$2" "$3"
}

# regs UUID FIELD: one BAR0 value as vfio_user regs prints it (state,
# sms, memory, vgpu, ...).
regs()
{
	vfio_user regs "$1" | sed -n "s/^$2=//p"
}

# vgpu_absent NAME: vgpu-admin list does not show the vGPU NAME.
vgpu_absent()
{
	! vgpu_names | grep -qx "$1"
}

# ---- cleanup -------------------------------------------------------------

cleanup()
{
	vgpud_stop
	rm -rf "$TMP"
}
trap cleanup EXIT
