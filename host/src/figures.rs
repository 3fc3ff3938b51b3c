//! Figures of `nrpt reproduce` and `nrpt scale`, each written as PNG and SVG.
//!
//! Every public function takes a path *stem* and writes `<stem>.png` and `<stem>.svg`
//! from the same drawing code. Each file is first written under a hidden temporary name
//! in the destination folder (containing `.tmp.`) and then renamed into place, so an
//! interrupted run never leaves a half-written figure behind.
//!
//! The figures:
//! - [`density_panels`]: heat maps side by side, the ground-truth density beside each
//!   method's sample density (Fig. 5 of Deng et al., AAAI 2023).
//! - [`lines`]: a general line chart with linear or logarithmic axes (round trips against
//!   the window W, the learning-rate ladder and swap rates against iteration, and the
//!   round-trip time E\[T\] against the number of chains P).
//! - [`index_paths`]: the index process, the level each replica occupies against iteration,
//!   one panel per swap scheme (Fig. 6).
//!
//! The PNG text is drawn with DejaVu Sans, which ships in `host/assets/fonts/` (with its
//! licence) and is embedded in the binary; the SVG files name the generic `sans-serif`
//! family and leave the choice of font to the viewer.

use std::ffi::OsString;
use std::fmt::Display;
use std::fs;
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result, anyhow, bail, ensure};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The font family under which the embedded font is registered (and which SVG files name).
const FONT: &str = "sans-serif";

/// DejaVu Sans, see `host/assets/fonts/LICENSE-DejaVu.txt`.
static FONT_BYTES: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");

const TITLE_SIZE: f64 = 24.0;
const PANEL_TITLE_SIZE: f64 = 20.0;
const AXIS_DESC_SIZE: f64 = 17.0;
const TICK_SIZE: f64 = 14.0;
const LEGEND_SIZE: f64 = 15.0;

const GRID_BOLD: RGBColor = RGBColor(215, 215, 215);
const GRID_LIGHT: RGBColor = RGBColor(238, 238, 238);
const AXIS_COLOR: RGBColor = RGBColor(60, 60, 60);
const REFERENCE_COLOR: RGBColor = RGBColor(40, 40, 40);

/// Tableau 10: distinguishable, colour-blind-friendly categorical colours.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// Viridis (as in matplotlib and R), sampled at ten evenly spaced points.
const VIRIDIS: [(u8, u8, u8); 10] = [
    (0x44, 0x01, 0x54),
    (0x48, 0x28, 0x78),
    (0x3e, 0x49, 0x89),
    (0x31, 0x68, 0x8e),
    (0x26, 0x82, 0x8e),
    (0x1f, 0x9e, 0x89),
    (0x35, 0xb7, 0x79),
    (0x6e, 0xce, 0x58),
    (0xb5, 0xde, 0x2b),
    (0xfd, 0xe7, 0x25),
];

// ---------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------

/// One heat map of [`density_panels`]: a density on an `n × n` grid of bins.
#[derive(Debug, Clone, Copy)]
pub struct DensityPanel<'a> {
    /// Title above the panel, e.g. `"Ground truth"` or `"DEO⋆ (W = 7)"`.
    pub title: &'a str,
    /// `n * n` non-negative values, row-major: row `r` is the `r`-th y bin (row 0 at
    /// y = `extent[0]`, the bottom), column `c` is the `c`-th x bin. Non-finite and
    /// negative values are drawn as zero.
    pub values: &'a [f64],
    /// Number of bins along each axis.
    pub n: usize,
    /// The range `[lo, hi]` covered by the grid, the same along x and y.
    pub extent: [f64; 2],
}

/// How a [`Series`] of a [`LineChart`] is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A solid line through the points.
    Line,
    /// A solid line with a marker at each point.
    LinePoints,
    /// A dashed line (e.g. a model prediction or a fit).
    Dashed,
    /// Markers only.
    Points,
}

/// One data series of a [`LineChart`].
#[derive(Debug, Clone, Copy)]
pub struct Series<'a> {
    /// The legend entry; an empty name leaves the series out of the legend.
    pub name: &'a str,
    /// `(x, y)` points in drawing order. Non-finite points, and non-positive values on a
    /// logarithmic axis, are skipped: a line is broken where they occur.
    pub points: &'a [(f64, f64)],
    /// How the series is drawn.
    pub style: Style,
}

/// A line chart, drawn by [`lines`].
///
/// Series take their colours in order from a fixed ten-colour palette (Tableau 10); a
/// chart of more than ten series (such as one line per level of a 16-level ladder) is
/// coloured along the viridis colour map instead, so that neighbouring series get
/// neighbouring colours. Axis ranges are automatic: linear axes are padded by 5% of the
/// data range, logarithmic axes span whole decades (or, when every value on the axis is
/// a power of two, such as a window W or a number of chains P, are labelled in powers
/// of two and padded by 5%).
#[derive(Debug, Clone, Copy)]
pub struct LineChart<'a> {
    /// Title above the chart.
    pub title: &'a str,
    /// Label of the horizontal axis.
    pub x_label: &'a str,
    /// Label of the vertical axis.
    pub y_label: &'a str,
    /// Logarithmic horizontal axis.
    pub x_log: bool,
    /// Logarithmic vertical axis.
    pub y_log: bool,
    /// The data; at least one series must have a point that can be drawn.
    pub series: &'a [Series<'a>],
    /// Horizontal reference lines `(y, label)`, dashed, e.g. a target swap rate; a
    /// non-empty label is shown in the legend.
    pub hlines: &'a [(f64, &'a str)],
    /// Vertical reference lines `(x, label)`, dotted, e.g. the end of the burn-in; a
    /// non-empty label is shown in the legend.
    pub vlines: &'a [(f64, &'a str)],
}

