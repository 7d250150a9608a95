"""Shared fixtures: the `elevator` binary (ELEVATOR_BIN, set by crates/cli/tests/
python_package.rs) and one local Ray of 2 workers for the whole session."""

import os
import shutil
import subprocess

import pytest


def _missing(what: str) -> None:
    # Under CI a missing tool fails the test, naming it; a developer's run may skip it.
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is missing (CI=true: not skipped)")
    pytest.skip(f"{what} is missing")


@pytest.fixture(scope="session")
def elevator_bin() -> str:
    path = os.environ.get("ELEVATOR_BIN") or shutil.which("elevator")
    if not path or not os.path.exists(path):
        _missing("the elevator binary (ELEVATOR_BIN)")
    return path


@pytest.fixture(scope="session")
def cli(elevator_bin):
    """Runs `elevator ARGS...`; returns the CompletedProcess (text)."""

    def run(*args, **kwargs):
        return subprocess.run([elevator_bin, "--quiet", *args], capture_output=True, text=True,
                              **kwargs)

    return run


@pytest.fixture(scope="session")
def local_ray():
    """A local Ray with 2 worker CPUs (the issue's test setup), shut down at the end."""
    import ray  # a missing ray fails the test: ray is one of the test dependencies

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
