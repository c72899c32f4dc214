//! npm's range syntax (`^`, `~`, x-ranges, comparators, hyphen ranges, `||`): which versions a
//! range admits, and a range rewritten in its own style to admit a newer version.

use std::ops::Range as Span;

use semver::{Prerelease, Version};

/// Why a text is not an npm range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error("`{operator}` without a version")]
    NoVersion { operator: String },
    #[error("`{token}` is not a version in `{range}`")]
    BadVersion { token: String, range: String },
}

/// An npm range: alternatives joined by `||`, each a list of terms that must all hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    alternatives: Vec<Alternative>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Alternative {
    terms: Vec<Term>,
    /// What the terms mean.
    comparators: Vec<Comparator>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Comparator {
    op: Op,
    version: Version,
}

impl Comparator {
    fn admits(&self, v: &Version) -> bool {
        match self.op {
            Op::Lt => v < &self.version,
            Op::Le => v <= &self.version,
            Op::Gt => v > &self.version,
            Op::Ge => v >= &self.version,
            Op::Eq => v == &self.version,
        }
    }
}

/// How a term reads: its operator (none for `1.2.3` and `1.x`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TermOp {
    Plain,
    Caret,
    Tilde,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Term {
    /// `1.2.3`, `^1.2`, `~1.x`, `>=1`, `<2.0.0`, `=1.2.3`, `*`.
    Single { op: TermOp, version: Partial },
    /// `1.2.3 - 2.3`.
    Hyphen { low: Partial, high: Partial },
}

/// A version as a range writes it: up to three parts, each a number or a wildcard, and where in
/// the range's text it is (after any `v`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Partial {
    parts: Vec<Part>,
    pre: Prerelease,
    span: Span<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Number(u64),
    Wildcard(char),
}

impl Partial {
    /// How many leading parts are numbers (the precision).
    fn precision(&self) -> usize {
        self.parts.iter().take_while(|p| matches!(p, Part::Number(_))).count()
    }

    fn number(&self, i: usize) -> u64 {
        match self.parts.get(i) {
            Some(Part::Number(n)) => *n,
            _ => 0,
        }
    }

    /// The lowest version it stands for (missing parts 0).
    fn low(&self) -> Version {
        let mut v = Version::new(self.number(0), self.number(1), self.number(2));
        if self.precision() == 3 {
            v.pre = self.pre.clone();
        }
        v
    }

    /// The version just above every version it stands for at its precision (`1.2` → `1.3.0`).
    fn above(&self) -> Version {
        match self.precision() {
            1 => Version::new(self.number(0) + 1, 0, 0),
            _ => Version::new(self.number(0), self.number(1) + 1, 0),
        }
    }

    /// `to` written in this partial's shape: as many numbers, the same wildcards (`1.x` → `2.x`).
    fn shaped(&self, to: &Version) -> String {
        let numbers = [to.major, to.minor, to.patch];
        let parts: Vec<String> = self
            .parts
            .iter()
            .enumerate()
            .map(|(i, part)| match part {
                Part::Number(_) => numbers[i].to_string(),
                Part::Wildcard(c) => c.to_string(),
            })
            .collect();
        parts.join(".")
    }

    /// An exclusive upper bound of this shape just above `to`, at the level this bound is written
    /// at: `<2` → `<3`, `<1.5.0` → `<1.8.0`, `<1.2.4` → `<1.7.3`.
    fn raised(&self, to: &Version) -> String {
        let written = self.parts.len().max(1);
        let numbers = [to.major, to.minor, to.patch];
        let level = (0..written.min(3)).rev().find(|&i| self.number(i) != 0).unwrap_or(0);
        let parts: Vec<String> = (0..written)
            .map(|i| match i.cmp(&level) {
                std::cmp::Ordering::Less => numbers[i].to_string(),
                std::cmp::Ordering::Equal => (numbers[i] + 1).to_string(),
                std::cmp::Ordering::Greater => "0".to_owned(),
            })
            .collect();
        parts.join(".")
    }
}

impl Range {
    /// Parses an npm range (node-semver's grammar, without its loose-mode extras).
    pub fn parse(text: &str) -> Result<Range, RangeError> {
        let mut alternatives = Vec::new();
        let mut start = 0;
        for piece in text.split("||") {
            alternatives.push(parse_alternative(text, start, piece)?);
            start += piece.len() + 2;
        }
        Ok(Range { alternatives })
    }

    /// Whether `v` is inside the range.
    pub fn satisfies(&self, v: &Version) -> bool {
        self.alternatives
            .iter()
            .any(|alt| alt.comparators.iter().all(|c| c.admits(v)))
    }

