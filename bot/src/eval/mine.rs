//! `pitcrew eval mine`: proposes cases from a repository's own history — commits that change both
//! code and tests, whose new tests fail on the parent and pass on the commit.
//!
//! For each candidate (first-parent history from `HEAD`, newest first, merges left out) two
//! standalone working copies are made with git2: the parent with the commit's test files copied
//! over it, and the commit itself. The test command runs on each in the configured sandbox; the
//! commit becomes a case when the first fails and the second passes. Everything else about a
//! candidate (its tests already pass, its own tests fail, a timeout, a sandbox that failed) is a
//! skip with its reason, never the end of the run: only a bad repository, suite directory or
//! configuration ends it.
//!
//! The suite is written as it grows: `cases.yaml` (one entry appended per case, every string a
//! JSON-quoted scalar, which YAML reads as a double-quoted one), `checks/<id>/` (the commit's test
//! files at their paths) and `references/<id>.patch` (the commit's change to everything else).
//!
//! The task text is the commit message. The pull request or issue a commit closes would often say
//! more, but needs GitHub access: left out for now.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use git2::{Delta, DiffFormat, DiffOptions, ObjectType, Oid, Repository, Sort};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::config::repo::{EffectiveSettings, REPO_CONFIG_PATH, RepoConfig};
use crate::prompts::Prompts;
use crate::sandbox::{ExecOutput, ExecRequest};
use crate::session::{AgentRun, AgentSession, image};
use crate::workspace::{self, LocalRepo, WorkspaceError};

/// How long the test command may run on one working copy unless the caller says.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// The longest case id written.
const MAX_ID_CHARS: usize = 60;
/// Bytes kept of each of the test command's stdout and stderr, head and tail: enough for the
/// failures of a large suite to be parsed.
const OUTPUT_LIMIT: usize = 1024 * 1024;
/// The largest `.github/pitcrew.toml` read for the test command.
const MAX_REPO_CONFIG_BYTES: usize = 256 * 1024;
/// Directories whose files are tests, whatever their names.
const TEST_DIRS: &[&str] = &["test", "tests", "__tests__", "spec"];
/// Extensions of source files: a change to anything else (docs, configuration, data) is not code.
const CODE_EXTENSIONS: &[&str] = &[
    "rs", "py", "pyi", "js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts", "go", "java", "kt", "kts", "scala",
    "groovy", "c", "h", "cc", "cpp", "cxx", "hh", "hpp", "hxx", "cs", "fs", "rb", "php", "swift", "m", "mm", "sh",
    "bash", "zsh", "lua", "ex", "exs", "erl", "hrl", "hs", "ml", "mli", "clj", "cljs", "dart", "zig", "jl", "pl", "pm",
    "r", "vue", "svelte", "nim", "cr", "v", "sql",
];

/// What `pitcrew eval mine` is asked to do.
pub struct MineOptions {
    /// The repository (any path inside its working tree).
    pub repo: PathBuf,
    /// Only commits made on or after this day (in the committer's time zone); the walk stops at
    /// the first older one.
    pub since: Option<jiff::civil::Date>,
    /// Cases to propose at most.
    pub max: usize,
    /// The suite directory written (created if missing): its `cases.yaml` must not hold cases yet.
    pub out: PathBuf,
    /// The command that runs the tests; else the repository's `[agent] test_command` (its
    /// `.github/pitcrew.toml` at `HEAD`); else the run fails asking for one.
    pub test_command: Option<String>,
    /// How long the test command may run on one working copy ([`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
    pub config: Config,
    pub prompts: Prompts,
    /// Stops the run between commands; what was proposed so far stays written and is returned.
    pub cancel: CancellationToken,
}

/// What a run found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mined {
    /// The ids of the cases written, newest commit first.
    pub proposed: Vec<String>,
    /// Commits looked at (merges are not).
    pub considered: usize,
    /// Candidates not proposed: `(short sha, why)`, newest first.
    pub skipped: Vec<(String, String)>,
}

/// Why a run could not be made at all; a candidate's trouble is a skip instead.
#[derive(Debug, thiserror::Error)]
pub enum MineError {
    #[error(transparent)]
    Repository(#[from] WorkspaceError),
    #[error("could not read the history of {}: {source}", path.display())]
    History { path: PathBuf, source: git2::Error },
    #[error("{}: {source}", path.display())]
    Out { path: PathBuf, source: std::io::Error },
    #[error("{} already holds cases; mine into a new suite directory, or empty the file first", path.display())]
    OutNotEmpty { path: PathBuf },
    #[error("{} is not valid UTF-8, which a case file cannot name", path.display())]
    NotUtf8 { path: PathBuf },
    #[error(
        "no test command: the repository names none (`[agent] test_command` in {REPO_CONFIG_PATH}); pass --test-command"
    )]
    NoTestCommand,
}

/// What a changed path is, for deciding whether a commit is a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Test,
    Code,
    Other,
}

/// A test file as the commit leaves it: its content and mode, or `None` when the commit deletes it.
#[derive(Debug, Clone)]
struct TestFile {
    path: String,
    content: Option<(Vec<u8>, i32)>,
}

/// A commit that changes both code and tests, with what the suite needs of it.
#[derive(Debug, Clone)]
struct Candidate {
    commit: Oid,
    parent: Oid,
    short: String,
    subject: String,
    /// Subject and body.
    message: String,
    tests: Vec<TestFile>,
    /// The commit's change to its non-test files, as `git apply` reads it.
    reference: Vec<u8>,
}

