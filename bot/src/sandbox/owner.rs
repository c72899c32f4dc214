//! Who the sandbox's processes are: never root, and never pitcrew's own user when pitcrew can arrange
//! it. A pitcrew running as root hands the working tree to a fixed unprivileged user (65532) before
//! the container starts and takes it back after the container is gone; one running as another user
//! cannot change owners, so its sandbox runs as the working tree's owner.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The sandbox's user and group when pitcrew runs as root (distroless's `nonroot`).
pub const SANDBOX_UID: u32 = 65532;
pub const SANDBOX_GID: u32 = 65532;

/// The user the container runs as, and the owner to give the tree back to afterwards (when it was
/// handed over).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handover {
    pub user: (u32, u32),
    pub restore: Option<(u32, u32)>,
}

/// Picks the sandbox's user for the working tree at `root` (whose metadata is `meta`), handing
/// the tree over when pitcrew is root. Nothing runs in the tree yet: the walk cannot be raced.
pub fn hand_over(root: &Path, meta: &std::fs::Metadata) -> io::Result<Handover> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(Handover {
            user: (meta.uid(), meta.gid()),
            restore: None,
        });
    }
    let owner = (meta.uid(), meta.gid());
    chown_tree(root, |_| true, (SANDBOX_UID, SANDBOX_GID))?;
    Ok(Handover {
        user: (SANDBOX_UID, SANDBOX_GID),
        restore: Some(owner),
    })
}

/// Gives back what the sandbox's user owns below `root` (what it was handed and what it made) to
/// `owner`. Called once the container is gone.
pub fn take_back(root: &Path, owner: (u32, u32)) -> io::Result<()> {
    chown_tree(root, |meta| meta.uid() == SANDBOX_UID, owner)
}

/// `lchown`s `root` and everything below it that `pick` selects, never following a symlink and
/// never entering the top-level `.git` (it stays pitcrew's; the container mounts it read-only).
fn chown_tree(root: &Path, pick: impl Fn(&std::fs::Metadata) -> bool, to: (u32, u32)) -> io::Result<()> {
    let mut pending = vec![root.to_path_buf()];
    while let Some(path) = pending.pop() {
        let meta = std::fs::symlink_metadata(&path)?;
        if pick(&meta) {
            std::os::unix::fs::lchown(&path, Some(to.0), Some(to.1))?;
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                let entry = entry?;
                if path == root && crate::workspace::is_git_dir(&entry.file_name()) {
                    continue;
                }
                pending.push(entry.path());
            }
        }
    }
    Ok(())
}
