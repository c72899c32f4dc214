//! The `docker` sandbox backend (through bollard): one container per job, with the workspace
//! bind-mounted at `/workspace` (its `.git` read-only), no network, no capabilities, memory, CPU and
//! process limits, and an allow-listed environment.
//!
//! Commands go to one long-lived `sh` per container, started with `docker exec` and fed over its
//! stdin, so `cd`, variables and functions persist between calls as in a terminal, and a command
//! costs a round trip rather than a `docker exec`. Shell options do not persist (`set -e` carried
//! into later calls would end the shell at their first failure). Each command is followed by a
//! marker line carrying a fresh random nonce, its exit status and the container's OOM-kill
//! counter; the marker ends the command's output on each stream. After every command the shell
//! kills whatever the command left running (as the local backend kills the command's process
//! group), so background processes neither outlive their command nor write into the next one's
//! output.
//!
//! A timeout kills the command's processes, not the shell, with a second `docker exec`: every
//! process of the container but docker-init (PID 1), the keep-alive and the shell. When the shell
//! itself dies (the command ran `exit`, or was the shell stuck in a builtin loop), the next call
//! starts a new one, and the output says that the working directory and variables were reset.
//! When no shell can be started at all, each command gets its own `docker exec` (also the mode of
//! `setup`).
//!
//! This file holds the engine's half (connecting, images, the container's configuration and
//! creation, the reaper); `session.rs` the running container's ([`DockerSession`]), and `shell.rs`
//! the shell protocol.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bollard::Docker;
use bollard::errors::Error as EngineError;
use bollard::models::{ContainerCreateBody, HostConfig, Mount, MountType};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, CreateImageOptionsBuilder, ListContainersOptionsBuilder,
    RemoveContainerOptionsBuilder,
};
use futures_util::StreamExt;

use super::{SandboxError, Session};

mod session;
mod shell;

pub use self::session::DockerSession;

/// Label on every container this backend creates.
pub const LABEL_MANAGED: &str = "pitcrew.managed";
/// Label carrying the job id.
pub const LABEL_JOB: &str = "pitcrew.job";
/// Where the workspace is mounted, and the working directory.
pub const WORKDIR: &str = "/workspace";
/// Where the engine is when `DOCKER_HOST` is unset.
const DEFAULT_HOST: &str = "unix:///var/run/docker.sock";
/// The keep-alive writes its PID here, so killers can spare it.
const KEEPALIVE_PID_FILE: &str = "/tmp/.pitcrew-keepalive.pid";
const DEFAULT_MEMORY_BYTES: u64 = 4 << 30;
const DEFAULT_DISK_BYTES: u64 = 20 << 30;
/// How often the working copy's size is measured while a command runs: a command writing past the
/// disk limit is stopped within about this long.
const DISK_CHECK: Duration = Duration::from_secs(2);
const TMP_SIZE: &str = "1g";
/// How long engine-side chores may take: starting the shell, killing processes, reading a file.
const CHORE_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the shell may take to print its marker once the command's processes are killed.
const GRACE: Duration = Duration::from_secs(2);
/// Bytes kept of each stream of a failed setup script, for the error message.
const SETUP_OUTPUT_LIMIT: usize = 4 * 1024;
const SHELL_EXITED: &str = "[pitcrew: the shell exited, so the next command runs in a new one: the working \
                            directory, variables and shell options were reset]";
const SHELL_KILLED: &str = "[pitcrew: the shell did not come back after the timeout and was killed, so the next \
                            command runs in a new one: the working directory, variables and shell options were \
                            reset]";

/// The network a container gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Network {
    /// Loopback only.
    #[default]
    None,
    /// Docker's default bridge: outbound access.
    Bridge,
}

impl Network {
    fn mode(self) -> &'static str {
        match self {
            Network::None => "none",
            Network::Bridge => "bridge",
        }
    }
}

