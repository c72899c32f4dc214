//! Why a job failed: the code, a flaky test, the infrastructure or the configuration, from known
//! signatures in its log and from the findings parsed out of its failing step.
//!
//! Signatures (matched case-insensitively on clean lines):
//! - Configuration: `Input required and not supplied` (an action input, usually from a secret
//!   that is not set), `Invalid workflow file`, `The workflow is not valid`, `Unable to resolve
//!   action`, and a line naming a secret as `not set`, `missing`, `empty` or `not found`.
//! - Infrastructure, wherever it appears: `No space left on device`, `The runner has received a
//!   shutdown signal`, `lost communication with the server`, out-of-memory kills (exit code 137
//!   or SIGKILL, `out of memory`, `Cannot allocate memory`, `oom-kill`).
//! - Network trouble (`connection reset by peer`, `ECONNRESET`, `ETIMEDOUT`, `timed out`,
//!   `Could not resolve host`, `Temporary failure in name resolution`, registry 5xx such as
//!   `502 Bad Gateway`, `503 Service Unavailable`): infrastructure when it happened while setting
//!   up or downloading (a `Run actions/…`, install or fetch step, or a line about a download, a
//!   registry or an index), flaky when it happened while the tests ran.
//! - Code: failing tests or compile errors parsed from the failing step.
//!
//! Configuration and infrastructure beat findings (a runner that died mid-test leaves partial test
//! output); flaky signatures beat test failures but not compile errors, which never flake.

use serde::{Deserialize, Serialize};

use super::log::JobLog;
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
}

/// What a matched signature says.
struct Signature {
    /// Any of these, lowercase, in the line.
    any: &'static [&'static str],
    /// And, when not empty, one of these too.
    and_any: &'static [&'static str],
    kind: SignatureKind,
    confidence: f32,
    what: &'static str,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SignatureKind {
    Configuration,
    Infrastructure,
    /// Infrastructure or flaky, by where it happened.
    Network,
}

const SIGNATURES: &[Signature] = &[
    Signature {
        any: &["input required and not supplied"],
        and_any: &[],
        kind: SignatureKind::Configuration,
        confidence: 0.9,
        what: "an action input is required and not supplied (often a secret that is not set)",
    },
    Signature {
        any: &["invalid workflow file", "the workflow is not valid"],
        and_any: &[],
        kind: SignatureKind::Configuration,
        confidence: 0.95,
        what: "the workflow file is invalid",
    },
    Signature {
        any: &["unable to resolve action"],
        and_any: &[],
        kind: SignatureKind::Configuration,
        confidence: 0.9,
        what: "the workflow uses an action that does not resolve",
    },
    Signature {
        any: &["secret"],
        and_any: &["not set", "missing", "is empty", "not found", "not provided"],
        kind: SignatureKind::Configuration,
        confidence: 0.85,
        what: "a secret is missing",
    },
    Signature {
        any: &["no space left on device"],
        and_any: &[],
        kind: SignatureKind::Infrastructure,
        confidence: 0.95,
        what: "the runner ran out of disk space",
    },
    Signature {
        any: &["the runner has received a shutdown signal"],
        and_any: &[],
        kind: SignatureKind::Infrastructure,
        confidence: 0.95,
        what: "the runner was shut down during the job",
    },
    Signature {
        any: &["lost communication with the server"],
        and_any: &[],
        kind: SignatureKind::Infrastructure,
        confidence: 0.95,
        what: "the runner lost communication with GitHub",
    },
    Signature {
        any: &[
            "out of memory",
            "cannot allocate memory",
            "oom-kill",
            "oomkilled",
            "memory allocation of",
        ],
        and_any: &[],
        kind: SignatureKind::Infrastructure,
        confidence: 0.85,
        what: "the job ran out of memory",
    },
    Signature {
        any: &["exit code 137", "signal: 9, sigkill", "killed"],
        and_any: &["exit code 137", "sigkill"],
        kind: SignatureKind::Infrastructure,
        confidence: 0.8,
        what: "a process was killed (SIGKILL, exit code 137), usually by the out-of-memory killer",
    },
    Signature {
        any: &["connection reset by peer", "econnreset", "connection reset"],
        and_any: &[],
        kind: SignatureKind::Network,
        confidence: 0.75,
        what: "a connection was reset",
    },
    Signature {
        any: &["etimedout", "timed out", "timeout expired", "operation timed out"],
        and_any: &[],
        kind: SignatureKind::Network,
        confidence: 0.65,
        what: "an operation timed out",
    },
    Signature {
        any: &[
            "could not resolve host",
            "temporary failure in name resolution",
            "name or service not known",
            "getaddrinfo enotfound",
        ],
        and_any: &[],
        kind: SignatureKind::Network,
        confidence: 0.75,
        what: "a host name did not resolve",
    },
    Signature {
        any: &[
            "500 internal server error",
            "502 bad gateway",
            "503 service unavailable",
            "504 gateway",
            "status code: 502",
            "status code: 503",
            "status code 502",
            "status code 503",
        ],
        and_any: &[],
        kind: SignatureKind::Network,
        confidence: 0.75,
        what: "a server answered with a 5xx error",
    },
];

