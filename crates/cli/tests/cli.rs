//! The `elevator` binary as a user runs it: output on stdout, errors on stderr, exit codes.

use std::process::{Command, Output};

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// `elevator sim` of a small read on a RAM disk, with `args` after it.
fn sim_on_ram(args: &[&str]) -> Output {
    let mut all = vec!["sim", "-d", "ram", "-w", "job:size=64k"];
    all.extend(args);
    elevator(&all)
}

// Proves `list schedulers` prints the sysfs-style line with the default in brackets and every
// tunable with value, unit, default, range and help.
#[test]
fn list_schedulers_prints_the_sysfs_line_and_tunables() {
    let output = elevator(&["list", "schedulers"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert_eq!(
        text.lines().next(),
        Some("schedulers: noop anticipatory deadline [cfq] none mq-deadline bfq kyber")
    );
    let (_, deadline) = text.split_once("\ndeadline — ").unwrap();
    let read_expire = deadline.lines().find(|line| line.contains("read_expire")).unwrap();
    for field in ["500", "ms", "0..=2147483647", "deadline of a read"] {
        assert!(read_expire.contains(field), "{read_expire:?} lacks {field}");
    }
    assert!(text.contains("noop — Linux 2.6.18"));
    assert!(text.contains("anticipatory (alias as) — Linux 2.6.18"));
    let antic_expire = text.lines().find(|line| line.contains("antic_expire")).unwrap();
    assert_eq!(antic_expire.split_whitespace().nth(1), Some("6"), "{antic_expire:?}");
    assert!(text.contains("no tunables"));
    assert!(text.contains("kyber — Linux 6.17"));
    // Every version is listed with its own defaults: 2.6.9's cfq under its versioned name.
    let (_, cfq_v1) = text.split_once("\ncfq@2.6.9 — Linux 2.6.9").unwrap();
    let queued = cfq_v1.lines().find(|line| line.contains(" queued ")).unwrap();
    assert_eq!(queued.split_whitespace().nth(1), Some("8"), "{queued:?}");
    let read_lat = text.lines().find(|line| line.contains("read_lat_nsec")).unwrap();
    assert_eq!(read_lat.split_whitespace().nth(1), Some("2000000"), "{read_lat:?}");
    assert!(stderr(&output).is_empty());
}

// Proves the JSON form carries the same tables.
#[test]
fn list_schedulers_as_json() {
    let output = elevator(&["list", "schedulers", "--format", "json"]);
    assert!(output.status.success());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        json["scheduler_line"],
        "noop anticipatory deadline [cfq] none mq-deadline bfq kyber"
    );
    let deadline = json["schedulers"].as_array().unwrap().iter().find(|s| s["name"] == "deadline");
    let deadline = deadline.unwrap();
    assert_eq!(deadline["default"], false);
    let cfq = json["schedulers"].as_array().unwrap().iter().find(|s| s["name"] == "cfq");
    assert_eq!(cfq.unwrap()["default"], true, "2.6.18's CONFIG_DEFAULT_IOSCHED");
    let fifo_batch =
        deadline["tunables"].as_array().unwrap().iter().find(|t| t["name"] == "fifo_batch");
    let fifo_batch = fifo_batch.unwrap();
    assert_eq!(fifo_batch["default"], 16);
    assert_eq!(fifo_batch["unit"], "requests");
    assert_eq!(fifo_batch["max"], 2_147_483_647);
}

// Proves a spec resolves: the set tunable shows its value, the others their defaults.
#[test]
fn a_spec_lists_resolved() {
    let output = elevator(&["list", "schedulers", "deadline:fifo_batch=8,read_expire=1s"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("deadline:fifo_batch=8,read_expire=1000"));
    let fifo_batch = text.lines().find(|line| line.trim_start().starts_with("fifo_batch")).unwrap();
    assert!(fifo_batch.split_whitespace().nth(1) == Some("8"), "{fifo_batch}");
}

// Proves bad input exits 2 with one line naming the bad token and what is accepted.
#[test]
fn bad_specs_exit_2_naming_the_token() {
    for (spec, expected) in [
        (
            "cfqq",
            "unknown scheduler `cfqq` (accepted: noop, anticipatory, as, deadline, cfq, elevator_linus, none, mq-deadline, bfq, kyber, noop@2.6.9, deadline@2.6.18-194.el5, cfq@2.6.9, cfq@2.6.18-92.el5, cfq@2.6.18-194.el5, cfq@2.6.18-194.8.1.el5, elevator_linus@2.4.21)",
        ),
        ("deadline:read_expiry=1", "deadline has no tunable `read_expiry` (accepted: read_expire"),
        // A blk-mq scheduler refuses; the 2.6.18 ones clamp (below).
        ("mq-deadline:fifo_batch=-1", "fifo_batch: -1 is out of range (accepted: 0..="),
        ("deadline:read_expire=5fortnights", "`5fortnights` is not a time"),
        ("deadline:fifo_batch", "`fifo_batch` has no `=value`"),
    ] {
        let output = elevator(&["list", "schedulers", spec]);
        assert_eq!(output.status.code(), Some(2), "{spec}");
        let message = stderr(&output);
        assert_eq!(message.lines().count(), 1, "{message}");
        assert!(message.contains(expected), "{spec}: {message}");
        assert!(output.stdout.is_empty());
    }
}

// Proves issue 28 row 21 at the command line: an out-of-range 2.6.18 tunable is clamped as
// sysfs clamps it (cfq's quantum to 1), the run goes on, and one stderr line names the value
// used.
#[test]
fn out_of_range_legacy_tunables_clamp_with_a_notice() {
    let output = elevator(&["list", "schedulers", "cfq:quantum=0"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("cfq:quantum=1"));
    let message = stderr(&output);
    assert_eq!(message.lines().count(), 1, "{message}");
    assert!(message.contains("quantum=0 is outside 1..="), "{message}");
    assert!(message.contains("using quantum=1"), "{message}");
}

// Proves usage errors (unknown subcommand or list target) exit 2, and --version / --help work.
#[test]
fn usage_errors_and_meta_flags() {
    let output = elevator(&["list", "frobs"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("possible values: schedulers"));
    assert_eq!(elevator(&["frob"]).status.code(), Some(2));
    let version = elevator(&["--version"]);
    assert!(version.status.success());
    assert_eq!(stdout(&version).trim(), format!("elevator {}", env!("CARGO_PKG_VERSION")));
    let help = elevator(&["--help"]);
    assert!(help.status.success());
    assert!(stdout(&help).contains("list"));
}

// Proves `sim` puts every scheduler side by side, and the same seed gives byte-identical JSON.
#[test]
fn sim_is_deterministic_and_side_by_side() {
    let args = ["sim", "-d", "ram", "-w", "job:rw=randrw,iodepth=4,size=1m", "--format", "json"];
    let first = elevator(&args);
    assert!(first.status.success(), "{}", stderr(&first));
    let second = elevator(&args);
    assert_eq!(first.stdout, second.stdout);
    let json: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(json["schema"], "elevator.report/1");
    let schedulers: Vec<&str> =
        json["runs"].as_array().unwrap().iter().map(|r| r["scheduler"].as_str().unwrap()).collect();
    // Every registered scheduler, in registry order, each version under its spec name.
    let listing = elevator(&["list", "schedulers", "--format", "json"]);
    let listing: serde_json::Value = serde_json::from_slice(&listing.stdout).unwrap();
    let registered: Vec<&str> = listing["schedulers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["spec"].as_str().unwrap())
        .collect();
    assert_eq!(schedulers, registered);
    assert!(registered.len() >= 2);
    assert_eq!(json["runs"][0]["mode"], "sim");
    let method = &json["runs"][0]["phases"][0]["latency_method"];
    assert_eq!((&method["kind"], &method["significant_digits"]), (&"histogram".into(), &3.into()));
}

// Proves -o writes the report to a file in the format its extension names, leaving stdout
// empty.
#[test]
fn sim_writes_to_a_file() {
    let dir = std::env::temp_dir().join(format!("elevator-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("report.csv");
    let output = sim_on_ram(&["-s", "deadline:fifo_batch=4", "-o", path.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    let csv = std::fs::read_to_string(&path).unwrap();
    assert!(csv.starts_with("experiment,mode,device,workload,scheduler,phase"));
    assert!(csv.contains("deadline:fifo_batch=4"));
    std::fs::remove_dir_all(&dir).unwrap();
}

// Proves bad devices, workloads and keys exit 2 naming the key and the accepted values.
#[test]
fn sim_bad_input_exits_2() {
    for (args, expected) in [
        (vec!["sim", "-d", "floppy"], "unknown device `floppy`"),
        (vec!["sim", "-d", "ram:depth=0"], "depth=0 is not valid (expected an integer 1..=65536)"),
        (vec!["sim", "-w", "job:iodepth=0"], "iodepth=0 is not valid"),
        (vec!["sim", "-w", "job:rwmixread=101"], "rwmixread=101 is not valid"),
        (vec!["sim", "-d", "ram:capacity=1m", "-w", "job:bs=2m"], "bs"),
        (vec!["sim", "-s", "cfqq"], "unknown scheduler `cfqq`"),
    ] {
        let output = elevator(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(expected), "{args:?}: {}", stderr(&output));
        assert!(output.stdout.is_empty());
    }
}

// Proves `list devices` and `list workloads` print every key with its default and what it
// accepts, and presets with their values.
#[test]
fn list_devices_and_workloads() {
    let output = elevator(&["list", "devices"]);
    assert!(output.status.success());
    let text = stdout(&output);
    assert!(text.contains("ram — RAM disk"));
    let latency = text.lines().find(|line| line.trim_start().starts_with("latency")).unwrap();
    assert!(latency.contains("1us") && latency.contains("a time"), "{latency}");
    let output = elevator(&["list", "workloads", "job:rw=randread"]);
    let text = stdout(&output);
    let rw = text.lines().find(|line| line.trim_start().starts_with("rw ")).unwrap();
    assert!(rw.contains("randread") && rw.contains("one of read, write"), "{rw}");
    let everything = elevator(&["list", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&everything.stdout).unwrap();
    assert!(
        json["devices"].is_array() && json["workloads"].is_array() && json["schedulers"].is_array()
    );
}

// Proves `list workloads FILE.fio` prints each job with its resolved options (globals applied,
// units resolved) and names a non-block engine as not runnable, exit 0; a bad file exits 2
// naming the file, line and option.
#[test]
fn list_workloads_reads_fio_job_files() {
    let dir = std::env::temp_dir().join(format!("elevator-cli-fio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.fio");
    std::fs::write(
        &good,
        "[global]\nbs=4k\n[reader]\nrw=randread\n[cpu]\nioengine=cpuio\ncpuload=50\n",
    )
    .unwrap();
    let output = elevator(&["list", "workloads", good.to_str().unwrap(), "--format", "json"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let jobs = json["fio_jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0]["name"], "reader");
    assert_eq!(jobs[0]["options"][0]["name"], "bs");
    assert_eq!(jobs[0]["options"][0]["value"], "4096,4096,4096");
    assert!(jobs[0]["not_runnable"].is_null());
    assert!(jobs[1]["not_runnable"].as_str().unwrap().contains("ioengine=cpuio"));
    assert!(json["workloads"].is_null(), "a file alone lists only its jobs");
    let bad = dir.join("bad.fio");
    std::fs::write(&bad, "[j]\nrw=read\nbogus=1\n").unwrap();
    let output = elevator(&["list", "workloads", bad.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad.fio:3: option `bogus`"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

// Proves `sim` and `run` take scheduler lists the way `compare` does: comma separated and
// repeated, a spec's own comma-separated tunables kept whole, in the order given.
#[test]
fn sim_takes_comma_separated_and_repeated_schedulers() {
    let output = sim_on_ram(&[
        "-s",
        "deadline,cfq:slice_idle=0,quantum=8",
        "-s",
        "noop",
        "--format",
        "json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let schedulers: Vec<&str> =
        json["runs"].as_array().unwrap().iter().map(|r| r["scheduler"].as_str().unwrap()).collect();
    assert_eq!(schedulers, ["deadline", "cfq:slice_idle=0,quantum=8", "noop"]);
}

// Proves a scheduler list that reads two ways is refused before anything runs (exit 2, one
// line naming the piece and the accepted shape), by sim and by run alike.
#[test]
fn ambiguous_scheduler_lists_exit_2() {
    for command in ["sim", "run"] {
        for (list, expected) in [
            ("deadline,fifo_batch=8", "`fifo_batch=8` follows `deadline`, which has no `:`"),
            ("deadline,,cfq", "empty entry between commas"),
        ] {
            let output = elevator(&[command, "-s", list]);
            assert_eq!(output.status.code(), Some(2), "{command} {list}: {}", stderr(&output));
            let message = stderr(&output);
            assert_eq!(message.lines().count(), 1, "{message}");
            assert!(message.contains(expected), "{command} {list}: {message}");
            assert!(message.contains("expected NAME[:key=value,...]"), "{message}");
            assert!(output.stdout.is_empty());
        }
    }
}

// Proves `list hosts` prints the host's keys and its presets with their values, from the
// simulator's own table, and resolves a host spec.
#[test]
fn list_hosts_prints_keys_and_presets() {
    let output = elevator(&["list", "hosts"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("hosts:\n"), "{text}");
    let ram = text.lines().find(|line| line.trim_start().starts_with("ram ")).unwrap();
    assert!(ram.contains("4g") && ram.contains("a size"), "{ram}");
    assert!(text.contains("preset fileserver-2007: "), "{text}");
    assert!(text.contains("ram=12g,cpus=4"), "{text}");
    let output = elevator(&["list", "hosts", "desktop-2004:cpus=2", "--format", "json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let keys = json["hosts"][0]["keys"].as_array().unwrap();
    let value = |key: &str| keys.iter().find(|k| k["key"] == key).unwrap()["value"].clone();
    assert_eq!(value("cpus"), "2");
    assert_eq!(value("ram"), "1g", "the preset's value");
    let everything = elevator(&["list", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&everything.stdout).unwrap();
    assert!(json["hosts"].is_array());
    let bad = elevator(&["list", "hosts", "mainframe"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("unknown host `mainframe` (accepted: host, fileserver-2007"));
}

// Proves the completion scripts come out for each shell and know the subcommands.
#[test]
fn completions_for_bash_zsh_and_fish() {
    for (shell, marker) in
        [("bash", "_elevator()"), ("zsh", "#compdef elevator"), ("fish", "complete -c elevator")]
    {
        let output = elevator(&["completions", shell]);
        assert!(output.status.success(), "{shell}: {}", stderr(&output));
        let script = stdout(&output);
        assert!(script.contains(marker), "{shell}");
        assert!(script.contains("compare") && script.contains("kernel"), "{shell}");
    }
    assert_eq!(elevator(&["completions", "tcsh"]).status.code(), Some(2));
}

// Proves `man` prints the top page to stdout, with the units convention, and `man -o DIR`
// writes it and a page per subcommand, nested ones included, naming each file it wrote.
#[test]
fn man_pages_to_stdout_and_to_a_directory() {
    let output = elevator(&["man"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let page = stdout(&output);
    assert!(page.contains(".TH elevator 1"), "{page}");
    assert!(page.contains("powers of ten"), "the units convention is in the page");
    let dir = std::env::temp_dir().join(format!("elevator-cli-man-{}", std::process::id()));
    let output = elevator(&["man", "-o", dir.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    for name in ["elevator", "elevator-sim", "elevator-compare", "elevator-kernel-compare"] {
        let path = dir.join(format!("{name}.1"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(text.contains(&format!(".TH {name} 1")), "{name}: {text}");
        assert!(stdout(&output).contains(path.to_str().unwrap()));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

// Proves --help states the unit convention.
#[test]
fn help_states_the_units() {
    let help = stdout(&elevator(&["--help"]));
    for text in ["kB, MB, GB are powers of ten", "KiB, MiB, GiB", "kb_base=1024"] {
        assert!(help.contains(text), "--help lacks {text:?}:\n{help}");
    }
}

// Proves the phase tables state their units and the best line names which way each measure
// is better.
#[test]
fn sim_tables_state_units_and_directions() {
    let output = sim_on_ram(&["-s", "deadline,noop"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("units: MB = 10^6 bytes (MiB = 2^20); ms = 10^-3 s"), "{text}");
    assert!(text.contains("best: MB/s (higher is better) "), "{text}");
    assert!(text.contains("; p99 (lower is better) "), "{text}");
}

// Proves every report says why (issue 15, item 10): on a disk that takes one command at a
// time, four random readers keep the scheduler's queue full — the JSON's queue_stats has the
// mean scheduler-queue occupancy above one and the device's at most one, the longest wait,
// and mean and max seek distances; the table ends each experiment with a `why:` line per
// scheduler.
#[test]
fn reports_say_why_the_schedulers_differ() {
    let args = [
        "sim",
        "-d",
        "hdd:depth=1",
        "-w",
        "job:rw=randread,bs=4k,iodepth=8,numjobs=4,io_size=256k",
        "-s",
        "deadline,noop",
    ];
    let json = elevator(&[&args[..], &["--format", "json"]].concat());
    assert!(json.status.success(), "{}", stderr(&json));
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    for run in json["runs"].as_array().unwrap() {
        let queue = &run["queue_stats"];
        let held = queue["sched_queue_mean"].as_f64().unwrap();
        let at_device = queue["device_queue_mean"].as_f64().unwrap();
        assert!(held > 1.0, "{}: the scheduler held {held}", run["scheduler"]);
        assert!(at_device > 0.5 && at_device <= 1.0 + 1e-9, "{at_device}");
        assert!(queue["max_wait_ns"].as_u64().unwrap() > 0);
        let mean = queue["seek_distance_mean_sectors"].as_f64().unwrap();
        let max = queue["seek_distance_max_sectors"].as_u64().unwrap();
        assert!(mean > 0.0 && max as f64 >= mean, "{mean} {max}");
        assert_eq!(queue["blocked_ns"], 0);
    }
    let table = elevator(&args);
    let text = String::from_utf8(table.stdout).unwrap();
    // The heading names the host's kernel release (the default host runs vanilla 2.6.18).
    assert!(text.lines().next().unwrap().ends_with("kernel 2.6.18)"), "{text}");
    // One why section per phase, named after it.
    let why = text.split("\nwhy (").nth(1).expect("a why section");
    assert!(why.lines().any(|line| line.starts_with("  deadline: merges ")), "{why}");
    assert!(why.lines().any(|line| line.starts_with("  noop: merges ")), "{why}");
}

// Proves `elevator sim FILE.fio` and `-w fio:FILE` run a job file's jobs together (both
// jobs report in one phase), and a file the simulator cannot run as fio would (zonemode=zbd on
// a device that is not zoned) exits 2 naming the file, the line and why.
#[test]
fn sim_runs_an_fio_job_file() {
    let dir = std::env::temp_dir().join(format!("elevator-cli-fio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("two.fio");
    std::fs::write(&good, "[global]\nsize=256k\n[reader]\nrw=randread\n[writer]\nrw=write\n")
        .unwrap();
    let good = good.display().to_string();
    for args in [vec!["sim", good.as_str()], vec!["sim", "-w", &format!("fio:{good}")]] {
        let mut args = args.clone();
        args.extend(["-d", "ram", "-s", "noop"]);
        let output = elevator(&args);
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        let text = stdout(&output);
        assert!(text.contains("phase reader+writer"), "{text}");
        assert!(text.contains("reader/0") && text.contains("writer/0"), "{text}");
    }
    let bad = dir.join("zbd.fio");
    std::fs::write(&bad, "[a]\nrw=write\nzonemode=zbd\nfilename=/dev/sda\n").unwrap();
    let output = elevator(&["sim", &bad.display().to_string(), "-d", "ram"]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    // zonemode=zbd is honoured on a zoned device only (`-d smr-hm-2016`).
    assert!(
        message.contains("zbd.fio:1") && message.contains("needs a zoned device; `sda` is not"),
        "{message}"
    );
}

// Proves `--max-size` and `--max-runtime` cap a job file's jobs: a 1 TiB job that does not
// fit the device is refused (exit 2) uncapped and runs capped; the caps without a job file
// exit 2.
#[test]
fn sim_caps_an_fio_job_file() {
    let dir = std::env::temp_dir().join(format!("elevator-cli-fio-caps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.fio");
    std::fs::write(&big, "[big]\nrw=randread\nsize=1t\nfilename=/dev/sda\n").unwrap();
    let big = big.display().to_string();
    let output = elevator(&["sim", &big, "-d", "ram", "-s", "noop"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let capped =
        ["sim", &big, "-d", "ram", "-s", "noop", "--max-size", "1m", "--max-runtime", "1s"];
    let output = elevator(&capped);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("phase big"), "{}", stdout(&output));
    let output = elevator(&["sim", "-d", "ram", "--max-size", "1m"]);
    assert_eq!(output.status.code(), Some(2));
}
