//! Small real git repositories for end-to-end tests: files written to a temporary directory and
//! committed with the real `git`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A temporary git repository, removed on drop.
pub struct TestRepo {
    dir: tempfile::TempDir,
}

impl TestRepo {
    /// A repository on branch `main` whose first commit holds `files` (path, content).
    pub fn new(files: &[(&str, &str)]) -> std::io::Result<TestRepo> {
        let dir = tempfile::tempdir()?;
        let repo = TestRepo { dir };
        repo.git(&["init", "-q", "-b", "main"])?;
        for (path, content) in files {
            repo.write(path, content)?;
        }
        repo.git(&["add", "-A"])?;
        repo.git(&["commit", "-q", "-m", "initial commit"])?;
        Ok(repo)
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn file(&self, path: &str) -> PathBuf {
        self.dir.path().join(path)
    }

    pub fn write(&self, path: &str, content: &str) -> std::io::Result<()> {
        let full = self.file(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(full, content)
    }

    pub fn read(&self, path: &str) -> std::io::Result<String> {
        std::fs::read_to_string(self.file(path))
    }

    /// Runs git with a fixed identity; returns stdout, or an error with stderr.
    pub fn git(&self, args: &[&str]) -> std::io::Result<String> {
        let output = Command::new("git")
            .args([
                "-c",
                "user.name=Test",
                "-c",
                "user.email=test@example.com",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(self.dir.path())
            .output()?;
        if !output.status.success() {
            return Err(std::io::Error::other(format!(
                "git {args:?} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            )));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}
