#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The rpcgen echo program as two processes: echo-server-rdma and
# echo-client-rdma, built against the installed-style librpcrdma.so (which
# links rdma-core), run unmodified on softrdma through its drop-in
# libibverbs.so.1 and librdmacm.so.1 (LD_LIBRARY_PATH); then, with a build
# folder, the same programs built for TCP, for comparison.
#
#   sh examples/echo/demo-2proc.sh [build folder]
#   demo-2proc.sh <drop-in folder> <echo-server-rdma> <echo-client-rdma>   (the meson test)
#
# SOFTRDMA_DEMO_WRAP, if set, is a command the programs run under (the meson
# test's valgrind setup puts valgrind there).
set -eu

tcp=
if [ $# -eq 3 ]; then
	dropin=$1 server=$2 client=$3
else
	build=${1:-build}
	dropin=$build/tests/softrdma/dropin
	server=$build/examples/echo/echo-server-rdma
	client=$build/examples/echo/echo-client-rdma
	tcp=$build/examples/echo
fi
for f in "$dropin/libibverbs.so.1" "$dropin/librdmacm.so.1" "$server" "$client"; do
	if [ ! -e "$f" ]; then
		echo "demo-2proc: $f is missing (configure with -Dtests=enabled and build)" >&2
		exit 1
	fi
done
wrap=${SOFTRDMA_DEMO_WRAP:-}

dir=$(mktemp -d "${TMPDIR:-/tmp}/softrdma-demo.XXXXXX")
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT

# listening PORT [SOCKET]: softrdma's socket for the listener exists, or (no
# SOCKET) a TCP socket listens on PORT.
listening() {
	if [ -n "$2" ]; then
		[ -S "$2" ]
	else
		grep -qi ":$(printf %04X "$1") 00000000:0000 0A" /proc/net/tcp 2>/dev/null
	fi
}

# run SERVER CLIENT PORT [SOCKET]: a server process, a client process that
# ends it; the client starts once SOCKET (softrdma's listening socket) exists,
# or, for TCP, once the port answers.
run() {
	# shellcheck disable=SC2086 # $wrap is a command line
	$wrap "$1" -a 127.0.0.1 -p "$3" &
	server_pid=$!
	tries=0
	until listening "$3" "${4:-}"; do
		tries=$((tries + 1))
		if [ $tries -gt 3000 ] || ! kill -0 "$server_pid" 2>/dev/null; then
			echo "demo-2proc: the server did not start listening" >&2
			exit 1
		fi
		sleep 0.01
	done
	# shellcheck disable=SC2086
	$wrap "$2" -a 127.0.0.1 -p "$3" -n 5000 -b 20 -s
	status=0
	wait "$server_pid" || status=$?
	server_pid=
	if [ "$status" -ne 0 ]; then
		echo "demo-2proc: the server exited with status $status" >&2
		exit 1
	fi
}

echo "== the rpcgen echo program in two processes, RPC-over-RDMA on softrdma's drop-in libraries"
# The TCP programs below load the drop-in libraries too, and leave them unused.
export LD_LIBRARY_PATH="$dropin" SOFTRDMA_DIR="$dir"
run "$server" "$client" 20049 "$dir/tcp-127.0.0.1-20049"
if [ -n "$tcp" ]; then
	echo "== the same programs built for TCP, over loopback"
	run "$tcp/echo-server-tcp" "$tcp/echo-client-tcp" 20050
fi
echo "== done"
