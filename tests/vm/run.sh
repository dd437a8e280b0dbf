#!/bin/sh
# SPDX-License-Identifier: MIT
#
# tests/vm/run.sh [SCRIPT...]: the in-VM test suite (kselftest style),
# run by the VM's /init. Runs each script (default: all, in the order
# below) and prints one TAP stream for the whole suite: every "ok" /
# "not ok" line of a script numbered in sequence and prefixed with the
# script's name, "#" lines passed on, the plan at the end. A script that
# exits non-zero without a failed test counts as one failure. Exit status
# 1 if anything failed.
cd "$(dirname "$0")" || exit 1
[ $# -gt 0 ] || set -- module.sh late_module.sh mdev_types.sh ctl.sh \
	mdev_create.sh vfio.sh resize.sh hostile.sh daemon.sh health.sh

echo "TAP version 13"
for s in "$@"; do
	echo "@@ start $s"
	start=$(cut -d' ' -f1 /proc/uptime)
	sh "./$s" 2>&1
	rc=$?
	echo "@@ end $s $rc $start $(cut -d' ' -f1 /proc/uptime)"
done | awk '
	/^@@ start / { name = $3; sub(/\.sh$/, "", name); bad = 0
		print "# --- " $3; fflush(); next }
	/^@@ end / {
		if ($4 != 0 && !bad) {
			n++; fails++
			printf "not ok %d - %s: exited with status %d\n", n, name, $4
		}
		printf "# --- %s: %.1f s\n", $3, $6 - $5; fflush(); next }
	/^(not )?ok( |$)/ {
		failed = /^not ok/
		sub(/^(not )?ok( [0-9]+)?( -)? ?/, "")
		n++
		if (failed) { fails++; bad = 1 }
		printf "%s %d - %s: %s\n", failed ? "not ok" : "ok", n, name, $0
		fflush(); next }
	/^#/ { print; fflush(); next }
	{ print "# " $0; fflush() }
	END { printf "1..%d\n", n; exit fails > 0 }'
