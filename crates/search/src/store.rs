//! [`StoreSearcher`]: a store and its column index opened together (one generation of the
//! store, through its directory handle), searched with the checks that let every hit be
//! vouched for: the planes and order a query reads are checked against their checksums once
//! per process (see `ColumnIndex`), and the row-major fingerprints once before a row scan or
//! an index built in memory uses them.

use std::sync::Arc;

use molsift_store::{layout, Store, Verify};

use crate::{
    BarSlot, ColumnIndex, Hit, Query, RowScan, SearchError, SearchOptions, SearchPath, SearchStats,
};

/// A store opened for search.
pub struct StoreSearcher {
    store: Arc<Store>,
    columns: ColumnIndex,
    built_in_memory: bool,
}

impl StoreSearcher {
    /// Opens the store at `path` (sizes checked) and its column index, or builds one in memory
    /// when the store has none.
    pub fn open(path: &std::path::Path) -> Result<StoreSearcher, SearchError> {
        Self::new(Arc::new(Store::open(path, Verify::Sizes)?))
    }

    /// Opens the column index of an already open store (the same generation).
    pub fn new(store: Arc<Store>) -> Result<StoreSearcher, SearchError> {
        let (columns, built_in_memory) = match ColumnIndex::open_in(&store)? {
            Some(c) => (c, false),
            None => {
                check_rows(&store)?;
                (ColumnIndex::from_store(&store)?, true)
            }
        };
        Ok(StoreSearcher {
            store,
            columns,
            built_in_memory,
        })
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The column index.
    pub fn columns(&self) -> &ColumnIndex {
        &self.columns
    }

    /// The column index, to change its read-ahead setting.
    pub fn columns_mut(&mut self) -> &mut ColumnIndex {
        &mut self.columns
    }

    /// True when the store had no column index on disk and one was built at open.
    pub fn built_in_memory(&self) -> bool {
        self.built_in_memory
    }

    fn rows(&self) -> Result<RowScan<'_>, SearchError> {
        let spec = &self.store.manifest().fingerprint;
        RowScan::new(
            self.store.fingerprint_words(),
            spec.row_stride_words,
            spec.bits,
            self.store.len(),
            self.store.popcounts(),
        )
    }

    /// Whether any of `queries` takes the row scan; if so, the rows are checked first.
    fn rows_for(&self, queries: &[Query]) -> Result<Option<RowScan<'_>>, SearchError> {
        if queries
            .iter()
            .any(|q| crate::choose(&self.columns, q.popcount()) == SearchPath::Rows)
        {
            check_rows(&self.store)?;
        }
        self.rows().map(Some)
    }

    /// One query, by the path [`crate::choose`] picks.
    pub fn search(
        &self,
        query: &Query,
        opts: &SearchOptions,
    ) -> Result<(Vec<Hit>, SearchStats), SearchError> {
        let rows = self.rows_for(std::slice::from_ref(query))?;
        crate::search(&self.columns, rows.as_ref(), query, opts)
    }

    /// Many queries at once (see [`crate::search_batch`]).
    pub fn search_batch(
        &self,
        queries: &[Query],
        opts: &SearchOptions,
    ) -> Result<(Vec<Vec<Hit>>, SearchStats), SearchError> {
        self.search_batch_sharing(queries, opts, &[])
    }

    /// Many queries at once, query `i` sharing its k-th best through `bars[i]` (see
    /// [`crate::search_batch_sharing`]).
    pub fn search_batch_sharing(
        &self,
        queries: &[Query],
        opts: &SearchOptions,
        bars: &[BarSlot],
    ) -> Result<(Vec<Vec<Hit>>, SearchStats), SearchError> {
        let rows = self.rows_for(queries)?;
        crate::search_batch_sharing(&self.columns, rows.as_ref(), queries, opts, bars)
    }
}

/// Checks (once per process) the files a row scan or an in-memory index reads.
fn check_rows(store: &Store) -> Result<(), SearchError> {
    store.verify_file(layout::FINGERPRINTS)?;
    Ok(store.verify_file(layout::POPCOUNTS)?)
}
