//! A run's configuration, from a TOML file and command-line flags for the same
//! fields (every key declared once in `keys`). Errors name the field (and its flag)
//! and the allowed range. Turning a configuration into a job, which needs the
//! registry of targets, is `crate::targets`'s part (`targets/setup.rs`).

use std::fmt;
use std::str::FromStr;

use nrpt_core::window::Scheme;
use serde::{Deserialize, Serialize};

use crate::preset::RuleChoices;

mod keys;
pub use crate::error::{ConfigError, in_range};
pub use crate::limits::{MAX_CHAINS, MAX_DIM, MAX_EXPLORER_STEPS, MAX_LEAPFROG_STEPS, MAX_VALUES};
pub use keys::{ChainsArg, KEYS, Key, RunConfig, RunFlags, TargetArgs, TargetName, TargetUse};

/// The swap window: a number of iterations, the exact optimum, the paper's formula, or
/// the reversible SEO scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowSpec {
    /// W iterations (≥ 1).
    Fixed(u32),
    /// The best integer window by Lemma 1 for P and S (`nrpt window`).
    Optimal,
    /// The paper's `ceil((log P + log log P) / −log(1 − S))`.
    Paper,
    /// Stochastic even–odd swaps (reversible baseline, no window).
    Seo,
}

impl WindowSpec {
    /// The scheme for P chains at target swap rate S.
    pub fn scheme(self, chains: usize, swap_rate: f64) -> Result<Scheme, ConfigError> {
        let bad = |e: nrpt_core::Error| ConfigError::new("window", e.to_string());
        Ok(match self {
            WindowSpec::Fixed(0) => {
                return Err(ConfigError::new(
                    "window",
                    "must be at least 1 iteration, got 0",
                ));
            }
            WindowSpec::Fixed(window) => Scheme::Deo { window },
            WindowSpec::Optimal => Scheme::Deo {
                window: nrpt_core::optimal::optimal_window(chains, swap_rate).map_err(bad)?,
            },
            WindowSpec::Paper => Scheme::Deo {
                window: nrpt_core::optimal::paper_window(chains, swap_rate).map_err(bad)?,
            },
            WindowSpec::Seo => Scheme::Seo,
        })
    }
}

impl FromStr for WindowSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "opt" | "optimal" => Ok(WindowSpec::Optimal),
            "paper" => Ok(WindowSpec::Paper),
            "seo" => Ok(WindowSpec::Seo),
            other => match other.parse::<u32>() {
                Ok(0) => Err("the window must be at least 1 iteration".to_string()),
                Ok(w) => Ok(WindowSpec::Fixed(w)),
                Err(_) => Err(format!(
                    "`{other}` is not a window: give a number of iterations (1, 2, …), `opt`, `paper` or `seo`"
                )),
            },
        }
    }
}

impl fmt::Display for WindowSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WindowSpec::Fixed(w) => write!(f, "{w}"),
            WindowSpec::Optimal => write!(f, "opt"),
            WindowSpec::Paper => write!(f, "paper"),
            WindowSpec::Seo => write!(f, "seo"),
        }
    }
}

