//! Typed errors for everything a caller controls: sizes, rates, ladders, buffers.

use core::fmt;

/// What was wrong with the caller's input. Small and `Copy`, so it travels through
/// firmware and FFI boundaries cheaply.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// Fewer than two chains: there is nothing to swap.
    TooFewChains {
        /// The number of chains given.
        chains: usize,
    },
    /// A window of zero iterations.
    ZeroWindow,
    /// A swap (acceptance) rate outside the open interval (0, 1).
    SwapRateOutOfRange {
        /// Which rate (for example `"target_swap_rate"`).
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// The ladder's ends are not strictly increasing and positive: `0 < min < max`.
    LadderEnds {
        /// Smallest learning rate given.
        min: f64,
        /// Largest learning rate given.
        max: f64,
    },
    /// A value that must be finite (and often positive) is not.
    InvalidValue {
        /// Which parameter.
        name: &'static str,
        /// The value given.
        value: f64,
        /// What is allowed, in words.
        allowed: &'static str,
    },
    /// The window a swap rate calls for is longer than 2³² − 1 iterations.
    WindowTooLong {
        /// The swap rate given.
        swap_rate: f64,
        /// The window it calls for.
        window: f64,
    },
    /// A combination this build or backend does not implement.
    Unsupported {
        /// What, in words.
        what: &'static str,
    },
    /// A buffer whose length does not match the number of chains or dimensions.
    LengthMismatch {
        /// Which buffer.
        name: &'static str,
        /// Length required.
        expected: usize,
        /// Length given.
        found: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::TooFewChains { chains } => {
                write!(f, "need at least 2 chains, got {chains}")
            }
            Error::ZeroWindow => write!(f, "the swap window must be at least 1 iteration"),
            Error::SwapRateOutOfRange { name, value } => {
                write!(
                    f,
                    "{name} must lie strictly between 0 and 1, got {}",
                    Num(value)
                )
            }
            Error::WindowTooLong { swap_rate, window } => write!(
                f,
                "at swap rate {} the window would be {} iterations, more than the \
                 4,294,967,295 a window can have: use a larger swap rate",
                Num(swap_rate),
                Sig(window)
            ),
            Error::LadderEnds { min, max } => write!(
                f,
                "learning-rate ladder needs 0 < min < max (both finite), got min {}, max {}",
                Num(min),
                Num(max)
            ),
            Error::InvalidValue {
                name,
                value,
                allowed,
            } => write!(f, "{name} must be {allowed}, got {}", Num(value)),
            Error::Unsupported { what } => write!(f, "not supported: {what}"),
            Error::LengthMismatch {
                name,
                expected,
                found,
            } => write!(
                f,
                "buffer `{name}` must have length {expected}, got {found}"
            ),
        }
    }
}

impl core::error::Error for Error {}

/// A large count to four significant digits (3.787e12).
struct Sig(f64);

impl fmt::Display for Sig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3e}", self.0)
    }
}

/// A number as a person reads it: plain in [10⁻⁴, 10⁹), in scientific notation
/// outside (1e-12 rather than 0.000000000001).
struct Num(f64);

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = libm::fabs(self.0);
        if self.0.is_finite() && a != 0.0 && !(1e-4..1e9).contains(&a) {
            write!(f, "{:e}", self.0)
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// Checks that a buffer has the required length.
pub(crate) fn check_len(name: &'static str, found: usize, expected: usize) -> Result<(), Error> {
    if found == expected {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            name,
            expected,
            found,
        })
    }
}

/// Checks that a rate lies in the open interval (0, 1).
pub(crate) fn check_rate(name: &'static str, value: f64) -> Result<(), Error> {
    if value > 0.0 && value < 1.0 {
        Ok(())
    } else {
        Err(Error::SwapRateOutOfRange { name, value })
    }
}

/// Checks that a value is finite and strictly positive.
pub(crate) fn check_positive(name: &'static str, value: f64) -> Result<(), Error> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidValue {
            name,
            value,
            allowed: "finite and > 0",
        })
    }
}

/// Checks that a value is finite and not negative.
pub(crate) fn check_non_negative(name: &'static str, value: f64) -> Result<(), Error> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidValue {
            name,
            value,
            allowed: "finite and >= 0",
        })
    }
}

/// Checks the number of chains: at least 2, at most
/// [`MAX_REPLICAS`](crate::rng::MAX_REPLICAS) (the Philox counter's replica field).
pub(crate) fn check_chains(chains: usize) -> Result<(), Error> {
    if chains < 2 {
        Err(Error::TooFewChains { chains })
    } else if chains > crate::rng::MAX_REPLICAS {
        Err(Error::InvalidValue {
            name: "chains",
            value: chains as f64,
            allowed: "at most 2^24 - 1 per ensemble",
        })
    } else {
        Ok(())
    }
}
