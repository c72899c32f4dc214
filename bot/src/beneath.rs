//! Opening resolved paths relative to a directory handle, one component at a time, never following a
//! symlink: what keeps the file tools inside the workspace while a process in the sandbox swaps its
//! directories for symlinks under them.
//!
//! `Workspace::resolve_*` canonicalises a path the model gave (and explains refusals); what it returns
//! has no symlink and no `..` left in it. The tools then open that path here, from the root's handle,
//! each component with `O_NOFOLLOW` (directories as `O_PATH | O_DIRECTORY`). If anything along the
//! way turned into a symlink since the path was resolved, the open fails instead of following it:
//! the check and the use are one step, whatever races it.

use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, openat, readlinkat};
use nix::sys::stat::{Mode, mkdirat};

/// The errors an open through a path that changed under us gives: a symlink where a directory or
/// file was (`ELOOP` at the end, `ENOTDIR` on the way).
fn changed(err: Errno) -> io::Error {
    match err {
        Errno::ELOOP | Errno::ENOTDIR => io::Error::new(
            io::ErrorKind::PermissionDenied,
            "a symlink appeared in the path while it was being opened; refused (something in the sandbox is \
             changing the working tree)",
        ),
        other => io::Error::from(other),
    }
}

/// A directory opened once by the host (`O_PATH`), under which every open happens.
#[derive(Debug)]
pub(crate) struct Beneath {
    fd: OwnedFd,
}

/// How to open the last component.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Open {
    /// A handle for metadata only (`O_PATH`): works on files, directories and anything else.
    Path,
    /// A file or directory for reading.
    Read,
    /// A file for writing: created (mode 0666 less the umask) or truncated.
    Write,
}

impl Beneath {
    /// Opens the directory at `dir` (a path the host chose, not one from the repository).
    pub(crate) fn open(dir: &Path) -> io::Result<Self> {
        let fd = nix::fcntl::open(
            dir,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Beneath { fd })
    }

    /// Opens `relative` (plain names only: no `..`, no root) below this directory.
    pub(crate) fn open_at(&self, relative: &Path, how: Open) -> io::Result<File> {
        let names = names(relative)?;
        let Some((last, dirs)) = names.split_last() else {
            return self.open_last(self.fd.as_fd(), OsStr::new("."), how);
        };
        let parent = self.walk(dirs, false)?;
        self.open_last(parent.as_ref().map_or(self.fd.as_fd(), |fd| fd.as_fd()), last, how)
    }

    /// The bytes of the regular file `relative`; an error for anything else (a directory, a FIFO,
    /// a symlink) and for a file of more than `limit` bytes (never a part of one).
    pub(crate) fn read_regular(&self, relative: &Path, limit: u64) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let file = self.open_at(relative, Open::Read)?;
        if !file.metadata()?.is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
        }
        let mut bytes = Vec::new();
        file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > limit {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!("larger than {limit} bytes"),
            ));
        }
        Ok(bytes)
    }

    /// Metadata of `relative` itself (a symlink's own, were one there).
    pub(crate) fn metadata(&self, relative: &Path) -> io::Result<Metadata> {
        self.open_at(relative, Open::Path)?.metadata()
    }

    /// The target of the symlink `relative`.
    pub(crate) fn read_link(&self, relative: &Path) -> io::Result<PathBuf> {
        let names = names(relative)?;
        let Some((last, dirs)) = names.split_last() else {
            return Err(io::Error::from(Errno::EINVAL));
        };
        let parent = self.walk(dirs, false)?;
        let target: OsString = readlinkat(parent.as_ref().map_or(self.fd.as_fd(), |fd| fd.as_fd()), *last)?;
        Ok(PathBuf::from(target))
    }

    /// Writes `content` to `relative`, creating the directories on the way.
    pub(crate) fn write(&self, relative: &Path, content: &[u8]) -> io::Result<()> {
        use std::io::Write;

        let names = names(relative)?;
        let Some((last, dirs)) = names.split_last() else {
            return Err(io::Error::from(Errno::EISDIR));
        };
        let parent = self.walk(dirs, true)?;
        let mut file = self.open_last(
            parent.as_ref().map_or(self.fd.as_fd(), |fd| fd.as_fd()),
            last,
            Open::Write,
        )?;
        file.write_all(content)?;
        file.flush()
    }

    /// The directory `dirs` leads to (`None`: this one), each step without following a symlink;
    /// missing directories are created when `create` says so.
    fn walk(&self, dirs: &[&OsStr], create: bool) -> io::Result<Option<OwnedFd>> {
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let mut current: Option<OwnedFd> = None;
        for name in dirs {
            let at: BorrowedFd<'_> = current.as_ref().map_or(self.fd.as_fd(), |fd| fd.as_fd());
            let next = match openat(at, *name, flags, Mode::empty()) {
                Err(Errno::ENOENT) if create => {
                    match mkdirat(at, *name, Mode::from_bits_truncate(0o777)) {
                        Ok(()) | Err(Errno::EEXIST) => {}
                        Err(err) => return Err(err.into()),
                    }
                    openat(at, *name, flags, Mode::empty()).map_err(changed)?
                }
                other => other.map_err(changed)?,
            };
            current = Some(next);
        }
        Ok(current)
    }

    fn open_last(&self, at: BorrowedFd<'_>, name: &OsStr, how: Open) -> io::Result<File> {
        let base = OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let (flags, mode) = match how {
            Open::Path => (base | OFlag::O_PATH, Mode::empty()),
            // O_NONBLOCK: a FIFO planted in the repository must not block the open; regular files
            // and directories ignore it.
            Open::Read => (base | OFlag::O_RDONLY | OFlag::O_NONBLOCK, Mode::empty()),
            Open::Write => (
                base | OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_NONBLOCK,
                Mode::from_bits_truncate(0o666),
            ),
        };
        let fd = openat(at, name, flags, mode).map_err(changed)?;
        let file = File::from(fd);
        if matches!(how, Open::Read | Open::Write) {
            // Back to blocking reads and writes for regular files (the flag only guarded the open).
            let fd = file.as_fd();
            let current = OFlag::from_bits_truncate(nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL)?);
            nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETFL(current - OFlag::O_NONBLOCK))?;
        }
        Ok(file)
    }
}

