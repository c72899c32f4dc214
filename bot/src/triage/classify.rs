//! Why a job failed: the code, a flaky test, the infrastructure or the configuration, decided from
//! the failing step's decisive lines and the findings parsed out of it.
//!
//! Evidence is weighed by where it is: a signature in the failing step near a finding or in the
//! step's last lines (where the failure that ended the job is) counts fully; elsewhere in the
//! failing step it counts less, and in other steps barely — except the runner's own verdicts (lost,
//! shut down, out of disk), which end the job wherever they appear. Lines that report a passing or
//! skipped test never count, whatever the test's name says.
//!
//! Signatures (matched case-insensitively on clean lines):
//! - Configuration: a required action input not supplied, an invalid workflow or action, a secret
//!   not set, credentials that could not be loaded, an image or tag that does not exist, a tool or
//!   library the workflow should provide that is missing (`command not found`, CMake's `NOTFOUND`),
//!   a package that does not exist in its registry.
//! - Infrastructure, wherever it appears: out of disk, a runner shut down or lost, out of memory
//!   (exit code 137, the OOM killer).
//! - Network trouble (resets, refused or timed-out connections, DNS failures, registry 5xx, rate
//!   limits): infrastructure when it happened while setting up or downloading (a set-up step, or a
//!   line about a download, a registry, an index or a package host), flaky while the tests ran.
//!   A bare "timed out" is not network trouble: a test's own timeout is the code's.
//! - Code: compile, lint and test failures parsed from the failing step; without them, a panic, an
//!   assertion or an uncaught exception among the decisive lines.
//!
//! Configuration and infrastructure found at the failure beat findings (a runner that died
//! mid-test leaves partial test output); flaky signs beat test failures but not compile errors,
//! which never flake. `unknown` only when nothing decisive is found, and then it says why.

use serde::{Deserialize, Serialize};

use super::log::{JobLog, Step};
use super::{Finding, FindingKind};

/// What a failure is down to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// The change under test: a failing test, a compile error.
    Code,
    /// Passes on a re-run: timeouts and connection resets while testing.
    Flaky,
    /// The machine or the network: out of disk or memory, a lost runner, a registry down.
    Infrastructure,
    /// The workflow or its secrets.
    Configuration,
    /// Nothing recognised.
    Unknown,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Code => "code",
            Class::Flaky => "flaky",
            Class::Infrastructure => "infrastructure",
            Class::Configuration => "configuration",
            Class::Unknown => "unknown",
        }
    }
}

/// A class, how sure of it, and the evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Classification {
    pub class: Class,
    /// From 0 to 1.
    pub confidence: f32,
    /// One line per piece of evidence, strongest first.
    pub reasons: Vec<String>,
    /// The 1-based lines of the log that decided it (the decisive signature's, or the findings').
    #[serde(default)]
    pub evidence: Vec<usize>,
}

/// What a matched signature says.
struct Signature {
    /// Any of these, lowercase, in the line.
    any: &'static [&'static str],
    /// And, when not empty, one of these too.
    and_any: &'static [&'static str],
    kind: Kind,
    confidence: f32,
    what: &'static str,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Configuration,
    /// The runner's own verdict: decides wherever it is.
    Runner,
    Infrastructure,
    /// Infrastructure or flaky, by where it happened.
    Network,
    /// A timeout that is network trouble only when the line is about a download.
    DownloadTimeout,
    /// A test that fails by timing: hung, or failing after it completed.
    Flaky,
    /// A sign of the code failing, used when no parser found anything.
    Code,
}

const fn sig(any: &'static [&'static str], kind: Kind, confidence: f32, what: &'static str) -> Signature {
    Signature {
        any,
        and_any: &[],
        kind,
        confidence,
        what,
    }
}

const fn sig_and(
    any: &'static [&'static str],
    and_any: &'static [&'static str],
    kind: Kind,
    confidence: f32,
    what: &'static str,
) -> Signature {
    Signature {
        any,
        and_any,
        kind,
        confidence,
        what,
    }
}

