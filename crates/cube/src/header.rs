//! The cube header: two comment lines, the origin line (atom count, origin, optional values
//! per point), three axis lines (point count and step vector; a negative count means
//! Angstrom), one line per atom, and for a negative atom count the orbital-index lines.

use crate::error::CubeError;
use std::path::PathBuf;

/// Length unit of the origin, axes and atom positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Units {
    /// Bohr (atomic units): positive point counts, as Gaussian, CP2K and PySCF write.
    Bohr,
    /// Angstrom: the first axis' point count is negative (Gaussian's convention).
    Angstrom,
}

impl Units {
    /// `"bohr"` or `"angstrom"`.
    pub fn name(self) -> &'static str {
        match self {
            Units::Bohr => "bohr",
            Units::Angstrom => "angstrom",
        }
    }
}

/// One atom line: atomic number, charge (often 0 or Z) and position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Atom {
    /// Atomic number.
    pub number: i64,
    /// The second column (nuclear or partial charge).
    pub charge: f64,
    /// Position in [`Header::units`].
    pub position: [f64; 3],
}

/// Everything before the values.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// The two comment lines, without their line ends.
    pub comments: [String; 2],
    /// The atom count as written (negative: orbital lines follow the atoms).
    pub natoms_field: i64,
    /// Origin of the grid.
    pub origin: [f64; 3],
    /// The optional fifth field of the origin line (values per point), as written.
    pub nval_field: Option<i64>,
    /// Point counts along the three axes (positive).
    pub shape: [usize; 3],
    /// The point counts as written (their signs are the unit flag).
    pub shape_fields: [i64; 3],
    /// Step vectors of the three axes (rows).
    pub axes: [[f64; 3]; 3],
    /// Units of origin, axes and positions.
    pub units: Units,
    /// The atoms.
    pub atoms: Vec<Atom>,
    /// Orbital indices (files with a negative atom count).
    pub orbitals: Vec<i64>,
    /// Values per grid point (interleaved, fastest).
    pub nval: usize,
    /// Byte offset where the value area starts.
    pub values_offset: u64,
    /// Lines before the value area.
    pub header_lines: u64,
}

impl Header {
    /// Number of values the value area must hold: n1 * n2 * n3 * nval.
    pub fn value_count(&self) -> u64 {
        self.shape.iter().map(|&n| n as u64).product::<u64>() * self.nval as u64
    }
    /// Values in one (x, y) row: n3 * nval.
    pub fn row_values(&self) -> usize {
        self.shape[2] * self.nval
    }
}

struct Lines<'a> {
    b: &'a [u8],
    pos: usize,
    line: u64,
    path: PathBuf,
}

impl<'a> Lines<'a> {
    fn next(&mut self, what: &str) -> Result<(u64, u64, &'a str), CubeError> {
        if self.pos >= self.b.len() {
            return Err(self.err(
                self.line + 1,
                self.pos as u64,
                format!("the file ends before {what}"),
            ));
        }
        let start = self.pos;
        let end = memchr::memchr(b'\n', &self.b[start..]).map_or(self.b.len(), |p| start + p);
        self.pos = (end + 1).min(self.b.len());
        self.line += 1;
        let mut text = &self.b[start..end];
        if text.last() == Some(&b'\r') {
            text = &text[..text.len() - 1];
        }
        let text = std::str::from_utf8(text).map_err(|_| {
            self.err(
                self.line,
                start as u64,
                format!("{what} is not text (UTF-8)"),
            )
        })?;
        Ok((self.line, start as u64, text))
    }

    fn err(&self, line: u64, offset: u64, reason: String) -> CubeError {
        CubeError::Header {
            path: self.path.clone(),
            line,
            offset,
            reason,
        }
    }
}

fn num<T: std::str::FromStr>(tok: Option<&str>, what: &str) -> Result<T, String> {
    let tok = tok.ok_or_else(|| format!("{what} is missing"))?;
    tok.parse::<T>()
        .map_err(|_| format!("{what} is not a number: {tok:?}"))
}

fn float(tok: Option<&str>, what: &str) -> Result<f64, String> {
    let v: f64 = num(tok, what)?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("{what} is not finite"))
    }
}

/// Three finite numbers, named `names` in errors (a position, an origin, a step vector).
fn xyz<'a>(t: &mut impl Iterator<Item = &'a str>, names: [&str; 3]) -> Result<[f64; 3], String> {
    Ok([
        float(t.next(), names[0])?,
        float(t.next(), names[1])?,
        float(t.next(), names[2])?,
    ])
}

/// Largest point count per axis accepted (larger is a header that lies or a damaged file).
pub const MAX_POINTS_PER_AXIS: i64 = 1 << 20;
/// Largest atom count accepted.
pub const MAX_ATOMS: i64 = 10_000_000;

