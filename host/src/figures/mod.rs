//! Figures of the commands, each written as PNG and SVG from one drawing code.
//!
//! Every public function takes a path *stem* and writes `<stem>.png` and `<stem>.svg`.
//! Each file is complete or absent: both are drawn in memory (the PNG into an RGB buffer
//! that `write_png` encodes with the `png` crate) and written through
//! [`nrpt_sampling::output::write_atomic`], so an interrupted run never leaves half a figure.
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

use std::fmt::Display;
use std::path::Path;
use std::sync::OnceLock;

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
    let size = fig.size();

    // SVG: drawn in memory, so a drawing error touches no file.
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).plot()?;
        fig.draw(&root)?;
        root.present().plot()?;
    }
    nrpt_sampling::output::write_atomic(&target("svg"), svg.as_bytes())?;

    // PNG: drawn into an RGB buffer likewise, then encoded.
    let rgb = draw_rgb(fig)?;
    write_png(&target("png"), &rgb, size)
}

/// Draws `fig` on white into an RGB buffer (3 bytes a pixel, rows top to bottom).
fn draw_rgb(fig: &impl Figure) -> Result<Vec<u8>> {
    let (w, h) = fig.size();
    let mut rgb = vec![0u8; rgb_len((w, h))?];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        root.fill(&WHITE).plot()?;
        fig.draw(&root)?;
        root.present().plot()?;
    }
    Ok(rgb)
}

/// The length of an RGB buffer of `(width, height)` pixels.
fn rgb_len((w, h): (u32, u32)) -> Result<usize> {
    (w as usize)
        .checked_mul(h as usize)
        .and_then(|n| n.checked_mul(3))
        .ok_or_else(|| anyhow!("a figure of {w} × {h} pixels is too large"))
}

/// Writes the RGB buffer `rgb` of `size` (width, height) pixels, 3 bytes a pixel, rows top
/// to bottom, to `path` as an 8-bit RGB PNG, through [`nrpt_sampling::output::write_atomic`].
///
/// The encoder's settings are those plotters' former encoder (the `image` crate, through
/// plotters' `bitmap_encoder` feature) gave the same `png` crate: fast compression, the
/// filter chosen per row. So a figure's file is the same bytes as before, not only the
/// same pixels.
fn write_png(path: &Path, rgb: &[u8], size: (u32, u32)) -> Result<()> {
    let bytes = encode_png(rgb, size).with_context(|| format!("encoding {}", path.display()))?;
    nrpt_sampling::output::write_atomic(path, &bytes)?;
    Ok(())
}

/// The PNG file of [`write_png`], in memory.
fn encode_png(rgb: &[u8], (w, h): (u32, u32)) -> Result<Vec<u8>> {
    ensure!(
        rgb.len() == rgb_len((w, h))?,
        "an RGB buffer of {} bytes is not {w} × {h} pixels",
        rgb.len()
    );
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    encoder.set_filter(png::FilterType::Sub);
    encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes a PNG file: its size, colour type, bit depth and pixel bytes.
    fn decode(path: &Path) -> ((u32, u32), png::ColorType, png::BitDepth, Vec<u8>) {
        let file = std::fs::read(path).unwrap();
        let mut reader = png::Decoder::new(file.as_slice()).read_info().unwrap();
        let mut pixels = vec![0; reader.output_buffer_size()];
        let frame = reader.next_frame(&mut pixels).unwrap();
        pixels.truncate(frame.buffer_size());
        let size = (frame.width, frame.height);
        (size, frame.color_type, frame.bit_depth, pixels)
    }

    /// A figure with text, lines, filled shapes and a colour gradient.
    struct Sample;

    impl Figure for Sample {
        fn size(&self) -> (u32, u32) {
            (301, 207)
        }
        fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
            let mut chart = ChartBuilder::on(root)
                .caption("round trip", font(TITLE_SIZE))
                .margin(8)
                .x_label_area_size(30)
                .y_label_area_size(40)
                .build_cartesian_2d(0.0..10.0, -1.0..1.0)
                .plot()?;
            chart
                .configure_mesh()
                .label_style(font(TICK_SIZE))
                .draw()
                .plot()?;
            let n = 40;
            chart
                .draw_series((0..n).map(|i| {
                    let x = 10.0 * f64::from(i) / f64::from(n);
                    let color = ViridisRGB::get_color(f64::from(i) / f64::from(n));
                    Rectangle::new([(x, -1.0), (x + 0.25, -0.6)], color.filled())
                }))
                .plot()?;
            let wave = (0..=200).map(|i| {
                let x = f64::from(i) / 20.0;
                (x, x.sin() * 0.8)
            });
            chart
                .draw_series(LineSeries::new(
                    wave,
                    RGBColor(31, 119, 180).stroke_width(2),
                ))
                .plot()?;
            Ok(())
        }
    }

    #[test]
    fn render_writes_the_drawn_pixels_bit_for_bit() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("sample");
        render(&stem, &Sample).unwrap();
        let rgb = draw_rgb(&Sample).unwrap();
        assert!(rgb.iter().any(|&b| b < 128), "nothing was drawn");
        let (size, color, depth, pixels) = decode(&dir.path().join("sample.png"));
        assert_eq!(size, Sample.size());
        assert_eq!((color, depth), (png::ColorType::Rgb, png::BitDepth::Eight));
        assert!(
            pixels == rgb,
            "the PNG's pixels differ from the drawn buffer"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.contains(".tmp")), "{names:?}");
    }

    #[test]
    fn write_png_round_trips_every_byte_value() {
        // Pseudo-random bytes (every value, no two rows alike) exercise each row filter.
        let size = (97, 61);
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let rgb: Vec<u8> = (0..rgb_len(size).unwrap())
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 56) as u8
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("noise.png");
        write_png(&path, &rgb, size).unwrap();
        let (decoded_size, color, depth, pixels) = decode(&path);
        assert_eq!(decoded_size, size);
        assert_eq!((color, depth), (png::ColorType::Rgb, png::BitDepth::Eight));
        assert!(pixels == rgb, "the decoded pixels differ from the buffer");
    }

    #[test]
    fn write_png_of_a_buffer_of_another_size_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.png");
        let err = write_png(&path, &[0; 11], (2, 2)).unwrap_err();
        assert!(format!("{err:#}").contains("2 × 2"), "{err:#}");
        assert!(!path.exists());
    }
}
