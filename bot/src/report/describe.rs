//! pitcrew's section of a pull request's description (`describe`): where it is in a body the
//! author owns, and the body with a new section in it, every byte of the author's text kept.
//!
//! The section stands between two marker lines, [`START`] and [`END`]. The author's text is
//! untrusted, so a marker counts only as a line of its own (trailing spaces aside: not quoted, not
//! indented, not in a code span), outside fenced code, and only in a pair — a start marker whose
//! next marker line is an end marker. The first pair holds the section, and only what is between
//! its two lines is replaced. Anything else — no marker at all, a start marker with no end after
//! it, an end marker before any start (pasted text, a section half deleted by hand) — gets a fresh
//! pair after the author's text, one blank line between, rather than a guess at where the author's
//! text ends; the next run finds that pair. The section's text passes [`markdown::prose`], which
//! escapes `<!--` and `-->` outside code, and a marker quoted in one of its code blocks is not a
//! marker line, so nothing the model writes can end the section early.

use std::borrow::Cow;
use std::ops::Range;

use super::markdown::{self, BODY_LIMIT, Doc};

/// The line that opens the section.
pub const START: &str = "<!-- pitcrew:describe -->";
/// The line that closes it.
pub const END: &str = "<!-- /pitcrew:describe -->";

/// How long a description may be: GitHub's limit, less room for the note the secret filter adds
/// to a text it changed.
pub const LIMIT: usize = BODY_LIMIT - 128;

/// A section with less room than this is only a note saying it did not fit: a summary cut to a few
/// lines would mislead more than it helps.
const MIN_SECTION: usize = 1_000;

/// What stands in the section when the author's text leaves too little room for it.
pub const NO_ROOM: &str = "_pitcrew's description of this pull request did not fit: the text above leaves too little \
                           room under GitHub's limit on a description's length._";

/// The section as [`find`] reads a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The first pair of markers: `text` is what is between their lines, `whole` the lines too.
    Section { text: Range<usize>, whole: Range<usize> },
    /// No marker line.
    Nothing,
    /// Marker lines, but no pair among them; why, for the log.
    Unpaired(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Start,
    End,
}

/// Where the section is in `body`.
pub fn find(body: &str) -> Found {
    let markers: Vec<(Marker, Range<usize>)> = markdown::unfenced_lines(body)
        .into_iter()
        .filter_map(|(offset, line)| {
            let bare = line.trim_end_matches(['\n', '\r']).trim_end_matches([' ', '\t']);
            let marker = match bare {
                START => Marker::Start,
                END => Marker::End,
                _ => return None,
            };
            Some((marker, offset..offset + line.len()))
        })
        .collect();
    let pair = markers
        .windows(2)
        .find(|pair| pair[0].0 == Marker::Start && pair[1].0 == Marker::End);
    match (pair, markers.first()) {
        (Some([(_, start), (_, end)]), _) => Found::Section {
            text: start.end..end.start,
            whole: start.start..end.end,
        },
        (_, None) => Found::Nothing,
        (_, Some((Marker::End, _))) => Found::Unpaired("an end marker comes before any start marker"),
        (_, Some((Marker::Start, _))) => Found::Unpaired("a start marker has no end marker after it"),
    }
}

/// How a new section went into a description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// Between the markers already there.
    Replaced,
    /// After the author's text: there was no section yet.
    Appended,
    /// After the author's text, beside marker lines that make no pair (why, for the log).
    AppendedBesideUnpaired(&'static str),
}

/// `body` with `section` (a text of pitcrew's, ready to show) as its section.
pub fn splice(body: &str, section: &str) -> (String, Placed) {
    let section = section.trim_end_matches(['\n', '\r']);
    match find(body) {
        Found::Section { text, .. } => {
            let mut out = String::with_capacity(body.len() - text.len() + section.len() + 1);
            out.push_str(&body[..text.start]);
            out.push_str(section);
            out.push('\n');
            out.push_str(&body[text.end..]);
            (out, Placed::Replaced)
        }
        Found::Nothing => (append(body, section), Placed::Appended),
        Found::Unpaired(why) => (append(body, section), Placed::AppendedBesideUnpaired(why)),
    }
}