/// A commit looked at.
enum Inspected {
    Candidate(Box<Candidate>),
    /// `(short sha, subject, why not)`.
    NotCandidate(String, String, &'static str),
}

/// What the two runs said about a candidate that becomes a case.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Verdict {
    fail_to_pass: Vec<String>,
    pass_to_pass: Vec<String>,
}

/// What every test run of the walk shares.
struct Runner<'a> {
    config: &'a Config,
    settings: &'a EffectiveSettings,
    prompts: &'a Prompts,
    command: &'a str,
    timeout: Duration,
    cancel: &'a CancellationToken,
}

/// Walks the history of `options.repo` and writes the cases found into `options.out`; `progress`
/// gets one line per commit looked at.
pub async fn mine(options: MineOptions, progress: &dyn Fn(&str)) -> Result<Mined, MineError> {
    let repo = LocalRepo::open(&options.repo)?;
    let root = repo.root().to_owned();
    let mut repo_config = image::checkout_config(&root);
    repo_config.agent.test_command = configured_test_command(repo.raw());
    let settings = repo_config.apply(&options.config);
    let command = options
        .test_command
        .clone()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| settings.test_command.clone())
        .ok_or(MineError::NoTestCommand)?;
    let suite = Suite::prepare(&options.out, &root)?;
    let runner = Runner {
        config: &options.config,
        settings: &settings,
        prompts: &options.prompts,
        command: &command,
        timeout: options.timeout,
        cancel: &options.cancel,
    };

    let history = |source| MineError::History {
        path: root.clone(),
        source,
    };
    let commits = first_parent_history(repo.raw(), options.since).map_err(history)?;
    let git_dir = repo.git_dir().to_owned();
    let mut mined = Mined::default();
    for oid in commits {
        if mined.proposed.len() >= options.max || options.cancel.is_cancelled() {
            break;
        }
        mined.considered += 1;
        let candidate = match inspect(repo.raw(), oid) {
            Ok(Inspected::Candidate(candidate)) => candidate,
            Ok(Inspected::NotCandidate(short, subject, why)) => {
                progress(&format!("{short} {subject}: not a candidate ({why})"));
                continue;
            }
            Err(error) => {
                let short = short_sha(oid);
                progress(&format!("{short}: skipped: {error}"));
                mined
                    .skipped
                    .push((short, format!("could not read the commit: {error}")));
                continue;
            }
        };
        let line = format!("{} {}", candidate.short, candidate.subject);
        let id = case_id(&candidate.short, &candidate.subject);
        let outcome = if suite.taken(&id) {
            Err(format!(
                "the suite already has `checks/{id}` or `references/{id}.patch`"
            ))
        } else {
            try_candidate(&runner, &git_dir, &candidate).await
        };
        match outcome {
            Ok(verdict) => {
                suite.write(&id, &candidate, &command, &verdict)?;
                progress(&format!("{line}: proposed as {id}"));
                mined.proposed.push(id);
            }
            // A run cut short by cancellation says nothing about the commit.
            Err(_) if options.cancel.is_cancelled() => break,
            Err(why) => {
                progress(&format!("{line}: skipped: {why}"));
                mined.skipped.push((candidate.short.clone(), why));
            }
        }
    }
    Ok(mined)
}

/// Runs the test command on the parent with the commit's tests, then on the commit; the verdict
/// when the first fails and the second passes, else why not.
async fn try_candidate(runner: &Runner<'_>, git_dir: &Path, candidate: &Candidate) -> Result<Verdict, String> {
    let scratch = tempfile::Builder::new()
        .prefix("pitcrew-mine-")
        .tempdir()
        .map_err(|e| format!("could not make a temporary directory: {e}"))?;

    let before = scratch.path().join("parent");
    let tests = candidate.tests.clone();
    working_copy(git_dir, candidate.parent, &before, tests).await?;
    let sandbox_id = format!("mine-{}-parent-{:04x}", candidate.short, fastrand::u16(..));
    let output = runner
        .run(&before, scratch.path().join("run-parent"), sandbox_id)
        .await?;
    if output.timed_out {
        return Err(format!(
            "the test command timed out after {}s on the parent with the commit's tests",
            runner.timeout.as_secs()
        ));
    }
    match output.exit_code {
        Some(0) => return Err("the tests already pass on the parent with the commit's tests".to_owned()),
        Some(_) => {}
        None => return Err("the test command was killed on the parent with the commit's tests".to_owned()),
    }
    let verdict = verdict(&output, &candidate.tests);

    let after = scratch.path().join("commit");
    working_copy(git_dir, candidate.commit, &after, Vec::new()).await?;
    let sandbox_id = format!("mine-{}-commit-{:04x}", candidate.short, fastrand::u16(..));
    let output = runner
        .run(&after, scratch.path().join("run-commit"), sandbox_id)
        .await?;
    if output.timed_out {
        return Err(format!(
            "the test command timed out after {}s on the commit",
            runner.timeout.as_secs()
        ));
    }
    match output.exit_code {
        Some(0) => Ok(verdict),
        Some(code) => Err(format!("the commit's own tests fail (exit {code})")),
        None => Err("the test command was killed on the commit".to_owned()),
    }
}

