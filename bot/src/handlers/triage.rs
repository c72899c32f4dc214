//! `triage`: why CI failed on a commit. The failed Actions jobs of its workflow runs (their logs,
//! downloaded and analysed by [`crate::triage`]) and the failed check runs of other CI services
//! (their own output) become one `pitcrew triage` check run on the commit, with annotations at
//! file:line and the model's account of the root cause, written from the evidence with the
//! repository checked out read-only. Later failures of the same commit update that check run.
//!
//! On request (`@agent triage`) or with `[triage] comment = true` the result is also said on the pull
//! request; with `rerun_flaky` a job judged flaky is re-run once; with `auto_fix` code failures start
//! a fix job seeded with the evidence (at most [`MAX_AUTO_FIXES`] per pull request, so that a fix
//! that keeps failing cannot loop).

use std::collections::HashMap;
use std::time::SystemTime;

use crate::agent::{Outcome, StopReason};
use crate::config::repo::EffectiveSettings;
use crate::github::{
    ActionsJob, CheckConclusion, CheckRunId, CheckRunSummary, CheckRunUpdate, CheckStatus, CommentId, CommitSha,
    IssueNumber, PullRequest, RunFilter, WorkflowRunSummary,
};
use crate::jobs::{Finish, NewJob};
use crate::prompts::Template;
use crate::report::triage::{self as text, CHECK_NAME, Evidence, FailedJob, Triage};
use crate::report::{self, JobInfo, RequestedBy};
use crate::session::AgentSession;
use crate::triage::{Analysis, Class, Classification};
use crate::triggers::{CiFailure, Conclusion, JobKind, JobRequest, JobSource, ReplyTarget, Subject};
use crate::workspace::mirror::{RemoteRepo, Target};

use super::live::Targets;
use super::record::{Detail, JobRecord, Summary, TriageDetail, TriagedJob};
use super::review::run_read_only;
use super::session::Spent;
use super::{HandlerError, JobEnv};

/// The most of one job's log read: failures are at its end, which is what is kept.
const MAX_LOG_BYTES: usize = 8 * 1024 * 1024;
/// Failed jobs analysed per commit; a matrix that fails everywhere says the same thing many times.
const MAX_JOBS: usize = 12;
/// Fixes triage starts on one pull request; past this a person asks with `@agent fix`.
pub const MAX_AUTO_FIXES: usize = 2;
/// GitHub Actions' App: its check runs are the jobs whose logs are read through the Actions API.
const ACTIONS_APP: &str = "github-actions";

/// Conclusions that mean the job failed (as opposed to being cancelled or skipped), as the
/// triggers read them from webhooks.
fn is_failure(conclusion: Option<&str>) -> bool {
    conclusion.is_some_and(|c| Conclusion::parse(c).is_failure())
}

/// A triage on the commit a CI failure names, or on a pull request's head when asked.
pub async fn run(env: &JobEnv) -> Result<(Finish, Spent), HandlerError> {
    let asked = env.request.ci().is_none();
    let (head_sha, pull) = commit_and_pull(env).await?;
    // A commit a fix loop pushed is that loop's to read: it judged its CI already (a triage queued
    // before a restart, or by another process, finds it in the loop's history).
    let this_process = env.control.ci_watch().loop_of(&env.repo.to_string(), &head_sha);
    let pushed_by_loop = match this_process {
        Some(job) => Some(job),
        None => loop_pushed(env, &env.job.key, &head_sha).await,
    };
    if !asked && let Some(job) = pushed_by_loop {
        let headline = format!("Left to the fix loop of job {job}, which pushed this commit and read its CI");
        tracing::info!(%job, "the commit's CI is a fix loop's; no triage");
        let _ = env
            .control
            .record(&JobRecord::Finished {
                headline: headline.clone(),
            })
            .await;
        return Ok((Finish::Cancelled(headline), Spent::default()));
    }
    let settings = env.repo_config().await?.apply(env.config());

    // The branch the commit is measured against: the pull request's base, else the default branch.
    let base = pull
        .as_ref()
        .map_or_else(|| env.request.repo.default_branch.clone(), |p| p.base.branch.clone());
    let mut triage = gather(env, &head_sha, pull.as_ref().map(|p| p.number.0), &base).await?;
    let existing = existing_check_run(env, &head_sha).await;
    if triage.jobs.is_empty() {
        return nothing_failed(env, &triage, existing, asked).await;
    }

    let targets = open_check_run(env, &head_sha, existing.as_ref()).await?;
    let spent = explain_root_cause(env, &settings, &targets, &mut triage, pull.as_ref()).await;
    if env.control.is_cancelled() {
        return Ok((stopped(&targets).await, spent));
    }
    let fix_job = follow_up(env, &settings, &mut triage, pull.as_ref()).await;
    let report = publish(env, &settings, &triage, &targets, existing.as_ref(), asked).await?;
    Ok((summarise(env, triage, report, fix_job).await, spent))
}

