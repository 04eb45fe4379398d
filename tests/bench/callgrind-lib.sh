# SPDX-License-Identifier: MIT
# Sourced by rpc-callgrind.sh and tirpc-callgrind.sh: the library's share of a
# callgrind_annotate listing (--inclusive=no), told apart by source file.

# Checks that the bench program $1 and callgrind_annotate are there; sets
# tmp to a scratch directory, removed on exit.
callgrind_prepare() {
	[ -x "$1" ] || { echo "no $1: build first" >&2; exit 1; }
	command -v callgrind_annotate >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
}

# The lines of functions whose source lies in lib/ (any layer). softrdma
# shares list code: what is inlined from it into the fabric's own functions is the
# fabric's cost (its path goes through softrdma/).
lib_lines() {
	awk '{ gsub(",", "", $1) } $1 ~ /^[0-9]+$/ && $0 ~ /\/lib\/([a-z]+\/)?[a-z_0-9]+\.[ch]:/ &&
		$0 !~ /softrdma\// { print }' "$1"
}

# The PROGRAM TOTALS of listings $1 (several, when they are concatenated).
program_total() {
	awk '/PROGRAM TOTALS/ { gsub(",", "", $1); s += $1 } END { printf "%d", s }' "$1"
}

# The sum of the first column of its input (0 for none).
sum() {
	awk '{ s += $1 } END { printf "%d", s }'
}

# Without debug information there is no source file, and every figure would
# read 0: refuse instead. $1: the listing, $2: the program.
require_lib_lines() {
	if [ -z "$(lib_lines "$1")" ]; then
		echo "$(basename "$0"): no function of lib/ in the profile: $2 has no debug" \
			"information (configure with -Ddebug=true, or --buildtype=debugoptimized)" >&2
		exit 1
	fi
}

# The $5 library functions costing most per call between listing $1 (of $3
# calls) and listing $2 (of $4 calls): (Ir(N2) - Ir(N1)) / (N2 - N1) each.
top_diff() {
	{ lib_lines "$1" | sed 's/^/1 /'; lib_lines "$2" | sed 's/^/2 /'; } | awk -v n1="$3" -v n2="$4" '{
		f = $0
		sub(/^.*\/lib\//, "", f); sub(/ \[.*$/, "", f)
		if ($1 == 1) a[f] += $2; else b[f] += $2
	} END {
		for (f in b) printf "%.1f %s\n", (b[f] - a[f]) / (n2 - n1), f
	}' | sort -rn | head -n "$5" | awk '{ printf "    %6.1f  %s\n", $1, $2 }'
}
