//! The eval report's charts as self-contained SVG text: pass rate per variant with its interval,
//! and cost against steps per case run.
//!
//! GitHub shows SVG through an `<img>` tag, so the charts are plain SVG 1.1 with fixed sizes, no
//! script, no external reference and no CSS beyond presentation attributes. Every text drawn is a
//! variant name or case id from user files, so all of it goes through [`escape`]. Every coordinate
//! is finite: empty input, zero costs and zero steps have their own scales.

use std::fmt::Write as _;

use super::stats::wilson;
use crate::markup::escape;

const WIDTH: f64 = 640.0;
/// Longest label drawn beside a bar, in characters; longer ones end in `…`.
const MAX_LABEL_CHARS: usize = 28;
/// Longest label in the scatter plot's legend, which has less room.
const MAX_LEGEND_CHARS: usize = 18;
/// Tableau 10: distinct, and readable for the common kinds of colour blindness.
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
];

/// One variant's bar: passes out of judged runs (errors left out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bar {
    pub label: String,
    pub passed: u64,
    pub judged: u64,
}

/// One variant's case runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<Point>,
}

/// One case run; runs without a cost are counted under the legend, not drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub case: String,
    pub repetition: u32,
    pub steps: u32,
    pub cost_usd: Option<f64>,
}

/// A label cut to `max` characters and escaped.
fn label(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return escape(text);
    }
    let cut: String = text.chars().take(max - 1).collect();
    escape(&format!("{cut}…"))
}

fn open(out: &mut String, height: f64, title: &str) {
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="Helvetica, Arial, sans-serif" font-size="12">"##
    );
    let _ = write!(
        out,
        r##"<title>{t}</title><rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/><text x="10" y="22" font-size="14" font-weight="bold" fill="#24292f">{t}</text>"##,
        t = escape(title)
    );
}

fn percent(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}

/// Pass rate per variant, one horizontal bar each, with the 95% Wilson interval as an error bar.
pub fn pass_rate_chart(bars: &[Bar]) -> String {
    const TOP: f64 = 40.0;
    const ROW: f64 = 32.0;
    const X0: f64 = 200.0;
    const PLOT: f64 = 320.0;
    let height = TOP + ROW * bars.len().max(1) as f64 + 30.0;
    let mut out = String::new();
    open(&mut out, height, "Pass rate (95% Wilson interval)");
    if bars.is_empty() {
        let _ = write!(
            out,
            r##"<text x="{X0}" y="{}" fill="#57606a">No results</text>"##,
            TOP + 20.0
        );
    }
    // Grid and axis labels at every quarter.
    let bottom = TOP + ROW * bars.len().max(1) as f64;
    for quarter in 0..=4 {
        let x = X0 + PLOT * f64::from(quarter) / 4.0;
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{bottom}" stroke="#d0d7de" stroke-width="1"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#57606a">{}%</text>"##,
            bottom + 16.0,
            quarter * 25
        );
    }
    for (i, bar) in bars.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        let colour = PALETTE[i % PALETTE.len()];
        let _ = write!(
            out,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#24292f">{}</text>"##,
            X0 - 8.0,
            y + 20.0,
            label(&bar.label, MAX_LABEL_CHARS)
        );
        let Some(interval) = wilson(bar.passed, bar.judged) else {
            let _ = write!(
                out,
                r##"<text x="{:.1}" y="{:.1}" fill="#57606a">no judged runs</text>"##,
                X0 + 4.0,
                y + 20.0
            );
            continue;
        };
        let rate = bar.passed.min(bar.judged) as f64 / bar.judged as f64;
        let (low, high) = (X0 + PLOT * interval.low, X0 + PLOT * interval.high);
        let _ = write!(
            out,
            r##"<rect x="{X0}" y="{:.1}" width="{:.1}" height="20" fill="{colour}"/>"##,
            y + 6.0,
            PLOT * rate
        );
        let _ = write!(
            out,
            r##"<g stroke="#24292f" stroke-width="1.5"><line x1="{low:.1}" y1="{mid:.1}" x2="{high:.1}" y2="{mid:.1}"/><line x1="{low:.1}" y1="{top:.1}" x2="{low:.1}" y2="{end:.1}"/><line x1="{high:.1}" y1="{top:.1}" x2="{high:.1}" y2="{end:.1}"/></g>"##,
            mid = y + 16.0,
            top = y + 10.0,
            end = y + 22.0
        );
        let _ = write!(
            out,
            r##"<text x="{:.1}" y="{:.1}" fill="#24292f">{} ({}/{})</text>"##,
            X0 + PLOT + 10.0,
            y + 20.0,
            percent(rate),
            bar.passed,
            bar.judged
        );
    }
    out.push_str("</svg>\n");
    out
}

