//! Faithful re-implementations of the Linux I/O schedulers, and the registry that names them.
//!
//! Every scheduler is a module of the same shape (DESIGN §8): a `//!` header saying what it
//! does, which kernel version and file it follows, its tunables and its "Deviations from
//! Linux"; the tunables table; the state; `impl Scheduler`; helpers named after their caller;
//! tests. The kernel version each module follows is part of its contract: a behaviour that
//! changed between versions is reproduced as that version had it.
//!
//! [`SchedulerKind`] is the registry: one [`Registration`] per scheduler holds every fact the
//! rest of the project reads about it — the kernel names (and aliases), the kernel version it
//! follows, its block layer (legacy or blk-mq), its tunable tables, the simulated CPU cost per
//! request, and `build`. Adding a scheduler is adding a variant and its entry; an entry missing
//! a fact does not compile. [`SchedulerSpec`] parses the command line's `NAME[:key=value,...]` form.
//!
//! ```
//! use elevator_sched::{SchedulerKind, SchedulerSpec};
//!
//! let spec = SchedulerSpec::parse("deadline:fifo_batch=8,read_expire=250ms").unwrap();
//! assert_eq!(spec.kind(), SchedulerKind::Deadline);
//! let scheduler = spec.build();
//! assert_eq!(scheduler.tunable("read_expire"), Ok(250));
//! assert_eq!(scheduler.tunable("fifo_batch"), Ok(8));
//! assert!(SchedulerSpec::parse("deadline:fifo_batch=many").is_err());
//! // Out of range: clamped as 2.6.18's sysfs store does, with a notice naming the value used.
//! let clamped = SchedulerSpec::parse("deadline:fifo_batch=-1").unwrap();
//! assert_eq!(clamped.settings(), [("fifo_batch", 0)]);
//! assert_eq!(clamped.notices().len(), 1);
//! ```
//!
//! # Out-of-range tunables (legacy-vs-kernel.md row 21)
//!
//! The 2.6.18 schedulers take a value as their sysfs store functions do, then clamp it to the
//! tunable's range (each file's `STORE_FUNCTION` MIN/MAX), and the spec carries a notice
//! naming the value used ([`SchedulerSpec::notices`]; the CLI prints it on stderr):
//!
//! * deadline reads a signed number (`simple_strtol`) into an `int`: `-1` is −1, then clamped
//!   (`read_expire=-1` → 0; `front_merges=2` → 1); beyond the `int` range the value is cut to
//!   32 bits first, as the assignment does.
//! * anticipatory reads an unsigned number (`simple_strtoul`) into an `unsigned long`; cfq
//!   into an `unsigned int`, cut to 32 bits. `simple_strtoul` stops at a `-`, so a negative
//!   value reads as 0 and clamps to the minimum (`cfq:quantum=-1` → 1, `anticipatory:
//!   antic_expire=-1` → 0). (The divergence table says "-1" clamps to MAX; 2.6.18's
//!   `lib/vsprintf.c:simple_strtoul` reads no sign, so it is 0, then MIN.)
//!
//! Deviations: text that is not a number in the tunable's unit is refused (the kernel reads
//! the leading digits, 0 if there are none); a number beyond 64 bits is refused (the kernel's
//! wraps). cfq's maximum is `UINT_MAX` in the kernel and `INT_MAX` in its table here, so a
//! value between the two is clamped to `INT_MAX` (with the notice) where the kernel keeps it.
//! The 2.6.9 schedulers (`noop@2.6.9` has no tunables; `cfq@2.6.9`) and the blk-mq set refuse
//! out-of-range values: 2.6.9's store functions are not in the spec's sources, and the blk-mq
//! schedulers' kernels parse with `kstrto*`, which refuse malformed and (for unsigned
//! tunables) negative text with `-EINVAL`; what each then does with a parsed value outside
//! its table's range (mq-deadline's and bfq's store macros clamp, kyber's latency targets take
//! any value) is not modelled: it is refused here.

#![deny(missing_docs)]
#![warn(missing_debug_implementations, unreachable_pub)]

use std::fmt;

use elevator_core::{
    ComponentSpec, Duration, KernelBase, KernelVersion, Scheduler, SpecError, TunableError,
    TunableSpec, tunable,
};

pub mod anticipatory;
pub mod bfq;
pub mod cfq;
pub mod cfq_v1;
mod common;
pub mod conform;
pub mod deadline;
pub mod kyber;
pub mod linus;
pub mod mq_deadline;
pub mod none;
pub mod noop;
pub mod noop_v1;
mod sorted;
// Test support: behind the `testkit` feature (dev-dependencies turn it on), and always in
// this crate's own unit tests; not part of the library's surface.
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

/// Every scheduler elevator implements.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum SchedulerKind {
    /// 2.6.18 noop: arrival order, merging through the one-hit cache only.
    Noop,
    /// 2.6.9 noop (`noop@2.6.9`): arrival order, a bio joins any queued request it touches.
    NoopV1,
    /// 2.6.18 anticipatory: deadline-style batches plus waiting for a reader's next request.
    Anticipatory,
    /// 2.6.18 deadline: sector-sorted batches with read and write FIFO deadlines.
    Deadline,
    /// deadline as RHEL 5.5 (2.6.18-194.el5) and later shipped it (`deadline@2.6.18-194.el5`):
    /// each direction choice starts a full batch, at the FIFO head when there is no next.
    DeadlineRhel5_194,
    /// 2.6.18 cfq: per-process time slices by I/O priority, idling for each reader.
    Cfq,
    /// cfq as 2.6.18-92.el5 (RHEL 5.2) up to 164.el5 shipped it (`cfq@2.6.18-92.el5`).
    CfqRhel5_92,
    /// cfq as 2.6.18-194.el5 and 194.3.1.el5 shipped it (`cfq@2.6.18-194.el5`): cooperating
    /// queues, per-queue seek statistics, per-process async queues.
    CfqRhel5_194,
    /// cfq as 2.6.18-194.8.1.el5 and later shipped it (`cfq@2.6.18-194.8.1.el5`): as 194.el5,
    /// plus O_DIRECT writes in the sync queue and async queues per priority.
    CfqRhel5_194_8,
    /// 2.6.9 cfq (v1): a sector-sorted queue per process, round-robin refills, no slices or
    /// idling. Named `cfq@2.6.9`; a bare `cfq` on a 2.6.9 host selects it.
    CfqV1,
    /// 6.17 blk-mq without a scheduler: arrival order, bio merges only.
    None,
    /// RHEL 3's 2.4.21 elevator (`elevator_linus@2.4.21-27.EL`): one sorted list, latency
    /// budgets, a one-hit cache and the read bomb. A bare `elevator_linus` selects it.
    ElevatorLinus,
    /// Vanilla 2.4.21's elevator (`elevator_linus@2.4.21`): no cache, no scan aging, no bomb.
    ElevatorLinusVanilla,
    /// 6.17 mq-deadline: deadline batches per I/O priority level, with priority aging.
    MqDeadline,
    /// 6.12 bfq: per-process budgets shared by weight (B-WF2Q+), idling, low-latency raising.
    Bfq,
    /// 6.17 kyber: per-domain token limits self-tuned to read and write latency targets.
    Kyber,
}

