//! The toy targets' exploration over NumPy states, step for step the driver's (so a
//! loop written in Python around a controller reproduces `nrpt run`), and a recorder
//! of a core `Tempering` run (the tests compare a controller with it).

use numpy::{PyArray1, PyReadonlyArray1, PyReadwriteArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use nrpt_core::driver::{
    Buffers, ReplicaStep, Tempering, TemperingOptions, explore_replica, initial_state,
};
use nrpt_core::index::{PairStats, TripState};
use nrpt_core::rng::UnitDraw;
use nrpt_core::target::{EnergyOracle, Modes2d, Noisy, Potential, SumModes};
use nrpt_sampling::engine::Record;
use nrpt_sampling::targets::{Modes2dTarget, SumModesTarget};

use crate::config::run_config;
use crate::controller::{Dtype, options_of};
use crate::convert::{array1, reshape2};
use crate::errors::{command_error, value_error};

/// The potentials of the synthetic targets, in `f32` or `f64` as the caller chooses
/// (the engines' targets run `f32` only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Toy {
    Modes2d,
    SumModes(SumModes),
}

impl<F: nrpt_core::Float> Potential<F> for Toy {
    fn dim(&self) -> usize {
        match self {
            Toy::Modes2d => 2,
            Toy::SumModes(s) => s.dim,
        }
    }

    fn energy(&self, x: &[F]) -> F {
        match self {
            Toy::Modes2d => Potential::<F>::energy(&Modes2d, x),
            Toy::SumModes(s) => Potential::<F>::energy(s, x),
        }
    }

    fn gradient(&self, x: &[F], grad: &mut [F]) {
        match self {
            Toy::Modes2d => Potential::<F>::gradient(&Modes2d, x, grad),
            Toy::SumModes(s) => Potential::<F>::gradient(s, x, grad),
        }
    }
}

/// The toy target, options and sizes of a configuration of `nrpt run` flags.
fn toy_of(argv: &[String], ensemble: u32) -> PyResult<(TemperingOptions, Noisy<Toy>, usize)> {
    let config = run_config(argv)?;
    let job = config
        .job(Record::NOTHING)
        .map_err(|e| command_error(e.into()))?;
    let (toy, noise) = if let Some(t) = job.target.downcast_ref::<Modes2dTarget>() {
        (Toy::Modes2d, t.noise)
    } else if let Some(t) = job.target.downcast_ref::<SumModesTarget>() {
        (Toy::SumModes(t.potential), t.noise)
    } else {
        return Err(value_error(format!(
            "target {}: the toy explorer runs the synthetic targets (modes2d, sum-modes) only",
            config.target
        )));
    };
    let oracle = Noisy::new(toy, noise, noise).map_err(value_error)?;
    Ok((options_of(&config, ensemble)?, oracle, job.chains))
}

/// The driver's exploration of a toy target (wrapped by `nrpt.ToyExplorer`).
#[pyclass(name = "NativeToyExplorer", module = "nrpt._nrpt")]
pub struct NativeToyExplorer {
    options: TemperingOptions,
    oracle: Noisy<Toy>,
    chains: usize,
    dim: usize,
    dtype: Dtype,
}

fn initial<'py, F: UnitDraw + numpy::Element>(
    py: Python<'py>,
    options: &TemperingOptions,
    p: usize,
    d: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let mut x = vec![F::ZERO; p * d];
    for (r, xr) in x.chunks_mut(d).enumerate() {
        initial_state(options, r as u32, xr);
    }
    reshape2(py, x, (p, d))
}