/// Puts the commit's `pitcrew triage` check run in progress: an earlier triage's again, else a
/// new one; returns what the triage keeps up to date.
async fn open_check_run(
    env: &JobEnv,
    head_sha: &str,
    existing: Option<&CheckRunSummary>,
) -> Result<Targets, HandlerError> {
    let info = info(env);
    let output = || report::check_run::in_progress(&info, &Default::default(), Some("reading the logs"));
    let check_run = match existing {
        Some(run) => {
            let update = CheckRunUpdate {
                status: Some(CheckStatus::InProgress),
                output: Some(output()),
                ..CheckRunUpdate::default()
            };
            env.github
                .update_check_run(&env.repo, CheckRunId(run.id), &update)
                .await?;
            CheckRunId(run.id)
        }
        None => {
            let created = super::start_check_run(env, CHECK_NAME, &CommitSha(head_sha.to_owned()), output()).await?;
            created.id
        }
    };
    let mut info = info;
    info.check_run_url = Some(check_run_url(env, check_run.0));
    Ok(Targets {
        github: env.github.clone(),
        repo: env.repo.clone(),
        check_run: Some(check_run),
        comment: None,
        info,
        frame: None,
    })
}

/// The model's account of the root cause, into `triage` (or, when it stopped early or failed,
/// a line saying so among its actions); what it spent.
async fn explain_root_cause(
    env: &JobEnv,
    settings: &EffectiveSettings,
    targets: &Targets,
    triage: &mut Triage,
    pull: Option<&PullRequest>,
) -> Spent {
    match root_cause(env, settings, targets, triage, pull).await {
        Ok(Some(outcome)) => {
            let spent = Spent::from_outcome(&outcome);
            match &outcome.stop {
                StopReason::Finished if !outcome.summary.trim().is_empty() => triage.root_cause = Some(outcome.summary),
                StopReason::Cancelled => {}
                other => triage
                    .actions
                    .push(format!("The root-cause analysis stopped early: {}.", stop_words(other))),
            }
            spent
        }
        Ok(None) => Spent::default(),
        Err(error) => {
            tracing::warn!(%error, "the root-cause analysis failed");
            triage.actions.push(format!(
                "The root-cause analysis failed: {}",
                super::public_error(&error)
            ));
            Spent::default()
        }
    }
}

/// Ends a triage asked to stop: its check run says so.
async fn stopped(targets: &Targets) -> Finish {
    let output = crate::github::CheckRunOutput {
        title: "Triage stopped".into(),
        summary: "The triage was stopped before it finished.".into(),
        ..Default::default()
    };
    targets.complete(CheckConclusion::Cancelled, output, "").await;
    Finish::Cancelled("stopped before the triage finished".into())
}

/// What the repository wants done about the failures: flaky jobs re-run, code failures handed to
/// a fix job (returned); each said among the triage's actions.
async fn follow_up(
    env: &JobEnv,
    settings: &EffectiveSettings,
    triage: &mut Triage,
    pull: Option<&PullRequest>,
) -> Option<u64> {
    if settings.triage.rerun_flaky {
        rerun_flaky(env, triage).await;
    }
    if !(settings.triage.auto_fix && triage.has_code_failures()) {
        return None;
    }
    let (job, said) = start_fix(env, triage, pull).await;
    triage.actions.push(said);
    job
}

