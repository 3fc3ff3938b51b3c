//! Command-line arguments of `nrpt`, written for someone who has not read the paper.
//!
//! Kept whole past 600 lines: every command's flags in one declaration, so that names and
//! help are read and changed together.
// The doc comments here are `--help` text for a terminal, where `[64]` is a default value
// and `E[T]` an expectation, not links.
#![allow(rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use nrpt_sampling::config::WindowSpec;
pub use nrpt_sampling::config::{ChainsArg, RunFlags};

/// nrpt: non-reversible parallel tempering for multi-modal and stochastic posteriors.
///
/// Parallel tempering runs P chains ("replicas") on a ladder of learning rates: level 0
/// samples the target carefully, higher levels explore boldly, and neighbouring levels
/// swap states so that what the explorers find reaches the target level. nrpt
/// implements the windowed deterministic even–odd swaps (DEO_W) of Deng et al. (AAAI
/// 2023): even and odd pairs take turns in windows of W iterations, and the optimal
/// window W⋆ lets replicas travel the ladder in O(P log P) iterations instead of O(P²).
#[derive(Debug, Parser)]
#[command(name = "nrpt", version, propagate_version = true)]
pub struct Cli {
    /// No progress bar and no notes on stderr.
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
    /// Print one JSON object on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// The most memory a run may plan to use, checked before it starts (bytes, or with
    /// K, M, G, T: `512M`, `4G`); data files are capped at a quarter of it [three
    /// quarters of the machine's memory, or of its container's limit].
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_max_memory)]
    pub max_memory: Option<u64>,
    /// Read inputs that are not regular files: FIFOs (such as `<(zcat data.csv.gz)`) and
    /// devices. They are still size-capped, and Ctrl-C stops a wait for them.
    #[arg(long, global = true)]
    pub allow_special_files: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// A note for each spelling of the previous release met in the arguments (see
    /// [`crate::spellings`]), for stderr.
    #[arg(skip)]
    pub notes: Vec<String>,
}

fn parse_max_memory(text: &str) -> Result<u64, String> {
    let bytes = nrpt_sampling::limits::parse_size(text)?;
    if bytes < MIN_MAX_MEMORY {
        return Err(format!(
            "{text} is below {}, too little for any run",
            nrpt_sampling::limits::human(MIN_MAX_MEMORY)
        ));
    }
    Ok(bytes)
}

/// The smallest --max-memory accepted.
pub(crate) const MIN_MAX_MEMORY: u64 = 64 << 20;

/// Replace an existing output folder that nrpt did not write (see `--out`).
/// The command line's parser: [`Cli`] with `run --target`'s values listed from the
/// registry of targets (the configuration knows targets by name only).
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    Cli::command().mut_subcommand("run", |run| {
        run.mut_arg("target", |a| {
            a.value_parser(
                PossibleValuesParser::new(nrpt_sampling::targets::possible_values())
                    .map(|s| nrpt_sampling::config::TargetName::new(&s)),
            )
        })
    })
}

/// Parses `args` (the program's name first) with [`command`], old spellings first
/// rewritten into today's ([`crate::spellings::modernize`]; their notes in
/// [`Cli::notes`]).
pub fn try_parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::FromArgMatches;
    let (args, notes) = crate::spellings::modernize(args.into_iter().map(Into::into).collect());
    let matches = command().try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    cli.notes = notes;
    Ok(cli)
}

/// The most worker threads accepted by --threads.
pub const MAX_THREADS: usize = 1024;

/// Where and how the sampler runs: the flags of every command that runs it.
#[derive(Debug, Args, Clone, Copy)]
pub struct EngineArgs {
    /// Worker threads for the CPU engine, 1 to 1024 (default: one per core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    /// Where to run: `auto` (a GPU when one is there and the job suits it, else the
    /// CPU), `cpu` or `cuda`.
    #[arg(long, value_enum, default_value_t = BackendKind::Auto)]
    pub backend: BackendKind,
    /// Which GPU, for `--backend cuda` or `auto` (see `nrpt devices`).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub device: usize,
}

impl Default for EngineArgs {
    fn default() -> Self {
        EngineArgs {
            threads: None,
            backend: BackendKind::Auto,
            device: 0,
        }
    }
}

impl EngineArgs {
    /// The thread count, if one was given.
    pub fn threads(&self) -> Option<usize> {
        self.threads.map(usize::from)
    }
}

