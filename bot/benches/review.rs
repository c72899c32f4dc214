//! Automatic pull-request reviews (issue 18): what a review sends the model, and how soon it starts.
//!
//! `pitcrew serve` with the real job handlers runs in this process beside the fakes (the fake
//! GitHub, the tests' git server and the scripted model, each on its own thread), with the local
//! sandbox (pitcrew's own overhead) and then, when an engine is reachable, the Docker sandbox with
//! the tests' busybox image. The repository has `[review] auto = true`; its `main` holds 50
//! generated Rust files (10 directories × 5, 120 lines each) and every pull request rewrites 40
//! lines in each of them (2,000 lines: +2,000 −2,000 as GitHub counts them; five lines in each of
//! a file's eight functions). The scripted model answers every request with a short final text
//! and no tool call, so one agent run is one request and a review sends one request per chunk of
//! related files (`review::chunks`).
//!
//! Measured:
//! - the first review of pull request #1 (`opened`): its requests, their bodies' bytes, the text in
//!   them (messages and tool definitions) and a token estimate from it, the largest request; against
//!   a single whole-diff prompt — the first request with its chunk's diff replaced by the whole diff
//!   (the concatenation of every chunk's diff, as the prompts show them), the "part 1 of N"
//!   paragraph dropped and every file marked as in this review, re-serialised;
//! - the incremental review after a push that changes three lines of one file (`synchronize`): the
//!   same figures, and their share of the first review's;
//! - the time from posting a signed `opened` delivery to the model's receiving the review's first
//!   request: cold (the first job of the server: the mirror cloned, a working copy checked out) and
//!   warm (pull requests #2…#6 of the same shape opened one after another once the earlier reviews
//!   ended: the mirror fetches, an idle working copy moves to the new head), with the calls the
//!   fake GitHub and the git server took before the model's first request, timed (where the time
//!   goes).
//!
//! Every review must end `succeeded` and send exactly one request per chunk pitcrew's own chunking
//! makes of the diff (`git diff`, `review::diff::split`, `review::chunks::chunk`), each answered by
//! a turn of the script: a broken set-up fails the bench rather than giving a figure.
//!
//! `RUST_LOG=pitcrew=debug` prints the server's log with timestamps on stderr (to see where a
//! review's time goes); otherwise it logs JSON at `info` into a sink, as in production.
//!
//! Run: `cargo bench -p pitcrew --bench review` (figures go in BENCHMARKS.md).

#![allow(
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "a benchmark reports on the terminal"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pitcrew::config::{Config, LoadOptions};
use pitcrew::jobs::{EndOutcome, JobEnd, JobState};
use pitcrew::review::chunks::chunk;
use pitcrew::review::diff::{FileDiff, split};
use pitcrew::reviewer::{MAX_PROMPT_DIFF_BYTES, cap_diff};
use pitcrew::serve::ServeOptions;
use pitcrew::server::RunningServer;
use pitcrew::server::signature::sign;
use pitcrew_tests::fake_github::{FakeGithub, Issue, Repo};
use pitcrew_tests::git_server::GitServer;
use pitcrew_tests::scenario::{PullEvent, pull_request_payload};
use pitcrew_tests::scripted_model::{RecordedRequest, Reply, Script, ScriptedModel};
use pitcrew_tests::server_config::ServerOverrides;
use secrecy::SecretString;
use serde_json::Value;
use tokio::sync::broadcast;

