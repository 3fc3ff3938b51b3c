//! One validated run configuration, from a TOML file and command-line flags for the
//! same fields. Errors name the field (and its flag) and the allowed range.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use nrpt_core::adapt::{AdaptOptions, StepSchedule};
use nrpt_core::driver::{InitialStates, Temperatures, TemperingOptions};
use nrpt_core::explore::Explorer;
use nrpt_core::swap::SwapRule;
use nrpt_core::window::Scheme;
use serde::{Deserialize, Serialize};

use crate::engine::{AnyTarget, Job, Record};
use crate::targets::TargetName;

mod keys;
use crate::preset::RuleChoices;
pub use keys::{ChainsArg, KEYS, Key, RunConfig, RunFlags, TargetArgs};

/// A configuration error: which field, what is allowed, what was given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field} (--{flag}): {message}")]
pub struct ConfigError {
    /// Field name as in the TOML file.
    pub field: String,
    /// The matching command-line flag, without dashes.
    pub flag: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl ConfigError {
    /// An error for `field` (its flag is the field name with dashes).
    pub fn new(field: &str, message: impl Into<String>) -> Self {
        ConfigError {
            field: field.to_string(),
            flag: field.replace('_', "-"),
            message: message.into(),
        }
    }
}

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

/// The exploration kernel of the levels.
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
        }
    }
}

/// Checks that `value` lies in `lo ..= hi`; the error names `field`.
pub(crate) fn in_range<T: PartialOrd + fmt::Display + Copy>(
    field: &str,
    value: T,
    lo: T,
    hi: T,
) -> Result<(), ConfigError> {
    if value >= lo && value <= hi {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("must be between {lo} and {hi}, got {value}"),
        ))
    }
}

fn positive(field: &str, value: f64) -> Result<(), ConfigError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("must be a finite number > 0, got {value}"),
        ))
    }
}

fn non_negative(field: &str, value: f64) -> Result<(), ConfigError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("must be a finite number >= 0, got {value}"),
        ))
    }
}

/// What a run too large for `--max-memory` can lower.
pub const RUN_MEMORY_ADVICE: &str = "--ensembles, --chains or --iterations, raise --thin";

/// Largest P accepted.
pub const MAX_CHAINS: usize = 65_536;
/// Largest D accepted.
pub const MAX_DIM: usize = 1 << 20;

impl RunConfig {
    /// The defaults for a target: the paper's 2D settings, with the target's own over
    /// them (its registration's `defaults`; a classifier's are the deep experiment's).
    pub fn defaults_for(target: TargetName) -> Self {
        (target.builtin().defaults)(RunConfig {
            target,
            ..RunConfig::default()
        })
    }