/// In order: the first that matches a line is that line's signature.
const SIGNATURES: &[Signature] = &[
    sig(
        &["input required and not supplied"],
        Kind::Configuration,
        0.9,
        "an action input is required and not supplied (often a secret that is not set)",
    ),
    sig(
        &["invalid workflow file", "the workflow is not valid"],
        Kind::Configuration,
        0.95,
        "the workflow file is invalid",
    ),
    sig(
        &[
            "unable to resolve action",
            "can't find 'action.yml'",
            "can't find 'action.yaml'",
        ],
        Kind::Configuration,
        0.9,
        "the workflow uses an action that does not resolve",
    ),
    sig_and(
        &["secret"],
        &[
            "not set",
            "missing",
            "is empty",
            "not found",
            "not provided",
            "is required",
        ],
        Kind::Configuration,
        0.85,
        "a secret is missing",
    ),
    sig(
        &[
            "unable to locate credentials",
            "could not load credentials",
            "nocredentialproviders",
            "no valid credential sources",
            "credentials could not be loaded",
            "could not find default credentials",
            "the security token included in the request is invalid",
            "could not read username for",
            "permission denied (publickey)",
            "resource not accessible by integration",
            "bad credentials",
            "authentication failed for",
            "unauthorized: authentication required",
            "401 unauthorized",
        ],
        Kind::Configuration,
        0.85,
        "credentials are missing or refused",
    ),
    sig(
        &[
            "manifest unknown",
            "pull access denied",
            "repository does not exist or may require 'docker login'",
            "failed to resolve reference",
        ],
        Kind::Configuration,
        0.85,
        "an image or tag that does not exist",
    ),
    sig_and(
        &["manifest for"],
        &["not found"],
        Kind::Configuration,
        0.85,
        "an image or tag that does not exist",
    ),
    sig_and(
        &["cmake error at"],
        &[
            "find_package",
            "find_library",
            "find_program",
            "find_path",
            "pkg_check_modules",
        ],
        Kind::Configuration,
        0.85,
        "a tool or library the build needs is not installed",
    ),
    sig(
        &[
            "-notfound",
            "could not find a package configuration file",
            "could not find toolchain",
        ],
        Kind::Configuration,
        0.8,
        "a tool or library the build needs is not installed",
    ),
    sig_and(
        &["could not find"],
        &["(missing:", "cmake", "package configuration"],
        Kind::Configuration,
        0.8,
        "a tool or library the build needs is not installed",
    ),
    sig(
        &[
            "command not found",
            "is not recognized as an internal or external command",
            "executable file not found in $path",
        ],
        Kind::Configuration,
        0.7,
        "a tool the job runs is not installed",
    ),
    sig(
        &[
            "no matching distribution found for",
            "could not find a version that satisfies the requirement",
            "npm err! code e404",
            "npm error code e404",
            "err_pnpm_fetch_404",
            "404 not found - get https://registry",
            "could not find artifact",
            "no matching version found for",
            "failed to select a version for the requirement",
            "no matching package named",
        ],
        Kind::Configuration,
        0.7,
        "a dependency that its registry does not have",
    ),
    sig(
        &[
            "couldn't find remote ref",
            "did not match any file(s) known to git",
            "unknown revision or path",
        ],
        Kind::Configuration,
        0.75,
        "a ref the job asks for does not exist",
    ),
    sig(
        &[
            "no space left on device",
            "not enough space on the disk",
            "disk quota exceeded",
        ],
        Kind::Runner,
        0.95,
        "the runner ran out of disk space",
    ),
    sig(
        &["the runner has received a shutdown signal"],
        Kind::Runner,
        0.95,
        "the runner was shut down during the job",
    ),
    sig(
        &[
            "lost communication with the server",
            "the hosted runner encountered an error",
            "the self-hosted runner lost communication",
            "runner lost communication",
        ],
        Kind::Runner,
        0.95,
        "the runner lost communication with GitHub",
    ),
    sig(
        &[
            "out of memory",
            "cannot allocate memory",
            "oom-kill",
            "oomkilled",
            "memory allocation of",
            "javascript heap out of memory",
            "java.lang.outofmemoryerror",
            "std::bad_alloc",
        ],
        Kind::Runner,
        0.85,
        "the job ran out of memory",
    ),
    sig_and(
        &["exit code 137", "signal: 9, sigkill", "killed"],
        &["exit code 137", "sigkill"],
        Kind::Runner,
        0.8,
        "a process was killed (SIGKILL, exit code 137), usually by the out-of-memory killer",
    ),
    sig(
        &[
            "failed to come online",
            "runner-container-hooks] fatal",
            "pipeline upload not yet applied",
            "failed to upload and process pipeline",
            "the job was not acquired by runner",
            "exceeded the maximum execution time",
        ],
        Kind::Runner,
        0.85,
        "the CI service or its runner failed",
    ),
    sig(
        &[
            "exit value 137",
            "exit status 137",
            "exited with code 137",
            "exit code: 137",
            "exited with 137",
        ],
        Kind::Runner,
        0.8,
        "a process was killed (SIGKILL, exit code 137), usually by the out-of-memory killer",
    ),
    sig(
        &[
            "pluginvalidationerror",
            "packagesnotfounderror",
            "the following packages are not available",
            "> could not find ",
        ],
        Kind::Configuration,
        0.75,
        "a dependency or plugin the job needs is not available",
    ),
    sig_and(
        &["apt-get update", "apt-get install", "apt update"],
        &["non-zero exit status", "returned non-zero", "failed to fetch"],
        Kind::Infrastructure,
        0.75,
        "the system's package repositories failed",
    ),
    sig(
        &["e: failed to fetch", "some index files failed to download"],
        Kind::Infrastructure,
        0.75,
        "the system's package repositories failed",
    ),
    sig_and(
        &["'apt-get'", "\"apt-get\""],
        &["non-zero exit status", "returned non-zero"],
        Kind::Infrastructure,
        0.7,
        "the system's package repositories failed",
    ),
    sig(
        &["panic: test timed out after", "fail in goroutine after"],
        Kind::Flaky,
        0.65,
        "a test hung or failed after it had finished (timing)",
    ),
    sig(
        &[
            "api rate limit exceeded",
            "429 too many requests",
            "secondary rate limit",
            "toomanyrequests",
        ],
        Kind::Infrastructure,
        0.8,
        "a service refused for its rate limit",
    ),
    sig(
        &[
            "connection reset by peer",
            "econnreset",
            "connection reset",
            "broken pipe",
        ],
        Kind::Network,
        0.75,
        "a connection was reset",
    ),
    sig(
        &[
            "etimedout",
            "connection timed out",
            "connect timed out",
            "read timed out",
            "operation timed out",
            "i/o timeout",
            "tls handshake timeout",
            "timeout was reached",
            "readtimeouterror",
            "connecttimeouterror",
            "sockettimeoutexception",
            "connect timeout",
            "network timeout",
            "request timed out",
            "timed out while waiting for the connection",
            "timeouterror: timed out",
            "ssl connect error",
            "ssl handshake",
            "handshake failed",
            "ssl_error_syscall",
            "unexpected eof while reading",
            "socket.timeout",
            "sockettimeout",
        ],
        Kind::Network,
        0.7,
        "a connection timed out",
    ),
    sig(
        &["connection refused", "econnrefused", "failed to connect to"],
        Kind::Network,
        0.65,
        "a connection was refused",
    ),
    sig(
        &[
            "could not resolve host",
            "temporary failure in name resolution",
            "name or service not known",
            "getaddrinfo enotfound",
            "getaddrinfo eai_again",
            "no such host",
            "nodename nor servname provided",
            "could not resolve hostname",
            "name resolution failed",
            "unknownhostexception",
            "dns error",
        ],
        Kind::Network,
        0.75,
        "a host name did not resolve",
    ),
    sig(
        &[
            "500 internal server error",
            "502 bad gateway",
            "503 service unavailable",
            "504 gateway",
            "status code: 502",
            "status code: 503",
            "status code 502",
            "status code 503",
            "status code 500",
            "http status 503",
            "received status code 5",
            "returned error: 5",
        ],
        Kind::Network,
        0.75,
        "a server answered with a 5xx error",
    ),
    sig(
        &["timed out", "timeout"],
        Kind::DownloadTimeout,
        0.7,
        "a download timed out",
    ),
    sig(
        &[
            "panicked at",
            "assertion failed",
            "assertionerror",
            "traceback (most recent call last)",
            "uncaught exception",
            "unhandled exception",
            "segmentation fault",
            "error[e",
            "undefined reference to",
            "fatal error:",
            "exception in thread",
        ],
        Kind::Code,
        0.6,
        "the code failed",
    ),
];

