//! [`RowScan`]: the search over the store's row-major fingerprints, for queries and stores where
//! the column index does not pay (very dense queries, tiny stores) or is not built.
//!
//! Each molecule's popcount `p` (2 bytes) is read first; if no common count can reach the bar
//! (the threshold's exact per-popcount bar, or for top-k the bound `min(p, q) / max(p, q)`
//! against the current k-th best) the row is never touched. Otherwise the row is intersected
//! with the query: a fixed-size loop for 1024, 2048 and 4096 bits (unrolled and vectorized: with
//! AVX-512 VPOPCNTDQ where present, else AVX2), else over the query's non-zero words, with the
//! CPU's `popcnt`. The same code is compiled once per CPU level and picked at run time.

use std::ops::Range;

use molsift_fp::FingerprintLayout;

use crate::columns::{run_threads, share};
use crate::layout::check_shape;
use crate::threshold::{cmp_ratio, need_f64, UNREACHABLE};
use crate::topk::{finish, Scored, TopK};
use crate::{Hit, Query, SearchError, SearchOptions, SearchPath, SearchStats};

/// A scan over `n` row-major fingerprints and their popcounts (borrowed, e.g. from a mapped
/// store). The popcounts are trusted: they must be those of the rows.
#[derive(Debug, Clone, Copy)]
pub struct RowScan<'a> {
    rows: &'a [u64],
    stride: usize,
    layout: FingerprintLayout,
    popcounts: &'a [u16],
}

impl<'a> RowScan<'a> {
    /// A scan over `n` fingerprints of `bits` bits, row `i` at `rows[i * stride_words ..]`.
    pub fn new(
        rows: &'a [u64],
        stride_words: usize,
        bits: u32,
        n: usize,
        popcounts: &'a [u16],
    ) -> Result<RowScan<'a>, SearchError> {
        let layout = check_shape(rows, stride_words, bits, n, popcounts)?;
        Ok(RowScan {
            rows,
            stride: stride_words,
            layout,
            popcounts,
        })
    }

    /// Number of molecules.
    pub fn len(&self) -> usize {
        self.popcounts.len()
    }

    /// True if there is no molecule.
    pub fn is_empty(&self) -> bool {
        self.popcounts.is_empty()
    }

    /// Bits per fingerprint.
    pub fn bits(&self) -> u32 {
        self.layout.bits()
    }

    /// Searches the rows; see [`SearchOptions`] for what is returned.
    pub fn search(&self, query: &Query, opts: &SearchOptions) -> Result<Vec<Hit>, SearchError> {
        self.search_with_stats(query, opts).map(|(h, _)| h)
    }

    /// [`RowScan::search`], also reporting what the search read.
    pub fn search_with_stats(
        &self,
        query: &Query,
        opts: &SearchOptions,
    ) -> Result<(Vec<Hit>, SearchStats), SearchError> {
        let t = opts.checked_threshold()?;
        if query.bits() != self.bits() {
            return Err(SearchError::BitsMismatch {
                index: self.bits(),
                query: query.bits(),
            });
        }
        let q = query.popcount();
        let qwords: Vec<(usize, u64)> = query
            .row()
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, w)| w != 0)
            .collect();
        let n = self.len() as u64;
        let threads = opts.thread_count().min(n.max(1) as usize); // a row each at most
        let k = opts.k;
        if k == Some(0) {
            return Ok((
                Vec::new(),
                SearchStats {
                    path: SearchPath::Rows,
                    ..Default::default()
                },
            ));
        }
        let parts = run_threads(threads, |i| {
            let r = share(0..n, threads, i);
            let r = r.start as usize..r.end as usize;
            // the bar per popcount, computed when a popcount is first met
            let need = vec![NOT_YET; self.bits() as usize + 1];
            let mut ctx = Ctx {
                scan: self,
                t,
                need,
                qwords: &qwords,
                qrow: query.row(),
                q,
                read: 0,
            };
            let out = match k {
                Some(k) => {
                    let mut heap = TopK::new(k);
                    ctx.run(r, &mut |s: Scored| {
                        heap.offer(s);
                        heap.bar()
                    });
                    heap.into_vec()
                }
                None => {
                    let mut out = Vec::new();
                    ctx.run(r, &mut |s: Scored| {
                        out.push(s);
                        None
                    });
                    out
                }
            };
            (out, ctx.read, ctx.need)
        });
        let mut all = Vec::new();
        let mut read = 0;
        let mut popcounts_scanned = vec![false; self.bits() as usize + 1];
        for (v, r, need) in parts {
            all.extend(v);
            read += r;
            for (seen, m) in popcounts_scanned.iter_mut().zip(need) {
                *seen |= m != NOT_YET && m != UNREACHABLE;
            }
        }
        // bytes of a row the intersection reads: whole rows for the fixed sizes (see `run_sized`),
        // else the cache lines holding the query's non-zero words
        let row_bytes = match query.row().len() {
            16 | 32 | 64 => query.row().len() as u64 * 8,
            _ => {
                let mut l: Vec<usize> = qwords.iter().map(|&(w, _)| w / 8).collect();
                l.dedup();
                l.len() as u64 * 64
            }
        };
        let stats = SearchStats {
            path: SearchPath::Rows,
            bytes_touched: n * 2 + read * row_bytes,
            buckets_visited: popcounts_scanned.iter().filter(|&&s| s).count() as u32,
            units_visited: read,
            candidates: all.len() as u64,
        };
        Ok((finish(all, k), stats))
    }
}

