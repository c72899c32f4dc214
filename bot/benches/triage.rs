//! Triage of a 20 MB job log: a generated GitHub Actions log (timestamps on every line) of a
//! `cargo test` step that printed 20 MB — passing tests, builds, warnings that mention connections
//! and downloads, debug lines — and failed at the end with one panicking test. `triage::analyse`
//! (what `pitcrew triage --log` runs) reads it five times; the median, the slowest and the finding
//! are printed. The log is capped at 4 MiB head and tail before it is read line by line, so the
//! figure also shows that the cap holds.
//!
//! Run: `cargo bench -p pitcrew --bench triage` (figures go in BENCHMARKS.md).

#![allow(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// About this many bytes of log.
const SIZE: usize = 20 * 1024 * 1024;

fn log() -> String {
    let stamp = "2026-11-30T08:00:00.0000000Z";
    let mut log =
        format!("{stamp} ##[group]Run cargo test --workspace\n{stamp} cargo test --workspace\n{stamp} ##[endgroup]\n");
    let mut i: usize = 0;
    while log.len() < SIZE {
        let _ = match i % 10 {
            0..=5 => writeln!(log, "{stamp} test module{}::tests::case_{i} ... ok", i % 97),
            6 | 7 => writeln!(
                log,
                "{stamp}    Compiling crate{} v0.{}.{} (/home/runner/work/x/x/crates/crate{})",
                i % 311,
                i % 9,
                i % 13,
                i % 311
            ),
            8 => writeln!(
                log,
                "{stamp} warning: unused variable: `x{i}` in src/lib{}.rs:{}:9; connection pool idle, retrying fetch from the index",
                i % 50,
                i % 400
            ),
            _ => writeln!(
                log,
                "{stamp} [{i}] DEBUG heartbeat ok; downloaded 1024 bytes from https://index.crates.io/config.json in 3ms"
            ),
        };
        i += 1;
    }
    for line in [
        "---- module3::tests::adds stdout ----",
        "thread 'module3::tests::adds' panicked at src/lib3.rs:12:5:",
        "assertion `left == right` failed",
        "failures:",
        "    module3::tests::adds",
        "test result: FAILED. 100 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 9.00s",
        "##[error]Process completed with exit code 101.",
    ] {
        let _ = writeln!(log, "{stamp} {line}");
    }
    log
}

fn main() {
    let log = log();
    let mut times: Vec<Duration> = Vec::new();
    let mut last = None;
    for _ in 0..5 {
        let start = Instant::now();
        let analysis = pitcrew::triage::analyse(&log);
        times.push(start.elapsed());
        last = Some(analysis);
    }
    times.sort();
    let Some(analysis) = last else { return };
    println!(
        "triage of a {:.1} MB log: median {:.0} ms, slowest {:.0} ms; class {}, {} finding(s): {:?} at log lines {:?}",
        log.len() as f64 / 1e6,
        times[2].as_secs_f64() * 1e3,
        times[4].as_secs_f64() * 1e3,
        analysis.classification.class.name(),
        analysis.findings.len(),
        analysis.findings.first().and_then(|f| f.test.as_deref()),
        analysis.findings.first().map(|f| &f.evidence),
    );
}
