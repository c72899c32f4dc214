//! The one secret filter for text that leaves for GitHub: request bodies of API writes, the
//! Action's step summary and outputs, commit messages and committed files all pass through here.
//!
//! Two kinds of match are replaced by [`REDACTED`]: the values of the secrets this process holds
//! (registered with [`register`] as they are read or minted: API keys, tokens, the webhook
//! secret, the App's private key and each line of its base64 body), and common token shapes
//! (`ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_` + 36 alphanumerics, `github_pat_` + 82, `sk-` API keys,
//! PEM private-key blocks), which catch secrets pitcrew never held, such as one a hostile pull
//! request planted for the model to repeat.
//!
//! This is the last line of defence, not the first: the sandbox keeps secrets out of reach of the
//! agent's commands. It cannot catch a secret that was transformed (encoded, split, reversed).

use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;
use std::sync::{PoisonError, RwLock};

use secrecy::{ExposeSecret, SecretString};

/// What a secret is replaced by.
pub const REDACTED: &str = "[redacted]";

/// The sentence added to a Markdown body (a comment, a check run's summary) something was
/// withheld from, so its reader knows the text is not what the model wrote.
pub const WITHHELD_NOTE: &str = "\n\n> pitcrew withheld a secret from this text: it shows as `[redacted]`.";

/// Registered values shorter than this are not matched: a few characters would wreck ordinary
/// text, and a secret that short is no secret (the configuration checks rule out empty ones).
pub const MIN_SECRET_LEN: usize = 8;

/// The values of every secret this process holds. A process holds a handful (more as
/// installation tokens are minted), so a linear scan per text is cheap.
static SECRETS: RwLock<Vec<SecretString>> = RwLock::new(Vec::new());

/// Adds `secret` to the values that are redacted wherever they appear. Blank or short values are
/// ignored (see [`MIN_SECRET_LEN`]); registering a value twice is harmless.
pub fn register(secret: &SecretString) {
    register_str(secret.expose_secret());
}

fn register_str(value: &str) {
    let value = value.trim();
    if value.len() < MIN_SECRET_LEN {
        return;
    }
    let mut secrets = SECRETS.write().unwrap_or_else(PoisonError::into_inner);
    if !secrets.iter().any(|s| s.expose_secret() == value) {
        secrets.push(SecretString::from(value.to_owned()));
    }
}

/// Registers a PEM private key: the whole text, and each line of its base64 body (a model that
/// read the key file could quote any one of them).
pub fn register_private_key(pem: &str) {
    register_str(pem);
    for line in pem.lines().map(str::trim).filter(|l| !l.starts_with("-----")) {
        // Short lines (the last of the body) are too likely to occur in ordinary text.
        if line.len() >= 16 {
            register_str(line);
        }
    }
}

/// A redacted text and how many matches were replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted<'a> {
    pub text: Cow<'a, str>,
    pub count: usize,
}

