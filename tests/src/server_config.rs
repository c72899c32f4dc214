//! The operator configuration that points `pitcrew serve` at the fakes, as `--set`-style
//! `KEY=VALUE` overrides: this crate cannot depend on `pitcrew`, so callers hand the strings to
//! `Config::load` (or to the binary as `--set` flags) themselves.

use std::path::Path;

use crate::fake_github::FakeGithub;
use crate::scripted_model::ScriptedModel;

/// The settings a test server needs: the fake GitHub App, the webhook secret and the data
/// directory; no model (an address nothing listens on, for tests where no job talks to one) and
/// the local sandbox unless [`ServerOverrides::model`] and [`ServerOverrides::docker`] say
/// otherwise.
#[derive(Clone)]
pub struct ServerOverrides {
    settings: Vec<(String, String)>,
}

/// Keys only: the webhook secret is among the values.
impl std::fmt::Debug for ServerOverrides {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.settings.iter().map(|(k, _)| k)).finish()
    }
}

impl ServerOverrides {
    pub fn new(github: &FakeGithub, webhook_secret: &str, data_dir: &Path) -> Self {
        ServerOverrides { settings: Vec::new() }
            .set("model.name", "test-model")
            // A local model server needs no key.
            .set("model.base_url", "http://127.0.0.1:9/v1")
            .set("github.api_url", github.url())
            .set("github.app_id", github.app_id().to_string())
            .set(
                "github.private_key_path",
                FakeGithub::test_private_key_path().display().to_string(),
            )
            .set("github.webhook_secret", webhook_secret)
            .set("github.bot_name", github.bot_login())
            .set("server.data_dir", data_dir.display().to_string())
            .set("sandbox.backend", "local")
            // The projects' toolchains (cargo, npm, pytest) live under the invoking user's home,
            // which the sandbox user pitcrew switches to as root could not use.
            .set("sandbox.local_user", "self")
            // The scheduler reads every repository's configuration each minute; the tests that
            // are about it turn it on.
            .set("chores.schedules", "false")
    }

    /// The scripted model, without retries: a test's script has no turn to spare for one.
    pub fn model(self, model: &ScriptedModel) -> Self {
        self.set("model.name", "gpt-4o")
            .set("model.base_url", model.openai_base_url())
            .set("model.max_retries", "0")
    }

    /// The Docker sandbox with `image`, kept small: several tests' containers run at once.
    pub fn docker(self, image: &str) -> Self {
        self.docker_in_the_repositorys_image().set("sandbox.image", image)
    }

    /// The Docker sandbox, kept small, in the image each repository chooses: the operator names
    /// none.
    pub fn docker_in_the_repositorys_image(self) -> Self {
        self.set("sandbox.backend", "docker").set("sandbox.memory", "256MiB")
    }

    /// Sets `key` to `value`, in place of an earlier value, so that each key is given once and
    /// what wins does not depend on how the loader orders repeated keys.
    pub fn set(mut self, key: &str, value: impl Into<String>) -> Self {
        let value = value.into();
        match self.settings.iter_mut().find(|(k, _)| k == key) {
            Some(setting) => setting.1 = value,
            None => self.settings.push((key.to_owned(), value)),
        }
        self
    }

    /// The overrides as `KEY=VALUE` strings, in the order first set.
    pub fn build(&self) -> Vec<String> {
        self.settings.iter().map(|(k, v)| format!("{k}={v}")).collect()
    }

    /// The overrides as `--set KEY=VALUE` arguments for the `pitcrew` binary.
    pub fn args(&self) -> Vec<String> {
        self.build()
            .into_iter()
            .flat_map(|setting| ["--set".to_owned(), setting])
            .collect()
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn later_settings_replace_earlier_ones_and_each_key_is_given_once() {
        let github = FakeGithub::start();
        let data = tempfile::TempDir::new().unwrap();
        let overrides = ServerOverrides::new(&github, "s3cret", data.path())
            .docker("busybox-test")
            .set("server.concurrency", "3")
            .build();
        assert!(
            overrides.contains(&"sandbox.backend=docker".to_owned()),
            "{overrides:?}"
        );
        assert!(overrides.contains(&"sandbox.image=busybox-test".to_owned()));
        assert!(overrides.contains(&"server.concurrency=3".to_owned()));
        assert!(overrides.contains(&format!("github.api_url={}", github.url())));
        assert!(overrides.contains(&format!("server.data_dir={}", data.path().display())));
        let keys: Vec<&str> = overrides.iter().map(|o| o.split_once('=').unwrap().0).collect();
        let mut unique = keys.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(keys.len(), unique.len(), "{keys:?}");
    }

    #[test]
    fn args_are_set_flags() {
        let github = FakeGithub::start();
        let overrides = ServerOverrides::new(&github, "s3cret", Path::new("/data"));
        let args = overrides.args();
        assert_eq!(args.len(), 2 * overrides.build().len());
        assert_eq!(args[0], "--set");
        assert_eq!(args[1], "model.name=test-model");
    }
}
