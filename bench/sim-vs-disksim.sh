#!/usr/bin/env bash
# The simulator against DiskSim 4.0 on the same drive: simulated requests per CPU-second.
#
# Both simulate the Quantum Atlas 10K as DiskSim 4.0 validated it (DiskSim's
# valid/atlas10k.diskspecs; elevator's `atlas10k` preset carries the same values, issue 26)
# under DiskSim's own closed synthetic workload (valid/synthclosed.parv: five closed
# generators, no think time, 66 % reads, 4 KiB blocks, uniformly random over the disk), and
# elevator under the nearest job: randrw 66 % reads, 4 KiB, iodepth 5, direct, noop. Each
# runs REQUESTS requests, ROUNDS times interleaved; the script prints the median user+system
# CPU time of each, the requests per CPU-second and elevator's ratio to DiskSim, and each
# one's simulated IOPS and mean response time as a sanity check that both simulated a
# comparable load (they are not the same model: DiskSim's sizes are exponential multiples of
# the 4 KiB block, its driver queue schedules, its bus and controller are modelled).
#
# DiskSim is not packaged: DISKSIM_SRC is a checkout of https://github.com/benh/disksim
# (DiskSim 4.0 with the SSD extension, commit e0d4cc9). The script builds it once into
# target/disksim (32-bit, as DiskSim requires: needs gcc-multilib, bison and flex, installed
# with apt-get when missing) with -O2; DiskSim's own Makefiles build without optimisation.
#
# Usage: bench/sim-vs-disksim.sh DISKSIM_SRC [ROUNDS=3] [REQUESTS=1000000]
set -euo pipefail
cd "$(dirname "$0")/.."

src=${1:?usage: bench/sim-vs-disksim.sh DISKSIM_SRC [ROUNDS=3] [REQUESTS=1000000]}
rounds=${2:-3}
requests=${3:-1000000}
[ -f "$src/src/disksim_main.c" ] || { echo "sim-vs-disksim: $src is not a DiskSim 4.0 source tree (no src/disksim_main.c)" >&2; exit 2; }

build=target/disksim
if [ ! -x "$build/src/disksim" ]; then
    if ! dpkg -s gcc-multilib bison flex >/dev/null 2>&1; then
        apt-get install -y gcc-multilib bison flex >/dev/null
    fi
    rm -rf "$build" && mkdir -p "$build"
    cp -r "$src"/. "$build"/
    # The memsmodel seek tool links -lm before its objects; DiskSim's library and the SSD
    # model's refer to each other (link libdisksim twice); C99 `inline` and `-fno-common`
    # (GCC 10) break its 2008 C, hence -fgnu89-inline -fcommon. Errors in the layout tools
    # (diskmodel/utils) do not matter: only src/disksim is used.
    sed -i 's/-lmems_internals$/-lmems_internals -lm/' "$build/memsmodel/Makefile"
    sed -i '/^disksim : /{n;s/$(LDFLAGS)$/$(LDFLAGS) -ldisksim -lm/}' "$build/src/Makefile"
    make -C "$build" -k CC="gcc -m32 -O2 -fgnu89-inline -fcommon" >"$build/build.log" 2>&1 || true
    [ -x "$build/src/disksim" ] || { echo "sim-vs-disksim: DiskSim did not build, see $build/build.log" >&2; exit 1; }
fi
disksim=$(realpath "$build/src/disksim")

cargo build --release -p elevator >/dev/null 2>&1 || cargo build --release -p elevator
elevator=$(realpath target/release/elevator)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# DiskSim's closed workload on its validated Atlas 10K (the capacity is the one its synthopen
# gives that disk's generator).
cp "$build"/valid/atlas10k.* "$build"/valid/statdefs "$work"/
sed -e 's/source hp_c3323a.diskspecs/source atlas10k.diskspecs/' \
    -e 's/instantiate \[ disk0 \] as  HP_C3323A/instantiate [ disk0 ] as  QUANTUM_TORNADO_validate/' \
    -e 's/Storage capacity per device  =  2056008/Storage capacity per device  =  17938986/' \
    "$build/valid/synthclosed.parv" >"$work/atlas-closed.parv"

cpu_seconds() { # command...: prints user+system seconds
    /usr/bin/time -f '%U %S' -o "$work/time" "$@" >/dev/null 2>&1
    awk '{ print $1 + $2 }' "$work/time"
}
run_disksim() {
    (cd "$work" && cpu_seconds "$disksim" atlas-closed.parv "$work/out.outv" ascii 0 1 \
        Synthio "Number of I/O requests to generate" "$requests" \
        Synthio "Maximum time of trace generated" 100000000.0)
}
run_elevator() {
    cpu_seconds "$elevator" sim -d atlas10k -s noop \
        -w "job:rw=randrw,rwmixread=66,bs=4k,iodepth=5,direct=1,number_ios=$requests" \
        -q --format json -o "$work/out.json"
}

disksim_cpu="" elevator_cpu=""
for round in $(seq "$rounds"); do
    t=$(run_disksim); disksim_cpu="$disksim_cpu $t"; echo "round $round: DiskSim $t s" >&2
    t=$(run_elevator); elevator_cpu="$elevator_cpu $t"; echo "round $round: elevator $t s" >&2
done

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
d=$(echo "$disksim_cpu" | median)
e=$(echo "$elevator_cpu" | median)
d_iops=$(awk -F: '/IOdriver Requests per second/ { gsub(/[ \t]/, "", $2); print $2; exit }' "$work/out.outv")
d_resp=$(awk -F: '/IOdriver Response time average/ { gsub(/[ \t]/, "", $2); print $2; exit }' "$work/out.outv")
read -r e_iops e_resp < <(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["runs"][0]["phases"][0]
print(round(p["iops"], 1), round(p["latency_ns"]["mean"] / 1e6, 1))' "$work/out.json")

echo "Atlas 10K (DiskSim 4.0 validated), closed random 4 KiB, 66 % reads, 5 outstanding;"
echo "$requests requests, median CPU time (user + system) of $rounds, $(nproc) CPUs, $(uname -r)"
printf '%-10s %10s %14s %10s %16s %14s\n' simulator "CPU (s)" "requests/CPU-s" "vs DiskSim" "simulated IOPS" "mean resp (ms)"
printf '%-10s %10.2f %14s %10s %16s %14s\n' DiskSim "$d" \
    "$(awk -v n="$requests" -v t="$d" 'BEGIN { printf "%.0f", n / t }')" 1.00 \
    "$(printf '%.1f' "$d_iops")" "$(printf '%.1f' "$d_resp")"
printf '%-10s %10.2f %14s %10s %16s %14s\n' elevator "$e" \
    "$(awk -v n="$requests" -v t="$e" 'BEGIN { printf "%.0f", n / t }')" \
    "$(awk -v a="$d" -v b="$e" 'BEGIN { printf "%.1f", a / b }')" "$e_iops" "$e_resp"
