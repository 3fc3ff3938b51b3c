//! Models on data: the posterior of a classifier's parameters θ given a labelled
//! training set, seen through mini-batches.
//!
//! A classifier f_θ maps an example x (F features) to C class scores; the likelihood of
//! a label y is softmax(f_θ(x))_y, and the prior on θ is N(0, σ² I). For a training set
//! of N examples and a mini-batch B drawn from it, the stochastic energy and its
//! gradient are
//!
//! ```text
//! Ũ(θ)  = N/|B| · Σ_{i∈B} −log softmax(f_θ(x_i))_{y_i}  +  |θ|²/(2σ²)
//! ∇Ũ(θ) = N/|B| · Σ_{i∈B} ∇(−log softmax(f_θ(x_i))_{y_i})  +  θ/σ²
//! ```
//!
//! an unbiased estimate of U(θ) = −log p(data | θ) − log p(θ) + const: per-example terms
//! summed (the *energy reduction*) and scaled to the whole set. Mini-batches are drawn
//! with replacement from the replica's own Philox stream ([`batch`]), so runs do not
//! depend on the order in which replicas or threads evaluate them.
//!
//! - [`Architecture`]: layer sizes [F, H₁, …, C] and the layout of θ (softmax regression
//!   is [F, C]);
//! - [`mlp`]: the forward and backward passes, one example at a time over buffers the
//!   caller owns (the reference the batched engines are checked against, and what
//!   firmware and WASM run);
//! - [`DataView`]: a training set lent as slices; [`Classifier`]: the energy oracle that
//!   the driver calls.

mod arch;
pub mod batch;
mod data;
pub mod mlp;
mod oracle;

pub use arch::{Architecture, Layer, MAX_LAYERS};
pub use data::DataView;
pub use oracle::Classifier;
