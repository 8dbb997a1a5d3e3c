//! The exact hit decision: scores as RDKit computes them, and the least common-bit count a
//! molecule of popcount `p` needs to reach a threshold, decided once per popcount so that each
//! molecule is tested with one integer comparison `c >= m`.
//!
//! # The threshold rule
//!
//! A molecule with popcount `p` and `c` bits in common with a query of `q` on-bits scores
//! `c as f64 / (p + q - c) as f64` (0 when `p = q = 0`), exactly RDKit's
//! `TanimotoSimilarity`, and is a hit at threshold `t` iff that `f64` is `>= t`: the same
//! decision RDKit, chemfp and FPSim2 make, for every `f64` threshold, with no decimal parsing.
//!
//! For fixed `s = p + q` the exact ratio `c / (s - c)` grows strictly with `c`, and rounding to
//! `f64` never reverses an order, so the hits of a bucket are exactly the molecules with
//! `c >= m(t, p, q)`, where `m` is the least `c <= min(p, q)` whose score passes. [`min_common`]
//! finds `m` by evaluating RDKit's own formula at a few `c` values near `t * s / (1 + t)`; the
//! scan then compares integers only. Deriving `m` from the float algebra instead
//! (`ceil(t * s / (1 + t))`) is wrong at exact ties: at `t = 0.9`, `s = 19`, it gives 10, yet
//! `c = 9` scores exactly `9 / 10 = 0.9` (see the tests).
//!
//! The top-k search raises its bar to the current k-th best score, which is itself an exact
//! ratio `c0 / u0` of integers; [`min_common_ratio`] gives the least `c` with
//! `c / (p + q - c) >= c0 / u0` in integers: `c >= ceil(c0 * (p + q) / (c0 + u0))`.

use crate::SearchError;

/// Returned by the bound functions when no molecule of that popcount can pass.
pub(crate) const UNREACHABLE: u32 = u32::MAX;

/// The Tanimoto score exactly as RDKit computes it: `c / (p + q - c)` in `f64`, 0 for two empty
/// fingerprints.
#[inline]
pub fn rdkit_score(common: u32, p: u32, q: u32) -> f64 {
    let union = p + q - common;
    if union == 0 {
        0.0
    } else {
        f64::from(common) / f64::from(union)
    }
}

/// Checks a user threshold: a number in `[0, 1]`.
pub(crate) fn check_threshold(t: f64) -> Result<f64, SearchError> {
    if (0.0..=1.0).contains(&t) {
        Ok(t)
    } else {
        Err(SearchError::BadThreshold(t))
    }
}

/// The least number of common bits `c` with which a molecule of popcount `p` reaches
/// `rdkit_score(c, p, q) >= t`, or `None` if even `c = min(p, q)` does not.
///
/// ```
/// use molsift_search::min_common;
/// // query 7 bits, molecule 10 bits: 7 in common scores exactly 0.7
/// assert_eq!(min_common(0.7, 10, 7), Some(7));
/// assert_eq!(min_common(0.71, 10, 7), None);
/// assert_eq!(min_common(0.0, 10, 7), Some(0));
/// ```
pub fn min_common(t: f64, p: u32, q: u32) -> Option<u32> {
    let top = p.min(q);
    let pass = |c: u32| rdkit_score(c, p, q) >= t;
    if !pass(top) {
        return None;
    }
    // c / (s - c) >= t  <=>  c >= t s / (1 + t); start there and step to the exact boundary.
    let s = f64::from(p + q);
    let guess = (t * s / (1.0 + t)).floor();
    let mut c = if guess.is_finite() && guess > 0.0 {
        (guess as u32).min(top)
    } else {
        0
    };
    while c > 0 && pass(c - 1) {
        c -= 1;
    }
    while !pass(c) {
        c += 1; // terminates: pass(top) holds
    }
    Some(c)
}

/// [`min_common`] as a `u32` with [`UNREACHABLE`] for `None`.
#[inline]
pub(crate) fn need_f64(t: f64, p: u32, q: u32) -> u32 {
    min_common(t, p, q).unwrap_or(UNREACHABLE)
}

