#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# Save and restore on the simulator (two simulated GPUs):
#   - suspend to a file and resume: a client that wrote patterns (copies,
#     a memset, kernels) reads them back through its old pointers and
#     goes on launching; a call it makes while the vGPU is suspended
#     waits for the resume; the vGPU's SMs and memory are free meanwhile
#     and new clients are refused with a sentence;
#   - suspend to host memory and resume on the other simulated GPU;
#   - bad files, each refused with a sentence naming what is wrong and
#     the vGPU left suspended as it was (then resumed from the good
#     file): truncated, a flipped bit, another version, another vGPU's
#     state, another state of the same vGPU, not a regular file, a
#     missing file; and a suspend to a directory;
#   - refusals: suspend of a suspended vGPU, resume of a running one, no
#     such vGPU, no room to resume into;
#   - a suspended vGPU destroyed with a client waiting: it gets an error;
#   - progress on stderr, --json, state.json across a vgpud restart.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
export VGPU_SIM_GPUS=2
vgpu_test_start "vgpud starts on the simulator (2 GPUs)"

tap_run "create vGPU a (16 SMs, 256 MiB)" vadmin create a --sms 16 \
	--memory 256M --gpu 0
tap_run "create vGPU b (8 SMs)" vadmin create b --sms 8 --memory 64M --gpu 0

# hold OUT DIR [MIB]: a state_pattern client of a in the background
hold()
{
	mkdir -p "$2"
	client_bg "$1" a "$(prog state_pattern)" hold "$2" "${3:-4}"
	HOLD=$BG_PID
	wait_for 60 "state_pattern to be ready" test -e "$2/ready" || true
}

# finish DIR OUT TITLE: let it read back, report
finish()
{
	local rc=0
	touch "$1/go"
	wait_pid "$HOLD" 60 || rc=$?
	if [ "$rc" -eq 0 ] && grep -q "contents intact" "$2"; then
		tap_ok "$3"
		grep "intact\|suspended" "$2" | tap_diag
	else
		tap_not_ok "$3" "exit status $rc"
		tail -n 5 "$2" | tap_diag
	fi
}

# ---- round trip through a file ---------------------------------------------
D="$TEST_TMP/rt"
out="$TEST_TMP/rt.out"
hold "$out" "$D" 8
F="$TEST_TMP/a.vgpustate"
tap_expect "suspend a to a file" 0 "suspended vGPU a: .* saved" \
	vadmin suspend a --to "$F"
tap_expect "progress went to stderr" 0 "saving a: .* of .*\(100%\)" \
	cat "$TAP_LOG"
tap_expect "list shows a suspended" 0 "^suspended$" vgpu_field a STATE
tap_expect "the state file is 0600" 0 "^600$" stat -c %a "$F"
touch "$D/suspended"
sleep 1.5
tap_expect "a's SMs and memory are free: c takes all of GPU 0 but b's" 0 \
	"created vGPU c" vadmin create c --sms 120 --memory 1G --gpu 0
tap_expect "a new client of a suspended vGPU is refused" 1 "is suspended" \
	client a "$(prog vector_add)" 1024
tap_expect "resume refused while c holds the room on GPU 0" 1 \
	"cannot go there: asked for 16 SMs" vadmin resume a --gpu 0
tap_run "destroy c" vadmin destroy c
tap_expect "resume a from its file" 0 "resumed vGPU a on GPU 0" \
	vadmin resume a
tap_expect "list shows a running" 0 "^running$" vgpu_field a STATE
finish "$D" "$out" "the client reads its patterns back through its old pointers and launches on"
if grep -Eq "returned after ([1-9]|[0-9]+\.[0-9]*[1-9])" "$out"; then
	tap_ok "a call made while suspended waited for the resume"
else
	tap_not_ok "a call made while suspended waited for the resume" \
		"$(grep suspended "$out" || echo 'no such line')"
fi

# ---- host memory, the other GPU ---------------------------------------------
D="$TEST_TMP/mem"
out="$TEST_TMP/mem.out"
hold "$out" "$D"
tap_expect "suspend a to host memory" 0 "suspended vGPU a" \
	vadmin suspend a --json
tap_expect "resume a on GPU 1 (--json)" 0 '"to_gpu": 1' \
	vadmin resume a --gpu 1 --json
tap_expect "list shows a on GPU 1" 0 "^1$" vgpu_field a GPU
finish "$D" "$out" "the client's memory came back on the other simulated GPU"

# ---- bad files -----------------------------------------------------------------
D="$TEST_TMP/bad"
out="$TEST_TMP/bad.out"
hold "$out" "$D"
G="$TEST_TMP/good.vgpustate"
tap_run "suspend a to a file again" vadmin suspend a --to "$G"
size=$(stat -c %s "$G")
bad() { # NAME: a copy of the good file to damage
	cp "$G" "$TEST_TMP/$1"
	echo "$TEST_TMP/$1"
}
f=$(bad trunc)
truncate -s $((size / 2)) "$f"
tap_expect "a truncated file is refused" 1 "truncated" \
	vadmin resume a --from "$f"
f=$(bad flip)
printf '\x55' | dd of="$f" bs=1 seek=$((size - 10000)) conv=notrunc \
	2>/dev/null
tap_expect "a flipped bit is refused (checksum of the memory record)" 1 \
	"memory at 0x.*checksum mismatch" vadmin resume a --from "$f"
