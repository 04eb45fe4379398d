#!/bin/sh
# SPDX-License-Identifier: MIT
# Instructions of library code per inline NULL RPC, per side, under callgrind.
# rpc-bench --step runs the calls one at a time with softrdma in STEP mode and
# both sides polled by one thread, so no instruction is spent spinning. The
# client side is what runs inside rpcrdma_clnt_submit/poll, the server side
# what runs inside rpcrdma_svc_poll (--toggle-collect); of that, only the self
# cost of functions whose source lies in lib/ counts: softrdma (the fabric's
# own cost) and libc are excluded. (Ir(N2) - Ir(N1)) / (N2 - N1) cancels
# set-up and teardown.
# RPC_CALLGRIND_SIDES=server profiles one side only.
# Usage: rpc-callgrind.sh [BUILDDIR [IDLE [BENCH-OPTION...]]]   (default: build,
# 0 idle connections beside the one that calls; options such as --srq or
# --pollers 2 go to rpc-bench)
set -eu
build=${1:-build}
idle=${2:-0}
shift $(( $# < 2 ? $# : 2 ))
bench=$build/tests/bench/rpc-bench
opts="$*"
n1=1000
n2=6000
. "$(dirname "$0")/callgrind-lib.sh"
callgrind_prepare "$bench"

# profile SIDE N: leaves $tmp/SIDE.N, the callgrind_annotate listing.
profile() {
	# rpcrdma_clnt_submit is versioned (rpcrdma_clnt_submit@@RPCRDMA_0.2): a pattern.
	case $1 in
	client) set -- "$2" --toggle-collect='rpcrdma_clnt_submit*' --toggle-collect=rpcrdma_clnt_poll ;;
	server) set -- "$2" --toggle-collect=rpcrdma_svc_poll --toggle-collect=rpcrdma_svc_poller_poll ;;
	esac
	n=$1
	shift
	valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$@" \
		"$bench" --step --calls "$n" --idle "$idle" $opts >"$tmp/out" 2>"$tmp/err" || {
		cat "$tmp/err" >&2
		exit 1
	}
	callgrind_annotate --auto=no --inclusive=no --threshold=100 "$tmp/cg" >"$tmp/listing" 2>/dev/null
}

echo "Instructions of library code (lib/, self cost) per inline NULL RPC, STEP mode,"
echo "beside $idle idle connections ${opts:-(no options)}"
echo "(callgrind, (Ir(N2)-Ir(N1))/(N2-N1), N1=$n1, N2=$n2):"
for side in ${RPC_CALLGRIND_SIDES:-client server}; do
	profile $side $n1
	require_lib_lines "$tmp/listing" "$bench"
	mv "$tmp/listing" "$tmp/listing.1"
	a=$(lib_lines "$tmp/listing.1" | sum)
	ca=$(lib_lines "$tmp/listing.1" | grep '/lib/core/cq\.h:' | sum)
	profile $side $n2
	b=$(lib_lines "$tmp/listing" | sum)
	cb=$(lib_lines "$tmp/listing" | grep '/lib/core/cq\.h:' | sum)
	# Completions per RPC: its Receive, and the Sends signaled (rpc-bench counts them).
	wcs=$(awk -v s="$side" '$1 == s && /signaled send completions/ {
		for (i = 1; i < NF; i++) if ($(i + 1) == "signaled") print 1 + $i }' "$tmp/out")
	awk -v a="$a" -v b="$b" -v ca="$ca" -v cb="$cb" -v s="$side" -v n1=$n1 -v n2=$n2 \
	    -v wcs="${wcs:-0}" 'BEGIN {
		printf "  %-7s %6.0f instructions per RPC (target <= 600)\n", s, (b - a) / (n2 - n1)
		if (wcs > 0)
			printf "  %-7s %6.1f in the dispatch (cq.h) per completion, %.2f per RPC " \
			       "(target <= 30)\n", s, (cb - ca) / (wcs * (n2 - n1)), wcs
	}'
	echo "  top functions ($side, per RPC):"
	top_diff "$tmp/listing.1" "$tmp/listing" $n1 $n2 ${RPC_CALLGRIND_TOP:-8}
done
