//! Owns the counters' clock: [`now`] returns ticks, [`Clock::secs`] turns them into seconds
//! since the counters started. On x86_64 with an invariant TSC (the `nonstop_tsc` flag) a tick
//! is one `rdtsc` (about 17 ns on a 2-vCPU VM, against 31 ns for `clock_gettime`, and every
//! request reads the clock twice); elsewhere a tick is a nanosecond of the monotonic clock.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Whether ticks are TSC cycles (decided once per process).
fn use_tsc() -> bool {
    static TSC: OnceLock<bool> = OnceLock::new();
    *TSC.get_or_init(invariant_tsc)
}

#[cfg(target_arch = "x86_64")]
#[allow(unused_unsafe)] // __cpuid is an unsafe fn before Rust 1.87
fn invariant_tsc() -> bool {
    use std::arch::x86_64::__cpuid;
    // SAFETY: cpuid is available on every x86_64 CPU.
    let max_ext = unsafe { __cpuid(0x8000_0000) }.eax;
    // Leaf 0x80000007, EDX bit 8: the TSC runs at a constant rate in every state.
    max_ext >= 0x8000_0007 && (unsafe { __cpuid(0x8000_0007) }.edx >> 8) & 1 == 1
}

#[cfg(not(target_arch = "x86_64"))]
fn invariant_tsc() -> bool {
    false
}

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// The current time in ticks.
#[inline]
pub(crate) fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if use_tsc() {
        // SAFETY: rdtsc has no preconditions.
        return unsafe { std::arch::x86_64::_rdtsc() };
    }
    origin().elapsed().as_nanos() as u64
}

/// Ticks to seconds, counted from the start of the counters.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    tick0: u64,
    secs_per_tick: f64,
}

impl Clock {
    /// Starts now; with the TSC, measures its rate against the monotonic clock for 200 us.
    pub(crate) fn start() -> Clock {
        if !use_tsc() {
            return Clock {
                tick0: now(),
                secs_per_tick: 1e-9,
            };
        }
        let (i0, c0) = (Instant::now(), now());
        let mut i1 = Instant::now();
        while i1 - i0 < Duration::from_micros(200) {
            i1 = Instant::now();
        }
        let c1 = now();
        let rate = (i1 - i0).as_secs_f64() / (c1.wrapping_sub(c0).max(1)) as f64;
        Clock {
            tick0: c0,
            secs_per_tick: rate,
        }
    }

    /// Seconds from the start to `ticks`.
    #[inline]
    pub(crate) fn secs(&self, ticks: u64) -> f64 {
        ticks.saturating_sub(self.tick0) as f64 * self.secs_per_tick
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_measure_seconds() {
        let c = Clock::start();
        let (i, a) = (Instant::now(), now());
        std::thread::sleep(Duration::from_millis(20));
        let (b, e) = (now(), i.elapsed().as_secs_f64());
        let d = c.secs(b) - c.secs(a);
        assert!(
            (d - e).abs() < 0.002 + 0.01 * e,
            "ticks say {d} s, the clock {e} s"
        );
    }
}
