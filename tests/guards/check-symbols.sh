#!/bin/sh
# SPDX-License-Identifier: MIT
# The dynamic symbols a shared library defines must be exactly the global
# names of its version script, each at a node of that script.
set -eu
lib=$1
map=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Names listed under "global:" in the map, comments stripped.
sed -e 's@/\*.*\*/@@g' -e 's/#.*//' "$map" | awk '
	/global:/ { g = 1; next }
	/local:/ { g = 0; next }
	/}/ { g = 0; next }
	g { gsub(/[ \t;]/, ""); if ($0 != "") print }
' | sort -u >"$tmp/map"

nodes=$(sed -n 's/^\([A-Z0-9_.]*\)[ \t]*{.*/\1/p' "$map" | tr '\n' ' ')

# Defined dynamic symbols with their version, e.g. "rpcrdma_x@@RPCRDMA_0.1".
nm -D --defined-only --with-symbol-versions "$lib" | awk '{ print $3 }' >"$tmp/all"
status=0
while read -r sym; do
	name=${sym%%@*}
	ver=${sym##*@}
	case " $nodes " in
	*" $name "*) continue ;; # the version node's own absolute symbol
	esac
	case " $nodes " in
	*" $ver "*) ;;
	*) echo "symbol $name has version '$ver', not a node of $map"; status=1 ;;
	esac
	echo "$name"
done <"$tmp/all" | sort -u >"$tmp/lib"

if ! diff -u "$tmp/map" "$tmp/lib"; then
	echo "exported symbols differ from $map ('-' only in the map, '+' only in the library)"
	status=1
fi
[ "$(wc -l <"$tmp/map")" -gt 0 ] || { echo "no symbols parsed from $map"; status=1; }
exit $status
