#!/bin/sh
# SPDX-License-Identifier: MIT
# A program built against librpcrdma 0.1 runs against the current library.
# It is compiled with 0.1's headers (abi/0.1/include) and linked against a
# stand-in librpcrdma.so.0 that has 0.1's version node only, so that every
# reference it makes is bound to RPCRDMA_0.1 as a real 0.1 link would be;
# then it runs against the built library, on softrdma's drop-in verbs.
# Usage: old-abi.sh LIBDIR DROPIN_DIR MAP OLD_INCLUDE PROGRAM_C SANITIZE CC [CC args...]
set -eu
libdir=$1
dropin=$2
map=$3
oldinc=$4
src=$5
sanitize=$6
shift 6
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The RPCRDMA_0.1 node of the map, and a stand-in defining each of its names.
sed -n '/^RPCRDMA_0\.1 {/,/^};/p' "$map" >"$tmp/0.1.map"
sed -e 's@/\*.*\*/@@g' "$tmp/0.1.map" | awk '
	/global:/ { g = 1; next }
	/local:/ { g = 0; next }
	g { gsub(/[ \t;]/, ""); if ($0 != "") printf "void %s(void);\nvoid %s(void) {}\n", $0, $0 }
' >"$tmp/standin.c"
[ -s "$tmp/standin.c" ] || { echo "no RPCRDMA_0.1 node in $map"; exit 1; }
mkdir "$tmp/standin"
"$@" -shared -fPIC -Wl,-soname,librpcrdma.so.0 -Wl,--version-script="$tmp/0.1.map" \
	-o "$tmp/standin/librpcrdma.so" "$tmp/standin.c"

san=
[ "$sanitize" = none ] || san="-fsanitize=$sanitize"
# shellcheck disable=SC2086 # flags are word lists
"$@" $san -I"$oldinc" -o "$tmp/old-abi" "$src" -L"$tmp/standin" -lrpcrdma -lpthread

# Every librpcrdma reference is at 0.1, as in a program linked then.
refs=$(nm -D --undefined-only --with-symbol-versions "$tmp/old-abi" | awk '/rpcrdma_/ { print $2 }')
[ -n "$refs" ] || { echo "old-abi references no librpcrdma symbol"; exit 1; }
bad=$(printf '%s\n' "$refs" | grep -v '@RPCRDMA_0\.1$' || true)
[ -z "$bad" ] || { echo "references not at RPCRDMA_0.1:"; echo "$bad"; exit 1; }

LD_LIBRARY_PATH="$libdir:$dropin" "$tmp/old-abi"
