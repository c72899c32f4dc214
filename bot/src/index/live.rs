//! The index of a working copy as the agent's tools see it. It builds in the background from the
//! moment a session starts (two threads, files served from the blob cache when a job saw them
//! before, parsed otherwise), so a query made before the build finished waits a moment and then
//! answers from what is indexed, saying how much that is. It is never stale: a tool that changes a
//! file says which (`edit_file`, `write_file`), a command says that anything may have changed
//! (`bash`, `run_tests`), and the next query first re-reads what changed — the named files, or
//! every file whose size or change time moved, the ones that went away removed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::cache::{BlobCache, blob_id};
use super::files::{self, Seen};
use super::store::Index;
use super::{Lang, extract};
use crate::beneath::Beneath;

/// How long a query waits for the background build before answering from what is indexed.
pub const BUILD_WAIT: Duration = Duration::from_secs(3);

/// What one index may hold, whatever the repository — or a command in the sandbox — puts in the
/// checkout. Past a limit the index keeps what it read, never a stale file, and every answer says
/// it is incomplete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Source files read.
    pub max_files: usize,
    /// Definitions and references, in all: each costs about 40 bytes of memory.
    pub max_entries: usize,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        max_files: files::MAX_FILES,
        max_entries: 10_000_000,
    };

    fn too_many_files(self) -> String {
        format!(
            "the checkout has more than {} source files; the index holds the first it found",
            self.max_files
        )
    }

    fn too_many_entries(self, indexed: usize, total: usize) -> String {
        format!(
            "the index is full at {} definitions and references, with {indexed} of {total} files in it",
            self.max_entries
        )
    }
}

/// What is known to have changed since the index was last brought up to date.
#[derive(Debug, Default)]
enum Dirty {
    #[default]
    Clean,
    Paths(BTreeSet<String>),
    All,
}

#[derive(Debug, Default)]
struct State {
    index: Index,
    dirty: Dirty,
    /// The background build has finished (or failed: then `failure` says why).
    built: bool,
    failure: Option<String>,
    /// Files the build has put in, of how many it found.
    done: usize,
    total: usize,
    /// Files parsed, and files served from the cache, since the index was made.
    parsed: usize,
    cached: usize,
    /// How long the build took until queries had a complete answer.
    ready_after: Option<Duration>,
}

/// How complete an answer is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completeness {
    Complete,
    /// The background build had read `done` of `total` files.
    Building {
        done: usize,
        total: usize,
    },
    /// The build failed; what it read is all there is.
    Failed(String),
}

/// A working copy's index, shared by its session's tools.
#[derive(Debug)]
pub struct LiveIndex {
    root: PathBuf,
    cache: Option<BlobCache>,
    limits: Limits,
    state: Mutex<State>,
    progress: Condvar,
    /// The session ended: a build still running stops.
    closed: AtomicBool,
}

impl LiveIndex {
    fn new(root: &Path, cache: Option<BlobCache>, seed: Option<Index>, limits: Limits) -> LiveIndex {
        LiveIndex {
            root: root.to_owned(),
            cache,
            limits,
            state: Mutex::new(State {
                index: seed.unwrap_or_default(),
                ..State::default()
            }),
            progress: Condvar::new(),
            closed: AtomicBool::new(false),
        }
    }

    /// The index of the checkout at `root`, building in the background from now, with `cache` for
    /// what earlier jobs parsed; from `seed` (an earlier job's index of the repository: only the
    /// files that differ from it are read) when there is one.
    pub fn start(root: &Path, cache: Option<BlobCache>, seed: Option<Index>) -> Arc<LiveIndex> {
        let live = Arc::new(LiveIndex::new(root, cache, seed, Limits::DEFAULT));
        let builder = Arc::clone(&live);
        let spawned = std::thread::Builder::new()
            .name("pitcrew-index".into())
            .spawn(move || builder.build());
        if let Err(error) = spawned {
            let mut state = live.lock();
            state.built = true;
            state.failure = Some(format!("the index could not start: {error}"));
        }
        live
    }

    /// The index of the checkout at `root`, built now, in this thread (for `pitcrew index`, the
    /// benchmark and tests).
    pub fn build_now(root: &Path, cache: Option<BlobCache>, seed: Option<Index>) -> LiveIndex {
        LiveIndex::build_limited(root, cache, seed, Limits::DEFAULT)
    }

