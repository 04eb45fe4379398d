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
set -eu

tcp=
# 1 MiB results per client: 20 calls take a few ms, too few for a rate; the
# meson test (also run under valgrind) needs only a few.
bigs=200
if [ $# -eq 3 ]; then
	bigs=20
	dropin=$1 server=$2 client=$3
else
	build=${1:-build}
	dropin=$build/softrdma/dropin
	server=$build/examples/echo/echo-server-rdma
	client=$build/examples/echo/echo-client-rdma
	tcp=$build/examples/echo
fi
. "$(dirname "$0")/../2proc.sh"

# What the figures below depend on: the machine, its load, the polling mode.
if [ -n "${RPCRDMA_SPIN_US:-}" ]; then
	mode="RPCRDMA_SPIN_US=$RPCRDMA_SPIN_US (a fixed polling window)"
else
	mode="the library's defaults (the client polls adaptively, the server sleeps)"
fi
echo "== on $(nproc) online cores, load average $(cut -d' ' -f1-3 /proc/loadavg); mode: $mode"
# The client's -s stops the server once its calls are checked.
echo "== the rpcgen echo program in two processes, RPC-over-RDMA on softrdma's drop-in libraries"
server_start 20049 "$server" -a 127.0.0.1 -p 20049
client "$client" -a 127.0.0.1 -p 20049 -n 5000 -b "$bigs" -s
server_wait
if [ -n "$tcp" ]; then
	# These load the drop-in libraries too, and leave them unused.
	echo "== the same programs built for TCP, over loopback"
	server_start 20050 tcp "$tcp/echo-server-tcp" -a 127.0.0.1 -p 20050
	client "$tcp/echo-client-tcp" -a 127.0.0.1 -p 20050 -n 5000 -b "$bigs" -s
	server_wait
fi
echo "== done"
