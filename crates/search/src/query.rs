//! The types every search path shares: the [`Query`], the [`SearchOptions`], the [`Hit`]s it
//! returns and the [`SearchStats`] it measures.

use molsift_fp::{pack_on_bits, FingerprintLayout};

use crate::bar::BarSlot;
use crate::threshold::check_threshold;
use crate::SearchError;

/// One query fingerprint, held both as its sorted on-bits (for the column index) and as a
/// packed row (for the row scan).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    bits: u32,
    on_bits: Vec<u32>,
    row: Vec<u64>,
}

impl Query {
    /// A query of `bits` bits (a positive multiple of 64) with the given on-bits (any order,
    /// duplicates ignored); errors on a bit outside the fingerprint.
    pub fn from_on_bits(bits: u32, on_bits: &[u32]) -> Result<Query, SearchError> {
        let layout = FingerprintLayout::new(bits)?;
        let mut row = vec![0u64; layout.words_per_row()];
        pack_on_bits(on_bits, &mut row)?;
        Ok(Query::from_packed(bits, row))
    }

    /// A query from a packed row of at least `bits / 64` words (as stored); words past the
    /// fingerprint (row padding) must be zero.
    pub fn from_row(bits: u32, row: &[u64]) -> Result<Query, SearchError> {
        let layout = FingerprintLayout::new(bits)?;
        let words = layout.words_per_row();
        if row.len() < words {
            return Err(SearchError::Invalid(format!(
                "a {bits}-bit query row needs {words} words, got {}",
                row.len()
            )));
        }
        if row[words..].iter().any(|&w| w != 0) {
            return Err(SearchError::Invalid(
                "the query row has bits set in its padding".into(),
            ));
        }
        Ok(Query::from_packed(bits, row[..words].to_vec()))
    }

    fn from_packed(bits: u32, row: Vec<u64>) -> Query {
        let mut on_bits = Vec::new();
        for (w, &word) in row.iter().enumerate() {
            let mut x = word;
            while x != 0 {
                on_bits.push(w as u32 * 64 + x.trailing_zeros());
                x &= x - 1;
            }
        }
        Query { bits, on_bits, row }
    }

    /// Bits per fingerprint.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// The on-bits, ascending.
    pub fn on_bits(&self) -> &[u32] {
        &self.on_bits
    }

    /// Number of on-bits (the query's popcount `q`).
    pub fn popcount(&self) -> u32 {
        self.on_bits.len() as u32
    }

    /// The packed row (`bits / 64` words).
    pub fn row(&self) -> &[u64] {
        &self.row
    }
}

/// One result: the molecule's position in the store and its Tanimoto score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// position of the molecule in the store (not in the column index's sorted order)
    pub index: u64,
    /// `c / (p + q - c)` as an `f64`, exactly as RDKit computes it
    pub score: f64,
}

/// What to search for. Results are always sorted by score descending, then store index
/// ascending; the same rule decides which molecules make the `k` best.
///
/// * `threshold` only: every molecule scoring `>= threshold`.
/// * `k` only: the `k` best molecules (all of them if `k` exceeds the store).
/// * both: the `k` best among those scoring `>= threshold`.
/// * neither: every molecule (threshold 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchOptions {
    /// keep molecules whose score is `>=` this (`f64` in `[0, 1]`, compared as RDKit does)
    pub threshold: Option<f64>,
    /// keep only the `k` best
    pub k: Option<usize>,
    /// worker threads (0 or 1: the calling thread only)
    pub threads: usize,
    /// top-k: a cell where searches of this query over other shards share their k-th best
    /// (see [`BarSlot`]); the threads of this search share one of their own without it
    pub bar: Option<BarSlot>,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            threshold: None,
            k: None,
            threads: 1,
            bar: None,
        }
    }
}

impl SearchOptions {
    /// Every molecule scoring `>= t`.
    pub fn threshold(t: f64) -> Self {
        SearchOptions {
            threshold: Some(t),
            ..Default::default()
        }
    }

    /// The `k` best molecules.
    pub fn top_k(k: usize) -> Self {
        SearchOptions {
            k: Some(k),
            ..Default::default()
        }
    }

    /// The same options with `threads` worker threads.
    pub fn with_threads(self, threads: usize) -> Self {
        SearchOptions { threads, ..self }
    }

    /// The threshold to apply (0 if none), checked to be in `[0, 1]`.
    pub(crate) fn checked_threshold(&self) -> Result<f64, SearchError> {
        check_threshold(self.threshold.unwrap_or(0.0))
    }

    /// These options for query `i` of a batch: its own bar slot when `bars` gives one, else
    /// `self.bar`.
    pub(crate) fn with_bar_of(&self, bars: &[BarSlot], i: usize) -> SearchOptions {
        SearchOptions {
            bar: bars.get(i).copied().or(self.bar),
            ..*self
        }
    }

    pub(crate) fn thread_count(&self) -> usize {
        self.threads.max(1)
    }
}

/// Which search path answered a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SearchPath {
    /// the bit-plane column index
    #[default]
    Columns,
    /// a scan over the row-major fingerprints
    Rows,
}

impl SearchPath {
    /// The path's name in reports: `"columns"` or `"rows"`.
    pub fn name(self) -> &'static str {
        match self {
            SearchPath::Columns => "columns",
            SearchPath::Rows => "rows",
        }
    }
}

/// What one search read and did (summed over the queries of a batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SearchStats {
    /// the path that answered
    pub path: SearchPath,
    /// bytes of fingerprint data read: plane words (columns) or rows and popcounts (row scan),
    /// plus the permutation entries looked up for candidates
    pub bytes_touched: u64,
    /// popcount buckets (or popcount values, for the row scan) that were scanned
    pub buckets_visited: u32,
    /// 256-molecule blocks (columns) or molecules (row scan) whose bits were read
    pub units_visited: u64,
    /// molecules that passed the bar and were scored
    pub candidates: u64,
}

impl SearchStats {
    pub(crate) fn add(&mut self, o: &SearchStats) {
        self.bytes_touched += o.bytes_touched;
        self.buckets_visited += o.buckets_visited;
        self.units_visited += o.units_visited;
        self.candidates += o.candidates;
    }
}
