//! RHEL 5's scheduler profiles (legacy-vs-kernel.md R1-R7) and the cfq rows 10, 12 and 13 of
//! its divergence table, driven through the real block queue with the scripted harness. Each
//! expected order is traced by hand from the kernel function a test's comment names.

use elevator_core::{Bio, Duration, Instant, IoPriority, KernelVersion, QueueConfig};
use elevator_sched::testkit::{Harness, fixed_service, read, sync_write, with_priority, write};
use elevator_sched::{SchedulerKind, SchedulerSpec};

fn harness(spec: &str, config: QueueConfig) -> Harness {
    Harness::new(SchedulerSpec::parse(spec).unwrap().build(), config)
        .with_service(fixed_service(Duration::from_millis(1)))
}

/// A process with one request outstanding at a time: its `k`-th bio (from 0) is `bio(k)`,
/// submitted `think` after the previous one completed, until a completion at or after `stop`.
fn dependent(
    h: &mut Harness,
    process: u32,
    think: Duration,
    stop: Instant,
    mut bio: impl FnMut(u64) -> Bio + 'static,
) {
    h.submit(bio(0));
    let mut next = 1;
    h.on_complete(move |done| {
        if done.process.0 != process || done.completed >= stop {
            return Vec::new();
        }
        next += 1;
        vec![(done.completed + think, bio(next - 1))]
    });
}

/// Consecutive runs of one value: (value, length).
fn runs<T: PartialEq + Copy>(values: impl IntoIterator<Item = T>) -> Vec<(T, usize)> {
    let mut runs: Vec<(T, usize)> = Vec::new();
    for value in values {
        match runs.last_mut() {
            Some(run) if run.0 == value => run.1 += 1,
            _ => runs.push((value, 1)),
        }
    }
    runs
}

/// Lengths of the Idle answers that started at or after `from`, in ms.
fn idle_waits_ms(h: &Harness, from: Instant) -> Vec<u64> {
    h.idle_answers()
        .iter()
        .filter(|(at, _)| *at >= from)
        .map(|(at, until)| (until.as_nanos() - at.as_nanos()) / 1_000_000)
        .collect()
}

// Proves the names: every RHEL 5 profile parses under its versioned name and the documented
// short aliases (host kernel names: `rhel5.2`, `rhel5.5` = 194.11.4.el5, the study's), prints
// back as itself, and a bare name on each RHEL 5 host picks the profile of the newest build
// not after it that changed the scheduler (8.el5 and vanilla: today's entries).
#[test]
fn versioned_names_and_the_host_kernel_pick_the_profile() {
    let kind = |text: &str| SchedulerSpec::parse(text).unwrap().kind();
    assert_eq!(kind("deadline@2.6.18-194.el5"), SchedulerKind::DeadlineRhel5_194);
    assert_eq!(kind("deadline@rhel5.5"), SchedulerKind::DeadlineRhel5_194);
    assert_eq!(kind("deadline@rhel5.0"), SchedulerKind::Deadline);
    assert_eq!(kind("cfq@2.6.18-92.el5"), SchedulerKind::CfqRhel5_92);
    assert_eq!(kind("cfq@rhel5.2"), SchedulerKind::CfqRhel5_92);
    assert_eq!(kind("cfq@2.6.18-194.el5"), SchedulerKind::CfqRhel5_194);
    assert_eq!(kind("cfq@2.6.18-194.8.1.el5"), SchedulerKind::CfqRhel5_194_8);
    assert_eq!(kind("cfq@2.6.18-194.11.4.el5"), SchedulerKind::CfqRhel5_194_8);
    assert_eq!(kind("cfq@rhel5.5"), SchedulerKind::CfqRhel5_194_8);
    assert_eq!(kind("cfq@2.6.18-8.el5"), SchedulerKind::Cfq);
    for text in ["deadline@2.6.18-194.el5:fifo_batch=8", "cfq@2.6.18-194.8.1.el5:slice_idle=0"] {
        let spec = SchedulerSpec::parse(text).unwrap();
        assert_eq!(spec.to_string(), text);
    }
    let on = |text: &str, kernel| SchedulerSpec::parse(text).unwrap().for_kernel(kernel).unwrap();
    for (kernel, deadline, cfq) in [
        (KernelVersion::Linux2_6_18, "deadline", "cfq"),
        (KernelVersion::Rhel5_0, "deadline", "cfq"),
        (KernelVersion::Rhel5_2, "deadline", "cfq@2.6.18-92.el5"),
        (KernelVersion::Rhel5_5Ga, "deadline@2.6.18-194.el5", "cfq@2.6.18-194.el5"),
        (KernelVersion::Rhel5_5Errata8, "deadline@2.6.18-194.el5", "cfq@2.6.18-194.8.1.el5"),
        (KernelVersion::Rhel5_5, "deadline@2.6.18-194.el5", "cfq@2.6.18-194.8.1.el5"),
    ] {
        assert_eq!(on("deadline", kernel).to_string(), deadline, "{kernel}");
        assert_eq!(on("cfq:quantum=8", kernel).to_string(), format!("{cfq}:quantum=8"));
    }
    // A named version stays what it names on any host; anticipatory has no RHEL profile.
    assert_eq!(on("cfq@2.6.18", KernelVersion::Rhel5_5).kind(), SchedulerKind::Cfq);
    assert_eq!(on("as", KernelVersion::Rhel5_5).kind(), SchedulerKind::Anticipatory);
    assert_eq!(on("cfq", KernelVersion::Rhel4).kind(), SchedulerKind::CfqV1);
}

