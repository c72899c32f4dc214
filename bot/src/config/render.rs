//! `Config::render_redacted`: the effective configuration as TOML, with where each value came
//! from, safe to paste into an issue (secrets are never printed).

use std::fmt::Write as _;

use super::bytesize::format_byte_size;
use super::duration::format_duration;
use super::{AppKey, Config, Origin};

const REDACTED: &str = "\"[redacted]\"";
/// Values are padded to this column before their origin comment, for scanning down the page.
const COMMENT_COLUMN: usize = 48;
/// A longer (or multi-line) setup script is shown as its first line cut to this many chars.
const SETUP_SHOWN_CHARS: usize = 60;

impl Config {
    /// The effective configuration as valid TOML. Secrets show as `"[redacted]"`; the API key is
    /// described in a comment (which variable, whether it is set), never shown.
    pub fn render_redacted(&self) -> String {
        let mut out = Out {
            config: self,
            text: String::new(),
        };
        match &self.file {
            Some(path) => out.comment(&format!("pitcrew effective configuration (file: {})", path.display())),
            None => out.comment("pitcrew effective configuration (no config file)"),
        }

        let m = &self.model;
        out.section("model");
        out.value("model", "provider", string(m.provider.as_str()));
        out.value("model", "name", string(&m.name));
        out.value("model", "base_url", string(m.base_url.as_str()));
        out.value("model", "api_key_env", string(&m.api_key_env));
        let key_state = match (&m.api_key, super::is_local_server(&m.base_url)) {
            (Some(_), _) => "set",
            (None, true) => "not set; not required for a local server",
            // Unreachable after validation, but rendering must not lie if it happens.
            (None, false) => "not set",
        };
        out.comment(&format!("api key: read from ${} ({key_state})", m.api_key_env));
        out.value("model", "context_window", m.context_window.to_string());
        out.value("model", "max_output_tokens", m.max_output_tokens.to_string());
        out.value("model", "request_timeout", duration(m.request_timeout));
        out.value("model", "stream_idle_timeout", duration(m.stream_idle_timeout));
        out.value("model", "max_retries", m.max_retries.to_string());
        out.value("model", "max_retry_delay", duration(m.max_retry_delay));

        let g = &self.github;
        out.section("github");
        out.value("github", "api_url", string(g.api_url.as_str()));
        match &g.app {
            Some(app) => {
                out.value("github", "app_id", app.app_id.to_string());
                match &app.key {
                    AppKey::File(path) => {
                        out.value("github", "private_key_path", string(&path.display().to_string()));
                    }
                    AppKey::Pem { .. } => out.value("github", "private_key", REDACTED.to_owned()),
                }
            }
            None => {
                out.comment("app_id: not set");
                out.comment("private_key_path: not set");
            }
        }
        match &g.webhook_secret {
            Some(_) => out.value("github", "webhook_secret", REDACTED.to_owned()),
            None => out.comment("webhook_secret: not set"),
        }
        out.value("github", "bot_name", string(&g.bot_name));
        out.value("github", "bot_email", string(&g.bot_email));

        out.section("server");
        out.value("server", "listen", string(&self.server.listen.to_string()));
        out.value("server", "webhook_path", string(&self.server.webhook_path));
        if let Some(url) = &self.server.public_url {
            out.value("server", "public_url", string(url.as_str()));
        }
        out.value(
            "server",
            "data_dir",
            string(&self.server.data_dir.display().to_string()),
        );
        let server = &self.server;
        out.value("server", "concurrency", server.concurrency.to_string());
        out.value("server", "job_attempts", server.job_attempts.to_string());
        out.value("server", "max_body", string(&format_byte_size(server.max_body_bytes)));
        out.value("server", "shutdown_grace", duration(server.shutdown_grace));
        out.value("server", "pool_size", server.pool_size.to_string());
        out.value("server", "pool_max_idle", duration(server.pool_max_idle));
        out.value("server", "mirror_max_idle", duration(server.mirror_max_idle));
        out.value("server", "header_timeout", duration(server.header_timeout));
        out.value("server", "body_timeout", duration(server.body_timeout));
        out.value("server", "idle_timeout", duration(server.idle_timeout));
        match server.max_connections {
            Some(n) => out.value("server", "max_connections", n.to_string()),
            None => out.comment("max_connections: not set (from the open-file limit)"),
        }
        out.value(
            "server",
            "unverified_bytes",
            string(&format_byte_size(server.unverified_bytes)),
        );
        out.value("server", "retain", duration(server.retain));
        out.value("server", "retain_payloads", duration(server.retain_payloads));
        out.value("server", "lease_ttl", duration(server.lease_ttl));
        out.value("server", "store", string(server.store.kind()));
        match &server.store {
            crate::config::StoreConfig::Postgres { .. } => {
                out.value("server", "database_url", REDACTED.to_owned());
            }
            crate::config::StoreConfig::Sqlite => out.comment("database_url: not set"),
        }

        let s = &self.sandbox;
        out.section("sandbox");
        out.value("sandbox", "backend", string(s.backend.as_str()));
        out.value("sandbox", "image", string(&s.image));
        out.value("sandbox", "network", string(s.network.as_str()));
        out.value("sandbox", "memory", string(&format_byte_size(s.memory_bytes)));
        out.value("sandbox", "disk", string(&format_byte_size(s.disk_bytes)));
        out.value("sandbox", "cpus", float(s.cpus));
        out.value("sandbox", "pids_limit", s.pids_limit.to_string());
        match &s.setup {
            Some(script) => {
                let (shown, shortened) = shorten(script);
                if shortened {
                    let chars = script.chars().count();
                    match script.trim().lines().count() {
                        1 => out.comment(&format!("setup: shortened; the script is {chars} chars long")),
                        lines => out.comment(&format!(
                            "setup: shortened; the script has {lines} lines, {chars} chars"
                        )),
                    }
                }
                out.value("sandbox", "setup", string(&shown));
            }
            None => out.comment("setup: not set (no setup script)"),
        }
        out.value("sandbox", "setup_network", s.setup_network.to_string());
        out.value("sandbox", "local_user", string(s.local_user.as_str()));
        match &s.docker_host {
            Some(host) => out.value("sandbox", "docker_host", string(host)),
            None => out.comment("docker_host: not set (DOCKER_HOST, else unix:///var/run/docker.sock)"),
        }

        let a = &self.agent;
        out.section("agent");
        out.value("agent", "trigger", string(&a.trigger));
        out.value("agent", "max_steps", a.max_steps.to_string());
        match a.max_cost_usd {
            Some(cost) => out.value("agent", "max_cost_usd", float(cost)),
            None => out.comment("max_cost_usd: not set (no cost limit)"),
        }
        out.value("agent", "max_wall_time", duration(a.max_wall_time));
        out.value("agent", "max_new_file", string(&format_byte_size(a.max_new_file_bytes)));
        out.value("agent", "code_index", a.code_index.to_string());
        out.value("agent", "index_cache", string(&format_byte_size(a.index_cache_bytes)));
        out.value("agent", "index_memory", string(&format_byte_size(a.index_memory_bytes)));

        let c = &self.chores;
        out.section("chores");
        out.value("chores", "cargo_index", string(c.registries.cargo_index.as_str()));
        out.value("chores", "npm_registry", string(c.registries.npm.as_str()));
        out.value("chores", "pypi", string(c.registries.pypi.as_str()));
        out.value("chores", "lock_network", c.lock_network.to_string());
        out.value("chores", "schedules", c.schedules.to_string());

        out.section("review");
        out.value("review", "auto", self.review.auto.to_string());

        let l = &self.ci_loop;
        out.section("ci_loop");
        out.value("ci_loop", "enabled", l.enabled.to_string());
        out.value("ci_loop", "max_rounds", l.max_rounds.to_string());
        out.value("ci_loop", "wait_timeout", duration(l.wait_timeout));
        out.value("ci_loop", "start_timeout", duration(l.start_timeout));
        out.value("ci_loop", "poll_interval", duration(l.poll_interval));

        for (model, price) in &self.prices {
            let section = format!("prices.{}", string(model));
            out.section(&section);
            let fields = [
                ("input", Some(price.input)),
                ("output", Some(price.output)),
                ("cache_read", price.cache_read),
                ("cache_write", price.cache_write),
            ];
            for (field, value) in fields {
                if let Some(value) = value {
                    let origin = self.origin(&format!("prices.{model:?}.{field}"));
                    out.line(field, float(value), &origin);
                }
            }
        }
        out.text
    }
}

