//! GitHub App authentication: the App's private key, the RS256 JWT it signs, and installation access
//! tokens fetched with that JWT and cached per installation until five minutes before they expire.
//!
//! Concurrent callers for one installation share a single token request (a per-installation async
//! mutex); different installations do not wait for each other.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::Method;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use url::Url;

use super::api::{decode_wrapped_base64, limits};
use super::client::{Auth, ClientOptions, Endpoint, GithubClient, Http};
use super::error::GithubError;
use super::ids::{InstallationId, RepoName};
use super::paging;
use super::time::parse_rfc3339;

/// A cached token is refreshed once it has less than this left: a job started with it must be able
/// to finish its push and its last comments.
pub const TOKEN_REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// Why the App's private key could not be loaded. Never quotes the key.
#[derive(Debug, thiserror::Error)]
pub enum AppKeyError {
    #[error("reading the GitHub App private key {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("the GitHub App private key{} is not usable: {reason}", path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Invalid { path: Option<PathBuf>, reason: String },
}

/// The App's id and its private key.
#[derive(Clone)]
pub struct AppCredentials {
    app_id: u64,
    key: EncodingKey,
}

impl fmt::Debug for AppCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppCredentials")
            .field("app_id", &self.app_id)
            .field("key", &"<redacted>")
            .finish()
    }
}

#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct AppClaims {
    pub iat: u64,
    pub exp: u64,
    pub iss: String,
}

impl AppCredentials {
    /// Reads the PEM key GitHub issued (PKCS#1 `RSA PRIVATE KEY`, or PKCS#8 `PRIVATE KEY`).
    pub fn load(app_id: u64, path: &Path) -> Result<Self, AppKeyError> {
        let pem = std::fs::read(path).map_err(|source| AppKeyError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_pem(app_id, &pem).map_err(|error| match error {
            AppKeyError::Invalid { reason, .. } => AppKeyError::Invalid {
                path: Some(path.to_owned()),
                reason,
            },
            other => other,
        })
    }

    pub fn from_pem(app_id: u64, pem: &[u8]) -> Result<Self, AppKeyError> {
        let invalid = |reason: &str| AppKeyError::Invalid {
            path: None,
            reason: reason.to_owned(),
        };
        let text = std::str::from_utf8(pem).map_err(|_| invalid("not a PEM file (not text)"))?;
        let (label, der) = pem_block(text).ok_or_else(|| invalid("no PEM block (`-----BEGIN … KEY-----`) found"))?;
        let der = decode_wrapped_base64(der).map_err(|err| invalid(&format!("the PEM body is not base64 ({err})")))?;
        let pkcs1 = match label {
            "RSA PRIVATE KEY" => {
                ring::signature::RsaKeyPair::from_der(&der)
                    .map_err(|err| invalid(&format!("not an RSA private key ({err})")))?;
                der
            }
            "PRIVATE KEY" => {
                ring::signature::RsaKeyPair::from_pkcs8(&der)
                    .map_err(|err| invalid(&format!("not an RSA private key in PKCS#8 ({err})")))?;
                // jsonwebtoken signs with ring's PKCS#1 parser whatever the PEM said, so the RSA
                // key is taken out of its PKCS#8 envelope here.
                pkcs8_inner_key(&der)
                    .ok_or_else(|| invalid("malformed PKCS#8 structure"))?
                    .to_vec()
            }
            "ENCRYPTED PRIVATE KEY" => return Err(invalid("the key is encrypted; give the unencrypted key")),
            _ => return Err(invalid("expected an `RSA PRIVATE KEY` or `PRIVATE KEY` PEM block")),
        };
        // The key never needs to leave: its text and each body line are withheld from GitHub.
        crate::redact::register_private_key(text);
        Ok(AppCredentials {
            app_id,
            key: EncodingKey::from_rsa_der(&pkcs1),
        })
    }

    pub fn app_id(&self) -> u64 {
        self.app_id
    }

    /// The claims of a JWT made at `now`: issued a minute back (clock drift, as GitHub advises),
    /// expiring nine minutes ahead (GitHub refuses more than ten).
    pub fn claims(&self, now: SystemTime) -> AppClaims {
        let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        AppClaims {
            iat: now.saturating_sub(60),
            exp: now + 540,
            iss: self.app_id.to_string(),
        }
    }

    /// The App's RS256 JWT, for `/app/…` endpoints.
    pub fn jwt(&self, now: SystemTime) -> Result<SecretString, GithubError> {
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &self.claims(now), &self.key)
            .map(SecretString::from)
            .map_err(|err| GithubError::Jwt {
                message: err.to_string(),
            })
    }
}

/// The first PEM block: its label and base64 body.
fn pem_block(text: &str) -> Option<(&str, &str)> {
    let start = text.find("-----BEGIN ")?;
    let after = &text[start + "-----BEGIN ".len()..];
    let label_end = after.find("-----")?;
    let label = &after[..label_end];
    let body = &after[label_end + 5..];
    let end = body.find(&format!("-----END {label}-----"))?;
    Some((label, &body[..end]))
}

/// The `privateKey` OCTET STRING of a PKCS#8 `PrivateKeyInfo`
/// (`SEQUENCE { INTEGER version, SEQUENCE algorithm, OCTET STRING privateKey, … }`).
fn pkcs8_inner_key(der: &[u8]) -> Option<&[u8]> {
    let (tag, info, _) = der_element(der)?;
    if tag != 0x30 {
        return None;
    }
    let (version_tag, _, rest) = der_element(info)?;
    let (algorithm_tag, _, rest) = der_element(rest)?;
    let (key_tag, key, _) = der_element(rest)?;
    (version_tag == 0x02 && algorithm_tag == 0x30 && key_tag == 0x04).then_some(key)
}

