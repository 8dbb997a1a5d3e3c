//! molsift-iostats: molsift's built-in I/O counters. Every file operation of molsift (the
//! readers of `molsift-io`, the store, the column index, the Python writers through the glue)
//! goes through them.
//!
//! - [`CountedFile`]: a file whose open, read, write, seek, stat, sync, mmap and close are timed
//!   and counted on the record of its path; [`metadata`], [`read_file`] and [`write_file`] do
//!   the same for one call on a path.
//! - The process-global, thread-safe table of per-file records ([`FileStats`]) with Darshan's
//!   POSIX counters (the same names and rules as the LD_PRELOAD tracer `crates/tracer/tracer.c`,
//!   see `docs/io-log-format.md`), read back with [`counters`].
//! - [`process_json`]: the whole process as one "process" object of the I/O log.
//!
//! Always on. `MOLSIFT_IOSTATS=0` turns recording off for the process (read once, at the first
//! use); it exists only so that a benchmark can measure what recording costs ([`set_enabled`]).
//!
//! ```
//! use molsift_iostats::{self as iostats, CountedFile};
//! # let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("x.bin");
//! let f = CountedFile::create(&path).unwrap();
//! f.write_at(&[7u8; 300], 0).unwrap();
//! drop(f);
//! let f = CountedFile::open(&path).unwrap();
//! let mut buf = [0u8; 100];
//! for i in 0..3 {
//!     f.read_at(&mut buf, 100 * i).unwrap();
//! }
//! let c = iostats::counters(&path).unwrap();
//! assert_eq!((c["OPENS"], c["READS"], c["BYTES_READ"], c["WRITES"]), (2, 3, 300, 1));
//! assert_eq!(c["CONSEC_READS"], 2);
//! let process: serde_json::Value = serde_json::from_str(&iostats::process_json("exit")).unwrap();
//! assert!(process["records"].as_array().unwrap().len() >= 1);
//! ```

#![deny(missing_docs)]

mod clock;
mod file;
mod record;

pub use file::{metadata, read_file, write_file, CountedFile};
pub use record::{
    size_bin, FileStats, COUNTER_NAMES, FCOUNTER_NAMES, HEAT_BINS, HEAT_FIRST_WIDTH, MEM_ALIGNMENT,
};

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use record::{NCOUNTERS, NFCOUNTERS};

/// Bumped in a fork child: the child starts a new table (its counts start at zero).
static FORK_GEN: AtomicU64 = AtomicU64::new(0);
/// The current table (leaked: one per process image, plus one per fork).
static REGISTRY: AtomicPtr<Registry> = AtomicPtr::new(std::ptr::null_mut());
static ATFORK: Once = Once::new();

/// The per-process table of file records.
struct Registry {
    gen: u64,
    pid: u32,
    forked_from: Option<u32>,
    t0: Instant,
    clock: clock::Clock,
    start_epoch: f64,
    enabled: AtomicBool,
    files: Mutex<Files>,
    failed_opens: AtomicI64,
    failed_stats: AtomicI64,
}

#[derive(Default)]
struct Files {
    by_path: HashMap<String, usize>,
    records: Vec<Arc<FileStats>>,
}

extern "C" fn after_fork_in_child() {
    FORK_GEN.fetch_add(1, Ordering::SeqCst);
}

