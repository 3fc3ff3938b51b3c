//! Line charts: series of points on linear or logarithmic axes, reference lines, a legend.

use std::path::Path;

use anyhow::{Result, bail, ensure};
use plotters::coord::Shift;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;

use super::axes::{self, Axis, Scale};
use super::legend::{Legend, Swatch};
use super::palette::series_color;
use super::thin::thin_line;
use super::{Figure, PlotResult, REFERENCE_COLOR, TITLE_SIZE, font, render};

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
    /// `(x, y)` points in drawing order. Non-finite points, values beyond 1e±300, and
    /// non-positive values on a logarithmic axis, are skipped: a line is broken where they
    /// occur.
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

/// Space around the plot, in pixels.
const MARGIN: u32 = 12;
/// Height of the x axis' labels and description.
const X_LABELS: u32 = 52;

struct LineFigure<'a> {
    spec: &'a LineChart<'a>,
    x: Axis,
    y: Axis,
    /// Per series, its drawable runs of points.
    runs: Vec<Vec<Vec<(f64, f64)>>>,
}

impl<'a> LineFigure<'a> {
    fn new(spec: &'a LineChart<'a>) -> Result<Self> {
        let ok =
            |&(x, y): &(f64, f64)| axes::drawable(x, spec.x_log) && axes::drawable(y, spec.y_log);
        let (xv, yv): (Vec<f64>, Vec<f64>) = spec
            .series
            .iter()
            .flat_map(|s| s.points.iter().filter(|p| ok(p)))
            .copied()
            .unzip();
        if xv.is_empty() {
            bail!(
                "line chart {:?}: no point can be drawn (all are non-finite or beyond 1e±300{})",
                spec.title,
                if spec.x_log || spec.y_log {
                    " or non-positive on a log axis"
                } else {
                    ""
                }
            );
        }
        // Reference lines widen the range so that they stay visible.
        let refs = |lines, log| -> Vec<f64> { drawable_refs(lines, log).map(|r| r.0).collect() };
        let x = Axis::fit(&xv, &refs(spec.vlines, spec.x_log), spec.x_log);
        let y = Axis::fit(&yv, &refs(spec.hlines, spec.y_log), spec.y_log);
        // Where along the plot width an x value falls, for thinning long lines.
        let position = |v: f64| match x.scale {
            Scale::Linear => (v - x.lo) / (x.hi - x.lo),
            Scale::Decades | Scale::Octaves => (v / x.lo).ln() / (x.hi / x.lo).ln(),
        };
        let runs = spec
            .series
            .iter()
            .map(|s| {
                let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
                let mut run = Vec::new();
                for p in s.points {
                    if ok(p) {
                        run.push(*p);
                    } else if !run.is_empty() {
                        runs.push(std::mem::take(&mut run));
                    }
                }
                if !run.is_empty() {
                    runs.push(run);
                }
                if matches!(s.style, Style::Line | Style::Dashed) {
                    for run in &mut runs {
                        *run = thin_line(run, position);
                    }
                }
                runs
            })
            .collect();
        Ok(LineFigure { spec, x, y, runs })
    }

    /// The legend entries: named series, then labelled reference lines.
    fn legend_entries(&self) -> Vec<(String, Swatch)> {
        let spec = self.spec;
        let n = spec.series.len();
        let series = spec.series.iter().enumerate().map(|(i, s)| {
            let color = series_color(i, n);
            let swatch = match s.style {
                Style::Line => Swatch::Line(color),
                Style::LinePoints => Swatch::LinePoints(color),
                Style::Dashed => Swatch::Dashed(color),
                Style::Points => Swatch::Points(color),
            };
            (s.name, swatch)
        });
        let levels = drawable_refs(spec.hlines, spec.y_log).map(|r| (r.1, Swatch::Level));
        let marks = drawable_refs(spec.vlines, spec.x_log).map(|r| (r.1, Swatch::Mark));
        series
            .chain(levels)
            .chain(marks)
            .filter(|(name, _)| !name.is_empty())
            .map(|(name, swatch)| (name.to_string(), swatch))
            .collect()
    }

    /// Draws everything but the title on `chart`, whichever its axes' types.
    fn plot<DB, X, Y>(&self, chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>) -> Result<()>
    where
        DB: DrawingBackend,
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let spec = self.spec;
        axes::draw_mesh(chart, &self.x, &self.y, spec.x_label, spec.y_label, true)?;

        // Reference lines first, under the data.
        let reference = REFERENCE_COLOR.stroke_width(2);
        let (x, y) = (&self.x, &self.y);
        for &(v, _) in drawable_refs(spec.hlines, spec.y_log) {
            chart
                .draw_series(DashedLineSeries::new(
                    [(x.lo, v), (x.hi, v)],
                    10,
                    6,
                    reference,
                ))
                .plot()?;
        }
        for &(v, _) in drawable_refs(spec.vlines, spec.x_log) {
            chart
                .draw_series(DashedLineSeries::new(
                    [(v, y.lo), (v, y.hi)],
                    3,
                    5,
                    reference,
                ))
                .plot()?;
        }

        let n = spec.series.len();
        for (i, (s, runs)) in spec.series.iter().zip(&self.runs).enumerate() {
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
        Ok(())
    }
}

/// The reference lines of `lines` that can be drawn on a linear or (`log`) logarithmic axis.
fn drawable_refs<'s>(
    lines: &'s [(f64, &'s str)],
    log: bool,
) -> impl Iterator<Item = &'s (f64, &'s str)> + 's {
    lines.iter().filter(move |r| axes::drawable(r.0, log))
}

impl Figure for LineFigure<'_> {
    fn size(&self) -> (u32, u32) {
        (1100, 650)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let body = root.titled(self.spec.title, font(TITLE_SIZE)).plot()?;
        let (w, h) = body.dim_in_pixel();
        let legend = Legend::new(
            &body,
            self.legend_entries(),
            h.saturating_sub(2 * MARGIN + X_LABELS),
            w * 2 / 5,
        );
        let plot_area = match &legend {
            Some(legend) => {
                let (plot_area, column) = body.split_horizontally(w - legend.width);
                legend.draw(&column, MARGIN)?;
                plot_area
            }
            None => body,
        };
        let mut builder = ChartBuilder::on(&plot_area);
        builder
            .margin(MARGIN)
            .x_label_area_size(X_LABELS)
            .y_label_area_size(78);
        let (x, y) = (&self.x, &self.y);
        match (x.scale == Scale::Linear, y.scale == Scale::Linear) {
            (true, true) => self.plot(
                &mut builder
                    .build_cartesian_2d(x.linear_coord(), y.linear_coord())
                    .plot()?,
            ),
            (true, false) => self.plot(
                &mut builder
                    .build_cartesian_2d(x.linear_coord(), y.log_coord())
                    .plot()?,
            ),
            (false, true) => self.plot(
                &mut builder
                    .build_cartesian_2d(x.log_coord(), y.linear_coord())
                    .plot()?,
            ),
            (false, false) => self.plot(
                &mut builder
                    .build_cartesian_2d(x.log_coord(), y.log_coord())
                    .plot()?,
            ),
        }
    }
}
