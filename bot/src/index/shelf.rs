//! The indexes of finished sessions, kept in memory by the server so that the next job on the same
//! repository starts from one instead of from nothing: it re-reads only the files whose size or
//! change time moved (in the same pooled working copy, the ones the checkout rewrote) — the O(diff)
//! principle of the warm workspace pool, applied to the index. Bounded by an estimate of the bytes
//! the indexes hold; the least recently shelved go first.
//!
//! An index taken from the shelf is only a starting point: every file is checked against the new
//! checkout before the index answers, by size and ctime (which no process can set back), so what
//! one job's files were never answers for the next.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::store::Index;

/// The shelf; clones share it.
#[derive(Debug, Clone)]
pub struct IndexShelf {
    inner: Arc<Mutex<VecDeque<Shelved>>>,
    limit_bytes: u64,
}

#[derive(Debug)]
struct Shelved {
    repo: String,
    root: PathBuf,
    index: Index,
    bytes: u64,
}

impl IndexShelf {
    /// A shelf holding at most about `limit_bytes` of indexes (0: it keeps none).
    pub fn new(limit_bytes: u64) -> IndexShelf {
        IndexShelf {
            inner: Arc::default(),
            limit_bytes,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Shelved>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An index of `repo` to start from: the one last built over the working copy at `root` (whose
    /// unchanged files still have the times it remembers), else the newest of the repository.
    pub fn take(&self, repo: &str, root: &Path) -> Option<Index> {
        let mut shelf = self.lock();
        let at = shelf
            .iter()
            .rposition(|s| s.repo == repo && s.root == root)
            .or_else(|| shelf.iter().rposition(|s| s.repo == repo))?;
        shelf.remove(at).map(|s| s.index)
    }

    /// Keeps `index`, built over `root`, for the next job on `repo`; the oldest go when the shelf
    /// is over its limit (an index larger than the whole limit is not kept).
    pub fn put(&self, repo: &str, root: &Path, index: Index) {
        let bytes = index.approx_bytes();
        if bytes > self.limit_bytes {
            return;
        }
        let mut shelf = self.lock();
        shelf.push_back(Shelved {
            repo: repo.to_owned(),
            root: root.to_owned(),
            index,
            bytes,
        });
        let mut total: u64 = shelf.iter().map(|s| s.bytes).sum();
        while total > self.limit_bytes
            && let Some(oldest) = shelf.pop_front()
        {
            total -= oldest.bytes;
        }
    }

    /// How many indexes the shelf holds.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::index::{Lang, extract};

    fn index(source: &str) -> Index {
        let mut index = Index::new();
        let symbols = extract(Lang::Rust, source.as_bytes()).unwrap();
        index.insert("src/lib.rs", source.len() as u64, 1, "blob", symbols);
        index
    }

    #[test]
    fn the_same_working_copy_is_preferred_and_the_oldest_go_first() {
        let bytes = index("fn a() {}\n").approx_bytes();
        let shelf = IndexShelf::new(bytes * 2);
        shelf.put("o/r", Path::new("/copies/1"), index("fn a() {}\n"));
        shelf.put("o/r", Path::new("/copies/2"), index("fn b() {}\n"));
        let taken = shelf.take("o/r", Path::new("/copies/1")).unwrap();
        assert!(taken.name_id("a").is_some(), "the index of the same copy");
        assert_eq!(
            shelf.take("x/y", Path::new("/copies/2")).map(|_| ()),
            None,
            "another repository's is never taken"
        );
        // A third index pushes the oldest out.
        shelf.put("o/r", Path::new("/copies/1"), taken);
        shelf.put("o/r", Path::new("/copies/3"), index("fn c() {}\n"));
        assert_eq!(shelf.len(), 2);
        let newest = shelf.take("o/r", Path::new("/elsewhere")).unwrap();
        assert!(newest.name_id("c").is_some(), "the newest of the repository");
        let last = shelf.take("o/r", Path::new("/copies/2")).unwrap();
        assert!(
            last.name_id("a").is_some(),
            "the index of /copies/2 was pushed out, the other is left"
        );
        assert!(shelf.is_empty());

        let none = IndexShelf::new(0);
        none.put("o/r", Path::new("/copies/1"), index("fn a() {}\n"));
        assert!(none.is_empty());
    }
}
