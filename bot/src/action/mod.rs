//! `pitcrew action`: the bot as a GitHub Actions step. The workflow's event goes through exactly
//! what the server runs — the triggers, the permission check, the job handlers and their reports —
//! with the Actions runner's `GITHUB_TOKEN` instead of an App, a job store in `RUNNER_TEMP` instead
//! of a server's data directory, and the step's outputs and summary written at the end.
//!
//! The event becomes one stored delivery; the dispatcher turns it into jobs (or a reply, or
//! nothing) and a one-worker pool runs them; then the outputs (`conclusion`, `commit_sha`,
//! `pr_number`, `summary`) go to `GITHUB_OUTPUT` and the final report to `GITHUB_STEP_SUMMARY`.

mod env;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use secrecy::ExposeSecret;

use crate::config::{Config, ConfigErrors, LoadOptions};
use crate::github::{Auth, ClientOptions, CommitSha, GithubAccess, GithubClient, IssueNumber, Login, RepoName};
use crate::handlers::{Services, job_handler};
use crate::index::shelf::IndexShelf;
use crate::instance::instance_id;
use crate::intake::{DispatchSettings, Dispatcher};
use crate::jobs::{
    DeliveryId, Job, JobFilter, JobState, JobStore, NewJob, PoolConfig, SqliteStore, WorkerPool, now_ms,
};
use crate::prompts::Prompts;
use crate::triggers::{JobKind, JobRequest, JobSource, ReplyTarget, RepoRef, Requester, Subject, TriggerConfig};
use crate::workspace::mirror::MirrorCache;
use crate::workspace::pool::{PoolLimits, WorkspacePool};

pub use env::{ActionEnv, Inputs, Mode, SandboxInput};

/// Why the step fails before or around its job (the job's own failure is an outcome).
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("{0}")]
    Environment(String),
    #[error("the configuration is invalid:\n{}", .0.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n"))]
    Config(ConfigErrors),
    #[error("could not read the event payload {path}: {message}")]
    Event { path: PathBuf, message: String },
    #[error("{0}")]
    Setup(String),
}

/// How the step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionOutcome {
    /// The event asked nothing of the bot (no trigger, an edit, a bot's comment).
    NothingToDo,
    /// The bot answered without a job (help, a refusal, a stop, a disabled command).
    Answered,
    /// A job ran and ended in `state`.
    Ran { state: JobState, conclusion: String },
}

impl ActionOutcome {
    /// The step's exit status: a job that failed or was stopped fails the step.
    pub fn success(&self) -> bool {
        match self {
            ActionOutcome::NothingToDo | ActionOutcome::Answered => true,
            ActionOutcome::Ran { state, .. } => *state == JobState::Succeeded,
        }
    }
}

/// The operator-level configuration for the step: the `config` input's file (if any), then the
/// inputs as overrides, with the model key read from the `api_key` input's variable.
pub fn load_config(action: &ActionEnv, env: &BTreeMap<String, String>) -> Result<Config, ActionError> {
    let inputs = &action.inputs;
    let mut overrides = vec![
        format!("github.api_url={}", action.api_url),
        format!("server.data_dir={}", action.data_dir().display()),
        format!("agent.trigger={}", inputs.trigger),
    ];
    let mut set = |key: &str, value: &Option<String>| {
        if let Some(value) = value {
            overrides.push(format!("{key}={value}"));
        }
    };
    set("model.provider", &inputs.provider);
    set("model.name", &inputs.model);
    set("model.base_url", &inputs.base_url);
    set("agent.max_steps", &inputs.max_steps);
    set("agent.max_cost_usd", &inputs.max_cost_usd);
    set(
        "sandbox.backend",
        &inputs.sandbox.and_then(SandboxInput::backend).map(str::to_owned),
    );
    if env.get(env::API_KEY_VAR).is_some_and(|key| !key.is_empty()) {
        // The key stays in the environment; the configuration only names the variable.
        overrides.push(format!("model.api_key_env={}", env::API_KEY_VAR));
    }
    let mut config = Config::load(LoadOptions {
        config_path: inputs.config.as_deref(),
        env,
        overrides: &overrides,
    })
    .map_err(ActionError::Config)?;
    // What the step posts is authored by the token's account: GitHub Actions' bot, unless the
    // configuration names the account of another token. The bot finds its own comments (a review's
    // summary, the dependency dashboard) by that name.
    if config.origin("github.bot_name") == crate::config::Origin::Default {
        config.github.bot_name = action.bot_login();
        if config.origin("github.bot_email") == crate::config::Origin::Default {
            // The address GitHub gives its Actions bot, so commits show its avatar.
            config.github.bot_email = "41898282+github-actions[bot]@users.noreply.github.com".to_owned();
        }
    }
    Ok(config)
}

