//! The texts of a CI triage: the `pitcrew triage` check run (a table of the failed jobs and their
//! classes, the likely root cause, the failures, annotations at file:line, the failing steps' logs),
//! the pull-request comment, and the evidence as the model and a follow-up fix job read it.

use crate::agent::context::cut;
use crate::github::{Annotation, AnnotationLevel, CheckRunOutput};
use crate::triage::{Analysis, Class, Finding, FindingKind};

use super::check_run::{MAX_ANNOTATIONS, TITLE_LIMIT};
use super::markdown::{self, CHECK_TEXT_LIMIT, Doc};

/// The check run a triage writes on the failing commit; later triages of the commit update it.
pub const CHECK_NAME: &str = "pitcrew triage";
/// Failures listed per job in the summary; the rest are counted.
const MAX_LISTED_FINDINGS: usize = 10;
/// A finding's message in a list or an annotation: the first lines say it.
const MAX_MESSAGE_BYTES: usize = 1_500;
/// Each failing step's log in the check run's text, and in the model's evidence.
const MAX_EXCERPT_BYTES: usize = 12 * 1024;
const MAX_EVIDENCE_EXCERPT_BYTES: usize = 6 * 1024;

/// A triage of one commit's failed CI.
#[derive(Debug, Clone, PartialEq)]
pub struct Triage {
    pub head_sha: String,
    /// The pull request the commit is the head of, when one is known.
    pub pull_request: Option<u64>,
    pub jobs: Vec<FailedJob>,
    /// The model's account of the likely root cause (model text: embedded as prose).
    pub root_cause: Option<String>,
    /// What pitcrew did about it: one sentence each (a re-run, a fix started, a fix not started and
    /// why).
    pub actions: Vec<String>,
}

/// One failed job (an Actions job or another app's check run) and what its evidence says.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedJob {
    /// The workflow's name, for an Actions job.
    pub workflow: Option<String>,
    pub name: String,
    pub url: Option<String>,
    /// The GitHub Actions job and its attempt, for an Actions job (what a re-run names).
    pub actions_job: Option<(u64, u64)>,
    /// Where the evidence came from.
    pub evidence: Evidence,
    pub analysis: Analysis,
    /// The same job failed in every recent run on the base branch: the failure predates the change.
    pub predates: bool,
}

/// Where a failed job's evidence came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evidence {
    /// Its log, downloaded (the head was cut off when `truncated`).
    Log { truncated: bool },
    /// Its check run's own output (a CI service other than GitHub Actions).
    CheckOutput,
    /// None could be read, and why (the logs expired, the API refused).
    Unavailable(String),
}

impl FailedJob {
    /// `Workflow / job`, as GitHub shows it in the checks list.
    pub fn title(&self) -> String {
        match &self.workflow {
            Some(workflow) => format!("{workflow} / {}", self.name),
            None => self.name.clone(),
        }
    }
}

impl Triage {
    /// The jobs of one class.
    fn count(&self, class: Class) -> usize {
        self.jobs
            .iter()
            .filter(|job| job.analysis.classification.class == class)
            .count()
    }

    /// Whether a job failed because of the code under test: what a fix can address.
    pub fn has_code_failures(&self) -> bool {
        self.count(Class::Code) > 0
    }

    /// One line: how many jobs failed and of which classes, e.g. `2 failed jobs: 1 code, 1 flaky`.
    pub fn headline(&self) -> String {
        if self.jobs.is_empty() {
            return "No failed job found".to_owned();
        }
        let classes: Vec<String> = [
            Class::Code,
            Class::Flaky,
            Class::Infrastructure,
            Class::Configuration,
            Class::Unknown,
        ]
        .into_iter()
        .filter_map(|class| match self.count(class) {
            0 => None,
            n => Some(format!("{n} {}", class.name())),
        })
        .collect();
        let n = self.jobs.len();
        format!(
            "{n} failed job{}: {}",
            if n == 1 { "" } else { "s" },
            classes.join(", ")
        )
    }
}

