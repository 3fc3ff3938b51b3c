//! A D-dimensional Gaussian mixture behind noise (`--target mixture`): the worked example
//! of `docs/src/contributing/adding-a-target.md`, everything a built-in target needs in
//! one file.
//!
//! `π(x) = Σ_k w_k N(x; μ_k, I)` with `K = --target-arg components` (default 2)
//! components of equal weight, centred on the first axis at
//! `μ_k = separation · (k − (K − 1)/2) · e₁` (`--target-arg separation`, default 6):
//! K modes far enough apart (for the default, 6 standard deviations) that a single
//! Langevin chain rarely crosses between them. Seen, like the toys, through Gaussian
//! noise of scale `--noise` on every gradient coordinate and energy.
//!
//! On `--backend cuda` it runs the kernels' generic step with its own CUDA source
//! ([`Mixture::cuda_source`], the same arithmetic as its Rust potential).

use std::sync::Arc;

use nrpt_core::target::{Noisy, Potential};
use nrpt_cuda::{GpuTarget, TargetSource};

use super::{Builtin, Method, TargetArg, Toy};
use crate::error::{ConfigError, in_range};
use crate::limits::MAX_DIM;
use crate::engine::{CudaTarget, Target};

/// The potential: `U(x) = −log Σ_k exp(−|x − μ_k|²/2)` (the weights' constant dropped),
/// by the log-sum-exp trick around the nearest centre.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Mixture {
    /// Dimension D (≥ 1).
    pub dim: usize,
    /// Components K (1 to [`MAX_COMPONENTS`]).
    pub components: usize,
    /// Distance between neighbouring centres.
    pub separation: f64,
}

/// The most components.
pub const MAX_COMPONENTS: usize = 64;

impl Mixture {
    /// The first coordinate of centre `k`.
    fn centre(&self, k: usize) -> f64 {
        self.separation * (k as f64 - (self.components as f64 - 1.0) / 2.0)
    }

    /// `(U(x), ∂U/∂x₁)` from the first coordinate and `|x|²` of the rest: every
    /// component shares the other coordinates, so only x₁ tells them apart.
    fn along_axis(&self, x1: f64, rest: f64) -> (f64, f64) {
        let d2: Vec<f64> = (0..self.components)
            .map(|k| (x1 - self.centre(k)).powi(2))
            .collect();
        let m = d2.iter().copied().fold(f64::INFINITY, f64::min);
        let (mut z, mut pull) = (0.0, 0.0);
        for (k, d) in d2.iter().enumerate() {
            let w = (-(d - m) / 2.0).exp();
            z += w;
            pull += w * (x1 - self.centre(k));
        }
        (m / 2.0 - z.ln() + rest / 2.0, pull / z)
    }
}

impl Mixture {
    /// The potential in CUDA C for the kernels' generic step ([`nrpt_cuda::source`]):
    /// [`Potential::energy`] and [`Potential::gradient`] below, operation for operation,
    /// with K and the separation written in as constants.
    pub fn cuda_source(&self) -> String {
        let (k, separation) = (self.components, self.separation);
        format!(
            r#"// The mixture target: K = {k} components, separation {separation:?}.
#define NRPT_MIX_K {k}u
#define NRPT_MIX_SEPARATION {separation:?}

NRPT_HD double nrpt_mix_centre(nrpt_u32 k) {{
    return NRPT_MIX_SEPARATION * ((double)k - ((double)NRPT_MIX_K - 1.0) / 2.0);
}}

/// Mixture::along_axis: U(x) from x1 and |x|^2 of the other coordinates, and dU/dx1.
NRPT_HD void nrpt_mix_along_axis(double x1, double rest, double* u, double* g) {{
    double d2[NRPT_MIX_K];
    double m = 1.0 / 0.0;
    for (nrpt_u32 k = 0u; k < NRPT_MIX_K; ++k) {{
        double t = x1 - nrpt_mix_centre(k);
        d2[k] = t * t;
        m = fmin(m, d2[k]);
    }}
    double z = 0.0, pull = 0.0;
    for (nrpt_u32 k = 0u; k < NRPT_MIX_K; ++k) {{
        double w = exp(-(d2[k] - m) / 2.0);
        z = z + w;
        pull = pull + w * (x1 - nrpt_mix_centre(k));
    }}
    *u = m / 2.0 - log(z) + rest / 2.0;
    *g = pull / z;
}}

NRPT_HD float nrpt_target_energy(const float* x, nrpt_u32 dim) {{
    double rest = 0.0;
    for (nrpt_u32 j = 1u; j < dim; ++j) rest = rest + (double)x[j] * (double)x[j];
    double u, g;
    nrpt_mix_along_axis((double)x[0], rest, &u, &g);
    return (float)u;
}}

NRPT_HD void nrpt_target_gradient(const float* x, float* g, nrpt_u32 dim) {{
    double u, g0;
    nrpt_mix_along_axis((double)x[0], 0.0, &u, &g0);
    g[0] = (float)g0;
    for (nrpt_u32 j = 1u; j < dim; ++j) g[j] = x[j];
}}
"#
        )
    }
}

