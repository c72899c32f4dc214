//! A finding's fingerprint: a hash of the code it is about (its file and its lines' text, without
//! whitespace, so a rebase that moves the lines keeps it) and a hash of what it says (lowercased
//! words). Inline comments carry theirs in a hidden marker; a new finding whose code and words
//! match one already posted — or that says the same about the same file — is a repeat and is not
//! posted again.

use std::collections::BTreeSet;
use std::fmt;

const MARKER_OPEN: &str = "<!-- pitcrew:finding ";
const MARKER_CLOSE: &str = " -->";

/// Two texts about the same code whose words overlap this much (Jaccard) say the same thing.
const SAME_WORDS: f64 = 0.5;

/// `code-text`, 16 hex digits each side.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint {
    pub code: String,
    pub text: String,
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.code, self.text)
    }
}

impl Fingerprint {
    /// The fingerprint of a finding on `code` (the lines it covers, as the file has them) in `path`
    /// that says `body`.
    pub fn of(path: &str, code: &str, body: &str) -> Fingerprint {
        let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
        Fingerprint {
            code: hash(&[path.as_bytes(), b"\0", code.as_bytes()]),
            text: hash(&[words(body).into_iter().collect::<Vec<_>>().join(" ").as_bytes()]),
        }
    }

    /// `code-text` as written.
    pub fn parse(text: &str) -> Option<Fingerprint> {
        let (code, words) = text.trim().split_once('-')?;
        let hex = |s: &str| s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit());
        (hex(code) && hex(words)).then(|| Fingerprint {
            code: code.to_owned(),
            text: words.to_owned(),
        })
    }

    /// The hidden line an inline comment carries.
    pub fn marker(&self) -> String {
        format!("{MARKER_OPEN}{self}{MARKER_CLOSE}")
    }

    /// The fingerprint of a comment's marker, if it has one.
    pub fn in_comment(body: &str) -> Option<Fingerprint> {
        let start = body.rfind(MARKER_OPEN)? + MARKER_OPEN.len();
        let end = body[start..].find(MARKER_CLOSE)? + start;
        Fingerprint::parse(&body[start..end])
    }
}

fn hash(parts: &[&[u8]]) -> String {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    for part in parts {
        context.update(part);
    }
    hex::encode(&context.finish().as_ref()[..8])
}

/// A text's words, lowercased, without punctuation, markup or one-letter words.
pub fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() > 1)
        .map(str::to_lowercase)
        .collect()
}

/// A finding already on the pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted {
    pub fingerprint: Fingerprint,
    /// Its file and words, for an inline comment (a summary-only finding keeps its fingerprint only).
    pub path: Option<String>,
    pub words: BTreeSet<String>,
}

/// Whether a finding (`fingerprint`, in `path`, saying `body`) repeats one of `posted`: the same
/// fingerprint; the same code with much the same words; or the same words about the same file.
pub fn is_repeat(fingerprint: &Fingerprint, path: &str, body: &str, posted: &[Posted]) -> bool {
    let mine = words(body);
    posted.iter().any(|p| {
        if p.fingerprint == *fingerprint {
            return true;
        }
        let Some(their_path) = &p.path else {
            return false;
        };
        let same_file = their_path == path;
        (p.fingerprint.code == fingerprint.code && similar(&mine, &p.words))
            || (same_file && p.fingerprint.text == fingerprint.text)
    })
}

fn similar(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    let union = a.union(b).count();
    union > 0 && a.intersection(b).count() as f64 / union as f64 >= SAME_WORDS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_finding_on_moved_code_is_a_repeat_and_another_is_not() {
        let body = "`total` overflows when `count` is zero: divide after the check.";
        let first = Fingerprint::of("src/a.rs", "    let avg = total / count;\n", body);
        // The rebase moved the line and reindented it; the model said it again in other case.
        let again = Fingerprint::of("src/a.rs", "let avg = total / count;", &body.to_uppercase());
        assert_eq!(first, again);
        let posted = [Posted {
            fingerprint: first.clone(),
            path: Some("src/a.rs".into()),
            words: words(body),
        }];
        assert!(is_repeat(&again, "src/a.rs", body, &posted));
        // Reworded on the same code.
        let reworded = "When `count` is zero, `total / count` overflows; check before dividing.";
        let fp = Fingerprint::of("src/a.rs", "let avg = total / count;", reworded);
        assert_ne!(fp, first);
        assert!(is_repeat(&fp, "src/a.rs", reworded, &posted));
        // Something else about the same line is new.
        let other = "This name shadows the `avg` imported above.";
        let fp = Fingerprint::of("src/a.rs", "let avg = total / count;", other);
        assert!(!is_repeat(&fp, "src/a.rs", other, &posted));
        // The same words about another file are new too.
        let fp = Fingerprint::of("src/b.rs", "let avg = sum / n;", body);
        assert!(!is_repeat(&fp, "src/b.rs", body, &posted));
        // A summary-only fingerprint matches exactly or not at all.
        let summary_only = [Posted {
            fingerprint: first.clone(),
            path: None,
            words: BTreeSet::new(),
        }];
        assert!(is_repeat(&first, "src/a.rs", body, &summary_only));
        assert!(!is_repeat(
            &Fingerprint::of("src/a.rs", "let avg = total / count;", reworded),
            "src/a.rs",
            reworded,
            &summary_only
        ));
    }

    #[test]
    fn markers_round_trip_and_junk_is_refused() {
        let fp = Fingerprint::of("a", "b", "c d");
        let comment = format!("Something is wrong.\n\n{}", fp.marker());
        assert_eq!(Fingerprint::in_comment(&comment), Some(fp.clone()));
        assert_eq!(Fingerprint::parse(&fp.to_string()), Some(fp));
        assert_eq!(Fingerprint::in_comment("<!-- pitcrew:finding zz-yy -->"), None);
        assert_eq!(Fingerprint::in_comment("no marker"), None);
        assert!(Fingerprint::parse("0123456789abcdef-0123456789abcdef").is_some());
        assert!(Fingerprint::parse("0123456789abcdef").is_none());
    }
}