fn registry() -> &'static Registry {
    let gen = FORK_GEN.load(Ordering::Acquire);
    let p = REGISTRY.load(Ordering::Acquire);
    // SAFETY: a registry is leaked once created and never freed.
    if let Some(r) = unsafe { p.as_ref() } {
        if r.gen == gen {
            return r;
        }
    }
    ATFORK.call_once(|| {
        // SAFETY: the handler only bumps an atomic, which is async-signal-safe.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    });
    // SAFETY: as above.
    let old = unsafe { p.as_ref() };
    let forked = old.filter(|r| r.pid != std::process::id());
    let fresh = Box::into_raw(Box::new(Registry {
        gen,
        pid: std::process::id(),
        forked_from: forked.map(|r| r.pid),
        t0: Instant::now(),
        clock: clock::Clock::start(),
        start_epoch: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
        enabled: AtomicBool::new(old.map_or_else(
            || std::env::var("MOLSIFT_IOSTATS").as_deref() != Ok("0"),
            |r| r.enabled.load(Ordering::Relaxed),
        )),
        files: Mutex::new(Files::default()),
        failed_opens: AtomicI64::new(0),
        failed_stats: AtomicI64::new(0),
    }));
    match REGISTRY.compare_exchange(p, fresh, Ordering::AcqRel, Ordering::Acquire) {
        // Files the parent had open stay counted in a fork child, from zero (as the tracer):
        // their CountedFile finds its record again in the new table by path. The old table is
        // never touched: another thread may have held its lock when the process forked.
        // SAFETY: just stored; never freed.
        Ok(_) => unsafe { &*fresh },
        Err(current) => {
            // Another thread got there first: drop ours, use theirs.
            // SAFETY: `fresh` was never shared.
            drop(unsafe { Box::from_raw(fresh) });
            unsafe { &*current }
        }
    }
}

impl Registry {
    fn record(&self, path: &Path) -> Arc<FileStats> {
        let key = clean_path(path);
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&i) = files.by_path.get(&key) {
            return Arc::clone(&files.records[i]);
        }
        let rec = Arc::new(FileStats::new(key.clone(), self.clock));
        let i = files.records.len();
        files.records.push(Arc::clone(&rec));
        files.by_path.insert(key, i);
        rec
    }
}

/// Whether this process records I/O (`MOLSIFT_IOSTATS` is not `0`).
pub fn enabled() -> bool {
    registry().enabled.load(Ordering::Relaxed)
}

/// Turns recording on or off for files opened from now on (files already open keep counting or
/// not). For benchmarks that compare both in one process; `MOLSIFT_IOSTATS=0` sets it at start.
pub fn set_enabled(on: bool) {
    registry().enabled.store(on, Ordering::Relaxed);
}

/// The record of `path` (created if new), or `None` when recording is off.
pub(crate) fn file_stats(path: &Path) -> Option<(Arc<FileStats>, u64)> {
    let r = registry();
    r.enabled
        .load(Ordering::Relaxed)
        .then(|| (r.record(path), r.gen))
}

/// Whether a record fetched at generation `gen` still belongs to this process's table.
#[inline]
pub(crate) fn current_gen() -> u64 {
    FORK_GEN.load(Ordering::Relaxed)
}

