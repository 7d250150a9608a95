//! Pictures as a user gets them: `-o FILE.svg` and `-o FILE.html` from a run, `elevator report
//! RUN.json` from a saved one, unknown extensions and bad files refused, and the HTML page
//! loaded in a real headless browser (Debian's `chromium`, installed when missing; under
//! `CI=true` its absence fails the test).

// A skipped test must say why on stderr: the harness shows nothing else.
#![allow(clippy::print_stderr)]

#[path = "../../live/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("run elevator")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}

/// Two experiments of the classic study, small: several schedulers, phases and issuers, and
/// the tool tables (dd) beside the phase tables (seqread).
const COMPARE: [&str; 5] = ["compare", "--only", "dd-read,seqread-2", "--scale", "0.02"];

/// `compare` written as JSON into `dir`, for `elevator report` to read.
fn saved_report(dir: &Path) -> PathBuf {
    let json = dir.join("run.json");
    let mut args = COMPARE.to_vec();
    args.extend(["-o", path_str(&json)]);
    let output = elevator(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    json
}

// Proves `-o FILE.svg` writes the main chart as SVG (XML, not the ASCII table it used to be)
// with one bar per scheduler in each panel, and that `elevator report` draws the same bytes
// from the saved JSON as the run did.
#[test]
fn svg_output_has_a_bar_per_scheduler() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("sim.svg");
    let output = elevator(&["sim", "-s", "none,mq-deadline,bfq", "-o", path_str(&svg)]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = std::fs::read_to_string(&svg).unwrap();
    let document = roxmltree::Document::parse(&text).expect("the SVG parses as XML");
    assert!(document.root_element().has_tag_name("svg"));
    // The default sim has one phase: two panels (MB/s, p99), each a bar per scheduler.
    for (index, colour) in ["#4E79A7", "#F28E2B", "#E15759"].iter().enumerate() {
        let bars = document
            .descendants()
            .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some(colour))
            .count();
        assert_eq!(bars, 2, "scheduler {index}'s bars");
    }
    let json = dir.path().join("sim.json");
    let output = elevator(&["sim", "-s", "none,mq-deadline,bfq", "-o", path_str(&json)]);
    assert!(output.status.success(), "{}", stderr(&output));
    let again = dir.path().join("again.svg");
    let output = elevator(&["report", path_str(&json), "-o", path_str(&again)]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&again).unwrap(), text, "same report, same bytes");
}

