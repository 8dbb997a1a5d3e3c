//! Text columns of store version 2 (canonical SMILES, ids): strings cut into blocks of
//! `block` strings (128 by default), each block compressed on its own, so that reading one
//! string decodes one block (a few microseconds) and a full scan decodes blocks in order.
//!
//! Block kinds, chosen per block by size:
//! * `0`, **front-coded zstd**: each string written as the length of the prefix it shares with
//!   the string before it (one byte, at most 255), the rest of it and `\n` (sorted SMILES share
//!   long prefixes: 36.9 bytes per MOSES molecule become 14.3), then compressed with zstd at the
//!   writer's level and a dictionary trained on a sample of the column's own blocks (stored
//!   once in the file, so small blocks compress nearly as well as the whole text). Measured on
//!   MOSES: 4.08 bytes per molecule against 4.36 for zstd alone, and faster to decode.
//! * `1`, **numbered**: every string is the same prefix followed by a decimal number (the ids of
//!   real libraries: `ZINC000012345678`, `Z1234567890`, line numbers), written as the prefix,
//!   the digit width (0: no leading zeros), the first number and zigzag varint differences.
//! * `2`, **arithmetic**: numbered, with one constant difference (consecutive ids: a few bytes
//!   per block).
//!
//! File layout (little-endian): `MSTEXT01`, `n` u64, `block` u32, reserved u32, dictionary
//! length u64, blocks u64, the dictionary (padded to 8 bytes), `blocks + 1` u64 offsets of the
//! blocks from the start of the block area, the blocks. A block: its kind byte, then for zstd
//! the length of its front-coded text (varint) and one zstd frame (magicless, no dictionary id,
//! size or checksum: the column keeps those); for numbered kinds the fields above; last, the
//! low 32 bits of the XXH3-64 of what the block decompresses to (the front-coded text, or the
//! numbered kinds' text). Offsets, and every decoded block against
//! its check value, are checked at each read: damage is an error naming the file and the
//! block, never a wrong string, and reading one string never needs the whole file checked.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use memmap2::Mmap;
use zstd::zstd_safe;

use crate::StoreError;

/// The file's magic bytes.
pub const MAGIC: &[u8; 8] = b"MSTEXT01";
/// Header bytes before the dictionary.
const HEADER: usize = 40;
/// Strings per block unless told otherwise.
pub const DEFAULT_BLOCK: usize = 128;
/// zstd level unless told otherwise. 15 is the knee on all of MOSES (BENCHMARKS.md, "zstd
/// level"): the SMILES column 4.208 B/molecule against 4.201 at 19, in 84% of the time; 13
/// costs 0.17 B/molecule more.
pub const DEFAULT_LEVEL: i32 = 15;
/// Dictionary size unless told otherwise.
pub const DEFAULT_DICT_BYTES: usize = 64 * 1024;

const KIND_ZSTD: u8 = 0;
const KIND_NUMBERED: u8 = 1;
const KIND_ARITHMETIC: u8 = 2;

/// How to write a text column.
#[derive(Debug, Clone)]
pub struct TextOptions {
    /// strings per block
    pub block: usize,
    /// zstd level (1-22)
    pub level: i32,
    /// dictionary size in bytes (0: no dictionary)
    pub dict_bytes: usize,
    /// try the numbered kinds (ids) before zstd
    pub numbered: bool,
    /// threads compressing blocks
    pub threads: usize,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            block: DEFAULT_BLOCK,
            level: DEFAULT_LEVEL,
            dict_bytes: DEFAULT_DICT_BYTES,
            numbered: false,
            threads: 1,
        }
    }
}

/// Writes the `n` strings `get(0) .. get(n - 1)` (none may contain `\n`) to `path` as a text
/// column; the same bytes for any number of threads. Returns the file's size.
pub fn write_text_blocks<F>(
    path: &Path,
    n: usize,
    get: F,
    opts: &TextOptions,
) -> Result<u64, StoreError>
where
    F: Fn(usize, &mut Vec<u8>) + Sync,
{
    let io = |e| StoreError::io(path, e);
    let block = opts.block.max(1);
    let blocks = n.div_ceil(block);
    let text_of = |b: usize| -> Vec<u8> {
        let mut t = Vec::new();
        for i in b * block..((b + 1) * block).min(n) {
            get(i, &mut t);
            t.push(b'\n');
        }
        t
    };
    let fc_of = |b: usize| front_code(&text_of(b));
    let dict = if opts.dict_bytes > 0 && blocks > 0 {
        train(&text_of, &fc_of, blocks, opts.dict_bytes, opts.numbered)
    } else {
        Vec::new()
    };
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    let mut head = Vec::with_capacity(HEADER);
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&(n as u64).to_le_bytes());
    head.extend_from_slice(&(block as u32).to_le_bytes());
    head.extend_from_slice(&0u32.to_le_bytes());
    head.extend_from_slice(&(dict.len() as u64).to_le_bytes());
    head.extend_from_slice(&(blocks as u64).to_le_bytes());
    out.write_all(&head).map_err(io)?;
    out.write_all(&dict).map_err(io)?;
    out.write_all(&vec![0u8; pad8(dict.len())]).map_err(io)?;
    let offsets_at = (HEADER + dict.len() + pad8(dict.len())) as u64;
    out.write_all(&vec![0u8; 8 * (blocks + 1)]).map_err(io)?;
    let mut offsets = Vec::with_capacity(blocks + 1);
    offsets.push(0u64);
    let threads = opts.threads.max(1).min(blocks.max(1));
    // one compressor per thread for the whole column: loading the dictionary at the column's
    // level builds zstd's match tables for it (per chunk, that was most of the threads' time)
    let mut compressors = (0..threads)
        .map(|_| compressor(opts.level, &dict))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(io)?;
    // chunks of blocks compressed in parallel, written in order
    let chunk = 64 * threads;
    let mut done = 0usize;
    while done < blocks {
        let end = (done + chunk).min(blocks);
        let parts: Vec<Vec<u8>> = std::thread::scope(|s| {
            let handles: Vec<_> = compressors
                .iter_mut()
                .enumerate()
                .map(|(t, c)| {
                    let text_of = &text_of;
                    s.spawn(move || -> std::io::Result<Vec<(usize, Vec<u8>)>> {
                        let mut got = Vec::new();
                        let mut b = done + t;
                        while b < end {
                            let text = text_of(b);
                            got.push((b, encode_block(&text, opts.numbered, c)?));
                            b += threads;
                        }
                        Ok(got)
                    })
                })
                .collect();
            let mut all: Vec<(usize, Vec<u8>)> = Vec::new();
            for h in handles {
                all.extend(h.join().expect("compressor thread").map_err(io)?);
            }
            all.sort_by_key(|(b, _)| *b);
            Ok::<_, StoreError>(all.into_iter().map(|(_, v)| v).collect())
        })?;
        for p in parts {
            out.write_all(&p).map_err(io)?;
            offsets.push(offsets.last().copied().unwrap_or(0) + p.len() as u64);
        }
        done = end;
    }
    let mut file = out.into_inner().map_err(|e| io(e.into_error()))?;
    file.seek(SeekFrom::Start(offsets_at)).map_err(io)?;
    let table: Vec<u8> = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
    file.write_all(&table).map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok(offsets_at + table.len() as u64 + offsets[blocks])
}

