//! Exact Tanimoto similarity search over a molsift store's fingerprints: threshold and top-k,
//! one query or a batch, one thread or several.
//!
//! Two paths give identical results:
//!
//! * [`ColumnIndex`]: the molecules sorted by popcount into buckets (each padded to whole
//!   256-molecule blocks) and transposed into one bit plane per fingerprint bit. A query with
//!   `q` on-bits reads at most its `q` planes (at most `q / 8` bytes per molecule instead of a
//!   whole row), rarest first, adds them with bit-sliced carry-save adders into per-molecule
//!   common-bit counts, abandons blocks where no molecule can still reach the bar, and compares
//!   the counts with the bucket's integer bar; buckets that cannot reach the bar are skipped.
//!   Built in memory with [`ColumnIndex::build`] or [`ColumnIndex::from_store`], saved next to
//!   the store with [`ColumnIndex::write`] and mapped back with [`ColumnIndex::open`]; or
//!   written straight to files a group of planes at a time, for indexes larger than memory,
//!   with [`ColumnIndex::write_from_store`] or [`write_index`].
//! * [`RowScan`]: a scan over the row-major fingerprints with popcount pruning, for very dense
//!   queries, tiny stores, or when no index is built.
//!
//! [`search`] and [`search_batch`] pick the path by [`choose`].
//!
//! Exactness: scores are RDKit's (`c as f64 / (p + q - c) as f64`, 0 for two empty
//! fingerprints); a molecule is a hit iff that score is `>= threshold`, decided by an integer
//! comparison per molecule (see [`min_common`]); results are ordered by score descending, then
//! store index ascending, and the same rule decides who takes the last places of a top-k.
//!
//! ```
//! use molsift_search::{ColumnIndex, Query, RowScan, SearchOptions};
//! // four 64-bit fingerprints, one word per row
//! let rows = [0b1111u64, 0b0111, 0b1, 0b1111_0000];
//! let pops: Vec<u16> = rows.iter().map(|r| r.count_ones() as u16).collect();
//! let index = ColumnIndex::build(&rows, 1, 64, 4, &pops).unwrap();
//! let query = Query::from_on_bits(64, &[0, 1, 2]).unwrap();
//!
//! let hits = index.search(&query, &SearchOptions::threshold(0.7)).unwrap();
//! assert_eq!(hits.iter().map(|h| (h.index, h.score)).collect::<Vec<_>>(), [(1, 1.0), (0, 0.75)]);
//!
//! let best = index.search(&query, &SearchOptions::top_k(3)).unwrap();
//! assert_eq!(best.iter().map(|h| h.index).collect::<Vec<_>>(), [1, 0, 2]);
//!
//! let rows_scan = RowScan::new(&rows, 1, 64, 4, &pops).unwrap();
//! assert_eq!(rows_scan.search(&query, &SearchOptions::top_k(3)).unwrap(), best);
//! ```
#![deny(missing_docs)]

#[cfg(target_endian = "big")]
compile_error!(
    "molsift-search maps little-endian index files directly; big-endian targets are not supported"
);

mod adders;
mod bar;
mod batch;
mod build;
mod columns;
mod compressed;
mod error;
mod io;
mod layout;
mod merge;
mod query;
mod rowscan;
mod scan;
mod shards;
mod store;
mod threshold;
mod topk;

pub use bar::{BarSlot, SCORES_WORDS, SHARED_K};
pub use build::{write_index, DEFAULT_BUILD_BUDGET};
pub use error::SearchError;
pub use io::{FORMAT_NAME, FORMAT_VERSION, HEADER_FILE, ORDER_FILE, PLANES_FILE};
pub use layout::{Bucket, ColumnIndex, BLOCK, MAX_BITS};
pub use merge::{merge_runs, merge_top_k, Merged};
pub use query::{Hit, Query, SearchOptions, SearchPath, SearchStats};
pub use rowscan::RowScan;
pub use scan::set_simd;
pub use shards::{search_shards, search_shards_batch, Shard};
pub use store::StoreSearcher;
pub use threshold::{min_common, rdkit_score};

/// What a byte read by the column index costs against a byte read by the row scan, in tenths
/// (see [`choose`]).
pub const COLUMN_BYTE_COST_TENTHS: u64 = 33;

