//! Byte sizes in configuration: "4GiB", "512MiB", "2GB", "100KB", "64B", or a bare number of bytes.
//!
//! Units are case-insensitive. `KiB`/`MiB`/`GiB`/`TiB` are powers of 1024 and `KB`/`MB`/`GB`/`TB`
//! powers of 1000. A bare `K`/`M`/`G`/`T` is rejected rather than guessed: Docker reads `2g` as
//! 2 GiB, Kubernetes reads `2G` as 2 GB, and a memory limit off by 7% is a confusing failure.

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const TIB: u64 = 1 << 40;

/// Largest first, so formatting picks the unit that gives the smallest number.
const UNITS: &[(&str, u64)] = &[
    ("TiB", TIB),
    ("TB", 1_000_000_000_000),
    ("GiB", GIB),
    ("GB", 1_000_000_000),
    ("MiB", MIB),
    ("MB", 1_000_000),
    ("KiB", KIB),
    ("KB", 1_000),
    ("B", 1),
];

pub(crate) const MEBIBYTE: u64 = MIB;
pub(crate) const GIBIBYTE: u64 = GIB;
pub(crate) const TEBIBYTE: u64 = TIB;

const EXAMPLES: &str = "e.g. \"4GiB\", \"512MiB\" or \"2GB\"";

/// Why a text is not a byte size: a sentence fragment for a `ConfigError::Invalid` message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ByteSizeError {
    #[error("empty size; expected {EXAMPLES}")]
    Empty,
    #[error("expected a whole number followed by a unit, {EXAMPLES}")]
    NoNumber,
    #[error("fractions are not supported; use a smaller unit, e.g. \"1536MiB\" rather than \"1.5GiB\"")]
    Fraction,
    #[error(
        "ambiguous unit `{unit}`; write \"{number}{binary}\" (powers of 1024) or \"{number}{}\" (powers of 1000)",
        binary.replace('i', "")
    )]
    Ambiguous {
        unit: String,
        number: String,
        binary: &'static str,
    },
    #[error("unknown unit `{0}`; use one of B, KB, KiB, MB, MiB, GB, GiB, TB, TiB")]
    UnknownUnit(String),
    #[error("size is too large")]
    TooLarge,
}

/// Parses a byte size.
pub(crate) fn parse_byte_size(text: &str) -> Result<u64, ByteSizeError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(ByteSizeError::Empty);
    }
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(ByteSizeError::NoNumber);
    }
    let (number, after) = s.split_at(digits);
    if after.starts_with(['.', ',']) {
        return Err(ByteSizeError::Fraction);
    }
    // "4 GiB" reads naturally and is unambiguous.
    let unit = after.trim_start();
    let multiplier = if unit.is_empty() {
        1
    } else if let Some(&(_, size)) = UNITS.iter().find(|(u, _)| u.eq_ignore_ascii_case(unit)) {
        size
    } else if let Some(binary) = bare_prefix(unit) {
        return Err(ByteSizeError::Ambiguous {
            unit: unit.to_owned(),
            number: number.to_owned(),
            binary,
        });
    } else {
        return Err(ByteSizeError::UnknownUnit(unit.to_owned()));
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .ok_or(ByteSizeError::TooLarge)
}

/// `K`, `Mi`, … without the `B`: the binary unit to suggest.
fn bare_prefix(unit: &str) -> Option<&'static str> {
    let lower = unit.to_ascii_lowercase();
    let letter = lower.strip_suffix('i').unwrap_or(&lower);
    match letter {
        "k" => Some("KiB"),
        "m" => Some("MiB"),
        "g" => Some("GiB"),
        "t" => Some("TiB"),
        _ => None,
    }
}

/// The exact spelling with the smallest number, e.g. 4294967296 → "4GiB", 2000000000 → "2GB";
/// parses back to the same value.
pub(crate) fn format_byte_size(bytes: u64) -> String {
    let (unit, size) = UNITS
        .iter()
        .copied()
        .find(|(_, size)| bytes != 0 && bytes.is_multiple_of(*size))
        .unwrap_or(("B", 1));
    format!("{}{unit}", bytes / size)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn parses_binary_decimal_and_plain_bytes_in_any_case() {
        for (text, bytes) in [
            ("4GiB", 4 * GIB),
            ("4gib", 4 * GIB),
            ("4 GiB", 4 * GIB),
            ("512MiB", 512 * MIB),
            ("512mib", 512 * MIB),
            ("2GB", 2_000_000_000),
            ("2gb", 2_000_000_000),
            ("100KB", 100_000),
            ("3KiB", 3 * KIB),
            ("1TiB", TIB),
            ("1tb", 1_000_000_000_000),
            ("64B", 64),
            ("64b", 64),
            ("1048576", MIB),
            (" 16MiB ", 16 * MIB),
        ] {
            assert_eq!(parse_byte_size(text), Ok(bytes), "{text}");
        }
    }

    #[test]
    fn rejects_bad_sizes_with_a_reason() {
        assert!(parse_byte_size("").unwrap_err().to_string().contains("empty"));
        assert!(parse_byte_size("GiB").unwrap_err().to_string().contains("whole number"));
        assert!(
            parse_byte_size("-4GiB")
                .unwrap_err()
                .to_string()
                .contains("whole number")
        );
        assert!(parse_byte_size("1.5GiB").unwrap_err().to_string().contains("fractions"));
        assert!(
            parse_byte_size("4XB")
                .unwrap_err()
                .to_string()
                .contains("unknown unit `XB`")
        );
        assert!(
            parse_byte_size("4GiB8")
                .unwrap_err()
                .to_string()
                .contains("unknown unit")
        );
        assert_eq!(
            parse_byte_size("2g").unwrap_err().to_string(),
            "ambiguous unit `g`; write \"2GiB\" (powers of 1024) or \"2GB\" (powers of 1000)"
        );
        assert!(parse_byte_size("512Mi").unwrap_err().to_string().contains("\"512MiB\""));
        assert!(
            parse_byte_size("99999999999TiB")
                .unwrap_err()
                .to_string()
                .contains("too large")
        );
        assert!(
            parse_byte_size("99999999999999999999")
                .unwrap_err()
                .to_string()
                .contains("too large")
        );
    }

    #[test]
    fn formats_with_the_largest_exact_unit_and_round_trips() {
        for (bytes, text) in [
            (4 * GIB, "4GiB"),
            (1536 * MIB, "1536MiB"),
            (2_000_000_000, "2GB"),
            (16 * MIB, "16MiB"),
            (TIB, "1TiB"),
            (1000, "1KB"),
            (1025, "1025B"),
            (0, "0B"),
        ] {
            assert_eq!(format_byte_size(bytes), text);
            assert_eq!(parse_byte_size(text).unwrap(), bytes);
        }
    }
}