    /// Whether the range names exactly one version (`1.2.3`, `=1.2.3`).
    pub fn is_pinned(&self) -> bool {
        matches!(
            self.alternatives.as_slice(),
            [Alternative { terms, .. }] if matches!(
                terms.as_slice(),
                [Term::Single { op: TermOp::Plain | TermOp::Eq, version }] if version.precision() == 3
            )
        )
    }

    /// The lowest version the highest alternative admits (`>=1.2 <2` → `1.2.0`; `*` → `0.0.0`).
    pub fn floor(&self) -> Version {
        self.alternatives
            .iter()
            .map(Alternative::floor)
            .max()
            .unwrap_or_else(|| Version::new(0, 0, 0))
    }

    /// `text` (this range as written) changed so that its highest alternative admits `to`, in the
    /// style written: `^1.2.3` → `^2.0.0`, `~1.2` → `~1.4`, `1.x` → `2.x`, `1.2.3` → `1.4.0`; an
    /// upper bound is raised at the precision it is written with (`>=1 <2` → `>=1 <3`, as
    /// Dependabot does), `<=1.5` becomes `<=1.7`. `None` when no such edit admits `to`.
    pub fn rewrite(&self, text: &str, to: &Version) -> Option<String> {
        let index = (0..self.alternatives.len()).max_by_key(|&i| self.alternatives[i].floor())?;
        let mut edits: Vec<(Span<usize>, String)> = Vec::new();
        for term in &self.alternatives[index].terms {
            match term {
                Term::Single { op, version } => {
                    if desugar(*op, version).iter().all(|c| c.admits(to)) {
                        continue;
                    }
                    let new = match op {
                        TermOp::Lt => version.raised(to),
                        TermOp::Gt | TermOp::Ge => return None,
                        _ => version.shaped(to),
                    };
                    edits.push((version.span.clone(), new));
                }
                Term::Hyphen { low, high } => {
                    if to < &low.low() {
                        return None;
                    }
                    if !upper_inclusive(high).iter().all(|c| c.admits(to)) {
                        edits.push((high.span.clone(), high.shaped(to)));
                    }
                }
            }
        }
        let mut edited = text.to_owned();
        edits.sort_by_key(|(span, _)| span.start);
        for (span, new) in edits.into_iter().rev() {
            edited.replace_range(span, &new);
        }
        Range::parse(&edited).ok()?.satisfies(to).then_some(edited)
    }
}

impl Alternative {
    fn floor(&self) -> Version {
        self.comparators
            .iter()
            .filter_map(|c| match c.op {
                Op::Ge | Op::Eq => Some(c.version.clone()),
                Op::Gt => Some(Version::new(c.version.major, c.version.minor, c.version.patch + 1)),
                Op::Lt | Op::Le => None,
            })
            .max()
            .unwrap_or_else(|| Version::new(0, 0, 0))
    }
}

/// One `||` alternative, `piece`, found at byte `offset` of `whole`.
fn parse_alternative(whole: &str, offset: usize, piece: &str) -> Result<Alternative, RangeError> {
    // Tokens with their offsets in `whole`.
    let mut tokens: Vec<(usize, &str)> = Vec::new();
    let mut i = 0;
    for word in piece.split_whitespace() {
        let at = piece[i..].find(word).map_or(i, |p| p + i);
        tokens.push((offset + at, word));
        i = at + word.len();
    }
    let mut terms = Vec::new();
    if let [(_, low), (_, "-"), (_, high)] = tokens.as_slice() {
        let (low_at, high_at) = (tokens[0].0, tokens[2].0);
        let low = parse_partial(whole, low_at, low)?;
        let high = parse_partial(whole, high_at, high)?;
        terms.push(Term::Hyphen { low, high });
    } else {
        let mut k = 0;
        while k < tokens.len() {
            let (at, token) = tokens[k];
            let (op, op_len) = term_op(token);
            let (at, token) = if op_len == token.len() {
                // An operator standing alone: `>= 1.2.3`.
                k += 1;
                let &(next_at, next) = tokens.get(k).ok_or_else(|| RangeError::NoVersion {
                    operator: token.to_owned(),
                })?;
                (next_at, next)
            } else {
                (at + op_len, &token[op_len..])
            };
            terms.push(Term::Single {
                op,
                version: parse_partial(whole, at, token)?,
            });
            k += 1;
        }
    }
    let comparators = terms
        .iter()
        .flat_map(|term| match term {
            Term::Single { op, version } => desugar(*op, version),
            Term::Hyphen { low, high } => {
                let mut comparators = desugar(TermOp::Ge, low);
                comparators.extend(upper_inclusive(high));
                comparators
            }
        })
        .collect();
    Ok(Alternative { terms, comparators })
}

