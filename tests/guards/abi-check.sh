#!/bin/sh
# SPDX-License-Identifier: MIT
# The library against every release's ABI (abi/*.abi, abi/README.md), with
# abidiff: no symbol of a released version node removed, no function of one
# changed in its public types, and every added symbol in a node that release
# did not have.
# Skips (77) without abidiff (Debian: abigail-tools).
# Usage: abi-check.sh ABI_DIR LIBRARY PUBLIC_HEADERS_DIR
set -eu
abidir=$1
lib=$2
headers=$3
command -v abidiff >/dev/null || { echo "abidiff not installed (abigail-tools): skipped"; exit 77; }
# Types come from DWARF: a build without debug information has none to compare.
readelf -S "$lib" | grep -q '\.debug_info' ||
	{ echo "$lib has no debug information: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One baseline: 0 if the library is compatible with it.
check() {
	baseline=$1
	rc=0
	abidiff --headers-dir2 "$headers" "$baseline" "$lib" >"$tmp/report" || rc=$?
	cat "$tmp/report"
	# Bits 1 and 2: abidiff itself failed; 8: an incompatible change.
	if [ $((rc & 3)) -ne 0 ]; then
		echo "abi-check: abidiff failed on $baseline (status $rc)"
		return 1
	fi
	ok=0
	if [ $((rc & 8)) -ne 0 ]; then
		echo "abi-check: abidiff reports an incompatible change"
		ok=1
	fi
	# abidiff prints nothing at all when it finds no difference.
	[ -s "$tmp/report" ] || [ "$rc" -ne 0 ] || return 0
	sed -n 's/^Functions changes summary: \([0-9]*\) Removed, \([0-9]*\) Changed.*/\1 \2/p' \
		"$tmp/report" >"$tmp/counts"
	read -r removed changed <"$tmp/counts" || { echo "abi-check: no summary from abidiff"; return 1; }
	if [ "$removed" -ne 0 ] || [ "$changed" -ne 0 ]; then
		echo "abi-check: $removed function(s) removed and $changed changed in released nodes"
		ok=1
	fi
	# Released nodes: those the baseline's symbols carry.
	sed -n 's/.*version=.\(RPCRDMA_[A-Z0-9_.]*\).*/\1/p' "$baseline" | sort -u >"$tmp/released"
	[ -s "$tmp/released" ] || { echo "abi-check: no version nodes in $baseline"; return 1; }
	sed -n 's/^  \[A\] .*{[^@}]*@@*\([A-Z0-9_.]*\)}$/\1/p' "$tmp/report" | sort -u >"$tmp/added"
	if grep -qxF -f "$tmp/released" "$tmp/added"; then
		echo "abi-check: symbols added to a released node:"
		grep -xF -f "$tmp/released" "$tmp/added"
		ok=1
	fi
	return $ok
}

status=0
n=0
for baseline in "$abidir"/librpcrdma-*.abi; do
	[ -f "$baseline" ] || continue
	n=$((n + 1))
	echo "== $(basename "$baseline")"
	if check "$baseline"; then
		echo "abi-check: compatible with $(basename "$baseline")"
	else
		status=1
	fi
done
[ "$n" -gt 0 ] || { echo "abi-check: no librpcrdma-*.abi in $abidir"; exit 1; }
exit $status
