"""elevator from Python: Linux I/O schedulers in a deterministic simulator.

    import elevator
    report = elevator.sim(device="hdd", workload="job:rw=randread,bs=4k,size=8m",
                          schedulers=["noop", "deadline", "cfq"], seed=1)
    df = report.to_pandas()            # one row per run × phase × job
    df = elevator.sweep({"device": ["hdd", "ssd"], "seed": [1, 2]})   # a grid, in parallel

Specs take the command line's syntax (DESIGN.md §4: `NAME[:key=value,...]`); a workload is a
spec or the path of an fio job file (ending in `.fio`, or any existing
file named with a `/`). Errors raise `ElevatorError` (a `ValueError`) with the
message `elevator` prints for the same input. The GIL is released while simulating.

Real I/O, where the machine allows: `elevator.live(target=...)` runs a workload on a file or
block device through elevator's own schedulers (`elevator run`), `elevator.kernel_compare(
device=...)` under the kernel's schedulers (`elevator kernel compare`, root; the device's
queue is put back afterwards). Both keep the commands' write-safety rules (a file elevator did
not create, or a device that is mounted, partitioned or holds data, is written only with
`force=True`), release the GIL while the I/O runs, and stop on Ctrl-C (KeyboardInterrupt,
after the I/O in flight completed).
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Optional, Union

from . import _native
from ._native import (
    DEFAULT_DEVICE,
    DEFAULT_HOST,
    DEFAULT_LIVE_WORKLOAD,
    DEFAULT_WORKLOAD,
    ElevatorError,
)
from ._report import WHY_COUNTERS, Job, Phase, Report, Run

__version__ = _native.VERSION

__all__ = [
    "DEFAULT_DEVICE",
    "DEFAULT_HOST",
    "DEFAULT_LIVE_WORKLOAD",
    "DEFAULT_WORKLOAD",
    "ElevatorError",
    "Job",
    "Phase",
    "Report",
    "Run",
    "WHY_COUNTERS",
    "devices",
    "hosts",
    "kernel_compare",
    "live",
    "read_trace",
    "schedulers",
    "sim",
    "study",
    "sweep",
    "workloads",
]

# Block-queue settings `sim` takes as keywords, as the CLI's options of the same names.
QUEUE_KEYS = ("nr_requests", "read_ahead_kb", "max_sectors_kb", "plugging", "depth")


def _schedulers(schedulers: Union[None, str, Iterable[str]]) -> List[str]:
    if schedulers is None:
        return []
    if isinstance(schedulers, str):
        return [schedulers]
    return [str(scheduler) for scheduler in schedulers]


def sim(
    device: str = DEFAULT_DEVICE,
    workload: str = DEFAULT_WORKLOAD,
    schedulers: Union[None, str, Iterable[str]] = None,
    seed: int = 1,
    host: str = DEFAULT_HOST,
    max_size: Optional[int] = None,
    max_runtime_ns: Optional[int] = None,
    dispatch_samples: Optional[int] = None,
    interval: Union[None, str, int, float] = None,
    **queue: Any,
) -> Report:
    """Simulates `workload` on `device` under each scheduler (default: every one the host's
    kernel runs), as `elevator sim`; returns the report.

    `schedulers` is a list or one comma-separated string (`"deadline,cfq:slice_idle=0"`).
    `**queue`: `nr_requests`, `read_ahead_kb`, `max_sectors_kb`, `plugging`, `depth`.
    `max_size` (bytes) and `max_runtime_ns` cap an fio job file's jobs (`--max-size`,
    `--max-runtime`). `dispatch_samples`: how many dispatches each run keeps (the report's
    `dispatch_samples`, what the HTML report draws; default none), `interval`: the length of
    the time series' intervals (`phases[].series`), a time as the CLI's `--interval` takes it
    (`"500ms"`, `"2s"`; a number is seconds; default 1 s). The same arguments and seed give the
    same report, byte for byte.
    """
    unknown = sorted(set(queue) - set(QUEUE_KEYS))
    if unknown:
        raise ElevatorError(
            f"unknown keyword {', '.join(unknown)} (accepted: device, workload, schedulers, "
            f"seed, host, max_size, max_runtime_ns, dispatch_samples, interval, "
            f"{', '.join(QUEUE_KEYS)})"
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ElevatorError(f"seed {seed!r}: not a whole number >= 0")
    text = _native.sim(
        str(device),
        str(workload),
        _schedulers(schedulers),
        seed,
        str(host),
        max_size=max_size,
        max_runtime_ns=max_runtime_ns,
        dispatch_samples=dispatch_samples,
        interval=None if interval is None else str(interval),
        **queue,
    )
    return Report(text)


def study(
    seed: int = 1,
    scale: float = 1.0,
    only: Union[None, str, Iterable[str]] = None,
    schedulers: Union[None, str, Iterable[str]] = None,
) -> Report:
    """Runs the classic study (`elevator compare`): each experiment under `schedulers` (a
    list or one comma-separated string, as `-s`; default: the experiment's baseline and the
    legacy schedulers). `scale` (0 < F <= 1) shrinks the amounts, `only` picks experiments by
    id."""
    return Report(_native.study(seed, float(scale), _schedulers(only), _schedulers(schedulers)))


def _time(value: Union[None, str, int, float]) -> Optional[str]:
    """A time argument as the CLI's text (a number is seconds)."""
    return None if value is None else str(value)


