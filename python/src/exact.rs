//! Exact tempering told the log-likelihoods by a Python sampler (`nrpt.ExactController`):
//! the host's [`ExactController`] (nrpt-core's exact run over owned buffers, the
//! command's estimates and warnings), and a recorder of a core run that explores by
//! itself (MALA on the Gaussian path), which the tests replay through the controller.

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyType};

use nrpt_core::exact::{
    ExactBuffers, ExactExplorer, ExactReport, ExactTempering, GaussianPath, InitialGrid,
    LevelRecord, MalaOptions, PairRecord, RoundReport, StartStates,
};
use nrpt_core::swap::flags;
use nrpt_sampling::config::ReferenceKind;
use nrpt_studies::exact::{ControllerSettings, ExactController, log_z_mean};

use crate::convert::{array1, reshape2, to_dict};
use crate::errors::value_error;
use crate::saved;

/// A float for a dict: `None` where it is not finite (as the summaries' JSON has it).
fn num(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// A round's report as a flat dict: log Z as the command reports it (the mean of the
/// forward and reverse stepping stones) beside both, Λ̂, the round trips and the
/// prediction.
fn round_dict<'py>(py: Python<'py>, r: &RoundReport) -> PyResult<Bound<'py, PyDict>> {
    let forward = (r.log_normalizer.value, r.log_normalizer.standard_error);
    let reverse = (
        r.log_normalizer_reverse.value,
        r.log_normalizer_reverse.standard_error,
    );
    let (log_z, log_z_se) = log_z_mean(forward, reverse);
    let n = r.iterations as f64;
    let d = PyDict::new(py);
    d.set_item("round", r.round)?;
    d.set_item("iterations", r.iterations)?;
    d.set_item("lambda", num(r.global_barrier))?;
    d.set_item("lambda_se", num(r.global_barrier_standard_error))?;
    d.set_item("log_z", num(log_z))?;
    d.set_item("log_z_se", num(log_z_se))?;
    d.set_item("log_z_forward", num(forward.0))?;
    d.set_item("log_z_forward_se", num(forward.1))?;
    d.set_item("log_z_reverse", num(reverse.0))?;
    d.set_item("log_z_reverse_se", num(reverse.1))?;
    d.set_item("round_trips", r.round_trips)?;
    d.set_item("restarts", r.restarts)?;
    d.set_item(
        "round_trips_per_1000",
        num(1000.0 * r.round_trips as f64 / n),
    )?;
    d.set_item(
        "predicted_round_trips_per_1000",
        num(1000.0 * r.predicted_round_trip_rate),
    )?;
    d.set_item("rejection_min", num(r.rejection_range.0))?;
    d.set_item("rejection_max", num(r.rejection_range.1))?;
    d.set_item("grid_adapted", r.grid_adapted)?;
    Ok(d)
}

/// λ̂(β) and Λ̂(β) at the points asked for.
type Profile<'py> = (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>);

fn ints(v: &[u32]) -> Vec<i64> {
    v.iter().map(|&x| i64::from(x)).collect()
}

/// Exact tempering told the log-likelihoods (wrapped by `nrpt.ExactController`).
#[pyclass(name = "NativeExactController", module = "nrpt._nrpt")]
pub struct NativeExactController {
    inner: ExactController,
}

impl NativeExactController {
    /// What one tell did, as a dict.
    fn step_dict<'py>(
        &self,
        py: Python<'py>,
        report: &ExactReport,
    ) -> PyResult<Bound<'py, PyDict>> {
        let c = &self.inner;
        let d = PyDict::new(py);
        d.set_item("iteration", c.iteration().saturating_sub(1))?;
        d.set_item("swaps", report.swaps)?;
        d.set_item("round_trips", report.round_trips)?;
        d.set_item("nonfinite_pairs", report.nonfinite_pairs)?;
        let swapped: Vec<bool> = c.flags().iter().map(|f| f & flags::SWAPPED != 0).collect();
        d.set_item("swapped", array1(py, swapped))?;
        d.set_item("replica_at", array1(py, ints(c.replica_at())))?;
        d.set_item("level_of", array1(py, ints(c.level_of())))?;
        match &report.round_end {
            Some(r) => d.set_item("round", round_dict(py, r)?)?,
            None => d.set_item("round", py.None())?,
        }
        Ok(d)
    }
}