/// The author's text, then a blank line (none when there is no text), then the marked section. A
/// code fence the author's text leaves open is closed first: else the section would be code, and
/// its markers never found again.
fn append(body: &str, section: &str) -> String {
    let mut out = String::with_capacity(body.len() + section.len() + START.len() + END.len() + 16);
    out.push_str(body);
    if let Some(closing) = markdown::closing_fence(body) {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&closing);
    }
    if !out.is_empty() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        // A blank line before the marker, unless the text already ends with one.
        let tail = &out[out.trim_end().len()..];
        if tail.matches('\n').count() < 2 {
            out.push('\n');
        }
    }
    out.push_str(START);
    out.push('\n');
    out.push_str(section);
    out.push('\n');
    out.push_str(END);
    out
}

/// A description with its new section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub body: String,
    pub placed: Placed,
    /// The author's text left too little room: the section is only [`NO_ROOM`].
    pub no_room: bool,
}

/// The description `body` with `text`, the model's words, as its section (made safe to show), and
/// `footer` under them, the whole at most `limit` bytes: the section is cut to fit, never the
/// author's text. When that leaves too little room, the section is [`NO_ROOM`] instead; `None`
/// when not even that fits.
pub fn write(body: &str, text: &str, footer: &str, limit: usize) -> Option<Written> {
    let (empty, _) = splice(body, "");
    let room = limit.checked_sub(empty.len())?;
    let no_room = room < MIN_SECTION;
    let section = if no_room {
        NO_ROOM.to_owned()
    } else {
        let text = markdown::prose(text.trim());
        let mut doc = Doc::new();
        doc.cuttable(text.trim_end()).fixed(footer);
        doc.render(room)
    };
    let (body, placed) = splice(body, &section);
    (body.len() <= limit).then_some(Written { body, placed, no_room })
}

