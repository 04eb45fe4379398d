#!/bin/sh
# SPDX-License-Identifier: MIT
# Every symbol of the version script has a manual page: man3/<symbol>.3,
# a page of its own or a one-line ".so man3/<page>.3" link to the page that
# documents it, whose NAME section lists the symbol. Also: every link
# leads to a page (not to another link), every page under the man
# directory is listed in its meson.build (so that it is installed), and
# every page's .TH names this release ("librpcrdma MAJOR.MINOR").
# Usage: man-coverage.sh MAPFILE MANDIR VERSION
set -eu
for tool in awk sed grep sort find tr cut wc mktemp; do
	command -v "$tool" >/dev/null 2>&1 || { echo "$tool not installed: man pages not checked"; exit 77; }
done
[ $# -eq 3 ] || { echo "usage: $0 MAPFILE MANDIR VERSION"; exit 2; }
map=$1
man=$2
release="librpcrdma $(echo "$3" | cut -d. -f1-2)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Names listed under "global:" in the map, comments stripped (as check-symbols.sh).
sed -e 's@/\*.*\*/@@g' -e 's/#.*//' "$map" | awk '
	/global:/ { g = 1; next }
	/local:/ { g = 0; next }
	/}/ { g = 0; next }
	g { gsub(/[ \t;]/, ""); if ($0 != "") print }
' | sort -u >"$tmp/symbols"
[ -s "$tmp/symbols" ] || { echo "no symbols parsed from $map"; exit 1; }

# The target of a link page ("man3/x.3"), or nothing for a page of its own.
link_target() {
	[ "$(wc -l <"$1")" -le 1 ] || return 0
	sed -n 's@^\.so[ \t]\{1,\}\(man[1-9]/[^ \t]*\)[ \t]*$@\1@p' "$1"
}

# The names a page's NAME section gives (before its "\-"), one per line.
page_names() {
	awk '/^\.SH/ { n = ($2 == "NAME"); next } n { printf "%s ", $0 }' "$1" |
		sed -e 's/\\-.*//' -e 's/\\f[BIRP]//g' | tr ', ' '\n\n' | sed '/^$/d'
}

status=0
pages=0
links=0
while read -r sym; do
	page="$man/man3/$sym.3"
	if [ ! -f "$page" ]; then
		echo "$sym: no page (expected $page, a page or a .so link)"
		status=1
		continue
	fi
	target=$(link_target "$page")
	if [ -n "$target" ]; then
		links=$((links + 1))
		if [ ! -f "$man/$target" ]; then
			echo "$sym: $page links to $target, which does not exist"
			status=1
			continue
		fi
		if [ -n "$(link_target "$man/$target")" ]; then
			echo "$sym: $page links to $target, which is itself a link"
			status=1
			continue
		fi
		page="$man/$target"
	else
		pages=$((pages + 1))
	fi
	if ! page_names "$page" | grep -qx "$sym"; then
		echo "$sym: $page does not name it in its NAME section"
		status=1
	fi
done <"$tmp/symbols"

# Every page is installed, and pages of their own name this release.
find "$man" -type f -name '*.[1-9]' | sort >"$tmp/files"
while read -r file; do
	rel=${file#"$man"/}
	if ! grep -q "'$rel'" "$man/meson.build"; then
		echo "$rel: not listed in $man/meson.build, so not installed"
		status=1
	fi
	[ -z "$(link_target "$file")" ] || continue
	if ! grep -q "^\.TH .*\"$release\"" "$file"; then
		echo "$rel: its .TH does not name \"$release\""
		status=1
	fi
done <"$tmp/files"

echo "$(wc -l <"$tmp/symbols") symbols: $pages with a page of their own, $links through a link"
exit $status
