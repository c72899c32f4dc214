//! The per-repository configuration, `.github/pitcrew.toml` on the default branch: what a repository
//! chooses for its own jobs (model, budgets, sandbox, test command, triggers, CI triage), and how it
//! combines with the operator's [`Config`] into the [`EffectiveSettings`] one job runs with.
//!
//! The file is written by the repository's maintainers, not the operator: every problem is reported
//! at once with its line and column (to be posted as a comment), and the operator's budgets are
//! ceilings the file can lower but never raise.

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::command::{CommandKind, EnabledCommands};
use super::deps::{Ecosystem, Policy, Rule, glob_problem};
use super::duration::{format_duration, parse_duration};
use super::error::Hint;
use super::raw::line_column;
use super::schedule::{Schedule, time_zone};
use super::schema::{Kind, did_you_mean};
use super::{Config, Origin, SandboxNetwork};

/// Where the file lives in the repository; problems are reported against this path.
pub const REPO_CONFIG_PATH: &str = ".github/pitcrew.toml";

/// Every section and its keys, in the order messages list them.
pub(crate) const SECTIONS: &[(&str, &[&str])] = &[
    ("model", &["name"]),
    ("agent", &["max_steps", "max_cost_usd", "max_wall_time", "test_command"]),
    ("sandbox", &["image", "setup", "setup_network"]),
    (
        "triggers",
        &[
            "trigger",
            "commands",
            "label",
            "assign",
            "min_permission",
            "allowed_users",
        ],
    ),
    ("triage", &["on_failure", "auto_fix", "rerun_flaky", "comment"]),
    ("ci_loop", &["enabled", "max_rounds", "wait_timeout", "ignore_apps"]),
    (
        "review",
        &[
            "auto",
            "bots",
            "paths",
            "ignore_paths",
            "max_comments",
            "event",
            "instructions",
            "describe",
        ],
    ),
    (
        "chores.deps",
        &[
            "schedule",
            "timezone",
            "ecosystems",
            "major",
            "ignore",
            "group",
            "update_pinned",
            "labels",
            "reviewers",
            "assignees",
            "max_open_prs",
            "rules",
            "min_release_age",
            "dashboard",
        ],
    ),
];

/// The keys of a `[[chores.deps.rules]]` table.
pub(crate) const RULE_KEYS: &[&str] = &[
    "match",
    "ecosystems",
    "ignore",
    "major",
    "update_pinned",
    "group",
    "schedule",
];

/// GitHub refuses label names longer than this.
const MAX_LABEL_CHARS: usize = 50;

/// A repository's configuration as written: `None` (or `false` for the triage switches) means the
/// file does not set it. `RepoConfig::default()` is what an absent or empty file means.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RepoConfig {
    pub model: RepoModel,
    pub agent: RepoAgent,
    pub sandbox: RepoSandbox,
    pub triggers: RepoTriggers,
    pub triage: TriageSettings,
    /// `[ci_loop]`: after a fix is pushed, wait for CI and fix what the commit broke.
    pub ci_loop: RepoCiLoop,
    /// `[review]`: automatic reviews, and what a review says.
    pub review: RepoReview,
    /// `[chores.deps]`: dependency updates.
    pub deps: DepsChore,
}

/// `[ci_loop]` as written; `None` means the file does not say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepoCiLoop {
    /// `None`: on when the repository has CI.
    pub enabled: Option<bool>,
    pub max_rounds: Option<u32>,
    pub wait_timeout: Option<Duration>,
    /// Apps (by slug, e.g. `codecov`) whose checks the loop does not wait for nor count.
    pub ignore_apps: Vec<String>,
}

/// What the fix-until-green loop does in one repository: its `[ci_loop]` within the operator's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CiLoopSettings {
    /// `Some(false)`: off (by the operator or the repository); `Some(true)`: on, asked for; `None`:
    /// on when the repository has CI (a check suite on its base branch).
    pub enabled: Option<bool>,
    pub max_rounds: u32,
    pub wait_timeout: Duration,
    pub start_timeout: Duration,
    pub poll_interval: Duration,
    pub ignore_apps: Vec<String>,
}

/// `[review]` as written; `None` and empty lists mean the file does not say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepoReview {
    /// Review every pull request as it opens and changes; `None`: the operator's default.
    pub auto: Option<bool>,
    /// Bot accounts whose pull requests are reviewed anyway (others' are skipped).
    pub bots: Vec<String>,
    /// Only files matching these globs are reviewed; empty: every file.
    pub paths: Vec<String>,
    /// Files matching these globs are never reviewed.
    pub ignore_paths: Vec<String>,
    /// At most this many inline comments per review; the rest go to the summary.
    pub max_comments: Option<u32>,
    pub event: Option<ReviewVerdict>,
    /// What the repository tells every review, e.g. "we don't care about import order".
    pub instructions: Option<String>,
    /// Write the pull request's description section when it opens.
    pub describe: Option<bool>,
}

/// How a review with findings is posted: `[review] event`. pitcrew never approves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReviewVerdict {
    /// A comment review, whatever it found.
    #[default]
    Comment,
    /// "Request changes" when a blocking finding exists; a later review without one dismisses it.
    RequestChanges,
}

impl ReviewVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewVerdict::Comment => "comment",
            ReviewVerdict::RequestChanges => "request_changes",
        }
    }
}

/// The inline comments a review makes at most, unless `[review] max_comments` says.
pub const DEFAULT_MAX_REVIEW_COMMENTS: u32 = 10;

/// What reviews in one repository do: its `[review]` over the operator's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReviewSettings {
    /// Pull requests are reviewed as they open and change, without being asked.
    pub auto: bool,
    pub bots: Vec<String>,
    pub paths: Vec<String>,
    pub ignore_paths: Vec<String>,
    pub max_comments: u32,
    pub event: ReviewVerdict,
    pub instructions: Option<String>,
    pub describe: bool,
}

impl Default for ReviewSettings {
    /// A repository that says nothing, on a server that says nothing.
    fn default() -> Self {
        RepoConfig::default().review_settings(false)
    }
}

impl ReviewSettings {
    /// Why `path` is not reviewed (`ignored by config`, `not in [review] paths`), or `None`.
    pub fn excluded(&self, path: &str) -> Option<&'static str> {
        if self.ignore_paths.iter().any(|glob| path_glob_matches(glob, path)) {
            return Some("ignored by config");
        }
        if !self.paths.is_empty() && !self.paths.iter().any(|glob| path_glob_matches(glob, path)) {
            return Some("outside [review] paths");
        }
        None
    }

    /// Whether a pull request by `login` (a bot account) is reviewed automatically.
    pub fn reviews_bot(&self, login: &str) -> bool {
        self.bots.iter().any(|bot| bot.eq_ignore_ascii_case(login))
    }
}

