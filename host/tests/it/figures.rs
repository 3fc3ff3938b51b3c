//! Figures: every function writes a PNG and an SVG through temporary files, and bad input
//! is an error, not a panic. The drawings are read back: the PNG decodes to the figure's
//! size, log axes space their ticks by ratio, and legends name their series beside the
//! plot.
//!
//! Set `NRPT_FIGURE_TEST_DIR` to a folder to keep the figures drawn by these tests there
//! (for looking at them); otherwise they go to a temporary folder.

use std::f64::consts::PI;
use std::fs;
use std::path::{Path, PathBuf};

use nrpt::figures::*;

const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];

/// A folder for the figures of one test, and the guard that removes it (if temporary).
fn out_dir(test: &str) -> (PathBuf, Option<tempfile::TempDir>) {
    match std::env::var_os("NRPT_FIGURE_TEST_DIR") {
        Some(d) => {
            let dir = PathBuf::from(d).join(test);
            fs::create_dir_all(&dir).unwrap();
            (dir, None)
        }
        None => {
            let t = tempfile::tempdir().unwrap();
            (t.path().to_path_buf(), Some(t))
        }
    }
}

/// Both files exist and are `size` (width, height) pixels: the PNG decodes and is not
/// blank, the SVG is complete; no temporary file is left in `dir`. Returns the SVG.
fn check_written(dir: &Path, stem: &str, size: (u32, u32)) -> String {
    let png = fs::read(dir.join(format!("{stem}.png"))).unwrap();
    assert_eq!(png[..8], PNG_SIGNATURE, "{stem}.png is not a PNG");
    let mut reader = png::Decoder::new(png.as_slice()).read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((frame.width, frame.height), size, "{stem}.png");
    let pixels = &pixels[..frame.buffer_size()];
    let ink = pixels.iter().filter(|&&b| b < 128).count();
    assert!(ink > pixels.len() / 500, "{stem}.png is nearly blank");

    let svg = fs::read_to_string(dir.join(format!("{stem}.svg"))).unwrap();
    assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"));
    let (w, h) = size;
    assert!(
        svg.contains(&format!(r#"width="{w}" height="{h}""#)),
        "{stem}.svg is not {w} × {h}"
    );
    assert_no_temporaries(dir);
    svg
}

/// A text of an SVG figure: its anchor point and its content.
#[derive(Debug, Clone)]
struct Label {
    x: f64,
    y: f64,
    text: String,
}

/// The texts of an SVG drawn by plotters (`<text x=".." y=".." …>content</text>`).
fn svg_texts(svg: &str) -> Vec<Label> {
    let attr = |tag: &str, name: &str| -> f64 {
        let start = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        let len = tag[start..].find('"').unwrap();
        tag[start..start + len].parse().unwrap()
    };
    svg.split("<text")
        .skip(1)
        .map(|rest| {
            let (tag, body) = rest.split_once('>').unwrap();
            let text = body.split("</text>").next().unwrap().trim();
            Label {
                x: attr(tag, "x"),
                y: attr(tag, "y"),
                text: text
                    .replace("&amp;", "&")
                    .replace("&lt;", "<")
                    .replace("&gt;", ">"),
            }
        })
        .collect()
}

/// The label reading `text` (the first, if several do).
fn label<'a>(labels: &'a [Label], text: &str) -> &'a Label {
    labels
        .iter()
        .find(|l| l.text == text)
        .unwrap_or_else(|| panic!("no label {text:?} among {labels:?}"))
}

/// Asserts that the tick labels `ticks` sit at positions (`pos` of each label) spaced in
/// proportion to their values' logarithms, as on a log axis (on a linear axis, 1, 10,
/// 100 would be spaced 1 : 10).
fn assert_log_spaced(labels: &[Label], ticks: &[(&str, f64)], pos: fn(&Label) -> f64) {
    let (first, last) = (ticks[0], ticks[ticks.len() - 1]);
    let (p0, p1) = (pos(label(labels, first.0)), pos(label(labels, last.0)));
    assert!(
        (p1 - p0).abs() > 100.0,
        "the axis is {} pixels long",
        p1 - p0
    );
    for &(text, value) in ticks {
        let expected = p0 + (p1 - p0) * (value / first.1).ln() / (last.1 / first.1).ln();
        let got = pos(label(labels, text));
        assert!(
            (got - expected).abs() <= 2.0,
            "tick {text} at {got}, a log axis puts it at {expected:.1}"
        );
    }
}