impl Serialize for WindowSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            WindowSpec::Fixed(w) => s.serialize_u32(*w),
            other => s.serialize_str(&other.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for WindowSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(i64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(n) if (1..=i64::from(u32::MAX)).contains(&n) => {
                Ok(WindowSpec::Fixed(n as u32))
            }
            Raw::Number(n) => Err(serde::de::Error::custom(format!(
                "window must be between 1 and {}, got {n}",
                u32::MAX
            ))),
            Raw::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// The exploration kernel of the levels: three for the SGD engines, two for exact
/// tempering (`gaussian-path`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ExplorerKind {
    /// The paper's SGD explorers: SGLD (temperature 1) at the target level, plain SGD
    /// above (their spread comes from the gradient noise and the learning rate).
    Sgd,
    /// SGLD at every level, with temperature proportional to the learning rate.
    Sgld,
    /// Momentum SGD (momentum from `momentum`), SGHMC at the target level.
    Msgd,
    /// Exact tempering: MALA at every level with β > 0, step size adapted towards
    /// acceptance 0.574.
    Mala,
    /// Exact tempering: HMC (`leapfrog_steps` leapfrog steps per trajectory, step size
    /// jittered by ±20 % and adapted towards acceptance 0.65).
    Hmc,
}

/// The floating-point math of a run (`--math`, `math =`): the CUDA kernels' contract,
/// and on the CPU fast mode's lane math for the 2D toy's lane groups
/// (`CpuBackend::fast_math`); the CPU's other paths always compute exactly.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum MathKind {
    /// No FMA contraction, IEEE division and square root, nrpt-core's own ln and
    /// sin/cos: the same bits as the CPU engine (the reference).
    #[default]
    Exact,
    /// FMA contraction: a few ulp from the CPU's values, so runs part after a while.
    Fma,
    /// FMA contraction and the GPU's hardware log, sin/cos and reciprocal square root
    /// (lg2.approx, sin.approx, cos.approx, rsqrt.approx) for the normal draws and the
    /// targets' sin/cos 2πx; on the CPU, FMA and shorter polynomials at that accuracy
    /// in the 2D toy's lane groups: no bit parity; round trips and TV distance agree
    /// with exact mode's within the spread across seeds.
    Fast,
}

impl MathKind {
    /// The kernels' mode.
    pub fn mode(self) -> nrpt_cuda::MathMode {
        match self {
            MathKind::Exact => nrpt_cuda::MathMode::Exact,
            MathKind::Fma => nrpt_cuda::MathMode::Fma,
            MathKind::Fast => nrpt_cuda::MathMode::Fast,
        }
    }

    /// `exact`, `fma` or `fast`.
    pub fn name(self) -> &'static str {
        self.mode().name()
    }

    /// Whether this is [`MathKind::Exact`] (the default, left out of written
    /// configurations).
    pub fn is_exact(&self) -> bool {
        *self == MathKind::Exact
    }
}

/// How the CUDA engine stores states and momenta in device memory (`--precision`); the
/// arithmetic is f32 whatever the storage.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum PrecisionKind {
    /// f32: bit for bit the CPU engine's states.
    #[default]
    F32,
    /// bfloat16 (8-bit mantissa, f32's range): half the bytes of a memory-bound step.
    Bf16,
    /// IEEE half (11-bit mantissa, range ±65504): half the bytes.
    F16,
}

impl PrecisionKind {
    /// The storage of the CUDA engine's states.
    pub fn storage(self) -> nrpt_cuda::Precision {
        match self {
            PrecisionKind::F32 => nrpt_cuda::Precision::F32,
            PrecisionKind::Bf16 => nrpt_cuda::Precision::Bf16,
            PrecisionKind::F16 => nrpt_cuda::Precision::F16,
        }
    }

    /// `f32`, `bf16` or `f16`.
    pub fn name(self) -> &'static str {
        match self {
            PrecisionKind::F32 => "f32",
            PrecisionKind::Bf16 => "bf16",
            PrecisionKind::F16 => "f16",
        }
    }

    /// Whether this is [`PrecisionKind::F32`] (the default, left out of written
    /// configurations).
    pub fn is_f32(&self) -> bool {
        *self == PrecisionKind::F32
    }
}

/// The refusal of half-precision storage where the CPU engine would run: it keeps f32
/// states (`--precision`).
pub fn cpu_precision_error() -> ConfigError {
    ConfigError::new(
        "precision",
        "bf16/f16 state storage is a GPU option; the CPU engine keeps f32 states",
    )
}

/// The swap rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum RuleKind {
    /// `e_{l+1} + C < e_l` with an adaptive buffer C (for SGD explorers).
    Buffered,
    /// Metropolis acceptance with known temperatures (needs `sgld`).
    Metropolis,
}

