"""Sweeps: grid expansion, per-configuration rows, failures, resume, Ray, the CLI."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

import elevator
from elevator.sweep import expand

W = "job:rw=randread,bs=4k,size=1m"


def small_grid():
    return {"device": ["hdd", "ssd"], "workload": [W], "schedulers": ["noop", "deadline"],
            "seed": [1, 2]}


def test_expand_is_the_product_in_key_order_with_default_seed():
    # Proves a dict of lists expands to every combination, the last key varying fastest, and
    # that configurations without a seed get the sweep's.
    configs = expand({"device": ["hdd", "ssd"], "schedulers": ["noop", "cfq"], "host": "host"},
                     seed=9)
    assert configs == [
        {"device": d, "schedulers": s, "host": "host", "seed": 9}
        for d in ["hdd", "ssd"] for s in ["noop", "cfq"]]
    assert expand([{"device": "ssd", "seed": 4}]) == [{"device": "ssd", "seed": 4}]


def test_rows_are_each_configurations_report_in_grid_order():
    # Proves the sweep's rows for configuration i are exactly elevator.sim(**config_i)'s rows.
    df = elevator.sweep(small_grid(), workers=2)
    configs = expand(small_grid())
    assert list(df["config"].unique()) == list(range(len(configs)))
    for index, config in enumerate(configs):
        expected = elevator.sim(**config).to_pandas()
        got = df[df["config"] == index][list(expected.columns)].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, expected)
    assert df["error"].isna().all()
    assert list(df["cfg.device"].unique()) == ["hdd", "ssd"]


def test_result_does_not_depend_on_the_number_of_workers():
    # Proves determinism across parallelism: completion order never reorders rows.
    one = elevator.sweep(small_grid(), workers=1)
    two = elevator.sweep(small_grid(), workers=2)
    pd.testing.assert_frame_equal(one, two)


def test_a_failing_configuration_is_one_row_and_the_rest_survive():
    # Proves one bad configuration does not lose the others, and its row carries sim's message.
    grid = [{"device": "hdd", "workload": W, "schedulers": "noop"},
            {"device": "nosuch", "workload": W, "schedulers": "noop"},
            {"device": "ssd", "workload": W, "schedulers": "noop"}]
    df = elevator.sweep(grid, workers=2)
    failed = df[df["config"] == 1]
    assert len(failed) == 1
    with pytest.raises(elevator.ElevatorError) as caught:
        elevator.sim(**grid[1])
    assert failed["error"].iloc[0] == str(caught.value)
    assert df[df["config"] != 1]["error"].isna().all()
    assert set(df[df["config"] != 1]["scheduler"]) == {"noop"}


def test_resume_skips_configurations_found_in_the_journal(tmp_path):
    # Proves resume= reads finished configurations back instead of running them again: a
    # marker planted in the journal survives into the result, a torn last line is ignored,
    # and a failed configuration runs again.
    journal = tmp_path / "partial.jsonl"
    grid = small_grid()
    first = elevator.sweep(grid, workers=2, resume=str(journal))
    lines = journal.read_text().splitlines()
    assert len(lines) == len(expand(grid))
    entries = [json.loads(line) for line in lines]
    entries[0]["result"]["rows"][0]["phase_bytes"] = -12345
    # Keep half the entries (as if the sweep had been stopped), plus a torn line.
    kept = entries[: len(entries) // 2]
    journal.write_text("".join(json.dumps(e) + "\n" for e in kept) + '{"key": "tor')
    second = elevator.sweep(grid, workers=2, resume=str(journal))
    assert (second["phase_bytes"] == -12345).sum() == 1
    second.loc[second["phase_bytes"] == -12345, "phase_bytes"] = first.loc[
        second["phase_bytes"] == -12345, "phase_bytes"]
    pd.testing.assert_frame_equal(first, second)


def test_bad_backend_is_an_error():
    # Proves a misspelt backend is refused, naming the accepted ones.
    with pytest.raises(elevator.ElevatorError, match="not one of local, ray"):
        elevator.sweep(small_grid(), backend="dask")


def test_ray_40_configurations_on_2_workers_equal_local(local_ray):
    # Proves the acceptance test: a 40-configuration sweep as Ray tasks on a local Ray
    # of 2 workers gives the local backend's DataFrame exactly (same rows, same order).
    grid = {"device": ["hdd", "ssd"], "workload": [W, "job:rw=write,bs=64k,size=2m"],
            "schedulers": ["noop", "deadline", "cfq", "anticipatory", "bfq"],
            "seed": [1, 2]}
    assert len(expand(grid)) == 40
    local = elevator.sweep(grid, backend="local", workers=2)
    on_ray = elevator.sweep(grid, backend="ray")
    pd.testing.assert_frame_equal(local, on_ray)


def test_ray_failure_and_resume(local_ray, tmp_path):
    # Proves the Ray backend keeps a failing configuration's row and writes the same journal.
    grid = [{"device": "hdd", "workload": W, "schedulers": "noop"},
            {"device": "hdd", "workload": "job:bs=3x"}]
    journal = tmp_path / "ray.jsonl"
    df = elevator.sweep(grid, backend="ray", resume=str(journal))
    with pytest.raises(elevator.ElevatorError) as caught:
        elevator.sim(**grid[1])
    assert df[df["config"] == 1]["error"].iloc[0] == str(caught.value)
    assert df[df["config"] == 0]["error"].isna().all()
    assert len(journal.read_text().splitlines()) == 2


GRID_TOML = """
seed = 3
[grid]
device = ["hdd", "ssd"]
workload = ["job:rw=randread,bs=4k,size=1m"]
schedulers = ["noop", "deadline"]
"""


def _cli_env():
    return {**os.environ, "ELEVATOR_PYTHON": sys.executable}


# A grid with what makes byte equality hard: several jobs per phase, floats (throughput,
# latency means), a list of schedulers in one configuration, a failing one, a text needing CSV
# quotes (the comma-joined schedulers), sim's recording options and [[config]] before [grid].
MIXED_TOML = """
seed = 5
[[config]]
device = "ssd"
workload = "job:rw=randread,bs=4k,size=1m,numjobs=2"
schedulers = ["noop", "deadline"]
interval = "250ms"
dispatch_samples = 8
[[config]]
device = "nosuch"
[grid]
workload = ["job:rw=randread,bs=4k,size=1m", "job:rw=write,bs=64k,size=2m"]
device = ["hdd", "ssd"]
schedulers = ["cfq", "bfq:slice_idle=0"]
"""


def _package_sweep(*args):
    """`python -m elevator.sweep ...`: the package's own local backend."""
    return subprocess.run([sys.executable, "-m", "elevator.sweep", *args], capture_output=True,
                          text=True)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_cli_local_sweep_equals_the_packages_byte_for_byte(cli, elevator_bin, tmp_path, suffix):
    # Proves `elevator sweep GRID.toml` runs the grid on Rust threads without Python (a
    # missing interpreter does not matter) and writes the package's local table byte for
    # byte: same configurations in the same order, same columns, same number formatting.
    grid = tmp_path / "grid.toml"
    grid.write_text(MIXED_TOML)
    package, ours = tmp_path / f"package{suffix}", tmp_path / f"cli{suffix}"
    out = _package_sweep(str(grid), "-j", "2", "-o", str(package))
    assert out.returncode == 1, out.stderr
    env = {**os.environ, "ELEVATOR_PYTHON": str(tmp_path / "no-python")}
    out = cli("sweep", str(grid), "-j", "2", "-o", str(ours), env=env)
    assert out.returncode == 1, out.stderr
    assert "configuration 1: unknown device `nosuch`" in out.stderr
    assert ours.read_bytes() == package.read_bytes()
    if suffix == ".csv":
        # And without -o: the same CSV on stdout.
        stdout = subprocess.run([elevator_bin, "-q", "sweep", str(grid), "-j", "1"],
                                capture_output=True, env=env).stdout
        assert stdout == package.read_bytes()
        assert len(pd.read_csv(package)["config"].unique()) == 2 + 8


