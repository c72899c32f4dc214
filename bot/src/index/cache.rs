//! What the index read of each file, kept on disk by the git blob id of the file's contents and its
//! language: a file that did not change since any earlier job — on any commit, in any working copy
//! of the repository — is not parsed again. One small file per entry under the cache directory
//! (`<data_dir>/index-cache/<owner>/<repo>/`, or `.git/pitcrew/index-cache/` for `pitcrew run`),
//! in a compact binary form with a format version in its name; the directory is kept under a size
//! limit by removing the entries used least recently (a hit touches its entry). Anything unreadable
//! is a miss: the cache can be deleted at any time.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{FileSymbols, Lang};

/// Bumped whenever what is cached (or how it is read) changes: older entries are then misses.
const FORMAT: u32 = 1;

/// The size a cache directory is kept under, unless its owner says otherwise.
pub const DEFAULT_LIMIT_BYTES: u64 = 256 * 1024 * 1024;

/// A cache directory.
#[derive(Debug, Clone)]
pub struct BlobCache {
    dir: PathBuf,
    limit: u64,
}

impl BlobCache {
    /// The cache in `dir` (made when missing), kept under `limit` bytes.
    pub fn open(dir: &Path, limit: u64) -> io::Result<BlobCache> {
        fs::create_dir_all(dir)?;
        Ok(BlobCache {
            dir: dir.to_owned(),
            limit,
        })
    }

    fn entry(&self, lang: Lang, blob: &str) -> Option<PathBuf> {
        let valid = blob.len() >= 4 && blob.bytes().all(|b| b.is_ascii_hexdigit());
        valid.then(|| {
            self.dir
                .join(&blob[..2])
                .join(format!("{blob}.{}.v{FORMAT}", lang.as_str()))
        })
    }

    /// What was cached for `blob` read as `lang`.
    pub fn get(&self, lang: Lang, blob: &str) -> Option<FileSymbols> {
        let path = self.entry(lang, blob)?;
        let bytes = fs::read(&path).ok()?;
        let symbols: FileSymbols = postcard::from_bytes(&bytes).ok()?;
        // The hit makes the entry the newest (eviction removes the oldest first).
        if let Ok(file) = fs::File::options().write(true).open(&path) {
            let _ = file.set_modified(SystemTime::now());
        }
        (symbols.lang == lang).then_some(symbols)
    }

    /// Keeps `symbols` for `blob`; a failure to write is only a later miss.
    pub fn put(&self, blob: &str, symbols: &FileSymbols) {
        let Some(path) = self.entry(symbols.lang, blob) else {
            return;
        };
        let Ok(bytes) = postcard::to_stdvec(symbols) else {
            return;
        };
        let Some(parent) = path.parent() else {
            return;
        };
        if fs::create_dir_all(parent).is_err() {
            return;
        }
        // Written aside, then renamed: a reader never sees half an entry.
        let temporary = parent.join(format!(".{}.{}.tmp", std::process::id(), fastrand::u64(..)));
        if fs::write(&temporary, bytes).is_ok() && fs::rename(&temporary, &path).is_err() {
            let _ = fs::remove_file(&temporary);
        }
    }

    /// Removes the least recently used entries until the directory is under its limit (and
    /// leftovers of interrupted writes older than an hour); returns how many were removed.
    pub fn evict(&self) -> usize {
        let mut entries: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
        let mut total = 0u64;
        let mut removed = 0;
        let hour_ago = SystemTime::now() - Duration::from_secs(3_600);
        let Ok(shards) = fs::read_dir(&self.dir) else {
            return 0;
        };
        for shard in shards.flatten() {
            let Ok(files) = fs::read_dir(shard.path()) else {
                continue;
            };
            for file in files.flatten() {
                let Ok(meta) = file.metadata() else {
                    continue;
                };
                let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                let name = file.file_name();
                let leftover = name.to_str().is_some_and(|n| n.starts_with('.') && n.ends_with(".tmp"));
                if leftover && modified < hour_ago {
                    if fs::remove_file(file.path()).is_ok() {
                        removed += 1;
                    }
                    continue;
                }
                total += meta.len();
                entries.push((modified, meta.len(), file.path()));
            }
        }
        if total <= self.limit {
            return removed;
        }
        entries.sort();
        for (_, size, path) in entries {
            if total <= self.limit * 9 / 10 {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                total = total.saturating_sub(size);
                removed += 1;
            }
        }
        removed
    }
}

/// Git's blob id of `bytes`: what names a file's contents in the cache.
pub fn blob_id(bytes: &[u8]) -> String {
    git2::Oid::hash_object(git2::ObjectType::Blob, bytes).map_or_else(|_| String::new(), |oid| oid.to_string())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::index::extract;

    #[test]
    fn entries_come_back_by_blob_and_language_and_the_oldest_go_first() {
        let dir = tempfile::tempdir().unwrap();
        let source = b"fn main() { helper(); }\nfn helper() {}\n";
        let blob = blob_id(source);
        // What `git hash-object` says of the same bytes.
        assert_eq!(blob_id(b"hello\n"), "ce013625030ba8dba906f756967f9e9ca394464a");
        let symbols = extract(Lang::Rust, source).unwrap();
        let cache = BlobCache::open(dir.path(), DEFAULT_LIMIT_BYTES).unwrap();
        assert_eq!(cache.get(Lang::Rust, &blob), None);
        cache.put(&blob, &symbols);
        assert_eq!(cache.get(Lang::Rust, &blob), Some(symbols.clone()));
        assert_eq!(cache.get(Lang::Go, &blob), None, "another language is another entry");
        assert_eq!(cache.get(Lang::Rust, "../../etc"), None, "only blob ids name entries");
        // A damaged entry is a miss.
        let path = cache.entry(Lang::Rust, &blob).unwrap();
        fs::write(&path, b"\xff\xff").unwrap();
        assert_eq!(cache.get(Lang::Rust, &blob), None);

        // Over the limit, the least recently used go.
        let small = BlobCache::open(dir.path(), 1).unwrap();
        let blobs: Vec<String> = (0..5)
            .map(|n| blob_id(format!("fn f{n}() {{}}\n").as_bytes()))
            .collect();
        for blob in &blobs {
            small.put(blob, &symbols);
        }
        assert!(small.evict() >= 5);
        assert!(blobs.iter().all(|b| small.get(Lang::Rust, b).is_none()));
    }
}