fn pad8(len: usize) -> usize {
    (8 - len % 8) % 8
}

/// Blocks sampled to train the dictionary.
const TRAIN_SAMPLES: usize = 4000;
/// zstd level at which the trainer judges its candidate dictionaries (zstd's default).
const TRAIN_LEVEL: i32 = 3;

/// A dictionary trained on up to [`TRAIN_SAMPLES`] blocks spread evenly over the column,
/// leaving out those the numbered kinds take (empty when zstd cannot train one: too little
/// text left). zstd's fastCover trainer with a short parameter search judged at
/// [`TRAIN_LEVEL`], one thread (the same dictionary every time).
fn train(
    text_of: &(dyn Fn(usize) -> Vec<u8> + Sync),
    fc_of: &(dyn Fn(usize) -> Vec<u8> + Sync),
    blocks: usize,
    bytes: usize,
    numbered: bool,
) -> Vec<u8> {
    let take = blocks.min(TRAIN_SAMPLES);
    let samples: Vec<Vec<u8>> = (0..take)
        .map(|k| k * blocks / take)
        .filter(|&b| !numbered || encode_numbered(&text_of(b)).is_none())
        .map(fc_of)
        .collect();
    let total: usize = samples.iter().map(Vec::len).sum();
    if total < 8 * 1024 {
        return Vec::new();
    }
    let flat: Vec<u8> = samples.concat();
    let sizes: Vec<usize> = samples.iter().map(Vec::len).collect();
    let cap = bytes.min(total / 4);
    let mut dict = vec![0u8; cap];
    // SAFETY: zstd reads `flat` as the concatenation of `sizes`, writes at most `cap` bytes
    // into `dict`, and fills `params`; all buffers outlive the call.
    let got = unsafe {
        let mut params: zstd_safe::zstd_sys::ZDICT_fastCover_params_t = std::mem::zeroed();
        // zstd's own default search (d = 8, 4 steps of k): the full search (k and d, 40
        // steps) took 8 minutes on MOSES for 0.2% smaller blocks. Each candidate is judged by
        // compressing the samples at TRAIN_LEVEL, as zstd's default trainer does, not at the
        // column's level: the search took most of a column's write at level 15 (MOSES:
        // SMILES 4.217 against 4.207 B/molecule, BENCHMARKS.md "zstd level")
        params.d = 8;
        params.steps = 4;
        params.nbThreads = 1;
        params.zParams.compressionLevel = TRAIN_LEVEL;
        params.zParams.dictID = 32768;
        zstd_safe::zstd_sys::ZDICT_optimizeTrainFromBuffer_fastCover(
            dict.as_mut_ptr().cast(),
            cap,
            flat.as_ptr().cast(),
            sizes.as_ptr(),
            sizes.len() as u32,
            &mut params,
        )
    };
    // SAFETY: a pure function of the returned code.
    if unsafe { zstd_safe::zstd_sys::ZDICT_isError(got) } != 0 {
        return Vec::new();
    }
    dict.truncate(got);
    dict
}

/// A compressor for blocks: the dictionary loaded once, and none of the frame fields the
/// column keeps itself (magic number, dictionary id, content size, checksum).
fn compressor(level: i32, dict: &[u8]) -> std::io::Result<zstd::bulk::Compressor<'static>> {
    use zstd::zstd_safe::{CParameter, FrameFormat};
    let mut c = zstd::bulk::Compressor::with_dictionary(level, dict)?;
    c.set_parameter(CParameter::Format(FrameFormat::Magicless))?;
    c.set_parameter(CParameter::DictIdFlag(false))?;
    c.set_parameter(CParameter::ContentSizeFlag(false))?;
    c.set_parameter(CParameter::ChecksumFlag(false))?;
    Ok(c)
}

fn encode_block(
    text: &[u8],
    numbered: bool,
    c: &mut zstd::bulk::Compressor<'_>,
) -> std::io::Result<Vec<u8>> {
    if let Some(mut b) = numbered.then(|| encode_numbered(text)).flatten() {
        b.extend_from_slice(&check_value(text).to_le_bytes());
        return Ok(b);
    }
    let fc = front_code(text);
    let mut b = vec![KIND_ZSTD];
    put_varint(&mut b, fc.len() as u64);
    put_varint(&mut b, text.len() as u64);
    b.extend_from_slice(&c.compress(&fc)?);
    b.extend_from_slice(&check_value(&fc).to_le_bytes());
    Ok(b)
}

/// Front coding of `text` (strings each followed by `\n`): per string, the length of the
/// prefix it shares with the one before (one byte, at most 255), the rest and `\n` (the
/// terminator compresses better than a length: 4.19 against 4.79 bytes per MOSES molecule).
fn front_code(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() / 2);
    let mut prev: &[u8] = &[];
    for s in text[..text.len().saturating_sub(1)].split(|&c| c == b'\n') {
        let k = s
            .iter()
            .zip(prev)
            .take(255)
            .take_while(|(a, b)| a == b)
            .count();
        out.push(k as u8);
        out.extend_from_slice(&s[k..]);
        out.push(b'\n');
        prev = s;
    }
    out
}

/// Slack after the decoded text so that copies may run in whole 32-byte chunks.
const SLACK: usize = 64;

/// Copies `len` bytes from `src` to `dst` in 32-byte chunks (reads and writes up to 31 bytes
/// past each end). Each chunk is read whole before it is written (`ptr::copy`), so the chunks
/// may overlap as long as the `len` bytes to copy end at or before `dst`.
///
/// # Safety
/// `src .. src + len + 31` must be readable, `dst .. dst + len + 31` writable, and
/// `src + len <= dst` or the ranges apart; bytes past `len` at the destination are garbage.
#[inline(always)]
unsafe fn wild_copy(src: *const u8, dst: *mut u8, len: usize) {
    let mut i = 0;
    while i < len {
        // SAFETY: forwarded from the caller.
        unsafe { std::ptr::copy(src.add(i), dst.add(i), 32) };
        i += 32;
    }
}

/// Bit `i` set for each `\n` at byte `i` of `chunk`.
#[inline(always)]
fn newlines(chunk: &[u8; 16]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86_64; the load reads the 16 bytes of `chunk`.
        unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr() as *const __m128i);
            _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'\n' as i8))) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut m = 0;
        for (i, &c) in chunk.iter().enumerate() {
            m |= u32::from(c == b'\n') << i;
        }
        m
    }
}

