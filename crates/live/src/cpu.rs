//! The process's CPU time, for the report's user and sys figures.

#![allow(unsafe_code)] // getrusage has no safe wrapper in rustix.

/// User and system CPU time the whole process has used, in nanoseconds (every thread,
/// including io_uring's workers, which belong to the process).
pub(crate) fn process_cpu_ns() -> (u64, u64) {
    // SAFETY: `getrusage` fills the zeroed struct it is given and touches nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return (0, 0);
        }
        usage
    };
    let nanos =
        |time: libc::timeval| time.tv_sec as u64 * 1_000_000_000 + time.tv_usec as u64 * 1000;
    (nanos(usage.ru_utime), nanos(usage.ru_stime))
}
