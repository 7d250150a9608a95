#!/usr/bin/env bash
# Our blk-mq schedulers against the kernel's, on loop devices (issue 8's benchmark).
#
# (a) Fairness: two sequential O_DIRECT readers at best-effort levels 0 and 7
#     (`job:rw=read,numjobs=2,prio=0:7`) on a loop device over a file on disk. Reported: the
#     share of the bytes the level-0 reader got (0.50 = no difference; bfq's weights 80:10
#     would give 0.89 if it divided device time exactly).
# (b) Throughput: 4 KiB random reads at depth 64 on a loop device over /dev/shm. Reported: IOPS.
#
# Ours: `elevator run` (user space) with the kernel's scheduler set to none underneath.
# The kernel's: `elevator kernel compare` (one thread per issuer, its ioprio set). Each
# configuration runs ROUNDS times, interleaved; the median is printed.
#
# Usage: sudo bench/blk-mq-vs-kernel.sh [ROUNDS=3] [SECONDS=5]
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-3}
seconds=${2:-5}
[ "$(id -u)" = 0 ] || { echo "blk-mq-vs-kernel: needs root (loop devices and sysfs)" >&2; exit 2; }

cargo build --release -p elevator >/dev/null 2>&1 || cargo build --release -p elevator
elevator=target/release/elevator

disk_backing=$(mktemp /var/tmp/elevator-fair.XXXXXX)
shm_backing=$(mktemp /dev/shm/elevator-iops.XXXXXX)
disk_loop=""
shm_loop=""
cleanup() {
    [ -n "$disk_loop" ] && losetup -d "$disk_loop" 2>/dev/null || true
    [ -n "$shm_loop" ] && losetup -d "$shm_loop" 2>/dev/null || true
    rm -f "$disk_backing" "$shm_backing"
}
trap cleanup EXIT
# Real blocks, not holes, so reads reach the backing store.
dd if=/dev/zero of="$disk_backing" bs=1M count=2048 status=none
dd if=/dev/zero of="$shm_backing" bs=1M count=1024 status=none
sync
disk_loop=$(losetup --find --show --direct-io=on "$disk_backing")
shm_loop=$(losetup --find --show --direct-io=on "$shm_backing")

fair="job:rw=read,bs=64k,iodepth=4,numjobs=2,prio=0:7,offset_increment=1g,runtime=${seconds}s,time_based=1"
iops="job:rw=randread,bs=4k,iodepth=64,numjobs=1,runtime=${seconds}s,time_based=1"

share() { # share of job/0 in a report on stdin
    python3 -c '
import json, sys
run = json.load(sys.stdin)["runs"][0]
issuers = run["phases"][0]["issuers"]
total = sum(i["bytes"] for i in issuers)
print("%.3f" % (issuers[0]["bytes"] / total))'
}
iops_of() {
    python3 -c 'import json,sys; print(round(json.load(sys.stdin)["runs"][0]["phases"][0]["iops"]))'
}

ours() { # device workload scheduler
    "$elevator" kernel set "$1" none >/dev/null
    "$elevator" run --target "$1" -w "$2" -s "$3" --depth 128 --nr-requests 256 --format json 2>/dev/null
}
kernels() { # device workload scheduler
    "$elevator" kernel compare "$1" -w "$2" -s "$3" --format json 2>/dev/null
}

schedulers=(mq-deadline bfq kyber none)
declare -A results
for round in $(seq "$rounds"); do
    for s in "${schedulers[@]}"; do
        results["fair ours $s"]+="$(ours "$disk_loop" "$fair" "$s" | share) "
        results["fair kernel $s"]+="$(kernels "$disk_loop" "$fair" "$s" | share) "
        results["iops ours $s"]+="$(ours "$shm_loop" "$iops" "$s" | iops_of) "
        results["iops kernel $s"]+="$(kernels "$shm_loop" "$iops" "$s" | iops_of) "
    done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-12s %18s %18s %14s %14s %8s\n' scheduler "level-0 share ours" "level-0 share kern" "IOPS ours" "IOPS kernel" ratio
for s in "${schedulers[@]}"; do
    fo=$(echo "${results["fair ours $s"]}" | median)
    fk=$(echo "${results["fair kernel $s"]}" | median)
    io=$(echo "${results["iops ours $s"]}" | median)
    ik=$(echo "${results["iops kernel $s"]}" | median)
    printf '%-12s %18s %18s %14s %14s %8.2f\n' "$s" "$fo" "$fk" "$io" "$ik" "$(python3 -c "print($io / $ik)")"
done
echo "(median of $rounds rounds of ${seconds} s; $(nproc) CPUs; $(uname -r))"
