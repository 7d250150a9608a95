//! The conformance vectors of `/work/shared/specs/fio-compat.md` §1.10, and the grammar of
//! §1.1-§1.9.

use std::path::Path;

use super::*;

fn env() -> FioEnv {
    let mut env = FioEnv { page_size_bytes: 4096, memory_mib: 2048, cpus: 8, ..FioEnv::default() };
    env.vars.insert("SIZE".into(), "64k".into());
    env
}

fn parse(text: &str) -> Result<FioJobFile, FioError> {
    parse_str(text, "t.fio", Path::new("."), &env())
}

/// The value of `option` in the only job of `text`.
fn value(text: &str, option: &str) -> FioValue {
    let file = parse(text).unwrap_or_else(|error| panic!("{text:?}: {error}"));
    assert_eq!(file.jobs.len(), 1, "{text:?}");
    file.jobs[0].get(option).cloned().unwrap_or_else(|| panic!("{text:?}: no {option}"))
}

fn error(text: &str) -> FioError {
    match parse(text) {
        Ok(file) => panic!("{text:?} parsed: {file:?}"),
        Err(error) => error,
    }
}

fn all(v: FioValue) -> Vec<Option<FioValue>> {
    match v {
        FioValue::PerDirection(parts) => parts,
        other => panic!("not per direction: {other:?}"),
    }
}

fn int(n: u64) -> Option<FioValue> {
    Some(FioValue::Int(n))
}

// Proves §1.10 row 1: units are case-insensitive, `k`/`kb` are 1024 and `KiB` 1000 under the
// default kb_base (fio's deliberate inversion), and hex works.
#[test]
fn size_units_follow_fios_inverted_kib() {
    for (text, bytes) in [("4k", 4096), ("4KiB", 4000), ("4kb", 4096), ("0x1000", 4096)] {
        let got = value(&format!("[j]\nbs={text}\n"), "bs");
        assert_eq!(all(got), vec![int(bytes); 3], "bs={text}");
    }
    assert_eq!(value("[j]\nsize=1g\n", "size"), FioValue::Int(1 << 30));
    assert_eq!(value("[j]\nsize=3MiB\n", "size"), FioValue::Int(3_000_000));
}

// Proves §1.10 row 2 and §1.7: kb_base=1000 makes `k` 1000 whether it comes before or after
// the size in its section, and a global kb_base reaches the jobs after it.
#[test]
fn kb_base_applies_first_in_its_section() {
    for text in ["[j]\nkb_base=1000\nbs=4k\n", "[j]\nbs=4k\nkb_base=1000\n"] {
        assert_eq!(all(value(text, "bs")), vec![int(4000); 3], "{text:?}");
    }
    assert_eq!(value("[global]\nkb_base=1000\n[j]\nsize=1ki\n", "size"), FioValue::Int(1024));
    assert_eq!(error("[j]\nkb_base=512\n").option.as_deref(), Some("kb_base"));
}

// Proves §1.10 row 3: percentages are kept for the target's size to resolve.
#[test]
fn percentages_are_kept_unresolved() {
    assert_eq!(value("[j]\nsize=10%\n", "size"), FioValue::Percent(10.0));
    assert_eq!(value("[j]\noffset=20%\n", "offset"), FioValue::Percent(20.0));
    assert!(error("[j]\nsize=150%\n").message.contains("100"));
}

// Proves §1.10 rows 4-5: bare numbers take the option's unit (s for runtime, µs for thinktime
// and latency_target), suffixes override it, `m` is minutes.
#[test]
fn times_take_their_options_unit() {
    let s = 1_000_000_000;
    for (text, ns) in [("runtime=1m", 60 * s), ("runtime=90", 90 * s), ("runtime=500ms", s / 2)] {
        assert_eq!(value(&format!("[j]\n{text}\n"), "runtime"), FioValue::TimeNs(ns), "{text}");
    }
    assert_eq!(value("[j]\nthinktime=2\n", "thinktime"), FioValue::TimeNs(2_000));
    assert_eq!(value("[j]\nthinktime=1s\n", "thinktime"), FioValue::TimeNs(s));
    assert_eq!(value("[j]\nlatency_target=5\n", "latency_target"), FioValue::TimeNs(5_000));
    // `timeout` is runtime's alias (§1.7).
    assert_eq!(value("[j]\ntimeout=2\n", "runtime"), FioValue::TimeNs(2 * s));
}

