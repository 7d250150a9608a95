//! The library API against real files: every scheduler on both backends, run-time switches,
//! a submission queue smaller than the depth, and I/O the target cannot take.

use std::sync::{Arc, Mutex};

use elevator_core::{IoPriority, ProcessId};
use elevator_live::{
    AlignedBuf, BackendChoice, Engine, EngineOptions, Fault, IoContext, LiveError, Target,
    TargetOptions,
};
use elevator_sched::{SchedulerKind, SchedulerSpec};

const MIB: u64 = 1 << 20;

/// A scratch file in a fresh directory on a disk filesystem (O_DIRECT needs one; /tmp here
/// is ext4, and `TMPDIR` can point elsewhere).
fn scratch(size_bytes: u64) -> (tempfile::TempDir, Target) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let options =
        TargetOptions { write: true, create_bytes: Some(size_bytes), ..Default::default() };
    let target = Target::open(&dir.path().join("scratch"), &options).expect("a scratch target");
    (dir, target)
}

fn pattern(seed: u64, len: usize) -> AlignedBuf {
    let mut buf = AlignedBuf::zeroed(len);
    for (index, byte) in buf.as_mut_slice().iter_mut().enumerate() {
        *byte = (seed.wrapping_mul(31).wrapping_add(index as u64 * 7) % 251) as u8;
    }
    buf
}

fn engine(target: Target, scheduler: &str, backend: BackendChoice) -> Engine {
    let options = EngineOptions {
        scheduler: SchedulerSpec::parse(scheduler).unwrap(),
        depth: 8,
        backend,
        ..EngineOptions::default()
    };
    Engine::open(target, options).expect("an engine")
}

/// Writes 64 KiB blocks (adjacent ones merge), flushes, reads everything back and compares.
fn round_trip(engine: &Engine) {
    let io = engine.handle();
    let blocks = 48u64;
    let writes: Vec<_> = (0..blocks)
        .map(|block| {
            let context = IoContext::new(ProcessId(1 + (block % 3) as u32));
            io.write(context, block * 65536, pattern(block, 65536)).unwrap()
        })
        .collect();
    for ticket in writes {
        assert_eq!(ticket.wait().result.unwrap(), 65536);
    }
    io.flush(IoContext::new(ProcessId(1))).unwrap().wait().result.unwrap();
    let reads: Vec<_> = (0..blocks)
        .map(|block| {
            let context = IoContext::new(ProcessId(4 + (block % 2) as u32));
            (block, io.read(context, block * 65536, AlignedBuf::zeroed(65536)).unwrap())
        })
        .collect();
    for (block, ticket) in reads {
        let done = ticket.wait();
        assert_eq!(done.result.unwrap(), 65536);
        assert_eq!(done.buf.unwrap().as_slice(), pattern(block, 65536).as_slice(), "block {block}");
    }
}

// Proves every registered scheduler moves real data correctly through io_uring and through
// the thread pool: what was written (merged or not) reads back byte for byte.
#[test]
fn every_scheduler_round_trips_data_on_both_backends() {
    for backend in [BackendChoice::IoUring, BackendChoice::Threads] {
        for kind in SchedulerKind::ALL {
            let (_dir, target) = scratch(4 * MIB);
            let engine = engine(target, kind.name(), backend);
            assert_eq!(
                engine.backend(),
                if backend == BackendChoice::Threads { "threads" } else { "io_uring" }
            );
            round_trip(&engine);
            let stats = engine.handle().stats().unwrap();
            assert_eq!(stats.scheduler, kind.name());
            assert!(stats.reactor.transfers > 0);
            engine.shutdown().unwrap();
        }
    }
}

// Proves a scheduler switch at run time loses nothing: I/Os queued under one scheduler
// complete under the next, through several switches.
#[test]
fn switching_schedulers_under_load_loses_nothing() {
    let (_dir, target) = scratch(8 * MIB);
    let engine = engine(target, "deadline", BackendChoice::Auto);
    let io = engine.handle();
    let done = Arc::new(Mutex::new(0u32));
    let names = ["cfq", "noop", "anticipatory", "deadline"];
    for round in 0..4u64 {
        for block in 0..64u64 {
            let done = Arc::clone(&done);
            let context = IoContext::new(ProcessId(1 + (block % 4) as u32));
            let offset = ((block * 37 + round) % 2048) * 4096;
            io.read_then(context, offset, AlignedBuf::zeroed(4096), move |completion| {
                assert_eq!(completion.result.unwrap(), 4096);
                *done.lock().unwrap() += 1;
            })
            .unwrap();
        }
        let old = io.switch_scheduler(&SchedulerSpec::parse(names[round as usize]).unwrap());
        assert!(!old.unwrap().is_empty());
    }
    engine.shutdown().unwrap();
    assert_eq!(*done.lock().unwrap(), 256);
}

