//! CI job logs made readable and split into their steps: GitHub Actions (`##[group]Run …`
//! headers, the web UI's copied `Run …` lines, or `gh run view --log`'s step column), GitLab (`section_start:` markers, or the
//! runner's header lines when pasted from the web page), Buildkite (`--- `, `+++ `, `~~~ `
//! headers) and CircleCI (`====>> ` headers); timestamps, ANSI codes and markers removed, each
//! clean line keeping its line number in the raw log; the failing step found by the marker that
//! ended the job; and text capped keeping its head and tail.
//!
//! What precedes the first header has no step name (raw runner output and excerpts have no
//! steps at all), except an Actions log's own start (`Current runner version: …`), which is the
//! runner's `Set up job`.

use crate::testparse::strip_ansi;

/// The most of a log that is analysed. A runaway job can print gigabytes; its start (set-up,
/// the command) and its end (the failure, the runner's verdict) are what explain it.
pub const MAX_LOG_BYTES: usize = 4 * 1024 * 1024;
/// Of a capped log, how much of the start is kept; the rest of the budget goes to the end.
const LOG_HEAD_BYTES: usize = 512 * 1024;

/// The title of what precedes the first header: the runner's `Set up job` in a whole Actions log.
const IMPLICIT_TITLE: &str = "Set up job";

/// One step of a job, as the log shows it: from its header to the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The header without its marker (`Run cargo test`, `:rust: Test`, `Executing "step_script"
    /// stage of the job script`). What precedes the first header keeps the label it always had,
    /// `Set up job`, for callers that print it; [`Step::name`] says whether it is a step at all.
    pub title: String,
    /// The step's lines, clean; `##[error]X` becomes `Error: X`, as the Actions UI shows it.
    pub lines: Vec<String>,
    /// For each of `lines`, its line number in the raw log, from 1.
    pub numbers: Vec<usize>,
    /// The messages of its `##[error]` markers.
    pub errors: Vec<String>,
    named: bool,
    /// A section the runner runs after a failure (GitLab's `after_script`, artefact upload,
    /// clean-up): when the job's verdict lands in it, the failure is the step before.
    housekeeping: bool,
    /// A command ending in `|| true`: it cannot fail by itself, so its exit is the runner's
    /// trouble, seen first in an earlier step.
    tolerant: bool,
    verdict: Option<Verdict>,
}

/// How surely a marker says that its step is the one that failed the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Strength {
    /// An error marker (`##[error]…` from an action, `Error: …` in a copied log).
    Error,
    /// The runner's or CI service's exit verdict: `Process completed with exit code 1`, `Exited
    /// with code exit status 1`, `The command exited with status 1`, `ERROR: Job failed`.
    Exit,
    /// Buildkite's `^^^ +++`: the script itself opens the section that failed.
    Expand,
}

/// The strongest marker seen in a step, and the raw line it is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Verdict {
    strength: Strength,
    number: usize,
}

impl Step {
    fn new(title: String, named: bool) -> Step {
        let housekeeping = is_housekeeping(&title);
        let tolerant = title.trim_end().ends_with("|| true");
        Step {
            title,
            lines: Vec::new(),
            numbers: Vec::new(),
            errors: Vec::new(),
            named,
            housekeeping,
            tolerant,
            verdict: None,
        }
    }

    /// The step's name: its title, or none for what precedes the first header.
    pub fn name(&self) -> Option<&str> {
        self.named.then_some(self.title.as_str())
    }

    pub fn text(&self) -> String {
        let mut text = self.lines.join("\n");
        text.push('\n');
        text
    }

    fn push(&mut self, line: String, number: usize) {
        self.lines.push(line);
        self.numbers.push(number);
    }

    fn mark(&mut self, strength: Strength, number: usize) {
        let strength = if self.tolerant {
            strength.min(Strength::Error)
        } else {
            strength
        };
        if self.verdict.is_none_or(|v| v.strength <= strength) {
            self.verdict = Some(Verdict { strength, number });
        }
    }
}

/// A job log split into steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobLog {
    pub steps: Vec<Step>,
}

impl JobLog {
    /// Cleans and splits `raw`, capped at [`MAX_LOG_BYTES`].
    pub fn parse(raw: &str) -> JobLog {
        let items = clean(raw);
        let framing = Framing::of(&items);
        let mut steps = vec![Step::new(IMPLICIT_TITLE.into(), false)];
        for (at, item) in items.iter().enumerate() {
            match item {
                Item::Step { title } => steps.push(Step::new(title.clone(), true)),
                Item::Section { number, name, header } => {
                    if let Some(housekeeping) = gitlab_runner_section(name) {
                        let title = if header.is_empty() {
                            name.clone()
                        } else {
                            header.clone()
                        };
                        let mut step = Step::new(title, true);
                        step.housekeeping |= housekeeping;
                        steps.push(step);
                    } else if !header.is_empty()
                        && let Some(step) = steps.last_mut()
                    {
                        // A section of the job's own script is a group within its step.
                        step.push(header.clone(), *number);
                    }
                }
                Item::Line { number, text } => {
                    let Some(next) = header(text, &framing, items.get(at + 1)) else {
                        line(&mut steps, text, *number);
                        continue;
                    };
                    match next {
                        Header::Step(title) => steps.push(Step::new(title, true)),
                        // The runner's hook around a step's commands: its output is the step's.
                        Header::Hook => {
                            if let Some(step) = steps.last_mut() {
                                step.push(clean_marker(text), *number);
                            }
                        }
                    }
                }
            }
        }
        if let Some(first) = steps.first_mut()
            && !first.named
            && first.lines.iter().any(|l| l.starts_with("Current runner version:"))
        {
            first.named = true;
        }
        // A log that opens straight with a step has nothing before it worth a section.
        if steps.len() > 1 && steps[0].lines.iter().all(|l| l.trim().is_empty()) {
            steps.remove(0);
        }
        JobLog { steps }
    }
    /// The raw-log line (from 1) of line `at` of step `step`.
    pub fn line_number(&self, step: usize, at: usize) -> Option<usize> {
        self.steps.get(step)?.numbers.get(at).copied()
    }

