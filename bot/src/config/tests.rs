//! Tests for loading: each kind of bad configuration, layering precedence, secrets and rendering.

#![expect(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use secrecy::ExposeSecret;

use super::*;

/// A scratch directory removed on drop (no tempfile dependency for this).
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("pitcrew-config-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

/// Loads with an optional file body (written as `pitcrew.toml` in a scratch dir).
fn load_with(file: Option<&str>, vars: &[(&str, &str)], flags: &[&str]) -> (Result<Config, Vec<String>>, TempDir) {
    let dir = TempDir::new();
    let path = file.map(|text| dir.write("pitcrew.toml", text));
    let env = env(vars);
    let overrides: Vec<String> = flags.iter().map(|s| (*s).to_owned()).collect();
    let result = Config::load(LoadOptions {
        config_path: path.as_deref(),
        env: &env,
        overrides: &overrides,
    })
    .map_err(|errors| {
        errors
            .iter()
            .map(|e| e.to_string().replace(&dir.path().display().to_string(), "<dir>"))
            .collect()
    });
    (result, dir)
}

fn ok(file: Option<&str>, vars: &[(&str, &str)], flags: &[&str]) -> Config {
    match load_with(file, vars, flags).0 {
        Ok(config) => config,
        Err(errors) => panic!("expected a valid config, got:\n{}", errors.join("\n")),
    }
}

fn errors(file: Option<&str>, vars: &[(&str, &str)], flags: &[&str]) -> Vec<String> {
    match load_with(file, vars, flags).0 {
        Ok(config) => panic!("expected errors, got {config:#?}"),
        Err(errors) => errors,
    }
}

const KEY: (&str, &str) = ("OPENAI_API_KEY", "sk-test-123");
const NAME: (&str, &str) = ("PITCREW_MODEL_NAME", "gpt-test");

// ---------------------------------------------------------------------------------------------
// Defaults and precedence

#[test]
fn defaults_apply_with_no_file() {
    let c = ok(None, &[NAME, KEY], &[]);
    assert_eq!(c.model.provider, Provider::OpenAi);
    assert_eq!(c.model.name, "gpt-test");
    assert_eq!(c.model.base_url.as_str(), "https://api.openai.com/v1");
    assert_eq!(c.model.api_key_env, "OPENAI_API_KEY");
    assert_eq!(c.model.api_key.as_ref().unwrap().expose_secret(), "sk-test-123");
    assert_eq!(c.model.context_window, 128_000);
    assert_eq!(c.model.max_output_tokens, 8192);
    assert_eq!(c.model.request_timeout, Duration::from_secs(600));
    assert_eq!(c.model.stream_idle_timeout, Duration::from_secs(120));
    assert_eq!(c.model.max_retries, 4);
    assert_eq!(c.model.max_retry_delay, Duration::from_secs(60));
    assert_eq!(c.github.api_url.as_str(), "https://api.github.com/");
    assert!(c.github.app.is_none());
    assert!(c.github.webhook_secret.is_none());
    assert_eq!(c.github.bot_name, "pitcrew[bot]");
    assert_eq!(c.github.bot_email, "pitcrew[bot]@users.noreply.github.com");
    assert_eq!(c.server.listen, SocketAddr::from(([127, 0, 0, 1], 8080)));
    assert_eq!(c.server.data_dir, PathBuf::from("./pitcrew-data"));
    assert_eq!(c.sandbox.backend, SandboxBackend::Docker);
    assert_eq!(c.sandbox.image, "debian:bookworm-slim");
    assert_eq!(c.sandbox.network, SandboxNetwork::None);
    assert_eq!(c.sandbox.memory_bytes, 4 << 30);
    assert_eq!(c.sandbox.cpus, 2.0);
    assert_eq!(c.sandbox.pids_limit, 512);
    assert_eq!(c.sandbox.setup, None);
    assert!(!c.sandbox.setup_network);
    assert_eq!(c.sandbox.local_user, LocalUser::Auto);
    assert_eq!(c.agent.trigger, "@agent");
    assert_eq!(c.agent.max_steps, 80);
    assert_eq!(c.agent.max_cost_usd, None);
    assert_eq!(c.agent.max_wall_time, Duration::from_secs(1800));
    assert!(c.prices.is_empty());
    assert_eq!(c.file, None);
    assert_eq!(
        c.origin("model.name"),
        Origin::Env {
            var: "PITCREW_MODEL_NAME".into()
        }
    );
    assert_eq!(c.origin("model.max_steps"), Origin::Default);
}

#[test]
fn anthropic_changes_the_provider_defaults() {
    let c = ok(
        Some("[model]\nprovider = \"anthropic\"\nname = \"claude-test\"\n"),
        &[("ANTHROPIC_API_KEY", "k")],
        &[],
    );
    assert_eq!(c.model.provider, Provider::Anthropic);
    assert_eq!(c.model.base_url.as_str(), "https://api.anthropic.com/");
    assert_eq!(c.model.api_key_env, "ANTHROPIC_API_KEY");
    assert_eq!(c.model.context_window, 200_000);
}

#[test]
fn layers_override_in_order_default_file_env_flag() {
    let file = "[model]\nname = \"from-file\"\nmax_retries = 1\n\n[agent]\nmax_steps = 10\ntrigger = \"@file\"\n";
    // Default only.
    let c = ok(None, &[NAME, KEY], &[]);
    assert_eq!(c.model.max_retries, 4);
    // File beats default.
    let c = ok(Some(file), &[KEY], &[]);
    assert_eq!(c.model.name, "from-file");
    assert_eq!(c.model.max_retries, 1);
    assert_eq!(c.agent.max_steps, 10);
    // Env beats file.
    let vars = [
        KEY,
        ("PITCREW_MODEL_MAX_RETRIES", "2"),
        ("PITCREW_AGENT_MAX_STEPS", "20"),
    ];
    let c = ok(Some(file), &vars, &[]);
    assert_eq!(c.model.max_retries, 2);
    assert_eq!(c.agent.max_steps, 20);
    assert_eq!(c.agent.trigger, "@file");
    // Flag beats env; the last flag wins.
    let c = ok(
        Some(file),
        &vars,
        &["model.max_retries=3", "agent.max_steps=30", "agent.max_steps=31"],
    );
    assert_eq!(c.model.max_retries, 3);
    assert_eq!(c.agent.max_steps, 31);
    assert_eq!(c.model.name, "from-file");
    assert_eq!(
        c.origin("model.max_retries"),
        Origin::Flag {
            key: "model.max_retries".into()
        }
    );
    assert!(matches!(c.origin("model.name"), Origin::File { line: 2, .. }));
}

#[test]
fn durations_accept_strings_and_plain_seconds_from_every_layer() {
    let c = ok(
        Some("[model]\nname = \"m\"\nrequest_timeout = 90\nstream_idle_timeout = \"1h30m\"\n"),
        &[KEY, ("PITCREW_AGENT_MAX_WALL_TIME", "45")],
        &["model.max_retry_delay=500ms"],
    );
    assert_eq!(c.model.request_timeout, Duration::from_secs(90));
    assert_eq!(c.model.stream_idle_timeout, Duration::from_secs(5400));
    assert_eq!(c.agent.max_wall_time, Duration::from_secs(45));
    assert_eq!(c.model.max_retry_delay, Duration::from_millis(500));
}

#[test]
fn empty_environment_values_count_as_unset() {
    let c = ok(None, &[NAME, KEY, ("PITCREW_AGENT_MAX_STEPS", "")], &[]);
    assert_eq!(c.agent.max_steps, 80);
}

#[test]
fn cli_variables_and_the_key_variable_are_not_unknown_settings() {
    let c = ok(
        None,
        &[
            NAME,
            ("PITCREW_CONFIG", "x.toml"),
            ("PITCREW_LOG_FORMAT", "json"),
            ("PITCREW_MODEL_API_KEY_ENV", "PITCREW_OPENAI_KEY"),
            ("PITCREW_OPENAI_KEY", "sk-1"),
        ],
        &[],
    );
    assert_eq!(c.model.api_key.unwrap().expose_secret(), "sk-1");
}

#[test]
fn prices_are_read_from_the_file() {
    let c = ok(
        Some(
            "[model]\nname = \"m\"\n\n[prices.\"gpt-4o\"]\ninput = 2.5\noutput = 10\ncache_read = 1.25\n\n[prices.claude]\ninput = 3\noutput = 15\ncache_write = 3.75\n",
        ),
        &[KEY],
        &[],
    );
    assert_eq!(
        c.prices["gpt-4o"],
        PriceOverride {
            input: 2.5,
            output: 10.0,
            cache_read: Some(1.25),
            cache_write: None
        }
    );
    assert_eq!(
        c.prices["claude"],
        PriceOverride {
            input: 3.0,
            output: 15.0,
            cache_read: None,
            cache_write: Some(3.75)
        }
    );
}

#[test]
fn github_app_settings_pair_up() {
    let dir = TempDir::new();
    let key = dir.write("app.pem", "-----BEGIN PRIVATE KEY-----\n");
    let c = ok(
        None,
        &[
            NAME,
            KEY,
            ("PITCREW_GITHUB_APP_ID", "12345"),
            ("PITCREW_GITHUB_PRIVATE_KEY_PATH", key.to_str().unwrap()),
            ("PITCREW_GITHUB_WEBHOOK_SECRET", "hunter2"),
        ],
        &[],
    );
    let app = c.github.app.unwrap();
    assert_eq!(app.app_id, 12345);
    assert!(matches!(&app.key, AppKey::File(path) if *path == key), "{:?}", app.key);
    assert_eq!(c.github.webhook_secret.unwrap().expose_secret(), "hunter2");
}

fn test_app_key() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/github-app-test-key.pem"
    ))
    .unwrap()
}