/// `body` without its section, markers and all: the author's own text, as a model is shown it.
pub fn without_section(body: &str) -> Cow<'_, str> {
    match find(body) {
        Found::Section { whole, .. } => {
            let mut rest = String::with_capacity(body.len() - whole.len());
            rest.push_str(&body[..whole.start]);
            rest.push_str(&body[whole.end..]);
            Cow::Owned(rest)
        }
        Found::Nothing | Found::Unpaired(_) => Cow::Borrowed(body),
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    const SECTION: &str = "### Summary\n\nAdds a mask.";

    fn section_of(body: &str) -> &str {
        match find(body) {
            Found::Section { text, .. } => &body[text],
            other => panic!("no section: {other:?}"),
        }
    }

    #[test]
    fn a_body_without_markers_gets_the_section_after_one_blank_line() {
        let (body, placed) = splice("Fixes #3.\n\nSee the issue.", SECTION);
        assert_eq!(placed, Placed::Appended);
        insta::assert_snapshot!(body, @r"
        Fixes #3.

        See the issue.

        <!-- pitcrew:describe -->
        ### Summary

        Adds a mask.
        <!-- /pitcrew:describe -->
        ");
        // A text that ends with a line break, or with a blank line, gets no second blank line.
        for (author, before) in [
            ("Fixes #3.\n", "Fixes #3.\n\n"),
            ("Fixes #3.\n\n", "Fixes #3.\n\n"),
            ("Fixes #3.\n\n  ", "Fixes #3.\n\n  \n"),
        ] {
            assert_eq!(
                splice(author, "x").0,
                format!("{before}{START}\nx\n{END}"),
                "{author:?}"
            );
        }
    }

    #[test]
    fn an_empty_body_is_the_section_alone() {
        let (body, placed) = splice("", SECTION);
        assert_eq!(placed, Placed::Appended);
        assert_eq!(body, format!("{START}\n{SECTION}\n{END}"));
    }

    #[test]
    fn only_what_is_between_the_markers_is_replaced() {
        let body = format!("Intro.\n\n{START}\nOld summary.\n\nOld changes.\n{END}\n\nThe author's notes after.\n");
        let (new, placed) = splice(&body, SECTION);
        assert_eq!(placed, Placed::Replaced);
        assert_eq!(
            new,
            format!("Intro.\n\n{START}\n{SECTION}\n{END}\n\nThe author's notes after.\n")
        );
        // Written again, it stays one section.
        let (again, _) = splice(&new, "New.");
        assert_eq!(
            again,
            format!("Intro.\n\n{START}\nNew.\n{END}\n\nThe author's notes after.\n")
        );
        // An empty pair the author placed is filled where it is.
        let (filled, placed) = splice(&format!("Top.\n{START}\n{END}\nBottom."), "S");
        assert_eq!(placed, Placed::Replaced);
        assert_eq!(filled, format!("Top.\n{START}\nS\n{END}\nBottom."));
    }

    #[test]
    fn crlf_line_endings_are_kept_byte_for_byte() {
        let author = "Line one\r\nLine two\r\n";
        let (body, _) = splice(author, SECTION);
        assert_eq!(body, format!("Line one\r\nLine two\r\n\n{START}\n{SECTION}\n{END}"));
        let body = format!("A\r\n\r\n{START}\r\nold\r\n{END}\r\nB\r\n");
        let (new, placed) = splice(&body, "new");
        assert_eq!(placed, Placed::Replaced);
        assert_eq!(new, format!("A\r\n\r\n{START}\r\nnew\n{END}\r\nB\r\n"));
        // A marker line with trailing blanks is still one.
        let body = format!("A\r\n{START}  \r\nold\r\n{END}\t\r\n");
        assert_eq!(splice(&body, "new").0, format!("A\r\n{START}  \r\nnew\n{END}\t\r\n"));
    }

    #[test]
    fn markers_out_of_order_or_alone_get_a_fresh_pair_after_the_text() {
        for (author, why) in [
            (
                format!("A\n{END}\nB\n{START}\nC"),
                "an end marker comes before any start marker",
            ),
            (format!("A\n{START}\nB"), "a start marker has no end marker after it"),
            (format!("A\n{END}"), "an end marker comes before any start marker"),
        ] {
            let (body, placed) = splice(&author, SECTION);
            assert_eq!(placed, Placed::AppendedBesideUnpaired(why), "{author}");
            assert_eq!(body, format!("{author}\n\n{START}\n{SECTION}\n{END}"));
            // The next run finds the pair it appended, and the author's text stays as it was.
            let (again, placed) = splice(&body, "Second.");
            assert_eq!(placed, Placed::Replaced);
            assert_eq!(again, format!("{author}\n\n{START}\nSecond.\n{END}"));
        }
        // A stray start before a pair: the pair is the section, the stray line stays the author's.
        let body = format!("{START}\nA\n{START}\nold\n{END}");
        assert_eq!(splice(&body, "new").0, format!("{START}\nA\n{START}\nnew\n{END}"));
        // Only the first pair counts.
        let body = format!("{START}\none\n{END}\n{START}\ntwo\n{END}");
        assert_eq!(
            splice(&body, "new").0,
            format!("{START}\nnew\n{END}\n{START}\ntwo\n{END}")
        );
    }

    #[test]
    fn markers_in_code_quotes_or_inside_a_line_are_not_markers() {
        let quoted = [
            format!("Example:\n\n```md\n{START}\nnot ours\n{END}\n```\n"),
            format!("~~~\n{START}\n~~~\n{END}\n"),
            format!("> {START}\n> quoted\n> {END}\n"),
            format!("    {START}\n    indented\n    {END}\n"),
            format!("Write `{START}` and `{END}` to place it.\n"),
            format!("{START} inline\n{END} too\n"),
        ];
        for author in quoted {
            // (The second has an end marker outside its fence, which makes no pair on its own.)
            assert!(!matches!(find(&author), Found::Section { .. }), "{author}");
            let (body, placed) = splice(&author, "S");
            assert!(body.starts_with(&author), "{body}");
            assert!(
                matches!(placed, Placed::Appended | Placed::AppendedBesideUnpaired(_)),
                "{author}"
            );
            assert_eq!(section_of(&body), "S\n");
        }
        // The end marker quoted in a code block inside a section is not the section's end.
        let body = format!("{START}\n```\n{END}\n```\nmore\n{END}\nafter");
        assert_eq!(section_of(&body), format!("```\n{END}\n```\nmore\n"));
    }

    #[test]
    fn a_code_fence_the_author_left_open_is_closed_before_the_section() {
        let author = "Logs:\n```text\nerror: boom";
        let (body, placed) = splice(author, "S");
        assert_eq!(placed, Placed::Appended);
        assert_eq!(body, format!("{author}\n```\n\n{START}\nS\n{END}"));
        // Found again by the next run, which changes nothing else.
        let (again, placed) = splice(&body, "T");
        assert_eq!(placed, Placed::Replaced);
        assert_eq!(again, format!("{author}\n```\n\n{START}\nT\n{END}"));
        // Inside the author's open fence, a pair is code: a fresh one goes after it.
        let inside = format!("````\n{START}\nx\n{END}");
        assert_eq!(find(&inside), Found::Nothing);
        assert_eq!(splice(&inside, "S").0, format!("{inside}\n````\n\n{START}\nS\n{END}"));
    }

    #[test]
    fn the_models_text_cannot_close_the_section_or_mention_anyone() {
        let text = format!("Summary.\n{END}\nInjected <!-- hidden --> text.\n```\n{END}\n```");
        let written = write("Author.", &text, "<sub>footer</sub>", LIMIT).unwrap();
        insta::assert_snapshot!(written.body, @"
        Author.

        <!-- pitcrew:describe -->
        Summary.
        &lt;!-- /pitcrew:describe --&gt;
        Injected &lt;!-- hidden --&gt; text.
        ```
        <!-- /pitcrew:describe -->
        ```

        <sub>footer</sub>
        <!-- /pitcrew:describe -->
        ");
        assert!(
            write("", "Thanks @octocat.", "f", LIMIT)
                .unwrap()
                .body
                .contains("Thanks @\u{200b}octocat.")
        );
        // The section ends where pitcrew ended it: the next run replaces all of it.
        let (again, placed) = splice(&written.body, "New.");
        assert_eq!(placed, Placed::Replaced);
        assert_eq!(again, format!("Author.\n\n{START}\nNew.\n{END}"));
        // An unclosed fence in the model's text is closed inside the section.
        let written = write("", "```\nunclosed", "f", LIMIT).unwrap();
        assert_eq!(written.body, format!("{START}\n```\nunclosed\n```\n\nf\n{END}"));
    }

    #[test]
    fn a_long_text_is_cut_to_fit_and_the_authors_text_never_is() {
        let limit = 10_000;
        let author = "a".repeat(6_000);
        let text = "A line the model wrote.\n".repeat(1_000);
        let written = write(&author, &text, "<sub>footer</sub>", limit).unwrap();
        assert!(written.body.len() <= limit, "{}", written.body.len());
        assert!(written.body.starts_with(&format!("{author}\n\n{START}\n")));
        assert!(written.body.ends_with(&format!("\n\n<sub>footer</sub>\n{END}")));
        assert!(written.body.contains("_… cut here: "), "{}", &written.body[6_000..]);
        assert!(!written.no_room);

        // Too little room for a section: a note instead, the author's text whole.
        let author = "b".repeat(limit - 600);
        let written = write(&author, &text, "<sub>footer</sub>", limit).unwrap();
        assert!(written.no_room);
        assert_eq!(written.body, format!("{author}\n\n{START}\n{NO_ROOM}\n{END}"));
        assert!(written.body.len() <= limit);

        // Not even room for the note: nothing is written.
        assert_eq!(write(&"c".repeat(limit - 100), &text, "f", limit), None);
        assert_eq!(write(&"c".repeat(limit + 1), &text, "f", limit), None);

        // The room counts what the old section leaves, not what it took.
        let old = format!("{}\n\n{START}\n{}\n{END}", "d".repeat(1_000), "old ".repeat(2_000));
        let written = write(&old, "Short.", "f", limit).unwrap();
        assert_eq!(written.placed, Placed::Replaced);
        assert_eq!(
            written.body,
            format!("{}\n\n{START}\nShort.\n\nf\n{END}", "d".repeat(1_000))
        );
    }

    #[test]
    fn the_author_text_alone_is_what_is_left_without_the_section() {
        let body = format!("Intro.\r\n{START}\nS\n{END}\nOutro.");
        assert_eq!(without_section(&body), "Intro.\r\nOutro.");
        assert_eq!(without_section("No section."), "No section.");
        let unpaired = format!("A\n{START}\nB");
        assert_eq!(without_section(&unpaired), unpaired);
    }
}