/// One panel of [`index_paths`]: the levels visited by a few replicas under one scheme.
#[derive(Debug, Clone, Copy)]
pub struct PathPanel<'a> {
    /// Title above the panel, e.g. `"DEO (W = 1)"`.
    pub title: &'a str,
    /// The iterations at which the levels were recorded, increasing.
    pub iterations: &'a [u64],
    /// One vector per replica: the level (0 = target, `chains − 1` = hottest) it occupied
    /// at each of `iterations` (same length).
    pub levels: &'a [Vec<u32>],
    /// Number of chains P; levels run from 0 to P − 1.
    pub chains: usize,
}

/// Writes `<stem>.png` and `<stem>.svg`: the heat maps of `panels` side by side (up to
/// four in a row, otherwise rows of three), each normalised to its own maximum and drawn
/// on one shared colour scale (viridis, with a colour bar on the right).
///
/// Errors if `panels` is empty, a panel's `values` is not `n * n` long, `n` is zero, the
/// extent is not an increasing pair of finite numbers, or a file cannot be written.
pub fn density_panels(stem: &Path, panels: &[DensityPanel<'_>]) -> Result<()> {
    ensure!(!panels.is_empty(), "density figure: no panels to draw");
    for p in panels {
        ensure!(p.n > 0, "density panel {:?}: the grid has no bins", p.title);
        ensure!(
            p.values.len() == p.n * p.n,
            "density panel {:?}: {} values for a {n} × {n} grid",
            p.title,
            p.values.len(),
            n = p.n
        );
        ensure!(
            p.extent[0].is_finite() && p.extent[1].is_finite() && p.extent[0] < p.extent[1],
            "density panel {:?}: bad extent {:?}",
            p.title,
            p.extent
        );
    }
    render(stem, &DensityFigure { panels })
}

/// Writes `<stem>.png` and `<stem>.svg`: the line chart `spec`, with its legend to the
/// right of the plot (series with a non-empty name, then labelled reference lines).
///
/// Errors if there is no series or no drawable point (all non-finite, or non-positive on
/// a logarithmic axis), or if a file cannot be written.
pub fn lines(stem: &Path, spec: &LineChart<'_>) -> Result<()> {
    ensure!(
        !spec.series.is_empty(),
        "line chart {:?}: no series to draw",
        spec.title
    );
    let fig = LineFigure::new(spec)?;
    render(stem, &fig)
}

/// Writes `<stem>.png` and `<stem>.svg`: for each panel (stacked vertically, sharing
/// nothing), one step line per replica giving its level against iteration.
///
/// Errors if `panels` is empty, a panel has no replicas, no iterations or `chains == 0`,
/// the iterations are not increasing, a replica's levels differ in length from the
/// iterations or reach `chains`, or a file cannot be written.
pub fn index_paths(stem: &Path, panels: &[PathPanel<'_>]) -> Result<()> {
    ensure!(
        !panels.is_empty(),
        "index-process figure: no panels to draw"
    );
    for p in panels {
        ensure!(p.chains > 0, "index panel {:?}: no chains", p.title);
        ensure!(
            !p.levels.is_empty(),
            "index panel {:?}: no replicas",
            p.title
        );
        ensure!(
            !p.iterations.is_empty(),
            "index panel {:?}: no iterations",
            p.title
        );
        ensure!(
            p.iterations.windows(2).all(|w| w[0] < w[1]),
            "index panel {:?}: iterations are not increasing",
            p.title
        );
        for (r, l) in p.levels.iter().enumerate() {
            ensure!(
                l.len() == p.iterations.len(),
                "index panel {:?}: replica {r} has {} levels for {} iterations",
                p.title,
                l.len(),
                p.iterations.len()
            );
            ensure!(
                l.iter().all(|&v| (v as usize) < p.chains),
                "index panel {:?}: replica {r} has a level ≥ P = {}",
                p.title,
                p.chains
            );
        }
    }
    render(stem, &PathFigure { panels })
}

// ---------------------------------------------------------------------------------------
// Rendering to files
// ---------------------------------------------------------------------------------------

/// A figure that can be drawn on any plotters backend.
trait Figure {
    /// Size in pixels (PNG) or user units (SVG).
    fn size(&self) -> (u32, u32);
    /// Draws the figure on a white `root`.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()>;
}

/// Turns plotters' errors, which are not `Send + Sync + 'static` in general, into anyhow.
trait PlotResult<T> {
    fn plot(self) -> Result<T>;
}

impl<T, E: Display> PlotResult<T> for std::result::Result<T, E> {
    fn plot(self) -> Result<T> {
        self.map_err(|e| anyhow!("drawing failed: {e}"))
    }
}

/// Registers the embedded font once, for the bitmap backend (and for text measurement).
fn ensure_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES).is_ok()
    });
    ensure!(ok, "the embedded font DejaVu Sans could not be loaded");
    Ok(())
}

