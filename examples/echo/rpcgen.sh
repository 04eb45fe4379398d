#!/bin/sh
# SPDX-License-Identifier: MIT
# Run rpcgen for the build. rpcgen names the header that generated code
# includes after the path of its input, so it runs in the output directory,
# on a copy of the .x placed there (atomically: several outputs are made in
# parallel).
# Usage: rpcgen.sh RPCGEN "FLAGS" INPUT.x OUTPUT
set -eu
rpcgen=$1
flags=$2
input=$3
output=$4
dir=$(dirname "$output")
base=$(basename "$input")
if ! cmp -s "$input" "$dir/$base" 2>/dev/null; then
	tmp=$(mktemp "$dir/.$base.XXXXXX")
	cp "$input" "$tmp"
	mv -f "$tmp" "$dir/$base"
fi
cd "$dir"
# rpcgen refuses to overwrite its output: a rebuild removes it first.
rm -f "$(basename "$output")"
# shellcheck disable=SC2086 # a word list
exec "$rpcgen" $flags -o "$(basename "$output")" "$base"