impl SchedulerKind {
    /// Every registered scheduler, in the order `elevator list` prints them: the 2.6 set in
    /// the order 2.6.18 lists them in sysfs, then the blk-mq set.
    pub const ALL: &'static [SchedulerKind] = &[
        SchedulerKind::Noop,
        SchedulerKind::NoopV1,
        SchedulerKind::Anticipatory,
        SchedulerKind::Deadline,
        SchedulerKind::DeadlineRhel5_194,
        SchedulerKind::Cfq,
        SchedulerKind::CfqV1,
        SchedulerKind::CfqRhel5_92,
        SchedulerKind::CfqRhel5_194,
        SchedulerKind::CfqRhel5_194_8,
        SchedulerKind::ElevatorLinus,
        SchedulerKind::ElevatorLinusVanilla,
        SchedulerKind::None,
        SchedulerKind::MqDeadline,
        SchedulerKind::Bfq,
        SchedulerKind::Kyber,
    ];

    /// The 2.6 set that the classic study compared: every [`BlockLayer::Legacy`] entry of a 2.6
    /// kernel that a bare name selects (a 2.6.9 host turns `cfq` into [`SchedulerKind::CfqV1`]
    /// itself); 2.4's one elevator is not among them.
    pub const LEGACY: &'static [SchedulerKind] = &[
        SchedulerKind::Noop,
        SchedulerKind::Anticipatory,
        SchedulerKind::Deadline,
        SchedulerKind::Cfq,
    ];

    /// The blk-mq set: the schedulers a current (5.0 and later) kernel offers; every
    /// [`BlockLayer::BlkMq`] entry.
    pub const MODERN: &'static [SchedulerKind] =
        &[SchedulerKind::None, SchedulerKind::MqDeadline, SchedulerKind::Bfq, SchedulerKind::Kyber];

    /// What `sim`, `run` and `compare` use when no `-s` is given: cfq, 2.6.18's
    /// `CONFIG_DEFAULT_IOSCHED`.
    pub const DEFAULT: SchedulerKind = SchedulerKind::Cfq;

    /// The registry entry: every fact about the scheduler besides its code.
    pub const fn registration(self) -> &'static Registration {
        // One entry per scheduler. The match is exhaustive, and every field of an entry is
        // required, so a new scheduler without (say) its CPU cost does not compile.
        //
        // `cpu_cost`: the CPU time the scheduler adds to a request (insert, merge lookups,
        // dispatch and completion) on a 2005 processor: estimates scaled from the per-request
        // costs measured by `cargo bench --bench per_request` (noop cheapest, cfq dearest) to
        // a processor about five times slower than today's, rounded.
        match self {
            SchedulerKind::Noop => {
                const {
                    &Registration {
                        name: noop::NAME,
                        spec_name: noop::NAME,
                        aliases: &[],
                        kernel_aliases: &[],
                        kernel_version: "2.6.18",
                        block_layer: BlockLayer::Legacy,
                        successor: Some(SchedulerKind::None),
                        summary: noop::SUMMARY,
                        tunables: noop::TUNABLES,
                        cpu_cost: Duration::from_nanos(300),
                        build: || Box::new(noop::Noop::new()),
                    }
                }
            }
            SchedulerKind::Anticipatory => {
                const {
                    &Registration {
                        name: anticipatory::NAME,
                        spec_name: anticipatory::NAME,
                        aliases: &["as"],
                        kernel_aliases: &[],
                        kernel_version: "2.6.18",
                        block_layer: BlockLayer::Legacy,
                        // bfq took over anticipation (idling for a process's next request).
                        successor: Some(SchedulerKind::Bfq),
                        summary: anticipatory::SUMMARY,
                        tunables: anticipatory::TUNABLES,
                        cpu_cost: Duration::from_nanos(1_500),
                        build: || Box::new(anticipatory::Anticipatory::new()),
                    }
                }
            }
            SchedulerKind::NoopV1 => {
                const {
                    &Registration {
                        name: noop::NAME,
                        spec_name: "noop@2.6.9",
                        aliases: &[],
                        kernel_aliases: &[],
                        kernel_version: "2.6.9",
                        block_layer: BlockLayer::Legacy,
                        successor: Some(SchedulerKind::None),
                        summary: noop_v1::SUMMARY,
                        tunables: noop::TUNABLES,
                        // The list scan is the core's two index lookups: taken as 2.6.18
                        // noop's cost (an estimate, not measured).
                        cpu_cost: Duration::from_nanos(300),
                        build: noop_v1::build,
                    }
                }
            }
            SchedulerKind::Deadline => {
                const {
                    &Registration {
                        name: deadline::NAME,
                        spec_name: deadline::NAME,
                        aliases: &[],
                        kernel_aliases: &[],
                        kernel_version: "2.6.18",
                        block_layer: BlockLayer::Legacy,
                        successor: Some(SchedulerKind::MqDeadline),
                        summary: deadline::SUMMARY,
                        tunables: deadline::TUNABLES,
                        cpu_cost: Duration::from_nanos(700),
                        build: || Box::new(deadline::Deadline::new()),
                    }
                }
            }
            SchedulerKind::DeadlineRhel5_194 => {
                const {
                    &Registration {
                        name: deadline::NAME,
                        spec_name: "deadline@2.6.18-194.el5",
                        aliases: &[],
                        kernel_aliases: &[],
                        kernel_version: "2.6.18-194.el5",
                        block_layer: BlockLayer::Legacy,
                        successor: Some(SchedulerKind::MqDeadline),
                        summary: "deadline as RHEL 5.5+ (2.6.18-194.el5 on) shipped it: every \
                                  direction choice starts a full batch, at the FIFO head if no next",
                        tunables: deadline::TUNABLES,
                        // The same structures and work per request as vanilla deadline.
                        cpu_cost: Duration::from_nanos(700),
                        build: || {
                            Box::new(deadline::Deadline::with_profile(deadline::Profile::RHEL5_194))
                        },
                    }
                }
            }
            SchedulerKind::Cfq => {
                const {
                    &Registration {
                        name: cfq::NAME,
                        spec_name: cfq::NAME,
                        aliases: &[],
                        kernel_aliases: &[],
                        kernel_version: "2.6.18",
                        block_layer: BlockLayer::Legacy,
                        successor: Some(SchedulerKind::Bfq),
                        summary: cfq::SUMMARY,
                        tunables: cfq::TUNABLES,
                        cpu_cost: Duration::from_nanos(1_700),
                        build: || Box::new(cfq::Cfq::new()),
                    }
                }
            }
            // The RHEL 5 cfq profiles: the same module and tunables, and vanilla cfq's CPU cost
            // (not measured separately; the cooperator search adds a scan of the busy queues
            // only when the active queue runs dry).
            SchedulerKind::CfqRhel5_92 => {
                const {
                    &Registration {
                        name: cfq::NAME,
                        spec_name: "cfq@2.6.18-92.el5",
                        aliases: &[],
                        kernel_aliases: &[],
                        kernel_version: "2.6.18-92.el5",
                        block_layer: BlockLayer::Legacy,
                        successor: Some(SchedulerKind::Bfq),
                        summary: "cfq as RHEL 5.2-5.4 (2.6.18-92.el5 to 164.el5) shipped it: a \
                                  completion kicks the queue only when the driver is empty",
                        tunables: cfq::TUNABLES,
                        cpu_cost: Duration::from_nanos(1_700),
                        build: || Box::new(cfq::Cfq::with_profile(cfq::Profile::RHEL5_92)),
                    }
                }
            }
            SchedulerKind::CfqRhel5_194 => {
                const {
                    &Registration {
                        name: cfq::NAME,
                        spec_name: "cfq@2.6.18-194.el5",
                        aliases: &[],
                        kernel_aliases: &[],
                        kernel_version: "2.6.18-194.el5",
                        block_layer: BlockLayer::Legacy,
                        successor: Some(SchedulerKind::Bfq),
                        summary: "cfq as RHEL 5.5 GA (2.6.18-194.el5, 194.3.1) shipped it: \
                                  cooperating queues merge, per-queue seek statistics, async \
                                  queue per process",
                        tunables: cfq::TUNABLES,
                        cpu_cost: Duration::from_nanos(1_700),
                        build: || Box::new(cfq::Cfq::with_profile(cfq::Profile::RHEL5_194)),
                    }
                }
            }
            SchedulerKind::CfqRhel5_194_8 => {
                const {
                    &Registration {
                        name: cfq::NAME,
                        spec_name: "cfq@2.6.18-194.8.1.el5",
                        aliases: &[],
                        kernel_aliases: &[],
                        kernel_version: "2.6.18-194.8.1.el5",
                        block_layer: BlockLayer::Legacy,
                        successor: Some(SchedulerKind::Bfq),
                        summary: "cfq as RHEL 5.5 from 2.6.18-194.8.1.el5 shipped it: as \
                                  194.el5, O_DIRECT writes sync, async queues per priority",
                        tunables: cfq::TUNABLES,
                        cpu_cost: Duration::from_nanos(1_700),
                        build: || Box::new(cfq::Cfq::with_profile(cfq::Profile::RHEL5_194_8)),
                    }
                }
            }
            SchedulerKind::CfqV1 => {
                const {
                    &Registration {
                        name: cfq_v1::NAME,
                        spec_name: "cfq@2.6.9",
                        aliases: &[],
                        kernel_aliases: &[],
                        kernel_version: "2.6.9",
                        block_layer: BlockLayer::Legacy,
                        successor: Some(SchedulerKind::Bfq),
                        summary: cfq_v1::SUMMARY,
                        tunables: cfq_v1::TUNABLES,
                        // Not measured: a sector tree per process and no timers, so taken as
                        // deadline's cost (a stated estimate, between noop's and 2.6.18 cfq's).
                        cpu_cost: Duration::from_nanos(700),
                        build: || Box::new(cfq_v1::CfqV1::new()),
                    }
                }
            }
            // 2.4 has one elevator; its nearest blk-mq relative is mq-deadline (a sorted sweep
            // with a bound on how long a read or write waits, reads favoured 4:1).
            SchedulerKind::ElevatorLinus => {
                const {
                    &Registration {
                        name: linus::NAME,
                        spec_name: linus::NAME,
                        aliases: &[],
                        kernel_aliases: &[],
                        kernel_version: "2.4.21-27.EL",
                        block_layer: BlockLayer::Legacy,
                        successor: Some(SchedulerKind::MqDeadline),
                        summary: linus::SUMMARY,
                        tunables: linus::TUNABLES,
                        // Not measured: a list scan per bh, no timers; taken as deadline's cost
                        // (an estimate between noop's and cfq's).
                        cpu_cost: Duration::from_nanos(700),
                        build: || Box::new(linus::Linus::with_profile(linus::Profile::RHEL3)),
                    }
                }
            }
            SchedulerKind::ElevatorLinusVanilla => {
                const {
                    &Registration {
                        name: linus::NAME,
                        spec_name: "elevator_linus@2.4.21",
                        aliases: &[],
                        kernel_aliases: &[],
                        kernel_version: "2.4.21",
                        block_layer: BlockLayer::Legacy,
                        successor: Some(SchedulerKind::MqDeadline),
                        summary: "2.4.21's elevator as kernel.org shipped it: no one-hit cache, \
                                  no scan aging, no read bomb",
                        tunables: linus::TUNABLES_VANILLA,
                        cpu_cost: Duration::from_nanos(700),
                        build: || Box::new(linus::Linus::with_profile(linus::Profile::VANILLA)),
                    }
                }
            }
            SchedulerKind::None => {
                const {
                    &Registration {
                        name: none::NAME,
                        spec_name: none::NAME,
                        aliases: &[],
                        kernel_aliases: &[],
                        kernel_version: "6.17",
                        block_layer: BlockLayer::BlkMq,
                        successor: None,
                        summary: none::SUMMARY,
                        tunables: none::TUNABLES,
                        cpu_cost: Duration::from_nanos(300),
                        build: || Box::new(none::NoneScheduler::new()),
                    }
                }
            }
            SchedulerKind::MqDeadline => {
                const {
                    &Registration {
                        name: mq_deadline::NAME,
                        spec_name: mq_deadline::NAME,
                        aliases: &[],
                        // The kernel registers `deadline` as mq-deadline's alias; here that name
                        // is the 2.6.18 scheduler's, so only the kernel driver honours it.
                        kernel_aliases: &["deadline"],
                        kernel_version: "6.17",
                        block_layer: BlockLayer::BlkMq,
                        successor: None,
                        summary: mq_deadline::SUMMARY,
                        tunables: mq_deadline::TUNABLES,
                        cpu_cost: Duration::from_nanos(700),
                        build: || Box::new(mq_deadline::MqDeadline::new()),
                    }
                }
            }
            SchedulerKind::Bfq => {
                const {
                    &Registration {
                        name: bfq::NAME,
                        spec_name: bfq::NAME,
                        aliases: &[],
                        kernel_aliases: &[],
                        kernel_version: "6.12",
                        block_layer: BlockLayer::BlkMq,
                        successor: None,
                        summary: bfq::SUMMARY,
                        tunables: bfq::TUNABLES,
                        cpu_cost: Duration::from_nanos(1_700),
                        build: || Box::new(bfq::Bfq::new()),
                    }
                }
            }
            SchedulerKind::Kyber => {
                const {
                    &Registration {
                        name: kyber::NAME,
                        spec_name: kyber::NAME,
                        aliases: &[],
                        kernel_aliases: &[],
                        kernel_version: "6.17",
                        block_layer: BlockLayer::BlkMq,
                        successor: None,
                        summary: kyber::SUMMARY,
                        tunables: kyber::TUNABLES,
                        cpu_cost: Duration::from_nanos(900),
                        build: || Box::new(kyber::Kyber::new()),
                    }
                }
            }
        }
    }

    /// The kernel's name, as `/sys/block/DEV/queue/scheduler` prints it.
    pub const fn name(self) -> &'static str {
        self.registration().name
    }

    /// Other names the kernel accepted for it (boot parameter or sysfs) that name it here too.
    /// The kernel's `deadline` alias of mq-deadline is left out: `deadline` names the 2.6.18
    /// scheduler here (see [`kernel_aliases`](SchedulerKind::kernel_aliases)).
    pub const fn aliases(self) -> &'static [&'static str] {
        self.registration().aliases
    }

    /// Names a running kernel also accepts for it that elevator gives to another scheduler.
    pub const fn kernel_aliases(self) -> &'static [&'static str] {
        self.registration().kernel_aliases
    }

    /// The kernel version whose behaviour the module reproduces.
    pub const fn kernel_version(self) -> &'static str {
        self.registration().kernel_version
    }

    /// The block layer it belongs to.
    pub const fn block_layer(self) -> BlockLayer {
        self.registration().block_layer
    }

    /// For a legacy scheduler, the blk-mq scheduler nearest to it on a current kernel.
    pub const fn successor(self) -> Option<SchedulerKind> {
        self.registration().successor
    }

    /// One line on what it does.
    pub const fn summary(self) -> &'static str {
        self.registration().summary
    }

    /// Whether a spec's out-of-range value is clamped into range as the kernel's sysfs store
    /// clamps it (the 2.6.18 schedulers), rather than refused (see the crate's "Out-of-range
    /// tunables").
    pub const fn clamps_tunables(self) -> bool {
        SysfsNumber::of(self).is_some()
    }

    /// Its tunables, in sysfs order.
    pub const fn tunables(self) -> &'static [TunableSpec] {
        self.registration().tunables
    }

    /// The simulated CPU time it adds to each request, on the simulator's 2005 processor.
    pub const fn cpu_cost(self) -> Duration {
        self.registration().cpu_cost
    }

    /// A new instance with the kernel's defaults.
    pub fn build(self) -> Box<dyn Scheduler> {
        (self.registration().build)()
    }

    /// How a spec names it without ambiguity: the kernel name, or `name@version` for an
    /// older version of a scheduler whose bare name selects a newer one (`cfq@2.6.9`).
    pub const fn spec_name(self) -> &'static str {
        self.registration().spec_name
    }

    /// Whether a bare name selects it (it is the newest version of its name here).
    pub fn is_current(self) -> bool {
        self.spec_name() == self.name()
    }

    /// The scheduler a bare `name` (kernel name or alias) selects: the newest version.
    pub fn from_name(name: &str) -> Option<SchedulerKind> {
        SchedulerKind::ALL.iter().copied().find(|kind| kind.is_current() && kind.answers_to(name))
    }

    /// The version of the scheduler called `name` that follows kernel `version`: the entry
    /// registered for exactly that version (`cfq@2.6.9`, `cfq@2.6.18-194.el5`), else the one a
    /// host running that release has ([`for_kernel`](SchedulerKind::for_kernel): `cfq@rhel4`,
    /// `cfq@2.6.18`, `cfq@rhel5.5` = `cfq@2.6.18-194.11.4.el5` = `cfq@2.6.18-194.8.1.el5`).
    pub fn from_versioned_name(name: &str, version: &str) -> Option<SchedulerKind> {
        let named = || SchedulerKind::ALL.iter().copied().filter(|kind| kind.answers_to(name));
        if let Some(kind) = named().find(|kind| kind.kernel_version() == version) {
            return Some(kind);
        }
        let kernel = KernelVersion::parse(version)?;
        let current = named().find(|kind| kind.is_current())?;
        let kind = current.for_kernel(kernel);
        // A scheduler with no version for that kernel's base has none for the kernel.
        let follows = |kind: SchedulerKind| {
            KernelVersion::parse(kind.kernel_version())
                .is_some_and(|version| version.base() == kernel.base())
        };
        follows(kind).then_some(kind)
    }

    /// The version of this scheduler that a host running `kernel` has: the entry of the same
    /// name registered for that release or the newest earlier build of the same mainline
    /// version (a RHEL 5 build runs the profile of the last build before it that changed the
    /// scheduler: `cfq` on 2.6.18-194.11.4.el5 is `cfq@2.6.18-194.8.1.el5`), else the entry that
    /// follows `kernel`'s mainline version, else this one (§4.4: a 2.6.9 host's `cfq` is cfq
    /// v1; its other schedulers are modelled by their 2.6.18 versions).
    pub fn for_kernel(self, kernel: KernelVersion) -> SchedulerKind {
        let base = kernel.base();
        let same_name =
            || SchedulerKind::ALL.iter().copied().filter(|kind| kind.name() == self.name());
        // Releases sort in build order within a base (`KernelVersion`'s order), so the newest
        // registered release not after `kernel` is the profile it runs.
        let build = same_name()
            .filter_map(|kind| {
                KernelVersion::parse(kind.kernel_version()).map(|version| (version, kind))
            })
            .filter(|&(version, _)| version.base() == base && version.is_rhel() == kernel.is_rhel())
            .filter(|&(version, _)| version <= kernel)
            .max_by_key(|&(version, _)| version)
            .map(|(_, kind)| kind);
        build
            .or_else(|| {
                same_name().find(|kind| {
                    KernelVersion::parse(kind.kernel_version())
                        .is_some_and(|version| version.base() == base && !version.is_rhel())
                })
            })
            .unwrap_or(self)
    }

    /// The kernel line its version belongs to (2.4.21, 2.6.9, 2.6.18); `None` for the blk-mq
    /// set, which follows current kernels.
    pub fn kernel_base(self) -> Option<KernelBase> {
        KernelVersion::parse(self.kernel_version()).map(KernelVersion::base)
    }

    /// Whether a host running `kernel` can run it. A 2.4 kernel has one elevator and no way to
    /// choose another (linux-2.4-elevator.md §3.7), so it runs only `elevator_linus`. A 2.6
    /// host runs every entry: `elevator_linus` there is the 2.4 algorithm on a 2.6 queue (see
    /// the `linus` module), kept so that `elevator sim`, the sweep and `compare --all` cover
    /// every registered scheduler.
    pub fn runs_on(self, kernel: KernelVersion) -> bool {
        kernel.base() != KernelBase::V2_4_21 || self.kernel_base() == Some(KernelBase::V2_4_21)
    }

    fn answers_to(self, name: &str) -> bool {
        self.name() == name || self.aliases().contains(&name)
    }

    /// Every accepted name, for messages: bare names, then each older version's `name@version`.
    pub fn accepted_names() -> Vec<&'static str> {
        let current = SchedulerKind::ALL.iter().filter(|kind| kind.is_current());
        let older = SchedulerKind::ALL.iter().filter(|kind| !kind.is_current());
        current
            .flat_map(|kind| std::iter::once(kind.name()).chain(kind.aliases().iter().copied()))
            .chain(older.map(|kind| kind.spec_name()))
            .collect()
    }
}

