//! What the fake GitHub's responses are made of: GitHub's official example objects (loaded once;
//! for operations outside the subset, from the full description), its error shape, base64 as the
//! contents API writes it, RFC 3339 timestamps, stable ids and random tokens.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::openapi::{Spec, fixtures_root, percent_decode};

/// Where the example responses live, relative to the fixtures directory.
const EXAMPLES_DIR: &str = "github-api-responses/openapi-examples";

/// GitHub's example response `name` (a file of `openapi-examples/` without `.json`), or `Null`
/// when there is no such file. All examples are read on first use.
pub(crate) fn example(name: &str) -> Value {
    static EXAMPLES: OnceLock<HashMap<String, Value>> = OnceLock::new();
    let examples = EXAMPLES.get_or_init(|| {
        let dir = fixtures_root().join(EXAMPLES_DIR);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return HashMap::new();
        };
        entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let path = entry.path();
                let name = path.file_name()?.to_str()?.strip_suffix(".json")?.to_owned();
                let value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
                Some((name, value))
            })
            .collect()
    });
    examples.get(name).cloned().unwrap_or(Value::Null)
}

/// GitHub's example `name` from the full description's `components/examples` (`job`,
/// `workflow-run`), or `Null`. Only for operations routed by the full description, which is then
/// loaded already.
pub(crate) fn description_example(name: &str) -> Value {
    Spec::github_full()
        .ok()
        .and_then(|spec| spec.root().pointer(&format!("/components/examples/{name}/value")))
        .cloned()
        .unwrap_or(Value::Null)
}

/// A stable id from a name (FNV-1a), so the same name has the same id everywhere.
pub(crate) fn stable_id(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    }) % 100_000_000
        + 1000
}

/// The first element of an `…-items` example.
pub(crate) fn example_item(name: &str) -> Value {
    match example(name) {
        Value::Array(mut items) if !items.is_empty() => items.swap_remove(0),
        other => other,
    }
}

/// GitHub's error body: `{"message", "documentation_url", "status"}`.
pub(crate) fn error_body(status: u16, message: &str, documentation_url: &str) -> Value {
    json!({"message": message, "documentation_url": documentation_url, "status": status.to_string()})
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `2024-05-01T12:00:00Z` for `unix` seconds.
pub(crate) fn rfc3339(unix: u64) -> String {
    let days = unix / 86_400;
    let seconds = unix % 86_400;
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

/// The current time in RFC 3339.
pub(crate) fn now_rfc3339() -> String {
    rfc3339(unix_now())
}

/// Howard Hinnant's days-to-civil algorithm: (year, month, day) of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Random alphanumerics (tokens, request ids): a process-random hasher fed a counter.
pub(crate) fn random_alnum(len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let state = std::collections::hash_map::RandomState::new();
    let mut out = String::with_capacity(len);
    while out.len() < len {
        let mut hasher = state.build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        let mut bits = hasher.finish();
        for _ in 0..8 {
            if out.len() == len {
                break;
            }
            out.push(ALPHABET[(bits % ALPHABET.len() as u64) as usize] as char);
            bits /= ALPHABET.len() as u64;
        }
    }
    out
}

/// `X-GitHub-Request-Id`-like: `0D4C:3B2F:1A2B3C:4D5E6F:65F0A1B2`.
pub(crate) fn request_id(sequence: u64) -> String {
    format!(
        "F4E0:{:04X}:{:06X}:{:06X}:{:08X}",
        std::process::id() & 0xFFFF,
        sequence,
        sequence * 7,
        unix_now()
    )
}

/// Standard base64 with padding, broken into lines of 60 characters each ending in `\n`, as the
/// contents API writes it.
pub(crate) fn contents_base64(bytes: &[u8]) -> String {
    let plain = STANDARD.encode(bytes);
    let mut out = String::with_capacity(plain.len() + plain.len() / 60 + 1);
    // The alphabet is ASCII, so 60-byte chunks are whole characters.
    for line in plain.as_bytes().chunks(60) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out
}

/// Pairs → `a=1&b=two%20words`: everything but RFC 3986's unreserved characters percent-encoded.
pub(crate) fn encode_query(pairs: &[(String, String)]) -> String {
    let encode = |text: &str| {
        text.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                    char::from(b).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect::<String>()
    };
    pairs
        .iter()
        .map(|(name, value)| format!("{}={}", encode(name), encode(value)))
        .collect::<Vec<_>>()
        .join("&")
}

/// `a=1&b=two%20words` → pairs, percent-decoded (`+` is a space in queries).
pub(crate) fn parse_query(query: Option<&str>) -> Vec<(String, String)> {
    query
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (
                percent_decode(&name.replace('+', " ")),
                percent_decode(&value.replace('+', " ")),
            )
        })
        .collect()
}

/// A Git blob id for `content`, as `git hash-object` computes it, is SHA-1; the fake has no SHA-1
/// at hand, so file `sha`s are a stable 40-hex digest of the content instead.
pub(crate) fn fake_sha(content: &[u8]) -> String {
    // FNV-1a, spread over 160 bits by hashing with five different offsets.
    (0u64..5)
        .map(|lane| {
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325 ^ lane.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            for &byte in content {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
            format!("{:08x}", hash as u32)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_coreutils_with_github_line_breaks() {
        // `printf 'hello world' | base64` and friends.
        assert_eq!(contents_base64(b"hello world"), "aGVsbG8gd29ybGQ=\n");
        assert_eq!(contents_base64(b"ab"), "YWI=\n");
        assert_eq!(contents_base64(b"abc"), "YWJj\n");
        assert_eq!(contents_base64(b""), "");
        let long = contents_base64(&[b'x'; 100]);
        let lines: Vec<&str> = long.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0].len(), 60);
        assert_eq!(lines[0], "eHh4".repeat(15));
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        // `date -u -d @1709251199 +%FT%TZ`: the last second of a leap-year February.
        assert_eq!(rfc3339(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn queries_and_randoms() {
        assert_eq!(
            parse_query(Some("ref=feature%2Fx&per_page=5&flag")),
            [
                ("ref".to_owned(), "feature/x".to_owned()),
                ("per_page".to_owned(), "5".to_owned()),
                ("flag".to_owned(), String::new())
            ]
        );
        let pairs = parse_query(Some("check_name=Cargo+test&ref=feature%2Fx&q=a%26b%3Dc"));
        assert_eq!(
            encode_query(&pairs),
            "check_name=Cargo%20test&ref=feature%2Fx&q=a%26b%3Dc"
        );
        assert_eq!(parse_query(Some(&encode_query(&pairs))), pairs);
        let a = random_alnum(36);
        assert_eq!(a.len(), 36);
        assert!(a.bytes().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, random_alnum(36));
        assert_eq!(fake_sha(b"x").len(), 40);
        assert_ne!(fake_sha(b"x"), fake_sha(b"y"));
        assert!(example("check-run").is_object());
        assert!(example_item("label-items")["name"].is_string());
    }
}