/// Writes `<stem>.svg` and `<stem>.png`, each through a temporary file and a rename.
fn render(stem: &Path, fig: &impl Figure) -> Result<()> {
    ensure_font()?;
    let file_name = stem
        .file_name()
        .ok_or_else(|| anyhow!("figure path {} has no file name", stem.display()))?;
    let dir = match stem.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let target = |ext: &str| {
        let mut s = file_name.to_os_string();
        s.push(".");
        s.push(ext);
        dir.join(s)
    };
    let temporary = |ext: &str| {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let k = COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut s = OsString::from(".");
        s.push(file_name);
        s.push(format!(".{}-{k}.tmp.{ext}", std::process::id()));
        dir.join(s)
    };
    let size = fig.size();

    // SVG: drawn in memory, so a drawing error touches no file.
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).plot()?;
        fig.draw(&root)?;
        root.present().plot()?;
    }
    let svg_path = target("svg");
    crate::output::write_atomic(&svg_path, svg.as_bytes())?;

    // PNG: the bitmap backend encodes by file extension, so the temporary name ends in .png.
    let png_path = target("png");
    let png_tmp = temporary("png");
    let drawn = (|| -> Result<()> {
        let root = BitMapBackend::new(&png_tmp, size).into_drawing_area();
        root.fill(&WHITE).plot()?;
        fig.draw(&root)?;
        root.present().plot()
    })();
    // The backend is dropped by now (a drop presents it), so the temporary file is final.
    let moved = drawn.and_then(|()| fs::rename(&png_tmp, &png_path).map_err(Into::into));
    if moved.is_err() {
        let _ = fs::remove_file(&png_tmp);
    }
    moved.with_context(|| format!("writing {}", png_path.display()))
}

// ---------------------------------------------------------------------------------------
// Colours
// ---------------------------------------------------------------------------------------