/// Whether a repository-relative `path` matches a review path glob, as `.gitignore` reads them: a
/// glob without `/` matches a file's name in any directory (`*.lock`), one with `/` the whole path
/// from the root (`vendor/**`, `src/*.rs`, where `*` stays within a directory); a glob ending in
/// `/` matches everything below that directory.
pub fn path_glob_matches(glob: &str, path: &str) -> bool {
    let glob = glob.trim().trim_start_matches("./");
    let (glob, below) = match glob.strip_suffix('/') {
        Some(dir) => (format!("{}/**", dir.trim_start_matches('/')), true),
        None => (glob.trim_start_matches('/').to_owned(), false),
    };
    let anchored = below || glob.contains('/');
    let Ok(compiled) = globset::GlobBuilder::new(&glob).literal_separator(true).build() else {
        return false;
    };
    let matcher = compiled.compile_matcher();
    if anchored {
        matcher.is_match(path)
    } else {
        path.rsplit('/').next().is_some_and(|name| matcher.is_match(name)) || matcher.is_match(path)
    }
}

/// `[chores.deps]`: when and how dependencies are updated. Without a schedule the chore runs only
/// when asked (`@agent chore deps`, the Action's `mode: chore`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DepsChore {
    pub schedule: Option<Schedule>,
    /// An IANA time zone for the schedule; `None`: UTC.
    pub timezone: Option<String>,
    /// `None`: every ecosystem the repository has.
    pub ecosystems: Option<BTreeSet<Ecosystem>>,
    /// Propose major updates, in pull requests of their own.
    pub major: bool,
    /// Package name globs never updated (`*` matches any run of characters).
    pub ignore: Vec<String>,
    pub group: DepsGrouping,
    /// Move pinned versions too.
    pub update_pinned: bool,
    /// Labels put on the pull requests a chore opens (GitHub creates missing ones).
    pub labels: Vec<String>,
    /// Reviewers asked on them: logins, and teams as `org/team-slug`.
    pub reviewers: Vec<Reviewer>,
    /// Logins the pull requests are assigned to.
    pub assignees: Vec<String>,
    /// The most chore pull requests open at once: beyond it, new ones wait for a later run (the
    /// open ones are still updated). `None`: no limit.
    pub max_open_prs: Option<u32>,
    /// `[[chores.deps.rules]]`, in file order: per-package refinements of the settings above.
    pub rules: Vec<Rule>,
    /// Releases younger than this are not proposed yet.
    pub min_release_age: Option<Duration>,
    /// Keep a "Dependency dashboard" issue current on every run.
    pub dashboard: bool,
}

/// Someone asked to review a chore's pull request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reviewer {
    User(String),
    /// `org/team-slug`: the team's slug (the organisation is the repository's).
    Team(String),
}

/// How updates are grouped into pull requests (majors are always apart).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DepsGrouping {
    /// One pull request per ecosystem: `pitcrew/deps-cargo`, `pitcrew/deps-npm`, ….
    #[default]
    Ecosystem,
    /// One pull request for every ecosystem: `pitcrew/deps`.
    All,
}

impl DepsChore {
    /// The update policy these settings make.
    pub fn policy(&self) -> Policy {
        Policy {
            major: self.major,
            ignore: self.ignore.clone(),
            update_pinned: self.update_pinned,
            rules: self.rules.clone(),
            min_release_age: self.min_release_age,
            ignored_by_command: Vec::new(),
        }
    }
}

/// `[model]`: only the name; the operator's provider, server and key are always used.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepoModel {
    pub name: Option<String>,
}

/// `[agent]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RepoAgent {
    /// At least 1.
    pub max_steps: Option<u32>,
    /// Greater than zero.
    pub max_cost_usd: Option<f64>,
    /// Longer than zero.
    pub max_wall_time: Option<Duration>,
    /// The command that runs the project's tests, e.g. `cargo nextest run`; never empty.
    pub test_command: Option<String>,
}

/// `[sandbox]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepoSandbox {
    /// A Docker image reference without whitespace.
    pub image: Option<String>,
    /// A shell script run once after the sandbox starts; never empty.
    pub setup: Option<String>,
    /// Asks for network access while `setup` runs; only set together with `setup`.
    pub setup_network: Option<bool>,
}

/// `[triggers]`: who may start jobs, and how.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepoTriggers {
    /// `@` and a name without spaces.
    pub trigger: Option<String>,
    pub commands: Option<BTreeSet<CommandKind>>,
    /// Adding this label to an issue starts a fix.
    pub label: Option<String>,
    /// Assigning an issue to the bot starts a fix.
    pub assign: Option<bool>,
    pub min_permission: Option<MinPermission>,
    /// GitHub logins; never empty when set.
    pub allowed_users: Option<Vec<String>>,
}

/// `[triage]`: what to do when CI fails on a pull request. Failures are triaged (a check run with
/// the findings) unless `on_failure = false`; everything else is off unless the file turns it on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TriageSettings {
    /// Triage failing CI without being asked (`@agent triage` works either way).
    pub on_failure: bool,
    /// Try to fix a failure that triage attributes to the pull request's own change.
    pub auto_fix: bool,
    /// Re-run jobs that triage judges flaky.
    pub rerun_flaky: bool,
    /// Post triage's findings as a comment.
    pub comment: bool,
}

impl Default for TriageSettings {
    fn default() -> Self {
        TriageSettings {
            on_failure: true,
            auto_fix: false,
            rerun_flaky: false,
            comment: false,
        }
    }
}

/// The least repository permission someone needs to start a job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum MinPermission {
    #[default]
    Write,
    Maintain,
    Admin,
}

impl MinPermission {
    const CHOICES: [MinPermission; 3] = [MinPermission::Write, MinPermission::Maintain, MinPermission::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            MinPermission::Write => "write",
            MinPermission::Maintain => "maintain",
            MinPermission::Admin => "admin",
        }
    }

    /// Whether a collaborator with `permission` (as the permission API reports it, custom roles
    /// counted by their base role) meets this minimum.
    pub fn allows(self, permission: crate::github::Permission) -> bool {
        use crate::github::Permission;
        match self {
            MinPermission::Write => permission.may_write(),
            MinPermission::Maintain => matches!(permission, Permission::Admin | Permission::Maintain),
            MinPermission::Admin => permission == Permission::Admin,
        }
    }
}

/// One problem in the file. `Display` is the line to post: `.github/pitcrew.toml:3:1: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoConfigProblem {
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub column: u32,
    /// What is wrong and, where it can tell, how to fix it; without the file and position.
    pub message: String,
}

impl fmt::Display for RepoConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{REPO_CONFIG_PATH}:{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for RepoConfigProblem {}

impl RepoConfig {
    /// Parses the file, reporting every problem at once (a TOML syntax error is the only problem
    /// reported, as nothing after it can be trusted).
    pub fn parse(text: &str) -> Result<RepoConfig, Vec<RepoConfigProblem>> {
        match RepoConfig::parse_lenient(text) {
            (config, problems) if problems.is_empty() => Ok(config),
            (_, problems) => Err(problems),
        }
    }