/// Expands front-coded `fc` (of `count` strings, with at least [`SLACK`] readable bytes after
/// its end in `fc_buf`) into `out` (resized to `text_len + SLACK`, then cut to `text_len`):
/// the strings, each followed by `\n`. `ends` receives where each string ends in `out`.
/// With `upto < count` only the first `upto` strings are expanded (a string needs only the
/// ones before it) and `out` is cut after the last of them.
fn front_decode_portable(
    fc_buf: &[u8],
    fc_len: usize,
    count: usize,
    upto: usize,
    text_len: usize,
    out: &mut Vec<u8>,
    ends: &mut Vec<u32>,
) -> Result<(), String> {
    assert!(fc_buf.len() >= fc_len + SLACK);
    // every byte up to text_len is written below before it is read: only bytes the buffer
    // never held are zeroed (the previous block's text stays as garbage past the length)
    out.truncate(text_len + SLACK);
    out.resize(text_len + SLACK, 0);
    ends.clear();
    let fc = &fc_buf[..fc_len];
    let (mut at, mut w, mut prev, mut prev_len) = (0usize, 0usize, 0usize, 0usize);
    for _ in 0..upto.min(count) {
        let k = *fc.get(at).ok_or("front-coded text ends early")? as usize;
        at += 1;
        if k > prev_len || w + k > text_len {
            return Err("front-coded lengths do not add up".into());
        }
        let base = out.as_mut_ptr();
        // SAFETY: the prefix lies in the string before (prev + k <= w) and `out` holds
        // text_len + SLACK bytes, so every 32-byte chunk stays inside it.
        unsafe { wild_copy(base.add(prev), base.add(w), k) };
        // the rest, 16 bytes at a time, up to and including its `\n`
        let start = w;
        w += k;
        loop {
            if at + 16 > fc_buf.len() || w + 16 > out.len() {
                return Err("string runs past the block".into());
            }
            let chunk: &[u8; 16] = fc_buf[at..at + 16].try_into().expect("16");
            out[w..w + 16].copy_from_slice(chunk);
            let hit = newlines(chunk);
            if hit != 0 {
                let j = hit.trailing_zeros() as usize;
                at += j + 1;
                w += j + 1;
                break;
            }
            at += 16;
            w += 16;
        }
        if at > fc_len || w > text_len {
            return Err("string runs past the block".into());
        }
        prev = start;
        prev_len = w - 1 - start;
        ends.push((w - 1) as u32);
    }
    if upto < count {
        out.truncate(w);
        return Ok(());
    }
    if at != fc_len || w != text_len {
        return Err(format!("{} bytes left after {count} strings", fc_len - at));
    }
    out.truncate(text_len);
    Ok(())
}