/// Which engine runs the sampler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    /// A GPU when one can be opened, else the CPU (the choice is reported).
    Auto,
    /// The CPU engine (all cores).
    Cpu,
    /// The CUDA engine (an error when no GPU can be opened).
    Cuda,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The optimal swap window W⋆ for P chains and a swap rate S, with the expected
    /// round-trip times of Lemma 1.
    ///
    /// A round trip is a replica travelling from the target level to the hottest level
    /// and back; the more round trips per iteration, the better the chains mix between
    /// modes. Treating every adjacent pair as swapping with probability S, Lemma 1
    /// gives the expected round-trip time for a window W; W⋆ minimizes it.
    Window(WindowArgs),
    /// Run the sampler with a configuration (file and/or flags) and write everything
    /// to an output folder.
    ///
    /// Writes summary.json, pairs.csv (per-pair swap statistics), trace.csv (round
    /// trips, buffer and swap rates over time), ladder.csv (learning rates over time),
    /// and the target-level samples as samples.csv and samples.npy.
    Run(Box<RunArgs>),
    /// Reproduce the paper's 2D experiment (its Figures 3–6): four methods on the
    /// 25-mode target, a sweep of the target swap rate S and of the window W.
    ///
    /// Methods: 16 independent SGLD chains (SGLD×P16); one cyclical-SGLD chain with 16×
    /// the iterations (cycSGLD×T16); tempering with 16 SGD explorers and vanilla DEO
    /// swaps (DEO-SGD×P16, W = 1); the same with the optimal window (DEO⋆-SGD×P16).
    /// Prints a table, writes figures (PNG and SVG, each with its data as CSV) and
    /// results.json to the output folder.
    Reproduce(ReproduceArgs),
    /// The paper's deep-learning comparison at toy scale (its Table 2 and Figure 7): a
    /// Bayesian classifier on a real dataset (the UCI handwritten digits by default,
    /// MNIST-1D with `--dataset mnist1d`), sampled by tempered momentum-SGD chains with
    /// the optimal window (DEO⋆) and with W = 1 (DEO), against an mSGD ensemble,
    /// cyclical SGHMC and SWAG on equal gradient budgets, all started from pre-trained
    /// networks.
    ///
    /// Beside them: DEO⋆ with an SGHMC target level (one that samples), cyclical SGHMC
    /// and MultiSWAG from as many pre-trained networks as DEO⋆ has chains, and, when
    /// the reference stores single draws, exact sampling: model averages of as many of
    /// the reference's own HMC draws as the methods keep. Prints, for the pre-trained networks and each method's Bayesian model average,
    /// the test accuracy, negative log-likelihood and calibration error and, against a
    /// reference posterior (`nrpt reference`; bundled for the default model on the
    /// digits), the agreement of top classes and the total variation: each the mean ±
    /// sd over seeds with a 95 % paired-bootstrap interval over test examples, and the
    /// NLL and total variation paired against DEO⋆'s, over the test examples and over
    /// the seeds; each method's predictive entropy, mini-batch gradients per seed
    /// (pre-training counted) and total variation in excess of exact sampling's at the
    /// same number of samples; round trips per 100 epochs over the whole run and after
    /// the burn-in with Lemma 1's prediction at the measured swap rates, and the swap
    /// rates. Learning rates follow `--eta-rule` (scaled to the paper's SGD temperature
    /// by default). Writes results.json, table.csv, curves of the scores against the
    /// samples averaged and figures (round trips against epochs, accuracy by level,
    /// learning rates, swap rates, total variation against samples; PNG and SVG with
    /// CSV) to the output folder.
    Deep(Box<DeepArgs>),
    /// A reference posterior for `nrpt deep`: full-batch Hamiltonian Monte Carlo on the
    /// classifier's posterior (the same data, network and prior), several chains from
    /// independent starts, step size adapted in a warm-up that is discarded.
    ///
    /// Writes reference.npy (the posterior predictive on the test set, examples ×
    /// classes), draws.npy.gz (the predictives of `--draws` single draws, for `nrpt
    /// deep`'s exact-sampling row) and reference.json (settings, R̂ and effective
    /// sample sizes of the test log-likelihood and the predictive probabilities,
    /// acceptance, accuracy, NLL, seconds, command, machine, date) to the output
    /// folder, and a trace figure of the test log-likelihood of every chain. `nrpt deep
    /// --reference DIR` scores against it; the reference of the default model and data
    /// is bundled.
    Reference(Box<ReferenceArgs>),
    /// Measure the engine's speed in chain-steps per second.
    ///
    /// One chain-step is one exploration step of one chain with its share of the
    /// energy, swap, adaptation and book-keeping work. On the GPU (`--backend cuda`)
    /// every math mode is timed by CUDA events around the iterations alone (the median
    /// of 3 runs after a warm-up; set-up, uploads and downloads reported apart as end
    /// to end), each against its own target.
    Bench(BenchArgs),
    /// List the GPUs the CUDA engine can use, or say plainly why there is none.
    Devices,
    /// Scaling study: expected round-trip time E[T] against the number of chains P and
    /// the window W, measured beside the model of Lemma 1, with log-log slopes.
    ///
    /// With `--target bernoulli` only the index process is simulated (swap indicators
    /// drawn with the given swap rates), fast enough for thousands of chains; with a
    /// target the full sampler runs. Each point runs until the standard error of its
    /// E[T] is below --target-se or the iteration cap is hit (reported). `--part i/n`
    /// runs every n-th point (for job arrays); `nrpt scale merge` joins the parts.
    Scale(ScaleArgs),
}

