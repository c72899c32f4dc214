//! Configuration errors, whose `Display` is the text the operator reads, and where a value came from.

use std::fmt;
use std::path::PathBuf;

/// Where an effective setting came from. Errors and the rendered configuration name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    Default,
    File { path: PathBuf, line: usize },
    Env { var: String },
    Flag { key: String },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("built-in default"),
            Origin::File { path, line } => write!(f, "{}:{line}", path.display()),
            Origin::Env { var } => write!(f, "environment variable {var}"),
            Origin::Flag { key } => write!(f, "--set {key}"),
        }
    }
}

/// One problem with the configuration. Loading collects as many as it can find.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("cannot read config file {}: {source}", path.display())]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{}:{line}:{column}: invalid TOML: {message}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },

    #[error("{origin}: unknown section `[{section}]`{hint}; valid sections: {valid}")]
    UnknownSection {
        origin: Origin,
        section: String,
        hint: Hint,
        valid: String,
    },

    #[error("{origin}: `{key}` is outside any section{hint}")]
    TopLevelKey { origin: Origin, key: String, hint: Hint },

    #[error("{origin}: unknown setting `{key}`{hint}; valid keys in [{section}]: {valid}")]
    UnknownKey {
        origin: Origin,
        section: String,
        key: String,
        hint: Hint,
        valid: String,
    },

    #[error("{origin}: `{key}` must be {expected}, found {found}")]
    WrongType {
        origin: Origin,
        key: String,
        expected: &'static str,
        found: &'static str,
    },

    #[error("unknown environment variable {var}{hint}")]
    UnknownEnvVar { var: String, hint: Hint },

    #[error("malformed --set {arg:?}: expected SECTION.KEY=VALUE, e.g. --set model.name=gpt-4o")]
    MalformedOverride { arg: String },

    #[error("--set {key}: unknown setting{hint}")]
    UnknownOverride { key: String, hint: Hint },

    #[error("{origin}: `prices` can only be set in the config file, as [prices.\"MODEL\"] tables")]
    PricesFileOnly { origin: Origin },

    #[error(
        "missing required setting `{section}.{name}`: set `{name}` under `[{section}]` in {file}, or the environment variable {env}"
    )]
    Missing {
        section: &'static str,
        name: &'static str,
        file: String,
        env: String,
    },

    #[error("{origin}: [prices.{model:?}] is missing `{field}` (USD per million tokens)")]
    MissingPrice {
        origin: Origin,
        model: String,
        field: &'static str,
    },

    #[error("{origin}: invalid `{key}`{shown}: {message}", shown = ShownValue(value.as_deref()))]
    Invalid {
        origin: Origin,
        key: String,
        /// The offending value as written, or `None` for secrets.
        value: Option<String>,
        message: String,
    },

    #[error(
        "missing API key: the environment variable {var} is not set, and it is required because `model.base_url` ({base_url}) is not a local server; set {var}, or read the key from another variable with `model.api_key_env` (environment variable PITCREW_MODEL_API_KEY_ENV)"
    )]
    MissingApiKey { var: String, base_url: String },

    #[error(
        "`github.app_id` and the App's private key (`github.private_key_path` or `github.private_key`) go together: `{set}` is set ({origin}) but `{unset}` is not"
    )]
    IncompleteGithubApp {
        set: &'static str,
        unset: &'static str,
        origin: Origin,
    },

    #[error(
        "{origin}: `sandbox.setup_network` is set but there is no `sandbox.setup` script; it only opens the network while that script runs"
    )]
    SetupNetworkWithoutSetup { origin: Origin },
}

/// A suffix such as "; did you mean `model.name`?"; empty when there is nothing useful to say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hint(pub Option<String>);

impl Hint {
    pub(crate) fn did_you_mean(suggestion: impl fmt::Display) -> Self {
        Self(Some(format!("did you mean {suggestion}?")))
    }

    /// "Did you mean" the candidate closest to `typed`, spelled by `show`, if one is close.
    pub(crate) fn closest<'a>(
        typed: &str,
        candidates: impl IntoIterator<Item = &'a str>,
        show: impl FnOnce(&str) -> String,
    ) -> Self {
        match super::schema::did_you_mean(typed, candidates) {
            Some(c) => Self::did_you_mean(show(c)),
            None => Self::default(),
        }
    }
}

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(s) => write!(f, "; {s}"),
            None => Ok(()),
        }
    }
}

struct ShownValue<'a>(Option<&'a str>);

impl fmt::Display for ShownValue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(v) => write!(f, " = {v}"),
            None => Ok(()),
        }
    }
}

/// Every problem found while loading; never empty.
#[derive(Debug)]
pub struct ConfigErrors(Vec<ConfigError>);

impl ConfigErrors {
    pub(crate) fn new(errors: Vec<ConfigError>) -> Self {
        Self(errors)
    }

    pub fn iter(&self) -> std::slice::Iter<'_, ConfigError> {
        self.0.iter()
    }

    pub fn into_vec(self) -> Vec<ConfigError> {
        self.0
    }
}

impl<'a> IntoIterator for &'a ConfigErrors {
    type Item = &'a ConfigError;
    type IntoIter = std::slice::Iter<'a, ConfigError>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}