/// Set by [`set_decode_path`]: decode with [`front_decode_portable`] even where the CPU has
/// AVX2.
static PORTABLE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Set by [`set_decode_path`]: give zstd the dictionary apart from the output (as before
/// [`Decoder`] kept it in front of the output).
static DICT_APART: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes every decode in this process take the portable front decoding (`portable`) and a
/// dictionary apart from the output (`dict_apart`), the ways blocks were decoded before, or
/// the fastest ways (both false, the default). For benchmarks comparing them, and tests.
#[doc(hidden)]
pub fn set_decode_path(portable: bool, dict_apart: bool) {
    PORTABLE.store(portable, std::sync::atomic::Ordering::Relaxed);
    DICT_APART.store(dict_apart, std::sync::atomic::Ordering::Relaxed);
}

/// [`front_decode_portable`], with AVX2 where the CPU has it; `Ok(true)` when the text is
/// known to be ASCII (so UTF-8) on the way, `Ok(false)` when it still needs the check. `nl` is
/// scratch space. Anything the fast path does not take (damage, a CPU without AVX2) goes
/// through the portable decoder, so errors read the same on every CPU.
fn front_decode(
    fc_buf: &[u8],
    fc_len: usize,
    count: usize,
    upto: usize,
    text_len: usize,
    out: &mut Block,
    nl: &mut Vec<u64>,
) -> Result<bool, String> {
    #[cfg(target_arch = "x86_64")]
    if !PORTABLE.load(std::sync::atomic::Ordering::Relaxed)
        && std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("bmi1")
    {
        assert!(fc_buf.len() >= fc_len + SLACK);
        // SAFETY: the CPU has AVX2 and BMI1, and fc_buf holds SLACK bytes past fc_len.
        if let Some(ascii) = unsafe {
            front_decode_avx2(
                fc_buf,
                fc_len,
                count,
                upto,
                text_len,
                &mut out.text,
                &mut out.ends,
                nl,
            )
        } {
            return Ok(ascii);
        }
    }
    let _ = nl;
    front_decode_portable(
        fc_buf,
        fc_len,
        count,
        upto,
        text_len,
        &mut out.text,
        &mut out.ends,
    )
    .map(|()| false)
}

/// [`front_decode_portable`] with AVX2, without its serial dependencies: the `\n`s of the
/// front-coded text are found first, all at once, as a bitmap (`nl`), so finding where a
/// string ends is a shift and a bit count; and a string of fewer than 64 bytes is built in two
/// registers from the one before (its prefix) and one 64-byte load of `fc` placed so that the
/// rest lands after the prefix, then stored whole, `\n` included: the next string never reads
/// back what was just written. Longer strings are copied through memory. Returns whether the
/// text is ASCII, or `None` (with `out` in any state) for anything the portable decoder must
/// judge: inconsistent lengths, a string running past the block.
///
/// # Safety
/// The CPU must have AVX2 and BMI1, and `fc_buf.len() >= fc_len + SLACK`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1")]
#[allow(clippy::too_many_arguments)] // front_decode_portable's, plus the scratch bitmap
unsafe fn front_decode_avx2(
    fc_buf: &[u8],
    fc_len: usize,
    count: usize,
    upto: usize,
    text_len: usize,
    out: &mut Vec<u8>,
    ends: &mut Vec<u32>,
    nl: &mut Vec<u64>,
) -> Option<bool> {
    use std::arch::x86_64::*;
    debug_assert!(fc_buf.len() >= fc_len + SLACK);
    let fp = fc_buf.as_ptr();
    // bit i of nl: fc[i] is a `\n` (i < fc_len), and two words of zeros after the last
    let words = fc_len.div_ceil(64);
    nl.clear();
    nl.resize(words + 2, 0);
    let nlv = _mm256_set1_epi8(b'\n' as i8);
    for (i, word) in nl[..words].iter_mut().enumerate() {
        // SAFETY: 64 * words < fc_len + 64 <= fc_buf.len()
        let (a, b) = unsafe {
            (
                _mm256_loadu_si256(fp.add(64 * i) as *const __m256i),
                _mm256_loadu_si256(fp.add(64 * i + 32) as *const __m256i),
            )
        };
        let lo = _mm256_movemask_epi8(_mm256_cmpeq_epi8(a, nlv)) as u32 as u64;
        let hi = _mm256_movemask_epi8(_mm256_cmpeq_epi8(b, nlv)) as u32 as u64;
        *word = lo | hi << 32;
    }
    if fc_len % 64 != 0 {
        nl[words - 1] &= (1u64 << (fc_len % 64)) - 1;
    }
    let nlb = nl.as_ptr() as *const u8;
    // the first `\n` at or after byte s of fc (s <= fc_len), if any
    let next_nl = |s: usize| -> Option<usize> {
        // SAFETY: s / 8 + 8 <= 8 * words + 8 < the bitmap's 8 * (words + 2) bytes
        let v = unsafe { (nlb.add(s >> 3) as *const u64).read_unaligned() } >> (s & 7);
        if v != 0 {
            return Some(s + v.trailing_zeros() as usize);
        }
        // a rest of 57 bytes or more: word by word
        let mut j = s;
        while j < fc_len {
            let m = nl[j >> 6] >> (j & 63);
            if m != 0 {
                return Some(j + m.trailing_zeros() as usize);
            }
            j = ((j >> 6) + 1) << 6;
        }
        None
    };
    out.truncate(text_len + SLACK);
    out.resize(text_len + SLACK, 0);
    ends.clear();
    let op = out.as_mut_ptr();
    let iota_lo = _mm256_setr_epi8(
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
        25, 26, 27, 28, 29, 30, 31,
    );
    let iota_hi = _mm256_add_epi8(iota_lo, _mm256_set1_epi8(32));
    let (mut prev_lo, mut prev_hi) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    // s: where the rest of the current string starts in fc (after its prefix length byte)
    let (mut s, mut w, mut prev_start, mut prev_len) = (1usize, 0usize, 0usize, 0usize);
    let mut high = 0u64;
    for _ in 0..upto.min(count) {
        if s > fc_len {
            return None;
        }
        // SAFETY: s - 1 < fc_len
        let k = unsafe { *fp.add(s - 1) } as usize;
        // s - k >= 1 whenever every prefix fits the string before (by induction: each string
        // adds its rest and two bytes to fc, and its prefix at most its rest to the next)
        if k > prev_len || k >= s {
            return None;
        }
        let t = next_nl(s)?;
        let len = k + (t - s);
        if w + len + 1 > text_len {
            return None;
        }
        // SAFETY (this block): w + len + 1 <= text_len, so every store below ends before
        // w + 64 <= text_len + SLACK; loads of fc end before t + 64 <= fc_len + SLACK; the
        // prefix lies in the string before (prev_start + k <= w).
        unsafe {
            let dst = op.add(w);
            if len < 64 {
                let src = fp.add(s - k);
                let ra = _mm256_loadu_si256(src as *const __m256i);
                let rb = _mm256_loadu_si256(src.add(32) as *const __m256i);
                let kv = _mm256_set1_epi8(k as i8);
                let ca = _mm256_blendv_epi8(ra, prev_lo, _mm256_cmpgt_epi8(kv, iota_lo));
                let cb = _mm256_blendv_epi8(rb, prev_hi, _mm256_cmpgt_epi8(kv, iota_hi));
                _mm256_storeu_si256(dst as *mut __m256i, ca);
                _mm256_storeu_si256(dst.add(32) as *mut __m256i, cb);
                let m = _mm256_movemask_epi8(ca) as u32 as u64
                    | (_mm256_movemask_epi8(cb) as u32 as u64) << 32;
                high |= m & ((1u64 << len) - 1);
                prev_lo = ca;
                prev_hi = cb;
            } else {
                wild_copy(op.add(prev_start), dst, k);
                wild_copy(fp.add(s), dst.add(k), t - s + 1);
                if !std::slice::from_raw_parts(fp.add(s), t - s).is_ascii() {
                    high |= 1;
                }
                prev_lo = _mm256_loadu_si256(dst as *const __m256i);
                prev_hi = _mm256_loadu_si256(dst.add(32) as *const __m256i);
            }
        }
        ends.push((w + len) as u32);
        prev_start = w;
        prev_len = len;
        w += len + 1;
        s = t + 2;
    }
    if upto < count {
        out.truncate(w);
        return Some(high == 0);
    }
    if s - 1 != fc_len || w != text_len {
        return None;
    }
    out.truncate(text_len);
    Some(high == 0)
}

/// Whether `text` is UTF-8: a whole-word test for ASCII (SMILES and ids almost always are),
/// then the standard check for the rest.
fn is_utf8(text: &[u8]) -> bool {
    let (words, tail) = text.split_at(text.len() / 32 * 32);
    let mut high = 0u64;
    for chunk in words.chunks_exact(32) {
        for w in chunk.chunks_exact(8) {
            high |= u64::from_le_bytes(w.try_into().expect("8"));
        }
    }
    if high & 0x8080_8080_8080_8080 == 0 && tail.is_ascii() {
        return true;
    }
    std::str::from_utf8(text).is_ok()
}

/// The check value of a block's decoded text.
fn check_value(text: &[u8]) -> u32 {
    xxhash_rust::xxh3::xxh3_64(text) as u32
}

/// An id split into its prefix and trailing decimal number, with the digit width the text
/// needs to come back byte for byte (0: written without leading zeros).
fn split_number(id: &[u8]) -> Option<(&[u8], u8, u64)> {
    let digits = id.iter().rev().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || digits > 19 {
        return None;
    }
    let (prefix, d) = id.split_at(id.len() - digits);
    let value: u64 = std::str::from_utf8(d).ok()?.parse().ok()?;
    let width = if d.len() > 1 && d[0] == b'0' {
        d.len() as u8
    } else {
        0
    };
    Some((prefix, width, value))
}

fn render_number(out: &mut Vec<u8>, prefix: &[u8], width: u8, value: u64) {
    out.extend_from_slice(prefix);
    // the digits written from the end of a buffer: no allocation per number (a block's
    // numbers are rendered for every id read)
    let mut digits = [0u8; 20];
    let (mut at, mut v) = (digits.len(), value);
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let len = digits.len() - at;
    out.extend(std::iter::repeat(b'0').take((width as usize).saturating_sub(len)));
    out.extend_from_slice(&digits[at..]);
}

fn encode_numbered(text: &[u8]) -> Option<Vec<u8>> {
    let mut lines = text[..text.len().checked_sub(1)?].split(|&c| c == b'\n');
    let (prefix, width, first) = split_number(lines.next()?)?;
    let mut values = vec![first];
    for line in lines {
        let (p, w, v) = split_number(line)?;
        // an unpadded number is also a valid padded one when it has the width
        let same_width = w == width || (w == 0 && width as usize == line.len() - p.len());
        if p != prefix || !same_width {
            return None;
        }
        values.push(v);
    }
    let deltas: Vec<i128> = values
        .windows(2)
        .map(|w| w[1] as i128 - w[0] as i128)
        .collect();
    let arithmetic = deltas.windows(2).all(|w| w[0] == w[1]);
    let mut b = vec![if arithmetic {
        KIND_ARITHMETIC
    } else {
        KIND_NUMBERED
    }];
    put_varint(&mut b, prefix.len() as u64);
    b.extend_from_slice(prefix);
    b.push(width);
    put_varint(&mut b, first);
    let zig = |d: i128| -> Option<u64> {
        let d = i64::try_from(d).ok()?;
        Some(((d << 1) ^ (d >> 63)) as u64)
    };
    if arithmetic {
        put_varint(&mut b, zig(deltas.first().copied().unwrap_or(0))?);
    } else {
        for &d in &deltas {
            put_varint(&mut b, zig(d)?);
        }
    }
    // check the round trip: the text must come back byte for byte
    let mut back = Vec::with_capacity(text.len());
    decode_numbered(
        &b[1..],
        b[0] == KIND_ARITHMETIC,
        values.len(),
        &mut back,
        None,
    )
    .ok()?;
    (back == text).then_some(b)
}

fn put_varint(b: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        b.push((v as u8) | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}

fn get_varint(b: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at).ok_or("varint runs past the block")?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(v);
        }
    }
    Err("varint longer than 10 bytes".into())
}