/// Words of a step title or line that say it sets up, installs or downloads (whole words).
const DOWNLOAD_WORDS: &[&str] = &[
    "download",
    "downloading",
    "downloaded",
    "fetch",
    "fetching",
    "install",
    "installing",
    "registry",
    "pull",
    "pulling",
    "apt",
    "setup",
    "checkout",
    "restore",
    "cache",
    "pip",
    "npm",
    "yarn",
    "pnpm",
    "bundle",
    "updating",
    "resolving",
    "resolve",
    "mirror",
];

/// Hosts and phrases that say the same wherever they are in a line.
const DOWNLOAD_PHRASES: &[&str] = &[
    "set up",
    "crates.io",
    "index.crates",
    "npmjs",
    "pypi",
    "pythonhosted",
    "huggingface",
    "hf.co",
    "maven.org",
    "gradle.org",
    "proxy.golang.org",
    "sum.golang.org",
    "go mod",
    "ghcr.io",
    "docker.io",
    "registry-1",
    "objects.githubusercontent.com",
    "releases/download",
    "archive.ubuntu.com",
    "azure.archive",
    "deb.debian.org",
];

/// How much a sign counts, by where it is.
const DECISIVE: f32 = 1.0;
const IN_FAILING_STEP: f32 = 0.6;
const ELSEWHERE: f32 = 0.25;
/// Lines around a finding, and lines at the end of the failing step, that are decisive.
const NEAR: usize = 12;
const TAIL: usize = 30;