/// 96 sequential 4 KiB reads (process 1) and 48 sequential 4 KiB writes (process 2), all
/// queued before the first dispatch; the direction of each issue in order.
fn deadline_directions(spec: &str) -> Vec<(bool, usize)> {
    // 4 KiB requests: neighbouring bios cannot merge, so every bio is one request.
    let config = QueueConfig { max_sectors_kb: 4, ..QueueConfig::default() };
    let mut h = harness(spec, config);
    h.hold_device();
    for i in 0..96 {
        h.submit(read(1, i * 8, 8));
    }
    for i in 0..48 {
        h.submit(write(2, 1_000_000 + i * 8, 8));
    }
    h.release_device();
    h.run();
    runs(h.issued().iter().map(|issued| issued.op == elevator_core::Op::Read))
}

// Proves R1 (`deadline_dispatch_requests`, C194 against V). Both directions are contiguous
// streams, writes_starved=2, fifo_batch=16, nothing expires (144 ms of work, read_expire
// 500 ms). Vanilla: choice 1 (reads, starved 1) has no next read, so it wraps to the lowest
// sector with batching=0: 16 reads; choice 2 (reads, starved 2) continues at `next` with
// batching still 16: one read (batching 17); choice 3 goes to writes (starved resets), no next
// write: 16 writes from the lowest; then reads again with no next read: 16 + 1, ... = 17 : 16
// until the writes run out. 194.el5: every choice resets batching, so choice 2 is a full batch
// too: 32 : 16.
#[test]
fn deadline_194_serves_32_reads_per_16_writes_where_vanilla_serves_17() {
    let vanilla = deadline_directions("deadline");
    assert_eq!(
        vanilla,
        [(true, 17), (false, 16), (true, 17), (false, 16), (true, 17), (false, 16), (true, 45)]
    );
    let rhel = deadline_directions("deadline@2.6.18-194.el5");
    assert_eq!(rhel, [(true, 32), (false, 16), (true, 32), (false, 16), (true, 32), (false, 16)]);
}