    /// [`LiveIndex::build_now`] within other limits.
    pub fn build_limited(root: &Path, cache: Option<BlobCache>, seed: Option<Index>, limits: Limits) -> LiveIndex {
        let live = LiveIndex::new(root, cache, seed, limits);
        live.build();
        live
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A file at `path` (relative to the checkout) was written or removed.
    pub fn changed(&self, path: &str) {
        let mut state = self.lock();
        match &mut state.dirty {
            Dirty::All => {}
            Dirty::Paths(paths) => {
                paths.insert(path.to_owned());
            }
            dirty @ Dirty::Clean => *dirty = Dirty::Paths(BTreeSet::from([path.to_owned()])),
        }
    }

    /// A command ran: any file may have changed.
    pub fn changed_anything(&self) {
        self.lock().dirty = Dirty::All;
    }

    /// Runs `query` on the index, brought up to date first; waits up to `wait` for the background
    /// build, then answers from what is there. Files named as changed are re-read even then (the
    /// build may have read them before the change), and again once it is done.
    pub fn query<T>(&self, wait: Duration, query: impl FnOnce(&mut Index) -> T) -> (T, Completeness) {
        let deadline = Instant::now() + wait;
        let mut state = self.lock();
        while !state.built {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = self
                .progress
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let completeness = match (&state.failure, state.built) {
            (Some(failure), _) => Completeness::Failed(failure.clone()),
            (None, true) => Completeness::Complete,
            (None, false) => Completeness::Building {
                done: state.done,
                total: state.total,
            },
        };
        if state.built {
            self.refresh(&mut state);
        } else if let Dirty::Paths(paths) = &state.dirty
            && let Ok(beneath) = Beneath::open(&self.root)
        {
            for path in paths.clone() {
                self.reread(&mut state, &beneath, &path);
            }
            state.index.names_changed();
        }
        (query(&mut state.index), completeness)
    }

    /// How long the build took until a query got a complete answer (`None` while it runs).
    pub fn ready_after(&self) -> Option<Duration> {
        self.lock().ready_after
    }

    /// Files parsed, and files served from the cache, since the index was made.
    pub fn work(&self) -> (usize, usize) {
        let state = self.lock();
        (state.parsed, state.cached)
    }

    /// The session is over: a build still running stops, and the index is handed back when it was
    /// complete (for the next job to start from), else dropped.
    pub fn close(&self) -> Option<Index> {
        self.closed.store(true, Ordering::Relaxed);
        let mut state = self.lock();
        if !state.built || state.failure.is_some() {
            return None;
        }
        state.built = false;
        state.failure = Some("the session ended".to_owned());
        Some(std::mem::take(&mut state.index))
    }

    /// The background build: every file whose size or change time differs from what the index
    /// holds (all of them, without a seed) read by two threads, parsed unless the cache has them,
    /// put in as they come; the index's files that are gone taken out.
    fn build(&self) {
        let started = Instant::now();
        let parsed_before = self.lock().parsed;
        let listing = files::list(&self.root, self.limits.max_files);
        let seen = listing.files;
        let beneath = match Beneath::open(&self.root) {
            Ok(beneath) => beneath,
            Err(error) => {
                let mut state = self.lock();
                state.built = true;
                state.failure = Some(format!("the checkout cannot be opened: {error}"));
                self.progress.notify_all();
                return;
            }
        };
        let todo: Vec<&Seen> = {
            let mut state = self.lock();
            let current: BTreeSet<&str> = seen.iter().map(|s| s.path.as_str()).collect();
            let gone: Vec<String> = state
                .index
                .files()
                .map(|f| f.path.clone())
                .filter(|p| !current.contains(p.as_str()))
                .collect();
            for path in gone {
                state.index.remove(&path);
            }
            let todo: Vec<&Seen> = seen.iter().filter(|s| !unchanged(&state.index, s)).collect();
            state.total = seen.len();
            state.done = seen.len() - todo.len();
            if listing.truncated {
                state.failure = Some(self.limits.too_many_files());
            }
            todo
        };
        let next = AtomicUsize::new(0);
        // The index is full: both threads stop.
        let full = AtomicBool::new(false);
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    loop {
                        if self.closed.load(Ordering::Relaxed) || full.load(Ordering::Relaxed) {
                            break;
                        }
                        let Some(file) = todo.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            break;
                        };
                        let read = files::read(&beneath, &file.path).map(|bytes| {
                            let blob = blob_id(&bytes);
                            (bytes, blob)
                        });
                        // Contents the index already holds (a seed from another copy) are not
                        // parsed again.
                        let known = read.as_ref().is_some_and(|(_, blob)| {
                            self.lock().index.file(&file.path).is_some_and(|f| &f.blob == blob)
                        });
                        let symbols = match &read {
                            Some((bytes, blob)) if !known => self.symbols(file.lang, blob, bytes),
                            _ => None,
                        };
                        let mut state = self.lock();
                        state.done += 1;
                        if let Some((symbols, _)) = &symbols
                            && self.full(&mut state, &file.path, symbols)
                        {
                            // Not the old version either: the index holds no stale file.
                            state.index.remove(&file.path);
                            full.store(true, Ordering::Relaxed);
                            break;
                        }
                        match (read, symbols) {
                            (Some(_), None) if known => {
                                state.index.touch(&file.path, file.size, file.changed_ns);
                            }
                            (Some((_, blob)), Some((symbols, from_cache))) => {
                                if from_cache {
                                    state.cached += 1;
                                } else {
                                    state.parsed += 1;
                                }
                                state
                                    .index
                                    .insert(&file.path, file.size, file.changed_ns, &blob, symbols);
                            }
                            _ => {
                                state.index.remove(&file.path);
                            }
                        }
                        if state.done.is_multiple_of(256) {
                            self.progress.notify_all();
                        }
                    }
                });
            }
        });
        let mut state = self.lock();
        state.index.names_changed();
        state.built = true;
        state.ready_after = Some(started.elapsed());
        let grew = state.parsed > parsed_before;
        self.progress.notify_all();
        drop(state);
        // Only what was parsed went into the cache; eviction follows, off the queries' path.
        if let Some(cache) = self.cache.as_ref().filter(|_| grew) {
            cache.evict();
        }
    }

    /// Whether `symbols` as the file at `path` would overfill the index: then the reason is its
    /// failure.
    fn full(&self, state: &mut State, path: &str, symbols: &super::FileSymbols) -> bool {
        let replaced = state.index.file(path).map_or(0, |f| f.defs.len() + f.refs.len());
        let after = state.index.symbol_count() - replaced + symbols.definitions.len() + symbols.references.len();
        if after <= self.limits.max_entries {
            return false;
        }
        if state.failure.is_none() {
            state.failure = Some(self.limits.too_many_entries(state.index.file_count(), state.total));
        }
        true
    }

    /// The symbols of the contents `bytes` (blob `blob`): from the cache, else parsed (and cached).
    fn symbols(&self, lang: Lang, blob: &str, bytes: &[u8]) -> Option<(super::FileSymbols, bool)> {
        if let Some(symbols) = self.cache.as_ref().and_then(|c| c.get(lang, blob)) {
            return Some((symbols, true));
        }
        let symbols = extract(lang, bytes).ok()?;
        if let Some(cache) = &self.cache {
            cache.put(blob, &symbols);
        }
        Some((symbols, false))
    }

    /// Brings the index up to date with what changed.
    fn refresh(&self, state: &mut State) {
        let dirty = std::mem::take(&mut state.dirty);
        let Ok(beneath) = Beneath::open(&self.root) else {
            return;
        };
        match dirty {
            Dirty::Clean => {}
            Dirty::Paths(paths) => {
                for path in paths {
                    self.reread(state, &beneath, &path);
                }
                state.index.names_changed();
            }
            Dirty::All => {
                let listing = files::list(&self.root, self.limits.max_files);
                if listing.truncated && state.failure.is_none() {
                    state.failure = Some(self.limits.too_many_files());
                }
                let seen = listing.files;
                state.total = seen.len();
                let current: BTreeSet<&str> = seen.iter().map(|s| s.path.as_str()).collect();
                let gone: Vec<String> = state
                    .index
                    .files()
                    .map(|f| f.path.clone())
                    .filter(|p| !current.contains(p.as_str()))
                    .collect();
                for path in gone {
                    state.index.remove(&path);
                }
                for file in &seen {
                    if !unchanged(&state.index, file) {
                        self.put(state, &beneath, file);
                    }
                }
                state.index.names_changed();
            }
        }
    }

    /// Reads the file at `path` again: in when it is (still) indexable, out when it is not.
    fn reread(&self, state: &mut State, beneath: &Beneath, path: &str) {
        let path = path.trim_start_matches("./");
        let seen = Lang::of(path).and_then(|lang| {
            let meta = beneath.metadata(Path::new(path)).ok()?;
            (meta.is_file() && meta.len() <= files::MAX_FILE_BYTES).then(|| Seen {
                path: path.to_owned(),
                lang,
                size: meta.len(),
                changed_ns: files::changed_ns(&meta),
            })
        });
        match seen {
            Some(seen) => self.put(state, beneath, &seen),
            None => {
                state.index.remove(path);
            }
        }
    }

    /// Reads `file` again and puts it in, unless its contents are what the index holds (then only
    /// its size and time are remembered).
    fn put(&self, state: &mut State, beneath: &Beneath, file: &Seen) {
        let Some(bytes) = files::read(beneath, &file.path) else {
            state.index.remove(&file.path);
            return;
        };
        let blob = blob_id(&bytes);
        if state.index.file(&file.path).is_some_and(|f| f.blob == blob) {
            state.index.touch(&file.path, file.size, file.changed_ns);
            return;
        }
        match self.symbols(file.lang, &blob, &bytes) {
            Some((symbols, _)) if self.full(state, &file.path, &symbols) => {
                state.index.remove(&file.path);
            }
            Some((symbols, from_cache)) => {
                if from_cache {
                    state.cached += 1;
                } else {
                    state.parsed += 1;
                }
                state
                    .index
                    .insert(&file.path, file.size, file.changed_ns, &blob, symbols);
            }
            None => {
                state.index.remove(&file.path);
            }
        }
    }
}

