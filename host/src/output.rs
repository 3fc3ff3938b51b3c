//! Files the commands write: each one to a temporary name in its folder, then renamed
//! into place, so an interrupted run never leaves a half-written file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Writes `bytes` to `path` through a temporary file in the same folder.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .with_context(|| format!("{} is not a file path", path.display()))?
        .to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| -> Result<()> {
        let mut f =
            fs::File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        if crate::interrupt::requested() {
            anyhow::bail!("interrupted");
        }
        fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Creates the output folder (and its parents).
pub fn ensure_dir(dir: &Path) -> Result<PathBuf> {
    fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the folder {}", dir.display()))?;
    Ok(dir.to_path_buf())
}

/// Writes pretty JSON.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// A CSV table built in memory.
#[derive(Debug, Default)]
pub struct Csv {
    text: String,
}

impl Csv {
    /// A table with this header.
    pub fn new(header: &[&str]) -> Self {
        let mut text = header.join(",");
        text.push('\n');
        Csv { text }
    }

    /// Appends one row of already formatted cells.
    pub fn row<I, S>(&mut self, cells: I)
    where
        I: IntoIterator<Item = S>,
        S: std::fmt::Display,
    {
        let mut first = true;
        for c in cells {
            if !first {
                self.text.push(',');
            }
            first = false;
            self.text.push_str(&c.to_string());
        }
        self.text.push('\n');
    }

    /// Writes the table.
    pub fn write(&self, path: &Path) -> Result<()> {
        write_atomic(path, self.text.as_bytes())
    }
}

/// Encodes a little-endian `f32` array of the given shape as a NumPy `.npy` file
/// (format version 1.0).
pub fn npy_f32(shape: &[usize], data: &[f32]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_text = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape_text}, }}");
    // Magic (6) + version (2) + header length (2) + header, padded to 64 bytes, ending
    // with a newline.
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat(total.next_multiple_of(64) - total));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + 4 * data.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for v in data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_is_aligned_and_parsable() {
        let bytes = npy_f32(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + hlen) % 64, 0);
        let header = std::str::from_utf8(&bytes[10..10 + hlen]).unwrap();
        assert!(header.contains("'shape': (3, 2)"), "{header}");
        assert!(header.ends_with('\n'));
        assert_eq!(bytes.len(), 10 + hlen + 24);
        assert_eq!(&bytes[10 + hlen..10 + hlen + 4], &1.0f32.to_le_bytes());
        assert!(
            std::str::from_utf8(&npy_f32(&[4], &[0.0; 4])[10..])
                .unwrap()
                .contains("(4,)")
        );
    }

    #[test]
    fn atomic_write_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        write_atomic(&p, b"hello").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"hello");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1);
    }
}
