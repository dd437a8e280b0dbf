#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vm-images/guest-image/test.sh: the guest image's smoke test (TAP on
# stdout, a summary line last). Boots ${VM_BUILD:-build/vm}/guest/
# vgpu-guest.qcow2 the way a user would (its own bootloader, no vGPU
# attached, the disk in snapshot mode so the image is not changed) under
# QEMU TCG (-accel tcg -cpu max; VM_ACCEL=kvm to try KVM), logs in as
# root on the serial console and checks: the kernel boots to a login
# prompt, root logs in, no systemd unit failed, vgpu_guest is loaded and
# says cleanly that there is no device, ldconfig resolves libcuda.so.1 and
# (NVIDIA's) libcudart.so.13 to /usr/lib/vgpu, an example program fails with a clear
# CUDA error (not a hang, not a crash), and poweroff ends the VM. Twice
# by default (GUEST_TEST_FIRMWARE=both): with QEMU's BIOS (SeaBIOS, which
# runs syslinux from the MBR) and with UEFI (OVMF, from Debian's ovmf
# package, downloaded once into guest/ovmf when not installed), which runs
# EFI/BOOT/BOOTX64.EFI; bios or uefi runs one.
#
# Watchdogs: the login prompt within GUEST_BOOT_TIMEOUT (600 s), no
# console silence longer than GUEST_STALL_TIMEOUT (240 s) while waiting,
# each command within GUEST_CMD_TIMEOUT (300 s), QEMU killed after
# GUEST_TEST_TIMEOUT (1500 s) per boot. The consoles are kept in
# build/vm/guest/console-bios.log and console-uefi.log. Run
# `make guest-image` first (or `make guest-image-test`, which does).
# shellcheck disable=SC2016 # commands and checks in single quotes run in
# the guest or in bash -c, with their own variables
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=vm-images/lib.sh
. vm-images/lib.sh
OUT=$VM_BUILD/guest
IMAGE=$OUT/vgpu-guest.qcow2
BOOT_TIMEOUT=${GUEST_BOOT_TIMEOUT:-600}
STALL_TIMEOUT=${GUEST_STALL_TIMEOUT:-240}
CMD_TIMEOUT=${GUEST_CMD_TIMEOUT:-300}
TEST_TIMEOUT=${GUEST_TEST_TIMEOUT:-1500}
FIRMWARES=${GUEST_TEST_FIRMWARE:-both}
[ "$FIRMWARES" != both ] || FIRMWARES="bios uefi"
LOG=
N=0
FAILED=0
QEMU_PID=
CAT_PID=
RUN=

# ---- TAP -------------------------------------------------------------------

ok()
{
	N=$((N + 1))
	echo "ok $N - $1"
}

# not_ok NAME [FILE]: a failure, with FILE (or the end of the console)
not_ok()
{
	N=$((N + 1))
	FAILED=$((FAILED + 1))
	echo "not ok $N - $1"
	if [ -n "${2:-}" ]; then cat "$2"; elif [ -n "$LOG" ]; then since 0; fi | tail -n 20 |
		sed 's/^/# /'
}

finish()
{
	echo "1..$N"
	echo "# $((N - FAILED)) passed, $FAILED failed"
	[ "$FAILED" -eq 0 ]
	exit $?
}

skip()
{
	N=$((N + 1))
	echo "ok $N - $1 # SKIP $2"
}

# stop_vm: ends this boot's QEMU (if still running) and console reader.
stop_vm()
{
	[ -z "$QEMU_PID" ] || kill "$QEMU_PID" 2>/dev/null
	[ -z "$CAT_PID" ] || kill "$CAT_PID" 2>/dev/null
	wait 2>/dev/null
	QEMU_PID=
	CAT_PID=
	exec 7>&-
	[ -z "$RUN" ] || rm -rf "$RUN"
	RUN=
}

# find_ovmf: sets OVMF_CODE and OVMF_VARS: Debian's ovmf package when
# installed, else the same package downloaded once into guest/ovmf.
find_ovmf()
{
	local dir=/usr/share/OVMF
	if [ ! -f "$dir/OVMF_CODE_4M.fd" ]; then
		dir=$OUT/ovmf/root/usr/share/OVMF
		if [ ! -f "$dir/OVMF_CODE_4M.fd" ]; then
			rm -rf "$OUT/ovmf"
			mkdir -p "$OUT/ovmf"
			(cd "$OUT/ovmf" && apt-get -o APT::Sandbox::User="$(id -un)" \
				download ovmf && dpkg -x ovmf_*.deb root &&
				rm -f ovmf_*.deb) >"$OUT/ovmf.log" 2>&1 || return 1
		fi
	fi
	OVMF_CODE=$dir/OVMF_CODE_4M.fd
	OVMF_VARS=$dir/OVMF_VARS_4M.fd
	[ -f "$OVMF_CODE" ] && [ -f "$OVMF_VARS" ]
}

