#!/usr/bin/env bash
# The live engine against fio on a memory-backed loop device (issue 6's benchmark).
#
# 4 KiB random reads, iodepth 64, 2 issuers, on a loop device over a file in /dev/shm
# (losetup --direct-io=on). elevator runs its user-space schedulers with the kernel's
# scheduler set to `none`; fio (io_uring engine, same parameters) runs with the kernel's
# none, mq-deadline and bfq. Each configuration runs ROUNDS times, interleaved, and the
# median IOPS is reported, with each one's ratio to fio with the kernel's none. The deadline
# scheduler also runs with `elevator run`'s default flags (no --depth/--nr-requests: sized
# from the workload), as a user who passes none gets it.
#
# Then QD1: 4 KiB random reads, iodepth 1, one job, fio (io_uring, kernel none) against
# `elevator run -s deadline` and `-s none` (defaults), interleaved ROUNDS times: median IOPS and
# median p50 total latency (submission to completion: fio's lat, `lat_percentiles=1`,
# elevator's phase latency), with the IOPS ratio and the p50 difference to fio.
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
# The unbound workqueues' CPU mask (the loop device's worker is one), changed by the pinned
# QD1 runs and restored here.
wq_mask=/sys/devices/virtual/workqueue/cpumask
wq_mask_before=$(cat "$wq_mask" 2>/dev/null || true)
cleanup() {
    [ -n "$wq_mask_before" ] && echo "$wq_mask_before" > "$wq_mask" 2>/dev/null || true
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

elevator_iops() { # our scheduler, then extra flags (the issue's tuned ones unless "default")
    echo none > "$sched"
    local flags=(--depth 128 --nr-requests 256)
    [ "${2:-}" = default ] && flags=()
    "$elevator" run --target "$loop" \
        -w "job:rw=randread,bs=4k,iodepth=64,numjobs=2,runtime=${seconds}s,time_based=1" \
        -s "$1" "${flags[@]}" --format json 2>/dev/null |
        python3 -c 'import json,sys; print(round(json.load(sys.stdin)["runs"][0]["phases"][0]["iops"]))'
}

configs=("fio:none" "fio:mq-deadline" "fio:bfq" "elevator:$ours_fifo" "elevator:deadline" "elevator:cfq"
    "elevator-defaults:deadline")
declare -A results
for round in $(seq "$rounds"); do
    for config in "${configs[@]}"; do
        tool=${config%%:*} scheduler=${config#*:}
        case $tool in
            fio) iops=$(fio_iops "$scheduler") ;;
            elevator) iops=$(elevator_iops "$scheduler") ;;
            elevator-defaults) iops=$(elevator_iops "$scheduler" default) ;;
        esac
        results[$config]="${results[$config]:-} $iops"
        echo "round $round: $config $iops IOPS" >&2
    done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(echo "${results[fio:none]}" | median)
echo "4 KiB random reads, iodepth 64 x 2, ${seconds} s, median of $rounds, $(nproc) CPUs, $(uname -r)"
echo "(elevator: --depth 128 --nr-requests 256; elevator-defaults: no queue flags)"
printf '%-20s %10s %8s\n' configuration IOPS "vs fio+none"
for config in "${configs[@]}"; do
    value=$(echo "${results[$config]}" | median)
    printf "%-20s %10s %8s\n" "$config" "$value" "$(awk -v v="$value" -v b="$base" 'BEGIN { printf "%.2f", v / b }')"
done

# QD1: one job, iodepth 1. Prints "IOPS P50_NS" per run.
# A "-pinned" configuration runs the tool under `taskset -c 0` with the unbound workqueues
# (the loop device's worker) on CPU 0 too. Unpinned, the figure is decided by where the kernel
# places the process against the loop worker: on this VM a wake-up across CPUs costs about
# 20 µs (the guest halts idle vCPUs at once, haltpoll's guest_halt_poll_ns is 0), so a run
# whose worker lands on the other CPU does 15-20 k IOPS and one on the same CPU 85-95 k, for
# fio and elevator alike. Pinned, both get the same placement and the ratio compares the
# cost per I/O itself.
pin_wq() { [ -n "$wq_mask_before" ] && echo 1 > "$wq_mask" || true; }
unpin_wq() { [ -n "$wq_mask_before" ] && echo "$wq_mask_before" > "$wq_mask" || true; }
fio_qd1() { # [taskset prefix...]
    echo none > "$sched"
    "$@" fio --name=qd1 --filename="$loop" --ioengine=io_uring --direct=1 --rw=randread --bs=4k \
        --iodepth=1 --numjobs=1 --runtime="$seconds" --time_based --lat_percentiles=1 \
        --output-format=json 2>/dev/null |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["jobs"][0]["read"]
print(round(r["iops"]), round(r["lat_ns"]["percentile"]["50.000000"]))'
}
elevator_qd1() { # our scheduler, then [taskset prefix...]
    local scheduler=$1
    shift
    echo none > "$sched"
    "$@" "$elevator" run --target "$loop" \
        -w "job:rw=randread,bs=4k,iodepth=1,numjobs=1,runtime=${seconds}s,time_based=1" \
        -s "$scheduler" --format json 2>/dev/null |
        python3 -c 'import json,sys; p=json.load(sys.stdin)["runs"][0]["phases"][0]
print(round(p["iops"]), p["latency_ns"]["p50"])'
}
qd1_configs=("fio:none" "elevator:deadline" "elevator:$ours_fifo" "fio-pinned:none"
    "elevator-pinned:$ours_fifo")
declare -A qd1_iops qd1_p50
for round in $(seq "$rounds"); do
    for config in "${qd1_configs[@]}"; do
        tool=${config%%:*} scheduler=${config#*:}
        case $tool in
            fio) out=$(fio_qd1) ;;
            fio-pinned) out=$(pin_wq; fio_qd1 taskset -c 0; unpin_wq) ;;
            elevator) out=$(elevator_qd1 "$scheduler") ;;
            elevator-pinned) out=$(pin_wq; elevator_qd1 "$scheduler" taskset -c 0; unpin_wq) ;;
        esac
        read -r iops p50 <<<"$out"
        qd1_iops[$config]="${qd1_iops[$config]:-} $iops"
        qd1_p50[$config]="${qd1_p50[$config]:-} $p50"
        echo "qd1 round $round: $config $iops IOPS p50 $p50 ns" >&2
    done
done
echo
echo "QD1: 4 KiB random reads, iodepth 1 x 1, ${seconds} s, median of $rounds (defaults;"
echo "-pinned: both under taskset -c 0, compared with each other)"
printf '%-20s %10s %8s %12s %12s\n' configuration IOPS "vs fio" "p50 (us)" "p50 - fio"
for config in "${qd1_configs[@]}"; do
    peer=fio:none
    case ${config%%:*} in *-pinned) peer=fio-pinned:none ;; esac
    base_iops=$(echo "${qd1_iops[$peer]}" | median)
    base_p50=$(echo "${qd1_p50[$peer]}" | median)
    iops=$(echo "${qd1_iops[$config]}" | median)
    p50=$(echo "${qd1_p50[$config]}" | median)
    printf "%-20s %10s %8s %12s %12s\n" "$config" "$iops" \
        "$(awk -v v="$iops" -v b="$base_iops" 'BEGIN { printf "%.2f", v / b }')" \
        "$(awk -v v="$p50" 'BEGIN { printf "%.1f", v / 1000 }')" \
        "$(awk -v v="$p50" -v b="$base_p50" 'BEGIN { printf "%+.1f", (v - b) / 1000 }')"
done
