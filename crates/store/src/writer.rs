//! [`StoreWriter`]: appends molecules and rejects to a store under a temporary name, and on
//! [`StoreWriter::finish`] syncs every file, writes the manifest last and renames into place.

use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use molsift_fp::{pack_on_bits, popcount, FingerprintLayout};
use molsift_iostats::{self as iostats, CountedFile};

use crate::checksum::HashingWriter;
use crate::layout::{self, DATA_FILES};
use crate::manifest::{Counts, FileEntry, FingerprintSpec, Manifest, FORMAT_NAME, FORMAT_VERSION};
use crate::{duplicates, rejects, replace, Store, StoreError};

type Sink = HashingWriter<BufWriter<CountedFile>>;

/// Builds one store. Nothing at the final path exists until [`finish`](Self::finish) succeeds.
pub struct StoreWriter {
    final_path: PathBuf,
    tmp_path: PathBuf,
    overwrite: bool,
    spec: FingerprintSpec,
    layout: FingerprintLayout,
    sinks: Vec<Sink>,
    counts: Counts,
    smiles_end: u64,
    ids_end: u64,
    provenance: serde_json::Value,
    row: Vec<u64>,
    /// `duplicates.tsv`, opened by the first [`add_duplicate`](Self::add_duplicate)
    duplicates: Option<Sink>,
    finished: bool,
}

// Indices into `sinks`, in the order of `layout::DATA_FILES`.
const FPS: usize = 0;
const POPS: usize = 1;
const SMILES: usize = 2;
const SMILES_OFF: usize = 3;
const IDS: usize = 4;
const ID_OFF: usize = 5;
const LINES: usize = 6;
const REJECTS: usize = 7;

impl StoreWriter {
    /// Starts a store that will appear at `path` when finished. Fails if `path` exists, unless
    /// `overwrite` (the old store is then replaced only when the new one is complete).
    pub fn create(path: &Path, spec: FingerprintSpec, overwrite: bool) -> Result<Self, StoreError> {
        if iostats::metadata(path).is_ok() {
            if !overwrite {
                return Err(StoreError::Exists(path.to_path_buf()));
            }
            replace::check_replaceable(path)?; // refuse before any work, not at the end
        }
        let layout = spec.layout()?;
        let parent = path.parent().unwrap_or(Path::new(""));
        replace::sweep_leftovers(parent, path.file_name().and_then(|n| n.to_str()));
        let tmp_path = replace::temporary_sibling(path, "tmp");
        std::fs::create_dir_all(&tmp_path).map_err(|e| StoreError::io(&tmp_path, e))?;
        let mut sinks = Vec::with_capacity(DATA_FILES.len());
        for name in DATA_FILES {
            let p = tmp_path.join(name);
            let f = CountedFile::create(&p).map_err(|e| StoreError::io(&p, e))?;
            sinks.push(HashingWriter::new(BufWriter::with_capacity(1 << 20, f)));
        }
        let mut w = StoreWriter {
            final_path: path.to_path_buf(),
            tmp_path,
            overwrite,
            spec,
            layout,
            sinks,
            counts: Counts::default(),
            smiles_end: 0,
            ids_end: 0,
            provenance: serde_json::Value::Null,
            row: vec![0u64; layout.row_stride_words()],
            duplicates: None,
            finished: false,
        };
        w.put(SMILES_OFF, &0u64.to_le_bytes())?;
        w.put(ID_OFF, &0u64.to_le_bytes())?;
        w.put(REJECTS, rejects::HEADER.as_bytes())?;
        Ok(w)
    }

    /// The temporary directory being written.
    pub fn temporary_path(&self) -> &Path {
        &self.tmp_path
    }

    /// Counts so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// Free-form provenance stored in the manifest (source files, options, timings).
    pub fn set_provenance(&mut self, provenance: serde_json::Value) {
        self.provenance = provenance;
    }

    /// Appends one molecule: its id, canonical SMILES, 1-based source line and fingerprint on-bits.
    pub fn add_molecule(
        &mut self,
        id: &str,
        smiles: &str,
        source_line: u64,
        on_bits: &[u32],
    ) -> Result<(), StoreError> {
        let words = self.layout.words_per_row();
        pack_on_bits(on_bits, &mut self.row[..words])
            .map_err(|e| StoreError::Invalid(format!("molecule {id:?}: {e}")))?;
        self.add_own_row(id, smiles, source_line)
    }

