//! Counter-based random numbers: Philox4x32-10 streams, uniforms and Box–Muller normals.
//!
//! The sampler draws all its randomness from Philox4x32-10, a counter-based generator:
//! each block of 128 random bits is a pure function of a key and a counter, with no state
//! carried from one draw to the next. This gives two properties a stateful generator
//! cannot: the CPU and a GPU kernel produce the same bits for the same draw, whatever the
//! order or parallel layout in which they compute them; and any draw is directly
//! addressable by `(seed, ensemble, iteration, replica, stream)` plus a word index,
//! without replaying anything before it (see [`PhiloxStream`] for the layout, [`streams`]
//! for the stream ids). Uniforms and normals are derived from the 32-bit words by the
//! fixed formulas documented in [`normal`], which GPU code reproduces.
//!
//! [`Philox4x32`] is a general seedable Philox generator for other uses.

pub mod normal;
pub mod philox;
pub mod stream;

pub use normal::{
    UnitDraw, box_muller_f32, box_muller_f64, fill_normals, normal_pair, uniform_draw, uniform_f32,
    uniform_f64,
};
pub use philox::{
    KeyedLanes, Philox4x32, philox4x32_10, philox4x32_10_keyed_lanes, philox4x32_10_lanes,
};
pub use stream::{ENSEMBLE_WIDE, MAX_REPLICAS, PhiloxStream, counter, streams};

pub use rand_core::{Rng, SeedableRng, TryRng};
