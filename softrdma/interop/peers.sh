#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Programs nobody here wrote, unmodified, on the drop-in libraries, server
# and client as two processes on loopback:
#   perftest (Debian perftest 4.5): ib_{send,write,read}_{lat,bw}, each with
#     -R (QPs connected through rdma_cm) and without (QP numbers exchanged
#     over TCP, the QPs moved to RTS by hand), at 64 B, 64 KiB and 1 MiB:
#     36 runs;
#   qperf (Debian qperf 0.4.11): rc_lat, rc_bw, rc_rdma_read_bw and
#     rc_rdma_write_bw, with -cm1 (rdma_cm) and in its default mode (QP
#     numbers over its TCP connection), at the same sizes: 24 runs.
# A run passes when both sides end with status 0 within their bound (a
# perftest server's status, a qperf server's log free of errors). Its figure
# is printed beside qperf's tcp_lat or tcp_bw at the same size, measured in
# the same run, as a ratio: figures are a benchmark's on softrdma on this
# machine, printed and never asserted.
#
#	peers.sh <drop-in dir>
#
# Two races are the programs' own, not softrdma's; a run that fails with
# one of them exactly is run again (at most RETRIES times, each printed):
# - qperf 0.4.11's server sends the client the rdma_cm port before it calls
#   rdma_listen() (src/rdma.c, cm_open_server; upstream's fix, "Fix rdmacm
#   race", came after 0.4.11). A client that is quicker is REJECTED, as the
#   kernel's CM rejects a REQ to a service ID nobody listens on; qperf prints
#   "unexpected event from RDMA CM: Event rejected".
# - perftest -R connects twice: its data exchange, then the test's QPs right
#   after a handshake, while the server may not have called rdma_listen()
#   again yet. Its client retries a REJECTED connect (10 times), but
#   4.5-0.17's retry reuses the ids it has just destroyed and crashes
#   (upstream's "Fix crashes and logical flaws in RDMA CM connection
#   retry"): the client prints "RDMA_CM_EVENT_REJECTED; error: 8" (invalid
#   service ID) and dies of SIGSEGV.
#
# Exits 77 (skipped) when perftest or qperf is not installed, and under
# TSan or clang's sanitizers (the programs are not instrumented).
# SOFTRDMA_INTEROP_PRELOAD names the sanitizer runtime of a sanitized build.
set -eu

# Under the valgrind setup this shell is traced, though nothing of ours runs in it.
case "${LD_PRELOAD:-}" in
*vgpreload*) exec env -u LD_PRELOAD /bin/sh "$0" "$@" ;;
esac

dropin=$(cd "$1" && pwd)
for prog in ib_send_lat ib_send_bw ib_write_lat ib_write_bw ib_read_lat ib_read_bw; do
	if ! command -v "$prog" >/dev/null; then
		echo "$prog is not installed (Debian perftest): skipped"
		exit 77
	fi
done
if ! command -v qperf >/dev/null; then
	echo "qperf is not installed (Debian qperf): skipped"
	exit 77
fi
preload=${SOFTRDMA_INTEROP_PRELOAD:-}
case "$preload" in
*tsan*) echo "not under TSan: rdma-core's programs are not instrumented: skipped"; exit 77 ;;
esac
if [ -n "${SOFTRDMA_INTEROP_CLANG_SANITIZED:-}" ]; then
	echo "not with clang's sanitizers: their runtimes cannot be preloaded: skipped"
	exit 77
fi

# Attempts at a run that the programs' own races (above) made fail.
RETRIES=30
# Seconds a client may take: a run takes one or two.
BOUND=15
SIZES="64 65536 1048576"
work=$(mktemp -d)
spid=
cleanup() {
	if [ -n "$spid" ]; then
		kill "$spid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
export LD_LIBRARY_PATH="$dropin"
# How the programs start: with a sanitized build's runtime preloaded (their
# leaks are not ours), or else line-buffered, as their output in a file is
# block-buffered and lost when a bound kills them (stdbuf preloads a
# library of its own, which the sanitizer's runtime would not have first).
wrap="stdbuf -oL"
if [ -n "$preload" ]; then
	export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
	wrap="env LD_PRELOAD=$preload"
fi
# TCP ports below the kernel's ephemeral range and softrdma's own picks
# (40000 and up): 200 of them a run, from a place of this process's own.
next_port=$((10000 + $$ % 100 * 200))
runs=0
failed=0

# A fresh rendezvous directory for each attempt: nothing a run left behind
# (a killed server's socket) is found by the next.
new_dir() {
	next_port=$((next_port + 1))
	port=$next_port
	rdv=$work/rdv-$port
	mkdir -m 0700 "$rdv"
	export SOFTRDMA_DIR="$rdv"
}

# Within 10 s: 0 once @what (a socket file, or "tcp PORT") is there.
await() {
	i=0
	while [ $i -lt 200 ]; do
		case $1 in
		tcp)
			hex=$(printf '%04X' "$2")
			# /proc/net/tcp{,6}: local address ...:PORT, state 0A (LISTEN).
			if awk -v p=":$hex" '$2 ~ p "$" && $4 == "0A" { found = 1 } END { exit !found }' \
				/proc/net/tcp /proc/net/tcp6 2>/dev/null; then
				return 0
			fi ;;
		*) [ -S "$1" ] && return 0 ;;
		esac
		kill -0 "$spid" 2>/dev/null || return 1
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# sstatus: the server's status, once it ended (within 10 s; else killed, 124).
server_status() {
	i=0
	while kill -0 "$spid" 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	sstatus=0
	kill "$spid" 2>/dev/null && sstatus=124
	wait "$spid" || sstatus=$?
	spid=
}