    /// Reads a TOML file (every key optional; unknown keys are errors). Keys absent
    /// take the defaults of the file's `target` ([`RunConfig::defaults_for`]), or of
    /// `target` when given (a flag wins over the file).
    pub fn from_toml_for(text: &str, target: Option<TargetName>) -> Result<Self, ConfigError> {
        let error = |message: String| ConfigError {
            field: "config file".to_string(),
            flag: "config".to_string(),
            message,
        };
        // First read the text as it is, for errors that show the line, the column and
        // the key (toml's message with its snippet); the values that count come from
        // the merge below, with the target's own defaults for the keys left out.
        let _: RunConfig =
            toml::from_str(text).map_err(|e| error(e.to_string().trim_end().to_string()))?;
        let table: toml::Table = toml::from_str(text).map_err(|e| error(e.to_string()))?;
        let kind = match (target, table.get("target")) {
            (Some(t), _) => t,
            (None, Some(v)) => v
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| error(format!("target: {}", e.message())))?,
            (None, None) => TargetName::modes2d(),
        };
        let mut base = toml::Table::try_from(RunConfig::defaults_for(kind))
            .map_err(|e| error(e.to_string()))?;
        base.extend(table);
        RunConfig::deserialize(base).map_err(|e| error(e.message().to_string()))
    }

    /// [`RunConfig::from_toml_for`] with the file's own target.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        RunConfig::from_toml_for(text, None)
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

    /// The classifier of a `classifier` target: its data loaded and checked.
    pub fn model(&self) -> Result<crate::deep::Model, ConfigError> {
        let spec = crate::data::DataSpec::from_paths(
            self.data.as_deref(),
            self.labels.as_deref(),
            self.test_data.as_deref(),
            self.test_labels.as_deref(),
        )
        .map_err(|e| ConfigError::new("data", e.to_string()))?;
        let data = crate::data::load(&spec).map_err(|e| ConfigError::new("data", e.to_string()))?;
        crate::deep::Model::new(Arc::new(data), &self.hidden, self.batch, self.prior_sigma)
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
        }
    }

    /// Checks every field and turns the configuration into a job.
    pub fn job(&self, record: Record) -> Result<Job, ConfigError> {
        if self.auto_chains {
            return Err(ConfigError::new(
                "chains",
                "`auto` needs exact energies: use it with --target gaussian-path (for SGD \
                 explorers, `nrpt window -p P -s S` gives the window Lemma 1 recommends)",
            ));
        }
        in_range("chains", self.chains, 2, MAX_CHAINS)?;
        in_range("ensembles", self.ensembles, 1, 1 << 24)?;
        in_range("iterations", self.iterations, 1, 1 << 40)?;
        if !(self.swap_rate > 0.0 && self.swap_rate < 1.0) {
            return Err(ConfigError::new(
                "swap_rate",
                format!("must lie strictly between 0 and 1, got {}", self.swap_rate),
            ));
        }
        positive("eta_min", self.eta_min)?;
        positive("eta_max", self.eta_max)?;
        if self.eta_min >= self.eta_max {
            return Err(ConfigError::new(
                "eta_max",
                format!(
                    "must be larger than eta_min ({}), got {}",
                    self.eta_min, self.eta_max
                ),
            ));
        }
        if !(self.momentum.is_finite() && (0.0..1.0).contains(&self.momentum)) {
            return Err(ConfigError::new(
                "momentum",
                format!("must be in [0, 1), got {}", self.momentum),
            ));
        }
        non_negative("buffer", self.buffer)?;
        non_negative("noise", self.noise)?;
        positive("gamma_a", self.gamma_a)?;
        positive("gamma_alpha", self.gamma_alpha)?;
        positive("gamma_b", self.gamma_b)?;
        positive("buffer_scale", self.buffer_scale)?;
        let builtin = self.target.builtin();
        builtin.check_args(self)?;
        let target: Arc<dyn AnyTarget> = (builtin.build)(self)?;
        check_memory(self, &record, target.dim())?;
        let scale = target.energy_scale();
        if self.rule == RuleKind::Metropolis && self.explorer != ExplorerKind::Sgld {
            return Err(ConfigError::new(
                "rule",
                "`metropolis` needs known temperatures: use it with `--explorer sgld`",
            ));
        }
        if let Some(d) = self.ladder_decimals {
            in_range("ladder_decimals", d, 0, 12)?;
        }
        let resolved = self.rule_choices().resolve();
        let scheme = self.window.scheme(self.chains, self.swap_rate)?;
        let (explorer, temperatures) = match self.explorer {
            ExplorerKind::Sgd => (Explorer::Langevin, Temperatures::SgdExplorers),
            ExplorerKind::Sgld => (Explorer::Langevin, Temperatures::FollowLadder),
            ExplorerKind::Msgd => (
                Explorer::Momentum {
                    momentum: self.momentum,
                },
                Temperatures::SgdExplorers,
            ),
        };
        let options = TemperingOptions {
            scheme,
            rule: match self.rule {
                RuleKind::Buffered => SwapRule::Buffered,
                RuleKind::Metropolis => SwapRule::Metropolis,
            },
            explorer,
            temperatures,
            ladder_min: self.eta_min / scale,
            ladder_max: self.eta_max / scale,
            initial_buffer: self.buffer * scale,
            adapt: AdaptOptions {
                target_swap_rate: self.swap_rate,
                schedule: StepSchedule {
                    a: self.gamma_a,
                    alpha: self.gamma_alpha,
                    b: self.gamma_b,
                },
                adapt_ladder: self.adapt_ladder,
                adapt_buffer: self.adapt_buffer,
                buffer_scale: self.buffer_scale / scale,
            },
            rules: resolved.rules,
            init: InitialStates::Uniform {
                low: -1.0,
                high: 1.0,
            },
            seed: self.seed,
            ensemble: 0,
        };
        // Anything nrpt-core still rejects is reported with its own words; a ladder
        // that rounding collapses names the decimals.
        options
            .validate()
            .map_err(|e| ConfigError::new("config", e.to_string()))?;
        let mut ladder = vec![0.0; self.chains];
        nrpt_core::adapt::initial_ladder(
            options.rules.initial_ladder,
            self.eta_min / scale,
            self.eta_max / scale,
            &mut ladder,
        )
        .map_err(|e| ConfigError::new("ladder_decimals", e.to_string()))?;
        let job = Job {
            options,
            target,
            chains: self.chains,
            ensembles: self.ensembles,
            iterations: self.iterations + u64::from(resolved.inclusive_iterations),
            record,
            initial_states: None,
        };
        crate::engine::memory::check(&self.footprint(&job), RUN_MEMORY_ADVICE)
            .map_err(|m| ConfigError::new("max_memory", m))?;
        Ok(job)
    }

    /// The memory of running `job` (made from this configuration) as `nrpt run` does:
    /// [`crate::engine::memory::of_job`] and the outputs it builds in memory (CSV text,
    /// the `.npy` bytes, the summary).
    pub fn footprint(&self, job: &Job) -> crate::engine::memory::Footprint {
        use crate::engine::memory::{kept_samples, trace_entries};
        let mut f = crate::engine::memory::of_job(job);
        let (e, p, d) = (
            job.ensembles as u64,
            job.chains as u64,
            job.target.dim() as u64,
        );
        let (samples, entries) = (kept_samples(job), trace_entries(job));
        let m = |v: &[u64]| v.iter().fold(1u64, |a, &b| a.saturating_mul(b));
        // About 12 bytes of text per CSV cell (measured: 7 to 13).
        let csv_cells = m(&[entries, p.saturating_add(4)])
            .saturating_add(m(&[entries, m(&[2, p]).saturating_add(1)]))
            .saturating_add(if d <= crate::commands::run::MAX_CSV_DIM as u64 {
                m(&[samples, e, d.saturating_add(3)])
            } else {
                0
            });
        let outputs = m(&[csv_cells, 12])
            .saturating_add(m(&[samples, e, d, 4]))
            .saturating_add(m(&[e, p, 64]));
        f.add("outputs", outputs);
        f
    }
}

