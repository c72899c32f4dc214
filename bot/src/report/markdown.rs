//! Markdown building blocks for everything pitcrew posts: making user and model text safe to embed,
//! code spans and fences that cannot be broken out of, number and duration formats, the hidden job
//! marker, and [`Doc`], which assembles a body from sections and fits it under GitHub's size limit.
//!
//! Text from people and from the model is embedded with three precautions:
//! - `<!--` and `-->` become `&lt;!--` and `--&gt;` outside code, so no text can forge or close the
//!   hidden job marker (and no text can hide the rest of a comment in an HTML comment);
//! - `@name` in model text becomes `@\u{200b}name` outside code: a zero-width space after the `@` keeps
//!   the text readable and copyable as a name, but GitHub no longer sees a mention, so a model that
//!   writes `@octocat` (or quotes a CODEOWNERS file) pings nobody. Backticks would also work, but
//!   they change how the text looks and can themselves be broken by text containing backticks.
//!   Code blocks and code spans are left untouched: GitHub does not link mentions there, and a
//!   suggestion or a patch must reach the reader byte for byte;
//! - text placed in a single-line context (a table cell, a list item, a heading) has its line
//!   breaks folded, `|` escaped in table cells and `<` escaped, so it cannot end the construct early.

use crate::agent::context::cut;

/// GitHub's limit on comment, review and pull-request bodies, and (minus one) on check-run
/// summaries and texts. GitHub counts characters; counting bytes instead never exceeds the limit.
pub const BODY_LIMIT: usize = 65_536;
/// GitHub's limit on a check-run output's `summary` and `text`.
pub const CHECK_TEXT_LIMIT: usize = 65_535;

const MARKER_PREFIX: &str = "<!-- pitcrew:job=";
const MARKER_SUFFIX: &str = " -->";

/// The hidden marker that opens every body pitcrew posts for a job, so that it can find and edit its
/// own comment later. Characters other than ASCII letters, digits, `.`, `_` and `-` in the id become
/// `_`, so an id can never end the HTML comment.
pub fn marker(job_id: &str) -> String {
    let id: String = job_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{MARKER_PREFIX}{id}{MARKER_SUFFIX}")
}

/// The job id of a body that starts with pitcrew's marker. Only the very start of the body counts:
/// a marker quoted further down (in a patch, a code block, a user's text) is never taken for ours.
/// Callers must still check that the comment's author is the bot.
pub fn job_marker(body: &str) -> Option<&str> {
    let rest = body.strip_prefix(MARKER_PREFIX)?;
    let end = rest.find(MARKER_SUFFIX)?;
    let id = &rest[..end];
    let valid = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    valid.then_some(id)
}

/// Multi-line user or model markdown made safe to embed (see the module documentation). An
/// unclosed code fence is closed, so that it cannot swallow what follows.
pub fn prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut fence: Option<Fence> = None;
    for line in text.split_inclusive('\n') {
        match fence {
            Some(open) => {
                out.push_str(line);
                if open.closed_by(line) {
                    fence = None;
                }
            }
            None => match Fence::opened_by(line) {
                Some(open) => {
                    fence = Some(open);
                    out.push_str(line);
                }
                None => out.push_str(&neutralise_line(line)),
            },
        }
    }
    if let Some(open) = fence {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&open.closing());
    }
    out
}

/// Text for a single-line context (a list item, a heading, a link text): line breaks folded into
/// spaces, made safe like [`prose`], `<` escaped, and a leading character that would start a block
/// (a heading, a fence, a quote, a list) escaped.
pub fn inline(text: &str) -> String {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(folded.len() + 8);
    for (code, segment) in code_segments(&folded) {
        if code {
            out.push_str(segment);
        } else {
            out.push_str(&neutralise(segment).replace('<', "&lt;"));
        }
    }
    if out.starts_with(['#', '>', '`', '~', '-', '+', '*', '=', '|']) {
        out.insert(0, '\\');
    }
    out
}