/// `text` with every registered secret and every token shape replaced by [`REDACTED`].
pub fn redact(text: &str) -> Redacted<'_> {
    let mut ranges = token_shapes(text);
    {
        let secrets = SECRETS.read().unwrap_or_else(PoisonError::into_inner);
        for secret in secrets.iter() {
            let value = secret.expose_secret();
            ranges.extend(text.match_indices(value).map(|(at, _)| at..at + value.len()));
        }
    }
    if ranges.is_empty() {
        return Redacted {
            text: Cow::Borrowed(text),
            count: 0,
        };
    }
    ranges.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for range in ranges {
        match merged.last_mut() {
            Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
            _ => merged.push(range),
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for range in &merged {
        out.push_str(&text[at..range.start]);
        out.push_str(REDACTED);
        at = range.end;
    }
    out.push_str(&text[at..]);
    Redacted {
        text: Cow::Owned(out),
        count: merged.len(),
    }
}

/// Whether `text` holds a registered secret or a token shape.
pub fn contains_secret(text: &str) -> bool {
    redact(text).count > 0
}

/// The matches in `text`, as the strings matched (for comparing with what a file held before).
pub fn matches(text: &str) -> Vec<String> {
    let mut found: Vec<String> = token_shapes(text).into_iter().map(|r| text[r].to_owned()).collect();
    let secrets = SECRETS.read().unwrap_or_else(PoisonError::into_inner);
    for secret in secrets.iter() {
        let value = secret.expose_secret();
        if text.contains(value) {
            found.push(value.to_owned());
        }
    }
    found
}

/// Redacts every string in a JSON value (keys are field names, never the model's text); a
/// Markdown field (`body`, `summary`) that lost something also gets [`WITHHELD_NOTE`]. Returns the
/// number of matches replaced.
pub fn redact_json(value: &mut serde_json::Value) -> usize {
    redact_json_field(None, value)
}

fn redact_json_field(key: Option<&str>, value: &mut serde_json::Value) -> usize {
    match value {
        serde_json::Value::String(text) => {
            let redacted = redact(text);
            let count = redacted.count;
            if count > 0 {
                let mut new = redacted.text.into_owned();
                if matches!(key, Some("body" | "summary")) {
                    new.push_str(WITHHELD_NOTE);
                }
                *text = new;
            }
            count
        }
        serde_json::Value::Array(items) => items.iter_mut().map(|item| redact_json_field(key, item)).sum(),
        serde_json::Value::Object(fields) => fields
            .iter_mut()
            .map(|(name, item)| redact_json_field(Some(name), item))
            .sum(),
        serde_json::Value::Null | serde_json::Value::Bool(_) | serde_json::Value::Number(_) => 0,
    }
}

/// A writer that passes each write through the filter: for the log, which the Actions runner
/// uploads to GitHub (`::add-mask::` covers the step's own secrets there, not token shapes). The
/// log formatter writes each event in one call, so a secret is never split between two writes.
pub struct Redacting<W>(pub W);

impl<W: std::io::Write> std::io::Write for Redacting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let redacted = redact(&text);
        if redacted.count == 0 {
            self.0.write_all(buf)?;
        } else {
            self.0.write_all(redacted.text.as_bytes())?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// What [`scrub_file`] did to a file about to be committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileScrub {
    /// Nothing new to withhold: commit it as it is.
    Clean,
    /// A text file: the secrets it newly held were replaced by [`REDACTED`] in the working tree.
    Redacted,
    /// Not text, so it cannot be edited safely: leave it out of the commit.
    LeaveOut,
}

/// Files larger than this are committed unscanned: reading them whole per commit costs more than
/// the risk (the agent's own output is far smaller, and `max_new_file_bytes` caps new files).
const MAX_SCANNED_FILE: u64 = 16 * 1024 * 1024;

/// Checks the working-tree file `path` (relative to `root`) before it is committed on top of
/// `base`: secrets or token shapes it holds that the same path at `base` did not hold are
/// replaced in the file (text) or make it left out (binary). Those already in the repository are
/// left alone: they are public already, and rewriting them would change lines nobody touched.
pub fn scrub_file(repo: &git2::Repository, base: Option<&git2::Tree<'_>>, root: &Path, path: &Path) -> FileScrub {
    let full = root.join(path);
    let Ok(meta) = std::fs::symlink_metadata(&full) else {
        return FileScrub::Clean;
    };
    if !meta.is_file() || meta.len() > MAX_SCANNED_FILE {
        return FileScrub::Clean;
    }
    let Ok(bytes) = std::fs::read(&full) else {
        return FileScrub::Clean;
    };
    let found = matches(&String::from_utf8_lossy(&bytes));
    if found.is_empty() {
        return FileScrub::Clean;
    }
    let before = base
        .and_then(|tree| tree.get_path(path).ok())
        .and_then(|entry| repo.find_blob(entry.id()).ok())
        .map(|blob| String::from_utf8_lossy(blob.content()).into_owned())
        .unwrap_or_default();
    let new: Vec<&String> = found
        .iter()
        .filter(|secret| !before.contains(secret.as_str()))
        .collect();
    if new.is_empty() {
        return FileScrub::Clean;
    }
    let Ok(mut text) = String::from_utf8(bytes) else {
        return FileScrub::LeaveOut;
    };
    for secret in new {
        text = text.replace(secret.as_str(), REDACTED);
    }
    match write_no_follow(&full, text.as_bytes()) {
        Ok(()) => FileScrub::Redacted,
        // A file that cannot be rewritten must not go out as it is.
        Err(err) => {
            tracing::warn!(path = %path.display(), %err, "could not redact a file; leaving it out of the commit");
            FileScrub::LeaveOut
        }
    }
}

/// Truncates and rewrites `path`, refusing a symlink in its last component.
fn write_no_follow(path: &Path, content: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)?;
    file.write_all(content)?;
    file.flush()
}

/// The byte ranges of token shapes in `text`.
fn token_shapes(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let end = match bytes[i] {
            b'g' if at_word_start(bytes, i) => github_token(bytes, i),
            b's' if at_word_start(bytes, i) => api_key(bytes, i),
            b'-' => pem_block(text, i),
            _ => None,
        };
        match end {
            Some(end) => {
                ranges.push(i..end);
                i = end;
            }
            None => i += 1,
        }
    }
    ranges
}

/// Token characters: a match must not start in the middle of a word (`task-…`, `xghs_…`).
fn at_word_start(bytes: &[u8], i: usize) -> bool {
    i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || matches!(bytes[i - 1], b'_' | b'-'))
}

