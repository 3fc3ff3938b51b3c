#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
//! nrpt-core (crate docs written at the end)

pub mod error;
pub mod float;

pub use error::Error;
pub use float::Float;