/// The names of a relative path; anything but plain names (`..`, a root, `.` inside) is refused,
/// since resolved paths never hold them.
fn names(relative: &Path) -> io::Result<Vec<&OsStr>> {
    relative
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "only plain names may be opened below the workspace",
            )),
        })
        .collect()
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use std::fs;
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, symlink};

    use super::*;

    #[test]
    fn opens_reads_and_writes_plain_paths() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("a/b")).unwrap();
        fs::write(dir.path().join("a/b/c.txt"), "hello").unwrap();
        let beneath = Beneath::open(dir.path()).unwrap();
        let mut text = String::new();
        beneath
            .open_at(Path::new("a/b/c.txt"), Open::Read)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "hello");
        assert!(beneath.metadata(Path::new("a/b")).unwrap().is_dir());
        assert!(beneath.metadata(Path::new("")).unwrap().is_dir());
        beneath.write(Path::new("x/y/z.txt"), b"new").unwrap();
        assert_eq!(fs::read_to_string(dir.path().join("x/y/z.txt")).unwrap(), "new");
        beneath.write(Path::new("a/b/c.txt"), b"hi").unwrap();
        assert_eq!(fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(), "hi");
        // Whole regular files only: never a directory, never a part of a file.
        assert_eq!(beneath.read_regular(Path::new("a/b/c.txt"), 2).unwrap(), b"hi");
        let err = beneath.read_regular(Path::new("a/b/c.txt"), 1).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge, "{err}");
        assert_eq!(
            beneath.read_regular(Path::new("a/b"), 100).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn never_follows_a_symlink_anywhere_in_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        fs::create_dir_all(root.join("real")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("secret"), "s").unwrap();
        fs::write(root.join("real/file"), "f").unwrap();
        symlink(&outside, root.join("out")).unwrap();
        symlink("real", root.join("inside")).unwrap();
        symlink(outside.join("secret"), root.join("direct")).unwrap();
        let beneath = Beneath::open(&root).unwrap();

        for path in ["out/secret", "inside/file", "direct"] {
            let err = beneath.open_at(Path::new(path), Open::Read).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{path}: {err}");
        }
        assert!(beneath.write(Path::new("out/new"), b"x").is_err());
        assert!(beneath.write(Path::new("direct"), b"x").is_err());
        assert!(beneath.write(Path::new("out/sub/new"), b"x").is_err());
        assert!(!outside.join("new").exists() && !outside.join("sub").exists());
        assert_eq!(fs::read_to_string(outside.join("secret")).unwrap(), "s");
        assert!(beneath.open_at(Path::new("../outside/secret"), Open::Read).is_err());
        assert!(beneath.open_at(Path::new("/etc/passwd"), Open::Read).is_err());
        assert_eq!(beneath.read_link(Path::new("out")).unwrap(), outside);
    }

    #[test]
    fn a_fifo_does_not_block_the_open() {
        let dir = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&dir.path().join("fifo"), Mode::from_bits_truncate(0o644)).unwrap();
        let beneath = Beneath::open(dir.path()).unwrap();
        let file = beneath.open_at(Path::new("fifo"), Open::Read).unwrap();
        assert!(file.metadata().unwrap().file_type().is_fifo());
        assert!(beneath.read_regular(Path::new("fifo"), 100).is_err());
    }
}
