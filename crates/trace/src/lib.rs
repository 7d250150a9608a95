//! Trace formats: readers and writers of the I/O traces elevator replays and captures
//! (issue 19). Each format is a module of typed records, a reader whose errors name the file,
//! the line and the field, and a writer whose output the reader reads back unchanged.
//!
//! * [`iolog`]: fio's iolog, versions 2 and 3 (fio's `read_iolog`/`write_iolog`).
//!
//! The crate depends on nothing of elevator's but (when it needs them) `elevator-core`'s
//! types: the simulator, the live engine and the report all read traces through it.

#![deny(missing_docs)]
#![warn(missing_debug_implementations, unreachable_pub)]

pub mod iolog;
