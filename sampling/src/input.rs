//! Reading what users give, bounded: every input file (data, configuration, checkpoint,
//! shard results, rates) is opened through [`open`], which
//! - refuses what is not a regular file (a FIFO blocks until a writer comes, a device
//!   such as `/dev/zero` never ends) unless `--allow-special-files`, and then waits for
//!   data in short polls, so that Ctrl-C still stops it;
//! - caps the bytes read (a regular file larger than the cap is refused before reading);
//! - for gzip ([`open_detected`]) caps the decompressed bytes too, and refuses a stream that
//!   expands more than [`MAX_GZIP_RATIO`] times (a decompression bomb);
//! - stops with [`InputError::Stopped`] when Ctrl-C or SIGTERM arrives.
//!
//! Errors travel inside `std::io::Error` (kind `InvalidData`, or `Interrupted`-free
//! `Other` for a stop), so every reader keeps its own message with the file's name.

use std::cell::Cell;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use crate::limits::human;

/// A gzip stream that expands more than this many times is refused: genuine numeric
/// CSV compresses 3 to 20 times. The check starts once [`GZIP_RATIO_GRACE`] bytes are
/// out, so small, very regular files pass. (Apache POI's `ZipSecureFile` guards its zip
/// entries the same way, at 100.)
pub const MAX_GZIP_RATIO: u64 = 100;
/// Decompressed bytes before [`MAX_GZIP_RATIO`] applies.
pub const GZIP_RATIO_GRACE: u64 = 4 << 20;

/// Why an input was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// Not a regular file, and not allowed.
    #[error(
        "is {kind}, not a regular file: nrpt reads FIFOs and devices only with \
         --allow-special-files (and caps them like files)"
    )]
    NotRegular {
        /// What it is ("a FIFO", "a character device", …).
        kind: &'static str,
    },
    /// More bytes than the cap.
    #[error("is larger than {} ({what}); nrpt refuses it rather than fill the memory", human(*cap))]
    TooLarge {
        /// The cap, in bytes.
        cap: u64,
        /// Which cap.
        what: &'static str,
    },
    /// A gzip stream that expands like a decompression bomb.
    #[error(
        "its gzip stream expands more than {MAX_GZIP_RATIO} times ({} from {}): refused as a \
         likely decompression bomb; if the data is genuine, gunzip it and give the plain file",
        human(*out), human(*in_)
    )]
    Bomb {
        /// Decompressed bytes so far.
        out: u64,
        /// Compressed bytes read for them.
        in_: u64,
    },
    /// Ctrl-C or SIGTERM arrived while reading.
    #[error("stopped by Ctrl-C or SIGTERM while reading")]
    Stopped,
}

impl From<InputError> for io::Error {
    fn from(e: InputError) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }
}

/// What kind of thing a path is, for messages, when it is not a regular file.
fn special_kind(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a folder")
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    }
}

/// An input file open for reading, at most `cap` bytes of it.
#[derive(Debug)]
pub struct Input {
    file: File,
    special: bool,
    cap: u64,
    what: &'static str,
    read: Rc<Cell<u64>>,
}

/// Opens `path` for reading at most `cap` bytes (`what` names the cap in messages:
/// "the cap of a configuration file"). Refuses a folder always, and any other non-regular
/// file unless `crate::limits` allows special files.
pub fn open(path: &Path, cap: u64, what: &'static str) -> io::Result<Input> {
    let allowed = |meta: &std::fs::Metadata| -> io::Result<bool> {
        match special_kind(meta) {
            None => Ok(false),
            Some(kind) if meta.is_dir() || !crate::limits::get().allow_special_files => {
                Err(InputError::NotRegular { kind }.into())
            }
            Some(_) => Ok(true),
        }
    };
    // Judged before it is opened (a device is not even opened unless allowed), and again
    // by the descriptor: what was opened is what is read, even if the name was swapped
    // for a FIFO in between.
    allowed(&std::fs::metadata(path)?)?;
    use std::os::unix::fs::OpenOptionsExt;
    // Never block in open (a FIFO without a writer) or read: wait in polls instead.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    let special = allowed(&meta)?;
    if !special && meta.len() > cap {
        return Err(InputError::TooLarge { cap, what }.into());
    }
    Ok(Input {
        file,
        special,
        cap,
        what,
        read: Rc::new(Cell::new(0)),
    })
}