/// Says the triage on the pull request when asked or wanted, and completes the check run; returns
/// the comment's text.
async fn publish(
    env: &JobEnv,
    settings: &EffectiveSettings,
    triage: &Triage,
    targets: &Targets,
    existing: Option<&CheckRunSummary>,
    asked: bool,
) -> Result<String, HandlerError> {
    // The comment: always when asked; on a failure when the repository wants one, and then one per
    // commit, updated by later triages (the check run's details link points at it).
    let report = text::comment(triage, &env.job_id(), targets.info.check_run_url.as_deref());
    let mut comment_url = None;
    if let Some(number) = triage.pull_request
        && (asked || settings.triage.comment)
    {
        comment_url = post_comment(env, number, &report, existing, asked).await;
    }

    let update = CheckRunUpdate {
        status: Some(CheckStatus::Completed),
        // Informational: the failing jobs already make the commit red; triage adds no red of its own.
        conclusion: Some(CheckConclusion::Neutral),
        completed_at: Some(SystemTime::now()),
        details_url: comment_url,
        output: Some(text::check_run_output(triage)),
    };
    targets.set_check_run(update).await?;
    Ok(report)
}

/// Records the triage's end and returns its result.
async fn summarise(env: &JobEnv, triage: Triage, report: String, fix_job: Option<u64>) -> Finish {
    let headline = triage.headline();
    let finished = JobRecord::Finished {
        headline: headline.clone(),
    };
    let _ = env.control.record(&finished).await;
    let jobs = triage
        .jobs
        .iter()
        .map(|job| TriagedJob {
            name: job.title(),
            class: job.analysis.classification.class,
            confidence: job.analysis.classification.confidence,
            findings: job.analysis.findings.clone(),
        })
        .collect();
    let summary = Summary {
        summary: triage.root_cause.clone().unwrap_or_else(|| headline.clone()),
        headline,
        conclusion: CheckConclusion::Neutral,
        commit: None,
        pull_request: triage.pull_request,
        report,
        detail: Some(Detail::Triage(TriageDetail {
            head_sha: triage.head_sha,
            jobs,
            fix_job,
            actions: triage.actions,
        })),
    };
    super::succeeded(&summary)
}

/// The commit to triage and its pull request: the failing commit a CI event names (and the PR it
/// names, or else an open PR whose head it is), or the head of the PR a person asked on.
async fn commit_and_pull(env: &JobEnv) -> Result<(String, Option<PullRequest>), HandlerError> {
    let request = &env.request;
    if request.ci().is_none() {
        let pull = env.github.get_pull(&env.repo, env.number()?).await?;
        return Ok((pull.head.sha.as_str().to_owned(), Some(pull)));
    }
    let Some(sha) = request.head_sha.as_ref().map(|sha| sha.as_str().to_owned()) else {
        return Err(HandlerError::Other("the CI failure names no commit".into()));
    };
    let number = if let Some(number) = request.subject.number() {
        Some(number.0)
    } else {
        // GitHub leaves a fork's pull requests out of CI payloads: ask which PR has this head.
        match env.github.pulls_for_commit(&env.repo, &sha).await {
            Ok(pulls) => pulls
                .into_iter()
                .find(|p| p.open && p.head_sha == sha)
                .map(|p| p.number),
            Err(error) => {
                tracing::warn!(%error, "could not look up the pull requests of the commit");
                None
            }
        }
    };
    let pull = match number {
        Some(number) => Some(env.github.get_pull(&env.repo, IssueNumber(number)).await?),
        None => None,
    };
    Ok((sha, pull))
}

fn info(env: &JobEnv) -> JobInfo {
    let mut info = env.info();
    if let Some(ci) = env.request.ci() {
        info.requested_by = RequestedBy::FailedCheck(ci.name.clone().unwrap_or_else(|| ci.event.replace('_', " ")));
    }
    info
}

fn check_run_url(env: &JobEnv, id: u64) -> String {
    format!("{}/runs/{id}", super::web_url(&env.request.repo))
}

