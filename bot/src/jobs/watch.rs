//! Jobs that wait for CI on a commit they pushed, and what wakes them: the dispatcher hears of a
//! completed check suite, workflow run or check run of the commit ([`CiWatch::wake_commit`]), or of
//! something new on the job's pull request — a push, a command ([`CiWatch::wake_key`]) — and the
//! waiting job looks again at once instead of at its next poll.
//!
//! It also remembers the commits loops waited on ([`CiWatch::loop_of`]), so that a CI failure of one
//! reported after its loop moved on starts no separate triage.
//!
//! In memory, per process: a wake-up is an optimisation (every waiting job also polls), and a job
//! resumed after a restart registers again.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

use super::store::JobId;

/// The waiting jobs of one process.
#[derive(Clone, Default)]
pub struct CiWatch {
    waiting: Arc<Mutex<Vec<Waiting>>>,
    /// `(repo, sha, job)` of the commits waited on, newest last, at most [`REMEMBERED`].
    waited: Arc<Mutex<VecDeque<(String, String, JobId)>>>,
}

/// Commits remembered as waited on by a loop.
const REMEMBERED: usize = 1024;

impl std::fmt::Debug for CiWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CiWatch").field("waiting", &self.lock().len()).finish()
    }
}

struct Waiting {
    job: JobId,
    /// `owner/name`.
    repo: String,
    /// The job's serialisation key (its pull request's).
    key: String,
    sha: String,
    notify: Arc<Notify>,
}

/// A job's place in the watch; it leaves when this is dropped.
pub struct Watching {
    watch: CiWatch,
    job: JobId,
    notify: Arc<Notify>,
}

impl Watching {
    /// Resolves at the next wake-up (or at once for one that came while nobody waited).
    pub async fn woken(&self) {
        self.notify.notified().await;
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.watch.lock().retain(|w| w.job != self.job);
    }
}

impl CiWatch {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Waiting>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `job` (of `key` in `repo`) waits for CI on `sha` until the returned guard is dropped; a job
    /// already watching moves to `sha`.
    pub fn watch(&self, job: JobId, repo: &str, key: &str, sha: &str) -> Watching {
        let notify = Arc::new(Notify::new());
        self.remember(job, repo, sha);
        let mut waiting = self.lock();
        waiting.retain(|w| w.job != job);
        waiting.push(Waiting {
            job,
            repo: repo.to_ascii_lowercase(),
            key: key.to_owned(),
            sha: sha.to_ascii_lowercase(),
            notify: Arc::clone(&notify),
        });
        Watching {
            watch: self.clone(),
            job,
            notify,
        }
    }

    /// The job waiting for CI on commit `sha` of `repo`, if one is.
    pub fn waiting_on(&self, repo: &str, sha: &str) -> Option<JobId> {
        let (repo, sha) = (repo.to_ascii_lowercase(), sha.to_ascii_lowercase());
        self.lock()
            .iter()
            .find(|w| w.repo == repo && w.sha == sha)
            .map(|w| w.job)
    }

    /// `job`'s loop pushed `sha` to `repo` and will wait for its CI (said as soon as the push is
    /// done: CI may report before the job starts waiting).
    pub fn remember(&self, job: JobId, repo: &str, sha: &str) {
        let mut waited = self.waited.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = (repo.to_ascii_lowercase(), sha.to_ascii_lowercase(), job);
        if !waited.contains(&entry) {
            if waited.len() >= REMEMBERED {
                waited.pop_front();
            }
            waited.push_back(entry);
        }
    }

    /// The job whose loop waits or waited on commit `sha` of `repo` (it pushed that commit).
    pub fn loop_of(&self, repo: &str, sha: &str) -> Option<JobId> {
        let (repo, sha) = (repo.to_ascii_lowercase(), sha.to_ascii_lowercase());
        self.waited
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .rev()
            .find(|(r, s, _)| *r == repo && *s == sha)
            .map(|(_, _, job)| *job)
    }

    /// CI reported on commit `sha` of `repo`: the job waiting on it looks now. Returns that job.
    pub fn wake_commit(&self, repo: &str, sha: &str) -> Option<JobId> {
        let (repo, sha) = (repo.to_ascii_lowercase(), sha.to_ascii_lowercase());
        let waiting = self.lock();
        let found = waiting.iter().find(|w| w.repo == repo && w.sha == sha)?;
        found.notify.notify_one();
        Some(found.job)
    }

    /// Every waiting job looks now (signals from other processes may have been missed).
    pub fn wake_all(&self) {
        for w in self.lock().iter() {
            w.notify.notify_one();
        }
    }

    /// Something happened on the pull request of `key`: a job of it that waits looks now.
    pub fn wake_key(&self, key: &str) -> bool {
        let waiting = self.lock();
        let mut woke = false;
        for w in waiting.iter().filter(|w| w.key == key) {
            w.notify.notify_one();
            woke = true;
        }
        woke
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_commit_or_a_key_wakes_the_job_waiting_on_it_until_it_stops_waiting() {
        let watch = CiWatch::default();
        let waiting = watch.watch(JobId(7), "Octo/Repo", "octo/repo#3", "ABC123");
        assert_eq!(watch.waiting_on("octo/repo", "abc123"), Some(JobId(7)));
        assert_eq!(watch.wake_commit("octo/repo", "def456"), None);
        assert_eq!(watch.wake_commit("octo/repo", "abc123"), Some(JobId(7)));
        tokio::time::timeout(Duration::from_secs(5), waiting.woken())
            .await
            .unwrap_or_else(|_| panic!("a wake-up before the wait is kept"));
        assert!(watch.wake_key("octo/repo#3"));
        tokio::time::timeout(Duration::from_secs(5), waiting.woken())
            .await
            .unwrap_or_else(|_| panic!("the key wakes it"));
        drop(waiting);
        assert_eq!(watch.waiting_on("octo/repo", "abc123"), None);
        assert_eq!(watch.loop_of("octo/repo", "ABC123"), Some(JobId(7)));
        assert!(!watch.wake_key("octo/repo#3"));
    }
}
