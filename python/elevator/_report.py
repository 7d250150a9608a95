"""The report as Python objects: `Report` → `Run` → `Phase` → `Job`, over the report's JSON.

Every object keeps its JSON dict (`.data`) and exposes its fields as attributes, so a field
the report gains (DESIGN.md §5: new fields are added, meanings never change) is there without
a change here. `Report.to_json()` is the text `elevator sim --format json` prints.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

# The "why" counters (DESIGN.md §5): what a phase's figures come from. In the DataFrame each
# is a column, from the phase's own `queue_stats` (simulated runs) or else the run's.
WHY_COUNTERS = (
    "bios",
    "back_merges",
    "front_merges",
    "requests_fused",
    "plugs",
    "sched_queue_mean",
    "device_queue_mean",
    "seek_distance_mean_sectors",
    "seek_distance_max_sectors",
    "max_wait_ns",
    "blocked_ns",
    "idle_ns",
)

_LATENCY_KEYS = ("mean", "p50", "p90", "p99", "p99_9", "max")
_JOB_LATENCY_KEYS = ("p50", "p99", "max")


class _Record:
    """A JSON object with its keys as attributes."""

    def __init__(self, data: Dict[str, Any]):
        self.data = data

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["data"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        name = self.data.get("name") or self.data.get("scheduler") or ""
        return f"<{type(self).__name__} {name}>"


class Job(_Record):
    """One job (issuer: a process, job clone, iozone child) of a phase."""


class Phase(_Record):
    """One phase of a run (a fio job's phase, iozone's write, read, ...)."""

    @property
    def jobs(self) -> List[Job]:
        """The phase's jobs (the report's `issuers`)."""
        return [Job(issuer) for issuer in self.data["issuers"]]


class Run(_Record):
    """One workload under one scheduler on one device."""

    @property
    def phases(self) -> List[Phase]:
        """The phases in the order they ran."""
        return [Phase(phase) for phase in self.data["phases"]]

    def __repr__(self) -> str:
        return f"<Run {self.scheduler} on {self.device}: {self.workload}>"


class Report:
    """A whole report (`elevator.report/1`): one or more runs."""

    def __init__(self, text: str):
        self._text = text if text.endswith("\n") else text + "\n"
        self.data: Dict[str, Any] = json.loads(text)

    @property
    def seed(self) -> int:
        """The seed every simulated run used."""
        return self.data["seed"]

    @property
    def schema(self) -> str:
        """Always `elevator.report/1`."""
        return self.data["schema"]

    @property
    def runs(self) -> List[Run]:
        """The runs, in the order they were asked for."""
        return [Run(run) for run in self.data["runs"]]

    def run(self, scheduler: str) -> Run:
        """The first run under `scheduler` (as the report names it)."""
        for run in self.runs:
            if run.scheduler == scheduler:
                return run
        names = ", ".join(run.scheduler for run in self.runs)
        raise KeyError(f"no run under {scheduler} (runs: {names})")

    def to_json(self) -> str:
        """The report's JSON, byte for byte what `elevator sim --format json` prints."""
        return self._text

    def to_dict(self) -> Dict[str, Any]:
        """The report as plain dicts and lists."""
        return json.loads(self._text)

    def rows(self) -> List[Dict[str, Any]]:
        """One dict per run × phase × job: the rows of `to_pandas()`."""
        return report_rows(self.data)

    def to_pandas(self):
        """A DataFrame, one row per run × phase × job, the "why" counters as columns."""
        import pandas as pd

        return pd.DataFrame.from_records(self.rows(), columns=_columns(self.rows()))

    def __repr__(self) -> str:
        return f"<Report seed={self.seed} runs={len(self.data['runs'])}>"


def _columns(rows: List[Dict[str, Any]]) -> Optional[List[str]]:
    """Every key of `rows` in first-seen order (pandas would otherwise sort or drop some)."""
    seen: Dict[str, None] = {}
    for row in rows:
        for key in row:
            seen.setdefault(key, None)
    return list(seen) or None


def report_rows(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The rows of a report's JSON dict: run × phase × job (a phase without jobs: one row)."""
    rows = []
    for run_index, run in enumerate(report["runs"]):
        base = {
            "run": run_index,
            "mode": run["mode"],
            "experiment": run.get("experiment"),
            "device": run["device"],
            "workload": run["workload"],
            "scheduler": run["scheduler"],
            "seed": report["seed"],
            "dispatched": run["scheduler_stats"]["dispatched"],
            "merged": run["scheduler_stats"]["merged"],
            "device_requests": run["device_stats"].get("requests"),
            "device_busy_ns": run["device_stats"].get("busy_ns"),
        }
        for phase in run["phases"]:
            why = phase.get("queue_stats") or run["queue_stats"]
            latency = phase["latency_ns"]
            phase_part = {
                "phase": phase["name"],
                "phase_duration_ns": phase["duration_ns"],
                "phase_bytes": phase["bytes"],
                "phase_ops": phase["ops"],
                "phase_throughput_bytes_per_s": phase["throughput_bytes_per_s"],
                "phase_iops": phase["iops"],
                **{f"phase_latency_ns_{key}": latency.get(key) for key in _LATENCY_KEYS},
                "cpu_utilization_percent": phase.get("cpu_utilization_percent"),
                **{key: why.get(key) for key in WHY_COUNTERS},
            }
            issuers = phase["issuers"] or [None]
            for issuer in issuers:
                job_part: Dict[str, Any] = {"job": None, "job_bytes": None, "job_ops": None,
                                            "job_throughput_bytes_per_s": None}
                job_part.update({f"job_latency_ns_{key}": None for key in _JOB_LATENCY_KEYS})
                if issuer is not None:
                    job_part = {
                        "job": issuer["name"],
                        "job_bytes": issuer["bytes"],
                        "job_ops": issuer["ops"],
                        "job_throughput_bytes_per_s": issuer["throughput_bytes_per_s"],
                        **{f"job_latency_ns_{key}": issuer["latency_ns"].get(key)
                           for key in _JOB_LATENCY_KEYS},
                    }
                rows.append({**base, **phase_part, **job_part})
    return rows
