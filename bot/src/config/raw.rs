//! The raw layer: what one source (the file, the environment, `--set`) said, as serde structs
//! with every field optional, plus where each key came from and what was rejected on the way in.
//!
//! Only types are checked here; meaning (URLs, durations, ranges, required keys) is checked once,
//! on the merged layers, in `config.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use secrecy::SecretString;
use serde::Deserialize;
use serde::de::{Deserializer, Visitor};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::error::{ConfigError, Hint, Origin};
use super::schema::{self, CLI_ENV_VARS, KEYS, Key, Kind, PRICE_KEYS, PRICES, SECTIONS};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConfig {
    #[serde(default)]
    pub(crate) model: RawModel,
    #[serde(default)]
    pub(crate) github: RawGithub,
    #[serde(default)]
    pub(crate) server: RawServer,
    #[serde(default)]
    pub(crate) sandbox: RawSandbox,
    #[serde(default)]
    pub(crate) agent: RawAgent,
    #[serde(default)]
    pub(crate) chores: RawChores,
    #[serde(default)]
    pub(crate) review: RawReview,
    #[serde(default)]
    pub(crate) ci_loop: RawCiLoop,
    #[serde(default)]
    pub(crate) prices: BTreeMap<String, RawPrice>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawChores {
    pub(crate) cargo_index: Option<String>,
    pub(crate) npm_registry: Option<String>,
    pub(crate) pypi: Option<String>,
    pub(crate) lock_network: Option<bool>,
    pub(crate) schedules: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawReview {
    pub(crate) auto: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCiLoop {
    pub(crate) enabled: Option<bool>,
    pub(crate) max_rounds: Option<u32>,
    pub(crate) wait_timeout: Option<RawDuration>,
    pub(crate) start_timeout: Option<RawDuration>,
    pub(crate) poll_interval: Option<RawDuration>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawModel {
    pub(crate) provider: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) base_url: Option<String>,
    pub(crate) api_key_env: Option<String>,
    pub(crate) context_window: Option<u64>,
    pub(crate) max_output_tokens: Option<u32>,
    pub(crate) request_timeout: Option<RawDuration>,
    pub(crate) stream_idle_timeout: Option<RawDuration>,
    pub(crate) max_retries: Option<u32>,
    pub(crate) max_retry_delay: Option<RawDuration>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGithub {
    pub(crate) api_url: Option<String>,
    pub(crate) app_id: Option<u64>,
    pub(crate) private_key_path: Option<PathBuf>,
    pub(crate) private_key: Option<RawSecret>,
    pub(crate) webhook_secret: Option<RawSecret>,
    pub(crate) bot_name: Option<String>,
    pub(crate) bot_email: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServer {
    pub(crate) listen: Option<String>,
    pub(crate) webhook_path: Option<String>,
    pub(crate) public_url: Option<String>,
    pub(crate) data_dir: Option<PathBuf>,
    pub(crate) concurrency: Option<u32>,
    pub(crate) job_attempts: Option<u32>,
    pub(crate) max_body: Option<RawByteSize>,
    pub(crate) shutdown_grace: Option<RawDuration>,
    pub(crate) pool_size: Option<u32>,
    pub(crate) pool_max_idle: Option<RawDuration>,
    pub(crate) mirror_max_idle: Option<RawDuration>,
    pub(crate) header_timeout: Option<RawDuration>,
    pub(crate) body_timeout: Option<RawDuration>,
    pub(crate) idle_timeout: Option<RawDuration>,
    pub(crate) max_connections: Option<u32>,
    pub(crate) unverified_bytes: Option<RawByteSize>,
    pub(crate) retain: Option<RawDuration>,
    pub(crate) retain_payloads: Option<RawDuration>,
    pub(crate) store: Option<String>,
    pub(crate) database_url: Option<RawSecret>,
    pub(crate) lease_ttl: Option<RawDuration>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSandbox {
    pub(crate) backend: Option<String>,
    pub(crate) image: Option<String>,
    pub(crate) network: Option<String>,
    pub(crate) memory: Option<RawByteSize>,
    pub(crate) disk: Option<RawByteSize>,
    pub(crate) cpus: Option<f64>,
    pub(crate) pids_limit: Option<u32>,
    pub(crate) setup: Option<String>,
    pub(crate) setup_network: Option<bool>,
    pub(crate) local_user: Option<String>,
    pub(crate) docker_host: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAgent {
    pub(crate) trigger: Option<String>,
    pub(crate) max_steps: Option<u32>,
    pub(crate) max_cost_usd: Option<f64>,
    pub(crate) max_wall_time: Option<RawDuration>,
    pub(crate) max_new_file: Option<RawByteSize>,
    pub(crate) code_index: Option<bool>,
    pub(crate) index_cache: Option<RawByteSize>,
    pub(crate) index_memory: Option<RawByteSize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPrice {
    pub(crate) input: Option<f64>,
    pub(crate) output: Option<f64>,
    pub(crate) cache_read: Option<f64>,
    pub(crate) cache_write: Option<f64>,
}

/// A duration as written: a string ("10m") or an integer number of seconds, parsed during
/// validation so the error can name the key and its origin.
#[derive(Clone, Debug)]
pub(crate) struct RawDuration(pub(crate) String);

impl<'de> Deserialize<'de> for RawDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StringOrInteger("a duration string or a number of seconds"))
            .map(RawDuration)
    }
}

/// A byte size as written: a string ("4GiB") or an integer number of bytes, parsed during
/// validation like [`RawDuration`].
#[derive(Clone, Debug)]
pub(crate) struct RawByteSize(pub(crate) String);

impl<'de> Deserialize<'de> for RawByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StringOrInteger("a size string or a number of bytes"))
            .map(RawByteSize)
    }
}

/// Reads a string, or an integer as its decimal text; holds what serde says was expected.
struct StringOrInteger(&'static str);

impl Visitor<'_> for StringOrInteger {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
}

/// A secret as read; its `Debug` is redacted by `secrecy`.
#[derive(Clone, Debug)]
pub(crate) struct RawSecret(pub(crate) SecretString);

impl<'de> Deserialize<'de> for RawSecret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|s| RawSecret(SecretString::from(s)))
    }
}

