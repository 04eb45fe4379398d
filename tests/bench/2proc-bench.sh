#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Two-process figures: servers and clients as separate processes, as users
# run them, on softrdma's drop-in libibverbs.so.1/librdmacm.so.1 (its socket
# backend carries the RDMA traffic between the processes):
#   rdma    examples/echo's rpcgen programs over RPC-over-RDMA (echo-*-rdma)
#   tcp     the same sources built for TCP, over loopback (echo-*-tcp)
#   native  examples/native's echo programs on the native API (0-byte echoes)
#   memcpy  one thread's memcpy() of 1 MiB blocks, a reference (memcpy-bench)
# ROUNDS rounds, each running all four with the first one rotating from round
# to round, so that a noisy machine's drift hits every column alike. The
# table gives each figure's median over the rounds and the median of the
# per-round ratios. A benchmark, not a test: the test suite does not run it.
#
# BUSY lists how many CPU-bound processes run beside the benchmark, one
# level after the other ("0,1,2": quiet, then one, then two): a table for
# each level, then the ratios of every level side by side. Each table
# begins with the machine (online cores, load average) it was taken on.
#
#   sh tests/bench/2proc-bench.sh [build folder [rounds [busy]]]   (build, 5, 0)
set -eu

build=${1:-build}
rounds=${2:-5}
levels=$(echo "${3:-0}" | tr ',' ' ')
nulls=20000	# NULL calls per client run (native: 0-byte echo calls)
bigs=100	# 1 MiB results per rpcgen client run

usage() {
	echo "usage: $0 [build folder [rounds, 1 to 500 [busy processes, 0 to 16, a list: 0,1,2]]]" >&2
	exit 2
}
case $rounds in
'' | *[!0-9]*) usage ;;
esac
if [ "$rounds" -lt 1 ] || [ "$rounds" -gt 500 ]; then usage; fi
nlevels=0
for level in $levels; do
	case $level in
	'' | *[!0-9]*) usage ;;
	esac
	[ "$level" -le 16 ] || usage
	nlevels=$((nlevels + 1))
done
[ "$nlevels" -ge 1 ] || usage

# Bound the whole run: timeout signals this shell and its children, and the
# EXIT trap below stops the server that is up and the busy processes.
if [ -z "${RPCRDMA_2PROC_BENCH_BOUNDED:-}" ]; then
	RPCRDMA_2PROC_BENCH_BOUNDED=1 exec timeout $((60 + 60 * rounds * nlevels)) sh "$0" "$@"
fi

echo_dir=$build/examples/echo
native_dir=$build/examples/native
memcpy_bench=$build/tests/bench/memcpy-bench
for f in "$echo_dir/echo-server-tcp" "$echo_dir/echo-client-tcp" "$native_dir/echo-server" \
	"$native_dir/echo-client" "$memcpy_bench"; do
	if [ ! -x "$f" ]; then
		echo "2proc-bench: $f is missing (configure with -Dtests=enabled and build)" >&2
		exit 1
	fi