/// Renders a numbered block's `count` strings into `out`, each followed by `\n`; with `ends`,
/// the place of each `\n` pushed there as it is written (no search for them after).
fn decode_numbered(
    b: &[u8],
    arithmetic: bool,
    count: usize,
    out: &mut Vec<u8>,
    mut ends: Option<&mut Vec<u32>>,
) -> Result<(), String> {
    let mut at = 0;
    let plen = get_varint(b, &mut at)? as usize;
    let prefix = b
        .get(at..at.checked_add(plen).ok_or("prefix too long")?)
        .ok_or("prefix runs past the block")?;
    at += plen;
    let width = *b.get(at).ok_or("no width")?;
    at += 1;
    if width > 20 {
        return Err(format!("digit width {width}"));
    }
    let mut v = get_varint(b, &mut at)?;
    let unzig = |z: u64| ((z >> 1) as i64) ^ -((z & 1) as i64);
    let step = if arithmetic {
        Some(unzig(get_varint(b, &mut at)?))
    } else {
        None
    };
    for k in 0..count {
        if k > 0 {
            let d = match step {
                Some(d) => d,
                None => unzig(get_varint(b, &mut at)?),
            };
            v = v
                .checked_add_signed(d)
                .ok_or("number out of range".to_string())?;
        }
        render_number(out, prefix, width, v);
        if let Some(e) = ends.as_deref_mut() {
            e.push(out.len() as u32);
        }
        out.push(b'\n');
    }
    if at != b.len() {
        return Err(format!("{} bytes left over", b.len() - at));
    }
    Ok(())
}

/// A text column opened for reading (memory-mapped).
pub struct TextBlocks {
    path: PathBuf,
    map: Option<Mmap>,
    n: usize,
    block: usize,
    blocks: usize,
    offsets_at: usize,
    data_at: usize,
    /// where the dictionary lies in the file (empty: none)
    dict: std::ops::Range<usize>,
    pool: Mutex<Vec<Decoder>>,
}

/// A block decoder of the pool, one per thread decoding at a time: a zstd context, and a
/// buffer holding the column's dictionary followed by the room each block decompresses into.
/// zstd reads a dictionary that ends where the output begins as the text just before it, and
/// copies its matches with its own inline copies; from a dictionary elsewhere it copies every
/// match with a call to `memmove` (9% of a full decode's time, measured).
struct Decoder {
    ctx: zstd_safe::DCtx<'static>,
    /// refers to `buf[..dict_len]` (declared before `buf`, so dropped before it)
    ddict: Option<zstd_safe::DDict<'static>>,
    /// a copy of the dictionary, for [`set_decode_path`]'s `dict_apart`
    ddict_apart: Option<zstd_safe::DDict<'static>>,
    /// the dictionary, then room for a block's front-coded text and [`SLACK`]
    buf: Vec<u8>,
    dict_len: usize,
    /// scratch of [`front_decode`]
    nl: Vec<u64>,
}

impl Decoder {
    fn new(dict: &[u8]) -> Decoder {
        let mut ctx = zstd_safe::DCtx::create();
        let _ = ctx.set_parameter(zstd_safe::DParameter::Format(
            zstd_safe::FrameFormat::Magicless,
        ));
        Decoder {
            ctx,
            ddict: None,
            ddict_apart: None,
            buf: dict.to_vec(),
            dict_len: dict.len(),
            nl: Vec::new(),
        }
    }

    /// Decompresses the zstd frame `src` into the room after the dictionary (`len` bytes
    /// of it; the bytes after what the frame holds are left as they were). Returns the
    /// number of bytes written and the room, or zstd's error code.
    fn decompress(&mut self, src: &[u8], len: usize) -> Result<(usize, &mut [u8]), usize> {
        if self.buf.len() < self.dict_len + len {
            // growing may move the dictionary: the DDict that refers to it goes first
            self.ddict = None;
            self.buf
                .resize((self.dict_len + len).next_power_of_two(), 0);
        }
        if self.ddict.is_none() && self.dict_len > 0 {
            // SAFETY: the DDict refers to buf[..dict_len], which stays where it is and as it
            // is while the DDict lives: buf only grows after the DDict is dropped, only bytes
            // after dict_len are written, and the DDict is dropped before buf.
            let dict: &'static [u8] =
                unsafe { std::slice::from_raw_parts(self.buf.as_ptr(), self.dict_len) };
            self.ddict = Some(zstd_safe::DDict::create_by_reference(dict));
        }
        let apart = DICT_APART.load(std::sync::atomic::Ordering::Relaxed);
        if self.dict_len > 0 && self.ddict_apart.is_none() && apart {
            self.ddict_apart = Some(zstd_safe::DDict::create(&self.buf[..self.dict_len]));
        }
        // SAFETY: dict_len + len <= buf.len(), and this is the only reference to those bytes
        // (`as_mut_ptr` makes no reference to the whole buffer).
        let room = unsafe {
            std::slice::from_raw_parts_mut(self.buf.as_mut_ptr().add(self.dict_len), len)
        };
        let ddict = if apart {
            self.ddict_apart.as_ref()
        } else {
            self.ddict.as_ref()
        };
        let got = match ddict {
            Some(d) => self.ctx.decompress_using_ddict(&mut *room, src, d),
            None => self.ctx.decompress(&mut *room, src),
        };
        got.map(|k| (k, room))
    }
}