/// Later `Some` wins, field by field.
macro_rules! overlay_fields {
    ($dst:expr, $src:expr; $($field:ident),+ $(,)?) => {
        $( if $src.$field.is_some() { $dst.$field = $src.$field; } )+
    };
}

impl RawConfig {
    pub(crate) fn overlay(&mut self, top: RawConfig) {
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
        } = top;
        overlay_fields!(self.model, model; provider, name, base_url, api_key_env, context_window,
            max_output_tokens, request_timeout, stream_idle_timeout, max_retries, max_retry_delay);
        overlay_fields!(self.github, github; api_url, app_id, private_key_path, private_key, webhook_secret, bot_name,
            bot_email);
        overlay_fields!(self.server, server; listen, webhook_path, public_url, data_dir, concurrency, job_attempts, max_body,
            shutdown_grace, pool_size, pool_max_idle, mirror_max_idle, header_timeout, body_timeout, idle_timeout,
            max_connections, unverified_bytes, retain, retain_payloads, store, database_url, lease_ttl);
        overlay_fields!(self.sandbox, sandbox; backend, image, network, memory, disk, cpus, pids_limit,
            setup, setup_network, local_user, docker_host);
        overlay_fields!(self.agent, agent; trigger, max_steps, max_cost_usd, max_wall_time, max_new_file,
            code_index, index_cache, index_memory);
        overlay_fields!(self.chores, chores; cargo_index, npm_registry, pypi, lock_network, schedules);
        overlay_fields!(self.review, review; auto);
        overlay_fields!(self.ci_loop, ci_loop; enabled, max_rounds, wait_timeout, start_timeout, poll_interval);
        self.prices.extend(prices);
    }
}

/// One source's contribution.
#[derive(Debug, Default)]
pub(crate) struct Layer {
    pub(crate) raw: RawConfig,
    /// Dotted key (`model.name`, `prices."gpt-4o".input`) → where it was set.
    pub(crate) origins: BTreeMap<String, Origin>,
    pub(crate) errors: Vec<ConfigError>,
    /// Keys whose value was rejected, so validation does not also call them missing.
    pub(crate) rejected: BTreeSet<String>,
    /// `PITCREW_*` variables naming no key; judged after merging, because the variable named by
    /// `model.api_key_env` may itself start with `PITCREW_`.
    pub(crate) unknown_env: Vec<String>,
    /// The source could not be read or parsed at all.
    pub(crate) fatal: bool,
}

