#!/bin/sh
# SPDX-License-Identifier: MIT
# Instructions of library code per inline NULL RPC, per side, under callgrind.
# rpc-bench runs at two call counts with one call in flight; each thread is
# profiled apart (--separate-threads), the client and server threads are told
# by the handlers they ran, and only the self cost of functions whose source
# lies in lib/ counts (softrdma, libc and the benchmark are excluded).
# (Ir(N2) - Ir(N1)) / (N2 - N1) cancels set-up and teardown.
# Usage: rpc-callgrind.sh [BUILDDIR]   (default: build)
set -eu
build=${1:-build}
src=$(cd "$(dirname "$0")/../.." && pwd)
bench=$build/tests/bench/rpc-bench
[ -x "$bench" ] || { echo "no $bench: build first" >&2; exit 1; }
command -v callgrind_annotate >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
n1=2000
n2=12000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# profile N: leaves $tmp/N.client and $tmp/N.server (callgrind_annotate output).
profile() {
	n=$1
	valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/cg.$n" \
		"$bench" --calls "$n" --depth 1 >/dev/null 2>"$tmp/err.$n" || {
		cat "$tmp/err.$n" >&2
		exit 1
	}
	for f in "$tmp"/cg."$n"-*; do
		callgrind_annotate --inclusive=no --threshold=100 "$f" >"$f.txt" 2>/dev/null
		if grep -q 'svc_rdma_wc_receive' "$f.txt"; then
			cp "$f.txt" "$tmp/$n.server"
		elif grep -q 'rpcrdma_wc_send' "$f.txt"; then
			cp "$f.txt" "$tmp/$n.client"
		fi
	done
	[ -f "$tmp/$n.client" ] && [ -f "$tmp/$n.server" ] || {
		echo "could not tell the client and server threads apart" >&2
		exit 1
	}
}

# Sum of the self cost of library functions in an annotate listing.
lib_ir() {
	awk -v lib="$src/lib/" '
		{ gsub(",", "", $1) }
		$1 ~ /^[0-9]+$/ && index($0, lib) { s += $1 }
		END { printf "%d", s }' "$1"
}

fn_ir() {
	awk -v fn=":$2 " '{ gsub(",", "", $1) } $1 ~ /^[0-9]+$/ && index($0 " ", fn) { s += $1 }
		END { printf "%d", s }' "$1"
}

profile $n1
profile $n2
echo "Instructions of library code (lib/) per inline NULL RPC, one call in flight"
echo "(callgrind self cost, (Ir(N2)-Ir(N1))/(N2-N1), N1=$n1, N2=$n2):"
for side in client server; do
	a=$(lib_ir "$tmp/$n1.$side")
	b=$(lib_ir "$tmp/$n2.$side")
	awk -v a="$a" -v b="$b" -v s="$side" -v n1=$n1 -v n2=$n2 \
		'BEGIN { printf "  %-7s %7.0f instructions per RPC (target <= 1500)\n", s, (b - a) / (n2 - n1) }'
done
echo "Completion dispatch (rpcrdma_cq_poll self cost; two completions per RPC per side):"
for side in client server; do
	a=$(fn_ir "$tmp/$n1.$side" rpcrdma_cq_poll)
	b=$(fn_ir "$tmp/$n2.$side" rpcrdma_cq_poll)
	awk -v a="$a" -v b="$b" -v s="$side" -v n1=$n1 -v n2=$n2 \
		'BEGIN { printf "  %-7s %7.1f instructions per dispatched completion (target <= 30)\n", s, (b - a) / (2 * (n2 - n1)) }'
done
echo "Top library functions per RPC (client, then server):"
for side in client server; do
	awk -v lib="$src/lib/" '{ gsub(",", "", $1) } $1 ~ /^[0-9]+$/ && index($0, lib) { print }' \
		"$tmp/$n2.$side" | head -n 8 | sed "s@$src/@@" | awk -v n=$n2 '{ printf "  %-7s %6.1f %s\n", "'$side'", $1 / n, $2 }'
done
