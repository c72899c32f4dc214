//! `report.md` and its charts, rendered from the case results alone: summaries per variant, tags,
//! the slowest and costliest runs, failures by stop reason, missed expectations and, with two or
//! more variants, each one set against the baseline.
//!
//! Everything a user wrote (case ids, variant names, tags, errors, expectations) goes through
//! [`md`] before it reaches the Markdown, so a `|` cannot break a table and a name cannot become a
//! link, an image or HTML. The statistics and their rules (errors out of rates, pairing by case
//! and repetition) are in [`super::stats`]; the same results always give the same report.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::results::{CaseResult, Status};
use super::stats::{self, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, Counts, Verdict};
use super::svg;

/// The pass-rate chart's file name, next to `report.md`.
pub const PASS_RATE_CHART: &str = "pass-rate.svg";
/// The cost-vs-steps chart's file name, next to `report.md`.
pub const COST_CHART: &str = "cost-vs-steps.svg";
/// Rows in the slowest and most expensive tables.
const TOP_RUNS: usize = 5;
/// The longest error line quoted, in characters.
const MAX_ERROR_CHARS: usize = 200;

/// A rendered report: `report.md` and the charts it links, by file name.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub markdown: String,
    /// `(file name, SVG text)`, the names relative to the Markdown.
    pub charts: Vec<(String, String)>,
}

/// Renders the report of `results`. `variants` sets the order of columns and charts, and its first
/// is the baseline that the others are compared with; a variant the results hold but `variants`
/// does not name comes after them, in the order the results first mention it, so no run is
/// dropped.
pub fn render(results: &[CaseResult], variants: &[String]) -> Report {
    let groups = group(results, variants);
    let repetitions = results.iter().map(|r| r.repetition + 1).max().unwrap_or(0);
    let charts = vec![
        (PASS_RATE_CHART.to_owned(), pass_rate_chart(&groups)),
        (COST_CHART.to_owned(), cost_chart(&groups)),
    ];
    let mut out = String::from("# Eval report\n\n");
    if results.is_empty() {
        out.push_str("No case runs.\n");
        return Report { markdown: out, charts };
    }
    let cases: BTreeSet<&str> = results.iter().map(|r| r.case.as_str()).collect();
    let _ = writeln!(
        out,
        "{} of {}, {}, {}.\n",
        plural(results.len(), "case run"),
        plural(cases.len(), "case"),
        plural(groups.len(), "variant"),
        plural(repetitions as usize, "repetition")
    );
    out.push_str(
        "Pass rates are over judged runs: an error (a case that could not be set up, run or checked) \
         is neither a pass nor a failure and is counted on its own.\n\n",
    );
    let _ = writeln!(
        out,
        "![pass rate]({PASS_RATE_CHART})\n\n![cost vs steps]({COST_CHART})\n"
    );
    summary(&mut out, &groups, repetitions);
    tags(&mut out, &groups);
    top_runs(&mut out, &groups, repetitions);
    failures(&mut out, &groups, repetitions);
    expectations(&mut out, &groups, repetitions);
    replay_notes(&mut out, &groups, repetitions);
    if let Some((baseline, others)) = groups.split_first() {
        for other in others {
            comparison(&mut out, baseline, other, repetitions);
        }
    }
    // Each section ends in a blank line; the file ends in one newline.
    while out.ends_with("\n\n") {
        out.pop();
    }
    Report { markdown: out, charts }
}

/// One variant's runs, in results order.
struct Group<'a> {
    variant: &'a str,
    runs: Vec<&'a CaseResult>,
}

fn group<'a>(results: &'a [CaseResult], variants: &'a [String]) -> Vec<Group<'a>> {
    let mut groups: Vec<Group<'a>> = Vec::new();
    let names = variants
        .iter()
        .map(String::as_str)
        .chain(results.iter().map(|r| r.variant.as_str()));
    for name in names {
        if !groups.iter().any(|g| g.variant == name) {
            groups.push(Group {
                variant: name,
                runs: Vec::new(),
            });
        }
    }
    for result in results {
        if let Some(group) = groups.iter_mut().find(|g| g.variant == result.variant) {
            group.runs.push(result);
        }
    }
    groups
}

fn pass_rate_chart(groups: &[Group]) -> String {
    let bars: Vec<svg::Bar> = groups
        .iter()
        .map(|g| {
            let counts = Counts::of(g.runs.iter().copied());
            svg::Bar {
                label: g.variant.to_owned(),
                passed: counts.pass,
                judged: counts.judged(),
            }
        })
        .collect();
    svg::pass_rate_chart(&bars)
}

fn cost_chart(groups: &[Group]) -> String {
    let series: Vec<svg::Series> = groups
        .iter()
        .map(|g| svg::Series {
            label: g.variant.to_owned(),
            points: sorted(&g.runs)
                .into_iter()
                .map(|r| svg::Point {
                    case: r.case.clone(),
                    repetition: r.repetition,
                    steps: r.steps,
                    cost_usd: r.cost_usd,
                })
                .collect(),
        })
        .collect();
    svg::cost_vs_steps_chart(&series)
}

