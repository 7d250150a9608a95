#!/usr/bin/env bash
# Per-request CPU cost of the kernel's 6.x io_uring path with none, mq-deadline, kyber and bfq,
# measured on this machine (issue 18 item 2; method in blk-mq-host.md §8.2; results and the
# proposed per-step table in docs/blk-mq-costs.md).
#
# Devices: a loop device over a tmpfs file with --direct-io=on (RAM, blk-mq, one hw queue, all
# four schedulers selectable), and null_blk (queue_mode=2, no memory, completion_nsec=0) when
# `modprobe null_blk` works — on a kernel without loadable modules it does not, and the run
# says so.
#
# Each configuration: fio io_uring, O_DIRECT, 4 KiB random reads, gtod_reduce=1, time_based,
# the job threads pinned (numjobs=1: CPU 0; numjobs=2: one per CPU). Settings per scheduler:
#   QD 1 batch 1 (1 and 2 jobs), QD 32 batch 1 and 8 (1 and 2 jobs),
#   QD 32 batch 8 with queue/nomerges=2 (no bio-merge attempt: the scheduler's merge share),
#   QD 32 batch 8 with registerfiles=1 fixedbufs=1 (no page pinning, no fget per I/O).
# Every round runs every configuration once, schedulers interleaved, so slow drift of a shared
# VM hits all of them alike; the table shows the median over ROUNDS (and min-max of the total).
#
# Measured per run (no PMU is needed: a VM often has none):
#   IOPS, and the job threads' usr/sys from fio (RUSAGE_THREAD: the job thread only);
#   CPU of per-CPU high-priority kworkers (`kworker/N:MH`, kblockd's pool) and of unbound
#   kworkers (`kworker/uN:M`, where the loop driver runs its requests) and of ksoftirqd from
#   /proc/PID/schedstat (exact run time in ns), and the kblockd workers' context switches
#   (/proc/PID/status) = hardware-queue runs punted to kblockd;
#   whole-machine busy time and context switches from /proc/stat (includes anyone else's load).
# Derived: total = usr + sys + kblockd + unbound kworkers + ksoftirqd per I/O; the scheduler's cost =
# total(scheduler) - total(none) at equal QD, batch and jobs, paired within a round (§8.2); kblockd switches per I/O at
# batch 1 vs 8 (§5, V10).
#
# Also, when perf runs: `perf bench syscall basic` (syscall enter+exit) and `perf bench sched
# pipe` (two context switches per round trip), for the §2.12 rows 1 and the punt's switch.
#
# The device's scheduler and nomerges are restored and the loop device and its backing file
# removed on exit (also on error or Ctrl-C); null_blk is unloaded only if this script loaded it.
#
# Usage: sudo bench/blkmq-costs.sh [ROUNDS=3] [SECONDS=5]
#   RAW=FILE  also write one TSV line per run to FILE.
set -euo pipefail

