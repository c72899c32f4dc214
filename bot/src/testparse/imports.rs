//! Python import errors in test output: what the tests needed and could not import, which is no
//! failing test. pytest's collection errors (an `ERROR collecting tests/test_x.py` section opened
//! by `ImportError while importing test module '…'`, its `E   ` line the error), a `conftest.py`
//! pytest could not load (`ImportError while loading conftest '…'`: no test runs at all),
//! unittest's `ImportError: Failed to import test module: x` followed by its traceback, and the
//! interpreter's own `python3: No module named pytest` when the runner itself is not installed.

use super::text::strip_ansi;

/// What the tests could not import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportError {
    /// What failed to import it: the test module (`tests/test_x.py` as pytest's section names it,
    /// `tests.test_x` as unittest does), the conftest (as pytest prints it), or the module run with
    /// `python -m` (`pytest`) when that is what is missing.
    pub importer: String,
    pub kind: ImportKind,
    /// The module not found (`No module named 'requests'`: `requests`), when that is the error.
    pub missing: Option<String>,
    /// The error line: `ModuleNotFoundError: No module named 'requests'`, `ImportError: cannot
    /// import name 'x' from 'y' (…)`.
    pub message: String,
}

/// Where the import failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportKind {
    /// A test module: its tests did not run.
    TestModule,
    /// A `conftest.py`: pytest stopped before collecting anything.
    Conftest,
    /// The test runner itself (`python3 -m pytest` without pytest installed).
    Runner,
}

/// Lines searched below a conftest's or unittest's header for the error line.
const ERROR_WITHIN: usize = 40;

/// Every import error of `output`, in order, each once.
pub fn import_errors(output: &str) -> Vec<ImportError> {
    let text = strip_ansi(output);
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<ImportError> = Vec::new();
    // The test module of the `ERROR collecting` section being read.
    let mut collecting: Option<&str> = None;
    for (i, line) in lines.iter().enumerate() {
        let below = &lines[i + 1..];
        if let Some(head) = collecting_header(line) {
            collecting = Some(head);
            continue;
        }
        if is_section_end(line) {
            collecting = None;
        }
        let found = if let Some(path) = quoted_after(line, "ImportError while importing test module ") {
            // Named as the section does (relative to the root), else as this line does.
            let importer = collecting.unwrap_or(path);
            pytest_error(below).map(|message| error(importer, ImportKind::TestModule, message))
        } else if let Some(path) = quoted_after(line, "ImportError while loading conftest ") {
            pytest_error(below).map(|message| error(path, ImportKind::Conftest, message))
        } else if let Some(module) = line.strip_prefix("ImportError: Failed to import test module: ") {
            traceback_error(below).map(|message| error(module.trim(), ImportKind::TestModule, message))
        } else {
            runner_missing(line)
        };
        if let Some(found) = found
            && !out.contains(&found)
        {
            out.push(found);
        }
    }
    out
}

fn error(importer: &str, kind: ImportKind, message: &str) -> ImportError {
    ImportError {
        importer: importer.to_owned(),
        kind,
        missing: missing_module(message),
        message: message.to_owned(),
    }
}

/// `____ ERROR collecting tests/test_x.py ____`: the module's path.
fn collecting_header(line: &str) -> Option<&str> {
    let inner = line.strip_prefix('_')?.trim_start_matches('_');
    let inner = inner.strip_suffix('_')?.trim_end_matches('_');
    inner.trim().strip_prefix("ERROR collecting ").map(str::trim)
}

/// The end of a pytest section: another section, a banner, the short summary.
fn is_section_end(line: &str) -> bool {
    (line.starts_with("__") && line.ends_with("__")) || line.starts_with("==") || line.starts_with("!!")
}

/// `ImportError while importing test module '/w/tests/test_x.py'.` → `/w/tests/test_x.py`.
fn quoted_after<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = line.trim_start().strip_prefix(prefix)?;
    let rest = rest.strip_prefix('\'')?;
    let end = rest.rfind('\'')?;
    Some(&rest[..end])
}

/// The first `E   ` line below a pytest header that names an import error (else the first `E   `
/// line), up to the section's end.
fn pytest_error<'a>(below: &[&'a str]) -> Option<&'a str> {
    let mut first = None;
    for line in below.iter().take(ERROR_WITHIN) {
        if is_section_end(line) {
            break;
        }
        let Some(error) = line.strip_prefix("E ").map(str::trim) else {
            continue;
        };
        if is_import_error_line(error) {
            return Some(error);
        }
        first = first.or(Some(error));
    }
    first
}

/// The exception line ending the traceback below unittest's header.
fn traceback_error<'a>(below: &[&'a str]) -> Option<&'a str> {
    below
        .iter()
        .take(ERROR_WITHIN)
        .take_while(|line| !line.starts_with("-----") && !line.starts_with("====="))
        .map(|line| line.trim_end())
        .find(|line| !line.starts_with(char::is_whitespace) && is_import_error_line(line))
}