/// Runs by case id, then repetition.
fn sorted<'a>(runs: &[&'a CaseResult]) -> Vec<&'a CaseResult> {
    let mut runs = runs.to_vec();
    runs.sort_by(|a, b| (&a.case, a.repetition).cmp(&(&b.case, b.repetition)));
    runs
}

fn summary(out: &mut String, groups: &[Group], repetitions: u32) {
    out.push_str("## Summary\n\n|");
    for g in groups {
        let _ = write!(out, " | {}", md(g.variant));
    }
    out.push_str(" |\n|---|");
    out.push_str(&"---|".repeat(groups.len()));
    out.push('\n');
    let row = |out: &mut String, name: &str, cell: &dyn Fn(&Group) -> String| {
        let _ = write!(out, "| {name} |");
        for g in groups {
            let _ = write!(out, " {} |", cell(g));
        }
        out.push('\n');
    };
    let counts = |g: &Group| Counts::of(g.runs.iter().copied());
    row(out, "cases", &|g| {
        g.runs
            .iter()
            .map(|r| &r.case)
            .collect::<BTreeSet<_>>()
            .len()
            .to_string()
    });
    row(out, "runs", &|g| g.runs.len().to_string());
    row(out, "pass", &|g| counts(g).pass.to_string());
    row(out, "fail", &|g| counts(g).fail.to_string());
    row(out, "error", &|g| counts(g).error.to_string());
    row(out, "pass rate (95% CI)", &|g| {
        let counts = counts(g);
        match (counts.pass_rate(), counts.wilson()) {
            (Some(rate), Some(ci)) => format!("{} ({}–{})", percent(rate), percent(ci.low), percent(ci.high)),
            _ => "–".to_owned(),
        }
    });
    if repetitions > 1 {
        row(
            out,
            "pass@1 ± spread (range over repetitions)",
            &|g| match stats::pass_at_1(g.runs.iter().copied()) {
                Some(p) => format!(
                    "{} ± {} ({}–{})",
                    percent(p.mean),
                    percent(p.spread),
                    percent(p.min),
                    percent(p.max)
                ),
                None => "–".to_owned(),
            },
        );
    }
    row(out, "total cost", &|g| {
        let (total, missing) = cost(&g.runs);
        match (total, missing) {
            (None, _) => "–".to_owned(),
            (Some(total), 0) => usd(total),
            (Some(total), missing) => format!("{} ({} without a cost)", usd(total), plural(missing, "run")),
        }
    });
    row(out, "cost per solved case", &|g| {
        // Every run's cost over the runs that passed (with repetitions, a solved case is a passing
        // run): what one success costs, failures included.
        let (total, missing) = cost(&g.runs);
        let passed = counts(g).pass;
        match total {
            Some(total) if passed > 0 => {
                let per = usd(total / passed as f64);
                if missing > 0 { format!("≥ {per}") } else { per }
            }
            _ => "–".to_owned(),
        }
    });
    let judged = |g: &Group, value: fn(&CaseResult) -> f64| -> Option<f64> {
        let mut values: Vec<f64> = g
            .runs
            .iter()
            .filter(|r| r.status != Status::Error)
            .map(|r| value(r))
            .collect();
        stats::median(&mut values)
    };
    row(out, "median steps (judged runs)", &|g| {
        judged(g, |r| f64::from(r.steps)).map_or_else(|| "–".to_owned(), number)
    });
    row(out, "median wall time (judged runs)", &|g| {
        judged(g, |r| r.wall_ms as f64).map_or_else(|| "–".to_owned(), duration)
    });
    out.push('\n');
}

/// The sum of the known costs (`None` when no run has one) and how many runs the agent ran without
/// a cost being known. A run the agent never started (its setup failed, say) cost nothing.
fn cost(runs: &[&CaseResult]) -> (Option<f64>, usize) {
    let known: Vec<f64> = runs.iter().filter_map(|r| r.cost_usd).collect();
    let total = (!known.is_empty()).then(|| known.iter().sum());
    let missing = runs.iter().filter(|r| r.cost_usd.is_none() && r.stop.is_some()).count();
    (total, missing)
}

fn tags(out: &mut String, groups: &[Group]) {
    out.push_str("## By tag\n\n");
    let tags: BTreeSet<&str> = groups
        .iter()
        .flat_map(|g| &g.runs)
        .flat_map(|r| &r.tags)
        .map(String::as_str)
        .collect();
    if tags.is_empty() {
        out.push_str("No case has a tag.\n\n");
        return;
    }
    out.push_str("| tag |");
    for g in groups {
        let _ = write!(out, " {} |", md(g.variant));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(groups.len()));
    out.push('\n');
    for tag in tags {
        let _ = write!(out, "| {} |", md(tag));
        for g in groups {
            let counts = Counts::of(g.runs.iter().copied().filter(|r| r.tags.iter().any(|t| t == tag)));
            let _ = write!(out, " {} |", rate_cell(counts));
        }
        out.push('\n');
    }
    out.push('\n');
}

