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
#   l2_accel                  prints kvm or tcg for L2 ($L2_ACCEL: tcg,
#                             or kvm/auto: KVM when kvm_load works, else
#                             TCG; vm-images/README.md says why)
#   l2_start DIR ACCEL CMD [UUID]  boots L2 in the background, running CMD
#                             (a shell command line) with the instance UUID
#                             as device "vgpu0"; console in DIR/console
#   l2_follow DIR [HOOK]      waits for L2 to finish under the watchdogs,
#                             calling HOOK DIR after every poll; sets
#                             L2_STATUS (the guest's exit status) or
#                             returns 2 (hung: killed), 3 (QEMU died), 4
#                             (stuck in L1's KVM: this L1 is done for)
#   l2_stop DIR               kills QEMU (bounded; 1: it cannot be killed)
#   l2_monitor DIR COMMAND    one HMP command; its answer in DIR/monitor.log
#   l2_has DIR REGEX          true when the console has a line matching it
#   l2_uptime                 seconds since L1 booted (for timings)
#   l2_accel_note ACCEL       a comment when L2 runs under TCG unasked
#   l2_relay FILE             L2's console: its TAP lines as our results
#   l1_restart DIR ACCEL      L2 is stuck in L1's KVM: asks the host for a
#                             fresh L1 and ends the test
#   l1_vgpu_create            the vGPU $NAME ($SMS SMs, 1 GiB) on a new
#                             mdev instance, UUID
#   local_client PROGRAM ARGS a program on $NAME through vgpud's socket
#
# Watchdogs: L2_UP_TIMEOUT (seconds to "vgpu-l2: up": 180 under KVM, 600
# under TCG; a normal boot takes 10-60 and 100-300 on a busy 2-core
# machine), L2_IDLE_TIMEOUT (seconds without console output once up:
# 240), L2_TIMEOUT (the whole run: 900 s under KVM, 1800 under TCG), and
# under KVM a soft lockup of QEMU in L1's kernel log (checked every 2 s).
# More knobs: L2_QEMU_ARGS (more QEMU arguments), L2_LOGLEVEL (L2's
# console log level, 4), L2_APPEND (more kernel arguments), L2_MEMORY
# (512M), L2_CPUS (1). QEMU always logs CPU resets (DIR/qemu-debug.log).
# When L1 has the toolkit's libraries mounted at $L2_SHARE (/cuda: the
# host's 9p share, share_mount in tests/vm/lib.sh), L2 gets them too, as
# its own read-only share "cuda".
L2_DIR=/vgpu/l2
L2_MEMORY=${L2_MEMORY:-512M}
L2_CPUS=${L2_CPUS:-1}
L2_SHARE=/cuda
L2_QEMU_PID=

l2_uptime()
{
	cut -d' ' -f1 /proc/uptime
}

kvm_load()
{
	local m args
	# On the console (l1_broke_in_kvm reads it): under TCG's SVM
	# emulation, L1 has been seen to reset between here and L2's boot.
	[ -c /dev/kvm ] || echo "# L1: loading KVM (kvm_amd nested=1)" >/dev/console
	while read -r m; do
		[ -z "$m" ] && continue
		[ -d "/sys/module/$m" ] && continue
		args=
		[ "$m" = kvm_amd ] && args="nested=1"
		# shellcheck disable=SC2086 # args is empty or one word
		insmod "/lib/modules/$m.ko" $args || return 1
	done </lib/modules/kvm-order
	[ -c /dev/kvm ] || return 1
}

l2_accel()
{
	case ${L2_ACCEL:-auto} in
	tcg) echo tcg ;;
	*) if kvm_load >/dev/null 2>&1; then echo kvm; else echo tcg; fi ;;
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
	! grep -qs " $L2_SHARE 9p " /proc/mounts ||
		dev_args="$dev_args -virtfs local,path=$L2_SHARE,mount_tag=cuda,security_model=none,readonly=on"
	mkfifo "$dir/monitor.in" "$dir/monitor.out"
	: >"$dir/console"
	echo "$accel" >"$dir/accel"
	dmesg | wc -l >"$dir/dmesg0"
	l2_uptime >"$dir/t0"
	# shellcheck disable=SC2086 # the argument lists are split on purpose
	qemu-system-x86_64 $accel_args -M pc -m "$L2_MEMORY" -smp "$L2_CPUS" \
		-nodefaults -display none -no-reboot -net none \
		-chardev "file,id=con,path=$dir/console" -serial chardev:con \
		-chardev "pipe,id=mon,path=$dir/monitor" \
		-mon chardev=mon,mode=readline \
		-kernel "$L2_DIR/vmlinuz" -initrd "$dir/initrd" \
		-append "console=ttyS0 panic=-1 loglevel=${L2_LOGLEVEL:-4} tsc=reliable ${L2_APPEND:-}" \
		-d cpu_reset,guest_errors -D "$dir/qemu-debug.log" \
		$dev_args ${L2_QEMU_ARGS:-} </dev/null >"$dir/qemu.log" 2>&1 &
	L2_QEMU_PID=$!
	cat "$dir/monitor.out" >"$dir/monitor.log" 2>/dev/null &
	echo $! >"$dir/monitor.pid"
}