/// Runs the step: the event through the dispatcher and the handlers, then the outputs.
pub async fn run(action: ActionEnv, config: Config, prompts: Prompts) -> Result<ActionOutcome, ActionError> {
    mask(action.inputs.github_token.expose_secret());
    if let Some(key) = &action.api_key {
        mask(key.expose_secret());
    }
    let payload = std::fs::read(&action.event_path).map_err(|e| ActionError::Event {
        path: action.event_path.clone(),
        message: e.to_string(),
    })?;
    let event: serde_json::Value = serde_json::from_slice(&payload).map_err(|e| ActionError::Event {
        path: action.event_path.clone(),
        message: format!("not JSON: {e}"),
    })?;

    let client = GithubClient::new(
        &config.github.api_url,
        Auth::Token(action.inputs.github_token.clone()),
        ClientOptions::default(),
    )
    .map_err(|e| ActionError::Setup(format!("could not make the GitHub client: {e}")))?;
    let github = GithubAccess::Token(Box::new(client));
    let data_dir = config.server.data_dir.clone();
    let store: Arc<dyn JobStore> = Arc::new(
        SqliteStore::open(&data_dir).map_err(|e| ActionError::Setup(format!("could not open the job store: {e}")))?,
    );
    let instance = instance_id(&data_dir).map_err(|e| ActionError::Setup(e.to_string()))?;
    let services = Arc::new(Services {
        instance,
        prompts,
        github: github.clone(),
        mirrors: MirrorCache::new(&data_dir),
        // One job per step: nothing to keep warm.
        pool: WorkspacePool::new(
            &data_dir,
            PoolLimits {
                per_repo: 0,
                ..PoolLimits::default()
            },
        )
        .map_err(|e| ActionError::Setup(e.to_string()))?,
        model: None,
        metrics: None,
        // One job per step: nothing to keep for a next one.
        index_shelf: IndexShelf::new(0),
        config: config.clone(),
    });
    let pool = Arc::new(WorkerPool::start(
        Arc::clone(&store),
        job_handler(services),
        PoolConfig {
            concurrency: 1,
            ..PoolConfig::default()
        },
    ));
    let delivery = DeliveryId(action.delivery_id());
    // A CI event goes through the triggers whatever the mode: they know which failures to triage.
    let ci_event = crate::triggers::CI_EVENTS.contains(&action.event_name.as_str());
    let routed = action.inputs.mode == Mode::Auto || (action.inputs.mode == Mode::Triage && ci_event);
    let jobs: Vec<Job> = if routed {
        store
            .record_delivery(&delivery, &action.event_name, Bytes::from(payload), None, now_ms())
            .await
            .map_err(|e| ActionError::Setup(format!("could not store the event: {e}")))?;
        let mut triggers = TriggerConfig::new(config.agent.trigger.clone(), action.bot_login());
        triggers.review.auto = config.review.auto;
        // A step has minutes, not the server's half hour, to get through to GitHub.
        let settings = DispatchSettings {
            max_tries: 4,
            base_backoff: Duration::from_secs(2),
            max_backoff: Duration::from_secs(15),
            ..DispatchSettings::new(triggers, 1)
        };
        let dispatcher = Dispatcher::start(Arc::clone(&store), Arc::clone(&pool), github, settings);
        let processed = wait_for(|| async {
            store
                .delivery(&delivery)
                .await
                .ok()
                .flatten()
                .is_some_and(|d| d.processed_at.is_some())
        })
        .await;
        let dropped = dispatcher.dropped();
        dispatcher.stop().await;
        if !processed || dropped > 0 {
            return Err(ActionError::Setup(
                "the event could not be handled: GitHub refused or kept failing (see the log above; check the \
                 `github_token` input and the workflow's `permissions:`)"
                    .into(),
            ));
        }
        let jobs = store.jobs(&JobFilter::default()).await.unwrap_or_default();
        jobs.into_iter()
            .filter(|job| job.delivery.as_ref() == Some(&delivery))
            .collect()
    } else {
        let request = if action.inputs.mode == Mode::Chore {
            chore_request(&action, &event, &github).await?
        } else {
            explicit_request(
                action.inputs.mode,
                &action.event_name,
                &event,
                action.inputs.prompt.as_deref(),
            )?
        };
        let job = NewJob {
            kind: request.kind.as_str().to_owned(),
            repo: request.repo.name.to_string(),
            key: request.key(),
            request: serde_json::to_value(&request).map_err(|e| ActionError::Setup(e.to_string()))?,
            delivery: None,
            max_attempts: 1,
        };
        let id = store
            .enqueue(job, now_ms())
            .await
            .map_err(|e| ActionError::Setup(format!("could not queue the job: {e}")))?;
        pool.wake();
        store.job(id).await.ok().flatten().into_iter().collect()
    };
    let outcome = if jobs.is_empty() {
        // A stop, help or refusal was answered on GitHub; anything else asked nothing of the bot.
        if action.event_mentions(&config.agent.trigger) {
            ActionOutcome::Answered
        } else {
            ActionOutcome::NothingToDo
        }
    } else {
        group(&format!("pitcrew: {} job on {}", jobs[0].kind, jobs[0].key));
        let first = jobs.iter().map(|j| j.id).min().unwrap_or(jobs[0].id);
        // The event's jobs, and those they hand work to (a triage's fix), all run in this step.
        wait_for(|| async {
            let mut done = true;
            for state in [JobState::Queued, JobState::Running] {
                let filter = JobFilter {
                    state: Some(state),
                    ..JobFilter::default()
                };
                done &= store.jobs(&filter).await.is_ok_and(|jobs| jobs.is_empty());
            }
            done
        })
        .await;
        let mut ran: Vec<Job> = store
            .jobs(&JobFilter::default())
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|job| job.id >= first)
            .collect();
        ran.sort_by_key(|job| job.id);
        for earlier in ran.iter().take(ran.len().saturating_sub(1)) {
            append_report(&action, earlier)?;
        }
        let outcome = match ran.pop() {
            Some(job) => {
                write_results(&action, &job)?;
                let conclusion = job
                    .result
                    .as_ref()
                    .and_then(|r| r["conclusion"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| state_conclusion(job.state).to_owned());
                ActionOutcome::Ran {
                    state: job.state,
                    conclusion,
                }
            }
            None => return Err(ActionError::Setup("the job vanished from the store".into())),
        };
        end_group();
        outcome
    };
    if let Ok(pool) = Arc::try_unwrap(pool) {
        pool.shutdown(Duration::from_secs(5)).await;
    }
    if outcome == ActionOutcome::NothingToDo {
        write_output(&action, &[("conclusion", "skipped")])?;
    }
    Ok(outcome)
}

