//! Layered configuration → one validated [`Config`]: built-in defaults < `pitcrew.toml` <
//! `PITCREW_<SECTION>_<KEY>` environment variables < `--set section.key=value` flags.
//!
//! Like ripgrep's low/high args: `raw.rs` turns each source into optional serde fields (checking
//! only names and types), the layers are merged, and `validate` below turns the merge into typed
//! values, collecting every problem rather than stopping at the first.

pub(crate) mod bytesize;
pub mod command;
pub mod deps;
pub(crate) mod duration;
mod error;
pub mod json_schema;
mod raw;
mod render;
pub mod repo;
pub mod schedule;
mod schema;

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use secrecy::SecretString;
use url::{Host, Url};

use crate::llm::{HttpOptions, ModelSettings, Price, PriceTable, RetryPolicy};

pub use error::{ConfigError, ConfigErrors, Hint, Origin};

use raw::{
    Layer, RawAgent, RawByteSize, RawChores, RawConfig, RawDuration, RawGithub, RawModel, RawPrice, RawSandbox,
    RawServer,
};

/// The file read when neither `--config` nor `PITCREW_CONFIG` names one (and it exists).
pub const DEFAULT_CONFIG_FILE: &str = "pitcrew.toml";

/// Inputs to [`Config::load`]; the process environment is passed in, so tests need not touch it.
#[derive(Clone, Copy, Debug)]
pub struct LoadOptions<'a> {
    /// The config file; `None` means no file (defaults, environment and flags only).
    pub config_path: Option<&'a Path>,
    /// The environment: `PITCREW_*` settings and the variable named by `model.api_key_env`.
    pub env: &'a BTreeMap<String, String>,
    /// `--set section.key=value` arguments, in order (later wins).
    pub overrides: &'a [String],
}

/// The `PITCREW_*` variables that hold secrets (the keys of kind secret): `main` hands them to
/// [`crate::secrets::take_from_environment`], which removes them from the process environment.
pub fn secret_env_vars() -> impl Iterator<Item = String> {
    let secret =
        |section: &str, name: &str| schema::lookup(section, name).is_some_and(|key| key.kind == schema::Kind::Secret);
    schema::KEYS
        .iter()
        .filter(|k| k.kind == schema::Kind::Secret)
        .map(schema::Key::env_var)
        .chain(
            schema::ALIASES
                .iter()
                .filter(move |alias| secret(alias.section, alias.name))
                .map(|alias| alias.var.to_owned()),
        )
}

/// Where GitHub delivers webhooks unless `[server] webhook_path` says otherwise.
pub const DEFAULT_WEBHOOK_PATH: &str = "/webhook";

/// Paths the server answers itself: a webhook path must not shadow them.
const RESERVED_PATHS: &[&str] = &["/", "/healthz", "/metrics"];

/// Why `path` cannot be the webhook's path: it must be an absolute URL path of plain characters,
/// not one of the server's own.
pub fn webhook_path_problem(path: &str) -> Option<&'static str> {
    if !path.starts_with('/') {
        return Some("must start with `/`, e.g. \"/webhook\" or \"/api/github/webhooks\"");
    }
    if RESERVED_PATHS.contains(&path) {
        return Some("is one of the server's own paths (`/`, `/healthz`, `/metrics`)");
    }
    let plain = |c: char| c.is_ascii_alphanumeric() || "/-._~".contains(c);
    if !path.chars().all(plain) || path.contains("//") || path.split('/').any(|part| part == "." || part == "..") {
        return Some("may hold only letters, digits and `/-._~`, without empty, `.` or `..` segments");
    }
    None
}

/// `./pitcrew.toml` if it exists: the file to use when none was named.
pub fn discover_config_file() -> Option<PathBuf> {
    let path = Path::new(DEFAULT_CONFIG_FILE);
    path.is_file().then(|| path.to_owned())
}

/// The validated configuration. `Debug` never shows secrets.
#[derive(Clone, Debug)]
pub struct Config {
    pub model: ModelConfig,
    pub github: GithubConfig,
    pub server: ServerConfig,
    pub sandbox: SandboxConfig,
    pub agent: AgentConfig,
    pub chores: ChoresConfig,
    pub review: ReviewConfig,
    pub ci_loop: CiLoopConfig,
    /// Overrides of the built-in price table, keyed by model name or name prefix.
    pub prices: BTreeMap<String, PriceOverride>,
    /// The config file that was read, if any.
    pub file: Option<PathBuf>,
    /// Dotted key → where its value came from; absent means built-in default.
    origins: BTreeMap<String, Origin>,
}

pub use crate::llm::Provider;

/// Built-in defaults that depend on the provider.
impl Provider {
    fn default_base_url(self) -> &'static str {
        match self {
            Provider::OpenAi => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com",
        }
    }

    fn default_api_key_env(self) -> &'static str {
        match self {
            Provider::OpenAi => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    fn default_context_window(self) -> u64 {
        match self {
            Provider::OpenAi => 128_000,
            Provider::Anthropic => 200_000,
        }
    }
}

#[derive(Clone, Debug)]
pub struct ModelConfig {
    pub provider: Provider,
    pub name: String,
    pub base_url: Url,
    /// The name of the environment variable the key is read from.
    pub api_key_env: String,
    /// `None` only when `base_url` is a local or private server.
    pub api_key: Option<SecretString>,
    pub context_window: u64,
    pub max_output_tokens: u32,
    pub request_timeout: Duration,
    pub stream_idle_timeout: Duration,
    pub max_retries: u32,
    /// The longest retry-after the client will honour.
    pub max_retry_delay: Duration,
}

#[derive(Clone, Debug)]
pub struct GithubConfig {
    pub api_url: Url,
    /// Set when `app_id` and a private key (`private_key_path` or `private_key`) are.
    pub app: Option<GithubApp>,
    pub webhook_secret: Option<SecretString>,
    /// The name the bot commits under (author and committer).
    pub bot_name: String,
    /// The email the bot commits under; checked to look like `local@domain`.
    pub bot_email: String,
}

#[derive(Clone, Debug)]
pub struct GithubApp {
    pub app_id: u64,
    pub key: AppKey,
}

