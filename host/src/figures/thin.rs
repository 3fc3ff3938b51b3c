//! Long lines made short without changing their picture (the "M4" rule).
//!
//! Plotters draws every point it is given, and an SVG holds them all: a trace of
//! hundreds of thousands of iterations would make a file of many megabytes that draws
//! no differently from one of a few thousand points. Plotters has no decimation, so it
//! is done here.

/// Points of a line kept when it has more than this many.
const THIN_ABOVE: usize = 8000;
/// Columns, about twice the plot width in pixels.
const COLUMNS: usize = 2000;

/// Thins `run` (increasing in x) when it is long: the plot width, where `position` maps an
/// x value to [0, 1] across it, is cut into narrow columns, and in each the first, lowest,
/// highest and last points are kept, in their order.
pub(super) fn thin_line(run: &[(f64, f64)], position: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
    if run.len() <= THIN_ABOVE {
        return run.to_vec();
    }
    let column = |x: f64| (position(x) * COLUMNS as f64).floor() as i64;
    let mut out = Vec::with_capacity(4 * COLUMNS);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_extremes_and_ends() {
        let run: Vec<(f64, f64)> = (0..100_000)
            .map(|i| (i as f64, ((i * 7919) % 1000) as f64))
            .collect();
        let thin = thin_line(&run, |x| x / 99_999.0);
        assert!(thin.len() <= 4 * (COLUMNS + 1));
        assert_eq!(thin.first(), run.first());
        assert_eq!(thin.last(), run.last());
        let max = |v: &[(f64, f64)]| v.iter().map(|p| p.1).fold(f64::MIN, f64::max);
        assert_eq!(max(&thin), max(&run));
        assert!(thin.windows(2).all(|w| w[0].0 < w[1].0));
        let short = &run[..10];
        assert_eq!(thin_line(short, |x| x / 10.0), short.to_vec());
    }

    #[test]
    fn columns_follow_the_axis_position() {
        // On a log axis the last decade of a long line gets as many columns as the first.
        let run: Vec<(f64, f64)> = (1..=100_000).map(|i| (i as f64, (i % 7) as f64)).collect();
        let log = |x: f64| x.log10() / 5.0;
        let thin = thin_line(&run, log);
        let first_decade = thin.iter().filter(|p| p.0 <= 10.0).count();
        assert_eq!(
            first_decade, 10,
            "every point of the first decade is its own column"
        );
    }
}
