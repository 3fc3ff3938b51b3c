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

/// Checks a span of learning rates and a momentum: `eta_min` and `eta_max` finite and
/// > 0 with `eta_min < eta_max`, `momentum` in [0, 1); the errors name those fields.
pub fn learning_rates(eta_min: f64, eta_max: f64, momentum: f64) -> Result<(), ConfigError> {
    positive("eta_min", eta_min)?;
    positive("eta_max", eta_max)?;
    if eta_min >= eta_max {
        return Err(ConfigError::new(
            "eta_max",
            format!("must be larger than eta_min ({eta_min}), got {eta_max}"),
        ));
    }
    if !(momentum.is_finite() && (0.0..1.0).contains(&momentum)) {
        return Err(ConfigError::new(
            "momentum",
            format!("must be in [0, 1), got {momentum}"),
        ));
    }
    Ok(())
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