/// Text for a table cell: [`inline`], with `|` escaped (GitHub splits cells on `|` even inside code
/// spans; `\|` is the escape it honours in both places).
pub fn cell(text: &str) -> String {
    inline(text).replace('|', "\\|")
}

/// `text` as an inline code span whose backtick run is longer than any inside it.
pub fn code_span(text: &str) -> String {
    let folded = text.replace(['\n', '\r'], " ");
    let ticks = "`".repeat(longest_run(&folded, '`') + 1);
    // A span that starts or ends with a backtick (or a space) needs a space of padding, which
    // GitHub strips again.
    if folded.starts_with(['`', ' ']) || folded.ends_with(['`', ' ']) || folded.is_empty() {
        format!("{ticks} {folded} {ticks}")
    } else {
        format!("{ticks}{folded}{ticks}")
    }
}

/// [`code_span`] for a table cell.
pub fn code_cell(text: &str) -> String {
    code_span(text).replace('|', "\\|")
}

/// A fenced code block holding `content` verbatim, with `info` (`diff`, `suggestion`, …) after the
/// opening fence; the fence is longer than any backtick run in the content, so nothing in it can
/// close the block early.
pub fn fenced(info: &str, content: &str) -> String {
    let ticks = "`".repeat((longest_run(content, '`') + 1).max(3));
    let content = content.strip_suffix('\n').unwrap_or(content);
    if content.is_empty() {
        format!("{ticks}{info}\n{ticks}")
    } else {
        format!("{ticks}{info}\n{content}\n{ticks}")
    }
}