# ---- the serial console ----------------------------------------------------

# mark: the console's length now; wait_for searches after a mark.
mark()
{
	stat -c %s "$LOG"
}

# since MARK: the console after MARK as text: no carriage returns, no
# terminal escape sequences (colours, bracketed paste, line clearing).
since()
{
	tail -c +"$(($1 + 1))" "$LOG" | tr -d '\r' |
		sed -E 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1b[()][A-Z0-9]//g'
}

# wait_for MARK TIMEOUT PATTERN: true once PATTERN (grep -E) appears in
# the console after MARK; false after TIMEOUT seconds, after
# STALL_TIMEOUT seconds without console output, or when QEMU is gone
# (WHY says which).
wait_for()
{
	local from=$1 limit=$2 pattern=$3 t0 size last_size=-1 quiet_since now
	t0=$(date +%s.%N)
	quiet_since=$SECONDS
	while :; do
		if since "$from" | grep -Eq -- "$pattern"; then
			return 0
		fi
		now=$(date +%s.%N)
		size=$(mark)
		if [ "$size" != "$last_size" ]; then
			last_size=$size
			quiet_since=$SECONDS
		fi
		if ! kill -0 "$QEMU_PID" 2>/dev/null; then
			WHY="QEMU exited"
			return 1
		fi
		if [ $((SECONDS - quiet_since)) -ge "$STALL_TIMEOUT" ]; then
			WHY="no console output for $STALL_TIMEOUT s"
			return 1
		fi
		if awk -v n="$now" -v t="$t0" -v l="$limit" 'BEGIN { exit !(n - t >= l) }'; then
			WHY="not within $limit s"
			return 1
		fi
		sleep 0.2
	done
}

# send WORDS...: types the words (joined by spaces) and Enter on the
# serial console.
send()
{
	printf '%s\r' "$*" >&7
}

# run_cmd ID CMD: runs the shell command line CMD in the guest, its
# output through a pipe (no terminal: no pager, colours or spinners); the
# output (stdout and stderr) lands in $RUN/ID.out, the exit status in RC.
# False when it did not finish within CMD_TIMEOUT. The markers are printed
# by printf so that the echo of the typed line never matches them.
run_cmd()
{
	local id=$1 cmd=$2 from
	from=$(mark)
	send "printf '@@%s\n' B-$id; ($cmd) </dev/null 2>&1 | cat;" \
		"printf '@@%s\n' \"E-$id rc=\${PIPESTATUS[0]}\""
	RC=
	if ! wait_for "$from" "$CMD_TIMEOUT" "@@E-$id rc=[0-9]+"; then
		since "$from" >"$RUN/$id.out"
		echo "# $id: $WHY" >>"$RUN/$id.out"
		return 1
	fi
	since "$from" | sed -n "/@@B-$id\$/,/@@E-$id rc=/p" | sed '1d;$d' \
		>"$RUN/$id.out"
	RC=$(since "$from" | sed -n "s/.*@@E-$id rc=\([0-9]*\).*/\1/p" |
		head -n 1)
	return 0
}

# check NAME ID CMD TEST...: runs CMD as ID, then the shell test TEST
# (with $RC and $F, the output file); ok or not ok with the output.
check()
{
	local name=$1 id=$2 cmd=$3
	shift 3
	if ! run_cmd "$id" "$cmd"; then
		not_ok "$name ($WHY)" "$RUN/$id.out"
		return 1
	fi
	if F=$RUN/$id.out RC=$RC bash -c "$*"; then
		ok "$name"
		sed 's/^/#   /' "$RUN/$id.out" | head -n 12
	else
		not_ok "$name (exit $RC)" "$RUN/$id.out"
	fi
}

# ---- the run ---------------------------------------------------------------

trap stop_vm EXIT
trap 'exit 130' INT TERM
[ -f "$IMAGE" ] || {
	echo "1..0 # SKIP no $IMAGE (make guest-image)"
	exit 0
}
command -v qemu-system-x86_64 >/dev/null || {
	echo "1..0 # SKIP no qemu-system-x86_64 (scripts/install-deps.sh test)"
	exit 0
}
case ${VM_ACCEL:-tcg} in
kvm) accel=(-accel kvm -cpu host) ;;
tcg) accel=(-accel tcg -cpu max) ;;
*) echo "VM_ACCEL must be kvm or tcg" >&2; exit 2 ;;
esac