pub(crate) fn failed_open() {
    registry().failed_opens.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn failed_stat() {
    registry().failed_stats.fetch_add(1, Ordering::Relaxed);
}

/// `path` made absolute (against the working directory) and cleaned lexically (`//`, `/./`,
/// `/../`; symbolic links are not resolved), as the tracer names files.
pub fn clean_path(path: &Path) -> String {
    let abs: PathBuf = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for c in abs.components() {
        match c {
            std::path::Component::Normal(s) => parts.push(s),
            std::path::Component::ParentDir => {
                parts.pop();
            }
            _ => {}
        }
    }
    let mut out = String::new();
    for p in parts {
        out.push('/');
        out.push_str(&p.to_string_lossy());
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// The integer counters of `path` in this process (only those that are not zero), or `None`
/// when it has no record or recording is off. For tests and reports.
pub fn counters(path: &Path) -> Option<BTreeMap<&'static str, i64>> {
    let r = registry();
    let key = clean_path(path);
    let files = r.files.lock().unwrap_or_else(|e| e.into_inner());
    let rec = files.records[*files.by_path.get(&key)?].snapshot();
    Some(
        COUNTER_NAMES
            .iter()
            .zip(rec.c)
            .filter(|(_, v)| *v != 0)
            .map(|(k, v)| (*k, v))
            .collect(),
    )
}

/// This process's I/O as one "process" object of the I/O log format (docs/io-log-format.md):
/// pid, ppid, rank, hostname, exe, argv, start time, wall seconds, `ended_by`, and one record
/// per file with any counted call. `"counted_by": "molsift"` tells it from the tracer's.
pub fn process_json(ended_by: &str) -> String {
    let r = registry();
    let wall = r.t0.elapsed().as_secs_f64();
    let snaps: Vec<(String, record::Counters)> = {
        let files = r.files.lock().unwrap_or_else(|e| e.into_inner());
        files
            .records
            .iter()
            .map(|f| (f.path.clone(), f.snapshot()))
            .collect()
    };
    let snaps: Vec<_> = snaps.into_iter().filter(|(_, c)| c.active()).collect();
    let width = snaps
        .iter()
        .map(|(_, c)| c.heat.width)
        .fold(HEAT_FIRST_WIDTH, f64::max);
    let records: Vec<serde_json::Value> = snaps
        .into_iter()
        .map(|(path, mut c)| {
            c.heat.widen_to(width);
            record_json(&path, &c)
        })
        .collect();
    let value = serde_json::json!({
        "pid": r.pid,
        "ppid": unsafe { libc::getppid() },
        "forked_from": r.forked_from,
        "rank": env_rank(),
        "hostname": hostname(),
        "exe": std::fs::read_link("/proc/self/exe").map(|p| p.to_string_lossy().into_owned()).unwrap_or_default(),
        "argv": argv(),
        "start_time": (r.start_epoch * 1e6).round() / 1e6,
        "wall_seconds": wall,
        "ended_by": ended_by,
        "failed_opens": r.failed_opens.load(Ordering::Relaxed),
        "failed_stats": r.failed_stats.load(Ordering::Relaxed),
        "dropped_records": 0,
        "heatmap_bin_seconds": width,
        "counted_by": "molsift",
        "records": records,
    });
    value.to_string()
}

fn record_json(path: &str, c: &record::Counters) -> serde_json::Value {
    let mut counters = serde_json::Map::new();
    for (k, &v) in COUNTER_NAMES.iter().zip(c.c.iter()).take(NCOUNTERS) {
        if v != 0 {
            counters.insert((*k).into(), v.into());
        }
    }
    if c.c[record::READS] != 0 || c.c[record::WRITES] != 0 {
        counters.insert("MEM_ALIGNMENT".into(), MEM_ALIGNMENT.into());
        counters.insert("FILE_ALIGNMENT".into(), c.file_alignment.into());
    }
    let mut fcounters = serde_json::Map::new();
    for (k, &v) in FCOUNTER_NAMES.iter().zip(c.f.iter()).take(NFCOUNTERS) {
        if v != 0.0 {
            fcounters.insert((*k).into(), v.into());
        }
    }
    let trim = |row: &[i64; HEAT_BINS]| {
        let n = row.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        row[..n].to_vec()
    };
    serde_json::json!({
        "module": "POSIX",
        "file": path,
        "file_size": c.file_size,
        "counters": counters,
        "fcounters": fcounters,
        "heatmap": {"read": trim(&c.heat.bins[0]), "write": trim(&c.heat.bins[1])},
    })
}

/// MPI rank from `OMPI_COMM_WORLD_RANK`, `PMI_RANK` or `PMIX_RANK`, as the tracer reads it.
fn env_rank() -> Option<u64> {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok().and_then(|s| s.parse().ok()))
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its length minus the terminator we keep.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) } == 0;
    let n = buf.iter().position(|&b| b == 0).unwrap_or(0);
    if ok {
        String::from_utf8_lossy(&buf[..n]).into_owned()
    } else {
        String::new()
    }
}

fn argv() -> Vec<String> {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_cleaned_lexically() {
        assert_eq!(clean_path(Path::new("/a//b/./c/../d")), "/a/b/d");
        assert_eq!(clean_path(Path::new("/")), "/");
        let rel = clean_path(Path::new("x/../y"));
        assert!(
            rel.starts_with('/') && rel.ends_with("/y") && !rel.contains(".."),
            "{rel}"
        );
    }
}