impl ExplorerKind {
    /// The spelling of the flag and the TOML value.
    pub fn name(self) -> &'static str {
        match self {
            ExplorerKind::Sgd => "sgd",
            ExplorerKind::Sgld => "sgld",
            ExplorerKind::Msgd => "msgd",
            ExplorerKind::Mala => "mala",
            ExplorerKind::Hmc => "hmc",
        }
    }

    /// Whether it explores exact tempering's levels (`mala`, `hmc`) rather than the SGD
    /// engines' (`sgd`, `sgld`, `msgd`).
    pub fn is_exact(self) -> bool {
        matches!(self, ExplorerKind::Mala | ExplorerKind::Hmc)
    }
}

/// The reference of exact tempering's path: the β = 0 end the levels anneal from.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum ReferenceKind {
    /// The path's own reference: the prior of a classifier, N(0, I) of gaussian-path.
    Fixed,
    /// A mean-field Gaussian fitted to the target level at the end of every round
    /// (Surjanovic et al., NeurIPS 2022), one leg: the path from it to the same target is
    /// shorter, and log Z stays the evidence.
    Variational,
    /// Both: a fixed leg and a variational leg joined at the target (the stabilized
    /// ladder of Surjanovic et al.), so that a poor fit cannot slow the run below the
    /// fixed reference's. The default.
    #[default]
    Stabilized,
}

impl ReferenceKind {
    /// The spelling of the flag and the TOML value.
    pub fn name(self) -> &'static str {
        match self {
            ReferenceKind::Fixed => "fixed",
            ReferenceKind::Variational => "variational",
            ReferenceKind::Stabilized => "stabilized",
        }
    }

    /// Whether it is the default, `stabilized` (the summary's `config` then leaves it
    /// out).
    pub fn is_default(&self) -> bool {
        *self == ReferenceKind::default()
    }
}

/// What a run too large for `--max-memory` can lower.
pub const RUN_MEMORY_ADVICE: &str = "--ensembles, --chains or --iterations, raise --thin";

/// States of more coordinates than this (a classifier's parameters) are written to
/// `samples.npy` only, not to `samples.csv`.
pub const MAX_CSV_DIM: usize = 64;

impl RunConfig {
    /// What a run of `nrpt run` records: samples every `thin` iterations after
    /// `warmup`, a trace entry every 1/400 of the iterations.
    pub fn record(&self) -> crate::engine::Record {
        crate::engine::Record {
            thin: self.thin,
            warmup: self.warmup,
            trace_every: (self.iterations / 400).max(1),
            path_iterations: 0,
        }
    }

    /// The input files this configuration names, with their keys: the classifier's data
    /// files (whatever the target; the keys are then ignored, but a folder holding one
    /// is still never replaced by --out).
    pub fn input_paths(&self) -> Vec<(&'static str, &std::path::Path)> {
        [
            ("data", &self.data),
            ("labels", &self.labels),
            ("test_data", &self.test_data),
            ("test_labels", &self.test_labels),
        ]
        .into_iter()
        .filter_map(|(k, p)| p.as_deref().map(|p| (k, p)))
        .collect()
    }

    /// The preset and rule keys of this configuration.
    pub fn rule_choices(&self) -> RuleChoices {
        RuleChoices {
            preset: self.preset,
            pair_energies: self.pair_energies,
            sweep_order: self.sweep_order,
            ladder_update: self.ladder_update,
            buffer_projection: self.buffer_projection,
            momentum_on_swap: self.momentum_on_swap,
            ladder_decimals: self.ladder_decimals,
            inclusive_iterations: self.inclusive_iterations,
            step_energy: self.step_energy,
        }
    }
}

