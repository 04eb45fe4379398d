#!/bin/sh
# SPDX-License-Identifier: MIT
# System calls per inline NULL RPC on the polling path, both sides together.
# rpc-bench --step runs the calls one at a time with softrdma in STEP mode and
# both sides polled (rpcrdma_clnt_poll, rpcrdma_svc_poll) by one thread: no
# waits, no progress thread in the loop. strace -f -c counts every thread's
# system calls (the library's and the fabric's: an upper bound for the
# library); (calls(N2) - calls(N1)) / (N2 - N1) cancels set-up and teardown.
# read and epoll_wait are the library's (rdma_get_cm_event, the poller's
# wait), at most once a millisecond each while every connection is busy; a
# futex call now and then is the fabric's (its progress thread sleeps
# through STEP mode).
# strace uses ptrace, not seccomp or perf, so it works in our containers.
# Usage: rpc-syscalls.sh [BUILDDIR [BENCH-OPTION...]]
set -eu
build=${1:-build}
shift $(( $# < 1 ? $# : 1 ))
bench=$build/tests/bench/rpc-bench
[ -x "$bench" ] || { echo "no $bench: build first" >&2; exit 1; }
command -v strace >/dev/null || { echo "strace is not installed" >&2; exit 1; }
n1=1000
n2=6000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# count N: the system calls of one run, and the busiest ones in $tmp/table.N
count() {
	n=$1
	shift
	strace -f -c -U calls,name -o "$tmp/table.$n" "$bench" --step --calls "$n" "$@" \
		>/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
	awk '$NF == "total" { print $1 }' "$tmp/table.$n"
}

a=$(count $n1 "$@")
b=$(count $n2 "$@")
awk -v a="$a" -v b="$b" -v n1=$n1 -v n2=$n2 'BEGIN {
	printf "System calls per inline NULL RPC, STEP mode, both sides and the fabric " \
		"(strace -f -c, (N2-N1), N1=%d, N2=%d):\n  %.3f per RPC (target 0)\n",
		n1, n2, (b - a) / (n2 - n1) }'
# Per name, what grows with the calls.
awk 'FNR == NR && $1 ~ /^[0-9]+$/ { c[$2] = $1; next }
	$1 ~ /^[0-9]+$/ && $2 != "total" && $1 - c[$2] > 0 { printf "    %8d more %s\n", $1 - c[$2], $2 }' \
	"$tmp/table.$n1" "$tmp/table.$n2"