fn class_words(class: Class) -> &'static str {
    match class {
        Class::Code => "code failure",
        Class::Flaky => "flaky",
        Class::Infrastructure => "infrastructure",
        Class::Configuration => "configuration",
        Class::Unknown => "unknown",
    }
}

fn short_sha(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

fn first_lines(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.len() <= max {
        text.to_owned()
    } else {
        format!("{} …", cut(text, max).trim_end())
    }
}

/// `name` at `file:line` in words for a list item.
fn finding_line(finding: &Finding) -> String {
    let what = match (&finding.test, finding.kind) {
        (Some(test), _) => markdown::code_span(test),
        (None, FindingKind::CompileError) => "compile error".to_owned(),
        (None, FindingKind::LintError) => "lint error".to_owned(),
        (None, FindingKind::TestFailure) => "test failure".to_owned(),
        (None, FindingKind::Generic) => "error".to_owned(),
    };
    let place = match (&finding.file, finding.line) {
        (Some(file), Some(line)) => format!(" at {}", markdown::code_span(&format!("{file}:{line}"))),
        (Some(file), None) => format!(" in {}", markdown::code_span(file)),
        _ => String::new(),
    };
    let message = finding.message.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let message = first_lines(message, 300);
    if message.is_empty() {
        format!("- {what}{place}")
    } else {
        format!("- {what}{place}: {}", markdown::inline(&message))
    }
}

fn job_link(job: &FailedJob) -> String {
    let title = markdown::cell(&job.title());
    match &job.url {
        Some(url) => format!("[{title}]({url})"),
        None => title,
    }
}

/// The table of failed jobs.
fn table(triage: &Triage) -> String {
    let mut out = String::from("| Job | Class | Confidence | Failing step | Failures |\n|---|---|---|---|---|\n");
    for job in &triage.jobs {
        let c = &job.analysis.classification;
        let step = job
            .analysis
            .step
            .as_deref()
            .map(markdown::code_cell)
            .unwrap_or_else(|| "—".to_owned());
        out.push_str(&format!(
            "| {} | {} | {:.0}% | {} | {} |\n",
            job_link(job),
            class_words(c.class),
            c.confidence * 100.0,
            step,
            job.analysis.findings.len()
        ));
    }
    out.trim_end().to_owned()
}

/// The failures of each job, with the reasons for its class.
fn failures(triage: &Triage) -> String {
    let mut out = String::new();
    for job in &triage.jobs {
        let c = &job.analysis.classification;
        out.push_str(&format!(
            "**{}** — {}\n",
            markdown::inline(&job.title()),
            class_words(c.class)
        ));
        if let Evidence::Unavailable(why) = &job.evidence {
            out.push_str(&format!("- its log could not be read: {}\n", markdown::inline(why)));
        }
        for reason in &c.reasons {
            out.push_str(&format!("- {}\n", markdown::inline(reason)));
        }
        for finding in job.analysis.findings.iter().take(MAX_LISTED_FINDINGS) {
            out.push_str(&finding_line(finding));
            out.push('\n');
        }
        let more = job.analysis.findings.len().saturating_sub(MAX_LISTED_FINDINGS);
        if more > 0 {
            out.push_str(&format!("- and {more} more\n"));
        }
        out.push('\n');
    }
    out.trim_end().to_owned()
}

fn root_cause_section(triage: &Triage) -> Option<String> {
    let text = triage.root_cause.as_deref()?.trim();
    (!text.is_empty()).then(|| format!("### Likely root cause\n\n{}", markdown::prose(text)))
}

fn actions_section(triage: &Triage) -> Option<String> {
    (!triage.actions.is_empty()).then(|| {
        let items: Vec<String> = triage
            .actions
            .iter()
            .map(|a| format!("- {}", markdown::inline(a)))
            .collect();
        format!("### What pitcrew did\n\n{}", items.join("\n"))
    })
}

/// The `pitcrew triage` check run's output.
pub fn check_run_output(triage: &Triage) -> CheckRunOutput {
    let title = cut(&triage.headline(), TITLE_LIMIT).to_owned();
    let mut summary = Doc::new();
    summary.fixed(format!(
        "**{}** on {}.",
        markdown::inline(&triage.headline()),
        markdown::code_span(short_sha(&triage.head_sha))
    ));
    if !triage.jobs.is_empty() {
        summary.fixed(table(triage));
    }
    if let Some(section) = root_cause_section(triage) {
        summary.cuttable(section);
    }
    if let Some(section) = actions_section(triage) {
        summary.fixed(section);
    }
    if !triage.jobs.is_empty() {
        summary.cuttable(format!("### Failures\n\n{}", failures(triage)));
    }
    let mut text = Doc::new();
    for job in &triage.jobs {
        if job.analysis.excerpt.trim().is_empty() {
            continue;
        }
        let step = job.analysis.step.as_deref().unwrap_or("the log");
        let cut_note = match job.evidence {
            Evidence::Log { truncated: true } => " (the log's start was cut off)",
            _ => "",
        };
        text.cuttable(format!(
            "#### {} — {}{cut_note}\n\n{}",
            markdown::inline(&job.title()),
            markdown::inline(step),
            markdown::fenced("text", &first_lines(&job.analysis.excerpt, MAX_EXCERPT_BYTES))
        ));
    }
    let text = text.render(CHECK_TEXT_LIMIT);
    CheckRunOutput {
        title,
        summary: summary.render(CHECK_TEXT_LIMIT),
        text: (!text.trim().is_empty()).then_some(text),
        annotations: annotations(triage),
    }
}

/// One annotation per finding that names a file and a line: a failure for the code's own failures,
/// a warning for the others (a flaky test still points at a line worth a look).
pub fn annotations(triage: &Triage) -> Vec<Annotation> {
    let mut out = Vec::new();
    for job in &triage.jobs {
        let level = match job.analysis.classification.class {
            Class::Code | Class::Unknown => AnnotationLevel::Failure,
            _ => AnnotationLevel::Warning,
        };
        for finding in &job.analysis.findings {
            let (Some(path), Some(line)) = (&finding.file, finding.line) else {
                continue;
            };
            if path.starts_with('/') || path.contains("..") || path.contains('\\') || line == 0 {
                // GitHub takes repository paths only; a path outside the checkout is shown in the
                // summary instead.
                continue;
            }
            let title = match &finding.test {
                Some(test) => format!("{} failed in {}", test, job.title()),
                None => format!("{} in {}", finding_kind_words(finding.kind), job.title()),
            };
            out.push(Annotation {
                path: path.clone(),
                start_line: u64::from(line),
                end_line: u64::from(line),
                start_column: None,
                end_column: None,
                annotation_level: level,
                message: first_lines(&finding.message, MAX_MESSAGE_BYTES),
                title: Some(cut(&title, TITLE_LIMIT).to_owned()),
                raw_details: None,
            });
            if out.len() == MAX_ANNOTATIONS {
                return out;
            }
        }
    }
    out
}

fn finding_kind_words(kind: FindingKind) -> &'static str {
    match kind {
        FindingKind::TestFailure => "Test failure",
        FindingKind::CompileError => "Compile error",
        FindingKind::LintError => "Lint error",
        FindingKind::Generic => "Error",
    }
}

