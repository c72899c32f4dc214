//! The file tools against a concurrent attacker: a thread swaps a directory of the workspace with a
//! symlink to a directory outside it (`renameat2(RENAME_EXCHANGE)` in a loop, as a process left in
//! the sandbox would), while every file tool works on paths under that directory. Nothing outside
//! may be read, listed, created or changed.

#![expect(clippy::unwrap_used, reason = "tests")]

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
use serde_json::json;

use super::test_support::{call, context};
use super::{EditFile, Glob, Grep, ListDir, ReadFile, Tool, WriteFile};

/// What only the outside directory holds: seeing any of it in a tool's answer is a leak.
const CANARY: &str = "CANARY-7f3a91";
const HOST_ONLY_NAME: &str = "host-only-name.txt";

/// Every entry below `dir`, with its content: the outside directory before and after.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in walk(dir) {
        let content = if entry.is_file() {
            fs::read(&entry).unwrap()
        } else {
            Vec::new()
        };
        out.push((entry.strip_prefix(dir).unwrap().display().to_string(), content));
    }
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_file_tool_leaves_the_workspace_while_a_directory_flips_to_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    let outside = dir.path().join("outside");
    for base in [&root.join("d"), &outside] {
        fs::create_dir_all(base.join("sub")).unwrap();
    }
    fs::write(root.join("d/a.txt"), "inside line\n").unwrap();
    fs::write(root.join("d/sub/b.txt"), "inside too\n").unwrap();
    fs::write(outside.join("a.txt"), format!("{CANARY} inside line\n")).unwrap();
    fs::write(outside.join("sub/b.txt"), format!("{CANARY} inside too\n")).unwrap();
    fs::write(outside.join(HOST_ONLY_NAME), CANARY).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("d.swap")).unwrap();
    let before = snapshot(&outside);

    let ctx = context(&root);
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let flipper = {
        let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
        let (from, to) = (root.join("d"), root.join("d.swap"));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                renameat2(AT_FDCWD, &from, AT_FDCWD, &to, RenameFlags::RENAME_EXCHANGE).unwrap();
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };

    // Each tool, its arguments for call `i`, and whether it needs a read of `d/a.txt` first (an
    // edit does; that read may race too).
    type Args = fn(usize) -> serde_json::Value;
    let tools: [(&dyn Tool, Args, bool); 8] = [
        (&ReadFile, |_| json!({"path": "d/a.txt"}), false),
        (&ReadFile, |_| json!({"path": "d/sub/b.txt"}), false),
        (
            &WriteFile,
            |i| json!({"path": format!("d/new-{i}.txt"), "content": "x"}),
            false,
        ),
        (
            &WriteFile,
            |i| json!({"path": format!("d/sub/deeper-{i}/new.txt"), "content": "x"}),
            false,
        ),
        (
            &EditFile,
            |i| json!({"path": "d/a.txt", "old_string": "inside line", "new_string": format!("inside line {i}")}),
            true,
        ),
        (&ListDir, |_| json!({"path": "d", "depth": 3}), false),
        (&Glob, |_| json!({"pattern": "**/*.txt"}), false),
        (&Grep, |_| json!({"pattern": "inside|CANARY", "path": "d"}), false),
    ];
    let mut answers = 0;
    for i in 0..500 {
        let (tool, args, needs_read) = &tools[i % tools.len()];
        if *needs_read {
            let _ = call(&ReadFile, &ctx, json!({"path": "d/a.txt"})).await;
        }
        let answer = match call(*tool, &ctx, args(i)).await {
            Ok(text) => text,
            Err(err) => format!("{err:?}"),
        };
        assert!(!answer.contains(CANARY), "{} leaked the outside: {answer}", tool.name());
        assert!(
            !answer.contains(HOST_ONLY_NAME),
            "{} listed the outside: {answer}",
            tool.name()
        );
        answers += 1;
    }
    stop.store(true, Ordering::Relaxed);
    flipper.join().unwrap();

    assert_eq!(answers, 500);
    assert!(swaps.load(Ordering::Relaxed) > 500, "the directory hardly flipped");
    assert_eq!(
        snapshot(&outside),
        before,
        "something outside the workspace was written"
    );
}
