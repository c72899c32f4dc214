//! The shell side of the Docker backend: the scripts the container's `sh` runs (the session's
//! bootstrap, each command's wrapping, the per-command mode, the process sweep and the OOM-kill
//! counter) and the reading of their output up to each command's marker line.

use std::pin::Pin;

use bollard::container::LogOutput;
use bollard::errors::Error as EngineError;
use futures_util::{Stream, StreamExt};
use tokio::time::Instant;

use crate::sandbox::output::Capture;
use crate::shell::quote;

pub(super) type OutputStream = Pin<Box<dyn Stream<Item = Result<LogOutput, EngineError>> + Send>>;

/// A request checked and translated for the container.
pub(super) struct Prepared {
    pub(super) command: String,
    /// Inside the container; `None` for `/workspace`.
    pub(super) cwd: Option<String>,
    pub(super) env: Vec<(String, String)>,
}

/// How reading a command's output ended.
pub(super) enum Ended {
    /// Both markers (or the one asked for) arrived.
    Markers,
    /// The streams closed.
    Eof,
    Deadline,
}

/// Reads frames into the scans until the markers, the end of the streams or the deadline.
pub(super) async fn pump(
    output: &mut OutputStream,
    out: &mut Scan,
    err: &mut Scan,
    both: bool,
    deadline: Instant,
) -> Result<Ended, EngineError> {
    while !(out.status.is_some() && (err.status.is_some() || !both)) {
        match tokio::time::timeout_at(deadline, output.next()).await {
            Err(_) => return Ok(Ended::Deadline),
            Ok(None) => {
                out.flush();
                err.flush();
                return Ok(Ended::Eof);
            }
            Ok(Some(Err(error))) => return Err(error),
            Ok(Some(Ok(LogOutput::StdOut { message } | LogOutput::Console { message }))) => out.push(&message),
            Ok(Some(Ok(LogOutput::StdErr { message }))) => err.push(&message),
            Ok(Some(Ok(LogOutput::StdIn { .. }))) => {}
        }
    }
    Ok(Ended::Markers)
}

/// One output stream up to its marker line (`\n<nonce>…\n`): what precedes the marker goes to the
/// capture, the rest of the marker line becomes the status.
pub(super) struct Scan {
    pub(super) capture: Capture,
    marker: Vec<u8>,
    /// Bytes that may start the marker, held back.
    pending: Vec<u8>,
    pub(super) status: Option<String>,
}

impl Scan {
    pub(super) fn new(nonce: &str, limit: usize) -> Self {
        let mut marker = b"\n".to_vec();
        marker.extend_from_slice(nonce.as_bytes());
        Scan {
            capture: Capture::with_limit(limit),
            marker,
            pending: Vec::new(),
            status: None,
        }
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
        if self.status.is_some() {
            // Nothing should follow the marker; late writes of killed processes are dropped.
            return;
        }
        // Fast path: nothing held back and no newline, so no marker can start here.
        if self.pending.is_empty() && !bytes.contains(&b'\n') {
            self.capture.push(bytes);
            return;
        }
        self.pending.extend_from_slice(bytes);
        let mut from = 0;
        while let Some(offset) = self.pending[from..].iter().position(|b| *b == b'\n') {
            let at = from + offset;
            let rest = &self.pending[at..];
            let n = rest.len().min(self.marker.len());
            if rest[..n] != self.marker[..n] {
                from = at + 1;
                continue;
            }
            if n < self.marker.len() {
                // A possible marker, cut: keep it for the next frame.
                break;
            }
            let line = &rest[self.marker.len()..];
            let Some(end) = line.iter().position(|b| *b == b'\n') else {
                break;
            };
            self.status = Some(String::from_utf8_lossy(&line[..end]).trim().to_owned());
            self.capture.push(&self.pending[..at]);
            self.pending.clear();
            return;
        }
        // Everything before the first possible marker start is output.
        let keep_from = self.pending[from..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(self.pending.len(), |offset| from + offset);
        self.capture.push(&self.pending[..keep_from]);
        self.pending.drain(..keep_from);
    }

    /// The stream ended without its marker: what was held back is output.
    pub(super) fn flush(&mut self) {
        if self.status.is_none() {
            self.capture.push(&self.pending);
        }
        self.pending.clear();
    }
}

/// Kills, in passes until none is left, every process of the container whose PID is not among
/// the arguments. Builtins only: it must run while a fork bomb holds every PID the limit allows.
///
/// A zombie is skipped only when it is really dead: a thread-group leader that called
/// `pthread_exit()` shows `Z` while its other threads run on, so a `Z` whose `task/` directory
/// holds any thread but the leader is killed like the living (the signal reaches the whole group).
const SWEEP_FUNCTION: &str = r#"__pitcrew_sweep() {
  __pitcrew_spare=" $* "
  __pitcrew_pass=0
  while [ "$__pitcrew_pass" -lt 100 ]; do
    __pitcrew_killed=0
    for __pitcrew_dir in /proc/[0-9]*; do
      __pitcrew_pid=${__pitcrew_dir#/proc/}
      case $__pitcrew_spare in *" $__pitcrew_pid "*) continue ;; esac
      read -r __pitcrew_stat 2>/dev/null <"$__pitcrew_dir/stat" || continue
      __pitcrew_stat=${__pitcrew_stat##*") "}
      case $__pitcrew_stat in
        X*) continue ;;
        Z*)
          __pitcrew_live=0
          for __pitcrew_task in "$__pitcrew_dir"/task/[0-9]*; do
            [ "${__pitcrew_task##*/}" = "$__pitcrew_pid" ] && continue
            [ -e "$__pitcrew_task" ] && __pitcrew_live=1 && break
          done
          [ "$__pitcrew_live" = 0 ] && continue ;;
      esac
      kill -9 "$__pitcrew_pid" 2>/dev/null && __pitcrew_killed=1
    done
    [ "$__pitcrew_killed" = 0 ] && return 0
    __pitcrew_pass=$((__pitcrew_pass + 1))
  done
}"#;