/// `nrpt window`.
#[derive(Debug, Args)]
pub struct WindowArgs {
    /// Number of chains P (at least 2).
    #[arg(long, short = 'p', value_name = "P")]
    pub chains: usize,
    /// Swap rate S of every adjacent pair, strictly between 0 and 1.
    #[arg(long, short = 's', value_name = "S")]
    pub swap_rate: f64,
}

/// `nrpt run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// A TOML file with any of the keys below (snake_case: swap_rate = 0.4, …).
    #[arg(long, short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Save the whole state every N iterations to `<out>.checkpoint` (atomically), so
    /// that a run killed at any point can be continued with --resume. CPU only.
    #[arg(long, value_name = "N")]
    pub checkpoint_every: Option<u64>,
    /// Continue the interrupted run whose output folder is DIR (from its
    /// `DIR.checkpoint`), with the configuration saved there: the outputs are the bits
    /// the run would have written uninterrupted. Other configuration flags must agree
    /// with the saved configuration.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// The configuration fields.
    #[command(flatten)]
    pub flags: RunFlags,
    /// Where it runs.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Treat warnings (non-finite energies, no samples, flags without effect) as
    /// errors: exit with status 1 after writing the outputs.
    #[arg(long)]
    pub strict: bool,
    /// Replace --out even when it holds files nrpt did not write (by default nrpt replaces
    /// only an empty folder or one it wrote itself, which its `.nrpt-output.json` lists).
    /// Never the root, the home folder, or a folder holding the current directory or an
    /// input.
    #[arg(long)]
    pub force: bool,
}

/// `nrpt reproduce`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ReproduceArgs {
    /// `merge`, or nothing to run the reproduction (or one shard of it).
    #[command(subcommand)]
    pub action: Option<ReproduceAction>,
    /// A fast version (fewer iterations and ensembles) that still shows the ordering.
    #[arg(long)]
    pub quick: bool,
    /// Independent ensembles per method (each from its own random stream), pooled for
    /// the metrics (default 5, 3 with --quick).
    #[arg(long, short = 'e', value_name = "E")]
    pub ensembles: Option<usize>,
    /// Iterations of each tempering run (default 20,000, 10,000 with --quick; the
    /// cyclical SGLD chain runs 16 times as many).
    #[arg(long, short = 'n', value_name = "N", alias = "iters")]
    pub iterations: Option<u64>,
    /// Output folder for figures, data and results.json.
    #[arg(
        long,
        short = 'o',
        value_name = "DIR",
        default_value = "nrpt-reproduce"
    )]
    pub out: PathBuf,
    /// Base random seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u32,
    /// Run only shard i of n (0 <= i < n), written i/n: a contiguous block of the
    /// ensembles (shard i of E gets ensembles ⌊iE/n⌋… , the first E mod n shards one
    /// more), each drawing the same numbers as in the whole run. The folder gets
    /// shard.json and records.json beside results of its ensembles; `nrpt reproduce
    /// merge` joins the shards' folders into the whole run's outputs. CPU engine only.
    /// (`nrpt scale` cuts its sweep with `--part i/n` instead.)
    #[arg(long, value_name = "i/n")]
    pub shard: Option<nrpt_studies::shard::Shard>,
    /// Floating-point math: `exact` (nrpt-core's bits on every engine, the default),
    /// `fma` (the CUDA kernels contract products; the CPU stays exact) or `fast` (FMA
    /// and the GPU's hardware log, sin/cos and rsqrt; on the CPU, FMA and shorter
    /// polynomials in the 2D toy's lane groups): no bit parity, the same statistics.
    #[arg(long, value_enum, value_name = "MODE")]
    pub math: Option<nrpt_sampling::config::MathKind>,
    /// Where it runs.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Replace --out even when it holds files nrpt did not write (by default nrpt replaces
    /// only an empty folder or one it wrote itself, which its `.nrpt-output.json` lists).
    /// Never the root, the home folder, or a folder holding the current directory or an
    /// input.
    #[arg(long)]
    pub force: bool,
}

