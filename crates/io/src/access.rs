//! Owns how a plain file is read: the [`ReadMethod`] a caller asks for (`auto`, `mmap`,
//! `pread`, `uring`, `direct`), what `auto` decides from how much of the file is in the page
//! cache ([`resident_fraction`], by `mincore` on a sample of the file's pages), and the file
//! opened that way with the fallbacks applied ([`Opened`], shared by the counter and the slab
//! reader).

use crate::ahead::uring_available;
use crate::error::IoError;
use memmap2::{Advice, Mmap};
use molsift_iostats::CountedFile;
use std::fmt;
use std::ops::Range;
use std::path::Path;

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

/// What `auto` decides for `len` bytes of a file of which `cached` (0 to 1) is in the page
/// cache (`None`: unknown), and why, in words for the report. `warm` is the way for cached
/// or small data: `Mmap` for the counter, `Pread` for the slab reader (its parse sets the pace,
/// and a copy per buffer costs nothing next to it). Anything less cached is read by `pread`
/// with the kernel's read-ahead advised (`SEQUENTIAL`, `WILLNEED` on the next chunks), cold
/// files too: `auto` never reads direct. On the virtual disks measured (docs/reading.md)
/// `O_DIRECT` ran at 0.35-0.6 of the buffered ways on a cold file, and buffered io_uring (its
/// reads of uncached pages go through the kernel's worker threads) at 0.8-0.85 of `pread`;
/// `--io direct` stays for a file larger than memory whose reading must not evict the cache.
pub fn auto_choice(len: u64, cached: Option<f64>, warm: ReadMethod) -> (ReadMethod, String) {
    if len < AUTO_MAP_BELOW {
        return (warm, format!("auto: under {} MiB", AUTO_MAP_BELOW >> 20));
    }
    let why = |f: f64| format!("auto: {:.0}% cached", f * 100.0);
    match cached {
        None => (warm, "auto: page cache unknown (mincore failed)".into()),
        Some(f) if f >= AUTO_CACHED => (warm, why(f)),
        Some(f) => (ReadMethod::Pread, why(f)),
    }
}

/// Pages per sampled window, and windows sampled, by [`resident_fraction`].
const WINDOW_PAGES: usize = 256;
const WINDOWS: usize = 256;

