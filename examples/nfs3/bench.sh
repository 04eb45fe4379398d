#!/bin/sh
# SPDX-License-Identifier: MIT
#
# nfs3-bench in one process, then against nfs3-server in another, both on
# softrdma's drop-in libibverbs.so.1/librdmacm.so.1 (the two processes'
# RDMA traffic goes through softrdma's socket backend). A benchmark: it
# prints figures, the test suite does not run it.
#
#   sh examples/nfs3/bench.sh [build folder [rounds]]      (build, 5)
set -eu

build=${1:-build}
rounds=${2:-5}
case $rounds in
'' | *[!0-9]*) echo "usage: $0 [build folder [rounds]]" >&2; exit 2 ;;
esac
if [ -z "${NFS3_BENCH_BOUNDED:-}" ]; then
	NFS3_BENCH_BOUNDED=1 exec timeout $((120 + 120 * rounds)) sh "$0" "$@"
fi
dropin=$build/softrdma/dropin
bench=$build/examples/nfs3/nfs3-bench
server=$build/examples/nfs3/nfs3-server
for f in "$dropin/libibverbs.so.1" "$bench" "$server"; do
	if [ ! -e "$f" ]; then
		echo "bench.sh: $f is missing (build with -Dtests=enabled -Dbench=true)" >&2
		exit 1
	fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/nfs3-bench.XXXXXX")
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then
		kill -KILL "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir "$work/rdv" "$work/export"
export LD_LIBRARY_PATH="$dropin" SOFTRDMA_DIR="$work/rdv"

# Rates and ratios hold only on the machine they were taken on.
echo "machine: $(nproc) online cores ($(nproc --all) in all), load average" \
	"$(cut -d' ' -f1-3 /proc/loadavg)"
echo "== one process: server and clients on the drop-ins"
"$bench" -r "$rounds"

echo
echo "== two processes: nfs3-server, and nfs3-bench as its client"
export_dir=$(cd "$work/export" && pwd -P)
"$server" -a 127.0.0.1 -p 0 -t 0 --no-rpcbind -r "$work/ready" -s "$work/stats" "$export_dir" \
	>/dev/null &
server_pid=$!
tries=0
until [ -s "$work/ready" ]; do
	tries=$((tries + 1))
	if [ $tries -gt 1000 ] || ! kill -0 "$server_pid" 2>/dev/null; then
		echo "bench.sh: the server did not start" >&2
		exit 1
	fi
	sleep 0.01
done
"$bench" -a 127.0.0.1 -P "$(awk '$1 == "rdma" { print $2 }' "$work/ready")" \
	-T "$(awk '$1 == "tcp" { print $2 }' "$work/ready")" -e "$export_dir" \
	-p "$server_pid" -S "$work/stats" -r "$rounds"
kill -TERM "$server_pid"
wait "$server_pid" || true
server_pid=
