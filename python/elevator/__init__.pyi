from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import pandas

DEFAULT_DEVICE: str
DEFAULT_HOST: str
DEFAULT_LIVE_WORKLOAD: str
DEFAULT_WORKLOAD: str
WHY_COUNTERS: tuple[str, ...]
QUEUE_KEYS: tuple[str, ...]
__version__: str

class ElevatorError(ValueError): ...

class Job:
    data: Dict[str, Any]
    name: str
    bytes: int
    ops: int
    throughput_bytes_per_s: float
    latency_ns: Dict[str, int]
    def __getattr__(self, name: str) -> Any: ...

class Phase:
    data: Dict[str, Any]
    name: str
    duration_ns: int
    bytes: int
    ops: int
    throughput_bytes_per_s: float
    iops: float
    latency_ns: Dict[str, int]
    queue_stats: Optional[Dict[str, Any]]
    @property
    def jobs(self) -> List[Job]: ...
    def __getattr__(self, name: str) -> Any: ...

class Run:
    data: Dict[str, Any]
    mode: str
    device: str
    workload: str
    scheduler: str
    config: Dict[str, str]
    scheduler_stats: Dict[str, Any]
    queue_stats: Dict[str, Any]
    device_stats: Dict[str, Any]
    @property
    def phases(self) -> List[Phase]: ...
    def __getattr__(self, name: str) -> Any: ...

class Report:
    data: Dict[str, Any]
    def __init__(self, text: str) -> None: ...
    @property
    def seed(self) -> int: ...
    @property
    def schema(self) -> str: ...
    @property
    def runs(self) -> List[Run]: ...
    def run(self, scheduler: str) -> Run: ...
    def to_json(self) -> str: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def rows(self) -> List[Dict[str, Any]]: ...
    def to_pandas(self) -> pandas.DataFrame: ...

def sim(
    device: str = ...,
    workload: str = ...,
    schedulers: Union[None, str, Iterable[str]] = ...,
    seed: int = ...,
    host: str = ...,
    max_size: Optional[int] = ...,
    max_runtime_ns: Optional[int] = ...,
    dispatch_samples: Optional[int] = ...,
    interval: Union[None, str, int, float] = ...,
    *,
    nr_requests: Optional[int] = ...,
    read_ahead_kb: Optional[int] = ...,
    max_sectors_kb: Optional[int] = ...,
    plugging: Optional[bool] = ...,
    depth: Optional[int] = ...,
) -> Report: ...
def study(
    seed: int = ...,
    scale: float = ...,
    only: Union[None, str, Iterable[str]] = ...,
    schedulers: Union[None, str, Iterable[str]] = ...,
) -> Report: ...
def live(
    target: Optional[str] = ...,
    workload: str = ...,
    schedulers: Union[None, str, Iterable[str]] = ...,
    runtime: Union[None, str, int, float] = ...,
    seed: int = ...,
    size: Union[None, str, int] = ...,
    force: bool = ...,
    verify: bool = ...,
    depth: Optional[int] = ...,
    nr_requests: Optional[int] = ...,
    max_sectors_kb: Optional[int] = ...,
    engine: str = ...,
    interval: Union[None, str, int, float] = ...,
) -> Report: ...
def kernel_compare(
    device: str,
    workload: str = ...,
    schedulers: Union[None, str, Iterable[str]] = ...,
    runtime: Union[None, str, int, float] = ...,
    seed: int = ...,
    force: bool = ...,
    engine: str = ...,
    drop_caches: bool = ...,
    interval: Union[None, str, int, float] = ...,
) -> Report: ...
def schedulers() -> List[Dict[str, Any]]: ...
def devices() -> List[Dict[str, Any]]: ...
def hosts() -> List[Dict[str, Any]]: ...
def workloads() -> List[Dict[str, Any]]: ...
def read_trace(path: str) -> Dict[str, Any]: ...
def sweep(
    grid: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
    backend: str = ...,
    address: Optional[str] = ...,
    workers: Optional[int] = ...,
    resume: Optional[str] = ...,
    seed: int = ...,
) -> pandas.DataFrame: ...
