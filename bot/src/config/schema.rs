//! The table of every configuration key (section, name, value kind) and the "did you mean" helper.
//!
//! The file walk, the environment layer and `--set` all type their input from this one table, so
//! a key added here is settable everywhere; the serde structs in `raw.rs` must gain a matching field.

/// What a key holds, which decides how an environment or `--set` string is typed and which TOML
/// types the file may use for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Str,
    Secret,
    Url,
    Path,
    SocketAddr,
    /// One of a fixed set of words; the word is checked during validation (with a hint).
    Choice,
    U32,
    U64,
    F64,
    /// In the file a TOML boolean; from the environment or `--set` also 1/0, yes/no, on/off.
    Bool,
    Duration,
    /// A size string like "4GiB" or a whole number of bytes.
    ByteSize,
}

impl Kind {
    /// How the expected value is described in error messages.
    pub(crate) fn expected(self) -> &'static str {
        match self {
            Kind::Str | Kind::Secret | Kind::Choice => "a string",
            Kind::Url => "a URL string",
            Kind::Path => "a path string",
            Kind::SocketAddr => "an address string like \"127.0.0.1:8080\"",
            Kind::U32 | Kind::U64 => "a whole number",
            Kind::F64 => "a number",
            Kind::Bool => "a boolean (true or false)",
            Kind::Duration => "a duration like \"90s\", \"10m\", \"1h30m\" or a number of seconds",
            Kind::ByteSize => "a size like \"4GiB\", \"512MiB\", \"2GB\" or a number of bytes",
        }
    }
}

#[derive(Debug)]
pub(crate) struct Key {
    pub(crate) section: &'static str,
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    /// The words a [`Kind::Choice`] accepts (for the JSON Schema; the loader checks them, and a
    /// test checks the two agree); empty for other kinds.
    pub(crate) choices: &'static [&'static str],
}

impl Key {
    /// `section.name`, the spelling used by `--set` and in messages.
    pub(crate) fn dotted(&self) -> String {
        format!("{}.{}", self.section, self.name)
    }

    /// `PITCREW_SECTION_NAME`.
    pub(crate) fn env_var(&self) -> String {
        env_var(self.section, self.name)
    }
}

pub(crate) fn env_var(section: &str, name: &str) -> String {
    format!("PITCREW_{}_{}", section.to_ascii_uppercase(), name.to_ascii_uppercase())
}

/// Sections holding plain keys, in rendering order. `prices` is separate: its tables are keyed
/// by model name and it can only be set in the file.
pub(crate) const SECTIONS: &[&str] = &[
    "model", "github", "server", "sandbox", "agent", "chores", "review", "ci_loop",
];
pub(crate) const PRICES: &str = "prices";
pub(crate) const PRICE_KEYS: &[&str] = &["input", "output", "cache_read", "cache_write"];

/// A variable other GitHub App frameworks use (Probot's, which PaaS templates and container setups
/// already set), read as one of pitcrew's keys. The `PITCREW_*` variable wins when both are set.
#[derive(Debug)]
pub(crate) struct Alias {
    pub(crate) var: &'static str,
    pub(crate) section: &'static str,
    pub(crate) name: &'static str,
}

pub(crate) const ALIASES: &[Alias] = &[
    Alias {
        var: "APP_ID",
        section: "github",
        name: "app_id",
    },
    // The key's contents (with `\n` for line breaks, as secrets stores pass them), not a path.
    Alias {
        var: "PRIVATE_KEY",
        section: "github",
        name: "private_key",
    },
    Alias {
        var: "WEBHOOK_SECRET",
        section: "github",
        name: "webhook_secret",
    },
    // A GitHub Enterprise Server's host name: `github.api_url` becomes `https://HOST/api/v3`
    // (`GHE_PROTOCOL=http` for plain HTTP).
    Alias {
        var: "GHE_HOST",
        section: "github",
        name: "api_url",
    },
];

/// Read with `GHE_HOST`: the scheme of the Enterprise Server's URL (`https` unless set).
pub(crate) const GHE_PROTOCOL: &str = "GHE_PROTOCOL";

/// Environment variables read by the CLI rather than by the config loader.
pub(crate) const CLI_ENV_VARS: &[&str] = &["PITCREW_CONFIG", "PITCREW_LOG_FORMAT"];

const fn key(section: &'static str, name: &'static str, kind: Kind) -> Key {
    Key {
        section,
        name,
        kind,
        choices: &[],
    }
}

const fn choice(section: &'static str, name: &'static str, choices: &'static [&'static str]) -> Key {
    Key {
        section,
        name,
        kind: Kind::Choice,
        choices,
    }
}

