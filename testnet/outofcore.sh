#!/bin/sh
# outofcore.sh HOST_LIMIT TESTBINARY [test flags...]: the out-of-core
# figure (TestOutOfCoreFigures). As root: makes a swap file
# in /tmp and the cgroups /zorilla-ooc/host0..host3 (memory, cpu, pids;
# cgroup v1), bounds each host's memory to HOST_LIMIT (bytes, or with a
# K/M/G suffix), runs the prebuilt test binary OUTSIDE them (the agents
# never page: only the jobs, whose cgroups nest below the hosts', do),
# and whatever happens, kills what is left in the cgroups, removes them,
# swapoff's and removes the file. The ZORILLA_OOC_* variables pass
# through; ZORILLA_OOC_SWAP is the file's size (default 4G).
#
#   go test -c -o /tmp/ooc/testnet.test ./testnet
#   ZORILLA_OOC_ROWS=batch testnet/outofcore.sh 8G /tmp/ooc/testnet.test -test.v
set -eu
[ $# -ge 2 ] || { echo "usage: $0 HOST_LIMIT TESTBINARY [test flags...]" >&2; exit 2; }
limit=$1 bin=$2
shift 2
cg=/zorilla-ooc
swap=/tmp/zorilla-ooc.swap
ctls="memory cpu pids"

cleanup() {
	set +e
	for c in $ctls; do
		top=/sys/fs/cgroup/$c$cg
		[ -d "$top" ] || continue
		for d in $(find "$top" -depth -type d); do
			tries=0
			while ! rmdir "$d" 2>/dev/null; do
				for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
				tries=$((tries + 1))
				[ $tries -lt 100 ] || { echo "cgroup $d not removed" >&2; break; }
				sleep 0.1 # the kernel frees a killed process's cgroup asynchronously
			done
		done
	done
	if grep -q "^$swap " /proc/swaps; then swapoff "$swap"; fi
	rm -f "$swap"
	grep -q "^$swap " /proc/swaps && echo "swap $swap still on" >&2
	ls -d /sys/fs/cgroup/*$cg 2>/dev/null && echo "cgroups left" >&2
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ -e "$swap" ] && { echo "$swap exists: another run, or a leftover" >&2; exit 1; }
fallocate -l "${ZORILLA_OOC_SWAP:-4G}" "$swap"
chmod 600 "$swap"
mkswap -q "$swap"
swapon "$swap"
for c in $ctls; do
	for h in 0 1 2 3; do mkdir -p "/sys/fs/cgroup/$c$cg/host$h"; done
done
for h in 0 1 2 3; do
	echo "$limit" >"/sys/fs/cgroup/memory$cg/host$h/memory.limit_in_bytes"
done
# CPU: each host's jobs weigh what one agent's jobs weigh without the
# parent (one cgroup of 1024 shares below the root), not a quarter of it.
echo 4096 >"/sys/fs/cgroup/cpu$cg/cpu.shares"
echo "$(date -u +%FT%TZ) host limit $(cat /sys/fs/cgroup/memory$cg/host0/memory.limit_in_bytes) B; $(uptime)"
status=0
ZORILLA_OOC_FIGURES=1 ZORILLA_OOC_CGROUP=$cg "$bin" -test.run '^TestOutOfCoreFigures$' -test.timeout 2h "$@" || status=$?
echo "$(date -u +%FT%TZ) $(uptime)"
exit $status