    /// The step whose exit ended the job: the one holding the last of the strongest verdicts
    /// (Buildkite's `^^^ +++`, then the runner's exit verdict, then any error marker), passing
    /// over a housekeeping section to the step it followed; without any, the last step (a runner
    /// that died leaves no marker, and the last step is the one it was running).
    pub fn failing_step(&self) -> Option<&Step> {
        let best = self
            .steps
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.verdict.map(|v| (v.strength, v.number, i)))
            .max();
        let Some((_, _, mut at)) = best else {
            return self.steps.last();
        };
        while at > 0 && self.steps[at].housekeeping {
            at -= 1;
        }
        self.steps.get(at)
    }
}

/// One line of the raw log, cleaned, or a GitLab section marker found in it.
#[derive(Debug)]
enum Item {
    Line {
        number: usize,
        text: String,
    },
    /// A new step named by `gh run view --log`'s step column (`job<TAB>step<TAB>time line`).
    Step {
        title: String,
    },
    /// `section_start:<time>:<name>` and the header text after it.
    Section {
        number: usize,
        name: String,
        header: String,
    },
}

/// Which CI services' conventions the log follows, from what it holds anywhere: headers that
/// would be ordinary output elsewhere (`--- x`, `Run x`) count only in their own framing.
/// Buildkite's is told by its agent's lines, `~~~ ` headers and `--- :emoji:` titles, not by a
/// bare `+++ x`, which a diff prints too.
#[derive(Debug, Default)]
struct Framing {
    /// `##[group]` or another `##[…]` workflow-command marker.
    actions_markers: bool,
    gitlab: bool,
    gitlab_markers: bool,
    buildkite: bool,
    /// `gh run view --log`'s columns name each line's step: its `##[group]Run` lines are
    /// groups within it.
    gh_columns: bool,
}

impl Framing {
    fn of(items: &[Item]) -> Framing {
        let mut framing = Framing::default();
        for item in items {
            match item {
                Item::Step { .. } => framing.gh_columns = true,
                Item::Section { .. } => {
                    framing.gitlab = true;
                    framing.gitlab_markers = true;
                }
                Item::Line { text, .. } => {
                    if text.starts_with("##[") {
                        framing.actions_markers = true;
                    } else if text.starts_with("Running with gitlab-runner")
                        || text.starts_with("ERROR: Job failed")
                        || text.starts_with("WARNING: Job failed")
                        || text == "Job succeeded"
                    {
                        framing.gitlab = true;
                    } else if text == "^^^ +++"
                        || text.starts_with("user command error:")
                        || text.contains("The command exited with status")
                        || buildkite_header(text, "~~~ ").is_some()
                        || text.starts_with("--- :")
                        || text.starts_with("+++ :")
                    {
                        framing.buildkite = true;
                    }
                }
            }
        }
        framing
    }
}

enum Header {
    Step(String),
    Hook,
}

/// The step header `text` is, in the log's framing; `next` is the item after it.
fn header(text: &str, framing: &Framing, next: Option<&Item>) -> Option<Header> {
    if framing.gh_columns {
        return None;
    }
    if let Some(command) = text.strip_prefix("##[group]Run ") {
        return Some(if is_hook(command.trim()) {
            Header::Hook
        } else {
            Header::Step(format!("Run {}", command.trim()))
        });
    }
    if let Some(name) = text.strip_prefix("====>> ") {
        // `circleci local execute` names each step so.
        return Some(Header::Step(name.trim().to_owned()));
    }
    if framing.buildkite {
        for prefix in ["--- ", "+++ ", "~~~ "] {
            if let Some(title) = buildkite_header(text, prefix) {
                return Some(Header::Step(title.to_owned()));
            }
        }
    }
    if framing.gitlab && !framing.gitlab_markers && is_gitlab_header(text) {
        return Some(Header::Step(strip_duration(text).to_owned()));
    }
    // The Actions web UI's copy: a step's `Run …` line, then its group indented.
    if !framing.actions_markers && !framing.gitlab && !framing.buildkite {
        let indented = matches!(next, Some(Item::Line { text, .. })
            if text.starts_with("  ") && !text.trim().is_empty());
        if let Some(command) = text.strip_prefix("Run ")
            && indented
            && !command.trim().is_empty()
        {
            return Some(if is_hook(command.trim()) {
                Header::Hook
            } else {
                Header::Step(format!("Run {}", command.trim()))
            });
        }
    }
    None
}

/// A runner-injected hook step: `Run '/home/runner/hook-extensions/wrapper.js'`, the runner's
/// job-started hook; a quoted absolute path and nothing else.
fn is_hook(command: &str) -> bool {
    let Some(path) = command.strip_prefix('\'').and_then(|c| c.strip_suffix('\'')) else {
        return false;
    };
    let windows = path.as_bytes().get(1..3) == Some(b":\\");
    (path.starts_with('/') || windows) && !path.contains('\'')
}

