//! GitHub Actions job logs made readable: timestamps, ANSI codes and workflow-command markers
//! removed, the log split into its steps, the failing step found, and text capped keeping its head
//! and tail.

use crate::testparse::strip_ansi;

/// The most of a log that is analysed. A runaway job can print gigabytes; its start (set-up,
/// the command) and its end (the failure, the runner's verdict) are what explain it.
pub const MAX_LOG_BYTES: usize = 4 * 1024 * 1024;
/// Of a capped log, how much of the start is kept; the rest of the budget goes to the end.
const LOG_HEAD_BYTES: usize = 512 * 1024;

/// One step of a job, as the log shows it: from its `##[group]Run …` header to the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The header without its marker (`Run cargo test`); `Set up job` for what precedes the first
    /// step.
    pub title: String,
    /// The step's lines, clean; `##[error]X` becomes `Error: X`, as the Actions UI shows it.
    pub lines: Vec<String>,
    /// The messages of its `##[error]` markers.
    pub errors: Vec<String>,
    /// For each of `lines`, its 1-based line in the raw log.
    pub numbers: Vec<usize>,
}

impl Step {
    pub fn text(&self) -> String {
        let mut text = self.lines.join("\n");
        text.push('\n');
        text
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
        let raw = cap(raw, MAX_LOG_BYTES, LOG_HEAD_BYTES);
        let text = strip_ansi(&raw);
        let mut steps = vec![Step {
            title: "Set up job".into(),
            lines: Vec::new(),
            errors: Vec::new(),
            numbers: Vec::new(),
        }];
        for (number, line) in text.lines().enumerate() {
            let number = number + 1;
            let line = strip_timestamp(line.trim_start_matches('\u{feff}'));
            if let Some(title) = line.strip_prefix("##[group]Run ") {
                steps.push(Step {
                    title: format!("Run {}", title.trim()),
                    lines: Vec::new(),
                    errors: Vec::new(),
                    numbers: Vec::new(),
                });
                continue;
            }
            let Some(step) = steps.last_mut() else { continue };
            match marker(line) {
                Some(Marker::Error(message)) => {
                    step.lines.push(format!("Error: {message}"));
                    step.errors.push(message.to_owned());
                }
                Some(Marker::Warning(message)) => step.lines.push(format!("Warning: {message}")),
                Some(Marker::Group(title)) => step.lines.push(title.to_owned()),
                Some(Marker::Hidden) => continue,
                None => step.lines.push(line.to_owned()),
            }
            step.numbers.push(number);
        }
        // A log that opens straight with a step has nothing before it worth a section.
        if steps.len() > 1 && steps[0].lines.iter().all(|l| l.trim().is_empty()) {
            steps.remove(0);
        }
        JobLog { steps }
    }

    /// The 1-based raw-log line of line `at` of step `step`.
    pub fn line_number(&self, step: usize, at: usize) -> Option<usize> {
        self.steps.get(step)?.numbers.get(at).copied()
    }

    /// The step that failed: the first one with an `##[error]` marker, or else the last one (a
    /// runner that died leaves no marker, and the last step is the one it was running).
    pub fn failing_step(&self) -> Option<&Step> {
        self.steps
            .iter()
            .find(|s| !s.errors.is_empty())
            .or_else(|| self.steps.last())
    }
}

enum Marker<'a> {
    Error(&'a str),
    Warning(&'a str),
    Group(&'a str),
    /// `##[endgroup]`, `##[debug]`, `##[command]` and the like: markers with nothing to read.
    Hidden,
}

/// The workflow-command marker that starts `line`: the `##[name]` form the log stores and the
/// `::name::` form a step prints.
fn marker(line: &str) -> Option<Marker<'_>> {
    let (name, rest) = if let Some(rest) = line.strip_prefix("##[") {
        rest.split_once(']')?
    } else if let Some(rest) = line.strip_prefix("::") {
        let (command, message) = rest.split_once("::")?;
        // `::error file=a.rs,line=3::message`: the name ends at the first space.
        (command.split(' ').next().unwrap_or(command), message)
    } else {
        return None;
    };
    Some(match name {
        "error" => Marker::Error(rest),
        "warning" => Marker::Warning(rest),
        "group" => Marker::Group(rest),
        "endgroup" | "debug" | "command" | "notice" | "add-mask" | "section" => Marker::Hidden,
        _ => return None,
    })
}

/// Removes the `2024-01-01T00:00:00.0000000Z ` prefix the Actions log puts on every line.
pub fn strip_timestamp(line: &str) -> &str {
    let (stamp, rest) = line.split_once(' ').unwrap_or((line, ""));
    if is_timestamp(stamp) { rest } else { line }
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
    if text.len() <= max {
        return text.to_owned();
    }
    let head_end = text[..floor_char(text, head.min(max))].rfind('\n').map_or(0, |i| i + 1);
    let tail_budget = max.saturating_sub(head_end);
    let tail_from = ceil_char(text, text.len() - tail_budget);
    let tail_start = text[tail_from..].find('\n').map_or(text.len(), |i| tail_from + i + 1);
    let cut = text[head_end..tail_start].lines().count();
    format!("{}[… {cut} lines cut …]\n{}", &text[..head_end], &text[tail_start..])
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
}