fn run_len(bytes: &[u8], from: usize, allowed: impl Fn(u8) -> bool) -> usize {
    bytes
        .get(from..)
        .map_or(0, |rest| rest.iter().take_while(|b| allowed(**b)).count())
}

/// GitHub's tokens: `gh[pousr]_` and 36 alphanumerics (GitHub may lengthen them, so more is a
/// match too); fine-grained PATs `github_pat_` + 22 alphanumerics + `_` + 59.
fn github_token(bytes: &[u8], i: usize) -> Option<usize> {
    let rest = &bytes[i..];
    if rest.len() >= 4 && rest.starts_with(b"gh") && b"pousr".contains(&rest[2]) && rest[3] == b'_' {
        let run = run_len(bytes, i + 4, |b| b.is_ascii_alphanumeric());
        return (run >= 36).then_some(i + 4 + run);
    }
    if rest.starts_with(b"github_pat_") {
        let from = i + "github_pat_".len();
        let first = run_len(bytes, from, |b| b.is_ascii_alphanumeric());
        if first == 22 && bytes.get(from + 22) == Some(&b'_') {
            let second = run_len(bytes, from + 23, |b| b.is_ascii_alphanumeric());
            return (second >= 59).then_some(from + 23 + second);
        }
    }
    None
}

/// OpenAI and Anthropic keys: `sk-` (`sk-proj-…`, `sk-ant-api03-…`) and at least 20 of
/// `[A-Za-z0-9_-]`, holding a digit and a letter: a random key always does, a long kebab-case
/// name (`sk-some-css-class-name`) rarely.
fn api_key(bytes: &[u8], i: usize) -> Option<usize> {
    if !bytes[i..].starts_with(b"sk-") {
        return None;
    }
    let key = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-');
    let run = run_len(bytes, i + 3, key);
    let body = &bytes[i + 3..i + 3 + run];
    let mixed = body.iter().any(u8::is_ascii_digit) && body.iter().any(u8::is_ascii_alphabetic);
    (run >= 20 && mixed).then_some(i + 3 + run)
}