// Proves §1.10 row 6: a startdelay range is kept as a range (drawn per clone later), in
// order even when written reversed (§1.6 "range").
#[test]
fn startdelay_range() {
    let expected = FioValue::TimeRangeNs { lo_ns: 1_000_000_000, hi_ns: 3_000_000_000 };
    assert_eq!(value("[j]\nstartdelay=1-3\n", "startdelay"), expected);
    assert_eq!(value("[j]\nstartdelay=3-1\n", "startdelay"), expected);
}

// Proves §1.10 row 7 and §1.6 "Per direction": the last part fills later directions, a
// trailing comma stops that, an empty part keeps the default.
#[test]
fn per_direction_values() {
    assert_eq!(
        all(value("[j]\nrate=1m,500k\n", "rate")),
        vec![int(1 << 20), int(500 << 10), int(500 << 10)]
    );
    assert_eq!(all(value("[j]\nbs=8k,32k,\n", "bs")), vec![int(8192), int(32768), None]);
    assert_eq!(all(value("[j]\nbs=,8k\n", "bs")), vec![None, int(8192), int(8192)]);
    assert!(error("[j]\nbs=1k,2k,3k,4k\n").message.contains("at most three"));
}

// Proves §1.10 row 8: the `:N` suffix of rw is kept apart from the choice.
#[test]
fn rw_suffix() {
    let rw = value("[j]\nrw=randread:8\n", "rw");
    assert_eq!(rw, FioValue::Choice { value: "randread".into(), suffix: Some("8".into()) });
    let rw = value("[j]\nreadwrite=write:4k\n", "rw");
    assert_eq!(rw, FioValue::Choice { value: "write".into(), suffix: Some("4k".into()) });
    assert!(error("[j]\nrw=randomread\n").message.contains("randread"));
}

// Proves §1.10 row 9 and §1.7: trailing comments are dropped, the last occurrence wins and
// every occurrence stays listed in order.
#[test]
fn repeats_and_trailing_comments() {
    let file = parse("; header\n[j]\nbs=8k # c\n  # whole line\nbs=16k\n").expect("parses");
    let job = &file.jobs[0];
    assert_eq!(job.get("bs").map(|v| all(v.clone())), Some(vec![int(16384); 3]));
    let written: Vec<_> =
        job.options.iter().map(|o| (o.name, o.written.as_deref(), o.at.line)).collect();
    assert_eq!(written, vec![("bs", Some("8k"), 3), ("bs", Some("16k"), 5)]);
}

// Proves §1.10 row 10: blanks around `=` are fine for numbers but not for choices.
#[test]
fn blanks_after_equals() {
    assert_eq!(value("[j]\nrwmixread = 30\n", "rwmixread"), FioValue::Float(30.0));
    let error = error("[j]\nrw = read\n");
    assert_eq!((error.option.as_deref(), error.at.line), (Some("rw"), 2));
}

// Proves §1.10 row 11: a bool needs a value, a flag does not.
#[test]
fn bools_need_values_flags_do_not() {
    assert_eq!(error("[j]\ndirect\n").option.as_deref(), Some("direct"));
    assert!(error("[j]\ndirect=2\n").message.contains("0 or 1"));
    assert_eq!(value("[j]\ntime_based\n", "time_based"), FioValue::Bool(true));
    assert_eq!(value("[j]\ntime_based=0\n", "time_based"), FioValue::Bool(false));
}

// Proves §1.10 row 12 and §1.4: `${VAR}` comes from the given environment (unset → empty →
// an error for a size), `$VAR` is not expanded.
#[test]
fn environment_variables() {
    assert_eq!(value("[j]\nsize=${SIZE}\n", "size"), FioValue::Int(65536));
    assert_eq!(error("[j]\nsize=${UNSET}\n").option.as_deref(), Some("size"));
    assert_eq!(error("[j]\nsize=$SIZE\n").option.as_deref(), Some("size"));
}

