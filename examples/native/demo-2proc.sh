#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The echo service as two processes: echo-server and echo-client, built
# against rdma-core like any RDMA program, run unmodified on softrdma through
# the drop-in libibverbs.so.1 and librdmacm.so.1 (LD_LIBRARY_PATH); the
# connection between the processes goes through softrdma's socket backend.
#
#   sh examples/native/demo-2proc.sh [build folder]
#   demo-2proc.sh <drop-in folder> <echo-server> <echo-client>   (the meson test)
#
# SOFTRDMA_DEMO_WRAP, if set, is a command the programs run under (the meson
# test's valgrind setup puts valgrind there).
set -eu

if [ $# -eq 3 ]; then
	dropin=$1 server=$2 client=$3
else
	build=${1:-build}
	dropin=$build/tests/softrdma/dropin
	server=$build/examples/native/echo-server
	client=$build/examples/native/echo-client
fi
for f in "$dropin/libibverbs.so.1" "$dropin/librdmacm.so.1" "$server" "$client"; do
	if [ ! -e "$f" ]; then
		echo "demo-2proc: $f is missing (configure with -Dtests=enabled and build)" >&2
		exit 1
	fi
done

wrap=${SOFTRDMA_DEMO_WRAP:-}

# A rendezvous directory of our own: nothing else listens on our port there.
dir=$(mktemp -d "${TMPDIR:-/tmp}/softrdma-demo.XXXXXX")
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
export LD_LIBRARY_PATH="$dropin" SOFTRDMA_DIR="$dir"

echo "== echo-server and echo-client in two processes, over the drop-in libraries"
# shellcheck disable=SC2086 # $wrap is a command line
$wrap "$server" -a 127.0.0.1 -p 20049 &
server_pid=$!
tries=0
until [ -S "$dir/tcp-127.0.0.1-20049" ]; do
	tries=$((tries + 1))
	if [ $tries -gt 3000 ] || ! kill -0 "$server_pid" 2>/dev/null; then
		echo "demo-2proc: the server did not start listening" >&2
		exit 1
	fi
	sleep 0.01
done
for size in 1 64 1000 4096; do
	# shellcheck disable=SC2086
	$wrap "$client" -a 127.0.0.1 -n 1000 -s "$size"
done
kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
server_pid=
if [ "$status" -ne 0 ]; then
	echo "demo-2proc: the server exited with status $status" >&2
	exit 1
fi
echo "== done: 4000 calls between two processes"