/// A PEM private key, `-----BEGIN … PRIVATE KEY-----` to its `-----END … PRIVATE KEY-----` (or
/// to the end of the text, when cut off).
fn pem_block(text: &str, i: usize) -> Option<usize> {
    let rest = &text[i..];
    let header = rest.strip_prefix("-----BEGIN ")?;
    let label_end = header.find("-----")?;
    let label = &header[..label_end];
    if !label.ends_with("PRIVATE KEY") || label.contains('\n') {
        return None;
    }
    let footer = format!("-----END {label}-----");
    Some(match rest.find(&footer) {
        Some(at) => i + at + footer.len(),
        None => text.len(),
    })
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    /// Real-shaped, made-up tokens.
    const GHS: &str = "ghs_16C7e42F292c6912E7710c838347Ae178B4a";
    const GHP: &str = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789";
    const PAT: &str = "github_pat_11ABCDEFG0123456789abc_0123456789abcdefghijABCDEFGHIJ0123456789abcdefghijABCDEFGHI";
    const OPENAI: &str = "sk-proj-Ab3dEf6hIj9kLmN0pQrStUvWxYz_12-34";
    const ANTHROPIC: &str = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789";

    fn red(text: &str) -> String {
        redact(text).text.into_owned()
    }

    #[test]
    fn real_shaped_tokens_are_redacted_wherever_they_stand() {
        assert_eq!(GHS.len(), 40);
        for token in [GHS, GHP, PAT, OPENAI, ANTHROPIC] {
            assert_eq!(red(token), REDACTED, "{token}");
            assert_eq!(red(&format!("token: {token}.")), "token: [redacted].", "{token}");
            assert_eq!(red(&format!("`{token}`")), "`[redacted]`", "{token}");
        }
        for prefix in ["gho_", "ghu_", "ghr_"] {
            let token = format!("{prefix}{}", &GHS[4..]);
            assert_eq!(red(&token), REDACTED);
        }
        assert_eq!(
            red(&format!("https://x-access-token:{GHS}@github.com/acme/calc.git")),
            "https://x-access-token:[redacted]@github.com/acme/calc.git"
        );
        assert_eq!(
            red(&format!("INPUT_GITHUB_TOKEN={GHS}\0INPUT_API_KEY={OPENAI}\0HOME=/root")),
            "INPUT_GITHUB_TOKEN=[redacted]\0INPUT_API_KEY=[redacted]\0HOME=/root"
        );
        assert_eq!(redact(&format!("{GHS} and {GHP}")).count, 2);
    }

    #[test]
    fn near_misses_are_left_alone() {
        for text in [
            // Too short, or not at the start of a word.
            "ghs_16C7e42F292c6912E7710c838347Ae178B4",
            "xghs_16C7e42F292c6912E7710c838347Ae178B4a",
            "gha_16C7e42F292c6912E7710c838347Ae178B4a",
            "github_pat_11ABCDEFG0123456789abc_0123456789",
            "github_pat_tooshort_0123456789abcdefghijABCDEFGHIJ0123456789abcdefghijABCDEFGHIJKL",
            "sk-learn",
            "pip install sk-video scikit-learn",
            "sk-some-long-css-class-name-here",
            "task-0123456789abcdefghijklmnop",
            "disk-0123456789abcdefghijklmnop",
            "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----",
            "a ----- divider ----- line",
            "ghs_ and sk- alone",
        ] {
            assert_eq!(red(text), text, "{text:?}");
        }
    }

    #[test]
    fn private_key_blocks_are_redacted_whole_even_when_cut_off() {
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAuVV0vGxGx0rNq\nabc=\n-----END RSA PRIVATE KEY-----";
        assert_eq!(red(&format!("key:\n{pem}\nafter")), "key:\n[redacted]\nafter");
        let pkcs8 = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----";
        assert_eq!(red(pkcs8), REDACTED);
        assert_eq!(
            red("head -c 40 key.pem\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk"),
            "head -c 40 key.pem\n[redacted]"
        );
    }

    #[test]
    fn registered_values_are_redacted_but_short_ones_are_ignored() {
        register(&SecretString::from("whsec-the-unit-test-webhook-secret"));
        register(&SecretString::from("short"));
        assert_eq!(
            red("the secret is whsec-the-unit-test-webhook-secret!"),
            "the secret is [redacted]!"
        );
        assert_eq!(red("a short note"), "a short note");
        assert_eq!(
            matches("x whsec-the-unit-test-webhook-secret"),
            ["whsec-the-unit-test-webhook-secret"]
        );
        // A value inside a token shape is one match, not two overlapping ones.
        register(&SecretString::from("Ovl4pQ9zR2mXc7Tb"));
        let token = "ghs_Ovl4pQ9zR2mXc7Tb0123456789abcdefghij";
        let text = format!("{token} Ovl4pQ9zR2mXc7Tb");
        let redacted = redact(&text);
        assert_eq!((redacted.text.as_ref(), redacted.count), ("[redacted] [redacted]", 2));
    }

    #[test]
    fn every_line_of_a_registered_private_key_is_redacted() {
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nQUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=\nMTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1u\nAQAB\n-----END RSA PRIVATE KEY-----\n";
        register_private_key(pem);
        assert_eq!(
            red("line 2 is MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1u"),
            "line 2 is [redacted]"
        );
        assert_eq!(red("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo="), REDACTED);
        assert_eq!(red("AQAB is the usual exponent"), "AQAB is the usual exponent");
    }

    // `scrub_file` is tested through the commit that calls it, in `workspace`'s tests.

    #[test]
    fn the_log_writer_redacts_each_write() {
        use std::io::Write as _;
        let mut log = Redacting(Vec::new());
        log.write_all(format!("INFO job: said {GHS}\n").as_bytes()).unwrap();
        log.write_all(b"INFO job: nothing\n").unwrap();
        assert_eq!(
            String::from_utf8(log.0).unwrap(),
            "INFO job: said [redacted]\nINFO job: nothing\n"
        );
    }

    #[test]
    fn json_strings_are_redacted_and_markdown_bodies_say_so() {
        let mut body = serde_json::json!({
            "title": format!("Fix {GHS}"),
            "body": format!("the token is {GHS}"),
            "output": {"summary": "fine", "text": OPENAI, "annotations": [{"message": GHP, "start_line": 3}]},
            GHS: 1,
        });
        assert_eq!(redact_json(&mut body), 4);
        assert_eq!(body["title"], "Fix [redacted]");
        assert_eq!(body["body"], format!("the token is [redacted]{WITHHELD_NOTE}"));
        assert_eq!(body["output"]["summary"], "fine");
        assert_eq!(body["output"]["text"], "[redacted]");
        assert_eq!(body["output"]["annotations"][0]["message"], "[redacted]");
        assert_eq!(body["output"]["annotations"][0]["start_line"], 3);
        // Keys are the API's field names, not text.
        assert_eq!(body[GHS], 1);
        let mut clean = serde_json::json!({"body": "nothing here", "n": [1, 2]});
        assert_eq!(redact_json(&mut clean), 0);
        assert_eq!(clean, serde_json::json!({"body": "nothing here", "n": [1, 2]}));
        assert!(contains_secret(GHS) && !contains_secret("nothing"));
        // Clean text is not copied.
        assert!(matches!(redact("plain").text, Cow::Borrowed("plain")));
    }
}
