//! Owns how a plain file is read: the [`ReadMethod`] a caller asks for (`auto`, `mmap`,
//! `pread`, `uring`, `direct`), and what `auto` decides from how much of the file is in the
//! page cache ([`resident_fraction`], by `mincore` on a sample of the file's pages).

use memmap2::Mmap;
use std::fmt;

/// How a plain file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ReadMethod {
    /// Decide per file: `Mmap` when it is (nearly) all in the page cache, `Direct` when
    /// (nearly) none of it is, buffered `Uring` in between; small files are mapped.
    #[default]
    Auto,
    /// Map the file and scan it in place; falls back to `Pread` if mapping fails.
    Mmap,
    /// Positioned reads, one at a time per thread, the kernel told the access is sequential
    /// and asked to read the next chunks ahead (`posix_fadvise`).
    Pread,
    /// Several large buffered reads in flight per thread (io_uring); `Pread` where the kernel
    /// refuses io_uring.
    Uring,
    /// As `Uring`, bypassing the page cache (`O_DIRECT`, aligned buffers, whole 4 KiB blocks);
    /// buffered `Uring` where the filesystem refuses `O_DIRECT`.
    Direct,
}

impl ReadMethod {
    /// Every method, as named on the command line.
    pub const ALL: [ReadMethod; 5] = [
        ReadMethod::Auto,
        ReadMethod::Mmap,
        ReadMethod::Pread,
        ReadMethod::Uring,
        ReadMethod::Direct,
    ];

    /// The method called `name` (`auto`, `mmap`, `pread`, `uring` or `direct`).
    pub fn named(name: &str) -> Option<ReadMethod> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The method's name, as the command line and reports give it.
    pub fn name(self) -> &'static str {
        match self {
            ReadMethod::Auto => "auto",
            ReadMethod::Mmap => "mmap",
            ReadMethod::Pread => "pread",
            ReadMethod::Uring => "uring",
            ReadMethod::Direct => "direct",
        }
    }
}

impl fmt::Display for ReadMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `auto` maps files smaller than this whatever their caching: a few page faults cost less
/// than setting up reads.
pub const AUTO_MAP_BELOW: u64 = 8 << 20;
/// `auto` maps a file when at least this share of its sampled pages is cached.
pub const AUTO_CACHED: f64 = 0.9;
/// `auto` reads a file direct when at most this share of its sampled pages is cached.
pub const AUTO_COLD: f64 = 0.1;

/// What `auto` decides for a file of `len` bytes of which `cached` (0 to 1) is in the page
/// cache (`None`: unknown), and why, in words for the report.
pub fn auto_choice(len: u64, cached: Option<f64>) -> (ReadMethod, String) {
    if len < AUTO_MAP_BELOW {
        return (
            ReadMethod::Mmap,
            format!("auto: under {} MiB", AUTO_MAP_BELOW >> 20),
        );
    }
    match cached {
        None => (
            ReadMethod::Mmap,
            "auto: page cache unknown (mincore failed)".into(),
        ),
        Some(f) if f >= AUTO_CACHED => {
            (ReadMethod::Mmap, format!("auto: {:.0}% cached", f * 100.0))
        }
        Some(f) if f <= AUTO_COLD => (
            ReadMethod::Direct,
            format!("auto: {:.0}% cached", f * 100.0),
        ),
        Some(f) => (ReadMethod::Uring, format!("auto: {:.0}% cached", f * 100.0)),
    }
}

/// Pages per sampled window, and windows sampled, by [`resident_fraction`].
const WINDOW_PAGES: usize = 256;
const WINDOWS: usize = 256;

/// The share of the mapped file's pages that are in the page cache, from `mincore` on the
/// whole file when it has at most 64 Ki pages, else on 256 evenly spaced 1 MiB windows.
/// Touches no page. `None` if `mincore` fails.
pub fn resident_fraction(map: &Mmap) -> Option<f64> {
    // SAFETY: sysconf has no preconditions.
    let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        p if p > 0 => p as usize,
        _ => 4096,
    };
    let pages = map.len().div_ceil(page);
    if pages == 0 {
        return Some(1.0);
    }
    let windows: Vec<(usize, usize)> = if pages <= WINDOW_PAGES * WINDOWS {
        vec![(0, pages)]
    } else {
        let step = pages / WINDOWS;
        (0..WINDOWS)
            .map(|w| (w * step, WINDOW_PAGES.min(pages - w * step)))
            .collect()
    };
    let mut vec = vec![0u8; windows.iter().map(|w| w.1).max().unwrap_or(0)];
    let (mut seen, mut resident) = (0usize, 0usize);
    for (first, n) in windows {
        let len = (n * page).min(map.len() - first * page);
        // SAFETY: the range lies inside the live mapping, starts on a page boundary (the map
        // does) and `vec` holds a byte for each of its pages.
        let r = unsafe {
            libc::mincore(
                map.as_ptr().add(first * page) as *mut libc::c_void,
                len,
                vec.as_mut_ptr(),
            )
        };
        if r != 0 {
            return None;
        }
        seen += n;
        resident += vec[..n].iter().filter(|&&b| b & 1 == 1).count();
    }
    Some(resident as f64 / seen as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in ReadMethod::ALL {
            assert_eq!(ReadMethod::named(m.name()), Some(m));
        }
        assert_eq!(ReadMethod::named("mmapp"), None);
    }

    #[test]
    fn auto_decides_by_size_and_cache() {
        let big = 1 << 30;
        assert_eq!(auto_choice(1 << 20, Some(0.0)).0, ReadMethod::Mmap);
        assert_eq!(auto_choice(big, Some(0.95)).0, ReadMethod::Mmap);
        assert_eq!(auto_choice(big, Some(0.5)).0, ReadMethod::Uring);
        assert_eq!(auto_choice(big, Some(0.02)).0, ReadMethod::Direct);
        assert_eq!(auto_choice(big, None).0, ReadMethod::Mmap);
        assert!(auto_choice(big, Some(0.5)).1.contains("50% cached"));
    }

    #[test]
    fn a_file_just_written_is_resident() {
        use std::io::Write;
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&vec![b'x'; 3 << 20]).unwrap();
        f.flush().unwrap();
        // SAFETY: the test's own file, not changed while mapped.
        let map = unsafe { Mmap::map(f.as_file()) }.unwrap();
        let got = resident_fraction(&map).unwrap();
        assert!(got > 0.5, "{got}");
    }
}
