//! The spec parsers under arbitrary input: no device, host, workload or scheduler spec makes
//! elevator panic, and none it accepts makes a (bounded) simulation panic — every bad one is
//! an error value that names what is wrong (issue 14).
//!
//! Specs are drawn half from the registries' own names and keys with hostile values (empty,
//! negative, huge, fractional, units where none belong, other keys' words) and half as raw
//! text. `PROPTEST_CASES` raises the case count (the default keeps the test suite quick);
//! failures found are pinned in `spec_fuzz.proptest-regressions` beside this file.

use elevator_core::{Duration, KeySpec};
use elevator_sched::{SchedulerKind, SchedulerSpec};
use elevator_sim::host::spec::{KEYS as HOST_KEYS, PRESETS as HOST_PRESETS};
use elevator_sim::{Bounds, DeviceKind, DeviceSpec, HostSpec, SimConfig};
use elevator_workload::{WorkloadKind, WorkloadSpec};
use proptest::prelude::*;

/// Values that have broken parsers somewhere: empty, signs, overflow, fractions, units,
/// lists, words of other keys.
const HOSTILE_VALUES: &[&str] = &[
    "",
    " ",
    "0",
    "1",
    "-1",
    "2",
    "7",
    "8",
    "100",
    "101",
    "4096",
    "512",
    "513",
    "4k",
    "1m",
    "16m",
    "24g",
    "1t",
    "16e",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "99999999999999999999999",
    "1.5",
    "0.0001",
    "1e308",
    "nan",
    "inf",
    "-inf",
    "0s",
    "1ns",
    "500us",
    "6ms",
    "2s",
    "10m",
    "1h",
    "100000000h",
    "read",
    "write",
    "randrw",
    "randread",
    "sda",
    "sda:sdb",
    "sdz",
    "0:7",
    "7:0",
    "1:2:3:4",
    "50%",
    "150%",
    "%",
    "copy",
    "none",
    "2x4gfc",
    "0x0",
    "1x1",
    "sync",
    "async",
    "on",
    "yes",
    "∞",
    "k",
    "m1",
];