// Proves §1.10 row 13 and §1.4: without a keyword a non-numeric tail is ignored; with one, the
// arithmetic is done with integers and the result is a bare number.
#[test]
fn keywords_and_their_arithmetic() {
    assert_eq!(value("[j]\nsize=8*1024\n", "size"), FioValue::Int(8));
    assert_eq!(value("[j]\nsize=2*$mb_memory\n", "size"), FioValue::Int(4096));
    assert_eq!(value("[j]\nnumjobs=$ncpus/3\n", "numjobs"), FioValue::Int(2));
    assert_eq!(value("[j]\nbs=$pagesize\n", "bs").to_string(), "4096,4096,4096");
}

// Proves §1.5: parenthesised arithmetic with units (k = 1024 whatever kb_base, kib = 1000),
// precedence, and µs for bare numbers in time options.
#[test]
fn arithmetic_in_parentheses() {
    assert_eq!(value("[j]\nsize=(1m*2)\n", "size"), FioValue::Int(2 << 20));
    assert_eq!(value("[j]\nkb_base=1000\nsize=(1k+1kib)\n", "size"), FioValue::Int(2024));
    assert_eq!(value("[j]\nsize=(2+3*4^2)\n", "size"), FioValue::Int(50));
    assert_eq!(value("[j]\nruntime=(1s+500ms)\n", "runtime"), FioValue::TimeNs(1_500_000_000));
    assert_eq!(value("[j]\nthinktime=(10)\n", "thinktime"), FioValue::TimeNs(10_000));
    assert!(error("[j]\nsize=(1m*\n").option.as_deref() == Some("size"));
}

// Proves §1.10 row 14 and §1.2: any section starting with `global` is global, a global edits
// only the jobs after it, and globals accumulate.
#[test]
fn global_scoping() {
    let file = parse(
        "[global-x]\nbs=8k\n[a]\n[global]\niodepth=4\nbs=16k\n[b]\nrw=write\n[global2]\nsize=1m\n[c]\n",
    )
    .expect("parses");
    let names: Vec<_> = file.jobs.iter().map(FioJob::name).collect();
    assert_eq!(names, ["a", "b", "c"]);
    let bs = |job: &FioJob| job.get("bs").map(|v| all(v.clone())[0].clone());
    assert_eq!(bs(&file.jobs[0]), Some(int(8192)));
    assert_eq!(file.jobs[0].get("iodepth"), None);
    assert_eq!(bs(&file.jobs[1]), Some(int(16384)));
    assert_eq!(file.jobs[1].get("iodepth"), Some(&FioValue::Int(4)));
    assert_eq!(file.jobs[2].get("size"), Some(&FioValue::Int(1 << 20)));
    assert_eq!(file.jobs[1].at.line, 7);
    assert!(file.jobs[1].options.iter().take(3).all(|o| o.global));
}

// Proves §1.1: `name=` in a global section renames the later jobs.
#[test]
fn global_name_renames_later_jobs() {
    let file = parse("[a]\n[global]\nname=x\n[b]\n").expect("parses");
    let names: Vec<_> = file.jobs.iter().map(FioJob::name).collect();
    assert_eq!(names, ["a", "x"]);
    assert_eq!(file.jobs[1].section, "b");
}

// Proves §1.10 row 15 and §1.8: an unknown option is an error naming file, line and option,
// with fio's "did you mean" hint; an option outside a section is an error.
#[test]
fn unknown_options_and_options_outside_sections() {
    let error = error("[j]\nrw=read\nbogus=1\n");
    assert_eq!(error.at, Location { file: "t.fio".into(), line: 3 });
    assert_eq!(error.option.as_deref(), Some("bogus"));
    assert!(error.to_string().starts_with("t.fio:3: option `bogus`: bad option <bogus=1>"));
    assert!(self::error("[j]\niodpeth=4\n").message.contains("did you mean `iodepth`"));
    assert!(self::error("bs=4k\n[j]\n").message.contains("outside of [] job section"));
    // Names are case-sensitive (§1.7).
    assert_eq!(self::error("[j]\nBS=4k\n").option.as_deref(), Some("BS"));
}