/// Subcommands of `nrpt reproduce`.
#[derive(Debug, Subcommand)]
pub enum ReproduceAction {
    /// Join the folders of every shard of one reproduction (`--shard i/n`) into the
    /// outputs of the whole run: the same tables, results.json and figures, to the byte
    /// but for the seconds.
    Merge(ShardMergeArgs),
}

/// `nrpt reproduce merge` and `nrpt deep merge`.
#[derive(Debug, Args)]
pub struct ShardMergeArgs {
    /// The output folders of the shards, every shard of one run once, in any order.
    #[arg(required = true, value_name = "DIR")]
    pub inputs: Vec<PathBuf>,
    /// Output folder of the merged run [the command's: nrpt-reproduce, nrpt-deep].
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Replace --out even when it holds files nrpt did not write (by default nrpt replaces
    /// only an empty folder or one it wrote itself, which its `.nrpt-output.json` lists).
    /// Never the root, the home folder, or a folder holding the current directory or an
    /// input.
    #[arg(long)]
    pub force: bool,
}

impl ShardMergeArgs {
    /// `--out`, or `default`.
    pub(crate) fn out_or<'a>(&'a self, default: &'a str) -> &'a std::path::Path {
        self.out
            .as_deref()
            .unwrap_or_else(|| std::path::Path::new(default))
    }
}

/// `nrpt deep`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DeepArgs {
    /// `merge`, or nothing to run the comparison (or one shard of it).
    #[command(subcommand)]
    pub action: Option<DeepAction>,
    /// A short version that runs in under a minute on the digits: 3 ensembles, 1,300
    /// sampling iterations per chain (60 epochs of the digits), at most 1,300 of
    /// pre-training, 60 samples per method (as the full run).
    #[arg(long)]
    pub quick: bool,
    /// Independent ensembles: repetitions of every method, each from its own random
    /// stream (the tables' "mean ± sd over seeds" is over them; default 10, 3 with
    /// --quick).
    #[arg(long, short = 'e', value_name = "E")]
    pub ensembles: Option<usize>,
    /// Sampling epochs per chain (the single-chain methods run P times as many;
    /// default 200).
    #[arg(long, value_name = "E")]
    pub epochs: Option<f64>,
    /// The most epochs of pre-training: the length of its cosine learning-rate
    /// schedule, which stops early once the NLL on a validation split (every 10th
    /// training example) has not improved for --patience epochs (default 200).
    #[arg(long, value_name = "E")]
    pub pretrain_epochs: Option<f64>,
    /// Epochs without improvement of the validation NLL that end pre-training.
    #[arg(long, default_value_t = 20.0, value_name = "E")]
    pub patience: f64,
    /// Samples in every method's model average, per ensemble, collected after the burn-in
    /// (default 60, also with --quick).
    #[arg(long, value_name = "K")]
    pub samples: Option<usize>,
    /// Share of every method's sampling run before its first sample.
    #[arg(long, default_value_t = 0.25, value_name = "SHARE")]
    pub burn_in: f64,
    /// How --eta-min and --eta-max (the paper's numbers, for its N/B = 50,000/256)
    /// become this data set's: `temperature` multiplies them by 195.3/(N/B), so that
    /// SGD's noise η·N/(B(1 − μ)) is the paper's; `as-given` keeps them.
    #[arg(long, value_enum, default_value_t = nrpt_studies::deep::experiment::EtaRule::Temperature)]
    pub eta_rule: nrpt_studies::deep::experiment::EtaRule,
    /// Also run every sampling method with the learning rates times each of these
    /// factors (comma-separated), for the sensitivity to the rates.
    #[arg(long, value_name = "F1,F2,…")]
    pub eta_sweep: Option<String>,
    /// The rules of the tempering runs: `paper` (the default), or `authors-code` (the
    /// authors' deep `trainer.py`: one mini-batch shared by every chain, each chain's
    /// loss before its step as its energy, a sequential pass, rates rounded to 4
    /// decimals, an unprojected buffer).
    #[arg(long, value_enum, default_value_t = nrpt_sampling::preset::Preset::Paper)]
    pub preset: nrpt_sampling::preset::Preset,
    /// Overrides the preset's energies: each chain's own mini-batch after its step,
    /// with the prior (`after-step`), or the authors' `shared-batch`.
    #[arg(long, value_enum)]
    pub step_energy: Option<nrpt_sampling::preset::StepEnergyKind>,
    /// A reference posterior to score against (a folder written by `nrpt reference`
    /// for the same model). Default: the bundled one when it belongs to this model.
    #[arg(long, value_name = "DIR")]
    pub reference: Option<PathBuf>,
    /// Chains P of the tempering runs (and members of the ensemble).
    #[arg(long, short = 'p', default_value_t = 10, value_name = "P")]
    pub chains: usize,
    /// Target swap rate S of every adjacent pair (the window comes from the solver).
    #[arg(long, short = 's', default_value_t = 0.1, value_name = "S")]
    pub swap_rate: f64,
    /// Also run DEO⋆ at these target swap rates (comma-separated), for a sweep.
    #[arg(long, value_name = "S1,S2,…")]
    pub swap_sweep: Option<String>,
    /// Smallest learning rate, for the mean loss per example (the paper's units).
    #[arg(long, default_value_t = 0.005)]
    pub eta_min: f64,
    /// Largest learning rate, for the mean loss per example.
    #[arg(long, default_value_t = 0.02)]
    pub eta_max: f64,
    /// Hidden widths of the MLP, comma-separated (`0`: softmax regression).
    #[arg(long, default_value = "64", value_name = "H1,H2,…")]
    pub hidden: String,
    /// Examples per mini-batch.
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    /// Standard deviation of the Gaussian prior on every weight.
    #[arg(long, default_value_t = 1.0)]
    pub prior_sigma: f64,
    /// The data.
    #[command(flatten)]
    pub data: DataArgs,
    /// Output folder for results.json and the figures.
    #[arg(long, short = 'o', value_name = "DIR", default_value = "nrpt-deep")]
    pub out: PathBuf,
    /// Base random seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u32,
    /// Run only shard i of n (0 <= i < n), written i/n: a contiguous block of the
    /// ensembles (shard i of E gets ensembles ⌊iE/n⌋… , the first E mod n shards one
    /// more), every method of each ensemble drawing the same numbers as in the whole
    /// run. The folder gets shard.json and records.json beside the results of its
    /// ensembles; `nrpt deep merge` joins the shards' folders into the whole run's
    /// outputs. The tempering runs start from the pre-trained networks, which only the
    /// CPU engine takes, so shards run on the CPU as whole runs do. (`nrpt scale` cuts
    /// its sweep with `--part i/n` instead.)
    #[arg(long, value_name = "i/n")]
    pub shard: Option<nrpt_studies::shard::Shard>,
    /// Floating-point math: `exact` (nrpt-core's bits on every engine, the default),
    /// `fma` (the CUDA kernels contract products; the CPU stays exact) or `fast` (FMA
    /// and the GPU's hardware log, sin/cos and rsqrt; on the CPU, FMA and shorter
    /// polynomials in the 2D toy's lane groups): no bit parity, the same statistics.
    #[arg(long, value_enum, value_name = "MODE")]
    pub math: Option<nrpt_sampling::config::MathKind>,
    /// Where it runs.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Replace --out even when it holds files nrpt did not write (by default nrpt replaces
    /// only an empty folder or one it wrote itself, which its `.nrpt-output.json` lists).
    /// Never the root, the home folder, or a folder holding the current directory or an
    /// input.
    #[arg(long)]
    pub force: bool,
}

