//! The error of anything a user controls (a flag, a configuration key, a file named by
//! one), and the range checks that make it. Every layer reports bad settings with it;
//! it depends on nothing of nrpt's.

use std::fmt;

/// A configuration error: which field, what is allowed, what was given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field} (--{flag}): {message}")]
pub struct ConfigError {
    /// Field name as in the TOML file.
    pub field: String,
    /// The matching command-line flag, without dashes.
    pub flag: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl ConfigError {
    /// An error for `field` (its flag is the field name with dashes).
    pub fn new(field: &str, message: impl Into<String>) -> Self {
        ConfigError {
            field: field.to_string(),
            flag: field.replace('_', "-"),
            message: message.into(),
        }
    }
}

/// Checks that `value` lies in `lo ..= hi`; the error names `field`.
pub fn in_range<T: PartialOrd + fmt::Display + Copy>(
    field: &str,
    value: T,
    lo: T,
    hi: T,
) -> Result<(), ConfigError> {
    if value >= lo && value <= hi {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("must be between {lo} and {hi}, got {value}"),
        ))
    }
}

/// Checks that `value` is finite and > 0; the error names `field`.
pub fn positive(field: &str, value: f64) -> Result<(), ConfigError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("must be a finite number > 0, got {value}"),
        ))
    }
}

/// Checks that `value` is finite and ≥ 0; the error names `field`.
pub fn non_negative(field: &str, value: f64) -> Result<(), ConfigError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("must be a finite number >= 0, got {value}"),
        ))
    }
}