    /// Like [`RepoConfig::parse`], but also returns every setting that was valid, for callers that
    /// carry on past a bad file with a warning (the local `pitcrew run`). After a syntax error
    /// nothing is kept.
    pub fn parse_lenient(text: &str) -> (RepoConfig, Vec<RepoConfigProblem>) {
        let root = match DeTable::parse(text) {
            Ok(root) => root,
            Err(e) => {
                let at = e.span().map_or(0, |s| s.start);
                let message = format!("invalid TOML: {}", e.message().trim().replace('\n', " "));
                return (RepoConfig::default(), vec![problem_at(text, at, message)]);
            }
        };
        let mut walk = Walk {
            config: RepoConfig::default(),
            problems: Vec::new(),
            rejected: BTreeSet::new(),
            setup_network_at: None,
        };
        for (key, value) in root.get_ref().iter() {
            walk.section(key, value);
        }
        walk.cross_checks();
        // The table iterates in key order; report in file order.
        walk.problems.sort_by_key(|(at, _)| *at);
        let problems = walk
            .problems
            .into_iter()
            .map(|(at, message)| problem_at(text, at, message))
            .collect();
        (walk.config, problems)
    }

    /// The settings a job in this repository runs with on the operator's server. The operator's
    /// budgets are ceilings, its explicitly configured image beats the repository's, and network for
    /// `setup` needs the operator's consent; every request of the file that was not granted as asked
    /// is explained in `notes`.
    pub fn apply(&self, operator: &Config) -> EffectiveSettings {
        let mut notes = Vec::new();
        let ops = &operator.agent;

        let max_steps = match self.agent.max_steps {
            Some(n) if n > ops.max_steps => {
                notes.push(format!(
                    "`[agent] max_steps = {n}` is above this server's limit of {} steps; using {}.",
                    ops.max_steps, ops.max_steps
                ));
                ops.max_steps
            }
            Some(n) => n,
            None => ops.max_steps,
        };
        let max_cost_usd = match (self.agent.max_cost_usd, ops.max_cost_usd) {
            (Some(wanted), Some(limit)) if wanted > limit => {
                notes.push(format!(
                    "`[agent] max_cost_usd = {wanted}` is above this server's limit of ${limit}; using ${limit}."
                ));
                Some(limit)
            }
            (Some(wanted), _) => Some(wanted),
            (None, limit) => limit,
        };
        let max_wall_time = match self.agent.max_wall_time {
            Some(wanted) if wanted > ops.max_wall_time => {
                let limit = format_duration(ops.max_wall_time);
                notes.push(format!(
                    "`[agent] max_wall_time = \"{}\"` is above this server's limit of {limit}; using {limit}.",
                    format_duration(wanted)
                ));
                ops.max_wall_time
            }
            Some(wanted) => wanted,
            None => ops.max_wall_time,
        };

        let sandbox = &operator.sandbox;
        let explicit = (operator.origin("sandbox.image") != Origin::Default).then_some(sandbox.image.as_str());
        let (image, image_source) = configured(explicit, self.sandbox.image.as_deref())
            .unwrap_or_else(|| (sandbox.image.clone(), ImageSource::Default));
        if let Some(wanted) = &self.sandbox.image
            && image_source == ImageSource::Operator
            && *wanted != image
        {
            notes.push(format!(
                "`[sandbox] image = \"{wanted}\"` is not used: this server runs every job in `{image}`."
            ));
        }

        let network_allowed = sandbox.setup_network || sandbox.network == SandboxNetwork::Bridge;
        let (setup, setup_network) = match &self.sandbox.setup {
            Some(script) => {
                let wanted = self.sandbox.setup_network.unwrap_or(false);
                if wanted && !network_allowed {
                    notes.push(
                        "`[sandbox] setup_network = true` is not allowed on this server; `setup` runs without network."
                            .to_owned(),
                    );
                }
                (Some(script.clone()), wanted && network_allowed)
            }
            None => (sandbox.setup.clone(), sandbox.setup_network),
        };

        EffectiveSettings {
            model_name: self.model.name.clone().unwrap_or_else(|| operator.model.name.clone()),
            max_steps,
            max_cost_usd,
            max_wall_time,
            test_command: self.agent.test_command.clone(),
            image,
            image_source,
            setup,
            setup_network,
            triggers: self.trigger_settings(&ops.trigger, operator.review.auto),
            triage: self.triage,
            review: self.review_settings(operator.review.auto),
            ci_loop: self.ci_loop_settings(&operator.ci_loop, &mut notes),
            notes,
        }
    }
}

impl RepoConfig {
    /// The loop's settings: the repository's `[ci_loop]` within the operator's bounds; what was
    /// asked and not granted goes to `notes`.
    fn ci_loop_settings(&self, operator: &crate::config::CiLoopConfig, notes: &mut Vec<String>) -> CiLoopSettings {
        let l = &self.ci_loop;
        let enabled = match (operator.enabled, l.enabled) {
            (false, Some(true)) => {
                notes.push("`[ci_loop] enabled = true` is not allowed on this server; the loop is off.".to_owned());
                Some(false)
            }
            (false, _) => Some(false),
            (true, wanted) => wanted,
        };
        let max_rounds = match l.max_rounds {
            Some(n) if n > operator.max_rounds => {
                notes.push(format!(
                    "`[ci_loop] max_rounds = {n}` is above this server's limit of {}; using {}.",
                    operator.max_rounds, operator.max_rounds
                ));
                operator.max_rounds
            }
            Some(n) => n,
            None => operator.max_rounds,
        };
        let wait_timeout = match l.wait_timeout {
            Some(wanted) if wanted > operator.wait_timeout => {
                let limit = format_duration(operator.wait_timeout);
                notes.push(format!(
                    "`[ci_loop] wait_timeout = \"{}\"` is above this server's limit of {limit}; using {limit}.",
                    format_duration(wanted)
                ));
                operator.wait_timeout
            }
            Some(wanted) => wanted,
            None => operator.wait_timeout,
        };
        CiLoopSettings {
            enabled,
            max_rounds,
            wait_timeout,
            start_timeout: operator.start_timeout.min(wait_timeout),
            poll_interval: operator.poll_interval,
            ignore_apps: l.ignore_apps.clone(),
        }
    }

    /// What reviews do here: the repository's `[review]` over the operator's `[review] auto`.
    pub fn review_settings(&self, operator_auto: bool) -> ReviewSettings {
        let r = &self.review;
        ReviewSettings {
            auto: r.auto.unwrap_or(operator_auto),
            bots: r.bots.clone(),
            paths: r.paths.clone(),
            ignore_paths: r.ignore_paths.clone(),
            max_comments: r.max_comments.unwrap_or(DEFAULT_MAX_REVIEW_COMMENTS),
            event: r.event.unwrap_or_default(),
            instructions: r.instructions.clone(),
            describe: r.describe.unwrap_or(false),
        }
    }