#[allow(clippy::too_many_arguments)]
fn step<'py, F: UnitDraw + numpy::Element>(
    py: Python<'py>,
    e: &mut NativeToyExplorer,
    states: &Bound<'py, PyAny>,
    learning_rates: &[f64],
    temperatures: &[f64],
    iteration: u64,
    momenta: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArray1<F>>> {
    let (p, d, name) = (e.chains, e.dim, e.dtype.name());
    let shape_error = |what: &str| {
        value_error(format!(
            "{what} must be a C-contiguous, writable {name} array of shape ({p}, {d})"
        ))
    };
    let mut states: PyReadwriteArray2<'py, F> =
        states.extract().map_err(|_| shape_error("states"))?;
    if states.shape() != [p, d] {
        return Err(shape_error("states"));
    }
    let x = states.as_slice_mut().map_err(|_| shape_error("states"))?;
    let mut velocities: Option<PyReadwriteArray2<'py, F>> = match momenta {
        Some(m) => Some(m.extract().map_err(|_| shape_error("momenta"))?),
        None => None,
    };
    if e.options.explorer.has_momentum() && velocities.is_none() {
        return Err(value_error(
            "a momentum explorer (msgd) steps velocities too: pass momenta, an array like states",
        ));
    }
    let mut none: Vec<F> = Vec::new();
    let v: &mut [F] = match velocities.as_mut() {
        Some(m) => {
            if m.shape() != [p, d] {
                return Err(shape_error("momenta"));
            }
            m.as_slice_mut().map_err(|_| shape_error("momenta"))?
        }
        None => &mut none,
    };
    for (name, v) in [
        ("learning_rates", learning_rates),
        ("temperatures", temperatures),
    ] {
        if v.len() != p {
            return Err(value_error(format!(
                "{name} must have length {p} (one per replica), got {}",
                v.len()
            )));
        }
    }
    let mut scratch = vec![F::ZERO; 2 * d];
    let mut energies = vec![F::ZERO; p];
    for r in 0..p {
        let step = ReplicaStep {
            iteration,
            replica: r as u32,
            eta: learning_rates[r],
            temperature: temperatures[r],
        };
        let vr = if v.is_empty() {
            &mut [][..]
        } else {
            &mut v[r * d..(r + 1) * d]
        };
        let energy = explore_replica(
            &e.options,
            &mut e.oracle,
            step,
            &mut x[r * d..(r + 1) * d],
            vr,
            &mut scratch,
            true,
        )
        .map_err(|e| value_error(e.to_string()))?;
        energies[r] = energy.unwrap_or(F::ZERO);
    }
    Ok(array1(py, energies))
}

#[pymethods]
impl NativeToyExplorer {
    /// The explorer of the toy target configured by `nrpt run` flags, for ensemble
    /// `ensemble`, computing in `dtype`.
    #[new]
    fn new(argv: Vec<String>, ensemble: u32, dtype: &str) -> PyResult<Self> {
        let (options, oracle, chains) = toy_of(&argv, ensemble)?;
        let dim = EnergyOracle::<f64>::dim(&oracle);
        Ok(NativeToyExplorer {
            options,
            oracle,
            chains,
            dim,
            dtype: Dtype::parse(dtype)?,
        })
    }

    #[getter]
    fn chains(&self) -> usize {
        self.chains
    }

    #[getter]
    fn dim(&self) -> usize {
        self.dim
    }

    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype.name()
    }

    /// Whether the explorer steps velocities (msgd).
    #[getter]
    fn has_momentum(&self) -> bool {
        self.options.explorer.has_momentum()
    }

    /// The states the driver starts from, replica by replica: (P, D).
    fn initial_states<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.dtype {
            Dtype::Float32 => initial::<f32>(py, &self.options, self.chains, self.dim),
            Dtype::Float64 => initial::<f64>(py, &self.options, self.chains, self.dim),
        }
    }

    /// One exploration step of every replica at iteration `iteration`, in place, with
    /// the learning rate and temperature of each replica; returns the energies by
    /// replica.
    #[pyo3(signature = (states, learning_rates, temperatures, iteration, momenta=None))]
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        states: &Bound<'py, PyAny>,
        learning_rates: PyReadonlyArray1<'py, f64>,
        temperatures: PyReadonlyArray1<'py, f64>,
        iteration: u64,
        momenta: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let lr = learning_rates.as_slice().map_err(value_error)?;
        let t = temperatures.as_slice().map_err(value_error)?;
        Ok(match self.dtype {
            Dtype::Float32 => step::<f32>(py, self, states, lr, t, iteration, momenta)?.into_any(),
            Dtype::Float64 => step::<f64>(py, self, states, lr, t, iteration, momenta)?.into_any(),
        })
    }
}

/// What a core `Tempering` run did, iteration by iteration.
struct Recording<F> {
    energies: Vec<F>,
    replica_at: Vec<u32>,
    ladder: Vec<f64>,
    buffer: Vec<f64>,
    flags: Vec<u8>,
    round_trips: Vec<u64>,
    authors_round_trips: Vec<u64>,
    restarts: Vec<u64>,
    nonfinite_energies: Vec<u64>,
    pair_swaps: Vec<u64>,
    states: Vec<F>,
}

