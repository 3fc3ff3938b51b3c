//! What defines a classifier run on the GPU: the `#[repr(C)]` blocks the kernels read
//! (mirrored in `kernels/mlp.cuh`), the checks, the shared-memory layout, and the
//! arrays of a run at iteration 0, computed on the host exactly as nrpt-core's
//! `Engine::start` computes them.

use bytemuck::{Pod, Zeroable};
use nrpt_core::TemperingOptions;
use nrpt_core::driver::{InitialStates, initial_state};
use nrpt_core::index::init_identity;
use nrpt_core::model::{Architecture, MAX_LAYERS};
use nrpt_core::rng::MAX_REPLICAS;

use crate::ensembles::initial_levels;
use crate::error::CudaError;
use crate::params::{GpuParams, MathMode};

/// Threads of a step block (`NRPT_MLP_THREADS`): four warps share the tiles of the
/// matrix products, a fifth helps.
pub const THREADS: u32 = 160;
/// Threads of an exchange block (`NRPT_MLP_EXCHANGE_THREADS`).
pub const EXCHANGE_THREADS: u32 = 128;

/// One weight layer and where its outputs sit in shared memory (mirror of
/// `NrptMlpLayer`, 20 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct MlpLayer {
    /// Inputs.
    pub inputs: u32,
    /// Outputs.
    pub outputs: u32,
    /// Offset of W in θ (and its word in shared memory, where θ starts at 0).
    pub weights: u32,
    /// Offset of b in θ.
    pub biases: u32,
    /// Word of the layer's outputs (outputs × stride) in shared memory.
    pub acts: u32,
}

/// Mirror of `NrptMlpParams` (256 bytes): the network, the mini-batch, the run's sizes
/// and keys, the shared-memory layout, and nrpt-core's f32 constants of the energy.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct MlpParams {
    /// The layers (the first `layers` used).
    pub layer: [MlpLayer; MAX_LAYERS],
    /// Weight layers L.
    pub layers: u32,
    /// Features F.
    pub features: u32,
    /// Classes C.
    pub classes: u32,
    /// Parameters D.
    pub dim: u32,
    /// Examples per mini-batch B.
    pub batch: u32,
    /// Row stride of the shared buffers: B rounded up to a multiple of 4 that is 4 mod 8.
    pub stride: u32,
    /// Training examples N.
    pub examples: u32,
    /// Chains per ensemble P.
    pub chains: u32,
    /// Ensembles E.
    pub ensembles: u32,
    /// Philox seed.
    pub seed: u32,
    /// Philox key word of ensemble 0 (`options.ensemble`); ensemble e uses it + e.
    pub ensemble0: u32,
    /// 0 Langevin, 1 momentum.
    pub explorer: u32,
    /// Word of the gathered inputs (F × stride).
    pub sm_x: u32,
    /// Word of the deltas at the scores (C × stride).
    pub sm_top: u32,
    /// Word of the gradient's mini-batch (B indices).
    pub sm_idx: u32,
    /// Word of the energy's mini-batch (B indices).
    pub sm_idx2: u32,
    /// Word of the per-example losses (B), followed by two scratch words.
    pub sm_loss: u32,
    /// Shared-memory words in all.
    pub sm_words: u32,
    /// `F::from_f64(N / B)`, as `mlp::energy` computes it.
    pub scale: f32,
    /// `1 / (σ·σ)` with σ = `F::from_f64(prior_sigma)`, as `mlp::energy` computes it.
    pub inv_var: f32,
    /// `F::from_f64(μ)`.
    pub mu: f32,
    /// Padding (0).
    pub pad: u32,
    /// μ in f64 (0 for Langevin explorers).
    pub mu64: f64,
}

/// Device addresses of a step launch (mirror of `NrptMlpArrays`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct MlpArrays {
    /// States θ, E·P·D.
    pub states: u64,
    /// Momenta, E·P·D (0 for Langevin explorers).
    pub momenta: u64,
    /// Gradient scratch, E·P·D.
    pub grad: u64,
    /// Energies by level, E·P.
    pub energies: u64,
    /// Ladder by level, E·P.
    pub ladder: u64,
    /// Temperatures by level, E·P.
    pub temps: u64,
    /// Level of each replica, E·P.
    pub level_of: u64,
    /// Features of the training set, N·F.
    pub data_x: u64,
    /// Labels of the training set, N.
    pub data_y: u64,
}

// SAFETY: plain #[repr(C)] structs of integers and floats without padding (bytemuck's
// Pod derive checks it; the sizes are asserted below and against the C++ compiler's in
// the tests), mirrored by kernels/mlp.cuh.
unsafe impl cudarc::driver::DeviceRepr for MlpParams {}
// SAFETY: as above.
unsafe impl cudarc::driver::DeviceRepr for MlpArrays {}