/// Subcommands of `nrpt deep`.
#[derive(Debug, Subcommand)]
pub enum DeepAction {
    /// Join the folders of every shard of one comparison (`--shard i/n`) into the
    /// outputs of the whole run: the same results.json, tables and figures, to the byte
    /// but for the seconds, the command line, the machine and the date. Reads the data
    /// and the reference posterior the shards name, at the same paths (relative ones
    /// from where the merge runs).
    Merge(ShardMergeArgs),
}

/// The data of a classifier: a bundled data set or the user's files.
#[derive(Debug, Args, Default)]
pub struct DataArgs {
    /// A bundled data set: `digits` (UCI handwritten digits, 1,348 training and 449
    /// test examples of 64 pixels; the default) or `mnist1d` (MNIST-1D, 12,800 training
    /// and 3,200 test signals of 40 values). Not with --data.
    #[arg(long, value_name = "NAME")]
    pub dataset: Option<nrpt_sampling::data::Bundled>,
    /// Training data: a CSV file (label in the last column; `.gz` accepted) or a
    /// `.npy` features file (with --labels). Default: the bundled data set of --dataset.
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
    /// Labels of a `.npy` --data file (a 1-D integer array).
    #[arg(long, value_name = "FILE")]
    pub labels: Option<PathBuf>,
    /// Test data in the same format (default: every 4th example of --data).
    #[arg(long, value_name = "FILE")]
    pub test_data: Option<PathBuf>,
    /// Labels of a `.npy` --test-data file.
    #[arg(long, value_name = "FILE")]
    pub test_labels: Option<PathBuf>,
}

