//! Colours: Tableau 10 for a few series, plotters' viridis for many series and heat maps.

use plotters::prelude::{ColorMap, RGBColor, ViridisRGB};

/// Tableau 10: distinguishable, colour-blind-friendly categorical colours. Written out
/// because plotters' categorical palettes (`Palette99`, the material `full_palette`) are
/// neither.
const TABLEAU: [RGBColor; 10] = [
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

/// The viridis colour map at `t` in [0, 1] (clamped; NaN, which plotters' map cannot
/// take, gives the bottom colour).
pub(super) fn viridis(t: f64) -> RGBColor {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    ViridisRGB.get_color(t)
}

/// Colour of series `i` of `n`: Tableau 10 when it suffices, else spread along viridis so
/// that neighbouring series (such as neighbouring levels of a ladder) get neighbouring
/// colours, stopping short of viridis' pale yellow end, which is hard to see on white.
pub(super) fn series_color(i: usize, n: usize) -> RGBColor {
    if n <= TABLEAU.len() {
        TABLEAU[i % TABLEAU.len()]
    } else {
        viridis(0.88 * i as f64 / (n - 1) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viridis_runs_from_purple_to_yellow_and_takes_nan() {
        assert_eq!(viridis(0.0), RGBColor(68, 1, 84));
        assert_eq!(viridis(1.0), RGBColor(254, 232, 37));
        assert_eq!(viridis(f64::NAN), viridis(0.0));
        assert_eq!(viridis(-3.0), viridis(0.0));
        assert_eq!(viridis(7.0), viridis(1.0));
    }

    #[test]
    fn many_series_take_distinct_viridis_colours() {
        let colours: Vec<RGBColor> = (0..16).map(|i| series_color(i, 16)).collect();
        for w in colours.windows(2) {
            assert_ne!(w[0], w[1]);
        }
        assert_eq!(series_color(0, 16), viridis(0.0));
        assert_eq!(series_color(3, 4), TABLEAU[3]);
    }
}
