//! The `pitcrew config` check run: a pull request that changes `.github/pitcrew.toml` gets the new
//! file validated as pitcrew will read it once it lands — with a failure annotated at each offending
//! line — before a typo on the default branch silently turns the bot's settings off. A pull request
//! that leaves the file alone gets nothing (one read of its changed files). No model, no sandbox,
//! no working copy: the file is read through the contents API at the pull request's head.

use std::time::SystemTime;

use serde_json::json;

use crate::config::repo::{REPO_CONFIG_PATH, RepoConfig, RepoConfigProblem};
use crate::github::{
    Annotation, AnnotationLevel, CheckConclusion, CheckRunOutput, CheckStatus, CommitSha, NewCheckRun,
};
use crate::jobs::Finish;

use super::session::Spent;
use super::{HandlerError, JobEnv};

/// The check run's name.
pub const CHECK_NAME: &str = "pitcrew config";

/// What the pull request's head does to the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Valid: pitcrew will read it as written.
    Valid,
    /// Removed: the defaults will apply.
    Removed,
    Invalid(Vec<RepoConfigProblem>),
}

/// The check run for `verdict` on `head`.
pub fn check_run(head: &CommitSha, verdict: &Verdict) -> NewCheckRun {
    let now = SystemTime::now();
    let (conclusion, title, summary, annotations) = match verdict {
        Verdict::Valid => (
            CheckConclusion::Success,
            format!("`{REPO_CONFIG_PATH}` is valid"),
            format!("pitcrew reads every setting of `{REPO_CONFIG_PATH}` at this commit as written."),
            Vec::new(),
        ),
        Verdict::Removed => (
            CheckConclusion::Success,
            format!("`{REPO_CONFIG_PATH}` is removed"),
            "Once this lands, pitcrew's defaults and the operator's settings apply to this repository.".to_owned(),
            Vec::new(),
        ),
        Verdict::Invalid(problems) => {
            let count = problems.len();
            let plural = if count == 1 { "" } else { "s" };
            let mut summary = "Once this lands on the default branch, pitcrew answers every request in this \
                               repository with these problems instead of acting, and its automatic jobs leave \
                               the invalid settings out. Fix them here first:\n\n"
                .to_owned();
            for problem in problems {
                summary.push_str(&format!(
                    "- line {}, column {}: {}\n",
                    problem.line, problem.column, problem.message
                ));
            }
            let annotations = problems
                .iter()
                .map(|problem| Annotation {
                    path: REPO_CONFIG_PATH.to_owned(),
                    start_line: u64::from(problem.line.max(1)),
                    end_line: u64::from(problem.line.max(1)),
                    start_column: Some(u64::from(problem.column.max(1))),
                    end_column: Some(u64::from(problem.column.max(1))),
                    annotation_level: AnnotationLevel::Failure,
                    message: problem.message.clone(),
                    title: Some("pitcrew cannot read this setting".to_owned()),
                    raw_details: None,
                })
                .collect();
            (
                CheckConclusion::Failure,
                format!("{count} problem{plural} in `{REPO_CONFIG_PATH}`"),
                summary,
                annotations,
            )
        }
    };
    NewCheckRun {
        name: CHECK_NAME.to_owned(),
        head_sha: head.clone(),
        status: CheckStatus::Completed,
        started_at: Some(now),
        conclusion: Some(conclusion),
        completed_at: Some(now),
        details_url: None,
        external_id: None,
        output: Some(CheckRunOutput {
            title,
            summary,
            text: None,
            annotations,
        }),
    }
}

/// The job: the pull request's changed files, and when the configuration is among them, its
/// verdict as a check run on the head the event named.
pub async fn run(env: &JobEnv) -> Result<(Finish, Spent), HandlerError> {
    let number = env.number()?;
    let Some(head) = env.request.head_sha.clone() else {
        return Err(HandlerError::Other("the config check names no head commit".into()));
    };
    let files = env.github.list_pull_files(&env.repo, number).await?;
    let touched = files
        .items
        .iter()
        .find(|file| file.filename == REPO_CONFIG_PATH || file.previous_filename.as_deref() == Some(REPO_CONFIG_PATH));
    let Some(touched) = touched else {
        let result = json!({"config": "unchanged"});
        return Ok((Finish::Succeeded(result), Spent::default()));
    };
    let removed = touched.status == "removed" || touched.filename != REPO_CONFIG_PATH;
    let verdict = if removed {
        Verdict::Removed
    } else {
        match env.github.get_file(&env.repo, REPO_CONFIG_PATH, head.as_str()).await? {
            None => Verdict::Removed,
            Some(text) => match RepoConfig::parse(&text) {
                Ok(_) => Verdict::Valid,
                Err(problems) => Verdict::Invalid(problems),
            },
        }
    };
    env.github
        .create_check_run(&env.repo, &check_run(&head, &verdict))
        .await?;
    let result = match &verdict {
        Verdict::Valid => json!({"config": "valid"}),
        Verdict::Removed => json!({"config": "removed"}),
        Verdict::Invalid(problems) => json!({"config": "invalid", "problems": problems.len()}),
    };
    Ok((Finish::Succeeded(result), Spent::default()))
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn an_invalid_file_fails_with_an_annotation_at_each_problem() {
        let text = "[review]\nauto = \"yes\"\n\n[triggers]\nlabl = \"fix-me\"\n";
        let problems = RepoConfig::parse(text).unwrap_err();
        let head = CommitSha::parse("0123456789abcdef0123456789abcdef01234567").unwrap();
        let run = check_run(&head, &Verdict::Invalid(problems));
        assert_eq!(run.conclusion, Some(CheckConclusion::Failure));
        let output = run.output.unwrap();
        assert_eq!(output.title, "2 problems in `.github/pitcrew.toml`");
        let lines: Vec<u64> = output.annotations.iter().map(|a| a.start_line).collect();
        assert_eq!(lines, [2, 5]);
        assert!(output.summary.contains("- line 5, column 1:"), "{}", output.summary);
    }
}