/// `66.7% (2/3)`, with errors after; `–` when there is no run.
fn rate_cell(counts: Counts) -> String {
    let mut cell = match counts.pass_rate() {
        Some(rate) => format!("{} ({}/{})", percent(rate), counts.pass, counts.judged()),
        None => "–".to_owned(),
    };
    if counts.error > 0 {
        let _ = write!(cell, ", {}", plural(counts.error as usize, "error"));
    }
    cell
}

/// A run's place among all runs: variant order, then case id, then repetition.
fn all_runs<'a>(groups: &[Group<'a>]) -> Vec<&'a CaseResult> {
    groups.iter().flat_map(|g| sorted(&g.runs)).collect()
}

/// `| case | variant |` and, with repetitions, `| repetition |`: who a row is about.
fn run_header(repetitions: u32) -> &'static str {
    if repetitions > 1 {
        "| case | variant | repetition |"
    } else {
        "| case | variant |"
    }
}

fn run_cells(run: &CaseResult, repetitions: u32) -> String {
    if repetitions > 1 {
        format!("| {} | {} | {} |", md(&run.case), md(&run.variant), run.repetition)
    } else {
        format!("| {} | {} |", md(&run.case), md(&run.variant))
    }
}

fn rule(columns: usize) -> String {
    format!("|{}\n", "---|".repeat(columns))
}

fn top_runs(out: &mut String, groups: &[Group], repetitions: u32) {
    let key_columns = if repetitions > 1 { 3 } else { 2 };
    let runs = all_runs(groups);

    out.push_str("## Slowest case runs\n\n");
    let mut slowest = runs.clone();
    // Stable: equal times keep variant, case and repetition order.
    slowest.sort_by_key(|run| std::cmp::Reverse(run.wall_ms));
    let _ = write!(
        out,
        "{} status | wall time | steps |\n{}",
        run_header(repetitions),
        rule(key_columns + 3)
    );
    for run in slowest.iter().take(TOP_RUNS) {
        let _ = writeln!(
            out,
            "{} {} | {} | {} |",
            run_cells(run, repetitions),
            run.status.label(),
            duration(run.wall_ms as f64),
            run.steps
        );
    }
    out.push('\n');

    out.push_str("## Most expensive case runs\n\n");
    let mut costly: Vec<(&CaseResult, f64)> = runs.iter().filter_map(|r| r.cost_usd.map(|c| (*r, c))).collect();
    if costly.is_empty() {
        out.push_str("No case run has a cost.\n\n");
        return;
    }
    costly.sort_by(|a, b| b.1.total_cmp(&a.1));
    let _ = write!(
        out,
        "{} status | cost | steps |\n{}",
        run_header(repetitions),
        rule(key_columns + 3)
    );
    for (run, cost) in costly.iter().take(TOP_RUNS) {
        let _ = writeln!(
            out,
            "{} {} | {} | {} |",
            run_cells(run, repetitions),
            run.status.label(),
            usd(*cost),
            run.steps
        );
    }
    out.push('\n');
}

/// The group failed runs are listed under when the agent never ran.
const NOT_RUN: &str = "agent did not run";

fn failures(out: &mut String, groups: &[Group], repetitions: u32) {
    out.push_str("## Failures by stop reason\n\n");
    let mut by_stop: BTreeMap<(bool, &str), Vec<&CaseResult>> = BTreeMap::new();
    for run in all_runs(groups).into_iter().filter(|r| r.status != Status::Pass) {
        // Runs the agent never started sort after every stop reason.
        let key = match &run.stop {
            Some(stop) => (false, stop.as_str()),
            None => (true, NOT_RUN),
        };
        by_stop.entry(key).or_default().push(run);
    }
    if by_stop.is_empty() {
        out.push_str("No failures or errors.\n\n");
        return;
    }
    let key_columns = if repetitions > 1 { 3 } else { 2 };
    for ((_, stop), runs) in by_stop {
        let _ = writeln!(out, "### {} ({})\n", md(stop), runs.len());
        let _ = write!(
            out,
            "{} status | detail |\n{}",
            run_header(repetitions),
            rule(key_columns + 2)
        );
        for run in runs {
            let _ = writeln!(
                out,
                "{} {} | {} |",
                run_cells(run, repetitions),
                run.status.label(),
                md(&detail(run))
            );
        }
        out.push('\n');
    }
}

/// What went wrong, in a line: an error's first line, or what the check found.
fn detail(run: &CaseResult) -> String {
    if run.status == Status::Error {
        let line = run
            .error
            .as_deref()
            .and_then(|e| e.lines().map(str::trim).find(|l| !l.is_empty()));
        return truncate(line.unwrap_or("no error recorded"), MAX_ERROR_CHARS);
    }
    let Some(check) = &run.check else {
        return String::new();
    };
    let list = |tests: &[String]| {
        let shown: Vec<&str> = tests.iter().take(3).map(String::as_str).collect();
        let more = tests.len().saturating_sub(shown.len());
        if more > 0 {
            format!("{} and {more} more", shown.join(", "))
        } else {
            shown.join(", ")
        }
    };
    let text = if check.timed_out {
        "the check timed out".to_owned()
    } else if !check.not_fixed.is_empty() {
        format!("not fixed: {}", list(&check.not_fixed))
    } else if !check.broken.is_empty() {
        format!("broken: {}", list(&check.broken))
    } else if !check.failing_tests.is_empty() {
        format!("failing: {}", list(&check.failing_tests))
    } else {
        match check.exit_code {
            Some(code) => format!("the check exited with {code}"),
            None => String::new(),
        }
    };
    truncate(&text, MAX_ERROR_CHARS)
}

