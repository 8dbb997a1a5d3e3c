//! molsift-tracer: the LD_PRELOAD I/O tracer of `molsift profile`, one C file (`tracer.c`).
//!
//! Preloaded into any program (C, Fortran, Python, every MPI rank, and whatever it forks or
//! execs), the library counts the POSIX and STDIO calls Darshan counts, per file and per
//! process, with Darshan's counter names, and writes one JSON log per process into
//! `$MOLSIFT_TRACER_DIR` (`docs/io-log-format.md`); unset, it does nothing. The program's
//! results, `errno` and exit status never change.
//!
//! `build.rs` compiles it with the system C compiler, and this crate embeds the library as
//! bytes ([`LIBRARY`]): the Python extension carries it, and `molsift profile` writes it next
//! to the per-process logs, where every rank can open it, before preloading it.
//!
//! ```
//! assert_eq!(&molsift_tracer::LIBRARY[..4], b"\x7fELF");
//! assert_eq!(molsift_tracer::LIBRARY_NAME, "libmolsift_tracer.so");
//! ```

#![deny(missing_docs)]

/// The library's file name.
pub const LIBRARY_NAME: &str = "libmolsift_tracer.so";

/// The tracer as a shared library (ELF) for the target this crate was built for.
pub static LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libmolsift_tracer.so"));
