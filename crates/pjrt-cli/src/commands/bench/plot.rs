//! `pjrt bench ... --plot FILE.svg`: the distribution of per-call latencies as a picture. One
//! cumulative curve per series (safe and raw overlaid), the x axis in microseconds, the y axis
//! the share of calls at most that fast; p10, median, p90 and p99 marked on each curve and
//! listed in the legend; the safe/raw ratio of the medians in the title.
//!
//! A small SVG writer of our own (plain text, no dependency): the picture needs lines, dots and
//! text only.
//!
//! ```
//! use pjrt_cli::commands::bench::{plot, samples::Samples};
//! let safe = Samples::new("safe", vec![2_600, 2_500, 2_550, 9_000]); // ns per call
//! let raw = Samples::new("raw", vec![2_300, 2_350, 2_400, 2_330]);
//! assert_eq!(safe.stats().median_us, 2.6);
//! let picture = plot::svg("dispatch", "an example", &[safe, raw]);
//! assert!(picture.starts_with("<svg") && picture.contains("median 2.60 µs"));
//! ```

use std::fmt::Write as _;
use std::path::Path;

use super::samples::Samples;

const WIDTH: f64 = 860.0;
const HEIGHT: f64 = 520.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 70.0;
const BOTTOM: f64 = 150.0;
/// Series colours (colour-blind safe: blue, orange, green, purple).
const COLOURS: [&str; 4] = ["#0072b2", "#e69f00", "#009e73", "#cc79a7"];
/// The marked quantiles and their labels.
const MARKS: [(f64, &str); 4] = [(0.1, "p10"), (0.5, "median"), (0.9, "p90"), (0.99, "p99")];

/// Draws `series` as an SVG document: `title` on top, `subtitle` (what ran, where, when) below.
pub fn svg(title: &str, subtitle: &str, series: &[Samples]) -> String {
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    // The x range: from the fastest call to a bit past the slowest p99; slower calls (the far
    // tail) are cut off, and the caption says where.
    let lo = series.iter().map(|s| s.quantile_us(0.0)).fold(f64::INFINITY, f64::min);
    let p99 = series.iter().map(|s| s.quantile_us(0.99)).fold(0.0, f64::max);
    let max = series.iter().map(|s| s.quantile_us(1.0)).fold(0.0, f64::max);
    let (lo, hi) = if lo.is_finite() && p99 > lo { (lo, p99 + (p99 - lo) * 0.15) } else { (0.0, 1.0) };
    // A wide range (a loaded machine's tail) reads better on a log axis.
    let log = lo > 0.0 && hi / lo > 8.0;
    let (ticks, labels, x0, x1) = if log {
        let ticks = log_ticks(lo, hi);
        let labels = ticks.iter().map(|t| tick_label(*t, *t)).collect::<Vec<_>>();
        (ticks, labels, lo, hi)
    } else {
        let (ticks, step) = nice_ticks(lo, hi);
        let labels = ticks.iter().map(|t| tick_label(*t, step)).collect();
        let (x0, x1) = (ticks[0].min(lo), (ticks[ticks.len() - 1]).max(hi));
        (ticks, labels, x0, x1)
    };
    let x = |us: f64| {
        let us = us.clamp(x0, x1);
        if log {
            LEFT + (us / x0).ln() / (x1 / x0).ln() * plot_w
        } else {
            LEFT + (us - x0) / (x1 - x0) * plot_w
        }
    };
    let y = |share: f64| TOP + (1.0 - share) * plot_h;

    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="13">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(out, r#"<text x="{LEFT}" y="28" font-size="17" font-weight="bold">{}</text>"#, escape(title));
    let _ = writeln!(out, r##"<text x="{LEFT}" y="50" fill="#555">{}</text>"##, escape(subtitle));
    // Grid and axes.
    for share in [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0] {
        let yy = y(share);
        // 99% sits just under 100%: its label goes inside the plot, on the right.
        let (label_x, anchor, label_y) =
            if share == 0.99 { (LEFT + plot_w - 4.0, "end", yy + 12.0) } else { (LEFT - 6.0, "end", yy + 4.0) };
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{label_x:.1}" y="{label_y:.1}" text-anchor="{anchor}">{}%</text>"##,
            LEFT + plot_w,
            share * 100.0
        );
    }
    for (&t, label) in ticks.iter().zip(&labels) {
        let xx = x(t);
        let _ = writeln!(
            out,
            r##"<line x1="{xx:.1}" y1="{TOP}" x2="{xx:.1}" y2="{:.1}" stroke="#eee"/><line x1="{xx:.1}" y1="{:.1}" x2="{xx:.1}" y2="{:.1}" stroke="#333"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{label}</text>"##,
            TOP + plot_h,
            TOP + plot_h,
            TOP + plot_h + 5.0,
            TOP + plot_h + 20.0,
        );
    }
    let _ =
        writeln!(out, r##"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>"##);
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">latency per call (µs{})</text>"#,
        LEFT + plot_w / 2.0,
        TOP + plot_h + 40.0,
        if log { ", log scale" } else { "" }
    );
    let _ = writeln!(
        out,
        r#"<text transform="translate(18 {:.1}) rotate(-90)" text-anchor="middle">calls at most this fast</text>"#,
        TOP + plot_h / 2.0
    );
    // One cumulative curve per series, thinned to at most ~2 points per pixel column.
    for (k, s) in series.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let ns = s.sorted_ns();
        if ns.is_empty() {
            continue;
        }
        let stride = (ns.len() / (2 * plot_w as usize)).max(1);
        let mut path = String::new();
        let n = ns.len() as f64;
        let mut i = 0;
        while i < ns.len() {
            let (xx, yy) = (x(ns[i] as f64 / 1e3), y((i + 1) as f64 / n));
            let _ = write!(path, "{}{xx:.1},{yy:.1}", if path.is_empty() { "M" } else { " L" });
            i += stride;
        }
        let _ = write!(path, " L{:.1},{:.1}", x(ns[ns.len() - 1] as f64 / 1e3), y(1.0));
        let _ = writeln!(out, r#"<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"/>"#);
        for (q, _) in MARKS {
            let _ = writeln!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{colour}" stroke="white"/>"#,
                x(s.quantile_us(q)),
                y(q)
            );
        }
        // Legend row: the series and its marked quantiles.
        let ly = TOP + plot_h + 64.0 + 20.0 * k as f64;
        let marks: Vec<String> =
            MARKS.iter().map(|(q, label)| format!("{label} {}", format_us(s.quantile_us(*q)))).collect();
        let _ = writeln!(
            out,
            r#"<line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="3"/><text x="{:.1}" y="{:.1}"><tspan font-weight="bold">{}</tspan> ({} calls): {}</text>"#,
            ly - 4.0,
            LEFT + 24.0,
            ly - 4.0,
            LEFT + 32.0,
            ly,
            escape(&s.name),
            ns.len(),
            marks.join(" · ")
        );
    }
    let note_y = TOP + plot_h + 64.0 + 20.0 * series.len() as f64;
    let _ = writeln!(
        out,
        r##"<text x="{LEFT}" y="{note_y:.1}" fill="#555">Dots: p10, median, p90, p99. Axis cut at {}; slowest call {}.</text>"##,
        format_us(x1),
        format_us(max)
    );
    out.push_str("</svg>\n");
    out
}