/// The most f32 values a run may hold in its chain states, or in its kept samples
/// (2³¹, 8 GiB): beyond, the configuration is refused before anything is allocated.
pub const MAX_VALUES: u128 = 1 << 31;

fn check_memory(c: &RunConfig, record: &Record, dim: usize) -> Result<(), ConfigError> {
    let gib = |v: u128| v as f64 * 4.0 / f64::from(1u32 << 30);
    let states = c.chains as u128 * c.ensembles as u128 * dim as u128;
    if states > MAX_VALUES {
        // Blame what makes a chain large when one chain alone is (the network, or D).
        let one_chain_too_large = (dim as u128) * 2 > MAX_VALUES / c.chains as u128;
        let (field, lower) = if one_chain_too_large && c.target.reads("hidden") {
            (
                "hidden",
                "smaller --hidden layers (a network of that many parameters does not fit)",
            )
        } else if one_chain_too_large && c.target.reads("dim") {
            ("dim", "a smaller --dim")
        } else {
            ("ensembles", "lower --ensembles or --chains")
        };
        return Err(ConfigError::new(
            field,
            format!(
                "{} chains × {} ensembles × {dim} coordinates = {states} state values \
                 ({:.1} GiB): more than the {MAX_VALUES} accepted; {lower}",
                c.chains,
                c.ensembles,
                gib(states)
            ),
        ));
    }
    let iterations = u128::from(c.iterations);
    let (thin, warmup) = (u128::from(record.thin), u128::from(record.warmup));
    let kept = if thin == 0 || iterations <= warmup {
        0
    } else {
        (iterations - warmup).div_ceil(thin)
    };
    let values = kept * c.ensembles as u128 * dim as u128;
    if values > MAX_VALUES {
        return Err(ConfigError::new(
            "thin",
            format!(
                "keeps {kept} samples × {} ensembles × {dim} coordinates = {values} values \
                 ({:.1} GiB): more than the {MAX_VALUES} accepted; raise --thin or --warmup, \
                 or lower --iterations",
                c.ensembles,
                gib(values)
            ),
        ));
    }
    Ok(())
}