    /// `add_row` with the writer's scratch row, filled by the caller.
    fn add_own_row(&mut self, id: &str, smiles: &str, source_line: u64) -> Result<(), StoreError> {
        let row = std::mem::take(&mut self.row);
        let result = self.add_row(id, smiles, source_line, &row);
        self.row = row;
        result
    }

    /// Appends one molecule whose fingerprint is packed little-endian into bytes: bit i in byte
    /// i/8 at bit i%8 (what `numpy.packbits(..., bitorder="little")` gives), `bits / 8` bytes.
    pub fn add_packed(
        &mut self,
        id: &str,
        smiles: &str,
        source_line: u64,
        packed: &[u8],
    ) -> Result<(), StoreError> {
        let words = self.layout.words_per_row();
        if packed.len() != words * 8 {
            return Err(StoreError::Invalid(format!(
                "molecule {id:?}: packed fingerprint has {} bytes, expected {}",
                packed.len(),
                words * 8
            )));
        }
        self.row.fill(0);
        for (w, chunk) in self.row.iter_mut().zip(packed.chunks_exact(8)) {
            *w = u64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
        }
        self.add_own_row(id, smiles, source_line)
    }

    /// Appends molecules given as parallel columns: ids, canonical SMILES, 1-based lines, and
    /// their fingerprints packed one after the other (each as [`add_packed`](Self::add_packed)
    /// takes it, so `fps` splits into `ids.len()` equal rows).
    pub fn add_packed_rows(
        &mut self,
        ids: &[String],
        smiles: &[String],
        lines: &[u64],
        fps: &[u8],
    ) -> Result<(), StoreError> {
        let n = ids.len();
        if smiles.len() != n || lines.len() != n {
            return Err(StoreError::Invalid(format!(
                "{n} ids, {} SMILES and {} lines: the columns differ in length",
                smiles.len(),
                lines.len()
            )));
        }
        if n == 0 {
            return Ok(());
        }
        if fps.len() % n != 0 {
            return Err(StoreError::Invalid(format!(
                "{} bytes of fingerprints do not split into {n} rows",
                fps.len()
            )));
        }
        for (i, row) in fps.chunks_exact(fps.len() / n).enumerate() {
            self.add_packed(&ids[i], &smiles[i], lines[i], row)?;
        }
        Ok(())
    }

    /// Appends one molecule whose fingerprint is already packed into `row` words.
    pub fn add_row(
        &mut self,
        id: &str,
        smiles: &str,
        source_line: u64,
        row: &[u64],
    ) -> Result<(), StoreError> {
        let words = self.layout.words_per_row();
        if row.len() < words || row[words..].iter().any(|&w| w != 0) {
            return Err(StoreError::Invalid(format!(
                "molecule {id:?}: fingerprint has {} words, expected {words}",
                row.len()
            )));
        }
        check_one_line("id", id)?;
        check_one_line("SMILES", smiles)?;
        let mut bytes = Vec::with_capacity(self.layout.row_stride_bytes());
        for w in &row[..words] {
            bytes.extend_from_slice(&w.to_le_bytes());
        }
        bytes.resize(self.layout.row_stride_bytes(), 0);
        self.put(FPS, &bytes)?;
        self.put(POPS, &(popcount(&row[..words]) as u16).to_le_bytes())?;
        self.smiles_end += smiles.len() as u64 + 1;
        self.put_line(SMILES, smiles)?;
        self.put(SMILES_OFF, &self.smiles_end.to_le_bytes())?;
        self.ids_end += id.len() as u64 + 1;
        self.put_line(IDS, id)?;
        self.put(ID_OFF, &self.ids_end.to_le_bytes())?;
        self.put(LINES, &source_line.to_le_bytes())?;
        self.counts.records_in += 1;
        self.counts.molecules += 1;
        Ok(())
    }

    /// Records one rejected record in `rejects.tsv` (one row, [`rejects::row`]).
    pub fn add_reject(
        &mut self,
        source: &str,
        line: u64,
        offset: u64,
        id: &str,
        reason: &str,
    ) -> Result<(), StoreError> {
        self.put(
            REJECTS,
            rejects::row(source, line, offset, id, reason).as_bytes(),
        )?;
        self.counts.records_in += 1;
        self.counts.rejected += 1;
        Ok(())
    }