/// What a job's container looks like.
#[derive(Debug, Clone, PartialEq)]
pub struct DockerSpec {
    /// Names the container (`pitcrew-<job id>`) and labels it: letters, digits, `_`, `.`, `-`.
    pub job_id: String,
    pub image: String,
    /// The job's workspace on the host: mounted read-write at `/workspace`, its `.git` read-only.
    /// Commands run as its owner.
    pub workspace: PathBuf,
    pub network: Network,
    /// Memory limit; swap is not allowed on top.
    pub memory_bytes: u64,
    /// How much the working copy may hold (`.git` aside): a command that writes past it is stopped
    /// and the session fails, so the job ends with that said.
    pub disk_bytes: u64,
    pub cpus: f64,
    pub pids_limit: i64,
    /// Variables added to the allow-list (they may override it).
    pub env: Vec<(String, String)>,
    /// A shell script run once after start, in `/workspace`, before any command.
    pub setup: Option<String>,
    /// Run `setup` with bridge networking, then cut the container off (loopback only).
    pub setup_network: bool,
    /// How long `setup` may run.
    pub setup_timeout: Duration,
}

impl DockerSpec {
    /// A spec with the default limits: no network, 4 GiB, 2 CPUs, 512 processes.
    pub fn new(job_id: impl Into<String>, image: impl Into<String>, workspace: impl Into<PathBuf>) -> Self {
        DockerSpec {
            job_id: job_id.into(),
            image: image.into(),
            workspace: workspace.into(),
            network: Network::None,
            memory_bytes: DEFAULT_MEMORY_BYTES,
            disk_bytes: DEFAULT_DISK_BYTES,
            cpus: 2.0,
            pids_limit: 512,
            env: Vec::new(),
            setup: None,
            setup_network: false,
            setup_timeout: Duration::from_secs(600),
        }
    }
}

/// A connection to the Docker engine.
#[derive(Clone)]
pub struct DockerSandbox {
    docker: Docker,
    /// How this process's paths are the engine's (see [`super::host_paths`]), found once.
    paths: Arc<tokio::sync::OnceCell<super::host_paths::PathMap>>,
}

impl std::fmt::Debug for DockerSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerSandbox").finish_non_exhaustive()
    }
}

/// Where an image would come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImagePresence {
    /// On the engine.
    Present,
    /// Not on the engine; its registry has it.
    Pullable,
    /// Neither; what the engine said.
    Missing(String),
}

impl DockerSandbox {
    /// Connects to the engine at `DOCKER_HOST` (the local socket by default) and agrees on an API
    /// version with it.
    pub async fn connect() -> Result<DockerSandbox, SandboxError> {
        let host = std::env::var("DOCKER_HOST").unwrap_or_else(|_| DEFAULT_HOST.to_owned());
        let docker = Docker::connect_with_defaults().map_err(|err| unreachable(&host, &err))?;
        Self::negotiate(docker, &host).await
    }

    /// Connects to the engine at `host` when one is configured (`[sandbox] docker_host`), else as
    /// [`DockerSandbox::connect`] does.
    pub async fn connect_configured(host: Option<&str>) -> Result<DockerSandbox, SandboxError> {
        match host {
            Some(host) => Self::connect_to(host).await,
            None => Self::connect().await,
        }
    }

    /// Connects to the engine at `host` (`unix:///…`, `tcp://…`).
    pub async fn connect_to(host: &str) -> Result<DockerSandbox, SandboxError> {
        let docker = Docker::connect_with_host(host).map_err(|err| unreachable(host, &err))?;
        Self::negotiate(docker, host).await
    }

    async fn negotiate(docker: Docker, host: &str) -> Result<DockerSandbox, SandboxError> {
        let docker = tokio::time::timeout(CHORE_TIMEOUT, docker.negotiate_version())
            .await
            .map_err(|_| SandboxError::Backend(format!("cannot reach the Docker engine at {host}: no answer")))?
            .map_err(|err| unreachable(host, &err))?;
        Ok(DockerSandbox {
            docker,
            paths: Arc::default(),
        })
    }

    /// The underlying client.
    pub fn client(&self) -> &Docker {
        &self.docker
    }