    /// Who may start what, and how: the repository's `[triggers]` over the operator's trigger word
    /// (and its `[review] auto`).
    pub fn trigger_settings(&self, operator_trigger: &str, operator_auto_review: bool) -> TriggerSettings {
        let t = &self.triggers;
        TriggerSettings {
            trigger: t.trigger.clone().unwrap_or_else(|| operator_trigger.to_owned()),
            commands: match &t.commands {
                Some(listed) => listed.iter().copied().collect(),
                None => EnabledCommands::default(),
            },
            label: t.label.clone(),
            assign: t.assign.unwrap_or(true),
            min_permission: t.min_permission.unwrap_or_default(),
            allowed_users: t.allowed_users.clone(),
            ci_triage: self.triage.on_failure,
            review: self.review_settings(operator_auto_review),
        }
    }
}

/// Where a job's image came from, for logs and the run summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSource {
    /// `[sandbox] image` set by the operator (file, environment or flag).
    Operator,
    /// `[sandbox] image` in the repository's `.github/pitcrew.toml`.
    RepositoryConfig,
    /// `image` in `.devcontainer/devcontainer.json` (or `.devcontainer.json`).
    DevContainer,
    Default,
}

/// The image named in configuration, if any: the operator's explicit choice, else the repository's
/// `[sandbox] image`. `None` leaves the choice to the dev container, then the default.
fn configured(operator: Option<&str>, repository: Option<&str>) -> Option<(String, ImageSource)> {
    match (operator, repository) {
        (Some(image), _) => Some((image.to_owned(), ImageSource::Operator)),
        (None, Some(image)) => Some((image.to_owned(), ImageSource::RepositoryConfig)),
        (None, None) => None,
    }
}

/// What one job in one repository runs with: the operator's [`Config`] with the repository's
/// `.github/pitcrew.toml` applied by [`RepoConfig::apply`].
#[derive(Clone, Debug, PartialEq)]
pub struct EffectiveSettings {
    /// The model, on the operator's provider and server.
    pub model_name: String,
    pub max_steps: u32,
    /// `None`: no cost limit.
    pub max_cost_usd: Option<f64>,
    pub max_wall_time: Duration,
    /// `None`: detect the project's test command.
    pub test_command: Option<String>,
    /// The image, unless `image_source` is [`ImageSource::Default`]: then the checkout's dev
    /// container may still name one (read from the checkout when its sandbox starts).
    pub image: String,
    pub image_source: ImageSource,
    pub setup: Option<String>,
    /// Network while `setup` runs.
    pub setup_network: bool,
    pub triggers: TriggerSettings,
    pub triage: TriageSettings,
    pub review: ReviewSettings,
    pub ci_loop: CiLoopSettings,
    /// What the repository asked for and did not get, one sentence each, for the job's report.
    pub notes: Vec<String>,
}

/// What the trigger layer needs to decide whether an event starts a job in this repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TriggerSettings {
    /// The mention that addresses the bot, e.g. `@agent`.
    pub trigger: String,
    /// The commands `[triggers] commands` enables (all when it says nothing).
    pub commands: EnabledCommands,
    /// Adding this label to an issue starts a fix; `None`: labels start nothing.
    pub label: Option<String>,
    /// Assigning an issue to the bot starts a fix.
    pub assign: bool,
    pub min_permission: MinPermission,
    /// When set, only these logins may start jobs (and still need `min_permission`).
    pub allowed_users: Option<Vec<String>>,
    /// `[triage] on_failure`: failing CI starts a triage without being asked.
    pub ci_triage: bool,
    /// `[review]`: which pull requests are reviewed without being asked.
    pub review: ReviewSettings,
}

impl TriggerSettings {
    /// Whether `login` is on the allow list (GitHub logins ignore case); true when there is none.
    pub fn allows_user(&self, login: &str) -> bool {
        self.allowed_users
            .as_ref()
            .is_none_or(|users| users.iter().any(|u| u.eq_ignore_ascii_case(login)))
    }
}

fn problem_at(text: &str, offset: usize, message: String) -> RepoConfigProblem {
    let (line, column) = line_column(text, offset);
    RepoConfigProblem {
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column: u32::try_from(column).unwrap_or(u32::MAX),
        message,
    }
}

type Key<'i> = Spanned<toml::de::DeString<'i>>;
type Value<'i> = Spanned<DeValue<'i>>;

/// Problems with one value: byte offset and message. Usually one; an array can have several.
type Bad = Vec<(usize, String)>;

/// One pass over the parsed file, filling `config` with every valid setting.
struct Walk {
    config: RepoConfig,
    /// Byte offset and message.
    problems: Bad,
    /// Dotted keys whose value was rejected, so cross-key checks do not repeat the problem.
    rejected: BTreeSet<String>,
    /// Where `setup_network = true` was written, for the check that it comes with `setup`.
    setup_network_at: Option<usize>,
}

impl Walk {
    fn problem(&mut self, at: usize, message: String) {
        self.problems.push((at, message));
    }

    fn section(&mut self, key: &Key<'_>, value: &Value<'_>) {
        let name: &str = key.get_ref();
        let at = key.span().start;
        if name == "chores" {
            return self.chores(key, value);
        }
        let known = SECTIONS.iter().find(|(section, _)| *section == name);
        match (known, value.get_ref()) {
            (Some(&(section, _)), DeValue::Table(table)) => {
                for (k, v) in table.iter() {
                    self.key(section, k, v);
                }
            }
            (Some(_), other) => self.problem(
                at,
                format!(
                    "`{name}` must be a table (the `[{name}]` section), found {}",
                    other.type_str()
                ),
            ),
            (None, DeValue::Table(_)) => {
                let names = SECTIONS.iter().map(|(s, _)| *s);
                let hint = Hint::closest(name, names.clone(), |s| format!("`[{s}]`"));
                let valid = names.collect::<Vec<_>>().join(", ");
                self.problem(at, format!("unknown section `[{name}]`{hint}; valid sections: {valid}"));
            }
            (None, _) => {
                let hint = match section_of(name) {
                    Some(section) => Hint::did_you_mean(format!("`{name}` under `[{section}]`")),
                    None => Hint(Some("settings go under a section header such as `[agent]`".into())),
                };
                self.problem(at, format!("`{name}` is outside any section{hint}"));
            }
        }
    }

    /// `[chores.<name>]` tables; `deps` is the only chore.
    fn chores(&mut self, key: &Key<'_>, value: &Value<'_>) {
        let DeValue::Table(table) = value.get_ref() else {
            let found = value.get_ref().type_str();
            return self.problem(
                key.span().start,
                format!("`chores` must be a table of chores (`[chores.deps]`), found {found}"),
            );
        };
        for (chore, settings) in table.iter() {
            let name: &str = chore.get_ref();
            match (name, settings.get_ref()) {
                ("deps", DeValue::Table(keys)) => {
                    for (k, v) in keys.iter() {
                        self.key("chores.deps", k, v);
                    }
                }
                ("deps", other) => self.problem(
                    chore.span().start,
                    format!(
                        "`chores.deps` must be a table (`[chores.deps]`), found {}",
                        other.type_str()
                    ),
                ),
                _ => {
                    let hint = Hint::closest(name, ["deps"], |c| format!("`[chores.{c}]`"));
                    self.problem(
                        chore.span().start,
                        format!("unknown chore `[chores.{name}]`{hint}; the chores are: deps"),
                    );
                }
            }
        }
    }

