"""The package's API: reports, errors, listings, traces, and parity with the CLI."""

import json
import threading

import pytest

import elevator

SMALL = "job:rw=randread,bs=4k,size=2m"


def test_one_run_per_scheduler_in_order():
    # Proves sim runs each scheduler asked for, in the order asked, on the device asked.
    report = elevator.sim(device="ssd", workload=SMALL, schedulers=["deadline", "noop", "cfq"])
    assert [run.scheduler for run in report.runs] == ["deadline", "noop", "cfq"]
    assert report.seed == 1 and report.schema == "elevator.report/1"
    assert all(run.phases and run.phases[0].ops > 0 for run in report.runs)
    assert report.run("noop").scheduler == "noop"


def test_comma_separated_scheduler_string_is_split_as_the_cli_does():
    # Proves a scheduler string goes through the CLI's list splitter (tunables stay attached).
    report = elevator.sim(workload=SMALL, schedulers="deadline,cfq:slice_idle=0,quantum=8")
    assert [run.scheduler for run in report.runs] == ["deadline", "cfq:slice_idle=0,quantum=8"]


def test_same_seed_same_bytes_and_seed_matters():
    # Proves reports are reproducible from the seed and that the seed reaches the simulator.
    a = elevator.sim(device="hdd", workload="job:rw=randread,bs=4k,size=8m", schedulers="noop", seed=7)
    b = elevator.sim(device="hdd", workload="job:rw=randread,bs=4k,size=8m", schedulers="noop", seed=7)
    c = elevator.sim(device="hdd", workload="job:rw=randread,bs=4k,size=8m", schedulers="noop", seed=8)
    assert a.to_json() == b.to_json()
    assert a.to_json() != c.to_json()


