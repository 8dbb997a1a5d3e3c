//! The exact-match form of the molecules: `pattern.graphs.bin`, one small record per molecule
//! holding the heavy-atom graph with the atom and bond properties RDKit's substructure queries
//! test (computed by RDKit when the index is built, so ring counts, aromaticity and H counts
//! are RDKit's own), and [`MolGraph`], a record decoded for the matcher.
//!
//! File: `b"MSGRAPH1"`, `n` (u64), `n + 1` offsets (u64, from the start of the records), then
//! the records. A record is `[atoms u8][bonds u8]`, then [`ATOM_BYTES`] per atom
//! (`atomic number, formal charge (i8), implicit + explicit H count (not H neighbours), number
//! of SSSR rings, smallest ring size, total valence, hybridization, flags`: bit 0 aromatic,
//! bits 1-3 radical electrons, the rest 0), then [`BOND_BYTES`] per bond (`begin,
//! end, type | aromatic << 5 | in ring << 6`, type 1, 2, 3 or 12; written in ascending
//! (begin, end) order with begin < end, though a reader takes any order). An empty record is a
//! molecule the form does not describe (more than 255 atoms or bonds, an isotope, another
//! bond type, or RDKit could not parse it): the matcher hands it back to RDKit.

use crate::SubstructureError;

/// The graphs file's name.
pub const GRAPHS_FILE: &str = molsift_store::layout::PATTERN_FILES[2];
/// First bytes of the graphs file.
pub const MAGIC: &[u8; 8] = b"MSGRAPH1";
/// Bytes per atom in a record.
pub const ATOM_BYTES: usize = 8;
/// Bytes per bond in a record.
pub const BOND_BYTES: usize = 3;
/// Bond types a record may hold (RDKit's `BondType` values: single, double, triple, aromatic).
pub const BOND_TYPES: [u8; 4] = [1, 2, 3, 12];

/// Bytes before the records for `n` molecules.
pub fn records_start(n: usize) -> usize {
    16 + 8 * (n + 1)
}

/// One molecule's graph, decoded (buffers are reused from molecule to molecule).
#[derive(Debug, Default, Clone)]
pub struct MolGraph {
    /// atoms
    pub n: usize,
    /// atomic numbers
    pub anum: Vec<u8>,
    /// formal charges
    pub charge: Vec<i8>,
    /// H count not counting H neighbours (RDKit `GetTotalNumHs(False)`)
    pub hs: Vec<u8>,
    /// SSSR rings the atom is in
    pub nrings: Vec<u8>,
    /// smallest ring size (0: in no ring)
    pub min_ring: Vec<u8>,
    /// total valence
    pub valence: Vec<u8>,
    /// RDKit hybridization value
    pub hyb: Vec<u8>,
    /// aromatic flags
    pub arom: Vec<bool>,
    /// radical electrons
    pub radicals: Vec<u8>,
    /// heavy-atom degree (bonds in the graph)
    pub degree: Vec<u8>,
    /// H neighbours (explicit H atoms in the graph)
    pub h_nbrs: Vec<u8>,
    /// ring bonds at the atom
    pub ring_bonds: Vec<u8>,
    /// neighbours of atom `i`: `adj[adj_start[i]..adj_start[i + 1]]` as (atom, bond)
    pub adj_start: Vec<u32>,
    /// (neighbour, bond index)
    pub adj: Vec<(u8, u8)>,
    /// bond types
    pub btype: Vec<u8>,
    /// bonds in a ring
    pub bring: Vec<bool>,
    /// aromatic bonds
    pub barom: Vec<bool>,
}