/// Whether the index holds `file` as it is now: the same size and change time.
fn unchanged(index: &Index, file: &Seen) -> bool {
    index
        .file(&file.path)
        .is_some_and(|f| f.size == file.size && f.changed_ns == file.changed_ns)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use super::*;
    use crate::index::lookup;

    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn defined(live: &LiveIndex, name: &str) -> Vec<String> {
        live.query(Duration::ZERO, |index| {
            lookup::find_symbol(index, name, None, None)
                .into_iter()
                .filter(|m| m.tier == lookup::Tier::Exact)
                .map(|m| m.path)
                .collect()
        })
        .0
    }

    /// A repository of 20 Rust files, and a second commit that changes 3 of them.
    fn repository(dir: &Path) {
        git(dir, &["init", "-q", "-b", "main"]);
        for n in 0..20 {
            write(
                dir,
                &format!("src/m{n}.rs"),
                &format!("pub fn f{n}() -> u32 {{ {n} }}\n"),
            );
        }
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", "first"]);
        for n in [3, 7, 11] {
            write(
                dir,
                &format!("src/m{n}.rs"),
                &format!("pub fn changed{n}() -> u32 {{ {n} }}\n"),
            );
        }
        git(dir, &["commit", "-q", "-am", "second"]);
    }

    #[test]
    fn a_job_on_a_commit_that_changed_three_files_parses_three() {
        let scratch = tempfile::tempdir().unwrap();
        let origin = scratch.path().join("origin");
        std::fs::create_dir(&origin).unwrap();
        repository(&origin);
        let cache = BlobCache::open(&scratch.path().join("cache"), crate::index::cache::DEFAULT_LIMIT_BYTES).unwrap();

        // The first job, on the first commit, parses every file.
        let first = scratch.path().join("job-1");
        git(
            scratch.path(),
            &["clone", "-q", origin.to_str().unwrap(), first.to_str().unwrap()],
        );
        git(&first, &["checkout", "-q", "HEAD~1"]);
        let live = LiveIndex::build_now(&first, Some(cache.clone()), None);
        assert_eq!(live.work(), (20, 0));
        assert_eq!(defined(&live, "f3"), ["src/m3.rs"]);

        // The next, in another working copy of the second commit: the three changed files parsed,
        // the seventeen others from the cache.
        let second = scratch.path().join("job-2");
        git(
            scratch.path(),
            &["clone", "-q", origin.to_str().unwrap(), second.to_str().unwrap()],
        );
        let live = LiveIndex::build_now(&second, Some(cache), None);
        assert_eq!(live.work(), (3, 17));
        assert_eq!(defined(&live, "changed7"), ["src/m7.rs"]);
        assert!(defined(&live, "f7").is_empty());
        assert_eq!(defined(&live, "f8"), ["src/m8.rs"]);

        // Started from the first job's index in the same working copy moved to the second commit
        // (what the server's shelf and workspace pool do): only the three files are even read.
        let seed = LiveIndex::build_now(&first, None, None).close().unwrap();
        git(&first, &["checkout", "-q", "main"]);
        let live = LiveIndex::build_now(&first, None, Some(seed));
        assert_eq!(live.work(), (3, 0));
        assert_eq!(defined(&live, "changed11"), ["src/m11.rs"]);
        assert!(defined(&live, "f11").is_empty());
        assert_eq!(defined(&live, "f12"), ["src/m12.rs"]);

        // A seed from another working copy: every file is read again (its times differ), but only
        // contents the seed lacks are parsed; a file gone from the checkout leaves the index.
        let seed = live.close().unwrap();
        std::fs::remove_file(second.join("src/m0.rs")).unwrap();
        let live = LiveIndex::build_now(&second, None, Some(seed));
        assert_eq!(live.work(), (0, 0));
        assert!(defined(&live, "f0").is_empty());
        assert_eq!(defined(&live, "changed3"), ["src/m3.rs"]);
    }

    #[test]
    fn a_checkout_past_the_limits_gets_an_index_of_what_fits_that_says_so_and_is_never_stale() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..30 {
            write(
                dir.path(),
                &format!("m{n:02}.py"),
                &format!("def f{n}():\n    return {n}\n"),
            );
        }

        // Too many files: the first ones found, said in every answer, not kept for the next job.
        let limits = Limits {
            max_files: 10,
            max_entries: usize::MAX,
        };
        let live = LiveIndex::build_limited(dir.path(), None, None, limits);
        let (files, completeness) = live.query(Duration::ZERO, |index| index.file_count());
        assert_eq!(files, 10);
        assert_eq!(
            completeness,
            Completeness::Failed(
                "the checkout has more than 10 source files; the index holds the first it found".to_owned()
            )
        );
        assert!(live.close().is_none());

        // Too many definitions and references (one per file here): the index stops when full.
        let limits = Limits {
            max_files: usize::MAX,
            max_entries: 12,
        };
        let live = LiveIndex::build_limited(dir.path(), None, None, limits);
        let full = Completeness::Failed(
            "the index is full at 12 definitions and references, with 12 of 30 files in it".to_owned(),
        );
        let (paths, completeness) = live.query(Duration::ZERO, |index| {
            index.files().map(|f| f.path.clone()).collect::<Vec<_>>()
        });
        assert_eq!((paths.len(), &completeness), (12, &full));

        // A file in it rewritten with more definitions: it cannot go in, and its old version goes
        // out — the index is incomplete, never stale.
        let edited = &paths[0];
        let n: usize = edited.trim_start_matches('m').trim_end_matches(".py").parse().unwrap();
        write(dir.path(), edited, "def g1():\n    pass\n\ndef g2():\n    pass\n");
        live.changed(edited);
        assert!(defined(&live, &format!("f{n}")).is_empty());
        assert!(defined(&live, "g1").is_empty());

        // A command that writes a thousand more files: what fits goes in (the first file in path
        // order that is not in yet), nothing more.
        for n in 0..1_000 {
            write(
                dir.path(),
                &format!("more/x{n}.py"),
                &format!("def x{n}():\n    pass\n"),
            );
        }
        live.changed_anything();
        let (count, completeness) = live.query(Duration::ZERO, |index| (index.file_count(), index.symbol_count()));
        assert_eq!(count, (12, 12));
        assert_eq!(completeness, full);
        assert!(defined(&live, "x7").is_empty());
    }

    #[test]
    fn a_query_waits_for_the_build_and_a_closed_index_is_handed_back_once() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..300 {
            write(
                dir.path(),
                &format!("m{n}.py"),
                &format!("def f{n}():\n    return {n}\n"),
            );
        }
        let live = LiveIndex::start(dir.path(), None, None);
        let (found, completeness) = live.query(BUILD_WAIT * 10, |index| index.file_count());
        // Waiting long enough, the answer is complete.
        assert_eq!((found, completeness), (300, Completeness::Complete));
        let (_, completeness) = live.query(Duration::ZERO, |_| ());
        assert_eq!(completeness, Completeness::Complete);
        let index = live.close().unwrap();
        assert_eq!(index.file_count(), 300);
        assert!(live.close().is_none(), "handed back once");
    }
}