// ---------------------------------------------------------------------------------------------
// The file

pub(crate) fn file_layer(path: &Path) -> Layer {
    let mut layer = Layer::default();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(source) => {
            layer.errors.push(ConfigError::ReadFile {
                path: path.to_owned(),
                source,
            });
            layer.fatal = true;
            return layer;
        }
    };
    let root = match DeTable::parse(&text) {
        Ok(root) => root,
        Err(e) => {
            layer.errors.push(syntax_error(path, &text, &e));
            layer.fatal = true;
            return layer;
        }
    };
    let span = root.span();
    let mut table = root.into_inner();

    let mut walk = FileWalk {
        path,
        text: &text,
        layer: &mut layer,
        errors: Vec::new(),
    };
    walk.root(&mut table);
    let mut errors = walk.errors;
    // The table iterates in key order; report in file order.
    errors.sort_by_key(|(offset, _)| *offset);
    layer.errors.extend(errors.into_iter().map(|(_, e)| e));

    // The walk removed every entry it rejected, so this only fails on a bug in the schema.
    match RawConfig::deserialize(toml::de::Deserializer::from(Spanned::new(span, table))) {
        Ok(raw) => layer.raw = raw,
        Err(e) => {
            layer.errors.push(syntax_error(path, &text, &e));
            layer.fatal = true;
        }
    }
    layer
}

fn syntax_error(path: &Path, text: &str, e: &toml::de::Error) -> ConfigError {
    let (line, column) = line_column(text, e.span().map_or(0, |s| s.start));
    ConfigError::Syntax {
        path: path.to_owned(),
        line,
        column,
        message: e.message().trim().replace('\n', " "),
    }
}

/// 1-based line and column (in chars) of a byte offset.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

type Key2<'i> = Spanned<toml::de::DeString<'i>>;

struct FileWalk<'a> {
    path: &'a Path,
    text: &'a str,
    layer: &'a mut Layer,
    /// With the byte offset they point at, to sort into file order.
    errors: Vec<(usize, ConfigError)>,
}

