//! Every key of a run's configuration, declared once: its TOML key (the field name), its
//! flag (the name with dashes) and clap settings, its type and default, its help (the
//! doc comment, shown by `--help` and listed in `KEYS`), how a flag's value is applied,
//! and when the key is used (a key set to a value other than the target's default but
//! unused gives a "has no effect" warning). From this one list the [`keys!`] macro makes
//! [`RunConfig`], its `Default`, the flags [`RunFlags`] with [`RunFlags::apply`], and
//! [`KEYS`].

// The keys' doc comments are `--help` text for a terminal, where `[64]` is a default value,
// not a link.
#![allow(rustdoc::broken_intra_doc_links)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{
    ExplorerKind, MathKind, PrecisionKind, ReferenceKind, RuleKind, WindowSpec, parse_hidden,
};
use crate::data::Bundled;
use crate::error::ConfigError;
use crate::preset::{
    LadderUpdateKind, MomentumKind, PairEnergiesKind, Preset, ProjectionKind, StepEnergyKind,
    SweepOrderKind,
};

/// The name of the target of a run (`--target`, `target =`): a built-in target of
/// `crate::targets`, which gives it its meaning; the configuration holds the name only,
/// and an unknown one is refused when the run is built (naming the known ones).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TargetName(String);

impl TargetName {
    /// The name as given (trimmed, lower case).
    pub fn new(name: &str) -> TargetName {
        TargetName(name.trim().to_ascii_lowercase())
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for TargetName {
    /// The paper's 2D toy.
    fn default() -> Self {
        TargetName::new("modes2d")
    }
}

impl std::fmt::Display for TargetName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for TargetName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim().is_empty() {
            return Err("the target's name is empty".into());
        }
        Ok(TargetName::new(s))
    }
}

/// What the target of a configuration reads, as its registration says: for the keys'
/// `used` conditions (`crate::targets` fills it in).
#[derive(Clone, Copy, Debug)]
pub struct TargetUse {
    /// Whether the SGD tempering engines sample it (not exact tempering).
    pub sgd: bool,
    /// The configuration keys it reads besides the sampler's own.
    pub keys: &'static [&'static str],
    /// Whether it takes parameters of its own (`--target-arg`).
    pub has_args: bool,
}

impl TargetUse {
    /// Whether the target reads `key`.
    pub fn reads(&self, key: &str) -> bool {
        self.keys.contains(&key)
    }
}

/// One configuration key, as [`KEYS`] lists it.
#[derive(Clone, Copy)]
pub struct Key {
    /// The TOML key.
    pub name: &'static str,
    /// Its help text (as `--help` shows it).
    pub help: &'static str,
    /// Whether a configuration, of a target that reads what the second argument says,
    /// uses it.
    pub used: fn(&RunConfig, &TargetUse) -> bool,
    /// Whether two configurations differ in it.
    pub differs: fn(&RunConfig, &RunConfig) -> bool,
}

impl Key {
    /// The flag, with its dashes (`--swap-rate`), as [`RunFlags`] declares it (the key
    /// `target_args` is `--target-arg`).
    pub fn flag(&self) -> String {
        let flags = <RunFlags as clap::Args>::augment_args(clap::Command::new("run"));
        let long = flags
            .get_arguments()
            .find(|a| a.get_id() == self.name)
            .and_then(|a| a.get_long());
        match long {
            Some(long) => format!("--{long}"),
            None => format!("--{}", self.name.replace('_', "-")),
        }
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key").field("name", &self.name).finish()
    }
}