/// Sets `__pitcrew_o` to the container's OOM-kill count (cgroup v2, then v1; 0 if neither).
const OOM_FUNCTION: &str = r#"__pitcrew_oom() {
  __pitcrew_o=0
  for __pitcrew_f in /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control; do
    [ -r "$__pitcrew_f" ] || continue
    while read -r __pitcrew_k __pitcrew_v; do
      if [ "$__pitcrew_k" = oom_kill ]; then __pitcrew_o=$__pitcrew_v; fi
    done <"$__pitcrew_f"
    return 0
  done
}"#;

/// `sh -c` script of the per-command mode, after the functions; arguments: nonce, the PIDs to
/// spare (keep-alive, shell session), command. Prints the markers with the exit status and how
/// many OOM kills happened meanwhile.
const PER_COMMAND_SCRIPT: &str = r#"__pitcrew_nonce=$1 __pitcrew_spare=$2 __pitcrew_command=$3
shift 3
__pitcrew_oom; __pitcrew_before=$__pitcrew_o
( command eval "$__pitcrew_command" ) </dev/null
__pitcrew_rc=$?
__pitcrew_sweep 1 $__pitcrew_spare "$$"
__pitcrew_oom
printf '\n%s\n' "$__pitcrew_nonce" >&2
printf '\n%s %s %s\n' "$__pitcrew_nonce" "$__pitcrew_rc" "$((__pitcrew_o - __pitcrew_before))"
"#;

/// `docker exec` argv that kills every process of the container but PID 1, `spare` and itself.
pub(super) fn kill_command(spare: &[u32]) -> Vec<String> {
    let mut argv = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        format!("{SWEEP_FUNCTION}\n__pitcrew_sweep 1 \"$@\" \"$$\""),
        "pitcrew-kill".to_owned(),
    ];
    argv.extend(spare.iter().map(u32::to_string));
    argv
}

/// `docker exec` argv that prints the container's OOM-kill count.
pub(super) fn oom_command() -> Vec<String> {
    let script = format!("{OOM_FUNCTION}\n__pitcrew_oom; echo \"$__pitcrew_o\"");
    vec!["sh".to_owned(), "-c".to_owned(), script]
}

/// `docker exec` argv running `command` on its own (the per-command mode), sparing the PIDs in
/// `spare` (space-separated) when it clears what the command left running.
pub(super) fn per_command(nonce: &str, spare: &str, command: &str) -> Vec<String> {
    vec![
        "sh".to_owned(),
        "-c".to_owned(),
        format!("{SWEEP_FUNCTION}\n{OOM_FUNCTION}\n{PER_COMMAND_SCRIPT}"),
        "pitcrew".to_owned(),
        nonce.to_owned(),
        spare.to_owned(),
        command.to_owned(),
    ]
}

/// What the shell session reads first, after the functions: keep its streams on fds 8 and 9
/// (commands get them back even after `exec >file`), define the end of a command (clear what it
/// left running, print the markers), and say its PID and the OOM-kill count.
const BOOTSTRAP: &str = r#"exec 8>&1 9>&2
__pitcrew_end() {
  __pitcrew_sweep 1 KEEPALIVE "$$"
  __pitcrew_oom
  printf '\n%s\n' "$1" >&2
  printf '\n%s %s %s\n' "$1" "$2" "$__pitcrew_o"
}
__pitcrew_oom
printf '\n%s %s %s\n' NONCE "$$" "$__pitcrew_o"
"#;

/// The session's bootstrap (see `BOOTSTRAP`).
pub(super) fn bootstrap_script(nonce: &str, keepalive: u32) -> String {
    let bootstrap = BOOTSTRAP
        .replace("KEEPALIVE", &keepalive.to_string())
        .replace("NONCE", nonce);
    format!("{SWEEP_FUNCTION}\n{OOM_FUNCTION}\n{bootstrap}")
}

/// One command for the shell session. `command eval` keeps a syntax error from ending the shell;
/// the group's redirections give the command `/dev/null` as stdin and restore the shell's streams
/// after it, whatever it did to them; then the options it set are reset (quietly, even under
/// `set -x`). A working directory or extra variables put it in a subshell.
pub(super) fn shell_command(nonce: &str, prepared: &Prepared) -> String {
    let eval = format!("command eval {}", quote(&prepared.command));
    let body = if prepared.cwd.is_none() && prepared.env.is_empty() {
        eval
    } else {
        let mut body = "( ".to_owned();
        if let Some(cwd) = &prepared.cwd {
            body.push_str(&format!("cd {} || exit 1; ", quote(cwd)));
        }
        for (name, value) in &prepared.env {
            body.push_str(&format!("export {name}={}; ", quote(value)));
        }
        body.push_str(&eval);
        body.push_str(" )");
        body
    };
    format!(
        "{{ {body}\n}} </dev/null >&8 2>&9 8>&- 9>&-\n\
         {{ __pitcrew_rc=$?; set +efuvxC; }} 2>/dev/null; __pitcrew_end {nonce} \"$__pitcrew_rc\"\n"
    )
}

/// 128 random bits in hex.
pub(super) fn nonce() -> String {
    format!("pitcrew-{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

/// `"12 3"` → `(12, 3)`.
pub(super) fn parse_pair(text: &str) -> Option<(i64, i64)> {
    let mut parts = text.split_whitespace();
    let first = parts.next()?.parse().ok()?;
    let second = parts.next()?.parse().ok()?;
    Some((first, second))
}