fn expectations(out: &mut String, groups: &[Group], repetitions: u32) {
    out.push_str("## Soft expectations missed\n\n");
    let missed: Vec<(&CaseResult, &String)> = all_runs(groups)
        .into_iter()
        .flat_map(|r| r.expectations_missed.iter().map(move |e| (r, e)))
        .collect();
    if missed.is_empty() {
        out.push_str("None.\n\n");
        return;
    }
    let key_columns = if repetitions > 1 { 3 } else { 2 };
    let _ = write!(
        out,
        "{} expectation |\n{}",
        run_header(repetitions),
        rule(key_columns + 1)
    );
    for (run, expectation) in missed {
        let _ = writeln!(out, "{} {} |", run_cells(run, repetitions), md(expectation));
    }
    out.push('\n');
}

/// Runs a replay answered although the tools printed something else than when it was recorded:
/// nothing at all when there are none (a live run has none).
fn replay_notes(out: &mut String, groups: &[Group], repetitions: u32) {
    let noted: Vec<&CaseResult> = all_runs(groups)
        .into_iter()
        .filter(|r| !r.replay_notes.is_empty())
        .collect();
    if noted.is_empty() {
        return;
    }
    out.push_str("## Replayed with other tool output

The recording answered these runs although a tool printed something else than when it was recorded (another version of a test runner, say); the checks ran for real.

");
    let key_columns = if repetitions > 1 { 3 } else { 2 };
    let _ = write!(
        out,
        "{} first difference |\n{}",
        run_header(repetitions),
        rule(key_columns + 1)
    );
    for run in noted {
        let first = run.replay_notes.first().map(String::as_str).unwrap_or_default();
        let _ = writeln!(
            out,
            "{} {} |",
            run_cells(run, repetitions),
            md(&truncate(first, MAX_ERROR_CHARS))
        );
    }
    out.push('\n');
}

fn comparison(out: &mut String, baseline: &Group, other: &Group, repetitions: u32) {
    let _ = writeln!(
        out,
        "## {} against {} (the baseline)\n",
        md(other.variant),
        md(baseline.variant)
    );
    let cases = stats::pair_runs(baseline.runs.iter().copied(), other.runs.iter().copied());
    let pairs: usize = cases.iter().map(|c| c.pairs.len()).sum();
    if cases.is_empty() {
        out.push_str("No case and repetition was judged under both: nothing to compare.\n\n");
    } else {
        let count = |verdict| cases.iter().filter(|c| c.verdict() == verdict).count();
        let _ = writeln!(
            out,
            "Paired by case and repetition: {} over {} (a run either side errored on, or that only one \
             side has, is left out).\n",
            plural(pairs, "pair"),
            plural(cases.len(), "case")
        );
        let _ = writeln!(
            out,
            "- Per case: {}, {}, {}. A case wins when {} passed in more of its paired repetitions than \
             the baseline, and loses when in fewer.",
            plural(count(Verdict::Win), "win"),
            plural_es(count(Verdict::Loss), "loss"),
            plural(count(Verdict::Tie), "tie"),
            md(other.variant)
        );
        let passed = |side: fn(&(bool, bool)) -> bool| {
            cases.iter().flat_map(|c| &c.pairs).filter(|p| side(p)).count() as f64 / pairs as f64
        };
        if let Some(b) = stats::paired_bootstrap(&cases, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED) {
            let _ = writeln!(
                out,
                "- Pass rate over the pairs: {} {}, {} {}; difference {} (95% CI {} to {}; paired \
                 bootstrap over cases, {} resamples, seed {}).",
                md(other.variant),
                percent(passed(|p| p.1)),
                md(baseline.variant),
                percent(passed(|p| p.0)),
                points(b.difference),
                points(b.interval.low),
                points(b.interval.high),
                b.resamples,
                BOOTSTRAP_SEED
            );
        }
        let m = stats::mcnemar(&cases);
        let caveat = if repetitions > 1 {
            " Repetitions count as separate pairs here, so the p-value is optimistic; the bootstrap \
             above resamples whole cases."
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "- McNemar exact test: {} passed where the baseline failed {}, the reverse {}; p = {}.{caveat}\n",
            md(other.variant),
            plural(m.c as usize, "time"),
            plural(m.b as usize, "time"),
            p_value(m.p_value)
        );
    }

    // Every case either side ran, with its verdict when it has pairs.
    let verdicts: BTreeMap<&str, Verdict> = cases.iter().map(|c| (c.case.as_str(), c.verdict())).collect();
    let ids: BTreeSet<&str> = baseline
        .runs
        .iter()
        .chain(&other.runs)
        .map(|r| r.case.as_str())
        .collect();
    let cost_name = if repetitions > 1 { "cost/run" } else { "cost" };
    let _ = write!(
        out,
        "| case | {b} | {o} | {b} {cost_name} | {o} {cost_name} | result |\n{}",
        rule(6),
        b = md(baseline.variant),
        o = md(other.variant)
    );
    for id in ids {
        let (base_runs, other_runs) = (runs_of(baseline, id), runs_of(other, id));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            md(id),
            status_cell(&base_runs),
            status_cell(&other_runs),
            mean_cost(&base_runs),
            mean_cost(&other_runs),
            verdicts.get(id).map_or("–", |v| v.label())
        );
    }
    out.push('\n');
}