/// The viridis colour map at `t` in [0, 1] (clamped; NaN gives the bottom colour).
fn viridis(t: f64) -> RGBColor {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let x = t * (VIRIDIS.len() - 1) as f64;
    let i = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |p: u8, q: u8| (p as f64 + (q as f64 - p as f64) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Colour of series `i` of `n`: the palette when it suffices, else spread along viridis
/// (stopping short of its pale yellow end, which is hard to see on white).
fn series_color(i: usize, n: usize) -> RGBColor {
    if n <= PALETTE.len() {
        PALETTE[i % PALETTE.len()]
    } else {
        viridis(0.88 * i as f64 / (n - 1) as f64)
    }
}

// ---------------------------------------------------------------------------------------
// Axes
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
enum Scale {
    Linear,
    Log10,
    Log2,
}

impl Scale {
    /// Data value to drawing coordinate; `None` if it cannot be drawn on this scale.
    fn forward(self, v: f64) -> Option<f64> {
        let t = match self {
            Scale::Linear => v,
            Scale::Log10 if v > 0.0 => v.log10(),
            Scale::Log2 if v > 0.0 => v.log2(),
            _ => return None,
        };
        t.is_finite().then_some(t)
    }
}

/// An axis in drawing coordinates (logarithms for log axes), with its labelled ticks.
#[derive(Debug, Clone)]
struct Axis {
    scale: Scale,
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
    minor: Vec<f64>,
}

impl Axis {
    /// An axis for data `values` and reference values `refs` (both already filtered to
    /// those drawable on it): a log axis is in powers of two when all `values` are.
    fn fit_with(values: &[f64], refs: &[f64], log: bool) -> Axis {
        let all = || values.iter().chain(refs).copied();
        let min = all().fold(f64::INFINITY, f64::min);
        let max = all().fold(f64::NEG_INFINITY, f64::max);
        if !log {
            let (lo, hi) = pad(min, max);
            return Axis::linear(lo, hi);
        }
        let powers_of_two = values.iter().all(|v| {
            let e = v.log2();
            (e - e.round()).abs() < 1e-9
        });
        let (tl2, th2) = (min.log2(), max.log2());
        if powers_of_two && th2 - tl2 <= 16.0 {
            let (lo, hi) = pad(tl2, th2);
            let every = if th2 - tl2 > 10.0 { 2 } else { 1 };
            let ticks = (lo.ceil() as i32..=hi.floor() as i32)
                .filter(|k| k.rem_euclid(every) == 0)
                .map(|k| (k as f64, power_of_two_label(k)))
                .collect();
            return Axis {
                scale: Scale::Log2,
                lo,
                hi,
                ticks,
                minor: Vec::new(),
            };
        }
        let lo = min.log10().floor();
        let mut hi = max.log10().ceil();
        if hi <= lo {
            hi = lo + 1.0;
        }
        let (klo, khi) = (lo as i32, hi as i32);
        let decades = khi - klo;
        let every = (decades + 9) / 10;
        // Over one or two decades, 2 and 5 times each power of ten are labelled too.
        let labelled: &[u32] = if decades <= 2 { &[1, 2, 5] } else { &[1] };
        let mut marks = Vec::new();
        let mut minor = Vec::new();
        for k in klo..=khi {
            for m in 1..=9u32 {
                if k == khi && m > 1 {
                    break;
                }
                let t = k as f64 + (m as f64).log10();
                if labelled.contains(&m) && (m > 1 || (k - klo) % every == 0) {
                    marks.push((m, k, t));
                } else if decades <= 6 {
                    minor.push(t);
                }
            }
        }
        // One notation for the whole axis: plain decimals when all fit, else 1e-5 style.
        let plain = marks.iter().all(|&(_, k, _)| (-3..=5).contains(&k));
        let ticks = marks
            .into_iter()
            .map(|(m, k, t)| (t, decimal_label(m, k, plain)))
            .collect();
        Axis {
            scale: Scale::Log10,
            lo,
            hi,
            ticks,
            minor,
        }
    }

    /// A linear axis over exactly `[lo, hi]` with about six round ticks.
    fn linear(lo: f64, hi: f64) -> Axis {
        Axis::linear_with(lo, hi, 6.0)
    }

    fn linear_with(lo: f64, hi: f64, target: f64) -> Axis {
        let step = nice_step((hi - lo) / target);
        let first = (lo / step - 1e-9).ceil() as i64;
        let last = (hi / step + 1e-9).floor() as i64;
        let ticks = (first..=last)
            .map(|k| {
                let t = k as f64 * step;
                (t, linear_label(t, step))
            })
            .collect();
        Axis {
            scale: Scale::Linear,
            lo,
            hi,
            ticks,
            minor: Vec::new(),
        }
    }

    /// The plotters coordinate: a linear range with these ticks as key points.
    fn coord(&self) -> AxisCoord {
        AxisCoord {
            lo: self.lo,
            hi: self.hi,
            bold: self.ticks.iter().map(|t| t.0).collect(),
            light: self.minor.clone(),
        }
    }

    /// The label of the tick at drawing coordinate `t` (empty if `t` is not a tick).
    fn label(&self, t: f64) -> String {
        let tol = 1e-9 * (self.hi - self.lo).abs().max(1e-300);
        self.ticks
            .iter()
            .find(|(x, _)| (x - t).abs() <= tol)
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    }
}

/// A linear plotters coordinate with given tick (bold) and grid-only (light) points.
///
/// Plotters' own `WithKeyPoints` over `f64` cannot be used with `configure_mesh`.
#[derive(Debug, Clone)]
struct AxisCoord {
    lo: f64,
    hi: f64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl Ranged for AxisCoord {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v - self.lo) / (self.hi - self.lo);
        let f = if f.is_nan() { 0.0 } else { f.clamp(-4.0, 5.0) };
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
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

/// The smallest of 1, 2, 5 × 10^k not below `raw`.
fn nice_step(raw: f64) -> f64 {
    let raw = if raw > 0.0 && raw.is_finite() {
        raw
    } else {
        1.0
    };
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm <= 1.0 + 1e-9 {
        1.0
    } else if norm <= 2.0 + 1e-9 {
        2.0
    } else if norm <= 5.0 + 1e-9 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// A tick label on a linear axis with ticks `step` apart.
fn linear_label(t: f64, step: f64) -> String {
    if t.abs() < step * 1e-6 {
        return "0".to_string();
    }
    let a = t.abs();
    if !(1e-3..1e6).contains(&a) {
        let digits = (a.log10().floor() - step.log10().floor()).max(0.0) as usize;
        let s = format!("{t:.digits$e}");
        return s;
    }
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    format!("{t:.decimals$}")
}

/// The label of `m` × 10^`k` (m a single digit), as a plain decimal or as `me k`.
fn decimal_label(m: u32, k: i32, plain: bool) -> String {
    if plain {
        let v = m as f64 * 10f64.powi(k);
        let decimals = (-k).max(0) as usize;
        format!("{v:.decimals$}")
    } else {
        format!("{m}e{k}")
    }
}

/// The label of 2^`k`.
fn power_of_two_label(k: i32) -> String {
    if (0..=20).contains(&k) {
        format!("{}", 1u64 << k)
    } else if (-10..0).contains(&k) {
        let v = 2f64.powi(k);
        format!("{v}")
    } else {
        format!("2^{k}")
    }
}

// ---------------------------------------------------------------------------------------
// Shared drawing helpers
// ---------------------------------------------------------------------------------------

fn font(size: f64) -> TextStyle<'static> {
    (FONT, size).into_font().color(&BLACK)
}

/// Draws the axes, ticks, grid and axis labels of `chart`.
fn draw_mesh<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<AxisCoord, AxisCoord>>,
    x: &Axis,
    y: &Axis,
    x_label: &str,
    y_label: &str,
    grid: bool,
) -> Result<()> {
    let x_fmt = |t: &f64| x.label(*t);
    let y_fmt = |t: &f64| y.label(*t);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(x_label)
        .y_desc(y_label)
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

/// A legend entry: how its sample is drawn.
#[derive(Debug, Clone, Copy)]
enum Swatch {
    Series(Style, RGBColor),
    HLine,
    VLine,
}

/// Width needed by a legend of `entries`.
fn legend_width<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(String, Swatch)],
) -> u32 {
    let style = font(LEGEND_SIZE);
    let text = entries
        .iter()
        .map(|(name, _)| {
            area.estimate_text_size(name, &style)
                .map(|s| s.0)
                .unwrap_or(8 * name.len() as u32)
        })
        .max()
        .unwrap_or(0);
    text + 70
}

/// Draws `entries` in a framed box at the top left of `area`.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(String, Swatch)],
    top: i32,
) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let (w, h) = area.dim_in_pixel();
    let avail = (h as i32 - top - 20).max(40);
    let row = (avail / entries.len() as i32).clamp(8, 24);
    let size = (row as f64 * 0.68).min(LEGEND_SIZE);
    let style = font(size).pos(Pos::new(HPos::Left, VPos::Center));
    let (x0, x1) = (8, w as i32 - 8);
    let box_bottom = top + row * entries.len() as i32 + 10;
    area.draw(&Rectangle::new(
        [(x0, top), (x1, box_bottom)],
        ShapeStyle::from(&WHITE).filled(),
    ))
    .plot()?;
    area.draw(&Rectangle::new(
        [(x0, top), (x1, box_bottom)],
        GRID_BOLD.stroke_width(1),
    ))
    .plot()?;
    for (i, (name, swatch)) in entries.iter().enumerate() {
        let cy = top + 5 + row * i as i32 + row / 2;
        let (sx0, sx1) = (x0 + 10, x0 + 44);
        match *swatch {
            Swatch::Series(style, color) => {
                let stroke = color.stroke_width(2);
                match style {
                    Style::Line | Style::LinePoints => {
                        area.draw(&PathElement::new(vec![(sx0, cy), (sx1, cy)], stroke))
                            .plot()?;
                    }
                    Style::Dashed => {
                        for (a, b) in [(sx0, sx0 + 9), (sx0 + 13, sx0 + 22), (sx0 + 26, sx1)] {
                            area.draw(&PathElement::new(vec![(a, cy), (b, cy)], stroke))
                                .plot()?;
                        }
                    }
                    Style::Points => {}
                }
                if matches!(style, Style::LinePoints | Style::Points) {
                    area.draw(&Circle::new(((sx0 + sx1) / 2, cy), 4, color.filled()))
                        .plot()?;
                }
            }
            Swatch::HLine => {
                let stroke = REFERENCE_COLOR.stroke_width(2);
                for (a, b) in [(sx0, sx0 + 9), (sx0 + 13, sx0 + 22), (sx0 + 26, sx1)] {
                    area.draw(&PathElement::new(vec![(a, cy), (b, cy)], stroke))
                        .plot()?;
                }
            }
            Swatch::VLine => {
                let stroke = REFERENCE_COLOR.stroke_width(2);
                let mut a = sx0;
                while a < sx1 {
                    area.draw(&PathElement::new(
                        vec![(a, cy), ((a + 3).min(sx1), cy)],
                        stroke,
                    ))
                    .plot()?;
                    a += 7;
                }
            }
        }
        area.draw(&Text::new(name.clone(), (sx1 + 10, cy), style.clone()))
            .plot()?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Line chart
// ---------------------------------------------------------------------------------------

struct LineFigure<'a> {
    spec: &'a LineChart<'a>,
    x: Axis,
    y: Axis,
    /// Per series, its drawable runs of points in drawing coordinates.
    runs: Vec<Vec<Vec<(f64, f64)>>>,
}

