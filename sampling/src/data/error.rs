//! What can go wrong loading a data set. Every message names the file, and for CSV the
//! line and field (both counted from 1, as editors do), so that a user can go straight
//! to the problem.

use std::io;

use super::{MAX_FEATURES, MAX_LABEL};
use crate::npy::{FormatProblem, Shape};

/// Why a data set could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// The flags do not describe a data set.
    #[error("{flag}: {reason}")]
    Flag {
        /// The offending flag, with its dashes (`--labels`).
        flag: &'static str,
        /// What is wrong and what would be right.
        reason: String,
    },
    /// A file could not be opened or read, or its gzip stream is corrupt.
    #[error("{file}: {source}")]
    Io {
        /// The file, as the user named it.
        file: String,
        /// What the operating system (or the gzip decoder) said.
        #[source]
        source: io::Error,
    },
    /// A CSV line is wrong as a whole.
    #[error("{file} line {line}: {problem}")]
    CsvLine {
        /// The file, as the user named it.
        file: String,
        /// The line, counted from 1.
        line: usize,
        /// What is wrong.
        problem: LineProblem,
    },
    /// One field of a CSV line is wrong.
    #[error("{file} line {line}, field {field}: {problem}")]
    CsvField {
        /// The file, as the user named it.
        file: String,
        /// The line, counted from 1.
        line: usize,
        /// The field (column), counted from 1.
        field: usize,
        /// What is wrong.
        problem: FieldProblem,
    },
    /// An `.npy` file's header or contents are wrong.
    #[error("{file}: {problem}")]
    Npy {
        /// The file, as the user named it.
        file: String,
        /// What is wrong.
        problem: NpyProblem,
    },
    /// A file holds no examples.
    #[error("{file}: no examples")]
    NoExamples {
        /// The file, as the user named it.
        file: String,
    },
    /// A labels file does not have one label per row of its features file.
    #[error("{labels} holds {labels_len} labels but {features} holds {rows} rows")]
    LabelCount {
        /// The features file.
        features: String,
        /// Its number of rows.
        rows: usize,
        /// The labels file.
        labels: String,
        /// Its number of labels.
        labels_len: usize,
    },
    /// The test file has a different number of features from the training file.
    #[error("{test} has {test_features} features but {train} has {train_features}")]
    FeatureCount {
        /// The training (features) file.
        train: String,
        /// Its number of features.
        train_features: usize,
        /// The test (features) file.
        test: String,
        /// Its number of features.
        test_features: usize,
    },
    /// Every label is 0: there is one class, and a classifier needs two.
    #[error("{files}: every label is 0, so there is one class; a classifier needs at least 2")]
    OneClass {
        /// The files whose labels were read.
        files: String,
    },
    /// The default split left no test example (fewer than 4 examples).
    #[error(
        "{file}: {examples} examples leave the test split empty (example i, counted from 0, \
         is a test example when i % 4 == 3); give at least 4, or a separate test file"
    )]
    EmptyTestSplit {
        /// The training file.
        file: String,
        /// Its number of examples.
        examples: usize,
    },
    /// A test value lies so far from the training data that, standardized, it does not
    /// fit in an `f32`.
    #[error(
        "{file} {location}: feature {value:e} lies too many training standard deviations \
         from the training mean to be represented"
    )]
    OutOfRange {
        /// The file.
        file: String,
        /// `line L, field F` for CSV, `[row, column]` (from 0, as NumPy counts) for `.npy`.
        location: String,
        /// The value as read.
        value: f64,
    },
    /// A bundled data file is not what the tests say it is: a broken build. The text
    /// names the file (`digits file: …`).
    #[error("the bundled {0}")]
    Bundled(String),
    /// The parsed data would take more memory than the run may use.
    #[error(
        "{file}: the data takes {} or more in memory, more than the {} a data set may use \
         (a quarter of --max-memory)",
        crate::limits::human(*bytes), crate::limits::human(*limit)
    )]
    Memory {
        /// The file.
        file: String,
        /// Bytes they take.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
}

