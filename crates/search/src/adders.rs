//! Bit-sliced arithmetic over one 256-molecule block (a [`Lane`] of four `u64` words): the
//! carry-save adder tree that counts, for every molecule of the block at once, how many of the
//! query's bit planes it has set; the comparison of those counts against a constant; and the
//! extraction of one molecule's count.
//!
//! A count is held "sliced": slice `i` is a lane whose bit `j` is bit `i` of molecule `j`'s
//! count. Planes are added eight at a time with a Harley-Seal tree of carry-save adders
//! (`csa`: three inputs of weight `w` in, a sum of weight `w` and a carry of weight `2w` out),
//! so the low three slices (`ones`, `twos`, `fours`) absorb eight planes for seven adders and
//! only one lane of weight eight ripples into the higher slices.
//!
//! The code is plain `[u64; 4]` arithmetic that LLVM turns into 256-bit instructions when the
//! caller is compiled with AVX2 (see `columns.rs`, which instantiates it both ways).

/// One block: 256 molecules, one bit each.
pub(crate) type Lane = [u64; 4];

/// A lane with no bit set.
pub(crate) const ZERO: Lane = [0; 4];
/// A lane with every bit set.
pub(crate) const ONES: Lane = [!0; 4];

#[inline(always)]
fn and(a: Lane, b: Lane) -> Lane {
    [a[0] & b[0], a[1] & b[1], a[2] & b[2], a[3] & b[3]]
}

#[inline(always)]
fn or(a: Lane, b: Lane) -> Lane {
    [a[0] | b[0], a[1] | b[1], a[2] | b[2], a[3] | b[3]]
}

#[inline(always)]
fn xor(a: Lane, b: Lane) -> Lane {
    [a[0] ^ b[0], a[1] ^ b[1], a[2] ^ b[2], a[3] ^ b[3]]
}

/// `a & !b`
#[inline(always)]
fn andnot(a: Lane, b: Lane) -> Lane {
    [a[0] & !b[0], a[1] & !b[1], a[2] & !b[2], a[3] & !b[3]]
}

/// Carry-save adder: returns `(carry, sum)` with `a + b + c = 2 * carry + sum` per bit.
#[inline(always)]
fn csa(a: Lane, b: Lane, c: Lane) -> (Lane, Lane) {
    let u = xor(a, b);
    (or(and(a, b), and(u, c)), xor(u, c))
}

/// Eight lanes `d(0) .. d(7)` added into the three low slices `low` (ones, twos, fours) by a
/// carry-save tree: returns the three and the carry of weight 8 (for [`ripple`] from slice 3).
#[inline(always)]
pub(crate) fn csa8(low: [Lane; 3], d: impl Fn(usize) -> Lane) -> ([Lane; 3], Lane) {
    let [ones, twos, fours] = low;
    let (twos_a, o) = csa(ones, d(0), d(1));
    let (twos_b, o) = csa(o, d(2), d(3));
    let (fours_a, t) = csa(twos, twos_a, twos_b);
    let (twos_a, o) = csa(o, d(4), d(5));
    let (twos_b, o) = csa(o, d(6), d(7));
    let (fours_b, t) = csa(t, twos_a, twos_b);
    let (eights, f) = csa(fours, fours_a, fours_b);
    ([o, t, f], eights)
}

/// Adds `carry` (weight `2^from`) into `s[from..]`, ripple style.
#[inline(always)]
pub(crate) fn ripple<const L: usize>(s: &mut [Lane; L], from: usize, mut carry: Lane) {
    for slot in s.iter_mut().skip(from) {
        let t = and(*slot, carry);
        *slot = xor(*slot, carry);
        carry = t;
    }
}

/// Reads the block at word `word` of the plane starting at `p`.
///
/// # Safety
/// `p.add(word)..p.add(word + 4)` must be inside one live allocation of `u64`.
#[inline(always)]
unsafe fn load(p: *const u64, word: usize) -> Lane {
    // SAFETY: the caller guarantees the four words are in bounds; u64 alignment suffices.
    unsafe { std::ptr::read(p.add(word) as *const Lane) }
}

/// When a block may be abandoned: after `8 * i >= from` planes (a multiple of 8), if no
/// molecule's count so far plus the planes still to come reaches `m`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Gate {
    pub m: u32,
    pub from: usize,
}

impl Gate {
    /// Never abandon.
    pub(crate) const NEVER: Gate = Gate {
        m: 0,
        from: usize::MAX,
    };

