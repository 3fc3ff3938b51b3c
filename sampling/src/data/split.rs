//! The fixed train/test rule, and the raw table it splits.
//!
//! Example `i` (counted from 0 in file order) is a test example when `i % 4 == 3`, a
//! training example otherwise. The rule is deterministic, needs no seed, and takes every
//! fourth example, so a file sorted by class still gives both splits every class.

/// Every `TEST_EVERY`-th example is a test example: those with `i % TEST_EVERY == TEST_EVERY - 1`.
pub const TEST_EVERY: usize = 4;

/// Whether example `i` (from 0, in file order) belongs to the test split.
pub fn is_test_example(i: usize) -> bool {
    i % TEST_EVERY == TEST_EVERY - 1
}

/// Examples as read, before scaling: `x` row-major, `features` wide.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Table {
    /// The file, as the user named it (for messages).
    pub file: String,
    /// Values per example.
    pub features: usize,
    /// `len × features` values, row-major.
    pub x: Vec<f64>,
    /// One label per example.
    pub y: Vec<u32>,
    /// Where each example came from, for messages: its CSV line (from 1) or its `.npy`
    /// row (from 0), as `origin_is_line` says.
    pub origin: Vec<usize>,
    /// Whether `origin` holds CSV lines (else `.npy` rows).
    pub origin_is_line: bool,
}

impl Table {
    /// An empty table that will hold rows `features` wide.
    pub fn new(file: &str, features: usize, origin_is_line: bool) -> Table {
        Table {
            file: file.to_string(),
            features,
            origin_is_line,
            ..Table::default()
        }
    }

    /// Number of examples.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// The bytes its values, labels and origins take.
    pub fn bytes(&self) -> u64 {
        (self.x.capacity() * 8 + self.y.capacity() * 4 + self.origin.capacity() * 8) as u64
    }

    /// Appends example `i` of `other` (same width).
    fn push_from(&mut self, other: &Table, i: usize) {
        let d = other.features;
        self.x.extend_from_slice(&other.x[i * d..(i + 1) * d]);
        self.y.push(other.y[i]);
        self.origin.push(other.origin[i]);
    }

    /// Where value `j` of example `i` came from, as the messages show it.
    pub(crate) fn locate(&self, i: usize, j: usize) -> String {
        let at = self.origin.get(i).copied().unwrap_or(i);
        if self.origin_is_line {
            format!("line {at}, field {}", j + 1)
        } else {
            format!("[{at}, {j}]")
        }
    }

    /// Splits by [`is_test_example`]: (training, test).
    pub(crate) fn split_default(&self) -> (Table, Table) {
        let empty = || Table::new(&self.file, self.features, self.origin_is_line);
        let (mut train, mut test) = (empty(), empty());
        for i in 0..self.len() {
            if is_test_example(i) {
                test.push_from(self, i);
            } else {
                train.push_from(self, i);
            }
        }
        (train, test)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(n: usize) -> Table {
        let mut t = Table::new("t.csv", 2, true);
        for i in 0..n {
            t.x.extend([i as f64, -(i as f64)]);
            t.y.push(i as u32);
            t.origin.push(i + 1);
        }
        t
    }

    #[test]
    fn every_fourth_example_is_a_test_example() {
        let (train, test) = table(10).split_default();
        assert_eq!(train.y, [0, 1, 2, 4, 5, 6, 8, 9]);
        assert_eq!(test.y, [3, 7]);
        assert_eq!(test.x, [3.0, -3.0, 7.0, -7.0]);
        assert_eq!(test.origin, [4, 8]);
        assert_eq!(train.x.len(), 2 * train.len());
        assert_eq!(train.file, "t.csv");
    }

    #[test]
    fn split_counts_follow_the_rule() {
        for n in 0..20 {
            let (train, test) = table(n).split_default();
            assert_eq!(test.len(), n / 4, "n = {n}");
            assert_eq!(train.len() + test.len(), n, "n = {n}");
        }
        assert!(!is_test_example(0) && is_test_example(3) && is_test_example(1799));
    }

    #[test]
    fn locations_follow_each_format() {
        let t = table(3);
        assert_eq!(t.locate(1, 0), "line 2, field 1");
        let mut n = table(3);
        n.origin_is_line = false;
        n.origin = vec![0, 1, 2];
        assert_eq!(n.locate(2, 1), "[2, 1]");
    }
}