impl DataArgs {
    /// What the flags name.
    pub fn spec(&self) -> Result<nrpt_sampling::data::DataSpec, nrpt_sampling::data::DataError> {
        nrpt_sampling::data::DataSpec::from_paths(
            self.dataset,
            self.data.as_deref(),
            self.labels.as_deref(),
            self.test_data.as_deref(),
            self.test_labels.as_deref(),
        )
    }

    /// The files the flags name (inputs an output folder must not hold).
    pub fn files(&self) -> Vec<PathBuf> {
        [&self.data, &self.labels, &self.test_data, &self.test_labels]
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }
}

/// `nrpt reference`.
#[derive(Debug, Args)]
pub struct ReferenceArgs {
    /// A short version: 2 chains of 50 warm-up and 100 kept trajectories of at most
    /// 64 leapfrog steps (a check, not a reference); flags given with it still count.
    #[arg(long)]
    pub quick: bool,
    /// Independent chains, 2 to 64 (at least 2, for R̂) [default: 4; 2 with --quick].
    #[arg(long, short = 'c', value_name = "N")]
    pub chains: Option<usize>,
    /// Warm-up trajectories per chain (step size adapted; discarded).
    #[arg(long, value_name = "N")]
    pub warmup: Option<u64>,
    /// Kept trajectories per chain.
    #[arg(long, value_name = "N")]
    pub samples: Option<u64>,
    /// Kept trajectories whose test predictives are also stored one by one
    /// (draws.npy.gz, the same number from every chain, evenly spaced): what `nrpt deep`
    /// scores as its exact-sampling row. Rounded down to a multiple of --chains (at
    /// least one per chain, at most every kept trajectory); 0 stores none.
    #[arg(long, value_name = "N", default_value_t = nrpt_studies::deep::reference::draws::DEFAULT_DRAWS)]
    pub draws: usize,
    /// Trajectory length τ = L·ε (Izmailov et al.: πσ/2 for a prior of scale σ).
    #[arg(long, value_name = "TAU", default_value_t = std::f64::consts::FRAC_PI_2)]
    pub trajectory_length: f64,
    /// The most leapfrog steps of a trajectory.
    #[arg(long, value_name = "L")]
    pub max_leapfrog_steps: Option<u32>,
    /// Acceptance rate the warm-up's step-size adaptation aims at.
    #[arg(long, default_value_t = 0.8)]
    pub target_acceptance: f64,
    /// Hidden widths of the MLP, comma-separated (`0`: softmax regression).
    #[arg(long, default_value = "64", value_name = "H1,H2,…")]
    pub hidden: String,
    /// Standard deviation of the Gaussian prior on every weight.
    #[arg(long, default_value_t = 1.0)]
    pub prior_sigma: f64,
    /// The data.
    #[command(flatten)]
    pub data: DataArgs,
    /// Output folder.
    #[arg(
        long,
        short = 'o',
        value_name = "DIR",
        default_value = "nrpt-reference"
    )]
    pub out: PathBuf,
    /// Random seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u32,
    /// Worker threads (chains run in parallel), 1 to 1024 (default: one per core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    /// Replace --out even when it holds files nrpt did not write (see `nrpt deep
    /// --force`).
    #[arg(long)]
    pub force: bool,
}

impl BenchArgs {
    /// E, P and N as given, or the defaults of the target (the toy's 256 × 16 × 2000
    /// would take minutes on the classifier).
    pub fn sizes(&self) -> (usize, usize, u64) {
        let mlp = self.target == BenchTarget::Classifier;
        (
            self.ensembles.unwrap_or(if mlp { 8 } else { 256 }),
            self.chains.unwrap_or(if mlp { 8 } else { 16 }),
            self.iterations.unwrap_or(if mlp { 200 } else { 2000 }),
        )
    }
}