/// Where the App's private key comes from: a file, or its contents in the configuration (a
/// container's or PaaS's secret, `PRIVATE_KEY`).
#[derive(Clone, Debug)]
pub enum AppKey {
    /// `github.private_key_path`, checked to be a readable file at load time.
    File(PathBuf),
    /// `github.private_key`, checked to be an RSA private key at load time.
    Pem {
        pem: SecretString,
        /// Where it was set, for messages (e.g. "environment variable PRIVATE_KEY").
        origin: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    /// The path GitHub delivers webhooks to (`/webhook` unless set; the App's webhook URL ends
    /// with it).
    pub webhook_path: String,
    /// The server's address as GitHub reaches it (`https://pitcrew.example.com`), when the operator
    /// says: what `pitcrew setup app` registered and `pitcrew doctor` checks from outside.
    pub public_url: Option<Url>,
    pub data_dir: PathBuf,
    /// Jobs run at once (1..=64).
    pub concurrency: u32,
    /// Tries a job gets when the process running it dies (at least 1).
    pub job_attempts: u32,
    /// The largest webhook body accepted (GitHub caps deliveries at 25 MiB).
    pub max_body_bytes: u64,
    /// How long a stopping server lets running jobs finish before it requeues them.
    pub shutdown_grace: Duration,
    /// Idle working copies kept per repository (0: none).
    pub pool_size: u32,
    /// An idle working copy unused for longer is removed.
    pub pool_max_idle: Duration,
    /// A repository mirror not fetched for longer is removed (when no job uses it).
    pub mirror_max_idle: Duration,
    /// A request's line and headers must arrive within this of its first byte.
    pub header_timeout: Duration,
    /// A webhook body must arrive within this of the end of its headers.
    pub body_timeout: Duration,
    /// A connection with no request under way (new, or kept alive) is closed after this.
    pub idle_timeout: Duration,
    /// Connections open at once; `None`: from the open-file limit, with room left for the store,
    /// git and Docker.
    pub max_connections: Option<u32>,
    /// The bytes of bodies not yet verified held in memory at once, all requests together; past it
    /// deliveries are answered 503.
    pub unverified_bytes: u64,
    /// Finished jobs, their events and handled deliveries older than this are deleted.
    pub retain: Duration,
    /// A handled delivery's payload is dropped after this, once none of its jobs waits or runs.
    pub retain_payloads: Duration,
    /// Where jobs and deliveries are kept: SQLite in the data directory (one server), or a
    /// PostgreSQL database shared by any number of replicas.
    pub store: StoreConfig,
    /// How long a job stays its worker's without a heartbeat: a replica that died (or froze) loses
    /// its jobs to the others this long after its last one.
    pub lease_ttl: Duration,
}

/// `[server] store` and, for PostgreSQL, `database_url`.
#[derive(Clone, Debug)]
pub enum StoreConfig {
    /// `<data_dir>/pitcrew.sqlite3`.
    Sqlite,
    /// The database at this URL (a secret: it may hold a password).
    Postgres { url: SecretString },
}

impl PartialEq for StoreConfig {
    fn eq(&self, other: &Self) -> bool {
        use secrecy::ExposeSecret as _;
        match (self, other) {
            (StoreConfig::Sqlite, StoreConfig::Sqlite) => true,
            (StoreConfig::Postgres { url: a }, StoreConfig::Postgres { url: b }) => {
                a.expose_secret() == b.expose_secret()
            }
            _ => false,
        }
    }
}

impl Eq for StoreConfig {}

impl StoreConfig {
    pub fn kind(&self) -> &'static str {
        match self {
            StoreConfig::Sqlite => "sqlite",
            StoreConfig::Postgres { .. } => "postgres",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SandboxBackend {
    Docker,
    Local,
}

impl SandboxBackend {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxBackend::Docker => "docker",
            SandboxBackend::Local => "local",
        }
    }
}

/// Network access for the sandbox's commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SandboxNetwork {
    /// No network at all (the default): a loopback interface only.
    None,
    /// Docker's default bridge network: outbound access.
    Bridge,
}

impl SandboxNetwork {
    /// The setting's spelling, which is also Docker's network mode name.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxNetwork::None => "none",
            SandboxNetwork::Bridge => "bridge",
        }
    }
}

/// Whom the local backend runs commands as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalUser {
    /// An unprivileged sandbox user when pitcrew runs as root (the Action's container), so that
    /// commands cannot read pitcrew's memory, environment or files; else pitcrew's own user.
    Auto,
    /// pitcrew's own user, root included (toolchains under root's home stay usable).
    Current,
}

impl LocalUser {
    pub fn as_str(self) -> &'static str {
        match self {
            LocalUser::Auto => "auto",
            LocalUser::Current => "self",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SandboxConfig {
    pub backend: SandboxBackend,
    pub image: String,
    pub network: SandboxNetwork,
    /// Memory limit: 16 MiB to 1 TiB, so the Docker backend can pass it on as an `i64` as it is.
    pub memory_bytes: u64,
    /// How much the working copy may hold (the Docker backend stops a command that writes past it):
    /// 16 MiB to 64 TiB.
    pub disk_bytes: u64,
    /// CPU quota in CPUs, in 0.01..=1024 (Docker's smallest quota is 0.01).
    pub cpus: f64,
    /// Most processes (and threads) at once, at least 16.
    pub pids_limit: u32,
    /// A shell script run once in the sandbox after it starts, e.g. `pip install -e .`;
    /// never empty when set.
    pub setup: Option<String>,
    /// Allow network access while `setup` runs, whatever `network` says. Only true with `setup`.
    pub setup_network: bool,
    /// Whom the local backend runs commands as.
    pub local_user: LocalUser,
    /// The Docker engine's address (`unix://…`, `tcp://…`, `http(s)://…`), e.g. a socket proxy that
    /// lets pitcrew use only the endpoints it needs; `None`: `DOCKER_HOST`, else the local socket.
    pub docker_host: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AgentConfig {
    /// Starts with `@`, e.g. `@agent`.
    pub trigger: String,
    pub max_steps: u32,
    pub max_cost_usd: Option<f64>,
    pub max_wall_time: Duration,
    /// New files larger than this are left out of the bot's commits (and listed in its report).
    pub max_new_file_bytes: u64,
    /// Sessions keep a code index for `find_symbol`, `find_references` and `outline`.
    pub code_index: bool,
    /// The index's parse cache on disk, per repository, is kept under this size.
    pub index_cache_bytes: u64,
    /// The server keeps the indexes of finished jobs in memory up to this size, so that the next
    /// job on the repository re-reads only what changed; 0 keeps none.
    pub index_memory_bytes: u64,
}

/// `[chores]`: where dependency chores look for versions, and what their jobs may do.
#[derive(Clone, Debug, PartialEq)]
pub struct ChoresConfig {
    /// The registries (mirrors or private ones replace the public defaults).
    pub registries: deps::Registries,
    /// Network access for the lockfile refresh (the only step that gets it), whatever
    /// `[sandbox] network` says.
    pub lock_network: bool,
    /// `pitcrew serve` runs the repositories' `[chores.deps] schedule`s.
    pub schedules: bool,
}

/// `[review]`: the operator's defaults for pull request reviews, which a repository's own
/// `[review]` overrides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReviewConfig {
    /// Review every pull request as it opens and changes, in repositories that do not say.
    pub auto: bool,
}

/// `[ci_loop]`: after a fix is pushed, wait for the pull request's CI and fix what the commit broke,
/// within these bounds (a repository's `[ci_loop]` may lower them, never raise them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CiLoopConfig {
    /// The loop runs in repositories that have CI; `false` turns it off everywhere.
    pub enabled: bool,
    /// Fix rounds per job, the first included (1..=10).
    pub max_rounds: u32,
    /// How long one round waits for its commit's CI to complete.
    pub wait_timeout: Duration,
    /// How long a round waits for any CI to start on its commit before saying none did.
    pub start_timeout: Duration,
    /// How often a waiting job reads the commit's checks itself, in case a delivery was lost.
    pub poll_interval: Duration,
}

/// The most fix rounds a job may have.
pub const MAX_CI_ROUNDS: u32 = 10;

/// USD per million tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PriceOverride {
    pub input: f64,
    pub output: f64,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
}