impl fmt::Display for SchedulerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A registry entry: what [`SchedulerKind`]'s accessors answer for one scheduler.
#[derive(Clone, Copy, Debug)]
pub struct Registration {
    /// The kernel's name.
    pub name: &'static str,
    /// The name a spec gives it: `name`, or `name@version` for an older version of a
    /// scheduler (see [`SchedulerKind::spec_name`]).
    pub spec_name: &'static str,
    /// Other names it answers to, here and in the kernel.
    pub aliases: &'static [&'static str],
    /// Names only the kernel gives it (elevator uses them for another scheduler).
    pub kernel_aliases: &'static [&'static str],
    /// The kernel version the module follows (its header says which files).
    pub kernel_version: &'static str,
    /// Legacy (2.6) or blk-mq.
    pub block_layer: BlockLayer,
    /// For a legacy scheduler, the nearest blk-mq scheduler.
    pub successor: Option<SchedulerKind>,
    /// One line on what it does.
    pub summary: &'static str,
    /// Its tunables, in sysfs order.
    pub tunables: &'static [TunableSpec],
    /// Simulated CPU time per request (see [`SchedulerKind::registration`] for the source).
    pub cpu_cost: Duration,
    /// A new instance with the kernel's defaults.
    pub build: fn() -> Box<dyn Scheduler>,
}