/// The tick labels of a line chart's x axis: the numbers lowest in the figure.
fn x_ticks(labels: &[Label]) -> Vec<Label> {
    let numbers: Vec<&Label> = labels
        .iter()
        .filter(|l| l.text.parse::<f64>().is_ok())
        .collect();
    let bottom = numbers.iter().map(|l| l.y).fold(f64::MIN, f64::max);
    numbers
        .into_iter()
        .filter(|l| l.y == bottom)
        .cloned()
        .collect()
}

/// The tick labels of a line chart's y axis: the numbers furthest left in the figure.
fn y_ticks(labels: &[Label]) -> Vec<Label> {
    let numbers: Vec<&Label> = labels
        .iter()
        .filter(|l| l.text.parse::<f64>().is_ok())
        .collect();
    let left = numbers.iter().map(|l| l.x).fold(f64::MAX, f64::min);
    numbers
        .into_iter()
        .filter(|l| l.x == left)
        .cloned()
        .collect()
}

/// Asserts that each of `names` is a text to the right of every tick label of the x axis:
/// the legend names its series beside the plot, not over it.
fn assert_legend_beside_plot(labels: &[Label], names: &[&str]) {
    let right = x_ticks(labels).iter().map(|t| t.x).fold(f64::MIN, f64::max);
    for name in names {
        let l = label(labels, name);
        assert!(
            l.x > right,
            "legend entry {name:?} at x = {} is not right of the plot",
            l.x
        );
    }
}

fn assert_no_temporaries(dir: &Path) {
    for entry in fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.contains(".tmp"), "temporary file {name} left behind");
    }
}

/// A mixture of Gaussians on a ring, binned on an `n × n` grid over [-4, 4]², plus noise
/// of relative size `noise` (a stand-in for a sampler's histogram).
fn ring_density(n: usize, noise: f64, seed: u64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    let mut uniform = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut values = Vec::with_capacity(n * n);
    for r in 0..n {
        for c in 0..n {
            let x = -4.0 + 8.0 * (c as f64 + 0.5) / n as f64;
            let y = -4.0 + 8.0 * (r as f64 + 0.5) / n as f64;
            let mut d = 0.0;
            for k in 0..8 {
                let a = 2.0 * PI * k as f64 / 8.0;
                let (mx, my) = (2.5 * a.cos(), 2.5 * a.sin());
                // Lopsided weights, so that orientation (row 0 = bottom) is visible.
                let w = 1.0 + k as f64 / 4.0;
                d += w * (-((x - mx).powi(2) + (y - my).powi(2)) / (2.0 * 0.09)).exp();
            }
            values.push(d * (1.0 + noise * (uniform() - 0.5)));
        }
    }
    values
}

fn panel<'a>(title: &'a str, values: &'a [f64]) -> DensityPanel<'a> {
    DensityPanel {
        title,
        values,
        n: 100,
        extent: [-4.0, 4.0],
    }
}