impl FileWalk<'_> {
    fn origin(&self, span: &Range<usize>) -> Origin {
        Origin::File {
            path: self.path.to_owned(),
            line: line_column(self.text, span.start).0,
        }
    }

    fn error(&mut self, span: &Range<usize>, e: ConfigError) {
        self.errors.push((span.start, e));
    }

    fn root(&mut self, table: &mut DeTable<'_>) {
        let mut drop = Vec::new();
        for (k, v) in table.iter_mut() {
            if !self.section(k, v) {
                drop.push(k.get_ref().to_string());
            }
        }
        for k in drop {
            table.remove(k.as_str());
        }
    }

    /// Returns whether to keep the entry.
    fn section(&mut self, k: &Key2<'_>, v: &mut Spanned<DeValue<'_>>) -> bool {
        let name: &str = k.get_ref();
        let span = k.span();
        let origin = self.origin(&span);
        if !SECTIONS.contains(&name) && name != PRICES {
            let error = if v.get_ref().is_table() {
                ConfigError::UnknownSection {
                    origin,
                    section: name.to_owned(),
                    hint: Hint::closest(name, SECTIONS.iter().copied().chain([PRICES]), |s| format!("`[{s}]`")),
                    valid: SECTIONS.join(", ") + ", " + PRICES,
                }
            } else {
                let hint = match KEYS.iter().find(|key| key.name == name) {
                    Some(key) => {
                        // The hint says where it goes; "missing" on top would be noise.
                        self.layer.rejected.insert(key.dotted());
                        Hint::did_you_mean(format!("`{}` under `[{}]`", key.name, key.section))
                    }
                    None => Hint(Some("settings go under a section header such as `[model]`".into())),
                };
                ConfigError::TopLevelKey {
                    origin,
                    key: name.to_owned(),
                    hint,
                }
            };
            self.error(&span, error);
            return false;
        }
        let found = v.get_ref().type_str();
        let DeValue::Table(table) = v.get_mut() else {
            let expected = if name == PRICES {
                "a table of [prices.\"MODEL\"] tables"
            } else {
                "a table (a `[section]` header)"
            };
            self.error(
                &span,
                ConfigError::WrongType {
                    origin,
                    key: name.to_owned(),
                    expected,
                    found,
                },
            );
            return false;
        };
        let mut drop = Vec::new();
        for (k, v) in table.iter_mut() {
            let keep = if name == PRICES {
                self.price_table(k, v)
            } else {
                self.key(name, k, v)
            };
            if !keep {
                drop.push(k.get_ref().to_string());
            }
        }
        for k in drop {
            table.remove(k.as_str());
        }
        true
    }

    fn key(&mut self, section: &str, k: &Key2<'_>, v: &Spanned<DeValue<'_>>) -> bool {
        let name: &str = k.get_ref();
        let span = k.span();
        let origin = self.origin(&span);
        let dotted = format!("{section}.{name}");
        let Some(spec) = schema::lookup(section, name) else {
            let valid: Vec<&str> = schema::keys_in(section).map(|k| k.name).collect();
            let close = schema::did_you_mean(name, valid.iter().copied());
            let mut hint = Hint::default();
            if let Some(close) = close {
                // Probably a typo of a required key: "missing" on top would be noise.
                self.layer.rejected.insert(format!("{section}.{close}"));
                hint = Hint::did_you_mean(format!("`{section}.{close}`"));
            } else if let Some(other) = KEYS.iter().find(|k| k.name == name) {
                self.layer.rejected.insert(other.dotted());
                hint = Hint::did_you_mean(format!("`{}` under `[{}]`", other.name, other.section));
            }
            self.error(
                &span,
                ConfigError::UnknownKey {
                    origin,
                    section: section.to_owned(),
                    key: dotted,
                    hint,
                    valid: valid.join(", "),
                },
            );
            return false;
        };
        match check_file_value(spec.kind, v.get_ref()) {
            Ok(()) => {
                self.layer.origins.insert(dotted, origin);
                true
            }
            Err(problem) => {
                let e = problem.into_error(origin, dotted.clone(), spec.kind);
                self.error(&v.span(), e);
                self.layer.rejected.insert(dotted);
                false
            }
        }
    }

    fn price_table(&mut self, k: &Key2<'_>, v: &mut Spanned<DeValue<'_>>) -> bool {
        let model: &str = k.get_ref();
        let span = k.span();
        let origin = self.origin(&span);
        let section = format!("{PRICES}.{model:?}");
        let found = v.get_ref().type_str();
        let DeValue::Table(fields) = v.get_mut() else {
            self.error(
                &span,
                ConfigError::WrongType {
                    origin,
                    key: section,
                    expected: "a table with `input` and `output` prices",
                    found,
                },
            );
            return false;
        };
        self.layer.origins.insert(section.clone(), origin);
        let mut drop = Vec::new();
        for (fk, fv) in fields.iter() {
            let field: &str = fk.get_ref();
            let span = fk.span();
            let origin = self.origin(&span);
            let dotted = format!("{section}.{field}");
            if !PRICE_KEYS.contains(&field) {
                let hint = Hint::closest(field, PRICE_KEYS.iter().copied(), |s| format!("`{s}`"));
                self.error(
                    &span,
                    ConfigError::UnknownKey {
                        origin,
                        section: section.clone(),
                        key: dotted,
                        hint,
                        valid: PRICE_KEYS.join(", "),
                    },
                );
                drop.push(field.to_owned());
                continue;
            }
            match check_file_value(Kind::F64, fv.get_ref()) {
                Ok(()) => {
                    self.layer.origins.insert(dotted, origin);
                }
                Err(problem) => {
                    let e = problem.into_error(origin, dotted.clone(), Kind::F64);
                    self.error(&fv.span(), e);
                    self.layer.rejected.insert(dotted);
                    drop.push(field.to_owned());
                }
            }
        }
        for k in drop {
            fields.remove(k.as_str());
        }
        true
    }
}