# A qperf figure, @value @unit ("91.7 us", "5.2 MB/sec"), in us or MB/s.
qperf_value() {
	awk -v v="$1" -v u="$2" 'BEGIN {
		f["ns"] = 0.001; f["us"] = 1; f["ms"] = 1000; f["sec"] = 1000000
		f["bytes/sec"] = 0.000001; f["KB/sec"] = 0.001; f["MB/sec"] = 1
		f["GB/sec"] = 1000; f["TB/sec"] = 1000000
		if (!(u in f)) exit 1
		printf "%.3f", v * f[u]
	}'
}

# qperf's first figure in @file: its value in us or MB/s.
qperf_figure() {
	# shellcheck disable=SC2046 # value and unit, two words
	set -- $(awk '/ = / { print $3, $4; exit }' "$1")
	[ $# -eq 2 ] && qperf_value "$1" "$2"
}

# @figure over TCP's @tcp of the same size ("0.53"), or "-" without one.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'
}

# report NAME STATUS FIGURE UNIT TCP: one line of the table.
report() {
	runs=$((runs + 1))
	if [ "$2" = pass ]; then
		printf '%-40s pass %12s %-5s %6s x tcp\n' "$1" "$3" "$4" "$(ratio "$3" "$5")"
	else
		failed=$((failed + 1))
		printf '%-40s FAIL %s\n' "$1" "$2"
	fi
}

show_logs() {
	sed 's/^/    client: /' "$work/client" | grep -v 'GID\|----' | tail -6
	sed 's/^/    server: /' "$work/server" | grep -v 'GID\|----' | tail -4
}

# tcp_lat (us) and tcp_bw (MB/s) at @size, as qperf measures them (0: none).
tcp_figures() {
	new_dir
	$wrap timeout $((2 * BOUND)) qperf -lp "$port" >"$work/server" 2>&1 &
	spid=$!
	$wrap timeout "$BOUND" qperf -lp "$port" -ws 10 -t 1 -m "$1" 127.0.0.1 tcp_lat tcp_bw \
		>"$work/client" 2>&1 || true
	kill "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || true
	spid=
	# shellcheck disable=SC2046 # value and unit of each, four words
	set -- $(awk '/ = / { print $3, $4 }' "$work/client") 0 x 0 x
	tcp_lat=$(qperf_value "$1" "$2") || tcp_lat=0
	tcp_bw=$(qperf_value "$3" "$4") || tcp_bw=0
}

# One perftest pair: TOOL SIZE MODE (cm or plain). Sets result and figure.
perftest_once() {
	pt_tool=$1 pt_size=$2 pt_mode=$3
	set -- -p "$port" -s "$pt_size" -n 200
	[ "$pt_mode" = cm ] && set -- "$@" -R
	$wrap timeout $((2 * BOUND)) "$pt_tool" "$@" >"$work/server" 2>&1 &
	spid=$!
	cstatus=0
	listening="$rdv/tcp-0.0.0.0-$port"
	[ "$pt_mode" = cm ] || listening="tcp $port"
	# shellcheck disable=SC2086 # a word list
	if ! await $listening; then
		kill "$spid" 2>/dev/null || true
		server_status
		result="the server did not listen within 10 s (status $sstatus)"
		return
	fi
	$wrap timeout "$BOUND" "$pt_tool" "$@" 127.0.0.1 >"$work/client" 2>&1 ||
		cstatus=$?
	# A client that failed leaves its server waiting for good.
	[ "$cstatus" -eq 0 ] || kill "$spid" 2>/dev/null || true
	server_status
	result=pass
	if [ "$cstatus" -ne 0 ] || [ "$sstatus" -ne 0 ]; then
		result="client status $cstatus, server status $sstatus"
		return
	fi
	# The line after the header: t_typical (us) or BW average (MiB/s, as MB/s).
	case $pt_tool in
	*_lat) figure=$(awk '/#bytes/ { getline; print $5; exit }' "$work/client") ;;
	*) figure=$(awk '/#bytes/ { getline; printf "%.3f", $4 * 1.048576; exit }' "$work/client") ;;
	esac
	[ -n "$figure" ] || result="no figure in the client's output"
}