impl DataError {
    /// The file the error is about, as the user named it, where it is one file (for an
    /// error naming the flag to blame).
    pub fn file(&self) -> Option<&str> {
        match self {
            DataError::Io { file, .. }
            | DataError::CsvLine { file, .. }
            | DataError::CsvField { file, .. }
            | DataError::Npy { file, .. }
            | DataError::NoExamples { file }
            | DataError::EmptyTestSplit { file, .. }
            | DataError::OutOfRange { file, .. }
            | DataError::Memory { file, .. } => Some(file),
            DataError::LabelCount { labels, .. } => Some(labels),
            DataError::FeatureCount { test, .. } => Some(test),
            DataError::Flag { .. } | DataError::OneClass { .. } | DataError::Bundled(_) => None,
        }
    }
}

/// What is wrong with a CSV line as a whole.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LineProblem {
    /// The bytes are not UTF-8.
    #[error("not UTF-8 text")]
    NotUtf8,
    /// A line has one field: it has no features, or no label.
    #[error("{found} field; a row needs at least one feature and then the label")]
    TooFewFields {
        /// The number of fields found.
        found: usize,
    },
    /// More fields than [`MAX_FEATURES`] and a label.
    #[error(
        "{found} fields: nrpt takes at most {MAX_FEATURES} features and the label (is this \
         a numeric CSV table, one example per line?)"
    )]
    TooManyFields {
        /// The number of fields found.
        found: usize,
    },
    /// A line longer than any valid row could be.
    #[error(
        "longer than {} without a line end: not a CSV table of at most {MAX_FEATURES} \
         features",
        crate::limits::human(*limit)
    )]
    TooLong {
        /// The most bytes a line may have.
        limit: u64,
    },
    /// The number of fields differs from the first data line's.
    #[error("{found} fields, but line {first_line} has {expected}")]
    FieldCount {
        /// The number of fields on this line.
        found: usize,
        /// The number on the first data line.
        expected: usize,
        /// The first data line (from 1).
        first_line: usize,
    },
}

/// What is wrong with one CSV field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldProblem {
    /// Nothing between two commas.
    #[error("empty")]
    Empty,
    /// A feature that does not parse as a number.
    #[error("feature {0:?} is not a number")]
    NotANumber(String),
    /// A feature that is infinite or NaN.
    #[error("feature {0:?} is not finite")]
    NotFinite(String),
    /// A label that is not a non-negative integer (`3` and `3.0` are).
    #[error("label {0:?} is not a non-negative integer")]
    BadLabel(String),
    /// A label above [`MAX_LABEL`].
    #[error("label {0:?} is above {MAX_LABEL}, the largest label nrpt takes")]
    LabelTooLarge(String),
}

/// What is wrong with a users' `.npy` file: as a file of the format, or as data.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NpyProblem {
    /// The bytes are not a `.npy` file nrpt reads, or not of the dimensions wanted.
    #[error(transparent)]
    Format(#[from] FormatProblem),
    /// A features array with no columns.
    #[error("shape {0} has no feature columns")]
    NoFeatures(Shape),
    /// A features array with more columns than [`MAX_FEATURES`].
    #[error("shape {0} has more than {MAX_FEATURES} feature columns")]
    TooManyFeatures(Shape),
    /// A feature that is infinite or NaN (indices from 0, as NumPy counts).
    #[error("[{row}, {column}] is {value}, not finite")]
    NotFinite {
        /// Row, from 0.
        row: usize,
        /// Column, from 0.
        column: usize,
        /// The value, as text.
        value: String,
    },
    /// A label that is not a non-negative integer (index from 0).
    #[error("[{index}] is {value}, not a non-negative integer label")]
    BadLabel {
        /// Index, from 0.
        index: usize,
        /// The value, as text.
        value: String,
    },
    /// A label above [`MAX_LABEL`] (index from 0).
    #[error("[{index}] is {value}, above {MAX_LABEL}, the largest label nrpt takes")]
    LabelTooLarge {
        /// Index, from 0.
        index: usize,
        /// The value, as text.
        value: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_messages_name_file_line_and_field() {
        let e = DataError::CsvField {
            file: "train.csv".into(),
            line: 17,
            field: 65,
            problem: FieldProblem::BadLabel("3.5".into()),
        };
        assert_eq!(
            e.to_string(),
            "train.csv line 17, field 65: label \"3.5\" is not a non-negative integer"
        );
    }
}