fn runs_of<'a>(group: &Group<'a>, case: &str) -> Vec<&'a CaseResult> {
    group.runs.iter().copied().filter(|r| r.case == case).collect()
}

/// One run's status, or `2/3 pass` over several (errors after).
fn status_cell(runs: &[&CaseResult]) -> String {
    match runs {
        [] => "–".to_owned(),
        [run] => run.status.label().to_owned(),
        _ => {
            let counts = Counts::of(runs.iter().copied());
            let mut cell = format!("{}/{} pass", counts.pass, counts.judged());
            if counts.error > 0 {
                let _ = write!(cell, ", {}", plural(counts.error as usize, "error"));
            }
            cell
        }
    }
}

/// The mean cost of the runs that have one.
fn mean_cost(runs: &[&CaseResult]) -> String {
    let known: Vec<f64> = runs.iter().filter_map(|r| r.cost_usd).collect();
    if known.is_empty() {
        return "–".to_owned();
    }
    usd(known.iter().sum::<f64>() / known.len() as f64)
}

/// User text made inert in Markdown and safe in a table cell: line breaks become spaces, control
/// characters U+FFFD, and every character that could start markup (emphasis, code, links,
/// images, HTML, entities, math, strike-through, cell borders) is backslash-escaped.
pub fn md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push(' ');
                }
            }
            '\n' | '\t' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '&' | '~' | '$' | '!' | '#' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max - 1).collect();
    format!("{cut}…")
}

/// Fixed decimals without a `-0.0`.
fn fixed(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    if text.starts_with('-') && text[1..].chars().all(|c| c == '0' || c == '.') {
        text[1..].to_owned()
    } else {
        text
    }
}

/// `66.7%`.
fn percent(rate: f64) -> String {
    format!("{}%", fixed(rate * 100.0, 1))
}

/// A difference of rates in percentage points: `+16.7 pp`, `-8.3 pp`, `0.0 pp`.
fn points(difference: f64) -> String {
    let text = fixed(difference * 100.0, 1);
    if text.starts_with('-') || text.chars().all(|c| c == '0' || c == '.') {
        format!("{text} pp")
    } else {
        format!("+{text} pp")
    }
}

/// `$0.0123`.
fn usd(value: f64) -> String {
    format!("${}", fixed(value, 4))
}

/// `1.2 s` below a minute, `3.5 min` above.
fn duration(ms: f64) -> String {
    if ms < 60_000.0 {
        format!("{} s", fixed(ms / 1000.0, 1))
    } else {
        format!("{} min", fixed(ms / 60_000.0, 1))
    }
}

/// A whole number without decimals, any other with one (`12`, `12.5`).
fn number(value: f64) -> String {
    if value.fract() == 0.0 {
        fixed(value, 0)
    } else {
        fixed(value, 1)
    }
}

