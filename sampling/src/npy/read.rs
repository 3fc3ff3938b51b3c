//! Reading `.npy` bytes: the preamble, the header, then the elements as `f64` in C
//! order, every size checked against the file before anything is allocated.

use super::header::{Header, parse_header};
use super::{Array, FormatProblem, MAGIC, Shape};

/// Decodes a whole `.npy` file that must hold a `dims`-dimensional array.
pub fn decode(bytes: &[u8], dims: usize) -> Result<Array, FormatProblem> {
    let (h, data) = split(bytes)?;
    if h.shape.len() != dims {
        return Err(FormatProblem::Dimensions {
            expected: dims,
            shape: Shape(h.shape),
        });
    }
    let count = h
        .shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .and_then(|c| c.checked_mul(h.dtype.size as u64))
        .ok_or_else(|| FormatProblem::TooLarge(Shape(h.shape.clone())))?;
    let found = data.len() as u64;
    if count > found {
        return Err(FormatProblem::DataTruncated {
            needed: count,
            found,
        });
    }
    if count < found {
        return Err(FormatProblem::TrailingBytes {
            needed: count,
            found,
        });
    }
    // Now the data is exactly as long as the shape says, so every product below fits.
    let values = h.dtype.decode(data);
    // A dimension may still be huge when another is 0; callers then reject the shape.
    let shape: Vec<usize> = h
        .shape
        .iter()
        .map(|&d| usize::try_from(d).unwrap_or(usize::MAX))
        .collect();
    let values = if h.fortran {
        c_order(values, &shape)
    } else {
        values
    };
    Ok(Array { shape, values })
}

/// The number of elements a well-formed `.npy` file's header announces, before any of
/// them is decoded (`None` for any malformed file, which [`decode`] then describes).
pub(crate) fn element_count(bytes: &[u8]) -> Option<u64> {
    let (h, _) = split(bytes).ok()?;
    h.shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
}

/// The header and the data bytes after it.
fn split(bytes: &[u8]) -> Result<(Header, &[u8]), FormatProblem> {
    if !bytes.starts_with(MAGIC) {
        return Err(FormatProblem::BadMagic);
    }
    let found = bytes.len() as u64;
    let truncated = |needed: usize| FormatProblem::HeaderTruncated {
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
        _ => return Err(FormatProblem::Version { major, minor }),
    };
    let len_bytes = bytes.get(8..start).ok_or(truncated(start))?;
    let header_len = len_bytes
        .iter()
        .rev()
        .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
    let end = start.saturating_add(header_len);
    let header = bytes.get(start..end).ok_or(truncated(end))?;
    let data = bytes.get(end..).unwrap_or_default();
    Ok((parse_header(header)?, data))
}