/// A signature seen in the log.
struct Hit {
    class: Class,
    kind: Kind,
    confidence: f32,
    weight: f32,
    what: &'static str,
    reason: String,
    /// (step, line) of the log.
    at: (usize, usize),
    /// The line reports an error (not a warning or a retry).
    error_line: bool,
}

/// Where in the log a classification's evidence is: a step's index and a line of it.
pub type Place = (usize, usize);

/// Classifies a job from its log, its failing step (an index into `log.steps`), the findings
/// parsed out of that step and the lines of the step where they were found.
pub fn classify(
    log: &JobLog,
    failing: Option<usize>,
    findings: &[Finding],
    found_at: &[usize],
) -> (Classification, Vec<Place>) {
    let compile_errors = findings
        .iter()
        .filter(|f| matches!(f.kind, FindingKind::CompileError | FindingKind::LintError))
        .count();
    let test_failures = findings.iter().filter(|f| f.kind == FindingKind::TestFailure).count();
    let step_name = |index: usize| {
        log.steps
            .get(index)
            .map_or("the failing step", |s| s.name().unwrap_or("the log"))
    };
    let failing_name = failing.map_or("the failing step", step_name);
    let hits = scan(log, failing, found_at);

    let best = |pred: &dyn Fn(&Hit) -> bool| -> Option<(Classification, Vec<Place>)> {
        let mut chosen: Vec<&Hit> = hits.iter().filter(|h| pred(h)).collect();
        // The strongest first; of equals, one that reports an error (not a warning or a retry),
        // then the earliest.
        chosen.sort_by(|a, b| {
            (b.confidence * b.weight)
                .total_cmp(&(a.confidence * a.weight))
                .then(b.error_line.cmp(&a.error_line))
                .then(a.at.cmp(&b.at))
        });
        let first = chosen.first()?;
        let class = first.class;
        let of_class: Vec<&&Hit> = chosen.iter().filter(|h| h.class == class).collect();
        let mut reasons: Vec<String> = Vec::new();
        let mut places = Vec::new();
        for hit in &of_class {
            // Each signature counts once: a reset retried ten times is still one reason.
            if !reasons.iter().any(|r| r.starts_with(hit.what)) {
                reasons.push(hit.reason.clone());
                places.push(hit.at);
            }
        }
        let weight = if first.weight >= DECISIVE { 0.0 } else { 0.15 };
        let confidence = (first.confidence - weight + 0.03 * (reasons.len() - 1) as f32).clamp(0.3, 0.99);
        Some((
            Classification {
                class,
                confidence,
                reasons,
                evidence: Vec::new(),
            },
            places,
        ))
    };
    let found = |class: Class, confidence: f32, reason: String| {
        (
            Classification {
                class,
                confidence,
                reasons: vec![reason],
                evidence: Vec::new(),
            },
            Vec::new(),
        )
    };
    let has_findings = compile_errors + test_failures > 0;

    // The runner's own verdict ends the job wherever it is said.
    if let Some(found) = best(&|h| h.kind == Kind::Runner) {
        return found;
    }
    // Configuration and infrastructure at the failure; in the failing step when nothing else is.
    let setup = |h: &Hit| matches!(h.class, Class::Configuration | Class::Infrastructure) && h.kind != Kind::Code;
    if let Some(found) = best(&|h| setup(h) && h.weight >= DECISIVE) {
        return found;
    }
    if !has_findings && let Some(found) = best(&|h| setup(h) && h.weight >= IN_FAILING_STEP) {
        return found;
    }
    if compile_errors > 0 {
        let lint = findings.iter().filter(|f| f.kind == FindingKind::LintError).count();
        let what = if lint == 0 {
            format!("{compile_errors} compile error(s) in `{failing_name}`")
        } else if lint == compile_errors {
            format!("{lint} lint error(s) in `{failing_name}`")
        } else {
            format!("{compile_errors} compile and lint error(s) in `{failing_name}`")
        };
        return found(Class::Code, 0.9, what);
    }
    if let Some((mut flaky, places)) = best(&|h| h.class == Class::Flaky && h.weight >= IN_FAILING_STEP) {
        if test_failures > 0 {
            flaky.confidence = (flaky.confidence - 0.1).max(0.5);
            flaky.reasons.push(format!(
                "{test_failures} failing test(s), which may be the same network trouble"
            ));
        }
        return (flaky, places);
    }
    if test_failures > 0 {
        return found(
            Class::Code,
            0.8,
            format!("{test_failures} failing test(s) in `{failing_name}`"),
        );
    }
    if let Some(found) = best(&|h| h.kind == Kind::Code && h.weight >= IN_FAILING_STEP) {
        return found;
    }
    // Signs elsewhere in the log, when the failing step says nothing.
    if let Some(found) = best(&|h| h.kind != Kind::Code) {
        return found;
    }
    found(
        Class::Unknown,
        0.2,
        format!(
            "no failing test, compile error or known signature in `{failing_name}`{}",
            if failing.is_some_and(|i| log.steps[i].lines.iter().all(|l| l.trim().is_empty())) {
                " (it printed nothing)"
            } else {
                ""
            }
        ),
    )
}