    fn key(&mut self, section: &'static str, key: &Key<'_>, v: &Value<'_>) {
        let name: &str = key.get_ref();
        let key_at = key.span().start;
        let dotted = format!("{section}.{name}");
        let key = dotted.as_str();
        let c = &mut self.config;
        let result = match (section, name) {
            ("model", "name") => word(key, v).map(|x| c.model.name = Some(x)),
            ("agent", "max_steps") => whole(key, v).map(|x| c.agent.max_steps = Some(x)),
            ("agent", "max_cost_usd") => amount(key, v).map(|x| c.agent.max_cost_usd = Some(x)),
            ("agent", "max_wall_time") => duration(key, v).map(|x| c.agent.max_wall_time = Some(x)),
            ("agent", "test_command") => script(key, v, "leave it out to detect the project's test command")
                .map(|x| c.agent.test_command = Some(x)),
            ("sandbox", "image") => word(key, v).map(|x| c.sandbox.image = Some(x)),
            ("sandbox", "setup") => {
                script(key, v, "leave it out for no setup script").map(|x| c.sandbox.setup = Some(x))
            }
            ("sandbox", "setup_network") => boolean(key, v).map(|x| {
                c.sandbox.setup_network = Some(x);
                self.setup_network_at = x.then_some(v.span().start);
            }),
            ("triggers", "trigger") => trigger(key, v).map(|x| c.triggers.trigger = Some(x)),
            ("triggers", "commands") => commands(key, v).map(|x| c.triggers.commands = Some(x)),
            ("triggers", "label") => label(key, v).map(|x| c.triggers.label = Some(x)),
            ("triggers", "assign") => boolean(key, v).map(|x| c.triggers.assign = Some(x)),
            ("triggers", "min_permission") => min_permission(key, v).map(|x| c.triggers.min_permission = Some(x)),
            ("triggers", "allowed_users") => {
                logins(key, v, "leave it out to let everyone with `min_permission` trigger")
                    .map(|x| c.triggers.allowed_users = Some(x))
            }
            ("triage", "on_failure") => boolean(key, v).map(|x| c.triage.on_failure = x),
            ("triage", "auto_fix") => boolean(key, v).map(|x| c.triage.auto_fix = x),
            ("triage", "rerun_flaky") => boolean(key, v).map(|x| c.triage.rerun_flaky = x),
            ("triage", "comment") => boolean(key, v).map(|x| c.triage.comment = x),
            ("ci_loop", "enabled") => boolean(key, v).map(|x| c.ci_loop.enabled = Some(x)),
            ("ci_loop", "max_rounds") => whole(key, v).and_then(|x| {
                if x > crate::config::MAX_CI_ROUNDS {
                    Err(invalid(
                        key,
                        v,
                        format!("must be at most {}", crate::config::MAX_CI_ROUNDS),
                    ))
                } else {
                    c.ci_loop.max_rounds = Some(x);
                    Ok(())
                }
            }),
            ("ci_loop", "wait_timeout") => duration(key, v).map(|x| c.ci_loop.wait_timeout = Some(x)),
            ("ci_loop", "ignore_apps") => app_slugs(key, v).map(|x| c.ci_loop.ignore_apps = x),
            ("chores.deps", "schedule") => string(key, v).and_then(|text| {
                Schedule::parse(text)
                    .map(|x| c.deps.schedule = Some(x))
                    .map_err(|why| invalid(key, v, why))
            }),
            ("chores.deps", "timezone") => string(key, v).and_then(|name| {
                time_zone(name)
                    .map(|_| c.deps.timezone = Some(name.to_owned()))
                    .map_err(|why| invalid(key, v, why))
            }),
            ("chores.deps", "ecosystems") => ecosystems(key, v).map(|x| c.deps.ecosystems = Some(x)),
            ("chores.deps", "major") => boolean(key, v).map(|x| c.deps.major = x),
            ("chores.deps", "update_pinned") => boolean(key, v).map(|x| c.deps.update_pinned = x),
            ("chores.deps", "ignore") => globs(key, v).map(|x| c.deps.ignore = x),
            ("chores.deps", "rules") => rules(key, v).map(|x| c.deps.rules = x),
            ("chores.deps", "min_release_age") => age(key, v).map(|x| c.deps.min_release_age = Some(x)),
            ("chores.deps", "labels") => labels(key, v).map(|x| c.deps.labels = x),
            ("chores.deps", "reviewers") => reviewers(key, v).map(|x| c.deps.reviewers = x),
            ("chores.deps", "assignees") => {
                logins(key, v, "leave it out to assign nobody").map(|x| c.deps.assignees = x)
            }
            ("chores.deps", "max_open_prs") => whole(key, v).map(|x| c.deps.max_open_prs = Some(x)),
            ("chores.deps", "dashboard") => boolean(key, v).map(|x| c.deps.dashboard = x),
            ("review", "auto") => boolean(key, v).map(|x| c.review.auto = Some(x)),
            ("review", "bots") => {
                logins(key, v, "leave it out to skip every bot's pull requests").map(|x| c.review.bots = x)
            }
            ("review", "paths") => path_globs(key, v).map(|x| c.review.paths = x),
            ("review", "ignore_paths") => path_globs(key, v).map(|x| c.review.ignore_paths = x),
            ("review", "max_comments") => whole(key, v).map(|x| c.review.max_comments = Some(x)),
            ("review", "event") => string(key, v).and_then(|event| match event {
                "comment" => {
                    c.review.event = Some(ReviewVerdict::Comment);
                    Ok(())
                }
                "request_changes" => {
                    c.review.event = Some(ReviewVerdict::RequestChanges);
                    Ok(())
                }
                "approve" => Err(invalid(
                    key,
                    v,
                    "pitcrew never approves; expected `comment` or `request_changes`",
                )),
                other => {
                    let hint = Hint::closest(other, ["comment", "request_changes"], |g| format!("`{g}`"));
                    Err(invalid(
                        key,
                        v,
                        format!("expected `comment` or `request_changes`{hint}"),
                    ))
                }
            }),
            ("review", "instructions") => {
                script(key, v, "leave it out for no instructions").map(|x| c.review.instructions = Some(x))
            }
            ("review", "describe") => boolean(key, v).map(|x| c.review.describe = Some(x)),
            ("chores.deps", "group") => string(key, v).and_then(|group| match group {
                "ecosystem" => {
                    c.deps.group = DepsGrouping::Ecosystem;
                    Ok(())
                }
                "all" => {
                    c.deps.group = DepsGrouping::All;
                    Ok(())
                }
                other => {
                    let hint = Hint::closest(other, ["ecosystem", "all"], |g| format!("`{g}`"));
                    Err(invalid(key, v, format!("expected `ecosystem` or `all`{hint}")))
                }
            }),
            _ => Err(vec![(key_at, unknown_key(section, name))]),
        };
        if let Err(bad) = result {
            self.problems.extend(bad);
            self.rejected.insert(dotted);
        }
    }