/// One `key=value` with the key from `keys` (or an unknown one) and a hostile value.
fn param(keys: Vec<&'static str>) -> impl Strategy<Value = String> {
    let key = prop_oneof![
        4 => proptest::sample::select(keys),
        1 => "[a-z_]{1,12}".prop_map(|key| -> &'static str { Box::leak(key.into_boxed_str()) }),
    ];
    let value = prop_oneof![
        4 => proptest::sample::select(HOSTILE_VALUES).prop_map(str::to_owned),
        1 => "[ -~]{0,12}",
    ];
    (key, value).prop_map(|(key, value)| format!("{key}={value}"))
}

/// A spec for a component whose names and keys are `names` and `keys`.
fn spec(names: Vec<&'static str>, keys: Vec<&'static str>) -> impl Strategy<Value = String> {
    let structured = (proptest::sample::select(names), prop::collection::vec(param(keys), 0..5))
        .prop_map(|(name, params)| {
            if params.is_empty() { name.to_owned() } else { format!("{name}:{}", params.join(",")) }
        });
    prop_oneof![4 => structured, 1 => "[ -~]{0,40}"]
}

fn key_names(tables: impl IntoIterator<Item = &'static [KeySpec]>) -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = tables.into_iter().flatten().map(|key| key.key).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

fn device_spec() -> impl Strategy<Value = String> {
    let mut names: Vec<&'static str> = DeviceKind::ALL.iter().map(|kind| kind.name()).collect();
    names.extend(DeviceKind::ALL.iter().flat_map(|kind| kind.presets().iter().map(|p| p.name)));
    spec(names, key_names(DeviceKind::ALL.iter().map(|kind| kind.keys())))
}

fn host_spec() -> impl Strategy<Value = String> {
    spec(HOST_PRESETS.iter().map(|preset| preset.name).collect(), key_names([HOST_KEYS]))
}

fn workload_spec() -> impl Strategy<Value = String> {
    let names = WorkloadKind::ALL.iter().map(|kind| kind.name()).collect();
    spec(names, key_names(WorkloadKind::ALL.iter().map(|kind| kind.keys())))
}

fn scheduler_spec() -> impl Strategy<Value = String> {
    let names = SchedulerKind::ALL.iter().map(|kind| kind.name()).collect();
    let keys = SchedulerKind::ALL.iter().flat_map(|kind| kind.tunables().iter().map(|t| t.name));
    let mut keys: Vec<&'static str> = keys.collect();
    keys.sort_unstable();
    keys.dedup();
    spec(names, keys)
}

/// A simulation small enough to run thousands of: a short event and time bound (hitting it is
/// an error, which is fine here: only a panic fails).
fn bounded(seed: u64, device: DeviceSpec, host: HostSpec) -> SimConfig {
    let mut config = SimConfig::new(seed, device);
    config.host = host;
    config.bounds =
        Bounds { max_events: 2_000, max_time: Duration::from_secs(2), ..Bounds::default() };
    config
}

/// 512 cases unless `PROPTEST_CASES` says otherwise.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok());
    ProptestConfig::with_cases(cases.unwrap_or(512))
}

proptest! {
    #![proptest_config(config())]

    // Proves no spec text panics a parser, and every error names the component kind it was for.
    #[test]
    fn no_spec_text_panics_a_parser(
        device in device_spec(),
        host in host_spec(),
        workload in workload_spec(),
        scheduler in scheduler_spec(),
    ) {
        if let Err(error) = DeviceSpec::parse(&device) {
            prop_assert!(!error.to_string().is_empty());
        }
        if let Err(error) = HostSpec::parse(&host) {
            prop_assert!(!error.to_string().is_empty());
        }
        if let Err(error) = WorkloadSpec::parse(&workload) {
            prop_assert!(!error.to_string().is_empty());
        }
        match SchedulerSpec::parse(&scheduler) {
            // A spec the parser accepts builds: its values were range-checked.
            Ok(spec) => drop(spec.build()),
            Err(error) => prop_assert!(!error.to_string().is_empty()),
        }
    }

    // Proves what the parsers accept runs: a workload accepted with a scheduler, on a device
    // and host accepted, plans and simulates (bounded) without a panic; errors are values.
    #[test]
    fn accepted_specs_simulate_without_panicking(
        seed in any::<u64>(),
        device in device_spec(),
        host in host_spec(),
        workload in workload_spec(),
        scheduler in scheduler_spec(),
    ) {
        let device = DeviceSpec::parse(&device).unwrap_or_else(|_| DeviceSpec::parse("ram").unwrap());
        let host = HostSpec::parse(&host).unwrap_or_else(|_| HostSpec::default_host());
        let Ok(workload) = WorkloadSpec::parse(&workload) else { return Ok(()) };
        let scheduler =
            SchedulerSpec::parse(&scheduler).unwrap_or_else(|_| SchedulerSpec::parse("noop").unwrap());
        let _ = elevator_sim::run(&bounded(seed, device, host), &scheduler, &workload);
    }
}

// Proves every key of every device kind, host and workload kind refuses an empty value with a
// message naming the key (issue 14: 13 keys panicked later and 8 silently lost the value).
#[test]
fn every_key_refuses_an_empty_value() {
    let mut tried = 0;
    let mut check = |text: String, error: Option<String>| {
        let error = error.unwrap_or_else(|| panic!("`{text}` was accepted"));
        let key = text.rsplit_once(':').unwrap().1.trim_end_matches('=');
        assert!(error.contains(&format!("{key}= is not valid")), "`{text}`: {error}");
        tried += 1;
    };
    for kind in DeviceKind::ALL {
        for key in kind.keys() {
            let text = format!("{}:{}=", kind.name(), key.key);
            check(text.clone(), DeviceSpec::parse(&text).err().map(|e| e.to_string()));
        }
    }
    for key in HOST_KEYS {
        let text = format!("host:{}=", key.key);
        check(text.clone(), HostSpec::parse(&text).err().map(|e| e.to_string()));
    }
    for kind in WorkloadKind::ALL {
        for key in kind.keys() {
            let text = format!("{}:{}=", kind.name(), key.key);
            check(text.clone(), WorkloadSpec::parse(&text).err().map(|e| e.to_string()));
        }
    }
    assert!(tried > 100, "only {tried} keys");
}