/// Which block layer a scheduler belongs to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BlockLayer {
    /// The single-queue block layer of 2.6 (removed in Linux 5.0).
    Legacy,
    /// blk-mq, the only block layer since Linux 5.0.
    BlkMq,
}

/// The sysfs `scheduler` line: every registered scheduler, `current` in brackets (a kernel
/// lists one version of each name).
pub fn sysfs_line(current: SchedulerKind) -> String {
    let shown = if current.is_current() {
        current
    } else {
        SchedulerKind::from_name(current.name()).unwrap_or(current)
    };
    // 2.4 has no sysfs and no choice of elevator: its one is not on the line.
    SchedulerKind::ALL
        .iter()
        .filter(|kind| kind.is_current() && kind.kernel_base() != Some(KernelBase::V2_4_21))
        .map(|&kind| if kind == shown { format!("[{kind}]") } else { kind.to_string() })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A scheduler with tunables, as written on the command line: `cfq:slice_idle=0,quantum=8`.
/// `NAME@VERSION` names one kernel version of a scheduler (`cfq@2.6.9`, `cfq@2.6.18`); a bare
/// name lets the host's kernel pick the version ([`SchedulerSpec::for_kernel`]). Two specs are
/// equal when they run the same scheduler with the same values (notices aside).
#[derive(Clone, Debug)]
pub struct SchedulerSpec {
    kind: SchedulerKind,
    /// Tunables that differ from the defaults, in the order given, in each tunable's unit.
    settings: Vec<(&'static str, i64)>,
    /// Whether the version is fixed (named with `@`, or chosen for a host's kernel).
    pinned: bool,
    /// Values the kernel's sysfs would have clamped, as parsed.
    notices: Vec<TunableClamp>,
}

impl PartialEq for SchedulerSpec {
    fn eq(&self, other: &SchedulerSpec) -> bool {
        (self.kind, &self.settings, self.pinned) == (other.kind, &other.settings, other.pinned)
    }
}

impl Eq for SchedulerSpec {}

/// A tunable value outside its range that was clamped as the scheduler's sysfs store function
/// clamps it (see the crate's "Out-of-range tunables").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TunableClamp {
    /// The scheduler's spec name.
    pub scheduler: &'static str,
    /// The tunable.
    pub name: &'static str,
    /// The value as written.
    pub given: String,
    /// The value used, in the tunable's unit.
    pub used: i64,
    /// The tunable's range.
    pub min: i64,
    /// The tunable's range.
    pub max: i64,
}

impl fmt::Display for TunableClamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "scheduler {}: {}={} is outside {}..={}; clamped as sysfs does, using {}={}",
            self.scheduler, self.name, self.given, self.min, self.max, self.name, self.used
        )
    }
}

