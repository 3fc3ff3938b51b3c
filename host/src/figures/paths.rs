//! The index process: the level each replica occupies against iteration, one panel per scheme.

use std::path::Path;

use anyhow::{Result, ensure};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::axes::{self, Axis};
use super::legend::{Legend, Swatch};
use super::palette::series_color;
use super::{Figure, PANEL_TITLE_SIZE, PlotResult, font, render};

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

struct PathFigure<'a> {
    panels: &'a [PathPanel<'a>],
}

const PANEL_H: u32 = 320;
/// From the top of a panel to the top of its legend, level with the plot.
const LEGEND_TOP: u32 = 40;

/// The legend entry of replica `r`, whose path is `levels`.
fn replica_name(r: usize, levels: &[u32]) -> String {
    let start = levels
        .first()
        .map_or(String::new(), |l| format!(" (starts at level {l})"));
    format!("replica {r}{start}")
}

impl Figure for PathFigure<'_> {
    fn size(&self) -> (u32, u32) {
        (1100, self.panels.len() as u32 * PANEL_H)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let (w, _) = root.dim_in_pixel();
        let legends: Vec<Option<Legend>> = self
            .panels
            .iter()
            .map(|p| {
                let n = p.levels.len();
                let entries = (p.levels.iter().enumerate())
                    .map(|(r, l)| (replica_name(r, l), Swatch::Line(series_color(r, n))))
                    .collect();
                Legend::new(root, entries, PANEL_H - LEGEND_TOP - 20, w * 2 / 5)
            })
            .collect();
        // One legend width for all panels, so that their plots line up.
        let width = legends.iter().flatten().map(|l| l.width).max().unwrap_or(0);
        let areas = root.split_evenly((self.panels.len(), 1));
        for ((p, area), legend) in self.panels.iter().zip(&areas).zip(&legends) {
            let (plot, column) = area.split_horizontally(w - width);
            draw_panel(&plot, p)?;
            if let Some(legend) = legend {
                legend.draw(&column, LEGEND_TOP)?;
            }
        }
        Ok(())
    }
}

fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &PathPanel<'_>) -> Result<()> {
    let (first, last) = match (p.iterations.first(), p.iterations.last()) {
        (Some(&a), Some(&b)) => (a as f64, b as f64),
        _ => return Ok(()),
    };
    let (xlo, xhi) = if last > first {
        (first, last)
    } else {
        (first - 0.5, last + 0.5)
    };
    let x = Axis::linear(xlo, xhi, 9);
    // Every level labelled on a short ladder; plotters picks round steps on a long one.
    let top = (p.chains - 1) as f64;
    let y = Axis::linear(-0.5, top + 0.5, if p.chains <= 12 { p.chains } else { 9 });
    let mut chart = ChartBuilder::on(area)
        .caption(p.title, font(PANEL_TITLE_SIZE))
        .margin(10)
        .x_label_area_size(48)
        .y_label_area_size(70)
        .build_cartesian_2d(x.linear_coord(), y.linear_coord())
        .plot()?;
    axes::draw_mesh(&mut chart, &x, &y, "iteration", "level (0 = target)", true)?;
    let n = p.levels.len();
    for (r, levels) in p.levels.iter().enumerate() {
        // A step line through the points where the level changes.
        let mut pts = Vec::with_capacity(2 * levels.len());
        let mut previous = None;
        for (&it, &l) in p.iterations.iter().zip(levels) {
            let (it, l) = (it as f64, f64::from(l));
            match previous {
                None => pts.push((it, l)),
                Some(before) if before != l => {
                    pts.push((it, before));
                    pts.push((it, l));
                }
                Some(_) => {}
            }
            previous = Some(l);
        }
        if let Some(l) = previous {
            pts.push((last, l));
        }
        chart
            .draw_series(LineSeries::new(pts, series_color(r, n).stroke_width(2)))
            .plot()?;
    }
    Ok(())
}