/// A Buildkite section header's title: `--- :rust: Test` → `:rust: Test`. Lines of `go test`
/// (`--- FAIL: TestX`) and of diffs (`--- a/x`, `+++ b/x`) only look like headers.
fn buildkite_header<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let title = text.strip_prefix(prefix)?.trim();
    let output = ["FAIL:", "PASS:", "SKIP:", "a/", "b/", "/"];
    (!title.is_empty() && !output.iter().any(|o| title.starts_with(o))).then_some(title)
}

/// GitLab's section names of the runner's own stages: `Some(true)` for the housekeeping ones
/// it runs after a failure, `None` for a section of the job's own script.
fn gitlab_runner_section(name: &str) -> Option<bool> {
    match name {
        "resolve_secrets" | "prepare_executor" | "prepare_script" | "get_sources" | "clear_worktree"
        | "restore_cache" | "download_artifacts" | "build_script" | "step_script" => Some(false),
        "after_script"
        | "archive_cache"
        | "archive_cache_on_failure"
        | "upload_artifacts"
        | "upload_artifacts_on_success"
        | "upload_artifacts_on_failure"
        | "cleanup_file_variables" => Some(true),
        _ if name.starts_with("step_") => Some(false),
        _ => None,
    }
}

/// The runner's header lines as GitLab's job page shows them (and people paste them).
fn is_gitlab_header(text: &str) -> bool {
    let text = strip_duration(text);
    (text.starts_with("Preparing the \"") && text.ends_with("\" executor"))
        || (text.starts_with("Executing \"") && text.ends_with("\" stage of the job script"))
        || matches!(
            text,
            "Resolving secrets"
                | "Preparing environment"
                | "Getting source from Git repository"
                | "Restoring cache"
                | "Downloading artifacts"
                | "Running after_script"
                | "Saving cache for failed job"
                | "Saving cache for successful job"
                | "Uploading artifacts for failed job"
                | "Uploading artifacts for successful job"
                | "Cleaning up project directory and file based variables"
                | "Cleaning up file based variables"
        )
}

fn is_housekeeping(title: &str) -> bool {
    let title = strip_duration(title);
    title == "Running after_script"
        || title.starts_with("Saving cache for")
        || title.starts_with("Uploading artifacts for")
        || title.starts_with("Cleaning up project directory")
        || title == "Cleaning up file based variables"
}

/// `Cleaning up … variables 00:01` → `Cleaning up … variables`: the job page's section timer.
fn strip_duration(text: &str) -> &str {
    let text = text.trim_end();
    match text.rsplit_once(' ') {
        Some((head, time))
            if time.len() == 5
                && time.as_bytes()[2] == b':'
                && time.bytes().enumerate().all(|(i, c)| i == 2 || c.is_ascii_digit()) =>
        {
            head.trim_end()
        }
        _ => text,
    }
}

/// Adds an ordinary line to the current step, reading its markers and verdicts.
fn line(steps: &mut [Step], text: &str, number: usize) {
    let Some(step) = steps.last_mut() else { return };
    match marker(text) {
        Some(Marker::Error(message)) => {
            step.push(format!("Error: {message}"), number);
            step.errors.push(message.to_owned());
            let strength = if actions_exit(message) {
                Strength::Exit
            } else {
                Strength::Error
            };
            step.mark(strength, number);
        }
        Some(Marker::Warning(message)) => step.push(format!("Warning: {message}"), number),
        Some(Marker::Group(title)) => step.push(title.to_owned(), number),
        Some(Marker::EndAction { failed, tolerated }) => {
            if tolerated {
                // `continue-on-error`: the step failed and the job went on.
                if let Some(v) = step.verdict.as_mut() {
                    v.strength = v.strength.min(Strength::Error);
                }
            } else if failed {
                step.mark(Strength::Exit, number);
            }
        }
        Some(Marker::Hidden) => {}
        None if text == "^^^ +++" => step.mark(Strength::Expand, number),
        None => {
            if let Some(strength) = verdict(text) {
                step.mark(strength, number);
            }
            step.push(text.to_owned(), number);
        }
    }
}

/// Whether an `##[error]` message is the runner's verdict on the step rather than an action's
/// or a tool's own error line.
fn actions_exit(message: &str) -> bool {
    if let Some(code) = message.strip_prefix("Process completed with exit code ") {
        return code.trim_end_matches('.').trim() != "0";
    }
    message.contains("failed with exit code")
        || message.starts_with("The operation was canceled")
        || message.starts_with("The runner has received a shutdown signal")
        || message.contains("has timed out after")
        || message.contains("has exceeded the maximum execution time")
}

/// The verdict an unmarked line gives: the CI service's own words when a command exited.
fn verdict(text: &str) -> Option<Strength> {
    let nonzero = |rest: &str| {
        let code = rest.trim().trim_end_matches('.');
        !code.is_empty() && code != "0"
    };
    if let Some(rest) = text.strip_prefix("Error: Process completed with exit code ") {
        return nonzero(rest).then_some(Strength::Exit);
    }
    if let Some(rest) = text.strip_prefix("Exited with code ") {
        return nonzero(rest.trim_start_matches("exit status ")).then_some(Strength::Exit);
    }
    if let Some(rest) = text.strip_prefix("CircleCI received exit code ") {
        return nonzero(rest).then_some(Strength::Exit);
    }
    if let Some((_, rest)) = text.split_once("The command exited with status ") {
        return nonzero(rest).then_some(Strength::Exit);
    }
    if text.starts_with("user command error:")
        || text.contains("hook exited with status")
        || text.starts_with("ERROR: Job failed")
    {
        return Some(Strength::Exit);
    }
    None
}