// Proves an `-o` extension no format has exits 2 naming the accepted ones, before a run
// starts (a live run's target is not created), `--format` still
// overrides the extension, and `elevator report` refuses a missing file, a non-JSON file and
// another schema naming the file and the problem (exit 2).
#[test]
fn unknown_extensions_and_bad_reports_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("out.png");
    let output = elevator(&["sim", "-s", "none", "-o", path_str(&png)]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("out.png"), "{message}");
    assert!(message.contains(".json, .csv, .svg, .html, .txt"), "{message}");
    // Refused before anything runs: a live run's target file, created first otherwise, is
    // not created.
    let target = dir.path().join("target.img");
    let output = elevator(&["run", "-t", path_str(&target), "--size", "4m", "-o", path_str(&png)]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(!target.exists(), "the run started");
    assert!(!png.exists());
    let output = elevator(&["sim", "-s", "none", "--format", "json", "-o", path_str(&png)]);
    assert!(output.status.success(), "{}", stderr(&output));

    let missing = dir.path().join("missing.json");
    let output = elevator(&["report", path_str(&missing)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("missing.json"), "{}", stderr(&output));

    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\n  \"schema\": \n").unwrap();
    let output = elevator(&["report", path_str(&broken)]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains("broken.json") && message.contains("line 3"), "{message}");

    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"{"schema": "fio", "runs": []}"#).unwrap();
    let output = elevator(&["report", path_str(&other)]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains("other.json") && message.contains("`fio`"), "{message}");

    let incomplete = dir.path().join("incomplete.json");
    std::fs::write(&incomplete, r#"{"schema": "elevator.report/1", "seed": 1}"#).unwrap();
    let output = elevator(&["report", path_str(&incomplete)]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains("incomplete.json") && message.contains("`tool`"), "{message}");
}

// Proves the HTML page is self-contained (no URL, no external script), has every
// experiment's section, tables and charts, is the same bytes for the same report, and that
// `elevator report` with no -o prints the same table the run printed.
#[test]
fn the_html_page_is_self_contained_and_complete() {
    let dir = tempfile::tempdir().unwrap();
    let json = saved_report(dir.path());
    let html = dir.path().join("report.html");
    let output = elevator(&["report", path_str(&json), "-o", path_str(&html)]);
    assert!(output.status.success(), "{}", stderr(&output));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(!page.contains("http://") && !page.contains("https://"), "a URL in the page");
    assert!(!page.contains("<script src") && !page.contains("<link"), "an external resource");
    for id in ["dd-read", "seqread-2"] {
        assert!(page.contains(&format!("<h2>{id}")), "{id}'s section");
    }
    assert_eq!(page.matches("<section class=\"experiment\"").count(), 2);
    assert!(page.matches("<table class=\"figures\">").count() >= 2);
    for section in page.split("<section").skip(1) {
        // The tool's table and chart, 6 "why" charts, then per phase MB/s, p99 and a CDF.
        assert!(section.contains("<table class=\"figures\">"), "a table per experiment");
        assert!(section.matches("<svg").count() >= 10, "charts per experiment");
        assert!(section.contains("latency CDF"), "a CDF per experiment");
    }
    // seqread-2's two readers: their shares per scheduler.
    assert!(page.contains("bytes per process"));

    let again = dir.path().join("again.html");
    let output = elevator(&["report", path_str(&json), "-o", path_str(&again)]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read(&again).unwrap(), page.as_bytes(), "same report, same bytes");

    let table = elevator(&["report", path_str(&json)]);
    assert!(table.status.success(), "{}", stderr(&table));
    let direct = elevator(&COMPARE);
    assert_eq!(String::from_utf8_lossy(&table.stdout), String::from_utf8_lossy(&direct.stdout));
}

/// Runs headless Chromium on `page` with `args` (and a throw-away profile), its log on stderr.
fn chromium(chromium: &Path, page: &Path, args: &[&str]) -> Output {
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", page.display());
    // `timeout`: a browser that hangs must fail the test, not stall the suite.
    Command::new("timeout")
        .arg("120")
        .arg(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--enable-logging=stderr", "--v=1"])
        .args(args)
        .arg(url)
        .output()
        .expect("run chromium")
}

/// The page's console messages in Chromium's log: uncaught exceptions, failed loads and
/// `console.*` calls all appear as `:CONSOLE` lines.
fn console_lines(log: &str) -> Vec<&str> {
    log.lines().filter(|line| line.contains(":CONSOLE") || line.contains("Uncaught")).collect()
}

// Proves the page works in a real browser: Chromium's DOM holds every experiment's table and
// every chart of the file, the page logs no console message (the check is shown to catch an
// uncaught error on a broken page), and a screenshot is kept in target/test-artifacts/.
#[test]
fn the_html_page_loads_in_headless_chromium() {
    let test = "the_html_page_loads_in_headless_chromium";
    if !common::require(test, "chromium", "chromium") {
        return;
    }
    let browser = common::which("chromium").expect("installed");
    let dir = tempfile::tempdir().unwrap();
    let json = saved_report(dir.path());
    let html = dir.path().join("report.html");
    let output = elevator(&["report", path_str(&json), "-o", path_str(&html)]);
    assert!(output.status.success(), "{}", stderr(&output));
    let page = std::fs::read_to_string(&html).unwrap();

    let dump = chromium(&browser, &html, &["--dump-dom"]);
    assert!(dump.status.success(), "chromium: {}", stderr(&dump));
    let dom = String::from_utf8_lossy(&dump.stdout);
    for id in ["dd-read", "seqread-2"] {
        assert!(dom.contains(&format!("<h2>{id}")), "{id}'s section in the DOM");
    }
    for element in ["<table class=\"figures\">", "<svg", "<section class=\"experiment\""] {
        assert_eq!(dom.matches(element).count(), page.matches(element).count(), "{element}");
    }
    let log = stderr(&dump);
    assert!(console_lines(&log).is_empty(), "console messages: {:?}", console_lines(&log));

    // The check above would see a broken page's error.
    let broken = dir.path().join("broken.html");
    std::fs::write(&broken, "<!DOCTYPE html><p>x</p><script>undefined_function();</script>")
        .unwrap();
    let broken_log = stderr(&chromium(&browser, &broken, &["--dump-dom"]));
    assert!(!console_lines(&broken_log).is_empty(), "an uncaught error is seen");

    let artifacts =
        Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("target/").join("test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("report-html.png");
    let _ = std::fs::remove_file(&shot);
    let screenshot = format!("--screenshot={}", shot.display());
    let output = chromium(&browser, &html, &[&screenshot, "--window-size=1400,2000"]);
    assert!(output.status.success(), "chromium: {}", stderr(&output));
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(png.len() > 10_000, "a picture, not a blank page ({} bytes)", png.len());
}

// Proves a run written straight to HTML draws what each elevator did: the simulator keeps a
// sample of the dispatched requests for an `.html` output (and only then: the JSON of the same
// run has none), and the page has one sector-over-time panel per scheduler, and its
// throughput over time from the run's per-interval series.
#[test]
fn a_simulation_written_as_html_shows_each_elevators_dispatches() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("sim.html");
    let json = dir.path().join("sim.json");
    let run = |output: &Path| {
        let output = elevator(&[
            "sim",
            "-d",
            "hdd",
            "-s",
            "noop,deadline",
            "-w",
            "job:rw=randread,bs=4k,iodepth=4,direct=1,numjobs=2,size=1m",
            "-o",
            path_str(output),
        ]);
        assert!(output.status.success(), "{}", stderr(&output));
    };
    run(&html);
    run(&json);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("What the elevator did"), "no dispatch picture");
    // The per-interval series, drawn as throughput over time.
    assert!(page.contains("throughput over time"), "no throughput-over-time chart");
    for scheduler in ["noop", "deadline"] {
        assert!(page.contains(&format!("dispatches: {scheduler}")), "no panel for {scheduler}");
    }
    let saved = std::fs::read_to_string(&json).unwrap();
    assert!(!saved.contains("\"dispatches\""), "the JSON kept dispatch samples");
    // Asked for, a saved JSON keeps them, and `elevator report` draws them from it.
    let kept = dir.path().join("kept.json");
    let output = elevator(&[
        "sim",
        "-d",
        "hdd",
        "-s",
        "noop,deadline",
        "-w",
        "job:rw=randread,bs=4k,iodepth=4,direct=1,numjobs=2,size=1m",
        "--dispatch-samples",
        "500",
        "-o",
        path_str(&kept),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let redrawn = dir.path().join("redrawn.html");
    let output = elevator(&["report", path_str(&kept), "-o", path_str(&redrawn)]);
    assert!(output.status.success(), "{}", stderr(&output));
    let page = std::fs::read_to_string(&redrawn).unwrap();
    assert!(page.contains("dispatches: deadline"), "no panel from the saved samples");
}
