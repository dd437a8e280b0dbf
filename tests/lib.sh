# shellcheck shell=bash
# shellcheck disable=SC2034 # variables for the scripts that source this
# SPDX-License-Identifier: MIT
#
# Helpers for tests/integration/*.sh (source it, then call tap_init, or
# vgpu_test_start when the script needs a vgpud):
#   TAP output        tap_ok, tap_not_ok, tap_skip, tap_run, tap_done
#   vgpud             vgpu_test_start [TITLE [vgpud args]], vgpu_start
#                     [vgpud args], vgpu_stop, vadmin ARGS
#   clients           client VGPU CMD..., client_bg OUT VGPU CMD...
#   vgpu-admin list   vgpu_field VGPU COLUMN
#   waiting           wait_for SECONDS DESCRIPTION CMD...
# Everything started here is killed by an EXIT trap, also on failure, and
# every wait is bounded, so a broken daemon fails CI instead of hanging it.
#
# Knobs (environment):
#   BUILD=DIR             build output (default build, from the repo root)
#   VGPU_TEST_VALGRIND=1  run vgpud and its workers under valgrind
#   VGPU_TEST_KEEP=1      keep the run and log directories for a post-mortem

VGPU_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in
/*) ;;
*) BUILD="$VGPU_SRC/$BUILD" ;;
esac
VGPUD="$BUILD/bin/vgpud"
VGPU_ADMIN="$BUILD/bin/vgpu-admin"
VGPU_WORKER="$BUILD/bin/vgpu-worker"
VGPU_LIB="$BUILD/lib"
# NVIDIA's runtime and libraries, for programs built -cudart shared
CUDA_LIB="${CUDA_HOME:-/usr/local/cuda}/lib64"
PROGRAMS="$BUILD/tests/programs"
HOSTILE="$BUILD/tests/hostile"
export VGPU_KERNEL_DIR="${VGPU_KERNEL_DIR:-$BUILD/kernels}"

PROGRAM_TIMEOUT=${PROGRAM_TIMEOUT:-120} # seconds for one client program
ADMIN_TIMEOUT=${ADMIN_TIMEOUT:-60}      # one vgpu-admin call

TAP_N=0
TAP_FAILED=0
BG_PIDS=()
VGPUD_PID=
RUN_DIR=
TEST_TMP=

# ---- TAP -----------------------------------------------------------------

# Sets up the scratch directory and the cleanup trap; call it first.
tap_init()
{
	TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-test.XXXXXX")
	chmod 0755 "$TEST_TMP"
	trap cleanup EXIT
	trap 'exit 130' INT TERM
}

tap_ok()
{
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $1"
}

# tap_not_ok NAME [DIAGNOSTIC LINE...]
tap_not_ok()
{
	local name=$1 line
	shift
	TAP_N=$((TAP_N + 1))
	TAP_FAILED=$((TAP_FAILED + 1))
	echo "not ok $TAP_N - $name"
	for line in "$@"; do
		echo "# $line"
	done
}

tap_skip()
{
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $1 # SKIP $2"
}

# Prints stdin as TAP diagnostics.
tap_diag()
{
	sed 's/^/# /'
}

# tap_check NAME COMMAND...: ok when the command succeeds (its output is
# not captured). Returns 0 either way; the status is in TAP_RC.
tap_check()
{
	local name=$1
	shift
	TAP_RC=0
	"$@" || TAP_RC=$?
	if [ "$TAP_RC" -eq 0 ]; then
		tap_ok "$name"
	else
		tap_not_ok "$name" "failed ($TAP_RC): $*"
	fi
	return 0
}

# run_bounded COMMAND...: a program under `timeout`; a shell function of
# ours (client, vadmin, ...) as it is, since each bounds its own waits.
run_bounded()
{
	if [ "$(type -t "$1")" = function ]; then
		"$@"
	else
		timeout -k 5 "$PROGRAM_TIMEOUT" "$@"
	fi
}

# tap_run NAME COMMAND...: runs the command with output captured (in
# TAP_LOG) and a timeout; ok when it exits 0. Shows the last line of its
# output, or the last 20 lines when it failed. Returns 0 either way (so
# `set -e` scripts go on); the command's status is in TAP_RC.
tap_run()
{
	local name=$1
	shift
	TAP_LOG="$TEST_TMP/run.$((TAP_N + 1)).log"
	TAP_RC=0
	run_bounded "$@" >"$TAP_LOG" 2>&1 || TAP_RC=$?
	if [ "$TAP_RC" -eq 0 ]; then
		tap_ok "$name"
		tail -n 1 "$TAP_LOG" | tap_diag
	else
		if [ "$TAP_RC" -eq 124 ]; then
			echo "timed out after $PROGRAM_TIMEOUT s" >>"$TAP_LOG"
		fi
		tap_not_ok "$name" "exit status $TAP_RC: $*"
		tail -n 20 "$TAP_LOG" | tap_diag
	fi
	return 0
}

# tap_expect NAME STATUS PATTERN COMMAND...: ok when the command exits
# with STATUS and its output (stdout and stderr) matches the extended
# regular expression PATTERN (case-insensitive; "" matches anything).
# The output is left in TAP_LOG.
tap_expect()
{
	local name=$1 want=$2 pattern=$3
	shift 3
	TAP_LOG="$TEST_TMP/run.$((TAP_N + 1)).log"
	TAP_RC=0
	run_bounded "$@" >"$TAP_LOG" 2>&1 || TAP_RC=$?
	if [ "$TAP_RC" -ne "$want" ]; then
		tap_not_ok "$name" "exit status $TAP_RC, expected $want: $*"
		tail -n 20 "$TAP_LOG" | tap_diag
	elif [ -n "$pattern" ] && ! grep -Eqi -- "$pattern" "$TAP_LOG"; then
		tap_not_ok "$name" "output does not match /$pattern/: $*"
		tail -n 20 "$TAP_LOG" | tap_diag
	else
		tap_ok "$name"
		if [ -n "$pattern" ]; then
			grep -Ei -m 1 -- "$pattern" "$TAP_LOG" | tap_diag
		else
			head -n 1 "$TAP_LOG" | tap_diag
		fi
	fi
	return 0
}

# Ends the script: the plan, then the exit status.
tap_done()
{
	echo "1..$TAP_N"
	[ "$TAP_FAILED" -eq 0 ]
	exit $?
}

# Exits with the whole script skipped (still valid TAP).
tap_skip_all()
{
	echo "1..0 # SKIP $1"
	exit 0
}

# ---- prerequisites ----------------------------------------------------

# Skips the script unless it can do what the tests need.
need_root_and_build()
{
	[ "$(id -u)" -eq 0 ] || tap_skip_all "needs root (vgpud's admin socket is root-only)"
	local f
	for f in "$VGPUD" "$VGPU_ADMIN" "$VGPU_WORKER" "$VGPU_LIB/libcuda.so.1"; do
		[ -e "$f" ] || tap_skip_all "$f is not built"
	done
}

# The unprivileged user vgpud runs its workers as.
ensure_vgpu_user()
{
	id vgpu >/dev/null 2>&1 && return 0
	useradd --system --no-create-home --shell /usr/sbin/nologin vgpu
}

# ---- waiting ----------------------------------------------------------

# wait_for SECONDS DESCRIPTION COMMAND...: polls until the command
# succeeds; 1 (with a message) after SECONDS, or when vgpud died.
wait_for()
{
	local secs=$1 what=$2 end
	shift 2
	end=$((SECONDS + secs))
	while ! "$@" 2>/dev/null; do
		if [ -n "$VGPUD_PID" ] && ! kill -0 "$VGPUD_PID" 2>/dev/null; then
			echo "# vgpud exited while waiting for $what" >&2
			return 1
		fi
		if [ "$SECONDS" -ge "$end" ]; then
			echo "# timed out after $secs s waiting for $what" >&2
			return 1
		fi
		sleep 0.1
	done
}

# kill_workers: SIGKILL the worker pids in WORKERS (workers adopted or
# kept by a restarted vgpud are not its children, so its cleanup misses
# them); for a script's EXIT trap: trap 'kill_workers; cleanup' EXIT
WORKERS=()
kill_workers()
{
	local p
	for p in "${WORKERS[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
	done
}

# wait_pid PID SECONDS: waits for a child to exit; its status, or 124.
wait_pid()
{
	local pid=$1 end=$((SECONDS + $2)) rc=0
	while kill -0 "$pid" 2>/dev/null; do
		# a zombie child still answers kill -0; `wait` reaps it below
		if [ "$(ps -o stat= -p "$pid" 2>/dev/null)" = Z ]; then
			break
		fi
		if [ "$SECONDS" -ge "$end" ]; then
			return 124
		fi
		sleep 0.1
	done
	wait "$pid" 2>/dev/null || rc=$?
	return "$rc"
}

# ---- vgpud ------------------------------------------------------------

vgpud_alive()
{
	[ -n "$VGPUD_PID" ] && kill -0 "$VGPUD_PID" 2>/dev/null
}

# The valgrind command line used for vgpud and (through
# VGPU_WORKER_WRAPPER) for its workers; logs land in $VALGRIND_DIR.
valgrind_cmd()
{
	echo "valgrind --leak-check=full --show-leak-kinds=definite,indirect" \
		"--errors-for-leak-kinds=definite,indirect --error-exitcode=1" \
		"--log-file=$VALGRIND_DIR/$1.%p.log"
}

# vgpu_start [vgpud args...]: a vgpud of our own on a private run dir
# with the simulator; waits (bounded) until both sockets exist.
vgpu_start()
{
	local wrap=()

	ensure_vgpu_user
	RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-run.XXXXXX")
	chmod 0755 "$RUN_DIR" # other users reach client.sock through it
	VGPUD_LOG="$TEST_TMP/vgpud.log"
	if [ "${VGPU_TEST_VALGRIND:-0}" = 1 ]; then
		VALGRIND_DIR="$TEST_TMP/valgrind"
		mkdir -p "$VALGRIND_DIR"
		chmod 1777 "$VALGRIND_DIR" # workers write here as vgpu
		read -r -a wrap <<<"$(valgrind_cmd vgpud)"
		VGPU_WORKER_WRAPPER="$(valgrind_cmd worker)"
		export VGPU_WORKER_WRAPPER
	fi
	"${wrap[@]}" "$VGPUD" --run-dir "$RUN_DIR" --backend sim \
		--worker-user vgpu "$@" >"$VGPUD_LOG" 2>&1 &
	VGPUD_PID=$!
	if ! wait_for "${VGPUD_START_TIMEOUT:-60}" "vgpud's sockets" \
		test -S "$RUN_DIR/admin.sock" -a -S "$RUN_DIR/client.sock"; then
		echo "# vgpud log:"
		tail -n 30 "$VGPUD_LOG" | tap_diag
		return 1
	fi
}

# vgpu_test_start [TITLE [vgpud args...]]: how every script that needs
# vgpud begins: scratch dir and traps, root and the build checked, then
# vgpu_start reported as the first TAP line (TITLE, default "vgpud starts
# on the simulator"). Nothing else can be tested without a vgpud, so a
# failed start ends the script. Skip checks and knobs go before the call.
vgpu_test_start()
{
	local title=${1:-vgpud starts on the simulator}

	shift || true
	tap_init
	need_root_and_build
	if ! vgpu_start "$@"; then
		tap_not_ok "$title"
		tap_done
	fi
	tap_ok "$title"
}

# Stops vgpud with SIGTERM and returns its exit status (124: it did not
# exit in time and was killed).
vgpu_stop()
{
	local rc=0 pid=$VGPUD_PID
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	wait_pid "$pid" "${VGPUD_STOP_TIMEOUT:-30}" || rc=$?
	if [ "$rc" -eq 124 ]; then
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	VGPUD_PID=
	return "$rc"
}

# The closing checks most suites share: vgpud is still there (else its
# log's tail as diagnostics); vgpud exits 0 on SIGTERM.
tap_vgpud_alive()
{
	if vgpud_alive; then
		tap_ok "vgpud is alive"
	else
		tap_not_ok "vgpud is alive"
		tail -n 20 "$VGPUD_LOG" | tap_diag
	fi
}

tap_vgpud_stops()
{
	local rc=0

	vgpu_stop || rc=$?
	if [ "$rc" -eq 0 ]; then
		tap_ok "vgpud exits 0 on SIGTERM"
	else
		tap_not_ok "vgpud exits 0 on SIGTERM" "status $rc"
	fi
}

# vadmin ARGS...: vgpu-admin on our vgpud, bounded.
vadmin()
{
	timeout -k 5 "$ADMIN_TIMEOUT" "$VGPU_ADMIN" --run-dir "$RUN_DIR" "$@"
}

# vgpu_field VGPU COLUMN: one cell of `vgpu-admin list`, e.g.
# `vgpu_field a USED` -> "2.0 MiB". Cells may hold spaces ("sim
# (simulated)", "1.0 GiB"), so columns are cut where the header's names
# start (the table is left-aligned).
vgpu_field()
{
	vadmin list | awk -v name="$1" -v col="$2" '
		function trim(s) {
			sub(/^ +/, "", s)
			sub(/ +$/, "", s)
			return s
		}
		NR == 1 {
			from = 1
			for (i = 1; i <= NF; i++) {
				start[i] = index(substr($0, from), $i) + from - 1
				from = start[i] + length($i)
				if ($i == col)
					want = i
			}
			ncols = NF
			next
		}
		want && trim(substr($0, start[1], start[2] - start[1])) == name {
			if (want == ncols)
				print trim(substr($0, start[want]))
			else
				print trim(substr($0, start[want],
						  start[want + 1] - start[want]))
			found = 1
			exit
		}
		END { exit found ? 0 : 1 }'
}

# vgpu_worker_pid VGPU: the pid of its worker, from `vgpu-admin show`.
vgpu_worker_pid()
{
	vadmin show "$1" | sed -n 's/.*(worker pid \([0-9]*\)).*/\1/p'
}