/// Words of a step title or line that say it sets up, installs or downloads.
const DOWNLOAD_WORDS: &[&str] = &[
    "download",
    "fetch",
    "install",
    "registry",
    "index",
    "pull",
    "crates.io",
    "npmjs",
    "pypi",
    "apt-get",
    "setup",
    "set up",
    "checkout",
    "restore",
    "cache",
];

/// A signature seen in the log.
struct Hit {
    class: Class,
    confidence: f32,
    reason: String,
}

/// Classifies a job from its log and the findings of its failing step (titled `failing_step`).
pub fn classify(log: &JobLog, failing_step: Option<&str>, findings: &[Finding]) -> Classification {
    let compile_errors = findings.iter().filter(|f| f.kind == FindingKind::CompileError).count();
    let test_failures = findings.iter().filter(|f| f.kind == FindingKind::TestFailure).count();
    let mut hits: Vec<Hit> = Vec::new();
    for step in &log.steps {
        let setup_step = step.title.starts_with("Run actions/") || mentions_download(&step.title);
        for line in &step.lines {
            let lower = line.to_lowercase();
            let Some(signature) = SIGNATURES.iter().find(|s| matches(s, &lower)) else {
                continue;
            };
            let class = match signature.kind {
                SignatureKind::Configuration => Class::Configuration,
                SignatureKind::Infrastructure => Class::Infrastructure,
                SignatureKind::Network if setup_step || mentions_download(&lower) => Class::Infrastructure,
                SignatureKind::Network => Class::Flaky,
            };
            let reason = format!("{} in `{}`: {}", signature.what, step.title, clip(line.trim()));
            // Each signature counts once: a reset retried ten times is still one reason.
            if !hits.iter().any(|h| h.reason.starts_with(signature.what)) {
                hits.push(Hit {
                    class,
                    confidence: signature.confidence,
                    reason,
                });
            }
        }
    }
    let strongest = |class: Class| {
        let mut of_class: Vec<&Hit> = hits.iter().filter(|h| h.class == class).collect();
        of_class.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
        let confidence = of_class.first()?.confidence;
        // More independent signs of the same class make it surer, never certain.
        let confidence = (confidence + 0.03 * (of_class.len() - 1) as f32).min(0.99);
        Some(Classification {
            class,
            confidence,
            reasons: of_class.iter().map(|h| h.reason.clone()).collect(),
        })
    };
    if let Some(found) = strongest(Class::Configuration).or_else(|| strongest(Class::Infrastructure)) {
        return found;
    }
    let step = failing_step.unwrap_or("the failing step");
    if compile_errors > 0 {
        return Classification {
            class: Class::Code,
            confidence: 0.9,
            reasons: vec![format!("{compile_errors} compile error(s) in `{step}`")],
        };
    }
    if let Some(mut flaky) = strongest(Class::Flaky) {
        if test_failures > 0 {
            flaky.confidence = (flaky.confidence - 0.1).max(0.5);
            flaky.reasons.push(format!(
                "{test_failures} failing test(s), which may be the same network trouble"
            ));
        }
        return flaky;
    }
    if test_failures > 0 {
        return Classification {
            class: Class::Code,
            confidence: 0.8,
            reasons: vec![format!("{test_failures} failing test(s) in `{step}`")],
        };
    }
    Classification {
        class: Class::Unknown,
        confidence: 0.2,
        reasons: vec![format!("no failing test, compile error or known signature in `{step}`")],
    }
}

fn matches(signature: &Signature, lower: &str) -> bool {
    signature.any.iter().any(|p| lower.contains(p))
        && (signature.and_any.is_empty() || signature.and_any.iter().any(|p| lower.contains(p)))
}

fn mentions_download(text: &str) -> bool {
    let lower = text.to_lowercase();
    DOWNLOAD_WORDS.iter().any(|w| lower.contains(w))
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
        classify(&JobLog::parse(log), None, &[])
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
                .starts_with("the runner ran out of disk space in `Set up job`")
        );
    }
}