// Proves R1's other half: a run-out sweep restarts at the FIFO head, not the lowest sector.
// Reads at sectors 800 (queued first), 80 and 8, one batch of fifo_batch=1 each: after the
// first read (the FIFO head and lowest-sector choices differ only at a fresh start), a choice
// with no next read takes the lowest sector in vanilla (`deadline_find_first_drq`) and the
// oldest read in 194.el5.
#[test]
fn deadline_194_restarts_a_run_out_sweep_at_the_oldest_request() {
    let order = |spec: &str| {
        let mut h = harness(spec, QueueConfig::default());
        h.hold_device();
        for start in [800, 80, 8, 400] {
            h.submit(read(1, start, 8));
        }
        h.release_device();
        h.run();
        h.issued_starts()
    };
    // Vanilla: lowest (8), then the sweep's next (80; a gap ends the batch, and the choice
    // continues at next), 400, 800.
    assert_eq!(order("deadline:fifo_batch=1"), [8, 80, 400, 800]);
    // 194.el5: the first choice has no next: FIFO head 800; it has no successor, so the next
    // choice takes the FIFO head again (80), then continues at its next (400), then 8.
    assert_eq!(order("deadline@2.6.18-194.el5:fifo_batch=1"), [800, 80, 400, 8]);
}

/// An O_DIRECT writer (process 1, 1 ms think time) against a streaming reader (process 2);
/// the writer's turns on the device (requests in a row) and the harness.
fn direct_writer_against_reader(spec: &str) -> (Vec<usize>, Harness) {
    let mut h = harness(spec, QueueConfig::default());
    let stop = Instant::from_millis(400);
    dependent(&mut h, 1, Duration::from_millis(1), stop, |k| sync_write(1, k * 128, 64));
    dependent(&mut h, 2, Duration::ZERO, stop, |k| read(2, 5_000_000 + k * 128, 64));
    h.run();
    let writer_turns = runs(h.issued().iter().map(|issued| issued.process.0))
        .into_iter()
        .filter(|&(process, _)| process == 1)
        .map(|(_, length)| length)
        .collect();
    (writer_turns, h)
}

// Proves R2 (`cfq_set_request`'s `rq_is_sync`, C194.8): an O_DIRECT writer gets a sync slice
// with idling. Vanilla and 194.el5 file its writes in an async queue: when the one write
// completes the queue is empty with nothing out, so `cfq_select_queue` expires it (async
// queues are never idled on) and the reader's 100 ms slice follows; the writer's next write,
// 1 ms later, waits for it. Every writer turn is one request. 194.8.1.el5 files the writes in
// the writer's sync queue: at each completion `cfq_completed_request` arms the 8 ms idle
// timer, the next write comes 1 ms later and is served in the same slice.
#[test]
fn cfq_194_8_gives_an_o_direct_writer_a_sync_slice_with_idling() {
    for spec in ["cfq", "cfq@2.6.18-194.el5"] {
        let (turns, h) = direct_writer_against_reader(spec);
        assert!(turns.iter().all(|&length| length == 1), "{spec}: {turns:?}");
        assert_eq!(h.counter("sync_requests"), issued_reads(&h), "{spec}");
    }
    let (turns, h) = direct_writer_against_reader("cfq@2.6.18-194.8.1.el5");
    // A 100 ms slice of 2 ms write cycles.
    assert!(turns.iter().any(|&length| length >= 30), "{turns:?}");
    assert!(h.counter("idle_waits") > 30);
    assert_eq!(h.counter("async_requests"), 0);
}

fn issued_reads(h: &Harness) -> u64 {
    h.issued().iter().filter(|issued| issued.op == elevator_core::Op::Read).count() as u64
}

// Proves R7 (`cfq_get_queue`): buffered writes of two processes share one async queue per
// priority in vanilla (here) and from 194.8.1.el5 (`cfq_async_queue_prio`), and get one each
// in 194.el5 (`cic->cfqq[ASYNC]`), so each writer has its own 40 ms slices there.
#[test]
fn cfq_194_gives_each_process_its_own_async_queue() {
    for (spec, queues) in [("cfq", 1), ("cfq@2.6.18-194.el5", 2), ("cfq@2.6.18-194.8.1.el5", 1)] {
        let mut h = harness(spec, QueueConfig::default());
        h.queue_all(&[write(1, 0, 8), write(2, 1_000_000, 8), write(1, 64, 8)]);
        assert_eq!(h.counter("async_queues_created"), queues, "{spec}");
    }
}

