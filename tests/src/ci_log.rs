//! Real CI failure output for triage tests: a command run on the host that fails, its output as
//! a runner captures it (stdout and stderr interleaved), wrapped in the GitHub Actions log format
//! (a timestamp on every line, the step's group, the runner's error marker).

use std::path::Path;
use std::process::Command;

/// Runs `script` with `sh` in `dir` with `env` added; returns its interleaved output.
///
/// # Panics
/// When the script cannot start or succeeds (it is meant to fail).
pub fn failing_output(dir: &Path, script: &str, env: &[(&str, &str)]) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{script} 2>&1"))
        .current_dir(dir)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("running {script}: {e}"));
    assert!(!out.status.success(), "{script} was meant to fail");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `output` as the Actions log of a job whose step `Run {command}` printed it and exited with
/// `code`, after the runner's set-up section.
pub fn actions_log(command: &str, output: &str, code: i32) -> String {
    let mut lines = vec![
        "Current runner version: '2.321.0'".to_owned(),
        "##[group]Operating System".into(),
        "Ubuntu".into(),
        "24.04.1".into(),
        "##[endgroup]".into(),
        "##[group]Run actions/checkout@v4".into(),
        "with:".into(),
        "##[endgroup]".into(),
        format!("##[group]Run {command}"),
        command.into(),
        "shell: /usr/bin/bash -e {0}".into(),
        "##[endgroup]".into(),
    ];
    lines.extend(output.lines().map(str::to_owned));
    lines.push(format!("##[error]Process completed with exit code {code}."));
    lines.push("Post job cleanup.".into());
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| format!("2026-11-30T08:00:{:02}.{:07}Z {line}\n", i % 60, i * 1000))
        .collect()
}
