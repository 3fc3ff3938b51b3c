//! Axes: the range each axis spans and how its numbers read; plotters maps and ticks them.
//!
//! Plotters draws every axis: its linear coordinates place round ticks, its log
//! coordinates (`.log_scale()`) map values through the logarithm and place ticks at
//! powers of the base, and its mesh draws grid, ticks and labels. Three things are ours:
//! - The ranges. Plotters takes a range, it does not fit one to data: linear axes are
//!   padded by 5% of the data range, logarithmic axes span whole decades, or, when every
//!   value is a power of two (a window W, a number of chains P), are padded by 5% in
//!   octaves and ticked at the powers of two.
//! - On a log axis of at most two decades the ticks are 1, 2 and 5 times each power of
//!   ten: plotters would label only the two or three powers of ten there, too few to read
//!   a value. Plotters' other log ticks are kept; its minor grid lines too, except on a
//!   base-2 axis, where they fall at 1.2, 1.4, … times each power of two, so the grid
//!   lines there are the ticks.
//! - The label text: one notation per axis, plain decimals, or `2.5e6` on an axis that
//!   reaches a million or goes below a thousandth, where plotters' own formatting writes
//!   `5.0`, or mixes `1e4` and `15000` on one axis.

use std::ops::Range;

use anyhow::Result;
use plotters::coord::combinators::WithKeyPoints;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::data::float::FloatPrettyPrinter;
use plotters::prelude::*;

use super::{AXIS_COLOR, AXIS_DESC_SIZE, GRID_BOLD, GRID_LIGHT, PlotResult, TICK_SIZE, font};

/// How an axis maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scale {
    Linear,
    /// Logarithmic, ticked at powers of ten.
    Decades,
    /// Logarithmic, ticked at powers of two.
    Octaves,
}

/// One axis of a chart: its scale, its range in data units, and how its labels read.
#[derive(Debug, Clone)]
pub(super) struct Axis {
    pub(super) scale: Scale,
    pub(super) lo: f64,
    pub(super) hi: f64,
    /// The most labels plotters may place (its key-point hint).
    labels: usize,
    /// Labels in `2.5e6` notation rather than as plain decimals.
    scientific: bool,
}

/// Whether `v` can be drawn on a linear (`log == false`) or logarithmic axis: finite,
/// positive on a log axis, and within 1e±300, so that a range padded around it, or
/// widened to whole decades, stays finite and non-zero.
pub(super) fn drawable(v: f64, log: bool) -> bool {
    v.is_finite() && v.abs() <= 1e300 && (!log || v >= 1e-300)
}

impl Axis {
    /// A linear axis over exactly `[lo, hi]` with at most `labels` round ticks.
    pub(super) fn linear(lo: f64, hi: f64, labels: usize) -> Axis {
        let largest = lo.abs().max(hi.abs());
        Axis {
            scale: Scale::Linear,
            lo,
            hi,
            labels,
            scientific: !(1e-3..1e6).contains(&largest),
        }
    }

    /// An axis for data `values` and reference values `refs` (both already filtered to
    /// those [`drawable`] on it): a log axis is in octaves when all `values` are powers of
    /// two spanning at most 16 octaves, else in whole decades.
    pub(super) fn fit(values: &[f64], refs: &[f64], log: bool) -> Axis {
        let all = || values.iter().chain(refs).copied();
        let min = all().fold(f64::INFINITY, f64::min);
        let max = all().fold(f64::NEG_INFINITY, f64::max);
        if !log {
            let (lo, hi) = pad(min, max);
            return Axis::linear(lo, hi, 8);
        }
        let powers_of_two = values.iter().all(|v| {
            let e = v.log2();
            (e - e.round()).abs() < 1e-9
        });
        let (lo, hi, scale) = if powers_of_two && max.log2() - min.log2() <= 16.0 {
            let (lo, hi) = pad(min.log2(), max.log2());
            (lo.exp2(), hi.exp2(), Scale::Octaves)
        } else {
            let lo = min.log10().floor();
            let hi = max.log10().ceil().max(lo + 1.0);
            // A hair wider than the decades, so that plotters' ticks, found by repeated
            // multiplication, do not drop the last decade to rounding.
            (
                10f64.powf(lo) * (1.0 - 1e-9),
                10f64.powf(hi) * (1.0 + 1e-9),
                Scale::Decades,
            )
        };
        let labels = match scale {
            // One per octave, so that plotters puts no ticks between powers of two, and
            // every other octave past ten.
            Scale::Octaves => powers(lo, hi, 2.0).min(10),
            _ => 10,
        };
        Axis {
            scale,
            lo,
            hi,
            labels,
            scientific: lo < 1e-3 * (1.0 - 1e-6) || hi >= 1e6,
        }
    }