/// The commit's failed jobs with their evidence.
pub(crate) async fn gather(
    env: &JobEnv,
    head_sha: &str,
    pull: Option<u64>,
    base: &str,
) -> Result<Triage, HandlerError> {
    let mut jobs = Vec::new();
    let runs = env.github.list_workflow_runs_for_sha(&env.repo, head_sha).await?;
    for run in runs.iter().filter(|r| is_failure(r.conclusion.as_deref())) {
        if jobs.len() >= MAX_JOBS {
            break;
        }
        let from = jobs.len();
        actions_jobs(env, run, &mut jobs).await?;
        compare_with_base(env, run, head_sha, base, &mut jobs[from..]).await;
    }
    // Other CI services report through check runs with their own output.
    let checks = env
        .github
        .list_check_runs_for_ref(&env.repo, head_sha, None, RunFilter::Latest)
        .await?;
    for check in checks.iter().filter(|c| is_external_failure(c, env)) {
        if jobs.len() >= MAX_JOBS {
            break;
        }
        jobs.push(external_job(check));
    }
    Ok(Triage {
        head_sha: head_sha.to_owned(),
        pull_request: pull,
        jobs,
        root_cause: None,
        actions: Vec::new(),
    })
}

/// The failed jobs of a workflow run's latest attempt, their logs read and analysed; a job that
/// passed in another attempt of the same run is flaky, whatever its log says.
async fn actions_jobs(env: &JobEnv, run: &WorkflowRunSummary, out: &mut Vec<FailedJob>) -> Result<(), HandlerError> {
    let all = env.github.list_jobs_for_run(&env.repo, run.id, RunFilter::All).await?;
    let latest = all
        .iter()
        .filter_map(|j| j.run_attempt)
        .max()
        .or(run.run_attempt)
        .unwrap_or(1);
    for job in all
        .iter()
        .filter(|j| j.run_attempt.unwrap_or(latest) == latest && is_failure(j.conclusion.as_deref()))
    {
        if out.len() >= MAX_JOBS {
            break;
        }
        let passed_in = all
            .iter()
            .find(|other| {
                other.name == job.name && other.id != job.id && other.conclusion.as_deref() == Some("success")
            })
            .and_then(|other| other.run_attempt);
        let (evidence, mut analysis) = match env.github.download_job_log(&env.repo, job.id, MAX_LOG_BYTES).await {
            Ok(log) => (
                Evidence::Log {
                    truncated: log.truncated,
                },
                crate::triage::analyse(&log.text),
            ),
            Err(error) => (Evidence::Unavailable(error.to_string()), unread(job)),
        };
        if analysis.step.is_none() {
            analysis.step = failed_step(job);
        }
        if let Some(attempt) = passed_in {
            let c = &mut analysis.classification;
            c.reasons
                .insert(0, format!("the same job passed in attempt {attempt} of this run"));
            c.class = Class::Flaky;
            c.confidence = c.confidence.max(0.9);
        }
        out.push(FailedJob {
            workflow: run.name.clone().filter(|n| !n.trim().is_empty()),
            name: job.name.clone(),
            url: job.html_url.clone(),
            actions_job: Some((job.id, job.run_attempt.unwrap_or(latest))),
            evidence,
            analysis,
            predates: false,
        });
    }
    Ok(())
}

/// Base-branch runs of a workflow read to judge a failure: enough to see a job that fails now and
/// then, few enough to cost a handful of calls.
const BASE_RUNS: usize = 5;

/// How a workflow's jobs fared in its newest runs on the base branch.
struct BaseHistory {
    runs: usize,
    /// Per job name: (failed, passed).
    by_job: HashMap<String, (usize, usize)>,
}

