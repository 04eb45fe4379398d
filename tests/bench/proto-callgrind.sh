#!/bin/sh
# SPDX-License-Identifier: MIT
# Instructions per encode+decode of each proto-bench case, under callgrind.
# Each case runs at two iteration counts; (Ir(N2) - Ir(N1)) / (N2 - N1) is the
# cost of one iteration with start-up and setup cancelled out. Two figures:
#   total    every instruction of the loop: the encode and decode calls, their
#            argument set-up and the loop itself
#   library  only instructions executed inside rpcrdma_hdr_encode() and
#            rpcrdma_hdr_decode() and their callees (callgrind --toggle-collect)
# Usage: proto-callgrind.sh [BUILDDIR]   (default: build)
set -eu
build=${1:-build}
bench=$build/tests/bench/proto-bench
[ -x "$bench" ] || { echo "no $bench: build first (meson setup $build; ninja -C $build)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
n1=1000
n2=11000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Ir of one run: the "summary:" (or "totals:") line of the callgrind output.
ir() {
	out=$tmp/cg.out
	valgrind --tool=callgrind --callgrind-out-file="$out" "$@" >/dev/null 2>"$tmp/err" || {
		cat "$tmp/err" >&2
		exit 1
	}
	sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$out" | head -n 1
}

per_iter() {
	kind=$1
	case=$2
	set --
	if [ "$kind" = library ]; then
		set -- --toggle-collect=rpcrdma_hdr_encode --toggle-collect=rpcrdma_hdr_decode
	fi
	a=$(ir "$@" "$bench" --runs 1 --iterations $n1 --case "$case")
	b=$(ir "$@" "$bench" --runs 1 --iterations $n2 --case "$case")
	awk -v a="$a" -v b="$b" -v n1=$n1 -v n2=$n2 'BEGIN { printf "%.1f", (b - a) / (n2 - n1) }'
}

echo "Instructions per encode+decode (callgrind, (Ir(N2)-Ir(N1))/(N2-N1), N1=$n1, N2=$n2)"
printf '%-10s %8s %8s\n' case total library
for c in chunkless write1 write8 write16 read1 read8 read16; do
	t=$(per_iter total $c)
	l=$(per_iter library $c)
	printf '%-10s %8s %8s\n' "$c" "$t" "$l"
	eval "total_$c=$t library_$c=$l"
done
echo
echo "Per further segment (library instructions; one segment is a shape of its own, so"
echo "the marginal cost is taken over segments 9..16):"
awk -v c="$library_chunkless" -v r1="$library_read1" -v r8="$library_read8" \
	-v r16="$library_read16" -v w1="$library_write1" -v w8="$library_write8" \
	-v w16="$library_write16" 'BEGIN {
	printf "  Write chunk segment (write16 - write8) / 8 = %.1f\n", (w16 - w8) / 8
	printf "  Read list segment   (read16 - read8) / 8   = %.1f\n", (r16 - r8) / 8
	printf "First list entry, with its list handling:\n"
	printf "  one Write chunk of 1 segment (write1 - chunkless) = %.1f\n", w1 - c
	printf "  one Read segment             (read1 - chunkless)  = %.1f\n", r1 - c
}'
echo
echo "Targets: chunkless <= 60; the first Write chunk or Read segment <= 60 beyond it;"
echo "a further Read segment <= 20, a further Write segment <= 12."
