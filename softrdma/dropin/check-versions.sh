#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The drop-in library exports every symbol the installed rdma-core library
# exports, at the same versions (default or not), nothing else (softrdma's
# own SOFTRDMA_PRIVATE node aside), and defines all of its version nodes:
# a program or provider linked against rdma-core, even with BIND_NOW,
# loads on it.
# Usage: check-versions.sh <drop-in library> <installed library>
# Exits 77 (skipped) when the installed library or binutils are missing.
set -eu
ours=$1
real=$2
if [ ! -e "$real" ]; then
	echo "$real is not installed: skipped"
	exit 77
fi
if ! command -v nm >/dev/null || ! command -v readelf >/dev/null; then
	echo "nm and readelf (binutils) are needed: skipped"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Defined symbols with their version: name@@NODE (default) or name@NODE.
versioned() {
	nm -D --with-symbol-versions --defined-only "$1" | awk '$3 ~ /@/ { print $3 }' | sort
}

# Version definitions, without the soname's base entry.
nodes() {
	readelf -V --wide "$1" | awk '
		/Version definition section/ { d = 1; next }
		/Version (needs|symbols) section/ { d = 0 }
		d && /Name:/ { print $NF }' | grep -v '\.so' | sort -u
}

versioned "$ours" | grep -v '@@SOFTRDMA_PRIVATE$' >"$tmp/ours"
versioned "$real" >"$tmp/real"
wrong=$(comm -23 "$tmp/ours" "$tmp/real")
if [ -n "$wrong" ]; then
	echo "$ours: not at these versions in $real:"
	echo "$wrong"
	exit 1
fi
missing=$(comm -13 "$tmp/ours" "$tmp/real")
if [ -n "$missing" ]; then
	echo "$ours: lacks what $real exports:"
	echo "$missing"
	exit 1
fi
nodes "$ours" | grep -v '^SOFTRDMA_PRIVATE$' >"$tmp/our_nodes"
nodes "$real" >"$tmp/real_nodes"
if ! cmp -s "$tmp/our_nodes" "$tmp/real_nodes"; then
	echo "$ours: version nodes differ from $real:"
	diff "$tmp/real_nodes" "$tmp/our_nodes" || true
	exit 1
fi
echo "$(wc -l <"$tmp/ours") versioned symbols and" \
	"$(wc -l <"$tmp/our_nodes") version nodes, as in $real"