/// Makes the configuration, its flags and its key list from one declaration per key:
///
/// ```text
/// /// help
/// name: Type = default, [serde attributes], flag FlagType [clap attributes]
///     => |config, value| apply, used |config| condition;
/// ```
macro_rules! keys {
    ($(
        $(#[doc = $doc:literal])*
        $field:ident : $ty:ty = $default:expr,
        [$($serde:meta),*],
        flag $fty:ty [$($arg:tt)*] => $apply:expr,
        used $used:expr;
    )*) => {
        /// Every field of a run. Field names are the TOML keys; each has a flag with
        /// dashes. See `config::keys` for the declaration of each.
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct RunConfig {
            $(
                $(#[doc = $doc])*
                $(#[serde($serde)])*
                pub $field: $ty,
            )*
        }

        impl Default for RunConfig {
            /// The paper's 2D experiment with the optimal window, 5 ensembles.
            fn default() -> Self {
                RunConfig { $($field: $default,)* }
            }
        }

        /// The run configuration as flags; each overrides the same key of `--config`.
        /// Keys not given take the defaults of the target (`modes2d`: the paper's 2D
        /// settings; `classifier`: see `nrpt deep`), shown in brackets.
        #[derive(Debug, clap::Args, Default)]
        pub struct RunFlags {
            $(
                $(#[doc = $doc])*
                #[arg($($arg)*)]
                pub $field: Option<$fty>,
            )*
        }

        impl RunFlags {
            /// Applies every given flag on top of `c` (an error names a flag whose text
            /// does not parse).
            pub fn apply(&self, c: &mut RunConfig) -> Result<(), ConfigError> {
                $(
                    if let Some(v) = self.$field.clone() {
                        let apply: fn(&mut RunConfig, $fty) -> Result<(), ConfigError> = $apply;
                        apply(c, v)?;
                    }
                )*
                Ok(())
            }
        }

        /// Every configuration key, in the order of the declaration.
        pub const KEYS: &[Key] = &[$(
            Key {
                name: stringify!($field),
                help: concat!($($doc, "\n"),*),
                used: $used,
                differs: |a, b| a.$field != b.$field,
            },
        )*];
    };
}

/// A value for every configuration: applied as given.
macro_rules! set {
    ($field:ident) => {
        |c, v| {
            c.$field = v;
            Ok(())
        }
    };
    (Some $field:ident) => {
        |c, v| {
            c.$field = Some(v);
            Ok(())
        }
    };
}

/// Used by the SGD tempering engines (not by exact tempering).
fn sgd(c: &RunConfig, t: &TargetUse) -> bool {
    t.sgd && !c.exact
}

keys! {
    /// What to sample: one of the built-in targets listed below [modes2d]. Each takes
    /// its own defaults for the keys not given (a classifier's rates are per example).
    target: TargetName = TargetName::default(), [],
        flag TargetName [long, value_name = "NAME"] => set!(target),
        used |_, _| true;
    /// Dimension D of `sum-modes`, `mixture` and `gaussian-path` [2].
    dim: usize = 2, [],
        flag usize [long] => set!(dim),
        used |_, t| t.reads("dim");
    /// Chains per ensemble P, 2 to 65536 [16; classifier 10]; `auto` (gaussian-path)
    /// chooses P − 1 ≈ 2Λ̂ from a pilot run's communication barrier.
    chains: usize = 16, [],
        flag ChainsArg [long, short = 'p', value_name = "P"] => |c, v| {
            match v {
                ChainsArg::Count(p) => {
                    c.chains = p;
                    c.auto_chains = false;
                }
                ChainsArg::Auto => c.auto_chains = true,
            }
            Ok(())
        },
        used |c, _| !c.auto_chains;
    /// Choose P from a pilot run (gaussian-path; the flag is `--chains auto`).
    auto_chains: bool = false, [],
        flag bool [long, hide = true, value_name = "BOOL"] => set!(auto_chains),
        used |_, _| true;
    /// Independent ensembles E, run in parallel and pooled [5; classifier 3].
    ensembles: usize = 5, [],
        flag usize [long, short = 'e', value_name = "E"] => set!(ensembles),
        used |_, _| true;
    /// Iterations [20000; classifier 4000].
    iterations: u64 = 20_000, [],
        flag u64 [long, short = 'n', value_name = "N", alias = "iters"] => set!(iterations),
        used |_, _| true;
    /// Swap window: iterations (1 = vanilla DEO), `opt` (exact W⋆), `paper` (the
    /// paper's asymptotic formula) or `seo` (reversible baseline) [opt; gaussian-path 1].
    window: WindowSpec = WindowSpec::Optimal, [],
        flag WindowSpec [long, short = 'w'] => set!(window),
        used |_, _| true;
    /// Swap rule: `buffered` (for SGD explorers) or `metropolis` (needs sgld).
    rule: RuleKind = RuleKind::Buffered, [],
        flag RuleKind [long, value_enum] => set!(rule),
        used sgd;
    /// Target swap rate S, strictly between 0 and 1 [0.4; classifier 0.1].
    swap_rate: f64 = 0.4, [],
        flag f64 [long, short = 's', value_name = "S"] => set!(swap_rate),
        used sgd;
    /// Smallest learning rate (the target level), > 0 [0.003; classifier 0.005 per
    /// example].
    eta_min: f64 = 0.003, [],
        flag f64 [long] => set!(eta_min),
        used sgd;
    /// Largest learning rate (the hottest explorer), > eta-min [0.6; classifier 0.02].
    eta_max: f64 = 0.6, [],
        flag f64 [long] => set!(eta_max),
        used sgd;
    /// Explorers: `sgd` (the paper's), `sgld` or `msgd` (momentum); with gaussian-path
    /// (exact tempering) `mala` or `hmc` [sgd; classifier msgd; gaussian-path mala].
    explorer: ExplorerKind = ExplorerKind::Sgd, [],
        flag ExplorerKind [long, value_enum] => set!(explorer),
        used |_, _| true;
    /// gaussian-path: explorer transitions (MALA steps or HMC trajectories) per level and
    /// iteration, 1 to 1000 [1].
    explorer_steps: u32 = 1, [],
        flag u32 [long, value_name = "N"] => set!(explorer_steps),
        used |c, t| !t.sgd || c.exact;
    /// gaussian-path with `--explorer hmc`: leapfrog steps per HMC trajectory, 1 to 1024
    /// [10].
    leapfrog_steps: u32 = 10, [],
        flag u32 [long, value_name = "L"] => set!(leapfrog_steps),
        used |c, t| (!t.sgd || c.exact) && c.explorer == ExplorerKind::Hmc;
    /// Exact tempering (gaussian-path, classifier with --exact): the reference the levels
    /// anneal from, `fixed` (the path's own: the prior, N(0, I)), `variational` (a
    /// mean-field Gaussian fitted to the target level after every round, Surjanovic et al.
    /// 2022: a shorter path to the same target, the same log Z) or `stabilized` (both, as
    /// two legs of one ladder joined at the target, so that a poor fit cannot hurt;
    /// `--chains` then counts each leg's) [stabilized].
    reference: ReferenceKind = ReferenceKind::Stabilized, [skip_serializing_if = "ReferenceKind::is_default"],
        flag ReferenceKind [long, value_enum] => set!(reference),
        used |c, t| !t.sgd || c.exact;
    /// Classifier: exact tempering of the posterior instead of the SGD engine: from the
    /// prior, drawn exactly, to the posterior on the whole training set (full-batch
    /// gradients), with `hmc` (the default here) or `mala` explorers; reports Λ̂, the log
    /// evidence log Z and the test accuracy of the posterior samples [false].
    exact: bool = false, [skip_serializing_if = "std::ops::Not::not"],
        flag bool [long, num_args = 0..=1, default_missing_value = "true",
                   value_name = "BOOL"] => set!(exact),
        used |c, t| c.exact || t.reads("hidden");
    /// With --exact: a quick check, at most 8 chains, 2 ensembles and 128 iterations
    /// [false].
    quick: bool = false, [skip_serializing_if = "std::ops::Not::not"],
        flag bool [long, num_args = 0..=1, default_missing_value = "true",
                   value_name = "BOOL"] => set!(quick),
        used |c, _| c.exact;
    /// With --exact on the classifier: also estimate log Z by annealed importance
    /// sampling (Neal 2001) with this many independent particles, each annealed from the
    /// prior to the posterior, and say whether the two estimates agree within their
    /// errors; 0: off [0].
    ais: usize = 0, [],
        flag usize [long, value_name = "PARTICLES"] => set!(ais),
        used |c, _| c.exact;
    /// With --ais: annealing steps K of every particle, on the schedule β_k = (k/K)^4, one
    /// explorer transition each (2 to 10000000) [2000].
    ais_steps: u32 = 2000, [],
        flag u32 [long, value_name = "K"] => set!(ais_steps),
        used |c, _| c.exact && c.ais > 0;
    /// Momentum of msgd, in [0, 1).
    momentum: f64 = 0.9, [],
        flag f64 [long] => set!(momentum),
        used |c, t| t.sgd && c.explorer == ExplorerKind::Msgd;
    /// Initial correction buffer C of the buffered rule, >= 0.
    buffer: f64 = 4.0, [],
        flag f64 [long] => set!(buffer),
        used |c, t| t.sgd && c.rule == RuleKind::Buffered;
    /// Noise scale of the stochastic gradients and energies, >= 0.
    noise: f64 = 2.0, [],
        flag f64 [long] => set!(noise),
        used |_, t| t.reads("noise");
    /// Adapt the learning-rate ladder (true/false).
    adapt_ladder: bool = true, [],
        flag bool [long] => set!(adapt_ladder),
        used sgd;
    /// Adapt the correction buffer (true/false).
    adapt_buffer: bool = true, [],
        flag bool [long] => set!(adapt_buffer),
        used sgd;
    /// Step sizes γ_k = a / (k^α + b): a.
    gamma_a: f64 = 50.0, [],
        flag f64 [long] => set!(gamma_a),
        used sgd;
    /// Step sizes: α.
    gamma_alpha: f64 = 0.8, [],
        flag f64 [long] => set!(gamma_alpha),
        used sgd;
    /// Step sizes: b.
    gamma_b: f64 = 500.0, [],
        flag f64 [long] => set!(gamma_b),
        used sgd;
    /// Scale of the buffer's updates.
    buffer_scale: f64 = 1.0, [],
        flag f64 [long] => set!(buffer_scale),
        used |c, t| t.sgd && c.rule == RuleKind::Buffered && c.adapt_buffer;
    /// Random seed (0 to 4294967295).
    seed: u32 = 0, [],
        flag u32 [long] => set!(seed),
        used |_, _| true;
    /// The variant of the rules: `paper` (the default: the paper's equations) or
    /// `authors-code` (the authors' 2D notebook: fresh energies per pair test, one
    /// sequential pass, rounded initial ladder, unprojected buffer, iterations 0…N).
    /// The rule flags below override single rules of the preset.
    preset: Preset = Preset::Paper, [],
        flag Preset [long, value_enum] => set!(preset),
        used sgd;
    /// Energies of a pair test: one per level (`per-level`) or a fresh draw for each
    /// side of each test (`fresh-per-test`).
    pair_energies: Option<PairEnergiesKind> = None, [skip_serializing_if = "Option::is_none"],
        flag PairEnergiesKind [long, value_enum] => set!(Some pair_energies),
        used sgd;
    /// Pair tests from the pre-swap states (`simultaneous`) or in one pass that sees
    /// the swaps below (`sequential`).
    sweep_order: Option<SweepOrderKind> = None, [skip_serializing_if = "Option::is_none"],
        flag SweepOrderKind [long, value_enum] => set!(Some sweep_order),
        used sgd;
    /// Ladder update: from the previous ladder (`jacobi`) or in place, clamped
    /// (`in-place`).
    ladder_update: Option<LadderUpdateKind> = None, [skip_serializing_if = "Option::is_none"],
        flag LadderUpdateKind [long, value_enum] => set!(Some ladder_update),
        used sgd;
    /// Keep the buffer C ≥ 0 (`non-negative`) or not (`unprojected`).
    buffer_projection: Option<ProjectionKind> = None, [skip_serializing_if = "Option::is_none"],
        flag ProjectionKind [long, value_enum] => set!(Some buffer_projection),
        used sgd;
    /// A classifier's level energies: each chain's own mini-batch after its step, with
    /// the prior (`after-step`), or one mini-batch shared by every chain, the loss
    /// before the step, no prior (`shared-batch`, the authors' deep code).
    step_energy: Option<StepEnergyKind> = None, [skip_serializing_if = "Option::is_none"],
        flag StepEnergyKind [long, value_enum] => set!(Some step_energy),
        used |_, t| t.sgd && t.reads("hidden");
    /// msgd explorers after a swap: zero velocity (`reset`) or keep it (`carry`).
    momentum_on_swap: Option<MomentumKind> = None, [skip_serializing_if = "Option::is_none"],
        flag MomentumKind [long, value_enum] => set!(Some momentum_on_swap),
        used |c, t| t.sgd && c.explorer == ExplorerKind::Msgd;
    /// Round the initial learning rates to this many decimals (0: no rounding).
    ladder_decimals: Option<u8> = None, [skip_serializing_if = "Option::is_none"],
        flag u8 [long, value_name = "D"] => set!(Some ladder_decimals),
        used sgd;
    /// Run iterations 0…N inclusive (N + 1 of them), as the authors' loops do.
    inclusive_iterations: Option<bool> = None, [skip_serializing_if = "Option::is_none"],
        flag bool [long, value_name = "BOOL"] => set!(Some inclusive_iterations),
        used sgd;
    /// Classifier: a bundled data set, `digits` (UCI handwritten digits, 1,348 training
    /// examples) or `mnist1d` (MNIST-1D, 12,800 training examples of 40 values); not
    /// with --data [digits].
    dataset: Option<Bundled> = None, [skip_serializing_if = "Option::is_none"],
        flag Bundled [long, value_name = "NAME"] => set!(Some dataset),
        used |_, t| t.reads("dataset");
    /// Classifier: training data, CSV (label last; gzip accepted) or `.npy` features
    /// with --labels; a name without `.csv`/`.npy` (a pipe) is read as CSV, or as
    /// `.npy` with --labels (default: the bundled data set of --dataset).
    data: Option<PathBuf> = None, [skip_serializing_if = "Option::is_none"],
        flag PathBuf [long, value_name = "FILE"] => set!(Some data),
        used |_, t| t.reads("data");
    /// Classifier: labels of a `.npy` --data file.
    labels: Option<PathBuf> = None, [skip_serializing_if = "Option::is_none"],
        flag PathBuf [long, value_name = "FILE"] => set!(Some labels),
        used |_, t| t.reads("labels");
    /// Classifier: test data (default: every 4th example of --data).
    test_data: Option<PathBuf> = None, [skip_serializing_if = "Option::is_none"],
        flag PathBuf [long, value_name = "FILE"] => set!(Some test_data),
        used |_, t| t.reads("test_data");
    /// Classifier: labels of a `.npy` --test-data file.
    test_labels: Option<PathBuf> = None, [skip_serializing_if = "Option::is_none"],
        flag PathBuf [long, value_name = "FILE"] => set!(Some test_labels),
        used |_, t| t.reads("test_labels");
    /// Classifier: hidden widths, comma-separated (`0`: softmax regression) [64].
    hidden: Vec<usize> = vec![64], [],
        flag String [long, value_name = "H1,H2,…"] => |c, v| {
            c.hidden = parse_hidden(&v)?;
            Ok(())
        },
        used |_, t| t.reads("hidden");
    /// Classifier: examples per mini-batch [64].
    batch: usize = 64, [],
        flag usize [long] => set!(batch),
        used |_, t| t.reads("batch");
    /// Classifier: standard deviation of the Gaussian prior on every weight [1].
    prior_sigma: f64 = 1.0, [],
        flag f64 [long] => set!(prior_sigma),
        used |_, t| t.reads("prior_sigma");
    /// A parameter of the target's own, NAME=VALUE (repeat the flag for several; TOML:
    /// a table `[target_args]`); `mixture` takes `components` and `separation`.
    target_args: BTreeMap<String, f64> = BTreeMap::new(), [skip_serializing_if = "BTreeMap::is_empty"],
        flag Vec<TargetArgs> [long = "target-arg", value_name = "NAME=VALUE",
                              action = clap::ArgAction::Append] => |c, v| {
            for pair in v {
                c.target_args.extend(pair.0);
            }
            Ok(())
        },
        used |_, t| t.has_args;
    /// Floating-point math: `exact` (nrpt-core's bits on every engine), `fma` (the
    /// CUDA kernels contract products; the CPU stays exact) or `fast` (FMA and the GPU's
    /// hardware log, sin/cos and rsqrt; on the CPU, FMA and shorter polynomials in the
    /// 2D toy's lane groups): no bit parity, the same statistics [exact].
    math: MathKind = MathKind::Exact, [skip_serializing_if = "MathKind::is_exact"],
        flag MathKind [long, value_enum] => set!(math),
        used |_, _| true;
    /// How the CUDA engine stores states and momenta: `f32` (bit for bit the CPU's),
    /// `bf16` or `f16` (half the bytes of a memory-bound step at large D; the arithmetic
    /// stays f32, the rounded states part from the CPU's run: the same statistics, no
    /// bit parity). For sum-modes with D > 2 on a GPU; the CPU engine keeps f32 states
    /// and refuses the others [f32].
    precision: PrecisionKind = PrecisionKind::F32, [skip_serializing_if = "PrecisionKind::is_f32"],
        flag PrecisionKind [long, value_enum] => set!(precision),
        used |_, _| true;
    /// Keep a target-level sample every `thin` iterations (0: none) [10; classifier 20].
    thin: u64 = 10, [],
        flag u64 [long] => set!(thin),
        used sgd;
    /// Iterations before the first kept sample [100; classifier 400].
    warmup: u64 = 100, [],
        flag u64 [long] => set!(warmup),
        used sgd;
    /// Output folder [nrpt-out], replaced whole when the run ends: an empty folder or
    /// one nrpt wrote (see --force).
    out: PathBuf = PathBuf::from("nrpt-out"), [],
        flag PathBuf [long, short = 'o', value_name = "DIR"] => set!(out),
        used |_, _| true;
}

/// The value of `--chains`: a number or `auto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainsArg {
    /// P chains.
    Count(usize),
    /// Chosen by the run (gaussian-path).
    Auto,
}

impl std::str::FromStr for ChainsArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.eq_ignore_ascii_case("auto") {
            return Ok(ChainsArg::Auto);
        }
        s.parse()
            .map(ChainsArg::Count)
            .map_err(|_| format!("`{s}` is neither a number of chains nor `auto`"))
    }
}

/// The values of `--target-arg NAME=VALUE` (one pair per flag; the flag may repeat).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TargetArgs(pub BTreeMap<String, f64>);

impl std::str::FromStr for TargetArgs {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, value) = s
            .split_once('=')
            .ok_or_else(|| format!("`{s}` is not NAME=VALUE"))?;
        let v: f64 = value
            .trim()
            .parse()
            .map_err(|_| format!("`{value}` is not a number (in `{s}`)"))?;
        Ok(TargetArgs(BTreeMap::from([(name.trim().to_string(), v)])))
    }
}