f=$(bad hdr)
printf '\x01' | dd of="$f" bs=1 seek=20 conv=notrunc 2>/dev/null
tap_expect "a damaged header is refused" 1 "header checksum mismatch" \
	vadmin resume a --from "$f"
f=$(bad version)
python3 - "$f" <<'EOF'
import struct, sys
sys.path.insert(0, "")
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[8:10] = struct.pack("<H", 2)            # major 2
b[252:256] = b"\0\0\0\0"
# CRC32C of the header with its crc field 0
def crc32c(data):
    crc = 0xffffffff
    for x in data:
        crc ^= x
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 & -(crc & 1))
    return crc ^ 0xffffffff
b[252:256] = struct.pack("<I", crc32c(bytes(b[:256])))
open(p, "wb").write(b)
EOF
tap_expect "another version is refused" 1 "version 2.0" \
	vadmin resume a --from "$f"
tap_expect "a file that is not a state file is refused" 1 \
	"not a vgpu state file" vadmin resume a --from /etc/hostname
tap_expect "a directory is refused" 1 "not a regular file \(a directory\)" \
	vadmin resume a --from "$TEST_TMP"
tap_expect "a character device is refused" 1 "not a regular file" \
	vadmin resume a --from /dev/null
tap_expect "a missing file is refused" 1 "No such file" \
	vadmin resume a --from "$TEST_TMP/nosuch"
tap_expect "a suspend to a directory is refused" 1 "not a regular file" \
	vadmin suspend b --to "$TEST_TMP"
tap_expect "b still runs" 0 "^running$" vgpu_field b STATE
# another vGPU's state
D2="$TEST_TMP/b"
mkdir -p "$D2"
tap_run "suspend b to a file" vadmin suspend b --to "$TEST_TMP/b.vgpustate"
tap_expect "b's state is refused for a" 1 "holds vGPU 'b', not 'a'" \
	vadmin resume a --from "$TEST_TMP/b.vgpustate"
tap_run "resume b" vadmin resume b
# another state of a itself: a's first file, from before
tap_expect "an older state of a is refused" 1 \
	"saved from another state" vadmin resume a --from "$F"
tap_expect "after all that, a is still suspended" 0 "^suspended$" \
	vgpu_field a STATE
tap_expect "a resumes from the good file" 0 "resumed vGPU a" \
	vadmin resume a --from "$G"
finish "$D" "$out" "the client's memory is intact after the refused files"

# ---- refusals ------------------------------------------------------------------
tap_expect "resume of a running vGPU is refused" 1 "is not suspended" \
	vadmin resume a
tap_expect "suspend of no such vGPU is refused" 1 "no vGPU named 'nosuch'" \
	vadmin suspend nosuch
tap_run "suspend a (no clients)" vadmin suspend a
tap_expect "a second suspend is refused" 1 "suspended already" \
	vadmin suspend a
tap_expect "migrate of a suspended vGPU is refused" 1 "resume it with --gpu" \
	vadmin migrate a --gpu 0

# ---- destroyed while suspended, a client waiting -----------------------------------
tap_run "create d" vadmin create d --sms 8 --memory 64M
mkdir -p "$TEST_TMP/dd"
client_bg "$TEST_TMP/dd.out" d "$(prog state_pattern)" hold "$TEST_TMP/dd" 1
dpid=$BG_PID
wait_for 60 "d's client to be ready" test -e "$TEST_TMP/dd/ready" || true
tap_run "suspend d" vadmin suspend d
touch "$TEST_TMP/dd/suspended" # its next call waits
sleep 0.5
tap_expect "destroy d while suspended" 0 "destroyed vGPU d" vadmin destroy d
rc=0
wait_pid "$dpid" 30 || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then
	tap_ok "d's waiting client gets an error (status $rc), no hang"
else
	tap_not_ok "d's waiting client gets an error, no hang" "status $rc"
fi
tail -n 1 "$TEST_TMP/dd.out" | tap_diag

# ---- a vgpud restart while suspended ----------------------------------------------
state_of() {
	python3 -c '
import json, sys
for v in json.load(open(sys.argv[1]))["vgpus"]:
	if v["name"] == sys.argv[2]:
		print(v.get("state"))' "$RUN_DIR/state.json" "$1"
}
tap_expect "the state file records a suspended" 0 "'suspended': True" \
	state_of a
pid_a=$(vgpu_field a PID)
kill -KILL "$VGPUD_PID"
wait_pid "$VGPUD_PID" 10 || true
"$VGPUD" --run-dir "$RUN_DIR" --backend sim --worker-user vgpu \
	>>"$VGPUD_LOG" 2>&1 &
VGPUD_PID=$!
if wait_for 30 "the new vgpud to answer" vadmin list >/dev/null; then
	tap_ok "vgpud killed and started again on the same run directory"
else
	tap_not_ok "vgpud killed and started again on the same run directory"
fi
tap_expect "it adopted a, still suspended" 0 "^suspended$" vgpu_field a STATE
tap_expect "with the same worker pid" 0 "^$pid_a$" vgpu_field a PID
tap_expect "and a resumes" 0 "resumed vGPU a" vadmin resume a
tap_expect "and runs programs" 0 "" client a "$(prog vector_add)" 65536
tap_vgpud_alive
tap_vgpud_stops
tap_done
