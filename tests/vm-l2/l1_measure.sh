#!/bin/sh
# shellcheck disable=SC2119 # vgpud_start takes optional arguments
# SPDX-License-Identifier: MIT
#
# l1_measure.sh [BOOTS] [ACCELS] [CMD]: not a test, the measurement behind
# the choice of accelerator for L2 (vm-images/README.md). Boots L2 BOOTS
# times (default 10) under each of ACCELS (default "kvm tcg") with the
# vGPU attached when the guest driver and vgpud can give one, runs CMD in
# L2 (default: a fixed amount of CPU work, then vector_add_rt when
# vgpu_guest.ko is in L2), and prints one line per boot:
#   MEASURE accel=kvm boot=3 result=ok up=12.3 total=20.1 work=4.2 prog=3.1
# (seconds: to "vgpu-l2: up", to its exit, the CPU work, the program) or
# result=hang / result=died with the reason. No retries: hangs count.
#
#   vm-images/l2/run-l1.sh -- /vgpu/tests/l1_measure.sh 10
# shellcheck shell=dash source=tests/vm/lib.sh
cd "$(dirname "$0")" || exit 1
. ./lib.sh
# shellcheck source=tests/vm-l2/l1_lib.sh
. ./l1_lib.sh

boots=${1:-10}
accels=${2:-kvm tcg}
# L2 side (expanded there): CPU work (busybox sha256 of 16 MiB), then a program on the vGPU
# shellcheck disable=SC2016
cmd=${3:-'t=$(cut -d" " -f1 /proc/uptime)
dd if=/dev/zero bs=1M count=16 2>/dev/null | sha256sum >/dev/null
echo "l2-measure: work $(cut -d" " -f1 /proc/uptime) $t"
if [ -f /lib/modules/vgpu_guest.ko ] && insmod /lib/modules/vgpu_guest.ko; then
	t=$(cut -d" " -f1 /proc/uptime)
	LD_LIBRARY_PATH=/vgpu/lib timeout 300 vector_add_rt; rc=$?
	echo "l2-measure: prog $rc $(cut -d" " -f1 /proc/uptime) $t"
fi'}

trap 'l2_stop "$TMP/m"; cleanup' EXIT
uuid=
module_load
if vgpud_start; then
	cat >"$TMP/bp.yaml" <<-BP
		version: 1
		name: l2m
		sms: 16
		memory: 1G
	BP
	u=$(new_uuid)
	if vadmin create -f "$TMP/bp.yaml" --mdev "$u" >"$TMP/create" 2>&1; then
		uuid=$u
	else
		echo "# no vGPU for L2: $(cat "$TMP/create")"
	fi
fi

for accel in $accels; do
	if [ "$accel" = kvm ] && ! kvm_load; then
		echo "MEASURE accel=kvm result=unavailable (no /dev/kvm after kvm_amd)"
		continue
	fi
	i=0
	while [ "$i" -lt "$boots" ]; do
		i=$((i + 1))
		d=$TMP/m
		l2_start "$d" "$accel" "$cmd" "$uuid"
		rc=0
		l2_follow "$d" || rc=$?
		work=$(tr -d '\r' <"$d/console" |
			awk '/^l2-measure: work/ { printf "%.2f", $3 - $4 }')
		prog=$(tr -d '\r' <"$d/console" |
			awk '/^l2-measure: prog/ { printf "%.2f rc=%d", $4 - $5, $3 }')
		case $rc in
		0) echo "MEASURE accel=$accel boot=$i result=ok up=$(cat "$d/up")" \
			"total=$(cat "$d/secs") work=${work:-?} prog=${prog:-none}" ;;
		2) echo "MEASURE accel=$accel boot=$i result=hang ($(cat "$d/why"))" ;;
		*) echo "MEASURE accel=$accel boot=$i result=died ($(cat "$d/why"))" ;;
		esac
		if [ "$rc" -ne 0 ] || [ -n "${MEASURE_VERBOSE:-}" ]; then
			tr -d '\r' <"$d/console" | tail -n 25 | sed 's/^/# l2: /'
			sed 's/^/# qemu: /' "$d/qemu.log"
		fi
	done
done
[ -z "$uuid" ] || mdev_remove "$uuid"
vgpud_stop
dmesg | grep -iE 'soft lockup|BUG|Oops|WARNING' | head -n 5 | sed 's/^/# L1 dmesg: /'
exit 0