impl Potential<f32> for Mixture {
    fn dim(&self) -> usize {
        self.dim
    }

    fn energy(&self, x: &[f32]) -> f32 {
        let rest: f64 = x[1..].iter().map(|&v| f64::from(v) * f64::from(v)).sum();
        self.along_axis(f64::from(x[0]), rest).0 as f32
    }

    fn gradient(&self, x: &[f32], grad: &mut [f32]) {
        grad[0] = self.along_axis(f64::from(x[0]), 0.0).1 as f32;
        grad[1..].copy_from_slice(&x[1..]);
    }
}

/// `--target mixture`.
pub const MIXTURE: Builtin = Builtin {
    name: "mixture",
    about: "K Gaussians in --dim dimensions, centred on the first axis --target-arg \
            separation apart, seen through noise",
    method: Method::Sgd,
    keys: &["dim", "noise"],
    args: &[
        TargetArg {
            name: "components",
            default: 2.0,
            help: "the number K of components (1 to 64)",
        },
        TargetArg {
            name: "separation",
            default: 6.0,
            help: "the distance between neighbouring centres (> 0)",
        },
    ],
    defaults: |c| c,
    build: |c| {
        in_range("dim", c.dim, 1, MAX_DIM)?;
        let bad = |message: String| ConfigError {
            field: "target_args".into(),
            flag: "target-arg".into(),
            message,
        };
        let k = MIXTURE.arg(c, "components");
        let separation = MIXTURE.arg(c, "separation");
        if !(k.fract() == 0.0 && (1.0..=MAX_COMPONENTS as f64).contains(&k)) {
            return Err(bad(format!(
                "components must be a whole number from 1 to {MAX_COMPONENTS}, got {k}"
            )));
        }
        if !(separation.is_finite() && separation > 0.0) {
            return Err(bad(format!(
                "separation must be a finite number > 0, got {separation}"
            )));
        }
        let potential = Mixture {
            dim: c.dim,
            components: k as usize,
            separation,
        };
        Ok(Arc::new(Toy {
            potential,
            noise: c.noise,
        }))
    },
};

impl Target for Toy<Mixture> {
    type Oracle = Noisy<Mixture>;

    fn name(&self) -> String {
        "mixture".into()
    }

    fn dim(&self) -> usize {
        self.potential.dim
    }

    fn oracle(&self) -> Noisy<Mixture> {
        self.noisy()
    }

    fn cuda(&self) -> Option<CudaTarget> {
        let kernels = GpuTarget::Source {
            dim: self.potential.dim,
            source: Arc::new(TargetSource::new("mixture", self.potential.cuda_source())),
        };
        Some(CudaTarget::with_noise(kernels, self.noise))
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({
            "name": "mixture",
            "dim": self.potential.dim,
            "components": self.potential.components,
            "separation": self.potential.separation,
            "noise": self.noise,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gradient against central differences of the energy, in f64 arithmetic
    /// through the same function (h = 1e-5, tolerance 1e-6).
    #[test]
    fn gradient_matches_the_energy() {
        let m = Mixture {
            dim: 3,
            components: 3,
            separation: 4.0,
        };
        for x1 in [-7.0, -4.0, -1.3, 0.0, 0.4, 2.0, 5.5, 9.0] {
            let (_, g) = m.along_axis(x1, 1.0);
            let h = 1e-5;
            let num = (m.along_axis(x1 + h, 1.0).0 - m.along_axis(x1 - h, 1.0).0) / (2.0 * h);
            assert!((g - num).abs() < 1e-6, "x1 = {x1}: {g} vs {num}");
        }
        // Far from every centre the log-sum-exp stays finite.
        let (u, g) = m.along_axis(1e4, 0.0);
        assert!(u.is_finite() && g.is_finite());
    }

    /// Every centre is a minimum of the same depth.
    #[test]
    fn the_modes_are_the_centres() {
        let m = Mixture {
            dim: 1,
            components: 4,
            separation: 6.0,
        };
        let u: Vec<f64> = (0..4).map(|k| m.along_axis(m.centre(k), 0.0).0).collect();
        for w in u.windows(2) {
            assert!((w[0] - w[1]).abs() < 1e-6, "{u:?}");
        }
        assert!(m.along_axis(0.0, 0.0).0 > u[0] + 1.0);
    }
}
