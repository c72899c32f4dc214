//! Lint errors in a log: flake8's and ruff's concise format (`path:line:col: CODE message`), ruff's
//! full format (`CODE message`, then ` --> path:line:col` below it), pylint
//! (`path:line:col: C0114: message (symbol)`), mypy (`path:line: error: message  [code]`) and
//! eslint's stylish (a file's path, then `  line:col  error  message  rule` under it) and unix
//! (`path:line:col: message [Error/rule]`) formats; tslint (`ERROR: path:line:col rule message`,
//! and its older `ERROR: path[line, col]: message`), Checkstyle (`[ant:checkstyle] path:line: message`,
//! `[ERROR] path:line:col: message [Rule]`) and gometalinter (`path:line:col:severity: message
//! (linter)`, every severity failing the run). Warnings of the tools that mark them (eslint,
//! mypy's notes) are left out: they do not fail a job; flake8, ruff and pylint fail on every code
//! they print.
//!
//! Lines may carry the prefix `gh run view --log` puts before each line (`job<TAB>step<TAB>`
//! and a timestamp); it is skipped.

use serde::{Deserialize, Serialize};

/// The tool whose output a lint error was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LintTool {
    /// flake8, or ruff's concise format when it shows no fix marker (the two are the same shape).
    Flake8,
    Ruff,
    Pylint,
    Mypy,
    Eslint,
    Tslint,
    Checkstyle,
    /// gometalinter or golangci-lint's line format (`path:line:col:severity: message (linter)`).
    GoLinter,
}

impl LintTool {
    pub fn name(self) -> &'static str {
        match self {
            LintTool::Flake8 => "flake8",
            LintTool::Ruff => "ruff",
            LintTool::Pylint => "pylint",
            LintTool::Mypy => "mypy",
            LintTool::Eslint => "eslint",
            LintTool::Tslint => "tslint",
            LintTool::Checkstyle => "checkstyle",
            LintTool::GoLinter => "go-linter",
        }
    }
}

/// One lint error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lint {
    pub tool: LintTool,
    /// As the tool printed it, without a leading `./`.
    pub file: String,
    pub line: u32,
    /// Absent from mypy's default output.
    pub column: Option<u32>,
    /// The rule: `F401`, `C0114`, `no-unused-vars`, mypy's `[arg-type]`; empty when the tool gave
    /// none (a parse error).
    pub code: String,
    pub message: String,
}

/// How far below ruff's `CODE message` line its ` --> ` location may be.
const RUFF_LOCATION_WITHIN: usize = 3;

/// Every lint error in `text` (clean lines), in order, each once.
pub fn parse(text: &str) -> Vec<Lint> {
    let lines: Vec<&str> = text.lines().map(content).collect();
    let mut out: Vec<Lint> = Vec::new();
    // The file of the eslint stylish block being read.
    let mut stylish_file: Option<&str> = None;
    for (i, line) in lines.iter().enumerate() {
        let found = if let Some(file) = stylish_file
            && let Some(found) = stylish_entry(file, line)
        {
            found
        } else {
            stylish_file = stylish_path(line, lines.get(i + 1).copied());
            tslint(line)
                .or_else(|| checkstyle(line))
                .or_else(|| go_linter(line))
                .or_else(|| located(line))
                .or_else(|| ruff_full(line, &lines[i + 1..]))
                .flatten()
        };
        if let Some(lint) = found
            && !out.contains(&lint)
        {
            out.push(lint);
        }
    }
    out
}

/// The line without the `job<TAB>step<TAB>2024-01-01T00:00:00.0000000Z ` prefix of
/// `gh run view --log`.
fn content(line: &str) -> &str {
    let mut parts = line.splitn(3, '\t');
    let (Some(_), Some(_), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
        return line;
    };
    match rest.split_once(' ') {
        Some((stamp, after)) if is_timestamp(stamp) => after,
        None if is_timestamp(rest) => "",
        _ => line,
    }
}

fn is_timestamp(word: &str) -> bool {
    word.len() >= 20 && word.ends_with('Z') && word.as_bytes().get(4) == Some(&b'-') && word.contains('T')
}