/// Parses the header at the start of `b` (the file's bytes, or at least its header).
pub fn parse_header(b: &[u8], path: &std::path::Path) -> Result<Header, CubeError> {
    let mut l = Lines {
        b,
        pos: 0,
        line: 0,
        path: path.to_path_buf(),
    };
    let c1 = l.next("the first comment line")?.2.to_string();
    let c2 = l.next("the second comment line")?.2.to_string();

    let (line, off, text) = l.next("the origin line (natoms ox oy oz)")?;
    let mut t = text.split_ascii_whitespace();
    let parsed = (|| {
        let natoms: i64 = num(t.next(), "the atom count")?;
        let o = xyz(&mut t, ["origin x", "origin y", "origin z"])?;
        let nval: Option<i64> = match t.next() {
            None => None,
            Some(tok) => Some(num(Some(tok), "the values per point (fifth field)")?),
        };
        if let Some(extra) = t.next() {
            return Err(format!(
                "unexpected field {extra:?} after the values per point"
            ));
        }
        if natoms.abs() > MAX_ATOMS {
            return Err(format!("atom count {natoms} is beyond {MAX_ATOMS}"));
        }
        if let Some(v) = nval {
            if v < 1 {
                return Err(format!("values per point must be at least 1, not {v}"));
            }
        }
        Ok((natoms, o, nval))
    })();
    let (natoms, origin, nval_field) = parsed.map_err(|r| l.err(line, off, r))?;

    let mut shape = [0usize; 3];
    let mut shape_fields = [0i64; 3];
    let mut axes = [[0.0; 3]; 3];
    for (i, axis) in ["first", "second", "third"].iter().enumerate() {
        let (line, off, text) = l.next(&format!("the {axis} axis line (n vx vy vz)"))?;
        let mut t = text.split_ascii_whitespace();
        let r = (|| {
            let n: i64 = num(t.next(), "the point count")?;
            let v = xyz(&mut t, ["vx", "vy", "vz"])?;
            if let Some(extra) = t.next() {
                return Err(format!("unexpected field {extra:?}"));
            }
            if n == 0 || n.abs() > MAX_POINTS_PER_AXIS {
                return Err(format!(
                    "point count {n} is not within 1..={MAX_POINTS_PER_AXIS} (sign aside)"
                ));
            }
            Ok((n, v))
        })();
        let (n, v) = r.map_err(|r| l.err(line, off, format!("{axis} axis: {r}")))?;
        shape_fields[i] = n;
        shape[i] = n.unsigned_abs() as usize;
        axes[i] = v;
    }
    let units = if shape_fields[0] < 0 {
        Units::Angstrom
    } else {
        Units::Bohr
    };

    let mut atoms = Vec::with_capacity(natoms.unsigned_abs() as usize);
    for k in 0..natoms.unsigned_abs() {
        let (line, off, text) = l.next(&format!("atom line {} of {}", k + 1, natoms.abs()))?;
        let mut t = text.split_ascii_whitespace();
        let r = (|| {
            // some writers print the atomic number as a float ("6.000000")
            let ztok = t.next();
            let number = match ztok.map(str::parse::<i64>) {
                Some(Ok(z)) => z,
                _ => {
                    let z = float(ztok, "the atomic number")?;
                    if z.fract() != 0.0 {
                        return Err(format!("atomic number {z} is not whole"));
                    }
                    z as i64
                }
            };
            let charge = float(t.next(), "the charge")?;
            let p = xyz(&mut t, ["x", "y", "z"])?;
            if let Some(extra) = t.next() {
                return Err(format!("unexpected field {extra:?}"));
            }
            Ok(Atom {
                number,
                charge,
                position: p,
            })
        })();
        atoms.push(r.map_err(|r| l.err(line, off, format!("atom {}: {r}", k + 1)))?);
    }

    let mut orbitals = Vec::new();
    let nval = if natoms < 0 {
        // count first, then that many indices, possibly over several lines
        let (line, off, text) = l.next("the orbital line (count, then indices)")?;
        let mut toks: Vec<&str> = text.split_ascii_whitespace().collect();
        let count: i64 =
            num(toks.first().copied(), "the orbital count").map_err(|r| l.err(line, off, r))?;
        if !(1..=1_000_000).contains(&count) {
            return Err(l.err(
                line,
                off,
                format!("orbital count {count} is not within 1..=1000000"),
            ));
        }
        toks.remove(0);
        let mut idx: Vec<i64> = Vec::with_capacity(count as usize);
        let (mut cur_line, mut cur_off) = (line, off);
        loop {
            for tok in &toks {
                if idx.len() as i64 == count {
                    return Err(l.err(
                        cur_line,
                        cur_off,
                        format!("more orbital indices than the count {count}"),
                    ));
                }
                idx.push(
                    num(Some(tok), "an orbital index").map_err(|r| l.err(cur_line, cur_off, r))?,
                );
            }
            if idx.len() as i64 == count {
                break;
            }
            let (line, off, text) = l.next("the rest of the orbital indices")?;
            toks = text.split_ascii_whitespace().collect();
            (cur_line, cur_off) = (line, off);
        }
        orbitals = idx;
        match nval_field {
            Some(v) if v != 1 && v != count => {
                return Err(l.err(3, first_line_len(b, 2), format!(
                    "the origin line says {v} values per point but the orbital line lists {count} orbitals"
                )))
            }
            _ => count as usize,
        }
    } else {
        nval_field.unwrap_or(1) as usize
    };
    let header = Header {
        comments: [c1, c2],
        natoms_field: natoms,
        origin,
        nval_field,
        shape,
        shape_fields,
        axes,
        units,
        atoms,
        orbitals,
        nval,
        values_offset: l.pos as u64,
        header_lines: l.line,
    };
    if header.value_count() > (1u64 << 40) {
        return Err(l.err(
            4,
            first_line_len(b, 3),
            format!(
                "{} values ({}x{}x{}x{}) is beyond what molsift reads (2^40)",
                header.value_count(),
                shape[0],
                shape[1],
                shape[2],
                nval
            ),
        ));
    }
    Ok(header)
}

/// Byte offset of the start of 0-based line `k`.
fn first_line_len(b: &[u8], k: usize) -> u64 {
    memchr::memchr_iter(b'\n', b)
        .nth(k.wrapping_sub(1))
        .map_or(0, |p| p as u64 + 1)
}