# ---- clients ----------------------------------------------------------

# client VGPU COMMAND...: runs a program as a client of that vGPU, with
# our libcuda.so.1 (and NVIDIA's runtime) and a timeout.
client()
{
	local vgpu=$1
	shift
	VGPU="$vgpu" VGPU_SOCKET="$RUN_DIR/client.sock" \
		LD_LIBRARY_PATH="$VGPU_LIB:$CUDA_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		timeout -k 5 "$PROGRAM_TIMEOUT" "$@"
}

# client_bg OUTFILE VGPU COMMAND...: the same in the background, with no
# timeout wrapper, so that BG_PID is the program itself (a test may kill
# it); the caller bounds its wait (wait_pid) and the EXIT trap kills it.
client_bg()
{
	local out=$1 vgpu=$2
	shift 2
	(
		export VGPU="$vgpu" VGPU_SOCKET="$RUN_DIR/client.sock"
		export LD_LIBRARY_PATH="$VGPU_LIB:$CUDA_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
		exec "$@"
	) >"$out" 2>&1 &
	BG_PID=$!
	BG_PIDS+=("$BG_PID")
}

# bg OUTFILE COMMAND...: any program in the background, as client_bg.
bg()
{
	local out=$1
	shift
	(exec "$@") >"$out" 2>&1 &
	BG_PID=$!
	BG_PIDS+=("$BG_PID")
}

