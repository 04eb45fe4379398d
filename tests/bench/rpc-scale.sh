#!/bin/sh
# SPDX-License-Identifier: MIT
# The server at scale, on softrdma: calls/s and median latency of one busy
# client (1 and 16 calls in flight) beside idle ones, and the server's
# memory per idle connection, for each number of connections, with and
# without the SRQ, with 1 and 2 pollers. Configurations run interleaved,
# REPS times, and each figure is the median of its runs (the machines are
# shared and noisy). Instruction counts come from rpc-callgrind.sh.
# Usage: rpc-scale.sh [BUILDDIR [REPS [CONNECTIONS...]]]
set -eu
build=${1:-build}
reps=${2:-3}
shift $(( $# < 2 ? $# : 2 ))
conns=${*:-1 16 64 256 1024}
bench=$build/tests/bench/rpc-bench
[ -x "$bench" ] || { echo "no $bench: build first" >&2; exit 1; }
# Each connection takes a few descriptors on each side.
ulimit -n 16384 2>/dev/null || ulimit -n "$(ulimit -Hn)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

r=0
while [ $r -lt "$reps" ]; do
	for c in $conns; do
		for p in 1 2; do
			for q in off on; do
				opt=""
				[ $q = on ] && opt=--srq
				"$bench" --calls 20000 --idle $((c - 1)) --pollers $p $opt \
					>>"$tmp/$c.$p.$q" 2>&1 || echo "failed: $c $p $q" >&2
			done
		done
	done
	r=$((r + 1))
done

median() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'
}

printf "%6s %7s %4s | %10s %8s | %10s %8s | %10s\n" conns pollers srq \
	"calls/s d1" "us d1" "calls/s d16" "us d16" "B/idle"
for c in $conns; do
	for p in 1 2; do
		for q in off on; do
			f=$tmp/$c.$p.$q
			r1=$(awk '/ 1 in flight/ { print $(NF-7) }' "$f" | median)
			l1=$(awk '/ 1 in flight/ { print $(NF-3) }' "$f" | median)
			r16=$(awk '/16 in flight/ { print $(NF-7) }' "$f" | median)
			l16=$(awk '/16 in flight/ { print $(NF-3) }' "$f" | median)
			mem=$(awk '/memory per idle/ { print $6 }' "$f" | median)
			printf "%6s %7s %4s | %10s %8s | %10s %8s | %10s\n" "$c" "$p" "$q" \
				"$r1" "$l1" "$r16" "$l16" "$mem"
		done
	done
done
echo "(softrdma, in one process; d1/d16: calls in flight; B/idle: server heap per idle"
echo " connection, registered buffers included, after one call on each; with the SRQ,"
echo " pools grow 64 buffers at a time, which dominates the figure for few connections)"