/// `nrpt bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Ensembles E [256; classifier 8].
    #[arg(long, short = 'e', value_name = "E")]
    pub ensembles: Option<usize>,
    /// Chains per ensemble P [16; classifier 8].
    #[arg(long, short = 'p', value_name = "P")]
    pub chains: Option<usize>,
    /// Iterations [2000; classifier 200].
    #[arg(long, short = 'n', value_name = "N", alias = "iters")]
    pub iterations: Option<u64>,
    /// Swap window (a number, `opt`, `paper` or `seo`).
    #[arg(long, short = 'w', default_value = "opt")]
    pub window: WindowSpec,
    /// Use nrpt-core's scalar code only (no vectorized path), for comparison.
    #[arg(long)]
    pub scalar: bool,
    /// What is timed: `modes2d` (the 2D toy), `sum-modes` (the D-dimensional sum of
    /// modes, `--dim`; compare coordinate-steps with the toy's), the targets of `nrpt run`
    /// of those names; `bernoulli` (the index process alone, as `nrpt scale --target
    /// bernoulli`: reports pair-updates per second, one adjacent pair of one ensemble in
    /// one iteration) or `classifier` (the data target: momentum-SGD chains on an MLP
    /// over the UCI digits; reports chain-steps, examples and GFLOP/s beside the
    /// machine's large-matrix GFLOP/s).
    #[arg(long, value_enum, value_name = "NAME", default_value_t = BenchTarget::Modes2d)]
    pub target: BenchTarget,
    /// `bernoulli`: the simulator timed, as `nrpt scale --simulator` (`lanes` runs
    /// groups of 32 ensembles).
    #[arg(long, value_enum, value_name = "NAME",
          default_value_t = nrpt_studies::scale::Simulator::Bitsliced)]
    pub simulator: nrpt_studies::scale::Simulator,
    /// `sum-modes`: the dimension D, 1 to 1048576.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    pub dim: u32,
    /// `classifier`: hidden widths, comma-separated (`0` or empty: softmax regression).
    #[arg(long, default_value = "128", value_name = "H1,H2,…")]
    pub hidden: String,
    /// `classifier`: examples per mini-batch.
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    /// `classifier`: the size n of the n × n × n product that measures the machine's
    /// large-matrix GFLOP/s.
    #[arg(long, default_value_t = 2048, value_name = "N",
          value_parser = clap::value_parser!(u32).range(16..=16384))]
    pub machine_size: u32,
    /// Floating-point math: `exact` (nrpt-core's bits on every engine, the default),
    /// `fma` (the CUDA kernels contract products; the CPU stays exact) or `fast` (FMA
    /// and the GPU's hardware log, sin/cos and rsqrt; on the CPU, FMA and shorter
    /// polynomials in the 2D toy's lane groups): no bit parity, the same statistics.
    #[arg(long, value_enum, value_name = "MODE")]
    pub math: Option<nrpt_sampling::config::MathKind>,
    /// Where it runs.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// What `nrpt bench` measures (`--target`): a target of `nrpt run`, or the index process
/// of `nrpt scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchTarget {
    /// The full sampler on the paper's 25-mode 2D toy.
    Modes2d,
    /// The full sampler on the D-dimensional sum of modes (`--dim`).
    SumModes,
    /// The Bernoulli index process of `nrpt scale --target bernoulli`.
    Bernoulli,
    /// A classifier (MLP) on the UCI digits: the data target.
    Classifier,
}

/// `nrpt scale`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ScaleArgs {
    /// `merge`, or nothing to run a sweep.
    #[command(subcommand)]
    pub action: Option<ScaleAction>,
    /// The sweep.
    #[command(flatten)]
    pub sweep: SweepArgs,
}

/// Subcommands of `nrpt scale`.
#[derive(Debug, Subcommand)]
pub enum ScaleAction {
    /// Join the outputs of the parts of one sweep (`--part i/n`; folders or
    /// results.json files).
    Merge(MergeArgs),
}

/// `nrpt scale merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The parts' output folders (or their results.json).
    #[arg(required = true, value_name = "DIR")]
    pub inputs: Vec<PathBuf>,
    /// Output folder of the merged sweep.
    #[arg(long, short = 'o', value_name = "DIR", default_value = "nrpt-scale")]
    pub out: PathBuf,
    /// Replace --out even when it holds files nrpt did not write (by default nrpt replaces
    /// only an empty folder or one it wrote itself, which its `.nrpt-output.json` lists).
    /// Never the root, the home folder, or a folder holding the current directory or an
    /// input.
    #[arg(long)]
    pub force: bool,
}

