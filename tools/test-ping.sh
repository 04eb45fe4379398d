#!/bin/sh
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2086 # $tool is a command line (valgrind, or nothing)
# rpcrdma-ping against the rpcgen echo server, as two processes on
# softrdma's drop-in libraries: NULL calls answered (exit 0, a summary),
# echo calls of 100 KB checked byte for byte, an unknown version answered
# by none (exit 1), and no server at all (exit 2).
# Usage: test-ping.sh DROPIN_DIR RPCRDMA_PING ECHO_SERVER_RDMA
set -eu
# Under meson's valgrind setup this shell is the traced program, and dash's
# own leaks are not ours: the shell runs untraced and the tools run under
# valgrind instead (SOFTRDMA_TEST_VALGRIND).
case "${LD_PRELOAD:-}" in
*vgpreload*)
	exec env -u LD_PRELOAD SOFTRDMA_DEMO_WRAP="${SOFTRDMA_TEST_VALGRIND:-}" \
		/bin/sh "$0" "$@" ;;
esac
dropin=$1 ping=$2 server=$3 client=$2
. "$(dirname "$0")/../examples/2proc.sh"
# The server runs untraced (echo-demo-2proc traces it); the tools are traced.
tool=$wrap wrap=
out=$dir/ping.out
prog=0x20001234

server_start 20061 "$server" -a 127.0.0.1 -p 20061
$tool "$ping" -c 3 -i 0.05 -p 20061 127.0.0.1 $prog 1 >"$out"
cat "$out"
[ "$(grep -c '^reply from 127.0.0.1: seq=[1-3] null time=' "$out")" -eq 3 ]
grep -q '^3 calls sent, 3 answered, 0% lost' "$out"
grep -q '^rtt min/avg/max/mdev = [0-9.]*/[0-9.]*/[0-9.]*/[0-9.]* ms$' "$out"

$tool "$ping" -c 2 -i 0.05 -s 100000 -p 20061 127.0.0.1 $prog 1 >"$out"
cat "$out"
[ "$(grep -c 'echoed time=' "$out")" -eq 2 ]

rc=0
$tool "$ping" -c 2 -i 0.05 -p 20061 127.0.0.1 $prog 9 >"$out" || rc=$?
cat "$out"
[ "$rc" -eq 1 ] || { echo "unknown version: exit $rc, expected 1"; exit 1; }
grep -q 'Program/version mismatch' "$out"

rc=0
$tool "$ping" -c 1 -p 20062 127.0.0.1 >"$out" 2>&1 || rc=$?
cat "$out"
[ "$rc" -eq 2 ] || { echo "no server: exit $rc, expected 2"; exit 1; }
echo "rpcrdma-ping: answered, echoed, refused and unreachable as documented"
