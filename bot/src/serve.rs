//! `pitcrew serve`: the GitHub App server with the real job handlers wired in — the git cache and
//! the pool of working copies under the data directory, the model from configuration, the metrics
//! the handlers record into — and its housekeeping: eviction of idle copies and mirrors, and the job
//! store's retention.

use std::sync::Arc;

use crate::config::Config;
use crate::github::GithubAccess;
use crate::handlers::{Services, job_handler};
use crate::jobs::{JobStore, Pruned, Retention, ShutdownReport, now_ms};
use crate::llm::Model;
use crate::prompts::Prompts;
use crate::server::app::{app_auth, instance_id};
use crate::server::{Metrics, RunningServer, ServeError, Server, ServerOptions};
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
        instance,
        prompts: options.prompts.unwrap_or_else(Prompts::embedded),
        github: GithubAccess::App(github.clone()),
        mirrors: MirrorCache::new(&config.server.data_dir),
        pool: pool.clone(),
        model: options.model,
        metrics: Some(metrics.clone()),
        config: config.clone(),
    });
    let running = Server::start(ServerOptions {
        handler: job_handler(services),
        listener: options.listener,
        github: Some(GithubAccess::App(github)),
        metrics: Some(metrics),
        config: config.clone(),
    })
    .await?;
    housekeeping(config, pool, Arc::clone(running.store()));
    Ok(running)
}

/// Runs the server until SIGTERM or SIGINT, then stops it gracefully.
pub async fn run(config: Config, options: ServeOptions) -> Result<ShutdownReport, ServeError> {
    start(config, options).await?.run_until_signal().await
}

/// Evicts idle working copies and unused mirrors every ten minutes, and prunes the job store (at
/// start, then every ten minutes too), for the life of the process.
fn housekeeping(config: Config, pool: WorkspacePool, store: Arc<dyn JobStore>) {
    tokio::spawn(async move {
        let mirrors = MirrorCache::new(&config.server.data_dir);
        let retention = Retention {
            rows: config.server.retain,
            payloads: config.server.retain_payloads,
        };
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(600));
        loop {
            tick.tick().await;
            match store.prune(retention, now_ms()).await {
                Ok(pruned) if pruned != Pruned::default() => {
                    tracing::info!(
                        jobs = pruned.jobs,
                        deliveries = pruned.deliveries,
                        payloads = pruned.payloads,
                        pages_freed = pruned.pages_freed,
                        "pruned the job store"
                    );
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "pruning the job store failed"),
            }
            let copies = pool.evict();
            match pool.evict_mirrors(&mirrors, config.server.mirror_max_idle).await {
                Ok(eviction) if copies > 0 || !eviction.mirrors.is_empty() => {
                    tracing::info!(copies, mirrors = ?eviction.mirrors, "evicted unused working copies and mirrors");
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "mirror eviction failed"),
            }
        }
    });
}