/// Every signature of the log, weighed by where it is.
fn scan(log: &JobLog, failing: Option<usize>, found_at: &[usize]) -> Vec<Hit> {
    let mut hits = Vec::new();
    for (index, step) in log.steps.iter().enumerate() {
        let name = step.name();
        let setup_step =
            name.is_some_and(|name| name.starts_with("Run actions/") || mentions_download(&name.to_lowercase()));
        let is_failing = Some(index) == failing;
        let tail_from = step.lines.len().saturating_sub(TAIL);
        for (at, line) in step.lines.iter().enumerate() {
            if reports_a_passing_or_skipped_test(line) {
                continue;
            }
            let lower = line.to_lowercase();
            // A bare timeout is a sign only on a line about a download; otherwise the line's next
            // signature (a panic, say) still counts.
            let Some(signature) = SIGNATURES
                .iter()
                .find(|s| matches(s, &lower) && (s.kind != Kind::DownloadTimeout || mentions_download(&lower)))
            else {
                continue;
            };
            let weight = if !is_failing {
                ELSEWHERE
            } else if at >= tail_from || found_at.iter().any(|f| f.abs_diff(at) <= NEAR) {
                DECISIVE
            } else {
                IN_FAILING_STEP
            };
            let class = match signature.kind {
                Kind::Configuration => Class::Configuration,
                Kind::Runner | Kind::Infrastructure | Kind::DownloadTimeout => Class::Infrastructure,
                Kind::Network if setup_step || downloading(step, at) => Class::Infrastructure,
                Kind::Network | Kind::Flaky => Class::Flaky,
                Kind::Code => Class::Code,
            };
            hits.push(Hit {
                class,
                kind: signature.kind,
                confidence: signature.confidence,
                weight,
                what: signature.what,
                reason: match name {
                    Some(name) => format!("{} in `{name}`: {}", signature.what, clip(line.trim())),
                    None => format!("{}: {}", signature.what, clip(line.trim())),
                },
                at: (index, at),
                error_line: super::is_error_line(line),
            });
        }
    }
    hits
}

/// Whether the line at `at` of `step`, or one just before it, is about downloading or installing.
fn downloading(step: &Step, at: usize) -> bool {
    let from = at.saturating_sub(2);
    step.lines[from..=at]
        .iter()
        .any(|line| mentions_download(&line.to_lowercase()))
}

