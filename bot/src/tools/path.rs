//! Paths the model names, resolved safely: the workspace root and the extra read-only roots, the
//! checks that keep every file tool inside them even when a hostile repository plants symlinks, and
//! the opening of resolved paths through directory handles (`crate::beneath`), so that a symlink swapped
//! in after the check is refused rather than followed.

use std::fs::{File, Metadata};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::ToolError;
use crate::beneath::{Beneath, Open};
use crate::workspace::is_git_dir;

/// The job's checkout and the other directories tools may read (the run directory, where large tool
/// results are saved).
#[derive(Debug, Clone)]
pub struct Workspace {
    /// Canonical.
    root: PathBuf,
    /// The root, opened once: every file of the workspace is opened below it.
    root_dir: Arc<Beneath>,
    /// Canonical, with their handles; readable, never writable.
    read_roots: Vec<(PathBuf, Arc<Beneath>)>,
    /// Where the sandbox mounts the checkout (`/workspace` in a container): absolute paths the model
    /// copies from command output are read as paths in the checkout.
    mount_point: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

impl Workspace {
    /// The checkout at `root`, which must exist.
    pub fn new(root: &Path) -> io::Result<Self> {
        let root = root.canonicalize()?;
        Ok(Workspace {
            root_dir: Arc::new(Beneath::open(&root)?),
            root,
            read_roots: Vec::new(),
            mount_point: None,
        })
    }

    /// Where commands see the checkout, when that is not where it is on the host.
    pub fn with_mount_point(mut self, dir: &Path) -> Self {
        self.mount_point = Some(dir.to_owned()).filter(|dir| dir != &self.root);
        self
    }

    /// Adds a directory the tools may read but not write; it must exist.
    pub fn with_read_root(mut self, dir: &Path) -> io::Result<Self> {
        let dir = dir.canonicalize()?;
        if !self.read_roots.iter().any(|(root, _)| root == &dir) {
            let handle = Arc::new(Beneath::open(&dir)?);
            self.read_roots.push((dir, handle));
        }
        Ok(self)
    }