/// The path [`search`] takes for a query with `query_on_bits` on-bits over `index`.
///
/// The column index reads at most `q` planes of one bit per sorted slot (padding included:
/// `q * blocks * 32` bytes), the row scan a whole row per molecule (`n * row_stride_bytes`);
/// both skip the same popcount buckets. Byte for byte the column index costs more (many
/// streams, adder work, more per-candidate work): measured on dense data where neither path
/// prunes (400,000 fingerprints with popcounts 200..1000, `examples/bench_search.rs
/// --crossover`) it moved 1.4 GB/s against the row scan's 4.7 GB/s at q = 768, and the paths
/// tied at q = 512 (t = 0.3). So the row scan is chosen when
/// `q * blocks * 32 * 3.3 > n * row_stride_bytes`: for full 2048-bit buckets, from about 620
/// on-bits. MOSES-like queries (about 44 on-bits) always take the column index; tiny stores,
/// whose buckets are mostly padding, take the row scan.
pub fn choose(index: &ColumnIndex, query_on_bits: u32) -> SearchPath {
    if index.is_empty() {
        return SearchPath::Columns;
    }
    let stride =
        molsift_fp::FingerprintLayout::new(index.bits()).map_or(0, |l| l.row_stride_bytes()) as u64;
    let column =
        u64::from(query_on_bits) * index.blocks() * (BLOCK as u64 / 8) * COLUMN_BYTE_COST_TENTHS;
    let row = index.len() as u64 * stride * 10;
    if column > row {
        SearchPath::Rows
    } else {
        SearchPath::Columns
    }
}

/// Searches with the path [`choose`] picks: the row scan if it is given and chosen, else the
/// column index. `rows` must hold the same molecules as `columns`.
pub fn search(
    columns: &ColumnIndex,
    rows: Option<&RowScan>,
    query: &Query,
    opts: &SearchOptions,
) -> Result<(Vec<Hit>, SearchStats), SearchError> {
    match rows {
        Some(r) if choose(columns, query.popcount()) == SearchPath::Rows => {
            r.search_with_stats(query, opts)
        }
        _ => columns.search_with_stats(query, opts),
    }
}

/// Searches many queries, each by the path [`choose`] picks (the column-index queries as one
/// blocked batch); result `i` answers `queries[i]`. Stats are summed over the queries.
pub fn search_batch(
    columns: &ColumnIndex,
    rows: Option<&RowScan>,
    queries: &[Query],
    opts: &SearchOptions,
) -> Result<(Vec<Vec<Hit>>, SearchStats), SearchError> {
    search_batch_sharing(columns, rows, queries, opts, &[])
}

/// [`search_batch`] where query `i` of a top-k batch shares its k-th best through `bars[i]`
/// (see [`ColumnIndex::search_batch_sharing`]; `bars` empty: `opts.bar` for every query).
pub fn search_batch_sharing(
    columns: &ColumnIndex,
    rows: Option<&RowScan>,
    queries: &[Query],
    opts: &SearchOptions,
    bars: &[BarSlot],
) -> Result<(Vec<Vec<Hit>>, SearchStats), SearchError> {
    batch::check_bars(queries.len(), bars)?;
    let by_rows = |q: &Query| rows.is_some() && choose(columns, q.popcount()) == SearchPath::Rows;
    let col_ix: Vec<usize> = (0..queries.len())
        .filter(|&i| !by_rows(&queries[i]))
        .collect();
    let col_queries: Vec<Query> = col_ix.iter().map(|&i| queries[i].clone()).collect();
    let col_bars: Vec<BarSlot> = if bars.is_empty() {
        Vec::new()
    } else {
        col_ix.iter().map(|&i| bars[i]).collect()
    };
    let (col_hits, mut stats) = columns.search_batch_sharing(&col_queries, opts, &col_bars)?;
    let mut out = vec![Vec::new(); queries.len()];
    for (i, h) in col_ix.into_iter().zip(col_hits) {
        out[i] = h;
    }
    if let Some(r) = rows {
        for (i, q) in queries.iter().enumerate() {
            if by_rows(q) {
                let (h, st) = r.search_with_stats(q, &opts.with_bar_of(bars, i))?;
                out[i] = h;
                stats.add(&st);
            }
        }
    }
    Ok((out, stats))
}
