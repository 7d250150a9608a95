#!/usr/bin/env bash
# The live engine against fio on a memory-backed loop device (issue 6's benchmark).
#
# 4 KiB random reads, iodepth 64, 2 issuers, on a loop device over a file in /dev/shm
# (losetup --direct-io=on). elevator runs its user-space schedulers with the kernel's
# scheduler set to `none`; fio (io_uring engine, same parameters) runs with the kernel's
# none, mq-deadline and bfq. Each configuration runs ROUNDS times, interleaved, and the
# median IOPS is reported, with each one's ratio to fio with the kernel's none.
#
# Usage: sudo bench/live-vs-fio.sh [ROUNDS=3] [SECONDS=5] [SIZE_MIB=1024]
# Needs root (loop devices, sysfs); installs fio with apt-get if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-3}
seconds=${2:-5}
size_mib=${3:-1024}

[ "$(id -u)" = 0 ] || { echo "live-vs-fio: needs root (loop devices and sysfs)" >&2; exit 2; }
command -v fio >/dev/null || apt-get install -y fio >/dev/null
command -v fio >/dev/null || { echo "live-vs-fio: fio is not installed" >&2; exit 2; }

cargo build --release -p elevator >/dev/null 2>&1 || cargo build --release -p elevator
elevator=target/release/elevator

backing=$(mktemp /dev/shm/elevator-bench.XXXXXX)
loop=""
cleanup() {
    [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null || true
    rm -f "$backing"
}
trap cleanup EXIT
# Real pages, not holes: reads of a sparse file would skip the copy.
dd if=/dev/zero of="$backing" bs=1M count="$size_mib" status=none
loop=$(losetup --find --show --direct-io=on "$backing")
sched=/sys/block/$(basename "$loop")/queue/scheduler

# Our `none` is issue 8's; until it lands, noop (the 2.6 FIFO with last-merge) stands in.
if "$elevator" list schedulers | head -1 | grep -qw none; then ours_fifo=none; else ours_fifo=noop; fi

fio_iops() { # kernel scheduler
    echo "$1" > "$sched"
    fio --name=bench --filename="$loop" --ioengine=io_uring --direct=1 --rw=randread --bs=4k \
        --iodepth=64 --numjobs=2 --runtime="$seconds" --time_based --group_reporting \
        --output-format=json 2>/dev/null |
        python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))'
}

elevator_iops() { # our scheduler
    echo none > "$sched"
    "$elevator" run --target "$loop" \
        -w "job:rw=randread,bs=4k,iodepth=64,numjobs=2,runtime=${seconds}s,time_based=1" \
        -s "$1" --depth 128 --nr-requests 256 --format json 2>/dev/null |
        python3 -c 'import json,sys; print(round(json.load(sys.stdin)["runs"][0]["phases"][0]["iops"]))'
}

configs=("fio:none" "fio:mq-deadline" "fio:bfq" "elevator:$ours_fifo" "elevator:deadline" "elevator:cfq")
declare -A results
for round in $(seq "$rounds"); do
    for config in "${configs[@]}"; do
        tool=${config%%:*} scheduler=${config#*:}
        if [ "$tool" = fio ]; then iops=$(fio_iops "$scheduler"); else iops=$(elevator_iops "$scheduler"); fi
        results[$config]="${results[$config]:-} $iops"
        echo "round $round: $config $iops IOPS" >&2
    done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(echo "${results[fio:none]}" | median)
echo "4 KiB random reads, iodepth 64 x 2, ${seconds} s, median of $rounds, $(nproc) CPUs, $(uname -r)"
printf '%-20s %10s %8s\n' configuration IOPS "vs fio+none"
for config in "${configs[@]}"; do
    value=$(echo "${results[$config]}" | median)
    printf "%-20s %10s %8s\n" "$config" "$value" "$(awk -v v="$value" -v b="$base" 'BEGIN { printf "%.2f", v / b }')"
done
