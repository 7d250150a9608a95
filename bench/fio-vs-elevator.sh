#!/usr/bin/env bash
# The same fio job files run by real fio and by `elevator run` on the same RAM-backed loop
# device (issue 17's benchmark): IOPS and p99 latency side by side.
#
# Three job files (direct=1, io_uring, time_based): 4 KiB random reads at iodepth 1 and 32,
# and 128 KiB sequential reads at iodepth 8 (fio-compat.md §2.1 options, nothing else, so
# both tools read the same file unchanged but for `filename`). The loop device is a file in
# its own tmpfs (losetup --direct-io=on). fio runs with the kernel's scheduler `none`;
# elevator runs its own `none` and `mq-deadline` in front of the device, the kernel's set to
# `none`. Each configuration runs ROUNDS times, interleaved; the table gives medians.
#
# fio's p99 is its completion latency (clat_ns, submission to completion: what fio prints by
# default); elevator's is its phase latency (issue to completion, including the time a
# request waits in our scheduler).
#
# Usage: sudo bench/fio-vs-elevator.sh [ROUNDS=3] [SECONDS=5] [SIZE_MIB=1024]
# Needs root (loop devices, mounts, sysfs); installs fio with apt-get if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-3}
seconds=${2:-5}
size_mib=${3:-1024}

[ "$(id -u)" = 0 ] || { echo "fio-vs-elevator: needs root (loop devices and sysfs)" >&2; exit 2; }
command -v fio >/dev/null || apt-get install -y -qq fio >/dev/null
command -v fio >/dev/null || { echo "fio-vs-elevator: fio is not installed" >&2; exit 2; }

cargo build --release -p elevator >/dev/null 2>&1 || cargo build --release -p elevator
elevator=$PWD/target/release/elevator

work=$(mktemp -d /tmp/fio-vs-elevator.XXXXXX)
loop=""
sched=""
saved=""
cleanup() {
    [ -n "$saved" ] && echo "$saved" > "$sched" 2>/dev/null || true
    [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null || true
    if mountpoint -q "$work/ram"; then umount "$work/ram"; fi
    rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/ram"
mount -t tmpfs -o size=$((size_mib + 4))m tmpfs "$work/ram"
# Real pages, not holes: reads of a sparse file would skip the copy.
dd if=/dev/zero of="$work/ram/backing" bs=1M count="$size_mib" status=none
loop=$(losetup --find --show --direct-io=on "$work/ram/backing")
name=$(basename "$loop")
sched=/sys/block/$name/queue/scheduler
saved=$(sed -E 's/.*\[([^]]+)\].*/\1/' "$sched")
echo none > "$sched"
# Our queue as deep as the kernel's for this device: its request pool and its tag depth.
nr_requests=$(cat "/sys/block/$name/queue/nr_requests")
hw_depth=$(cat "/sys/block/$name/mq/0/nr_tags" 2>/dev/null || echo 128)

job() { # name rw bs iodepth
    cat > "$work/$1.fio" <<JOB
[global]
filename=$loop
direct=1
ioengine=io_uring
runtime=$seconds
time_based

[$1]
rw=$2
bs=$3
iodepth=$4
JOB
}
job randread-4k-qd1 randread 4k 1
job randread-4k-qd32 randread 4k 32
job read-128k-qd8 read 128k 8
jobs=(randread-4k-qd1 randread-4k-qd32 read-128k-qd8)

fio_run() { # job -> "iops p99_us"
    fio --output-format=json "$work/$1.fio" 2>/dev/null | python3 -c '
import json, sys
read = json.load(sys.stdin)["jobs"][0]["read"]
print(round(read["iops"]), round(read["clat_ns"]["percentile"]["99.000000"] / 1000, 1))'
}

elevator_run() { # job scheduler -> "iops p99_us"
    "$elevator" run "$work/$1.fio" -s "$2" --depth "$hw_depth" --nr-requests "$nr_requests" \
        --format json 2>/dev/null | python3 -c '
import json, sys
phase = json.load(sys.stdin)["runs"][0]["phases"][0]
print(round(phase["iops"]), round(phase["latency_ns"]["p99"] / 1000, 1))'
}

configs=("fio:none" "elevator:none" "elevator:mq-deadline")
declare -A iops p99
for round in $(seq "$rounds"); do
    for jobname in "${jobs[@]}"; do
        for config in "${configs[@]}"; do
            tool=${config%%:*} scheduler=${config#*:}
            if [ "$tool" = fio ]; then
                read -r i p < <(fio_run "$jobname")
            else
                read -r i p < <(elevator_run "$jobname" "$scheduler")
            fi
            iops[$jobname/$config]+="$i "
            p99[$jobname/$config]+="$p "
            echo "round $round: $jobname $config: $i IOPS, p99 $p us" >&2
        done
    done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "# $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# $loop over ${size_mib} MiB in tmpfs; ${seconds} s per run; median of $rounds; fio $(fio --version)"
printf '%-18s %-22s %10s %10s\n' job "tool:scheduler" IOPS "p99 (us)"
for jobname in "${jobs[@]}"; do
    for config in "${configs[@]}"; do
        printf '%-18s %-22s %10s %10s\n' "$jobname" "$config" \
            "$(echo "${iops[$jobname/$config]}" | median)" "$(echo "${p99[$jobname/$config]}" | median)"
    done
done