enum Marker<'a> {
    Error(&'a str),
    Warning(&'a str),
    Group(&'a str),
    /// `##[end-action id=…;outcome=failure;conclusion=success]`: a composite's sub-step ended.
    EndAction {
        failed: bool,
        tolerated: bool,
    },
    /// `##[endgroup]`, `##[debug]`, `##[command]`, `##[start-action …]` and the like: markers
    /// with nothing to read.
    Hidden,
}

/// The workflow-command marker that starts `line`: the `##[name]` form the log stores and the
/// `::name::` form a step prints.
fn marker(line: &str) -> Option<Marker<'_>> {
    let (command, rest) = if let Some(rest) = line.strip_prefix("##[") {
        rest.split_once(']')?
    } else if let Some(rest) = line.strip_prefix("::") {
        rest.split_once("::")?
    } else {
        return None;
    };
    // `::error file=a.rs,line=3::message`, `##[end-action id=x;outcome=failure]`: the name ends
    // at the first space.
    let name = command.split(' ').next().unwrap_or(command);
    Some(match name {
        "error" => Marker::Error(rest),
        "warning" => Marker::Warning(rest),
        "group" => Marker::Group(rest),
        "end-action" => {
            let field = |key: &str| {
                command
                    .split([' ', ';'])
                    .find_map(|f| f.strip_prefix(key))
                    .unwrap_or("")
            };
            let failed = field("outcome=") == "failure";
            Marker::EndAction {
                failed: failed && field("conclusion=") != "success",
                tolerated: failed && field("conclusion=") == "success",
            }
        }
        "endgroup" | "debug" | "command" | "notice" | "add-mask" | "section" | "start-action" => Marker::Hidden,
        _ => return None,
    })
}

/// A header line kept as a line of the step it folds into: its marker off.
fn clean_marker(text: &str) -> String {
    text.strip_prefix("##[group]").unwrap_or(text).to_owned()
}

/// The raw log's lines, capped, numbered, with timestamps, Buildkite's time stamps, ANSI codes
/// and GitLab's section markers taken off.
fn clean(raw: &str) -> Vec<Item> {
    fn read(text: &str, items: &mut Vec<Item>, number: &mut usize, step: &mut Option<String>) {
        for line in text.lines() {
            *number += 1;
            let line = match gh_columns(line) {
                Some((title, rest)) => {
                    if step.as_deref() != Some(title) {
                        *step = Some(title.to_owned());
                        items.push(Item::Step {
                            title: title.to_owned(),
                        });
                    }
                    rest
                }
                None => line,
            };
            clean_line(line, *number, items);
        }
    }
    let mut step = None;
    let mut items = Vec::new();
    let mut number = 0;
    match split_cap(raw, MAX_LOG_BYTES, LOG_HEAD_BYTES) {
        None => read(raw, &mut items, &mut number, &mut step),
        Some((head, cut, tail)) => {
            read(head, &mut items, &mut number, &mut step);
            items.push(Item::Line {
                number: number + 1,
                text: format!("[… {cut} lines cut …]"),
            });
            number += cut;
            read(tail, &mut items, &mut number, &mut step);
        }
    }
    items
}

/// `job<TAB>step<TAB>2024-01-01T00:00:00.0000000Z text`, as `gh run view --log` prints a job's
/// lines: the step's name and the timestamped line.
fn gh_columns(line: &str) -> Option<(&str, &str)> {
    let (_job, rest) = line.split_once('\t')?;
    let (step, rest) = rest.split_once('\t')?;
    let stamp = rest.trim_start_matches('\u{feff}').split(' ').next()?;
    (is_timestamp(stamp) && !step.trim().is_empty()).then_some((step.trim(), rest))
}

fn clean_line(line: &str, number: usize, items: &mut Vec<Item>) {
    let line = line.trim_start_matches('\u{feff}');
    let line = strip_buildkite_stamps(line);
    let stamped = strip_timestamp(&line);
    let line = if stamped.len() < line.len() {
        strip_gitlab_stream(stamped)
    } else {
        stamped
    };
    if !line.contains("section_start:") && !line.contains("section_end:") {
        items.push(Item::Line {
            number,
            text: strip_ansi(line),
        });
        return;
    }
    // GitLab's markers end in a carriage return that would erase them with the ANSI codes:
    // they are taken off first, and what is between them is the text.
    let mut rest = line;
    while let Some((before, kind, after)) = next_section_marker(rest) {
        let text = strip_ansi(before);
        if !text.trim().is_empty() {
            items.push(Item::Line { number, text });
        }
        let (name, tail) = section_name(after);
        if kind == "section_start:" {
            // The header is the text up to the next marker.
            let (header, after_header) = match next_section_marker(tail) {
                Some((header, _, _)) => (header, &tail[header.len()..]),
                None => (tail, ""),
            };
            items.push(Item::Section {
                number,
                name,
                header: strip_ansi(header).trim().to_owned(),
            });
            rest = after_header;
        } else {
            rest = tail;
        }
    }
    let text = strip_ansi(rest);
    if !text.trim().is_empty() {
        items.push(Item::Line { number, text });
    }
}

/// The name in `<time>:<name>[collapsed=true]\r` and the text after the marker.
fn section_name(marker: &str) -> (String, &str) {
    let after_time = marker.trim_start_matches(|c: char| c.is_ascii_digit());
    let Some(after_time) = after_time.strip_prefix(':') else {
        return (String::new(), marker);
    };
    let end = after_time
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
        .unwrap_or(after_time.len());
    let (name, mut rest) = after_time.split_at(end);
    if rest.starts_with('[')
        && let Some(close) = rest.find(']')
    {
        rest = &rest[close + 1..];
    }
    (name.to_owned(), rest.strip_prefix('\r').unwrap_or(rest))
}

/// The text before the next `section_start:` or `section_end:` in `text`, which of the two it
/// is, and the text after it.
fn next_section_marker(text: &str) -> Option<(&str, &'static str, &str)> {
    let start = text.find("section_start:").map(|i| (i, "section_start:"));
    let end = text.find("section_end:").map(|i| (i, "section_end:"));
    let (at, kind) = match (start, end) {
        (Some(s), Some(e)) => {
            if s.0 < e.0 {
                s
            } else {
                e
            }
        }
        (Some(m), None) | (None, Some(m)) => m,
        (None, None) => return None,
    };
    Some((&text[..at], kind, &text[at + kind.len()..]))
}

/// Buildkite's per-line time stamps, `ESC _bk;t=1700000000000 BEL`, taken off.
fn strip_buildkite_stamps(line: &str) -> std::borrow::Cow<'_, str> {
    const OPEN: &str = "\u{1b}_bk;t=";
    if !line.contains(OPEN) {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        let after = &rest[at + OPEN.len()..];
        rest = after.split_once('\u{7}').map_or("", |(_, r)| r);
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// Removes the `2024-01-01T00:00:00.0000000Z ` prefix the Actions log puts on every line.
pub fn strip_timestamp(line: &str) -> &str {
    let (stamp, rest) = line.split_once(' ').unwrap_or((line, ""));
    if is_timestamp(stamp) { rest } else { line }
}

/// GitLab's stream tag after its runner's timestamp: `00O `, `01E `, `00O+` (a continued line).
fn strip_gitlab_stream(line: &str) -> &str {
    let b = line.as_bytes();
    let tagged = b.len() >= 4
        && b[0].is_ascii_digit()
        && b[1].is_ascii_digit()
        && matches!(b[2], b'O' | b'E')
        && matches!(b[3], b' ' | b'+');
    if tagged { &line[4..] } else { line }
}

/// `YYYY-MM-DDTHH:MM:SS`, optionally with a fraction, then `Z`.
fn is_timestamp(stamp: &str) -> bool {
    let Some(stamp) = stamp.strip_suffix('Z') else {
        return false;
    };
    let (whole, fraction) = stamp.split_once('.').unwrap_or((stamp, "0"));
    let b = whole.as_bytes();
    b.len() == 19
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            _ => c.is_ascii_digit(),
        })
        && !fraction.is_empty()
        && fraction.bytes().all(|c| c.is_ascii_digit())
}