    /// The gate for a bar of `m` common bits out of `n` planes: a molecule missing more than
    /// `n - m` planes cannot pass, so checks start at the first multiple of 8 above `n - m`.
    #[inline]
    pub(crate) fn new(m: u32, n: usize) -> Gate {
        if m == 0 || m as usize > n {
            return Gate::NEVER;
        }
        Gate {
            m,
            from: ((n - m as usize) / 8 + 1) * 8,
        }
    }

    /// True if some molecule with counts `s` after `j` of `n` planes may still reach the bar.
    #[inline(always)]
    pub(crate) fn alive<const L: usize>(&self, s: &[Lane; L], j: usize, n: usize) -> bool {
        if j < self.from {
            return true;
        }
        // j >= from > n - m, so the count still needed now is at least 1
        ge_mask(s, self.m + j as u32 - n as u32) != ZERO
    }
}

/// Adds planes `from..to` of `planes` into the sliced counts `s` of the block at word `word`
/// (`L` slices, least significant first; `s` must hold the exact counts of planes `..from`).
/// `from` must be a multiple of 8, and so must `to` unless it is `planes.len()`;
/// `planes.len()` must be `< 2^L` and `L >= 3`.
///
/// After every eighth plane from `gate.from` on, gives up with `Err(planes read)` if no
/// molecule's count so far plus the planes still to come can reach the gate's bar: reading the
/// rarest planes first, most blocks are settled that way. `s` is then meaningless.
///
/// # Safety
/// Every pointer in `planes[from..to]` must be valid for reads of words `word..word + 4`.
#[inline(always)]
pub(crate) unsafe fn add_planes<const L: usize>(
    planes: &[*const u64],
    word: usize,
    s: &mut [Lane; L],
    from: usize,
    to: usize,
    gate: Gate,
) -> Result<(), usize> {
    debug_assert!(L >= 3 && (planes.len() as u64) < (1u64 << L));
    debug_assert!(from % 8 == 0 && (to % 8 == 0 || to == planes.len()));
    let n = planes.len();
    let (mut ones, mut twos, mut fours) = (s[0], s[1], s[2]);
    let mut chunks = planes[from..to].chunks_exact(8);
    let mut j = from;
    for ch in &mut chunks {
        // SAFETY (all loads): guaranteed by the caller.
        let d = |i: usize| unsafe { load(ch[i], word) };
        let ([o, t, f], eights) = csa8([ones, twos, fours], d);
        ones = o;
        twos = t;
        fours = f;
        ripple(s, 3, eights);
        j += 8;
        if j >= gate.from {
            // after a whole group the accumulators are exact: count = s as a binary number
            s[0] = ones;
            s[1] = twos;
            s[2] = fours;
            if !gate.alive(s, j, n) {
                return Err(j);
            }
        }
    }
    for &p in chunks.remainder() {
        // SAFETY: guaranteed by the caller.
        let mut carry = unsafe { load(p, word) };
        for acc in [&mut ones, &mut twos, &mut fours] {
            let t = and(*acc, carry);
            *acc = xor(*acc, carry);
            carry = t;
        }
        ripple(s, 3, carry);
    }
    s[0] = ones;
    s[1] = twos;
    s[2] = fours;
    Ok(())
}

/// [`add_planes`] over all planes from zero counts.
///
/// # Safety
/// As for [`add_planes`].
#[cfg(test)]
unsafe fn count_block<const L: usize>(
    planes: &[*const u64],
    word: usize,
    gate: Gate,
) -> Result<[Lane; L], usize> {
    let mut s = [ZERO; L];
    // SAFETY: forwarded.
    unsafe { add_planes(planes, word, &mut s, 0, planes.len(), gate) }.map(|()| s)
}

/// The molecules whose sliced count is `>= m`, compared bit-sliced from the top slice down.
#[inline(always)]
pub(crate) fn ge_mask<const L: usize>(s: &[Lane; L], m: u32) -> Lane {
    if m == 0 {
        return ONES;
    }
    if u64::from(m) >> L != 0 {
        return ZERO;
    }
    let mut gt = ZERO;
    let mut eq = ONES;
    for i in (0..L).rev() {
        let mb = if (m >> i) & 1 == 1 { ONES } else { ZERO };
        gt = or(gt, andnot(and(eq, s[i]), mb));
        eq = andnot(eq, xor(s[i], mb));
    }
    or(gt, eq)
}

/// The count of molecule `lane` (0..256) of the block.
#[inline(always)]
pub(crate) fn count_at<const L: usize>(s: &[Lane; L], lane: usize) -> u32 {
    let (w, b) = (lane / 64, lane % 64);
    let mut c = 0u32;
    for (i, slice) in s.iter().enumerate() {
        c |= (((slice[w] >> b) & 1) as u32) << i;
    }
    c
}