/// The formats that start with a location: flake8, ruff concise, pylint, mypy, eslint unix.
fn located(line: &str) -> Option<Option<Lint>> {
    let (file, line_no, column, rest) = location_prefix(line)?;
    let (code_word, message) = rest.split_once(' ').unwrap_or((rest, ""));
    let lint = |tool, code: &str, message: &str| {
        Some(Some(Lint {
            tool,
            file: clean_path(file),
            line: line_no,
            column,
            code: code.to_owned(),
            message: message.trim().to_owned(),
        }))
    };
    if is_rule_code(code_word) {
        let (tool, message) = match message.strip_prefix("[*] ") {
            Some(message) => (LintTool::Ruff, message),
            None => (LintTool::Flake8, message),
        };
        return lint(tool, code_word, message);
    }
    if code_word == "invalid-syntax:" {
        return lint(LintTool::Ruff, "invalid-syntax", message);
    }
    if let Some(code) = code_word.strip_suffix(':')
        && is_pylint_code(code)
    {
        return lint(LintTool::Pylint, code, message);
    }
    if code_word == "error:" && (file.ends_with(".py") || file.ends_with(".pyi")) {
        let (message, code) = match message.trim_end().rsplit_once("  [") {
            Some((message, code)) if code.ends_with(']') => (message, code.trim_end_matches(']')),
            _ => (message, ""),
        };
        return lint(LintTool::Mypy, code, message);
    }
    // eslint unix: `message [Error/rule]`, `message [Error]`; warnings left out.
    let (message, marker) = rest.trim_end().rsplit_once(" [")?;
    let marker = marker.strip_suffix(']')?;
    let (severity, rule) = marker.split_once('/').unwrap_or((marker, ""));
    match severity {
        "Error" => lint(LintTool::Eslint, rule, message),
        "Warning" => Some(None),
        _ => None,
    }
}

/// `path:line:col: rest` or `path:line: rest`.
fn location_prefix(line: &str) -> Option<(&str, u32, Option<u32>, &str)> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    // The location ends at the first `: ` after which a number stood.
    let mut search = 0;
    while let Some(at) = line[search..].find(": ").map(|i| i + search) {
        let place = &line[..at];
        let rest = &line[at + 2..];
        let mut parts = place.rsplitn(3, ':');
        let last = parts.next().and_then(|n| n.parse::<u32>().ok());
        let middle = parts.next();
        let first = parts.next();
        if let Some(last) = last {
            let (file, line_no, column) = match (middle.and_then(|n| n.parse::<u32>().ok()), first) {
                (Some(line_no), Some(file)) => (file, line_no, Some(last)),
                _ => (place.rsplit_once(':').map(|(f, _)| f)?, last, None),
            };
            if file.is_empty() || file.contains(char::is_whitespace) || line_no == 0 {
                return None;
            }
            return Some((file, line_no, column, rest));
        }
        search = at + 2;
    }
    None
}

/// flake8's and ruff's rule codes: `E128`, `F401`, `PLR0913`, `ASYNC100`, `RUF100`.
fn is_rule_code(word: &str) -> bool {
    let letters = word.chars().take_while(char::is_ascii_uppercase).count();
    let digits = &word[letters..];
    (1..=6).contains(&letters) && (1..=4).contains(&digits.len()) && digits.chars().all(|c| c.is_ascii_digit())
}

/// pylint's message ids: a category letter and four digits (`C0114`, `E0602`).
fn is_pylint_code(word: &str) -> bool {
    let mut chars = word.chars();
    matches!(chars.next(), Some('C' | 'R' | 'W' | 'E' | 'F' | 'I'))
        && word.len() == 5
        && chars.all(|c| c.is_ascii_digit())
}

/// ruff's full format: `F401 [*] message` (or `invalid-syntax: message`), its location on a
/// ` --> path:line:col` line just below. rustc's `error[E0308]: …` + ` --> ` is not a rule code.
fn ruff_full(line: &str, below: &[&str]) -> Option<Option<Lint>> {
    let (code, message) = match line.split_once(' ') {
        Some((code, message)) if is_rule_code(code) => (code, message.strip_prefix("[*] ").unwrap_or(message)),
        _ => ("invalid-syntax", line.strip_prefix("invalid-syntax: ")?),
    };
    let place = below
        .iter()
        .take(RUFF_LOCATION_WITHIN)
        .find_map(|l| l.trim_start().strip_prefix("--> "))?;
    let (rest, column) = place.trim().rsplit_once(':')?;
    let (file, line_no) = rest.rsplit_once(':')?;
    if file.is_empty() || file.contains(char::is_whitespace) {
        return None;
    }
    Some(Some(Lint {
        tool: LintTool::Ruff,
        file: clean_path(file),
        line: line_no.parse().ok()?,
        column: column.parse().ok(),
        code: code.to_owned(),
        message: message.trim().to_owned(),
    }))
}

