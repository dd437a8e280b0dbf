# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Sourced by scripts/gpu-check.sh and scripts/rt-bench.sh: a private vgpud on
# the cuda backend (MPS, as in production). The caller sets BIN (the built
# binaries) and LOG (a log folder); these set RUN (the run directory) and
# VGPUD_PID.
RUN=
VGPUD_PID=

start_vgpud() { # [vgpud options...]: a fresh run directory
	RUN=$(mktemp -d /tmp/vgpu-gpu.XXXXXX)
	chmod 755 "$RUN"
	restart_vgpud "$@"
}

restart_vgpud() { # [vgpud options...]: the same run directory (and state)
	# VGPUD_WRAP: a command vgpud runs under (wd-bench's taskset)
	${VGPUD_WRAP:-} "$BIN/vgpud" --run-dir "$RUN" --backend cuda --worker-user vgpu "$@" \
		>>"$LOG/vgpud.log" 2>&1 &
	VGPUD_PID=$!
	for _ in $(seq 300); do
		# answering on admin.sock, not merely a socket file (a killed
		# vgpud leaves its files behind)
		"$BIN/vgpu-admin" --run-dir "$RUN" list >/dev/null 2>&1 &&
			return 0
		kill -0 "$VGPUD_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "vgpud did not start; log:" >&2
	tail -20 "$LOG/vgpud.log" >&2
	exit 1
}

stop_vgpud() {
	[ -n "$VGPUD_PID" ] || return 0
	kill -TERM "$VGPUD_PID" 2>/dev/null
	timeout 30 tail --pid="$VGPUD_PID" -f /dev/null
	wait "$VGPUD_PID" 2>/dev/null
	VGPUD_PID=
	rm -rf "$RUN"
}
