//! Your own posterior through nrpt's engine: an equal mixture of two unit Gaussians in D
//! dimensions, centred at `±m·(1, …, 1)` and so far apart that a Langevin chain almost
//! never crosses between them, sampled by non-reversible parallel tempering (SGLD
//! explorers at temperatures that grow up the ladder, Metropolis swaps): ensembles in
//! parallel on every core, samples recorded, a checkpoint every few thousand iterations
//! (kill it and run it again: it resumes where it stopped and ends with the same
//! numbers), a progress bar, Ctrl-C.
//!
//! Everything here is what a crate of yours would write: implement
//! [`nrpt_sampling::engine::Target`] (a name, the dimension and an energy oracle), put it in a
//! [`Job`] and run the job.
//!
//! ```sh
//! cargo run --release -p nrpt-host --example own_target -- [--dim D] [--iterations N] [--out DIR]
//! ```

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;

use nrpt::progress::Progress;
use nrpt_core::driver::{InitialStates, Temperatures, TemperingOptions};
use nrpt_core::rng::Rng;
use nrpt_core::swap::SwapRule;
use nrpt_core::target::EnergyOracle;
use nrpt_core::window::Scheme;
use nrpt_sampling::engine::cpu::CpuBackend;
use nrpt_sampling::engine::{Job, Record, Target};
use nrpt_studies::checkpoint::{self, Plan};
use serde::{Deserialize, Serialize};

/// `π(x) = ½ N(x; m·1, I) + ½ N(x; −m·1, I)` in `dim` dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct TwoModes {
    dim: usize,
    m: f64,
}

/// Its oracle: exact energy and gradient (no noise), in `f32` as the engine runs:
/// `U(x) = −log(e^{−|x − m1|²/2} + e^{−|x + m1|²/2})` up to a constant, computed stably
/// from `s = m Σ x_j`: `U = |x|²/2 − |s| − log(1 + e^{−2|s|})`, and
/// `∇U = x − m tanh(s) 1`.
#[derive(Clone, Copy, Debug)]
struct TwoModesOracle(TwoModes);

impl EnergyOracle<f32> for TwoModesOracle {
    type Error = Infallible;

    fn dim(&self) -> usize {
        self.0.dim
    }

    fn gradient<R: Rng + ?Sized>(
        &mut self,
        x: &[f32],
        g: &mut [f32],
        _: &mut R,
    ) -> Result<(), Infallible> {
        let m = self.0.m as f32;
        let t = m * (m * x.iter().sum::<f32>()).tanh();
        for (gj, xj) in g.iter_mut().zip(x) {
            *gj = xj - t;
        }
        Ok(())
    }

    fn energy<R: Rng + ?Sized>(&mut self, x: &[f32], _: &mut R) -> Result<f32, Infallible> {
        let s = (self.0.m as f32 * x.iter().sum::<f32>()).abs();
        let half_sq: f32 = 0.5 * x.iter().map(|v| v * v).sum::<f32>();
        Ok(half_sq - s - (-2.0 * s).exp().ln_1p())
    }
}

impl Target for TwoModes {
    type Oracle = TwoModesOracle;

    fn name(&self) -> String {
        "two-modes".into()
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn oracle(&self) -> TwoModesOracle {
        TwoModesOracle(*self)
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({ "name": "two-modes", "dim": self.dim, "m": self.m })
    }
}

/// What the checkpoint says about the run: a resume must continue the same one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Description {
    target: TwoModes,
    chains: usize,
    ensembles: usize,
    iterations: u64,
    seed: u32,
}

fn flag<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> anyhow::Result<()> {
    nrpt_sampling::interrupt::install();
    let args: Vec<String> = std::env::args().collect();
    let dim: usize = flag(&args, "--dim", 3).max(2);
    let iterations: u64 = flag(&args, "--iterations", 40_000);
    let out: PathBuf = flag(&args, "--out", PathBuf::from("own-target-out"));
    std::fs::create_dir_all(&out)?;

    let target = TwoModes { dim, m: 2.5 };
    let description = Description {
        target,
        chains: 8,
        ensembles: 4,
        iterations,
        seed: 7,
    };
    // SGLD at every level, temperatures from 1 (the target) up the ladder of learning
    // rates, exact Metropolis swaps, the windowed DEO scheme with W = 1.
    let options = TemperingOptions {
        scheme: Scheme::Deo { window: 1 },
        rule: SwapRule::Metropolis,
        temperatures: Temperatures::FollowLadder,
        ladder_min: 0.05,
        ladder_max: 2.0,
        init: InitialStates::Uniform {
            low: -1.0,
            high: 1.0,
        },
        seed: description.seed,
        ..TemperingOptions::default()
    };
    options.validate()?;
    let job = Job {
        record: Record {
            thin: 10,
            warmup: iterations / 10,
            trace_every: 0,
            path_iterations: 0,
        },
        ..Job::new(
            Arc::new(target),
            options,
            description.chains,
            description.ensembles,
            iterations,
        )
    };

    // Resume from the checkpoint of an earlier, interrupted run of the same description.
    let path = out.join("own-target.checkpoint");
    let resumed = checkpoint::seal_of(&path);
    let saved = match checkpoint::read::<Description>(&path) {
        Ok(c) if c.config == description => {
            c.state.check(&job).map_err(anyhow::Error::msg)?;
            eprintln!("resuming from iteration {}", c.state.iteration);
            Some(c.state)
        }
        Ok(_) => anyhow::bail!("{} belongs to another run", path.display()),
        Err(checkpoint::CheckpointError::Read { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let plan = Plan {
        path: &path,
        every: 5_000,
        config: &description,
        inputs: &[],
    };
    let progress = Progress::new("two modes", iterations * job.ensembles as u64, false);
    let cpu = CpuBackend::default();
    let done = checkpoint::run(&cpu, &job, saved, &plan, &|n| progress.inc(n))?;
    progress.finish();
    // Removed only if it is still the checkpoint this run wrote last (or resumed from).
    if let Some(seal) = done.seal.or(resumed) {
        checkpoint::remove_own(&path, &seal);
    }
    let result = cpu.finish(&job, done.state);

    // The level-0 samples against the truth: half of them in each mode (the sign of
    // Σ x_j), mean 0, E[x₁²] = 1 + m².
    let samples: Vec<&[f32]> = result.samples.chunks_exact(dim).collect();
    let n = samples.len() as f64;
    let upper = samples
        .iter()
        .filter(|s| s.iter().sum::<f32>() > 0.0)
        .count() as f64
        / n;
    let mean = samples.iter().map(|s| f64::from(s[0])).sum::<f64>() / n;
    let square = samples.iter().map(|s| f64::from(s[0]).powi(2)).sum::<f64>() / n;
    let stats = result.total_stats();
    println!(
        "{} samples: {:.3} in the upper mode (truth 0.5), mean x1 {mean:.3} (truth 0), \
         E[x1^2] {square:.2} (truth {:.2}); {} round trips",
        samples.len(),
        upper,
        1.0 + target.m * target.m,
        stats.round_trips
    );
    Ok(())
}