# boot_and_check FIRMWARE: one boot of the image (bios: QEMU's SeaBIOS,
# syslinux from the MBR; uefi: OVMF, EFI/BOOT/BOOTX64.EFI) and every check.
# False when the run had to stop early.
boot_and_check()
{
	local fw=$1 from t0 t_start rc p boot_s total
	local firmware=()
	if [ "$fw" = uefi ]; then
		cp "$OVMF_VARS" "$OUT/ovmf-vars.fd"
		firmware=(-drive "if=pflash,format=raw,readonly=on,file=$OVMF_CODE"
			-drive "if=pflash,format=raw,file=$OUT/ovmf-vars.fd")
	fi
	RUN=$(mktemp -d "$OUT/test.XXXXXX")
	mkfifo "$RUN/serial.in" "$RUN/serial.out"
	LOG=$OUT/console-$fw.log
	: >"$LOG"
	# read-write opens: neither side blocks waiting for the other
	cat <>"$RUN/serial.out" >>"$LOG" &
	CAT_PID=$!
	exec 7<>"$RUN/serial.in"
	echo "# $fw: booting $IMAGE: qemu-system-x86_64 ${accel[*]} -m 1G -smp 2," \
		"virtio disk (snapshot), no network, no vGPU${firmware[*]:+, OVMF}"
	t_start=$(date +%s.%N)
	timeout -k 5 "$TEST_TIMEOUT" qemu-system-x86_64 "${accel[@]}" -m 1G -smp 2 \
		"${firmware[@]}" -nodefaults -display none -no-reboot -serial "pipe:$RUN/serial" \
		-drive "file=$IMAGE,if=virtio,snapshot=on" -nic none \
		</dev/null >"$RUN/qemu.log" 2>&1 &
	QEMU_PID=$!

	if wait_for 0 "$BOOT_TIMEOUT" 'Linux version [^ ]+'; then
		kver=$(since 0 | grep -Eo 'Linux version [^ ]+' | head -n 1)
		loader=$(since 0 | grep -Eo '^SYSLINUX [0-9.]+|BdsDxe: starting Boot[0-9]+ "[^"]*"' | head -n 1)
		ok "$fw: the kernel boots from the disk (${loader:-no bootloader banner}; $kver)"
	else
		cat "$RUN/qemu.log" >>"$LOG"
		not_ok "$fw: the kernel boots from the disk ($WHY)"
		stop_vm
		return 1
	fi
	if wait_for 0 "$BOOT_TIMEOUT" 'vgpu-guest login: '; then
		boot_s=$(echo "$(date +%s.%N) $t_start" | awk '{ printf "%.1f", $1 - $2 }')
		ok "$fw: a login prompt on the serial console after $boot_s s"
	else
		not_ok "$fw: a login prompt on the serial console ($WHY)"
		stop_vm
		return 1
	fi

	from=$(mark)
	send root
	if wait_for "$from" 120 'root@vgpu-guest:~# ' &&
		since "$from" | grep -q '^vgpu guest image: Debian 12'; then
		ok "$fw: root logs in on ttyS0 without a password and sees the motd"
	else
		not_ok "$fw: root logs in on ttyS0 without a password ($WHY)"
		stop_vm
		return 1
	fi
	# kernel messages would interleave with the output from here on
	send "stty -echo"
	run_cmd quiet "dmesg -n 1" || true

	check "$fw: boot finished with no failed systemd unit" units \
		'systemctl is-system-running --wait; systemctl --failed --no-legend' \
		'[ "$RC" = 0 ] && grep -qx running "$F"'
	if run_cmd analyze 'systemd-analyze time; systemd-analyze blame | head -n 5'; then
		sed "s/^/# $fw: /" "$RUN/analyze.out"
	fi
	check "$fw: /boot is the FAT partition with this kernel and initrd" boot \
		'findmnt -n -o FSTYPE /boot; ls /boot/vmlinuz-$(uname -r) /boot/initrd.img-$(uname -r)' \
		'[ "$RC" = 0 ] && [ "$(head -n 1 "$F")" = vfat ]'
	check "$fw: vgpu_guest is loaded at boot (modules-load.d) for this kernel" module \
		'cat /sys/module/vgpu_guest/initstate; modinfo -F filename vgpu_guest; uname -r' \
		'[ "$RC" = 0 ] && grep -qx live "$F" &&
		 grep -q "^/lib/modules/$(tail -n 1 "$F")/updates/vgpu/vgpu_guest.ko$" "$F"'
	check "$fw: without a vGPU: no /dev/vgpu*, an empty /sys/class/vgpu, vgpu-status says so (exit 1)" \
		nodev 'ls /dev/vgpu* 2>/dev/null | wc -l; ls /sys/class/vgpu | wc -l; vgpu-status' \
		'[ "$RC" = 1 ] && [ "$(sed -n 1p "$F")" = 0 ] &&
		 [ "$(sed -n 2p "$F")" = 0 ] &&
		 grep -q "^pci: *no vGPU PCI device (5647:0001)" "$F" &&
		 grep -q "^device: *none" "$F" && grep -q "^driver: *vgpu_guest loaded" "$F"'
	check "$fw: the kernel log: nothing from vgpu_guest but the out-of-tree taint notes; no oops or warning" \
		dmesg 'dmesg | grep -E "BUG|Oops|WARNING|Call Trace|segfault|vgpu_guest|vgpu[0-9]"' \
		'! grep -viE "vgpu_guest: (loading out-of-tree module taints kernel|module verification failed: signature and/or required key missing)" "$F" | grep -q .'
	check "$fw: ldconfig -p resolves libcuda.so.1 and libcudart.so.13 to /usr/lib/vgpu" \
		ldconfig 'ldconfig -p | grep -E "libcuda\.so\.1 |libcudart\.so\.13 "' \
		'grep -q "libcuda.so.1 .*=> /usr/lib/vgpu/libcuda.so.1$" "$F" &&
		 grep -q "libcudart.so.13 .*=> /usr/lib/vgpu/libcudart.so.13$" "$F" &&
		 [ "$(grep -c "=>" "$F")" = 2 ]'
	# (NVIDIA's runtime opens libcuda.so.1 with dlopen: ldd does not
	# show it; ldconfig above says where it comes from)
	check "$fw: an unmodified nvcc -cudart shared program loads the runtime in /usr/lib/vgpu (ldd)" \
		ldd 'ldd /usr/lib/vgpu/examples/vector_add_rt' \
		'grep -q "libcudart.so.13 => /usr/lib/vgpu/libcudart.so.13" "$F" &&
		 ! grep -q "not found" "$F"'
	for p in vector_add_rt device_props_rt; do
		check "$fw: $p without a vGPU fails cleanly: a CUDA error naming /dev/vgpu0, no hang, no crash" \
			"$p" "timeout 120 $p" \
			'[ "$RC" -ge 1 ] && [ "$RC" -lt 124 ] &&
			 grep -q "^vgpu: no vGPU device at /dev/vgpu0" "$F" &&
			 grep -q "cudaErrorNoDevice" "$F"'
	done
	check "$fw: without VGPU_DEVICE too (the library asks for a vGPU instead)" \
		noenv 'env -u VGPU_DEVICE timeout 120 vector_add_rt' \
		'[ "$RC" -ge 1 ] && [ "$RC" -lt 124 ] && grep -q "cudaErrorNoDevice" "$F"'

	from=$(mark)
	send poweroff
	t0=$SECONDS
	while kill -0 "$QEMU_PID" 2>/dev/null && [ $((SECONDS - t0)) -lt "$CMD_TIMEOUT" ]; do
		sleep 0.5
	done
	if kill -0 "$QEMU_PID" 2>/dev/null; then
		not_ok "$fw: poweroff ends the VM (still running after $CMD_TIMEOUT s)"
	else
		wait "$QEMU_PID"
		rc=$?
		QEMU_PID=
		if [ "$rc" -eq 0 ]; then
			ok "$fw: poweroff ends the VM ($((SECONDS - t0)) s)"
		else
			not_ok "$fw: poweroff ends the VM (QEMU exit $rc)" "$RUN/qemu.log"
		fi
	fi
	total=$(echo "$(date +%s.%N) $t_start" | awk '{ printf "%.1f", $1 - $2 }')
	echo "# $fw: boot to the login prompt: $boot_s s; the whole run: $total s" \
		"(${VM_ACCEL:-tcg})"
	stop_vm
}


for fw in $FIRMWARES; do
	case $fw in
	bios) boot_and_check bios ;;
	uefi)
		if find_ovmf; then
			boot_and_check uefi
		else
			skip "uefi: boot with OVMF" "no OVMF (ovmf package) here and none could be downloaded"
		fi
		;;
	*) echo "GUEST_TEST_FIRMWARE: bios, uefi or both, not '$fw'" >&2; exit 2 ;;
	esac
done
echo "# image $(du -h "$IMAGE" | cut -f1) ($IMAGE)"
finish
