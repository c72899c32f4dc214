//! GitHub: the concrete REST client, GitHub App authentication and the API calls the bot makes
//! (REST, and GraphQL where REST has no call).
//!
//! - `ids`: newtypes for repositories, logins, installations, issues, comments, check runs, commits;
//! - `app`: the App's key and JWT, installation tokens cached per installation;
//! - `access`: the App or one token ([`GithubAccess`]), whichever pitcrew runs with;
//! - `http`: the transport: base URL (and the GraphQL endpoint beside it), headers, retries (rate
//!   limits, 5xx), error mapping and call
//!   statistics ([`ApiStats`]), shared by a client and the App;
//! - `client`: [`GithubClient`], acting as one token or one App installation;
//! - `api`: the typed calls (pulls, issues, comments, reactions, check runs, reviews, contents,
//!   GitHub Actions runs, jobs and logs);
//! - `types`: those calls' request bodies and responses;
//! - `graphql`: the GraphQL calls (a pull request's review threads, resolving one) and their
//!   answers;
//! - `paging`: lists read to the end through `Link: rel="next"`, bounded per list, on the API's host;
//! - `encoding`: base64 as GitHub wraps it (file contents, the App's PEM key).

pub mod access;
pub mod api;
pub mod app;
pub mod client;
mod encoding;
pub mod error;
pub mod graphql;
pub mod http;
pub mod ids;
pub mod paging;
pub mod time;
pub mod types;

#[cfg(test)]
mod tests;

pub use access::GithubAccess;
pub use app::{AppAuth, AppCredentials, AppInfo, AppKeyError, CreatedApp, Installation, create_app_from_manifest};
pub use client::{Auth, GithubClient};
pub use error::{FieldError, GithubError, GraphqlError};
pub use graphql::{ReviewThread, ThreadComment};
pub use http::{ApiStats, ApiStatsSnapshot, ClientOptions, Clock, RetryPolicy, Sleeper, SystemClock, TokioSleeper};
pub use ids::{
    CheckRunId, CommentId, CommitSha, InstallationId, IssueNumber, Login, LoginError, RepoName, RepoNameError,
};
pub use paging::Listing;
pub use types::{
    ActionsJob, ActionsStep, Annotation, AnnotationLevel, AppSummary, CheckConclusion, CheckOutputSummary, CheckRun,
    CheckRunOutput, CheckRunSummary, CheckRunUpdate, CheckStatus, CheckSuiteSummary, CommitPull, CreatedPull, Issue,
    IssueComment, JobLogText, NewCheckRun, NewPull, NewReview, Permission, PullFile, PullRef, PullRepo, PullRequest,
    PullUpdate, Reaction, Repository, Review, ReviewComment, ReviewCommentDraft, ReviewEvent, RunFilter, Side, User,
    WorkflowRunSummary,
};