enum ValueProblem {
    WrongType(&'static str),
    Invalid { value: String, message: String },
}

impl ValueProblem {
    fn into_error(self, origin: Origin, key: String, kind: Kind) -> ConfigError {
        match self {
            ValueProblem::WrongType(found) => ConfigError::WrongType {
                origin,
                key,
                expected: kind.expected(),
                found,
            },
            ValueProblem::Invalid { value, message } => ConfigError::Invalid {
                origin,
                key,
                value: Some(value),
                message,
            },
        }
    }
}

/// Checks that serde will accept the value for this kind, so one bad value rejects only itself.
fn check_file_value(kind: Kind, v: &DeValue<'_>) -> Result<(), ValueProblem> {
    let ok = match kind {
        Kind::Str | Kind::Secret | Kind::Url | Kind::Path | Kind::SocketAddr | Kind::Choice => v.is_str(),
        Kind::F64 => v.is_integer() || v.is_float(),
        Kind::Bool => v.is_bool(),
        Kind::U32 | Kind::U64 | Kind::Duration | Kind::ByteSize => match v {
            DeValue::Integer(i) => {
                let max = if kind == Kind::U32 {
                    i128::from(u32::MAX)
                } else {
                    i128::from(i64::MAX)
                };
                let value = i.to_string();
                return match i128::from_str_radix(i.as_str(), i.radix()) {
                    Ok(n) if n < 0 => Err(ValueProblem::Invalid {
                        value,
                        message: "must not be negative".into(),
                    }),
                    Ok(n) if n > max => Err(ValueProblem::Invalid {
                        value,
                        message: format!("must be at most {max}"),
                    }),
                    Ok(_) => Ok(()),
                    Err(_) => Err(ValueProblem::Invalid {
                        value,
                        message: "not a valid integer".into(),
                    }),
                };
            }
            DeValue::String(_) => matches!(kind, Kind::Duration | Kind::ByteSize),
            _ => false,
        },
    };
    if ok {
        Ok(())
    } else {
        Err(ValueProblem::WrongType(v.type_str()))
    }
}

// ---------------------------------------------------------------------------------------------
// The environment and `--set`

pub(crate) fn env_layer(env: &BTreeMap<String, String>) -> Layer {
    let mut layer = Layer::default();
    // The aliases first: a `PITCREW_*` variable of the same key, applied after, wins.
    for alias in schema::ALIASES {
        let Some(value) = env.get(alias.var).filter(|value| !value.is_empty()) else {
            continue;
        };
        let Some(spec) = schema::lookup(alias.section, alias.name) else {
            continue;
        };
        let value = match alias.var {
            "GHE_HOST" => {
                let scheme = env
                    .get(schema::GHE_PROTOCOL)
                    .map(|p| p.trim().to_ascii_lowercase())
                    .filter(|p| !p.is_empty())
                    .unwrap_or_else(|| "https".to_owned());
                format!("{scheme}://{}/api/v3", value.trim().trim_end_matches('/'))
            }
            _ => value.clone(),
        };
        apply_string(
            &mut layer,
            spec,
            &value,
            Origin::Env {
                var: alias.var.to_owned(),
            },
        );
    }
    for (var, value) in env {
        let Some(rest) = var.strip_prefix("PITCREW_") else {
            continue;
        };
        if CLI_ENV_VARS.contains(&var.as_str()) {
            continue;
        }
        let (section, name) = split_env_name(rest);
        if section == PRICES {
            layer.errors.push(ConfigError::PricesFileOnly {
                origin: Origin::Env { var: var.clone() },
            });
            continue;
        }
        let Some(spec) = schema::lookup(&section, &name) else {
            layer.unknown_env.push(var.clone());
            continue;
        };
        // Unset and empty are the same, as `FOO=${FOO}` in compose files leaves empty strings.
        if value.is_empty() {
            continue;
        }
        apply_string(&mut layer, spec, value, Origin::Env { var: var.clone() });
    }
    layer
}

/// `CI_LOOP_MAX_ROUNDS` → (`ci_loop`, `max_rounds`): the longest section the name starts with
/// (section names hold underscores too), else everything up to the first underscore.
fn split_env_name(rest: &str) -> (String, String) {
    let lower = rest.to_ascii_lowercase();
    let known = SECTIONS
        .iter()
        .filter(|section| lower.len() > section.len() + 1 && lower.starts_with(&format!("{section}_")))
        .max_by_key(|section| section.len());
    match known {
        Some(section) => ((*section).to_owned(), lower[section.len() + 1..].to_owned()),
        None => {
            let (section, name) = lower.split_once('_').unwrap_or((&lower, ""));
            (section.to_owned(), name.to_owned())
        }
    }
}

/// The hint for a `PITCREW_*` variable that names no key, and the key it probably meant.
pub(crate) fn env_hint(var: &str) -> (Hint, Option<&'static Key>) {
    let rest = var.strip_prefix("PITCREW_").unwrap_or(var);
    let names: Vec<String> = KEYS
        .iter()
        .map(Key::env_var)
        .chain(CLI_ENV_VARS.iter().map(|s| (*s).to_owned()))
        .collect();
    if let Some(close) = schema::did_you_mean(rest, names.iter().filter_map(|n| n.strip_prefix("PITCREW_"))) {
        let full = format!("PITCREW_{close}");
        let key = KEYS.iter().find(|k| k.env_var() == full);
        return (Hint::did_you_mean(full), key);
    }
    // PITCREW_MAX_STEPS: a key without its section.
    let lower = rest.to_ascii_lowercase();
    if let Some(k) = KEYS.iter().find(|k| k.name == lower) {
        return (Hint::did_you_mean(k.env_var()), Some(k));
    }
    (env_fallback_hint(&lower), None)
}

fn env_fallback_hint(lower: &str) -> Hint {
    if lower.contains("api_key") || lower.contains("token") {
        return Hint(Some(
            "the API key is read from the variable named by `model.api_key_env` \
             (default OPENAI_API_KEY or ANTHROPIC_API_KEY by provider; change it with PITCREW_MODEL_API_KEY_ENV)"
                .into(),
        ));
    }
    let section = lower.split_once('_').map_or(lower, |(s, _)| s);
    if SECTIONS.contains(&section) {
        let valid: Vec<String> = schema::keys_in(section).map(Key::env_var).collect();
        return Hint(Some(format!("valid in [{section}]: {}", valid.join(", "))));
    }
    Hint(Some(
        "settings are PITCREW_<SECTION>_<KEY>, e.g. PITCREW_MODEL_NAME".into(),
    ))
}

pub(crate) fn flag_layer(overrides: &[String]) -> Layer {
    let mut layer = Layer::default();
    for arg in overrides {
        let Some((key, value)) = arg.split_once('=') else {
            layer.errors.push(ConfigError::MalformedOverride { arg: arg.clone() });
            continue;
        };
        let key = key.trim();
        let (section, name) = key.split_once('.').unwrap_or((key, ""));
        if section == PRICES {
            layer.errors.push(ConfigError::PricesFileOnly {
                origin: Origin::Flag { key: key.to_owned() },
            });
            continue;
        }
        let Some(spec) = schema::lookup(section, name) else {
            let dotted: Vec<String> = KEYS.iter().map(Key::dotted).collect();
            let close = schema::did_you_mean(key, dotted.iter().map(String::as_str))
                .and_then(|close| KEYS.iter().find(|k| k.dotted() == close))
                .or_else(|| KEYS.iter().find(|k| k.name == key || k.name == name));
            let hint = match close {
                Some(k) => {
                    // Probably a typo of a required key: "missing" on top would be noise.
                    layer.rejected.insert(k.dotted());
                    Hint::did_you_mean(k.dotted())
                }
                None if SECTIONS.contains(&section) => {
                    let valid: Vec<&str> = schema::keys_in(section).map(|k| k.name).collect();
                    Hint(Some(format!("valid keys in [{section}]: {}", valid.join(", "))))
                }
                None => Hint(Some(format!("valid sections: {}", SECTIONS.join(", ")))),
            };
            layer.errors.push(ConfigError::UnknownOverride {
                key: key.to_owned(),
                hint,
            });
            continue;
        };
        apply_string(&mut layer, spec, value, Origin::Flag { key: spec.dotted() });
    }
    layer
}

/// Types one string setting by its kind and lays it over `layer.raw`.
fn apply_string(layer: &mut Layer, spec: &Key, value: &str, origin: Origin) {
    let dotted = spec.dotted();
    let shown = (spec.kind != Kind::Secret).then(|| format!("{value:?}"));
    let typed = match typed_value(spec.kind, value) {
        Ok(typed) => typed,
        Err(message) => {
            layer.errors.push(ConfigError::Invalid {
                origin,
                key: dotted.clone(),
                value: shown,
                message: message.to_string(),
            });
            layer.rejected.insert(dotted);
            return;
        }
    };
    let mut section = toml::Table::new();
    section.insert(spec.name.to_owned(), typed);
    let mut root = toml::Table::new();
    root.insert(spec.section.to_owned(), toml::Value::Table(section));
    // Through serde like the file, so the raw structs stay the one definition of the raw layer.
    match toml::Value::Table(root).try_into::<RawConfig>() {
        Ok(one) => {
            layer.raw.overlay(one);
            layer.origins.insert(dotted, origin);
        }
        Err(e) => {
            layer.errors.push(ConfigError::Invalid {
                origin,
                key: dotted.clone(),
                value: shown,
                message: e.message().to_owned(),
            });
            layer.rejected.insert(dotted);
        }
    }
}

/// Why a string from the environment or a flag is not a value of its setting's kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ValueError {
    #[error("expected a number")]
    Number,
    #[error("expected true or false (also accepted: 1/0, yes/no, on/off)")]
    Boolean,
    #[error("must not be negative")]
    Negative,
    #[error("must be at most {0}")]
    TooLarge(i64),
    #[error("expected a whole number")]
    WholeNumber,
}

