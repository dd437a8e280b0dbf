# shellcheck shell=dash
# SPDX-License-Identifier: MIT
#
# Helpers for the L1 side of the nested test (tests/vm-l2/l1_*.sh, run by
# busybox sh inside the test VM; source after tests/vm/lib.sh): start the
# L2 guest in QEMU with an mdev instance as a vfio-pci device, follow its
# console under watchdogs, talk to its monitor.
#
#   kvm_load                  Debian's kvm + kvm_amd (nested=1); true when
#                             /dev/kvm works
#   l2_accel                  prints kvm or tcg for L2 ($L2_ACCEL: kvm,
#                             tcg, or auto = tcg; see vm-images/README.md)
#   l2_start DIR ACCEL CMD [UUID]  boots L2 in the background, running CMD
#                             (a shell command line) with the instance UUID
#                             as device "vgpu0"; console in DIR/console
#   l2_follow DIR [HOOK]      waits for L2 to finish under the watchdogs,
#                             calling HOOK DIR after every poll; sets
#                             L2_STATUS (the guest's exit status) or
#                             returns 2 (hung: killed), 3 (QEMU died)
#   l2_stop DIR               kills QEMU (bounded)
#   l2_monitor DIR COMMAND    one HMP command; its answer in DIR/monitor.log
#   l2_has DIR REGEX          true when the console has a line matching it
#   l2_uptime                 seconds since L1 booted (for timings)
#
# Watchdogs: L2_UP_TIMEOUT (seconds to "vgpu-l2: up": 60 under KVM, 240
# under TCG), L2_IDLE_TIMEOUT (seconds without console output: 180),
# L2_TIMEOUT (the whole run: 900).

L2_DIR=/vgpu/l2
L2_MEMORY=${L2_MEMORY:-512M}
L2_CPUS=${L2_CPUS:-1}
L2_QEMU_PID=

l2_uptime()
{
	cut -d' ' -f1 /proc/uptime
}

kvm_load()
{
	local m args
	for m in $(cat /lib/modules/kvm-order); do
		[ -d "/sys/module/$m" ] && continue
		args=
		[ "$m" = kvm_amd ] && args="nested=1"
		# shellcheck disable=SC2086 # args is empty or one word
		insmod "/lib/modules/$m.ko" $args || return 1
	done
	[ -c /dev/kvm ] || return 1
}

l2_accel()
{
	case ${L2_ACCEL:-auto} in
	kvm) echo kvm ;;
	*) echo tcg ;;
	esac
}

# l2_start DIR ACCEL CMD [UUID]
l2_start()
{
	local dir=$1 accel=$2 cmd=$3 uuid=${4:-} accel_args dev_args=
	rm -rf "$dir"
	mkdir -p "$dir/cmd/vgpu"
	printf '%s\n' "$cmd" >"$dir/cmd/vgpu/cmd"
	(cd "$dir/cmd" && find . | cpio -o -H newc 2>/dev/null) | gzip -1 \
		>"$dir/cmd.cpio.gz"
	cat "$L2_DIR/initrd.gz" "$dir/cmd.cpio.gz" >"$dir/initrd"
	case $accel in
	kvm) accel_args="-accel kvm -cpu host" ;;
	*) accel_args="-accel tcg -cpu max" ;;
	esac
	[ -z "$uuid" ] ||
		dev_args="-device vfio-pci,sysfsdev=/sys/bus/mdev/devices/$uuid,id=vgpu0,rombar=0"
	mkfifo "$dir/monitor.in" "$dir/monitor.out"
	: >"$dir/console"
	echo "$accel" >"$dir/accel"
	l2_uptime >"$dir/t0"
	# shellcheck disable=SC2086 # the argument lists are split on purpose
	qemu-system-x86_64 $accel_args -M pc -m "$L2_MEMORY" -smp "$L2_CPUS" \
		-nodefaults -display none -no-reboot -net none \
		-chardev "file,id=con,path=$dir/console" -serial chardev:con \
		-chardev "pipe,id=mon,path=$dir/monitor" \
		-mon chardev=mon,mode=readline \
		-kernel "$L2_DIR/vmlinuz" -initrd "$dir/initrd" \
		-append "console=ttyS0 panic=-1 loglevel=4 tsc=reliable" \
		$dev_args </dev/null >"$dir/qemu.log" 2>&1 &
	L2_QEMU_PID=$!
	cat "$dir/monitor.out" >"$dir/monitor.log" 2>/dev/null &
	echo $! >"$dir/monitor.pid"
}