/// The workflow's recent history on `base`, not counting runs of the commit itself; `None` when
/// it has none or it cannot be read (the triage goes on without it).
async fn base_history(env: &JobEnv, workflow: &str, base: &str, head_sha: &str) -> Option<BaseHistory> {
    let runs = match env.github.recent_workflow_runs(&env.repo, base, 30).await {
        Ok(runs) => runs,
        Err(error) => {
            tracing::warn!(%error, "could not read the base branch's workflow runs");
            return None;
        }
    };
    let runs: Vec<&WorkflowRunSummary> = runs
        .iter()
        .filter(|r| r.name.as_deref() == Some(workflow) && r.head_sha != head_sha)
        .filter(|r| matches!(r.conclusion.as_deref(), Some("success" | "failure" | "timed_out")))
        .take(BASE_RUNS)
        .collect();
    if runs.is_empty() {
        return None;
    }
    let mut by_job: HashMap<String, (usize, usize)> = HashMap::new();
    for run in &runs {
        let Ok(jobs) = env.github.list_jobs_for_run(&env.repo, run.id, RunFilter::Latest).await else {
            continue;
        };
        for job in jobs {
            let entry = by_job.entry(job.name).or_default();
            match job.conclusion.as_deref() {
                Some("success") => entry.1 += 1,
                conclusion if is_failure(conclusion) => entry.0 += 1,
                _ => {}
            }
        }
    }
    Some(BaseHistory {
        runs: runs.len(),
        by_job,
    })
}

/// Weighs each failed job of `run` against the same job on the base branch: one that both failed
/// and passed there lately fails intermittently, and is flaky here too unless the compiler says
/// otherwise; one that fails there every time predates the change; one that always passes there
/// makes the change the likelier cause.
async fn compare_with_base(env: &JobEnv, run: &WorkflowRunSummary, head_sha: &str, base: &str, jobs: &mut [FailedJob]) {
    let undecided = |job: &FailedJob| matches!(job.analysis.classification.class, Class::Code | Class::Unknown);
    let Some(workflow) = run.name.as_deref() else {
        return;
    };
    if !jobs.iter().any(undecided) {
        return;
    }
    let Some(history) = base_history(env, workflow, base, head_sha).await else {
        return;
    };
    for job in jobs.iter_mut().filter(|j| undecided(j)) {
        let Some(&(failed, passed)) = history.by_job.get(&job.name) else {
            continue;
        };
        let compiled = job
            .analysis
            .findings
            .iter()
            .any(|f| f.kind == crate::triage::FindingKind::CompileError);
        let c = &mut job.analysis.classification;
        let n = history.runs;
        if failed > 0 && passed > 0 {
            c.reasons.insert(
                0,
                format!(
                    "`{}` failed in {failed} and passed in {passed} of the last {n} runs on `{base}`",
                    job.name
                ),
            );
            if !compiled {
                c.class = Class::Flaky;
                c.confidence = 0.6;
            }
        } else if failed > 0 {
            job.predates = true;
            let c = &mut job.analysis.classification;
            c.reasons.push(format!(
                "`{}` failed in each of the last {failed} runs on `{base}` too: the failure predates this change",
                job.name
            ));
        } else if passed > 0 {
            c.reasons.push(format!(
                "`{}` passed in each of the last {passed} runs on `{base}`",
                job.name
            ));
            c.confidence = (c.confidence + 0.05).min(0.95);
        }
    }
}

fn failed_step(job: &ActionsJob) -> Option<String> {
    job.steps
        .iter()
        .find(|s| is_failure(s.conclusion.as_deref()))
        .map(|s| s.name.clone())
}

/// A job whose log could not be read: what the API says about its steps, nothing classified.
fn unread(job: &ActionsJob) -> Analysis {
    Analysis {
        step: failed_step(job),
        findings: Vec::new(),
        classification: Classification {
            class: Class::Unknown,
            confidence: 0.0,
            reasons: vec!["no log to read".into()],
            evidence: Vec::new(),
        },
        excerpt: String::new(),
    }
}

/// A failed check run of a CI service other than GitHub Actions, and not pitcrew's own.
fn is_external_failure(check: &CheckRunSummary, env: &JobEnv) -> bool {
    let slug = check.app.as_ref().and_then(|a| a.slug.as_deref()).unwrap_or("");
    let bot = &env.config().github.bot_name;
    let own = check.name == CHECK_NAME
        || check.name == "pitcrew"
        || (!slug.is_empty() && bot.trim_end_matches("[bot]").eq_ignore_ascii_case(slug));
    is_failure(check.conclusion.as_deref()) && slug != ACTIONS_APP && !own
}