/// How a legacy scheduler's sysfs store function reads a number before clamping it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SysfsNumber {
    /// `simple_strtol` into an `int` (2.6.18 deadline).
    SignedInt,
    /// `simple_strtoul` into an `unsigned long` (2.6.18 anticipatory).
    UnsignedLong,
    /// `simple_strtoul` into an `unsigned int` (2.6.18 cfq).
    UnsignedInt,
}

impl SysfsNumber {
    /// The store rule of `kind`, if it clamps (see the crate's "Out-of-range tunables").
    const fn of(kind: SchedulerKind) -> Option<SysfsNumber> {
        match kind {
            SchedulerKind::Deadline => Some(SysfsNumber::SignedInt),
            SchedulerKind::Anticipatory => Some(SysfsNumber::UnsignedLong),
            SchedulerKind::Cfq => Some(SysfsNumber::UnsignedInt),
            _ => None,
        }
    }

    /// The value `text` stores, clamped to `spec`'s range.
    fn store(self, spec: &TunableSpec, text: &str) -> Result<i64, TunableError> {
        let trimmed = text.trim();
        let read = match trimmed.strip_prefix('-') {
            // `simple_strtol` negates what follows the sign.
            Some(rest) if self == SysfsNumber::SignedInt => -i128::from(spec.parse_number(rest)?),
            // `simple_strtoul` reads no sign: no digits, so 0.
            Some(_) => 0,
            None => i128::from(spec.parse_number(trimmed)?),
        };
        let stored = match self {
            // The `long` is assigned to an `int`: its low 32 bits.
            SysfsNumber::SignedInt => i128::from(read as i32),
            SysfsNumber::UnsignedLong => read,
            SysfsNumber::UnsignedInt => i128::from(read as u32),
        };
        let used = stored.clamp(i128::from(spec.min), i128::from(spec.max));
        Ok(i64::try_from(used).expect("clamped into an i64 range"))
    }
}