fn record<F: UnitDraw>(
    options: TemperingOptions,
    oracle: Noisy<Toy>,
    p: usize,
    iterations: u64,
) -> Result<Recording<F>, nrpt_core::Error> {
    let d = EnergyOracle::<F>::dim(&oracle);
    let mut states = vec![F::ZERO; p * d];
    let mut momenta = vec![F::ZERO; p * d];
    let mut energies = vec![F::ZERO; p];
    let (mut ladder, mut temperatures) = (vec![0.0; p], vec![0.0; p]);
    let (mut replica_at, mut level_of) = (vec![0u32; p], vec![0u32; p]);
    let mut trips: Vec<TripState> = vec![0; p];
    let (mut gates, mut flags) = (vec![false; p - 1], vec![0u8; p - 1]);
    let mut pair_stats = vec![PairStats::default(); p - 1];
    let mut scratch = vec![F::ZERO; 2 * d];
    let buffers = Buffers {
        states: &mut states,
        momenta: &mut momenta,
        energies: &mut energies,
        ladder: &mut ladder,
        temperatures: &mut temperatures,
        replica_at: &mut replica_at,
        level_of: &mut level_of,
        trips: &mut trips,
        gates: &mut gates,
        flags: &mut flags,
        pair_stats: &mut pair_stats,
        scratch: &mut scratch,
    };
    let mut t = Tempering::new(options, oracle, buffers)?;
    let n = iterations as usize;
    let mut rec = Recording {
        energies: Vec::with_capacity(n * p),
        replica_at: Vec::with_capacity(n * p),
        ladder: Vec::with_capacity(n * p),
        buffer: Vec::with_capacity(n),
        flags: Vec::with_capacity(n * (p - 1)),
        round_trips: Vec::with_capacity(n),
        authors_round_trips: Vec::with_capacity(n),
        restarts: Vec::with_capacity(n),
        nonfinite_energies: Vec::with_capacity(n),
        pair_swaps: Vec::new(),
        states: Vec::new(),
    };
    for _ in 0..iterations {
        let Ok(()) = t.explore();
        let s = t.storage();
        rec.energies
            .extend(s.level_of().iter().map(|&l| s.energies()[l as usize]));
        let Ok(_) = t.exchange();
        let s = t.storage();
        rec.replica_at.extend_from_slice(s.replica_at());
        rec.ladder.extend_from_slice(s.ladder());
        rec.flags.extend_from_slice(s.flags());
        rec.buffer.push(t.buffer());
        let st = t.stats();
        rec.round_trips.push(st.round_trips);
        rec.authors_round_trips.push(st.authors_round_trips);
        rec.restarts.push(st.restarts);
        rec.nonfinite_energies.push(st.nonfinite_energies);
    }
    rec.pair_swaps = t.storage().pair_stats().iter().map(|p| p.swaps).collect();
    rec.states = t.storage().states().to_vec();
    Ok(rec)
}

fn recording_dict<'py, F: UnitDraw + numpy::Element>(
    py: Python<'py>,
    r: Recording<F>,
    p: usize,
    d: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let n = r.buffer.len();
    let out = PyDict::new(py);
    out.set_item("energies", reshape2(py, r.energies, (n, p))?)?;
    let at: Vec<i64> = r.replica_at.iter().map(|&x| i64::from(x)).collect();
    out.set_item("replica_at", reshape2(py, at, (n, p))?)?;
    out.set_item("ladder", reshape2(py, r.ladder, (n, p))?)?;
    out.set_item("flags", reshape2(py, r.flags, (n, p - 1))?)?;
    out.set_item("buffer", array1(py, r.buffer))?;
    out.set_item("round_trips", array1(py, r.round_trips))?;
    out.set_item("authors_round_trips", array1(py, r.authors_round_trips))?;
    out.set_item("restarts", array1(py, r.restarts))?;
    out.set_item("nonfinite_energies", array1(py, r.nonfinite_energies))?;
    out.set_item("pair_swaps", array1(py, r.pair_swaps))?;
    out.set_item("states", reshape2(py, r.states, (p, d))?)?;
    Ok(out)
}

/// Runs nrpt-core's own driver (`Tempering`, explore then exchange) on the toy target
/// of `nrpt run` flags `argv` and records, after every iteration, the energies it
/// computed (by replica, before the swaps), the permutation, the ladder, the buffer,
/// the swap flags and the counts (for the tests: a controller told these energies must
/// make these decisions).
#[pyfunction]
pub fn record_tempering<'py>(
    py: Python<'py>,
    argv: Vec<String>,
    ensemble: u32,
    dtype: &str,
    iterations: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let (options, oracle, p) = toy_of(&argv, ensemble)?;
    let d = EnergyOracle::<f64>::dim(&oracle);
    match Dtype::parse(dtype)? {
        Dtype::Float32 => {
            let r = py
                .detach(|| record::<f32>(options, oracle, p, iterations))
                .map_err(value_error)?;
            recording_dict(py, r, p, d)
        }
        Dtype::Float64 => {
            let r = py
                .detach(|| record::<f64>(options, oracle, p, iterations))
                .map_err(value_error)?;
            recording_dict(py, r, p, d)
        }
    }
}