fn external_job(check: &CheckRunSummary) -> FailedJob {
    let output = &check.output;
    let text: Vec<&str> = [&output.title, &output.summary, &output.text]
        .into_iter()
        .filter_map(|t| t.as_deref())
        .collect();
    let mut analysis = crate::triage::analyse(&text.join("\n\n"));
    if analysis.step.as_deref().is_some_and(|s| s.trim().is_empty()) {
        analysis.step = None;
    }
    FailedJob {
        workflow: check.app.as_ref().and_then(|a| a.slug.clone()),
        name: check.name.clone(),
        url: check.html_url.clone().or_else(|| check.details_url.clone()),
        actions_job: None,
        evidence: Evidence::CheckOutput,
        analysis,
        predates: false,
    }
}

/// pitcrew's triage check run on the commit from an earlier triage, if there is one.
async fn existing_check_run(env: &JobEnv, head_sha: &str) -> Option<CheckRunSummary> {
    match env
        .github
        .list_check_runs_for_ref(&env.repo, head_sha, Some(CHECK_NAME), RunFilter::Latest)
        .await
    {
        Ok(runs) => runs.into_iter().find(|run| run.name == CHECK_NAME),
        Err(error) => {
            tracing::warn!(%error, "could not list the commit's check runs");
            None
        }
    }
}

/// No failed job on the commit (a re-run passed, or the failure was cancelled): an earlier triage's
/// check run says so; a person who asked gets an answer; otherwise nothing is posted.
async fn nothing_failed(
    env: &JobEnv,
    triage: &Triage,
    existing: Option<CheckRunSummary>,
    asked: bool,
) -> Result<(Finish, Spent), HandlerError> {
    if let Some(run) = existing {
        let update = CheckRunUpdate {
            status: Some(CheckStatus::Completed),
            conclusion: Some(CheckConclusion::Neutral),
            completed_at: Some(SystemTime::now()),
            details_url: None,
            output: Some(text::check_run_output(triage)),
        };
        env.github
            .update_check_run(&env.repo, CheckRunId(run.id), &update)
            .await?;
    }
    let headline = format!(
        "No failed CI job on {}",
        triage.head_sha.get(..7).unwrap_or(&triage.head_sha)
    );
    if asked {
        env.reply(&format!(
            "{}\n\n{headline}: nothing to triage.",
            report::markdown::marker(&env.job_id())
        ))
        .await?;
    }
    let summary = Summary {
        headline: headline.clone(),
        conclusion: CheckConclusion::Neutral,
        commit: None,
        pull_request: triage.pull_request,
        summary: headline.clone(),
        report: headline,
        detail: Some(Detail::Triage(TriageDetail {
            head_sha: triage.head_sha.clone(),
            jobs: Vec::new(),
            fix_job: None,
            actions: Vec::new(),
        })),
    };
    Ok((super::succeeded(&summary), Spent::default()))
}