impl RunConfig {
    /// Settings that differ from the target's defaults but have no effect on this run
    /// (`dim` with `modes2d`, `momentum` without `msgd`, classifier keys on a toy
    /// target, `noise` on a classifier, whose noise comes from its mini-batches), as
    /// the TOML keys.
    pub fn ignored_settings(&self) -> Vec<&'static str> {
        let d = RunConfig::defaults_for(self.target);
        KEYS.iter()
            .filter(|k| !(k.used)(self) && (k.differs)(self, &d))
            .map(|k| k.name)
            .collect()
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
        let c = RunConfig::from_toml("chains = 8\nwindow = \"paper\"\nswap_rate = 0.3\n").unwrap();
        assert_eq!(c.chains, 8);
        assert_eq!(c.window, WindowSpec::Paper);
        let c = RunConfig::from_toml("window = 4").unwrap();
        assert_eq!(c.window, WindowSpec::Fixed(4));
        let e = RunConfig::from_toml("chians = 8").unwrap_err();
        assert!(e.message.contains("chians"), "{e}");
        // A type error names the key and the line.
        let e = RunConfig::from_toml("seed = 1\nchains = \"many\"\n").unwrap_err();
        assert!(
            e.message.contains("line 2") && e.message.contains("chains"),
            "{e}"
        );
        assert!(RunConfig::from_toml("window = 0").is_err());
        let text = toml::to_string(&RunConfig::default()).unwrap();
        assert_eq!(RunConfig::from_toml(&text).unwrap(), RunConfig::default());
    }

    #[test]
    fn the_authors_preset_and_rule_keys() {
        let c = RunConfig::from_toml("preset = \"authors-code\"\niterations = 100").unwrap();
        let job = c.job(Record::NOTHING).unwrap();
        assert_eq!(job.options.rules, nrpt_core::Rules::AUTHORS_CODE);
        assert_eq!(job.iterations, 101);
        let c = RunConfig::from_toml(
            "preset = \"authors-code\"\nladder_update = \"in-place\"\ninclusive_iterations = false",
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
        assert!(RunConfig::from_toml("preset = \"authors\"").is_err());
        let text = toml::to_string(&RunConfig {
            preset: Preset::AuthorsCode,
            sweep_order: Some(SweepOrderKind::Simultaneous),
            ..RunConfig::default()
        })
        .unwrap();
        assert!(text.contains("preset = \"authors-code\""), "{text}");
        assert_eq!(
            RunConfig::from_toml(&text).unwrap().sweep_order,
            Some(SweepOrderKind::Simultaneous)
        );
    }

    /// A classifier target takes its own defaults for the keys a file leaves out, and
    /// its rates per example become the energy's units.
    #[test]
    fn classifier_defaults_and_units() {
        let c = RunConfig::from_toml("target = \"classifier\"\nhidden = [16]\nchains = 4").unwrap();
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
        let classifier = TargetName::named("classifier");
        let t = RunConfig::from_toml_for("chains = 4", classifier).unwrap();
        assert_eq!(t.eta_max, 0.02);
        assert_eq!(RunConfig::from_toml("chains = 4").unwrap().eta_max, 0.6);
        let e = RunConfig {
            target: TargetName::named("classifier").unwrap(),
            batch: 0,
            ..RunConfig::defaults_for(TargetName::named("classifier").unwrap())
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
