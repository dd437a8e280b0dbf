# shellcheck shell=bash
# SPDX-License-Identifier: MIT
#
# Staging helpers for vm-images/l2/build.sh (source it after
# vm-images/lib.sh). The same scheme as build-initramfs.sh: each archive
# is a tree under $STAGE/PART, a file is copied only when its content
# changed, and PART.cpio.gz is packed again only when the tree changed.
#
#   stage PART SRC DEST [MODE]   copy SRC (links followed) to PART/DEST
#   stage_text PART DEST MODE    stdin as PART/DEST
#   stage_libs PART PROGRAM...   the shared libraries the programs need
#   prune PART                   drop files this run did not stage
#   pack PART OUT                PART's tree as the archive OUT

declare -A WANT # staged paths of this run, "PART/path"

stage()
{
	local part=$1 src=$2 dest=$3 mode=${4:-}
	local to="$STAGE/$part/$dest"

	[ -e "$src" ] || die "$src is missing"
	WANT["$part/$dest"]=1
	if cmp -s "$src" "$to"; then
		[ -z "$mode" ] || chmod "$mode" "$to"
		return 0
	fi
	mkdir -p "$(dirname "$to")"
	cp -L "$src" "$to.tmp"
	[ -z "$mode" ] || chmod "$mode" "$to.tmp"
	mv "$to.tmp" "$to"
}

stage_text()
{
	local tmp
	mkdir -p "$STAGE"
	tmp=$(mktemp "$STAGE/text.XXXXXX")
	cat >"$tmp"
	chmod "$3" "$tmp"
	stage "$1" "$tmp" "$2" "$3"
	rm -f "$tmp"
}

# stage_libs PART PROGRAM...: every shared library the programs load, as
# ldd resolves them (with LD_LIBRARY_PATH as the caller set it), into
# /lib/x86_64-linux-gnu (the loader into /lib64). Our own libraries
# ($BUILD/lib) are left out: the caller puts them where they belong; so
# are those under STAGE_LIBS_SKIP (a directory), when it is set.
stage_libs()
{
	local part=$1 prog lib own skip
	shift
	own=$(cd "$BUILD/lib" 2>/dev/null && pwd)
	skip=$(readlink -f "${STAGE_LIBS_SKIP:-/nonexistent}" 2>/dev/null ||
		echo /nonexistent)
	for prog in "$@"; do
		# a static program has no dependencies (ldd exits 1)
		for lib in $(ldd "$prog" 2>/dev/null | awk '
			$2 == "=>" && $3 ~ /^\// { print $3 }
			$1 ~ /^\// { print $1 }'); do
			case $lib in
			"$own"/* | "$BUILD"/lib/*) continue ;;
			esac
			case $(readlink -f "$lib") in
			"$skip"/*) continue ;;
			esac
			case $lib in
			*/ld-linux-x86-64.so.2)
				stage "$part" "$lib" lib64/ld-linux-x86-64.so.2 0755 ;;
			*) stage "$part" "$lib" "lib/x86_64-linux-gnu/$(basename "$lib")" 0644 ;;
			esac
		done
	done
}

prune()
{
	local part=$1 f
	[ -d "$STAGE/$part" ] || return 0
	while IFS= read -r -d '' f; do
		[ -n "${WANT[$part/${f#"$STAGE/$part/"}]:-}" ] || rm -f "$f"
	done < <(find "$STAGE/$part" -type f -print0)
}

# pack PART OUT: packs unless the staged tree is unchanged since OUT was
# made (its checksum is kept next to it, OUT.sum).
pack()
{
	local part=$1 out=$2 sum
	sum=$(cd "$STAGE/$part" && find . -printf '%p %m %s %T@\n' | sort | md5sum)
	if [ -f "$out" ] && [ "$(cat "$out.sum" 2>/dev/null)" = "$sum" ]; then
		step "$(basename "$out") unchanged"
		return 0
	fi
	(cd "$STAGE/$part" && find . | LC_ALL=C sort |
		cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$out.tmp"
	mv "$out.tmp" "$out"
	echo "$sum" >"$out.sum"
	step "$(basename "$out") packed ($(du -h "$out" | cut -f1))"
}