# perftest 4.5-0.17's crash in its own retry of a connect that came too
# early: SIGSEGV, or under a sanitizer its report of the SEGV and abort().
perftest_own_race() {
	grep -q 'RDMA_CM_EVENT_REJECTED; error: 8' "$work/client" || return 1
	[ "$cstatus" -eq 139 ] ||
		{ [ "$cstatus" -eq 134 ] && grep -q 'SEGV.* in rdma_resolve_addr' "$work/client"; }
}

# A perftest run: again while it fails of perftest's own race (RETRIES at most).
perftest_run() {
	attempt=1
	while :; do
		new_dir
		perftest_once "$@"
		if [ "$result" = pass ] || [ "$3" != cm ] || [ "$attempt" -ge "$RETRIES" ] ||
			! perftest_own_race; then
			break
		fi
		echo "  ($1 $2 -R: perftest's own connect race, its retry crashed: again)"
		attempt=$((attempt + 1))
	done
	[ "$result" = pass ] || show_logs
}

# One qperf pair: TEST SIZE MODE (cm or plain). Sets result and figure.
qperf_once() {
	q_mode=$3
	$wrap timeout $((2 * BOUND)) qperf -lp "$port" >"$work/server" 2>&1 &
	spid=$!
	set -- -lp "$port" -ws 10 -t 1 -m "$2" 127.0.0.1 "$1"
	[ "$q_mode" = cm ] && set -- -cm1 "$@"
	cstatus=0
	$wrap timeout "$BOUND" qperf "$@" >"$work/client" 2>&1 || cstatus=$?
	# The server forks a child for each test and waits for it: its errors
	# go to its log; the timeout's process group holds both.
	kill "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || true
	spid=
	result=pass
	if [ "$cstatus" -ne 0 ] || grep -qi 'fail\|error\|exceeded\|unexpected' "$work/client"; then
		result="client status $cstatus: $(grep -i 'fail\|error\|exceeded\|unexpected' \
			"$work/client" | head -1)"
	elif grep -qi 'fail\|error\|exceeded\|unexpected' "$work/server"; then
		result="server: $(grep -i 'fail\|error\|exceeded\|unexpected' "$work/server" | head -1)"
	elif ! figure=$(qperf_figure "$work/client") || [ -z "$figure" ]; then
		result="no figure in the client's output"
	fi
}

# A qperf run: again while it fails of qperf's own race (RETRIES at most).
qperf_run() {
	attempt=1
	while :; do
		new_dir
		qperf_once "$@"
		if [ "$result" = pass ] || [ "$3" != cm ] || [ "$attempt" -ge "$RETRIES" ] ||
			! grep -q 'unexpected event from RDMA CM: Event rejected' "$work/client"; then
			break
		fi
		echo "  ($1 -m $2 -cm1: qperf's own race, its port came before rdma_listen: again)"
		attempt=$((attempt + 1))
	done
	[ "$result" = pass ] || show_logs
}

start=$(date +%s)
for size in $SIZES; do
	tcp_figures "$size"
	echo "== $size B: qperf over TCP loopback: tcp_lat $tcp_lat us, tcp_bw $tcp_bw MB/s"
	for tool in ib_send_lat ib_write_lat ib_read_lat ib_send_bw ib_write_bw ib_read_bw; do
		for mode in cm plain; do
			figure=
			perftest_run "$tool" "$size" "$mode"
			flag=
			[ "$mode" = cm ] && flag=" -R"
			case $tool in
			*_lat) report "$tool$flag -s $size" "$result" "$figure" us "$tcp_lat" ;;
			*) report "$tool$flag -s $size" "$result" "$figure" MB/s "$tcp_bw" ;;
			esac
		done
	done
	for test in rc_lat rc_bw rc_rdma_read_bw rc_rdma_write_bw; do
		for mode in cm plain; do
			figure=
			qperf_run "$test" "$size" "$mode"
			flag=
			[ "$mode" = cm ] && flag=" -cm1"
			case $test in
			*_lat) report "qperf$flag -m $size $test" "$result" "$figure" us "$tcp_lat" ;;
			*) report "qperf$flag -m $size $test" "$result" "$figure" MB/s "$tcp_bw" ;;
			esac
		done
	done
done
echo "$((runs - failed)) of $runs runs passed in $(($(date +%s) - start)) s" \
	"(figures on softrdma, this machine; ratios to qperf's TCP loopback)"
[ "$failed" -eq 0 ]
