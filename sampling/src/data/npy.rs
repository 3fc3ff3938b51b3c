//! Users' `.npy` files: a 2-D features array and a 1-D labels array, decoded by
//! [`crate::npy`], checked value by value and joined into a table.

use std::path::Path;

use super::error::{DataError, NpyProblem};
use super::split::Table;
use super::{MAX_LABEL, display};
use crate::npy::{Array, FormatProblem, Shape};

/// Reads a features file and a labels file into a table.
pub(crate) fn read_table(x_path: &Path, y_path: &Path) -> Result<Table, DataError> {
    let (x_file, y_file) = (display(x_path), display(y_path));
    let x = read_npy(x_path, &x_file, 2)?;
    let y = read_npy(y_path, &y_file, 1)?;
    table(x, &x_file, y, &y_file)
}

/// Reads the array in `path`, which must have `dims` dimensions.
fn read_npy(path: &Path, file: &str, dims: usize) -> Result<Array, DataError> {
    let bytes = crate::input::read_all(
        path,
        crate::input::max_data_bytes(),
        "the cap of a data file: a quarter of --max-memory, at most 4 GiB",
    )
    .map_err(|source| DataError::Io {
        file: file.to_string(),
        source,
    })?;
    // Decoded, every element takes 8 bytes (f64), whatever its dtype.
    let limit = crate::limits::get().max_memory / 4;
    if let Some(elements) = crate::npy::element_count(&bytes)
        && elements.saturating_mul(8) > limit
    {
        return Err(DataError::Memory {
            file: file.to_string(),
            bytes: elements.saturating_mul(8),
            limit,
        });
    }
    crate::npy::decode(&bytes, dims).map_err(|problem| DataError::Npy {
        file: file.to_string(),
        problem: problem.into(),
    })
}