#[pymethods]
impl NativeExactController {
    /// A controller of `chains` chains: window W (0 for SEO), Philox key (seed,
    /// ensemble), rounds of `first_round · 2^r` iterations, the grid re-placed after each
    /// unless `adapt_grid` is false, starting from `betas` (by level) or the uniform grid;
    /// the reference `"fixed"` or `"variational"` (states of `dim` coordinates).
    #[new]
    #[pyo3(signature = (
        chains, window, seed, ensemble, first_round, adapt_grid, betas=None,
        reference="fixed", dim=0
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        chains: usize,
        window: u32,
        seed: u32,
        ensemble: u32,
        first_round: u64,
        adapt_grid: bool,
        betas: Option<Vec<f64>>,
        reference: &str,
        dim: usize,
    ) -> PyResult<Self> {
        let settings = ControllerSettings {
            chains,
            window,
            seed,
            ensemble,
            first_round,
            adapt_grid,
        };
        let kind = match reference {
            "fixed" => ReferenceKind::Fixed,
            "variational" => ReferenceKind::Variational,
            other => {
                return Err(value_error(format!(
                    "reference must be 'fixed' or 'variational', got {other:?}"
                )));
            }
        };
        let inner = ExactController::with_reference(settings, betas.as_deref(), kind, dim)
            .map_err(value_error)?;
        Ok(NativeExactController { inner })
    }

    /// One iteration, given ℓ of every replica (a contiguous float64 array by replica)
    /// and, with a variational reference, their states (P × D floats by replica, flat).
    #[pyo3(signature = (log_likelihoods, states=None))]
    fn tell<'py>(
        &mut self,
        py: Python<'py>,
        log_likelihoods: PyReadonlyArray1<'py, f64>,
        states: Option<PyReadonlyArray1<'py, f64>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let ells = log_likelihoods.as_slice().map_err(value_error)?;
        let states = states
            .as_ref()
            .map(|x| x.as_slice())
            .transpose()
            .map_err(value_error)?;
        let report = self.inner.tell_states(ells, states).map_err(value_error)?;
        self.step_dict(py, &report)
    }

    /// `"fixed"` or `"variational"`.
    #[getter]
    fn reference(&self) -> &'static str {
        self.inner.reference_kind().name()
    }

    /// D with a variational reference (`None` with a fixed one).
    #[getter]
    fn reference_dim(&self) -> Option<usize> {
        self.inner.reference_dim()
    }

    /// Fits of the variational reference so far.
    #[getter]
    fn reference_fits(&self) -> u32 {
        self.inner.reference_fits()
    }

    /// The fitted reference's mean (`None` before the first fit).
    #[getter]
    fn reference_mean<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<f64>>> {
        self.inner.reference_mean().map(|m| array1(py, m.to_vec()))
    }

    /// The fitted reference's standard deviations (`None` before the first fit).
    #[getter]
    fn reference_scale<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<f64>>> {
        self.inner.reference_scale().map(|s| array1(py, s.to_vec()))
    }

    /// log q(x) of the fitted reference and its gradient (`ValueError` before the first
    /// fit or for `x` of another length than D).
    fn reference_log_density<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray1<'py, f64>,
    ) -> PyResult<(f64, Bound<'py, PyArray1<f64>>)> {
        let x = x.as_slice().map_err(value_error)?;
        let mut grad = vec![0.0; x.len()];
        let value = self
            .inner
            .reference_log_density(x, Some(&mut grad))
            .map_err(value_error)?;
        Ok((value, array1(py, grad)))
    }

    #[getter]
    fn chains(&self) -> usize {
        self.inner.chains()
    }

    #[getter]
    fn iteration(&self) -> u64 {
        self.inner.iteration()
    }

    #[getter]
    fn round(&self) -> u32 {
        self.inner.round()
    }

    #[getter]
    fn round_iteration(&self) -> u64 {
        self.inner.round_iteration()
    }

    #[getter]
    fn round_length(&self) -> u64 {
        self.inner.round_length()
    }

    #[getter]
    fn window(&self) -> u32 {
        self.inner.settings().window
    }

    #[getter]
    fn seed(&self) -> u32 {
        self.inner.settings().seed
    }

    #[getter]
    fn ensemble(&self) -> u32 {
        self.inner.settings().ensemble
    }

    #[getter]
    fn first_round(&self) -> u64 {
        self.inner.settings().first_round
    }

    #[getter]
    fn get_adapt_grid(&self) -> bool {
        self.inner.adapt_grid()
    }

    #[setter]
    fn set_adapt_grid(&mut self, on: bool) {
        self.inner.set_adapt_grid(on);
    }

    /// β of each level.
    #[getter]
    fn betas<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        array1(py, self.inner.betas().to_vec())
    }

    /// β of each replica.
    #[getter]
    fn betas_by_replica<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        array1(py, self.inner.betas_by_replica())
    }

    #[getter]
    fn replica_at<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        array1(py, ints(self.inner.replica_at()))
    }

    #[getter]
    fn level_of<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        array1(py, ints(self.inner.level_of()))
    }

    #[getter]
    fn log_likelihoods<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        array1(py, self.inner.log_likelihoods().to_vec())
    }

    /// Λ̂ of the last completed round (`None` before).
    fn barrier(&self) -> Option<f64> {
        self.inner.barrier().map(|b| b.global())
    }

    /// λ̂(β) and Λ̂(β) of the last completed round at `betas` (`None` before).
    fn profile<'py>(
        &self,
        py: Python<'py>,
        betas: PyReadonlyArray1<'py, f64>,
    ) -> PyResult<Option<Profile<'py>>> {
        let at = betas.as_slice().map_err(value_error)?;
        Ok(self.inner.barrier().map(|b| {
            let local = at.iter().map(|&x| b.local(x)).collect();
            let cumulative = at.iter().map(|&x| b.cumulative(x)).collect();
            (array1(py, local), array1(py, cumulative))
        }))
    }

    /// The grid of `chains` points at equal barrier (`None` before the first round).
    fn equal_barrier_grid<'py>(
        &self,
        py: Python<'py>,
        chains: usize,
    ) -> PyResult<Option<Bound<'py, PyArray1<f64>>>> {
        let grid = self.inner.equal_barrier_grid(chains).map_err(value_error)?;
        Ok(grid.map(|g| array1(py, g)))
    }

    /// The last completed round's report (`None` before).
    fn last_round<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.inner
            .last_round()
            .map(|r| round_dict(py, r))
            .transpose()
    }

    /// The chains both rules recommend for the last round's Λ̂ (`lower_bound`: true where
    /// Λ̂ saturates and both are "at least").
    fn recommended_chains<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        to_dict(py, &self.inner.recommended())
    }

    /// The warnings of the last round, each saying what to do.
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings()
    }

    /// The summary: settings, counts, grid, the command's estimates, recommended chains,
    /// warnings (non-finite floats as `None`).
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        to_dict(py, &self.inner.summary())
    }

    /// Run counts and the last round's records by pair.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = to_dict(py, &self.inner.stats())?;
        d.set_item("iterations", self.inner.iteration())?;
        let pairs = self.inner.last_pairs();
        let column = |f: fn(&PairRecord) -> u64| -> Vec<u64> { pairs.iter().map(f).collect() };
        let rates: Vec<Option<f64>> = pairs.iter().map(|p| num(p.rejection_rate())).collect();
        d.set_item("pair_rejection_rate", rates)?;
        d.set_item("pair_tests", column(PairRecord::tests))?;
        d.set_item("pair_attempts", column(PairRecord::attempts))?;
        d.set_item("pair_swaps", column(PairRecord::accepted))?;
        d.set_item("pair_nonfinite", column(PairRecord::nonfinite))?;
        Ok(d)
    }

    /// The whole state, every float bit for bit.
    fn state_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.encode())
    }

    /// A controller from [`NativeExactController::state_bytes`], checked as the core
    /// checks a resumed run (lengths, the β grid strictly decreasing from 1 to 0, the
    /// barrier's knots, a permutation and its inverse, the round's position) and by
    /// [`check_saved`], then continued exactly.
    #[classmethod]
    fn from_state_bytes(_cls: &Bound<'_, PyType>, bytes: &[u8]) -> PyResult<Self> {
        let inner = ExactController::decode(bytes).map_err(value_error)?;
        check_saved(&inner).map_err(|e| {
            value_error(format!(
                "a saved nrpt exact controller whose state cannot be a run's: {e}"
            ))
        })?;
        Ok(NativeExactController { inner })
    }
}