const _: () = assert!(core::mem::size_of::<MlpLayer>() == 20);
const _: () = assert!(core::mem::size_of::<MlpParams>() == 256);
const _: () = assert!(core::mem::size_of::<MlpArrays>() == 72);

/// A classifier as the GPU runs it: the network, the mini-batch and the prior.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MlpModel {
    /// Layer sizes [F, hidden…, C].
    pub arch: Architecture,
    /// Examples per mini-batch B (≥ 1).
    pub batch: usize,
    /// Standard deviation σ of the N(0, σ²) prior on every parameter (finite, > 0).
    pub prior_sigma: f64,
}

/// Everything that defines a classifier run on the GPU besides its data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MlpConfig {
    /// The options of every ensemble; ensemble e uses `options.ensemble + e` as its
    /// Philox key word, as the CPU engine does for ensemble index e.
    pub options: TemperingOptions,
    /// The classifier.
    pub model: MlpModel,
    /// Ensembles E.
    pub ensembles: usize,
    /// Chains per ensemble P.
    pub chains: usize,
    /// Floating-point contract of the kernels ([`MathMode::Exact`]: nrpt-core's bits).
    pub math: MathMode,
}

/// Bytes of dynamic shared memory one chain's block needs for `arch` and mini-batches
/// of `batch` examples: θ, the gathered inputs, every layer's outputs, the deltas at the
/// scores (each of those per example, with the odd stride), two mini-batches and the
/// losses. `None` when it does not fit in 32 bits.
pub fn shared_bytes(arch: &Architecture, batch: usize) -> Option<usize> {
    layout(arch, batch).map(|l| 4 * l.words as usize)
}

/// The shared-memory layout, in 4-byte words.
#[derive(Clone, Copy, Debug)]
struct Layout {
    stride: u32,
    x: u32,
    acts: [u32; MAX_LAYERS],
    top: u32,
    idx: u32,
    idx2: u32,
    loss: u32,
    words: u32,
}

fn layout(arch: &Architecture, batch: usize) -> Option<Layout> {
    let b = u64::try_from(batch).ok()?;
    // A multiple of 4 (groups of four examples are one 128-bit load) that is 4 mod 8
    // (rows 4 apart fall 16 banks apart).
    let stride = b.div_ceil(4) * 4;
    let stride = if stride.is_multiple_of(8) {
        stride + 4
    } else {
        stride
    };
    // Every feature-major buffer starts 16-byte aligned; inputs, layers and the top
    // deltas follow each other (nrpt_mlp_zero_padding walks them as one block).
    let mut at = (arch.parameters() as u64).div_ceil(4) * 4;
    let x = at;
    at += arch.features() as u64 * stride;
    let mut acts = [0u32; MAX_LAYERS];
    for (slot, layer) in acts.iter_mut().zip(arch.iter()) {
        *slot = u32::try_from(at).ok()?;
        at += layer.outputs as u64 * stride;
    }
    let top = at;
    at += arch.classes() as u64 * stride;
    let idx = at;
    at += b;
    let idx2 = at;
    at += b;
    let loss = at;
    // The losses, two scratch words, and 8 words of slack: the forward tiles read up to
    // 7 words past the last unit of a layer (rows that are discarded).
    at += b + 2 + 8;
    // Bytes, too, must fit in 32 bits (the driver's shared-memory sizes are u32).
    u32::try_from(4 * at).ok()?;
    Some(Layout {
        stride: u32::try_from(stride).ok()?,
        x: u32::try_from(x).ok()?,
        acts,
        top: u32::try_from(top).ok()?,
        idx: u32::try_from(idx).ok()?,
        idx2: u32::try_from(idx2).ok()?,
        loss: u32::try_from(loss).ok()?,
        words: u32::try_from(at).ok()?,
    })
}

fn unsupported(what: impl Into<String>) -> CudaError {
    CudaError::Unsupported(what.into())
}