    /// Whether `image` is on the engine already, or else whether its registry has it (asked without
    /// pulling: the engine's distribution endpoint); the registry's refusal in words otherwise.
    pub async fn image_presence(&self, image: &str) -> Result<ImagePresence, SandboxError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => return Ok(ImagePresence::Present),
            Err(err) if status(&err) == Some(404) => {}
            Err(err) => return Err(engine("inspecting the image", &err)),
        }
        let asked = tokio::time::timeout(CHORE_TIMEOUT, self.docker.inspect_registry_image(image, None)).await;
        Ok(match asked {
            Ok(Ok(_)) => ImagePresence::Pullable,
            Ok(Err(err)) => ImagePresence::Missing(err.to_string()),
            Err(_) => ImagePresence::Missing("the registry did not answer".to_owned()),
        })
    }

    /// Makes sure `image` is present, pulling it when it is not.
    pub async fn ensure_image(&self, image: &str) -> Result<(), SandboxError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => return Ok(()),
            Err(err) if status(&err) == Some(404) => {}
            Err(err) => return Err(engine("inspecting the image", &err)),
        }
        let unavailable = |why: String| {
            SandboxError::Backend(format!(
                "image `{image}` is not available locally and could not be pulled: {why}"
            ))
        };
        let (name, tag) = split_reference(image);
        let mut options = CreateImageOptionsBuilder::default().from_image(name);
        if let Some(tag) = tag {
            options = options.tag(tag);
        }
        tracing::info!(image, "pulling the sandbox image");
        let mut pull = self.docker.create_image(Some(options.build()), None, None);
        let mut last_status = String::new();
        while let Some(progress) = pull.next().await {
            let progress = progress.map_err(|err| unavailable(err.to_string()))?;
            let status = progress.status.unwrap_or_default();
            if status != last_status {
                tracing::info!(image, layer = progress.id.as_deref().unwrap_or(""), %status, "pull");
            } else if let Some(detail) = progress.progress_detail {
                let layer = progress.id.as_deref().unwrap_or("");
                tracing::debug!(image, layer, current = ?detail.current, total = ?detail.total, "pull");
            }
            last_status = status;
        }
        self.docker
            .inspect_image(image)
            .await
            .map(|_| ())
            .map_err(|err| unavailable(err.to_string()))
    }

    /// Creates and starts the job's container, runs `setup`, and opens the shell session.
    pub async fn start(&self, spec: DockerSpec) -> Result<DockerSession, SandboxError> {
        check_job_id(&spec.job_id)?;
        check_env(&spec.env).map_err(|e| SandboxError::Backend(e.to_string()))?;
        let workspace = spec
            .workspace
            .canonicalize()
            .map_err(|err| SandboxError::Backend(format!("workspace {}: {err}", spec.workspace.display())))?;
        let meta = std::fs::metadata(&workspace)
            .map_err(|err| SandboxError::Backend(format!("workspace {}: {err}", workspace.display())))?;
        if !meta.is_dir() {
            return Err(SandboxError::Backend(format!(
                "workspace {} is not a directory",
                workspace.display()
            )));
        }
        self.ensure_image(&spec.image).await?;

        let name = container_name(&spec.job_id);
        // The engine mounts its own paths: inside a container, the host side of the volume.
        let paths = self
            .paths
            .get_or_init(|| super::host_paths::discover(&self.docker))
            .await;
        let mount_source = paths
            .host_path(&workspace)
            .map_err(|e| SandboxError::Backend(e.to_string()))?;
        let handover = super::owner::hand_over(&workspace, &meta).map_err(|err| {
            SandboxError::Backend(format!(
                "handing the workspace {} to the sandbox's user: {err}",
                workspace.display()
            ))
        })?;
        let config = container_config(&spec, &workspace, &mount_source, handover.user)?;
        let options = CreateContainerOptionsBuilder::default().name(&name).build();
        match self
            .docker
            .create_container(Some(options.clone()), config.clone())
            .await
        {
            Ok(_) => {}
            Err(err) if status(&err) == Some(409) => {
                // A container of the same job survived a crash: it is stale.
                tracing::warn!(container = %name, "removing a stale container of the same job");
                remove_container(&self.docker, &name).await?;
                self.docker
                    .create_container(Some(options), config)
                    .await
                    .map_err(|err| engine("creating the container", &err))?;
            }
            Err(err) => {
                restore_owner(&workspace, handover.restore).await;
                return Err(engine("creating the container", &err));
            }
        }
        let mut session = DockerSession::new(
            self.docker.clone(),
            name,
            workspace,
            format!("docker {} (network {})", spec.image, spec.network.mode()),
            handover.restore,
            spec.disk_bytes,
        );
        // From here on, a failure removes the container.
        if let Err(err) = session.boot(&spec).await {
            let _ = session.stop().await;
            return Err(err);
        }
        tracing::info!(container = %session.container(), sandbox = %session.describe(), "sandbox started");
        Ok(session)
    }

    /// Removes (forcibly) every container of this backend whose job is not in `keep`: what a crash
    /// left behind. Returns how many were removed.
    pub async fn reap_orphans(&self, keep: &HashSet<String>) -> Result<usize, SandboxError> {
        self.reap_where(|job| job.is_none_or(|job| !keep.contains(job))).await
    }

    /// Removes (forcibly) every container of this backend whose job starts with `prefix`: what a
    /// crashed server whose jobs are named `<prefix><id>` left behind, without touching the
    /// containers of other servers or local runs on the same engine.
    pub async fn reap_prefix(&self, prefix: &str) -> Result<usize, SandboxError> {
        self.reap_where(|job| job.is_some_and(|job| job.starts_with(prefix)))
            .await
    }

    /// Removes the containers of this backend whose job (label) `orphan` picks.
    async fn reap_where(&self, orphan: impl Fn(Option<&str>) -> bool) -> Result<usize, SandboxError> {
        let filters = HashMap::from([("label", vec![format!("{LABEL_MANAGED}=true")])]);
        let options = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        let containers = self
            .docker
            .list_containers(Some(options))
            .await
            .map_err(|err| engine("listing containers", &err))?;
        let mut removed = 0;
        for container in containers {
            let job = container.labels.as_ref().and_then(|labels| labels.get(LABEL_JOB));
            if !orphan(job.map(String::as_str)) {
                continue;
            }
            let Some(id) = container.id else { continue };
            let job = job.map_or("", String::as_str);
            tracing::info!(container = %id, job, "removing an orphaned sandbox container");
            remove_container(&self.docker, &id).await?;
            removed += 1;
        }
        Ok(removed)
    }
}