fn typed_value(kind: Kind, s: &str) -> Result<toml::Value, ValueError> {
    match kind {
        Kind::U32 => whole_number(s, i64::from(u32::MAX)).map(toml::Value::Integer),
        Kind::U64 => whole_number(s, i64::MAX).map(toml::Value::Integer),
        Kind::F64 => s
            .trim()
            .parse::<f64>()
            .map(toml::Value::Float)
            .map_err(|_| ValueError::Number),
        Kind::Bool => boolean(s).map(toml::Value::Boolean),
        Kind::Str
        | Kind::Secret
        | Kind::Url
        | Kind::Path
        | Kind::SocketAddr
        | Kind::Choice
        | Kind::Duration
        | Kind::ByteSize => Ok(toml::Value::String(s.to_owned())),
    }
}

/// The spellings of a boolean that shells and compose files commonly use.
fn boolean(s: &str) -> Result<bool, ValueError> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(ValueError::Boolean),
    }
}

fn whole_number(s: &str, max: i64) -> Result<i64, ValueError> {
    match s.trim().parse::<i128>() {
        Ok(n) if n < 0 => Err(ValueError::Negative),
        Ok(n) => i64::try_from(n)
            .ok()
            .filter(|n| *n <= max)
            .ok_or(ValueError::TooLarge(max)),
        Err(_) => Err(ValueError::WholeNumber),
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_chars_from_one() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        assert_eq!(line_column(text, text.find('=').unwrap()), (1, 3));
        assert_eq!(line_column(text, text.rfind('=').unwrap()), (2, 4));
        assert_eq!(line_column(text, 10_000), (3, 1));
    }

    #[test]
    fn every_schema_key_is_settable_through_a_string() {
        for spec in KEYS {
            let sample = match spec.kind {
                Kind::U32 | Kind::U64 => "7",
                Kind::F64 => "1.5",
                Kind::Duration => "5m",
                Kind::ByteSize => "4GiB",
                Kind::Bool => "yes",
                _ => "x",
            };
            let mut layer = Layer::default();
            apply_string(&mut layer, spec, sample, Origin::Default);
            assert!(layer.errors.is_empty(), "{}: {:?}", spec.dotted(), layer.errors);
            assert!(layer.origins.contains_key(&spec.dotted()));
        }
    }
}
