//! The Python package's tests (python/tests, pytest) as part of `cargo test --workspace`.
//!
//! Builds the package into a virtualenv under the target directory (`python-venv`: made with
//! `python3 -m venv` and the test dependencies from PyPI the first time, reused afterwards),
//! installs `./python` with pip (maturin, an incremental cargo build of crates/py in the dev
//! profile), then runs pytest with this build's `elevator` binary. Under CI=true anything missing
//! (python3, venv, a package) fails the test naming it; elsewhere a missing python3 skips it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What pytest and the package need, installed into the virtualenv once.
const PACKAGES: &[&str] = &["maturin>=1.5,<2", "pytest", "pandas", "matplotlib", "ray"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

fn target_dir(workspace: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| workspace.join("target"), PathBuf::from)
}

/// Runs `command`, failing the test with `what` and its output when it does not succeed.
fn run(what: &str, command: &mut Command) {
    let output = command.output().unwrap_or_else(|error| panic!("{what}: {error}"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

// Proves the Python package builds with `pip install ./python` and passes its pytest suite
// (API, DataFrame shape, CLI-equal errors, sweeps local and on a local Ray of 2 workers, the
// example): see python/tests for what each test proves.
#[test]
fn python_package_passes_pytest() {
    let ci = std::env::var("CI").is_ok_and(|value| value == "true");
    if Command::new("python3").arg("--version").output().is_err() {
        assert!(!ci, "python3 is missing (CI=true: the Python package's tests cannot be skipped)");
        // A developer's machine without Python: say why nothing ran.
        #[allow(clippy::print_stderr)]
        {
            eprintln!("python3 is missing: the Python package's tests are skipped");
        }
        return;
    }
    let workspace = workspace();
    let venv = target_dir(&workspace).join("python-venv");
    let bin = venv.join("bin");
    let python = bin.join("python");
    // A venv whose packages all import is reused: the download happens once per machine.
    let ready = python.exists()
        && Command::new(&python)
            .args(["-c", "import maturin, pytest, pandas, matplotlib, ray"])
            .status()
            .is_ok_and(|status| status.success());
    if !ready {
        // Debian's python3 splits venv and ensurepip into python3-venv: install it when the
        // interpreter lacks them (as root; otherwise the venv step below names what is missing).
        let has_venv = || {
            Command::new("python3")
                .args(["-c", "import venv, ensurepip"])
                .status()
                .is_ok_and(|status| status.success())
        };
        if !has_venv() && rustix::process::geteuid().is_root() {
            let _ = Command::new("apt-get").args(["update", "-qq"]).output();
            let _ = Command::new("apt-get")
                .args(["install", "-y", "-qq", "--no-install-recommends", "python3-venv"])
                .env("DEBIAN_FRONTEND", "noninteractive")
                .output();
        }
        run(
            "python3 -m venv (apt-get install python3-venv)",
            Command::new("python3").args([
                "-m",
                "venv",
                venv.to_str().expect("a UTF-8 target path"),
            ]),
        );
        run(
            &format!("pip install {}", PACKAGES.join(" ")),
            Command::new(&python).args(["-m", "pip", "install", "-q"]).args(PACKAGES),
        );
    }
    // The venv's maturin must be on PATH for pip's build backend.
    let path = std::env::join_paths(
        std::iter::once(bin.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .expect("PATH joins");
    run(
        "pip install ./python",
        Command::new(&python)
            .args(["-m", "pip", "install", "-q", "--no-build-isolation", "--force-reinstall"])
            .arg(workspace.join("python"))
            .env("PATH", &path)
            // The dev profile: the workspace's debug artifacts, which `cargo test` has just
            // built, are reused (a release build of every crate would add about two minutes
            // to a cold CI run); the tests' simulations are small.
            .env("MATURIN_PEP517_ARGS", "--profile dev"),
    );
    let status = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(workspace.join("python/tests"))
        .current_dir(std::env::temp_dir())
        .env("PATH", &path)
        .env("ELEVATOR_BIN", env!("CARGO_BIN_EXE_elevator"))
        .status()
        .expect("pytest runs");
    assert!(status.success(), "pytest of python/tests failed ({status})");
}