impl Runner<'_> {
    /// Runs the test command once in a sandbox of its own over `root`, which is always stopped.
    async fn run(&self, root: &Path, run_dir: PathBuf, sandbox_id: String) -> Result<ExecOutput, String> {
        let session = AgentSession::start(AgentRun {
            config: self.config,
            settings: self.settings,
            prompts: self.prompts,
            model: None,
            sandbox_id,
            root: root.to_owned(),
            run_dir,
            network_step: None,
            index: None,
            cancel: self.cancel.clone(),
        })
        .await
        .map_err(|e| format!("the sandbox failed to start: {e}"))?;
        let mut request = ExecRequest::new(self.command, self.timeout);
        request.output_limit = OUTPUT_LIMIT;
        let output = tokio::select! {
            output = session.ctx.sandbox.exec(request) => output.map_err(|e| format!("the sandbox failed: {e}")),
            () = self.cancel.cancelled() => Err("cancelled".to_owned()),
        };
        // A failure to stop is logged by `stop`; the command's result stands.
        let _ = session.stop().await;
        output
    }
}

/// The cases a failing run on the parent names: the failures the output shows (or, when it shows
/// none that can be read, the commit's test files), and the commit's other test files as tests
/// that must keep passing — when every failure can be placed in a file; otherwise none.
fn verdict(output: &ExecOutput, tests: &[TestFile]) -> Verdict {
    let present: Vec<&str> = tests
        .iter()
        .filter(|t| t.content.is_some())
        .map(|t| t.path.as_str())
        .collect();
    let text = format!("{}\n{}", output.stdout, output.stderr);
    let failures = crate::testparse::parse(&text, None)
        .map(|report| report.failures)
        .unwrap_or_default();
    if failures.is_empty() {
        return Verdict {
            fail_to_pass: present.iter().map(|p| (*p).to_owned()).collect(),
            pass_to_pass: Vec::new(),
        };
    }
    let mut seen = BTreeSet::new();
    let fail_to_pass = failures
        .iter()
        .filter(|f| seen.insert(f.name.as_str()))
        .map(|f| f.name.clone())
        .collect();
    // A file keeps passing only if every failure can be placed in a file: a failure the output
    // names without its file (TAP, `go test`'s bare names) could be in any of them.
    let placed = failures
        .iter()
        .all(|f| f.file.is_some() || present.iter().any(|path| f.name.contains(path)));
    let pass_to_pass = present
        .iter()
        .filter(|_| placed)
        .filter(|path| {
            !failures.iter().any(|f| {
                f.name.contains(*path)
                    || f.file.as_deref().is_some_and(|file| {
                        let (file, path) = (Path::new(file), Path::new(path));
                        file.ends_with(path) || path.ends_with(file)
                    })
            })
        })
        .map(|p| (*p).to_owned())
        .collect();
    Verdict {
        fail_to_pass,
        pass_to_pass,
    }
}

/// The first-parent history from `HEAD`, newest first, without merges, down to `since`.
fn first_parent_history(repo: &Repository, since: Option<jiff::civil::Date>) -> Result<Vec<Oid>, git2::Error> {
    let mut walk = repo.revwalk()?;
    walk.push_head()?;
    walk.simplify_first_parent()?;
    walk.set_sorting(Sort::TOPOLOGICAL)?;
    let mut commits = Vec::new();
    for oid in walk {
        let commit = repo.find_commit(oid?)?;
        if let Some(since) = since
            && commit_date(&commit.committer().when()) < since
        {
            break;
        }
        if commit.parent_count() <= 1 {
            commits.push(commit.id());
        }
    }
    Ok(commits)
}

/// The day of `time` in its own time zone.
fn commit_date(time: &git2::Time) -> jiff::civil::Date {
    let offset =
        jiff::tz::Offset::from_seconds(time.offset_minutes().saturating_mul(60)).unwrap_or(jiff::tz::Offset::UTC);
    let timestamp = jiff::Timestamp::from_second(time.seconds()).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    timestamp.to_zoned(jiff::tz::TimeZone::fixed(offset)).date()
}

/// Whether the commit changes both code and tests, and if so what a case of it needs.
fn inspect(repo: &Repository, oid: Oid) -> Result<Inspected, git2::Error> {
    let commit = repo.find_commit(oid)?;
    let short = commit
        .as_object()
        .short_id()
        .ok()
        .and_then(|buf| buf.as_str().ok().map(str::to_owned))
        .unwrap_or_else(|| short_sha(oid));
    let message = String::from_utf8_lossy(commit.message_bytes()).trim_end().to_owned();
    let subject = message.lines().next().unwrap_or_default().to_owned();
    let not = |why| Ok(Inspected::NotCandidate(short.clone(), subject.clone(), why));
    let Ok(parent) = commit.parent(0) else {
        return not("it has no parent");
    };
    let (old, new) = (parent.tree()?, commit.tree()?);
    let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), None)?;
    let mut tests = Vec::new();
    let mut code = false;
    for delta in diff.deltas() {
        let side = if delta.status() == Delta::Deleted {
            delta.old_file()
        } else {
            delta.new_file()
        };
        let Some(path) = side.path().and_then(Path::to_str) else {
            continue;
        };
        match classify(path) {
            Kind::Test => {
                let content = if delta.status() == Delta::Deleted {
                    None
                } else {
                    let blob = repo.find_blob(delta.new_file().id())?;
                    Some((blob.content().to_vec(), i32::from(delta.new_file().mode())))
                };
                tests.push(TestFile {
                    path: path.to_owned(),
                    content,
                });
            }
            Kind::Code => code = true,
            Kind::Other => {}
        }
    }
    match (code, tests.is_empty()) {
        (false, true) => return not("neither code nor tests changed"),
        (false, false) => return not("no code changed"),
        (true, true) => return not("no tests changed"),
        (true, false) => {}
    }
    let reference = reference_patch(repo, &old, &new)?;
    Ok(Inspected::Candidate(Box::new(Candidate {
        commit: oid,
        parent: parent.id(),
        short,
        subject,
        message,
        tests,
        reference,
    })))
}