/// The comment on the pull request: the table, the root cause and what was done, with a link to
/// the check run for the details.
pub fn comment(triage: &Triage, job_id: &str, check_run_url: Option<&str>) -> String {
    let mut doc = Doc::new();
    doc.fixed(markdown::marker(job_id));
    doc.fixed(format!(
        "**pitcrew · CI triage** of {}: {}.",
        markdown::code_span(short_sha(&triage.head_sha)),
        markdown::inline(&triage.headline())
    ));
    if !triage.jobs.is_empty() {
        doc.fixed(table(triage));
    }
    if let Some(section) = root_cause_section(triage) {
        doc.cuttable(section);
    }
    if let Some(section) = actions_section(triage) {
        doc.fixed(section);
    }
    if !triage.jobs.is_empty() {
        doc.cuttable(format!(
            "<details><summary>Failures</summary>\n\n{}\n\n</details>",
            failures(triage)
        ));
    }
    if let Some(url) = check_run_url {
        doc.fixed(format!("Annotations and logs: [the `{CHECK_NAME}` check run]({url})."));
    }
    doc.render(markdown::BODY_LIMIT)
}

/// The evidence as plain text for the model (the root-cause analysis) and for a fix job's
/// instructions: per job, its class and why, its failures, and the end of its failing step.
pub fn evidence(triage: &Triage) -> String {
    let mut out = String::new();
    for job in &triage.jobs {
        let c = &job.analysis.classification;
        out.push_str(&format!(
            "## {} ({}, confidence {:.2})\n",
            job.title(),
            class_words(c.class),
            c.confidence
        ));
        if let Some(step) = &job.analysis.step {
            out.push_str(&format!("Failing step: {step}\n"));
        }
        if let Evidence::Unavailable(why) = &job.evidence {
            out.push_str(&format!("Its log could not be read: {why}\n"));
        }
        for reason in &c.reasons {
            out.push_str(&format!("- {reason}\n"));
        }
        for finding in &job.analysis.findings {
            let name = finding.test.as_deref().unwrap_or(finding_kind_words(finding.kind));
            let place = match (&finding.file, finding.line) {
                (Some(file), Some(line)) => format!(" at {file}:{line}"),
                (Some(file), None) => format!(" in {file}"),
                _ => String::new(),
            };
            out.push_str(&format!(
                "### {name}{place}\n{}\n",
                first_lines(&finding.message, MAX_MESSAGE_BYTES)
            ));
        }
        if !job.analysis.excerpt.trim().is_empty() {
            let excerpt = &job.analysis.excerpt;
            let tail = if excerpt.len() > MAX_EVIDENCE_EXCERPT_BYTES {
                let mut from = excerpt.len() - MAX_EVIDENCE_EXCERPT_BYTES;
                while !excerpt.is_char_boundary(from) {
                    from += 1;
                }
                &excerpt[from..]
            } else {
                excerpt.as_str()
            };
            out.push_str(&format!(
                "End of the failing step's log:\n{}\n",
                markdown::fenced("text", tail)
            ));
        }
        out.push('\n');
    }
    out.trim_end().to_owned()
}

