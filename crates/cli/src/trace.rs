//! `elevator trace DEV`: capture a block device's I/O through tracefs block tracepoints
//! ([`elevator_kernel::trace`]) for a duration or until Ctrl-C, written as fio's iolog v3 or
//! blkparse's text.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use clap::ValueEnum;
use elevator_kernel::trace::{self, CaptureOptions, TracedDevice};

use crate::term::note;

/// `elevator trace`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct TraceArgs {
    /// The block device: a path (/dev/sdb) or a name in /dev (sdb, nvme0n1, loop0); a whole
    /// disk, not a partition.
    pub(crate) device: String,

    /// Capture for this long (10s, 500ms; seconds if bare). Without it: until Ctrl-C (or
    /// SIGTERM), which ends the capture normally and writes it.
    #[arg(long, value_name = "TIME", value_parser = parse_duration_arg)]
    pub(crate) duration: Option<elevator_core::Duration>,

    /// Write the trace to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,

    /// The trace's format.
    #[arg(long, value_enum, default_value_t = TraceFormat::Iolog)]
    pub(crate) format: TraceFormat,

    /// Also capture each bio's arrival (Q) and its insertion into the scheduler (I); the
    /// blkparse text shows them, the iolog holds the dispatches only.
    #[arg(long)]
    pub(crate) queue: bool,

    /// The capture's ring buffer per CPU, KiB [default: 65536, less on machines of more than
    /// 16 CPUs so that all buffers take at most 1 GiB].
    #[arg(long, value_name = "KIB")]
    pub(crate) buffer_size_kb: Option<u64>,
}

/// What `elevator trace` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum TraceFormat {
    /// fio's iolog version 3 (`read_iolog=` replays it): one record per dispatched request,
    /// µs since the first event.
    Iolog,
    /// blkparse's default text: D and C (with the latency since dispatch), Q and I with
    /// --queue.
    Blkparse,
}

/// A time argument (`2s`, `500ms`, seconds if bare).
fn parse_duration_arg(text: &str) -> Result<elevator_core::Duration, String> {
    elevator_core::units::parse_duration(text, 1_000_000_000).map_err(|error| error.to_string())
}

/// Captures, then writes the trace to `-o FILE` or `out`; a summary and any lost events go to
/// stderr.
pub(crate) fn run_command(args: &TraceArgs, out: &mut dyn Write) -> Result<()> {
    let device = TracedDevice::open(&args.device)?;
    trace::check_privileges()?;
    // Opened before capturing, so that an unwritable path fails before minutes of tracing.
    let mut file = match &args.output {
        Some(path) => Some(
            std::fs::File::create(path)
                .with_context(|| format!("creating the trace file {}", path.display()))?,
        ),
        None => None,
    };
    let stop = Arc::new(AtomicBool::new(false));
    for signal in
        [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP]
    {
        // Only a flag: the capture polls it, then removes its instance (and unmounts tracefs
        // if it mounted it) before the process ends.
        signal_hook::flag::register(signal, stop.clone())
            .context("installing the Ctrl-C handler")?;
    }
    let how_long = args.duration.map_or("until Ctrl-C".to_owned(), |duration| {
        format!("for {:.3} s", duration.as_secs_f64())
    });
    note(&format!(
        "tracing {} ({}:{}) {how_long}",
        device.path.display(),
        device.major,
        device.minor
    ));
    let options = CaptureOptions {
        duration: args.duration,
        queue_events: args.queue,
        buffer_size_kb: args.buffer_size_kb,
        ..CaptureOptions::default()
    };
    let capture = match trace::capture(&device, &options, &stop) {
        Ok(capture) => capture,
        Err(error) => {
            // No trace: no empty file left behind as if one had been written.
            if let Some(path) = &args.output {
                let _ = std::fs::remove_file(path);
            }
            return Err(error).with_context(|| format!("tracing {}", device.path.display()));
        }
    };
    let mut left_out = 0;
    let text = match args.format {
        TraceFormat::Iolog => {
            let (log, skipped) = capture.iolog(&device.path.to_string_lossy());
            left_out = skipped;
            log.to_text().context("writing the iolog")?.into_bytes()
        }
        TraceFormat::Blkparse => {
            let mut text = Vec::new();
            capture.write_blkparse(&mut text)?;
            text
        }
    };
    match (&mut file, &args.output) {
        (Some(file), Some(path)) => file
            .write_all(&text)
            .and_then(|()| file.flush())
            .with_context(|| format!("writing the trace file {}", path.display()))?,
        _ => out.write_all(&text)?,
    }
    note(&format!("captured {}", capture.counts()));
    if left_out > 0 {
        note(&format!("{left_out} dispatches moved no data and are not in the iolog"));
    }
    if capture.lost_events > 0 {
        note(&format!(
            "{} events were lost (the ring buffer was full): the trace is incomplete; \
             a larger --buffer-size-kb keeps more",
            capture.lost_events
        ));
    }
    if capture.stopped_at_limit {
        note(&format!("stopped at {} events, the most one capture keeps", trace::EVENTS_MAX));
    }
    for text in &capture.notes {
        note(text);
    }
    Ok(())
}
