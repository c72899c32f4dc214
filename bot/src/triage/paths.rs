//! Findings' files resolved against a checkout of the repository: the runner's absolute prefixes
//! (`/home/runner/work/<repo>/<repo>/`, `/__w/<repo>/<repo>/`, `D:\a\<repo>\<repo>\`, a module's
//! directory in a Maven log) removed by matching the path's suffixes to the checkout's files, and
//! the source line a finding points at read from it. Nothing outside the checkout is ever read:
//! symlinks are followed only while they stay inside it.

use std::fs::File;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use super::Finding;

/// Files larger than this are not read for a source line.
const MAX_SOURCE_BYTES: u64 = 1024 * 1024;
/// Characters kept of a source line, the cut marker included.
const MAX_LINE_CHARS: usize = 200;

/// Makes each finding's `file` relative to `root` (a checkout of the repository) when it can:
/// strips absolute runner prefixes (`/home/runner/work/<repo>/<repo>/`, `/__w/<repo>/<repo>/`,
/// `D:\a\<repo>\<repo>\`, any absolute or `./` prefix) by finding the longest suffix of the path
/// that names an existing file under `root`; leaves a path alone when no suffix exists in the
/// checkout; never follows a symlink out of `root` and never returns a path containing `..`.
/// Returns how many were resolved: the findings whose file now names a file in the checkout,
/// whether it had to change or not.
pub fn resolve(findings: &mut [Finding], root: &Path) -> usize {
    let Ok(root) = root.canonicalize() else {
        return 0;
    };
    let mut resolved = 0;
    for finding in findings {
        let Some(file) = finding.file.as_deref() else {
            continue;
        };
        if let Some(found) = in_checkout(&root, file) {
            finding.file = Some(found);
            resolved += 1;
        }
    }
    resolved
}

/// The longest suffix of `path` (with `/` or `\` separators) that names a regular file under
/// `root` (canonical), `/`-separated.
fn in_checkout(root: &Path, path: &str) -> Option<String> {
    let normalised = path.replace('\\', "/");
    let parts: Vec<&str> = normalised
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    (0..parts.len())
        .map(|start| &parts[start..])
        // A suffix may not climb (`..`) nor start at a drive (`D:`).
        .filter(|suffix| !suffix.contains(&"..") && !suffix[0].ends_with(':'))
        .map(|suffix| suffix.join("/"))
        .find(|candidate| inside(root, candidate).is_some_and(|real| real.is_file()))
}

/// `relative` under `root` (canonical) with every symlink resolved, when that stays in `root`.
fn inside(root: &Path, relative: &str) -> Option<PathBuf> {
    let real = root.join(relative).canonicalize().ok()?;
    real.starts_with(root).then_some(real)
}

