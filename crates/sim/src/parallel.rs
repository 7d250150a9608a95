//! Independent simulations on every processor, results in a fixed order: what `elevator
//! compare`, `elevator advise` and the Python package's study share, so that the output never
//! depends on which thread finished first.

use std::sync::Mutex;

/// Runs `work(0..count)` on up to `threads` threads (at least one, at most `count`), each
/// thread taking the next index as it comes free; calls `done(index)` as each finishes (for a
/// progress bar). Returns the results in index order, whatever the threads did.
///
/// # Panics
///
/// If `work` panics (the panic is propagated when the threads are joined).
pub fn map_in_order<T: Send>(
    count: usize,
    threads: usize,
    work: impl Fn(usize) -> T + Sync,
    done: impl Fn(usize) + Sync,
) -> Vec<T> {
    let next = Mutex::new(0usize);
    let slots: Vec<Mutex<Option<T>>> = (0..count).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, count.max(1)) {
            scope.spawn(|| {
                loop {
                    let index = {
                        let mut next = next.lock().expect("no thread panics holding it");
                        let index = *next;
                        *next += 1;
                        index
                    };
                    if index >= count {
                        break;
                    }
                    let result = work(index);
                    *slots[index].lock().expect("no thread panics holding it") = Some(result);
                    done(index);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner().expect("no thread panics holding it").expect("every index ran")
        })
        .collect()
}

/// The processors this process may use (1 when the system does not say).
pub fn processors() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves results come back in index order whatever the threads' timing: work that takes
    // longer for lower indices (so they finish last) still lands at its index, every index
    // runs exactly once, and `done` sees each index once.
    #[test]
    fn results_keep_index_order() {
        let seen = Mutex::new(Vec::new());
        let results = map_in_order(
            40,
            4,
            |index| {
                std::thread::sleep(std::time::Duration::from_micros((40 - index as u64) * 50));
                index * 10
            },
            |index| seen.lock().unwrap().push(index),
        );
        assert_eq!(results, (0..40).map(|index| index * 10).collect::<Vec<_>>());
        let mut seen = seen.into_inner().unwrap();
        seen.sort_unstable();
        assert_eq!(seen, (0..40).collect::<Vec<_>>());
        assert!(map_in_order(0, 4, |index| index, |_| {}).is_empty());
    }
}
