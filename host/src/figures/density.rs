//! Density heat maps side by side, on one viridis scale with a colour bar.

use std::path::Path;

use anyhow::{Result, ensure};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::axes::{self, Axis};
use super::palette::viridis;
use super::{Figure, PANEL_TITLE_SIZE, PlotResult, font, render};

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

struct DensityFigure<'a> {
    panels: &'a [DensityPanel<'a>],
}

const PANEL_W: u32 = 360;
const PANEL_H: u32 = 380;
const COLORBAR_W: u32 = 130;
/// Colour levels of the heat maps; cells of equal level next to each other are merged.
const LEVELS: usize = 256;

impl DensityFigure<'_> {
    /// Columns and rows of panels.
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
            cols as u32 * PANEL_W + COLORBAR_W,
            rows as u32 * PANEL_H + 10,
        )
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let (cols, rows) = self.grid();
        let (w, h) = root.dim_in_pixel();
        let (maps, bar) = root.split_horizontally(w - COLORBAR_W);
        let maps = maps.margin(10, 0, 0, 0);
        let cells = maps.split_evenly((rows, cols));
        for (panel, area) in self.panels.iter().zip(&cells) {
            draw_panel(area, panel)?;
        }
        let bar_h = (h as i32 - 10).min(420);
        let top = (h as i32 - bar_h) / 2;
        draw_colorbar(&bar.margin(top, h as i32 - top - bar_h, 0, 0))
    }
}

/// The shared colour bar: plotters has no colour-bar element, so it is a strip of
/// rectangles on a chart of its own, labelled on the right.
fn draw_colorbar<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>) -> Result<()> {
    let x = Axis::linear(0.0, 1.0, 0);
    let y = Axis::linear(0.0, 1.0, 6);
    let mut chart = ChartBuilder::on(area)
        .margin_top(20)
        .margin_bottom(30)
        .margin_left(12)
        .margin_right(14)
        .right_y_label_area_size(70)
        .build_cartesian_2d(x.linear_coord(), y.linear_coord())
        .plot()?;
    let steps = 128;
    chart
        .draw_series((0..steps).map(|i| {
            let (a, b) = (i as f64 / steps as f64, (i + 1) as f64 / steps as f64);
            Rectangle::new([(0.0, a), (1.0, b)], viridis((a + b) / 2.0).filled())
        }))
        .plot()?;
    axes::draw_mesh(&mut chart, &x, &y, "", "density ÷ panel max", false)
}

/// One heat map. Plotters has no heat-map series, so the cells are rectangles; runs of
/// cells of one colour level in a row are merged, which keeps the SVG small.
fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &DensityPanel<'_>,
) -> Result<()> {
    let [lo, hi] = p.extent;
    let axis = Axis::linear(lo, hi, 5);
    let mut chart = ChartBuilder::on(area)
        .caption(p.title, font(PANEL_TITLE_SIZE))
        .margin(8)
        .margin_right(14)
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d(axis.linear_coord(), axis.linear_coord())
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
    for (r, row) in p.values.chunks_exact(p.n).enumerate() {
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
    axes::draw_mesh(&mut chart, &axis, &axis, "x", "y", false)
}