impl<'a> LineFigure<'a> {
    fn new(spec: &'a LineChart<'a>) -> Result<Self> {
        let xs = if spec.x_log {
            Scale::Log10
        } else {
            Scale::Linear
        };
        let ys = if spec.y_log {
            Scale::Log10
        } else {
            Scale::Linear
        };
        let ok = |&(x, y): &(f64, f64)| xs.forward(x).is_some() && ys.forward(y).is_some();
        let mut xv = Vec::new();
        let mut yv = Vec::new();
        for s in spec.series {
            for p in s.points.iter().filter(|p| ok(p)) {
                xv.push(p.0);
                yv.push(p.1);
            }
        }
        if xv.is_empty() {
            bail!(
                "line chart {:?}: no point can be drawn (all are non-finite{})",
                spec.title,
                if spec.x_log || spec.y_log {
                    " or non-positive on a log axis"
                } else {
                    ""
                }
            );
        }
        // Reference lines widen the range so that they stay visible.
        let xr: Vec<f64> = spec
            .vlines
            .iter()
            .map(|v| v.0)
            .filter(|&v| xs.forward(v).is_some())
            .collect();
        let yr: Vec<f64> = spec
            .hlines
            .iter()
            .map(|v| v.0)
            .filter(|&v| ys.forward(v).is_some())
            .collect();
        let x = Axis::fit_with(&xv, &xr, spec.x_log);
        let y = Axis::fit_with(&yv, &yr, spec.y_log);
        let runs = spec
            .series
            .iter()
            .map(|s| {
                let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
                for &(px, py) in s.points {
                    match (x.scale.forward(px), y.scale.forward(py)) {
                        (Some(a), Some(b)) => runs.last_mut().expect("non-empty").push((a, b)),
                        _ => {
                            if !runs.last().expect("non-empty").is_empty() {
                                runs.push(Vec::new());
                            }
                        }
                    }
                }
                runs.retain(|r| !r.is_empty());
                if matches!(s.style, Style::Line | Style::Dashed) {
                    for run in &mut runs {
                        *run = thin_line(run, x.lo, x.hi);
                    }
                }
                runs
            })
            .collect();
        Ok(LineFigure { spec, x, y, runs })
    }

