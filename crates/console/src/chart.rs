//! Charts as inline SVG, drawn on the server: figures in, markup out, nothing fetched and no
//! script. Each chart is an `svg` with `role="img"` and an `aria-label` that says what it shows in
//! words; each bar carries its figures in `data-*` attributes and a `<title>` (the tooltip a
//! browser shows on hover), so a test or a reader of the source finds the numbers as they are.
//!
//! Two shapes cover the console's figures: [`counts`], a bar per time bucket whose height is the
//! runs ended in it with the failed ones drawn over its base, and [`values`], a horizontal bar per
//! named figure (runs by state, percentiles) with a value or none.

use maud::{html, Markup};

/// A [`counts`] chart's size in SVG units; CSS scales it to the page's width (a whole row).
const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 200.0;
/// A [`values`] chart's width: it shares a row with others, so its text keeps about its size.
const VALUES_WIDTH: f64 = 400.0;
/// Room for the axis labels: left of the plot, and under it.
const LEFT: f64 = 44.0;
const BOTTOM: f64 = 22.0;
const TOP: f64 = 8.0;

/// One bucket of a [`counts`] chart.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Bucket {
    /// What the bucket is, as the axis and the tooltip say it (`10:05`, `Mon 14:00`).
    pub label: String,
    /// Its start, machine-readable (RFC 3339), for `data-at`.
    pub at: String,
    /// Runs ended in it.
    pub runs: u64,
    /// Of those, runs that failed.
    pub failed: u64,
}

/// A bar per bucket: the height is `runs`, the failed part drawn at the base; the y axis marks 0
/// and the highest count, the x axis the first, middle and last buckets' labels. `name` is what
/// the chart counts (`Runs per minute`), for its label.
pub(crate) fn counts(name: &str, buckets: &[Bucket]) -> Markup {
    let runs: u64 = buckets.iter().map(|b| b.runs).sum();
    let failed: u64 = buckets.iter().map(|b| b.failed).sum();
    // The earliest of the busiest (`max_by_key` keeps the last of equals).
    let busiest = buckets
        .iter()
        .rev()
        .filter(|b| b.runs > 0)
        .max_by_key(|b| b.runs);
    let top = busiest.map_or(0, |b| b.runs);
    let summary = match busiest {
        Some(b) => format!(
            "{name}: {runs} runs in all, {failed} failed; most in one bucket {top} at {}",
            b.label
        ),
        None => format!("{name}: no runs"),
    };
    let plot_w = WIDTH - LEFT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let slot = plot_w / buckets.len().max(1) as f64;
    let gap = if slot > 4.0 { slot * 0.15 } else { 0.0 };
    let scale = |n: u64| {
        if top == 0 {
            0.0
        } else {
            plot_h * n as f64 / top as f64
        }
    };
    let base = TOP + plot_h;
    let ticks: Vec<usize> = match buckets.len() {
        0 => vec![],
        1 => vec![0],
        n => vec![0, n / 2, n - 1],
    };
    html! {
        svg.chart.counts role="img" aria-label=(summary) viewBox=(format!("0 0 {WIDTH} {HEIGHT}"))
            data-runs=(runs) data-failed=(failed) data-buckets=(buckets.len())
            xmlns="http://www.w3.org/2000/svg" {
            line.axis x1=(LEFT) y1=(base) x2=(WIDTH) y2=(base) {}
            line.axis x1=(LEFT) y1=(TOP) x2=(LEFT) y2=(base) {}
            text.tick x=(LEFT - 4.0) y=(TOP + 8.0) text-anchor="end" { (top) }
            text.tick x=(LEFT - 4.0) y=(base) text-anchor="end" { "0" }
            // The first label starts at its bar and the last ends at its, so neither is cut off.
            @for i in &ticks {
                @if let Some(b) = buckets.get(*i) {
                    @let anchor = if *i == 0 { "start" } else if *i + 1 == buckets.len() { "end" } else { "middle" };
                    @let x = match anchor { "start" => LEFT + slot * *i as f64, "end" => LEFT + slot * (*i as f64 + 1.0), _ => LEFT + slot * (*i as f64 + 0.5) };
                    text.tick x=(num(x)) y=(HEIGHT - 6.0) text-anchor=(anchor) { (b.label) }
                }
            }
            @for (i, b) in buckets.iter().enumerate() {
                @let x = num(LEFT + slot * i as f64 + gap / 2.0);
                @let w = num((slot - gap).max(0.5));
                g.bar data-at=(b.at) data-runs=(b.runs) data-failed=(b.failed) {
                    title { (b.label) ": " (b.runs) " runs, " (b.failed) " failed" }
                    // An empty bucket still gets a transparent column, so its tooltip shows.
                    rect.hit x=(x) y=(TOP) width=(w) height=(num(plot_h)) {}
                    @if b.runs > 0 {
                        rect.runs x=(x) y=(num(base - scale(b.runs))) width=(w) height=(num(scale(b.runs))) {}
                    }
                    @if b.failed > 0 {
                        rect.failed x=(x) y=(num(base - scale(b.failed))) width=(w) height=(num(scale(b.failed))) {}
                    }
                }
            }
        }
    }
}

