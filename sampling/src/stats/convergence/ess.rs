//! The effective sample size of split chains: FFT autocovariances and Geyer's initial
//! positive and monotone sequences (the steps are listed in the [parent's
//! docs](super)).

use std::sync::Arc;

use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlanner};

use super::rhat::moments;

/// Buffers and FFT plans, kept from one call to the next.
pub(super) struct EssWorkspace {
    planner: FftPlanner<f64>,
    /// FFT buffer and scratch.
    spectrum: Vec<Complex<f64>>,
    scratch: Vec<Complex<f64>>,
    /// Autocovariances of the chains, chain after chain.
    acov: Vec<f64>,
    /// Combined autocorrelations ρ̂ₜ.
    rho: Vec<f64>,
}

impl Default for EssWorkspace {
    fn default() -> Self {
        EssWorkspace {
            planner: FftPlanner::new(),
            spectrum: Vec::new(),
            scratch: Vec::new(),
            acov: Vec::new(),
            rho: Vec::new(),
        }
    }
}

impl EssWorkspace {
    /// The effective sample size of `chains` equal chains of at least 2 values each,
    /// stored one after the other; S (all values) when every value is the same.
    pub(super) fn ess(&mut self, values: &[f64], chains: usize) -> f64 {
        let total = values.len() as f64;
        if values.iter().all(|&x| x == values[0]) {
            return total;
        }
        let len = values.len() / chains;
        self.autocovariances(values, len);
        let n = len as f64;
        let acov = &self.acov;
        let acov_mean =
            |t: usize| (0..chains).map(|c| acov[c * len + t]).sum::<f64>() / chains as f64;
        // W from the lag-0 autocovariances; B/n from the chain means (Welford).
        let mean_var = acov_mean(0) * n / (n - 1.0);
        let (mut mean, mut m2) = (0.0, 0.0);
        for (c, chain) in values.chunks_exact(len).enumerate() {
            let (chain_mean, _) = moments(chain);
            let delta = chain_mean - mean;
            mean += delta / (c + 1) as f64;
            m2 += delta * (chain_mean - mean);
        }
        let var_plus = mean_var * (n - 1.0) / n + m2 / (chains - 1) as f64;
        let rho_at = |t: usize| 1.0 - (mean_var - acov_mean(t)) / var_plus;

        // Geyer's initial positive sequence: pairs (ρ̂ₜ₊₁, ρ̂ₜ₊₂), t odd, while their sum
        // stays positive. `last` is the last lag kept (−1 when the loop never ran).
        let rho = &mut self.rho;
        rho.clear();
        rho.resize(len, 0.0);
        rho[0] = 1.0;
        let mut even = 1.0;
        let mut odd = rho_at(1);
        rho[1] = odd;
        let mut t = 1;
        while t + 3 < len && even + odd > 0.0 {
            even = rho_at(t + 1);
            odd = rho_at(t + 2);
            if even + odd >= 0.0 {
                rho[t + 1] = even;
                rho[t + 2] = odd;
            }
            t += 2;
        }
        let last = t as isize - 2;
        // The first even lag past the sum enters τ̂ once when positive: the paper's
        // improvement for antithetic chains.
        let next = (last + 1) as usize;
        if even > 0.0 {
            rho[next] = even;
        }
        // Geyer's initial monotone sequence: no pair sum above the one before it.
        let mut t = 1;
        while (t as isize) <= last - 2 {
            let previous = rho[t - 1] + rho[t];
            if rho[t + 1] + rho[t + 2] > previous {
                rho[t + 1] = previous / 2.0;
                rho[t + 2] = previous / 2.0;
            }
            t += 2;
        }
        let tau = -1.0 + 2.0 * rho[..next].iter().sum::<f64>() + rho[next];
        total / tau.max(1.0 / total.log10())
    }

    /// Fills `self.acov` with each chain's autocovariances at lags 0 … len − 1 (divisor
    /// len, about the chain's mean), by FFT of the chain zero-padded to a power of two
    /// ≥ 2 len (no circular wrap-around).
    fn autocovariances(&mut self, values: &[f64], len: usize) {
        let size = (2 * len).next_power_of_two();
        let forward: Arc<dyn Fft<f64>> = self.planner.plan_fft_forward(size);
        let inverse: Arc<dyn Fft<f64>> = self.planner.plan_fft_inverse(size);
        let scratch = forward
            .get_inplace_scratch_len()
            .max(inverse.get_inplace_scratch_len());
        self.scratch.resize(scratch, Complex::default());
        self.acov.clear();
        // rustfft's transforms are unnormalized: the round trip multiplies by `size`.
        let scale = 1.0 / (size as f64 * len as f64);
        for chain in values.chunks_exact(len) {
            let (mean, _) = moments(chain);
            self.spectrum.clear();
            self.spectrum
                .extend(chain.iter().map(|&x| Complex::new(x - mean, 0.0)));
            self.spectrum.resize(size, Complex::default());
            forward.process_with_scratch(&mut self.spectrum, &mut self.scratch);
            for z in &mut self.spectrum {
                *z = Complex::new(z.norm_sqr(), 0.0);
            }
            inverse.process_with_scratch(&mut self.spectrum, &mut self.scratch);
            self.acov
                .extend(self.spectrum[..len].iter().map(|z| z.re * scale));
        }
    }
}
