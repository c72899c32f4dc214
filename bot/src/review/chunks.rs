//! A large pull request is reviewed in chunks: files of one directory stay together, in path order,
//! and a chunk holds at most [`MAX_CHUNK_BYTES`] of diff and [`MAX_CHUNK_FILES`] files (a single
//! larger file is a chunk of its own, its diff cut in the prompt). Each chunk's agent run also
//! knows the pull request's description and the list of every changed file.

use super::diff::FileDiff;

/// The diff text one chunk shows at most.
pub const MAX_CHUNK_BYTES: usize = 48 * 1024;
/// The files one chunk holds at most.
pub const MAX_CHUNK_FILES: usize = 40;

/// The directory a file sits in (`""` at the root).
fn directory(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// The chunks of `files`, as indices into it: every file in exactly one chunk, in path order.
pub fn chunk(files: &[&FileDiff]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by(|a, b| {
        let (a, b) = (&files[*a].path, &files[*b].path);
        directory(a).cmp(directory(b)).then_with(|| a.cmp(b))
    });
    // Directories, in order, each a run of `order`.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for index in order {
        match groups.last_mut() {
            Some(group) if directory(&files[group[0]].path) == directory(&files[index].path) => group.push(index),
            _ => groups.push(vec![index]),
        }
    }
    let mut chunks: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut bytes = 0;
    let size = |index: usize| files[index].text.len();
    for group in groups {
        let group_bytes: usize = group.iter().map(|i| size(*i)).sum();
        // A directory that fits beside what is there joins it whole; one that does not starts a new
        // chunk (when it fits a chunk on its own) or is spread over as many as it needs.
        if !current.is_empty()
            && (bytes + group_bytes > MAX_CHUNK_BYTES || current.len() + group.len() > MAX_CHUNK_FILES)
        {
            chunks.push(std::mem::take(&mut current));
            bytes = 0;
        }
        for index in group {
            if !current.is_empty() && (bytes + size(index) > MAX_CHUNK_BYTES || current.len() >= MAX_CHUNK_FILES) {
                chunks.push(std::mem::take(&mut current));
                bytes = 0;
            }
            current.push(index);
            bytes += size(index);
        }
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::diff::split;

    fn diff(path: &str, lines: usize) -> FileDiff {
        let mut text = format!("diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -0,0 +1,{lines} @@\n");
        for n in 0..lines {
            text.push_str(&format!("+line {n} of the file, long enough to weigh something\n"));
        }
        split(&text).remove(0)
    }

    #[test]
    fn directories_stay_together_and_every_file_is_in_one_chunk() {
        let mut files: Vec<FileDiff> = Vec::new();
        for dir in ["api", "core", "web"] {
            for n in 0..120 {
                files.push(diff(&format!("{dir}/file{n:03}.rs"), 3));
            }
        }
        files.push(diff("huge/one.rs", 5000));
        files.push(diff("README.md", 2));
        let refs: Vec<&FileDiff> = files.iter().collect();
        let chunks = chunk(&refs);
        let mut seen: Vec<usize> = chunks.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..files.len()).collect::<Vec<_>>());
        for chunk in &chunks {
            let bytes: usize = chunk.iter().map(|i| files[*i].text.len()).sum();
            assert!(chunk.len() == 1 || bytes <= MAX_CHUNK_BYTES, "{bytes}");
            assert!(chunk.len() <= MAX_CHUNK_FILES);
        }
        // The huge file is alone; no chunk mixes `api/` and `web/`.
        assert!(chunks.iter().any(|c| c.len() == 1 && files[c[0]].path == "huge/one.rs"));
        for chunk in &chunks {
            let dirs: std::collections::BTreeSet<&str> = chunk.iter().map(|i| directory(&files[*i].path)).collect();
            assert!(!(dirs.contains("api") && dirs.contains("web")), "{dirs:?}");
        }
        // A small pull request is one chunk.
        let small: Vec<&FileDiff> = files.iter().take(5).collect();
        assert_eq!(chunk(&small).len(), 1);
        assert!(chunk(&[]).is_empty());
    }
}
