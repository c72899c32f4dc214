//! What this run has read: a fingerprint of each file `read_file` showed the model, so `edit_file`
//! and `write_file` refuse to change a file the model has not seen, or one that changed since.

use std::collections::HashMap;
use std::fs::File;
use std::hash::{DefaultHasher, Hasher};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use super::ToolError;

/// A file's size, modification time and a hash of its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    pub len: u64,
    pub modified: Option<SystemTime>,
    pub hash: u64,
}

impl Fingerprint {
    /// The fingerprint of content already in memory; `modified` from the file's metadata.
    pub fn of_bytes(bytes: &[u8], modified: Option<SystemTime>) -> Self {
        let mut hasher = ContentHasher::default();
        hasher.update(bytes);
        hasher.finish(modified)
    }

    /// Reads the whole of an open file, in chunks.
    pub fn of_file(mut file: File) -> io::Result<Self> {
        let modified = file.metadata()?.modified().ok();
        let mut hasher = ContentHasher::default();
        let mut buf = vec![0; 64 * 1024];
        loop {
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => hasher.update(&buf[..n]),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
        Ok(hasher.finish(modified))
    }

    /// Whether the content is the same. The modification time is not compared: a `touch` or a
    /// checkout that rewrites identical bytes does not make what the model saw wrong.
    pub fn same_content(&self, other: &Fingerprint) -> bool {
        self.len == other.len && self.hash == other.hash
    }
}

/// Hashes content fed in chunks; the result does not depend on how it was cut.
#[derive(Default)]
pub struct ContentHasher {
    hasher: DefaultHasher,
    len: u64,
}

impl ContentHasher {
    pub fn update(&mut self, bytes: &[u8]) {
        self.hasher.write(bytes);
        self.len += bytes.len() as u64;
    }

    pub fn finish(self, modified: Option<SystemTime>) -> Fingerprint {
        Fingerprint {
            len: self.len,
            modified,
            hash: self.hasher.finish(),
        }
    }
}

/// The fingerprints of the files read in this run, by canonical path.
#[derive(Debug, Default)]
pub struct ReadTracker {
    files: Mutex<HashMap<PathBuf, Fingerprint>>,
}

impl ReadTracker {
    pub fn record(&self, path: PathBuf, fingerprint: Fingerprint) {
        self.lock().insert(path, fingerprint);
    }

    pub fn get(&self, path: &Path) -> Option<Fingerprint> {
        self.lock().get(path).copied()
    }

    pub fn forget(&self, path: &Path) {
        self.lock().remove(path);
    }

    /// Refuses a change to `path` unless it was read in this run and is unchanged since; `shown` is
    /// the path for the message.
    pub fn check_unchanged(&self, path: &Path, current: &Fingerprint, shown: &str) -> Result<(), ToolError> {
        match self.get(path) {
            None => Err(ToolError::respond(format!(
                "`{shown}` has not been read in this run; read it first with read_file, so you change what is \
                 really there"
            ))),
            Some(seen) if !seen.same_content(current) => Err(ToolError::respond(format!(
                "`{shown}` changed since you read it (now {} bytes, was {}); read it again with read_file before \
                 changing it",
                current.len, seen.len
            ))),
            Some(_) => Ok(()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Fingerprint>> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The modification time of a path of the workspace, if the platform has one.
pub(crate) fn modified(workspace: &super::Workspace, path: &Path) -> Option<SystemTime> {
    workspace.metadata(path).and_then(|m| m.modified()).ok()
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn hashing_does_not_depend_on_chunking() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let whole = Fingerprint::of_bytes(&data, None);
        let mut hasher = ContentHasher::default();
        for chunk in data.chunks(7) {
            hasher.update(chunk);
        }
        assert_eq!(hasher.finish(None), whole);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, &data).unwrap();
        assert!(
            Fingerprint::of_file(File::open(&path).unwrap())
                .unwrap()
                .same_content(&whole)
        );
        assert!(!Fingerprint::of_bytes(b"other", None).same_content(&whole));
    }

    #[test]
    fn tracker_refuses_unread_and_changed_files() {
        let tracker = ReadTracker::default();
        let path = Path::new("/ws/a.txt");
        let seen = Fingerprint::of_bytes(b"one", None);
        let err = tracker.check_unchanged(path, &seen, "a.txt").unwrap_err();
        assert!(err.to_string().contains("has not been read in this run"));
        tracker.record(path.to_path_buf(), seen);
        assert!(
            tracker
                .check_unchanged(path, &Fingerprint::of_bytes(b"one", None), "a.txt")
                .is_ok()
        );
        let err = tracker
            .check_unchanged(path, &Fingerprint::of_bytes(b"two!", None), "a.txt")
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("changed since you read it (now 4 bytes, was 3)")
        );
        tracker.forget(path);
        assert!(tracker.get(path).is_none());
    }
}