// Proves §1.10 row 16 and §1.7: tiobench's `threads` is accepted and recorded uninterpreted.
#[test]
fn profile_options_are_recorded() {
    assert_eq!(value("[j]\nthreads=1\n", "threads"), FioValue::Recorded("1".into()));
}

// Proves §1.6: bssplit shares blank percentages, refuses sums over 100, and bsrange and
// filename lists parse.
#[test]
fn splits_ranges_and_lists() {
    let split = all(value("[j]\nbssplit=4k/50:64k/\n", "bssplit"));
    assert_eq!(split[0], Some(FioValue::Split(vec![(4096, 50.0), (65536, 50.0)])));
    assert!(error("[j]\nbssplit=4k/60:8k/50\n").message.contains("over 100"));
    let range = all(value("[j]\nbsrange=64k-4k\n", "bsrange"));
    assert_eq!(range[0], Some(FioValue::Range { lo: 4096, hi: 65536 }));
    let names = value("[j]\nfilename=/dev/sda:a\\:b\n", "filename");
    assert_eq!(names, FioValue::List(vec!["/dev/sda".into(), "a:b".into()]));
    let list = value("[j]\npercentile_list=25:50:99.9\n", "percentile_list");
    assert_eq!(list, FioValue::Floats(vec![25.0, 50.0, 99.9]));
}

// Proves §2.2: a job whose engine does no block I/O parses (its engine options are known) but
// is reported as not runnable naming the engine; block engines and the default are runnable.
#[test]
fn non_block_engines_parse_but_do_not_run() {
    let file = parse("[n]\nioengine=net\nhostname=h\nport=8888\n[d]\n[a]\nioengine=libaio\n")
        .expect("parses");
    let why = file.jobs[0].runnable().expect_err("net is refused");
    assert!(why.contains("ioengine=net"), "{why}");
    assert_eq!(file.jobs[1].engine(), "psync");
    assert_eq!(file.jobs[1].runnable(), Ok(()));
    assert_eq!(file.jobs[2].runnable(), Ok(()));
    assert!(error("[j]\nioengine=floppy\n").message.contains("libaio"));
}

// Proves §1.3: include splices lines into the current section relative to the including file;
// a section inside an included file and an include cycle are errors.
#[test]
fn includes() {
    let dir = std::env::temp_dir().join(format!("elevator-fio-include-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).expect("write");
    write("main.fio", "[j]\nrw=write\ninclude part.fio\niodepth=2\n");
    write("part.fio", "bs=8k\n");
    write("bad.fio", "[j]\ninclude section.fio\n");
    write("section.fio", "[k]\n");
    write("cycle.fio", "[j]\ninclude cycle2.fio\n");
    write("cycle2.fio", "include cycle.fio\n");
    let env = env();
    let file = parse_file(&dir.join("main.fio"), &env).expect("parses");
    let names: Vec<_> = file.jobs[0].options.iter().map(|o| o.name).collect();
    assert_eq!(names, ["rw", "bs", "iodepth"]);
    assert!(file.jobs[0].options[1].at.file.ends_with("part.fio"));
    let error = parse_file(&dir.join("bad.fio"), &env).expect_err("section in include");
    assert!(error.message.contains("no new sections"), "{error}");
    let error = parse_file(&dir.join("cycle.fio"), &env).expect_err("cycle");
    assert!(error.message.contains("cycle"), "{error}");
    std::fs::remove_dir_all(&dir).expect("clean up");
}

// Proves §1.9: command-line options before the first --name are global, --name starts a job
// and is listed among its options, --name=global opens a global block, flags go bare, and
// unique prefixes complete; the result equals the matching job file.
#[test]
fn command_line_jobs() {
    let args = [
        "--rw=randread",
        "--name=global",
        "--size=128m",
        "--name=job1",
        "--time_bas",
        "--name=job2",
        "--bs=8k",
    ];
    let file = parse_command_line(&args, &env()).expect("parses");
    let names: Vec<_> = file.jobs.iter().map(FioJob::name).collect();
    assert_eq!(names, ["job1", "job2"]);
    let job2 = &file.jobs[1];
    assert_eq!(job2.get("size"), Some(&FioValue::Int(128 << 20)));
    assert!(matches!(job2.get("rw"), Some(FioValue::Choice { value, .. }) if value == "randread"));
    assert_eq!(job2.get("time_based"), None);
    assert_eq!(file.jobs[0].get("time_based"), Some(&FioValue::Bool(true)));
    let from_file = parse("[global]\nrw=randread\nsize=128m\n[job1]\ntime_based\n[job2]\nbs=8k\n")
        .expect("parses");
    for (cli, text) in file.jobs.iter().zip(&from_file.jobs) {
        let values = |job: &FioJob| -> Vec<_> {
            job.options
                .iter()
                .filter(|o| o.name != "name")
                .map(|o| (o.name, o.value.clone()))
                .collect()
        };
        assert_eq!(values(cli), values(text));
    }
    let error = parse_command_line(&["--name=a", "--iodepth_b=2"], &env()).expect_err("ambiguous");
    assert!(error.message.contains("ambiguous"), "{error}");
    let error = parse_command_line(&["--name=a", "job.fio"], &env()).expect_err("a file");
    assert_eq!(error.at, Location { file: COMMAND_LINE.into(), line: 2 });
}

proptest::proptest! {
    // Proves bad input never panics: any text, as a job file or as option values, gives jobs
    // or an error.
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}", value in "[-+*/()%^:,0-9a-zA-Z$.{} ]{0,40}") {
        let _ = parse(&text);
        for option in ["bs", "size", "runtime", "startdelay", "bssplit", "rw", "filename", "numjobs"] {
            let _ = parse(&format!("[j]\n{option}={value}\n"));
        }
    }
}

