//! Secrets out of the process environment: at start-up `main` takes a copy of the environment,
//! removes every secret from the real one and marks the process not dumpable, before any thread
//! or child exists. From then on the secrets live only in memory (the copy, then the validated
//! configuration's `SecretString`s) and are passed explicitly; each is also registered with the
//! secret filter ([`crate::redact`]).
//!
//! Why both: unsetting a variable changes what children inherit and what the process reads
//! later, but `/proc/<pid>/environ` shows the environment block the process started with, which
//! unsetting does not erase. Not being dumpable makes `/proc/<pid>/environ`, `mem` and `maps`
//! unreadable to other processes of the same user (ptrace access needs `CAP_SYS_PTRACE` then),
//! which is what a command the agent runs with the local backend would be. A process with
//! `CAP_SYS_PTRACE` (root) can read the memory anyway, so re-executing with the secrets handed
//! over a pipe would not hide them from it either; the local backend runs commands as another
//! user when pitcrew is root instead (`sandbox/local.rs`).
//!
//! Which configuration keys hold secrets is the configuration's to say: `main` hands their variable
//! names in, so this module stays a leaf.

use std::collections::BTreeMap;
use std::ffi::OsString;

use secrecy::SecretString;

/// Variables that always hold secrets, whatever the configuration says.
const SECRET_VARS: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    // The Action's secret inputs (action.yml: `api_key`, `github_token`).
    "INPUT_API_KEY",
    "INPUT_GITHUB_TOKEN",
    // What the runner hands a container action: tokens for the run's caches, artifacts and OIDC.
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
];

/// Name endings that mark a secret in any variable (`NPM_TOKEN`, `MY_MODEL_API_KEY`, …): pitcrew
/// reads none of them except through its configuration, so removing them costs nothing.
const SECRET_SUFFIXES: &[&str] = &["_TOKEN", "_API_KEY", "_SECRET", "_PASSWORD"];

/// Whether the variable `name` holds a secret: one of `SECRET_VARS`, a name with a secret's
/// ending, or one of `config_secrets` (the configuration's variables of kind secret,
/// `config::secret_env_vars`).
pub fn is_secret_var(name: &str, config_secrets: &[String]) -> bool {
    SECRET_VARS.contains(&name)
        || SECRET_SUFFIXES.iter().any(|suffix| name.ends_with(suffix))
        || config_secrets.iter().any(|var| var == name)
}

/// The process environment as it was at start-up, secrets included: what the configuration and
/// the Action read their settings from.
#[derive(Clone)]
pub struct StartupEnv {
    vars: BTreeMap<String, String>,
    /// Problems met while hardening the process, for the caller to report once logging is up.
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for StartupEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartupEnv")
            .field("vars", &self.vars.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl StartupEnv {
    /// The variables that are valid Unicode (others cannot be settings; skipping them beats
    /// panicking).
    pub fn vars(&self) -> &BTreeMap<String, String> {
        &self.vars
    }
}

/// Call first thing in `main`, while the process has one thread: makes the process not dumpable,
/// copies the environment, registers every secret in it (see [`is_secret_var`]; `config_secrets`
/// are the configuration's secret variables) with the filter and removes them from the process
/// environment.
pub fn take_from_environment(config_secrets: &[String]) -> StartupEnv {
    let mut warnings = Vec::new();
    if let Err(err) = nix::sys::prctl::set_dumpable(false) {
        warnings.push(format!(
            "could not mark the process not dumpable ({err}): commands of the local sandbox may read its memory"
        ));
    }
    let mut vars = BTreeMap::new();
    let mut secret_names = Vec::new();
    for (name, value) in std::env::vars_os() {
        let text_name = name.to_string_lossy();
        if is_secret_var(&text_name, config_secrets) {
            secret_names.push(name.clone());
        }
        if let (Ok(name), Ok(value)) = (name.into_string(), value.into_string()) {
            if is_secret_var(&name, config_secrets) {
                crate::redact::register(&SecretString::from(value.clone()));
            }
            vars.insert(name, value);
        }
    }
    if let Err(err) = remove_vars(&secret_names) {
        warnings.push(err.to_string());
    }
    StartupEnv { vars, warnings }
}

/// Why the secrets stay in the process's environment.
#[derive(Debug, thiserror::Error)]
pub enum RemoveError {
    #[error("could not count the process's threads ({0}); the secrets stay in its environment")]
    CountThreads(#[source] std::io::Error),
    #[error("{0} threads are running, so the secrets cannot be removed from the environment safely")]
    Threads(usize),
}

/// Removes one more variable named by the configuration (`model.api_key_env`), once it is
/// known; like [`take_from_environment`], only while the process has one thread.
pub fn remove_named(name: &str) -> Result<(), RemoveError> {
    if std::env::var_os(name).is_none() {
        return Ok(());
    }
    remove_vars(&[OsString::from(name)])
}

/// The one unsafe operation of the crate. `remove_var` is unsafe (edition 2024) because another
/// thread could read or write the environment at the same time; so it runs only when the kernel
/// says this thread is the process's only one.
#[expect(
    unsafe_code,
    reason = "removing secrets from the environment needs std::env::remove_var, which is sound only while no other \
              thread exists; that is checked right before"
)]
fn remove_vars(names: &[OsString]) -> Result<(), RemoveError> {
    if names.is_empty() {
        return Ok(());
    }
    let threads = std::fs::read_dir("/proc/self/task")
        .map(Iterator::count)
        .map_err(RemoveError::CountThreads)?;
    if threads != 1 {
        return Err(RemoveError::Threads(threads));
    }
    for name in names {
        // SAFETY: this thread is the only one (checked above, and nothing between the check and
        // here starts a thread), so nothing reads or writes the environment concurrently.
        unsafe { std::env::remove_var(name) };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_variables_are_secrets() {
        // A configuration key of kind secret whose name has no secret's ending.
        let config_secrets = ["PITCREW_SERVER_SIGNING_KEY".to_owned()];
        for name in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "INPUT_GITHUB_TOKEN",
            "INPUT_API_KEY",
            "GITHUB_TOKEN",
            "ACTIONS_RUNTIME_TOKEN",
            "PITCREW_GITHUB_WEBHOOK_SECRET",
            "NPM_TOKEN",
            "MY_MODEL_API_KEY",
            "PITCREW_SERVER_SIGNING_KEY",
        ] {
            assert!(is_secret_var(name, &config_secrets), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "GITHUB_REPOSITORY",
            "INPUT_MODEL",
            "INPUT_BASE_URL",
            "PITCREW_MODEL_API_KEY_ENV",
            "PITCREW_GITHUB_PRIVATE_KEY_PATH",
            "RUNNER_TEMP",
        ] {
            assert!(!is_secret_var(name, &config_secrets), "{name}");
        }
        assert!(!is_secret_var("PITCREW_SERVER_SIGNING_KEY", &[]));
    }

    /// The test binary runs tests on several threads, so removal must refuse here.
    #[test]
    fn removal_refuses_while_other_threads_run() {
        let (started, wait) = std::sync::mpsc::channel();
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || {
            let _ = started.send(());
            let _ = stopped.recv();
        });
        let _ = wait.recv();
        let result = remove_vars(&[OsString::from("PATH")]);
        let _ = stop.send(());
        let _ = other.join();
        assert!(result.is_err_and(|e| e.to_string().contains("threads are running")));
        assert!(std::env::var_os("PATH").is_some());
    }
}