/// What every state of an exact controller keeps, beyond the core's resume checks: the
/// iteration at most [`saved::MAX_ITERATION`] and equal to the iterations of the
/// completed rounds (`first_round · (2^round − 1)`) plus those of the current one; a
/// last round's report and pair records exactly when a round has completed; the
/// totals of [`saved::check_stats`] and the flags of [`saved::check_flags`]; at most one
/// fit of a variational reference per completed round.
fn check_saved(c: &ExactController) -> Result<(), String> {
    let n = c.iteration();
    saved::check_iteration(n)?;
    let (round, first) = (c.round(), c.settings().first_round);
    if c.reference_fits() > round {
        return Err(format!(
            "{} fits of the variational reference in {round} completed rounds (at most one \
             per round)",
            c.reference_fits()
        ));
    }
    // 2^53 iterations hold at most 53 rounds of at least one iteration.
    let completed = if round <= 64 {
        u128::from(first) * ((1u128 << round) - 1)
    } else {
        u128::MAX
    };
    if completed.checked_add(u128::from(c.round_iteration())) != Some(u128::from(n)) {
        return Err(format!(
            "iteration {n} is not the {round} completed rounds of {first} · 2^r iterations \
             plus the {} of the current one",
            c.round_iteration()
        ));
    }
    let has_round = round > 0;
    if c.last_round().is_some() != has_round || c.last_pairs().is_empty() == has_round {
        return Err(format!(
            "{round} rounds completed, but the report and pair records of the last one are \
             {}",
            if c.last_round().is_some() {
                "there"
            } else {
                "missing"
            }
        ));
    }
    saved::check_stats(&c.stats(), n, c.chains())?;
    saved::check_flags(c.flags(), n)
}