impl Input {
    /// Waits until the file has data (or its writer has gone), polling for Ctrl-C.
    fn wait_readable(&self) -> io::Result<()> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        loop {
            if crate::interrupt::requested() {
                return Err(InputError::Stopped.into());
            }
            let mut fds = [PollFd::new(&self.file, PollFlags::IN)];
            let timeout = Timespec {
                tv_sec: 0,
                tv_nsec: 100_000_000,
            };
            match poll(&mut fds, Some(&timeout)) {
                Ok(0) => continue,
                Ok(_) => return Ok(()),
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if crate::interrupt::requested() {
            return Err(InputError::Stopped.into());
        }
        let n = loop {
            if self.special {
                self.wait_readable()?;
            }
            match self.file.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                other => break other?,
            }
        };
        let total = self.read.get() + n as u64;
        self.read.set(total);
        if total > self.cap {
            return Err(InputError::TooLarge {
                cap: self.cap,
                what: self.what,
            }
            .into());
        }
        Ok(n)
    }
}

/// A gzip stream over an [`Input`], capped after decompression.
pub(crate) struct GzInput {
    inner: flate2::read::MultiGzDecoder<BufReader<Box<dyn Read>>>,
    compressed: Rc<Cell<u64>>,
    out: u64,
    cap: u64,
    what: &'static str,
}

/// A gzip stream over `input`, whose bytes read so far `compressed` counts: at most
/// `cap` bytes out, expanding at most [`MAX_GZIP_RATIO`] times.
fn gunzip(
    input: Box<dyn Read>,
    compressed: Rc<Cell<u64>>,
    cap: u64,
    what: &'static str,
) -> GzInput {
    GzInput {
        inner: flate2::read::MultiGzDecoder::new(BufReader::new(input)),
        compressed,
        out: 0,
        cap,
        what,
    }
}

/// The first bytes of a gzip stream (RFC 1952: ID1, ID2).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Bytes [`open_detected`] reads ahead to tell the format.
pub const HEAD_BYTES: usize = 8;

/// An input whose format was told from its first bytes: the bytes of the file, or
/// decompressed when it is gzip.
pub struct Detected {
    /// The first [`HEAD_BYTES`] bytes of the file as stored (fewer for a shorter file),
    /// for a reader that checks what else it might be (a NumPy file given as CSV).
    pub head: Vec<u8>,
    /// Its contents, from the first byte (decompressed when gzip).
    pub reader: Box<dyn Read>,
}

/// Opens `path` as [`open`] does and tells from its first bytes whether it is
/// gzip-compressed (then decompressed: at most `cap` bytes out, expanding at most
/// [`MAX_GZIP_RATIO`] times), whatever its name:
/// each byte is read once, so a pipe works as a file does.
pub fn open_detected(path: &Path, cap: u64, what: &'static str) -> io::Result<Detected> {
    let mut input = open(path, cap, what)?;
    let compressed = Rc::clone(&input.read);
    let mut head = Vec::with_capacity(HEAD_BYTES);
    (&mut input)
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)?;
    let gzip = head.starts_with(&GZIP_MAGIC);
    let whole: Box<dyn Read> = Box::new(io::Cursor::new(head.clone()).chain(input));
    let reader: Box<dyn Read> = if gzip {
        Box::new(gunzip(whole, compressed, cap, what))
    } else {
        whole
    };
    Ok(Detected { head, reader })
}

impl Read for GzInput {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.out += n as u64;
        if self.out > self.cap {
            return Err(InputError::TooLarge {
                cap: self.cap,
                what: self.what,
            }
            .into());
        }
        let in_ = self.compressed.get().max(1);
        if self.out > GZIP_RATIO_GRACE && self.out > in_.saturating_mul(MAX_GZIP_RATIO) {
            return Err(InputError::Bomb { out: self.out, in_ }.into());
        }
        Ok(n)
    }
}