# tap_wait_pid NAME PID SECONDS [OUT]: ok when background program PID
# exits 0 within SECONDS; else not ok with its status (124: still
# running) and the tail of OUT. The status is left in TAP_RC.
tap_wait_pid()
{
	TAP_RC=0
	wait_pid "$2" "$3" || TAP_RC=$?
	if [ "$TAP_RC" -eq 0 ]; then
		tap_ok "$1"
	else
		tap_not_ok "$1" "status $TAP_RC"
		[ -z "${4:-}" ] || tail -n 5 "$4" | tap_diag
	fi
	return 0
}

# Stops every background program started so far (TERM, then waits up to
# 20 s for each) and forgets them.
stop_bg()
{
	local p
	for p in "${BG_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${BG_PIDS[@]}"; do
		wait_pid "$p" 20 >/dev/null 2>&1 || true
	done
	BG_PIDS=()
}

# prog NAME: path of a test program.
prog()
{
	echo "$PROGRAMS/$1"
}

# ---- cleanup ----------------------------------------------------------

# Kills whatever this script started (by pid), stops vgpud and its
# workers, and removes the scratch directories.
cleanup()
{
	local rc=$? pid kids=()

	for pid in "${BG_PIDS[@]}"; do
		kill -KILL "$pid" 2>/dev/null || true
	done
	if vgpud_alive; then
		mapfile -t kids < <(pgrep -P "$VGPUD_PID" 2>/dev/null || true)
		kill -TERM "$VGPUD_PID" 2>/dev/null || true
		wait_pid "$VGPUD_PID" 10 >/dev/null 2>&1 || true
		kill -KILL "$VGPUD_PID" 2>/dev/null || true
		for pid in "${kids[@]}"; do
			kill -KILL "$pid" 2>/dev/null || true
		done
	fi
	if [ "${VGPU_TEST_KEEP:-0}" = 1 ]; then
		echo "# kept $TEST_TMP and $RUN_DIR" >&2
	else
		[ -n "$RUN_DIR" ] && rm -rf "$RUN_DIR"
		[ -n "$TEST_TMP" ] && rm -rf "$TEST_TMP"
	fi
	exit "$rc"
}
