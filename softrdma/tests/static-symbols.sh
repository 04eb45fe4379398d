#!/bin/sh
# SPDX-License-Identifier: MIT
# libsoftrdma.a defines no global symbol but the public API: the fabric's
# internals are local (localize.sh), so they cannot collide with a program's.
# Usage: static-symbols.sh LIBSOFTRDMA.A
set -eu
. "$(dirname "$0")/../public-names.sh"
extra=$(nm -g --defined-only "$1" | awk 'NF == 3 { print $3 }' |
	grep -v -E "$public_names" || true)
if [ -n "$extra" ]; then
	echo "static-symbols: internal symbols are global in $1:"
	echo "$extra"
	exit 1
fi
n=$(nm -g --defined-only "$1" | awk 'NF == 3' | wc -l)
echo "static-symbols: $n global symbols, all public"