/// The operator a token starts with, and its length.
fn term_op(token: &str) -> (TermOp, usize) {
    for (prefix, op) in [
        ("<=", TermOp::Le),
        (">=", TermOp::Ge),
        ("~>", TermOp::Tilde),
        ("<", TermOp::Lt),
        (">", TermOp::Gt),
        ("=", TermOp::Eq),
        ("^", TermOp::Caret),
        ("~", TermOp::Tilde),
    ] {
        if token.starts_with(prefix) {
            return (op, prefix.len());
        }
    }
    (TermOp::Plain, 0)
}

/// A partial version `token` at byte `at` of `whole`: `1`, `1.2`, `1.2.3-beta.1`, `1.x`, `*`, `v1.2`.
fn parse_partial(whole: &str, at: usize, token: &str) -> Result<Partial, RangeError> {
    let bad = || RangeError::BadVersion {
        token: token.to_owned(),
        range: whole.to_owned(),
    };
    let (skip, rest) = match token.strip_prefix(['v', 'V']) {
        Some(rest) => (1, rest),
        None => (0, token),
    };
    // Build metadata means nothing to a range.
    let rest = rest.split_once('+').map_or(rest, |(version, _build)| version);
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Prerelease::new(pre).map_err(|_| bad())?),
        None => (rest, Prerelease::EMPTY),
    };
    let mut parts = Vec::new();
    for piece in core.split('.') {
        let part = match piece {
            "x" | "X" | "*" => Part::Wildcard(piece.chars().next().unwrap_or('x')),
            digits if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
                Part::Number(digits.parse().map_err(|_| bad())?)
            }
            _ => return Err(bad()),
        };
        // Nothing precise after a wildcard: `1.x.3` means nothing.
        if matches!(part, Part::Number(_)) && parts.iter().any(|p| matches!(p, Part::Wildcard(_))) {
            return Err(bad());
        }
        parts.push(part);
    }
    if parts.len() > 3 || (!pre.is_empty() && parts.len() != 3) {
        return Err(bad());
    }
    Ok(Partial {
        parts,
        pre,
        span: at + skip..at + token.len(),
    })
}

/// The comparators a term stands for (node-semver's desugaring).
fn desugar(op: TermOp, p: &Partial) -> Vec<Comparator> {
    let cmp = |op, version| Comparator { op, version };
    let n = p.precision();
    let (major, minor, patch) = (p.number(0), p.number(1), p.number(2));
    let nothing = || vec![cmp(Op::Lt, Version::new(0, 0, 0))];
    match (op, n) {
        (TermOp::Plain | TermOp::Eq | TermOp::Caret | TermOp::Tilde | TermOp::Ge | TermOp::Le, 0) => Vec::new(),
        (TermOp::Lt | TermOp::Gt, 0) => nothing(),
        (TermOp::Plain | TermOp::Eq, 3) => vec![cmp(Op::Eq, p.low())],
        (TermOp::Plain | TermOp::Eq | TermOp::Tilde, _) => vec![cmp(Op::Ge, p.low()), cmp(Op::Lt, p.above())],
        (TermOp::Caret, _) => {
            let upper = match (major, minor, n) {
                (0, 0, 3) => Version::new(0, 0, patch + 1),
                (0, _, 2 | 3) => Version::new(0, minor + 1, 0),
                _ => Version::new(major + 1, 0, 0),
            };
            vec![cmp(Op::Ge, p.low()), cmp(Op::Lt, upper)]
        }
        (TermOp::Gt, 3) => vec![cmp(Op::Gt, p.low())],
        (TermOp::Gt, _) => vec![cmp(Op::Ge, p.above())],
        (TermOp::Ge, _) => vec![cmp(Op::Ge, p.low())],
        (TermOp::Lt, _) => vec![cmp(Op::Lt, p.low())],
        (TermOp::Le, _) => upper_inclusive(p),
    }
}

