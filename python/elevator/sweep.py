"""Sweeps: many `elevator.sim` configurations in parallel, one DataFrame back.

`sweep(grid)` runs each configuration (a dict of `elevator.sim`'s keyword arguments) on local
processes (`backend="local"`, concurrent.futures) or as Ray tasks (`backend="ray"`: a local
Ray started by `ray.init()`, or the cluster at `address=`). Results are deterministic: every
configuration carries its seed (`seed=` of the sweep when it names none), so the same grid
gives the same rows in the same order on any backend and any number of workers.

A configuration that fails becomes one row with its message in `error`; the others are kept.
With `resume=PATH`, each finished configuration is appended to PATH (JSON Lines) as it
finishes, and a later sweep with the same PATH skips the configurations found there (failed
ones run again).

`python -m elevator.sweep GRID.toml [--ray ADDRESS] [--workers N] [--resume PATH] [-o FILE]`
runs a grid from a file. `elevator sweep GRID.toml` reads the same file and, on local cores,
runs it on Rust threads itself (crates/cli/src/sweep/grid.rs), writing this module's CSV or
JSON Lines and resume journal byte for byte; with `--ray` it calls this module.

GRID.toml (one schema; `elevator sweep --help` says the same):

    seed = 1            # the seed of configurations that name none (default 1)

    # Configurations one by one, run first: tables of `sim`'s keyword arguments.
    [[config]]
    device = "ssd"
    workload = "job:rw=write,bs=64k,size=8m"
    schedulers = ["noop", "deadline"]   # a list: one configuration, both schedulers

    # A grid: every value a list of choices (a value that is not a list is one choice); its
    # configurations are the product, in the keys' order, the last key varying fastest.
    [grid]
    device = ["hdd", "ssd"]
    workload = ["job:rw=randread,bs=4k,size=4m"]
    schedulers = ["noop", "deadline"]   # here: two configurations, one scheduler each
    interval = ["250ms"]

Keys: device, workload, schedulers, seed, host, max_size, max_runtime_ns, dispatch_samples,
interval, nr_requests, read_ahead_kb, max_sectors_kb, plugging, depth. The table: per
configuration its report's rows (run × phase × job, as `Report.rows`), headed by `config`
(its index), `error` (empty, or its message: then that one row) and `cfg.<key>` (a list
comma-joined); columns in first-seen order.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

Grid = Union[Mapping[str, Any], Sequence[Mapping[str, Any]]]

# Columns every sweep row starts with: the configuration's index in the grid, its error (None
# when it ran), then its parameters as `cfg.<key>`.
CONFIG_COLUMN = "config"
ERROR_COLUMN = "error"


def expand(grid: Grid, seed: int = 1) -> List[Dict[str, Any]]:
    """The configurations of `grid`: a list of dicts as given, or a dict of lists expanded to
    their product (in the dict's key order; a value that is not a list is one choice). Each
    configuration without a `seed` gets `seed`."""
    if isinstance(grid, Mapping):
        keys = list(grid)
        choices = [grid[key] if isinstance(grid[key], (list, tuple)) else [grid[key]]
                   for key in keys]
        configs = [dict(zip(keys, values)) for values in itertools.product(*choices)]
    elif isinstance(grid, (list, tuple)):
        configs = []
        for index, config in enumerate(grid):
            if not isinstance(config, Mapping):
                from . import ElevatorError

                raise ElevatorError(f"grid[{index}]: not a dict of sim's keyword arguments")
            configs.append(dict(config))
    else:
        from . import ElevatorError

        raise ElevatorError("grid: a list of dicts or a dict of lists")
    for config in configs:
        config.setdefault("seed", seed)
    return configs


def _key(config: Mapping[str, Any]) -> str:
    """A configuration's identity in a resume file."""
    return json.dumps(config, sort_keys=True, default=str)


def run_config(config: Dict[str, Any]) -> str:
    """Runs one configuration; returns `{"rows": [...]}` or `{"error": "..."}` as JSON text
    (text, so that fresh and resumed results go through the same parse)."""
    from . import sim

    try:
        return json.dumps({"rows": sim(**config).rows()})
    except Exception as error:  # noqa: BLE001 - one configuration's failure is its row
        from . import ElevatorError

        message = str(error) if isinstance(error, ElevatorError) else (
            f"{type(error).__name__}: {error}")
        return json.dumps({"error": message})


def _rows(index: int, config: Mapping[str, Any], result: Mapping[str, Any]) -> List[Dict]:
    head = {CONFIG_COLUMN: index, ERROR_COLUMN: result.get("error")}
    head.update({f"cfg.{key}": _cell(value) for key, value in config.items()})
    if "error" in result:
        return [head]
    return [{**head, **row} for row in result["rows"]] or [head]


def _cell(value: Any) -> Any:
    """A parameter as a DataFrame cell: lists (a scheduler list) as comma-joined text."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    return value


def _read_resume(path: str) -> Dict[str, Dict[str, Any]]:
    """Finished configurations in a resume file, by key; a torn last line (a sweep killed while
    writing) is ignored, and so are failed configurations (they run again)."""
    done: Dict[str, Dict[str, Any]] = {}
    if not os.path.exists(path):
        return done
    with open(path, encoding="utf-8") as file:
        for line in file:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "error" not in entry["result"]:
                done[entry["key"]] = entry["result"]
    return done


class _Journal:
    """Appends each finished configuration to the resume file, flushed as it finishes."""

    def __init__(self, path: Optional[str]):
        self.file = open(path, "a+", encoding="utf-8") if path else None
        if self.file is not None and self.file.tell() > 0:
            # A torn last line (a sweep killed while writing) is ended, so that the first entry
            # appended now is a line of its own.
            self.file.seek(self.file.tell() - 1)
            if self.file.read(1) != "\n":
                self.file.write("\n")

    def write(self, config: Mapping[str, Any], text: str) -> None:
        if self.file is not None:
            entry = {"key": _key(config), "result": json.loads(text)}
            self.file.write(json.dumps(entry) + "\n")
            self.file.flush()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def _local(todo: List[tuple], workers: Optional[int], journal: _Journal) -> Dict[int, str]:
    import concurrent.futures
    import multiprocessing

    results: Dict[int, str] = {}
    if not todo:
        return results
    # fork where there is one: no `if __name__ == "__main__"` guard needed in a script or a
    # notebook, and no interpreter start per worker. The simulator's threads end with each
    # `sim` call, so none is held across the fork.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {pool.submit(run_config, config): (index, config) for index, config in todo}
        for future in concurrent.futures.as_completed(futures):
            index, config = futures[future]
            try:
                text = future.result()
            except Exception as error:  # noqa: BLE001 - a worker died: this config's row
                text = json.dumps({"error": f"{type(error).__name__}: {error}"})
            journal.write(config, text)
            results[index] = text
    return results


def _ray(todo: List[tuple], address: Optional[str], workers: Optional[int],
         journal: _Journal) -> Dict[int, str]:
    import ray

    results: Dict[int, str] = {}
    if not todo:
        return results
    if not ray.is_initialized():
        options: Dict[str, Any] = {"ignore_reinit_error": True, "include_dashboard": False,
                                   "log_to_driver": False}
        if address:
            options["address"] = address
        elif workers:
            options["num_cpus"] = workers
        ray.init(**options)
    task = ray.remote(num_cpus=1, max_retries=0)(run_config)
    pending = {task.remote(config): (index, config) for index, config in todo}
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            index, config = pending.pop(ref)
            try:
                text = ray.get(ref)
            except Exception as error:  # noqa: BLE001 - a task or worker died
                text = json.dumps({"error": f"{type(error).__name__}: {error}"})
            journal.write(config, text)
            results[index] = text
    return results


def sweep_rows(
    grid: Grid,
    backend: str = "local",
    address: Optional[str] = None,
    workers: Optional[int] = None,
    resume: Optional[str] = None,
    seed: int = 1,
) -> List[Dict[str, Any]]:
    """The rows of `sweep` as dicts (no pandas needed)."""
    from . import ElevatorError

    if backend not in ("local", "ray"):
        raise ElevatorError(f"backend {backend!r}: not one of local, ray")
    if address is not None and backend != "ray":
        raise ElevatorError("address= goes with backend=\"ray\"")
    if workers is not None and workers < 1:
        raise ElevatorError(f"workers {workers}: at least 1")
    configs = expand(grid, seed)
    done = _read_resume(resume) if resume else {}
    texts: Dict[int, str] = {}
    todo = []
    for index, config in enumerate(configs):
        key = _key(config)
        if key in done:
            texts[index] = json.dumps(done[key])
        else:
            todo.append((index, config))
    journal = _Journal(resume)
    try:
        if backend == "local":
            texts.update(_local(todo, workers, journal))
        else:
            texts.update(_ray(todo, address, workers, journal))
    finally:
        journal.close()
    rows: List[Dict[str, Any]] = []
    for index, config in enumerate(configs):
        rows.extend(_rows(index, config, json.loads(texts[index])))
    return rows


def sweep(
    grid: Grid,
    backend: str = "local",
    address: Optional[str] = None,
    workers: Optional[int] = None,
    resume: Optional[str] = None,
    seed: int = 1,
):
    """Runs every configuration of `grid` and returns one DataFrame: per configuration its
    report's rows (run × phase × job, as `Report.to_pandas`), headed by `config` (its index),
    `error` (None, or why it failed: then it has that one row) and `cfg.<key>` (its arguments).

    `backend`: "local" (a process pool of `workers`, default the machine's processors) or
    "ray" (`ray.init()`: a local Ray of `workers` CPUs, or the cluster at `address`).
    `resume`: a JSON Lines file of finished configurations, appended as they finish and
    skipped when found. `seed`: the seed of configurations that name none.
    """
    import pandas as pd

    from ._report import _columns

    rows = sweep_rows(grid, backend, address, workers, resume, seed)
    return pd.DataFrame.from_records(rows, columns=_columns(rows))


def _load_grid(path: str) -> List[Dict[str, Any]]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib
    from . import ElevatorError

    try:
        with open(path, "rb") as file:
            document = tomllib.load(file)
    except OSError as error:
        raise ElevatorError(f"{path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ElevatorError(f"{path}: {error}") from None
    unknown = sorted(set(document) - {"grid", "config", "seed"})
    if unknown:
        raise ElevatorError(f"{path}: unknown table {', '.join(unknown)} (accepted: grid, "
                            "config, seed)")
    configs: List[Dict[str, Any]] = []
    seed = document.get("seed", 1)
    for index, config in enumerate(document.get("config", [])):
        if not isinstance(config, dict):
            raise ElevatorError(f"{path}: config[{index}]: not a table")
        configs.extend(expand([config], seed))
    if "grid" in document:
        if not isinstance(document["grid"], dict):
            raise ElevatorError(f"{path}: grid: not a table")
        configs.extend(expand(document["grid"], seed))
    if not configs:
        raise ElevatorError(f"{path}: no [grid] and no [[config]]: nothing to run")
    return configs


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m elevator.sweep GRID.toml ...`: exit 0, 1 when a configuration failed, 2 on
    bad input."""
    from . import ElevatorError

    parser = argparse.ArgumentParser(prog="elevator sweep", description=__doc__.split("\n")[0])
    parser.add_argument("grid", metavar="GRID.toml")
    parser.add_argument("--ray", metavar="ADDRESS", nargs="?", const="",
                        help="run on Ray: the cluster at ADDRESS, or a local Ray without one")
    parser.add_argument("--workers", "-j", type=int)
    parser.add_argument("--resume", metavar="PATH")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="FILE.csv or FILE.jsonl (default: CSV on stdout)")
    args = parser.parse_args(argv)
    try:
        if args.output and not args.output.endswith((".csv", ".jsonl")):
            raise ElevatorError(f"-o {args.output}: not .csv or .jsonl")
        configs = _load_grid(args.grid)
        backend = "local" if args.ray is None else "ray"
        rows = sweep_rows(configs, backend, args.ray or None, args.workers, args.resume)
    except ElevatorError as error:
        print(f"elevator: {error}", file=sys.stderr)
        return 2
    _write(rows, args.output)
    failed = sorted({row[CONFIG_COLUMN] for row in rows if row[ERROR_COLUMN] is not None})
    for index in failed:
        message = next(row[ERROR_COLUMN] for row in rows if row[CONFIG_COLUMN] == index)
        print(f"elevator: configuration {index}: {message}", file=sys.stderr)
    return 1 if failed else 0


def _write(rows: List[Dict[str, Any]], output: Optional[str]) -> None:
    import csv

    from ._report import _columns

    out = open(output, "w", encoding="utf-8", newline="") if output else sys.stdout
    try:
        if output and output.endswith(".jsonl"):
            for row in rows:
                out.write(json.dumps(row) + "\n")
        else:
            writer = csv.DictWriter(out, fieldnames=_columns(rows) or [CONFIG_COLUMN])
            writer.writeheader()
            writer.writerows(rows)
    finally:
        if output:
            out.close()


if __name__ == "__main__":
    sys.exit(main())
