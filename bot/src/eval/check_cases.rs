//! `pitcrew eval check-cases`: proves a suite itself. A case with a `reference` patch must flip:
//! its check fails on the unmodified commit (its `pass_to_pass` tests passing there) and passes
//! with the patch applied. A case that does not flip is broken: it would score an agent on
//! nothing.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::prompts::Prompts;
use crate::session::{AgentRun, AgentSession};

use super::case::Case;
use super::results::CheckOutcome;
use super::run::{case_settings, check, file_name, local_setup};
use super::workcopy;

/// What `check-cases` found for one case.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Fails before, passes with the reference.
    Flips,
    /// Does not flip; the reason says which half failed.
    Broken(String),
    /// Nothing to prove it with.
    NoReference,
    /// The working copy, the sandbox or the setup failed.
    Error(String),
}

impl Verdict {
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Flips => "ok",
            Verdict::Broken(_) => "broken",
            Verdict::NoReference => "skipped",
            Verdict::Error(_) => "error",
        }
    }
}

/// Checks `cases` one after the other under `config`; `scratch` holds the working copies and run
/// directories (emptied as it goes). `progress` hears of each case's verdict.
pub async fn check_cases(
    cases: &[Case],
    config: &Config,
    prompts: &Prompts,
    scratch: &Path,
    cancel: &CancellationToken,
    progress: &(dyn Fn(&Case, &Verdict) + Send + Sync),
) -> Vec<(String, Verdict)> {
    let mut verdicts = Vec::new();
    for case in cases {
        if cancel.is_cancelled() {
            break;
        }
        let verdict = match &case.reference {
            None => Verdict::NoReference,
            Some(reference) => flips(case, reference, config, prompts, scratch, cancel).await,
        };
        progress(case, &verdict);
        verdicts.push((case.id.clone(), verdict));
    }
    verdicts
}

async fn flips(
    case: &Case,
    reference: &Path,
    config: &Config,
    prompts: &Prompts,
    scratch: &Path,
    cancel: &CancellationToken,
) -> Verdict {
    let patch = match std::fs::read(reference) {
        Ok(patch) => patch,
        Err(error) => return Verdict::Error(format!("the reference {}: {error}", reference.display())),
    };
    let before = match checked(case, None, config, prompts, &scratch.join("before"), cancel).await {
        Ok(outcome) => outcome,
        Err(error) => return Verdict::Error(error),
    };
    if before.passed {
        return Verdict::Broken("the check passes without the reference: it proves nothing".to_owned());
    }
    if !before.broken.is_empty() {
        return Verdict::Broken(format!(
            "`pass_to_pass` tests fail before the change: {}",
            before.broken.join(", ")
        ));
    }
    let after = match checked(case, Some(patch), config, prompts, &scratch.join("after"), cancel).await {
        Ok(outcome) => outcome,
        Err(error) => return Verdict::Error(error),
    };
    if !after.passed {
        let why = if after.not_fixed.is_empty() && after.broken.is_empty() {
            match after.exit_code {
                Some(code) => format!("exit {code}"),
                None => "it was killed (timed out)".to_owned(),
            }
        } else {
            after
                .not_fixed
                .iter()
                .chain(&after.broken)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Verdict::Broken(format!(
            "the check fails with the reference applied ({why}):\n{}",
            after.output_tail
        ));
    }
    Verdict::Flips
}

/// The case's check on a fresh working copy, with `patch` applied first when given.
async fn checked(
    case: &Case,
    patch: Option<Vec<u8>>,
    config: &Config,
    prompts: &Prompts,
    dir: &Path,
    cancel: &CancellationToken,
) -> Result<CheckOutcome, String> {
    let work = dir.join("work");
    if let Err(error) = std::fs::remove_dir_all(dir)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        return Err(format!("{}: {error}", dir.display()));
    }
    let prepared = {
        let (case, work) = (case.clone(), work.clone());
        tokio::task::spawn_blocking(move || -> Result<(), String> {
            workcopy::prepare(&case, &work).map_err(|error| format!("the working copy: {error}"))?;
            if let Some(patch) = patch {
                apply(&work, &patch)?;
            }
            Ok(())
        })
        .await
    };
    match prepared {
        Ok(Ok(())) => {}
        Ok(Err(error)) => return Err(error),
        Err(error) => return Err(format!("the working copy: {error}")),
    }
    let settings = case_settings(case, config, &work);
    let session = AgentSession::start(AgentRun {
        config,
        settings: &settings,
        prompts,
        model: None,
        sandbox_id: file_name(&format!("eval-check-{}-{}", std::process::id(), case.id)),
        root: work.clone(),
        run_dir: dir.join("run"),
        network_step: None,
        index: None,
        cancel: cancel.clone(),
    })
    .await
    .map_err(|error| format!("the sandbox or the case's setup failed: {error}"))?;
    let outcome = match local_setup(&session, config, &settings).await {
        Ok(()) => check(&session, case).await,
        Err(error) => Err(error),
    };
    if let Err(error) = session.stop().await {
        tracing::warn!(%error, "stopping a check's sandbox failed");
    }
    if let Err(error) = std::fs::remove_dir_all(&work) {
        tracing::warn!(path = %work.display(), %error, "removing a check's working copy failed");
    }
    outcome
}

/// Applies a `git apply` patch to the working tree at `root`.
fn apply(root: &Path, patch: &[u8]) -> Result<(), String> {
    let repo = git2::Repository::open(root).map_err(|error| format!("the working copy: {}", error.message()))?;
    let diff =
        git2::Diff::from_buffer(patch).map_err(|error| format!("the reference is not a patch: {}", error.message()))?;
    repo.apply(&diff, git2::ApplyLocation::WorkDir, None)
        .map_err(|error| format!("the reference does not apply: {}", error.message()))
}

/// Where `check-cases` works when no directory is named: a fresh temporary one.
pub fn scratch_dir() -> std::io::Result<tempfile::TempDir> {
    tempfile::Builder::new().prefix("pitcrew-check-cases-").tempdir()
}
