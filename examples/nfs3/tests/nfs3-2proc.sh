#!/bin/sh
# SPDX-License-Identifier: MIT
#
# nfs3-server and nfs3-cp as separate processes, built against rdma-core and
# run on softrdma's drop-in libibverbs.so.1/librdmacm.so.1 (LD_LIBRARY_PATH):
# files put and got back byte for byte over RDMA (the client's counters show
# the Read and Write chunks) and over TCP, a listing, four clients at once, a
# client killed with SIGKILL in the middle of a put while the server goes on
# serving, rpcbind's view when an rpcbind answers, and a clean stop.
#
#   nfs3-2proc.sh <drop-in folder> <nfs3-server> <nfs3-cp>      (the meson test)
#   sh examples/nfs3/tests/nfs3-2proc.sh [build folder]
set -eu

if [ $# -eq 3 ]; then
	dropin=$1 server=$2 cp=$3
else
	build=${1:-build}
	dropin=$build/softrdma/dropin
	server=$build/examples/nfs3/nfs3-server
	cp=$build/examples/nfs3/nfs3-cp
fi
for f in "$dropin/libibverbs.so.1" "$dropin/librdmacm.so.1" "$server" "$cp"; do
	if [ ! -e "$f" ]; then
		echo "nfs3-2proc: $f is missing (configure with -Dtests=enabled and build)" >&2
		exit 1
	fi
done

# Bounded as a whole: the EXIT trap stops what is still running.
if [ -z "${NFS3_2PROC_BOUNDED:-}" ]; then
	NFS3_2PROC_BOUNDED=1 exec timeout 100 sh "$0" "$dropin" "$server" "$cp"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/nfs3-2proc.XXXXXX")
server_pid=
killed_pid=
cleanup() {
	for pid in $killed_pid $server_pid; do
		kill -KILL "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir "$work/rdv" "$work/export"
export LD_LIBRARY_PATH="$dropin" SOFTRDMA_DIR="$work/rdv"
export_dir=$(cd "$work/export" && pwd -P)

fail() {
	echo "nfs3-2proc: $*" >&2
	exit 1
}

# wait_for TRIES COMMAND...: run COMMAND every 10 ms until it succeeds.
wait_for() {
	tries=$1
	shift
	while ! "$@"; do
		tries=$((tries - 1))
		[ "$tries" -gt 0 ] || return 1
		sleep 0.01
	done
}

rpcbind_up=
if command -v rpcinfo >/dev/null 2>&1 && rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
	rpcbind_up=1
fi

# The server registers with rpcbind by default: only when one answers here.
rpcbind_opt=--no-rpcbind
if [ -n "$rpcbind_up" ]; then
	rpcbind_opt=
fi

echo "== nfs3-server on softrdma's drop-in libraries, RDMA and TCP"
# shellcheck disable=SC2086 # $rpcbind_opt is one option or none
"$server" -a 127.0.0.1 -p 0 -t 0 -n 3 $rpcbind_opt -r "$work/ready" "$export_dir" \
	>"$work/server.out" 2>"$work/server.err" &
server_pid=$!
wait_for 1000 test -s "$work/ready" || fail "the server did not start: $(cat "$work/server.err")"
rdma_port=$(awk '$1 == "rdma" { print $2 }' "$work/ready")
tcp_port=$(awk '$1 == "tcp" { print $2 }' "$work/ready")

nfs() {
	transport=$1
	shift
	if [ "$transport" = rdma ]; then
		"$cp" -x rdma -a 127.0.0.1 -p "$rdma_port" -e "$export_dir" "$@"
	else
		"$cp" -x tcp -a 127.0.0.1 -p "$tcp_port" -e "$export_dir" "$@"
	fi
}

# The counter named $2 on the "rdma calls ..." line of nfs3-cp -s output $1.
counter() {
	sed -n "s/.* $2 \([0-9]*\).*/\1/p" "$1"
}

head -c 0 /dev/urandom >"$work/empty"
head -c 1 /dev/urandom >"$work/one"
head -c 1048579 /dev/urandom >"$work/mib"
head -c 16777216 /dev/urandom >"$work/big"

for transport in rdma tcp; do
	echo "== put and get over $transport"
	for f in empty one mib big; do
		nfs "$transport" -s put "$work/$f" "$transport-$f" >"$work/put.out"
		nfs "$transport" -s get "$transport-$f" "$work/$f.back" >"$work/get.out"
		cmp "$work/$f" "$work/$f.back" || fail "$f over $transport differs"
		cmp "$work/$f" "$export_dir/$transport-$f" || fail "the server's $f differs"
		if [ "$transport" = rdma ] && [ "$f" = big ]; then
			# 16 WRITEs and 16 READs of 1 MiB: Read and Write chunks, nothing copied.
			[ "$(counter "$work/put.out" read_chunks)" -ge 16 ] || fail "put: no Read chunks"
			[ "$(counter "$work/get.out" write_chunks)" -ge 16 ] || fail "get: no Write chunks"
			[ "$(counter "$work/put.out" bounce_bytes)" -eq 0 ] || fail "put: bytes copied"
			[ "$(counter "$work/get.out" bounce_bytes)" -eq 0 ] || fail "get: bytes copied"
		fi
		rm -f "$work/$f.back"
	done
	echo "nfs3-2proc: $transport: 4 files checked"
done

echo "== a listing over RDMA (READDIRPLUS in Reply chunks)"
nfs rdma -s ls >"$work/ls.out" 2>"$work/ls.err"
for f in empty one mib big; do
	grep -q " rdma-$f\$" "$work/ls.out" || fail "ls lacks rdma-$f"
	grep -q " tcp-$f\$" "$work/ls.out" || fail "ls lacks tcp-$f"
done
[ "$(counter "$work/ls.out" reply_chunks)" -ge 1 ] || fail "ls: no Reply chunk"

echo "== four clients at once"
pids=
for i in 1 2 3 4; do
	transport=rdma
	[ "$i" -eq 4 ] && transport=tcp
	(nfs "$transport" put "$work/mib" "cc-$i" >/dev/null &&
		nfs "$transport" get "cc-$i" "$work/cc-$i" >/dev/null &&
		cmp "$work/mib" "$work/cc-$i") &
	pids="$pids $!"
done
for pid in $pids; do
	wait "$pid" || fail "a concurrent client failed"
done
echo "nfs3-2proc: 4 concurrent clients checked"

echo "== a client killed in the middle of a put"
truncate -s 512M "$work/sparse"
nfs rdma put "$work/sparse" victim >/dev/null 2>&1 &
killed_pid=$!
grown() {
	[ "$(stat -c %s "$export_dir/victim" 2>/dev/null || echo 0)" -gt 0 ]
}
wait_for 2000 grown || fail "the put did not start"
kill -KILL "$killed_pid"
wait "$killed_pid" 2>/dev/null || true
killed_pid=
size=$(stat -c %s "$export_dir/victim")
[ "$size" -lt 536870912 ] || fail "the put finished before it was killed"
kill -0 "$server_pid" 2>/dev/null || fail "the server died with its client"
nfs rdma put "$work/mib" after-kill >/dev/null
nfs rdma get after-kill "$work/after-kill" >/dev/null
cmp "$work/mib" "$work/after-kill" || fail "after the kill: differs"
nfs tcp get after-kill "$work/after-kill.tcp" >/dev/null
cmp "$work/mib" "$work/after-kill.tcp" || fail "after the kill, over TCP: differs"
rm -f "$export_dir/victim" "$work/sparse"
echo "nfs3-2proc: killed at $size bytes; the server serves on"

if [ -n "$rpcbind_up" ]; then
	echo "== rpcbind"
	if grep -q "NFS over rdma not registered" "$work/server.err"; then
		echo "nfs3-2proc: rpcbind refused (another NFS server owns the program): not checked"
	else
		rpcinfo 127.0.0.1 | grep -Eq "^ *100003 +3 +rdma +127\.0\.0\.1\.$((rdma_port / 256))\.$((rdma_port % 256)) " ||
			fail "rpcinfo does not list NFS over rdma"
		echo "nfs3-2proc: rpcinfo lists 100003 version 3 on netid rdma, port $rdma_port"
	fi
fi

echo "== stop"
kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
server_pid=
[ "$status" -eq 0 ] || fail "the server exited with status $status: $(cat "$work/server.err")"
grep -q "nfs3-server: stopped" "$work/server.out" || fail "the server did not stop cleanly"
if [ -n "$rpcbind_up" ] && rpcinfo 127.0.0.1 | grep -Eq "^ *100003 +3 +rdma +127\.0\.0\.1\.$((rdma_port / 256))\.$((rdma_port % 256)) "; then
	fail "the rdma registration outlived the server"
fi
echo "== done"