/// The source line a finding points at, read from `root` (at most 200 chars, None for missing
/// files, binary files, files > 1 MiB, or lines out of range).
pub fn source_line(root: &Path, file: &str, line: u32) -> Option<String> {
    let index = usize::try_from(line.checked_sub(1)?).ok()?;
    let root = root.canonicalize().ok()?;
    let relative = Path::new(file);
    // An absolute path is read only when it is in the checkout, as any other.
    let relative = match relative.strip_prefix(&root) {
        Ok(inner) => inner,
        Err(_) if relative.is_absolute() => return None,
        Err(_) => relative,
    };
    let real = inside(&root, relative.to_str()?)?;
    let metadata = real.metadata().ok()?;
    if !metadata.is_file() || metadata.len() > MAX_SOURCE_BYTES {
        return None;
    }
    let mut bytes = Vec::new();
    // Read at most one byte past the limit: the file may have grown since.
    File::open(&real)
        .ok()?
        .take(MAX_SOURCE_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > MAX_SOURCE_BYTES || bytes.contains(&0) {
        return None;
    }
    let text = String::from_utf8_lossy(&bytes);
    let found = text.lines().nth(index)?;
    Some(match found.char_indices().nth(MAX_LINE_CHARS) {
        Some(_) => {
            let mut cut: String = found.chars().take(MAX_LINE_CHARS - 1).collect();
            cut.push('…');
            cut
        }
        None => found.to_owned(),
    })
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::triage::FindingKind;

    fn at(file: &str) -> Finding {
        Finding {
            kind: FindingKind::TestFailure,
            runner: None,
            compiler: None,
            test: None,
            file: Some(file.into()),
            line: Some(1),
            message: String::new(),
            attempts: 1,
            evidence: Vec::new(),
        }
    }

    /// A checkout with a few files, and a directory beside it that is not part of it.
    fn checkout() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        for (path, contents) in [
            ("src/lib.rs", "pub fn a() {}\n"),
            ("calc/src/test/java/com/example/CalcTest.java", "class CalcTest {}\n"),
            ("lib.rs", "// the root's own lib.rs\n"),
            ("tests/it.rs", "#[test]\nfn it() {}\n"),
        ] {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, contents).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        std::fs::write(dir.path().join("outside/secret.rs"), "let token = 1;\n").unwrap();
        (dir, root)
    }

    fn files(findings: &[Finding]) -> Vec<Option<&str>> {
        findings.iter().map(|f| f.file.as_deref()).collect()
    }

    #[test]
    fn runner_prefixes_are_stripped_to_the_longest_suffix_in_the_checkout() {
        let (_dir, root) = checkout();
        let mut findings = [
            at("/home/runner/work/repo/repo/src/lib.rs"),
            at("/__w/repo/repo/tests/it.rs"),
            at(r"D:\a\repo\repo\calc\src\test\java\com\example\CalcTest.java"),
            at("./src/lib.rs"),
            at("src/lib.rs"),
            at("/Users/dev/elsewhere/lib.rs"),
            at("/home/runner/work/repo/repo/target/../src/lib.rs"),
        ];
        assert_eq!(resolve(&mut findings, &root), 7);
        assert_eq!(
            files(&findings),
            [
                Some("src/lib.rs"),
                Some("tests/it.rs"),
                Some("calc/src/test/java/com/example/CalcTest.java"),
                Some("src/lib.rs"),
                Some("src/lib.rs"),
                // Only its file name is in the checkout: the root's `lib.rs`.
                Some("lib.rs"),
                Some("src/lib.rs"),
            ]
        );
    }

    #[test]
    fn paths_not_in_the_checkout_are_left_alone() {
        let (_dir, root) = checkout();
        let mut findings = [
            at("/home/runner/work/repo/repo/src/gone.rs"),
            at("CalcTest.java"),
            at("../outside/secret.rs"),
            at("/home/runner/work/repo/repo/src"),
            at(""),
        ];
        let mut none = at("x");
        none.file = None;
        assert_eq!(resolve(&mut findings, &root), 0);
        assert_eq!(
            files(&findings),
            [
                Some("/home/runner/work/repo/repo/src/gone.rs"),
                Some("CalcTest.java"),
                Some("../outside/secret.rs"),
                Some("/home/runner/work/repo/repo/src"),
                Some(""),
            ]
        );
        assert_eq!(resolve(std::slice::from_mut(&mut none), &root), 0);
        assert_eq!(none.file, None);
        assert_eq!(resolve(&mut [at("src/lib.rs")], &root.join("missing")), 0);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_checkout_are_not_followed() {
        let (dir, root) = checkout();
        std::os::unix::fs::symlink(dir.path().join("outside"), root.join("vendor")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside/secret.rs"), root.join("secret.rs")).unwrap();
        std::os::unix::fs::symlink(root.join("src"), root.join("alias")).unwrap();
        let mut findings = [
            at("/home/runner/work/repo/repo/vendor/secret.rs"),
            at("secret.rs"),
            at("/__w/repo/repo/alias/lib.rs"),
        ];
        assert_eq!(resolve(&mut findings, &root), 1);
        assert_eq!(
            files(&findings),
            [
                Some("/home/runner/work/repo/repo/vendor/secret.rs"),
                Some("secret.rs"),
                // A link that stays inside the checkout is fine.
                Some("alias/lib.rs"),
            ]
        );
        assert_eq!(source_line(&root, "vendor/secret.rs", 1), None);
        assert_eq!(source_line(&root, "secret.rs", 1), None);
        assert_eq!(source_line(&root, "alias/lib.rs", 1).as_deref(), Some("pub fn a() {}"));
    }

    #[test]
    fn source_lines_are_read_within_limits() {
        let (dir, root) = checkout();
        let long = "x".repeat(500);
        std::fs::write(root.join("crlf.rs"), format!("one\r\n{long}\r\n\r\nlast")).unwrap();
        std::fs::write(root.join("blob.bin"), b"ab\0cd\n").unwrap();
        std::fs::write(root.join("big.txt"), "y\n".repeat(600 * 1024)).unwrap();
        assert_eq!(source_line(&root, "tests/it.rs", 2).as_deref(), Some("fn it() {}"));
        assert_eq!(source_line(&root, "crlf.rs", 1).as_deref(), Some("one"));
        let cut = source_line(&root, "crlf.rs", 2).unwrap();
        assert_eq!(cut.chars().count(), 200);
        assert!(cut.ends_with("x…"));
        assert_eq!(source_line(&root, "crlf.rs", 3).as_deref(), Some(""));
        assert_eq!(source_line(&root, "crlf.rs", 4).as_deref(), Some("last"));
        assert_eq!(source_line(&root, "crlf.rs", 5), None);
        assert_eq!(source_line(&root, "tests/it.rs", 3), None, "past the final newline");
        assert_eq!(source_line(&root, "tests/it.rs", 0), None);
        assert_eq!(source_line(&root, "missing.rs", 1), None);
        assert_eq!(source_line(&root, "src", 1), None);
        assert_eq!(source_line(&root, "blob.bin", 1), None);
        assert_eq!(source_line(&root, "big.txt", 1), None);
        assert_eq!(source_line(&root, "../outside/secret.rs", 1), None);
        let outside = dir.path().join("outside/secret.rs");
        assert_eq!(source_line(&root, outside.to_str().unwrap(), 1), None);
        let absolute = root.canonicalize().unwrap().join("src/lib.rs");
        assert_eq!(
            source_line(&root, absolute.to_str().unwrap(), 1).as_deref(),
            Some("pub fn a() {}")
        );
    }
}