    fn legend(&self) -> Vec<(String, Swatch)> {
        let n = self.spec.series.len();
        let mut entries: Vec<(String, Swatch)> = self
            .spec
            .series
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.name.is_empty())
            .map(|(i, s)| {
                (
                    s.name.to_string(),
                    Swatch::Series(s.style, series_color(i, n)),
                )
            })
            .collect();
        entries.extend(
            self.spec
                .hlines
                .iter()
                .filter(|h| !h.1.is_empty() && self.y.scale.forward(h.0).is_some())
                .map(|h| (h.1.to_string(), Swatch::HLine)),
        );
        entries.extend(
            self.spec
                .vlines
                .iter()
                .filter(|v| !v.1.is_empty() && self.x.scale.forward(v.0).is_some())
                .map(|v| (v.1.to_string(), Swatch::VLine)),
        );
        entries
    }
}

/// Points of a line kept when it has more than this many: see [`thin_line`].
const THIN_ABOVE: usize = 8000;
/// Columns of [`thin_line`], about twice the plot width in pixels.
const THIN_COLUMNS: usize = 2000;

/// Thins a long line without changing its picture (the "M4" rule): the x range is cut
/// into narrow columns, and in each the first, lowest, highest and last points are kept,
/// in their order. Keeps SVG files small for lines with hundreds of thousands of points.
fn thin_line(run: &[(f64, f64)], lo: f64, hi: f64) -> Vec<(f64, f64)> {
    if run.len() <= THIN_ABOVE || hi <= lo {
        return run.to_vec();
    }
    let column = |x: f64| ((x - lo) / (hi - lo) * THIN_COLUMNS as f64).floor() as i64;
    let mut out = Vec::with_capacity(4 * THIN_COLUMNS);
    let mut start = 0;
    while start < run.len() {
        let c = column(run[start].0);
        let mut end = start + 1;
        while end < run.len() && column(run[end].0) == c {
            end += 1;
        }
        let group = &run[start..end];
        let (mut lo_i, mut hi_i) = (0, 0);
        for (i, p) in group.iter().enumerate() {
            if p.1 < group[lo_i].1 {
                lo_i = i;
            }
            if p.1 > group[hi_i].1 {
                hi_i = i;
            }
        }
        let mut keep = [0, lo_i.min(hi_i), lo_i.max(hi_i), group.len() - 1];
        keep.sort_unstable();
        let mut last = usize::MAX;
        for i in keep {
            if i != last {
                out.push(group[i]);
                last = i;
            }
        }
        start = end;
    }
    out
}

impl Figure for LineFigure<'_> {
    fn size(&self) -> (u32, u32) {
        (1100, 650)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let body = root.titled(self.spec.title, font(TITLE_SIZE)).plot()?;
        let entries = self.legend();
        let (w, _) = body.dim_in_pixel();
        let (plot_area, legend_area) = if entries.is_empty() {
            (body, None)
        } else {
            let lw = legend_width(&body, &entries).min(w * 2 / 5);
            let (a, b) = body.split_horizontally(w - lw);
            (a, Some(b))
        };
        let mut chart = ChartBuilder::on(&plot_area)
            .margin(12)
            .x_label_area_size(52)
            .y_label_area_size(78)
            .build_cartesian_2d(self.x.coord(), self.y.coord())
            .plot()?;
        draw_mesh(
            &mut chart,
            &self.x,
            &self.y,
            self.spec.x_label,
            self.spec.y_label,
            true,
        )?;

        let (xlo, xhi, ylo, yhi) = (self.x.lo, self.x.hi, self.y.lo, self.y.hi);
        for &(v, _) in self.spec.hlines {
            if let Some(t) = self.y.scale.forward(v) {
                chart
                    .draw_series(DashedLineSeries::new(
                        vec![(xlo, t), (xhi, t)],
                        10,
                        6,
                        REFERENCE_COLOR.stroke_width(2),
                    ))
                    .plot()?;
            }
        }
        for &(v, _) in self.spec.vlines {
            if let Some(t) = self.x.scale.forward(v) {
                chart
                    .draw_series(DashedLineSeries::new(
                        vec![(t, ylo), (t, yhi)],
                        3,
                        5,
                        REFERENCE_COLOR.stroke_width(2),
                    ))
                    .plot()?;
            }
        }

        let n = self.spec.series.len();
        for (i, (s, runs)) in self.spec.series.iter().zip(&self.runs).enumerate() {
            let color = series_color(i, n);
            let stroke = color.stroke_width(2);
            for run in runs {
                match s.style {
                    Style::Line | Style::LinePoints => {
                        chart
                            .draw_series(LineSeries::new(run.iter().copied(), stroke))
                            .plot()?;
                    }
                    Style::Dashed => {
                        chart
                            .draw_series(DashedLineSeries::new(run.iter().copied(), 9, 5, stroke))
                            .plot()?;
                    }
                    Style::Points => {}
                }
                let marker = match s.style {
                    Style::LinePoints | Style::Points => 4,
                    // An isolated point of a line would be invisible without a dot.
                    Style::Line | Style::Dashed if run.len() == 1 => 2,
                    _ => 0,
                };
                if marker > 0 {
                    chart
                        .draw_series(run.iter().map(|&p| Circle::new(p, marker, color.filled())))
                        .plot()?;
                }
            }
        }

        if let Some(area) = legend_area {
            draw_legend(&area, &entries, 12)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Density heat maps
// ---------------------------------------------------------------------------------------

struct DensityFigure<'a> {
    panels: &'a [DensityPanel<'a>],
}

