"""Real I/O from Python: `elevator.live` on scratch files, `elevator.kernel_compare` on a loop
device this test creates and removes."""

import _thread
import os
import shutil
import subprocess
import threading
import time

import pytest

import elevator

READS = "job:rw=randread,bs=4k,size=2m"
# Long enough that only a stop (runtime=, Ctrl-C) ends it within the test.
ENDLESS = "job:rw=randread,bs=4k,size=4m,time_based=1,runtime=60s"


def _ci() -> bool:
    return os.environ.get("CI") == "true"


def _scheduler_line(name: str) -> str:
    with open(f"/sys/block/{name}/queue/scheduler", encoding="utf-8") as file:
        return file.read().strip()


def test_live_runs_each_scheduler_on_a_scratch_file(tmp_path):
    # Proves live() runs the workload for real under each scheduler asked for, in order, on
    # the file given (created at `size`, marked as elevator's so that it may be written),
    # and checks what it wrote with verify=True.
    scratch = tmp_path / "scratch.img"
    report = elevator.live(target=str(scratch), workload="job:rw=randrw,bs=4k,size=2m",
                           schedulers=["noop", "deadline"], size="8m", verify=True,
                           engine="threads")
    assert scratch.stat().st_size == 8 << 20
    assert [run.scheduler for run in report.runs] == ["noop", "deadline"]
    for run in report.runs:
        assert run.mode == "live" and not run.data.get("partial")
        assert run.config["target.path"] == str(scratch)
        assert sum(phase.bytes for phase in run.phases) == 2 << 20


def test_live_keeps_the_write_safety_rules_and_the_clis_message(cli, tmp_path):
    # Proves live() refuses to write a file elevator did not create, with the CLI's message
    # for `elevator run -t FILE` (exit 2 there), leaving the file as it was; force=True
    # writes it.
    precious = tmp_path / "precious.dat"
    content = os.urandom(1 << 20)
    precious.write_bytes(content)
    workload = "job:rw=write,bs=4k,size=256k"
    with pytest.raises(elevator.ElevatorError) as caught:
        elevator.live(target=str(precious), workload=workload, schedulers="noop")
    out = cli("run", "-t", str(precious), "-w", workload, "-s", "noop")
    assert out.returncode == 2
    assert str(caught.value) == out.stderr.strip().splitlines()[-1][len("elevator: "):]
    assert precious.read_bytes() == content
    report = elevator.live(target=str(precious), workload=workload, schedulers="noop",
                           force=True, engine="threads")
    assert report.runs[0].phases[0].bytes == 256 << 10
    assert precious.read_bytes() != content


def test_live_runtime_stops_each_run(tmp_path):
    # Proves runtime= ends each scheduler's run early (a 60 s job stops; each run is marked
    # partial, saying why) and that the next scheduler still runs.
    report = elevator.live(target=str(tmp_path / "s.img"), workload=ENDLESS, size="8m",
                           schedulers=["noop", "deadline"], runtime="300ms", engine="threads")
    assert [run.scheduler for run in report.runs] == ["noop", "deadline"]
    for run in report.runs:
        assert run.data.get("partial") and "runtime=300ms" in run.data["partial_reason"]
        assert sum(phase.duration_ns for phase in run.phases) < 60 * 10**9


def test_live_releases_the_gil_and_stops_on_ctrl_c(tmp_path):
    # Proves another thread runs while live I/O does (the GIL is released), and that Ctrl-C
    # (SIGINT, as interrupt_main delivers it) stops the 60 s run and raises KeyboardInterrupt.
    # The run lasting less than half its 60 s is the proof that the stop came from inside.
    spins = 0
    done = threading.Event()

    def spin():
        nonlocal spins
        while not done.is_set():
            spins += 1

    spinner = threading.Thread(target=spin)
    spinner.start()
    timer = threading.Timer(0.5, _thread.interrupt_main)
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            elevator.live(target=str(tmp_path / "s.img"), workload=ENDLESS, size="8m",
                          schedulers="noop", engine="threads")
    finally:
        done.set()
        spinner.join()
        timer.cancel()
    assert time.monotonic() - started < 30
    assert spins > 1000


def test_live_bad_options_are_the_clis_errors(cli):
    # Proves a bad engine or interval is refused before anything is opened, as clap refuses it.
    with pytest.raises(elevator.ElevatorError, match="invalid value 'fast' for '--engine"):
        elevator.live(engine="fast")
    with pytest.raises(elevator.ElevatorError) as caught:
        elevator.live(interval="0")
    out = cli("run", "--interval", "0")
    assert out.returncode == 2 and str(caught.value) in out.stderr


@pytest.fixture
def loop_device(tmp_path):
    """A loop device of 64 MiB of zeroes over a file under tmp_path, detached at the end (also
    when the test fails). Root only; under CI=true a missing privilege or tool fails."""
    if os.geteuid() != 0 or not shutil.which("losetup"):
        why = "root" if os.geteuid() != 0 else "losetup"
        if _ci():
            pytest.fail(f"{why} is missing: the loop-device test cannot run (CI=true)")
        pytest.skip(f"{why} is missing")
    backing = tmp_path / "backing.img"
    with open(backing, "wb") as file:
        for _ in range(64):
            file.write(bytes(1 << 20))
    device = subprocess.run(["losetup", "--find", "--show", str(backing)], check=True,
                            capture_output=True, text=True).stdout.strip()
    try:
        yield device
    finally:
        subprocess.run(["losetup", "-d", device], check=False)


def test_kernel_compare_runs_the_kernels_schedulers_and_restores_the_queue(cli, loop_device):
    # Proves kernel_compare() switches the device to each kernel scheduler asked for (with a
    # tunable), runs the workload under each, and puts the queue back as it found it; and
    # that a scheduler the kernel lacks is the CLI's error, changing nothing.
    name = os.path.basename(loop_device)
    before = _scheduler_line(name)
    report = elevator.kernel_compare(device=loop_device, workload=READS,
                                     schedulers=["mq-deadline:fifo_batch=8", "none"])
    assert [run.scheduler for run in report.runs] == ["mq-deadline:fifo_batch=8", "none"]
    for run in report.runs:
        assert run.mode == "kernel"
        assert sum(phase.bytes for phase in run.phases) == 2 << 20
        assert run.scheduler_stats["dispatched"] > 0
    assert _scheduler_line(name) == before
    with pytest.raises(elevator.ElevatorError) as caught:
        elevator.kernel_compare(device=loop_device, workload=READS, schedulers="nosuch")
    out = cli("kernel", "compare", loop_device, "-w", READS, "-s", "nosuch")
    assert out.returncode == 2
    assert str(caught.value) == out.stderr.strip().splitlines()[-1][len("elevator: "):]
    assert _scheduler_line(name) == before


def test_kernel_compare_ctrl_c_restores_the_queue(loop_device):
    # Proves Ctrl-C during a kernel run raises KeyboardInterrupt only after the device's
    # scheduler was put back (the run was under mq-deadline; the device started elsewhere).
    name = os.path.basename(loop_device)
    with open(f"/sys/block/{name}/queue/scheduler", "w", encoding="utf-8") as file:
        file.write("none")
    before = _scheduler_line(name)
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            elevator.kernel_compare(device=loop_device, workload=ENDLESS,
                                    schedulers="mq-deadline")
    finally:
        timer.cancel()
    assert _scheduler_line(name) == before
