//! Embedding the live engine: an application that does its own direct I/O gives its
//! latency-sensitive reads a real-time I/O priority and its background scan the idle class,
//! and lets cfq keep the two apart in user space.
//!
//! `cargo run --release -p elevator-live --example embed [PATH]` (default: a 256 MiB scratch
//! file in the temporary directory, created and removed by the example).

// An example talks to its user on stdout.
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use elevator_core::{IoPriority, ProcessId};
use elevator_live::{AlignedBuf, Engine, EngineOptions, IoContext, Target, TargetOptions};
use elevator_sched::SchedulerSpec;

const SIZE: u64 = 256 << 20;
const BLOCK: usize = 64 << 10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let given = std::env::args().nth(1);
    let path = given
        .clone()
        .map_or_else(|| std::env::temp_dir().join("elevator-embed.scratch"), Into::into);
    let options = TargetOptions { write: false, create_bytes: Some(SIZE), ..Default::default() };
    let target = Target::open(&path, &options)?;
    println!("target: {}", target.describe());
    let engine = Engine::open(
        target,
        EngineOptions { scheduler: SchedulerSpec::parse("cfq")?, depth: 16, ..Default::default() },
    )?;
    if let Some(reason) = engine.fallback_reason() {
        println!("note: {reason}");
    }
    let io = engine.handle();
    let foreground = IoContext::new(ProcessId(1)).with_priority(IoPriority::realtime(4)?);
    let background = IoContext::new(ProcessId(2)).with_priority(IoPriority::idle());

    // The background scan keeps 16 reads in flight, each resubmitting from its callback.
    let scanned = Arc::new(AtomicU64::new(0));
    for slot in 0..16u64 {
        scan(io.clone(), background, slot * BLOCK as u64, Arc::clone(&scanned));
    }

    // The foreground issues 200 reads one at a time and measures each.
    let mut latencies_us: Vec<f64> = (0..200u64)
        .map(|i| {
            let offset = (i * 7919 % (SIZE / BLOCK as u64)) * BLOCK as u64;
            let done = io.read(foreground, offset, AlignedBuf::zeroed(BLOCK)).map(|t| t.wait());
            done.map_or(f64::NAN, |d| d.latency.as_nanos() as f64 / 1e3)
        })
        .collect();
    latencies_us.sort_by(f64::total_cmp);
    println!(
        "foreground (real-time) reads: p50 {:.0} us, p99 {:.0} us",
        latencies_us[latencies_us.len() / 2],
        latencies_us[latencies_us.len() * 99 / 100]
    );
    let stats = io.stats()?;
    let scanned_during = scanned.load(Ordering::Relaxed);
    println!(
        "{} via {}: {} requests dispatched",
        stats.scheduler, stats.backend, stats.queue.dispatched
    );
    engine.shutdown()?;
    // Shutting down refuses the scan's next reads; what it got while the foreground ran is
    // what cfq's idle class gets from a busy disk: next to nothing.
    println!("background (idle) scan read {} KiB meanwhile", scanned_during >> 10);
    if given.is_none() {
        std::fs::remove_file(&path)?;
    }
    Ok(())
}

/// One slot of the background scan: read at `offset`, then (from the completion callback,
/// on the engine's thread, so it only submits) the block 16 slots on, until the end of the
/// target or until the engine stops taking I/O.
fn scan(io: elevator_live::Handle, context: IoContext, offset: u64, scanned: Arc<AtomicU64>) {
    if offset + BLOCK as u64 > SIZE {
        return;
    }
    let next = io.clone();
    let _ = io.read_then(context, offset, AlignedBuf::zeroed(BLOCK), move |completion| {
        scanned.fetch_add(completion.result.unwrap_or(0) as u64, Ordering::Relaxed);
        scan(next, context, offset + 16 * BLOCK as u64, scanned);
    });
}
