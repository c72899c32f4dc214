//! Where the Docker engine sees this process's files. When pitcrew itself runs in a container (the
//! GitHub Action's step, `pitcrew serve` in its image) and starts sandboxes on the host's engine
//! through its socket, a path pitcrew sees is not a path the engine can bind-mount: the engine
//! needs the host side of the mount that holds it. The process's own container is found from
//! `/proc/self/mountinfo` (the engine bind-mounts the container's `hostname` and `resolv.conf` from
//! `…/containers/<id>/`) or `/proc/self/cgroup`, its mounts are read from the engine, and a path is
//! translated through the mount that holds it (the deepest one).

use std::path::{Path, PathBuf};

use bollard::Docker;

/// A path the Docker engine cannot mount: it is in this container's own file system.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{} is inside this container's own file system ({container}), which the Docker engine cannot mount into a \
     sandbox: put pitcrew's data directory on a volume or bind mount (in the Action, sandbox `docker` keeps \
     it under HOME, /github/home)",
    path.display()
)]
pub struct UnmountablePath {
    path: PathBuf,
    /// The container's short id.
    container: String,
}

/// How this process's paths map to the engine's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PathMap {
    /// `None`: not in a container of this engine; paths are the engine's own.
    container: Option<String>,
    /// (where the container sees it, where the host has it), deepest first.
    mounts: Vec<(PathBuf, PathBuf)>,
}

impl PathMap {
    /// Paths are the engine's own (pitcrew runs on the host).
    pub fn identity() -> Self {
        PathMap::default()
    }

    /// The mounts of container `container`: (destination, source) pairs.
    pub fn of_container(container: &str, mounts: Vec<(PathBuf, PathBuf)>) -> Self {
        let mut mounts = mounts;
        mounts.sort_by_key(|(destination, _)| std::cmp::Reverse(destination.components().count()));
        PathMap {
            container: Some(container.to_owned()),
            mounts,
        }
    }

    /// The engine's path for `path` (absolute, as this process sees it).
    pub fn host_path(&self, path: &Path) -> Result<PathBuf, UnmountablePath> {
        let Some(container) = &self.container else {
            return Ok(path.to_owned());
        };
        for (destination, source) in &self.mounts {
            if let Ok(rest) = path.strip_prefix(destination) {
                return Ok(if rest.as_os_str().is_empty() {
                    source.clone()
                } else {
                    source.join(rest)
                });
            }
        }
        Err(UnmountablePath {
            path: path.to_owned(),
            container: container.chars().take(12).collect(),
        })
    }
}

/// This process's container id, from `/proc/self/mountinfo` text (the engine's files of the
/// container) or else `/proc/self/cgroup` text (`…/docker/<id>`).
pub fn own_container_id(mountinfo: &str, cgroup: &str) -> Option<String> {
    let hex64 = |s: &str| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
    for line in mountinfo.lines() {
        // Field 4 is the mounted path within its file system.
        let Some(root) = line.split_whitespace().nth(3) else {
            continue;
        };
        let mut parts = root.rsplit('/');
        let file = parts.next().unwrap_or("");
        let id = parts.next().unwrap_or("");
        let dir = parts.next().unwrap_or("");
        if matches!(file, "hostname" | "resolv.conf" | "hosts") && dir == "containers" && hex64(id) {
            return Some(id.to_owned());
        }
    }
    cgroup.lines().find_map(|line| {
        let path = line.rsplit(':').next()?;
        path.split('/').rev().find(|s| hex64(s)).map(str::to_owned)
    })
}

/// The map for this process on `docker`'s engine: identity on the host, the container's mounts
/// inside one. A container the engine does not know (another engine's, a remote engine) is taken
/// as the host.
pub async fn discover(docker: &Docker) -> PathMap {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let Some(id) = own_container_id(&read("/proc/self/mountinfo"), &read("/proc/self/cgroup")) else {
        return PathMap::identity();
    };
    match docker.inspect_container(&id, None).await {
        Ok(container) => {
            let mounts = container
                .mounts
                .unwrap_or_default()
                .into_iter()
                .filter_map(|m| Some((PathBuf::from(m.destination?), PathBuf::from(m.source?))))
                .collect();
            tracing::info!(container = %id, "pitcrew runs in a container: sandbox mounts go through its mounts");
            PathMap::of_container(&id, mounts)
        }
        Err(error) => {
            tracing::debug!(%error, "this container is not on the sandbox's engine; paths are used as they are");
            PathMap::identity()
        }
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    /// Lines of a real container's `/proc/self/mountinfo` and `/proc/self/cgroup` (engine 20.10).
    const MOUNTINFO: &str = "71 52 0:50 / / rw,relatime master:28 - overlay overlay rw\n\
        88 71 254:0 /var/lib/docker/containers/25440e319409a00294c939a6b3e54e32a83216ada902b3f08447d3a3674102db/resolv.conf /etc/resolv.conf rw,relatime - ext4 /dev/vda rw,discard\n\
        89 71 254:0 /var/lib/docker/containers/25440e319409a00294c939a6b3e54e32a83216ada902b3f08447d3a3674102db/hostname /etc/hostname rw,relatime - ext4 /dev/vda rw,discard\n";
    const CGROUP: &str = "9:name=systemd:/docker/d0a2f67d12f006d3ceae97462cb796b515293a7e7650651a0b2a73f696e9fc02\n\
        8:pids:/docker/d0a2f67d12f006d3ceae97462cb796b515293a7e7650651a0b2a73f696e9fc02\n";

    #[test]
    fn the_container_is_found_from_its_mounts_or_its_cgroup() {
        assert_eq!(
            own_container_id(MOUNTINFO, CGROUP).as_deref(),
            Some("25440e319409a00294c939a6b3e54e32a83216ada902b3f08447d3a3674102db")
        );
        assert_eq!(
            own_container_id("", CGROUP).as_deref(),
            Some("d0a2f67d12f006d3ceae97462cb796b515293a7e7650651a0b2a73f696e9fc02")
        );
        let host = "22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n";
        assert_eq!(own_container_id(host, "0::/init.scope\n"), None);
    }

    #[test]
    fn paths_go_through_the_deepest_mount_and_unmounted_ones_are_refused() {
        let map = PathMap::of_container(
            "25440e319409",
            vec![
                (
                    PathBuf::from("/github/home"),
                    PathBuf::from("/home/runner/work/_temp/_github_home"),
                ),
                (PathBuf::from("/github"), PathBuf::from("/srv/github")),
                (
                    PathBuf::from("/github/workspace"),
                    PathBuf::from("/home/runner/work/app/app"),
                ),
            ],
        );
        assert_eq!(
            map.host_path(Path::new("/github/home/.pitcrew/copies/a/1")).unwrap(),
            PathBuf::from("/home/runner/work/_temp/_github_home/.pitcrew/copies/a/1")
        );
        assert_eq!(
            map.host_path(Path::new("/github/workspace")).unwrap(),
            PathBuf::from("/home/runner/work/app/app")
        );
        assert_eq!(
            map.host_path(Path::new("/github/other")).unwrap(),
            PathBuf::from("/srv/github/other")
        );
        let err = map.host_path(Path::new("/tmp/pitcrew/copies")).unwrap_err().to_string();
        assert!(
            err.contains("/tmp/pitcrew/copies is inside this container's own file system (25440e319409)"),
            "{err}"
        );
        assert_eq!(
            PathMap::identity().host_path(Path::new("/tmp/x")).unwrap(),
            PathBuf::from("/tmp/x")
        );
    }
}