/// A scaling sweep.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// What is simulated: `bernoulli` (the index process alone), `modes2d` or
    /// `sum-modes` (the full sampler on those targets of `nrpt run`), or `gaussian-path`
    /// (exact tempering, beside Lemma 1 and the limit 1/(2 + 2Λ)).
    #[arg(long, value_enum, value_name = "NAME",
          default_value_t = nrpt_studies::scale::SweepTarget::Bernoulli)]
    pub target: nrpt_studies::scale::SweepTarget,
    /// Chain counts: a list (8,16,64) or a geometric range (8..4096, doubling; 8..4096x4).
    #[arg(long, short = 'p', default_value = "8,16,32,64")]
    pub chains: String,
    /// Windows: numbers, `opt` (exact optimum) and `paper` (the paper's formula), comma-separated.
    #[arg(long, short = 'w', default_value = "1,opt")]
    pub window: String,
    /// Swap rates S (comma-separated); rejection rate r = 1 − S.
    #[arg(long, short = 's', default_value = "0.4")]
    pub swap_rate: String,
    /// A file of relative swap rates of the pairs (numbers separated by spaces, commas
    /// or lines), stretched over the P − 1 pairs and multiplied by S (`bernoulli` only:
    /// the samplers adapt their own rates).
    #[arg(long, value_name = "FILE")]
    pub rates_file: Option<PathBuf>,
    /// `bernoulli`: the simulator of the index process. Both simulate the same process
    /// with other random words (the same E[T] within its error); `lanes` is the one of
    /// earlier releases, `bitsliced` runs each group of 64 ensembles on one thread at a
    /// time.
    #[arg(long, value_enum, value_name = "NAME",
          default_value_t = nrpt_studies::scale::Simulator::Bitsliced)]
    pub simulator: nrpt_studies::scale::Simulator,
    /// Independent ensembles per point [bernoulli with the bitsliced simulator 128: two
    /// groups of 64, one per core of a two-core machine (give a multiple of 64 to use
    /// more cores); with lanes 32 for P ≤ 64, 16 for P ≤ 256, 8 beyond; modes2d and
    /// sum-modes 16; gaussian-path 8].
    #[arg(long, short = 'e', value_name = "E")]
    pub ensembles: Option<usize>,
    /// Stop a point once the standard error of its E[T] is below this share
    /// (`bernoulli`; the samplers run to --max-iterations).
    #[arg(long, default_value_t = 0.01)]
    pub target_se: f64,
    /// Most iterations measured per point (the cap is reported when hit)
    /// [bernoulli 100000000; modes2d, sum-modes and gaussian-path 20000, which run
    /// exactly that many].
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u64>,
    /// Iterations before measuring (default: twice Lemma 1's E[T] for `bernoulli`, a
    /// fifth of the cap for the full sampler).
    #[arg(long)]
    pub warmup: Option<u64>,
    /// Base seed (each point derives its own, so parts agree with whole sweeps).
    #[arg(long, default_value_t = 0)]
    pub seed: u32,
    /// Dimension of `sum-modes`.
    #[arg(long, default_value_t = 2)]
    pub dim: usize,
    /// Run only part i of n of the sweep (0 <= i < n), written i/n: the points i, i + n,
    /// i + 2n, … (interleaved, so that every part gets its share of the costly large-P
    /// points), each as in the whole sweep; `nrpt scale merge` joins the parts'
    /// results.json. (Not `--shard`, which in reproduce and deep runs a contiguous block
    /// of ensembles.)
    #[arg(long, value_name = "i/n")]
    pub part: Option<nrpt_studies::shard::Shard>,
    /// Output folder.
    #[arg(long, short = 'o', value_name = "DIR", default_value = "nrpt-scale")]
    pub out: PathBuf,
    /// Replace --out even when it holds files nrpt did not write (by default nrpt replaces
    /// only an empty folder or one it wrote itself, which its `.nrpt-output.json` lists).
    /// Never the root, the home folder, or a folder holding the current directory or an
    /// input.
    #[arg(long)]
    pub force: bool,
    /// Floating-point math: `exact` (nrpt-core's bits on every engine, the default),
    /// `fma` (the CUDA kernels contract products; the CPU stays exact) or `fast` (FMA
    /// and the GPU's hardware log, sin/cos and rsqrt; on the CPU, FMA and shorter
    /// polynomials in the 2D toy's lane groups): no bit parity, the same statistics.
    #[arg(long, value_enum, value_name = "MODE")]
    pub math: Option<nrpt_sampling::config::MathKind>,
    /// Where it runs.
    #[command(flatten)]
    pub engine: EngineArgs,
}