const DENSITY_PANEL_W: u32 = 360;
const DENSITY_PANEL_H: u32 = 380;
const COLORBAR_W: u32 = 130;
/// Colour levels of the heat maps; cells of equal level next to each other are merged.
const LEVELS: usize = 256;

impl DensityFigure<'_> {
    fn grid(&self) -> (usize, usize) {
        let k = self.panels.len();
        let cols = if k <= 4 { k } else { 3 };
        (cols, k.div_ceil(cols))
    }
}

impl Figure for DensityFigure<'_> {
    fn size(&self) -> (u32, u32) {
        let (cols, rows) = self.grid();
        (
            cols as u32 * DENSITY_PANEL_W + COLORBAR_W,
            rows as u32 * DENSITY_PANEL_H + 10,
        )
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let (cols, rows) = self.grid();
        let (w, h) = root.dim_in_pixel();
        let (maps, bar) = root.split_horizontally(w - COLORBAR_W);
        let maps = maps.margin(10, 0, 0, 0);
        let cells = maps.split_evenly((rows, cols));
        for (panel, area) in self.panels.iter().zip(&cells) {
            draw_density(area, panel)?;
        }

        // The shared colour bar, vertically centred.
        let bar_h = (h as i32 - 10).min(420);
        let top = (h as i32 - bar_h) / 2;
        let bar = bar.margin(top, h as i32 - top - bar_h, 0, 0);
        let y = Axis::linear_with(0.0, 1.0, 5.0);
        let x = Axis {
            scale: Scale::Linear,
            lo: 0.0,
            hi: 1.0,
            ticks: Vec::new(),
            minor: Vec::new(),
        };
        let mut chart = ChartBuilder::on(&bar)
            .margin_top(20)
            .margin_bottom(30)
            .margin_left(12)
            .margin_right(14)
            .right_y_label_area_size(70)
            .build_cartesian_2d(x.coord(), y.coord())
            .plot()?;
        let steps = 128;
        chart
            .draw_series((0..steps).map(|i| {
                let (a, b) = (i as f64 / steps as f64, (i + 1) as f64 / steps as f64);
                Rectangle::new([(0.0, a), (1.0, b)], viridis((a + b) / 2.0).filled())
            }))
            .plot()?;
        draw_mesh(&mut chart, &x, &y, "", "density ÷ panel max", false)?;
        Ok(())
    }
}

fn draw_density<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &DensityPanel<'_>,
) -> Result<()> {
    let [lo, hi] = p.extent;
    let axis = Axis::linear_with(lo, hi, 4.0);
    let mut chart = ChartBuilder::on(area)
        .caption(p.title, font(PANEL_TITLE_SIZE))
        .margin(8)
        .margin_right(14)
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d(axis.coord(), axis.coord())
        .plot()?;

    let clean = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
    let max = p.values.iter().copied().map(clean).fold(0.0, f64::max);
    let level = |v: f64| {
        if max > 0.0 {
            ((clean(v) / max) * (LEVELS - 1) as f64).round() as usize
        } else {
            0
        }
    };
    let d = (hi - lo) / p.n as f64;
    let mut rects = Vec::new();
    for r in 0..p.n {
        let row = &p.values[r * p.n..(r + 1) * p.n];
        let (y0, y1) = (lo + r as f64 * d, lo + (r + 1) as f64 * d);
        let mut c = 0;
        while c < p.n {
            let l = level(row[c]);
            let mut end = c + 1;
            while end < p.n && level(row[end]) == l {
                end += 1;
            }
            let (x0, x1) = (lo + c as f64 * d, lo + end as f64 * d);
            let color = viridis(l as f64 / (LEVELS - 1) as f64);
            rects.push(Rectangle::new([(x0, y0), (x1, y1)], color.filled()));
            c = end;
        }
    }
    chart.draw_series(rects).plot()?;
    // Axes on top of the cells.
    draw_mesh(&mut chart, &axis, &axis, "x", "y", false)
}

// ---------------------------------------------------------------------------------------
// Index process
// ---------------------------------------------------------------------------------------

struct PathFigure<'a> {
    panels: &'a [PathPanel<'a>],
}

const PATH_PANEL_H: u32 = 320;