/// Two readers of interleaved halves of one stream (process 1 the even 32 KiB chunks, process
/// 2 the odd ones), each with one read outstanding and 100 µs think time; then from `seeky`
/// each reads 4 KiB far apart (1 000 000 sectors between its reads).
fn cooperating_readers(spec: &str, seeky: Instant, stop: Instant) -> Harness {
    // 32 KiB requests: chunks cannot merge into each other.
    let config = QueueConfig { max_sectors_kb: 32, ..QueueConfig::default() };
    let mut h = harness(spec, config);
    let think = Duration::from_micros(100);
    h.hold_device();
    for process in [1u32, 2] {
        let mut seeky_from = None;
        let base = u64::from(process) * 50_000_000;
        dependent(&mut h, process, think, stop, move |k| {
            // The k-th read; the switch to seeking is decided by count, at the rate the
            // merged stream runs (one read per process per 2 ms), so both switch together.
            if k * 2 >= seeky.as_nanos() / 1_000_000 {
                let first = *seeky_from.get_or_insert(k);
                read(process, base + (k - first) * 1_000_000, 8)
            } else {
                read(process, (2 * k + u64::from(process) - 1) * 64, 64)
            }
        });
    }
    h.release_device();
    h
}

// Proves R3's merge (`cfq_select_queue` → `cfq_close_cooperator`, `cfq_setup_merge`,
// `cfq_set_request` → `cfq_merge_cfqqs`, C194). t=0: reads at 0 (p1) and 64 (p2); p1's queue
// is served first: read 0 goes out, its queue is empty. At its completion (1 ms) p2's next
// request starts exactly at the head (`last_position` = 64): a close cooperator, so no idle
// wait; the queue run expires p1's slice, plans p1's queue to merge into p2's (one process
// each: the active one moves) and activates p2's queue: read 64. p1's next read (128, at
// 1.1 ms) moves p1 into p2's queue (`cfq_merge_cfqqs`). From then on one queue holds both
// halves: the device sees one ascending stream. Vanilla idles 8 ms for p1 after its read
// (the next comes in 0.1 ms), serves p1 alone for its 100 ms slice, then p2 from far behind.
#[test]
fn cfq_194_merges_the_queues_of_two_cooperating_readers() {
    let until = Instant::from_millis(300);
    let mut h = cooperating_readers("cfq@2.6.18-194.el5", Instant::from_millis(10_000), until);
    h.run();
    let starts = h.issued_starts();
    assert!(starts.len() > 250, "{}", starts.len());
    let expected: Vec<u64> = (0..starts.len() as u64).map(|k| k * 64).collect();
    assert_eq!(starts, expected);
    assert_eq!(h.counter("queue_merges"), 1);
    assert_eq!(h.counter("queue_splits"), 0);

    let mut h = cooperating_readers("cfq", Instant::from_millis(10_000), until);
    h.run();
    let turns = runs(h.issued().iter().map(|issued| issued.process.0));
    assert_eq!(turns[0].0, 1);
    // p1 alone for most of its 100 ms slice (2 ms a read, 1 ms of it at the device).
    assert!(turns[0].1 >= 40, "{turns:?}");
    assert!(h.issued_starts().windows(2).any(|pair| pair[1] < pair[0]), "a seek back");
}

// Proves R3's split (`cfq_update_io_seektime`'s `seeky_start`, `should_split_cfqq`,
// `split_cfqq`, CFQQ_COOP_TOUT = HZ): the merged queue of the test above turns seeky when both
// readers start jumping 1 000 000 sectors at 300 ms (its mean seek passes 8192 sectors within
// a few requests); at the first request after it has been seeky for more than 1 s (~1.3 s)
// the process moving first gets a new queue (the merged queue still has two processes), the
// other keeps the old one (the last process: coop cleared, no split). Before 1.29 s no split.
#[test]
fn cfq_194_splits_a_merged_queue_after_one_second_of_seeking() {
    let mut h = cooperating_readers(
        "cfq@2.6.18-194.el5",
        Instant::from_millis(300),
        Instant::from_millis(1_600),
    );
    h.run_until(Instant::from_millis(1_290));
    assert_eq!(h.counter("queue_merges"), 1);
    assert_eq!(h.counter("queue_splits"), 0);
    h.run();
    assert_eq!(h.counter("queue_splits"), 1);
    assert_eq!(h.counter("sync_queues_created"), 3);
    // Seeky queues never cooperate: no second merge.
    assert_eq!(h.counter("queue_merges"), 1);
}