fn container_name(job_id: &str) -> String {
    format!("pitcrew-{job_id}")
}

fn check_job_id(job_id: &str) -> Result<(), SandboxError> {
    let valid = job_id.len() <= 200
        && job_id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && job_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if valid {
        Ok(())
    } else {
        Err(SandboxError::Backend(format!(
            "job id `{job_id}` cannot name a container: use letters, digits, `_`, `.` and `-`"
        )))
    }
}

/// An environment variable a container cannot be given.
#[derive(Debug, thiserror::Error)]
enum EnvError {
    #[error("`{0}` is not a valid environment variable name")]
    Name(String),
    #[error("the value of {0} contains a NUL byte")]
    Nul(String),
}

fn check_env(env: &[(String, String)]) -> Result<(), EnvError> {
    for (name, value) in env {
        let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(EnvError::Name(name.clone()));
        }
        if value.contains('\0') {
            return Err(EnvError::Nul(name.clone()));
        }
    }
    Ok(())
}

/// The environment every command starts from; the image's own variables (`PATH`) stay.
fn container_env(extra: &[(String, String)]) -> Vec<String> {
    let mut env: Vec<(String, String)> = std::iter::once(&("HOME", "/tmp"))
        .chain(super::COMMAND_ENV)
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    for (name, value) in extra {
        env.retain(|(k, _)| k != name);
        env.push((name.clone(), value.clone()));
    }
    env.into_iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// The container to create; `workspace` is the working copy as this process sees it,
/// `mount_source` the same directory as the engine sees it.
fn container_config(
    spec: &DockerSpec,
    workspace: &Path,
    mount_source: &Path,
    owner: (u32, u32),
) -> Result<ContainerCreateBody, SandboxError> {
    let path = |p: &Path| {
        p.to_str()
            .map(str::to_owned)
            .ok_or_else(|| SandboxError::Backend(format!("workspace path {} is not UTF-8", p.display())))
    };
    let bind = |source: String, target: &str, read_only: bool| Mount {
        target: Some(target.to_owned()),
        source: Some(source),
        typ: Some(MountType::BIND),
        read_only: Some(read_only),
        ..Mount::default()
    };
    let mut mounts = vec![bind(path(mount_source)?, WORKDIR, false)];
    if workspace.join(".git").symlink_metadata().is_ok() {
        mounts.push(bind(
            path(&mount_source.join(".git"))?,
            &format!("{WORKDIR}/.git"),
            true,
        ));
    }
    let memory = i64::try_from(spec.memory_bytes)
        .map_err(|_| SandboxError::Backend(format!("memory limit {} is too large", spec.memory_bytes)))?;
    if !(spec.cpus.is_finite() && spec.cpus > 0.0) {
        return Err(SandboxError::Backend(format!(
            "cpus must be positive, not {}",
            spec.cpus
        )));
    }
    // Setup with network starts on the bridge; the network is cut after it.
    let network = if spec.setup_network && spec.setup.is_some() {
        Network::Bridge
    } else {
        spec.network
    };
    let host_config = HostConfig {
        network_mode: Some(network.mode().to_owned()),
        memory: Some(memory),
        memory_swap: Some(memory),
        nano_cpus: Some((spec.cpus * 1e9) as i64),
        pids_limit: Some(spec.pids_limit),
        cap_drop: Some(vec!["ALL".to_owned()]),
        security_opt: Some(vec!["no-new-privileges".to_owned()]),
        init: Some(true),
        mounts: Some(mounts),
        tmpfs: Some(HashMap::from([(
            "/tmp".to_owned(),
            format!("rw,exec,nosuid,nodev,size={TMP_SIZE},mode=1777"),
        )])),
        ..HostConfig::default()
    };
    let labels = HashMap::from([
        (LABEL_MANAGED.to_owned(), "true".to_owned()),
        (LABEL_JOB.to_owned(), spec.job_id.clone()),
    ]);
    Ok(ContainerCreateBody {
        image: Some(spec.image.clone()),
        entrypoint: Some(vec!["sh".to_owned(), "-c".to_owned()]),
        cmd: Some(vec![format!("echo $$ > {KEEPALIVE_PID_FILE} && exec sleep 2147483647")]),
        user: Some(format!("{}:{}", owner.0, owner.1)),
        working_dir: Some(WORKDIR.to_owned()),
        env: Some(container_env(&spec.env)),
        labels: Some(labels),
        network_disabled: Some(false),
        host_config: Some(host_config),
        ..ContainerCreateBody::default()
    })
}

/// `name:tag` → (`name`, `tag`); no tag → `latest`; a digest stays in the name.
fn split_reference(image: &str) -> (&str, Option<&str>) {
    if image.contains('@') {
        return (image, None);
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, tag)) => (&image[..image.len() - tag.len() - 1], Some(tag)),
        None => (image, Some("latest")),
    }
}

