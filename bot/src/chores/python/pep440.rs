//! PEP 440 versions: parsed in every spelling the PEP normalises, shown in the normal form, and
//! ordered as the PEP (and `packaging`) order them.

use std::cmp::Ordering;

/// A text that is not a PEP 440 version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a PEP 440 version")]
pub struct VersionError(String);

/// A PEP 440 version: epoch, release numbers, pre-, post- and dev-release, local label.
#[derive(Debug, Clone)]
pub struct Pep440 {
    pub(super) epoch: u64,
    pub(super) release: Vec<u64>,
    pre: Option<(PreKind, u64)>,
    pub(super) post: Option<u64>,
    dev: Option<u64>,
    pub(super) local: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum PreKind {
    Alpha,
    Beta,
    Candidate,
}

impl Pep440 {
    /// Parses a version in any spelling PEP 440 normalises (`1.0-RC1`, `v2.0.post1`, `1!2.0`).
    pub fn parse(text: &str) -> Result<Pep440, VersionError> {
        let bad = || VersionError(text.to_owned());
        let lower = text.trim().to_ascii_lowercase();
        let mut rest = lower.strip_prefix('v').unwrap_or(&lower);
        let local = match rest.split_once('+') {
            Some((version, local)) if !local.is_empty() => {
                rest = version;
                Some(local.to_owned())
            }
            Some(_) => return Err(bad()),
            None => None,
        };
        let mut epoch = 0;
        if let Some((e, r)) = rest.split_once('!') {
            epoch = e.parse().map_err(|_| bad())?;
            rest = r;
        }
        let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
        let mut release = Vec::new();
        loop {
            let n = digits(rest);
            if n == 0 {
                return Err(bad());
            }
            release.push(rest[..n].parse().map_err(|_| bad())?);
            rest = &rest[n..];
            match rest.strip_prefix('.') {
                Some(after) if after.starts_with(|c: char| c.is_ascii_digit()) => rest = after,
                _ => break,
            }
        }
        // The suffixes, in order, each optionally after a separator and with an optional number.
        let take_number = |s: &str| -> (Option<u64>, usize) {
            let sep = usize::from(s.starts_with(['.', '-', '_']) && s[1..].starts_with(|c: char| c.is_ascii_digit()));
            let n = digits(&s[sep..]);
            if n == 0 {
                (None, 0)
            } else {
                (s[sep..sep + n].parse().ok(), sep + n)
            }
        };
        let mut pre = None;
        let trimmed = rest.trim_start_matches(['.', '-', '_']);
        for (word, kind) in [
            ("alpha", PreKind::Alpha),
            ("beta", PreKind::Beta),
            ("preview", PreKind::Candidate),
            ("pre", PreKind::Candidate),
            ("rc", PreKind::Candidate),
            ("a", PreKind::Alpha),
            ("b", PreKind::Beta),
            ("c", PreKind::Candidate),
        ] {
            if let Some(after) = trimmed.strip_prefix(word) {
                let (n, used) = take_number(after);
                pre = Some((kind, n.unwrap_or(0)));
                rest = &after[used..];
                break;
            }
        }
        let mut post = None;
        if let Some(after) = rest.strip_prefix('-')
            && after.starts_with(|c: char| c.is_ascii_digit())
        {
            let n = digits(after);
            post = Some(after[..n].parse().map_err(|_| bad())?);
            rest = &after[n..];
        } else {
            let trimmed = rest.trim_start_matches(['.', '-', '_']);
            for word in ["post", "rev", "r"] {
                if let Some(after) = trimmed.strip_prefix(word) {
                    let (n, used) = take_number(after);
                    post = Some(n.unwrap_or(0));
                    rest = &after[used..];
                    break;
                }
            }
        }
        let mut dev = None;
        let trimmed = rest.trim_start_matches(['.', '-', '_']);
        if let Some(after) = trimmed.strip_prefix("dev") {
            let (n, used) = take_number(after);
            dev = Some(n.unwrap_or(0));
            rest = &after[used..];
        }
        if !rest.is_empty() {
            return Err(bad());
        }
        Ok(Pep440 {
            epoch,
            release,
            pre,
            post,
            dev,
            local,
        })
    }

    /// The version `0`.
    pub(super) fn zero() -> Pep440 {
        Pep440 {
            epoch: 0,
            release: vec![0],
            pre: None,
            post: None,
            dev: None,
            local: None,
        }
    }

    /// A pre-release or development release (not a post-release).
    pub fn is_prerelease(&self) -> bool {
        self.pre.is_some() || self.dev.is_some()
    }