/// A `need` entry not computed yet.
const NOT_YET: u32 = u32::MAX - 1;

struct Ctx<'s, 'a> {
    scan: &'s RowScan<'a>,
    t: f64,
    need: Vec<u32>,
    qwords: &'s [(usize, u64)],
    qrow: &'s [u64],
    q: u32,
    read: u64,
}

impl Ctx<'_, '_> {
    /// Scans molecules `r`, handing each one that reaches its bar to `emit`, which returns the
    /// current k-th best (top-k) or `None`.
    fn run(&mut self, r: Range<usize>, emit: &mut dyn FnMut(Scored) -> Option<Scored>) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512vpopcntdq")
                && std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                // SAFETY: the CPU has AVX-512F, VPOPCNTDQ and popcnt.
                return unsafe { self.run_avx512(r, emit) };
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                // SAFETY: the CPU has AVX2 and popcnt.
                return unsafe { self.run_avx2(r, emit) };
            }
            if std::arch::is_x86_feature_detected!("popcnt") {
                // SAFETY: the CPU has popcnt.
                return unsafe { self.run_popcnt(r, emit) };
            }
        }
        self.run_sized(r, emit)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vpopcntdq,avx2,popcnt")]
    unsafe fn run_avx512(
        &mut self,
        r: Range<usize>,
        emit: &mut dyn FnMut(Scored) -> Option<Scored>,
    ) {
        self.run_sized(r, emit)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn run_avx2(&mut self, r: Range<usize>, emit: &mut dyn FnMut(Scored) -> Option<Scored>) {
        self.run_sized(r, emit)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    unsafe fn run_popcnt(
        &mut self,
        r: Range<usize>,
        emit: &mut dyn FnMut(Scored) -> Option<Scored>,
    ) {
        self.run_sized(r, emit)
    }

    /// Picks a fixed-size intersection for the common fingerprint sizes (the compiler unrolls
    /// and vectorizes it), else one over the query's non-zero words.
    #[inline(always)]
    fn run_sized(&mut self, r: Range<usize>, emit: &mut dyn FnMut(Scored) -> Option<Scored>) {
        let qrow = self.qrow;
        macro_rules! fixed {
            ($w:literal) => {{
                let q: &[u64; $w] = qrow.try_into().expect("query row size");
                self.run_impl(r, emit, |row: &[u64]| {
                    let row: &[u64; $w] = row.try_into().expect("row size");
                    let mut c = 0u32;
                    for w in 0..$w {
                        c += (row[w] & q[w]).count_ones();
                    }
                    c
                })
            }};
        }
        match qrow.len() {
            16 => fixed!(16),
            32 => fixed!(32),
            64 => fixed!(64),
            _ => {
                let qwords = self.qwords;
                self.run_impl(r, emit, |row: &[u64]| {
                    qwords.iter().map(|&(w, x)| (row[w] & x).count_ones()).sum()
                })
            }
        }
    }

    #[inline(always)]
    fn run_impl(
        &mut self,
        r: Range<usize>,
        emit: &mut dyn FnMut(Scored) -> Option<Scored>,
        common: impl Fn(&[u64]) -> u32,
    ) {
        let q = self.q;
        let mut bar: Option<Scored> = None;
        let words = self.scan.layout.words_per_row();
        let (rows, stride, pops, t) = (
            self.scan.rows,
            self.scan.stride,
            self.scan.popcounts,
            self.t,
        );
        let need = &mut self.need;
        let mut read = 0;
        for i in r {
            let p = u32::from(pops[i]);
            let mut m = need[p as usize];
            if m == NOT_YET {
                m = need_f64(t, p, q);
                need[p as usize] = m;
            }
            if m == UNREACHABLE {
                continue;
            }
            if let Some(b) = bar {
                // best possible score min(p, q) / max(p, q) below the k-th best: skip
                if cmp_ratio(p.min(q), p.max(q), b.common, b.union).is_lt() {
                    continue;
                }
            }
            read += 1;
            let c = common(&rows[i * stride..i * stride + words]);
            if c < m {
                continue;
            }
            let s = Scored::new(i as u64, c, p, q);
            if let Some(b) = bar {
                if s.rank_cmp(&b).is_gt() {
                    continue;
                }
            }
            bar = emit(s);
        }
        self.read += read;
    }
}