/// Probot's variables, as PaaS templates and container set-ups pass them: the key's contents on
/// one line with `\n` escapes.
#[test]
fn probot_style_variables_configure_the_app_and_pitcrews_own_win() {
    let pem = test_app_key();
    let one_line = pem.trim().replace('\n', "\\n");
    let c = ok(
        None,
        &[
            NAME,
            KEY,
            ("APP_ID", "777"),
            ("PRIVATE_KEY", &one_line),
            ("WEBHOOK_SECRET", "from-probot"),
            ("GHE_HOST", "ghe.example.com"),
        ],
        &[],
    );
    let app = c.github.app.as_ref().unwrap();
    assert_eq!(app.app_id, 777);
    match &app.key {
        AppKey::Pem { pem: inline, origin } => {
            assert_eq!(inline.expose_secret(), pem.trim(), "the escapes are line breaks again");
            assert_eq!(origin, "environment variable PRIVATE_KEY");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(c.github.webhook_secret.as_ref().unwrap().expose_secret(), "from-probot");
    assert_eq!(c.github.api_url.as_str(), "https://ghe.example.com/api/v3");
    let rendered = c.render_redacted();
    assert!(rendered.contains("private_key = \"[redacted]\""), "{rendered}");
    assert!(!rendered.contains(pem.lines().nth(1).unwrap()), "{rendered}");

    // PITCREW_* wins over its alias; GHE_PROTOCOL picks the scheme.
    let c = ok(
        None,
        &[
            NAME,
            KEY,
            ("APP_ID", "777"),
            ("PITCREW_GITHUB_APP_ID", "888"),
            ("PRIVATE_KEY", &pem),
            ("GHE_HOST", "ghe.internal:8443/"),
            ("GHE_PROTOCOL", "http"),
        ],
        &[],
    );
    assert_eq!(c.github.app.unwrap().app_id, 888);
    assert_eq!(c.github.api_url.as_str(), "http://ghe.internal:8443/api/v3");
}

#[test]
fn a_bad_inline_key_is_named_by_where_it_was_set_never_shown() {
    let errs = errors(
        None,
        &[NAME, KEY, ("APP_ID", "777"), ("PRIVATE_KEY", "hunter2-not-a-key")],
        &[],
    );
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with("environment variable PRIVATE_KEY: invalid `github.private_key`: not a usable private key"),
        "{errs:?}"
    );
    assert!(!errs[0].contains("hunter2"), "{errs:?}");

    // A key given twice is refused rather than one silently chosen.
    let dir = TempDir::new();
    let path = dir.write("app.pem", &test_app_key());
    let errs = errors(
        None,
        &[
            NAME,
            KEY,
            ("APP_ID", "777"),
            ("PRIVATE_KEY", &test_app_key()),
            ("PITCREW_GITHUB_PRIVATE_KEY_PATH", path.to_str().unwrap()),
        ],
        &[],
    );
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("give the App's key once"), "{errs:?}");

    // A key without its App id.
    let errs = errors(None, &[NAME, KEY, ("PRIVATE_KEY", &test_app_key())], &[]);
    assert_eq!(
        errs,
        [
            "`github.app_id` and the App's private key (`github.private_key_path` or `github.private_key`) go together: `github.private_key` is set (environment variable PRIVATE_KEY) but `github.app_id` is not"
        ]
    );
}

#[test]
fn the_webhook_path_is_a_plain_absolute_path_of_its_own() {
    assert_eq!(ok(None, &[NAME, KEY], &[]).server.webhook_path, "/webhook");
    let c = ok(
        None,
        &[NAME, KEY, ("PITCREW_SERVER_WEBHOOK_PATH", "/api/github/webhooks")],
        &[],
    );
    assert_eq!(c.server.webhook_path, "/api/github/webhooks");
    for bad in [
        "webhook", "/", "/healthz", "/metrics", "/a b", "/a/../b", "/a//b", "/:id", "/{x}",
    ] {
        let errs = errors(None, &[NAME, KEY], &[&format!("server.webhook_path={bad}")]);
        assert_eq!(errs.len(), 1, "{bad}: {errs:?}");
        assert!(errs[0].contains("invalid `server.webhook_path`"), "{bad}: {errs:?}");
    }
}

#[test]
fn sandbox_settings_from_the_file() {
    let c = ok(
        Some(
            "[model]\nname = \"m\"\n[sandbox]\nnetwork = \"bridge\"\nmemory = \"512MiB\"\ncpus = 1.5\npids_limit = 64\nsetup = \"pip install -e .\"\nsetup_network = true\n",
        ),
        &[KEY],
        &[],
    );
    assert_eq!(c.sandbox.network, SandboxNetwork::Bridge);
    assert_eq!(c.sandbox.network.as_str(), "bridge");
    assert_eq!(c.sandbox.memory_bytes, 512 << 20);
    assert_eq!(c.sandbox.cpus, 1.5);
    assert_eq!(c.sandbox.pids_limit, 64);
    assert_eq!(c.sandbox.setup.as_deref(), Some("pip install -e ."));
    assert!(c.sandbox.setup_network);
    assert!(matches!(
        c.origin("sandbox.setup_network"),
        Origin::File { line: 9, .. }
    ));

    // Plain integers: bytes for `memory`, whole CPUs for `cpus`.
    let c = ok(
        Some("[model]\nname = \"m\"\n[sandbox]\nmemory = 1073741824\ncpus = 3\nsetup_network = false\n"),
        &[KEY],
        &[],
    );
    assert_eq!(c.sandbox.memory_bytes, 1 << 30);
    assert_eq!(c.sandbox.cpus, 3.0);
    assert!(!c.sandbox.setup_network);
}