done
dropin=$build/softrdma/dropin
server=$echo_dir/echo-server-rdma
client=$echo_dir/echo-client-rdma
# server_start, server_wait, $server_pid, the rendezvous directory and its cleanup.
# shellcheck source-path=SCRIPTDIR source=../../examples/2proc.sh
. "$(dirname "$0")/../../examples/2proc.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/2proc-bench.XXXXXX")
busy_pids=
# busy_start N / busy_stop: N CPU-bound processes beside the benchmark.
busy_start() {
	i=0
	while [ "$i" -lt "$1" ]; do
		sh -c 'while :; do :; done' &
		busy_pids="$busy_pids $!"
		i=$((i + 1))
	done
}
busy_stop() {
	for pid in $busy_pids; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	busy_pids=
}
trap 'busy_stop; cleanup; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# server_csw: the context switches of every thread of the server so far.
server_csw() {
	awk '/^(voluntary|nonvoluntary)_ctxt_switches:/ { s += $2 } END { print s + 0 }' \
		/proc/"$server_pid"/task/*/status
}

# server_end: wait at most 10 s for the server to exit (then kill it), and reap it.
server_end() {
	tries=0
	# An exited child stays a zombie until waited for: kill -0 would still succeed.
	while [ -d /proc/"$server_pid" ] &&
		! grep -q '^State:[[:space:]]*Z' /proc/"$server_pid"/status 2>/dev/null; do
		tries=$((tries + 1))
		if [ $tries -gt 1000 ]; then
			echo "2proc-bench: the server did not exit; killing it" >&2
			kill -KILL "$server_pid" 2>/dev/null || true
			break
		fi
		sleep 0.01
	done
	server_wait
}

# record KIND ROUND FIGURE VALUE: keep a figure; an empty VALUE means the output was not understood.
record() {
	if [ -z "$4" ]; then
		echo "2proc-bench: no '$3' figure in the $1 run of round $2:" >&2
		cat "$work/out" >&2
		exit 1
	fi
	echo "$1 $2 $3 $4" >>"$values"
}

# parse_client KIND ROUND SERVER_CSW: the figures of the client output in $work/out.
parse_client() {
	rate_lat=$(sed -n 's|.* \([0-9.]*\) calls/s, median \([0-9.]*\) us$|\1 \2|p' "$work/out")
	record "$1" "$2" rate "${rate_lat% *}"
	record "$1" "$2" lat "${rate_lat#* }"
	record "$1" "$2" ccsw \
		"$(sed -n 's|.*: \([0-9.]*\) context switches per call (client)$|\1|p' "$work/out")"
	record "$1" "$2" scsw "$(awk -v d="$3" -v n="$nulls" 'BEGIN { printf "%.2f", d / n }')"
}

# run_rpcgen KIND(rdma|tcp) ROUND: one rpcgen server and client run.
run_rpcgen() {
	if [ "$1" = tcp ]; then
		port=$((22000 + $2))
		server_start "$port" tcp "$echo_dir/echo-server-tcp" -a 127.0.0.1 -p "$port" \
			>"$work/server.log"
	else
		port=$((21000 + $2))
		server_start "$port" "$echo_dir/echo-server-rdma" -a 127.0.0.1 -p "$port" \
			>"$work/server.log"
	fi
	csw0=$(server_csw)
	if ! timeout 120 "$echo_dir/echo-client-$1" -a 127.0.0.1 -p "$port" -n "$nulls" \
		-b "$bigs" >"$work/out" 2>&1; then
		echo "2proc-bench: the $1 client failed in round $2:" >&2
		cat "$work/out" >&2
		exit 1
	fi
	csw1=$(server_csw)
	parse_client "$1" "$2" $((csw1 - csw0))
	record "$1" "$2" mib "$(sed -n 's|.*1 MiB results: \([0-9.]*\) MiB/s$|\1|p' "$work/out")"
	# No calls, only the checked echoes, then ECHO_STOP.
	timeout 30 "$echo_dir/echo-client-$1" -a 127.0.0.1 -p "$port" -n 0 -b 0 -s \
		>/dev/null 2>&1 || kill -TERM "$server_pid" 2>/dev/null || true
	server_end
}

# run_native ROUND: the native echo server and a client of 0-byte echoes.
run_native() {
	port=$((23000 + $1))
	server_start "$port" "$native_dir/echo-server" -a 127.0.0.1 -p "$port" >"$work/server.log"
	csw0=$(server_csw)
	if ! timeout 120 "$native_dir/echo-client" -a 127.0.0.1 -p "$port" -n "$nulls" -s 0 \
		>"$work/out" 2>&1; then
		echo "2proc-bench: the native client failed in round $1:" >&2
		cat "$work/out" >&2
		exit 1
	fi
	csw1=$(server_csw)
	parse_client native "$1" $((csw1 - csw0))
	kill -TERM "$server_pid"
	server_end
}

run_memcpy() {
	timeout 60 "$memcpy_bench" >"$work/out"
	record memcpy "$1" mib "$(sed -n 's|.*1 thread: \([0-9.]*\) MiB/s.*|\1|p' "$work/out")"
}

# run_level BUSY: ROUNDS rounds with BUSY CPU-bound processes beside them, into $values.
run_level() {
	kinds="rdma tcp native memcpy"
	busy_start "$1"
	r=1
	while [ $r -le "$rounds" ]; do
		echo "2proc-bench: $1 busy, round $r/$rounds: $kinds" >&2
		for kind in $kinds; do
			case $kind in
			rdma | tcp) run_rpcgen "$kind" $r ;;
			native) run_native $r ;;
			memcpy) run_memcpy $r ;;
			esac
		done
		kinds="${kinds#* } ${kinds%% *}"
		r=$((r + 1))
	done
	busy_stop
}

# The table: medians over the rounds, and medians of the per-round ratios.
cat >"$work/table.awk" <<'AWK'
function median(list,    v, n, i, j, t) {
	n = split(list, v, " ")
	if (n == 0)
		return ""
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
			t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
		}
	return v[int(n / 2) + 1]
}
# The median over the rounds of KIND FIGURE, or of the per-round ratio KIND/BASE.
function med(kind, fig) {
	return median(all[kind, fig])
}
function ratio(kind, base, fig, bfig,    r, list) {
	list = ""
	for (r = 1; r <= rounds; r++)
		if (((base, r, bfig) in v) && v[base, r, bfig] + 0 > 0 && ((kind, r, fig) in v))
			list = list " " v[kind, r, fig] / v[base, r, bfig]
	return median(list)
}
function cell(x, fmt, width) {
	return x == "" ? sprintf("%" width "s", "-") : sprintf("%" width fmt, x)
}
function row(label, fig, fmt, native_too,    native, native_ratio) {
	native = native_too ? med("native", fig) : ""
	native_ratio = native_too ? ratio("native", "tcp", fig, fig) : ""
	printf "%-40s%s%s%s%s%s\n", label, cell(med("tcp", fig), fmt, 13),
		cell(med("rdma", fig), fmt, 13), cell(native, fmt, 13),
		cell(ratio("rdma", "tcp", fig, fig), ".2f", 10), cell(native_ratio, ".2f", 11)
}
{
	v[$1, $2, $3] = $4
	all[$1, $3] = all[$1, $3] " " $4
}
END {
	if (summary) {
		printf "%6u %10s %10s %10s %8s %8s %8s %8s %9s\n", busy,
			cell(med("tcp", "lat"), ".1f", 0), cell(ratio("rdma", "tcp", "rate", "rate"), ".2f", 0),
			cell(ratio("native", "tcp", "rate", "rate"), ".2f", 0),
			cell(med("rdma", "ccsw"), ".2f", 0), cell(med("rdma", "scsw"), ".2f", 0),
			cell(med("tcp", "ccsw"), ".2f", 0), cell(med("tcp", "scsw"), ".2f", 0),
			cell(ratio("rdma", "tcp", "mib", "mib"), ".2f", 0)
		exit
	}
	printf "%-40s%13s%13s%13s%10s%11s\n",
		"two processes, median of " rounds (rounds == 1 ? " round" : " rounds"),
		"rpcgen TCP", "rpcgen RDMA", "native API", "RDMA/TCP", "native/TCP"
	printf "%-40s%13s%13s%13s\n", "", "loopback", "on softrdma", "on softrdma"
	row("NULL calls/s (a)", "rate", ".0f", 1)
	row("NULL median latency (us) (a)", "lat", ".1f", 1)
	row("ctx switches per NULL call, client (b)", "ccsw", ".2f", 1)
	row("ctx switches per NULL call, server (c)", "scsw", ".2f", 1)
	row("1 MiB results, MiB/s", "mib", ".0f", 0)
	printf "%-40s%s%s%s\n", "1 MiB results / memcpy (d)",
		cell(ratio("tcp", "memcpy", "mib", "mib"), ".3f", 13),
		cell(ratio("rdma", "memcpy", "mib", "mib"), ".3f", 13), cell("", ".3f", 13)
	printf "%-40s%s\n", "memcpy 1 MiB blocks, 1 thread, MiB/s (d)",
		cell(med("memcpy", "mib"), ".0f", 13)
	printf "Per client run: %u NULL calls (native: 0-byte echoes), %u 1 MiB results.\n",
		nulls, bigs
	print "Rounds interleaved, the first program rotating. Ratios: medians of the per-round"
	print "ratios (above 1: RDMA or native is higher; for latency and switches, worse)."
	print "(a) native: examples/native/echo-client -s 0, its own echo program, not rpcgen NULL;"
	print "    native/TCP compares it with the rpcgen programs over TCP."
	print "(b) getrusage(RUSAGE_SELF) around the NULL loop: every client thread, softrdma's"
	print "    socket thread too."
	print "(c) approximate: /proc/PID/task/*/status voluntary+nonvoluntary switches of the live"
	print "    server threads over the whole client run (connection, checked echoes and 1 MiB"
	print "    results too), divided by the NULL calls."
	print "(d) one thread copying the same warm 1 MiB block (tests/bench/memcpy-bench), run in"
	print "    each round; the ratio is per round."
	printf "%u round%s in %u s.\n", rounds, rounds == 1 ? "" : "s", secs
}
AWK

# The machine a table was taken on: cores, and the load just before.
machine() {
	echo "machine: $(nproc) online cores ($(nproc --all) in all), load average" \
		"$(cut -d' ' -f1-3 /proc/loadavg); $1 CPU-bound processes beside the benchmark"
}

for level in $levels; do
	values=$work/values-$level	# lines of "kind round figure value"
	: >"$values"
	header=$(machine "$level")
	start=$(date +%s)
	run_level "$level"
	echo "$header"
	awk -v rounds="$rounds" -v nulls="$nulls" -v bigs="$bigs" \
		-v secs=$(($(date +%s) - start)) -f "$work/table.awk" "$values"
	echo
done
[ "$nlevels" -gt 1 ] || exit 0
echo "Every level side by side (medians; switches per NULL call; 1 MiB: RDMA/TCP):"
printf "%6s %10s %10s %10s %8s %8s %8s %8s %9s\n" busy "TCP lat us" RDMA/TCP \
	native/TCP "RDMA cl" "RDMA sv" "TCP cl" "TCP sv" "1 MiB"
for level in $levels; do
	awk -v rounds="$rounds" -v summary=1 -v busy="$level" -f "$work/table.awk" \
		"$work/values-$level"
done