# l2_resets DIR: CPU resets QEMU logged since L2 was up (a guest that
# resets itself, e.g. on a triple fault, ends QEMU: -no-reboot)
l2_resets()
{
	local now base
	now=$(grep -c '^CPU Reset' "$1/qemu-debug.log" 2>/dev/null)
	base=$(cat "$1/resets0" 2>/dev/null)
	echo $((${now:-0} - ${base:-0}))
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

# l2_alive PID: the process exists and is not a zombie; l2_dead PID
l2_alive()
{
	[ -n "$1" ] && [ -r "/proc/$1/stat" ] &&
		! awk '{ exit $3 != "Z" }' "/proc/$1/stat" 2>/dev/null
}

l2_dead()
{
	! l2_alive "$1"
}

# l2_stop DIR: stops QEMU (TERM, then KILL), bounded. 1 when it cannot be
# killed: a vCPU thread stuck in L1's KVM (a soft lockup) never returns
# to take the signal, and L1 cannot run L2 again.
l2_stop()
{
	local dir=$1 pid=$L2_QEMU_PID
	if l2_alive "$pid"; then
		kill -TERM "$pid" 2>/dev/null
		wait_for 10 "QEMU to exit" l2_dead "$pid" >/dev/null ||
			kill -KILL "$pid" 2>/dev/null
		wait_for 10 "QEMU to die" l2_dead "$pid" >/dev/null
	fi
	[ ! -f "$dir/monitor.pid" ] || kill "$(cat "$dir/monitor.pid")" 2>/dev/null
	rm -f "$dir/monitor.pid"
	if l2_alive "$pid"; then
		echo "# L1: QEMU (pid $pid) cannot be killed: stuck in L1's KVM"
		return 1
	fi
	[ -z "$pid" ] || wait "$pid" 2>/dev/null
	L2_QEMU_PID=
	return 0
}

# l2_stuck DIR: L1's kernel reports a soft lockup in a QEMU thread since
# l2_start (L2's vCPU stuck in L1's KVM: TCG's SVM emulation)
l2_stuck()
{
	dmesg | tail -n +$(($(cat "$1/dmesg0") + 1)) |
		grep -q 'soft lockup.*qemu-system'
}

# l2_follow DIR [HOOK]: see the top. Also writes DIR/up (seconds from the
# QEMU start to "vgpu-l2: up"), DIR/secs (to the exit) and, on a failure,
# DIR/why. Returns 0 (L2 exited; L2_STATUS), 2 (hung: killed), 3 (QEMU
# ended without L2's exit status), 4 (stuck in L1's KVM: L1's kernel
# reports a soft lockup in QEMU, or QEMU cannot be killed).
l2_follow()
{
	local dir=$1 hook=${2:-} t0 now size last_size=-1 last_change up_limit
	local total idle=${L2_IDLE_TIMEOUT:-240} st polls=0 up=0
	if [ "$(cat "$dir/accel")" = kvm ]; then
		up_limit=${L2_UP_TIMEOUT:-180}
		total=${L2_TIMEOUT:-900}
	else
		up_limit=${L2_UP_TIMEOUT:-600}
		total=${L2_TIMEOUT:-1800}
	fi
	t0=$(cat "$dir/t0")
	last_change=$t0
	L2_STATUS=
	while :; do
		polls=$((polls + 1))
		now=$(l2_uptime)
		size=$(wc -c <"$dir/console")
		if [ "$size" != "$last_size" ]; then
			last_size=$size
			last_change=$now
		fi
		if [ "$up" -eq 0 ] && l2_has "$dir" '^vgpu-l2: up '; then
			up=1
			echo "$now $t0" | awk '{ printf "%.1f\n", $1 - $2 }' >"$dir/up"
			st=$(l2_resets "$dir")
			echo "$st" >"$dir/resets0"
		fi
		st=$(tr -d '\r' <"$dir/console" |
			sed -n 's/^vgpu-l2: exit \([0-9]*\)$/\1/p' | tail -n 1)
		if [ -n "$st" ]; then
			# shellcheck disable=SC2034 # the caller's result
			L2_STATUS=$st
			echo "$now $t0" | awk '{ printf "%.1f\n", $1 - $2 }' >"$dir/secs"
			wait_for 30 "QEMU to exit" l2_dead "$L2_QEMU_PID" >/dev/null
			l2_stop "$dir" || return 4
			return 0
		fi
		if l2_dead "$L2_QEMU_PID"; then
			st=0
			wait "$L2_QEMU_PID" 2>/dev/null || st=$?
			L2_QEMU_PID=
			echo "QEMU exited (status $st) without an L2 exit status;" \
				"$(l2_resets "$dir") CPU resets since L2 was up" >"$dir/why"
			l2_stop "$dir"
			return 3
		fi
		st=
		if [ $((polls % 4)) -eq 0 ] && l2_stuck "$dir"; then
			st="L1's kernel reports a soft lockup in QEMU (L2's vCPU stuck in L1's KVM)"
		elif [ "$up" -eq 0 ] && awk -v n="$now" -v t="$t0" -v l="$up_limit" \
			'BEGIN { exit !(n - t > l) }'; then
			st="no 'vgpu-l2: up' in $up_limit s"
		# (before "up" the console is quiet: loglevel 4)
		elif [ "$up" -eq 1 ] && awk -v n="$now" -v c="$last_change" \
			-v l="$idle" 'BEGIN { exit !(n - c > l) }'; then
			st="no console output for $idle s"
		elif awk -v n="$now" -v t="$t0" -v l="$total" \
			'BEGIN { exit !(n - t > l) }'; then
			st="not finished in $total s"
		fi
		if [ -n "$st" ]; then
			echo "$st" >"$dir/why"
			l2_stop "$dir" || return 4
			case $st in
			*"soft lockup"*) return 4 ;;
			esac
			return 2
		fi
		[ -z "$hook" ] || "$hook" "$dir"
		sleep 0.5
	done
}

