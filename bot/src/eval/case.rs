//! Evaluation cases: the YAML files a suite is made of, parsed at the edge into typed [`Case`]s
//! with their paths resolved against the file that names them.
//!
//! A suite is one YAML file (a list of cases) or a directory whose own `*.yaml`/`*.yml` files are
//! read in name order. Unknown keys are errors: a misspelt `fail_to_pas`
//! must not quietly make a case easier.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The largest case file read: suites are text written by people.
const MAX_CASE_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// How long a check may run unless the case says.
const DEFAULT_CHECK_TIMEOUT_SECS: u64 = 600;

/// One task for the agent and how its success is decided.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Case {
    /// Unique in its suite: letters, digits, `.`, `_` and `-`.
    pub id: String,
    pub repo: RepoSource,
    /// The commit the case starts from (a git repository only); its `HEAD` when `None`.
    pub commit: Option<String>,
    pub task: String,
    /// The sandbox image; the configuration's otherwise.
    pub image: Option<String>,
    /// Run once in the case's sandbox before the agent (with the network when the configuration
    /// gives setup scripts one); a failure makes the case an error.
    pub setup: Option<String>,
    pub check: Check,
    /// A patch (`git apply`) that solves the case, for `pitcrew eval check-cases`.
    pub reference: Option<PathBuf>,
    pub expect: Expect,
    pub budget: Budget,
    pub tags: Vec<String>,
    /// The file the case came from.
    pub file: PathBuf,
}

/// Where a case's repository comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "at", rename_all = "snake_case")]
pub enum RepoSource {
    /// A directory: a git repository is cloned at the case's commit; a plain directory is copied
    /// and committed as the case's starting point.
    Path(PathBuf),
    /// A URL `git clone` understands; the case must name its commit.
    Url(String),
}

/// How success is decided, after the agent stops.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// A directory copied over the working tree first (hidden tests the agent never saw).
    pub files: Option<PathBuf>,
    /// The command, in the case's sandbox at the working copy's root; exit 0 is needed to pass.
    pub run: String,
    /// Tests that must fail before (checked by `check-cases`) and pass after.
    pub fail_to_pass: Vec<String>,
    /// Tests that must keep passing.
    pub pass_to_pass: Vec<String>,
    pub timeout_secs: u64,
}

/// Soft expectations: reported, never pass or fail.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub max_steps: Option<u32>,
    #[serde(default)]
    pub tools_used: Vec<String>,
}

/// The case's budgets; each narrows the configuration's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    pub max_steps: Option<u32>,
    pub max_cost_usd: Option<f64>,
    pub max_wall_time_secs: Option<u64>,
}

/// Why a suite could not be read; every message names the file (and the case).
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: larger than {MAX_CASE_FILE_BYTES} bytes", path.display())]
    TooLarge { path: PathBuf },
    #[error("{}: {message}", path.display())]
    Syntax { path: PathBuf, message: String },
    #[error("{}: case `{id}`: {message}", path.display())]
    Invalid { path: PathBuf, id: String, message: String },
    #[error("{}: no cases", path.display())]
    Empty { path: PathBuf },
}

/// A case as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    id: String,
    repo: String,
    commit: Option<String>,
    task: String,
    image: Option<String>,
    setup: Option<String>,
    check: RawCheck,
    reference: Option<String>,
    #[serde(default)]
    expect: Expect,
    #[serde(default)]
    budget: Budget,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCheck {
    files: Option<String>,
    run: String,
    #[serde(default)]
    fail_to_pass: Vec<String>,
    #[serde(default)]
    pass_to_pass: Vec<String>,
    timeout_secs: Option<u64>,
}

/// Reads the suites at `paths` (files or directories), in order; case ids must be unique across
/// all of them.
pub fn load_suites(paths: &[PathBuf]) -> Result<Vec<Case>, CaseError> {
    let mut cases = Vec::new();
    for path in paths {
        for file in suite_files(path)? {
            cases.extend(load_file(&file)?);
        }
    }
    let mut seen = BTreeSet::new();
    for case in &cases {
        if !seen.insert(case.id.as_str()) {
            return Err(CaseError::Invalid {
                path: case.file.clone(),
                id: case.id.clone(),
                message: "another case has the same id".to_owned(),
            });
        }
    }
    Ok(cases)
}