/// Parses `--hidden`: widths separated by commas (`128`, `64,32`), `0` or nothing for
/// none (softmax regression).
pub fn parse_hidden(text: &str) -> Result<Vec<usize>, ConfigError> {
    let bad = |t: &str| {
        ConfigError::new(
            "hidden",
            format!("`{t}` is not a list of hidden widths such as 128 or 64,32 (0: none)"),
        )
    };
    let t = text.trim();
    if t.is_empty() || t == "0" {
        return Ok(Vec::new());
    }
    t.split(',')
        .map(|w| match w.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(bad(text)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Record;
    use crate::preset::{Preset, SweepOrderKind};
    use crate::targets::Toy;

    #[test]
    fn defaults_are_the_paper_settings() {
        let job = RunConfig::default().job(Record::NOTHING).unwrap();
        assert_eq!(job.options.scheme, Scheme::Deo { window: 7 });
        assert_eq!(job.chains, 16);
        assert_eq!(
            job.target.downcast_ref::<crate::targets::Modes2dTarget>(),
            Some(&Toy::modes2d(2.0))
        );
    }

    #[test]
    fn errors_name_the_field_and_the_range() {
        let c = RunConfig {
            swap_rate: 1.5,
            ..RunConfig::default()
        };
        let e = c.job(Record::NOTHING).unwrap_err();
        assert_eq!(e.field, "swap_rate");
        assert!(e.to_string().contains("--swap-rate"), "{e}");
        assert!(e.to_string().contains("between 0 and 1"), "{e}");
        let c = RunConfig {
            chains: 1,
            ..RunConfig::default()
        };
        assert!(
            c.job(Record::NOTHING)
                .unwrap_err()
                .to_string()
                .contains("between 2 and 65536")
        );
        let c = RunConfig {
            eta_min: 0.6,
            eta_max: 0.003,
            ..RunConfig::default()
        };
        assert_eq!(c.job(Record::NOTHING).unwrap_err().field, "eta_max");
    }

    #[test]
    fn toml_round_trip_and_unknown_keys() {
        let c = RunConfig::from_toml_for("chains = 8\nwindow = \"paper\"\nswap_rate = 0.3\n", None)
            .unwrap();
        assert_eq!(c.chains, 8);
        assert_eq!(c.window, WindowSpec::Paper);
        let c = RunConfig::from_toml_for("window = 4", None).unwrap();
        assert_eq!(c.window, WindowSpec::Fixed(4));
        let e = RunConfig::from_toml_for("chians = 8", None).unwrap_err();
        assert!(e.message.contains("chians"), "{e}");
        // A type error names the key and the line.
        let e = RunConfig::from_toml_for("seed = 1\nchains = \"many\"\n", None).unwrap_err();
        assert!(
            e.message.contains("line 2") && e.message.contains("chains"),
            "{e}"
        );
        assert!(RunConfig::from_toml_for("window = 0", None).is_err());
        let text = toml::to_string(&RunConfig::default()).unwrap();
        assert_eq!(
            RunConfig::from_toml_for(&text, None).unwrap(),
            RunConfig::default()
        );
    }

    #[test]
    fn the_math_key() {
        assert_eq!(RunConfig::default().math, MathKind::Exact);
        let c = RunConfig::from_toml_for("math = \"fast\"", None).unwrap();
        assert_eq!(c.math, MathKind::Fast);
        assert_eq!(c.math.mode(), nrpt_cuda::MathMode::Fast);
        assert_eq!(
            RunConfig::from_toml_for("math = \"fma\"", None)
                .unwrap()
                .math,
            MathKind::Fma
        );
        // A bad value is a configuration error naming the key.
        let e = RunConfig::from_toml_for("seed = 1\nmath = \"fastest\"\n", None).unwrap_err();
        assert!(
            e.message.contains("math") && e.message.contains("line 2"),
            "{e}"
        );
        // The default is not written out; fast is, and reads back.
        let text = toml::to_string(&RunConfig::default()).unwrap();
        assert!(!text.contains("math"), "{text}");
        let fast = RunConfig {
            math: MathKind::Fast,
            ..RunConfig::default()
        };
        let text = toml::to_string(&fast).unwrap();
        assert_eq!(RunConfig::from_toml_for(&text, None).unwrap(), fast);
    }

    #[test]
    fn the_authors_preset_and_rule_keys() {
        let c =
            RunConfig::from_toml_for("preset = \"authors-code\"\niterations = 100", None).unwrap();
        let job = c.job(Record::NOTHING).unwrap();
        assert_eq!(job.options.rules, nrpt_core::Rules::AUTHORS_CODE);
        assert_eq!(job.iterations, 101);
        let c = RunConfig::from_toml_for(
            "preset = \"authors-code\"\nladder_update = \"in-place\"\ninclusive_iterations = false",
            None,
        )
        .unwrap();
        let job = c.job(Record::NOTHING).unwrap();
        assert_eq!(
            job.options.rules.ladder_update,
            nrpt_core::rules::LadderUpdate::InPlace
        );
        assert_eq!(job.iterations, 20_000);
        // Rounding that collapses the ladder is an error naming the key.
        let c = RunConfig {
            ladder_decimals: Some(1),
            ..RunConfig::default()
        };
        assert_eq!(c.job(Record::NOTHING).unwrap_err().field, "ladder_decimals");
        assert!(RunConfig::from_toml_for("preset = \"authors\"", None).is_err());
        let text = toml::to_string(&RunConfig {
            preset: Preset::AuthorsCode,
            sweep_order: Some(SweepOrderKind::Simultaneous),
            ..RunConfig::default()
        })
        .unwrap();
        assert!(text.contains("preset = \"authors-code\""), "{text}");
        assert_eq!(
            RunConfig::from_toml_for(&text, None).unwrap().sweep_order,
            Some(SweepOrderKind::Simultaneous)
        );
    }

    /// A classifier target takes its own defaults for the keys a file leaves out, and
    /// its rates per example become the energy's units.
    #[test]
    fn classifier_defaults_and_units() {
        let c =
            RunConfig::from_toml_for("target = \"classifier\"\nhidden = [16]\nchains = 4", None)
                .unwrap();
        assert_eq!((c.eta_min, c.eta_max, c.swap_rate), (0.005, 0.02, 0.1));
        assert_eq!(
            (c.hidden.clone(), c.chains, c.explorer),
            (vec![16], 4, ExplorerKind::Msgd)
        );
        let job = c.job(Record::NOTHING).unwrap();
        let n = 1348.0;
        assert!((job.options.ladder_min - 0.005 / n).abs() < 1e-15);
        assert!((job.options.initial_buffer - 0.1 * n).abs() < 1e-9);
        assert_eq!(job.target.dim(), 65 * 16 + 17 * 10);
        assert_eq!(job.target.name(), "classifier");
        assert_eq!(job.target.energy_scale(), n);
        // A flag's target wins over the file's, and the toy keeps its defaults.
        let classifier = Some(TargetName::new("classifier"));
        let t = RunConfig::from_toml_for("chains = 4", classifier).unwrap();
        assert_eq!(t.eta_max, 0.02);
        assert_eq!(
            RunConfig::from_toml_for("chains = 4", None)
                .unwrap()
                .eta_max,
            0.6
        );
        let e = RunConfig {
            target: TargetName::new("classifier"),
            batch: 0,
            ..RunConfig::defaults_for(TargetName::new("classifier"))
        };
        assert_eq!(e.job(Record::NOTHING).unwrap_err().field, "batch");
    }

    #[test]
    fn window_specs_parse() {
        assert_eq!("opt".parse(), Ok(WindowSpec::Optimal));
        assert_eq!("8".parse(), Ok(WindowSpec::Fixed(8)));
        assert!("0".parse::<WindowSpec>().is_err());
        assert!("eight".parse::<WindowSpec>().is_err());
    }
}