const REPO: &str = "acme/ledger";
const SECRET: &str = "the review benchmark's webhook secret";
const REPO_CONFIG: &str = "[agent]\ntest_command = \"true\"\n\n[review]\nauto = true\n";
const DIRS: [&str; 10] = [
    "accounts",
    "billing",
    "catalog",
    "checkout",
    "inventory",
    "ledger",
    "notify",
    "orders",
    "reports",
    "shipping",
];
const NOUNS: [&str; 5] = ["entry", "batch", "record", "window", "quota"];
const VERBS: [&str; 8] = ["add", "merge", "scale", "shift", "settle", "audit", "grant", "reserve"];
/// Lines each function's change rewrites: 8 functions × 5 = 40 per file.
const CHANGED_PER_FUNCTION: usize = 5;
/// The pull request every token figure is about; #2… are the warm runs.
const FIRST_PR: u64 = 1;
const WARM_RUNS: u64 = 5;
/// Lines the one-file push changes (in the first file, one in each of as many functions).
const PUSHED_LINES: usize = 3;
/// Characters per token for the estimate (see `tokens`).
const CHARS_PER_TOKEN: usize = 4;
/// How long any one review may take before the bench gives up.
const WAIT: Duration = Duration::from_secs(600);
/// The latency target of a warm review's first model request.
const WARM_TARGET: Duration = Duration::from_millis(1500);
/// The incremental review's target share of the first review's tokens.
const INCREMENTAL_TARGET: f64 = 0.15;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn git(dir: &Path, args: &[&str]) -> Result<String, Error> {
    let output = Command::new("git").args(args).current_dir(dir).output()?;
    if !output.status.success() {
        return Err(format!("git {args:?}: {}", String::from_utf8_lossy(&output.stderr)).into());
    }
    Ok(String::from_utf8(output.stdout)?)
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// The path of file `n` of directory `dir`.
fn path_of(dir: &str, n: usize) -> String {
    format!("src/{dir}/{}.rs", NOUNS[n])
}

/// The changed lines of one function: `variant` 0 is `main`'s, pull request `v` has its own (so
/// that every pull request differs from every other and a warm working copy rewrites each file).
fn function_core(k: usize, variant: u64) -> String {
    if variant == 0 {
        format!(
            "        let scaled = amount.saturating_mul({k});\n        let next = current.saturating_add(scaled);\n        \
             if next > self.limit {{\n            return None;\n        }}\n"
        )
    } else {
        let factor = k as u64 + variant;
        format!(
            "        let scaled = amount.checked_mul({factor})?;\n        let next = current.checked_add(scaled).filter(|n| \
             *n <= self.limit);\n        let Some(next) = next else {{\n            return self.overflowed(key, {variant});\n        \
             }};\n"
        )
    }
}

/// A realistic-looking module of 120 lines: a keyed store with eight operations.
fn source(dir: &str, n: usize, variant: u64) -> String {
    let noun = NOUNS[n];
    let ty = format!("{}{}", capitalised(dir), capitalised(noun));
    let mut text = format!(
        "//! `{dir}::{noun}`: the {noun}s of the {dir} service, one per key, each within a limit.\n\nuse \
         std::collections::BTreeMap;\n\n/// {noun}s by key, each at most `limit`.\n#[derive(Debug, Clone)]\npub struct \
         {ty} {{\n    entries: BTreeMap<String, u64>,\n    limit: u64,\n    overflows: u64,\n}}\n\nimpl {ty} {{\n    \
         /// An empty store whose entries stay within `limit`.\n    pub fn new(limit: u64) -> Self {{\n        {ty} {{ \
         entries: BTreeMap::new(), limit, overflows: 0 }}\n    }}\n\n"
    );
    for (k, verb) in VERBS.iter().enumerate() {
        text.push_str(&format!(
            "    /// {verb_cap}s `amount` into the {noun} under `key`; `None` past the limit.\n    pub fn {verb}_{noun}(&mut \
             self, key: &str, amount: u64) -> Option<u64> {{\n        let current = \
             self.entries.get(key).copied().unwrap_or(0);\n{core}        self.entries.insert(key.to_owned(), next);\n        \
             Some(next)\n    }}\n\n",
            verb_cap = capitalised(verb),
            core = function_core(k + 2, variant),
        ));
    }
    text.push_str(&format!(
        "    fn overflowed(&mut self, key: &str, code: u64) -> Option<u64> {{\n        self.overflows += 1;\n        \
         tracing::debug!(key, code, \"{noun} over its limit\");\n        None\n    }}\n}}\n"
    ));
    text
}

/// Every source file at `variant`: (path, text).
fn sources(variant: u64) -> Vec<(String, String)> {
    DIRS.iter()
        .flat_map(|dir| (0..NOUNS.len()).map(move |n| (path_of(dir, n), source(dir, n, variant))))
        .collect()
}

fn as_refs(files: &[(String, String)]) -> Vec<(&str, &str)> {
    files.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect()
}

/// What the text of an OpenAI Chat Completions request comes to: every message's content and
/// every tool's name, description and parameter schema — what the model tokenises, without the
/// JSON framing and escapes.
fn text_bytes(body: &Value) -> usize {
    let messages: usize = body["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .map(|m| match &m["content"] {
                    Value::String(text) => text.len(),
                    Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).map(str::len).sum(),
                    _ => 0,
                })
                .sum()
        })
        .unwrap_or(0);
    let tools: usize = body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    let f = &t["function"];
                    f["name"].as_str().map_or(0, str::len)
                        + f["description"].as_str().map_or(0, str::len)
                        + f["parameters"].to_string().len()
                })
                .sum()
        })
        .unwrap_or(0);
    messages + tools
}