def test_json_is_the_clis_byte_for_byte(cli):
    # Proves the package builds the same simulation as `elevator sim` (device, workload,
    # host, queue settings, seed) and serializes it the same way.
    args = dict(device="hdd:rpm=10000", workload="job:rw=randrw,bs=16k,size=4m,numjobs=2",
                schedulers=["deadline", "cfq"], seed=5, nr_requests=32, read_ahead_kb=64)
    report = elevator.sim(**args)
    out = cli("sim", "-d", args["device"], "-w", args["workload"], "-s", "deadline,cfq",
              "--seed", "5", "--nr-requests", "32", "--read-ahead-kb", "64", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert report.to_json() == out.stdout


def test_job_file_path_runs_as_the_clis_positional_job_file(cli, tmp_path):
    # Proves a workload that is an fio job file's path runs its jobs, capped as --max-size.
    job = tmp_path / "two.fio"
    job.write_text("[global]\nbs=8k\nsize=64m\n[reader]\nrw=read\n[writer]\nrw=randwrite\n")
    report = elevator.sim(workload=str(job), schedulers="deadline", max_size=1 << 20)
    out = cli("sim", str(job), "-s", "deadline", "--max-size", "1m", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert report.to_json() == out.stdout
    assert sum(phase.bytes for phase in report.runs[0].phases) <= 2 << 20
    # The same file under another name (fio's examples are often .ini) is still a job file.
    ini = tmp_path / "two.ini"
    ini.write_text(job.read_text())
    again = elevator.sim(workload=str(ini), schedulers="deadline", max_size=1 << 20)
    assert [p.bytes for p in again.runs[0].phases] == [p.bytes for p in report.runs[0].phases]


@pytest.mark.parametrize(
    "kwargs, argv",
    [
        (dict(device="hdx"), ["-d", "hdx"]),
        (dict(workload="job:rw=randread,bs=4q"), ["-w", "job:rw=randread,bs=4q"]),
        (dict(workload="nosuch:x=1"), ["-w", "nosuch:x=1"]),
        (dict(schedulers="deadline:fifo_bach=8"), ["-s", "deadline:fifo_bach=8"]),
        (dict(schedulers="deadline,fifo_batch=8"), ["-s", "deadline,fifo_batch=8"]),
        (dict(host="host:ram=lots"), ["--host", "host:ram=lots"]),
        (dict(workload="/nonexistent/x.fio"), ["/nonexistent/x.fio"]),
    ],
)
def test_errors_carry_the_clis_message(cli, kwargs, argv):
    # Proves each bad input raises ElevatorError (a ValueError) with exactly the message the
    # CLI prints after `elevator: `, and that the CLI exits 2 for it.
    with pytest.raises(elevator.ElevatorError) as caught:
        elevator.sim(**kwargs)
    assert isinstance(caught.value, ValueError)
    out = cli("sim", *argv)
    assert out.returncode == 2
    assert out.stderr.startswith("elevator: ")
    assert str(caught.value) == out.stderr.strip().splitlines()[-1][len("elevator: "):]


def test_unknown_keyword_is_an_error_naming_the_accepted_ones():
    # Proves a misspelt queue setting is refused instead of silently ignored.
    with pytest.raises(elevator.ElevatorError, match="nr_request.*accepted:.*nr_requests"):
        elevator.sim(nr_request=4)


def test_queue_settings_reach_the_simulated_queue():
    # Proves **queue keywords set the block queue (the report echoes the resolved config).
    run = elevator.sim(device="ssd", workload=SMALL, schedulers="noop", nr_requests=16,
                       depth=2).runs[0]
    queue = {key.rsplit(".", 1)[1]: value for key, value in run.config.items()
             if key.startswith("queue.")}
    assert queue["nr_requests"] == "16"
    assert queue["depth"] == "2"


def test_dataframe_one_row_per_run_phase_job_with_why_counters():
    # Proves to_pandas' shape (run × phase × job) and that its cells are the report's figures.
    report = elevator.sim(workload="job:rw=read,bs=64k,numjobs=3,offset_increment=1g,size=2m",
                          schedulers=["noop", "deadline"])
    df = report.to_pandas()
    expected = sum(len(phase.jobs) for run in report.runs for phase in run.phases)
    assert len(df) == expected == 6
    for column in elevator.WHY_COUNTERS + ("scheduler", "phase", "job", "job_bytes"):
        assert column in df.columns
    row = df[(df.scheduler == "deadline") & (df.job == "job/2")].iloc[0]
    run = report.run("deadline")
    phase = run.phases[0]
    job = [job for job in phase.jobs if job.name == "job/2"][0]
    assert row.job_bytes == job.bytes
    why = phase.queue_stats or run.queue_stats
    assert row.back_merges == why["back_merges"]
    assert row.sched_queue_mean == why["sched_queue_mean"]
    assert row.phase_throughput_bytes_per_s == phase.throughput_bytes_per_s


def test_gil_is_released_while_simulating():
    # Proves another Python thread runs while a simulation does: with the GIL held, the main
    # thread could not loop at all between the worker's start and its end.
    started = threading.Event()
    spins = 0

    def work():
        started.set()
        elevator.sim(device="hdd", workload="job:rw=randread,bs=4k,size=64m", schedulers="cfq")

    thread = threading.Thread(target=work)
    thread.start()
    started.wait()
    while thread.is_alive():
        spins += 1
    thread.join()
    assert spins > 1000


def test_listings_match_the_clis(cli):
    # Proves the listings come from the same tables as `elevator list`: same names, same
    # tunables with their defaults and units.
    out = cli("list", "--format", "json")
    assert out.returncode == 0, out.stderr
    listed = json.loads(out.stdout)
    ours = elevator.schedulers()
    assert [s["name"] for s in ours] == [s["name"] for s in listed["schedulers"]]
    for mine, theirs in zip(ours, listed["schedulers"]):
        assert [(t["name"], t["default"], t["unit"]) for t in mine["tunables"]] == [
            (t["name"], t["default"], t["unit"]) for t in theirs["tunables"]]
    assert [d["spec"] for d in elevator.devices()] == [d["name"] for d in listed["devices"]]
    assert [w["spec"] for w in elevator.workloads()] == [w["name"] for w in listed["workloads"]]
    for mine, theirs in zip(elevator.devices(), listed["devices"]):
        assert [k["key"] for k in mine["keys"]] == [k["key"] for k in theirs["keys"]]
    assert [k["key"] for k in elevator.hosts()[0]["keys"]] == [
        k["key"] for k in listed["hosts"][0]["keys"]]


def test_read_trace_reads_an_iolog(tmp_path):
    # Proves read_trace detects fio's iolog v2 and returns its I/Os with offsets and sizes.
    path = tmp_path / "t.log"
    path.write_text("fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n"
                    "/dev/sdb read 4096 8192\n/dev/sdb write 1048576 4096\n/dev/sdb close\n")
    trace = elevator.read_trace(str(path))
    assert trace["format"] == "iolog2"
    assert [(r["op"], r["offset_bytes"], r["size_bytes"]) for r in trace["records"]] == [
        ("read", 4096, 8192), ("write", 1048576, 4096)]


def test_read_trace_error_names_the_file(tmp_path):
    # Proves a bad trace raises ElevatorError naming the file.
    path = tmp_path / "junk.log"
    path.write_text("this is not a trace\n")
    with pytest.raises(elevator.ElevatorError, match="junk.log"):
        elevator.read_trace(str(path))


def test_study_is_the_clis_compare(cli):
    # Proves elevator.study runs the classic study's rows as `elevator compare` does.
    report = elevator.study(seed=3, scale=0.05, only=["dd-read"])
    out = cli("compare", "--only", "dd-read", "--scale", "0.05", "--seed", "3", "--format",
              "json")
    assert out.returncode == 0, out.stderr
    assert report.to_json() == out.stdout
    assert {run.experiment for run in report.runs} == {"dd-read"}


def test_study_rejects_an_unknown_experiment():
    # Proves study's errors list what is accepted.
    with pytest.raises(elevator.ElevatorError, match="unknown experiment `nope` .accepted: "):
        elevator.study(only="nope")


def test_interval_and_dispatch_samples_are_the_clis(cli):
    # Proves sim's interval= and dispatch_samples= reach the simulator as the CLI's
    # --interval and --dispatch-samples (the JSON equals the CLI's byte for byte), that they
    # change the report (finer series, kept dispatches), and that a number is seconds.
    args = dict(device="hdd", workload="job:rw=randread,bs=4k,size=4m", schedulers="deadline")
    report = elevator.sim(**args, interval="50ms", dispatch_samples=64)
    out = cli("sim", "-d", "hdd", "-w", args["workload"], "-s", "deadline", "--interval",
              "50ms", "--dispatch-samples", "64", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert report.to_json() == out.stdout
    assert elevator.sim(**args, interval=0.05, dispatch_samples=64).to_json() == report.to_json()
    default = elevator.sim(**args)
    assert default.to_json() != report.to_json()
    series = report.runs[0].phases[0].series
    assert series["interval_ns"] == 50_000_000
    assert default.runs[0].phases[0].series["interval_ns"] == 1_000_000_000
    assert len(series["lines"][0]["intervals"]) > len(
        default.runs[0].phases[0].series["lines"][0]["intervals"])
    assert 0 < len(report.runs[0].dispatches["time_ns"]) <= 64
    assert "dispatches" not in default.runs[0].data


def test_a_bad_interval_is_the_clis_error(cli):
    # Proves an interval out of range raises clap's message for --interval (exit 2 there).
    with pytest.raises(elevator.ElevatorError) as caught:
        elevator.sim(interval="0")
    out = cli("sim", "--interval", "0")
    assert out.returncode == 2
    assert str(caught.value) in out.stderr
    assert "accepted 1ms to 3600s" in str(caught.value)


def test_study_with_schedulers_is_the_clis_compare_s(cli):
    # Proves study(schedulers=) runs the experiments under the named schedulers as
    # `elevator compare -s` does (no baseline row added), and refuses what -s refuses.
    report = elevator.study(seed=2, scale=0.05, only="dd-read", schedulers=["noop", "cfq"])
    out = cli("compare", "--only", "dd-read", "--scale", "0.05", "--seed", "2", "-s",
              "noop,cfq", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert report.to_json() == out.stdout
    assert [run.scheduler for run in report.runs] == ["noop", "cfq"]
    with pytest.raises(elevator.ElevatorError) as caught:
        elevator.study(scale=0.05, only="dd-read", schedulers="deadline:nosuch=1")
    out = cli("compare", "--only", "dd-read", "--scale", "0.05", "-s", "deadline:nosuch=1")
    assert out.returncode == 2
    assert str(caught.value) == out.stderr.strip().splitlines()[-1][len("elevator: "):]
