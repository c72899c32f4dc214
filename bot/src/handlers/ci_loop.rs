//! Fix until green: after a fix job pushes to a pull request, it waits for the pull request's CI on
//! that exact commit, reads what failed (the triage's evidence: failing tests, compiler errors with
//! file:line, the failing step's log tail), and when the failures are the commit's own, fixes again
//! in a new round — within `[ci_loop]`'s bounds and the job's budgets.
//!
//! The wait holds no sandbox and no working copy, and gives the job's slot back to the pool
//! ([`crate::jobs::JobControl::idle`]). It is woken by the dispatcher ([`crate::jobs::CiWatch`]) when
//! a check suite, workflow run or check run of the commit completes, or something happens on the
//! pull request, and polls the commit's check suites besides, so a lost delivery costs a poll
//! interval, not the round. Every round is in the job's history ([`JobRecord::CiWaiting`]): a job
//! whose process stopped while it waited waits again after recovery.
//!
//! People win: a push by someone else to the branch, `@agent stop`, a new request on the pull
//! request, or the pull request closing ends the loop, said in the report. Failures that predate
//! the change (failing on the base branch too) are not the commit's and start no round; a job that
//! looks flaky is re-run once first.

use std::collections::HashSet;
use std::time::Duration;

use tokio::time::Instant;

use crate::agent::{Outcome, StopReason};
use crate::config::repo::EffectiveSettings;
use crate::github::{CheckSuiteSummary, GithubAccess, IssueNumber, PullRequest};
use crate::jobs::{Finish, JobState, StopCause as PoolStop};
use crate::prompts::Template;
use crate::report::ci_loop::{LoopEnd, Round, RoundCi, Timeline};
use crate::report::triage::{FailedJob, Triage};
use crate::report::{self, JobEnd, TestRun};
use crate::triage::Class;
use crate::triggers::{JobRequest, JobSource};
use crate::workspace::diff::FileStat;
use crate::workspace::push::Oid;

use super::fix::{self, Attempt};
use super::live::Targets;
use super::record::{CiWaiting, JobRecord};
use super::session::Spent;
use super::{HandlerError, JobEnv};

/// The most a job polls the Checks API while it waits as an Action (no deliveries reach it).
const ACTION_POLL: Duration = Duration::from_secs(10);

/// Where a fix job's loop stands: its rounds so far (the last one's commit is the one CI runs
/// on), what the agent did in all of them, and what the report lists.
pub(crate) struct LoopState {
    /// The pull request whose CI the loop waits on (a fix of an issue: the one it opened).
    pull: IssueNumber,
    timeline: Timeline,
    /// The pull request's head before the job's first change.
    start: String,
    /// The rounds' agent runs folded into one (summaries, usage, steps).
    outcome: Outcome,
    changed: Vec<FileStat>,
    tests: (TestRun, TestRun),
    /// The head the last round pushed onto: while GitHub still shows it, the push has not landed
    /// in the pull request yet (not someone else's push).
    previous_head: String,
    /// The end of the last round's attempt (its commit and branch).
    end: JobEnd,
    /// Actions jobs re-run once as flaky.
    reran: HashSet<u64>,
}

impl LoopState {
    /// The loop after the job's first change: `commit`, pushed to `pull`'s branch onto `start`
    /// (the head before; for a new pull request, its base).
    pub(crate) fn first(
        settings: &EffectiveSettings,
        pull: &PullRequest,
        start: &str,
        commit: &str,
        attempt: Attempt,
    ) -> LoopState {
        let timeline = Timeline {
            rounds: vec![round_of(1, commit, &attempt.outcome)],
            end: None,
            max_rounds: settings.ci_loop.max_rounds,
        };
        LoopState {
            pull: pull.number,
            timeline,
            start: start.to_owned(),
            outcome: attempt.outcome,
            changed: attempt.changed,
            tests: attempt.tests,
            previous_head: start.to_owned(),
            end: attempt.end,
            reran: HashSet::new(),
        }
    }

    fn commit(&self) -> Option<&str> {
        self.timeline.rounds.last().map(|round| round.commit.as_str())
    }

