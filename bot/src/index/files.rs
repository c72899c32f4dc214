//! Which files of a checkout the index reads, and reading them: the files of an indexed language
//! ([`Lang::of`]) that `.gitignore` (and `.ignore`, `.git/info/exclude`) does not exclude, outside
//! vendored and build trees (`vendor/`, `node_modules/`, `target/`, `third_party/`), at most
//! [`MAX_FILE_BYTES`], not binary and not minified — the limits `grep` keeps, so the index sees
//! what the agent can search. Symlinks are never followed, and files are read below the checkout's
//! directory handle one component at a time ([`Beneath`]): a process in the sandbox that swaps a
//! directory for a symlink while the index reads gets a refusal, not a file outside the checkout.

use std::path::Path;

use super::Lang;
use crate::beneath::Beneath;

/// Files larger than this are left out (generated code, data).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// At most this many files are indexed: a repository (or a command in the sandbox) that makes
/// millions of source files gets an index of the first ones found, and says so.
pub const MAX_FILES: usize = 200_000;

/// Directories of other people's code or of build output, wherever they are.
const LEFT_OUT_DIRS: &[&str] = &[
    ".git",
    "vendor",
    "node_modules",
    "target",
    "third_party",
    "third-party",
    "bower_components",
    "__pycache__",
];

/// A file the index would read, as the walk saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// Relative to the checkout, `/`-separated.
    pub path: String,
    pub lang: Lang,
    pub size: u64,
    /// When the file last changed ([`changed_ns`]): with the size, what says a file changed
    /// without reading it.
    pub changed_ns: i128,
}

/// The file's status-change time (ctime) in nanoseconds since the epoch. Every write moves it, and
/// unlike the modification time no process can set it back: a command in the sandbox that rewrites
/// a file and restores its size and mtime still shows as a change.
pub fn changed_ns(meta: &std::fs::Metadata) -> i128 {
    use std::os::unix::fs::MetadataExt;
    i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec())
}

/// The files of a checkout the index reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// In path order.
    pub files: Vec<Seen>,
    /// More files than `max_files` were found: these are the first ones the walk met.
    pub truncated: bool,
}

/// Every file of `root` the index reads, up to `max_files` of them.
pub fn list(root: &Path, max_files: usize) -> Listing {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .require_git(false)
        // The host user's global excludes say nothing about the repository.
        .git_global(false)
        .follow_links(false)
        .filter_entry(|entry| {
            !(entry.file_type().is_some_and(|t| t.is_dir())
                && entry
                    .file_name()
                    .to_str()
                    .is_some_and(|name| LEFT_OUT_DIRS.contains(&name)))
        });
    let mut seen = Vec::new();
    let mut truncated = false;
    for entry in builder.build().flatten() {
        // Symlinks are left out (a file type of `None` is the walk's root).
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(lang) = Lang::of(entry.path()) else {
            continue;
        };
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(path) = relative.to_str().map(|p| p.replace('\\', "/")) else {
            continue;
        };
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        if meta.len() > MAX_FILE_BYTES {
            continue;
        }
        if seen.len() == max_files {
            truncated = true;
            break;
        }
        seen.push(Seen {
            path,
            lang,
            size: meta.len(),
            changed_ns: changed_ns(&meta),
        });
    }
    seen.sort_by(|a, b| a.path.cmp(&b.path));
    Listing { files: seen, truncated }
}

/// The contents of `path` (relative to `beneath`'s directory), or `None` when it cannot be read as
/// a regular file within the size limit, or is binary (a NUL byte near its start) or minified
/// (lines too long to be written by hand).
pub(crate) fn read(beneath: &Beneath, path: &str) -> Option<Vec<u8>> {
    let bytes = beneath.read_regular(Path::new(path), MAX_FILE_BYTES).ok()?;
    let head = &bytes[..bytes.len().min(8 * 1024)];
    if head.contains(&0) || minified(&bytes) {
        return None;
    }
    Some(bytes)
}

/// A file whose lines average more than 300 bytes over its first 64 KiB, with one over 5,000: what
/// a minifier or a bundler writes.
fn minified(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(64 * 1024)];
    if head.len() < 5_000 {
        return false;
    }
    let lines = head.split(|b| *b == b'\n');
    let (mut count, mut longest) = (0usize, 0usize);
    for line in lines {
        count += 1;
        longest = longest.max(line.len());
    }
    longest > 5_000 && head.len() / count.max(1) > 300
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn ignored_vendored_binary_minified_and_linked_files_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |path: &str, text: &[u8]| {
            let full = root.join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        };
        write("src/lib.rs", b"fn a() {}\n");
        write("app/main.py", b"def b(): pass\n");
        write("README.md", b"# readme\n");
        write("vendor/dep/x.go", b"package x\n");
        write("web/node_modules/m/index.js", b"module.exports = 1;\n");
        write("target/debug/build.rs", b"fn c() {}\n");
        write("generated/skip.rs", b"fn d() {}\n");
        write(".gitignore", b"generated/\n");
        write("bin/blob.js", b"var a = 1;\0\0\0");
        write(
            "dist/app.min.js",
            &[b"x".repeat(6_000).as_slice(), b"\n".as_slice()].concat(),
        );
        std::os::unix::fs::symlink("/etc/passwd", root.join("src/passwd.rs")).unwrap();
        let listing = list(root, MAX_FILES);
        assert!(!listing.truncated);
        let seen: Vec<String> = listing.files.into_iter().map(|s| s.path).collect();
        assert_eq!(seen, ["app/main.py", "bin/blob.js", "dist/app.min.js", "src/lib.rs"]);
        let listing = list(root, 2);
        assert!(listing.truncated);
        assert_eq!(listing.files.len(), 2);
        let beneath = Beneath::open(root).unwrap();
        assert!(read(&beneath, "src/lib.rs").is_some());
        assert!(read(&beneath, "bin/blob.js").is_none(), "binary");
        assert!(read(&beneath, "dist/app.min.js").is_none(), "minified");
        assert!(read(&beneath, "src/passwd.rs").is_none(), "a symlink is not followed");
        assert!(read(&beneath, "missing.rs").is_none());
    }
}