def test_cli_resume_file_is_the_packages(cli, tmp_path):
    # Proves the CLI and the package share one resume format: each journals the same lines
    # (as sets: completion order varies), and the CLI resuming from the package's partial
    # journal takes its entries (a planted marker survives) and runs only the rest.
    grid = tmp_path / "grid.toml"
    grid.write_text(MIXED_TOML)
    package_journal, cli_journal = tmp_path / "package.jsonl", tmp_path / "cli.jsonl"
    _package_sweep(str(grid), "--resume", str(package_journal), "-o", str(tmp_path / "p.csv"))
    cli("sweep", str(grid), "--resume", str(cli_journal), "-o", str(tmp_path / "c.csv"))
    assert sorted(cli_journal.read_text().splitlines()) == sorted(
        package_journal.read_text().splitlines())
    entries = [json.loads(line) for line in package_journal.read_text().splitlines()]
    done = [entry for entry in entries if "error" not in entry["result"]][:3]
    done[0]["result"]["rows"][0]["phase_bytes"] = -12345
    partial = tmp_path / "partial.jsonl"
    partial.write_text("".join(json.dumps(entry) + "\n" for entry in done) + '{"key": "to')
    out = cli("sweep", str(grid), "--resume", str(partial), "-o", str(tmp_path / "r.jsonl"))
    assert out.returncode == 1, out.stderr
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert sum(row.get("phase_bytes") == -12345 for row in rows) == 1
    # The 7 configurations not kept (the failed one included) ran and were appended.
    appended = partial.read_text().splitlines()[4:]
    assert len(appended) == len(entries) - 3


