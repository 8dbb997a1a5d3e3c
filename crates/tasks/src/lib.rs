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
//! Threads the system will not start (`ulimit -u`, the kernel's thread or memory-map limits,
//! memory for their stacks under `ulimit -v`: `-j 100000`) are not an error and never a panic:
//! the threads that did start take every task ([`try_each`]), or the refused thread's part runs
//! on the caller's thread ([`scoped`]); the answer is the same, only slower.
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
    // the caller's thread is one of them; the others as many as the system starts
    let states = std::thread::scope(|s| {
        let handles: Vec<_> = (1..threads)
            .map_while(|_| std::thread::Builder::new().spawn_scoped(s, worker).ok())
            .collect();
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

/// `f(t)` for every `t` in `0..n`, each on a scoped thread of its own (`f(0)` on the caller's
/// thread), the results in order of `t`: one part of a job a thread, cut by the caller. A
/// thread the system will not start is not an error: its `f(t)` runs on the caller's thread
/// after `f(0)`, so the results are the same (`f(t)` must not wait for another part). A panic
/// in a part reaches the caller.
pub fn scoped<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    scoped_at_most(n, usize::MAX, &f)
}

/// [`scoped`] with at most `most` threads started besides the caller's (the others refused, as
/// the system refuses them: the tests' way to reach that path).
fn scoped_at_most<T: Send>(n: usize, most: usize, f: &(impl Fn(usize) -> T + Sync)) -> Vec<T> {
    if n <= 1 {
        return (0..n).map(f).collect();
    }
    std::thread::scope(|s| {
        let mut refused = false;
        let handles: Vec<_> = (1..n)
            .map(|t| {
                if refused || t > most {
                    return None;
                }
                let started = std::thread::Builder::new().spawn_scoped(s, move || f(t));
                refused = started.is_err();
                started.ok()
            })
            .collect();
        let first = f(0);
        let rest: Vec<T> = handles
            .into_iter()
            .enumerate()
            .map(|(i, h)| match h {
                Some(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                None => f(i + 1),
            })
            .collect();
        std::iter::once(first).chain(rest).collect()
    })
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
    fn scoped_parts_are_in_order_and_refused_threads_run_on_the_caller() {
        let caller = std::thread::current().id();
        for n in [0, 1, 2, 5, 9] {
            for most in [0, 1, 3, usize::MAX] {
                let got = scoped_at_most(n, most, &|t| (t * 3, std::thread::current().id()));
                assert_eq!(got.len(), n);
                for (t, (v, id)) in got.iter().enumerate() {
                    assert_eq!(*v, t * 3);
                    // part 0 and every part past the threads started on the caller's thread
                    assert_eq!(*id == caller, t == 0 || t > most, "n {n} most {most} t {t}");
                }
            }
        }
        assert_eq!(scoped(4, |t| t + 1), vec![1, 2, 3, 4]);
    }

    #[test]
    fn a_panic_in_a_scoped_part_reaches_the_caller() {
        let r = std::panic::catch_unwind(|| {
            scoped(3, |t| {
                if t == 2 {
                    panic!("part two");
                }
                t
            })
        });
        assert!(r.is_err());
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