/// The case files of a suite: the file itself, or a directory's own YAML files in name order (not
/// its subdirectories', which hold the cases' projects and their files).
fn suite_files(path: &Path) -> Result<Vec<PathBuf>, CaseError> {
    let read = |path: &Path, source| CaseError::Read {
        path: path.to_owned(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(|source| read(path, source))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(|source| read(path, source))? {
        let entry = entry.map_err(|source| read(path, source))?;
        let file = entry.path();
        let kind = entry.file_type().map_err(|source| read(&file, source))?;
        if kind.is_file()
            && file
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
        {
            files.push(file);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(CaseError::Empty { path: path.to_owned() });
    }
    Ok(files)
}

/// Reads one case file.
pub fn load_file(path: &Path) -> Result<Vec<Case>, CaseError> {
    let read = |source| CaseError::Read {
        path: path.to_owned(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(read)?;
    if meta.len() > MAX_CASE_FILE_BYTES {
        return Err(CaseError::TooLarge { path: path.to_owned() });
    }
    let text = std::fs::read_to_string(path).map_err(read)?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse(&text, path, base)
}

/// Parses the text of a case file found at `path`; relative paths in it are against `base`.
pub fn parse(text: &str, path: &Path, base: &Path) -> Result<Vec<Case>, CaseError> {
    let raw: Vec<RawCase> = serde_saphyr::from_str(text).map_err(|error| CaseError::Syntax {
        path: path.to_owned(),
        message: error.to_string(),
    })?;
    if raw.is_empty() {
        return Err(CaseError::Empty { path: path.to_owned() });
    }
    raw.into_iter().map(|case| resolve(case, path, base)).collect()
}

fn resolve(raw: RawCase, path: &Path, base: &Path) -> Result<Case, CaseError> {
    let invalid = |message: String| CaseError::Invalid {
        path: path.to_owned(),
        id: raw.id.clone(),
        message,
    };
    if raw.id.is_empty()
        || raw.id.len() > 100
        || !raw
            .id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        || raw.id.starts_with('.')
    {
        return Err(invalid(
            "an id is 1 to 100 letters, digits, `.`, `_` or `-`, not starting with `.`".to_owned(),
        ));
    }
    if raw.task.trim().is_empty() {
        return Err(invalid("`task` is empty".to_owned()));
    }
    if raw.check.run.trim().is_empty() {
        return Err(invalid("`check.run` is empty".to_owned()));
    }
    let repo = if looks_like_url(&raw.repo) {
        if raw.commit.is_none() {
            return Err(invalid(
                "a repository given by URL needs a `commit`: a branch moves, and the case with it".to_owned(),
            ));
        }
        RepoSource::Url(raw.repo.clone())
    } else {
        RepoSource::Path(base.join(&raw.repo))
    };
    if let Some(commit) = &raw.commit
        && (commit.len() < 4 || commit.len() > 64 || !commit.chars().all(|c| c.is_ascii_hexdigit()))
    {
        return Err(invalid(format!(
            "`commit` {commit:?} is not a commit id (4 to 64 hex digits)"
        )));
    }
    for test in raw.check.fail_to_pass.iter().chain(&raw.check.pass_to_pass) {
        if test.trim().is_empty() {
            return Err(invalid(
                "an empty test name in `fail_to_pass` or `pass_to_pass`".to_owned(),
            ));
        }
    }
    if raw.budget.max_cost_usd.is_some_and(|c| !(c.is_finite() && c > 0.0)) {
        return Err(invalid("`budget.max_cost_usd` must be a positive number".to_owned()));
    }
    if raw.budget.max_steps == Some(0) || raw.budget.max_wall_time_secs == Some(0) {
        return Err(invalid("a budget of zero runs nothing".to_owned()));
    }
    Ok(Case {
        repo,
        commit: raw.commit,
        task: raw.task,
        image: raw.image,
        setup: raw.setup.filter(|s| !s.trim().is_empty()),
        check: Check {
            files: raw.check.files.map(|f| base.join(f)),
            run: raw.check.run,
            fail_to_pass: raw.check.fail_to_pass,
            pass_to_pass: raw.check.pass_to_pass,
            timeout_secs: raw.check.timeout_secs.unwrap_or(DEFAULT_CHECK_TIMEOUT_SECS).max(1),
        },
        reference: raw.reference.map(|r| base.join(r)),
        expect: raw.expect,
        budget: raw.budget,
        tags: raw.tags,
        file: path.to_owned(),
        id: raw.id,
    })
}

fn looks_like_url(repo: &str) -> bool {
    repo.contains("://") || (repo.starts_with("git@") && repo.contains(':'))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
- id: calc-add-sign
  repo: ./fixtures/calc
  commit: 3f2a1c0
  task: "add() returns a - b; make it return the sum and keep the tests passing"
  image: python:3.12
  setup: "pip install -e ."
  check:
    files: ./checks/calc/
    run: "python -m pytest -q tests/test_add_hidden.py"
    fail_to_pass: [tests/test_add_hidden.py::test_sum]
    pass_to_pass: [tests/test_calc.py]
  expect:
    max_steps: 20
    tools_used: [run_tests]
  budget: { max_steps: 40, max_cost_usd: 0.5 }
  tags: [python, bugfix, easy]
- id: remote
  repo: https://example.com/a/b.git
  commit: 0123abcd
  task: fix it
  check: { run: make test }
"#;

    #[test]
    fn the_documented_example_parses_with_paths_against_its_file() {
        let cases = parse(EXAMPLE, Path::new("suite/cases.yaml"), Path::new("suite")).unwrap();
        assert_eq!(cases.len(), 2);
        let case = &cases[0];
        assert_eq!(case.id, "calc-add-sign");
        assert_eq!(case.repo, RepoSource::Path(PathBuf::from("suite/./fixtures/calc")));
        assert_eq!(case.commit.as_deref(), Some("3f2a1c0"));
        assert_eq!(case.image.as_deref(), Some("python:3.12"));
        assert_eq!(case.check.files, Some(PathBuf::from("suite/./checks/calc/")));
        assert_eq!(case.check.fail_to_pass, ["tests/test_add_hidden.py::test_sum"]);
        assert_eq!(case.check.pass_to_pass, ["tests/test_calc.py"]);
        assert_eq!(case.check.timeout_secs, DEFAULT_CHECK_TIMEOUT_SECS);
        assert_eq!(case.expect.max_steps, Some(20));
        assert_eq!(case.expect.tools_used, ["run_tests"]);
        assert_eq!(case.budget.max_steps, Some(40));
        assert_eq!(case.budget.max_cost_usd, Some(0.5));
        assert_eq!(case.tags, ["python", "bugfix", "easy"]);
        assert_eq!(cases[1].repo, RepoSource::Url("https://example.com/a/b.git".to_owned()));
        assert!(cases[1].tags.is_empty());
    }

    #[test]
    fn mistakes_are_refused_with_the_file_and_the_case() {
        let err = |text: &str| {
            parse(text, Path::new("s.yaml"), Path::new("."))
                .unwrap_err()
                .to_string()
        };
        let misspelt = err("- {id: a, repo: r, task: t, check: {run: x, fail_to_pas: [y]}}");
        assert!(
            misspelt.starts_with("s.yaml: ") && misspelt.contains("fail_to_pas"),
            "{misspelt}"
        );
        assert_eq!(
            err("- {id: 'a b', repo: r, task: t, check: {run: x}}"),
            "s.yaml: case `a b`: an id is 1 to 100 letters, digits, `.`, `_` or `-`, not starting with `.`"
        );
        assert_eq!(
            err("- {id: a, repo: 'https://x/y.git', task: t, check: {run: x}}"),
            "s.yaml: case `a`: a repository given by URL needs a `commit`: a branch moves, and the case with it"
        );
        assert_eq!(
            err("- {id: a, repo: r, task: ' ', check: {run: x}}"),
            "s.yaml: case `a`: `task` is empty"
        );
        assert_eq!(err("[]"), "s.yaml: no cases");
        assert_eq!(
            err("- {id: a, repo: r, commit: main, task: t, check: {run: x}}"),
            "s.yaml: case `a`: `commit` \"main\" is not a commit id (4 to 64 hex digits)"
        );
    }

    #[test]
    fn a_directory_is_a_suite_of_its_yaml_files_and_ids_are_unique_across_suites() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("project")).unwrap();
        std::fs::write(dir.path().join("project/ci.yaml"), "not: a case").unwrap();
        std::fs::write(
            dir.path().join("b.yaml"),
            "- {id: b, repo: r, task: t, check: {run: x}}",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("a.yml"),
            "- {id: a, repo: r, task: t, check: {run: x}}\n- {id: c, repo: r, task: t, check: {run: x}}",
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.md"), "not a case").unwrap();
        let cases = load_suites(&[dir.path().to_owned()]).unwrap();
        let ids: Vec<_> = cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "c", "b"]);
        assert_eq!(cases[0].repo, RepoSource::Path(dir.path().join("r")));
        let twice = load_suites(&[dir.path().to_owned(), dir.path().join("b.yaml")])
            .unwrap_err()
            .to_string();
        assert!(twice.ends_with("case `b`: another case has the same id"), "{twice}");
    }
}
