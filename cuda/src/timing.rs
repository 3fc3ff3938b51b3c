//! How GPU figures are measured: CUDA events around the iterations alone, the median of
//! repetitions, and the targets each math mode is judged against.
//!
//! - A device clock (used by [`GpuEnsembles`](crate::GpuEnsembles) and
//!   [`GpuMlp`](crate::mlp::GpuMlp) when timing is on: `time_device`) records one event after each
//!   chunk's upload of adaptation constants and one after its last launch, and adds
//!   the time between them: set-up, uploads, snapshots and downloads are outside every
//!   timed interval; the host's gaps between chunks are too.
//! - A figure is the [`median`] of at least [`MIN_REPETITIONS`] repetitions of at least
//!   [`MIN_ITERATIONS`] iterations each, after a warm-up.
//! - Every bench reports each mode of [`BENCH_MODES`] separately, against its own
//!   target ([`target_2d_chain_steps`], [`target_mlp_share`]); no headline takes the
//!   best over modes.

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};

use crate::error::{CudaError, driver};
use crate::params::MathMode;

/// Fewest repetitions of which a figure is the median.
pub const MIN_REPETITIONS: usize = 3;

/// Fewest iterations of one timed repetition.
pub const MIN_ITERATIONS: u64 = 300;

/// The math modes a bench reports, in this order, each against its own target: the
/// exact mode (nrpt-core's bits) first, then the fast one (FMA and the hardware
/// approximations). Code that reads this list names every field by [`MathMode::name`].
pub const BENCH_MODES: [MathMode; 2] = [MathMode::Exact, MathMode::Fast];

/// Whether `mode` is the exact mode (nrpt-core's bits), judged against the exact
/// targets; every other mode is judged against the fast ones.
pub fn is_exact(mode: MathMode) -> bool {
    mode == MathMode::Exact
}

/// Chain-steps per second the 2D toy should reach on an H200 (issue 23): 2·10¹⁰ in
/// the exact mode, 6·10¹⁰ in the fast one.
pub fn target_2d_chain_steps(mode: MathMode) -> f64 {
    if is_exact(mode) { 2e10 } else { 6e10 }
}

/// Share of the measured FP32 peak the MLP bench ([64, 64, 10], batch 64, ≥ 4096
/// chains) should reach: 30 % in the fast mode; the exact mode (no FMA, software
/// transcendentals) has no target and is reported beside it.
pub fn target_mlp_share(mode: MathMode) -> Option<f64> {
    (!is_exact(mode)).then_some(0.30)
}

/// The median of `xs` (the mean of the two middle values for an even count); `None`
/// when empty or when a value is not finite.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    })
}

/// Time spent on the device by timed intervals of one stream, in seconds (CUDA events;
/// off until [`set`](Self::set)).
#[derive(Debug, Default)]
pub(crate) struct DeviceClock {
    on: bool,
    seconds: f64,
}

impl DeviceClock {
    /// Turns timing on (or off) and resets the total.
    pub(crate) fn set(&mut self, on: bool) {
        *self = DeviceClock {
            on,
            ..DeviceClock::default()
        };
    }

    /// Whether timing is on.
    pub(crate) fn is_on(&self) -> bool {
        self.on
    }

    /// Seconds of every interval timed since [`set`](Self::set).
    pub(crate) fn seconds(&self) -> f64 {
        self.seconds
    }

    /// Records the start of an interval on `stream` (nothing when timing is off).
    pub(crate) fn start(&self, stream: &Arc<CudaStream>) -> Result<Option<CudaEvent>, CudaError> {
        if !self.on {
            return Ok(None);
        }
        stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map(Some)
            .map_err(driver("recording a timing event"))
    }

    /// Records the end of the interval begun by `start` on `stream`, waits for it and
    /// adds its length.
    pub(crate) fn stop(
        &mut self,
        stream: &Arc<CudaStream>,
        start: Option<CudaEvent>,
    ) -> Result<(), CudaError> {
        let Some(start) = start else {
            return Ok(());
        };
        let end = stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver("recording a timing event"))?;
        let ms = start
            .elapsed_ms(&end)
            .map_err(driver("reading a timing event"))?;
        self.seconds += f64::from(ms) * 1e-3;
        Ok(())
    }
}

/// One measured configuration: every repetition's device and end-to-end seconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Repetitions {
    /// Seconds on the device of each repetition's iterations (CUDA events).
    pub device: Vec<f64>,
    /// Wall-clock seconds of each repetition end to end (what the caller timed around
    /// it: set-up, uploads, snapshots and downloads included).
    pub end_to_end: Vec<f64>,
}

impl Repetitions {
    /// Adds one repetition.
    pub fn push(&mut self, device: f64, end_to_end: f64) {
        self.device.push(device);
        self.end_to_end.push(end_to_end);
    }

    /// The median device seconds.
    pub fn device_seconds(&self) -> Option<f64> {
        median(&self.device)
    }

    /// The median end-to-end seconds.
    pub fn end_to_end_seconds(&self) -> Option<f64> {
        median(&self.end_to_end)
    }

    /// Whether there are enough repetitions for a figure ([`MIN_REPETITIONS`]).
    pub fn enough(&self) -> bool {
        self.device.len() >= MIN_REPETITIONS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN, 2.0]), None);
        // An outlier does not move it, unlike the mean or the best.
        assert_eq!(median(&[1.0, 1.1, 100.0]), Some(1.1));
    }

    #[test]
    fn every_mode_has_its_own_target() {
        let exact = MathMode::Exact;
        assert_eq!(target_2d_chain_steps(exact), 2e10);
        assert_eq!(target_mlp_share(exact), None);
        let fast: Vec<_> = BENCH_MODES.iter().filter(|m| !is_exact(**m)).collect();
        assert_eq!(fast.len(), 1, "one fast mode beside the exact one");
        assert_eq!(target_2d_chain_steps(*fast[0]), 6e10);
        assert_eq!(target_mlp_share(*fast[0]), Some(0.30));
        assert_eq!(BENCH_MODES[0], exact, "the exact mode comes first");
        assert_eq!(exact.name(), "exact");
        assert_eq!(MathMode::Fma.name(), "fma");
    }

    #[test]
    fn repetitions_report_medians() {
        let mut r = Repetitions::default();
        assert!(!r.enough());
        r.push(1.0, 2.0);
        r.push(3.0, 5.0);
        r.push(2.0, 4.0);
        assert!(r.enough());
        assert_eq!(r.device_seconds(), Some(2.0));
        assert_eq!(r.end_to_end_seconds(), Some(4.0));
    }
}
