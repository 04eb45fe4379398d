#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the build into a scratch DESTDIR, then build and run
# examples/testing, a consumer project's cmocka suite, out of tree the way
# its users would: found only through `pkg-config librpcrdma softrdma`, its
# tests link the installed librpcrdma and the installed softrdma drop-ins in
# place of rdma-core, and run over RPC-over-RDMA without hardware.
# Usage: install-testing.sh BUILD_ROOT EXAMPLE_DIR SANITIZE CC [CC args...]
set -eu
build=$1
src=$2
sanitize=$3
cc=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/root" >"$tmp/install.log" 2>&1 || {
	cat "$tmp/install.log"
	exit 1
}
# The installed .pc files with their prefix moved into the scratch root.
mkdir "$tmp/pc"
for name in librpcrdma softrdma; do
	pc=$(find "$tmp/root" -name "$name.pc" | head -n 1)
	[ -n "$pc" ] || { echo "$name.pc was not installed"; exit 1; }
	prefix=$(sed -n 's/^prefix=//p' "$pc")
	sed "s@^prefix=.*@prefix=$tmp/root$prefix@" "$pc" >"$tmp/pc/$name.pc"
done
[ -f "$tmp/root$prefix/include/softrdma/softrdma.h" ] || {
	echo "softrdma.h was not installed"
	exit 1
}
export PKG_CONFIG_PATH="$tmp/pc"
libdir=$(pkg-config --variable=libdir librpcrdma)

CC=$cc meson setup "$tmp/build" "$src" -Db_sanitize="$sanitize" -Db_lundef=false \
	>"$tmp/setup.log" 2>&1 || {
	cat "$tmp/setup.log"
	exit 1
}
ninja -C "$tmp/build" >"$tmp/ninja.log" 2>&1 || {
	cat "$tmp/ninja.log"
	exit 1
}
# The suite must run on the drop-ins, not on rdma-core (which has no device here).
LD_LIBRARY_PATH="$libdir" ldd "$tmp/build/test-store" >"$tmp/ldd.out"
for lib in libibverbs.so.1 librdmacm.so.1; do
	grep -q "$lib => $tmp/root.*/softrdma/$lib" "$tmp/ldd.out" || {
		cat "$tmp/ldd.out"
		echo "test-store did not resolve $lib to the installed drop-in"
		exit 1
	}
done
LD_LIBRARY_PATH="$libdir" meson test -C "$tmp/build" --print-errorlogs
echo "examples/testing built against the installed librpcrdma and softrdma, and passed"
