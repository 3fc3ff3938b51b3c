//! Files within an output folder: each written through a temporary name, CSV tables,
//! `.npy` arrays, JSON.

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

/// Writes `bytes` to `path` through a temporary file in the same folder
/// (`.NAME.TOKEN.tmp`, locked while written, see [`temp`](super::temp)), synced, then
/// renamed into place. Errors name the file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = super::parent_of(path);
    let name = path
        .file_name()
        .with_context(|| format!("{} is not a file path", path.display()))?
        .to_string_lossy()
        .into_owned();
    let locked = super::temp::create_locked(dir, |t| format!(".{name}.{t}.tmp"))
        .with_context(|| format!("cannot create a temporary file for {}", path.display()))?;
    let tmp = locked.path.clone();
    let result = (|| -> Result<()> {
        let mut f = &locked.file;
        f.write_all(bytes)
            .and_then(|()| f.sync_all())
            .with_context(|| format!("cannot write {}", path.display()))?;
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

/// Writes pretty JSON.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// A CSV table built in memory and written whole (RFC 4180 quoting by the `csv`
/// crate: a cell with a comma or a quote is quoted). A row with another number of
/// cells than the header makes [`Csv::write`] fail.
pub struct Csv {
    writer: csv::Writer<Vec<u8>>,
    columns: usize,
    rows: usize,
    ragged: Option<(usize, usize)>,
    error: Option<String>,
}

impl Csv {
    /// A table with this header.
    pub fn new(header: &[&str]) -> Self {
        let mut t = Csv {
            writer: csv::WriterBuilder::new()
                .flexible(true)
                .from_writer(Vec::new()),
            columns: header.len(),
            rows: 0,
            ragged: None,
            error: None,
        };
        t.record(header.iter().map(|h| h.to_string()).collect());
        t
    }

    fn record(&mut self, cells: Vec<String>) {
        if cells.len() != self.columns && self.ragged.is_none() {
            self.ragged = Some((self.rows, cells.len()));
        }
        if let Err(e) = self.writer.write_record(&cells)
            && self.error.is_none()
        {
            self.error = Some(e.to_string());
        }
    }

    /// Appends one row of already formatted cells.
    pub fn row<I, S>(&mut self, cells: I)
    where
        I: IntoIterator<Item = S>,
        S: std::fmt::Display,
    {
        self.rows += 1;
        self.record(cells.into_iter().map(|c| c.to_string()).collect());
    }

    /// Writes the table.
    pub fn write(self, path: &Path) -> Result<()> {
        if let Some((row, cells)) = self.ragged {
            anyhow::bail!(
                "{}: row {row} has {cells} cells for {} columns",
                path.display(),
                self.columns
            );
        }
        if let Some(e) = self.error {
            anyhow::bail!("{}: {e}", path.display());
        }
        let bytes = self
            .writer
            .into_inner()
            .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.error()))?;
        write_atomic(path, &bytes)
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
    fn csv_cells_are_quoted_and_rows_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        let mut t = Csv::new(&["method", "value"]);
        t.row(["DEO⋆, S = 0.2", "1.5"]);
        t.row(["say \"hi\"", "2"]);
        t.write(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "method,value\n\"DEO⋆, S = 0.2\",1.5\n\"say \"\"hi\"\"\",2\n"
        );
        let mut t = Csv::new(&["a", "b"]);
        t.row(["1", "2", "3"]);
        let e = t.write(&dir.path().join("bad.csv")).unwrap_err();
        assert!(
            e.to_string().contains("row 1 has 3 cells for 2 columns"),
            "{e}"
        );
        assert!(!dir.path().join("bad.csv").exists());
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