impl Config {
    /// Reads, merges and validates every layer. On failure, every problem found is returned.
    pub fn load(opts: LoadOptions<'_>) -> Result<Config, ConfigErrors> {
        let file = match opts.config_path {
            Some(path) => raw::file_layer(path),
            None => Layer::default(),
        };
        let env = raw::env_layer(opts.env);
        let flags = raw::flag_layer(opts.overrides);

        let mut merged = RawConfig::default();
        let mut origins = BTreeMap::new();
        let mut rejected = BTreeSet::new();
        let mut errors = Vec::new();
        let fatal = file.fatal;
        let mut unknown_env = Vec::new();
        for layer in [file, env, flags] {
            merged.overlay(layer.raw);
            origins.extend(layer.origins);
            rejected.extend(layer.rejected);
            errors.extend(layer.errors);
            unknown_env.extend(layer.unknown_env);
        }

        let api_key_env = merged.model.api_key_env.clone().unwrap_or_else(|| {
            provider_or_default(merged.model.provider.as_deref())
                .default_api_key_env()
                .to_owned()
        });
        for var in unknown_env {
            if var != api_key_env {
                let (hint, meant) = raw::env_hint(&var);
                if let Some(key) = meant {
                    // Probably a typo of a required key: "missing" on top would be noise.
                    rejected.insert(key.dotted());
                }
                errors.push(ConfigError::UnknownEnvVar { var, hint });
            }
        }

        // Without the file's contents, "missing" errors would be noise.
        if fatal {
            return Err(ConfigErrors::new(errors));
        }

        let mut v = Validator {
            origins: &origins,
            rejected: &rejected,
            errors,
            file_label: opts
                .config_path
                .map_or_else(|| DEFAULT_CONFIG_FILE.to_owned(), |p| p.display().to_string()),
        };
        let config = v.validate(merged, opts.env);
        match config {
            Some(mut config) if v.errors.is_empty() => {
                config.file = opts.config_path.map(Path::to_owned);
                config.origins = origins;
                Ok(config)
            }
            _ => Err(ConfigErrors::new(v.errors)),
        }
    }

    /// Where a setting's value came from, by dotted key (`model.name`, `prices."gpt-4o".input`).
    pub fn origin(&self, key: &str) -> Origin {
        self.origins.get(key).cloned().unwrap_or(Origin::Default)
    }
}

impl Config {
    /// The price table: built-in list prices with the configured overrides on top. An override that
    /// leaves out cache prices bills cached tokens like plain input.
    pub fn price_table(&self) -> PriceTable {
        let mut table = PriceTable::default();
        for (model, price) in &self.prices {
            let price = Price {
                input: price.input,
                output: price.output,
                cache_read: price.cache_read.unwrap_or(price.input),
                cache_write: price.cache_write.unwrap_or(price.input),
            };
            table.set(model.clone(), price);
        }
        table
    }
}

impl ModelConfig {
    /// What the model client needs.
    pub fn settings(&self) -> ModelSettings {
        ModelSettings {
            provider: self.provider,
            model: self.name.clone(),
            base_url: self.base_url.clone(),
            api_key: self.api_key.clone(),
            max_output_tokens: self.max_output_tokens,
            stream: true,
            http: HttpOptions {
                request_timeout: Some(self.request_timeout),
                idle_timeout: Some(self.stream_idle_timeout),
                ..HttpOptions::default()
            },
            retry: RetryPolicy {
                max_retries: self.max_retries,
                max_retry_after: self.max_retry_delay,
                ..RetryPolicy::default()
            },
        }
    }
}

fn provider_or_default(raw: Option<&str>) -> Provider {
    match raw {
        Some("anthropic") => Provider::Anthropic,
        _ => Provider::OpenAi,
    }
}

/// Whether a model server is local or private, in which case it may need no API key:
/// localhost, loopback/private/link-local addresses, dotless hostnames (a compose service such as
/// `vllm`), and `.local`/`.internal`/`.lan` names.
pub fn is_local_server(url: &Url) -> bool {
    fn local_ip(ip: IpAddr) -> bool {
        match ip {
            IpAddr::V4(ip) => ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified(),
            IpAddr::V6(ip) => {
                ip.is_loopback()
                    || ip.is_unspecified()
                    || ip.is_unique_local()
                    || ip.is_unicast_link_local()
                    || ip.to_ipv4_mapped().is_some_and(|v4| local_ip(IpAddr::V4(v4)))
            }
        }
    }
    match url.host() {
        Some(Host::Domain(domain)) => {
            let domain = domain.trim_end_matches('.').to_ascii_lowercase();
            domain == "localhost"
                || !domain.contains('.')
                || [".localhost", ".local", ".internal", ".lan"]
                    .iter()
                    .any(|suffix| domain.ends_with(suffix))
        }
        Some(Host::Ipv4(ip)) => local_ip(IpAddr::V4(ip)),
        Some(Host::Ipv6(ip)) => local_ip(IpAddr::V6(ip)),
        None => false,
    }
}

