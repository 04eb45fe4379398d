#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The echo service as two processes: echo-server and echo-client, built
# against rdma-core like any RDMA program, run unmodified on softrdma through
# the drop-in libibverbs.so.1 and librdmacm.so.1 (LD_LIBRARY_PATH); the
# connection between the processes goes through softrdma's socket backend
# and shared memory. The last run busy-polls on both sides.
#
#   sh examples/native/demo-2proc.sh [build folder]
#   demo-2proc.sh <drop-in folder> <echo-server> <echo-client>   (the meson test)
set -eu

if [ $# -eq 3 ]; then
	dropin=$1 server=$2 client=$3
else
	build=${1:-build}
	dropin=$build/softrdma/dropin
	server=$build/examples/native/echo-server
	client=$build/examples/native/echo-client
fi
. "$(dirname "$0")/../2proc.sh"

echo "== echo-server and echo-client in two processes, over the drop-in libraries"
server_start 20049 "$server" -a 127.0.0.1 -p 20049
for size in 1 64 1000 4096; do
	client "$client" -a 127.0.0.1 -n 1000 -s "$size"
done
kill -TERM "$server_pid"
server_wait
# Both sides busy-polling: nothing sleeps, nothing rings. Few calls: two
# spinning processes on a loaded machine take a time slice each per call;
# under valgrind, which runs one thread of a process at a time, far more.
calls=4000
if [ -z "$wrap" ]; then
	echo "== the same, busy-polling on both sides (-b)"
	server_start 20051 "$server" -a 127.0.0.1 -p 20051 -b
	client "$client" -a 127.0.0.1 -p 20051 -n 500 -s 64 -b
	kill -TERM "$server_pid"
	server_wait
	calls=4500
fi
echo "== done: $calls calls between two processes"