/// Polls `done` until it holds; the job itself has its own wall-time budget.
async fn wait_for<F, Fut>(mut done: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    // The dispatcher gives up on a delivery after its retries; jobs end on their budgets.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(6 * 3600);
    while tokio::time::Instant::now() < deadline {
        if done().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

fn state_conclusion(state: JobState) -> &'static str {
    match state {
        JobState::Succeeded => "success",
        JobState::Cancelled => "cancelled",
        _ => "failure",
    }
}

/// The outputs and the step summary from a finished job.
fn write_results(action: &ActionEnv, job: &Job) -> Result<(), ActionError> {
    let result = job.result.clone().unwrap_or(serde_json::Value::Null);
    let text = |key: &str| result[key].as_str().map(str::to_owned);
    let conclusion = text("conclusion").unwrap_or_else(|| state_conclusion(job.state).to_owned());
    let commit = text("commit").unwrap_or_default();
    let pull_request = result["pull_request"]
        .as_u64()
        .map(|n| n.to_string())
        .unwrap_or_default();
    let summary = text("summary")
        .or_else(|| job.error.clone())
        .unwrap_or_else(|| "no summary".to_owned());
    write_output(
        action,
        &[
            ("conclusion", &conclusion),
            ("commit_sha", &commit),
            ("pr_number", &pull_request),
            ("summary", &summary),
        ],
    )?;
    append_report(action, job)
}

/// A finished job's final report, appended to the step summary.
fn append_report(action: &ActionEnv, job: &Job) -> Result<(), ActionError> {
    let result = job.result.clone().unwrap_or(serde_json::Value::Null);
    let report = result["report"].as_str().map(str::to_owned).unwrap_or_else(|| {
        format!(
            "**pitcrew · {}** ended {}: {}",
            job.kind,
            job.state,
            job.error.as_deref().unwrap_or("see the log")
        )
    });
    if let Some(path) = &action.step_summary_path {
        // The step summary is shown on GitHub (and kept with the run): it passes the secret filter.
        let redacted = crate::redact::redact(&report);
        let note = if redacted.count > 0 {
            crate::redact::WITHHELD_NOTE
        } else {
            ""
        };
        append(path, &format!("{}{note}\n", redacted.text))?;
    }
    Ok(())
}

/// Appends `name<<DELIMITER` blocks to `GITHUB_OUTPUT` (values may span lines).
fn write_output(action: &ActionEnv, outputs: &[(&str, &str)]) -> Result<(), ActionError> {
    let Some(path) = &action.output_path else {
        return Ok(());
    };
    let mut text = String::new();
    for (name, value) in outputs {
        // Outputs reach later steps and the run's page: they pass the secret filter too.
        let value = crate::redact::redact(value).text;
        let mut delimiter = format!("pitcrew_{:016x}", fastrand::u64(..));
        while value.contains(&delimiter) {
            delimiter = format!("pitcrew_{:016x}", fastrand::u64(..));
        }
        text.push_str(&format!("{name}<<{delimiter}\n{value}\n{delimiter}\n"));
    }
    append(path, &text)
}

fn append(path: &Path, text: &str) -> Result<(), ActionError> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|e| ActionError::Setup(format!("could not write {}: {e}", path.display())))
}