/// `text` cut to at most about `max` bytes, keeping `head` bytes of its start and the rest of the
/// budget from its end, on line boundaries, with a line saying how many lines were cut.
pub fn cap(text: &str, max: usize, head: usize) -> String {
    match split_cap(text, max, head) {
        None => text.to_owned(),
        Some((kept_head, cut, tail)) => format!("{kept_head}[… {cut} lines cut …]\n{tail}"),
    }
}

/// The head and tail [`cap`] keeps of `text` and the number of lines between them, or `None`
/// when `text` fits.
fn split_cap(text: &str, max: usize, head: usize) -> Option<(&str, usize, &str)> {
    if text.len() <= max {
        return None;
    }
    let head_end = text[..floor_char(text, head.min(max))].rfind('\n').map_or(0, |i| i + 1);
    let tail_budget = max.saturating_sub(head_end);
    let tail_from = ceil_char(text, text.len() - tail_budget);
    let tail_start = text[tail_from..].find('\n').map_or(text.len(), |i| tail_from + i + 1);
    let cut = text[head_end..tail_start].lines().count();
    Some((&text[..head_end], cut, &text[tail_start..]))
}

fn floor_char(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn timestamps_colours_and_markers_are_removed_and_steps_split() {
        let raw = "\u{feff}2024-01-01T00:00:00.0000000Z Current runner version: '2.320.0'\n\
                   2024-01-01T00:00:01.1000000Z ##[group]Operating System\n\
                   2024-01-01T00:00:01.1000000Z Ubuntu\n\
                   2024-01-01T00:00:01.1000000Z ##[endgroup]\n\
                   2024-01-01T00:00:02.0000000Z ##[group]Run cargo test\n\
                   2024-01-01T00:00:02.0000000Z cargo test\n\
                   2024-01-01T00:00:02.0000000Z ##[endgroup]\n\
                   2024-01-01T00:00:03.0000000Z \u{1b}[1m\u{1b}[32m   Compiling\u{1b}[0m tiny v0.1.0\n\
                   2024-01-01T00:00:04.0000000Z ##[error]Process completed with exit code 101.\n\
                   2024-01-01T00:00:05.0000000Z ##[group]Run echo later\n\
                   2024-01-01T00:00:05.0000000Z later\n";
        let log = JobLog::parse(raw);
        let titles: Vec<&str> = log.steps.iter().map(|s| s.title.as_str()).collect();
        assert_eq!(titles, ["Set up job", "Run cargo test", "Run echo later"]);
        assert_eq!(
            log.steps[0].lines,
            ["Current runner version: '2.320.0'", "Operating System", "Ubuntu"]
        );
        assert_eq!(log.steps[0].numbers, [1, 2, 3]);
        let failing = log.failing_step().unwrap();
        assert_eq!(failing.title, "Run cargo test");
        assert_eq!(
            failing.lines,
            [
                "cargo test",
                "   Compiling tiny v0.1.0",
                "Error: Process completed with exit code 101."
            ]
        );
        assert_eq!(failing.errors, ["Process completed with exit code 101."]);
        assert_eq!(failing.numbers, [6, 8, 9]);
    }

    #[test]
    fn without_an_error_marker_the_last_step_failed() {
        let log = JobLog::parse("##[group]Run a\nx\n##[group]Run b\ny\n");
        assert_eq!(log.steps.len(), 2);
        assert_eq!(log.failing_step().unwrap().title, "Run b");
    }

    #[test]
    fn only_real_timestamps_are_stripped() {
        assert_eq!(strip_timestamp("2024-01-01T00:00:00.0000000Z hi"), "hi");
        assert_eq!(strip_timestamp("2024-01-01T00:00:00Z hi"), "hi");
        assert_eq!(strip_timestamp("2024-01-01T00:00:00.0000000Z"), "");
        assert_eq!(strip_timestamp("2024-01-01 hi"), "2024-01-01 hi");
        assert_eq!(strip_timestamp("test foo ... ok"), "test foo ... ok");
    }

    #[test]
    fn caps_keep_head_and_tail_on_line_boundaries() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        assert_eq!(cap(&text, text.len(), 10), text);
        let capped = cap(&text, 200, 50);
        assert!(capped.len() <= 200 + 30, "{}", capped.len());
        assert!(capped.starts_with("line 0\nline 1\n"), "{capped}");
        assert!(capped.ends_with("line 998\nline 999\n"), "{capped}");
        let cut_line = capped.lines().find(|l| l.starts_with("[…")).unwrap();
        let kept = capped.lines().count() - 1;
        assert_eq!(cut_line, format!("[… {} lines cut …]", 1000 - kept));
    }

    /// A log of the triage corpus (`tests/fixtures/ci-logs/`), real CI output with its source
    /// in the `.toml` beside it.
    macro_rules! corpus {
        ($name:literal) => {
            include_str!(concat!("../../../tests/fixtures/ci-logs/", $name, ".log"))
        };
    }

    fn titles(log: &JobLog) -> Vec<Option<&str>> {
        log.steps.iter().map(Step::name).collect()
    }

    /// The raw line number of the first raw line containing `needle`.
    fn raw_number(raw: &str, needle: &str) -> usize {
        raw.lines().position(|l| l.contains(needle)).unwrap() + 1
    }

    #[test]
    fn raw_output_without_headers_is_one_nameless_step() {
        // A Travis test run pasted in an issue: no CI framing at all.
        let raw = corpus!("flaky-linkerd-proxy-connection-reset");
        let log = JobLog::parse(raw);
        assert_eq!(titles(&log), [None]);
        let failing = log.failing_step().unwrap();
        assert_eq!(failing.name(), None);
        assert_eq!(failing.numbers, (1..=raw.lines().count()).collect::<Vec<_>>());
    }

    #[test]
    fn an_actions_log_that_stops_while_setting_up_failed_in_set_up_job() {
        let raw = corpus!("infra-pytorch-runner-shutdown");
        let log = JobLog::parse(raw);
        assert_eq!(titles(&log), [Some("Set up job")]);
        let failing = log.failing_step().unwrap();
        assert_eq!(failing.name(), Some("Set up job"));
        assert!(
            failing.errors.contains(&"A task was canceled.".to_owned()),
            "{:?}",
            failing.errors
        );
    }

    #[test]
    fn the_runners_hook_wrapper_is_folded_into_the_step_it_wraps() {
        // Each step of this self-hosted runner is followed by `Run '…/wrapper.js'`, the hook
        // that runs the step's commands in the job's pod.
        let raw = corpus!("config-pytorch-aws-credentials");
        let log = JobLog::parse(raw);
        let names = titles(&log);
        assert!(!names.iter().flatten().any(|n| n.contains("wrapper.js")), "{names:?}");
        let failing = log.failing_step().unwrap();
        assert_eq!(
            failing.name(),
            Some("Run aws-actions/configure-aws-credentials@8df5847569e6427dd6c4fb1cf565c83acfa8afa7")
        );
        let exit = failing
            .lines
            .iter()
            .position(|l| l == "Error: Process completed with exit code 1.")
            .unwrap();
        assert_eq!(
            failing.numbers[exit],
            raw_number(raw, "##[error]Process completed with exit code 1.")
        );
        assert!(
            failing
                .lines
                .iter()
                .any(|l| l == "Run '/home/runner/hook-extensions/wrapper.js'")
        );
        // A composite action's nested step is a step of its own, named by its real command.
        assert!(names.contains(&Some(
            "Run pytorch/pytorch/.github/actions/download-build-artifacts@main"
        )));
        assert!(names.contains(&Some("Run actions/download-artifact@v4")));
        // The runner's `start-action`/`end-action` markers are not text.
        assert!(log.steps.iter().flat_map(|s| &s.lines).all(|l| !l.starts_with("##[")));
    }

    #[test]
    fn a_step_that_cannot_fail_by_itself_is_not_the_failure() {
        // The pod never came online; the always-run `cat … || true` after it fails only because
        // the pod is gone. The excerpt starts inside the failing step: it has no name.
        let raw = corpus!("infra-pytorch-pod-never-online");
        let log = JobLog::parse(raw);
        let tolerant = log
            .steps
            .iter()
            .find(|s| s.title == "Run cat test/**/*_toprint.log || true")
            .unwrap();
        assert!(
            tolerant
                .errors
                .iter()
                .any(|e| e.starts_with("Process completed with exit code 1"))
        );
        let failing = log.failing_step().unwrap();
        assert_eq!(failing.name(), None);
        assert!(failing.text().contains("pod failed to come online"));
    }

    #[test]
    fn the_runners_action_markers_are_not_text() {
        // pytorch/test-infra's log-classifier fixture s3_access_denied.txt: a composite's S3
        // upload failed (`outcome=failure`) but the job went on (`conclusion=success`).
        let raw = include_str!("samples/actions-continue-on-error-upload.log");
        let log = JobLog::parse(raw);
        let upload = log.steps.iter().find(|s| !s.errors.is_empty()).unwrap();
        assert!(
            upload
                .errors
                .iter()
                .any(|e| e.starts_with("Error uploading logs-test-"))
        );
        let marker = |l: &String| l.contains("end-action id=") || l.contains("start-action display=");
        assert!(!log.steps.iter().flat_map(|s| &s.lines).any(marker));
    }

    #[test]
    fn a_sub_step_that_was_allowed_to_fail_does_not_outrank_a_later_failure() {
        let log = JobLog::parse(
            "##[group]Run lint\n##[error]Process completed with exit code 1.\n\
             ##[end-action id=lint;outcome=failure;conclusion=success;duration_ms=9]\n\
             ##[group]Run actions/upload-artifact@v4\n##[error]Artifact upload failed\n",
        );
        assert_eq!(
            log.failing_step().unwrap().name(),
            Some("Run actions/upload-artifact@v4")
        );
        let failed = JobLog::parse(
            "##[group]Run lint\n##[error]Process completed with exit code 1.\n\
             ##[end-action id=lint;outcome=failure;conclusion=failure;duration_ms=9]\n\
             ##[group]Run actions/upload-artifact@v4\n##[error]Artifact upload failed\n",
        );
        assert_eq!(failed.failing_step().unwrap().name(), Some("Run lint"));
    }

    #[test]
    fn the_actions_web_uis_copied_run_line_names_its_step() {
        let log = JobLog::parse(corpus!("config-upptime-checkout-token-not-supplied"));
        assert_eq!(titles(&log), [Some("Run actions/checkout@v2.3.3")]);
        assert_eq!(
            log.failing_step().unwrap().lines.last().unwrap(),
            "Error: Input required and not supplied: token"
        );
    }

    #[test]
    fn gh_run_views_step_column_names_the_steps() {
        // `gh run view --log-failed` output quoted in xvanov/sacrifice (see the corpus labels):
        // the step column, not the `##[group]Run` line inside it, is the step.
        let raw = corpus!("lint-sacrifice-ruff-full-format");
        let log = JobLog::parse(raw);
        let failing = log.failing_step().unwrap();
        assert_eq!(failing.name(), Some("Ruff lint + format (changed Python only)"));
        let first = failing.lines.first().unwrap();
        assert!(!first.contains('\t') && !first.starts_with("2026-"), "{first}");
        assert_eq!(failing.numbers[0], 3);
    }

    #[test]
    fn buildkite_sections_are_steps() {
        // improbable-eng/metahook-buildkite-plugin's contributing.md (at f718c358): the agent's
        // output of a local run.
        let raw = include_str!("samples/buildkite-metahook-hooks.log");
        let log = JobLog::parse(raw);
        assert_eq!(
            titles(&log),
            [
                Some("Running plugin metahook environment hook"),
                Some("Running plugin metahook pre-command hook"),
                Some("Running plugin metahook command hook"),
                Some("Running plugin metahook post-command hook"),
                Some("Running plugin metahook pre-exit hook"),
            ]
        );
        let pre_command = &log.steps[1];
        let at = pre_command.lines.iter().position(|l| l == "with two commands").unwrap();
        assert_eq!(pre_command.numbers[at], raw_number(raw, "with two commands"));
    }

    #[test]
    fn the_buildkite_agents_exit_verdict_marks_the_failing_section() {
        let log = JobLog::parse(corpus!("infra-buildkite-pipeline-upload-stuck"));
        assert_eq!(titles(&log), [None]);
        let failing = log.failing_step().unwrap();
        assert_eq!(failing.verdict.unwrap().strength, Strength::Exit);
        assert!(failing.text().contains("Failed to upload and process pipeline"));
    }

    #[test]
    fn go_test_and_diff_lines_are_not_buildkite_headers() {
        let log = JobLog::parse(
            "~~~ Running commands\n$ go test ./...\n--- FAIL: TestX (0.00s)\n--- a/x.txt\n+++ b/x.txt\n\
             ^^^ +++\n🚨 Error: The command exited with status 1\n~~~ Running global pre-exit hook\n",
        );
        assert_eq!(
            titles(&log),
            [Some("Running commands"), Some("Running global pre-exit hook")]
        );
        let failing = log.failing_step().unwrap();
        assert_eq!(failing.name(), Some("Running commands"));
        assert!(failing.lines.contains(&"--- FAIL: TestX (0.00s)".to_owned()));
        assert_eq!(failing.verdict.unwrap().strength, Strength::Expand);
    }

    #[test]
    fn gitlab_sections_are_steps_named_by_the_runners_stage() {
        // gitlabhq's spec/fixtures/trace/sample_trace as kept in Warshavski/booky-api (at
        // 11afa43c, with that copy's gitlab → booky renaming): its first 63 lines.
        let raw = include_str!("samples/gitlab-sample-trace-head.log");
        let log = JobLog::parse(raw);
        assert_eq!(
            titles(&log),
            [
                None,
                Some("prepare_script"),
                Some("get_sources"),
                Some("restore_cache"),
                Some("download_artifacts"),
                Some("build_script"),
            ]
        );
        let running = &log.steps[1];
        assert_eq!(
            running.lines[0],
            "Running on runner-30d62d59-project-13083-concurrent-0 via runner-30d62d59-prm-1522922015-ddc29478..."
        );
        assert_eq!(running.numbers[0], raw_number(raw, "Running on runner-30d62d59"));
        assert!(log.steps.iter().flat_map(|s| &s.lines).all(|l| !l.contains("section_")));
    }

    #[test]
    fn gitlabs_after_failure_sections_are_housekeeping() {
        // The same trace's last 22 lines: the job succeeded, so nothing is blamed on them.
        let log = JobLog::parse(include_str!("samples/gitlab-sample-trace-tail.log"));
        assert_eq!(
            titles(&log),
            [
                None,
                Some("after_script"),
                Some("archive_cache"),
                Some("upload_artifacts")
            ]
        );
        assert!(log.steps[1..].iter().all(|s| s.housekeeping));
        assert!(log.steps.iter().all(|s| s.verdict.is_none()));
    }

    #[test]
    fn gitlabs_verdict_after_its_clean_up_blames_the_script() {
        // The runner's own marker format (`section_start:<time>:<name>\r ESC[0K` and the header
        // on the same line), with its per-line timestamps and stream tags.
        let raw = "2026-01-01T00:00:00.000000Z 00O Running with gitlab-runner 17.2.0 (abc)\n\
                   2026-01-01T00:00:01.000000Z 00O section_start:1700000001:step_script\r\u{1b}[0K\u{1b}[0K\u{1b}[36;1mExecuting \"step_script\" stage of the job script\u{1b}[0;m\n\
                   2026-01-01T00:00:02.000000Z 01O $ make test\n\
                   2026-01-01T00:00:03.000000Z 01E make: *** [test] Error 2\n\
                   2026-01-01T00:00:04.000000Z 00O section_end:1700000004:step_script\r\u{1b}[0K\n\
                   2026-01-01T00:00:04.000000Z 00O+section_start:1700000004:after_script[collapsed=true]\r\u{1b}[0K\u{1b}[0K\u{1b}[36;1mRunning after_script\u{1b}[0;m\n\
                   2026-01-01T00:00:05.000000Z 00O section_end:1700000005:after_script\r\u{1b}[0Ksection_start:1700000005:cleanup_file_variables\r\u{1b}[0K\u{1b}[0K\u{1b}[36;1mCleaning up project directory and file based variables\u{1b}[0;m\n\
                   2026-01-01T00:00:06.000000Z 00O section_end:1700000006:cleanup_file_variables\r\u{1b}[0K\n\
                   2026-01-01T00:00:06.000000Z 00O \u{1b}[31;1mERROR: Job failed: exit code 2\u{1b}[0;m\n";
        let log = JobLog::parse(raw);
        assert_eq!(
            titles(&log),
            [
                None,
                Some("Executing \"step_script\" stage of the job script"),
                Some("Running after_script"),
                Some("Cleaning up project directory and file based variables"),
            ]
        );
        let failing = log.failing_step().unwrap();
        assert_eq!(
            failing.name(),
            Some("Executing \"step_script\" stage of the job script")
        );
        assert_eq!(failing.lines, ["$ make test", "make: *** [test] Error 2"]);
        assert_eq!(failing.numbers, [3, 4]);
    }

    #[test]
    fn circleci_s_exit_verdict_marks_its_step() {
        let log = JobLog::parse(corpus!("infra-libcfgraph-circleci-killed"));
        assert_eq!(titles(&log), [None]);
        assert_eq!(log.failing_step().unwrap().verdict.unwrap().strength, Strength::Exit);
        let local = JobLog::parse(
            "====>> Checkout code\nok\n====>> npm test\nfailed\nError: Exited with code exit status 1\nExited with code exit status 1\n",
        );
        assert_eq!(local.failing_step().unwrap().name(), Some("npm test"));
    }

    #[test]
    fn line_numbers_count_the_lines_a_cap_cut() {
        let raw: String = (1..=600_000).map(|i| format!("line {i}\n")).collect();
        assert!(raw.len() > MAX_LOG_BYTES);
        let log = JobLog::parse(&raw);
        let lines: Vec<(&String, &usize)> = log.steps.iter().flat_map(|s| s.lines.iter().zip(&s.numbers)).collect();
        let cut = lines.iter().position(|(l, _)| l.starts_with("[…")).unwrap();
        for (line, number) in lines.iter().take(cut).chain(lines.iter().skip(cut + 1)) {
            assert_eq!(**line, format!("line {number}"));
        }
        assert_eq!(*lines[cut].1, *lines[cut - 1].1 + 1);
        assert_eq!(*lines.last().unwrap().1, 600_000);
    }
}