/// An axis from 0 to a round number at or above `max`, with its tick step: steps of 1, 2 or 5
/// times a power of ten, about five of them. `fallback` is the top when `max` is not positive.
fn axis(max: f64, fallback: f64, min_step: f64) -> (f64, f64) {
    let max = if max.is_finite() && max > 0.0 { max } else { fallback };
    let raw = max / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|step| *step >= raw)
        .unwrap_or(10.0 * magnitude)
        .max(min_step);
    ((max / step).ceil() * step, step)
}

/// Decimals enough to tell ticks `step` apart.
fn decimals(step: f64) -> usize {
    (-step.log10().floor()).clamp(0.0, 6.0) as usize
}

/// Cost (USD) against steps, one point per case run, one colour per variant, with a legend.
pub fn cost_vs_steps_chart(series: &[Series]) -> String {
    const LEFT: f64 = 70.0;
    const PLOT_W: f64 = 390.0;
    const TOP: f64 = 40.0;
    const PLOT_H: f64 = 280.0;
    const LEGEND: f64 = 480.0;
    let height = (TOP + PLOT_H + 50.0).max(TOP + 20.0 * series.len() as f64 + 60.0);
    let mut out = String::new();
    open(&mut out, height, "Cost vs steps per case run");

    let costed = || {
        series
            .iter()
            .flat_map(|s| &s.points)
            .filter_map(|p| p.cost_usd.filter(|c| c.is_finite()).map(|c| (p.steps, c)))
    };
    let max_steps = costed().map(|(steps, _)| f64::from(steps)).fold(0.0, f64::max);
    let max_cost = costed().map(|(_, cost)| cost).fold(0.0, f64::max);
    let (x_top, x_step) = axis(max_steps, 10.0, 1.0);
    let (y_top, y_step) = axis(max_cost, 0.01, 0.0);
    let x_of = |steps: f64| LEFT + PLOT_W * (steps / x_top).clamp(0.0, 1.0);
    let y_of = |cost: f64| TOP + PLOT_H - PLOT_H * (cost / y_top).clamp(0.0, 1.0);

    // Axes, grid and ticks.
    let bottom = TOP + PLOT_H;
    let x_ticks = (x_top / x_step).round() as u32;
    for i in 0..=x_ticks {
        let value = x_step * f64::from(i);
        let x = x_of(value);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{bottom}" stroke="#d0d7de" stroke-width="1"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#57606a">{value:.0}</text>"##,
            bottom + 16.0
        );
    }
    let y_ticks = (y_top / y_step).round() as u32;
    let places = decimals(y_step).max(2);
    for i in 0..=y_ticks {
        let value = y_step * f64::from(i);
        let y = y_of(value);
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#d0d7de" stroke-width="1"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#57606a">${value:.places$}</text>"##,
            LEFT + PLOT_W,
            LEFT - 6.0,
            y + 4.0
        );
    }
    let _ = write!(
        out,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#24292f">steps</text><text x="14" y="{:.1}" text-anchor="middle" fill="#24292f" transform="rotate(-90 14 {:.1})">cost (USD)</text>"##,
        LEFT + PLOT_W / 2.0,
        bottom + 36.0,
        TOP + PLOT_H / 2.0,
        TOP + PLOT_H / 2.0
    );
    if costed().next().is_none() {
        let _ = write!(
            out,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#57606a">No case run with a cost</text>"##,
            LEFT + PLOT_W / 2.0,
            TOP + PLOT_H / 2.0
        );
    }

    // Points, then the legend so it is drawn on top.
    let mut uncosted = 0usize;
    for (i, s) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        for point in &s.points {
            let Some(cost) = point.cost_usd.filter(|c| c.is_finite()) else {
                uncosted += 1;
                continue;
            };
            let _ = write!(
                out,
                r##"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{colour}" fill-opacity="0.75" stroke="{colour}"><title>{} #{} ({}): {} steps, ${cost:.4}</title></circle>"##,
                x_of(f64::from(point.steps)),
                y_of(cost),
                escape(&point.case),
                point.repetition,
                escape(&s.label),
                point.steps
            );
        }
    }
    for (i, s) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let y = TOP + 20.0 * i as f64;
        let _ = write!(
            out,
            r##"<rect x="{LEGEND}" y="{:.1}" width="10" height="10" fill="{colour}"/><text x="{:.1}" y="{:.1}" fill="#24292f">{} ({})</text>"##,
            y + 2.0,
            LEGEND + 16.0,
            y + 11.0,
            label(&s.label, MAX_LEGEND_CHARS),
            s.points.len()
        );
    }
    if uncosted > 0 {
        let _ = write!(
            out,
            r##"<text x="{LEGEND}" y="{:.1}" fill="#57606a">{} with no cost</text>"##,
            TOP + 20.0 * series.len() as f64 + 14.0,
            plural_runs(uncosted)
        );
    }
    out.push_str("</svg>\n");
    out
}

