//! NumPy `.npy` arrays: a features file (2-D) and a labels file (1-D).
//!
//! A small reader of our own: the format is a magic string, a version, a header that is
//! a Python dict literal (`{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }`)
//! and the raw elements. Crates exist (`ndarray-npy`, on top of `ndarray`; `npyz`, a
//! general reader and writer), but we take ten plain dtypes into `f64`, and what a user
//! needs from us above all is a precise message for every bad header, which we would
//! write here either way.
//!
//! Read: versions 1.0, 2.0 and 3.0; dtypes f4, f8, i1, i2, i4, i8, u1, u2, u4, u8, little-
//! or big-endian; C or Fortran order. Every size is checked against the file before
//! anything is allocated, so a header announcing a huge shape is an error, not an abort.

use std::path::Path;

mod header;

use super::error::{DataError, NpyProblem, Shape};
use super::split::Table;
use super::{MAX_LABEL, display};
use header::parse_header;

/// An array's shape and its elements as `f64`, in C (row-major) order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Array {
    /// The dimensions.
    pub shape: Vec<usize>,
    /// The elements, row-major.
    pub values: Vec<f64>,
}

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
    if let Some(elements) = parse_element_count(&bytes)
        && elements.saturating_mul(8) > limit
    {
        return Err(DataError::Memory {
            file: file.to_string(),
            bytes: elements.saturating_mul(8),
            limit,
        });
    }
    parse_npy(&bytes, dims).map_err(|problem| DataError::Npy {
        file: file.to_string(),
        problem,
    })
}

/// The number of elements a well-formed `.npy` file's header announces (`None` for any
/// malformed file, which [`parse_npy`] then describes).
fn parse_element_count(bytes: &[u8]) -> Option<u64> {
    let start = match (bytes.get(6)?, bytes.get(7)?) {
        (1, 0) => 10,
        (2 | 3, 0) => 12,
        _ => return None,
    };
    let len = bytes
        .get(8..start)?
        .iter()
        .rev()
        .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
    let h = parse_header(bytes.get(start..start.checked_add(len)?)?).ok()?;
    h.shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
}