struct Out<'a> {
    config: &'a Config,
    text: String,
}

impl Out<'_> {
    fn section(&mut self, name: &str) {
        let _ = write!(self.text, "\n[{name}]\n");
    }

    fn comment(&mut self, text: &str) {
        let _ = writeln!(self.text, "# {text}");
    }

    fn value(&mut self, section: &str, key: &str, value: String) {
        let origin = self.config.origin(&format!("{section}.{key}"));
        self.line(key, value, &origin);
    }

    fn line(&mut self, key: &str, value: String, origin: &Origin) {
        let assignment = format!("{key} = {value}");
        let from = match origin {
            Origin::Default => "default".to_owned(),
            Origin::File { path, line } => format!("{}:{line}", path.display()),
            Origin::Env { var } => format!("env {var}"),
            Origin::Flag { key } => format!("--set {key}"),
        };
        let _ = writeln!(self.text, "{assignment:<COMMENT_COLUMN$} # {from}");
    }
}

/// A TOML basic string, escaped by the toml crate.
fn string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

fn float(x: f64) -> String {
    toml::Value::Float(x).to_string()
}

/// The script's first line, cut to [`SETUP_SHOWN_CHARS`] and marked with "…" when anything is
/// left out; whether it was.
fn shorten(script: &str) -> (String, bool) {
    let trimmed = script.trim();
    let first = trimmed.lines().next().unwrap_or_default().trim_end();
    let mut shown: String = first.chars().take(SETUP_SHOWN_CHARS).collect();
    if shown.len() == trimmed.len() {
        return (shown, false);
    }
    shown.push_str(" …");
    (shown, true)
}

fn duration(d: std::time::Duration) -> String {
    string(&format_duration(d))
}
