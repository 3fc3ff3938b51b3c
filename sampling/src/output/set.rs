//! A command's outputs described once, as named tables and arrays: [`OutputSet::write`]
//! writes the files (CSV, `.npy`), and the Python package turns the same description
//! into its dict of NumPy arrays, so that the two cannot drift apart.

use std::path::Path;

use super::OutputError;

use super::{Csv, write_atomic};

/// How a column's numbers are written in CSV.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell {
    /// As Rust writes them (`{}`: integers, or the shortest decimal that reads back to
    /// the same float).
    Plain,
    /// With this many decimals (`{:.N}`).
    Fixed(usize),
    /// In scientific notation with this many decimals (`{:.Ne}`).
    Sci(usize),
    /// As [`Cell::Fixed`], and an empty cell for NaN (a value that does not exist, such
    /// as the pair above the top level).
    FixedOrBlank(usize),
}

impl Cell {
    fn f64(self, v: f64) -> String {
        match self {
            Cell::Plain => v.to_string(),
            Cell::FixedOrBlank(_) if v.is_nan() => String::new(),
            Cell::Fixed(n) | Cell::FixedOrBlank(n) => format!("{v:.n$}"),
            Cell::Sci(n) => format!("{v:.n$e}"),
        }
    }

    fn f32(self, v: f32) -> String {
        match self {
            Cell::Plain => v.to_string(),
            // f32 → f64 is exact, and a fixed number of digits rounds the exact value.
            _ => self.f64(f64::from(v)),
        }
    }
}

/// The values of a column, row after row (a row holds one value, or a block of
/// `row_shape` values).
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    /// Counts.
    U64(Vec<u64>),
    /// Reals, and how CSV writes them.
    F64(Vec<f64>, Cell),
    /// `f32` values (states), and how CSV writes them.
    F32(Vec<f32>, Cell),
    /// Yes or no (CSV `true`/`false`; Python booleans).
    Bool(Vec<bool>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::U64(v) => v.len(),
            Values::F64(v, _) => v.len(),
            Values::F32(v, _) => v.len(),
            Values::Bool(v) => v.len(),
        }
    }

    fn cell(&self, i: usize) -> String {
        match self {
            Values::U64(v) => v[i].to_string(),
            Values::F64(v, c) => c.f64(v[i]),
            Values::F32(v, c) => c.f32(v[i]),
            Values::Bool(v) => v[i].to_string(),
        }
    }
}

/// One column of a table: a value per row, or a block per row (a vector: CSV columns
/// `NAME{separator}0 …`; Python a 2-D array; larger blocks are for Python only).
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    /// Its name (the CSV header, or the prefix of the headers of a block).
    pub name: String,
    /// The shape of each row's block (empty: one value).
    pub row_shape: Vec<usize>,
    /// Between the name and the index in a block's CSV headers (`_` or nothing).
    pub separator: &'static str,
    /// The values, row-major.
    pub values: Values,
}

impl Column {
    /// A column of one value per row.
    pub fn new(name: &str, values: Values) -> Column {
        Column {
            name: name.to_string(),
            row_shape: Vec::new(),
            separator: "_",
            values,
        }
    }

    /// A column of a vector of `width` values per row (CSV: `NAME_0 … NAME_{width−1}`).
    pub fn vector(name: &str, width: usize, values: Values) -> Column {
        Column {
            row_shape: vec![width],
            ..Column::new(name, values)
        }
    }

    /// Values per row.
    pub fn width(&self) -> usize {
        self.row_shape.iter().product()
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.values.len().checked_div(self.width()).unwrap_or(0)
    }
}

/// A table: columns of as many rows each.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Its name in Python's dict.
    pub name: &'static str,
    /// The CSV file it is written to (`None`: Python only).
    pub file: Option<&'static str>,
    /// Whether Python gets it (a table that only renders an array in CSV does not).
    pub in_python: bool,
    /// The columns.
    pub columns: Vec<Column>,
}

/// An `f32` array, written as `.npy`.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// Its name in Python's dict.
    pub name: &'static str,
    /// The `.npy` file it is written to (`None`: Python only).
    pub file: Option<&'static str>,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its values, row-major.
    pub data: Vec<f32>,
}

/// Everything a command gives besides its summary: tables, arrays and totals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OutputSet {
    /// The tables.
    pub tables: Vec<Table>,
    /// The arrays.
    pub arrays: Vec<Array>,
    /// Counts for Python (`round_trips`, …).
    pub totals: Vec<(&'static str, u64)>,
    /// Vectors for Python only, by name (`sample_iterations`).
    pub vectors: Vec<(&'static str, Vec<u64>)>,
}

impl Table {
    /// Writes the table as CSV to `dir/file` (nothing for a Python-only table). Only
    /// columns of one value or one vector per row can be written.
    pub fn write(&self, dir: &Path) -> Result<(), OutputError> {
        let Some(file) = self.file else {
            return Ok(());
        };
        let mut header = Vec::new();
        for c in &self.columns {
            match c.row_shape.as_slice() {
                [] => header.push(c.name.clone()),
                [w] => header.extend((0..*w).map(|j| format!("{}{}{j}", c.name, c.separator))),
                _ => {
                    return Err(OutputError::malformed(
                        &dir.join(file),
                        format!("column {} has a block per row", c.name),
                    ));
                }
            }
        }
        let refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut csv = Csv::new(&refs);
        let rows = self.columns.first().map_or(0, Column::rows);
        if let Some(c) = self.columns.iter().find(|c| c.rows() != rows) {
            return Err(OutputError::malformed(
                &dir.join(file),
                format!("column {} has {} rows, not {rows}", c.name, c.rows()),
            ));
        }
        for i in 0..rows {
            let mut cells = Vec::with_capacity(header.len());
            for c in &self.columns {
                let w = c.width();
                cells.extend((i * w..(i + 1) * w).map(|k| c.values.cell(k)));
            }
            csv.row(cells);
        }
        csv.write(&dir.join(file))
    }
}

impl OutputSet {
    /// Writes every table and array that has a file into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), OutputError> {
        for t in &self.tables {
            t.write(dir)?;
        }
        for a in &self.arrays {
            if let Some(file) = a.file {
                write_atomic(&dir.join(file), &crate::npy::encode_f32(&a.shape, &a.data))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_write_their_columns_and_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let t = Table {
            name: "t",
            file: Some("t.csv"),
            in_python: true,
            columns: vec![
                Column::new("k", Values::U64(vec![1, 2])),
                Column::new("a", Values::F64(vec![0.5, 0.25], Cell::Fixed(2))),
                Column::vector("v", 2, Values::F64(vec![1e-3, 2.0, 3.0, 4.0], Cell::Sci(1))),
            ],
        };
        t.write(dir.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("t.csv")).unwrap(),
            "k,a,v_0,v_1\n1,0.50,1.0e-3,2.0e0\n2,0.25,3.0e0,4.0e0\n"
        );
        // Columns of other lengths are refused, not written.
        let bad = Table {
            file: Some("bad.csv"),
            columns: vec![
                Column::new("k", Values::U64(vec![1, 2])),
                Column::new("a", Values::U64(vec![1])),
            ],
            ..t
        };
        assert!(bad.write(dir.path()).is_err());
        assert!(!dir.path().join("bad.csv").exists());
    }
}
