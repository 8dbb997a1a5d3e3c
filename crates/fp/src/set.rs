//! Owns [`FingerprintSet`]: a small set of fingerprints of equal length, compared with one
//! query at a time: the most similar row by Tanimoto ([`FingerprintSet::best`], the reference
//! actives of the `similarity` scorer) and the rows whose bits all lie in the query
//! ([`FingerprintSet::subsets_of`], the pattern-fingerprint prescreen of the `filter` scorer).
//!
//! Rows and queries come as bytes: bit `i` in byte `i / 8` at bit `i % 8`
//! (`numpy.packbits(..., bitorder="little")`, [`unpack_rdkit_bitvect`](crate::unpack_rdkit_bitvect)),
//! which read as little-endian `u64` words is molsift's row layout.

use crate::{is_subset, tanimoto, FingerprintError};

/// Fingerprints of equal length (a multiple of 64 bits), kept as one flat array of words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FingerprintSet {
    rows: Vec<u64>,
    words: usize,
}

impl FingerprintSet {
    /// A set of the byte rows `rows`, which must all have the length of the first, a positive
    /// multiple of 8 bytes. An empty set takes 8-byte (64-bit) queries.
    pub fn from_byte_rows<R: AsRef<[u8]>>(rows: &[R]) -> Result<Self, FingerprintError> {
        let nbytes = rows.first().map_or(8, |r| r.as_ref().len());
        if nbytes == 0 || nbytes % 8 != 0 {
            return Err(FingerprintError::BadRowBytes(nbytes));
        }
        let mut flat = Vec::with_capacity(rows.len() * nbytes / 8);
        for (row, r) in rows.iter().enumerate() {
            let r = r.as_ref();
            if r.len() != nbytes {
                return Err(FingerprintError::RowBytesDiffer {
                    row,
                    bytes: r.len(),
                    first: nbytes,
                });
            }
            flat.extend(words(r));
        }
        Ok(FingerprintSet {
            rows: flat,
            words: nbytes / 8,
        })
    }

    /// Number of fingerprints.
    pub fn len(&self) -> usize {
        self.rows.len() / self.words
    }

    /// Whether the set holds no fingerprint.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Bytes of each fingerprint (and of a query).
    pub fn row_bytes(&self) -> usize {
        self.words * 8
    }

    /// (row, score) of the row most similar to `query` (the first row on ties), `None` for an
    /// empty set. Scores are exact: |a & b| / |a | b|, 0 when both are empty (RDKit's).
    pub fn best(&self, query: &[u8]) -> Result<Option<(usize, f64)>, FingerprintError> {
        let q = self.query(query)?;
        let mut best: Option<(usize, f64)> = None;
        for (i, row) in self.rows.chunks_exact(self.words).enumerate() {
            let s = tanimoto(&q, row);
            if best.map_or(true, |(_, b)| s > b) {
                best = Some((i, s));
            }
        }
        Ok(best)
    }

    /// Indices (ascending) of the rows whose bits are all set in `query`: the queries a
    /// pattern-fingerprint screen lets through (an all-zero row always passes).
    pub fn subsets_of(&self, query: &[u8]) -> Result<Vec<usize>, FingerprintError> {
        let q = self.query(query)?;
        let rows = self.rows.chunks_exact(self.words);
        Ok(rows
            .enumerate()
            .filter(|(_, row)| is_subset(row, &q))
            .map(|(i, _)| i)
            .collect())
    }

    /// `query` as words, checked against the rows' length.
    fn query(&self, query: &[u8]) -> Result<Vec<u64>, FingerprintError> {
        if query.len() != self.row_bytes() {
            return Err(FingerprintError::QueryBytes {
                bytes: query.len(),
                expected: self.row_bytes(),
            });
        }
        Ok(words(query).collect())
    }
}

/// Little-endian `u64` words of a byte row whose length is a multiple of 8.
fn words(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(on: &[u32], bytes: usize) -> Vec<u8> {
        let mut r = vec![0u8; bytes];
        for &b in on {
            r[(b / 8) as usize] |= 1 << (b % 8);
        }
        r
    }

    #[test]
    fn best_is_the_highest_score_first_row_on_ties() {
        let rows = [
            row(&[0, 1], 16),
            row(&[0, 1, 2, 3], 16),
            row(&[0, 1, 2, 3], 16),
        ];
        let set = FingerprintSet::from_byte_rows(&rows).unwrap();
        assert_eq!(set.len(), 3);
        assert_eq!(set.best(&row(&[0, 1, 2, 100], 16)).unwrap(), Some((1, 0.6)));
        assert_eq!(set.best(&row(&[0, 1], 16)).unwrap(), Some((0, 1.0)));
        // nothing in common with any row: the first row, score 0
        assert_eq!(set.best(&row(&[127], 16)).unwrap(), Some((0, 0.0)));
    }

    #[test]
    fn scores_equal_the_kernel() {
        let rows: Vec<Vec<u8>> = (0..5u32)
            .map(|i| row(&[i, i + 7, 3 * i + 64, 200], 32))
            .collect();
        let query = row(&[1, 8, 67, 200, 255], 32);
        let qw: Vec<u64> = words(&query).collect();
        for (i, r) in rows.iter().enumerate() {
            let one = FingerprintSet::from_byte_rows(std::slice::from_ref(r)).unwrap();
            let rw: Vec<u64> = words(r).collect();
            assert_eq!(
                one.best(&query).unwrap(),
                Some((0, tanimoto(&qw, &rw))),
                "row {i}"
            );
        }
    }

    #[test]
    fn subsets_of_lists_rows_inside_the_query() {
        let rows = [row(&[], 8), row(&[1, 5], 8), row(&[1, 6], 8), row(&[5], 8)];
        let set = FingerprintSet::from_byte_rows(&rows).unwrap();
        assert_eq!(set.subsets_of(&row(&[1, 5, 9], 8)).unwrap(), [0, 1, 3]);
        assert_eq!(set.subsets_of(&row(&[], 8)).unwrap(), [0]);
    }

    #[test]
    fn an_empty_set_answers_nothing() {
        let set = FingerprintSet::from_byte_rows::<Vec<u8>>(&[]).unwrap();
        assert!(set.is_empty());
        assert_eq!(set.best(&[0u8; 8]).unwrap(), None);
        assert_eq!(set.subsets_of(&[0u8; 8]).unwrap(), Vec::<usize>::new());
    }

    #[test]
    fn lengths_are_checked() {
        let e = FingerprintSet::from_byte_rows(&[vec![0u8; 8], vec![0u8; 16]]).unwrap_err();
        assert_eq!(e.to_string(), "fingerprint 1 has 16 bytes, the first has 8");
        let e = FingerprintSet::from_byte_rows(&[vec![0u8; 12]]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "fingerprints must be a multiple of 64 bits long, got 12 bytes"
        );
        let set = FingerprintSet::from_byte_rows(&[vec![0u8; 128]]).unwrap();
        let e = set.best(&[0u8; 8]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "query has 8 bytes, the set's fingerprints 128"
        );
        assert!(set.subsets_of(&[0u8; 8]).is_err());
    }
}
