//! `pitcrew serve`: the GitHub App server with the real job handlers wired in — the git cache and
//! the pool of working copies under the data directory, the model from configuration, the metrics
//! the handlers record into, and the pool of copies the server's housekeeping evicts.

use std::sync::Arc;

use crate::config::Config;
use crate::github::GithubAccess;
use crate::handlers::{Services, job_handler};
use crate::index::shelf::IndexShelf;
use crate::instance::instance_id;
use crate::jobs::ShutdownReport;
use crate::llm::Model;
use crate::metrics::Metrics;
use crate::prompts::Prompts;
use crate::server::app::app_auth;
use crate::server::{RunningServer, ServeError, Server, ServerOptions, StopSignals};
use crate::workspace::mirror::MirrorCache;
use crate::workspace::pool::{PoolLimits, WorkspacePool};

/// What [`start`] needs besides the configuration; tests replace the model and the listener.
#[derive(Default)]
pub struct ServeOptions {
    pub prompts: Option<Prompts>,
    pub model: Option<Arc<dyn Model>>,
    pub listener: Option<std::net::TcpListener>,
}

/// Starts the server with the real handlers.
pub async fn start(config: Config, options: ServeOptions) -> Result<RunningServer, ServeError> {
    let github = app_auth(&config)?;
    let metrics = Arc::new(Metrics::new());
    let pool = WorkspacePool::new(
        &config.server.data_dir,
        PoolLimits {
            per_repo: usize::try_from(config.server.pool_size).unwrap_or(usize::MAX),
            max_idle: config.server.pool_max_idle,
        },
    )
    .map_err(|error| ServeError::DataDir {
        path: config.server.data_dir.clone(),
        source: std::io::Error::other(error.to_string()),
    })?;
    let instance = instance_id(&config.server.data_dir)?;
    let services = Arc::new(Services {
        instance: instance.clone(),
        prompts: options.prompts.unwrap_or_else(Prompts::embedded),
        github: GithubAccess::App(github.clone()),
        mirrors: MirrorCache::new(&config.server.data_dir),
        pool: pool.clone(),
        model: options.model,
        metrics: Some(metrics.clone()),
        index_shelf: IndexShelf::new(config.agent.index_memory_bytes),
        config: config.clone(),
    });
    let running = Server::start(ServerOptions {
        handler: job_handler(services),
        listener: options.listener,
        github: Some(GithubAccess::App(github)),
        metrics: Some(metrics),
        copies: Some(pool),
        instance: Some(instance),
        config,
    })
    .await?;
    Ok(running)
}

/// Runs the server until SIGTERM or SIGINT, then stops it gracefully.
pub async fn run(config: Config, options: ServeOptions) -> Result<ShutdownReport, ServeError> {
    let signals = StopSignals::install()?;
    start(config, options).await?.run_until(signals).await
}