/// One bar of a [`values`] chart.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Value {
    /// What the figure is (`p50`, `Succeeded`).
    pub name: String,
    /// The figure; `None` when there is none (no runs), drawn as "none".
    pub value: Option<f64>,
    /// The figure as the page says it (`1.2 s`, `16`).
    pub shown: String,
}

/// A horizontal bar per figure, scaled to the largest; `name` is what they are (`Duration`).
pub(crate) fn values(name: &str, figures: &[Value]) -> Markup {
    let row = 22.0;
    let label_w = 90.0;
    let value_w = 70.0;
    let height = row * figures.len().max(1) as f64 + 4.0;
    let largest = figures
        .iter()
        .filter_map(|f| f.value)
        .fold(0.0_f64, f64::max);
    let plot_w = VALUES_WIDTH - label_w - value_w;
    let summary = if figures.is_empty() {
        format!("{name}: none")
    } else {
        let parts: Vec<String> = figures
            .iter()
            .map(|f| format!("{} {}", f.name, f.shown))
            .collect();
        format!("{name}: {}", parts.join(", "))
    };
    html! {
        svg.chart.values role="img" aria-label=(summary) viewBox=(format!("0 0 {VALUES_WIDTH} {}", num(height)))
            xmlns="http://www.w3.org/2000/svg" {
            @for (i, f) in figures.iter().enumerate() {
                @let y = row * i as f64 + 2.0;
                @let w = match f.value { Some(v) if largest > 0.0 => plot_w * v / largest, _ => 0.0 };
                g.bar data-name=(f.name) data-value=[f.value.map(num)] {
                    title { (f.name) ": " (f.shown) }
                    text.tick x=(label_w - 6.0) y=(num(y + 15.0)) text-anchor="end" { (f.name) }
                    rect.runs x=(label_w) y=(num(y + 3.0)) width=(num(w.max(1.0))) height=(num(row - 6.0)) {}
                    text.tick x=(num(label_w + w.max(1.0) + 6.0)) y=(num(y + 15.0)) { (f.shown) }
                }
            }
        }
    }
}