/// A scheduler spec that names no scheduler, or sets a tunable it does not have or to a value
/// it does not accept.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SchedSpecError {
    /// The text is not `NAME[:key=value,...]`.
    #[error(transparent)]
    Shape(#[from] SpecError),
    /// No version of that scheduler follows the kernel named.
    #[error("scheduler `{name}` has no version for kernel `{version}` (versions: {})", versions.join(", "))]
    UnknownVersion {
        /// The name as given.
        name: String,
        /// The version as given.
        version: String,
        /// The kernel versions registered under that name.
        versions: Vec<&'static str>,
    },
    /// A 2.4 host runs only its one elevator.
    #[error(
        "scheduler `{spec}` is not in kernel {kernel}: 2.4 has one elevator, `elevator_linus`, \
         and no way to choose another (linux-2.4-elevator.md §3.7)"
    )]
    NotInKernel {
        /// The spec as given.
        spec: String,
        /// The host's kernel.
        kernel: KernelVersion,
    },
    /// No scheduler of that name.
    #[error("unknown scheduler `{name}` (accepted: {})", accepted.join(", "))]
    UnknownScheduler {
        /// The name as given.
        name: String,
        /// Every accepted name.
        accepted: Vec<&'static str>,
    },
    /// A tunable the scheduler lacks, or a value it does not accept.
    #[error("scheduler spec `{text}`: {problem}")]
    Tunable {
        /// The whole spec as given.
        text: String,
        /// What was wrong. (Not a `source`: the message already includes it.)
        problem: TunableError,
    },
}

impl SchedulerSpec {
    /// The scheduler with its defaults.
    pub fn new(kind: SchedulerKind) -> SchedulerSpec {
        SchedulerSpec {
            kind,
            settings: Vec::new(),
            pinned: !kind.is_current(),
            notices: Vec::new(),
        }
    }

    /// Parses `NAME[@VERSION][:key=value,...]`.
    pub fn parse(text: &str) -> Result<SchedulerSpec, SchedSpecError> {
        // The version is cut off the name before the generic parser, whose names are plain.
        let head_end = text.find(':').unwrap_or(text.len());
        let (unversioned, version) = match text[..head_end].split_once('@') {
            Some((name, version)) => {
                (format!("{name}{}", &text[head_end..]), Some(version.trim().to_owned()))
            }
            None => (text.to_owned(), None),
        };
        let spec = ComponentSpec::parse("scheduler", &unversioned)?;
        let kind = match &version {
            None => SchedulerKind::from_name(&spec.name),
            Some(version) => SchedulerKind::from_versioned_name(&spec.name, version),
        };
        let kind = kind.ok_or_else(|| match (&version, SchedulerKind::from_name(&spec.name)) {
            (Some(version), Some(_)) => SchedSpecError::UnknownVersion {
                name: spec.name.clone(),
                version: version.clone(),
                versions: SchedulerKind::ALL
                    .iter()
                    .filter(|kind| kind.answers_to(&spec.name))
                    .map(|kind| kind.kernel_version())
                    .collect(),
            },
            _ => SchedSpecError::UnknownScheduler {
                name: spec.name.clone(),
                accepted: SchedulerKind::accepted_names(),
            },
        })?;
        let mut settings = Vec::with_capacity(spec.params.len());
        let mut notices = Vec::new();
        for param in &spec.params {
            let setting = tunable::find(kind.tunables(), kind.name(), &param.key)
                .and_then(|tunable| {
                    let value = match SysfsNumber::of(kind) {
                        Some(rule) => rule.store(tunable, &param.value)?,
                        None => tunable.parse(&param.value)?,
                    };
                    if tunable.check(value).is_ok() && tunable.parse(&param.value) != Ok(value) {
                        notices.push(TunableClamp {
                            scheduler: kind.spec_name(),
                            name: tunable.name,
                            given: param.value.trim().to_owned(),
                            used: value,
                            min: tunable.min,
                            max: tunable.max,
                        });
                    }
                    Ok((tunable.name, value))
                })
                .map_err(|problem| SchedSpecError::Tunable { text: text.to_owned(), problem })?;
            settings.push(setting);
        }
        Ok(SchedulerSpec {
            kind,
            settings,
            pinned: version.is_some() || !kind.is_current(),
            notices,
        })
    }

