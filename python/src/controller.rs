//! nrpt-core's swap [`Controller`] for Python: owned buffers, a saved [`Progress`],
//! and the controller resumed over them for every call (the resume checks the state
//! and costs O(P), nothing beside a training step).
//!
//! Kept whole past 600 lines: one Python class (its methods are the class's API, which
//! PyO3 wants in one `#[pymethods]` block) and the state it saves.

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};
use serde::{Deserialize, Serialize};

use nrpt_core::driver::{
    Controller, ControllerBuffers, NonfinitePairs, Progress, TemperingOptions,
};
use nrpt_core::index::{PairStats, TripState};
use nrpt_core::rng::UnitDraw;
use nrpt_core::rules::{BufferProjection, LadderUpdate, PairEnergies};
use nrpt_core::swap::{SwapRule, flags};
use nrpt_sampling::config::{ConfigError, RunConfig};
use nrpt_sampling::engine::Record;

use crate::config::run_config;
use crate::convert::{array1, to_dict, to_py};
use crate::errors::{command_error, value_error};
use crate::saved;

/// The floating-point type of the energies (and of the swap rule's comparison).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    /// `f32`: the engines of the command line (`nrpt run`) compute in it.
    Float32,
    /// `f64`.
    Float64,
}

impl Dtype {
    pub fn parse(text: &str) -> PyResult<Self> {
        match text {
            "float32" | "f32" => Ok(Dtype::Float32),
            "float64" | "f64" => Ok(Dtype::Float64),
            other => Err(value_error(format!(
                "dtype must be \"float32\" or \"float64\", got {other:?}"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dtype::Float32 => "float32",
            Dtype::Float64 => "float64",
        }
    }
}

/// The tempering options of a controller (or a toy explorer) from `nrpt run` flags:
/// the command's own validation, then the ensemble's Philox key word.
pub fn options_of(config: &RunConfig, ensemble: u32) -> PyResult<TemperingOptions> {
    let job = config
        .job(Record::NOTHING)
        .map_err(|e| command_error(e.into()))?;
    Ok(TemperingOptions {
        ensemble,
        ..job.options
    })
}

/// Owned buffers of a controller of P chains and where it stands.
#[derive(Clone, Debug)]
struct Owned<F> {
    energies: Vec<F>,
    ladder: Vec<f64>,
    temperatures: Vec<f64>,
    replica_at: Vec<u32>,
    level_of: Vec<u32>,
    trips: Vec<TripState>,
    gates: Vec<bool>,
    flags: Vec<u8>,
    pair_stats: Vec<PairStats>,
    progress: Progress,
}

/// The controller over an [`Owned`]'s buffers: new (no progress yet) or resumed.
macro_rules! controller {
    ($o:expr, $options:expr, $progress:expr) => {{
        let buffers = ControllerBuffers {
            energies: &mut $o.energies,
            ladder: &mut $o.ladder,
            temperatures: &mut $o.temperatures,
            replica_at: &mut $o.replica_at,
            level_of: &mut $o.level_of,
            trips: &mut $o.trips,
            gates: &mut $o.gates,
            flags: &mut $o.flags,
            pair_stats: &mut $o.pair_stats,
        };
        match $progress {
            None => Controller::new($options, buffers),
            Some(p) => Controller::resume($options, buffers, p),
        }
    }};
}

impl<F: UnitDraw> Owned<F> {
    fn new(options: TemperingOptions, p: usize) -> Result<Self, nrpt_core::Error> {
        let pairs = p.saturating_sub(1);
        let mut o = Owned {
            energies: vec![F::ZERO; p],
            ladder: vec![0.0; p],
            temperatures: vec![0.0; p],
            replica_at: vec![0; p],
            level_of: vec![0; p],
            trips: vec![0; p],
            gates: vec![false; pairs],
            flags: vec![0; pairs],
            pair_stats: vec![PairStats::default(); pairs],
            progress: Progress {
                iteration: 0,
                buffer: 0.0,
                stats: Default::default(),
            },
        };
        let c = controller!(o, options, None::<Progress>)?;
        let progress = c.progress();
        o.progress = progress;
        Ok(o)
    }

    /// Runs `f` on the controller resumed over these buffers, then keeps its progress.
    fn with<T>(
        &mut self,
        options: TemperingOptions,
        nonfinite: NonfinitePairs,
        f: impl FnOnce(&mut Controller<'_, F>) -> T,
    ) -> Result<T, nrpt_core::Error> {
        let progress = self.progress;
        let mut c = controller!(self, options, Some(progress))?;
        c.set_nonfinite_pairs(nonfinite);
        let out = f(&mut c);
        let progress = c.progress();
        self.progress = progress;
        Ok(out)
    }
}

/// The two float types of a controller.
#[derive(Clone, Debug)]
enum State {
    F32(Owned<f32>),
    F64(Owned<f64>),
}

/// Applies a generic expression to the [`Owned`] of either float type.
macro_rules! each {
    ($state:expr, $o:ident => $body:expr) => {
        match $state {
            State::F32($o) => $body,
            State::F64($o) => $body,
        }
    };
}

/// What a saved controller holds (`Controller.state_dict()` in Python): the
/// configuration and every buffer that carries state (the energies of the last tell
/// do not: the next one replaces them all). Unknown keys are refused.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Saved {
    format: String,
    version: u32,
    dtype: Dtype,
    ensemble: u32,
    config: RunConfig,
    progress: Progress,
    ladder: Vec<f64>,
    temperatures: Vec<f64>,
    replica_at: Vec<u32>,
    level_of: Vec<u32>,
    trips: Vec<TripState>,
    gates: Vec<bool>,
    flags: Vec<u8>,
    pair_stats: Vec<PairStats>,
}

const FORMAT: &str = "nrpt.Controller";
const VERSION: u32 = 1;

/// The swap controller of one ensemble (wrapped by `nrpt.Controller`).
#[pyclass(name = "NativeController", module = "nrpt._nrpt")]
pub struct NativeController {
    config: RunConfig,
    ensemble: u32,
    dtype: Dtype,
    options: TemperingOptions,
    /// What the adaptation makes of non-finite pairs (not saved by `state_json`: the
    /// Python wrapper keeps it beside).
    nonfinite: NonfinitePairs,
    state: State,
}

impl NativeController {
    fn build(config: RunConfig, ensemble: u32, dtype: Dtype) -> PyResult<Self> {
        let options = options_of(&config, ensemble)?;
        if options.rules.pair_energies == PairEnergies::FreshPerTest {
            let e = ConfigError::new(
                "pair_energies",
                "`fresh-per-test` draws a fresh energy for each side of every pair test, which \
                 needs the energy function itself; a controller is told one energy per replica \
                 and iteration: use pair_energies=\"per-level\" (with preset=\"authors-code\" \
                 too, for the preset's other rules)",
            );
            return Err(value_error(e));
        }
        let p = config.chains;
        let state = match dtype {
            Dtype::Float32 => State::F32(Owned::new(options, p).map_err(value_error)?),
            Dtype::Float64 => State::F64(Owned::new(options, p).map_err(value_error)?),
        };
        Ok(NativeController {
            config,
            ensemble,
            dtype,
            options,
            nonfinite: NonfinitePairs::Adapt,
            state,
        })
    }

    fn chains(&self) -> usize {
        each!(&self.state, o => o.level_of.len())
    }
}

/// The decision of one tell as a dict of NumPy arrays.
fn decision<'py, F: UnitDraw>(
    py: Python<'py>,
    c: &Controller<'_, F>,
    report: nrpt_core::driver::IterationReport,
) -> PyResult<Bound<'py, PyDict>> {
    let s = c.buffers();
    let p = c.chains();
    let pair = |bit: u8| -> Vec<bool> { s.flags().iter().map(|f| f & bit != 0).collect() };
    let d = PyDict::new(py);
    d.set_item("iteration", c.iteration() - 1)?;
    d.set_item("swapped", array1(py, pair(flags::SWAPPED)))?;
    d.set_item("indicators", array1(py, pair(flags::INDICATOR)))?;
    d.set_item("attempted", array1(py, pair(flags::ATTEMPT)))?;
    d.set_item("nonfinite", array1(py, pair(flags::NONFINITE)))?;
    d.set_item("replica_at", array1(py, ints(s.replica_at())))?;
    d.set_item("level_of", array1(py, ints(s.level_of())))?;
    d.set_item("ladder", array1(py, s.ladder().to_vec()))?;
    d.set_item(
        "learning_rates",
        array1(
            py,
            (0..p)
                .map(|r| c.learning_rate(r).unwrap_or(f64::NAN))
                .collect(),
        ),
    )?;
    d.set_item(
        "temperatures",
        array1(
            py,
            (0..p)
                .map(|r| c.temperature(r).unwrap_or(f64::NAN))
                .collect(),
        ),
    )?;
    d.set_item(
        "changed_level",
        array1(py, (0..p).map(|r| c.swapped(r)).collect::<Vec<_>>()),
    )?;
    d.set_item(
        "momentum_reset",
        array1(py, (0..p).map(|r| c.momentum_reset(r)).collect::<Vec<_>>()),
    )?;
    d.set_item("buffer", c.buffer())?;
    d.set_item("round_trips", report.round_trips)?;
    d.set_item("swaps", report.swaps)?;
    d.set_item("indicator_count", report.indicators)?;
    d.set_item("nonfinite_pairs", report.nonfinite_pairs)?;
    Ok(d)
}

fn ints(v: &[u32]) -> Vec<i64> {
    v.iter().map(|&x| i64::from(x)).collect()
}

fn tell_with<'py, F: UnitDraw + numpy::Element>(
    py: Python<'py>,
    o: &mut Owned<F>,
    options: TemperingOptions,
    nonfinite: NonfinitePairs,
    energies: &Bound<'py, PyAny>,
    dtype: Dtype,
) -> PyResult<Bound<'py, PyDict>> {
    let array: PyReadonlyArray1<'py, F> = energies.extract().map_err(|_| {
        value_error(format!(
            "energies must be a 1-D {} array (one energy per replica)",
            dtype.name()
        ))
    })?;
    let e = array.as_slice().map_err(value_error)?;
    o.with(options, nonfinite, |c| {
        let report = c.tell(e).map_err(value_error)?;
        decision(py, c, report)
    })
    .map_err(value_error)?
}