    /// Problems that involve more than one key.
    fn cross_checks(&mut self) {
        let sandbox = &self.config.sandbox;
        if let Some(at) = self.setup_network_at
            && sandbox.setup.is_none()
            && !self.rejected.contains("sandbox.setup")
        {
            self.config.sandbox.setup_network = None;
            self.problem(
                at,
                "`sandbox.setup_network` is set but there is no `sandbox.setup` script; it only opens the network \
                 while that script runs"
                    .to_owned(),
            );
        }
    }
}

/// The section holding a key named `name`, for a key written in the wrong place.
fn section_of(name: &str) -> Option<&'static str> {
    SECTIONS
        .iter()
        .find(|(_, keys)| keys.contains(&name))
        .map(|(section, _)| *section)
}

fn unknown_key(section: &str, name: &str) -> String {
    let keys = SECTIONS
        .iter()
        .find(|(s, _)| *s == section)
        .map_or(&[][..], |(_, keys)| *keys);
    let hint = match did_you_mean(name, keys.iter().copied()) {
        Some(close) => Hint::did_you_mean(format!("`{close}`")),
        None => match section_of(name) {
            Some(other) => Hint::did_you_mean(format!("`{name}` under `[{other}]`")),
            None => Hint::default(),
        },
    };
    format!(
        "unknown key `{name}` in [{section}]{hint}; valid keys in [{section}]: {}",
        keys.join(", ")
    )
}

fn wrong_type(key: &str, expected: &str, v: &Value<'_>) -> Bad {
    let found = v.get_ref().type_str();
    vec![(v.span().start, format!("`{key}` must be {expected}, found {found}"))]
}

/// A value of the right type that is not acceptable; `v` must be a string or number.
fn invalid(key: &str, v: &Value<'_>, message: impl fmt::Display) -> Bad {
    let shown = match v.get_ref() {
        DeValue::String(s) => format!("{:?}", s.as_ref()),
        DeValue::Integer(i) => i.to_string(),
        DeValue::Float(f) => f.to_string(),
        other => other.type_str().to_owned(),
    };
    vec![(v.span().start, format!("invalid `{key}` = {shown}: {message}"))]
}

fn string<'v>(key: &str, v: &'v Value<'_>) -> Result<&'v str, Bad> {
    match v.get_ref() {
        DeValue::String(s) => Ok(s.as_ref()),
        _ => Err(wrong_type(key, Kind::Str.expected(), v)),
    }
}

fn boolean(key: &str, v: &Value<'_>) -> Result<bool, Bad> {
    v.get_ref()
        .as_bool()
        .ok_or_else(|| wrong_type(key, Kind::Bool.expected(), v))
}

/// A single word such as a model name or an image reference.
fn word(key: &str, v: &Value<'_>) -> Result<String, Bad> {
    let s = string(key, v)?;
    if s.trim().is_empty() {
        Err(invalid(key, v, "must not be empty"))
    } else if s.chars().any(char::is_whitespace) {
        Err(invalid(key, v, "must not contain whitespace"))
    } else {
        Ok(s.to_owned())
    }
}

/// A shell command or script; `leave_out` says what leaving it out means.
fn script(key: &str, v: &Value<'_>, leave_out: &str) -> Result<String, Bad> {
    let s = string(key, v)?;
    if s.trim().is_empty() {
        Err(invalid(key, v, format!("must not be empty; {leave_out}")))
    } else {
        Ok(s.to_owned())
    }
}

/// A whole number of at least 1 that fits a `u32`.
fn whole(key: &str, v: &Value<'_>) -> Result<u32, Bad> {
    let DeValue::Integer(i) = v.get_ref() else {
        return Err(wrong_type(key, Kind::U32.expected(), v));
    };
    match i128::from_str_radix(i.as_str(), i.radix()) {
        Ok(n) if n < 1 => Err(invalid(key, v, "must be at least 1")),
        Ok(n) => u32::try_from(n).map_err(|_| invalid(key, v, format!("must be at most {}", u32::MAX))),
        Err(_) => Err(invalid(key, v, "not a valid integer")),
    }
}

/// An amount of money: finite and above zero.
fn amount(key: &str, v: &Value<'_>) -> Result<f64, Bad> {
    let parsed = match v.get_ref() {
        DeValue::Integer(i) => i128::from_str_radix(i.as_str(), i.radix()).ok().map(|n| n as f64),
        DeValue::Float(f) => f.as_str().parse::<f64>().ok(),
        _ => return Err(wrong_type(key, Kind::F64.expected(), v)),
    };
    match parsed {
        Some(x) if !x.is_finite() => Err(invalid(key, v, "must be a finite number")),
        Some(x) if x <= 0.0 => Err(invalid(key, v, "must be greater than zero")),
        Some(x) => Ok(x),
        None => Err(invalid(key, v, "not a valid number")),
    }
}

/// A duration string like "20m", or a whole number of seconds, longer than zero.
fn duration(key: &str, v: &Value<'_>) -> Result<Duration, Bad> {
    let text = match v.get_ref() {
        DeValue::String(s) => s.to_string(),
        DeValue::Integer(i) if i.radix() == 10 => i.as_str().to_owned(),
        _ => return Err(wrong_type(key, Kind::Duration.expected(), v)),
    };
    match parse_duration(&text) {
        Ok(d) if d.is_zero() => Err(invalid(key, v, "must be longer than zero")),
        Ok(d) => Ok(d),
        // A negative number of seconds reads as a missing number before the `-`; say it plainly.
        Err(_) if text.starts_with('-') => Err(invalid(key, v, "must not be negative")),
        Err(message) => Err(invalid(key, v, message)),
    }
}

fn trigger(key: &str, v: &Value<'_>) -> Result<String, Bad> {
    let s = string(key, v)?;
    let ok = s
        .strip_prefix('@')
        .is_some_and(|rest| !rest.is_empty() && !rest.chars().any(char::is_whitespace) && !rest.contains('@'));
    if ok {
        Ok(s.to_owned())
    } else {
        Err(invalid(
            key,
            v,
            "must be `@` followed by a name without spaces, e.g. \"@agent\"",
        ))
    }
}

fn label(key: &str, v: &Value<'_>) -> Result<String, Bad> {
    let s = string(key, v)?;
    if s.trim().is_empty() {
        Err(invalid(key, v, "must not be empty; leave it out for no trigger label"))
    } else if s.chars().count() > MAX_LABEL_CHARS {
        Err(invalid(
            key,
            v,
            format!("GitHub labels are at most {MAX_LABEL_CHARS} characters"),
        ))
    } else {
        Ok(s.to_owned())
    }
}

fn min_permission(key: &str, v: &Value<'_>) -> Result<MinPermission, Bad> {
    let s = string(key, v)?;
    if let Some(p) = MinPermission::CHOICES.into_iter().find(|p| p.as_str() == s) {
        return Ok(p);
    }
    let names = MinPermission::CHOICES.map(MinPermission::as_str);
    let hint = Hint::closest(s, names, |c| format!("`{c}`"));
    let list = names.map(|n| format!("`{n}`")).join(", ");
    Err(invalid(key, v, format!("expected one of {list}{hint}")))
}

