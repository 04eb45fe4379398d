#!/bin/sh
# SPDX-License-Identifier: MIT
#
# What softrdma's cooperative copy buys (softrdma/wire/wire_shm_coop.c):
# ddp-bench --procs --busy with it off (SOFTRDMA_SHM_COOP=0) and on, runs
# interleaved, so that a shared machine's drift hits both alike. Per
# payload size and direction: the median MB/s of each side over the
# rounds, the median and quartiles of the per-round ratios on/off, and in
# how many rounds it was on that went faster. A benchmark, not a test.
#
#   sh tests/bench/coop-ab.sh [build folder [rounds [size ...]]]
#                                                 (build, 11, 262144 524288 1048576)
set -eu

build=${1:-build}
rounds=${2:-11}
[ $# -gt 2 ] && shift 2 || set --
[ $# -gt 0 ] || set -- 262144 524288 1048576
bench=$build/tests/bench/ddp-bench

case $rounds in
'' | *[!0-9]* | 0) echo "usage: $0 [build folder [rounds >= 1 [size ...]]]" >&2; exit 2 ;;
esac
[ -x "$bench" ] || { echo "$0: no $bench (meson setup -Dbench=true)" >&2; exit 2; }

# One line per run: size, coop (0 or 1), READ-like MB/s, WRITE-like MB/s.
run() {
	SOFTRDMA_SHM_COOP=$2 "$bench" --procs --busy --size "$1" |
		awk -v size="$1" -v coop="$2" '
			/^ +READ-like +[0-9]+ MB\/s/ { r = $2 }
			/^ +WRITE-like +[0-9]+ MB\/s/ { w = $2 }
			END { print size, coop, r, w }'
}

for size in "$@"; do
	i=0
	while [ "$i" -lt "$rounds" ]; do
		run "$size" 0
		run "$size" 1
		i=$((i + 1))
	done
done | awk -v rounds="$rounds" '
	function sort(a, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	}
	# The value at fraction q of the sorted a[1..n], interpolated.
	function at(a, n, q,   p, k) {
		p = 1 + (n - 1) * q; k = int(p)
		return k >= n ? a[n] : a[k] + (p - k) * (a[k + 1] - a[k])
	}
	{ n = ++count[$1, $2]; mb[$1, $2, "READ-like", n] = $3; mb[$1, $2, "WRITE-like", n] = $4
	  if (!($1 in seen)) { seen[$1] = 1; sizes[++nsizes] = $1 } }
	END {
		printf "cooperative copy off/on, ddp-bench --procs --busy, %d interleaved rounds\n", rounds
		printf "%-9s %-10s %9s %9s %7s %13s %8s\n", "size", "RPC", "off MB/s", "on MB/s", "on/off",
			"(quartiles)", "on won"
		for (s = 1; s <= nsizes; s++) for (d = 1; d <= 2; d++) {
			dir = d == 1 ? "READ-like" : "WRITE-like"; size = sizes[s]; n = count[size, 0]; won = 0
			for (i = 1; i <= n; i++) {
				off[i] = mb[size, 0, dir, i]; on[i] = mb[size, 1, dir, i]
				ratio[i] = off[i] > 0 ? on[i] / off[i] : 0; won += on[i] > off[i]
			}
			sort(off, n); sort(on, n); sort(ratio, n)
			printf "%-9d %-10s %9.0f %9.0f %6.2fx  %5.2f-%-5.2f  %3d/%d\n", size, dir,
				at(off, n, 0.5), at(on, n, 0.5), at(ratio, n, 0.5), at(ratio, n, 0.25),
				at(ratio, n, 0.75), won, n
		}
	}'
