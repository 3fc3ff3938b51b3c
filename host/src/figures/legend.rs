//! Legends beside a plot: plotters' series labels, in a column of their own.
//!
//! Plotters draws a legend (`configure_series_labels`: the frame, one row per labelled
//! series, its sample and its text) inside a chart's plotting area, and clamps anything
//! placed outside that area to its edge; a legend of sixteen ladder levels inside the plot
//! would hide the lines. So the legend gets a column to the right of the plot, as wide as
//! [`Legend::width`], and a chart of its own there that holds nothing but the labelled
//! (empty) series of the entries.

use anyhow::Result;
use plotters::chart::SeriesAnno;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;
use plotters_backend::DrawingErrorKind;

use super::{GRID_BOLD, LEGEND_SIZE, PlotResult, REFERENCE_COLOR, font};

/// A point in pixels, as plotters' backends take it.
type BackendCoord = (i32, i32);

/// Length of a sample line.
const SAMPLE: i32 = 34;
/// Room for the sample before the text.
const SAMPLE_AREA: u32 = 44;
/// Padding inside the legend's frame.
const PADDING: u32 = 8;
/// Room right of the text, inside the column.
const RIGHT: u32 = 8;
/// Line spacing of plotters' legend text, relative to the font size.
const LINE_HEIGHT: f64 = 1.25;
/// The smallest legend text, for legends of many entries.
const MIN_SIZE: f64 = 7.0;

/// How a legend entry's sample is drawn.
#[derive(Debug, Clone, Copy)]
pub(super) enum Swatch {
    Line(RGBColor),
    LinePoints(RGBColor),
    Dashed(RGBColor),
    Points(RGBColor),
    /// A horizontal reference line: dashed, dark.
    Level,
    /// A vertical reference line: dotted, dark.
    Mark,
}

impl Swatch {
    /// Labels the series `anno` with `name` and this sample.
    fn attach<DB: DrawingBackend>(self, anno: &mut SeriesAnno<'_, DB>, name: &str) {
        anno.label(name)
            .legend(move |at| Sample { swatch: self, at });
    }
}

/// A legend sample, drawn at `at`, the left middle of its room (where plotters places
/// it). An element of its own because the legend's closure must return one type for
/// every kind of sample: plotters' `DynElement` gives them one only for elements that
/// hold no borrowed type, and its composed elements (`EmptyElement + PathElement +
/// Circle`, a line with a dot) hold the backend's, which borrows the PNG's path or the
/// SVG's string.
struct Sample {
    swatch: Swatch,
    at: BackendCoord,
}

impl<'a> PointCollection<'a, BackendCoord> for &'a Sample {
    type Point = &'a BackendCoord;
    type IntoIter = std::iter::Once<&'a BackendCoord>;

    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.at)
    }
}

impl<DB: DrawingBackend> Drawable<DB> for Sample {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut points: I,
        backend: &mut DB,
        parent: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let Some((x, y)) = points.next() else {
            return Ok(());
        };
        let line = [(x, y), (x + SAMPLE, y)];
        // (dash, gap) of a broken line; no dashes is a solid line.
        let (color, dashes, dot) = match self.swatch {
            Swatch::Line(c) => (c, None, false),
            Swatch::LinePoints(c) => (c, None, true),
            Swatch::Dashed(c) => (c, Some((9, 4)), false),
            Swatch::Points(c) => (c, None, true),
            Swatch::Level => (REFERENCE_COLOR, Some((9, 4)), false),
            Swatch::Mark => (REFERENCE_COLOR, Some((3, 4)), false),
        };
        let stroke = color.stroke_width(2);
        match (self.swatch, dashes) {
            (Swatch::Points(_), _) => {}
            (_, None) => backend.draw_path(line, &stroke)?,
            (_, Some((dash, gap))) => DashedPathElement::new(line, dash, gap, stroke).draw(
                line.into_iter(),
                backend,
                parent,
            )?,
        }
        if dot {
            backend.draw_circle((x + SAMPLE / 2, y), 4, &color.filled(), true)?;
        }
        Ok(())
    }
}

/// A legend: its entries, the width of its column and the size of its text.
#[derive(Debug, Clone)]
pub(super) struct Legend {
    entries: Vec<(String, Swatch)>,
    /// The width of the column to the right of the plot that the legend takes.
    pub(super) width: u32,
    size: f64,
}

impl Legend {
    /// The legend of `entries` on `area`, at most `max_width` wide, its text shrunk (down
    /// to a limit) so that its rows fit in `height`; `None` without entries.
    pub(super) fn new<DB: DrawingBackend>(
        area: &DrawingArea<DB, Shift>,
        entries: Vec<(String, Swatch)>,
        height: u32,
        max_width: u32,
    ) -> Option<Legend> {
        if entries.is_empty() {
            return None;
        }
        let rows = entries.len() as f64 * LINE_HEIGHT;
        let size = (height.saturating_sub(2 * PADDING) as f64 / rows).clamp(MIN_SIZE, LEGEND_SIZE);
        let style = font(size);
        let text = entries
            .iter()
            .map(|(name, _)| {
                area.estimate_text_size(name, &style)
                    .map_or((size * 0.6) as u32 * name.len() as u32, |s| s.0)
            })
            .max()
            .unwrap_or(0);
        let width = (SAMPLE_AREA + 2 * PADDING + text + RIGHT).min(max_width);
        Some(Legend {
            entries,
            width,
            size,
        })
    }

    /// Draws the legend in its column `area`, its frame `top` pixels below the top.
    pub(super) fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        top: u32,
    ) -> Result<()> {
        let mut chart = ChartBuilder::on(area)
            .margin_top(top)
            .build_cartesian_2d(0f64..1.0, 0f64..1.0)
            .plot()?;
        for (name, swatch) in &self.entries {
            let none: [PathElement<(f64, f64)>; 0] = [];
            swatch.attach(chart.draw_series(none).plot()?, name);
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::Coordinate(0, 0))
            .legend_area_size(SAMPLE_AREA)
            .margin(PADDING)
            .label_font(font(self.size))
            .background_style(WHITE.filled())
            .border_style(GRID_BOLD)
            .draw()
            .plot()
    }
}