impl std::fmt::Debug for TextBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextBlocks")
            .field("path", &self.path)
            .field("n", &self.n)
            .field("block", &self.block)
            .finish()
    }
}

impl TextBlocks {
    /// Checks the header against the file's length and prepares the dictionary. `path` is for
    /// messages; `map` is the file's content (`None` for an empty file).
    pub fn open(path: &Path, map: Option<Mmap>) -> Result<TextBlocks, StoreError> {
        let bad = |reason: String| StoreError::Inconsistent {
            path: path.to_path_buf(),
            reason,
        };
        let bytes: &[u8] = map.as_deref().unwrap_or(&[]);
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err(bad("not a molsift text column (bad header)".into()));
        }
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        let n = u64_at(8) as usize;
        let block = u32::from_le_bytes(bytes[16..20].try_into().expect("4")) as usize;
        let dict_len = u64_at(24) as usize;
        let blocks = u64_at(32) as usize;
        if block == 0 || blocks != n.div_ceil(block) {
            return Err(bad(format!(
                "{blocks} blocks of {block} do not hold {n} strings"
            )));
        }
        let offsets_at = HEADER
            .checked_add(dict_len)
            .and_then(|x| x.checked_add(pad8(dict_len)))
            .filter(|&x| x <= bytes.len())
            .ok_or_else(|| bad(format!("dictionary of {dict_len} bytes runs past the file")))?;
        let data_at = blocks
            .checked_add(1)
            .and_then(|b| b.checked_mul(8))
            .and_then(|b| b.checked_add(offsets_at))
            .filter(|&x| x <= bytes.len())
            .ok_or_else(|| bad(format!("the offsets of {blocks} blocks run past the file")))?;
        let last = u64_at(offsets_at + 8 * blocks) as usize;
        if u64_at(offsets_at) != 0 || data_at + last != bytes.len() {
            return Err(bad(format!(
                "blocks end at byte {} but the file holds {} (truncated or damaged)",
                data_at + last,
                bytes.len()
            )));
        }
        Ok(TextBlocks {
            path: path.to_path_buf(),
            map,
            n,
            block,
            blocks,
            offsets_at,
            data_at,
            dict: HEADER..HEADER + dict_len,
            pool: Mutex::new(Vec::new()),
        })
    }

    /// Number of strings.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when the column holds no string.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Strings per block.
    pub fn block_len(&self) -> usize {
        self.block
    }

    /// Number of blocks.
    pub fn blocks(&self) -> usize {
        self.blocks
    }

    fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    fn bad(&self, reason: String) -> StoreError {
        StoreError::Inconsistent {
            path: self.path.clone(),
            reason,
        }
    }

    /// Decodes block `b` into `out`: its strings, checked against the block's check value.
    /// Returns the number of strings.
    pub fn decode_block(&self, b: usize, out: &mut Block) -> Result<usize, StoreError> {
        self.decode_first(b, usize::MAX, out)
    }

    /// [`TextBlocks::decode_block`] that stops after the block's first `upto` strings where
    /// the block allows (front-coded blocks: a string needs only the ones before it; the
    /// whole block is still decompressed and checked against its check value). Returns the
    /// number of strings in `out`.
    pub fn decode_first(
        &self,
        b: usize,
        upto: usize,
        out: &mut Block,
    ) -> Result<usize, StoreError> {
        out.ends.clear();
        if b >= self.blocks {
            return Err(StoreError::Invalid(format!(
                "block {b} out of range: {} holds {}",
                self.path.display(),
                self.blocks
            )));
        }
        let bytes = self.bytes();
        let off = |k: usize| {
            u64::from_le_bytes(
                bytes[self.offsets_at + 8 * k..self.offsets_at + 8 * k + 8]
                    .try_into()
                    .expect("8"),
            ) as usize
        };
        let (start, end) = (off(b), off(b + 1));
        let data = &bytes[self.data_at..];
        if start >= end || end > data.len() {
            return Err(self.bad(format!(
                "block {b} runs from byte {start} to {end} of {} (damaged offsets)",
                data.len()
            )));
        }
        if end - start < 5 {
            return Err(self.bad(format!("block {b} is {} bytes long", end - start)));
        }
        let (blk, check) = data[start..end].split_at(end - start - 4);
        let count = (self.n - b * self.block).min(self.block);
        let result = match blk[0] {
            KIND_ZSTD => self.decode_zstd(&blk[1..], count, upto, check, out),
            k @ (KIND_NUMBERED | KIND_ARITHMETIC) => {
                out.text.clear();
                let ends = Some(&mut out.ends);
                decode_numbered(&blk[1..], k == KIND_ARITHMETIC, count, &mut out.text, ends)
                    .and_then(|()| {
                        (check_value(&out.text).to_le_bytes() == check)
                            .then_some(())
                            .ok_or_else(|| "does not match its check value (damaged)".to_string())
                    })
                    .map(|()| false)
            }
            k => {
                out.text.clear();
                Err(format!("unknown block kind {k}"))
            }
        };
        if let Err(r) = &result {
            out.text.clear();
            out.ends.clear();
            return Err(self.bad(format!("block {b}: {r}")));
        }
        let want = if blk[0] == KIND_ZSTD {
            upto.min(count)
        } else {
            count
        };
        // the zstd path may have seen on the way that the text is ASCII
        let ascii = matches!(result, Ok(true));
        if out.ends.len() != want || !(ascii || is_utf8(&out.text)) {
            return Err(self.bad(format!("block {b} is not {count} strings of UTF-8")));
        }
        Ok(want)
    }

    fn decode_zstd(
        &self,
        blk: &[u8],
        count: usize,
        upto: usize,
        check: &[u8],
        out: &mut Block,
    ) -> Result<bool, String> {
        let mut at = 0;
        let fc_len = get_varint(blk, &mut at)? as usize;
        let text_len = get_varint(blk, &mut at)? as usize;
        if fc_len > 64 << 20 || text_len > 256 << 20 {
            return Err(format!("lengths {fc_len} and {text_len}"));
        }
        let mut dec = self
            .pool
            .lock()
            .map(|mut p| p.pop())
            .unwrap_or(None)
            .unwrap_or_else(|| Decoder::new(&self.bytes()[self.dict.clone()]));
        let mut nl = std::mem::take(&mut dec.nl);
        let result = match dec.decompress(&blk[at..], fc_len + SLACK) {
            Ok((k, _)) if k != fc_len => Err(format!("decompressed to {k} bytes, not {fc_len}")),
            Err(code) => Err(format!("zstd: {}", zstd_safe::get_error_name(code))),
            Ok((_, fc)) if check_value(&fc[..fc_len]).to_le_bytes() != check => {
                Err("does not match its check value (damaged)".to_string())
            }
            Ok((_, fc)) => {
                fc[fc_len..].fill(0);
                front_decode(fc, fc_len, count, upto, text_len, out, &mut nl)
            }
        };
        dec.nl = nl;
        if let Ok(mut p) = self.pool.lock() {
            p.push(dec);
        }
        result
    }

    /// An error unless entry `i` is in the column.
    fn check_entry(&self, i: usize) -> Result<(), StoreError> {
        if i >= self.n {
            return Err(StoreError::Invalid(format!(
                "entry {i} out of range: {} holds {}",
                self.path.display(),
                self.n
            )));
        }
        Ok(())
    }

    /// String `i`, decoded with its block.
    pub fn get(&self, i: usize) -> Result<String, StoreError> {
        self.check_entry(i)?;
        ONE.with(|buf| {
            let mut buf = buf.borrow_mut();
            let k = i % self.block;
            self.decode_first(i / self.block, k + 1, &mut buf)?;
            Ok(buf.get(k).to_string())
        })
    }

    /// Strings `indices`, in the order given. They are read in index order (sorted here when
    /// they are not), so each block that holds several of them is decoded once (whole; one
    /// holding a single one up to it, as [`TextBlocks::get`]): rows read in order cost a block
    /// per block, not per row.
    pub fn get_many(
        &self,
        indices: impl IntoIterator<Item = Result<usize, StoreError>>,
    ) -> Result<Vec<String>, StoreError> {
        let mut order: Vec<(usize, usize)> = Vec::new();
        for (at, i) in indices.into_iter().enumerate() {
            let i = i?;
            self.check_entry(i)?;
            order.push((i, at));
        }
        if !order.windows(2).all(|w| w[0].0 <= w[1].0) {
            order.sort_unstable();
        }
        let mut out = vec![String::new(); order.len()];
        let mut buf = Block::default();
        // the block in `buf` (it holds its strings up to `buf.len()`)
        let mut held: Option<usize> = None;
        for (j, &(i, at)) in order.iter().enumerate() {
            let (b, k) = (i / self.block, i % self.block);
            if held != Some(b) || k >= buf.len() {
                let next_here = order.get(j + 1).is_some_and(|&(n, _)| n / self.block == b);
                let upto = if next_here { usize::MAX } else { k + 1 };
                self.decode_first(b, upto, &mut buf)?;
                held = Some(b);
            }
            out[at] = buf.get(k).to_string();
        }
        Ok(out)
    }

    /// Calls `f(i, s)` for every string of blocks `from .. to`, in order.
    pub fn for_each_in_blocks(
        &self,
        blocks: std::ops::Range<usize>,
        mut f: impl FnMut(usize, &str) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut buf = Block::default();
        for b in blocks {
            self.decode_block(b, &mut buf)?;
            for k in 0..buf.len() {
                f(b * self.block + k, buf.get(k))?;
            }
        }
        Ok(())
    }
}