/// The share of the pages of `range` of the mapped file that are in the page cache, from
/// `mincore` on the whole range when it has at most 64 Ki pages, else on 256 evenly spaced
/// 1 MiB windows. Touches no page. `None` if `mincore` fails.
pub fn resident_fraction(map: &Mmap, range: Range<u64>) -> Option<f64> {
    // SAFETY: sysconf has no preconditions.
    let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        p if p > 0 => p as usize,
        _ => 4096,
    };
    let end = (range.end as usize).min(map.len());
    let first = (range.start as usize).min(end) / page;
    let pages = end.div_ceil(page).saturating_sub(first);
    if pages == 0 {
        return Some(1.0);
    }
    let windows: Vec<(usize, usize)> = if pages <= WINDOW_PAGES * WINDOWS {
        vec![(first, pages)]
    } else {
        let step = pages / WINDOWS;
        (0..WINDOWS)
            .map(|w| (first + w * step, WINDOW_PAGES.min(pages - w * step)))
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

/// Adds `why` to a report's reason for the way a file was read (`; ` between reasons).
pub(crate) fn add_reason(reason: &mut String, why: &str) {
    if !reason.is_empty() {
        reason.push_str("; ");
    }
    reason.push_str(why);
}

/// A file opened for reading as a [`ReadMethod`] says, `auto` decided and fallbacks applied.
pub(crate) struct Opened {
    /// The file, buffered (small reads, and every read but direct ones).
    pub file: CountedFile,
    /// The file opened `O_DIRECT`, for `Direct`.
    pub direct: Option<CountedFile>,
    /// The file's size (0, not looked up, for the pread of a given range).
    pub len: u64,
    /// The whole file mapped, for `Mmap`.
    pub map: Option<Mmap>,
    /// How to read: `Mmap`, `Pread`, `Uring` or `Direct`, never `Auto`.
    pub how: ReadMethod,
    /// Why (what `auto` saw, a fallback and its cause); empty when as asked.
    pub reason: String,
    /// Reads go through io_uring (`Uring`, `Direct`).
    pub uring: bool,
}

impl Opened {
    /// Opens `path` to read `range` of it (`None`: all of it) as `method` says; `warm`: what
    /// `auto` takes for cached or small data (see [`auto_choice`]).
    pub(crate) fn open(
        path: &Path,
        method: ReadMethod,
        range: Option<Range<u64>>,
        warm: ReadMethod,
    ) -> Result<Opened, IoError> {
        let open_err = |source| IoError::Open {
            path: path.to_path_buf(),
            source,
        };
        let file = CountedFile::open(path).map_err(open_err)?;
        // A small slab that `auto` reads by pread (or any slab read by pread) needs neither the
        // file's size nor its page-cache state: no stat, no map, as before `--io` existed.
        let small = matches!(&range, Some(r) if r.end.saturating_sub(r.start) < AUTO_MAP_BELOW);
        let plain = method == ReadMethod::Pread
            || (method == ReadMethod::Auto && small && warm == ReadMethod::Pread);
        if range.is_some() && plain {
            let reason = match method {
                ReadMethod::Auto => format!("auto: under {} MiB", AUTO_MAP_BELOW >> 20),
                _ => String::new(),
            };
            return Ok(Opened {
                file,
                direct: None,
                len: 0,
                map: None,
                how: ReadMethod::Pread,
                reason,
                uring: false,
            });
        }
        let len = file.metadata().map_err(open_err)?.len();
        let mut o = Opened {
            file,
            direct: None,
            len,
            map: None,
            how: method,
            reason: String::new(),
            uring: false,
        };
        if len == 0 {
            o.how = ReadMethod::Mmap;
            return Ok(o);
        }
        if method == ReadMethod::Auto {
            let range = range.unwrap_or(0..len);
            let map = o.map_file();
            let cached = map
                .as_ref()
                .and_then(|m| resident_fraction(m, range.clone()));
            let span = range.end.min(len) - range.start.min(len);
            let (how, reason) = auto_choice(span, cached, warm);
            (o.how, o.reason) = (how, reason);
            if how == ReadMethod::Mmap {
                o.map = map;
            }
        }
        if o.how == ReadMethod::Mmap && o.map.is_none() {
            o.map = o.map_file();
            if o.map.is_none() {
                o.fall_back(ReadMethod::Pread, "the file could not be mapped");
            }
        }
        if o.how == ReadMethod::Direct {
            match CountedFile::open_flags(path, libc::O_RDONLY | libc::O_DIRECT, 0) {
                Ok(f) => o.direct = Some(f),
                Err(e) => o.fall_back(
                    ReadMethod::Uring,
                    &format!("the filesystem refused O_DIRECT ({e})"),
                ),
            }
        }
        if matches!(o.how, ReadMethod::Uring | ReadMethod::Direct) {
            match uring_available() {
                Ok(()) => o.uring = true,
                Err(e) if o.how == ReadMethod::Uring => {
                    o.fall_back(ReadMethod::Pread, &format!("io_uring unavailable ({e})"))
                }
                Err(e) => o.note(&format!(
                    "io_uring unavailable ({e}): one direct read at a time per thread"
                )),
            }
        }
        if let Some(m) = &o.map {
            let _ = m.advise(Advice::Sequential);
        }
        Ok(o)
    }

    /// Maps the whole file, or `None` if the system refuses.
    fn map_file(&self) -> Option<Mmap> {
        // SAFETY: the map is only read; if another process truncates the file while it is
        // mapped, reads past the new end fault. This is the usual contract of reading a file
        // by mmap. Counted as one MMAPS: bytes read through the map are not counted as reads.
        unsafe { self.file.map() }.ok()
    }

    /// Adds `why` to the reason for the way the file is read.
    fn note(&mut self, why: &str) {
        add_reason(&mut self.reason, why);
    }

    /// Reads the file `to` instead of the way decided so far, because of `why`.
    fn fall_back(&mut self, to: ReadMethod, why: &str) {
        let from = self.how;
        self.note(&format!("{from} asked, {why}: {to} instead"));
        self.how = to;
    }

    /// The file direct reads go to when `how` is `Direct`, else the buffered one.
    pub(crate) fn reading_file(&self) -> &CountedFile {
        match (&self.direct, self.how) {
            (Some(f), ReadMethod::Direct) => f,
            _ => &self.file,
        }
    }
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
        let m = ReadMethod::Mmap;
        assert_eq!(auto_choice(1 << 20, Some(0.0), m).0, ReadMethod::Mmap);
        assert_eq!(auto_choice(big, Some(0.95), m).0, ReadMethod::Mmap);
        assert_eq!(
            auto_choice(big, Some(0.95), ReadMethod::Pread).0,
            ReadMethod::Pread
        );
        assert_eq!(auto_choice(big, Some(0.5), m).0, ReadMethod::Pread);
        // cold: buffered reads with read-ahead, never direct
        assert_eq!(auto_choice(big, Some(0.0), m).0, ReadMethod::Pread);
        assert_eq!(
            auto_choice(big, Some(0.02), ReadMethod::Pread).0,
            ReadMethod::Pread
        );
        assert_eq!(auto_choice(big, None, m).0, ReadMethod::Mmap);
        assert!(auto_choice(big, Some(0.5), m).1.contains("50% cached"));
    }

    #[test]
    fn a_file_just_written_is_resident_and_a_dropped_one_is_not() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&vec![b'x'; 3 << 20]).unwrap();
        f.flush().unwrap();
        // SAFETY: the test's own file, not changed while mapped.
        let map = unsafe { Mmap::map(f.as_file()) }.unwrap();
        let got = resident_fraction(&map, 0..3 << 20).unwrap();
        assert!(got > 0.5, "{got}");
        // Written back and dropped from the cache: (nearly) none of it is resident.
        f.as_file().sync_all().unwrap();
        // SAFETY: advice on the test's own open file.
        unsafe { libc::posix_fadvise(f.as_file().as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        let got = resident_fraction(&map, 0..3 << 20).unwrap();
        assert!(got < 0.1, "{got}");
    }
}
