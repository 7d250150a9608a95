//! `elevator calibrate`: measure a device or file and write a device preset for `-d`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use elevator_core::units::parse_size_bytes;
use elevator_live::calibrate::{CalibrateOptions, calibrate};
use elevator_live::{LiveError, Target, TargetKind, TargetOptions};

use crate::Interrupted;
use crate::term::{StopSignals, note};

/// Measure a device or file and write a device preset (`-d ./FILE.toml`) from it.
///
/// Runs closed-loop direct-I/O jobs through the live engine (io_uring, O_DIRECT; the kernel's
/// scheduler as it is): sequential read bandwidth and QD1 latency by block size (4k..1M),
/// random read IOPS and latency percentiles by queue depth (1..64 or the device's
/// nr_requests), the rotational flag from sysfs and from the measurements (both recorded; a
/// disagreement is said), and for a rotational device a seek curve and its rotational
/// latency. Reads only, unless --write: then also writes, on a scratch file elevator
/// created, on another file or a block device only with --force. The preset is an `hdd`
/// device with fitted mechanics (rpm, seek curve, transfer rate, overhead) for a rotational
/// device whose seek curve reaches the media, else a `table` device of the measured tables;
/// every measurement and the kind's reason are in its `[measured]` table; printed to stdout
/// without -o. sim, compare and advise split requests at the device's recorded
/// max_sectors_kb.
#[derive(Debug, clap::Args)]
pub(crate) struct CalibrateArgs {
    /// The block device or file to measure.
    pub(crate) target: PathBuf,
    /// Where to write the preset (TOML); stdout when absent.
    #[arg(short = 'o', long)]
    pub(crate) output: Option<PathBuf>,
    /// Fewer sizes and depths, one second each (under a minute on a fast device).
    #[arg(long)]
    pub(crate) quick: bool,
    /// Also measure writes (sequential and random). Destroys the target's data: a scratch
    /// file elevator created, or anything else with --force.
    #[arg(long)]
    pub(crate) write: bool,
    /// With --write: write to a block device or a file elevator did not create.
    #[arg(long)]
    pub(crate) force: bool,
    /// Create TARGET as a scratch file of this size when it does not exist (e.g. 1g).
    #[arg(long)]
    pub(crate) size: Option<String>,
    /// The deepest queue measured (also capped at the device's nr_requests).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub(crate) max_depth: u32,
    /// Seed of the jobs' random offsets.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
}

pub(crate) fn run_command(args: &CalibrateArgs, stdout: &mut dyn Write) -> Result<()> {
    let size = args
        .size
        .as_deref()
        .map(|text| {
            parse_size_bytes(text).map_err(|problem| {
                anyhow::anyhow!("--size: {problem} (accepted: a size such as 256m or 4g)")
            })
        })
        .transpose()?;
    if args.write && !args.force {
        // A calibration writes all over the target: a device's data would be gone, whatever
        // blkid finds on it or not. Only --force says the user means it.
        let is_device = std::fs::metadata(&args.target)
            .map(|metadata| {
                use std::os::unix::fs::FileTypeExt;
                metadata.file_type().is_block_device()
            })
            .unwrap_or(false);
        if is_device {
            anyhow::bail!(
                "calibrate --write on {} would overwrite the block device's data: add --force \
                 if that is what you want (without --write calibration only reads)",
                args.target.display()
            );
        }
    }
    let signals = StopSignals::install().context("installing the signal handlers")?;
    let options = TargetOptions {
        write: args.write,
        force: args.force,
        create_bytes: size,
        stop: Some(Arc::clone(&signals.stop)),
    };
    let mut target = Target::open(&args.target, &options)
        .with_context(|| format!("opening {}", args.target.display()))?;
    if target.created() {
        note(&format!("created {} (delete it when done)", target.describe()));
    }
    let calibrate_options = CalibrateOptions {
        quick: args.quick,
        write: args.write,
        max_depth: args.max_depth,
        seed: args.seed,
        stop: Some(Arc::clone(&signals.stop)),
    };
    let bar = crate::term::simulation_counter(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} steps, {elapsed} {msg}")
            .expect("a valid template"),
    );
    let result = calibrate(&mut target, &calibrate_options, &mut |done, total, label| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        bar.set_message(label.to_owned());
    });
    bar.finish_and_clear();
    let calibration = match result {
        Err(LiveError::Interrupted { .. }) => {
            return Err(Interrupted { signal: signals.received() }.into());
        }
        Err(_) if signals.received().is_some() => {
            return Err(Interrupted { signal: signals.received() }.into());
        }
        other => other.with_context(|| format!("calibrating {}", target.describe()))?,
    };
    if let Some(disagreement) = calibration.disagreement() {
        note(&disagreement);
    }
    if target.kind() == TargetKind::File && calibration.sysfs_rotational.is_some() {
        note("a file's rotational flag is its filesystem's device's");
    }
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let text = calibration.preset_toml(&command, &utc_now());
    match &args.output {
        Some(path) => {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
            note(&format!(
                "wrote {} ({} steps, rotational={}, stated error {:.0} %): use it as -d {}",
                path.display(),
                calibration.points.len(),
                calibration.rotational(),
                calibration.error_percent(),
                dash_d(path)
            ));
            if let Some(kb) = calibration.sysfs_max_sectors_kb {
                note(&format!(
                    "sim, compare and advise on it split requests at the device's {kb} KiB \
                     (recorded as its max_sectors_kb; --max-sectors-kb overrides it in sim)"
                ));
            }
        }
        None => stdout.write_all(text.as_bytes())?,
    }
    Ok(())
}

/// The path as `-d` reads it: a bare name gets `./` so it is taken for a file.
fn dash_d(path: &std::path::Path) -> String {
    let text = path.display().to_string();
    if text.contains('/') { text } else { format!("./{text}") }
}

/// The wall-clock date in UTC, RFC 3339 (`2026-11-27T20:49:11Z`), for the preset's record.
fn utc_now() -> String {
    // The date the measurement was taken is about the real world, not a simulated clock.
    #[allow(clippy::disallowed_methods)]
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    elevator_core::units::UtcTime::from_unix_seconds(seconds).rfc3339()
}