/// Reads all of `path`, at most `cap` bytes, into a buffer that never holds more than
/// `cap + 1` bytes: a regular file's exactly (its size, checked against the cap by
/// [`open`]), a FIFO's or device's grown by doubling up to `cap + 1`, so that a stream
/// longer than the cap is refused having read one byte past it.
pub fn read_all(path: &Path, cap: u64, what: &'static str) -> io::Result<Vec<u8>> {
    let input = open(path, cap, what)?;
    let size = if input.special {
        0
    } else {
        input.file.metadata()?.len()
    };
    // The most this buffer may hold; never above what the address space allows.
    let most = usize::try_from(cap.saturating_add(1)).unwrap_or(usize::MAX);
    // A regular file in one allocation (one byte more, to see its end); a stream from
    // 64 KiB on.
    let first = usize::try_from(size.saturating_add(1))
        .unwrap_or(usize::MAX)
        .max(1 << 16)
        .min(most);
    let mut bytes = vec_of(first)?;
    let mut filled = 0;
    let mut limited = input.take(cap.saturating_add(1));
    loop {
        if filled == bytes.len() {
            if filled >= most {
                break;
            }
            let grown = bytes.len().saturating_mul(2).min(most);
            bytes
                .try_reserve_exact(grown - filled)
                .map_err(io::Error::other)?;
            bytes.resize(grown, 0);
        }
        match limited.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    bytes.truncate(filled);
    if bytes.len() as u64 > cap {
        return Err(InputError::TooLarge { cap, what }.into());
    }
    Ok(bytes)
}

/// `len` zeroed bytes, or the allocator's refusal as an error.
fn vec_of(len: usize) -> io::Result<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(io::Error::other)?;
    v.resize(len, 0);
    Ok(v)
}

/// Reads all of `path` as UTF-8 text, at most `cap` bytes.
pub fn read_text(path: &Path, cap: u64, what: &'static str) -> io::Result<String> {
    let bytes = read_all(path, cap, what)?;
    String::from_utf8(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "is not UTF-8 text"))
}

/// The cap of a configuration file (TOML).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// The cap of a text list of numbers (`scale --rates-file`).
pub const MAX_LIST_BYTES: u64 = 16 << 20;
/// The cap of one shard's `results.json` (`scale merge`).
pub const MAX_RESULTS_BYTES: u64 = 256 << 20;

/// The cap of a data file (raw, and decompressed): a quarter of `--max-memory`, at most
/// 4 GiB (its parsed table takes several times its text).
pub fn max_data_bytes() -> u64 {
    (crate::limits::get().max_memory / 4).clamp(1 << 20, 4 << 30)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn message(e: io::Error) -> String {
        e.to_string()
    }

    #[test]
    fn regular_files_are_read_up_to_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        std::fs::write(&p, "hello").unwrap();
        assert_eq!(read_text(&p, 5, "test").unwrap(), "hello");
        let e = message(read_all(&p, 4, "the test cap").unwrap_err());
        assert!(e.contains("larger than 4 B (the test cap)"), "{e}");
        let e = message(read_all(dir.path(), 100, "t").unwrap_err());
        assert!(e.contains("is a folder"), "{e}");
    }

    #[test]
    fn devices_and_fifos_are_refused() {
        let e = message(read_all(Path::new("/dev/zero"), 1 << 30, "t").unwrap_err());
        assert!(
            e.contains("character device") && e.contains("--allow-special-files"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f.csv");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        // Refused at once, without waiting for a writer.
        let e = message(read_all(&fifo, 1 << 30, "t").unwrap_err());
        assert!(e.contains("FIFO"), "{e}");
    }

    #[test]
    fn gzip_bombs_and_oversized_streams_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let bomb = dir.path().join("bomb.csv.gz");
        let mut enc = flate2::write::GzEncoder::new(
            File::create(&bomb).unwrap(),
            flate2::Compression::best(),
        );
        let row = b"0,0,0,0,0,0,0,1\n".repeat(4096);
        for _ in 0..200 {
            enc.write_all(&row).unwrap();
        }
        enc.finish().unwrap();
        let mut text = Vec::new();
        let e = open_detected(&bomb, 1 << 30, "t")
            .unwrap()
            .reader
            .read_to_end(&mut text)
            .unwrap_err();
        assert!(message(e).contains("decompression bomb"));
        // Stopped soon after the grace: the decompressed bytes stay small.
        assert!(
            text.len() as u64 <= GZIP_RATIO_GRACE + (1 << 20),
            "{}",
            text.len()
        );
        // A decompressed cap below the stream's size.
        let small = dir.path().join("s.csv.gz");
        let mut enc = flate2::write::GzEncoder::new(
            File::create(&small).unwrap(),
            flate2::Compression::fast(),
        );
        enc.write_all(&[b'7'; 10_000]).unwrap();
        enc.finish().unwrap();
        let e = open_detected(&small, 5_000, "t")
            .unwrap()
            .reader
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert!(message(e).contains("larger than"));
        // Under both caps, read whole.
        let mut all = Vec::new();
        open_detected(&small, 20_000, "t")
            .unwrap()
            .reader
            .read_to_end(&mut all)
            .unwrap();
        assert_eq!(all.len(), 10_000);
    }
}