def live(
    target: Optional[str] = None,
    workload: str = DEFAULT_LIVE_WORKLOAD,
    schedulers: Union[None, str, Iterable[str]] = None,
    runtime: Union[None, str, int, float] = None,
    seed: int = 1,
    size: Union[None, str, int] = None,
    force: bool = False,
    verify: bool = False,
    depth: Optional[int] = None,
    nr_requests: Optional[int] = None,
    max_sectors_kb: Optional[int] = None,
    engine: str = "auto",
    interval: Union[None, str, int, float] = None,
) -> Report:
    """Runs `workload` live on `target` under each of elevator's schedulers (default: all),
    as `elevator run -t TARGET`: real I/O (io_uring, or a thread pool with `engine="threads"`)
    scheduled by elevator's own schedulers. Returns the report (`mode` "live").

    `target`: a file or block device; default elevator's scratch file. A missing file is
    created (`size`: bytes or `"256m"`; default 1 GiB) and marked as elevator's; writing to
    anything else needs `force=True`, and a device that is mounted, partitioned or holds a
    filesystem is refused as the CLI refuses it. `runtime`: stop each scheduler's run after
    this wall time (`"2s"`, or seconds; the run is then marked partial). `verify`: stamp
    writes and check reads. `depth`, `nr_requests`, `max_sectors_kb`, `engine`, `interval`:
    the CLI's options of the same names. Failed I/O raises ElevatorError with the CLI's
    message.
    """
    text = _native.live(
        None if target is None else str(target),
        str(workload),
        _schedulers(schedulers),
        _time(runtime),
        seed,
        None if size is None else str(size),
        bool(force),
        bool(verify),
        depth,
        nr_requests,
        max_sectors_kb,
        str(engine),
        _time(interval),
    )
    return Report(text)


def kernel_compare(
    device: str,
    workload: str = DEFAULT_LIVE_WORKLOAD,
    schedulers: Union[None, str, Iterable[str]] = None,
    runtime: Union[None, str, int, float] = None,
    seed: int = 1,
    force: bool = False,
    engine: str = "auto",
    drop_caches: bool = False,
    interval: Union[None, str, int, float] = None,
) -> Report:
    """Runs `workload` on block device `device` (`/dev/loop0` or `loop0`) under each of the
    kernel's schedulers (`"mq-deadline:fifo_batch=8"`; default: every one the device offers),
    as `elevator kernel compare DEV`. Needs root. The device's scheduler and tunables are
    snapshotted first and put back afterwards, also when a run fails or Ctrl-C stops it.
    Returns the report (`mode` "kernel"). `runtime`: stop each scheduler's run after this wall
    time. `force`: write to a device that holds data. `drop_caches`: drop the whole system's
    page cache between runs (default: the device's only).
    """
    text = _native.kernel_compare(
        str(device),
        str(workload),
        _schedulers(schedulers),
        _time(runtime),
        seed,
        bool(force),
        str(engine),
        bool(drop_caches),
        _time(interval),
    )
    return Report(text)


def schedulers() -> List[Dict[str, Any]]:
    """Every scheduler: name, aliases, kernel version, summary, default, tunables (name,
    unit, default, min, max, help)."""
    return json.loads(_native.schedulers())


def devices() -> List[Dict[str, Any]]:
    """Every device kind: name, summary, keys (key, accepts, default, help), presets."""
    return json.loads(_native.devices())


def hosts() -> List[Dict[str, Any]]:
    """The host: its keys and presets."""
    return json.loads(_native.hosts())


def workloads() -> List[Dict[str, Any]]:
    """Every workload kind: name, summary, keys."""
    return json.loads(_native.workloads())


def read_trace(path: str) -> Dict[str, Any]:
    """Reads a block trace (fio iolog v2/v3, blkparse text, MSR CSV, compact; the format is
    detected from the content): `{"format", "start_unix_ns", "records": [{time_ns, pid,
    process, device, op, offset_bytes, size_bytes, priority, latency_ns}, ...]}`."""
    return json.loads(_native.read_trace(str(path)))


from .sweep import sweep  # noqa: E402  (after sim: the sweep module calls it)
