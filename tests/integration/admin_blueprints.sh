#!/bin/bash
# shellcheck disable=SC2119 # vgpu_test_start takes an optional title
# SPDX-License-Identifier: MIT
# vgpu-admin with blueprints on the simulator: create -f with each example
# in blueprints/ (consumers that do not exist here are swapped for root),
# validate with each bad fixture in tests/blueprints/ (the error it must
# name is its "# expect:" line), overlapping and over-committed requests
# refused with what is free, --json parsed back for every command, exit
# codes (0 ok, 1 refused/invalid, 2 usage, 3 unreachable), --help per
# command.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
export VGPU_SIM_GPUS=1 VGPU_SIM_SMS=132 VGPU_SIM_MEMORY=64G
vgpu_test_start "vgpud starts on the simulator (1 GPU, 132 SMs, 64 GiB)"

json_ok() # json_ok TITLE COMMAND...: exit 0 and stdout is one JSON object
{
	local title=$1 out="$TEST_TMP/json.out" rc=0
	shift
	"$@" >"$out" 2>"$TEST_TMP/json.err" || rc=$?
	if [ "$rc" -eq 0 ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out"; then
		tap_ok "$title"
	else
		tap_not_ok "$title" "exit $rc: $*"
		head -n 20 "$out" "$TEST_TMP/json.err" | tap_diag
	fi
}
# jq-like: jget FILE PYTHON-EXPR (d is the object)
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# ---- the examples ------------------------------------------------------
mkdir -p "$TEST_TMP/bp"
created=()
for f in "$VGPU_SRC"/blueprints/*.yaml; do
	[ -e "$f" ] || continue
	base=$(basename "$f")
	cp "$f" "$TEST_TMP/bp/$base"
	# a user or group of the example that this host lacks becomes root
	sed -i -E 's/^(  user:).*/\1 root/; s/^(  group:).*/\1 root/' "$TEST_TMP/bp/$base"
	rc=0
	vadmin validate "$TEST_TMP/bp/$base" >"$TEST_TMP/v.out" 2>&1 || rc=$?
	if grep -q 'does not fit' "$TEST_TMP/v.out"; then
		tap_ok "example $base is valid (too big for this simulated GPU now)"
		tap_diag <"$TEST_TMP/v.out"
		continue
	fi
	if [ "$rc" -ne 0 ]; then
		tap_not_ok "example $base validates" "exit $rc"
		tap_diag <"$TEST_TMP/v.out"
		continue
	fi
	tap_ok "example $base validates and fits"
	tap_diag <"$TEST_TMP/v.out"
	tap_expect "create -f $base" 0 'created vGPU' \
		vadmin create -f "$TEST_TMP/bp/$base"
	created+=("$(sed -n 's/^name: *//p' "$TEST_TMP/bp/$base")")
done
[ ${#created[@]} -gt 0 ] || tap_not_ok "at least one example was created"
for name in "${created[@]}"; do
	tap_expect "show $name names its domain" 0 'fault domain|MPS' vadmin show "$name"
done
tap_expect "create -f of the same blueprint again is refused (exit 1)" 1 \
	'exists' vadmin create -f "$TEST_TMP/bp/$(ls "$TEST_TMP/bp" | head -n 1)"
for name in "${created[@]}"; do
	vadmin destroy "$name" >/dev/null 2>&1 || true
done

# ---- the bad fixtures --------------------------------------------------
nbad=0
for f in "$VGPU_SRC"/tests/blueprints/*.yaml; do
	[ -e "$f" ] || continue
	nbad=$((nbad + 1))
	want=$(sed -n '1s/^# expect: *//p' "$f")
	rc=0
	vadmin validate "$f" >"$TEST_TMP/bad.out" 2>&1 || rc=$?
	if [ "$rc" -ne 1 ]; then
		tap_not_ok "validate refuses $(basename "$f") (exit 1)" "exit $rc"
		tap_diag <"$TEST_TMP/bad.out"
	elif [ -n "$want" ] && ! grep -qF -- "$want" "$TEST_TMP/bad.out"; then
		tap_not_ok "validate refuses $(basename "$f") saying '$want'"
		tap_diag <"$TEST_TMP/bad.out"
	else
		tap_ok "validate refuses $(basename "$f")${want:+ saying '$want'}"
	fi
done
if [ "$nbad" -eq 0 ]; then
	# no fixtures in the tree yet: a few of our own
	printf 'version: 1\nname: x\nsms: 8\nmemory: 1G\ncolour: blue\n' >"$TEST_TMP/unknown.yaml"
	printf 'version: 1\nname: x\nsms: 8\nmemory: 4Q\n' >"$TEST_TMP/size.yaml"
	printf 'version: 1\nname: x\nsms: 8\n' >"$TEST_TMP/nomem.yaml"
	for f in unknown size nomem; do
		tap_expect "validate refuses $f.yaml" 1 'yaml:[0-9]+' \
			vadmin validate "$TEST_TMP/$f.yaml"
	done
fi
tap_expect "validate of a file that does not exist is invalid (exit 1)" 1 \
	'cannot open' vadmin validate "$TEST_TMP/nope.yaml"

# ---- overlapping and over-committed ------------------------------------
tap_expect "create big (96 SMs)" 0 'created vGPU big: 96 SMs' \
	vadmin create big --sms 96 --memory 8G
cat >"$TEST_TMP/more.yaml" <<'YAML'
version: 1
name: more
sms: 48
memory: 1G
YAML
tap_expect "validate: 48 more SMs do not fit, and it says what is free" 1 \
	'does not fit.*32 SMs \(4 groups of 8\) are free' \
	vadmin validate "$TEST_TMP/more.yaml"
tap_expect "create -f: 48 more SMs are refused, saying what is free" 1 \
	'32 SMs \(4 groups of 8\) are free' vadmin create -f "$TEST_TMP/more.yaml"
tap_expect "more memory than is free is refused, saying what is free" 1 \
	'is free on GPU 0' vadmin create m --sms 8 --memory 60G
cat >"$TEST_TMP/fits.yaml" <<'YAML'
version: 1
name: fits
sms: 16
memory: 1G
isolation: exclusive
YAML
tap_expect "validate says where it fits: 16 SMs (groups 12,13)" 0 \
	'fits: 16 SMs \(groups 12,13\) on GPU 0' vadmin validate "$TEST_TMP/fits.yaml"
tap_expect "validate created nothing" 1 'no vGPU' vadmin show fits
tap_expect "the 4 SMs the split left over go to a 4-SM vGPU alone" 0 \
	'4 SMs \(groups 16 \(leftover\)\)' vadmin create small --sms 4 --memory 64M
tap_expect "gpus says what is done with the leftover SMs" 0 \
	'4 SMs left over by the split: one more slice of 4 SMs, usable by one vGPU on its own \(in use\)' \
	vadmin gpus
tap_expect "gpus lists the shared domain" 0 'shared \(MPS\): 2 vGPUs: big, small' vadmin gpus
tap_expect "create -f an exclusive vGPU" 0 'exclusive' vadmin create -f "$TEST_TMP/fits.yaml"
tap_expect "gpus lists the exclusive vGPU as its own domain" 0 'exclusive: fits' vadmin gpus
tap_expect "show: exclusive means its own fault domain" 0 \
	'isolation +exclusive: its own fault domain' vadmin show fits
tap_expect "create --group root --isolation exclusive" 0 'group:root' \
	vadmin create g --sms 8 --memory 64M --group root --isolation exclusive
tap_expect "list shows the group consumer" 0 '^g .*group:root' vadmin list

# ---- --json for every command ------------------------------------------
json_ok "list --json is JSON" vadmin list --json
n=$(jget "$TEST_TMP/json.out" 'len(d["vgpus"])')
rows=$(($(vadmin list | wc -l) - 1))
[ "$n" = "$rows" ] && tap_ok "list --json has the $rows vGPUs of list" ||
	tap_not_ok "list --json has the $rows vGPUs of list" "got $n"
json_ok "gpus --json is JSON" vadmin --json gpus
v=$(jget "$TEST_TMP/json.out" 'd["gpus"][0]["leftover"]["sms"], d["gpus"][0]["sms"], d["gpus"][0]["domains"]["exclusive"]')
[ "$v" = "4 132 ['fits', 'g']" ] && tap_ok "gpus --json: leftover 4, 132 SMs, exclusive fits and g" ||
	tap_not_ok "gpus --json: leftover 4, 132 SMs, exclusive fits and g" "got $v"
json_ok "show --json is JSON" vadmin show fits --json
v=$(jget "$TEST_TMP/json.out" 'd["isolation"], d["groups"], d["state"]')
[ "$v" = "exclusive [12, 13] running" ] && tap_ok "show --json: exclusive, groups 12,13, running" ||
	tap_not_ok "show --json: exclusive, groups 12,13, running" "got $v"
json_ok "create --json is JSON" vadmin create j --sms 8 --memory 64M --json
json_ok "destroy --json is JSON" vadmin destroy j --json
printf 'version: 1\nname: tiny\nsms: 8\nmemory: 64M\n' >"$TEST_TMP/tiny.yaml"
json_ok "validate --json is JSON" vadmin validate --json "$TEST_TMP/tiny.yaml"
rc=0
vadmin --json create big --sms 8 --memory 64M >"$TEST_TMP/err.json" 2>/dev/null || rc=$?
v=$(jget "$TEST_TMP/err.json" 'd["error"]["exit"]' 2>/dev/null || echo bad)
[ "$rc" = 1 ] && [ "$v" = 1 ] && tap_ok "a refusal under --json is an error object (exit 1)" ||
	tap_not_ok "a refusal under --json is an error object (exit 1)" "rc $rc, exit field $v"
rc=0
vadmin validate --json "$TEST_TMP/more.yaml" >"$TEST_TMP/v.json" 2>/dev/null || rc=$?
v=$(jget "$TEST_TMP/v.json" 'd["valid"], d["results"][0]["fits"]' 2>/dev/null || echo bad)
[ "$rc" = 1 ] && [ "$v" = "False False" ] && tap_ok "validate --json of a misfit: valid false, fits false" ||
	tap_not_ok "validate --json of a misfit" "rc $rc, got $v"

# ---- exit codes and help ------------------------------------------------
for cmd in gpus validate create show list destroy; do
	tap_expect "$cmd --help prints its usage (exit 0)" 0 "usage: vgpu-admin.* $cmd" \
		vadmin "$cmd" --help
done
tap_expect "show of an unknown vGPU: exit 1" 1 'no vGPU' vadmin show nope
tap_expect "show without a name: exit 2" 2 'NAME' vadmin show
tap_expect "create -f with a NAME too: exit 2" 2 'blueprint' \
	vadmin create x -f "$TEST_TMP/fits.yaml"
tap_expect "--isolation other: exit 2" 2 'isolation' \
	vadmin create x --sms 8 --memory 1G --isolation other
tap_expect "--user and --group together: exit 2" 2 'exclude' \
	vadmin create x --sms 8 --memory 1G --user root --group root
tap_expect "gpus with an argument: exit 2" 2 'argument' vadmin gpus x
tap_expect "validate with no file: exit 2" 2 'FILE' vadmin validate
tap_expect "no vgpud: gpus exits 3" 3 'reach' \
	"$VGPU_ADMIN" --run-dir "$TEST_TMP/nowhere" gpus
tap_expect "no vgpud: validate still checks the file, exit 0" 0 'not checked' \
	"$VGPU_ADMIN" --run-dir "$TEST_TMP/nowhere" validate "$TEST_TMP/fits.yaml"
tap_expect "man page renders" 0 'vgpu-admin' \
	bash -c "MANWIDTH=80 man -l '$VGPU_SRC/docs/vgpu-admin.1' 2>/dev/null | head -n 5"
tap_done