/// What a fix job started by triage is asked to do.
pub fn fix_instructions(triage: &Triage) -> String {
    let mut out = format!(
        "CI failed on commit {} of this pull request. Fix the code failures below: find their root cause, change the \
         code, and run the failing tests to verify. Leave failures classed flaky, infrastructure or configuration alone.\n\n",
        short_sha(&triage.head_sha)
    );
    if let Some(root) = &triage.root_cause {
        out.push_str(&format!("Triage's account of the root cause:\n{}\n\n", root.trim()));
    }
    let code_only = Triage {
        jobs: triage
            .jobs
            .iter()
            .filter(|job| job.analysis.classification.class == Class::Code)
            .cloned()
            .collect(),
        ..triage.clone()
    };
    out.push_str(&evidence(&code_only));
    out
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::testparse::Runner;
    use crate::triage::Classification;

    fn job(workflow: &str, name: &str, class: Class, findings: Vec<Finding>) -> FailedJob {
        FailedJob {
            workflow: Some(workflow.into()),
            name: name.into(),
            url: Some(format!("https://github.com/o/r/actions/runs/1/job/{}", name.len())),
            actions_job: None,
            evidence: Evidence::Log { truncated: false },
            predates: false,
            analysis: Analysis {
                step: Some("Run cargo test".into()),
                findings,
                classification: Classification {
                    class,
                    confidence: 0.9,
                    reasons: vec![format!("reason for {name}")],
                    evidence: Vec::new(),
                },
                excerpt: "running 2 tests\ntest adds ... FAILED\n".into(),
            },
        }
    }

    fn failing_test(name: &str, file: &str, line: u32, message: &str) -> Finding {
        Finding {
            kind: FindingKind::TestFailure,
            runner: Some(Runner::Cargo),
            compiler: None,
            test: Some(name.into()),
            file: Some(file.into()),
            line: Some(line),
            message: message.into(),
            attempts: 1,
            evidence: Vec::new(),
        }
    }

    fn sample() -> Triage {
        Triage {
            head_sha: "0123456789abcdef".into(),
            pull_request: Some(7),
            jobs: vec![
                job(
                    "CI",
                    "test",
                    Class::Code,
                    vec![failing_test(
                        "tests::adds",
                        "src/lib.rs",
                        12,
                        "assertion `left == right` failed\n  left: 3\n right: 4",
                    )],
                ),
                job(
                    "CI",
                    "network",
                    Class::Flaky,
                    vec![failing_test(
                        "net::fetch",
                        "/home/runner/x.rs",
                        3,
                        "connection reset by peer",
                    )],
                ),
            ],
            root_cause: Some("`add` subtracts.".into()),
            actions: vec!["Re-ran `CI / network` once.".into()],
        }
    }

    #[test]
    fn the_check_run_tabulates_classes_and_annotates_only_repository_paths() {
        let output = check_run_output(&sample());
        assert_eq!(output.title, "2 failed jobs: 1 code, 1 flaky");
        insta::assert_snapshot!(output.summary, @r"
        **2 failed jobs: 1 code, 1 flaky** on `0123456`.

        | Job | Class | Confidence | Failing step | Failures |
        |---|---|---|---|---|
        | [CI / test](https://github.com/o/r/actions/runs/1/job/4) | code failure | 90% | `Run cargo test` | 1 |
        | [CI / network](https://github.com/o/r/actions/runs/1/job/7) | flaky | 90% | `Run cargo test` | 1 |

        ### Likely root cause

        `add` subtracts.

        ### What pitcrew did

        - Re-ran `CI / network` once.

        ### Failures

        **CI / test** — code failure
        - reason for test
        - `tests::adds` at `src/lib.rs:12`: assertion `left == right` failed

        **CI / network** — flaky
        - reason for network
        - `net::fetch` at `/home/runner/x.rs:3`: connection reset by peer
        ");
        let pinging = Triage {
            root_cause: Some("ask @octocat".into()),
            ..sample()
        };
        let summary = check_run_output(&pinging).summary;
        assert!(
            summary.contains("ask @\u{200b}octocat"),
            "model text must not ping anyone: {summary}"
        );
        assert_eq!(output.annotations.len(), 1);
        let a = &output.annotations[0];
        assert_eq!(
            (a.path.as_str(), a.start_line, a.annotation_level),
            ("src/lib.rs", 12, AnnotationLevel::Failure)
        );
        assert_eq!(a.title.as_deref(), Some("tests::adds failed in CI / test"));
        assert!(a.message.contains("left: 3"));
        assert!(output.text.unwrap().contains("test adds ... FAILED"));
    }

    #[test]
    fn the_fix_instructions_carry_only_code_failures() {
        let text = fix_instructions(&sample());
        assert!(text.contains("tests::adds at src/lib.rs:12"));
        assert!(text.contains("`add` subtracts"));
        assert!(!text.contains("net::fetch"));
    }

    #[test]
    fn the_comment_has_the_marker_and_links_the_check_run() {
        let body = comment(&sample(), "42", Some("https://github.com/o/r/runs/9"));
        assert!(body.starts_with("<!-- pitcrew:job=42 -->"));
        assert!(body.contains("[the `pitcrew triage` check run](https://github.com/o/r/runs/9)"));
        assert!(body.contains("| [CI / test]"));
        let empty = Triage {
            jobs: Vec::new(),
            root_cause: None,
            actions: Vec::new(),
            ..sample()
        };
        assert_eq!(check_run_output(&empty).title, "No failed job found");
    }
}