fn is_import_error_line(line: &str) -> bool {
    line.starts_with("ModuleNotFoundError: ") || line.starts_with("ImportError: ")
}

/// `/usr/bin/python3: No module named pytest`: the interpreter could not find the module it was
/// asked to run.
fn runner_missing(line: &str) -> Option<ImportError> {
    let (program, module) = line.trim_end().split_once(": No module named ")?;
    let name = program.rsplit('/').next()?;
    let python = name
        .strip_prefix("python")
        .is_some_and(|version| version.chars().all(|c| c.is_ascii_digit() || c == '.'));
    let plain = !module.is_empty() && module.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    (python && plain).then(|| ImportError {
        importer: module.to_owned(),
        kind: ImportKind::Runner,
        missing: Some(module.to_owned()),
        message: format!("No module named {module}"),
    })
}

/// `No module named 'a.b'` → `a.b`.
fn missing_module(message: &str) -> Option<String> {
    let (_, rest) = message.split_once("No module named ")?;
    let name = rest.trim().trim_matches(|c| c == '\'' || c == '"');
    (!name.is_empty()).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(String, ImportKind, Option<String>, String)> {
        import_errors(text)
            .into_iter()
            .map(|e| (e.importer, e.kind, e.missing, e.message))
            .collect()
    }

    fn one(
        importer: &str,
        kind: ImportKind,
        missing: Option<&str>,
        message: &str,
    ) -> (String, ImportKind, Option<String>, String) {
        (importer.into(), kind, missing.map(str::to_owned), message.into())
    }

    #[test]
    fn pytest_collection_errors_name_the_module_as_its_section_does() {
        assert_eq!(
            found(include_str!("samples/pytest_import_errors.txt")),
            [
                one(
                    "tests/test_name.py",
                    ImportKind::TestModule,
                    None,
                    "ImportError: cannot import name 'not_there' from 'json' \
                     (/root/.pyenv/versions/3.11.7/lib/python3.11/json/__init__.py)"
                ),
                one(
                    "tests/test_needs.py",
                    ImportKind::TestModule,
                    Some("requests_mock_missing"),
                    "ModuleNotFoundError: No module named 'requests_mock_missing'"
                ),
            ]
        );
        assert_eq!(
            found(include_str!("samples/pytest_collection_error.txt")),
            [one(
                "tests/test_broken.py",
                ImportKind::TestModule,
                Some("not_a_module"),
                "ModuleNotFoundError: No module named 'not_a_module'"
            )]
        );
    }

    #[test]
    fn a_conftest_that_cannot_be_loaded_is_an_import_error() {
        assert_eq!(
            found(include_str!("samples/pytest_conftest_import_error.txt")),
            [one(
                "/tmp/tp/pyproj/tests/conftest.py",
                ImportKind::Conftest,
                Some("hypothesis_missing_mod"),
                "ModuleNotFoundError: No module named 'hypothesis_missing_mod'"
            )]
        );
        // The same on Windows, as mozilla/bugbug#602 shows it (pytest 4).
        let windows = "ImportError while loading conftest 'E:\\p\\bugbug\\tests\\conftest.py'.\n\
                       tests\\conftest.py:11: in <module>\n    from bugbug import bugzilla\n\
                       E   ModuleNotFoundError: No module named 'bugbug'\n";
        assert_eq!(
            found(windows),
            [one(
                "E:\\p\\bugbug\\tests\\conftest.py",
                ImportKind::Conftest,
                Some("bugbug"),
                "ModuleNotFoundError: No module named 'bugbug'"
            )]
        );
    }

    #[test]
    fn a_missing_runner_and_unittest_s_failed_imports_are_import_errors() {
        assert_eq!(
            found(include_str!("samples/python_no_module.txt")),
            [one(
                "pytest",
                ImportKind::Runner,
                Some("pytest"),
                "No module named pytest"
            )]
        );
        assert_eq!(
            found(include_str!("samples/unittest_import_error.txt")),
            [one(
                "tests.test_u",
                ImportKind::TestModule,
                Some("missing_dep_for_unittest"),
                "ModuleNotFoundError: No module named 'missing_dep_for_unittest'"
            )]
        );
    }

    #[test]
    fn other_failures_are_no_import_errors() {
        for sample in [
            include_str!("samples/pytest_default.txt"),
            include_str!("samples/pytest_collection_syntax_error.txt"),
            include_str!("samples/python_traceback.txt"),
            include_str!("samples/cargo_test_build_error.txt"),
        ] {
            assert_eq!(found(sample), [], "{sample}");
        }
        // Said in passing, not by the interpreter.
        assert_eq!(found("note: No module named foo\nmypython: No module named x\n"), []);
    }
}