/// The change from `old` to `new` of every file that is not a test, as `git diff --binary` prints it.
fn reference_patch(repo: &Repository, old: &git2::Tree<'_>, new: &git2::Tree<'_>) -> Result<Vec<u8>, git2::Error> {
    let mut options = DiffOptions::new();
    options.context_lines(3).show_binary(true);
    let diff = repo.diff_tree_to_tree(Some(old), Some(new), Some(&mut options))?;
    let mut out = Vec::new();
    diff.print(DiffFormat::Patch, |delta, _hunk, line| {
        let path = delta.new_file().path().or_else(|| delta.old_file().path());
        if path.and_then(Path::to_str).is_some_and(|p| classify(p) == Kind::Test) {
            return true;
        }
        // Content lines need their origin put back; headers and markers carry their whole text.
        if matches!(line.origin(), '+' | '-' | ' ') {
            out.push(line.origin() as u8);
        }
        out.extend_from_slice(line.content());
        true
    })?;
    Ok(out)
}

/// Whether `path` (relative, `/`-separated) is a test, code or neither.
fn classify(path: &str) -> Kind {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    if parts
        .iter()
        .any(|dir| TEST_DIRS.contains(&dir.to_ascii_lowercase().as_str()))
    {
        return Kind::Test;
    }
    let js = ["js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts"];
    let js_test = name
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| js.contains(&ext) && (stem.ends_with(".test") || stem.ends_with(".spec")));
    if js_test
        || (name.starts_with("test_") && name.ends_with(".py"))
        || name.ends_with("_test.py")
        || name.ends_with("_test.go")
        || name.ends_with("Test.java")
        || name.ends_with("Tests.java")
        || name.ends_with("Test.kt")
    {
        return Kind::Test;
    }
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && CODE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()) => {
            Kind::Code
        }
        _ => Kind::Other,
    }
}

/// A standalone clone of the repository at `git_dir` (objects copied, not linked: nothing run in
/// the copy can reach the original) in `dir`, detached at `commit`, with `tests` written over it.
async fn working_copy(git_dir: &Path, commit: Oid, dir: &Path, tests: Vec<TestFile>) -> Result<(), String> {
    let (git_dir, dir_owned) = (git_dir.to_owned(), dir.to_owned());
    let made = tokio::task::spawn_blocking(move || -> Result<(), String> {
        clone_at(&git_dir, commit, &dir_owned).map_err(|e| format!("could not make a working copy: {e}"))?;
        overlay(&dir_owned, &tests).map_err(|e| format!("could not write the commit's tests: {e}"))
    })
    .await;
    match made {
        Ok(result) => result,
        Err(error) => Err(format!("could not make a working copy: {error}")),
    }
}

fn clone_at(git_dir: &Path, commit: Oid, dir: &Path) -> Result<(), git2::Error> {
    let source = git_dir
        .to_str()
        .ok_or_else(|| git2::Error::from_str("the repository's path is not UTF-8"))?;
    let mut skip = git2::build::CheckoutBuilder::new();
    skip.dry_run();
    let repo = git2::build::RepoBuilder::new()
        .clone_local(git2::build::CloneLocal::NoLinks)
        .with_checkout(skip)
        .clone(source, dir)?;
    let target = repo.find_commit(commit)?;
    repo.checkout_tree(target.as_object(), Some(git2::build::CheckoutBuilder::new().force()))?;
    repo.set_head_detached(commit)?;
    Ok(())
}

/// Writes `tests` into the working tree at `root`: each file's content and mode, or its removal.
fn overlay(root: &Path, tests: &[TestFile]) -> std::io::Result<()> {
    for test in tests {
        write_file(root, test)?;
    }
    Ok(())
}

fn write_file(root: &Path, test: &TestFile) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = safe_join(root, &test.path)?;
    let Some((content, mode)) = &test.content else {
        return match std::fs::remove_file(&path) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
            _ => Ok(()),
        };
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    // A symbolic link in the tree is written as a link, the way a checkout would.
    if *mode == i32::from(git2::FileMode::Link) {
        let _ = std::fs::remove_file(&path);
        let target = String::from_utf8_lossy(content).into_owned();
        return std::os::unix::fs::symlink(target, &path);
    }
    std::fs::write(&path, content)?;
    if *mode == i32::from(git2::FileMode::BlobExecutable) {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

/// `root` joined with a path from a git tree, which must stay below it.
fn safe_join(root: &Path, path: &str) -> std::io::Result<PathBuf> {
    let relative = Path::new(path);
    if relative.components().all(|c| matches!(c, Component::Normal(_))) {
        Ok(root.join(relative))
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{path:?} leaves the working tree"),
        ))
    }
}