// Proves a submission queue smaller than the depth loses no request: with two ring entries
// and 32 transfers allowed in flight, 300 I/Os all complete.
#[test]
fn a_full_submission_queue_loses_nothing() {
    let (_dir, target) = scratch(4 * MIB);
    let options = EngineOptions {
        scheduler: SchedulerSpec::parse("noop").unwrap(),
        depth: 32,
        backend: BackendChoice::IoUring,
        ring_entries: Some(2),
        ..EngineOptions::default()
    };
    let engine = Engine::open(target, options).unwrap();
    let io = engine.handle();
    let tickets: Vec<_> = (0..300u64)
        .map(|i| {
            let context = IoContext::new(ProcessId(1)).with_priority(IoPriority::DEFAULT);
            io.read(context, (i * 7919 % 1024) * 4096, AlignedBuf::zeroed(4096)).unwrap()
        })
        .collect();
    for ticket in tickets {
        assert_eq!(ticket.wait().result.unwrap(), 4096);
    }
    engine.shutdown().unwrap();
}

// Proves the submit path parks and resubmits in order on real I/O: with the smallest request
// pool (nr_requests 4) and 64 writes of 64 KiB far enough apart that none merges, from two
// processes, the pool refuses some bios (counted as parked), every write still completes,
// and each block reads back as the last write to it left it — including a block written
// twice by one process, whose second write was parked behind its first.
#[test]
fn writes_parked_on_a_full_request_pool_all_land_in_order() {
    let (_dir, target) = scratch(16 * MIB);
    let options = EngineOptions {
        scheduler: SchedulerSpec::parse("deadline").unwrap(),
        depth: 2,
        nr_requests: 4,
        backend: BackendChoice::IoUring,
        // The first two writes hold both device slots for 200 ms, so the pool fills while the
        // rest arrive, however fast the scratch file completes writes.
        faults: vec![Fault::parse("delay:op=write,count=2,by=200ms").unwrap()],
        ..EngineOptions::default()
    };
    let engine = Engine::open(target, options).unwrap();
    let io = engine.handle();
    let block = |i: u64| (i * 2 % 128) * 65536;
    let tickets: Vec<_> = (0..64u64)
        .map(|i| {
            let context = IoContext::new(ProcessId(1 + (i % 2) as u32));
            io.write(context, block(i), pattern(i, 65536)).unwrap()
        })
        .collect();
    // Process 1 writes block 0 again: its write must land after its first one.
    let again = io.write(IoContext::new(ProcessId(1)), block(0), pattern(1000, 65536)).unwrap();
    for ticket in tickets {
        assert_eq!(ticket.wait().result.unwrap(), 65536);
    }
    assert_eq!(again.wait().result.unwrap(), 65536);
    let stats = io.stats().unwrap();
    assert!(stats.reactor.parked_bios > 0, "the pool never refused a bio: {stats:?}");
    for i in 0..64u64 {
        let expected = if i == 0 { pattern(1000, 65536) } else { pattern(i, 65536) };
        let done = io.read(IoContext::new(ProcessId(3)), block(i), AlignedBuf::zeroed(65536));
        let done = done.unwrap().wait();
        assert_eq!(done.buf.unwrap().as_slice(), expected.as_slice(), "block {i}");
    }
    engine.shutdown().unwrap();
}

// Proves I/O the target cannot take is refused at once with a message saying why:
// misaligned, past the end, or a write to a read-only target.
#[test]
fn impossible_io_is_refused_with_the_reason() {
    let (dir, target) = scratch(MIB);
    let engine = engine(target, "deadline", BackendChoice::Auto);
    let io = engine.handle();
    let context = IoContext::new(ProcessId(1));
    let message = |result: Result<_, LiveError>| result.unwrap_err().to_string();
    assert!(
        message(io.read(context, 512, AlignedBuf::zeroed(4096))).contains("4096-byte alignment")
    );
    assert!(message(io.read(context, 0, AlignedBuf::zeroed(1000))).contains("alignment"));
    assert!(message(io.read(context, MIB, AlignedBuf::zeroed(4096))).contains("past the end"));
    engine.shutdown().unwrap();
    let read_only = Target::open(&dir.path().join("scratch"), &TargetOptions::default()).unwrap();
    let engine = self::engine(read_only, "deadline", BackendChoice::Auto);
    let refused = engine.handle().write(context, 0, AlignedBuf::zeroed(4096));
    assert!(message(refused).contains("read-only"));
}
