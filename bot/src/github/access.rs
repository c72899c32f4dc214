//! How pitcrew reaches GitHub: as a GitHub App (a client per installation, for `pitcrew serve`) or
//! with one token for everything (the Action's `GITHUB_TOKEN`).

use std::sync::Arc;

use super::app::AppAuth;
use super::client::GithubClient;
use super::http::ApiStats;
use super::ids::InstallationId;

#[derive(Clone, Debug)]
pub enum GithubAccess {
    App(Arc<AppAuth>),
    Token(Box<GithubClient>),
}

impl GithubAccess {
    /// The client to act on a delivery with: the installation's for an App (`None` when the
    /// delivery names no installation: an App cannot act without one), the one client otherwise.
    pub fn client(&self, installation: Option<InstallationId>) -> Option<GithubClient> {
        match self {
            GithubAccess::App(app) => installation.map(|id| GithubClient::for_installation(app, id)),
            GithubAccess::Token(client) => Some(GithubClient::clone(client)),
        }
    }

    /// The call statistics every client of this access shares.
    pub fn stats(&self) -> Arc<ApiStats> {
        match self {
            GithubAccess::App(app) => Arc::clone(app.stats()),
            GithubAccess::Token(client) => Arc::clone(client.stats()),
        }
    }
}
