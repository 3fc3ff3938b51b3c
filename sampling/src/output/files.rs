//! Files within an output folder: each written through a temporary name, CSV tables,
//! JSON (`.npy` arrays are encoded by [`crate::npy`]).

use std::fs;
use std::io::Write;
use std::path::Path;

use super::{InterruptedWhileWriting, OutputError};

type Result<T, E = OutputError> = std::result::Result<T, E>;

/// Writes `bytes` to `path` through a temporary file in the same folder
/// (`.NAME.TOKEN.tmp`, locked while written, see [`temp`](super::temp)), synced, then
/// renamed into place. Errors name the file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = super::parent_of(path);
    let name = path
        .file_name()
        .ok_or_else(|| OutputError::malformed(path, "not a file path"))?
        .to_string_lossy()
        .into_owned();
    let locked = super::temp::create_locked(dir, |t| format!(".{name}.{t}.tmp")).map_err(|e| {
        OutputError::io(
            format!("cannot create a temporary file for {}", path.display()),
            e,
        )
    })?;
    let tmp = locked.path.clone();
    let result = (|| -> Result<()> {
        let mut f = &locked.file;
        let cannot = |e| OutputError::io(format!("cannot write {}", path.display()), e);
        f.write_all(bytes)
            .and_then(|()| f.sync_all())
            .map_err(cannot)?;
        if crate::interrupt::requested() {
            return Err(InterruptedWhileWriting(path.display().to_string()).into());
        }
        fs::rename(&tmp, path).map_err(cannot)?;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Writes pretty JSON, non-finite numbers named as [`crate::json`] says.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut text = crate::json::to_string_pretty(value)
        .map_err(|e| OutputError::malformed(path, e.to_string()))?;
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
            return Err(OutputError::malformed(
                path,
                format!("row {row} has {cells} cells for {} columns", self.columns),
            ));
        }
        if let Some(e) = self.error {
            return Err(OutputError::malformed(path, e));
        }
        let bytes = self
            .writer
            .into_inner()
            .map_err(|e| OutputError::malformed(path, e.error().to_string()))?;
        write_atomic(path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
