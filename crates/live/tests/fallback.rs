//! The fallback when io_uring is unavailable, made real: this test disables io_uring for the
//! whole machine (`kernel.io_uring_disabled=2`, root only) for the moment it opens an engine,
//! and restores the setting however the test ends. It lives alone in its binary so that no
//! other test runs while io_uring is off.

// A skipped test must say why on stderr: the harness shows nothing else.
#![allow(clippy::print_stderr)]

use elevator_core::ProcessId;
use elevator_live::{
    AlignedBuf, BackendChoice, Engine, EngineOptions, IoContext, Target, TargetOptions,
};

const SYSCTL: &str = "/proc/sys/kernel/io_uring_disabled";

/// Puts the sysctl back as it was when dropped.
struct Restore(String);

impl Drop for Restore {
    fn drop(&mut self) {
        if let Err(error) = std::fs::write(SYSCTL, &self.0) {
            eprintln!("could not restore {SYSCTL} to {}: {error}", self.0.trim());
        }
    }
}

// Proves that where io_uring is unavailable the engine says why in one line and falls back
// to the thread pool, which then does real I/O; and that asking for io_uring alone fails
// with the same reason instead of falling back.
#[test]
fn without_io_uring_the_engine_says_why_and_uses_threads() {
    let Ok(original) = std::fs::read_to_string(SYSCTL) else {
        eprintln!(
            "skipping: {SYSCTL} does not exist (a kernel before 6.6 cannot disable io_uring)"
        );
        return;
    };
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipping: disabling io_uring needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let options = TargetOptions { write: true, create_bytes: Some(1 << 20), ..Default::default() };
    let path = dir.path().join("scratch");
    drop(Target::open(&path, &options).unwrap());
    let open = |backend| {
        let target = Target::open(&path, &options).unwrap();
        Engine::open(target, EngineOptions { backend, ..EngineOptions::default() })
    };
    let engine = {
        let _restore = Restore(original);
        std::fs::write(SYSCTL, "2").expect("disable io_uring");
        let refused = open(BackendChoice::IoUring).unwrap_err().to_string();
        assert!(
            refused.contains("Operation not permitted") || refused.contains("EPERM"),
            "{refused}"
        );
        open(BackendChoice::Auto).expect("the fallback")
    };
    assert_eq!(engine.backend(), "threads");
    let reason = engine.fallback_reason().expect("a reason").to_owned();
    assert!(reason.contains("kernel.io_uring_disabled=2"), "{reason}");
    assert!(reason.contains("thread pool") && !reason.contains('\n'), "{reason}");
    let done = engine.handle().read(IoContext::new(ProcessId(1)), 0, AlignedBuf::zeroed(4096));
    assert_eq!(done.unwrap().wait().result.unwrap(), 4096);
    engine.shutdown().unwrap();
}