/// A number for an attribute: at most two decimals, no trailing zeros.
fn num(x: f64) -> String {
    let text = format!("{:.2}", x);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Milliseconds as people read them: `0 ms`, `340 ms`, `1.2 s`, `3.5 min`, `2.1 h`.
pub(crate) fn millis(ms: Option<f64>) -> String {
    match ms {
        None => "none".to_string(),
        Some(ms) if ms < 1_000.0 => format!("{} ms", ms.round()),
        Some(ms) if ms < 60_000.0 => format!("{:.1} s", ms / 1_000.0),
        Some(ms) if ms < 3_600_000.0 => format!("{:.1} min", ms / 60_000.0),
        Some(ms) => format!("{:.1} h", ms / 3_600_000.0),
    }
}

/// A rate as a percentage with one decimal; `none` without one.
pub(crate) fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "none".to_string(), |r| format!("{:.1} %", r * 100.0))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn bucket(label: &str, runs: u64, failed: u64) -> Bucket {
        Bucket {
            label: label.into(),
            at: format!("2026-01-05T{label}:00Z"),
            runs,
            failed,
        }
    }

    /// The attribute `name` of every element matching `tag` … `>`, in order.
    fn attrs(svg: &str, marker: &str, name: &str) -> Vec<String> {
        svg.split(marker)
            .skip(1)
            .map(|rest| {
                let tag = &rest[..rest.find('>').unwrap()];
                tag.split(&format!(" {name}=\""))
                    .nth(1)
                    .map(|v| v[..v.find('"').unwrap()].to_string())
                    .unwrap_or_default()
            })
            .collect()
    }

    #[test]
    fn counts_carry_each_buckets_figures_and_scale_to_the_busiest() {
        let svg = counts(
            "Runs per minute",
            &[
                bucket("10:00", 4, 1),
                bucket("10:01", 0, 0),
                bucket("10:02", 2, 2),
            ],
        )
        .into_string();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains(r#"role="img""#));
        assert!(
            svg.contains(r#"aria-label="Runs per minute: 6 runs in all, 3 failed; most in one bucket 4 at 10:00""#),
            "{svg}"
        );
        assert!(svg.contains(r#"data-runs="6" data-failed="3" data-buckets="3""#));
        assert_eq!(
            attrs(&svg, "<g class=\"bar\"", "data-runs"),
            ["4", "0", "2"]
        );
        assert_eq!(
            attrs(&svg, "<g class=\"bar\"", "data-failed"),
            ["1", "0", "2"]
        );
        assert!(svg.contains("<title>10:02: 2 runs, 2 failed</title>"));
        // The busiest bar fills the plot (170 units), the others in proportion.
        assert_eq!(attrs(&svg, "<rect class=\"runs\"", "height"), ["170", "85"]);
        assert_eq!(
            attrs(&svg, "<rect class=\"failed\"", "height"),
            ["42.5", "85"]
        );
        // The y axis names the highest count; the x axis the first, middle and last buckets.
        assert!(svg.contains(r#"text-anchor="end">4</text>"#));
        for (anchor, label) in [("start", "10:00"), ("middle", "10:01"), ("end", "10:02")] {
            assert!(
                svg.contains(&format!(r#"text-anchor="{anchor}">{label}</text>"#)),
                "{svg}"
            );
        }
    }

    #[test]
    fn counts_without_runs_say_so_and_draw_no_bars() {
        let svg = counts("Runs per hour", &[bucket("10:00", 0, 0)]).into_string();
        assert!(svg.contains(r#"aria-label="Runs per hour: no runs""#));
        assert!(!svg.contains(r#"class="runs""#));
        assert!(counts("Runs", &[]).into_string().contains("no runs"));
    }

    #[test]
    fn values_scale_to_the_largest_and_show_none() {
        let figures = [
            Value {
                name: "p50".into(),
                value: Some(100.0),
                shown: millis(Some(100.0)),
            },
            Value {
                name: "p99".into(),
                value: Some(400.0),
                shown: millis(Some(400.0)),
            },
            Value {
                name: "lag".into(),
                value: None,
                shown: millis(None),
            },
        ];
        let svg = values("Duration", &figures).into_string();
        assert!(
            svg.contains(r#"aria-label="Duration: p50 100 ms, p99 400 ms, lag none""#),
            "{svg}"
        );
        assert_eq!(
            attrs(&svg, "<g class=\"bar\"", "data-value"),
            ["100", "400", ""]
        );
        assert_eq!(
            attrs(&svg, "<rect class=\"runs\"", "width"),
            ["60", "240", "1"]
        );
    }

    #[test]
    fn figures_read_as_people_say_them() {
        assert_eq!(millis(Some(0.0)), "0 ms");
        assert_eq!(millis(Some(1_234.0)), "1.2 s");
        assert_eq!(millis(Some(90_000.0)), "1.5 min");
        assert_eq!(millis(Some(7_200_000.0)), "2.0 h");
        assert_eq!(percent(Some(0.727_27)), "72.7 %");
        assert_eq!(percent(None), "none");
        assert_eq!(num(37.5), "37.5");
        assert_eq!(num(150.0), "150");
    }
}
