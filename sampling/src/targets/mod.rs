//! The built-in targets, each a [`Target`](crate::engine::Target) in its own file with
//! its registration ([`Builtin`]): the name the command line and configuration files use,
//! its help, its own defaults, the configuration keys it reads and how it is built.
//!
//! Adding a built-in target is one file (the target and its `Builtin`) and one line
//! in the `builtins!` list below; `docs/src/contributing/adding-a-target.md` walks through
//! [`mixture`] as the example. A user's own target needs none of this: it implements
//! [`Target`](crate::engine::Target) in the user's crate and goes into a
//! [`Job`](crate::engine::Job) directly (see `host/examples/own_target.rs`).

use std::fmt;
use std::sync::Arc;

use crate::config::{RunConfig, TargetName};
use crate::engine::AnyTarget;
use crate::error::ConfigError;

/// Which engine samples a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Tempering with SGD explorers and the buffered (or Metropolis) swap rule: the
    /// CPU and CUDA engines of `nrpt run`.
    Sgd,
    /// Exact tempering on an annealing path (`commands::gaussian_path`).
    Exact,
}

/// A built-in target as the command line and configuration files know it.
#[derive(Clone, Copy)]
pub struct Builtin {
    /// The name of `--target` and of the TOML key `target`.
    pub name: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// Which engine samples it.
    pub method: Method,
    /// The configuration keys it reads besides the sampler's own (`dim`, `noise`,
    /// `data`, …): set for another target, they give a "has no effect" warning.
    pub keys: &'static [&'static str],
    /// Its own parameters, given as `--target-arg NAME=VALUE` (TOML: a table
    /// `[target_args]`), with their defaults.
    pub args: &'static [TargetArg],
    /// Its defaults, over the paper's 2D settings (`RunConfig::default()` with `target`
    /// set to it).
    pub defaults: fn(RunConfig) -> RunConfig,
    /// The target of a checked configuration (for [`Method::Sgd`]).
    pub build: fn(&RunConfig) -> Result<Arc<dyn AnyTarget>, ConfigError>,
}

/// A parameter of a built-in target of its own (not a configuration key of nrpt's).
#[derive(Clone, Copy, Debug)]
pub struct TargetArg {
    /// Its name in `--target-arg NAME=VALUE`.
    pub name: &'static str,
    /// Its value when not given.
    pub default: f64,
    /// One line for the help.
    pub help: &'static str,
}

impl Builtin {
    /// The value of the target's parameter `name` in `config` (its default when not
    /// given).
    pub fn arg(&self, config: &RunConfig, name: &str) -> f64 {
        config
            .target_args
            .get(name)
            .copied()
            .or_else(|| self.args.iter().find(|a| a.name == name).map(|a| a.default))
            .unwrap_or(f64::NAN)
    }

    /// Checks that every `--target-arg` of `config` is one of this target's.
    pub(crate) fn check_args(&self, config: &RunConfig) -> Result<(), ConfigError> {
        for name in config.target_args.keys() {
            if !self.args.iter().any(|a| a.name == name) {
                let known: Vec<&str> = self.args.iter().map(|a| a.name).collect();
                return Err(ConfigError {
                    field: "target_args".into(),
                    flag: "target-arg".into(),
                    message: if known.is_empty() {
                        format!("target {} takes no parameters, got `{name}`", self.name)
                    } else {
                        format!(
                            "target {} takes {}, not `{name}`",
                            self.name,
                            known.join(", ")
                        )
                    },
                });
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Builtin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builtin").field("name", &self.name).finish()
    }
}

/// Declares the modules of the built-in targets and lists their registrations, in the
/// order `--help` shows them.
macro_rules! builtins {
    ($($module:ident :: $registration:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// Every built-in target.
        pub const BUILTIN: &[Builtin] = &[$($module::$registration),*];
    };
}

mod setup;
pub mod toy;

builtins! {
    modes2d::MODES2D,
    sum_modes::SUM_MODES,
    classifier::CLASSIFIER,
    gaussian_path::GAUSSIAN_PATH,
    mixture::MIXTURE,
}

pub use classifier::Classifier;
pub use toy::{Modes2dTarget, SumModesTarget, Toy};

/// The registration of the target a configuration names, or an error that names the
/// built-in targets.
pub(crate) fn lookup(name: &TargetName) -> Result<&'static Builtin, ConfigError> {
    name.builtin().ok_or_else(|| {
        let names: Vec<&str> = BUILTIN.iter().map(|b| b.name).collect();
        ConfigError::new(
            "target",
            format!("`{name}` is not a target: use one of {}", names.join(", ")),
        )
    })
}

/// The names and help of every built-in target, as `--target` lists them.
pub fn possible_values() -> Vec<clap::builder::PossibleValue> {
    BUILTIN
        .iter()
        .map(|b| clap::builder::PossibleValue::new(b.name).help(b.about))
        .collect()
}

/// What the registry knows of a target's name.
impl TargetName {
    /// The name of the registration `builtin`.
    pub fn of(builtin: &Builtin) -> TargetName {
        TargetName::new(builtin.name)
    }

    /// Its registration, when it names a built-in target.
    pub(crate) fn builtin(&self) -> Option<&'static Builtin> {
        BUILTIN.iter().find(|b| b.name == self.as_str())
    }

    /// Whether the SGD tempering engines sample it (unknown names: yes, and they are
    /// refused when the run is built).
    pub fn sgd(&self) -> bool {
        self.builtin().is_none_or(|b| b.method == Method::Sgd)
    }

    /// Whether it reads the configuration key `key` (besides the sampler's own).
    pub fn reads(&self, key: &str) -> bool {
        self.builtin().is_some_and(|b| b.keys.contains(&key))
    }
}