/// What a review request's text is made of, apart from the diff: the system prompt, the tool
/// definitions, and the review prompt around its diff (of which the list of changed files).
struct Overhead {
    system: usize,
    tools: usize,
    prompt: usize,
    file_list: usize,
}

impl Overhead {
    fn of(body: &Value) -> Result<Overhead, Error> {
        let system = body["messages"]
            .as_array()
            .and_then(|messages| messages.iter().find(|m| m["role"] == "system"))
            .and_then(|m| m["content"].as_str())
            .map_or(0, str::len);
        let prompt = prompt_of(body)?;
        let tools = text_bytes(body) - system - prompt.len();
        let file_list = prompt
            .lines()
            .filter(|l| l.starts_with("- `"))
            .map(|l| l.len() + 1)
            .sum();
        Ok(Overhead {
            system,
            tools,
            prompt: prompt.len() - diff_in(prompt)?.len(),
            file_list,
        })
    }

    fn total(&self) -> usize {
        self.system + self.tools + self.prompt
    }
}

/// The token estimate of `bytes` of text: one token per four characters, the usual rule of thumb
/// for GPT-style tokenisers on English and code (pitcrew's own context estimate uses a more
/// conservative 3).
fn tokens(bytes: usize) -> usize {
    bytes.div_ceil(CHARS_PER_TOKEN)
}