    /// Records one record left out as a duplicate (ingest `--dedupe`) in `duplicates.tsv`
    /// ([`duplicates::row`]): its source line and id, and the position and id of the molecule
    /// kept in its place. It counts as a record in, and as a duplicate dropped.
    pub fn add_duplicate(
        &mut self,
        line: u64,
        id: &str,
        kept_position: u64,
        kept_id: &str,
    ) -> Result<(), StoreError> {
        let path = self.tmp_path.join(duplicates::FILE);
        if self.duplicates.is_none() {
            let f = CountedFile::create(&path).map_err(|e| StoreError::io(&path, e))?;
            let mut sink = HashingWriter::new(BufWriter::with_capacity(1 << 16, f));
            sink.write_all(duplicates::HEADER.as_bytes())
                .map_err(|e| StoreError::io(&path, e))?;
            self.duplicates = Some(sink);
        }
        let sink = self.duplicates.as_mut().expect("opened above");
        sink.write_all(duplicates::row(line, id, kept_position, kept_id).as_bytes())
            .map_err(|e| StoreError::io(&path, e))?;
        self.counts.records_in += 1;
        self.counts.dropped += 1;
        Ok(())
    }

    /// Sets the number of duplicate molecules ([`Counts::duplicates`]), counted by the caller.
    pub fn set_duplicates(&mut self, n: u64) {
        self.counts.duplicates = Some(n);
    }

    /// Appends the molecules of a finished store (as [`append_store`](Self::append_store) does)
    /// for which `keep(i)` holds, and every reject; the others are left to the caller (to
    /// [`add_duplicate`](Self::add_duplicate)). Copies row by row.
    pub fn append_store_where(
        &mut self,
        part: &Store,
        mut keep: impl FnMut(usize) -> bool,
    ) -> Result<(), StoreError> {
        if part.manifest().fingerprint != self.spec {
            return Err(StoreError::Invalid(format!(
                "{}: fingerprint spec differs from the store being merged into",
                part.path().display()
            )));
        }
        for i in 0..part.len() {
            if keep(i) {
                let (id, smiles) = (part.id(i)?, part.smiles(i)?);
                self.add_row(id, smiles, part.source_line(i), part.fingerprint(i))?;
            }
        }
        self.copy_file(
            REJECTS,
            &part.path().join(layout::REJECTS),
            rejects::HEADER.len() as u64,
        )?;
        let c = part.manifest().counts;
        self.counts.records_in += c.rejected;
        self.counts.rejected += c.rejected;
        Ok(())
    }

    /// Appends every molecule and reject of a finished store (a part written by one task of an
    /// ingest), in its order. Its source lines and ids are already absolute: it is copied.
    pub fn append_store(&mut self, part: &Store) -> Result<(), StoreError> {
        if part.manifest().fingerprint != self.spec {
            return Err(StoreError::Invalid(format!(
                "{}: fingerprint spec differs from the store being merged into",
                part.path().display()
            )));
        }
        for (sink, name) in [
            (FPS, layout::FINGERPRINTS),
            (POPS, layout::POPCOUNTS),
            (SMILES, layout::SMILES),
            (IDS, layout::IDS),
            (LINES, layout::SOURCE_LINES),
        ] {
            self.copy_file(sink, &part.path().join(name), 0)?;
        }
        let n = part.len();
        for i in 1..=n {
            let end = self.smiles_end + part.smiles_offset(i);
            self.put(SMILES_OFF, &end.to_le_bytes())?;
            let end = self.ids_end + part.id_offset(i);
            self.put(ID_OFF, &end.to_le_bytes())?;
        }
        self.smiles_end += part.smiles_offset(n);
        self.ids_end += part.id_offset(n);
        // the part's rows, after its own header
        self.copy_file(
            REJECTS,
            &part.path().join(layout::REJECTS),
            rejects::HEADER.len() as u64,
        )?;
        self.counts = self.counts + part.manifest().counts;
        Ok(())
    }

