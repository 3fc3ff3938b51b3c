//! # nrpt-studies: the experiments built on the engines
//!
//! What the `nrpt` command's studies compute, as a library over
//! [`nrpt_sampling`]'s engines and targets; it names nothing of the command (arguments,
//! progress bars, figures).
//!
//! - [`deep`]: the paper's deep-learning experiment at toy scale (DEO⋆-mSGD against
//!   DEO, ensembles, cyclical SGHMC and SWAG on a classifier), scored against a
//!   reference posterior computed by full-batch HMC ([`deep::reference`]);
//! - [`exact`]: exact tempering for anyone's annealing path, with the pilot rounds that
//!   tune the ladder and pooled estimates of the evidence;
//! - [`reproduce`]: the paper's 2D experiment (its Figures 3–6): four methods on the
//!   25-mode target, the sweeps of the swap rate and of the window, the paper's rules
//!   beside the authors' code's;
//! - [`scale`]: round-trip time against P and W beside Lemma 1, with the Bernoulli
//!   index-process simulator;
//! - [`metrics`], [`baselines`]: accuracy against the true density, the SGLD
//!   baselines of the 2D experiment;
//! - [`checkpoint`]: the run state of `nrpt run --checkpoint-every`, sealed and
//!   checked on resume; [`shard`]: a long study split into shards run anywhere and
//!   merged.
#![deny(missing_docs)]
pub mod baselines;
pub mod checkpoint;
pub mod deep;
pub mod error;
pub mod exact;
pub mod metrics;
pub mod reproduce;
pub mod scale;
pub mod shard;
