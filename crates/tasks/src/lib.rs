//! Numbered tasks `0..n` done by a fixed number of scoped threads: each thread takes the next
//! untaken number from a shared counter (a slow task never holds the others back; no task is
//! done twice) and keeps a state of its own (a buffer, its counts, what it made). The one way
//! the crates cut a job into tasks for threads (README.md).
//!
//! Errors: after a task fails no new task is taken, and the error returned is that of the
//! lowest-numbered task that failed. Tasks are taken in increasing order, so every task below a
//! failed one was taken (and ran) before it: the error is the same for any number of threads.
//! The caller's thread is one of the threads (one thread, or at most one task: nothing is
//! spawned).
//!
//! ```
//! // the sum of squares of 0..1000 on 2 threads, each thread keeping its own partial sum
//! let parts = molsift_tasks::each(2, 1000, || 0u64, |sum, i| *sum += (i * i) as u64);
//! assert_eq!(parts.iter().sum::<u64>(), (0..1000u64).map(|i| i * i).sum());
//! // results in order
//! assert_eq!(molsift_tasks::map(3, 5, |i| i * 10), vec![0, 10, 20, 30, 40]);
//! // the lowest-numbered failure, whatever the threads
//! let r = molsift_tasks::try_each(4, 100, || (), |_, i| if i % 7 == 3 { Err(i) } else { Ok(()) });
//! assert_eq!(r.unwrap_err(), 3);
//! ```

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// `work(&mut state, i)` for every `i` in `0..n` on up to `threads` threads (at least one,
/// never more than `n`), each thread's `state` made by `init`. Returns every thread's state
/// (in no particular order), or the error of the lowest-numbered task that failed; after a
/// failure no new task is taken.
pub fn try_each<S, E>(
    threads: usize,
    n: usize,
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize) -> Result<(), E> + Sync,
) -> Result<Vec<S>, E>
where
    S: Send,
    E: Send,
{
    let threads = threads.clamp(1, n.max(1));
    if threads == 1 {
        let mut state = init();
        for i in 0..n {
            work(&mut state, i)?;
        }
        return Ok(vec![state]);
    }
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let first: Mutex<Option<(usize, E)>> = Mutex::new(None);
    let worker = || {
        let mut state = init();
        while !failed.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            if let Err(e) = work(&mut state, i) {
                failed.store(true, Ordering::Relaxed);
                let mut slot = first.lock().unwrap_or_else(|p| p.into_inner());
                if slot.as_ref().map_or(true, |(j, _)| i < *j) {
                    *slot = Some((i, e));
                }
            }
        }
        state
    };
    // the caller's thread is one of them
    let states = std::thread::scope(|s| {
        let handles: Vec<_> = (1..threads).map(|_| s.spawn(worker)).collect();
        let mut states = vec![worker()];
        states.extend(
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))),
        );
        states
    });
    match first.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some((_, e)) => Err(e),
        None => Ok(states),
    }
}

/// `work(&mut state, i)` for every `i` in `0..n` on up to `threads` threads; every thread's
/// state (in no particular order).
pub fn each<S: Send>(
    threads: usize,
    n: usize,
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize) + Sync,
) -> Vec<S> {
    match try_each::<S, std::convert::Infallible>(threads, n, init, |s, i| {
        work(s, i);
        Ok(())
    }) {
        Ok(states) => states,
        Err(never) => match never {},
    }
}

/// `f(i)` for every `i` in `0..n` on up to `threads` threads, the results in task order.
pub fn map<R: Send>(threads: usize, n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let parts = each(threads, n, Vec::new, |done: &mut Vec<(usize, R)>, i| {
        done.push((i, f(i)))
    });
    let mut out: Vec<Option<R>> = (0..n).map(|_| None).collect();
    for (i, r) in parts.into_iter().flatten() {
        out[i] = Some(r);
    }
    out.into_iter()
        .map(|r| r.expect("every task done once"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn every_task_is_done_once_for_any_threads() {
        for threads in [0, 1, 2, 3, 8, 100] {
            for n in [0, 1, 2, 7, 1000] {
                let done: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
                let states = each(
                    threads,
                    n,
                    || 0usize,
                    |count, i| {
                        done[i].fetch_add(1, Ordering::Relaxed);
                        *count += 1;
                    },
                );
                assert!(done.iter().all(|d| d.load(Ordering::Relaxed) == 1));
                assert_eq!(states.iter().sum::<usize>(), n);
                assert_eq!(states.len(), threads.clamp(1, n.max(1)));
            }
        }
    }

    #[test]
    fn map_keeps_task_order() {
        for threads in [1, 2, 5] {
            let want: Vec<u64> = (0..333u64).map(|i| i * i + 1).collect();
            assert_eq!(map(threads, 333, |i| (i * i + 1) as u64), want);
        }
        assert!(map(4, 0, |i| i).is_empty());
    }

    #[test]
    fn the_lowest_failed_task_is_the_error_and_no_task_is_taken_after_it() {
        for threads in [1, 2, 4, 16] {
            let ran = AtomicUsize::new(0);
            let r = try_each(
                threads,
                10_000,
                || (),
                |_, i| {
                    ran.fetch_add(1, Ordering::Relaxed);
                    // a slow early failure, a fast later one: the early one is the error
                    if i == 40 {
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        return Err(format!("task {i}"));
                    }
                    if i % 50 == 41 {
                        return Err(format!("task {i}"));
                    }
                    Ok(())
                },
            );
            assert_eq!(r.unwrap_err(), "task 40");
            // tasks stop soon after the first failure (at most one in flight per thread)
            assert!(ran.load(Ordering::Relaxed) < 10_000, "{threads} threads");
        }
    }

    #[test]
    fn a_panic_in_a_task_reaches_the_caller() {
        let r = std::panic::catch_unwind(|| {
            each(
                2,
                10,
                || (),
                |_, i| {
                    if i == 5 {
                        panic!("task five");
                    }
                },
            )
        });
        assert!(r.is_err());
    }
}