/// The idle waits (ms) cfq answered while a reader (process 1, reads `gap(k)`, 5 ms think
/// time, until 300 ms) competes with a buffered writer whose 1024 writes are all queued at
/// the start (an async queue, never idled on: every Idle answer is an idle wait for the
/// reader).
fn idle_waits_of_a_reader(spec: &str, gap: impl FnMut(u64) -> u64 + 'static) -> Vec<u64> {
    let config = QueueConfig { nr_requests: 2048, ..QueueConfig::default() };
    let mut h = harness(spec, config);
    h.hold_device();
    for i in 0..1024 {
        h.submit(write(2, 90_000_000 + i * 16, 8));
    }
    let mut gap = gap;
    dependent(&mut h, 1, Duration::from_millis(5), Instant::from_millis(300), move |k| {
        read(1, gap(k), 8)
    });
    h.release_device();
    h.run();
    idle_waits_ms(&h, Instant::ZERO)
}

// Proves R4 (`cfq_update_io_seektime`, `cfq_arm_slice_timer`, C194 against V): the seeky
// threshold. `cfq_arm_slice_timer` waits 2 ms instead of slice_idle (8 ms) for a stream whose
// valid mean seek exceeds the threshold: 8192 sectors (4 MiB) per queue from 194.el5, 131072
// sectors (64 MiB) per process in vanilla. Reads 12 288 sectors (6 MiB) apart: the 194.el5
// queue's mean passes 8192 at its third sample (0, 12 280, 12 280: 8771) and it waits 2 ms
// from then on; vanilla stays at 8 ms. Reads 6144 sectors (3 MiB) apart: 8 ms in both.
#[test]
fn cfq_194_counts_a_queue_seeky_above_4_mib() {
    let far = |k: u64| 1_000 + k * 12_288;
    let rhel_far = idle_waits_of_a_reader("cfq@2.6.18-194.el5", far);
    assert!(rhel_far.contains(&2), "{rhel_far:?}");
    let vanilla_far = idle_waits_of_a_reader("cfq", far);
    assert!(vanilla_far.contains(&8) && !vanilla_far.contains(&2), "{vanilla_far:?}");
    let rhel_near = idle_waits_of_a_reader("cfq@2.6.18-194.el5", |k| 1_000 + k * 6_144);
    assert!(rhel_near.contains(&8) && !rhel_near.contains(&2), "{rhel_near:?}");
}

// Proves R4's first sample (`cfq_update_io_seektime`: no previous request, distance 0): a
// sequential reader starting 100 000 000 sectors into the disk is seeky for vanilla at first
// (its first sample is measured from sector 0 and capped at 2 Mi sectors, which keeps the
// valid mean above 64 MiB from the third to the eighth sample: 2 ms waits), and never for
// 194.el5 (8 ms).
#[test]
fn cfq_194_counts_the_first_seek_as_zero() {
    let sequential = |k: u64| 100_000_000 + k * 8;
    let vanilla = idle_waits_of_a_reader("cfq", sequential);
    assert!(vanilla.contains(&2), "{vanilla:?}");
    let rhel = idle_waits_of_a_reader("cfq@2.6.18-194.el5", sequential);
    assert!(rhel.contains(&8) && !rhel.contains(&2), "{rhel:?}");
}