#[test]
fn sandbox_settings_from_the_environment() {
    let c = ok(
        None,
        &[
            NAME,
            KEY,
            ("PITCREW_SANDBOX_NETWORK", "bridge"),
            ("PITCREW_SANDBOX_MEMORY", "2gb"),
            ("PITCREW_SANDBOX_CPUS", "0.5"),
            ("PITCREW_SANDBOX_PIDS_LIMIT", "16"),
            ("PITCREW_SANDBOX_SETUP", "npm ci\nnpm run build"),
            ("PITCREW_SANDBOX_SETUP_NETWORK", "Yes"),
        ],
        &[],
    );
    assert_eq!(c.sandbox.network, SandboxNetwork::Bridge);
    assert_eq!(c.sandbox.memory_bytes, 2_000_000_000);
    assert_eq!(c.sandbox.cpus, 0.5);
    assert_eq!(c.sandbox.pids_limit, 16);
    assert_eq!(c.sandbox.setup.as_deref(), Some("npm ci\nnpm run build"));
    assert!(c.sandbox.setup_network);
    assert_eq!(
        c.origin("sandbox.memory"),
        Origin::Env {
            var: "PITCREW_SANDBOX_MEMORY".into()
        }
    );
}

#[test]
fn sandbox_settings_from_flags_beat_the_file_and_environment() {
    let file = "[model]\nname = \"m\"\n[sandbox]\nnetwork = \"bridge\"\nmemory = \"1GiB\"\nsetup = \"make\"\nsetup_network = true\n";
    let c = ok(
        Some(file),
        &[
            KEY,
            ("PITCREW_SANDBOX_CPUS", "8"),
            ("PITCREW_SANDBOX_SETUP_NETWORK", "on"),
        ],
        &[
            "sandbox.network=none",
            "sandbox.memory=16MiB",
            "sandbox.cpus=4",
            "sandbox.pids_limit=1000",
            "sandbox.setup=pip install -e .",
            "sandbox.setup_network=0",
        ],
    );
    assert_eq!(c.sandbox.network, SandboxNetwork::None);
    assert_eq!(c.sandbox.memory_bytes, 16 << 20);
    assert_eq!(c.sandbox.cpus, 4.0);
    assert_eq!(c.sandbox.pids_limit, 1000);
    assert_eq!(c.sandbox.setup.as_deref(), Some("pip install -e ."));
    assert!(!c.sandbox.setup_network);
    assert_eq!(
        c.origin("sandbox.setup_network"),
        Origin::Flag {
            key: "sandbox.setup_network".into()
        }
    );
    // Every spelling of a boolean, in any case.
    for (text, expected) in [
        ("true", true),
        ("TRUE", true),
        ("1", true),
        ("yes", true),
        ("On", true),
        ("false", false),
        ("False", false),
        ("0", false),
        ("no", false),
        ("OFF", false),
    ] {
        let c = ok(
            None,
            &[NAME, KEY],
            &["sandbox.setup=make", &format!("sandbox.setup_network={text}")],
        );
        assert_eq!(c.sandbox.setup_network, expected, "{text}");
    }
}

// ---------------------------------------------------------------------------------------------
// The file

#[test]
fn a_missing_file_named_explicitly_is_an_error() {
    let env = env(&[NAME, KEY]);
    let err = Config::load(LoadOptions {
        config_path: Some(Path::new("/nonexistent/pitcrew.toml")),
        env: &env,
        overrides: &[],
    })
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("cannot read config file /nonexistent/pitcrew.toml: "),
        "{err}"
    );
}

#[test]
fn malformed_toml_names_file_line_and_column() {
    let errs = errors(Some("[model]\nname = \"m\"\nmax_retries = = 3\n"), &[KEY], &[]);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with("<dir>/pitcrew.toml:3:15: invalid TOML: "),
        "{errs:?}"
    );
}

#[test]
fn unknown_key_names_section_key_line_and_valid_keys() {
    let errs = errors(Some("[model]\nname = \"m\"\n\n[agent]\nmax_step = 5\n"), &[KEY], &[]);
    insta::assert_snapshot!(errs.join("\n"), @"<dir>/pitcrew.toml:5: unknown setting `agent.max_step`; did you mean `agent.max_steps`?; valid keys in [agent]: trigger, max_steps, max_cost_usd, max_wall_time, max_new_file, code_index, index_cache, index_memory");
}

