//! What the Actions runner gives a step: the `GITHUB_*` variables and the action's inputs as
//! `INPUT_<NAME>` (upper case, as Docker actions receive them), read into [`ActionEnv`] with one
//! clear error per missing or invalid value.

use std::collections::BTreeMap;
use std::path::PathBuf;

use secrecy::SecretString;
use url::Url;

use super::ActionError;

/// How long `sandbox: auto` waits for the Docker engine to answer.
const AUTO_PROBE: std::time::Duration = std::time::Duration::from_secs(5);

/// The variable holding the `api_key` input; the model client reads the key from it.
pub const API_KEY_VAR: &str = "INPUT_API_KEY";

/// What the step was asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Decide from the event, as the server does.
    Auto,
    Fix,
    Review,
    Triage,
    Chore,
}

/// Where the step's commands run (the `sandbox` input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxInput {
    /// `docker` when the runner's Docker engine answers (GitHub's hosted Ubuntu runners have one),
    /// else `local`; [`ActionEnv::resolve_sandbox`] decides before anything else runs.
    Auto,
    Docker,
    Local,
}

impl SandboxInput {
    /// The `[sandbox] backend` this input stands for, once decided.
    pub fn backend(self) -> Option<&'static str> {
        match self {
            SandboxInput::Auto => None,
            SandboxInput::Docker => Some("docker"),
            SandboxInput::Local => Some("local"),
        }
    }
}

/// The action's inputs (`action.yml`).
#[derive(Debug, Clone)]
pub struct Inputs {
    pub trigger: String,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub github_token: SecretString,
    pub mode: Mode,
    pub prompt: Option<String>,
    pub max_steps: Option<String>,
    pub max_cost_usd: Option<String>,
    /// `None` when the input is not given: the `config` file's `[sandbox] backend` decides.
    pub sandbox: Option<SandboxInput>,
    pub config: Option<PathBuf>,
}

/// The step's environment.
#[derive(Debug, Clone)]
pub struct ActionEnv {
    pub event_name: String,
    pub event_path: PathBuf,
    /// `owner/name`.
    pub repository: String,
    pub api_url: Url,
    pub server_url: Url,
    pub workspace: Option<PathBuf>,
    pub sha: Option<String>,
    pub git_ref: Option<String>,
    pub output_path: Option<PathBuf>,
    pub step_summary_path: Option<PathBuf>,
    pub runner_temp: PathBuf,
    /// `HOME`: in a container action, a directory mounted from the runner (`/github/home`).
    pub home: Option<PathBuf>,
    /// `GITHUB_RUN_ID`-`GITHUB_RUN_ATTEMPT`, naming the step's one delivery.
    pub run: Option<String>,
    pub api_key: Option<SecretString>,
    pub inputs: Inputs,
}