#[pymethods]
impl NativeController {
    /// A controller configured by `nrpt run` flags (`argv`), for ensemble `ensemble`,
    /// computing in `dtype`.
    #[new]
    fn new(argv: Vec<String>, ensemble: u32, dtype: &str) -> PyResult<Self> {
        let config = run_config(&argv)?;
        Self::build(config, ensemble, Dtype::parse(dtype)?)
    }

    /// One iteration's exchange, given the energies by replica (a contiguous 1-D
    /// array of the controller's dtype); returns the decision as a dict.
    fn tell<'py>(
        &mut self,
        py: Python<'py>,
        energies: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (options, nonfinite, dtype) = (self.options, self.nonfinite, self.dtype);
        match &mut self.state {
            State::F32(o) => tell_with(py, o, options, nonfinite, energies, dtype),
            State::F64(o) => tell_with(py, o, options, nonfinite, energies, dtype),
        }
    }

    /// Whether pairs with a non-finite energy are left out of the adaptation
    /// (`NonfinitePairs::Exclude`) rather than fed to it as indicator 0 (the
    /// command line's policy).
    #[getter]
    fn exclude_nonfinite(&self) -> bool {
        self.nonfinite == NonfinitePairs::Exclude
    }

    #[setter]
    fn set_exclude_nonfinite(&mut self, exclude: bool) {
        self.nonfinite = if exclude {
            NonfinitePairs::Exclude
        } else {
            NonfinitePairs::Adapt
        };
    }

    /// Sets the buffer C and the scale of its updates (`buffer` and `buffer_scale` of
    /// the configuration, so a saved state keeps them): C must be finite and >= 0,
    /// the scale finite and > 0.
    fn calibrate_buffer(&mut self, buffer: f64, buffer_scale: f64) -> PyResult<()> {
        if !(buffer.is_finite() && buffer >= 0.0) {
            return Err(value_error(format!(
                "buffer must be finite and >= 0, got {buffer}"
            )));
        }
        if !(buffer_scale.is_finite() && buffer_scale > 0.0) {
            return Err(value_error(format!(
                "buffer_scale must be finite and > 0, got {buffer_scale}"
            )));
        }
        let mut config = self.config.clone();
        config.buffer = buffer;
        config.buffer_scale = buffer_scale;
        let options = options_of(&config, self.ensemble)?;
        self.config = config;
        self.options = options;
        each!(&mut self.state, o => o.progress.buffer = buffer);
        Ok(())
    }

    /// Moves the ends of the ladder to `eta_min` and `eta_max` (0 < eta_min < eta_max,
    /// finite) and the inner rates with them, each keeping its place on the log scale
    /// between the ends: `eta_min (eta_max/eta_min)^t` with
    /// `t = ln(eta_l/eta_0) / ln(eta_{P-1}/eta_0)` of the old ladder. Temperatures that
    /// follow the ladder follow.
    fn set_ladder_ends(&mut self, eta_min: f64, eta_max: f64) -> PyResult<()> {
        if !(eta_min.is_finite() && eta_max.is_finite() && 0.0 < eta_min && eta_min < eta_max) {
            return Err(value_error(format!(
                "the ladder's ends must be finite with 0 < eta_min < eta_max, got \
                 eta_min={eta_min}, eta_max={eta_max}"
            )));
        }
        let mut config = self.config.clone();
        config.eta_min = eta_min;
        config.eta_max = eta_max;
        let options = options_of(&config, self.ensemble)?;
        each!(&mut self.state, o => {
            let p = o.ladder.len();
            let (first, last) = (o.ladder[0], o.ladder[p - 1]);
            let span = (last / first).ln();
            let new_span = (eta_max / eta_min).ln();
            for eta in o.ladder.iter_mut() {
                *eta = eta_min * ((*eta / first).ln() / span * new_span).exp();
            }
            o.ladder[0] = eta_min;
            o.ladder[p - 1] = eta_max;
            if options.rules.ladder_update == LadderUpdate::InPlace {
                // The map keeps the order and the ends in exact arithmetic; in floats an
                // inner rate on a collapsed gap at the top (equal to the old end) can land
                // an ulp past the new end. The in-place ladder stays non-decreasing within
                // its ends, as its updates keep it (and as a saved state is checked).
                for l in 1..p - 1 {
                    o.ladder[l] = o.ladder[l].max(o.ladder[l - 1]).min(eta_max);
                }
            }
            options.temperatures.fill(&o.ladder, &mut o.temperatures);
        });
        self.config = config;
        self.options = options;
        Ok(())
    }

    /// Number of chains P.
    #[getter(chains)]
    fn chains_py(&self) -> usize {
        self.chains()
    }

    #[getter]
    fn iteration(&self) -> u64 {
        each!(&self.state, o => o.progress.iteration)
    }

    #[getter]
    fn buffer(&self) -> f64 {
        each!(&self.state, o => o.progress.buffer)
    }

    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype.name()
    }

    #[getter]
    fn ensemble(&self) -> u32 {
        self.ensemble
    }

    /// The window W (0 for SEO).
    #[getter]
    fn window(&self) -> u32 {
        self.options.scheme.window_code()
    }

    /// Learning rate of each level.
    #[getter]
    fn ladder<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        array1(py, each!(&self.state, o => o.ladder.clone()))
    }

    /// Temperature of each level.
    #[getter]
    fn temperature_ladder<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        array1(py, each!(&self.state, o => o.temperatures.clone()))
    }

    /// Replica at each level.
    #[getter]
    fn replica_at<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        array1(py, each!(&self.state, o => ints(&o.replica_at)))
    }

    /// Level of each replica.
    #[getter]
    fn level_of<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        array1(py, each!(&self.state, o => ints(&o.level_of)))
    }

    /// Learning rate of each replica (of its level).
    #[getter]
    fn learning_rates<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        let v = each!(&self.state, o => o.level_of.iter().map(|&l| o.ladder[l as usize]).collect());
        array1(py, v)
    }

    /// Temperature of each replica (of its level).
    #[getter]
    fn temperatures<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        let v = each!(&self.state, o => o.level_of.iter().map(|&l| o.temperatures[l as usize]).collect());
        array1(py, v)
    }

    /// Counts so far: round trips in both countings, restarts, non-finite energies,
    /// and per pair the indicator, attempt, swap and non-finite counts and rates.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (progress, pairs) = each!(&self.state, o => (o.progress, o.pair_stats.clone()));
        let n = progress.iteration;
        let d = to_dict(py, &progress.stats)?;
        d.set_item("iterations", n)?;
        let column = |f: fn(&PairStats) -> u64| -> Vec<u64> { pairs.iter().map(f).collect() };
        d.set_item("pair_indicators", array1(py, column(|p| p.indicators)))?;
        d.set_item("pair_attempts", array1(py, column(|p| p.attempts)))?;
        d.set_item("pair_swaps", array1(py, column(|p| p.swaps)))?;
        d.set_item("pair_nonfinite", array1(py, column(|p| p.nonfinite)))?;
        d.set_item(
            "pair_indicator_rate",
            array1(py, pairs.iter().map(|p| p.indicator_rate(n)).collect()),
        )?;
        d.set_item(
            "pair_swap_rate",
            array1(py, pairs.iter().map(|p| p.swap_rate(n)).collect()),
        )?;
        Ok(d)
    }

    /// The configuration (the keys of `nrpt run`), the window and the rules that run.
    fn describe<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("config", to_py(py, &self.config)?)?;
        d.set_item("window", self.options.scheme.window_code())?;
        let rules: nrpt_sampling::preset::RulesSummary =
            self.config.rule_choices().resolve().into();
        d.set_item("rules", to_py(py, &rules)?)?;
        Ok(d)
    }

    /// The whole state as JSON text (floats exact).
    fn state_json(&self) -> PyResult<String> {
        let saved = each!(&self.state, o => Saved {
            format: FORMAT.to_string(),
            version: VERSION,
            dtype: self.dtype,
            ensemble: self.ensemble,
            config: self.config.clone(),
            progress: o.progress,
            ladder: o.ladder.clone(),
            temperatures: o.temperatures.clone(),
            replica_at: o.replica_at.clone(),
            level_of: o.level_of.clone(),
            trips: o.trips.clone(),
            gates: o.gates.clone(),
            flags: o.flags.clone(),
            pair_stats: o.pair_stats.clone(),
        });
        serde_json::to_string(&saved).map_err(value_error)
    }

    /// A controller from [`NativeController::state_json`]'s text, checked as nrpt-core
    /// checks a resumed run (lengths, a permutation and its inverse, finite positive
    /// rates) and by [`check_saved`] (the ladder's order and ends, the temperatures,
    /// the buffer, the iteration and the counts), then continued exactly.
    #[classmethod]
    fn from_state_json(_cls: &Bound<'_, PyType>, text: &str) -> PyResult<Self> {
        let saved: Saved = serde_json::from_str(text)
            .map_err(|e| value_error(format!("not a saved nrpt controller: {e}")))?;
        if saved.format != FORMAT || saved.version != VERSION {
            return Err(value_error(format!(
                "not a saved nrpt controller of this version: format {:?} version {} (this is {FORMAT:?} version {VERSION})",
                saved.format, saved.version
            )));
        }
        // A controller's configuration has the default target (no data file to read,
        // energies in the units told).
        let target = RunConfig::default().target;
        if saved.config.target != target {
            return Err(value_error(format!(
                "a saved controller whose configuration names the target {:?}: a \
                 controller's is always {:?}",
                saved.config.target.as_str(),
                target.as_str()
            )));
        }
        let mut c = Self::build(saved.config, saved.ensemble, saved.dtype)?;
        let (options, config) = (c.options, &c.config);
        each!(&mut c.state, o => {
            // The ends of the ladder a fresh controller of this configuration has.
            let p = o.ladder.len();
            let ends = (o.ladder[0], o.ladder[p - 1]);
            o.ladder = saved.ladder;
            o.temperatures = saved.temperatures;
            o.replica_at = saved.replica_at;
            o.level_of = saved.level_of;
            o.trips = saved.trips;
            o.gates = saved.gates;
            o.flags = saved.flags;
            o.pair_stats = saved.pair_stats;
            o.progress = saved.progress;
            // The resume checks every length and the consistency of the state.
            o.with(options, NonfinitePairs::Adapt, |_| ()).map_err(|e| value_error(format!("a saved controller that does not fit its configuration: {e}")))?;
            check_saved(o, &options, config, ends).map_err(|e| value_error(format!(
                "a saved controller that cannot be a controller's state: {e}"
            )))?;
        });
        Ok(c)
    }
}

