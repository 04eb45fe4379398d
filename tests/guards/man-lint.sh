#!/bin/sh
# SPDX-License-Identifier: MIT
# Every man page given renders under groff with all warnings on, and
# without a single one.
# Usage: man-lint.sh PAGE...
set -eu
command -v groff >/dev/null 2>&1 || { echo "groff not installed: man pages not checked"; exit 77; }
status=0
for page in "$@"; do
	out=$(groff -ww -z -man "$page" 2>&1)
	if [ -n "$out" ]; then
		echo "$page:"
		echo "$out"
		status=1
	fi
done
exit $status