// Proves the catalog is unambiguous: no name or alias appears twice, so lookup never shadows
// an option, and every alias resolves to its canonical name.
#[test]
fn catalog_names_are_unique() {
    let mut seen = std::collections::BTreeSet::new();
    for spec in catalog::OPTIONS {
        for name in std::iter::once(&spec.name).chain(spec.aliases.iter()) {
            assert!(seen.insert(*name), "`{name}` is catalogued twice");
            assert_eq!(catalog::lookup(name).map(|found| found.name), Some(spec.name));
        }
    }
    // Every engine is exactly one of runnable, passthrough, or refused.
    for engine in catalog::BLOCK_ENGINES.iter().chain(catalog::PASSTHROUGH_ENGINES) {
        assert!(!catalog::NON_BLOCK_ENGINES.contains(engine), "{engine}");
    }
}

// Proves a whole `fio` command line reads as fio reads it (§1.9): command-line jobs first,
// command-line globals reaching the first job file's jobs but not the second file's, and
// `--section` keeping only the named job sections while leaving the others unread (an
// unknown option in a skipped section is no error, §1.8).
#[test]
fn invocation_orders_jobs_and_scopes_command_line_globals() {
    let dir = std::env::temp_dir().join(format!("elevator-fio-invocation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let first = dir.join("first.fio");
    let second = dir.join("second.fio");
    std::fs::write(&first, "[a]\nrw=read\n[b]\nrw=write\nbogus_option=1\n").unwrap();
    std::fs::write(&second, "[c]\nrw=randread\n").unwrap();
    let args = ["--bs=8k", "--name=cmd", "--rw=randwrite"];
    let parsed =
        parse_invocation(&args, &[first.as_path(), second.as_path()], &[], &env()).map(|_| ());
    // Without --section the bad option in [b] is an error naming it.
    assert_eq!(parsed.unwrap_err().option.as_deref(), Some("bogus_option"));
    let sections = ["cmd".to_owned(), "a".to_owned(), "c".to_owned()];
    let file =
        parse_invocation(&args, &[first.as_path(), second.as_path()], &sections, &env()).unwrap();
    let names: Vec<&str> = file.jobs.iter().map(FioJob::name).collect();
    assert_eq!(names, ["cmd", "a", "c"]);
    let bs = |job: &FioJob| job.get("bs").cloned();
    assert!(bs(&file.jobs[0]).is_some(), "command-line global reaches command-line jobs");
    assert!(bs(&file.jobs[1]).is_some(), "and the first file's jobs");
    assert!(bs(&file.jobs[2]).is_none(), "but not the second file's");
    std::fs::remove_dir_all(&dir).ok();
}
