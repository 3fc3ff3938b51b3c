//! A training set lent as slices: what the classifier's energy and its MLP read.

use crate::error::{Error, check_len};

/// N labelled examples: features row-major (N × F, `f32`) and labels below C.
#[derive(Clone, Copy, Debug)]
pub struct DataView<'a> {
    x: &'a [f32],
    y: &'a [u32],
    features: usize,
    classes: usize,
}

impl<'a> DataView<'a> {
    /// Checks that `x` holds `y.len()` rows of `features` finite values, that there is
    /// at least one example, and that every label is below `classes` (≥ 2).
    pub fn new(x: &'a [f32], y: &'a [u32], features: usize, classes: usize) -> Result<Self, Error> {
        if y.is_empty() || features == 0 {
            return Err(Error::InvalidValue {
                name: "data",
                value: y.len() as f64,
                allowed: "at least one example of at least one feature",
            });
        }
        if y.len() > u32::MAX as usize {
            return Err(Error::InvalidValue {
                name: "data",
                value: y.len() as f64,
                allowed: "fewer than 2^32 examples",
            });
        }
        let n = y.len().checked_mul(features).ok_or(Error::InvalidValue {
            name: "features",
            value: features as f64,
            allowed: "N·F within memory",
        })?;
        check_len("x", x.len(), n)?;
        if classes < 2 {
            return Err(Error::InvalidValue {
                name: "classes",
                value: classes as f64,
                allowed: ">= 2",
            });
        }
        if let Some(&bad) = y.iter().find(|&&c| c as usize >= classes) {
            return Err(Error::InvalidValue {
                name: "label",
                value: f64::from(bad),
                allowed: "below the number of classes",
            });
        }
        if let Some(&bad) = x.iter().find(|v| !v.is_finite()) {
            return Err(Error::InvalidValue {
                name: "feature",
                value: f64::from(bad),
                allowed: "finite",
            });
        }
        Ok(DataView {
            x,
            y,
            features,
            classes,
        })
    }

    /// Examples N.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// Never: a view holds at least one example.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// Features F.
    pub fn features(&self) -> usize {
        self.features
    }

    /// Classes C.
    pub fn classes(&self) -> usize {
        self.classes
    }

    /// Example `i`: its features and label (`i < N`, else the last example).
    pub fn example(&self, i: usize) -> (&'a [f32], u32) {
        let i = i.min(self.y.len() - 1);
        (
            &self.x[i * self.features..(i + 1) * self.features],
            self.y[i],
        )
    }

    /// All features, row-major.
    pub fn x(&self) -> &'a [f32] {
        self.x
    }

    /// All labels.
    pub fn y(&self) -> &'a [u32] {
        self.y
    }
}
