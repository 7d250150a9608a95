"""Sweep throughput: the CLI's Rust threads, local Python processes, Ray tasks; Ray's
per-task overhead.

    python python/benches/sweep_throughput.py [CONFIGS] [WORKERS] [MIB]

A grid of CONFIGS (default 200) short simulations (one scheduler each, MIB and 4 x MIB
(default 1) of random reads on a disk or an SSD) runs: in this process one after another;
through `elevator sweep GRID.toml -j WORKERS` (Rust threads; the binary in ELEVATOR_BIN, else
`elevator` on PATH) and `python -m elevator.sweep GRID.toml -j WORKERS` (the package's process
pool), both writing CSV, whose bytes must agree; as `elevator.sweep` on a local process pool
of WORKERS (default 2); as Ray tasks on a local Ray of WORKERS CPUs. It prints configurations
per second for each, and Ray's overhead per task: the time of as many empty tasks, and the
difference to the process pool per configuration. Wall-clock figures: a benchmark, not a test.
Build both sides in release for figures worth comparing (`cargo build --release -p elevator`,
`pip install ./python`).
"""

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import elevator
from elevator.sweep import expand, run_config


def grid(count: int, scale: int):
    schedulers = ["noop", "deadline", "cfq", "anticipatory", "bfq", "mq-deadline", "kyber",
                  "none"]
    base = expand({"device": ["hdd", "ssd"], "schedulers": schedulers,
                   "workload": [f"job:rw=randread,bs=4k,size={scale}m",
                                f"job:rw=randread,bs=4k,size={4 * scale}m"],
                   "seed": list(range(1, 1 + (count + 31) // 32))})
    return base[:count]


def grid_toml(configs) -> str:
    """The configurations as GRID.toml `[[config]]` tables (strings and ints only)."""
    lines = []
    for config in configs:
        lines.append("[[config]]")
        lines.extend(f"{key} = {json.dumps(value)}" for key, value in config.items())
    return "\n".join(lines) + "\n"


def cpu_seconds() -> float:
    """User + system time of this process and its reaped children (pool workers, the CLI)."""
    mine = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


def timed(label, count, function):
    # CPU time beside wall time: on a shared machine the wall time says how loaded it was,
    # the CPU time what the sweep cost (Ray's workers are not this process's children: for
    # Ray it counts the driver only).
    start, cpu = time.perf_counter(), cpu_seconds()
    result = function()
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    print(f"{label:<32} {seconds:7.2f} s  {count / seconds:8.1f} configs/s  "
          f"{1e3 * cpu / count:6.2f} CPU ms/config")
    return seconds, result


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    scale = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    configs = grid(count, scale)
    print(f"{len(configs)} configurations, {workers} workers")
    timed("sequential, one process", count, lambda: [run_config(c) for c in configs])
    binary = os.environ.get("ELEVATOR_BIN") or shutil.which("elevator")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "grid.toml")
        with open(path, "w", encoding="utf-8") as file:
            file.write(grid_toml(configs))
        ours, theirs = os.path.join(tmp, "cli.csv"), os.path.join(tmp, "package.csv")
        if binary:
            timed(f"elevator sweep -j {workers}", count, lambda: subprocess.run(
                [binary, "-q", "sweep", path, "-j", str(workers), "-o", ours], check=True))
        timed(f"python -m elevator.sweep -j {workers}", count, lambda: subprocess.run(
            [sys.executable, "-W", "ignore", "-m", "elevator.sweep", path, "-j", str(workers), "-o", theirs],
            check=True))
        if binary:
            with open(ours, "rb") as a, open(theirs, "rb") as b:
                assert a.read() == b.read(), "the CLI's CSV and the package's differ"
    local_s, local = timed(f"local pool ({workers})", count,
                           lambda: elevator.sweep(configs, workers=workers))
    import ray

    start = time.perf_counter()
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    print(f"{'ray.init (local)':<32} {time.perf_counter() - start:7.2f} s")
    ray_s, on_ray = timed(f"ray ({workers} CPUs)", count, lambda: elevator.sweep(configs,
                                                                                 backend="ray"))
    assert local.equals(on_ray), "ray and local differ"

    @ray.remote
    def empty():
        return None

    ray.get([empty.remote() for _ in range(10)])  # warm the workers
    start = time.perf_counter()
    ray.get([empty.remote() for _ in range(count)])
    empty_s = time.perf_counter() - start
    print(f"{'empty ray tasks':<32} {empty_s:7.2f} s  {1e3 * empty_s / count:8.2f} ms/task "
          f"(throughput with {workers} CPUs)")
    print(f"ray - local per config: {1e3 * (ray_s - local_s) / count:.2f} ms")
    ray.shutdown()


if __name__ == "__main__":
    main()
