//! GitHub App authentication: the App's private key, the RS256 JWT it signs, and installation access
//! tokens fetched with that JWT and cached per installation until five minutes before they expire.
//!
//! The JWT is made here with `ring` (RSASSA-PKCS1-v1_5 with SHA-256): pitcrew only signs tokens,
//! never validates one, so a JWT library's validation code would be attack surface for nothing.
//!
//! Concurrent callers for one installation share a single token request (a per-installation async
//! mutex); different installations do not wait for each other.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::Method;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use url::Url;

use super::encoding::decode_wrapped_base64;
use super::error::GithubError;
use super::http::{ApiStats, ClientOptions, Endpoint, Http};
use super::ids::{InstallationId, RepoName};
use super::paging::{self, limits};
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
    key: Arc<RsaKeyPair>,
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
        let key = match label {
            "RSA PRIVATE KEY" => {
                RsaKeyPair::from_der(&der).map_err(|err| invalid(&format!("not an RSA private key ({err})")))?
            }
            "PRIVATE KEY" => RsaKeyPair::from_pkcs8(&der)
                .map_err(|err| invalid(&format!("not an RSA private key in PKCS#8 ({err})")))?,
            "ENCRYPTED PRIVATE KEY" => return Err(invalid("the key is encrypted; give the unencrypted key")),
            _ => return Err(invalid("expected an `RSA PRIVATE KEY` or `PRIVATE KEY` PEM block")),
        };
        // The key never needs to leave: its text and each body line are withheld from GitHub.
        crate::redact::register_private_key(text);
        Ok(AppCredentials {
            app_id,
            key: Arc::new(key),
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

    /// The App's RS256 JWT, for `/app/…` endpoints: `base64url(header).base64url(claims)`, then
    /// the RSASSA-PKCS1-v1_5 SHA-256 signature of those two parts (RFC 7515, RFC 7518 §3.3).
    pub fn jwt(&self, now: SystemTime) -> Result<SecretString, GithubError> {
        let jwt_error = |message: String| GithubError::Jwt { message };
        let header = serde_json::to_vec(&JwtHeader {
            alg: "RS256",
            typ: "JWT",
        })
        .map_err(|err| jwt_error(format!("encoding the JWT header: {err}")))?;
        let claims = serde_json::to_vec(&self.claims(now))
            .map_err(|err| jwt_error(format!("encoding the JWT claims: {err}")))?;
        let mut token = format!("{}.{}", URL_SAFE_NO_PAD.encode(header), URL_SAFE_NO_PAD.encode(claims));
        let mut signature = vec![0; self.key.public().modulus_len()];
        // PKCS#1 v1.5 signatures are deterministic; ring takes a random source for RSA blinding.
        self.key
            .sign(
                &RSA_PKCS1_SHA256,
                &ring::rand::SystemRandom::new(),
                token.as_bytes(),
                &mut signature,
            )
            .map_err(|_| jwt_error("RSA signing failed".to_owned()))?;
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(signature));
        Ok(SecretString::from(token))
    }
}

/// The JOSE header of the App's JWT.
#[derive(Serialize)]
struct JwtHeader {
    alg: &'static str,
    typ: &'static str,
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

    /// The transport every client of this App shares.
    pub(super) fn http(&self) -> &Http {
        &self.http
    }

    /// The call statistics of the App's own requests and of every client of its installations.
    pub fn stats(&self) -> &Arc<ApiStats> {
        &self.http.options.stats
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

/// The App as `GET /app` describes it to itself.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct AppInfo {
    pub id: u64,
    #[serde(default)]
    pub slug: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    /// Its public page, `https://github.com/apps/<slug>`.
    #[serde(default)]
    pub html_url: Option<String>,
    /// What it may do: permission → `read`, `write` or `admin`.
    #[serde(default)]
    pub permissions: std::collections::BTreeMap<String, String>,
    /// The webhook events it is subscribed to.
    #[serde(default)]
    pub events: Vec<String>,
}

impl AppAuth {
    /// The App itself (`GET /app`, with the JWT): what proves its id and key belong together.
    pub async fn app(&self) -> Result<AppInfo, GithubError> {
        let endpoint = Endpoint::new(Method::GET, ["app"]);
        let jwt = self.credentials.jwt(self.http.options.clock.now())?;
        self.http.send(&endpoint, None, &jwt).await?.json(&endpoint)
    }

    /// How many repositories `installation` reaches (`GET /installation/repositories`, one item per
    /// page: the count is the answer's `total_count`), with the installation's token.
    pub async fn repository_count(&self, installation: InstallationId) -> Result<u64, GithubError> {
        #[derive(Deserialize)]
        struct Page {
            total_count: u64,
        }
        let token = self.installation_token(installation).await?;
        let endpoint = Endpoint::new(Method::GET, ["installation", "repositories"]).query("per_page", "1");
        let page: Page = self.http.send(&endpoint, None, &token).await?.json(&endpoint)?;
        Ok(page.total_count)
    }
}

/// A GitHub App just created from a manifest: what `POST /app-manifests/{code}/conversions`
/// answers, the secrets among it held as secrets (and registered with the redaction filter).
pub struct CreatedApp {
    pub id: u64,
    pub slug: String,
    pub name: String,
    /// `https://github.com/apps/<slug>`: its public page; `/installations/new` below it installs it.
    pub html_url: String,
    pub owner: Option<String>,
    pub pem: SecretString,
    pub webhook_secret: Option<SecretString>,
}

impl fmt::Debug for CreatedApp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CreatedApp")
            .field("id", &self.id)
            .field("slug", &self.slug)
            .field("html_url", &self.html_url)
            .finish_non_exhaustive()
    }
}

/// Exchanges the code GitHub handed back after someone created an App from a manifest for the
/// App's id, private key and webhook secret. The code is the only credential (no token), valid once
/// and for an hour.
pub async fn create_app_from_manifest(
    api_url: &Url,
    code: &str,
    options: ClientOptions,
) -> Result<CreatedApp, GithubError> {
    #[derive(Deserialize)]
    struct Owner {
        login: Option<String>,
    }
    #[derive(Deserialize)]
    struct Conversion {
        id: u64,
        slug: Option<String>,
        name: Option<String>,
        html_url: Option<String>,
        owner: Option<Owner>,
        pem: String,
        webhook_secret: Option<String>,
    }
    let http = Http::new(api_url, options)?;
    let endpoint = Endpoint::new(Method::POST, ["app-manifests", code, "conversions"]);
    let reply = http.send_anonymous(&endpoint, None).await?;
    let answer: Conversion = reply.json(&endpoint)?;
    crate::redact::register_private_key(&answer.pem);
    let pem = SecretString::from(answer.pem);
    let webhook_secret = answer.webhook_secret.filter(|s| !s.is_empty()).map(SecretString::from);
    if let Some(secret) = &webhook_secret {
        crate::redact::register(secret);
    }
    let slug = answer.slug.unwrap_or_default();
    Ok(CreatedApp {
        id: answer.id,
        name: answer.name.unwrap_or_else(|| slug.clone()),
        html_url: answer.html_url.unwrap_or_default(),
        owner: answer.owner.and_then(|owner| owner.login),
        slug,
        pem,
        webhook_secret,
    })
}