fn p_value(p: f64) -> String {
    if p < 0.0001 { "< 0.0001".to_owned() } else { fixed(p, 4) }
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn plural_es(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}es")
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::eval::results::CheckOutcome;
    use crate::eval::stats::tests::run;

    struct R(CaseResult);

    impl R {
        fn new(variant: &str, case: &str, repetition: u32, status: Status) -> R {
            R(run(variant, case, repetition, status))
        }
        fn cost(mut self, usd: f64) -> R {
            self.0.cost_usd = Some(usd);
            self
        }
        fn steps(mut self, steps: u32, wall_ms: u64) -> R {
            self.0.steps = steps;
            self.0.wall_ms = wall_ms;
            self
        }
        fn stop(mut self, stop: &str) -> R {
            self.0.stop = Some(stop.to_owned());
            self
        }
        fn tags(mut self, tags: &[&str]) -> R {
            self.0.tags = tags.iter().map(|t| (*t).to_owned()).collect();
            self
        }
        fn error(mut self, error: &str) -> R {
            self.0.error = Some(error.to_owned());
            self
        }
        fn missed(mut self, expectation: &str) -> R {
            self.0.expectations_missed.push(expectation.to_owned());
            self
        }
        fn not_fixed(mut self, tests: &[&str]) -> R {
            self.0.check = Some(CheckOutcome {
                passed: false,
                exit_code: Some(1),
                timed_out: false,
                failing_tests: Vec::new(),
                not_fixed: tests.iter().map(|t| (*t).to_owned()).collect(),
                broken: Vec::new(),
                output_tail: String::new(),
                files_written: Vec::new(),
            });
            self
        }
    }

    fn variants(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    /// Two variants, two repetitions, three cases: `new` fixes `calc-sign` that `base` never
    /// does, both flake on `parse-date`, and `base` cannot set `go-build` up once.
    fn fixture() -> Vec<CaseResult> {
        use Status::{Error, Fail, Pass};
        [
            R::new("base", "calc-sign", 0, Fail)
                .stop("budget_exhausted")
                .steps(40, 61_000)
                .cost(0.2)
                .tags(&["python", "easy"])
                .not_fixed(&["tests/test_add.py::test_sum"]),
            R::new("base", "calc-sign", 1, Fail)
                .stop("stuck")
                .steps(12, 9_000)
                .cost(0.05)
                .tags(&["python", "easy"]),
            R::new("base", "parse-date", 0, Pass)
                .stop("finished")
                .steps(8, 4_200)
                .cost(0.031)
                .tags(&["rust"])
                .missed("used at most 5 steps"),
            R::new("base", "parse-date", 1, Fail)
                .stop("finished")
                .steps(9, 4_800)
                .cost(0.034)
                .tags(&["rust"]),
            R::new("base", "go-build", 0, Error)
                .error("setup failed: exit 2\ngo: module not found")
                .steps(0, 700),
            R::new("base", "go-build", 1, Pass)
                .stop("finished")
                .steps(5, 3_000)
                .cost(0.012),
            R::new("new", "calc-sign", 0, Pass)
                .stop("finished")
                .steps(6, 3_500)
                .cost(0.021)
                .tags(&["python", "easy"]),
            R::new("new", "calc-sign", 1, Pass)
                .stop("finished")
                .steps(7, 3_900)
                .cost(0.024)
                .tags(&["python", "easy"]),
            R::new("new", "parse-date", 0, Fail)
                .stop("finished")
                .steps(10, 5_000)
                .cost(0.04)
                .tags(&["rust"]),
            R::new("new", "parse-date", 1, Pass)
                .stop("finished")
                .steps(8, 4_100)
                .tags(&["rust"]),
            R::new("new", "go-build", 0, Pass)
                .stop("finished")
                .steps(4, 2_500)
                .cost(0.01),
            R::new("new", "go-build", 1, Pass)
                .stop("finished")
                .steps(4, 2_400)
                .cost(0.011),
        ]
        .into_iter()
        .map(|r| r.0)
        .collect()
    }

    #[test]
    fn a_whole_report_with_two_variants_and_repetitions() {
        let report = render(&fixture(), &variants(&["base", "new"]));
        insta::assert_snapshot!(report.markdown, @r"
    # Eval report

    12 case runs of 3 cases, 2 variants, 2 repetitions.

    Pass rates are over judged runs: an error (a case that could not be set up, run or checked) is neither a pass nor a failure and is counted on its own.

    ![pass rate](pass-rate.svg)

    ![cost vs steps](cost-vs-steps.svg)

    ## Summary

    | | base | new |
    |---|---|---|
    | cases | 3 | 3 |
    | runs | 6 | 6 |
    | pass | 2 | 5 |
    | fail | 3 | 1 |
    | error | 1 | 0 |
    | pass rate (95% CI) | 40.0% (11.8%–76.9%) | 83.3% (43.6%–97.0%) |
    | pass@1 ± spread (range over repetitions) | 50.0% ± 11.8% (33.3%–50.0%) | 83.3% ± 23.6% (66.7%–100.0%) |
    | total cost | $0.3270 | $0.1060 (1 run without a cost) |
    | cost per solved case | $0.1635 | ≥ $0.0212 |
    | median steps (judged runs) | 9 | 6.5 |
    | median wall time (judged runs) | 4.8 s | 3.7 s |

    ## By tag

    | tag | base | new |
    |---|---|---|
    | easy | 0.0% (0/2) | 100.0% (2/2) |
    | python | 0.0% (0/2) | 100.0% (2/2) |
    | rust | 50.0% (1/2) | 50.0% (1/2) |

    ## Slowest case runs

    | case | variant | repetition | status | wall time | steps |
    |---|---|---|---|---|---|
    | calc-sign | base | 0 | fail | 1.0 min | 40 |
    | calc-sign | base | 1 | fail | 9.0 s | 12 |
    | parse-date | new | 0 | fail | 5.0 s | 10 |
    | parse-date | base | 1 | fail | 4.8 s | 9 |
    | parse-date | base | 0 | pass | 4.2 s | 8 |

    ## Most expensive case runs

    | case | variant | repetition | status | cost | steps |
    |---|---|---|---|---|---|
    | calc-sign | base | 0 | fail | $0.2000 | 40 |
    | calc-sign | base | 1 | fail | $0.0500 | 12 |
    | parse-date | new | 0 | fail | $0.0400 | 10 |
    | parse-date | base | 1 | fail | $0.0340 | 9 |
    | parse-date | base | 0 | pass | $0.0310 | 8 |

    ## Failures by stop reason

    ### budget\_exhausted (1)

    | case | variant | repetition | status | detail |
    |---|---|---|---|---|
    | calc-sign | base | 0 | fail | not fixed: tests/test\_add.py::test\_sum |

    ### finished (2)

    | case | variant | repetition | status | detail |
    |---|---|---|---|---|
    | parse-date | base | 1 | fail |  |
    | parse-date | new | 0 | fail |  |

    ### stuck (1)

    | case | variant | repetition | status | detail |
    |---|---|---|---|---|
    | calc-sign | base | 1 | fail |  |

    ### agent did not run (1)

    | case | variant | repetition | status | detail |
    |---|---|---|---|---|
    | go-build | base | 0 | error | setup failed: exit 2 |

    ## Soft expectations missed

    | case | variant | repetition | expectation |
    |---|---|---|---|
    | parse-date | base | 0 | used at most 5 steps |

    ## new against base (the baseline)

    Paired by case and repetition: 5 pairs over 3 cases (a run either side errored on, or that only one side has, is left out).

    - Per case: 1 win, 0 losses, 2 ties. A case wins when new passed in more of its paired repetitions than the baseline, and loses when in fewer.
    - Pass rate over the pairs: new 80.0%, base 40.0%; difference +40.0 pp (95% CI 0.0 pp to +100.0 pp; paired bootstrap over cases, 10000 resamples, seed 20).
    - McNemar exact test: new passed where the baseline failed 3 times, the reverse 1 time; p = 0.6250. Repetitions count as separate pairs here, so the p-value is optimistic; the bootstrap above resamples whole cases.

    | case | base | new | base cost/run | new cost/run | result |
    |---|---|---|---|---|---|
    | calc-sign | 0/2 pass | 2/2 pass | $0.1250 | $0.0225 | win |
    | go-build | 1/1 pass, 1 error | 2/2 pass | $0.0120 | $0.0105 | tie |
    | parse-date | 1/2 pass | 1/2 pass | $0.0325 | $0.0400 | tie |
    ");
        let names: Vec<&str> = report.charts.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, [PASS_RATE_CHART, COST_CHART]);
        for (name, _) in &report.charts {
            assert!(report.markdown.contains(&format!("]({name})")), "{name} is linked");
        }
    }

    #[test]
    fn no_results_is_a_short_report_with_empty_charts() {
        let report = render(&[], &variants(&["base"]));
        assert_eq!(report.markdown, "# Eval report\n\nNo case runs.\n");
        assert_eq!(report.charts.len(), 2);
        assert!(
            report
                .charts
                .iter()
                .all(|(_, svg)| svg.starts_with("<svg") && !svg.contains("NaN"))
        );
    }

    #[test]
    fn a_replay_answered_over_other_tool_output_is_listed() {
        let mut noted = R::new("only", "a", 0, Status::Pass).0;
        noted.replay_notes = vec!["request 2: tool output differs from the recording: at byte 3".to_owned()];
        let results = vec![noted, R::new("only", "b", 0, Status::Pass).0];
        let markdown = render(&results, &variants(&["only"])).markdown;
        assert!(markdown.contains("## Replayed with other tool output\n"), "{markdown}");
        assert!(
            markdown.contains("| a | only | request 2: tool output differs from the recording: at byte 3 |"),
            "{markdown}"
        );
        assert!(
            !render(&results[1..], &variants(&["only"]))
                .markdown
                .contains("Replayed")
        );
    }

    #[test]
    fn one_variant_has_no_comparison() {
        let results: Vec<CaseResult> = vec![
            R::new("only", "a", 0, Status::Pass).cost(0.01).0,
            R::new("only", "b", 0, Status::Fail).stop("finished").0,
        ];
        let report = render(&results, &variants(&["only"]));
        assert!(!report.markdown.contains("the baseline)"), "{}", report.markdown);
        assert!(!report.markdown.contains("pass@1"), "one repetition: no pass@1 row");
        assert!(
            report.markdown.contains("| pass rate (95% CI) | 50.0% (9.5%–90.5%) |"),
            "{}",
            report.markdown
        );
        assert!(
            report
                .markdown
                .contains("| total cost | $0.0100 (1 run without a cost) |")
        );
        assert!(report.markdown.contains("| cost per solved case | ≥ $0.0100 |"));
    }

    #[test]
    fn all_errors_have_no_rate_and_are_listed_with_their_first_line() {
        let results: Vec<CaseResult> = vec![
            R::new("v", "a", 0, Status::Error)
                .error("\n  clone failed: 404\nmore detail")
                .0,
            R::new("v", "b", 0, Status::Error).0,
        ];
        let report = render(&results, &variants(&["v"]));
        let md = &report.markdown;
        assert!(md.contains("| error | 2 |"), "{md}");
        assert!(md.contains("| pass rate (95% CI) | – |"), "{md}");
        assert!(md.contains("| total cost | – |"), "{md}");
        assert!(md.contains("| median steps (judged runs) | – |"), "{md}");
        assert!(md.contains("### agent did not run (2)"), "{md}");
        assert!(md.contains("| a | v | error | clone failed: 404 |"), "{md}");
        assert!(md.contains("| b | v | error | no error recorded |"), "{md}");
        assert!(md.contains("No case run has a cost."), "{md}");
        let (_, bars) = &report.charts[0];
        assert!(bars.contains("no judged runs"));
    }

    #[test]
    fn missing_costs_leave_cost_figures_out_not_zero() {
        let results: Vec<CaseResult> = vec![
            R::new("a", "x", 0, Status::Pass).0,
            R::new("b", "x", 0, Status::Pass).cost(0.5).0,
        ];
        let report = render(&results, &variants(&["a", "b"]));
        let md = &report.markdown;
        assert!(md.contains("| total cost | – | $0.5000 |"), "{md}");
        assert!(md.contains("| cost per solved case | – | $0.5000 |"), "{md}");
        assert!(md.contains("| x | pass | pass | – | $0.5000 | tie |"), "{md}");
    }

    #[test]
    fn variants_the_caller_did_not_name_come_last_and_are_kept() {
        let results: Vec<CaseResult> = vec![
            R::new("stray", "x", 0, Status::Pass).0,
            R::new("named", "x", 0, Status::Fail).0,
        ];
        let report = render(&results, &variants(&["named"]));
        assert!(report.markdown.contains("| | named | stray |"), "{}", report.markdown);
        assert!(report.markdown.contains("## stray against named (the baseline)"));
    }

    #[test]
    fn user_strings_cannot_break_tables_or_inject_markup() {
        let hostile = "a|b\nc <img src=x> [l](http://x) `c` *e* $m$";
        let results: Vec<CaseResult> = vec![
            R::new(hostile, hostile, 0, Status::Error)
                .error(hostile)
                .tags(&[hostile])
                .missed(hostile)
                .0,
            R::new("ok", hostile, 0, Status::Fail).stop(hostile).0,
        ];
        let report = render(&results, &variants(&["ok"]));
        let escaped = r"a\|b c \<img src=x\> \[l\](http://x) \`c\` \*e\* \$m\$";
        assert_eq!(md(hostile), escaped);
        for line in report.markdown.lines() {
            assert!(!line.replace(r"\<", "").contains("<img"), "{line}");
            if line.starts_with('|') {
                // Every `|` that is not escaped is a cell border: no row has more than its header.
                let borders = line.replace(r"\|", "").matches('|').count();
                assert!(borders <= 7, "{line}");
            }
        }
        assert!(
            report.markdown.contains(&format!("### {escaped} (1)")),
            "{}",
            report.markdown
        );
        assert!(
            report
                .markdown
                .contains(&format!("| {escaped} | {escaped} | error | a\\|b |"))
        );
    }

    #[test]
    fn md_escapes_line_breaks_and_controls() {
        assert_eq!(md("a\r\nb\rc\td\u{7}"), "a b c d\u{fffd}");
        assert_eq!(md("calc-add_sign.v2"), r"calc-add\_sign.v2");
        assert_eq!(md(r"back\slash"), r"back\\slash");
    }

    #[test]
    fn numbers_are_formatted_stably() {
        assert_eq!(percent(2.0 / 3.0), "66.7%");
        assert_eq!(percent(-0.0001), "0.0%");
        assert_eq!(usd(0.012_34), "$0.0123");
        assert_eq!(duration(1_234.0), "1.2 s");
        assert_eq!(duration(90_000.0), "1.5 min");
        assert_eq!(points(0.1667), "+16.7 pp");
        assert_eq!(points(-0.083), "-8.3 pp");
        assert_eq!(points(-0.0001), "0.0 pp");
        assert_eq!(number(12.0), "12");
        assert_eq!(number(12.5), "12.5");
        assert_eq!(p_value(0.038_574), "0.0386");
        assert_eq!(p_value(1e-9), "< 0.0001");
    }

    #[test]
    fn slowest_and_costliest_keep_five_in_order() {
        let results: Vec<CaseResult> = (0..7)
            .map(|i| {
                R::new("v", &format!("c{i}"), 0, Status::Pass)
                    .steps(i, u64::from(i) * 1000)
                    .cost(f64::from(i) / 100.0)
                    .0
            })
            .collect();
        let md = render(&results, &variants(&["v"])).markdown;
        let section = |title: &str| -> Vec<String> {
            let start = md.find(title).unwrap();
            md[start..]
                .lines()
                .skip(4)
                .take_while(|l| l.starts_with('|'))
                .map(|l| l.split('|').nth(1).unwrap().trim().to_owned())
                .collect()
        };
        assert_eq!(section("## Slowest"), ["c6", "c5", "c4", "c3", "c2"]);
        assert_eq!(section("## Most expensive"), ["c6", "c5", "c4", "c3", "c2"]);
    }
}
