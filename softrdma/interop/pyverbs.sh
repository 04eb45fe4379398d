#!/bin/sh
# SPDX-License-Identifier: MIT
#
# rdma-core's own test suite (Debian's python3-pyverbs puts it in
# /usr/share/doc/rdma-core/tests) on the drop-in libraries, unmodified, run
# as rdma-core documents it (run_tests.py) on a copy, bounded in time.
# Prints the totals; fails on any failure or error; skips are the suite's
# own (softrdma/README.md lists them).
#
#	pyverbs.sh <drop-in dir>
#
# The rdma_cm tests run only for a device that shows a network interface in
# sysfs (/sys/class/infiniband/<dev>/device/net/<ifname>, then `ip -j addr
# show <ifname>`, tests/base.py). softrdma0's GIDs are the loopback
# interface's addresses (its GID entries name ifindex 1), so where a private
# mount namespace can be had (root, or unprivileged user namespaces) the
# suite runs in one whose /sys/class also holds
# infiniband/softrdma0/device/net/lo, as the user who started it. Elsewhere
# those tests skip with rdma-core's reason.
#
# Exits 77 (skipped) when python3-pyverbs is not installed, and under TSan.
# SOFTRDMA_INTEROP_PRELOAD names the sanitizer runtime of a sanitized build.
set -eu

# Under the valgrind setup this shell is traced (and its own leaks would be
# reported), though nothing of ours runs in it: it goes on untraced.
case "${LD_PRELOAD:-}" in
*vgpreload*) exec env -u LD_PRELOAD /bin/sh "$0" "$@" ;;
esac

tests=/usr/share/doc/rdma-core/tests
python=/usr/bin/python3
limit=${PYVERBS_TIMEOUT:-240}

# Inside the namespace: show softrdma0's network interface, then run as the caller.
if [ "${1:-}" = --in-namespace ]; then
	shift
	uid=$1 gid=$2
	shift 2
	classes=$(mktemp -d)
	mount --bind /sys/class "$classes"
	mount -t tmpfs -o mode=0755 softrdma-sysfs /sys/class
	for class in "$classes"/*; do
		mkdir "/sys/class/${class##*/}"
		mount --bind "$class" "/sys/class/${class##*/}"
	done
	mkdir -p /sys/class/infiniband/softrdma0/device/net/lo
	if [ "$uid" = 0 ]; then
		exec "$@"
	fi
	exec unshare --user --map-user="$uid" --map-group="$gid" "$@"
fi

dropin=$(cd "$1" && pwd)
if [ ! -f "$tests/run_tests.py" ] && [ ! -f "$tests/run_tests.py.gz" ]; then
	echo "rdma-core's tests are not installed ($tests, Debian python3-pyverbs): skipped"
	exit 77
fi
if ! "$python" -c 'import pyverbs' 2>/dev/null; then
	echo "pyverbs does not import with $python (Debian python3-pyverbs): skipped"
	exit 77
fi
preload=${SOFTRDMA_INTEROP_PRELOAD:-}
case "$preload" in
*tsan*)
	# TSan follows threads started after fork() badly ("dup thread with used
	# id" as a child exits), and tests/base.py reads a crashed child's exit
	# status as success: the results would not mean what they say.
	echo "not under TSan: Python's multiprocessing children fork a threaded process: skipped"
	exit 77 ;;
esac
# A clang-sanitized drop-in needs clang's runtimes, which are linked into
# executables, not preloadable into an uninstrumented python3, which loads
# its modules with RTLD_NOW (the gcc build's libasan is preloaded instead).
if [ -n "${SOFTRDMA_INTEROP_CLANG_SANITIZED:-}" ]; then
	echo "not with clang's sanitizers: their runtimes cannot be preloaded into python3: skipped"
	exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$tests" "$work/tests"
for gz in "$work"/tests/*.gz; do
	[ -e "$gz" ] && gunzip -f "$gz"
done
mkdir -m 0700 "$work/rdv"

export LD_LIBRARY_PATH="$dropin"
export SOFTRDMA_DIR="$work/rdv"
if [ -n "$preload" ]; then
	# Sanitized drop-ins in an uninstrumented Python (the runtime is loaded
	# into Python alone): its leaks are not ours.
	export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
	preload="LD_PRELOAD=$preload"
fi

run="timeout -k 10 $limit env $preload $python $work/tests/run_tests.py -v"
uid=$(id -u)
gid=$(id -g)
if [ "$uid" = 0 ]; then
	ns="unshare --mount --propagation private"
else
	ns="unshare --user --map-root-user --mount --propagation private"
fi
if ! command -v ip >/dev/null; then
	echo "no ip (iproute2) to read the interface's address with: the rdma_cm tests skip"
	set -- $run
elif $ns true 2>/dev/null; then
	echo "softrdma0 shows its network interface, lo, in a private mount namespace"
	set -- $ns "$0" --in-namespace "$uid" "$gid" $run
else
	echo "no private mount namespace here: the rdma_cm tests skip (no network interface)"
	set -- $run
fi
status=0
"$@" >"$work/log" 2>&1 || status=$?
cat "$work/log"

if [ "$status" = 124 ] || [ "$status" = 137 ]; then
	echo "rdma-core's tests did not finish within ${limit}s"
	exit 1
fi
ran=$(sed -n 's/^Ran \([0-9]*\) tests* in .*/\1/p' "$work/log")
if [ -z "$ran" ]; then
	echo "rdma-core's tests did not run to the end (exit status $status)"
	exit 1
fi
failed=$(grep -c '^FAIL: ' "$work/log" || true)
errors=$(grep -c '^ERROR: ' "$work/log" || true)
skipped=$(sed -n 's/^\(OK\|FAILED\) (.*skipped=\([0-9]*\).*/\2/p' "$work/log")
skipped=${skipped:-0}
echo "rdma-core tests on softrdma: $ran run, $((ran - failed - errors - skipped)) passed," \
	"$failed failed, $errors errors, $skipped skipped"

unexpected=$(grep -E '^(FAIL|ERROR): ' "$work/log" || true)
if [ -n "$unexpected" ]; then
	echo "unexpected failures:"
	echo "$unexpected"
	exit 1
fi
exit 0
