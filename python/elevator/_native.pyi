"""Types of the Rust extension `elevator._native` (crates/py). Use the `elevator` module."""

from typing import List, Optional

VERSION: str
DEFAULT_DEVICE: str
DEFAULT_WORKLOAD: str
DEFAULT_HOST: str
DEFAULT_LIVE_WORKLOAD: str

class ElevatorError(ValueError):
    """A bad specification, file or simulation: the message is the one the CLI prints."""

def sim(
    device: str,
    workload: str,
    schedulers: List[str],
    seed: int,
    host: str,
    nr_requests: Optional[int] = ...,
    read_ahead_kb: Optional[int] = ...,
    max_sectors_kb: Optional[int] = ...,
    plugging: Optional[bool] = ...,
    depth: Optional[int] = ...,
    max_size: Optional[int] = ...,
    max_runtime_ns: Optional[int] = ...,
    dispatch_samples: Optional[int] = ...,
    interval: Optional[str] = ...,
) -> str: ...
def study(seed: int, scale: float, only: List[str], schedulers: List[str]) -> str: ...
def schedulers() -> str: ...
def devices() -> str: ...
def hosts() -> str: ...
def workloads() -> str: ...
def read_trace(path: str) -> str: ...
def live(
    target: Optional[str],
    workload: str,
    schedulers: List[str],
    runtime: Optional[str],
    seed: int,
    size: Optional[str],
    force: bool,
    verify: bool,
    depth: Optional[int],
    nr_requests: Optional[int],
    max_sectors_kb: Optional[int],
    engine: str,
    interval: Optional[str],
) -> str: ...
def kernel_compare(
    device: str,
    workload: str,
    schedulers: List[str],
    runtime: Optional[str],
    seed: int,
    force: bool,
    engine: str,
    drop_caches: bool,
    interval: Optional[str],
) -> str: ...