    /// Syncs every file, writes the manifest, and renames the store into place.
    pub fn finish(mut self) -> Result<Manifest, StoreError> {
        let mut files = std::collections::BTreeMap::new();
        for (name, sink) in DATA_FILES.iter().zip(self.sinks.iter_mut()) {
            let p = self.tmp_path.join(name);
            sink.flush().map_err(|e| StoreError::io(&p, e))?;
            sink.get_mut()
                .get_ref()
                .sync_all()
                .map_err(|e| StoreError::io(&p, e))?;
            files.insert(
                name.to_string(),
                FileEntry {
                    bytes: sink.bytes(),
                    xxh3: sink.checksum(),
                },
            );
        }
        if let Some(sink) = self.duplicates.as_mut() {
            let p = self.tmp_path.join(duplicates::FILE);
            sink.flush().map_err(|e| StoreError::io(&p, e))?;
            sink.get_mut()
                .get_ref()
                .sync_all()
                .map_err(|e| StoreError::io(&p, e))?;
            let entry = FileEntry {
                bytes: sink.bytes(),
                xxh3: sink.checksum(),
            };
            files.insert(duplicates::FILE.to_string(), entry);
        }
        let manifest = Manifest {
            format: FORMAT_NAME.to_string(),
            format_version: FORMAT_VERSION,
            created_by: format!("molsift {}", env!("CARGO_PKG_VERSION")),
            fingerprint: self.spec.clone(),
            counts: self.counts,
            provenance: std::mem::take(&mut self.provenance),
            files,
            checksum: String::new(),
        }
        .sealed();
        manifest.write(&self.tmp_path)?;
        replace::sync_dir(&self.tmp_path)?;
        self.move_into_place()?;
        self.finished = true;
        Ok(manifest)
    }

    fn move_into_place(&self) -> Result<(), StoreError> {
        replace::swap_into_place(&self.tmp_path, &self.final_path, self.overwrite)
    }

    fn put(&mut self, sink: usize, bytes: &[u8]) -> Result<(), StoreError> {
        let name = DATA_FILES[sink];
        self.sinks[sink]
            .write_all(bytes)
            .map_err(|e| StoreError::io(self.tmp_path.join(name), e))
    }

    fn put_line(&mut self, sink: usize, text: &str) -> Result<(), StoreError> {
        self.put(sink, text.as_bytes())?;
        self.put(sink, b"\n")
    }

    /// Appends the file `from`, from byte `skip` on, to `sink`.
    fn copy_file(&mut self, sink: usize, from: &Path, skip: u64) -> Result<(), StoreError> {
        let mut f = CountedFile::open(from).map_err(|e| StoreError::io(from, e))?;
        let mut buf = vec![0u8; 1 << 20];
        let mut at = 0u64;
        loop {
            let n = f.read(&mut buf).map_err(|e| StoreError::io(from, e))?;
            if n == 0 {
                return Ok(());
            }
            let start = skip.saturating_sub(at).min(n as u64) as usize;
            at += n as u64;
            self.put(sink, &buf[start..n])?;
        }
    }
}

impl Drop for StoreWriter {
    fn drop(&mut self) {
        if !self.finished {
            let _ = std::fs::remove_dir_all(&self.tmp_path);
        }
    }
}

fn check_one_line(what: &str, text: &str) -> Result<(), StoreError> {
    if text.contains('\n') || text.contains('\r') {
        return Err(StoreError::Invalid(format!(
            "{what} {text:?} contains a line break"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> FingerprintSpec {
        FingerprintSpec::new("test", 64, serde_json::json!({})).unwrap()
    }

    #[test]
    fn packed_rows_split_into_one_row_per_molecule() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let mut w = StoreWriter::create(&path, spec(), false).unwrap();
        let (ids, smiles) = (
            vec!["a".to_string(), "b".into()],
            vec!["C".to_string(), "CC".into()],
        );
        let mut fps = 1u64.to_le_bytes().to_vec();
        fps.extend_from_slice(&(1u64 << 63).to_le_bytes());
        w.add_packed_rows(&ids, &smiles, &[3, 5], &fps).unwrap();
        let bad = w.add_packed_rows(&ids, &smiles, &[3], &fps).unwrap_err();
        assert!(bad.to_string().contains("differ in length"), "{bad}");
        let bad = w
            .add_packed_rows(&ids, &smiles, &[3, 5], &fps[..15])
            .unwrap_err();
        assert!(
            bad.to_string().contains("do not split into 2 rows"),
            "{bad}"
        );
        w.finish().unwrap();
        let s = Store::open(&path, crate::Verify::Full).unwrap();
        assert_eq!(
            (s.id(1).unwrap(), s.smiles(1).unwrap(), s.source_line(1)),
            ("b", "CC", 5)
        );
        assert_eq!((s.fingerprint(0)[0], s.fingerprint(1)[0]), (1, 1 << 63));
    }
}