impl MolGraph {
    /// Decodes `rec` (a non-empty record); `Err` names what is inconsistent.
    pub fn decode(&mut self, rec: &[u8]) -> Result<(), String> {
        if rec.len() < 2 {
            return Err(format!("a record of {} bytes", rec.len()));
        }
        let (na, nb) = (rec[0] as usize, rec[1] as usize);
        if rec.len() != 2 + na * ATOM_BYTES + nb * BOND_BYTES {
            return Err(format!("{} bytes for {na} atoms and {nb} bonds", rec.len()));
        }
        self.n = na;
        for v in [
            &mut self.anum,
            &mut self.hs,
            &mut self.nrings,
            &mut self.min_ring,
            &mut self.valence,
            &mut self.hyb,
            &mut self.radicals,
            &mut self.degree,
            &mut self.h_nbrs,
            &mut self.ring_bonds,
        ] {
            v.clear();
        }
        self.charge.clear();
        self.arom.clear();
        for a in rec[2..2 + na * ATOM_BYTES].chunks_exact(ATOM_BYTES) {
            self.anum.push(a[0]);
            self.charge.push(a[1] as i8);
            self.hs.push(a[2]);
            self.nrings.push(a[3]);
            self.min_ring.push(a[4]);
            self.valence.push(a[5]);
            self.hyb.push(a[6]);
            self.arom.push(a[7] & 1 != 0);
            self.radicals.push((a[7] >> 1) & 7);
        }
        self.degree.resize(na, 0);
        self.h_nbrs.resize(na, 0);
        self.ring_bonds.resize(na, 0);
        self.btype.clear();
        self.bring.clear();
        self.barom.clear();
        let bonds = &rec[2 + na * ATOM_BYTES..];
        for b in bonds.chunks_exact(BOND_BYTES) {
            let (x, y, code) = (b[0] as usize, b[1] as usize, b[2]);
            let t = code & 31;
            if x >= na || y >= na || x == y || !BOND_TYPES.contains(&t) {
                return Err(format!("bond {x}-{y} of type {t} in {na} atoms"));
            }
            let ring = code & 64 != 0;
            self.btype.push(t);
            self.bring.push(ring);
            self.barom.push(code & 32 != 0);
            for (u, v) in [(x, y), (y, x)] {
                self.degree[u] += 1;
                if self.anum[v] == 1 {
                    self.h_nbrs[u] += 1;
                }
                if ring {
                    self.ring_bonds[u] += 1;
                }
            }
        }
        self.adj_start.clear();
        let mut at = 0u32;
        for &d in &self.degree {
            self.adj_start.push(at);
            at += u32::from(d);
        }
        self.adj_start.push(at);
        self.adj.clear();
        self.adj.resize(at as usize, (0, 0));
        let mut fill: Vec<u32> = self.adj_start[..na].to_vec();
        for (k, b) in bonds.chunks_exact(BOND_BYTES).enumerate() {
            for (u, v) in [(b[0], b[1]), (b[1], b[0])] {
                let slot = &mut fill[u as usize];
                self.adj[*slot as usize] = (v, k as u8);
                *slot += 1;
            }
        }
        Ok(())
    }

    /// Neighbours of atom `i` as (atom, bond).
    #[inline]
    pub fn neighbors(&self, i: usize) -> &[(u8, u8)] {
        &self.adj[self.adj_start[i] as usize..self.adj_start[i + 1] as usize]
    }

    /// The bond between atoms `i` and `j`, if any.
    #[inline]
    pub fn bond_between(&self, i: usize, j: usize) -> Option<usize> {
        let (a, b) = if self.degree[i] <= self.degree[j] {
            (i, j)
        } else {
            (j, i)
        };
        self.neighbors(a)
            .iter()
            .find(|&&(v, _)| v as usize == b)
            .map(|&(_, k)| k as usize)
    }
}

/// The graphs file, mapped: a record per molecule.
pub struct Graphs<'a> {
    offsets: &'a [u8],
    records: &'a [u8],
    n: usize,
}

impl<'a> Graphs<'a> {
    /// Reads the frame of a graphs file of `n` molecules (`path` names it in errors).
    pub fn new(
        bytes: &'a [u8],
        n: usize,
        path: &std::path::Path,
    ) -> Result<Graphs<'a>, SubstructureError> {
        let bad = |reason: String| SubstructureError::Corrupted {
            path: path.to_path_buf(),
            reason,
        };
        let start = records_start(n);
        if bytes.len() < start || &bytes[..8] != MAGIC {
            return Err(bad(format!(
                "{} bytes, not a graphs file of {n} molecules",
                bytes.len()
            )));
        }
        let stored = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
        if stored != n as u64 {
            return Err(bad(format!("{stored} molecules, the store has {n}")));
        }
        let g = Graphs {
            offsets: &bytes[16..start],
            records: &bytes[start..],
            n,
        };
        if g.offset(n) != g.records.len() as u64 || g.offset(0) != 0 {
            return Err(bad(format!(
                "offsets end at {}, the records hold {} bytes",
                g.offset(n),
                g.records.len()
            )));
        }
        Ok(g)
    }

    fn offset(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.offsets[8 * i..8 * i + 8].try_into().expect("8 bytes"))
    }

    /// Molecules.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True for no molecule.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The length of molecule `i`'s record, from the offsets alone; `None` when they are broken.
    pub fn record_len(&self, i: usize) -> Option<usize> {
        let (a, b) = (self.offset(i), self.offset(i + 1));
        if a > b || b > self.records.len() as u64 {
            return None;
        }
        Some((b - a) as usize)
    }

    /// The record of molecule `i` (empty: not described); `None` when its offsets are broken.
    pub fn record(&self, i: usize) -> Option<&'a [u8]> {
        let (a, b) = (self.offset(i), self.offset(i + 1));
        if a > b || b > self.records.len() as u64 {
            return None;
        }
        Some(&self.records[a as usize..b as usize])
    }
}