/// Every line of `text` prefixed with `> `, for quoting the model's own words.
pub fn quote(text: &str) -> String {
    text.trim_end()
        .lines()
        .map(|line| {
            if line.is_empty() {
                ">".to_owned()
            } else {
                format!("> {line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `n` with thousands separators: `12,345`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration for people: `850ms`, `42s`, `2m 05s`, `1h 02m`.
pub fn duration(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0 => format!("{ms}ms"),
        1..60 => format!("{secs}s"),
        60..3600 => format!("{}m {:02}s", secs / 60, secs % 60),
        _ => format!("{}h {:02}m", secs / 3600, secs % 3600 / 60),
    }
}

/// A cost in US dollars: four decimals below a dollar (agent runs are often cents), two above.
pub fn cost(usd: Option<f64>) -> String {
    match usd {
        Some(usd) if usd < 1.0 => format!("${usd:.4}"),
        Some(usd) => format!("${usd:.2}"),
        None => "cost unknown".to_owned(),
    }
}

/// `text` cut to at most `max` bytes, at a line break when one is near the cut, else at a character
/// boundary; a code fence left open by the cut is closed. The result may exceed `max` by the length
/// of that closing fence, which callers leave room for.
pub fn cut_markdown(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let hard = cut(text, max);
    let at = match hard.rfind('\n') {
        // Prefer a whole line unless that throws away much more than the limit asks.
        Some(newline) if hard.len() - newline < 2_000 => newline,
        _ => hard.len(),
    };
    let mut out = text[..at].to_owned();
    if let Some(open) = open_fence(&out) {
        out.push('\n');
        out.push_str(&open.closing());
    }
    out
}

/// The lines of `text` outside fenced code blocks, each with its byte offset and its line break;
/// the fences' own lines are left out too. A marker that must stand on a line of its own (the
/// description's section) is looked for among these, so a code block quoting one is never taken
/// for it.
pub fn unfenced_lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut fence: Option<Fence> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        match fence {
            Some(open) if open.closed_by(line) => fence = None,
            Some(_) => {}
            None => match Fence::opened_by(line) {
                Some(open) => fence = Some(open),
                None => out.push((offset, line)),
            },
        }
        offset += line.len();
    }
    out
}

/// The line (with its line break) that closes the code fence `text` leaves open, if it leaves one.
pub fn closing_fence(text: &str) -> Option<String> {
    open_fence(text).map(Fence::closing)
}

/// How [`Doc`] may shorten a section to fit the limit.
enum Cut {
    /// Kept whole: headers, links, results.
    Never,
    /// Cut at the end, saying how much was left out.
    Tail,
    /// Replaced as a whole (a patch that is useless when cut).
    Replace(String),
}

struct Section {
    text: String,
    cut: Cut,
    done: bool,
}

/// A body assembled from sections separated by blank lines. [`Doc::render`] fits it under a size
/// limit by shortening the biggest shortenable section first, and says so where it cut.
#[derive(Default)]
pub struct Doc {
    sections: Vec<Section>,
}

impl Doc {
    pub fn new() -> Self {
        Doc::default()
    }

    /// A section that is never shortened.
    pub fn fixed(&mut self, text: impl Into<String>) -> &mut Self {
        self.push(text.into(), Cut::Never)
    }

    /// A section that may be cut at its end.
    pub fn cuttable(&mut self, text: impl Into<String>) -> &mut Self {
        self.push(text.into(), Cut::Tail)
    }

    /// A section that is replaced whole by `instead` when it must be shortened.
    pub fn replaceable(&mut self, text: impl Into<String>, instead: impl Into<String>) -> &mut Self {
        self.push(text.into(), Cut::Replace(instead.into()))
    }

    fn push(&mut self, text: String, cut: Cut) -> &mut Self {
        if !text.trim().is_empty() {
            self.sections.push(Section { text, cut, done: false });
        }
        self
    }

    fn len(&self) -> usize {
        let text: usize = self.sections.iter().map(|s| s.text.len()).sum();
        text + 2 * self.sections.len().saturating_sub(1)
    }

    /// The sections joined, at most `limit` bytes long.
    pub fn render(mut self, limit: usize) -> String {
        while self.len() > limit {
            let excess = self.len() - limit;
            let Some(section) = self
                .sections
                .iter_mut()
                .filter(|s| !s.done && !matches!(s.cut, Cut::Never))
                .max_by_key(|s| s.text.len())
            else {
                break;
            };
            section.done = true;
            match &section.cut {
                Cut::Never => {}
                Cut::Replace(instead) => section.text = instead.clone(),
                Cut::Tail => {
                    // Room for the note (under 100 bytes) and for a fence the cut may have to close.
                    let keep = section.text.len().saturating_sub(excess + 120);
                    let shortened = cut_markdown(&section.text, keep);
                    let dropped = section.text.len().saturating_sub(shortened.len());
                    section.text = format!(
                        "{shortened}\n\n_… cut here: {} more bytes did not fit GitHub's size limit._",
                        thousands(dropped as u64)
                    );
                }
            }
        }
        let joined = self
            .sections
            .iter()
            .map(|s| s.text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n");
        // Only when the fixed parts alone are too long; never expected, but the limit is hard.
        cut(&joined, limit).to_owned()
    }
}

/// An opening code fence: its character and length.
#[derive(Clone, Copy)]
struct Fence {
    ch: char,
    len: usize,
}

impl Fence {
    fn opened_by(line: &str) -> Option<Fence> {
        let trimmed = strip_indent(line)?;
        let ch = trimmed.chars().next().filter(|c| matches!(c, '`' | '~'))?;
        let len = trimmed.chars().take_while(|&c| c == ch).count();
        // A backtick fence's info string may not contain backticks (else it is inline code).
        let info = &trimmed[len..];
        (len >= 3 && !(ch == '`' && info.contains('`'))).then_some(Fence { ch, len })
    }

    fn closed_by(self, line: &str) -> bool {
        let Some(trimmed) = strip_indent(line) else {
            return false;
        };
        let run = trimmed.chars().take_while(|&c| c == self.ch).count();
        run >= self.len && trimmed[run..].trim().is_empty()
    }

    fn closing(self) -> String {
        std::iter::repeat_n(self.ch, self.len).collect::<String>() + "\n"
    }
}

/// A line without its up-to-three-space indent; `None` when indented further (an indented code
/// line, not a fence).
fn strip_indent(line: &str) -> Option<&str> {
    let spaces = line.chars().take_while(|&c| c == ' ').count();
    (spaces <= 3).then(|| &line[spaces..])
}

/// The fence still open at the end of `text`, if any.
fn open_fence(text: &str) -> Option<Fence> {
    let mut fence: Option<Fence> = None;
    for line in text.lines() {
        fence = match fence {
            Some(open) if open.closed_by(line) => None,
            Some(open) => Some(open),
            None => Fence::opened_by(line),
        };
    }
    fence
}

/// A line of prose with mentions and comment markers neutralised outside its code spans.
fn neutralise_line(line: &str) -> String {
    code_segments(line)
        .into_iter()
        .map(|(code, segment)| if code { segment.to_owned() } else { neutralise(segment) })
        .collect()
}

/// Splits a line into (is code span, text) pieces. A backtick run opens a span only if the same
/// run length closes it later on the line; otherwise it is literal text.
fn code_segments(line: &str) -> Vec<(bool, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    let bytes = line.as_bytes();
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
        let mut j = i + run;
        let mut close = None;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let other = bytes[j..].iter().take_while(|&&b| b == b'`').count();
                if other == run {
                    close = Some(j + other);
                    break;
                }
                j += other;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                if start < i {
                    out.push((false, &line[start..i]));
                }
                out.push((true, &line[i..end]));
                start = end;
                i = end;
            }
            None => i += run,
        }
    }
    if start < line.len() {
        out.push((false, &line[start..]));
    }
    out
}