    /// Folds a later round's agent run into the job's.
    fn absorb(&mut self, number: u32, attempt: Attempt) {
        let o = &mut self.outcome;
        let summary = attempt.outcome.summary.trim();
        if !summary.is_empty() {
            o.summary = format!("{}\n\nRound {number}: {summary}", o.summary.trim_end());
        }
        o.usage.calls += attempt.outcome.usage.calls;
        o.usage.usage += attempt.outcome.usage.usage;
        o.usage.cost_usd = match (o.usage.cost_usd, attempt.outcome.usage.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        o.steps += attempt.outcome.steps;
        o.tool_calls += attempt.outcome.tool_calls;
        o.duration_ms += attempt.outcome.duration_ms;
        o.plan = attempt.outcome.plan;
        o.stop = attempt.outcome.stop;
        if !attempt.changed.is_empty() {
            self.changed = attempt.changed;
        }
        self.tests.1 = attempt.tests.1;
        // The job's delivery stays what it was (a pull request opened) unless a push follows a push.
        if matches!(
            (&self.end, &attempt.end),
            (JobEnd::Pushed { .. }, JobEnd::Pushed { .. })
        ) {
            self.end = attempt.end;
        }
    }
}

fn round_of(number: u32, commit: &str, outcome: &Outcome) -> Round {
    Round {
        number,
        commit: commit.to_owned(),
        ci: None,
        cost_usd: outcome.usage.cost_usd,
        agent_ms: outcome.duration_ms,
        waited_ms: 0,
    }
}

/// Whether the job waits for CI after its push of `commit`: `[ci_loop] enabled`, else whether the
/// repository has CI (a check suite of another app on the base branch's head). When it does, the
/// dispatcher knows the commit is the loop's from now on (its CI may report before the wait).
pub(crate) async fn applies(env: &JobEnv, settings: &EffectiveSettings, pull: &PullRequest, commit: &str) -> bool {
    let applies = match settings.ci_loop.enabled {
        Some(enabled) => enabled,
        None => match env.github.list_check_suites_for_ref(&env.repo, &pull.base.branch).await {
            Ok(suites) => suites.iter().any(|suite| counts(env, settings, suite)),
            Err(error) => {
                tracing::warn!(%error, "could not read the base branch's check suites; not waiting for CI");
                false
            }
        },
    };
    if applies {
        env.control
            .ci_watch()
            .remember(env.job.id, &env.repo.to_string(), commit);
    }
    applies
}

/// A check suite that is CI for the loop: not pitcrew's own, not an ignored app's, and one its app
/// used (GitHub makes a suite for every app with the checks permission on every push, and leaves
/// those of apps that never report queued forever).
fn counts(env: &JobEnv, settings: &EffectiveSettings, suite: &CheckSuiteSummary) -> bool {
    let slug = suite
        .app
        .as_ref()
        .and_then(|app| app.slug.as_deref())
        .unwrap_or("")
        .to_ascii_lowercase();
    // As an Action on the workflow's token pitcrew is `github-actions[bot]`, whose suites are the
    // workflows' own: its check runs are on the pull request's earlier head, never on the commit.
    let own = env
        .config()
        .github
        .bot_name
        .trim_end_matches("[bot]")
        .to_ascii_lowercase();
    let own = !slug.is_empty() && slug == own && slug != "github-actions";
    let used = suite.latest_check_runs_count != Some(0);
    used && !own && !settings.ci_loop.ignore_apps.contains(&slug)
}

/// The loop of a job whose process stopped while it waited for CI, from its history; `None` for a
/// job that never waited, or whose loop had ended.
pub(crate) async fn resumed(env: &JobEnv) -> Option<LoopState> {
    let events = env.control.events().await.ok()?;
    let records: Vec<JobRecord> = events.iter().filter_map(|event| event.record()).collect();
    let last_wait = records.iter().rposition(|r| matches!(r, JobRecord::CiWaiting(_)))?;
    if records[last_wait..]
        .iter()
        .any(|r| matches!(r, JobRecord::Finished { .. }))
    {
        return None;
    }
    let JobRecord::CiWaiting(waiting) = &records[last_wait] else {
        return None;
    };
    // The rounds before the one waited on, as they ended; each round's report, as last recorded
    // (a resumed wait records its round again).
    let mut rounds: Vec<Round> = Vec::new();
    let mut summaries: std::collections::BTreeMap<u32, &str> = std::collections::BTreeMap::new();
    let mut previous_head = waiting.start.clone();
    for record in &records[..=last_wait] {
        match record {
            JobRecord::CiRound { round } if round.number < waiting.round.number => {
                rounds.retain(|r| r.number != round.number);
                previous_head.clone_from(&round.commit);
                rounds.push(round.clone());
            }
            JobRecord::CiWaiting(w) => {
                summaries.insert(w.round.number, &w.summary);
            }
            _ => {}
        }
    }
    rounds.push(waiting.round.clone());
    let summary: Vec<String> = summaries
        .iter()
        .map(|(number, text)| match number {
            1 => (*text).to_owned(),
            n => format!("Round {n}: {text}"),
        })
        .collect();
    // The record holds the job's totals so far; cost and agent time are the rounds'.
    let outcome = Outcome {
        stop: StopReason::Finished,
        summary: summary.join("\n\n"),
        plan: Default::default(),
        usage: crate::llm::UsageTotals {
            calls: 0,
            usage: waiting.usage,
            cost_usd: rounds.iter().map(|r| r.cost_usd).sum(),
        },
        steps: waiting.steps,
        tool_calls: waiting.tool_calls,
        duration_ms: rounds.iter().map(|r| r.agent_ms).sum(),
    };
    let settings_rounds = u32::try_from(rounds.len()).unwrap_or(u32::MAX);
    let commit = waiting.round.commit.clone();
    tracing::info!(%commit, round = waiting.round.number, "resuming the wait for CI of an earlier attempt");
    let pull = match waiting.pull {
        0 => env.number().ok()?,
        number => IssueNumber(number),
    };
    let branch = env
        .github
        .get_pull(&env.repo, pull)
        .await
        .map(|pull| pull.head.branch)
        .unwrap_or_default();
    let end = match waiting.opened {
        Some(number) => JobEnd::PullRequestOpened {
            number,
            url: format!("{}/pull/{number}", super::web_url(&env.request.repo)),
        },
        None => JobEnd::Pushed {
            branch,
            commit: commit_ref(env, &commit),
            rebased: false,
        },
    };
    Some(LoopState {
        pull,
        timeline: Timeline {
            rounds,
            end: None,
            max_rounds: settings_rounds,
        },
        start: waiting.start.clone(),
        outcome,
        changed: waiting.changed.iter().map(|path| changed_file(path)).collect(),
        tests: (TestRun::NotRun, TestRun::NotRun),
        previous_head,
        end,
        reran: HashSet::new(),
    })
}

/// A changed file known by its path only (a resumed job's, from its history).
fn changed_file(path: &str) -> FileStat {
    FileStat {
        path: path.to_owned(),
        old_path: None,
        change: "modified",
        additions: 0,
        deletions: 0,
        binary: false,
    }
}

/// A commit's reference in the report.
fn commit_ref(env: &JobEnv, sha: &str) -> report::CommitRef {
    report::CommitRef {
        sha: sha.to_owned(),
        url: format!("{}/commit/{sha}", super::web_url(&env.request.repo)),
    }
}

/// How a wait for CI ended.
enum Waited {
    /// Every check suite of the commit has completed.
    Completed,
    /// No CI started on the commit within `start_timeout`.
    NoCi,
    /// CI did not complete within `wait_timeout`.
    TimedOut,
    /// Someone else pushed: the branch's head is now this.
    Moved {
        head: String,
    },
    Closed,
    /// A person asked for something else on the pull request.
    NewRequest {
        job: i64,
        by: String,
        command: String,
    },
    /// The job's token fired (`@agent stop`, a shutdown, a lost lease).
    Stopped,
    /// CI completed and was judged (only after the wait).
    Judged(Verdict),
}

/// What CI said, judged.
enum Verdict {
    /// Nothing failed that is the commit's (the rest, excused, with why).
    Passed { excused: Vec<String> },
    /// These failures are the commit's.
    Failed(Triage),
    /// Jobs that looked flaky were re-run: wait again.
    Rerun,
}

/// The loop from its current round (whose commit is pushed) to its report.
pub(crate) async fn run(
    env: &JobEnv,
    settings: &EffectiveSettings,
    targets: &Targets,
    state: LoopState,
) -> Result<(Finish, Spent), HandlerError> {
    let mut state = state;
    state.timeline.max_rounds = state.timeline.max_rounds.max(settings.ci_loop.max_rounds);
    let number = state.pull;
    let key = format!("{}#{}", env.repo, number);
    loop {
        let Some(commit) = state.commit().map(str::to_owned) else {
            return finish(env, targets, settings, state).await;
        };
        record_waiting(env, &state).await;
        show_waiting(env, targets, &state.timeline).await;
        tracing::info!(%commit, round = state.timeline.rounds.len(), "waiting for CI");
        let began = Instant::now();
        let mut settle = false;
        let waited = loop {
            let waited = {
                let watch = env.control.ci_watch();
                let watching = watch.watch(env.job.id, &env.repo.to_string(), &key, &commit);
                let wait = wait(
                    env,
                    settings,
                    &commit,
                    &state.previous_head,
                    (number, &key),
                    &watching,
                    settle,
                );
                env.control.idle(wait).await
            };
            if !matches!(waited, Waited::Completed) {
                break waited;
            }
            tracing::info!(%commit, "CI completed on the commit");
            match judge(env, settings, &commit, number, &mut state.reran).await? {
                // A re-run makes the commit's CI run again: wait for it, from the next wake-up.
                Verdict::Rerun => settle = true,
                verdict => break Waited::Judged(verdict),
            }
        };
        let waited_ms = millis(began.elapsed());
        let (ci, end) = match waited {
            Waited::Judged(verdict) => match next_round(env, settings, targets, state, verdict, waited_ms).await? {
                Next::Finish(done) => return finish(env, targets, settings, *done).await,
                Next::Again(next) => {
                    state = *next;
                    continue;
                }
            },
            Waited::Completed => (
                RoundCi::Interrupted {
                    why: "internal error".into(),
                },
                LoopEnd::TimedOut,
            ),
            Waited::Stopped => match env.control.stop_cause() {
                // Not the loop's end: the job runs again (after a restart, or elsewhere) and waits.
                Some(PoolStop::Shutdown | PoolStop::LeaseLost) => {
                    return Ok((
                        Finish::Failed("interrupted while waiting for CI".into()),
                        Spent::from_outcome(&state.outcome),
                    ));
                }
                _ => {
                    set_last(
                        &mut state.timeline,
                        RoundCi::Interrupted { why: "stopped".into() },
                        waited_ms,
                    );
                    state.end = JobEnd::Stopped {
                        cause: report::StopCause::Cancelled { by: None },
                        saved: None,
                    };
                    return finish(env, targets, settings, state).await;
                }
            },
            Waited::NoCi => (
                RoundCi::NotStarted,
                LoopEnd::NoCi {
                    token_hint: matches!(env.services.github, GithubAccess::Token(_)),
                },
            ),
            Waited::TimedOut => (RoundCi::TimedOut, LoopEnd::TimedOut),
            Waited::Moved { head } => (
                RoundCi::Interrupted {
                    why: format!("the branch moved to {}", report::short_sha(&head)),
                },
                LoopEnd::BranchMoved { head },
            ),
            Waited::Closed => (
                RoundCi::Interrupted {
                    why: "the pull request was closed".into(),
                },
                LoopEnd::Closed,
            ),
            Waited::NewRequest { job, by, command } => (
                RoundCi::Interrupted {
                    why: format!("@{by} asked for `{command}`"),
                },
                LoopEnd::NewRequest { job, by, command },
            ),
        };
        set_last(&mut state.timeline, ci, waited_ms);
        state.timeline.end = Some(end);
        return finish(env, targets, settings, state).await;
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The last round's CI, and how long it waited.
fn set_last(timeline: &mut Timeline, ci: RoundCi, waited_ms: u64) {
    if let Some(round) = timeline.rounds.last_mut() {
        round.ci = Some(ci);
        round.waited_ms = waited_ms;
    }
}

/// What comes after a round's CI completed.
enum Next {
    Finish(Box<LoopState>),
    Again(Box<LoopState>),
}

/// After CI completed on the round's commit: the end when it passed or the bound is reached, else
/// the next round's change, pushed.
async fn next_round(
    env: &JobEnv,
    settings: &EffectiveSettings,
    targets: &Targets,
    mut state: LoopState,
    verdict: Verdict,
    waited_ms: u64,
) -> Result<Next, HandlerError> {
    let triage = match verdict {
        Verdict::Passed { excused } => {
            set_last(&mut state.timeline, RoundCi::Passed { excused }, waited_ms);
            record_round(env, &state).await;
            state.timeline.end = Some(LoopEnd::Passed);
            return Ok(Next::Finish(Box::new(state)));
        }
        Verdict::Failed(triage) => triage,
        Verdict::Rerun => return Ok(Next::Again(Box::new(state))),
    };
    let jobs: Vec<String> = triage.jobs.iter().map(FailedJob::title).collect();
    set_last(&mut state.timeline, RoundCi::Failed { jobs }, waited_ms);
    record_round(env, &state).await;
    let done = state.timeline.rounds.len() as u32;
    if done >= settings.ci_loop.max_rounds {
        state.timeline.end = Some(LoopEnd::StillFailing {
            why: format!(
                "that was the last of {} (`[ci_loop] max_rounds`)",
                plural_rounds(settings.ci_loop.max_rounds)
            ),
        });
        return Ok(Next::Finish(Box::new(state)));
    }
    let Some(narrowed) = remaining_budget(settings, &state.outcome) else {
        state.timeline.end = Some(LoopEnd::StillFailing {
            why: "the job's cost or time budget is spent".into(),
        });
        return Ok(Next::Finish(Box::new(state)));
    };
    // The next round starts from the branch as it is; someone else's push ends the loop instead.
    let pull = env.github.get_pull(&env.repo, state.pull).await?;
    let commit = state.commit().unwrap_or_default().to_owned();
    if !pull.head.sha.as_str().eq_ignore_ascii_case(&commit) {
        let head = pull.head.sha.as_str().to_owned();
        state.timeline.end = Some(LoopEnd::BranchMoved { head });
        return Ok(Next::Finish(Box::new(state)));
    }
    let number = done + 1;
    let task = round_task(env, settings, &state, &triage, number)?;
    let since = Oid::from_str(&state.start).map_err(|_| {
        HandlerError::Other(format!(
            "the pull request's first head {:?} is not a commit id",
            state.start
        ))
    })?;
    let attempt = fix::attempt(env, &narrowed, targets, &pull, Some((task, since))).await?;
    // The round as the timeline shows it: its commit, and what its own agent run spent.
    let pushed = match &attempt.end {
        JobEnd::Pushed { commit, .. } => Some(round_of(number, &commit.sha, &attempt.outcome)),
        _ => None,
    };
    let failed_end = attempt.end.clone();
    // The branch moved while the round worked: its change went on top of someone else's push.
    let rebased = matches!(&attempt.end, JobEnd::Pushed { rebased: true, .. });
    state.absorb(number, attempt);
    match pushed {
        Some(round) => {
            env.control
                .ci_watch()
                .remember(env.job.id, &env.repo.to_string(), &round.commit);
            state.previous_head = pull.head.sha.as_str().to_owned();
            state.timeline.rounds.push(round);
            if rebased {
                // People win: the loop does not go on over someone else's work.
                set_last(
                    &mut state.timeline,
                    RoundCi::Interrupted {
                        why: "someone else pushed to the branch during the round".into(),
                    },
                    0,
                );
                state.timeline.end = Some(LoopEnd::MovedDuringRound { round: number });
                return Ok(Next::Finish(Box::new(state)));
            }
            Ok(Next::Again(Box::new(state)))
        }
        None => {
            if let JobEnd::Stopped {
                cause: report::StopCause::Cancelled { .. },
                ..
            } = &failed_end
            {
                // Stopped while the round worked: the job ends stopped, with the timeline so far.
                state.end = failed_end;
                return Ok(Next::Finish(Box::new(state)));
            }
            // The round delivered nothing: the report keeps the job's last delivery.
            state.timeline.end = Some(LoopEnd::RoundFailed {
                why: report::headline(&failed_end),
            });
            Ok(Next::Finish(Box::new(state)))
        }
    }
}

fn plural_rounds(n: u32) -> String {
    if n == 1 {
        "1 round".into()
    } else {
        format!("{n} rounds")
    }
}

/// The settings of a later round: the job's cost and wall-time budgets less what the earlier
/// rounds spent; `None` when nothing is left.
fn remaining_budget(settings: &EffectiveSettings, spent: &Outcome) -> Option<EffectiveSettings> {
    let mut narrowed = settings.clone();
    if let Some(limit) = settings.max_cost_usd {
        // An unknown price cannot be budgeted: the round runs on the steps and time budgets.
        if let Some(cost) = spent.usage.cost_usd {
            let left = limit - cost;
            if left <= 0.0 {
                return None;
            }
            narrowed.max_cost_usd = Some(left);
        }
    }
    let used = Duration::from_millis(spent.duration_ms);
    narrowed.max_wall_time = settings.max_wall_time.checked_sub(used).filter(|d| !d.is_zero())?;
    Some(narrowed)
}

/// The agent's task in a later round: the failures, the earlier rounds, the original request.
fn round_task(
    env: &JobEnv,
    settings: &EffectiveSettings,
    state: &LoopState,
    triage: &Triage,
    number: u32,
) -> Result<String, HandlerError> {
    let rounds: Vec<String> = state
        .timeline
        .rounds
        .iter()
        .map(|round| {
            let ci = match &round.ci {
                Some(RoundCi::Failed { jobs }) => format!("CI failed: {}", jobs.join(", ")),
                Some(RoundCi::Passed { .. }) => "CI passed".to_owned(),
                _ => "CI did not finish".to_owned(),
            };
            format!(
                "- Round {} pushed {}: {ci}.",
                round.number,
                report::short_sha(&round.commit)
            )
        })
        .collect();
    let mut rounds = rounds.join("\n");
    let summary = state.outcome.summary.trim();
    if !summary.is_empty() {
        let summary: String = summary.chars().take(4000).collect();
        rounds.push_str(&format!(
            "\n\nYour reports so far:\n\n{}",
            super::quote_capped(&summary)
        ));
    }
    let task = fix::asked_task(env);
    Ok(env.services.prompts.render(
        Template::CiRound,
        &[
            ("sha", report::short_sha(&triage.head_sha)),
            ("round", &number.to_string()),
            ("max_rounds", &settings.ci_loop.max_rounds.to_string()),
            ("task", task.trim()),
            ("rounds", &rounds),
            ("findings", &report::triage::evidence(triage)),
        ],
    )?)
}

/// Waits until CI completes on `commit`, or something ends the wait.
async fn wait(
    env: &JobEnv,
    settings: &EffectiveSettings,
    commit: &str,
    previous_head: &str,
    (number, key): (IssueNumber, &str),
    watching: &crate::jobs::Watching,
    settle: bool,
) -> Waited {
    let started = Instant::now();
    let limits = &settings.ci_loop;
    let poll = match env.services.github {
        GithubAccess::Token(_) => limits.poll_interval.min(ACTION_POLL),
        GithubAccess::App(_) => limits.poll_interval,
    };
    let mut seen_ci = settle;
    if settle {
        tokio::select! {
            () = watching.woken() => {}
            () = tokio::time::sleep(poll) => {}
            () = env.control.token().cancelled() => {}
        }
    }
    loop {
        if env.control.is_cancelled() {
            return Waited::Stopped;
        }
        if let Some(ended) = people(env, commit, previous_head, number, key).await {
            return ended;
        }
        match ci_state(env, settings, commit).await {
            Ok(CiState::Complete) => return Waited::Completed,
            Ok(CiState::Running) => seen_ci = true,
            Ok(CiState::NotStarted) => {
                if !seen_ci && started.elapsed() >= limits.start_timeout {
                    return Waited::NoCi;
                }
            }
            Err(error) => tracing::warn!(%error, "could not read the commit's check suites; trying again"),
        }
        let elapsed = started.elapsed();
        if elapsed >= limits.wait_timeout {
            return Waited::TimedOut;
        }
        let mut next = poll.min(limits.wait_timeout - elapsed);
        if !seen_ci && elapsed < limits.start_timeout {
            next = next.min(limits.start_timeout - elapsed);
        }
        tokio::select! {
            () = watching.woken() => {}
            () = tokio::time::sleep(next) => {}
            () = env.control.token().cancelled() => {}
        }
    }
}

/// What CI on a commit is doing.
enum CiState {
    NotStarted,
    Running,
    Complete,
}

async fn ci_state(env: &JobEnv, settings: &EffectiveSettings, commit: &str) -> Result<CiState, HandlerError> {
    let suites = env.github.list_check_suites_for_ref(&env.repo, commit).await?;
    let counted: Vec<&CheckSuiteSummary> = suites.iter().filter(|s| counts(env, settings, s)).collect();
    if counted.is_empty() {
        return Ok(CiState::NotStarted);
    }
    let complete = counted.iter().all(|s| s.status.as_deref() == Some("completed"));
    Ok(if complete { CiState::Complete } else { CiState::Running })
}

/// Whether people took over the pull request: someone else pushed, it closed, or a person asked
/// for something new on it.
async fn people(env: &JobEnv, commit: &str, previous_head: &str, number: IssueNumber, key: &str) -> Option<Waited> {
    match env.github.get_pull(&env.repo, number).await {
        Ok(pull) => {
            let head = pull.head.sha.as_str();
            if pull.state != "open" {
                return Some(Waited::Closed);
            }
            // GitHub may show the head from before the push for a moment.
            if !head.eq_ignore_ascii_case(commit) && !head.eq_ignore_ascii_case(previous_head) {
                return Some(Waited::Moved { head: head.to_owned() });
            }
        }
        Err(error) => tracing::warn!(%error, "could not read the pull request while waiting for CI"),
    }
    let jobs = env.control.jobs_of(key, 20).await.ok()?;
    jobs.iter()
        .filter(|job| job.id > env.job.id && job.state == JobState::Queued)
        .find_map(|job| {
            let request: JobRequest = serde_json::from_value(job.request.clone()).ok()?;
            let asked = matches!(
                request.source,
                JobSource::Comment { .. }
                    | JobSource::ReviewComment { .. }
                    | JobSource::Assigned
                    | JobSource::Labeled { .. }
            );
            asked.then(|| Waited::NewRequest {
                job: job.id.0,
                by: request.requested_by.login.to_string(),
                command: request.kind.as_str().to_owned(),
            })
        })
}

/// Reads the commit's failures and judges them: the commit's own, or excused (failing on the
/// base branch too; flaky or the machine's after one re-run); flaky Actions jobs not re-run yet
/// are re-run, once.
async fn judge(
    env: &JobEnv,
    settings: &EffectiveSettings,
    commit: &str,
    number: IssueNumber,
    reran: &mut HashSet<u64>,
) -> Result<Verdict, HandlerError> {
    let pull_base = env.github.get_pull(&env.repo, number).await?.base.branch;
    let mut triage = super::triage::gather(env, commit, Some(number.0), &pull_base).await?;
    let ignored = &settings.ci_loop.ignore_apps;
    let mut caused = Vec::new();
    let mut excused = Vec::new();
    let mut rerun = false;
    for job in std::mem::take(&mut triage.jobs) {
        let app = match job.actions_job {
            Some(_) => "github-actions".to_owned(),
            None => job.workflow.clone().unwrap_or_default().to_ascii_lowercase(),
        };
        if ignored.contains(&app) {
            continue;
        }
        let class = job.analysis.classification.class;
        match class {
            Class::Flaky | Class::Infrastructure => match job.actions_job {
                Some((id, attempt)) if attempt == 1 && !reran.contains(&id) => {
                    reran.insert(id);
                    match env.github.rerun_job(&env.repo, id).await {
                        Ok(()) => rerun = true,
                        Err(error) => {
                            tracing::warn!(%error, "could not re-run a flaky job");
                            excused.push(format!(
                                "`{}` looks {} and could not be re-run",
                                job.title(),
                                class.name()
                            ));
                        }
                    }
                }
                _ => excused.push(format!(
                    "`{}` looks {} (it failed again after a re-run)",
                    job.title(),
                    class.name()
                )),
            },
            _ if job.predates => excused.push(format!("`{}` fails on `{pull_base}` too", job.title())),
            _ => caused.push(job),
        }
    }
    tracing::info!(caused = caused.len(), excused = excused.len(), rerun, "CI judged");
    if !caused.is_empty() {
        triage.jobs = caused;
        return Ok(Verdict::Failed(triage));
    }
    if rerun {
        return Ok(Verdict::Rerun);
    }
    Ok(Verdict::Passed { excused })
}

/// Records the round waited on, with what a retry needs.
async fn record_waiting(env: &JobEnv, state: &LoopState) {
    let Some(round) = state.timeline.rounds.last() else {
        return;
    };
    let waiting = CiWaiting {
        round: round.clone(),
        start: state.start.clone(),
        summary: if round.number == 1 {
            state.outcome.summary.clone()
        } else {
            state
                .outcome
                .summary
                .rsplit_once(&format!("Round {}: ", round.number))
                .map(|(_, last)| last.to_owned())
                .unwrap_or_default()
        },
        pull: state.pull.0,
        opened: match &state.end {
            JobEnd::PullRequestOpened { number, .. } => Some(*number),
            _ => None,
        },
        usage: state.outcome.usage.usage,
        steps: state.outcome.steps,
        tool_calls: state.outcome.tool_calls,
        changed: state.changed.iter().map(|f| f.path.clone()).collect(),
    };
    let _ = env.control.record(&JobRecord::CiWaiting(waiting)).await;
}

async fn record_round(env: &JobEnv, state: &LoopState) {
    if let Some(round) = state.timeline.rounds.last() {
        let _ = env.control.record(&JobRecord::CiRound { round: round.clone() }).await;
    }
}

/// The check run and the progress comment while the job waits: the timeline so far, and which
/// commit it waits on.
async fn show_waiting(env: &JobEnv, targets: &Targets, timeline: &Timeline) {
    let line = timeline.waiting_line().unwrap_or_else(|| "waiting for CI".into());
    let web = super::web_url(&env.request.repo);
    let section = timeline.render(&|sha| format!("{web}/commit/{sha}"));
    let mut output = report::check_run::in_progress(&targets.info, &Default::default(), Some(&line));
    output.title = report::markdown::inline(&capitalised(&line));
    output.summary = format!("{}\n\n{section}", output.summary);
    let update = crate::github::CheckRunUpdate {
        status: Some(crate::github::CheckStatus::InProgress),
        output: Some(output),
        ..Default::default()
    };
    if let Err(error) = targets.set_check_run(update).await {
        tracing::warn!(%error, "could not update the check run");
    }
    let body = report::progress::live(&targets.info, &Default::default(), Some(&line));
    if let Err(error) = targets.set_comment(&format!("{body}\n\n{section}")).await {
        tracing::warn!(%error, "could not update the progress comment");
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The job's report: the last commit pushed, what all rounds did and spent, and the timeline.
async fn finish(
    env: &JobEnv,
    targets: &Targets,
    settings: &EffectiveSettings,
    state: LoopState,
) -> Result<(Finish, Spent), HandlerError> {
    let ended = super::Ended {
        end: state.end,
        outcome: state.outcome,
        changed_files: state.changed,
        tests: fix::tests_delta(&state.tests),
        ci: Some(state.timeline),
    };
    Ok(super::conclude(env, targets, ended, &[], settings).await)
}