pub(crate) const KEYS: &[Key] = &[
    choice("model", "provider", &["openai", "anthropic"]),
    key("model", "name", Kind::Str),
    key("model", "base_url", Kind::Url),
    key("model", "api_key_env", Kind::Str),
    key("model", "context_window", Kind::U64),
    key("model", "max_output_tokens", Kind::U32),
    key("model", "request_timeout", Kind::Duration),
    key("model", "stream_idle_timeout", Kind::Duration),
    key("model", "max_retries", Kind::U32),
    key("model", "max_retry_delay", Kind::Duration),
    key("github", "api_url", Kind::Url),
    key("github", "app_id", Kind::U64),
    key("github", "private_key_path", Kind::Path),
    key("github", "private_key", Kind::Secret),
    key("github", "webhook_secret", Kind::Secret),
    key("github", "bot_name", Kind::Str),
    key("github", "bot_email", Kind::Str),
    key("server", "listen", Kind::SocketAddr),
    key("server", "webhook_path", Kind::Str),
    key("server", "public_url", Kind::Url),
    key("server", "data_dir", Kind::Path),
    key("server", "concurrency", Kind::U32),
    key("server", "job_attempts", Kind::U32),
    key("server", "max_body", Kind::ByteSize),
    key("server", "shutdown_grace", Kind::Duration),
    key("server", "pool_size", Kind::U32),
    key("server", "pool_max_idle", Kind::Duration),
    key("server", "mirror_max_idle", Kind::Duration),
    key("server", "header_timeout", Kind::Duration),
    key("server", "body_timeout", Kind::Duration),
    key("server", "idle_timeout", Kind::Duration),
    key("server", "max_connections", Kind::U32),
    key("server", "unverified_bytes", Kind::ByteSize),
    key("server", "retain", Kind::Duration),
    key("server", "retain_payloads", Kind::Duration),
    choice("server", "store", &["sqlite", "postgres"]),
    key("server", "database_url", Kind::Secret),
    key("server", "lease_ttl", Kind::Duration),
    choice("sandbox", "backend", &["docker", "local"]),
    key("sandbox", "image", Kind::Str),
    choice("sandbox", "network", &["none", "bridge"]),
    key("sandbox", "memory", Kind::ByteSize),
    key("sandbox", "disk", Kind::ByteSize),
    key("sandbox", "cpus", Kind::F64),
    key("sandbox", "pids_limit", Kind::U32),
    key("sandbox", "setup", Kind::Str),
    key("sandbox", "setup_network", Kind::Bool),
    choice("sandbox", "local_user", &["auto", "self"]),
    key("sandbox", "docker_host", Kind::Str),
    key("agent", "trigger", Kind::Str),
    key("agent", "max_steps", Kind::U32),
    key("agent", "max_cost_usd", Kind::F64),
    key("agent", "max_wall_time", Kind::Duration),
    key("agent", "max_new_file", Kind::ByteSize),
    key("agent", "code_index", Kind::Bool),
    key("agent", "index_cache", Kind::ByteSize),
    key("agent", "index_memory", Kind::ByteSize),
    key("chores", "cargo_index", Kind::Url),
    key("chores", "npm_registry", Kind::Url),
    key("chores", "pypi", Kind::Url),
    key("chores", "lock_network", Kind::Bool),
    key("chores", "schedules", Kind::Bool),
    key("review", "auto", Kind::Bool),
    key("ci_loop", "enabled", Kind::Bool),
    key("ci_loop", "max_rounds", Kind::U32),
    key("ci_loop", "wait_timeout", Kind::Duration),
    key("ci_loop", "start_timeout", Kind::Duration),
    key("ci_loop", "poll_interval", Kind::Duration),
];

pub(crate) fn lookup(section: &str, name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.section == section && k.name == name)
}

pub(crate) fn keys_in(section: &str) -> impl Iterator<Item = &'static Key> {
    KEYS.iter().filter(move |k| k.section == section)
}

/// The candidate closest to `typed` (ignoring ASCII case), if it is close enough to be a typo.
pub(crate) fn did_you_mean<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed = typed.to_ascii_lowercase();
    let limit = (typed.chars().count() / 3).max(2);
    candidates
        .into_iter()
        .map(|c| (strsim::levenshtein(&typed, &c.to_ascii_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain Levenshtein over chars: a transposition costs two.
    #[test]
    fn edit_distance_basics() {
        assert_eq!(strsim::levenshtein("", ""), 0);
        assert_eq!(strsim::levenshtein("abc", ""), 3);
        assert_eq!(strsim::levenshtein("kitten", "sitting"), 3);
        assert_eq!(strsim::levenshtein("max_step", "max_steps"), 1);
        assert_eq!(strsim::levenshtein("nmae", "name"), 2);
    }

    #[test]
    fn did_you_mean_picks_the_closest_and_ignores_far_ones() {
        let keys = ["name", "base_url", "provider"];
        assert_eq!(did_you_mean("nmae", keys), Some("name"));
        assert_eq!(did_you_mean("BASEURL", keys), Some("base_url"));
        assert_eq!(did_you_mean("temperature", keys), None);
    }

    #[test]
    fn every_key_belongs_to_a_known_section_and_is_unique() {
        for k in KEYS {
            assert!(SECTIONS.contains(&k.section), "{}", k.dotted());
            assert_eq!(KEYS.iter().filter(|o| o.dotted() == k.dotted()).count(), 1);
        }
    }
}
