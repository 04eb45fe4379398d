#!/bin/sh
# SPDX-License-Identifier: MIT
# Every man page given renders under groff with all warnings on, and
# without a single one. A directory stands for every page below it
# (files named *.1 to *.9). Pages are rendered with their man directory
# (the parent of man3/, man7/) on groff's search path, so that a link page
# (".so man3/other.3") renders its target, and a link to a missing page
# fails.
# Usage: man-lint.sh PAGE|DIR...
set -eu
command -v groff >/dev/null 2>&1 || { echo "groff not installed: man pages not checked"; exit 77; }

lint() {
	root=$(dirname "$(dirname "$1")")
	out=$(groff -ww -z -man -I "$root" "$1" 2>&1) || out="$out${out:+
}groff failed"
	if [ -n "$out" ]; then
		echo "$1:"
		echo "$out"
		return 1
	fi
	return 0
}

status=0
count=0
for arg in "$@"; do
	if [ -d "$arg" ]; then
		pages=$(find "$arg" -type f -name '*.[1-9]' | sort)
	else
		pages=$arg
	fi
	for page in $pages; do
		count=$((count + 1))
		lint "$page" || status=1
	done
done
[ "$count" -gt 0 ] || { echo "no man pages found in: $*"; exit 1; }
echo "$count pages checked"
exit $status