#[test]
fn unknown_sections_and_misplaced_keys_get_hints() {
    let errs = errors(
        Some("name = \"m\"\nbudget = 3\n[modle]\nprovider = \"openai\"\n[server]\nimage = \"x\"\n"),
        &[KEY],
        &[],
    );
    insta::assert_snapshot!(errs.join("\n"), @"
    <dir>/pitcrew.toml:1: `name` is outside any section; did you mean `name` under `[model]`?
    <dir>/pitcrew.toml:2: `budget` is outside any section; settings go under a section header such as `[model]`
    <dir>/pitcrew.toml:3: unknown section `[modle]`; did you mean `[model]`?; valid sections: model, github, server, sandbox, agent, chores, review, ci_loop, prices
    <dir>/pitcrew.toml:6: unknown setting `server.image`; did you mean `image` under `[sandbox]`?; valid keys in [server]: listen, webhook_path, public_url, data_dir, concurrency, job_attempts, max_body, shutdown_grace, pool_size, pool_max_idle, mirror_max_idle, header_timeout, body_timeout, idle_timeout, max_connections, unverified_bytes, retain, retain_payloads, store, database_url, lease_ttl
    ");
}

#[test]
fn wrong_types_name_key_line_and_expected_type() {
    let errs = errors(
        Some(
            "[model]\nname = 5\nmax_retries = \"four\"\nrequest_timeout = true\n[agent]\nmax_cost_usd = \"1\"\n[sandbox]\n",
        ),
        &[KEY],
        &[],
    );
    insta::assert_snapshot!(errs.join("\n"), @r#"
    <dir>/pitcrew.toml:2: `model.name` must be a string, found integer
    <dir>/pitcrew.toml:3: `model.max_retries` must be a whole number, found string
    <dir>/pitcrew.toml:4: `model.request_timeout` must be a duration like "90s", "10m", "1h30m" or a number of seconds, found boolean
    <dir>/pitcrew.toml:6: `agent.max_cost_usd` must be a number, found string
    "#);
}

#[test]
fn a_section_that_is_not_a_table_is_a_type_error() {
    let errs = errors(Some("model = \"gpt\"\n"), &[KEY, NAME], &[]);
    assert_eq!(
        errs,
        ["<dir>/pitcrew.toml:1: `model` must be a table (a `[section]` header), found string"]
    );
}

#[test]
fn out_of_range_integers_in_the_file() {
    let errs = errors(
        Some("[model]\nname = \"m\"\nmax_retries = -1\nmax_output_tokens = 5_000_000_000\n[agent]\nmax_steps = 0\n"),
        &[KEY],
        &[],
    );
    insta::assert_snapshot!(errs.join("\n"), @r"
    <dir>/pitcrew.toml:3: invalid `model.max_retries` = -1: must not be negative
    <dir>/pitcrew.toml:4: invalid `model.max_output_tokens` = 5000000000: must be at most 4294967295
    <dir>/pitcrew.toml:6: invalid `agent.max_steps` = 0: must be at least 1
    ");
}

#[test]
fn missing_required_name_says_both_ways_to_set_it() {
    let errs = errors(None, &[KEY], &[]);
    assert_eq!(
        errs,
        [
            "missing required setting `model.name`: set `name` under `[model]` in pitcrew.toml, or the environment variable PITCREW_MODEL_NAME"
        ]
    );
    let errs = errors(Some("[model]\n"), &[KEY], &[]);
    assert_eq!(
        errs,
        [
            "missing required setting `model.name`: set `name` under `[model]` in <dir>/pitcrew.toml, or the environment variable PITCREW_MODEL_NAME"
        ]
    );
}

#[test]
fn invalid_values_name_key_and_source_layer() {
    let errs = errors(
        Some(
            "[model]\nname = \"m\"\nbase_url = \"not a url\"\nprovider = \"openia\"\n[server]\nlisten = \"localhost:80\"\n",
        ),
        &[
            KEY,
            ("PITCREW_MODEL_REQUEST_TIMEOUT", "10x"),
            ("PITCREW_SANDBOX_BACKEND", "podman"),
        ],
        &[
            "agent.trigger=agent",
            "github.api_url=ftp://example.com",
            "agent.max_wall_time=0",
        ],
    );
    insta::assert_snapshot!(errs.join("\n"), @r#"
    <dir>/pitcrew.toml:4: invalid `model.provider` = "openia": expected one of `openai`, `anthropic`; did you mean `openai`?
    <dir>/pitcrew.toml:3: invalid `model.base_url` = "not a url": not a valid URL (relative URL without a base); expected e.g. "https://api.example.com/v1"
    environment variable PITCREW_MODEL_REQUEST_TIMEOUT: invalid `model.request_timeout` = "10x": unknown unit `x`; use one of ms, s, m, h, d
    --set github.api_url: invalid `github.api_url` = "ftp://example.com": the scheme must be http or https, not `ftp`
    <dir>/pitcrew.toml:6: invalid `server.listen` = "localhost:80": expected an IP address and port, e.g. "127.0.0.1:8080", "0.0.0.0:8080" or "[::]:8080"
    environment variable PITCREW_SANDBOX_BACKEND: invalid `sandbox.backend` = "podman": expected one of `docker`, `local`
    --set agent.trigger: invalid `agent.trigger` = "agent": must be `@` followed by a name without spaces, e.g. "@agent"
    --set agent.max_wall_time: invalid `agent.max_wall_time` = "0": must be longer than zero
    "#);
}

#[test]
fn bot_identity_comes_from_the_file_env_or_flags() {
    let file = "[model]\nname = \"m\"\n[github]\nbot_name = \"Crew Bot\"\nbot_email = \"crew@example.com\"\n";
    let c = ok(Some(file), &[KEY], &[]);
    assert_eq!(c.github.bot_name, "Crew Bot");
    assert_eq!(c.github.bot_email, "crew@example.com");

    let c = ok(
        Some(file),
        &[KEY, ("PITCREW_GITHUB_BOT_NAME", "env-bot[bot]")],
        &["github.bot_email=12345+flag-bot[bot]@users.noreply.github.com"],
    );
    assert_eq!(c.github.bot_name, "env-bot[bot]");
    assert_eq!(c.github.bot_email, "12345+flag-bot[bot]@users.noreply.github.com");
    assert_eq!(
        c.origin("github.bot_name"),
        Origin::Env {
            var: "PITCREW_GITHUB_BOT_NAME".into()
        }
    );

    // The flag beats the environment.
    let c = ok(
        None,
        &[NAME, KEY, ("PITCREW_GITHUB_BOT_NAME", "env")],
        &["github.bot_name=flag"],
    );
    assert_eq!(c.github.bot_name, "flag");
}

#[test]
fn bad_bot_identities_are_reported() {
    for (flag, expected) in [
        (
            "github.bot_email=bot",
            r#"--set github.bot_email: invalid `github.bot_email` = "bot": must contain exactly one `@`; expected an address like "pitcrew[bot]@users.noreply.github.com""#,
        ),
        (
            "github.bot_email=a@b@c",
            r#"--set github.bot_email: invalid `github.bot_email` = "a@b@c": must contain exactly one `@`; expected an address like "pitcrew[bot]@users.noreply.github.com""#,
        ),
        (
            "github.bot_email=@example.com",
            r#"--set github.bot_email: invalid `github.bot_email` = "@example.com": must have text on both sides of the `@`; expected an address like "pitcrew[bot]@users.noreply.github.com""#,
        ),
        (
            "github.bot_email=bot@",
            r#"--set github.bot_email: invalid `github.bot_email` = "bot@": must have text on both sides of the `@`; expected an address like "pitcrew[bot]@users.noreply.github.com""#,
        ),
        (
            "github.bot_email=my bot@example.com",
            r#"--set github.bot_email: invalid `github.bot_email` = "my bot@example.com": must not contain spaces; expected an address like "pitcrew[bot]@users.noreply.github.com""#,
        ),
        (
            "github.bot_email=<bot@example.com>",
            r#"--set github.bot_email: invalid `github.bot_email` = "<bot@example.com>": must not contain `<` or `>`"#,
        ),
        (
            "github.bot_email=",
            r#"--set github.bot_email: invalid `github.bot_email` = "": must not be empty"#,
        ),
        (
            "github.bot_name=Bot <bot@example.com>",
            r#"--set github.bot_name: invalid `github.bot_name` = "Bot <bot@example.com>": must not contain `<` or `>`"#,
        ),
        (
            "github.bot_name=",
            r#"--set github.bot_name: invalid `github.bot_name` = "": must not be empty"#,
        ),
    ] {
        assert_eq!(errors(None, &[NAME, KEY], &[flag]), [expected], "{flag}");
    }

    // Newlines can only come from the file or the environment.
    let errs = errors(
        Some("[model]\nname = \"m\"\n[github]\nbot_name = \"Bot\\nSigned-off-by: x\"\n"),
        &[KEY, ("PITCREW_GITHUB_BOT_EMAIL", "bot@example.com\n")],
        &[],
    );
    insta::assert_snapshot!(errs.join("\n"), @r#"
    <dir>/pitcrew.toml:4: invalid `github.bot_name` = "Bot\nSigned-off-by: x": must be a single line
    environment variable PITCREW_GITHUB_BOT_EMAIL: invalid `github.bot_email` = "bot@example.com\n": must be a single line
    "#);
}

#[test]
fn sandbox_wrong_types_in_the_file_name_key_and_line() {
    let errs = errors(
        Some(
            "[model]\nname = \"m\"\n[sandbox]\nnetwork = 1\nmemory = 4.5\ncpus = \"2\"\npids_limit = \"many\"\nsetup = [\"make\"]\nsetup_network = \"yes\"\n",
        ),
        &[KEY],
        &[],
    );
    insta::assert_snapshot!(errs.join("\n"), @r#"
    <dir>/pitcrew.toml:4: `sandbox.network` must be a string, found integer
    <dir>/pitcrew.toml:5: `sandbox.memory` must be a size like "4GiB", "512MiB", "2GB" or a number of bytes, found float
    <dir>/pitcrew.toml:6: `sandbox.cpus` must be a number, found string
    <dir>/pitcrew.toml:7: `sandbox.pids_limit` must be a whole number, found string
    <dir>/pitcrew.toml:8: `sandbox.setup` must be a string, found array
    <dir>/pitcrew.toml:9: `sandbox.setup_network` must be a boolean (true or false), found string
    "#);
}

#[test]
fn sandbox_bad_values_name_key_and_source_layer() {
    let errs = errors(
        Some("[model]\nname = \"m\"\n[sandbox]\nnetwork = \"brige\"\nmemory = \"4GiB8\"\npids_limit = 8\ncpus = 0\n"),
        &[
            KEY,
            ("PITCREW_SANDBOX_SETUP_NETWORK", "maybe"),
            ("PITCREW_SANDBOX_SETUP", "  "),
        ],
        &[],
    );
    insta::assert_snapshot!(errs.join("\n"), @r#"
    environment variable PITCREW_SANDBOX_SETUP_NETWORK: invalid `sandbox.setup_network` = "maybe": expected true or false (also accepted: 1/0, yes/no, on/off)
    <dir>/pitcrew.toml:4: invalid `sandbox.network` = "brige": expected one of `none`, `bridge`; did you mean `bridge`?
    <dir>/pitcrew.toml:5: invalid `sandbox.memory` = "4GiB8": unknown unit `GiB8`; use one of B, KB, KiB, MB, MiB, GB, GiB, TB, TiB
    <dir>/pitcrew.toml:7: invalid `sandbox.cpus` = 0: must be greater than zero
    <dir>/pitcrew.toml:6: invalid `sandbox.pids_limit` = 8: must be at least 16
    environment variable PITCREW_SANDBOX_SETUP: invalid `sandbox.setup` = "  ": must not be empty; leave it out for no setup script
    "#);

    let errs = errors(
        None,
        &[NAME, KEY, ("PITCREW_SANDBOX_MEMORY", "8MiB")],
        &["sandbox.cpus=2000", "sandbox.setup_network=y"],
    );
    insta::assert_snapshot!(errs.join("\n"), @r#"
    --set sandbox.setup_network: invalid `sandbox.setup_network` = "y": expected true or false (also accepted: 1/0, yes/no, on/off)
    environment variable PITCREW_SANDBOX_MEMORY: invalid `sandbox.memory` = "8MiB": must be at least 16MiB
    --set sandbox.cpus: invalid `sandbox.cpus` = 2000: must be at most 1024
    "#);

    let errs = errors(None, &[NAME, KEY], &["sandbox.memory=2g", "sandbox.cpus=0.001"]);
    insta::assert_snapshot!(errs.join("\n"), @r#"
    --set sandbox.memory: invalid `sandbox.memory` = "2g": ambiguous unit `g`; write "2GiB" (powers of 1024) or "2GB" (powers of 1000)
    --set sandbox.cpus: invalid `sandbox.cpus` = 0.001: must be at least 0.01, the smallest CPU quota Docker accepts
    "#);

    let errs = errors(
        Some("[model]\nname = \"m\"\n[sandbox]\nmemory = \"1.5GiB\"\n"),
        &[KEY, ("PITCREW_SANDBOX_PIDS_LIMIT", "-1")],
        &["sandbox.network=host"],
    );
    insta::assert_snapshot!(errs.join("\n"), @r#"
    environment variable PITCREW_SANDBOX_PIDS_LIMIT: invalid `sandbox.pids_limit` = "-1": must not be negative
    --set sandbox.network: invalid `sandbox.network` = "host": expected one of `none`, `bridge`
    <dir>/pitcrew.toml:4: invalid `sandbox.memory` = "1.5GiB": fractions are not supported; use a smaller unit, e.g. "1536MiB" rather than "1.5GiB"
    "#);

    let errs = errors(None, &[NAME, KEY], &["sandbox.memory=2TiB"]);
    assert_eq!(
        errs,
        ["--set sandbox.memory: invalid `sandbox.memory` = \"2TiB\": must be at most 1TiB"]
    );
}

#[test]
fn setup_network_needs_a_setup_script() {
    let errs = errors(
        Some("[model]\nname = \"m\"\n[sandbox]\nsetup_network = true\n"),
        &[KEY],
        &[],
    );
    assert_eq!(
        errs,
        [
            "<dir>/pitcrew.toml:4: `sandbox.setup_network` is set but there is no `sandbox.setup` script; it only opens the network while that script runs"
        ]
    );
    // A rejected script already has its error; "no script" on top would mislead.
    let errs = errors(
        Some("[model]\nname = \"m\"\n[sandbox]\nsetup = 5\nsetup_network = true\n"),
        &[KEY],
        &[],
    );
    assert_eq!(
        errs,
        ["<dir>/pitcrew.toml:4: `sandbox.setup` must be a string, found integer"]
    );
    let errs = errors(None, &[NAME, KEY], &["sandbox.setup=", "sandbox.setup_network=true"]);
    assert_eq!(
        errs,
        ["--set sandbox.setup: invalid `sandbox.setup` = \"\": must not be empty; leave it out for no setup script"]
    );
    // Off without a script is fine.
    let c = ok(None, &[NAME, KEY], &["sandbox.setup_network=false"]);
    assert!(!c.sandbox.setup_network);
}

#[test]
fn max_output_tokens_must_fit_in_the_context_window() {
    let errs = errors(None, &[NAME, KEY, ("PITCREW_MODEL_CONTEXT_WINDOW", "8000")], &[]);
    assert_eq!(
        errs,
        [
            "built-in default: invalid `model.max_output_tokens` = 8192: must be smaller than `model.context_window` (8000)"
        ]
    );
}

#[test]
fn price_tables_are_checked() {
    let errs = errors(
        Some(
            "[model]\nname = \"m\"\n[prices.\"gpt-4o\"]\noutput = -1\ninptu = 2\n[prices.x]\ninput = 1\noutput = \"2\"\n[prices.y]\ninput = 1\noutput = nan\n",
        ),
        &[KEY],
        &[],
    );
    insta::assert_snapshot!(errs.join("\n"), @r#"
    <dir>/pitcrew.toml:5: unknown setting `prices."gpt-4o".inptu`; did you mean `input`?; valid keys in [prices."gpt-4o"]: input, output, cache_read, cache_write
    <dir>/pitcrew.toml:8: `prices."x".output` must be a number, found string
    <dir>/pitcrew.toml:3: [prices."gpt-4o"] is missing `input` (USD per million tokens)
    <dir>/pitcrew.toml:4: invalid `prices."gpt-4o".output` = -1: must not be negative
    <dir>/pitcrew.toml:11: invalid `prices."y".output` = NaN: must be a finite number
    "#);
}

// ---------------------------------------------------------------------------------------------
// The environment and flags

#[test]
fn unknown_environment_variables_get_did_you_mean() {
    let errs = errors(
        None,
        &[
            NAME,
            KEY,
            ("PITCREW_MODEL_BASEURL", "x"),
            ("PITCREW_MAX_STEPS", "3"),
            ("PITCREW_API_KEY", "sk"),
            ("PITCREW_WHATEVER", "1"),
            ("PITCREW_PRICES_GPT", "1"),
        ],
        &[],
    );
    insta::assert_snapshot!(errs.join("\n"), @r#"
    environment variable PITCREW_PRICES_GPT: `prices` can only be set in the config file, as [prices."MODEL"] tables
    unknown environment variable PITCREW_API_KEY; the API key is read from the variable named by `model.api_key_env` (default OPENAI_API_KEY or ANTHROPIC_API_KEY by provider; change it with PITCREW_MODEL_API_KEY_ENV)
    unknown environment variable PITCREW_MAX_STEPS; did you mean PITCREW_AGENT_MAX_STEPS?
    unknown environment variable PITCREW_MODEL_BASEURL; did you mean PITCREW_MODEL_BASE_URL?
    unknown environment variable PITCREW_WHATEVER; settings are PITCREW_<SECTION>_<KEY>, e.g. PITCREW_MODEL_NAME
    "#);
}

#[test]
fn bad_integers_from_the_environment_name_variable_and_value() {
    let errs = errors(
        None,
        &[
            NAME,
            KEY,
            ("PITCREW_AGENT_MAX_STEPS", "lots"),
            ("PITCREW_AGENT_MAX_COST_USD", "$5"),
        ],
        &[],
    );
    insta::assert_snapshot!(errs.join("\n"), @r#"
    environment variable PITCREW_AGENT_MAX_COST_USD: invalid `agent.max_cost_usd` = "$5": expected a number
    environment variable PITCREW_AGENT_MAX_STEPS: invalid `agent.max_steps` = "lots": expected a whole number
    "#);
}

#[test]
fn out_of_range_numbers_from_strings() {
    let errs = errors(
        None,
        &[
            NAME,
            KEY,
            ("PITCREW_MODEL_MAX_RETRIES", "-1"),
            ("PITCREW_MODEL_MAX_OUTPUT_TOKENS", "4294967296"),
        ],
        &["model.context_window=99999999999999999999"],
    );
    insta::assert_snapshot!(errs.join("\n"), @r#"
    environment variable PITCREW_MODEL_MAX_OUTPUT_TOKENS: invalid `model.max_output_tokens` = "4294967296": must be at most 4294967295
    environment variable PITCREW_MODEL_MAX_RETRIES: invalid `model.max_retries` = "-1": must not be negative
    --set model.context_window: invalid `model.context_window` = "99999999999999999999": must be at most 9223372036854775807
    "#);
}

#[test]
fn a_typo_of_a_required_key_is_not_also_reported_missing() {
    let errs = errors(Some("[model]\nnmae = \"m\"\n"), &[KEY], &[]);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("did you mean `model.name`?"), "{errs:?}");
    let errs = errors(None, &[KEY, ("PITCREW_MODEL_NAEM", "m")], &[]);
    assert_eq!(
        errs,
        ["unknown environment variable PITCREW_MODEL_NAEM; did you mean PITCREW_MODEL_NAME?"]
    );
    let errs = errors(None, &[KEY], &["model.nam=m"]);
    assert_eq!(errs, ["--set model.nam: unknown setting; did you mean model.name?"]);
}

#[test]
fn malformed_and_unknown_flags() {
    let errs = errors(
        None,
        &[NAME, KEY],
        &[
            "model.name",
            "model.nmae=x",
            "max_steps=3",
            "prices.gpt.input=1",
            "agent.max_cost_usd=-2",
            "agent.budget=1",
            "x.y=1",
        ],
    );
    insta::assert_snapshot!(errs.join("\n"), @r#"
    malformed --set "model.name": expected SECTION.KEY=VALUE, e.g. --set model.name=gpt-4o
    --set model.nmae: unknown setting; did you mean model.name?
    --set max_steps: unknown setting; did you mean agent.max_steps?
    --set prices.gpt.input: `prices` can only be set in the config file, as [prices."MODEL"] tables
    --set agent.budget: unknown setting; valid keys in [agent]: trigger, max_steps, max_cost_usd, max_wall_time, max_new_file, code_index, index_cache, index_memory
    --set x.y: unknown setting; valid sections: model, github, server, sandbox, agent, chores, review, ci_loop
    --set agent.max_cost_usd: invalid `agent.max_cost_usd` = -2: must be greater than zero
    "#);
}

// ---------------------------------------------------------------------------------------------
// Keys and the GitHub App

#[test]
fn missing_api_key_says_which_variable_and_how_to_change_it() {
    let errs = errors(None, &[NAME], &[]);
    insta::assert_snapshot!(errs.join("\n"), @"missing API key: the environment variable OPENAI_API_KEY is not set, and it is required because `model.base_url` (https://api.openai.com/v1) is not a local server; set OPENAI_API_KEY, or read the key from another variable with `model.api_key_env` (environment variable PITCREW_MODEL_API_KEY_ENV)");
}

#[test]
fn no_api_key_is_needed_for_local_servers() {
    for url in [
        "http://localhost:8000/v1",
        "http://127.0.0.1:11434/v1",
        "http://10.1.2.3/v1",
        "http://192.168.1.5:8080",
        "http://172.20.0.2/v1",
        "http://169.254.1.1",
        "http://[::1]:8000",
        "http://[fd00::1]/v1",
        "http://[fe80::1]/v1",
        "http://vllm:8000/v1",
        "http://gpu-box.local/v1",
        "http://llm.internal/v1",
        "http://llm.lan/v1",
    ] {
        let c = ok(None, &[NAME], &[&format!("model.base_url={url}")]);
        assert!(c.model.api_key.is_none(), "{url}");
    }
    for url in [
        "https://api.openai.com/v1",
        "http://8.8.8.8/v1",
        "http://[2001:db8::1]/",
        "http://llm.example.com",
    ] {
        assert!(!is_local_server(&Url::parse(url).unwrap()), "{url}");
    }
}

#[test]
fn the_api_key_variable_must_be_a_name() {
    let errs = errors(
        None,
        &[NAME],
        &["model.api_key_env=sk-abc", "model.base_url=http://vllm"],
    );
    assert_eq!(
        errs,
        [
            "--set model.api_key_env: invalid `model.api_key_env` = \"sk-abc\": must be the name of an environment variable (letters, digits and `_`), not the key itself"
        ]
    );
}

#[test]
fn github_app_id_without_key_path_names_both() {
    let errs = errors(None, &[NAME, KEY, ("PITCREW_GITHUB_APP_ID", "7")], &[]);
    assert_eq!(
        errs,
        [
            "`github.app_id` and the App's private key (`github.private_key_path` or `github.private_key`) go together: `github.app_id` is set (environment variable PITCREW_GITHUB_APP_ID) but `github.private_key_path` is not"
        ]
    );
    let errs = errors(None, &[NAME, KEY], &["github.private_key_path=/nonexistent/key.pem"]);
    assert_eq!(
        errs,
        [
            "--set github.private_key_path: invalid `github.private_key_path` = \"/nonexistent/key.pem\": cannot read it: No such file or directory (os error 2)"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
#[test]
fn docker_host_names_an_engine_address() {
    let c = ok(None, &[NAME, KEY], &["sandbox.docker_host=unix:///run/proxy.sock"]);
    assert_eq!(c.sandbox.docker_host.as_deref(), Some("unix:///run/proxy.sock"));
    assert_eq!(ok(None, &[NAME, KEY], &[]).sandbox.docker_host, None);
    let errs = errors(None, &[NAME, KEY], &["sandbox.docker_host=/var/run/docker.sock"]);
    assert!(
        errs.iter()
            .any(|e| e.contains("sandbox.docker_host") && e.contains("must start with unix://")),
        "{errs:?}"
    );
}

#[test]
fn local_user_is_auto_or_self() {
    let c = ok(None, &[NAME, KEY], &["sandbox.local_user=self"]);
    assert_eq!(c.sandbox.local_user, LocalUser::Current);
    let errs = errors(None, &[NAME, KEY], &["sandbox.local_user=nobody"]);
    assert!(
        errs.iter()
            .any(|e| e.contains("sandbox.local_user") && e.contains("`auto`, `self`")),
        "{errs:?}"
    );
}

// Several errors at once, secrets, rendering

#[test]
fn all_errors_are_reported_together() {
    let errs = errors(
        Some("[model]\nprovider = \"x\"\n[agent]\nmax_steps = \"x\"\n"),
        &[("PITCREW_SERVER_LISTEN", "nope"), ("PITCREW_NOPE", "1")],
        &["sandbox.bogus=1"],
    );
    assert_eq!(errs.len(), 7, "{errs:#?}");
}

#[test]
fn debug_output_never_shows_secrets() {
    let c = ok(
        None,
        &[
            NAME,
            ("OPENAI_API_KEY", "sk-very-secret"),
            ("PITCREW_GITHUB_WEBHOOK_SECRET", "whsec-very-secret"),
        ],
        &[],
    );
    let debug = format!("{c:?} {c:#?}");
    assert!(!debug.contains("very-secret"), "{debug}");
    let rendered = c.render_redacted();
    assert!(!rendered.contains("very-secret"), "{rendered}");

    let raw = raw::env_layer(&env(&[("PITCREW_GITHUB_WEBHOOK_SECRET", "whsec-very-secret")]));
    assert!(!format!("{raw:?}").contains("very-secret"));

    // An invalid secret is never echoed in an error either.
    let errs = errors(None, &[NAME, KEY], &["github.webhook_secret="]);
    assert_eq!(
        errs,
        ["--set github.webhook_secret: invalid `github.webhook_secret`: must not be empty"]
    );
}

/// What `main` hands the secret filter: the variable of every key of kind secret.
#[test]
fn the_secret_variables_are_those_of_the_secret_keys() {
    assert_eq!(
        secret_env_vars().collect::<Vec<_>>(),
        [
            "PITCREW_GITHUB_PRIVATE_KEY",
            "PITCREW_GITHUB_WEBHOOK_SECRET",
            "PITCREW_SERVER_DATABASE_URL",
            "PRIVATE_KEY",
            "WEBHOOK_SECRET"
        ]
    );
}

#[test]
fn render_redacted_shows_effective_values_and_origins() {
    let dir = TempDir::new();
    let key = dir.write("app.pem", "key");
    let (c, _file_dir) = load_with(
        Some("[model]\nname = \"gpt-4o\"\nrequest_timeout = 90\n\n[prices.\"gpt-4o\"]\ninput = 2.5\noutput = 10\n"),
        &[
            ("OPENAI_API_KEY", "sk-secret"),
            ("PITCREW_GITHUB_WEBHOOK_SECRET", "whsec"),
            ("PITCREW_GITHUB_APP_ID", "42"),
            ("PITCREW_GITHUB_PRIVATE_KEY_PATH", key.to_str().unwrap()),
        ],
        &["agent.max_cost_usd=2.5"],
    );
    let c = c.unwrap();
    let file_dir = c.file.as_ref().unwrap().parent().unwrap().display().to_string();
    let rendered = c
        .render_redacted()
        .replace(&file_dir, "<dir>")
        .replace(&dir.path().display().to_string(), "<keys>");
    insta::assert_snapshot!(rendered, @r#"
    # pitcrew effective configuration (file: <dir>/pitcrew.toml)

    [model]
    provider = "openai"                              # default
    name = "gpt-4o"                                  # <dir>/pitcrew.toml:2
    base_url = "https://api.openai.com/v1"           # default
    api_key_env = "OPENAI_API_KEY"                   # default
    # api key: read from $OPENAI_API_KEY (set)
    context_window = 128000                          # default
    max_output_tokens = 8192                         # default
    request_timeout = "1m30s"                        # <dir>/pitcrew.toml:3
    stream_idle_timeout = "2m"                       # default
    max_retries = 4                                  # default
    max_retry_delay = "1m"                           # default

    [github]
    api_url = "https://api.github.com/"              # default
    app_id = 42                                      # env PITCREW_GITHUB_APP_ID
    private_key_path = "<keys>/app.pem" # env PITCREW_GITHUB_PRIVATE_KEY_PATH
    webhook_secret = "[redacted]"                    # env PITCREW_GITHUB_WEBHOOK_SECRET
    bot_name = "pitcrew[bot]"                        # default
    bot_email = "pitcrew[bot]@users.noreply.github.com" # default

    [server]
    listen = "127.0.0.1:8080"                        # default
    webhook_path = "/webhook"                        # default
    data_dir = "./pitcrew-data"                      # default
    concurrency = 4                                  # default
    job_attempts = 3                                 # default
    max_body = "25MiB"                               # default
    shutdown_grace = "1m"                            # default
    pool_size = 2                                    # default
    pool_max_idle = "6h"                             # default
    mirror_max_idle = "14d"                          # default
    header_timeout = "10s"                           # default
    body_timeout = "30s"                             # default
    idle_timeout = "1m"                              # default
    # max_connections: not set (from the open-file limit)
    unverified_bytes = "64MiB"                       # default
    retain = "30d"                                   # default
    retain_payloads = "7d"                           # default
    lease_ttl = "1m"                                 # default
    store = "sqlite"                                 # default
    # database_url: not set

    [sandbox]
    backend = "docker"                               # default
    image = "debian:bookworm-slim"                   # default
    network = "none"                                 # default
    memory = "4GiB"                                  # default
    disk = "20GiB"                                   # default
    cpus = 2.0                                       # default
    pids_limit = 512                                 # default
    # setup: not set (no setup script)
    setup_network = false                            # default
    local_user = "auto"                              # default
    # docker_host: not set (DOCKER_HOST, else unix:///var/run/docker.sock)

    [agent]
    trigger = "@agent"                               # default
    max_steps = 80                                   # default
    max_cost_usd = 2.5                               # --set agent.max_cost_usd
    max_wall_time = "30m"                            # default
    max_new_file = "1MiB"                            # default
    code_index = true                                # default
    index_cache = "256MiB"                           # default
    index_memory = "1GiB"                            # default

    [chores]
    cargo_index = "https://index.crates.io/"         # default
    npm_registry = "https://registry.npmjs.org/"     # default
    pypi = "https://pypi.org/"                       # default
    lock_network = true                              # default
    schedules = true                                 # default

    [review]
    auto = false                                     # default

    [ci_loop]
    enabled = true                                   # default
    max_rounds = 3                                   # default
    wait_timeout = "30m"                             # default
    start_timeout = "5m"                             # default
    poll_interval = "3m"                             # default

    [prices."gpt-4o"]
    input = 2.5                                      # <dir>/pitcrew.toml:6
    output = 10.0                                    # <dir>/pitcrew.toml:7
    "#);
    // What is printed parses back as TOML.
    let _: toml::Table = toml::from_str(&c.render_redacted()).unwrap();
}

#[test]
fn render_redacted_shows_sandbox_settings_and_shortens_a_long_setup_script() {
    let script =
        "apt-get update && apt-get install -y --no-install-recommends build-essential libssl-dev\npip install -e .\n";
    let (c, dir) = load_with(
        Some(&format!(
            "[model]\nname = \"m\"\n\n[sandbox]\nmemory = 2000000000\nsetup = {}\n",
            toml::Value::String(script.to_owned())
        )),
        &[
            KEY,
            ("PITCREW_SANDBOX_NETWORK", "bridge"),
            ("PITCREW_SANDBOX_CPUS", "0.5"),
        ],
        &["sandbox.pids_limit=100", "sandbox.setup_network=yes"],
    );
    let c = c.unwrap();
    assert_eq!(c.sandbox.setup.as_deref(), Some(script));
    let rendered = c.render_redacted().replace(&dir.path().display().to_string(), "<dir>");
    let sandbox = rendered
        .split("\n\n")
        .find(|part| part.starts_with("[sandbox]"))
        .unwrap();
    insta::assert_snapshot!(sandbox, @r#"
    [sandbox]
    backend = "docker"                               # default
    image = "debian:bookworm-slim"                   # default
    network = "bridge"                               # env PITCREW_SANDBOX_NETWORK
    memory = "2GB"                                   # <dir>/pitcrew.toml:5
    disk = "20GiB"                                   # default
    cpus = 0.5                                       # env PITCREW_SANDBOX_CPUS
    pids_limit = 100                                 # --set sandbox.pids_limit
    # setup: shortened; the script has 2 lines, 105 chars
    setup = "apt-get update && apt-get install -y --no-install-recommends …" # <dir>/pitcrew.toml:6
    setup_network = true                             # --set sandbox.setup_network
    local_user = "auto"                              # default
    # docker_host: not set (DOCKER_HOST, else unix:///var/run/docker.sock)
    "#);
    let _: toml::Table = toml::from_str(&rendered).unwrap();

    // A short one-line script is shown as it is.
    let c = ok(None, &[NAME, KEY], &["sandbox.setup=pip install -e ."]);
    let rendered = c.render_redacted();
    let line = format!("\n{:<48} # --set sandbox.setup\n", "setup = \"pip install -e .\"");
    assert!(rendered.contains(&line), "{rendered}");
    assert!(!rendered.contains("shortened"), "{rendered}");

    // One long line is cut too.
    let long = format!("echo {}", "x".repeat(100));
    let c = ok(None, &[NAME, KEY], &[&format!("sandbox.setup={long}")]);
    let rendered = c.render_redacted();
    let shown = format!("setup = \"echo {} …\" # --set sandbox.setup\n", "x".repeat(55));
    assert!(
        rendered.contains(&format!("# setup: shortened; the script is 105 chars long\n{shown}")),
        "{rendered}"
    );
}

#[test]
fn render_redacted_for_a_local_server_without_a_key() {
    let c = ok(None, &[NAME], &["model.base_url=http://vllm:8000/v1"]);
    let rendered = c.render_redacted();
    assert!(
        rendered.contains("# api key: read from $OPENAI_API_KEY (not set; not required for a local server)\n"),
        "{rendered}"
    );
    assert!(rendered.contains("# webhook_secret: not set\n"), "{rendered}");
    assert!(rendered.starts_with("# pitcrew effective configuration (no config file)\n"));
}

#[test]
fn chore_registries_from_every_layer_end_in_a_slash() {
    let c = ok(
        Some("[model]\nname = \"m\"\n[chores]\ncargo_index = \"http://127.0.0.1:9/index\"\nlock_network = false\n"),
        &[KEY, ("PITCREW_CHORES_NPM_REGISTRY", "http://npm.mirror.internal/npm")],
        &["chores.pypi=https://pypi.mirror.internal/simple/../"],
    );
    assert_eq!(c.chores.registries.cargo_index.as_str(), "http://127.0.0.1:9/index/");
    assert_eq!(c.chores.registries.npm.as_str(), "http://npm.mirror.internal/npm/");
    assert_eq!(c.chores.registries.pypi.as_str(), "https://pypi.mirror.internal/");
    assert!(!c.chores.lock_network && c.chores.schedules);
    // Credentials in a registry's address would reach the sandbox: refused, and never shown.
    let errs = errors(
        Some("[model]\nname = \"m\"\n[chores]\nnpm_registry = \"https://ci:s3cr3t@npm.internal/\"\n"),
        &[KEY],
        &[],
    );
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].contains("chores.npm_registry") && errs[0].contains("must not hold credentials"),
        "{errs:?}"
    );
    assert!(!errs[0].contains("s3cr3t") && !errs[0].contains("ci:"), "{errs:?}");
    let errs = errors(
        Some("[model]\nname = \"m\"\n[chores]\npypi = \"ftp://pypi\"\n"),
        &[KEY],
        &[],
    );
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].contains("chores.pypi") && errs[0].contains("http or https"),
        "{errs:?}"
    );
}

#[test]
fn server_edge_and_retention_settings_are_validated() {
    let config = ok(
        None,
        &[NAME, KEY],
        &[
            "server.header_timeout=2s",
            "server.body_timeout=5s",
            "server.idle_timeout=3s",
            "server.max_connections=100",
            "server.unverified_bytes=128MiB",
            "server.retain=10d",
        ],
    );
    let server = &config.server;
    assert_eq!(server.header_timeout, Duration::from_secs(2));
    assert_eq!(server.body_timeout, Duration::from_secs(5));
    assert_eq!(server.idle_timeout, Duration::from_secs(3));
    assert_eq!(server.max_connections, Some(100));
    assert_eq!(server.unverified_bytes, 128 * 1024 * 1024);
    assert_eq!(server.retain, Duration::from_secs(10 * 86_400));
    assert_eq!(server.retain_payloads, Duration::from_secs(7 * 86_400));
    // The payloads' default never outlives the rows.
    let short = ok(None, &[NAME, KEY], &["server.retain=4d"]);
    assert_eq!(short.server.retain_payloads, Duration::from_secs(4 * 86_400));

    let errs = errors(
        None,
        &[NAME, KEY],
        &[
            "server.header_timeout=0s",
            "server.max_connections=0",
            "server.unverified_bytes=1MiB",
            "server.retain=1d",
            "server.retain_payloads=40d",
        ],
    );
    let all = errs.join("\n");
    for expected in [
        "invalid `server.header_timeout` = \"0s\": must be longer than zero",
        "invalid `server.max_connections` = 0: must be at least 1",
        "invalid `server.unverified_bytes` = 1MiB: must be at least server.max_body (25MiB)",
        "invalid `server.retain` = \"1d\": must be at least 3 days",
        "invalid `server.retain_payloads` = \"40d\": must not be longer than server.retain",
    ] {
        assert!(all.contains(expected), "{expected}\nnot in:\n{all}");
    }
}

#[test]
fn the_code_index_can_be_turned_off_and_its_cache_and_memory_sized() {
    let config = ok(
        Some("[model]\nname = \"m\"\n\n[agent]\ncode_index = false\nindex_cache = \"64MiB\"\nindex_memory = \"0\"\n"),
        &[KEY],
        &[],
    );
    assert!(!config.agent.code_index);
    assert_eq!(config.agent.index_cache_bytes, 64 * 1024 * 1024);
    assert_eq!(config.agent.index_memory_bytes, 0);
    let errs = errors(
        None,
        &[NAME, KEY],
        &["agent.index_cache=1KiB", "agent.index_memory=lots"],
    );
    insta::assert_snapshot!(errs.join("\n"), @r#"
    --set agent.index_cache: invalid `agent.index_cache` = "1KiB": must be at least 1MiB
    --set agent.index_memory: invalid `agent.index_memory` = "lots": expected a whole number followed by a unit, e.g. "4GiB", "512MiB" or "2GB"
    "#);
}

#[test]
fn the_ci_loop_section_from_a_file_the_environment_and_flags() {
    let config = ok(
        Some("[model]\nname = \"m\"\n[ci_loop]\nmax_rounds = 2\nwait_timeout = \"10m\"\n"),
        &[
            ("OPENAI_API_KEY", "sk-test"),
            ("PITCREW_CI_LOOP_POLL_INTERVAL", "30s"),
            ("PITCREW_CI_LOOP_ENABLED", "false"),
        ],
        &["ci_loop.start_timeout=2m"],
    );
    assert_eq!(
        config.ci_loop,
        CiLoopConfig {
            enabled: false,
            max_rounds: 2,
            wait_timeout: Duration::from_secs(600),
            start_timeout: Duration::from_secs(120),
            poll_interval: Duration::from_secs(30),
        }
    );
    let problems = errors(
        Some("[model]\nname = \"m\"\n[ci_loop]\nmax_rounds = 0\n"),
        &[("OPENAI_API_KEY", "sk-test")],
        &[],
    );
    assert!(problems[0].contains("must be from 1 to 10"), "{problems:?}");
}

#[test]
fn the_store_is_sqlite_unless_postgres_is_chosen_with_a_database_url() {
    let config = ok(Some("[model]\nname = \"m\"\n"), &[("OPENAI_API_KEY", "sk-test")], &[]);
    assert_eq!(config.server.store, StoreConfig::Sqlite);
    let url = "postgres://pitcrew:s3cret-pw@db:5432/pitcrew";
    let config = ok(
        Some("[model]\nname = \"m\"\n[server]\nstore = \"postgres\"\n"),
        &[("OPENAI_API_KEY", "sk-test"), ("PITCREW_SERVER_DATABASE_URL", url)],
        &[],
    );
    assert_eq!(config.server.store, StoreConfig::Postgres { url: url.into() });
    let shown = config.render_redacted();
    assert!(shown.contains("store = \"postgres\""), "{shown}");
    assert!(!shown.contains("s3cret-pw"), "{shown}");

    let problems = errors(
        Some("[model]\nname = \"m\"\n[server]\nstore = \"postgres\"\n"),
        &[("OPENAI_API_KEY", "sk-test")],
        &[],
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("server.database_url") && p.contains("must be set")),
        "{problems:?}"
    );
    let problems = errors(
        Some("[model]\nname = \"m\"\n"),
        &[("OPENAI_API_KEY", "sk-test"), ("PITCREW_SERVER_DATABASE_URL", url)],
        &[],
    );
    assert!(
        problems.iter().any(|p| p.contains("server.store = \"postgres\"")),
        "{problems:?}"
    );
    assert!(problems.iter().all(|p| !p.contains("s3cret-pw")), "{problems:?}");
    let problems = errors(
        Some("[model]\nname = \"m\"\n[server]\nstore = \"postgress\"\n"),
        &[("OPENAI_API_KEY", "sk-test")],
        &[],
    );
    assert!(problems[0].contains("`postgres`"), "{problems:?}");
}