/// Elements stored in Fortran order (the first index varying fastest), put in C order
/// (the last index varying fastest). `values` holds exactly the elements of `shape`.
fn c_order(values: Vec<f64>, shape: &[usize]) -> Vec<f64> {
    // Skipped when empty: a (huge, 0) shape would loop over the huge dimension. With
    // one dimension, both orders are the same.
    if values.is_empty() || shape.len() < 2 {
        return values;
    }
    // Every dimension is at most the number of elements now, so the strides fit.
    let strides: Vec<usize> = shape
        .iter()
        .scan(1, |stride, &d| {
            let s = *stride;
            *stride *= d;
            Some(s)
        })
        .collect();
    let mut index = vec![0; shape.len()];
    let mut offset = 0;
    let mut out = Vec::with_capacity(values.len());
    for _ in 0..values.len() {
        out.push(values[offset]);
        // Step the C-order index: the last dimension first, carrying leftwards.
        for k in (0..shape.len()).rev() {
            index[k] += 1;
            offset += strides[k];
            if index[k] < shape[k] {
                break;
            }
            offset -= strides[k] * shape[k];
            index[k] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::encode;
    use super::super::numpy_files::*;
    use super::*;

    fn f8(values: &[f64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn problem(bytes: &[u8], dims: usize) -> String {
        match decode(bytes, dims) {
            Ok(a) => panic!("parsed {a:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn reads_files_numpy_wrote() {
        let a = decode(&hex(F8_2X3), 2).unwrap();
        assert_eq!(a.shape, [2, 3]);
        assert_eq!(a.values, [1.5, -2.0, 3.25, 0.0, 1e-3, 7.0]);
        assert_eq!(
            decode(&hex(FORTRAN_BE_I2_2X3), 2).unwrap().values,
            [1.0, -2.0, 3.0, 0.0, -1.0, 7.0]
        );
        let want: Vec<f64> = [1.5f32, -2.0, 3.25, 0.0, 1e-3, 7.0].map(f64::from).to_vec();
        assert_eq!(decode(&hex(V2_F4_2X3), 2).unwrap().values, want);
        assert_eq!(
            decode(&hex(V3_BE_U4_2X3), 2).unwrap().values,
            [1.0, 2.0, 3.0, 0.0, 4e9, 7.0]
        );
        let a = decode(&hex(U1_LABELS), 1).unwrap();
        assert_eq!((a.shape, a.values), (vec![4], vec![0.0, 1.0, 2.0, 1.0]));
        let a = decode(&hex(FORTRAN_I2_2X3X4), 3).unwrap();
        assert_eq!(a.shape, [2, 3, 4]);
        assert_eq!(
            a.values,
            (0..24).map(|v| f64::from(v - 5)).collect::<Vec<_>>()
        );
        let a = decode(&hex(F4_SCALAR), 0).unwrap();
        assert_eq!((a.shape.len(), a.values), (0, vec![1.5]));
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
                        let file = encode(major, &descr, false, &[2, 3], &data);
                        let a = decode(&file, 2).unwrap();
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
        let a = decode(&encode(1, "|i1", false, &[1, 2], &[0xff, 7]), 2).unwrap();
        assert_eq!(a.values, [-1.0, 7.0]);
    }

    #[test]
    fn fortran_order_is_transposed_to_rows() {
        let columns = f8(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        let a = decode(&encode(1, "<f8", true, &[2, 3], &columns), 2).unwrap();
        assert_eq!(a.values, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let one_row = decode(&encode(1, "<f8", true, &[1, 3], &f8(&[1.0, 2.0, 3.0])), 2);
        assert_eq!(one_row.unwrap().values, [1.0, 2.0, 3.0]);
        let labels = decode(&encode(1, "<f8", true, &[3], &f8(&[1.0, 0.0, 2.0])), 1);
        assert_eq!(labels.unwrap().values, [1.0, 0.0, 2.0]);
        // Three dimensions: element [i, j, k] of a (2, 3, 2) array, stored at
        // i + 2 j + 6 k, holds 100 i + 10 j + k.
        let mut stored = vec![0.0; 12];
        for (i, j, k) in
            (0..2).flat_map(|i| (0..3).flat_map(move |j| (0..2).map(move |k| (i, j, k))))
        {
            stored[i + 2 * j + 6 * k] = (100 * i + 10 * j + k) as f64;
        }
        let a = decode(&encode(1, "<f8", true, &[2, 3, 2], &f8(&stored)), 3).unwrap();
        let want: Vec<f64> = (0..2)
            .flat_map(|i| {
                (0..3).flat_map(move |j| (0..2).map(move |k| (100 * i + 10 * j + k) as f64))
            })
            .collect();
        assert_eq!(a.values, want);
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
        let cases: [(&[u64], &str); 8] = [
            (
                &[1, 3],
                "file shorter than its header says: the shape and dtype need 24 data bytes, the file has 16",
            ),
            (
                &[1000000000, 1000],
                "file shorter than its header says: the shape and dtype need 8000000000000 data bytes, the file has 16",
            ),
            (
                &[4294967296, 4294967296],
                "shape (4294967296, 4294967296) is too large",
            ),
            (
                &[3000000000000000000, 1],
                "shape (3000000000000000000, 1) is too large",
            ),
            (
                &[1, 1],
                "file longer than its header says: the shape and dtype need 8 data bytes, the file has 16",
            ),
            (&[2], "expected a 2-D array, found shape (2,)"),
            (&[1, 1, 2], "expected a 2-D array, found shape (1, 1, 2)"),
            (&[], "expected a 2-D array, found shape ()"),
        ];
        for (shape, want) in cases {
            assert_eq!(
                problem(&encode(1, "<f8", false, shape, &data), 2),
                want,
                "{shape:?}"
            );
        }
        // An empty array whose other dimension is huge: quick, in either order (the
        // data set's checks then refuse it).
        for fortran in [false, true] {
            let empty = encode(1, "<f8", fortran, &[u64::MAX, 0], &[]);
            let a = decode(&empty, 2).unwrap();
            assert!(a.values.is_empty());
            assert_eq!(a.shape, [usize::MAX, 0]);
        }
        let labels = encode(2, "|u1", false, &[u64::MAX], &[1]);
        assert_eq!(
            problem(&labels, 1),
            "file shorter than its header says: the shape and dtype need 18446744073709551615 data bytes, the file has 1"
        );
    }

    #[test]
    fn element_counts_come_from_the_header_alone() {
        let x = encode(1, "<f8", false, &[1000000000, 1000], &[]);
        assert_eq!(element_count(&x), Some(1_000_000_000_000));
        assert_eq!(element_count(&hex(U1_LABELS)), Some(4));
        assert_eq!(element_count(&hex(F4_SCALAR)), Some(1));
        let overflow = encode(1, "<f8", false, &[u64::MAX, 2], &[]);
        assert_eq!(element_count(&overflow), None);
        assert_eq!(element_count(b"garbage"), None);
        assert_eq!(element_count(&hex(F8_2X3)[..20]), None);
    }

    #[test]
    fn never_panics_on_cut_scrambled_or_random_files() {
        let good = hex(F8_2X3);
        for end in 0..good.len() {
            assert!(decode(&good[..end], 2).is_err(), "cut at {end}");
        }
        for i in 0..good.len() {
            for b in [0u8, 1, 0x7f, 0xff, b'(', b')', b',', b'9', b'\''] {
                let mut bad = good.clone();
                bad[i] = b;
                let _ = decode(&bad, 2);
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
            let _ = decode(&bytes, 2);
            let _ = decode(&bytes[6..], 1);
        }
    }
}