fn plural_runs(n: usize) -> String {
    if n == 1 {
        "1 run".to_owned()
    } else {
        format!("{n} runs")
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    /// Parses the chart as XML and checks what GitHub needs: the SVG namespace, a size and a
    /// view box, nothing but drawing elements, no external reference.
    fn valid(svg: &str) -> roxmltree::Document<'_> {
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        let doc = roxmltree::Document::parse(svg).unwrap();
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        assert_eq!(root.tag_name().namespace(), Some("http://www.w3.org/2000/svg"));
        for attribute in ["width", "height", "viewBox"] {
            assert!(root.attribute(attribute).is_some(), "{attribute}");
        }
        for node in doc.descendants().filter(|n| n.is_element()) {
            let name = node.tag_name().name();
            assert!(
                ["svg", "title", "rect", "text", "line", "g", "circle"].contains(&name),
                "unexpected <{name}>"
            );
            for attribute in node.attributes() {
                assert!(!attribute.name().starts_with("on"), "{}", attribute.name());
                assert!(attribute.name() != "href", "{}", attribute.name());
            }
        }
        doc
    }

    fn texts<'a>(doc: &'a roxmltree::Document<'a>) -> Vec<&'a str> {
        doc.descendants().filter_map(|n| n.text()).collect()
    }

    const HOSTILE: &str = "</text><script>alert(1)</script><a href=\"x\">&amp;'\u{1}";

    #[test]
    fn a_hostile_variant_name_stays_text_in_both_charts() {
        let bars = [Bar {
            label: HOSTILE.into(),
            passed: 1,
            judged: 2,
        }];
        let svg = pass_rate_chart(&bars);
        let doc = valid(&svg);
        assert!(!svg.contains("<script"));
        assert!(
            texts(&doc).iter().any(|t| t.contains("<script>")),
            "the name is drawn as text"
        );

        let series = [Series {
            label: HOSTILE.into(),
            points: vec![Point {
                case: HOSTILE.into(),
                repetition: 0,
                steps: 3,
                cost_usd: Some(0.01),
            }],
        }];
        let svg = cost_vs_steps_chart(&series);
        valid(&svg);
        assert!(!svg.contains("<script") && !svg.contains("<a "));
    }

    #[test]
    fn pass_rate_bars_carry_rate_interval_and_counts() {
        let bars = [
            Bar {
                label: "baseline".into(),
                passed: 8,
                judged: 10,
            },
            Bar {
                label: "all errors".into(),
                passed: 0,
                judged: 0,
            },
        ];
        let svg = pass_rate_chart(&bars);
        let doc = valid(&svg);
        let texts = texts(&doc);
        assert!(texts.contains(&"80.0% (8/10)"), "{texts:?}");
        assert!(texts.contains(&"no judged runs"));
        // The bar is 80% of the plot; the error bar runs from 49.0% to 94.3%.
        assert!(svg.contains(r#"width="256.0""#), "{svg}");
        assert!(svg.contains(r#"x1="356.9""#) && svg.contains(r#"x2="501.9""#), "{svg}");
    }

    #[test]
    fn empty_input_gives_a_valid_chart_that_says_so() {
        let svg = pass_rate_chart(&[]);
        let doc = valid(&svg);
        assert!(texts(&doc).contains(&"No results"));
        let svg = cost_vs_steps_chart(&[]);
        let doc = valid(&svg);
        assert!(texts(&doc).contains(&"No case run with a cost"));
    }

    #[test]
    fn zero_costs_and_zero_steps_have_a_scale() {
        let series = [Series {
            label: "free".into(),
            points: vec![
                Point {
                    case: "a".into(),
                    repetition: 0,
                    steps: 0,
                    cost_usd: Some(0.0),
                },
                Point {
                    case: "b".into(),
                    repetition: 0,
                    steps: 0,
                    cost_usd: None,
                },
            ],
        }];
        let svg = cost_vs_steps_chart(&series);
        let doc = valid(&svg);
        assert_eq!(doc.descendants().filter(|n| n.has_tag_name("circle")).count(), 1);
        assert!(texts(&doc).contains(&"1 run with no cost"));
        assert!(texts(&doc).contains(&"$0.010"), "{:?}", texts(&doc));
    }

    #[test]
    fn points_are_placed_on_round_axes_with_one_colour_per_variant() {
        let point = |case: &str, steps, cost| Point {
            case: case.into(),
            repetition: 0,
            steps,
            cost_usd: Some(cost),
        };
        let series = [
            Series {
                label: "a".into(),
                points: vec![point("x", 17, 0.042)],
            },
            Series {
                label: "b".into(),
                points: vec![point("x", 5, 0.01)],
            },
        ];
        let svg = cost_vs_steps_chart(&series);
        let doc = valid(&svg);
        let texts = texts(&doc);
        // Steps 0..20 by 5; cost $0 to $0.05 by $0.01.
        for tick in ["0", "5", "20", "$0.00", "$0.05", "a (1)", "b (1)"] {
            assert!(texts.contains(&tick), "{tick} in {texts:?}");
        }
        let circles: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("circle")).collect();
        assert_eq!(circles.len(), 2);
        assert_eq!(circles[0].attribute("fill"), Some(PALETTE[0]));
        assert_eq!(circles[1].attribute("fill"), Some(PALETTE[1]));
        // 17 of 20 steps across 390 px from 70; $0.042 of $0.05 up 280 px from 320.
        assert_eq!(circles[0].attribute("cx"), Some("401.5"));
        assert_eq!(circles[0].attribute("cy"), Some("84.8"));
    }

    #[test]
    fn long_labels_are_cut() {
        let long = "a".repeat(60);
        let svg = pass_rate_chart(&[Bar {
            label: long.clone(),
            passed: 0,
            judged: 1,
        }]);
        assert!(!svg.contains(&long));
        assert!(svg.contains(&format!("{}…", "a".repeat(27))));
        let svg = cost_vs_steps_chart(&[Series {
            label: long,
            points: Vec::new(),
        }]);
        assert!(svg.contains(&format!("{}… (0)", "a".repeat(17))), "{svg}");
    }

    #[test]
    fn axes_are_round() {
        assert_eq!(axis(17.0, 10.0, 1.0), (20.0, 5.0));
        assert_eq!(axis(0.0, 10.0, 1.0), (10.0, 2.0));
        assert_eq!(axis(1.0, 10.0, 1.0), (1.0, 1.0));
        let (top, step) = axis(0.042, 0.01, 0.0);
        assert!((top - 0.05).abs() < 1e-12 && (step - 0.01).abs() < 1e-12);
        assert_eq!(axis(f64::NAN, 0.01, 0.0).0, 0.01);
    }
}