# l2_accel_note ACCEL: a comment saying why when L2 gets TCG though
# L2_ACCEL did not ask for it (L1 has no usable /dev/kvm).
l2_accel_note()
{
	if [ "$1" = tcg ] && [ "${L2_ACCEL:-auto}" != tcg ]; then
		echo "# L1: no usable /dev/kvm after kvm_amd: L2 runs under TCG"
	fi
}

# l2_relay FILE: L2's console (FILE): its TAP lines (numbered by its
# run.sh) as our results, "l2 SCRIPT: ...", everything else as comments.
l2_relay()
{
	tr -d '\r' <"$1" | awk '
		/^(not )?ok [0-9]+ - / {
			bad = /^not ok/
			sub(/^(not )?ok [0-9]+ - /, "")
			sub(/^l2_/, "")
			printf "%s - l2 %s\n", bad ? "not ok" : "ok", $0
			next }
		/^1\.\.[0-9]+$/ { print "# l2 plan " $0; next }
		{ print "# l2: " $0 }'
}

# l1_restart DIR ACCEL: L2's run (DIR) is stuck in L1's KVM: a vCPU stuck
# there takes one of L1's CPUs and the instance with it, so only a fresh
# L1 can go on. The host side (run-l1.sh, vm_l2.sh, vm_libvirt.sh) boots
# L1 again when it sees the "vgpu-l1: restart" line. Ends the test.
l1_restart()
{
	dmesg | grep 'soft lockup' | tail -n 2 | sed 's/^/# L1: /'
	echo "vgpu-l1: restart: L2 is stuck in L1's KVM"
	not_ok "L2 ($2) runs its tests ($(cat "$1/why"))"
	finish
}

# l1_vgpu_create: the vGPU $NAME ($SMS SMs, 1 GiB) bound to a new mdev
# instance (vgpu-admin create -f BP --mdev UUID), two results; UUID is
# the instance's. The test ends when either fails.
l1_vgpu_create()
{
	cat >"$TMP/bp.yaml" <<-BP
		version: 1
		name: $NAME
		sms: $SMS
		memory: 1G
	BP
	UUID=$(new_uuid)
	check "vgpu-admin create -f BP --mdev UUID ($SMS SMs, 1 GiB)" \
		vadmin create -f "$TMP/bp.yaml" --mdev "$UUID" || finish
	check "the instance is on the mdev bus" mdev_exists "$UUID" || finish
}

# local_client PROGRAM ARGS: a program on the vGPU $NAME through the local
# transport (vgpud's client socket), as on the host
local_client()
{
	VGPU=$NAME VGPU_SOCKET=$RUN_DIR/client.sock LD_LIBRARY_PATH=/vgpu/lib \
		timeout 300 "$@"
}
