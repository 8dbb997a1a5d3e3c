//! Streaming XXH3-64 checksums of store files, written as 16 hex digits in the manifest.

use std::io::{self, Write};

use xxhash_rust::xxh3::Xxh3;

/// Formats a 64-bit digest as the manifest writes it.
pub fn to_hex(digest: u64) -> String {
    format!("{digest:016x}")
}

/// A writer that hashes and counts every byte it passes on.
pub struct HashingWriter<W: Write> {
    inner: W,
    hasher: Xxh3,
    bytes: u64,
}

impl<W: Write> HashingWriter<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hasher: Xxh3::new(),
            bytes: 0,
        }
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The checksum so far, as hex.
    pub fn checksum(&self) -> String {
        to_hex(self.hasher.digest())
    }

    /// The wrapped writer.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(data)?;
        self.hasher.update(&data[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
