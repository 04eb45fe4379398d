#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the build into a scratch DESTDIR, then build a program out of tree
# with only `pkg-config --cflags --libs librpcrdma`, and run it.
# Usage: install-consumer.sh BUILD_ROOT CONSUMER_C SANITIZE CC [CC args...]
set -eu
build=$1
src=$2
sanitize=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/root" >"$tmp/install.log" 2>&1 || {
	cat "$tmp/install.log"
	exit 1
}
pc=$(find "$tmp/root" -name librpcrdma.pc | head -n 1)
[ -n "$pc" ] || { echo "librpcrdma.pc was not installed"; exit 1; }
export PKG_CONFIG_PATH="$(dirname "$pc")"
export PKG_CONFIG_SYSROOT_DIR="$tmp/root"
cflags=$(pkg-config --cflags librpcrdma)
libs=$(pkg-config --libs librpcrdma)
libdir="$tmp/root$(pkg-config --variable=libdir librpcrdma | sed "s@^$tmp/root@@")"

san=
[ "$sanitize" = none ] || san="-fsanitize=$sanitize"
# shellcheck disable=SC2086 # flags are word lists
"$@" $san -o "$tmp/consumer" "$src" $cflags $libs
LD_LIBRARY_PATH="$libdir" "$tmp/consumer"
# The program must have loaded the installed copy, not one from the build.
LD_LIBRARY_PATH="$libdir" ldd "$tmp/consumer" | grep -q "$tmp/root.*librpcrdma.so.0" || {
	echo "consumer did not resolve librpcrdma.so.0 in the install tree"
	exit 1
}