thread_local! {
    /// Per thread: the block buffer of [`TextBlocks::get`], kept from call to call.
    static ONE: std::cell::RefCell<Block> = std::cell::RefCell::new(Block::default());
}

/// One decoded block: its strings (checked UTF-8), reusable from block to block.
#[derive(Debug, Default, Clone)]
pub struct Block {
    text: Vec<u8>,
    ends: Vec<u32>,
}

impl Block {
    /// Number of strings.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// String `k` of the block.
    pub fn get(&self, k: usize) -> &str {
        let start = if k == 0 {
            0
        } else {
            self.ends[k - 1] as usize + 1
        };
        let bytes = &self.text[start..self.ends[k] as usize];
        // SAFETY: decode_block checked the whole text as UTF-8, and every string ends at an
        // ASCII `\n`, so each slice is UTF-8 too.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_check_takes_ascii_fast_and_the_rest_exactly() {
        let ascii = "CC(=O)Nc1ccc(O)cc1\n".repeat(5);
        assert!(is_utf8(ascii.as_bytes()));
        for at in [0, 31, 32, 33, ascii.len() - 1] {
            let mut bad = ascii.clone().into_bytes();
            bad[at] = 0xff; // never UTF-8, in the whole words and in the tail
            assert!(!is_utf8(&bad), "{at}");
            let mut good = ascii.clone();
            good.insert(at, '\u{e9}');
            assert!(is_utf8(good.as_bytes()), "{at}");
        }
    }