struct Validator<'a> {
    origins: &'a BTreeMap<String, Origin>,
    rejected: &'a BTreeSet<String>,
    errors: Vec<ConfigError>,
    /// How to refer to the config file in "missing" messages.
    file_label: String,
}

impl Validator<'_> {
    fn origin(&self, key: &str) -> Origin {
        self.origins.get(key).cloned().unwrap_or(Origin::Default)
    }

    fn invalid(&mut self, key: &str, value: Option<String>, message: impl Into<String>) {
        self.errors.push(ConfigError::Invalid {
            origin: self.origin(key),
            key: key.to_owned(),
            value,
            message: message.into(),
        });
    }

    fn required<T>(&mut self, section: &'static str, name: &'static str, value: Option<T>) -> Option<T> {
        if value.is_none() && !self.rejected.contains(&format!("{section}.{name}")) {
            self.errors.push(ConfigError::Missing {
                section,
                name,
                file: self.file_label.clone(),
                env: schema::env_var(section, name),
            });
        }
        value
    }

    fn choice<T: Copy>(&mut self, key: &str, raw: Option<&str>, choices: &[(&str, T)], default: T) -> T {
        let Some(raw) = raw else { return default };
        if let Some((_, value)) = choices.iter().find(|(name, _)| *name == raw) {
            return *value;
        }
        let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
        let hint = Hint::closest(raw, names.iter().copied(), |s| format!("`{s}`"));
        let list = names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
        self.invalid(key, Some(format!("{raw:?}")), format!("expected one of {list}{hint}"));
        default
    }

    fn non_empty(&mut self, key: &str, raw: Option<String>, default: &str) -> String {
        match raw {
            Some(s) if s.trim().is_empty() => {
                self.invalid(key, Some(format!("{s:?}")), "must not be empty");
                default.to_owned()
            }
            Some(s) => s,
            None => default.to_owned(),
        }
    }

    fn url(&mut self, key: &str, raw: Option<String>, default: &str) -> Option<Url> {
        let text = raw.unwrap_or_else(|| default.to_owned());
        let message = match Url::parse(text.trim()) {
            Ok(url) if !matches!(url.scheme(), "http" | "https") => {
                format!("the scheme must be http or https, not `{}`", url.scheme())
            }
            Ok(url) if url.host().is_none() => "the URL has no host".to_owned(),
            Ok(url) => return Some(url),
            Err(e) => format!("not a valid URL ({e}); expected e.g. \"https://api.example.com/v1\""),
        };
        self.invalid(key, Some(format!("{text:?}")), message);
        None
    }

    fn duration(&mut self, key: &str, raw: Option<RawDuration>, default: Duration, allow_zero: bool) -> Duration {
        let Some(RawDuration(text)) = raw else {
            return default;
        };
        match duration::parse_duration(&text) {
            Ok(d) if d.is_zero() && !allow_zero => {
                self.invalid(key, Some(format!("{text:?}")), "must be longer than zero");
                default
            }
            Ok(d) => d,
            Err(message) => {
                self.invalid(key, Some(format!("{text:?}")), message.to_string());
                default
            }
        }
    }

    fn at_least_one<T: Copy + Into<u64> + std::fmt::Display>(&mut self, key: &str, raw: Option<T>, default: T) -> T {
        self.at_least(key, raw, 1, default)
    }

    fn at_least<T: Copy + Into<u64> + std::fmt::Display>(
        &mut self,
        key: &str,
        raw: Option<T>,
        min: u64,
        default: T,
    ) -> T {
        match raw {
            Some(n) if n.into() < min => {
                self.invalid(key, Some(n.to_string()), format!("must be at least {min}"));
                default
            }
            Some(n) => n,
            None => default,
        }
    }

    fn byte_size(&mut self, key: &str, raw: Option<RawByteSize>, default: u64, min: u64, max: u64) -> u64 {
        let Some(RawByteSize(text)) = raw else {
            return default;
        };
        let message = match bytesize::parse_byte_size(&text) {
            Ok(n) if n < min => format!("must be at least {}", bytesize::format_byte_size(min)),
            Ok(n) if n > max => format!("must be at most {}", bytesize::format_byte_size(max)),
            Ok(n) => return n,
            Err(message) => message.to_string(),
        };
        self.invalid(key, Some(format!("{text:?}")), message);
        default
    }

    /// A price or budget: finite and not negative (or, if `positive`, above zero).
    fn amount(&mut self, key: &str, value: f64, positive: bool) -> bool {
        let message = if !value.is_finite() {
            "must be a finite number"
        } else if positive && value <= 0.0 {
            "must be greater than zero"
        } else if value < 0.0 {
            "must not be negative"
        } else {
            return true;
        };
        self.invalid(key, Some(value.to_string()), message);
        false
    }

    fn validate(&mut self, raw: RawConfig, env: &BTreeMap<String, String>) -> Option<Config> {
        let RawConfig {
            model,
            github,
            server,
            sandbox,
            agent,
            chores,
            review,
            ci_loop,
            prices,
        } = raw;
        // Every section is checked, whatever the others hold, so that every problem is reported.
        let model = self.model(model, env);
        let github = self.github(github);
        let server = self.server(server);
        let sandbox = self.sandbox(sandbox);
        let agent = self.agent(agent);
        let chores = self.chores(chores);
        let prices = self.prices(prices);
        let ci_loop = self.ci_loop(ci_loop);
        Some(Config {
            model: model?,
            github: github?,
            server,
            sandbox,
            agent,
            chores,
            review: ReviewConfig {
                auto: review.auto.unwrap_or(false),
            },
            ci_loop,
            prices,
            file: None,
            origins: BTreeMap::new(),
        })
    }

    /// `[model]`; `None` without a name or a base URL (each failure left an error behind).
    fn model(&mut self, model: RawModel, env: &BTreeMap<String, String>) -> Option<ModelConfig> {
        let provider = self.choice(
            "model.provider",
            model.provider.as_deref(),
            &[("openai", Provider::OpenAi), ("anthropic", Provider::Anthropic)],
            Provider::OpenAi,
        );
        let name = self.required("model", "name", model.name);
        if name.as_ref().is_some_and(|n| n.trim().is_empty()) {
            self.invalid("model.name", Some("\"\"".into()), "must not be empty");
        }
        let base_url = self.url("model.base_url", model.base_url, provider.default_base_url());
        let api_key_env = self.non_empty("model.api_key_env", model.api_key_env, provider.default_api_key_env());
        if !api_key_env.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            self.invalid(
                "model.api_key_env",
                Some(format!("{api_key_env:?}")),
                "must be the name of an environment variable (letters, digits and `_`), not the key itself",
            );
        }
        let context_window = self.at_least_one(
            "model.context_window",
            model.context_window,
            provider.default_context_window(),
        );
        let max_output_tokens = self.at_least_one("model.max_output_tokens", model.max_output_tokens, 8192);
        if u64::from(max_output_tokens) >= context_window {
            self.invalid(
                "model.max_output_tokens",
                Some(max_output_tokens.to_string()),
                format!("must be smaller than `model.context_window` ({context_window})"),
            );
        }
        let request_timeout = self.duration(
            "model.request_timeout",
            model.request_timeout,
            Duration::from_secs(600),
            false,
        );
        let stream_idle_timeout = self.duration(
            "model.stream_idle_timeout",
            model.stream_idle_timeout,
            Duration::from_secs(120),
            false,
        );
        let max_retries = model.max_retries.unwrap_or(4);
        // Zero is meaningful here: never wait on a retry-after header.
        let max_retry_delay = self.duration(
            "model.max_retry_delay",
            model.max_retry_delay,
            Duration::from_secs(60),
            true,
        );
        let api_key = env
            .get(&api_key_env)
            .filter(|key| !key.is_empty())
            .map(|key| SecretString::from(key.clone()));
        // Every secret is known to the filter from the moment it is read (see `redact`).
        if let Some(key) = &api_key {
            crate::redact::register(key);
        }
        if api_key.is_none()
            && let Some(url) = &base_url
            && !is_local_server(url)
        {
            self.errors.push(ConfigError::MissingApiKey {
                var: api_key_env.clone(),
                base_url: url.to_string(),
            });
        }

        let (Some(name), Some(base_url)) = (name, base_url) else {
            return None;
        };
        Some(ModelConfig {
            provider,
            name,
            base_url,
            api_key_env,
            api_key,
            context_window,
            max_output_tokens,
            request_timeout,
            stream_idle_timeout,
            max_retries,
            max_retry_delay,
        })
    }

    /// `[github]`; `None` without an API URL (its failure left an error behind).
    fn github(&mut self, github: RawGithub) -> Option<GithubConfig> {
        let api_url = self.url("github.api_url", github.api_url, "https://api.github.com");
        let app_id = match github.app_id {
            Some(0) => {
                self.invalid("github.app_id", Some("0".into()), "must be at least 1");
                None
            }
            other => other,
        };
        let key_set = github.private_key_path.is_some() || github.private_key.is_some();
        let key = match (github.private_key_path, github.private_key) {
            (Some(_), Some(_)) => {
                self.invalid(
                    "github.private_key",
                    None,
                    "give the App's key once: `github.private_key_path` (a file) or `github.private_key` (its contents), not both",
                );
                None
            }
            (Some(path), None) => self
                .readable_file("github.private_key_path", &path)
                .then_some(AppKey::File(path)),
            (None, Some(inline)) => self.inline_key(inline.0),
            (None, None) => None,
        };
        let app = match (app_id, key) {
            (Some(app_id), Some(key)) => Some(GithubApp { app_id, key }),
            // Neither set; or the key was set but refused, and that error says enough.
            (None, None) => None,
            (Some(_), None) if key_set => None,
            (Some(_), None) => {
                self.pair_error("github.app_id", "github.private_key_path");
                None
            }
            (None, Some(key)) => {
                let set = match key {
                    AppKey::File(_) => "github.private_key_path",
                    AppKey::Pem { .. } => "github.private_key",
                };
                self.pair_error(set, "github.app_id");
                None
            }
        };
        let webhook_secret = github.webhook_secret.map(|s| s.0);
        if let Some(secret) = &webhook_secret {
            crate::redact::register(secret);
        }
        if webhook_secret
            .as_ref()
            .is_some_and(|s| secrecy::ExposeSecret::expose_secret(s).is_empty())
        {
            self.invalid("github.webhook_secret", None, "must not be empty");
        }
        let bot_name = self.non_empty("github.bot_name", github.bot_name, DEFAULT_BOT_NAME);
        if let Some(problem) = identity_problem(&bot_name) {
            self.invalid("github.bot_name", Some(format!("{bot_name:?}")), problem);
        }
        let bot_email = self.non_empty("github.bot_email", github.bot_email, DEFAULT_BOT_EMAIL);
        if let Some(problem) = identity_problem(&bot_email).or_else(|| email_problem(&bot_email)) {
            self.invalid("github.bot_email", Some(format!("{bot_email:?}")), problem);
        }
        Some(GithubConfig {
            api_url: api_url?,
            app,
            webhook_secret,
            bot_name,
            bot_email,
        })
    }

    /// `[server]`.
    fn server(&mut self, server: RawServer) -> ServerConfig {
        let listen = match server.listen {
            None => SocketAddr::from(([127, 0, 0, 1], 8080)),
            Some(text) => match text.trim().parse() {
                Ok(addr) => addr,
                Err(_) => {
                    self.invalid(
                        "server.listen",
                        Some(format!("{text:?}")),
                        "expected an IP address and port, e.g. \"127.0.0.1:8080\", \"0.0.0.0:8080\" or \"[::]:8080\"",
                    );
                    SocketAddr::from(([127, 0, 0, 1], 8080))
                }
            },
        };
        let webhook_path = match server.webhook_path {
            None => DEFAULT_WEBHOOK_PATH.to_owned(),
            Some(path) => match webhook_path_problem(&path) {
                None => path,
                Some(problem) => {
                    self.invalid("server.webhook_path", Some(format!("{path:?}")), problem);
                    DEFAULT_WEBHOOK_PATH.to_owned()
                }
            },
        };
        let public_url = match server.public_url {
            Some(text) if !text.trim().is_empty() => self.url("server.public_url", Some(text), ""),
            _ => None,
        };
        let data_dir = match server.data_dir {
            Some(dir) if dir.as_os_str().is_empty() => {
                self.invalid("server.data_dir", Some("\"\"".into()), "must not be empty");
                PathBuf::from("./pitcrew-data")
            }
            Some(dir) => dir,
            None => PathBuf::from("./pitcrew-data"),
        };
        let concurrency = self.at_least_one("server.concurrency", server.concurrency, 4);
        if concurrency > 64 {
            self.invalid(
                "server.concurrency",
                Some(concurrency.to_string()),
                "must be at most 64",
            );
        }
        let job_attempts = self.at_least_one("server.job_attempts", server.job_attempts, 3);
        let max_body_bytes = self.byte_size(
            "server.max_body",
            server.max_body,
            25 * bytesize::MEBIBYTE,
            64 * 1024,
            bytesize::GIBIBYTE,
        );
        let shutdown_grace = self.duration(
            "server.shutdown_grace",
            server.shutdown_grace,
            Duration::from_secs(60),
            true,
        );
        let pool_size = server.pool_size.unwrap_or(2);
        let pool_max_idle = self.duration(
            "server.pool_max_idle",
            server.pool_max_idle,
            Duration::from_secs(6 * 3600),
            true,
        );
        let mirror_max_idle = self.duration(
            "server.mirror_max_idle",
            server.mirror_max_idle,
            Duration::from_secs(14 * 86_400),
            true,
        );
        let header_timeout = self.duration(
            "server.header_timeout",
            server.header_timeout,
            Duration::from_secs(10),
            false,
        );
        let body_timeout = self.duration(
            "server.body_timeout",
            server.body_timeout,
            Duration::from_secs(30),
            false,
        );
        let idle_timeout = self.duration(
            "server.idle_timeout",
            server.idle_timeout,
            Duration::from_secs(60),
            false,
        );
        let max_connections = server
            .max_connections
            .map(|n| self.at_least_one("server.max_connections", Some(n), 1));
        let unverified_bytes = self.byte_size(
            "server.unverified_bytes",
            server.unverified_bytes.clone(),
            64 * bytesize::MEBIBYTE,
            64 * 1024,
            16 * bytesize::GIBIBYTE,
        );
        if server.unverified_bytes.is_some() && unverified_bytes < max_body_bytes {
            self.invalid(
                "server.unverified_bytes",
                Some(bytesize::format_byte_size(unverified_bytes)),
                format!(
                    "must be at least server.max_body ({}), or no delivery of the largest size could be received",
                    bytesize::format_byte_size(max_body_bytes)
                ),
            );
        }
        let retain = self.duration(
            "server.retain",
            server.retain.clone(),
            Duration::from_secs(30 * 86_400),
            false,
        );
        if server.retain.is_some() && retain < MIN_RETAIN {
            self.invalid(
                "server.retain",
                Some(format!("{:?}", server.retain.as_ref().map_or("", |r| r.0.as_str()))),
                "must be at least 3 days: GitHub redelivers deliveries up to 3 days old, and a delivery \
                 forgotten sooner would run again",
            );
        }
        let retain_payloads = self.duration(
            "server.retain_payloads",
            server.retain_payloads.clone(),
            Duration::from_secs(7 * 86_400).min(retain),
            true,
        );
        #[derive(Clone, Copy)]
        enum Kind {
            Sqlite,
            Postgres,
        }
        let kind = self.choice(
            "server.store",
            server.store.as_deref(),
            &[("sqlite", Kind::Sqlite), ("postgres", Kind::Postgres)],
            Kind::Sqlite,
        );
        let database_url = server.database_url.map(|url| url.0);
        if let Some(url) = &database_url {
            crate::redact::register(url);
        }
        let lease_ttl = self.duration(
            "server.lease_ttl",
            server.lease_ttl.clone(),
            Duration::from_secs(60),
            false,
        );
        if lease_ttl < MIN_LEASE_TTL {
            self.invalid(
                "server.lease_ttl",
                Some(format!(
                    "{:?}",
                    server.lease_ttl.as_ref().map_or("", |ttl| ttl.0.as_str())
                )),
                "must be at least 2s: a job's lease is renewed several times within it",
            );
        }
        let store = match (kind, database_url) {
            (Kind::Sqlite, None) => StoreConfig::Sqlite,
            (Kind::Sqlite, Some(_)) => {
                self.invalid(
                    "server.database_url",
                    None,
                    "is set, but server.store is \"sqlite\" (the default): set server.store = \"postgres\" to use it",
                );
                StoreConfig::Sqlite
            }
            (Kind::Postgres, Some(url)) if !secrecy::ExposeSecret::expose_secret(&url).trim().is_empty() => {
                StoreConfig::Postgres { url }
            }
            (Kind::Postgres, _) => {
                self.invalid(
                    "server.database_url",
                    None,
                    "must be set when server.store is \"postgres\" (e.g. in PITCREW_SERVER_DATABASE_URL: \
                     postgres://user:password@host:5432/pitcrew)",
                );
                StoreConfig::Sqlite
            }
        };
        if retain_payloads > retain {
            self.invalid(
                "server.retain_payloads",
                Some(format!(
                    "{:?}",
                    server.retain_payloads.as_ref().map_or("", |r| r.0.as_str())
                )),
                "must not be longer than server.retain (a payload cannot outlive its delivery)",
            );
        }
        ServerConfig {
            listen,
            webhook_path,
            public_url,
            data_dir,
            concurrency,
            job_attempts,
            max_body_bytes,
            shutdown_grace,
            pool_size,
            pool_max_idle,
            mirror_max_idle,
            header_timeout,
            body_timeout,
            idle_timeout,
            max_connections,
            unverified_bytes,
            retain,
            retain_payloads,
            store,
            lease_ttl: lease_ttl.max(MIN_LEASE_TTL),
        }
    }

    /// `[sandbox]`.
    fn sandbox(&mut self, sandbox: RawSandbox) -> SandboxConfig {
        let backend = self.choice(
            "sandbox.backend",
            sandbox.backend.as_deref(),
            &[("docker", SandboxBackend::Docker), ("local", SandboxBackend::Local)],
            SandboxBackend::Docker,
        );
        let image = self.non_empty("sandbox.image", sandbox.image, "debian:bookworm-slim");
        if image.chars().any(char::is_whitespace) {
            self.invalid(
                "sandbox.image",
                Some(format!("{image:?}")),
                "must not contain whitespace",
            );
        }
        let network = self.choice(
            "sandbox.network",
            sandbox.network.as_deref(),
            &[("none", SandboxNetwork::None), ("bridge", SandboxNetwork::Bridge)],
            SandboxNetwork::None,
        );
        let local_user = self.choice(
            "sandbox.local_user",
            sandbox.local_user.as_deref(),
            &[("auto", LocalUser::Auto), ("self", LocalUser::Current)],
            LocalUser::Auto,
        );
        let memory_bytes = self.byte_size(
            "sandbox.memory",
            sandbox.memory,
            4 * bytesize::GIBIBYTE,
            16 * bytesize::MEBIBYTE,
            bytesize::TEBIBYTE,
        );
        let disk_bytes = self.byte_size(
            "sandbox.disk",
            sandbox.disk,
            20 * bytesize::GIBIBYTE,
            16 * bytesize::MEBIBYTE,
            64 * bytesize::TEBIBYTE,
        );
        let cpus = match sandbox.cpus {
            None => 2.0,
            Some(cpus) => {
                let problem = if !cpus.is_finite() {
                    Some("must be a finite number")
                } else if cpus <= 0.0 {
                    Some("must be greater than zero")
                } else if cpus < 0.01 {
                    Some("must be at least 0.01, the smallest CPU quota Docker accepts")
                } else if cpus > 1024.0 {
                    Some("must be at most 1024")
                } else {
                    None
                };
                match problem {
                    None => cpus,
                    Some(message) => {
                        self.invalid("sandbox.cpus", Some(cpus.to_string()), message);
                        2.0
                    }
                }
            }
        };
        let pids_limit = self.at_least("sandbox.pids_limit", sandbox.pids_limit, 16, 512);
        let setup = match sandbox.setup {
            Some(script) if script.trim().is_empty() => {
                self.invalid(
                    "sandbox.setup",
                    Some(format!("{script:?}")),
                    "must not be empty; leave it out for no setup script",
                );
                None
            }
            other => other,
        };
        let setup_network = sandbox.setup_network.unwrap_or(false);
        let docker_host = match sandbox.docker_host {
            Some(host)
                if !["unix://", "tcp://", "http://", "https://"]
                    .iter()
                    .any(|s| host.starts_with(s)) =>
            {
                self.invalid(
                    "sandbox.docker_host",
                    Some(format!("{host:?}")),
                    "must start with unix://, tcp://, http:// or https://",
                );
                None
            }
            other => other,
        };
        // A setup script that was rejected has its own error; this one would be noise.
        let setup_rejected = self.rejected.contains("sandbox.setup")
            || self
                .errors
                .iter()
                .any(|e| matches!(e, ConfigError::Invalid { key, .. } if key == "sandbox.setup"));
        if setup_network && setup.is_none() && !setup_rejected {
            self.errors.push(ConfigError::SetupNetworkWithoutSetup {
                origin: self.origin("sandbox.setup_network"),
            });
        }
        SandboxConfig {
            backend,
            image,
            network,
            memory_bytes,
            disk_bytes,
            cpus,
            pids_limit,
            setup,
            setup_network,
            local_user,
            docker_host,
        }
    }

    /// `[agent]`.
    fn ci_loop(&mut self, raw: raw::RawCiLoop) -> CiLoopConfig {
        let max_rounds = match raw.max_rounds {
            Some(n) if !(1..=MAX_CI_ROUNDS).contains(&n) => {
                self.invalid(
                    "ci_loop.max_rounds",
                    Some(n.to_string()),
                    format!("must be from 1 to {MAX_CI_ROUNDS}"),
                );
                3
            }
            Some(n) => n,
            None => 3,
        };
        CiLoopConfig {
            enabled: raw.enabled.unwrap_or(true),
            max_rounds,
            wait_timeout: self.duration(
                "ci_loop.wait_timeout",
                raw.wait_timeout,
                Duration::from_secs(30 * 60),
                false,
            ),
            start_timeout: self.duration(
                "ci_loop.start_timeout",
                raw.start_timeout,
                Duration::from_secs(5 * 60),
                false,
            ),
            poll_interval: self.duration(
                "ci_loop.poll_interval",
                raw.poll_interval,
                Duration::from_secs(3 * 60),
                false,
            ),
        }
    }

    fn agent(&mut self, agent: RawAgent) -> AgentConfig {
        let trigger = self.non_empty("agent.trigger", agent.trigger, "@agent");
        let trigger_ok = trigger
            .strip_prefix('@')
            .is_some_and(|rest| !rest.is_empty() && !rest.chars().any(char::is_whitespace) && !rest.contains('@'));
        if !trigger_ok && !trigger.trim().is_empty() {
            self.invalid(
                "agent.trigger",
                Some(format!("{trigger:?}")),
                "must be `@` followed by a name without spaces, e.g. \"@agent\"",
            );
        }
        let max_steps = self.at_least_one("agent.max_steps", agent.max_steps, 80);
        let max_cost_usd = agent
            .max_cost_usd
            .filter(|cost| self.amount("agent.max_cost_usd", *cost, true));
        let max_wall_time = self.duration(
            "agent.max_wall_time",
            agent.max_wall_time,
            Duration::from_secs(30 * 60),
            false,
        );
        let max_new_file_bytes = self.byte_size(
            "agent.max_new_file",
            agent.max_new_file,
            bytesize::MEBIBYTE,
            1,
            bytesize::GIBIBYTE,
        );
        let index_cache_bytes = self.byte_size(
            "agent.index_cache",
            agent.index_cache,
            256 * bytesize::MEBIBYTE,
            bytesize::MEBIBYTE,
            64 * bytesize::GIBIBYTE,
        );
        let index_memory_bytes = self.byte_size(
            "agent.index_memory",
            agent.index_memory,
            bytesize::GIBIBYTE,
            0,
            256 * bytesize::GIBIBYTE,
        );
        AgentConfig {
            trigger,
            max_steps,
            max_cost_usd,
            max_wall_time,
            max_new_file_bytes,
            code_index: agent.code_index.unwrap_or(true),
            index_cache_bytes,
            index_memory_bytes,
        }
    }

    /// `[chores]`.
    fn chores(&mut self, chores: RawChores) -> ChoresConfig {
        let defaults = deps::Registries::default();
        let cargo_index = self.url("chores.cargo_index", chores.cargo_index, defaults.cargo_index.as_str());
        let npm_registry = self.url("chores.npm_registry", chores.npm_registry, defaults.npm.as_str());
        let pypi = self.url("chores.pypi", chores.pypi, defaults.pypi.as_str());
        // The lockfile refresh hands the registry's address to the sandbox, where the repository's
        // code runs: a password in it would be the repository's to read.
        let without_credentials = |v: &mut Self, key: &str, url: Option<Url>| -> Option<Url> {
            let url = url?;
            if url.username().is_empty() && url.password().is_none() {
                return Some(url);
            }
            let mut shown = url;
            let _ = shown.set_username("");
            let _ = shown.set_password(None);
            v.invalid(
                key,
                Some(format!("\"{shown}\" with credentials")),
                "a registry address must not hold credentials: the lockfile refresh hands it to the sandbox, where \
                 the repository's code runs; give them to the tool's own configuration in the image instead",
            );
            None
        };
        let cargo_index = without_credentials(self, "chores.cargo_index", cargo_index);
        let npm_registry = without_credentials(self, "chores.npm_registry", npm_registry);
        let pypi = without_credentials(self, "chores.pypi", pypi);
        // Registry bases are joined with relative paths: they must end in `/`.
        let base = |url: Url| {
            if url.path().ends_with('/') {
                url
            } else {
                let mut url = url;
                let path = format!("{}/", url.path());
                url.set_path(&path);
                url
            }
        };
        let registries = deps::Registries {
            cargo_index: base(cargo_index.unwrap_or(defaults.cargo_index.clone())),
            npm: base(npm_registry.unwrap_or(defaults.npm.clone())),
            pypi: base(pypi.unwrap_or(defaults.pypi.clone())),
        };
        ChoresConfig {
            registries,
            lock_network: chores.lock_network.unwrap_or(true),
            schedules: chores.schedules.unwrap_or(true),
        }
    }

    /// `[prices."model"]`: a price override per model name.
    fn prices(&mut self, prices: BTreeMap<String, RawPrice>) -> BTreeMap<String, PriceOverride> {
        let mut price_overrides = BTreeMap::new();
        for (model_name, price) in prices {
            let section = format!("prices.{model_name:?}");
            if model_name.trim().is_empty() {
                self.invalid(&section, None, "the model name must not be empty");
            }
            let field = |v: &mut Self, field: &'static str, value: Option<f64>, required: bool| {
                let key = format!("{section}.{field}");
                match value {
                    Some(x) => v.amount(&key, x, false).then_some(x),
                    None => {
                        if required && !v.rejected.contains(&key) {
                            v.errors.push(ConfigError::MissingPrice {
                                origin: v.origin(&section),
                                model: model_name.clone(),
                                field,
                            });
                        }
                        None
                    }
                }
            };
            let input = field(self, "input", price.input, true);
            let output = field(self, "output", price.output, true);
            let cache_read = field(self, "cache_read", price.cache_read, false);
            let cache_write = field(self, "cache_write", price.cache_write, false);
            if let (Some(input), Some(output)) = (input, output) {
                price_overrides.insert(
                    model_name,
                    PriceOverride {
                        input,
                        output,
                        cache_read,
                        cache_write,
                    },
                );
            }
        }

        price_overrides
    }

    /// `github.private_key`: the key's contents, `\n` escapes read as line breaks (secrets stores
    /// and PaaS settings hold one line). Checked to be an RSA private key here, so a bad value is
    /// reported at start-up by where it was set, never by what it holds.
    fn inline_key(&mut self, pem: SecretString) -> Option<AppKey> {
        let text = secrecy::ExposeSecret::expose_secret(&pem).trim().replace("\\n", "\n");
        match crate::github::AppCredentials::from_pem(1, text.as_bytes()) {
            Ok(_) => Some(AppKey::Pem {
                pem: SecretString::from(text),
                origin: self.origin("github.private_key").to_string(),
            }),
            Err(crate::github::AppKeyError::Invalid { reason, .. }) => {
                self.invalid(
                    "github.private_key",
                    None,
                    format!("not a usable private key: {reason} (give the PEM text, `\\n` allowed for line breaks)"),
                );
                None
            }
            Err(error) => {
                self.invalid("github.private_key", None, error.to_string());
                None
            }
        }
    }

    fn readable_file(&mut self, key: &str, path: &Path) -> bool {
        let shown = Some(format!("{:?}", path.display().to_string()));
        match std::fs::metadata(path) {
            Ok(meta) if !meta.is_file() => {
                self.invalid(key, shown, "not a regular file");
                false
            }
            Ok(_) => match std::fs::File::open(path) {
                Ok(_) => true,
                Err(e) => {
                    self.invalid(key, shown, format!("cannot read it: {e}"));
                    false
                }
            },
            Err(e) => {
                self.invalid(key, shown, format!("cannot read it: {e}"));
                false
            }
        }
    }

    fn pair_error(&mut self, set: &'static str, unset: &'static str) {
        // An invalid partner was already reported; saying it is "not set" would mislead.
        if self
            .errors
            .iter()
            .any(|e| matches!(e, ConfigError::Invalid { key, .. } if key == unset))
            || self.rejected.contains(unset)
        {
            return;
        }
        self.errors.push(ConfigError::IncompleteGithubApp {
            set,
            unset,
            origin: self.origin(set),
        });
    }
}