/// The first `valid` molecules of a block (the rest is padding).
#[inline]
pub(crate) fn prefix_mask(valid: usize) -> Lane {
    let mut m = ZERO;
    for (w, x) in m.iter_mut().enumerate() {
        let lo = w * 64;
        *x = if valid >= lo + 64 {
            !0
        } else if valid > lo {
            (1u64 << (valid - lo)) - 1
        } else {
            0
        };
    }
    m
}

/// `a & b`, for callers outside this module.
#[inline(always)]
pub(crate) fn mask_and(a: Lane, b: Lane) -> Lane {
    and(a, b)
}

/// Hints the CPU to fetch the cache line holding `p` (never faults, even out of bounds).
#[inline(always)]
pub(crate) fn prefetch(p: *const u64) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: prefetch is a hint and never faults; SSE is part of x86-64.
        #[allow(unused_unsafe)] // _mm_prefetch is a safe fn from Rust 1.87 on (MSRV 1.80)
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(p as *const i8)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    fn check<const L: usize>(nplanes: usize, seed: u64) {
        let mut st = seed;
        let planes: Vec<Vec<u64>> = (0..nplanes)
            .map(|_| {
                (0..8)
                    .map(|_| rng(&mut st) & rng(&mut st) | rng(&mut st) & rng(&mut st))
                    .collect()
            })
            .collect();
        let ptrs: Vec<*const u64> = planes.iter().map(|p| p.as_ptr()).collect();
        for word in [0, 4] {
            // SAFETY: each plane has 8 words
            let s = unsafe { count_block::<L>(&ptrs, word, Gate::NEVER) }.unwrap();
            for lane in 0..256 {
                let want: u32 = planes
                    .iter()
                    .map(|p| ((p[word + lane / 64] >> (lane % 64)) & 1) as u32)
                    .sum();
                assert_eq!(
                    count_at(&s, lane),
                    want,
                    "L={L} planes={nplanes} lane={lane}"
                );
                for m in [0, 1, want.saturating_sub(1), want, want + 1, 1 << (L - 1)] {
                    let ge = ge_mask(&s, m);
                    assert_eq!((ge[lane / 64] >> (lane % 64)) & 1 == 1, want >= m, "m={m}");
                }
            }
            // with a gate: either the exact counts, or proof that nobody reaches the bar
            let best = (0..256).map(|lane| count_at(&s, lane)).max().unwrap();
            for m in 1..=nplanes as u32 {
                // SAFETY: as above
                match unsafe { count_block::<L>(&ptrs, word, Gate::new(m, nplanes)) } {
                    Ok(g) => assert_eq!(g, s),
                    Err(read) => {
                        assert!(best < m, "gave up on a block that reaches {m}");
                        assert!(read % 8 == 0 && read <= nplanes);
                    }
                }
            }
        }
    }

    #[test]
    fn sparse_blocks_are_abandoned() {
        // 40 planes; molecule 3 has the first 5, nobody has the rest
        let mut planes = vec![vec![0u64; 4]; 40];
        for p in planes.iter_mut().take(5) {
            p[0] = 1 << 3;
        }
        let ptrs: Vec<*const u64> = planes.iter().map(|p| p.as_ptr()).collect();
        // bar 36 of 40: at most 4 misses; after 8 planes molecule 3 has missed 3, after 16, 11
        // SAFETY: each plane has 4 words
        let r = unsafe { count_block::<6>(&ptrs, 0, Gate::new(36, 40)) };
        assert_eq!(r, Err(16));
        let r = unsafe { count_block::<6>(&ptrs, 0, Gate::new(5, 40)) };
        assert!(r.is_ok());
    }

    #[test]
    fn sliced_counts_match_bit_by_bit_counts() {
        for n in [0, 1, 7, 8, 9, 16, 23, 44, 63] {
            check::<6>(n, 0x1234 + n as u64);
        }
        for n in [64, 100, 511] {
            check::<9>(n, 0x99 + n as u64);
        }
        check::<12>(700, 5);
        check::<17>(64, 6);
    }

    #[test]
    fn prefix_masks() {
        assert_eq!(prefix_mask(0), ZERO);
        assert_eq!(prefix_mask(256), ONES);
        assert_eq!(prefix_mask(65), [!0, 1, 0, 0]);
        assert_eq!(prefix_mask(192), [!0, !0, !0, 0]);
    }
}