/// A line naming the file of an eslint stylish block: a path alone on its line (absolute, as
/// eslint prints it, or relative), followed by an entry.
fn stylish_path<'a>(line: &'a str, next: Option<&str>) -> Option<&'a str> {
    let path = line.trim_end();
    if path.is_empty() || path.starts_with(char::is_whitespace) || path.contains("  ") {
        return None;
    }
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    if !name.contains('.') || name.ends_with('.') {
        return None;
    }
    next.and_then(|next| stylish_fields(next)).map(|_| path)
}

/// `  3:8  error  'x' is defined but never used  no-unused-vars` → line, column, severity,
/// message, rule (the text table eslint prints, columns two spaces apart).
fn stylish_fields(line: &str) -> Option<(u32, u32, &str, &str, &str)> {
    let rest = line.strip_prefix("  ")?;
    let (place, rest) = rest.split_once(' ')?;
    let (line_no, column) = place.split_once(':')?;
    let (line_no, column) = (line_no.parse().ok()?, column.parse().ok()?);
    let rest = rest.trim_start();
    let (severity, rest) = rest.split_once(' ')?;
    if severity != "error" && severity != "warning" {
        return None;
    }
    let rest = rest.trim();
    let (message, rule) = match rest.rsplit_once("  ") {
        Some((message, rule)) if !rule.contains(' ') => (message.trim_end(), rule),
        _ => (rest, ""),
    };
    Some((line_no, column, severity, message, rule))
}

/// An entry of an eslint stylish block: an error, or `Some(None)` for a warning.
fn stylish_entry(file: &str, line: &str) -> Option<Option<Lint>> {
    let (line_no, column, severity, message, rule) = stylish_fields(line)?;
    if severity != "error" {
        return Some(None);
    }
    Some(Some(Lint {
        tool: LintTool::Eslint,
        file: clean_path(file),
        line: line_no,
        column: Some(column),
        code: rule.to_owned(),
        message: message.to_owned(),
    }))
}

/// tslint: `ERROR: path:line:col rule message` (and `WARNING: …`, left out), or the older
/// `ERROR: path[line, col]: message`.
fn tslint(line: &str) -> Option<Option<Lint>> {
    let (severity, rest) = line.split_once(": ")?;
    if severity != "ERROR" && severity != "WARNING" {
        return None;
    }
    let (file, line_no, column, rule, message) = match tslint_place(rest) {
        Some(found) => found,
        None => {
            let (file, rest) = rest.split_once('[')?;
            let (place, message) = rest.split_once("]: ")?;
            let (line_no, column) = place.split_once(", ")?;
            (file, line_no.parse().ok()?, column.parse().ok(), "", message)
        }
    };
    if file.is_empty() || file.contains(char::is_whitespace) {
        return None;
    }
    if severity == "WARNING" {
        return Some(None);
    }
    Some(Some(Lint {
        tool: LintTool::Tslint,
        file: clean_path(file),
        line: line_no,
        column,
        code: rule.to_owned(),
        message: message.trim().to_owned(),
    }))
}

/// `path:line:col rule message` (tslint 5's default format).
fn tslint_place(text: &str) -> Option<(&str, u32, Option<u32>, &str, &str)> {
    let (place, rest) = text.split_once(' ')?;
    let (head, column) = place.rsplit_once(':')?;
    let (file, line_no) = head.rsplit_once(':')?;
    let (rule, message) = rest_rule(rest.trim_start())?;
    Some((file, line_no.parse().ok()?, column.parse().ok(), rule, message))
}

/// `rule message` → (`rule`, `message`) when the first word is a rule name (`boolean-trivia`).
fn rest_rule(rest: &str) -> Option<(&str, &str)> {
    let (rule, message) = rest.split_once(' ')?;
    rule.chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        .then_some((rule, message))
}