    /// The values that were out of range and clamped as the kernel's sysfs clamps them, one
    /// notice each (the CLI prints them on stderr).
    pub fn notices(&self) -> &[TunableClamp] {
        &self.notices
    }

    /// The spec a host running `kernel` runs: a bare name becomes the version of that
    /// scheduler the kernel has (`cfq` on a 2.6.9 host is cfq v1, §4.4), with the same
    /// tunables, which must exist in that version; a versioned spec stays as it is.
    pub fn for_kernel(&self, kernel: KernelVersion) -> Result<SchedulerSpec, SchedSpecError> {
        if !self.kind.runs_on(kernel) {
            return Err(SchedSpecError::NotInKernel { spec: self.to_string(), kernel });
        }
        let kind = self.kind.for_kernel(kernel);
        if self.pinned || kind == self.kind {
            return Ok(self.clone());
        }
        for &(name, value) in &self.settings {
            crate::checked(kind.tunables(), kind.spec_name(), name, value).map_err(|problem| {
                SchedSpecError::Tunable { text: format!("{self} on kernel {kernel}"), problem }
            })?;
        }
        Ok(SchedulerSpec {
            kind,
            settings: self.settings.clone(),
            pinned: true,
            notices: self.notices.clone(),
        })
    }

    /// Which scheduler.
    pub fn kind(&self) -> SchedulerKind {
        self.kind
    }

    /// The tunables set away from their defaults, in each tunable's unit.
    pub fn settings(&self) -> &[(&'static str, i64)] {
        &self.settings
    }

    /// Every tunable with its resolved value (defaults filled in), in sysfs order.
    pub fn resolved(&self) -> Vec<(&'static str, i64)> {
        self.kind
            .tunables()
            .iter()
            .map(|tunable| {
                let value = self
                    .settings
                    .iter()
                    .rev()
                    .find(|(name, _)| *name == tunable.name)
                    .map_or(tunable.default, |&(_, value)| value);
                (tunable.name, value)
            })
            .collect()
    }

    /// A new scheduler instance configured as specified.
    pub fn build(&self) -> Box<dyn Scheduler> {
        let mut scheduler = self.kind.build();
        for &(name, value) in &self.settings {
            // Names and ranges were checked by `parse` against the same table.
            scheduler
                .set_tunable(name, value)
                .unwrap_or_else(|error| panic!("checked tunable rejected: {error}"));
        }
        scheduler
    }
}

impl fmt::Display for SchedulerSpec {
    /// The canonical form, `name:key=value,...` with values in each tunable's unit.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kind.is_current() && self.pinned {
            write!(f, "{}@{}", self.kind.name(), self.kind.kernel_version())?;
        } else {
            f.write_str(self.kind.spec_name())?;
        }
        for (index, (name, value)) in self.settings.iter().enumerate() {
            let separator = if index == 0 { ':' } else { ',' };
            write!(f, "{separator}{name}={value}")?;
        }
        Ok(())
    }
}

