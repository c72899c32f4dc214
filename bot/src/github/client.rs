//! [`GithubClient`]: a client of GitHub's REST API acting as one identity, a fixed token or a GitHub
//! App installation (whose tokens `app.rs` fetches and caches), over the transport of `http.rs`. The
//! typed API calls live in `api.rs`.

use std::fmt;
use std::sync::Arc;

use secrecy::SecretString;
use serde::Serialize;
use serde::de::DeserializeOwned;
use url::Url;

use super::app::AppAuth;
use super::error::GithubError;
use super::http::{ApiStats, ClientOptions, Endpoint, Http, Redirects, Reply};
use super::ids::InstallationId;

/// How a [`GithubClient`] authenticates.
#[derive(Clone)]
pub enum Auth {
    /// A fixed token: the Action's `GITHUB_TOKEN`, or an installation token obtained elsewhere.
    Token(SecretString),
    /// A GitHub App installation: tokens are fetched and cached by `app`, and refreshed once when
    /// GitHub rejects one.
    App {
        app: Arc<AppAuth>,
        installation: InstallationId,
    },
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Token(_) => f.write_str("Auth::Token(<redacted>)"),
            Auth::App { app, installation } => f
                .debug_struct("Auth::App")
                .field("app_id", &app.app_id())
                .field("installation", installation)
                .finish(),
        }
    }
}

/// Asked before every request that may write (any method but GET): `Err` with the reason keeps the
/// request from being sent. A job's client is fenced by its lease (`JobControl::fence`), so a
/// worker that lost its job to another writes nothing more for it.
pub type Fence = Arc<dyn Fn() -> futures_util::future::BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// A client of GitHub's REST API acting as one identity.
#[derive(Clone)]
pub struct GithubClient {
    pub(crate) http: Http,
    auth: Auth,
    fence: Option<Fence>,
}

impl fmt::Debug for GithubClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GithubClient")
            .field("http", &self.http)
            .field("auth", &self.auth)
            .field("fenced", &self.fence.is_some())
            .finish()
    }
}

impl GithubClient {
    /// A client of the API at `api_url` (`https://api.github.com`, or a GitHub Enterprise Server's
    /// `https://host/api/v3`).
    pub fn new(api_url: &Url, auth: Auth, options: ClientOptions) -> Result<Self, GithubError> {
        Ok(GithubClient {
            http: Http::new(api_url, options)?,
            auth,
            fence: None,
        })
    }

    /// A client acting as `installation` of `app`, sharing the App's connection pool, policy and
    /// statistics.
    pub fn for_installation(app: &Arc<AppAuth>, installation: InstallationId) -> Self {
        GithubClient {
            http: app.http().clone(),
            auth: Auth::App {
                app: Arc::clone(app),
                installation,
            },
            fence: None,
        }
    }

    /// This client, asking `fence` before every request that may write.
    pub fn fenced(mut self, fence: Fence) -> Self {
        self.fence = Some(fence);
        self
    }

    pub fn auth(&self) -> &Auth {
        &self.auth
    }

    pub fn stats(&self) -> &Arc<ApiStats> {
        &self.http.options.stats
    }

    /// The token requests are sent with now.
    pub async fn token(&self) -> Result<SecretString, GithubError> {
        match &self.auth {
            Auth::Token(token) => Ok(token.clone()),
            Auth::App { app, installation } => app.installation_token(*installation).await,
        }
    }

    /// Sends one request; with App auth, a 401 drops the cached token and the request is sent once
    /// more with a fresh one (a token revoked or expired early).
    pub(crate) async fn send(
        &self,
        endpoint: &Endpoint,
        body: Option<&serde_json::Value>,
    ) -> Result<Reply, GithubError> {
        self.send_with(endpoint, body, Redirects::Follow).await
    }

    /// [`GithubClient::send`], with a choice of what a 3xx answer does.
    pub(crate) async fn send_with(
        &self,
        endpoint: &Endpoint,
        body: Option<&serde_json::Value>,
        redirects: Redirects,
    ) -> Result<Reply, GithubError> {
        if endpoint.method != reqwest::Method::GET
            && let Some(fence) = &self.fence
        {
            fence().await.map_err(|reason| GithubError::Fenced {
                request: endpoint.to_string(),
                reason,
            })?;
        }
        let token = self.token().await?;
        let result = self.http.send_with(endpoint, body, &token, redirects).await;
        match (&self.auth, result) {
            (Auth::App { app, installation }, Err(GithubError::Unauthorized { .. })) => {
                tracing::info!(%endpoint, %installation, "installation token rejected; fetching a new one");
                app.forget_token(*installation, &token).await;
                let fresh = app.installation_token(*installation).await?;
                self.http.send_with(endpoint, body, &fresh, redirects).await
            }
            (_, result) => result,
        }
    }

    /// Sends and decodes the JSON response.
    pub(crate) async fn json<T: DeserializeOwned>(
        &self,
        endpoint: Endpoint,
        body: Option<&serde_json::Value>,
    ) -> Result<T, GithubError> {
        self.send(&endpoint, body).await?.json(&endpoint)
    }

    /// Sends a serialisable body and decodes the JSON response.
    pub(crate) async fn json_with<B: Serialize, T: DeserializeOwned>(
        &self,
        endpoint: Endpoint,
        body: &B,
    ) -> Result<T, GithubError> {
        let body = serde_json::to_value(body).map_err(|err| GithubError::InvalidInput {
            what: endpoint.to_string(),
            message: format!("encoding the request body: {err}"),
        })?;
        self.json(endpoint, Some(&body)).await
    }
}