/// Checkstyle through Gradle or Ant (`[ant:checkstyle] path:line: message`, with `[ERROR] ` or
/// `[WARN] ` after it in newer versions) or alone (`[ERROR] path:line:col: message [Rule]`).
fn checkstyle(line: &str) -> Option<Option<Lint>> {
    let (through_ant, rest) = match line.strip_prefix("[ant:checkstyle] ") {
        Some(rest) => (true, rest),
        None => (false, line),
    };
    let (severity, rest) = match rest.strip_prefix("[ERROR] ") {
        Some(rest) => ("error", rest),
        None => match rest.strip_prefix("[WARN] ") {
            Some(rest) => ("warning", rest),
            None if through_ant => ("error", rest),
            None => return None,
        },
    };
    let (file, line_no, column, message) = location_prefix(rest)?;
    if !file.ends_with(".java") && !file.ends_with(".kt") && !file.ends_with(".xml") {
        return None;
    }
    if severity == "warning" {
        return Some(None);
    }
    let (message, rule) = match message.trim_end().rsplit_once(" [") {
        Some((message, rule)) if rule.ends_with(']') => (message, rule.trim_end_matches(']')),
        _ => (message, ""),
    };
    Some(Some(Lint {
        tool: LintTool::Checkstyle,
        file: clean_path(file),
        line: line_no,
        column,
        code: rule.to_owned(),
        message: message.trim().to_owned(),
    }))
}

/// gometalinter and golangci-lint's line format: `path:line:col:severity: message (linter)`, the
/// column possibly empty (`eth/config.go:1::warning: file is not goimported (goimports)`).
fn go_linter(line: &str) -> Option<Option<Lint>> {
    let (place, message) = [":warning: ", ":error: "].iter().find_map(|sep| line.split_once(sep))?;
    let mut parts = place.splitn(3, ':');
    let (file, line_no, column) = (parts.next()?, parts.next()?, parts.next());
    if !file.ends_with(".go") || file.contains(char::is_whitespace) {
        return None;
    }
    let (message, linter) = match message.trim_end().rsplit_once(" (") {
        Some((message, linter)) if linter.ends_with(')') => (message, linter.trim_end_matches(')')),
        _ => (message, ""),
    };
    Some(Some(Lint {
        tool: LintTool::GoLinter,
        file: clean_path(file),
        line: line_no.parse().ok()?,
        column: column.and_then(|c| c.parse().ok()),
        code: linter.to_owned(),
        message: message.trim().to_owned(),
    }))
}

fn clean_path(path: &str) -> String {
    path.strip_prefix("./").unwrap_or(path).to_owned()
}

#[cfg(test)]
mod tests {
    //! The samples in `samples/` are the real output of the tools, run on small made-up projects
    //! (`samples/README.md` says how).

    use super::*;
    use crate::testparse::strip_ansi;

    fn places(lints: &[Lint]) -> Vec<(LintTool, &str, u32, &str)> {
        lints
            .iter()
            .map(|l| (l.tool, l.file.as_str(), l.line, l.code.as_str()))
            .collect()
    }

    #[test]
    fn flake8_is_read() {
        let lints = parse(include_str!("samples/flake8.txt"));
        assert_eq!(lints.len(), 10);
        assert!(lints.iter().all(|l| l.tool == LintTool::Flake8));
        assert_eq!(
            lints[0],
            Lint {
                tool: LintTool::Flake8,
                file: "pkg/broken.py".into(),
                line: 1,
                column: Some(8),
                code: "E999".into(),
                message: "SyntaxError: invalid syntax".into(),
            }
        );
        assert_eq!(
            places(&lints[8..]),
            [
                (LintTool::Flake8, "pkg/calc.py", 10, "E711"),
                (LintTool::Flake8, "pkg/calc.py", 11, "F821")
            ]
        );
    }