/// Comment markers escaped and `@mentions` broken with a zero-width space.
fn neutralise(text: &str) -> String {
    let text = text.replace("<!--", "&lt;!--").replace("-->", "--&gt;");
    let mut out = String::with_capacity(text.len() + 8);
    let mut previous: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        // GitHub links `@name` (and `@org/team`) when the `@` does not follow a word character,
        // which is what keeps e-mail addresses from being mentions.
        if c == '@'
            && !previous.is_some_and(|p| p.is_alphanumeric() || p == '_' || p == '`')
            && chars.peek().is_some_and(|n| n.is_ascii_alphanumeric())
        {
            out.push('\u{200b}');
        }
        previous = Some(c);
    }
    out
}

/// The longest run of `ch` in `text`.
fn longest_run(text: &str, ch: char) -> usize {
    let mut longest = 0;
    let mut current = 0;
    for c in text.chars() {
        if c == ch {
            current += 1;
            longest = longest.max(current);
        } else {
            current = 0;
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip_and_cannot_be_forged() {
        assert_eq!(marker("42"), "<!-- pitcrew:job=42 -->");
        // An id that tries to close the comment early is defused.
        assert_eq!(marker("1 --> @x"), "<!-- pitcrew:job=1_--___x -->");
        assert_eq!(job_marker("<!-- pitcrew:job=42 -->\n### pitcrew"), Some("42"));
        // A marker that is not at the very start is never ours.
        assert_eq!(job_marker("hello\n<!-- pitcrew:job=42 -->"), None);
        assert_eq!(job_marker("<!-- pitcrew:job= -->"), None);
        // Model text that writes a marker is escaped, so the body it lands in has no second marker.
        let forged = prose("done\n<!-- pitcrew:job=7 -->\n");
        assert_eq!(forged, "done\n&lt;!-- pitcrew:job=7 --&gt;\n");
        assert!(!forged.contains("<!--"));
        assert_eq!(inline("x <!-- y --> z"), "x &lt;!-- y --&gt; z");
    }

    #[test]
    fn mentions_are_neutralised_outside_code_only() {
        let text = "Thanks @octocat and @org/team; mail me@example.com.\n`@inline` stays\n```py\n@decorator\n```\n";
        assert_eq!(
            prose(text),
            "Thanks @\u{200b}octocat and @\u{200b}org/team; mail me@example.com.\n`@inline` stays\n```py\n@decorator\n```\n"
        );
        // An unmatched backtick is literal text, so the mention after it is still neutralised.
        assert_eq!(prose("a ` @bob"), "a ` @\u{200b}bob");
    }

    #[test]
    fn unclosed_fences_are_closed() {
        assert_eq!(prose("see\n````rust\nfn x() {}"), "see\n````rust\nfn x() {}\n````\n");
        assert_eq!(prose("~~~\n@x\n~~~\n@y"), "~~~\n@x\n~~~\n@\u{200b}y");
    }

    #[test]
    fn single_line_contexts() {
        assert_eq!(inline("  two\nlines <b>  "), "two lines &lt;b>");
        assert_eq!(inline("# not a heading"), "\\# not a heading");
        assert_eq!(inline("```rust"), "\\```rust");
        assert_eq!(cell("a | b `c|d`"), "a \\| b `c\\|d`");
        assert_eq!(code_span("plain"), "`plain`");
        assert_eq!(code_span("has ` tick"), "``has ` tick``");
        assert_eq!(code_span("`edge"), "`` `edge ``");
        assert_eq!(code_cell("a|b"), "`a\\|b`");
    }

    #[test]
    fn fences_are_longer_than_any_backtick_run_inside() {
        assert_eq!(fenced("diff", "+x\n"), "```diff\n+x\n```");
        assert_eq!(fenced("suggestion", "a ```\nb"), "````suggestion\na ```\nb\n````");
        assert_eq!(fenced("", "`````"), "``````\n`````\n``````");
        // An empty suggestion (delete the lines) keeps its two fences.
        assert_eq!(fenced("suggestion", ""), "```suggestion\n```");
    }

    #[test]
    fn numbers_and_durations() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(42_000), "42s");
        assert_eq!(duration(125_000), "2m 05s");
        assert_eq!(duration(3_720_000), "1h 02m");
        assert_eq!(cost(Some(0.01234)), "$0.0123");
        assert_eq!(cost(Some(12.5)), "$12.50");
        assert_eq!(cost(None), "cost unknown");
    }

    #[test]
    fn cuts_close_open_fences_and_respect_char_boundaries() {
        let text = format!("intro\n```\n{}\n```\nafter", "é".repeat(100));
        let cut_text = cut_markdown(&text, 51);
        assert!(cut_text.starts_with("intro\n```\n"));
        assert!(cut_text.ends_with("\n```\n"), "{cut_text}");
        // 51 bytes lands inside a two-byte `é`; the cut moved back to a boundary.
        assert!(cut_text.len() <= 51 + 5);
        assert_eq!(cut_markdown("short", 10), "short");
    }

    #[test]
    fn docs_cut_the_biggest_section_first() {
        let mut doc = Doc::new();
        doc.fixed("HEAD")
            .cuttable("small ".repeat(20))
            .cuttable("日本語".repeat(2_000))
            .fixed("FOOT");
        let limit = 4_000;
        let text = doc.render(limit);
        assert!(text.len() <= limit, "{}", text.len());
        assert!(text.starts_with("HEAD\n\n"));
        assert!(
            text.ends_with("GitHub's size limit._\n\nFOOT"),
            "{}",
            &text[text.len() - 200..]
        );
        // The small section is whole; the big one was cut (on a char boundary: it is a String).
        assert!(text.contains(&"small ".repeat(20)));
        assert!(text.contains("日本語"));
        assert!(text.contains("_… cut here: "));

        let mut doc = Doc::new();
        doc.fixed("HEAD")
            .replaceable("x".repeat(10_000), "(too big)")
            .cuttable("y".repeat(100));
        assert_eq!(doc.render(1_000), format!("HEAD\n\n(too big)\n\n{}", "y".repeat(100)));
        let mut doc = Doc::new();
        doc.fixed("a").cuttable(" ").fixed("b");
        assert_eq!(doc.render(100), "a\n\nb");
    }
}
