//! NumPy `.npy` arrays, one codec both ways: users' features and labels are read
//! through it (`decode`), our `samples.npy` is written through it ([`encode_f32`]).
//!
//! Written here rather than taken from a crate: the format is a magic string, a
//! version, a header that is a Python dict literal
//! (`{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }`) and the raw elements.
//! Crates exist (`ndarray-npy`, on top of `ndarray`; `npyz`, a general reader and
//! writer), but we read ten plain dtypes into `f64` and write `f32`, and what a user
//! needs from us above all is a precise message for every bad header, which we would
//! write here either way.
//!
//! - Read (`read`): versions 1.0, 2.0 and 3.0; dtypes f4, f8, i1, i2, i4, i8, u1, u2,
//!   u4, u8, little- or big-endian; C or Fortran order (returned in C order). Every size
//!   is checked against the file before anything is allocated, so a header announcing a
//!   huge shape is an error, not an abort.
//! - Written (`write`): what NumPy's `np.save` writes, byte for byte (the tests hold
//!   files NumPy wrote): format 1.0 unless the header needs 2.0, the header padded
//!   with spaces to a multiple of 64 bytes.
//! - `header`: the dict, parsed and formatted, and the dtypes.

use std::fmt;

mod header;
#[cfg(test)]
mod numpy_files;
mod read;
mod write;

pub use read::decode;
pub(crate) use read::element_count;
#[cfg(test)]
pub(crate) use write::encode;
pub use write::{encode_f32, encode_f64, encode_u16};

/// The magic string every `.npy` file starts with.
pub const MAGIC: &[u8] = b"\x93NUMPY";

/// An array's shape and its elements as `f64`, in C (row-major) order.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// The dimensions.
    pub shape: Vec<usize>,
    /// The elements, row-major.
    pub values: Vec<f64>,
}

/// An array shape, shown as NumPy shows it (and as the header holds it): `()`, `(3,)`,
/// `(2, 3)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape(pub Vec<u64>);

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_slice() {
            [one] => write!(f, "({one},)"),
            dims => {
                f.write_str("(")?;
                for (i, d) in dims.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{d}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// What is wrong with the bytes of an `.npy` file, as a file of the format.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatProblem {
    /// The file does not start with `\x93NUMPY`.
    #[error("not a .npy file (it does not start with \\x93NUMPY)")]
    BadMagic,
    /// A format version other than 1.0, 2.0 or 3.0.
    #[error("unsupported .npy format version {major}.{minor} (1.0, 2.0 and 3.0 are read)")]
    Version {
        /// The major version byte.
        major: u8,
        /// The minor version byte.
        minor: u8,
    },
    /// The file ends inside its preamble or header.
    #[error(
        "file shorter than its header says: the header ends at byte {needed}, the file has {found}"
    )]
    HeaderTruncated {
        /// Where the header says it ends.
        needed: u64,
        /// The file's length.
        found: u64,
    },
    /// The file ends before the data the header announces.
    #[error(
        "file shorter than its header says: the shape and dtype need {needed} data bytes, the file has {found}"
    )]
    DataTruncated {
        /// The bytes of data the header announces.
        needed: u64,
        /// The bytes after the header.
        found: u64,
    },
    /// The file goes on after the data the header announces.
    #[error(
        "file longer than its header says: the shape and dtype need {needed} data bytes, the file has {found}"
    )]
    TrailingBytes {
        /// The bytes of data the header announces.
        needed: u64,
        /// The bytes after the header.
        found: u64,
    },
    /// The header is not the Python dict literal the format prescribes.
    #[error("malformed header: {0}")]
    Header(String),
    /// A required key is missing.
    #[error("the header has no {0:?} key")]
    MissingKey(&'static str),
    /// A key other than `descr`, `fortran_order` and `shape`.
    #[error("the header has an unexpected key {0:?}")]
    UnknownKey(String),
    /// A dtype other than f4, f8, i1, i2, i4, i8, u1, u2, u4, u8.
    #[error(
        "unsupported dtype {0} (nrpt reads f4, f8, i1, i2, i4, i8, u1, u2, u4 and u8, \
         little- or big-endian)"
    )]
    Dtype(String),
    /// The wrong number of dimensions (features are 2-D, labels 1-D).
    #[error("expected a {expected}-D array, found shape {shape}")]
    Dimensions {
        /// The dimensions wanted.
        expected: usize,
        /// The shape found.
        shape: Shape,
    },
    /// The shape's element or byte count overflows 64 bits or the address space.
    #[error("shape {0} is too large")]
    TooLarge(Shape),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_print_as_numpy_prints_them() {
        assert_eq!(Shape(vec![]).to_string(), "()");
        assert_eq!(Shape(vec![3]).to_string(), "(3,)");
        assert_eq!(Shape(vec![2, 3]).to_string(), "(2, 3)");
        assert_eq!(Shape(vec![1, 2, 3]).to_string(), "(1, 2, 3)");
    }
}