/// Joins features `x` (n × d) and labels `y` (n) into a table, checking every value.
pub(crate) fn table(x: Array, x_file: &str, y: Array, y_file: &str) -> Result<Table, DataError> {
    let npy_error = |file: &str, problem| DataError::Npy {
        file: file.to_string(),
        problem,
    };
    let shape = || Shape(x.shape.iter().map(|&d| d as u64).collect());
    let [rows, features] = x.shape[..] else {
        let problem = FormatProblem::Dimensions {
            expected: 2,
            shape: shape(),
        };
        return Err(npy_error(x_file, problem.into()));
    };
    if features == 0 {
        return Err(npy_error(x_file, NpyProblem::NoFeatures(shape())));
    }
    if features > super::MAX_FEATURES {
        return Err(npy_error(x_file, NpyProblem::TooManyFeatures(shape())));
    }
    if rows == 0 {
        return Err(DataError::NoExamples {
            file: x_file.to_string(),
        });
    }
    if y.values.len() != rows {
        return Err(DataError::LabelCount {
            features: x_file.to_string(),
            rows,
            labels: y_file.to_string(),
            labels_len: y.values.len(),
        });
    }
    if let Some(k) = x.values.iter().position(|v| !v.is_finite()) {
        let problem = NpyProblem::NotFinite {
            row: k / features,
            column: k % features,
            value: x.values[k].to_string(),
        };
        return Err(npy_error(x_file, problem));
    }
    let mut labels = Vec::with_capacity(rows);
    for (index, &v) in y.values.iter().enumerate() {
        let value = v.to_string();
        if !(v.is_finite() && v >= 0.0 && v.fract() == 0.0) {
            return Err(npy_error(y_file, NpyProblem::BadLabel { index, value }));
        }
        if v > f64::from(MAX_LABEL) {
            return Err(npy_error(
                y_file,
                NpyProblem::LabelTooLarge { index, value },
            ));
        }
        // Exact: an integer in 0..=MAX_LABEL.
        labels.push(v as u32);
    }
    let mut t = Table::new(x_file, features, false);
    t.x = x.values;
    t.y = labels;
    t.origin = (0..rows).collect();
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npy::{decode, encode};

    fn f8(values: &[f64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn array(shape: &[usize], values: &[f64]) -> Array {
        Array {
            shape: shape.to_vec(),
            values: values.to_vec(),
        }
    }

    fn table_error(x: Array, y: Array) -> String {
        table(x, "x.npy", y, "y.npy").unwrap_err().to_string()
    }

    #[test]
    fn joins_features_and_labels() {
        let t = table(
            array(&[2, 2], &[1.0, 2.0, 3.0, 4.0]),
            "x.npy",
            array(&[2], &[1.0, 0.0]),
            "y.npy",
        )
        .unwrap();
        assert_eq!((t.features, t.len(), t.y.as_slice()), (2, 2, &[1, 0][..]));
        assert_eq!(t.x, [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(t.locate(1, 0), "[1, 0]");
    }

    #[test]
    fn an_empty_array_with_a_huge_dimension_is_refused() {
        for fortran in [false, true] {
            let empty = encode(1, "<f8", fortran, &[u64::MAX, 0], &[]);
            let a = decode(&empty, 2).unwrap();
            assert!(a.values.is_empty());
            let e = table(a, "x.npy", array(&[0], &[]), "y.npy").unwrap_err();
            assert_eq!(
                e.to_string(),
                "x.npy: shape (18446744073709551615, 0) has no feature columns"
            );
        }
    }

    #[test]
    fn table_errors_name_the_file_and_index() {
        let x = || array(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let y = || array(&[2], &[1.0, 0.0]);
        assert_eq!(
            table_error(array(&[2, 2], &[1.0, 2.0, f64::NAN, 4.0]), y()),
            "x.npy: [1, 0] is NaN, not finite"
        );
        assert_eq!(
            table_error(array(&[2, 2], &[1.0, f64::INFINITY, 3.0, 4.0]), y()),
            "x.npy: [0, 1] is inf, not finite"
        );
        assert_eq!(
            table_error(x(), array(&[2], &[1.0, -1.0])),
            "y.npy: [1] is -1, not a non-negative integer label"
        );
        assert_eq!(
            table_error(x(), array(&[2], &[2.5, 1.0])),
            "y.npy: [0] is 2.5, not a non-negative integer label"
        );
        assert_eq!(
            table_error(x(), array(&[2], &[f64::NAN, 1.0])),
            "y.npy: [0] is NaN, not a non-negative integer label"
        );
        assert_eq!(
            table_error(x(), array(&[2], &[1.0, 65536.0])),
            "y.npy: [1] is 65536, above 65535, the largest label nrpt takes"
        );
        assert_eq!(
            table_error(x(), array(&[3], &[1.0, 0.0, 1.0])),
            "y.npy holds 3 labels but x.npy holds 2 rows"
        );
        assert_eq!(
            table_error(array(&[2, 0], &[]), y()),
            "x.npy: shape (2, 0) has no feature columns"
        );
        assert_eq!(
            table_error(array(&[0, 2], &[]), array(&[0], &[])),
            "x.npy: no examples"
        );
        assert_eq!(
            table_error(array(&[4], &[1.0; 4]), y()),
            "x.npy: expected a 2-D array, found shape (4,)"
        );
    }

    #[test]
    fn reads_files_and_names_them_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let (x, y) = (dir.path().join("x.npy"), dir.path().join("y.npy"));
        std::fs::write(&x, encode(1, "<f8", false, &[2, 1], &f8(&[0.5, 1.5]))).unwrap();
        std::fs::write(
            &y,
            encode(
                1,
                "<i8",
                false,
                &[2],
                &[1u64, 0].map(u64::to_le_bytes).concat(),
            ),
        )
        .unwrap();
        let t = read_table(&x, &y).unwrap();
        assert_eq!(
            (t.x.as_slice(), t.y.as_slice()),
            (&[0.5, 1.5][..], &[1, 0][..])
        );
        // Labels given as a column, (2, 1), are refused with their shape.
        std::fs::write(&y, encode(1, "<f8", false, &[2, 1], &f8(&[1.0, 0.0]))).unwrap();
        let e = read_table(&x, &y).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("{}: expected a 1-D array, found shape (2, 1)", y.display())
        );
        let missing = dir.path().join("none.npy");
        let e = read_table(&missing, &y).unwrap_err().to_string();
        assert!(e.starts_with(&missing.display().to_string()), "{e}");
        std::fs::write(&x, b"garbage").unwrap();
        let e = read_table(&x, &y).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: not a .npy file (it does not start with \\x93NUMPY)",
                x.display()
            )
        );
    }
}