impl MlpConfig {
    /// Checks the configuration against a training set of `examples` examples with
    /// `features` features and `classes` classes (the options by nrpt-core, the rules
    /// the kernels implement, every size the kernels index in 32 bits) and returns the
    /// parameter block of the step kernel. Does not check the device's shared memory
    /// (see [`shared_bytes`]; [`crate::mlp::GpuMlp::new`] does).
    pub fn params(
        &self,
        examples: usize,
        features: usize,
        classes: usize,
    ) -> Result<MlpParams, CudaError> {
        let options = self.options.validate()?;
        let (e, p) = (self.ensembles, self.chains);
        let m = &self.model;
        let arch = &m.arch;
        let d = arch.parameters();
        // The rules the kernels implement (energies per level, simultaneous tests).
        options.params(p, d)?;
        if p > MAX_REPLICAS {
            return Err(nrpt_core::Error::InvalidValue {
                name: "chains",
                value: p as f64,
                allowed: "at most 2^24 - 1 per ensemble",
            }
            .into());
        }
        if e == 0 {
            return Err(unsupported("zero ensembles"));
        }
        if u64::from(options.ensemble) + e as u64 - 1 > u64::from(u32::MAX) {
            return Err(unsupported(
                "options.ensemble + ensembles exceeds the 32-bit Philox key word",
            ));
        }
        if (e as u128) * (p as u128) > i32::MAX as u128 {
            return Err(unsupported(format!(
                "{e} ensembles × {p} chains: more than 2^31 − 1 chains (one block each)"
            )));
        }
        if features != arch.features() || classes != arch.classes() {
            return Err(unsupported(format!(
                "the network takes {} features to {} classes, the data has {features} and \
                 {classes}",
                arch.features(),
                arch.classes()
            )));
        }
        if examples == 0 || examples > u32::MAX as usize {
            return Err(unsupported(format!(
                "{examples} training examples (1 to 2^32 − 1)"
            )));
        }
        if m.batch == 0 || m.batch > 1 << 20 {
            return Err(unsupported(format!(
                "mini-batches of {} examples (1 to 2^20)",
                m.batch
            )));
        }
        if !(m.prior_sigma.is_finite() && m.prior_sigma > 0.0) {
            return Err(nrpt_core::Error::InvalidValue {
                name: "prior_sigma",
                value: m.prior_sigma,
                allowed: "finite and > 0",
            }
            .into());
        }
        // Every word the step reads from its stream: two mini-batches and D normals.
        let words = 2 * m.batch as u64 + 2 * (d as u64).div_ceil(2);
        if words > u64::from(u32::MAX) || d > u32::MAX as usize {
            return Err(unsupported(format!(
                "{d} parameters: the step's words exceed a 32-bit stream position"
            )));
        }
        let l = layout(arch, m.batch)
            .ok_or_else(|| unsupported("the shared-memory layout exceeds 4 GiB"))?;
        let mut layer = [MlpLayer::default(); MAX_LAYERS];
        for (i, (slot, g)) in layer.iter_mut().zip(arch.iter()).enumerate() {
            *slot = MlpLayer {
                inputs: g.inputs as u32,
                outputs: g.outputs as u32,
                weights: g.weights as u32,
                biases: g.biases as u32,
                acts: l.acts[i],
            };
        }
        let momentum = match options.explorer {
            nrpt_core::explore::Explorer::Momentum { momentum } => momentum,
            nrpt_core::explore::Explorer::Langevin => 0.0,
        };
        // mlp::energy's constants, with its conversions: F::from_f64 of N/|B| and of σ.
        let sigma = m.prior_sigma as f32;
        Ok(MlpParams {
            layer,
            layers: arch.layers() as u32,
            features: features as u32,
            classes: classes as u32,
            dim: d as u32,
            batch: m.batch as u32,
            stride: l.stride,
            examples: examples as u32,
            chains: p as u32,
            ensembles: e as u32,
            seed: options.seed,
            ensemble0: options.ensemble,
            explorer: u32::from(options.explorer.has_momentum()),
            sm_x: l.x,
            sm_top: l.top,
            sm_idx: l.idx,
            sm_idx2: l.idx2,
            sm_loss: l.loss,
            sm_words: l.words,
            scale: (examples as f64 / m.batch as f64) as f32,
            inv_var: 1.0f32 / (sigma * sigma),
            mu: momentum as f32,
            pad: 0,
            mu64: momentum,
        })
    }

    /// The parameter block of the exchange kernel (swap.cuh reads `core` and the
    /// ensemble count; the momentum reset, D and the coordinate size).
    pub fn exchange_params(&self) -> Result<GpuParams, CudaError> {
        let options = self.options.validate()?;
        let d = self.model.arch.parameters();
        Ok(GpuParams {
            core: options.params(self.chains, d)?,
            ensembles: u32::try_from(self.ensembles)
                .map_err(|_| unsupported("more than 2^32 ensembles"))?,
            coord_bytes: 4,
            ..GpuParams::default()
        })
    }
}

/// Every array of a run at iteration 0, on the host, as nrpt-core's `Engine::start`
/// leaves each ensemble's buffers: the initial ladder of `options.rules` and its
/// temperatures, the identity permutation with its trip states, the buffer C₀, zero
/// momenta, energies and counts, and the states: uniform from each replica's INIT
/// stream (`InitialStates::Uniform`), else `initial` (E·P·D values) or zeros.
#[derive(Clone, Debug, PartialEq)]
pub struct Start {
    /// States, chain-major (E·P·D).
    pub states: Vec<f32>,
    /// Ladder by level (E·P).
    pub ladder: Vec<f64>,
    /// Temperatures by level (E·P).
    pub temps: Vec<f64>,
    /// Replica at each level (E·P).
    pub replica_at: Vec<u32>,
    /// Level of each replica (E·P).
    pub level_of: Vec<u32>,
    /// Trip states (E·P).
    pub trips: Vec<u8>,
    /// Buffer C of each ensemble (E).
    pub buffers: Vec<f64>,
}

