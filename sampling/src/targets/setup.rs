//! From a configuration to a job: the target's defaults under a configuration file and
//! the flags, every check, the memory estimate, and the settings a run does not use.
//! (The configuration itself, `crate::config`, knows no target but by its name: the
//! registry above it, `crate::targets`, gives every name its meaning.)

use std::sync::Arc;

use nrpt_core::adapt::{AdaptOptions, StepSchedule};
use nrpt_core::driver::{InitialStates, Temperatures, TemperingOptions};
use nrpt_core::explore::Explorer;
use nrpt_core::swap::SwapRule;
use serde::Deserialize;

use super::{Builtin, Method, lookup};
use crate::config::{
    ExplorerKind, KEYS, MAX_CSV_DIM, RUN_MEMORY_ADVICE, RuleKind, RunConfig, TargetName, TargetUse,
};
use crate::engine::{AnyTarget, Job, Record};
use crate::error::{ConfigError, in_range, learning_rates, non_negative, positive};
use crate::limits::{MAX_CHAINS, MAX_VALUES};

impl RunConfig {
    /// The defaults for a target: the paper's 2D settings, with the target's own over
    /// them (its registration's `defaults`; a classifier's are the deep experiment's).
    pub fn defaults_for(target: TargetName) -> Self {
        let base = RunConfig {
            target: target.clone(),
            ..RunConfig::default()
        };
        // An unknown name keeps the 2D settings; `job` refuses it, naming the targets.
        match target.builtin() {
            Some(b) => (b.defaults)(base),
            None => base,
        }
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
            (None, None) => TargetName::default(),
        };
        let mut base = toml::Table::try_from(RunConfig::defaults_for(kind))
            .map_err(|e| error(e.to_string()))?;
        base.extend(table);
        RunConfig::deserialize(base).map_err(|e| error(e.message().to_string()))
    }

    /// Checks every field and turns the configuration into a job (a job too large for
    /// `--max-memory` is refused with `nrpt run`'s advice of what to lower).
    pub fn job(&self, record: Record) -> Result<Job, ConfigError> {
        self.job_advising(record, RUN_MEMORY_ADVICE)
    }

    /// [`RunConfig::job`] for a command with other flags: a job too large for
    /// `--max-memory` is refused with `advice`, the flags of that command to lower
    /// (`--ensembles or --iterations`).
    pub fn job_advising(&self, record: Record, advice: &str) -> Result<Job, ConfigError> {
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
        learning_rates(self.eta_min, self.eta_max, self.momentum)?;
        non_negative("buffer", self.buffer)?;
        non_negative("noise", self.noise)?;
        positive("gamma_a", self.gamma_a)?;
        positive("gamma_alpha", self.gamma_alpha)?;
        positive("gamma_b", self.gamma_b)?;
        positive("buffer_scale", self.buffer_scale)?;
        let builtin = lookup(&self.target)?;
        if self.exact || self.quick {
            return Err(ConfigError::new(
                if self.exact { "exact" } else { "quick" },
                format!(
                    "exact tempering of a posterior runs with `nrpt run --target classifier                      --exact`, not on the SGD engine (target {})",
                    self.target
                ),
            ));
        }
        self.check_exact_keys()?;
        builtin.check_args(self)?;
        let target: Arc<dyn AnyTarget> = (builtin.build)(self)?;
        check_memory(self, builtin, &record, target.dim())?;
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
        let resolved = self
            .rule_choices()
            .resolve_for(builtin.keys.contains(&"hidden"));
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
            ExplorerKind::Mala | ExplorerKind::Hmc => return Err(self.exact_explorer_refused()),
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
            rules: crate::preset::for_rate_scale(resolved.rules, scale),
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
        crate::engine::memory::check(&self.footprint(&job), advice)
            .map_err(|m| ConfigError::new("max_memory", m))?;
        Ok(job)
    }

    /// Refuses what only exact tempering reads, on an SGD target: an exact explorer
    /// (`mala`, `hmc`), `explorer_steps`, `leapfrog_steps` or `reference` other than
    /// their defaults.
    fn check_exact_keys(&self) -> Result<(), ConfigError> {
        if self.explorer.is_exact() {
            return Err(self.exact_explorer_refused());
        }
        let d = RunConfig::default();
        for (key, changed) in [
            ("explorer_steps", self.explorer_steps != d.explorer_steps),
            ("leapfrog_steps", self.leapfrog_steps != d.leapfrog_steps),
            ("reference", self.reference != d.reference),
        ] {
            if changed {
                return Err(ConfigError::new(
                    key,
                    format!(
                        "applies to exact tempering (--target gaussian-path, or a classifier \
                         with --exact); target {} takes one step of `sgd`, `sgld` or `msgd` \
                         per iteration",
                        self.target
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The error of an exact tempering explorer (`mala`, `hmc`) on an SGD target.
    fn exact_explorer_refused(&self) -> ConfigError {
        ConfigError::new(
            "explorer",
            format!(
                "`{}` explores exact tempering's levels: use it with --target gaussian-path; \
                 target {} takes `sgd`, `sgld` or `msgd`",
                self.explorer.name(),
                self.target
            ),
        )
    }

    /// The memory of running `job` (made from this configuration) as `nrpt run` does:
    /// [`crate::engine::memory::of_job`] and the outputs it builds in memory
    /// (`commands::run::outputs`: the tables' columns, the samples' copy for
    /// `samples.npy` and its bytes, the CSV text, the summary).
    pub fn footprint(&self, job: &Job) -> crate::engine::memory::Footprint {
        use crate::engine::memory::{Phase, kept_samples, trace_entries};
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
            .saturating_add(if d <= MAX_CSV_DIM as u64 {
                m(&[samples, e, d.saturating_add(3)])
            } else {
                0
            });
        // What the outputs hold while they are written: the samples' table (three u64
        // columns, sample, iteration and ensemble, per row, and where samples.csv is
        // written the samples' values once more), the copy of the samples for
        // samples.npy, the final levels in the ensembles' table (P·D f32 per ensemble)
        // and its counters; then one file's bytes at a time: a table's CSV text, or
        // samples.npy.
        let samples_table = m(&[
            samples,
            e,
            if d <= MAX_CSV_DIM as u64 {
                4 * d + 24
            } else {
                24
            },
        ]);
        let tables = samples_table
            .saturating_add(m(&[samples, e, d, 4]))
            .saturating_add(m(&[e, p, d, 4]))
            .saturating_add(m(&[e, p, 64]));
        let file = m(&[csv_cells, 12]).max(m(&[samples, e, d, 4]));
        f.add_during(&[Phase::Writing], "outputs", tables.saturating_add(file));
        f
    }

    /// Settings that differ from the target's defaults but have no effect on this run
    /// (`dim` with `modes2d`, `momentum` without `msgd`, classifier keys on a toy
    /// target, `noise` on a classifier, whose noise comes from its mini-batches), as
    /// the TOML keys.
    pub fn ignored_settings(&self) -> Vec<&'static str> {
        let d = RunConfig::defaults_for(self.target.clone());
        let Some(b) = self.target.builtin() else {
            return Vec::new();
        };
        let uses = TargetUse {
            sgd: b.method == Method::Sgd,
            keys: b.keys,
            has_args: !b.args.is_empty(),
        };
        KEYS.iter()
            .filter(|k| !(k.used)(self, &uses) && (k.differs)(self, &d))
            .map(|k| k.name)
            .collect()
    }
}

fn check_memory(
    c: &RunConfig,
    builtin: &Builtin,
    record: &Record,
    dim: usize,
) -> Result<(), ConfigError> {
    let gib = |v: u128| v as f64 * 4.0 / f64::from(1u32 << 30);
    let states = c.chains as u128 * c.ensembles as u128 * dim as u128;
    if states > MAX_VALUES {
        // Blame what makes a chain large when one chain alone is (the network, or D).
        let one_chain_too_large = (dim as u128) * 2 > MAX_VALUES / c.chains as u128;
        let (field, lower) = if one_chain_too_large && builtin.keys.contains(&"hidden") {
            (
                "hidden",
                "smaller --hidden layers (a network of that many parameters does not fit)",
            )
        } else if one_chain_too_large && builtin.keys.contains(&"dim") {
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
