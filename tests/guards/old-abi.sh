#!/bin/sh
# SPDX-License-Identifier: MIT
# A program built against librpcrdma 0.1 runs against the current library.
# It declares what it uses of 0.1's headers itself (old-abi.c) and is linked
# against a stand-in librpcrdma.so.0 that has 0.1's symbols only, each at
# RPCRDMA_0.1, so that every reference it makes is bound to RPCRDMA_0.1 as a
# real 0.1 link would be; then it runs against the built library, on
# softrdma's drop-in verbs.
# Usage: old-abi.sh LIBDIR DROPIN_DIR BASELINE PROGRAM_C SANITIZE CC [CC args...]
# BASELINE is 0.1's ABI file (abi/librpcrdma-0.1.abi): its symbols are 0.1's.
set -eu
libdir=$1
dropin=$2
baseline=$3
src=$4
sanitize=$5
shift 5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The symbols of 0.1, and a stand-in defining each of them at RPCRDMA_0.1.
sed -n "s/.*<elf-symbol name='\([A-Za-z0-9_]*\)' version='RPCRDMA_0\.1'.*/\1/p" "$baseline" |
	sort -u >"$tmp/names"
[ -s "$tmp/names" ] || { echo "no RPCRDMA_0.1 symbols in $baseline"; exit 1; }
{
	printf 'RPCRDMA_0.1 {\n\tglobal:\n'
	sed 's/.*/\t\t&;/' "$tmp/names"
	printf '\tlocal:\n\t\t*;\n};\n'
} >"$tmp/0.1.map"
awk '{ printf "void %s(void);\nvoid %s(void) {}\n", $0, $0 }' "$tmp/names" >"$tmp/standin.c"
mkdir "$tmp/standin"
"$@" -shared -fPIC -Wl,-soname,librpcrdma.so.0 -Wl,--version-script="$tmp/0.1.map" \
	-o "$tmp/standin/librpcrdma.so" "$tmp/standin.c"

san=
[ "$sanitize" = none ] || san="-fsanitize=$sanitize"
# shellcheck disable=SC2086 # flags are word lists
"$@" $san -o "$tmp/old-abi" "$src" -L"$tmp/standin" -lrpcrdma -lpthread

# Every librpcrdma reference is at 0.1, as in a program linked then.
refs=$(nm -D --undefined-only --with-symbol-versions "$tmp/old-abi" | awk '/rpcrdma_/ { print $2 }')
[ -n "$refs" ] || { echo "old-abi references no librpcrdma symbol"; exit 1; }
bad=$(printf '%s\n' "$refs" | grep -v '@RPCRDMA_0\.1$' || true)
[ -z "$bad" ] || { echo "references not at RPCRDMA_0.1:"; echo "$bad"; exit 1; }

LD_LIBRARY_PATH="$libdir:$dropin" "$tmp/old-abi"