/// `<=p`: inclusive of every version `p` stands for (`<=1.2` admits `1.2.9`).
fn upper_inclusive(p: &Partial) -> Vec<Comparator> {
    match p.precision() {
        0 => Vec::new(),
        3 => vec![Comparator {
            op: Op::Le,
            version: p.low(),
        }],
        _ => vec![Comparator {
            op: Op::Lt,
            version: p.above(),
        }],
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failing test should panic")]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    fn admits(range: &str, version: &str) -> bool {
        Range::parse(range).unwrap().satisfies(&v(version))
    }

    #[test]
    fn ranges_admit_what_npm_admits() {
        let cases = [
            ("^1.2.3", "1.2.3", true),
            ("^1.2.3", "1.9.0", true),
            ("^1.2.3", "2.0.0", false),
            ("^1.2.3", "1.2.2", false),
            ("^0.2.3", "0.2.9", true),
            ("^0.2.3", "0.3.0", false),
            ("^0.0.3", "0.0.3", true),
            ("^0.0.3", "0.0.4", false),
            ("^0.0", "0.0.9", true),
            ("^0.0", "0.1.0", false),
            ("^1.x", "1.9.9", true),
            ("^0.x", "0.9.0", true),
            ("~1.2.3", "1.2.9", true),
            ("~1.2.3", "1.3.0", false),
            ("~1.2", "1.2.0", true),
            ("~1", "1.9.0", true),
            ("~1", "2.0.0", false),
            ("~>1.2", "1.2.5", true),
            ("1.2.3", "1.2.3", true),
            ("1.2.3", "1.2.4", false),
            ("=1.2.3", "1.2.3", true),
            ("v1.2.3", "1.2.3", true),
            ("1.x", "1.5.0", true),
            ("1.x", "2.0.0", false),
            ("1.2.X", "1.2.7", true),
            ("1", "1.9.9", true),
            ("1.2", "1.3.0", false),
            ("*", "9.9.9", true),
            ("", "0.0.1", true),
            (">=1 <2", "1.5.0", true),
            (">=1 <2", "2.0.0", false),
            (">= 1.2.0 < 1.5.0", "1.4.9", true),
            (">1.2", "1.2.9", false),
            (">1.2", "1.3.0", true),
            (">1.2.3", "1.2.3", false),
            ("<=1.2", "1.2.9", true),
            ("<=1.2", "1.3.0", false),
            ("<2", "1.99.0", true),
            ("1.2.3 - 2.3", "2.3.9", true),
            ("1.2.3 - 2.3", "2.4.0", false),
            ("1.2.3 - 2.3.4", "1.2.2", false),
            ("^1.0.0 || ^2.0.0", "2.5.0", true),
            ("^1.0.0 || ^3.0.0", "2.5.0", false),
            ("1.x || >=2.5.0 || 5.0.0 - 7.2.3", "6.0.0", true),
        ];
        for (range, version, expected) in cases {
            assert_eq!(admits(range, version), expected, "{range} admits {version}");
        }
    }

    #[test]
    fn what_is_not_a_range_does_not_parse() {
        for text in ["latest", "next", "1.x.3", "1.2.3.4", "^", ">= ", "1.2-beta", "abc"] {
            assert!(Range::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn floors_pins_and_the_highest_alternative() {
        let floor = |text: &str| Range::parse(text).unwrap().floor().to_string();
        assert_eq!(floor("^1.2"), "1.2.0");
        assert_eq!(floor(">=1 <2"), "1.0.0");
        assert_eq!(floor("<2"), "0.0.0");
        assert_eq!(floor(">1.2.3"), "1.2.4");
        assert_eq!(floor("1.x || ^3.1.0"), "3.1.0");
        let pinned = |text: &str| Range::parse(text).unwrap().is_pinned();
        assert!(pinned("1.2.3") && pinned("=1.2.3") && pinned("v1.2.3"));
        assert!(!pinned("1.2") && !pinned("^1.2.3") && !pinned("1.2.3 || 1.2.4"));
    }

    #[test]
    fn rewrites_keep_the_written_style() {
        let rewrite = |text: &str, to: &str| Range::parse(text).unwrap().rewrite(text, &v(to));
        let cases = [
            ("^1.2.3", "2.1.0", "^2.1.0"),
            ("^1.2", "2.1.0", "^2.1"),
            ("^1", "2.1.0", "^2"),
            ("^0.2.3", "0.3.1", "^0.3.1"),
            ("~1.2.3", "1.4.0", "~1.4.0"),
            ("~1.2", "1.4.0", "~1.4"),
            ("~>1.2", "1.4.0", "~>1.4"),
            ("1.2.3", "1.4.0", "1.4.0"),
            ("=1.2.3", "1.4.0", "=1.4.0"),
            ("v1.2.3", "1.4.0", "v1.4.0"),
            ("1.x", "2.0.1", "2.x"),
            ("1.2.x", "1.4.0", "1.4.x"),
            ("1", "3.0.0", "3"),
            (">=1 <2", "2.3.0", ">=1 <3"),
            (">= 1.2.0 < 1.5.0", "1.7.2", ">= 1.2.0 < 1.8.0"),
            (">=1.0.0 <1.2.4", "1.7.2", ">=1.0.0 <1.7.3"),
            ("<=1.5", "1.7.2", "<=1.7"),
            ("1.0.0 - 1.5", "1.7.2", "1.0.0 - 1.7"),
            ("^1.0.0 || ^2.0.0", "3.0.1", "^1.0.0 || ^3.0.1"),
            ("^2.0.0||^1.0.0", "3.0.1", "^3.0.1||^1.0.0"),
        ];
        for (text, to, expected) in cases {
            assert_eq!(rewrite(text, to).as_deref(), Some(expected), "{text} to {to}");
        }
        // A lower bound above the new version cannot be edited into admitting it.
        assert_eq!(rewrite(">=3 <4", "2.5.0"), None);
    }
}
