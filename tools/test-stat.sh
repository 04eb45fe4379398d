#!/bin/sh
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2086 # $tool is a command line (valgrind, or nothing)
# rpcrdma-stat against the rpcgen echo server, which serves its counters
# because RPCRDMA_STAT_SOCKET is in its environment: after 7 calls of
# rpcrdma-ping, the server's row counts 7 calls and 7 replies and one
# connection; three samples a tenth of a second apart count nothing new.
# Usage: test-stat.sh DROPIN_DIR RPCRDMA_STAT RPCRDMA_PING ECHO_SERVER_RDMA
set -eu
# Under meson's valgrind setup this shell is the traced program, and dash's
# own leaks are not ours: the shell runs untraced and the tools run under
# valgrind instead (SOFTRDMA_TEST_VALGRIND).
case "${LD_PRELOAD:-}" in
*vgpreload*)
	exec env -u LD_PRELOAD SOFTRDMA_DEMO_WRAP="${SOFTRDMA_TEST_VALGRIND:-}" \
		/bin/sh "$0" "$@" ;;
esac
dropin=$1 stat=$2 ping=$3 server=$4 client=$3
. "$(dirname "$0")/../examples/2proc.sh"
# The server runs untraced (echo-demo-2proc traces it); the tools are traced.
tool=$wrap wrap=
sock=$dir/stat.sock
out=$dir/stat.out

RPCRDMA_STAT_SOCKET=$sock server_start 20063 "$server" -a 127.0.0.1 -p 20063
$tool "$ping" -c 7 -i 0.01 -p 20063 127.0.0.1 0x20001234 1 >/dev/null
# The server publishes within 100 ms of going idle.
sleep 0.3
$tool "$stat" "$sock" >"$out"
cat "$out"
head -n 1 "$out" | grep -q '^source  *calls  *replies '
row=$(grep '^server/127.0.0.1:20063/poller0 ' "$out")
set -- $row
[ "$2" -eq 7 ] || { echo "calls: $2, expected 7"; exit 1; }
[ "$3" -eq 7 ] || { echo "replies: $3, expected 7"; exit 1; }
[ "${16}" -eq 1 ] || { echo "connects: ${16}, expected 1"; exit 1; }

$tool "$stat" -i 0.1 -c 3 "$sock" >"$out"
cat "$out"
[ "$(grep -c '^server/127.0.0.1:20063/poller0 ' "$out")" -eq 3 ]
# The later rows count the interval: nothing happened.
[ "$(grep '^server/' "$out" | tail -n 1 | awk '{ print $2 }')" -eq 0 ]

rc=0
$tool "$stat" "$dir/nothing.sock" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 1 ] || { echo "no socket: exit $rc, expected 1"; exit 1; }
echo "rpcrdma-stat: the server's counters read once and every interval"
