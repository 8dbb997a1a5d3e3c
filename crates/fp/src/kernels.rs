//! Popcount, intersection count and Tanimoto over rows of `u64`, with run-time CPU dispatch, and
//! the subset test of substructure screens.
//!
//! Built for a generic x86-64 target, `u64::count_ones` becomes a slow bit-twiddling sequence;
//! the versions below are the same loops compiled with the CPU's popcount features enabled
//! (AVX-512 VPOPCNTDQ, which vectorizes them 8 words at a time; else AVX2, else `popcnt`) and
//! chosen at run time; the portable loop is the fallback.

/// Number of set bits in a row.
pub fn popcount(row: &[u64]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU supports popcnt, checked just above.
            return unsafe { popcount_popcnt(row) };
        }
    }
    popcount_portable(row)
}

/// Number of bits set in both rows (rows of equal length).
pub fn intersection_count(a: &[u64], b: &[u64]) -> u32 {
    assert_eq!(a.len(), b.len(), "fingerprints of different sizes");
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512vpopcntdq")
            && std::arch::is_x86_feature_detected!("avx512f")
        {
            // SAFETY: the CPU supports AVX-512F and VPOPCNTDQ, checked just above.
            return unsafe { intersection_avx512(a, b) };
        }
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: the CPU supports AVX2 and popcnt, checked just above.
            return unsafe { intersection_avx2(a, b) };
        }
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU supports popcnt, checked just above.
            return unsafe { intersection_popcnt(a, b) };
        }
    }
    intersection_portable(a, b)
}

/// Tanimoto similarity |a & b| / |a | b|; two empty fingerprints have similarity 0, as in RDKit.
pub fn tanimoto(a: &[u64], b: &[u64]) -> f64 {
    let common = intersection_count(a, b);
    let union = popcount(a) + popcount(b) - common;
    if union == 0 {
        0.0
    } else {
        f64::from(common) / f64::from(union)
    }
}

/// Whether every bit set in `a` is set in `b` (rows of equal length): the screen of a
/// substructure search, where a query can only match a molecule whose pattern fingerprint holds
/// all of the query's bits. An empty `a` is a subset of anything.
pub fn is_subset(a: &[u64], b: &[u64]) -> bool {
    assert_eq!(a.len(), b.len(), "fingerprints of different sizes");
    a.iter().zip(b).all(|(x, y)| x & !y == 0)
}

fn popcount_portable(row: &[u64]) -> u32 {
    row.iter().map(|w| w.count_ones()).sum()
}

fn intersection_portable(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x & y).count_ones()).sum()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn popcount_popcnt(row: &[u64]) -> u32 {
    popcount_portable(row)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn intersection_popcnt(a: &[u64], b: &[u64]) -> u32 {
    intersection_portable(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn intersection_avx2(a: &[u64], b: &[u64]) -> u32 {
    intersection_portable(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq,popcnt")]
unsafe fn intersection_avx512(a: &[u64], b: &[u64]) -> u32 {
    intersection_portable(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatched_and_portable_agree() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut a = vec![0u64; 32];
        let mut b = vec![0u64; 32];
        for i in 0..32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            a[i] = x;
            b[i] = x.rotate_left(7) & x;
        }
        assert_eq!(popcount(&a), popcount_portable(&a));
        assert_eq!(intersection_count(&a, &b), intersection_portable(&a, &b));
        #[cfg(target_arch = "x86_64")]
        {
            let want = intersection_portable(&a, &b);
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                // SAFETY: checked just above.
                assert_eq!(unsafe { intersection_avx2(&a, &b) }, want);
            }
            if std::arch::is_x86_feature_detected!("avx512vpopcntdq")
                && std::arch::is_x86_feature_detected!("avx512f")
            {
                // SAFETY: checked just above.
                assert_eq!(unsafe { intersection_avx512(&a, &b) }, want);
            } else {
                eprintln!(
                    "no AVX-512 VPOPCNTDQ on this CPU: its kernel is compiled but not run here"
                );
            }
        }
    }

    #[test]
    fn subset_needs_every_bit() {
        assert!(is_subset(&[0, 0], &[0, 5]));
        assert!(is_subset(&[1, 4], &[3, 5]));
        assert!(!is_subset(&[1, 2], &[3, 5]));
        assert!(!is_subset(&[1 << 63, 0], &[!(1 << 63), u64::MAX]));
    }

    #[test]
    fn tanimoto_of_empty_rows_is_zero() {
        assert_eq!(tanimoto(&[0, 0], &[0, 0]), 0.0);
        assert_eq!(tanimoto(&[3], &[3]), 1.0);
    }
}