    /// Strings each made from the one before: cut at a random length (so shared prefixes of
    /// every length, 10 among them: the `\n` byte), then a random rest, sometimes long (past
    /// 64 and 255 bytes), sometimes empty, sometimes not ASCII.
    fn chained_strings(seed: u64, count: usize) -> Vec<Vec<u8>> {
        let mut x = seed | 1;
        let mut rnd = move |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n.max(1) as u64) as usize
        };
        let mut out: Vec<Vec<u8>> = Vec::new();
        let mut prev: Vec<u8> = Vec::new();
        for _ in 0..count {
            let mut s = prev[..rnd(prev.len() + 1)].to_vec();
            let rest = match rnd(10) {
                0 => 0,
                1 => 60 + rnd(250),
                _ => rnd(40),
            };
            for _ in 0..rest {
                match rnd(50) {
                    0 => s.extend_from_slice("\u{e9}".as_bytes()),
                    _ => s.push(b"CNOc1()=#[]@+-23"[rnd(16)]),
                }
            }
            prev = s.clone();
            out.push(s);
        }
        out
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_front_decoding_gives_what_the_portable_one_gives() {
        if !(std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("bmi1")) {
            eprintln!("this CPU has no AVX2: only the portable front decoding runs here");
            return;
        }
        let mut fast_paths = 0;
        for seed in 0..400u64 {
            let strings = chained_strings(seed + 1, 1 + (seed as usize * 7) % 300);
            let mut text = Vec::new();
            for s in &strings {
                text.extend_from_slice(s);
                text.push(b'\n');
            }
            let fc = front_code(&text);
            let count = strings.len();
            // the text as written, then damaged: one byte changed, or a length off by one
            for damage in 0..4 {
                let mut buf = fc.clone();
                let (mut fc_len, mut text_len) = (fc.len(), text.len());
                match damage {
                    0 => {}
                    1 => {
                        let at = (seed as usize * 31) % fc.len();
                        buf[at] = [b'\n', 0, 200, 10, b'C'][seed as usize % 5];
                    }
                    2 => fc_len -= 1,
                    _ => text_len += 1,
                }
                buf.resize(fc_len + SLACK, 0);
                buf[fc_len..].fill(0);
                for upto in [count, (seed as usize * 13) % (count + 1)] {
                    let (mut a, mut a_ends) = (Vec::new(), Vec::new());
                    let want = front_decode_portable(
                        &buf,
                        fc_len,
                        count,
                        upto,
                        text_len,
                        &mut a,
                        &mut a_ends,
                    );
                    let (mut b, mut b_ends, mut nl) = (b"garbage".to_vec(), vec![7], Vec::new());
                    // SAFETY: the CPU has AVX2 and BMI1; buf holds SLACK bytes past fc_len
                    let got = unsafe {
                        front_decode_avx2(
                            &buf,
                            fc_len,
                            count,
                            upto,
                            text_len,
                            &mut b,
                            &mut b_ends,
                            &mut nl,
                        )
                    };
                    assert_eq!(
                        got.is_some(),
                        want.is_ok(),
                        "seed {seed} damage {damage} upto {upto}"
                    );
                    if let Some(ascii) = got {
                        fast_paths += 1;
                        assert_eq!(a, b, "seed {seed} damage {damage} upto {upto}");
                        assert_eq!(a_ends, b_ends, "seed {seed} damage {damage} upto {upto}");
                        assert_eq!(ascii, a.is_ascii(), "seed {seed} damage {damage}");
                        if damage == 0 && upto == count {
                            assert_eq!(a, text);
                        }
                    }
                }
            }
        }
        assert!(fast_paths > 800, "{fast_paths}");
    }

    fn roundtrip(strings: &[String], opts: &TextOptions) -> (TextBlocks, u64) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("col.blocks");
        let size = write_text_blocks(
            &path,
            strings.len(),
            |i, out| out.extend_from_slice(strings[i].as_bytes()),
            opts,
        )
        .unwrap();
        assert_eq!(size, std::fs::metadata(&path).unwrap().len());
        let f = std::fs::File::open(&path).unwrap();
        let map = (size > 0).then(|| unsafe { Mmap::map(&f) }.unwrap());
        let t = TextBlocks::open(&path, map).unwrap();
        assert_eq!(t.len(), strings.len());
        for (i, s) in strings.iter().enumerate() {
            assert_eq!(&t.get(i).unwrap(), s, "entry {i}");
        }
        let mut seen = 0;
        t.for_each_in_blocks(0..t.blocks(), |i, s| {
            assert_eq!(s, strings[i]);
            seen += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, strings.len());
        // many at once, in any order, repeats too: in order, backwards, scattered
        let n = strings.len();
        let scattered: Vec<usize> = (0..2 * n).map(|j| (j * 7919 + j / 3) % n.max(1)).collect();
        for want in [
            (0..n).collect::<Vec<_>>(),
            (0..n).rev().collect(),
            if n > 0 { scattered } else { vec![] },
        ] {
            let got = t.get_many(want.iter().map(|&i| Ok(i))).unwrap();
            let expected: Vec<&String> = want.iter().map(|&i| &strings[i]).collect();
            assert_eq!(got.iter().collect::<Vec<_>>(), expected);
        }
        let e = t.get_many([Ok(0), Ok(n)]).unwrap_err().to_string();
        assert!(
            e.contains("out of range") && e.contains("col.blocks"),
            "{e}"
        );
        (t, size)
    }

    fn smiles_like(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("CC(C)c1ccc(N{})cc1O{}", "C".repeat(i % 7), i % 13))
            .collect()
    }

    #[test]
    fn smiles_round_trip_any_block_and_thread_count() {
        let s = smiles_like(3000);
        let mut sizes = Vec::new();
        for (block, threads) in [(128, 1), (128, 2), (7, 3), (1, 1), (5000, 1)] {
            let opts = TextOptions {
                block,
                threads,
                level: 3,
                ..TextOptions::default()
            };
            let (_, size) = roundtrip(&s, &opts);
            if block == 128 {
                sizes.push(size);
            }
        }
        assert_eq!(sizes[0], sizes[1], "bytes independent of threads");
        roundtrip(&[], &TextOptions::default());
        roundtrip(&["C".to_string()], &TextOptions::default());
    }

    #[test]
    fn numbered_ids_take_a_few_bytes_per_block() {
        let lines: Vec<String> = (2..10_002).map(|i| i.to_string()).collect();
        let opts = TextOptions {
            numbered: true,
            ..TextOptions::default()
        };
        let (_, size) = roundtrip(&lines, &opts);
        assert!(size < 2000, "{size} bytes for 10,000 line numbers");
        let zinc: Vec<String> = (0..1000)
            .map(|i| format!("ZINC{:012}", 1_000_000 + i * i))
            .collect();
        roundtrip(&zinc, &opts);
        // mixed: prefixes change, widths change, numbers too long, zeros, not numbered at all
        let mut mixed: Vec<String> = vec![
            "Z1".into(),
            "Z01".into(),
            "Z001".into(),
            "0".into(),
            "00".into(),
            "ZINC99999999999999999999".into(),
            "mol".into(),
            "m10".into(),
            "m9".into(),
            "m8".into(),
            "m010".into(),
            "18446744073709551615".into(),
            "1".into(),
        ];
        mixed.extend((0..300).map(|i| format!("CHEMBL{}", 300 - i)));
        for block in [1, 2, 3, 5, 128] {
            roundtrip(
                &mixed,
                &TextOptions {
                    block,
                    ..opts.clone()
                },
            );
        }
    }

    #[test]
    fn damage_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("smiles.blocks");
        let s = smiles_like(1000);
        let opts = TextOptions {
            level: 3,
            ..TextOptions::default()
        };
        write_text_blocks(
            &path,
            s.len(),
            |i, o| o.extend_from_slice(s[i].as_bytes()),
            &opts,
        )
        .unwrap();
        let good = std::fs::read(&path).unwrap();
        let open = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            let f = std::fs::File::open(&path).unwrap();
            TextBlocks::open(&path, Some(unsafe { Mmap::map(&f) }.unwrap()))
        };
        let e = open(&good[..good.len() - 3]).unwrap_err().to_string();
        assert!(
            e.contains("smiles.blocks") && e.contains("truncated"),
            "{e}"
        );
        // a flipped byte inside the last block: refused at read, never a wrong string
        let last = s.len() - 1;
        for k in (good.len() - 200)..good.len() {
            let mut bad = good.clone();
            bad[k] ^= 0x55;
            let t = open(&bad).unwrap();
            // the block's last string, and its first, which `get` expands alone: the whole
            // block is still checked
            let first = last / t.block_len() * t.block_len();
            for i in [last, first] {
                match t.get(i) {
                    Ok(v) => assert_eq!(
                        v, s[i],
                        "byte {k}: a flip may only land where zstd ignores it"
                    ),
                    Err(e) => assert!(e.to_string().contains("smiles.blocks"), "{e}"),
                }
            }
            // read together (the block decoded once, whole): the same
            match t.get_many([Ok(last), Ok(first), Ok(first + 1)]) {
                Ok(v) => assert_eq!(v, [&*s[last], &*s[first], &*s[first + 1]], "byte {k}"),
                Err(e) => assert!(e.to_string().contains("smiles.blocks"), "{e}"),
            }
        }
    }
}