impl Start {
    /// The start of `config`'s run; `initial` is used with `InitialStates::Keep` (and
    /// must then hold E·P·D values; `None` keeps zeros, as the CPU engine does).
    pub fn new(config: &MlpConfig, initial: Option<&[f32]>) -> Result<Start, CudaError> {
        let options = config.options.validate()?;
        let (e, p, d) = (
            config.ensembles,
            config.chains,
            config.model.arch.parameters(),
        );
        let (ladder0, temps0) = initial_levels(&options, p)?;
        let (mut at0, mut of0, mut trips0) = (vec![0u32; p], vec![0u32; p], vec![0u8; p]);
        init_identity(&mut at0, &mut of0, &mut trips0);
        let n = e
            .checked_mul(p)
            .and_then(|n| n.checked_mul(d))
            .ok_or_else(|| unsupported("E·P·D overflows"))?;
        let states = match (options.init, initial) {
            (InitialStates::Uniform { .. }, _) => {
                // Ensemble e draws with Philox key `options.ensemble + e`, as the CPU
                // engine's ensembles do.
                let mut s = vec![0.0f32; n];
                for (c, x) in s.chunks_exact_mut(d).enumerate() {
                    let (ens, r) = (c / p, c % p);
                    let keyed = TemperingOptions {
                        ensemble: options.ensemble.wrapping_add(ens as u32),
                        ..options
                    };
                    initial_state(&keyed, r as u32, x);
                }
                s
            }
            (InitialStates::Keep, Some(given)) => {
                if given.len() != n {
                    return Err(nrpt_core::Error::LengthMismatch {
                        name: "initial states",
                        expected: n,
                        found: given.len(),
                    }
                    .into());
                }
                given.to_vec()
            }
            (InitialStates::Keep, None) => vec![0.0; n],
        };
        let rep = |v: &[f64]| v.repeat(e);
        Ok(Start {
            states,
            ladder: rep(&ladder0),
            temps: rep(&temps0),
            replica_at: at0.repeat(e),
            level_of: of0.repeat(e),
            trips: trips0.repeat(e),
            buffers: vec![options.initial_buffer; e],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_of_the_default_network() {
        let arch = Architecture::new(&[64, 64, 10]).unwrap();
        let l = layout(&arch, 64).unwrap();
        assert_eq!(l.stride, 68);
        assert_eq!(l.x, 4812);
        assert_eq!(l.acts[0], 4812 + 64 * 68);
        assert_eq!(l.acts[1], l.acts[0] + 64 * 68);
        assert_eq!(l.top, l.acts[1] + 10 * 68);
        assert_eq!(l.words, l.top + 10 * 68 + 3 * 64 + 2 + 8);
        // About 60 KB: three blocks fit in an H100/H200 SM's 228 KB.
        assert_eq!(shared_bytes(&arch, 64), Some(4 * l.words as usize));
        assert!(4 * l.words < 228 * 1024 / 3);
        for (batch, stride) in [(1, 4), (4, 4), (5, 12), (8, 12), (33, 36), (100, 100)] {
            assert_eq!(
                layout(&arch, batch).unwrap().stride,
                stride,
                "batch {batch}"
            );
        }
    }

    /// The kernels read the feature-major buffers 16 bytes at a time: every buffer and
    /// every row starts on a multiple of 4 words (the shared memory's base is aligned).
    #[test]
    fn feature_major_buffers_are_16_byte_aligned() {
        for sizes in [
            &[64usize, 10][..],
            &[5, 7, 4, 3, 2],
            &[13, 9, 3],
            &[64, 128, 10],
        ] {
            let arch = Architecture::new(sizes).unwrap();
            for batch in [1, 3, 7, 33, 64, 100] {
                let l = layout(&arch, batch).unwrap();
                assert_eq!(l.stride % 8, 4);
                assert!(l.stride as usize >= batch);
                let mut starts = vec![l.x, l.top];
                starts.extend(&l.acts[..arch.layers()]);
                for s in starts {
                    assert_eq!(s % 4, 0, "{sizes:?} batch {batch}");
                }
                // Inputs, layers and the top deltas are one contiguous block.
                let rows = arch.features() + arch.iter().map(|g| g.outputs).sum::<usize>();
                assert_eq!(l.top as usize, l.x as usize + rows * l.stride as usize);
            }
        }
    }
}