/// Strings with the byte offset each was written at.
type Strings<'v> = Vec<(&'v str, usize)>;

/// The strings of an array with where each was written, and a problem for every item that is not
/// a string; the caller adds its own problems with the strings, so all are reported together.
fn strings<'v>(key: &str, v: &'v Value<'_>) -> Result<(Strings<'v>, Bad), Bad> {
    let DeValue::Array(items) = v.get_ref() else {
        return Err(wrong_type(key, "an array of strings", v));
    };
    let mut out = Vec::new();
    let mut bad = Vec::new();
    for item in items.iter() {
        match item.get_ref() {
            DeValue::String(s) => out.push((s.as_ref(), item.span().start)),
            other => bad.push((
                item.span().start,
                format!("`{key}` must hold only strings, found {}", other.type_str()),
            )),
        }
    }
    Ok((out, bad))
}

fn ecosystems(key: &str, v: &Value<'_>) -> Result<BTreeSet<Ecosystem>, Bad> {
    let (words, mut bad) = strings(key, v)?;
    let names = Ecosystem::ALL.map(Ecosystem::as_str);
    let mut set = BTreeSet::new();
    for (word, at) in words {
        match Ecosystem::parse(word) {
            Some(e) => {
                set.insert(e);
            }
            None => {
                let hint = Hint::closest(word, names, |c| format!("`{c}`"));
                bad.push((
                    at,
                    format!(
                        "unknown ecosystem `{word}` in `{key}`{hint}; the ecosystems are: {}",
                        names.join(", ")
                    ),
                ));
            }
        }
    }
    if bad.is_empty() { Ok(set) } else { Err(bad) }
}

fn commands(key: &str, v: &Value<'_>) -> Result<BTreeSet<CommandKind>, Bad> {
    let (words, mut bad) = strings(key, v)?;
    let names = CommandKind::ALL.map(CommandKind::name);
    let mut set = BTreeSet::new();
    for (word, at) in words {
        match CommandKind::parse(word) {
            Some(command) => {
                set.insert(command);
            }
            None => {
                let hint = Hint::closest(word, names, |c| format!("`{c}`"));
                let list = names.join(", ");
                bad.push((
                    at,
                    format!("unknown command `{word}` in `{key}`{hint}; the commands are: {list}"),
                ));
            }
        }
    }
    if bad.is_empty() { Ok(set) } else { Err(bad) }
}

/// Logins; an empty array is refused with `when_empty` (what leaving the key out means).
fn logins(key: &str, v: &Value<'_>, when_empty: &str) -> Result<Vec<String>, Bad> {
    let (words, mut bad) = strings(key, v)?;
    if words.is_empty() && bad.is_empty() {
        return Err(invalid_array(
            key,
            v,
            &format!("must name at least one login; {when_empty}"),
        ));
    }
    let mut users = Vec::new();
    for (login, at) in words {
        if is_login(login) {
            users.push(login.to_owned());
        } else {
            let fix = if login.strip_prefix('@').is_some_and(is_login) {
                "; write it without the `@`"
            } else {
                ""
            };
            bad.push((
                at,
                format!(
                    "invalid login {login:?} in `{key}`: expected a GitHub login (letters, digits and single hyphens, at most 39 characters){fix}"
                ),
            ));
        }
    }
    if bad.is_empty() { Ok(users) } else { Err(bad) }
}

/// GitHub App slugs (`codecov`, `github-actions`): lower-case letters, digits and hyphens.
fn app_slugs(key: &str, v: &Value<'_>) -> Result<Vec<String>, Bad> {
    let (names, mut bad) = strings(key, v)?;
    let mut out = Vec::new();
    for (name, at) in names {
        let slug = name.trim();
        if !slug.is_empty() && slug.len() <= 100 && slug.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            out.push(slug.to_ascii_lowercase());
        } else {
            bad.push((
                at,
                format!("invalid app {name:?} in `{key}`: expected an app's slug, e.g. \"codecov\""),
            ));
        }
    }
    if bad.is_empty() { Ok(out) } else { Err(bad) }
}

/// Review path globs (`vendor/**`, `*.lock`, `docs/`): each must compile.
fn path_globs(key: &str, v: &Value<'_>) -> Result<Vec<String>, Bad> {
    let (patterns, mut bad) = strings(key, v)?;
    let mut out = Vec::new();
    for (pattern, at) in patterns {
        let pattern = pattern.trim();
        if pattern.is_empty() {
            bad.push((at, format!("`{key}` holds an empty pattern")));
            continue;
        }
        match globset::Glob::new(pattern.trim_end_matches('/')) {
            Ok(_) => out.push(pattern.to_owned()),
            Err(error) => bad.push((at, format!("invalid pattern {pattern:?} in `{key}`: {}", error.kind()))),
        }
    }
    if bad.is_empty() { Ok(out) } else { Err(bad) }
}

/// GitHub labels: not empty, at most [`MAX_LABEL_CHARS`] characters.
fn labels(key: &str, v: &Value<'_>) -> Result<Vec<String>, Bad> {
    let (names, mut bad) = strings(key, v)?;
    let mut out = Vec::new();
    for (name, at) in names {
        if name.trim().is_empty() {
            bad.push((at, format!("`{key}` holds an empty label")));
        } else if name.chars().count() > MAX_LABEL_CHARS {
            bad.push((
                at,
                format!(
                    "label {name:?} in `{key}` is too long: GitHub labels are at most {MAX_LABEL_CHARS} characters"
                ),
            ));
        } else if !out.iter().any(|l| l == name) {
            out.push(name.to_owned());
        }
    }
    if bad.is_empty() { Ok(out) } else { Err(bad) }
}

/// Logins and `org/team-slug` teams.
fn reviewers(key: &str, v: &Value<'_>) -> Result<Vec<Reviewer>, Bad> {
    let (names, mut bad) = strings(key, v)?;
    let mut out = Vec::new();
    for (name, at) in names {
        let reviewer = match name.split_once('/') {
            Some((org, slug))
                if is_login(org)
                    && !slug.is_empty()
                    && slug
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_')) =>
            {
                Reviewer::Team(slug.to_owned())
            }
            None if is_login(name) => Reviewer::User(name.to_owned()),
            _ => {
                bad.push((
                    at,
                    format!(
                        "invalid reviewer {name:?} in `{key}`: expected a GitHub login or a team as `org/team-slug`"
                    ),
                ));
                continue;
            }
        };
        if !out.contains(&reviewer) {
            out.push(reviewer);
        }
    }
    if bad.is_empty() { Ok(out) } else { Err(bad) }
}

/// Package name globs (`serde*`, `*-sys`); an empty array is allowed (nothing ignored).
fn globs(key: &str, v: &Value<'_>) -> Result<Vec<String>, Bad> {
    let (patterns, mut bad) = strings(key, v)?;
    let mut out = Vec::new();
    for (pattern, at) in patterns {
        let pattern = pattern.trim();
        match glob_problem(pattern) {
            Some(why) => bad.push((at, format!("invalid pattern {pattern:?} in `{key}`: {why}"))),
            None => out.push(pattern.to_owned()),
        }
    }
    if bad.is_empty() { Ok(out) } else { Err(bad) }
}

