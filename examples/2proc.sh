# SPDX-License-Identifier: MIT
# shellcheck shell=sh
#
# Shared by the two-process demos (examples/*/demo-2proc.sh), which source it:
# a server and its clients as separate processes, built against rdma-core
# and run on softrdma's drop-in libraries. The caller sets $dropin, $server
# and $client; SOFTRDMA_DEMO_WRAP, if set, is a command the programs run
# under (the meson tests' valgrind setup puts valgrind there).

for f in "$dropin/libibverbs.so.1" "$dropin/librdmacm.so.1" "$server" "$client"; do
	if [ ! -e "$f" ]; then
		echo "demo-2proc: $f is missing (configure with -Dtests=enabled and build)" >&2
		exit 1
	fi
done
wrap=${SOFTRDMA_DEMO_WRAP:-}

# A rendezvous directory of our own: nothing else listens on our ports there.
dir=$(mktemp -d "${TMPDIR:-/tmp}/softrdma-demo.XXXXXX")
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
export LD_LIBRARY_PATH="$dropin" SOFTRDMA_DIR="$dir"

# listening PORT [tcp]: softrdma's socket for a listener on PORT exists,
# or, with "tcp", a TCP socket listens on PORT.
listening() {
	if [ "${2:-}" = tcp ]; then
		grep -qi ":$(printf %04X "$1") 00000000:0000 0A" /proc/net/tcp 2>/dev/null
	else
		[ -S "$dir/tcp-127.0.0.1-$1" ]
	fi
}

# server_start PORT [tcp] PROGRAM ARGS...: start a server, return once it listens.
server_start() {
	port=$1
	shift
	kind=
	if [ "$1" = tcp ]; then
		kind=tcp
		shift
	fi
	# shellcheck disable=SC2086 # $wrap is a command line
	$wrap "$@" &
	server_pid=$!
	tries=0
	until listening "$port" $kind; do
		tries=$((tries + 1))
		if [ $tries -gt 3000 ] || ! kill -0 "$server_pid" 2>/dev/null; then
			echo "demo-2proc: the server did not start listening" >&2
			exit 1
		fi
		sleep 0.01
	done
}

# server_wait: wait for the server to end; fail unless it exits 0.
server_wait() {
	status=0
	wait "$server_pid" || status=$?
	server_pid=
	if [ "$status" -ne 0 ]; then
		echo "demo-2proc: the server exited with status $status" >&2
		exit 1
	fi
}

# client ARGS...: run a client (under $wrap).
client() {
	# shellcheck disable=SC2086
	$wrap "$@"
}