/// Looks `name` up in `specs` and checks `value` against it: the first half of every
/// scheduler's `set_tunable`.
pub(crate) fn checked<'a>(
    specs: &'a [TunableSpec],
    owner: &str,
    name: &str,
    value: i64,
) -> Result<&'a TunableSpec, TunableError> {
    let spec = tunable::find(specs, owner, name)?;
    spec.check(value)?;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves unknown names, keys and values produce errors that list what is accepted.
    #[test]
    fn bad_specs_say_what_is_accepted() {
        let message = |text| SchedulerSpec::parse(text).unwrap_err().to_string();
        assert_eq!(
            message("cfqq"),
            "unknown scheduler `cfqq` (accepted: noop, anticipatory, as, deadline, cfq, \
             elevator_linus, none, mq-deadline, bfq, kyber, noop@2.6.9, deadline@2.6.18-194.el5, \
             cfq@2.6.9, cfq@2.6.18-92.el5, cfq@2.6.18-194.el5, cfq@2.6.18-194.8.1.el5, \
             elevator_linus@2.4.21)"
        );
        assert_eq!(
            message("deadline:read_expiry=5"),
            "scheduler spec `deadline:read_expiry=5`: deadline has no tunable `read_expiry` \
             (accepted: read_expire, write_expire, writes_starved, fifo_batch, front_merges)"
        );
        assert_eq!(
            message("deadline:front_merges=maybe"),
            "scheduler spec `deadline:front_merges=maybe`: front_merges: `maybe` is not 0 or 1 \
             (expected 0 or 1 (or true/false, on/off))"
        );
        // The blk-mq set still refuses out-of-range values.
        assert!(message("mq-deadline:fifo_batch=3000000000").contains("accepted: 0..=2147483647"));
        assert!(message("noop:x=1").ends_with("noop has no tunable `x` (it has no tunables)"));
    }

    // Proves row 21: out-of-range values of the 2.6.18 schedulers are clamped as each file's
    // STORE_FUNCTION does, after its parse: deadline's `simple_strtol` into an int (a sign,
    // then the low 32 bits: 3000000000 is −1294967296, so 0), anticipatory's `simple_strtoul`
    // into an unsigned long and cfq's into an unsigned int (no sign: "-1" reads 0, so MIN;
    // 4294967297 cut to 32 bits is 1), each with a notice naming the value used; in-range
    // values carry none.
    #[test]
    fn legacy_tunables_clamp_as_sysfs_does() {
        let used = |text: &str| {
            let spec = SchedulerSpec::parse(text).unwrap();
            let notices = spec.notices().len();
            (spec.settings()[0].1, notices)
        };
        assert_eq!(used("deadline:front_merges=2"), (1, 1));
        assert_eq!(used("deadline:read_expire=-1"), (0, 1));
        assert_eq!(used("deadline:writes_starved=-1"), (-1, 0));
        assert_eq!(used("deadline:fifo_batch=3000000000"), (0, 1));
        assert_eq!(used("deadline:fifo_batch=8"), (8, 0));
        assert_eq!(used("anticipatory:antic_expire=-1"), (0, 1));
        assert_eq!(used("anticipatory:read_expire=3000000000"), (2_147_483_647, 1));
        assert_eq!(used("cfq:quantum=0"), (1, 1));
        assert_eq!(used("cfq:quantum=-1"), (1, 1));
        assert_eq!(used("cfq:slice_idle=4294967297"), (1, 1));
        assert_eq!(used("cfq:slice_idle=0"), (0, 0));
        let spec = SchedulerSpec::parse("cfq:quantum=0").unwrap();
        assert_eq!(
            spec.notices()[0].to_string(),
            "scheduler cfq: quantum=0 is outside 1..=2147483647; clamped as sysfs does, using \
             quantum=1"
        );
        assert_eq!(spec.to_string(), "cfq:quantum=1");
        assert_eq!(spec.build().tunable("quantum"), Ok(1));
        // The 2.6.9 and blk-mq schedulers keep refusing.
        assert!(SchedulerSpec::parse("cfq@2.6.9:quantum=0").is_err());
        assert!(SchedulerSpec::parse("bfq:slice_idle=-1").is_err());
    }

    #[test]
    fn specs_print_canonically_and_resolve_defaults() {
        let spec = SchedulerSpec::parse("deadline:read_expire=2s, fifo_batch=8").unwrap();
        assert_eq!(spec.to_string(), "deadline:read_expire=2000,fifo_batch=8");
        let resolved = spec.resolved();
        assert_eq!(resolved[0], ("read_expire", 2000));
        assert_eq!(resolved[1], ("write_expire", 5000));
        assert_eq!(SchedulerSpec::parse(&spec.to_string()).unwrap(), spec);
    }

    // Proves the LEGACY and MODERN lists are exactly the registry's current entries (those a
    // bare name selects) of each block layer, in `ALL`'s order, so a new entry cannot be left
    // out of (or put in) the wrong one; every entry parses back from its spec name.
    #[test]
    fn the_sets_follow_the_block_layer_of_each_entry() {
        let of = |layer| -> Vec<SchedulerKind> {
            SchedulerKind::ALL
                .iter()
                .copied()
                .filter(|kind| kind.is_current() && kind.block_layer() == layer)
                .filter(|kind| kind.kernel_base() != Some(KernelBase::V2_4_21))
                .collect()
        };
        assert_eq!(SchedulerKind::LEGACY, of(BlockLayer::Legacy));
        assert_eq!(SchedulerKind::MODERN, of(BlockLayer::BlkMq));
        for &kind in SchedulerKind::ALL {
            // Only a legacy scheduler has a successor, and it is a blk-mq one.
            let successor_layer = kind.successor().map(SchedulerKind::block_layer);
            match kind.block_layer() {
                BlockLayer::Legacy => assert_eq!(successor_layer, Some(BlockLayer::BlkMq)),
                BlockLayer::BlkMq => assert_eq!(successor_layer, None, "{kind}"),
            }
            if kind.is_current() {
                assert_eq!(SchedulerKind::from_name(kind.name()), Some(kind));
            }
            assert_eq!(SchedulerSpec::parse(kind.spec_name()).map(|spec| spec.kind()), Ok(kind));
            assert_eq!(kind.build().name(), kind.name());
        }
    }

    // Proves each entry's kernel version is the one its module's header says it follows.
    #[test]
    fn versions_match_the_module_headers() {
        for &kind in SchedulerKind::ALL {
            let source = match kind {
                SchedulerKind::Noop => include_str!("noop.rs"),
                SchedulerKind::NoopV1 => include_str!("noop_v1.rs"),
                SchedulerKind::Anticipatory => include_str!("anticipatory.rs"),
                SchedulerKind::Deadline | SchedulerKind::DeadlineRhel5_194 => {
                    include_str!("deadline.rs")
                }
                SchedulerKind::Cfq
                | SchedulerKind::CfqRhel5_92
                | SchedulerKind::CfqRhel5_194
                | SchedulerKind::CfqRhel5_194_8 => include_str!("cfq/mod.rs"),
                SchedulerKind::CfqV1 => include_str!("cfq_v1.rs"),
                SchedulerKind::None => include_str!("none.rs"),
                SchedulerKind::MqDeadline => include_str!("mq_deadline.rs"),
                SchedulerKind::Bfq => include_str!("bfq/mod.rs"),
                SchedulerKind::Kyber => include_str!("kyber.rs"),
                SchedulerKind::ElevatorLinus | SchedulerKind::ElevatorLinusVanilla => {
                    include_str!("linus.rs")
                }
            };
            // The header's "Follows ... Linux X.Y" sentence, within its first lines.
            let header: String = source.lines().take(8).collect::<Vec<_>>().join(" ");
            let follows = header.find("Follows").expect("the header says what it follows");
            let wanted = format!("Linux {}", kind.kernel_version());
            assert!(header[follows..].contains(&wanted), "{kind}: header lacks `{wanted}`");
        }
    }

    // Proves the CPU costs keep the order their source states: noop (and none) cheapest, cfq
    // dearest, every other scheduler in between.
    #[test]
    fn cpu_costs_keep_the_measured_order() {
        let cheapest = SchedulerKind::Noop.cpu_cost();
        let dearest = SchedulerKind::Cfq.cpu_cost();
        for &kind in SchedulerKind::ALL {
            let cost = kind.cpu_cost();
            assert!(cheapest <= cost && cost <= dearest, "{kind}: {cost:?}");
        }
        assert!(cheapest < dearest);
    }

    #[test]
    fn the_sysfs_line_brackets_the_current_scheduler() {
        assert_eq!(
            sysfs_line(SchedulerKind::Deadline),
            "noop anticipatory [deadline] cfq none mq-deadline bfq kyber"
        );
        assert_eq!(
            sysfs_line(SchedulerKind::DEFAULT),
            "noop anticipatory deadline [cfq] none mq-deadline bfq kyber"
        );
        assert_eq!(
            sysfs_line(SchedulerKind::MqDeadline),
            "noop anticipatory deadline cfq none [mq-deadline] bfq kyber"
        );
    }
}