impl ActionEnv {
    /// Reads the runner's variables; every problem is reported at once.
    pub fn from_env(env: &BTreeMap<String, String>) -> Result<ActionEnv, ActionError> {
        let mut problems = Vec::new();
        let get = |name: &str| env.get(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let mut required = |name: &str| {
            get(name).unwrap_or_else(|| {
                problems.push(format!("{name} is not set (is this running as a GitHub Actions step?)"));
                String::new()
            })
        };
        let event_name = required("GITHUB_EVENT_NAME");
        let event_path = required("GITHUB_EVENT_PATH");
        let repository = required("GITHUB_REPOSITORY");
        let token = required("INPUT_GITHUB_TOKEN");
        let url = |name: &str, default: &str, problems: &mut Vec<String>| {
            let text = get(name).unwrap_or_else(|| default.to_owned());
            Url::parse(&text).unwrap_or_else(|e| {
                problems.push(format!("{name} = {text:?} is not a URL: {e}"));
                #[expect(clippy::unwrap_used, reason = "a constant URL")]
                Url::parse("https://invalid.invalid").unwrap()
            })
        };
        let api_url = url("GITHUB_API_URL", "https://api.github.com", &mut problems);
        let server_url = url("GITHUB_SERVER_URL", "https://github.com", &mut problems);
        let mode = match get("INPUT_MODE").as_deref().map(str::to_ascii_lowercase).as_deref() {
            None | Some("auto") => Mode::Auto,
            Some("fix") => Mode::Fix,
            Some("review") => Mode::Review,
            Some("triage") => Mode::Triage,
            Some("chore") => Mode::Chore,
            Some(other) => {
                problems.push(format!(
                    "the `mode` input {other:?} is not one of auto, fix, review, triage, chore"
                ));
                Mode::Auto
            }
        };
        let sandbox = match get("INPUT_SANDBOX").as_deref().map(str::to_ascii_lowercase).as_deref() {
            None => None,
            Some("auto") => Some(SandboxInput::Auto),
            Some("docker") => Some(SandboxInput::Docker),
            Some("local") => Some(SandboxInput::Local),
            Some(other) => {
                problems.push(format!(
                    "the `sandbox` input {other:?} is not one of auto, docker, local"
                ));
                None
            }
        };
        let trigger = get("INPUT_TRIGGER").unwrap_or_else(|| "@agent".to_owned());
        if !trigger.starts_with('@') || trigger.len() < 2 || trigger.contains(char::is_whitespace) {
            problems.push(format!(
                "the `trigger` input {trigger:?} must be a mention like \"@agent\" (no spaces)"
            ));
        }
        if !problems.is_empty() {
            return Err(ActionError::Environment(problems.join("\n")));
        }
        let api_key = get(API_KEY_VAR).map(SecretString::from);
        let github_token = SecretString::from(token);
        for secret in std::iter::once(&github_token).chain(&api_key) {
            crate::redact::register(secret);
        }
        let runner_temp = get("RUNNER_TEMP").map_or_else(std::env::temp_dir, PathBuf::from);
        let home = get("HOME").map(PathBuf::from);
        let run = match (get("GITHUB_RUN_ID"), get("GITHUB_RUN_ATTEMPT")) {
            (Some(id), Some(attempt)) => Some(format!("{id}-{attempt}")),
            (Some(id), None) => Some(id),
            _ => None,
        };
        Ok(ActionEnv {
            event_name,
            event_path: PathBuf::from(event_path),
            repository,
            api_url,
            server_url,
            workspace: get("GITHUB_WORKSPACE").map(PathBuf::from),
            sha: get("GITHUB_SHA"),
            git_ref: get("GITHUB_REF"),
            output_path: get("GITHUB_OUTPUT").map(PathBuf::from),
            step_summary_path: get("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            runner_temp,
            home,
            run,
            api_key,
            inputs: Inputs {
                trigger,
                provider: get("INPUT_PROVIDER"),
                model: get("INPUT_MODEL"),
                base_url: get("INPUT_BASE_URL"),
                github_token,
                mode,
                prompt: get("INPUT_PROMPT"),
                max_steps: get("INPUT_MAX_STEPS"),
                max_cost_usd: get("INPUT_MAX_COST_USD"),
                sandbox,
                config: get("INPUT_CONFIG").map(PathBuf::from),
            },
        })
    }

    /// Where the step keeps its job store, mirror and working copy.
    ///
    /// With the Docker sandbox the working copies are mounted into sandboxes by the runner's engine,
    /// so they must be on a directory the runner mounted into the step's container: `HOME`
    /// (`/github/home` is the runner's `_temp/_github_home`). `RUNNER_TEMP` itself is a runner path
    /// that is not mounted.
    pub fn data_dir(&self) -> PathBuf {
        match (&self.home, self.inputs.sandbox) {
            (Some(home), Some(SandboxInput::Docker)) => home.join(".pitcrew"),
            _ => self.runner_temp.join("pitcrew"),
        }
    }

    /// Decides an `auto` sandbox: `docker` when the engine at `DOCKER_HOST` (the runner's socket by
    /// default) answers within a few seconds, else `local`. Returns what was decided and why, for
    /// the log; nothing when the input named a backend or none.
    pub async fn resolve_sandbox(&mut self) -> Option<String> {
        if self.inputs.sandbox != Some(SandboxInput::Auto) {
            return None;
        }
        let probe = tokio::time::timeout(AUTO_PROBE, crate::sandbox::docker::DockerSandbox::connect()).await;
        let (choice, why) = match probe {
            Ok(Ok(_)) => (SandboxInput::Docker, "the runner's Docker engine answered".to_owned()),
            Ok(Err(err)) => (SandboxInput::Local, err.to_string()),
            Err(_) => (
                SandboxInput::Local,
                format!("the Docker engine did not answer within {}s", AUTO_PROBE.as_secs()),
            ),
        };
        self.inputs.sandbox = Some(choice);
        Some(match choice {
            SandboxInput::Docker => format!("sandbox: docker ({why})"),
            _ => format!(
                "sandbox: local ({why}); commands run in the action's container as an unprivileged user, \
                 with the runner's network"
            ),
        })
    }

    /// The step's one delivery id: the run and its attempt (unique per re-run).
    pub fn delivery_id(&self) -> String {
        match &self.run {
            Some(run) => format!("actions-{run}"),
            None => format!("actions-{:016x}", fastrand::u64(..)),
        }
    }

    /// Whether the event's comment mentions `trigger` (so the bot answered it, job or not).
    pub fn event_mentions(&self, trigger: &str) -> bool {
        std::fs::read(&self.event_path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
            .and_then(|payload| payload["comment"]["body"].as_str().map(str::to_lowercase))
            .is_some_and(|body| body.contains(&trigger.to_lowercase()))
    }

    /// Comments made with `GITHUB_TOKEN` are by this account; its own are never commands.
    pub fn bot_login(&self) -> String {
        "github-actions[bot]".to_owned()
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn the_runner_variables_and_inputs_are_read() {
        let action = ActionEnv::from_env(&env(&[
            ("GITHUB_EVENT_NAME", "issue_comment"),
            ("GITHUB_EVENT_PATH", "/github/workflow/event.json"),
            ("GITHUB_REPOSITORY", "acme/widgets"),
            ("GITHUB_API_URL", "https://ghe.example/api/v3"),
            ("GITHUB_RUN_ID", "42"),
            ("GITHUB_RUN_ATTEMPT", "2"),
            ("RUNNER_TEMP", "/tmp/runner"),
            ("INPUT_GITHUB_TOKEN", "ghs_x"),
            ("INPUT_MODE", "Review"),
            ("INPUT_TRIGGER", "@crew"),
            ("INPUT_MODEL", " "),
        ]))
        .unwrap();
        assert_eq!(action.event_name, "issue_comment");
        assert_eq!(action.api_url.as_str(), "https://ghe.example/api/v3");
        assert_eq!(action.server_url.as_str(), "https://github.com/");
        assert_eq!(action.inputs.mode, Mode::Review);
        assert_eq!(action.inputs.trigger, "@crew");
        assert_eq!(action.inputs.model, None, "an empty input is not set");
        assert_eq!(action.delivery_id(), "actions-42-2");
        assert_eq!(action.data_dir(), PathBuf::from("/tmp/runner/pitcrew"));
    }

    /// A container action's variables on a hosted runner, with the `sandbox` input if given.
    fn container_step(sandbox: Option<&str>) -> BTreeMap<String, String> {
        let mut vars = env(&[
            ("GITHUB_EVENT_NAME", "schedule"),
            ("GITHUB_EVENT_PATH", "/github/workflow/event.json"),
            ("GITHUB_REPOSITORY", "acme/widgets"),
            ("RUNNER_TEMP", "/home/runner/work/_temp"),
            ("HOME", "/github/home"),
            ("INPUT_GITHUB_TOKEN", "ghs_x"),
        ]);
        if let Some(sandbox) = sandbox {
            vars.insert("INPUT_SANDBOX".to_owned(), sandbox.to_owned());
        }
        vars
    }

    #[test]
    fn with_the_docker_sandbox_the_data_lives_under_the_mounted_home() {
        let action = ActionEnv::from_env(&container_step(Some("docker"))).unwrap();
        assert_eq!(action.data_dir(), PathBuf::from("/github/home/.pitcrew"));
        let local = ActionEnv::from_env(&container_step(None)).unwrap();
        assert_eq!(local.data_dir(), PathBuf::from("/home/runner/work/_temp/pitcrew"));
    }

    #[tokio::test]
    async fn the_sandbox_input_is_parsed_at_the_edge_and_a_named_backend_is_not_probed() {
        let vars = |sandbox: &str| container_step(Some(sandbox));
        let mut named = ActionEnv::from_env(&vars("Docker")).unwrap();
        assert_eq!(named.resolve_sandbox().await, None, "a named backend is not probed");
        assert_eq!(named.inputs.sandbox, Some(SandboxInput::Docker));

        let error = ActionEnv::from_env(&vars("podman")).unwrap_err().to_string();
        assert!(
            error.contains("\"podman\" is not one of auto, docker, local"),
            "{error}"
        );

        // Until the probe decides (`bot/tests/cli.rs` runs it against the engine and against none),
        // `auto` keeps the data where either backend can use it.
        let auto = ActionEnv::from_env(&vars("auto")).unwrap();
        assert_eq!(auto.inputs.sandbox, Some(SandboxInput::Auto));
        assert_eq!(auto.data_dir(), PathBuf::from("/home/runner/work/_temp/pitcrew"));
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let error = ActionEnv::from_env(&env(&[("INPUT_MODE", "deploy"), ("INPUT_TRIGGER", "agent")])).unwrap_err();
        let text = error.to_string();
        for expected in [
            "GITHUB_EVENT_NAME is not set",
            "GITHUB_EVENT_PATH is not set",
            "GITHUB_REPOSITORY is not set",
            "INPUT_GITHUB_TOKEN is not set",
            "\"deploy\" is not one of auto, fix, review, triage, chore",
            "must be a mention like \"@agent\"",
        ] {
            assert!(text.contains(expected), "{expected:?} missing from:\n{text}");
        }
    }
}
