//! The `pitcrew eval` commands as the terminal sees them: live progress on stderr, the report
//! written to the output directory, a summary on stdout, and the exit status.
#![allow(
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "a command's own terminal output"
)]

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::prompts::Prompts;

use super::case::load_suites;
use super::check_cases::{Verdict, check_cases as prove};
use super::mine::{MineOptions, mine as mine_history};
use super::report;
use super::results::{CaseResult, Status};
use super::run::{EvalOptions, Models, Progress, Variant, run as run_suite};

/// Exit statuses, as the other commands use them.
const EXIT_OK: u8 = 0;
const EXIT_FAILED: u8 = 1;
const EXIT_BAD_INPUT: u8 = 2;
const EXIT_SETUP: u8 = 3;
const EXIT_CANCELLED: u8 = 130;

/// What `pitcrew eval SUITE...` was asked.
pub struct RunCommand {
    pub suites: Vec<PathBuf>,
    pub variants: Vec<Variant>,
    pub repeat: u32,
    pub concurrency: usize,
    pub out: PathBuf,
    pub record: Option<PathBuf>,
    pub replay: Option<PathBuf>,
    pub min_pass_rate: Option<f64>,
    pub cancel: CancellationToken,
}

/// A variant's name in the report: the configuration file's stem when several are compared, the
/// model's name when one was asked for; the configured model's name otherwise.
pub fn variant_label(
    config_path: Option<&Path>,
    several_configs: bool,
    model: Option<&str>,
    config: &Config,
) -> String {
    let stem = config_path
        .filter(|_| several_configs)
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned());
    match (stem, model) {
        (Some(stem), Some(model)) => format!("{stem}+{model}"),
        (Some(stem), None) => stem,
        (None, Some(model)) => model.to_owned(),
        (None, None) => config.model.name.clone(),
    }
}