    #[test]
    fn ruff_concise_and_full_formats_give_the_same_errors() {
        let concise = parse(include_str!("samples/ruff_concise.txt"));
        let full = parse(include_str!("samples/ruff_full.txt"));
        let expected = [
            (LintTool::Ruff, "pkg/broken.py", 1, "invalid-syntax"),
            (LintTool::Ruff, "pkg/broken.py", 1, "invalid-syntax"),
            (LintTool::Ruff, "pkg/calc.py", 1, "I001"),
            (LintTool::Ruff, "pkg/calc.py", 1, "F401"),
            (LintTool::Ruff, "pkg/calc.py", 2, "F401"),
            (LintTool::Ruff, "pkg/calc.py", 2, "F401"),
            (LintTool::Flake8, "pkg/calc.py", 6, "F841"),
            (LintTool::Flake8, "pkg/calc.py", 11, "F821"),
        ];
        assert_eq!(places(&concise), expected);
        // The full format names ruff for every error, fixable or not.
        let full_places: Vec<_> = places(&full).into_iter().map(|(_, f, l, c)| (f, l, c)).collect();
        let expected_places: Vec<_> = expected.iter().map(|(_, f, l, c)| (*f, *l, *c)).collect();
        assert_eq!(full_places, expected_places);
        assert!(full.iter().all(|l| l.tool == LintTool::Ruff));
        assert_eq!(full[3].message, "`os` imported but unused");
        assert_eq!(full[3].column, Some(8));
        assert_eq!(full[7].message, "Undefined name `undefined_name`");
        assert_eq!(full[7].column, Some(16));
        assert_eq!(full[0].message, "Expected a parameter or the end of the parameter list");
    }

    #[test]
    fn pylint_and_mypy_are_read() {
        let pylint = parse(include_str!("samples/pylint.txt"));
        assert_eq!(pylint.len(), 11);
        assert_eq!(
            pylint[1],
            Lint {
                tool: LintTool::Pylint,
                file: "pkg/calc.py".into(),
                line: 1,
                column: Some(0),
                code: "C0114".into(),
                message: "Missing module docstring (missing-module-docstring)".into(),
            }
        );
        let mypy = parse(include_str!("samples/mypy.txt"));
        assert_eq!(
            mypy,
            vec![
                Lint {
                    tool: LintTool::Mypy,
                    file: "pkg/broken.py".into(),
                    line: 1,
                    column: None,
                    code: "syntax".into(),
                    message: "Expected a parameter or the end of the parameter list".into(),
                },
                Lint {
                    tool: LintTool::Mypy,
                    file: "pkg/broken.py".into(),
                    line: 1,
                    column: None,
                    code: "syntax".into(),
                    message: "Expected `)`, found newline".into(),
                },
            ]
        );
    }

    fn eslint_errors() -> Vec<(u32, &'static str, &'static str)> {
        vec![
            (1, "no-unused-vars", "'fs' is assigned a value but never used"),
            (3, "no-unused-vars", "'unused' is assigned a value but never used"),
            (4, "no-undef", "'undefinedThing' is not defined"),
            (4, "no-extra-semi", "Unnecessary semicolon"),
            (1, "", "Parsing error: Unexpected token ("),
        ]
    }

    #[test]
    fn eslint_stylish_errors_are_read_and_warnings_left_out() {
        for sample in [
            include_str!("samples/eslint_stylish.txt").to_owned(),
            strip_ansi(include_str!("samples/eslint_stylish_color.txt")),
        ] {
            let lints = parse(&sample);
            let got: Vec<_> = lints
                .iter()
                .map(|l| (l.line, l.code.as_str(), l.message.as_str()))
                .collect();
            assert_eq!(got, eslint_errors());
            assert!(lints.iter().all(|l| l.tool == LintTool::Eslint));
            assert_eq!(lints[0].file, "/tmp/jsproj/src/app.js");
            assert_eq!(lints[3].column, Some(40));
            assert_eq!(lints[4].file, "/tmp/jsproj/src/bad.js");
        }
    }

    #[test]
    fn eslint_unix_errors_are_read_and_warnings_left_out() {
        let lints = parse(include_str!("samples/eslint_unix.txt"));
        let got: Vec<_> = lints
            .iter()
            .map(|l| (l.line, l.code.as_str(), l.message.as_str()))
            .collect();
        let expected: Vec<_> = eslint_errors()
            .into_iter()
            .map(|(line, code, message)| {
                // The unix format ends sentences with a full stop, bar parse errors.
                (
                    line,
                    code,
                    if code.is_empty() {
                        message.to_owned()
                    } else {
                        format!("{message}.")
                    },
                )
            })
            .collect();
        let expected: Vec<_> = expected.iter().map(|(l, c, m)| (*l, *c, m.as_str())).collect();
        assert_eq!(got, expected);
        assert!(
            lints
                .iter()
                .all(|l| l.tool == LintTool::Eslint && l.file.starts_with("/tmp/jsproj/src/"))
        );
    }