    /// The handle a resolved path is opened below and the path relative to it: the workspace's for
    /// its paths, a read root's (for reading only) for theirs.
    fn beneath<'a>(&'a self, path: &'a Path, write: bool) -> io::Result<(&'a Beneath, &'a Path)> {
        if let Ok(relative) = path.strip_prefix(&self.root) {
            if write && relative.components().any(|c| is_git_dir(c.as_os_str())) {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "inside .git, which pitcrew manages",
                ));
            }
            return Ok((&self.root_dir, relative));
        }
        if !write {
            for (root, handle) in &self.read_roots {
                if let Ok(relative) = path.strip_prefix(root) {
                    return Ok((handle, relative));
                }
            }
        }
        Err(io::Error::new(io::ErrorKind::PermissionDenied, "outside the workspace"))
    }

    /// Opens a path `resolve_read` returned for reading (a file or a directory), following no
    /// symlink on the way: if the tree changed since it was resolved, this fails instead.
    pub fn open(&self, path: &Path) -> io::Result<File> {
        let (beneath, relative) = self.beneath(path, false)?;
        beneath.open_at(relative, Open::Read)
    }

    /// The metadata of a resolved path, looked up the same way (a symlink's own, were one there).
    pub fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        let (beneath, relative) = self.beneath(path, false)?;
        beneath.metadata(relative)
    }

    /// The target of the symlink at a path inside the workspace or a read root, its directories
    /// opened without following symlinks.
    pub fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        let (beneath, relative) = self.beneath(path, false)?;
        beneath.read_link(relative)
    }

    /// Writes a path `resolve_write` returned, creating its directories; never inside `.git`,
    /// never through a symlink.
    pub fn write(&self, path: &Path, content: &[u8]) -> io::Result<()> {
        let (beneath, relative) = self.beneath(path, true)?;
        beneath.write(relative, content)
    }

    /// Whether a walker's entry is what the tree below the root really holds at `path`: the entry's
    /// inode (from the directory listing) is the one reached by opening `path` without following
    /// any symlink. A directory swapped for a symlink while the walker read it makes its listing
    /// come from elsewhere; such entries fail here and are dropped. Returns the file opened for
    /// reading when `read` asks for it (a regular file's content), else a metadata handle.
    pub fn confirm(&self, path: &Path, ino: Option<u64>, read: bool) -> Option<File> {
        use std::os::unix::fs::MetadataExt;

        let (beneath, relative) = self.beneath(path, false).ok()?;
        let file = beneath
            .open_at(relative, if read { Open::Read } else { Open::Path })
            .ok()?;
        let meta = file.metadata().ok()?;
        (ino == Some(meta.ino())).then_some(file)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path the model gave for reading: inside the workspace or a read root.
    pub fn resolve_read(&self, path: &str) -> Result<PathBuf, ToolError> {
        self.resolve(path, Access::Read)
    }

    /// Resolves a path the model gave for writing: inside the workspace only, and never inside `.git`.
    pub fn resolve_write(&self, path: &str) -> Result<PathBuf, ToolError> {
        let resolved = self.resolve(path, Access::Write)?;
        // Checked on the resolved path, so a symlink to `.git` is caught too. Any `.git` counts: a
        // submodule's is no more ours to write than the top-level one.
        let relative = resolved.strip_prefix(&self.root).unwrap_or(&resolved);
        if relative
            .components()
            .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
        {
            return Err(ToolError::respond(format!(
                "`{path}` is inside .git, which pitcrew manages; it cannot be written"
            )));
        }
        Ok(resolved)
    }

    /// A path for messages: relative to the root when inside it (`.` for the root itself), else as is.
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
            Ok(relative) => relative.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }

    fn allowed(&self, path: &Path, access: Access) -> bool {
        path.starts_with(&self.root)
            || (access == Access::Read && self.read_roots.iter().any(|(root, _)| path.starts_with(root)))
    }

    fn resolve(&self, path: &str, access: Access) -> Result<PathBuf, ToolError> {
        if path.trim().is_empty() {
            return Err(ToolError::respond("the path is empty"));
        }
        if path.contains('\0') {
            return Err(ToolError::respond("the path contains a NUL byte"));
        }
        let outside = || ToolError::respond(format!("`{path}` is outside the workspace"));
        let given = Path::new(path);
        let joined = if given.is_absolute() {
            match self
                .mount_point
                .as_ref()
                .and_then(|mount| given.strip_prefix(mount).ok())
            {
                // Checked like any relative path below: `/workspace/../etc` still escapes.
                Some(rest) => self.root.join(rest),
                None => given.to_path_buf(),
            }
        } else {
            self.root.join(given)
        };
        let lexical = normalize(&joined).ok_or_else(outside)?;
        if !self.allowed(&lexical, access) {
            return Err(outside());
        }

        // The deepest ancestor that exists (following symlinks), canonicalized; the rest of the path
        // does not exist yet and so cannot hide a symlink, except for a dangling or looping one right
        // below that ancestor, which is checked next.
        let (existing, canonical) = lexical
            .ancestors()
            .find_map(|ancestor| Some((ancestor, ancestor.canonicalize().ok()?)))
            .ok_or_else(outside)?;
        let rest = lexical.strip_prefix(existing).unwrap_or(Path::new("")).to_path_buf();

        if !self.allowed(&canonical, access) {
            let is_symlink = std::fs::symlink_metadata(&lexical).is_ok_and(|m| m.file_type().is_symlink());
            return Err(ToolError::respond(match std::fs::read_link(&lexical) {
                Ok(link) if is_symlink && rest.as_os_str().is_empty() => {
                    format!("`{path}` is a symlink to {}, outside the workspace", link.display())
                }
                _ => {
                    let target = if rest.as_os_str().is_empty() {
                        canonical
                    } else {
                        canonical.join(&rest)
                    };
                    format!(
                        "`{path}` leads through a symlink to {}, outside the workspace",
                        target.display()
                    )
                }
            }));
        }

        if let Some(first) = rest.components().next() {
            let shown = self.display(existing);
            if !canonical.is_dir() {
                return Err(ToolError::respond(format!("`{shown}` is a file, not a directory")));
            }
            let child = existing.join(first);
            if std::fs::symlink_metadata(&child).is_ok_and(|m| m.file_type().is_symlink()) {
                // It exists but could not be canonicalized: a dangling or looping symlink.
                let shown = self.display(&child);
                return Err(ToolError::respond(match std::fs::read_link(&child) {
                    Ok(target) if is_loop(&child) => {
                        format!("`{shown}` is a symlink loop (it points to {})", target.display())
                    }
                    Ok(target) => format!("`{shown}` is a symlink to {}, which does not exist", target.display()),
                    Err(_) => format!("`{shown}` is a symlink that cannot be read"),
                }));
            }
        }
        Ok(if rest.as_os_str().is_empty() {
            canonical
        } else {
            canonical.join(rest)
        })
    }
}