/// The model's account of the root cause, from the evidence and a read-only checkout of the commit.
/// `None` when nothing in the evidence is the code's (flaky, infrastructure and configuration
/// failures are said by their signatures; a model adds cost, not knowledge).
async fn root_cause(
    env: &JobEnv,
    settings: &EffectiveSettings,
    targets: &Targets,
    triage: &Triage,
    pull: Option<&PullRequest>,
) -> Result<Option<Outcome>, HandlerError> {
    let worth_it = triage
        .jobs
        .iter()
        .any(|j| matches!(j.analysis.classification.class, Class::Code | Class::Unknown));
    if !worth_it {
        return Ok(None);
    }
    let prompts = &env.services.prompts;
    let context = match pull {
        Some(pull) => prompts.render(
            Template::ContextCiPullRequest,
            &[
                ("sha", &triage.head_sha),
                ("number", &pull.number.0.to_string()),
                ("repo", &env.repo.to_string()),
                ("title", &pull.title),
                ("author", &pull.user.login),
                ("head", &pull.head.branch),
                ("base", &pull.base.branch),
            ],
        )?,
        None => prompts.render(
            Template::ContextCiPush,
            &[
                ("sha", &triage.head_sha),
                ("repo", &env.repo.to_string()),
                (
                    "branch",
                    &env.request
                        .ci()
                        .and_then(|ci| ci.head_branch.as_deref())
                        .map(|b| format!(" (branch `{b}`)"))
                        .unwrap_or_default(),
                ),
            ],
        )?,
    };
    let token = env.github.token().await?;
    let remote = RemoteRepo {
        url: super::parse_clone_url(&env.request.repo.clone_url)?,
        full_name: env.repo.to_string(),
    };
    let pull_ref = pull.map(|p| format!("refs/pull/{}/head", p.number.0));
    let refs: Vec<&str> = pull_ref.iter().map(String::as_str).collect();
    let mirror = env.services.mirrors.prepare(&remote, &token, &refs).await?;
    let lease = env
        .services
        .pool
        .lease(&mirror, Target::Commit(triage.head_sha.clone()))
        .await?;
    let findings = text::evidence(triage);
    let render = |session: &AgentSession| {
        env.services.prompts.render(
            Template::Triage,
            &[
                ("findings", findings.as_str()),
                ("context", context.as_str()),
                ("instructions", &session.instructions()),
            ],
        )
    };
    let outcome = run_read_only(env, settings, targets, lease.path(), Vec::new(), render).await;
    lease.release().await;
    outcome.map(Some)
}

fn stop_words(stop: &StopReason) -> String {
    match report::StopCause::from_stop(stop) {
        Some(cause) => report::headline(&report::JobEnd::Stopped { cause, saved: None }),
        None => "it gave no answer".into(),
    }
}

/// Re-runs each Actions job judged flaky, once: a job already in a re-run (attempt 2 or later) is
/// left alone.
async fn rerun_flaky(env: &JobEnv, triage: &mut Triage) {
    let mut actions = Vec::new();
    for job in triage
        .jobs
        .iter()
        .filter(|j| j.analysis.classification.class == Class::Flaky)
    {
        let Some((id, attempt)) = job.actions_job else {
            continue;
        };
        if attempt > 1 {
            actions.push(format!("Did not re-run `{}`: it was re-run already.", job.title()));
            continue;
        }
        match env.github.rerun_job(&env.repo, id).await {
            Ok(()) => actions.push(format!("Re-ran `{}` once: it looks flaky.", job.title())),
            Err(error) => actions.push(format!("Could not re-run `{}`: {error}", job.title())),
        }
    }
    triage.actions.extend(actions);
}