/// `::add-mask::` so the runner hides the value in every later log line.
fn mask(secret: &str) {
    if !secret.trim().is_empty() {
        workflow_command(&format!("::add-mask::{}", secret.trim()));
    }
}

fn group(title: &str) {
    workflow_command(&format!("::group::{title}"));
}

fn end_group() {
    workflow_command("::endgroup::");
}

/// Workflow commands go to stdout, where the runner reads them.
fn workflow_command(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// Who the workflow ran for: the event's sender, or `github-actions` when it names none.
fn sender_login(payload: &serde_json::Value) -> Result<Login, ActionError> {
    let login = payload["sender"]["login"].as_str().unwrap_or("github-actions");
    Login::parse(login).map_err(|e| ActionError::Environment(format!("the event's sender: {e}")))
}

/// `mode: chore`: the dependency chore on the workflow's repository (a `schedule` or
/// `workflow_dispatch` event names no pull request). The repository comes from the event when it
/// says (most events do), else from `GITHUB_REPOSITORY` and the API.
async fn chore_request(
    action: &ActionEnv,
    payload: &serde_json::Value,
    github: &GithubAccess,
) -> Result<JobRequest, ActionError> {
    let text = |value: &serde_json::Value| value.as_str().map(str::to_owned);
    let repository = &payload["repository"];
    let repo = match (
        text(&repository["owner"]["login"]),
        text(&repository["name"]),
        text(&repository["clone_url"]),
    ) {
        (Some(owner), Some(name), Some(clone_url)) => RepoRef {
            name: RepoName::new(&owner, &name)
                .map_err(|e| ActionError::Environment(format!("the event's repository: {e}")))?,
            clone_url,
            default_branch: text(&repository["default_branch"]).unwrap_or_else(|| "main".to_owned()),
            private: repository["private"].as_bool().unwrap_or(false),
        },
        _ => {
            let (owner, name) = action.repository.split_once('/').ok_or_else(|| {
                ActionError::Environment(format!("GITHUB_REPOSITORY {:?} is not owner/name", action.repository))
            })?;
            let repo_name =
                RepoName::new(owner, name).map_err(|e| ActionError::Environment(format!("GITHUB_REPOSITORY: {e}")))?;
            let client = github
                .client(None)
                .ok_or_else(|| ActionError::Setup("no GitHub client for the workflow's token".into()))?;
            let found = client
                .get_repo(&repo_name)
                .await
                .map_err(|e| ActionError::Setup(format!("reading the repository {repo_name}: {e}")))?;
            RepoRef {
                name: repo_name,
                clone_url: found.clone_url,
                default_branch: found.default_branch,
                private: found.private,
            }
        }
    };
    Ok(JobRequest {
        kind: JobKind::Chore(crate::triggers::Chore::Deps),
        repo,
        installation_id: None,
        subject: Subject::Repository,
        requested_by: Requester {
            login: sender_login(payload)?,
            id: payload["sender"]["id"].as_u64(),
            association: None,
        },
        reply_to: ReplyTarget::Nowhere,
        source: JobSource::Workflow {
            event: action.event_name.clone(),
        },
        instructions: None,
        review_comment: None,
        head_sha: None,
        delivery_id: None,
    })
}

/// The job an explicit `mode` asks for on the event's pull request or issue (the workflow's
/// author chose it, so no comment and no permission check is involved).
fn explicit_request(
    mode: Mode,
    event_name: &str,
    payload: &serde_json::Value,
    prompt: Option<&str>,
) -> Result<JobRequest, ActionError> {
    let kind = match mode {
        Mode::Fix => JobKind::Fix,
        Mode::Review => JobKind::Review,
        Mode::Triage => JobKind::Triage,
        Mode::Chore | Mode::Auto => {
            return Err(ActionError::Environment(
                "the event's job is decided by the triggers in mode `auto`, and `chore` runs on the repository".into(),
            ));
        }
    };
    let missing = |what: &str| ActionError::Event {
        path: PathBuf::from(event_name),
        message: format!("the `{event_name}` event has no {what}"),
    };
    let repository = &payload["repository"];
    let text = |value: &serde_json::Value| value.as_str().map(str::to_owned);
    let repo = RepoRef {
        name: RepoName::new(
            &text(&repository["owner"]["login"]).ok_or_else(|| missing("repository.owner.login"))?,
            &text(&repository["name"]).ok_or_else(|| missing("repository.name"))?,
        )
        .map_err(|e| ActionError::Environment(format!("the event's repository: {e}")))?,
        clone_url: text(&repository["clone_url"]).ok_or_else(|| missing("repository.clone_url"))?,
        default_branch: text(&repository["default_branch"]).unwrap_or_else(|| "main".to_owned()),
        private: repository["private"].as_bool().unwrap_or(false),
    };
    let (number, is_pull_request, head_sha) = if let Some(number) = payload["pull_request"]["number"].as_u64() {
        (
            number,
            true,
            text(&payload["pull_request"]["head"]["sha"])
                .map(|sha| CommitSha::parse(&sha))
                .transpose()
                .map_err(|e| ActionError::Environment(format!("the event's pull_request.head.sha: {e}")))?,
        )
    } else if let Some(number) = payload["issue"]["number"].as_u64() {
        (number, payload["issue"]["pull_request"].is_object(), None)
    } else if let Some(number) = payload["inputs"]["number"]
        .as_str()
        .and_then(|n| n.trim().parse().ok())
        .or_else(|| payload["inputs"]["number"].as_u64())
    {
        // workflow_dispatch with a `number` input: the PR or issue to work on.
        (number, matches!(kind, JobKind::Review | JobKind::Triage), None)
    } else {
        return Err(missing(
            "pull request or issue (workflow_dispatch: give a `number` input)",
        ));
    };
    if matches!(kind, JobKind::Review | JobKind::Triage) && !is_pull_request {
        return Err(ActionError::Environment(format!(
            "mode `{}` needs a pull request; #{number} is an issue",
            kind.as_str()
        )));
    }
    Ok(JobRequest {
        kind,
        repo,
        installation_id: None,
        subject: Subject::issue_or_pull(IssueNumber(number), is_pull_request),
        requested_by: Requester {
            login: sender_login(payload)?,
            id: payload["sender"]["id"].as_u64(),
            association: None,
        },
        reply_to: ReplyTarget::Issue {
            number: IssueNumber(number),
            comment_id: None,
        },
        source: JobSource::Workflow {
            event: event_name.to_owned(),
        },
        instructions: prompt.map(str::to_owned),
        review_comment: None,
        head_sha,
        delivery_id: None,
    })
}