def test_cli_sweep_on_ray_equals_the_package(cli, tmp_path):
    # Proves `elevator sweep GRID.toml --ray` hands the grid to the package on Ray and its
    # CSV equals the CLI's local one (the same rows whichever engine ran them).
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID_TOML)
    local = cli("sweep", str(grid), "-j", "2")
    assert local.returncode == 0, local.stderr
    out = cli("sweep", str(grid), "--ray", env=_cli_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout == local.stdout


def test_cli_sweep_bad_grid_exits_2_naming_the_file(cli, tmp_path):
    # Proves a grid file with an unknown table is refused with exit 2, naming file and table.
    grid = tmp_path / "bad.toml"
    grid.write_text("[gird]\ndevice = ['hdd']\n")
    out = cli("sweep", str(grid), env=_cli_env())
    assert out.returncode == 2
    assert "bad.toml: unknown table gird (accepted: grid, config, seed)" in out.stderr


def test_cli_sweep_failed_configuration_exits_1(cli, tmp_path):
    # Proves a failing configuration makes the CLI exit 1 and name it, the rest still printed.
    grid = tmp_path / "g.toml"
    grid.write_text("[[config]]\ndevice = 'hdd'\nworkload = '%s'\nschedulers = 'noop'\n"
                    "[[config]]\ndevice = 'nosuch'\n" % W)
    out = cli("sweep", str(grid), env=_cli_env())
    assert out.returncode == 1
    assert "configuration 1: unknown device `nosuch`" in out.stderr
    assert out.stdout.count("\n0,,") == 1


def test_cli_sweep_without_the_package_says_how_to_get_it(cli, tmp_path):
    # Proves that with --ray (the one path through Python) a missing interpreter is an input
    # error (exit 2) that names ELEVATOR_PYTHON and `pip install ./python`, not a crash.
    grid = tmp_path / "g.toml"
    grid.write_text(GRID_TOML)
    env = {**os.environ, "ELEVATOR_PYTHON": str(tmp_path / "no-python")}
    out = cli("sweep", str(grid), "--ray", env=env)
    assert out.returncode == 2
    assert "pip install ./python" in out.stderr and "ELEVATOR_PYTHON" in out.stderr