/// Hands the code failures to a fix job on the pull request, unless the pull request has moved on,
/// or triage has started [`MAX_AUTO_FIXES`] on it already. Returns the job and what to say about it.
async fn start_fix(env: &JobEnv, triage: &Triage, pull: Option<&PullRequest>) -> (Option<u64>, String) {
    let Some(pull) = pull else {
        return (
            None,
            "Did not start a fix: no open pull request has this commit as its head.".into(),
        );
    };
    if pull.head.sha.as_str() != triage.head_sha {
        return (
            None,
            format!(
                "Did not start a fix: the pull request has moved on to {}.",
                pull.head.sha.as_str().get(..7).unwrap_or("")
            ),
        );
    }
    let request = JobRequest {
        kind: JobKind::Fix,
        repo: env.request.repo.clone(),
        installation_id: env.request.installation_id,
        subject: Subject::PullRequest { number: pull.number },
        requested_by: env.request.requested_by.clone(),
        reply_to: ReplyTarget::Issue {
            number: pull.number,
            comment_id: None,
        },
        source: JobSource::Ci(env.request.ci().cloned().unwrap_or_else(|| CiFailure {
            event: "triage".into(),
            id: u64::try_from(env.job.id.0).unwrap_or_default(),
            name: None,
            head_branch: Some(pull.head.branch.clone()),
            pull_requests: vec![pull.number],
            html_url: None,
        })),
        instructions: Some(text::fix_instructions(triage)),
        review_comment: None,
        head_sha: Some(CommitSha(triage.head_sha.clone())),
        delivery_id: None,
    };
    let key = request.key();
    if let Some(job) = loop_pushed(env, &key, &triage.head_sha).await {
        return (
            None,
            format!(
                "Did not start a fix: this commit is pitcrew's own, pushed by the fix loop of job {job}, which read its CI."
            ),
        );
    }
    // The fixes triage started on this pull request before, by the commit they were for.
    let earlier: Vec<(i64, Option<String>)> = match env.control.jobs_of(&key, 200).await {
        Ok(jobs) => jobs
            .iter()
            .filter(|job| job.kind == "fix")
            .filter_map(|job| {
                let request = serde_json::from_value::<JobRequest>(job.request.clone()).ok()?;
                matches!(request.source, JobSource::Ci(_)).then_some((job.id.0, request.head_sha.map(|sha| sha.0)))
            })
            .collect(),
        Err(error) => return (None, format!("Did not start a fix: the job store failed ({error}).")),
    };
    if let Some((id, _)) = earlier.iter().find(|(_, sha)| sha.as_deref() == Some(&triage.head_sha)) {
        return (None, format!("A fix of this commit was started already (job {id})."));
    }
    let earlier = earlier.len();
    if earlier >= MAX_AUTO_FIXES {
        return (
            None,
            format!(
                "Did not start a fix: triage has started {earlier} on this pull request already; ask with `{} fix`.",
                env.config().agent.trigger
            ),
        );
    }
    let value = match serde_json::to_value(&request) {
        Ok(value) => value,
        Err(error) => return (None, format!("Did not start a fix: {error}.")),
    };
    let job = NewJob {
        kind: "fix".into(),
        repo: env.request.repo.name.to_string(),
        key,
        request: value,
        delivery: None,
        max_attempts: env.config().server.job_attempts.max(1),
    };
    match env.control.enqueue(job).await {
        Ok(id) => (
            u64::try_from(id.0).ok(),
            format!("Started a fix of the code failures (job {id})."),
        ),
        Err(error) => (None, format!("Did not start a fix: the job store failed ({error}).")),
    }
}

/// The fix job of `key` whose loop pushed `sha` and waited for its CI, if one did: its failures
/// were that loop's to fix (or to stop at), never a second fixer's.
async fn loop_pushed(env: &JobEnv, key: &str, sha: &str) -> Option<crate::jobs::JobId> {
    let jobs = env.control.jobs_of(key, 50).await.ok()?;
    for job in jobs.iter().filter(|job| job.kind == "fix") {
        let Ok(events) = env.control.events_of(job.id).await else {
            continue;
        };
        let pushed = events.iter().any(|event| {
            matches!(event.record(), Some(JobRecord::CiWaiting(waiting)) if waiting.round.commit.eq_ignore_ascii_case(sha))
        });
        if pushed {
            return Some(job.id);
        }
    }
    None
}

/// Posts or updates the pull request's triage comment; returns its URL for the check run's details
/// link. A later triage of the same commit updates the comment the earlier one linked.
async fn post_comment(
    env: &JobEnv,
    number: u64,
    body: &str,
    existing: Option<&CheckRunSummary>,
    asked: bool,
) -> Option<String> {
    let earlier = existing
        .and_then(|run| run.details_url.as_deref())
        .and_then(|url| url.rsplit_once("#issuecomment-"))
        .and_then(|(_, id)| id.parse::<u64>().ok());
    let result = match (earlier, asked) {
        (Some(id), false) => env
            .github
            .update_issue_comment(&env.repo, CommentId(id), body)
            .await
            .map(|c| c.html_url),
        _ if asked && matches!(env.request.reply_to, ReplyTarget::ReviewThread { .. }) => {
            env.reply(body).await.map(|()| String::new())
        }
        _ => env
            .github
            .create_issue_comment(&env.repo, IssueNumber(number), body)
            .await
            .map(|c| c.html_url),
    };
    match result {
        Ok(url) => Some(url).filter(|u| !u.is_empty()),
        Err(error) => {
            tracing::warn!(%error, "could not post the triage comment");
            None
        }
    }
}
