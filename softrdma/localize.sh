#!/bin/sh
# SPDX-License-Identifier: MIT
# Turn the archive of softrdma's objects into libsoftrdma.a with one object
# whose only global symbols are the public API (ibv_*, rdma_*, softrdma_*,
# what rdma-core's inline functions call): the fabric's internals (fab_*,
# engine_*, wire_*, net_*, key_*, ...) become local, so they cannot collide
# with a test program's own symbols.
# Usage: localize.sh IN.a OUT.a
set -eu
in=$1
out=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ld -r --whole-archive "$in" -o "$tmp/softrdma.o"
. "$(dirname "$0")/public-names.sh"
# Every global of the archive that is public stays so; the rest go local.
nm -g --defined-only "$tmp/softrdma.o" | awk 'NF == 3 { print $3 }' |
	grep -E "$public_names" | sed 's/^/--keep-global-symbol=/' >"$tmp/keep"
objcopy @"$tmp/keep" "$tmp/softrdma.o"
rm -f "$out"
ar rcs "$out" "$tmp/softrdma.o"
