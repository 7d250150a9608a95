//! The block-request model of elevator, the [`Scheduler`] contract, and [`BlockQueue`], the one
//! block layer that the simulator, the live engine and every test drive.
//!
//! # The life of a request
//!
//! An issuer submits a [`Bio`]. The queue first tries to **merge** it into a request the
//! scheduler still holds (back or front, same operation and sync-ness, within `max_sectors_kb`,
//! never a flush or FUA). Otherwise it **allocates** a request from a pool bounded by
//! `nr_requests` — a full pool blocks the process, which is woken when a request frees — and
//! **inserts** it into the scheduler. When the device can take a request, the queue takes the
//! head of its **dispatch list**, asking the scheduler for one more only when the list is empty,
//! exactly as the 2.6 driver loop did. The device **completes** the request; the queue hands
//! back the tags of every bio it carried.
//!
//! # What a scheduler may and may not do
//!
//! A [`Scheduler`] holds [`RequestId`]s, never requests: the requests live in the queue's
//! [`RequestTable`], so the queue can check that nothing is lost or returned twice. A
//! scheduler never reads a clock ([`Ctx::now`] is the time of the call), never sleeps (it
//! returns [`Dispatch::Idle`] with the instant it wants to be asked again) and never draws a
//! random number. These three rules are what make a simulation reproducible from its seed and
//! let the same scheduler code run under simulated and real time.
//!
//! # Where the queue is stricter than Linux
//!
//! A request that overlaps an earlier outstanding request, where either writes, waits until
//! that one completes (the page cache gave the kernel's elevators this guarantee for free; a
//! user-space scheduler in front of io_uring must give it itself). See [`queue`] for the full
//! order of operations and [`check`] for the invariants.
//!
//! # Example
//!
//! ```
//! use elevator_core::{
//!     Bio, BioTag, BlockQueue, Ctx, Dispatch, ProcessId, Pull, QueueConfig, RequestId,
//!     Scheduler, Sector, Submitted, TunableError, TunableSpec,
//! };
//!
//! // The smallest scheduler: first in, first out.
//! #[derive(Debug, Default)]
//! struct Fifo(std::collections::VecDeque<RequestId>);
//!
//! impl Scheduler for Fifo {
//!     fn name(&self) -> &'static str { "fifo" }
//!     fn insert(&mut self, _cx: &Ctx<'_>, id: RequestId) { self.0.push_back(id) }
//!     fn dispatch(&mut self, _cx: &Ctx<'_>) -> Dispatch {
//!         self.0.pop_front().map_or(Dispatch::Empty, Dispatch::Issue)
//!     }
//!     fn drain(&mut self, _cx: &Ctx<'_>, out: &mut Vec<RequestId>) { out.extend(self.0.drain(..)) }
//!     fn queued(&self) -> usize { self.0.len() }
//!     fn tunables(&self) -> &'static [TunableSpec] { &[] }
//!     fn tunable(&self, name: &str) -> Result<i64, TunableError> {
//!         elevator_core::tunable::find(&[], "fifo", name).map(|_| 0)
//!     }
//!     fn set_tunable(&mut self, name: &str, _value: i64) -> Result<(), TunableError> {
//!         elevator_core::tunable::find(&[], "fifo", name).map(|_| ())
//!     }
//! }
//!
//! let mut queue = BlockQueue::new(QueueConfig::default(), Box::new(Fifo::default())).unwrap();
//! let now = elevator_core::Instant::ZERO;
//! let first = Bio::read(ProcessId(1), Sector(0), 8, BioTag(1));
//! let second = Bio::read(ProcessId(1), Sector(8), 8, BioTag(2));
//! assert!(matches!(queue.submit(now, first), Ok(Submitted::Queued { .. })));
//! // Contiguous with the first: it merges instead of taking a request of its own.
//! assert!(matches!(queue.submit(now, second), Ok(Submitted::Merged { .. })));
//! let Pull::Issue(id) = queue.next_request(now) else { panic!("nothing to issue") };
//! let mut done = Vec::new();
//! queue.complete(now, id, &mut done);
//! assert_eq!(done, [BioTag(1), BioTag(2)]);
//! elevator_core::check::check_queue(&queue).unwrap();
//! ```

#![deny(missing_docs)]
#![warn(missing_debug_implementations, unreachable_pub)]

mod bios;
pub mod check;
mod dispatch_list;
mod hazard;
mod id_map;
pub mod kernel;
pub mod list;
mod merge;
pub mod pool;
pub mod prng;
pub mod queue;
mod request;
mod scheduler;
pub mod spec;
pub mod submit;
mod table;
pub mod time;
pub mod tunable;
pub mod units;

/// A hash map for lookups only: inserted into, looked up and removed from, never iterated, so
/// its order cannot reach a result and determinism holds (and its hasher is unseeded anyway).
/// Everything iterated is a `BTreeMap`; `clippy.toml` bans the std hash types elsewhere for
/// that reason. For maps keyed per operation on hot paths, where a tree's search costs.
#[allow(clippy::disallowed_types)]
pub type LookupMap<K, V> = std::collections::HashMap<K, V, rustc_hash::FxBuildHasher>;

pub use dispatch_list::DispatchList;
pub use id_map::IdMap;
pub use kernel::{BH_SECTORS_2_4, KernelBase, KernelVersion};
pub use list::{IdList, ListLinks};
pub use pool::{POOL_WAIT_2_4, PoolSplit, batch_requests_2_4};
pub use prng::{Prng, Zipf, ZipfError};
pub use queue::{
    BlkMqQueue, BlockQueue, CompletedRequest, DriverFetch, Linux2_4Queue, Pull, QueueConfig,
    QueueConfigError, QueueStats, SubmitError, Submitted, WindowMaxima, ZoneWriteOrder,
};
pub use request::{
    Bio, BioTag, Direction, IOPRIO_LEVELS, IoClass, IoPriority, IoPriorityError, Op, ProcessId,
    Request, RequestFlags, RequestState, SECTOR_SIZE_BYTES, Sector,
};
pub use scheduler::{
    Completion, Counter, Ctx, Dispatch, DispatchInsert, MayQueue, MergeChoice, MergeKind,
    MergeLookups, Scheduler,
};
pub use spec::{
    ComponentSpec, KeyKind, KeySpec, Param, ParamError, Params, SpecError, SpecListError,
    SpecListProblem, SpecProblem, format_size, split_spec_list,
};
pub use submit::{Offered, Submitter};
pub use table::{RequestId, RequestTable, SideTable};
pub use time::{Duration, HZ, Instant, TickRate};
pub use tunable::{TunableError, TunableSpec, Unit};