/// Joins features `x` (n × d) and labels `y` (n) into a table, checking every value.
pub(crate) fn table(x: Array, x_file: &str, y: Array, y_file: &str) -> Result<Table, DataError> {
    let npy_error = |file: &str, problem| DataError::Npy {
        file: file.to_string(),
        problem,
    };
    let shape = || Shape(x.shape.iter().map(|&d| d as u64).collect());
    let [rows, features] = x.shape[..] else {
        return Err(npy_error(
            x_file,
            NpyProblem::Dimensions {
                expected: 2,
                shape: shape(),
            },
        ));
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

/// The magic string every `.npy` file starts with.
const MAGIC: &[u8] = b"\x93NUMPY";

/// Parses a whole `.npy` file that must hold a `dims`-dimensional array.
pub(crate) fn parse_npy(bytes: &[u8], dims: usize) -> Result<Array, NpyProblem> {
    if !bytes.starts_with(MAGIC) {
        return Err(NpyProblem::BadMagic);
    }
    let found = bytes.len() as u64;
    let truncated = |needed: usize| NpyProblem::HeaderTruncated {
        needed: needed as u64,
        found,
    };
    let (Some(&major), Some(&minor)) = (bytes.get(6), bytes.get(7)) else {
        return Err(truncated(8));
    };
    // Version 1.0 has a 2-byte header length; 2.0 a 4-byte one; 3.0 is 2.0 with a UTF-8
    // header instead of latin-1 (which only matters inside field names, which we reject).
    let start = match (major, minor) {
        (1, 0) => 10,
        (2 | 3, 0) => 12,
        _ => return Err(NpyProblem::Version { major, minor }),
    };
    let len_bytes = bytes.get(8..start).ok_or(truncated(start))?;
    let header_len = len_bytes
        .iter()
        .rev()
        .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
    let end = start.saturating_add(header_len);
    let header = bytes.get(start..end).ok_or(truncated(end))?;
    let data = bytes.get(end..).unwrap_or_default();
    let h = parse_header(header)?;
    if h.shape.len() != dims {
        return Err(NpyProblem::Dimensions {
            expected: dims,
            shape: Shape(h.shape),
        });
    }
    let count = h
        .shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .and_then(|c| c.checked_mul(h.dtype.size as u64))
        .ok_or_else(|| NpyProblem::TooLarge(Shape(h.shape.clone())))?;
    let found = data.len() as u64;
    if count > found {
        return Err(NpyProblem::DataTruncated {
            needed: count,
            found,
        });
    }
    if count < found {
        return Err(NpyProblem::TrailingBytes {
            needed: count,
            found,
        });
    }
    // Now the data is exactly as long as the shape says, so every product below fits.
    let values = h.dtype.decode(data);
    // A dimension may still be huge when another is 0; `table` then rejects the shape.
    let shape: Vec<usize> = h
        .shape
        .iter()
        .map(|&d| usize::try_from(d).unwrap_or(usize::MAX))
        .collect();
    let values = match shape[..] {
        // Skipped when empty: a (huge, 0) shape would loop over the huge dimension.
        [rows, cols] if h.fortran && !values.is_empty() => (0..rows)
            .flat_map(|i| (0..cols).map(move |j| j * rows + i))
            .map(|k| values[k])
            .collect(),
        _ => values,
    };
    Ok(Array { shape, values })
}

/// A `.npy` file as NumPy lays it out: preamble, header padded with spaces to a multiple
/// of 64 bytes and ended by a newline, then `data`.
#[cfg(test)]
pub(crate) fn write_npy(
    major: u8,
    descr: &str,
    fortran: bool,
    shape: &str,
    data: &[u8],
) -> Vec<u8> {
    let order = if fortran { "True" } else { "False" };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}");
    let preamble = if major == 1 { 10 } else { 12 };
    while (preamble + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = MAGIC.to_vec();
    out.extend([major, 0]);
    if major == 1 {
        out.extend((header.len() as u16).to_le_bytes());
    } else {
        out.extend((header.len() as u32).to_le_bytes());
    }
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(lines: &[&str]) -> Vec<u8> {
        let s: String = lines.concat();
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    fn f8(values: &[f64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn problem(bytes: &[u8], dims: usize) -> String {
        match parse_npy(bytes, dims) {
            Ok(a) => panic!("parsed {a:?}"),
            Err(e) => e.to_string(),
        }
    }

    // Written by NumPy 2.4.6: `np.save` of [[1.5, -2, 3.25], [0, 1e-3, 7]] as '<f8'.
    const NUMPY_F8: &[&str] = &[
        "934e554d5059010076007b276465736372273a20273c6638272c2027666f727472616e5f6f72646572273a2046616c73",
        "652c20277368617065273a2028322c2033292c207d202020202020202020202020202020202020202020202020202020",
        "202020202020202020202020202020202020202020202020202020202020200a000000000000f83f00000000000000c0",
        "0000000000000a400000000000000000fca9f1d24d62503f0000000000001c40",
    ];

    #[test]
    fn reads_files_numpy_wrote() {
        let a = parse_npy(&hex(NUMPY_F8), 2).unwrap();
        assert_eq!(a.shape, [2, 3]);
        assert_eq!(a.values, [1.5, -2.0, 3.25, 0.0, 1e-3, 7.0]);
        // np.save(np.asfortranarray([[1, -2, 3], [0, -1, 7]], dtype='>i2')).
        let fortran_be = hex(&[
            "934e554d5059010076007b276465736372273a20273e6932272c2027666f727472616e5f6f72646572273a2054727565",
            "2c20277368617065273a2028322c2033292c207d20202020202020202020202020202020202020202020202020202020",
            "202020202020202020202020202020202020202020202020202020202020200a00010000fffeffff00030007",
        ]);
        assert_eq!(
            parse_npy(&fortran_be, 2).unwrap().values,
            [1.0, -2.0, 3.0, 0.0, -1.0, 7.0]
        );
        // format.write_array(version=(2, 0)) of the first array as '<f4'.
        let v2 = hex(&[
            "934e554d50590200740000007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a204661",
            "6c73652c20277368617065273a2028322c2033292c207d20202020202020202020202020202020202020202020202020",
            "202020202020202020202020202020202020202020202020202020202020200a0000c03f000000c00000504000000000",
            "6f12833a0000e040",
        ]);
        let want: Vec<f64> = [1.5f32, -2.0, 3.25, 0.0, 1e-3, 7.0].map(f64::from).to_vec();
        assert_eq!(parse_npy(&v2, 2).unwrap().values, want);
        // format.write_array(version=(3, 0)) of [[1, 2, 3], [0, 4000000000, 7]] as '>u4'.
        let v3 = hex(&[
            "934e554d50590300740000007b276465736372273a20273e7534272c2027666f727472616e5f6f72646572273a204661",
            "6c73652c20277368617065273a2028322c2033292c207d20202020202020202020202020202020202020202020202020",
            "202020202020202020202020202020202020202020202020202020202020200a00000001000000020000000300000000",
            "ee6b280000000007",
        ]);
        assert_eq!(
            parse_npy(&v3, 2).unwrap().values,
            [1.0, 2.0, 3.0, 0.0, 4e9, 7.0]
        );
        // np.save(np.array([0, 1, 2, 1], dtype='u1')): labels.
        let labels = hex(&[
            "934e554d5059010076007b276465736372273a20277c7531272c2027666f727472616e5f6f72646572273a2046616c73",
            "652c20277368617065273a2028342c292c207d2020202020202020202020202020202020202020202020202020202020",
            "202020202020202020202020202020202020202020202020202020202020200a00010201",
        ]);
        let a = parse_npy(&labels, 1).unwrap();
        assert_eq!((a.shape, a.values), (vec![4], vec![0.0, 1.0, 2.0, 1.0]));
    }

    #[test]
    fn the_test_writer_lays_files_out_as_numpy_does() {
        let ours = write_npy(
            1,
            "<f8",
            false,
            "(2, 3)",
            &f8(&[1.5, -2.0, 3.25, 0.0, 1e-3, 7.0]),
        );
        assert_eq!(ours, hex(NUMPY_F8));
    }

    #[test]
    fn reads_every_dtype_in_both_byte_orders() {
        macro_rules! case {
            ($t:ty, $code:literal, [$($v:expr),*]) => {{
                let values: [$t; 6] = [$($v),*];
                let want: Vec<f64> = values.iter().map(|&v| v as f64).collect();
                for big in [false, true] {
                    let data: Vec<u8> = values
                        .iter()
                        .flat_map(|v| if big { v.to_be_bytes() } else { v.to_le_bytes() })
                        .collect();
                    let descr = format!("{}{}", if big { '>' } else { '<' }, $code);
                    for major in [1, 2, 3] {
                        let file = write_npy(major, &descr, false, "(2, 3)", &data);
                        let a = parse_npy(&file, 2).unwrap();
                        assert_eq!((&a.shape[..], &a.values), (&[2, 3][..], &want), "{descr}");
                    }
                }
            }};
        }
        case!(
            f32,
            "f4",
            [0.5, -1.25, f32::MAX, f32::MIN_POSITIVE, 3.0, -7.0]
        );
        case!(
            f64,
            "f8",
            [0.5, -1.25, f64::MAX, f64::MIN_POSITIVE, 1e-300, -7.0]
        );
        case!(i8, "i1", [0, 1, -1, i8::MIN, i8::MAX, 5]);
        case!(i16, "i2", [0, 1, -1, i16::MIN, i16::MAX, 5]);
        case!(i32, "i4", [0, 1, -1, i32::MIN, i32::MAX, 5]);
        case!(i64, "i8", [0, 1, -1, i64::MIN, i64::MAX, 5]);
        case!(u8, "u1", [0, 1, 2, 128, u8::MAX, 5]);
        case!(u16, "u2", [0, 1, 2, 40_000, u16::MAX, 5]);
        case!(u32, "u4", [0, 1, 2, 3_000_000_000, u32::MAX, 5]);
        case!(u64, "u8", [0, 1, 2, 1 << 40, u64::MAX, 5]);
        // The single-byte spellings NumPy uses.
        let a = parse_npy(&write_npy(1, "|i1", false, "(1, 2)", &[0xff, 7]), 2).unwrap();
        assert_eq!(a.values, [-1.0, 7.0]);
    }

    #[test]
    fn fortran_order_is_transposed_to_rows() {
        let columns = f8(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        let a = parse_npy(&write_npy(1, "<f8", true, "(2, 3)", &columns), 2).unwrap();
        assert_eq!(a.values, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let one_row = parse_npy(
            &write_npy(1, "<f8", true, "(1, 3)", &f8(&[1.0, 2.0, 3.0])),
            2,
        );
        assert_eq!(one_row.unwrap().values, [1.0, 2.0, 3.0]);
        let labels = parse_npy(&write_npy(1, "<f8", true, "(3,)", &f8(&[1.0, 0.0, 2.0])), 1);
        assert_eq!(labels.unwrap().values, [1.0, 0.0, 2.0]);
    }

    #[test]
    fn preamble_problems() {
        assert_eq!(
            problem(b"", 2),
            "not a .npy file (it does not start with \\x93NUMPY)"
        );
        assert_eq!(problem(b"PK\x03\x04", 2), problem(b"", 2));
        assert_eq!(
            problem(b"\x93NUMPY\x01", 2),
            "file shorter than its header says: the header ends at byte 8, the file has 7"
        );
        assert_eq!(
            problem(b"\x93NUMPY\x04\x00\x10\x00", 2),
            "unsupported .npy format version 4.0 (1.0, 2.0 and 3.0 are read)"
        );
        assert_eq!(
            problem(b"\x93NUMPY\x01\x01\x10\x00", 2),
            "unsupported .npy format version 1.1 (1.0, 2.0 and 3.0 are read)"
        );
        assert_eq!(
            problem(b"\x93NUMPY\x02\x00\x10\x00", 2),
            "file shorter than its header says: the header ends at byte 12, the file has 10"
        );
        assert_eq!(
            problem(b"\x93NUMPY\x01\x00\xff\xff{}", 2),
            "file shorter than its header says: the header ends at byte 65545, the file has 12"
        );
        assert_eq!(
            problem(b"\x93NUMPY\x03\x00\xff\xff\xff\xff{}", 2),
            "file shorter than its header says: the header ends at byte 4294967307, the file has 14"
        );
    }

    #[test]
    fn shapes_are_checked_against_the_file_before_allocating() {
        let data = f8(&[1.0, 2.0]);
        let cases = [
            (
                "(1, 3)",
                "file shorter than its header says: the shape and dtype need 24 data bytes, the file has 16",
            ),
            (
                "(1000000000, 1000)",
                "file shorter than its header says: the shape and dtype need 8000000000000 data bytes, the file has 16",
            ),
            (
                "(4294967296, 4294967296)",
                "shape (4294967296, 4294967296) is too large",
            ),
            (
                "(3000000000000000000, 1)",
                "shape (3000000000000000000, 1) is too large",
            ),
            (
                "(1, 1)",
                "file longer than its header says: the shape and dtype need 8 data bytes, the file has 16",
            ),
            ("(2,)", "expected a 2-D array, found shape (2,)"),
            ("(1, 1, 2)", "expected a 2-D array, found shape (1, 1, 2)"),
            ("()", "expected a 2-D array, found shape ()"),
        ];
        for (shape, want) in cases {
            assert_eq!(
                problem(&write_npy(1, "<f8", false, shape, &data), 2),
                want,
                "{shape}"
            );
        }
        // An empty array whose other dimension is huge: quick, and refused by `table`.
        for fortran in [false, true] {
            let empty = write_npy(1, "<f8", fortran, "(18446744073709551615, 0)", &[]);
            let a = parse_npy(&empty, 2).unwrap();
            assert!(a.values.is_empty());
            let e = table(a, "x.npy", array(&[0], &[]), "y.npy").unwrap_err();
            assert_eq!(
                e.to_string(),
                "x.npy: shape (18446744073709551615, 0) has no feature columns"
            );
        }
        let labels = write_npy(2, "|u1", false, "(18446744073709551615,)", &[1]);
        assert_eq!(
            problem(&labels, 1),
            "file shorter than its header says: the shape and dtype need 18446744073709551615 data bytes, the file has 1"
        );
    }

    #[test]
    fn never_panics_on_cut_scrambled_or_random_files() {
        let good = hex(NUMPY_F8);
        for end in 0..good.len() {
            assert!(parse_npy(&good[..end], 2).is_err(), "cut at {end}");
        }
        for i in 0..good.len() {
            for b in [0u8, 1, 0x7f, 0xff, b'(', b')', b',', b'9', b'\''] {
                let mut bad = good.clone();
                bad[i] = b;
                let _ = parse_npy(&bad, 2);
            }
        }
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for len in 0..200 {
            let mut bytes = MAGIC.to_vec();
            bytes.extend((0..len).map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 32) as u8
            }));
            let _ = parse_npy(&bytes, 2);
            let _ = parse_npy(&bytes[6..], 1);
        }
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
        std::fs::write(&x, write_npy(1, "<f8", false, "(2, 1)", &f8(&[0.5, 1.5]))).unwrap();
        std::fs::write(
            &y,
            write_npy(
                1,
                "<i8",
                false,
                "(2,)",
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
        std::fs::write(&y, write_npy(1, "<f8", false, "(2, 1)", &f8(&[1.0, 0.0]))).unwrap();
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