/// One DER element: tag, contents, and what follows it.
fn der_element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let length = if first < 0x80 {
        usize::from(first)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let (bytes, after) = rest.split_at(count);
        rest = after;
        bytes.iter().fold(0_usize, |acc, &b| acc << 8 | usize::from(b))
    };
    if rest.len() < length {
        return None;
    }
    let (contents, after) = rest.split_at(length);
    Some((tag, contents, after))
}

/// An installation token and when GitHub will stop accepting it.
#[derive(Clone)]
struct CachedToken {
    token: SecretString,
    expires_at: SystemTime,
}

#[derive(Deserialize)]
pub(super) struct AccessTokenResponse {
    pub token: String,
    pub expires_at: String,
}

/// An installation of the App, as `GET /repos/{owner}/{repo}/installation` describes it.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct Installation {
    pub id: InstallationId,
    #[serde(default)]
    pub account: Option<InstallationAccount>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct InstallationAccount {
    #[serde(default)]
    pub login: Option<String>,
}

type TokenSlot = Arc<tokio::sync::Mutex<Option<CachedToken>>>;

/// The App acting as itself (JWT) and handing out installation tokens.
pub struct AppAuth {
    credentials: AppCredentials,
    http: Http,
    tokens: Mutex<HashMap<InstallationId, TokenSlot>>,
}

impl fmt::Debug for AppAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppAuth")
            .field("app_id", &self.credentials.app_id)
            .field("api_url", &self.http.base().as_str())
            .finish_non_exhaustive()
    }
}

impl AppAuth {
    pub fn new(api_url: &Url, credentials: AppCredentials, options: ClientOptions) -> Result<Self, GithubError> {
        Ok(AppAuth {
            credentials,
            http: Http::new(api_url, options)?,
            tokens: Mutex::new(HashMap::new()),
        })
    }

    pub fn app_id(&self) -> u64 {
        self.credentials.app_id
    }

    /// A client acting as `installation`, sharing this App's connection pool and statistics.
    pub fn client(self: &Arc<Self>, installation: InstallationId) -> GithubClient {
        GithubClient::with_http(
            self.http.clone(),
            Auth::App {
                app: Arc::clone(self),
                installation,
            },
        )
    }

    fn slot(&self, installation: InstallationId) -> TokenSlot {
        let mut tokens = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(tokens.entry(installation).or_default())
    }

    /// A token for `installation`: the cached one while it has more than five minutes left, else a
    /// new one from `POST /app/installations/{id}/access_tokens`.
    pub async fn installation_token(&self, installation: InstallationId) -> Result<SecretString, GithubError> {
        let slot = self.slot(installation);
        // Held across the request: callers arriving meanwhile wait and then find the new token.
        let mut cached = slot.lock().await;
        let now = self.http.options.clock.now();
        if let Some(token) = cached.as_ref()
            && token.expires_at.duration_since(now).unwrap_or_default() > TOKEN_REFRESH_MARGIN
        {
            return Ok(token.token.clone());
        }
        let endpoint = Endpoint::new(
            Method::POST,
            ["app", "installations", &installation.to_string(), "access_tokens"],
        );
        let jwt = self.credentials.jwt(now)?;
        let response: AccessTokenResponse = self.http.send(&endpoint, None, &jwt).await?.json(&endpoint)?;
        let expires_at = parse_rfc3339(&response.expires_at).ok_or_else(|| GithubError::Decode {
            what: endpoint.to_string(),
            message: format!("`expires_at` is not an RFC 3339 time: {:?}", response.expires_at),
        })?;
        let fresh = CachedToken {
            token: SecretString::from(response.token),
            expires_at,
        };
        crate::redact::register(&fresh.token);
        tracing::debug!(%installation, "fetched an installation token");
        *cached = Some(fresh.clone());
        Ok(fresh.token)
    }

    /// Drops the cached token of `installation` if it is still `rejected` (another caller may have
    /// replaced it already).
    pub async fn forget_token(&self, installation: InstallationId, rejected: &SecretString) {
        let slot = self.slot(installation);
        let mut cached = slot.lock().await;
        if cached
            .as_ref()
            .is_some_and(|token| token.token.expose_secret() == rejected.expose_secret())
        {
            *cached = None;
        }
    }

    /// Every installation of the App (`GET /app/installations`, with the JWT), up to
    /// [`limits::INSTALLATIONS`] (a warning says when there are more).
    pub async fn installations(&self) -> Result<Vec<Installation>, GithubError> {
        let endpoint = Endpoint::new(Method::GET, ["app", "installations"]);
        let listing = paging::read_pages(&self.http, endpoint, limits::INSTALLATIONS, |endpoint| async move {
            // A fresh JWT per page: a long list must not outlive the first one's ten minutes.
            let jwt = self.credentials.jwt(self.http.options.clock.now())?;
            let reply = self.http.send(&endpoint, None, &jwt).await?;
            let page: Vec<Installation> = reply.json(&endpoint)?;
            Ok((page, reply.headers))
        })
        .await?;
        if listing.truncated {
            tracing::warn!(
                read = listing.items.len(),
                "the App has more installations than pitcrew reads; the rest are left out"
            );
        }
        Ok(listing.items)
    }

    /// The App's installation on `repo` (`GET /repos/{owner}/{repo}/installation`, with the JWT).
    pub async fn installation_for_repo(&self, repo: &RepoName) -> Result<Installation, GithubError> {
        let endpoint = Endpoint::new(Method::GET, ["repos", repo.owner(), repo.name(), "installation"]);
        let jwt = self.credentials.jwt(self.http.options.clock.now())?;
        self.http.send(&endpoint, None, &jwt).await?.json(&endpoint)
    }
}