impl Figure for PathFigure<'_> {
    fn size(&self) -> (u32, u32) {
        (1100, self.panels.len() as u32 * PATH_PANEL_H)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let areas = root.split_evenly((self.panels.len(), 1));
        // One legend width for all panels, so that their plots line up.
        let entries: Vec<Vec<(String, Swatch)>> = self
            .panels
            .iter()
            .map(|p| {
                let n = p.levels.len();
                (0..n)
                    .map(|r| {
                        (
                            format!("replica {r} (starts at level {})", p.levels[r][0]),
                            Swatch::Series(Style::Line, series_color(r, n)),
                        )
                    })
                    .collect()
            })
            .collect();
        let (w, _) = root.dim_in_pixel();
        let lw = entries
            .iter()
            .map(|e| legend_width(root, e))
            .max()
            .unwrap_or(0)
            .min(w * 2 / 5);
        for ((p, area), entries) in self.panels.iter().zip(&areas).zip(&entries) {
            let (plot, legend) = area.split_horizontally(w - lw);
            draw_path_panel(&plot, p)?;
            draw_legend(&legend, entries, 40)?;
        }
        Ok(())
    }
}

fn draw_path_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &PathPanel<'_>,
) -> Result<()> {
    let first = p.iterations[0] as f64;
    let last = *p.iterations.last().expect("checked non-empty") as f64;
    let (xlo, xhi) = if last > first {
        (first, last)
    } else {
        (first - 0.5, last + 0.5)
    };
    let x = Axis::linear_with(xlo, xhi, 8.0);
    let top = (p.chains - 1) as f64;
    let step = if p.chains <= 12 {
        1.0
    } else {
        nice_step(top / 8.0).max(1.0)
    };
    let mut y = Axis::linear_with(0.0, top, top / step);
    y.lo = -0.5;
    y.hi = top + 0.5;
    if y.ticks.is_empty() {
        y.ticks.push((0.0, "0".into()));
    }
    let mut chart = ChartBuilder::on(area)
        .caption(p.title, font(PANEL_TITLE_SIZE))
        .margin(10)
        .x_label_area_size(48)
        .y_label_area_size(70)
        .build_cartesian_2d(x.coord(), y.coord())
        .plot()?;
    draw_mesh(&mut chart, &x, &y, "iteration", "level (0 = target)", true)?;
    let n = p.levels.len();
    for (r, levels) in p.levels.iter().enumerate() {
        // A step line through the points where the level changes.
        let mut pts = Vec::with_capacity(2 * levels.len());
        for (k, (&it, &l)) in p.iterations.iter().zip(levels).enumerate() {
            let (it, l) = (it as f64, l as f64);
            if k == 0 {
                pts.push((it, l));
            } else if levels[k - 1] as f64 != l {
                pts.push((it, levels[k - 1] as f64));
                pts.push((it, l));
            }
        }
        pts.push((last, *levels.last().expect("checked non-empty") as f64));
        chart
            .draw_series(LineSeries::new(pts, series_color(r, n).stroke_width(2)))
            .plot()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.13), 0.2);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(1000.0), 1000.0);
    }

    #[test]
    fn labels() {
        assert_eq!(linear_label(0.30000000000000004, 0.1), "0.3");
        assert_eq!(linear_label(2_500_000.0, 500_000.0), "2.5e6");
        assert_eq!(linear_label(20_000.0, 10_000.0), "20000");
        assert_eq!(decimal_label(1, -3, true), "0.001");
        assert_eq!(decimal_label(5, -7, false), "5e-7");
        assert_eq!(power_of_two_label(6), "64");
        assert_eq!(power_of_two_label(-1), "0.5");
    }

    #[test]
    fn log_axes() {
        let a = Axis::fit_with(&[1.0, 2.0, 4.0, 64.0], &[], true);
        assert_eq!(a.scale, Scale::Log2);
        assert_eq!(a.ticks.len(), 7);
        let b = Axis::fit_with(&[3e-5, 2e-3], &[], true);
        assert_eq!(b.scale, Scale::Log10);
        assert_eq!((b.lo, b.hi), (-5.0, -2.0));
        let c = Axis::fit_with(&[0.2, 0.7], &[], true);
        assert_eq!(c.ticks.len(), 4); // 0.1, 0.2, 0.5, 1
        let d = Axis::fit_with(&[1.5, 60.0], &[], true);
        assert_eq!(d.ticks.len(), 7); // 1, 2, 5, 10, 20, 50, 100
        let e = Axis::fit_with(&[2e-5, 3e-2], &[], true);
        assert!(e.ticks.iter().all(|t| t.1.contains('e')));
    }

    #[test]
    fn thinning_keeps_extremes_and_ends() {
        let run: Vec<(f64, f64)> = (0..100_000)
            .map(|i| (i as f64, ((i * 7919) % 1000) as f64))
            .collect();
        let thin = thin_line(&run, 0.0, 99_999.0);
        assert!(thin.len() <= 4 * (THIN_COLUMNS + 1));
        assert_eq!(thin.first(), run.first());
        assert_eq!(thin.last(), run.last());
        let max = |v: &[(f64, f64)]| v.iter().map(|p| p.1).fold(f64::MIN, f64::max);
        assert_eq!(max(&thin), max(&run));
        assert!(thin.windows(2).all(|w| w[0].0 < w[1].0));
        let short = &run[..10];
        assert_eq!(thin_line(short, 0.0, 10.0), short.to_vec());
    }

    #[test]
    fn colormap_ends() {
        assert_eq!(viridis(0.0), RGBColor(0x44, 0x01, 0x54));
        assert_eq!(viridis(1.0), RGBColor(0xfd, 0xe7, 0x25));
        assert_eq!(viridis(f64::NAN), RGBColor(0x44, 0x01, 0x54));
    }
}