l2_has()
{
	tr -d '\r' <"$1/console" | grep -Eq "$2"
}

# l2_monitor DIR COMMAND: sends one HMP command (the answer is appended to
# DIR/monitor.log by the reader l2_start left running).
l2_monitor()
{
	printf '%s\n' "$2" >"$1/monitor.in"
}

l2_stop()
{
	local dir=$1
	if [ -n "$L2_QEMU_PID" ] && kill -0 "$L2_QEMU_PID" 2>/dev/null; then
		kill -TERM "$L2_QEMU_PID" 2>/dev/null
		wait_for 10 "QEMU to exit" sh -c "! kill -0 $L2_QEMU_PID 2>/dev/null" ||
			kill -KILL "$L2_QEMU_PID" 2>/dev/null
		wait_for 10 "QEMU to die" sh -c "! kill -0 $L2_QEMU_PID 2>/dev/null"
	fi
	[ -z "$L2_QEMU_PID" ] || wait "$L2_QEMU_PID" 2>/dev/null
	L2_QEMU_PID=
	[ ! -f "$dir/monitor.pid" ] || kill "$(cat "$dir/monitor.pid")" 2>/dev/null
	rm -f "$dir/monitor.pid"
	return 0
}

# l2_follow DIR [HOOK]: see the top. Also writes DIR/up (seconds from the
# QEMU start to "vgpu-l2: up") and DIR/secs (to the exit).
l2_follow()
{
	local dir=$1 hook=${2:-} t0 now size last_size=-1 last_change up_limit
	local total=${L2_TIMEOUT:-900} idle=${L2_IDLE_TIMEOUT:-180} st
	if [ "$(cat "$dir/accel")" = kvm ]; then
		up_limit=${L2_UP_TIMEOUT:-60}
	else
		up_limit=${L2_UP_TIMEOUT:-240}
	fi
	t0=$(cat "$dir/t0")
	last_change=$t0
	L2_STATUS=
	while :; do
		now=$(l2_uptime)
		size=$(wc -c <"$dir/console")
		if [ "$size" != "$last_size" ]; then
			last_size=$size
			last_change=$now
		fi
		if [ ! -f "$dir/up" ] && l2_has "$dir" '^vgpu-l2: up '; then
			echo "$now $t0" | awk '{ printf "%.1f\n", $1 - $2 }' >"$dir/up"
		fi
		st=$(tr -d '\r' <"$dir/console" |
			sed -n 's/^vgpu-l2: exit \([0-9]*\)$/\1/p' | tail -n 1)
		if [ -n "$st" ]; then
			L2_STATUS=$st
			echo "$now $t0" | awk '{ printf "%.1f\n", $1 - $2 }' >"$dir/secs"
			wait_for 30 "QEMU to exit" \
				sh -c "! kill -0 $L2_QEMU_PID 2>/dev/null"
			l2_stop "$dir"
			return 0
		fi
		if ! kill -0 "$L2_QEMU_PID" 2>/dev/null; then
			echo "QEMU exited without an L2 exit status" >"$dir/why"
			l2_stop "$dir"
			return 3
		fi
		if awk -v n="$now" -v t="$t0" -v l="$up_limit" -v u="$([ -f "$dir/up" ] && echo 1 || echo 0)" \
			'BEGIN { exit !(u == 0 && n - t > l) }'; then
			echo "no 'vgpu-l2: up' in $up_limit s" >"$dir/why"
			l2_stop "$dir"
			return 2
		fi
		if awk -v n="$now" -v c="$last_change" -v l="$idle" \
			'BEGIN { exit !(n - c > l) }'; then
			echo "no console output for $idle s" >"$dir/why"
			l2_stop "$dir"
			return 2
		fi
		if awk -v n="$now" -v t="$t0" -v l="$total" \
			'BEGIN { exit !(n - t > l) }'; then
			echo "not finished in $total s" >"$dir/why"
			l2_stop "$dir"
			return 2
		fi
		[ -z "$hook" ] || "$hook" "$dir"
		sleep 0.5
	done
}
