//! Classification data for the data targets (softmax regression, small MLPs): two
//! bundled data sets, and users' own CSV or `.npy` files, as a [`Dataset`] of `f32`
//! features and `u32` labels split into training and test examples.
//!
//! - [`DataSpec`] says which data ([`DataSpec::from_paths`] reads the five flags);
//!   [`load`] reads it.
//! - The default bundled data ([`digits()`], `--dataset digits`) is UCI's optical
//!   handwritten digits (Alpaydin and Kaynak, 1998; CC BY 4.0; see `data/README.md`):
//!   1,797 8×8 images, 64 features (pixel counts divided by 16, so in [0, 1]) and 10
//!   classes.
//! - The other ([`mnist1d`], `--dataset mnist1d`) is MNIST-1D (Greydanus, 2020; the
//!   `mnist1d` package, Apache-2.0): 12,800 training and 3,200 test signals of 40
//!   values, already standardized by its generator (one mean and standard deviation for
//!   the whole set) and used as they are, and 10 classes.
//! - Users' data, CSV: one example per line, numeric features and then the label in
//!   the last field; blank lines and `#` lines are skipped; a first line with a field
//!   that is not a number is a header, and skipped; every row has the same number of
//!   fields; a name ending in `.gz` is gzip-compressed.
//! - Users' data, NumPy: a 2-D features `.npy` file (f4, f8, i1–i8 or u1–u8, either byte
//!   order, C or Fortran order, format 1.0, 2.0 or 3.0) and a 1-D labels `.npy` file
//!   (integers, or integer-valued floats).
//! - Labels are integers from 0 to [`MAX_LABEL`]; there are `1 + the largest label`
//!   classes (train and test together), at least 2. Features must be finite. User
//!   features are **standardized**: each minus its training-split mean, divided by its
//!   training-split standard deviation (dividing by n); a feature constant on the
//!   training split becomes 0. Test features use the training split's statistics. The
//!   bundled data sets are not standardized again (each shares one scale).
//! - Without a test file, example `i` of the training file (from 0, in file order) is a
//!   test example when `i % 4 == 3` ([`is_test_example`]); the bundled digits are split
//!   the same way: 1,348 training and 449 test examples.
//!
//! ```
//! let d = nrpt_sampling::data::load(&nrpt_sampling::data::DataSpec::Digits)?;
//! assert_eq!((d.features, d.classes, d.train.len(), d.test.len()), (64, 10, 1348, 449));
//! let first = d.train.row(0, d.features).expect("row 0 exists");
//! assert_eq!(first[2], 5.0 / 16.0);
//! let m = nrpt_sampling::data::load(&nrpt_sampling::data::DataSpec::Mnist1d)?;
//! assert_eq!((m.features, m.classes, m.train.len(), m.test.len()), (40, 10, 12800, 3200));
//! # Ok::<(), nrpt_sampling::data::DataError>(())
//! ```

pub(crate) mod csv;
pub mod digits;
mod error;
pub mod mnist1d;
pub(crate) mod npy;
mod spec;
mod split;
pub(crate) mod standardize;
pub(crate) mod user;

use std::path::Path;

pub use crate::npy::Shape;
pub use digits::digits;
pub use error::{DataError, FieldProblem, LineProblem, NpyProblem};
pub use spec::{Bundled, DataSpec};
pub use split::{TEST_EVERY, is_test_example};

/// The largest label accepted, so at most `MAX_LABEL + 1` classes: a label like 10⁹ is
/// far likelier a wrong column than a class, and would size the model's last layer.
pub const MAX_LABEL: u32 = 65_535;

/// The most features per example accepted (a row of more is far likelier a file in
/// another format, or a transposed table, than a classifier's input).
pub const MAX_FEATURES: usize = 65_536;

/// One split: `x` is `len × features` values, row-major; `y` the labels.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Split {
    /// Features, example after example.
    pub x: Vec<f32>,
    /// One label per example, each below the data set's `classes`.
    pub y: Vec<u32>,
}

impl Split {
    /// Number of examples.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// Whether there are no examples.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// The features of example `i`, or `None` past the end.
    pub fn row(&self, i: usize, features: usize) -> Option<&[f32]> {
        let start = i.checked_mul(features)?;
        self.x.get(start..start.checked_add(features)?)
    }

    /// Every example: its features and its label.
    pub fn rows(&self, features: usize) -> impl Iterator<Item = (&[f32], u32)> + '_ {
        self.y
            .iter()
            .enumerate()
            .map(move |(i, &y)| (self.row(i, features).unwrap_or_default(), y))
    }
}

/// A classification data set, split into training and test examples.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    /// Short name: `digits`, `mnist1d`, or the training file's name.
    pub name: String,
    /// One line: the source and licence, or the files, the counts and the split rule.
    pub description: String,
    /// Values per example.
    pub features: usize,
    /// Number of classes: labels are `0..classes`.
    pub classes: usize,
    /// Training examples.
    pub train: Split,
    /// Test examples.
    pub test: Split,
}

impl Dataset {
    /// A warning when the labels imply far more classes than there are training
    /// examples (the largest label sets the number of classes, and so the size of the
    /// model's last layer): a wrong label column, or labels that are identifiers.
    pub(crate) fn class_warning(&self) -> Option<String> {
        let examples = self.train.len();
        if self.classes <= examples.max(2) {
            return None;
        }
        let mut seen: Vec<u32> = self.train.y.iter().chain(&self.test.y).copied().collect();
        seen.sort_unstable();
        seen.dedup();
        Some(format!(
            "{}: the largest label is {}, so the model has {} classes for {examples} \
             training examples ({} distinct labels): its last layer has a row per class; \
             if the labels are not 0, 1, … per class, renumber them",
            self.name,
            self.classes - 1,
            self.classes,
            seen.len()
        ))
    }
}

/// Loads the data `spec` names.
pub fn load(spec: &DataSpec) -> Result<Dataset, DataError> {
    match spec {
        DataSpec::Digits => digits::parse(digits::GZ),
        DataSpec::Mnist1d => mnist1d::parse(mnist1d::BUNDLED),
        DataSpec::Csv { train, test } => {
            let train_table = csv::read_csv(train)?;
            let test = match test {
                Some(t) => Some((csv::read_csv(t)?, display(t))),
                None => None,
            };
            user::assemble(train_table, test, &display(train))
        }
        DataSpec::Npy {
            train_x,
            train_y,
            test,
        } => {
            let both = |x: &Path, y: &Path| format!("{} with labels {}", display(x), display(y));
            let train = npy::read_table(train_x, train_y)?;
            let test = match test {
                Some((x, y)) => Some((npy::read_table(x, y)?, both(x, y))),
                None => None,
            };
            user::assemble(train, test, &both(train_x, train_y))
        }
    }
}

/// A path as messages show it.
pub(crate) fn display(path: &Path) -> String {
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_slices_of_x() {
        let s = Split {
            x: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            y: vec![0, 1, 0],
        };
        assert_eq!((s.len(), s.is_empty()), (3, false));
        assert_eq!(s.row(1, 2), Some(&[3.0, 4.0][..]));
        assert_eq!(s.row(3, 2), None);
        assert_eq!(s.row(usize::MAX, 2), None);
        let rows: Vec<_> = s.rows(2).collect();
        assert_eq!(rows[2], (&[5.0, 6.0][..], 0));
        assert_eq!(rows.len(), 3);
        assert!(Split::default().is_empty());
    }

    #[test]
    fn load_digits_matches_digits() {
        assert_eq!(load(&DataSpec::Digits).unwrap(), digits());
    }
}