const DEFAULT_BOT_NAME: &str = "pitcrew[bot]";

/// The shortest `[server] retain`: GitHub lets a delivery be redelivered for 3 days, and the store
/// must still know its id to recognise the redelivery.
const MIN_RETAIN: Duration = Duration::from_secs(3 * 86_400);
/// The shortest `[server] lease_ttl`: the lease is renewed every sixth of it.
const MIN_LEASE_TTL: Duration = Duration::from_secs(2);
const DEFAULT_BOT_EMAIL: &str = "pitcrew[bot]@users.noreply.github.com";

/// Why `text` cannot go into a commit's `Name <email>` header, if it cannot: git would split the
/// header at a newline or an angle bracket.
fn identity_problem(text: &str) -> Option<&'static str> {
    if text.contains(['\n', '\r']) {
        Some("must be a single line")
    } else if text.contains(['<', '>']) {
        Some("must not contain `<` or `>`")
    } else {
        None
    }
}

/// Why `email` is not of the form `local@domain`, if it is not. Only the shape is checked: the
/// address is matched against GitHub accounts, not delivered to.
fn email_problem(email: &str) -> Option<&'static str> {
    if email.chars().any(char::is_whitespace) {
        Some("must not contain spaces; expected an address like \"pitcrew[bot]@users.noreply.github.com\"")
    } else if email.matches('@').count() != 1 {
        Some("must contain exactly one `@`; expected an address like \"pitcrew[bot]@users.noreply.github.com\"")
    } else if email.starts_with('@') || email.ends_with('@') {
        Some(
            "must have text on both sides of the `@`; expected an address like \"pitcrew[bot]@users.noreply.github.com\"",
        )
    } else {
        None
    }
}

#[cfg(test)]
mod tests;