/// A test runner's line about a test that passed or was skipped: its name says nothing about why
/// the job failed.
fn reports_a_passing_or_skipped_test(line: &str) -> bool {
    let trimmed = line.trim_start();
    let ends = |suffixes: &[&str]| suffixes.iter().any(|s| trimmed.ends_with(s));
    (trimmed.starts_with("test ") && ends(&[" ... ok", " ... ignored"]))
        || trimmed.starts_with("--- PASS")
        || trimmed.starts_with("--- SKIP")
        || trimmed.starts_with("✓")
        || trimmed.starts_with("✔")
        || trimmed.starts_with("√")
        || trimmed.starts_with("↓")
        || trimmed.starts_with("○")
        || trimmed.starts_with("PASS ")
        || trimmed.starts_with("SKIP ")
        || trimmed.contains(" PASSED")
        || trimmed.contains(" SKIPPED")
        || trimmed.contains(" XFAIL")
        || trimmed.contains("[skipped]")
        || trimmed.contains(" skipped ")
        || ends(&[" skipped", " PASSED", " passed", " (skipped)"])
}

fn matches(signature: &Signature, lower: &str) -> bool {
    signature.any.iter().any(|p| lower.contains(p))
        && (signature.and_any.is_empty() || signature.and_any.iter().any(|p| lower.contains(p)))
}

fn mentions_download(lower: &str) -> bool {
    DOWNLOAD_PHRASES.iter().any(|p| lower.contains(p))
        || lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| DOWNLOAD_WORDS.contains(&word))
}

/// A line short enough for a reason.
fn clip(line: &str) -> String {
    const MAX: usize = 160;
    match line.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn class_of(log: &str) -> Classification {
        let log = JobLog::parse(log);
        let failing = log.steps.len().checked_sub(1);
        classify(&log, failing, &[], &[]).0
    }

    #[test]
    fn network_trouble_is_infrastructure_while_downloading_and_flaky_while_testing() {
        let download = class_of(
            "##[group]Run cargo build\n    Updating crates.io index\nerror: failed to download from \
             `https://index.crates.io/config.json`: [56] Failure when receiving data (Connection reset by peer)\n",
        );
        assert_eq!(download.class, Class::Infrastructure);
        let testing =
            class_of("##[group]Run cargo test\nthread 'client' panicked: Connection reset by peer (os error 104)\n");
        assert_eq!(testing.class, Class::Flaky);
        let setup = class_of("##[group]Run actions/setup-node@v4\nError: connect ETIMEDOUT 104.16.0.35:443\n");
        assert_eq!(setup.class, Class::Infrastructure);
    }

    #[test]
    fn a_bare_timeout_outside_a_download_leaves_the_line_to_its_other_signs() {
        let own = class_of("##[group]Run ./check.sh\nthread 'waits' panicked at 'timed out waiting for the worker'\n");
        assert_eq!(own.class, Class::Code, "{own:?}");
        let download = class_of("##[group]Run ./fetch.sh\nthe model download timed out after 300 s\n");
        assert_eq!(download.class, Class::Infrastructure, "{download:?}");
    }

    #[test]
    fn the_killed_word_alone_is_not_an_oom() {
        assert_eq!(
            class_of("##[group]Run x\nthe child was killed by the test\n").class,
            Class::Unknown
        );
        let oom = class_of("##[group]Run x\nKilled\nError: Process completed with exit code 137.\n");
        assert_eq!(oom.class, Class::Infrastructure);
        assert!(oom.reasons[0].contains("exit code 137"), "{:?}", oom.reasons);
    }

    #[test]
    fn more_signs_raise_the_confidence_without_reaching_one() {
        let one = class_of("No space left on device\n");
        let two = class_of("No space left on device\nThe runner has received a shutdown signal.\n");
        assert_eq!((one.class, two.class), (Class::Infrastructure, Class::Infrastructure));
        assert!(two.confidence > one.confidence && two.confidence < 1.0);
        assert_eq!(two.reasons.len(), 2);
        let repeated = class_of("No space left on device\nNo space left on device\n");
        assert_eq!(repeated.reasons.len(), 1);
        assert!(
            repeated
                .reasons
                .first()
                .unwrap()
                .starts_with("the runner ran out of disk space: No space left on device")
        );
    }
}
