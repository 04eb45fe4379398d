#!/bin/sh
# SPDX-License-Identifier: MIT
# Instructions of library code per libtirpc NULL call over RDMA, per side,
# under callgrind: tirpc-bench's 1-caller NULL loop alone (-x rdma -m 0 -t 0 -z: no polling windows),
# the rpcgen client on the main thread, svc_run() on a thread of its own.
# callgrind counts each thread apart (--separate-threads): the main thread is
# the client side, every other thread the server side (svc_run's; softrdma's
# progress thread runs no library code). Of each, only the self cost of
# functions whose source lies in lib/ counts, adapters (tirpc_*.c) included;
# libtirpc, softrdma and libc are excluded. (Ir(N2) - Ir(N1)) / (N2 - N1)
# cancels set-up and teardown.
# Usage: tirpc-callgrind.sh [BUILDDIR]   (default: build)
set -eu
build=${1:-build}
bench=$build/tests/bench/tirpc-bench
n1=1000
n2=6000
. "$(dirname "$0")/callgrind-lib.sh"
callgrind_prepare "$bench"

# profile N: leaves $tmp/client.N and $tmp/server.N, the listings of each side.
profile() {
	rm -f "$tmp"/cg*
	valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/cg" \
		"$bench" -x rdma -r 1 -n "$1" -m 0 -t 0 -z >/dev/null 2>"$tmp/err" || {
		cat "$tmp/err" >&2
		exit 1
	}
	: >"$tmp/server.$1"
	for f in "$tmp"/cg-*; do
		case $f in
		*-01) out=$tmp/client.$1 ;;
		*) out=$tmp/server.$1.part ;;
		esac
		callgrind_annotate --auto=no --inclusive=no --threshold=100 "$f" >"$out" 2>/dev/null
		[ "$out" = "$tmp/client.$1" ] || cat "$out" >>"$tmp/server.$1"
	done
}

profile $n1
profile $n2
require_lib_lines "$tmp/client.$n2" "$bench"
echo "Instructions of library code (lib/, self cost, adapters included) per libtirpc"
echo "NULL call over RDMA, one caller, on softrdma"
echo "(callgrind, (Ir(N2)-Ir(N1))/(N2-N1), N1=$n1, N2=$n2):"
for side in client server; do
	a=$(lib_lines "$tmp/$side.$n1" | sum)
	b=$(lib_lines "$tmp/$side.$n2" | sum)
	ta=$(program_total "$tmp/$side.$n1")
	tb=$(program_total "$tmp/$side.$n2")
	awk -v a="$a" -v b="$b" -v ta="$ta" -v tb="$tb" -v s="$side" -v n1=$n1 -v n2=$n2 'BEGIN {
		printf "  %-7s %6.0f instructions per call (target <= 1500)\n", s, (b - a) / (n2 - n1)
		printf "  %-7s %6.0f of every code on its threads (libtirpc, libc, softrdma too)\n",
			s, (tb - ta) / (n2 - n1)
	}'
	echo "  top functions ($side, per call):"
	top_diff "$tmp/$side.$n1" "$tmp/$side.$n2" $n1 $n2 ${RPC_CALLGRIND_TOP:-8}
done