/// `pitcrew eval SUITE...`.
pub async fn run(command: RunCommand) -> u8 {
    if let Some(rate) = command.min_pass_rate
        && !(0.0..=1.0).contains(&rate)
    {
        eprintln!("error: --min-pass-rate is a share between 0 and 1, got {rate}");
        return EXIT_BAD_INPUT;
    }
    if command.repeat == 0 || command.concurrency == 0 {
        eprintln!("error: --repeat and --concurrency are at least 1");
        return EXIT_BAD_INPUT;
    }
    let mut labels: Vec<String> = Vec::new();
    for variant in &command.variants {
        if labels.contains(&variant.label) {
            eprintln!("error: two configurations are both named `{}`", variant.label);
            return EXIT_BAD_INPUT;
        }
        labels.push(variant.label.clone());
    }
    let cases = match load_suites(&command.suites) {
        Ok(cases) => cases,
        Err(error) => {
            eprintln!("error: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let models = match (command.record, command.replay) {
        (Some(dir), _) => Models::Record(dir),
        (None, Some(dir)) => Models::Replay(dir),
        (None, None) => Models::Live,
    };
    eprintln!(
        "pitcrew eval: {} case(s) × {} configuration(s) × {} run(s), {} at once; results in {}",
        cases.len(),
        labels.len(),
        command.repeat,
        command.concurrency,
        command.out.display()
    );
    let options = EvalOptions {
        cases,
        variants: command.variants,
        repeat: command.repeat,
        concurrency: command.concurrency,
        out: command.out.clone(),
        models,
        prompts: Prompts::embedded(),
        cancel: command.cancel,
    };
    let ran = match run_suite(options, &print_progress).await {
        Ok(ran) => ran,
        Err(error) => {
            eprintln!("error: {error}");
            return EXIT_SETUP;
        }
    };
    let written = report::render(&ran.results, &labels);
    let mut files = vec![("report.md".to_owned(), written.markdown.clone())];
    files.extend(written.charts);
    for (name, content) in &files {
        let path = command.out.join(name);
        if let Err(error) = std::fs::write(&path, content) {
            eprintln!("error: {}: {error}", path.display());
            return EXIT_SETUP;
        }
    }
    println!("{}", summary(&ran.results, &labels));
    println!("report: {}", command.out.join("report.md").display());
    if ran.cancelled {
        eprintln!(
            "pitcrew eval: cancelled after {} of {} case runs; the report holds those",
            ran.results.len(),
            ran.planned
        );
        return EXIT_CANCELLED;
    }
    if let Some(minimum) = command.min_pass_rate {
        let under: Vec<String> = labels
            .iter()
            .filter_map(|label| {
                let rate = pass_rate(&ran.results, label);
                (rate < minimum).then(|| format!("{label} ({:.1}%)", rate * 100.0))
            })
            .collect();
        if !under.is_empty() {
            eprintln!(
                "pitcrew eval: under --min-pass-rate {:.1}%: {}",
                minimum * 100.0,
                under.join(", ")
            );
            return EXIT_FAILED;
        }
    }
    EXIT_OK
}

/// The share of a variant's case runs that passed; errors count as not passed.
fn pass_rate(results: &[CaseResult], label: &str) -> f64 {
    let runs: Vec<_> = results.iter().filter(|r| r.variant == label).collect();
    if runs.is_empty() {
        return 0.0;
    }
    runs.iter().filter(|r| r.status == Status::Pass).count() as f64 / runs.len() as f64
}

fn print_progress(progress: &Progress) {
    let last = &progress.last;
    let cost = last.cost_usd.map(|c| format!(" ${c:.4}")).unwrap_or_default();
    let why = match (&last.error, &last.check) {
        (Some(error), _) => format!(" — {}", error.lines().next().unwrap_or_default()),
        (None, Some(check)) if !check.passed && !check.not_fixed.is_empty() => {
            format!(" — still failing: {}", check.not_fixed.join(", "))
        }
        _ => String::new(),
    };
    eprintln!(
        "[{}/{}] {:<5} {} ({}#{}) {} steps{cost} {:.1} s{why} · {} passing, ${:.4} so far",
        progress.done,
        progress.total,
        last.status.label(),
        last.case,
        last.variant,
        last.repetition + 1,
        last.steps,
        last.wall_ms as f64 / 1000.0,
        progress.passed,
        progress.cost_usd
    );
}

/// One line per variant: its passes, failures and errors.
fn summary(results: &[CaseResult], labels: &[String]) -> String {
    labels
        .iter()
        .map(|label| {
            let runs: Vec<_> = results.iter().filter(|r| &r.variant == label).collect();
            let count = |status| runs.iter().filter(|r| r.status == status).count();
            let cost: f64 = runs.iter().filter_map(|r| r.cost_usd).sum();
            format!(
                "{label}: {} pass, {} fail, {} error of {} ({:.1}%), ${cost:.4}",
                count(Status::Pass),
                count(Status::Fail),
                count(Status::Error),
                runs.len(),
                pass_rate(results, label) * 100.0
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `pitcrew eval check-cases SUITE...`: 0 when every case with a reference flips.
pub async fn check_cases(suites: &[PathBuf], config: Config, cancel: CancellationToken) -> u8 {
    let cases = match load_suites(suites) {
        Ok(cases) => cases,
        Err(error) => {
            eprintln!("error: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let scratch = match super::check_cases::scratch_dir() {
        Ok(scratch) => scratch,
        Err(error) => {
            eprintln!("error: a scratch directory: {error}");
            return EXIT_SETUP;
        }
    };
    let verdicts = prove(
        &cases,
        &config,
        &Prompts::embedded(),
        scratch.path(),
        &cancel,
        &|case, verdict| {
            let detail = match verdict {
                Verdict::Broken(why) | Verdict::Error(why) => format!(": {why}"),
                Verdict::NoReference => ": no reference patch to prove it with".to_owned(),
                Verdict::Flips => String::new(),
            };
            println!("{:<8} {}{detail}", verdict.label(), case.id);
        },
    )
    .await;
    let count = |label| verdicts.iter().filter(|(_, v)| v.label() == label).count();
    println!(
        "{} flip, {} broken, {} error, {} without a reference",
        count("ok"),
        count("broken"),
        count("error"),
        count("skipped")
    );
    if cancel.is_cancelled() {
        EXIT_CANCELLED
    } else if count("broken") + count("error") > 0 {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}

/// `pitcrew eval mine`.
pub async fn mine(options: MineOptions) -> u8 {
    let out = options.out.clone();
    let cancel = options.cancel.clone();
    match mine_history(options, &|line| eprintln!("{line}")).await {
        Ok(mined) => {
            println!(
                "{} commit(s) considered, {} case(s) proposed in {}, {} skipped",
                mined.considered,
                mined.proposed.len(),
                out.join("cases.yaml").display(),
                mined.skipped.len()
            );
            if cancel.is_cancelled() { EXIT_CANCELLED } else { EXIT_OK }
        }
        Err(error) => {
            eprintln!("error: {error}");
            EXIT_BAD_INPUT
        }
    }
}