/// The least `c` with `c / (p + q - c) >= c0 / u0` exactly (a `u0` of 0 means the score 0), or
/// [`UNREACHABLE`] if it exceeds `min(p, q)`.
#[inline]
pub(crate) fn min_common_ratio(c0: u32, u0: u32, p: u32, q: u32) -> u32 {
    if c0 == 0 {
        return 0;
    }
    if p + q == 0 {
        return UNREACHABLE; // two empty fingerprints score 0
    }
    // c * u0 >= c0 * (s - c)  <=>  c * (c0 + u0) >= c0 * s
    let s = u64::from(p + q);
    let num = u64::from(c0) * s;
    let den = u64::from(c0) + u64::from(u0);
    let m = num.div_ceil(den);
    if m > u64::from(p.min(q)) {
        UNREACHABLE
    } else {
        m as u32
    }
}

/// Compares two exact scores `c1 / u1` and `c2 / u2` (a zero union means the score 0).
#[inline]
pub(crate) fn cmp_ratio(c1: u32, u1: u32, c2: u32, u2: u32) -> std::cmp::Ordering {
    let (c1, u1) = if u1 == 0 { (0, 1) } else { (c1, u1) };
    let (c2, u2) = if u2 == 0 { (0, 1) } else { (c2, u2) };
    (u64::from(c1) * u64::from(u2)).cmp(&(u64::from(c2) * u64::from(u1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_algebra_gets_exact_ties_wrong_and_the_rule_does_not() {
        // p = 10, q = 9, c = 9: the score is exactly 9/10, which RDKit evaluates to 0.9.
        assert_eq!(rdkit_score(9, 10, 9), 0.9);
        // the tempting closed form c >= t (p + q) / (1 + t) rounds the wrong way
        let float_bound = (0.9f64 * 19.0 / 1.9).ceil();
        assert_eq!(
            float_bound, 10.0,
            "float algebra asks for 10 common bits (wrong)"
        );
        // the rule keeps the molecule, and so does the exact ratio 9/10
        assert_eq!(min_common(0.9, 10, 9), Some(9));
        assert_eq!(min_common_ratio(9, 10, 10, 9), 9);
        // the same at t = 0.7 (7/10) and t = 0.2 (1/5, s = 6)
        assert_eq!(min_common(0.7, 10, 7), Some(7));
        assert_eq!((0.2f64 * 6.0 / 1.2).ceil(), 2.0);
        assert_eq!(min_common(0.2, 5, 1), Some(1));
    }

    #[test]
    fn bound_is_least_passing_count_for_all_small_shapes() {
        let ts = [
            0.0,
            1e-9,
            0.05,
            0.1,
            0.3,
            1.0 / 3.0,
            0.5,
            0.7,
            0.8,
            0.9,
            0.999_999,
            1.0,
        ];
        for &t in &ts {
            for p in 0..70u32 {
                for q in 0..70u32 {
                    let brute = (0..=p.min(q)).find(|&c| rdkit_score(c, p, q) >= t);
                    assert_eq!(min_common(t, p, q), brute, "t={t} p={p} q={q}");
                }
            }
        }
    }

    #[test]
    fn ratio_bound_matches_brute_force() {
        for (c0, u0) in [(0u32, 5u32), (1, 3), (7, 10), (2, 3), (5, 5), (0, 0)] {
            for p in 0..50u32 {
                for q in 0..50u32 {
                    let brute = (0..=p.min(q))
                        .find(|&c| cmp_ratio(c, p + q - c, c0, u0) != std::cmp::Ordering::Less)
                        .unwrap_or(UNREACHABLE);
                    assert_eq!(
                        min_common_ratio(c0, u0, p, q),
                        brute,
                        "{c0}/{u0} p={p} q={q}"
                    );
                }
            }
        }
    }

    #[test]
    fn thresholds_outside_unit_interval_are_refused() {
        assert!(check_threshold(f64::NAN).is_err());
        assert!(check_threshold(-0.1).is_err());
        assert!(check_threshold(1.5).is_err());
        assert!(check_threshold(0.0).is_ok());
    }
}