/// The repository's own `[agent] test_command`, from its configuration file at `HEAD`.
fn configured_test_command(repo: &Repository) -> Option<String> {
    let tree = repo.head().ok()?.peel_to_tree().ok()?;
    let entry = tree.get_path(Path::new(REPO_CONFIG_PATH)).ok()?;
    if entry.kind() != Some(ObjectType::Blob) || entry.filemode() == i32::from(git2::FileMode::Link) {
        return None;
    }
    let blob = repo.find_blob(entry.id()).ok()?;
    if blob.size() > MAX_REPO_CONFIG_BYTES {
        return None;
    }
    let text = std::str::from_utf8(blob.content()).ok()?;
    let (config, problems) = RepoConfig::parse_lenient(text);
    for problem in &problems {
        tracing::warn!(%problem, "problem in the repository's configuration");
    }
    config.agent.test_command
}

/// `<short sha>-<slug of the subject>`, at most [`MAX_ID_CHARS`] characters.
fn case_id(short: &str, subject: &str) -> String {
    let room = MAX_ID_CHARS.saturating_sub(short.len() + 1).max(1);
    format!("{short}-{}", workspace::slug(subject, room))
}

fn short_sha(oid: Oid) -> String {
    oid.to_string().chars().take(7).collect()
}

/// The suite directory being written.
struct Suite {
    dir: PathBuf,
    cases: PathBuf,
    /// The repository as the cases name it: relative to the suite when both are on one tree.
    repo: String,
}

impl Suite {
    /// Creates the directory if needed and makes sure its `cases.yaml` holds nothing yet.
    fn prepare(dir: &Path, root: &Path) -> Result<Suite, MineError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| MineError::Out { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let cases = dir.join("cases.yaml");
        match std::fs::metadata(&cases) {
            Ok(meta) if meta.len() > 0 || !meta.is_file() => return Err(MineError::OutNotEmpty { path: cases }),
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(io(&cases)(error)),
        }
        let dir_real = std::fs::canonicalize(dir).map_err(io(dir))?;
        let root_real = std::fs::canonicalize(root).map_err(io(root))?;
        let repo = relative(&dir_real, &root_real).unwrap_or(root_real);
        let repo = repo
            .to_str()
            .ok_or_else(|| MineError::NotUtf8 { path: repo.clone() })?
            .to_owned();
        Ok(Suite {
            dir: dir.to_owned(),
            cases,
            repo,
        })
    }

    /// Whether a case `id` would overwrite files already in the suite (left by an earlier run).
    fn taken(&self, id: &str) -> bool {
        self.dir.join("checks").join(id).exists() || self.dir.join("references").join(format!("{id}.patch")).exists()
    }

    /// Writes the case's check files and reference patch, then appends its entry.
    fn write(&self, id: &str, candidate: &Candidate, command: &str, verdict: &Verdict) -> Result<(), MineError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| MineError::Out { path, source }
        };
        let checks = self.dir.join("checks").join(id);
        for test in candidate.tests.iter().filter(|t| t.content.is_some()) {
            write_file(&checks, test).map_err(io(&checks.join(&test.path)))?;
        }
        let references = self.dir.join("references");
        std::fs::create_dir_all(&references).map_err(io(&references))?;
        let patch = references.join(format!("{id}.patch"));
        std::fs::write(&patch, &candidate.reference).map_err(io(&patch))?;

        let entry = entry(id, &self.repo, candidate, command, verdict);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.cases)
            .map_err(io(&self.cases))?;
        file.write_all(entry.as_bytes()).map_err(io(&self.cases))
    }
}

/// One case as YAML, every string JSON-quoted (a valid YAML double-quoted scalar, whatever it holds).
fn entry(id: &str, repo: &str, candidate: &Candidate, command: &str, verdict: &Verdict) -> String {
    let q = |s: &str| serde_json::Value::String(s.to_owned()).to_string();
    let list = |items: &[String]| {
        let items: Vec<String> = items.iter().map(|s| q(s)).collect();
        format!("[{}]", items.join(", "))
    };
    format!(
        "- id: {id}\n  repo: {repo}\n  commit: {commit}\n  task: {task}\n  check:\n    files: {files}\n    run: {run}\n    \
         fail_to_pass: {f2p}\n    pass_to_pass: {p2p}\n  reference: {reference}\n  tags: [\"mined\"]\n",
        id = q(id),
        repo = q(repo),
        commit = q(&candidate.parent.to_string()),
        task = q(&candidate.message),
        files = q(&format!("checks/{id}")),
        run = q(command),
        f2p = list(&verdict.fail_to_pass),
        p2p = list(&verdict.pass_to_pass),
        reference = q(&format!("references/{id}.patch")),
    )
}

