#!/bin/sh
# SPDX-License-Identifier: MIT
# Compile a translation unit that includes only one public header, as strict
# C11, so that every header stands alone and is free of extensions.
# Usage: header-alone.sh HEADER INCLUDEDIR CC [CFLAGS...]
set -eu
header=$1
incdir=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <rpcrdma/%s>\nint main(void) { return 0; }\n' "$header" >"$tmp/t.c"
"$@" -std=c11 -pedantic -Werror -Wall -Wextra -I"$incdir" -c "$tmp/t.c" -o "$tmp/t.o"