/// Writes [`svg`] to `path` (atomically).
pub fn write(path: &Path, title: &str, subtitle: &str, series: &[Samples]) -> std::io::Result<()> {
    let text = svg(title, subtitle, series);
    pjrt_formats::atomic_file::write_with(path, |w| std::io::Write::write_all(w, text.as_bytes()))
}

/// 4 to 10 round tick values covering `lo..=hi`, and their step.
fn nice_ticks(lo: f64, hi: f64) -> (Vec<f64>, f64) {
    let span = (hi - lo).max(1e-9);
    let raw = span / 6.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * magnitude).find(|s| span / s <= 8.0).unwrap_or(magnitude);
    let first = (lo / step).floor() * step;
    let ticks = (0..12).map(|i| first + i as f64 * step).take_while(|t| *t <= hi + step * 0.999).collect();
    (ticks, step)
}

/// Ticks 1, 2, 5 × 10^k inside `lo..=hi` (and `lo`, `hi` themselves when fewer than 3 fit).
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut ticks = Vec::new();
    for decade in lo.log10().floor() as i32..=hi.log10().ceil() as i32 {
        for m in [1.0, 2.0, 5.0] {
            let t = m * 10f64.powi(decade);
            if t >= lo && t <= hi {
                ticks.push(t);
            }
        }
    }
    if ticks.len() < 3 {
        ticks.insert(0, lo);
        ticks.push(hi);
    }
    ticks
}

/// A tick value with as many decimals as the step needs (2.5, not 2).
fn tick_label(value: f64, step: f64) -> String {
    let decimals = (0..4).find(|d| ((step * 10f64.powi(*d)).round() - step * 10f64.powi(*d)).abs() < 1e-6).unwrap_or(3);
    format!("{value:.*}", decimals as usize)
}

fn format_us(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1e3)
    } else if us >= 100.0 {
        format!("{us:.0} µs")
    } else {
        format!("{us:.2} µs")
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Today's date (UTC) as YYYY-MM-DD, for the caption (days since the epoch to a civil date).
pub fn today() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_picture_has_both_curves_the_marks_and_labelled_axes() {
        let safe = Samples::new("safe", (0..1000).map(|i| 2_000 + i * 3).collect());
        let raw = Samples::new("raw", (0..1000).map(|i| 1_800 + i * 3).collect());
        let text = svg("dispatch: safe / raw 1.08", "on a test", &[safe, raw]);
        assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
        assert_eq!(text.matches("<path ").count(), 2);
        assert_eq!(text.matches("<circle ").count(), 8, "p10, median, p90, p99 on each curve");
        assert!(text.contains("latency per call (µs)") && text.contains("safe / raw 1.08"));
        assert!(text.contains("median 3.50 µs"), "{text}");
    }

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        let (ticks, step) = nice_ticks(2.3, 7.9);
        assert_eq!(step, 1.0);
        assert!(ticks[0] <= 2.3 && *ticks.last().unwrap() >= 7.9);
        assert!(today().len() == 10 && today().starts_with("20"));
        assert_eq!(
            (tick_label(2.5, 2.5), tick_label(5.0, 2.5), tick_label(4.0, 2.0)),
            ("2.5".into(), "5.0".into(), "4".into())
        );
    }
}