/// What every state a controller reaches keeps, beyond nrpt-core's resume checks
/// (`o` has passed them: every length fits P ≥ 2):
/// - the iteration at most [`saved::MAX_ITERATION`];
/// - the ladder's ends where the configuration puts them (those of a fresh controller,
///   or `eta_min` and `eta_max` as `set_ladder_ends` sets them), the target level's
///   rate below the hottest level's, and with the in-place update (the practitioner
///   rules) the whole ladder non-decreasing (the paper's Jacobi update can cross a
///   small gap, so there only the ends are ordered);
/// - the temperatures those the configuration gives for the ladder;
/// - the buffer C at least 0 under its non-negative projection (C may turn negative
///   only under the paper's code's unprojected rule), and the configured one when it
///   does not adapt;
/// - per pair, indicators and non-finite iterations (never both at once) and attempts
///   at most the iterations, swaps at most the attempts and the indicators; restarts
///   at most the swaps of pair 0 (the only way to arrive at level 0), and the totals
///   of [`saved::check_stats`]; the flags and trip states of [`saved`].
fn check_saved<F>(
    o: &Owned<F>,
    options: &TemperingOptions,
    config: &RunConfig,
    (first, last): (f64, f64),
) -> Result<(), String> {
    let n = o.progress.iteration;
    let p = o.ladder.len();
    saved::check_iteration(n)?;
    let (eta0, eta_top) = (o.ladder[0], o.ladder[p - 1]);
    if eta0 >= eta_top {
        return Err(format!(
            "the ladder runs from {eta0} at the target level to {eta_top} at the hottest: \
             the target level's learning rate must be the smaller"
        ));
    }
    if !(eta0 == first || eta0 == config.eta_min) || !(eta_top == last || eta_top == config.eta_max)
    {
        return Err(format!(
            "the ladder's ends {eta0} and {eta_top} are not the configuration's (eta_min = \
             {}, eta_max = {})",
            config.eta_min, config.eta_max
        ));
    }
    // (The rates are finite: nrpt-core's resume has checked them.)
    let in_place = options.rules.ladder_update == LadderUpdate::InPlace;
    if let Some(l) = (1..p).find(|&l| in_place && o.ladder[l - 1] > o.ladder[l]) {
        return Err(format!(
            "learning rate {} at level {l} is below {} at level {}: the in-place ladder \
             update keeps the ladder non-decreasing",
            o.ladder[l],
            o.ladder[l - 1],
            l - 1
        ));
    }
    let mut temperatures = vec![0.0; p];
    options.temperatures.fill(&o.ladder, &mut temperatures);
    if let Some(l) = (0..p).find(|&l| temperatures[l] != o.temperatures[l]) {
        return Err(format!(
            "temperature {} at level {l}, where the configuration gives {} for this ladder",
            o.temperatures[l], temperatures[l]
        ));
    }
    let buffer = o.progress.buffer;
    if options.rules.buffer_projection == BufferProjection::NonNegative && buffer < 0.0 {
        return Err(format!(
            "buffer C = {buffer}: the buffer is projected onto C >= 0 (buffer_projection)"
        ));
    }
    let adapts = options.adapt.adapt_buffer && options.rule == SwapRule::Buffered;
    if !adapts && buffer != options.initial_buffer {
        return Err(format!(
            "buffer C = {buffer}, but it does not adapt: it stays the configured {}",
            options.initial_buffer
        ));
    }
    for (pair, s) in o.pair_stats.iter().enumerate() {
        let bad = |what: &str| Err(format!("pair {pair}: {what} ({s:?} in {n} iterations)"));
        if u128::from(s.indicators) + u128::from(s.nonfinite) > u128::from(n) {
            return bad("more indicators and non-finite iterations than iterations");
        }
        if s.attempts > n {
            return bad("more attempts than iterations");
        }
        if s.swaps > s.attempts.min(s.indicators) {
            return bad("more swaps than attempts or indicators");
        }
    }
    let stats = &o.progress.stats;
    if stats.restarts > o.pair_stats[0].swaps {
        return Err(format!(
            "{} restarts but {} swaps of pair 0 (a restart is an arrival at level 0)",
            stats.restarts, o.pair_stats[0].swaps
        ));
    }
    saved::check_stats(stats, n, p)?;
    saved::check_flags(&o.flags, n)?;
    saved::check_trips(&o.trips, &o.replica_at)
}