    /// Release number `i` (0 when not written).
    pub(super) fn part(&self, i: usize) -> u64 {
        self.release.get(i).copied().unwrap_or(0)
    }

    /// What a release must share to be compatible: the major, or for `0.x` the minor, or for
    /// `0.0.x` the third number.
    pub(super) fn compatibility(&self) -> (u64, u64, u64) {
        match (self.part(0), self.part(1)) {
            (0, 0) => (0, 0, self.part(2)),
            (0, minor) => (0, minor, 0),
            (major, _) => (major, 0, 0),
        }
    }

    pub(super) fn release_cmp(&self, other: &Pep440) -> Ordering {
        let len = self.release.len().max(other.release.len());
        (0..len)
            .map(|i| self.part(i).cmp(&other.part(i)))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }

    /// The sort key of the suffixes, as `packaging` has it: a dev release sorts before the
    /// pre-releases of its version, a final release after them, post-releases after that.
    fn suffix_key(&self) -> (i8, Option<(PreKind, u64)>, i8, u64, i8, u64) {
        let pre = match (self.pre, self.post, self.dev) {
            (None, None, Some(_)) => (-1, None),
            (None, _, _) => (1, None),
            (Some(pre), _, _) => (0, Some(pre)),
        };
        let post = self.post.map_or((-1, 0), |n| (0, n));
        let dev = self.dev.map_or((1, 0), |n| (0, n));
        (pre.0, pre.1, post.0, post.1, dev.0, dev.1)
    }

    /// The first `n` release numbers (0 where not written).
    pub(super) fn prefix(&self, n: usize) -> Vec<u64> {
        (0..n).map(|i| self.part(i)).collect()
    }
}

impl Ord for Pep440 {
    fn cmp(&self, other: &Self) -> Ordering {
        self.epoch
            .cmp(&other.epoch)
            .then_with(|| self.release_cmp(other))
            .then_with(|| self.suffix_key().cmp(&other.suffix_key()))
            .then_with(|| self.local.cmp(&other.local))
    }
}

impl PartialOrd for Pep440 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Pep440 {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Pep440 {}

impl std::fmt::Display for Pep440 {
    /// The normalised form: `1!2.0rc1.post2.dev3+local`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.epoch != 0 {
            write!(f, "{}!", self.epoch)?;
        }
        let release: Vec<String> = self.release.iter().map(u64::to_string).collect();
        f.write_str(&release.join("."))?;
        if let Some((kind, n)) = self.pre {
            let word = match kind {
                PreKind::Alpha => "a",
                PreKind::Beta => "b",
                PreKind::Candidate => "rc",
            };
            write!(f, "{word}{n}")?;
        }
        if let Some(n) = self.post {
            write!(f, ".post{n}")?;
        }
        if let Some(n) = self.dev {
            write!(f, ".dev{n}")?;
        }
        if let Some(local) = &self.local {
            write!(f, "+{local}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failing test should panic")]
mod tests {
    use super::*;

    fn p(text: &str) -> Pep440 {
        Pep440::parse(text).unwrap()
    }

    #[test]
    fn versions_parse_normalise_and_order_as_pep_440_says() {
        for (text, normal) in [
            ("1.0", "1.0"),
            ("v2.0.1", "2.0.1"),
            ("1.0-RC1", "1.0rc1"),
            ("1.0.alpha.2", "1.0a2"),
            ("1.0b", "1.0b0"),
            ("1.0-1", "1.0.post1"),
            ("1.0.post", "1.0.post0"),
            ("1.0rev2", "1.0.post2"),
            ("1.0.dev", "1.0.dev0"),
            ("1!2.0c1.post2.dev3+ubuntu.1", "1!2.0rc1.post2.dev3+ubuntu.1"),
        ] {
            assert_eq!(p(text).to_string(), normal, "{text}");
        }
        for bad in ["", "a1", "1..2", "1.0foo", "1.0+", "latest"] {
            assert!(Pep440::parse(bad).is_err(), "{bad}");
        }
        let ordered = [
            "0.9",
            "1.0.dev0",
            "1.0a1.dev1",
            "1.0a1",
            "1.0b2",
            "1.0rc1",
            "1.0",
            "1.0.post1.dev0",
            "1.0.post1",
            "1.0.1",
            "1.1",
            "1!0.1",
        ];
        for pair in ordered.windows(2) {
            assert!(p(pair[0]) < p(pair[1]), "{} < {}", pair[0], pair[1]);
        }
        assert_eq!(p("1.0"), p("1.0.0"));
        assert!(p("1.0rc1").is_prerelease() && p("1.0.dev1").is_prerelease() && !p("1.0.post1").is_prerelease());
    }
}