/// Gives the working tree back to its owner once nothing runs in it any more (see `owner.rs`).
async fn restore_owner(workspace: &Path, restore: Option<(u32, u32)>) {
    let Some(owner) = restore else { return };
    let root = workspace.to_owned();
    let done = tokio::task::spawn_blocking(move || super::owner::take_back(&root, owner)).await;
    if let Ok(Err(err)) | Err(err) = done.map_err(std::io::Error::other) {
        tracing::warn!(workspace = %workspace.display(), error = %err, "giving the workspace back to its owner");
    }
}

/// Removes a container and its anonymous volumes, forcibly; a container already gone is fine.
async fn remove_container(docker: &Docker, container: &str) -> Result<(), SandboxError> {
    let options = RemoveContainerOptionsBuilder::default().force(true).v(true).build();
    match docker.remove_container(container, Some(options)).await {
        Ok(()) => Ok(()),
        Err(err) if status(&err) == Some(404) => Ok(()),
        // Already being removed (by a concurrent stop or reap).
        Err(err) if status(&err) == Some(409) && err.to_string().contains("already in progress") => Ok(()),
        Err(err) => Err(engine(&format!("removing the container {container}"), &err)),
    }
}

fn status(err: &EngineError) -> Option<u16> {
    match err {
        EngineError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

fn engine(doing: &str, err: &EngineError) -> SandboxError {
    SandboxError::Backend(format!("Docker engine: {doing}: {err}"))
}

fn unreachable(host: &str, err: &EngineError) -> SandboxError {
    SandboxError::Backend(format!("cannot reach the Docker engine at {host}: {err}"))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests;
