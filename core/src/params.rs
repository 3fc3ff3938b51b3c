//! The `#[repr(C)]` parameter block that the CUDA kernels read (feature `gpu`, which
//! also derives `bytemuck::Pod` for it and for the counters the kernels write, so
//! that firmware builds without the feature compile no proc macro).

use bytemuck::{Pod, Zeroable};

use crate::driver::{Temperatures, TemperingOptions};
use crate::error::Error;
use crate::explore::Explorer;
use crate::rules::{
    BufferProjection, LadderUpdate, MomentumOnSwap, PairEnergies, StepEnergy, SweepOrder,
};

/// Bits of [`KernelParams::adapt_flags`].
pub mod adapt_flags {
    /// Adapt the ladder.
    pub const LADDER: u32 = 1;
    /// Adapt the buffer.
    pub const BUFFER: u32 = 1 << 1;
    /// Temperatures follow the ladder.
    pub const FOLLOW_LADDER: u32 = 1 << 2;
    /// [`LadderUpdate::InPlace`](crate::rules::LadderUpdate::InPlace) (0: Jacobi).
    pub const LADDER_IN_PLACE: u32 = 1 << 3;
    /// [`BufferProjection::Unprojected`](crate::rules::BufferProjection::Unprojected)
    /// (0: C ≥ 0).
    pub const BUFFER_UNPROJECTED: u32 = 1 << 4;
    /// [`MomentumOnSwap::Carry`](crate::rules::MomentumOnSwap::Carry) (0: reset).
    pub const MOMENTUM_CARRY: u32 = 1 << 5;
}

/// The parameters of a run as one plain `#[repr(C)]` block (96 bytes, no padding),
/// mirrored field for field by the CUDA kernels' header.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct KernelParams {
    /// Target swap rate S.
    pub target_swap_rate: f64,
    /// Step-size numerator a.
    pub gamma_a: f64,
    /// Step-size exponent α.
    pub gamma_alpha: f64,
    /// Step-size offset b.
    pub gamma_b: f64,
    /// Buffer update scale c.
    pub buffer_scale: f64,
    /// Momentum μ (0 for Langevin explorers).
    pub momentum: f64,
    /// η₀.
    pub ladder_min: f64,
    /// η_{P−1}.
    pub ladder_max: f64,
    /// P.
    pub chains: u32,
    /// D.
    pub dim: u32,
    /// Window W for DEO, 0 for SEO.
    pub window: u32,
    /// 0 buffered, 1 Metropolis.
    pub rule: u32,
    /// 0 Langevin (SGLD/SGD), 1 momentum.
    pub explorer: u32,
    /// The bits of [`adapt_flags`].
    pub adapt_flags: u32,
    /// Philox seed.
    pub seed: u32,
    /// Ensemble index.
    pub ensemble: u32,
}

impl TemperingOptions {
    /// The parameter block of these options for P = `chains` replicas in D = `dim`
    /// dimensions. The kernels compute energies per level and test pairs
    /// simultaneously (the paper's rules); the authors' fresh energies per pair test
    /// and sequential pass, and the shared-batch energies of their deep code, are an
    /// [`Error::Unsupported`] here.
    pub fn params(&self, chains: usize, dim: usize) -> Result<KernelParams, Error> {
        let o = self.validate()?;
        if o.rules.pair_energies != PairEnergies::PerLevel {
            return Err(Error::Unsupported {
                what: "fresh energies per pair test (rules.pair_energies) on the GPU",
            });
        }
        if o.rules.step_energy != StepEnergy::AfterStep {
            return Err(Error::Unsupported {
                what: "the shared-batch energies before the step (rules.step_energy) on the GPU",
            });
        }
        if o.rules.sweep_order != SweepOrder::Simultaneous {
            return Err(Error::Unsupported {
                what: "the sequential pass of pair tests (rules.sweep_order) on the GPU",
            });
        }
        crate::error::check_chains(chains)?;
        let Ok(dim) = u32::try_from(dim) else {
            return Err(Error::InvalidValue {
                name: "dim",
                value: dim as f64,
                allowed: "below 2^32",
            });
        };
        // check_chains keeps P within the counter's 24-bit replica field.
        let chains = chains as u32;
        let momentum = match o.explorer {
            Explorer::Langevin => 0.0,
            Explorer::Momentum { momentum } => momentum,
        };
        let bit = |on: bool, b: u32| if on { b } else { 0 };
        Ok(KernelParams {
            target_swap_rate: o.adapt.target_swap_rate,
            gamma_a: o.adapt.schedule.a,
            gamma_alpha: o.adapt.schedule.alpha,
            gamma_b: o.adapt.schedule.b,
            buffer_scale: o.adapt.buffer_scale,
            momentum,
            ladder_min: o.ladder_min,
            ladder_max: o.ladder_max,
            chains,
            dim,
            window: o.scheme.window_code(),
            rule: o.rule.code(),
            explorer: u32::from(o.explorer.has_momentum()),
            adapt_flags: bit(o.adapt.adapt_ladder, adapt_flags::LADDER)
                | bit(o.adapt.adapt_buffer, adapt_flags::BUFFER)
                | bit(
                    o.temperatures == Temperatures::FollowLadder,
                    adapt_flags::FOLLOW_LADDER,
                )
                | bit(
                    o.rules.ladder_update == LadderUpdate::InPlace,
                    adapt_flags::LADDER_IN_PLACE,
                )
                | bit(
                    o.rules.buffer_projection == BufferProjection::Unprojected,
                    adapt_flags::BUFFER_UNPROJECTED,
                )
                | bit(
                    o.rules.momentum_on_swap == MomentumOnSwap::Carry,
                    adapt_flags::MOMENTUM_CARRY,
                ),
            seed: o.seed,
            ensemble: o.ensemble,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Rules;

    #[test]
    fn flags_follow_the_rules_and_host_only_rules_are_refused() {
        let o = TemperingOptions::default();
        let p = o.params(16, 2).unwrap();
        assert_eq!(p.adapt_flags, adapt_flags::LADDER | adapt_flags::BUFFER);
        assert_eq!((p.chains, p.dim, p.window), (16, 2, 8));
        let in_place = TemperingOptions {
            rules: Rules {
                ladder_update: LadderUpdate::InPlace,
                buffer_projection: BufferProjection::Unprojected,
                momentum_on_swap: MomentumOnSwap::Carry,
                ..Rules::PAPER
            },
            ..o
        };
        assert_eq!(
            in_place.params(16, 2).unwrap().adapt_flags,
            0b11 | adapt_flags::LADDER_IN_PLACE
                | adapt_flags::BUFFER_UNPROJECTED
                | adapt_flags::MOMENTUM_CARRY
        );
        let authors = TemperingOptions {
            rules: Rules::AUTHORS_CODE,
            ..o
        };
        assert!(matches!(
            authors.params(16, 2),
            Err(Error::Unsupported { .. })
        ));
        assert_eq!(core::mem::size_of::<KernelParams>(), 96);
    }
}