/// `[[chores.deps.rules]]`: an array of tables, each with a non-empty `match` and at least one
/// setting. Every problem of every rule is reported.
fn rules(key: &str, v: &Value<'_>) -> Result<Vec<Rule>, Bad> {
    let DeValue::Array(items) = v.get_ref() else {
        return Err(wrong_type(key, "an array of tables (`[[chores.deps.rules]]`)", v));
    };
    let mut out = Vec::new();
    let mut bad = Vec::new();
    for (n, item) in items.iter().enumerate() {
        let DeValue::Table(table) = item.get_ref() else {
            bad.push((
                item.span().start,
                format!(
                    "`{key}` must hold only tables (`[[chores.deps.rules]]`), found {}",
                    item.get_ref().type_str()
                ),
            ));
            continue;
        };
        let at = item.span().start;
        let before = bad.len();
        let mut rule = Rule::default();
        let mut schedule_at = None;
        let has_match = table.iter().any(|(k, _)| {
            let name: &str = k.get_ref();
            name == "match"
        });
        for (k, value) in table.iter() {
            let name: &str = k.get_ref();
            let dotted = format!("{key}[{n}].{name}");
            let field = dotted.as_str();
            let result = match name {
                "match" => globs(field, value).and_then(|patterns| {
                    if patterns.is_empty() {
                        Err(invalid_array(
                            field,
                            value,
                            "must name at least one package (`*` matches any run of characters)",
                        ))
                    } else {
                        rule.matches = patterns;
                        Ok(())
                    }
                }),
                "ecosystems" => ecosystems(field, value).map(|x| rule.ecosystems = Some(x)),
                "ignore" => boolean(field, value).map(|x| rule.ignore = Some(x)),
                "major" => boolean(field, value).map(|x| rule.major = Some(x)),
                "update_pinned" => boolean(field, value).map(|x| rule.update_pinned = Some(x)),
                "group" => group_name(field, value).map(|x| rule.group = Some(x)),
                "schedule" => string(field, value).and_then(|text| {
                    schedule_at = Some(value.span().start);
                    Schedule::parse(text)
                        .map(|x| rule.schedule = Some(x))
                        .map_err(|why| invalid(field, value, why))
                }),
                other => {
                    let hint = match did_you_mean(other, RULE_KEYS.iter().copied()) {
                        Some(close) => Hint::did_you_mean(format!("`{close}`")),
                        None => Hint::default(),
                    };
                    Err(vec![(
                        k.span().start,
                        format!(
                            "unknown key `{other}` in a `[[{key}]]` table{hint}; valid keys: {}",
                            RULE_KEYS.join(", ")
                        ),
                    )])
                }
            };
            if let Err(problems) = result {
                bad.extend(problems);
            }
        }
        if !has_match {
            bad.push((
                at,
                format!(
                    "`{key}[{n}]` has no `match`: list the package names it applies to, e.g. `match = [\"serde*\"]`"
                ),
            ));
        }
        if let Some(at) = schedule_at
            && rule.group.is_none()
            && bad.len() == before
        {
            bad.push((
                at,
                format!(
                    "`{key}[{n}].schedule` needs a `group` in the same rule: the schedule is when that group's pull \
                     request is made (rules without a group apply on every run)"
                ),
            ));
        }
        if let (Some(at), Some(group), Some(schedule)) = (schedule_at, &rule.group, &rule.schedule)
            && let Some(earlier) = out
                .iter()
                .find(|r: &&Rule| r.group.as_ref() == Some(group) && r.schedule.as_ref().is_some_and(|s| s != schedule))
                .and_then(|r| r.schedule.as_ref())
        {
            bad.push((
                at,
                format!(
                    "`{key}[{n}].schedule` = \"{schedule}\" differs from the schedule an earlier rule gives group \
                     `{group}` (\"{earlier}\"): a group has one schedule"
                ),
            ));
        }
        let sets_something =
            rule.ignore.is_some() || rule.major.is_some() || rule.update_pinned.is_some() || rule.group.is_some();
        if !sets_something && bad.len() == before {
            bad.push((
                at,
                format!(
                    "`{key}[{n}]` sets nothing: give it at least one of `ignore`, `major`, `update_pinned`, `group`"
                ),
            ));
        }
        if bad.len() == before {
            out.push(rule);
        }
    }
    if bad.is_empty() { Ok(out) } else { Err(bad) }
}

/// A rule's group name: it makes the branch `pitcrew/deps-{name}`, so lowercase letters, digits
/// and inner `-`, and none that an ecosystem's or the majors' branch already is.
fn group_name(key: &str, v: &Value<'_>) -> Result<String, Bad> {
    let name = string(key, v)?;
    let shaped = !name.is_empty()
        && name.len() <= 40
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !shaped {
        return Err(invalid(
            key,
            v,
            "a group name is lowercase letters, digits and inner `-`, at most 40 characters (it names the branch `pitcrew/deps-<group>`)",
        ));
    }
    if Ecosystem::parse(name).is_some() || name == "major" || name.ends_with("-major") {
        return Err(invalid(
            key,
            v,
            "that name is taken by the branches of the ecosystems and of majors; choose another",
        ));
    }
    Ok(name.to_owned())
}

/// A release age: a duration like `"12h"` or `"3d"`, or in words, `"3 days"`, `"12 hours"`,
/// `"2 weeks"` (Renovate's spelling); longer than zero.
fn age(key: &str, v: &Value<'_>) -> Result<Duration, Bad> {
    let DeValue::String(text) = v.get_ref() else {
        return duration(key, v);
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    let seconds = |n: &str, unit: u64| n.parse::<u64>().ok().and_then(|n| n.checked_mul(unit));
    let in_words = match words.as_slice() {
        [n, unit] => match unit.trim_end_matches('s') {
            "minute" => seconds(n, 60),
            "hour" => seconds(n, 3_600),
            "day" => seconds(n, 86_400),
            "week" => seconds(n, 7 * 86_400),
            _ => None,
        },
        _ => None,
    };
    match in_words {
        Some(0) => Err(invalid(key, v, "must be longer than zero")),
        Some(secs) => Ok(Duration::from_secs(secs)),
        None if words.len() == 2 => Err(invalid(
            key,
            v,
            format!(
                "unknown unit `{}`; write e.g. \"3 days\", \"12 hours\", \"2 weeks\", \"30 minutes\", or \"12h\"",
                words[1]
            ),
        )),
        None => duration(key, v),
    }
}

fn invalid_array(key: &str, v: &Value<'_>, message: &str) -> Bad {
    vec![(v.span().start, format!("invalid `{key}`: {message}"))]
}

/// A GitHub login: letters, digits and single inner hyphens, at most 39 characters; an App's bot
/// account adds `[bot]`.
fn is_login(login: &str) -> bool {
    let name = login.strip_suffix("[bot]").unwrap_or(login);
    !name.is_empty()
        && name.len() <= 39
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

#[cfg(test)]
#[path = "repo_tests.rs"]
mod tests;