/// Runs nrpt-core's exact tempering with its own MALA explorers on the Gaussian path
/// N(0, I_dim) → N(0, I_dim/10) (`chains` chains, window `window`, 0 for SEO; seed and
/// ensemble; rounds from 2 iterations), and records after every iteration ℓ of every
/// replica (by replica), the grid and the permutation, and every round's report.
#[pyfunction]
#[pyo3(signature = (chains, dim, iterations, seed, window=1, ensemble=0))]
pub fn record_exact<'py>(
    py: Python<'py>,
    chains: usize,
    dim: usize,
    iterations: u64,
    seed: u32,
    window: u32,
    ensemble: u32,
) -> PyResult<Bound<'py, PyDict>> {
    use nrpt_sampling::config::{MAX_CHAINS, MAX_DIM, MAX_VALUES};
    let cells = u128::from(iterations) * chains as u128 + chains as u128 * dim as u128;
    if chains > MAX_CHAINS || dim > MAX_DIM || cells > MAX_VALUES {
        return Err(value_error(format!(
            "record_exact keeps iterations × chains values: at most {MAX_VALUES} (with chains \
             <= {MAX_CHAINS} and dim <= {MAX_DIM}), got {iterations} × {chains} (dim {dim})"
        )));
    }
    let settings = ControllerSettings {
        chains,
        window,
        seed,
        ensemble,
        ..ControllerSettings::new(chains)
    };
    let options = nrpt_core::exact::ExactOptions {
        explorer: ExactExplorer::Mala(MalaOptions::default()),
        start: StartStates::Reference,
        ..settings.options(InitialGrid::Uniform)
    };
    let path = GaussianPath::standard(dim).map_err(value_error)?;
    let n = ExactBuffers::lengths(chains, dim, &options.explorer).map_err(value_error)?;
    let (mut states, mut ells, mut betas) = (
        vec![0.0; n.states],
        vec![0.0; n.per_level],
        vec![0.0; n.per_level],
    );
    let mut levels = vec![LevelRecord::default(); n.per_level];
    let (mut at, mut of, mut trips) = (
        vec![0u32; n.per_level],
        vec![0u32; n.per_level],
        vec![0u8; n.per_level],
    );
    let (mut gates, mut flag_buf) = (vec![false; n.per_pair], vec![0u8; n.per_pair]);
    let mut pairs = vec![PairRecord::default(); n.per_pair];
    let (mut knots, mut values, mut scratch) = (
        vec![0.0; n.per_level],
        vec![0.0; n.per_level],
        vec![0.0; n.scratch],
    );
    let buffers = ExactBuffers {
        states: &mut states,
        log_likelihoods: &mut ells,
        betas: &mut betas,
        levels: &mut levels,
        replica_at: &mut at,
        level_of: &mut of,
        trips: &mut trips,
        gates: &mut gates,
        flags: &mut flag_buf,
        pairs: &mut pairs,
        barrier_betas: &mut knots,
        barrier_values: &mut values,
        scratch: &mut scratch,
    };
    let mut run = ExactTempering::new(options, path, buffers).map_err(value_error)?;
    let (mut ell_rows, mut grid_rows, mut at_rows) = (Vec::new(), Vec::new(), Vec::new());
    let mut rounds = Vec::new();
    for _ in 0..iterations {
        let Ok(report) = run.step();
        ell_rows.extend_from_slice(run.log_likelihoods());
        grid_rows.extend_from_slice(run.betas());
        at_rows.extend(ints(run.replica_at()));
        if let Some(r) = report.round_end {
            rounds.push(r);
        }
    }
    let shape = (iterations as usize, chains);
    let d = PyDict::new(py);
    d.set_item("log_likelihoods", reshape2(py, ell_rows, shape)?)?;
    d.set_item("betas", reshape2(py, grid_rows, shape)?)?;
    d.set_item("replica_at", reshape2(py, at_rows, shape)?)?;
    let reports: PyResult<Vec<Bound<'py, PyDict>>> =
        rounds.iter().map(|r| round_dict(py, r)).collect();
    d.set_item("rounds", reports?)?;
    d.set_item("log_evidence", run.path().log_evidence())?;
    d.set_item("global_barrier", run.path().global_barrier())?;
    Ok(d)
}
