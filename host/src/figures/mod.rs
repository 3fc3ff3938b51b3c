//! Figures of the commands, each written as PNG and SVG from one drawing code.
//!
//! Every public function takes a path *stem* and writes `<stem>.png` and `<stem>.svg`.
//! Each file is complete or absent: the SVG goes through [`nrpt_sampling::output::write_atomic`],
//! the PNG is drawn under a hidden temporary name in the destination folder (containing
//! `.tmp.`) and renamed into place, so an interrupted run never leaves half a figure.
//!
//! One file per kind of figure:
//! - `line.rs`: [`lines`], a line chart with linear or logarithmic axes (round trips
//!   against the window W, the learning-rate ladder and swap rates against iteration, the
//!   round-trip time E\[T\] against the number of chains P).
//! - `density.rs`: [`density_panels`], heat maps side by side, the ground-truth density
//!   beside each method's sample density (Fig. 5 of Deng et al., AAAI 2023).
//! - `paths.rs`: [`index_paths`], the index process, the level each replica occupies
//!   against iteration, one panel per swap scheme (Fig. 6).
//!
//! and the parts they share: `axes.rs` (ranges and tick labels), `legend.rs` (plotters'
//! series labels, placed beside the plot), `palette.rs` (series and heat-map colours) and
//! `thin.rs` (long lines made short without changing their picture).
//!
//! The PNG text is drawn with DejaVu Sans, which ships in `host/assets/fonts/` (with its
//! licence) and is embedded in the binary: the bitmap backend draws text only with a
//! registered font. The SVG files name the generic `sans-serif` family and leave the
//! choice of font to the viewer.

mod axes;
mod density;
mod legend;
mod line;
mod palette;
mod paths;
mod thin;

pub use density::{DensityPanel, density_panels};
pub use line::{LineChart, Series, Style, lines};
pub use paths::{PathPanel, index_paths};

use std::ffi::OsString;
use std::fmt::Display;
use std::fs;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result, anyhow, ensure};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The font family under which the embedded font is registered (and which SVG files name).
const FONT: &str = "sans-serif";

/// DejaVu Sans, see `host/assets/fonts/LICENSE-DejaVu.txt`.
static FONT_BYTES: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

const TITLE_SIZE: f64 = 24.0;
const PANEL_TITLE_SIZE: f64 = 20.0;
const AXIS_DESC_SIZE: f64 = 17.0;
const TICK_SIZE: f64 = 14.0;
const LEGEND_SIZE: f64 = 15.0;

const GRID_BOLD: RGBColor = RGBColor(215, 215, 215);
const GRID_LIGHT: RGBColor = RGBColor(238, 238, 238);
const AXIS_COLOR: RGBColor = RGBColor(60, 60, 60);
const REFERENCE_COLOR: RGBColor = RGBColor(40, 40, 40);

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

/// The embedded font at `size`, in black.
fn font(size: f64) -> TextStyle<'static> {
    (FONT, size).into_font().color(&BLACK)
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

/// Writes `<stem>.svg` and `<stem>.png`, each all or nothing.
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
    nrpt_sampling::output::write_atomic(&svg_path, svg.as_bytes())?;

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