/// `to` as a path relative to `from` (both absolute and canonical); `None` when they share no root.
fn relative(from: &Path, to: &Path) -> Option<PathBuf> {
    let (from, to): (Vec<_>, Vec<_>) = (from.components().collect(), to.components().collect());
    if from.first() != to.first() {
        return None;
    }
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut path = PathBuf::new();
    for _ in common..from.len() {
        path.push("..");
    }
    for part in &to[common..] {
        path.push(part.as_os_str());
    }
    if path.as_os_str().is_empty() {
        path.push(".");
    }
    Some(path)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    use git2::{ApplyLocation, Diff, Signature};

    use super::*;
    use crate::config::LoadOptions;
    use crate::eval::case::{self, Budget, Case, Check, Expect, RepoSource};

    /// The project's test runner: each `tests/*.sh` is one TAP test named after its file.
    const RUN_TESTS: &str = r#"echo "TAP version 13"
n=0
status=0
for t in tests/*.sh; do
  n=$((n + 1))
  if sh "$t" >/dev/null 2>&1; then
    echo "ok $n - $t"
  else
    echo "not ok $n - $t"
    status=1
  fi
done
echo "1..$n"
exit $status
"#;
    const COMMAND: &str = "sh run-tests.sh";
    const FIX_MESSAGE: &str = "Fix sub returning the sum\n\nsub added its arguments; it subtracts them now.\n";

    fn config() -> Config {
        Config::load(LoadOptions {
            config_path: None,
            env: &BTreeMap::new(),
            // Mining runs no model, but a configuration names one.
            overrides: &[
                "model.base_url=http://127.0.0.1:9/v1",
                "model.name=m",
                "sandbox.backend=local",
                "sandbox.local_user=self",
            ]
            .map(str::to_owned),
        })
        .unwrap()
    }

    fn options(repo: &Path, out: &Path) -> MineOptions {
        MineOptions {
            repo: repo.to_owned(),
            since: None,
            max: 10,
            out: out.to_owned(),
            test_command: None,
            timeout: Duration::from_secs(60),
            config: config(),
            prompts: Prompts::embedded(),
            cancel: CancellationToken::new(),
        }
    }

    /// Commits `files` (`None` removes one) on `HEAD` at noon UTC on `day`.
    fn commit(repo: &Repository, files: &[(&str, Option<&str>)], message: &str, day: &str) -> Oid {
        let root = repo.workdir().unwrap().to_owned();
        let mut index = repo.index().unwrap();
        for (path, content) in files {
            let full = root.join(path);
            match content {
                Some(content) => {
                    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
                    std::fs::write(&full, content).unwrap();
                    index.add_path(Path::new(path)).unwrap();
                }
                None => {
                    std::fs::remove_file(&full).unwrap();
                    index.remove_path(Path::new(path)).unwrap();
                }
            }
        }
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let date: jiff::civil::Date = day.parse().unwrap();
        let seconds = date
            .at(12, 0, 0, 0)
            .to_zoned(jiff::tz::TimeZone::UTC)
            .unwrap()
            .timestamp()
            .as_second();
        let signature = Signature::new("Test", "test@example.com", &git2::Time::new(seconds, 0)).unwrap();
        let parent = repo.head().ok().map(|head| head.peel_to_commit().unwrap());
        let parents: Vec<_> = parent.iter().collect();
        repo.commit(Some("HEAD"), &signature, &signature, message, &tree, &parents)
            .unwrap()
    }

    fn short(repo: &Repository, oid: Oid) -> String {
        repo.find_object(oid, None)
            .unwrap()
            .short_id()
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// A shell project with six commits, oldest first: the start; a bug fix with a test that fails
    /// before it; a docs change; a test that already passes on its parent; a change whose own test
    /// fails; a refactor without tests. The repository names its test command.
    fn history(root: &Path) -> (Repository, Vec<Oid>) {
        let repo = Repository::init(root).unwrap();
        let lib = "add() { echo $(($1 + $2)); }\nsub() { echo $(($1 + $2)); }\n";
        let fixed = "add() { echo $(($1 + $2)); }\nsub() { echo $(($1 - $2)); }\n";
        let documented = format!("# Arithmetic on integers, one answer per line.\n{fixed}");
        let with_mul = format!("{documented}mul() {{ echo $(($1 + $2)); }}\n");
        let tidy = with_mul.replace("{ echo", "{\n  echo").replace("; }", "\n}");
        let commits = vec![
            commit(
                &repo,
                &[
                    ("README.md", Some("A calculator.\n")),
                    (
                        ".github/pitcrew.toml",
                        Some("[agent]\ntest_command = \"sh run-tests.sh\"\n"),
                    ),
                    ("run-tests.sh", Some(RUN_TESTS)),
                    ("lib.sh", Some(lib)),
                    ("tests/add.sh", Some(". ./lib.sh\n[ \"$(add 2 3)\" = 5 ]\n")),
                ],
                "Start the calculator",
                "2024-01-01",
            ),
            commit(
                &repo,
                &[
                    ("lib.sh", Some(fixed)),
                    ("tests/sub.sh", Some(". ./lib.sh\n[ \"$(sub 5 3)\" = 2 ]\n")),
                    (
                        "tests/add.sh",
                        Some(". ./lib.sh\n[ \"$(add 2 3)\" = 5 ]\n[ \"$(add 0 0)\" = 0 ]\n"),
                    ),
                ],
                FIX_MESSAGE,
                "2024-01-02",
            ),
            commit(
                &repo,
                &[("README.md", Some("A calculator.\n\nRun `sh run-tests.sh`.\n"))],
                "Explain how to run the tests",
                "2024-06-01",
            ),
            commit(
                &repo,
                &[
                    ("lib.sh", Some(documented.as_str())),
                    ("tests/add_zero.sh", Some(". ./lib.sh\n[ \"$(add 0 7)\" = 7 ]\n")),
                ],
                "Document lib.sh and test adding zero",
                "2024-06-02",
            ),
            commit(
                &repo,
                &[
                    ("lib.sh", Some(with_mul.as_str())),
                    ("tests/mul.sh", Some(". ./lib.sh\n[ \"$(mul 2 3)\" = 6 ]\n")),
                ],
                "Add mul",
                "2024-06-03",
            ),
            commit(
                &repo,
                &[("lib.sh", Some(tidy.as_str()))],
                "Put each function body on its own line",
                "2024-06-04",
            ),
        ];
        (repo, commits)
    }

    /// Runs `command` over `root` in the local sandbox, as the walk does.
    async fn run(root: &Path, run_dir: PathBuf) -> ExecOutput {
        let config = config();
        let settings = RepoConfig::default().apply(&config);
        let prompts = Prompts::embedded();
        let cancel = CancellationToken::new();
        let runner = Runner {
            config: &config,
            settings: &settings,
            prompts: &prompts,
            command: COMMAND,
            timeout: Duration::from_secs(60),
            cancel: &cancel,
        };
        runner.run(root, run_dir, "mine-test".to_owned()).await.unwrap()
    }

    #[tokio::test]
    async fn proposes_the_fix_whose_new_test_fails_before_and_skips_the_others_with_their_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, commits) = history(&dir.path().join("repo"));
        let shorts: Vec<String> = commits.iter().map(|c| short(&repo, *c)).collect();
        let out = dir.path().join("suite");
        let lines = RefCell::new(Vec::new());

        let mined = mine(options(&dir.path().join("repo"), &out), &|line| {
            lines.borrow_mut().push(line.to_owned())
        })
        .await
        .unwrap();

        let id = format!("{}-fix-sub-returning-the-sum", shorts[1]);
        assert_eq!(
            mined,
            Mined {
                proposed: vec![id.clone()],
                considered: 6,
                skipped: vec![
                    (shorts[4].clone(), "the commit's own tests fail (exit 1)".to_owned()),
                    (
                        shorts[3].clone(),
                        "the tests already pass on the parent with the commit's tests".to_owned()
                    ),
                ],
            }
        );
        assert_eq!(
            *lines.borrow(),
            [
                format!(
                    "{} Put each function body on its own line: not a candidate (no tests changed)",
                    shorts[5]
                ),
                format!("{} Add mul: skipped: the commit's own tests fail (exit 1)", shorts[4]),
                format!(
                    "{} Document lib.sh and test adding zero: skipped: the tests already pass on the parent with the \
                     commit's tests",
                    shorts[3]
                ),
                format!(
                    "{} Explain how to run the tests: not a candidate (neither code nor tests changed)",
                    shorts[2]
                ),
                format!("{} Fix sub returning the sum: proposed as {id}", shorts[1]),
                format!("{} Start the calculator: not a candidate (it has no parent)", shorts[0]),
            ]
        );

        // The suite reads back as exactly the case meant.
        let cases = case::load_suites(std::slice::from_ref(&out)).unwrap();
        let expected = Case {
            id: id.clone(),
            repo: RepoSource::Path(out.join("../repo")),
            commit: Some(commits[0].to_string()),
            task: FIX_MESSAGE.trim_end().to_owned(),
            image: None,
            setup: None,
            check: Check {
                files: Some(out.join(format!("checks/{id}"))),
                run: COMMAND.to_owned(),
                fail_to_pass: vec!["tests/sub.sh".to_owned()],
                pass_to_pass: vec!["tests/add.sh".to_owned()],
                timeout_secs: 600,
            },
            reference: Some(out.join(format!("references/{id}.patch"))),
            expect: Expect::default(),
            budget: Budget::default(),
            tags: vec!["mined".to_owned()],
            file: out.join("cases.yaml"),
        };
        assert_eq!(cases, [expected]);
        let checks = out.join("checks").join(&id);
        assert_eq!(
            std::fs::read_to_string(checks.join("tests/sub.sh")).unwrap(),
            ". ./lib.sh\n[ \"$(sub 5 3)\" = 2 ]\n"
        );
        assert!(checks.join("tests/add.sh").is_file());
        let patch = std::fs::read(out.join("references").join(format!("{id}.patch"))).unwrap();
        let text = String::from_utf8_lossy(&patch);
        assert!(
            text.starts_with("diff --git a/lib.sh b/lib.sh\n") && !text.contains("tests/"),
            "only the code: {text}"
        );

        // On the parent the check fails; with the reference patch applied it passes.
        let copy = dir.path().join("check");
        clone_at(repo.path(), commits[0], &copy).unwrap();
        let copied = |root: &Path| {
            for test in ["tests/sub.sh", "tests/add.sh"] {
                std::fs::copy(checks.join(test), root.join(test)).unwrap();
            }
        };
        copied(&copy);
        assert_eq!(run(&copy, dir.path().join("run-1")).await.exit_code, Some(1));
        Repository::open(&copy)
            .unwrap()
            .apply(&Diff::from_buffer(&patch).unwrap(), ApplyLocation::WorkDir, None)
            .unwrap();
        copied(&copy);
        let output = run(&copy, dir.path().join("run-2")).await;
        assert_eq!(output.exit_code, Some(0), "{}", output.stdout);

        // A second run does not write over the first one's cases.
        let again = mine(options(&dir.path().join("repo"), &out), &|_| {})
            .await
            .unwrap_err();
        assert!(matches!(again, MineError::OutNotEmpty { .. }), "{again}");
    }

    #[tokio::test]
    async fn the_walk_stops_at_since_and_at_max() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, commits) = history(&dir.path().join("repo"));
        let mut recent = options(&dir.path().join("repo"), &dir.path().join("recent"));
        recent.since = Some("2024-06-01".parse().unwrap());
        let mined = mine(recent, &|_| {}).await.unwrap();
        assert_eq!(mined.considered, 4, "commits before June are not looked at");
        assert!(mined.proposed.is_empty());
        let skipped: Vec<&str> = mined.skipped.iter().map(|(sha, _)| sha.as_str()).collect();
        assert_eq!(skipped, [short(&repo, commits[4]), short(&repo, commits[3])]);
        assert!(!dir.path().join("recent/cases.yaml").exists(), "no case, no file");

        let mut none = options(&dir.path().join("repo"), &dir.path().join("none"));
        none.max = 0;
        assert_eq!(mine(none, &|_| {}).await.unwrap(), Mined::default());
    }

    #[tokio::test]
    async fn a_test_command_that_runs_out_of_time_skips_the_commit_and_cancellation_stops_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, commits) = history(&dir.path().join("repo"));
        let mut slow = options(&dir.path().join("repo"), &dir.path().join("slow"));
        slow.since = Some("2024-06-03".parse().unwrap());
        slow.test_command = Some("sleep 30".to_owned());
        slow.timeout = Duration::from_secs(1);
        let mined = mine(slow, &|_| {}).await.unwrap();
        assert_eq!(
            mined.skipped,
            [(
                short(&repo, commits[4]),
                "the test command timed out after 1s on the parent with the commit's tests".to_owned()
            )]
        );

        let cancelled = options(&dir.path().join("repo"), &dir.path().join("cancelled"));
        cancelled.cancel.cancel();
        assert_eq!(mine(cancelled, &|_| {}).await.unwrap(), Mined::default());
    }

    #[tokio::test]
    async fn without_a_test_command_the_run_asks_for_one() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path().join("repo")).unwrap();
        commit(&repo, &[("lib.sh", Some("f() { :; }\n"))], "Start", "2024-01-01");
        let error = mine(options(&dir.path().join("repo"), &dir.path().join("out")), &|_| {})
            .await
            .unwrap_err();
        assert!(error.to_string().ends_with("pass --test-command"), "{error}");
        assert!(!dir.path().join("out").exists(), "refused before anything is written");
        // An empty file is not a suite yet: it may be written into.
        std::fs::create_dir(dir.path().join("out")).unwrap();
        std::fs::write(dir.path().join("out/cases.yaml"), "").unwrap();
        let mut given = options(&dir.path().join("repo"), &dir.path().join("out"));
        given.test_command = Some(COMMAND.to_owned());
        assert_eq!(mine(given, &|_| {}).await.unwrap().considered, 1);
    }

    #[test]
    fn test_files_keep_passing_only_when_every_failure_has_a_place() {
        let output = |stdout: &str| ExecOutput {
            exit_code: Some(1),
            stdout: stdout.to_owned(),
            stderr: String::new(),
            stdout_bytes: 0,
            stderr_bytes: 0,
            truncated: false,
            timed_out: false,
            oom_killed: false,
            duration: Duration::ZERO,
        };
        let files = [
            TestFile {
                path: "tests/add.sh".to_owned(),
                content: Some((Vec::new(), 0o644)),
            },
            TestFile {
                path: "tests/sub.sh".to_owned(),
                content: Some((Vec::new(), 0o644)),
            },
        ];
        // TAP names the test, not its file: either file could hold it.
        let unplaced = verdict(&output("ok 1 - adds\nnot ok 2 - subtracts\n1..2\n"), &files);
        assert_eq!(unplaced.fail_to_pass, ["subtracts"]);
        assert!(unplaced.pass_to_pass.is_empty());
        // pytest names the file.
        let placed = verdict(
            &output("FAILED tests/sub.sh::test_sub - assert 1 == 2\n==== 1 failed, 1 passed in 0.01s ====\n"),
            &files,
        );
        assert_eq!(placed.pass_to_pass, ["tests/add.sh"]);
    }

    #[test]
    fn paths_are_tests_code_or_neither() {
        for test in [
            "tests/cli.rs",
            "src/test/java/a/AppTest.java",
            "pkg/__tests__/a.js",
            "spec/models/user_spec.rb",
            "test_calc.py",
            "calc/calc_test.py",
            "server/handler_test.go",
            "web/button.test.tsx",
            "web/api.spec.ts",
            "app/src/main/java/FooTest.java",
            "tests/fixtures/data.json",
        ] {
            assert_eq!(classify(test), Kind::Test, "{test}");
        }
        for code in [
            "src/lib.rs",
            "calc.py",
            "web/button.tsx",
            "cmd/main.go",
            "lib.sh",
            "src/App.java",
        ] {
            assert_eq!(classify(code), Kind::Code, "{code}");
        }
        for other in [
            "README.md",
            "Cargo.toml",
            ".github/workflows/ci.yml",
            "docs/testing.md",
            "Makefile",
            ".rs",
        ] {
            assert_eq!(classify(other), Kind::Other, "{other}");
        }
    }

    #[test]
    fn ids_are_slugs_of_at_most_sixty_characters_and_repositories_are_named_relative_to_the_suite() {
        assert_eq!(
            case_id("abc1234", "Fix: the parser's `--` handling!"),
            "abc1234-fix-the-parser-s-handling"
        );
        let long = case_id("abc1234", &"word ".repeat(40));
        assert!(
            long.len() <= MAX_ID_CHARS && long.starts_with("abc1234-word-"),
            "{long}"
        );
        assert_eq!(case_id("abc1234", "???"), "abc1234-task");
        assert_eq!(
            relative(Path::new("/a/b/suite"), Path::new("/a/repo")),
            Some(PathBuf::from("../../repo"))
        );
        assert_eq!(relative(Path::new("/a"), Path::new("/a")), Some(PathBuf::from(".")));
        assert_eq!(
            relative(Path::new("/a/repo/eval"), Path::new("/a/repo")),
            Some(PathBuf::from(".."))
        );
    }
}