// Proves the 92.el5 profile serves as vanilla here: its one change (C92, `cfq_completed_request`
// kicks the queue when the driver is empty, not after a failed idle arm) only decides when cfq
// itself asks for a queue run after a completion, and the driver here runs the queue after
// every completion anyway. Two readers and a buffered writer give the same issue order.
#[test]
fn cfq_92_serves_as_vanilla() {
    let order = |spec: &str| {
        let mut h = harness(spec, QueueConfig::default());
        let stop = Instant::from_millis(300);
        dependent(&mut h, 1, Duration::from_millis(2), stop, |k| read(1, k * 128, 64));
        dependent(&mut h, 2, Duration::ZERO, stop, |k| read(2, 9_000_000 + k * 128, 64));
        dependent(&mut h, 3, Duration::from_millis(10), stop, |k| write(3, 4_000_000 + k * 8, 8));
        h.run();
        h.issued_starts()
    };
    assert_eq!(order("cfq@2.6.18-92.el5"), order("cfq"));
}

// Proves row 10 (`ll_rw_blk.c:attempt_merge` lowers the kept request's start time before
// `cfq_merged_requests`, whose FIFO move then never happens), in every profile. One reader's
// sync queue: A at 1016 (t=0), C at 500 000 (t=50), B at 1000 (t=100); at 150 a bio at 1008
// back-merges into B, which then fuses with A (B kept, carrying A's time 0, in its own FIFO
// place after C). The device is released at 200; quantum=1, so each round moves one request
// (with 4, `elv_dispatch_sort` would order the round's two by sector): the once-per-slice FIFO
// check finds C (50 + 125 < 200) expired at the head and serves it first; moving B to A's
// place served B first.
#[test]
fn cfq_a_fused_request_keeps_its_fifo_place() {
    for spec in ["cfq:quantum=1", "cfq@2.6.18-194.8.1.el5:quantum=1"] {
        let mut h = harness(spec, QueueConfig::default());
        h.hold_device();
        h.submit(read(1, 1016, 8));
        h.advance_to(Instant::from_millis(50));
        h.submit(read(1, 500_000, 8));
        h.advance_to(Instant::from_millis(100));
        h.submit(read(1, 1000, 8));
        h.advance_to(Instant::from_millis(150));
        h.submit(read(1, 1008, 8));
        assert_eq!(h.queue().stats(h.now()).requests_fused, 1, "{spec}");
        h.advance_to(Instant::from_millis(200));
        h.release_device();
        h.run();
        assert_eq!(h.issued_starts(), [500_000, 1000], "{spec}");
    }
}

// Proves row 12 (`exit_io_context` clears only the task; `cfq_arm_slice_timer` then refuses to
// idle): a process that exited with 12 reads queued keeps its idle window, so its queue is
// served through its slice (quantum 4 per round, 12 ms of a 100 ms slice) before the other
// reader's; closing the window at exit ended the slice after every 4.
#[test]
fn cfq_a_dead_process_queue_is_served_through_its_slice() {
    for spec in ["cfq", "cfq@2.6.18-194.el5"] {
        let mut h = harness(spec, QueueConfig::default());
        h.hold_device();
        for i in 0..12 {
            h.submit(read(1, i * 128, 64));
        }
        for i in 0..12 {
            h.submit(read(2, 5_000_000 + i * 128, 64));
        }
        h.exit_process(1);
        h.release_device();
        h.run();
        let turns = runs(h.issued().iter().map(|issued| issued.process.0));
        assert_eq!(turns, [(1, 12), (2, 12)], "{spec}");
    }
}

// Proves row 13 (`cfq_set_active_queue`: `last_end_request` starts at 0 while jiffies start
// near 2^32 at boot): an idle-class read before any completion is served at once; one after a
// best-effort completion still waits CFQ_IDLE_GRACE (100 ms) from it.
#[test]
fn cfq_an_idle_class_read_at_boot_does_not_wait_for_the_grace() {
    for spec in ["cfq", "cfq@2.6.18-194.8.1.el5"] {
        let mut h = harness(spec, QueueConfig::default());
        h.submit(with_priority(read(1, 1000, 8), IoPriority::idle()));
        h.run();
        assert_eq!(h.issued()[0].at, Instant::ZERO, "{spec}");
        h.submit(read(2, 5000, 8));
        h.run();
        let done = h.issued()[1].done_at;
        h.submit(with_priority(read(1, 2000, 8), IoPriority::idle()));
        h.run();
        assert_eq!(h.issued()[2].at, done + Duration::from_millis(100), "{spec}");
    }
}