#[test]
fn density_panels_written() {
    let (dir, _guard) = out_dir("density");
    let truth = ring_density(100, 0.0, 1);
    let a = ring_density(100, 0.6, 2);
    let mut b = ring_density(100, 0.9, 3);
    // A method that misses modes.
    for (i, v) in b.iter_mut().enumerate() {
        if (i / 100) < 50 {
            *v *= 0.05;
        }
    }
    let four = [
        panel("Ground truth", &truth),
        panel("DEO⋆ (W = 7)", &a),
        panel("DEO (W = 1)", &b),
        panel("Single chain", &b),
    ];
    density_panels(&dir.join("density4"), &four).unwrap();
    // Four panels of 360 × 380 in a row, and the colour bar.
    let svg = check_written(&dir, "density4", (4 * 360 + 130, 390));
    // Viridis from end to end: the empty cells at its bottom, the densest at its top.
    assert!(svg.contains(r##"fill="#440154""##) && svg.contains(r##"fill="#FEE825""##));
    let labels = svg_texts(&svg);
    for title in ["Ground truth", "DEO⋆ (W = 7)", "density ÷ panel max"] {
        label(&labels, title);
    }

    let six = [four[0], four[1], four[2], four[3], four[1], four[0]];
    density_panels(&dir.join("density6"), &six).unwrap();
    // Rows of three.
    check_written(&dir, "density6", (3 * 360 + 130, 2 * 380 + 10));

    // A panel with NaN, negative and all-zero values still draws.
    let odd = [f64::NAN, -1.0, 0.0, f64::INFINITY];
    let zeros = [0.0; 4];
    let weird = [
        DensityPanel {
            title: "odd",
            values: &odd,
            n: 2,
            extent: [0.0, 1.0],
        },
        DensityPanel {
            title: "zeros",
            values: &zeros,
            n: 2,
            extent: [0.0, 1.0],
        },
    ];
    density_panels(&dir.join("density_odd"), &weird).unwrap();
    check_written(&dir, "density_odd", (2 * 360 + 130, 390));
}

#[test]
fn density_panels_bad_input_is_an_error() {
    let (dir, _guard) = out_dir("density_bad");
    assert!(density_panels(&dir.join("none"), &[]).is_err());
    let v = [1.0; 5];
    let bad_len = DensityPanel {
        title: "t",
        values: &v,
        n: 2,
        extent: [0.0, 1.0],
    };
    assert!(density_panels(&dir.join("len"), &[bad_len]).is_err());
    let w = [1.0; 4];
    let bad_extent = DensityPanel {
        title: "t",
        values: &w,
        n: 2,
        extent: [1.0, 1.0],
    };
    assert!(density_panels(&dir.join("extent"), &[bad_extent]).is_err());
    assert!(!dir.join("none.png").exists() && !dir.join("len.svg").exists());
    assert_no_temporaries(&dir);
}

#[test]
fn round_trips_against_window() {
    let (dir, _guard) = out_dir("round_trips");
    let measured: Vec<(f64, f64)> = [(1.0, 2.1), (2.0, 3.9), (4.0, 6.8), (8.0, 9.5)]
        .into_iter()
        .chain([(16.0, 10.2), (32.0, 8.1), (64.0, 5.0)])
        .collect();
    let model: Vec<(f64, f64)> = (0..=60)
        .map(|k| {
            let w = 2f64.powf(k as f64 / 10.0);
            (w, 12.0 * w / (w + 3.0) * (-w / 90.0).exp())
        })
        .collect();
    let series = [
        Series {
            name: "measured",
            points: &measured,
            style: Style::LinePoints,
        },
        Series {
            name: "model (geometric trips)",
            points: &model,
            style: Style::Dashed,
        },
    ];
    let chart = LineChart {
        title: "Round trips against the window W (P = 16)",
        x_label: "window W (iterations between swap attempts)",
        y_label: "round trips per 1000 iterations",
        x_log: true,
        y_log: false,
        series: &series,
        hlines: &[],
        vlines: &[(7.0, "W used by DEO⋆")],
    };
    lines(&dir.join("round_trips"), &chart).unwrap();
    let labels = svg_texts(&check_written(&dir, "round_trips", (1100, 650)));
    // The model's windows are no powers of two: decades, ticked at 1, 2 and 5.
    let ticks = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0].map(|v| (v.to_string(), v));
    let ticks: Vec<(&str, f64)> = ticks.iter().map(|(t, v)| (t.as_str(), *v)).collect();
    assert_log_spaced(&x_ticks(&labels), &ticks, |l| l.x);
    assert_legend_beside_plot(
        &labels,
        &["measured", "model (geometric trips)", "W used by DEO⋆"],
    );
}

#[test]
fn ladder_and_swap_rate_convergence() {
    let (dir, _guard) = out_dir("convergence");
    let iters: Vec<f64> = (0..=200).map(|k| k as f64 * 500.0).collect();
    let ladder: Vec<Vec<(f64, f64)>> = (0..16)
        .map(|p| {
            let goal = 1e-5 * 10f64.powf(2.5 * p as f64 / 15.0);
            iters
                .iter()
                .map(|&t| {
                    let start = 1e-5 * 10f64.powf(0.5 * p as f64 / 15.0);
                    let f = (-t / 15000.0).exp();
                    (t, goal.powf(1.0 - f) * start.powf(f))
                })
                .collect()
        })
        .collect();
    let names: Vec<String> = (0..16).map(|p| format!("level {p}")).collect();
    let series: Vec<Series<'_>> = ladder
        .iter()
        .zip(&names)
        .map(|(points, name)| Series {
            name,
            points,
            style: Style::Line,
        })
        .collect();
    let chart = LineChart {
        title: "Learning-rate ladder during adaptation",
        x_label: "iteration",
        y_label: "learning rate η",
        x_log: false,
        y_log: true,
        series: &series,
        hlines: &[],
        vlines: &[],
    };
    lines(&dir.join("ladder"), &chart).unwrap();
    let labels = svg_texts(&check_written(&dir, "ladder", (1100, 650)));
    let ticks = [
        ("1e-5", 1e-5),
        ("1e-4", 1e-4),
        ("1e-3", 1e-3),
        ("1e-2", 1e-2),
    ];
    assert_log_spaced(&y_ticks(&labels), &ticks, |l| l.y);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_legend_beside_plot(&labels, &names);

    let rates: Vec<Vec<(f64, f64)>> = (0..15)
        .map(|p| {
            iters
                .iter()
                .map(|&t| {
                    let start = 0.02 + 0.06 * p as f64;
                    let f = (-t / 20000.0).exp();
                    let wiggle = 0.03 * ((t / 3000.0) + p as f64).sin() * f;
                    (t, 0.3 + (start - 0.3) * f + wiggle)
                })
                .collect()
        })
        .collect();
    let names: Vec<String> = (0..15).map(|p| format!("levels {p}–{}", p + 1)).collect();
    let series: Vec<Series<'_>> = rates
        .iter()
        .zip(&names)
        .map(|(points, name)| Series {
            name,
            points,
            style: Style::Line,
        })
        .collect();
    let chart = LineChart {
        title: "Swap acceptance rate of each neighbouring pair",
        x_label: "iteration",
        y_label: "swap acceptance rate",
        x_log: false,
        y_log: false,
        series: &series,
        hlines: &[(0.3, "target S = 0.3")],
        vlines: &[(60000.0, "end of adaptation")],
    };
    lines(&dir.join("swap_rates"), &chart).unwrap();
    let labels = svg_texts(&check_written(&dir, "swap_rates", (1100, 650)));
    // A linear axis: equal steps of value, equal steps on the page.
    let y: Vec<f64> = ["0.2", "0.4", "0.6", "0.8"]
        .iter()
        .map(|t| label(&y_ticks(&labels), t).y)
        .collect();
    for w in y.windows(3) {
        assert!(((w[0] - w[1]) - (w[1] - w[2])).abs() <= 2.0, "{y:?}");
    }
    // Reference lines after the series, in the legend's order.
    assert_legend_beside_plot(
        &labels,
        &["levels 0–1", "target S = 0.3", "end of adaptation"],
    );
    assert!(label(&labels, "levels 14–15").y < label(&labels, "target S = 0.3").y);
    assert!(label(&labels, "target S = 0.3").y < label(&labels, "end of adaptation").y);
}

#[test]
fn scaling_log_log() {
    let (dir, _guard) = out_dir("scaling");
    let ps = [4.0, 8.0, 16.0, 32.0, 64.0];
    let deo: Vec<(f64, f64)> = ps.iter().map(|&p| (p, 2.2 * p * 1.05)).collect();
    let sea: Vec<(f64, f64)> = ps.iter().map(|&p| (p, 0.9 * p * p)).collect();
    let deo_fit: Vec<(f64, f64)> = ps.iter().map(|&p| (p, 2.3 * p)).collect();
    let sea_fit: Vec<(f64, f64)> = ps.iter().map(|&p| (p, 0.9 * p * p)).collect();
    let series = [
        Series {
            name: "DEO⋆ (measured)",
            points: &deo,
            style: Style::Points,
        },
        Series {
            name: "DEO⋆ fit: slope 1.01",
            points: &deo_fit,
            style: Style::Dashed,
        },
        Series {
            name: "SEO (measured)",
            points: &sea,
            style: Style::Points,
        },
        Series {
            name: "SEO fit: slope 2.00",
            points: &sea_fit,
            style: Style::Dashed,
        },
    ];
    let chart = LineChart {
        title: "Round-trip time against the number of chains",
        x_label: "number of chains P",
        y_label: "mean round-trip time E[T] (iterations)",
        x_log: true,
        y_log: true,
        series: &series,
        hlines: &[],
        vlines: &[],
    };
    lines(&dir.join("scaling"), &chart).unwrap();
    let labels = svg_texts(&check_written(&dir, "scaling", (1100, 650)));
    // P is a power of two: ticked by octave; E[T] by decade.
    let p = [
        ("4", 4.0),
        ("8", 8.0),
        ("16", 16.0),
        ("32", 32.0),
        ("64", 64.0),
    ];
    assert_log_spaced(&x_ticks(&labels), &p, |l| l.x);
    let t = [
        ("1", 1.0),
        ("10", 10.0),
        ("100", 100.0),
        ("1000", 1e3),
        ("10000", 1e4),
    ];
    assert_log_spaced(&y_ticks(&labels), &t, |l| l.y);
    let names: Vec<&str> = series.iter().map(|s| s.name).collect();
    assert_legend_beside_plot(&labels, &names);
}

#[test]
fn log_axes_skip_zeros_and_nan() {
    let (dir, _guard) = out_dir("lines_odd");
    let pts = [
        (0.0, 1.0),
        (1.0, 0.0),
        (2.0, f64::NAN),
        (3.0, 5.0),
        (f64::INFINITY, 2.0),
        (-1.0, 3.0),
        (5.0, 7.0),
        (6.0, -2.0),
        (7.0, 1e-3),
    ];
    let series = [
        Series {
            name: "with gaps",
            points: &pts,
            style: Style::Line,
        },
        Series {
            name: "",
            points: &[],
            style: Style::Dashed,
        },
    ];
    let chart = LineChart {
        title: "odd data",
        x_label: "x",
        y_label: "y",
        x_log: true,
        y_log: true,
        series: &series,
        hlines: &[(0.0, "zero: not drawable on a log axis"), (f64::NAN, "")],
        vlines: &[(-3.0, "")],
    };
    lines(&dir.join("odd_loglog"), &chart).unwrap();
    let labels = svg_texts(&check_written(&dir, "odd_loglog", (1100, 650)));
    // The unnamed series and the reference lines that cannot be drawn are not in the legend.
    assert_legend_beside_plot(&labels, &["with gaps"]);
    assert!(!labels.iter().any(|l| l.text.starts_with("zero")));

    // A single point and constant values give a usable range.
    let one = [(3.0, 3.0)];
    let series = [Series {
        name: "one point",
        points: &one,
        style: Style::Line,
    }];
    for (x_log, y_log) in [(false, false), (true, true)] {
        let chart = LineChart {
            title: "single point",
            x_label: "x",
            y_label: "y",
            x_log,
            y_log,
            series: &series,
            hlines: &[],
            vlines: &[],
        };
        let stem = format!("single_{x_log}");
        lines(&dir.join(&stem), &chart).unwrap();
        check_written(&dir, &stem, (1100, 650));
    }
}

#[test]
fn lines_without_drawable_data_is_an_error() {
    let (dir, _guard) = out_dir("lines_bad");
    let empty = LineChart {
        title: "empty",
        x_label: "x",
        y_label: "y",
        x_log: false,
        y_log: false,
        series: &[],
        hlines: &[],
        vlines: &[],
    };
    assert!(lines(&dir.join("empty"), &empty).is_err());
    let zeros = [(0.0, 0.0), (1.0, f64::NAN)];
    let series = [Series {
        name: "zeros",
        points: &zeros,
        style: Style::Points,
    }];
    let all_bad = LineChart {
        series: &series,
        y_log: true,
        ..empty
    };
    assert!(lines(&dir.join("all_bad"), &all_bad).is_err());
    assert!(!dir.join("empty.png").exists() && !dir.join("all_bad.png").exists());
    assert_no_temporaries(&dir);
}

/// A toy index process: replicas move up and down a P-level ladder.
fn index_process(p: u32, replicas: u32, steps: usize, window: usize) -> (Vec<u64>, Vec<Vec<u32>>) {
    let mut levels: Vec<u32> = (0..p).collect();
    let mut dirs: Vec<i32> = (0..p).map(|i| if i % 2 == 0 { 1 } else { -1 }).collect();
    let iterations: Vec<u64> = (0..steps as u64).map(|k| k * 10).collect();
    let mut paths = vec![Vec::with_capacity(steps); replicas as usize];
    let mut state = 12345u64;
    for k in 0..steps {
        for r in 0..replicas as usize {
            paths[r].push(levels[r]);
        }
        if k % window == 0 {
            for i in 0..p as usize {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                if (state >> 40) % 10 < 7 {
                    let next = levels[i] as i32 + dirs[i];
                    if (0..p as i32).contains(&next) {
                        levels[i] = next as u32;
                    } else {
                        dirs[i] = -dirs[i];
                    }
                } else if window == 1 {
                    dirs[i] = -dirs[i];
                }
            }
        }
    }
    (iterations, paths)
}

#[test]
fn index_paths_written() {
    let (dir, _guard) = out_dir("index");
    let (it1, lv1) = index_process(16, 4, 3000, 1);
    let (it7, lv7) = index_process(16, 4, 3000, 7);
    let panels = [
        PathPanel {
            title: "DEO (W = 1)",
            iterations: &it1,
            levels: &lv1,
            chains: 16,
        },
        PathPanel {
            title: "DEO⋆ (W = 7)",
            iterations: &it7,
            levels: &lv7,
            chains: 16,
        },
    ];
    index_paths(&dir.join("index"), &panels).unwrap();
    // Two panels of 320 pixels, one above the other.
    let labels = svg_texts(&check_written(&dir, "index", (1100, 640)));
    let entries: Vec<&Label> = labels
        .iter()
        .filter(|l| l.text == "replica 3 (starts at level 3)")
        .collect();
    assert_eq!(entries.len(), 2, "one legend per panel");
    assert!(entries[0].x == entries[1].x, "the legends line up");
}

#[test]
fn index_paths_bad_input_is_an_error() {
    let (dir, _guard) = out_dir("index_bad");
    assert!(index_paths(&dir.join("none"), &[]).is_err());
    let it = [0u64, 1, 2];
    let short = vec![vec![0u32, 1]];
    let panel = PathPanel {
        title: "short",
        iterations: &it,
        levels: &short,
        chains: 4,
    };
    assert!(index_paths(&dir.join("short"), &[panel]).is_err());
    let high = vec![vec![0u32, 1, 4]];
    let panel = PathPanel {
        title: "too high",
        iterations: &it,
        levels: &high,
        chains: 4,
    };
    assert!(index_paths(&dir.join("high"), &[panel]).is_err());
    assert_no_temporaries(&dir);
}

#[test]
fn overwrites_existing_figures_and_accepts_a_bare_stem() {
    let (dir, _guard) = out_dir("overwrite");
    fs::write(dir.join("fig.png"), b"old").unwrap();
    let pts = [(0.0, 1.0), (1.0, 2.0)];
    let series = [Series {
        name: "",
        points: &pts,
        style: Style::LinePoints,
    }];
    let chart = LineChart {
        title: "no legend",
        x_label: "x",
        y_label: "y",
        x_log: false,
        y_log: false,
        series: &series,
        hlines: &[],
        vlines: &[],
    };
    lines(&dir.join("fig"), &chart).unwrap();
    let labels = svg_texts(&check_written(&dir, "fig", (1100, 650)));
    // No legend: the texts are the title, the axis descriptions and the ticks.
    assert!(
        labels
            .iter()
            .all(|l| ["no legend", "x", "y"].contains(&l.text.as_str())
                || l.text.parse::<f64>().is_ok()),
        "{labels:?}"
    );
    // A stem with a dot keeps it: "fig.v2" gives "fig.v2.png".
    lines(&dir.join("fig.v2"), &chart).unwrap();
    check_written(&dir, "fig.v2", (1100, 650));
    // A missing folder is an error and leaves nothing behind.
    assert!(lines(&dir.join("missing/fig"), &chart).is_err());
}
