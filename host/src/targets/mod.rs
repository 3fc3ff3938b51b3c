//! The built-in targets, each a [`Target`](crate::engine::Target) in its own file:
//! the paper's 2D toy and the D-dimensional sum of modes behind added noise
//! ([`toy`]), and the Bayesian classifier on data ([`classifier`]).

pub mod classifier;
pub mod toy;

pub use toy::{Modes2dTarget, SumModesTarget, Toy};