/// The user message of a request: the rendered review prompt.
fn prompt_of(body: &Value) -> Result<&str, Error> {
    body["messages"]
        .as_array()
        .and_then(|messages| messages.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .ok_or_else(|| "a request without a user message".into())
}

const DIFF_OPEN: &str = "# The change under review\n\n```diff\n";
const DIFF_CLOSE: &str = "\n```\n\n# Earlier findings";

/// The diff a review prompt shows.
fn diff_in(prompt: &str) -> Result<&str, Error> {
    let start = prompt.find(DIFF_OPEN).ok_or("no diff section in the prompt")? + DIFF_OPEN.len();
    let end = prompt[start..]
        .find(DIFF_CLOSE)
        .ok_or("the diff section does not end")?
        + start;
    Ok(&prompt[start..end])
}

/// What one request weighed.
#[derive(Debug, Clone, Copy, Default)]
struct Weight {
    body: usize,
    text: usize,
}

impl Weight {
    fn of(request: &RecordedRequest) -> Weight {
        Weight {
            body: request.raw_body.len(),
            text: text_bytes(&request.body),
        }
    }

    fn add(self, other: Weight) -> Weight {
        Weight {
            body: self.body + other.body,
            text: self.text + other.text,
        }
    }

    fn show(self) -> String {
        format!(
            "{:>9} bytes sent, {:>9} bytes of text, ≈ {:>7} tokens",
            thousands(self.body),
            thousands(self.text),
            thousands(tokens(self.text))
        )
    }
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ms(duration: Duration) -> String {
    format!("{:.0} ms", duration.as_secs_f64() * 1000.0)
}

/// One review's requests and timing.
struct Measured {
    requests: Vec<RecordedRequest>,
    /// From posting the delivery to the model's receiving the first request.
    first_request: Duration,
    /// From posting the delivery to the job's end.
    job: Duration,
    /// The calls to the fake GitHub and the git server from posting the delivery to the first model
    /// request: (since posting, what).
    before_first: Vec<(Duration, String)>,
}

impl Measured {
    fn total(&self) -> Weight {
        self.requests
            .iter()
            .map(Weight::of)
            .fold(Weight::default(), Weight::add)
    }

    fn largest(&self) -> Weight {
        self.requests
            .iter()
            .map(Weight::of)
            .max_by_key(|w| w.body)
            .unwrap_or_default()
    }
}

/// The first request rewritten as a single prompt carrying the whole diff: its chunk's diff
/// replaced by every chunk's diff, the paragraph about parts dropped, every file marked as in this
/// review. Returns its weight (the recorded body's size corrected by the re-serialised difference,
/// so JSON formatting does not count) and the whole diff.
fn whole_diff_prompt(first: &Measured) -> Result<(Weight, String), Error> {
    let mut whole = String::new();
    for request in &first.requests {
        let diff = diff_in(prompt_of(&request.body)?)?;
        if diff.contains("[The diff is cut here") {
            return Err("a chunk's diff was cut: the whole diff cannot be rebuilt from the prompts".into());
        }
        whole.push_str(diff);
        if !whole.ends_with('\n') {
            whole.push('\n');
        }
    }
    let request = first.requests.first().ok_or("no first request")?;
    let prompt = prompt_of(&request.body)?;
    let chunk_diff = diff_in(prompt)?;
    let mut single = prompt.replacen(
        &format!("{DIFF_OPEN}{chunk_diff}{DIFF_CLOSE}"),
        &format!("{DIFF_OPEN}{}{DIFF_CLOSE}", whole.trim_end_matches('\n')),
        1,
    );
    if let Some(start) = single.find("\n\nThe pull request is large, so it is reviewed in") {
        let end = single[start + 2..].find("\n\n").map_or(single.len(), |e| e + start + 2);
        single.replace_range(start..end, "");
    }
    single = single.replace(" (another part)", " ← in this review");
    let mut body = request.body.clone();
    if let Some(message) = body["messages"]
        .as_array_mut()
        .and_then(|messages| messages.iter_mut().find(|m| m["role"] == "user"))
    {
        message["content"] = Value::String(single);
    }
    let resized = request.raw_body.len() + serde_json::to_string(&body)?.len();
    let original = serde_json::to_string(&request.body)?.len();
    Ok((
        Weight {
            body: resized.saturating_sub(original),
            text: text_bytes(&body),
        },
        whole,
    ))
}

struct World {
    github: FakeGithub,
    git: GitServer,
    model: ScriptedModel,
    server: RunningServer,
    ends: broadcast::Receiver<JobEnd>,
    http: reqwest::Client,
    base: String,
    deliveries: u64,
    _data: tempfile::TempDir,
}

impl World {
    async fn start(configure: impl FnOnce(ServerOverrides) -> ServerOverrides) -> Result<World, Error> {
        let github = FakeGithub::start();
        let git_server = GitServer::start_with(github.token_check());
        let mut files = sources(0);
        files.push((".github/pitcrew.toml".to_owned(), REPO_CONFIG.to_owned()));
        files.push((
            "README.md".to_owned(),
            "# ledger\n\nThe services' keyed stores.\n".to_owned(),
        ));
        let base = git_server.create_repo(REPO, &as_refs(&files))?;
        github.add_repo(
            Repo::new(REPO)
                .default_branch("main")
                .clone_url(&git_server.url(REPO))
                .git_dir(git_server.repo_path(REPO)),
        );
        let model = ScriptedModel::try_start(Script::new())?;
        // On the same disk as a server's data directory would be (not a tmpfs).
        let data = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
        let overrides = configure(ServerOverrides::new(&github, SECRET, data.path()).model(&model)).build();
        let config = Config::load(LoadOptions {
            config_path: None,
            env: &BTreeMap::new(),
            overrides: &overrides,
        })
        .map_err(|error| format!("the configuration: {error}"))?;
        let server = pitcrew::serve::start(
            config,
            ServeOptions {
                listener: Some(std::net::TcpListener::bind("127.0.0.1:0")?),
                ..ServeOptions::default()
            },
        )
        .await?;
        let ends = server.pool().subscribe();
        Ok(World {
            github,
            git: git_server,
            model,
            server,
            ends,
            http: reqwest::Client::new(),
            base,
            deliveries: 0,
            _data: data,
        })
    }

    fn bare(&self) -> PathBuf {
        self.git.repo_path(REPO)
    }

    fn branch(number: u64) -> String {
        format!("stores-{number}")
    }

    /// Pull request `number`: every file at variant `number`, on its own branch from `main`.
    fn open_pull(&self, number: u64) -> Result<String, Error> {
        let files = sources(number);
        let head = self.git.create_pull_head(
            REPO,
            number,
            "main",
            &as_refs(&files),
            &format!("stores: checked arithmetic ({number})"),
        )?;
        git(
            &self.bare(),
            &["update-ref", &format!("refs/heads/{}", Self::branch(number)), &head],
        )?;
        self.github.add_issue(
            REPO,
            Issue::pull_request(
                number,
                &format!("Stores: checked arithmetic ({number})"),
                (&Self::branch(number), &head),
                ("main", &self.base),
            )
            .user("bob"),
        );
        Ok(head)
    }

    /// A commit on pull request `number`'s branch changing `PUSHED_LINES` lines of its first file;
    /// the branch, `refs/pull/N/head` and GitHub's idea of the head moved to it.
    fn push_one_file(&self, number: u64) -> Result<String, Error> {
        let (path, text) = sources(number).into_iter().next().ok_or("no files")?;
        let edited = text.replacen(
            ".filter(|n| *n <= self.limit)",
            ".filter(|n| *n < self.limit)",
            PUSHED_LINES,
        );
        let sha = self.git.commit(
            REPO,
            &Self::branch(number),
            &[(&path, &edited)],
            "stores: the limit itself is over it",
        )?;
        git(&self.bare(), &["update-ref", &format!("refs/pull/{number}/head"), &sha])?;
        self.github.update_issue(REPO, number, |issue| {
            if let Some(pull) = issue.pull.as_mut() {
                sha.clone_into(&mut pull.head.sha);
            }
        });
        Ok(sha)
    }

    /// The diff `from..to` as `git diff` prints it, and the chunks pitcrew's review makes of it
    /// (one request each).
    fn diff(&self, from: &str, to: &str) -> Result<DiffShape, Error> {
        let diff = git(&self.bare(), &["diff", "--no-color", "--no-ext-diff", from, to])?;
        let files = split(&diff);
        let refs: Vec<&FileDiff> = files.iter().collect();
        Ok(DiffShape {
            files: files.len(),
            additions: files.iter().map(|f| f.additions).sum(),
            deletions: files.iter().map(|f| f.deletions).sum(),
            bytes: diff.len(),
            chunks: chunk(&refs).len(),
        })
    }

    /// Posts GitHub's signed `pull_request` delivery of `action` for pull request `number` at
    /// `head`; returns when it was sent.
    async fn deliver(&mut self, action: &str, number: u64, head: &str, before: Option<&str>) -> Result<Instant, Error> {
        let branch = Self::branch(number);
        let event = PullEvent {
            action,
            number,
            head_sha: head,
            head_ref: &branch,
            base_ref: "main",
            author: "bob",
            sender: "bob",
            draft: false,
            labels: &[],
            before,
        };
        let payload = pull_request_payload(REPO, &self.git.url(REPO), &event, Some(self.github.installation_id()));
        let body = serde_json::to_vec(&payload)?;
        self.deliveries += 1;
        let request = self
            .http
            .post(format!("{}/webhook", self.server.url()))
            .header("X-GitHub-Event", "pull_request")
            .header("X-GitHub-Delivery", format!("review-bench-{}", self.deliveries))
            .header("X-Hub-Signature-256", sign(&SecretString::from(SECRET), &body))
            .header("content-type", "application/json")
            .body(body);
        let posted = Instant::now();
        let response = request.send().await?;
        if response.status().as_u16() != 202 {
            return Err(format!("the {action} delivery for #{number} was answered {}", response.status()).into());
        }
        Ok(posted)
    }

    /// Delivers `action` for pull request `number` at `head` with `expected` turns queued (one per
    /// chunk), waits for the review to end, and checks it: succeeded, exactly `expected` requests,
    /// each answered by a turn.
    async fn review(
        &mut self,
        action: &str,
        number: u64,
        head: &str,
        before: Option<&str>,
        expected: usize,
    ) -> Result<Measured, Error> {
        let already = self.model.requests().len();
        for part in 1..=expected {
            self.model.push(Reply::text(format!(
                "Part {part}: moves the stores to checked arithmetic.\nNothing to change."
            )));
        }
        let posted = self.deliver(action, number, head, before).await?;
        let end = tokio::time::timeout(WAIT, self.ends.recv())
            .await
            .map_err(|_| format!("the review of #{number} ({action}) did not end in time"))??;
        let ended = posted.elapsed();
        if end.outcome != EndOutcome::Finished(JobState::Succeeded) {
            let job = self.server.store().job(end.job).await?;
            return Err(format!("the review of #{number} ({action}) ended {:?}: {job:#?}", end.outcome).into());
        }
        let requests: Vec<RecordedRequest> = self.model.requests().into_iter().skip(already).collect();
        if requests.len() != expected || self.model.remaining_turns() != 0 {
            return Err(format!(
                "the review of #{number} ({action}) sent {} requests for {expected} chunks ({} turns left)",
                requests.len(),
                self.model.remaining_turns()
            )
            .into());
        }
        if let Some(unanswered) = requests.iter().find(|r| r.turn.is_none()) {
            return Err(format!("a request was not answered by the script: {}", unanswered.path).into());
        }
        let first = requests.first().ok_or("no request")?.received_at;
        let between = |at: Instant| at >= posted && at <= first;
        let mut before_first: Vec<(Duration, String)> = self
            .github
            .requests()
            .into_iter()
            .filter(|r| between(r.received_at))
            .map(|r| {
                let what = r.operation.unwrap_or_else(|| format!("{} {}", r.method, r.path));
                (r.received_at - posted, format!("GitHub {what}"))
            })
            .collect();
        before_first.extend(
            self.git
                .requests()
                .into_iter()
                .filter(|r| between(r.received_at))
                .map(|r| {
                    let what = r.path.rsplit_once(".git/").map_or(r.path.as_str(), |(_, tail)| tail);
                    let answer = if r.authorized {
                        String::new()
                    } else {
                        format!(" (answered {}: no credentials yet)", r.status)
                    };
                    (r.received_at - posted, format!("git {} {what}{answer}", r.method))
                }),
        );
        before_first.sort_by_key(|(at, _)| *at);
        Ok(Measured {
            first_request: first.saturating_duration_since(posted),
            job: ended,
            before_first,
            requests,
        })
    }
}

/// A pull request's diff.
#[derive(Debug, Clone, Copy)]
struct DiffShape {
    files: usize,
    additions: u32,
    deletions: u32,
    /// Of `git diff`'s output.
    bytes: usize,
    /// What `review::chunks` makes of the files.
    chunks: usize,
}

/// What one backend's run measured.
struct Run {
    /// The git server's fetches and the fake GitHub's API calls, over the whole run.
    calls: (usize, usize),
    shape: DiffShape,
    first: Measured,
    incremental: Measured,
    warm: Vec<Measured>,
}

async fn run(configure: impl FnOnce(ServerOverrides) -> ServerOverrides) -> Result<Run, Error> {
    let mut world = World::start(configure).await?;

    // The first review: cold (the server's first job).
    let head = world.open_pull(FIRST_PR)?;
    let shape = world.diff(&world.base, &head)?;
    let parts = shape.chunks;
    let first = world.review("opened", FIRST_PR, &head, None, parts).await?;
    let prompt = prompt_of(&first.requests[0].body)?;
    if parts > 1 && !prompt.contains(&format!("this is part 1 of {parts}")) {
        return Err(format!("the first request is not part 1 of {parts}:\n{prompt}").into());
    }

    // A push changing three lines of one file: only that file is reviewed again.
    let pushed = world.push_one_file(FIRST_PR)?;
    let incremental = world.review("synchronize", FIRST_PR, &pushed, Some(&head), 1).await?;
    let prompt = prompt_of(&incremental.requests[0].body)?;
    if !prompt.contains(&format!(
        "Only what changed since the last review (commit `{}`)",
        &head[..7]
    )) {
        return Err(format!("the incremental review did not cover only the push:\n{prompt}").into());
    }

    // Warm: more pull requests of the same shape, one after another.
    let mut warm = Vec::new();
    for number in FIRST_PR + 1..=FIRST_PR + WARM_RUNS {
        let head = world.open_pull(number)?;
        let parts = world.diff(&world.base, &head)?.chunks;
        warm.push(world.review("opened", number, &head, None, parts).await?);
    }

    let violations = world.github.violations();
    if !violations.is_empty() {
        return Err(format!("the fake GitHub saw invalid requests: {violations:#?}").into());
    }
    let calls = (world.git.fetch_count(REPO), world.github.requests().len());
    world.server.shutdown(Duration::from_secs(10)).await;
    Ok(Run {
        calls,
        shape,
        first,
        incremental,
        warm,
    })
}

fn report(label: &str, run: &Run) -> Result<(), Error> {
    let files = sources(0);
    let lines: usize = files.iter().map(|(_, t)| t.lines().count()).sum();
    let shape = run.shape;
    println!();
    println!("== {label} ==");
    println!(
        "repository: {} source files in {} directories, {} lines; pull request #{FIRST_PR} rewrites {} lines in each \
         ({} files, +{} -{}, a {}-byte `git diff`)",
        files.len(),
        DIRS.len(),
        thousands(lines),
        VERBS.len() * CHANGED_PER_FUNCTION,
        shape.files,
        thousands(shape.additions as usize),
        thousands(shape.deletions as usize),
        thousands(shape.bytes),
    );

    let first = &run.first;
    let total = first.total();
    println!(
        "first review (#{FIRST_PR}, opened): {} requests, one per chunk",
        first.requests.len()
    );
    for (n, request) in first.requests.iter().enumerate() {
        let diff = diff_in(prompt_of(&request.body)?)?.len();
        let files = prompt_of(&request.body)?
            .lines()
            .filter(|l| l.ends_with("← in this review"))
            .count();
        println!(
            "  part {:>2}: {:>2} files, diff {:>7} bytes; {}",
            n + 1,
            files,
            thousands(diff),
            Weight::of(request).show()
        );
    }
    println!("  total:   {}", total.show());
    println!("  largest: {}", first.largest().show());
    let (single, whole_diff) = whole_diff_prompt(first)?;
    let fixed = Overhead::of(&first.requests[0].body)?;
    println!(
        "  every request without its diff: {} bytes of text (≈ {} tokens): system prompt {}, tool definitions {}, \
         the review prompt around the diff {} (of which the list of changed files {})",
        thousands(fixed.total()),
        thousands(tokens(fixed.total())),
        thousands(fixed.system),
        thousands(fixed.tools),
        thousands(fixed.prompt),
        thousands(fixed.file_list),
    );
    println!(
        "single whole-diff prompt (the first request carrying the whole diff, {} bytes):",
        thousands(whole_diff.len())
    );
    println!("  one request: {}", single.show());
    println!(
        "  the chunked review sends {:.2}× its text ({:+} tokens); pitcrew would cut a single prompt's diff at {} KiB \
         ({} bytes shown)",
        total.text as f64 / single.text as f64,
        tokens(total.text) as i64 - tokens(single.text) as i64,
        MAX_PROMPT_DIFF_BYTES / 1024,
        thousands(cap_diff(&whole_diff, MAX_PROMPT_DIFF_BYTES).len()),
    );

    let incremental = run.incremental.total();
    let share = incremental.text as f64 / total.text as f64;
    println!(
        "incremental review (#{FIRST_PR}, synchronize after {PUSHED_LINES} lines of 1 file changed): {} request",
        run.incremental.requests.len()
    );
    println!("  total:   {}", incremental.show());
    println!(
        "  {:.1}% of the first review's text (target < {:.0}%: {}); {:.1}% of its bytes sent",
        share * 100.0,
        INCREMENTAL_TARGET * 100.0,
        if share < INCREMENTAL_TARGET { "met" } else { "MISSED" },
        incremental.body as f64 / total.body as f64 * 100.0
    );

    println!("time from posting `opened` to the first model request:");
    println!(
        "  cold (#{FIRST_PR}, the server's first job: mirror cloned, copy checked out): {}   (whole review: {})",
        ms(first.first_request),
        ms(first.job)
    );
    let mut warm: Vec<Duration> = run.warm.iter().map(|m| m.first_request).collect();
    let each: Vec<String> = warm.iter().map(|d| ms(*d)).collect();
    warm.sort();
    let median = warm[warm.len() / 2];
    println!(
        "  warm (#{}…#{}, {WARM_RUNS} runs): median {}, min {}, max {}   (each: {}; target < {}: {})",
        FIRST_PR + 1,
        FIRST_PR + WARM_RUNS,
        ms(median),
        ms(warm[0]),
        ms(warm[warm.len() - 1]),
        each.join(", "),
        ms(WARM_TARGET),
        if median < WARM_TARGET { "met" } else { "MISSED" }
    );
    let warm_jobs: Vec<String> = run.warm.iter().map(|m| ms(m.job)).collect();
    println!("  warm whole reviews: {}", warm_jobs.join(", "));
    // The run whose first request came at the median: what happened before it.
    let typical = run
        .warm
        .iter()
        .find(|m| m.first_request == median)
        .ok_or("no median run")?;
    println!(
        "  before the median warm run's first request ({} GitHub API calls, {} git requests, all on loopback):",
        typical
            .before_first
            .iter()
            .filter(|(_, what)| what.starts_with("GitHub"))
            .count(),
        typical
            .before_first
            .iter()
            .filter(|(_, what)| what.starts_with("git "))
            .count(),
    );
    for (at, what) in &typical.before_first {
        println!("    +{:>6.1} ms  {what}", at.as_secs_f64() * 1000.0);
    }
    println!(
        "    +{:>6.1} ms  the model's first request",
        typical.first_request.as_secs_f64() * 1000.0
    );
    println!(
        "  incremental (synchronize → first request): {}   (whole review: {})",
        ms(run.incremental.first_request),
        ms(run.incremental.job)
    );
    println!(
        "({} reviews: {} git fetches, {} GitHub API calls)",
        WARM_RUNS + 2,
        run.calls.0,
        run.calls.1
    );
    Ok(())
}

fn logging() -> Result<(), Error> {
    match std::env::var("RUST_LOG") {
        Ok(filter) if !filter.is_empty() => tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_timer(tracing_subscriber::fmt::time::uptime())
            .with_writer(std::io::stderr)
            .try_init(),
        // What `pitcrew serve` logs, formatted as for a log collector, then discarded.
        _ => tracing_subscriber::fmt()
            .json()
            .with_max_level(tracing::Level::INFO)
            .with_writer(std::io::sink)
            .try_init(),
    }
    .map_err(|error| format!("logging: {error}").into())
}

fn main() -> Result<(), Error> {
    logging()?;
    // `pitcrew serve`'s runtime on this machine: as many workers as cores.
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    println!("automatic pull-request reviews, scripted model (one short final answer per request)");
    let local = runtime.block_on(run(|overrides| overrides))?;
    report("local sandbox (pitcrew's own overhead)", &local)?;
    match pitcrew_tests::docker::test_image() {
        Some(image) => {
            let docker = runtime.block_on(run(|overrides| overrides.docker(image)))?;
            report(&format!("Docker sandbox ({image})"), &docker)?;
        }
        None => println!("\n(no Docker engine: the Docker sandbox's figures are left out)"),
    }
    Ok(())
}