    /// The plotters coordinate of a linear axis.
    pub(super) fn linear_coord(&self) -> Range<f64> {
        self.lo..self.hi
    }

    /// The plotters coordinate of a logarithmic axis: plotters' log scale, with the tick
    /// and grid points described in the module comment.
    pub(super) fn log_coord(&self) -> WithKeyPoints<LogCoord<f64>> {
        let base = if self.scale == Scale::Octaves {
            2.0
        } else {
            10.0
        };
        let coord: LogCoord<f64> = (self.lo..self.hi).log_scale().base(base).into();
        let decades = powers(self.lo, self.hi, 10.0);
        let ticks = if self.scale == Scale::Decades && decades <= 2 {
            one_two_five(self.lo, self.hi)
        } else {
            coord.key_points(self.labels)
        };
        let mut grid = match self.scale {
            Scale::Octaves => ticks.clone(),
            // Asked for ten points a decade, plotters gives 1, 2, …, 9 times each power of
            // ten; asked for more, it can give 99. Past six decades those would be too
            // dense, and the grid lines are the decades.
            _ => coord.key_points(if decades <= 6 { 10 * decades } else { decades }),
        };
        // Plotters gives each power of the base twice (as 10 × 10^k and as 10^(k+1)).
        grid.dedup_by(|a, b| (*a / *b - 1.0).abs() < 1e-9);
        coord.with_key_points(ticks).with_light_points(grid)
    }

    /// The label of the tick at `v`.
    pub(super) fn label(&self, v: f64) -> String {
        // Linear ticks near zero can come out as 1e-17.
        if v == 0.0 || (self.scale == Scale::Linear && v.abs() <= 1e-9 * (self.hi - self.lo)) {
            return "0".into();
        }
        if self.scientific {
            scientific(v)
        } else {
            plain(v)
        }
    }
}

/// Powers of `base` between `lo` and `hi`, rounded down (at least one) as plotters' log
/// coordinate counts them.
fn powers(lo: f64, hi: f64, base: f64) -> usize {
    ((hi / lo).ln() / base.ln()).floor().max(1.0) as usize
}

/// 1, 2 and 5 times each power of ten in `[lo, hi]`.
fn one_two_five(lo: f64, hi: f64) -> Vec<f64> {
    let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    (first..=last)
        .flat_map(|k| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(k)))
        .filter(|v| (lo..=hi).contains(v))
        .collect()
}

/// `[min, max]` padded by 5% of its span on each side (a unit-ish span when it is empty).
fn pad(min: f64, max: f64) -> (f64, f64) {
    let span = max - min;
    if span > 0.0 && span.is_finite() {
        (min - 0.05 * span, max + 0.05 * span)
    } else {
        let half = if min == 0.0 { 1.0 } else { 0.1 * min.abs() };
        (min - half, max + half)
    }
}

/// `v` as a plain decimal, shortest within a millionth (ticks arrive rounded).
fn plain(v: f64) -> String {
    FloatPrettyPrinter {
        allow_scientific: false,
        min_decimal: 0,
        max_decimal: 6,
    }
    .print(v)
}

/// `v` as `2.5e6`, with at most four significant digits.
fn scientific(v: f64) -> String {
    let mut exponent = v.abs().log10().floor();
    let mut mantissa = (v / 10f64.powf(exponent) * 1000.0).round() / 1000.0;
    if mantissa.abs() >= 10.0 {
        mantissa /= 10.0;
        exponent += 1.0;
    }
    format!("{}e{exponent}", plain(mantissa))
}