    #[test]
    fn the_gh_cli_prefix_is_skipped() {
        // Cut from tests/fixtures/ci-logs/lint-sacrifice-ruff-full-format.log (real).
        let log = "lint\tRuff lint + format (changed Python only)\t2026-07-23T10:06:40.8151491Z F401 [*] `app.services.auth.decode_access_token` imported but unused\n\
                   lint\tRuff lint + format (changed Python only)\t2026-07-23T10:06:40.8152170Z   --> backend/app/routes/auth.py:25:5\n\
                   lint\tRuff lint + format (changed Python only)\t2026-07-23T10:06:40.8152592Z    |\n";
        let lints = parse(log);
        assert_eq!(
            places(&lints),
            [(LintTool::Ruff, "backend/app/routes/auth.py", 25, "F401")]
        );
        assert_eq!(
            lints[0].message,
            "`app.services.auth.decode_access_token` imported but unused"
        );
    }

    #[test]
    fn other_output_is_no_lint() {
        // pytest's crash locations, Python warnings, rustc errors, prose.
        let text = "tests/test_main.py:15: AssertionError\n\
                    /x/structures.py:324: PytestUnknownMarkWarning: Unknown pytest.mark.usefixture\n\
                    tests/test_x.py:8: in <module>\n\
                    error[E0308]: mismatched types\n --> src/lib.rs:3:5\n\
                    See https://example.com:8080/a for details\n\
                    Time: 12:30: done\n\
                    README.md\n  note: nothing\n";
        assert_eq!(parse(text), vec![]);
        // An `E501`-looking word after a location that is no location.
        assert_eq!(parse("at 3: E501 something\n"), vec![]);
        assert_eq!(parse(""), vec![]);
    }

    #[test]
    fn tslint_checkstyle_and_go_linters_are_read() {
        // Lines as they stand in real Travis logs of microsoft/TypeScript, connectbot and
        // go-ethereum (tests/fixtures/ci-logs/heldout-*), and tslint's older format.
        let text = "ERROR: /home/travis/build/microsoft/TypeScript/src/compiler/checker.ts:20269:48 boolean-trivia Tag \
                    argument with parameter name\n\
                    WARNING: src/a.ts:3:1 no-console Calls to 'console.log' are not allowed.\n\
                    ERROR: src/old.ts[12, 5]: missing semicolon\n\
                    [ant:checkstyle] /home/travis/build/connectbot/connectbot/app/src/main/java/org/connectbot/service/\
                    TerminalKeyListener.java:604: Line has leading space characters; indentation should be performed \
                    with tabs only.\n\
                    [ERROR] /w/src/main/java/A.java:7:3: Missing a Javadoc comment. [JavadocMethod]\n\
                    [WARN] /w/src/main/java/A.java:9:1: Line is longer than 100 characters. [LineLength]\n\
                    eth/config.go:1::warning: file is not goimported (goimports)\n\
                    eth/config.go:1::warning: file is not gofmted with -s (gofmt)\n";
        let lints = parse(text);
        let found = places(&lints);
        assert_eq!(
            found,
            [
                (
                    LintTool::Tslint,
                    "/home/travis/build/microsoft/TypeScript/src/compiler/checker.ts",
                    20269,
                    "boolean-trivia"
                ),
                (LintTool::Tslint, "src/old.ts", 12, ""),
                (
                    LintTool::Checkstyle,
                    "/home/travis/build/connectbot/connectbot/app/src/main/java/org/connectbot/service/TerminalKeyListener.java",
                    604,
                    ""
                ),
                (LintTool::Checkstyle, "/w/src/main/java/A.java", 7, "JavadocMethod"),
                (LintTool::GoLinter, "eth/config.go", 1, "goimports"),
                (LintTool::GoLinter, "eth/config.go", 1, "gofmt"),
            ]
        );
    }
}
