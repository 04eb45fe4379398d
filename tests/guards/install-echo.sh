#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the build into a scratch DESTDIR, then build the rpcgen echo
# example out of tree the way a user would, with rpcgen and
# `pkg-config --cflags --libs librpcrdma` only: the server and client for
# TCP and, from the same sources with -DECHO_RDMA, for RDMA. The TCP pair
# then runs a round of calls (the RDMA pair needs an RDMA device).
# Usage: install-echo.sh BUILD_ROOT ECHO_SRC_DIR RPCGEN SANITIZE CC [CC args...]
set -eu
build=$1
src=$2
rpcgen=$3
sanitize=$4
shift 4
tmp=$(mktemp -d)
server=
cleanup() {
	[ -z "$server" ] || kill "$server" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/root" >"$tmp/install.log" 2>&1 || {
	cat "$tmp/install.log"
	exit 1
}
pc=$(find "$tmp/root" -name librpcrdma.pc | head -n 1)
[ -n "$pc" ] || { echo "librpcrdma.pc was not installed"; exit 1; }
# The installed .pc with its prefix moved into the scratch root. Not
# PKG_CONFIG_SYSROOT_DIR: that would move libtirpc's -I/usr/include/tirpc too.
mkdir "$tmp/pc"
prefix=$(sed -n 's/^prefix=//p' "$pc")
sed "s@^prefix=.*@prefix=$tmp/root$prefix@" "$pc" >"$tmp/pc/librpcrdma.pc"
export PKG_CONFIG_PATH="$tmp/pc"
cflags=$(pkg-config --cflags librpcrdma)
libs=$(pkg-config --libs librpcrdma)
libdir=$(pkg-config --variable=libdir librpcrdma)

mkdir "$tmp/echo"
cp "$src/echo.x" "$src/echo_demo.h" "$src/echo_proc.c" "$src/echo_run.c" \
	"$src/echo_server.c" "$src/echo_client.c" "$tmp/echo/"
cd "$tmp/echo"
"$rpcgen" -M -h -o echo.h echo.x
"$rpcgen" -M -c -o echo_xdr.c echo.x
"$rpcgen" -M -m -o echo_svc.c echo.x
"$rpcgen" -M -l -o echo_clnt.c echo.x

san=
[ "$sanitize" = none ] || san="-fsanitize=$sanitize"
common="echo_xdr.c echo_svc.c echo_clnt.c echo_proc.c echo_run.c"
for variant in tcp rdma; do
	def=
	[ "$variant" = tcp ] || def=-DECHO_RDMA
	# shellcheck disable=SC2086 # flags are word lists
	"$@" $san $def -o "echo-server-$variant" echo_server.c $common $cflags $libs
	# shellcheck disable=SC2086
	"$@" $san $def -o "echo-client-$variant" echo_client.c $common $cflags $libs
done
# The RDMA pair must resolve the installed library.
LD_LIBRARY_PATH="$libdir" ldd echo-client-rdma | grep -q "$tmp/root.*librpcrdma.so.0" || {
	echo "echo-client-rdma did not resolve librpcrdma.so.0 in the install tree"
	exit 1
}

# A round of calls over TCP: the server picks a port and says which. The
# file exists before the server starts: the background job opens it later.
: >server.out
LD_LIBRARY_PATH="$libdir" ./echo-server-tcp -a 127.0.0.1 -p 0 >server.out 2>&1 &
server=$!
port=
for _ in $(seq 1 100); do
	port=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' server.out)
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || { cat server.out; echo "echo-server-tcp did not start"; exit 1; }
LD_LIBRARY_PATH="$libdir" ./echo-client-tcp -a 127.0.0.1 -p "$port" -n 200 -b 2 -s
wait "$server"
server=
echo "echo example built against the installed library (TCP and RDMA) and run over TCP"