/// Draws the axes, ticks, grid (when `grid`) and axis descriptions of `chart`.
pub(super) fn draw_mesh<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    x: &Axis,
    y: &Axis,
    x_desc: &str,
    y_desc: &str,
    grid: bool,
) -> Result<()>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let x_fmt = |v: &f64| x.label(*v);
    let y_fmt = |v: &f64| y.label(*v);
    let mut mesh = chart.configure_mesh();
    mesh.x_labels(x.labels)
        .y_labels(y.labels)
        // No grid lines between the ticks of a linear axis; a log axis brings its own
        // (plotters asks it for them regardless of this limit).
        .x_max_light_lines(0)
        .y_max_light_lines(0)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style(font(AXIS_DESC_SIZE))
        .label_style(font(TICK_SIZE))
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .axis_style(AXIS_COLOR)
        .bold_line_style(GRID_BOLD)
        .light_line_style(GRID_LIGHT);
    if !grid {
        mesh.disable_mesh();
    }
    mesh.draw().plot()
}

#[cfg(test)]
mod tests {
    use super::*;
    use plotters::coord::ranged1d::{BoldPoints, LightPoints};

    /// The labelled ticks of a log axis, as plotters' mesh asks for them.
    fn ticks(axis: &Axis) -> Vec<String> {
        axis.log_coord()
            .key_points(BoldPoints(axis.labels))
            .into_iter()
            .map(|v| axis.label(v))
            .collect()
    }

    #[test]
    fn labels_read_as_plain_decimals_or_one_scientific_notation() {
        let a = Axis::linear(-0.05, 1.05, 8);
        assert_eq!(a.label(0.30000000000000004), "0.3");
        assert_eq!(a.label(1e-17), "0");
        assert_eq!(a.label(20_000.0), "20000");
        let b = Axis::linear(0.0, 3e6, 8);
        assert_eq!(b.label(2_500_000.0), "2.5e6");
        assert_eq!(b.label(1_000_000.0000001), "1e6");
        assert_eq!(b.label(0.0), "0");
        assert_eq!(scientific(9.9999e-6), "1e-5");
        assert_eq!(scientific(-1.25e7), "-1.25e7");
    }

    #[test]
    fn powers_of_two_are_ticked_by_octave() {
        let a = Axis::fit(&[1.0, 2.0, 4.0, 64.0], &[], true);
        assert_eq!(a.scale, Scale::Octaves);
        assert_eq!(ticks(&a), ["1", "2", "4", "8", "16", "32", "64"]);
        // Past ten octaves, every other one.
        let b = Axis::fit(&[1.0, 4096.0], &[], true);
        assert_eq!(ticks(&b), ["1", "4", "16", "64", "256", "1024", "4096"]);
        // A reference value that is no power of two does not change the scale.
        let c = Axis::fit(&[8.0, 256.0], &[11.3], true);
        assert_eq!(c.scale, Scale::Octaves);
        assert!(Axis::fit(&[3.0, 256.0], &[], true).scale == Scale::Decades);
    }

    #[test]
    fn decades_are_whole_and_narrow_ones_ticked_at_one_two_five() {
        let a = Axis::fit(&[3e-5, 2e-3], &[], true);
        assert_eq!(a.scale, Scale::Decades);
        assert!((a.lo / 1e-5 - 1.0).abs() < 1e-6 && (a.hi / 1e-2 - 1.0).abs() < 1e-6);
        assert_eq!(ticks(&a), ["1e-5", "1e-4", "1e-3", "1e-2"]);
        let b = Axis::fit(&[0.2, 0.7], &[], true);
        assert_eq!(ticks(&b), ["0.1", "0.2", "0.5", "1"]);
        let c = Axis::fit(&[1.5, 60.0], &[], true);
        assert_eq!(ticks(&c), ["1", "2", "5", "10", "20", "50", "100"]);
        // Minor grid lines at 2, 3, …, 9 times each power of ten, also on one decade.
        let grid = |a: &Axis| a.log_coord().key_points(LightPoints::new(10, 100)).len();
        assert_eq!(grid(&c), 19);
        assert_eq!(grid(&Axis::fit(&[1.5, 6.0], &[], true)), 10);
        // Past six decades, only the decades.
        assert_eq!(grid(&Axis::fit(&[1e-9, 1.0], &[], true)), 10);
    }

    #[test]
    fn one_two_five_stays_in_range() {
        assert_eq!(one_two_five(0.9, 60.0), [1.0, 2.0, 5.0, 10.0, 20.0, 50.0]);
    }
}