/// Resolves `.` and `..` without touching the filesystem; `None` when `..` climbs above `/`.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    return None;
                }
            }
            Component::Normal(name) => out.push(name),
        }
    }
    Some(out)
}

fn is_loop(path: &Path) -> bool {
    matches!(std::fs::metadata(path), Err(err) if err.raw_os_error() == Some(nix::errno::Errno::ELOOP as i32))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use super::*;

    fn setup() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        fs::create_dir_all(root.join("src")).unwrap();
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
        fs::write(root.join(".git/config"), "[core]\n").unwrap();
        let ws = Workspace::new(&root).unwrap();
        (dir, ws)
    }

    fn err(result: Result<PathBuf, ToolError>) -> String {
        match result.unwrap_err() {
            ToolError::Respond(message) => message,
            ToolError::Fatal(message) => panic!("fatal: {message}"),
        }
    }

    #[test]
    fn relative_and_absolute_paths_inside_resolve() {
        let (_dir, ws) = setup();
        let main = ws.root().join("src/main.rs");
        assert_eq!(ws.resolve_read("src/main.rs").unwrap(), main);
        assert_eq!(ws.resolve_read("./src/../src/main.rs").unwrap(), main);
        assert_eq!(ws.resolve_read(main.to_str().unwrap()).unwrap(), main);
        assert_eq!(ws.resolve_read(".").unwrap(), ws.root());
        assert_eq!(
            ws.resolve_write("new/dir/file.txt").unwrap(),
            ws.root().join("new/dir/file.txt")
        );
        assert_eq!(ws.display(&main), "src/main.rs");
        assert_eq!(ws.display(ws.root()), ".");
        assert_eq!(ws.display(Path::new("/etc/passwd")), "/etc/passwd");
    }

    #[test]
    fn escapes_are_refused() {
        let (_dir, ws) = setup();
        assert_eq!(err(ws.resolve_read("../x")), "`../x` is outside the workspace");
        assert_eq!(
            err(ws.resolve_read("src/../../x")),
            "`src/../../x` is outside the workspace"
        );
        assert_eq!(
            err(ws.resolve_read("/etc/passwd")),
            "`/etc/passwd` is outside the workspace"
        );
        assert_eq!(
            err(ws.resolve_write("/etc/passwd")),
            "`/etc/passwd` is outside the workspace"
        );
        assert_eq!(
            err(ws.resolve_read("/../../..")),
            "`/../../..` is outside the workspace"
        );
        assert_eq!(err(ws.resolve_read("")), "the path is empty");
        assert_eq!(err(ws.resolve_read("   ")), "the path is empty");
    }

    #[test]
    fn symlinks_outside_are_refused() {
        let (dir, ws) = setup();
        let outside = dir.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("secret"), "s").unwrap();
        symlink("/etc/passwd", ws.root().join("passwd")).unwrap();
        symlink(&outside, ws.root().join("link")).unwrap();
        symlink("..", ws.root().join("up")).unwrap();

        assert_eq!(
            err(ws.resolve_read("passwd")),
            "`passwd` is a symlink to /etc/passwd, outside the workspace"
        );
        assert_eq!(
            err(ws.resolve_write("passwd")),
            "`passwd` is a symlink to /etc/passwd, outside the workspace"
        );
        let message = err(ws.resolve_read("link/secret"));
        assert!(
            message.starts_with("`link/secret` leads through a symlink to "),
            "{message}"
        );
        assert!(message.ends_with("outside/secret, outside the workspace"), "{message}");
        assert!(err(ws.resolve_write("link/new")).contains("outside the workspace"));
        assert!(err(ws.resolve_write("link/a/b/c")).contains("outside the workspace"));
        assert!(err(ws.resolve_read("up/outside/secret")).contains("outside the workspace"));
        // Through the parent and back in: still inside, so fine.
        assert_eq!(
            ws.resolve_read("up/ws/src/main.rs").unwrap(),
            ws.root().join("src/main.rs")
        );
        assert!(err(ws.resolve_read("up")).contains("is a symlink to .., outside the workspace"));
    }

    #[test]
    fn symlinks_inside_resolve_to_their_target() {
        let (_dir, ws) = setup();
        symlink("src/main.rs", ws.root().join("alias")).unwrap();
        symlink("src", ws.root().join("code")).unwrap();
        assert_eq!(ws.resolve_read("alias").unwrap(), ws.root().join("src/main.rs"));
        assert_eq!(ws.resolve_write("code/new.rs").unwrap(), ws.root().join("src/new.rs"));
    }

    #[test]
    fn dangling_and_looping_symlinks_are_refused() {
        let (_dir, ws) = setup();
        symlink("/nonexistent/pitcrew/target", ws.root().join("dangling")).unwrap();
        symlink("loop_b", ws.root().join("loop_a")).unwrap();
        symlink("loop_a", ws.root().join("loop_b")).unwrap();
        assert_eq!(
            err(ws.resolve_write("dangling")),
            "`dangling` is a symlink to /nonexistent/pitcrew/target, which does not exist"
        );
        assert!(err(ws.resolve_read("dangling")).contains("does not exist"));
        assert_eq!(
            err(ws.resolve_write("loop_a")),
            "`loop_a` is a symlink loop (it points to loop_b)"
        );
        assert!(err(ws.resolve_read("loop_a/x")).contains("symlink loop"));
        assert_eq!(
            err(ws.resolve_write("src/main.rs/x")),
            "`src/main.rs` is a file, not a directory"
        );
    }

    #[test]
    fn git_is_readable_but_not_writable() {
        let (_dir, ws) = setup();
        assert!(ws.resolve_read(".git/config").is_ok());
        assert_eq!(
            err(ws.resolve_write(".git/config")),
            "`.git/config` is inside .git, which pitcrew manages; it cannot be written"
        );
        assert!(err(ws.resolve_write("vendor/lib/.git/HEAD")).contains("inside .git"));
        assert!(err(ws.resolve_write(".GIT/hooks/pre-commit")).contains("inside .git"));
        symlink(".git", ws.root().join("innocent")).unwrap();
        assert!(err(ws.resolve_write("innocent/hooks/pre-commit")).contains("inside .git"));
        assert!(err(ws.resolve_write(".git")).contains("inside .git"));
    }

    #[test]
    fn read_roots_are_readable_but_not_writable() {
        let (dir, ws) = setup();
        let run = dir.path().join("run");
        fs::create_dir_all(&run).unwrap();
        fs::write(run.join("result.txt"), "r").unwrap();
        let ws = ws.with_read_root(&run).unwrap();
        let result = run.canonicalize().unwrap().join("result.txt");
        assert_eq!(ws.resolve_read(result.to_str().unwrap()).unwrap(), result);
        assert_eq!(ws.display(&result), result.display().to_string());
        assert!(err(ws.resolve_write(result.to_str().unwrap())).contains("outside the workspace"));
    }

    #[test]
    fn paths_under_the_sandbox_mount_point_are_paths_in_the_checkout() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.txt"), "a").unwrap();
        let workspace = Workspace::new(dir.path())
            .unwrap()
            .with_mount_point(Path::new("/workspace"));
        let root = dir.path().canonicalize().unwrap();
        assert_eq!(workspace.resolve_read("/workspace/a.txt").unwrap(), root.join("a.txt"));
        assert_eq!(
            workspace.resolve_write("/workspace/new/b.txt").unwrap(),
            root.join("new/b.txt")
        );
        assert!(workspace.resolve_read("/workspace/../etc/passwd").is_err());
        assert!(workspace.resolve_read("/workspacex/a.txt").is_err());
        assert!(workspace.resolve_write("/workspace/.git/config").is_err());
    }
}
