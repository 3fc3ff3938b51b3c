//! The built-in targets, each a [`Target`](crate::engine::Target) in its own file with
//! its registration ([`Builtin`]): the name the command line and configuration files use,
//! its help, its own defaults, the configuration keys it reads and how it is built.
//!
//! Adding a built-in target is one file (the target and its `Builtin`) and one line
//! in the [`builtins!`] list below; `docs/adding-a-target.md` walks through
//! [`mixture`] as the example. A user's own target needs none of this: it implements
//! [`Target`](crate::engine::Target) in the user's crate and goes into a
//! [`Job`](crate::engine::Job) directly (see `host/examples/own_target.rs`).

use std::fmt;
use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Serialize};

use crate::config::{ConfigError, RunConfig};
use crate::engine::AnyTarget;

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
    pub fn check_args(&self, config: &RunConfig) -> Result<(), ConfigError> {
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

/// The name of a built-in target: what `--target` and `target =` hold.
#[derive(Clone, Copy)]
pub struct TargetName(&'static Builtin);

impl TargetName {
    /// The target named `name`, if it is built in.
    pub fn named(name: &str) -> Option<TargetName> {
        BUILTIN
            .iter()
            .find(|b| b.name.eq_ignore_ascii_case(name.trim()))
            .map(TargetName)
    }

    /// The name of the registration `builtin`.
    pub const fn of(builtin: &'static Builtin) -> TargetName {
        TargetName(builtin)
    }

    /// The paper's 2D toy, the default.
    pub fn modes2d() -> TargetName {
        TargetName(&BUILTIN[0])
    }

    /// Its registration.
    pub fn builtin(self) -> &'static Builtin {
        self.0
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// Whether it reads the configuration key `key` (besides the sampler's own).
    pub fn reads(self, key: &str) -> bool {
        self.0.keys.contains(&key)
    }

    /// Whether the SGD tempering engines sample it (not exact tempering).
    pub fn sgd(self) -> bool {
        self.0.method == Method::Sgd
    }

    fn unknown(name: &str) -> String {
        let names: Vec<&str> = BUILTIN.iter().map(|b| b.name).collect();
        format!("`{name}` is not a target: use one of {}", names.join(", "))
    }
}

impl Default for TargetName {
    fn default() -> Self {
        TargetName::modes2d()
    }
}

impl PartialEq for TargetName {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for TargetName {}

impl fmt::Debug for TargetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TargetName({})", self.0.name)
    }
}

impl fmt::Display for TargetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

impl std::str::FromStr for TargetName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        TargetName::named(s).ok_or_else(|| TargetName::unknown(s))
    }
}

impl Serialize for TargetName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.name)
    }
}

impl<'de> Deserialize<'de> for TargetName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// Every name, as `--target` lists them.
static NAMES: LazyLock<Vec<TargetName>> =
    LazyLock::new(|| BUILTIN.iter().map(TargetName).collect());

impl clap::ValueEnum for TargetName {
    fn value_variants<'a>() -> &'a [Self] {
        &NAMES
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.name).help(self.0.about))
    }
}