rounds=${1:-3}
seconds=${2:-5}
die() { echo "blkmq-costs: $*" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, got '$rounds'"
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || die "SECONDS must be a positive integer, got '$seconds'"
[ "$(id -u)" = 0 ] || die "needs root (loop devices, sysfs queue settings, /proc of kernel threads)"

# Tools: install what is missing through apt if we can, else stop naming the package.
need() { # command apt-package
    command -v "$1" >/dev/null 2>&1 && return 0
    if command -v apt-get >/dev/null 2>&1; then
        echo "blkmq-costs: $1 missing; installing apt package $2" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null 2>&1 || true
    fi
    command -v "$1" >/dev/null 2>&1 || die "$1 not found (apt package $2); install it and rerun"
}
need fio fio
need python3 python3
need losetup mount
fio --enghelp 2>/dev/null | grep -qw io_uring || die "this fio ($(fio --version)) has no io_uring engine"
[ -r /proc/self/schedstat ] || die "/proc/PID/schedstat missing (kernel without CONFIG_SCHED_INFO)"
# perf is optional: only its software benches are used.
if ! command -v perf >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q linux-perf >/dev/null 2>&1 || true
fi

backing=$(mktemp /dev/shm/blkmq-costs.XXXXXX)
loopdev=""
loop_sched=""
loop_nomerges=""
loaded_null_blk=0
cleanup() {
    local q
    if [ -n "$loopdev" ]; then
        q=/sys/block/${loopdev#/dev/}/queue
        [ -n "$loop_sched" ] && echo "$loop_sched" >"$q/scheduler" 2>/dev/null || true
        [ -n "$loop_nomerges" ] && echo "$loop_nomerges" >"$q/nomerges" 2>/dev/null || true
        losetup -d "$loopdev" 2>/dev/null || echo "blkmq-costs: could not detach $loopdev" >&2
    fi
    rm -f "$backing"
    if [ "$loaded_null_blk" = 1 ]; then
        modprobe -r null_blk 2>/dev/null || echo "blkmq-costs: could not unload null_blk" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Real pages, not holes, so every read copies from RAM.
dd if=/dev/zero of="$backing" bs=1M count=1024 status=none
loopdev=$(losetup --find --show --direct-io=on "$backing") || die "losetup failed"
q=/sys/block/${loopdev#/dev/}/queue
loop_sched=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$q/scheduler")
loop_nomerges=$(cat "$q/nomerges")
devices="$loopdev"

# null_blk: only if the kernel can load it and it is not loaded already (someone else's).
null_note="null_blk: not used"
if [ -e /sys/module/null_blk ]; then
    null_note="null_blk: already loaded by someone else; left alone, not used"
elif ! command -v modprobe >/dev/null 2>&1; then
    if grep -qs '^# CONFIG_MODULES is not set' <(zcat /proc/config.gz 2>/dev/null); then
        null_note="null_blk: unavailable (kernel built without loadable modules, CONFIG_MODULES unset)"
    else
        null_note="null_blk: unavailable (no modprobe)"
    fi
elif modprobe null_blk queue_mode=2 nr_devices=1 gb=1 submit_queues="$(nproc)" \
    hw_queue_depth=64 irqmode=0 completion_nsec=0 memory_backed=0 2>/dev/null; then
    loaded_null_blk=1
    udevadm settle 2>/dev/null || sleep 1
    if [ -b /dev/nullb0 ]; then
        devices="$devices /dev/nullb0"
        null_note="null_blk: loaded (queue_mode=2, submit_queues=$(nproc), irqmode=0)"
    else
        null_note="null_blk: loaded but /dev/nullb0 did not appear; not used"
    fi
else
    null_note="null_blk: modprobe failed (module not built for this kernel?)"
fi

echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
echo "# loop: $loopdev over tmpfs ($backing, 1 GiB), --direct-io=on; $null_note"
echo "# rounds=$rounds seconds=$seconds; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
if command -v perf >/dev/null 2>&1; then
    sc=$(perf bench syscall basic 2>/dev/null | sed -n 's/.*\s\([0-9.]*\) usecs\/op.*/\1/p' | head -1)
    pp=$(perf bench sched pipe -l 200000 2>/dev/null | sed -n 's/.*\s\([0-9.]*\) usecs\/op.*/\1/p' | head -1)
    echo "# perf bench syscall basic: ${sc:-?} us/op; perf bench sched pipe: ${pp:-?} us/op (= 2 switches + 2 pipe ops)"
else
    echo "# perf: not installed; syscall and switch micro-benches skipped"
fi

python3 - "$rounds" "$seconds" "${RAW:-}" $devices <<'PY'
import json, os, re, subprocess, sys, statistics

rounds, seconds, raw_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
devices = sys.argv[4:]
SCHEDS = ["none", "mq-deadline", "kyber", "bfq"]
# (iodepth, iodepth_batch_submit, numjobs, variant)
CONFIGS = [
    (1, 1, 1, ""), (1, 1, 2, ""),
    (32, 1, 1, ""), (32, 8, 1, ""), (32, 1, 2, ""), (32, 8, 2, ""),
    (32, 8, 1, "nomerges"), (32, 8, 1, "fixed"),
]
KBLOCKD = re.compile(r"^kworker/\d+:\d+H")  # per-CPU high-priority pool: kblockd's
UNBOUND = re.compile(r"^kworker/u\d+:\d+")  # unbound pool: the loop driver's workers
# Softirq work (block completions among it) runs here once the softirq load is high; without
# CONFIG_IRQ_TIME_ACCOUNTING the rest is charged to whatever task it interrupted (§6.1).
KSOFTIRQD = re.compile(r"^ksoftirqd/")

def kthreads():
    """pid -> (comm, run ns, context switches) for every kernel thread (child of kthreadd)."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                st = f.read()
            ppid = int(st[st.rindex(")") + 2:].split()[1])
            if ppid != 2:
                continue
            comm = st[st.index("(") + 1:st.rindex(")")]
            with open(f"/proc/{pid}/schedstat") as f:
                run_ns = int(f.read().split()[0])
            sw = 0
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")):
                        sw += int(line.split()[1])
            out[pid] = (comm, run_ns, sw)
        except (OSError, ValueError):
            continue  # a thread that exited meanwhile
    return out

def procstat():
    """(busy ticks, steal ticks, ctxt) over all CPUs."""
    busy = steal = ctxt = 0
    with open("/proc/stat") as f:
        for line in f:
            p = line.split()
            if p[0] == "cpu":
                user, nice, system, idle, iowait, irq, softirq, st = map(int, p[1:9])
                busy, steal = user + nice + system + irq + softirq, st
            elif p[0] == "ctxt":
                ctxt = int(p[1])
    return busy, steal, ctxt

def kdelta(before, after, pattern):
    ns = sw = 0
    for pid, (comm, run, s) in after.items():
        if not pattern.match(comm):
            continue
        b = before.get(pid, (comm, 0, 0))
        ns += run - b[1]
        sw += s - b[2]
    return ns, sw

TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")

def run(dev, sched, qd, batch, nj, variant):
    q = f"/sys/block/{os.path.basename(dev)}/queue"
    with open(f"{q}/scheduler", "w") as f:
        f.write(sched)
    with open(f"{q}/nomerges", "w") as f:
        f.write("2" if variant == "nomerges" else "0")
    cmd = ["fio", "--name=c", f"--filename={dev}", "--ioengine=io_uring", "--direct=1",
           "--rw=randread", "--bs=4k", f"--iodepth={qd}", f"--iodepth_batch_submit={batch}",
           f"--numjobs={nj}", "--gtod_reduce=1", "--norandommap=1", "--randrepeat=0",
           "--time_based=1", f"--runtime={seconds}", "--output-format=json"]
    cmd += ["--cpus_allowed=0"] if nj == 1 else ["--cpus_allowed=0-1", "--cpus_allowed_policy=split"]
    if variant == "fixed":
        cmd += ["--registerfiles=1", "--fixedbufs=1"]
    kb, pb = kthreads(), procstat()
    res = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    pa, ka = procstat(), kthreads()
    if res.returncode != 0:
        sys.exit(f"blkmq-costs: fio failed ({' '.join(cmd)}):\n{res.stderr}")
    jobs = json.loads(res.stdout[res.stdout.index("{"):])["jobs"]
    ios = sum(j["read"]["total_ios"] for j in jobs)
    if ios == 0:
        sys.exit(f"blkmq-costs: fio did no I/O ({' '.join(cmd)})")
    usr = sum(j["usr_cpu"] / 100 * j["job_runtime"] * 1e6 for j in jobs)
    sys_ = sum(j["sys_cpu"] / 100 * j["job_runtime"] * 1e6 for j in jobs)
    kbd_ns, kbd_sw = kdelta(kb, ka, KBLOCKD)
    unb_ns, _ = kdelta(kb, ka, UNBOUND)
    sirq_ns, _ = kdelta(kb, ka, KSOFTIRQD)
    r = {
        "iops": sum(j["read"]["iops"] for j in jobs),
        "usr": usr / ios, "sys": sys_ / ios, "kbd": kbd_ns / ios, "unb": unb_ns / ios,
        "sirq": sirq_ns / ios,
        "fioctx": sum(j["ctx"] for j in jobs) / ios,
        "kbdsw": kbd_sw / ios,
        "busy": (pa[0] - pb[0]) * TICK_NS / ios,
        "steal": (pa[1] - pb[1]) * TICK_NS / ios,
        "cs": (pa[2] - pb[2]) / ios,
    }
    r["total"] = r["usr"] + r["sys"] + r["kbd"] + r["unb"] + r["sirq"]
    return r

results = {}
raw = open(raw_path, "w") if raw_path else None
for rnd in range(rounds):
    for dev in devices:
        for cfg in CONFIGS:
            for sched in SCHEDS:
                r = run(dev, sched, *cfg)
                results.setdefault((dev, cfg, sched), []).append(r)
                if raw:
                    raw.write("\t".join([str(rnd), dev, sched, *map(str, cfg)] +
                                        [f"{k}={v:.1f}" for k, v in r.items()]) + "\n")
                    raw.flush()
    print(f"# round {rnd + 1}/{rounds} done", file=sys.stderr)

def med(rs, k):
    return statistics.median(r[k] for r in rs)

print("#")
print("# CPU columns are ns per I/O (medians over rounds); total = usr+sys+kblockd+unbound+ksoftirqd;")
print("# [min-max] of total; Δ = median over rounds of total - total(none) in the same round,")
print("# same device/QD/batch/jobs (Δ% of none's median); cs = all context")
print("# switches on the machine per I/O; kbd-sw = kblockd worker switches per I/O; busy = all")
print("# CPUs' user+system+irq+softirq per I/O (/proc/stat, includes other load); steal likewise.")
hdr = ("dev", "sched", "qd", "bat", "nj", "var", "IOPS", "usr", "sys", "kblockd", "unbound",
       "ksirq", "total", "[min-max]", "Δ", "Δ%", "cs", "kbd-sw", "fioctx", "busy", "steal")
fmt = "{:<11} {:<11} {:>3} {:>3} {:>2} {:<8} {:>8} {:>6} {:>6} {:>7} {:>7} {:>5} {:>6} {:>13} {:>6} {:>5} {:>5} {:>6} {:>6} {:>6} {:>5}"
print(fmt.format(*hdr))
for dev in devices:
    for cfg in CONFIGS:
        base_rs = results[(dev, cfg, "none")]
        base = med(base_rs, "total")
        for sched in SCHEDS:
            rs = results[(dev, cfg, sched)]
            tot = [r["total"] for r in rs]
            m = statistics.median(tot)
            # Paired: each round's scheduler run against that round's none run, so drift of
            # the shared machine between rounds cancels; then the median over rounds.
            delta = statistics.median(r["total"] - b["total"] for r, b in zip(rs, base_rs))
            print(fmt.format(
                os.path.basename(dev), sched, cfg[0], cfg[1], cfg[2], cfg[3] or "-",
                f"{med(rs, 'iops'):.0f}", f"{med(rs, 'usr'):.0f}", f"{med(rs, 'sys'):.0f}",
                f"{med(rs, 'kbd'):.0f}", f"{med(rs, 'unb'):.0f}", f"{med(rs, 'sirq'):.0f}", f"{m:.0f}",
                f"[{min(tot):.0f}-{max(tot):.0f}]", f"{delta:+.0f}",
                f"{100 * delta / base:+.0f}", f"{med(rs, 'cs'):.2f}",
                f"{med(rs, 'kbdsw'):.2f}", f"{med(rs, 'fioctx'):.2f}",
                f"{med(rs, 'busy'):.0f}", f"{med(rs, 'steal'):.0f}"))
print("#")
print("# kblockd punt (kblockd worker switches per I/O), QD 32, 1 job: batch 1 vs batch 8")
for dev in devices:
    for sched in SCHEDS:
        b1 = med(results[(dev, (32, 1, 1, ""), sched)], "kbdsw")
        b8 = med(results[(dev, (32, 8, 1, ""), sched)], "kbdsw")
        print(f"#   {os.path.basename(dev):<10} {sched:<11} batch1 {b1:.2f}  batch8 {b8:.2f}")
PY
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
